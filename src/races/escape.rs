//! Escape analysis: which variables a pointer may reach (seed 001 §7, "Escape analysis").
//!
//! A variable escapes when its address is taken anywhere except as the lock, condition,
//! barrier, once-control or thread-id argument of a synchronisation call, or as an argument of a
//! library function that only reads or writes through it (`memset`, `printf`, ...): there the
//! address does not outlive the call. Heap objects always escape; string literals are never
//! written. Accesses through unknown pointers ([`crate::backend::Target::Typed`]) can only touch
//! escaped objects.

use crate::backend::Base;
use crate::ir::visit::{op_exprs, walk_expr};
use crate::ir::{
    Callee, Expr, ExprKind, FuncId, GlobalId, Host, InitValue, LocalId, Op, Program, Var,
};
use crate::model::{Role, Roles};
use rustc_hash::FxHashSet;

/// The escaped variables of a program.
#[derive(Clone, Debug, Default)]
pub struct Escape {
    globals: FxHashSet<GlobalId>,
    locals: FxHashSet<(FuncId, LocalId)>,
    unknown_pointer_source: bool,
    /// Globals with external linkage, when code we do not see can hand out pointers: an unknown
    /// external function returns a pointer (`struct S *getS(void)` may return `&s`).
    external: FxHashSet<GlobalId>,
}

impl Escape {
    /// Computes the escaped variables.
    pub fn compute(program: &Program, roles: &Roles) -> Escape {
        let mut esc = Escape::default();
        for g in &program.globals {
            for item in &g.init {
                if let InitValue::Expr(e) = &item.value {
                    esc.note_expr(None, e);
                }
            }
        }
        for (fi, f) in program.functions.iter().enumerate() {
            let func = FuncId(fi as u32);
            let Some(cfg) = &f.body else { continue };
            for e in &cfg.edges {
                if let Op::Call {
                    callee: Callee::Direct(g),
                    ..
                } = &e.op
                {
                    let callee = program.function(*g);
                    let returns_pointer = program
                        .types
                        .func_sig(callee.ty)
                        .is_some_and(|s| program.types.is_pointer(s.ret));
                    if callee.body.is_none() && roles.get(*g).is_none() && returns_pointer {
                        esc.unknown_pointer_source = true;
                    }
                }
                if let Op::Call {
                    callee: Callee::Direct(g),
                    args,
                    dest,
                } = &e.op
                    && let Some(role) = roles.get(*g)
                {
                    let keep = non_escaping_args(role, args.len());
                    for (i, a) in args.iter().enumerate() {
                        if keep.contains(&i) {
                            // Only the expressions computing the address escape.
                            if let ExprKind::AddrOf(lv) = &crate::ir::visit::strip_casts(a).kind {
                                crate::ir::visit::walk_lval(lv, &mut |x| {
                                    esc.note_one(Some(func), x)
                                });
                                continue;
                            }
                        }
                        esc.note_expr(Some(func), a);
                    }
                    if let Some(d) = dest {
                        crate::ir::visit::walk_lval(d, &mut |x| esc.note_one(Some(func), x));
                    }
                    continue;
                }
                op_exprs(&e.op, &mut |x| esc.note_one(Some(func), x));
            }
        }
        if esc.unknown_pointer_source {
            esc.external = program
                .globals
                .iter()
                .enumerate()
                .filter(|(_, g)| g.linkage == crate::ir::Linkage::External)
                .map(|(i, _)| GlobalId(i as u32))
                .collect();
        }
        esc
    }

    fn note_expr(&mut self, func: Option<FuncId>, e: &Expr) {
        walk_expr(e, &mut |x| self.note_one(func, x));
    }

    fn note_one(&mut self, func: Option<FuncId>, e: &Expr) {
        if let ExprKind::AddrOf(lv) = &e.kind {
            match lv.host {
                Host::Var(Var::Global(g)) => {
                    self.globals.insert(g);
                }
                Host::Var(Var::Local(l)) => {
                    if let Some(f) = func {
                        self.locals.insert((f, l));
                    }
                }
                Host::Deref(_) => {}
            }
        }
    }

    /// Whether a pointer may reach `base`.
    pub fn escaped(&self, base: &Base) -> bool {
        match base {
            Base::Global(g) => self.globals.contains(g) || self.external.contains(g),
            Base::Local { func, local, .. } => self.locals.contains(&(*func, *local)),
            Base::Heap { .. } => true,
            Base::Str(_) | Base::Hidden(_) | Base::Func(_) | Base::Specific { .. } => false,
        }
    }
}

/// Argument positions of a modelled call whose address does not escape.
fn non_escaping_args(role: &Role, n: usize) -> Vec<usize> {
    match role {
        Role::ThreadCreate { thread_id, .. } => vec![*thread_id],
        Role::ThreadJoin { .. } => (0..n).collect(),
        Role::Lock { lock, .. } | Role::Unlock { lock } => vec![*lock],
        Role::CondWait { cond, mutex } => vec![*cond, *mutex],
        Role::CondSignal { cond } => vec![*cond],
        Role::BarrierWait { barrier } => vec![*barrier],
        Role::Once { control, .. } => vec![*control],
        Role::SemWait { sem, .. } | Role::SemPost { sem } => vec![*sem],
        Role::Atomic { .. }
        | Role::Free { .. }
        | Role::Realloc { .. }
        | Role::Ignore
        | Role::ThreadUnsafe
        | Role::Nondet
        | Role::Assume { .. }
        | Role::Noreturn
        | Role::NonlocalJump { .. }
        | Role::AtomicBegin
        | Role::AtomicEnd
        | Role::Alloc
        | Role::SemInit { .. }
        | Role::BarrierInit { .. }
        | Role::KeyCreate { .. }
        | Role::SpecificGet { .. }
        | Role::SpecificSet { .. }
        | Role::MutexAttrSettype { .. }
        | Role::MutexInit { .. } => (0..n).collect(),
        // A specified library function keeps only what its specification says.
        Role::Library(spec) => (0..n).filter(|i| !spec.keeps(*i)).collect(),
        // The exit value of a thread reaches its joiner.
        Role::ThreadExit | Role::AtomicFunction => Vec::new(),
    }
}
