#![warn(missing_docs)]
//! racedar-domains: the abstract domains (lattices) of racedar's analyses.
//!
//! This crate knows nothing about C: it holds lattices only (intervals, offsets, abstract
//! addresses, points-to sets, values, abstract states, locksets, thread sets), each with its
//! join, meet, order, widening and narrowing, tested for the lattice laws. The lattices arrive
//! with the value-analysis backend; [`lattice`] defines the interface they implement.

pub mod lattice;
pub mod set;

pub use set::SmallSet;
