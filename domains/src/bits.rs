//! Dense bit sets over small index types: the representation of thread sets in the
//! active-threads analysis, where union, intersection and inclusion run on every fact join.
//!
//! A [`BitSet`] stores one bit per index in 64-bit words (no allocation up to 128 indices),
//! trimmed of trailing zero words so that equality and hashing are structural. Iteration is in
//! ascending index order (deterministic output).

use smallvec::SmallVec;
use std::marker::PhantomData;

/// A type usable as a [`BitSet`] element: a dense index from 0.
pub trait Idx: Copy {
    /// The index (0-based).
    fn index(self) -> usize;
    /// The element of an index.
    fn from_index(i: usize) -> Self;
}

/// A set of indices, one bit per index.
#[derive(Eq, PartialOrd, Ord)]
pub struct BitSet<T: Idx> {
    words: SmallVec<[u64; 2]>,
    _t: PhantomData<T>,
}

/// A copy of the words (`SmallVec`'s own clone goes element by element; the facts of the
/// active-threads analysis, six sets each, are cloned on every transfer).
impl<T: Idx> Clone for BitSet<T> {
    fn clone(&self) -> Self {
        BitSet {
            words: SmallVec::from_slice(&self.words),
            _t: PhantomData,
        }
    }
}

/// Word by word (the sets are short: a call of `memcmp`, which slice equality makes, costs
/// more than the comparison).
impl<T: Idx> PartialEq for BitSet<T> {
    fn eq(&self, o: &Self) -> bool {
        self.words.len() == o.words.len()
            && self.words.iter().zip(o.words.iter()).all(|(a, b)| a == b)
    }
}

/// The hash of the words (equal sets have equal words).
impl<T: Idx> std::hash::Hash for BitSet<T> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.words.as_slice().hash(state);
    }
}

impl<T: Idx> Default for BitSet<T> {
    fn default() -> Self {
        BitSet {
            words: SmallVec::new(),
            _t: PhantomData,
        }
    }
}

impl<T: Idx + std::fmt::Debug> std::fmt::Debug for BitSet<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl<T: Idx> BitSet<T> {
    /// The empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set of one element.
    pub fn singleton(x: T) -> Self {
        let mut s = Self::new();
        s.insert(x);
        s
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// Whether `x` is an element.
    pub fn contains(&self, x: &T) -> bool {
        let i = x.index();
        self.words
            .get(i / 64)
            .is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }

    /// Adds `x`; returns whether it was new.
    pub fn insert(&mut self, x: T) -> bool {
        let i = x.index();
        if self.words.len() <= i / 64 {
            self.words.resize(i / 64 + 1, 0);
        }
        let w = &mut self.words[i / 64];
        let bit = 1u64 << (i % 64);
        let new = *w & bit == 0;
        *w |= bit;
        new
    }

    /// Removes `x`; returns whether it was there.
    pub fn remove(&mut self, x: &T) -> bool {
        let i = x.index();
        let Some(w) = self.words.get_mut(i / 64) else {
            return false;
        };
        let bit = 1u64 << (i % 64);
        let was = *w & bit != 0;
        *w &= !bit;
        self.trim();
        was
    }

    /// The elements in ascending index order.
    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        self.words.iter().enumerate().flat_map(|(wi, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let b = w.trailing_zeros() as usize;
                w &= w - 1;
                Some(T::from_index(wi * 64 + b))
            })
        })
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &Self) -> Self {
        let mut s = self.clone();
        s.union_with(other);
        s
    }

    /// Removes every element.
    pub fn clear(&mut self) {
        self.words.clear();
    }

    /// `self ∪= other`; whether `self` changed.
    pub fn union_with(&mut self, other: &Self) -> bool {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        let mut changed = false;
        for (a, b) in self.words.iter_mut().zip(other.words.iter()) {
            let n = *a | b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &Self) -> Self {
        let mut s = self.clone();
        s.words.truncate(other.words.len());
        for (a, b) in s.words.iter_mut().zip(other.words.iter()) {
            *a &= b;
        }
        s.trim();
        s
    }

    /// Whether every element of `self` is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.words.len() <= other.words.len()
            && self
                .words
                .iter()
                .zip(other.words.iter())
                .all(|(a, b)| a & !b == 0)
    }
}

impl<T: Idx> FromIterator<T> for BitSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut s = Self::new();
        for x in iter {
            s.insert(x);
        }
        s
    }
}

impl Idx for u32 {
    fn index(self) -> usize {
        self as usize
    }
    fn from_index(i: usize) -> Self {
        i as u32
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn set(xs: &[u32]) -> BitSet<u32> {
        xs.iter().copied().collect()
    }

    proptest! {
        #[test]
        fn agrees_with_btreeset(a in proptest::collection::vec(0u32..300, 0..20),
                                b in proptest::collection::vec(0u32..300, 0..20)) {
            let (sa, sb) = (set(&a), set(&b));
            let (ta, tb): (BTreeSet<u32>, BTreeSet<u32>) =
                (a.iter().copied().collect(), b.iter().copied().collect());
            prop_assert_eq!(sa.iter().collect::<Vec<_>>(), ta.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.len(), ta.len());
            prop_assert_eq!(sa.union(&sb).iter().collect::<BTreeSet<_>>(), ta.union(&tb).copied().collect());
            prop_assert_eq!(sa.intersection(&sb).iter().collect::<BTreeSet<_>>(), ta.intersection(&tb).copied().collect());
            prop_assert_eq!(sa.is_subset(&sb), ta.is_subset(&tb));
            // Structural equality: the same elements give equal sets however they were built.
            prop_assert_eq!(sa.intersection(&sb), sb.intersection(&sa));
        }

        #[test]
        fn remove_restores_equality(a in proptest::collection::vec(0u32..200, 0..10), x in 0u32..400) {
            let s = set(&a);
            let mut t = s.clone();
            let fresh = t.insert(x);
            if fresh {
                prop_assert!(t.remove(&x));
                prop_assert_eq!(t, s);
            }
        }
    }
}
