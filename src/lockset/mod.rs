//! Lockset analysis (seed 001 §6.1): which locks are held at every context, as must-locksets
//! (held on every path) and may-locksets (held on some path).
//!
//! Each thread starts with no lock. The analysis is an [`FactAnalysis`] of the shared engine: a fact
//! is the lockset of one class of paths, carrying `must` ⊆ `may` so that merged facts stay
//! sound. Lock operations take their lock's address from the backend (`value_ptr`); several
//! candidates fork the fact (at most [`MAX_LOCK_CANDIDATES`], as RacerF), an unknown address adds
//! an unknown lock to `may` only, an unknown unlock forks once per held lock.
//!
//! - read/write locks keep their mode; two read-mode holders do not exclude each other;
//! - a trylock (or timedlock) is *pending* until a branch tests its result stored in a local:
//!   held on the branch where it is 0, dropped on the other; an untested one is only in `may`;
//! - atomic sections (`__VERIFIER_atomic_begin`/`_end`, calls of `__VERIFIER_atomic_*`
//!   functions) hold one global write lock;
//! - `pthread_once(&c, f)` runs `f` holding the once-lock of `c` in write mode, and the caller
//!   holds it in read mode afterwards, so the routine's accesses are ordered before the accesses
//!   that follow any `pthread_once(&c, ...)`;
//! - a barrier wait adds the barrier's pseudo-lock in read mode (it excludes nothing):
//!   [`LocksetResult::barrier_orders`] orders what a participant does before its wait before
//!   what another does after its own, when the barrier's participants are unique threads that
//!   each wait once and are no more than its count (all must arrive for any to pass);
//! - a **flag** (a global whose only stores set one constant, different from its initial value,
//!   so that once set it stays set) orders what its only setter (a unique thread) does before
//!   setting it before what another thread does after a branch that needs it set
//!   ([`LocksetResult::flag_orders`]; sequential consistency, as SV-COMP assumes);
//! - a **thread-alive counter** (a global workers add to when they start and subtract from
//!   when they end, under one mutex) orders what a worker does before subtracting before what
//!   its waiter does after seeing it zero, when the waiter knows every worker had started (or
//!   the waiter adds for each worker it creates and the workers only subtract)
//!   ([`crate::counters`], [`LocksetResult::counter_orders`]; sequential consistency);
//! - a condition wait releases and re-takes its mutex (the lockset is unchanged); semaphores
//!   count in `may` only (they order threads but do not exclude them), except **binary
//!   semaphores**: a semaphore whose every `sem_init` sets the count to exactly 1 and whose
//!   every `sem_post` happens while the posting thread holds it (a `sem_wait` of its own on
//!   every path, no post in between) never counts above 1, so at most one thread is between a
//!   wait and its post: a wait takes it like a mutex (a `sem_trywait` like a trylock). The
//!   second condition is checked on the locksets computed under the assumption, and the
//!   analysis is repeated without the semaphores that fail it.

pub mod paths;

use crate::backend::{Address, Backend, Base, PointsTo};
use crate::context::{CallKind, CallTarget, FnCtxId, ThreadContexts, ThreadId};
use crate::dataflow::{self, At, Callees, FactAnalysis, Solution};
use crate::guards::{self, Guards};
use crate::ir::Proj;
use crate::ir::types::CompId;
use crate::ir::{
    Callee, Edge, EdgeId, Expr, ExprKind, FuncId, GlobalId, Host, LocalId, Lval, NodeId, Op,
    Program, Var,
};
use crate::model::{LockKind, LockMode, Role, Roles};
use crate::semaphores::{init_candidates, sem_calls};
use crate::threads::ThreadGraph;
use racedar_domains::Merge;
use racedar_domains::{BitSet, SmallSet};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// At most this many lock candidates are followed per lock operation.
pub const MAX_LOCK_CANDIDATES: usize = 3;

/// Interned lock identity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockId(pub u32);

impl LockId {
    /// A lock whose address is unknown (only ever in may-locksets).
    pub const UNKNOWN: LockId = LockId(0);
    /// The global lock of atomic sections.
    pub const ATOMIC: LockId = LockId(1);
}

/// What a lock is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LockKey {
    /// Unknown address.
    Unknown,
    /// The atomic-section lock.
    Atomic,
    /// A lock object (base, byte offset).
    Addr(Base, u64),
    /// A lock named by its access path from a global ([`paths::LockPath`], an index into
    /// [`LockTable::paths`]), when its address names no single object.
    Path(u32),
    /// The once-lock of a once-control object.
    Once(Base, u64),
    /// "Has passed the barrier" (held in read mode after `pthread_barrier_wait`, so it never
    /// excludes anything; see [`LocksetResult::barrier_orders`]).
    Barrier(Base, u64),
    /// "Has passed a wait on the handshake semaphore" ([`crate::semaphores`]; read mode, on
    /// every path).
    SemPassed(Base, u64),
    /// "May have posted the handshake semaphore" ([`crate::semaphores`]; read mode, on some
    /// path).
    SemPosted(Base, u64),
    /// "Has set the flag" (a global only ever set to one value; read mode, see
    /// [`LocksetResult::flag_orders`]).
    FlagSet(GlobalId),
    /// "Has seen the flag set" (a branch that needs the flag's set value; read mode).
    FlagSeen(GlobalId),
    /// "Has set the flag on every path" (kept only when the program has counters,
    /// [`crate::counters`]; read mode).
    FlagDone(GlobalId),
    /// "Has added to the counter" ([`crate::counters`]; read mode).
    CountInc(GlobalId),
    /// "Has subtracted from the counter" (read mode).
    CountDec(GlobalId),
    /// "Has seen the counter equal to the number of threads created" (a full-count test,
    /// [`crate::counters::full_tests`]; read mode).
    CountFull(GlobalId),
    /// "Has seen the counter zero after a full count" (read mode).
    CountZeroFull(GlobalId),
    /// "Has seen the counter zero after adding to it once per thread created" (an outer zero
    /// test, [`crate::counters::outer_tests`]; read mode).
    CountZeroOuter(GlobalId),
    /// "Has seen the counter (first) zero after setting the flag (second)" (read mode).
    CountZeroFlag(GlobalId, GlobalId),
    /// "Has taken a branch that needs the flag (first) unset after adding to the counter
    /// (second)" (read mode).
    GateOpen(GlobalId, GlobalId),
}

impl LockKey {
    /// Whether the key is a pseudo-lock of the counter analysis ([`crate::counters`]), which
    /// reports leave out.
    pub fn is_counter(&self) -> bool {
        matches!(
            self,
            LockKey::FlagDone(_)
                | LockKey::CountInc(_)
                | LockKey::CountDec(_)
                | LockKey::CountFull(_)
                | LockKey::CountZeroFull(_)
                | LockKey::CountZeroOuter(_)
                | LockKey::CountZeroFlag(..)
                | LockKey::GateOpen(..)
        )
    }
}

/// A held lock and the mode it is held in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Held {
    /// The lock.
    pub lock: LockId,
    /// Read or write.
    pub mode: LockMode,
}

/// A trylock whose success is not known yet; its result is in `local` of `func`
/// (`None`: not stored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Pending {
    held: Held,
    key: Option<(FuncId, LocalId)>,
    /// The thread surely held the lock already and taking it again fails
    /// ([`Role::Lock`]'s `relock_fails`): the branch that tests for success is not followed.
    fails: bool,
}

/// The lockset of one class of paths.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct LockFact {
    must: SmallSet<Held>,
    may: SmallSet<Held>,
    pending: SmallVec<[Pending; 1]>,
    /// Symbolic locks held on every path of the class ([`SymLock`]).
    sym: SmallSet<u32>,
    /// Locks taken in write mode at some point of every path so far (a lock history: what
    /// follows happens after that acquisition).
    hist: SmallSet<LockId>,
    /// Per child created so far, the write-mode locks held without a break since its create
    /// statement, when there are some (a child in neither `since` nor `unheld` was not created
    /// on these paths).
    since: SinceSets,
    /// Children created so far with no write-mode lock held since.
    unheld: BitSet<ThreadId>,
    /// Outcomes of branch tests on guard locals on every path of the class
    /// ([`crate::guards`]): branches contradicting them are not followed.
    guards: Guards,
}

impl LockFact {
    /// What the fact says of child `c`: `None` when it was not created on these paths (no
    /// constraint), else the locks held since its creation.
    fn since_of(&self, c: ThreadId) -> Option<SmallSet<LockId>> {
        if self.unheld.contains(&c) {
            return Some(SmallSet::new());
        }
        self.since
            .iter()
            .find(|(x, _)| *x == c)
            .map(|(_, s)| s.clone())
    }

    /// Sets what the fact says of child `c` (an empty set moves it to `unheld`).
    fn set_since(&mut self, c: ThreadId, s: SmallSet<LockId>) {
        self.since.retain(|(x, _)| *x != c);
        if s.is_empty() {
            self.unheld.insert(c);
        } else {
            self.unheld.remove(&c);
            self.since.push((c, s));
            self.since.sort_by_key(|(x, _)| *x);
        }
    }

    /// Ends lock `l` in every `since` set.
    fn since_release(&mut self, l: &LockId) {
        let mut emptied: SmallVec<[ThreadId; 2]> = SmallVec::new();
        for (c, s) in self.since.iter_mut() {
            s.remove(l);
            if s.is_empty() {
                emptied.push(*c);
            }
        }
        for c in emptied {
            self.set_since(c, SmallSet::new());
        }
    }

    /// Every child the fact says something of.
    fn since_children(&self) -> impl Iterator<Item = ThreadId> + '_ {
        self.since.iter().map(|(c, _)| *c).chain(self.unheld.iter())
    }
}

/// Per child, a set of locks (`since` sets of lock histories).
pub type SinceSets = SmallVec<[(ThreadId, SmallSet<LockId>); 1]>;

/// Whether a lock may order threads through its history (a real lock, not the atomic-section
/// or unknown one).
fn orders(l: LockId) -> bool {
    l != LockId::UNKNOWN && l != LockId::ATOMIC
}

/// A lock named by the expression that takes it rather than by its address: `lock(&O.m)`
/// where the object expression `O` (an instance of struct `comp`) reads only locals of `func`
/// that nothing changes while it is held (Goblint's symbolic locks, `symb_locks`). An access
/// `O.f` of the same function under it is protected by the lock of the very instance it
/// touches: two such accesses to the same bytes touch the same instance, so they hold the same
/// lock (`notes/racerf-goblint.md` §7 pattern 18, per-element locks).
///
/// The same holds for **per-element locks** (`lock(&M[e])` or `lock(M + e)`, Goblint's
/// `symb_locks` on indices): an access `A[e]…` of the same function with the same index `e`
/// under it touches the element of `A` whose lock in `M` is held, so two accesses to the same
/// element of `A` hold the same element of `M` ([`SymLock::elem`]).
///
/// An element lock `L[y]` with `y` a local also protects the *region* of element `y` of root
/// arrays ([`crate::backend::regions`]): the objects hanging off those elements.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SymLock {
    /// The function whose locals `object` reads.
    pub func: FuncId,
    /// The object expression, printed (empty for an element lock).
    pub object: String,
    /// Its number of projections.
    pub proj_len: usize,
    /// The struct or union it is an instance of (`None` for an element lock).
    pub comp: Option<CompId>,
    /// Byte offset of the lock inside the instance.
    pub lock_off: u64,
    /// The locals it reads (an assignment to one ends the lock's validity).
    pub deps: SmallVec<[LocalId; 2]>,
    /// For an element lock: the lock array and the printed index expression.
    pub elem: Option<(ArrayId, String)>,
}

/// An array identified by where it starts: its base, the byte offset of its first element in
/// the base, and its element size in bytes.
pub type ArrayId = (Base, u64, u64);

/// How an element `X[e]` names its array `X`.
#[derive(Clone, Copy, Debug)]
pub enum ArrayExpr<'e> {
    /// Through a pointer expression `P` (`P[e]`, `*(P + e)`, `P + e`).
    Pointer(&'e Expr),
    /// A global array at a constant offset of global `g` (`g.f[e]`, `g[e]`).
    Global(crate::ir::GlobalId, u64),
}

/// An element reference: the array, the index expression and the element size in bytes.
pub type ElemRef<'e> = (ArrayExpr<'e>, &'e Expr, u64);

/// The element an address expression `P + e` or `&A[e]` designates (nothing after the index).
pub fn elem_of_addr<'e>(program: &Program, e: &'e Expr) -> Option<ElemRef<'e>> {
    match &crate::ir::visit::strip_casts(e).kind {
        ExprKind::Binary(crate::ir::BinOp::PtrAdd, p, ix) => {
            let size = program.types.size_of(program.types.pointee(p.ty)?)?;
            Some((ArrayExpr::Pointer(p), ix, size))
        }
        ExprKind::AddrOf(lv) => {
            let (r, rest) = elem_of_lval(program, lv)?;
            (rest == lv.proj.len()).then_some(r)
        }
        _ => None,
    }
}

/// The element an lvalue `*(P + e)…` or `g.f[e]…` lies in, with the number of projections up
/// to and including the index (the rest selects inside the element).
pub fn elem_of_lval<'e>(program: &Program, lv: &'e Lval) -> Option<(ElemRef<'e>, usize)> {
    let types = &program.types;
    match &lv.host {
        Host::Deref(x) => match &crate::ir::visit::strip_casts(x).kind {
            ExprKind::Binary(crate::ir::BinOp::PtrAdd, p, ix) => {
                let size = types.size_of(types.pointee(p.ty)?)?;
                Some(((ArrayExpr::Pointer(p), ix, size), 0))
            }
            _ => None,
        },
        Host::Var(Var::Global(g)) => {
            let mut ty = program.global(*g).ty;
            let mut start = 0u64;
            for (k, pr) in lv.proj.iter().enumerate() {
                match pr {
                    Proj::Field { comp, index } => {
                        let f = types.comp(*comp).fields.get(*index as usize)?;
                        start = start.checked_add(f.offset)?;
                        ty = f.ty;
                    }
                    Proj::Index(ix) => {
                        let crate::ir::types::TypeKind::Array { elem, .. } = types.kind(ty) else {
                            return None;
                        };
                        let size = types.size_of(*elem)?;
                        return Some(((ArrayExpr::Global(*g, start), ix, size), k + 1));
                    }
                }
            }
            None
        }
        _ => None,
    }
}

/// The identity of an array at context `ctx`: a global's, or the single object a pointer
/// points to at an exact offset (one instance, see [`ThreadGraph::single_instance`]).
pub fn array_identity<'p, B: Backend<'p>>(
    program: &Program,
    backend: &B,
    graph: &ThreadGraph,
    ctx: &crate::context::Context,
    array: ArrayExpr<'_>,
    size: u64,
) -> Option<ArrayId> {
    match array {
        ArrayExpr::Global(g, start) => {
            (!program.global(g).thread_local).then_some((Base::Global(g), start, size))
        }
        ArrayExpr::Pointer(p) => match backend.value_ptr(ctx, p) {
            PointsTo::Known(a) => match a.as_slice() {
                [x] if x.exact && graph.single_instance(program, backend, &x.base) => {
                    Some((x.base, x.range.lo, size))
                }
                _ => None,
            },
            PointsTo::Unknown => None,
        },
    }
}

/// The locals an index expression reads, when it reads only locals of `func` whose address is
/// never taken (nothing but `func` can change them) and nothing else.
pub fn index_deps(program: &Program, func: FuncId, ix: &Expr) -> Option<SmallVec<[LocalId; 2]>> {
    let cfg = program.function(func).body.as_ref()?;
    let mut taken: FxHashSet<LocalId> = FxHashSet::default();
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
        taken.insert(l);
    });
    let mut deps: SmallVec<[LocalId; 2]> = SmallVec::new();
    let mut ok = true;
    crate::ir::visit::walk_expr(ix, &mut |x| {
        if let ExprKind::Load(inner) = &x.kind {
            match (&inner.host, inner.proj.is_empty()) {
                (Host::Var(Var::Local(l)), true) if !taken.contains(l) => deps.push(*l),
                _ => ok = false,
            }
        }
    });
    deps.sort();
    deps.dedup();
    ok.then_some(deps)
}

/// Interned lock identities of a program.
#[derive(Clone, Debug)]
pub struct LockTable {
    keys: Vec<LockKey>,
    index: FxHashMap<LockKey, LockId>,
    syms: Vec<SymLock>,
    sym_index: FxHashMap<SymLock, u32>,
    /// Per lock, how the source names it: the argument of the first lock call (in source
    /// order) that takes it, without its `&` (`pool->lock` for `pthread_mutex_lock(&pool->lock)`).
    names: FxHashMap<LockId, (crate::ir::Loc, String)>,
    /// Lock paths ([`LockKey::Path`]) and their index by identity.
    paths: Vec<paths::LockPath>,
    path_index: FxHashMap<(paths::Root, SmallVec<[u64; 3]>), u32>,
    /// The renaming of each relative path into the caller of a call edge, by thread, context,
    /// edge and path.
    rebase_memo: FxHashMap<(ThreadId, FnCtxId, EdgeId, u32), Option<LockId>>,
    /// Parameters that keep their argument's value ([`paths::lock_path`]).
    stable_params: paths::StableParams,
    /// The lock path of each lock call argument already asked for, by thread, context, edge
    /// and argument position.
    path_memo: FxHashMap<(ThreadId, FnCtxId, EdgeId, usize), Option<LockId>>,
}

impl Default for LockTable {
    fn default() -> Self {
        let mut t = LockTable {
            keys: Vec::new(),
            index: FxHashMap::default(),
            syms: Vec::new(),
            sym_index: FxHashMap::default(),
            names: FxHashMap::default(),
            paths: Vec::new(),
            path_index: FxHashMap::default(),
            rebase_memo: FxHashMap::default(),
            stable_params: paths::StableParams::default(),
            path_memo: FxHashMap::default(),
        };
        t.intern(LockKey::Unknown);
        t.intern(LockKey::Atomic);
        t
    }
}

impl LockTable {
    /// The "passed" (`posted == false`) or "posted" pseudo-lock of the handshake semaphore
    /// whose lock identity is `l` ([`crate::semaphores`]).
    fn handshake_of(&mut self, l: LockId, posted: bool) -> LockId {
        match self.key(l) {
            LockKey::Addr(b, off) if posted => self.intern(LockKey::SemPosted(b, off)),
            LockKey::Addr(b, off) => self.intern(LockKey::SemPassed(b, off)),
            _ => l,
        }
    }

    /// The barrier pseudo-lock of the object whose lock identity is `l`.
    fn barrier_of(&mut self, l: LockId) -> LockId {
        match self.key(l) {
            LockKey::Addr(b, off) => self.intern(LockKey::Barrier(b, off)),
            _ => l,
        }
    }

    /// The id of a lock, interned if new (ids are shared by every phase that names locks: the
    /// deadlock detector resolves lock calls into the same table).
    pub fn intern(&mut self, k: LockKey) -> LockId {
        if let Some(&id) = self.index.get(&k) {
            return id;
        }
        let id = LockId(self.keys.len() as u32);
        self.keys.push(k);
        self.index.insert(k, id);
        id
    }

    fn intern_sym(&mut self, s: SymLock) -> u32 {
        if let Some(&id) = self.sym_index.get(&s) {
            return id;
        }
        let id = self.syms.len() as u32;
        self.syms.push(s.clone());
        self.sym_index.insert(s, id);
        id
    }

    /// The lock paths named so far ([`LockKey::Path`] indexes them).
    pub fn paths(&self) -> &[paths::LockPath] {
        &self.paths
    }

    /// The lock path behind a [`LockKey::Path`] index.
    pub fn path(&self, i: u32) -> Option<&paths::LockPath> {
        self.paths.get(i as usize)
    }

    /// The lock the lock or unlock call at edge `eid` of context `ctx` names by its argument
    /// `arg` (argument position `pos`) as a lock path ([`paths::lock_path`]), interned.
    fn path_lock(
        &mut self,
        program: &Program,
        callers: &paths::Callers<'_>,
        ctx: FnCtxId,
        eid: EdgeId,
        pos: usize,
        arg: &Expr,
    ) -> Option<LockId> {
        let key = (callers.thread(), ctx, eid, pos);
        if let Some(r) = self.path_memo.get(&key) {
            return *r;
        }
        let r = paths::lock_path(program, callers, &mut self.stable_params, ctx, arg)
            .map(|p| self.intern_path(p));
        self.path_memo.insert(key, r);
        r
    }

    /// The lock a path names: a lock at a constant offset of a global is that address.
    fn intern_path(&mut self, p: paths::LockPath) -> LockId {
        if let Some((g, off)) = p.global_address() {
            return self.intern(LockKey::Addr(Base::Global(g), off));
        }
        let i = match self.path_index.get(&p.key()) {
            Some(&i) => i,
            None => {
                let i = self.paths.len() as u32;
                self.path_index.insert(p.key(), i);
                self.paths.push(p);
                i
            }
        };
        self.intern(LockKey::Path(i))
    }

    /// Whether locks `a` and `b` may be one mutex: the same lock, or a lock named by a path
    /// ([`paths`]) and another path's or a heap lock (the same mutex named differently).
    pub fn may_alias(&self, a: LockId, b: LockId) -> bool {
        let named = |l: LockId| match self.key(l) {
            LockKey::Path(_) => Some(true),
            LockKey::Addr(Base::Heap { .. }, _) => Some(false),
            _ => None,
        };
        a == b
            || matches!(
                (named(a), named(b)),
                (Some(true), Some(_)) | (Some(_), Some(true))
            )
    }

    /// Whether `l` is named by a path relative to a parameter of `func` (any function when
    /// `None`).
    fn relative_to(&self, l: LockId, func: Option<FuncId>) -> bool {
        match self.key(l) {
            LockKey::Path(i) => self.paths.get(i as usize).is_some_and(|p| match p.root {
                paths::Root::Param(f, _) => func.is_none_or(|x| x == f),
                paths::Root::Global(_) => false,
            }),
            _ => false,
        }
    }

    /// The lock the relative lock `l` names in the caller at call edge `eid` of context `ctx`
    /// ([`paths::rebase`]); `None` when the argument has no path.
    fn rebase_lock(
        &mut self,
        program: &Program,
        callers: &paths::Callers<'_>,
        ctx: FnCtxId,
        eid: EdgeId,
        l: LockId,
    ) -> Option<LockId> {
        let LockKey::Path(i) = self.key(l) else {
            return Some(l);
        };
        let key = (callers.thread(), ctx, eid, i);
        if let Some(r) = self.rebase_memo.get(&key) {
            return *r;
        }
        let path = self.paths.get(i as usize)?.clone();
        let r = paths::rebase(program, callers, &mut self.stable_params, ctx, eid, &path)
            .map(|p| self.intern_path(p));
        self.rebase_memo.insert(key, r);
        r
    }

    /// The symbolic lock behind an id.
    pub fn sym(&self, id: u32) -> Option<&SymLock> {
        self.syms.get(id as usize)
    }

    /// How the source names lock `id`: the argument of the first lock call (in source order)
    /// that takes it, without its `&`; `None` when no lock call named it.
    pub fn source_name(&self, id: LockId) -> Option<&str> {
        self.names.get(&id).map(|(_, n)| n.as_str())
    }

    /// Records that the lock call at `loc` names lock `id` with argument `arg` of `func`
    /// (kept when it comes first in source order; see [`LockTable::source_name`]).
    fn name_at(
        &mut self,
        program: &Program,
        id: LockId,
        loc: crate::ir::Loc,
        arg: &Expr,
        func: FuncId,
    ) {
        if self.names.get(&id).is_some_and(|(l, _)| *l <= loc) {
            return;
        }
        let text = crate::ir::pretty::expr_to_source(
            program,
            crate::ir::visit::strip_casts(arg),
            program.function(func),
        );
        let name = match text.strip_prefix('&') {
            Some(rest) => rest
                .trim_start_matches('(')
                .trim_end_matches(')')
                .to_string(),
            None => format!("*{text}"),
        };
        self.names.insert(id, (loc, name));
    }

    /// What a lock id stands for.
    pub fn key(&self, id: LockId) -> LockKey {
        self.keys
            .get(id.0 as usize)
            .copied()
            .unwrap_or(LockKey::Unknown)
    }
}

/// A thread's lockset solution, shared by threads with equal contexts when the backend's
/// answers do not depend on the thread.
type SharedSolution = std::sync::Arc<Solution<dataflow::Facts<LockFact>>>;

/// The known candidates of a thread's unlock statements, by context and edge.
type UnlockTargets = FxHashMap<(FnCtxId, EdgeId), SmallVec<[LockId; 2]>>;

/// The per-thread analysis.
struct Locksets<'a, 'p, B: Backend<'p>> {
    program: &'p Program,
    roles: &'a Roles,
    backend: &'a B,
    graph: &'a ThreadGraph,
    tc: &'a ThreadContexts,
    table: &'a mut LockTable,
    /// The mutex types the program may set ([`mutex_types`]).
    mutex_types: MutexTypes,
    /// The thread's reverse call graph, for lock paths ([`paths`]).
    callers: paths::Callers<'a>,
    /// Semaphores treated as mutexes (binary semaphores, see the module docs).
    binary: &'a FxHashSet<LockId>,
    /// Handshake semaphore candidates ([`crate::semaphores`]).
    handshake: &'a FxHashSet<LockId>,
    /// Flag candidates: initial and set value ([`flag_candidates`]).
    flags: &'a FxHashMap<GlobalId, (i128, i128)>,
    /// Counter candidates ([`crate::counters`]).
    counters: &'a crate::counters::Counters,
    /// The known candidates of each unlock statement, by context and edge.
    unlocks: &'a mut UnlockTargets,
    /// The locals whose branch tests facts record ([`guards::guard_locals`]).
    guard_locals: &'a FxHashSet<(FuncId, LocalId)>,
    _p: std::marker::PhantomData<&'p ()>,
}

/// Flag candidates (module docs): integer globals, neither thread-local nor extern, whose
/// address is never taken and whose every store is `g = c` for one constant `c` other than
/// the static initial value `v0`; mapped to `(v0, c)`.
fn flag_candidates(program: &Program) -> FxHashMap<GlobalId, (i128, i128)> {
    let mut out: FxHashMap<GlobalId, (i128, i128)> = FxHashMap::default();
    let mut bad: FxHashSet<GlobalId> = FxHashSet::default();
    let addr = |e: &Expr, bad: &mut FxHashSet<GlobalId>| {
        crate::ir::visit::walk_expr(e, &mut |x| {
            if let ExprKind::AddrOf(lv) = &x.kind
                && let Host::Var(Var::Global(g)) = lv.host
            {
                bad.insert(g);
            }
        });
    };
    for g in &program.globals {
        for item in &g.init {
            if let crate::ir::InitValue::Expr(e) = &item.value {
                addr(e, &mut bad);
            }
        }
    }
    let mut stores: FxHashMap<GlobalId, Option<i128>> = FxHashMap::default();
    for f in &program.functions {
        let Some(cfg) = &f.body else { continue };
        for e in &cfg.edges {
            // `op_exprs` reaches every sub-expression: look at each once.
            crate::ir::visit::op_exprs(&e.op, &mut |x| {
                if let ExprKind::AddrOf(lv) = &x.kind
                    && let Host::Var(Var::Global(g)) = lv.host
                {
                    bad.insert(g);
                }
            });
            let written: SmallVec<[&Lval; 2]> = match &e.op {
                Op::Assign { lhs, rhs } => {
                    if let Host::Var(Var::Global(g)) = lhs.host {
                        let c = match (
                            &crate::ir::visit::strip_casts(rhs).kind,
                            lhs.proj.is_empty(),
                        ) {
                            (ExprKind::Int(c), true) => Some(*c),
                            _ => None,
                        };
                        let prev = stores.entry(g).or_insert(c);
                        if *prev != c || c.is_none() {
                            bad.insert(g);
                        }
                    }
                    SmallVec::new()
                }
                Op::Call { dest: Some(d), .. } => SmallVec::from_elem(d, 1),
                Op::Asm { outputs, .. } => outputs.iter().collect(),
                _ => SmallVec::new(),
            };
            for lv in written {
                if let Host::Var(Var::Global(g)) = lv.host {
                    bad.insert(g);
                }
            }
        }
    }
    for (g, c) in stores {
        let Some(c) = c else { continue };
        let gl = program.global(g);
        if bad.contains(&g)
            || gl.thread_local
            || gl.storage == crate::ir::Storage::Extern
            || !matches!(
                program.types.kind(gl.ty),
                crate::ir::types::TypeKind::Int(_)
            )
        {
            continue;
        }
        let v0 = match gl.init.as_slice() {
            [] => 0,
            [item] if item.proj.is_empty() => match &item.value {
                crate::ir::InitValue::Expr(e) => match &crate::ir::visit::strip_casts(e).kind {
                    ExprKind::Int(v) => *v,
                    _ => continue,
                },
                _ => continue,
            },
            _ => continue,
        };
        if v0 != c {
            out.insert(g, (v0, c));
        }
    }
    out
}

/// The flag a branch `cond` (taken when its truth is `branch`) decides on, and whether it
/// needs the flag set: the condition reads only that flag and constants, and is taken for
/// exactly one of the flag's two values (initial and set).
fn flag_branch(
    cond: &Expr,
    branch: bool,
    flags: &FxHashMap<GlobalId, (i128, i128)>,
) -> Option<(GlobalId, bool)> {
    let mut flag: Option<GlobalId> = None;
    let mut other = false;
    crate::ir::visit::walk_expr(cond, &mut |x| {
        if let ExprKind::Load(lv) = &x.kind {
            match lv.host {
                Host::Var(Var::Global(g)) if lv.proj.is_empty() && flags.contains_key(&g) => {
                    if flag.is_some_and(|f| f != g) {
                        other = true;
                    }
                    flag = Some(g);
                }
                _ => other = true,
            }
        }
    });
    let g = flag.filter(|_| !other)?;
    let (v0, c) = flags.get(&g).copied()?;
    let taken = |v: i128| flag_eval(cond, g, v).map(|x| (x != 0) == branch);
    match (taken(v0)?, taken(c)?) {
        (false, true) => Some((g, true)),
        (true, false) => Some((g, false)),
        _ => None,
    }
}

/// The value of `e` when flag `g` holds `v` (constants, loads of `g`, casts, logical negation
/// and comparisons); `None` for anything else.
fn flag_eval(e: &Expr, g: GlobalId, v: i128) -> Option<i128> {
    use crate::ir::{BinOp, UnOp};
    match &e.kind {
        ExprKind::Int(c) => Some(*c),
        ExprKind::Load(lv) if lv.host == Host::Var(Var::Global(g)) && lv.proj.is_empty() => Some(v),
        // 0 and 1 keep their value in every integer (and `_Bool`) conversion.
        ExprKind::Cast(inner) => flag_eval(inner, g, v).filter(|x| *x == 0 || *x == 1),
        ExprKind::Unary(UnOp::LogNot, inner) => Some(i128::from(flag_eval(inner, g, v)? == 0)),
        ExprKind::Binary(op, a, b) => {
            let (x, y) = (flag_eval(a, g, v)?, flag_eval(b, g, v)?);
            let r = match op {
                BinOp::Eq => x == y,
                BinOp::Ne => x != y,
                BinOp::Lt => x < y,
                BinOp::Gt => x > y,
                BinOp::Le => x <= y,
                BinOp::Ge => x >= y,
                _ => return None,
            };
            Some(i128::from(r))
        }
        _ => None,
    }
}

/// The mutex types a program may give its mutexes, beyond the default (normal) type.
#[derive(Clone, Copy, Debug, Default)]
struct MutexTypes {
    /// Some mutex may be recursive: an unlock then may leave it held.
    recursive: bool,
    /// Some mutex may be of a type other than normal (recursive, error-checking): taking a
    /// mutex the thread holds may then return ([`Role::Lock`]'s `relock_fails` does not hold).
    not_normal: bool,
}

/// The mutex types the program may set: a `pthread_mutexattr_settype` call whose type
/// argument is not a constant, or is a constant other than `PTHREAD_MUTEX_NORMAL` (0; 1 is
/// `PTHREAD_MUTEX_RECURSIVE` in glibc and musl), or a static initialiser setting glibc's
/// `__kind` field of a mutex to non-zero (`PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP`, which counts
/// as recursive: other kinds are rare and this keeps the check simple).
fn mutex_types(program: &Program, roles: &Roles) -> MutexTypes {
    let static_kind = program.globals.iter().flat_map(|g| &g.init).any(|e| {
        let named_kind = match e.proj.last() {
            Some(Proj::Field { comp, index }) => {
                program
                    .types
                    .comp(*comp)
                    .fields
                    .get(*index as usize)
                    .and_then(|f| f.name.as_deref())
                    == Some("__kind")
            }
            _ => false,
        };
        named_kind
            && match &e.value {
                crate::ir::InitValue::Expr(x) => x.as_int() != Some(0),
                crate::ir::InitValue::Str(_) => false,
            }
    });
    let mut types = MutexTypes {
        recursive: static_kind,
        not_normal: static_kind,
    };
    let set_kinds = program
        .functions
        .iter()
        .filter_map(|f| f.body.as_ref())
        .flat_map(|cfg| cfg.edges.iter())
        .filter_map(|e| match (&e.op, roles.of_call(&e.op)) {
            (Op::Call { args, .. }, Some(Role::MutexAttrSettype { kind, .. })) => Some(
                args.get(*kind)
                    .and_then(|k| crate::ir::visit::strip_casts(k).as_int()),
            ),
            _ => None,
        });
    for k in set_kinds {
        types.recursive |= k.is_none_or(|k| k == 1);
        types.not_normal |= k.is_none_or(|k| k != 0);
    }
    types
}

/// The symbolic lock a lock call's argument `&O.m` names, when `O` reads only locals of `func`
/// whose address is never taken (nothing but `func` itself can change them). `alias`: the
/// address a pointer argument surely holds (`Backend::alias`).
fn sym_lock(program: &Program, func: FuncId, arg: &Expr, alias: Option<Expr>) -> Option<SymLock> {
    let expanded = alias.or_else(|| local_alias(program, func, arg));
    let arg = expanded.as_ref().unwrap_or(arg);
    let ExprKind::AddrOf(lv) = &crate::ir::visit::strip_casts(arg).kind else {
        return None;
    };
    let (Proj::Field { comp, index }, prefix) = lv.proj.split_last()? else {
        return None;
    };
    let field = program.types.comp(*comp).fields.get(*index as usize)?;
    let f = program.function(func);
    let cfg = f.body.as_ref()?;
    let mut taken: FxHashSet<LocalId> = FxHashSet::default();
    for e in &cfg.edges {
        crate::ir::visit::op_exprs(&e.op, &mut |x| {
            if let ExprKind::AddrOf(a) = &x.kind
                && let Host::Var(Var::Local(l)) = a.host
            {
                taken.insert(l);
            }
        });
    }
    let object = Lval {
        host: lv.host.clone(),
        proj: prefix.to_vec(),
        ty: lv.ty,
    };
    // Every value the object expression reads is a plain local nobody else can change.
    let mut deps: SmallVec<[LocalId; 2]> = SmallVec::new();
    let mut ok = true;
    crate::ir::visit::walk_lval(&object, &mut |x| {
        if let ExprKind::Load(inner) = &x.kind {
            match (&inner.host, inner.proj.is_empty()) {
                (Host::Var(Var::Local(l)), true) if !taken.contains(l) => deps.push(*l),
                _ => ok = false,
            }
        }
    });
    if !ok {
        return None;
    }
    deps.sort();
    deps.dedup();
    Some(SymLock {
        func,
        object: crate::ir::pretty::lval_to_string(program, &object, Some(f)),
        proj_len: prefix.len(),
        comp: Some(*comp),
        lock_off: field.offset,
        deps,
        elem: None,
    })
}

/// The per-element symbolic lock a lock call's argument `&M[e]` / `M + e` names at context
/// `ctx` (see [`SymLock`]).
fn elem_sym_lock<'p, B: Backend<'p>>(
    program: &Program,
    backend: &B,
    graph: &ThreadGraph,
    ctx: &crate::context::Context,
    arg: &Expr,
) -> Option<SymLock> {
    let func = ctx.fctx.func;
    let (array, ix, size) = elem_of_addr(program, arg)?;
    let deps = index_deps(program, func, ix)?;
    let id = array_identity(program, backend, graph, ctx, array, size)?;
    let f = program.function(func);
    Some(SymLock {
        func,
        object: String::new(),
        proj_len: 0,
        comp: None,
        lock_off: 0,
        deps,
        elem: Some((id, crate::ir::pretty::expr_to_string(program, ix, Some(f)))),
    })
}

/// The address a pointer local stands for: for `e` a load of a local `p` of `func` whose
/// address is never taken, written exactly once, by `p = &O.f` where `O` reads only locals
/// whose address is never taken and that no path from that definition writes again (so `O`
/// denotes the same object wherever `p` is used), that address expression
/// (so `m = &s->mutex; lock(m)` names the lock `s->mutex`). `None` otherwise.
pub fn local_alias(program: &Program, func: FuncId, e: &Expr) -> Option<Expr> {
    let ExprKind::Load(lv) = &crate::ir::visit::strip_casts(e).kind else {
        return None;
    };
    let (Host::Var(Var::Local(p)), true) = (&lv.host, lv.proj.is_empty()) else {
        return None;
    };
    let cfg = program.function(func).body.as_ref()?;
    // Per local, the statements writing it (`None`: inline assembly, any number of times).
    let mut writes: FxHashMap<LocalId, SmallVec<[Option<EdgeId>; 2]>> = FxHashMap::default();
    let mut def: Option<(&Expr, EdgeId)> = None;
    let mut taken: FxHashSet<LocalId> = FxHashSet::default();
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
        taken.insert(l);
    });
    for (ei, edge) in cfg.edges.iter().enumerate() {
        let eid = EdgeId(ei as u32);
        let written = match &edge.op {
            Op::Assign { lhs, rhs } => {
                if lhs.host == Host::Var(Var::Local(*p)) && lhs.proj.is_empty() {
                    def = Some((rhs, eid));
                }
                Some(lhs)
            }
            Op::Call { dest: Some(d), .. } => Some(d),
            Op::Asm { outputs, .. } => {
                // Inline assembly may write its outputs any number of times.
                for o in outputs {
                    if let Host::Var(Var::Local(l)) = o.host {
                        writes.entry(l).or_default().extend([None, None]);
                    }
                }
                None
            }
            _ => None,
        };
        if let Some(Lval {
            host: Host::Var(Var::Local(l)),
            ..
        }) = written
        {
            writes.entry(*l).or_default().push(Some(eid));
        }
    }
    if taken.contains(p) || writes.get(p).map_or(0, |w| w.len()) != 1 {
        return None;
    }
    let (def, def_edge) = def?;
    let rhs = crate::ir::visit::strip_casts(def);
    let ExprKind::AddrOf(target) = &rhs.kind else {
        return None;
    };
    if !matches!(target.proj.last(), Some(Proj::Field { .. })) {
        return None;
    }
    let after_def = cfg.edge(def_edge).dst;
    let mut ok = true;
    crate::ir::visit::walk_lval(target, &mut |x| {
        if let ExprKind::Load(inner) = &x.kind {
            match (&inner.host, inner.proj.is_empty()) {
                (Host::Var(Var::Local(l)), true) if !taken.contains(l) => {
                    // No write of `l` after the definition: `O` keeps denoting one object.
                    let rewritten = writes.get(l).is_some_and(|ws| {
                        ws.iter()
                            .any(|w| w.is_none_or(|w| cfg.reaches(after_def, cfg.edge(w).src, &[])))
                    });
                    if rewritten {
                        ok = false;
                    }
                }
                _ => ok = false,
            }
        }
    });
    ok.then(|| rhs.clone())
}

/// The lock identities the lock argument `e` of statement `eid` (function context `ctx` of
/// the thread of `tc`) may name: `None` when unknown, when there are more than
/// [`MAX_LOCK_CANDIDATES`], or when one has no single identity. `once` names once-controls.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lock_targets<'p, B: Backend<'p>>(
    program: &Program,
    backend: &B,
    graph: &ThreadGraph,
    tc: &ThreadContexts,
    ctx: FnCtxId,
    eid: EdgeId,
    e: &Expr,
    table: &mut LockTable,
    once: bool,
) -> Option<SmallVec<[LockId; 2]>> {
    let qctx = tc.context(ctx, eid);
    match backend.value_ptr(&qctx, e) {
        PointsTo::Known(addrs) if !addrs.is_empty() && addrs.len() <= MAX_LOCK_CANDIDATES => {
            let mut out = SmallVec::new();
            for Address { base, range, exact } in addrs {
                // A lock at an inexact offset, or in an object standing for several (a heap
                // object allocated in a loop, a local of a thread running several times), has
                // no single identity.
                if !exact || !graph.single_instance(program, backend, &base) {
                    return None;
                }
                let key = if once {
                    LockKey::Once(base, range.lo)
                } else {
                    LockKey::Addr(base, range.lo)
                };
                let id = table.intern(key);
                if !once {
                    let func = tc.ctx(ctx).func;
                    let loc = program.function(func).edge_loc(eid);
                    table.name_at(program, id, loc, e, func);
                }
                out.push(id);
            }
            Some(out)
        }
        _ => None,
    }
}

impl<'p, B: Backend<'p>> Locksets<'_, 'p, B> {
    fn add(fact: &LockFact, h: Held) -> LockFact {
        let mut f = fact.clone();
        f.must.insert(h);
        f.may.insert(h);
        f
    }

    /// Flags: a store of a flag adds its "set" pseudo-lock to `may`, a branch that needs the
    /// flag set its "seen" pseudo-lock to `must` (both in read mode).
    fn transfer_flags(&mut self, edge: &Edge, out: &mut [LockFact]) {
        if self.flags.is_empty() {
            return;
        }
        let key = match &edge.op {
            Op::Assign { lhs, .. } => match lhs.host {
                Host::Var(Var::Global(g)) if self.flags.contains_key(&g) => {
                    Some(LockKey::FlagSet(g))
                }
                _ => None,
            },
            Op::Assume { cond, branch } => flag_branch(cond, *branch, self.flags)
                .filter(|(_, set)| *set)
                .map(|(g, _)| LockKey::FlagSeen(g)),
            _ => None,
        };
        let Some(key) = key else { return };
        let h = Held {
            lock: self.table.intern(key),
            mode: LockMode::Read,
        };
        // Only the side each query reads is kept ("set" on some path: `may`; "seen" on every
        // path: `must`), so facts differing only in them cover each other and do not split
        // the disjunction.
        for f in out.iter_mut() {
            if matches!(key, LockKey::FlagSet(_)) {
                f.may.insert(h);
            } else {
                f.must.insert(h);
            }
        }
    }

    /// Counters ([`crate::counters`]): stores add "has added" (`must` and `may`) or "has
    /// subtracted" (`may`); flag stores "has set" (`must`); tests of the counter for zero
    /// "seen zero after a full count" or "after setting flag F" when those hold on every path;
    /// full-count tests "seen full"; branches that need a flag unset "gate open" for each
    /// counter added to on every path. All in read mode.
    fn transfer_counters(&mut self, at: At<'_>, edge: &Edge, out: &mut [LockFact]) {
        if self.counters.is_empty() {
            return;
        }
        let read = |table: &mut LockTable, k: LockKey| Held {
            lock: table.intern(k),
            mode: LockMode::Read,
        };
        match &edge.op {
            Op::Assign { lhs, .. } => {
                if let Some((g, d)) = crate::counters::update(&edge.op)
                    && self.counters.step.contains_key(&g)
                {
                    if d > 0 {
                        let h = read(self.table, LockKey::CountInc(g));
                        for f in out.iter_mut() {
                            f.must.insert(h);
                            f.may.insert(h);
                        }
                    } else if d < 0 {
                        let h = read(self.table, LockKey::CountDec(g));
                        for f in out.iter_mut() {
                            f.may.insert(h);
                        }
                    }
                }
                if let Host::Var(Var::Global(g)) = lhs.host
                    && self.flags.contains_key(&g)
                {
                    let h = read(self.table, LockKey::FlagDone(g));
                    for f in out.iter_mut() {
                        f.must.insert(h);
                    }
                }
            }
            Op::Assume { cond, branch } => {
                let func = self.tc.ctx(at.ctx).func;
                if let Some(c) = crate::counters::zero_tested(self.program, cond, *branch)
                    .filter(|c| self.counters.step.contains_key(c))
                {
                    let full = self.table.intern(LockKey::CountFull(c));
                    let zero_full = read(self.table, LockKey::CountZeroFull(c));
                    for f in out.iter_mut() {
                        let done: SmallVec<[GlobalId; 2]> = f
                            .must
                            .iter()
                            .filter_map(|h| match self.table.key(h.lock) {
                                LockKey::FlagDone(g) => Some(g),
                                _ => None,
                            })
                            .collect();
                        if f.must.iter().any(|h| h.lock == full) {
                            f.must.insert(zero_full);
                        }
                        if self.counters.outer.contains(&(func, at.edge)) {
                            f.must.insert(read(self.table, LockKey::CountZeroOuter(c)));
                        }
                        for g in done {
                            let h = read(self.table, LockKey::CountZeroFlag(c, g));
                            f.must.insert(h);
                        }
                    }
                }
                if let Some(g) = self.counters.full.get(&(func, at.edge)) {
                    let h = read(self.table, LockKey::CountFull(*g));
                    for f in out.iter_mut() {
                        f.must.insert(h);
                    }
                }
                if let Some((flag, false)) = flag_branch(cond, *branch, self.flags) {
                    for f in out.iter_mut() {
                        let added: SmallVec<[GlobalId; 2]> = f
                            .must
                            .iter()
                            .filter_map(|h| match self.table.key(h.lock) {
                                LockKey::CountInc(g) => Some(g),
                                _ => None,
                            })
                            .collect();
                        for c in added {
                            let h = read(self.table, LockKey::GateOpen(flag, c));
                            f.must.insert(h);
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Lock histories: write-mode acquisitions join `hist`; a create statement starts the
    /// child's `since` set from the write-mode locks held; a release (or a condition wait,
    /// which releases its mutex for a while) ends them in every `since` set.
    fn transfer_history(&self, at: At<'_>, edge: &Edge, before: &LockFact, out: &mut [LockFact]) {
        let role = self.roles.of_call(&edge.op);
        let held_w = |f: &LockFact| -> SmallSet<LockId> {
            let mut s = SmallSet::new();
            for h in f.must.iter() {
                if h.mode == LockMode::Write && orders(h.lock) {
                    s.insert(h.lock);
                }
            }
            s
        };
        let waits = matches!(role, Some(Role::CondWait { .. }));
        let creates = matches!(role, Some(Role::ThreadCreate { .. }));
        // Most statements neither hold, take, release nor create anything.
        if !waits && !creates && before.must.is_empty() && out.iter().all(|f| f.must.is_empty()) {
            return;
        }
        let prev = held_w(before);
        let func = self.tc.ctx(at.ctx).func;
        let children: SmallVec<[ThreadId; 2]> = match role {
            Some(Role::ThreadCreate { .. }) => self
                .graph
                .created_at(crate::context::CallSite {
                    func,
                    edge: at.edge,
                })
                .map(|t| t.id)
                .collect(),
            _ => SmallVec::new(),
        };
        for f in out.iter_mut() {
            let now = held_w(f);
            for l in now.iter() {
                if !prev.contains(l) {
                    f.hist.insert(*l);
                }
            }
            if waits {
                let all: SmallVec<[ThreadId; 2]> = f.since.iter().map(|(c, _)| *c).collect();
                for c in all {
                    f.set_since(c, SmallSet::new());
                }
            } else {
                for l in prev.iter() {
                    if !now.contains(l) {
                        f.since_release(l);
                    }
                }
            }
            for c in &children {
                let s = match f.since_of(*c) {
                    Some(old) => old.intersection(&now),
                    None => now.clone(),
                };
                f.set_since(*c, s);
            }
        }
    }

    /// The locks the address `arg` at edge `eid` of context `ctx` may be ([`lock_targets`]).
    fn targets(&mut self, ctx: FnCtxId, eid: EdgeId, arg: &Expr) -> Option<SmallVec<[LockId; 2]>> {
        lock_targets(
            self.program,
            self.backend,
            self.graph,
            self.tc,
            ctx,
            eid,
            arg,
            self.table,
            false,
        )
    }

    /// The locks a lock or unlock call's argument `arg` (position `pos`) names: the objects
    /// its address may be ([`lock_targets`]), else its lock path ([`paths`]).
    fn lock_or_path(
        &mut self,
        ctx: FnCtxId,
        eid: EdgeId,
        pos: usize,
        arg: &Expr,
    ) -> Option<SmallVec<[LockId; 2]>> {
        self.targets(ctx, eid, arg).or_else(|| {
            self.table
                .path_lock(self.program, &self.callers, ctx, eid, pos, arg)
                .map(|l| SmallVec::from_slice(&[l]))
        })
    }

    /// Forgets the locks relative to the parameters of `func`: out of `must`, the unknown
    /// lock in `may`.
    fn forget_relative(&self, f: &mut LockFact, func: FuncId) {
        let table = &*self.table;
        let rel = |h: &Held| table.relative_to(h.lock, Some(func));
        if !f.may.iter().any(rel) {
            return;
        }
        f.must.retain(|h| !rel(h));
        replace_locks(&mut f.may, rel, LockId::UNKNOWN);
        f.pending.retain(|p| !rel(&p.held));
    }

    /// Renames the locks of `f` (the callee's exit fact of call edge `eid` in context `ctx`)
    /// relative to the callee's parameters into the caller's terms; those without a path in
    /// the caller are forgotten ([`Self::forget_relative`]).
    fn rebase_relative(
        &mut self,
        f: &mut LockFact,
        ctx: FnCtxId,
        eid: EdgeId,
        target: &CallTarget,
    ) {
        let func = target.func;
        let rel: SmallVec<[LockId; 2]> = f
            .may
            .iter()
            .map(|h| h.lock)
            .filter(|l| self.table.relative_to(*l, Some(func)))
            .collect();
        if rel.is_empty() {
            return;
        }
        if !matches!(target.kind, CallKind::Plain | CallKind::Atomic) {
            self.forget_relative(f, func);
            return;
        }
        for l in rel {
            let Some(to) = self
                .table
                .rebase_lock(self.program, &self.callers, ctx, eid, l)
            else {
                continue;
            };
            replace_locks(&mut f.must, |h| h.lock == l, to);
            replace_locks(&mut f.may, |h| h.lock == l, to);
            for p in f.pending.iter_mut() {
                if p.held.lock == l {
                    p.held.lock = to;
                }
            }
        }
        // Those left had no path in the caller.
        self.forget_relative(f, func);
    }

    /// After an unlock of `lock`, the locks it may also be leave the must-lockset: a lock
    /// named by a path may be any heap lock or another path's lock, and a heap lock may be
    /// any path's lock (the same mutex named differently in different contexts).
    fn forget_aliases(&self, f: &mut LockFact, lock: LockId) {
        let table = &*self.table;
        f.must
            .retain(|h| h.lock == lock || !table.may_alias(lock, h.lock));
    }

    /// Whether taking `locks` (the candidates of one lock call, in `mode`) in `fact` surely
    /// retakes a lock the thread holds: one candidate, a single object ([`LockKey::Addr`]),
    /// held in write mode on every path of the fact, and no mutex of the program may be of
    /// a type other than normal. With a `relock_fails` role the call then never succeeds.
    fn relock_fails(&self, fact: &LockFact, locks: &[LockId], mode: LockMode) -> bool {
        let [l] = locks else { return false };
        !self.mutex_types.not_normal
            && mode == LockMode::Write
            && matches!(self.table.key(*l), LockKey::Addr(..))
            && fact.must.contains(&Held {
                lock: *l,
                mode: LockMode::Write,
            })
    }

    /// An unlock of `lock`: a possibly recursive mutex may stay held (locked more often than
    /// unlocked), so then it leaves only the must-lockset.
    fn unlock(&self, fact: &LockFact, lock: LockId) -> LockFact {
        if !self.mutex_types.recursive {
            return Self::release(fact, lock);
        }
        let mut f = fact.clone();
        f.must.retain(|h| h.lock != lock);
        f
    }

    fn release(fact: &LockFact, lock: LockId) -> LockFact {
        let mut f = fact.clone();
        f.must.retain(|h| h.lock != lock);
        f.may.retain(|h| h.lock != lock);
        f.pending.retain(|p| p.held.lock != lock);
        f
    }

    /// The local a call stores its result in, if it is a plain local.
    fn result_key(func: FuncId, dest: &Option<Lval>) -> Option<(FuncId, LocalId)> {
        match dest {
            Some(Lval {
                host: Host::Var(Var::Local(l)),
                proj,
                ..
            }) if proj.is_empty() => Some((func, *l)),
            _ => None,
        }
    }
}

/// Replaces the held locks of `set` that `pick` selects by `to`, each in its mode.
fn replace_locks(set: &mut SmallSet<Held>, pick: impl Fn(&Held) -> bool, to: LockId) {
    let modes: SmallVec<[LockMode; 2]> = set.iter().filter(|h| pick(h)).map(|h| h.mode).collect();
    if modes.is_empty() {
        return;
    }
    set.retain(|h| !pick(h));
    for mode in modes {
        set.insert(Held { lock: to, mode });
    }
}

/// Reads `cond` as a test of a trylock result in `local`: `Some(true)` when the branch taken
/// means success (result 0).
fn trylock_test(cond: &Expr, branch: bool, local: LocalId) -> Option<bool> {
    let is_local = |e: &Expr| {
        matches!(&crate::ir::visit::strip_casts(e).kind, ExprKind::Load(lv)
            if lv.proj.is_empty() && lv.host == Host::Var(Var::Local(local)))
    };
    let cond = crate::ir::visit::strip_casts(cond);
    if is_local(cond) {
        return Some(!branch); // `if (r)`: non-zero = failure
    }
    if let ExprKind::Binary(op, a, b) = &cond.kind {
        let zero = |e: &Expr| crate::ir::visit::strip_casts(e).as_int() == Some(0);
        if (is_local(a) && zero(b)) || (is_local(b) && zero(a)) {
            return match op {
                crate::ir::BinOp::Eq => Some(branch),
                crate::ir::BinOp::Ne => Some(!branch),
                _ => None,
            };
        }
    }
    None
}

impl Merge for LockFact {
    fn merge(facts: &[&LockFact]) -> LockFact {
        let mut it = facts.iter();
        let Some(first) = it.next() else {
            return LockFact::default();
        };
        let mut m = (*first).clone();
        for f in it {
            m.must = m.must.intersection(&f.must);
            m.may = m.may.union(&f.may);
            m.sym = m.sym.intersection(&f.sym);
            m.hist = m.hist.intersection(&f.hist);
            m.guards.retain(|g| f.guards.contains(g));
            let children: SmallVec<[ThreadId; 4]> = f.since_children().collect();
            for c in children {
                let theirs = f.since_of(c).unwrap_or_default();
                let merged = match m.since_of(c) {
                    Some(ours) => ours.intersection(&theirs),
                    None => theirs,
                };
                m.set_since(c, merged);
            }
            for p in &f.pending {
                m.may.insert(p.held);
            }
        }
        // Pending trylocks cannot be tracked through a merge: they stay possible only.
        for p in std::mem::take(&mut m.pending) {
            m.may.insert(p.held);
        }
        m
    }

    /// Level 0: the same locks surely held (plain and symbolic); level 1: the same plain
    /// locks surely held; level 2: any. A fold past the bound then loses the path conditions,
    /// histories and possible locks of paths first, and a lock every folded path holds stays
    /// surely held: a callee context reached with more than `racedar_domains::powerset::CAP`
    /// different entry facts returns each caller's must-lockset, not their intersection.
    fn similar(&self, o: &LockFact, level: u8) -> bool {
        match level {
            0 => self.must == o.must && self.sym == o.sym,
            1 => self.must == o.must,
            _ => true,
        }
    }

    fn covers(&self, o: &LockFact) -> bool {
        self == o
            || (self.must.is_subset(&o.must)
                && self.sym.is_subset(&o.sym)
                && self.hist.is_subset(&o.hist)
                && self.guards.iter().all(|g| o.guards.contains(g))
                && o.since_children()
                    .all(|c| match (self.since_of(c), o.since_of(c)) {
                        (Some(a), Some(b)) => a.is_subset(&b),
                        _ => false,
                    })
                && o.may.is_subset(&self.may)
                && self.pending.is_empty()
                && o.pending.iter().all(|p| self.may.contains(&p.held)))
    }
}

impl<'p, B: Backend<'p>> FactAnalysis for Locksets<'_, 'p, B> {
    type Fact = LockFact;

    fn callees(&mut self, at: At<'_>, _edge: &Edge) -> Callees {
        dataflow::recorded_callees(self.tc, at.ctx, at.edge)
    }

    fn transfer(&mut self, at: At<'_>, edge: &Edge, fact: &LockFact, out: &mut Vec<LockFact>) {
        let start = out.len();
        self.transfer_locks(at, edge, fact, out);
        self.transfer_flags(edge, &mut out[start..]);
        self.transfer_counters(at, edge, &mut out[start..]);
        self.transfer_sym(at, edge, &mut out[start..]);
        self.transfer_history(at, edge, fact, &mut out[start..]);
        self.transfer_guards(at, edge, out, start);
    }

    fn call_entry(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        fact: &LockFact,
    ) -> LockFact {
        let (ctx, eid) = (at.ctx, at.edge);
        let mut fact = fact.clone();
        self.forget_frame_syms(&mut fact, target.func);
        // A recursive call: the outer call's locks relative to the callee's parameters name
        // other objects in the inner one.
        self.forget_relative(&mut fact, target.func);
        guards::forget_frame(&mut fact.guards, target.func);
        let fact = &fact;
        match target.kind {
            CallKind::Plain | CallKind::Callback(_) => fact.clone(),
            CallKind::Atomic => Self::add(
                fact,
                Held {
                    lock: LockId::ATOMIC,
                    mode: LockMode::Write,
                },
            ),
            CallKind::Once => {
                // Several candidate once-controls: one of them is held, none for sure.
                let mut f = fact.clone();
                let locks = self.once_locks(ctx, eid, edge);
                for &l in &locks {
                    let h = Held {
                        lock: l,
                        mode: LockMode::Write,
                    };
                    if locks.len() == 1 {
                        f.must.insert(h);
                    }
                    f.may.insert(h);
                }
                f
            }
        }
    }

    fn call_exit(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        _pre: &LockFact,
        exit: &LockFact,
    ) -> LockFact {
        let (ctx, eid) = (at.ctx, at.edge);
        let mut f = match target.kind {
            CallKind::Plain | CallKind::Callback(_) => exit.clone(),
            CallKind::Atomic => Self::release(exit, LockId::ATOMIC),
            CallKind::Once => {
                let mut f = exit.clone();
                let locks = self.once_locks(ctx, eid, edge);
                for &l in &locks {
                    f = Self::release(&f, l);
                    let h = Held {
                        lock: l,
                        mode: LockMode::Read,
                    };
                    if locks.len() == 1 {
                        f.must.insert(h);
                    }
                    f.may.insert(h);
                }
                f
            }
        };
        // The callee's locks relative to its parameters are renamed into the caller's terms.
        self.rebase_relative(&mut f, ctx, eid, target);
        // The call's result overwrites a pending trylock key.
        if let Op::Call { dest, .. } = &edge.op {
            f = self.clear_key(&f, self.tc.ctx(ctx).func, dest.as_ref());
        }
        self.forget_frame_syms(&mut f, target.func);
        guards::forget_frame(&mut f.guards, target.func);
        if let Op::Call { dest: Some(lv), .. } = &edge.op {
            self.store_guards(&mut f, self.tc.ctx(ctx).func, lv, None);
        }
        f
    }
}

impl<'p, B: Backend<'p>> Locksets<'_, 'p, B> {
    /// Guards ([`crate::guards`]) after `edge` for the facts `out[start..]`: a branch test on a
    /// guard local is recorded, and the facts it contradicts are dropped; a store of a guard
    /// local shifts, sets or forgets its guards.
    fn transfer_guards(&self, at: At<'_>, edge: &Edge, out: &mut Vec<LockFact>, start: usize) {
        if self.guard_locals.is_empty() {
            return;
        }
        let func = self.tc.ctx(at.ctx).func;
        match &edge.op {
            Op::Assume { cond, branch } => {
                let Some(g) = guards::branch_guard(func, cond, *branch, self.guard_locals) else {
                    return;
                };
                let mut kept = out.split_off(start);
                kept.retain_mut(|f| match guards::assume(&f.guards, g) {
                    Some(gs) => {
                        f.guards = gs;
                        true
                    }
                    None => false,
                });
                out.extend(kept);
            }
            Op::Assign { lhs, rhs } => {
                for f in &mut out[start..] {
                    self.store_guards(f, func, lhs, Some(rhs));
                }
            }
            Op::Call { dest: Some(lv), .. } => {
                // Calls with bodies store their result in `call_exit`; the others here.
                for f in &mut out[start..] {
                    self.store_guards(f, func, lv, None);
                }
            }
            _ => {}
        }
    }

    /// The guards of `f` after a store of `rhs` (`None`: unknown) to `lhs` in `func`.
    fn store_guards(&self, f: &mut LockFact, func: FuncId, lhs: &Lval, rhs: Option<&Expr>) {
        // Only guard locals carry guards (integers: a store to one has no projection).
        let Some(l) = crate::ir::visit::whole_local(lhs) else {
            return;
        };
        if self.guard_locals.contains(&(func, l)) {
            guards::assign(&mut f.guards, func, l, rhs);
        }
    }

    /// Drops the symbolic locks over locals of `g`: at a call of `g` its locals are new ones,
    /// at its return they are gone.
    fn forget_frame_syms(&self, f: &mut LockFact, g: FuncId) {
        if f.sym.is_empty() {
            return;
        }
        let table = &*self.table;
        f.sym
            .retain(|id| table.sym(*id).is_none_or(|s| s.func != g));
    }

    /// The transfer function on address locksets.
    fn transfer_locks(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        fact: &LockFact,
        out: &mut Vec<LockFact>,
    ) {
        let (ctx, eid) = (at.ctx, at.edge);
        let func = self.tc.ctx(ctx).func;
        // Branches the backend proves impossible are not followed.

        if matches!(edge.op, Op::Assume { .. })
            && !self.backend.feasible(&self.tc.context(ctx, eid))
        {
            return;
        }
        match &edge.op {
            Op::Call {
                callee: Callee::Direct(f),
                args,
                dest,
            } => {
                let role = self.roles.get(*f).cloned();
                match role {
                    Some(Role::Lock {
                        lock,
                        mode,
                        kind,
                        relock_fails,
                    }) => {
                        let Some(arg) = args.get(lock) else {
                            out.push(fact.clone());
                            return;
                        };
                        match self.lock_or_path(ctx, eid, lock, arg) {
                            Some(locks) => {
                                let fails = relock_fails && self.relock_fails(fact, &locks, mode);
                                for l in locks {
                                    let h = Held { lock: l, mode };
                                    match kind {
                                        // A self-deadlock: the call never returns.
                                        LockKind::Blocking if fails => {}
                                        LockKind::Blocking => out.push(Self::add(fact, h)),
                                        LockKind::Try => {
                                            let mut f = fact.clone();
                                            f.may.insert(h);
                                            let key = Self::result_key(func, dest);
                                            if key.is_some() {
                                                f.pending.push(Pending {
                                                    held: h,
                                                    key,
                                                    fails,
                                                });
                                                f.pending.sort();
                                                f.pending.dedup();
                                            }
                                            out.push(f);
                                        }
                                    }
                                }
                            }
                            None => {
                                let mut f = fact.clone();
                                f.may.insert(Held {
                                    lock: LockId::UNKNOWN,
                                    mode,
                                });
                                out.push(f);
                            }
                        }
                    }
                    Some(Role::Unlock { lock }) => {
                        let target = args
                            .get(lock)
                            .and_then(|a| self.lock_or_path(ctx, eid, lock, a));
                        match target {
                            Some(locks) => {
                                let known = self.unlocks.entry((ctx, eid)).or_default();
                                for l in &locks {
                                    if !known.contains(l) {
                                        known.push(*l);
                                    }
                                }
                                for l in locks {
                                    let mut f = self.unlock(fact, l);
                                    self.forget_aliases(&mut f, l);
                                    out.push(f);
                                }
                            }
                            None => {
                                // Unknown: one of the held locks is released, or none (the
                                // lock named may not be held: an error-checking mutex's
                                // unlock then fails), so no lock is surely released.
                                let held: Vec<LockId> = fact
                                    .may
                                    .iter()
                                    .map(|h| h.lock)
                                    .filter(|l| *l != LockId::ATOMIC)
                                    .collect();
                                out.push(fact.clone());
                                for l in held {
                                    out.push(self.unlock(fact, l));
                                }
                            }
                        }
                    }
                    Some(Role::SemWait { sem, kind }) => {
                        let mut f = fact.clone();
                        let ids = args.get(sem).and_then(|a| self.targets(ctx, eid, a));
                        if let Some(ids) = ids.as_ref().filter(|ids| {
                            !ids.is_empty() && ids.iter().all(|l| self.binary.contains(l))
                        }) {
                            // A binary semaphore: taken like a mutex, one fork per candidate.
                            for &l in ids {
                                let h = Held {
                                    lock: l,
                                    mode: LockMode::Write,
                                };
                                match kind {
                                    LockKind::Blocking => out.push(Self::add(fact, h)),
                                    LockKind::Try => {
                                        let mut f = fact.clone();
                                        f.may.insert(h);
                                        let key = Self::result_key(func, dest);
                                        if key.is_some() {
                                            f.pending.push(Pending {
                                                held: h,
                                                key,
                                                fails: false,
                                            });
                                            f.pending.sort();
                                            f.pending.dedup();
                                        }
                                        out.push(f);
                                    }
                                }
                            }
                            return;
                        }
                        // A blocking wait on one handshake semaphore returns after a post.
                        if let (LockKind::Blocking, Some([l])) =
                            (kind, ids.as_ref().map(|i| i.as_slice()))
                            && self.handshake.contains(l)
                        {
                            f.must.insert(Held {
                                lock: self.table.handshake_of(*l, false),
                                mode: LockMode::Read,
                            });
                        }
                        for l in ids.unwrap_or_else(|| SmallVec::from_slice(&[LockId::UNKNOWN])) {
                            f.may.insert(Held {
                                lock: l,
                                mode: LockMode::Write,
                            });
                        }
                        out.push(f);
                    }
                    Some(Role::SemPost { sem }) => {
                        let ids = args.get(sem).and_then(|a| self.targets(ctx, eid, a));
                        let mut f = fact.clone();
                        for l in ids.unwrap_or_default() {
                            if self.handshake.contains(&l) {
                                f.may.insert(Held {
                                    lock: self.table.handshake_of(l, true),
                                    mode: LockMode::Read,
                                });
                            }
                            f = Self::release(&f, l);
                        }
                        out.push(f);
                    }
                    Some(Role::BarrierWait { barrier }) => {
                        let ids = args.get(barrier).and_then(|a| self.targets(ctx, eid, a));
                        let mut f = fact.clone();
                        if let Some(ids) = ids {
                            for &l in &ids {
                                let h = Held {
                                    lock: self.table.barrier_of(l),
                                    mode: LockMode::Read,
                                };
                                if ids.len() == 1 {
                                    f.must.insert(h);
                                }
                                f.may.insert(h);
                            }
                        }
                        out.push(f);
                    }
                    Some(Role::AtomicBegin) => out.push(Self::add(
                        fact,
                        Held {
                            lock: LockId::ATOMIC,
                            mode: LockMode::Write,
                        },
                    )),
                    Some(Role::AtomicEnd) => out.push(Self::release(fact, LockId::ATOMIC)),
                    Some(Role::Once { control, .. }) => {
                        // The routine was not analysed as a call: the caller holds the once-lock
                        // in read mode from now on.
                        let ids = args.get(control).and_then(|a| {
                            lock_targets(
                                self.program,
                                self.backend,
                                self.graph,
                                self.tc,
                                ctx,
                                eid,
                                a,
                                self.table,
                                true,
                            )
                        });
                        match ids {
                            Some(ids) => {
                                let mut f = fact.clone();
                                for &l in &ids {
                                    let h = Held {
                                        lock: l,
                                        mode: LockMode::Read,
                                    };
                                    if ids.len() == 1 {
                                        f.must.insert(h);
                                    }
                                    f.may.insert(h);
                                }
                                out.push(f);
                            }
                            None => out.push(fact.clone()),
                        }
                    }
                    Some(r) if r.ends_path() => {}
                    _ => out.push(self.clear_key(fact, func, dest.as_ref())),
                }
            }
            Op::Call { dest, .. } => out.push(self.clear_key(fact, func, dest.as_ref())),
            Op::Assign { lhs, .. } => out.push(self.clear_key(fact, func, Some(lhs))),
            Op::Assume { cond, branch } if !fact.pending.is_empty() => {
                let mut f = fact.clone();
                let mut resolved = Vec::new();
                for (i, p) in fact.pending.iter().enumerate() {
                    let Some((pf, local)) = p.key else { continue };
                    if pf != func {
                        continue;
                    }
                    if let Some(success) = trylock_test(cond, *branch, local) {
                        resolved.push((i, success));
                    }
                }
                for (i, success) in resolved.into_iter().rev() {
                    let p = f.pending.remove(i);
                    if success && p.fails {
                        // A retake of a held lock that cannot succeed.
                        return;
                    }
                    if success {
                        f.must.insert(p.held);
                        f.may.insert(p.held);
                    } else if !f.must.contains(&p.held) {
                        f.may.remove(&p.held);
                    }
                }
                out.push(f);
            }
            _ => out.push(fact.clone()),
        }
    }

    /// Symbolic locks after `edge`: taken by a blocking lock of `&O.m`, dropped by an unlock
    /// that may release them or a write to a local they read.
    fn transfer_sym(&mut self, at: At<'_>, edge: &Edge, outs: &mut [LockFact]) {
        let (Op::Call { .. } | Op::Assign { .. }) = &edge.op else {
            return;
        };
        let func = self.tc.ctx(at.ctx).func;
        let qctx = self.tc.context(at.ctx, at.edge);
        let (program, backend, graph) = (self.program, self.backend, self.graph);
        // The symbolic lock a lock argument names: an instance's member (through the address
        // the argument surely holds, `m = &s->mutex`, when the backend knows it) or an array
        // element.
        let named = |a: &Expr| {
            let alias = backend.alias(&qctx, a);
            sym_lock(program, func, a, alias.clone()).or_else(|| {
                alias
                    .as_ref()
                    .and_then(|x| elem_sym_lock(program, backend, graph, &qctx, x))
                    .or_else(|| elem_sym_lock(program, backend, graph, &qctx, a))
            })
        };
        let written: Option<LocalId> = match &edge.op {
            Op::Assign { lhs, .. }
            | Op::Call {
                dest: Some(lhs), ..
            } => match lhs.host {
                Host::Var(Var::Local(l)) => Some(l),
                _ => None,
            },
            _ => None,
        };
        let role = match &edge.op {
            Op::Call {
                callee: Callee::Direct(f),
                ..
            } => self.roles.get(*f).cloned(),
            _ => None,
        };
        let args: &[Expr] = match &edge.op {
            Op::Call { args, .. } => args,
            _ => &[],
        };
        // Only exclusive locks exclude: two readers holding one read lock both proceed.
        let (taken, released) = match &role {
            Some(Role::Lock {
                lock,
                kind: LockKind::Blocking,
                mode: LockMode::Write,
                ..
            }) => (args.get(*lock).and_then(named), None),
            Some(Role::Unlock { lock }) => (None, args.get(*lock).and_then(named)),
            _ => (None, None),
        };
        let table = &mut *self.table;
        // Without a symbolic name, the objects an unlock may release (`None`: unknown).
        let concrete: Option<SmallVec<[Base; 2]>> = match (&role, &released) {
            (Some(Role::Unlock { lock }), None) => args.get(*lock).and_then(|a| {
                lock_targets(
                    program, backend, graph, self.tc, at.ctx, at.edge, a, table, false,
                )
                .map(|ids| {
                    ids.iter()
                        .filter_map(|l| match table.key(*l) {
                            LockKey::Addr(b, _) => Some(b),
                            _ => None,
                        })
                        .collect()
                })
            }),
            _ => None,
        };
        for f in outs.iter_mut() {
            if let Some(l) = written {
                f.sym.retain(|id| {
                    table
                        .sym(*id)
                        .is_none_or(|s| s.func != func || !s.deps.contains(&l))
                });
            }
            match &role {
                Some(Role::Lock { .. }) => {
                    if let Some(s) = &taken {
                        f.sym.insert(table.intern_sym(s.clone()));
                    }
                }
                Some(Role::Unlock { .. }) => {
                    // The unlock releases its own symbolic lock, and may release any lock of the
                    // same field of another instance expression, or any element of the same
                    // lock array; a known lock object releases no element of an array in
                    // another object.
                    f.sym
                        .retain(|id| match (table.sym(*id), &released, &concrete) {
                            (Some(h), Some(r), _) => {
                                h != r
                                    && match (&h.elem, &r.elem) {
                                        (None, None) => {
                                            (h.comp, h.lock_off) != (r.comp, r.lock_off)
                                        }
                                        // Arrays in different objects share no element.
                                        (Some((a, _)), Some((b, _))) => a.0 != b.0,
                                        _ => false,
                                    }
                            }
                            (Some(h), None, Some(bases)) => {
                                h.elem.as_ref().is_some_and(|(a, _)| !bases.contains(&a.0))
                            }
                            _ => false,
                        });
                }
                _ => {}
            }
        }
    }

    fn once_locks(&mut self, ctx: FnCtxId, eid: EdgeId, edge: &Edge) -> SmallVec<[LockId; 2]> {
        let Op::Call {
            callee: Callee::Direct(f),
            args,
            ..
        } = &edge.op
        else {
            return SmallVec::new();
        };
        let Some(Role::Once { control, .. }) = self.roles.get(*f) else {
            return SmallVec::new();
        };
        args.get(*control)
            .and_then(|a| {
                lock_targets(
                    self.program,
                    self.backend,
                    self.graph,
                    self.tc,
                    ctx,
                    eid,
                    a,
                    self.table,
                    true,
                )
            })
            .unwrap_or_default()
    }

    /// Drops pending trylocks whose result local `lhs` overwrites.
    fn clear_key(&self, fact: &LockFact, func: FuncId, lhs: Option<&Lval>) -> LockFact {
        let Some(Lval {
            host: Host::Var(Var::Local(l)),
            ..
        }) = lhs
        else {
            return fact.clone();
        };
        if !fact.pending.iter().any(|p| p.key == Some((func, *l))) {
            return fact.clone();
        }
        let mut f = fact.clone();
        f.pending.retain(|p| p.key != Some((func, *l)));
        f
    }
}

/// The must- and may-locksets at a program point.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct LocksAt {
    /// Held on every path.
    pub must: SmallSet<Held>,
    /// Held on some path (includes the unknown lock when an unknown lock may be held).
    pub may: SmallSet<Held>,
    /// Symbolic locks ([`SymLock`]) held on every path.
    pub sym: SmallSet<u32>,
    /// Locks taken in write mode earlier on every path of the thread.
    pub hist: SmallSet<LockId>,
    /// Per child, the write-mode locks held without a break since its creation, on every path
    /// that created it (children never created here are absent).
    pub since: SinceSets,
}

impl LocksAt {
    /// The locks held without a break since child `c` was created (empty when unknown).
    pub fn since(&self, c: ThreadId) -> SmallSet<LockId> {
        self.since
            .iter()
            .find(|(x, _)| *x == c)
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }
}

/// A counter that orders the accesses of its workers before those of a waiter
/// ([`crate::counters`], [`LocksetResult::counter_orders`]).
#[derive(Clone, Debug)]
struct CounterJoin {
    /// The waiter: a unique thread that tests the counter and never stores it.
    waiter: ThreadId,
    /// The threads that store the counter, each adding once and then subtracting once.
    workers: SmallVec<[ThreadId; 4]>,
    /// "Has subtracted" of the counter.
    dec: LockId,
    /// "Seen zero after a full count", when the waiter's full counts are valid.
    zero_full: Option<LockId>,
    /// "Seen zero after adding once per creation", when the waiter adds and the workers
    /// only subtract.
    zero_outer: Option<LockId>,
    /// For each flag the waiter alone sets: "seen zero after setting the flag" and "gate
    /// open" of the flag and the counter.
    gates: SmallVec<[(LockId, LockId); 1]>,
}

/// Lockset results of all threads.
pub struct LocksetResult {
    /// Lock identities.
    pub table: LockTable,
    /// Per thread (threads with equal answers share one).
    solutions: Vec<SharedSolution>,
    /// Semaphore waits and posts on binary semaphores ([`LocksetResult::sem_is_mutex`]).
    sem_mutex_ops: FxHashSet<(ThreadId, FnCtxId, EdgeId)>,
    /// Barriers that order their participants ([`LocksetResult::barrier_orders`]): pseudo-lock
    /// and participant threads.
    barriers: FxHashMap<LockId, SmallVec<[ThreadId; 4]>>,
    /// Flags with one setter, a unique thread: the flag's "seen" pseudo-lock, its "set"
    /// pseudo-lock and the setter ([`LocksetResult::flag_orders`]).
    flag_setters: FxHashMap<LockId, (LockId, ThreadId)>,
    /// Counters that join workers to their waiter ([`LocksetResult::counter_orders`]).
    counter_joins: Vec<CounterJoin>,
    /// Handshake semaphores ([`crate::semaphores`]): "passed" pseudo-lock, "posted"
    /// pseudo-lock and the poster ([`LocksetResult::handshake_orders`]).
    handshakes: FxHashMap<LockId, (LockId, ThreadId)>,
    /// Semaphore waits and posts on handshake semaphores
    /// ([`LocksetResult::sem_is_handshake`]).
    handshake_ops: FxHashSet<(ThreadId, FnCtxId, EdgeId)>,
    /// Per thread, the known candidates of each unlock statement.
    unlocks: Vec<UnlockTargets>,
}

impl LocksetResult {
    /// No thread analysed.
    pub fn empty() -> LocksetResult {
        LocksetResult {
            table: LockTable::default(),
            solutions: Vec::new(),
            sem_mutex_ops: FxHashSet::default(),
            barriers: FxHashMap::default(),
            flag_setters: FxHashMap::default(),
            counter_joins: Vec::new(),
            handshakes: FxHashMap::default(),
            handshake_ops: FxHashSet::default(),
            unlocks: Vec::new(),
        }
    }

    /// Runs the lockset analysis on every thread.
    pub fn compute<'p, B: Backend<'p>>(
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
    ) -> LocksetResult {
        let mut table = LockTable::default();
        let mutex_types = mutex_types(program, roles);
        // Binary semaphores (module docs): assume every candidate, check its posts on the
        // result, and solve again without the ones that fail (each round drops at least one).
        let mut binary = init_candidates(program, roles, backend, graph, &mut table, 1);
        // Handshake semaphores ([`crate::semaphores`]): candidates, checked on the result.
        let handshake = init_candidates(program, roles, backend, graph, &mut table, 0);
        let flags = flag_candidates(program);
        let counters = crate::counters::Counters::find(program, roles);
        let guard_locals = guards::guard_locals(program, roles);
        loop {
            let (solutions, unlocks) = Self::solve(
                program,
                roles,
                backend,
                graph,
                &mut table,
                mutex_types,
                &binary,
                &handshake,
                &flags,
                &counters,
                &guard_locals,
            );
            let mut result = LocksetResult {
                table,
                solutions,
                sem_mutex_ops: FxHashSet::default(),
                barriers: FxHashMap::default(),
                flag_setters: FxHashMap::default(),
                counter_joins: Vec::new(),
                handshakes: FxHashMap::default(),
                handshake_ops: FxHashSet::default(),
                unlocks,
            };
            let failed = result.unheld_posts(program, roles, backend, graph, &binary);
            if failed.is_empty() || binary.is_empty() {
                result.sem_mutex_ops = result.sem_ops_on(program, roles, backend, graph, &binary);
                result.barriers = result.ordering_barriers(program, roles, backend, graph);
                result.flag_setters = result.flag_setters(program, graph, &flags);
                result.counter_joins = result.counter_joins(program, graph, &counters);
                result.handshakes = result.handshakes(program, roles, backend, graph, &handshake);
                return result;
            }
            binary.retain(|l| !failed.contains(l));
            table = result.table;
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn solve<'p, B: Backend<'p>>(
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
        table: &mut LockTable,
        mutex_types: MutexTypes,
        binary: &FxHashSet<LockId>,
        handshake: &FxHashSet<LockId>,
        flags: &FxHashMap<GlobalId, (i128, i128)>,
        counters: &crate::counters::Counters,
        guard_locals: &FxHashSet<(FuncId, LocalId)>,
    ) -> (Vec<SharedSolution>, Vec<UnlockTargets>) {
        let contexts = &graph.contexts;
        let mut solutions: Vec<SharedSolution> = Vec::with_capacity(contexts.len());
        let mut unlocks: Vec<UnlockTargets> = Vec::with_capacity(contexts.len());
        let share = backend.thread_independent();
        for (i, tc) in contexts.iter().enumerate() {
            // Threads with the same function contexts get the same answers: one solution.
            if share
                && let Some(j) = contexts[..i]
                    .iter()
                    .position(|o| o.entry == tc.entry && o.ctxs == tc.ctxs && o.calls == tc.calls)
            {
                let same = std::sync::Arc::clone(&solutions[j]);
                solutions.push(same);
                let known = unlocks[j].clone();
                unlocks.push(known);
                continue;
            }
            let mut known = FxHashMap::default();
            let mut a = Locksets {
                program,
                roles,
                backend,
                graph,
                tc,
                table: &mut *table,
                mutex_types,
                callers: paths::Callers::new(tc),
                binary,
                handshake,
                flags,
                counters,
                unlocks: &mut known,
                guard_locals,
                _p: std::marker::PhantomData,
            };
            let _ = a.program;
            let init = dataflow::initial_facts(LockFact::default());
            let sol = dataflow::solve(
                program,
                tc.clone(),
                &mut dataflow::Disjunctive(&mut a),
                init,
                u64::MAX,
            );
            sol.log_fact_counts("locksets");
            solutions.push(std::sync::Arc::new(sol));
            unlocks.push(known);
        }
        (solutions, unlocks)
    }

    /// The semaphores of `binary` that some reachable `sem_post` may release without its thread
    /// holding them on every path (all of `binary` when a post's semaphore is unknown).
    fn unheld_posts<'p, B: Backend<'p>>(
        &mut self,
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
        binary: &FxHashSet<LockId>,
    ) -> FxHashSet<LockId> {
        let mut failed = FxHashSet::default();
        if binary.is_empty() {
            return failed;
        }
        for (thread, ctx, eid, node, arg) in sem_calls(program, roles, graph, true) {
            if !self.reachable(thread, ctx, node) {
                continue;
            }
            let tc = graph.contexts(thread);
            let targets = arg.and_then(|a| {
                lock_targets(
                    program,
                    backend,
                    graph,
                    tc,
                    ctx,
                    eid,
                    a,
                    &mut self.table,
                    false,
                )
            });
            let Some(targets) = targets else {
                return binary.clone();
            };
            let held = self
                .at(thread, ctx, node)
                .map(|at| at.must)
                .unwrap_or_default();
            for l in &targets {
                let h = Held {
                    lock: *l,
                    mode: LockMode::Write,
                };
                if binary.contains(l) && (targets.len() != 1 || !held.contains(&h)) {
                    failed.insert(*l);
                }
            }
        }
        failed
    }

    /// The reachable semaphore waits and posts whose semaphores are all in `binary`.
    fn sem_ops_on<'p, B: Backend<'p>>(
        &mut self,
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
        binary: &FxHashSet<LockId>,
    ) -> FxHashSet<(ThreadId, FnCtxId, EdgeId)> {
        let mut out = FxHashSet::default();
        if binary.is_empty() {
            return out;
        }
        for post in [false, true] {
            for (thread, ctx, eid, node, arg) in sem_calls(program, roles, graph, post) {
                if !self.reachable(thread, ctx, node) {
                    continue;
                }
                let tc = graph.contexts(thread);
                let targets = arg.and_then(|a| {
                    lock_targets(
                        program,
                        backend,
                        graph,
                        tc,
                        ctx,
                        eid,
                        a,
                        &mut self.table,
                        false,
                    )
                });
                if targets.is_some_and(|t| !t.is_empty() && t.iter().all(|l| binary.contains(l))) {
                    out.insert((thread, ctx, eid));
                }
            }
        }
        out
    }

    /// Barriers whose waits order their participants: every `pthread_barrier_init` of the
    /// barrier gives the same constant count `n`; the threads that may wait on it are unique,
    /// each with one wait statement that runs at most once per run (in a context that runs
    /// once, outside loops), and there are at most `n` of them. Then no participant passes
    /// before every participant has arrived. Barriers whose waits or initialisations name an
    /// unknown object make every barrier unordered.
    fn ordering_barriers<'p, B: Backend<'p>>(
        &mut self,
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
    ) -> FxHashMap<LockId, SmallVec<[ThreadId; 4]>> {
        let mut waits: FxHashMap<LockId, SmallVec<[ThreadId; 4]>> = FxHashMap::default();
        let mut bad: FxHashSet<LockId> = FxHashSet::default();
        let mut counts: FxHashMap<LockId, Option<i128>> = FxHashMap::default();
        for tc in &graph.contexts {
            let unique = graph.thread(tc.thread).unique;
            let mut once = crate::threads::runs_at_most_once(program, tc);
            for c in tc.ids() {
                let Some(cfg) = &program.function(tc.ctx(c).func).body else {
                    continue;
                };
                for (ei, e) in cfg.edges.iter().enumerate() {
                    let Op::Call {
                        callee: Callee::Direct(f),
                        args,
                        ..
                    } = &e.op
                    else {
                        continue;
                    };
                    let eid = EdgeId(ei as u32);
                    let (arg, count) = match roles.get(*f) {
                        Some(Role::BarrierWait { barrier }) => (args.get(*barrier), None),
                        Some(Role::BarrierInit { barrier, count }) => {
                            (args.get(*barrier), Some(args.get(*count)))
                        }
                        _ => continue,
                    };
                    let targets = arg.and_then(|a| {
                        lock_targets(
                            program,
                            backend,
                            graph,
                            tc,
                            c,
                            eid,
                            a,
                            &mut self.table,
                            false,
                        )
                    });
                    let Some(targets) = targets else {
                        return FxHashMap::default();
                    };
                    let ids: SmallVec<[LockId; 2]> =
                        targets.iter().map(|l| self.table.barrier_of(*l)).collect();
                    match count {
                        Some(n) => {
                            let n = n.and_then(|n| {
                                let r = backend.value(&tc.context(c, eid), n);
                                r.lo.filter(|lo| r.hi == Some(*lo) && ids.len() == 1)
                            });
                            for l in ids {
                                let prev = counts.entry(l).or_insert(n);
                                if *prev != n {
                                    *prev = None;
                                }
                            }
                        }
                        None => {
                            if !self.reachable(tc.thread, c, e.src) {
                                continue;
                            }
                            for l in ids.iter() {
                                let w = waits.entry(*l).or_default();
                                if !unique
                                    || ids.len() != 1
                                    || !once(c, eid)
                                    || w.contains(&tc.thread)
                                {
                                    bad.insert(*l);
                                }
                                w.push(tc.thread);
                            }
                        }
                    }
                }
            }
        }
        waits.retain(|l, ts| {
            !bad.contains(l)
                && counts
                    .get(l)
                    .copied()
                    .flatten()
                    .is_some_and(|n| ts.len() as i128 <= n)
        });
        waits
    }

    /// The flags whose every reachable store runs in one unique thread.
    fn flag_setters(
        &mut self,
        program: &Program,
        graph: &ThreadGraph,
        flags: &FxHashMap<GlobalId, (i128, i128)>,
    ) -> FxHashMap<LockId, (LockId, ThreadId)> {
        let mut setters: FxHashMap<GlobalId, SmallVec<[ThreadId; 2]>> = FxHashMap::default();
        if flags.is_empty() {
            return FxHashMap::default();
        }
        for tc in &graph.contexts {
            for c in tc.ids() {
                let Some(cfg) = &program.function(tc.ctx(c).func).body else {
                    continue;
                };
                for e in &cfg.edges {
                    if let Op::Assign { lhs, .. } = &e.op
                        && let Host::Var(Var::Global(g)) = lhs.host
                        && flags.contains_key(&g)
                        && self.reachable(tc.thread, c, e.src)
                    {
                        let s = setters.entry(g).or_default();
                        if !s.contains(&tc.thread) {
                            s.push(tc.thread);
                        }
                    }
                }
            }
        }
        let mut setters: Vec<(GlobalId, SmallVec<[ThreadId; 2]>)> = setters.into_iter().collect();
        setters.sort();
        let mut out = FxHashMap::default();
        for (g, ts) in setters {
            if let [t] = ts.as_slice()
                && graph.thread(*t).unique
            {
                let seen = self.table.intern(LockKey::FlagSeen(g));
                let set = self.table.intern(LockKey::FlagSet(g));
                out.insert(seen, (set, *t));
            }
        }
        out
    }

    /// The counters that join workers to a waiter ([`crate::counters`]): checks the module's
    /// conditions 1–3 on the locksets, and, for the full-count way, that the waiter's full
    /// tests lie in its entry function, which nothing calls, and that it created every worker
    /// there.
    fn counter_joins(
        &mut self,
        program: &Program,
        graph: &ThreadGraph,
        counters: &crate::counters::Counters,
    ) -> Vec<CounterJoin> {
        let mut out = Vec::new();
        if counters.is_empty() || graph.truncated {
            return out;
        }
        let mut cs: Vec<(GlobalId, i128)> = counters.step.iter().map(|(g, k)| (*g, *k)).collect();
        cs.sort();
        // Functions called directly or whose address is taken (entries that may run again).
        let mut called = crate::ir::specialise::address_taken(program);
        for f in &program.functions {
            let Some(cfg) = &f.body else { continue };
            called.extend(cfg.edges.iter().filter_map(|e| e.op.direct_callee()));
        }
        for (c, k) in cs {
            let inc = self.table.intern(LockKey::CountInc(c));
            let dec = self.table.intern(LockKey::CountDec(c));
            // Every store keeps the inner discipline (add once, then subtract once).
            let mut ok = true;
            // Per storing thread: (adds, subtracts, every subtraction is its first and no
            // addition came before it).
            let mut kinds: Vec<(ThreadId, bool, bool, bool)> = Vec::new();
            // Per testing thread: whether it has a full test outside its entry function.
            let mut testers: Vec<(ThreadId, bool)> = Vec::new();
            let mut common: Option<SmallSet<LockId>> = None;
            for tc in &graph.contexts {
                for cx in tc.ids() {
                    let func = tc.ctx(cx).func;
                    let Some(cfg) = &program.function(func).body else {
                        continue;
                    };
                    for (i, e) in cfg.edges.iter().enumerate() {
                        let eid = EdgeId(i as u32);
                        let store = crate::counters::update(&e.op).filter(|(g, _)| *g == c);
                        let (zero, full) = match &e.op {
                            Op::Assume { cond, branch } => (
                                crate::counters::zero_tested(program, cond, *branch) == Some(c),
                                counters.full.contains_key(&(func, eid)),
                            ),
                            _ => (false, false),
                        };
                        if store.is_none() && !zero && !full {
                            continue;
                        }
                        let Some(locks) = self.at(tc.thread, cx, e.src) else {
                            continue;
                        };
                        let real: SmallSet<LockId> = locks
                            .must
                            .iter()
                            .filter(|h| {
                                h.mode == LockMode::Write
                                    && matches!(self.table.key(h.lock), LockKey::Addr(..))
                            })
                            .map(|h| h.lock)
                            .collect();
                        common = Some(match common {
                            Some(x) => x.intersection(&real),
                            None => real,
                        });
                        let holds =
                            |l: LockId, set: &SmallSet<Held>| set.iter().any(|h| h.lock == l);
                        if let Some((_, d)) = store {
                            let fine = if d > 0 {
                                d == k && !holds(inc, &locks.may) && !holds(dec, &locks.may)
                            } else {
                                d == -k && holds(inc, &locks.must) && !holds(dec, &locks.may)
                            };
                            ok &= fine;
                            let first_sub =
                                d == -k && !holds(inc, &locks.may) && !holds(dec, &locks.may);
                            match kinds.iter_mut().find(|(t, ..)| *t == tc.thread) {
                                Some((_, adds, subs, subs_ok)) => {
                                    *adds |= d > 0;
                                    *subs |= d < 0;
                                    *subs_ok &= d > 0 || first_sub;
                                }
                                None => kinds.push((tc.thread, d > 0, d < 0, d > 0 || first_sub)),
                            }
                        } else {
                            let entry = graph.thread(tc.thread).entry;
                            let outside = full && func != entry;
                            match testers.iter_mut().find(|(t, _)| *t == tc.thread) {
                                Some((_, o)) => *o |= outside,
                                None => testers.push((tc.thread, outside)),
                            }
                        }
                    }
                }
            }
            if common.is_none_or(|x| x.is_empty()) {
                continue;
            }
            let mut writers: SmallVec<[ThreadId; 4]> = kinds.iter().map(|(t, ..)| *t).collect();
            writers.sort();
            if writers.iter().any(|w| graph.thread(*w).signal) {
                continue;
            }
            for (p, outside) in testers {
                let th = graph.thread(p);
                if !th.unique {
                    continue;
                }
                // Every worker was created by the waiter's entry function, which runs once.
                let created_here = |workers: &[ThreadId]| {
                    !called.contains(&th.entry)
                        && workers.iter().all(|w| {
                            let wt = graph.thread(*w);
                            wt.parents.as_slice() == [p]
                                && wt.site.is_some_and(|s| s.func == th.entry)
                        })
                };
                if writers.contains(&p) {
                    // Outer way: the waiter only adds, every other storing thread subtracts
                    // once and never adds.
                    let workers: SmallVec<[ThreadId; 4]> =
                        writers.iter().copied().filter(|w| *w != p).collect();
                    let outer_ok = kinds.iter().all(|(t, adds, subs, subs_ok)| {
                        if *t == p {
                            !*subs
                        } else {
                            !*adds && *subs && *subs_ok
                        }
                    }) && created_here(&workers);
                    if outer_ok {
                        out.push(CounterJoin {
                            waiter: p,
                            workers,
                            dec,
                            zero_full: None,
                            zero_outer: Some(self.table.intern(LockKey::CountZeroOuter(c))),
                            gates: SmallVec::new(),
                        });
                    }
                    continue;
                }
                if !ok {
                    continue;
                }
                let full_ok = !outside && created_here(&writers);
                let zero_full =
                    (full_ok && k == 1).then(|| self.table.intern(LockKey::CountZeroFull(c)));
                let mut flags: Vec<GlobalId> = self
                    .flag_setters
                    .iter()
                    .filter(|(_, (_, setter))| *setter == p)
                    .filter_map(|(seen, _)| match self.table.key(*seen) {
                        LockKey::FlagSeen(g) => Some(g),
                        _ => None,
                    })
                    .collect();
                flags.sort();
                let gates: SmallVec<[(LockId, LockId); 1]> = flags
                    .into_iter()
                    .map(|g| {
                        (
                            self.table.intern(LockKey::CountZeroFlag(c, g)),
                            self.table.intern(LockKey::GateOpen(g, c)),
                        )
                    })
                    .collect();
                if zero_full.is_none() && gates.is_empty() {
                    continue;
                }
                out.push(CounterJoin {
                    waiter: p,
                    workers: writers.clone(),
                    dec,
                    zero_full,
                    zero_outer: None,
                    gates,
                });
            }
        }
        out
    }

    /// Whether a counter orders access `a` (of thread `ta`, locks `la`) before access `b` (of
    /// `tb`, locks `lb`) ([`crate::counters`]): `ta` is one of its workers and has not
    /// subtracted at `a` on any path, `tb` its waiter and has seen it zero on every path to
    /// `b`, after a full count or after setting a flag whose gate `ta` passed before `a`.
    pub fn counter_orders(&self, ta: ThreadId, la: &LocksAt, tb: ThreadId, lb: &LocksAt) -> bool {
        let holds = |l: LockId, set: &SmallSet<Held>| set.iter().any(|h| h.lock == l);
        ta != tb
            && self.counter_joins.iter().any(|j| {
                j.waiter == tb
                    && j.workers.contains(&ta)
                    && !holds(j.dec, &la.may)
                    && (j.zero_full.is_some_and(|z| holds(z, &lb.must))
                        || j.zero_outer.is_some_and(|z| holds(z, &lb.must))
                        || j.gates
                            .iter()
                            .any(|(zf, go)| holds(*zf, &lb.must) && holds(*go, &la.must)))
            })
    }

    /// Whether a flag orders access `a` (of thread `ta`, locks `la`) before access `b` (of
    /// `tb`, locks `lb`): `ta` is the flag's only setter and has not set it at `a` on any
    /// path, and `tb`, another thread, has seen it set on every path to `b`.
    pub fn flag_orders(&self, ta: ThreadId, la: &LocksAt, tb: ThreadId, lb: &LocksAt) -> bool {
        ta != tb
            && self.flag_setters.iter().any(|(seen, (set, setter))| {
                *setter == ta
                    && lb.must.iter().any(|h| h.lock == *seen)
                    && !la.may.iter().any(|h| h.lock == *set)
            })
    }

    /// Whether a handshake semaphore orders access `a` (of thread `ta`, locks `la`) before
    /// access `b` (of `tb`, locks `lb`) ([`crate::semaphores`]): `ta` is its only poster and
    /// has not posted it at `a` on any path, and `tb`, another thread, has passed a wait on it
    /// on every path to `b`.
    pub fn handshake_orders(&self, ta: ThreadId, la: &LocksAt, tb: ThreadId, lb: &LocksAt) -> bool {
        ta != tb
            && self.handshakes.iter().any(|(passed, (posted, poster))| {
                *poster == ta
                    && lb.must.iter().any(|h| h.lock == *passed)
                    && !la.may.iter().any(|h| h.lock == *posted)
            })
    }

    /// The handshake semaphores among `candidates` ([`crate::semaphores::handshakes`]), by
    /// their pseudo-locks.
    fn handshakes<'p, B: Backend<'p>>(
        &mut self,
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
        candidates: &FxHashSet<LockId>,
    ) -> FxHashMap<LockId, (LockId, ThreadId)> {
        let solutions = &self.solutions;
        let reachable = |t: ThreadId, c: FnCtxId, n: NodeId| {
            solutions
                .get(t.0 as usize)
                .is_some_and(|s| s.reachable(c, n))
        };
        let found = crate::semaphores::handshakes(
            program,
            roles,
            backend,
            graph,
            &mut self.table,
            candidates,
            reachable,
        );
        let mut found: Vec<(LockId, ThreadId)> = found.into_iter().collect();
        found.sort();
        let verified: FxHashSet<LockId> = found.iter().map(|(l, _)| *l).collect();
        self.handshake_ops = self.sem_ops_on(program, roles, backend, graph, &verified);
        found
            .into_iter()
            .map(|(l, t)| {
                (
                    self.table.handshake_of(l, false),
                    (self.table.handshake_of(l, true), t),
                )
            })
            .collect()
    }

    /// Whether a barrier orders access `a` (of thread `ta`, locks `la`) before access `b`
    /// (of `tb`, locks `lb`): both threads take part in an ordering barrier
    /// ([`Self::ordering_barriers`]), `b` comes after `tb`'s wait on every path, and `a`
    /// before `ta`'s wait on every path.
    pub fn barrier_orders(&self, ta: ThreadId, la: &LocksAt, tb: ThreadId, lb: &LocksAt) -> bool {
        ta != tb
            && self.barriers.iter().any(|(l, parts)| {
                parts.contains(&ta)
                    && parts.contains(&tb)
                    && lb.must.iter().any(|h| h.lock == *l)
                    && !la.may.iter().any(|h| h.lock == *l)
            })
    }

    /// Whether the semaphore wait or post `eid` of function context `ctx` of `thread` operates
    /// on a binary semaphore, which the locksets treat as a mutex (module docs).
    pub fn sem_is_mutex(&self, thread: ThreadId, ctx: FnCtxId, eid: EdgeId) -> bool {
        self.sem_mutex_ops.contains(&(thread, ctx, eid))
    }

    /// Whether the semaphore wait or post `eid` of function context `ctx` of `thread` operates
    /// on a handshake semaphore ([`crate::semaphores`]), whose ordering the analysis knows.
    pub fn sem_is_handshake(&self, thread: ThreadId, ctx: FnCtxId, eid: EdgeId) -> bool {
        self.handshake_ops.contains(&(thread, ctx, eid))
    }

    /// The unlock statements of `thread` that release no lock the thread may hold: every
    /// known candidate is surely not held (and no unknown lock may be held) on every path
    /// reaching them. `src` gives an edge's source node. Sorted.
    pub fn unheld_unlocks(
        &self,
        thread: ThreadId,
        src: impl Fn(FnCtxId, EdgeId) -> Option<NodeId>,
    ) -> Vec<(FnCtxId, EdgeId)> {
        let Some(known) = self.unlocks.get(thread.0 as usize) else {
            return Vec::new();
        };
        let mut out: Vec<(FnCtxId, EdgeId)> = known
            .iter()
            .filter(|((c, e), ids)| {
                !ids.is_empty()
                    && src(*c, *e)
                        .and_then(|n| self.at(thread, *c, n))
                        .is_some_and(|l| {
                            !l.may.iter().any(|h| {
                                h.lock == LockId::UNKNOWN
                                    || ids.iter().any(|u| self.table.may_alias(*u, h.lock))
                            })
                        })
            })
            .map(|(k, _)| *k)
            .collect();
        out.sort();
        out
    }

    /// The locksets at `node` of function context `ctx` of `thread` (`None`: unreachable).
    pub fn at(&self, thread: ThreadId, ctx: FnCtxId, node: NodeId) -> Option<LocksAt> {
        let sol = self.solutions.get(thread.0 as usize)?;
        let mut it = dataflow::facts_of(sol.at(ctx, node)?);
        let first = it.next()?;
        let mut must = first.must.clone();
        let mut may = first.may.clone();
        let mut sym = first.sym.clone();
        let mut hist = first.hist.clone();
        let mut acc = first.clone();
        for f in it {
            must = must.intersection(&f.must);
            may = may.union(&f.may);
            sym = sym.intersection(&f.sym);
            hist = hist.intersection(&f.hist);
            let children: SmallVec<[ThreadId; 4]> = f.since_children().collect();
            for c in children {
                let theirs = f.since_of(c).unwrap_or_default();
                let merged = match acc.since_of(c) {
                    Some(ours) => ours.intersection(&theirs),
                    None => theirs,
                };
                acc.set_since(c, merged);
            }
        }
        // Children with nothing held since are left out: `since()` answers empty for them.
        let mut since = acc.since;
        // Locks relative to a parameter name a different lock per call: they exclude and
        // order nothing.
        let table = &self.table;
        if !table.paths.is_empty() {
            must.retain(|h| !table.relative_to(h.lock, None));
            hist.retain(|l| !table.relative_to(*l, None));
            for (_, s) in since.iter_mut() {
                s.retain(|l| !table.relative_to(*l, None));
            }
        }
        Some(LocksAt {
            must,
            may,
            sym,
            hist,
            since,
        })
    }

    /// Whether `node` of `ctx` is reachable in `thread`.
    pub fn reachable(&self, thread: ThreadId, ctx: FnCtxId, node: NodeId) -> bool {
        self.solutions
            .get(thread.0 as usize)
            .is_some_and(|s| s.reachable(ctx, node))
    }
}

/// Locks a thread's parent holds for the thread's whole life (seed 001 §6.1 does not model
/// this; `notes/racerf-goblint.md` §7, pattern 9): held (must) at the create statement and not
/// released (unlock or condition wait) anywhere the thread may still be active. They protect
/// the thread's accesses against every thread but the parent. `may` is the parent's
/// may-lockset at the create statement.
#[derive(Clone, Debug, Default)]
pub struct Inherited {
    /// Surely held by the parent while the thread runs.
    pub must: SmallSet<Held>,
    /// Possibly held by the parent at the creation.
    pub may: SmallSet<Held>,
    /// Possibly held by any creator on the chain from `main` at the creations that led to the
    /// thread (held while an ancestor created it, such a lock may order the thread's accesses
    /// after another thread's critical sections).
    pub ancestral: SmallSet<Held>,
    /// Every lock the thread itself may ever hold.
    pub ever: SmallSet<Held>,
    /// Locks its parent had taken in write mode on every path to the create statement (its
    /// lock history at the creation).
    pub creation_hist: SmallSet<LockId>,
    /// For earlier siblings, the write-mode locks the parent held without a break from the
    /// sibling's creation to this thread's.
    pub creation_since: SinceSets,
    /// Locks ancestors above the parent hold for the thread's whole life: held (must) by the
    /// ancestor at the creation of its child on the thread's chain, and not released anywhere
    /// the thread may still run (typically the ancestor joins the thread, say through a global
    /// id, before releasing them; Goblint's `creationLockset` with `threadJoins`).
    pub ancestors_hold: SmallVec<[(ThreadId, SmallSet<Held>); 1]>,
}

/// What a thread holds at a create statement ([`LocksetResult::at_site`]): the must-lockset,
/// the may-lockset, the lock history (write mode) and the sibling sets.
type AtCreation = (SmallSet<Held>, SmallSet<Held>, SmallSet<LockId>, SinceSets);

impl LocksetResult {
    /// The inherited locks of every thread. `active(ancestor, ctx, node, t)` tells whether
    /// thread `t`, a descendant of `ancestor`, may run at that point of `ancestor`.
    pub fn inherited<'p, B: Backend<'p>>(
        &mut self,
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &crate::threads::ThreadGraph,
        active: &dyn Fn(ThreadId, FnCtxId, NodeId, ThreadId) -> bool,
    ) -> Vec<Inherited> {
        let mut out = vec![Inherited::default(); graph.threads.len()];
        for t in &graph.threads {
            let Some(site) = t.site else {
                continue;
            };
            // With several parents (a create statement several threads run), what every
            // parent guarantees.
            let mut all: Option<Inherited> = None;
            for parent in &t.parents {
                let mine =
                    self.inherited_from(program, roles, backend, graph, active, t, *parent, site);
                all = Some(match all {
                    None => mine,
                    Some(prev) => Inherited {
                        must: prev.must.intersection(&mine.must),
                        may: prev.may.union(&mine.may),
                        ancestral: SmallSet::new(),
                        ever: SmallSet::new(),
                        creation_hist: prev.creation_hist.intersection(&mine.creation_hist),
                        // Sibling orders are per parent.
                        creation_since: SinceSets::default(),
                        ancestors_hold: SmallVec::new(),
                    },
                });
            }
            if let Some(inh) = all {
                out[t.id.0 as usize] = inh;
            }
            // Ancestors above the parent, each holding locks since it created the next
            // thread of the chain.
            let Some(chain) = graph.ancestry(t.id) else {
                continue;
            };
            for j in 0..chain.len().saturating_sub(2) {
                let (holder, child) = (chain[j], chain[j + 1]);
                if !graph.thread(holder).unique {
                    continue;
                }
                let Some(site) = graph.thread(child).site else {
                    continue;
                };
                let at = self.at_site(program, graph, holder, site);
                let mut must = at.map(|(m, _, _, _)| m).unwrap_or_default();
                must.retain(|h| h.lock != LockId::UNKNOWN);
                if must.is_empty() {
                    continue;
                }
                let must = self
                    .kept_while_alive(program, roles, backend, graph, active, holder, t.id, must);
                if !must.is_empty() {
                    out[t.id.0 as usize].ancestors_hold.push((holder, must));
                }
            }
        }
        // Ancestral locks (parents before children: ids grow along discovery) and the locks
        // each thread ever holds.
        for t in &graph.threads {
            let i = t.id.0 as usize;
            let mut anc = out[i].may.clone();
            for p in &t.parents {
                if p.0 < t.id.0 {
                    anc = anc.union(&out[p.0 as usize].ancestral);
                }
            }
            out[i].ancestral = anc;
            if let Some(sol) = self.solutions.get(i) {
                out[i].ever = sol
                    .all_states()
                    .flat_map(dataflow::facts_of)
                    .fold(SmallSet::new(), |acc, f: &LockFact| acc.union(&f.may));
            }
        }
        out
    }

    /// What `parent` guarantees thread `t`, which it creates at `site` (see [`Inherited`]).
    #[allow(clippy::too_many_arguments)]
    fn inherited_from<'p, B: Backend<'p>>(
        &mut self,
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &crate::threads::ThreadGraph,
        active: &dyn Fn(ThreadId, FnCtxId, NodeId, ThreadId) -> bool,
        t: &crate::threads::Thread,
        parent: ThreadId,
        site: crate::context::CallSite,
    ) -> Inherited {
        let Some((must, may, creation_hist, creation_since)) =
            self.at_site(program, graph, parent, site)
        else {
            return Inherited::default();
        };
        let mut must = must;
        must.retain(|h| h.lock != LockId::UNKNOWN);
        let must = if must.is_empty() {
            must
        } else {
            // Drop locks the parent may release while the thread may be active.
            self.kept_while_alive(program, roles, backend, graph, active, parent, t.id, must)
        };
        Inherited {
            must,
            may,
            ancestral: SmallSet::new(),
            ever: SmallSet::new(),
            creation_hist,
            creation_since,
            ancestors_hold: SmallVec::new(),
        }
    }

    /// What `holder` holds at create statement `site`, over its contexts of the statement's
    /// function (`None` when the statement does not exist; empty sets when it is not reached).
    fn at_site(
        &self,
        program: &Program,
        graph: &crate::threads::ThreadGraph,
        holder: ThreadId,
        site: crate::context::CallSite,
    ) -> Option<AtCreation> {
        let cfg = program.function(site.func).body.as_ref()?;
        let node = cfg.edges.get(site.edge.0 as usize).map(|e| e.src)?;
        let tc = graph.contexts(holder);
        let mut must: Option<SmallSet<Held>> = None;
        let mut may = SmallSet::new();
        let mut hist: Option<SmallSet<LockId>> = None;
        let mut creation_since: Option<SinceSets> = None;
        for c in tc.ids().filter(|c| tc.ctx(*c).func == site.func) {
            if let Some(at) = self.at(holder, c, node) {
                creation_since = Some(match creation_since {
                    // A sibling counts only when every context says so.
                    Some(prev) => prev
                        .into_iter()
                        .filter_map(|(x, s)| {
                            let t = at.since(x).intersection(&s);
                            (!t.is_empty()).then_some((x, t))
                        })
                        .collect(),
                    None => at.since.clone(),
                });
                must = Some(match must {
                    Some(m) => m.intersection(&at.must),
                    None => at.must.clone(),
                });
                hist = Some(match hist {
                    Some(h) => h.intersection(&at.hist),
                    None => at.hist.clone(),
                });
                may = may.union(&at.may);
            }
        }
        Some((
            must.unwrap_or_default(),
            may,
            hist.unwrap_or_default(),
            creation_since.unwrap_or_default(),
        ))
    }

    /// The locks of `must` that `holder` releases (unlock, semaphore post, condition wait)
    /// nowhere thread `t` may still run (by `active`).
    #[allow(clippy::too_many_arguments)]
    fn kept_while_alive<'p, B: Backend<'p>>(
        &mut self,
        program: &'p Program,
        roles: &Roles,
        backend: &B,
        graph: &crate::threads::ThreadGraph,
        active: &dyn Fn(ThreadId, FnCtxId, NodeId, ThreadId) -> bool,
        holder: ThreadId,
        t: ThreadId,
        mut must: SmallSet<Held>,
    ) -> SmallSet<Held> {
        let tc = graph.contexts(holder);
        for c in tc.ids() {
            let func = tc.ctx(c).func;
            let Some(pcfg) = &program.function(func).body else {
                continue;
            };
            for (ei, e) in pcfg.edges.iter().enumerate() {
                let Op::Call {
                    callee: Callee::Direct(f),
                    args,
                    ..
                } = &e.op
                else {
                    continue;
                };
                let arg = match roles.get(*f) {
                    Some(Role::Unlock { lock }) => args.get(*lock),
                    Some(Role::SemPost { sem }) => args.get(*sem),
                    Some(Role::CondWait { mutex, .. }) => args.get(*mutex),
                    _ => continue,
                };
                if !self.reachable(holder, c, e.src) || !active(holder, c, e.src, t) {
                    continue;
                }
                let released = arg.and_then(|a| {
                    lock_targets(
                        program,
                        backend,
                        graph,
                        tc,
                        c,
                        EdgeId(ei as u32),
                        a,
                        &mut self.table,
                        false,
                    )
                });
                match released {
                    Some(ls) => must.retain(|h| !ls.contains(&h.lock)),
                    None => return SmallSet::new(),
                }
                if must.is_empty() {
                    return must;
                }
            }
        }
        must
    }
}

/// Whether holding `a` and `b` excludes each other: the same known lock, one in write mode.
pub fn excludes(a: &Held, b: &Held) -> bool {
    a.lock == b.lock
        && a.lock != LockId::UNKNOWN
        && (a.mode == LockMode::Write || b.mode == LockMode::Write)
}

/// Whether some lock of `xs` excludes some lock of `ys`.
pub fn sets_exclude(xs: &SmallSet<Held>, ys: &SmallSet<Held>) -> bool {
    xs.iter().any(|a| ys.iter().any(|b| excludes(a, b)))
}

/// Whether `xs` and `ys` may share a lock (an unknown lock may be anything).
pub fn sets_may_share(xs: &SmallSet<Held>, ys: &SmallSet<Held>) -> bool {
    let unknown = |s: &SmallSet<Held>| s.iter().any(|h| h.lock == LockId::UNKNOWN);
    (unknown(xs) && !ys.is_empty()) || (unknown(ys) && !xs.is_empty()) || sets_exclude(xs, ys)
}
