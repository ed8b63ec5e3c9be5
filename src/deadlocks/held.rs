//! The lock-order analysis: for each class of paths of a thread, the locks it surely holds and
//! the lock calls that took them, so that every blocking acquisition yields lock-order edges
//! `held → acquired` labelled with both acquisition sites (the traces of the lock graph,
//! `notes/deadlock.md` §2).
//!
//! It is a [`FactAnalysis`] on the shared engine, run per thread on the thread's function
//! contexts like the lockset analysis ([`crate::lockset`]), whose lock identities it shares
//! ([`LockId`] in the lockset's [`LockTable`]). It differs where deadlocks need it:
//!
//! - a fact holds only locks held on *every* path of its class (a must-lockset per class);
//!   merging facts keeps the locks all of them hold, with every site that took them;
//! - a lock call with several candidate locks forks one fact per candidate (at most
//!   [`MAX_TARGETS`], an array element at a variable index counts each element); a lock in an
//!   object standing for several instances is unknown, and unknown locks never take part in an
//!   edge;
//! - a trylock (or timedlock) forks a success and a failure fact; a test of its stored result
//!   keeps the consistent one (path sensitivity through the result, as DeadlockF's
//!   `-deadlock-retvals`): it blocks nobody, so it adds no edge, but a lock it took is held;
//! - a blocking lock whose stored result is tested is not held on the branch where it failed
//!   (`if (pthread_mutex_lock(&m) != 0) return -1;`), also when a function returns the
//!   result to its caller;
//! - relocking a held normal mutex blocks forever: the path ends there (the double lock is
//!   reported from the fact before it); a possibly recursive mutex ([`MutexTypes`]) counts its
//!   depth instead, up to [`MAX_DEPTH`];
//! - an unlock of an unknown lock releases the most recent unknown lock held, or, when none is,
//!   every lock (nothing is surely held any more);
//! - **lock parameters** are bound per path, as L2D2's formal→actual substitution
//!   (`notes/deadlock.md` §1): a parameter that reaches a lock call (directly, as `&p->f`, or
//!   through further wrappers) and is never written gets, on entry, the locks its argument
//!   designates in the caller (or the caller's own binding), so nested lock wrappers resolve
//!   their lock per call chain whatever the context depth;
//! - a path that enters a function through a call with several possible callees (a function
//!   pointer the backend resolves to more than one function) is marked: its acquisitions there
//!   give no edge (the callee may never run there);
//! - tests of lock-guard flags ([`super::flags`]) are remembered per path, so a lock taken
//!   under `if (flag)` and released under a later `if (flag)` is not left held on a path that
//!   took the two tests differently.

use super::flags::{Flag, flag_test};
use super::kinds::MutexTypes;
use crate::backend::{Backend, PointsTo};
use crate::context::{CallTarget, FnCtxId, ThreadContexts};
use crate::dataflow::{self, At, Callees, FactAnalysis};
use crate::ir::{Callee, Edge, EdgeId, Expr, ExprKind, FuncId, LocalId, Lval, Op, Program, Proj};
use crate::lockset::{LockId, LockKey, LockTable};
use crate::model::{LockKind, LockMode, Role, Roles};
use crate::threads::ThreadGraph;
use racedar_domains::{Merge, SmallSet};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// At most this many candidate locks are followed per lock call (more make the lock unknown).
pub const MAX_TARGETS: usize = 8;

/// Recursion depth of a recursive mutex tracked exactly; this value means "at least this".
pub const MAX_DEPTH: u8 = 3;

/// Lock-guard flag outcomes remembered per fact.
pub const MAX_FLAGS: usize = 4;

/// Node visits per thread before the analysis gives up (its results then support only
/// may-deadlocks).
pub const BUDGET: u64 = 2_000_000;

/// Node visits over all threads; threads beyond it are not analysed (the result is then
/// incomplete).
pub const TOTAL_BUDGET: u64 = 8_000_000;

/// A lock call: its function context and edge in the thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Site {
    /// Function context.
    pub ctx: FnCtxId,
    /// The call edge.
    pub edge: EdgeId,
}

/// A surely held lock and the call that took it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Entry {
    /// The lock (a known one: unknown locks are only counted).
    pub lock: LockId,
    /// Read or write.
    pub mode: LockMode,
    /// The lock call that took it.
    pub site: Site,
    /// How often it is held (recursive mutexes, read locks; [`MAX_DEPTH`]: at least that).
    pub depth: u8,
    /// The call had several candidate locks (this one is a guess among them, e.g. an array
    /// element at a variable index).
    pub multi: bool,
}

/// What a tested call result says about a lock call.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum TagKind {
    /// A blocking lock took the lock (unless its result says it failed).
    Acquired,
    /// This path is the one where a trylock succeeded.
    TryOk,
    /// This path is the one where a trylock failed.
    TryFailed,
}

/// A lock call whose result is stored in `local` of `func`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Tag {
    func: FuncId,
    local: LocalId,
    lock: LockId,
    site: Site,
    kind: TagKind,
}

/// The pseudo-local of a function's return value (tags of a returned lock result).
const RESULT: LocalId = LocalId(u32::MAX);

/// The locks surely held on one class of paths, and those possibly held (after a merge or an
/// unlock of an unknown lock).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct HeldFact {
    /// Surely held known locks; sorted. A lock may have several entries (several sites after a
    /// merge).
    held: SmallVec<[Entry; 2]>,
    /// How many unknown locks are surely held ([`MAX_DEPTH`]: at least that many).
    unknown: u8,
    /// Known locks possibly but not surely held (inert: no edge, no double lock).
    maybe: SmallSet<LockId>,
    tags: SmallVec<[Tag; 1]>,
    /// The locks the current function's lock parameters designate; sorted by parameter.
    binds: SmallVec<[Bind; 1]>,
    /// The path entered a function through a call with several possible callees (a function
    /// pointer the backend could not resolve to one function): what it does there may not
    /// happen at all.
    via_pointer: bool,
    /// Lock-guard flags tested on the path (since the thread last wrote them): their truth.
    flags: SmallVec<[(Flag, bool); 1]>,
}

/// A lock parameter bound to the locks its argument designated.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Bind {
    param: LocalId,
    locks: SmallVec<[LockId; 2]>,
}

impl HeldFact {
    /// The surely held known locks with the calls that took them.
    pub fn entries(&self) -> &[Entry] {
        &self.held
    }

    /// Known locks possibly but not surely held.
    pub fn maybe(&self) -> &SmallSet<LockId> {
        &self.maybe
    }

    /// How many unknown locks are surely held ([`MAX_DEPTH`]: at least that many).
    pub fn unknown(&self) -> u8 {
        self.unknown
    }

    /// Whether the path entered a callee of an ambiguous function-pointer call.
    pub fn via_pointer(&self) -> bool {
        self.via_pointer
    }

    /// Whether `l` is surely held.
    pub fn holds(&self, l: LockId) -> bool {
        self.held.iter().any(|e| e.lock == l)
    }

    fn insert(&mut self, e: Entry) {
        if let Err(i) = self.held.binary_search(&e) {
            self.held.insert(i, e);
        }
        self.maybe.remove(&e.lock);
    }

    /// Whether `l` is held, surely or possibly.
    fn knows(&self, l: LockId) -> bool {
        self.maybe.contains(&l) || self.holds(l)
    }

    fn set_tag(&mut self, t: Tag) {
        self.tags.retain(|x| (x.func, x.local) != (t.func, t.local));
        self.tags.push(t);
        self.tags.sort();
    }

    /// Drops the tags of a local that is overwritten.
    fn clear_key(&mut self, func: FuncId, lhs: Option<&Lval>) {
        if let Some(l) = lhs.and_then(crate::ir::visit::whole_local) {
            self.tags.retain(|t| (t.func, t.local) != (func, l));
        }
    }

    /// Forgets the flags a write of `lhs` may change.
    fn forget_flags(&mut self, program: &Program, lhs: &Lval) {
        if self.flags.is_empty() {
            return;
        }
        if let crate::ir::Host::Var(crate::ir::Var::Global(g)) = lhs.host {
            match super::flags::written_range(program, lhs) {
                Some((lo, hi)) => self
                    .flags
                    .retain(|((x, off), _)| *x != g || *off < lo || *off >= hi),
                None => self.flags.retain(|((x, _), _)| *x != g),
            }
        }
    }
}

impl Merge for HeldFact {
    fn merge(facts: &[&HeldFact]) -> HeldFact {
        let Some(first) = facts.first() else {
            return HeldFact::default();
        };
        let mut out = HeldFact {
            unknown: facts.iter().map(|f| f.unknown).min().unwrap_or(0),
            via_pointer: facts.iter().any(|f| f.via_pointer),
            ..HeldFact::default()
        };
        for f in facts {
            for e in &f.held {
                if facts.iter().all(|g| g.holds(e.lock)) {
                    if let Err(i) = out.held.binary_search(e) {
                        out.held.insert(i, *e);
                    }
                } else {
                    out.maybe.insert(e.lock);
                }
            }
            out.maybe = out.maybe.union(&f.maybe);
        }
        let sure: SmallVec<[LockId; 4]> = out.held.iter().map(|e| e.lock).collect();
        out.maybe.retain(|l| !sure.contains(l));
        out.flags = first
            .flags
            .iter()
            .filter(|x| facts.iter().all(|f| f.flags.contains(x)))
            .copied()
            .collect();
        // Bindings all facts agree on (the others fall back to the backend's values).
        out.binds = first
            .binds
            .iter()
            .filter(|b| facts.iter().all(|f| f.binds.contains(b)))
            .cloned()
            .collect();
        out
    }

    fn covers(&self, o: &HeldFact) -> bool {
        self == o
            || (self.tags.is_empty()
                && (self.via_pointer || !o.via_pointer)
                && self.unknown <= o.unknown
                && self.binds.iter().all(|b| o.binds.contains(b))
                && self.flags.iter().all(|x| o.flags.contains(x))
                && self.held.iter().all(|e| o.holds(e.lock))
                && o.maybe.iter().all(|l| self.knows(*l))
                && o.held.iter().all(|e| {
                    if self.holds(e.lock) {
                        self.held.binary_search(e).is_ok()
                    } else {
                        self.maybe.contains(&e.lock)
                    }
                }))
    }
}

/// The locks a lock call's argument designates.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Targets {
    /// One of these (sorted).
    Known(SmallVec<[LockId; 2]>),
    /// Unknown, or in an object standing for several instances.
    Unknown,
}

/// The locks `arg` may designate at edge `eid` of context `ctx` of a thread.
#[allow(clippy::too_many_arguments)]
pub fn resolve<'p, B: Backend<'p>>(
    program: &Program,
    backend: &B,
    graph: &ThreadGraph,
    tc: &ThreadContexts,
    ctx: FnCtxId,
    eid: EdgeId,
    arg: &Expr,
    table: &mut LockTable,
) -> Targets {
    let PointsTo::Known(addrs) = backend.value_ptr(&tc.context(ctx, eid), arg) else {
        return Targets::Unknown;
    };
    if addrs.is_empty() {
        return Targets::Unknown;
    }
    let stride = element_stride(program, arg);
    let mut out: SmallVec<[LockId; 2]> = SmallVec::new();
    for a in addrs {
        if !graph.single_instance(program, backend, &a.base) {
            return Targets::Unknown;
        }
        if a.exact {
            out.push(table.intern(LockKey::Addr(a.base, a.range.lo)));
            continue;
        }
        // An element of an array of locks at a variable index: each element in the range.
        let Some(s) = stride.filter(|s| *s > 0) else {
            return Targets::Unknown;
        };
        if a.range.hi == u64::MAX {
            return Targets::Unknown;
        }
        let mut off = a.range.lo;
        while off.saturating_add(s) <= a.range.hi {
            if out.len() >= MAX_TARGETS {
                return Targets::Unknown;
            }
            out.push(table.intern(LockKey::Addr(a.base, off)));
            off += s;
        }
    }
    out.sort();
    out.dedup();
    if out.is_empty() || out.len() > MAX_TARGETS {
        return Targets::Unknown;
    }
    Targets::Known(out)
}

/// For `&a[i]` whose element is the designated object, the element size.
fn element_stride(program: &Program, arg: &Expr) -> Option<u64> {
    let ExprKind::AddrOf(lv) = &crate::ir::visit::strip_casts(arg).kind else {
        return None;
    };
    let Some(Proj::Index(_)) = lv.proj.last() else {
        return None;
    };
    program.types.size_of(lv.ty)
}

/// Reads `cond == branch` as a test of a call result stored in `local`: `Some(true)` when it
/// means the call returned 0 (success), `Some(false)` when it means non-zero (failure).
fn test_outcome(cond: &Expr, branch: bool, local: LocalId) -> Option<bool> {
    let cond = crate::ir::visit::strip_casts(cond);
    if crate::ir::visit::local_of(cond) == Some(local) {
        return Some(!branch);
    }
    match &cond.kind {
        ExprKind::Unary(crate::ir::UnOp::LogNot, inner) => test_outcome(inner, !branch, local),
        ExprKind::Binary(op, a, b) => {
            let k = if crate::ir::visit::local_of(a) == Some(local) {
                crate::ir::visit::strip_casts(b).as_int()?
            } else if crate::ir::visit::local_of(b) == Some(local) {
                crate::ir::visit::strip_casts(a).as_int()?
            } else {
                return None;
            };
            // `r == k` holds: r is k. `r == k` fails: r is not k.
            let equal = match op {
                crate::ir::BinOp::Eq => branch,
                crate::ir::BinOp::Ne => !branch,
                _ => return None,
            };
            match (k == 0, equal) {
                (true, eq) => Some(eq),
                (false, true) => Some(false),
                (false, false) => None,
            }
        }
        _ => None,
    }
}

/// The per-thread analysis.
struct LockOrder<'a, 'p, B: Backend<'p>> {
    program: &'p Program,
    roles: &'a Roles,
    backend: &'a B,
    graph: &'a ThreadGraph,
    tc: &'a ThreadContexts,
    table: &'a mut LockTable,
    types: &'a MutexTypes,
    params: &'a LockParams,
    /// The lock-guard flags of the program.
    guards: &'a FxHashSet<Flag>,
    /// Flag tests of branch edges, by function and edge.
    tests: FxHashMap<(FuncId, EdgeId), Option<(Flag, bool)>>,
    /// Resolved arguments, by call and argument position (the backend's answer).
    targets: FxHashMap<(Site, usize), Targets>,
    /// The blocking lock calls reached, with the lock argument's position and the mode.
    acquisitions: FxHashMap<Site, (usize, LockMode)>,
}

impl<'p, B: Backend<'p>> LockOrder<'_, 'p, B> {
    /// The backend's locks for argument `pos` (`arg`) of the call at `site`.
    fn targets(&mut self, site: Site, pos: usize, arg: &Expr) -> Targets {
        if let Some(t) = self.targets.get(&(site, pos)) {
            return t.clone();
        }
        let t = resolve(
            self.program,
            self.backend,
            self.graph,
            self.tc,
            site.ctx,
            site.edge,
            arg,
            self.table,
        );
        self.targets.insert((site, pos), t.clone());
        t
    }

    /// The locks argument `pos` (`arg`) of the call at `site` designates on the paths of
    /// `fact`: through a bound lock parameter when it is one, else the backend's answer.
    fn targets_in(&mut self, fact: &HeldFact, site: Site, pos: usize, arg: &Expr) -> Targets {
        if let Some((p, off)) = param_path(self.program, arg)
            && let Some(b) = fact.binds.iter().find(|b| b.param == p)
        {
            let mut out: SmallVec<[LockId; 2]> = SmallVec::new();
            for &l in &b.locks {
                match self.table.key(l) {
                    LockKey::Addr(base, o) => {
                        out.push(
                            self.table
                                .intern(LockKey::Addr(base, o.saturating_add(off))),
                        );
                    }
                    _ => return Targets::Unknown,
                }
            }
            out.sort();
            out.dedup();
            return Targets::Known(out);
        }
        self.targets(site, pos, arg)
    }

    /// The fact after taking `l` (`None`: the path cannot go on — a blocking relock of a held
    /// normal mutex waits forever, a trylock of one fails).
    fn acquire(
        &self,
        fact: &HeldFact,
        l: LockId,
        (mode, multi): (LockMode, bool),
        site: Site,
    ) -> Option<HeldFact> {
        let mut f = fact.clone();
        if l == LockId::UNKNOWN {
            f.unknown = (f.unknown + 1).min(MAX_DEPTH);
            return Some(f);
        }
        let held: SmallVec<[usize; 2]> =
            (0..f.held.len()).filter(|&i| f.held[i].lock == l).collect();
        if held.is_empty() {
            // Paths where it was possibly held either wait forever or did not hold it.
            f.insert(Entry {
                lock: l,
                mode,
                site,
                depth: 1,
                multi,
            });
            return Some(f);
        }
        let conflict =
            mode == LockMode::Write || held.iter().any(|&i| f.held[i].mode == LockMode::Write);
        if conflict && !self.types.may_be_recursive(self.table, l) {
            return None;
        }
        for i in held {
            f.held[i].depth = (f.held[i].depth + 1).min(MAX_DEPTH);
        }
        f.held.sort();
        f.held.dedup();
        Some(f)
    }

    /// The facts after releasing `l` once.
    fn release(fact: &HeldFact, l: LockId, out: &mut Vec<HeldFact>) {
        let mut f = fact.clone();
        f.maybe.remove(&l);
        if !f.holds(l) {
            out.push(f);
            return;
        }
        let before = f.clone();
        let mut at_least = false;
        f.held.retain(|e| e.lock != l || e.depth > 1);
        for e in f.held.iter_mut().filter(|e| e.lock == l) {
            if e.depth == MAX_DEPTH {
                at_least = true;
            }
            e.depth -= 1;
        }
        f.held.sort();
        f.held.dedup();
        if at_least {
            // "At least MAX_DEPTH" less one: still at least MAX_DEPTH, or exactly one less.
            let mut g = before;
            g.held.retain(|e| e.lock != l || e.depth == MAX_DEPTH);
            out.push(g);
        }
        out.push(f);
    }

    fn transfer_lock(
        &mut self,
        at: At<'_>,
        args: &[Expr],
        dest: Option<&Lval>,
        (lock, mode, kind): (usize, LockMode, LockKind),
        fact: &HeldFact,
        out: &mut Vec<HeldFact>,
    ) {
        let func = self.tc.ctx(at.ctx).func;
        let site = Site {
            ctx: at.ctx,
            edge: at.edge,
        };
        let Some(arg) = args.get(lock) else {
            out.push(fact.clone());
            return;
        };
        let key = dest.and_then(crate::ir::visit::whole_local);
        let mut base = fact.clone();
        base.clear_key(func, dest);
        if kind == LockKind::Blocking {
            self.acquisitions.insert(site, (lock, mode));
        }
        let locks: SmallVec<[LockId; 2]> = match self.targets_in(fact, site, lock, arg) {
            Targets::Known(ls) => ls,
            Targets::Unknown => SmallVec::from_slice(&[LockId::UNKNOWN]),
        };
        for &l in &locks {
            let Some(mut f) = self.acquire(&base, l, (mode, locks.len() > 1), site) else {
                continue;
            };
            if let Some(local) = key {
                f.set_tag(Tag {
                    func,
                    local,
                    lock: l,
                    site,
                    kind: match kind {
                        LockKind::Blocking => TagKind::Acquired,
                        LockKind::Try => TagKind::TryOk,
                    },
                });
            }
            out.push(f);
        }
        if kind == LockKind::Try {
            let mut f = base;
            if let Some(local) = key {
                f.set_tag(Tag {
                    func,
                    local,
                    lock: locks[0],
                    site,
                    kind: TagKind::TryFailed,
                });
            }
            out.push(f);
        }
    }

    fn transfer_unlock(
        &mut self,
        at: At<'_>,
        (pos, arg): (usize, Option<&Expr>),
        fact: &HeldFact,
        out: &mut Vec<HeldFact>,
    ) {
        let site = Site {
            ctx: at.ctx,
            edge: at.edge,
        };
        let Some(arg) = arg else {
            out.push(fact.clone());
            return;
        };
        match self.targets_in(fact, site, pos, arg) {
            Targets::Known(ls) => {
                for l in ls {
                    Self::release(fact, l, out);
                }
            }
            Targets::Unknown => {
                let mut f = fact.clone();
                if f.unknown > 0 {
                    // An unknown lock is held: assume this releases it (at the maximum count,
                    // at least as many stay held).
                    if f.unknown < MAX_DEPTH {
                        f.unknown -= 1;
                    }
                } else {
                    // It may release any of them.
                    for e in std::mem::take(&mut f.held) {
                        f.maybe.insert(e.lock);
                    }
                }
                out.push(f);
            }
        }
    }
}

impl<'p, B: Backend<'p>> FactAnalysis for LockOrder<'_, 'p, B> {
    type Fact = HeldFact;

    fn callees(&mut self, at: At<'_>, _edge: &Edge) -> Callees {
        dataflow::recorded_callees(self.tc, at.ctx, at.edge)
    }

    fn transfer(&mut self, at: At<'_>, edge: &Edge, fact: &HeldFact, out: &mut Vec<HeldFact>) {
        let func = self.tc.ctx(at.ctx).func;
        match &edge.op {
            Op::Assume { cond, branch } => {
                if !self.backend.feasible(&self.tc.context(at.ctx, at.edge)) {
                    return;
                }
                let mut f = fact.clone();
                let mut i = 0;
                while i < f.tags.len() {
                    let t = f.tags[i];
                    let outcome = if t.func == func {
                        test_outcome(cond, *branch, t.local)
                    } else {
                        None
                    };
                    let Some(success) = outcome else {
                        i += 1;
                        continue;
                    };
                    match t.kind {
                        TagKind::Acquired => {
                            if !success {
                                if t.lock == LockId::UNKNOWN {
                                    if f.unknown > 0 && f.unknown < MAX_DEPTH {
                                        f.unknown -= 1;
                                    }
                                } else {
                                    f.held.retain(|e| (e.lock, e.site) != (t.lock, t.site));
                                }
                            }
                        }
                        TagKind::TryOk if !success => return,
                        TagKind::TryFailed if success => return,
                        TagKind::TryOk | TagKind::TryFailed => {}
                    }
                    f.tags.remove(i);
                }
                let program = self.program;
                let test = *self
                    .tests
                    .entry((func, at.edge))
                    .or_insert_with(|| flag_test(program, cond, *branch));
                if let Some((flag, truth)) = test.filter(|(g, _)| self.guards.contains(g)) {
                    match f.flags.iter().find(|(g, _)| *g == flag) {
                        Some((_, t)) if *t != truth => return,
                        Some(_) => {}
                        None if f.flags.len() < MAX_FLAGS => {
                            f.flags.push((flag, truth));
                            f.flags.sort();
                        }
                        None => {}
                    }
                }
                out.push(f);
            }
            Op::Call {
                callee: Callee::Direct(g),
                args,
                dest,
            } => match self.roles.get(*g) {
                Some(Role::Lock {
                    lock, mode, kind, ..
                }) => {
                    let (lock, mode, kind) = (*lock, *mode, *kind);
                    self.transfer_lock(at, args, dest.as_ref(), (lock, mode, kind), fact, out);
                }
                Some(Role::Unlock { lock }) => {
                    let lock = *lock;
                    let mut f = fact.clone();
                    f.clear_key(func, dest.as_ref());
                    if let Some(d) = dest {
                        f.forget_flags(self.program, d);
                    }
                    self.transfer_unlock(at, (lock, args.get(lock)), &f, out);
                }
                Some(r) if r.ends_path() => {}
                _ => {
                    let mut f = fact.clone();
                    f.clear_key(func, dest.as_ref());
                    if let Some(d) = dest {
                        f.forget_flags(self.program, d);
                    }
                    out.push(f);
                }
            },
            Op::Call { dest, .. } => {
                let mut f = fact.clone();
                f.clear_key(func, dest.as_ref());
                if let Some(d) = dest {
                    f.forget_flags(self.program, d);
                }
                out.push(f);
            }
            Op::Assign { lhs, .. } => {
                let mut f = fact.clone();
                f.clear_key(func, Some(lhs));
                f.forget_flags(self.program, lhs);
                out.push(f);
            }
            Op::Asm { outputs, .. } => {
                let mut f = fact.clone();
                for o in outputs {
                    f.clear_key(func, Some(o));
                }
                out.push(f);
            }
            Op::Return(Some(e)) => {
                // A lock call's result returned: the caller's result local says it too.
                let mut f = fact.clone();
                if let Some(l) = crate::ir::visit::local_of(e) {
                    let ret: SmallVec<[Tag; 1]> = f
                        .tags
                        .iter()
                        .filter(|t| t.func == func && t.local == l)
                        .map(|t| Tag {
                            local: RESULT,
                            ..*t
                        })
                        .collect();
                    for t in ret {
                        f.set_tag(t);
                    }
                }
                out.push(f);
            }
            _ => out.push(fact.clone()),
        }
    }

    fn call_entry(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        fact: &HeldFact,
    ) -> HeldFact {
        let mut f = fact.clone();
        f.binds.clear();
        if self.tc.callees(at.ctx, at.edge).len() > 1 {
            f.via_pointer = true;
        }
        let (Some(ps), Op::Call { args, .. }) = (self.params.get(&target.func), &edge.op) else {
            return f;
        };
        if matches!(target.kind, crate::context::CallKind::Callback(_)) {
            // A library function passes the callback's arguments, not the call's.
            return f;
        }
        let site = Site {
            ctx: at.ctx,
            edge: at.edge,
        };
        for &(i, p) in ps {
            let Some(a) = args.get(i) else {
                continue;
            };
            if let Targets::Known(locks) = self.targets_in(fact, site, i, a) {
                f.binds.push(Bind { param: p, locks });
            }
        }
        f.binds.sort();
        f
    }

    fn call_exit(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        pre: &HeldFact,
        exit: &HeldFact,
    ) -> HeldFact {
        let caller = self.tc.ctx(at.ctx).func;
        let mut f = exit.clone();
        f.binds = pre.binds.clone();
        f.via_pointer = pre.via_pointer;
        // The callee's locals are gone; a lock result it returned goes to the call's result.
        let returned: SmallVec<[Tag; 1]> = f
            .tags
            .iter()
            .filter(|t| t.func == target.func && t.local == RESULT)
            .copied()
            .collect();
        f.tags.retain(|t| t.func != target.func);
        if target.func == caller {
            // A recursive call: the caller's own tags are those before the call.
            f.tags
                .extend(pre.tags.iter().filter(|t| t.func == caller).copied());
            f.tags.sort();
            f.tags.dedup();
        }
        if let Op::Call { dest, .. } = &edge.op {
            f.clear_key(caller, dest.as_ref());
            if let Some(d) = dest {
                f.forget_flags(self.program, d);
            }
            if let Some(d) = dest.as_ref().and_then(crate::ir::visit::whole_local) {
                for t in returned {
                    f.set_tag(Tag {
                        func: caller,
                        local: d,
                        ..t
                    });
                }
            }
        }
        f
    }
}

/// A blocking lock call reached on one class of paths: the facts before it and the locks it
/// may take there.
#[derive(Clone, Debug)]
pub struct Acquisition {
    /// The call.
    pub site: Site,
    /// The mode it takes the lock in.
    pub mode: LockMode,
    /// The candidate locks (one of them is taken).
    pub locks: SmallVec<[LockId; 2]>,
    /// The locks held before it.
    pub fact: HeldFact,
}

/// The lock-order analysis of every thread.
pub struct LockOrderResult {
    /// Per thread (indexed like [`ThreadGraph::threads`]), the blocking acquisitions of known
    /// locks, per call in call order, per class of paths.
    pub acquisitions: Vec<Vec<Acquisition>>,
    /// Per thread, whether the analysis reached its fixpoint within [`BUDGET`] (and was run
    /// within [`TOTAL_BUDGET`]).
    pub complete: Vec<bool>,
}

/// Per function, its lock parameters: (position, local), see the module documentation.
pub type LockParams = FxHashMap<FuncId, SmallVec<[(usize, LocalId); 2]>>;

impl LockOrderResult {
    /// Runs the analysis on every thread for which `needed` holds (the others get no
    /// acquisition), interning lock identities in `table`.
    pub fn compute<'p, B: Backend<'p>>(
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
        (table, types): (&mut LockTable, &MutexTypes),
        needed: &dyn Fn(crate::context::ThreadId) -> bool,
    ) -> LockOrderResult {
        let params = lock_params(program, roles);
        let guards = super::flags::guard_flags(program, roles);
        let mut acquisitions = Vec::with_capacity(graph.contexts.len());
        let mut complete = Vec::with_capacity(graph.contexts.len());
        let mut spent = 0u64;
        let share = backend.thread_independent();
        // Threads solved so far, by index (for sharing).
        let mut solved: Vec<usize> = Vec::new();
        for (i, tc) in graph.contexts.iter().enumerate() {
            if !needed(tc.thread) {
                acquisitions.push(Vec::new());
                complete.push(true);
                continue;
            }
            // Threads with the same function contexts get the same answers: one solution.
            if share
                && let Some(&j) = solved.iter().find(|&&j| {
                    let o = &graph.contexts[j];
                    o.entry == tc.entry && o.ctxs == tc.ctxs && o.calls == tc.calls
                })
            {
                let same: Vec<Acquisition> = acquisitions[j].clone();
                acquisitions.push(same);
                complete.push(complete[j]);
                continue;
            }
            solved.push(i);
            let mut a = LockOrder {
                program,
                roles,
                backend,
                graph,
                tc,
                table: &mut *table,
                types,
                params: &params,
                guards: &guards,
                tests: FxHashMap::default(),
                targets: FxHashMap::default(),
                acquisitions: FxHashMap::default(),
            };
            let left = TOTAL_BUDGET.saturating_sub(spent);
            if left == 0 {
                acquisitions.push(Vec::new());
                complete.push(false);
                continue;
            }
            let init = dataflow::initial_facts(HeldFact::default());
            let sol = dataflow::solve(
                program,
                tc.clone(),
                &mut dataflow::Disjunctive(&mut a),
                init,
                BUDGET.min(left),
            );
            spent += sol.visits;
            let mut sites: Vec<(Site, (usize, LockMode))> =
                a.acquisitions.iter().map(|(s, x)| (*s, *x)).collect();
            sites.sort();
            let mut out = Vec::new();
            for (site, (pos, mode)) in sites {
                let func = tc.ctx(site.ctx).func;
                let Some(edge) = program
                    .function(func)
                    .body
                    .as_ref()
                    .and_then(|c| c.edges.get(site.edge.0 as usize))
                else {
                    continue;
                };
                let (Op::Call { args, .. }, Some(state)) = (&edge.op, sol.at(site.ctx, edge.src))
                else {
                    continue;
                };
                let Some(arg) = args.get(pos) else {
                    continue;
                };
                for f in dataflow::facts_of(state) {
                    if let Targets::Known(locks) = a.targets_in(f, site, pos, arg) {
                        out.push(Acquisition {
                            site,
                            mode,
                            locks,
                            fact: f.clone(),
                        });
                    }
                }
            }
            acquisitions.push(out);
            complete.push(sol.complete);
        }
        LockOrderResult {
            acquisitions,
            complete,
        }
    }
}

/// `p` or `&p->f.g` with `p` a local: the local and the byte offset the fields add.
fn param_path(program: &Program, arg: &Expr) -> Option<(LocalId, u64)> {
    let e = crate::ir::visit::strip_casts(arg);
    if let Some(l) = crate::ir::visit::local_of(e) {
        return Some((l, 0));
    }
    let ExprKind::AddrOf(lv) = &e.kind else {
        return None;
    };
    let crate::ir::Host::Deref(inner) = &lv.host else {
        return None;
    };
    let l = crate::ir::visit::local_of(inner)?;
    let mut off = 0u64;
    for p in &lv.proj {
        let Proj::Field { comp, index } = p else {
            return None;
        };
        let f = program.types.comp(*comp).fields.get(*index as usize)?;
        if f.bit_field.is_some() {
            return None;
        }
        off = off.checked_add(f.offset)?;
    }
    Some((l, off))
}

/// The lock parameters of every function: parameters never written and whose address is never
/// taken that reach a lock or unlock call's lock argument (as `p` or `&p->f`), directly or as the
/// argument of a lock parameter of a called function.
pub fn lock_params(program: &Program, roles: &Roles) -> LockParams {
    // Stable parameters per function.
    let mut stable: FxHashMap<FuncId, SmallVec<[(usize, LocalId); 2]>> = FxHashMap::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let Some(cfg) = &f.body else { continue };
        if f.params.is_empty() {
            continue;
        }
        let mut written: FxHashSet<LocalId> = FxHashSet::default();
        crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
            written.insert(l);
        });
        for e in &cfg.edges {
            match &e.op {
                Op::Assign { lhs, .. }
                | Op::Call {
                    dest: Some(lhs), ..
                } => {
                    if let crate::ir::Host::Var(crate::ir::Var::Local(l)) = lhs.host {
                        written.insert(l);
                    }
                }
                Op::Asm { outputs, .. } => {
                    for o in outputs {
                        if let crate::ir::Host::Var(crate::ir::Var::Local(l)) = o.host {
                            written.insert(l);
                        }
                    }
                }
                _ => {}
            }
        }
        let ps: SmallVec<[(usize, LocalId); 2]> = f
            .params
            .iter()
            .enumerate()
            .filter(|(_, p)| !written.contains(p))
            .map(|(i, p)| (i, *p))
            .collect();
        if !ps.is_empty() {
            stable.insert(FuncId(fi as u32), ps);
        }
    }
    let mut out: LockParams = FxHashMap::default();
    // Rounds until nothing changes (each adds a parameter or stops).
    loop {
        let mut changed = false;
        for (fi, f) in program.functions.iter().enumerate() {
            let func = FuncId(fi as u32);
            let (Some(cfg), Some(ps)) = (&f.body, stable.get(&func)) else {
                continue;
            };
            for e in &cfg.edges {
                let Op::Call {
                    callee: Callee::Direct(g),
                    args,
                    ..
                } = &e.op
                else {
                    continue;
                };
                let used: SmallVec<[usize; 2]> = match roles.get(*g) {
                    Some(Role::Lock { lock, .. }) | Some(Role::Unlock { lock }) => {
                        SmallVec::from_slice(&[*lock])
                    }
                    None => out
                        .get(g)
                        .map(|v| v.iter().map(|(i, _)| *i).collect())
                        .unwrap_or_default(),
                    Some(_) => SmallVec::new(),
                };
                for i in used {
                    let Some((l, _)) = args.get(i).and_then(|a| param_path(program, a)) else {
                        continue;
                    };
                    let Some(&(pi, p)) = ps.iter().find(|(_, p)| *p == l) else {
                        continue;
                    };
                    let mine = out.entry(func).or_default();
                    if !mine.contains(&(pi, p)) {
                        mine.push((pi, p));
                        mine.sort();
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return out;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::types::{IntKind, TypeTable};
    use crate::ir::{BinOp, DataModel, Host, UnOp, Var};

    fn local(types: &mut TypeTable, l: u32) -> Expr {
        let int = types.int(IntKind::Int);
        Expr {
            kind: ExprKind::Load(Box::new(Lval {
                host: Host::Var(Var::Local(LocalId(l))),
                proj: Vec::new(),
                ty: int,
            })),
            ty: int,
        }
    }

    fn int(types: &mut TypeTable, v: i128) -> Expr {
        let int = types.int(IntKind::Int);
        Expr {
            kind: ExprKind::Int(v),
            ty: int,
        }
    }

    #[test]
    fn result_tests_are_read() {
        let mut t = TypeTable::new(DataModel::Lp64);
        let r = local(&mut t, 3);
        let int_ty = r.ty;
        // `if (r)`: the true branch is the failure.
        assert_eq!(test_outcome(&r, true, LocalId(3)), Some(false));
        assert_eq!(test_outcome(&r, false, LocalId(3)), Some(true));
        assert_eq!(test_outcome(&r, true, LocalId(4)), None);
        // `!(r != 0)`
        let ne = Expr {
            kind: ExprKind::Binary(BinOp::Ne, Box::new(r.clone()), Box::new(int(&mut t, 0))),
            ty: int_ty,
        };
        let not = Expr {
            kind: ExprKind::Unary(UnOp::LogNot, Box::new(ne.clone())),
            ty: int_ty,
        };
        assert_eq!(test_outcome(&ne, true, LocalId(3)), Some(false));
        assert_eq!(test_outcome(&not, true, LocalId(3)), Some(true));
        // `r == EBUSY` (16): true means failure, false says nothing.
        let busy = Expr {
            kind: ExprKind::Binary(BinOp::Eq, Box::new(r), Box::new(int(&mut t, 16))),
            ty: int_ty,
        };
        assert_eq!(test_outcome(&busy, true, LocalId(3)), Some(false));
        assert_eq!(test_outcome(&busy, false, LocalId(3)), None);
    }

    #[test]
    fn merging_keeps_locks_every_fact_holds() {
        let site = |e: u32| Site {
            ctx: FnCtxId(0),
            edge: EdgeId(e),
        };
        let entry = |l: u32, e: u32| Entry {
            lock: LockId(l),
            mode: LockMode::Write,
            site: site(e),
            depth: 1,
            multi: false,
        };
        let mut a = HeldFact::default();
        a.insert(entry(5, 1));
        a.insert(entry(6, 2));
        let mut b = HeldFact::default();
        b.insert(entry(5, 3));
        let m = HeldFact::merge(&[&a, &b]);
        assert_eq!(m.entries(), &[entry(5, 1), entry(5, 3)]);
        assert!(m.covers(&a) && m.covers(&b));
        assert!(!a.covers(&m));
    }
}
