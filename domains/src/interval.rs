//! Integer intervals with widening and narrowing (Cousot & Cousot, "Static determination of
//! dynamic properties of programs", 1976).
//!
//! An [`Interval`] is an inclusive range `[lo, hi]` of mathematical integers held in `i128`;
//! `i128::MIN` and `i128::MAX` stand for −∞ and +∞. Every C integer value (up to 64 bits, and
//! 128-bit values within `i128`) fits. Arithmetic is exact on the integers (saturating at the
//! infinities); wrapping to a C type's width is a separate step ([`Interval::wrap`]).

use crate::lattice::JoinSemiLattice;

/// −∞.
pub const NEG_INF: i128 = i128::MIN;
/// +∞.
pub const POS_INF: i128 = i128::MAX;

/// An inclusive interval of integers, or bottom (empty).
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Interval {
    lo: i128,
    hi: i128,
}

impl std::fmt::Debug for Interval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_bottom() {
            return write!(f, "⊥");
        }
        let b = |x: i128| match x {
            NEG_INF => "-inf".to_string(),
            POS_INF => "+inf".to_string(),
            v => v.to_string(),
        };
        write!(f, "[{}, {}]", b(self.lo), b(self.hi))
    }
}

/// A three-valued truth: what a comparison of two intervals may yield.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bool3 {
    /// Always true.
    True,
    /// Always false.
    False,
    /// Either.
    Maybe,
}

fn add_bound(x: i128, y: i128, lower: bool) -> i128 {
    if (x == NEG_INF || y == NEG_INF) && (lower || (x != POS_INF && y != POS_INF)) {
        return NEG_INF;
    }
    if x == POS_INF || y == POS_INF {
        return POS_INF;
    }
    x.saturating_add(y)
}

fn mul_bound(x: i128, y: i128) -> i128 {
    if x == 0 || y == 0 {
        return 0;
    }
    let inf = x == NEG_INF || x == POS_INF || y == NEG_INF || y == POS_INF;
    let neg = (x < 0) != (y < 0);
    if inf {
        return if neg { NEG_INF } else { POS_INF };
    }
    x.saturating_mul(y)
}

impl Interval {
    /// The empty interval.
    pub const BOTTOM: Interval = Interval { lo: 1, hi: 0 };
    /// All integers.
    pub const TOP: Interval = Interval {
        lo: NEG_INF,
        hi: POS_INF,
    };

    /// `[lo, hi]` (bottom when `lo > hi`).
    pub fn new(lo: i128, hi: i128) -> Interval {
        if lo > hi {
            Interval::BOTTOM
        } else {
            Interval { lo, hi }
        }
    }

    /// The singleton `[v, v]`.
    pub fn constant(v: i128) -> Interval {
        Interval { lo: v, hi: v }
    }

    /// Whether the interval is empty.
    pub fn is_bottom(&self) -> bool {
        self.lo > self.hi
    }

    /// Whether it is all integers.
    pub fn is_top(&self) -> bool {
        self.lo == NEG_INF && self.hi == POS_INF
    }

    /// Lower bound (`NEG_INF` when unbounded); meaningless on bottom.
    pub fn lo(&self) -> i128 {
        self.lo
    }

    /// Upper bound (`POS_INF` when unbounded); meaningless on bottom.
    pub fn hi(&self) -> i128 {
        self.hi
    }

    /// The single value, if the interval has exactly one.
    pub fn as_constant(&self) -> Option<i128> {
        (self.lo == self.hi && self.lo != NEG_INF && self.lo != POS_INF).then_some(self.lo)
    }

    /// Whether `v` is in the interval.
    pub fn contains(&self, v: i128) -> bool {
        self.lo <= v && v <= self.hi
    }

    /// Whether both bounds are finite.
    pub fn is_finite(&self) -> bool {
        !self.is_bottom() && self.lo != NEG_INF && self.hi != POS_INF
    }

    /// Least upper bound.
    pub fn join(&self, o: &Interval) -> Interval {
        if self.is_bottom() {
            return *o;
        }
        if o.is_bottom() {
            return *self;
        }
        Interval {
            lo: self.lo.min(o.lo),
            hi: self.hi.max(o.hi),
        }
    }

    /// Greatest lower bound.
    pub fn meet(&self, o: &Interval) -> Interval {
        Interval::new(self.lo.max(o.lo), self.hi.min(o.hi))
    }

    /// Whether `self ⊆ o`.
    pub fn leq(&self, o: &Interval) -> bool {
        self.is_bottom() || (!o.is_bottom() && o.lo <= self.lo && self.hi <= o.hi)
    }

    /// Widening of `self` by the next iterate `next`: a bound that moves jumps to the nearest
    /// threshold beyond it (or to the infinity).
    pub fn widen(&self, next: &Interval, thresholds: &[i128]) -> Interval {
        if self.is_bottom() {
            return *next;
        }
        if next.is_bottom() {
            return *self;
        }
        let lo = if next.lo < self.lo {
            thresholds
                .iter()
                .copied()
                .filter(|t| *t <= next.lo)
                .max()
                .unwrap_or(NEG_INF)
        } else {
            self.lo
        };
        let hi = if next.hi > self.hi {
            thresholds
                .iter()
                .copied()
                .filter(|t| *t >= next.hi)
                .min()
                .unwrap_or(POS_INF)
        } else {
            self.hi
        };
        Interval { lo, hi }
    }

    /// Narrowing: refines infinite bounds of `self` with those of `next`.
    pub fn narrow(&self, next: &Interval) -> Interval {
        if self.is_bottom() || next.is_bottom() {
            return *next;
        }
        Interval {
            lo: if self.lo == NEG_INF { next.lo } else { self.lo },
            hi: if self.hi == POS_INF { next.hi } else { self.hi },
        }
    }

    fn lift(a: &Interval, b: &Interval, f: impl Fn(&Interval, &Interval) -> Interval) -> Interval {
        if a.is_bottom() || b.is_bottom() {
            Interval::BOTTOM
        } else {
            f(a, b)
        }
    }

    /// `a + b`.
    pub fn add(&self, o: &Interval) -> Interval {
        Interval::lift(self, o, |a, b| Interval {
            lo: add_bound(a.lo, b.lo, true),
            hi: add_bound(a.hi, b.hi, false),
        })
    }

    /// `-a`.
    pub fn neg(&self) -> Interval {
        if self.is_bottom() {
            return *self;
        }
        let n = |x: i128| match x {
            NEG_INF => POS_INF,
            POS_INF => NEG_INF,
            v => -v,
        };
        Interval {
            lo: n(self.hi),
            hi: n(self.lo),
        }
    }

    /// `a - b`.
    pub fn sub(&self, o: &Interval) -> Interval {
        self.add(&o.neg())
    }

    /// `a * b`.
    pub fn mul(&self, o: &Interval) -> Interval {
        Interval::lift(self, o, |a, b| {
            let c = [
                mul_bound(a.lo, b.lo),
                mul_bound(a.lo, b.hi),
                mul_bound(a.hi, b.lo),
                mul_bound(a.hi, b.hi),
            ];
            Interval {
                lo: c.iter().copied().min().unwrap_or(NEG_INF),
                hi: c.iter().copied().max().unwrap_or(POS_INF),
            }
        })
    }

    /// `a / b`, truncating toward zero (C11 §6.5.5); division by zero contributes nothing.
    pub fn div(&self, o: &Interval) -> Interval {
        Interval::lift(self, o, |a, b| {
            let parts: Vec<Interval> = [
                Interval::new(b.lo, b.hi.min(-1)),
                Interval::new(b.lo.max(1), b.hi),
            ]
            .into_iter()
            .filter(|p| !p.is_bottom())
            .collect();
            let mut out = Interval::BOTTOM;
            for d in parts {
                if !a.is_finite() || !d.is_finite() {
                    // Unbounded: the quotient is bounded by the dividend's magnitude.
                    let m = a.lo.saturating_abs().max(a.hi.saturating_abs());
                    let m = if a.lo == NEG_INF || a.hi == POS_INF {
                        POS_INF
                    } else {
                        m
                    };
                    out = out.join(&Interval::new(if m == POS_INF { NEG_INF } else { -m }, m));
                    continue;
                }
                let c = [a.lo / d.lo, a.lo / d.hi, a.hi / d.lo, a.hi / d.hi];
                out = out.join(&Interval {
                    lo: c.iter().copied().min().unwrap_or(NEG_INF),
                    hi: c.iter().copied().max().unwrap_or(POS_INF),
                });
            }
            out
        })
    }

    /// `a % b` (sign of the dividend, C11 §6.5.5).
    pub fn rem(&self, o: &Interval) -> Interval {
        Interval::lift(self, o, |a, b| {
            if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
                return if y == 0 {
                    Interval::BOTTOM
                } else {
                    Interval::constant(x % y)
                };
            }
            let m = b.lo.saturating_abs().max(b.hi.saturating_abs());
            if m == 0 {
                return Interval::BOTTOM;
            }
            let bound = if m == POS_INF || m == i128::MAX {
                POS_INF
            } else {
                m - 1
            };
            let lo = if a.lo >= 0 {
                0
            } else {
                -bound.min(a.lo.saturating_abs())
            };
            let hi = if a.hi <= 0 { 0 } else { bound.min(a.hi) };
            Interval::new(lo, hi)
        })
    }

    /// `a << b` for non-negative constant shifts below 127; otherwise unbounded.
    pub fn shl(&self, o: &Interval) -> Interval {
        Interval::lift(self, o, |a, b| match b.as_constant() {
            Some(k) if (0..127).contains(&k) => a.mul(&Interval::constant(1i128 << k)),
            _ => Interval::TOP,
        })
    }

    /// `a >> b` (arithmetic) for non-negative constant shifts; otherwise bounded by `a`'s sign.
    pub fn shr(&self, o: &Interval) -> Interval {
        Interval::lift(self, o, |a, b| match b.as_constant() {
            Some(k) if (0..127).contains(&k) => {
                let s = |x: i128| match x {
                    NEG_INF | POS_INF => x,
                    v => v >> k,
                };
                Interval {
                    lo: s(a.lo),
                    hi: s(a.hi),
                }
            }
            _ => {
                if a.lo >= 0 {
                    Interval::new(0, a.hi)
                } else if a.hi < 0 {
                    Interval::new(a.lo, -1)
                } else {
                    Interval::new(a.lo, a.hi)
                }
            }
        })
    }

    /// `a & b`: exact on constants, bounded for non-negative operands.
    pub fn bitand(&self, o: &Interval) -> Interval {
        Interval::lift(self, o, |a, b| {
            if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
                return Interval::constant(x & y);
            }
            match (a.lo >= 0, b.lo >= 0) {
                (true, true) => Interval::new(0, a.hi.min(b.hi)),
                (true, false) => Interval::new(0, a.hi),
                (false, true) => Interval::new(0, b.hi),
                _ => Interval::TOP,
            }
        })
    }

    /// `a | b` and `a ^ b`: exact on constants, bounded for non-negative operands.
    pub fn bitor(&self, o: &Interval, xor: bool) -> Interval {
        Interval::lift(self, o, |a, b| {
            if let (Some(x), Some(y)) = (a.as_constant(), b.as_constant()) {
                return Interval::constant(if xor { x ^ y } else { x | y });
            }
            if a.lo >= 0 && b.lo >= 0 && a.hi != POS_INF && b.hi != POS_INF {
                let m = a.hi.max(b.hi);
                let bits = 128 - m.leading_zeros();
                let top = if bits >= 127 {
                    POS_INF
                } else {
                    (1i128 << bits) - 1
                };
                Interval::new(if xor { 0 } else { a.lo.max(b.lo) }, top)
            } else {
                Interval::TOP
            }
        })
    }

    /// `~a` = `-a - 1`.
    pub fn bitnot(&self) -> Interval {
        self.neg().sub(&Interval::constant(1))
    }

    /// The values of `self` wrapped into the range of a `bits`-bit integer type (two's
    /// complement), over-approximated by one interval.
    pub fn wrap(&self, bits: u32, signed: bool) -> Interval {
        if self.is_bottom() || bits >= 128 {
            return *self;
        }
        let (min, max) = if signed {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        if self.lo >= min && self.hi <= max {
            return *self;
        }
        if !self.is_finite() {
            return Interval { lo: min, hi: max };
        }
        let span = 1i128 << bits;
        if self.hi - self.lo >= span - 1 {
            return Interval { lo: min, hi: max };
        }
        let w = |v: i128| {
            let m = v.rem_euclid(span);
            if signed && m > max { m - span } else { m }
        };
        let (l, h) = (w(self.lo), w(self.hi));
        if l <= h {
            Interval { lo: l, hi: h }
        } else {
            Interval { lo: min, hi: max }
        }
    }

    /// Whether `a < b` holds always, never, or sometimes.
    pub fn lt(&self, o: &Interval) -> Bool3 {
        if self.is_bottom() || o.is_bottom() {
            return Bool3::Maybe;
        }
        if self.hi < o.lo {
            Bool3::True
        } else if self.lo >= o.hi {
            Bool3::False
        } else {
            Bool3::Maybe
        }
    }

    /// Whether `a == b` holds always, never, or sometimes.
    pub fn eq3(&self, o: &Interval) -> Bool3 {
        if self.is_bottom() || o.is_bottom() {
            return Bool3::Maybe;
        }
        match (self.as_constant(), o.as_constant()) {
            (Some(x), Some(y)) if x == y => Bool3::True,
            _ if self.meet(o).is_bottom() => Bool3::False,
            _ => Bool3::Maybe,
        }
    }

    /// The values of `self` that can be `< o` for some value of `o`.
    pub fn refine_lt(&self, o: &Interval) -> Interval {
        if o.is_bottom() {
            return Interval::BOTTOM;
        }
        let hi = if o.hi == POS_INF { POS_INF } else { o.hi - 1 };
        self.meet(&Interval { lo: NEG_INF, hi })
    }

    /// The values of `self` that can be `<= o` for some value of `o`.
    pub fn refine_le(&self, o: &Interval) -> Interval {
        if o.is_bottom() {
            return Interval::BOTTOM;
        }
        self.meet(&Interval {
            lo: NEG_INF,
            hi: o.hi,
        })
    }

    /// The values of `self` that can be `> o`.
    pub fn refine_gt(&self, o: &Interval) -> Interval {
        if o.is_bottom() {
            return Interval::BOTTOM;
        }
        let lo = if o.lo == NEG_INF { NEG_INF } else { o.lo + 1 };
        self.meet(&Interval { lo, hi: POS_INF })
    }

    /// The values of `self` that can be `>= o`.
    pub fn refine_ge(&self, o: &Interval) -> Interval {
        if o.is_bottom() {
            return Interval::BOTTOM;
        }
        self.meet(&Interval {
            lo: o.lo,
            hi: POS_INF,
        })
    }

    /// The values of `self` that can differ from `o` (only a constant `o` at a bound helps).
    pub fn refine_ne(&self, o: &Interval) -> Interval {
        match o.as_constant() {
            Some(c) if self.lo == c && self.hi == c => Interval::BOTTOM,
            Some(c) if self.lo == c => Interval::new(c + 1, self.hi),
            Some(c) if self.hi == c => Interval::new(self.lo, c - 1),
            _ => *self,
        }
    }
}

impl JoinSemiLattice for Interval {
    fn join(&mut self, other: &Self) -> bool {
        let j = Interval::join(self, other);
        let changed = j != *self;
        *self = j;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn division_by_constants_is_exact() {
        let c = Interval::constant;
        assert_eq!(c(1).div(&c(2)), c(0));
        assert_eq!(c(7).div(&c(-2)), c(-3));
        assert_eq!(Interval::new(0, 9).div(&c(3)), Interval::new(0, 3));
        assert_eq!(c(5).div(&Interval::new(-1, 1)), Interval::new(-5, 5));
    }
    use proptest::prelude::*;

    fn iv() -> impl Strategy<Value = Interval> {
        prop_oneof![
            Just(Interval::BOTTOM),
            Just(Interval::TOP),
            (-1000i128..1000, 0i128..500).prop_map(|(a, w)| Interval::new(a, a + w)),
            (-1000i128..1000).prop_map(|a| Interval::new(NEG_INF, a)),
            (-1000i128..1000).prop_map(|a| Interval::new(a, POS_INF)),
        ]
    }

    proptest! {
        #[test]
        fn join_is_commutative_idempotent_and_an_upper_bound(a in iv(), b in iv()) {
            prop_assert_eq!(a.join(&b), b.join(&a));
            prop_assert_eq!(a.join(&a), a);
            prop_assert!(a.leq(&a.join(&b)) && b.leq(&a.join(&b)));
        }

        #[test]
        fn join_is_associative(a in iv(), b in iv(), c in iv()) {
            prop_assert_eq!(a.join(&b).join(&c), a.join(&b.join(&c)));
        }

        #[test]
        fn meet_is_a_lower_bound(a in iv(), b in iv()) {
            let m = a.meet(&b);
            prop_assert!(m.leq(&a) && m.leq(&b));
        }

        #[test]
        fn widening_is_an_upper_bound_and_terminates(a in iv(), b in iv(), c in iv()) {
            let w = a.widen(&a.join(&b), &[0, 1, 100]);
            prop_assert!(a.leq(&w) && b.leq(&w));
            // A second widening step with anything below stabilises.
            let w2 = w.widen(&w.join(&c), &[0, 1, 100]);
            let w3 = w2.widen(&w2.join(&c), &[0, 1, 100]);
            prop_assert_eq!(w2, w3);
        }

        #[test]
        fn narrowing_stays_between(a in iv(), b in iv()) {
            let big = a.widen(&a.join(&b), &[]);
            let n = big.narrow(&a.join(&b));
            prop_assert!(a.join(&b).leq(&n) && n.leq(&big));
        }

        #[test]
        fn arithmetic_is_sound_on_members(x in -500i128..500, y in -500i128..500, dx in 0i128..20, dy in 0i128..20) {
            let a = Interval::new(x, x + dx);
            let b = Interval::new(y, y + dy);
            for u in [x, x + dx] {
                for v in [y, y + dy] {
                    prop_assert!(a.add(&b).contains(u + v));
                    prop_assert!(a.sub(&b).contains(u - v));
                    prop_assert!(a.mul(&b).contains(u * v));
                    if v != 0 {
                        prop_assert!(a.div(&b).contains(u / v), "{:?}/{:?}", a, b);
                        prop_assert!(a.rem(&b).contains(u % v), "{:?}%{:?}", a, b);
                    }
                    if u >= 0 && v >= 0 {
                        prop_assert!(a.bitand(&b).contains(u & v));
                        prop_assert!(a.bitor(&b, false).contains(u | v));
                        prop_assert!(a.bitor(&b, true).contains(u ^ v));
                    }
                }
            }
        }

        #[test]
        fn wrapping_is_sound(x in -70000i128..70000, d in 0i128..300) {
            let a = Interval::new(x, x + d);
            for v in [x, x + d / 2, x + d] {
                let w8 = ((v as i64) as i8) as i128;
                let u16v = ((v as i64) as u16) as i128;
                prop_assert!(a.wrap(8, true).contains(w8));
                prop_assert!(a.wrap(16, false).contains(u16v));
            }
        }
    }

    #[test]
    fn comparisons_and_refinement() {
        let a = Interval::new(0, 10);
        assert_eq!(a.lt(&Interval::constant(20)), Bool3::True);
        assert_eq!(a.lt(&Interval::constant(0)), Bool3::False);
        assert_eq!(a.refine_lt(&Interval::constant(5)), Interval::new(0, 4));
        assert_eq!(a.refine_ge(&Interval::constant(5)), Interval::new(5, 10));
        assert_eq!(a.refine_ne(&Interval::constant(0)), Interval::new(1, 10));
        assert_eq!(
            Interval::new(250, 260).wrap(8, false),
            Interval::new(0, 255)
        );
        assert_eq!(Interval::new(256, 260).wrap(8, false), Interval::new(0, 4));
    }
}
