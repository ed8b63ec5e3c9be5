//! Transfer functions of the value analysis: expression evaluation, assignments, branch
//! refinement, calls and library models, over the memory of [`super::memory`] (seed 001 §4,
//! "EVA backend"; §5.3.1 for the shared-memory reads of the over-approximating mode).
//!
//! **Shared memory.** A thread's state tracks its own stores flow-sensitively. What other
//! threads store comes from the *shared invariant* ([`Shared`]): per base and writing thread,
//! the join of every value stored to it. A read of memory another thread may write returns the
//! thread's own value joined with the other threads' (and, for a thread that may run several
//! times, its own other instances') stores, so a branch on a flag another thread changes stays
//! reachable (seed 001 Fig. 5). The thread-modular fixpoint ([`super::ValueBackend`]) repeats
//! the thread analyses until the invariant is stable.
//!
//! Assumptions (documented in DESIGN.md's spirit, "sound up to"): writes through pointers the
//! analysis cannot resolve change no tracked value; a recursive function's pointer stores into
//! its caller's instance of a local are joined, not lost; `malloc` does not return null.

use super::memory::{Obj, State, Val, top};
use super::publication::{Holder, Site, site_base};
use super::regions::{PtrStore, Stored};
use crate::backend::regions::{self as reg, Region};
use crate::backend::syntactic::bitfield_location;
use crate::backend::{Base, TypeClass};
use crate::context::{CallKind, CallSite, CallTarget, ThreadId};
use crate::dataflow::{At, Callees, Domain};
use crate::ir::GlobalId;
use crate::ir::types::{IntKind, TypeKind};
use crate::ir::visit::strip_casts;
use crate::ir::{
    BinOp, Callee, Edge, Expr, ExprKind, FuncId, Host, LocalId, Lval, Op, Program, Proj, TypeId,
    UnOp, Var,
};
use crate::model::library::Runs;
use crate::model::{Role, Roles};
use racedar_domains::{Bool3, Interval, Ptr, Value};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

impl Domain for State {
    fn bottom() -> Self {
        State::bottom()
    }
    fn is_bottom(&self) -> bool {
        !self.live
    }
    fn join_with(&mut self, o: &Self) -> bool {
        State::join_with(self, o)
    }
    fn widen_with(&mut self, o: &Self) -> bool {
        State::widen_with(self, o)
    }
    fn narrow_with(&mut self, o: &Self) -> bool {
        State::narrow_with(self, o)
    }
    const NARROWS: bool = true;
}

/// The class of an lvalue type that decides which stores through unresolved pointers a read
/// sees ([`Shared::read`]): the effective-type rule (C11 §6.5p7) lets a store of one class
/// change only objects read with the same class (signedness and qualifiers aside; pointers
/// by the class of what they point to, `void *` and character pointers alike).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum WildKey {
    /// A scalar that is not a pointer, by [`TypeClass`].
    Scalar(TypeClass),
    /// A pointer to an object of this class.
    Pointer(TypeClass),
    /// A pointer to a function of this type.
    Function(crate::ir::TypeId),
}

impl WildKey {
    /// The key of an lvalue type; `None` for aggregates (never read or stored as a whole
    /// through a pointer by the value analysis).
    pub fn of(types: &crate::ir::types::TypeTable, ty: crate::ir::TypeId) -> Option<WildKey> {
        if types.is_aggregate(ty) {
            return None;
        }
        Some(match types.pointee(ty) {
            Some(p) if matches!(types.kind(p), crate::ir::types::TypeKind::Function(_)) => {
                WildKey::Function(p)
            }
            Some(p) => WildKey::Pointer(TypeClass::of(types, p).loose()),
            None => WildKey::Scalar(TypeClass::of(types, ty)),
        })
    }
}

/// The scalar types inside `ty` (itself when scalar; fields and array elements, nested at most
/// 8 deep), each once.
fn scalar_types(
    types: &crate::ir::types::TypeTable,
    ty: crate::ir::TypeId,
    out: &mut Vec<crate::ir::TypeId>,
    depth: u32,
) {
    use crate::ir::types::TypeKind;
    if depth > 8 {
        return;
    }
    match types.kind(ty) {
        TypeKind::Array { elem, .. } => scalar_types(types, *elem, out, depth + 1),
        TypeKind::Comp(c) => {
            for f in &types.comp(*c).fields {
                scalar_types(types, f.ty, out, depth + 1);
            }
        }
        TypeKind::Void | TypeKind::Function(_) => {}
        _ => {
            if !out.contains(&ty) {
                out.push(ty);
            }
        }
    }
}

/// The shared invariant: per base, the objects each thread stored to it (joined over all its
/// stores).
#[derive(Clone, Debug, Default)]
pub struct Shared {
    by_base: FxHashMap<Base, SmallVec<[(ThreadId, Obj); 1]>>,
    /// When each base's stores by each thread last changed (a value of `clock`).
    version: FxHashMap<(Base, ThreadId), u64>,
    /// Stores through unresolved pointers ([`Effects::wild`]), per thread and key, with the
    /// access size in bytes: each is an object whose bytes `[0, size)` hold the join of the
    /// values stored.
    wild: FxHashMap<(ThreadId, WildKey, u64), Obj>,
    /// When each thread's stores through unresolved pointers last changed.
    wild_version: FxHashMap<ThreadId, u64>,
    /// The signal handlers (of the previous round's thread-creation graph): they may run
    /// before their installer creates any thread.
    pub interrupts: FxHashSet<ThreadId>,
    /// Counts changes.
    clock: u64,
}

impl Shared {
    /// Every base a pointer that [`Shared::read`] may give `reader` points to: stores by
    /// other threads (by `reader`'s other instances too unless it is `unique`) into bases,
    /// and every thread's stores through unresolved pointers.
    pub fn pointed(&self, reader: ThreadId, unique: bool) -> FxHashSet<Base> {
        let mut out = FxHashSet::default();
        let objs = self
            .by_base
            .values()
            .flat_map(|v| v.iter())
            .filter(|(t, _)| *t != reader || !unique)
            .map(|(_, o)| o)
            .chain(self.wild.values());
        for o in objs {
            out.extend(o.pointer_targets());
        }
        out
    }

    /// What threads other than `reader` (and `reader`'s other instances, unless it is unique
    /// or the base is its own local) may have stored at `off` (`size` bytes) of `b`.
    ///
    /// A read of an lvalue with key `key` ([`WildKey`]) also sees those threads' stores
    /// through unresolved pointers with the same key and size, and the
    /// reader's own (flow-insensitively: the store may come before the read): such a
    /// pointer may point to any object (seed 001 §5: a read of a shared location sees every
    /// value a thread that may run in parallel stores there). Stores of other classes change
    /// no object read with this one (the effective-type rule that
    /// [`crate::backend::TypeClass`] assumes too); byte-wise reads (`key` `None`, library
    /// copies) see none.
    ///
    /// `multi`: whether threads other than signal handlers may run at the read (for `main`,
    /// after its first thread creation); before that only signal handlers' stores are seen.
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        &self,
        b: &Base,
        reader: ThreadId,
        unique: bool,
        multi: bool,
        off: Interval,
        size: u64,
        key: Option<WildKey>,
    ) -> Val {
        let own_local = matches!(b, Base::Local { thread, .. } if *thread == reader);
        let seen = |w: ThreadId| {
            (multi || self.interrupts.contains(&w)) && (w != reader || (!unique && !own_local))
        };
        let mut out = Val::bottom();
        if let Some(ws) = self.by_base.get(b) {
            for (w, o) in ws {
                if seen(*w) {
                    out = out.join(&o.read(off, size));
                }
            }
        }
        if let Some(key) = key
            && !self.wild.is_empty()
        {
            for ((w, k, n), o) in &self.wild {
                if *n == size && *k == key && (seen(*w) || *w == reader) {
                    out = out.join(&o.read(Interval::constant(0), size));
                }
            }
        }
        out
    }

    /// Whether some thread other than `reader` stored to `b`.
    pub fn written_by_others(&self, b: &Base, reader: ThreadId) -> bool {
        self.by_base
            .get(b)
            .is_some_and(|ws| ws.iter().any(|(w, _)| *w != reader))
    }

    /// Joins (`widen`: widens) the stores of `writer`, to known bases and through unresolved
    /// pointers (`wild`, by size); whether anything changed.
    pub fn merge(
        &mut self,
        writer: ThreadId,
        stores: FxHashMap<Base, Obj>,
        wild: FxHashMap<(WildKey, u64), Obj>,
        widen: bool,
    ) -> bool {
        let mut changed = false;
        let mut wild: Vec<((WildKey, u64), Obj)> = wild.into_iter().collect();
        wild.sort_by_key(|a| a.0);
        for ((k, n), o) in wild {
            let c = match self.wild.get_mut(&(writer, k, n)) {
                Some(old) => old.join_with(&o, widen),
                None => {
                    self.wild.insert((writer, k, n), o);
                    true
                }
            };
            if c {
                self.clock += 1;
                self.wild_version.insert(writer, self.clock);
                changed = true;
            }
        }
        let mut stores: Vec<(Base, Obj)> = stores.into_iter().collect();
        stores.sort_by_key(|a| a.0);
        for (b, o) in stores {
            let ws = self.by_base.entry(b).or_default();
            let c = match ws.iter_mut().find(|(w, _)| *w == writer) {
                Some((_, old)) => old.join_with(&o, widen),
                None => {
                    ws.push((writer, o));
                    ws.sort_by_key(|(w, _)| *w);
                    true
                }
            };
            if c {
                self.clock += 1;
                self.version.insert((b, writer), self.clock);
                changed = true;
            }
        }
        changed
    }

    /// Advances the change counter (for changes tracked outside the invariant).
    pub fn tick(&mut self) {
        self.clock += 1;
    }

    /// The current value of the change counter.
    pub fn clock(&self) -> u64 {
        self.clock
    }

    /// Whether the stores `reader` sees (as [`Shared::read`] selects them) in some base of
    /// `bases` changed after time `t`.
    pub fn changed_since<'b>(
        &self,
        reader: ThreadId,
        unique: bool,
        bases: impl IntoIterator<Item = &'b Base>,
        t: u64,
    ) -> bool {
        let mut bases = bases.into_iter().peekable();
        // Stores through unresolved pointers reach every shared read (the reader's own too).
        if bases.peek().is_some() && self.wild_version.iter().any(|(_, v)| *v > t) {
            return true;
        }
        bases.any(|b| {
            let own_local = matches!(b, Base::Local { thread, .. } if *thread == reader);
            self.by_base.get(b).is_some_and(|ws| {
                ws.iter().any(|(w, _)| {
                    (*w != reader || (!unique && !own_local))
                        && self.version.get(&(*b, *w)).is_some_and(|v| *v > t)
                })
            })
        })
    }
}

/// The addresses an lvalue designates.
#[derive(Clone, Debug)]
pub struct Addrs {
    /// Known objects and byte-offset intervals of the first accessed byte.
    pub targets: SmallVec<[(Base, Interval); 1]>,
    /// Some address is unknown.
    pub unknown: bool,
    /// Bytes accessed.
    pub size: u64,
    /// A bit-field: the bytes are its memory location, which other fields share.
    pub bitfield: bool,
    /// For `*p` (plus projections) where `p` is only an integer (no address, e.g. the null
    /// pointer of `offsetof`'s `&((T *)0)->f`): the integers the designated address takes.
    pub numeric: Interval,
    /// For `*p` (plus projections) where `p` points into the recent object of a site
    /// ([`super::publication`]): that site.
    pub recent: Option<Site>,
}

/// What a thread's analysis produced besides its states.
#[derive(Clone, Debug, Default)]
pub struct Effects {
    /// The thread's stores to memory other threads may see.
    pub stores: FxHashMap<Base, Obj>,
    /// States at create statements and the argument passed, by create site.
    pub creates: FxHashMap<CallSite, (State, Val)>,
    /// Heap bases that stood for several objects.
    pub summaries: FxHashSet<Base>,
    /// Stores through unresolved pointers, by key of the stored lvalue's type and access size
    /// in bytes: each an object whose bytes `[0, size)` hold the join of the values stored
    /// (other threads' reads see them, [`Shared::read`]).
    pub wild: FxHashMap<(WildKey, u64), Obj>,
    /// Shared bases the thread read (its results depend on their shared stores).
    pub reads: std::cell::RefCell<FxHashSet<Base>>,
    /// Stores of possible addresses ([`super::regions`]).
    pub ptr_stores: FxHashSet<PtrStore>,
    /// More than [`super::regions::MAX_PTR_STORES`] pointer stores: some are missing.
    pub ptr_overflow: bool,
    /// Where objects of which sites were published: (site, function, edge, by a store to
    /// memory or a thread creation rather than by a call that may keep the address).
    pub published: FxHashSet<(Site, FuncId, crate::ir::EdgeId, bool)>,
}

/// The transfer functions of one thread.
pub struct Interp<'a, 'p> {
    /// The program.
    pub program: &'p Program,
    /// Library roles.
    pub roles: &'a Roles,
    /// The thread analysed.
    pub thread: ThreadId,
    /// Whether the thread runs at most once.
    pub unique: bool,
    /// Other threads' stores.
    pub shared: &'a Shared,
    /// Locals whose address is taken.
    pub addr_taken: &'a FxHashSet<(FuncId, LocalId)>,
    /// The globals each function may reach by name ([`super::footprint`]).
    pub footprints: &'a super::footprint::Footprints,
    /// The bases other threads' stores point to ([`Shared::pointed`]).
    pub escaped: &'a FxHashSet<Base>,
    /// Globals holding thread-specific data keys whose values are modelled
    /// ([`specific_keys`]).
    pub specific_keys: &'a FxHashSet<GlobalId>,
    /// What the analysis produced.
    pub effects: Effects,
    /// What the store being performed stores and into which region (set by
    /// [`Interp::assign`], for the pointer-store records).
    pub cur: (Stored, Option<Region>),
    /// The edge being interpreted (for the publication records).
    pub at_edge: Option<(FuncId, crate::ir::EdgeId)>,
    /// The site whose recent object the value being assigned surely points into (set around
    /// [`Interp::assign`] by its callers): stored into a pointer cell of another fresh
    /// object, it stays unpublished there ([`super::publication::FreshObj::held_in`]).
    pub cur_fresh: Option<Site>,
    /// The syntactic backend: the address-taken functions an indirect call through an
    /// unknown pointer may enter.
    pub fallback: &'a crate::backend::syntactic::Syntactic<'p>,
}

/// The negation of a comparison.
fn negate(op: BinOp) -> BinOp {
    use BinOp::*;
    match op {
        Lt => Ge,
        Ge => Lt,
        Gt => Le,
        Le => Gt,
        Eq => Ne,
        Ne => Eq,
        o => o,
    }
}

/// The comparison with its operands swapped.
fn flip(op: BinOp) -> BinOp {
    use BinOp::*;
    match op {
        Lt => Gt,
        Gt => Lt,
        Le => Ge,
        Ge => Le,
        o => o,
    }
}

/// Whether a value is zero: always, never or maybe.
pub fn truth(v: &Val) -> Bool3 {
    if v.is_bottom() {
        return Bool3::Maybe;
    }
    let may_zero = v.int.contains(0) || v.ptr.null;
    let may_nonzero = (!v.int.is_bottom() && v.int.as_constant() != Some(0))
        || !v.ptr.targets().is_empty()
        || v.ptr.unknown;
    match (may_zero, may_nonzero) {
        (true, false) => Bool3::False,
        (false, true) => Bool3::True,
        _ => Bool3::Maybe,
    }
}

/// Takes the orphans of `s` whose objects still need publishing (fresh, or with contents not
/// in the shared invariant yet).
fn orphans_to_publish(s: &mut State) -> SmallVec<[Site; 2]> {
    let orphans = s.publ.take_orphans();
    orphans
        .iter()
        .copied()
        .filter(|x| s.publ.fresh(*x).is_some() || s.publ.pending.contains(x))
        .collect()
}

/// The result `r` of integer arithmetic on `operand`: an unknown address too when the operand
/// may be an address, so an address laundered through integers is still seen to escape
/// ([`super::publication`]).
fn laundered(operand: &Val, mut r: Val) -> Val {
    if operand.ptr.unknown || !operand.ptr.targets().is_empty() {
        r.ptr = Ptr::unknown();
        r.int = Interval::TOP;
    }
    r
}

/// Whether `p` is only addresses (not null, not an integer) and `n` only an integer.
fn address_plus_int(p: &Val, n: &Val) -> bool {
    !p.ptr.targets().is_empty()
        && !p.ptr.unknown
        && !p.ptr.null
        && p.int.is_bottom()
        && n.ptr.is_empty()
        && !n.int.is_bottom()
}

fn bool_val(b: Bool3) -> Val {
    Val::int(match b {
        Bool3::True => Interval::constant(1),
        Bool3::False => Interval::constant(0),
        Bool3::Maybe => Interval::new(0, 1),
    })
}

impl<'p> Interp<'_, 'p> {
    fn types(&self) -> &'p crate::ir::TypeTable {
        &self.program.types
    }

    /// Bits and signedness of an integer type.
    fn int_shape(&self, ty: TypeId) -> Option<(u32, bool, IntKind)> {
        let k = self.types().int_kind(ty)?;
        let bits = self.types().size_of(ty).unwrap_or(8) as u32 * 8;
        Some((bits, k.is_signed(), k))
    }

    /// Any value of type `ty`.
    pub fn top_of(&self, ty: TypeId) -> Val {
        match self.int_shape(ty) {
            Some((_, _, IntKind::Bool)) => Val::int(Interval::new(0, 1)),
            Some((bits, signed, _)) => Val::int(Interval::TOP.wrap(bits, signed)),
            None => match self.types().kind(ty) {
                TypeKind::Float(_) | TypeKind::Complex(_) => Val::int(Interval::TOP),
                _ => top(),
            },
        }
    }

    /// `v` converted to type `ty` (integers wrap; pointers keep their addresses).
    fn convert(&self, v: Val, ty: TypeId) -> Val {
        match self.int_shape(ty) {
            Some((_, _, IntKind::Bool)) => bool_val(truth(&v)),
            Some((bits, signed, _)) => Value {
                int: v.int.wrap(bits, signed),
                ptr: v.ptr,
            },
            None => match self.types().kind(ty) {
                TypeKind::Float(_) | TypeKind::Complex(_) => laundered(&v, Val::int(Interval::TOP)),
                _ => v,
            },
        }
    }

    /// Whether reads of `b` must include other threads' stores.
    fn shared_base(&self, b: &Base) -> bool {
        match b {
            Base::Local {
                thread,
                func,
                local,
            } => *thread != self.thread || self.addr_taken.contains(&(*func, *local)),
            Base::Global(g) => !self.program.global(*g).thread_local,
            Base::Heap { .. } => true,
            Base::Str(_) | Base::Hidden(_) | Base::Func(_) | Base::Specific { .. } => false,
        }
    }

    /// Reads `size` bytes at `off` of `b`.
    pub fn read(&self, s: &State, b: &Base, off: Interval, size: u64) -> Val {
        self.read_via(s, b, off, size, None)
    }

    /// Reads `size` bytes at `off` of `b`; `via`: through a pointer into the recent object of
    /// that site ([`super::publication`]), which is then the only object read.
    pub fn read_via(
        &self,
        s: &State,
        b: &Base,
        off: Interval,
        size: u64,
        via: Option<Site>,
    ) -> Val {
        self.read_typed(s, b, off, size, via, None)
    }

    /// [`Interp::read_via`] of an lvalue of type `ty` (`None`: bytes), whose key
    /// ([`WildKey`]) selects the stores through unresolved pointers the read sees.
    pub fn read_typed(
        &self,
        s: &State,
        b: &Base,
        off: Interval,
        size: u64,
        via: Option<Site>,
        ty: Option<crate::ir::TypeId>,
    ) -> Val {
        let fresh = s.fresh_of(b);
        if let Some(f) = fresh
            && via == Some(f.site)
        {
            // Nobody else can have stored to it.
            return f.recent.read(off, size);
        }
        let mut own = match s.stored(b) {
            Some(o) => o.read(off, size),
            None => s.frame.default_obj(b).read(off, size),
        };
        if let Some(f) = fresh {
            own = own.join(&f.recent.read(off, size));
        }
        if self.shared_base(b) {
            self.effects.reads.borrow_mut().insert(*b);
            let key = ty.and_then(|t| WildKey::of(self.types(), t));
            own.join(
                &self
                    .shared
                    .read(b, self.thread, self.unique, s.multi, off, size, key),
            )
        } else {
            own
        }
    }

    /// Stores `v` at `off` of `b` in `s` (and in the thread's visible stores); `via` as for
    /// [`Interp::read_via`]. A store of an address into memory other threads may read
    /// publishes the object ([`super::publication`]).
    #[allow(clippy::too_many_arguments)]
    pub fn store(
        &mut self,
        s: &mut State,
        b: Base,
        off: Interval,
        size: u64,
        v: &Val,
        strong: bool,
        via: Option<Site>,
    ) {
        if matches!(b, Base::Func(_) | Base::Str(_)) {
            return;
        }
        let mut nested = None;
        if self.holder(&b).is_none() {
            // An address stored into the recent object of its own site (`p->self = p`) stays
            // unpublished with it; so does the recent object of another site stored into a
            // pointer cell of it (`p->buf = q` with `q` fresh).
            let own = via.filter(|site| site_base(self.thread, *site) == b);
            nested = own.zip(self.cur_fresh).and_then(|(container, site)| {
                let cell = off.as_constant()?;
                let exact = !v.ptr.unknown
                    && !v.ptr.targets().is_empty()
                    && v.ptr
                        .targets()
                        .iter()
                        .all(|(t, _)| *t == site_base(self.thread, site));
                (site != container
                    && exact
                    && self.pointer_sized(size)
                    && s.publ.fresh(site).is_some())
                .then_some((site, container, cell))
            });
            if let Some((site, container, cell)) = nested {
                s.publ.unnest(site, container, cell);
            }
            let except: SmallVec<[Site; 2]> = own.into_iter().chain(nested.map(|n| n.0)).collect();
            self.publish_carried(s, std::slice::from_ref(v), &except, true);
        }
        self.store_raw(s, b, off, size, v, strong, via);
        if let Some((site, container, cell)) = nested {
            s.publ.nest(site, container, cell);
        }
    }

    /// [`Interp::store`] of a value that cannot be the address of an unpublished object (what a
    /// library function writes: it was not given that address).
    #[allow(clippy::too_many_arguments)]
    fn store_raw(
        &mut self,
        s: &mut State,
        b: Base,
        off: Interval,
        size: u64,
        v: &Val,
        strong: bool,
        via: Option<Site>,
    ) {
        if matches!(b, Base::Func(_) | Base::Str(_)) {
            return;
        }
        // Pointer cells of a fresh object that held other fresh objects are overwritten.
        if s.publ.fresh.iter().any(|f| !f.held_in.is_empty())
            && let Some(site) = s.fresh_of(&b).map(|f| f.site)
        {
            let hi = off.hi().saturating_add(size.max(1) as i128);
            s.publ.overwrite(site, off.lo(), hi);
        }
        match self.holder(&b) {
            Some(h) => {
                s.forget_holders(|x| x == h);
                s.orig.forget(|x| x == h);
                s.eqs.forget(h);
            }
            None => {
                let into_fresh = via.is_some_and(|site| site_base(self.thread, site) == b);
                if into_fresh && let Some(site) = via {
                    // Pointers stored into a fresh object restrict the regions it may enter.
                    let links: SmallVec<[Region; 1]> = match &self.cur.0 {
                        Stored::From(r) => smallvec::smallvec![*r],
                        Stored::Fresh(l) => l.clone(),
                        Stored::Other => SmallVec::new(),
                    };
                    if !links.is_empty() {
                        s.publ.add_links(site, &links);
                    }
                }
                self.record_ptr_store(Some((b, off)), v, into_fresh);
            }
        }
        match s.fresh_of(&b).map(|f| (f.site, (*f.recent).clone())) {
            Some((site, mut recent)) => {
                if via == Some(site) {
                    // The one recent object: strong updates.
                    recent.write(off, size, v, strong);
                } else {
                    // The recent object or another one of the site.
                    recent.write(off, size, v, false);
                    let mut o = s.obj(&b);
                    o.write(off, size, v, false);
                    s.set(b, o);
                }
                s.set_recent(site, recent);
            }
            None => {
                let mut o = s.obj(&b);
                o.write(off, size, v, strong);
                s.set(b, o);
            }
        }
        if s.multi && self.shared_base(&b) {
            self.effects
                .stores
                .entry(b)
                .or_insert_with(Obj::empty)
                .write(off, size, v, false);
        }
    }

    /// The trackable local ([`Holder`]) a base is, if it is one: a local of this
    /// thread whose address is never taken.
    pub fn holder(&self, b: &Base) -> Option<Holder> {
        match b {
            Base::Local {
                thread,
                func,
                local,
            } if *thread == self.thread && !self.addr_taken.contains(&(*func, *local)) => {
                Some((*func, *local))
            }
            _ => None,
        }
    }

    /// The site whose recent object the pointer `e` surely points into: `h`, `h + k`, `h - k`
    /// or `&h->f…` (casts aside) for a holder `h` of the object ([`super::publication`]).
    pub fn fresh_site(&self, s: &State, func: FuncId, e: &Expr) -> Option<Site> {
        if s.publ.fresh.is_empty() {
            return None;
        }
        let mut e = strip_casts(e);
        for _ in 0..16 {
            match &e.kind {
                ExprKind::Load(lv) if matches!(lv.host, Host::Var(_)) => {
                    return match lv.host {
                        Host::Var(Var::Local(l))
                            if lv.proj.is_empty() && !self.addr_taken.contains(&(func, l)) =>
                        {
                            s.publ.held_by((func, l))
                        }
                        _ => None,
                    };
                }
                // A pointer cell of a fresh object holding another one (`p->buf`).
                ExprKind::Load(lv) => {
                    if !s.publ.fresh.iter().any(|f| !f.held_in.is_empty()) {
                        return None;
                    }
                    let a = self.lval_addrs(s, func, lv);
                    let container = a.recent?;
                    let [(b, off)] = a.targets.as_slice() else {
                        return None;
                    };
                    if a.unknown || *b != site_base(self.thread, container) {
                        return None;
                    }
                    return s.publ.held_in(container, off.as_constant()?);
                }
                ExprKind::Binary(BinOp::PtrAdd | BinOp::PtrSub, a, _) => e = strip_casts(a),
                ExprKind::AddrOf(lv) => match &lv.host {
                    Host::Deref(p) => e = strip_casts(p),
                    Host::Var(_) => return None,
                },
                _ => return None,
            }
        }
        None
    }

    /// The trackable local `e` loads as a whole (casts aside), if any.
    fn holder_expr(&self, func: FuncId, e: &Expr) -> Option<Holder> {
        match &strip_casts(e).kind {
            ExprKind::Load(lv) => self.holder_lval(func, lv),
            _ => None,
        }
    }

    /// The trackable local `lv` is as a whole, if any.
    fn holder_lval(&self, func: FuncId, lv: &Lval) -> Option<Holder> {
        match lv.host {
            Host::Var(Var::Local(l))
                if lv.proj.is_empty() && !self.addr_taken.contains(&(func, l)) =>
            {
                Some((func, l))
            }
            _ => None,
        }
    }

    /// Whether `v` may be the address of an object of `site` allocated by this thread.
    fn carries(&self, v: &Val, site: Site) -> bool {
        let base = site_base(self.thread, site);
        v.ptr.unknown || v.ptr.targets().iter().any(|(b, _)| *b == base)
    }

    /// Publishes the objects the values `vals` may be the addresses of: they are no longer
    /// fresh, and the contents of pending ones go to the shared invariant.
    /// `except`: a site whose object is not published by this (a store into itself);
    /// `store`: by a store to memory or a thread creation, which order the earlier accesses
    /// unless their statement races (else by a call that may keep the address).
    fn publish_carried(&mut self, s: &mut State, vals: &[Val], except: &[Site], store: bool) {
        if s.publ.is_empty() {
            return;
        }
        let sites = s.publ.sites();
        let carried: SmallVec<[Site; 2]> = sites
            .into_iter()
            .filter(|site| !except.contains(site) && vals.iter().any(|v| self.carries(v, *site)))
            .collect();
        self.publish_sites(s, carried, store);
    }

    /// Publishes the objects of `carried`, and then the objects they held in their pointer
    /// cells ([`super::publication::FreshObj::held_in`]), and so on.
    fn publish_sites(&mut self, s: &mut State, mut carried: SmallVec<[Site; 2]>, store: bool) {
        while !carried.is_empty() {
            if let Some((f, e)) = self.at_edge {
                for site in &carried {
                    if s.publ.fresh(*site).is_some() {
                        tracing::trace!(
                            object = %self.program.function(site.0).name,
                            alloc_edge = site.1.0,
                            by = %self.program.function(f).name,
                            edge = e.0,
                            store,
                            "object published"
                        );
                        self.effects.published.insert((*site, f, e, store));
                    }
                }
            }
            for site in s.publish(|x| carried.contains(&x)) {
                let b = site_base(self.thread, site);
                let o = s.view(&b);
                self.effects
                    .stores
                    .entry(b)
                    .or_insert_with(Obj::empty)
                    .join_with(&o, false);
            }
            carried = orphans_to_publish(s);
        }
    }

    /// Publishes the orphans of `s` ([`super::publication::Publication::orphans`]): objects
    /// whose container's fact ended. Called after each transfer.
    pub fn publish_orphans(&mut self, s: &mut State) {
        if s.publ.orphans.is_empty() {
            return;
        }
        let carried = orphans_to_publish(s);
        self.publish_sites(s, carried, false);
    }

    /// Whether `size` bytes are one pointer (a cell [`super::publication::FreshObj::held_in`]
    /// records).
    fn pointer_sized(&self, size: u64) -> bool {
        Some(size) == self.types().size_of(self.types().common.void_ptr)
    }

    /// The addresses `lv` designates in `s` (function `func`).
    pub fn lval_addrs(&self, s: &State, func: FuncId, lv: &Lval) -> Addrs {
        let types = self.types();
        let mut out = Addrs {
            targets: SmallVec::new(),
            unknown: false,
            size: types.size_of(lv.ty).unwrap_or(1),
            bitfield: false,
            numeric: Interval::BOTTOM,
            recent: None,
        };
        let mut numeric = Interval::BOTTOM;
        let (mut targets, start_ty): (SmallVec<[(Base, Interval); 1]>, TypeId) = match &lv.host {
            Host::Var(Var::Global(g)) => (
                smallvec::smallvec![(Base::Global(*g), Interval::constant(0))],
                self.program.global(*g).ty,
            ),
            Host::Var(Var::Local(l)) => {
                let f = self.program.function(func);
                let Some(local) = f.locals.get(l.0 as usize) else {
                    out.unknown = true;
                    return out;
                };
                (
                    smallvec::smallvec![(
                        Base::Local {
                            thread: self.thread,
                            func,
                            local: *l,
                        },
                        Interval::constant(0)
                    )],
                    local.ty,
                )
            }
            Host::Deref(p) => {
                out.recent = self.fresh_site(s, func, p);
                let pv = self.eval(s, func, p);
                let v = pv.as_ptr();
                if v.targets().is_empty() && !v.unknown {
                    // An integer used as an address (`(T *)0`): its numeric value.
                    numeric = if pv.ptr.null {
                        pv.int.join(&Interval::constant(0))
                    } else {
                        pv.int
                    };
                }
                out.unknown = v.unknown;
                let ts = v
                    .targets()
                    .iter()
                    .filter(|(b, _)| !matches!(b, Base::Func(_)))
                    .copied()
                    .collect();
                let pointee = types.pointee(p.ty).unwrap_or(lv.ty);
                (ts, pointee)
            }
        };
        let mut ty = start_ty;
        let mut delta = Interval::constant(0);
        for (i, p) in lv.proj.iter().enumerate() {
            match p {
                Proj::Field { comp, index } => {
                    let info = types.comp(*comp);
                    let Some(f) = info.fields.get(*index as usize) else {
                        out.unknown = true;
                        return out;
                    };
                    if f.bit_field.is_some() && i + 1 == lv.proj.len() {
                        let loc = bitfield_location(info, *index as usize, 0);
                        delta = delta.add(&Interval::constant(loc.lo as i128));
                        out.size = loc.hi - loc.lo;
                        out.bitfield = true;
                    } else {
                        delta = delta.add(&Interval::constant(f.offset as i128));
                    }
                    ty = f.ty;
                }
                Proj::Index(ix) => {
                    let TypeKind::Array { elem, .. } = types.kind(ty) else {
                        out.unknown = true;
                        return out;
                    };
                    let esize = types.size_of(*elem).unwrap_or(1) as i128;
                    let iv = self.eval(s, func, ix).as_int();
                    delta = delta.add(&iv.mul(&Interval::constant(esize)));
                    ty = *elem;
                }
            }
        }
        for (_, off) in targets.iter_mut() {
            *off = off.add(&delta);
            if off.lo() < 0 {
                *off = off.meet(&Interval::new(0, racedar_domains::interval::POS_INF));
            }
        }
        targets.retain(|(_, off)| !off.is_bottom());
        out.targets = targets;
        if !numeric.is_bottom() {
            out.numeric = numeric.add(&delta);
        }
        out
    }

    /// The value of `e` in state `s` of function `func`.
    pub fn eval(&self, s: &State, func: FuncId, e: &Expr) -> Val {
        match &e.kind {
            ExprKind::Int(v) => Val::int(Interval::constant(*v)),
            ExprKind::Float(_) => Val::int(Interval::TOP),
            ExprKind::Str(id) => Val::address(Base::Str(*id), Interval::constant(0)),
            ExprKind::Func(f) => Val::address(Base::Func(*f), Interval::constant(0)),
            ExprKind::Unknown => self.top_of(e.ty),
            ExprKind::Load(lv) => {
                if self.types().is_aggregate(lv.ty) {
                    return top();
                }
                let a = self.lval_addrs(s, func, lv);
                if a.unknown || a.bitfield {
                    return self.top_of(lv.ty);
                }
                let mut v = Val::bottom();
                for (b, off) in &a.targets {
                    v = v.join(&self.read_typed(s, b, *off, a.size, a.recent, Some(lv.ty)));
                }
                if v.is_bottom() {
                    // Memory nobody is known to have stored to: any value of the type.
                    return self.top_of(lv.ty);
                }
                v
            }
            ExprKind::AddrOf(lv) => {
                let a = self.lval_addrs(s, func, lv);
                if a.targets.is_empty() && !a.unknown && !a.numeric.is_bottom() {
                    // `&((T *)0)->f` (`offsetof`): an integer.
                    return Val::int(a.numeric);
                }
                let mut p = if a.unknown {
                    Ptr::unknown()
                } else {
                    Ptr::none()
                };
                if !a.unknown {
                    for (b, off) in &a.targets {
                        p.add(*b, *off);
                    }
                }
                Value {
                    int: Interval::BOTTOM,
                    ptr: p,
                }
            }
            ExprKind::Cast(a) => {
                let v = self.eval(s, func, a);
                self.convert(v, e.ty)
            }
            ExprKind::Unary(op, a) => {
                let v = self.eval(s, func, a);
                match op {
                    UnOp::LogNot => bool_val(match truth(&v) {
                        Bool3::True => Bool3::False,
                        Bool3::False => Bool3::True,
                        Bool3::Maybe => Bool3::Maybe,
                    }),
                    UnOp::Neg => self.convert(laundered(&v, Val::int(v.as_int().neg())), e.ty),
                    UnOp::BitNot => {
                        self.convert(laundered(&v, Val::int(v.as_int().bitnot())), e.ty)
                    }
                }
            }
            ExprKind::Binary(op, a, b) => self.binary(s, func, *op, a, b, e.ty),
        }
    }

    fn elem_size(&self, ptr_ty: TypeId) -> i128 {
        self.types()
            .pointee(ptr_ty)
            .and_then(|t| self.types().size_of(t))
            .unwrap_or(1)
            .max(1) as i128
    }

    fn binary(&self, s: &State, func: FuncId, op: BinOp, a: &Expr, b: &Expr, ty: TypeId) -> Val {
        let va = self.eval(s, func, a);
        let vb = self.eval(s, func, b);
        if va.is_bottom() || vb.is_bottom() {
            return Val::bottom();
        }
        use BinOp::*;
        match op {
            PtrAdd | PtrSub => {
                let esize = self.elem_size(a.ty);
                let mut d = vb.as_int().mul(&Interval::constant(esize));
                if op == PtrSub {
                    d = d.neg();
                }
                let mut ptr = va.ptr.offset_by(&d);
                ptr.null = false;
                if va.ptr.null && !va.int.is_bottom() {
                    ptr.null = va.int.add(&d).contains(0);
                }
                Value {
                    int: if va.int.is_bottom() {
                        Interval::BOTTOM
                    } else {
                        va.int.add(&d)
                    },
                    ptr,
                }
            }
            PtrDiff => {
                let esize = self.elem_size(a.ty);
                let (pa, pb) = (va.as_ptr(), vb.as_ptr());
                match (pa.targets(), pb.targets()) {
                    ([(ba, oa)], [(bb, ob)]) if ba == bb && !pa.unknown && !pb.unknown => {
                        let d = oa.sub(ob).div(&Interval::constant(esize));
                        self.convert(Val::int(d), ty)
                    }
                    _ => self.top_of(ty),
                }
            }
            Lt | Gt | Le | Ge | Eq | Ne => bool_val(self.compare(op, &va, &vb, a.ty)),
            Add | Sub
                if address_plus_int(&va, &vb) || (op == Add && address_plus_int(&vb, &va)) =>
            {
                // An address held in an integer, moved by an integer (`(uintptr_t)p - off`):
                // the same object at another offset.
                let (p, n) = if address_plus_int(&va, &vb) {
                    (&va, vb.int)
                } else {
                    (&vb, va.int)
                };
                let d = if op == Sub { n.neg() } else { n };
                let mut ptr = p.ptr.offset_by(&d);
                ptr.null = false;
                self.convert(
                    Value {
                        int: Interval::BOTTOM,
                        ptr,
                    },
                    ty,
                )
            }
            _ => {
                let (x, y) = (va.as_int(), vb.as_int());
                let r = match op {
                    Add => x.add(&y),
                    Sub => x.sub(&y),
                    Mul => x.mul(&y),
                    Div => x.div(&y),
                    Rem => x.rem(&y),
                    Shl => x.shl(&y),
                    Shr => x.shr(&y),
                    BitAnd => x.bitand(&y),
                    BitOr => x.bitor(&y, false),
                    BitXor => x.bitor(&y, true),
                    _ => Interval::TOP,
                };
                self.convert(laundered(&va.join(&vb), Val::int(r)), ty)
            }
        }
    }

    /// The outcome of comparing `a` and `b` (operands of type `ty`).
    fn compare(&self, op: BinOp, a: &Val, b: &Val, ty: TypeId) -> Bool3 {
        use BinOp::*;
        let pointers = self.types().is_pointer(ty)
            || !a.ptr.targets().is_empty()
            || !b.ptr.targets().is_empty();
        if pointers {
            let (pa, pb) = (a.as_ptr(), b.as_ptr());
            let only_null = |p: &Ptr<Base>| p.null && p.targets().is_empty() && !p.unknown;
            let eq = if only_null(&pa) && only_null(&pb) {
                Bool3::True
            } else if (only_null(&pa) && !pb.null && !pb.unknown)
                || (only_null(&pb) && !pa.null && !pa.unknown)
            {
                Bool3::False
            } else {
                match (pa.targets(), pb.targets()) {
                    ([(ba, oa)], [(bb, ob)])
                        if !pa.null && !pb.null && !pa.unknown && !pb.unknown =>
                    {
                        if ba != bb {
                            Bool3::False
                        } else {
                            oa.eq3(ob)
                        }
                    }
                    _ => Bool3::Maybe,
                }
            };
            return match op {
                Eq => eq,
                Ne => match eq {
                    Bool3::True => Bool3::False,
                    Bool3::False => Bool3::True,
                    Bool3::Maybe => Bool3::Maybe,
                },
                _ => Bool3::Maybe,
            };
        }
        let (x, y) = (a.as_int(), b.as_int());
        let not = |b: Bool3| match b {
            Bool3::True => Bool3::False,
            Bool3::False => Bool3::True,
            Bool3::Maybe => Bool3::Maybe,
        };
        match op {
            Lt => x.lt(&y),
            Gt => y.lt(&x),
            Le => not(y.lt(&x)),
            Ge => not(x.lt(&y)),
            Eq => x.eq3(&y),
            Ne => not(x.eq3(&y)),
            _ => Bool3::Maybe,
        }
    }

    /// `lv = v` in `s`; `stored` says what kind of address `v` is ([`super::regions`]).
    pub fn assign(&mut self, s: &mut State, func: FuncId, lv: &Lval, v: &Val, stored: Stored) {
        let a = self.lval_addrs(s, func, lv);
        let strong = a.targets.len() == 1
            && !a.unknown
            && !a.bitfield
            && a.targets[0].1.as_constant().is_some();
        let v = if a.bitfield {
            self.top_of(lv.ty)
        } else {
            v.clone()
        };
        self.cur = (stored, self.lval_region(s, func, lv));
        if a.unknown {
            // The unresolved part of the store may store an address anywhere, and other
            // threads may read the value from any object ([`Shared::read`]). In this thread's
            // own state it changes no tracked value.
            self.record_ptr_store(None, &v, false);
            self.record_wild(lv.ty, a.size, &v);
        }
        for (b, off) in a.targets {
            self.store(s, b, off, a.size, &v, strong, a.recent);
        }
        self.cur = (Stored::Other, None);
    }

    /// Records a store of `v` (`size` bytes, lvalue type `ty`) through an unresolved pointer
    /// ([`Effects::wild`]); aggregates go scalar by scalar, each with any value of its type.
    pub(super) fn record_wild(&mut self, ty: crate::ir::TypeId, size: u64, v: &Val) {
        let types = self.types();
        let stores: Vec<(WildKey, u64, Val)> = match WildKey::of(types, ty) {
            Some(key) => vec![(key, size, v.clone())],
            None => {
                let mut leaves = Vec::new();
                scalar_types(types, ty, &mut leaves, 0);
                leaves
                    .into_iter()
                    .filter_map(|t| {
                        Some((
                            WildKey::of(types, t)?,
                            types.size_of(t).unwrap_or(1),
                            self.top_of(t),
                        ))
                    })
                    .collect()
            }
        };
        for (key, n, v) in stores {
            self.effects
                .wild
                .entry((key, n))
                .or_insert_with(Obj::empty)
                .write(Interval::constant(0), n, &v, false);
        }
    }

    /// Records a store of `v` into `target` (`None`: anywhere) when `v` may be an address;
    /// `into_fresh`: through a pointer into the recent object of the target's site.
    fn record_ptr_store(&mut self, target: Option<(Base, Interval)>, v: &Val, into_fresh: bool) {
        if v.ptr.targets().is_empty() && !v.ptr.unknown {
            return;
        }
        if self.effects.ptr_stores.len() >= super::regions::MAX_PTR_STORES {
            self.effects.ptr_overflow = true;
            return;
        }
        let (stored, into) = self.cur.clone();
        self.effects.ptr_stores.insert(PtrStore {
            targets: target.into_iter().collect(),
            anywhere: target.is_none(),
            into,
            value: v.ptr.targets().iter().map(|(b, _)| *b).collect(),
            value_unknown: v.ptr.unknown,
            stored,
            into_fresh,
        });
    }

    /// The region the pointer `e` surely points into ([`super::regions`]): a pointer loaded
    /// from (a member of) a root element `R[y]` (`y` a trackable local) or from an object of a
    /// region, the address of a root element, or a local coming from one; moved by pointer
    /// arithmetic or to a member.
    pub fn origin_of(&self, s: &State, func: FuncId, e: &Expr) -> Option<Region> {
        let mut e = strip_casts(e);
        for _ in 0..16 {
            match &e.kind {
                ExprKind::Load(lv) => {
                    if !self.types().is_pointer(lv.ty) {
                        return None;
                    }
                    if lv.proj.is_empty()
                        && let Host::Var(Var::Local(l)) = lv.host
                    {
                        return if self.addr_taken.contains(&(func, l)) {
                            None
                        } else {
                            s.orig.of((func, l))
                        };
                    }
                    return self.lval_region(s, func, lv);
                }
                ExprKind::Binary(BinOp::PtrAdd | BinOp::PtrSub, a, _) => e = strip_casts(a),
                ExprKind::AddrOf(lv) => match &lv.host {
                    Host::Deref(p) => e = strip_casts(p),
                    // The address of a root element (or of a member of it).
                    Host::Var(_) => return self.lval_region(s, func, lv),
                },
                _ => return None,
            }
        }
        None
    }

    /// The region of the object `lv` designates: `*p…` with `p` from a region, or (a member
    /// of) the root element `R[y]` itself.
    pub fn lval_region(&self, s: &State, func: FuncId, lv: &Lval) -> Option<Region> {
        match &lv.host {
            Host::Deref(p) => self.origin_of(s, func, p),
            Host::Var(_) => {
                let (root, ix) = reg::root_element(self.program, lv)?;
                let y = reg::index_local(ix)?;
                (!self.addr_taken.contains(&(func, y))).then_some(Region {
                    root,
                    index: (func, y),
                })
            }
        }
    }

    /// `lv = *src` for an aggregate: cell by cell when both sides are one exact object.
    fn copy_aggregate(&mut self, s: &mut State, func: FuncId, lv: &Lval, rhs: &Expr) {
        let dst = self.lval_addrs(s, func, lv);
        let size = dst.size;
        let src = match &rhs.kind {
            ExprKind::Load(r) => Some(self.lval_addrs(s, func, r)),
            _ => None,
        };
        let exact = |a: &Addrs| {
            a.targets.len() == 1 && !a.unknown && a.targets[0].1.as_constant().is_some()
        };
        if let Some(src) = src.filter(|x| exact(x) && exact(&dst)) {
            let (sb, so) = src.targets[0];
            let (db, doff) = dst.targets[0];
            let (so, doff) = (
                so.as_constant().unwrap_or(0) as u64,
                doff.as_constant().unwrap_or(0) as u64,
            );
            let sobj = match s.fresh_of(&sb) {
                Some(f) if src.recent == Some(f.site) => (*f.recent).clone(),
                Some(_) => s.view(&sb),
                None => match s.stored(&sb) {
                    Some(o) => o.clone(),
                    None => s.frame.default_obj(&sb),
                },
            };
            // Bytes without a cell in the source: its rest (and others' stores).
            let mut rest = sobj.rest.clone();
            if self.shared_base(&sb) {
                self.effects.reads.borrow_mut().insert(sb);
                rest = rest.join(&self.shared.read(
                    &sb,
                    self.thread,
                    self.unique,
                    s.multi,
                    Interval::new(so as i128, (so + size) as i128),
                    1,
                    None,
                ));
            }
            self.store(
                s,
                db,
                Interval::new(doff as i128, (doff + size.max(1) - 1) as i128),
                1,
                &rest,
                false,
                dst.recent,
            );
            for c in sobj.cells() {
                if c.off >= so && c.off + c.size <= so + size {
                    let v = self.read_via(
                        s,
                        &sb,
                        Interval::constant(c.off as i128),
                        c.size,
                        src.recent,
                    );
                    self.store(
                        s,
                        db,
                        Interval::constant((doff + c.off - so) as i128),
                        c.size,
                        &v,
                        true,
                        dst.recent,
                    );
                }
            }
            return;
        }
        for (b, off) in dst.targets {
            let hi = off.hi().saturating_add(size.max(1) as i128 - 1);
            self.store(
                s,
                b,
                Interval::new(off.lo(), hi),
                1,
                &top(),
                false,
                dst.recent,
            );
        }
    }

    /// Stores unknown values into every object `p` may point to, from the pointed byte on.
    fn havoc_pointee(&mut self, s: &mut State, func: FuncId, p: &Expr) {
        let v = self.eval(s, func, p).as_ptr();
        let via = self.fresh_site(s, func, p);
        for (b, off) in v.targets().to_vec() {
            if matches!(b, Base::Func(_) | Base::Str(_)) {
                continue;
            }
            let range = Interval::new(off.lo().max(0), racedar_domains::interval::POS_INF);
            self.store_raw(s, b, range, 1, &top(), false, via);
        }
    }

    /// Refines `s` with `cond` evaluating to `branch`; false when the branch is infeasible.
    pub fn assume(&self, s: &mut State, func: FuncId, cond: &Expr, branch: bool) -> bool {
        let t = truth(&self.eval(s, func, cond));
        if (branch && t == Bool3::False) || (!branch && t == Bool3::True) {
            return false;
        }
        self.refine(s, func, cond, branch, 0);
        true
    }

    fn value_preserving<'e>(&self, e: &'e Expr) -> Option<&'e Expr> {
        let ExprKind::Cast(inner) = &e.kind else {
            return None;
        };
        let (to, from) = (e.ty, inner.ty);
        if self.types().is_pointer(to) && self.types().is_pointer(from) {
            return Some(inner);
        }
        match (self.int_shape(to), self.int_shape(from)) {
            (Some((tb, ts, tk)), Some((fb, fs, fk)))
                if tk != IntKind::Bool && fk != IntKind::Bool =>
            {
                let fits = (ts == fs && tb >= fb) || (ts && !fs && tb > fb);
                fits.then_some(inner)
            }
            _ => None,
        }
    }

    fn refine(&self, s: &mut State, func: FuncId, cond: &Expr, branch: bool, depth: u32) {
        if depth > 8 {
            return;
        }
        match &cond.kind {
            ExprKind::Unary(UnOp::LogNot, a) => self.refine(s, func, a, !branch, depth + 1),
            // A truth test survives any cast that keeps zero and non-zero apart.
            ExprKind::Cast(a)
                if self.value_preserving(cond).is_some()
                    || self.types().int_kind(cond.ty) == Some(IntKind::Bool) =>
            {
                self.refine(s, func, a, branch, depth + 1);
            }
            ExprKind::Binary(op, a, b) if op.is_comparison() => {
                let op = if branch { *op } else { negate(*op) };
                let va = self.eval(s, func, a);
                let vb = self.eval(s, func, b);
                self.refine_side(s, func, a, op, &vb);
                self.refine_side(s, func, b, flip(op), &va);
            }
            ExprKind::Load(_) => {
                let zero = Val::int(Interval::constant(0));
                let op = if branch { BinOp::Ne } else { BinOp::Eq };
                self.refine_side(s, func, cond, op, &zero);
            }
            _ => {}
        }
    }

    /// Refines the lvalue loaded by `e` so that `e op other` holds.
    fn refine_side(&self, s: &mut State, func: FuncId, e: &Expr, op: BinOp, other: &Val) {
        let mut e = e;
        while let Some(inner) = self.value_preserving(e) {
            e = inner;
        }
        let ExprKind::Load(lv) = &e.kind else {
            return;
        };
        let a = self.lval_addrs(s, func, lv);
        if a.unknown || a.bitfield || a.targets.len() != 1 {
            return;
        }
        let (b, off) = a.targets[0];
        if off.as_constant().is_none() || matches!(b, Base::Func(_) | Base::Str(_)) {
            return;
        }
        // The recent object of a fresh site is refined when the lvalue surely goes to it;
        // otherwise it may be another object of the site.
        let recent = match s.fresh_of(&b) {
            Some(f) if a.recent == Some(f.site) => Some((f.site, (*f.recent).clone())),
            Some(_) => return,
            None => None,
        };
        let own = match (&recent, s.stored(&b)) {
            (Some((_, r)), _) => r.clone(),
            (None, Some(o)) => o.clone(),
            (None, None) => s.frame.default_obj(&b),
        };
        if own.summary {
            return;
        }
        let cur = self.read_typed(s, &b, off, a.size, a.recent, Some(lv.ty));
        let mut new = cur.clone();
        let y = other.as_int();
        let pointer = self.types().is_pointer(lv.ty);
        let other_null =
            other.as_ptr().null && other.as_ptr().targets().is_empty() && !other.as_ptr().unknown;
        match op {
            BinOp::Lt => new.int = cur.int.refine_lt(&y),
            BinOp::Le => new.int = cur.int.refine_le(&y),
            BinOp::Gt => new.int = cur.int.refine_gt(&y),
            BinOp::Ge => new.int = cur.int.refine_ge(&y),
            BinOp::Eq => {
                if pointer && other_null {
                    new = Val::int(Interval::constant(0)).join(&Value {
                        int: Interval::BOTTOM,
                        ptr: if cur.ptr.null || cur.ptr.unknown {
                            Ptr::null()
                        } else {
                            Ptr::none()
                        },
                    });
                    if !cur.int.contains(0) {
                        new.int = Interval::BOTTOM;
                    }
                } else if cur.ptr.targets().is_empty() && !cur.ptr.unknown {
                    new.int = cur.int.meet(&y);
                }
            }
            BinOp::Ne => {
                if y.as_constant() == Some(0) || (pointer && other_null) {
                    new.ptr.null = false;
                    new.int = cur.int.refine_ne(&Interval::constant(0));
                    if new.ptr.unknown {
                        // Still any non-null address.
                        new.ptr.null = false;
                    }
                } else if cur.ptr.targets().is_empty() && !cur.ptr.unknown {
                    new.int = cur.int.refine_ne(&y);
                }
            }
            _ => {}
        }
        if new == cur {
            return;
        }
        if new.is_bottom() {
            s.live = false;
            return;
        }
        let mut o = own;
        o.write(off, a.size, &new, true);
        match recent {
            Some((site, _)) => {
                // A refinement, not a write: the mod set stays.
                let written = s.written.contains(&b);
                s.set_recent(site, o);
                if !written {
                    s.written.remove(&b);
                }
            }
            None => s.replace(b, o),
        }
    }

    /// The state after a call edge handled here (library functions, unknown functions, the
    /// unresolved part of a call through a pointer).
    fn library_call(&mut self, at: At<'_>, edge: &Edge, s: &State) -> State {
        let func = at.fctx.func;
        let Op::Call { dest, callee, args } = &edge.op else {
            return s.clone();
        };
        let mut out = s.clone();
        let role = match callee {
            Callee::Direct(f) => self.roles.get(*f).cloned(),
            Callee::Indirect(_) => None,
        };
        let dest_ty = dest.as_ref().map(|d| d.ty);
        let mut result: Option<Val> = None;
        // The allocation site whose new object the call returns, and its contents.
        let mut fresh: Option<(Site, Obj)> = None;
        let retained = may_retain(self.program, role.as_ref(), args);
        if !out.publ.is_empty() && !retained.is_empty() {
            let vals: Vec<Val> = retained
                .iter()
                .filter_map(|i| args.get(*i))
                .map(|a| self.eval(s, func, a))
                .collect();
            // Creating a thread orders the creator's earlier accesses before the thread's.
            let ordered = matches!(role, Some(Role::ThreadCreate { .. }));
            self.publish_carried(&mut out, &vals, &[], ordered);
        }
        match &role {
            Some(r) if r.ends_path() => return State::bottom(),
            Some(Role::Alloc) | Some(Role::Realloc { .. }) => {
                let name = match callee {
                    Callee::Direct(f) => self.program.function(*f).name.as_str(),
                    Callee::Indirect(_) => "",
                };
                let base = Base::Heap {
                    thread: self.thread,
                    func,
                    edge: at.edge,
                    caller: at.fctx.calls.last().copied(),
                };
                let content = if name.contains("calloc") {
                    Val::int(Interval::constant(0))
                } else {
                    top()
                };
                let site = (func, at.edge, at.fctx.calls.last().copied());
                // A new object kept in a trackable local is the site's recent object
                // (`publication`): its contents are tracked apart from the site's other
                // objects, which the base stands for.
                let holder = match (&role, dest) {
                    (Some(Role::Alloc), Some(d)) => self.holder_lval(func, d),
                    _ => None,
                };
                let again = out.stored(&base).is_some() || out.publ.fresh(site).is_some();
                // The previous recent object joins the others; other threads see the new
                // object's initial contents once it is published (before that they cannot
                // reach it). With a holder the fact starts once the result is stored.
                out.allocate(site, None, Obj::empty(), out.multi);
                if again {
                    // Allocated again: the base stands for several objects.
                    self.effects.summaries.insert(base);
                }
                let mut obj = match out.stored(&base) {
                    Some(old) => old.clone(),
                    None => Obj::empty(),
                };
                obj.summary |= again;
                if holder.is_none() {
                    obj.rest = obj.rest.join(&content);
                }
                out.set(base, obj);
                if holder.is_some() {
                    fresh = Some((site, Obj::filled(content)));
                }
                result = Some(Val::address(base, Interval::constant(0)));
            }
            Some(Role::Nondet) | Some(Role::Free { .. }) => {}
            Some(Role::SpecificSet { key, value }) => {
                if let Some(g) = args.get(*key).and_then(|k| self.specific_key(k))
                    && let Some(v) = args.get(*value)
                {
                    let val = self.eval(s, func, v);
                    let size = self.types().size_of(v.ty).unwrap_or(8);
                    let b = Base::Specific {
                        thread: self.thread,
                        key: g,
                    };
                    self.store(&mut out, b, Interval::constant(0), size, &val, true, None);
                }
            }
            Some(Role::SpecificGet { key }) => {
                if let Some(g) = args.get(*key).and_then(|k| self.specific_key(k))
                    && let Some(ty) = dest_ty
                {
                    let size = self.types().size_of(ty).unwrap_or(8);
                    let b = Base::Specific {
                        thread: self.thread,
                        key: g,
                    };
                    result = Some(self.read(&out, &b, Interval::constant(0), size));
                }
            }
            Some(Role::Assume { cond }) => {
                if let Some(c) = args.get(*cond)
                    && !self.assume(&mut out, func, c, true)
                {
                    return State::bottom();
                }
            }
            Some(Role::ThreadCreate { thread_id, arg, .. }) => {
                let site = CallSite {
                    func,
                    edge: at.edge,
                };
                let argv = args
                    .get(*arg)
                    .map(|a| self.eval(s, func, a))
                    .unwrap_or_else(top);
                self.record_create(site, s, &argv);
                if let Some(p) = args.get(*thread_id) {
                    self.store_through(&mut out, func, p, &self.top_of(self.types().common.ulong));
                }
                out.multi = true;
            }
            Some(Role::Library(spec)) => {
                let started: Vec<Val> = spec
                    .callbacks
                    .iter()
                    .filter(|c| matches!(c.runs, Runs::Thread | Runs::Signal))
                    .map(|c| self.started_arg(s, func, args, &c.params))
                    .collect();
                if !started.is_empty() {
                    // Like a thread creation: the new thread starts from this state.
                    let site = CallSite {
                        func,
                        edge: at.edge,
                    };
                    self.publish_carried(&mut out, &started, &[], true);
                    let argv = started.iter().fold(Val::bottom(), |a, v| a.join(v));
                    self.record_create(site, s, &argv);
                    out.multi = true;
                }
                let callee_id = match callee {
                    Callee::Direct(f) => Some(*f),
                    Callee::Indirect(_) => None,
                };
                let carried = match spec.fill {
                    // Bytes of one value: zero bytes make null pointers and zero integers.
                    Some(fill) => {
                        let byte = match fill {
                            crate::model::library::Fill::Zero => Some(0),
                            crate::model::library::Fill::Arg(i) => args
                                .get(i)
                                .and_then(|a| self.eval(s, func, a).as_int().as_constant()),
                        };
                        match byte {
                            Some(b) if b & 0xff == 0 => Val::int(Interval::constant(0)),
                            _ => Val::int(Interval::TOP),
                        }
                    }
                    None => self.carried(s, func, args),
                };
                let (_, written) = spec.read_written(args.len());
                let copies: Vec<(usize, usize)> = spec.copies().collect();
                for &(d, src) in &copies {
                    if let (Some(dp), Some(sp)) = (args.get(d), args.get(src)) {
                        let n = self.byte_count(s, func, args, spec.bytes(d));
                        self.lib_copy(&mut out, func, dp, sp, n);
                    }
                }
                for i in written {
                    if copies.iter().any(|(d, _)| *d == i) || spec.frees.contains(&i) {
                        continue;
                    }
                    if let Some(p) = args.get(i)
                        && self.types().is_pointer(strip_casts(p).ty)
                    {
                        self.lib_write(&mut out, func, p, spec.bytes(i), args, &carried);
                    }
                }
                if let Some(f) = callee_id {
                    for (k, kind) in spec.stores() {
                        let Some(p) = args.get(k) else { continue };
                        // The pointer fields of what `p` points to receive pointers of this
                        // kind (`*res` of `getaddrinfo`: a new object; `*endptr` of `strtol`:
                        // into the string).
                        let target = self
                            .types()
                            .pointee(strip_casts(p).ty)
                            .or_else(|| self.types().pointee(p.ty))
                            .and_then(|t| self.types().pointee(t));
                        let v = self.lib_pointer(&mut out, at, f, args, kind, target);
                        // A pointer to a pointer: exactly that pointer.
                        let bytes = match spec.bytes(k) {
                            crate::model::library::Bytes::Rest if target.is_some() => {
                                crate::model::library::Bytes::Pointee
                            }
                            b => b,
                        };
                        self.lib_write(&mut out, func, p, bytes, args, &v);
                    }
                    if matches!(
                        spec.hidden,
                        Some(crate::model::library::Hidden::Write)
                            | Some(crate::model::library::Hidden::ReadWrite)
                    ) {
                        let b = Base::Hidden(f);
                        self.store(
                            &mut out,
                            b,
                            Interval::new(0, racedar_domains::interval::POS_INF),
                            1,
                            &Val::int(Interval::TOP),
                            false,
                            None,
                        );
                    }
                    if let Some(ty) = dest_ty
                        && self.types().is_pointer(ty)
                    {
                        let pointee = self.types().pointee(ty);
                        result =
                            Some(self.lib_pointer(&mut out, at, f, args, spec.returns, pointee));
                    }
                }
            }
            Some(Role::Atomic { object }) => {
                if let Some(p) = args.get(*object) {
                    self.havoc_pointee(&mut out, func, p);
                }
            }
            Some(_) => {}
            None => {
                // An unknown function: it may write what its non-const pointers point to.
                let defined =
                    matches!(callee, Callee::Direct(f) if self.program.function(*f).body.is_some());
                if !defined {
                    for a in args {
                        let inner = strip_casts(a);
                        let Some(pointee) = self.types().pointee(inner.ty) else {
                            continue;
                        };
                        if matches!(self.types().kind(pointee), TypeKind::Function(_))
                            || crate::backend::accesses::const_pointer(self.program, a)
                        {
                            continue;
                        }
                        self.havoc_pointee(&mut out, func, a);
                    }
                }
            }
        }
        if let (Some(d), Some(ty)) = (dest, dest_ty) {
            let v = result.unwrap_or_else(|| self.top_of(ty));
            let v = self.convert(v, ty);
            // A new object is in no region yet.
            let stored = if matches!(role, Some(Role::Alloc)) {
                Stored::Fresh(SmallVec::new())
            } else {
                Stored::Other
            };
            // Where the result goes: a pointer cell of a fresh object (`p->buf = malloc(n)`).
            let cell = match (&fresh, self.holder_lval(func, d)) {
                (Some(_), None) => {
                    let a = self.lval_addrs(&out, func, d);
                    match (a.recent, a.targets.as_slice()) {
                        (Some(c), [(b, off)])
                            if !a.unknown
                                && *b == site_base(self.thread, c)
                                && self.pointer_sized(a.size) =>
                        {
                            off.as_constant().map(|o| (c, o))
                        }
                        _ => None,
                    }
                }
                _ => None,
            };
            if let (Some((site, _)), Some((c, o))) = (&fresh, cell) {
                // Not published by this store: the new object is not fresh yet.
                out.publ.unnest(*site, c, o);
            }
            self.assign(&mut out, func, d, &v, stored);
            match (fresh, self.holder_lval(func, d), cell) {
                (Some((site, recent)), Some(h), _) => {
                    let pending = out.multi;
                    out.allocate(site, Some(h), recent, pending);
                }
                (Some((site, recent)), None, Some((c, o))) if site != c => {
                    let pending = out.multi;
                    out.allocate_nested(site, c, o, recent, pending);
                }
                _ => {}
            }
        }
        out
    }

    /// The modelled key global whose value the key expression `k` loads.
    fn specific_key(&self, k: &Expr) -> Option<GlobalId> {
        match &strip_casts(k).kind {
            ExprKind::Load(lv) if lv.proj.is_empty() => match lv.host {
                Host::Var(Var::Global(g)) if self.specific_keys.contains(&g) => Some(g),
                _ => None,
            },
            _ => None,
        }
    }

    /// `*p = v` (p an expression of pointer type).
    fn store_through(&mut self, s: &mut State, func: FuncId, p: &Expr, v: &Val) {
        let pv = self.eval(s, func, p).as_ptr();
        let size = self
            .types()
            .pointee(p.ty)
            .and_then(|t| self.types().size_of(t))
            .unwrap_or(8);
        let strong =
            pv.targets().len() == 1 && !pv.unknown && pv.targets()[0].1.as_constant().is_some();
        let via = self.fresh_site(s, func, p);
        for (b, off) in pv.targets().to_vec() {
            self.store(s, b, off, size, v, strong, via);
        }
    }

    /// The transfer function of a non-call edge (or of a call's library part).
    pub fn transfer(&mut self, at: At<'_>, edge: &Edge, d: &State) -> State {
        self.at_edge = Some((at.fctx.func, at.edge));
        if !d.live {
            return State::bottom();
        }
        let func = at.fctx.func;
        match &edge.op {
            Op::Skip => d.clone(),
            Op::Assign { lhs, rhs } => {
                let mut s = d.clone();
                if self.types().is_aggregate(lhs.ty) {
                    self.copy_aggregate(&mut s, func, lhs, rhs);
                } else {
                    // `l = m…` with `m` pointing into a fresh object: so does `l`.
                    let copy = self
                        .holder_lval(func, lhs)
                        .zip(self.fresh_site(d, func, rhs))
                        .map(|(l, site)| (site, l));
                    let v = self.eval(d, func, rhs);
                    let fresh = self.fresh_site(d, func, rhs);
                    let from = self.origin_of(d, func, rhs);
                    let stored = match (fresh, from) {
                        (Some(site), _) => Stored::Fresh(
                            d.publ
                                .fresh(site)
                                .map(|f| f.links.clone())
                                .unwrap_or_default(),
                        ),
                        (None, Some(r)) => Stored::From(r),
                        (None, None) => Stored::Other,
                    };
                    // A fresh object stored into an object of a region joins that region.
                    let entering: SmallVec<[Holder; 2]> =
                        match (fresh, self.lval_region(d, func, lhs)) {
                            (Some(site), Some(_)) => d
                                .publ
                                .fresh(site)
                                .map(|f| f.holders.iter().copied().collect())
                                .unwrap_or_default(),
                            _ => SmallVec::new(),
                        };
                    let into = self.lval_region(d, func, lhs);
                    self.cur_fresh = fresh;
                    self.assign(&mut s, func, lhs, &v, stored);
                    self.cur_fresh = None;
                    if let Some((site, l)) = copy {
                        s.publ.add_holder(site, l);
                    }
                    if let (Some(l), Some(r)) = (self.holder_lval(func, lhs), from) {
                        s.orig.set(l, r);
                    }
                    if let Some(l) = self.holder_lval(func, lhs) {
                        // `l = &L`, or `l = m` with `m == &L`.
                        let eq = match self.holder_expr(func, rhs).and_then(|m| d.eqs.of(m)) {
                            Some(f) if !f.deps.contains(&l.1) => Some(super::symeq::SymEq {
                                x: l,
                                addr: f.addr.clone(),
                                deps: f.deps.clone(),
                            }),
                            Some(_) => None,
                            None => super::symeq::of_assignment(func, l.1, rhs, self.addr_taken),
                        };
                        if let Some(eq) = eq {
                            s.eqs.set(eq);
                        }
                    }
                    if let Some(r) = into {
                        for h in entering {
                            s.orig.set(h, r);
                        }
                    }
                }
                s
            }
            Op::Assume { cond, branch } => {
                let mut s = d.clone();
                if self.assume(&mut s, func, cond, *branch) && s.live {
                    s
                } else {
                    State::bottom()
                }
            }
            Op::Return(e) => {
                let mut s = d.clone();
                s.ret = match e {
                    Some(e) => self.eval(d, func, e),
                    None => Val::bottom(),
                };
                let site = e.as_ref().and_then(|e| self.fresh_site(d, func, e));
                s.set_ret(site);
                s
            }
            Op::Asm { outputs, .. } => {
                let mut s = d.clone();
                for o in outputs {
                    let t = self.top_of(o.ty);
                    self.assign(&mut s, func, o, &t, Stored::Other);
                }
                s
            }
            Op::Call { .. } => self.library_call(at, edge, d),
        }
    }

    /// Records that the thread started at `site` begins from `s` with argument `argv`
    /// (joined over every time the call is reached).
    fn record_create(&mut self, site: CallSite, s: &State, argv: &Val) {
        let entry = self
            .effects
            .creates
            .entry(site)
            .or_insert_with(|| (State::bottom(), Val::bottom()));
        entry.0.join_with(s);
        entry.1 = entry.1.join(argv);
    }

    /// The defined functions a call edge enters.
    pub fn callees(&mut self, at: At<'_>, edge: &Edge, d: &State) -> Callees {
        let mut out = Callees::default();
        let Op::Call { callee, args, .. } = &edge.op else {
            return out;
        };
        let func = at.fctx.func;
        match callee {
            Callee::Direct(f) => match self.roles.get(*f) {
                Some(Role::Once { routine, .. }) => {
                    out.transfer_too = true;
                    if let Some(r) = args.get(*routine) {
                        let v = self.eval(d, func, r).as_ptr();
                        let exact = v.targets().len() == 1 && !v.unknown;
                        for (b, _) in v.targets() {
                            if let Base::Func(g) = b
                                && self.program.function(*g).body.is_some()
                            {
                                out.funcs.push((*g, CallKind::Once, exact));
                            }
                        }
                    }
                }
                Some(Role::AtomicFunction) if self.program.function(*f).body.is_some() => {
                    out.funcs.push((*f, CallKind::Atomic, true));
                }
                None if self.program.function(*f).body.is_some() => {
                    out.funcs.push((*f, CallKind::Plain, true));
                }
                Some(Role::Library(_)) | None => self.sync_callbacks(at, &edge.op, d, &mut out),
                _ => {}
            },
            Callee::Indirect(fp) => {
                let v = self.eval(d, func, fp).as_ptr();
                let exact = v.targets().len() == 1 && !v.unknown;
                for (b, _) in v.targets() {
                    match b {
                        Base::Func(g) if self.program.function(*g).body.is_some() => {
                            let kind = match self.roles.get(*g) {
                                Some(Role::AtomicFunction) => CallKind::Atomic,
                                _ => CallKind::Plain,
                            };
                            out.funcs.push((*g, kind, exact));
                        }
                        _ => out.transfer_too = true,
                    }
                }
                if v.unknown || v.targets().is_empty() {
                    out.transfer_too = true;
                }
                if v.unknown || (v.targets().is_empty() && !v.null) {
                    // A pointer the analysis lost (computed from an integer, read from
                    // unknown memory): every address-taken function of a compatible type may
                    // be called; none may silently drop out of the analysis.
                    for g in self.fallback.pointer_targets(func, fp) {
                        if self.program.function(g).body.is_some()
                            && !out.funcs.iter().any(|(f, _, _)| *f == g)
                        {
                            let kind = match self.roles.get(g) {
                                Some(Role::AtomicFunction) => CallKind::Atomic,
                                _ => CallKind::Plain,
                            };
                            out.funcs.push((g, kind, false));
                        }
                    }
                }
            }
        }
        out
    }

    /// The callee's entry state: the caller's state, the callee's locals fresh, its
    /// parameters bound to the arguments.
    pub fn call_entry(&mut self, at: At<'_>, edge: &Edge, target: &CallTarget, d: &State) -> State {
        let mut s = self.bind_entry(at, edge, target, d);
        if matches!(target.kind, CallKind::Plain | CallKind::Atomic) {
            // What the callee cannot reach stays out of its entry (the return restores it).
            self.footprints.cut_entry(&mut s, target.func, self.escaped);
        }
        // The callee's mod set starts empty.
        s.written = imbl::OrdSet::new();
        s
    }

    fn bind_entry(&mut self, at: At<'_>, edge: &Edge, target: &CallTarget, d: &State) -> State {
        let mut s = d.clone();
        s.ret = Val::bottom();
        let g = target.func;
        self.forget_locals(&mut s, g);
        // The callee's locals are new (a recursive call's caller loses its facts too).
        s.forget_holders(|h| h.0 == g);
        s.set_ret(None);
        s.orig.forget(|h| h.0 == g);
        s.eqs.forget_func(g);
        self.forget_private_locals(&mut s);
        if target.kind == CallKind::Once {
            return s;
        }
        let Op::Call { args, .. } = &edge.op else {
            return s;
        };
        let callee = self.program.function(g);
        if let CallKind::Callback(k) = target.kind {
            // A library function calls it: parameters as its specification says.
            let params: Vec<crate::model::library::Param> = self
                .roles
                .callback(self.program, &edge.op, k)
                .map(|c| c.params.to_vec())
                .unwrap_or_default();
            for (i, p) in callee.params.iter().enumerate() {
                let ty = callee.local(*p).ty;
                let param = params.get(i).copied().unwrap_or_default();
                let v = self.callback_param(&mut s, at, args, param, ty);
                let v = self.convert(v, ty);
                let base = Base::Local {
                    thread: self.thread,
                    func: g,
                    local: *p,
                };
                let size = self.types().size_of(ty).unwrap_or(1);
                self.store(&mut s, base, Interval::constant(0), size, &v, true, None);
            }
            return s;
        }
        for (i, p) in callee.params.iter().enumerate() {
            let ty = callee.local(*p).ty;
            let v = match args.get(i) {
                Some(a) => self.convert(self.eval(d, at.fctx.func, a), ty),
                None => self.top_of(ty),
            };
            let base = Base::Local {
                thread: self.thread,
                func: g,
                local: *p,
            };
            let size = self.types().size_of(ty).unwrap_or(1);
            if self.types().is_aggregate(ty) {
                self.store(
                    &mut s,
                    base,
                    Interval::new(0, size as i128 - 1),
                    1,
                    &top(),
                    false,
                    None,
                );
            } else {
                self.store(&mut s, base, Interval::constant(0), size, &v, true, None);
                // A parameter bound to a pointer into a fresh object points into it too, one
                // bound to a pointer from a region comes from it.
                if let Some(a) = args.get(i) {
                    if let Some(site) = self.fresh_site(d, at.fctx.func, a) {
                        s.publ.add_holder(site, (g, *p));
                    }
                    if let Some(r) = self.origin_of(d, at.fctx.func, a) {
                        s.orig.set((g, *p), r);
                    }
                }
            }
        }
        s
    }

    /// Forgets the changes to the thread's locals of `g`.
    fn forget_locals(&self, s: &mut State, g: FuncId) {
        let keys = self.local_keys(s, g);
        for k in keys {
            s.forget(&k);
        }
    }

    /// Forgets the thread's locals whose address is never taken: no callee can read or
    /// write them (it names only its own locals), and [`Interp::call_return`] takes them
    /// back from the caller's state before the call. A callee's states then do not depend
    /// on its callers' private variables, so a change to one of them does not re-analyse
    /// every function called after it.
    fn forget_private_locals(&self, s: &mut State) {
        let private: Vec<Base> = s
            .delta
            .range(self.locals_of(FuncId(0)..=FuncId(u32::MAX)))
            .filter_map(|(b, _)| match b {
                Base::Local { func, local, .. } if !self.addr_taken.contains(&(*func, *local)) => {
                    Some(*b)
                }
                _ => None,
            })
            .collect();
        for b in private {
            s.forget(&b);
        }
    }

    fn local_keys(&self, s: &State, g: FuncId) -> Vec<Base> {
        s.delta
            .range(self.locals_of(g..=g))
            .map(|(b, _)| *b)
            .collect()
    }

    /// The bases of the thread's locals of the functions `funcs`, as a range of the ordered
    /// state maps.
    fn locals_of(&self, funcs: std::ops::RangeInclusive<FuncId>) -> std::ops::RangeInclusive<Base> {
        Base::Local {
            thread: self.thread,
            func: *funcs.start(),
            local: LocalId(0),
        }..=Base::Local {
            thread: self.thread,
            func: *funcs.end(),
            local: LocalId(u32::MAX),
        }
    }

    /// The state after a call: the callee's exit state, with the caller's own locals taken
    /// from before the call (unless the callee may have changed them through a pointer) and
    /// the result stored.
    pub fn call_return(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        pre: &State,
        exit: &State,
    ) -> State {
        if !exit.live || !pre.live {
            return State::bottom();
        }
        let caller = at.fctx.func;
        self.at_edge = Some((caller, at.edge));
        let mut s = exit.clone();
        s.ret = Val::bottom();
        // The callee's locals are gone; what it returned is the caller's.
        let returned = s.publ.returned();
        s.forget_holders(|h| h.0 == target.func);
        s.orig.forget(|h| h.0 == target.func);
        s.eqs.forget_func(target.func);
        // Locals of the thread's functions.
        let all = self.locals_of(FuncId(0)..=FuncId(u32::MAX));
        let mut keys: Vec<Base> = s.delta.range(all.clone()).map(|(b, _)| *b).collect();
        keys.extend(pre.delta.range(all).map(|(b, _)| *b));
        keys.sort();
        keys.dedup();
        // Objects the callee did not write are the caller's own, as they were before the
        // call (the exit state joins every caller of a shared context). Objects of sites
        // with a fresh fact on either side stay as the exit has them (their recent object
        // and base go together).
        // Only the objects the two states do not share can differ (sorted, once each).
        let others: Vec<Base> = pre
            .delta
            .diff(&s.delta)
            .filter_map(|d| match d {
                imbl::ordmap::DiffItem::Add(k, _) | imbl::ordmap::DiffItem::Remove(k, _) => {
                    Some(*k)
                }
                imbl::ordmap::DiffItem::Update {
                    old: (k, a),
                    new: (_, b),
                } => (a != b).then_some(*k),
            })
            .filter(|b| !matches!(b, Base::Local { thread, .. } if *thread == self.thread))
            .filter(|b| !exit.written.contains(b))
            .collect();
        for b in others {
            if pre.fresh_of(&b).is_some() || exit.fresh_of(&b).is_some() {
                continue;
            }
            match pre.delta.get(&b) {
                Some(o) => {
                    s.delta.insert(b, o.clone());
                }
                None => s.forget(&b),
            }
        }
        s.written = pre.written.clone().union(exit.written.clone());
        for b in keys {
            let Base::Local { func: f, local, .. } = b else {
                continue;
            };
            let recursive = f == target.func && f == caller;
            let keep_exit = recursive
                || (f != target.func
                    && self.addr_taken.contains(&(f, local))
                    && exit.written.contains(&b));
            if keep_exit {
                if recursive {
                    let mut o = pre.obj(&b);
                    o.join_with(&exit.obj(&b), false);
                    s.set(b, o);
                }
                continue;
            }
            match pre.delta.get(&b) {
                Some(o) => {
                    s.delta.insert(b, o.clone());
                }
                None => s.forget(&b),
            }
        }
        if let Op::Call { dest: Some(d), .. } = &edge.op {
            let v = if matches!(target.kind, CallKind::Once | CallKind::Callback(_))
                || exit.ret.is_bottom()
            {
                self.top_of(d.ty)
            } else {
                self.convert(exit.ret.clone(), d.ty)
            };
            let stored = match returned.and_then(|site| s.publ.fresh(site)) {
                Some(f) => Stored::Fresh(f.links.clone()),
                None => Stored::Other,
            };
            self.cur_fresh = returned.filter(|site| s.publ.fresh(*site).is_some());
            self.assign(&mut s, caller, d, &v, stored);
            self.cur_fresh = None;
            if let (Some(site), Some(h), false) = (
                returned,
                self.holder_lval(caller, d),
                matches!(target.kind, CallKind::Once | CallKind::Callback(_)),
            ) {
                s.publ.add_holder(site, h);
            }
        }
        s.set_ret(None);
        s
    }
}

/// Globals holding thread-specific data keys whose per-thread values the value analysis keeps
/// ([`Base::Specific`]): every key argument of `pthread_getspecific` / `pthread_setspecific`
/// loads one such global; the program never assigns it, takes its address only for the one
/// `pthread_key_create` that creates it, and that call runs at most once (in `main`, outside
/// loops), so one global names one key for the whole run. Empty when any key is held
/// elsewhere (every value then stays unknown). POSIX.1-2017 `pthread_key_create`.
pub fn specific_keys(program: &Program, roles: &Roles) -> FxHashSet<GlobalId> {
    let global_of = |e: &Expr, addr: bool| -> Option<GlobalId> {
        match &strip_casts(e).kind {
            ExprKind::Load(lv) if lv.proj.is_empty() && !addr => match lv.host {
                Host::Var(Var::Global(g)) => Some(g),
                _ => None,
            },
            ExprKind::AddrOf(lv) if addr && lv.proj.is_empty() => match lv.host {
                Host::Var(Var::Global(g)) => Some(g),
                _ => None,
            },
            _ => None,
        }
    };
    let mut used = FxHashSet::default();
    // Per key global, its create statements (function, in a loop).
    let mut creates: FxHashMap<GlobalId, Vec<(FuncId, bool)>> = FxHashMap::default();
    let mut create_args: FxHashSet<(FuncId, crate::ir::EdgeId)> = FxHashSet::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        let in_loop = crate::threads::loop_nodes(cfg);
        for (ei, e) in cfg.edges.iter().enumerate() {
            let Op::Call { args, .. } = &e.op else {
                continue;
            };
            match roles.of_call(&e.op) {
                Some(Role::SpecificGet { key }) | Some(Role::SpecificSet { key, .. }) => {
                    match args.get(*key).and_then(|k| global_of(k, false)) {
                        Some(g) => {
                            used.insert(g);
                        }
                        None => return FxHashSet::default(),
                    }
                }
                Some(Role::KeyCreate { key }) => {
                    let Some(g) = args.get(*key).and_then(|k| global_of(k, true)) else {
                        return FxHashSet::default();
                    };
                    creates
                        .entry(g)
                        .or_default()
                        .push((func, in_loop[e.src.0 as usize]));
                    create_args.insert((func, crate::ir::EdgeId(ei as u32)));
                }
                _ => {}
            }
        }
    }
    // Globals written or whose address is taken other than by their key creation.
    let mut touched: FxHashSet<GlobalId> = FxHashSet::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        for (ei, e) in cfg.edges.iter().enumerate() {
            let written = match &e.op {
                Op::Assign { lhs, .. } => Some(lhs),
                Op::Call { dest: Some(d), .. } => Some(d),
                _ => None,
            };
            if let Some(Lval {
                host: Host::Var(Var::Global(g)),
                ..
            }) = written
            {
                touched.insert(*g);
            }
            if create_args.contains(&(func, crate::ir::EdgeId(ei as u32))) {
                continue;
            }
            crate::ir::visit::op_exprs(&e.op, &mut |x| {
                if let ExprKind::AddrOf(lv) = &x.kind
                    && let Host::Var(Var::Global(g)) = lv.host
                {
                    touched.insert(g);
                }
            });
        }
    }
    for g in &program.globals {
        for item in &g.init {
            if let crate::ir::InitValue::Expr(e) = &item.value {
                crate::ir::visit::walk_expr(e, &mut |x| {
                    if let ExprKind::AddrOf(lv) = &x.kind
                        && let Host::Var(Var::Global(k)) = lv.host
                    {
                        touched.insert(k);
                    }
                });
            }
        }
    }
    let main = program.function_by_name("main");
    used.retain(|g| {
        !touched.contains(g)
            && !program.global(*g).thread_local
            && creates
                .get(g)
                .is_some_and(|c| matches!(c.as_slice(), [(f, false)] if Some(*f) == main))
    });
    used
}

/// The arguments of a library call whose addresses it may keep where another thread can
/// reach them ([`super::publication`]): all of them but for synchronisation on objects,
/// bookkeeping, `free`, and specified library functions, which keep those their specification
/// says they keep (pointers they store into what they write are published by the store).
fn may_retain(program: &Program, role: Option<&Role>, args: &[Expr]) -> Vec<usize> {
    let _ = program;
    match role {
        Some(
            Role::Free { .. }
            | Role::Lock { .. }
            | Role::Unlock { .. }
            | Role::CondWait { .. }
            | Role::CondSignal { .. }
            | Role::BarrierWait { .. }
            | Role::SemWait { .. }
            | Role::SemPost { .. }
            | Role::MutexAttrSettype { .. }
            | Role::MutexInit { .. }
            | Role::BarrierInit { .. }
            | Role::SemInit { .. }
            | Role::KeyCreate { .. }
            | Role::SpecificGet { .. }
            | Role::ThreadJoin { .. }
            | Role::Alloc
            | Role::Nondet
            | Role::Assume { .. }
            | Role::AtomicBegin
            | Role::AtomicEnd
            | Role::Noreturn
            // Bookkeeping of synchronisation objects and the thread's own state
            // (`pthread_mutex_init`, `pthread_setspecific`: a value only this thread gets back).
            | Role::Ignore
            | Role::Once { .. },
        ) => Vec::new(),
        Some(Role::Library(spec)) => spec.keeps.clone(),
        _ => (0..args.len()).collect(),
    }
}

/// Locals whose address the program takes (they may be read and written through pointers,
/// by other threads too).
pub fn address_taken_locals(program: &Program) -> FxHashSet<(FuncId, LocalId)> {
    let mut out = FxHashSet::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let Some(cfg) = &f.body else { continue };
        let func = FuncId(fi as u32);
        for e in &cfg.edges {
            crate::ir::visit::op_exprs(&e.op, &mut |y| {
                if let ExprKind::AddrOf(lv) = &y.kind
                    && let Host::Var(Var::Local(l)) = lv.host
                {
                    out.insert((func, l));
                }
            });
        }
        for (li, l) in f.locals.iter().enumerate() {
            if matches!(program.types.kind(l.ty), TypeKind::Array { .. }) {
                out.insert((func, LocalId(li as u32)));
            }
        }
    }
    out
}
