//! Per-instance slots: threads that each work on their own element of a shared array.
//!
//! ```c
//! for (i = 0; i < n; i++) pthread_create(&t[i], 0, work, (void *)i);   // or &a[i], a + i
//! void *work(void *arg) { int k = (int)arg; data[k] = ...; }             // or *(int *)arg
//!
//! lock(&m); j = next; next++; unlock(&m); data[j] = ...;                  // tickets
//! ```
//!
//! An access is *keyed* when the bytes it touches are `origin + v * stride + [lo, hi)` inside
//! some object, where `origin` is one exact byte offset (or, in a create loop, the address a
//! pointer local holds that the loop never changes: [`OriginKey`]), `[lo, hi)` lies inside
//! one element (`hi <= stride`), and `v` is a value taken from a *domain* of values that differ between
//! any two threads holding them (see [`SlotKey`]). Two keyed accesses of one domain with the
//! same `origin` and `stride`, made by different threads, touch different bytes: in one object
//! their elements differ, and different objects never share bytes. Every other access is
//! checked as usual, so an access of the same array through another index still races.
//!
//! Domains:
//! - **Create loops** ([`Domain::Loop`]): the counter of a loop that creates one thread per
//!   iteration, passed to the thread as its argument through casts that keep its value apart
//!   (`(void *)i`), or as the address of the counter's element (`&a[i]`, `a + i`). The counter
//!   moves by steps of one in one direction and nothing else writes it in the loop, every path
//!   from one create to the next takes a step, and the loop runs once per program (in a
//!   function that runs once per run of a unique thread: its entry, or a function the entry
//!   reaches through calls that are each the only call of their callee and outside loops; not
//!   nested in another loop, never entered again once left), so each
//!   thread of the create statement (peeled copies included, [`crate::ir::unroll`]) gets its own
//!   value. A loop passing element addresses may run more often (a search started per
//!   keystroke, fzy's `choices_search`) when the array is one the function allocates afresh on
//!   each run before the loop, held in a pointer local the loop does not change
//!   ([`fresh_per_run`]): threads of different runs may share a value but never an array.
//!   Inside the thread, the entry's parameter and locals copied once from it hold that value.
//!   The element's address may also reach the create through a pointer local the loop sets
//!   once per iteration, before the create (`t = a + i; t->x = ..; create(.., t)`); the
//!   creator's accesses through it before the create are keyed like `a[i].x`. The
//!   creator's own accesses to the counter's element before the create of that iteration are
//!   keyed too: they touch elements of later threads only, which start after them.
//! - **Tickets** ([`Domain::Ticket`]): a global counter read and incremented in one
//!   straight-line critical section (`j = next; next++;` under a lock held at every increment
//!   and every such read), and otherwise only incremented (or set before any thread exists).
//!   Each execution of such a section takes the values between the counter's value before and
//!   after it, so values held by different threads differ.

use crate::backend::{AccessSite, Backend, MemAccess};
use crate::context::{FnCtxId, ThreadContexts, ThreadId};
use crate::ir::types::{TypeId, TypeKind, TypeTable};
use crate::ir::visit::{
    op_exprs, strip_casts, walk_cfg_addr_taken, walk_expr, walk_lval, whole_local, written_locals,
};
use crate::ir::{
    BinOp, Callee, Cfg, EdgeId, Expr, ExprKind, FuncId, GlobalId, Host, LocalId, Lval, NodeId, Op,
    Program, Proj, Storage, Var,
};
use crate::lockset::{LockId, LocksetResult};
use crate::model::{LockMode, Role, Roles};
use crate::threads::ThreadGraph;
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// Where the distinct values of a keyed access come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Domain {
    /// The counter of the create loop of this (unpeeled) create statement.
    Loop(FuncId, EdgeId),
    /// Tickets of a global counter. `conv` is a bit set of the conventions the holder's value
    /// satisfies: bit 0, a value the counter had during the critical section before its last
    /// increment (`[before, after)`); bit 1, a value it had after its first increment
    /// (`(before, after]`). Values of one convention from different sections differ.
    Ticket {
        /// The counter.
        counter: GlobalId,
        /// Conventions (bit set, never 0).
        conv: u8,
    },
}

/// Who holds the value of a keyed access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Holder {
    /// A thread holding its own value (a created thread, a ticket holder).
    Instance,
    /// The creator of a create loop, before it creates the thread of the current value.
    Creator,
}

/// Which bytes a keyed access with value `v` touches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Span {
    /// Bytes `origin + v * stride + [lo, hi)` of an object.
    Element {
        /// Where element 0 is.
        origin: OriginKey,
        /// Element size in bytes.
        stride: u64,
        /// First byte touched inside the element.
        lo: u64,
        /// One past the last byte touched inside the element.
        hi: u64,
    },
    /// Bytes of the object `v` points to (the values are distinct live objects).
    Object,
}

/// Where element 0 of a keyed access lies: two keys of one domain name the same bytes for
/// the same value only when their origins are equal.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OriginKey {
    /// This exact byte offset in the object.
    Offset(i64),
    /// The address a pointer local of the creating function holds, plus these bytes: the
    /// local keeps one value in the whole create loop (not written there, address not taken),
    /// so it names one address for the creator and every thread of the loop, where the
    /// backend cannot say which (only for [`Domain::Loop`]).
    Pointer(LocalId, u64),
}

/// A keyed access: the bytes of `span` for a value `v` of `domain` (see the module
/// documentation).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SlotKey {
    /// Where the value comes from.
    pub domain: Domain,
    /// Who holds it.
    pub holder: Holder,
    /// The bytes touched.
    pub span: Span,
}

/// Whether two accesses of different threads (or two instances of one non-unique thread) touch
/// different bytes because of their keys.
pub fn disjoint(a: Option<&SlotKey>, b: Option<&SlotKey>) -> bool {
    let (Some(a), Some(b)) = (a, b) else {
        return false;
    };
    let same_domain = match (a.domain, b.domain) {
        (Domain::Loop(f, e), Domain::Loop(g, d)) => {
            (f, e) == (g, d) && !(a.holder == Holder::Creator && b.holder == Holder::Creator)
        }
        (
            Domain::Ticket {
                counter: g,
                conv: c,
            },
            Domain::Ticket {
                counter: h,
                conv: d,
            },
        ) => g == h && c & d != 0,
        _ => false,
    };
    same_domain
        && match (a.span, b.span) {
            (
                Span::Element {
                    origin,
                    stride,
                    lo,
                    hi,
                },
                Span::Element {
                    origin: o,
                    stride: s,
                    lo: l,
                    hi: h,
                },
            ) => origin == o && stride == s && lo < hi && hi <= stride && l < h && h <= s,
            (Span::Object, Span::Object) => true,
            _ => false,
        }
}

/// What a create statement passes its threads.
#[derive(Clone, Copy, Debug)]
enum KeyKind {
    /// The loop counter, as an integer.
    Counter,
    /// The address of the counter's element: the exact offset of element 0, the element size,
    /// and the offset of the passed address inside its element.
    Element(OriginKey, u64, u64),
    /// A fresh object, allocated since the previous create.
    Object,
}

/// A create statement whose threads get distinct values (see the module documentation).
#[derive(Clone, Debug)]
struct LoopFamily {
    /// The original create statement.
    id: (FuncId, EdgeId),
    /// The creating thread (for counters: one thread runs the loop once).
    parent: Option<ThreadId>,
    /// The creating thread's function contexts running the loop (for counters): one, or
    /// several when the loop's elements belong to an object allocated afresh on each run
    /// ([`fresh_per_run`]).
    creator_ctxs: SmallVec<[FnCtxId; 1]>,
    /// The counter, or the local holding the fresh object.
    counter: LocalId,
    /// Width of the passed value in bits.
    bits: u64,
    /// What is passed.
    kind: KeyKind,
    /// Nodes of the loop and of its peeled copies (empty for objects).
    region: Vec<bool>,
    /// The create statement and its peeled copies.
    creates: Vec<EdgeId>,
    /// The statements that give the counter (or the object local) its next value.
    steps: Vec<EdgeId>,
    /// A pointer local the loop sets to the counter's element once per iteration and passes
    /// to the create (`t = a + i; t->x = ...; pthread_create(.., t)`), with the statements
    /// setting it (the original and its peeled copies).
    alias: Option<(LocalId, Vec<EdgeId>)>,
}

/// A local holding tickets: every write of it is a ticket read.
#[derive(Clone, Debug)]
struct TicketHolder {
    counter: GlobalId,
    bits: u64,
    conv: u8,
    defs: Vec<EdgeId>,
}

/// The keys of a program: which accesses are keyed, and how.
#[derive(Debug, Default)]
pub struct Slots {
    families: Vec<LoopFamily>,
    /// Per created thread: its family and its key locals (with their defining statement;
    /// `None` for the parameter).
    instances: FxHashMap<ThreadId, (usize, FxHashMap<LocalId, Option<EdgeId>>)>,
    /// Per created thread and function context other than its entry's: the key locals there
    /// (parameters every call entering the context binds to a key local of its caller, and
    /// locals copied once from them; [`helper_keys`]).
    helper_keys: FxHashMap<(ThreadId, FnCtxId), FxHashMap<LocalId, Option<EdgeId>>>,
    /// Per creating thread, the counter families it creates.
    creators: FxHashMap<ThreadId, Vec<usize>>,
    /// Per creating function, the object families it creates.
    object_creators: FxHashMap<FuncId, Vec<usize>>,
    /// Ticket holders by (function, local).
    tickets: FxHashMap<(FuncId, LocalId), TicketHolder>,
}

impl Slots {
    /// Finds the create loops and ticket counters of a program.
    pub fn compute<'p, B: Backend<'p>>(
        program: &Program,
        roles: &Roles,
        graph: &ThreadGraph,
        backend: &B,
        locksets: &LocksetResult,
    ) -> Slots {
        let mut out = Slots::default();
        for fam in loop_families(program, roles, graph, backend, locksets) {
            let k = out.families.len();
            let members: Vec<ThreadId> = graph
                .threads
                .iter()
                .filter(|t| {
                    t.site
                        .is_some_and(|s| s.func == fam.id.0 && fam.creates.contains(&s.edge))
                })
                .map(|t| t.id)
                .collect();
            for t in members {
                let bits = match fam.kind {
                    KeyKind::Counter => fam.bits,
                    _ => pointer_bits(&program.types),
                };
                if let Some(keys) = instance_keys(program, graph, t, bits) {
                    for (c, ks) in helper_keys(program, graph.contexts(t), &keys, bits) {
                        out.helper_keys.insert((t, c), ks);
                    }
                    out.instances.insert(t, (k, keys));
                }
            }
            match fam.parent {
                Some(p) => out.creators.entry(p).or_default().push(k),
                None => out.object_creators.entry(fam.id.0).or_default().push(k),
            }
            out.families.push(fam);
        }
        out.tickets = ticket_holders(program, roles, graph, locksets);
        out
    }

    /// The key of an access of thread `tc.thread` in function context `ctx`, statement `edge`
    /// (`None`: not keyed).
    pub fn key<'p, B: Backend<'p>>(
        &self,
        program: &Program,
        backend: &B,
        tc: &ThreadContexts,
        ctx: FnCtxId,
        edge: EdgeId,
        mem: &MemAccess<'_>,
    ) -> Option<SlotKey> {
        if self.families.is_empty() && self.tickets.is_empty() {
            return None;
        }
        let AccessSite::Lval(lv) = mem.site else {
            return None;
        };
        let func = tc.ctx(ctx).func;
        let cfg = program.function(func).body.as_ref()?;
        let node = cfg.edges.get(edge.0 as usize)?.src;
        let types = &program.types;
        let at = || tc.context(ctx, edge);
        let root = ctx == tc.entry;
        let indexed = indexed(program, func, lv);
        let element = |ix: &Indexed<'_>, domain, holder| {
            let origin = ix.origin_offset(backend, &at())?;
            Some(ix.key(domain, holder, OriginKey::Offset(origin)))
        };
        // A created thread's own element or object (in its entry, or in a helper the key is
        // passed to).
        if let Some((k, entry_keys)) = self.instances.get(&tc.thread)
            && let Some(keys) = if root {
                Some(entry_keys)
            } else {
                self.helper_keys.get(&(tc.thread, ctx))
            }
        {
            let fam = &self.families[*k];
            let holds = |l: LocalId| {
                keys.get(&l)
                    .is_some_and(|d| d.is_none_or(|d| dominated(cfg, node, &[d])))
            };
            let domain = Domain::Loop(fam.id.0, fam.id.1);
            let key = match fam.kind {
                KeyKind::Counter => indexed
                    .as_ref()
                    .filter(|ix| chain_local(types, ix.index, fam.bits).is_some_and(holds))
                    .and_then(|ix| element(ix, domain, Holder::Instance)),
                KeyKind::Element(origin, stride, off) => through_pointer(program, lv)
                    .filter(|(q, _, _)| holds(*q))
                    .and_then(|(_, lo, hi)| {
                        Some(SlotKey {
                            domain,
                            holder: Holder::Instance,
                            span: Span::Element {
                                origin,
                                stride,
                                lo: off.checked_add(lo)?,
                                hi: off.checked_add(hi)?,
                            },
                        })
                    }),
                KeyKind::Object => through_pointer(program, lv)
                    .filter(|(q, _, _)| holds(*q))
                    .map(|_| SlotKey {
                        domain,
                        holder: Holder::Instance,
                        span: Span::Object,
                    }),
            };
            if key.is_some() {
                return key;
            }
        }
        // The creator's accesses to the element (or object) of the thread it creates next.
        let before_create = |fam: &LoopFamily| {
            !fam.creates
                .iter()
                .any(|c| cfg.reaches(cfg.edge(*c).dst, node, &fam.steps))
        };
        if let Some(fams) = self.object_creators.get(&func)
            && let Some((q, _, _)) = through_pointer(program, lv)
        {
            for &k in fams {
                let fam = &self.families[k];
                if fam.counter == q && dominated(cfg, node, &fam.steps) && before_create(fam) {
                    return Some(SlotKey {
                        domain: Domain::Loop(fam.id.0, fam.id.1),
                        holder: Holder::Creator,
                        span: Span::Object,
                    });
                }
            }
        }
        // The creator's accesses through the alias of the element of the thread it creates
        // next: set in this iteration, before that thread's create.
        if let Some(fams) = self.creators.get(&tc.thread)
            && let Some((q, lo, hi)) = through_pointer(program, lv)
        {
            for &k in fams {
                let fam = &self.families[k];
                let (Some((t, defs)), KeyKind::Element(origin, stride, off)) =
                    (&fam.alias, fam.kind)
                else {
                    continue;
                };
                if fam.id.0 == func
                    && fam.creator_ctxs.contains(&ctx)
                    && *t == q
                    && fam.region.get(node.0 as usize).copied().unwrap_or(false)
                    && dominated(cfg, node, defs)
                    && !fam
                        .creates
                        .iter()
                        .any(|c| cfg.reaches(cfg.edge(*c).dst, node, defs))
                    && let (Some(lo), Some(hi)) = (off.checked_add(lo), off.checked_add(hi))
                    && hi <= stride
                {
                    return Some(SlotKey {
                        domain: Domain::Loop(fam.id.0, fam.id.1),
                        holder: Holder::Creator,
                        span: Span::Element {
                            origin,
                            stride,
                            lo,
                            hi,
                        },
                    });
                }
            }
        }
        let ix = indexed?;
        if let Some(fams) = self.creators.get(&tc.thread) {
            for &k in fams {
                let fam = &self.families[k];
                if fam.id.0 == func
                    && fam.creator_ctxs.contains(&ctx)
                    && fam.region.get(node.0 as usize).copied().unwrap_or(false)
                    && chain_local(types, ix.index, fam.bits) == Some(fam.counter)
                    && before_create(fam)
                {
                    let domain = Domain::Loop(fam.id.0, fam.id.1);
                    // The loop's fixed pointer local, when the family's origin is one (an
                    // exact offset would not match it).
                    if let KeyKind::Element(o @ OriginKey::Pointer(l, pre), _, _) = fam.kind
                        && ix.origin_pointer(types) == Some((l, pre))
                    {
                        return Some(ix.key(domain, Holder::Creator, o));
                    }
                    if let Some(key) = element(&ix, domain, Holder::Creator) {
                        return Some(key);
                    }
                }
            }
        }
        // A ticket.
        let l = chain_local(types, ix.index, 0)?;
        let t = self.tickets.get(&(func, l))?;
        if chain_local(types, ix.index, t.bits) != Some(l) || !dominated(cfg, node, &t.defs) {
            return None;
        }
        let origin = OriginKey::Offset(ix.origin_offset(backend, &at())?);
        Some(ix.key(
            Domain::Ticket {
                counter: t.counter,
                conv: t.conv,
            },
            Holder::Instance,
            origin,
        ))
    }
}

/// Whether every path from the entry of `cfg` to `node` takes one of `defs`.
fn dominated(cfg: &Cfg, node: NodeId, defs: &[EdgeId]) -> bool {
    !cfg.reaches(cfg.entry, node, defs)
}

fn pointer_bits(types: &TypeTable) -> u64 {
    types.size_of(types.common.void_ptr).unwrap_or(8) * 8
}

/// Whether a type is an integer or pointer type of at least `bits` bits.
fn wide(types: &TypeTable, ty: TypeId, bits: u64) -> bool {
    matches!(types.kind(ty), TypeKind::Int(_) | TypeKind::Pointer(_))
        && types.size_of(ty).is_some_and(|s| s * 8 >= bits)
}

/// The local an expression reads through casts that keep its low `bits` bits (every type on
/// the way, the local's included, is an integer or pointer type at least that wide), so
/// different values of the local give different values of the expression.
fn chain_local(types: &TypeTable, mut e: &Expr, bits: u64) -> Option<LocalId> {
    loop {
        if !wide(types, e.ty, bits) {
            return None;
        }
        match &e.kind {
            ExprKind::Cast(inner) => e = inner,
            ExprKind::Load(lv) => return whole_local(lv),
            _ => return None,
        }
    }
}

/// Where element 0 of an indexed access lies.
enum Origin<'a> {
    /// At the address a pointer expression holds.
    Ptr(&'a Expr),
    /// At the start of a named variable.
    Object,
}

/// An access `origin + prefix + index * stride + [lo, hi)`.
struct Indexed<'a> {
    origin: Origin<'a>,
    prefix: u64,
    index: &'a Expr,
    stride: u64,
    lo: u64,
    hi: u64,
}

impl Indexed<'_> {
    fn origin_offset<'p, B: Backend<'p>>(
        &self,
        backend: &B,
        ctx: &crate::context::Context,
    ) -> Option<i64> {
        let base = match self.origin {
            Origin::Object => 0,
            Origin::Ptr(e) => backend.exact_offset(ctx, e)?,
        };
        i64::try_from(base)
            .ok()?
            .checked_add(i64::try_from(self.prefix).ok()?)
    }

    /// The pointer local (and the bytes after it) that element 0 lies at, for an origin
    /// that is a pointer local (through pointer casts).
    fn origin_pointer(&self, types: &TypeTable) -> Option<(LocalId, u64)> {
        match self.origin {
            Origin::Ptr(e) => Some((chain_local(types, e, pointer_bits(types))?, self.prefix)),
            Origin::Object => None,
        }
    }

    fn key(&self, domain: Domain, holder: Holder, origin: OriginKey) -> SlotKey {
        SlotKey {
            domain,
            holder,
            span: Span::Element {
                origin,
                stride: self.stride,
                lo: self.lo,
                hi: self.hi,
            },
        }
    }
}

/// The type of a variable.
fn var_type(program: &Program, func: FuncId, v: Var) -> TypeId {
    match v {
        Var::Global(g) => program.global(g).ty,
        Var::Local(l) => program.function(func).local(l).ty,
    }
}

/// The byte offset and type that constant projections select in an object of type `ty`
/// (`None` for a non-constant index, a bit-field or an unknown layout).
fn const_offset(types: &TypeTable, mut ty: TypeId, proj: &[Proj]) -> Option<(u64, TypeId)> {
    let mut off = 0u64;
    for p in proj {
        match p {
            Proj::Field { comp, index } => {
                let f = types.comp(*comp).fields.get(*index as usize)?;
                if f.bit_field.is_some() {
                    return None;
                }
                off = off.checked_add(f.offset)?;
                ty = f.ty;
            }
            Proj::Index(i) => {
                let k = u64::try_from(strip_casts(i).as_int()?).ok()?;
                let TypeKind::Array { elem, .. } = types.kind(ty) else {
                    return None;
                };
                let size = types.size_of(*elem)?;
                off = off.checked_add(k.checked_mul(size)?)?;
                ty = *elem;
            }
        }
    }
    Some((off, ty))
}

/// The bytes `[lo, hi)` an lvalue with the projections `proj` from an object of type `ty`
/// touches, when they are constant.
fn const_range(types: &TypeTable, ty: TypeId, proj: &[Proj], lv_ty: TypeId) -> Option<(u64, u64)> {
    let (lo, _) = const_offset(types, ty, proj)?;
    let size = types.size_of(lv_ty)?;
    Some((lo, lo.checked_add(size)?))
}

/// Strips casts to pointer types.
fn strip_ptr_casts<'a>(types: &TypeTable, mut e: &'a Expr) -> &'a Expr {
    while let ExprKind::Cast(inner) = &e.kind {
        if !matches!(types.kind(e.ty), TypeKind::Pointer(_)) {
            break;
        }
        e = inner;
    }
    e
}

/// An access to one element of an array selected by one non-constant index: `*(p + i)...` or
/// `v...[i]...`, with every other projection constant.
fn indexed<'a>(program: &Program, func: FuncId, lv: &'a Lval) -> Option<Indexed<'a>> {
    let types = &program.types;
    let dynamic: Vec<usize> = lv
        .proj
        .iter()
        .enumerate()
        .filter(|(_, p)| matches!(p, Proj::Index(i) if strip_casts(i).as_int().is_none()))
        .map(|(k, _)| k)
        .collect();
    match (&lv.host, dynamic.as_slice()) {
        (Host::Deref(e), []) => {
            let ExprKind::Binary(BinOp::PtrAdd, p, i) = &strip_ptr_casts(types, e).kind else {
                return None;
            };
            let stride = types.size_of(types.pointee(p.ty)?)?;
            let (lo, hi) = const_range(types, types.pointee(e.ty)?, &lv.proj, lv.ty)?;
            Some(Indexed {
                origin: Origin::Ptr(p),
                prefix: 0,
                index: i,
                stride,
                lo,
                hi,
            })
        }
        (host, [k]) => {
            let (origin, ty) = match host {
                Host::Var(v) => (Origin::Object, var_type(program, func, *v)),
                Host::Deref(e) => (Origin::Ptr(e), types.pointee(e.ty)?),
            };
            let (prefix, arr) = const_offset(types, ty, &lv.proj[..*k])?;
            let TypeKind::Array { elem, .. } = types.kind(arr) else {
                return None;
            };
            let Proj::Index(index) = &lv.proj[*k] else {
                return None;
            };
            let stride = types.size_of(*elem)?;
            let (lo, hi) = const_range(types, *elem, &lv.proj[*k + 1..], lv.ty)?;
            Some(Indexed {
                origin,
                prefix,
                index,
                stride,
                lo,
                hi,
            })
        }
        _ => None,
    }
}

/// An access through a pointer local: `*q`, `q->f`, `q[n]` with constant `n >= 0`, as the
/// local and the bytes `[lo, hi)` from where it points.
fn through_pointer(program: &Program, lv: &Lval) -> Option<(LocalId, u64, u64)> {
    let types = &program.types;
    let Host::Deref(e) = &lv.host else {
        return None;
    };
    let bits = pointer_bits(types);
    let inner = strip_ptr_casts(types, e);
    let (q, skip) = match &inner.kind {
        ExprKind::Binary(BinOp::PtrAdd, p, n) => {
            let n = u64::try_from(strip_casts(n).as_int()?).ok()?;
            let size = types.size_of(types.pointee(p.ty)?)?;
            (chain_local(types, p.as_ref(), bits)?, n.checked_mul(size)?)
        }
        _ => (chain_local(types, inner, bits)?, 0),
    };
    let (lo, hi) = const_range(types, types.pointee(e.ty)?, &lv.proj, lv.ty)?;
    Some((q, skip.checked_add(lo)?, skip.checked_add(hi)?))
}

/// Writes of each local of a CFG.
fn local_writes(cfg: &Cfg) -> FxHashMap<LocalId, Vec<EdgeId>> {
    let mut out: FxHashMap<LocalId, Vec<EdgeId>> = FxHashMap::default();
    for (i, e) in cfg.edges.iter().enumerate() {
        written_locals(&e.op, &mut |l| {
            out.entry(l).or_default().push(EdgeId(i as u32))
        });
    }
    out
}

fn addr_taken(cfg: &Cfg) -> FxHashSet<LocalId> {
    let mut out = FxHashSet::default();
    walk_cfg_addr_taken(cfg, &mut |l| {
        out.insert(l);
    });
    out
}

/// Whether some call of the thread's contexts enters `func`.
fn called_in(tc: &ThreadContexts, func: FuncId) -> bool {
    tc.calls.values().flatten().any(|t| t.func == func)
}

/// Whether `func` runs at most once per run of the thread entry `entry` (itself never called):
/// following its callers upwards, each function on the way has exactly one call statement
/// in the program, outside any loop of its caller, no function on the way has its address
/// taken, and the chain reaches `entry` (the `main-helper` shape: `main` calls `run` once,
/// `run` creates the threads).
fn runs_once(program: &Program, taken: &FxHashSet<FuncId>, entry: FuncId, func: FuncId) -> bool {
    let mut cur = func;
    let mut seen = FxHashSet::default();
    while cur != entry {
        if !seen.insert(cur) || taken.contains(&cur) {
            return false;
        }
        let mut sites = Vec::new();
        for (gi, g) in program.functions.iter().enumerate() {
            let Some(cfg) = &g.body else { continue };
            for (ei, e) in cfg.edges.iter().enumerate() {
                if let Op::Call {
                    callee: Callee::Direct(h),
                    ..
                } = &e.op
                    && *h == cur
                {
                    sites.push((FuncId(gi as u32), EdgeId(ei as u32)));
                }
            }
        }
        let [(caller, edge)] = sites.as_slice() else {
            return false;
        };
        let Some(cfg) = &program.function(*caller).body else {
            return false;
        };
        let e = cfg.edge(*edge);
        // Inside a loop: the call's target node leads back to its source.
        if cfg.reaches(e.dst, e.src, &[]) {
            return false;
        }
        cur = *caller;
    }
    true
}

/// The create loops of a program whose threads get distinct values.
fn loop_families<'p, B: Backend<'p>>(
    program: &Program,
    roles: &Roles,
    graph: &ThreadGraph,
    backend: &B,
    locksets: &LocksetResult,
) -> Vec<LoopFamily> {
    let types = &program.types;
    let int_size = types.size_of(types.common.int).unwrap_or(4);
    let taken_funcs = crate::ir::specialise::address_taken(program);
    let mut out = Vec::new();
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        let creates: Vec<(EdgeId, usize)> = cfg
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| e.peel == 0)
            .filter_map(|(i, e)| match roles.of_call(&e.op) {
                Some(Role::ThreadCreate { arg, .. }) => Some((EdgeId(i as u32), *arg)),
                _ => None,
            })
            .collect();
        if creates.is_empty() {
            continue;
        }
        let taken = addr_taken(cfg);
        let writes = local_writes(cfg);
        let heads: Vec<(NodeId, Vec<bool>)> = (0..cfg.nodes.len())
            .map(|i| NodeId(i as u32))
            .filter(|h| cfg.node(*h).loop_head)
            .map(|h| (h, cfg.loop_body(h)))
            .collect();
        for (c, argpos) in creates {
            let edge = cfg.edge(c);
            let Op::Call { args, .. } = &edge.op else {
                continue;
            };
            let Some(arg) = args.get(argpos) else {
                continue;
            };
            let same = |e: &crate::ir::Edge| e.loc == edge.loc && e.op == edge.op;
            if cfg
                .edges
                .iter()
                .enumerate()
                .any(|(i, e)| i != c.0 as usize && e.peel == 0 && same(e))
            {
                continue; // two identical creates: peeled copies would be ambiguous
            }
            let mut all: Vec<EdgeId> = vec![c];
            all.extend(
                cfg.edges
                    .iter()
                    .enumerate()
                    .filter(|(_, e)| e.peel > 0 && same(e))
                    .map(|(i, _)| EdgeId(i as u32)),
            );
            // A fresh object, or a local holding the counter's element.
            let mut arg = arg;
            let mut alias = None;
            if let Some(t) = chain_local(types, arg, pointer_bits(types))
                && matches!(types.kind(f.local(t).ty), TypeKind::Pointer(_))
            {
                if let Some(fam) = object_family(program, roles, func, c, all.clone(), t) {
                    out.push(fam);
                    continue;
                }
                match element_alias(cfg, f, &writes, &taken, t) {
                    Some((rhs, defs)) => {
                        arg = rhs;
                        alias = Some((t, defs));
                    }
                    None => continue,
                }
            }
            // The one loop around the create.
            let around: Vec<&(NodeId, Vec<bool>)> = heads
                .iter()
                .filter(|(_, b)| b[edge.src.0 as usize])
                .collect();
            let [(head, body)] = around.as_slice() else {
                continue;
            };
            // The argument: the counter (integer key) or its element's address.
            let (counter, elem) = match chain_local(types, arg, 0) {
                Some(l) => (l, None),
                None => match element_address(program, func, arg) {
                    Some((ix, off)) => match chain_local(types, ix.index, 0) {
                        Some(l) => (l, Some((ix, off))),
                        None => continue,
                    },
                    None => continue,
                },
            };
            let cty = f.local(counter).ty;
            let (signed, csize) = match types.kind(cty) {
                TypeKind::Int(k) => (k.is_signed(), types.size_of(cty).unwrap_or(0)),
                _ => continue,
            };
            let bits = csize * 8;
            if csize < int_size || taken.contains(&counter) {
                continue;
            }
            let chain_ok = match &elem {
                None => chain_local(types, arg, bits) == Some(counter),
                Some((ix, _)) => chain_local(types, ix.index, bits) == Some(counter),
            };
            if !chain_ok {
                continue;
            }
            // The loop's nodes and those of its peeled copies.
            let mut region = body.clone();
            let mut by_loc: FxHashMap<crate::ir::Loc, Vec<&crate::ir::Edge>> = FxHashMap::default();
            for e in &cfg.edges {
                if e.peel == 0 && body[e.src.0 as usize] {
                    by_loc.entry(e.loc).or_default().push(e);
                }
            }
            for e in &cfg.edges {
                if e.peel > 0
                    && by_loc
                        .get(&e.loc)
                        .is_some_and(|v| v.iter().any(|o| o.op == e.op))
                {
                    region[e.src.0 as usize] = true;
                }
            }
            if all.iter().any(|x| !region[cfg.edge(*x).src.0 as usize]) {
                continue;
            }
            // A local that keeps one value throughout the loop: no write of it there, and no
            // pointer to it.
            let fixed = |l: LocalId| {
                !taken.contains(&l)
                    && writes
                        .get(&l)
                        .into_iter()
                        .flatten()
                        .all(|w| !region[cfg.edge(*w).src.0 as usize])
            };
            // Every write of the counter in the region is a step of one, all in one direction.
            let mut steps = Vec::new();
            let mut dirs = FxHashSet::default();
            let mut ok = true;
            for w in writes.get(&counter).into_iter().flatten() {
                let e = cfg.edge(*w);
                if !region[e.src.0 as usize] {
                    continue;
                }
                match step_of(types, &e.op, counter, bits) {
                    Some(d) => {
                        dirs.insert(d);
                        steps.push(*w);
                    }
                    None => ok = false,
                }
            }
            if !ok || dirs.len() != 1 {
                continue;
            }
            let up = dirs.contains(&1);
            // An unsigned counter must not wrap: the loop test stops it first.
            if !signed {
                let tested = stops_before_wrap(types, cfg, *head, body, counter, csize, up)
                    || crate::mhp::loops::counted_loops(program, roles, func, true)
                        .iter()
                        .any(|l| {
                            cfg.edge(l.exit).src == *head
                                && l.counter == counter
                                && matches!(
                                    (l.op, up),
                                    (BinOp::Lt | BinOp::Ne, true) | (BinOp::Gt | BinOp::Ne, false)
                                )
                        });
                if !tested {
                    continue;
                }
            }
            // An alias is set in the loop, before every create and after every step, from an
            // origin the loop does not change, and never twice without a step.
            if let Some((_, defs)) = &alias {
                let origin_fixed = match &elem {
                    Some((ix, _)) => match ix.origin {
                        Origin::Ptr(e) => {
                            let mut moved = false;
                            walk_expr(e, &mut |x| {
                                if let ExprKind::Load(lv) = &x.kind
                                    && let Host::Var(Var::Local(l)) = lv.host
                                {
                                    moved |= !fixed(l);
                                }
                            });
                            !moved
                        }
                        Origin::Object => true,
                    },
                    None => false,
                };
                let set_before = all.iter().all(|x| {
                    let at = cfg.edge(*x).src;
                    dominated(cfg, at, defs)
                        && steps
                            .iter()
                            .all(|st| !cfg.reaches(cfg.edge(*st).dst, at, defs))
                });
                let once = defs.iter().all(|a| {
                    region[cfg.edge(*a).src.0 as usize]
                        && defs
                            .iter()
                            .all(|b| !cfg.reaches(cfg.edge(*a).dst, cfg.edge(*b).src, &steps))
                });
                if !(origin_fixed && set_before && once) {
                    continue;
                }
            }
            // A step between any two creates.
            let again = all.iter().any(|a| {
                all.iter()
                    .any(|b| cfg.reaches(cfg.edge(*a).dst, cfg.edge(*b).src, &steps))
            });
            if again {
                continue;
            }
            // Once left, the region is never entered again.
            let mut seen = vec![false; cfg.nodes.len()];
            let mut stack: Vec<NodeId> = cfg
                .edges
                .iter()
                .filter(|e| region[e.src.0 as usize] && !region[e.dst.0 as usize])
                .map(|e| e.dst)
                .collect();
            let mut reenters = false;
            while let Some(n) = stack.pop() {
                if region[n.0 as usize] {
                    reenters = true;
                    break;
                }
                if std::mem::replace(&mut seen[n.0 as usize], true) {
                    continue;
                }
                stack.extend(cfg.succs(n).map(|e| e.dst));
            }
            if reenters {
                continue;
            }
            // One creating thread, running the function once.
            let members: Vec<&crate::threads::Thread> = graph
                .threads
                .iter()
                .filter(|t| {
                    t.site
                        .is_some_and(|s| s.func == func && all.contains(&s.edge))
                })
                .collect();
            let Some(first) = members.first() else {
                continue;
            };
            let [parent] = first.parents.as_slice() else {
                continue;
            };
            let parent = *parent;
            if members.iter().any(|t| t.parents.as_slice() != [parent]) {
                continue;
            }
            let p = graph.thread(parent);
            let ptc = graph.contexts(parent);
            if !p.unique || p.in_cycle || called_in(ptc, p.entry) {
                continue;
            }
            // The elements belong to an object the function allocates afresh on each run
            // before the loop, through a pointer local the loop never changes: threads of
            // different runs then touch different objects whatever their values.
            let fresh_origin = elem.as_ref().and_then(|(ix, _)| {
                ix.origin_pointer(types).filter(|(l, _)| {
                    fixed(*l) && fresh_per_run(program, roles, f, &writes, &taken, *l, &all)
                })
            });
            // The function contexts running the loop: the parent's entry, or a function the
            // entry reaches through calls that each run once ([`runs_once`]), or any
            // function of the parent with a fresh origin.
            let creator_ctxs: SmallVec<[FnCtxId; 1]> = if p.entry == func {
                smallvec::smallvec![ptc.entry]
            } else {
                ptc.ids().filter(|c| ptc.ctx(*c).func == func).collect()
            };
            let once = p.entry == func
                || (creator_ctxs.len() == 1 && runs_once(program, &taken_funcs, p.entry, func));
            if creator_ctxs.is_empty() || !(once || fresh_origin.is_some()) {
                continue;
            }
            let several_runs = !once;
            // For an address argument, element 0 is at one offset at every create.
            let kind = match &elem {
                None if several_runs => continue,
                None => KeyKind::Counter,
                Some((ix, off)) if several_runs => match fresh_origin {
                    Some((l, pre)) if ix.stride > 0 && *off < ix.stride => {
                        KeyKind::Element(OriginKey::Pointer(l, pre), ix.stride, *off)
                    }
                    _ => continue,
                },
                Some((ix, off)) => {
                    let [creator_ctx] = creator_ctxs.as_slice() else {
                        continue;
                    };
                    let creator_ctx = *creator_ctx;
                    let mut origin = None;
                    let mut ok = true;
                    for x in &all {
                        if !locksets.reachable(parent, creator_ctx, cfg.edge(*x).src) {
                            continue;
                        }
                        // The exact offset, else a pointer local the loop never changes.
                        let here = ix
                            .origin_offset(backend, &ptc.context(creator_ctx, *x))
                            .map(OriginKey::Offset)
                            .or_else(|| {
                                let (l, pre) = ix.origin_pointer(types)?;
                                fixed(l).then_some(OriginKey::Pointer(l, pre))
                            });
                        match here {
                            Some(o) if origin.is_none_or(|p| p == o) => origin = Some(o),
                            _ => ok = false,
                        }
                    }
                    match origin {
                        Some(o) if ok && ix.stride > 0 && *off < ix.stride => {
                            KeyKind::Element(o, ix.stride, *off)
                        }
                        _ => continue,
                    }
                }
            };
            out.push(LoopFamily {
                id: (func, c),
                parent: Some(parent),
                creator_ctxs,
                counter,
                bits,
                kind,
                region,
                creates: all,
                steps,
                alias,
            });
        }
    }
    out
}

/// Whether the test at loop head `head` (of the loop whose nodes `body` marks) keeps the
/// unsigned `counter` (of `size` bytes) from wrapping: the loop goes on only while `counter < x` (moving up; `counter > x` moving down;
/// `counter != x` either way), compared in the counter's own width, whatever `x` is. A step
/// of one after a passed test then never leaves the counter's range, whatever the body calls.
fn stops_before_wrap(
    types: &TypeTable,
    cfg: &Cfg,
    head: NodeId,
    body: &[bool],
    counter: LocalId,
    size: u64,
    up: bool,
) -> bool {
    let Some((_, op, a, b)) = crate::mhp::loops::continue_test(cfg, head, body) else {
        return false;
    };
    let (side, op) = if crate::ir::visit::local_of(a) == Some(counter) {
        (a, op)
    } else if crate::ir::visit::local_of(b) == Some(counter) {
        (b, op.mirrored())
    } else {
        return false;
    };
    let unsigned = matches!(types.kind(side.ty), TypeKind::Int(k) if !k.is_signed());
    unsigned
        && types.size_of(side.ty) == Some(size)
        && matches!(
            (op, up),
            (BinOp::Lt | BinOp::Ne, true) | (BinOp::Gt | BinOp::Ne, false)
        )
}

/// For a pointer local `t` that is not a parameter and whose address is not taken, set only
/// by statements `t = <element address>` of one source location (a statement and its peeled
/// copies): the element address and those statements.
fn element_alias<'a>(
    cfg: &'a Cfg,
    f: &crate::ir::Function,
    writes: &FxHashMap<LocalId, Vec<EdgeId>>,
    taken: &FxHashSet<LocalId>,
    t: LocalId,
) -> Option<(&'a Expr, Vec<EdgeId>)> {
    if taken.contains(&t) || f.params.contains(&t) {
        return None;
    }
    let defs = writes.get(&t)?.clone();
    let first = cfg.edge(*defs.first()?);
    let Op::Assign { lhs, rhs } = &first.op else {
        return None;
    };
    if whole_local(lhs) != Some(t)
        || defs
            .iter()
            .any(|d| cfg.edge(*d).op != first.op || cfg.edge(*d).loc != first.loc)
    {
        return None;
    }
    Some((rhs, defs))
}

/// Whether pointer local `l` of `f` holds, at every create of `creates`, an object `f`
/// allocated on the current run: `l` is neither a parameter nor address-taken, every write of
/// it stores a fresh allocation ([`fresh_value`]), and every create is dominated by such a
/// write. Two runs of `f` then pass different objects, even when the loop runs once per run
/// (allocations live at the same time are different objects).
fn fresh_per_run(
    program: &Program,
    roles: &Roles,
    f: &crate::ir::Function,
    writes: &FxHashMap<LocalId, Vec<EdgeId>>,
    taken: &FxHashSet<LocalId>,
    l: LocalId,
    creates: &[EdgeId],
) -> bool {
    let Some(cfg) = &f.body else {
        return false;
    };
    if taken.contains(&l) || f.params.contains(&l) {
        return false;
    }
    let Some(defs) = writes.get(&l) else {
        return false;
    };
    let fresh = defs.iter().all(|d| {
        let e = cfg.edge(*d);
        match &e.op {
            Op::Assign { lhs, rhs } if whole_local(lhs) == Some(l) => {
                fresh_value(program, roles, cfg, taken, e.src, rhs, FRESH_CHAIN)
            }
            Op::Call { dest: Some(d), .. } => {
                whole_local(d) == Some(l) && matches!(roles.of_call(&e.op), Some(Role::Alloc))
            }
            _ => false,
        }
    });
    fresh
        && creates
            .iter()
            .all(|c| dominated(cfg, cfg.edge(*c).src, defs))
}

/// Statements [`fresh_value`] looks back over.
const FRESH_CHAIN: usize = 8;

/// Whether `e`, evaluated at `node`, is certainly a fresh allocation of this run, looking back
/// over at most `budget` statements of the one straight-line path into `node`: a local whose
/// address is not taken (`taken`) that the path last set to an allocator's result (or to such
/// a value, through casts), or a load of a location the path last stored such a value to with
/// no statement between that could change it (store-to-load forwarding: `p->w = tmp; w =
/// p->w;`).
fn fresh_value(
    program: &Program,
    roles: &Roles,
    cfg: &Cfg,
    taken: &FxHashSet<LocalId>,
    node: NodeId,
    e: &Expr,
    budget: usize,
) -> bool {
    let e = strip_casts(e);
    let local = chain_local(&program.types, e, 0);
    if local.is_some_and(|t| taken.contains(&t)) {
        return false;
    }
    let loaded = match &e.kind {
        ExprKind::Load(lv) if local.is_none() => Some(lv),
        _ => None,
    };
    if local.is_none() && loaded.is_none() {
        return false;
    }
    // Locals the loaded lvalue depends on: its host and those its expressions read.
    let mut used: FxHashSet<LocalId> = FxHashSet::default();
    if let Some(lv) = loaded {
        let mut note = |l: &Lval| {
            if let Host::Var(Var::Local(v)) = l.host {
                used.insert(v);
            }
        };
        note(lv);
        walk_lval(lv, &mut |x| {
            if let ExprKind::Load(l) = &x.kind {
                note(l);
            }
        });
    }
    let mut n = node;
    for _ in 0..budget {
        let [pred] = cfg.node(n).preds.as_slice() else {
            return false;
        };
        let p = cfg.edge(*pred);
        match (&p.op, local, loaded) {
            (Op::Call { dest: Some(d), .. }, Some(t), _) if whole_local(d) == Some(t) => {
                return matches!(roles.of_call(&p.op), Some(Role::Alloc));
            }
            (Op::Assign { lhs, rhs }, Some(t), _) if whole_local(lhs) == Some(t) => {
                return fresh_value(program, roles, cfg, taken, p.src, rhs, budget - 1);
            }
            (Op::Assign { lhs, rhs }, None, Some(lv)) if lhs == lv.as_ref() => {
                return fresh_value(program, roles, cfg, taken, p.src, rhs, budget - 1);
            }
            // A statement that may change the value: anything writing memory or a local the
            // value depends on.
            (Op::Call { .. } | Op::Asm { .. }, _, Some(_)) => return false,
            (Op::Assign { lhs, .. }, _, Some(_))
                if whole_local(lhs).is_none_or(|v| used.contains(&v)) =>
            {
                return false;
            }
            _ => {}
        }
        let mut hit = false;
        if let Some(t) = local {
            written_locals(&p.op, &mut |v| hit |= v == t);
        }
        if hit {
            return false;
        }
        n = p.src;
    }
    false
}

/// The family of create `c` (with peeled copies `all`) passing local `t`, when every write of
/// `t` stores a fresh allocation and every path from one create to the next takes such a write:
/// each thread gets an object no other thread got.
fn object_family(
    program: &Program,
    roles: &Roles,
    func: FuncId,
    c: EdgeId,
    all: Vec<EdgeId>,
    t: LocalId,
) -> Option<LoopFamily> {
    let f = program.function(func);
    let cfg = f.body.as_ref()?;
    if addr_taken(cfg).contains(&t) || f.params.contains(&t) {
        return None;
    }
    let steps = local_writes(cfg).remove(&t)?;
    let alloc_into = |e: &crate::ir::Edge, x: LocalId| match &e.op {
        Op::Call { dest: Some(d), .. } => {
            whole_local(d) == Some(x) && matches!(roles.of_call(&e.op), Some(Role::Alloc))
        }
        _ => false,
    };
    let fresh = steps.iter().all(|w| {
        let e = cfg.edge(*w);
        if alloc_into(e, t) {
            return true;
        }
        // `t = (T *)tmp` right after `tmp = malloc(...)`.
        let Op::Assign { lhs, rhs } = &e.op else {
            return false;
        };
        let node = cfg.node(e.src);
        let (Some(tmp), [pred]) = (chain_local(&program.types, rhs, 0), node.preds.as_slice())
        else {
            return false;
        };
        whole_local(lhs) == Some(t) && node.succs.len() == 1 && alloc_into(cfg.edge(*pred), tmp)
    });
    let again = all.iter().any(|a| {
        all.iter()
            .any(|b| cfg.reaches(cfg.edge(*a).dst, cfg.edge(*b).src, &steps))
    });
    if !fresh || steps.is_empty() || again {
        return None;
    }
    Some(LoopFamily {
        id: (func, c),
        parent: None,
        creator_ctxs: SmallVec::new(),
        counter: t,
        bits: pointer_bits(&program.types),
        kind: KeyKind::Object,
        region: Vec::new(),
        creates: all,
        steps,
        alias: None,
    })
}

/// The element address a create argument passes: `a + i`, `&a[i]`, `&a[i].f` (pointer casts
/// around it allowed), with the offset of the address inside the element.
fn element_address<'a>(
    program: &Program,
    func: FuncId,
    arg: &'a Expr,
) -> Option<(Indexed<'a>, u64)> {
    let types = &program.types;
    let e = strip_ptr_casts(types, arg);
    match &e.kind {
        ExprKind::Binary(BinOp::PtrAdd, p, i) => {
            let stride = types.size_of(types.pointee(p.ty)?)?;
            Some((
                Indexed {
                    origin: Origin::Ptr(p.as_ref()),
                    prefix: 0,
                    index: i.as_ref(),
                    stride,
                    lo: 0,
                    hi: stride,
                },
                0,
            ))
        }
        ExprKind::AddrOf(lv) => {
            let ix = indexed(program, func, lv.as_ref())?;
            let off = ix.lo;
            Some((ix, off))
        }
        _ => None,
    }
}

/// The direction (`1` or `-1`) of `counter = counter ± 1`.
fn step_of(types: &TypeTable, op: &Op, counter: LocalId, bits: u64) -> Option<i128> {
    let Op::Assign { lhs, rhs } = op else {
        return None;
    };
    if whole_local(lhs) != Some(counter) {
        return None;
    }
    let mut e = rhs;
    while let ExprKind::Cast(inner) = &e.kind {
        if !wide(types, e.ty, bits) {
            return None;
        }
        e = inner;
    }
    let ExprKind::Binary(op, a, b) = &e.kind else {
        return None;
    };
    let one = |x: &Expr| strip_casts(x).as_int() == Some(1);
    let is_counter = |x: &Expr| chain_local(types, x, bits) == Some(counter);
    match op {
        BinOp::Add if (is_counter(a) && one(b)) || (one(a) && is_counter(b)) => Some(1),
        BinOp::Sub if is_counter(a) && one(b) => Some(-1),
        _ => None,
    }
}

/// The key locals of a created thread's entry: its parameter and locals copied once from a
/// key local (through casts keeping `bits` bits), with their defining statements. `None` when
/// the parameter is written or its address taken, or the entry is also called.
fn instance_keys(
    program: &Program,
    graph: &ThreadGraph,
    t: ThreadId,
    bits: u64,
) -> Option<FxHashMap<LocalId, Option<EdgeId>>> {
    let th = graph.thread(t);
    let f = program.function(th.entry);
    let cfg = f.body.as_ref()?;
    let p = *f.params.first()?;
    if called_in(graph.contexts(t), th.entry) {
        return None;
    }
    let taken = addr_taken(cfg);
    let writes = local_writes(cfg);
    if taken.contains(&p) || writes.contains_key(&p) {
        return None;
    }
    let mut keys: FxHashMap<LocalId, Option<EdgeId>> = FxHashMap::default();
    keys.insert(p, None);
    copied_keys(&program.types, cfg, &writes, &taken, bits, &mut keys);
    Some(keys)
}

/// Adds to `keys` the locals of `cfg` copied once from a key local (through casts keeping
/// `bits` bits), with their defining statements.
fn copied_keys(
    types: &TypeTable,
    cfg: &Cfg,
    writes: &FxHashMap<LocalId, Vec<EdgeId>>,
    taken: &FxHashSet<LocalId>,
    bits: u64,
    keys: &mut FxHashMap<LocalId, Option<EdgeId>>,
) {
    loop {
        let mut added = false;
        for (l, ws) in writes {
            if keys.contains_key(l) || taken.contains(l) {
                continue;
            }
            let [w] = ws.as_slice() else { continue };
            if let Op::Assign { lhs, rhs } = &cfg.edge(*w).op
                && whole_local(lhs) == Some(*l)
                && chain_local(types, rhs, bits).is_some_and(|s| keys.contains_key(&s))
            {
                keys.insert(*l, Some(*w));
                added = true;
            }
        }
        if !added {
            return;
        }
    }
}

/// The key locals of the function contexts of thread `tc` other than its entry's, given the
/// entry's (`entry_keys`): a parameter is a key when every call entering the context passes
/// it a key local of the caller (through casts keeping `bits` bits) whose definition
/// dominates the call, and nothing writes the parameter or takes its address; locals copied
/// once from keys are keys too. Contexts entered otherwise (a callback, a once-routine) or
/// on a call cycle through themselves get none.
fn helper_keys(
    program: &Program,
    tc: &ThreadContexts,
    entry_keys: &FxHashMap<LocalId, Option<EdgeId>>,
    bits: u64,
) -> FxHashMap<FnCtxId, FxHashMap<LocalId, Option<EdgeId>>> {
    use crate::context::CallKind;
    let types = &program.types;
    let sites = tc.callers();
    let mut order: Vec<FnCtxId> = sites.keys().copied().filter(|c| *c != tc.entry).collect();
    order.sort();
    // Per function: its locals whose address is taken, and each local's writes.
    type LocalFacts = (FxHashSet<LocalId>, FxHashMap<LocalId, Vec<EdgeId>>);
    let mut facts: FxHashMap<FuncId, LocalFacts> = FxHashMap::default();
    let mut out: FxHashMap<FnCtxId, FxHashMap<LocalId, Option<EdgeId>>> = FxHashMap::default();
    // Keys only grow from none: a context on a cycle through itself keeps what its other
    // callers alone would not give it (the intersection with its own empty keys).
    for _ in 0..4 {
        let mut changed = false;
        for &t in &order {
            let g = tc.ctx(t).func;
            let f = program.function(g);
            let Some(cfg) = &f.body else { continue };
            // Every call must come from a keyed caller with a plain call.
            let keyed = |c: FnCtxId| {
                if c == tc.entry {
                    Some(entry_keys)
                } else {
                    out.get(&c)
                }
            };
            if !sites[&t].iter().all(|&(c, _, kind)| {
                matches!(kind, CallKind::Plain | CallKind::Atomic) && keyed(c).is_some()
            }) {
                continue;
            }
            let (taken, writes) = facts
                .entry(g)
                .or_insert_with(|| (addr_taken(cfg), local_writes(cfg)));
            let mut params: Option<FxHashSet<LocalId>> = None;
            for &(c, e, _) in &sites[&t] {
                let ccfg = program.function(tc.ctx(c).func).body.as_ref();
                let here: FxHashSet<LocalId> = match (keyed(c), ccfg) {
                    (Some(ck), Some(ccfg)) => match &ccfg.edge(e).op {
                        Op::Call { args, .. } => {
                            let node = ccfg.edge(e).src;
                            f.params
                                .iter()
                                .enumerate()
                                .filter(|(i, p)| {
                                    !taken.contains(p)
                                        && !writes.contains_key(p)
                                        && args
                                            .get(*i)
                                            .and_then(|a| chain_local(types, a, bits))
                                            .and_then(|l| ck.get(&l))
                                            .is_some_and(|d| {
                                                d.is_none_or(|d| dominated(ccfg, node, &[d]))
                                            })
                                })
                                .map(|(_, p)| *p)
                                .collect()
                        }
                        _ => FxHashSet::default(),
                    },
                    _ => FxHashSet::default(),
                };
                params = Some(match params {
                    Some(ps) => ps.intersection(&here).copied().collect(),
                    None => here,
                });
            }
            let Some(params) = params.filter(|ps| !ps.is_empty()) else {
                continue;
            };
            let mut keys: FxHashMap<LocalId, Option<EdgeId>> =
                params.into_iter().map(|p| (p, None)).collect();
            copied_keys(types, cfg, writes, taken, bits, &mut keys);
            if out.get(&t) != Some(&keys) {
                out.insert(t, keys);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// Facts found by walking the straight-line segments that read a global counter.
#[derive(Default)]
struct TicketFacts {
    /// Writes of the counter shown to increase it.
    increments: FxHashSet<(FuncId, EdgeId)>,
    /// Ticket reads: (function, defining statement) → (local, conventions).
    defs: FxHashMap<(FuncId, EdgeId), (LocalId, u8)>,
    /// Statements where a segment with a ticket read starts.
    starts: FxHashSet<(FuncId, EdgeId)>,
}

/// Walks the straight-line segment from `start` (a statement reading `g`): assignments only,
/// through nodes with one predecessor and one successor. Values are tracked relative to the
/// counter's value at the start.
fn walk_segment(
    types: &TypeTable,
    cfg: &Cfg,
    func: FuncId,
    (g, bits): (GlobalId, u64),
    start: EdgeId,
    taken: &FxHashSet<LocalId>,
    facts: &mut TicketFacts,
) {
    let mut sym: FxHashMap<LocalId, i128> = FxHashMap::default();
    let mut now = 0i128; // the counter's value minus its value at the start
    let mut defs: Vec<(EdgeId, LocalId, i128)> = Vec::new();
    let mut id = start;
    for _ in 0..cfg.edges.len() {
        let e = cfg.edge(id);
        match &e.op {
            Op::Skip => {}
            Op::Assign { lhs, rhs } => {
                let v = rel_value(types, rhs, g, bits, now, &sym);
                if let Some(l) = whole_local(lhs) {
                    match v {
                        Some(d) if !taken.contains(&l) => {
                            sym.insert(l, d);
                            defs.push((id, l, d));
                        }
                        _ => {
                            sym.remove(&l);
                        }
                    }
                } else if lhs.host == Host::Var(Var::Global(g)) && lhs.proj.is_empty() {
                    match v {
                        Some(d) if d > now => {
                            now = d;
                            facts.increments.insert((func, id));
                        }
                        _ => break,
                    }
                }
            }
            _ => break,
        }
        let node = cfg.node(e.dst);
        if node.preds.len() != 1 || node.succs.len() != 1 {
            break;
        }
        id = node.succs[0];
    }
    if now < 1 {
        return;
    }
    let mut any = false;
    for (d_edge, l, d) in defs {
        let mut conv = 0u8;
        if (0..now).contains(&d) {
            conv |= 1;
        }
        if (1..=now).contains(&d) {
            conv |= 2;
        }
        if conv != 0 {
            any = true;
            let entry = facts.defs.entry((func, d_edge)).or_insert((l, 0));
            entry.1 |= conv;
        }
    }
    if any {
        facts.starts.insert((func, start));
    }
}

/// The value of `e` minus the counter's value at the segment start, when it is the counter or
/// a tracked local plus a constant (through casts keeping `bits` bits).
fn rel_value(
    types: &TypeTable,
    e: &Expr,
    g: GlobalId,
    bits: u64,
    now: i128,
    sym: &FxHashMap<LocalId, i128>,
) -> Option<i128> {
    if !wide(types, e.ty, bits) {
        return None;
    }
    match &e.kind {
        ExprKind::Cast(inner) => rel_value(types, inner, g, bits, now, sym),
        ExprKind::Load(lv) => {
            if lv.host == Host::Var(Var::Global(g)) && lv.proj.is_empty() {
                Some(now)
            } else {
                sym.get(&whole_local(lv)?).copied()
            }
        }
        ExprKind::Binary(BinOp::Add, a, b) => {
            match (strip_casts(a).as_int(), strip_casts(b).as_int()) {
                (None, Some(k)) => rel_value(types, a, g, bits, now, sym)?.checked_add(k),
                (Some(k), None) => rel_value(types, b, g, bits, now, sym)?.checked_add(k),
                _ => None,
            }
        }
        ExprKind::Binary(BinOp::Sub, a, b) => {
            let k = strip_casts(b).as_int()?;
            rel_value(types, a, g, bits, now, sym)?.checked_sub(k)
        }
        _ => None,
    }
}

/// The globals an expression reads, each once, in order of first read.
fn globals_read(e: &Expr) -> smallvec::SmallVec<[GlobalId; 2]> {
    let mut found = smallvec::SmallVec::new();
    walk_expr(e, &mut |x| {
        if let ExprKind::Load(lv) = &x.kind
            && let Host::Var(Var::Global(g)) = lv.host
            && !found.contains(&g)
        {
            found.push(g);
        }
    });
    found
}

/// Where a candidate ticket counter is written and read (program order).
#[derive(Default)]
struct CounterUses {
    /// Edges writing the counter.
    writes: Vec<(FuncId, EdgeId)>,
    /// Assignments whose right-hand side reads the counter.
    reads: Vec<(FuncId, EdgeId)>,
}

/// The ticket holders of a program (see the module documentation).
fn ticket_holders(
    program: &Program,
    roles: &Roles,
    graph: &ThreadGraph,
    locksets: &LocksetResult,
) -> FxHashMap<(FuncId, LocalId), TicketHolder> {
    let types = &program.types;
    let int_size = types.size_of(types.common.int).unwrap_or(4);
    let mut out = FxHashMap::default();
    // Candidate counters: plain integer globals wide enough not to wrap.
    let mut candidates: Vec<(GlobalId, u64)> = Vec::new();
    for (gi, g) in program.globals.iter().enumerate() {
        let TypeKind::Int(k) = types.kind(g.ty) else {
            continue;
        };
        let size = types.size_of(g.ty).unwrap_or(0);
        let wide_enough = if k.is_signed() {
            size >= int_size
        } else {
            size >= 8
        };
        if g.thread_local
            || g.storage == Storage::Extern
            || !wide_enough
            || types.quals(g.ty).contains(crate::ir::types::Quals::ATOMIC)
        {
            continue;
        }
        candidates.push((GlobalId(gi as u32), size * 8));
    }
    if candidates.is_empty() {
        return out;
    }
    // Globals whose address is taken (in code or in static initialisers).
    let mut taken_globals: FxHashSet<GlobalId> = FxHashSet::default();
    let mut note = |x: &Expr| {
        if let ExprKind::AddrOf(lv) = &x.kind
            && let Host::Var(Var::Global(g)) = lv.host
        {
            taken_globals.insert(g);
        }
    };
    for f in &program.functions {
        if let Some(cfg) = &f.body {
            for e in &cfg.edges {
                op_exprs(&e.op, &mut note);
            }
        }
    }
    for g in &program.globals {
        for item in &g.init {
            if let crate::ir::InitValue::Expr(v) = &item.value {
                walk_expr(v, &mut note);
            }
        }
    }
    let main = graph.threads.first().map(|t| t.entry);
    candidates.retain(|(g, _)| !taken_globals.contains(g));
    // One pass over the program: per candidate, the edges writing it and the assignments
    // reading it, in program order (function, then edge).
    let is_candidate: FxHashSet<GlobalId> = candidates.iter().map(|c| c.0).collect();
    let mut uses: FxHashMap<GlobalId, CounterUses> = FxHashMap::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        for (i, e) in cfg.edges.iter().enumerate() {
            let id = EdgeId(i as u32);
            let mut written: smallvec::SmallVec<[GlobalId; 1]> = smallvec::SmallVec::new();
            let mut write = |host: &Host| {
                if let Host::Var(Var::Global(g)) = *host
                    && is_candidate.contains(&g)
                    && !written.contains(&g)
                {
                    written.push(g);
                }
            };
            match &e.op {
                Op::Assign { lhs, .. } => write(&lhs.host),
                Op::Call { dest: Some(d), .. } => write(&d.host),
                Op::Asm { outputs, .. } => outputs.iter().for_each(|o| write(&o.host)),
                _ => {}
            }
            for g in written {
                uses.entry(g).or_default().writes.push((func, id));
            }
            if let Op::Assign { rhs, .. } = &e.op {
                for g in globals_read(rhs) {
                    if is_candidate.contains(&g) {
                        uses.entry(g).or_default().reads.push((func, id));
                    }
                }
            }
        }
    }
    let mut taken_locals: FxHashMap<FuncId, FxHashSet<LocalId>> = FxHashMap::default();
    for (g, bits) in candidates {
        let mut facts = TicketFacts::default();
        let CounterUses { writes, reads } = uses.remove(&g).unwrap_or_default();
        for (func, id) in reads {
            let Some(cfg) = &program.function(func).body else {
                continue;
            };
            let taken = taken_locals.entry(func).or_insert_with(|| addr_taken(cfg));
            walk_segment(types, cfg, func, (g, bits), id, taken, &mut facts);
        }
        if facts.defs.is_empty() {
            continue;
        }
        // Every other write is an increment, or made by main before anything runs beside it.
        let all_increments = writes.iter().all(|w| {
            facts.increments.contains(w)
                || main.is_some_and(|m| w.0 == m && before_threads(program, roles, m, w.1, g))
        });
        if !all_increments {
            continue;
        }
        // One lock held at every increment and at every segment taking tickets.
        let mut points: FxHashMap<FuncId, Vec<EdgeId>> = FxHashMap::default();
        for (f, e) in facts.increments.iter().chain(facts.starts.iter()) {
            points.entry(*f).or_default().push(*e);
        }
        let mut common: Option<FxHashSet<LockId>> = None;
        for tc in &graph.contexts {
            for c in tc.ids() {
                let func = tc.ctx(c).func;
                let Some(edges) = points.get(&func) else {
                    continue;
                };
                let Some(cfg) = &program.function(func).body else {
                    continue;
                };
                for e in edges {
                    let src = cfg.edge(*e).src;
                    if !locksets.reachable(tc.thread, c, src) {
                        continue;
                    }
                    let held: FxHashSet<LockId> = locksets
                        .at(tc.thread, c, src)
                        .map(|l| {
                            l.must
                                .iter()
                                .filter(|h| h.mode == LockMode::Write && h.lock != LockId::UNKNOWN)
                                .map(|h| h.lock)
                                .collect()
                        })
                        .unwrap_or_default();
                    common = Some(match common {
                        None => held,
                        Some(c) => c.intersection(&held).copied().collect(),
                    });
                }
            }
        }
        if common.is_none_or(|c| c.is_empty()) {
            continue;
        }
        // Holders: locals every write of which takes a ticket.
        let mut by_local: FxHashMap<(FuncId, LocalId), (u8, Vec<EdgeId>)> = FxHashMap::default();
        for ((f, e), (l, conv)) in &facts.defs {
            let h = by_local.entry((*f, *l)).or_insert((0b11, Vec::new()));
            h.0 &= *conv;
            h.1.push(*e);
        }
        for ((f, l), (conv, mut defs)) in by_local {
            let fd = program.function(f);
            let Some(cfg) = &fd.body else { continue };
            if conv == 0 || fd.params.contains(&l) || addr_taken(cfg).contains(&l) {
                continue;
            }
            let all_tickets = local_writes(cfg)
                .get(&l)
                .is_some_and(|ws| ws.iter().all(|w| defs.contains(w)));
            if !all_tickets {
                continue;
            }
            defs.sort();
            out.insert(
                (f, l),
                TicketHolder {
                    counter: g,
                    bits,
                    conv,
                    defs,
                },
            );
        }
    }
    out
}

/// Whether statement `w` of `main` runs before any other thread exists and before `main`
/// reads counter `g`: no create, no call of code that may create threads and no other read of
/// `g` reaches it, and `main` is never called.
fn before_threads(program: &Program, roles: &Roles, main: FuncId, w: EdgeId, g: GlobalId) -> bool {
    let Some(cfg) = &program.function(main).body else {
        return false;
    };
    let called = program
        .functions
        .iter()
        .filter_map(|f| f.body.as_ref())
        .any(|c| {
            c.edges.iter().any(|e| {
                let mut found =
                    matches!(&e.op, Op::Call { callee: Callee::Direct(f), .. } if *f == main);
                op_exprs(&e.op, &mut |x| {
                    found |= matches!(x.kind, ExprKind::Func(f) if f == main)
                });
                found
            })
        });
    if called {
        return false;
    }
    let risky = |i: usize, e: &crate::ir::Edge| {
        let mut reads = false;
        op_exprs(
            &e.op,
            &mut |x| {
                reads |=
                    matches!(&x.kind, ExprKind::Load(lv) if lv.host == Host::Var(Var::Global(g)))
            },
        );
        (reads && i != w.0 as usize)
            || match &e.op {
                Op::Call { callee, .. } => match callee {
                    Callee::Indirect(_) => true,
                    Callee::Direct(f) => {
                        program.function(*f).body.is_some()
                            || matches!(
                                roles.get(*f),
                                None | Some(Role::ThreadCreate { .. }) | Some(Role::Once { .. })
                            )
                    }
                },
                _ => false,
            }
    };
    let target = cfg.edge(w).src;
    !cfg.edges
        .iter()
        .enumerate()
        .filter(|(i, e)| risky(*i, e))
        .any(|(_, e)| cfg.reaches(e.dst, target, &[]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn elem(domain: Domain, holder: Holder, origin: i64, lo: u64, hi: u64) -> SlotKey {
        SlotKey {
            domain,
            holder,
            span: Span::Element {
                origin: OriginKey::Offset(origin),
                stride: 8,
                lo,
                hi,
            },
        }
    }

    #[test]
    fn same_loop_same_geometry_is_disjoint() {
        let d = Domain::Loop(FuncId(0), EdgeId(3));
        let a = elem(d, Holder::Instance, 0, 0, 4);
        let b = elem(d, Holder::Creator, 0, 4, 8);
        assert!(disjoint(Some(&a), Some(&b)));
        assert!(disjoint(Some(&a), Some(&a)));
    }

    #[test]
    fn pointer_origins_match_only_the_same_local() {
        let d = Domain::Loop(FuncId(0), EdgeId(3));
        let at = |origin, holder| SlotKey {
            domain: d,
            holder,
            span: Span::Element {
                origin,
                stride: 8,
                lo: 0,
                hi: 4,
            },
        };
        let p = OriginKey::Pointer(LocalId(1), 0);
        assert!(disjoint(
            Some(&at(p, Holder::Instance)),
            Some(&at(p, Holder::Creator))
        ));
        for other in [
            OriginKey::Pointer(LocalId(2), 0),
            OriginKey::Pointer(LocalId(1), 8),
            OriginKey::Offset(0),
        ] {
            assert!(!disjoint(
                Some(&at(p, Holder::Instance)),
                Some(&at(other, Holder::Creator))
            ));
        }
    }

    #[test]
    fn other_origin_domain_or_creators_are_not() {
        let d = Domain::Loop(FuncId(0), EdgeId(3));
        let a = elem(d, Holder::Instance, 0, 0, 4);
        // Shifted by one element: slot v of one is slot v + 1 of the other.
        assert!(!disjoint(
            Some(&a),
            Some(&elem(d, Holder::Instance, 8, 0, 4))
        ));
        let other = Domain::Loop(FuncId(0), EdgeId(4));
        assert!(!disjoint(
            Some(&a),
            Some(&elem(other, Holder::Instance, 0, 0, 4))
        ));
        let c = elem(d, Holder::Creator, 0, 0, 4);
        assert!(!disjoint(Some(&c), Some(&c)));
        // Spilling over the element.
        assert!(!disjoint(
            Some(&a),
            Some(&elem(d, Holder::Instance, 0, 4, 12))
        ));
        assert!(!disjoint(Some(&a), None));
    }

    #[test]
    fn tickets_need_a_common_convention() {
        let t = |conv| SlotKey {
            domain: Domain::Ticket {
                counter: GlobalId(1),
                conv,
            },
            holder: Holder::Instance,
            span: Span::Object,
        };
        assert!(disjoint(Some(&t(1)), Some(&t(3))));
        assert!(!disjoint(Some(&t(1)), Some(&t(2))));
    }
}
