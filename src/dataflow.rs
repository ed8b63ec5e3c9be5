//! The generic interprocedural fixpoint engine shared by the lockset and active-threads
//! analyses (after rustc's dataflow framework: an [`Analysis`] gives transfer functions, one
//! engine solves them).
//!
//! The domain is *disjunctive*: a program point holds a set of facts, one per class of paths
//! (seed 001 §6.1 forks the lockset analysis per path and per lock candidate; this is the same
//! thing without re-walking shared suffixes). Transfer functions map one fact to zero or more
//! facts. Calls are handled by tabulation (Reps, Horwitz, Sagiv, "Precise interprocedural
//! dataflow analysis via graph reachability", POPL 1995): a callee context is analysed once per
//! entry fact and its exit facts are its summary for that fact, so facts of different callers
//! never mix. Call strings ([`crate::context`]) give the context sensitivity on top.
//!
//! When a program point collects more than [`MAX_FACTS`] facts, or a callee context more than
//! [`MAX_ENTRY_FACTS`] entry facts, further facts are folded into one over-approximating fact
//! with [`Analysis::merge`], which bounds the work.

use crate::context::{CallTarget, FnCtxId, ThreadContexts};
use crate::ir::{Edge, EdgeId, NodeId, Program};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;
use std::hash::Hash;

/// Facts per program point before merging.
pub const MAX_FACTS: usize = 16;

/// Entry facts per callee context before merging (each costs one analysis of the callee).
pub const MAX_ENTRY_FACTS: usize = 4;

/// A disjunctive dataflow analysis over one thread.
pub trait Analysis {
    /// One disjunct of the abstract state.
    type Fact: Clone + Eq + Hash + std::fmt::Debug;

    /// The facts after `edge` (an instruction, or a call without analysed callee) from one fact
    /// before it, pushed onto `out`; none when the edge cannot be passed.
    fn transfer(
        &mut self,
        ctx: FnCtxId,
        eid: EdgeId,
        edge: &Edge,
        fact: &Self::Fact,
        out: &mut Vec<Self::Fact>,
    );

    /// The fact on entry of `target` when called from `edge` with `fact`.
    fn call_entry(
        &mut self,
        _ctx: FnCtxId,
        _eid: EdgeId,
        _edge: &Edge,
        _target: &CallTarget,
        fact: &Self::Fact,
    ) -> Self::Fact {
        fact.clone()
    }

    /// The fact after the call `edge` when `target` returns with `exit`.
    fn call_exit(
        &mut self,
        _ctx: FnCtxId,
        _eid: EdgeId,
        _edge: &Edge,
        _target: &CallTarget,
        exit: &Self::Fact,
    ) -> Self::Fact {
        exit.clone()
    }

    /// One fact over-approximating all of `facts` (non-empty).
    fn merge(&mut self, facts: &[&Self::Fact]) -> Self::Fact;
}

/// Interned fact handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FactId(pub u32);

/// The facts holding at every reachable program point of every function context of a thread.
#[derive(Clone, Debug)]
pub struct Solution<F> {
    facts: Vec<F>,
    at: FxHashMap<(FnCtxId, NodeId), SmallVec<[FactId; 2]>>,
}

impl<F> Solution<F> {
    /// The facts at `node` of context `ctx` (empty when unreachable).
    pub fn facts_at(&self, ctx: FnCtxId, node: NodeId) -> impl Iterator<Item = &F> + '_ {
        self.at
            .get(&(ctx, node))
            .into_iter()
            .flat_map(|v| v.iter())
            .map(|id| &self.facts[id.0 as usize])
    }

    /// Whether `node` of `ctx` is reachable.
    pub fn reachable(&self, ctx: FnCtxId, node: NodeId) -> bool {
        self.at.contains_key(&(ctx, node))
    }

    /// Every distinct fact of the solution.
    pub fn all_facts(&self) -> impl Iterator<Item = &F> + '_ {
        self.facts.iter()
    }

    /// Number of distinct facts.
    pub fn fact_count(&self) -> usize {
        self.facts.len()
    }
}

/// A call waiting on a callee's summary: caller context, caller entry fact, call edge index,
/// the callee entered.
type Caller = (FnCtxId, FactId, u32, CallTarget);

/// Path edge: (context, entry fact, node, fact at node).
type PathEdge = (FnCtxId, FactId, NodeId, FactId);

struct Solver<'a, A: Analysis> {
    program: &'a Program,
    tc: &'a ThreadContexts,
    analysis: &'a mut A,
    facts: Vec<A::Fact>,
    index: FxHashMap<A::Fact, FactId>,
    seen: FxHashSet<PathEdge>,
    work: Vec<PathEdge>,
    at: FxHashMap<(FnCtxId, NodeId), SmallVec<[FactId; 2]>>,
    /// Merged fact per over-full program point.
    widened: FxHashMap<(FnCtxId, NodeId), FactId>,
    summaries: FxHashMap<(FnCtxId, FactId), SmallVec<[FactId; 2]>>,
    /// Entry facts each callee context is analysed with.
    entries: FxHashMap<FnCtxId, SmallVec<[FactId; 4]>>,
    /// Merged entry fact of contexts over [`MAX_ENTRY_FACTS`].
    entry_widened: FxHashMap<FnCtxId, FactId>,
    /// Callers waiting on a callee (context, entry fact): (caller ctx, caller entry fact, call
    /// edge index, target).
    callers: FxHashMap<(FnCtxId, FactId), Vec<Caller>>,
}

/// Solves `analysis` for the thread described by `tc`, starting its entry with `init`.
pub fn solve<A: Analysis>(
    program: &Program,
    tc: &ThreadContexts,
    analysis: &mut A,
    init: Vec<A::Fact>,
) -> Solution<A::Fact> {
    let mut s = Solver {
        program,
        tc,
        analysis,
        facts: Vec::new(),
        index: FxHashMap::default(),
        seen: FxHashSet::default(),
        work: Vec::new(),
        at: FxHashMap::default(),
        widened: FxHashMap::default(),
        summaries: FxHashMap::default(),
        entries: FxHashMap::default(),
        entry_widened: FxHashMap::default(),
        callers: FxHashMap::default(),
    };
    let entry_func = tc.ctx(tc.entry).func;
    if let Some(cfg) = &program.function(entry_func).body {
        for f in init {
            let id = s.intern(f);
            s.propagate(tc.entry, id, cfg.entry, id);
        }
    }
    s.run();
    tracing::debug!(
        thread = tc.thread.0,
        facts = s.facts.len(),
        path_edges = s.seen.len(),
        "dataflow solved"
    );
    Solution {
        facts: s.facts,
        at: s.at,
    }
}

impl<A: Analysis> Solver<'_, A> {
    fn intern(&mut self, f: A::Fact) -> FactId {
        if let Some(&id) = self.index.get(&f) {
            return id;
        }
        let id = FactId(self.facts.len() as u32);
        self.facts.push(f.clone());
        self.index.insert(f, id);
        id
    }

    /// The entry fact a callee context is analysed with: `f` itself, or, once the context has
    /// [`MAX_ENTRY_FACTS`] entry facts, their merge (callers then share its summary).
    fn entry_fact(&mut self, ctx: FnCtxId, f: A::Fact) -> FactId {
        let id = self.intern(f);
        let known = self.entries.entry(ctx).or_default();
        if known.contains(&id) {
            return id;
        }
        if known.len() < MAX_ENTRY_FACTS {
            known.push(id);
            return id;
        }
        let mut all: Vec<&A::Fact> = Vec::new();
        match self.entry_widened.get(&ctx) {
            Some(w) => all.push(&self.facts[w.0 as usize]),
            None => all.extend(known.iter().map(|k| &self.facts[k.0 as usize])),
        }
        all.push(&self.facts[id.0 as usize]);
        let merged = self.analysis.merge(&all);
        let w = self.intern(merged);
        self.entry_widened.insert(ctx, w);
        let known = self.entries.entry(ctx).or_default();
        if !known.contains(&w) {
            known.push(w);
        }
        w
    }

    fn propagate(&mut self, ctx: FnCtxId, d1: FactId, node: NodeId, mut d2: FactId) {
        let key = (ctx, node);
        let known = self.at.get(&key).is_some_and(|v| v.contains(&d2));
        if !known && self.at.get(&key).is_some_and(|v| v.len() >= MAX_FACTS) {
            // Fold into the point's merged fact.
            let mut all: Vec<&A::Fact> = Vec::new();
            if let Some(w) = self.widened.get(&key) {
                all.push(&self.facts[w.0 as usize]);
            } else if let Some(v) = self.at.get(&key) {
                all.extend(v.iter().map(|id| &self.facts[id.0 as usize]));
            }
            all.push(&self.facts[d2.0 as usize]);
            let merged = self.analysis.merge(&all);
            d2 = self.intern(merged);
            self.widened.insert(key, d2);
        }
        if self.seen.insert((ctx, d1, node, d2)) {
            let v = self.at.entry(key).or_default();
            if !v.contains(&d2) {
                v.push(d2);
            }
            self.work.push((ctx, d1, node, d2));
        }
    }

    fn run(&mut self) {
        let mut out = Vec::new();
        while let Some((ctx, d1, node, d2)) = self.work.pop() {
            let func = self.tc.ctx(ctx).func;
            let Some(cfg) = &self.program.function(func).body else {
                continue;
            };
            if node == cfg.exit {
                let sum = self.summaries.entry((ctx, d1)).or_default();
                if !sum.contains(&d2) {
                    sum.push(d2);
                    let waiting = self.callers.get(&(ctx, d1)).cloned().unwrap_or_default();
                    for (cctx, cd1, ei, target) in waiting {
                        let ccfg = self.tc.ctx(cctx).func;
                        let Some(ccfg) = &self.program.function(ccfg).body else {
                            continue;
                        };
                        let e = &ccfg.edges[ei as usize];
                        let exit = self.facts[d2.0 as usize].clone();
                        let f = self.analysis.call_exit(cctx, EdgeId(ei), e, &target, &exit);
                        let id = self.intern(f);
                        self.propagate(cctx, cd1, e.dst, id);
                    }
                }
            }
            let node_data = cfg.node(node);
            for &eid in &node_data.succs {
                let e = cfg.edge(eid);
                let targets = self.tc.callees(ctx, eid);
                if targets.is_empty() {
                    out.clear();
                    let fact = self.facts[d2.0 as usize].clone();
                    self.analysis.transfer(ctx, eid, e, &fact, &mut out);
                    for f in std::mem::take(&mut out) {
                        let id = self.intern(f);
                        self.propagate(ctx, d1, e.dst, id);
                    }
                    continue;
                }
                for target in targets.iter().copied() {
                    let fact = self.facts[d2.0 as usize].clone();
                    let entry_fact = self.analysis.call_entry(ctx, eid, e, &target, &fact);
                    let de = self.entry_fact(target.ctx, entry_fact);
                    let callers = self.callers.entry((target.ctx, de)).or_default();
                    let rec = (ctx, d1, eid.0, target);
                    if !callers.contains(&rec) {
                        callers.push(rec);
                    }
                    if let Some(callee_cfg) = &self.program.function(target.func).body {
                        self.propagate(target.ctx, de, callee_cfg.entry, de);
                    }
                    let exits = self
                        .summaries
                        .get(&(target.ctx, de))
                        .cloned()
                        .unwrap_or_default();
                    for x in exits {
                        let exit = self.facts[x.0 as usize].clone();
                        let f = self.analysis.call_exit(ctx, eid, e, &target, &exit);
                        let id = self.intern(f);
                        self.propagate(ctx, d1, e.dst, id);
                    }
                }
            }
        }
    }
}
