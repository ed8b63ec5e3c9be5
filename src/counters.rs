//! Thread-alive counters: a waiter joins a pool of workers by waiting, under a mutex, until a
//! counter the workers update falls to zero (C-Thread-Pool's `threads_alive`; Goblint's
//! `thread-join-counter` regression tests). This module finds the syntactic candidates; the
//! lockset analysis ([`crate::lockset`]) tracks where each thread stands with respect to them
//! (pseudo-locks, like its flags) and checks the conditions below on its results
//! ([`crate::lockset::LocksetResult::counter_orders`]).
//!
//! A **counter** is an integer global of at least 32 bits, neither thread-local nor extern,
//! initially 0, whose address is never taken and whose every store is `C = C + k` or
//! `C = C - k` for one constant step `k > 0` (the same for every store). When
//!
//! 1. every store and every test of `C` holds one common mutex `M` (so updates are atomic and
//!    tests see a value no update is midway through),
//! 2. one unique thread, the *waiter*, tests `C` and never stores it, and
//! 3. every other thread that stores `C`, a *worker*, first adds `k` once and then subtracts
//!    `k` once on every path (never twice, never a subtraction before the addition),
//!
//! then at every moment `C = k · |workers between their addition and their subtraction|`.
//! A waiter that observes `C == 0` under `M` therefore knows every worker is either past its
//! subtraction (and all it did before is ordered before the observation through `M`) or
//! before its addition (and all it will do comes after). Two ways exclude the second case:
//!
//! - **full count**: the waiter first observed `C == n` for a local `n` that bounds the number
//!   of threads its entry function creates before that test (`for (i = 0; i < n; i++)
//!   pthread_create(...)`, checked by [`full_tests`]) and creates none after it, with `k = 1`.
//!   Since `C ≤ |workers created| ≤ n`, equality means every created worker had added;
//! - **gate**: the worker's access lies after a branch that needs a *flag* ([`crate::lockset`]
//!   module docs: a global only ever set to one value) to still hold its initial value, taken
//!   after its addition, and the waiter (the flag's only setter) set the flag before observing
//!   `C == 0`. A worker that had not added by then reads the flag set after adding, so never
//!   reaches the access.
//!
//! Either way an access a worker makes before its subtraction is ordered before whatever the
//! waiter does after the observation (sequential consistency, as SV-COMP assumes).
//!
//! **Outer counting** is the other common shape: the waiter adds `k` for each worker it
//! creates and each worker subtracts `k` once (never adds). Then
//! `C = k · (additions by the waiter - workers that subtracted)`. When the waiter's entry
//! function, which runs once and creates every worker, reaches a zero test only after adding
//! at least once per thread it created ([`outer_tests`]) and creates none after it, seeing
//! `C == 0` there means as many workers subtracted as the waiter added, so every created
//! worker has subtracted.

use crate::ir::visit::{strip_casts, walk_cfg_addr_taken, walk_expr};
use crate::ir::{
    BinOp, Callee, Cfg, EdgeId, Expr, ExprKind, FuncId, GlobalId, Host, LocalId, Lval, NodeId, Op,
    Program, UnOp, Var,
};
use crate::model::{Role, Roles};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// The counter candidates of a program and the full-count tests that bound their creations.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Each counter global and its step `k` (> 0).
    pub step: FxHashMap<GlobalId, i128>,
    /// Full-count tests: branches (function, edge) taken only when a counter of step 1 equals
    /// a local `n` that bounds the threads the function created before, and after which it
    /// creates none ([`full_tests`]), with the counter.
    pub full: FxHashMap<(FuncId, EdgeId), GlobalId>,
    /// Zero tests of a counter in a function that, on every path to them, added to it at
    /// least once per thread it created, and after which it creates none ([`outer_tests`]).
    pub outer: FxHashSet<(FuncId, EdgeId)>,
}

impl Counters {
    /// Finds the counters of `program` (module docs) that some branch tests for zero, and
    /// their full-count tests.
    pub fn find(program: &Program, roles: &Roles) -> Counters {
        let mut step = candidates(program);
        if !step.is_empty() {
            let mut tested: FxHashSet<GlobalId> = FxHashSet::default();
            for f in &program.functions {
                let Some(cfg) = &f.body else { continue };
                for e in &cfg.edges {
                    if let Op::Assume { cond, branch } = &e.op
                        && let Some(g) = zero_tested(program, cond, *branch)
                    {
                        tested.insert(g);
                    }
                }
            }
            step.retain(|g, _| tested.contains(g));
        }
        let full = if step.values().any(|k| *k == 1) {
            full_tests(program, roles, &step)
        } else {
            FxHashMap::default()
        };
        let outer = outer_tests(program, roles, &step);
        Counters { step, full, outer }
    }

    /// Whether there is no counter.
    pub fn is_empty(&self) -> bool {
        self.step.is_empty()
    }
}

/// The counter store `op` makes: the counter and the signed step (`C = C + d`).
pub fn update(op: &Op) -> Option<(GlobalId, i128)> {
    let Op::Assign { lhs, rhs } = op else {
        return None;
    };
    let g = whole_global(lhs)?;
    let ExprKind::Binary(bop, a, b) = &strip_casts(rhs).kind else {
        return None;
    };
    let loads_g = |x: &Expr| matches!(&x.kind, ExprKind::Load(lv) if whole_global(lv) == Some(g));
    let int = |x: &Expr| match &x.kind {
        ExprKind::Int(v) => Some(*v),
        _ => None,
    };
    let d = match bop {
        BinOp::Add if loads_g(a) => int(b)?,
        BinOp::Add if loads_g(b) => int(a)?,
        BinOp::Sub if loads_g(a) => int(b)?.checked_neg()?,
        _ => return None,
    };
    Some((g, d))
}

/// The counter a branch (`cond` taken when its truth is `branch`) requires to be zero: `cond`
/// is `C`, `!C`, `C == 0` or `C != 0` (either side, value-preserving casts aside).
pub fn zero_tested(program: &Program, cond: &Expr, branch: bool) -> Option<GlobalId> {
    // (counter, whether `cond` is true exactly when the counter is nonzero)
    fn shape(program: &Program, e: &Expr) -> Option<(GlobalId, bool)> {
        match &e.kind {
            ExprKind::Load(lv) => whole_global(lv).map(|g| (g, true)),
            ExprKind::Cast(inner) if widening(program, e, inner) => shape(program, inner),
            ExprKind::Unary(UnOp::LogNot, inner) => shape(program, inner).map(|(g, p)| (g, !p)),
            ExprKind::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b) => {
                let (x, zero) = match (&a.kind, &b.kind) {
                    (_, ExprKind::Int(0)) => (a, true),
                    (ExprKind::Int(0), _) => (b, true),
                    _ => (a, false),
                };
                if !zero {
                    return None;
                }
                let (g, p) = shape(program, x)?;
                Some((g, if *op == BinOp::Ne { p } else { !p }))
            }
            _ => None,
        }
    }
    let (g, nonzero) = shape(program, cond)?;
    (branch != nonzero).then_some(g)
}

/// The counter and local a branch requires to be equal: `C == n` taken, or `C != n` not taken
/// (either side, no casts).
fn equal_tested(cond: &Expr, branch: bool) -> Option<(GlobalId, LocalId)> {
    let ExprKind::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b) = &cond.kind else {
        return None;
    };
    if (*op == BinOp::Eq) != branch {
        return None;
    }
    let global = |x: &Expr| match &x.kind {
        ExprKind::Load(lv) => whole_global(lv),
        _ => None,
    };
    let local = |x: &Expr| match &x.kind {
        ExprKind::Load(lv) => crate::ir::visit::whole_local(lv),
        _ => None,
    };
    match (global(a), local(b), global(b), local(a)) {
        (Some(g), Some(n), _, _) | (_, _, Some(g), Some(n)) => Some((g, n)),
        _ => None,
    }
}

/// A cast that keeps whether its integer operand is zero (to a type at least as wide, or to
/// `_Bool`).
fn widening(program: &Program, outer: &Expr, inner: &Expr) -> bool {
    let t = &program.types;
    let int = |ty| matches!(t.kind(ty), crate::ir::types::TypeKind::Int(_));
    int(outer.ty)
        && int(inner.ty)
        && match (t.size_of(outer.ty), t.size_of(inner.ty)) {
            (Some(o), Some(i)) => {
                o >= i
                    || matches!(
                        t.kind(outer.ty),
                        crate::ir::types::TypeKind::Int(crate::ir::types::IntKind::Bool)
                    )
            }
            _ => false,
        }
}

/// The global an lvalue is as a whole.
fn whole_global(lv: &Lval) -> Option<GlobalId> {
    match lv.host {
        Host::Var(Var::Global(g)) if lv.proj.is_empty() => Some(g),
        _ => None,
    }
}

/// Counter candidates (module docs) with their step.
fn candidates(program: &Program) -> FxHashMap<GlobalId, i128> {
    let mut bad: FxHashSet<GlobalId> = FxHashSet::default();
    let mut steps: FxHashMap<GlobalId, i128> = FxHashMap::default();
    let note_addr = |e: &Expr, bad: &mut FxHashSet<GlobalId>| {
        walk_expr(e, &mut |x| {
            if let ExprKind::AddrOf(lv) = &x.kind
                && let Host::Var(Var::Global(g)) = lv.host
            {
                bad.insert(g);
            }
        });
    };
    for g in &program.globals {
        for item in &g.init {
            if let crate::ir::InitValue::Expr(e) = &item.value {
                note_addr(e, &mut bad);
            }
        }
    }
    for f in &program.functions {
        let Some(cfg) = &f.body else { continue };
        for e in &cfg.edges {
            crate::ir::visit::op_exprs(&e.op, &mut |x| note_addr(x, &mut bad));
            let written: SmallVec<[&Lval; 2]> = match &e.op {
                Op::Assign { lhs, .. } => {
                    if let Some((g, d)) = update(&e.op)
                        && d != 0
                    {
                        let k = d.abs();
                        if *steps.entry(g).or_insert(k) != k {
                            bad.insert(g);
                        }
                        SmallVec::new()
                    } else {
                        SmallVec::from_elem(lhs, 1)
                    }
                }
                Op::Call { dest: Some(d), .. } => SmallVec::from_elem(d, 1),
                Op::Asm { outputs, .. } => outputs.iter().collect(),
                _ => SmallVec::new(),
            };
            for lv in written {
                if let Host::Var(Var::Global(g)) = lv.host {
                    bad.insert(g);
                }
            }
        }
    }
    steps.retain(|g, _| {
        let gl = program.global(*g);
        let zero_init = match gl.init.as_slice() {
            [] => true,
            [item] if item.proj.is_empty() => matches!(
                &item.value,
                crate::ir::InitValue::Expr(e) if matches!(strip_casts(e).kind, ExprKind::Int(0))
            ),
            _ => false,
        };
        !bad.contains(g)
            && zero_init
            && !gl.thread_local
            && gl.storage != crate::ir::Storage::Extern
            && matches!(
                program.types.kind(gl.ty),
                crate::ir::types::TypeKind::Int(_)
            )
            && program.types.size_of(gl.ty).is_some_and(|s| s >= 4)
    });
    steps
}

/// One class of paths of the creation count: `k0` no thread created yet; `d` an upper bound
/// of `created - i`; `e` an upper bound of `i - n` (`None`: unbounded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
struct Count {
    k0: bool,
    d: Option<i8>,
    e: Option<i8>,
}

impl Count {
    /// Whether the paths created at most `n` threads (no thread, or `created - n ≤ d + e ≤ 0`).
    fn bounded(&self) -> bool {
        self.k0
            || matches!((self.d, self.e), (Some(d), Some(e)) if i16::from(d) + i16::from(e) <= 0)
    }
}

/// Bounds beyond this magnitude are dropped (upper bounds above it become unbounded, below
/// it are raised to it), so the count lattice is finite.
const COUNT_CAP: i8 = 8;

/// At most this many classes of paths per node; more are joined into one.
const MAX_COUNTS: usize = 8;

fn shift(x: Option<i8>, by: i8) -> Option<i8> {
    x.and_then(|v| v.checked_add(by))
        .filter(|v| *v <= COUNT_CAP)
        .map(|v| v.max(-COUNT_CAP))
}

/// The full-count tests of `program` (module docs): in each function, branches `C == n`
/// (`C` a counter of step 1, `n` a local whose address is never taken) reached only when the
/// function has created at most `n` threads, with no thread creation reachable after them.
///
/// The count is a small disjunctive analysis of the function alone, per local `i` compared
/// with `n` (`i < n`): an assignment `i = c` (`c ≥ 0`) before any creation bounds the
/// creations by `i`; each creation raises the bound, each `i = i + 1` lowers it, each passed
/// test `i < n` bounds `i` by `n - 1`. Functions that call a defined function that may create
/// threads are skipped.
pub fn full_tests(
    program: &Program,
    roles: &Roles,
    step: &FxHashMap<GlobalId, i128>,
) -> FxHashMap<(FuncId, EdgeId), GlobalId> {
    let creators = roles.callers_reaching(program, |r| matches!(r, Role::ThreadCreate { .. }));
    let mut out = FxHashMap::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        let tests: Vec<(EdgeId, GlobalId, LocalId)> = cfg
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.op {
                Op::Assume { cond, branch } => equal_tested(cond, *branch)
                    .filter(|(g, _)| step.get(g) == Some(&1))
                    .map(|(g, n)| (EdgeId(i as u32), g, n)),
                _ => None,
            })
            .collect();
        if tests.is_empty() {
            continue;
        }
        let mut taken: FxHashSet<LocalId> = FxHashSet::default();
        walk_cfg_addr_taken(cfg, &mut |l| {
            taken.insert(l);
        });
        if calls_wrapper(cfg, roles, &creators) {
            continue;
        }
        let creates = creates(cfg, roles);
        for (t, g, n) in tests {
            if taken.contains(&n) || creates_after(cfg, &creates, t) {
                continue;
            }
            let counters = counter_locals(cfg, n, &taken);
            let src = cfg.edge(t).src;
            if counters.iter().any(|i| {
                count_at(cfg, roles, Tally::Loop { i: *i, n }, src)
                    .is_some_and(|cs| cs.iter().all(Count::bounded))
            }) {
                out.insert((func, t), g);
            }
        }
    }
    out
}

/// The outer zero tests of `program` (module docs): in each function, branches that need a
/// counter zero, reached only when the function has added to the counter at least as often as
/// it created threads (each creation counts one, each addition minus one, from the function's
/// entry), with no thread creation reachable after them. Functions that call a defined
/// function that may create threads are skipped.
pub fn outer_tests(
    program: &Program,
    roles: &Roles,
    step: &FxHashMap<GlobalId, i128>,
) -> FxHashSet<(FuncId, EdgeId)> {
    let mut out = FxHashSet::default();
    if step.is_empty() {
        return out;
    }
    let creators = roles.callers_reaching(program, |r| matches!(r, Role::ThreadCreate { .. }));
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        let tests: Vec<(EdgeId, GlobalId)> = cfg
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.op {
                Op::Assume { cond, branch } => zero_tested(program, cond, *branch)
                    .filter(|g| step.contains_key(g))
                    .map(|g| (EdgeId(i as u32), g)),
                _ => None,
            })
            .collect();
        if tests.is_empty() || calls_wrapper(cfg, roles, &creators) {
            continue;
        }
        let creates = creates(cfg, roles);
        for (t, g) in tests {
            if creates_after(cfg, &creates, t) {
                continue;
            }
            if count_at(cfg, roles, Tally::Adds(g), cfg.edge(t).src)
                .is_some_and(|cs| cs.iter().all(Count::bounded))
            {
                out.insert((func, t));
            }
        }
    }
    out
}

/// Whether `cfg` calls a defined function that may create threads (`creators` without the
/// create functions themselves).
fn calls_wrapper(cfg: &Cfg, roles: &Roles, creators: &FxHashSet<FuncId>) -> bool {
    cfg.edges.iter().any(|e| {
        e.op.direct_callee().is_some_and(|g| {
            creators.contains(&g) && !matches!(roles.get(g), Some(Role::ThreadCreate { .. }))
        })
    })
}

/// The edges of `cfg` that may create a thread ([`is_create`]).
fn creates(cfg: &Cfg, roles: &Roles) -> Vec<EdgeId> {
    (0..cfg.edges.len())
        .map(|i| EdgeId(i as u32))
        .filter(|e| is_create(roles, &cfg.edge(*e).op))
        .collect()
}

/// Whether one of `creates` is reachable after edge `t`.
fn creates_after(cfg: &Cfg, creates: &[EdgeId], t: EdgeId) -> bool {
    let after = cfg.edge(t).dst;
    creates
        .iter()
        .any(|c| cfg.reaches(after, cfg.edge(*c).src, &[]))
}

/// Whether `op` may create a thread (a create call, or an indirect call).
fn is_create(roles: &Roles, op: &Op) -> bool {
    match op {
        Op::Call {
            callee: Callee::Indirect(_),
            ..
        } => true,
        _ => matches!(roles.of_call(op), Some(Role::ThreadCreate { .. })),
    }
}

/// Locals `i` (address never taken) tested `i < n` somewhere in `cfg`.
fn counter_locals(cfg: &Cfg, n: LocalId, taken: &FxHashSet<LocalId>) -> Vec<LocalId> {
    let mut out: Vec<LocalId> = cfg
        .edges
        .iter()
        .filter_map(|e| match &e.op {
            Op::Assume { cond, branch } => below(cond, *branch, n),
            _ => None,
        })
        .filter(|i| !taken.contains(i))
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The local `i` a branch requires to be below `n`: `i < n` or `n > i` taken, `i >= n` or
/// `n <= i` not taken.
fn below(cond: &Expr, branch: bool, n: LocalId) -> Option<LocalId> {
    let ExprKind::Binary(op, a, b) = &cond.kind else {
        return None;
    };
    let local = |x: &Expr| match &x.kind {
        ExprKind::Load(lv) => crate::ir::visit::whole_local(lv),
        _ => None,
    };
    let (i, m) = match (op, branch) {
        (BinOp::Lt, true) | (BinOp::Ge, false) => (local(a)?, local(b)?),
        (BinOp::Gt, true) | (BinOp::Le, false) => (local(b)?, local(a)?),
        _ => return None,
    };
    (m == n && i != n).then_some(i)
}

/// The creation counts at node `at` (module docs of [`full_tests`]), or `None` when the
/// analysis gives up.
fn count_at(cfg: &Cfg, roles: &Roles, tally: Tally, at: NodeId) -> Option<Vec<Count>> {
    let nodes = cfg.nodes.len();
    let mut facts: Vec<Vec<Count>> = vec![Vec::new(); nodes];
    let entry = cfg.entry.0 as usize;
    let start = match tally {
        Tally::Loop { .. } => None,
        Tally::Adds(_) => Some(0),
    };
    *facts.get_mut(entry)? = vec![Count {
        k0: true,
        d: start,
        e: start,
    }];
    let mut work: Vec<NodeId> = vec![cfg.entry];
    let mut steps = 0usize;
    while let Some(x) = work.pop() {
        steps += 1;
        if steps > 64 * nodes + 64 {
            return None;
        }
        let here = facts.get(x.0 as usize)?.clone();
        for &eid in &cfg.node(x).succs {
            let edge = cfg.edge(eid);
            let mut next: Vec<Count> = here
                .iter()
                .filter_map(|c| count_transfer(roles, &edge.op, tally, *c))
                .collect();
            let slot = facts.get_mut(edge.dst.0 as usize)?;
            next.extend(slot.iter().copied());
            next.sort();
            next.dedup();
            if next.len() > MAX_COUNTS {
                let joined = next.iter().skip(1).fold(next[0], |a, b| Count {
                    k0: a.k0 && b.k0,
                    d: a.d.zip(b.d).map(|(x, y)| x.max(y)),
                    e: a.e.zip(b.e).map(|(x, y)| x.max(y)),
                });
                next = vec![joined];
            }
            if next != *slot {
                *slot = next;
                work.push(edge.dst);
            }
        }
    }
    facts.get(at.0 as usize).cloned()
}

/// What the creations are counted against.
#[derive(Clone, Copy, Debug)]
enum Tally {
    /// A loop counter `i` and its bound `n` (`d` bounds `created - i`, `e` bounds `i - n`).
    Loop { i: LocalId, n: LocalId },
    /// The function's own additions to a counter (`d` bounds `created - additions`, `e` is 0).
    Adds(GlobalId),
}

/// One edge of the creation count; `None` when the edge cannot be taken.
fn count_transfer(roles: &Roles, op: &Op, tally: Tally, mut c: Count) -> Option<Count> {
    let (i, n) = match tally {
        Tally::Loop { i, n } => (i, n),
        Tally::Adds(g) => {
            if is_create(roles, op) {
                c.k0 = false;
                c.d = shift(c.d, 1);
            } else if let Some((h, d)) = update(op)
                && h == g
                && d > 0
            {
                c.d = shift(c.d, -1);
            }
            return Some(c);
        }
    };
    let writes = |lv: &Lval, l: LocalId| crate::ir::visit::whole_local(lv) == Some(l);
    match op {
        Op::Assign { lhs, rhs } if writes(lhs, i) => {
            let rhs = strip_casts(rhs);
            match &rhs.kind {
                ExprKind::Int(v) if *v >= 0 && c.k0 => {
                    c.d = Some(i8::try_from(*v).map_or(-COUNT_CAP, |v| (-v).max(-COUNT_CAP)));
                    c.e = None;
                }
                ExprKind::Binary(BinOp::Add, a, b)
                    if matches!(&a.kind, ExprKind::Load(lv) if writes(lv, i))
                        && matches!(b.kind, ExprKind::Int(1)) =>
                {
                    c.d = shift(c.d, -1);
                    c.e = shift(c.e, 1);
                }
                _ => {
                    c.d = None;
                    c.e = None;
                }
            }
        }
        Op::Assign { lhs, .. } if writes(lhs, n) => c.e = None,
        Op::Assume { cond, branch } if below(cond, *branch, n) == Some(i) => {
            c.e = Some(c.e.map_or(-1, |e| e.min(-1)));
        }
        Op::Call { dest, .. } => {
            if is_create(roles, op) {
                c.k0 = false;
                c.d = shift(c.d, 1);
            }
            if let Some(d) = dest {
                if writes(d, i) {
                    c.d = None;
                    c.e = None;
                }
                if writes(d, n) {
                    c.e = None;
                }
            }
        }
        Op::Asm { outputs, .. } if outputs.iter().any(|o| writes(o, i) || writes(o, n)) => {
            c.d = None;
            c.e = None;
        }
        _ => {}
    }
    Some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(k0: bool, d: Option<i8>, e: Option<i8>) -> Count {
        Count { k0, d, e }
    }

    #[test]
    fn bounded_needs_no_creation_or_known_bounds() {
        // After `for (i = 0; i < n; i++) create`: created - i <= 0, i - n <= 0.
        assert!(count(false, Some(0), Some(0)).bounded());
        // Inside the body after the create, before `i++`: created - i <= 1, i - n <= -1.
        assert!(count(false, Some(1), Some(-1)).bounded());
        // `i <= n` loops: i - n <= 1 at the exit, one creation too many.
        assert!(!count(false, Some(0), Some(1)).bounded());
        assert!(!count(false, None, Some(-1)).bounded());
        assert!(count(true, None, None).bounded());
    }

    #[test]
    fn shift_saturates_towards_unknown() {
        assert_eq!(shift(Some(0), 1), Some(1));
        assert_eq!(shift(Some(COUNT_CAP), 1), None);
        assert_eq!(shift(Some(-COUNT_CAP), -1), Some(-COUNT_CAP));
        assert_eq!(shift(None, -1), None);
    }
}
