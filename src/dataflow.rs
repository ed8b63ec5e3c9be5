//! The generic fixpoint engine shared by the value analysis, the lockset analysis and the
//! active-threads analysis (after rustc's dataflow framework: an [`Analysis`] gives a domain
//! and transfer functions, one engine solves them).
//!
//! The engine solves one thread: it starts the entry function with an initial state and
//! propagates states along CFG edges. Calls enter callee *contexts* (function + last `n` call
//! sites, [`crate::context`]) discovered as the analysis resolves callees; a callee context's
//! entry state joins its call sites' states, its exit state flows back through
//! [`Analysis::call_return`]. Nodes are processed in a loop-nested order (reverse postorder
//! with each loop's nodes together before its exits, [`crate::ir::Cfg::loop_nested_order`]),
//! the most recently entered callee context first, and joins become widenings at loop heads
//! and at the entries of recursive contexts after [`WIDEN_DELAY`] updates (at every context entry after
//! [`ENTRY_WIDEN_DELAY`], at any node after [`ANY_WIDEN_DELAY`]), and a few descending rounds of
//! narrowing follow. A visit budget stops runaway analyses: the solution is then marked
//! incomplete and consumers must not trust it.
//!
//! Path-sensitive analyses use a [`Powerset`] of facts as their domain through
//! [`Disjunctive`], which lifts a per-fact [`FactAnalysis`].

use crate::context::{
    CallKind, CallSite, CallString, CallTarget, FnCtx, FnCtxId, ThreadContexts, ThreadId,
};
use crate::ir::{Edge, EdgeId, FuncId, NodeId, Program};
use racedar_domains::lattice::JoinSemiLattice;
use racedar_domains::{Merge, Powerset};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::collections::BTreeSet;

/// Updates of a loop head joined before widening starts.
pub const WIDEN_DELAY: u32 = 2;

/// Updates of a callee context's entry joined before widening starts there. Contexts are
/// shared between call sites (call strings are bounded), so values can grow around a cycle
/// through a callee's entry and exit that passes no loop head (a create loop peeled into
/// straight-line copies, each calling a helper that increments a counter): every such cycle
/// passes a context entry, so widening there too makes every fixpoint terminate.
pub const ENTRY_WIDEN_DELAY: u32 = 8;

/// Changes of any node's state joined before widening starts there. Loop heads and context entries
/// widen much earlier; this bounds the cycles that pass neither: a recursive call's result
/// flowing from the callee's exit back to the call site inside the same context
/// (`n = 1 + count(s + 1)`) grows by one per round, and without widening at the return site
/// the fixpoint runs until the visit budget gives up.
pub const ANY_WIDEN_DELAY: u32 = 24;

/// Descending (narrowing) rounds after the ascending fixpoint.
pub const NARROW_ROUNDS: u32 = 2;

/// A lattice the engine can iterate on.
pub trait Domain: Clone + PartialEq + std::fmt::Debug {
    /// The unreachable state.
    fn bottom() -> Self;
    /// Whether the state is unreachable.
    fn is_bottom(&self) -> bool;
    /// `self ⊔= o`; whether `self` changed.
    fn join_with(&mut self, o: &Self) -> bool;
    /// `self ∇= o`; whether `self` changed. Defaults to join (finite-height domains).
    fn widen_with(&mut self, o: &Self) -> bool {
        self.join_with(o)
    }
    /// Refines `self` (a post-fixpoint) with the recomputed `o`; whether `self` changed.
    /// Defaults to no narrowing.
    fn narrow_with(&mut self, _o: &Self) -> bool {
        false
    }
    /// Releases spare room once the state is final (the solution keeps every state).
    fn compact(&mut self) {}
    /// Whether the engine should run narrowing rounds for this domain.
    const NARROWS: bool = false;
    /// Whether transfer functions distribute over joins (`f(a ⊔ b) = f(a) ⊔ f(b)`, true of
    /// powersets of facts): the engine then propagates only what is new at a node (its
    /// *delta*) instead of the whole state, as in IFDS/RHS tabulation.
    const DISTRIBUTIVE: bool = false;
}

/// Where an edge is analysed.
#[derive(Clone, Copy, Debug)]
pub struct At<'a> {
    /// The thread.
    pub thread: ThreadId,
    /// The function context.
    pub ctx: FnCtxId,
    /// Its function and call string.
    pub fctx: &'a FnCtx,
    /// The edge.
    pub edge: EdgeId,
}

/// The callees a call edge enters.
#[derive(Clone, Debug, Default)]
pub struct Callees {
    /// Defined functions analysed as calls: (function, kind, exact).
    pub funcs: SmallVec<[(FuncId, CallKind, bool); 1]>,
    /// Whether the edge's own transfer also applies (an unresolved part of an indirect call,
    /// or a call without analysed callee).
    pub transfer_too: bool,
    /// The callee contexts, parallel to `funcs`, when a fixed context graph records them
    /// (empty: the engine derives them from the call string).
    pub ctxs: SmallVec<[FnCtxId; 1]>,
}

/// An analysis the engine can solve.
pub trait Analysis {
    /// The abstract state.
    type D: Domain;

    /// The state after a non-call edge (or the unresolved part of a call) from `d`.
    fn transfer(&mut self, at: At<'_>, edge: &Edge, d: &Self::D) -> Self::D;

    /// The defined functions a call edge enters in state `d`.
    fn callees(&mut self, at: At<'_>, edge: &Edge, d: &Self::D) -> Callees;

    /// The callee's entry state for a call from `d`.
    fn call_entry(&mut self, at: At<'_>, edge: &Edge, target: &CallTarget, d: &Self::D) -> Self::D;

    /// The state after the call edge, from the caller's state `pre` before it and the callee's
    /// exit state.
    fn call_return(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        pre: &Self::D,
        exit: &Self::D,
    ) -> Self::D;

    /// Whether the analysis ran out of a budget of its own (checked every 256 visits); the
    /// solution is then incomplete.
    fn exhausted(&self) -> bool {
        false
    }
}

/// The states of one thread at every program point of every function context.
#[derive(Clone, Debug)]
pub struct Solution<D> {
    /// The function contexts reached and the calls between them.
    pub contexts: ThreadContexts,
    states: Vec<Vec<D>>,
    /// False when the visit budget ran out: the states are not a fixpoint.
    pub complete: bool,
    /// Node visits spent.
    pub visits: u64,
}

impl<D: Domain> Solution<D> {
    /// The state at `node` of context `ctx` (bottom when unreachable or unknown).
    pub fn at(&self, ctx: FnCtxId, node: NodeId) -> Option<&D> {
        self.states
            .get(ctx.0 as usize)
            .and_then(|v| v.get(node.0 as usize))
            .filter(|d| !d.is_bottom())
    }

    /// Whether `node` of `ctx` is reachable.
    pub fn reachable(&self, ctx: FnCtxId, node: NodeId) -> bool {
        self.at(ctx, node).is_some()
    }

    /// Every non-bottom state.
    pub fn all_states(&self) -> impl Iterator<Item = &D> + '_ {
        self.states.iter().flatten().filter(|d| !d.is_bottom())
    }
}

impl<F: Clone + PartialEq + std::fmt::Debug + Merge> Solution<Facts<F>> {
    /// Logs (at debug level) how many facts the reachable states hold: the total and a
    /// histogram by facts per state (the last bucket counts [`racedar_domains::powerset::CAP`]
    /// and more), the measure of a path-sensitive analysis's cost.
    pub fn log_fact_counts(&self, what: &str) {
        if !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        let mut hist = [0u64; racedar_domains::powerset::CAP + 2];
        let mut facts = 0u64;
        for d in self.all_states() {
            let k = d.facts().len();
            hist[k.min(hist.len() - 1)] += 1;
            facts += k as u64;
        }
        tracing::debug!(
            thread = self.contexts.thread.0,
            facts,
            ?hist,
            "{what}: facts per state"
        );
    }
}

/// The worklist key of node position `p` of context `c` at rank `rank` (see `Engine::work`).
fn work_key(rank: u32, c: FnCtxId, p: u32) -> (u32, u32, u32) {
    (u32::MAX - rank, u32::MAX - c.0, p)
}

/// Positions of a function's nodes in its loop-nested order ([`crate::ir::Cfg::loop_nested_order`]).
fn rpo_positions(program: &Program, func: FuncId) -> Vec<u32> {
    let Some(cfg) = &program.function(func).body else {
        return Vec::new();
    };
    let mut pos = vec![u32::MAX; cfg.nodes.len()];
    let rpo = cfg.loop_nested_order();
    let mut next = rpo.len() as u32;
    for (i, n) in rpo.into_iter().enumerate() {
        pos[n.0 as usize] = i as u32;
    }
    // Unreachable nodes (an exit no path reaches) go last.
    for p in pos.iter_mut() {
        if *p == u32::MAX {
            *p = next;
            next += 1;
        }
    }
    pos
}

struct Engine<'a, A: Analysis> {
    program: &'a Program,
    analysis: &'a mut A,
    tc: ThreadContexts,
    depth: usize,
    states: Vec<Vec<A::D>>,
    /// Per node, what joined into its state since its last visit (distributive domains only).
    pending: Vec<Vec<A::D>>,
    updates: Vec<Vec<u32>>,
    /// Per node, how many updates changed its state ([`ANY_WIDEN_DELAY`]).
    changes: Vec<Vec<u32>>,
    /// (rpo position -> node) and (node -> rpo position) per function.
    order: FxHashMap<FuncId, (Vec<NodeId>, Vec<u32>)>,
    /// Scheduled nodes as (priority, context, position): the smallest first.
    /// The priority is `u32::MAX - rank` ([`Engine::rank`]), the context `u32::MAX - id`
    /// (newer contexts first), the position the node's place in its function's
    /// loop-nested order.
    work: BTreeSet<(u32, u32, u32)>,
    /// Per context, when a call last changed its entry state (a value of `clock`; 0 before
    /// any). The most recently entered context goes first, as on a call stack: a caller
    /// resumes after a call only once the callee's exit is stable. Ordering contexts by id
    /// instead lets a loop calling a context created before the loop's own run around once
    /// per change of that callee's exit.
    rank: Vec<u32>,
    /// Counts entry changes.
    clock: u32,
    /// Call edges of callers per callee context.
    callers: FxHashMap<FnCtxId, FxHashSet<(FnCtxId, EdgeId)>>,
    /// Contexts on a call cycle (their entries widen).
    recursive: FxHashSet<FnCtxId>,
    visits: u64,
    budget: u64,
}

/// Solves `analysis` for the thread of `tc` from `init` at its entry, with `tc`'s call-string
/// length, in at most `budget` node visits. Contexts already in `tc` keep their ids.
pub fn solve<A: Analysis>(
    program: &Program,
    mut tc: ThreadContexts,
    analysis: &mut A,
    init: A::D,
    budget: u64,
) -> Solution<A::D> {
    let entry_ctx = tc.entry;
    let n = tc.ctxs.len();
    let depth = tc.depth;
    let mut e = Engine {
        program,
        analysis,
        tc: {
            tc.calls.clear();
            tc
        },
        depth,
        states: Vec::with_capacity(n),
        pending: Vec::new(),
        updates: Vec::with_capacity(n),
        changes: Vec::with_capacity(n),
        order: FxHashMap::default(),
        work: BTreeSet::new(),
        rank: Vec::with_capacity(n),
        clock: 0,
        callers: FxHashMap::default(),
        recursive: FxHashSet::default(),
        visits: 0,
        budget,
    };
    for c in 0..n {
        e.alloc(FnCtxId(c as u32));
    }
    let entry_func = e.tc.ctx(entry_ctx).func;
    if let Some(cfg) = &program.function(entry_func).body {
        let node = cfg.entry;
        e.update(entry_ctx, node, init, false);
    }
    let complete = e.run();
    if complete && <A::D as Domain>::NARROWS {
        for _ in 0..NARROW_ROUNDS {
            if !e.narrow_round() {
                break;
            }
        }
    }
    if !complete && tracing::enabled!(tracing::Level::DEBUG) {
        let mut hot: Vec<(u32, usize, usize)> = Vec::new();
        for (ci, v) in e.updates.iter().enumerate() {
            for (ni, n) in v.iter().enumerate() {
                hot.push((*n, ci, ni));
            }
        }
        hot.sort();
        let mut per_func: FxHashMap<FuncId, (u64, usize)> = FxHashMap::default();
        for (n, ci, _) in &hot {
            let f = e.tc.ctxs[*ci].func;
            let entry = per_func.entry(f).or_default();
            entry.0 += u64::from(*n);
        }
        for (ci, c) in e.tc.ctxs.iter().enumerate() {
            if e.updates.get(ci).is_some_and(|v| v.iter().any(|n| *n > 0)) {
                per_func.entry(c.func).or_default().1 += 1;
            }
        }
        let mut per_func: Vec<_> = per_func.into_iter().collect();
        per_func.sort_by_key(|(f, (n, _))| (std::cmp::Reverse(*n), *f));
        for (f, (n, ctxs)) in per_func.iter().take(12) {
            tracing::debug!(
                func = %program.function(*f).name,
                updates = n,
                contexts = ctxs,
                "hot function"
            );
        }
        for (n, ci, ni) in hot.iter().rev().take(12) {
            let f = e.tc.ctxs[*ci].func;
            tracing::debug!(
                func = %program.function(f).name,
                ctx = ci,
                node = ni,
                updates = n,
                state = ?e.states[*ci][*ni],
                "hot node"
            );
        }
    }
    tracing::debug!(
        thread = e.tc.thread.0,
        contexts = e.tc.ctxs.len(),
        visits = e.visits,
        complete,
        "fixpoint"
    );
    let mut states = e.states;
    for d in states.iter_mut().flatten() {
        d.compact();
    }
    Solution {
        contexts: e.tc,
        states,
        complete,
        visits: e.visits,
    }
}

impl<A: Analysis> Engine<'_, A> {
    fn alloc(&mut self, c: FnCtxId) {
        let func = self.tc.ctx(c).func;
        let n = self
            .program
            .function(func)
            .body
            .as_ref()
            .map_or(0, |cfg| cfg.nodes.len());
        while self.rank.len() <= c.0 as usize {
            self.rank.push(0);
        }
        while self.states.len() <= c.0 as usize {
            self.states.push(Vec::new());
            self.updates.push(Vec::new());
            self.changes.push(Vec::new());
            if A::D::DISTRIBUTIVE {
                self.pending.push(Vec::new());
            }
        }
        if self.states[c.0 as usize].len() < n {
            self.states[c.0 as usize] = vec![A::D::bottom(); n];
            self.updates[c.0 as usize] = vec![0; n];
            self.changes[c.0 as usize] = vec![0; n];
            if A::D::DISTRIBUTIVE {
                self.pending[c.0 as usize] = vec![A::D::bottom(); n];
            }
        }
        if !self.order.contains_key(&func) {
            let pos = rpo_positions(self.program, func);
            let mut nodes = vec![NodeId(0); pos.len()];
            for (i, p) in pos.iter().enumerate() {
                nodes[*p as usize] = NodeId(i as u32);
            }
            self.order.insert(func, (nodes, pos));
        }
    }

    fn pos(&self, c: FnCtxId, n: NodeId) -> u32 {
        let func = self.tc.ctx(c).func;
        self.order
            .get(&func)
            .and_then(|(_, pos)| pos.get(n.0 as usize).copied())
            .unwrap_or(0)
    }

    fn node_at(&self, c: FnCtxId, p: u32) -> Option<NodeId> {
        let func = self.tc.ctx(c).func;
        self.order
            .get(&func)
            .and_then(|(nodes, _)| nodes.get(p as usize).copied())
    }

    /// Joins (or widens) `d` into the state of `n`; schedules `n` when it changed.
    fn update(&mut self, c: FnCtxId, n: NodeId, d: A::D, entry_of_call: bool) {
        if d.is_bottom() {
            return;
        }
        let func = self.tc.ctx(c).func;
        let loop_head = self
            .program
            .function(func)
            .body
            .as_ref()
            .is_some_and(|cfg| cfg.node(n).loop_head);
        let recursive_entry = entry_of_call && self.recursive.contains(&c);
        let (ci, ni) = (c.0 as usize, n.0 as usize);
        let changed = {
            let count = &mut self.updates[ci][ni];
            *count = count.saturating_add(1);
            let widen = ((loop_head || recursive_entry) && *count > WIDEN_DELAY)
                || (entry_of_call && *count > ENTRY_WIDEN_DELAY)
                || self.changes[ci][ni] > ANY_WIDEN_DELAY;
            let st = &mut self.states[ci][ni];
            let changed = if widen {
                st.widen_with(&d)
            } else {
                st.join_with(&d)
            };
            if changed {
                self.changes[ci][ni] = self.changes[ci][ni].saturating_add(1);
            }
            changed
        };
        if changed {
            if entry_of_call && !A::D::DISTRIBUTIVE {
                self.promote(c);
            }
            if A::D::DISTRIBUTIVE {
                // Moved, not cloned, into an empty delta (the usual case: a visit takes it).
                let pending = &mut self.pending[ci][ni];
                if pending.is_bottom() {
                    *pending = d;
                } else {
                    pending.join_with(&d);
                }
            }
            let p = self.pos(c, n);
            let r = self.rank.get(ci).copied().unwrap_or(0);
            self.work.insert(work_key(r, c, p));
        }
    }

    /// Gives context `c` the newest priority ([`Engine::rank`]) and moves its pending work
    /// there.
    fn promote(&mut self, c: FnCtxId) {
        let ci = c.0 as usize;
        let Some(old) = self.rank.get(ci).copied() else {
            return;
        };
        self.clock += 1;
        self.rank[ci] = self.clock;
        let pending: Vec<u32> = self
            .work
            .range(work_key(old, c, 0)..=work_key(old, c, u32::MAX))
            .map(|k| k.2)
            .collect();
        for p in pending {
            self.work.remove(&work_key(old, c, p));
            self.work.insert(work_key(self.clock, c, p));
        }
    }

    /// The context a call from `c` at `edge` enters for `func` (`known`: the one a fixed
    /// context graph records).
    fn callee_ctx(
        &mut self,
        c: FnCtxId,
        edge: EdgeId,
        func: FuncId,
        known: Option<FnCtxId>,
    ) -> FnCtxId {
        let id = match known {
            Some(id) => id,
            None => self.new_callee_ctx(c, edge, func),
        };
        // A callee whose function is already on the caller's context chain is recursive.
        let caller = self.tc.ctx(c);
        if func == caller.func || caller.calls.iter().any(|s| s.func == func) {
            self.recursive.insert(id);
        }
        id
    }

    /// The context a call from `c` at `edge` enters for `func` by its call string, interned
    /// (and allocated) when new.
    fn new_callee_ctx(&mut self, c: FnCtxId, edge: EdgeId, func: FuncId) -> FnCtxId {
        let caller = self.tc.ctx(c);
        let mut calls: CallString = caller.calls.clone();
        calls.push(CallSite {
            func: caller.func,
            edge,
        });
        while calls.len() > self.depth {
            calls.remove(0);
        }
        let mut callee = FnCtx { func, calls };
        // The cap of `ThreadContexts::build`: beyond it, new contexts are the
        // context-insensitive one, so consumers holding the thread graph's contexts know every
        // id.
        if self.tc.ctxs.len() >= crate::context::MAX_CONTEXTS && self.tc.lookup(&callee).is_none() {
            callee.calls.clear();
        }
        let before = self.tc.ctxs.len();
        let id = self.tc.intern_ctx(callee);
        if self.tc.ctxs.len() > before {
            self.alloc(id);
        }
        id
    }

    fn run(&mut self) -> bool {
        while let Some((_, rci, p)) = self.work.pop_first() {
            let ci = u32::MAX - rci;
            self.visits += 1;
            if self.visits > self.budget
                || (self.visits.is_multiple_of(256) && self.analysis.exhausted())
            {
                return false;
            }
            let c = FnCtxId(ci);
            let Some(n) = self.node_at(c, p) else {
                continue;
            };
            let d = if A::D::DISTRIBUTIVE {
                std::mem::replace(&mut self.pending[ci as usize][n.0 as usize], A::D::bottom())
            } else {
                self.states[ci as usize][n.0 as usize].clone()
            };
            if d.is_bottom() {
                continue;
            }
            self.visit(c, n, &d, false);
        }
        true
    }

    /// Propagates the state `d` of node `n` along its out-edges (and, at an exit, back to the
    /// callers). In `replace` mode (narrowing) nothing is scheduled.
    fn visit(&mut self, c: FnCtxId, n: NodeId, d: &A::D, _replace: bool) {
        let program = self.program;
        let func = self.tc.ctx(c).func;
        let Some(cfg) = &program.function(func).body else {
            return;
        };
        if n == cfg.exit {
            // The exit state (or its delta) flows straight back to every call site.
            let mut callers: Vec<(FnCtxId, EdgeId)> = self
                .callers
                .get(&c)
                .map(|s| s.iter().copied().collect())
                .unwrap_or_default();
            callers.sort();
            for (cc, e) in callers {
                let cfctx = self.tc.ctx(cc).clone();
                let Some(ccfg) = &program.function(cfctx.func).body else {
                    continue;
                };
                let edge = ccfg.edge(e);
                let Some(target) = self.tc.callees(cc, e).iter().find(|t| t.ctx == c).copied()
                else {
                    continue;
                };
                // Borrowed, not cloned: the analysis and the states are different fields.
                let pre = &self.states[cc.0 as usize][edge.src.0 as usize];
                if pre.is_bottom() {
                    continue;
                }
                let at = At {
                    thread: self.tc.thread,
                    ctx: cc,
                    fctx: &cfctx,
                    edge: e,
                };
                let ret = self.analysis.call_return(at, edge, &target, pre, d);
                self.update(cc, edge.dst, ret, false);
            }
        }
        let fctx = self.tc.ctx(c).clone();
        for &eid in &cfg.node(n).succs {
            let edge = cfg.edge(eid);
            let at = At {
                thread: self.tc.thread,
                ctx: c,
                fctx: &fctx,
                edge: eid,
            };
            let callees = self.analysis.callees(at, edge, d);
            if callees.funcs.is_empty() || callees.transfer_too {
                let out = self.analysis.transfer(at, edge, d);
                self.update(c, edge.dst, out, false);
            }
            for (k, (g, kind, exact)) in callees.funcs.into_iter().enumerate() {
                let Some(gcfg) = &program.function(g).body else {
                    continue;
                };
                let callee = self.callee_ctx(c, eid, g, callees.ctxs.get(k).copied());
                let target = CallTarget {
                    ctx: callee,
                    func: g,
                    kind,
                    exact,
                };
                let entry = self.tc.calls.entry((c, eid)).or_default();
                if !entry.contains(&target) {
                    entry.push(target);
                }
                self.callers.entry(callee).or_default().insert((c, eid));
                let at = At {
                    thread: self.tc.thread,
                    ctx: c,
                    fctx: &fctx,
                    edge: eid,
                };
                let ed = self.analysis.call_entry(at, edge, &target, d);
                self.update(callee, gcfg.entry, ed, true);
                let exit = &self.states[callee.0 as usize][gcfg.exit.0 as usize];
                if !exit.is_bottom() {
                    let ret = self.analysis.call_return(at, edge, &target, d, exit);
                    self.update(c, edge.dst, ret, false);
                }
            }
        }
    }

    /// One descending round: every state is recomputed from its predecessors and narrowed.
    /// Returns whether anything changed.
    fn narrow_round(&mut self) -> bool {
        let program = self.program;
        let mut fresh: Vec<Vec<A::D>> = self
            .states
            .iter()
            .map(|v| vec![A::D::bottom(); v.len()])
            .collect();
        // The thread entry keeps its initial state.
        let entry_func = self.tc.ctx(self.tc.entry).func;
        if let Some(cfg) = &program.function(entry_func).body {
            fresh[self.tc.entry.0 as usize][cfg.entry.0 as usize] =
                self.states[self.tc.entry.0 as usize][cfg.entry.0 as usize].clone();
        }
        for ci in 0..self.tc.ctxs.len() {
            let c = FnCtxId(ci as u32);
            let fctx = self.tc.ctx(c).clone();
            let Some(cfg) = &program.function(fctx.func).body else {
                continue;
            };
            for (ei, edge) in cfg.edges.iter().enumerate() {
                let eid = EdgeId(ei as u32);
                let d = self.states[ci][edge.src.0 as usize].clone();
                if d.is_bottom() {
                    continue;
                }
                let at = At {
                    thread: self.tc.thread,
                    ctx: c,
                    fctx: &fctx,
                    edge: eid,
                };
                let targets: Vec<CallTarget> = self.tc.callees(c, eid).to_vec();
                let callees = self.analysis.callees(at, edge, &d);
                if targets.is_empty() || callees.transfer_too {
                    let out = self.analysis.transfer(at, edge, &d);
                    fresh[ci][edge.dst.0 as usize].join_with(&out);
                }
                for t in targets {
                    let Some(gcfg) = &program.function(t.func).body else {
                        continue;
                    };
                    let ed = self.analysis.call_entry(at, edge, &t, &d);
                    fresh[t.ctx.0 as usize][gcfg.entry.0 as usize].join_with(&ed);
                    let exit = self.states[t.ctx.0 as usize][gcfg.exit.0 as usize].clone();
                    if !exit.is_bottom() {
                        let ret = self.analysis.call_return(at, edge, &t, &d, &exit);
                        fresh[ci][edge.dst.0 as usize].join_with(&ret);
                    }
                }
            }
        }
        let mut changed = false;
        for (ci, nodes) in fresh.into_iter().enumerate() {
            for (ni, new) in nodes.into_iter().enumerate() {
                changed |= self.states[ci][ni].narrow_with(&new);
            }
        }
        changed
    }
}

/// A per-fact analysis, lifted to a [`Powerset`] domain by [`Disjunctive`].
pub trait FactAnalysis {
    /// One disjunct.
    type Fact: Clone + PartialEq + std::fmt::Debug + Merge;
    /// The facts after an edge from one fact before it (none: the edge cannot be passed).
    fn transfer(&mut self, at: At<'_>, edge: &Edge, fact: &Self::Fact, out: &mut Vec<Self::Fact>);
    /// The callees of a call edge (a fixed context graph for these analyses).
    fn callees(&mut self, at: At<'_>, edge: &Edge) -> Callees;
    /// The fact on entry of a callee.
    fn call_entry(
        &mut self,
        _at: At<'_>,
        _edge: &Edge,
        _target: &CallTarget,
        fact: &Self::Fact,
    ) -> Self::Fact {
        fact.clone()
    }
    /// The fact after a call from the callee's exit fact; `pre` is the caller's fact before
    /// the call (whose entry fact led to `exit`).
    fn call_exit(
        &mut self,
        _at: At<'_>,
        _edge: &Edge,
        _target: &CallTarget,
        _pre: &Self::Fact,
        exit: &Self::Fact,
    ) -> Self::Fact {
        exit.clone()
    }
}

impl<F: Clone + PartialEq + std::fmt::Debug + Merge> Domain for Powerset<F> {
    fn bottom() -> Self {
        Powerset::bottom()
    }
    fn is_bottom(&self) -> bool {
        Powerset::is_bottom(self)
    }
    fn join_with(&mut self, o: &Self) -> bool {
        JoinSemiLattice::join(self, o)
    }
    fn widen_with(&mut self, o: &Self) -> bool {
        self.widen(o)
    }
    fn compact(&mut self) {
        self.shrink_to_fit();
    }
    const DISTRIBUTIVE: bool = true;
}

/// A fact paired with the entry fact of its function context it was reached from: the
/// path edges of RHS tabulation (Reps, Horwitz, Sagiv, POPL 1995). The pairing keeps a callee
/// context shared by several call sites (call strings beyond the context depth) from
/// returning one caller's facts to another.
#[derive(Clone, Debug, PartialEq)]
pub struct Paired<F> {
    /// The fact at the entry of the context (shared by every path edge from it).
    pub entry: std::sync::Arc<F>,
    /// The fact here.
    pub fact: F,
    /// The entry fact folds the entries of several path edges ([`Merge::merge`]): it stands
    /// for every entry it covers.
    pub merged: bool,
}

impl<F: PartialEq> Paired<F> {
    /// Whether this path edge covers `o` with facts (and folded entries) ordered by `covers`.
    fn covers_by(&self, o: &Self, covers: impl Fn(&F, &F) -> bool) -> bool
    where
        F: Merge,
    {
        covers(&self.fact, &o.fact)
            && (std::sync::Arc::ptr_eq(&self.entry, &o.entry)
                || *self.entry == *o.entry
                || ((self.merged || !F::STRICT_ENTRIES) && covers(&self.entry, &o.entry)))
    }

    /// Whether this path edge describes paths from the entry fact `e`: its entry is `e`, or
    /// a fold covering it (any entry covering it without [`Merge::STRICT_ENTRIES`]).
    fn starts_at(&self, e: &F) -> bool
    where
        F: Merge,
    {
        *self.entry == *e || ((self.merged || !F::STRICT_ENTRIES) && self.entry.covers(e))
    }
}

impl<F: Merge + PartialEq> Merge for Paired<F> {
    fn merge(facts: &[&Self]) -> Self {
        let entries: Vec<&F> = facts.iter().map(|p| &*p.entry).collect();
        let here: Vec<&F> = facts.iter().map(|p| &p.fact).collect();
        let merged = facts.iter().any(|p| p.merged)
            || facts.iter().any(|p| {
                !std::sync::Arc::ptr_eq(&p.entry, &facts[0].entry) && p.entry != facts[0].entry
            });
        Paired {
            entry: std::sync::Arc::new(F::merge(&entries)),
            fact: F::merge(&here),
            merged,
        }
    }

    /// With [`Merge::STRICT_ENTRIES`], path edges from different entries are different (one
    /// does not subsume the other, so a caller's facts never flow back to a caller with
    /// fewer), unless `self`'s entry is a fold covering `o`'s.
    fn covers(&self, o: &Self) -> bool {
        self.covers_by(o, F::covers)
    }

    /// As [`Merge::covers`] here, with facts and folded entries compared in the widening order.
    fn covers_widened(&self, o: &Self) -> bool {
        self.covers_by(o, F::covers_widened)
    }

    /// Level 0: path edges from one entry fact (folding the entries of different callers of
    /// a shared context would return each caller's facts to all of them); further levels:
    /// entry and fact both similar at the level before.
    fn similar(&self, o: &Self, level: u8) -> bool {
        if level == 0 {
            std::sync::Arc::ptr_eq(&self.entry, &o.entry) || *self.entry == *o.entry
        } else {
            self.entry.similar(&o.entry, level - 1) && self.fact.similar(&o.fact, level - 1)
        }
    }
}

/// The domain of a [`Disjunctive`] analysis: a bounded set of path edges.
pub type Facts<F> = Powerset<Paired<F>>;

/// The facts (without their entry facts) of a [`Facts`] state.
pub fn facts_of<F: Clone + PartialEq + Merge>(d: &Facts<F>) -> impl Iterator<Item = &F> + '_ {
    d.facts().iter().map(|p| &p.fact)
}

/// The initial state of a thread for a [`Disjunctive`] analysis.
pub fn initial_facts<F: Clone + PartialEq + Merge>(f: F) -> Facts<F> {
    Powerset::singleton(Paired {
        entry: std::sync::Arc::new(f.clone()),
        fact: f,
        merged: false,
    })
}

/// Lifts a [`FactAnalysis`] to the engine: each fact of the set goes through separately, and a
/// callee's exit facts return to the caller facts whose entry fact they were reached from
/// (or from a merged entry fact covering it).
pub struct Disjunctive<'a, F>(pub &'a mut F);

impl<T: FactAnalysis> Analysis for Disjunctive<'_, T> {
    type D = Facts<T::Fact>;

    fn transfer(&mut self, at: At<'_>, edge: &Edge, d: &Self::D) -> Self::D {
        // Room for one output fact per input fact (most edges map each fact to one).
        let mut out = Powerset::with_capacity(d.facts().len());
        let mut buf = Vec::new();
        for p in d.facts() {
            buf.clear();
            self.0.transfer(at, edge, &p.fact, &mut buf);
            for g in buf.drain(..) {
                out.insert(Paired {
                    entry: p.entry.clone(),
                    fact: g,
                    merged: p.merged,
                });
            }
        }
        out
    }

    fn callees(&mut self, at: At<'_>, edge: &Edge, _d: &Self::D) -> Callees {
        self.0.callees(at, edge)
    }

    fn call_entry(&mut self, at: At<'_>, edge: &Edge, target: &CallTarget, d: &Self::D) -> Self::D {
        d.facts()
            .iter()
            .map(|p| {
                let e = self.0.call_entry(at, edge, target, &p.fact);
                Paired {
                    entry: std::sync::Arc::new(e.clone()),
                    fact: e,
                    merged: false,
                }
            })
            .collect()
    }

    fn call_return(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        pre: &Self::D,
        exit: &Self::D,
    ) -> Self::D {
        let mut out = Powerset::bottom();
        for p in pre.facts() {
            let e = self.0.call_entry(at, edge, target, &p.fact);
            for x in exit.facts() {
                if x.starts_at(&e) {
                    out.insert(Paired {
                        entry: p.entry.clone(),
                        fact: self.0.call_exit(at, edge, target, &p.fact, &x.fact),
                        merged: p.merged,
                    });
                }
            }
        }
        out
    }
}

/// The callees recorded in a fixed context graph (what lockset and active-threads analyses use
/// once the backend has resolved calls).
pub fn recorded_callees(tc: &ThreadContexts, ctx: FnCtxId, edge: EdgeId) -> Callees {
    let targets = tc.callees(ctx, edge);
    Callees {
        funcs: targets.iter().map(|t| (t.func, t.kind, t.exact)).collect(),
        ctxs: targets.iter().map(|t| t.ctx).collect(),
        // A library function may also run its callbacks zero times.
        transfer_too: targets
            .iter()
            .any(|t| matches!(t.kind, crate::context::CallKind::Callback(_))),
    }
}
