//! The value backend: a thread-modular interval/points-to abstract interpreter (seed 001 §4,
//! "EVA backend", and §5, Algorithm 1).
//!
//! Each thread is analysed as a sequential program by the shared fixpoint engine
//! ([`crate::dataflow`]) with the transfer functions of [`interp`] over the memory of
//! [`memory`], in call-string contexts. A thread starts from its creators' states at the
//! create statement (the entry's parameter bound to the create argument); what other threads
//! store reaches it through the shared invariant ([`interp::Shared`]). Rounds of thread
//! analyses repeat until the invariant and the create states are stable (the shared invariant is
//! widened from round [`WIDEN_ROUND`] on), which over-approximates every interleaving.
//!
//! When a thread's analysis runs out of its visit budget or the rounds do not stabilise, the
//! backend *degrades*: every query is answered by the syntactic backend, which is sound without
//! a state, and the reason is reported as an imprecision.

pub mod callbacks;
pub mod footprint;
pub mod interp;
pub mod library;
pub mod memory;
pub mod publication;
pub mod regions;
pub mod symeq;

use super::accesses::{self, Resolver};
use super::syntactic::Syntactic;
use super::{
    Address, Backend, Base, ByteRange, FuncTargets, IntRange, MemAccess, PointsTo, Target,
    TypeClass,
};
use crate::context::{CallSite, CallTarget, Context, ThreadContexts, ThreadId};
use crate::dataflow::{self, At, Callees, Solution};
use crate::ir::{Edge, Expr, FuncId, InitValue, LocalId, Lval, Program};
use crate::model::Roles;
use crate::threads::ThreadGraph;
use interp::{Interp, Shared};
use memory::{Frame, Mem, Obj, State, Val, top};
use racedar_domains::{Bool3, Interval, interval};
use rustc_hash::{FxHashMap, FxHashSet};
use std::rc::Rc;

/// Node visits per thread analysis before the backend degrades (at least; see
/// [`VISITS_PER_EDGE`]).
pub const VISIT_BUDGET: u64 = 30_000;

/// Work (node visits plus object joins) over all thread analyses of all rounds before the
/// backend degrades (at least; see [`TOTAL_PER_EDGE`]).
pub const TOTAL_BUDGET: u64 = 2_000_000;

/// Per-thread visits allowed per CFG edge of the program: a thread's analysis visits each
/// node of the contexts it reaches a few times, so a budget fixed in absolute terms would
/// degrade every program past some size (and the syntactic fallback resolves function
/// pointers to every address-taken function, quadratic in size). The budget is
/// `max(VISIT_BUDGET, VISITS_PER_EDGE × edges)`.
pub const VISITS_PER_EDGE: u64 = 3;

/// Total work allowed per CFG edge of the program: the total budget is
/// `max(TOTAL_BUDGET, TOTAL_PER_EDGE × edges)`.
pub const TOTAL_PER_EDGE: u64 = 60;

/// Programs with more CFG edges than this are analysed without call-string contexts (their
/// cost grows with contexts × rounds; seed 001 §8 reports the same trade-off for EVA).
pub const LARGE_PROGRAM_EDGES: usize = 6_000;

/// The share of the total budget (numerator over 4) the analysis with call-string contexts
/// may spend: when it runs out, the analysis starts again without contexts
/// ([`Backend::retry_cheaper`]) with the rest of the budget, and degrades only if that runs
/// out too.
/// A callee context shared by all its callers sees fewer distinct entry states, so the
/// context-insensitive analysis converges on programs where the other does not.
pub const CONTEXT_BUDGET_QUARTERS: u64 = 2;

/// Rounds of the thread-modular fixpoint before the backend degrades.
pub const MAX_ROUNDS: u32 = 8;

/// The round from which the shared invariant is widened.
pub const WIDEN_ROUND: u32 = 2;

/// The value backend over one program.
pub struct ValueBackend<'p> {
    program: &'p Program,
    roles: &'p Roles,
    syntactic: Syntactic<'p>,
    depth: usize,
    budget: u64,
    /// Work allowed over all thread analyses ([`TOTAL_BUDGET`], [`TOTAL_PER_EDGE`]).
    total_budget: u64,
    globals: Rc<Vec<Obj>>,
    addr_taken: FxHashSet<(FuncId, LocalId)>,
    /// The globals each function may reach by name ([`footprint`]).
    footprints: footprint::Footprints,
    /// The bases the shared invariant's pointers point to ([`Shared::pointed`]), as of the
    /// start of the thread analysis running.
    escaped: FxHashSet<Base>,
    specific_keys: FxHashSet<crate::ir::GlobalId>,
    shared: Shared,
    creates: FxHashMap<CallSite, (State, Val)>,
    solutions: FxHashMap<ThreadId, Solution<State>>,
    /// What each thread's solution was computed from, to skip unchanged threads.
    inputs: FxHashMap<ThreadId, Inputs>,
    /// When each create site's state last changed (a value of the shared clock).
    create_version: FxHashMap<CallSite, u64>,
    unique: FxHashMap<ThreadId, bool>,
    summaries: FxHashSet<Base>,
    /// Pointer stores of each thread's latest analysis ([`regions`]).
    ptr_stores: FxHashMap<ThreadId, FxHashSet<regions::PtrStore>>,
    /// Some thread had more pointer stores than recorded.
    ptr_overflow: bool,
    /// Publications of unpublished objects, per thread's latest analysis.
    published: FxHashMap<ThreadId, FxHashSet<(publication::Site, FuncId, crate::ir::EdgeId, bool)>>,
    /// Answers of [`Backend::region_disjoint`].
    disjoint: std::cell::RefCell<FxHashMap<crate::backend::regions::ArrayRoot, bool>>,
    round: u32,
    /// Work spent so far (node visits plus object joins).
    visits: u64,
    /// `visits` when the current round began.
    round_start: u64,
    changed: bool,
    degraded: Option<String>,
}

/// What a thread's analysis depended on.
struct Inputs {
    entry: FuncId,
    site: Option<CallSite>,
    unique: bool,
    /// The shared clock when the analysis started.
    at: u64,
    /// Shared bases it read.
    reads: FxHashSet<Base>,
}

/// Lets the engine drive an [`Interp`].
/// The second field is the object-join count at which the analysis gives up.
struct Solver<'i, 'a, 'p>(&'i mut Interp<'a, 'p>, u64);

impl dataflow::Analysis for Solver<'_, '_, '_> {
    type D = State;

    fn exhausted(&self) -> bool {
        memory::joins_done() > self.1
    }

    fn transfer(&mut self, at: At<'_>, edge: &Edge, d: &State) -> State {
        let mut s = self.0.transfer(at, edge, d);
        self.0.publish_orphans(&mut s);
        s
    }

    fn callees(&mut self, at: At<'_>, edge: &Edge, d: &State) -> Callees {
        self.0.callees(at, edge, d)
    }

    fn call_entry(&mut self, at: At<'_>, edge: &Edge, target: &CallTarget, d: &State) -> State {
        let mut s = self.0.call_entry(at, edge, target, d);
        self.0.publish_orphans(&mut s);
        s
    }

    fn call_return(
        &mut self,
        at: At<'_>,
        edge: &Edge,
        target: &CallTarget,
        pre: &State,
        exit: &State,
    ) -> State {
        let mut s = self.0.call_return(at, edge, target, pre, exit);
        self.0.publish_orphans(&mut s);
        s
    }
}

impl<'p> ValueBackend<'p> {
    /// Prepares the backend: initial objects of the globals, address-taken locals. `depth` is
    /// the call-string length of contexts.
    pub fn new(program: &'p Program, roles: &'p Roles, depth: usize) -> ValueBackend<'p> {
        let addr_taken = interp::address_taken_locals(program);
        let specific_keys = interp::specific_keys(program, roles);
        let edges: usize = program
            .functions
            .iter()
            .filter_map(|f| f.body.as_ref())
            .map(|c| c.edges.len())
            .sum();
        let depth = if edges > LARGE_PROGRAM_EDGES {
            0
        } else {
            depth
        };
        let total_budget = TOTAL_BUDGET.max(TOTAL_PER_EDGE.saturating_mul(edges as u64));
        let mut b = ValueBackend {
            program,
            roles,
            syntactic: Syntactic::new(program, roles),
            depth,
            budget: VISIT_BUDGET.max(VISITS_PER_EDGE.saturating_mul(edges as u64)),
            total_budget: if depth > 0 {
                total_budget / 4 * CONTEXT_BUDGET_QUARTERS
            } else {
                total_budget
            },
            globals: Rc::new(Vec::new()),
            addr_taken,
            footprints: footprint::Footprints::new(program, roles),
            escaped: FxHashSet::default(),
            specific_keys,
            shared: Shared::default(),
            creates: FxHashMap::default(),
            solutions: FxHashMap::default(),
            inputs: FxHashMap::default(),
            create_version: FxHashMap::default(),
            unique: FxHashMap::default(),
            summaries: FxHashSet::default(),
            ptr_stores: FxHashMap::default(),
            ptr_overflow: false,
            published: FxHashMap::default(),
            disjoint: std::cell::RefCell::new(FxHashMap::default()),
            round: 0,
            visits: 0,
            round_start: 0,
            changed: false,
            degraded: None,
        };
        b.globals = Rc::new(b.global_objects());
        b
    }

    fn interp(&self, thread: ThreadId) -> Interp<'_, 'p> {
        Interp {
            program: self.program,
            roles: self.roles,
            thread,
            unique: self
                .unique
                .get(&thread)
                .copied()
                .unwrap_or(thread == ThreadId::MAIN),
            shared: &self.shared,
            addr_taken: &self.addr_taken,
            footprints: &self.footprints,
            escaped: &self.escaped,
            specific_keys: &self.specific_keys,
            effects: interp::Effects::default(),
            cur: (regions::Stored::Other, None),
            at_edge: None,
            cur_fresh: None,
            fallback: &self.syntactic,
        }
    }

    /// Objects of the globals as static initialisation leaves them (zero where nothing is
    /// given, C11 §6.7.9p10).
    fn global_objects(&self) -> Vec<Obj> {
        let program = self.program;
        let frame = Rc::new(Frame {
            thread: ThreadId::MAIN,
            init: Mem::new(),
            globals: Rc::new(Vec::new()),
        });
        let empty = State::start(frame);
        let it = self.interp(ThreadId::MAIN);
        let main = program
            .functions
            .iter()
            .position(|f| f.name == "main")
            .map_or(FuncId(0), |i| FuncId(i as u32));
        program
            .globals
            .iter()
            .enumerate()
            .map(|(gi, g)| {
                let zero = Val::int(Interval::constant(0));
                let mut o = Obj::filled(zero);
                if g.storage == crate::ir::Storage::Extern {
                    // Defined elsewhere: any value.
                    return Obj::filled(top());
                }
                for item in &g.init {
                    let lv = Lval {
                        host: crate::ir::Host::Var(crate::ir::Var::Global(crate::ir::GlobalId(
                            gi as u32,
                        ))),
                        proj: item.proj.clone(),
                        ty: g.ty,
                    };
                    let a = it.lval_addrs(&empty, main, &lv);
                    let v = match &item.value {
                        InitValue::Expr(e) => it.eval(&empty, main, e),
                        InitValue::Str(_) => Val::int(Interval::new(-128, 255)),
                    };
                    let size = program
                        .types
                        .size_of(item_type(program, g.ty, &item.proj))
                        .unwrap_or(a.size);
                    for (_, off) in &a.targets {
                        if matches!(item.value, InitValue::Str(_)) {
                            let hi = off.hi().saturating_add(size.max(1) as i128 - 1);
                            o.write(Interval::new(off.lo(), hi), 1, &v, false);
                        } else {
                            o.write(*off, size, &v, true);
                        }
                    }
                }
                o
            })
            .collect()
    }

    fn state_at(&self, ctx: &Context) -> Option<&State> {
        let sol = self.solutions.get(&ctx.thread)?;
        let id = sol.contexts.lookup(&ctx.fctx)?;
        let cfg = self.program.function(ctx.fctx.func).body.as_ref()?;
        let edge = cfg.edges.get(ctx.edge.0 as usize)?;
        sol.at(id, edge.src)
    }

    /// The frame a thread starts from.
    fn frame(&self, thread: ThreadId, entry: FuncId, site: Option<CallSite>) -> Rc<Frame> {
        let mut init = Mem::new();
        if let Some(site) = site
            && let Some((state, arg)) = self.creates.get(&site)
        {
            if state.live {
                init = state.flatten();
            }
            let f = self.program.function(entry);
            if let Some(p) = f.params.first() {
                let ty = f.local(*p).ty;
                let size = self.program.types.size_of(ty).unwrap_or(8);
                let mut o = Obj::filled(top());
                let v = if arg.is_bottom() { top() } else { arg.clone() };
                o.write(Interval::constant(0), size, &v, true);
                init.insert(
                    Base::Local {
                        thread,
                        func: entry,
                        local: *p,
                    },
                    memory::ObjRef::new(o),
                );
            }
        }
        Rc::new(Frame {
            thread,
            init,
            globals: self.globals.clone(),
        })
    }

    fn live(&self) -> bool {
        self.degraded.is_none()
    }
}

/// The type of the sub-object `proj` selects in an object of type `ty`.
fn item_type(
    program: &Program,
    ty: crate::ir::TypeId,
    proj: &[crate::ir::Proj],
) -> crate::ir::TypeId {
    let types = &program.types;
    let mut t = ty;
    for p in proj {
        match p {
            crate::ir::Proj::Field { comp, index } => {
                if let Some(f) = types.comp(*comp).fields.get(*index as usize) {
                    t = f.ty;
                }
            }
            crate::ir::Proj::Index(_) => {
                if let crate::ir::types::TypeKind::Array { elem, .. } = types.kind(t) {
                    t = *elem;
                }
            }
        }
    }
    t
}

/// Resolves accesses in one state.
struct StateResolver<'a, 'p> {
    interp: Interp<'a, 'p>,
    state: &'a State,
    func: FuncId,
}

/// The byte range of an access at offsets `off` of `size` bytes.
fn range_of(off: Interval, size: u64) -> (ByteRange, bool) {
    let lo = off.lo().max(0);
    let lo = u64::try_from(lo).unwrap_or(u64::MAX);
    match off.as_constant() {
        Some(_) => (ByteRange::sized(lo, size), true),
        None => {
            let hi = if off.hi() == interval::POS_INF {
                u64::MAX
            } else {
                u64::try_from(off.hi())
                    .unwrap_or(u64::MAX)
                    .saturating_add(size.max(1))
            };
            (ByteRange { lo, hi }, false)
        }
    }
}

impl<'p> Resolver<'p> for StateResolver<'_, 'p> {
    fn region(&self, p: &'p Expr) -> Option<crate::backend::regions::Region> {
        self.interp.origin_of(self.state, self.func, p)
    }

    fn lval_region(&self, lv: &'p Lval) -> Option<crate::backend::regions::Region> {
        self.interp.lval_region(self.state, self.func, lv)
    }

    fn unpublished(&self, p: &'p Expr) -> bool {
        // A pointer into the recent object of a site, which no other thread can reach.
        let Some(site) = self.interp.fresh_site(self.state, self.func, p) else {
            return false;
        };
        let heap = publication::site_base(self.interp.thread, site);
        let v = self.interp.eval(self.state, self.func, p).as_ptr();
        !v.unknown && !v.targets().is_empty() && v.targets().iter().all(|(b, _)| *b == heap)
    }

    fn lval_targets(&self, lv: &'p Lval) -> Vec<Target> {
        let a = self.interp.lval_addrs(self.state, self.func, lv);

        let mut out: Vec<Target> = a
            .targets
            .iter()
            .filter(|(b, _)| !matches!(b, Base::Func(_)))
            .map(|(b, off)| {
                let (range, exact) = range_of(*off, a.size);
                Target::Addr(Address {
                    base: *b,
                    range,
                    exact,
                })
            })
            .collect();
        if a.unknown {
            out.push(Target::Typed(TypeClass::of(
                &self.interp.program.types,
                lv.ty,
            )));
        }
        out
    }

    fn int_upper(&self, e: &'p Expr) -> Option<u64> {
        let hi = self.interp.eval(self.state, self.func, e).as_int().hi();
        (hi != interval::POS_INF && hi >= 0).then_some(hi as u64)
    }

    fn pointee_targets(&self, p: &'p Expr, size: Option<(u64, bool)>) -> Vec<Target> {
        let types = &self.interp.program.types;
        let v = self.interp.eval(self.state, self.func, p).as_ptr();
        let inner = crate::ir::visit::strip_casts(p);
        let pointee = types
            .pointee(inner.ty)
            .or_else(|| types.pointee(p.ty))
            .unwrap_or(types.common.void);
        let mut out: Vec<Target> = v
            .targets()
            .iter()
            .filter(|(b, _)| !matches!(b, Base::Func(_)))
            .map(|(b, off)| {
                let (range, exact) = match size {
                    Some((n, all)) => {
                        let (r, e) = range_of(*off, n);
                        (r, e && all)
                    }
                    None => {
                        let lo = u64::try_from(off.lo().max(0)).unwrap_or(u64::MAX);
                        // A library access from a constant offset to the end of a global
                        // whose rest is exactly one pointee object accesses that object
                        // (`scanf("%d", &x)`, `fread(&s, sizeof s, 1, f)`).
                        let whole = match b {
                            Base::Global(g) if off.as_constant().is_some() => types
                                .size_of(self.interp.program.global(*g).ty)
                                .filter(|end| *end > lo)
                                .filter(|end| {
                                    types
                                        .size_of(pointee)
                                        .is_some_and(|n| n > 0 && end - lo == n)
                                }),
                            _ => None,
                        };
                        match whole {
                            Some(end) => (ByteRange { lo, hi: end }, true),
                            None => (ByteRange { lo, hi: u64::MAX }, false),
                        }
                    }
                };
                Target::Addr(Address {
                    base: *b,
                    range,
                    exact,
                })
            })
            .collect();
        if v.unknown {
            out.push(Target::Typed(TypeClass::of(types, pointee)));
        }
        out
    }
}

impl<'p> Backend<'p> for ValueBackend<'p> {
    type State = Option<State>;

    fn name(&self) -> &'static str {
        "value"
    }

    fn begin_round(&mut self, prev: Option<&ThreadGraph>) {
        self.round += 1;
        self.changed = false;
        self.round_start = self.visits;
        if let Some(g) = prev {
            self.unique = g.threads.iter().map(|t| (t.id, t.unique)).collect();
            self.shared.interrupts = g
                .threads
                .iter()
                .filter(|t| t.signal)
                .map(|t| t.id)
                .collect();
        }
    }

    fn analyse_thread(&mut self, thread: ThreadId, entry: FuncId, site: Option<CallSite>) {
        if !self.live() {
            return;
        }
        let unique = self
            .unique
            .get(&thread)
            .copied()
            .unwrap_or(thread == ThreadId::MAIN);
        if let Some(inp) = self.inputs.get(&thread)
            && inp.entry == entry
            && inp.site == site
            && inp.unique == unique
            && !self
                .shared
                .changed_since(thread, unique, &inp.reads, inp.at)
            && site.is_none_or(|s| self.create_version.get(&s).is_none_or(|v| *v <= inp.at))
        {
            // Same inputs: same results.
            return;
        }
        if tracing::enabled!(tracing::Level::DEBUG)
            && let Some(inp) = self.inputs.get(&thread)
        {
            let why: Vec<&Base> = inp
                .reads
                .iter()
                .filter(|b| self.shared.changed_since(thread, unique, [*b], inp.at))
                .take(3)
                .collect();
            tracing::debug!(thread = thread.0, round = self.round, ?why, "re-analysing");
        }
        let at = self.shared.clock();
        self.escaped = self.shared.pointed(thread, unique);
        let frame = self.frame(thread, entry, site);
        let init = State::start(frame);
        let tc = ThreadContexts::new(thread, entry, self.depth);
        let program = self.program;
        let joins_before = memory::joins_done();
        let left = self.total_budget.saturating_sub(self.visits);
        let budget = self.budget.min(left);
        let (sol, effects) = {
            let mut it = self.interp(thread);
            let mut solver = Solver(&mut it, joins_before.saturating_add(left));
            let sol = dataflow::solve(program, tc, &mut solver, init, budget);
            (sol, it.effects)
        };
        self.visits += sol.visits + (memory::joins_done() - joins_before);
        tracing::debug!(
            thread = thread.0,
            entry = %self.program.function(entry).name,
            visits = sol.visits,
            joins = memory::joins_done() - joins_before,
            contexts = sol.contexts.ctxs.len(),
            complete = sol.complete,
            "thread analysed"
        );
        if !sol.complete {
            self.degraded = Some(format!(
                "value analysis exceeded its budget ({} node visits per thread, {} in all): \
                 pointers resolved syntactically",
                self.budget, self.total_budget
            ));
            return;
        }
        let widen = self.round >= WIDEN_ROUND;
        if !effects.wild.is_empty() {
            tracing::debug!(thread = thread.0, wild = ?effects.wild.keys().collect::<Vec<_>>(), "stores through unresolved pointers");
        }
        self.changed |= self
            .shared
            .merge(thread, effects.stores, effects.wild, widen);
        for (site, (s, v)) in effects.creates {
            let e = self
                .creates
                .entry(site)
                .or_insert_with(|| (State::bottom(), Val::bottom()));
            let before = e.clone();
            if widen {
                e.0.widen_with(&s);
            } else {
                e.0.join_with(&s);
            }
            e.1 = e.1.join(&v);
            if e.0 != before.0 || e.1 != before.1 {
                self.changed = true;
                // Create states change on the shared clock's time line too.
                self.shared.tick();
                self.create_version.insert(site, self.shared.clock());
            }
        }
        self.summaries.extend(effects.summaries);
        self.ptr_overflow |= effects.ptr_overflow;
        self.ptr_stores.insert(thread, effects.ptr_stores);
        self.published.insert(thread, effects.published);
        self.solutions.insert(thread, sol);
        self.inputs.insert(
            thread,
            Inputs {
                entry,
                site,
                unique,
                at,
                reads: effects.reads.into_inner(),
            },
        );
    }

    fn end_round(&mut self, threads: usize) -> bool {
        tracing::debug!(
            round = self.round,
            work = self.visits,
            changed = self.changed,
            degraded = self.degraded.is_some(),
            "value round"
        );
        if !self.live() {
            return true;
        }
        let stable = threads <= 1 || !self.changed;
        // A round re-analyses the threads whose inputs changed, typically most of them:
        // with less than half of this round's work left, the next round would exhaust the
        // budget midway, so the backend degrades now instead of after that work.
        let spent = self.visits - self.round_start;
        let left = self.total_budget.saturating_sub(self.visits);
        if !stable && left < spent / 2 {
            self.degraded = Some(format!(
                "value analysis would exceed its budget ({} node visits per thread, {} in all) \
                 in round {}: pointers resolved syntactically",
                self.budget,
                self.total_budget,
                self.round + 1
            ));
            return true;
        }
        if !stable && self.round >= MAX_ROUNDS {
            self.degraded = Some(format!(
                "shared-memory fixpoint not reached in {MAX_ROUNDS} rounds: pointers resolved syntactically"
            ));
            return true;
        }
        stable
    }

    fn thread_contexts(&self, thread: ThreadId) -> Option<ThreadContexts> {
        if !self.live() {
            return None;
        }
        self.solutions.get(&thread).map(|s| s.contexts.clone())
    }

    fn state(&self, ctx: &Context) -> Self::State {
        self.state_at(ctx).cloned()
    }

    fn value(&self, ctx: &Context, e: &Expr) -> IntRange {
        if !self.live() {
            return self.syntactic.value(ctx, e);
        }
        let Some(s) = self.state_at(ctx) else {
            return IntRange::TOP;
        };
        let v = self.interp(ctx.thread).eval(s, ctx.fctx.func, e);
        if !v.ptr.targets().is_empty() || v.ptr.unknown {
            return IntRange::TOP;
        }
        let i = v.as_int();
        if i.is_bottom() {
            return IntRange::TOP;
        }
        IntRange {
            lo: (i.lo() != interval::NEG_INF).then_some(i.lo()),
            hi: (i.hi() != interval::POS_INF).then_some(i.hi()),
        }
    }

    fn value_ptr(&self, ctx: &Context, e: &Expr) -> PointsTo {
        if !self.live() {
            return self.syntactic.value_ptr(ctx, e);
        }
        let Some(s) = self.state_at(ctx) else {
            return PointsTo::Unknown;
        };
        let v = self.interp(ctx.thread).eval(s, ctx.fctx.func, e).as_ptr();
        if v.unknown {
            return PointsTo::Unknown;
        }
        let size = self
            .program
            .types
            .pointee(e.ty)
            .and_then(|t| self.program.types.size_of(t))
            .unwrap_or(1);
        PointsTo::Known(
            v.targets()
                .iter()
                .filter(|(b, _)| !matches!(b, Base::Func(_)))
                .map(|(b, off)| {
                    let (range, exact) = range_of(*off, size);
                    Address {
                        base: *b,
                        range,
                        exact,
                    }
                })
                .collect(),
        )
    }

    fn functions(&self, ctx: &Context, e: &Expr) -> FuncTargets {
        if !self.live() {
            return self.syntactic.functions(ctx, e);
        }
        let Some(s) = self.state_at(ctx) else {
            return FuncTargets {
                funcs: Vec::new(),
                exact: false,
            };
        };
        let v = self.interp(ctx.thread).eval(s, ctx.fctx.func, e).as_ptr();
        if v.unknown {
            return self.syntactic.functions(ctx, e);
        }
        let mut funcs: Vec<FuncId> = v
            .targets()
            .iter()
            .filter_map(|(b, _)| match b {
                Base::Func(f) => Some(*f),
                _ => None,
            })
            .collect();
        funcs.sort();
        funcs.dedup();
        let exact = funcs.len() == 1 && v.targets().len() == 1 && !v.null;
        FuncTargets { funcs, exact }
    }

    fn callback_functions(&self, ctx: &Context, e: &Expr, deep: bool) -> FuncTargets {
        if !self.live() {
            return self.syntactic.callback_functions(ctx, e, deep);
        }
        let Some(s) = self.state_at(ctx) else {
            return FuncTargets {
                funcs: Vec::new(),
                exact: false,
            };
        };
        match self
            .interp(ctx.thread)
            .callback_targets(s, ctx.fctx.func, e, deep)
        {
            Some((funcs, exact)) => FuncTargets { funcs, exact },
            None => self.syntactic.callback_functions(ctx, e, deep),
        }
    }

    fn exact_offset(&self, ctx: &Context, e: &Expr) -> Option<i128> {
        if !self.live() {
            return None;
        }
        let s = self.state_at(ctx)?;
        let v = self.interp(ctx.thread).eval(s, ctx.fctx.func, e).as_ptr();
        if v.unknown {
            return None;
        }
        let mut offset = None;
        for (b, off) in v.targets() {
            if matches!(b, Base::Func(_)) {
                return None;
            }
            let c = off.as_constant()?;
            if offset.is_some_and(|o| o != c) {
                return None;
            }
            offset = Some(c);
        }
        offset
    }

    fn accesses(&self, ctx: &Context) -> Vec<MemAccess<'p>> {
        if !self.live() {
            return self.syntactic.accesses(ctx);
        }
        let program = self.program;
        let Some(cfg) = &program.function(ctx.fctx.func).body else {
            return Vec::new();
        };
        let Some(edge) = cfg.edges.get(ctx.edge.0 as usize) else {
            return Vec::new();
        };
        let Some(state) = self.state_at(ctx) else {
            return Vec::new();
        };
        let r = StateResolver {
            interp: self.interp(ctx.thread),
            state,
            func: ctx.fctx.func,
        };
        accesses::statement_accesses(program, self.roles, &edge.op, &r)
    }

    fn feasible(&self, ctx: &Context) -> bool {
        if !self.live() {
            return true;
        }
        let Some(s) = self.state_at(ctx) else {
            return false;
        };
        let Some(edge) = self
            .program
            .function(ctx.fctx.func)
            .body
            .as_ref()
            .and_then(|c| c.edges.get(ctx.edge.0 as usize))
        else {
            return true;
        };
        match &edge.op {
            crate::ir::Op::Assume { cond, branch } => {
                let it = self.interp(ctx.thread);
                let t = interp::truth(&it.eval(s, ctx.fctx.func, cond));
                !matches!((t, branch), (Bool3::False, true) | (Bool3::True, false))
            }
            _ => true,
        }
    }

    fn publishing(&self) -> Vec<crate::backend::Publishing> {
        if !self.live() {
            return Vec::new();
        }
        let mut out: Vec<crate::backend::Publishing> = self
            .published
            .iter()
            .flat_map(|(t, ps)| {
                ps.iter()
                    .map(|(site, _, _, store)| crate::backend::Publishing {
                        object: publication::site_base(*t, *site),
                        store: *store,
                    })
            })
            .collect();
        out.sort();
        out.dedup();
        out
    }

    fn alias(&self, ctx: &Context, e: &Expr) -> Option<Expr> {
        if !self.live() {
            return None;
        }
        let s = self.state_at(ctx)?;
        let h = match &crate::ir::visit::strip_casts(e).kind {
            crate::ir::ExprKind::Load(lv) if lv.proj.is_empty() => match lv.host {
                crate::ir::Host::Var(crate::ir::Var::Local(l)) => (ctx.fctx.func, l),
                _ => return None,
            },
            _ => return None,
        };
        s.eqs.of(h).map(|f| (*f.addr).clone())
    }

    fn region_disjoint(&self, root: &crate::backend::regions::ArrayRoot) -> bool {
        if !self.live() || self.ptr_overflow {
            return false;
        }
        if let Some(d) = self.disjoint.borrow().get(root) {
            return *d;
        }
        let d = regions::disjoint(
            self.program,
            root,
            self.ptr_stores.values().flat_map(|s| s.iter()),
        );
        self.disjoint.borrow_mut().insert(*root, d);
        d
    }

    fn single_object(&self, base: &Base) -> bool {
        self.live() && matches!(base, Base::Heap { .. }) && !self.summaries.contains(base)
    }

    fn degradations(&self) -> Vec<String> {
        self.degraded.iter().cloned().collect()
    }

    fn retry_cheaper(&mut self) -> bool {
        let Some(reason) = &self.degraded else {
            return false;
        };
        if self.depth == 0 {
            return false;
        }
        tracing::info!(%reason, "value analysis with contexts gave up: again without contexts");
        // The whole analysis keeps to one total budget: the second attempt gets what the
        // first left.
        let spent = self.visits;
        let mut again = ValueBackend::new(self.program, self.roles, 0);
        again.total_budget = again.total_budget.saturating_sub(spent);
        *self = again;
        true
    }

    fn thread_independent(&self) -> bool {
        // Every query of a degraded backend goes to the syntactic one.
        self.degraded.is_some()
    }
}
