//! Literal constants: integers (C11 §6.4.4.1), floating constants (§6.4.4.2), character
//! constants (§6.4.4.4) and string literals (§6.4.5).

use crate::ir::types::{DataModel, FloatKind, IntKind};
use lang_c::ast;

/// Parses an integer constant into its value and type (C11 §6.4.4.1p5: the first type of the
/// list for its suffix and base that can represent the value). Values beyond `unsigned long
/// long` wrap. Returns `None` for malformed digits.
pub fn integer(c: &ast::Integer, dm: DataModel) -> Option<(i128, IntKind)> {
    let radix = match c.base {
        ast::IntegerBase::Decimal => 10,
        ast::IntegerBase::Octal => 8,
        ast::IntegerBase::Hexadecimal => 16,
        ast::IntegerBase::Binary => 2,
    };
    let mut value: u128 = 0;
    for ch in c.number.chars() {
        if ch == '\'' {
            continue; // C23 digit separator
        }
        let d = ch.to_digit(radix)? as u128;
        value = value.wrapping_mul(radix as u128).wrapping_add(d);
    }
    let decimal = matches!(c.base, ast::IntegerBase::Decimal);
    use IntKind::*;
    let candidates: &[IntKind] = match (c.suffix.size, c.suffix.unsigned, decimal) {
        (ast::IntegerSize::Int, false, true) => &[Int, Long, LongLong],
        (ast::IntegerSize::Int, false, false) => &[Int, UInt, Long, ULong, LongLong, ULongLong],
        (ast::IntegerSize::Int, true, _) => &[UInt, ULong, ULongLong],
        (ast::IntegerSize::Long, false, true) => &[Long, LongLong],
        (ast::IntegerSize::Long, false, false) => &[Long, ULong, LongLong, ULongLong],
        (ast::IntegerSize::Long, true, _) => &[ULong, ULongLong],
        (ast::IntegerSize::LongLong, false, true) => &[LongLong],
        (ast::IntegerSize::LongLong, false, false) => &[LongLong, ULongLong],
        (ast::IntegerSize::LongLong, true, _) => &[ULongLong],
    };
    for &k in candidates {
        let bits = dm.int_size(k) * 8;
        let max: u128 = if k.is_signed() {
            (1u128 << (bits - 1)) - 1
        } else {
            (1u128 << bits) - 1
        };
        if value <= max {
            return Some((value as i128, k));
        }
    }
    // Too large for every candidate: GCC uses the last (unsigned) type, wrapping.
    let k = if c.suffix.unsigned || !decimal {
        ULongLong
    } else {
        Int128
    };
    Some((value as i128, k))
}

/// Parses a floating constant into its value and kind.
pub fn float(c: &ast::Float) -> Option<(f64, FloatKind)> {
    let kind = match &c.suffix.format {
        ast::FloatFormat::Float => FloatKind::Float,
        ast::FloatFormat::Double => FloatKind::Double,
        ast::FloatFormat::LongDouble => FloatKind::LongDouble,
        ast::FloatFormat::TS18661Format(t) => match t.width {
            32 => FloatKind::Float,
            64 => FloatKind::Double,
            _ => FloatKind::Float128,
        },
    };
    let text: String = c.number.chars().filter(|&ch| ch != '\'').collect();
    let value = match c.base {
        ast::FloatBase::Decimal => text.parse::<f64>().ok()?,
        ast::FloatBase::Hexadecimal => hex_float(&text)?,
    };
    Some((value, kind))
}

/// Parses the digits of a hexadecimal floating constant without its `0x` prefix: `1.8p3`.
fn hex_float(s: &str) -> Option<f64> {
    let (mant, exp) = match s.find(['p', 'P']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().ok()?),
        None => (s, 0),
    };
    let (int_part, frac_part) = match mant.find('.') {
        Some(i) => (&mant[..i], &mant[i + 1..]),
        None => (mant, ""),
    };
    let mut v = 0f64;
    for ch in int_part.chars() {
        v = v * 16.0 + ch.to_digit(16)? as f64;
    }
    let mut scale = 1.0 / 16.0;
    for ch in frac_part.chars() {
        v += ch.to_digit(16)? as f64 * scale;
        scale /= 16.0;
    }
    Some(v * 2f64.powi(exp))
}

/// Encoding prefix of a character constant or string literal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CharWidth {
    /// No prefix or `u8`: `char`.
    Narrow,
    /// `L`: `wchar_t` (`int`, 4 bytes on x86 Linux).
    Wide,
    /// `u`: `char16_t` (`unsigned short`).
    Utf16,
    /// `U`: `char32_t` (`unsigned int`).
    Utf32,
}

impl CharWidth {
    /// The element's integer kind.
    pub fn kind(self) -> IntKind {
        match self {
            CharWidth::Narrow => IntKind::Char,
            CharWidth::Wide => IntKind::Int,
            CharWidth::Utf16 => IntKind::UShort,
            CharWidth::Utf32 => IntKind::UInt,
        }
    }

    /// The element size in bytes.
    pub fn size(self) -> usize {
        match self {
            CharWidth::Narrow => 1,
            CharWidth::Utf16 => 2,
            CharWidth::Wide | CharWidth::Utf32 => 4,
        }
    }
}

/// Splits a literal token into its prefix width and the text between the quotes.
fn split_prefix(tok: &str, quote: char) -> Option<(CharWidth, &str)> {
    let start = tok.find(quote)?;
    let width = match &tok[..start] {
        "" | "u8" => CharWidth::Narrow,
        "L" => CharWidth::Wide,
        "u" => CharWidth::Utf16,
        "U" => CharWidth::Utf32,
        _ => return None,
    };
    let body = tok[start + 1..].strip_suffix(quote)?;
    Some((width, body))
}

/// Decodes the escapes of a literal body into code units: narrow literals yield bytes (UTF-8 for
/// non-ASCII and `\u`), wide ones code points.
fn decode(body: &str, width: CharWidth) -> Option<Vec<u32>> {
    let mut out = Vec::with_capacity(body.len());
    let mut chars = body.chars().peekable();
    let push_char = |out: &mut Vec<u32>, c: char| {
        if width == CharWidth::Narrow {
            let mut buf = [0u8; 4];
            out.extend(c.encode_utf8(&mut buf).bytes().map(u32::from));
        } else {
            out.push(c as u32);
        }
    };
    while let Some(c) = chars.next() {
        if c != '\\' {
            push_char(&mut out, c);
            continue;
        }
        let e = chars.next()?;
        let v = match e {
            'n' => 10,
            't' => 9,
            'r' => 13,
            'a' => 7,
            'b' => 8,
            'f' => 12,
            'v' => 11,
            'e' | 'E' => 27,
            '\\' | '\'' | '"' | '?' => e as u32,
            '0'..='7' => {
                let mut v = e.to_digit(8)?;
                for _ in 0..2 {
                    match chars.peek().and_then(|c| c.to_digit(8)) {
                        Some(d) => {
                            v = v * 8 + d;
                            chars.next();
                        }
                        None => break,
                    }
                }
                v
            }
            'x' => {
                let mut v: u32 = 0;
                let mut any = false;
                while let Some(d) = chars.peek().and_then(|c| c.to_digit(16)) {
                    v = v.wrapping_mul(16).wrapping_add(d);
                    any = true;
                    chars.next();
                }
                if !any {
                    return None;
                }
                v
            }
            'u' | 'U' => {
                let n = if e == 'u' { 4 } else { 8 };
                let mut v: u32 = 0;
                for _ in 0..n {
                    v = v * 16 + chars.next()?.to_digit(16)?;
                }
                push_char(&mut out, char::from_u32(v).unwrap_or('?'));
                continue;
            }
            other => other as u32, // unknown escape: GCC warns and keeps the character
        };
        out.push(v);
    }
    Some(out)
}

/// Parses a character constant token (`'a'`, `L'\n'`, `'ab'`) into its value and element
/// kind. A narrow constant has type `int` with the value of a (signed) `char`; multi-character
/// constants combine as GCC does (`'ab'` = `'a' * 256 + 'b'`).
pub fn character(tok: &str) -> Option<(i128, CharWidth)> {
    let (width, body) = split_prefix(tok, '\'')?;
    let units = decode(body, width)?;
    if units.is_empty() {
        return None;
    }
    let value = match width {
        CharWidth::Narrow if units.len() == 1 => (units[0] as u8 as i8) as i128,
        CharWidth::Narrow => units.iter().fold(0i128, |acc, &u| {
            ((acc << 8) | (u as u8) as i128) & 0xffff_ffff
        }),
        _ => units[units.len() - 1] as i128,
    };
    let value = if width == CharWidth::Narrow && units.len() > 1 {
        value as i32 as i128
    } else {
        value
    };
    Some((value, width))
}

/// Concatenates and decodes the pieces of a string literal into its bytes (little-endian code
/// units, terminating zero included) and element width. Mixed prefixes take the wide one.
pub fn string(pieces: &[String]) -> Option<(Vec<u8>, CharWidth)> {
    let mut width = CharWidth::Narrow;
    let mut parsed = Vec::with_capacity(pieces.len());
    for p in pieces {
        let (w, body) = split_prefix(p, '"')?;
        if w != CharWidth::Narrow {
            width = w;
        }
        parsed.push((w, body));
    }
    let size = width.size();
    let mut bytes = Vec::new();
    for (w, body) in parsed {
        // Narrow pieces in a wide literal are decoded as wide (code points).
        let units = decode(body, if w == CharWidth::Narrow { width } else { w })?;
        for u in units {
            bytes.extend_from_slice(&u.to_le_bytes()[..size]);
        }
    }
    bytes.extend(std::iter::repeat_n(0u8, size));
    Some((bytes, width))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(
        number: &str,
        base: ast::IntegerBase,
        size: ast::IntegerSize,
        unsigned: bool,
    ) -> ast::Integer {
        ast::Integer {
            base,
            number: number.into(),
            suffix: ast::IntegerSuffix {
                size,
                unsigned,
                imaginary: false,
            },
        }
    }

    #[test]
    fn integer_types_follow_c11() {
        use ast::IntegerBase::*;
        use ast::IntegerSize;
        let dm = DataModel::Lp64;
        assert_eq!(
            integer(&int("2147483647", Decimal, IntegerSize::Int, false), dm),
            Some((2147483647, IntKind::Int))
        );
        assert_eq!(
            integer(&int("2147483648", Decimal, IntegerSize::Int, false), dm),
            Some((2147483648, IntKind::Long))
        );
        assert_eq!(
            integer(&int("80000000", Hexadecimal, IntegerSize::Int, false), dm),
            Some((0x8000_0000, IntKind::UInt))
        );
        assert_eq!(
            integer(
                &int("2147483648", Decimal, IntegerSize::Int, false),
                DataModel::Ilp32
            ),
            Some((2147483648, IntKind::LongLong))
        );
        assert_eq!(
            integer(&int("17", Octal, IntegerSize::Long, true), dm),
            Some((15, IntKind::ULong))
        );
    }

    #[test]
    fn characters_and_strings_decode_escapes() {
        assert_eq!(character("'a'"), Some((97, CharWidth::Narrow)));
        assert_eq!(character("'\\xff'"), Some((-1, CharWidth::Narrow)));
        assert_eq!(character("'\\0'"), Some((0, CharWidth::Narrow)));
        assert_eq!(character("L'\\n'"), Some((10, CharWidth::Wide)));
        assert_eq!(character("'ab'"), Some((0x6162, CharWidth::Narrow)));
        let (bytes, w) = string(&["\"a\\x41\"".into(), "\"\\101\\n\"".into()]).unwrap();
        assert_eq!((bytes.as_slice(), w), (&b"aAA\n\0"[..], CharWidth::Narrow));
        let (bytes, w) = string(&["L\"ab\"".into()]).unwrap();
        assert_eq!(w, CharWidth::Wide);
        assert_eq!(bytes.len(), 12);
    }

    #[test]
    fn hex_floats() {
        assert_eq!(hex_float("1p3"), Some(8.0));
        assert_eq!(hex_float("1.8p1"), Some(3.0));
    }
}
