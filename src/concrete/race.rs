//! Candidate races of one execution: conflicting accesses of different threads that the
//! happens-before order does not order (vector clocks, Lamport 1978; the epoch shortcut of
//! FastTrack, Flanagan and Freund, PLDI 2009).
//!
//! Happens-before edges come from thread creation and join, lock release → acquire,
//! condition signal → wake-up, semaphore post → wait, barriers, once controls, and atomic
//! operations (treated as release-acquire, so they never race with each other and order what
//! they publish). A candidate is not a claim: the explorer confirms it by reaching a state in
//! which both threads are about to make their accesses (`super::explore`). Edges the model
//! misses (a flag written without atomics) only add candidates that fail to confirm.

use super::interp::{Access, Event, StepOut, SyncKey};
use super::memory::ObjId;
use crate::ir::{EdgeId, FuncId};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeMap;

/// Candidates kept per execution.
const MAX_CANDIDATES: usize = 256;

/// Accesses remembered per object and start offset (one per thread, statement and kind). A
/// function of thousands of statements touching one variable would otherwise make every access
/// compare against all the earlier ones (quadratic time); past the bound the oldest entry of
/// the accessing thread (else the oldest one) is forgotten, which can only lose candidates.
const MAX_ENTRIES_PER_OFFSET: usize = 64;

/// A vector clock: one logical time per thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Vc(Vec<u32>);

impl Vc {
    /// The time of thread `t`.
    pub fn get(&self, t: usize) -> u32 {
        self.0.get(t).copied().unwrap_or(0)
    }

    fn set(&mut self, t: usize, v: u32) {
        if self.0.len() <= t {
            self.0.resize(t + 1, 0);
        }
        self.0[t] = v;
    }

    /// Pointwise maximum.
    pub fn join(&mut self, o: &Vc) {
        if self.0.len() < o.0.len() {
            self.0.resize(o.0.len(), 0);
        }
        for (a, b) in self.0.iter_mut().zip(&o.0) {
            *a = (*a).max(*b);
        }
    }
}

/// Two unordered conflicting accesses of an execution: the first made at step `first_step`
/// by thread `first_tid`, the second later by `second_tid`.
#[derive(Clone, Debug)]
pub struct Candidate {
    /// Index of the first access's step in the execution's schedule.
    pub first_step: usize,
    /// Its thread.
    pub first_tid: usize,
    /// The first access.
    pub first: Access,
    /// Index of the second access's step.
    pub second_step: usize,
    /// Its thread.
    pub second_tid: usize,
    /// The second access.
    pub second: Access,
}

/// The last access of one kind by one thread at one statement to one byte range.
#[derive(Clone, Debug)]
struct Entry {
    tid: u32,
    func: FuncId,
    edge: EdgeId,
    write: bool,
    atomic: bool,
    hi: u64,
    clock: u32,
    step: u32,
    access: Access,
}

#[derive(Default)]
struct ObjLog {
    maxlen: u64,
    by_lo: BTreeMap<u64, SmallVec<[Entry; 2]>>,
}

/// Statement and kind of both sides of a candidate (for deduplication).
type CandKey = (FuncId, EdgeId, bool, FuncId, EdgeId, bool);

/// The happens-before race detector of one execution.
#[derive(Default)]
pub struct Detector {
    threads: Vec<Vc>,
    keys: FxHashMap<SyncKey, Vc>,
    log: FxHashMap<ObjId, ObjLog>,
    seen: FxHashSet<CandKey>,
    /// The candidates found, in the order found.
    pub candidates: Vec<Candidate>,
}

impl Detector {
    fn vc(&mut self, t: usize) -> &mut Vc {
        if self.threads.len() <= t {
            self.threads.resize(t + 1, Vc::default());
        }
        if self.threads[t].get(t) == 0 {
            self.threads[t].set(t, 1);
        }
        &mut self.threads[t]
    }

    fn tick(&mut self, t: usize) {
        let v = self.vc(t);
        let c = v.get(t) + 1;
        v.set(t, c);
    }

    /// Takes in step `step` (index in the schedule) of thread `t`.
    pub fn observe(&mut self, t: usize, step: usize, out: &StepOut) {
        if !out.accesses.is_empty() {
            self.vc(t);
            let now = std::mem::take(&mut self.threads[t]);
            for a in &out.accesses {
                self.access(t, step, a, &now);
            }
            self.threads[t] = now;
        }
        for ev in &out.events {
            match *ev {
                Event::Acquire(k) => {
                    if let Some(l) = self.keys.get(&k).cloned() {
                        self.vc(t).join(&l);
                    }
                }
                Event::Release(k) => {
                    let v = self.vc(t).clone();
                    self.keys.entry(k).or_default().join(&v);
                    self.tick(t);
                }
                Event::Create(c) => {
                    let mut v = self.vc(t).clone();
                    v.set(c, 1);
                    self.vc(c);
                    self.threads[c] = v;
                    self.tick(t);
                }
                Event::Join(c) => {
                    let v = self.vc(c).clone();
                    self.vc(t).join(&v);
                }
            }
        }
    }

    fn access(&mut self, t: usize, step: usize, a: &Access, now: &Vc) {
        let log = self.log.entry(a.obj).or_default();
        let from = a.lo.saturating_sub(log.maxlen.saturating_sub(1));
        let mut found: Vec<Candidate> = Vec::new();
        for (_, entries) in log.by_lo.range(from..a.hi) {
            for e in entries {
                if e.tid as usize == t
                    || e.hi <= a.lo
                    || !(e.write || a.write)
                    || (e.atomic && a.atomic)
                    || e.clock <= now.get(e.tid as usize)
                {
                    continue;
                }
                let key = (e.func, e.edge, e.write, a.func, a.edge, a.write);
                if self.seen.contains(&key) || self.candidates.len() + found.len() >= MAX_CANDIDATES
                {
                    continue;
                }
                self.seen.insert(key);
                found.push(Candidate {
                    first_step: e.step as usize,
                    first_tid: e.tid as usize,
                    first: e.access,
                    second_step: step,
                    second_tid: t,
                    second: *a,
                });
            }
        }
        self.candidates.extend(found);
        log.maxlen = log.maxlen.max(a.hi - a.lo);
        let list = log.by_lo.entry(a.lo).or_default();
        let clock = now.get(t);
        match list.iter_mut().find(|e| {
            e.tid as usize == t
                && e.func == a.func
                && e.edge == a.edge
                && e.write == a.write
                && e.atomic == a.atomic
                && e.hi == a.hi
        }) {
            Some(e) => {
                e.clock = clock;
                e.step = step as u32;
                e.access = *a;
            }
            None => {
                let entry = Entry {
                    tid: t as u32,
                    func: a.func,
                    edge: a.edge,
                    write: a.write,
                    atomic: a.atomic,
                    hi: a.hi,
                    clock,
                    step: step as u32,
                    access: *a,
                };
                if list.len() < MAX_ENTRIES_PER_OFFSET {
                    list.push(entry);
                } else {
                    let oldest = |own: bool| {
                        list.iter()
                            .enumerate()
                            .filter(|(_, e)| !own || e.tid as usize == t)
                            .min_by_key(|(_, e)| e.step)
                            .map(|(i, _)| i)
                    };
                    if let Some(i) = oldest(true).or_else(|| oldest(false)) {
                        list[i] = entry;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acc(write: bool, edge: u32) -> Access {
        Access {
            obj: ObjId(0),
            lo: 0,
            hi: 4,
            write,
            atomic: false,
            func: FuncId(0),
            edge: EdgeId(edge),
        }
    }

    fn step(a: Access, events: Vec<Event>) -> StepOut {
        StepOut {
            accesses: vec![a],
            events,
        }
    }

    #[test]
    fn unordered_writes_are_candidates() {
        let mut d = Detector::default();
        d.observe(
            0,
            0,
            &StepOut {
                accesses: vec![],
                events: vec![Event::Create(1)],
            },
        );
        d.observe(0, 1, &step(acc(true, 1), vec![]));
        d.observe(1, 2, &step(acc(false, 2), vec![]));
        assert_eq!(d.candidates.len(), 1);
        assert_eq!(d.candidates[0].first_step, 1);
    }

    #[test]
    fn many_statements_on_one_object_stay_bounded() {
        let mut d = Detector::default();
        d.observe(
            0,
            0,
            &StepOut {
                accesses: vec![],
                events: vec![Event::Create(1)],
            },
        );
        for i in 0..5000 {
            d.observe(0, i + 1, &step(acc(true, i as u32 + 1), vec![]));
        }
        let entries: usize = d
            .log
            .values()
            .flat_map(|l| l.by_lo.values())
            .map(|l| l.len())
            .sum();
        assert_eq!(entries, MAX_ENTRIES_PER_OFFSET);
        d.observe(1, 6000, &step(acc(false, 9000), vec![]));
        assert_eq!(d.candidates.len(), MAX_ENTRIES_PER_OFFSET);
        assert!(
            d.candidates
                .iter()
                .all(|c| c.first_step > 5000 - MAX_ENTRIES_PER_OFFSET)
        );
    }

    #[test]
    fn lock_and_create_order_accesses() {
        let mut d = Detector::default();
        let l = SyncKey::Lock(8);
        d.observe(0, 0, &step(acc(true, 1), vec![Event::Create(1)]));
        d.observe(0, 1, &step(acc(true, 2), vec![Event::Release(l)]));
        d.observe(1, 2, &step(acc(true, 3), vec![]));
        // The write at edge 2 is not ordered before thread 1's write (no acquire yet).
        assert_eq!(d.candidates.len(), 1);
        d.observe(
            1,
            3,
            &StepOut {
                accesses: vec![],
                events: vec![Event::Acquire(l)],
            },
        );
        d.observe(1, 4, &step(acc(true, 4), vec![]));
        assert_eq!(d.candidates.len(), 1);
    }
}
