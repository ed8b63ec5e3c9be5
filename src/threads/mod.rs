//! Threads and the thread-creation graph (seed 001 §5.1, Algorithm 1, lines 7–10).
//!
//! A thread is identified by its entry function and its create statement; `main` has none.
//! Starting from `main`, each thread's reachable create statements (in every function context)
//! give its children, with entry functions from the backend's `functions` query. The graph is
//! a petgraph `DiGraph` (parent → child, labelled by the create site).
//!
//! A thread is **unique** when it is created at most once: exactly one parent, the parent is
//! unique and not on a cycle, and the create statement runs at most once per run of the parent
//! with this entry function (not in a loop, in a function reached once: a wrapper called from
//! two sites with the same function or in a loop makes it non-unique, as does recursion; a
//! wrapper called once per function, `run_thread(rx); run_thread(tx);`, starts each once).
//! Seed 001 §7; `notes/racerf-goblint.md` §1.5 (which RacerF misses for wrappers).

pub mod fork;

use crate::backend::Backend;
use crate::context::{CallSite, Context, FnCtxId, ThreadContexts, ThreadId};
use crate::ir::{Callee, Cfg, EdgeId, FuncId, Op, Program};
use crate::model::{Role, Roles};
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashMap;

/// Upper bound on the number of threads (a safety net; threads beyond it are not analysed and
/// the verdict becomes unknown).
pub const MAX_THREADS: usize = 256;

/// One abstract thread.
#[derive(Clone, Debug)]
pub struct Thread {
    /// Its id (index in [`ThreadGraph::threads`]).
    pub id: ThreadId,
    /// Entry function.
    pub entry: FuncId,
    /// The create statement (`None` for `main`).
    pub site: Option<CallSite>,
    /// Threads that run the create statement.
    pub parents: Vec<ThreadId>,
    /// Created at most once (see the module documentation).
    pub unique: bool,
    /// The entry is the only function the create statement can start.
    pub exact_entry: bool,
    /// Whether the thread lies on a cycle of the creation graph.
    pub in_cycle: bool,
    /// A signal handler (installed by `signal`, `sigaction`, ...: it runs asynchronously, in
    /// any thread, any number of times after its installation).
    pub signal: bool,
    /// Started by code the analysis does not see (a function an unknown function receives):
    /// it may run any number of times, or not at all.
    pub unseen: bool,
    /// The start routine a trampoline entry runs: when the entry's only call through a
    /// function pointer has exactly one target in this thread (pigz's `ignition` calling the
    /// routine `launch` was given), that target. Reports name the thread after it.
    pub routine: Option<FuncId>,
}

impl Thread {
    /// A short human name: `main`, or `entry` plus the create line (`worker@main.c:12`); a
    /// thread of a peeled loop iteration adds the iteration (`worker@main.c:12#1`), the loop's
    /// later iterations `#n+`; a create in a wrapper copied for one call adds the calls
    /// (`worker@main.c:12 via main.c:30`); a library entry's thread (library mode,
    /// [`crate::ir::harness`]) is its routine's name, `counter_add (library entry)`.
    pub fn name(&self, program: &Program) -> String {
        let entry = &program.function(self.entry).name;
        // A trampoline's thread is named after the routine it runs.
        let through = self
            .routine
            .map(|_| format!(" through {entry}"))
            .unwrap_or_default();
        let entry = &self
            .routine
            .map_or_else(|| entry.clone(), |r| program.function(r).name.clone());
        if self.signal
            && let Some(site) = self.site
        {
            let loc = program
                .function(site.func)
                .body
                .as_ref()
                .and_then(|c| c.edges.get(site.edge.0 as usize))
                .map(|e| e.loc)
                .unwrap_or_default();
            return format!(
                "signal handler {entry} (installed at {}:{})",
                short_file(program.file_name(loc)),
                loc.line
            );
        }
        match self.site {
            None => entry.clone(),
            // A library entry's thread ([`crate::ir::harness`]): `counter_add (library entry)`.
            Some(site) if crate::ir::harness::is_harness(program, site.func) => entry.clone(),
            Some(site) => {
                let cfg = program.function(site.func).body.as_ref();
                let edge = cfg.and_then(|c| c.edges.get(site.edge.0 as usize));
                let loc = edge.map(|e| e.loc).unwrap_or_default();
                let peel = edge.map_or(0, |e| e.peel);
                // Was this create's loop peeled? Then the original stands for later iterations.
                let peeled_copies = cfg.map_or(0, |c| {
                    c.edges
                        .iter()
                        .filter(|e| e.loc == loc && e.peel > 0)
                        .map(|e| e.peel)
                        .max()
                        .unwrap_or(0)
                });
                let suffix = if peel > 0 {
                    format!("#{peel}")
                } else if peeled_copies > 0 {
                    format!("#{}+", peeled_copies + 1)
                } else {
                    String::new()
                };
                // A create in a copy of a wrapper made for one call ([`crate::ir::specialise`]):
                // the calls that lead to it.
                let mut via = String::new();
                let mut func = site.func;
                for _ in 0..8 {
                    let Some(s) = program.function(func).specialised else {
                        break;
                    };
                    via.push_str(&format!(
                        " via {}:{}",
                        short_file(program.file_name(s.call_loc)),
                        s.call_loc.line
                    ));
                    func = s.caller;
                }
                format!(
                    "{entry}@{}:{}{suffix}{via}{through}",
                    short_file(program.file_name(loc)),
                    loc.line
                )
            }
        }
    }
}

/// The routine a thread entry runs as a trampoline: the single target, in the thread's entry
/// context, of the entry's only call through a function pointer ([`Thread::routine`]).
fn trampoline_routine(program: &Program, tc: &ThreadContexts, entry: FuncId) -> Option<FuncId> {
    let cfg = program.function(entry).body.as_ref()?;
    let mut indirect = cfg.edges.iter().enumerate().filter(|(_, e)| {
        matches!(
            e.op,
            crate::ir::Op::Call {
                callee: crate::ir::Callee::Indirect(_),
                ..
            }
        )
    });
    let (ei, _) = indirect.next()?;
    if indirect.next().is_some() {
        return None;
    }
    let root = tc.ids().next()?;
    if tc.ctx(root).func != entry {
        return None;
    }
    let mut targets = tc
        .callees(root, crate::ir::EdgeId(ei as u32))
        .iter()
        .map(|t| t.func);
    let first = targets.next()?;
    targets.all(|f| f == first).then_some(first)
}

/// The file name of `path` without its directories (thread and object names in reports).
pub fn short_file(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// The threads of a program, their creation graph and their function contexts.
#[derive(Debug)]
pub struct ThreadGraph {
    /// Threads, `main` first.
    pub threads: Vec<Thread>,
    /// The creation graph (node weights are thread ids).
    pub graph: DiGraph<ThreadId, CallSite>,
    /// Function contexts of each thread, indexed like `threads`.
    pub contexts: Vec<ThreadContexts>,
    /// Whether more threads existed than [`MAX_THREADS`].
    pub truncated: bool,
}

/// For each node of a CFG, whether it lies on a cycle (a loop).
pub fn loop_nodes(cfg: &Cfg) -> Vec<bool> {
    let mut g: DiGraph<(), ()> = DiGraph::with_capacity(cfg.nodes.len(), cfg.edges.len());
    for _ in 0..cfg.nodes.len() {
        g.add_node(());
    }
    let mut in_loop = vec![false; cfg.nodes.len()];
    for e in &cfg.edges {
        if e.src == e.dst {
            in_loop[e.src.0 as usize] = true;
        }
        g.add_edge(
            NodeIndex::new(e.src.0 as usize),
            NodeIndex::new(e.dst.0 as usize),
            (),
        );
    }
    for scc in petgraph::algo::tarjan_scc(&g) {
        if scc.len() > 1 {
            for n in scc {
                in_loop[n.index()] = true;
            }
        }
    }
    in_loop
}

/// How many times something runs per run of a thread: 0, 1, or 2 meaning "possibly more".
type Mult = u8;

fn mult_add(a: Mult, b: Mult) -> Mult {
    a.saturating_add(b).min(2)
}

/// Multiplicity of every function context of a thread.
fn context_multiplicity(
    program: &Program,
    tc: &ThreadContexts,
    loops: &mut LoopCache,
) -> Vec<Mult> {
    let mut mult = vec![0u8; tc.ctxs.len()];
    let mut incoming: FxHashMap<FnCtxId, FxHashMap<(FnCtxId, EdgeId), Mult>> = FxHashMap::default();
    // Per context, the exact sum of its incoming contributions (their saturating sum is its
    // multiplicity): kept up to date instead of summed again at every update, which was
    // quadratic in the number of callers.
    let mut sums = vec![0u64; tc.ctxs.len()];
    // Outgoing calls per context.
    let mut out: FxHashMap<FnCtxId, Vec<(EdgeId, FnCtxId)>> = FxHashMap::default();
    for ((c, e), targets) in &tc.calls {
        for t in targets {
            out.entry(*c).or_default().push((*e, t.ctx));
        }
    }
    for v in out.values_mut() {
        v.sort();
    }
    mult[tc.entry.0 as usize] = 1;
    let mut work = vec![tc.entry];
    while let Some(c) = work.pop() {
        let m = mult[c.0 as usize];
        let func = tc.ctx(c).func;
        let Some(calls) = out.get(&c) else { continue };
        for &(e, t) in calls {
            let in_loop = loops.edge_in_loop(program, func, e);
            let contribution = if in_loop { mult_add(m, m) } else { m };
            let inc = incoming.entry(t).or_default();
            let old = inc.insert((c, e), contribution).unwrap_or(0);
            let Some(sum) = sums.get_mut(t.0 as usize) else {
                continue;
            };
            *sum = (*sum + u64::from(contribution)).saturating_sub(u64::from(old));
            let total = (*sum).min(2) as Mult;
            if total > mult[t.0 as usize] {
                mult[t.0 as usize] = total;
                work.push(t);
            }
        }
    }
    mult
}

/// For each function context of a thread, whether it runs at most once per run of the thread,
/// and a test of whether a statement of a function lies on a loop (see [`loop_nodes`]).
pub fn runs_at_most_once(
    program: &Program,
    tc: &ThreadContexts,
) -> impl FnMut(FnCtxId, EdgeId) -> bool {
    let mut loops = LoopCache::default();
    let mult = context_multiplicity(program, tc, &mut loops);
    let funcs: Vec<FuncId> = tc.ctxs.iter().map(|c| c.func).collect();
    move |c: FnCtxId, e: EdgeId| {
        mult.get(c.0 as usize).is_some_and(|m| *m <= 1)
            && funcs
                .get(c.0 as usize)
                .is_some_and(|f| !loops.edge_in_loop(program, *f, e))
    }
}

/// Loop membership of CFG nodes, computed once per function.
#[derive(Default)]
struct LoopCache {
    loops: FxHashMap<FuncId, Vec<bool>>,
}

impl LoopCache {
    fn edge_in_loop(&mut self, program: &Program, func: FuncId, edge: EdgeId) -> bool {
        let Some(cfg) = &program.function(func).body else {
            return false;
        };
        let l = self.loops.entry(func).or_insert_with(|| loop_nodes(cfg));
        cfg.edges
            .get(edge.0 as usize)
            .is_some_and(|e| l.get(e.src.0 as usize).copied().unwrap_or(false))
    }
}

impl ThreadGraph {
    /// Discovers the threads reachable from `main` (seed 001 Algorithm 1, lines 7–10).
    pub fn build<'p, B: Backend<'p>>(
        program: &Program,
        roles: &Roles,
        backend: &mut B,
        main: FuncId,
        depth: usize,
        prev: Option<&ThreadGraph>,
    ) -> ThreadGraph {
        let mut threads = vec![Thread {
            id: ThreadId::MAIN,
            entry: main,
            site: None,
            parents: Vec::new(),
            unique: true,
            unseen: false,
            exact_entry: true,
            in_cycle: false,
            signal: false,
            routine: None,
        }];
        let mut contexts: Vec<ThreadContexts> = Vec::new();
        let mut by_key: FxHashMap<(FuncId, CallSite), ThreadId> = FxHashMap::default();
        // Threads of the previous round keep their ids (bases name threads by id).
        if let Some(prev) = prev {
            for t in prev.threads.iter().skip(1) {
                let mut t = t.clone();
                t.parents.clear();
                if let Some(site) = t.site {
                    by_key.insert((t.entry, site), t.id);
                }
                threads.push(t);
            }
        }
        // Multiplicity of each create site in each thread, per function it starts there:
        // (thread, site, entry) -> mult. A wrapper called from several places starts each
        // function only where the calling context passes it.
        let mut site_mult: FxHashMap<(ThreadId, CallSite, FuncId), Mult> = FxHashMap::default();
        let mut loops = LoopCache::default();
        let mut truncated = false;
        let mut next = 0;
        while next < threads.len() {
            let tid = ThreadId(next as u32);
            let entry = threads[next].entry;
            backend.analyse_thread(tid, entry, threads[next].site);
            let tc = match backend.thread_contexts(tid) {
                Some(tc) => tc,
                None => ThreadContexts::build(
                    program,
                    roles,
                    tid,
                    entry,
                    depth,
                    &mut |fctx, e, deep| {
                        let ctx = Context {
                            thread: tid,
                            fctx: fctx.clone(),
                            edge: EdgeId(0),
                        };
                        backend.callback_functions(&ctx, e, deep).funcs
                    },
                ),
            };
            let mult = context_multiplicity(program, &tc, &mut loops);
            // Create statements in every context, in a deterministic order.
            let mut creates: Vec<(CallSite, FnCtxId)> = Vec::new();
            for c in tc.ids() {
                let func = tc.ctx(c).func;
                let Some(cfg) = &program.function(func).body else {
                    continue;
                };
                for (ei, e) in cfg.edges.iter().enumerate() {
                    if let Some(f) = e.op.direct_callee() {
                        let create = matches!(roles.get(f), Some(Role::ThreadCreate { .. }));
                        let spawn = roles.callbacks(program, &e.op).iter().any(|c| {
                            matches!(
                                c.runs,
                                crate::model::library::Runs::Thread
                                    | crate::model::library::Runs::Signal
                            )
                        });
                        if create || spawn {
                            creates.push((
                                CallSite {
                                    func,
                                    edge: EdgeId(ei as u32),
                                },
                                c,
                            ));
                        }
                    }
                }
            }
            creates.sort();
            for (site, c) in creates {
                let in_loop = loops.edge_in_loop(program, site.func, site.edge);
                let m = mult[c.0 as usize];
                let m = if in_loop { mult_add(m, m) } else { m };
                let mut started: Vec<(FuncId, bool, bool, bool)> = Vec::new();
                for (entry_expr, deep, signal, unseen) in started_by(program, roles, site) {
                    let ctx = tc.context(c, site.edge);
                    let targets = backend.callback_functions(&ctx, entry_expr, deep);
                    started.extend(
                        targets
                            .funcs
                            .iter()
                            .map(|f| (*f, targets.exact && !unseen, signal, unseen)),
                    );
                }
                let mut counted: Vec<FuncId> = Vec::new();
                for (f, exact, signal, unseen) in started {
                    if program.function(f).body.is_none() {
                        continue;
                    }
                    if !counted.contains(&f) {
                        counted.push(f);
                        let sm = site_mult.entry((tid, site, f)).or_insert(0);
                        *sm = mult_add(*sm, m);
                    }
                    let known = by_key.get(&(f, site)).copied().or_else(|| {
                        signal
                            .then(|| installed_before(program, &threads, f, site))
                            .flatten()
                    });
                    let child = match known {
                        Some(t) => {
                            by_key.insert((f, site), t);
                            t
                        }
                        None => {
                            if threads.len() >= MAX_THREADS {
                                truncated = true;
                                continue;
                            }
                            let t = ThreadId(threads.len() as u32);
                            threads.push(Thread {
                                id: t,
                                entry: f,
                                site: Some(site),
                                parents: Vec::new(),
                                unique: !signal && !unseen,
                                exact_entry: exact,
                                in_cycle: false,
                                signal,
                                unseen,
                                routine: None,
                            });
                            by_key.insert((f, site), t);
                            t
                        }
                    };
                    let th = &mut threads[child.0 as usize];
                    if !th.parents.contains(&tid) {
                        th.parents.push(tid);
                    }
                }
            }
            contexts.push(tc);
            next += 1;
        }
        // The graph and its cycles.
        let mut graph = DiGraph::new();
        let nodes: Vec<NodeIndex> = threads.iter().map(|t| graph.add_node(t.id)).collect();
        for t in &threads {
            if let Some(site) = t.site {
                for p in &t.parents {
                    graph.add_edge(nodes[p.0 as usize], nodes[t.id.0 as usize], site);
                }
            }
        }
        for scc in petgraph::algo::tarjan_scc(&graph) {
            let cyclic = scc.len() > 1
                || scc
                    .first()
                    .is_some_and(|n| graph.find_edge(*n, *n).is_some());
            if cyclic {
                for n in scc {
                    threads[graph[n].0 as usize].in_cycle = true;
                }
            }
        }
        // Uniqueness, parents before children (ids grow along discovery, so parents come first
        // except on cycles, which are non-unique anyway).
        for i in 1..threads.len() {
            let t = &threads[i];
            let site = t.site;
            let unique = !t.in_cycle
                && !t.signal
                && !t.unseen
                && t.parents.len() == 1
                && t.parents.iter().all(|p| {
                    let parent = &threads[p.0 as usize];
                    parent.unique
                        && !parent.in_cycle
                        && site.is_some_and(|s| {
                            site_mult.get(&(*p, s, t.entry)).copied().unwrap_or(0) <= 1
                        })
                });
            threads[i].unique = unique;
        }
        for (t, tc) in threads.iter_mut().zip(&contexts) {
            t.routine = trampoline_routine(program, tc, t.entry);
        }
        ThreadGraph {
            threads,
            graph,
            contexts,
            truncated,
        }
    }

    /// Whether `base` stands for exactly one object in every run: a global (not
    /// thread-local), a local of a unique thread, a heap object a unique thread allocates once
    /// (the backend's [`Backend::single_object`]). Locks in other objects have no single
    /// identity, and races on them are not certain.
    pub fn single_instance<'p, B: Backend<'p>>(
        &self,
        program: &Program,
        backend: &B,
        base: &crate::backend::Base,
    ) -> bool {
        use crate::backend::Base;
        let unique = |t: &ThreadId| self.threads.get(t.0 as usize).is_some_and(|x| x.unique);
        match base {
            Base::Global(g) => !program.global(*g).thread_local,
            Base::Local { thread, .. } | Base::Specific { thread, .. } => unique(thread),
            Base::Heap { thread, .. } => unique(thread) && backend.single_object(base),
            Base::Str(_) | Base::Hidden(_) | Base::Func(_) => true,
        }
    }

    /// The thread behind an id.
    pub fn thread(&self, t: ThreadId) -> &Thread {
        &self.threads[t.0 as usize]
    }

    /// The function contexts of a thread.
    pub fn contexts(&self, t: ThreadId) -> &ThreadContexts {
        &self.contexts[t.0 as usize]
    }

    /// The threads a create statement starts.
    pub fn created_at(&self, site: CallSite) -> impl Iterator<Item = &Thread> + '_ {
        self.threads.iter().filter(move |t| t.site == Some(site))
    }

    /// Whether the thread has a single chain of single parents up to `main` (a tree position).
    pub fn in_tree(&self, t: ThreadId) -> bool {
        let mut cur = t;
        let mut steps = 0;
        loop {
            let th = self.thread(cur);
            if th.in_cycle {
                return false;
            }
            match th.parents.as_slice() {
                [] => return cur == ThreadId::MAIN,
                [p] => cur = *p,
                _ => return false,
            }
            steps += 1;
            if steps > self.threads.len() {
                return false;
            }
        }
    }

    /// The chain from `main` to `t` (both included) when `t` is [in the tree](Self::in_tree).
    pub fn ancestry(&self, t: ThreadId) -> Option<Vec<ThreadId>> {
        if !self.in_tree(t) {
            return None;
        }
        let mut chain = vec![t];
        let mut cur = t;
        while let [p] = self.thread(cur).parents.as_slice() {
            chain.push(*p);
            cur = *p;
        }
        chain.reverse();
        Some(chain)
    }
}
/// The signal-handler thread of `handler` already installed at a statement of the function of
/// `site` that every path to `site` passes through (`signal(SIGINT, h); signal(SIGTERM, h);`).
/// A handler may run at any time once installed, any number of times, so the earlier install
/// stands for the later one: its thread is active from an earlier point on and its instances
/// already are not unique. The handler is then analysed once instead of once per install.
fn installed_before(
    program: &Program,
    threads: &[Thread],
    handler: FuncId,
    site: CallSite,
) -> Option<ThreadId> {
    let cfg = program.function(site.func).body.as_ref()?;
    let at = cfg.edges.get(site.edge.0 as usize)?.src;
    threads
        .iter()
        .filter(|t| t.signal && t.entry == handler)
        .find(|t| {
            t.site.is_some_and(|a| {
                a.func == site.func && a != site && !cfg.reaches(cfg.entry, at, &[a.edge])
            })
        })
        .map(|t| t.id)
}

/// The threads a call starts: the entry-function argument of a thread creation, and the
/// callbacks a library function runs in a new thread or as a signal handler, as (expression,
/// deep, signal handler, started by unseen code) ([`crate::model::CallbackUse`]).
fn started_by<'p>(
    program: &'p Program,
    roles: &Roles,
    site: CallSite,
) -> Vec<(&'p crate::ir::Expr, bool, bool, bool)> {
    let Some(edge) = program
        .function(site.func)
        .body
        .as_ref()
        .and_then(|c| c.edges.get(site.edge.0 as usize))
    else {
        return Vec::new();
    };
    let Op::Call { callee, args, .. } = &edge.op else {
        return Vec::new();
    };
    let crate::ir::Callee::Direct(f) = callee else {
        return Vec::new();
    };
    if let Some(Role::ThreadCreate { entry, .. }) = roles.get(*f) {
        return args
            .get(*entry)
            .map(|e| (e, false, false, false))
            .into_iter()
            .collect();
    }
    roles
        .callbacks(program, &edge.op)
        .into_iter()
        .filter_map(|c| {
            use crate::model::library::Runs;
            let signal = match c.runs {
                Runs::Thread => false,
                Runs::Signal => true,
                _ => return None,
            };
            let unseen = c.index == crate::model::UNKNOWN_CALLBACK;
            Some((args.get(c.arg)?, c.deep, signal, unseen))
        })
        .collect()
}

/// Calls `f(contexts, context, edge, role, args)` for every call with a role in every function
/// context of every thread.
pub fn for_each_call<'g>(
    program: &'g Program,
    roles: &'g Roles,
    graph: &'g ThreadGraph,
    mut f: impl FnMut(&'g ThreadContexts, FnCtxId, EdgeId, &'g Role, &'g [crate::ir::Expr]),
) {
    for tc in &graph.contexts {
        for c in tc.ids() {
            let Some(cfg) = &program.function(tc.ctx(c).func).body else {
                continue;
            };
            for (ei, e) in cfg.edges.iter().enumerate() {
                let Op::Call {
                    callee: Callee::Direct(g),
                    args,
                    ..
                } = &e.op
                else {
                    continue;
                };
                if let Some(role) = roles.get(*g) {
                    f(tc, c, EdgeId(ei as u32), role, args);
                }
            }
        }
    }
}
