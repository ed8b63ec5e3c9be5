//! The syntactic backend (seed 001 §4, "Syntactic backend"): no abstract state; addresses are
//! read off the expressions, function pointers resolve to the functions stored where they are
//! read ([`super::funcptrs`]).
//!
//! An lvalue names a known object when its host is a variable or a dereference of an address
//! expression (`&x`, `&a[2] + 1`, a string, through casts); every other dereference goes to a
//! [`Target::Typed`] target, which race detection matches against every escaped object of a
//! compatible type. This keeps the backend conservative for race freedom.

use super::accesses::{self, Resolver};
use super::funcptrs::FuncPtrs;
use super::{
    Address, Backend, Base, ByteRange, FuncTargets, IntRange, MemAccess, PointsTo, Target,
    TypeClass,
};
use crate::context::{CallSite, Context, ThreadId};
use crate::ir::types::{ArrayLen, TypeKind, TypeTable};
use crate::ir::visit::{op_exprs, strip_casts, walk_expr};
use crate::ir::{BinOp, Expr, ExprKind, FuncId, Host, Lval, Program, Proj, TypeId, Var};
use crate::model::Roles;

/// The syntactic backend over one program.
pub struct Syntactic<'p> {
    program: &'p Program,
    roles: &'p Roles,
    /// Functions whose address is used as a value, sorted.
    address_taken: Vec<FuncId>,
    /// Where function pointers are stored.
    funcptrs: FuncPtrs,
}

impl<'p> Syntactic<'p> {
    /// Prepares the backend (collects the address-taken functions).
    pub fn new(program: &'p Program, roles: &'p Roles) -> Syntactic<'p> {
        let mut taken = Vec::new();
        let mut note = |e: &Expr| {
            if let ExprKind::Func(f) = e.kind {
                taken.push(f);
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
                if let crate::ir::InitValue::Expr(e) = &item.value {
                    walk_expr(e, &mut note);
                }
            }
        }
        taken.sort();
        taken.dedup();
        Syntactic {
            program,
            roles,
            funcptrs: FuncPtrs::new(program, roles, &taken),
            address_taken: taken,
        }
    }

    /// The functions a call through `e` in function `func` may reach (sorted; functions
    /// without a body included): those stored where `e` is read, and the escaped functions
    /// of a compatible type when the read may see a value [`FuncPtrs`] lost.
    pub fn pointer_targets(&self, func: FuncId, e: &Expr) -> Vec<FuncId> {
        let types = &self.program.types;
        let want = types.pointee(e.ty).unwrap_or(e.ty);
        self.funcptrs.targets(self.program, func, e, &|f| {
            signature_compatible(types, self.program.function(f).ty, want)
        })
    }

    /// The functions whose address the program takes.
    pub fn address_taken(&self) -> &[FuncId] {
        &self.address_taken
    }
}

/// The byte range of `proj` applied to an object of type `start` at offset `base_off`:
/// (range, exact). Non-constant indices cover the whole array; a bit-field covers its memory
/// location (the run of adjacent bit-fields, C11 §3.14).
pub fn projection_range(
    types: &TypeTable,
    start: TypeId,
    base_off: u64,
    proj: &[Proj],
    access_ty: TypeId,
) -> (ByteRange, bool) {
    let mut off = base_off;
    let mut ty = start;
    let mut exact = true;
    let mut bitfield_range = None;
    let mut cover: Option<ByteRange> = None;
    for (i, p) in proj.iter().enumerate() {
        match p {
            Proj::Field { comp, index } => {
                let info = types.comp(*comp);
                let Some(f) = info.fields.get(*index as usize) else {
                    return (ByteRange::ALL, false);
                };
                off = off.saturating_add(f.offset);
                ty = f.ty;
                if f.bit_field.is_some() && i + 1 == proj.len() {
                    bitfield_range = Some(bitfield_location(info, *index as usize, off - f.offset));
                }
            }
            Proj::Index(ix) => {
                let TypeKind::Array { elem, len } = types.kind(ty) else {
                    return (ByteRange::ALL, false);
                };
                let esize = types.size_of(*elem).unwrap_or(1);
                match ix.as_int() {
                    Some(k) if k >= 0 && exact => {
                        off = off.saturating_add((k as u64).saturating_mul(esize));
                    }
                    _ => {
                        // Unknown element: cover the whole array (outermost unknown index wins).
                        if exact {
                            let total = match len {
                                ArrayLen::Fixed(n) => esize.saturating_mul(*n),
                                _ => u64::MAX,
                            };
                            cover = Some(ByteRange {
                                lo: off,
                                hi: off.saturating_add(total),
                            });
                        }
                        exact = false;
                    }
                }
                ty = *elem;
            }
        }
    }
    if let Some(r) = cover {
        return (r, false);
    }
    if let Some(r) = bitfield_range {
        return (r, true);
    }
    let size = types.size_of(access_ty).unwrap_or(u64::MAX);
    (ByteRange::sized(off, size), exact)
}

/// Byte range of the memory location (C11 §3.14: the run of adjacent bit-fields) of bit-field
/// `index` of `info`, for the struct placed at byte `comp_off`.
pub fn bitfield_location(
    info: &crate::ir::types::CompInfo,
    index: usize,
    comp_off: u64,
) -> ByteRange {
    let is_bf = |i: usize| {
        info.fields
            .get(i)
            .and_then(|f| f.bit_field)
            .is_some_and(|b| b.width > 0)
    };
    let mut first = index;
    while first > 0 && is_bf(first - 1) {
        first -= 1;
    }
    let mut last = index;
    while is_bf(last + 1) {
        last += 1;
    }
    let lo = info.fields[first].offset;
    let hi = (first..=last)
        .map(|i| {
            let f = &info.fields[i];
            let b = f.bit_field.map_or(8, |b| b.bit_offset + b.width);
            f.offset + (b as u64).div_ceil(8)
        })
        .max()
        .unwrap_or(lo + 1);
    ByteRange {
        lo: comp_off + lo,
        hi: comp_off + hi,
    }
}

/// Where a pointer expression points, read off its syntax: base, byte offset, whether the
/// offset is exact.
fn resolve_pointer(
    program: &Program,
    thread: ThreadId,
    func: FuncId,
    p: &Expr,
) -> Option<(Base, u64, bool)> {
    let e = strip_casts(p);
    match &e.kind {
        ExprKind::AddrOf(lv) => {
            let (addr, _) = resolve_lval(program, thread, func, lv)?;
            Some((addr.base, addr.range.lo, addr.exact))
        }
        ExprKind::Str(s) => Some((Base::Str(*s), 0, true)),
        ExprKind::Binary(op @ (BinOp::PtrAdd | BinOp::PtrSub), q, i) => {
            let (base, off, exact) = resolve_pointer(program, thread, func, q)?;
            let esize = program
                .types
                .pointee(e.ty)
                .and_then(|t| program.types.size_of(t))
                .unwrap_or(1);
            match i.as_int() {
                Some(k) if exact => {
                    let delta = k.saturating_mul(esize as i128);
                    let delta = if *op == BinOp::PtrSub { -delta } else { delta };
                    let new = off as i128 + delta;
                    (new >= 0).then_some((base, new as u64, true))
                }
                _ => Some((base, off, false)),
            }
        }
        _ => None,
    }
}

/// The address an lvalue designates, when syntactically known, and its type class.
fn resolve_lval(
    program: &Program,
    thread: ThreadId,
    func: FuncId,
    lv: &Lval,
) -> Option<(Address, TypeClass)> {
    let types = &program.types;
    let (base, start_ty, off, exact) = match &lv.host {
        Host::Var(Var::Global(g)) => (Base::Global(*g), program.global(*g).ty, 0, true),
        Host::Var(Var::Local(l)) => {
            let f = program.function(func);
            let ty = f.locals.get(l.0 as usize)?.ty;
            (
                Base::Local {
                    thread,
                    func,
                    local: *l,
                },
                ty,
                0,
                true,
            )
        }
        Host::Deref(p) => {
            let (base, off, exact) = resolve_pointer(program, thread, func, p)?;
            let pointee = types.pointee(p.ty)?;
            (base, pointee, off, exact)
        }
    };
    let (range, proj_exact) = if exact {
        projection_range(types, start_ty, off, &lv.proj, lv.ty)
    } else {
        (
            ByteRange {
                lo: 0,
                hi: u64::MAX,
            },
            false,
        )
    };
    Some((
        Address {
            base,
            range,
            exact: exact && proj_exact,
        },
        TypeClass::of(types, lv.ty),
    ))
}

/// A resolver bound to one thread and function.
struct At<'p> {
    program: &'p Program,
    thread: ThreadId,
    func: FuncId,
}

impl<'p> Resolver<'p> for At<'p> {
    fn lval_targets(&self, lv: &'p Lval) -> Vec<Target> {
        match resolve_lval(self.program, self.thread, self.func, lv) {
            Some((addr, _)) => vec![Target::Addr(addr)],
            None => vec![Target::Typed(TypeClass::of(&self.program.types, lv.ty))],
        }
    }

    fn pointee_targets(&self, p: &'p Expr, size: Option<(u64, bool)>) -> Vec<Target> {
        match resolve_pointer(self.program, self.thread, self.func, p) {
            Some((base, off, exact)) => {
                let size = size.filter(|_| exact);
                vec![Target::Addr(match size {
                    Some((n, all)) => Address {
                        base,
                        range: ByteRange::sized(off, n),
                        exact: all,
                    },
                    None => Address {
                        base,
                        range: ByteRange {
                            lo: off,
                            hi: u64::MAX,
                        },
                        exact: false,
                    },
                })]
            }
            None => {
                let ty = self
                    .program
                    .types
                    .pointee(strip_casts(p).ty)
                    .unwrap_or(self.program.types.common.void);
                vec![Target::Typed(TypeClass::of(&self.program.types, ty))]
            }
        }
    }
}

/// Whether a function of type `a` may be called through a pointer of type `b` in a program
/// without undefined behaviour (C11 §6.3.2.3p8, §6.5.2.2p9): when both are prototyped, the same
/// number of parameters with parameter and return types of the same class (integers by size,
/// any pointer, floating by size, one struct type; signedness and pointee types aside, which
/// programs cast freely); either side unprototyped or variadic: any.
fn signature_compatible(types: &TypeTable, a: TypeId, b: TypeId) -> bool {
    match (types.func_sig(a), types.func_sig(b)) {
        (Some(x), Some(y)) => {
            if !x.prototyped || !y.prototyped || x.variadic || y.variadic {
                return true;
            }
            let class = |t: TypeId| match types.kind(t) {
                TypeKind::Void => None,
                TypeKind::Pointer(_) | TypeKind::Function(_) | TypeKind::Array { .. } => {
                    Some(TypeClass::Pointer(super::Pointee::Any))
                }
                _ => Some(TypeClass::of(types, t)),
            };
            x.params.len() == y.params.len()
                && class(x.ret) == class(y.ret)
                && x.params
                    .iter()
                    .zip(y.params.iter())
                    .all(|(p, q)| class(*p) == class(*q))
        }
        _ => true,
    }
}

impl<'p> Backend<'p> for Syntactic<'p> {
    type State = ();

    fn thread_independent(&self) -> bool {
        true
    }

    fn name(&self) -> &'static str {
        "syntactic"
    }

    fn analyse_thread(&mut self, _thread: ThreadId, _entry: FuncId, _site: Option<CallSite>) {}

    fn state(&self, _ctx: &Context) -> Self::State {}

    fn value(&self, _ctx: &Context, e: &Expr) -> IntRange {
        match e.as_int() {
            Some(v) => IntRange {
                lo: Some(v),
                hi: Some(v),
            },
            None => IntRange::TOP,
        }
    }

    fn value_ptr(&self, ctx: &Context, e: &Expr) -> PointsTo {
        match resolve_pointer(self.program, ctx.thread, ctx.fctx.func, e) {
            Some((base, off, exact)) => PointsTo::Known(vec![Address {
                base,
                range: ByteRange::sized(off, 1),
                exact,
            }]),
            None => PointsTo::Unknown,
        }
    }

    fn functions(&self, ctx: &Context, e: &Expr) -> FuncTargets {
        let inner = strip_casts(e);
        if let ExprKind::Func(f) = inner.kind {
            return FuncTargets {
                funcs: vec![f],
                exact: true,
            };
        }
        FuncTargets {
            funcs: self.pointer_targets(ctx.fctx.func, e),
            exact: false,
        }
    }

    fn callback_functions(&self, ctx: &Context, e: &Expr, deep: bool) -> FuncTargets {
        if !deep {
            return self.functions(ctx, e);
        }
        // The functions in the static initialiser of a global whose address is passed, the
        // functions stored in members of the pointee struct, and the escaped functions of the
        // type of a function-pointer member (an untyped pointee names none: its callbacks stay
        // unknown).
        let types = &self.program.types;
        let mut funcs: Vec<FuncId> = Vec::new();
        if let ExprKind::AddrOf(lv) = &strip_casts(e).kind
            && let Host::Var(Var::Global(g)) = lv.host
        {
            for item in &self.program.global(g).init {
                if let crate::ir::InitValue::Expr(v) = &item.value {
                    walk_expr(v, &mut |x| {
                        if let ExprKind::Func(f) = x.kind {
                            funcs.push(f);
                        }
                    });
                }
            }
        }
        let mut wanted: Vec<TypeId> = Vec::new();
        let mut stack: Vec<TypeId> = [e.ty, strip_casts(e).ty]
            .iter()
            .filter_map(|t| types.pointee(*t))
            .collect();
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some(t) = stack.pop() {
            if !seen.insert(t) {
                continue;
            }
            match types.kind(t) {
                TypeKind::Pointer(p) if matches!(types.kind(*p), TypeKind::Function(_)) => {
                    wanted.push(*p)
                }
                TypeKind::Array { elem, .. } => stack.push(*elem),
                TypeKind::Comp(c) => {
                    funcs.extend(self.funcptrs.member_targets(self.program, *c));
                    stack.extend(types.comp(*c).fields.iter().map(|f| f.ty))
                }
                _ => {}
            }
        }
        funcs.extend(self.funcptrs.escaped().iter().copied().filter(|f| {
            wanted
                .iter()
                .any(|w| signature_compatible(types, self.program.function(*f).ty, *w))
        }));
        funcs.retain(|f| self.program.function(*f).body.is_some());
        funcs.sort();
        funcs.dedup();
        FuncTargets {
            funcs,
            exact: false,
        }
    }

    fn accesses(&self, ctx: &Context) -> Vec<MemAccess<'p>> {
        let program = self.program;
        let Some(cfg) = &program.function(ctx.fctx.func).body else {
            return Vec::new();
        };
        let Some(edge) = cfg.edges.get(ctx.edge.0 as usize) else {
            return Vec::new();
        };
        let at = At {
            program,
            thread: ctx.thread,
            func: ctx.fctx.func,
        };
        accesses::statement_accesses(program, self.roles, &edge.op, &at)
    }
}
