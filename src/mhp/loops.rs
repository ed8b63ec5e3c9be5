//! Loop shapes the active-threads analysis relies on (seed 001 §6.2 leaves loops to the
//! abstract interpreter; these shapes recover what a non-relational analysis loses):
//!
//! - *counted loops*, whose exit is reached on every path that reaches the loop, so leaving
//!   them keeps a path certain;
//! - *join loops*, which join every thread a *create loop* stored in an array of thread ids
//!   (`for (i = 0; i < n; i++) pthread_create(&t[i], ...); ... for (j = 0; j < n; j++)
//!   pthread_join(t[j], 0);`), so that after them none of those threads runs. The ids may
//!   also sit in a field of a fresh object per iteration that the array points to (`w =
//!   malloc(..); a[i] = w; pthread_create(&w->tid, ...); ... pthread_join(a[j]->tid, 0);`)
//!   when nothing else can write that field ([`super::id_field`]).

use crate::ir::types::CompId;
use crate::ir::visit::{
    expr_mentions_local, local_of, lval_mentions_local, op_exprs, strip_casts, walk_cfg_addr_taken,
    whole_local,
};
use crate::ir::{
    BinOp, Callee, Cfg, EdgeId, Expr, ExprKind, FuncId, Host, LocalId, Lval, NodeId, Op, Program,
    Proj, Var,
};
use crate::model::{Role, Roles};
use rustc_hash::{FxHashMap, FxHashSet};

/// The bound a counted loop compares its counter with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Bound {
    /// An integer constant.
    Const(i128),
    /// A local the loop does not change.
    Local(LocalId),
    /// A global no statement of the program writes ([`never_written`]): its initial value
    /// throughout.
    Global(crate::ir::GlobalId),
}

/// A counted loop: `while (counter OP bound) { ...; counter += step; ... }` where the body
/// changes the counter only by constant steps towards the bound and changes nothing else the
/// test reads.
#[derive(Clone, Debug)]
pub(crate) struct CountedLoop {
    /// Membership of the CFG nodes in the loop (head included).
    pub body: Vec<bool>,
    /// The edge that leaves the loop (the failing test).
    pub exit: EdgeId,
    /// The counter.
    pub counter: LocalId,
    /// What the counter is compared with.
    pub bound: Bound,
    /// The comparison under which the loop goes on, counter on the left (`Lt`, `Le`, `Gt`,
    /// `Ge` or `Ne`).
    pub op: BinOp,
    /// The step when every update of the counter in the body adds the same constant.
    pub step: Option<i128>,
}

/// The test of loop head `head` (of the loop whose nodes `body` marks): the edge that leaves
/// the loop, and the comparison `a OP b` under which the loop goes on (the head's condition,
/// negated when the loop goes on where it fails; other operators as they are). `None` when
/// the head is not a two-way branch with one way out of the loop.
pub(crate) fn continue_test<'c>(
    cfg: &'c Cfg,
    head: NodeId,
    body: &[bool],
) -> Option<(EdgeId, BinOp, &'c Expr, &'c Expr)> {
    let [s0, s1] = cfg.node(head).succs.as_slice() else {
        return None;
    };
    let (e0, e1) = (cfg.edge(*s0), cfg.edge(*s1));
    let (Op::Assume { cond, branch: b0 }, Op::Assume { branch: b1, .. }) = (&e0.op, &e1.op) else {
        return None;
    };
    if b0 == b1 {
        return None;
    }
    let (stay, exit) = match (body[e0.dst.0 as usize], body[e1.dst.0 as usize]) {
        (true, false) => (*b0, *s1),
        (false, true) => (*b1, *s0),
        _ => return None,
    };
    let ExprKind::Binary(op, a, b) = &strip_casts(cond).kind else {
        return None;
    };
    let op = if stay {
        *op
    } else {
        op.negated().unwrap_or(*op)
    };
    Some((exit, op, a, b))
}

/// The counted loops of `func`: loops whose test compares a local counter with a constant or a
/// local the loop does not change, whose body moves the counter towards the bound by constant
/// steps and contains no nested loop, no call of a defined function and no join. Such a loop
/// terminates, so its exit is reached on every path that reaches it, with the threads created
/// and joined before it unchanged. With `allow_joins`, bodies may join threads (such loops
/// may block in a join, so their exit is not certain).
pub(crate) fn counted_loops(
    program: &Program,
    roles: &Roles,
    func: FuncId,
    allow_joins: bool,
) -> Vec<CountedLoop> {
    counted_loops_with(program, roles, func, allow_joins, false)
}

/// [`counted_loops`], with `allow_calls`: bodies may also call functions of the program. Such
/// a loop need not terminate (a call may not return), but every iteration that completes
/// moves the counter, and the counter and the bound (locals whose address is not taken) are
/// not the callees' to change: what holds after the loop on the paths that leave it still
/// holds (the create and join loops of [`join_loops`]).
pub(crate) fn counted_loops_with(
    program: &Program,
    roles: &Roles,
    func: FuncId,
    allow_joins: bool,
    allow_calls: bool,
) -> Vec<CountedLoop> {
    let mut out = Vec::new();
    let Some(cfg) = &program.function(func).body else {
        return out;
    };
    let mut addr_taken = FxHashSet::default();
    walk_cfg_addr_taken(cfg, &mut |l| {
        addr_taken.insert(l);
    });
    for (hi, head) in cfg.nodes.iter().enumerate() {
        if !head.loop_head || head.succs.len() != 2 {
            continue;
        }
        let h = NodeId(hi as u32);
        let body = cfg.loop_body(h);
        let Some((exit, op, a, b)) = continue_test(cfg, h, &body) else {
            continue;
        };
        let (counter, bound, op) = match (local_of(a), local_of(b)) {
            (Some(i), _)
                if b.as_int().is_some() || local_of(b).is_some() || global_of(b).is_some() =>
            {
                (i, b, op)
            }
            (None, Some(i)) if a.as_int().is_some() => (i, a, op.mirrored()),
            _ => continue,
        };
        let bound = match (strip_casts(bound).as_int(), local_of(bound)) {
            (Some(k), _) => Bound::Const(k),
            (None, Some(l)) => Bound::Local(l),
            // Checked last ([`never_written`] scans the program).
            _ => match global_of(bound) {
                Some(g) => Bound::Global(g),
                None => continue,
            },
        };
        let bound_local = match bound {
            Bound::Local(l) => Some(l),
            Bound::Const(_) | Bound::Global(_) => None,
        };
        // Direction the counter must move while the loop continues.
        let up = match op {
            BinOp::Lt | BinOp::Le | BinOp::Ne => true,
            BinOp::Gt | BinOp::Ge => false,
            _ => continue,
        };
        let mut ok = true;
        let mut steps: FxHashSet<i128> = FxHashSet::default();
        for e in &cfg.edges {
            if !body[e.src.0 as usize] {
                continue;
            }
            if e.dst != h && cfg.node(e.dst).loop_head && body[e.dst.0 as usize] {
                ok = false; // a nested loop
            }
            match &e.op {
                Op::Assign { lhs, rhs } => {
                    let Host::Var(Var::Local(l)) = lhs.host else {
                        continue;
                    };
                    if Some(l) == bound_local {
                        ok = false;
                    }
                    if l == counter && lhs.proj.is_empty() {
                        // i = i + c with c of the right sign.
                        let step = match &strip_casts(rhs).kind {
                            ExprKind::Binary(BinOp::Add, x, y) if local_of(x) == Some(counter) => {
                                strip_casts(y).as_int()
                            }
                            ExprKind::Binary(BinOp::Add, x, y) if local_of(y) == Some(counter) => {
                                strip_casts(x).as_int()
                            }
                            ExprKind::Binary(BinOp::Sub, x, y) if local_of(x) == Some(counter) => {
                                strip_casts(y).as_int().map(|c| -c)
                            }
                            _ => None,
                        };
                        match step {
                            Some(c) if (up && c > 0) || (!up && c < 0) => {
                                steps.insert(c);
                            }
                            _ => ok = false,
                        }
                    }
                }
                Op::Call { callee, dest, .. } => {
                    if let Some(l) = dest.as_ref().and_then(whole_local)
                        && (l == counter || Some(l) == bound_local)
                    {
                        ok = false;
                    }
                    match callee {
                        Callee::Direct(g) => {
                            // A function analysed through its body (a role other than
                            // an atomic section's replaces the body: a forwarding create
                            // wrapper is a create).
                            let defined = program.function(*g).body.is_some()
                                && matches!(roles.get(*g), None | Some(Role::AtomicFunction));
                            let join = matches!(roles.get(*g), Some(Role::ThreadJoin { .. }));
                            if (defined && !allow_calls) || (join && !allow_joins) {
                                ok = false;
                            }
                        }
                        Callee::Indirect(_) => ok &= allow_calls,
                    }
                }
                Op::Asm { .. } => ok = false,
                _ => {}
            }
        }
        // The counter and the bound must not be reachable through pointers.
        if addr_taken.contains(&counter) || bound_local.is_some_and(|b| addr_taken.contains(&b)) {
            ok = false;
        }
        // `!=` reaches its bound only by steps of one.
        if op == BinOp::Ne && steps != FxHashSet::from_iter([1]) {
            ok = false;
        }
        // A global bound holds its initial value (a constant, when it is one) if nothing
        // writes it.
        let bound = match bound {
            Bound::Global(g) if ok => {
                if !never_written(program, g) {
                    continue;
                }
                initial_int(program, g).map_or(Bound::Global(g), Bound::Const)
            }
            b => b,
        };
        if ok {
            let step = (steps.len() == 1)
                .then(|| steps.iter().copied().next())
                .flatten();
            out.push(CountedLoop {
                body,
                exit,
                counter,
                bound,
                op,
                step,
            });
        }
    }
    out
}

/// The global a (cast) load of a whole global variable reads.
fn global_of(e: &Expr) -> Option<crate::ir::GlobalId> {
    match &strip_casts(e).kind {
        ExprKind::Load(lv) if lv.proj.is_empty() => match lv.host {
            Host::Var(Var::Global(g)) => Some(g),
            _ => None,
        },
        _ => None,
    }
}

/// The initial value of the integer global `g`, when its initialiser is one integer constant
/// (zero when it has none).
fn initial_int(program: &Program, g: crate::ir::GlobalId) -> Option<i128> {
    let global = &program.globals[g.0 as usize];
    if !program.types.is_integer(global.ty) {
        return None;
    }
    match global.init.as_slice() {
        [] => Some(0),
        [item] if item.proj.is_empty() => match &item.value {
            crate::ir::InitValue::Expr(e) => strip_casts(e).as_int(),
            crate::ir::InitValue::Str(_) => None,
        },
        _ => None,
    }
}

/// Whether no statement of the program can change the global `g`: it is defined here (not
/// `extern`), not `volatile`, no statement assigns it (whole or in part) or receives a call's
/// result in it, its address is never taken (in code or in an initialiser) and the program has
/// no inline assembly. It then holds its initial value in every thread at every point.
pub(crate) fn never_written(program: &Program, g: crate::ir::GlobalId) -> bool {
    use crate::ir::visit::walk_expr;
    let global = &program.globals[g.0 as usize];
    if global.storage == crate::ir::Storage::Extern
        || program
            .types
            .quals(global.ty)
            .contains(crate::ir::types::Quals::VOLATILE)
    {
        return false;
    }
    let names_g = |lv: &Lval| matches!(lv.host, Host::Var(Var::Global(h)) if h == g);
    let mut taken = false;
    let mut note = |x: &Expr| {
        if let ExprKind::AddrOf(lv) = &x.kind
            && names_g(lv)
        {
            taken = true;
        }
    };
    for other in &program.globals {
        for item in &other.init {
            if let crate::ir::InitValue::Expr(e) = &item.value {
                walk_expr(e, &mut note);
            }
        }
    }
    for f in &program.functions {
        let Some(cfg) = &f.body else { continue };
        for e in &cfg.edges {
            match &e.op {
                Op::Assign { lhs, .. } if names_g(lhs) => return false,
                Op::Call { dest: Some(d), .. } if names_g(d) => return false,
                Op::Asm { .. } => return false,
                _ => {}
            }
            op_exprs(&e.op, &mut note);
        }
    }
    !taken
}

/// A join loop with the create loops it undoes: when control leaves the loop through `exit`,
/// every thread created at one of `creates` by this call of the function has been joined.
#[derive(Clone, Debug)]
pub(super) struct JoinAll {
    /// The exit edge of the join loop.
    pub exit: EdgeId,
    /// The create statements whose threads the loop joins (peeled copies included).
    pub creates: Vec<EdgeId>,
}

/// An element `a[i]` of a local array or of the array a local pointer points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slot {
    array: LocalId,
    index: LocalId,
}

/// `a + i` for a local pointer `a` and a local `i`.
fn slot_of_ptr(e: &Expr) -> Option<Slot> {
    match &strip_casts(e).kind {
        ExprKind::Binary(BinOp::PtrAdd, a, i) => Some(Slot {
            array: local_of(a)?,
            index: local_of(i)?,
        }),
        _ => None,
    }
}

/// The slot an lvalue designates: `a[i]` for a local array, `*(a + i)` for a local pointer.
fn slot_of_lval(lv: &Lval) -> Option<Slot> {
    match (&lv.host, lv.proj.as_slice()) {
        (Host::Var(Var::Local(a)), [Proj::Index(i)]) => Some(Slot {
            array: *a,
            index: local_of(i)?,
        }),
        (Host::Deref(p), []) => slot_of_ptr(p),
        _ => None,
    }
}

/// The slot a create's thread-id argument points to.
fn created_slot(e: &Expr) -> Option<Slot> {
    match &strip_casts(e).kind {
        ExprKind::AddrOf(lv) => slot_of_lval(lv),
        _ => slot_of_ptr(e),
    }
}

/// A field of a struct (struct, member index) holding a thread id.
type IdField = (CompId, u32);

/// Where a slot keeps its thread id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum IdAt {
    /// In the element: `a[i]` is a thread id.
    Element,
    /// In a field of the object the element points to (`a[i]->tid`).
    Pointed(IdField),
    /// In a field of the element (`a[i].tid`, `(a + i)->tid`).
    Member(IdField),
}

/// The element field an lvalue designates: `a[i].f` for a local array, `(a + i)->f` for a
/// local pointer.
fn member_slot(lv: &Lval) -> Option<(Slot, IdField)> {
    match (&lv.host, lv.proj.as_slice()) {
        (Host::Var(Var::Local(a)), [Proj::Index(i), Proj::Field { comp, index }]) => Some((
            Slot {
                array: *a,
                index: local_of(i)?,
            },
            (*comp, *index),
        )),
        (Host::Deref(p), [Proj::Field { comp, index }]) => Some((slot_of_ptr(p)?, (*comp, *index))),
        _ => None,
    }
}

/// The slot a join's thread-id argument reads: `a[i]`, or the id field of the object `a[i]`
/// points to (`a[i]->tid`).
fn joined_slot(e: &Expr) -> Option<(Slot, IdAt)> {
    let ExprKind::Load(lv) = &strip_casts(e).kind else {
        return None;
    };
    if let Some(s) = slot_of_lval(lv) {
        return Some((s, IdAt::Element));
    }
    if let Some((s, f)) = member_slot(lv) {
        return Some((s, IdAt::Member(f)));
    }
    match (&lv.host, lv.proj.as_slice()) {
        (Host::Deref(p), [Proj::Field { comp, index }]) => match &strip_casts(p).kind {
            ExprKind::Load(inner) => Some((slot_of_lval(inner)?, IdAt::Pointed((*comp, *index)))),
            _ => None,
        },
        _ => None,
    }
}

/// A create storing the id into a field of the object a local points to (`&t->tid`).
fn created_in_field(e: &Expr) -> Option<(LocalId, IdField)> {
    let ExprKind::AddrOf(lv) = &strip_casts(e).kind else {
        return None;
    };
    match (&lv.host, lv.proj.as_slice()) {
        (Host::Deref(p), [Proj::Field { comp, index }]) => Some((local_of(p)?, (*comp, *index))),
        _ => None,
    }
}

/// The creates of `cfg` that store the id into a field of a fresh object `t` points to, where
/// each iteration first stores `t` into a slot `a[i]` (`t = malloc(..); a[i] = t;
/// pthread_create(&t->tid, ..)`): per create, its slot and field, and per slot store, its
/// array. Every path to such a create takes a store of `t` (same peeled copy), and none
/// writes `t`, the index or the array between the store and the create.
fn carried_creates(
    cfg: &Cfg,
    roles: &Roles,
) -> (
    FxHashMap<EdgeId, (Slot, IdField)>,
    FxHashMap<EdgeId, LocalId>,
) {
    let mut creates = FxHashMap::default();
    let mut stores = FxHashMap::default();
    for (ci, ce) in cfg.edges.iter().enumerate() {
        let (Op::Call { args, .. }, Some(Role::ThreadCreate { thread_id, .. })) =
            (&ce.op, roles.of_call(&ce.op))
        else {
            continue;
        };
        let Some((t, field)) = args.get(*thread_id).and_then(created_in_field) else {
            continue;
        };
        if !super::id_field::fresh_allocations(cfg, roles, t) {
            continue;
        }
        // A new object for every create: no path from one create of `t` to the next (or to
        // itself) without a new value of `t`.
        let t_writes: Vec<EdgeId> = cfg
            .edges
            .iter()
            .enumerate()
            .filter(|(_, e)| mentioned_writes(&e.op).contains(&t))
            .map(|(i, _)| EdgeId(i as u32))
            .collect();
        let creates_of_t: Vec<&crate::ir::Edge> = cfg
            .edges
            .iter()
            .filter(|e| match (&e.op, roles.of_call(&e.op)) {
                (Op::Call { args, .. }, Some(Role::ThreadCreate { thread_id, .. })) => args
                    .get(*thread_id)
                    .and_then(created_in_field)
                    .is_some_and(|(x, _)| x == t),
                _ => false,
            })
            .collect();
        let reused = creates_of_t.iter().any(|a| {
            creates_of_t
                .iter()
                .any(|b| cfg.reaches(a.dst, b.src, &t_writes))
        });
        if reused {
            continue;
        }
        let all_stores: Vec<(EdgeId, Slot)> = cfg
            .edges
            .iter()
            .enumerate()
            .filter_map(|(i, e)| match &e.op {
                Op::Assign { lhs, rhs } if local_of(rhs) == Some(t) => {
                    slot_of_lval(lhs).map(|s| (EdgeId(i as u32), s))
                }
                _ => None,
            })
            .collect();
        let [(store, slot)] = all_stores
            .iter()
            .filter(|(s, _)| cfg.edge(*s).peel == ce.peel)
            .copied()
            .collect::<Vec<_>>()[..]
        else {
            continue;
        };
        let store_edges: Vec<EdgeId> = all_stores.iter().map(|(s, _)| *s).collect();
        if slot.array == t || slot.index == t || cfg.reaches(cfg.entry, ce.src, &store_edges) {
            continue;
        }
        // Nothing between the store and the create changes t, the index or the array.
        let create = EdgeId(ci as u32);
        let mut seen = vec![false; cfg.nodes.len()];
        let mut stack = vec![cfg.edge(store).dst];
        let mut clean = true;
        while let Some(n) = stack.pop() {
            if std::mem::replace(&mut seen[n.0 as usize], true) {
                continue;
            }
            for &e in &cfg.node(n).succs {
                if e == create || store_edges.contains(&e) {
                    continue;
                }
                let m = mentioned_writes(&cfg.edge(e).op);
                if m.contains(&t) || m.contains(&slot.index) || m.contains(&slot.array) {
                    clean = false;
                }
                stack.push(cfg.edge(e).dst);
            }
        }
        if clean {
            creates.insert(create, (slot, field));
            stores.insert(store, slot.array);
        }
    }
    (creates, stores)
}

/// The locals an instruction writes (wholly or in part).
fn mentioned_writes(op: &Op) -> FxHashSet<LocalId> {
    let mut out = FxHashSet::default();
    crate::ir::visit::written_locals(op, &mut |l| {
        out.insert(l);
    });
    out
}

/// The locals an instruction mentions (reads, writes or takes the address of).
fn mentioned(op: &Op) -> FxHashSet<LocalId> {
    let mut out = FxHashSet::default();
    let mut host = |lv: &Lval| {
        if let Host::Var(Var::Local(l)) = lv.host {
            out.insert(l);
        }
    };
    match op {
        Op::Assign { lhs, .. } => host(lhs),
        Op::Call { dest: Some(d), .. } => host(d),
        Op::Asm { outputs, .. } => outputs.iter().for_each(&mut host),
        _ => {}
    }
    op_exprs(op, &mut |y| {
        if let ExprKind::Load(lv) | ExprKind::AddrOf(lv) = &y.kind {
            host(lv);
        }
    });
    out
}

/// Whether some path from `from` reaches an edge satisfying `target`, or the end of the
/// function, without taking `avoid`.
fn reaches(cfg: &Cfg, from: NodeId, avoid: EdgeId, target: &dyn Fn(EdgeId) -> bool) -> bool {
    let mut seen = vec![false; cfg.nodes.len()];
    let mut stack = vec![from];
    seen[from.0 as usize] = true;
    while let Some(n) = stack.pop() {
        let node = cfg.node(n);
        if node.succs.is_empty() {
            return true;
        }
        for &e in &node.succs {
            if e == avoid {
                continue;
            }
            if target(e) {
                return true;
            }
            let d = cfg.edge(e).dst;
            if !seen[d.0 as usize] {
                seen[d.0 as usize] = true;
                stack.push(d);
            }
        }
    }
    false
}

/// The constant `l` holds whenever control enters the loop headed by `head` (with `body`)
/// from outside: every definition of `l` reaching an entry edge is `l = k` for the same `k`.
/// Peeled copies of loop bodies only step their counters and are looked through. `None`
/// when some definition is not that constant or `l` may be undefined.
fn entry_value(cfg: &Cfg, l: LocalId, head: NodeId, body: &[bool]) -> Option<i128> {
    let mut value = None;
    let mut seen = vec![false; cfg.edges.len()];
    let mut stack: Vec<EdgeId> = cfg
        .node(head)
        .preds
        .iter()
        .copied()
        .filter(|e| !body_has(body, cfg.edge(*e).src))
        .collect();
    while let Some(id) = stack.pop() {
        if std::mem::replace(&mut seen[id.0 as usize], true) {
            continue;
        }
        let e = cfg.edge(id);
        let writes = match &e.op {
            Op::Assign { lhs, .. } => whole_local(lhs) == Some(l),
            Op::Call { dest: Some(d), .. } => whole_local(d) == Some(l),
            Op::Asm { .. } => mentioned(&e.op).contains(&l),
            _ => false,
        };
        if writes && e.peel == 0 {
            let Op::Assign { rhs, .. } = &e.op else {
                return None;
            };
            let k = strip_casts(rhs).as_int()?;
            if value.is_some_and(|v| v != k) {
                return None;
            }
            value = Some(k);
            continue;
        }
        let preds = &cfg.node(e.src).preds;
        if preds.is_empty() {
            return None; // reaches the function entry undefined
        }
        stack.extend(preds.iter().copied());
    }
    value
}

/// The join loops of `func` (see the module documentation). A loop qualifies when
/// - it is counted, counts up by one and leaves only through its test, and on every iteration
///   joins `a[j]` for its counter `j`;
/// - every create statement storing into `a` stores into `a[i]` for the counter `i` of a
///   counted loop with the same bound and comparison, starting at or after `j`'s start (peeled
///   copies of it included), so the created slots are among the joined ones;
/// - `a` is used for nothing else (a pointer `a` may be set once, tested and freed), and no
///   path from
///   a create reaches the end of the function, a write of `a`, of the bound or another create
///   loop run without leaving the join loop first.
pub(super) fn join_loops(program: &Program, roles: &Roles, func: FuncId) -> Vec<JoinAll> {
    let mut out = Vec::new();
    let Some(cfg) = &program.function(func).body else {
        return out;
    };
    let loops = counted_loops_with(program, roles, func, true, true);
    if loops.is_empty() {
        return out;
    }
    // Classify every edge that mentions a local: creates and joins through slots, whole
    // assignments and frees of pointers; anything else disqualifies the local as an array.
    let (carried, carrier_stores) = carried_creates(cfg, roles);
    let mut creates: FxHashMap<LocalId, Vec<(EdgeId, LocalId, IdAt)>> = FxHashMap::default();
    let mut joins: FxHashMap<LocalId, Vec<(EdgeId, LocalId, IdAt)>> = FxHashMap::default();
    // Frees of the objects array elements point to (`free(a[i])`), by array.
    let mut element_frees: FxHashMap<LocalId, Vec<(EdgeId, LocalId)>> = FxHashMap::default();
    let mut sets: FxHashMap<LocalId, Vec<EdgeId>> = FxHashMap::default();
    let mut bad: FxHashSet<LocalId> = FxHashSet::default();
    // Arrays whose elements keep the ids in a field, and the frees of whole arrays.
    let mut member_arrays: FxHashSet<LocalId> = FxHashSet::default();
    let mut array_frees: FxHashMap<LocalId, Vec<EdgeId>> = FxHashMap::default();
    let mut addr_taken = FxHashSet::default();
    walk_cfg_addr_taken(cfg, &mut |l| {
        addr_taken.insert(l);
    });
    for (i, e) in cfg.edges.iter().enumerate() {
        let id = EdgeId(i as u32);
        let mut allowed: Option<LocalId> = None;
        if let Op::Call { args, dest, .. } = &e.op {
            if let Some(d) = dest.as_ref().and_then(whole_local) {
                sets.entry(d).or_default().push(id);
            }
            // The array may appear only in the handle argument.
            let only_in = |a: LocalId, k: usize| {
                !args
                    .iter()
                    .enumerate()
                    .any(|(x, arg)| x != k && expr_mentions_local(arg, a))
                    && dest.as_ref().is_none_or(|d| !lval_mentions_local(d, a))
            };
            match roles.of_call(&e.op).cloned() {
                Some(Role::ThreadCreate { thread_id, .. }) => {
                    let member = args
                        .get(thread_id)
                        .and_then(|a| match &strip_casts(a).kind {
                            ExprKind::AddrOf(lv) => member_slot(lv),
                            _ => None,
                        });
                    if let Some((s, field)) = carried.get(&id) {
                        creates.entry(s.array).or_default().push((
                            id,
                            s.index,
                            IdAt::Pointed(*field),
                        ));
                    } else if let Some(s) = args.get(thread_id).and_then(created_slot)
                        && only_in(s.array, thread_id)
                    {
                        creates
                            .entry(s.array)
                            .or_default()
                            .push((id, s.index, IdAt::Element));
                        allowed = Some(s.array);
                    } else if let Some((s, field)) = member {
                        // Other uses of the array are checked through the field
                        // (`id_field::written_only_by`).
                        creates.entry(s.array).or_default().push((
                            id,
                            s.index,
                            IdAt::Member(field),
                        ));
                        member_arrays.insert(s.array);
                    }
                }
                Some(Role::ThreadJoin { thread_id }) => {
                    if let Some((s, field)) = args.get(thread_id).and_then(joined_slot)
                        && only_in(s.array, thread_id)
                    {
                        joins.entry(s.array).or_default().push((id, s.index, field));
                        allowed = Some(s.array);
                    }
                }
                Some(Role::Free { ptr }) => {
                    if let Some(a) = args.get(ptr).and_then(local_of) {
                        array_frees.entry(a).or_default().push(id);
                    }
                    allowed = args
                        .get(ptr)
                        .and_then(local_of)
                        .filter(|a| only_in(*a, ptr));
                    // `free(a[i])` frees an element's object, leaving the array as it is.
                    if allowed.is_none()
                        && let Some(ExprKind::Load(lv)) =
                            args.get(ptr).map(|a| &strip_casts(a).kind)
                        && let Some(s) = slot_of_lval(lv)
                        && only_in(s.array, ptr)
                    {
                        element_frees
                            .entry(s.array)
                            .or_default()
                            .push((id, s.index));
                        allowed = Some(s.array);
                    }
                }
                _ => {}
            }
        }
        if let Op::Assign { lhs, rhs } = &e.op
            && let Some(a) = whole_local(lhs)
        {
            sets.entry(a).or_default().push(id);
            if !expr_mentions_local(rhs, a) {
                allowed = Some(a);
            }
        }
        if let Some(a) = carrier_stores.get(&id) {
            allowed = Some(*a);
        }
        // A branch only reads (`if (!t) return;`): it neither changes nor leaks the array.
        if matches!(e.op, Op::Assume { .. }) {
            continue;
        }
        for l in mentioned(&e.op) {
            if Some(l) != allowed {
                bad.insert(l);
            }
        }
    }
    for j_loop in &loops {
        if j_loop.step != Some(1) {
            continue;
        }
        // Leaves only through its test.
        let leaves_elsewhere = cfg.edges.iter().enumerate().any(|(i, e)| {
            body_has(&j_loop.body, e.src)
                && !body_has(&j_loop.body, e.dst)
                && i != j_loop.exit.0 as usize
        });
        if leaves_elsewhere {
            continue;
        }
        let in_body: Vec<(LocalId, EdgeId, IdAt)> = joins
            .iter()
            .flat_map(|(a, v)| v.iter().map(move |(e, idx, f)| (*a, *e, *idx, *f)))
            .filter(|(_, e, idx, _)| {
                body_has(&j_loop.body, cfg.edge(*e).src) && *idx == j_loop.counter
            })
            .map(|(a, e, _, f)| (a, e, f))
            .collect();
        let [(array, join_edge, field)] = in_body.as_slice() else {
            continue;
        };
        let (array, join_edge, field) = (*array, *join_edge, *field);
        // Other uses of an array whose elements keep the ids in a field are allowed when
        // nothing but the creates writes that field (checked below) and the array local is
        // never reached through its address.
        let member = matches!(field, IdAt::Member(_));
        let misused = if member {
            addr_taken.contains(&array)
        } else {
            bad.contains(&array) || member_arrays.contains(&array)
        };
        if misused || joins.get(&array).is_some_and(|v| v.len() != 1) {
            continue;
        }
        // The join runs on every iteration: without it, the head is unreachable again (the
        // loop leaves only through its test, so the search stays in its body).
        let head = cfg.edge(j_loop.exit).src;
        let stay = cfg
            .node(head)
            .succs
            .iter()
            .copied()
            .find(|e| *e != j_loop.exit);
        let Some(stay) = stay else { continue };
        if cfg.reaches(cfg.edge(stay).dst, head, &[join_edge]) {
            continue;
        }
        let Some(j_start) = entry_value(cfg, j_loop.counter, head, &j_loop.body) else {
            continue;
        };
        if let Bound::Local(b) = j_loop.bound
            && sets.get(&b).is_some_and(|v| v.len() > 1)
        {
            continue;
        }
        // Every create into the array comes from a matching create loop.
        let Some(array_creates) = creates.get(&array) else {
            continue;
        };
        let mut create_edges = Vec::new();
        let mut create_exits = Vec::new();
        let mut ok = true;
        for &(ce, idx, cfield) in array_creates {
            let edge = cfg.edge(ce);
            // The join reads the ids where the creates store them.
            if cfield != field {
                ok = false;
                break;
            }
            // Peeled copies stand for their original create statement.
            let orig = if edge.peel == 0 {
                Some((ce, idx))
            } else {
                array_creates
                    .iter()
                    .copied()
                    .find(|(o, oi, _)| {
                        let oe = cfg.edge(*o);
                        oe.peel == 0 && oe.loc == edge.loc && oe.op == edge.op && *oi == idx
                    })
                    .map(|(o, oi, _)| (o, oi))
            };
            let Some((orig, idx)) = orig else {
                ok = false;
                break;
            };
            let c_loop = loops.iter().find(|l| {
                l.counter == idx && body_has(&l.body, cfg.edge(orig).src) && l.exit != j_loop.exit
            });
            let Some(c_loop) = c_loop else {
                ok = false;
                break;
            };
            let c_head = cfg.edge(c_loop.exit).src;
            let starts_after = entry_value(cfg, c_loop.counter, c_head, &c_loop.body)
                .is_some_and(|s| s >= j_start);
            if c_loop.bound != j_loop.bound || c_loop.op != j_loop.op || !starts_after {
                ok = false;
                break;
            }
            create_edges.push(ce);
            create_exits.push(cfg.edge(c_loop.exit).dst);
        }
        if !ok {
            continue;
        }
        // Ids kept in the elements' field: nothing else writes the field, and the array is
        // freed only once the join loop is over.
        if let IdAt::Member((comp, index)) = field {
            let creates: Vec<(FuncId, EdgeId)> = create_edges.iter().map(|e| (func, *e)).collect();
            let frees: Vec<(FuncId, EdgeId)> = array_frees
                .get(&array)
                .into_iter()
                .flatten()
                .filter(|e| {
                    let src = cfg.edge(**e).src;
                    create_edges
                        .iter()
                        .all(|c| !cfg.reaches(cfg.edge(*c).dst, src, &[j_loop.exit]))
                })
                .map(|e| (func, *e))
                .collect();
            if !super::id_field::written_only_by(program, roles, comp, index, &creates, &frees) {
                continue;
            }
        }
        // Ids kept in the objects' fields: nothing else writes the field, and the objects
        // are freed only through the array.
        if let IdAt::Pointed((comp, index)) = field {
            let creates: Vec<(FuncId, EdgeId)> = create_edges.iter().map(|e| (func, *e)).collect();
            // Objects are freed after their join: in the join loop after the join of the
            // current element, or once the join loop is over.
            let frees: Vec<(FuncId, EdgeId)> = element_frees
                .get(&array)
                .into_iter()
                .flatten()
                .filter(|(e, idx)| {
                    let src = cfg.edge(*e).src;
                    let after_join = body_has(&j_loop.body, src)
                        && *idx == j_loop.counter
                        && !cfg.reaches(head, src, &[join_edge]);
                    let after_loop = create_edges
                        .iter()
                        .all(|c| !cfg.reaches(cfg.edge(*c).dst, src, &[j_loop.exit]));
                    after_join || after_loop
                })
                .map(|(e, _)| (func, *e))
                .collect();
            if !super::id_field::written_only_by(program, roles, comp, index, &creates, &frees) {
                continue;
            }
        }
        // No path from a create (or the end of a create loop) to the end of the function, a
        // new value of the array or bound, or another create without the join loop's exit.
        let bound_sets: Vec<EdgeId> = match j_loop.bound {
            Bound::Local(b) => sets.get(&b).cloned().unwrap_or_default(),
            Bound::Const(_) | Bound::Global(_) => Vec::new(),
        };
        let array_sets = sets.get(&array).cloned().unwrap_or_default();
        let escapes = |from: NodeId, with_creates: bool| {
            reaches(cfg, from, j_loop.exit, &|e| {
                array_sets.contains(&e)
                    || bound_sets.contains(&e)
                    || (with_creates && create_edges.contains(&e))
            })
        };
        if create_edges
            .iter()
            .any(|e| escapes(cfg.edge(*e).dst, false))
            || create_exits.iter().any(|n| escapes(*n, true))
        {
            continue;
        }
        create_edges.sort();
        create_edges.dedup();
        out.push(JoinAll {
            exit: j_loop.exit,
            creates: create_edges,
        });
    }
    out
}

fn body_has(body: &[bool], n: NodeId) -> bool {
    body.get(n.0 as usize).copied().unwrap_or(false)
}
