//! Thread-id pointers: where the thread-id argument of a create points when it is not written
//! `&id` at the create itself.
//!
//! Two shapes are resolved, both by reading the program as if the pointer were replaced by its
//! only possible value:
//! - a **parameter** `p` of a function called from exactly one place (no call through a
//!   pointer, not recursive), which the function never changes: `p` holds the argument of that
//!   call (`int spawn(pthread_t *p, ...) { return pthread_create(p, ...); }` called once as
//!   `spawn(&id1, ...)`; [`crate::ir::specialise`] gives each call of such a wrapper its own
//!   copy);
//! - a local `p` written once, by `p = &id`, whose address is never taken (a use of `p` before
//!   that write would read an indeterminate pointer).
//!
//! Such a pointer is an *id pointer* when its only uses are as the thread-id argument of a
//! create, as the `*p` thread-id argument of a join, or as an argument bound to an id-pointer
//! parameter of another function (the greatest fixpoint). Passing `&id` to an id-pointer
//! parameter or storing it in an id-pointer local then is no escape of `id` (compare
//! Goblint's `threadCreateWrapper` analysis, which names a wrapper's thread by its call site).

use crate::ir::visit::{strip_casts, whole_local};
use crate::ir::{
    Callee, EdgeId, Expr, ExprKind, FuncId, Host, LocalId, LocalKind, Lval, Op, Program,
};
use crate::model::{Role, Roles};
use rustc_hash::{FxHashMap, FxHashSet};

/// How many pointer steps a resolution follows.
const MAX_STEPS: usize = 16;

/// The id pointers of a program (see the module documentation).
#[derive(Default)]
pub(super) struct IdPointers {
    /// Functions with exactly one direct call site, not recursive, address never taken: the site.
    single_site: FxHashMap<FuncId, (FuncId, EdgeId)>,
    /// Id-pointer parameters: (function, parameter) with its position.
    params: FxHashMap<(FuncId, LocalId), usize>,
    /// Id-pointer locals with the right-hand side of their only definition (`&id`).
    locals: FxHashMap<(FuncId, LocalId), Expr>,
}

/// The loads of local `l` in an instruction (compared with [`IdPointers::ok_loads`], its loads
/// in id-pointer positions: a candidate keeps only those).
fn count_loads(op: &Op, l: LocalId) -> usize {
    let mut n = 0;
    // `op_exprs` reaches every sub-expression once.
    crate::ir::visit::op_exprs(op, &mut |y| {
        if let ExprKind::Load(lv) = &y.kind
            && whole_local(lv) == Some(l)
        {
            n += 1;
        }
    });
    n
}

impl IdPointers {
    /// The id pointers of `program`.
    pub(super) fn new(program: &Program, roles: &Roles) -> IdPointers {
        let mut out = IdPointers::default();
        // Call sites per function, address-taken functions, direct recursion.
        let mut sites: FxHashMap<FuncId, Vec<(FuncId, EdgeId)>> = FxHashMap::default();
        let mut taken: FxHashSet<FuncId> = FxHashSet::default();
        for (i, f) in program.functions.iter().enumerate() {
            let fid = FuncId(i as u32);
            let Some(cfg) = &f.body else { continue };
            for (ei, e) in cfg.edges.iter().enumerate() {
                if let Op::Call {
                    callee: Callee::Direct(g),
                    ..
                } = &e.op
                {
                    sites.entry(*g).or_default().push((fid, EdgeId(ei as u32)));
                }
                crate::ir::visit::op_exprs(&e.op, &mut |y| {
                    if let ExprKind::Func(g) = y.kind {
                        taken.insert(g);
                    }
                });
            }
        }
        for g in &program.globals {
            for item in &g.init {
                if let crate::ir::InitValue::Expr(v) = &item.value {
                    crate::ir::visit::walk_expr(v, &mut |y| {
                        if let ExprKind::Func(f) = y.kind {
                            taken.insert(f);
                        }
                    });
                }
            }
        }
        for (g, s) in &sites {
            if let [(caller, edge)] = s.as_slice()
                && caller != g
                && !taken.contains(g)
                && program.function(*g).body.is_some()
            {
                out.single_site.insert(*g, (*caller, *edge));
            }
        }
        // A function reached again from itself through single sites is recursive: drop it.
        let ids: Vec<FuncId> = out.single_site.keys().copied().collect();
        for g in ids {
            let mut cur = g;
            for _ in 0..=program.functions.len().min(64) {
                match out.single_site.get(&cur) {
                    Some((c, _)) if *c == g => {
                        out.single_site.remove(&g);
                        break;
                    }
                    Some((c, _)) => cur = *c,
                    None => break,
                }
            }
        }
        // Candidates: unchanged parameters of single-site functions, and locals written once
        // by `p = &lv`; address never taken, no inline assembly writing them.
        for (i, f) in program.functions.iter().enumerate() {
            let fid = FuncId(i as u32);
            let Some(cfg) = &f.body else { continue };
            let mut taken_locals = FxHashSet::default();
            crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
                taken_locals.insert(l);
            });
            let mut writes: FxHashMap<LocalId, Vec<Option<&Expr>>> = FxHashMap::default();
            for e in &cfg.edges {
                match &e.op {
                    Op::Assign { lhs, rhs } => {
                        if let Some(l) = whole_local(lhs) {
                            writes.entry(l).or_default().push(Some(rhs));
                        } else if let Host::Var(crate::ir::Var::Local(l)) = lhs.host {
                            writes.entry(l).or_default().push(None);
                        }
                    }
                    Op::Call { dest: Some(d), .. } => {
                        if let Host::Var(crate::ir::Var::Local(l)) = d.host {
                            writes.entry(l).or_default().push(None);
                        }
                    }
                    Op::Asm { outputs, .. } => {
                        for o in outputs {
                            if let Host::Var(crate::ir::Var::Local(l)) = o.host {
                                writes.entry(l).or_default().extend([None, None]);
                            }
                        }
                    }
                    _ => {}
                }
            }
            for (li, local) in f.locals.iter().enumerate() {
                let l = LocalId(li as u32);
                if taken_locals.contains(&l) {
                    continue;
                }
                let w = writes.get(&l).map_or(&[][..], |v| v.as_slice());
                if local.kind == LocalKind::Param {
                    if w.is_empty()
                        && out.single_site.contains_key(&fid)
                        && let Some(k) = f.params.iter().position(|p| *p == l)
                    {
                        out.params.insert((fid, l), k);
                    }
                } else if let [Some(rhs)] = w
                    && matches!(strip_casts(rhs).kind, ExprKind::AddrOf(_))
                {
                    out.locals.insert((fid, l), (*rhs).clone());
                }
            }
        }
        // Greatest fixpoint: drop candidates with another use.
        loop {
            let mut bad: Vec<(FuncId, LocalId)> = Vec::new();
            for &(fid, l) in out.params.keys().chain(out.locals.keys()) {
                let Some(cfg) = &program.function(fid).body else {
                    bad.push((fid, l));
                    continue;
                };
                let ok = cfg.edges.iter().all(|e| {
                    let all = count_loads(&e.op, l);
                    all == 0 || all == out.ok_loads(program, roles, &e.op, l)
                });
                if !ok {
                    bad.push((fid, l));
                }
            }
            if bad.is_empty() {
                break;
            }
            for k in bad {
                out.params.remove(&k);
                out.locals.remove(&k);
            }
        }
        out
    }

    /// Loads of local `l` in `op` in id-pointer positions.
    fn ok_loads(&self, program: &Program, roles: &Roles, op: &Op, l: LocalId) -> usize {
        let Op::Call { callee, args, dest } = op else {
            return 0;
        };
        if dest.as_ref().is_some_and(|d| {
            let mut n = 0;
            crate::ir::visit::walk_lval(d, &mut |y| {
                if matches!(&y.kind, ExprKind::Load(lv) if whole_local(lv) == Some(l)) {
                    n += 1;
                }
            });
            n > 0
        }) {
            return 0;
        }
        let is_l = |e: &Expr| matches!(&strip_casts(e).kind, ExprKind::Load(lv) if whole_local(lv) == Some(l));
        match (callee, roles.of_call(op)) {
            (_, Some(Role::ThreadCreate { thread_id, .. })) => {
                usize::from(args.get(*thread_id).is_some_and(is_l))
            }
            (_, Some(Role::ThreadJoin { thread_id })) => usize::from(
                args.get(*thread_id)
                    .is_some_and(|a| deref_of(a).is_some_and(is_l)),
            ),
            (Callee::Direct(g), None) => args
                .iter()
                .enumerate()
                .filter(|(k, a)| {
                    is_l(a)
                        && program
                            .function(*g)
                            .params
                            .get(*k)
                            .is_some_and(|p| self.params.contains_key(&(*g, *p)))
                })
                .count(),
            _ => 0,
        }
    }

    /// Whether argument `k` of a direct call of `callee` is bound to an id-pointer parameter.
    pub(super) fn is_param(&self, program: &Program, callee: FuncId, k: usize) -> bool {
        program
            .function(callee)
            .params
            .get(k)
            .is_some_and(|p| self.params.contains_key(&(callee, *p)))
    }

    /// Whether `l` of `func` is an id-pointer local.
    pub(super) fn is_local(&self, func: FuncId, l: LocalId) -> bool {
        self.locals.contains_key(&(func, l))
    }

    /// The object a thread-id pointer `e` of `func` points to, with the function whose locals
    /// its lvalue names: `&lv` itself, or what an id pointer holds.
    pub(super) fn target(
        &self,
        program: &Program,
        func: FuncId,
        e: &Expr,
    ) -> Option<(FuncId, Lval)> {
        let mut func = func;
        let mut e = e.clone();
        for _ in 0..MAX_STEPS {
            match &strip_casts(&e).kind {
                ExprKind::AddrOf(lv) => return Some((func, (**lv).clone())),
                ExprKind::Load(lv) => {
                    let l = whole_local(lv)?;
                    if let Some(rhs) = self.locals.get(&(func, l)) {
                        e = rhs.clone();
                    } else if let Some(k) = self.params.get(&(func, l)) {
                        let (caller, edge) = *self.single_site.get(&func)?;
                        let arg = match &program
                            .function(caller)
                            .body
                            .as_ref()?
                            .edges
                            .get(edge.0 as usize)?
                            .op
                        {
                            Op::Call { args, .. } => args.get(*k)?.clone(),
                            _ => return None,
                        };
                        func = caller;
                        e = arg;
                    } else {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        None
    }
}

/// The pointer `p` of a join's thread-id argument `*p`.
pub(super) fn deref_of(e: &Expr) -> Option<&Expr> {
    match &strip_casts(e).kind {
        ExprKind::Load(lv) if lv.proj.is_empty() => match &lv.host {
            Host::Deref(p) => Some(p),
            Host::Var(_) => None,
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crate::frontend::{self, FrontendOptions};
    use crate::model::Model;

    #[test]
    fn a_local_defined_once_as_an_address_is_an_id_pointer() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.c");
        std::fs::write(
            &path,
            "#include <pthread.h>\nvoid *t(void *a) { return 0; }\n\
             int main(void) { pthread_t id; pthread_t *h = &id; pthread_create(h, 0, t, 0); \
             pthread_join(*h, 0); return 0; }\n",
        )
        .expect("write");
        let p = frontend::load(&[path], &FrontendOptions::default())
            .expect("lowers")
            .0;
        let roles = Model::shipped().classify(&p);
        let ptrs = super::IdPointers::new(&p, &roles);
        assert_eq!(
            ptrs.locals.len(),
            1,
            "{:?}",
            ptrs.locals.keys().collect::<Vec<_>>()
        );
    }
}
