//! Concrete values and C arithmetic on them: integers wrap to the width of their type
//! (C11 §6.3.1.3, §6.2.5p9), signed overflow, division by zero and oversized shifts are
//! undefined behaviour (§6.5p5, §6.5.5, §6.5.7) and stop the execution.
//!
//! Integers and pointers are both [`Val::Int`]: the bits of the value, zero-extended from the
//! width of its type (a pointer is an address, see [`super::memory`]).

use super::Stop;
use crate::ir::types::{FloatKind, IntKind, TypeKind, TypeTable};
use crate::ir::{BinOp, TypeId, UnOp};

/// A concrete value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// An integer or pointer: its bits, zero-extended from its type's width.
    Int(u128),
    /// A `float` or `double` (a `float` is kept rounded to single precision).
    Float(f64),
    /// A struct, union or array value: its bytes.
    Bytes(Vec<u8>),
}

/// How values of a type are represented.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Repr {
    /// An integer of `bits` bits (`_Bool` has 8 bits of storage and values 0 and 1).
    Int {
        /// Width in bits.
        bits: u32,
        /// Signedness.
        signed: bool,
        /// `_Bool`: conversions yield 0 or 1.
        boolean: bool,
    },
    /// A pointer (unsigned, the data model's width).
    Ptr {
        /// Width in bits.
        bits: u32,
    },
    /// `float` (4 bytes) or `double` (8 bytes).
    Float {
        /// Size in bytes.
        bytes: u32,
    },
    /// A struct, union or array of `size` bytes.
    Aggregate {
        /// Size in bytes.
        size: u64,
    },
    /// `void`.
    Void,
}

/// The representation of a type, if the model supports it (not `long double`, complex types,
/// incomplete or variable-length types).
pub fn repr(types: &TypeTable, ty: TypeId) -> Option<Repr> {
    Some(match types.kind(ty) {
        TypeKind::Void => Repr::Void,
        TypeKind::Int(k) => Repr::Int {
            bits: (types.data_model.int_size(*k) * 8) as u32,
            signed: k.is_signed(),
            boolean: *k == IntKind::Bool,
        },
        TypeKind::Pointer(_) => Repr::Ptr {
            bits: (types.data_model.pointer_size() * 8) as u32,
        },
        TypeKind::Float(FloatKind::Float) => Repr::Float { bytes: 4 },
        TypeKind::Float(FloatKind::Double) => Repr::Float { bytes: 8 },
        TypeKind::Float(_) | TypeKind::Complex(_) | TypeKind::Function(_) => return None,
        TypeKind::Array { .. } | TypeKind::Comp(_) => Repr::Aggregate {
            size: types.size_of(ty)?,
        },
    })
}

/// `v` truncated to `bits` bits.
pub fn trunc(v: u128, bits: u32) -> u128 {
    if bits >= 128 {
        v
    } else {
        v & ((1u128 << bits) - 1)
    }
}

/// `v` (of `bits` bits) sign-extended.
pub fn sext(v: u128, bits: u32) -> i128 {
    if bits >= 128 {
        v as i128
    } else {
        let shift = 128 - bits;
        ((v << shift) as i128) >> shift
    }
}

/// The integer value of bits `v` of representation `r` (sign-extended when signed).
pub fn int_value(v: u128, r: Repr) -> i128 {
    match r {
        Repr::Int {
            bits, signed: true, ..
        } => sext(v, bits),
        _ => v as i128,
    }
}

fn fits(v: i128, bits: u32, signed: bool) -> bool {
    if bits >= 128 {
        return true;
    }
    if signed {
        let lo = -(1i128 << (bits - 1));
        let hi = (1i128 << (bits - 1)) - 1;
        (lo..=hi).contains(&v)
    } else {
        v >= 0 && (v as u128) < (1u128 << bits)
    }
}

/// Decodes little-endian bytes as a value of representation `r`.
pub fn decode(bytes: &[u8], r: Repr) -> Val {
    match r {
        Repr::Float { bytes: 4 } => {
            let mut b = [0u8; 4];
            b.copy_from_slice(&bytes[..4]);
            Val::Float(f32::from_le_bytes(b) as f64)
        }
        Repr::Float { .. } => {
            let mut b = [0u8; 8];
            b.copy_from_slice(&bytes[..8]);
            Val::Float(f64::from_le_bytes(b))
        }
        Repr::Aggregate { .. } | Repr::Void => Val::Bytes(bytes.to_vec()),
        Repr::Int { .. } | Repr::Ptr { .. } => {
            let mut v = 0u128;
            for (i, b) in bytes.iter().take(16).enumerate() {
                v |= (*b as u128) << (8 * i);
            }
            Val::Int(v)
        }
    }
}

/// Encodes a value of representation `r` as `size` little-endian bytes.
///
/// Errors: the value does not have the shape of the representation.
pub fn encode(v: &Val, r: Repr, size: u64) -> Result<Vec<u8>, Stop> {
    let size = size as usize;
    Ok(match (v, r) {
        (Val::Int(x), Repr::Int { .. } | Repr::Ptr { .. }) => {
            (0..size).map(|i| (x >> (8 * i.min(15))) as u8).collect()
        }
        (Val::Float(f), Repr::Float { bytes: 4 }) => (*f as f32).to_le_bytes().to_vec(),
        (Val::Float(f), Repr::Float { .. }) => f.to_le_bytes().to_vec(),
        (Val::Bytes(b), Repr::Aggregate { .. }) if b.len() == size => b.clone(),
        _ => return Err(Stop::new("value of an unexpected shape")),
    })
}

/// Converts `v` from representation `from` to `to` (C11 §6.3.1).
///
/// Errors: floating values out of range of the integer type, unsupported conversions.
pub fn convert(v: &Val, from: Repr, to: Repr) -> Result<Val, Stop> {
    Ok(match (v, to) {
        (_, Repr::Void) => Val::Int(0),
        (Val::Int(x), Repr::Int { boolean: true, .. }) => Val::Int(u128::from(*x != 0)),
        (Val::Float(f), Repr::Int { boolean: true, .. }) => Val::Int(u128::from(*f != 0.0)),
        (Val::Int(x), Repr::Int { bits, .. } | Repr::Ptr { bits }) => {
            Val::Int(trunc(int_value(*x, from) as u128, bits))
        }
        (Val::Int(x), Repr::Float { bytes }) => {
            let f = int_value(*x, from) as f64;
            Val::Float(if bytes == 4 { f as f32 as f64 } else { f })
        }
        (Val::Float(f), Repr::Float { bytes }) => {
            Val::Float(if bytes == 4 { *f as f32 as f64 } else { *f })
        }
        (Val::Float(f), Repr::Int { bits, signed, .. }) => {
            let t = f.trunc();
            if !t.is_finite() || t.abs() > 1e38 || !fits(t as i128, bits, signed) {
                return Err(Stop::new("floating value out of range of an integer type"));
            }
            Val::Int(trunc(t as i128 as u128, bits))
        }
        (Val::Bytes(b), Repr::Aggregate { size }) if b.len() as u64 == size => v.clone(),
        _ => return Err(Stop::new("unsupported conversion")),
    })
}

/// Whether a scalar value is non-zero (a condition holds).
pub fn truth(v: &Val) -> Result<bool, Stop> {
    match v {
        Val::Int(x) => Ok(*x != 0),
        Val::Float(f) => Ok(*f != 0.0),
        Val::Bytes(_) => Err(Stop::new("aggregate used as a condition")),
    }
}

/// `op a` for an operand and result of representation `r`.
///
/// Errors: signed overflow, unsupported operands.
pub fn unary(op: UnOp, a: &Val, r: Repr, result: Repr) -> Result<Val, Stop> {
    match (op, a) {
        (UnOp::LogNot, _) => Ok(Val::Int(u128::from(!truth(a)?))),
        (UnOp::Neg, Val::Float(f)) => Ok(Val::Float(-f)),
        (UnOp::Neg, Val::Int(x)) => {
            let Repr::Int { bits, signed, .. } = r else {
                return Err(Stop::new("negation of a non-integer"));
            };
            if signed {
                let v = sext(*x, bits);
                match v.checked_neg().filter(|n| fits(*n, bits, true)) {
                    Some(n) => Ok(Val::Int(trunc(n as u128, bits))),
                    None => Err(Stop::new("signed overflow")),
                }
            } else {
                Ok(Val::Int(trunc(x.wrapping_neg(), bits)))
            }
        }
        (UnOp::BitNot, Val::Int(x)) => match result {
            Repr::Int { bits, .. } => Ok(Val::Int(trunc(!x, bits))),
            _ => Err(Stop::new("complement of a non-integer")),
        },
        _ => Err(Stop::new("unsupported unary operation")),
    }
}

/// `a op b` on integers of representation `r` (the operands' common type; for shifts, `rb` is
/// the right operand's). Comparisons yield 0 or 1.
///
/// Errors: undefined behaviour (signed overflow, division by zero, bad shift counts).
pub fn int_binary(op: BinOp, a: u128, b: u128, r: Repr, rb: Repr) -> Result<u128, Stop> {
    let (bits, signed) = match r {
        Repr::Int { bits, signed, .. } => (bits, signed),
        Repr::Ptr { bits } => (bits, false),
        _ => return Err(Stop::new("integer operation on a non-integer")),
    };
    let (x, y) = if signed {
        (sext(a, bits), sext(b, bits))
    } else {
        (a as i128, b as i128)
    };
    let ovf = || Stop::new("signed overflow");
    let arith = |v: Option<i128>| -> Result<u128, Stop> {
        if signed {
            let v = v.filter(|v| fits(*v, bits, true)).ok_or_else(ovf)?;
            Ok(trunc(v as u128, bits))
        } else {
            Err(Stop::new("unreachable"))
        }
    };
    use BinOp::*;
    Ok(match op {
        Add if signed => arith(x.checked_add(y))?,
        Sub if signed => arith(x.checked_sub(y))?,
        Mul if signed => arith(x.checked_mul(y))?,
        Add => trunc(a.wrapping_add(b), bits),
        Sub => trunc(a.wrapping_sub(b), bits),
        Mul => trunc(a.wrapping_mul(b), bits),
        Div | Rem => {
            if y == 0 {
                return Err(Stop::new("division by zero"));
            }
            if signed {
                let q = if op == Div {
                    x.checked_div(y)
                } else {
                    x.checked_rem(y)
                };
                arith(q)?
            } else if op == Div {
                trunc(a / b, bits)
            } else {
                trunc(a % b, bits)
            }
        }
        Shl | Shr => {
            let n = int_value(b, rb);
            if n < 0 || n >= bits as i128 {
                return Err(Stop::new("shift count out of range"));
            }
            let n = n as u32;
            if op == Shr {
                if signed {
                    trunc((x >> n) as u128, bits)
                } else {
                    a >> n
                }
            } else if signed {
                if x < 0 {
                    return Err(Stop::new("left shift of a negative value"));
                }
                arith(x.checked_mul(1i128 << n))?
            } else {
                trunc(a << n, bits)
            }
        }
        BitAnd => a & b,
        BitOr => a | b,
        BitXor => a ^ b,
        Lt => u128::from(x < y),
        Gt => u128::from(x > y),
        Le => u128::from(x <= y),
        Ge => u128::from(x >= y),
        Eq => u128::from(a == b),
        Ne => u128::from(a != b),
        PtrAdd | PtrSub | PtrDiff => return Err(Stop::new("pointer operation on integers")),
    })
}

/// `a op b` on floating values of `bytes` bytes.
///
/// Errors: operators that do not apply to floating values.
pub fn float_binary(op: BinOp, a: f64, b: f64, bytes: u32) -> Result<Val, Stop> {
    let round = |v: f64| if bytes == 4 { v as f32 as f64 } else { v };
    use BinOp::*;
    Ok(match op {
        Add => Val::Float(round(a + b)),
        Sub => Val::Float(round(a - b)),
        Mul => Val::Float(round(a * b)),
        Div => Val::Float(round(a / b)),
        Lt => Val::Int(u128::from(a < b)),
        Gt => Val::Int(u128::from(a > b)),
        Le => Val::Int(u128::from(a <= b)),
        Ge => Val::Int(u128::from(a >= b)),
        Eq => Val::Int(u128::from(a == b)),
        Ne => Val::Int(u128::from(a != b)),
        _ => return Err(Stop::new("unsupported floating operation")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const INT: Repr = Repr::Int {
        bits: 32,
        signed: true,
        boolean: false,
    };
    const UINT: Repr = Repr::Int {
        bits: 32,
        signed: false,
        boolean: false,
    };
    const UCHAR: Repr = Repr::Int {
        bits: 8,
        signed: false,
        boolean: false,
    };

    #[test]
    fn unsigned_arithmetic_wraps() {
        assert_eq!(
            int_binary(BinOp::Add, 0xFFFF_FFFF, 1, UINT, UINT).ok(),
            Some(0)
        );
        assert_eq!(
            int_binary(BinOp::Sub, 0, 1, UINT, UINT).ok(),
            Some(0xFFFF_FFFF)
        );
    }

    #[test]
    fn signed_overflow_and_division_by_zero_stop() {
        assert!(int_binary(BinOp::Add, 0x7FFF_FFFF, 1, INT, INT).is_err());
        assert!(int_binary(BinOp::Div, 1, 0, INT, INT).is_err());
        assert!(int_binary(BinOp::Div, 0x8000_0000, 0xFFFF_FFFF, INT, INT).is_err());
        // -7 / 2 == -3, -7 % 2 == -1 (truncation toward zero).
        let m7 = trunc((-7i128) as u128, 32);
        assert_eq!(
            int_binary(BinOp::Div, m7, 2, INT, INT)
                .map(|v| sext(v, 32))
                .ok(),
            Some(-3)
        );
        assert_eq!(
            int_binary(BinOp::Rem, m7, 2, INT, INT)
                .map(|v| sext(v, 32))
                .ok(),
            Some(-1)
        );
    }

    #[test]
    fn conversions_truncate_and_extend() {
        // (unsigned char)300 == 44; (int)(unsigned char)200 == 200; (int)(signed char)-56.
        assert_eq!(convert(&Val::Int(300), INT, UCHAR).ok(), Some(Val::Int(44)));
        assert_eq!(
            convert(&Val::Int(200), UCHAR, INT).ok(),
            Some(Val::Int(200))
        );
        let schar = Repr::Int {
            bits: 8,
            signed: true,
            boolean: false,
        };
        assert_eq!(
            convert(&Val::Int(200), schar, INT).ok(),
            Some(Val::Int(trunc((-56i128) as u128, 32)))
        );
        let boolean = Repr::Int {
            bits: 8,
            signed: false,
            boolean: true,
        };
        assert_eq!(
            convert(&Val::Int(256), INT, boolean).ok(),
            Some(Val::Int(1))
        );
        assert!(convert(&Val::Float(1e20), Repr::Float { bytes: 8 }, INT).is_err());
    }

    #[test]
    fn comparisons_respect_signedness() {
        let m1 = trunc((-1i128) as u128, 32);
        assert_eq!(int_binary(BinOp::Lt, m1, 0, INT, INT).ok(), Some(1));
        assert_eq!(int_binary(BinOp::Lt, m1, 0, UINT, UINT).ok(), Some(0));
    }
}
