//! Concrete-execution race witnesses: the under-approximation behind a `race` verdict that the
//! static analysis alone cannot give (DESIGN.md: "`race` only from a must-race of an
//! under-approximating run").
//!
//! A concrete interpreter of the IR ([`interp`]) runs the whole program — memory as bytes at
//! concrete addresses ([`memory`]), C arithmetic ([`value`]), POSIX and C library models
//! ([`library`], [`sync`]) — under deterministic schedules and deterministic values for
//! nondeterministic inputs. A happens-before detector ([`race`]) proposes pairs of unordered
//! conflicting accesses, and the explorer ([`explore`]) keeps only those it *witnesses*: a
//! reachable state in which two threads are both about to make the conflicting accesses.
//!
//! Everything an execution does is a real behaviour of the program: anything the model does
//! not understand or that is undefined behaviour ([`Stop`]) ends the execution, and nothing
//! after that point is claimed. The pipeline (`crate::pipeline`) turns witnessed races into
//! must-races.

pub mod explore;
pub mod interp;
pub mod library;
pub mod memory;
pub mod race;
pub mod sync;
pub mod upgrade;
pub mod value;
mod varargs;

pub use explore::{Budget, Goals, Reached, Stmt, reached, search};

use crate::ir::{EdgeId, FuncId};
use memory::Origin;

/// Why an execution cannot go on: undefined behaviour or something the model does not know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stop {
    /// What happened, in a few words.
    pub reason: &'static str,
}

impl Stop {
    /// A stop for `reason`.
    pub fn new(reason: &'static str) -> Stop {
        Stop { reason }
    }
}

/// How an execution chooses the values of `__VERIFIER_nondet_*` and `rand`: every thread
/// has its own sequence, so replaying a schedule replays the values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NondetPlan {
    /// Always this value.
    Const(i64),
    /// Pseudo-random values in `lo .. lo + span` (seeded, per thread and draw).
    Random {
        /// Seed.
        seed: u64,
        /// Smallest value.
        lo: i64,
        /// Number of values.
        span: u64,
    },
}

impl NondetPlan {
    /// The `n`-th value drawn by thread `t`.
    pub fn value(self, t: u64, n: u64) -> i128 {
        match self {
            NondetPlan::Const(c) => c as i128,
            NondetPlan::Random { seed, lo, span } => {
                // splitmix64 of (seed, thread, draw).
                let mut z = seed
                    .wrapping_add(t.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                    .wrapping_add(n.wrapping_mul(0xBF58_476D_1CE4_E5B9));
                z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
                z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
                z ^= z >> 31;
                lo as i128 + (z % span.max(1)) as i128
            }
        }
    }

    /// A short description for reports.
    pub fn describe(self) -> String {
        match self {
            NondetPlan::Const(c) => format!("all {c}"),
            NondetPlan::Random { seed, lo, span } => format!(
                "pseudo-random in [{lo}, {}] (seed {seed})",
                lo + span as i64 - 1
            ),
        }
    }
}

/// One side of a witnessed race.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WitnessAccess {
    /// The thread (0 runs `main`; others in creation order).
    pub thread: usize,
    /// The thread's entry function.
    pub entry: FuncId,
    /// The function of the statement.
    pub func: FuncId,
    /// The statement.
    pub edge: EdgeId,
    /// A write (else a read).
    pub write: bool,
    /// An atomic access.
    pub atomic: bool,
    /// The object.
    pub origin: Origin,
    /// First byte in the object.
    pub lo: u64,
    /// One past the last byte.
    pub hi: u64,
}

/// A witnessed race: a reachable state in which two threads are about to make these
/// conflicting accesses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Witness {
    /// The access of the thread that was held back.
    pub first: WitnessAccess,
    /// The access of the thread that reached it.
    pub second: WitnessAccess,
    /// The execution that found it (schedule and nondeterministic values).
    pub run: String,
}
