//! Walking the expressions of the IR.

use super::cfg::{Callee, Op};
use super::expr::{Expr, ExprKind, Host, Lval, Proj};

/// Calls `f` on `e` and every sub-expression of it, including those inside lvalues (pointer
/// expressions of dereferences, index expressions), parents before children.
pub fn walk_expr<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    let mut stack = vec![e];
    while let Some(e) = stack.pop() {
        f(e);
        match &e.kind {
            ExprKind::Load(lv) | ExprKind::AddrOf(lv) => push_lval_exprs(lv, &mut stack),
            ExprKind::Unary(_, a) | ExprKind::Cast(a) => stack.push(a),
            ExprKind::Binary(_, a, b) => {
                stack.push(b);
                stack.push(a);
            }
            _ => {}
        }
    }
}

fn push_lval_exprs<'a>(lv: &'a Lval, stack: &mut Vec<&'a Expr>) {
    for p in lv.proj.iter().rev() {
        if let Proj::Index(i) = p {
            stack.push(i);
        }
    }
    if let Host::Deref(p) = &lv.host {
        stack.push(p);
    }
}

/// Calls `f` on the expressions inside an lvalue (its pointer and index expressions).
pub fn walk_lval<'a>(lv: &'a Lval, f: &mut dyn FnMut(&'a Expr)) {
    let mut stack = Vec::new();
    push_lval_exprs(lv, &mut stack);
    for e in stack.into_iter().rev() {
        walk_expr(e, f);
    }
}

/// Calls `f` on every expression of an instruction: its top-level expressions (right-hand
/// sides, arguments, conditions, returned values, the callee of an indirect call), the
/// expressions inside its written lvalues, and every sub-expression of those (each once,
/// through [`walk_expr`]; walking them again from `f` would take quadratic time on deeply
/// nested expressions).
pub fn op_exprs<'a>(op: &'a Op, f: &mut dyn FnMut(&'a Expr)) {
    match op {
        Op::Skip | Op::Return(None) => {}
        Op::Assign { lhs, rhs } => {
            walk_lval(lhs, f);
            walk_expr(rhs, f);
        }
        Op::Call { dest, callee, args } => {
            if let Callee::Indirect(e) = callee {
                walk_expr(e, f);
            }
            for a in args {
                walk_expr(a, f);
            }
            if let Some(d) = dest {
                walk_lval(d, f);
            }
        }
        Op::Assume { cond, .. } => walk_expr(cond, f),
        Op::Return(Some(e)) => walk_expr(e, f),
        Op::Asm { outputs, inputs } => {
            for o in outputs {
                walk_lval(o, f);
            }
            for i in inputs {
                walk_expr(i, f);
            }
        }
    }
}

/// Calls `f` on every local whose address an expression of `cfg` takes.
pub fn walk_cfg_addr_taken(cfg: &super::cfg::Cfg, f: &mut dyn FnMut(super::LocalId)) {
    for e in &cfg.edges {
        op_exprs(&e.op, &mut |x| {
            if let ExprKind::AddrOf(lv) = &x.kind
                && let Host::Var(super::expr::Var::Local(l)) = lv.host
            {
                f(l);
            }
        });
    }
}

/// The locals an instruction writes, wholly or in part (an assignment's or a call's
/// destination, inline assembly's outputs).
pub fn written_locals(op: &Op, f: &mut dyn FnMut(super::LocalId)) {
    let mut host = |lv: &Lval| {
        if let Host::Var(super::expr::Var::Local(l)) = lv.host {
            f(l);
        }
    };
    match op {
        Op::Assign { lhs, .. } => host(lhs),
        Op::Call { dest: Some(d), .. } => host(d),
        Op::Asm { outputs, .. } => outputs.iter().for_each(host),
        _ => {}
    }
}

/// The local an lvalue names when it is a whole local (no projection).
pub fn whole_local(lv: &Lval) -> Option<super::LocalId> {
    match lv.host {
        Host::Var(super::expr::Var::Local(l)) if lv.proj.is_empty() => Some(l),
        _ => None,
    }
}

/// The local an expression reads when it is a plain load of a whole local (casts ignored).
pub fn local_of(e: &Expr) -> Option<super::LocalId> {
    match &strip_casts(e).kind {
        ExprKind::Load(lv) => whole_local(lv),
        _ => None,
    }
}

/// Whether `e` reads local `l` or takes an address inside it.
pub fn expr_mentions_local(e: &Expr, l: super::LocalId) -> bool {
    let mut found = false;
    walk_expr(e, &mut |x| {
        if let ExprKind::Load(lv) | ExprKind::AddrOf(lv) = &x.kind
            && lv.host == Host::Var(super::expr::Var::Local(l))
        {
            found = true;
        }
    });
    found
}

/// Whether an lvalue names local `l` or reads it in its pointer or index expressions.
pub fn lval_mentions_local(lv: &Lval, l: super::LocalId) -> bool {
    if lv.host == Host::Var(super::expr::Var::Local(l)) {
        return true;
    }
    let mut found = false;
    walk_lval(lv, &mut |x| {
        if let ExprKind::Load(lv) | ExprKind::AddrOf(lv) = &x.kind
            && lv.host == Host::Var(super::expr::Var::Local(l))
        {
            found = true;
        }
    });
    found
}

/// The expression with outer casts removed.
pub fn strip_casts(mut e: &Expr) -> &Expr {
    while let ExprKind::Cast(inner) = &e.kind {
        e = inner;
    }
    e
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::types::{DataModel, TypeTable};
    use crate::ir::{GlobalId, Var};

    #[test]
    fn walks_into_lvalues() {
        let t = TypeTable::new(DataModel::Lp64);
        let int = t.common.int;
        let idx = Expr::int(3, int);
        let lv = Lval {
            host: Host::Var(Var::Global(GlobalId(0))),
            proj: vec![Proj::Index(Box::new(idx))],
            ty: int,
        };
        let e = Expr {
            kind: ExprKind::Load(Box::new(lv)),
            ty: int,
        };
        let mut seen = Vec::new();
        walk_expr(&e, &mut |x| seen.push(x.as_int()));
        assert_eq!(seen, vec![None, Some(3)]);
    }
}
