//! Analysis contexts: (thread, call string, statement) — seed 001 §3, "Analysis contexts".
//!
//! A thread is identified by a [`ThreadId`]. Inside a thread, a function is analysed once per
//! *function context* ([`FnCtx`]): the function plus the last `n` call sites that led to it
//! (`--context-depth`, default 1, so simple lock and create wrappers are told apart by their
//! call site). [`ThreadContexts`] enumerates the function contexts reachable from a thread's
//! entry and which contexts each call edge enters; every analysis that walks a thread (lockset,
//! active threads, access collection) walks this same graph.

use crate::ir::{Callee, EdgeId, FuncId, Op, Program};
use crate::model::{Role, Roles};
use rustc_hash::FxHashMap;
use smallvec::SmallVec;

/// A thread: `ThreadId(0)` is `main`; others are numbered as the thread-creation graph finds
/// them (see [`crate::threads`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ThreadId(pub u32);

impl racedar_domains::Idx for ThreadId {
    fn index(self) -> usize {
        self.0 as usize
    }
    fn from_index(i: usize) -> Self {
        ThreadId(i as u32)
    }
}

impl ThreadId {
    /// The main thread.
    pub const MAIN: ThreadId = ThreadId(0);
}

/// A call site: the call edge and the function containing it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallSite {
    /// Caller.
    pub func: FuncId,
    /// The call edge in the caller's CFG.
    pub edge: EdgeId,
}

/// The last call sites leading to a function, outermost first.
pub type CallString = SmallVec<[CallSite; 2]>;

/// A function analysed under a call string.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FnCtx {
    /// The function.
    pub func: FuncId,
    /// The last `n` call sites (empty for the thread's entry function).
    pub calls: CallString,
}

/// Index of a function context in [`ThreadContexts::ctxs`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FnCtxId(pub u32);

/// An analysis context: a statement (CFG edge) of a function context of a thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Context {
    /// The thread.
    pub thread: ThreadId,
    /// The function and its call string.
    pub fctx: FnCtx,
    /// The statement.
    pub edge: EdgeId,
}

/// How a call edge enters a callee.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// An ordinary call.
    Plain,
    /// A call of a function that runs atomically (`__VERIFIER_atomic_*`).
    Atomic,
    /// The routine of a `pthread_once` (run under the once-control's lock).
    Once,
    /// A callback a library function runs during the call (`qsort`'s comparator): the
    /// position of the callback in the call's [`crate::model::Roles::callbacks`] (its
    /// [`crate::model::CallbackUse::index`]).
    Callback(u8),
}

/// A callee context entered by a call edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CallTarget {
    /// The callee's context.
    pub ctx: FnCtxId,
    /// The callee.
    pub func: FuncId,
    /// How it is entered.
    pub kind: CallKind,
    /// Whether the callee is known for sure (a direct call), as opposed to one candidate of a
    /// function pointer.
    pub exact: bool,
}

/// The function contexts of one thread and the calls between them.
#[derive(Clone, Debug)]
pub struct ThreadContexts {
    /// The thread.
    pub thread: ThreadId,
    /// The entry function's context.
    pub entry: FnCtxId,
    /// All reachable function contexts (each has a body).
    pub ctxs: Vec<FnCtx>,
    index: FxHashMap<FnCtx, FnCtxId>,
    /// For each call edge (in a context) with analysed callees, those callees.
    pub calls: FxHashMap<(FnCtxId, EdgeId), SmallVec<[CallTarget; 1]>>,
    /// Length of the call strings.
    pub depth: usize,
}

/// Upper bound on function contexts per thread (a safety net for huge programs with deep call
/// strings; contexts beyond it reuse the context-insensitive one). The dataflow engine applies
/// the same bound to the contexts it discovers.
pub const MAX_CONTEXTS: usize = 200_000;

/// In a thread with more than [`FANOUT_THREAD_CONTEXTS`] contexts, a call through a function
/// pointer that may designate more functions than this enters them without a call string: an
/// unresolved pointer (the syntactic backend's every address-taken function of a compatible
/// type) would otherwise give each of its targets one context per such call site, which tells
/// little apart and multiplies contexts (a library dispatching through tables of function
/// pointers reached 8,000 contexts per thread). Smaller threads keep those contexts: a callee
/// shared by call sites returns its facts to all of them, paths no run takes.
pub const FANOUT_CONTEXTS: usize = 4;

/// The call edges entering one function context: (caller context, call edge, how the callee
/// is entered) ([`ThreadContexts::callers`]).
pub type CallSites = SmallVec<[(FnCtxId, EdgeId, CallKind); 2]>;

/// Contexts of a thread beyond which calls through pointers with many targets share their
/// callees' contexts ([`FANOUT_CONTEXTS`]).
pub const FANOUT_THREAD_CONTEXTS: usize = 2_000;

impl ThreadContexts {
    /// Enumerates the function contexts reachable from `entry` with call strings of length
    /// `depth`. `resolve(fctx, expr, deep)` gives the functions a function-pointer expression
    /// may designate (the backend's `functions` query; `deep`: the function pointers stored in
    /// the objects it points to, [`crate::backend::Backend::callback_functions`]). Callbacks a
    /// library function runs during the call are entered as calls
    /// ([`CallKind::Callback`]).
    pub fn build(
        program: &Program,
        roles: &Roles,
        thread: ThreadId,
        entry: FuncId,
        depth: usize,
        resolve: &mut dyn FnMut(&FnCtx, &crate::ir::Expr, bool) -> Vec<FuncId>,
    ) -> ThreadContexts {
        let tc = Self::build_with(program, roles, thread, entry, depth, resolve, false);
        if tc.ctxs.len() <= FANOUT_THREAD_CONTEXTS {
            return tc;
        }
        Self::build_with(program, roles, thread, entry, depth, resolve, true)
    }

    /// [`ThreadContexts::build`], entering the targets of calls through pointers with more
    /// than [`FANOUT_CONTEXTS`] targets without a call string when `share_fanout`.
    fn build_with(
        program: &Program,
        roles: &Roles,
        thread: ThreadId,
        entry: FuncId,
        depth: usize,
        resolve: &mut dyn FnMut(&FnCtx, &crate::ir::Expr, bool) -> Vec<FuncId>,
        share_fanout: bool,
    ) -> ThreadContexts {
        let mut tc = ThreadContexts {
            thread,
            entry: FnCtxId(0),
            ctxs: Vec::new(),
            index: FxHashMap::default(),
            calls: FxHashMap::default(),
            depth,
        };
        let root = FnCtx {
            func: entry,
            calls: CallString::new(),
        };
        let mut work = vec![tc.intern(root)];
        while let Some(id) = work.pop() {
            let fctx = tc.ctxs[id.0 as usize].clone();
            let Some(cfg) = &program.function(fctx.func).body else {
                continue;
            };
            for (ei, e) in cfg.edges.iter().enumerate() {
                let Op::Call { callee, args, .. } = &e.op else {
                    continue;
                };
                let edge = EdgeId(ei as u32);
                let mut targets: SmallVec<[(FuncId, CallKind, bool); 1]> = SmallVec::new();
                let mut fanout = false;
                match callee {
                    Callee::Direct(f) => match roles.get(*f) {
                        Some(Role::Once { routine, .. }) => {
                            if let Some(r) = args.get(*routine) {
                                let found = resolve(&fctx, r, false);
                                let exact = found.len() == 1;
                                targets
                                    .extend(found.into_iter().map(|g| (g, CallKind::Once, exact)));
                            }
                        }
                        Some(Role::AtomicFunction) => targets.push((*f, CallKind::Atomic, true)),
                        Some(Role::Library(_)) | None if program.function(*f).body.is_none() => {
                            for cb in roles.callbacks(program, &e.op) {
                                if cb.runs != crate::model::library::Runs::Sync {
                                    continue;
                                }
                                if let Some(a) = args.get(cb.arg) {
                                    let found = resolve(&fctx, a, cb.deep);
                                    let exact = !cb.deep && found.len() == 1;
                                    targets.extend(
                                        found
                                            .into_iter()
                                            .map(|g| (g, CallKind::Callback(cb.index), exact)),
                                    );
                                }
                            }
                        }
                        Some(_) => {}
                        None => targets.push((*f, CallKind::Plain, true)),
                    },
                    Callee::Indirect(fp) => {
                        let found = resolve(&fctx, fp, false);
                        fanout = share_fanout && found.len() > FANOUT_CONTEXTS;
                        targets.extend(found.into_iter().map(|g| {
                            let kind = match roles.get(g) {
                                Some(Role::AtomicFunction) => CallKind::Atomic,
                                _ => CallKind::Plain,
                            };
                            (g, kind, false)
                        }));
                    }
                }
                let mut entered = SmallVec::new();
                for (g, kind, exact) in targets {
                    if program.function(g).body.is_none() {
                        continue;
                    }
                    let mut calls = fctx.calls.clone();
                    calls.push(CallSite {
                        func: fctx.func,
                        edge,
                    });
                    while calls.len() > depth {
                        calls.remove(0);
                    }
                    if tc.ctxs.len() >= MAX_CONTEXTS || fanout {
                        calls.clear();
                    }
                    let callee = FnCtx { func: g, calls };
                    let before = tc.ctxs.len();
                    let cid = tc.intern(callee);
                    if tc.ctxs.len() > before {
                        work.push(cid);
                    }
                    entered.push(CallTarget {
                        ctx: cid,
                        func: g,
                        kind,
                        exact,
                    });
                }
                if !entered.is_empty() {
                    tc.calls.insert((id, edge), entered);
                }
            }
        }
        tc
    }

    /// Contexts of `thread` holding only the entry function's.
    pub fn new(thread: ThreadId, entry: FuncId, depth: usize) -> ThreadContexts {
        let mut tc = ThreadContexts {
            thread,
            entry: FnCtxId(0),
            ctxs: Vec::new(),
            index: FxHashMap::default(),
            calls: FxHashMap::default(),
            depth,
        };
        tc.intern(FnCtx {
            func: entry,
            calls: CallString::new(),
        });
        tc
    }

    /// The id of a function context, adding it if new.
    pub fn intern_ctx(&mut self, c: FnCtx) -> FnCtxId {
        self.intern(c)
    }

    fn intern(&mut self, c: FnCtx) -> FnCtxId {
        if let Some(&id) = self.index.get(&c) {
            return id;
        }
        let id = FnCtxId(self.ctxs.len() as u32);
        self.index.insert(c.clone(), id);
        self.ctxs.push(c);
        id
    }

    /// The id of a function context, if it was reached.
    pub fn lookup(&self, c: &FnCtx) -> Option<FnCtxId> {
        self.index.get(c).copied()
    }

    /// The function context behind an id.
    pub fn ctx(&self, id: FnCtxId) -> &FnCtx {
        &self.ctxs[id.0 as usize]
    }

    /// The analysis context of `edge` in function context `id`.
    pub fn context(&self, id: FnCtxId, edge: EdgeId) -> Context {
        Context {
            thread: self.thread,
            fctx: self.ctx(id).clone(),
            edge,
        }
    }

    /// The callees a call edge enters in context `id` (empty when none is analysed).
    pub fn callees(&self, id: FnCtxId, edge: EdgeId) -> &[CallTarget] {
        self.calls.get(&(id, edge)).map_or(&[], |v| v.as_slice())
    }

    /// Per function context, the call edges that enter it: (caller context, call edge, how
    /// the callee is entered), in (caller, edge) order.
    pub fn callers(&self) -> FxHashMap<FnCtxId, CallSites> {
        let mut calls: Vec<(FnCtxId, EdgeId)> = self.calls.keys().copied().collect();
        calls.sort();
        let mut out: FxHashMap<FnCtxId, CallSites> = FxHashMap::default();
        for (c, e) in calls {
            for t in self.callees(c, e) {
                out.entry(t.ctx).or_default().push((c, e, t.kind));
            }
        }
        out
    }

    /// Function contexts in id order.
    pub fn ids(&self) -> impl Iterator<Item = FnCtxId> + '_ {
        (0..self.ctxs.len() as u32).map(FnCtxId)
    }
}
