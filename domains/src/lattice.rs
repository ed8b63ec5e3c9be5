//! The lattice interface shared by every domain (after rustc's `JoinSemiLattice`).

/// A join semi-lattice: a partial order with a least upper bound of any two elements.
pub trait JoinSemiLattice: Clone + PartialEq {
    /// Replaces `self` with the join of `self` and `other`; returns whether `self` changed.
    fn join(&mut self, other: &Self) -> bool;

    /// Whether `self` is below or equal to `other` in the order.
    fn leq(&self, other: &Self) -> bool {
        let mut j = other.clone();
        !j.join(self)
    }
}

#[cfg(test)]
mod tests {
    use super::JoinSemiLattice;

    /// The two-point lattice false < true.
    #[derive(Clone, PartialEq, Debug)]
    struct Flag(bool);

    impl JoinSemiLattice for Flag {
        fn join(&mut self, other: &Self) -> bool {
            let old = self.0;
            self.0 |= other.0;
            self.0 != old
        }
    }

    #[test]
    fn leq_follows_join() {
        assert!(Flag(false).leq(&Flag(true)));
        assert!(!Flag(true).leq(&Flag(false)));
        assert!(Flag(true).leq(&Flag(true)));
    }
}
