//! Evidence tiers of races: how strongly the program itself says a reported race is real
//! (issue "Reports people act on", item 2). The tier orders the text report and decides what
//! `--fail-on likely` fails on; it never changes the verdict (`no-race` still needs no race of
//! any tier).
//!
//! - [`Evidence::Certain`]: a must-race (the static must conditions of seed 001 §7, or a
//!   witness of a concrete execution).
//! - [`Evidence::Likely`]: the accesses are resolved (known objects at known offsets of one
//!   object) and either the program's own locks say the location is shared (some access of
//!   the race holds a lock on every path: Eraser's lockset discipline, Savage et al. 1997, and
//!   RacerD's "unprotected write" / "read/write race" reports, Blackshear et al. 2018), or the
//!   racing pair is two writes by unique threads without a reason to doubt they run in
//!   parallel.
//! - [`Evidence::Possible`]: the rest: accesses through unresolved pointers, imprecise offsets,
//!   several candidate objects or a heap object standing for several allocations, threads
//!   started by code the analysis does not see, and races without lock evidence.

use super::{Access, Confidence, REASONS, Race};
use crate::backend::{AccessKind, Target};
use crate::lockset::{LockKey, LockTable};
use crate::threads::ThreadGraph;

/// How strongly the program says a race is real, strongest first (so the derived order sorts
/// a report by evidence).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Evidence {
    /// A must-race.
    Certain,
    /// Resolved accesses with lock evidence, or two unique writers that may well run in
    /// parallel.
    Likely,
    /// Everything else.
    Possible,
}

impl Evidence {
    /// The name used in reports and on the command line: `certain`, `likely`, `possible`.
    pub fn as_str(self) -> &'static str {
        match self {
            Evidence::Certain => "certain",
            Evidence::Likely => "likely",
            Evidence::Possible => "possible",
        }
    }
}

/// Reasons of a may-race ([`REASONS`]) that make its location too uncertain for lock evidence
/// to count: an unresolved pointer, an imprecise offset, several possible targets, a heap
/// object standing for several allocations.
const DOUBTFUL: [&str; 4] = [REASONS[0], REASONS[1], REASONS[2], REASONS[3]];

/// Reasons of a may-race ([`REASONS`]) that doubt two writers run in parallel: the same
/// non-unique thread, not certainly parallel.
const NOT_PARALLEL: [&str; 2] = [REASONS[4], REASONS[5]];

/// The evidence tier of `race` (module documentation). `accesses` are the accesses the race's
/// indices point into, `table` names the locks of their locksets.
pub fn classify(
    race: &Race,
    accesses: &[Access<'_>],
    table: &LockTable,
    graph: &ThreadGraph,
) -> Evidence {
    if race.confidence == Confidence::Must {
        return Evidence::Certain;
    }
    if race.reasons.iter().any(|r| DOUBTFUL.contains(r)) {
        return Evidence::Possible;
    }
    let pair: Vec<&Access<'_>> = race
        .accesses
        .iter()
        .take(2)
        .filter_map(|&i| accesses.get(i))
        .collect();
    let resolved = pair.len() == 2
        && pair
            .iter()
            .all(|a| matches!(a.mem.target, Target::Addr(t) if t.exact) && a.mem.precise);
    let unseen = pair.iter().any(|a| {
        graph
            .threads
            .get(a.thread.0 as usize)
            .is_none_or(|t| t.unseen)
    });
    if !resolved || unseen {
        return Evidence::Possible;
    }
    // The program's own locks: some access of the race holds a real lock (a mutex, a
    // read/write lock, an atomic section, an instance's own lock) on every path.
    let locked = race
        .accesses
        .iter()
        .filter_map(|&i| accesses.get(i))
        .any(|a| {
            !a.inst_locks.is_empty()
                || !a.locks.sym.is_empty()
                || a.locks.must.iter().any(|h| {
                    matches!(
                        table.key(h.lock),
                        LockKey::Addr(..) | LockKey::Path(_) | LockKey::Atomic
                    )
                })
        });
    let parallel_writers = pair.iter().all(|a| {
        a.mem.kind == AccessKind::Write
            && graph
                .threads
                .get(a.thread.0 as usize)
                .is_some_and(|t| t.unique)
    }) && !race.reasons.iter().any(|r| NOT_PARALLEL.contains(r));
    if locked || parallel_writers {
        Evidence::Likely
    } else {
        Evidence::Possible
    }
}
