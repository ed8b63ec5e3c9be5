//! Abstract values: an integer interval and a points-to set, with flags.
//!
//! A [`Value`] over-approximates the C values an expression may have: integers in
//! [`Value::int`], addresses in [`Value::ptr`] (bases of type `B` with byte-offset intervals),
//! possibly null, possibly an unknown address. Both components are kept through casts between
//! integers and pointers, so `(void *)i` and back keeps `i`'s interval.

use crate::interval::Interval;
use crate::lattice::JoinSemiLattice;
use smallvec::SmallVec;

/// Bases per points-to set before it becomes "unknown address".
pub const MAX_TARGETS: usize = 8;

/// A points-to set: addresses (base + byte-offset interval), null, or unknown.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Ptr<B: Ord + Copy> {
    targets: SmallVec<[(B, Interval); 2]>,
    /// May be the null pointer.
    pub null: bool,
    /// May be an address nothing is known about.
    pub unknown: bool,
}

impl<B: Ord + Copy> Default for Ptr<B> {
    fn default() -> Self {
        Ptr {
            targets: SmallVec::new(),
            null: false,
            unknown: false,
        }
    }
}

impl<B: Ord + Copy> Ptr<B> {
    /// The empty set (no pointer value).
    pub fn none() -> Self {
        Ptr::default()
    }

    /// Any address.
    pub fn unknown() -> Self {
        Ptr {
            targets: SmallVec::new(),
            null: true,
            unknown: true,
        }
    }

    /// The address `base + offset`.
    pub fn to(base: B, offset: Interval) -> Self {
        let mut targets = SmallVec::new();
        targets.push((base, offset));
        Ptr {
            targets,
            null: false,
            unknown: false,
        }
    }

    /// The null pointer.
    pub fn null() -> Self {
        Ptr {
            targets: SmallVec::new(),
            null: true,
            unknown: false,
        }
    }

    /// The known targets, sorted by base.
    pub fn targets(&self) -> &[(B, Interval)] {
        &self.targets
    }

    /// Whether nothing is in the set.
    pub fn is_empty(&self) -> bool {
        self.targets.is_empty() && !self.null && !self.unknown
    }

    /// Adds a target (joining offsets of an existing base); too many make it unknown.
    pub fn add(&mut self, base: B, off: Interval) {
        if off.is_bottom() {
            return;
        }
        match self.targets.binary_search_by(|(b, _)| b.cmp(&base)) {
            Ok(i) => self.targets[i].1 = self.targets[i].1.join(&off),
            Err(i) => {
                if self.targets.len() >= MAX_TARGETS {
                    self.unknown = true;
                    self.targets.clear();
                } else if !self.unknown {
                    self.targets.insert(i, (base, off));
                }
            }
        }
    }

    /// Union of two sets.
    pub fn join(&self, o: &Self) -> Self {
        let mut r = self.clone();
        r.null |= o.null;
        r.unknown |= o.unknown;
        if r.unknown {
            r.targets.clear();
            return r;
        }
        for (b, off) in &o.targets {
            r.add(*b, *off);
        }
        r
    }

    /// Whether `self ⊆ o`.
    pub fn leq(&self, o: &Self) -> bool {
        if o.unknown {
            return !self.null || o.null;
        }
        if self.unknown || (self.null && !o.null) {
            return false;
        }
        self.targets
            .iter()
            .all(|(b, off)| o.targets.iter().any(|(ob, ooff)| ob == b && off.leq(ooff)))
    }

    /// Widening of offsets (bases are finitely many).
    pub fn widen(&self, next: &Self, thresholds: &[i128]) -> Self {
        let mut r = self.join(next);
        for (b, off) in r.targets.iter_mut() {
            if let Some((_, old)) = self.targets.iter().find(|(ob, _)| ob == b) {
                *off = old.widen(off, thresholds);
            }
        }
        r
    }

    /// Narrowing of offsets.
    pub fn narrow(&self, next: &Self) -> Self {
        let mut r = self.clone();
        for (b, off) in r.targets.iter_mut() {
            if let Some((_, n)) = next.targets.iter().find(|(nb, _)| nb == b) {
                *off = off.narrow(n);
            }
        }
        r
    }

    /// Every target's offset shifted by `delta` bytes.
    pub fn offset_by(&self, delta: &Interval) -> Self {
        let mut r = self.clone();
        for (_, off) in r.targets.iter_mut() {
            *off = off.add(delta);
        }
        r.targets.retain(|(_, o)| !o.is_bottom());
        r
    }

    /// Keeps the targets for which `f` holds.
    pub fn retain(&mut self, f: impl FnMut(&(B, Interval)) -> bool) {
        let mut f = f;
        self.targets.retain(|t| f(t));
    }
}

/// An abstract C value.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Value<B: Ord + Copy> {
    /// Possible integer values (also the numeric value of integer-valued pointers).
    pub int: Interval,
    /// Possible addresses.
    pub ptr: Ptr<B>,
}

impl<B: Ord + Copy> Value<B> {
    /// No value (unreachable).
    pub fn bottom() -> Self {
        Value {
            int: Interval::BOTTOM,
            ptr: Ptr::none(),
        }
    }

    /// Any value.
    pub fn top() -> Self {
        Value {
            int: Interval::TOP,
            ptr: Ptr::unknown(),
        }
    }

    /// An integer in `i`.
    pub fn int(i: Interval) -> Self {
        Value {
            int: i,
            ptr: Ptr::none(),
        }
    }

    /// The address `base + offset`.
    pub fn address(base: B, offset: Interval) -> Self {
        Value {
            int: Interval::BOTTOM,
            ptr: Ptr::to(base, offset),
        }
    }

    /// Whether there is no value.
    pub fn is_bottom(&self) -> bool {
        self.int.is_bottom() && self.ptr.is_empty()
    }

    /// Least upper bound.
    pub fn join(&self, o: &Self) -> Self {
        Value {
            int: self.int.join(&o.int),
            ptr: self.ptr.join(&o.ptr),
        }
    }

    /// Whether `self ⊑ o`.
    pub fn leq(&self, o: &Self) -> bool {
        self.int.leq(&o.int) && self.ptr.leq(&o.ptr)
    }

    /// Widening.
    pub fn widen(&self, next: &Self, thresholds: &[i128]) -> Self {
        Value {
            int: self.int.widen(&next.int, thresholds),
            ptr: self.ptr.widen(&next.ptr, thresholds),
        }
    }

    /// Narrowing.
    pub fn narrow(&self, next: &Self) -> Self {
        Value {
            int: self.int.narrow(&next.int),
            ptr: self.ptr.narrow(&next.ptr),
        }
    }

    /// The value read as an integer: its integers, null as 0, any address as unknown.
    pub fn as_int(&self) -> Interval {
        let mut i = self.int;
        if self.ptr.null {
            i = i.join(&Interval::constant(0));
        }
        if self.ptr.unknown || !self.ptr.targets().is_empty() {
            i = Interval::TOP;
        }
        i
    }

    /// The value read as a pointer: its addresses, a possible integer 0 as null, other
    /// integers as unknown addresses.
    pub fn as_ptr(&self) -> Ptr<B> {
        let mut p = self.ptr.clone();
        if !self.int.is_bottom() {
            if self.int.contains(0) {
                p.null = true;
            }
            if self.int.as_constant() != Some(0) {
                p.unknown = true;
                p.targets.clear();
            }
        }
        p
    }
}

impl<B: Ord + Copy> JoinSemiLattice for Value<B> {
    fn join(&mut self, other: &Self) -> bool {
        let j = Value::join(self, other);
        let changed = j != *self;
        *self = j;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn val() -> impl Strategy<Value = Value<u8>> {
        let iv = prop_oneof![
            Just(Interval::BOTTOM),
            Just(Interval::TOP),
            (-50i128..50, 0i128..20).prop_map(|(a, w)| Interval::new(a, a + w)),
        ];
        let ptr = prop_oneof![
            Just(Ptr::none()),
            Just(Ptr::null()),
            Just(Ptr::unknown()),
            (0u8..12, 0i128..16).prop_map(|(b, o)| Ptr::to(b, Interval::new(o, o + 4))),
            proptest::collection::vec((0u8..12, 0i128..8), 0..12).prop_map(|v| {
                let mut p = Ptr::none();
                for (b, o) in v {
                    p.add(b, Interval::constant(o));
                }
                p
            }),
        ];
        (iv, ptr).prop_map(|(int, ptr)| Value { int, ptr })
    }

    proptest! {
        #[test]
        fn value_join_laws(a in val(), b in val(), c in val()) {
            prop_assert!(a.leq(&a.join(&b)) && b.leq(&a.join(&b)));
            prop_assert!(a.join(&b).leq(&b.join(&a)) && b.join(&a).leq(&a.join(&b)));
            prop_assert!(a.join(&a).leq(&a) && a.leq(&a.join(&a)));
            let l = a.join(&b).join(&c);
            let r = a.join(&b.join(&c));
            prop_assert!(l.leq(&r) && r.leq(&l));
        }

        #[test]
        fn value_widening_is_upper_bound(a in val(), b in val()) {
            let w = a.widen(&a.join(&b), &[0]);
            prop_assert!(a.leq(&w) && b.leq(&w));
        }
    }

    #[test]
    fn pointer_sets_cap_to_unknown() {
        let mut p: Ptr<u32> = Ptr::none();
        for b in 0..(MAX_TARGETS as u32 + 1) {
            p.add(b, Interval::constant(0));
        }
        assert!(p.unknown && p.targets().is_empty());
    }

    #[test]
    fn integer_pointer_round_trip_keeps_the_integer() {
        let v: Value<u32> = Value::int(Interval::new(0, 3));
        let as_ptr = Value {
            int: v.int,
            ptr: v.as_ptr(),
        };
        assert!(as_ptr.ptr.null && as_ptr.ptr.unknown);
        assert_eq!(as_ptr.int, Interval::new(0, 3));
    }
}
