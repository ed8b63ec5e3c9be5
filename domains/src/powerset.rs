//! Bounded powersets: a disjunction of facts, one per class of paths (the domain of the
//! path-sensitive lockset and active-threads analyses, seed 001 §6.1).
//!
//! A [`Powerset`] keeps up to `cap` distinct facts; beyond that, groups of similar facts
//! ([`Merge::similar`]) are folded into one each with [`Merge::merge`], which must
//! over-approximate them (all facts into one when every grouping leaves too many). Joins are
//! unions, so the domain has finite height when the facts do, and the cap bounds the work.

use crate::lattice::JoinSemiLattice;

/// Facts that can be folded into one over-approximating fact.
pub trait Merge: Sized {
    /// One fact covering all of `facts` (non-empty).
    fn merge(facts: &[&Self]) -> Self;

    /// Whether `self` covers `other` (every path `other` describes, `self` describes too).
    /// Defaults to equality; a real order keeps merged sets from growing back.
    fn covers(&self, other: &Self) -> bool;

    /// Whether `self` covers `other` once widening is on: like [`Merge::covers`], but free
    /// to forget what a fold forgets, which the plain order may keep apart for precision:
    /// *under*-approximate claims (a path certainly feasible: [`Merge::merge`] of a certain
    /// and an uncertain fact is uncertain) and exact forms a fold coarsens. Under the plain
    /// order a fold need not cover the very facts it folded, and a fact arriving again
    /// around a loop would be re-inserted and re-folded forever; [`Powerset::widen`], which
    /// skips the facts this order covers, terminates when [`Merge::merge`] covers its inputs
    /// in it (and the facts have finite height). Defaults to `covers`.
    fn covers_widened(&self, other: &Self) -> bool {
        self.covers(other)
    }

    /// Whether `self` and `other` may be folded together, at a grouping `level`, when a set
    /// exceeds its bound: the set folds each group of the finest level that leaves at most
    /// [`CAP`] groups (levels 0, 1, 2, ..., up to [`GROUP_LEVELS`]), and everything into one
    /// fact when none does. Defaults to one group at every level.
    fn similar(&self, _other: &Self, _level: u8) -> bool {
        true
    }

    /// Whether path edges pairing these facts with their entry facts keep different entries
    /// apart (an entry fact covering another does not stand for it): more precise returns
    /// from shared callee contexts, more facts. Read by the fixpoint engine's path edges.
    const STRICT_ENTRIES: bool = false;
}

/// Grouping levels tried before all facts fold into one ([`Merge::similar`]).
pub const GROUP_LEVELS: u8 = 3;

/// `facts` in groups of facts similar at `level` (each group similar to its first fact).
fn groups<F: Merge>(facts: &[F], level: u8) -> Vec<Vec<&F>> {
    let mut out: Vec<Vec<&F>> = Vec::new();
    for f in facts {
        match out.iter_mut().find(|g| g[0].similar(f, level)) {
            Some(g) => g.push(f),
            None => out.push(vec![f]),
        }
    }
    out
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

    /// The empty set, with room for `n` facts before it reallocates.
    pub fn with_capacity(n: usize) -> Self {
        Powerset {
            facts: Vec::with_capacity(n.min(CAP + 1)),
        }
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
        if self.covered(&f) {
            return false;
        }
        self.insert_uncovered(f);
        true
    }

    /// Whether a fact of the set covers `f`.
    fn covered(&self, f: &F) -> bool {
        self.facts.iter().any(|g| g.covers(f))
    }

    /// Adds `f`, which no fact of the set covers (dropping the facts it covers, folding when
    /// the set grows past [`CAP`]).
    fn insert_uncovered(&mut self, f: F) {
        self.facts.retain(|g| !f.covers(g));
        if self.facts.capacity() == 0 {
            // Most sets hold one fact: no room for more until needed.
            self.facts.reserve_exact(1);
        }
        self.facts.push(f);
        if self.facts.len() > CAP {
            let folded = (0..GROUP_LEVELS)
                .map(|level| groups(&self.facts, level))
                .find(|gs| gs.len() <= CAP)
                .map(|gs| gs.iter().map(|g| F::merge(g)).collect::<Vec<F>>());
            self.facts = match folded {
                Some(fs) => fs,
                None => {
                    let all: Vec<&F> = self.facts.iter().collect();
                    vec![F::merge(&all)]
                }
            };
        }
    }

    /// `self ∇= o`: adds the facts of `o` that no fact of `self` covers in the widening
    /// order ([`Merge::covers_widened`]), folding past [`CAP`]; whether the set changed.
    pub fn widen(&mut self, o: &Self) -> bool {
        self.add_uncovered(o, F::covers_widened)
    }

    /// Adds the facts of `o` that no fact of `self` covers by `covers` (the facts already
    /// covered, most once a fixpoint nears, are not cloned); whether the set changed.
    fn add_uncovered(&mut self, o: &Self, covers: impl Fn(&F, &F) -> bool) -> bool {
        let mut changed = false;
        for f in &o.facts {
            if !self.facts.iter().any(|g| covers(g, f)) {
                self.insert_uncovered(f.clone());
                changed = true;
            }
        }
        changed
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
        self.add_uncovered(other, F::covers)
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
