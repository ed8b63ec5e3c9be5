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
//! - a condition wait releases and re-takes its mutex (the lockset is unchanged); semaphores
//!   count in `may` only (they order threads but do not exclude them).

use crate::backend::{Address, Backend, Base, PointsTo};
use crate::context::{CallKind, CallTarget, FnCtxId, ThreadContexts, ThreadId};
use crate::dataflow::{self, At, Callees, FactAnalysis, Solution};
use crate::ir::Proj;
use crate::ir::types::CompId;
use crate::ir::{
    Callee, Edge, EdgeId, Expr, ExprKind, FuncId, Host, LocalId, Lval, NodeId, Op, Program, Var,
};
use crate::model::{LockKind, LockMode, Role, Roles};
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
    /// The once-lock of a once-control object.
    Once(Base, u64),
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
/// lock (`notes/racerf-goblint.md` §7 pattern 18, per-element locks). Also `lock(&L[y])` for
/// an element of a global lock array indexed by such a local: it protects the region of
/// element `y` of root arrays ([`crate::backend::regions`]).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SymLock {
    /// The function whose locals `object` reads.
    pub func: FuncId,
    /// The object expression, printed.
    pub object: String,
    /// What the lock is.
    pub kind: SymKind,
    /// The locals it reads (an assignment to one ends the lock's validity).
    pub deps: SmallVec<[LocalId; 2]>,
}

/// The two shapes of symbolic locks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymKind {
    /// `&O.m`: the lock member of the instance `O`.
    Member {
        /// Number of projections of `O`.
        proj_len: usize,
        /// The struct or union `O` is an instance of.
        comp: CompId,
        /// Byte offset of the lock inside the instance.
        lock_off: u64,
    },
    /// `&L[y]`: element `y` (a local of `func`) of the global lock array `array`.
    Element {
        /// The lock array.
        array: crate::backend::regions::ArrayRoot,
        /// The index variable.
        index: LocalId,
    },
}

impl SymKind {
    /// Whether releasing a lock of shape `r` may release a held lock of shape `self` (another
    /// instance of the same member, another element of the same array).
    fn may_alias(&self, r: &SymKind) -> bool {
        match (self, r) {
            (
                SymKind::Member { comp, lock_off, .. },
                SymKind::Member {
                    comp: c2,
                    lock_off: o2,
                    ..
                },
            ) => (comp, lock_off) == (c2, o2),
            (SymKind::Element { array, .. }, SymKind::Element { array: a2, .. }) => array == a2,
            _ => true,
        }
    }
}

/// Interned lock identities of a program.
#[derive(Clone, Debug)]
pub struct LockTable {
    keys: Vec<LockKey>,
    index: FxHashMap<LockKey, LockId>,
    syms: Vec<SymLock>,
    sym_index: FxHashMap<SymLock, u32>,
}

impl Default for LockTable {
    fn default() -> Self {
        let mut t = LockTable {
            keys: Vec::new(),
            index: FxHashMap::default(),
            syms: Vec::new(),
            sym_index: FxHashMap::default(),
        };
        t.intern(LockKey::Unknown);
        t.intern(LockKey::Atomic);
        t
    }
}

impl LockTable {
    fn intern(&mut self, k: LockKey) -> LockId {
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

    /// The symbolic lock behind an id.
    pub fn sym(&self, id: u32) -> Option<&SymLock> {
        self.syms.get(id as usize)
    }

    /// What a lock id stands for.
    pub fn key(&self, id: LockId) -> LockKey {
        self.keys
            .get(id.0 as usize)
            .copied()
            .unwrap_or(LockKey::Unknown)
    }
}

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
    /// Whether the program may make a mutex recursive: an unlock then may leave it held.
    recursive: bool,
    /// The known candidates of each unlock statement, by context and edge.
    unlocks: &'a mut UnlockTargets,
    _p: std::marker::PhantomData<&'p ()>,
}

/// Whether the program may make a mutex recursive: some `pthread_mutexattr_settype` call may
/// set the recursive type (its type argument is not a constant other than
/// `PTHREAD_MUTEX_RECURSIVE`, 1 in glibc and musl), or a static initialiser sets glibc's
/// `__kind` field of a mutex to non-zero (`PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP`; other
/// kinds than recursive count too: they are rare and this keeps the check simple).
fn may_be_recursive(program: &Program, roles: &Roles) -> bool {
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
    static_kind
        || program
            .functions
            .iter()
            .filter_map(|f| f.body.as_ref())
            .flat_map(|cfg| cfg.edges.iter())
            .any(|e| match (&e.op, roles.of_call(&e.op)) {
                (Op::Call { args, .. }, Some(Role::MutexAttrSettype { kind, .. })) => args
                    .get(*kind)
                    .and_then(|k| crate::ir::visit::strip_casts(k).as_int())
                    .is_none_or(|k| k == 1),
                _ => false,
            })
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
    if let Some(e) = element_lock(program, func, lv) {
        return Some(e);
    }
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
        kind: SymKind::Member {
            proj_len: prefix.len(),
            comp: *comp,
            lock_off: field.offset,
        },
        deps,
    })
}

/// The element lock `&L[y]` names: `L` a global array (or an array member of a global),
/// `y` a local of `func` whose address is never taken.
fn element_lock(program: &Program, func: FuncId, lv: &Lval) -> Option<SymLock> {
    let (array, ix) = crate::backend::regions::array_element(program, lv)?;
    let y = crate::backend::regions::index_local(ix)?;
    let f = program.function(func);
    let cfg = f.body.as_ref()?;
    let mut taken = false;
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| taken |= l == y);
    if taken {
        return None;
    }
    Some(SymLock {
        func,
        object: crate::ir::pretty::lval_to_string(program, lv, Some(f)),
        kind: SymKind::Element { array, index: y },
        deps: smallvec::smallvec![y],
    })
}

/// The address a pointer local stands for: for `e` a load of a local `p` of `func` whose
/// address is never taken, written exactly once, by `p = &O.f` where `O` reads only locals
/// that are themselves written at most once and never through pointers, that address
/// expression (so `m = &s->mutex; lock(m)` names the lock `s->mutex`). `None` otherwise.
pub fn local_alias(program: &Program, func: FuncId, e: &Expr) -> Option<Expr> {
    let ExprKind::Load(lv) = &crate::ir::visit::strip_casts(e).kind else {
        return None;
    };
    let (Host::Var(Var::Local(p)), true) = (&lv.host, lv.proj.is_empty()) else {
        return None;
    };
    let cfg = program.function(func).body.as_ref()?;
    let mut writes: FxHashMap<LocalId, usize> = FxHashMap::default();
    let mut def: Option<&Expr> = None;
    let mut taken: FxHashSet<LocalId> = FxHashSet::default();
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
        taken.insert(l);
    });
    for edge in &cfg.edges {
        let written = match &edge.op {
            Op::Assign { lhs, rhs } => {
                if lhs.host == Host::Var(Var::Local(*p)) && lhs.proj.is_empty() {
                    def = Some(rhs);
                }
                Some(lhs)
            }
            Op::Call { dest: Some(d), .. } => Some(d),
            Op::Asm { outputs, .. } => {
                // Inline assembly may write its outputs any number of times.
                for o in outputs {
                    if let Host::Var(Var::Local(l)) = o.host {
                        *writes.entry(l).or_default() += 2;
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
            *writes.entry(*l).or_default() += 1;
        }
    }
    if taken.contains(p) || writes.get(p) != Some(&1) {
        return None;
    }
    let rhs = crate::ir::visit::strip_casts(def?);
    let ExprKind::AddrOf(target) = &rhs.kind else {
        return None;
    };
    if !matches!(target.proj.last(), Some(Proj::Field { .. })) {
        return None;
    }
    let mut ok = true;
    crate::ir::visit::walk_lval(target, &mut |x| {
        if let ExprKind::Load(inner) = &x.kind {
            match (&inner.host, inner.proj.is_empty()) {
                (Host::Var(Var::Local(l)), true)
                    if !taken.contains(l) && writes.get(l).copied().unwrap_or(0) <= 1 => {}
                _ => ok = false,
            }
        }
    });
    ok.then(|| rhs.clone())
}

/// Lock candidates of a pointer argument: `None` when unknown.
#[allow(clippy::too_many_arguments)]
fn lock_targets<'p, B: Backend<'p>>(
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
                out.push(table.intern(key));
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

    /// An unlock of `lock`: a possibly recursive mutex may stay held (locked more often than
    /// unlocked), so then it leaves only the must-lockset.
    fn unlock(&self, fact: &LockFact, lock: LockId) -> LockFact {
        if !self.recursive {
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

    fn covers(&self, o: &LockFact) -> bool {
        self == o
            || (self.must.is_subset(&o.must)
                && self.sym.is_subset(&o.sym)
                && self.hist.is_subset(&o.hist)
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
        self.transfer_sym(at, edge, &mut out[start..]);
        self.transfer_history(at, edge, fact, &mut out[start..]);
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
        let fact = &fact;
        match target.kind {
            CallKind::Plain => fact.clone(),
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
            CallKind::Plain => exit.clone(),
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
        // The call's result overwrites a pending trylock key.
        if let Op::Call { dest, .. } = &edge.op {
            f = self.clear_key(&f, self.tc.ctx(ctx).func, dest.as_ref());
        }
        self.forget_frame_syms(&mut f, target.func);
        f
    }
}

impl<'p, B: Backend<'p>> Locksets<'_, 'p, B> {
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
                    Some(Role::Lock { lock, mode, kind }) => {
                        let Some(arg) = args.get(lock) else {
                            out.push(fact.clone());
                            return;
                        };
                        match lock_targets(
                            self.program,
                            self.backend,
                            self.graph,
                            self.tc,
                            ctx,
                            eid,
                            arg,
                            self.table,
                            false,
                        ) {
                            Some(locks) => {
                                for l in locks {
                                    let h = Held { lock: l, mode };
                                    match kind {
                                        LockKind::Blocking => out.push(Self::add(fact, h)),
                                        LockKind::Try => {
                                            let mut f = fact.clone();
                                            f.may.insert(h);
                                            let key = Self::result_key(func, dest);
                                            if key.is_some() {
                                                f.pending.push(Pending { held: h, key });
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
                        let target = args.get(lock).and_then(|a| {
                            lock_targets(
                                self.program,
                                self.backend,
                                self.graph,
                                self.tc,
                                ctx,
                                eid,
                                a,
                                self.table,
                                false,
                            )
                        });
                        match target {
                            Some(locks) => {
                                let known = self.unlocks.entry((ctx, eid)).or_default();
                                for l in &locks {
                                    if !known.contains(l) {
                                        known.push(*l);
                                    }
                                }
                                for l in locks {
                                    out.push(self.unlock(fact, l));
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
                    Some(Role::SemWait { sem, .. }) => {
                        let mut f = fact.clone();
                        let ids = args.get(sem).and_then(|a| {
                            lock_targets(
                                self.program,
                                self.backend,
                                self.graph,
                                self.tc,
                                ctx,
                                eid,
                                a,
                                self.table,
                                false,
                            )
                        });
                        for l in ids.unwrap_or_else(|| SmallVec::from_slice(&[LockId::UNKNOWN])) {
                            f.may.insert(Held {
                                lock: l,
                                mode: LockMode::Write,
                            });
                        }
                        out.push(f);
                    }
                    Some(Role::SemPost { sem }) => {
                        let ids = args.get(sem).and_then(|a| {
                            lock_targets(
                                self.program,
                                self.backend,
                                self.graph,
                                self.tc,
                                ctx,
                                eid,
                                a,
                                self.table,
                                false,
                            )
                        });
                        let mut f = fact.clone();
                        for l in ids.unwrap_or_default() {
                            f = Self::release(&f, l);
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
        let backend = self.backend;
        let program = self.program;
        let named = |a: &Expr| sym_lock(program, func, a, backend.alias(&qctx, a));
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
            }) => (args.get(*lock).and_then(named), None),
            Some(Role::Unlock { lock }) => (None, args.get(*lock).and_then(named)),
            _ => (None, None),
        };
        let table = &mut *self.table;
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
                    // same field of another instance expression.
                    f.sym.retain(|id| match (table.sym(*id), &released) {
                        (Some(h), Some(r)) => h != r && !h.kind.may_alias(&r.kind),
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

/// Lockset results of all threads.
pub struct LocksetResult {
    /// Lock identities.
    pub table: LockTable,
    solutions: Vec<Solution<dataflow::Facts<LockFact>>>,
    /// Per thread, the known candidates of each unlock statement.
    unlocks: Vec<UnlockTargets>,
}

impl LocksetResult {
    /// No thread analysed.
    pub fn empty() -> LocksetResult {
        LocksetResult {
            table: LockTable::default(),
            solutions: Vec::new(),
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
        let recursive = may_be_recursive(program, roles);
        let contexts = &graph.contexts;
        let mut solutions = Vec::with_capacity(contexts.len());
        let mut unlocks = Vec::with_capacity(contexts.len());
        for tc in contexts {
            let mut known = FxHashMap::default();
            let mut a = Locksets {
                program,
                roles,
                backend,
                graph,
                tc,
                table: &mut table,
                recursive,
                unlocks: &mut known,
                _p: std::marker::PhantomData,
            };
            let _ = a.program;
            let init = dataflow::initial_facts(LockFact::default());
            solutions.push(dataflow::solve(
                program,
                tc.clone(),
                &mut dataflow::Disjunctive(&mut a),
                init,
                u64::MAX,
            ));
            unlocks.push(known);
        }
        LocksetResult {
            table,
            solutions,
            unlocks,
        }
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
                            !l.may
                                .iter()
                                .any(|h| h.lock == LockId::UNKNOWN || ids.contains(&h.lock))
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
        let since = acc.since;
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
}

impl LocksetResult {
    /// The inherited locks of every thread. `active(parent, ctx, node, child)` tells whether
    /// `child` may be active at that point of `parent`.
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
            let (Some(site), [parent]) = (t.site, t.parents.as_slice()) else {
                continue;
            };
            let Some(cfg) = &program.function(site.func).body else {
                continue;
            };
            let Some(node) = cfg.edges.get(site.edge.0 as usize).map(|e| e.src) else {
                continue;
            };
            let tc = graph.contexts(*parent);
            let mut must: Option<SmallSet<Held>> = None;
            let mut may = SmallSet::new();
            let mut hist: Option<SmallSet<LockId>> = None;
            let mut creation_since: Option<SinceSets> = None;
            for c in tc.ids().filter(|c| tc.ctx(*c).func == site.func) {
                if let Some(at) = self.at(*parent, c, node) {
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
            let creation_hist = hist.unwrap_or_default();
            let creation_since = creation_since.unwrap_or_default();
            let mut must = must.unwrap_or_default();
            must.retain(|h| h.lock != LockId::UNKNOWN);
            if !must.is_empty() {
                // Drop locks the parent may release while the thread may be active.
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
                            Some(Role::CondWait { mutex, .. }) => args.get(*mutex),
                            _ => continue,
                        };
                        if !self.reachable(*parent, c, e.src) || !active(*parent, c, e.src, t.id) {
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
                            None => must = SmallSet::new(),
                        }
                    }
                }
            }
            out[t.id.0 as usize] = Inherited {
                must,
                may,
                ancestral: SmallSet::new(),
                ever: SmallSet::new(),
                creation_hist,
                creation_since,
            };
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
