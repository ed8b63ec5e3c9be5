//! Lock-guard flags: global variables tested right before a lock or unlock call
//! (`if (cfg.locking) pthread_mutex_lock(&m); ... if (cfg.locking) pthread_mutex_unlock(&m);`).
//!
//! The lock-order analysis ([`super::held`]) remembers, per class of paths, the outcome of the
//! last test of each such flag and drops paths whose later test of it disagrees, until the
//! thread writes the flag (an assignment to the global). Other threads' writes are not
//! considered: a program that flips such a flag between a lock and its unlock is racy and
//! leaves a lock held, and reporting its deadlocks would rest on that race alone (L2D2's
//! double-locking heuristic makes the same choice: inconsistent lock paths are infeasible,
//! `notes/deadlock.md` §1). Only flags guarding a lock call are tracked, so other tests do not
//! multiply the facts.

use crate::ir::{
    BinOp, Callee, ExprKind, FuncId, GlobalId, Host, Lval, Op, Program, Proj, UnOp, Var,
};
use crate::model::{Role, Roles};
use rustc_hash::FxHashSet;

/// A flag: a scalar at a constant byte offset of a global.
pub type Flag = (GlobalId, u64);

/// Statements followed from a branch when looking for the lock call it guards.
const LOOKAHEAD: usize = 4;

/// The flag and the truth value the condition `cond` taking `branch` says it has (`x`, `!x`,
/// `x == 0`, `x != 0` with `x` a global flag), if it is such a test.
pub fn flag_test(program: &Program, cond: &crate::ir::Expr, branch: bool) -> Option<(Flag, bool)> {
    let e = crate::ir::visit::strip_casts(cond);
    match &e.kind {
        ExprKind::Load(lv) => flag_of(program, lv).map(|f| (f, branch)),
        ExprKind::Unary(UnOp::LogNot, inner) => flag_test(program, inner, !branch),
        ExprKind::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b) => {
            let zero = |x: &crate::ir::Expr| crate::ir::visit::strip_casts(x).as_int() == Some(0);
            let x = if zero(b) {
                a
            } else if zero(a) {
                b
            } else {
                return None;
            };
            let ExprKind::Load(lv) = &crate::ir::visit::strip_casts(x).kind else {
                return None;
            };
            let truth = if *op == BinOp::Ne { branch } else { !branch };
            flag_of(program, lv).map(|f| (f, truth))
        }
        _ => None,
    }
}

/// The bytes `[lo, hi)` of its global a write of `lv` changes, when its offset is constant.
pub fn written_range(program: &Program, lv: &Lval) -> Option<(u64, u64)> {
    let (_, off) = flag_of(program, lv)?;
    let size = program.types.size_of(lv.ty)?;
    Some((off, off.saturating_add(size.max(1))))
}

/// The flag an lvalue names: a global with field projections and constant indices only.
fn flag_of(program: &Program, lv: &Lval) -> Option<Flag> {
    let Host::Var(Var::Global(g)) = lv.host else {
        return None;
    };
    let mut off = 0u64;
    let mut ty = program.global(g).ty;
    for p in &lv.proj {
        match p {
            Proj::Field { comp, index } => {
                let f = program.types.comp(*comp).fields.get(*index as usize)?;
                if f.bit_field.is_some() {
                    return None;
                }
                off = off.checked_add(f.offset)?;
                ty = f.ty;
            }
            Proj::Index(i) => {
                let i = u64::try_from(crate::ir::visit::strip_casts(i).as_int()?).ok()?;
                let crate::ir::types::TypeKind::Array { elem, .. } = program.types.kind(ty) else {
                    return None;
                };
                let size = program.types.size_of(*elem)?;
                off = off.checked_add(i.checked_mul(size)?)?;
                ty = *elem;
            }
        }
    }
    Some((g, off))
}

/// The flags whose test guards a lock or unlock call: a branch on the flag reaches, within a
/// few statements of straight-line code, a lock or unlock call or a call of a function that
/// makes one.
pub fn guard_flags(program: &Program, roles: &Roles) -> FxHashSet<Flag> {
    // Functions that lock or unlock directly.
    let locking: FxHashSet<FuncId> = program
        .functions
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            f.body.as_ref().is_some_and(|cfg| {
                cfg.edges.iter().any(|e| {
                    matches!(
                        roles.of_call(&e.op),
                        Some(Role::Lock { .. }) | Some(Role::Unlock { .. })
                    )
                })
            })
        })
        .map(|(i, _)| FuncId(i as u32))
        .collect();
    let mut out = FxHashSet::default();
    for f in &program.functions {
        let Some(cfg) = &f.body else { continue };
        for e in &cfg.edges {
            let Op::Assume { cond, branch } = &e.op else {
                continue;
            };
            let Some((flag, _)) = flag_test(program, cond, *branch) else {
                continue;
            };
            let mut node = e.dst;
            for _ in 0..LOOKAHEAD {
                let succs = &cfg.node(node).succs;
                let [next] = succs.as_slice() else {
                    break;
                };
                let edge = cfg.edge(*next);
                let guards = match &edge.op {
                    Op::Call {
                        callee: Callee::Direct(g),
                        ..
                    } => {
                        matches!(
                            roles.get(*g),
                            Some(Role::Lock { .. }) | Some(Role::Unlock { .. })
                        ) || locking.contains(g)
                    }
                    _ => false,
                };
                if guards {
                    out.insert(flag);
                    break;
                }
                node = edge.dst;
            }
        }
    }
    out
}
