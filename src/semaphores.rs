//! Semaphores: which counting semaphores the lockset analysis ([`crate::lockset`]) treats
//! specially, found here and checked on its results.
//!
//! - A **binary semaphore** (every `sem_init` of it sets the count to exactly 1, and every
//!   `sem_post` happens while the posting thread holds it) never counts above 1: a wait takes
//!   it like a mutex ([`init_candidates`] finds the candidates; the lockset analysis checks
//!   the posts).
//! - A **handshake semaphore** (every `sem_init` of it sets the count to exactly 0, and every
//!   reachable `sem_post` of it runs in one unique thread, the *poster*) orders what the poster
//!   does before its first post before whatever another thread does after a `sem_wait` on it:
//!   the count starts at 0 and only posts raise it, so a wait returns only after some post,
//!   and every post follows, in the poster's program order, everything the poster did before
//!   its first one (sequential consistency, as SV-COMP assumes). The locksets record "has
//!   passed a wait" ([`crate::lockset::LockKey::SemPassed`], on every path: `must`) and "may
//!   have posted" ([`crate::lockset::LockKey::SemPosted`], on some path: `may`), both in read
//!   mode so they exclude nothing; [`handshakes`] keeps the semaphores whose posts all run in
//!   one unique thread, and [`crate::lockset::LocksetResult::handshake_orders`] answers
//!   queries. A timed or trying wait may return without a post: it records nothing.
//!   (EasyLogger's `async_output` thread waits on `output_notice` before its first read of
//!   the logger's state; the initialising thread posts only once logging is enabled.)

use crate::backend::Backend;
use crate::context::{FnCtxId, ThreadId};
use crate::ir::{EdgeId, Expr, NodeId, Program};
use crate::lockset::{LockId, LockTable, lock_targets};
use crate::model::{Role, Roles};
use crate::threads::{ThreadGraph, for_each_call};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// A semaphore wait or post statement of a function context of a thread: (thread, context,
/// statement, its source node, the semaphore argument).
pub type SemCall<'g> = (ThreadId, FnCtxId, EdgeId, NodeId, Option<&'g Expr>);

/// The semaphore waits (`posts == false`) or posts (`posts == true`) of every function context
/// of every thread.
pub fn sem_calls<'g>(
    program: &'g Program,
    roles: &'g Roles,
    graph: &'g ThreadGraph,
    posts: bool,
) -> Vec<SemCall<'g>> {
    let mut out = Vec::new();
    for_each_call(program, roles, graph, |tc, c, eid, role, args| {
        let arg = match (role, posts) {
            (Role::SemPost { sem }, true) => args.get(*sem),
            (Role::SemWait { sem, .. }, false) => args.get(*sem),
            _ => return,
        };
        let src = program
            .function(tc.ctx(c).func)
            .body
            .as_ref()
            .and_then(|cfg| cfg.edges.get(eid.0 as usize))
            .map(|e| e.src);
        if let Some(src) = src {
            out.push((tc.thread, c, eid, src, arg));
        }
    });
    out
}

/// The semaphores every `sem_init` of which, in any context of any thread, sets the count to
/// exactly `count` (by the backend's value of the count argument), and which some `sem_init`
/// initialises. Empty when some `sem_init`'s semaphore is unknown or names several objects.
pub fn init_candidates<'p, B: Backend<'p>>(
    program: &'p Program,
    roles: &Roles,
    backend: &B,
    graph: &ThreadGraph,
    table: &mut LockTable,
    count: i128,
) -> FxHashSet<LockId> {
    let mut exact = FxHashSet::default();
    let mut others = FxHashSet::default();
    let mut unknown = false;
    for_each_call(program, roles, graph, |tc, c, eid, role, args| {
        let Role::SemInit { sem, value } = role else {
            return;
        };
        if unknown {
            return;
        }
        let targets = args
            .get(*sem)
            .and_then(|a| lock_targets(program, backend, graph, tc, c, eid, a, table, false));
        let Some(targets) = targets else {
            unknown = true;
            return;
        };
        let is_count = targets.len() == 1
            && args.get(*value).is_some_and(|v| {
                let r = backend.value(&tc.context(c, eid), v);
                r.lo == Some(count) && r.hi == Some(count)
            });
        for l in targets {
            if is_count {
                exact.insert(l);
            } else {
                others.insert(l);
            }
        }
    });
    if unknown {
        return FxHashSet::default();
    }
    exact.retain(|l| !others.contains(l));
    exact
}

/// The handshake semaphores among `candidates` (module docs): those whose every reachable
/// post (`reachable` says which statements are) runs in one unique thread. Returns, per such
/// semaphore, its poster. Empty when a reachable post names an unknown semaphore (it may post
/// any of them).
pub fn handshakes<'p, B: Backend<'p>>(
    program: &'p Program,
    roles: &Roles,
    backend: &B,
    graph: &ThreadGraph,
    table: &mut LockTable,
    candidates: &FxHashSet<LockId>,
    reachable: impl Fn(ThreadId, FnCtxId, NodeId) -> bool,
) -> FxHashMap<LockId, ThreadId> {
    if candidates.is_empty() || graph.truncated {
        return FxHashMap::default();
    }
    let mut posters: FxHashMap<LockId, SmallVec<[ThreadId; 2]>> = FxHashMap::default();
    for (thread, ctx, eid, node, arg) in sem_calls(program, roles, graph, true) {
        if !reachable(thread, ctx, node) {
            continue;
        }
        let tc = graph.contexts(thread);
        let targets =
            arg.and_then(|a| lock_targets(program, backend, graph, tc, ctx, eid, a, table, false));
        let Some(targets) = targets else {
            return FxHashMap::default();
        };
        for l in targets {
            let p = posters.entry(l).or_default();
            if !p.contains(&thread) {
                p.push(thread);
            }
        }
    }
    candidates
        .iter()
        .filter_map(|l| match posters.get(l).map(|p| p.as_slice()) {
            Some([t]) if graph.thread(*t).unique => Some((*l, *t)),
            _ => None,
        })
        .collect()
}
