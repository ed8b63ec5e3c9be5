//! The value analysis of calls to specified library functions ([`crate::model::library`]):
//! what they write into the objects their arguments point to, what pointers they store and
//! return, and the new objects they create.
//!
//! A library function writes data, not pointers, except the pointers its specification names
//! (`stores`, `returns`) and pointers to the objects it was given: a written object gets, field
//! by field of its type, unknown integers in scalar fields and, in pointer fields, pointers into
//! any object the call's pointer arguments point to (`getpwnam_r` points the fields of its
//! `struct passwd` into the caller's buffer). A new object (`returns = "fresh"`) is one abstract
//! object per call site, like `malloc`'s, whose pointer fields point into itself (the nodes of
//! `getaddrinfo`'s list). Assumption: a library never stores into program memory a pointer to
//! an object of its own that the program then accesses, other than those fresh objects.

use super::interp::Interp;
use super::memory::{Obj, State, Val, top};
use crate::backend::Base;
use crate::dataflow::At;
use crate::ir::types::TypeKind;
use crate::ir::visit::strip_casts;
use crate::ir::{Expr, FuncId, TypeId};
use crate::model::library::{Bytes, Pointer};
use racedar_domains::{Interval, Ptr};

/// Scalar leaves a typed fill writes at most (a larger type is filled as a whole).
const MAX_LEAVES: usize = 32;

/// Elements of an array expanded leaf by leaf at most.
const MAX_ELEMS: u64 = 8;

/// The scalar leaves of a type laid out from `off`: (offset, size, is a pointer). `false`
/// when there are too many, or some part has no layout.
fn leaves(
    types: &crate::ir::TypeTable,
    ty: TypeId,
    off: u64,
    out: &mut Vec<(u64, u64, bool)>,
) -> bool {
    if out.len() > MAX_LEAVES {
        return false;
    }
    match types.kind(ty) {
        TypeKind::Int(_) | TypeKind::Float(_) | TypeKind::Complex(_) | TypeKind::Pointer(_) => {
            let Some(size) = types.size_of(ty) else {
                return false;
            };
            out.push((off, size, types.is_pointer(ty)));
            true
        }
        TypeKind::Array { elem, .. } => {
            let (Some(total), Some(esize)) = (types.size_of(ty), types.size_of(*elem)) else {
                return false;
            };
            if esize == 0 {
                return true;
            }
            let n = total / esize;
            if n > MAX_ELEMS {
                return false;
            }
            (0..n).all(|k| leaves(types, *elem, off + k * esize, out))
        }
        TypeKind::Comp(c) => {
            let info = types.comp(*c);
            if info.layout.is_none() {
                return false;
            }
            for f in &info.fields {
                if f.bit_field.is_some() {
                    continue; // an integer inside an integer cell: the rest covers it
                }
                if !leaves(types, f.ty, off + f.offset, out) {
                    return false;
                }
            }
            true
        }
        TypeKind::Void | TypeKind::Function(_) => false,
    }
}

/// Whether an object of type `ty` may hold a pointer (unknown layouts may).
fn may_hold_pointer(types: &crate::ir::TypeTable, ty: TypeId) -> bool {
    let mut l = Vec::new();
    if leaves(types, ty, 0, &mut l) {
        return l.iter().any(|x| x.2);
    }
    !matches!(
        types.kind(ty),
        TypeKind::Int(_) | TypeKind::Float(_) | TypeKind::Complex(_)
    ) && !matches!(types.kind(ty), TypeKind::Array { elem, .. }
        if matches!(types.kind(*elem), TypeKind::Int(_) | TypeKind::Float(_)))
}

impl<'p> Interp<'_, 'p> {
    /// The pointer arguments' objects, at any offset (or null): what a library may store in
    /// pointer fields it writes.
    pub(super) fn carried(&self, s: &State, func: FuncId, args: &[Expr]) -> Val {
        let mut p: Ptr<Base> = Ptr::null();
        for a in args {
            if !self.program.types.is_pointer(strip_casts(a).ty) {
                continue;
            }
            let v = self.eval(s, func, a).as_ptr();
            if v.unknown {
                p.unknown = true;
            }
            for (b, _) in v.targets() {
                if !matches!(b, Base::Func(_) | Base::Str(_)) {
                    p.add(*b, Interval::TOP);
                }
            }
        }
        if p.unknown {
            return top();
        }
        Val {
            int: Interval::BOTTOM,
            ptr: p,
        }
    }

    /// An object of type `ty` as a library fills it: unknown integers, pointer fields holding
    /// `ptr`.
    fn filled_as(&self, ty: Option<TypeId>, ptr: &Val) -> Obj {
        let types = &self.program.types;
        let int = Val::int(Interval::TOP);
        let Some(ty) = ty else {
            return Obj::filled(top());
        };
        let mut l = Vec::new();
        if leaves(types, ty, 0, &mut l) {
            let mut o = Obj::filled(int.clone());
            for (off, size, is_ptr) in l {
                let v = if is_ptr { ptr } else { &int };
                o.write(Interval::constant(off as i128), size, v, true);
            }
            o
        } else if may_hold_pointer(types, ty) {
            Obj::filled(top())
        } else {
            Obj::filled(int)
        }
    }

    /// An object of type `ty` whose every scalar holds `v` (a `fill`: integers and pointers
    /// alike).
    fn filled_with(&self, ty: Option<TypeId>, v: &Val) -> Obj {
        let types = &self.program.types;
        let mut o = Obj::filled(v.clone());
        let mut l = Vec::new();
        if let Some(ty) = ty
            && leaves(types, ty, 0, &mut l)
        {
            for (off, size, _) in l {
                o.write(Interval::constant(off as i128), size, v, true);
            }
        }
        o
    }

    /// The byte count `b` denotes at a call, as an upper bound (`None`: to the end).
    pub(super) fn byte_count(
        &self,
        s: &State,
        func: FuncId,
        args: &[Expr],
        b: Bytes,
    ) -> Option<u64> {
        let arg = |i: usize| -> Option<u64> {
            let v = self.eval(s, func, args.get(i)?).as_int();
            let hi = v.hi();
            (hi != racedar_domains::interval::POS_INF && hi >= 0).then_some(hi as u64)
        };
        match b {
            Bytes::Rest | Bytes::Pointee => None,
            Bytes::Arg(i) => arg(i),
            Bytes::Product(i, j) => arg(i)?.checked_mul(arg(j)?),
        }
    }

    /// What a library call writes into the object argument `p` points to: type by type for
    /// one object of the pointee type (`bytes = "pointee"`), else unknown data over the
    /// accessed bytes (pointers too when the type may hold one).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lib_write(
        &mut self,
        s: &mut State,
        func: FuncId,
        p: &Expr,
        bytes: Bytes,
        args: &[Expr],
        carried: &Val,
    ) {
        let types = &self.program.types;
        let pointee = types
            .pointee(strip_casts(p).ty)
            .or_else(|| types.pointee(p.ty))
            .unwrap_or(types.common.void);
        let count = self.byte_count(s, func, args, bytes);
        let v = self.eval(s, func, p).as_ptr();
        let via = self.fresh_site(s, func, p);
        let single = bytes == Bytes::Pointee || count == types.size_of(pointee);
        let exact = v.targets().len() == 1 && !v.unknown;
        if v.unknown {
            // Other threads may read what it writes from any object of the pointee type.
            let size = types.size_of(pointee).unwrap_or(1);
            self.record_wild(pointee, size, &self.top_of(pointee));
        }
        // A value without pointers (a `fill`) holds for integers and pointers alike.
        let obj = single.then(|| {
            if carried.ptr.targets().is_empty() && !carried.ptr.unknown && !carried.int.is_bottom()
            {
                self.filled_with(Some(pointee), carried)
            } else {
                self.filled_as(Some(pointee), carried)
            }
        });
        for (b, off) in v.targets().to_vec() {
            if matches!(b, Base::Func(_) | Base::Str(_)) {
                continue;
            }
            match (&obj, off.as_constant()) {
                (Some(o), Some(c)) if c >= 0 => {
                    let strong = exact;
                    let mut cells: Vec<(u64, u64, Val)> = o
                        .cells()
                        .iter()
                        .map(|x| (x.off, x.size, x.v.clone()))
                        .collect();
                    if cells.is_empty() {
                        let size = types.size_of(pointee).unwrap_or(1);
                        cells.push((0, size, o.rest.clone()));
                    }
                    for (coff, csize, cv) in cells {
                        self.store(
                            s,
                            b,
                            Interval::constant(c + coff as i128),
                            csize,
                            &cv,
                            strong,
                            via,
                        );
                    }
                }
                _ if carried.ptr.targets().is_empty()
                    && !carried.ptr.unknown
                    && !carried.int.is_bottom() =>
                {
                    let hi = match count {
                        Some(n) if n > 0 => off.hi().saturating_add(n as i128 - 1),
                        _ => racedar_domains::interval::POS_INF,
                    };
                    let range = Interval::new(off.lo().max(0), hi);
                    self.store(s, b, range, 1, carried, false, via);
                }
                _ => {
                    let val = if may_hold_pointer(types, pointee) {
                        top()
                    } else {
                        Val::int(Interval::TOP)
                    };
                    let hi = match count {
                        Some(n) if n > 0 => off.hi().saturating_add(n as i128 - 1),
                        _ => racedar_domains::interval::POS_INF,
                    };
                    let range = Interval::new(off.lo().max(0), hi);
                    self.store(s, b, range, 1, &val, false, via);
                }
            }
        }
    }

    /// `*dst = *src` for `count` bytes (`memcpy`): cell by cell when both are one object at
    /// an exact offset, else the joined contents of the source over the destination.
    pub(super) fn lib_copy(
        &mut self,
        s: &mut State,
        func: FuncId,
        dst: &Expr,
        src: &Expr,
        count: Option<u64>,
    ) {
        let d = self.eval(s, func, dst).as_ptr();
        let sv = self.eval(s, func, src).as_ptr();
        let (dvia, svia) = (self.fresh_site(s, func, dst), self.fresh_site(s, func, src));
        let exact = |p: &Ptr<Base>| {
            p.targets().len() == 1 && !p.unknown && p.targets()[0].1.as_constant().is_some()
        };
        if let (true, true, Some(n)) = (exact(&d), exact(&sv), count) {
            let (db, doff) = d.targets()[0];
            let (sb, soff) = sv.targets()[0];
            let (doff, soff) = (
                doff.as_constant().unwrap_or(0),
                soff.as_constant().unwrap_or(0),
            );
            if !matches!(db, Base::Func(_) | Base::Str(_)) && doff >= 0 && soff >= 0 {
                let whole = self.read_via(s, &sb, Interval::new(soff, soff + n as i128), 1, svia);
                // Bytes first (as one weak store), then the source's cells at their offsets.
                self.store(
                    s,
                    db,
                    Interval::new(doff, doff + n as i128 - 1),
                    1,
                    &whole,
                    false,
                    dvia,
                );
                let src_obj = s.view(&sb);
                for c in src_obj.cells() {
                    let (co, cs) = (c.off as i128, c.size as i128);
                    if co >= soff && co + cs <= soff + n as i128 {
                        let v = self.read_via(s, &sb, Interval::constant(co), c.size, svia);
                        self.store(
                            s,
                            db,
                            Interval::constant(doff + co - soff),
                            c.size,
                            &v,
                            true,
                            dvia,
                        );
                    }
                }
                return;
            }
        }
        let mut v = Val::bottom();
        for (b, off) in sv.targets() {
            if matches!(b, Base::Func(_)) {
                continue;
            }
            v = v.join(&self.read_via(
                s,
                b,
                Interval::new(off.lo().max(0), racedar_domains::interval::POS_INF),
                1,
                svia,
            ));
        }
        if sv.unknown || v.is_bottom() {
            v = top();
        }
        for (b, off) in d.targets().to_vec() {
            if matches!(b, Base::Func(_) | Base::Str(_)) {
                continue;
            }
            let hi = match count {
                Some(n) if n > 0 => off.hi().saturating_add(n as i128 - 1),
                _ => racedar_domains::interval::POS_INF,
            };
            self.store(s, b, Interval::new(off.lo().max(0), hi), 1, &v, false, dvia);
        }
    }

    /// The value of a pointer of kind `k` a library call at `at` to `callee` returns or stores
    /// (`pointee`: the type it points to): a fresh object is created here.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn lib_pointer(
        &mut self,
        s: &mut State,
        at: At<'_>,
        callee: FuncId,
        args: &[Expr],
        k: Pointer,
        pointee: Option<TypeId>,
    ) -> Val {
        let func = at.fctx.func;
        match k {
            Pointer::Unknown => top(),
            Pointer::Static => {
                let mut v = Val::address(Base::Hidden(callee), Interval::constant(0));
                v.ptr.null = true;
                v
            }
            Pointer::Arg(i) => {
                let Some(a) = args.get(i) else {
                    return top();
                };
                let p = self.eval(s, func, a).as_ptr();
                if p.unknown {
                    return top();
                }
                let mut out: Ptr<Base> = Ptr::null();
                for (b, _) in p.targets() {
                    out.add(*b, Interval::TOP);
                }
                Val {
                    int: Interval::BOTTOM,
                    ptr: out,
                }
            }
            Pointer::Fresh | Pointer::ThreadStatic => {
                let base = Base::Heap {
                    thread: self.thread,
                    func,
                    edge: at.edge,
                    caller: at.fctx.calls.last().copied(),
                };
                let site = (func, at.edge, at.fctx.calls.last().copied());
                let again = s.stored(&base).is_some() || s.publ.fresh(site).is_some();
                s.allocate(site, None, Obj::empty(), s.multi);
                if again {
                    self.effects.summaries.insert(base);
                }
                let mut self_ptr = Val::address(base, Interval::TOP);
                self_ptr.ptr.null = true;
                let contents = self.filled_as(pointee, &self_ptr);
                let mut obj = match s.stored(&base) {
                    Some(old) => old.clone(),
                    None => Obj::empty(),
                };
                obj.join_with(&contents, false);
                obj.summary |= again;
                s.set(base, obj);
                let mut v = Val::address(base, Interval::constant(0));
                v.ptr.null = true;
                v
            }
        }
    }
}
