//! Race detection (seed 001 §7; conditions as refined in `notes/racerf-goblint.md` §1.3–1.4).
//!
//! 1. **Accesses** of every reachable statement of every thread context (the backend's
//!    `accesses`), each with its must/may lockset and active-threads facts.
//! 2. **Clusters** by base; a base is a candidate when the access-state machine (seed 001 Fig. 6,
//!    `notes/racerf-goblint.md` §1.1) ends in SharedMod, or Exclusive of a non-unique thread.
//!    Accesses through unknown pointers (typed targets) pair with each other and with accesses
//!    to escaped objects of compatible types.
//! 3. **Pairs** of a cluster are classified:
//!    - *may-race*: a write involved, not both atomic, different threads or one non-unique
//!      thread, overlapping bytes, no lock excludes them (must-locksets, plus locks the parent
//!      holds for a thread's whole life), may run in parallel;
//!    - *must-race*: additionally known objects at exact offsets with a single target each,
//!      certainly parallel (certain paths of certainly created unique threads), and no lock may
//!      exclude them (may-locksets). Each failed condition is a reason.
//!
//!    Objects with one instance per thread (locals, `_Thread_local` variables) race only when
//!    one side reaches them through a pointer; objects handed to one thread each
//!    ([`private`]) and the elements or objects each thread gets for itself ([`slots`]: a
//!    create loop's counter, a ticket, a fresh object) never race.
//! 4. **Races** group racing pairs by location: one must entry with every access in a must pair,
//!    one may entry with the rest.

pub mod escape;
pub mod evidence;
pub mod private;
pub mod slots;

use crate::backend::{
    AccessKind, AccessSite, Backend, Base, ByteRange, MemAccess, Pointee, Target, TypeClass,
};
use crate::context::{FnCtxId, ThreadId};
use crate::ir::types::{CompId, IntKind, TypeKind, TypeTable};
use crate::ir::{EdgeId, FuncId, Host, Loc, Program};
use crate::lockset::{Held, Inherited, LocksAt, LocksetResult, sets_exclude, sets_may_share};
use crate::mhp::{self, ActiveAt, MhpResult, Point, ThreadFacts};
use crate::threads::ThreadGraph;
use escape::Escape;
use racedar_domains::SmallSet;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// Pair checks before giving up (the verdict then cannot be `no-race`).
pub const MAX_PAIR_CHECKS: u64 = 20_000_000;

/// One memory access with what the analyses know at it.
#[derive(Clone, Debug)]
pub struct Access<'p> {
    /// The thread.
    pub thread: ThreadId,
    /// Function context in the thread.
    pub ctx: FnCtxId,
    /// The statement.
    pub edge: EdgeId,
    /// The function containing it.
    pub func: FuncId,
    /// What the backend says about it.
    pub mem: MemAccess<'p>,
    /// Source location of the statement.
    pub loc: Loc,
    /// Locks held (shared by the accesses with equal locksets).
    pub locks: std::sync::Arc<LocksAt>,
    /// Active threads (shared by the accesses with equal summaries).
    pub active: std::sync::Arc<ActiveAt>,
    /// Instance locks: (struct, lock offset) such that the access touches an instance of the
    /// struct whose lock at that offset is held ([`crate::lockset::SymLock`]).
    pub inst_locks: SmallVec<[InstLock; 1]>,
    /// The per-instance slot the access touches, if any ([`slots`]).
    pub slot: Option<slots::SlotKey>,
}

/// An instance lock of an access ([`Access::inst_locks`]): two accesses to the same bytes
/// with the same instance lock hold the same lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum InstLock {
    /// The lock at this byte offset of the instance of this struct the access touches.
    Field(CompId, u64),
    /// The element of array `lock` whose index is that of the element of `array` the access
    /// touches (per-element locks).
    Element {
        /// The lock array.
        lock: crate::lockset::ArrayId,
        /// The accessed array.
        array: crate::lockset::ArrayId,
    },
    /// The element of array `lock` whose index variable is the index of the region of `root`
    /// the access goes to ([`crate::backend::regions`]): two accesses to the same object with
    /// this lock hold the same element when objects enter at most one region of `root`
    /// ([`crate::backend::Backend::region_disjoint`]).
    Region {
        /// The lock array.
        lock: crate::lockset::ArrayId,
        /// The root array of the regions.
        root: crate::backend::regions::ArrayRoot,
    },
}

/// How sure a race is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Confidence {
    /// Certainly a race (under the analyses' assumptions).
    Must,
    /// Possibly a race.
    May,
}

/// A race: accesses to one location, at least one pair of which races.
#[derive(Clone, Debug)]
pub struct Race {
    /// Must or may.
    pub confidence: Confidence,
    /// Indices into [`RaceResult::accesses`]; the first two are a racing pair.
    pub accesses: Vec<usize>,
    /// Why the race is only a may-race (empty for must-races), sorted.
    pub reasons: Vec<&'static str>,
    /// How a concrete execution witnessed the race, when one did (`crate::concrete`).
    pub witness: Option<String>,
}

/// The object a race is on, for grouping reports: races on one object are one report
/// ([`crate::report`]). A known object is its base (every field and element of a global, a
/// local or an allocation site); an object behind an unresolved pointer is the struct type
/// whose member the leading access touches (`p->f`, `p->a[i]`, a whole `*p` of struct type),
/// else the access's type class with pointers not told apart ([`TypeClass::loose`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RaceObject {
    /// A known object.
    Base(Base),
    /// Objects of this struct type reached through unresolved pointers.
    Struct(CompId),
    /// Objects of this class reached through unresolved pointers.
    Class(TypeClass),
}

impl RaceObject {
    /// The object access `a` touches (type definition).
    pub fn of(program: &Program, a: &Access<'_>) -> RaceObject {
        match a.mem.target {
            Target::Addr(x) => RaceObject::Base(x.base),
            Target::Typed(class) => member_range(program, &a.mem.site)
                .or_else(|| element_member(program, &a.mem.site))
                .map(|(c, _)| RaceObject::Struct(c))
                .unwrap_or(match class {
                    TypeClass::Comp(c) => RaceObject::Struct(c),
                    c => RaceObject::Class(c.loose()),
                }),
        }
    }
}

/// The result of race detection.
#[derive(Clone, Debug)]
pub struct RaceResult<'p> {
    /// Every access considered.
    pub accesses: Vec<Access<'p>>,
    /// Races, sorted by their first access's location.
    pub races: Vec<Race>,
    /// Whether [`MAX_PAIR_CHECKS`] cut the search short.
    pub truncated: bool,
    /// For each kind of pair the search does not report ([`Unreported`]), where the first
    /// such pair that would race is: it may hide a race (no `no-race`).
    pub unreported: BTreeMap<Unreported, Loc>,
}

/// Pairs through unresolved pointers that the race search checks but does not report: they
/// say nothing a reader could act on, and each kind found rules out `no-race`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Unreported {
    /// A byte-wise access viewing an object of another type ([`byte_view`]).
    ByteView,
    /// An access whose object and type are both unknown ([`Signature::opaque`]).
    Opaque,
    /// A `void *` object and a pointer object of another type, one of them through an
    /// unresolved pointer ([`Pointee`]): C does not allow such views (C11 §6.5p7), but generic
    /// code writes `T *` objects through `void **`.
    VoidPointerView,
    /// A whole struct and a scalar, both through pointers the analysis could not resolve,
    /// neither with a member path ([`scalar_in_whole`]).
    ScalarInWhole,
}

impl Unreported {
    /// The imprecision text.
    pub fn reason(self) -> &'static str {
        match self {
            Unreported::ByteView => {
                "a byte-wise access through an unresolved pointer may view an object of \
                 another type (such pairs are not reported)"
            }
            Unreported::Opaque => {
                "a library or unknown function accesses an object of unknown type through a \
                 `void *` the analysis could not resolve (its pairs are not reported)"
            }
            Unreported::ScalarInWhole => {
                "a scalar accessed through an unresolved pointer may be a member of a struct \
                 that another unresolved pointer accesses as a whole (such pairs are not \
                 reported)"
            }
            Unreported::VoidPointerView => {
                "an access through an unresolved pointer may view a `void *` object as a pointer \
                 of another type, or the reverse (such pairs are not reported)"
            }
        }
    }

    /// The kind of a pair of signatures, if the search does not report it (`strict`: their
    /// classes are compatible without `void *` views).
    fn of(a: &Signature, b: &Signature, strict: bool) -> Option<Unreported> {
        if a.opaque || b.opaque {
            Some(Unreported::Opaque)
        } else if byte_view(a, b) {
            Some(Unreported::ByteView)
        } else if !strict {
            Some(Unreported::VoidPointerView)
        } else if scalar_in_whole(a, b) || scalar_in_whole(b, a) {
            Some(Unreported::ScalarInWhole)
        } else {
            None
        }
    }
}

/// What race detection needs from the earlier phases.
pub struct Inputs<'a, 'p, B: Backend<'p>> {
    /// The program.
    pub program: &'p Program,
    /// The backend.
    pub backend: &'a B,
    /// Threads and contexts.
    pub graph: &'a ThreadGraph,
    /// Locksets.
    pub locksets: &'a LocksetResult,
    /// Locks inherited from parents, by thread.
    pub inherited: &'a [Inherited],
    /// Active threads.
    pub mhp: &'a MhpResult,
    /// Per-thread creation facts.
    pub thread_facts: &'a [ThreadFacts],
    /// Escaped variables.
    pub escape: &'a Escape,
    /// Allocation statements whose objects each belong to one thread ([`private`]).
    pub private: &'a FxHashSet<(FuncId, crate::ir::EdgeId)>,
    /// Accesses to per-instance slots ([`slots`]).
    pub slots: &'a slots::Slots,
    /// Code child processes run ([`crate::threads::fork`]): its accesses race with nothing.
    pub children: &'a crate::threads::fork::ChildCode,
}

/// The classes of sub-objects of each struct/union (for matching typed accesses).
struct CompContents<'t> {
    types: &'t TypeTable,
    memo: FxHashMap<CompId, FxHashSet<TypeClass>>,
}

impl CompContents<'_> {
    /// Whether struct `c` holds a sub-object of class `k` (pointers compared as
    /// [`CompContents::pointers_compatible`] with `strict`).
    fn contains(&mut self, c: CompId, k: TypeClass, strict: bool) -> bool {
        if !self.memo.contains_key(&c) {
            let mut set = FxHashSet::default();
            let mut stack = vec![c];
            let mut seen = FxHashSet::default();
            while let Some(x) = stack.pop() {
                if !seen.insert(x) {
                    continue;
                }
                for f in &self.types.comp(x).fields {
                    let class = TypeClass::of(self.types, f.ty);
                    set.insert(class);
                    if let TypeClass::Comp(inner) = class {
                        stack.push(inner);
                    }
                    if let TypeKind::Array { .. } = self.types.kind(f.ty)
                        && let TypeClass::Comp(inner) = TypeClass::of(self.types, f.ty)
                    {
                        stack.push(inner);
                    }
                }
            }
            self.memo.insert(c, set);
        }
        let Some(set) = self.memo.get(&c) else {
            return false;
        };
        match k {
            TypeClass::Pointer(x) => {
                let pointers: Vec<Pointee> = set
                    .iter()
                    .filter_map(|m| match m {
                        TypeClass::Pointer(y) => Some(*y),
                        _ => None,
                    })
                    .collect();
                pointers
                    .into_iter()
                    .any(|y| self.pointers_compatible(x, y, strict))
            }
            _ => set.contains(&k),
        }
    }

    /// Whether pointer objects of classes `Pointer(x)` and `Pointer(y)` may be the same object
    /// ([`Pointee`]): both point to scalars, both to structs one of which holds the other (a
    /// pointer to a struct and one to its first member are converted freely), or both are
    /// `void *`; unless `strict`, a `void *` and any other pointer too (generic code's
    /// `void **` views of `T *` objects, [`Unreported::VoidPointerView`]).
    fn pointers_compatible(&mut self, x: Pointee, y: Pointee, strict: bool) -> bool {
        match (x, y) {
            (Pointee::Any, Pointee::Any) | (Pointee::Scalar, Pointee::Scalar) => true,
            (Pointee::Any, _) | (_, Pointee::Any) => !strict,
            (Pointee::Comp(a), Pointee::Comp(b)) => self.holds(a, b) || self.holds(b, a),
            (Pointee::Comp(_), Pointee::Scalar) | (Pointee::Scalar, Pointee::Comp(_)) => false,
        }
    }

    /// Whether struct `outer` is `inner` or holds an `inner` (as a member, an array element,
    /// at any depth).
    fn holds(&mut self, outer: CompId, inner: CompId) -> bool {
        outer == inner || self.contains(outer, TypeClass::Comp(inner), true)
    }

    /// Whether two accesses, the first through an unresolved pointer, may touch the same bytes
    /// as far as their member paths and declared objects tell (C11 §6.5.2.3 and §6.5p7: `p->f`
    /// with `p` a `struct S *` accesses an object of type `S`, and objects of two types overlap
    /// only when one is a sub-object of the other; GCC's path-based alias analysis and Goblint's
    /// type-based races, `(struct S).f`, assume the same):
    /// - members of one struct at disjoint bytes never overlap;
    /// - members of two structs overlap only when one struct holds the other;
    /// - a member of `S` is never in a declared object whose type neither is nor holds an `S`
    ///   (character arrays excepted: they may hold anything);
    /// - nor in a whole object accessed through a `struct D *` (a library call's argument,
    ///   a struct copy) unless `D` holds `S`, or `S` holds a `D` at bytes the member
    ///   overlaps;
    /// - a whole `struct D` accessed through an unresolved pointer is never in a declared
    ///   object whose type neither is nor holds a `D` (character arrays excepted).
    fn member_may_overlap(&mut self, a: &Signature, b: &Signature) -> bool {
        match (a.member, b.member) {
            (Some((ca, ra)), Some((cb, rb))) => {
                if ca == cb {
                    return ra.overlaps(&rb);
                }
                if !self.holds(ca, cb) && !self.holds(cb, ca) {
                    return false;
                }
            }
            (Some((c, range)), None) | (None, Some((c, range))) => {
                let other = if a.member.is_some() { b } else { a };
                match other.declared {
                    // A whole object accessed through a `struct D *` is a `D`: it holds the
                    // member's struct or lies inside one.
                    None => {
                        if let TypeClass::Comp(d) = other.class
                            && !self.holds(d, c)
                            && (!self.holds(c, d) || !self.inside_overlaps(c, d, range))
                        {
                            return false;
                        }
                    }
                    Some(declared) => {
                        if !self.declared_may_hold(declared, c) {
                            return false;
                        }
                    }
                }
            }
            (None, None) => {
                // A whole struct through an unresolved pointer (`free(p)`, `*p = *q` with `p`
                // a `struct S *`) is an object of that struct: not in a declared object whose
                // type neither is nor holds it (character arrays excepted).
                for (x, y) in [(a, b), (b, a)] {
                    if let (Target::Typed(_), TypeClass::Comp(st)) = (x.target, x.class)
                        && x.elem_member.is_none()
                        && let Some(declared) = y.declared
                        && !self.declared_may_hold(declared, st)
                    {
                        return false;
                    }
                }
            }
        }
        true
    }

    /// Whether a declared object of class `declared` may hold an object of struct `s`: a
    /// character array may hold anything, a struct that is or holds `s` does, nothing else.
    fn declared_may_hold(&mut self, declared: TypeClass, s: CompId) -> bool {
        match declared {
            TypeClass::Any => true,
            TypeClass::Comp(d) => self.holds(d, s),
            _ => false,
        }
    }

    /// Whether a sub-object of struct `d` inside struct `c` (`c` ≠ `d`) may overlap the bytes
    /// `r` of `c` (offsets from the start of `c`, `[lo, hi)`). An array of structs holding a
    /// `d` counts as a whole.
    fn inside_overlaps(&mut self, c: CompId, d: CompId, r: ByteRange) -> bool {
        let types = self.types;
        for f in &types.comp(c).fields {
            let TypeClass::Comp(inner) = TypeClass::of(types, f.ty) else {
                continue;
            };
            if !self.holds(inner, d) {
                continue;
            }
            let Some(size) = types.size_of(f.ty) else {
                return true;
            };
            let field = ByteRange {
                lo: f.offset,
                hi: f.offset.saturating_add(size),
            };
            if !field.overlaps(&r) {
                continue;
            }
            if inner == d || matches!(types.kind(f.ty), TypeKind::Array { .. }) {
                return true;
            }
            let inner_range = ByteRange {
                lo: r.lo.saturating_sub(f.offset),
                hi: r.hi.saturating_sub(f.offset),
            };
            if self.inside_overlaps(inner, d, inner_range) {
                return true;
            }
        }
        false
    }

    /// Whether an access to bytes `ra` of some object of struct `sa` and one to bytes `rb` of
    /// some object of struct `sb` surely touch different bytes (C11 §6.5.2.3: objects of
    /// struct types overlap only when one is a sub-object of the other, the premise of
    /// [`CompContents::member_may_overlap`]): different members of one struct; structs
    /// neither of which holds the other; or a struct that holds the other only at bytes the
    /// access to it does not touch.
    fn members_apart(
        &mut self,
        (sa, ra): (CompId, ByteRange),
        (sb, rb): (CompId, ByteRange),
    ) -> bool {
        if sa == sb {
            return !ra.overlaps(&rb);
        }
        let (a_holds, b_holds) = (self.holds(sa, sb), self.holds(sb, sa));
        match (a_holds, b_holds) {
            (false, false) => true,
            // `sb` objects lie inside `sa` objects: none where the access to `sa` reaches.
            (true, false) => !self.inside_overlaps(sa, sb, ra),
            (false, true) => !self.inside_overlaps(sb, sa, rb),
            // Each holds the other (through pointers to incomplete types, or a cycle the
            // layout does not rule out): nothing is known.
            (true, true) => false,
        }
    }

    /// Whether accesses of classes `a` and `b` may touch the same bytes.
    /// (`strict`: pointer objects by [`CompContents::pointers_compatible`] strictly.)
    fn compatible(&mut self, a: TypeClass, b: TypeClass, strict: bool) -> bool {
        if a == b || a == TypeClass::Any || b == TypeClass::Any {
            return true;
        }
        match (a, b) {
            (TypeClass::Pointer(x), TypeClass::Pointer(y)) => {
                self.pointers_compatible(x, y, strict)
            }
            (TypeClass::Comp(c), k) | (k, TypeClass::Comp(c)) => self.contains(c, k, strict),
            _ => false,
        }
    }
}

/// What decides a pair's outcome: accesses with the same signature race alike.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Signature {
    thread: ThreadId,
    kind: AccessKind,
    atomic: bool,
    precise: bool,
    direct: bool,
    target: Target,
    class: TypeClass,
    locks: std::sync::Arc<LocksAt>,
    active: std::sync::Arc<ActiveAt>,
    inst_locks: SmallVec<[InstLock; 1]>,
    /// For an access to a member through a pointer to a struct or of a global struct (`p->f`,
    /// `p->a[i]`, `g.f`), the struct and the bytes of it the member occupies
    /// ([`member_range`]).
    member: Option<(CompId, ByteRange)>,
    /// For an access to a member of an array element of struct type (`a[i].f`, `p->f`), the
    /// struct and the bytes of it touched ([`element_member`]).
    elem_member: Option<(CompId, ByteRange)>,
    /// For an access to a declared object (a global or a local), the class of its declared
    /// type ([`TypeClass::of`]: arrays by their element).
    declared: Option<TypeClass>,
    slot: Option<slots::SlotKey>,
    /// The access is of a character type (byte-wise, as `memset` or `strcpy` on a `char *`).
    bytewise: bool,
    /// Neither the object nor its type is known: a library or unknown function's access
    /// through a `void *` the analysis could not resolve (`memset(p, ..)`, `unknown(arena)`
    /// with `void *p`). Such an access says nothing a reader could check; its pairs are not
    /// reported and block `no-race` ([`Unreported::Opaque`]).
    opaque: bool,
}

/// Whether a pair of accesses, one through an unresolved pointer, can meet only if a byte-wise
/// access (a character type) views an object of another, definite type: one side bytewise, the
/// other of a class that is neither a character type nor `void`. C allows such views
/// (C11 §6.5p7), but a pointer to characters that the analysis could not resolve is nearly
/// always a string or buffer: the race search does not report these pairs, and the first one
/// found blocks `no-race` ([`Unreported::ByteView`]).
fn byte_view(a: &Signature, b: &Signature) -> bool {
    (a.bytewise && !b.bytewise && b.class != TypeClass::Any)
        || (b.bytewise && !a.bytewise && a.class != TypeClass::Any)
}

/// Whether `a` accesses a whole struct (a `free`, a copy, a library call's argument) and `b`
/// a scalar, both through pointers the analysis could not resolve and `b` without a member
/// path: they meet only if `b`'s pointer points into a struct of `a`'s type. That is legal C
/// (`&s->count` passed as an `int *`), but an unresolved `int *` is mostly an `int` object or
/// array of its own: the race search does not report these pairs, and the first one found
/// blocks `no-race`.
fn scalar_in_whole(a: &Signature, b: &Signature) -> bool {
    matches!(a.target, Target::Typed(_))
        && matches!(b.target, Target::Typed(_))
        && matches!(a.class, TypeClass::Comp(_))
        && a.member.is_none()
        && a.elem_member.is_none()
        && !matches!(b.class, TypeClass::Comp(_) | TypeClass::Any)
        && b.member.is_none()
        && b.elem_member.is_none()
}

/// Whether `ty` is a character type or an array of them (`memcmp(&s->mac, ..)` with
/// `unsigned char mac[6]` views bytes as `memcmp(s->name, ..)` does).
fn is_char(types: &TypeTable, ty: crate::ir::TypeId) -> bool {
    match types.kind(ty) {
        TypeKind::Int(IntKind::Char | IntKind::SChar | IntKind::UChar) => true,
        TypeKind::Array { elem, .. } => is_char(types, *elem),
        _ => false,
    }
}

/// The struct `S` and the bytes `[lo, hi)` of it that a member access `p->f…` (with `p` a
/// pointer to `S`) or `g.f…` (with `g` a global of type `S`) touches: field offsets, constant
/// indices exactly, other indices the whole array. Two such accesses to disjoint bytes of `S` touch different bytes (C11 §6.5p7 and
/// §6.5.2.3: a member is accessed inside an object of its struct type, and objects of one
/// type do not partially overlap); Goblint distinguishes them the same way (`(struct S).f`).
fn member_range(program: &Program, site: &AccessSite<'_>) -> Option<(CompId, ByteRange)> {
    let AccessSite::Lval(lv) = site else {
        return None;
    };
    let types = &program.types;
    let pointee = match &lv.host {
        Host::Deref(p) => types.pointee(p.ty)?,
        // A member of a global struct: an object of that struct too.
        Host::Var(crate::ir::Var::Global(g)) => program.global(*g).ty,
        Host::Var(crate::ir::Var::Local(_)) => return None,
    };
    let TypeKind::Comp(comp) = types.kind(pointee) else {
        return None;
    };
    if !matches!(lv.proj.first(), Some(crate::ir::Proj::Field { .. })) {
        return None;
    }
    Some((*comp, proj_bytes(types, pointee, &lv.proj)?))
}

/// The bytes `[lo, hi)` that the projection `proj` selects inside an object of type `start`:
/// field offsets and constant indices exactly, a variable index the whole array from there on;
/// `None` for a bit-field or a type without a size.
fn proj_bytes(
    types: &TypeTable,
    start: crate::ir::TypeId,
    proj: &[crate::ir::Proj],
) -> Option<ByteRange> {
    let mut ty = start;
    let (mut lo, mut hi): (u64, Option<u64>) = (0, None);
    for pr in proj {
        match pr {
            crate::ir::Proj::Field { comp: c, index } => {
                let f = types.comp(*c).fields.get(*index as usize)?;
                if f.bit_field.is_some() {
                    return None;
                }
                lo = lo.checked_add(f.offset)?;
                ty = f.ty;
            }
            crate::ir::Proj::Index(ix) => {
                let TypeKind::Array { elem, .. } = types.kind(ty) else {
                    return None;
                };
                let esize = types.size_of(*elem)?;
                match &crate::ir::visit::strip_casts(ix).kind {
                    crate::ir::ExprKind::Int(k) if hi.is_none() => {
                        let k = u64::try_from(*k).ok()?;
                        lo = lo.checked_add(k.checked_mul(esize)?)?;
                    }
                    _ => {
                        // Any element: the whole array from here on.
                        let whole = types.size_of(ty)?;
                        hi = Some(hi.unwrap_or(lo.checked_add(whole)?));
                    }
                }
                ty = *elem;
            }
        }
    }
    let end = match hi {
        Some(h) => h,
        None => lo.checked_add(types.size_of(ty)?)?,
    };
    Some(ByteRange { lo, hi: end })
}

/// The struct `S` and the bytes `[lo, hi)` of it that an access to a member of an `S` touches,
/// when the `S` is an array element picked by an index the lvalue does not fix (`a[i].f`,
/// `s.tab[k].g`) or the pointee of a pointer (`p->f`, [`member_range`]): two accesses to one
/// object at disjoint bytes of `S` touch different bytes whatever the indices, since the
/// elements of an `S` array lie at multiples of `sizeof(S)` from its start (C11 §6.5.2.1,
/// §6.2.5p20; the typed argument of [`member_range`] for pointers). Issue "Real programs",
/// item 4: fields stay distinct when an array index is unknown.
fn element_member(program: &Program, site: &AccessSite<'_>) -> Option<(CompId, ByteRange)> {
    let AccessSite::Lval(lv) = site else {
        return None;
    };
    let types = &program.types;
    let is_const = |ix: &crate::ir::Expr| {
        matches!(
            crate::ir::visit::strip_casts(ix).kind,
            crate::ir::ExprKind::Int(_)
        )
    };
    let last = lv
        .proj
        .iter()
        .rposition(|p| matches!(p, crate::ir::Proj::Index(ix) if !is_const(ix)));
    let Some(k) = last else {
        return match lv.host {
            Host::Deref(_) => member_range(program, site),
            Host::Var(_) => None,
        };
    };
    // The type the projection starts from, then the element type at the last variable index.
    let mut ty = match &lv.host {
        Host::Var(v) => match v {
            crate::ir::Var::Global(g) => program.global(*g).ty,
            crate::ir::Var::Local(_) => return None,
        },
        Host::Deref(p) => types.pointee(p.ty)?,
    };
    for pr in &lv.proj[..=k] {
        ty = match pr {
            crate::ir::Proj::Field { comp, index } => {
                types.comp(*comp).fields.get(*index as usize)?.ty
            }
            crate::ir::Proj::Index(_) => match types.kind(ty) {
                TypeKind::Array { elem, .. } => *elem,
                _ => return None,
            },
        };
    }
    let TypeKind::Comp(comp) = types.kind(ty) else {
        return None;
    };
    // After the last variable index, every index is a constant: exact bytes.
    Some((*comp, proj_bytes(types, ty, &lv.proj[k + 1..])?))
}

/// The class of the declared type of the object a target names, for globals and locals
/// (heap objects and library state have none).
fn declared_class(program: &Program, target: Target) -> Option<TypeClass> {
    let Target::Addr(a) = target else {
        return None;
    };
    let ty = match a.base {
        Base::Global(g) => program.global(g).ty,
        Base::Local { func, local, .. } => program.function(func).local(local).ty,
        _ => return None,
    };
    Some(TypeClass::of(&program.types, ty))
}

/// Runs race detection.
///
/// Accesses to objects their thread has not published yet race with nothing under the
/// interleaving semantics of SV-COMP (sequential consistency, as the flag orders of
/// [`crate::lockset`] assume): other threads obtain the address only after the publishing
/// store, which follows those accesses in program order. When that store itself races, it is
/// reported as the race, so the verdict never rests on the earlier accesses. An object handed
/// to a call that may keep its address ([`crate::backend::Publishing::store`] false) may be
/// reached in ways the analysis does not see: its unpublished accesses are kept.
pub fn detect<'p, B: Backend<'p>>(inp: &Inputs<'_, 'p, B>) -> RaceResult<'p> {
    let keep: FxHashSet<Base> = inp
        .backend
        .publishing()
        .iter()
        .filter(|p| !p.store)
        .map(|p| p.object)
        .collect();
    let accesses: Vec<Access<'p>> = collect(inp)
        .into_iter()
        .filter(|a| {
            !a.mem.unpublished || matches!(a.mem.target, Target::Addr(x) if keep.contains(&x.base))
        })
        // An access the backend could not resolve, through a pointer that holds only the
        // function's own unescaped objects, touches private memory.
        .filter(|a| {
            !matches!(a.mem.target, Target::Typed(_))
                || !inp
                    .escape
                    .through_private_pointer(inp.program, a.func, &a.mem.site)
        })
        .collect();
    detect_on(inp, accesses)
}

/// Race detection on the accesses `accesses`.
fn detect_on<'p, B: Backend<'p>>(
    inp: &Inputs<'_, 'p, B>,
    accesses: Vec<Access<'p>>,
) -> RaceResult<'p> {
    let program = inp.program;
    // Signatures.
    let mut sig_index: FxHashMap<Signature, usize> = FxHashMap::default();
    let mut sigs: Vec<(Signature, Vec<usize>)> = Vec::new();
    for (i, a) in accesses.iter().enumerate() {
        let direct = matches!(a.mem.site, AccessSite::Lval(lv) if matches!(lv.host, Host::Var(_)));
        let s = Signature {
            thread: a.thread,
            kind: a.mem.kind,
            atomic: a.mem.atomic,
            precise: a.mem.precise,
            direct,
            target: a.mem.target,
            class: TypeClass::of(&program.types, a.mem.ty),
            locks: a.locks.clone(),
            active: a.active.clone(),
            inst_locks: a.inst_locks.clone(),
            member: member_range(program, &a.mem.site),
            elem_member: element_member(program, &a.mem.site),
            declared: declared_class(program, a.mem.target),
            slot: a.slot,
            bytewise: is_char(&program.types, a.mem.ty),
            opaque: matches!(a.mem.target, Target::Typed(_))
                && matches!(program.types.kind(a.mem.ty), TypeKind::Void),
        };
        match sig_index.get(&s) {
            Some(&k) => sigs[k].1.push(i),
            None => {
                sig_index.insert(s.clone(), sigs.len());
                sigs.push((s, vec![i]));
            }
        }
    }
    // Clusters.
    let mut by_base: BTreeMap<Base, Vec<usize>> = BTreeMap::new();
    let mut typed: Vec<usize> = Vec::new();
    for (k, (s, _)) in sigs.iter().enumerate() {
        match s.target {
            Target::Addr(a) => by_base.entry(a.base).or_default().push(k),
            Target::Typed(_) => typed.push(k),
        }
    }
    let mut checker = Checker {
        inp,
        checks: 0,
        truncated: false,
        held: held_for_life(inp.graph, inp.inherited, inp.thread_facts),
        contents: CompContents {
            types: &program.types,
            memo: FxHashMap::default(),
        },
    };
    let mut by_loc: BTreeMap<LocKey, LocRaces> = BTreeMap::new();
    for (base, ks) in &by_base {
        // Strings are never written; a thread instance's private memory races with nothing.
        if matches!(base, Base::Str(_)) || inp.escape.private(base) || !candidate(inp, &sigs, ks) {
            continue;
        }
        for (x, &i) in ks.iter().enumerate() {
            let key = LocKey::Base(*base, range_of(&sigs[i].0));
            let g = by_loc.entry(key).or_default();
            let mut i_must = g.must.contains(&i);
            for &j in &ks[x..] {
                if i_must && g.must.contains(&j) {
                    continue; // nothing new to learn
                }
                if let Some((conf, reasons)) = checker.check(&sigs[i].0, &sigs[j].0) {
                    g.add(i, j, conf, reasons);
                    i_must = g.must.contains(&i);
                }
            }
        }
    }
    let mut unreported = BTreeMap::new();
    if !typed.is_empty() {
        let mut contents = CompContents {
            types: &program.types,
            memo: FxHashMap::default(),
        };
        let escaped: Vec<usize> = by_base
            .iter()
            .filter(|(b, _)| inp.escape.escaped(b))
            .flat_map(|(_, ks)| ks.iter().copied())
            .collect();
        // Candidates in checking order: the typed signatures, then the escaped ones; per
        // class of the first access, the positions of the candidates of compatible classes
        // (computed once per class pair instead of once per signature pair).
        let cands: Vec<usize> = typed.iter().chain(&escaped).copied().collect();
        let mut classes: Vec<TypeClass> = cands.iter().map(|&k| sigs[k].0.class).collect();
        classes.sort();
        classes.dedup();
        let class_pos = |c: TypeClass| classes.binary_search(&c).unwrap_or(0);
        let cand_class: Vec<usize> = cands.iter().map(|&k| class_pos(sigs[k].0.class)).collect();
        // Per position, whether the classes are compatible strictly (else only through a
        // `void *` view, [`Unreported::VoidPointerView`]).
        let mut compatible_with: FxHashMap<TypeClass, Vec<(u32, bool)>> = FxHashMap::default();
        for (x, &i) in typed.iter().enumerate() {
            let ci = sigs[i].0.class;
            // One race per class, pointers together whatever they point to (the pairs of
            // pointers to unrelated structs are left out below, not reported apart).
            let key = LocKey::Typed(ci.loose());
            let positions = compatible_with.entry(ci).or_insert_with(|| {
                let ok: Vec<Option<bool>> = classes
                    .iter()
                    .map(|&c| {
                        contents
                            .compatible(ci, c, false)
                            .then(|| contents.compatible(ci, c, true))
                    })
                    .collect();
                (0..cands.len() as u32)
                    .filter_map(|p| ok[cand_class[p as usize]].map(|strict| (p, strict)))
                    .collect()
            });
            let g = by_loc.entry(key).or_default();
            let mut i_may = g.may.contains(&i);
            let from = positions.partition_point(|&(p, _)| (p as usize) < x);
            for &(p, strict) in &positions[from..] {
                let j = cands[p as usize];
                if !contents.member_may_overlap(&sigs[i].0, &sigs[j].0) {
                    continue;
                }
                // Races through unresolved pointers are may-races: participation is all.
                if i_may && g.may.contains(&j) {
                    continue;
                }
                if let Some(kind) = Unreported::of(&sigs[i].0, &sigs[j].0, strict) {
                    if !unreported.contains_key(&kind)
                        && checker.check(&sigs[i].0, &sigs[j].0).is_some()
                        && let Some(&x) = sigs[i].1.first()
                    {
                        unreported.insert(kind, accesses[x].loc);
                    }
                    continue;
                }
                if let Some((conf, reasons)) = checker.check(&sigs[i].0, &sigs[j].0) {
                    g.add(i, j, conf, reasons);
                    i_may = g.may.contains(&i);
                }
            }
        }
    }
    tracing::info!(
        accesses = accesses.len(),
        signatures = sigs.len(),
        typed = typed.len(),
        bases = by_base.len(),
        checks = checker.checks,
        "race detection"
    );
    let races = group(&accesses, &sigs, by_loc);
    RaceResult {
        accesses,
        races,
        truncated: checker.truncated,
        unreported,
    }
}

/// Why a may-race is not a must-race, as a bit set over [`REASONS`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Reasons(u16);

/// The texts of the [`Reasons`] bits.
const REASONS: [&str; 8] = [
    "access through an unresolved pointer",
    "imprecise offset",
    "several possible targets",
    "heap object may stand for several allocations",
    "same non-unique thread",
    "not certainly parallel",
    "a common lock may be held",
    "a lock held at a thread creation may order the accesses",
];

impl Reasons {
    fn add(&mut self, i: usize) {
        self.0 |= 1 << i;
    }

    /// How much the reasons doubt a pair, least first: whether the location itself is
    /// uncertain (an unresolved pointer, an imprecise offset, several targets, a heap object
    /// standing for several: the first four [`REASONS`]), then how many reasons there are. A
    /// race leads with its least doubtful pair, so one access through an unresolved pointer
    /// does not hide a resolved pair of the same location behind it.
    fn doubt(self) -> (bool, u32) {
        (self.0 & 0b1111 != 0, self.0.count_ones())
    }

    fn texts(self) -> Vec<&'static str> {
        REASONS
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & (1 << i) != 0)
            .map(|(_, t)| *t)
            .collect()
    }
}

/// Racing signature pairs of one location.
#[derive(Default)]
struct LocRaces {
    must_pair: Option<(usize, usize)>,
    must: FxHashSet<usize>,
    /// The may pair the race reports first, with its reasons: the least doubtful one
    /// ([`Reasons::doubt`]), the first found among equals.
    may_pair: Option<((usize, usize), Reasons)>,
    may: FxHashSet<usize>,
}

impl LocRaces {
    fn add(&mut self, i: usize, j: usize, conf: Confidence, reasons: Reasons) {
        match conf {
            Confidence::Must => {
                self.must_pair.get_or_insert((i, j));
                self.must.insert(i);
                self.must.insert(j);
            }
            Confidence::May => {
                if self
                    .may_pair
                    .is_none_or(|(_, r)| reasons.doubt() < r.doubt())
                {
                    self.may_pair = Some(((i, j), reasons));
                }
                self.may.insert(i);
                self.may.insert(j);
            }
        }
    }
}

/// Where a race is, for grouping.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum LocKey {
    Base(Base, ByteRange),
    Typed(TypeClass),
}

fn range_of(s: &Signature) -> ByteRange {
    match s.target {
        Target::Addr(a) => a.range,
        Target::Typed(_) => ByteRange::ALL,
    }
}

/// The access-state machine's verdict on a base (seed 001 Fig. 6): some write, and accesses
/// from two threads or from a non-unique one.
fn candidate<'p, B: Backend<'p>>(
    inp: &Inputs<'_, 'p, B>,
    sigs: &[(Signature, Vec<usize>)],
    ks: &[usize],
) -> bool {
    let mut threads = FxHashSet::default();
    let mut write = false;
    let mut non_unique = false;
    for &k in ks {
        let s = &sigs[k].0;
        threads.insert(s.thread);
        write |= s.kind == AccessKind::Write;
        non_unique |= !inp.thread_facts[s.thread.0 as usize].unique;
    }
    write && (threads.len() >= 2 || non_unique)
}

struct Checker<'a, 'b, 'p, B: Backend<'p>> {
    inp: &'a Inputs<'b, 'p, B>,
    checks: u64,
    truncated: bool,
    /// Per thread, the locks ancestors hold for its whole life (see [`held_for_life`]).
    held: Vec<Holders>,
    /// Struct layouts, for the member shapes of accesses.
    contents: CompContents<'p>,
}

/// Locks held for a thread's whole life, with the thread holding them.
type Holders = SmallVec<[(ThreadId, SmallSet<Held>); 1]>;

/// Per thread T, the locks some thread H holds during T's whole life: its parent's inherited
/// locks, and those an ancestor H holds for the whole life of its child C on T's chain when
/// every thread from C down to T ends before its parent does (each is joined, it does not
/// outlive its parent), so T lives inside C's life, inside H's critical section; and those an
/// ancestor holds for the whole life of a thread X of T's chain ([`Inherited::ancestors_hold`],
/// X joined by that ancestor) when T lives inside X's life.
fn held_for_life(
    graph: &ThreadGraph,
    inherited: &[Inherited],
    tf: &[mhp::ThreadFacts],
) -> Vec<Holders> {
    graph
        .threads
        .iter()
        .map(|t| {
            let mut out: Holders = SmallVec::new();
            let Some(chain) = &tf[t.id.0 as usize].ancestry else {
                return out;
            };
            // Walk up from T while each thread ends before its parent.
            for i in (1..chain.len()).rev() {
                let (parent, child) = (chain[i - 1], chain[i]);
                let inh = &inherited[child.0 as usize].must;
                if !inh.is_empty() {
                    out.push((parent, inh.clone()));
                }
                // Ancestors holding locks for the child's whole life (they join it first).
                out.extend(inherited[child.0 as usize].ancestors_hold.iter().cloned());
                let outlives = tf[parent.0 as usize]
                    .outliving
                    .as_ref()
                    .is_none_or(|o| o.contains(&child));
                if outlives {
                    break;
                }
            }
            out
        })
        .collect()
}

impl<'p, B: Backend<'p>> Checker<'_, '_, 'p, B> {
    /// Whether access `x` happens after `y`, of threads in the subtrees of two children C1
    /// (toward `x`) and C2 (toward `y`) of a unique thread P: P holds `m` without a break from
    /// C1's creation to C2's, and for the whole life of C2, inside which `y`'s thread lives;
    /// `x`'s side took `m` after C1's creation and before `x`, so after P released it, after
    /// `y`'s thread ended.
    fn sibling_inside_critical_section(&self, x: &Signature, y: &Signature) -> bool {
        // Most threads live inside no critical section: nothing to look up.
        if self.held[y.thread.0 as usize].is_empty() {
            return false;
        }
        let tf = self.inp.thread_facts;
        let (Some(cx), Some(cy)) = (
            &tf[x.thread.0 as usize].ancestry,
            &tf[y.thread.0 as usize].ancestry,
        ) else {
            return false;
        };
        let k = cx.iter().zip(cy).take_while(|(a, b)| a == b).count();
        if k == 0 || cx.len() <= k || cy.len() <= k {
            return false;
        }
        let (p, c1, c2) = (cx[k - 1], cx[k], cy[k]);
        if !tf[p.0 as usize].unique {
            return false;
        }
        let inherited = self.inp.inherited;
        let Some(from_c1) = inherited
            .get(c2.0 as usize)
            .and_then(|i| i.creation_since.iter().find(|(s, _)| *s == c1))
            .map(|(_, l)| l)
        else {
            return false;
        };
        let taken = taken_since(inherited, &x.locks, &cx[k + 1..]);
        self.held[y.thread.0 as usize]
            .iter()
            .filter(|(h, _)| *h == p)
            .flat_map(|(_, l)| l.iter())
            .any(|h| from_c1.contains(&h.lock) && taken.contains(&h.lock))
    }

    /// Classifies a pair of signatures: `None` when they cannot race.
    fn check(&mut self, a: &Signature, b: &Signature) -> Option<(Confidence, Reasons)> {
        if self.checks >= MAX_PAIR_CHECKS {
            self.truncated = true;
            return None;
        }
        self.checks += 1;
        let inp = self.inp;
        let tf = inp.thread_facts;
        if a.kind == AccessKind::Read && b.kind == AccessKind::Read {
            return None;
        }
        if a.atomic && b.atomic {
            return None;
        }
        if a.thread == b.thread && tf[a.thread.0 as usize].unique {
            return None;
        }
        // Each thread's own element: keys name the bytes whatever the backend resolved (an
        // origin is an offset in the object both access, or one address), so they hold for
        // typed targets too.
        if slots::disjoint(a.slot.as_ref(), b.slot.as_ref()) {
            return None;
        }
        // Bytes.
        if let (Target::Addr(x), Target::Addr(y)) = (a.target, b.target) {
            if x.base != y.base || !x.range.overlaps(&y.range) {
                return None;
            }
            // Different members of one struct: of the elements of one struct array
            // (`a[i].f`, `a[j].g`), or through pointers to it (`p->f`, `a[j].g`). Each shape
            // says the access touches those bytes of some object of the struct, and objects
            // of one struct type do not partially overlap (C11 §6.5.2.3, see
            // [`CompContents::member_may_overlap`]).
            let shapes = |s: &Signature| [s.elem_member, s.member];
            let contents = &mut self.contents;
            // Both at exact bytes that overlap: the same bytes viewed through two struct
            // types (type punning), which the layouts cannot rule out.
            let punned = x.exact && y.exact;
            if shapes(a).iter().flatten().any(|sx| {
                shapes(b)
                    .iter()
                    .flatten()
                    .any(|sy| (sx.0 == sy.0 || !punned) && contents.members_apart(*sx, *sy))
            }) {
                return None;
            }
            if per_thread(inp.program, &x.base) && a.direct && b.direct {
                return None;
            }
            if let Base::Heap { func, edge, .. } = x.base
                && inp.private.contains(&(func, edge))
            {
                return None;
            }
        }
        // Locks.
        let inh_a = &inp.inherited[a.thread.0 as usize];
        let inh_b = &inp.inherited[b.thread.0 as usize];
        let parents = |t: ThreadId| inp.graph.thread(t).parents.as_slice();
        let is_parent = |p: ThreadId, t: ThreadId| parents(t).contains(&p);
        let share_parent = parents(a.thread)
            .iter()
            .any(|p| parents(b.thread).contains(p));
        // Locks held by the accessing threads, or by their parents for their whole lives
        // (different parents cannot hold the same lock at the same time; every parent of a
        // thread with several holds the inherited locks).
        let protected = sets_exclude(&a.locks.must, &b.locks.must)
            || (!is_parent(a.thread, b.thread) && sets_exclude(&a.locks.must, &inh_b.must))
            || (!is_parent(b.thread, a.thread) && sets_exclude(&b.locks.must, &inh_a.must))
            || (!share_parent && sets_exclude(&inh_a.must, &inh_b.must));
        // Locks ancestors hold for the threads' whole lives: a thread holding one at its
        // access, or two different holders, exclude each other.
        let (held_a, held_b) = (
            &self.held[a.thread.0 as usize],
            &self.held[b.thread.0 as usize],
        );
        let protected = protected
            || held_b
                .iter()
                .any(|(h, l)| *h != a.thread && sets_exclude(&a.locks.must, l))
            || held_a
                .iter()
                .any(|(h, l)| *h != b.thread && sets_exclude(&b.locks.must, l))
            || held_a.iter().any(|(ha, la)| {
                held_b
                    .iter()
                    .any(|(hb, lb)| ha != hb && sets_exclude(la, lb))
            });
        // The same bytes are in the same instance, whose lock both hold (for a region lock:
        // the same object is in the region of one element of the root, whose lock both hold).
        let instance = a.inst_locks.iter().any(|l| {
            b.inst_locks.contains(l)
                && match l {
                    InstLock::Region { root, .. } => inp.backend.region_disjoint(root),
                    InstLock::Field(..) | InstLock::Element { .. } => true,
                }
        });
        // A `pthread_once` routine (holding its once-lock in write mode) ends before any
        // `pthread_once` on the same control returns: before the creation of a thread whose
        // every parent had returned from one (holds the once-lock in read mode for the
        // thread's life; a thread created inside the routine sees it in write mode).
        let table = &inp.locksets.table;
        let once_before = |x: &Signature, inh: &Inherited| {
            x.locks.must.iter().any(|h| {
                h.mode == crate::model::LockMode::Write
                    && matches!(table.key(h.lock), crate::lockset::LockKey::Once(..))
                    && inh
                        .must
                        .iter()
                        .any(|g| g.lock == h.lock && g.mode == crate::model::LockMode::Read)
            })
        };
        let once = once_before(a, inh_b) || once_before(b, inh_a);
        // The synchronisation idioms the locksets track (barriers, flags, counters,
        // handshake semaphores), each asked both ways.
        let ls = &inp.locksets;
        let orders = |x: &Signature, y: &Signature| {
            ls.barrier_orders(x.thread, &x.locks, y.thread, &y.locks)
                || ls.flag_orders(x.thread, &x.locks, y.thread, &y.locks)
                || ls.counter_orders(x.thread, &x.locks, y.thread, &y.locks)
                || ls.handshake_orders(x.thread, &x.locks, y.thread, &y.locks)
        };
        let barrier = orders(a, b) || orders(b, a);
        if protected || instance || once || barrier {
            return None;
        }
        if ordered_by_lock_history(inp.inherited, tf, a, b)
            || ordered_by_lock_history(inp.inherited, tf, b, a)
            || self.sibling_inside_critical_section(a, b)
            || self.sibling_inside_critical_section(b, a)
        {
            return None;
        }
        if tf[a.thread.0 as usize].interrupts_only
            || tf[b.thread.0 as usize].interrupts_only
            || !mhp::may_parallel(tf, a.thread, &a.active, b.thread, &b.active)
        {
            return None;
        }
        let mut reasons = Reasons::default();
        let exact = |s: &Signature| matches!(s.target, Target::Addr(x) if x.exact);
        if !matches!(a.target, Target::Addr(_)) || !matches!(b.target, Target::Addr(_)) {
            reasons.add(0);
        } else if !exact(a) || !exact(b) {
            reasons.add(1);
        }
        if !a.precise || !b.precise {
            reasons.add(2);
        }
        if let Target::Addr(x) = a.target
            && matches!(x.base, Base::Heap { .. })
            && !inp.graph.single_instance(inp.program, inp.backend, &x.base)
        {
            reasons.add(3);
        }
        if a.thread == b.thread {
            reasons.add(4);
        } else if !mhp::must_parallel(tf, a.thread, &a.active, b.thread, &b.active) {
            reasons.add(5);
        }
        if sets_may_share(&a.locks.may, &b.locks.may) {
            reasons.add(6);
        }
        // A lock held while an ancestor created one thread, and taken by the other thread at
        // any time, may order the accesses.
        let a_locks = inh_a.ever.union(&inh_a.ancestral);
        let b_locks = inh_b.ever.union(&inh_b.ancestral);
        if sets_may_share(&inh_a.ancestral, &b_locks) || sets_may_share(&inh_b.ancestral, &a_locks)
        {
            reasons.add(7);
        }
        let conf = if reasons == Reasons::default() {
            Confidence::Must
        } else {
            Confidence::May
        };
        Some((conf, reasons))
    }
}

/// Whether access `x`, of a unique thread P, happens before access `y` of a descendant T of P
/// through a lock (`notes/racerf-goblint.md` §7; Goblint's mustlockHistory and
/// descendantLockset): P holds `m` without a break from the creation of its child C (toward
/// T) to `x`, while some thread from C down to T took `m` before the path to `y` went on (T's
/// own lock history at `y`, or a creator's history at the create statement of the next
/// thread). That acquisition waits until P releases `m`, which is after `x`.
fn ordered_by_lock_history(
    inherited: &[Inherited],
    tf: &[mhp::ThreadFacts],
    x: &Signature,
    y: &Signature,
) -> bool {
    if x.locks.since.is_empty() {
        return false;
    }
    let (Some(cp), Some(ct)) = (
        &tf[x.thread.0 as usize].ancestry,
        &tf[y.thread.0 as usize].ancestry,
    ) else {
        return false;
    };
    if ct.len() <= cp.len() || !ct.starts_with(cp) || !tf[x.thread.0 as usize].unique {
        return false;
    }
    let held = x.locks.since(ct[cp.len()]);
    if held.is_empty() {
        return false;
    }
    let taken = taken_since(inherited, &y.locks, &ct[cp.len() + 1..]);
    held.iter().any(|l| taken.contains(l))
}

/// The locks surely taken on the way to an access (with `locks`) since the creation of the
/// subtree root above `below`: the accessing thread's history, and for each thread of `below`
/// (the chain under that root, down to the accessing thread) its creator's history at its
/// create statement.
fn taken_since(
    inherited: &[Inherited],
    locks: &LocksAt,
    below: &[ThreadId],
) -> SmallSet<crate::lockset::LockId> {
    below
        .iter()
        .filter_map(|t| inherited.get(t.0 as usize))
        .fold(locks.hist.clone(), |acc, i| acc.union(&i.creation_hist))
}

/// Whether each thread has its own instance of the object (a local, a `_Thread_local` global).
fn per_thread(program: &Program, base: &Base) -> bool {
    match base {
        Base::Local { .. } => true,
        Base::Global(g) => program.global(*g).thread_local,
        _ => false,
    }
}

/// What makes two collected accesses the same (contexts that add nothing are merged).
type AccessKey = (
    ThreadId,
    FuncId,
    EdgeId,
    Target,
    AccessKind,
    bool,
    u32,
    u32,
    Option<slots::SlotKey>,
    SiteKey,
    SmallVec<[InstLock; 1]>,
);

/// What else distinguishes two accesses of one statement to one target: the lvalue or
/// argument written (by address: the same expression of the program in every context), and
/// the backend's facts about it at the context (the only object touched, region, still
/// unpublished). Accesses that differ in these are checked apart: an access through `t` in
/// `s->v + t->v` under `s`'s instance lock is not protected by it.
type SiteKey = (
    u8,
    usize,
    bool,
    Option<crate::backend::regions::Region>,
    bool,
);

/// The [`SiteKey`] of an access.
fn site_key(mem: &MemAccess<'_>) -> SiteKey {
    let (tag, site) = match mem.site {
        AccessSite::Lval(lv) => (0, std::ptr::from_ref(lv) as usize),
        AccessSite::Pointee(e) => (1, std::ptr::from_ref(e) as usize),
        AccessSite::Hidden(f) => (2, f.0 as usize),
    };
    (tag, site, mem.precise, mem.region, mem.unpublished)
}

/// Dense ids of distinct values (locksets and active-thread summaries repeat across many
/// accesses: keys of ids keep the deduplication table small).
struct Interner<T>(FxHashMap<std::sync::Arc<T>, u32>);

impl<T: std::hash::Hash + Eq> Interner<T> {
    /// The id of `x` and its shared copy.
    fn intern(&mut self, x: T) -> (u32, std::sync::Arc<T>) {
        if let Some((k, &i)) = self.0.get_key_value(&x) {
            return (i, std::sync::Arc::clone(k));
        }
        let i = self.0.len() as u32;
        let k = std::sync::Arc::new(x);
        self.0.insert(std::sync::Arc::clone(&k), i);
        (i, k)
    }
}

/// Collects the accesses of every reachable statement of every thread context.
fn collect<'p, B: Backend<'p>>(inp: &Inputs<'_, 'p, B>) -> Vec<Access<'p>> {
    let program = inp.program;
    let mut out = Vec::new();
    let mut seen: FxHashSet<AccessKey> = FxHashSet::default();
    let mut lock_ids: Interner<LocksAt> = Interner(FxHashMap::default());
    let mut active_ids: Interner<ActiveAt> = Interner(FxHashMap::default());
    for tc in &inp.graph.contexts {
        let thread = tc.thread;
        for c in tc.ids() {
            let func = tc.ctx(c).func;
            let Some(cfg) = &program.function(func).body else {
                continue;
            };
            for (ei, e) in cfg.edges.iter().enumerate() {
                if !inp.locksets.reachable(thread, c, e.src)
                    || inp.children.contains(thread, c, func, e.src)
                {
                    continue;
                }
                let edge = EdgeId(ei as u32);
                let ctx = tc.context(c, edge);
                for mem in inp.backend.accesses(&ctx) {
                    if matches!(mem.target, Target::Addr(a) if matches!(a.base, Base::Str(_))) {
                        continue;
                    }
                    let node = if mem.after_call && inp.locksets.reachable(thread, c, e.dst) {
                        e.dst
                    } else {
                        e.src
                    };
                    let Some(locks) = inp.locksets.at(thread, c, node) else {
                        continue;
                    };
                    let active = inp.mhp.at(Point {
                        thread,
                        ctx: c,
                        node,
                    });
                    let (lock_id, locks) = lock_ids.intern(locks);
                    let (active_id, active) = active_ids.intern(active);
                    let slot = inp.slots.key(program, inp.backend, tc, c, edge, &mem);
                    let inst_locks = instance_locks(inp, tc, c, edge, &mem, &locks);
                    let key = (
                        thread,
                        func,
                        edge,
                        mem.target,
                        mem.kind,
                        mem.atomic,
                        lock_id,
                        active_id,
                        slot,
                        site_key(&mem),
                        inst_locks.clone(),
                    );
                    if !seen.insert(key) {
                        continue;
                    }
                    out.push(Access {
                        thread,
                        ctx: c,
                        edge,
                        func,
                        mem,
                        loc: e.loc,
                        locks,
                        active,
                        inst_locks,
                        slot,
                    });
                }
            }
        }
    }
    out
}

/// The instance locks of an access (see [`Access::inst_locks`]): a symbolic lock `O.m` held
/// while the access's lvalue is `O.f…` (or `*d` with `d` surely holding `&O.f…`: the
/// backend's alias, [`Backend::alias`], or a single-definition one), in the function of the
/// access or, through parameters its callers bind (`update(&s->f)` with `*p` accessed in
/// `update`), in a caller at most [`INSTANCE_CALLER_DEPTH`] calls up; a per-element lock
/// `M[e]` held at an access `A[e]…`; a region lock `L[y]` held at an access to the region of
/// index `y` ([`InstLock::Region`]).
fn instance_locks<'p, B: Backend<'p>>(
    inp: &Inputs<'_, 'p, B>,
    tc: &crate::context::ThreadContexts,
    ctx: FnCtxId,
    edge: EdgeId,
    mem: &MemAccess<'_>,
    locks: &LocksAt,
) -> SmallVec<[InstLock; 1]> {
    let program = inp.program;
    let table = &inp.locksets.table;
    let mut out = SmallVec::new();
    // Only symbolic locks make instance locks.
    if locks.sym.is_empty() {
        return out;
    }
    region_locks(program, table, mem, locks, &mut out);
    let AccessSite::Lval(lv) = mem.site else {
        out.sort();
        out.dedup();
        return out;
    };
    element_locks(inp, &tc.context(ctx, edge), lv, locks, &mut out);
    let mut func = tc.ctx(ctx).func;
    let mut ctx = ctx;
    let mut at = edge;
    let mut lv = lv.clone();
    let rebase = |target: crate::ir::Lval, lv: &crate::ir::Lval| {
        let mut t = target;
        t.proj.extend(lv.proj.iter().cloned());
        t.ty = lv.ty;
        t
    };
    for depth in 0..=INSTANCE_CALLER_DEPTH {
        if let crate::ir::Host::Deref(p) = &lv.host {
            // `*d` with `d` surely holding `&O.f` here (the backend's alias).
            if let Some(crate::ir::ExprKind::AddrOf(target)) =
                inp.backend.alias(&tc.context(ctx, at), p).map(|e| e.kind)
            {
                let t = rebase(*target, &lv);
                instance_locks_in(program, table, func, &t, locks, &mut out);
            }
            // `*d` with `d = &O.f` (a single-definition alias) is the lvalue `O.f`.
            if let Some(crate::ir::ExprKind::AddrOf(target)) =
                crate::lockset::local_alias(program, func, p).map(|e| e.kind)
            {
                lv = rebase(*target, &lv);
            }
        }
        instance_locks_in(program, table, func, &lv, locks, &mut out);
        if depth == INSTANCE_CALLER_DEPTH {
            break;
        }
        // `*p` with `p` a parameter the function never changes: `*arg` in the caller.
        let crate::ir::Host::Deref(p) = &lv.host else {
            break;
        };
        let Some(k) = unchanged_param(program, func, p) else {
            break;
        };
        // Callbacks get their arguments from the library function, not from the call.
        let mut callers = tc.calls.iter().filter(|(_, ts)| {
            ts.iter()
                .any(|t| t.ctx == ctx && !matches!(t.kind, crate::context::CallKind::Callback(_)))
        });
        let Some(((caller, call_edge), _)) = callers.next() else {
            break;
        };
        let caller_func = tc.ctx(*caller).func;
        // Every caller context must call through the same statement (the same argument).
        if callers.any(|((c, e), _)| tc.ctx(*c).func != caller_func || e != call_edge) {
            break;
        }
        let arg = program
            .function(caller_func)
            .body
            .as_ref()
            .and_then(|cfg| cfg.edges.get(call_edge.0 as usize))
            .and_then(|e| match &e.op {
                crate::ir::Op::Call { args, .. } => args.get(k).cloned(),
                _ => None,
            });
        let Some(arg) = arg else { break };
        lv = crate::ir::Lval {
            host: crate::ir::Host::Deref(Box::new(arg)),
            proj: lv.proj.clone(),
            ty: lv.ty,
        };
        func = caller_func;
        ctx = *caller;
        at = *call_edge;
    }
    out.sort();
    out.dedup();
    out
}

/// The region locks of an access ([`InstLock::Region`]): element locks `L[y]` of the
/// function of the access's region index `y`, whose index expression is exactly `y`.
fn region_locks(
    program: &Program,
    table: &crate::lockset::LockTable,
    mem: &MemAccess<'_>,
    locks: &LocksAt,
    out: &mut SmallVec<[InstLock; 1]>,
) {
    let Some(r) = mem.region else {
        return;
    };
    let (func, y) = r.index;
    let f = program.function(func);
    let name = crate::ir::pretty::lval_to_string(
        program,
        &crate::ir::Lval {
            host: Host::Var(crate::ir::Var::Local(y)),
            proj: Vec::new(),
            ty: f.local(y).ty,
        },
        Some(f),
    );
    for id in locks.sym.iter() {
        if let Some(s) = table.sym(*id)
            && s.func == func
            && s.deps.as_slice() == [y]
            && let Some((lock, ix)) = &s.elem
            && *ix == name
        {
            out.push(InstLock::Region {
                lock: *lock,
                root: r.root,
            });
        }
    }
}

/// The per-element locks held at an access `A[e]…` ([`crate::lockset::SymLock`]): an element
/// lock `M[e]` of the same function with the same index expression.
fn element_locks<'p, B: Backend<'p>>(
    inp: &Inputs<'_, 'p, B>,
    ctx: &crate::context::Context,
    lv: &crate::ir::Lval,
    locks: &LocksAt,
    out: &mut SmallVec<[InstLock; 1]>,
) {
    let program = inp.program;
    let func = ctx.fctx.func;
    let mut elems = locks
        .sym
        .iter()
        .filter_map(|id| inp.locksets.table.sym(*id))
        .filter(|s| s.func == func)
        .filter_map(|s| s.elem.as_ref())
        .peekable();
    if elems.peek().is_none() {
        return;
    }
    let Some(((array, ix, size), _)) = crate::lockset::elem_of_lval(program, lv) else {
        return;
    };
    if crate::lockset::index_deps(program, func, ix).is_none() {
        return;
    }
    let printed = crate::ir::pretty::expr_to_string(program, ix, Some(program.function(func)));
    let Some(id) =
        crate::lockset::array_identity(program, inp.backend, inp.graph, ctx, array, size)
    else {
        return;
    };
    for (lock, index) in elems {
        if *index == printed {
            out.push(InstLock::Element {
                lock: *lock,
                array: id,
            });
        }
    }
}

/// How many calls up [`instance_locks`] follows parameters.
const INSTANCE_CALLER_DEPTH: usize = 2;

/// The symbolic locks of `func` held (in `locks`) whose object is a prefix of `lv`.
fn instance_locks_in(
    program: &Program,
    table: &crate::lockset::LockTable,
    func: FuncId,
    lv: &crate::ir::Lval,
    locks: &LocksAt,
    out: &mut SmallVec<[InstLock; 1]>,
) {
    for id in locks.sym.iter() {
        let Some(s) = table.sym(*id) else { continue };
        if s.func != func || lv.proj.len() <= s.proj_len {
            continue;
        }
        if !matches!(lv.proj[s.proj_len], crate::ir::Proj::Field { comp, .. } if Some(comp) == s.comp)
        {
            continue;
        }
        let prefix = crate::ir::Lval {
            host: lv.host.clone(),
            proj: lv.proj[..s.proj_len].to_vec(),
            ty: lv.ty,
        };
        let f = program.function(func);
        if crate::ir::pretty::lval_to_string(program, &prefix, Some(f)) == s.object
            && let Some(comp) = s.comp
        {
            out.push(InstLock::Field(comp, s.lock_off));
        }
    }
}

/// For `e` a load of parameter number `k` of `func` that the body never writes and whose
/// address it never takes, `Some(k)`.
fn unchanged_param(program: &Program, func: FuncId, e: &crate::ir::Expr) -> Option<usize> {
    let crate::ir::ExprKind::Load(lv) = &crate::ir::visit::strip_casts(e).kind else {
        return None;
    };
    let (crate::ir::Host::Var(crate::ir::Var::Local(p)), true) = (&lv.host, lv.proj.is_empty())
    else {
        return None;
    };
    let f = program.function(func);
    let k = f.params.iter().position(|x| x == p)?;
    let cfg = f.body.as_ref()?;
    let mut touched = false;
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| touched |= l == *p);
    for e in &cfg.edges {
        let written = match &e.op {
            crate::ir::Op::Assign { lhs, .. } => Some(lhs),
            crate::ir::Op::Call { dest: Some(d), .. } => Some(d),
            crate::ir::Op::Asm { .. } => {
                touched = true;
                None
            }
            _ => None,
        };
        if written.is_some_and(|w| w.host == crate::ir::Host::Var(crate::ir::Var::Local(*p))) {
            touched = true;
        }
    }
    (!touched).then_some(k)
}

/// Turns the racing pairs of each location into races: a must entry with every access of a
/// must pair, a may entry with the accesses only in may pairs.
fn group(
    accesses: &[Access<'_>],
    sigs: &[(Signature, Vec<usize>)],
    by_loc: BTreeMap<LocKey, LocRaces>,
) -> Vec<Race> {
    // A representative access pair of two signatures: the write first, then source order.
    let pair = |(i, j): (usize, usize)| {
        let (mut a, mut b) = (
            sigs[i].1[0],
            sigs[j].1[usize::from(i == j && sigs[j].1.len() > 1)],
        );
        let rank = |x: usize| (accesses[x].mem.kind != AccessKind::Write, accesses[x].loc);
        if rank(b) < rank(a) {
            std::mem::swap(&mut a, &mut b);
        }
        (a, b)
    };
    let members = |set: &FxHashSet<usize>, skip: (usize, usize)| {
        let mut v: Vec<usize> = set
            .iter()
            .flat_map(|&k| sigs[k].1.iter().copied())
            .filter(|&x| x != skip.0 && x != skip.1)
            .collect();
        v.sort_by_key(|&i| (accesses[i].loc, accesses[i].mem.kind, accesses[i].thread, i));
        // One access per location, kind and thread.
        v.dedup_by_key(|i| (accesses[*i].loc, accesses[*i].mem.kind, accesses[*i].thread));
        v
    };
    let mut races = Vec::new();
    for (_, g) in by_loc {
        if let Some(p) = g.must_pair {
            let (a, b) = pair(p);
            let mut acc = vec![a, b];
            acc.extend(members(&g.must, (a, b)));
            races.push(Race {
                confidence: Confidence::Must,
                accesses: acc,
                reasons: Vec::new(),
                witness: None,
            });
        }
        if let Some((p, reasons)) = g.may_pair {
            let extra: FxHashSet<usize> = g
                .may
                .iter()
                .copied()
                .filter(|x| !g.must.contains(x))
                .collect();
            if g.must_pair.is_none() || !extra.is_empty() {
                let (a, b) = pair(p);
                let mut acc = vec![a, b];
                acc.extend(members(&extra, (a, b)));
                races.push(Race {
                    confidence: Confidence::May,
                    accesses: acc,
                    reasons: reasons.texts(),
                    witness: None,
                });
            }
        }
    }
    races.sort_by_cached_key(|r| {
        (
            r.confidence,
            r.accesses.iter().map(|&i| accesses[i].loc).min(),
            r.accesses.clone(),
        )
    });
    races
}
