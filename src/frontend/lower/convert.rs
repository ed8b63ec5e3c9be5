//! C's implicit conversions and constant folding (C11 §6.3, §6.6).
//!
//! Integer constants are kept *wrapped* to their type: values of unsigned types are in
//! `0..2^bits`, values of signed types are sign-extended. With that invariant, `i128` arithmetic
//! followed by [`wrap`] folds every C integer operation exactly.

use crate::ir::TypeId;
use crate::ir::expr::{BinOp, Expr, ExprKind, Host, Lval, Proj, UnOp};
use crate::ir::types::{DataModel, FloatKind, IntKind, TypeKind, TypeTable};

/// Wraps `v` to the range of integer kind `kind` (two's complement; `_Bool` becomes 0 or 1).
pub fn wrap(v: i128, kind: IntKind, dm: DataModel) -> i128 {
    if kind == IntKind::Bool {
        return (v != 0) as i128;
    }
    let bits = dm.int_size(kind) * 8;
    if bits >= 128 {
        return v;
    }
    let mask = (1i128 << bits) - 1;
    let u = v & mask;
    if kind.is_signed() && u >> (bits - 1) & 1 == 1 {
        u - (1i128 << bits)
    } else {
        u
    }
}

/// Integer promotion (C11 §6.3.1.1p2): types of rank below `int` become `int`.
pub fn promote(t: &mut TypeTable, ty: TypeId) -> TypeId {
    match t.kind(ty) {
        TypeKind::Int(k) if k.rank() < IntKind::Int.rank() => t.common.int,
        _ => t.unqualified(ty),
    }
}

/// The common type of the usual arithmetic conversions (C11 §6.3.1.8).
pub fn usual_arith(t: &mut TypeTable, a: TypeId, b: TypeId) -> TypeId {
    let (ka, kb) = (t.kind(a).clone(), t.kind(b).clone());
    let float_of = |k: &TypeKind| match k {
        TypeKind::Float(f) | TypeKind::Complex(f) => Some(*f),
        _ => None,
    };
    let complex = matches!(ka, TypeKind::Complex(_)) || matches!(kb, TypeKind::Complex(_));
    match (float_of(&ka), float_of(&kb)) {
        (Some(x), Some(y)) => {
            let f = x.max(y);
            return t.plain(if complex {
                TypeKind::Complex(f)
            } else {
                TypeKind::Float(f)
            });
        }
        (Some(f), None) | (None, Some(f)) => {
            return t.plain(if complex {
                TypeKind::Complex(f)
            } else {
                TypeKind::Float(f)
            });
        }
        (None, None) => {}
    }
    let pa = promote(t, a);
    let pb = promote(t, b);
    let (Some(x), Some(y)) = (t.int_kind(pa), t.int_kind(pb)) else {
        return pa;
    };
    if x == y {
        return pa;
    }
    let dm = t.data_model;
    let k = if x.is_signed() == y.is_signed() {
        if x.rank() >= y.rank() { x } else { y }
    } else {
        let (s, u) = if x.is_signed() { (x, y) } else { (y, x) };
        if u.rank() >= s.rank() {
            u
        } else if dm.int_size(s) > dm.int_size(u) {
            s
        } else {
            s.to_unsigned()
        }
    };
    t.int(k)
}

/// Whether `e` is a null pointer constant (an integer constant 0, possibly cast to `void *`).
pub fn is_null_constant(t: &TypeTable, e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Int(0) => true,
        ExprKind::Cast(inner) => {
            t.pointee(e.ty)
                .is_some_and(|p| matches!(t.kind(p), TypeKind::Void))
                && is_null_constant(t, inner)
        }
        _ => false,
    }
}

/// Converts `e` to type `to` (unqualified), folding conversions of constants and leaving out
/// conversions between identical types.
pub fn convert(t: &mut TypeTable, e: Expr, to: TypeId) -> Expr {
    let to = t.unqualified(to);
    let from = t.unqualified(e.ty);
    if from == to {
        return Expr { ty: to, ..e };
    }
    if matches!(t.kind(to), TypeKind::Void) {
        return Expr { ty: to, ..e };
    }
    let dm = t.data_model;
    if t.is_pointer(to) && is_null_constant(t, &e) {
        // `(T *)(void *)0` is `(T *)0`.
        let int = t.common.int;
        return Expr {
            kind: ExprKind::Cast(Box::new(Expr::int(0, int))),
            ty: to,
        };
    }
    match (&e.kind, t.kind(to).clone()) {
        (ExprKind::Int(v), TypeKind::Int(k)) => return Expr::int(wrap(*v, k, dm), to),
        (ExprKind::Int(v), TypeKind::Float(_)) => {
            return Expr {
                kind: ExprKind::Float(*v as f64),
                ty: to,
            };
        }
        (ExprKind::Float(f), TypeKind::Float(k)) => {
            let v = if k == FloatKind::Float {
                *f as f32 as f64
            } else {
                *f
            };
            return Expr {
                kind: ExprKind::Float(v),
                ty: to,
            };
        }
        (ExprKind::Float(f), TypeKind::Int(k)) if f.is_finite() => {
            return Expr::int(wrap(f.trunc() as i128, k, dm), to);
        }
        _ => {}
    }
    Expr {
        kind: ExprKind::Cast(Box::new(e)),
        ty: to,
    }
}

/// Type of the value an lvalue or expression of type `ty` yields when used as an rvalue: arrays
/// decay to pointers to their first element, functions to function pointers, qualifiers drop.
pub fn rvalue_type(t: &mut TypeTable, ty: TypeId) -> TypeId {
    match t.kind(ty).clone() {
        TypeKind::Array { elem, .. } => t.pointer(elem),
        TypeKind::Function(_) => {
            let u = t.unqualified(ty);
            t.pointer(u)
        }
        _ => t.unqualified(ty),
    }
}

/// The address of the object designated by `lv` when its host is a constant pointer
/// (`*(T *)N`) and every index is constant: `N` plus the byte offset of the projections.
pub fn const_lval_address(t: &TypeTable, lv: &Lval) -> Option<i128> {
    let Host::Deref(p) = &lv.host else {
        return None;
    };
    let base = const_int(t, p)?;
    let mut ty = t.pointee(p.ty)?;
    let mut off = base;
    for pr in &lv.proj {
        match pr {
            Proj::Field { comp, index } => {
                let f = t.comp(*comp).fields.get(*index as usize)?;
                off += f.offset as i128;
                ty = f.ty;
            }
            Proj::Index(ix) => {
                let TypeKind::Array { elem, .. } = t.kind(ty) else {
                    return None;
                };
                let k = const_int(t, ix)?;
                off += k * t.size_of(*elem)? as i128;
                ty = *elem;
            }
        }
    }
    Some(off)
}

/// Folds an integer constant expression (C11 §6.6): `None` when `e` is not one (it reads memory,
/// divides by zero, shifts out of range, ...). Address constants of the form `&((T *)N)->f`
/// (the classic `offsetof` macro) fold to `N + offset`.
pub fn const_int(t: &TypeTable, e: &Expr) -> Option<i128> {
    let dm = t.data_model;
    let kind_of = |ty: TypeId| t.int_kind(ty);
    match &e.kind {
        ExprKind::Int(v) => Some(*v),
        ExprKind::Cast(inner) => match t.kind(e.ty) {
            TypeKind::Int(k) => match &inner.kind {
                ExprKind::Float(f) if f.is_finite() => Some(wrap(f.trunc() as i128, *k, dm)),
                _ => Some(wrap(const_int(t, inner)?, *k, dm)),
            },
            TypeKind::Pointer(_) => const_int(t, inner),
            _ => None,
        },
        ExprKind::AddrOf(lv) => const_lval_address(t, lv),
        ExprKind::Unary(op, a) => {
            let v = const_int(t, a)?;
            let k = kind_of(e.ty)?;
            Some(match op {
                UnOp::Neg => wrap(v.wrapping_neg(), k, dm),
                UnOp::BitNot => wrap(!v, k, dm),
                UnOp::LogNot => (v == 0) as i128,
            })
        }
        ExprKind::Binary(op, a, b) => {
            let x = const_int(t, a)?;
            let y = const_int(t, b)?;
            if op.is_comparison() {
                return Some(match op {
                    BinOp::Lt => x < y,
                    BinOp::Gt => x > y,
                    BinOp::Le => x <= y,
                    BinOp::Ge => x >= y,
                    BinOp::Eq => x == y,
                    _ => x != y,
                } as i128);
            }
            let k = kind_of(e.ty)?;
            let bits = dm.int_size(k) as i128 * 8;
            let r = match op {
                BinOp::Add => x.checked_add(y)?,
                BinOp::Sub => x.checked_sub(y)?,
                BinOp::Mul => x.checked_mul(y)?,
                BinOp::Div => x.checked_div(y)?,
                BinOp::Rem => x.checked_rem(y)?,
                BinOp::Shl if (0..bits).contains(&y) => x.checked_shl(y as u32)?,
                BinOp::Shr if (0..bits).contains(&y) => x >> y,
                BinOp::BitAnd => x & y,
                BinOp::BitOr => x | y,
                BinOp::BitXor => x ^ y,
                _ => return None,
            };
            Some(wrap(r, k, dm))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_matches_c() {
        let dm = DataModel::Lp64;
        assert_eq!(wrap(255, IntKind::Char, dm), -1);
        assert_eq!(wrap(-1, IntKind::UInt, dm), 0xffff_ffff);
        assert_eq!(wrap(256, IntKind::UChar, dm), 0);
        assert_eq!(wrap(2, IntKind::Bool, dm), 1);
    }

    #[test]
    fn usual_arithmetic_conversions() {
        let mut t = TypeTable::new(DataModel::Lp64);
        let (int, uint, long) = (t.common.int, t.common.uint, t.common.long);
        let uchar = t.common.uchar;
        assert_eq!(usual_arith(&mut t, uchar, uchar), int);
        assert_eq!(usual_arith(&mut t, int, uint), uint);
        assert_eq!(usual_arith(&mut t, uint, long), long);
        let mut t = TypeTable::new(DataModel::Ilp32);
        let (uint, long, ulong) = (t.common.uint, t.common.long, t.common.ulong);
        assert_eq!(usual_arith(&mut t, uint, long), ulong);
    }

    #[test]
    fn folding_respects_unsigned_wrap() {
        let mut t = TypeTable::new(DataModel::Lp64);
        let uint = t.common.uint;
        let e = Expr {
            kind: ExprKind::Binary(
                BinOp::Sub,
                Box::new(Expr::int(0, uint)),
                Box::new(Expr::int(1, uint)),
            ),
            ty: uint,
        };
        assert_eq!(const_int(&t, &e), Some(0xffff_ffff));
        let int = t.common.int;
        let c = convert(&mut t, Expr::int(-1, int), uint);
        assert_eq!(c.as_int(), Some(0xffff_ffff));
    }
}
