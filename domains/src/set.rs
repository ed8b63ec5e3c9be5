//! Small ordered sets: the representation of locksets and thread sets.
//!
//! A [`SmallSet`] keeps its elements sorted in a small vector (no allocation up to four
//! elements), so equality and hashing are structural and cheap, union and intersection are
//! linear merges, and iteration is in ascending order (deterministic output).

use smallvec::SmallVec;

/// A sorted set of `Copy` elements, ordered by `Ord`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SmallSet<T: Ord + Copy>(SmallVec<[T; 4]>);

impl<T: Ord + Copy> Default for SmallSet<T> {
    fn default() -> Self {
        SmallSet(SmallVec::new())
    }
}

impl<T: Ord + Copy> SmallSet<T> {
    /// The empty set.
    pub fn new() -> Self {
        SmallSet(SmallVec::new())
    }

    /// The set of one element.
    pub fn singleton(x: T) -> Self {
        let mut v = SmallVec::new();
        v.push(x);
        SmallSet(v)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `x` is an element.
    pub fn contains(&self, x: &T) -> bool {
        self.0.binary_search(x).is_ok()
    }

    /// Adds `x`; returns whether it was new.
    pub fn insert(&mut self, x: T) -> bool {
        match self.0.binary_search(&x) {
            Ok(_) => false,
            Err(i) => {
                self.0.insert(i, x);
                true
            }
        }
    }

    /// Removes `x`; returns whether it was there.
    pub fn remove(&mut self, x: &T) -> bool {
        match self.0.binary_search(x) {
            Ok(i) => {
                self.0.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Keeps the elements for which `f` holds.
    pub fn retain(&mut self, f: impl FnMut(&mut T) -> bool) {
        self.0.retain(f);
    }

    /// The elements in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = &T> + '_ {
        self.0.iter()
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &Self) -> Self {
        let mut out = SmallVec::with_capacity(self.len() + other.len());
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            match self.0[i].cmp(&other.0[j]) {
                std::cmp::Ordering::Less => {
                    out.push(self.0[i]);
                    i += 1;
                }
                std::cmp::Ordering::Greater => {
                    out.push(other.0[j]);
                    j += 1;
                }
                std::cmp::Ordering::Equal => {
                    out.push(self.0[i]);
                    i += 1;
                    j += 1;
                }
            }
        }
        out.extend_from_slice(&self.0[i..]);
        out.extend_from_slice(&other.0[j..]);
        SmallSet(out)
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &Self) -> Self {
        let mut out = SmallVec::new();
        let (mut i, mut j) = (0, 0);
        while i < self.0.len() && j < other.0.len() {
            match self.0[i].cmp(&other.0[j]) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    out.push(self.0[i]);
                    i += 1;
                    j += 1;
                }
            }
        }
        SmallSet(out)
    }

    /// Whether every element of `self` is in `other`.
    pub fn is_subset(&self, other: &Self) -> bool {
        self.iter().all(|x| other.contains(x))
    }
}

impl<T: Ord + Copy> FromIterator<T> for SmallSet<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut v: SmallVec<[T; 4]> = iter.into_iter().collect();
        v.sort_unstable();
        v.dedup();
        SmallSet(v)
    }
}

impl<T: Ord + Copy> crate::lattice::JoinSemiLattice for SmallSet<T> {
    fn join(&mut self, other: &Self) -> bool {
        let u = self.union(other);
        let changed = u.len() != self.len();
        *self = u;
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lattice::JoinSemiLattice;

    #[test]
    fn set_operations() {
        let a: SmallSet<u32> = [3, 1, 2, 3].into_iter().collect();
        let b: SmallSet<u32> = [2, 5].into_iter().collect();
        assert_eq!(a.iter().copied().collect::<Vec<_>>(), vec![1, 2, 3]);
        assert_eq!(
            a.union(&b).iter().copied().collect::<Vec<_>>(),
            vec![1, 2, 3, 5]
        );
        assert_eq!(
            a.intersection(&b).iter().copied().collect::<Vec<_>>(),
            vec![2]
        );
        assert!(SmallSet::singleton(2).is_subset(&a));
        let mut c = a.clone();
        assert!(c.join(&b));
        assert!(!c.join(&b));
        assert!(a.leq(&c));
    }
}
