//! Struct and union layout: member offsets, bit-field positions, size and alignment.
//!
//! Follows GCC on x86 (System V i386 and x86-64 psABI, `PCC_BITFIELD_TYPE_MATTERS`):
//! - a member is placed at the next offset that is a multiple of its alignment;
//! - a bit-field is placed at the next free bit unless it would cross the boundary of a
//!   storage unit of its declared type (a `sizeof(T)`-byte unit aligned to `_Alignof(T)`), in
//!   which case it starts at the next such unit; named bit-fields raise the struct's alignment
//!   to their type's, unnamed ones do not; a zero-width bit-field moves to the next unit;
//! - `__attribute__((packed))` drops member alignment (bit-fields pack bit by bit), and
//!   `aligned(N)` / `_Alignas(N)` raise it;
//! - a flexible array member (last, incomplete array) adds no size;
//! - the size is rounded up to the alignment.
//!
//! `#pragma pack` is not modelled. All quantities are in bytes except bit positions and widths.

use crate::ir::types::{BitField, CompKind, CompLayout, Field, TypeKind, TypeTable};
use crate::ir::{Loc, TypeId};

/// A member as declared, before layout.
#[derive(Clone, Debug)]
pub struct MemberDecl {
    /// Member name (`None`: anonymous struct/union member or unnamed bit-field).
    pub name: Option<String>,
    /// Declared type.
    pub ty: TypeId,
    /// Bit-field width in bits.
    pub bit_width: Option<u32>,
    /// Alignment in bytes requested by `aligned(N)` or `_Alignas(N)` on the member.
    pub align: Option<u64>,
    /// Declaration position (for errors).
    pub loc: Loc,
}

/// Attributes of the struct or union as a whole.
#[derive(Clone, Copy, Debug, Default)]
pub struct CompAttrs {
    /// `__attribute__((packed))`.
    pub packed: bool,
    /// `__attribute__((aligned(N)))` on the type, in bytes.
    pub align: Option<u64>,
}

/// A layout error: the member at `loc` has an incomplete type.
#[derive(Clone, Debug)]
pub struct LayoutError {
    /// Where the offending member is declared.
    pub loc: Loc,
    /// What is wrong.
    pub message: String,
}

fn align_up(x: u64, a: u64) -> u64 {
    if a <= 1 {
        x
    } else {
        x.div_ceil(a).saturating_mul(a)
    }
}

/// Lays out the members of a struct or union.
///
/// Errors: a member of incomplete or function type (other than a flexible array member at the
/// end of a struct), or a bit-field wider than its type.
pub fn layout(
    types: &TypeTable,
    kind: CompKind,
    members: &[MemberDecl],
    attrs: CompAttrs,
) -> Result<(Vec<Field>, CompLayout), LayoutError> {
    let mut fields = Vec::with_capacity(members.len());
    let mut bits: u64 = 0; // next free bit (struct) / largest end bit (union)
    let mut max_align: u64 = 1;
    for (i, m) in members.iter().enumerate() {
        let is_last = i + 1 == members.len();
        let flexible = matches!(
            types.kind(m.ty),
            TypeKind::Array {
                len: crate::ir::types::ArrayLen::Incomplete,
                ..
            }
        ) && is_last
            && kind == CompKind::Struct;
        let size = match types.size_of(m.ty) {
            Some(s) => s,
            None if flexible => 0,
            None => {
                return Err(LayoutError {
                    loc: m.loc,
                    message: format!(
                        "member '{}' has incomplete type '{}'",
                        m.name.as_deref().unwrap_or("<anonymous>"),
                        types.display(m.ty)
                    ),
                });
            }
        };
        let natural = types.align_of(m.ty);
        let mut align = if attrs.packed { 1 } else { natural };
        if let Some(a) = m.align {
            align = align.max(a);
        }
        match m.bit_width {
            Some(width) => {
                let width = width as u64;
                if width > size.saturating_mul(8) {
                    return Err(LayoutError {
                        loc: m.loc,
                        message: format!(
                            "width of bit-field '{}' ({width} bits) exceeds its type",
                            m.name.as_deref().unwrap_or("<unnamed>")
                        ),
                    });
                }
                let unit_align_bits = natural.saturating_mul(8);
                let pos = match kind {
                    CompKind::Union => 0,
                    CompKind::Struct if width == 0 => {
                        bits = align_up(bits, unit_align_bits);
                        bits
                    }
                    CompKind::Struct => {
                        if !attrs.packed {
                            let unit_start = bits / unit_align_bits * unit_align_bits;
                            if bits + width > unit_start.saturating_add(size.saturating_mul(8)) {
                                bits = align_up(bits, unit_align_bits);
                            }
                        }
                        bits
                    }
                };
                if m.name.is_some() {
                    max_align = max_align.max(align);
                }
                fields.push(Field {
                    name: m.name.clone(),
                    ty: m.ty,
                    offset: pos / 8,
                    bit_field: Some(BitField {
                        bit_offset: (pos % 8) as u32,
                        width: width as u32,
                    }),
                });
                match kind {
                    CompKind::Struct => bits = pos + width,
                    CompKind::Union => bits = bits.max(width),
                }
            }
            None => {
                max_align = max_align.max(align);
                let offset = match kind {
                    CompKind::Struct => align_up(bits.div_ceil(8), align),
                    CompKind::Union => 0,
                };
                fields.push(Field {
                    name: m.name.clone(),
                    ty: m.ty,
                    offset,
                    bit_field: None,
                });
                let end = offset.saturating_add(size).saturating_mul(8);
                bits = match kind {
                    CompKind::Struct => end,
                    CompKind::Union => bits.max(end),
                };
            }
        }
    }
    if let Some(a) = attrs.align {
        max_align = max_align.max(a);
    }
    let size = align_up(bits.div_ceil(8), max_align);
    Ok((
        fields,
        CompLayout {
            size,
            align: max_align,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::types::{DataModel, IntKind};

    fn member(name: &str, ty: TypeId, bit_width: Option<u32>) -> MemberDecl {
        MemberDecl {
            name: Some(name.into()),
            ty,
            bit_width,
            align: None,
            loc: Loc::default(),
        }
    }

    #[test]
    fn long_long_is_4_aligned_on_ilp32() {
        for (dm, size, off) in [(DataModel::Ilp32, 12, 4), (DataModel::Lp64, 16, 8)] {
            let mut t = TypeTable::new(dm);
            let c = t.common.char_;
            let ll = t.int(IntKind::LongLong);
            let (f, l) = layout(
                &t,
                CompKind::Struct,
                &[member("c", c, None), member("x", ll, None)],
                CompAttrs::default(),
            )
            .unwrap();
            assert_eq!((f[1].offset, l.size), (off, size), "{dm:?}");
        }
    }

    #[test]
    fn bit_fields_share_units_until_they_would_straddle() {
        let t = TypeTable::new(DataModel::Lp64);
        let u = t.common.uint;
        let (f, l) = layout(
            &t,
            CompKind::Struct,
            &[
                member("a", u, Some(3)),
                member("b", u, Some(30)),
                member("c", u, Some(2)),
            ],
            CompAttrs::default(),
        )
        .unwrap();
        // a at bit 0; b does not fit in the rest of the first unit (3 + 30 > 32) -> bit 32;
        // c at bit 62.
        assert_eq!((f[0].offset, f[0].bit_field.unwrap().bit_offset), (0, 0));
        assert_eq!((f[1].offset, f[1].bit_field.unwrap().bit_offset), (4, 0));
        assert_eq!((f[2].offset, f[2].bit_field.unwrap().bit_offset), (7, 6));
        assert_eq!(l.size, 8);
    }

    #[test]
    fn packed_and_union_layouts() {
        let t = TypeTable::new(DataModel::Lp64);
        let (c, i) = (t.common.char_, t.common.int);
        let packed = CompAttrs {
            packed: true,
            align: None,
        };
        let (f, l) = layout(
            &t,
            CompKind::Struct,
            &[member("c", c, None), member("i", i, None)],
            packed,
        )
        .unwrap();
        assert_eq!((f[1].offset, l.size, l.align), (1, 5, 1));
        let (_, l) = layout(
            &t,
            CompKind::Union,
            &[member("c", c, None), member("i", i, None)],
            CompAttrs::default(),
        )
        .unwrap();
        assert_eq!((l.size, l.align), (4, 4));
    }
}
