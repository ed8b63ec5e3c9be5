//! Escape analysis: which objects a pointer of another thread (or of another instance of the
//! same thread function) may reach (seed 001 §7, "Escape analysis"; issue "Real programs",
//! item 1, thread-private memory).
//!
//! **Globals** escape when their address is taken anywhere except as the lock, condition,
//! barrier, once-control or thread-id argument of a synchronisation call, or as an argument of
//! a library function that does not keep it; with an unknown external function returning a
//! pointer, every external global may be handed out. Accesses through unknown pointers
//! ([`crate::backend::Target::Typed`]) can only touch escaped objects.
//!
//! **Locals and heap objects** are private to the thread instance that owns them until their
//! address reaches memory or code the analysis cannot follow. The analysis ([`flow`]) is a
//! unification-based points-to analysis per function over the addresses of locals (`&l`, an
//! array decaying to a pointer) and the results of allocations: they flow into *trackable*
//! locals (never address-taken, not arrays), move by pointer arithmetic and member selection
//! (`&q->f`, `q + k`), are stored into the function's own objects (a local struct or array, a
//! local allocation: the stored value joins the object's contents), passed to a library
//! function that does not keep them (`getaddrinfo(.., &res)`, `snprintf(buf, ..)`), or to a
//! parameter of a defined function that does the same with it. What a defined function
//! returns flows into its callers' results (an allocation wrapper's objects stay private when
//! every caller keeps them private), and what it stores into the objects its parameter points
//! to (`m->body = b`) escapes only when some caller's argument objects are not the caller's
//! own. An object *escapes* when an address of it is stored into a global, into memory
//! reached from a pointer the function does not follow (read from a global, returned by a
//! library call, made from an integer) or deeper than one level behind a parameter, into an
//! object that escapes, returned from a function code we do not see may call (a thread entry,
//! a function whose address is taken), passed to a thread creation, kept by a library, passed
//! to a call through a pointer; an object that does not escape races with nothing (two
//! instances of a thread function each have their own). Inline assembly and unknown
//! functions are taken to use the addresses they receive during the statement only; both add
//! an imprecision that keeps the verdict from `no-race`.
//!
//! Sound with respect to the C semantics up to the library specification (a function whose
//! specification does not say it keeps a pointer does not) and the usual assumption that an
//! address is not recovered from integers computed independently of it.

mod flow;

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
    /// Locals whose address may escape ([`flow`]).
    locals: FxHashSet<(FuncId, LocalId)>,
    /// Allocation calls whose objects never escape ([`flow`]).
    private_sites: FxHashSet<(FuncId, crate::ir::EdgeId)>,
    /// Pointer locals that point only to private objects of their function ([`flow`]).
    private_pointers: FxHashSet<(FuncId, LocalId)>,
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
        let flow = flow::compute(program, roles);
        esc.locals = flow.escaped_locals;
        esc.private_sites = flow.private_sites;
        esc.private_pointers = flow.private_pointers;
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
                // Locals: the flow analysis.
                Host::Var(Var::Local(_)) => {
                    let _ = func;
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
            Base::Heap { func, edge, .. } => !self.private_sites.contains(&(*func, *edge)),
            Base::Str(_) | Base::Hidden(_) | Base::Func(_) | Base::Specific { .. } => false,
        }
    }
}

/// Whether `base` is private to the thread instance that owns it: a local whose address never
/// escapes, or a heap object of an allocation whose objects never escape ([`flow`]). Such an
/// object races with nothing.
impl Escape {
    /// See above.
    pub fn private(&self, base: &Base) -> bool {
        match base {
            Base::Local { func, local, .. } => !self.locals.contains(&(*func, *local)),
            Base::Heap { func, edge, .. } => self.private_sites.contains(&(*func, *edge)),
            _ => false,
        }
    }
}

impl Escape {
    /// Whether an access at `site` of function `func` goes through a pointer local that
    /// points only to the function's own objects that never escape (`p->f`, `p[i]`,
    /// `memset(p + k, ..)` with `p = malloc(..)` or `p = &buf[0]` of a private `buf`): the
    /// bytes it touches are private, even when the backend could not name the object.
    pub fn through_private_pointer(
        &self,
        program: &Program,
        func: FuncId,
        site: &crate::backend::AccessSite<'_>,
    ) -> bool {
        let pointer = match site {
            crate::backend::AccessSite::Lval(lv) => match &lv.host {
                Host::Deref(e) => e.as_ref(),
                Host::Var(_) => return false,
            },
            crate::backend::AccessSite::Pointee(p) => p,
            crate::backend::AccessSite::Hidden(_) => return false,
        };
        base_local(program, pointer).is_some_and(|l| self.private_pointers.contains(&(func, l)))
    }
}

/// The pointer local an address is computed from: `p`, `p + k`, `p - k`, `&p->f`, `&p[k]`,
/// with conversions between pointer types only (an address made from an integer, as
/// `(struct s *)u`, comes from nowhere the flow follows).
fn base_local(program: &Program, e: &Expr) -> Option<LocalId> {
    let is_pointer = |x: &Expr| {
        matches!(
            program.types.kind(x.ty),
            crate::ir::types::TypeKind::Pointer(_) | crate::ir::types::TypeKind::Array { .. }
        )
    };
    if !is_pointer(e) {
        return None;
    }
    match &e.kind {
        ExprKind::Cast(inner) => base_local(program, inner),
        ExprKind::Load(lv) => crate::ir::visit::whole_local(lv),
        ExprKind::Binary(crate::ir::BinOp::PtrAdd | crate::ir::BinOp::PtrSub, p, _) => {
            base_local(program, p)
        }
        ExprKind::AddrOf(lv) => match &lv.host {
            Host::Deref(p) => base_local(program, p),
            Host::Var(_) => None,
        },
        _ => None,
    }
}

/// Argument positions of a modelled call whose address does not escape.
fn non_escaping_args(role: &Role, n: usize) -> Vec<usize> {
    match role {
        // The thread argument reaches the new thread.
        Role::ThreadCreate { thread_id, .. } => vec![*thread_id],
        // The value an atomic operation stores goes into its object.
        Role::Atomic { object } => vec![*object],
        Role::ThreadJoin { .. }
        | Role::Lock { .. }
        | Role::Unlock { .. }
        | Role::CondWait { .. }
        | Role::CondSignal { .. }
        | Role::BarrierWait { .. }
        | Role::Once { .. }
        | Role::SemWait { .. }
        | Role::SemPost { .. }
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
        | Role::MutexAttrSettype { .. }
        | Role::MutexInit { .. } => (0..n).collect(),
        // The value comes back from `pthread_getspecific`, unseen.
        Role::SpecificSet { key, .. } => vec![*key],
        // A specified library function keeps only what its specification says.
        Role::Library(spec) => (0..n).filter(|i| !spec.keeps(*i)).collect(),
        // The exit value of a thread reaches its joiner.
        Role::ThreadExit | Role::AtomicFunction => Vec::new(),
    }
}
