//! The lock-order graph and its cycles (`notes/deadlock.md` §2: DeadlockF 2021 searches all
//! elementary cycles and keeps those with one trace per edge whose edges may run concurrently).
//!
//! Nodes are locks; an edge `l1 → l2` carries the traces (one per thread, acquisition and held
//! acquisition) of acquiring `l2` while holding `l1`. Strongly connected components (petgraph's
//! Tarjan) bound the search; inside each, elementary cycles are enumerated by depth-first search
//! from their smallest lock (each cycle once), up to [`MAX_CYCLE_LEN`] locks and
//! [`MAX_CYCLES`] cycles. For each cycle a backtracking search picks one trace per edge such
//! that every pair of picked traces is compatible (the caller's test: different instances,
//! possibly parallel, no common gate lock) and each step blocks on the next one's lock. Work is
//! bounded by [`MAX_STEPS`]; when a bound cuts the search short, the result says so.

use crate::lockset::LockId;
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;

/// Longest cycle searched (locks).
pub const MAX_CYCLE_LEN: usize = 6;

/// Elementary cycles examined at most.
pub const MAX_CYCLES: usize = 2_000;

/// Backtracking steps (trace choices) at most, over all cycles.
pub const MAX_STEPS: u64 = 500_000;

/// Trace combinations kept per cycle and pass.
pub const MAX_COMBOS: usize = 32;

/// One labelled edge of the lock-order graph.
pub trait Edge {
    /// The lock held.
    fn held(&self) -> LockId;
    /// The lock acquired.
    fn acquired(&self) -> LockId;
}

/// A cycle with one trace per edge: `traces[i]` acquires the lock `traces[i + 1]` holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Found {
    /// Indices into the trace list, in cycle order.
    pub traces: Vec<usize>,
    /// Whether the must test held for every pair and every trace.
    pub must: bool,
}

/// The tests a combination of traces must pass.
pub trait Tests {
    /// Traces `a` and `b` (of two different edges of one cycle) may both be at their
    /// acquisitions at once.
    fn compatible(&self, a: usize, b: usize) -> bool;
    /// Trace `a`'s acquisition waits for the lock trace `b` holds (the modes conflict).
    fn blocks(&self, a: usize, b: usize) -> bool;
    /// Trace `a` is certain (held on every path, single target, certain path, ...).
    fn must_trace(&self, a: usize) -> bool;
    /// Traces `a` and `b` certainly can be at their acquisitions at once.
    fn must_pair(&self, a: usize, b: usize) -> bool;
}

/// Cycles found and whether a bound cut the search short.
#[derive(Clone, Debug, Default)]
pub struct Search {
    /// Cycles with their traces, in a deterministic order.
    pub found: Vec<Found>,
    /// Whether a bound stopped the search.
    pub truncated: bool,
}

/// Finds the cycles of the lock-order graph whose traces pass `tests`.
pub fn search<E: Edge>(traces: &[E], tests: &impl Tests) -> Search {
    let mut out = Search::default();
    // Edges, with their traces, in a deterministic order.
    let mut edges: BTreeMap<(LockId, LockId), Vec<usize>> = BTreeMap::new();
    for (i, t) in traces.iter().enumerate() {
        if t.held() != t.acquired() {
            edges.entry((t.held(), t.acquired())).or_default().push(i);
        }
    }
    let mut g: DiGraph<LockId, ()> = DiGraph::new();
    let mut nodes: BTreeMap<LockId, NodeIndex> = BTreeMap::new();
    for &(a, b) in edges.keys() {
        for l in [a, b] {
            nodes.entry(l).or_insert_with(|| g.add_node(l));
        }
    }
    for &(a, b) in edges.keys() {
        g.add_edge(nodes[&a], nodes[&b], ());
    }
    let mut sccs: Vec<Vec<LockId>> = petgraph::algo::tarjan_scc(&g)
        .into_iter()
        .filter(|c| c.len() > 1)
        .map(|c| {
            let mut v: Vec<LockId> = c.into_iter().map(|n| g[n]).collect();
            v.sort();
            v
        })
        .collect();
    sccs.sort();
    let mut cycles = 0usize;
    let mut steps = 0u64;
    for scc in &sccs {
        let succ: FxHashMap<LockId, Vec<LockId>> = scc
            .iter()
            .map(|&a| {
                let next = edges
                    .range((a, LockId(0))..=(a, LockId(u32::MAX)))
                    .map(|((_, b), _)| *b)
                    .filter(|b| scc.binary_search(b).is_ok())
                    .collect();
                (a, next)
            })
            .collect();
        for &start in scc {
            let mut path = vec![start];
            let mut found_cycles: Vec<Vec<LockId>> = Vec::new();
            elementary(
                start,
                &succ,
                &mut path,
                &mut found_cycles,
                &mut cycles,
                &mut out,
            );
            for cyc in found_cycles {
                let per_edge: Vec<&[usize]> = (0..cyc.len())
                    .map(|i| {
                        let key = (cyc[i], cyc[(i + 1) % cyc.len()]);
                        edges.get(&key).map_or(&[][..], |v| v.as_slice())
                    })
                    .collect();
                let mut must_found: Vec<Vec<usize>> = Vec::new();
                let mut chosen = Vec::new();
                combos(
                    &per_edge,
                    tests,
                    true,
                    &mut chosen,
                    &mut must_found,
                    &mut steps,
                );
                let mut may_found: Vec<Vec<usize>> = Vec::new();
                chosen.clear();
                combos(
                    &per_edge,
                    tests,
                    false,
                    &mut chosen,
                    &mut may_found,
                    &mut steps,
                );
                if steps > MAX_STEPS {
                    out.truncated = true;
                }
                for c in &must_found {
                    out.found.push(Found {
                        traces: c.clone(),
                        must: true,
                    });
                }
                for c in may_found {
                    if !must_found.contains(&c) {
                        out.found.push(Found {
                            traces: c,
                            must: false,
                        });
                    }
                }
            }
        }
    }
    out
}

/// Elementary cycles through `start` whose other locks are greater than `start`.
fn elementary(
    start: LockId,
    succ: &FxHashMap<LockId, Vec<LockId>>,
    path: &mut Vec<LockId>,
    found: &mut Vec<Vec<LockId>>,
    cycles: &mut usize,
    out: &mut Search,
) {
    let Some(&cur) = path.last() else {
        return;
    };
    for &next in succ.get(&cur).map_or(&[][..], |v| v.as_slice()) {
        if *cycles >= MAX_CYCLES {
            out.truncated = true;
            return;
        }
        if next == start {
            found.push(path.clone());
            *cycles += 1;
        } else if next > start && !path.contains(&next) {
            if path.len() >= MAX_CYCLE_LEN {
                out.truncated = true;
                continue;
            }
            path.push(next);
            elementary(start, succ, path, found, cycles, out);
            path.pop();
        }
    }
}

/// Trace combinations (one per edge of `per_edge`, in order) passing the tests; with `must`,
/// only certain traces and certain pairs.
fn combos(
    per_edge: &[&[usize]],
    tests: &impl Tests,
    must: bool,
    chosen: &mut Vec<usize>,
    out: &mut Vec<Vec<usize>>,
    steps: &mut u64,
) {
    let d = chosen.len();
    if d == per_edge.len() {
        out.push(chosen.clone());
        return;
    }
    for &t in per_edge[d] {
        if out.len() >= MAX_COMBOS || *steps > MAX_STEPS {
            return;
        }
        *steps += 1;
        if must && !tests.must_trace(t) {
            continue;
        }
        // Step d waits for the lock step d + 1 holds; the last step waits for the first's.
        if d > 0 && !tests.blocks(chosen[d - 1], t) {
            continue;
        }
        if d + 1 == per_edge.len() && !tests.blocks(t, chosen[0]) {
            continue;
        }
        let ok = chosen
            .iter()
            .all(|&c| tests.compatible(c, t) && (!must || tests.must_pair(c, t)));
        if !ok {
            continue;
        }
        chosen.push(t);
        combos(per_edge, tests, must, chosen, out, steps);
        chosen.pop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct E(u32, u32, u32);

    impl Edge for E {
        fn held(&self) -> LockId {
            LockId(self.0)
        }
        fn acquired(&self) -> LockId {
            LockId(self.1)
        }
    }

    /// Traces of one thread (`.2`) are incompatible with each other.
    struct ByThread<'a>(&'a [E]);

    impl Tests for ByThread<'_> {
        fn compatible(&self, a: usize, b: usize) -> bool {
            self.0[a].2 != self.0[b].2
        }
        fn blocks(&self, _a: usize, _b: usize) -> bool {
            true
        }
        fn must_trace(&self, _a: usize) -> bool {
            true
        }
        fn must_pair(&self, _a: usize, _b: usize) -> bool {
            true
        }
    }

    #[test]
    fn two_thread_cycle_is_found_once() {
        let t = [E(2, 3, 0), E(3, 2, 1), E(3, 4, 1)];
        let s = search(&t, &ByThread(&t));
        assert_eq!(
            s.found,
            vec![Found {
                traces: vec![0, 1],
                must: true
            }]
        );
        assert!(!s.truncated);
    }

    #[test]
    fn one_thread_cannot_close_a_cycle() {
        let t = [E(2, 3, 0), E(3, 2, 0)];
        assert!(search(&t, &ByThread(&t)).found.is_empty());
    }

    #[test]
    fn three_lock_cycle() {
        // 2 -> 3 -> 4 -> 2 over three threads, and 2 -> 4 -> 2 over threads 0 and 2.
        let t = [E(2, 3, 0), E(3, 4, 1), E(4, 2, 2), E(2, 4, 0)];
        let s = search(&t, &ByThread(&t));
        let found: Vec<Vec<usize>> = s.found.iter().map(|f| f.traces.clone()).collect();
        assert_eq!(found, vec![vec![0, 1, 2], vec![3, 2]]);
    }
}
