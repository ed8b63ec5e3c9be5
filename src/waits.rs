//! Waits: blocking synchronisation the analysis does not turn into ordering facts, and the
//! program points it may precede.
//!
//! A condition wait, a counting semaphore's wait, a barrier wait, a call of a thread-library
//! function the concurrency model does not know, and a busy-waiting loop may hold a thread back
//! until another thread has done something (a signal, a post, a flag store). A race whose two
//! accesses the analysis reports as certain (a must-race, seed 001 §7) rests on an execution in
//! which both run at the same time; such a wait can rule that execution out only when it
//! precedes one of the two accesses: in the accessing thread, or in a thread that created it
//! (before the create statement), or in a function the thread called before the access. An
//! access no wait precedes runs as soon as its thread gets there, whatever the other threads
//! signal, post or set. So the doubt these waits cast on must-races is confined to the accesses
//! [`Waits::after`] says a wait may precede; DESIGN.md's verdict rule ("`race` on a must-race
//! nothing casts doubt on") is applied per race instead of per program.
//!
//! The computation is context-insensitive and over-approximates "may precede": a function
//! whose entry a wait may precede in one call precedes it in all; a call through a function
//! pointer without a known target may call any waiting function; signal handlers and threads
//! started by code the analysis does not see may start after any wait. Over-approximating only
//! keeps more races `may`.

use crate::context::CallSite;
use crate::ir::{Callee, EdgeId, FuncId, NodeId, Op, Program};
use crate::model::{Role, Roles};
use crate::threads::ThreadGraph;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::{FxHashMap, FxHashSet};

/// Prefixes of the names of thread-library functions (POSIX threads and semaphores, C11
/// threads, the SV-COMP primitives): one the concurrency model does not know may synchronise or
/// start threads in ways the analysis cannot see.
pub const THREAD_API_PREFIXES: &[&str] = &[
    "pthread_",
    "sem_",
    "thrd_",
    "mtx_",
    "cnd_",
    "tss_",
    "__VERIFIER_",
];

/// A wait the analysis does not model as ordering: the function and the node right after it
/// (the return node of a waiting call; a node of a busy-waiting loop).
pub type WaitPoint = (FuncId, NodeId);

/// Which statements a wait may precede.
#[derive(Debug, Default)]
pub struct Waits {
    /// Per function, per edge (index into its CFG's edges): whether a wait may precede the
    /// edge's source node. Functions without an entry precede none.
    after: FxHashMap<FuncId, Vec<bool>>,
}

impl Waits {
    /// The statements the waits `points` may precede in the threads of `graph` (module
    /// documentation). With no wait point, none.
    pub fn compute(program: &Program, graph: &ThreadGraph, points: &[WaitPoint]) -> Waits {
        if points.is_empty() {
            return Waits::default();
        }
        // Context-insensitive call edges of the analysed code: (caller, edge) → callees, and
        // the calls through function pointers with no known target.
        let mut calls: FxHashMap<(FuncId, EdgeId), FxHashSet<FuncId>> = FxHashMap::default();
        let mut funcs: FxHashSet<FuncId> = FxHashSet::default();
        for tc in &graph.contexts {
            for c in tc.ids() {
                let f = tc.ctx(c).func;
                funcs.insert(f);
                let Some(cfg) = &program.function(f).body else {
                    continue;
                };
                for (ei, e) in cfg.edges.iter().enumerate() {
                    if !matches!(e.op, Op::Call { .. }) {
                        continue;
                    }
                    let id = EdgeId(ei as u32);
                    let set = calls.entry((f, id)).or_default();
                    set.extend(tc.callees(c, id).iter().map(|t| t.func));
                }
            }
        }
        // Calls through function pointers with no known target: they may call any waiting
        // function.
        let unresolved: FxHashSet<(FuncId, EdgeId)> = calls
            .iter()
            .filter(|(_, callees)| callees.is_empty())
            .map(|(k, _)| *k)
            .filter(|(f, e)| {
                program
                    .function(*f)
                    .body
                    .as_ref()
                    .and_then(|c| c.edges.get(e.0 as usize))
                    .is_some_and(|x| {
                        matches!(
                            x.op,
                            Op::Call {
                                callee: Callee::Indirect(_),
                                ..
                            }
                        )
                    })
            })
            .collect();
        // Functions that may wait: those holding a wait point or an unresolved indirect call,
        // and their callers, transitively.
        let mut waiting: FxHashSet<FuncId> = points.iter().map(|p| p.0).collect();
        waiting.extend(unresolved.iter().map(|(f, _)| *f));
        let mut callers: FxHashMap<FuncId, Vec<FuncId>> = FxHashMap::default();
        for ((caller, _), callees) in &calls {
            for g in callees {
                callers.entry(*g).or_default().push(*caller);
            }
        }
        let mut stack: Vec<FuncId> = waiting.iter().copied().collect();
        while let Some(g) = stack.pop() {
            for &caller in callers.get(&g).map_or(&[][..], |v| v.as_slice()) {
                if waiting.insert(caller) {
                    stack.push(caller);
                }
            }
        }
        // Per function, per edge: whether a wait inside it (a wait point, a waiting call) may
        // precede the edge (`own`), and whether its entry reaches the edge (`from_entry`).
        let mut seeds: FxHashMap<FuncId, Vec<NodeId>> = FxHashMap::default();
        for &(f, n) in points {
            seeds.entry(f).or_default().push(n);
        }
        let mut own: FxHashMap<FuncId, Vec<bool>> = FxHashMap::default();
        let mut from_entry: FxHashMap<FuncId, Vec<bool>> = FxHashMap::default();
        for &f in &funcs {
            let Some(cfg) = &program.function(f).body else {
                continue;
            };
            let mut start: Vec<NodeId> = seeds.get(&f).cloned().unwrap_or_default();
            for (ei, e) in cfg.edges.iter().enumerate() {
                let k = (f, EdgeId(ei as u32));
                if unresolved.contains(&k)
                    || calls
                        .get(&k)
                        .is_some_and(|s| s.iter().any(|g| waiting.contains(g)))
                {
                    start.push(e.dst);
                }
            }
            let per_edge = |nodes: Vec<bool>| -> Vec<bool> {
                cfg.edges.iter().map(|e| nodes[e.src.0 as usize]).collect()
            };
            own.insert(f, per_edge(reachable(cfg, &start)));
            from_entry.insert(f, per_edge(reachable(cfg, &[cfg.entry])));
        }
        // Thread entries started at each create statement; signal handlers and threads started
        // unseen may start after any wait.
        let mut created: FxHashMap<CallSite, Vec<FuncId>> = FxHashMap::default();
        let mut entry_after: FxHashSet<FuncId> = FxHashSet::default();
        for t in &graph.threads {
            if t.signal || t.unseen {
                entry_after.insert(t.entry);
            } else if let Some(s) = t.site {
                created.entry(s).or_default().push(t.entry);
            }
        }
        // Entries a wait may precede: the callees and created threads of the statements a
        // wait precedes, until nothing changes (a worklist over functions).
        let mut work: Vec<FuncId> = entry_after.iter().copied().collect();
        let mark = |f: FuncId, edges: &[bool], entry_after: &mut FxHashSet<FuncId>| {
            let mut new = Vec::new();
            for (ei, _) in edges.iter().enumerate().filter(|(_, a)| **a) {
                let id = EdgeId(ei as u32);
                let site = CallSite { func: f, edge: id };
                let targets = calls
                    .get(&(f, id))
                    .into_iter()
                    .flatten()
                    .chain(created.get(&site).into_iter().flatten());
                for &g in targets {
                    if entry_after.insert(g) {
                        new.push(g);
                    }
                }
            }
            new
        };
        let mut sorted: Vec<FuncId> = own.keys().copied().collect();
        sorted.sort();
        for &f in &sorted {
            work.extend(mark(f, &own[&f], &mut entry_after));
        }
        while let Some(f) = work.pop() {
            if let Some(edges) = from_entry.get(&f) {
                work.extend(mark(f, edges, &mut entry_after));
            }
        }
        let after = own
            .into_iter()
            .map(|(f, mut edges)| {
                if entry_after.contains(&f)
                    && let Some(e) = from_entry.get(&f)
                {
                    for (a, b) in edges.iter_mut().zip(e) {
                        *a |= *b;
                    }
                }
                (f, edges)
            })
            .collect();
        Waits { after }
    }

    /// Whether a wait may precede statement `edge` of `func`.
    pub fn after(&self, func: FuncId, edge: EdgeId) -> bool {
        self.after
            .get(&func)
            .and_then(|v| v.get(edge.0 as usize))
            .copied()
            .unwrap_or(false)
    }
}

/// The nodes of `cfg` reachable from `start` (`start` included), one flag per node.
fn reachable(cfg: &crate::ir::Cfg, start: &[NodeId]) -> Vec<bool> {
    let mut seen = vec![false; cfg.nodes.len()];
    if start.is_empty() {
        return seen;
    }
    let mut succ: Vec<Vec<NodeId>> = vec![Vec::new(); cfg.nodes.len()];
    for e in &cfg.edges {
        if let Some(s) = succ.get_mut(e.src.0 as usize) {
            s.push(e.dst);
        }
    }
    let mut stack: Vec<NodeId> = Vec::new();
    for &n in start {
        if let Some(x) = seen.get_mut(n.0 as usize)
            && !*x
        {
            *x = true;
            stack.push(n);
        }
    }
    while let Some(n) = stack.pop() {
        for &m in &succ[n.0 as usize] {
            if let Some(x) = seen.get_mut(m.0 as usize)
                && !*x
            {
                *x = true;
                stack.push(m);
            }
        }
    }
    seen
}

/// Whether a call statement waits in a way the concurrency model does not order: a condition
/// wait, a semaphore wait (binary semaphores used as mutexes are modelled by the locksets and
/// excluded by the caller) or a barrier wait.
pub fn is_wait_role(role: Option<&Role>) -> bool {
    matches!(
        role,
        Some(Role::CondWait { .. }) | Some(Role::SemWait { .. }) | Some(Role::BarrierWait { .. })
    )
}

/// The first busy-waiting loop of a function: the source location of its first statement and
/// one node of the loop (every node of the loop is reachable from it). A busy-waiting loop is a
/// cycle whose only effects are tests (of shared memory or through atomic calls), local
/// assignments, and calls without memory effects, and that is not a counted loop
/// (`for (i = 0; i < n; i++) sum += a[i];` ends whatever other threads do:
/// [`crate::mhp::loops::counted_loops`]).
pub fn busy_wait(
    program: &Program,
    roles: &Roles,
    func: FuncId,
) -> Option<(crate::ir::Loc, NodeId)> {
    let cfg = program.function(func).body.as_ref()?;
    // Computed once a candidate is found (most functions have none).
    let mut counted: Option<Vec<crate::mhp::loops::CountedLoop>> = None;
    let in_loop = crate::threads::loop_nodes(cfg);
    let mut g: DiGraph<(), usize> = DiGraph::new();
    for _ in 0..cfg.nodes.len() {
        g.add_node(());
    }
    for (i, e) in cfg.edges.iter().enumerate() {
        if in_loop[e.src.0 as usize] && in_loop[e.dst.0 as usize] {
            g.add_edge(
                NodeIndex::new(e.src.0 as usize),
                NodeIndex::new(e.dst.0 as usize),
                i,
            );
        }
    }
    let sccs = petgraph::algo::tarjan_scc(&g);
    // The edges inside each strongly connected component, found in one pass (scanning every
    // edge per component takes quadratic time on long functions).
    let mut scc_of = vec![usize::MAX; cfg.nodes.len()];
    for (i, scc) in sccs.iter().enumerate() {
        for n in scc {
            scc_of[n.index()] = i;
        }
    }
    let mut inner_edges: Vec<Vec<&crate::ir::Edge>> = vec![Vec::new(); sccs.len()];
    for e in &cfg.edges {
        let (a, b) = (scc_of[e.src.0 as usize], scc_of[e.dst.0 as usize]);
        if a == b && a != usize::MAX {
            inner_edges[a].push(e);
        }
    }
    let is_local =
        |lv: &crate::ir::Lval| matches!(lv.host, crate::ir::Host::Var(crate::ir::Var::Local(_)));
    for inner in inner_edges {
        if inner.is_empty() {
            continue;
        }
        let reads_shared = std::cell::Cell::new(false);
        let note_reads = |e: &crate::ir::Expr| {
            crate::ir::visit::walk_expr(e, &mut |x| {
                if let crate::ir::ExprKind::Load(lv) = &x.kind
                    && !is_local(lv)
                {
                    reads_shared.set(true);
                }
            });
        };
        let quiet = inner.iter().all(|e| match &e.op {
            Op::Skip => true,
            Op::Assume { cond, .. } => {
                note_reads(cond);
                true
            }
            Op::Assign { lhs, rhs } => {
                note_reads(rhs);
                is_local(lhs)
            }
            Op::Call {
                callee: Callee::Direct(f),
                dest,
                ..
            } => {
                let ok = match roles.get(*f) {
                    Some(Role::Atomic { .. }) => {
                        reads_shared.set(true);
                        true
                    }
                    Some(Role::Ignore) | Some(Role::Nondet) => true,
                    _ => false,
                };
                ok && dest.as_ref().is_none_or(is_local)
            }
            _ => false,
        });
        if !(quiet && reads_shared.get()) {
            continue;
        }
        let terminates = counted
            .get_or_insert_with(|| crate::mhp::loops::counted_loops(program, roles, func, false))
            .iter()
            .any(|l| {
                inner
                    .iter()
                    .all(|e| l.body.get(e.src.0 as usize).copied().unwrap_or(false))
            });
        if !terminates {
            let first = inner.iter().min_by_key(|e| e.loc)?;
            return Some((first.loc, first.src));
        }
    }
    None
}
