//! The witness search: deterministic executions under several schedules and nondeterministic
//! value plans, candidate races from each ([`super::race`]), and their confirmation.
//!
//! A candidate (thread T1's access at step i, thread T2's later one) is **confirmed** in the
//! sense of SV-COMP's no-data-race property — a reachable state in which two threads are both
//! about to make conflicting accesses — by replaying the execution up to step i (same
//! schedule, same per-thread nondeterministic values), so that T1 stands right before its
//! access, and then running the other threads while T1 stays where it is. Whenever another
//! thread's step makes an access conflicting with the access T1 is about to make (computed
//! on a copy of the state, [`peek`]), the state before that step is the witness. All work is
//! bounded by step counts, never by time.

use super::interp::{Access, Event, Machine, Outcome};
use super::race::{Candidate, Detector};
use super::{NondetPlan, Witness, WitnessAccess};
use crate::ir::{EdgeId, FuncId, Program};
use crate::model::Roles;
use rustc_hash::{FxHashMap, FxHashSet};

/// Steps a thread runs before a run-to-block scheduler moves on (so busy-waiting loops end).
const SLICE: u32 = 2000;
/// Steps without reaching a new (thread, program point) before an execution ends: its
/// threads only repeat what they did (spinning, waiting for each other in loops).
const STALE: u64 = 5000;

/// How the next thread is chosen.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Sched {
    /// The running thread goes on until it blocks, ends or uses up its slice; then the next
    /// thread in creation order.
    RunToBlock,
    /// As `RunToBlock`, but a created thread runs at once.
    ChildFirst,
    /// As `RunToBlock`, but the next thread is the most recently created one.
    NewestFirst,
    /// Another thread after every step that releases or signals (`true`: or creates).
    SyncPreempt(bool),
    /// Every step goes to the next thread in creation order.
    RoundRobin,
    /// After each step, another thread with probability ¼ (seeded).
    Random(u64),
}

impl Sched {
    /// A short description for reports.
    pub fn describe(self) -> String {
        match self {
            Sched::RunToBlock => "run-to-block".into(),
            Sched::ChildFirst => "child-first".into(),
            Sched::NewestFirst => "newest-first".into(),
            Sched::SyncPreempt(false) => "preemption at releases".into(),
            Sched::SyncPreempt(true) => "preemption at releases and creations".into(),
            Sched::RoundRobin => "round-robin".into(),
            Sched::Random(s) => format!("random (seed {s})"),
        }
    }
}

/// The state of a scheduler during one execution.
struct Scheduler {
    policy: Sched,
    current: usize,
    slice: u32,
    rng: u64,
    /// The last step synchronised: `SyncPreempt` switches.
    switch: bool,
}

impl Scheduler {
    fn new(policy: Sched) -> Scheduler {
        let rng = match policy {
            Sched::Random(s) => s.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            _ => 1,
        };
        Scheduler {
            policy,
            current: 0,
            slice: 0,
            rng,
            switch: false,
        }
    }

    fn random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.rng;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.rng = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// The next thread to step among those `ok` accepts.
    fn pick(&mut self, n: usize, ok: &dyn Fn(usize) -> bool) -> Option<usize> {
        let next_after = |c: usize| (1..=n).map(|d| (c + d) % n).find(|&t| ok(t));
        let stay = ok(self.current);
        let t = match self.policy {
            Sched::RunToBlock | Sched::ChildFirst => {
                if stay && self.slice < SLICE {
                    Some(self.current)
                } else {
                    next_after(self.current)
                }
            }
            Sched::NewestFirst => {
                if stay && self.slice < SLICE {
                    Some(self.current)
                } else {
                    (0..n)
                        .rev()
                        .find(|&t| ok(t) && t != self.current)
                        .or(stay.then_some(self.current))
                }
            }
            Sched::RoundRobin => next_after(self.current),
            Sched::SyncPreempt(_) => {
                if stay && !self.switch {
                    Some(self.current)
                } else {
                    next_after(self.current)
                }
            }
            Sched::Random(_) => {
                if stay && !self.random().is_multiple_of(4) {
                    Some(self.current)
                } else {
                    let c: Vec<usize> = (0..n).filter(|&t| ok(t)).collect();
                    if c.is_empty() {
                        None
                    } else {
                        let i = (self.random() % c.len() as u64) as usize;
                        Some(c[i])
                    }
                }
            }
        }?;
        self.switch = false;
        if t != self.current {
            self.slice = 0;
        }
        self.current = t;
        self.slice += 1;
        Some(t)
    }

    /// Takes in the events of the step just taken.
    fn after(&mut self, events: &[Event]) {
        for e in events {
            if let Event::Create(c) = e
                && self.policy == Sched::ChildFirst
            {
                self.current = *c;
                self.slice = 0;
            }
            match (e, self.policy) {
                (Event::Release(_), _) | (Event::Create(_), Sched::SyncPreempt(true)) => {
                    self.switch = true;
                }
                _ => {}
            }
        }
    }
}

/// One finished execution: its schedule (the thread of every step taken) and candidates.
pub struct Run {
    /// The thread of each step.
    pub schedule: Vec<u32>,
    /// Candidate races.
    pub candidates: Vec<Candidate>,
    /// Steps spent, blocked attempts included.
    pub steps: u64,
    /// The step that ended the program (main returning, `exit`) with the first access it
    /// made, and its thread: later accesses of other threads never happen in this execution,
    /// so the explorer also holds this step back to look for races with it.
    pub exit_step: Option<(usize, usize, Access)>,
    /// Whether it created a thread (else every schedule runs it alike).
    pub threaded: bool,
    /// Whether it drew a nondeterministic value (else every value plan runs it alike).
    pub drew: bool,
    /// The CFG nodes threads stood at after a step: (the thread's entry function, function,
    /// node).
    pub reached: FxHashSet<(FuncId, FuncId, crate::ir::NodeId)>,
    /// The statements that accessed an object two threads accessed, one of them writing:
    /// (the thread's entry function, function, statement).
    pub shared: FxHashSet<(FuncId, FuncId, EdgeId)>,
}

/// Runs one execution of at most `budget` steps from the initial state `init`; `record`:
/// fill [`Run::reached`] and [`Run::shared`] (for the cross-check, not the witness search).
pub fn execute(
    init: &Machine<'_>,
    nondet: NondetPlan,
    policy: Sched,
    budget: u64,
    record: bool,
) -> Run {
    let mut run = Run {
        schedule: Vec::new(),
        candidates: Vec::new(),
        steps: 0,
        exit_step: None,
        threaded: false,
        drew: false,
        reached: FxHashSet::default(),
        shared: FxHashSet::default(),
    };
    // Per object: the threads that accessed it, whether one wrote, and the statements.
    type Users = (FxHashSet<usize>, bool, FxHashSet<(FuncId, FuncId, EdgeId)>);
    let mut users: FxHashMap<super::memory::ObjId, Users> = FxHashMap::default();
    let mut m = init.with_plan(nondet);
    let mut det = Detector::default();
    let mut sched = Scheduler::new(policy);
    let mut blocked: Vec<bool> = Vec::new();
    let mut coverage: FxHashSet<(u32, FuncId, crate::ir::NodeId)> = FxHashSet::default();
    let mut since_new = 0u64;
    while run.steps < budget && !m.finished() {
        let n = m.threads.len();
        blocked.resize(n, false);
        let Some(t) = sched.pick(n, &|t| m.runnable(t) && !blocked[t]) else {
            break; // deadlock
        };
        run.steps += 1;
        match m.step(t) {
            Err(stop) => {
                let at = m
                    .position(t)
                    .map(|(f, _)| m.p.function(f).name.as_str())
                    .unwrap_or("?");
                tracing::debug!(
                    reason = stop.reason,
                    function = at,
                    "concrete execution stopped"
                );
                break;
            }
            Ok((Outcome::Blocked, _)) => blocked[t] = true,
            Ok((Outcome::Progress, out)) => {
                blocked.iter_mut().for_each(|b| *b = false);
                det.observe(t, run.schedule.len(), &out);
                if record {
                    for a in &out.accesses {
                        let u = users.entry(a.obj).or_default();
                        u.0.insert(t);
                        u.1 |= a.write && !a.atomic;
                        if u.2.len() < 64 {
                            u.2.insert((m.threads[t].entry, a.func, a.edge));
                        }
                    }
                }
                run.schedule.push(t as u32);
                sched.after(&out.events);
                if m.exited
                    && m.threads.len() > 1
                    && let Some(a) = out.accesses.first()
                {
                    run.exit_step = Some((run.schedule.len() - 1, t, *a));
                }
                let pos = m.position(t);
                if record && let Some((func, node)) = pos {
                    run.reached.insert((m.threads[t].entry, func, node));
                }
                if let Some((func, node)) = pos
                    && coverage.insert((t as u32, func, node))
                {
                    since_new = 0;
                } else {
                    since_new += 1;
                    if since_new > STALE {
                        break; // nothing new for a while: a thread spins
                    }
                }
            }
        }
    }
    tracing::debug!(
        steps = run.steps,
        threads = m.threads.len(),
        exited = m.exited,
        candidates = det.candidates.len(),
        sched = policy.describe(),
        plan = nondet.describe(),
        "concrete execution ended"
    );
    run.candidates = det.candidates;
    for (ts, written, stmts) in users.into_values() {
        if ts.len() > 1 && written {
            run.shared.extend(stmts);
        }
    }
    run.threaded = m.threads.len() > 1;
    run.drew = m.threads.iter().any(|t| t.nondets > 0 || t.uninit > 0);
    run
}

/// The accesses thread `t` makes in its next step (on a copy of the state) to objects that
/// exist before it. An object the step itself allocates (a local created by its first write)
/// is the thread's own at that moment, and its id in the copy may be another object's in the
/// original state, whose allocations go on without the copy's.
pub fn peek(m: &Machine<'_>, t: usize) -> Vec<Access> {
    let existing = m.mem.len();
    let mut c = m.clone();
    match c.step(t) {
        Ok((_, out)) => out
            .accesses
            .into_iter()
            .filter(|a| (a.obj.0 as usize) < existing)
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// Tries to confirm a candidate of `run` within `limit` steps; returns the witness found (it
/// may be another pair than the candidate's, with the same first access) and the steps spent.
pub fn confirm(
    init: &Machine<'_>,
    nondet: NondetPlan,
    run: &Run,
    cand: &Candidate,
    limit: u64,
) -> (Option<Witness>, u64) {
    let mut steps = 0u64;
    let mut m = init.with_plan(nondet);
    for &t in &run.schedule[..cand.first_step] {
        steps += 1;
        if !matches!(m.step(t as usize), Ok((Outcome::Progress, _))) {
            return (None, steps); // the replay diverged
        }
    }
    let t1 = cand.first_tid;
    let mut a1 = peek(&m, t1);
    if !a1
        .iter()
        .any(|a| a.func == cand.first.func && a.edge == cand.first.edge)
    {
        return (None, steps);
    }
    let mut objs: FxHashSet<_> = a1.iter().map(|a| a.obj).collect();
    let mut k = cand.first_step;
    let mut blocked: Vec<bool> = Vec::new();
    let mut rr = t1;
    while steps < limit && !m.finished() {
        let n = m.threads.len();
        blocked.resize(n, false);
        let ok = |t: usize| t != t1 && m.runnable(t) && !blocked[t];
        // Follow the recorded schedule without T1, then round-robin.
        while k < run.schedule.len() && !ok(run.schedule[k] as usize) {
            k += 1;
        }
        let t = if k < run.schedule.len() {
            k += 1;
            run.schedule[k - 1] as usize
        } else {
            match (1..=n).map(|d| (rr + d) % n).find(|&t| ok(t)) {
                Some(t) => {
                    rr = t;
                    t
                }
                None => break,
            }
        };
        steps += 1;
        match m.step(t) {
            Err(_) => break,
            Ok((Outcome::Blocked, _)) => blocked[t] = true,
            Ok((Outcome::Progress, out)) => {
                blocked.iter_mut().for_each(|b| *b = false);
                for y in &out.accesses {
                    if let Some(x) = a1.iter().find(|x| x.conflicts(y)) {
                        let w = Witness {
                            first: witness_access(&m, t1, x),
                            second: witness_access(&m, t, y),
                            run: String::new(),
                        };
                        return (Some(w), steps);
                    }
                }
                if out
                    .accesses
                    .iter()
                    .any(|y| y.write && objs.contains(&y.obj))
                {
                    a1 = peek(&m, t1);
                    objs = a1.iter().map(|a| a.obj).collect();
                }
            }
        }
    }
    (None, steps)
}

fn witness_access(m: &Machine<'_>, t: usize, a: &Access) -> WitnessAccess {
    WitnessAccess {
        thread: t,
        entry: m.threads[t].entry,
        func: a.func,
        edge: a.edge,
        write: a.write,
        atomic: a.atomic,
        origin: m.mem.object(a.obj).origin,
        lo: a.lo,
        hi: a.hi,
    }
}

/// Statements (function and edge) a goal consists of.
pub type Stmt = (FuncId, EdgeId);

/// What the search looks for: races of the static analysis to confirm, by the statements of
/// their accesses, and which of them a witness confirms.
pub struct Goals<'a> {
    /// The statements of each static race.
    pub stmts: Vec<FxHashSet<Stmt>>,
    /// The static races a witness confirms (indices into `stmts`).
    pub matcher: &'a dyn Fn(&Witness) -> Vec<usize>,
}

/// Step budgets of a search.
#[derive(Clone, Copy, Debug)]
pub struct Budget {
    /// Steps of one execution.
    pub run: u64,
    /// Steps of the whole search (executions and confirmations).
    pub total: u64,
    /// Confirmation attempts of the whole search.
    pub attempts: u32,
}

impl Budget {
    /// The default budget for a program of `edges` CFG edges: large programs (real code
    /// bases, whose executions mostly stop early at library calls the model does not know)
    /// get a smaller one, so the search stays a small part of their analysis time.
    pub fn for_size(edges: usize) -> Budget {
        let b = Budget::default();
        if edges > 5_000 {
            Budget {
                total: b.total / 4,
                ..b
            }
        } else {
            b
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            run: 30_000,
            total: 400_000,
            attempts: 200,
        }
    }
}

/// The executions tried, in order: nondeterministic value plans × schedules.
pub fn strategies() -> Vec<(NondetPlan, Sched)> {
    let plans = [
        NondetPlan::Const(1),
        NondetPlan::Const(0),
        NondetPlan::Const(2),
        NondetPlan::Const(3),
        NondetPlan::Const(4),
        NondetPlan::Random {
            seed: 7,
            lo: 0,
            span: 5,
        },
        NondetPlan::Random {
            seed: 11,
            lo: -1,
            span: 12,
        },
    ];
    let scheds = [
        Sched::ChildFirst,
        Sched::RunToBlock,
        Sched::NewestFirst,
        Sched::SyncPreempt(false),
        Sched::SyncPreempt(true),
        Sched::RoundRobin,
        Sched::Random(1),
        Sched::Random(2),
    ];
    let mut out = Vec::new();
    for n in plans {
        for s in scheds {
            out.push((n, s));
        }
    }
    out
}

/// What the executions of [`reached`] did.
#[derive(Default)]
pub struct Reached {
    /// (the thread's entry function, function, node) of every node a thread stood at.
    pub nodes: FxHashSet<(FuncId, FuncId, crate::ir::NodeId)>,
    /// (the thread's entry function, function, statement) of every access to an object two
    /// threads accessed in one execution, one of them writing (at most 64 statements per
    /// object).
    pub shared: FxHashSet<(FuncId, FuncId, EdgeId)>,
}

/// What the executions of the search's strategies ([`strategies`], at most `budget.run` steps
/// each and `budget.total` in all) reach: CFG nodes and statements accessing shared objects
/// ([`Reached`]). For the soundness cross-check with the static analysis: each node must be
/// reachable there, and each statement an access of the race search, in a thread with the
/// same entry.
pub fn reached(p: &Program, roles: &Roles, budget: Budget) -> Reached {
    let mut out = Reached::default();
    for_each_argument_vector(p, roles, budget, true, |_, _, _, _, run, _| {
        out.nodes.extend(run.reached.iter().copied());
        out.shared.extend(run.shared.iter().copied());
        true
    });
    out
}

/// The command-line arguments (after the program name) concrete executions run `main` with,
/// in order: none first; then, while no execution with the previous ones created a thread
/// (a program that printed its usage and exited, or needs an operand), one, two and three
/// arguments `2`. A number is what most positional operands of concurrent programs accept
/// (a count of threads or jobs, a port, a size, a pattern), and two is the smallest count of
/// workers that can race with each other. Every execution with them is a real run of the
/// program started that way, so what it witnesses needs nothing else.
pub const ARGUMENT_VECTORS: [&[&str]; 4] = [&[], &["2"], &["2", "2"], &["2", "2", "2"]];

/// Runs [`for_each_run`] with the initial state of each of [`ARGUMENT_VECTORS`] in turn,
/// going on to the next only while no execution created a thread and `budget.total` steps
/// are left. `visit` sees the initial state and arguments too. Returns the steps spent.
fn for_each_argument_vector(
    p: &Program,
    roles: &Roles,
    budget: Budget,
    record: bool,
    mut visit: impl FnMut(&Machine<'_>, &[&str], NondetPlan, Sched, &Run, &mut u64) -> bool,
) -> u64 {
    let takes_arguments = p
        .functions
        .iter()
        .any(|f| f.name == "main" && f.body.is_some() && !f.params.is_empty());
    let mut spent = 0u64;
    for arguments in ARGUMENT_VECTORS {
        if spent >= budget.total {
            break;
        }
        let init = match Machine::new(p, roles, NondetPlan::Const(0), arguments) {
            Ok(m) => m,
            Err(stop) => {
                tracing::debug!(reason = stop.reason, "no concrete execution");
                break;
            }
        };
        let mut threaded = false;
        let mut go_on = true;
        let left = Budget {
            total: budget.total - spent,
            ..budget
        };
        spent += for_each_run(&init, left, record, |plan, sched, run, used| {
            threaded |= run.threaded;
            go_on = visit(&init, arguments, plan, sched, run, used);
            go_on
        });
        if threaded || !go_on || !takes_arguments {
            break;
        }
    }
    spent
}

/// Runs the executions of [`strategies`] from `init` in order, each of at most `budget.run`
/// steps, while `budget.total` steps are left, skipping those known to repeat an earlier one:
/// a schedule whose run drew no value runs alike under every plan, a plan whose run created
/// no thread runs alike under every schedule (and a run doing neither is the only one).
/// `visit` sees each run with its plan and schedule and the steps spent so far, to which it
/// adds its own; it returns false to stop. `record` as for [`execute`]. Returns the steps
/// spent.
fn for_each_run(
    init: &Machine<'_>,
    budget: Budget,
    record: bool,
    mut visit: impl FnMut(NondetPlan, Sched, &Run, &mut u64) -> bool,
) -> u64 {
    let mut spent = 0u64;
    let mut same_sched: FxHashSet<Sched> = FxHashSet::default();
    let mut same_plan: Vec<NondetPlan> = Vec::new();
    for (plan, sched) in strategies() {
        if spent >= budget.total {
            break;
        }
        if same_sched.contains(&sched) || same_plan.contains(&plan) {
            continue;
        }
        let run = execute(
            init,
            plan,
            sched,
            budget.run.min(budget.total - spent),
            record,
        );
        spent += run.steps;
        if !run.drew {
            same_sched.insert(sched);
        }
        if !run.threaded {
            same_plan.push(plan);
        }
        if !visit(plan, sched, &run, &mut spent) || (!run.drew && !run.threaded) {
            break;
        }
    }
    spent
}

/// Searches for witnessed races: returns every witness found (at most one per pair of
/// statements), stopping once every goal is confirmed or the budget is spent.
pub fn search(p: &Program, roles: &Roles, goals: &Goals<'_>, budget: Budget) -> Vec<Witness> {
    let mut witnesses: Vec<Witness> = Vec::new();
    let mut hit = vec![false; goals.stmts.len()];
    let mut witnessed: FxHashSet<(Stmt, Stmt)> = FxHashSet::default();
    let mut tried: FxHashMap<(Stmt, Stmt), u32> = FxHashMap::default();
    let mut attempts = 0u32;
    let all_hit = |hit: &[bool]| !hit.is_empty() && hit.iter().all(|h| *h);
    let total = for_each_argument_vector(
        p,
        roles,
        budget,
        false,
        |init, arguments, plan, sched, run, spent| {
            // Candidates of unconfirmed goals first, then the others.
            let pair = |c: &Candidate| -> (Stmt, Stmt) {
                let a = (c.first.func, c.first.edge);
                let b = (c.second.func, c.second.edge);
                (a.min(b), a.max(b))
            };
            let wanted = |c: &Candidate, hit: &[bool]| {
                let (a, b) = pair(c);
                goals
                    .stmts
                    .iter()
                    .zip(hit)
                    .any(|(s, h)| !h && s.contains(&a) && s.contains(&b))
            };
            // The step ending the program, held back as a candidate of its own.
            let exit: Option<Candidate> = run.exit_step.map(|(step, tid, a)| Candidate {
                first_step: step,
                first_tid: tid,
                first: a,
                second_step: step,
                second_tid: tid,
                second: a,
            });
            let mut order: Vec<&Candidate> = run.candidates.iter().chain(exit.iter()).collect();
            order.sort_by_key(|c| (!wanted(c, &hit), c.first_step));
            for c in order {
                if *spent >= budget.total || attempts >= budget.attempts || all_hit(&hit) {
                    break;
                }
                let key = pair(c);
                if witnessed.contains(&key) {
                    continue;
                }
                let n = tried.entry(key).or_insert(0);
                if *n >= 2 {
                    continue;
                }
                *n += 1;
                attempts += 1;
                let distance = (c.second_step - c.first_step) as u64;
                let limit = (c.first_step as u64 + 4 * distance + 2000).min(budget.total - *spent);
                let (w, used) = confirm(init, plan, run, c, limit);
                *spent += used;
                let Some(mut w) = w else { continue };
                w.run = format!(
                    "schedule {}, nondeterministic values {}",
                    sched.describe(),
                    plan.describe()
                );
                if !arguments.is_empty() {
                    w.run = format!("arguments '{}', {}", arguments.join(" "), w.run);
                }
                let a = (w.first.func, w.first.edge);
                let b = (w.second.func, w.second.edge);
                if !witnessed.insert((a.min(b), a.max(b))) {
                    continue;
                }
                for i in (goals.matcher)(&w) {
                    if let Some(h) = hit.get_mut(i) {
                        *h = true;
                    }
                }
                witnesses.push(w);
            }
            !all_hit(&hit)
        },
    );
    tracing::info!(
        steps = total,
        attempts,
        witnesses = witnesses.len(),
        "concrete witness search"
    );
    witnesses
}
