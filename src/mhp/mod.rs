//! Active-threads (may-happen-in-parallel) analysis (seed 001 §6.2).
//!
//! Each thread `P` is analysed on its own: a fact tracks, for one class of paths, which of P's
//! *children* (threads whose create statement P runs) are
//! - `may_created`: possibly created so far;
//! - `may_active`: possibly created and not surely joined;
//! - `must_active`: created on this path and not possibly joined (kept in certain facts only:
//!   nothing reads it from the others, see `MhpFact::settle`);
//!
//! plus whether the path is `certain` (feasible for sure: it passes only conditions on values
//! nobody constrains, such as a fresh `__VERIFIER_nondet_int()`, a result the environment gives
//! or `main`'s argument count, a thread creation's result tested for success, branches whose
//! straight arms meet again ([`rejoins`]), and direct calls) and which child each thread-id
//! variable holds (`ids`, from create to join; a join removes exactly that child).
//!
//! Two accesses may run in parallel ([`may_parallel`]) when their threads' positions
//! in the creation tree allow it: for an ancestor `A` of the other thread `T` (through its child
//! `B`), `B` must be active at A's access (or merely created, when T is deeper, since joining B
//! does not join B's own children); for threads in different subtrees of their lowest common
//! ancestor, one subtree root must be alive when the other is created. Threads with several
//! parents or on creation cycles are parallel to everything. Must-parallelism requires the same
//! on certain paths, with must-active children and certainly created threads.
//!
//! RacerF's thread sets (`notes/racerf-goblint.md` §1.6) miss grandchildren of siblings; this
//! formulation follows the creation tree instead.

use crate::context::{CallSite, CallTarget, FnCtxId, ThreadContexts, ThreadId};
use crate::dataflow::{self, At, Callees, FactAnalysis, Solution};
use crate::ir::visit::strip_casts;
use crate::ir::{
    BinOp, Callee, Edge, EdgeId, Expr, ExprKind, FuncId, GlobalId, Host, LocalId, Lval, NodeId, Op,
    Program, Proj, Var,
};
use crate::model::{Role, Roles};
use crate::threads::ThreadGraph;
use racedar_domains::Merge;
use racedar_domains::{BitSet, Bool3, Interval};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

mod id_field;
mod id_ptr;
mod live;
pub(crate) mod loops;

/// A thread-id variable, as a key for matching joins with creates.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdKey(u32);

/// One class of paths of a thread.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MhpFact {
    may_created: BitSet<ThreadId>,
    may_active: BitSet<ThreadId>,
    must_active: BitSet<ThreadId>,
    certain: bool,
    ids: SmallVec<[(IdKey, ThreadId); 2]>,
    /// Unique threads (of any creator) surely joined on the paths: ended, or never created
    /// (Goblint's `threadJoins` must-joined set).
    joined: BitSet<ThreadId>,
    /// Those of `joined` the paths created before joining them (through a thread-id variable
    /// holding their id).
    created_joined: BitSet<ThreadId>,
    /// Some path joined a thread whose id the analysis cannot resolve (`pthread_self()`, an id
    /// read from shared memory or passed by unknown code): any thread, the main thread
    /// included, may have ended before the point.
    joined_unknown: bool,
    /// Non-unique children whose only possibly running instance is the one the paths created
    /// last, whose id `ids` holds: created while no instance of theirs was active. Joining
    /// that id ends them (a thread created and joined in each iteration of a loop runs
    /// before the next iteration's; issue "Real programs", item 5).
    fresh: BitSet<ThreadId>,
    /// Thread-id variables that hold one of several children, one per class of merged
    /// paths (`switch (mode) { case A: pthread_create(&t, 0, a, 0); break; case B:
    /// pthread_create(&t, 0, b, 0); ... } ... pthread_join(t, 0);`): a pair `(k, c)` says
    /// that on every path, every running instance of `c` is the one whose id `k` holds, so
    /// joining `k` ends `c`. Only for keys without an entry in `ids`.
    alt_ids: SmallVec<[(IdKey, ThreadId); 2]>,
    /// Constraints of the paths on free locals (function, local): values every path of the
    /// fact allows (an over-approximation, to drop impossible paths) and values for which the
    /// certain path is taken (a witness set, non-empty while the fact is certain). A free
    /// local not listed may take any value of its type.
    cons: SmallVec<[(FuncId, LocalId, Interval, Interval); 1]>,
    /// Values of flag locals (written only with integer constants, e.g. the temporary holding
    /// `a && b`) on the paths of the fact.
    flags: SmallVec<[(FuncId, LocalId, i128); 1]>,
    /// The integer constant every path of the fact returned (set by a `return k;` statement,
    /// so only at the exit of a function): a caller's result local ([`flag_locals`]) holds it
    /// after the call.
    ret: Option<i128>,
    /// The paths left certain ones at a branch whose two arms are straight and meet again
    /// at this node of the function ([`rejoins`]): one arm is taken whatever the condition, so
    /// the node is reached for sure and the paths are certain again there. Inside the arms
    /// the fact is not certain but keeps what only certain facts say.
    restore: Option<(FuncId, NodeId)>,
}

impl MhpFact {
    fn initial() -> MhpFact {
        MhpFact {
            may_created: BitSet::new(),
            may_active: BitSet::new(),
            must_active: BitSet::new(),
            certain: true,
            ids: SmallVec::new(),
            joined: BitSet::new(),
            created_joined: BitSet::new(),
            joined_unknown: false,
            fresh: BitSet::new(),
            alt_ids: SmallVec::new(),
            cons: SmallVec::new(),
            flags: SmallVec::new(),
            ret: None,
            restore: None,
        }
    }

    /// The values of free local `l` of `func` the paths allow and the certain path's witness
    /// values, within `range`.
    fn allowed(&self, func: FuncId, l: LocalId, range: Interval) -> (Interval, Interval) {
        self.cons
            .iter()
            .find(|(f, x, _, _)| *f == func && *x == l)
            .map_or((range, range), |(_, _, o, u)| (*o, *u))
    }

    fn constrain(&mut self, func: FuncId, l: LocalId, over: Interval, under: Interval) {
        self.cons.retain(|(f, x, _, _)| !(*f == func && *x == l));
        self.cons.push((func, l, over, under));
        self.cons.sort_by_key(|(f, x, _, _)| (*f, *x));
    }

    /// Every instance of child `c` has ended (a join loop or a spawning call undid its
    /// create statements): none runs, no id variable holds a running one, and a unique one
    /// is surely joined.
    fn end_all(&mut self, c: ThreadId, unique: bool) {
        self.may_active.remove(&c);
        self.must_active.remove(&c);
        self.fresh.remove(&c);
        self.ids.retain(|(_, x)| *x != c);
        self.alt_ids.retain(|(_, x)| *x != c);
        if unique {
            self.joined.insert(c);
        }
    }

    /// Drops what only a certain fact says: `must_active` and `created_joined` are read
    /// only from certain facts ([`MhpResult::at`]), and certainty never comes back to a
    /// fact that lost it (a fold is certain only when a folded fact is). Kept in an
    /// uncertain fact, they would keep apart facts that differ in nothing else read, where
    /// one now covers the other (a `main` with several optional create statements gets
    /// one fact per subset of them instead of the largest).
    fn settle(&mut self) {
        if !self.certain && self.restore.is_none() {
            self.must_active.clear();
            self.created_joined.clear();
        }
    }

    fn unconstrain(&mut self, func: FuncId, l: LocalId) {
        self.cons.retain(|(f, x, _, _)| !(*f == func && *x == l));
    }
}

/// A projection of a thread-id lvalue with constant projections.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ProjKey {
    Field(crate::ir::types::CompId, u32),
    Index(i128),
}

/// A thread-id lvalue: the function owning a local, the variable, constant projections.
type KeyText = (Option<FuncId>, Var, SmallVec<[ProjKey; 2]>);

/// Interned thread-id variables.
struct IdKeys {
    index: FxHashMap<KeyText, IdKey>,
    /// The variable (with the function owning a local) of each key, by key number.
    roots: Vec<(Option<FuncId>, Var)>,
    /// Variables (with the function owning a local) whose address is taken anywhere but as
    /// a create's thread-id argument (or an id pointer's value, [`id_ptr`]): code we do not
    /// follow may change them, so they cannot match a join with a create.
    escaped: FxHashSet<(Option<FuncId>, Var)>,
    /// Thread-id pointers.
    ptrs: id_ptr::IdPointers,
    /// Per global, the threads running a create statement that stores an id in it. A thread
    /// can match its joins through the global with its creates only when no other thread
    /// stores ids there.
    writers: FxHashMap<GlobalId, SmallVec<[ThreadId; 2]>>,
    /// Global thread-id locations written by nothing but one create statement, which starts
    /// one unique thread: a join through it that returns has joined that thread, whoever
    /// joins (see [`sole_threads`]).
    sole: FxHashMap<IdKey, ThreadId>,
    /// The thread whose facts are being computed.
    thread: ThreadId,
}

impl IdKeys {
    /// Keys for `program`, whose escaped variables are computed once.
    fn new(program: &Program, roles: &Roles) -> IdKeys {
        let ptrs = id_ptr::IdPointers::new(program, roles);
        let mut escaped = FxHashSet::default();
        for (i, f) in program.functions.iter().enumerate() {
            let func = FuncId(i as u32);
            let Some(cfg) = &f.body else { continue };
            for e in &cfg.edges {
                // Pointers stored where they only serve as thread-id arguments: the
                // thread-id argument of a create, an argument bound to an id-pointer
                // parameter, the definition of an id-pointer local.
                let mut exempt: SmallVec<[&Expr; 2]> = SmallVec::new();
                match (&e.op, roles.of_call(&e.op)) {
                    (Op::Call { args, .. }, Some(Role::ThreadCreate { thread_id, .. })) => {
                        exempt.extend(args.get(*thread_id));
                    }
                    (
                        Op::Call {
                            args,
                            callee: Callee::Direct(g),
                            ..
                        },
                        None,
                    ) => {
                        for (k, a) in args.iter().enumerate() {
                            if ptrs.is_param(program, *g, k) {
                                exempt.push(a);
                            }
                        }
                    }
                    (Op::Assign { lhs, rhs }, _)
                        if crate::ir::visit::whole_local(lhs)
                            .is_some_and(|l| ptrs.is_local(func, l)) =>
                    {
                        exempt.push(rhs);
                    }
                    _ => {}
                }
                // Called once per sub-expression (by the walks below).
                let mut note = |y: &Expr| {
                    if let ExprKind::AddrOf(lv) = &y.kind
                        && let Host::Var(v) = lv.host
                    {
                        let owner = matches!(v, Var::Local(_)).then_some(func);
                        escaped.insert((owner, v));
                    }
                };
                if exempt.is_empty() {
                    crate::ir::visit::op_exprs(&e.op, &mut note);
                    continue;
                }
                let mut tops: SmallVec<[&Expr; 4]> = SmallVec::new();
                match &e.op {
                    Op::Call { args, dest, .. } => {
                        tops.extend(args.iter());
                        if let Some(d) = dest {
                            crate::ir::visit::walk_lval(d, &mut note);
                        }
                    }
                    Op::Assign { lhs, rhs } => {
                        tops.push(rhs);
                        crate::ir::visit::walk_lval(lhs, &mut note);
                    }
                    _ => {}
                }
                for a in tops {
                    if !exempt.iter().any(|x| std::ptr::eq(*x, a)) {
                        crate::ir::visit::walk_expr(a, &mut note);
                    } else if let ExprKind::AddrOf(lv) = &strip_casts(a).kind {
                        // Inside an exempt pointer, only its index expressions count.
                        crate::ir::visit::walk_lval(lv, &mut note);
                    } else {
                        crate::ir::visit::walk_expr(a, &mut note);
                    }
                }
            }
        }
        IdKeys {
            index: FxHashMap::default(),
            roots: Vec::new(),
            escaped,
            ptrs,
            writers: FxHashMap::default(),
            sole: FxHashMap::default(),
            thread: ThreadId::MAIN,
        }
    }

    /// The key of an lvalue with constant projections rooted in a variable (no checks; an
    /// index that is no constant counts as index 0, so callers must rule those out).
    fn intern(&mut self, owner: Option<FuncId>, v: Var, lv: &Lval) -> IdKey {
        let proj = lv
            .proj
            .iter()
            .map(|p| match p {
                Proj::Field { comp, index } => ProjKey::Field(*comp, *index),
                Proj::Index(i) => ProjKey::Index(i.as_int().unwrap_or(0)),
            })
            .collect();
        let text = (owner, v, proj);
        let n = self.index.len() as u32;
        let k = *self.index.entry(text).or_insert(IdKey(n));
        if k.0 as usize == self.roots.len() {
            self.roots.push((owner, v));
        }
        k
    }

    /// The key of an lvalue holding a thread id (its locals those of `func`): only a variable
    /// with constant projections, whose address does not escape, is stable enough to match a
    /// join with a create; a global only when no other thread stores ids in it.
    fn key(&mut self, func: FuncId, lv: &Lval) -> Option<IdKey> {
        let Host::Var(v) = lv.host else { return None };
        if lv
            .proj
            .iter()
            .any(|p| matches!(p, Proj::Index(i) if i.as_int().is_none()))
        {
            return None;
        }
        let owner = match v {
            Var::Local(_) => Some(func),
            Var::Global(g) => {
                let others = self
                    .writers
                    .get(&g)
                    .is_some_and(|w| w.iter().any(|t| *t != self.thread));
                if others {
                    return None;
                }
                None
            }
        };
        if self.escaped.contains(&(owner, v)) {
            return None;
        }
        Some(self.intern(owner, v, lv))
    }

    /// The object a create's thread-id pointer points to (with the function owning its
    /// locals).
    fn target_of_ptr(&self, program: &Program, func: FuncId, e: &Expr) -> Option<(FuncId, Lval)> {
        self.ptrs.target(program, func, e)
    }

    /// The object a join's thread-id value is read from: `id`, or `*p` for an id pointer `p`.
    fn target_of_value(&self, program: &Program, func: FuncId, e: &Expr) -> Option<(FuncId, Lval)> {
        if let Some(p) = id_ptr::deref_of(e) {
            return self.ptrs.target(program, func, p);
        }
        match &strip_casts(e).kind {
            ExprKind::Load(lv) if matches!(lv.host, Host::Var(_)) => Some((func, (**lv).clone())),
            _ => None,
        }
    }

    /// The key of a join's thread-id value.
    fn key_of_value(&mut self, program: &Program, func: FuncId, e: &Expr) -> Option<IdKey> {
        let (owner, lv) = self.target_of_value(program, func, e)?;
        self.key(owner, &lv)
    }

    /// The unique thread a join of `e` (in `func`) surely joins when it returns: `e` reads a
    /// global location only one create statement writes ([`sole_threads`]).
    fn sole_of_value(&mut self, program: &Program, func: FuncId, e: &Expr) -> Option<ThreadId> {
        if self.sole.is_empty() {
            return None;
        }
        let (_, lv) = self.target_of_value(program, func, e)?;
        let Host::Var(v @ Var::Global(_)) = lv.host else {
            return None;
        };
        if lv
            .proj
            .iter()
            .any(|p| matches!(p, Proj::Index(i) if i.as_int().is_none()))
        {
            return None;
        }
        let k = self.intern(None, v, &lv);
        self.sole.get(&k).copied()
    }

    /// Whether threads `a` and `b` see the same keys: the keys of a global depend on whether
    /// another thread stores ids in it, and a join through a sole-writer location does not
    /// join the joining thread itself. Threads that agree can share a solution.
    fn same_view(&self, a: ThreadId, b: ThreadId) -> bool {
        a == b
            || (self
                .writers
                .values()
                .all(|w| w.iter().any(|t| *t != a) == w.iter().any(|t| *t != b))
                && !self.sole.values().any(|t| *t == a || *t == b))
    }

    /// Whether key `k` names a local of `func`.
    fn owned_by(&self, k: IdKey, func: FuncId) -> bool {
        self.roots
            .get(k.0 as usize)
            .is_some_and(|(o, _)| *o == Some(func))
    }

    /// The keys whose variable a write of `lv` (its locals those of `func`) may change (keys
    /// of the same variable).
    fn keys_of_root(&self, func: FuncId, lv: &Lval) -> SmallVec<[IdKey; 2]> {
        let Host::Var(v) = lv.host else {
            return SmallVec::new();
        };
        let owner = matches!(v, Var::Local(_)).then_some(func);
        self.roots
            .iter()
            .enumerate()
            .filter(|(_, r)| **r == (owner, v))
            .map(|(i, _)| IdKey(i as u32))
            .collect()
    }
}

/// Global thread-id locations, from the create statements each thread runs (in every function
/// context it reaches): per global, the threads storing ids in it; and the locations written
/// by nothing but one create statement starting one unique thread (Goblint's `threadJoins`
/// analysis joins a must-thread-id value the same way): the global's address is used only as
/// thread-id pointers, no assignment writes it, and no other create writes an overlapping
/// location. A join through such a location that returns has joined that thread: before the
/// create, the location holds no thread's id (its static zero value), and joining a value that
/// does not identify a joinable thread is undefined (POSIX `pthread_join`), so no defined run
/// joins it then.
fn sole_threads(program: &Program, roles: &Roles, graph: &ThreadGraph, keys: &mut IdKeys) {
    // (global, lvalue, create statement) of every create storing into a global.
    let mut stores: Vec<(GlobalId, Lval, CallSite)> = Vec::new();
    let mut writers: FxHashMap<GlobalId, SmallVec<[ThreadId; 2]>> = FxHashMap::default();
    for tc in &graph.contexts {
        let mut funcs: Vec<FuncId> = tc.ctxs.iter().map(|c| c.func).collect();
        funcs.sort();
        funcs.dedup();
        for func in funcs {
            let Some(cfg) = &program.function(func).body else {
                continue;
            };
            for (ei, e) in cfg.edges.iter().enumerate() {
                let (Op::Call { args, .. }, Some(Role::ThreadCreate { thread_id, .. })) =
                    (&e.op, roles.of_call(&e.op))
                else {
                    continue;
                };
                let Some((_, lv)) = args
                    .get(*thread_id)
                    .and_then(|a| keys.target_of_ptr(program, func, a))
                else {
                    continue;
                };
                let Host::Var(Var::Global(g)) = lv.host else {
                    continue;
                };
                let w = writers.entry(g).or_default();
                if !w.contains(&tc.thread) {
                    w.push(tc.thread);
                }
                stores.push((
                    g,
                    lv,
                    CallSite {
                        func,
                        edge: EdgeId(ei as u32),
                    },
                ));
            }
        }
    }
    // Globals some other statement writes.
    let mut assigned: FxHashSet<GlobalId> = FxHashSet::default();
    for f in &program.functions {
        let Some(cfg) = &f.body else { continue };
        for e in &cfg.edges {
            let mut note = |lv: &Lval| {
                if let Host::Var(Var::Global(g)) = lv.host {
                    assigned.insert(g);
                }
            };
            match &e.op {
                Op::Assign { lhs, .. } => note(lhs),
                Op::Call { dest: Some(d), .. } => note(d),
                Op::Asm { outputs, .. } => outputs.iter().for_each(&mut note),
                _ => {}
            }
        }
    }
    let plain = |lv: &Lval| {
        lv.proj.iter().all(|p| match p {
            Proj::Index(i) => i.as_int().is_some(),
            Proj::Field { comp, .. } => {
                program.types.comp(*comp).kind == crate::ir::types::CompKind::Struct
            }
        })
    };
    let mut by_global: FxHashMap<GlobalId, Vec<(Lval, CallSite)>> = FxHashMap::default();
    for (g, lv, site) in stores {
        by_global.entry(g).or_default().push((lv, site));
    }
    let mut globals: Vec<GlobalId> = by_global.keys().copied().collect();
    globals.sort();
    for g in globals {
        let v = Var::Global(g);
        if assigned.contains(&g) || keys.escaped.contains(&(None, v)) {
            continue;
        }
        let list = &by_global[&g];
        if !list.iter().all(|(lv, _)| plain(lv)) {
            continue;
        }
        // Distinct locations must not overlap: no projection list is a proper prefix of
        // another's.
        let prefix = list.iter().any(|(a, _)| {
            list.iter()
                .any(|(b, _)| a.proj.len() < b.proj.len() && b.proj[..a.proj.len()] == a.proj[..])
        });
        if prefix {
            continue;
        }
        for (lv, site) in list {
            let mut sites: Vec<CallSite> = list
                .iter()
                .filter(|(x, _)| x.proj == lv.proj)
                .map(|(_, s)| *s)
                .collect();
            sites.sort();
            sites.dedup();
            if sites.len() != 1 {
                continue;
            }
            let mut threads = graph.created_at(*site);
            let (Some(t), None) = (threads.next(), threads.next()) else {
                continue;
            };
            if t.unique {
                let k = keys.intern(None, v, lv);
                keys.sole.insert(k, t.id);
            }
        }
    }
    keys.writers = writers;
}

/// Locals of a function whose value is an unconstrained input: defined only by one call of a
/// nondet (or unknown external) function, or never written at all, and address never taken.
fn free_locals(program: &Program, roles: &Roles, func: FuncId) -> FxHashSet<LocalId> {
    let Some(cfg) = &program.function(func).body else {
        return FxHashSet::default();
    };
    let mut defs: FxHashMap<LocalId, (usize, bool)> = FxHashMap::default();
    let mut tested_at: FxHashMap<LocalId, FxHashSet<NodeId>> = FxHashMap::default();
    let mut addr_taken: FxHashSet<LocalId> = FxHashSet::default();
    let local_of = |lv: &Lval| match lv.host {
        Host::Var(Var::Local(l)) if lv.proj.is_empty() => Some(l),
        _ => None,
    };
    for e in &cfg.edges {
        match &e.op {
            Op::Assign { lhs, .. } => {
                if let Some(l) = local_of(lhs) {
                    defs.entry(l).or_default().0 += 2;
                }
            }
            Op::Call { dest, callee, .. } => {
                if let Some(l) = dest.as_ref().and_then(local_of) {
                    // A thread creation's result too: its witness value is 0 (success,
                    // [`create_result`]), any other value only over-approximates. So is the
                    // result of a library function whose result comes from the environment
                    // (`socket`, `getuid`): any value is one some environment gives.
                    let nondet = match callee {
                        Callee::Direct(f) => match roles.get(*f) {
                            Some(Role::Nondet | Role::ThreadCreate { .. }) => true,
                            Some(Role::Library(spec)) => spec.environment,
                            None => program.function(*f).body.is_none(),
                            Some(_) => false,
                        },
                        Callee::Indirect(_) => false,
                    };
                    let d = defs.entry(l).or_default();
                    d.0 += 1;
                    d.1 |= !nondet;
                }
            }
            Op::Assume { cond, .. } => {
                crate::ir::visit::walk_expr(cond, &mut |x| {
                    if let ExprKind::Load(lv) = &x.kind
                        && let Some(l) = local_of(lv)
                    {
                        tested_at.entry(l).or_default().insert(e.src);
                    }
                });
            }
            _ => {}
        }
        crate::ir::visit::op_exprs(&e.op, &mut |y| {
            if let ExprKind::AddrOf(lv) = &y.kind
                && let Host::Var(Var::Local(l)) = lv.host
            {
                addr_taken.insert(l);
            }
        });
    }
    // A variable never written holds one indeterminate value throughout (`int x; if (x) ..;
    // if (x) ..;` takes both branches the same way).
    for l in tested_at.keys() {
        let never_written = !defs.contains_key(l)
            && program
                .function(func)
                .locals
                .get(l.0 as usize)
                .is_some_and(|x| x.kind == crate::ir::LocalKind::Var);
        if never_written {
            defs.insert(*l, (1, false));
        }
    }
    let mut free: FxHashSet<LocalId> = defs
        .iter()
        .filter(|(l, (n, bad))| {
            *n == 1
                && !bad
                && !addr_taken.contains(l)
                && program
                    .function(func)
                    .locals
                    .get(l.0 as usize)
                    .is_some_and(|x| x.kind != crate::ir::LocalKind::Param)
        })
        .map(|(l, _)| *l)
        .collect();
    // `main`'s argument count is an input: a run may pass any number of arguments (the
    // thread's initial fact bounds its witness values, [`argc_constraint`]).
    if let Some((argc, _)) = main_argc(program, func)
        && !defs.contains_key(&argc)
        && !addr_taken.contains(&argc)
    {
        free.insert(argc);
    }
    free
}

/// Longest arm [`rejoins`] follows.
const REJOIN_ARM: usize = 32;

/// The two-way branches of `func` whose arms are straight and meet again (`if (debug)
/// printf(...);`), mapped to the node where they meet: each arm is a chain of nodes with one
/// outgoing edge each, at most [`REJOIN_ARM`] long, of calls of functions without a body that
/// return (no concurrency role, no `noreturn` specification) and of writes of locals nothing
/// the facts track reads (no branch condition, returned value, thread-id argument or free
/// local; address never taken). Whatever the condition, one arm is taken and reaches the
/// meeting node with the same facts, so a path certain before the branch is certain again
/// there ([`MhpFact::restore`]). An arm that set a tested local would let a later test
/// follow an arm no run may take.
/// `free`: the function's free locals ([`free_locals`]).
fn rejoins(
    program: &Program,
    roles: &Roles,
    func: FuncId,
    free: &FxHashSet<LocalId>,
) -> FxHashMap<NodeId, NodeId> {
    let mut out = FxHashMap::default();
    let Some(cfg) = &program.function(func).body else {
        return out;
    };
    let mut succ: FxHashMap<NodeId, SmallVec<[&Edge; 2]>> = FxHashMap::default();
    for e in &cfg.edges {
        succ.entry(e.src).or_default().push(e);
    }
    // The locals the facts may read: tested, returned, joined, free or address-taken.
    let mut watched = free.clone();
    let mut watch = |x: &Expr| {
        crate::ir::visit::walk_expr(x, &mut |y| match &y.kind {
            ExprKind::Load(lv) | ExprKind::AddrOf(lv) => {
                if let Host::Var(Var::Local(l)) = lv.host {
                    watched.insert(l);
                }
            }
            _ => {}
        })
    };
    for e in &cfg.edges {
        match &e.op {
            Op::Assume { cond, .. } => watch(cond),
            Op::Return(Some(x)) => watch(x),
            Op::Call { args, .. } => {
                let joins = matches!(roles.of_call(&e.op), Some(Role::ThreadJoin { .. }));
                for a in args {
                    if joins || matches!(strip_casts(a).kind, ExprKind::AddrOf(_)) {
                        watch(a);
                    }
                }
            }
            _ => {}
        }
    }
    let quiet =
        |lv: &Lval| crate::ir::visit::whole_local(lv).is_some_and(|l| !watched.contains(&l));
    let straight = |e: &Edge| match &e.op {
        Op::Skip => true,
        Op::Assign { lhs, .. } => quiet(lhs),
        Op::Call {
            callee: Callee::Direct(g),
            dest,
            ..
        } => {
            program.function(*g).body.is_none()
                && dest.as_ref().is_none_or(quiet)
                && match roles.get(*g) {
                    None => true,
                    Some(Role::Library(spec)) => !spec.noreturn,
                    Some(_) => false,
                }
        }
        _ => false,
    };
    // The nodes an arm starting at `n` passes, the last one where it stops.
    let arm = |mut n: NodeId| {
        let mut nodes: SmallVec<[NodeId; 8]> = SmallVec::new();
        loop {
            nodes.push(n);
            match succ.get(&n).map(|v| v.as_slice()) {
                Some([e]) if straight(e) && nodes.len() < REJOIN_ARM => n = e.dst,
                _ => return nodes,
            }
        }
    };
    for (n, edges) in &succ {
        let [a, b] = edges.as_slice() else { continue };
        if !matches!(a.op, Op::Assume { .. }) || !matches!(b.op, Op::Assume { .. }) {
            continue;
        }
        let (xa, xb) = (arm(a.dst), arm(b.dst));
        if let Some(j) = xa.iter().find(|x| xb.contains(x))
            && *j != *n
        {
            out.insert(*n, *j);
        }
    }
    out
}

/// `main`'s first parameter and its type, when `func` is `main` and the parameter is an
/// integer.
fn main_argc(program: &Program, func: FuncId) -> Option<(LocalId, crate::ir::TypeId)> {
    let f = program.function(func);
    let argc = *f.params.first()?;
    let ty = f.locals.get(argc.0 as usize)?.ty;
    (f.name == "main" && program.types.int_kind(ty).is_some()).then_some((argc, ty))
}

/// The constraint on `main`'s argument count in the main thread's initial fact: any `int`
/// over-approximates it (POSIX lets `execve` pass an empty argument vector, and nothing
/// forbids a negative test), and a run with 1 to 4096 arguments (the program name included)
/// witnesses a certain path. Linux passes at least the program name since 5.18, and 4096
/// arguments are far below `ARG_MAX`.
fn argc_constraint(program: &Program, main: FuncId) -> Option<(LocalId, Interval, Interval)> {
    let (argc, ty) = main_argc(program, main)?;
    let range = type_range(program, ty)?;
    Some((argc, range, Interval::new(1, 4096).meet(&range)))
}

/// The witness values of a thread creation's result local: 0, the creation succeeded (the
/// analysis counts the thread as created on the path); any value of `range` over-approximates.
fn create_result(range: Interval) -> (Interval, Interval) {
    (range, Interval::constant(0).meet(&range))
}

/// At most how many different constants a function may return for its facts to record them
/// ([`MhpFact::ret`]).
const RETURNED_CONSTANTS: usize = 4;

/// Locals of `func` whose address is never taken and that are either
/// - written only by assignments of integer constants and read only as the condition of an
///   assumption (the temporary of `assume(a && b)`), or
/// - *result locals*: written only with the result of direct calls of defined functions and
///   read only as the condition of an assumption or of a branch (`ret = init(); if (ret ==
///   0) ...`), taking the constant the callee's paths return ([`MhpFact::ret`]).
///
/// Tracking only these keeps the facts few.
fn flag_locals(program: &Program, roles: &Roles, func: FuncId) -> FxHashSet<LocalId> {
    let mut out = FxHashSet::default();
    let Some(cfg) = &program.function(func).body else {
        return out;
    };
    let mut bad = FxHashSet::default();
    // Locals read by a branch condition, and locals written by constants.
    let mut tested = FxHashSet::default();
    let mut konst = FxHashSet::default();
    for e in &cfg.edges {
        // Reads other than an assumption's condition (or a branch's, for result locals)
        // disqualify a local.
        let assumed = match (&e.op, roles.of_call(&e.op)) {
            (Op::Call { args, .. }, Some(Role::Assume { cond })) => {
                args.get(*cond).and_then(crate::ir::visit::local_of)
            }
            _ => None,
        };
        let branch = matches!(e.op, Op::Assume { .. });
        crate::ir::visit::op_exprs(&e.op, &mut |x| {
            if let ExprKind::Load(lv) = &x.kind
                && let Some(l) = crate::ir::visit::whole_local(lv)
                && Some(l) != assumed
            {
                if branch {
                    tested.insert(l);
                } else {
                    bad.insert(l);
                }
            }
        });
    }
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
        bad.insert(l);
    });
    for e in &cfg.edges {
        match &e.op {
            Op::Assign { lhs, rhs } => {
                if let Host::Var(Var::Local(l)) = lhs.host {
                    if lhs.proj.is_empty() && exact_int(program, rhs).is_some() {
                        out.insert(l);
                        konst.insert(l);
                    } else {
                        bad.insert(l);
                    }
                }
            }
            Op::Call {
                dest: Some(d),
                callee,
                ..
            } => {
                if let Host::Var(Var::Local(l)) = d.host {
                    let defined = match callee {
                        Callee::Direct(g) => {
                            roles.get(*g).is_none() && program.function(*g).body.is_some()
                        }
                        Callee::Indirect(_) => false,
                    };
                    if d.proj.is_empty() && defined {
                        out.insert(l);
                    } else {
                        bad.insert(l);
                    }
                }
            }
            Op::Asm { outputs, .. } => {
                for o in outputs {
                    if let Host::Var(Var::Local(l)) = o.host {
                        bad.insert(l);
                    }
                }
            }
            _ => {}
        }
    }
    let is_param = |l: &LocalId| {
        program
            .function(func)
            .locals
            .get(l.0 as usize)
            .is_none_or(|x| x.kind == crate::ir::LocalKind::Param)
    };
    // A constant-written local tested by a branch stays untracked (status variables set in
    // loops would multiply the facts).
    let branch_flag = |l: &LocalId| konst.contains(l) && tested.contains(l);
    out.retain(|l| !(bad.contains(l) || is_param(l) || branch_flag(l)));
    out
}

/// The value of `e`, a chain of casts around an expression whose value `core` gives, when
/// every cast keeps it (integer casts of values their type holds); `None` otherwise.
fn exact_value(program: &Program, e: &Expr, core: &dyn Fn(&Expr) -> Option<i128>) -> Option<i128> {
    match &e.kind {
        ExprKind::Cast(inner) => {
            let v = exact_value(program, inner, core)?;
            type_range(program, e.ty)?.contains(v).then_some(v)
        }
        _ => core(e),
    }
}

/// The value of an integer constant `e` (casts included), when its casts keep it.
fn exact_int(program: &Program, e: &Expr) -> Option<i128> {
    exact_value(program, e, &|x| {
        x.as_int()
            .filter(|k| type_range(program, x.ty).is_some_and(|r| r.contains(*k)))
    })
}

/// The outcome of the test `cond == branch` when it reads only a flag local whose value the
/// fact knows (`x`, `!x`, `x == k`, `x != k`); `None` otherwise.
fn flag_test(
    program: &Program,
    flags: &FxHashSet<LocalId>,
    f: &MhpFact,
    func: FuncId,
    cond: &Expr,
    branch: bool,
) -> Option<bool> {
    let mut c = cond;
    let mut branch = branch;
    while let ExprKind::Unary(crate::ir::UnOp::LogNot, a) = &strip_casts(c).kind {
        branch = !branch;
        c = a;
    }
    // The value of a (cast) load of a flag local whose value the fact knows.
    let flag = |x: &Expr| {
        let ExprKind::Load(lv) = &x.kind else {
            return None;
        };
        let l = crate::ir::visit::whole_local(lv)?;
        if !flags.contains(&l) {
            return None;
        }
        f.flags
            .iter()
            .find(|(g, x, _)| *g == func && *x == l)
            .map(|(_, _, k)| *k)
            .filter(|k| type_range(program, x.ty).is_some_and(|r| r.contains(*k)))
    };
    let value = |e: &Expr| exact_value(program, e, &flag);
    let truth = if let Some(v) = value(c) {
        v != 0
    } else {
        let ExprKind::Binary(op, a, b) = &strip_casts(c).kind else {
            return None;
        };
        // The two operands' values: the flag's and a constant, either way round.
        let (x, y) = match (
            value(a),
            exact_int(program, b),
            value(b),
            exact_int(program, a),
        ) {
            (Some(v), Some(k), _, _) => (v, k),
            (_, _, Some(v), Some(k)) => (k, v),
            _ => return None,
        };
        // The usual arithmetic conversions keep the values (and their order) when both are
        // non-negative or both operands are signed.
        let signed = |e: &Expr| program.types.int_kind(e.ty).is_some_and(|k| k.is_signed());
        if (x < 0 || y < 0) && !(signed(a) && signed(b)) {
            return None;
        }
        match op {
            BinOp::Eq => x == y,
            BinOp::Ne => x != y,
            BinOp::Lt => x < y,
            BinOp::Le => x <= y,
            BinOp::Gt => x > y,
            BinOp::Ge => x >= y,
            _ => return None,
        }
    };
    Some(truth == branch)
}

/// The values of an integer type, inclusive (`None` for types wider than 64 bits).
fn type_range(program: &Program, ty: crate::ir::TypeId) -> Option<Interval> {
    let k = program.types.int_kind(ty)?;
    if k == crate::ir::types::IntKind::Bool {
        return Some(Interval::new(0, 1));
    }
    let bits = program.types.data_model.int_size(k) as u32 * 8;
    if bits > 64 {
        return None;
    }
    Some(if k.is_signed() {
        Interval::new(-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        Interval::new(0, (1i128 << bits) - 1)
    })
}

/// What a branch condition says about a free local: the local, its type's range and the set of
/// its values that make `cond` evaluate to `branch` (`Exact`), or that the set is the range
/// minus one value (`Except`). `konst` gives the constant value of other operands, if any.
enum FreeTest {
    Exact(LocalId, Interval, Interval),
    Except(LocalId, Interval, i128),
}

fn free_test(
    program: &Program,
    free: &FxHashSet<LocalId>,
    cond: &Expr,
    branch: bool,
    konst: &dyn Fn(&Expr) -> Option<i128>,
) -> Option<FreeTest> {
    let free_load = |e: &Expr| match &strip_casts(e).kind {
        ExprKind::Load(lv) => match lv.host {
            Host::Var(Var::Local(l)) if lv.proj.is_empty() && free.contains(&l) => {
                Some((l, type_range(program, lv.ty)?))
            }
            _ => None,
        },
        _ => None,
    };
    let mut c = strip_casts(cond);
    let mut branch = branch;
    while let ExprKind::Unary(crate::ir::UnOp::LogNot, a) = &c.kind {
        branch = !branch;
        c = strip_casts(a);
    }
    if let Some((l, r)) = free_load(c) {
        // A truth test: `x` is non-zero on the true branch.
        return Some(if branch {
            FreeTest::Except(l, r, 0)
        } else {
            FreeTest::Exact(l, r, Interval::constant(0))
        });
    }
    let ExprKind::Binary(op, a, b) = &c.kind else {
        return None;
    };
    let k_of = |e: &Expr| e.as_int().or_else(|| konst(e));
    let ((l, r), k, op) = match (free_load(a), free_load(b)) {
        (Some(x), None) => (x, k_of(b)?, *op),
        // Mirror: `k < x` is `x > k`.
        (None, Some(x)) => (x, k_of(a)?, op.mirrored()),
        _ => return None,
    };
    let op = if branch { op } else { op.negated()? };
    use racedar_domains::interval::{NEG_INF, POS_INF};
    let set = match op {
        BinOp::Lt => Interval::new(NEG_INF, k.saturating_sub(1)),
        BinOp::Le => Interval::new(NEG_INF, k),
        BinOp::Gt => Interval::new(k.saturating_add(1), POS_INF),
        BinOp::Ge => Interval::new(k, POS_INF),
        BinOp::Eq => Interval::constant(k),
        BinOp::Ne => return Some(FreeTest::Except(l, r, k)),
        _ => return None,
    };
    Some(FreeTest::Exact(l, r, set.meet(&r)))
}

/// What the backend knows at a point of a thread, for the active-threads analysis.
pub struct Oracle<'a> {
    /// For a branch statement: never taken (`False`), always taken when its source is reached
    /// (`True`), or either (`Maybe`).
    pub branch: &'a dyn Fn(&crate::context::Context) -> Bool3,
    /// The constant value of an integer expression at a statement, if it has one.
    pub constant: &'a dyn Fn(&crate::context::Context, &Expr) -> Option<i128>,
}

/// The oracle's answers an analysis relied on: its solution holds for another thread whose
/// oracle gives the same answers at the same points.
#[derive(Default)]
struct Asked {
    /// Whether to record (not needed when threads share solutions anyway).
    record: bool,
    branch: std::cell::RefCell<FxHashMap<crate::context::Context, Bool3>>,
    constant: std::cell::RefCell<Vec<(crate::context::Context, Expr, Option<i128>)>>,
}

impl Asked {
    /// Whether `oracle` answers every recorded question the same way for `thread`.
    fn agrees(&self, oracle: &Oracle<'_>, thread: ThreadId) -> bool {
        let at = |c: &crate::context::Context| crate::context::Context {
            thread,
            ..c.clone()
        };
        self.branch
            .borrow()
            .iter()
            .all(|(c, a)| (oracle.branch)(&at(c)) == *a)
            && self
                .constant
                .borrow()
                .iter()
                .all(|(c, e, k)| (oracle.constant)(&at(c), e) == *k)
    }
}

struct ActiveThreads<'a> {
    program: &'a Program,
    roles: &'a Roles,
    oracle: &'a Oracle<'a>,
    /// What the analysis asked the oracle.
    asked: &'a Asked,
    tc: &'a ThreadContexts,
    graph: &'a ThreadGraph,
    keys: &'a mut IdKeys,
    free: FxHashMap<FuncId, std::rc::Rc<FxHashSet<LocalId>>>,
    /// Per function, its flag locals (see [`MhpFact::flags`]).
    flag_locals: FxHashMap<FuncId, std::rc::Rc<FxHashSet<LocalId>>>,
    /// Per function, whether its facts record the constant they return ([`MhpFact::ret`]).
    returns: FxHashMap<FuncId, bool>,
    exits: FxHashMap<FuncId, FxHashSet<EdgeId>>,
    /// Per function, the exit edges of join loops with the create statements they undo.
    join_alls: FxHashMap<FuncId, FxHashMap<EdgeId, Vec<EdgeId>>>,
    /// Per function, liveness of its free and flag locals.
    live: FxHashMap<FuncId, std::rc::Rc<live::Liveness>>,
    /// Per function, its branches with straight arms and where they meet ([`rejoins`]).
    rejoins: FxHashMap<FuncId, std::rc::Rc<FxHashMap<NodeId, NodeId>>>,
}

impl ActiveThreads<'_> {
    /// Passes the test `cond == branch` (the backend's verdict on it: `taken`): constrains a
    /// free local, or ends certainty when the outcome depends on something else. Returns the
    /// facts after the test: none when the path's constraints make it impossible, two when a
    /// free local must differ from a value inside its allowed interval (one fact per side).
    fn test(
        &mut self,
        mut f: MhpFact,
        func: FuncId,
        ctx: &crate::context::Context,
        cond: &Expr,
        branch: bool,
        taken: Bool3,
    ) -> SmallVec<[MhpFact; 2]> {
        let mut out = SmallVec::new();
        if taken == Bool3::True || self.counted_exits(func).contains(&ctx.edge) {
            out.push(f);
            return out;
        }
        // A test of a flag local whose value the fact knows is decided.
        if let Some(holds) = flag_test(self.program, &self.flags_of(func), &f, func, cond, branch) {
            if holds {
                out.push(f);
            }
            return out;
        }
        let free = std::rc::Rc::clone(self.free_of(func));
        let (oracle, asked) = (self.oracle, self.asked);
        let konst = |e: &Expr| {
            let k = (oracle.constant)(ctx, e);
            if asked.record {
                asked
                    .constant
                    .borrow_mut()
                    .push((ctx.clone(), e.clone(), k));
            }
            k
        };
        // Narrows `l` to `set`: the fact, unless no allowed value is left.
        let narrow = |mut f: MhpFact, l: LocalId, r: Interval, set: Interval| {
            let (over, under) = f.allowed(func, l, r);
            let (over, under) = (over.meet(&set), under.meet(&set));
            if over.is_bottom() {
                return None;
            }
            if under.is_bottom() {
                f.certain = false;
            }
            f.constrain(func, l, over, if under.is_bottom() { over } else { under });
            Some(f)
        };
        match free_test(self.program, &free, cond, branch, &konst) {
            Some(FreeTest::Exact(l, r, set)) => out.extend(narrow(f, l, r, set)),
            Some(FreeTest::Except(l, r, k)) => {
                let (over, _) = f.allowed(func, l, r);
                use racedar_domains::interval::{NEG_INF, POS_INF};
                let below = Interval::new(NEG_INF, k.saturating_sub(1));
                let above = Interval::new(k.saturating_add(1), POS_INF);
                if over.lo() < k && k < over.hi() {
                    // A hole inside: one fact per side, each with its own witnesses.
                    out.extend(narrow(f.clone(), l, r, below));
                    out.extend(narrow(f, l, r, above));
                } else if over.lo() == k {
                    out.extend(narrow(f, l, r, above));
                } else {
                    out.extend(narrow(f, l, r, below));
                }
            }
            None => {
                if f.certain && f.restore.is_none() {
                    let src = self
                        .program
                        .function(func)
                        .body
                        .as_ref()
                        .map(|c| c.edge(ctx.edge).src);
                    f.restore = src
                        .and_then(|n| self.rejoins_of(func).get(&n).copied())
                        .map(|j| (func, j));
                }
                f.certain = false;
                out.push(f);
            }
        }
        out
    }

    fn counted_exits(&mut self, func: FuncId) -> &FxHashSet<EdgeId> {
        let (program, roles) = (self.program, self.roles);
        self.exits.entry(func).or_insert_with(|| {
            loops::counted_loops(program, roles, func, false)
                .into_iter()
                .map(|l| l.exit)
                .collect()
        })
    }

    /// Leaving a join loop by `edge`: the threads of the create statements it undoes stop.
    fn join_all(&mut self, f: &mut MhpFact, func: FuncId, edge: EdgeId) {
        let (program, roles) = (self.program, self.roles);
        let table = self.join_alls.entry(func).or_insert_with(|| {
            loops::join_loops(program, roles, func)
                .into_iter()
                .map(|j| (j.exit, j.creates))
                .collect()
        });
        let Some(creates) = table.get(&edge) else {
            return;
        };
        for &c in creates {
            for t in self.graph.created_at(CallSite { func, edge: c }) {
                f.end_all(t.id, t.unique);
            }
        }
    }

    /// Forgets the constraints and flag values of `func`'s locals that no test can read after
    /// `node` (see [`live`]).
    fn forget_dead(&mut self, f: &mut MhpFact, func: FuncId, node: NodeId) {
        if f.cons.is_empty() && f.flags.is_empty() {
            return;
        }
        let live = match self.live.get(&func) {
            Some(l) => std::rc::Rc::clone(l),
            None => {
                let mut tracked: FxHashSet<LocalId> = (**self.free_of(func)).clone();
                tracked.extend(self.flags_of(func).iter().copied());
                let l = std::rc::Rc::new(live::Liveness::compute(self.program, func, &tracked));
                self.live.insert(func, std::rc::Rc::clone(&l));
                l
            }
        };
        f.cons
            .retain(|(g, l, _, _)| *g != func || live.is_live(node, *l));
        f.flags
            .retain(|(g, l, _)| *g != func || live.is_live(node, *l));
    }

    /// Whether the facts of `func` record the constant they return: when its return
    /// statements return at most [`RETURNED_CONSTANTS`] different constants (each splits the
    /// facts at the exit).
    fn records_return(&mut self, func: FuncId) -> bool {
        let program = self.program;
        *self.returns.entry(func).or_insert_with(|| {
            let Some(cfg) = &program.function(func).body else {
                return false;
            };
            let mut seen: SmallVec<[i128; 4]> = SmallVec::new();
            for e in &cfg.edges {
                if let Op::Return(Some(x)) = &e.op
                    && let Some(k) = exact_int(program, x)
                    && !seen.contains(&k)
                {
                    seen.push(k);
                }
            }
            seen.len() <= RETURNED_CONSTANTS
        })
    }

    fn flags_of(&mut self, func: FuncId) -> std::rc::Rc<FxHashSet<LocalId>> {
        let (program, roles) = (self.program, self.roles);
        std::rc::Rc::clone(
            self.flag_locals
                .entry(func)
                .or_insert_with(|| std::rc::Rc::new(flag_locals(program, roles, func))),
        )
    }

    /// At the return of a call that spawns a registry's callbacks as threads
    /// ([`crate::ir::deferred`]: the [`crate::ir::deferred::SPAWN`] calls looping at the
    /// call's source node), every one of them has ended: the library joins the threads it
    /// started before it returns (FUSE's multithreaded loop joins its workers). Threads those
    /// callbacks created may still run.
    fn end_spawned(&mut self, f: &mut MhpFact, func: FuncId, edge: &Edge) {
        let program = self.program;
        let Some(cfg) = &program.function(func).body else {
            return;
        };
        for &ei in &cfg.node(edge.src).succs {
            let e = cfg.edge(ei);
            if e.dst != edge.src {
                continue;
            }
            let Op::Call {
                callee: Callee::Direct(g),
                ..
            } = &e.op
            else {
                continue;
            };
            if program.function(*g).name != crate::ir::deferred::SPAWN {
                continue;
            }
            for t in self.graph.created_at(CallSite { func, edge: ei }) {
                f.end_all(t.id, t.unique);
            }
        }
    }

    fn rejoins_of(&mut self, func: FuncId) -> &std::rc::Rc<FxHashMap<NodeId, NodeId>> {
        if !self.rejoins.contains_key(&func) {
            let free = std::rc::Rc::clone(self.free_of(func));
            let r = rejoins(self.program, self.roles, func, &free);
            self.rejoins.insert(func, std::rc::Rc::new(r));
        }
        &self.rejoins[&func]
    }

    fn free_of(&mut self, func: FuncId) -> &std::rc::Rc<FxHashSet<LocalId>> {
        let (program, roles) = (self.program, self.roles);
        self.free
            .entry(func)
            .or_insert_with(|| std::rc::Rc::new(free_locals(program, roles, func)))
    }

    fn forget_key(&mut self, fact: &mut MhpFact, func: FuncId, lv: &Lval) {
        if fact.ids.is_empty() && fact.alt_ids.is_empty() {
            return;
        }
        let roots = self.keys.keys_of_root(func, lv);
        fact.ids.retain(|(k, _)| !roots.contains(k));
        fact.alt_ids.retain(|(k, _)| !roots.contains(k));
    }
}

/// The `alt_ids` of the merge of two classes of paths: per thread-id variable, the children
/// it holds alone on one side (an `ids` entry of a fresh child, or an alternative) that do
/// not run on a side where the variable does not hold them.
fn merged_alternatives(a: &MhpFact, b: &MhpFact) -> SmallVec<[(IdKey, ThreadId); 2]> {
    let held = |x: &MhpFact, k: IdKey| -> SmallVec<[ThreadId; 2]> {
        x.ids
            .iter()
            .filter(|(y, c)| *y == k && x.fresh.contains(c))
            .chain(x.alt_ids.iter().filter(|(y, _)| *y == k))
            .map(|p| p.1)
            .collect()
    };
    let mut out = SmallVec::new();
    if a.alt_ids.is_empty() && b.alt_ids.is_empty() && a.ids == b.ids {
        return out;
    }
    let mut keys: SmallVec<[IdKey; 4]> = (a.ids.iter().chain(&a.alt_ids))
        .chain(b.ids.iter().chain(&b.alt_ids))
        .map(|p| p.0)
        .collect();
    keys.sort();
    keys.dedup();
    for k in keys {
        let (ha, hb) = (held(a, k), held(b, k));
        let mut all: SmallVec<[ThreadId; 4]> = ha.iter().chain(&hb).copied().collect();
        all.sort();
        all.dedup();
        for c in all {
            let alone = |x: &MhpFact, h: &[ThreadId]| h.contains(&c) || !x.may_active.contains(&c);
            if alone(a, &ha) && alone(b, &hb) {
                out.push((k, c));
            }
        }
    }
    out
}

impl Merge for MhpFact {
    fn merge(facts: &[&MhpFact]) -> MhpFact {
        let mut it = facts.iter();
        let Some(first) = it.next() else {
            return MhpFact::initial();
        };
        let mut m = (*first).clone();
        for f in it {
            let alt_ids = merged_alternatives(&m, f);
            // Fresh on the merged paths: fresh or not running on each of them.
            let fresh_or_idle =
                |x: &MhpFact, c: &ThreadId| x.fresh.contains(c) || !x.may_active.contains(c);
            m.fresh = m
                .fresh
                .union(&f.fresh)
                .iter()
                .filter(|c| fresh_or_idle(&m, c) && fresh_or_idle(f, c))
                .collect();
            m.may_created = m.may_created.union(&f.may_created);
            m.may_active = m.may_active.union(&f.may_active);
            m.must_active = m.must_active.intersection(&f.must_active);
            // Constraints over-approximate every merged path's (a local constrained on one
            // side only is free); certainty survives only identical constraints.
            let same = m.cons == f.cons;
            m.certain = (m.certain || f.certain) && same;
            if m.restore != f.restore || m.certain || !same {
                m.restore = None;
            }
            if !same {
                let mut hull = SmallVec::new();
                for (fu, l, i, _) in &m.cons {
                    if let Some((_, _, j, _)) = f.cons.iter().find(|(g, x, _, _)| g == fu && x == l)
                    {
                        let h = i.join(j);
                        hull.push((*fu, *l, h, h));
                    }
                }
                m.cons = hull;
            }
            m.ids.retain(|p| f.ids.contains(p));
            m.alt_ids = alt_ids;
            m.alt_ids
                .retain(|(k, _)| !m.ids.iter().any(|(x, _)| x == k));
            m.joined = m.joined.intersection(&f.joined);
            m.created_joined = m.created_joined.intersection(&f.created_joined);
            m.joined_unknown |= f.joined_unknown;
            m.flags.retain(|x| f.flags.contains(x));
            if m.ret != f.ret {
                m.ret = None;
            }
        }
        m.settle();
        m
    }

    /// Level 0: the same threads created, active and joined (folding loses path conditions
    /// and thread ids only); level 1: alike in whether any thread was created or joined yet, so
    /// a fold never mixes the paths before a thread's first creation with those after it.
    fn similar(&self, o: &MhpFact, level: u8) -> bool {
        match level {
            0 => {
                self.may_created == o.may_created
                    && self.may_active == o.may_active
                    && self.must_active == o.must_active
                    && self.joined == o.joined
                    && self.joined_unknown == o.joined_unknown
            }
            _ => {
                self.may_created.is_empty() == o.may_created.is_empty()
                    && self.joined.is_empty() == o.joined.is_empty()
            }
        }
    }

    /// Paths before a thread's creation must not take the facts of paths after it.
    const STRICT_ENTRIES: bool = true;

    // Equal facts pass every test below, so no equality test comes first; the cheap tests
    // of flags come before the sets.
    fn covers(&self, o: &MhpFact) -> bool {
        (!o.certain || (self.certain && self.cons == o.cons))
            && (o.restore.is_none()
                || (self.cons == o.cons && (self.certain || self.restore == o.restore)))
            && self.alt_ids.iter().all(|p| o.alt_ids.contains(p))
            && self.covers_paths(o)
    }

    /// Forgets certainty (an under-approximate claim, which a fold of a certain and an
    /// uncertain fact drops) and takes an alternative of a thread-id variable as covering
    /// the variable's plain entry (a fold of the two keeps only the alternative). A join
    /// through an alternative ends the child as one through the plain entry does, but says
    /// less (not which child the variable held), so the plain order keeps them apart.
    fn covers_widened(&self, o: &MhpFact) -> bool {
        self.alt_ids.iter().all(|p| {
            o.alt_ids.contains(p)
                || (o.ids.contains(p) && o.fresh.contains(&p.1))
                || !o.may_active.contains(&p.1)
        }) && self.covers_paths(o)
    }
}

impl MhpFact {
    /// Whether every path `o` describes, `self` describes too, certainty and thread-id
    /// alternatives aside (the two orders differ there): every component of
    /// [`Merge::merge`] over-approximates its inputs in [`Merge::covers_widened`], so a fold
    /// covers the facts it folded in that order.
    fn covers_paths(&self, o: &MhpFact) -> bool {
        (self.ret.is_none() || self.ret == o.ret)
            && (self.joined_unknown || !o.joined_unknown)
            && o.may_created.is_subset(&self.may_created)
            && o.may_active.is_subset(&self.may_active)
            && self.must_active.is_subset(&o.must_active)
            && self.cons.iter().all(|(fu, l, i, _)| {
                o.cons
                    .iter()
                    .any(|(g, x, j, _)| g == fu && x == l && j.leq(i))
            })
            && self.ids.iter().all(|p| o.ids.contains(p))
            && self.joined.is_subset(&o.joined)
            && self.created_joined.is_subset(&o.created_joined)
            && self
                .fresh
                .iter()
                .all(|c| o.fresh.contains(&c) || !o.may_active.contains(&c))
            && self.flags.iter().all(|x| o.flags.contains(x))
    }
}

impl ActiveThreads<'_> {
    /// The transfer function.
    fn step(&mut self, at: At<'_>, edge: &Edge, fact: &MhpFact, out: &mut Vec<MhpFact>) {
        let (ctx, eid) = (at.ctx, at.edge);
        let func = self.tc.ctx(ctx).func;
        let mut f = fact.clone();
        match &edge.op {
            Op::Call { callee, args, dest } => {
                let role = match callee {
                    Callee::Direct(g) => self.roles.get(*g).cloned(),
                    Callee::Indirect(_) => None,
                };
                if !matches!(role, Some(Role::ThreadCreate { .. })) {
                    // A library function that starts threads or installs signal handlers:
                    // they may run from here on (no thread id to join them by).
                    let site = CallSite { func, edge: eid };
                    for t in self.graph.created_at(site) {
                        f.may_created.insert(t.id);
                        f.may_active.insert(t.id);
                        f.fresh.remove(&t.id);
                        f.alt_ids.retain(|(_, x)| *x != t.id);
                        f.joined.remove(&t.id);
                        f.created_joined.remove(&t.id);
                    }
                }
                if let Some(Role::Library(spec)) = &role
                    && !spec.spawns.is_empty()
                {
                    self.end_spawned(&mut f, func, edge);
                }
                match role {
                    Some(Role::ThreadCreate { thread_id, .. }) => {
                        let site = CallSite { func, edge: eid };
                        let children: SmallVec<[(ThreadId, bool); 2]> = self
                            .graph
                            .created_at(site)
                            .map(|t| (t.id, t.exact_entry))
                            .collect();
                        let program = self.program;
                        let target = args
                            .get(thread_id)
                            .and_then(|a| self.keys.target_of_ptr(program, func, a));
                        let key = target.as_ref().and_then(|(o, lv)| self.keys.key(*o, lv));
                        let exact = children.len() == 1 && children.iter().all(|c| c.1);
                        for (c, _) in &children {
                            // Fresh when no instance ran yet and the id is kept below.
                            let idle = !f.may_active.contains(c);
                            if idle && exact && key.is_some() {
                                f.fresh.insert(*c);
                                // No other variable holds the running instance's id.
                                f.ids.retain(|(_, x)| x != c);
                            } else {
                                f.fresh.remove(c);
                            }
                            f.alt_ids.retain(|(_, x)| x != c);
                            f.may_created.insert(*c);
                            f.may_active.insert(*c);
                            f.joined.remove(c);
                            f.created_joined.remove(c);
                        }
                        match (key, &target) {
                            (Some(k), _) => {
                                f.ids.retain(|(x, _)| *x != k);
                                f.alt_ids.retain(|(x, _)| *x != k);
                            }
                            // A location without a key of its own (`&ids[i]`): forget
                            // what the keys of its variable held.
                            (None, Some((o, lv))) => {
                                let roots = self.keys.keys_of_root(*o, lv);
                                f.ids.retain(|(x, _)| !roots.contains(x));
                                f.alt_ids.retain(|(x, _)| !roots.contains(x));
                            }
                            (None, None) => {}
                        }
                        if exact {
                            let (c, _) = children[0];
                            f.must_active.insert(c);
                            if let Some(k) = key {
                                f.ids.push((k, c));
                                f.ids.sort();
                            }
                        }
                    }
                    Some(Role::ThreadJoin { thread_id }) => {
                        let program = self.program;
                        let key = args
                            .get(thread_id)
                            .and_then(|a| self.keys.key_of_value(program, func, a));
                        let mut joined =
                            key.and_then(|k| f.ids.iter().find(|(x, _)| *x == k).map(|p| p.1));
                        // The last instance of a fresh child ends: no other runs.
                        if let Some(c) = joined
                            && f.fresh.contains(&c)
                        {
                            f.may_active.remove(&c);
                            f.fresh.remove(&c);
                        }
                        // Created on the path (the variable holds its id since the create).
                        if let Some(c) = joined
                            && self.graph.thread(c).unique
                        {
                            f.created_joined.insert(c);
                        }
                        // A variable holding one of several children (`alt_ids`): each of them
                        // ends; the variable may also hold another thread's id, so the
                        // rest is as for an unresolved id.
                        if joined.is_none()
                            && let Some(k) = key
                        {
                            for (_, c) in f.alt_ids.iter().filter(|(x, _)| *x == k) {
                                f.may_active.remove(c);
                                f.fresh.remove(c);
                            }
                            f.alt_ids.retain(|(x, _)| *x != k);
                        }
                        if joined.is_none() {
                            // A global location only one create writes, by any thread.
                            joined = args
                                .get(thread_id)
                                .and_then(|a| self.keys.sole_of_value(program, func, a))
                                .filter(|t| *t != self.tc.thread);
                        }
                        match joined {
                            Some(c) => {
                                if self.graph.thread(c).unique {
                                    f.may_active.remove(&c);
                                    f.joined.insert(c);
                                }
                                f.must_active.remove(&c);
                            }
                            // Any thread may have been joined (a child, or a descendant whose
                            // id the value holds).
                            None => {
                                f.must_active = BitSet::new();
                                f.created_joined = BitSet::new();
                                // An id that need not come from a create this thread made
                                // (read from memory the analysis cannot name, or from a
                                // global no create writes, e.g. `pthread_self()`'s result):
                                // the join may stop the main thread or any other one.
                                let foreign = match args
                                    .get(thread_id)
                                    .and_then(|a| self.keys.target_of_value(program, func, a))
                                {
                                    None => true,
                                    Some((_, lv)) => matches!(
                                        lv.host,
                                        Host::Var(Var::Global(g))
                                            if !self.keys.writers.contains_key(&g)
                                    ),
                                };
                                f.joined_unknown |= foreign;
                            }
                        }
                    }
                    Some(r) if r.ends_path() => return,
                    None => {
                        // An unknown function may join the threads whose ids it receives.
                        for a in args
                            .iter()
                            .filter(|_| !f.ids.is_empty() || !f.alt_ids.is_empty())
                        {
                            let Some(k) = self.keys.key_of_value(self.program, func, a) else {
                                continue;
                            };
                            let held: SmallVec<[ThreadId; 2]> = f
                                .ids
                                .iter()
                                .chain(&f.alt_ids)
                                .filter(|(x, _)| *x == k)
                                .map(|p| p.1)
                                .collect();
                            for c in held {
                                f.must_active.remove(&c);
                            }
                        }
                    }
                    Some(Role::Assume { cond }) => {
                        let ctx = self.tc.context(ctx, eid);
                        if let Some(c) = args.get(cond) {
                            let mut parts = self.test(f, func, &ctx, c, true, Bool3::Maybe);
                            let Some(first) = parts.pop() else {
                                return;
                            };
                            // The other side of a split (assumptions define nothing).
                            out.extend(parts);
                            f = first;
                        }
                    }
                    _ => {}
                }
                if let Some(d) = dest {
                    self.forget_key(&mut f, func, d);
                    // A fresh value of a free local: its old constraints no longer apply;
                    // nor does the old value of a result local.
                    if let Host::Var(Var::Local(l)) = d.host {
                        f.unconstrain(func, l);
                        f.flags.retain(|(g, x, _)| !(*g == func && *x == l));
                        if matches!(role, Some(Role::ThreadCreate { .. }))
                            && d.proj.is_empty()
                            && self.free_of(func).contains(&l)
                            && let Some(range) = type_range(self.program, d.ty)
                        {
                            let (over, under) = create_result(range);
                            f.constrain(func, l, over, under);
                        }
                    }
                }
            }
            Op::Assign { lhs, rhs } => {
                self.forget_key(&mut f, func, lhs);
                if let Some(l) = crate::ir::visit::whole_local(lhs)
                    && self.flags_of(func).contains(&l)
                {
                    f.flags.retain(|(g, x, _)| !(*g == func && *x == l));
                    if let Some(k) = exact_int(self.program, rhs) {
                        f.flags.push((func, l, k));
                        f.flags.sort();
                    }
                }
            }
            Op::Return(e) => {
                // The constant returned, when the function's type holds it unchanged.
                let record = self.records_return(func);
                let program = self.program;
                let range = program
                    .types
                    .func_sig(program.function(func).ty)
                    .and_then(|s| type_range(program, s.ret));
                f.ret = e
                    .as_ref()
                    .filter(|_| record)
                    .and_then(|e| exact_int(program, e))
                    .filter(|k| range.is_some_and(|r| r.contains(*k)));
            }
            Op::Assume { cond, branch } => {
                let qctx = self.tc.context(ctx, eid);
                let taken = (self.oracle.branch)(&qctx);
                if self.asked.record {
                    self.asked.branch.borrow_mut().insert(qctx.clone(), taken);
                }
                if taken == Bool3::False {
                    return;
                }
                for mut g in self.test(f, func, &qctx, cond, *branch, taken) {
                    self.join_all(&mut g, func, eid);
                    out.push(g);
                }
                return;
            }
            _ => {}
        }
        out.push(f);
    }
}

impl FactAnalysis for ActiveThreads<'_> {
    type Fact = MhpFact;

    fn callees(&mut self, at: At<'_>, _edge: &Edge) -> Callees {
        dataflow::recorded_callees(self.tc, at.ctx, at.edge)
    }

    fn transfer(&mut self, at: At<'_>, edge: &Edge, fact: &MhpFact, out: &mut Vec<MhpFact>) {
        let start = out.len();
        self.step(at, edge, fact, out);
        let func = self.tc.ctx(at.ctx).func;
        for f in &mut out[start..] {
            if f.restore == Some((func, edge.dst)) {
                f.certain = true;
                f.restore = None;
            }
            self.forget_dead(f, func, edge.dst);
            f.settle();
        }
    }

    fn call_entry(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        fact: &MhpFact,
    ) -> MhpFact {
        // The callee starts unconstrained (its locals are fresh, and the callers' constraints
        // come back at the return): one entry fact serves every caller path with the same
        // threads and certainty. Its paths are certain only when the call surely reaches it.
        let mut f = fact.clone();
        // A library function may not run a callback at all.
        let callback = matches!(target.kind, crate::context::CallKind::Callback(_));
        f.certain &= target.exact && !callback && !edge.uncertain;
        f.cons.clear();
        f.flags.clear();
        f.ret = None;
        let caller = self.tc.ctx(at.ctx).func;
        if !f.ids.is_empty() || !f.alt_ids.is_empty() {
            // The callee's locals are fresh; a parameter receiving a thread id the caller
            // knows holds that thread's id (`join_it(id1)` with `join_it(pthread_t t)`), or
            // one of several.
            let mut bound: SmallVec<[(IdKey, ThreadId); 2]> = SmallVec::new();
            let mut bound_alt: SmallVec<[(IdKey, ThreadId); 2]> = SmallVec::new();
            if caller != target.func
                && !callback
                && let Op::Call { args, .. } = &edge.op
            {
                let program = self.program;
                let callee = program.function(target.func);
                for (a, p) in args.iter().zip(&callee.params) {
                    let Some(ka) = self.keys.key_of_value(program, caller, a) else {
                        continue;
                    };
                    let lv = Lval {
                        host: Host::Var(Var::Local(*p)),
                        proj: Vec::new(),
                        ty: callee.local(*p).ty,
                    };
                    let Some(kp) = self.keys.key(target.func, &lv) else {
                        continue;
                    };
                    if let Some(c) = f.ids.iter().find(|(x, _)| *x == ka).map(|p| p.1) {
                        bound.push((kp, c));
                    }
                    for (_, c) in f.alt_ids.iter().filter(|(x, _)| *x == ka) {
                        bound_alt.push((kp, *c));
                    }
                }
            }
            let keys = &self.keys;
            f.ids.retain(|(k, _)| !keys.owned_by(*k, target.func));
            f.ids.extend(bound);
            f.ids.sort();
            f.ids.dedup_by_key(|(k, _)| *k);
            f.alt_ids.retain(|(k, _)| !keys.owned_by(*k, target.func));
            f.alt_ids.extend(bound_alt);
            f.alt_ids.sort();
            f.alt_ids.dedup();
            let ids = &f.ids;
            f.alt_ids.retain(|(k, _)| !ids.iter().any(|(x, _)| x == k));
        }
        f.settle();
        f
    }

    fn call_exit(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        pre: &MhpFact,
        exit: &MhpFact,
    ) -> MhpFact {
        let ctx = at.ctx;
        let mut f = exit.clone();
        f.certain = pre.certain && target.exact && exit.certain;
        f.cons = pre.cons.clone();
        f.flags = pre.flags.clone();
        f.ret = pre.ret;
        let func = self.tc.ctx(ctx).func;
        // A result local holds the constant the callee's paths returned.
        if let Op::Call { dest: Some(d), .. } = &edge.op
            && let Some(l) = crate::ir::visit::whole_local(d)
        {
            f.flags.retain(|(g, x, _)| !(*g == func && *x == l));
            if let Some(k) = exit.ret
                && self.flags_of(func).contains(&l)
                && type_range(self.program, d.ty).is_some_and(|r| r.contains(k))
            {
                f.flags.push((func, l, k));
                f.flags.sort();
            }
        }
        // The callee's locals are gone.
        if func != target.func && (!f.ids.is_empty() || !f.alt_ids.is_empty()) {
            let keys = &self.keys;
            f.ids.retain(|(k, _)| !keys.owned_by(*k, target.func));
            f.alt_ids.retain(|(k, _)| !keys.owned_by(*k, target.func));
        }
        if let Op::Call { dest: Some(d), .. } = &edge.op {
            self.forget_key(&mut f, func, d);
        }
        self.forget_dead(&mut f, func, edge.dst);
        f.settle();
        f
    }
}

/// A program point of a thread: function context and CFG node.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Point {
    /// The thread.
    pub thread: ThreadId,
    /// Function context in the thread.
    pub ctx: FnCtxId,
    /// CFG node.
    pub node: NodeId,
}

/// What the analysis knows at a point, summed over its facts.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ActiveAt {
    /// Children possibly created.
    pub may_created: BitSet<ThreadId>,
    /// Children possibly active.
    pub may_active: BitSet<ThreadId>,
    /// Whether some certain path reaches the point.
    pub certain: bool,
    /// Children active for sure on some certain path (the union over certain facts of their
    /// `must_active`).
    pub certainly_active: BitSet<ThreadId>,
    /// Threads surely joined (ended) on every path (the intersection over facts).
    pub joined: BitSet<ThreadId>,
    /// Threads possibly joined (the union over facts).
    pub may_joined: BitSet<ThreadId>,
    /// Threads created and then joined on some certain path (the union over certain facts).
    pub certainly_joined: BitSet<ThreadId>,
    /// Some path joined a thread whose id is unresolved: any thread may have ended.
    pub may_join_any: bool,
}

impl ActiveAt {
    /// Adds what another fact (or summary) says: unions, and the intersection of `joined`
    /// (`first` when `self` holds nothing yet).
    fn absorb(&mut self, o: &ActiveAt, first: bool) {
        self.may_created = self.may_created.union(&o.may_created);
        self.may_active = self.may_active.union(&o.may_active);
        self.certain |= o.certain;
        self.certainly_active = self.certainly_active.union(&o.certainly_active);
        self.joined = if first {
            o.joined.clone()
        } else {
            self.joined.intersection(&o.joined)
        };
        self.may_joined = self.may_joined.union(&o.may_joined);
        self.certainly_joined = self.certainly_joined.union(&o.certainly_joined);
        self.may_join_any |= o.may_join_any;
    }
}

/// Node visits the active-threads analysis of one thread may spend (the real-world programs
/// of the corpus need at most about 300 thousand). A thread whose fixpoint runs out of them
/// gets the sound answer of [`MhpResult::at`]: every child may be created and running, none
/// is surely joined, any thread may have been joined, no path is certain.
pub const VISIT_BUDGET: u64 = 4_000_000;

/// Results of the active-threads analysis of every thread.
pub struct MhpResult {
    solutions: Vec<Solution<dataflow::Facts<MhpFact>>>,
    /// The children of each thread (threads it may create), for the answer of a solution
    /// that ran out of its visit budget.
    children: Vec<BitSet<ThreadId>>,
    /// Index into `solutions` of each thread's solution.
    by_thread: Vec<usize>,
}

impl MhpResult {
    /// Runs the analysis on every thread.
    ///
    /// The facts concern a thread's own children, which are identified by entry function and
    /// create statement: threads with the same entry and the same contexts share a solution.
    ///
    /// `oracle` gives the backend's knowledge of branches and constants. Threads share
    /// solutions only when `share` says the oracle does not depend on the thread.
    pub fn compute(
        program: &Program,
        roles: &Roles,
        graph: &ThreadGraph,
        oracle: &Oracle<'_>,
        share: bool,
    ) -> MhpResult {
        let mut keys = IdKeys::new(program, roles);
        sole_threads(program, roles, graph, &mut keys);
        let mut unique: Vec<Solution<dataflow::Facts<MhpFact>>> = Vec::new();
        let mut asked_by: Vec<Asked> = Vec::new();
        // The contexts each unique solution was computed from (the solution's own contexts
        // are re-recorded by the engine and need not compare equal).
        let mut inputs: Vec<&ThreadContexts> = Vec::new();
        let mut by_thread = Vec::with_capacity(graph.contexts.len());
        for tc in &graph.contexts {
            let same = inputs.iter().zip(&asked_by).position(|(s, q)| {
                s.entry == tc.entry
                    && s.ctxs == tc.ctxs
                    && s.calls == tc.calls
                    && keys.same_view(s.thread, tc.thread)
                    && (share || q.agrees(oracle, tc.thread))
            });
            tracing::debug!(thread = tc.thread.0, shared = ?same, "active threads");
            if let Some(i) = same {
                by_thread.push(i);
                continue;
            }
            let asked = Asked {
                record: !share,
                ..Asked::default()
            };
            keys.thread = tc.thread;
            let mut a = ActiveThreads {
                program,
                roles,
                oracle,
                asked: &asked,
                tc,
                graph,
                keys: &mut keys,
                free: FxHashMap::default(),
                flag_locals: FxHashMap::default(),
                returns: FxHashMap::default(),
                exits: FxHashMap::default(),
                join_alls: FxHashMap::default(),
                live: FxHashMap::default(),
                rejoins: FxHashMap::default(),
            };
            let mut first = MhpFact::initial();
            if let Some(t) = graph.threads.get(tc.thread.0 as usize)
                && t.site.is_none()
                && let Some((argc, over, under)) = argc_constraint(program, t.entry)
            {
                first.constrain(t.entry, argc, over, under);
            }
            let init = dataflow::initial_facts(first);
            let sol = dataflow::solve(
                program,
                tc.clone(),
                &mut dataflow::Disjunctive(&mut a),
                init,
                VISIT_BUDGET,
            );
            sol.log_fact_counts("active threads");
            if !sol.complete {
                tracing::warn!(
                    thread = tc.thread.0,
                    visits = sol.visits,
                    "active-threads analysis ran out of its visit budget: every child of the \
                     thread is taken as possibly running everywhere in it"
                );
            }
            unique.push(sol);
            by_thread.push(unique.len() - 1);
            asked_by.push(asked);
            inputs.push(tc);
        }
        let mut children = vec![BitSet::new(); graph.threads.len()];
        for t in &graph.threads {
            for p in &t.parents {
                if let Some(c) = children.get_mut(p.0 as usize) {
                    c.insert(t.id);
                }
            }
        }
        MhpResult {
            solutions: unique,
            children,
            by_thread,
        }
    }

    /// The summary of the facts at a point.
    pub fn at(&self, p: Point) -> ActiveAt {
        let mut out = ActiveAt::default();
        let Some(sol) = self
            .by_thread
            .get(p.thread.0 as usize)
            .and_then(|i| self.solutions.get(*i))
        else {
            return out;
        };
        if !sol.complete {
            // Not a fixpoint: nothing the states say holds. At a point the thread reaches
            // (its states record reachability soundly only at a fixpoint, so every point),
            // any child may run, none is surely joined, any thread may have been joined.
            let all = self
                .children
                .get(p.thread.0 as usize)
                .cloned()
                .unwrap_or_default();
            return ActiveAt {
                may_created: all.clone(),
                may_active: all,
                may_join_any: true,
                ..ActiveAt::default()
            };
        }
        for (i, f) in sol
            .at(p.ctx, p.node)
            .into_iter()
            .flat_map(dataflow::facts_of)
            .enumerate()
        {
            let mut one = ActiveAt {
                may_created: f.may_created.clone(),
                may_active: f.may_active.clone(),
                joined: f.joined.clone(),
                may_joined: f.joined.clone(),
                may_join_any: f.joined_unknown,
                ..ActiveAt::default()
            };
            if f.certain {
                one.certain = true;
                one.certainly_active = f.must_active.clone();
                one.certainly_joined = f.created_joined.clone();
            }
            out.absorb(&one, i == 0);
        }
        out
    }

    /// The facts at the create statement of thread `t`, in its parent, summed over the
    /// parent's contexts of the statement's function (`None`: no single parent or not reached).
    pub fn at_creation(
        &self,
        program: &Program,
        graph: &ThreadGraph,
        t: ThreadId,
    ) -> Option<ActiveAt> {
        let th = graph.thread(t);
        let site = th.site?;
        let [parent] = th.parents.as_slice() else {
            return None;
        };
        let node = program
            .function(site.func)
            .body
            .as_ref()?
            .edges
            .get(site.edge.0 as usize)?
            .src;
        let tc = graph.contexts(*parent);
        let mut out = ActiveAt::default();
        let mut any = false;
        for c in tc.ids().filter(|c| tc.ctx(*c).func == site.func) {
            let a = self.at(Point {
                thread: *parent,
                ctx: c,
                node,
            });
            out.absorb(&a, !any);
            any = true;
        }
        any.then_some(out)
    }

    /// Children of `t` that may still run when `t` ends (returns from its entry function or
    /// calls a thread-exit function), `None` when unknown (no body); and the children some
    /// certain path to an end leaves surely running.
    fn outliving(
        &self,
        program: &Program,
        roles: &Roles,
        graph: &ThreadGraph,
        t: ThreadId,
    ) -> (Option<BitSet<ThreadId>>, BitSet<ThreadId>) {
        let mut certainly = BitSet::new();
        let may = self.ends(program, roles, graph, t, &mut certainly);
        if may.is_none() {
            certainly = BitSet::new();
        }
        (may, certainly)
    }

    fn ends(
        &self,
        program: &Program,
        roles: &Roles,
        graph: &ThreadGraph,
        t: ThreadId,
        certainly: &mut BitSet<ThreadId>,
    ) -> Option<BitSet<ThreadId>> {
        let tc = graph.contexts(t);
        let entry_func = tc.ctxs.get(tc.entry.0 as usize)?.func;
        let mut out = BitSet::new();
        for c in tc.ids() {
            let func = tc.ctx(c).func;
            let cfg = program.function(func).body.as_ref()?;
            let mut ends: Vec<NodeId> = cfg
                .edges
                .iter()
                .filter(|e| {
                    e.op.direct_callee()
                        .is_some_and(|g| matches!(roles.get(g), Some(Role::ThreadExit)))
                })
                .map(|e| e.src)
                .collect();
            if c == tc.entry && func == entry_func {
                ends.extend(
                    (0..cfg.nodes.len() as u32)
                        .map(NodeId)
                        .filter(|n| cfg.node(*n).succs.is_empty()),
                );
            }
            for node in ends {
                let a = self.at(Point {
                    thread: t,
                    ctx: c,
                    node,
                });
                out = out.union(&a.may_active);
                *certainly = certainly.union(&a.certainly_active);
            }
        }
        Some(out)
    }

    /// Per-thread facts about creation, for the parallelism tests.
    pub fn thread_facts(
        &self,
        program: &Program,
        roles: &Roles,
        graph: &ThreadGraph,
    ) -> Vec<ThreadFacts> {
        let creation: Vec<Option<ActiveAt>> = graph
            .threads
            .iter()
            .map(|t| self.at_creation(program, graph, t.id))
            .collect();
        let main_roots = main_roots(graph);
        graph
            .threads
            .iter()
            .map(|t| {
                let ancestry = graph.ancestry(t.id);
                let certainly_created = ancestry.as_ref().is_some_and(|chain| {
                    chain.iter().skip(1).all(|c| {
                        graph.thread(*c).exact_entry
                            && creation[c.0 as usize].as_ref().is_some_and(|a| a.certain)
                    })
                });
                let (outliving, certainly_outliving) = self.outliving(program, roles, graph, t.id);
                ThreadFacts {
                    creation: creation[t.id.0 as usize].clone(),
                    certainly_created,
                    ancestry,
                    unique: t.unique && !t.in_cycle,
                    outliving,
                    certainly_outliving,
                    interrupts_only: interrupts_only(graph, t.id),
                    main_roots: main_roots[t.id.0 as usize].clone(),
                    signal: t.signal,
                }
            })
            .collect()
    }
}

/// For every thread, the children of `main` it descends from (itself included when it is
/// one), through any creation path of the graph, several parents and cycles included.
fn main_roots(graph: &ThreadGraph) -> Vec<BitSet<ThreadId>> {
    use petgraph::visit::{Dfs, Walker};
    let g = &graph.graph;
    let mut roots: Vec<BitSet<ThreadId>> = vec![BitSet::new(); graph.threads.len()];
    let Some(main) = g.node_indices().find(|n| g[*n] == ThreadId::MAIN) else {
        return roots;
    };
    for child in g.neighbors(main) {
        for n in Dfs::new(g, child).iter(g) {
            if let Some(r) = roots.get_mut(g[n].0 as usize)
                && g[n] != ThreadId::MAIN
            {
                r.insert(g[child]);
            }
        }
    }
    roots
}

/// Whether thread `t` (facts `f`) may run at a point of `main` with facts `at`: some child of
/// `main` it descends from is possibly created there. Every thread descends from `main`, so
/// before `main` creates the first of them (across calls, whatever the shape of the creation
/// graph) nothing runs beside it (issue "Real programs", item 5). A signal handler runs in
/// parallel with `main` only in another thread: while `main` has created no thread but
/// handlers, a handler can only interrupt `main`, which does not resume before the handler
/// returns ([`interrupts_only`] says the same for a whole program).
fn may_run_beside_main(tf: &[ThreadFacts], at: &ActiveAt, f: &ThreadFacts) -> bool {
    if f.signal
        && !at
            .may_created
            .iter()
            .any(|c| tf.get(c.0 as usize).is_none_or(|x| !x.signal))
    {
        return false;
    }
    f.main_roots.is_empty() || f.main_roots.iter().any(|c| at.may_created.contains(&c))
}

/// What the parallelism tests need to know about a thread.
#[derive(Clone, Debug)]
pub struct ThreadFacts {
    /// The parent's facts at its create statement.
    pub creation: Option<ActiveAt>,
    /// Whether every create statement from `main` to the thread is certainly run.
    pub certainly_created: bool,
    /// The chain of threads from `main` to it, when it has a single chain of single parents.
    pub ancestry: Option<Vec<ThreadId>>,
    /// Created at most once and not on a creation cycle.
    pub unique: bool,
    /// Its children that may still run when it ends (`None`: unknown, any).
    pub outliving: Option<BitSet<ThreadId>>,
    /// Its children that some certain path to its end leaves surely running (created on the
    /// path, not possibly joined).
    pub certainly_outliving: BitSet<ThreadId>,
    /// A signal handler that only interrupts the process's one thread ([`interrupts_only`]).
    pub interrupts_only: bool,
    /// The children of `main` it descends from ([`main_roots`]); empty for `main`.
    pub main_roots: BitSet<ThreadId>,
    /// A signal handler.
    pub signal: bool,
}

/// Whether thread `other` has surely ended before an access of a thread with chain `chain`
/// (from `main`, `None` when not in the tree) and facts `at`: the accessing thread joined it,
/// or some thread of its chain was created after it had been joined (the parent's facts at
/// that creation say so). Joined threads are unique, so the one instance has ended.
fn ended_before(
    tf: &[ThreadFacts],
    at: &ActiveAt,
    chain: Option<&[ThreadId]>,
    other: ThreadId,
) -> bool {
    at.joined.contains(&other)
        || chain.is_some_and(|c| {
            c.iter().skip(1).any(|x| {
                tf[x.0 as usize]
                    .creation
                    .as_ref()
                    .is_some_and(|cr| cr.joined.contains(&other))
            })
        })
}

/// Whether thread `other` may have been joined before an access with facts `at` of a thread
/// with chain `chain` (the may-version of [`ended_before`]).
fn maybe_ended_before(
    tf: &[ThreadFacts],
    at: &ActiveAt,
    chain: Option<&[ThreadId]>,
    other: ThreadId,
) -> bool {
    at.may_join_any
        || at.may_joined.contains(&other)
        || chain.is_some_and(|c| {
            c.iter().skip(1).any(|x| {
                tf[x.0 as usize]
                    .creation
                    .as_ref()
                    .is_none_or(|cr| cr.may_join_any || cr.may_joined.contains(&other))
            })
        })
}

/// Whether the thread at the end of `chain` (a chain of threads from a child of the point's
/// thread down) may run at a point with facts `at`: it was not joined there, and the child is
/// active, or it was created and some thread of the chain may outlive its parent (joining a
/// thread does not stop the children it leaves running).
fn alive(tf: &[ThreadFacts], at: &ActiveAt, chain: &[ThreadId]) -> bool {
    let Some(child) = chain.first() else {
        return true;
    };
    if chain.last().is_some_and(|t| at.joined.contains(t)) {
        return false;
    }
    if at.may_active.contains(child) {
        return true;
    }
    at.may_created.contains(child)
        && chain.windows(2).any(|w| {
            tf[w[0].0 as usize]
                .outliving
                .as_ref()
                .is_none_or(|o| o.contains(&w[1]))
        })
}

/// Whether descendant `t` of thread `holder` may run at a point of `holder` with facts `at`
/// (`true` when `t` is not in the creation tree under `holder`).
pub fn alive_at(tf: &[ThreadFacts], at: &ActiveAt, holder: ThreadId, t: ThreadId) -> bool {
    let Some(chain) = &tf[t.0 as usize].ancestry else {
        return true;
    };
    match chain.iter().position(|x| *x == holder) {
        Some(i) if i + 1 < chain.len() => alive(tf, at, &chain[i + 1..]),
        _ => true,
    }
}

/// Whether the thread at the end of `chain` (from a child of the point's thread down) surely
/// can run at a point with facts `at`, on a certain path: the child is certainly active, or it
/// was certainly created and joined while a certain path of it left the next thread of the
/// chain running; and no thread of the chain below the child may have been joined.
fn certainly_alive(tf: &[ThreadFacts], at: &ActiveAt, chain: &[ThreadId]) -> bool {
    let Some(child) = chain.first() else {
        return true;
    };
    if chain[1..].iter().any(|t| at.may_joined.contains(t)) {
        return false;
    }
    if at.certainly_active.contains(child) {
        return true;
    }
    at.certainly_joined.contains(child)
        && chain
            .get(1)
            .is_some_and(|n| tf[child.0 as usize].certainly_outliving.contains(n))
}

/// Whether thread `t` is a signal handler of a process with no other thread than `main` and
/// signal handlers. Such a handler only ever runs by interrupting the process's one thread,
/// which does not resume before the handler returns, so none of its accesses is simultaneous
/// with another: no data race (C11 5.1.2.4 defines races between threads; the hazards of a
/// handler in a single-threaded program are those of async-signal safety, C11 7.14.1.1p5,
/// which racedar does not report). With a second thread the handler may run in it, in
/// parallel with the first, and races as a thread does.
pub fn interrupts_only(graph: &ThreadGraph, t: ThreadId) -> bool {
    graph.thread(t).signal
        && graph
            .threads
            .iter()
            .all(|u| u.signal || u.parents.is_empty())
}

/// Whether accesses of threads `ta` (with facts `a` at the access) and `tb` (`b`) may run in
/// parallel (see the module documentation).
pub fn may_parallel(
    tf: &[ThreadFacts],
    ta: ThreadId,
    a: &ActiveAt,
    tb: ThreadId,
    b: &ActiveAt,
) -> bool {
    let fa = &tf[ta.0 as usize];
    if ta == tb {
        return !fa.unique;
    }
    let fb = &tf[tb.0 as usize];
    if (ta == ThreadId::MAIN && !may_run_beside_main(tf, a, fb))
        || (tb == ThreadId::MAIN && !may_run_beside_main(tf, b, fa))
    {
        return false;
    }
    // One thread had ended (was joined) before the other's access, or before the creation of
    // a thread on its chain.
    if ended_before(tf, a, fa.ancestry.as_deref(), tb)
        || ended_before(tf, b, fb.ancestry.as_deref(), ta)
    {
        return false;
    }
    let (Some(ca), Some(cb)) = (&fa.ancestry, &fb.ancestry) else {
        return true;
    };
    let k = ca.iter().zip(cb).take_while(|(x, y)| x == y).count();
    if k == 0 {
        return true;
    }
    let lca = ca[k - 1];
    if !tf[lca.0 as usize].unique {
        return true;
    }
    if lca == tb {
        return alive(tf, b, &ca[k..]);
    }
    if lca == ta {
        return alive(tf, a, &cb[k..]);
    }
    let (b1, b2) = (ca[k], cb[k]);
    let (Some(at1), Some(at2)) = (&tf[b1.0 as usize].creation, &tf[b2.0 as usize].creation) else {
        return true;
    };
    alive(tf, at2, &ca[k..]) || alive(tf, at1, &cb[k..])
}

/// Whether accesses of `ta` (facts `a`) and `tb` (`b`) certainly can run in parallel: both on
/// certain paths of certainly created unique threads, unordered by the creation tree, neither
/// possibly joined before the other's access.
pub fn must_parallel(
    tf: &[ThreadFacts],
    ta: ThreadId,
    a: &ActiveAt,
    tb: ThreadId,
    b: &ActiveAt,
) -> bool {
    if ta == tb || !a.certain || !b.certain {
        return false;
    }
    let (fa, fb) = (&tf[ta.0 as usize], &tf[tb.0 as usize]);
    if !fa.certainly_created || !fb.certainly_created {
        return false;
    }
    let (Some(ca), Some(cb)) = (&fa.ancestry, &fb.ancestry) else {
        return false;
    };
    if ca.iter().chain(cb).any(|t| !tf[t.0 as usize].unique) {
        return false;
    }
    if maybe_ended_before(tf, a, Some(ca), tb) || maybe_ended_before(tf, b, Some(cb), ta) {
        return false;
    }
    let k = ca.iter().zip(cb).take_while(|(x, y)| x == y).count();
    if k == 0 {
        return false;
    }
    let lca = ca[k - 1];
    if lca == tb {
        return certainly_alive(tf, b, &ca[k..]);
    }
    if lca == ta {
        return certainly_alive(tf, a, &cb[k..]);
    }
    let (b1, b2) = (ca[k], cb[k]);
    let (Some(at1), Some(at2)) = (&tf[b1.0 as usize].creation, &tf[b2.0 as usize].creation) else {
        return false;
    };
    certainly_alive(tf, at2, &ca[k..]) || certainly_alive(tf, at1, &cb[k..])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn child(i: u32) -> ThreadId {
        ThreadId(i)
    }

    /// A fact in which child `c` runs, created through thread-id variable `k`.
    fn running(k: u32, c: u32) -> MhpFact {
        let mut f = MhpFact::initial();
        f.may_created.insert(child(c));
        f.may_active.insert(child(c));
        f.fresh.insert(child(c));
        f.ids.push((IdKey(k), child(c)));
        f
    }

    #[test]
    fn an_uncertain_fact_with_more_threads_covers_one_with_fewer_created_for_sure() {
        // Two uncertain paths of a `main` with optional create statements: one created child
        // 1 for sure, the other children 1 and 2 for sure. Nothing reads what an uncertain
        // path created for sure, so the second covers the first once settled (one fact, not
        // one per subset of the create statements).
        let mut a = MhpFact::initial();
        a.certain = false;
        a.may_created.insert(child(1));
        a.may_active.insert(child(1));
        a.must_active.insert(child(1));
        let mut b = a.clone();
        b.may_created.insert(child(2));
        b.may_active.insert(child(2));
        b.must_active.insert(child(2));
        assert!(!b.covers(&a), "the sure sets keep them apart unsettled");
        a.settle();
        b.settle();
        assert!(b.covers(&a) && !a.covers(&b));
        // A certain fact keeps what it created for sure.
        let mut c = running(0, 1);
        c.must_active.insert(child(1));
        c.settle();
        assert!(c.must_active.contains(&child(1)));
    }

    #[test]
    fn a_fact_waiting_to_be_certain_again_keeps_its_sure_sets_and_is_not_covered_by_a_lost_one() {
        // Inside a straight arm of a branch that meets again, the fact is not certain but
        // keeps what it created for sure, for when it is certain again at the meeting node.
        let mut arm = running(0, 1);
        arm.must_active.insert(child(1));
        arm.certain = false;
        arm.restore = Some((FuncId(0), NodeId(7)));
        arm.settle();
        assert!(arm.must_active.contains(&child(1)));
        // A fact that lost certainty for good does not stand for it.
        let mut lost = arm.clone();
        lost.restore = None;
        lost.settle();
        assert!(!lost.covers(&arm));
        // Folding the arms of two different branches forgets the restoration.
        let mut other = arm.clone();
        other.restore = Some((FuncId(0), NodeId(9)));
        let m = MhpFact::merge(&[&arm, &other]);
        assert!(!m.certain && m.restore.is_none());
        // Folding a certain fact with an arm's keeps certainty, and needs no restoration.
        let m = MhpFact::merge(&[&running(0, 1), &arm]);
        assert!(m.certain && m.restore.is_none());
    }

    #[test]
    fn a_fold_covers_the_facts_it_folded_once_widening() {
        // One path holds child 1 in `k0`, the other child 2: the fold keeps both as
        // alternatives of `k0`, which must still cover each side's plain id entry.
        let (a, b) = (running(0, 1), running(0, 2));
        let m = MhpFact::merge(&[&a, &b]);
        assert!(m.alt_ids.contains(&(IdKey(0), child(1))));
        assert!(m.covers_widened(&a) && m.covers_widened(&b));
        assert!(!a.covers_widened(&m));
    }

    #[test]
    fn a_fold_of_a_certain_path_covers_it_once_widening() {
        let mut a = running(0, 1);
        a.constrain(
            FuncId(0),
            LocalId(0),
            Interval::new(0, 0),
            Interval::new(0, 0),
        );
        let mut b = running(0, 1);
        b.certain = false;
        b.constrain(
            FuncId(0),
            LocalId(0),
            Interval::new(1, 5),
            Interval::new(1, 5),
        );
        let m = MhpFact::merge(&[&a, &b]);
        // The fold drops the certain path's claim: it does not cover it in the strict order
        // (a certain path stays apart while it can), but does in the widening order.
        assert!(!m.certain);
        assert!(!m.covers(&a) && m.covers_widened(&a));
        assert!(m.covers(&b));
        assert_eq!(
            m.allowed(FuncId(0), LocalId(0), Interval::new(-9, 9)).0,
            Interval::new(0, 5)
        );
    }

    #[test]
    fn widening_a_full_set_with_its_own_facts_again_changes_nothing() {
        use racedar_domains::Powerset;
        let facts: Vec<MhpFact> = (0..40)
            .map(|i| {
                let mut f = running(i % 3, 1 + i % 7);
                f.certain = i % 2 == 0;
                f.constrain(
                    FuncId(0),
                    LocalId(i % 5),
                    Interval::new(0, i as i128),
                    Interval::new(0, 0),
                );
                f
            })
            .collect();
        let all: Powerset<MhpFact> = facts.iter().cloned().collect();
        let mut w = all.clone();
        assert!(
            !w.widen(&all),
            "a set widened by its own facts must be stable"
        );
        let mut p: Powerset<MhpFact> = Powerset::bottom();
        let mut rounds = 0;
        while p.widen(&all) {
            rounds += 1;
            assert!(rounds < 10, "widening must stabilise");
        }
    }
}
