//! `#if` expressions (C11 §6.10.1): integer constant expressions over `intmax_t` and
//! `uintmax_t` (64 bits), after macro expansion and after `defined` and the `__has_*` queries
//! have become numbers. Remaining identifiers are 0.
//!
//! Types follow gcc's preprocessor: a constant with a `u` suffix, or too large for `intmax_t`,
//! is unsigned; a binary operator is unsigned when an operand is (comparisons, `&&`, `||` and
//! `!` give signed 0 or 1); `?:` is unsigned when either branch is. Division by zero is an error
//! only where it is evaluated. Anything gcc would reject (floating constants, a missing
//! operand, a stray token) is a [`Bail`], so the system preprocessor reports it.

use super::Bail;
use super::lex::{Interner, Kind, Tok};

/// A value: 64 bits and whether they are unsigned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Val {
    bits: u64,
    unsigned: bool,
}

impl Val {
    fn signed(v: i64) -> Val {
        Val {
            bits: v as u64,
            unsigned: false,
        }
    }
    fn truth(self) -> bool {
        self.bits != 0
    }
}

const BAD: Bail = Bail::Unsupported("invalid #if expression");

/// Evaluates the expanded `#if` line `toks`: whether it is non-zero.
///
/// Errors: [`Bail`] for a malformed expression or an evaluated division by zero.
pub fn eval(toks: &[Tok], interner: &Interner) -> Result<bool, Bail> {
    if toks.is_empty() {
        return Err(Bail::Unsupported("#if with no expression"));
    }
    let mut p = Parser {
        toks,
        pos: 0,
        interner,
        depth: 0,
    };
    let v = p.cond(true)?;
    if p.pos != toks.len() {
        return Err(BAD);
    }
    Ok(v.truth())
}

struct Parser<'a> {
    toks: &'a [Tok],
    pos: usize,
    interner: &'a Interner,
    /// Nesting of parentheses and unary operators (bounded, so deep input cannot exhaust the
    /// stack).
    depth: u32,
}

/// The deepest nesting of parentheses and unary operators evaluated here.
const MAX_DEPTH: u32 = 256;

/// Binary operators by precedence, loosest first (`?:` and `,` are handled apart).
const LEVELS: &[&[&str]] = &[
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<", ">", "<=", ">="],
    &["<<", ">>"],
    &["+", "-"],
    &["*", "/", "%"],
];

impl Parser<'_> {
    fn peek_punct(&self) -> Option<&str> {
        let t = self.toks.get(self.pos)?;
        (t.kind == Kind::Punct).then(|| self.interner.str(t.sym))
    }

    fn expect(&mut self, p: &str) -> Result<(), Bail> {
        if self.peek_punct() == Some(p) {
            self.pos += 1;
            Ok(())
        } else {
            Err(BAD)
        }
    }

    /// `e1 ? e2 : e3` and the comma operator (gcc accepts it in `#if`).
    fn cond(&mut self, eval: bool) -> Result<Val, Bail> {
        let mut v = self.ternary(eval)?;
        while self.peek_punct() == Some(",") {
            self.pos += 1;
            v = self.ternary(eval)?;
        }
        Ok(v)
    }

    fn ternary(&mut self, eval: bool) -> Result<Val, Bail> {
        let c = self.binary(0, eval)?;
        if self.peek_punct() != Some("?") {
            return Ok(c);
        }
        self.pos += 1;
        let a = self.cond(eval && c.truth())?;
        self.expect(":")?;
        let b = self.ternary(eval && !c.truth())?;
        let unsigned = a.unsigned || b.unsigned;
        let bits = if c.truth() { a.bits } else { b.bits };
        Ok(Val { bits, unsigned })
    }

    /// Binary operators of level `min` or tighter, by precedence climbing (recursion only for
    /// right operands, so nesting costs few stack frames).
    fn binary(&mut self, min: usize, eval: bool) -> Result<Val, Bail> {
        let mut lhs = self.unary(eval)?;
        loop {
            let Some((level, op)) = self.peek_punct().and_then(|op| {
                LEVELS
                    .iter()
                    .position(|ops| ops.contains(&op))
                    .filter(|&l| l >= min)
                    .map(|l| (l, op.to_string()))
            }) else {
                return Ok(lhs);
            };
            self.pos += 1;
            let rhs_eval = match op.as_str() {
                "&&" => eval && lhs.truth(),
                "||" => eval && !lhs.truth(),
                _ => eval,
            };
            let rhs = self.binary(level + 1, rhs_eval)?;
            lhs = apply(&op, lhs, rhs, eval)?;
        }
    }

    fn unary(&mut self, eval: bool) -> Result<Val, Bail> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Bail::Unsupported("#if expression nested too deeply"));
        }
        let r = self.unary_inner(eval);
        self.depth -= 1;
        r
    }

    fn unary_inner(&mut self, eval: bool) -> Result<Val, Bail> {
        let t = *self.toks.get(self.pos).ok_or(BAD)?;
        self.pos += 1;
        match t.kind {
            Kind::Punct => match self.interner.str(t.sym) {
                "(" => {
                    let v = self.cond(eval)?;
                    self.expect(")")?;
                    Ok(v)
                }
                "+" => self.unary(eval),
                "-" => {
                    let v = self.unary(eval)?;
                    Ok(Val {
                        bits: v.bits.wrapping_neg(),
                        ..v
                    })
                }
                "~" => {
                    let v = self.unary(eval)?;
                    Ok(Val { bits: !v.bits, ..v })
                }
                "!" => {
                    let v = self.unary(eval)?;
                    Ok(Val::signed(i64::from(!v.truth())))
                }
                _ => Err(BAD),
            },
            Kind::Number => number(self.interner.str(t.sym)),
            Kind::Char => char_value(self.interner.str(t.sym)),
            Kind::Ident => Ok(Val::signed(0)),
            _ => Err(BAD),
        }
    }
}

fn apply(op: &str, a: Val, b: Val, eval: bool) -> Result<Val, Bail> {
    let unsigned = a.unsigned || b.unsigned;
    let cmp = |r: bool| Ok(Val::signed(i64::from(r)));
    let (x, y) = (a.bits, b.bits);
    let (sx, sy) = (x as i64, y as i64);
    let arith = |bits: u64| Ok(Val { bits, unsigned });
    match op {
        "||" => cmp(a.truth() || b.truth()),
        "&&" => cmp(a.truth() && b.truth()),
        "|" => arith(x | y),
        "^" => arith(x ^ y),
        "&" => arith(x & y),
        "==" => cmp(x == y),
        "!=" => cmp(x != y),
        "<" => cmp(if unsigned { x < y } else { sx < sy }),
        ">" => cmp(if unsigned { x > y } else { sx > sy }),
        "<=" => cmp(if unsigned { x <= y } else { sx <= sy }),
        ">=" => cmp(if unsigned { x >= y } else { sx >= sy }),
        "<<" | ">>" => {
            // The result has the left operand's type; a negative count shifts the other way.
            let left = op == "<<";
            let (left, n) = if !b.unsigned && sy < 0 {
                (!left, sy.unsigned_abs())
            } else {
                (left, y)
            };
            let bits = if left {
                if n >= 64 { 0 } else { x << n }
            } else if a.unsigned {
                if n >= 64 { 0 } else { x >> n }
            } else if n >= 64 {
                if sx < 0 { u64::MAX } else { 0 }
            } else {
                (sx >> n) as u64
            };
            Ok(Val {
                bits,
                unsigned: a.unsigned,
            })
        }
        "+" => arith(x.wrapping_add(y)),
        "-" => arith(x.wrapping_sub(y)),
        "*" => arith(x.wrapping_mul(y)),
        "/" | "%" => {
            if y == 0 {
                return if eval {
                    Err(Bail::Unsupported("division by zero in #if"))
                } else {
                    arith(0)
                };
            }
            let bits = match (op, unsigned) {
                ("/", true) => x / y,
                ("%", true) => x % y,
                ("/", false) => sx.wrapping_div(sy) as u64,
                _ => sx.wrapping_rem(sy) as u64,
            };
            arith(bits)
        }
        _ => Err(BAD),
    }
}

/// The value of an integer constant (C11 §6.4.4.1) with gcc's signedness rule.
fn number(s: &str) -> Result<Val, Bail> {
    let lower = s.to_ascii_lowercase();
    let digits_end = lower.trim_end_matches(['u', 'l']).len();
    let (body, suffix) = lower.split_at(digits_end);
    if !matches!(suffix, "" | "u" | "l" | "ul" | "lu" | "ll" | "ull" | "llu") {
        return Err(Bail::Unsupported("unsupported number in #if"));
    }
    let (radix, digits) = if let Some(h) = body.strip_prefix("0x") {
        (16, h)
    } else if let Some(b) = body.strip_prefix("0b") {
        (2, b)
    } else if body.len() > 1 && body.starts_with('0') {
        (8, &body[1..])
    } else {
        (10, body)
    };
    let digits = digits.replace('\'', "");
    let bits = u64::from_str_radix(&digits, radix)
        .map_err(|_| Bail::Unsupported("unsupported number in #if"))?;
    let unsigned = suffix.contains('u') || bits > i64::MAX as u64;
    Ok(Val { bits, unsigned })
}

/// The value of a character constant: one character or escape, as `int` (plain `char` is
/// signed on the targets racedar supports); wide and multi-character constants are a [`Bail`].
fn char_value(s: &str) -> Result<Val, Bail> {
    let inner = s
        .strip_prefix('\'')
        .and_then(|r| r.strip_suffix('\''))
        .ok_or(Bail::Unsupported("unsupported character constant in #if"))?;
    let bytes = inner.as_bytes();
    let v: i64 = match bytes {
        [c] if *c < 0x80 => i64::from(*c),
        [b'\\', rest @ ..] => match rest {
            [b'n'] => 10,
            [b't'] => 9,
            [b'r'] => 13,
            [b'a'] => 7,
            [b'b'] => 8,
            [b'f'] => 12,
            [b'v'] => 11,
            [b'e'] => 27,
            [c @ (b'\\' | b'\'' | b'"' | b'?')] => i64::from(*c),
            [b'x', h @ ..] if !h.is_empty() => {
                let v = u32::from_str_radix(std::str::from_utf8(h).unwrap_or("g"), 16)
                    .map_err(|_| BAD)?;
                i64::from(v as u8 as i8)
            }
            o if !o.is_empty() && o.len() <= 3 && o.iter().all(|c| (b'0'..=b'7').contains(c)) => {
                let v = u32::from_str_radix(std::str::from_utf8(o).unwrap_or("8"), 8)
                    .map_err(|_| BAD)?;
                i64::from(v as u8 as i8)
            }
            _ => return Err(Bail::Unsupported("unsupported character constant in #if")),
        },
        _ => return Err(Bail::Unsupported("unsupported character constant in #if")),
    };
    Ok(Val::signed(v))
}

#[cfg(test)]
mod tests {
    use super::super::lex::{Interner, lex};
    use super::*;

    fn ev(src: &str) -> Result<bool, Bail> {
        let mut it = Interner::default();
        let toks = lex(src.as_bytes(), &mut it).expect("lexes");
        eval(&toks, &it)
    }

    #[test]
    fn arithmetic_precedence_and_signedness() {
        assert_eq!(ev("1 + 2 * 3 == 7"), Ok(true));
        assert_eq!(ev("-1 < 0"), Ok(true));
        assert_eq!(ev("-1 < 0u"), Ok(false));
        assert_eq!(ev("0xffffffffffffffff == -1"), Ok(true));
        assert_eq!(ev("18446744073709551615 > 0"), Ok(true));
        assert_eq!(ev("(1 ? -1 : 0u) > 0"), Ok(true));
        assert_eq!(ev("1 << 63 < 0"), Ok(true));
        assert_eq!(ev("'a' == 97 && '\\n' == 10 && '\\377' < 0"), Ok(true));
        assert_eq!(ev("undefined_name || 0"), Ok(false));
        assert_eq!(ev("010 == 8 && 0b11 == 3 && 10L == 10"), Ok(true));
    }

    #[test]
    fn division_by_zero_only_when_evaluated() {
        assert_eq!(ev("0 && 1 / 0"), Ok(false));
        assert_eq!(ev("1 || 1 % 0"), Ok(true));
        assert_eq!(ev("0 ? 1 / 0 : 2"), Ok(true));
        assert!(ev("1 / 0").is_err());
        assert!(ev("1 +").is_err());
        assert!(ev("1.0").is_err());
        let deep = format!("{}1{}", "(".repeat(100_000), ")".repeat(100_000));
        assert!(ev(&deep).is_err());
        assert_eq!(ev(&"-".repeat(100)), Err(BAD));
    }
}
