//! Witnessed races applied to the static race result: a static race whose accesses include
//! both sides of a witness (same statement, same kind, a base and byte range the concrete
//! object lies in) becomes a must-race listing the witnessed accesses, with a note saying how
//! it was witnessed. Witnesses no static race explains are returned: the static analysis
//! missed a race there.

use super::memory::Origin;
use super::{Witness, WitnessAccess};
use crate::backend::{AccessKind, Base, ByteRange, Target};
use crate::ir::Program;
use crate::races::{Access, Confidence, Race, RaceResult};
use rustc_hash::FxHashSet;

/// Whether static access `a` may be the concrete access `w` of program `p`.
pub fn access_matches(p: &Program, a: &Access<'_>, w: &WitnessAccess) -> bool {
    if a.func != w.func
        || !same_statement(p, a.func, a.edge, w.edge)
        || (a.mem.kind == AccessKind::Write) != w.write
    {
        return false;
    }
    match a.mem.target {
        Target::Typed(_) => true,
        Target::Addr(ad) => {
            base_matches(ad.base, w.origin)
                && ad.range.overlaps(&ByteRange {
                    lo: w.lo,
                    hi: w.hi.max(w.lo + 1),
                })
        }
    }
}

/// Whether edges `x` and `y` of `func` are one statement: the same edge, or the two branches
/// of one condition (the race search keeps one of a condition's identical reads, an execution
/// reads it on the branch it takes).
fn same_statement(
    p: &Program,
    func: crate::ir::FuncId,
    x: crate::ir::EdgeId,
    y: crate::ir::EdgeId,
) -> bool {
    if x == y {
        return true;
    }
    let Some(cfg) = &p.function(func).body else {
        return false;
    };
    match (cfg.edges.get(x.0 as usize), cfg.edges.get(y.0 as usize)) {
        (Some(a), Some(b)) => {
            a.src == b.src
                && matches!(a.op, crate::ir::Op::Assume { .. })
                && matches!(b.op, crate::ir::Op::Assume { .. })
        }
        _ => false,
    }
}

/// Whether a static base stands for concrete objects of this origin.
fn base_matches(b: Base, o: Origin) -> bool {
    match (b, o) {
        (Base::Global(g), Origin::Global(h)) => g == h,
        (Base::Local { func, local, .. }, Origin::Local { func: f, local: l }) => {
            func == f && local == l
        }
        (Base::Heap { func, edge, .. }, Origin::Heap { func: f, edge: e }) => {
            func == f && edge == e
        }
        _ => false,
    }
}

/// The static races a witness confirms (indices into `races.races`).
pub fn matching_races(p: &Program, races: &RaceResult<'_>, w: &Witness) -> Vec<usize> {
    races
        .races
        .iter()
        .enumerate()
        .filter(|(_, r)| {
            r.accesses
                .iter()
                .any(|&i| access_matches(p, &races.accesses[i], &w.first))
                && r.accesses
                    .iter()
                    .any(|&i| access_matches(p, &races.accesses[i], &w.second))
        })
        .map(|(i, _)| i)
        .collect()
}

/// The note of a witnessed race.
pub fn describe(p: &Program, w: &Witness) -> String {
    let side = |a: &WitnessAccess| {
        let loc = p.function(a.func).edge_loc(a.edge);
        format!(
            "thread {} ({}) about to {} at line {}",
            a.thread,
            p.function(a.entry).name,
            if a.write { "write" } else { "read" },
            loc.line
        )
    };
    format!(
        "witnessed by a concrete execution: {} while {}; {}",
        side(&w.first),
        side(&w.second),
        w.run
    )
}

/// Upgrades the static races the witnesses confirm to must-races; returns the witnesses no
/// static race explains.
pub fn apply(p: &Program, races: &mut RaceResult<'_>, witnesses: &[Witness]) -> Vec<Witness> {
    let mut unexplained = Vec::new();
    let mut per_race: Vec<Vec<&Witness>> = vec![Vec::new(); races.races.len()];
    for w in witnesses {
        let m = matching_races(p, races, w);
        if m.is_empty() {
            unexplained.push(w.clone());
        }
        for i in m {
            per_race[i].push(w);
        }
    }
    let mut out: Vec<Race> = Vec::new();
    for (r, ws) in races.races.drain(..).zip(per_race) {
        if ws.is_empty() {
            out.push(r);
            continue;
        }
        let note = describe(p, ws[0]);
        if r.confidence == Confidence::Must {
            out.push(Race {
                witness: Some(note),
                ..r
            });
            continue;
        }
        // The witnessed accesses, the first witness's pair first.
        let find = |a: &WitnessAccess| {
            r.accesses
                .iter()
                .copied()
                .find(|&i| access_matches(p, &races.accesses[i], a))
        };
        let (Some(x), Some(y)) = (find(&ws[0].first), find(&ws[0].second)) else {
            out.push(r);
            continue;
        };
        let mut acc = vec![x, y];
        let mut seen: FxHashSet<usize> = acc.iter().copied().collect();
        for &i in &r.accesses {
            let a = &races.accesses[i];
            if ws
                .iter()
                .any(|w| access_matches(p, a, &w.first) || access_matches(p, a, &w.second))
                && seen.insert(i)
            {
                acc.push(i);
            }
        }
        let rest = r.accesses.iter().any(|i| !seen.contains(i));
        out.push(Race {
            confidence: Confidence::Must,
            accesses: acc,
            reasons: Vec::new(),
            witness: Some(note),
        });
        if rest {
            out.push(r);
        }
    }
    out.sort_by_key(|r| {
        (
            r.confidence,
            r.accesses.iter().map(|&i| races.accesses[i].loc).min(),
            r.accesses.clone(),
        )
    });
    races.races = out;
    unexplained
}
