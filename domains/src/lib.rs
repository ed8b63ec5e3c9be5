#![warn(missing_docs)]
//! racedar-domains: the abstract domains (lattices) of racedar's analyses.
//!
//! This crate knows nothing about C: it holds lattices only (intervals, offsets, abstract
//! addresses, points-to sets, values, abstract states, locksets, thread sets), each with its
//! join, meet, order, widening and narrowing, tested for the lattice laws (proptest):
//! [`interval`] (integers and byte offsets), [`value`] (integer × points-to values over an
//! opaque base type), [`set`] (small sorted sets: locksets), [`bits`] (dense bit sets: thread sets), [`powerset`] (bounded
//! disjunctions of facts). [`lattice`] defines the interface they implement.

pub mod bits;
pub mod interval;
pub mod lattice;
pub mod powerset;
pub mod set;
pub mod value;

pub use bits::{BitSet, Idx};
pub use interval::{Bool3, Interval};
pub use powerset::{Merge, Powerset};
pub use set::SmallSet;
pub use value::{Ptr, Value};
