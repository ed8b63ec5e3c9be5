//! Bounded powersets: a disjunction of facts, one per class of paths (the domain of the
//! path-sensitive lockset and active-threads analyses, seed 001 §6.1).
//!
//! A [`Powerset`] keeps up to `cap` distinct facts; beyond that, all facts are folded into one
//! with [`Merge::merge`], which must over-approximate them. Joins are unions, so the domain has
//! finite height when the facts do, and the cap bounds the work.

use crate::lattice::JoinSemiLattice;

/// Facts that can be folded into one over-approximating fact.
pub trait Merge: Sized {
    /// One fact covering all of `facts` (non-empty).
    fn merge(facts: &[&Self]) -> Self;

    /// Whether `self` covers `other` (every path `other` describes, `self` describes too).
    /// Defaults to equality; a real order keeps merged sets from growing back.
    fn covers(&self, other: &Self) -> bool;
}

/// A set of at most `cap` facts (bottom: empty).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Powerset<F> {
    facts: Vec<F>,
}

impl<F> Default for Powerset<F> {
    fn default() -> Self {
        Powerset { facts: Vec::new() }
    }
}

/// Facts per set before folding.
pub const CAP: usize = 16;

impl<F: Clone + PartialEq + Merge> Powerset<F> {
    /// The empty set.
    pub fn bottom() -> Self {
        Powerset { facts: Vec::new() }
    }

    /// The set of one fact.
    pub fn singleton(f: F) -> Self {
        Powerset { facts: vec![f] }
    }

    /// Releases spare room (for sets kept for long).
    pub fn shrink_to_fit(&mut self) {
        self.facts.shrink_to_fit();
    }

    /// The facts.
    pub fn facts(&self) -> &[F] {
        &self.facts
    }

    /// Whether there is no fact (unreachable).
    pub fn is_bottom(&self) -> bool {
        self.facts.is_empty()
    }

    /// Adds a fact unless a fact of the set covers it (dropping the facts it covers); returns
    /// whether the set changed.
    pub fn insert(&mut self, f: F) -> bool {
        if self.facts.iter().any(|g| g.covers(&f)) {
            return false;
        }
        self.facts.retain(|g| !f.covers(g));
        if self.facts.capacity() == 0 {
            // Most sets hold one fact: no room for more until needed.
            self.facts.reserve_exact(1);
        }
        self.facts.push(f);
        if self.facts.len() > CAP {
            let all: Vec<&F> = self.facts.iter().collect();
            let m = F::merge(&all);
            self.facts = vec![m];
        }
        true
    }

    /// Whether every fact of `self` is covered by a fact of `o`.
    pub fn leq(&self, o: &Self) -> bool {
        self.facts
            .iter()
            .all(|f| o.facts.iter().any(|g| g.covers(f)))
    }
}

impl<F: Clone + PartialEq + Merge> JoinSemiLattice for Powerset<F> {
    fn join(&mut self, other: &Self) -> bool {
        let mut changed = false;
        for f in &other.facts {
            changed |= self.insert(f.clone());
        }
        changed
    }
}

impl<F: Clone + PartialEq + Merge> FromIterator<F> for Powerset<F> {
    fn from_iter<I: IntoIterator<Item = F>>(iter: I) -> Self {
        let mut p = Powerset::bottom();
        for f in iter {
            p.insert(f);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Facts: (must ⊆ may) pairs of small bit sets, merged by ∩ / ∪.
    #[derive(Clone, Debug, PartialEq)]
    struct F(u8, u8);

    impl Merge for F {
        fn merge(facts: &[&Self]) -> Self {
            facts
                .iter()
                .fold(F(0xff, 0), |a, f| F(a.0 & f.0, a.1 | f.1))
        }

        fn covers(&self, o: &Self) -> bool {
            self.0 & o.0 == self.0 && o.1 & self.1 == o.1
        }
    }

    proptest! {
        #[test]
        fn join_is_an_upper_bound_up_to_merging(xs in proptest::collection::vec(any::<u8>(), 0..40)) {
            let mut p: Powerset<F> = Powerset::bottom();
            for x in &xs {
                p.insert(F(*x, *x));
            }
            prop_assert!(p.facts().len() <= CAP);
            // Every inserted fact is covered by some fact of the set.
            for x in &xs {
                prop_assert!(p.facts().iter().any(|f| f.0 & x == f.0 && f.1 & x == *x));
            }
        }

        #[test]
        fn repeated_joins_terminate(xs in proptest::collection::vec(any::<u8>(), 0..60)) {
            // Inserting every fact again after the set has merged changes nothing.
            let mut p: Powerset<F> = Powerset::bottom();
            for x in &xs {
                p.insert(F(*x, *x));
            }
            let before = p.clone();
            for x in &xs {
                prop_assert!(!p.insert(F(*x, *x)));
            }
            prop_assert_eq!(p, before);
        }

        #[test]
        fn join_twice_changes_nothing(xs in proptest::collection::vec(any::<u8>(), 0..10)) {
            let a: Powerset<F> = xs.iter().map(|x| F(*x, *x)).collect();
            let mut b = a.clone();
            prop_assert!(!b.join(&a));
            prop_assert!(a.leq(&b));
        }
    }
}
