//! Deadlock detection on top of the lockset analysis (DESIGN.md, "Pipeline": lockset →
//! deadlocks; `notes/deadlock.md` for L2D2, DeadlockF and Goblint's conventions).
//!
//! 1. **Lock-order analysis** ([`held`]): per thread and class of paths, the locks surely held
//!    with the calls that took them, in the lockset analysis's lock identities. Each blocking
//!    acquisition of `l2` while `l1` is held gives a *trace* `l1 → l2` (thread, function
//!    context, both lock calls, the locks held — through calls and lock wrappers, since the
//!    analysis is interprocedural and context-sensitive). Trylocks block nobody and give no
//!    trace; locks they took are held.
//! 2. **Cycles** ([`cycles`]): elementary cycles of the lock-order graph with one trace per
//!    edge such that (DeadlockF 2021's filters) the traces come from different thread
//!    instances (a unique thread blocks in one place at a time; a non-unique one may run
//!    twice), every two of them may run in parallel (the active-threads analysis: this rules
//!    out acquisitions before a thread's creation or after its join), no two hold a common
//!    (gate) lock, and each step's request conflicts with the mode the next step holds its lock
//!    in. Unknown locks never take part; a lock in an object standing for several instances is
//!    unknown ([`crate::threads::ThreadGraph::single_instance`]).
//! 3. **Double locks**: a blocking lock of a mutex the thread surely holds on some class of
//!    paths, unless the mutex may be recursive ([`kinds`]).
//!
//! **Must vs may**, as for races: a deadlock is `must` only when every step is certain — the
//! held lock is held on every path to the acquisition, the acquisition has one target lock, a
//! certain path of a certainly created unique thread reaches it, every two steps certainly run in
//! parallel and share no lock even possibly, and nothing the analysis does not model (condition
//! variables, barriers, busy waiting) may order the threads (the pipeline demotes those).
//! Everything else found is `may`. Deadlocks never change the data-race verdict.

pub mod cycles;
pub mod flags;
pub mod held;
pub mod kinds;

use crate::backend::Backend;
use crate::context::{FnCtxId, ThreadId};
use crate::ir::{EdgeId, FuncId, Loc, Program};
use crate::lockset::{Held, Inherited, LockId, LocksetResult, sets_exclude, sets_may_share};
use crate::mhp::{self, ActiveAt, MhpResult, Point, ThreadFacts};
use crate::model::{LockMode, Roles};
use crate::races::Confidence;
use crate::threads::ThreadGraph;
use held::{LockOrderResult, Site};
use racedar_domains::SmallSet;
use rustc_hash::FxHashSet;
use std::collections::BTreeMap;

/// Traces kept at most (the rest are dropped and the result says it is truncated).
pub const MAX_TRACES: usize = 20_000;

/// Deadlocks reported at most.
pub const MAX_DEADLOCKS: usize = 200;

/// What deadlock detection needs from the earlier phases.
pub struct Inputs<'a, 'p, B: Backend<'p>> {
    /// The program.
    pub program: &'p Program,
    /// The roles of its functions.
    pub roles: &'a Roles,
    /// The backend.
    pub backend: &'a B,
    /// Threads and contexts.
    pub graph: &'a ThreadGraph,
    /// Active threads.
    pub mhp: &'a MhpResult,
    /// Per-thread creation facts.
    pub thread_facts: &'a [ThreadFacts],
    /// Locks inherited from parents, by thread.
    pub inherited: &'a [Inherited],
}

/// A lock call of a step: thread, function context, function and edge.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CallAt {
    /// Function context in the thread.
    pub ctx: FnCtxId,
    /// The function containing the call.
    pub func: FuncId,
    /// The call edge.
    pub edge: EdgeId,
}

/// One step of a deadlock: a thread acquiring `lock` while holding `held`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The thread.
    pub thread: ThreadId,
    /// The lock requested (where the thread blocks).
    pub lock: LockId,
    /// Its mode.
    pub mode: LockMode,
    /// The blocking lock call.
    pub acquire: CallAt,
    /// The lock held (the one the previous step of the cycle requests; `lock` itself for a
    /// double lock).
    pub held: LockId,
    /// The lock call that took `held`.
    pub while_holding: CallAt,
}

/// What kind of deadlock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A lock-order cycle between threads.
    Cycle,
    /// A thread locks a normal mutex it holds (a one-step cycle).
    DoubleLock,
}

/// A reported deadlock.
#[derive(Clone, Debug)]
pub struct Deadlock {
    /// Must or may (see the module documentation).
    pub confidence: Confidence,
    /// Cycle or double lock.
    pub kind: Kind,
    /// The steps in cycle order: step `i` requests the lock step `i + 1` holds (the last
    /// requests the first's); one step for a double lock.
    pub steps: Vec<Step>,
    /// Why it is only a may-deadlock (empty for must), sorted.
    pub reasons: Vec<&'static str>,
}

/// The result of deadlock detection.
#[derive(Clone, Debug, Default)]
pub struct DeadlockResult {
    /// Deadlocks, must first, then by the location of their first step.
    pub deadlocks: Vec<Deadlock>,
    /// Whether a bound cut the search short (some deadlocks may be missing).
    pub truncated: bool,
}

/// A trace of the lock-order graph: `held → lock` at a blocking acquisition.
#[derive(Clone, Debug)]
struct Trace {
    thread: ThreadId,
    site: Site,
    lock: LockId,
    mode: LockMode,
    held: LockId,
    hold_mode: LockMode,
    hold_site: Site,
    /// Every lock surely held at the acquisition on this class of paths.
    guards: SmallSet<Held>,
    /// Index into the per-acquisition facts ([`Point`] and lockset).
    at: usize,
    /// Held on every path to the acquisition, with a single target lock.
    certain: bool,
}

impl cycles::Edge for Trace {
    fn held(&self) -> LockId {
        self.held
    }
    fn acquired(&self) -> LockId {
        self.lock
    }
}

/// What is known at one acquisition (a blocking lock call of a thread's context).
struct AcqFacts {
    active: ActiveAt,
    /// The locks possibly held on the paths that take the lock: the lock-order analysis's
    /// (an unknown lock when one may be held), and the lockset analysis's locks of other kinds
    /// (atomic sections, once-locks, semaphores).
    may: SmallSet<Held>,
    /// The lockset analysis's must-lockset before the call (every kind of lock).
    must: SmallSet<Held>,
    /// Locks taken (write mode) earlier on every path of the thread (lock history).
    hist: SmallSet<LockId>,
    /// A certain path of a certainly created thread reaches it and the analysis completed.
    certain: bool,
}

/// Runs deadlock detection. Lock identities are interned in `locksets.table`.
pub fn detect<'p, B: Backend<'p>>(
    inp: &Inputs<'_, 'p, B>,
    locksets: &mut LocksetResult,
) -> DeadlockResult {
    let program = inp.program;
    let types = kinds::MutexTypes::compute(
        program,
        inp.roles,
        inp.backend,
        inp.graph,
        &mut locksets.table,
    );
    let needed = threads_with_nested_locking(program, inp.roles, inp.graph, locksets);
    let order = LockOrderResult::compute(
        program,
        inp.roles,
        inp.backend,
        inp.graph,
        (&mut locksets.table, &types),
        &|t| needed.contains(&t),
    );
    let locksets: &LocksetResult = locksets;
    let tf = inp.thread_facts;
    let mut truncated = false;
    let mut traces: Vec<Trace> = Vec::new();
    let mut seen: FxHashSet<(ThreadId, Site, LockId, LockId, Site, SmallSet<Held>)> =
        FxHashSet::default();
    let mut doubles: Vec<(Step, bool, usize)> = Vec::new();
    let mut acqs: Vec<AcqFacts> = Vec::new();
    // The locks the lock-order analysis knows as mutexes (the lockset's other locks are
    // semaphores, once-locks, atomic sections).
    let mutexes: FxHashSet<LockId> = order
        .acquisitions
        .iter()
        .flatten()
        .flat_map(|a| {
            a.locks
                .iter()
                .copied()
                .chain(a.fact.entries().iter().map(|e| e.lock))
        })
        .collect();
    for (ti, list) in order.acquisitions.iter().enumerate() {
        let thread = ThreadId(ti as u32);
        let tc = inp.graph.contexts(thread);
        let complete = order.complete.get(ti).copied().unwrap_or(false);
        let thread_certain = tf.get(ti).is_some_and(|f| f.certainly_created) && complete;
        // The classes of paths of one call are consecutive.
        for group in list.chunk_by(|a, b| a.site == b.site) {
            let Some(first) = group.first() else {
                continue;
            };
            let site = first.site;
            let func = tc.ctx(site.ctx).func;
            let Some(node) = program
                .function(func)
                .body
                .as_ref()
                .and_then(|c| c.edges.get(site.edge.0 as usize))
                .map(|e| e.src)
            else {
                continue;
            };
            let active = inp.mhp.at(Point {
                thread,
                ctx: site.ctx,
                node,
            });
            let ls = locksets.at(thread, site.ctx, node).unwrap_or_default();
            let others: SmallSet<Held> = ls
                .may
                .iter()
                .filter(|h| h.lock != LockId::UNKNOWN && !mutexes.contains(&h.lock))
                .copied()
                .collect();
            let mut requested: Vec<LockId> = group
                .iter()
                .filter(|a| !a.fact.via_pointer())
                .flat_map(|a| a.locks.iter().copied())
                .collect();
            requested.sort();
            requested.dedup();
            for l in requested {
                // The classes of paths that take `l` here.
                let facts: Vec<&held::Acquisition> = group
                    .iter()
                    .filter(|a| !a.fact.via_pointer() && a.locks.contains(&l))
                    .collect();
                let mut may = others.clone();
                for a in &facts {
                    for e in a.fact.entries() {
                        may.insert(Held {
                            lock: e.lock,
                            mode: e.mode,
                        });
                    }
                    for m in a.fact.maybe().iter() {
                        may.insert(Held {
                            lock: *m,
                            mode: LockMode::Write,
                        });
                    }
                    if a.fact.unknown() > 0 {
                        may.insert(Held {
                            lock: LockId::UNKNOWN,
                            mode: LockMode::Write,
                        });
                    }
                }
                let at = acqs.len();
                acqs.push(AcqFacts {
                    certain: thread_certain && active.certain,
                    active: active.clone(),
                    may,
                    must: ls.must.clone(),
                    hist: ls.hist.clone(),
                });
                let must_held = |x: LockId| facts.iter().all(|a| a.fact.holds(x));
                for acq in &facts {
                    let f = &acq.fact;
                    let mode = acq.mode;
                    let single = acq.locks.len() == 1;
                    let guards: SmallSet<Held> = f
                        .entries()
                        .iter()
                        .map(|e| Held {
                            lock: e.lock,
                            mode: e.mode,
                        })
                        .collect();
                    for h in f.entries() {
                        // Two guesses among the elements of one array: their order (or
                        // equality) is unknown.
                        if h.multi && !single && same_object(&locksets.table, h.lock, l) {
                            continue;
                        }
                        if h.lock == l {
                            let conflict = h.mode == LockMode::Write || mode == LockMode::Write;
                            if conflict && !types.may_be_recursive(&locksets.table, l) {
                                let step = Step {
                                    thread,
                                    lock: l,
                                    mode,
                                    acquire: call_at(tc, site),
                                    held: l,
                                    while_holding: call_at(tc, h.site),
                                };
                                doubles.push((step, single && must_held(l), at));
                            }
                            continue;
                        }
                        let key = (thread, site, h.lock, l, h.site, guards.clone());
                        if !seen.insert(key) {
                            continue;
                        }
                        if traces.len() >= MAX_TRACES {
                            truncated = true;
                            continue;
                        }
                        traces.push(Trace {
                            thread,
                            site,
                            lock: l,
                            mode,
                            held: h.lock,
                            hold_mode: h.mode,
                            hold_site: h.site,
                            guards: guards.clone(),
                            at,
                            certain: single && must_held(h.lock),
                        });
                    }
                }
            }
        }
        truncated |= !complete;
    }
    let tests = Checks {
        traces: &traces,
        acqs: &acqs,
        tf,
        inherited: inp.inherited,
    };
    let found = cycles::search(&traces, &tests);
    truncated |= found.truncated;
    // One report per cycle of lock calls (thread instances and contexts merged), must wins.
    let mut by_key: BTreeMap<Vec<(LockId, CallKey, CallKey)>, Deadlock> = BTreeMap::new();
    for c in &found.found {
        let steps: Vec<Step> = c
            .traces
            .iter()
            .map(|&i| {
                let t = &traces[i];
                let tc = inp.graph.contexts(t.thread);
                Step {
                    thread: t.thread,
                    lock: t.lock,
                    mode: t.mode,
                    acquire: call_at(tc, t.site),
                    held: t.held,
                    while_holding: call_at(tc, t.hold_site),
                }
            })
            .collect();
        let reasons = if c.must {
            Vec::new()
        } else {
            cycle_reasons(&tests, &c.traces)
        };
        add(&mut by_key, Kind::Cycle, steps, c.must, reasons);
    }
    for (step, certain, at) in doubles {
        let a = &acqs[at];
        let mut reasons = Vec::new();
        if !certain {
            reasons.push(REASON_HELD);
        }
        if !a.certain {
            reasons.push(REASON_PATH);
        }
        let must = reasons.is_empty();
        add(&mut by_key, Kind::DoubleLock, vec![step], must, reasons);
    }
    let mut deadlocks: Vec<Deadlock> = by_key.into_values().collect();
    sort(program, &mut deadlocks);
    if deadlocks.len() > MAX_DEADLOCKS {
        deadlocks.truncate(MAX_DEADLOCKS);
        truncated = true;
    }
    tracing::info!(
        traces = traces.len(),
        cycles = found.found.len(),
        deadlocks = deadlocks.len(),
        truncated,
        "deadlock detection"
    );
    DeadlockResult {
        deadlocks,
        truncated,
    }
}

/// The threads that may hold a lock at some reachable blocking lock call, by the lockset
/// analysis (its may-lockset over-approximates what the lock-order analysis holds): the others
/// can give no trace and no double lock, so they need no lock-order analysis.
fn threads_with_nested_locking(
    program: &Program,
    roles: &Roles,
    graph: &ThreadGraph,
    locksets: &LocksetResult,
) -> FxHashSet<ThreadId> {
    let mut out = FxHashSet::default();
    for tc in &graph.contexts {
        'thread: for c in tc.ids() {
            let Some(cfg) = &program.function(tc.ctx(c).func).body else {
                continue;
            };
            for e in &cfg.edges {
                let Some(crate::model::Role::Lock {
                    kind: crate::model::LockKind::Blocking,
                    ..
                }) = roles.of_call(&e.op)
                else {
                    continue;
                };
                let held = locksets
                    .at(tc.thread, c, e.src)
                    .is_some_and(|l| l.may.iter().any(|h| h.lock != LockId::ATOMIC));
                if held {
                    out.insert(tc.thread);
                    break 'thread;
                }
            }
        }
    }
    out
}

/// Whether two locks are in the same object.
fn same_object(table: &crate::lockset::LockTable, a: LockId, b: LockId) -> bool {
    use crate::lockset::LockKey;
    match (table.key(a), table.key(b)) {
        (LockKey::Addr(x, _), LockKey::Addr(y, _)) => x == y,
        _ => false,
    }
}

/// A lock call without its context (reports merge contexts).
type CallKey = (FuncId, EdgeId);

fn call_at(tc: &crate::context::ThreadContexts, s: Site) -> CallAt {
    CallAt {
        ctx: s.ctx,
        func: tc.ctx(s.ctx).func,
        edge: s.edge,
    }
}

/// Adds a deadlock under its key: the steps' (lock, acquire call, holding call), rotated to
/// start at the smallest; a must entry replaces a may one.
fn add(
    by_key: &mut BTreeMap<Vec<(LockId, CallKey, CallKey)>, Deadlock>,
    kind: Kind,
    steps: Vec<Step>,
    must: bool,
    mut reasons: Vec<&'static str>,
) {
    let key_of = |s: &Step| {
        (
            s.lock,
            (s.acquire.func, s.acquire.edge),
            (s.while_holding.func, s.while_holding.edge),
        )
    };
    let mut key: Vec<(LockId, CallKey, CallKey)> = steps.iter().map(key_of).collect();
    let start = (0..key.len()).min_by_key(|&i| key[i]).unwrap_or(0);
    key.rotate_left(start);
    let mut steps = steps;
    steps.rotate_left(start);
    reasons.sort();
    reasons.dedup();
    let d = Deadlock {
        confidence: if must {
            Confidence::Must
        } else {
            Confidence::May
        },
        kind,
        steps,
        reasons,
    };
    match by_key.get_mut(&key) {
        Some(old) if old.confidence == Confidence::May && must => *old = d,
        Some(_) => {}
        None => {
            by_key.insert(key, d);
        }
    }
}

const REASON_HELD: &str = "a lock is not held on every path to the acquisition, or the acquisition has several possible locks";
const REASON_PATH: &str = "the acquisition is not certainly reached by a certainly created thread";
const REASON_PARALLEL: &str = "the threads do not certainly run in parallel";
const REASON_SHARED: &str = "a common lock may be held";
const REASON_SAME: &str = "two steps are in one non-unique thread";
const REASON_ANCESTRAL: &str = "a lock held at a thread creation may order the threads";

/// The tests of [`cycles::search`] on the traces.
struct Checks<'a> {
    traces: &'a [Trace],
    acqs: &'a [AcqFacts],
    tf: &'a [ThreadFacts],
    inherited: &'a [Inherited],
}

impl Checks<'_> {
    fn unique(&self, t: ThreadId) -> bool {
        self.tf.get(t.0 as usize).is_some_and(|f| f.unique)
    }

    /// Why two traces of a cycle are not a certain pair (empty: they are).
    fn pair_reasons(&self, a: usize, b: usize, out: &mut Vec<&'static str>) {
        let (x, y) = (&self.traces[a], &self.traces[b]);
        let (ax, ay) = (&self.acqs[x.at], &self.acqs[y.at]);
        if x.thread == y.thread {
            out.push(REASON_SAME);
        } else if !mhp::must_parallel(self.tf, x.thread, &ax.active, y.thread, &ay.active) {
            out.push(REASON_PARALLEL);
        }
        if sets_may_share(&ax.may, &ay.may) {
            out.push(REASON_SHARED);
        }
        // A lock an ancestor held when creating the thread, taken by the thread before this
        // step: the step waited for the ancestor's release, which may order it after the other.
        let after_ancestor = |t: &Trace, a: &AcqFacts| {
            self.inherited.get(t.thread.0 as usize).is_some_and(|i| {
                i.ancestral.iter().any(|h| {
                    h.lock == LockId::UNKNOWN
                        || a.hist.contains(&h.lock)
                        || t.guards.iter().any(|g| g.lock == h.lock)
                })
            })
        };
        if after_ancestor(x, ax) || after_ancestor(y, ay) {
            out.push(REASON_ANCESTRAL);
        }
    }
}

impl cycles::Tests for Checks<'_> {
    fn compatible(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.traces[a], &self.traces[b]);
        // A unique thread waits in one place at a time.
        if x.thread == y.thread && self.unique(x.thread) {
            return false;
        }
        let (ax, ay) = (&self.acqs[x.at], &self.acqs[y.at]);
        if !mhp::may_parallel(self.tf, x.thread, &ax.active, y.thread, &ay.active) {
            return false;
        }
        // A gate lock both hold (or one holding the other's lock) keeps them apart; so does
        // any lock (a binary semaphore, an atomic section) the lockset analysis says both hold.
        !sets_exclude(&x.guards, &y.guards) && !sets_exclude(&ax.must, &ay.must)
    }

    fn blocks(&self, a: usize, b: usize) -> bool {
        let (x, y) = (&self.traces[a], &self.traces[b]);
        x.mode == LockMode::Write || y.hold_mode == LockMode::Write
    }

    fn must_trace(&self, a: usize) -> bool {
        let t = &self.traces[a];
        t.certain && self.acqs[t.at].certain && self.unique(t.thread)
    }

    fn must_pair(&self, a: usize, b: usize) -> bool {
        let mut r = Vec::new();
        self.pair_reasons(a, b, &mut r);
        r.is_empty()
    }
}

/// Why a cycle found is only a may-deadlock.
fn cycle_reasons(tests: &Checks<'_>, traces: &[usize]) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (i, &a) in traces.iter().enumerate() {
        let t = &tests.traces[a];
        if !t.certain {
            out.push(REASON_HELD);
        }
        if !tests.acqs[t.at].certain || !tests.unique(t.thread) {
            out.push(REASON_PATH);
        }
        for &b in &traces[i + 1..] {
            tests.pair_reasons(a, b, &mut out);
        }
    }
    if out.is_empty() {
        // Certain traces and pairs, yet no certain combination was kept (a bound).
        out.push(REASON_PARALLEL);
    }
    out.sort();
    out.dedup();
    out
}

/// The source location of a step's call.
pub fn call_loc(program: &Program, c: &CallAt) -> Loc {
    program.function(c.func).edge_loc(c.edge)
}

/// Demotes every must-deadlock to may with `reason` (the pipeline's imprecisions that may
/// order threads).
pub fn demote(program: &Program, result: &mut DeadlockResult, reason: &'static str) {
    for d in &mut result.deadlocks {
        if d.confidence == Confidence::Must {
            d.confidence = Confidence::May;
            d.reasons = vec![reason];
        }
    }
    sort(program, &mut result.deadlocks);
}

/// Sorts deadlocks: must first, then by the first location of their steps; each cycle starts
/// at its step whose blocking call comes first in the source.
fn sort(program: &Program, deadlocks: &mut [Deadlock]) {
    for d in deadlocks.iter_mut() {
        let first = (0..d.steps.len())
            .min_by_key(|&i| call_loc(program, &d.steps[i].acquire))
            .unwrap_or(0);
        d.steps.rotate_left(first);
    }
    let loc = |d: &Deadlock| {
        d.steps
            .iter()
            .map(|s| call_loc(program, &s.acquire))
            .min()
            .unwrap_or_default()
    };
    deadlocks.sort_by_key(|d| (d.confidence, loc(d), d.kind, d.steps.len()));
}
