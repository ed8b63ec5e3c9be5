//! Thread-private allocations: the "one work item per thread" pattern
//!
//! ```c
//! for (...) { struct job *j = malloc(sizeof *j); j->x = ...; pthread_create(&t, 0, work, j); }
//! void *work(void *arg) { struct job *j = arg; use(j->x); free(j); }
//! ```
//!
//! Each object of such an allocation site is touched by the creating code between the
//! allocation and the create statement of the same iteration, then only by the one thread
//! instance it was passed to. Accesses to these objects never race: two thread instances have
//! different objects, and the creator's accesses come before the creation of the instance
//! owning the object (and touch none of the earlier instances' objects).
//!
//! The rule is syntactic, so it does not depend on the precision of points-to sets: the pointer
//! must never be stored, passed to another function or used after the create statement in the
//! creator, and in the thread's entry function the parameter (or one local copy of it) may
//! only be dereferenced, tested or freed. Peeled copies of the loop (same source location) are
//! allocation/create pairs of their own.
//!
//! Relation to the value backend's publication analysis (`backend::value::publication`): that
//! analysis covers the creator's side flow-sensitively and more generally (any object a thread
//! has not yet stored where others can read it, a thread creation being an ordered
//! publication), but not the created thread's side: after the create the object is published
//! to that thread, and only this rule shows that no *other* instance ever reaches it. This
//! rule stays syntactic so it also serves the syntactic backend.

use crate::ir::visit::{
    expr_mentions_local, local_of, lval_mentions_local, op_exprs, strip_casts, whole_local,
};
use crate::ir::{
    Cfg, EdgeId, Expr, ExprKind, FuncId, Host, LocalId, Lval, NodeId, Op, Program, Var,
};
use crate::model::{Role, Roles};
use crate::threads::ThreadGraph;
use rustc_hash::{FxHashMap, FxHashSet};

/// The allocation statements (function, edge) whose objects are private to one thread each.
pub fn private_allocations(
    program: &Program,
    roles: &Roles,
    graph: &ThreadGraph,
) -> FxHashSet<(FuncId, EdgeId)> {
    let mut out = FxHashSet::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        let mut taken = FxHashSet::default();
        crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
            taken.insert(l);
        });
        // Allocations into a plain local, by local: the allocation call itself, or the copy
        // `t = (T *)tmp` of a temporary that only receives the allocation. Each entry is
        // (defining edge, allocation edge).
        let mut direct: FxHashMap<LocalId, Vec<EdgeId>> = FxHashMap::default();
        for (i, e) in cfg.edges.iter().enumerate() {
            if let Op::Call { dest: Some(d), .. } = &e.op
                && matches!(roles.of_call(&e.op), Some(Role::Alloc))
                && let Some(l) = whole_local(d)
            {
                direct.entry(l).or_default().push(EdgeId(i as u32));
            }
        }
        let mut allocs: FxHashMap<LocalId, Vec<(EdgeId, EdgeId)>> = FxHashMap::default();
        for (tmp, defs) in &direct {
            // Uses of `tmp`: a single copy per allocation copy, into one local (`None`: a use
            // of another kind).
            let uses: Vec<Option<(EdgeId, LocalId)>> = cfg
                .edges
                .iter()
                .enumerate()
                .filter(|(_, e)| mentions(&e.op, *tmp) && !writes_local(&e.op, *tmp))
                .map(|(i, e)| match &e.op {
                    Op::Assign { lhs, rhs } if local_of(rhs) == Some(*tmp) => {
                        whole_local(lhs).map(|t| (EdgeId(i as u32), t))
                    }
                    _ => None,
                })
                .collect();
            let copies: Option<Vec<(EdgeId, LocalId)>> = uses.into_iter().collect();
            let uses = copies.unwrap_or_default();
            let copies_only = !uses.is_empty()
                && uses.iter().all(|(_, t)| *t == uses[0].1)
                && defs.len() == uses.len();
            if copies_only {
                // Pair each copy with the allocation of the same peeled copy.
                let mut pairs = Vec::new();
                for (c, _) in &uses {
                    let peel = cfg.edge(*c).peel;
                    if let Some(a) = defs.iter().find(|a| cfg.edge(**a).peel == peel) {
                        pairs.push((*c, *a));
                    }
                }
                if pairs.len() == uses.len() && !taken.contains(tmp) {
                    allocs.entry(uses[0].1).or_default().extend(pairs);
                }
            } else {
                allocs
                    .entry(*tmp)
                    .or_default()
                    .extend(defs.iter().map(|a| (*a, *a)));
            }
        }
        for (t, def_pairs) in allocs {
            if taken.contains(&t) {
                continue;
            }
            let alloc_edges: Vec<EdgeId> = def_pairs.iter().map(|(d, _)| *d).collect();
            // Every write of `t` is one of these allocations.
            let other_write =
                cfg.edges.iter().enumerate().any(|(i, e)| {
                    writes_local(&e.op, t) && !alloc_edges.contains(&EdgeId(i as u32))
                });
            if other_write {
                continue;
            }
            // Creates passing `t`, each paired with the allocation of the same copy.
            let creates: Vec<EdgeId> = cfg
                .edges
                .iter()
                .enumerate()
                .filter(|(_, e)| create_arg_local(roles, &e.op) == Some(t))
                .map(|(i, _)| EdgeId(i as u32))
                .collect();
            if creates.is_empty() {
                continue;
            }
            let mut pairs = Vec::new();
            for a in &alloc_edges {
                let peel = cfg.edge(*a).peel;
                let same: Vec<EdgeId> = creates
                    .iter()
                    .copied()
                    .filter(|c| cfg.edge(*c).peel == peel)
                    .collect();
                let [s] = same.as_slice() else {
                    pairs.clear();
                    break;
                };
                pairs.push((*a, *s));
            }
            // Every create is paired, and none runs twice for one allocation.
            let paired_all = creates.iter().all(|c| pairs.iter().any(|(_, s)| s == c));
            let once = pairs
                .iter()
                .all(|(a, s)| !cfg.reaches(cfg.edge(*s).dst, cfg.edge(*s).src, &[*a]));
            if pairs.len() != alloc_edges.len() || !paired_all || !once {
                continue;
            }
            // Uses of `t` other than the creates: dereferences or tests between an allocation
            // and its create statement.
            let ok = cfg.edges.iter().enumerate().all(|(i, e)| {
                let id = EdgeId(i as u32);
                if creates.contains(&id) {
                    return create_passes_only_arg(roles, &e.op, t);
                }
                !mentions(&e.op, t)
                    || (!reads_local_outside_deref(&e.op, t)
                        && (alloc_edges.contains(&id)
                            || pairs.iter().any(|(a, s)| between(cfg, *a, *s, e.src))))
            });
            if !ok {
                continue;
            }
            // The threads of the creates keep their parameter to themselves.
            let entries_ok = creates.iter().all(|c| {
                graph
                    .created_at(crate::context::CallSite { func, edge: *c })
                    .all(|th| param_stays_private(program, roles, th.entry))
            });
            if entries_ok {
                out.extend(def_pairs.iter().map(|(_, a)| (func, *a)));
            }
        }
    }
    out
}

fn writes_local(op: &Op, l: LocalId) -> bool {
    match op {
        Op::Assign { lhs, .. } => whole_local(lhs) == Some(l) || host_is(lhs, l),
        Op::Call { dest: Some(d), .. } => whole_local(d) == Some(l) || host_is(d, l),
        Op::Asm { outputs, .. } => outputs.iter().any(|o| host_is(o, l)),
        _ => false,
    }
}

fn host_is(lv: &Lval, l: LocalId) -> bool {
    lv.host == Host::Var(Var::Local(l))
}

/// A create's arguments and the position of its thread argument.
fn create_args<'o>(roles: &Roles, op: &'o Op) -> Option<(&'o [Expr], usize)> {
    match (op, roles.of_call(op)) {
        (Op::Call { args, .. }, Some(Role::ThreadCreate { arg, .. })) => Some((args, *arg)),
        _ => None,
    }
}

/// The local passed as a create's thread argument.
fn create_arg_local(roles: &Roles, op: &Op) -> Option<LocalId> {
    let (args, arg) = create_args(roles, op)?;
    local_of(args.get(arg)?)
}

/// Whether a create mentions `t` only as its thread argument.
fn create_passes_only_arg(roles: &Roles, op: &Op, t: LocalId) -> bool {
    let (Some((args, arg)), Op::Call { dest, .. }) = (create_args(roles, op), op) else {
        return false;
    };
    dest.as_ref().is_none_or(|d| !lval_mentions_local(d, t))
        && args
            .iter()
            .enumerate()
            .all(|(i, a)| i == arg || !expr_mentions_local(a, t))
}

fn mentions(op: &Op, t: LocalId) -> bool {
    let mut found = writes_local(op, t);
    op_exprs(op, &mut |x| {
        if let ExprKind::Load(lv) | ExprKind::AddrOf(lv) = &x.kind
            && host_is(lv, t)
        {
            found = true;
        }
    });
    found
}

/// Whether `op` reads the value of `t` other than as the pointer of a dereference (`*t`,
/// `t->f`, `t[k]`) or in a branch condition.
fn reads_local_outside_deref(op: &Op, t: LocalId) -> bool {
    if matches!(op, Op::Assume { .. }) {
        return false;
    }
    // Count loads of `t`, and those that are a dereference's pointer.
    let mut loads = 0usize;
    let mut derefs = 0usize;
    let mut count_deref = |lv: &Lval| {
        if let Host::Deref(p) = &lv.host {
            let base = match &strip_casts(p).kind {
                ExprKind::Binary(crate::ir::BinOp::PtrAdd, a, _) => strip_casts(a),
                _ => strip_casts(p),
            };
            if let ExprKind::Load(x) = &base.kind
                && host_is(x, t)
                && x.proj.is_empty()
            {
                derefs += 1;
            }
        }
    };
    match op {
        Op::Assign { lhs, .. } => count_deref(lhs),
        Op::Call { dest: Some(d), .. } => count_deref(d),
        _ => {}
    }
    let mut escapes = false;
    op_exprs(op, &mut |x| match &x.kind {
        ExprKind::Load(lv) if host_is(lv, t) => loads += 1,
        ExprKind::Load(lv) => count_deref(lv),
        // `&t` or `&t->f`: an address into the object (or of the pointer) leaves.
        ExprKind::AddrOf(lv) if lval_mentions_local(lv, t) => escapes = true,
        _ => {}
    });
    if escapes {
        return true;
    }
    loads > derefs
}

/// Whether node `n` lies between allocation `a` and create `s` of one iteration: reachable from
/// `a`'s target without taking `a` or `s`, and reaching `s`'s source without taking `a`.
fn between(cfg: &Cfg, a: EdgeId, s: EdgeId, n: NodeId) -> bool {
    cfg.reaches(cfg.edge(a).dst, n, &[a, s]) && cfg.reaches(n, cfg.edge(s).src, &[a])
}

/// Whether the entry function's first parameter (and at most one local copy of it) is only
/// dereferenced, tested or freed.
fn param_stays_private(program: &Program, roles: &Roles, entry: FuncId) -> bool {
    let f = program.function(entry);
    let Some(cfg) = &f.body else { return false };
    let Some(p) = f
        .locals
        .iter()
        .position(|l| l.kind == crate::ir::LocalKind::Param)
        .map(|i| LocalId(i as u32))
    else {
        return true; // no parameter: the object is unreachable from the thread
    };
    let mut taken = FxHashSet::default();
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
        taken.insert(l);
    });
    if taken.contains(&p) {
        return false;
    }
    // One local copy `q = p` (casts allowed), written only there.
    let mut copies: Vec<LocalId> = Vec::new();
    for e in &cfg.edges {
        if let Op::Assign { lhs, rhs } = &e.op
            && local_of(rhs) == Some(p)
            && let Some(q) = whole_local(lhs)
        {
            copies.push(q);
        }
    }
    let mut vars = vec![p];
    for q in copies {
        let writes = cfg.edges.iter().filter(|e| writes_local(&e.op, q)).count();
        if writes != 1 || taken.contains(&q) {
            return false;
        }
        vars.push(q);
    }
    cfg.edges.iter().all(|e| {
        vars.iter().all(|v| {
            if !mentions(&e.op, *v) {
                return true;
            }
            // The copy itself.
            if let Op::Assign { lhs, rhs } = &e.op
                && vars.contains(&whole_local(lhs).unwrap_or(LocalId(u32::MAX)))
                && matches!(&strip_casts(rhs).kind, ExprKind::Load(s) if host_is(s, p))
            {
                return true;
            }
            if writes_local(&e.op, *v) {
                return false;
            }
            // free(v).
            if let Op::Call {
                args, dest: None, ..
            } = &e.op
                && let Some(Role::Free { ptr }) = roles.of_call(&e.op)
                && args.len() > *ptr
                && args.iter().enumerate().all(|(i, a)| {
                    if i == *ptr {
                        matches!(&strip_casts(a).kind, ExprKind::Load(s) if host_is(s, *v))
                    } else {
                        !expr_mentions_local(a, *v)
                    }
                })
            {
                return true;
            }
            !reads_local_outside_deref(&e.op, *v)
        })
    })
}
