//! The analysis pipeline of `racedar check` (DESIGN.md, "Pipeline"): concurrency model →
//! backend → thread-creation graph → lockset and active-threads analyses → race detection and
//! deadlock detection → verdict (deadlocks do not change it).

use crate::backend::Backend;
use crate::backend::syntactic::Syntactic;
use crate::backend::value::ValueBackend;
use crate::context::ThreadContexts;
use crate::deadlocks::DeadlockResult;
use crate::ir::{Callee, FuncId, Linkage, Loc, Op, Program};
use crate::lockset::{Inherited, LocksetResult};
use crate::mhp::{MhpResult, Point, ThreadFacts};
use crate::model::{Model, Role, Roles};
use crate::races::escape::Escape;
use crate::races::{self, Confidence, RaceResult};
use crate::report::Verdict;
use crate::stats::Phase;
use crate::threads::ThreadGraph;
use std::time::Instant;

/// Which backend answers the analyses' queries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum BackendKind {
    /// Addresses read off the expressions (seed 001 §4, "Syntactic backend").
    Syntactic,
    /// The thread-modular interval/points-to abstract interpreter (seed 001 §4–5).
    #[default]
    Value,
}

/// Options of the analysis.
#[derive(Clone, Debug)]
pub struct AnalysisOptions {
    /// The backend.
    pub backend: BackendKind,
    /// Call-string length of contexts (`--context-depth`).
    pub context_depth: usize,
    /// Iterations of thread-creating loops peeled (`--unroll`).
    pub unroll: u8,
    /// The concurrency model.
    pub model: Model,
    /// Which verdicts the race results may support (`--mode`).
    pub mode: Mode,
    /// Search for races witnessed by concrete executions (`crate::concrete`; `--no-concrete`
    /// turns it off).
    pub concrete: bool,
    /// Whether to look for deadlocks (`--no-deadlocks` turns it off).
    pub deadlocks: bool,
    /// The entry functions of library mode (`--entry`, issue 21 item 2): when not empty, the
    /// program is analysed as a library with these entries even if it has a `main`
    /// ([`crate::ir::harness`]). Names that are not functions with a body are left out here;
    /// [`check_entries`] reports them.
    pub entries: Vec<String>,
}

/// How the verdict is drawn from the races (seed 001 §5.3: the under- and over-approximating
/// strategies and their combination).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Mode {
    /// `race` only on a must-race, `no-race` only when no race at all is possible.
    #[default]
    Combined,
    /// Only must-races are reported; the verdict is `race` or `unknown`, never `no-race`.
    Under,
    /// Every possible race counts: the verdict is `race` on any race, `no-race` otherwise.
    Over,
}

impl Default for AnalysisOptions {
    fn default() -> Self {
        AnalysisOptions {
            backend: BackendKind::Value,
            context_depth: 1,
            unroll: 2,
            model: Model::shipped(),
            mode: Mode::Combined,
            concrete: true,
            deadlocks: true,
            entries: Vec::new(),
        }
    }
}

/// A reason the verdict cannot be definite.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Imprecision {
    /// What it is.
    pub reason: String,
    /// Where (when one place is to blame).
    pub loc: Option<Loc>,
    /// It may make a reported must-race spurious: no `race` verdict.
    pub blocks_race: bool,
    /// It may hide a race: no `no-race` verdict.
    pub blocks_no_race: bool,
    /// For a wait the analysis does not order: where it is. Its doubt on must-races
    /// (`blocks_race`) then concerns only the races with an access the wait may precede
    /// ([`crate::waits`]).
    pub wait: Option<crate::waits::WaitPoint>,
}

/// Everything `racedar check` computed.
pub struct Analysis<'p> {
    /// The program.
    pub program: &'p Program,
    /// The roles of its functions (the concurrency model applied).
    pub roles: &'p Roles,
    /// Thread-creation graph.
    pub graph: ThreadGraph,
    /// Lockset results.
    pub locksets: LocksetResult,
    /// Races found.
    pub races: RaceResult<'p>,
    /// Deadlocks found (`None`: deadlock detection was off).
    pub deadlocks: Option<DeadlockResult>,
    /// Reasons the verdict is not definite, sorted.
    pub imprecision: Vec<Imprecision>,
    /// Parts of the analysis cut short or given up (a budget exceeded, threads or pairs left
    /// out): the results are less reliable everywhere, not at one place. Each is also an
    /// `imprecision` entry.
    pub degraded: Vec<String>,
    /// Races witnessed by concrete executions that no static race explains (the static
    /// analysis missed them).
    pub unexplained: Vec<crate::concrete::Witness>,
    /// The verdict.
    pub verdict: Verdict,
    /// Time per phase.
    pub phases: Vec<Phase>,
}

/// Prepares a lowered program for [`analyse`]: peels `opts.unroll` iterations of the loops
/// that create threads ([`crate::ir::unroll`]), then gives each call site of a small function
/// that creates or joins threads its own copy ([`crate::ir::specialise`]), so that each
/// peeled iteration and each call of a create wrapper starts its own thread; finally calls
/// exit handlers and registered callbacks where they run ([`crate::ir::deferred`]). In library
/// mode (no `main`, or `opts.entries` named) it adds, before the callbacks, the harness that
/// calls the entry functions from any number of threads ([`crate::ir::harness`]; after the
/// peeling, so that the entries' threads stay non-unique).
pub fn prepare(program: &mut Program, roles: &mut Roles, opts: &AnalysisOptions) {
    let n = crate::ir::unroll::peel_thread_loops(program, roles, opts.unroll);
    tracing::debug!(loops = n, "peeled thread-creating loops");
    let n = crate::ir::specialise::specialise_thread_functions(program, roles);
    tracing::debug!(copies = n, "specialised thread functions per call site");
    if library_mode(program, opts) {
        let names: Vec<String> = opts
            .entries
            .iter()
            .filter(|n| check_entries(program, std::slice::from_ref(n)).is_ok())
            .cloned()
            .collect();
        let entries = crate::ir::harness::entries(program, roles, &names).unwrap_or_default();
        tracing::debug!(entries = entries.len(), "library mode: harness added");
        crate::ir::harness::add_harness(program, roles, &entries);
    }
    let n = crate::ir::deferred::insert_deferred_callbacks(program, roles);
    tracing::debug!(sites = n, "deferred callbacks made explicit");
}

/// Whether `program` is analysed as a library (issue 21 item 2): `--entry` names entries, or
/// it has no [`main_function`].
pub fn library_mode(program: &Program, opts: &AnalysisOptions) -> bool {
    !opts.entries.is_empty() || main_function(program).is_none()
}

/// Checks the `--entry` names: each must be a function with a body.
///
/// # Errors
/// The first name that is not: `--entry NAME: no function with a body of that name`.
pub fn check_entries(program: &Program, entries: &[String]) -> Result<(), String> {
    for n in entries {
        if !program
            .functions
            .iter()
            .any(|f| &f.name == n && f.body.is_some() && f.linkage != Linkage::None)
        {
            return Err(format!("--entry {n}: no function with a body of that name"));
        }
    }
    Ok(())
}

/// The imprecision of library mode: races rest on the assumption that the entries run
/// concurrently, so none is certain; it does not block `no-race`.
pub const LIBRARY_MODE: &str =
    "library mode: entry functions assumed to be called concurrently by any number of threads";

/// Runs the race analysis on a lowered program whose functions `roles` classifies
/// ([`Model::classify`] with `opts.model`).
pub fn analyse<'p>(program: &'p Program, roles: &'p Roles, opts: &AnalysisOptions) -> Analysis<'p> {
    let mut phases = Vec::new();
    let t = Instant::now();
    match opts.backend {
        BackendKind::Syntactic => {
            let backend = Syntactic::new(program, roles);
            phases.push(Phase::new("model", t.elapsed()));
            run(program, roles, backend, opts, phases)
        }
        // Without a statement that may start a thread, `main` runs alone (signal handlers
        // only interrupt it): the value analysis, which mainly finds the threads and what
        // they share, has nothing to add to the syntactic backend's answers.
        BackendKind::Value if !may_start_threads(program, roles) => {
            tracing::debug!("no statement may start a thread: syntactic backend");
            let backend = Syntactic::new(program, roles);
            phases.push(Phase::new("model", t.elapsed()));
            run(program, roles, backend, opts, phases)
        }
        BackendKind::Value => {
            let backend = ValueBackend::new(program, roles, opts.context_depth);
            phases.push(Phase::new("model", t.elapsed()));
            run(program, roles, backend, opts, phases)
        }
    }
}

/// Whether some statement of the program may start a thread: a call of a thread-creating
/// function (directly, or through a pointer when such a function's address is taken), or of
/// a library function that runs a callback in a new thread.
fn may_start_threads(program: &Program, roles: &Roles) -> bool {
    let creates = |f: &FuncId| matches!(roles.get(*f), Some(Role::ThreadCreate { .. }));
    crate::ir::specialise::address_taken(program)
        .iter()
        .any(creates)
        || program
            .functions
            .iter()
            .filter_map(|f| f.body.as_ref())
            .flat_map(|cfg| cfg.edges.iter())
            .any(|e| {
                e.op.direct_callee().is_some_and(|g| creates(&g))
                    || roles
                        .callbacks(program, &e.op)
                        .iter()
                        .any(|c| matches!(c.runs, crate::model::library::Runs::Thread))
            })
}

fn run<'p, B: Backend<'p>>(
    program: &'p Program,
    roles: &'p Roles,
    mut backend: B,
    opts: &AnalysisOptions,
    mut phases: Vec<Phase>,
) -> Analysis<'p> {
    let mut imprecision = Vec::new();
    let t = Instant::now();
    let library = crate::ir::harness::harness(program);
    let mut library_cut = None;
    if library.is_some() {
        imprecision.push(Imprecision {
            reason: LIBRARY_MODE.into(),
            loc: None,
            blocks_race: true,
            blocks_no_race: false,
            wait: None,
        });
        if let Some((cut, all)) = crate::ir::harness::left_out(program, roles, &opts.entries) {
            let reason = format!(
                "library mode: {cut} of {all} entry functions left out (the first {} analysed; \
                 name the others with --entry)",
                crate::ir::harness::MAX_AUTO_ENTRIES
            );
            imprecision.push(Imprecision {
                reason: reason.clone(),
                loc: None,
                blocks_race: false,
                blocks_no_race: true,
                wait: None,
            });
            library_cut = Some(reason);
        }
    }
    let Some(main) = library.or_else(|| main_function(program)) else {
        imprecision.push(Imprecision {
            reason: "no main function: nothing to start the threads from".into(),
            loc: None,
            blocks_race: true,
            blocks_no_race: true,
            wait: None,
        });
        return empty(program, roles, imprecision, phases, opts.deadlocks);
    };
    let mut graph = thread_graph(program, roles, &mut backend, main, opts.context_depth);
    while backend.retry_cheaper() {
        graph = thread_graph(program, roles, &mut backend, main, opts.context_depth);
    }
    let mut degraded: Vec<String> = library_cut.into_iter().collect();
    for reason in backend.degradations() {
        degraded.push(reason.clone());
        imprecision.push(Imprecision {
            reason,
            loc: None,
            blocks_race: false,
            blocks_no_race: false,
            wait: None,
        });
    }
    if graph.truncated {
        let reason = format!(
            "more than {} threads: the rest were not analysed",
            crate::threads::MAX_THREADS
        );
        degraded.push(reason.clone());
        imprecision.push(Imprecision {
            reason,
            loc: None,
            blocks_race: false,
            blocks_no_race: true,
            wait: None,
        });
    }
    phases.push(Phase::new("threads", t.elapsed()));
    tracing::info!(
        threads = graph.threads.len(),
        contexts = graph.contexts.iter().map(|c| c.ctxs.len()).sum::<usize>(),
        "thread-creation graph"
    );
    for th in &graph.threads {
        tracing::debug!(
            thread = th.id.0,
            name = %th.name(program),
            parents = ?th.parents,
            unique = th.unique,
            signal = th.signal,
            unseen = th.unseen,
            "thread"
        );
    }
    let t = Instant::now();
    let mut locksets = LocksetResult::compute(program, roles, &backend, &graph);
    phases.push(Phase::new("lockset", t.elapsed()));
    let t = Instant::now();
    let (mhp, thread_facts) = active_threads(program, roles, &backend, &graph);
    phases.push(Phase::new("mhp", t.elapsed()));
    let t = Instant::now();
    let (races, inherited) = find_races(
        program,
        roles,
        &backend,
        &graph,
        &mut locksets,
        &mhp,
        &thread_facts,
    );
    phases.push(Phase::new("races", t.elapsed()));
    if races.truncated {
        let reason = format!(
            "more than {} access pairs: race search cut short",
            races::MAX_PAIR_CHECKS
        );
        degraded.push(reason.clone());
        imprecision.push(Imprecision {
            reason,
            loc: None,
            blocks_race: false,
            blocks_no_race: true,
            wait: None,
        });
    }
    for (kind, loc) in &races.unreported {
        imprecision.push(Imprecision {
            reason: kind.reason().to_string(),
            loc: Some(*loc),
            blocks_race: false,
            blocks_no_race: true,
            wait: None,
        });
    }
    imprecision.extend(features(
        program,
        roles,
        &backend,
        &graph,
        &locksets,
        &races.accesses,
    ));
    imprecision.sort();
    imprecision.dedup();
    let deadlocks = opts.deadlocks.then(|| {
        let t = Instant::now();
        let d = find_deadlocks(
            program,
            roles,
            &backend,
            &graph,
            (&mhp, &thread_facts, &inherited),
            &mut locksets,
            // What may order threads without the analysis knowing also casts doubt on
            // deadlocks.
            imprecision.iter().any(|i| i.blocks_race),
        );
        phases.push(Phase::new("deadlocks", t.elapsed()));
        d
    });
    let mut races = races;
    let mut unexplained = Vec::new();
    // Concrete executions of the harness are not executions of the program (library mode).
    if opts.concrete && library.is_none() {
        let t = Instant::now();
        unexplained = witness_races(program, roles, &mut races);
        phases.push(Phase::new("concrete", t.elapsed()));
    }
    let wait_points: Vec<crate::waits::WaitPoint> = imprecision
        .iter()
        .filter(|i| i.blocks_race)
        .filter_map(|i| i.wait)
        .collect();
    let waits = crate::waits::Waits::compute(program, &graph, &wait_points);
    let verdict = verdict(
        &mut races,
        &imprecision,
        &waits,
        opts.mode,
        !unexplained.is_empty(),
    );
    Analysis {
        program,
        roles,
        graph,
        locksets,
        races,
        deadlocks,
        imprecision,
        degraded,
        unexplained,
        verdict,
        phases,
    }
}

/// The function threads start from: the defined, externally visible `main`, if any.
pub fn main_function(program: &Program) -> Option<FuncId> {
    program
        .functions
        .iter()
        .position(|f| f.name == "main" && f.body.is_some() && f.linkage == Linkage::External)
        .map(|i| FuncId(i as u32))
}

/// Phase `threads`: the thread-modular fixpoint (seed 001 Algorithm 1), rounds of thread
/// analyses from `main` until the backend's results are stable; returns the final
/// thread-creation graph. The backend then answers queries for it (and reports in
/// [`Backend::degradations`] whether it gave up precision).
pub fn thread_graph<'p, B: Backend<'p>>(
    program: &'p Program,
    roles: &'p Roles,
    backend: &mut B,
    main: FuncId,
    context_depth: usize,
) -> ThreadGraph {
    let mut graph: Option<ThreadGraph> = None;
    loop {
        backend.begin_round(graph.as_ref());
        let g = ThreadGraph::build(program, roles, backend, main, context_depth, graph.as_ref());
        let stable = backend.end_round(g.threads.len());
        if stable {
            return g;
        }
        graph = Some(g);
    }
}

/// Phase `mhp`: the active-threads analysis ([`MhpResult`]) and each thread's creation facts,
/// with branch and constant questions answered by `backend`.
pub fn active_threads<'p, B: Backend<'p>>(
    program: &'p Program,
    roles: &'p Roles,
    backend: &B,
    graph: &ThreadGraph,
) -> (MhpResult, Vec<ThreadFacts>) {
    let branch = |ctx: &crate::context::Context| branch_outcome(program, backend, ctx);
    let constant = |ctx: &crate::context::Context, e: &crate::ir::Expr| {
        let r = backend.value(ctx, e);
        r.lo.filter(|lo| r.hi == Some(*lo))
    };
    let oracle = crate::mhp::Oracle {
        branch: &branch,
        constant: &constant,
    };
    let mhp = MhpResult::compute(
        program,
        roles,
        graph,
        &oracle,
        // Threads with equal contexts share a solution when the answers do not depend on
        // the thread.
        backend.thread_independent(),
    );
    let thread_facts = mhp.thread_facts(program, roles, graph);
    (mhp, thread_facts)
}

/// Phase `races`: the locks each thread inherits from its creators (which `locksets`
/// records), escape, thread-private allocations, per-instance slots and the race search;
/// returns the races and the inherited locks (deadlock detection needs them too).
pub fn find_races<'p, B: Backend<'p>>(
    program: &'p Program,
    roles: &'p Roles,
    backend: &B,
    graph: &ThreadGraph,
    locksets: &mut LocksetResult,
    mhp: &MhpResult,
    thread_facts: &[ThreadFacts],
) -> (RaceResult<'p>, Vec<Inherited>) {
    let inherited: Vec<Inherited> =
        locksets.inherited(program, roles, backend, graph, &|p, c, n, child| {
            let at = mhp.at(Point {
                thread: p,
                ctx: c,
                node: n,
            });
            crate::mhp::alive_at(thread_facts, &at, p, child)
        });
    let escape = Escape::compute(program, roles);
    let private = races::private::private_allocations(program, roles, graph);
    let slots = races::slots::Slots::compute(program, roles, graph, backend, locksets);
    let children = crate::threads::fork::ChildCode::compute(program, roles, graph);
    let races = races::detect(&races::Inputs {
        program,
        backend,
        graph,
        locksets,
        inherited: &inherited,
        mhp,
        thread_facts,
        escape: &escape,
        private: &private,
        slots: &slots,
        children: &children,
    });
    (races, inherited)
}

/// Phase `deadlocks`: lock-order cycles and double locks ([`crate::deadlocks`]) from the
/// active threads, the threads' creation facts and inherited locks (`(mhp, thread_facts,
/// inherited)`); `doubtful` (the program synchronises in ways the analysis does not model)
/// demotes every deadlock to `may`.
pub fn find_deadlocks<'p, B: Backend<'p>>(
    program: &'p Program,
    roles: &'p Roles,
    backend: &B,
    graph: &ThreadGraph,
    (mhp, thread_facts, inherited): (&MhpResult, &[ThreadFacts], &[Inherited]),
    locksets: &mut LocksetResult,
    doubtful: bool,
) -> DeadlockResult {
    let mut d = crate::deadlocks::detect(
        &crate::deadlocks::Inputs {
            program,
            roles,
            backend,
            graph,
            mhp,
            thread_facts,
            inherited,
        },
        locksets,
    );
    if doubtful {
        crate::deadlocks::demote(
            program,
            &mut d,
            "the program synchronises in ways the analysis does not model",
        );
    }
    d
}

fn empty<'p>(
    program: &'p Program,
    roles: &'p Roles,
    imprecision: Vec<Imprecision>,
    phases: Vec<Phase>,
    deadlocks: bool,
) -> Analysis<'p> {
    Analysis {
        program,
        roles,
        graph: ThreadGraph {
            threads: Vec::new(),
            graph: petgraph::graph::DiGraph::new(),
            contexts: Vec::new(),
            truncated: false,
        },
        locksets: LocksetResult::empty(),
        races: RaceResult {
            accesses: Vec::new(),
            races: Vec::new(),
            truncated: false,
            unreported: Default::default(),
        },
        deadlocks: deadlocks.then(DeadlockResult::default),
        imprecision,
        degraded: Vec::new(),
        unexplained: Vec::new(),
        verdict: Verdict::Unknown,
        phases,
    }
}

/// Phase `concrete`: searches concrete executions for witnesses of the static races
/// (`crate::concrete`), upgrades the races they confirm to must-races, and returns the
/// witnessed races no static race explains.
pub fn witness_races(
    program: &Program,
    roles: &Roles,
    races: &mut RaceResult<'_>,
) -> Vec<crate::concrete::Witness> {
    use crate::concrete::{self, Budget, Goals};
    let stmts = races
        .races
        .iter()
        .map(|r| {
            r.accesses
                .iter()
                .map(|&i| (races.accesses[i].func, races.accesses[i].edge))
                .collect()
        })
        .collect();
    let view: &RaceResult<'_> = races;
    let matcher = |w: &concrete::Witness| concrete::upgrade::matching_races(program, view, w);
    let goals = Goals {
        stmts,
        matcher: &matcher,
    };
    let edges = program
        .functions
        .iter()
        .filter_map(|f| f.body.as_ref())
        .map(|c| c.edges.len())
        .sum();
    let witnesses = concrete::search(program, roles, &goals, Budget::for_size(edges));
    let unexplained = concrete::upgrade::apply(program, races, &witnesses);
    for w in &unexplained {
        tracing::warn!(
            "a concrete execution witnessed a race the static analysis missed: {}",
            concrete::upgrade::describe(program, w)
        );
        tracing::debug!(first = ?w.first, second = ?w.second, "unexplained witness");
    }
    unexplained
}

/// The combined verdict: `race` on a must-race nothing casts doubt on, `no-race` when no race
/// at all and nothing may hide one, `unknown` otherwise (DESIGN.md, "verdict"). Must-races that
/// an imprecision casts doubt on are reported as may-races, unless a concrete execution
/// witnessed them; `witnessed` says a concrete execution witnessed a race no static race
/// explains. `Mode::Under` drops may-races and never answers `no-race`; `Mode::Over` answers
/// `race` on any race. The doubt of a wait the analysis does not order ([`crate::waits`])
/// falls only on the must-races whose racing pair has an access such a wait may precede.
fn verdict(
    races: &mut RaceResult<'_>,
    imprecision: &[Imprecision],
    waits: &crate::waits::Waits,
    mode: Mode,
    witnessed: bool,
) -> Verdict {
    let blocks_all = imprecision
        .iter()
        .any(|i| i.blocks_race && i.wait.is_none());
    let blocks_after_waits = imprecision
        .iter()
        .any(|i| i.blocks_race && i.wait.is_some());
    let blocks_no_race = imprecision.iter().any(|i| i.blocks_no_race);
    let library = imprecision.iter().any(|i| i.reason == LIBRARY_MODE);
    if blocks_all || blocks_after_waits {
        let accesses = &races.accesses;
        for r in &mut races.races {
            if r.confidence != Confidence::Must || r.witness.is_some() {
                continue;
            }
            let doubted = blocks_all
                || r.accesses
                    .iter()
                    .take(2)
                    .any(|&i| accesses.get(i).is_none_or(|a| waits.after(a.func, a.edge)));
            if doubted {
                r.confidence = Confidence::May;
                r.reasons = vec![if library {
                    LIBRARY_MODE
                } else {
                    "the program synchronises in ways the analysis does not model"
                }];
            }
        }
    }
    match mode {
        Mode::Combined => {}
        Mode::Under => {
            races.races.retain(|r| r.confidence == Confidence::Must);
            return if races.races.is_empty() && !witnessed {
                Verdict::Unknown
            } else {
                Verdict::Race
            };
        }
        Mode::Over => {
            return if !races.races.is_empty() || witnessed {
                Verdict::Race
            } else if blocks_no_race {
                Verdict::Unknown
            } else {
                Verdict::NoRace
            };
        }
    }
    if witnessed || races.races.iter().any(|r| r.confidence == Confidence::Must) {
        Verdict::Race
    } else if races.races.is_empty() && !blocks_no_race {
        Verdict::NoRace
    } else {
        Verdict::Unknown
    }
}

/// Whether the branch statement of `ctx` is never taken, always taken when reached, or either,
/// by the backend's values of its condition.
fn branch_outcome<'p, B: Backend<'p>>(
    program: &Program,
    backend: &B,
    ctx: &crate::context::Context,
) -> racedar_domains::Bool3 {
    use racedar_domains::Bool3;
    let Some(edge) = program
        .function(ctx.fctx.func)
        .body
        .as_ref()
        .and_then(|c| c.edges.get(ctx.edge.0 as usize))
    else {
        return Bool3::Maybe;
    };
    let Op::Assume { cond, branch } = &edge.op else {
        return Bool3::Maybe;
    };
    if !backend.feasible(ctx) {
        return Bool3::False;
    }
    let r = backend.value(ctx, cond);
    let nonzero = r.lo.is_some_and(|l| l > 0) || r.hi.is_some_and(|h| h < 0);
    let zero = r.lo == Some(0) && r.hi == Some(0);
    if (*branch && nonzero) || (!*branch && zero) {
        Bool3::True
    } else {
        Bool3::Maybe
    }
}

/// Constructs of the reachable program the analysis does not model fully.
/// The lock paths ([`crate::lockset::paths`]) whose cells a write may change while other
/// threads run: their identity is an assumption, which blocks `no-race`. A write is harmless
/// when it goes to an object not published yet, or is made by `main` while no other thread
/// may be active.
fn lock_path_assumptions(
    program: &Program,
    locksets: &LocksetResult,
    accesses: &[races::Access<'_>],
) -> Vec<Imprecision> {
    use crate::backend::{AccessKind, AccessSite};
    use crate::lockset::paths;
    let lock_paths = locksets.table.paths();
    if lock_paths.is_empty() {
        return Vec::new();
    }
    let taken = paths::address_taken_globals(program);
    let writes = accesses
        .iter()
        .filter(|a| a.mem.kind == AccessKind::Write)
        .filter_map(|a| match a.mem.site {
            AccessSite::Lval(lv) => Some((
                lv,
                a.loc,
                a.mem.unpublished
                    || (a.thread == crate::context::ThreadId::MAIN
                        && a.active.may_active.is_empty()),
            )),
            _ => None,
        });
    paths::unstable_cells(program, lock_paths, &taken, writes)
        .into_iter()
        .map(|u| Imprecision {
            reason: format!(
                "lock '{}' is named by its access path and assumed to stay one lock while \
                 threads hold it, but a pointer on the path is written while other threads \
                 may run",
                u.lock
            ),
            loc: Some(u.loc),
            blocks_race: false,
            blocks_no_race: true,
            wait: None,
        })
        .collect()
}

fn features<'p, B: Backend<'p>>(
    program: &Program,
    roles: &Roles,
    backend: &B,
    graph: &ThreadGraph,
    locksets: &LocksetResult,
    accesses: &[races::Access<'p>],
) -> Vec<Imprecision> {
    let mut out = lock_path_assumptions(program, locksets, accesses);
    for u in &program.unsupported {
        out.push(Imprecision {
            reason: format!("{} is not modelled", u.what),
            loc: Some(u.loc),
            blocks_race: false,
            blocks_no_race: true,
            wait: None,
        });
    }
    // An unlock of a mutex the thread does not hold is undefined for default mutexes and
    // fails for error-checking ones: the program's locking is not what it intends, and the
    // locksets a no-race proof rests on may not be either.
    for tc in &graph.contexts {
        let unheld = locksets.unheld_unlocks(tc.thread, |c, e| {
            let cfg = program.function(tc.ctx(c).func).body.as_ref()?;
            Some(cfg.edges.get(e.0 as usize)?.src)
        });
        for (c, e) in unheld {
            if let Some(edge) = program
                .function(tc.ctx(c).func)
                .body
                .as_ref()
                .and_then(|cfg| cfg.edges.get(e.0 as usize))
            {
                out.push(Imprecision {
                    reason: "a mutex is unlocked by a thread that does not hold it".into(),
                    loc: Some(edge.loc),
                    blocks_race: false,
                    blocks_no_race: true,
                    wait: None,
                });
            }
        }
    }
    let mut spin_checked = rustc_hash::FxHashSet::default();
    for tc in &graph.contexts {
        for c in tc.ids() {
            let func = tc.ctx(c).func;
            let Some(cfg) = &program.function(func).body else {
                continue;
            };
            if spin_checked.insert(func)
                && let Some((loc, node)) = crate::waits::busy_wait(program, roles, func)
            {
                out.push(Imprecision {
                    reason: "busy-waiting loop: threads may be ordered through shared flags".into(),
                    loc: Some(loc),
                    blocks_race: true,
                    blocks_no_race: false,
                    wait: Some((func, node)),
                });
            }
            for (ei, e) in cfg.edges.iter().enumerate() {
                if !locksets.reachable(tc.thread, c, e.src) {
                    continue;
                }
                let Op::Call { callee, .. } = &e.op else {
                    continue;
                };
                if let Some(g) = dropped_callee(program, locksets, tc, c, ei) {
                    out.push(Imprecision {
                        reason: format!(
                            "'{}' is called here but its body was never analysed in thread {}",
                            program.function(g).name,
                            graph.thread(tc.thread).name(program)
                        ),
                        loc: Some(e.loc),
                        blocks_race: false,
                        blocks_no_race: true,
                        wait: None,
                    });
                }
                match callee {
                    Callee::Direct(f) => {
                        let ctx = tc.context(c, crate::ir::EdgeId(ei as u32));
                        if let Some(reason) = callback_doubt(program, roles, backend, &ctx, &e.op) {
                            out.push(Imprecision {
                                reason,
                                loc: Some(e.loc),
                                blocks_race: false,
                                blocks_no_race: true,
                                wait: None,
                            });
                        }
                        let unknown = (roles.get(*f).is_none()
                            && program.function(*f).body.is_none())
                        .then(|| {
                            let ctx = tc.context(c, crate::ir::EdgeId(ei as u32));
                            unknown_call(program, backend, &ctx, accesses, &e.op, *f)
                        })
                        .flatten();
                        if let Some((reason, blocks_race)) = unknown {
                            out.push(Imprecision {
                                reason,
                                loc: Some(e.loc),
                                blocks_race,
                                blocks_no_race: true,
                                // A thread-library function may wait for other threads.
                                wait: blocks_race.then_some((func, e.dst)),
                            });
                            continue;
                        }
                        let (reason, blocks_race, blocks_no_race) = match roles.get(*f) {
                            Some(Role::CondWait { .. }) => {
                                ("condition variables order threads", true, false)
                            }
                            Some(Role::BarrierWait { .. }) => {
                                ("barriers order threads", true, false)
                            }
                            Some(Role::NonlocalJump { .. }) => (
                                "setjmp/longjmp jump where the control-flow graph does not",
                                true,
                                true,
                            ),
                            // A post holds nobody back: the waits it pairs with carry the
                            // doubt on must-races.
                            Some(Role::SemPost { .. })
                                if !locksets.sem_is_mutex(
                                    tc.thread,
                                    c,
                                    crate::ir::EdgeId(ei as u32),
                                ) =>
                            {
                                let e = crate::ir::EdgeId(ei as u32);
                                let known = locksets.sem_is_handshake(tc.thread, c, e);
                                ("semaphores order and exclude threads", false, !known)
                            }
                            Some(Role::SemWait { .. })
                                if !locksets.sem_is_mutex(
                                    tc.thread,
                                    c,
                                    crate::ir::EdgeId(ei as u32),
                                ) =>
                            {
                                // A handshake's wait orders threads the way the analysis
                                // knows; it still casts doubt on must-races.
                                let e = crate::ir::EdgeId(ei as u32);
                                let known = locksets.sem_is_handshake(tc.thread, c, e);
                                ("semaphores order and exclude threads", true, !known)
                            }
                            // POSIX lets a read lock fail (EAGAIN: too many readers); the
                            // locksets assume it succeeds, which a no-race proof cannot.
                            Some(Role::Lock {
                                mode: crate::model::LockMode::Read,
                                kind: crate::model::LockKind::Blocking,
                                ..
                            }) => (
                                "read locks may fail (EAGAIN) and are assumed to succeed",
                                false,
                                true,
                            ),
                            Some(Role::ThreadCreate { .. }) => {
                                let site = crate::context::CallSite {
                                    func,
                                    edge: crate::ir::EdgeId(ei as u32),
                                };
                                // With the thread graph cut short, a create left out is
                                // the truncation (reported once), not an unknown entry.
                                if graph.created_at(site).next().is_none() && !graph.truncated {
                                    ("a thread whose entry function is unknown", false, true)
                                } else {
                                    continue;
                                }
                            }
                            _ => continue,
                        };
                        let role = roles.get(*f);
                        out.push(Imprecision {
                            reason: reason.into(),
                            loc: Some(e.loc),
                            blocks_race,
                            blocks_no_race,
                            wait: crate::waits::is_wait_role(role).then_some((func, e.dst)),
                        });
                    }
                    Callee::Indirect(fp) => {
                        let ctx = tc.context(c, crate::ir::EdgeId(ei as u32));
                        if backend.functions(&ctx, fp).funcs.is_empty() {
                            out.push(Imprecision {
                                reason: "a call through a function pointer with no known target"
                                    .into(),
                                loc: Some(e.loc),
                                blocks_race: false,
                                blocks_no_race: true,
                                wait: None,
                            });
                        }
                    }
                }
            }
        }
    }
    // Keep one entry per reason and place (sorted later).
    out
}

/// A defined function a reached call statement surely calls (a direct call, or the single
/// target of a `pthread_once`) whose entry the thread's analysis never reached: code that
/// silently dropped out of the analysis (issue "Soundness and recall on real code", item 3).
/// Candidates of a function pointer are left out: the state at the call may exclude some.
fn dropped_callee(
    program: &Program,
    locksets: &LocksetResult,
    tc: &ThreadContexts,
    c: crate::context::FnCtxId,
    edge: usize,
) -> Option<FuncId> {
    tc.callees(c, crate::ir::EdgeId(edge as u32))
        .iter()
        .filter(|t| t.exact)
        .find(|t| {
            program
                .function(t.func)
                .body
                .as_ref()
                .is_some_and(|cfg| !locksets.reachable(tc.thread, t.ctx, cfg.entry))
        })
        .map(|t| t.func)
}

/// Why the callbacks a call hands to a library function may hide a race: an unknown function
/// receives functions it may call (analysed as called during the call, which code we do not
/// see need not do), or a specified callback has no known target.
fn callback_doubt<'p, B: Backend<'p>>(
    program: &Program,
    roles: &Roles,
    backend: &B,
    ctx: &crate::context::Context,
    op: &Op,
) -> Option<String> {
    let Op::Call {
        callee: Callee::Direct(f),
        args,
        ..
    } = op
    else {
        return None;
    };
    let name = &program.function(*f).name;
    let types = &program.types;
    for cb in roles.callbacks(program, op) {
        let Some(a) = args.get(cb.arg) else { continue };
        // A null pointer or a constant like `SIG_IGN`, or no pointer at all: no callback.
        let inner = crate::ir::visit::strip_casts(a);
        if inner.as_int().is_some() || (!types.is_pointer(a.ty) && !types.is_pointer(inner.ty)) {
            continue;
        }
        let targets = backend.callback_functions(ctx, a, cb.deep);
        if cb.index == crate::model::UNKNOWN_CALLBACK {
            // Its functions run as threads started at the call (sound for any time and any
            // thread); a pointer to data holding no function has none.
            continue;
        }
        if targets.funcs.is_empty() {
            return Some(format!("a callback passed to '{name}' has no known target"));
        }
    }
    None
}

/// Why a call of `f`, a function without body the concurrency model does not know, may hide a
/// race, and whether it may also order threads (no `race` verdict then): a thread-library
/// function (it may synchronise or start threads), or a function receiving a pointer to data
/// the program accesses elsewhere (it may keep the pointer and access the memory later, from
/// any thread, unseen). `None` when neither: its accesses through the arguments are those of
/// the call itself ([`crate::backend::accesses`]), callbacks it receives run as threads
/// ([`crate::threads`]), and memory only it gets to see (a table of callbacks, say) cannot
/// race with the program's own accesses.
fn unknown_call<'p, B: Backend<'p>>(
    program: &Program,
    backend: &B,
    ctx: &crate::context::Context,
    accesses: &[races::Access<'p>],
    op: &Op,
    f: FuncId,
) -> Option<(String, bool)> {
    let name = &program.function(f).name;
    if name.starts_with("__builtin_") {
        // Compiler builtins keep no pointers (the ones that matter are modelled).
        return None;
    }
    if crate::waits::THREAD_API_PREFIXES
        .iter()
        .any(|p| name.starts_with(p))
    {
        return Some((
            format!("thread-library function '{name}' is not modelled"),
            true,
        ));
    }
    let Op::Call { args, .. } = op else {
        return None;
    };
    let types = &program.types;
    let data_pointer = args.iter().any(|a| {
        let inner = crate::ir::visit::strip_casts(a);
        if matches!(
            inner.kind,
            crate::ir::ExprKind::Str(_) | crate::ir::ExprKind::Func(_)
        ) || inner.as_int().is_some()
        {
            return false;
        }
        types
            .pointee(a.ty)
            .or_else(|| types.pointee(inner.ty))
            .is_some_and(|t| !matches!(types.kind(t), crate::ir::types::TypeKind::Function(_)))
    });
    if !data_pointer {
        return None;
    }
    // The objects the arguments point to: harmless when each is known, holds no pointer to
    // data the callee could follow, and no other statement of the program touches it.
    let kept_elsewhere = backend
        .accesses(ctx)
        .iter()
        .filter(|m| matches!(m.site, crate::backend::AccessSite::Pointee(_)))
        .any(|m| match m.target {
            crate::backend::Target::Typed(_) => true,
            crate::backend::Target::Addr(addr) => {
                holds_data_pointer(types, m.ty)
                    || accesses.iter().any(|x| {
                        let own = x.func == ctx.fctx.func
                            && x.edge == ctx.edge
                            && matches!(x.mem.site, crate::backend::AccessSite::Pointee(_));
                        !own && match x.mem.target {
                            crate::backend::Target::Addr(y) => y.base == addr.base,
                            crate::backend::Target::Typed(_) => true,
                        }
                    })
            }
        });
    kept_elsewhere.then(|| {
        (
            format!(
                "unknown function '{name}' receives a pointer: it may keep it and access the \
                 memory later, unseen"
            ),
            false,
        )
    })
}

/// Whether an object of type `ty` may hold a pointer to data (function pointers aside): a
/// pointer, or a struct, union or array with one inside. `void` and incomplete types may hold
/// anything.
fn holds_data_pointer(types: &crate::ir::types::TypeTable, ty: crate::ir::TypeId) -> bool {
    use crate::ir::types::TypeKind;
    types.may_hold(ty, |k| match k {
        TypeKind::Void => true,
        TypeKind::Pointer(p) => !matches!(types.kind(*p), TypeKind::Function(_)),
        _ => false,
    })
}

#[cfg(test)]
mod tests {
    use crate::frontend::{self, FrontendOptions};
    use crate::model::Model;

    fn starts_threads(src: &str) -> bool {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.c");
        std::fs::write(&path, src).expect("write");
        let p = frontend::load(&[path], &FrontendOptions::default())
            .expect("lowers")
            .0;
        let roles = Model::shipped().classify(&p);
        super::may_start_threads(&p, &roles)
    }

    #[test]
    fn only_thread_creations_start_threads() {
        // A create, and a create through a pointer to pthread_create, start threads.
        assert!(starts_threads(
            "#include <pthread.h>\nvoid *t(void *a) { return a; }\n\
             int main(void) { pthread_t id; return pthread_create(&id, 0, t, 0); }\n"
        ));
        assert!(starts_threads(
            "#include <pthread.h>\nvoid *t(void *a) { return a; }\n\
             int (*spawn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *) = \
             pthread_create;\n\
             int main(void) { pthread_t id; return spawn(&id, 0, t, 0); }\n"
        ));
        // Signal handlers only interrupt main.
        assert!(!starts_threads(
            "#include <signal.h>\nint stop;\nvoid h(int s) { stop = s; }\n\
             int main(void) { signal(SIGINT, h); while (!stop) ; return 0; }\n"
        ));
    }
}
