//! Which memory a statement reads and writes, independent of how pointers are resolved.
//!
//! Reads come from every `Load` in right-hand sides, conditions, arguments and returned values
//! (including the pointer and index expressions inside lvalues); writes from assigned lvalues and
//! call results (seed 001 §7; `notes/racerf-goblint.md` §1.2). Calls to modelled functions add
//! the accesses of their role: library reads and writes through pointer arguments, atomic
//! operations (atomic accesses), `free` (a write of the whole object). Synchronisation calls
//! (locks, creates, joins) access nothing but the expressions computing their arguments. An
//! unknown external function is assumed to read what its `const` pointer arguments point to and
//! to write what its other pointer arguments point to.
//!
//! A [`Resolver`] (the backend) says where an lvalue or a pointer goes.

use super::{AccessKind, AccessSite, MemAccess, Target};
use crate::ir::types::{Quals, TypeKind};
use crate::ir::visit::strip_casts;
use crate::ir::{Callee, Expr, ExprKind, Host, Lval, Op, Program, Proj, TypeId};
use crate::model::library::{Bytes, Hidden};
use crate::model::{Role, Roles};

/// Resolution of lvalues and pointers to targets, supplied by a backend.
pub trait Resolver<'p> {
    /// Where the object designated by `lv` is (several targets when ambiguous).
    fn lval_targets(&self, lv: &'p Lval) -> Vec<Target>;
    /// Where the object `p` points to is: the bytes from the pointed-to address to the end of
    /// its object, or (`size`) that many bytes from it: exactly those bytes when the flag is
    /// set, else at most those (a `read` of up to `n` bytes).
    fn pointee_targets(&self, p: &'p Expr, size: Option<(u64, bool)>) -> Vec<Target>;
    /// An upper bound of the values of the integer expression `e`, when known and not
    /// negative. Defaults to none.
    fn int_upper(&self, _e: &'p Expr) -> Option<u64> {
        None
    }
    /// Whether the pointer `p` surely points into an object its thread has not published
    /// (see [`MemAccess::unpublished`]). Defaults to false.
    fn unpublished(&self, _p: &'p Expr) -> bool {
        false
    }
    /// The region ([`super::regions`]) the pointer `p` surely points into, if any. Defaults to
    /// none.
    fn region(&self, _p: &'p Expr) -> Option<super::regions::Region> {
        None
    }
    /// The region the object `lv` designates is in (for a variable's lvalue: a root element),
    /// if any. Defaults to none.
    fn lval_region(&self, _lv: &'p Lval) -> Option<super::regions::Region> {
        None
    }
}

/// Whether an lvalue is accessed atomically (its type, or an enclosing object's, is `_Atomic`).
fn atomic_lval(program: &Program, lv: &Lval) -> bool {
    program.types.quals(lv.ty).contains(Quals::ATOMIC)
}

/// Collects the accesses of `op`.
pub fn statement_accesses<'p>(
    program: &'p Program,
    roles: &Roles,
    op: &'p Op,
    r: &dyn Resolver<'p>,
) -> Vec<MemAccess<'p>> {
    let mut out = Vec::new();
    let mut acc = Collector {
        program,
        r,
        out: &mut out,
    };
    match op {
        Op::Skip => {}
        Op::Assign { lhs, rhs } => {
            acc.reads_in(rhs);
            acc.reads_inside(lhs);
            acc.lval(lhs, AccessKind::Write, false);
        }
        Op::Assume { cond, .. } => acc.reads_in(cond),
        Op::Return(e) => {
            if let Some(e) = e {
                acc.reads_in(e);
            }
        }
        Op::Asm { outputs, inputs } => {
            for i in inputs {
                acc.reads_in(i);
            }
            for o in outputs {
                acc.reads_inside(o);
                acc.lval(o, AccessKind::Write, false);
            }
        }
        Op::Call { dest, callee, args } => {
            if let Callee::Indirect(f) = callee {
                acc.reads_in(f);
            }
            let role = match callee {
                Callee::Direct(f) => roles.get(*f),
                Callee::Indirect(_) => None,
            };
            let defined = matches!(callee, Callee::Direct(f) if program.function(*f).body.is_some())
                || matches!(callee, Callee::Indirect(_));
            // Argument values are read, except the lock/thread objects of synchronisation
            // calls (only the expressions computing their addresses are).
            for a in args {
                acc.reads_in(a);
            }
            match role {
                Some(Role::Atomic { object }) => {
                    if let (Some(p), Callee::Direct(f)) = (args.get(*object), callee) {
                        let name = &program.function(*f).name;
                        let load = name.contains("load");
                        let store = name.contains("store") || name.contains("clear");
                        let size = acc.pointee_size(p);
                        if !store {
                            acc.pointee(p, AccessKind::Read, true, size);
                        }
                        if !load {
                            acc.pointee(p, AccessKind::Write, true, size);
                        }
                    }
                }
                Some(Role::Free { ptr }) | Some(Role::Realloc { ptr }) => {
                    if let Some(p) = args.get(*ptr) {
                        acc.pointee(p, AccessKind::Write, false, None);
                    }
                }
                Some(Role::Library(spec)) => {
                    let pointer_arg = |i: usize| {
                        args.get(i).filter(|a| {
                            program.types.is_pointer(strip_casts(a).ty)
                                && !matches!(strip_casts(a).kind, ExprKind::Str(_))
                        })
                    };
                    let (mut reads, mut writes) = spec.read_written(args.len());
                    // A `printf`-style format: the later arguments are dereferenced only for
                    // `%s` (read) and `%n` (written); a format that is not a literal reads
                    // every later pointer.
                    if let Some(k) = spec.format {
                        let later = |i: &usize| *i <= k;
                        reads.retain(later);
                        writes.retain(later);
                        if !reads.contains(&k) {
                            reads.push(k);
                        }
                        match args.get(k).map(|f| &strip_casts(f).kind) {
                            Some(ExprKind::Str(sid)) => {
                                let bytes = &program.strings[sid.0 as usize].bytes;
                                let derefs = crate::model::library::format_derefs(bytes);
                                for (j, d) in derefs.into_iter().enumerate() {
                                    match d {
                                        Some(false) => reads.push(k + 1 + j),
                                        Some(true) => writes.push(k + 1 + j),
                                        None => {}
                                    }
                                }
                            }
                            _ => reads.extend(k + 1..args.len()),
                        }
                    }
                    for (list, kind) in [(reads, AccessKind::Read), (writes, AccessKind::Write)] {
                        for i in list {
                            if let Some(p) = pointer_arg(i) {
                                // A byte count is an upper bound (`read` may write fewer).
                                let size = match spec.bytes(i) {
                                    Bytes::Rest => None,
                                    Bytes::Pointee => acc.pointee_size(p),
                                    Bytes::Arg(n) => {
                                        args.get(n).and_then(|x| r.int_upper(x)).map(|n| (n, false))
                                    }
                                    Bytes::Product(m, n) => args
                                        .get(m)
                                        .and_then(|x| r.int_upper(x))
                                        .zip(args.get(n).and_then(|x| r.int_upper(x)))
                                        .and_then(|(a, b)| a.checked_mul(b))
                                        .map(|n| (n, false)),
                                };
                                acc.pointee(p, kind, false, size);
                            }
                        }
                    }
                    if let (Some(h), Callee::Direct(f)) = (spec.hidden, callee) {
                        let kinds: &[AccessKind] = match h {
                            Hidden::Read => &[AccessKind::Read],
                            Hidden::Write => &[AccessKind::Write],
                            Hidden::ReadWrite => &[AccessKind::Read, AccessKind::Write],
                        };
                        for kind in kinds {
                            acc.hidden(*f, *kind);
                        }
                    }
                }
                Some(Role::ThreadUnsafe) => {
                    if let Callee::Direct(f) = callee {
                        for kind in [AccessKind::Read, AccessKind::Write] {
                            acc.hidden(*f, kind);
                        }
                    }
                }
                None if !defined => {
                    // Unknown external function: const pointers are read, others written.
                    for a in args {
                        let inner = strip_casts(a);
                        if matches!(inner.kind, ExprKind::Str(_) | ExprKind::Func(_)) {
                            continue;
                        }
                        let Some(pointee) = program.types.pointee(inner.ty) else {
                            continue;
                        };
                        if matches!(program.types.kind(pointee), TypeKind::Function(_)) {
                            continue;
                        }
                        let kind = if const_pointer(program, a) {
                            AccessKind::Read
                        } else {
                            AccessKind::Write
                        };
                        acc.pointee(a, kind, false, None);
                    }
                }
                _ => {}
            }
            if let Some(d) = dest {
                acc.reads_inside(d);
                acc.lval(d, AccessKind::Write, true);
            }
        }
    }
    out
}

/// Whether an argument is a pointer to `const` data: its own type, or the type of the parameter
/// it was converted to (`f(buf)` for `void f(const char *)` passes `(const char *)buf`).
pub(crate) fn const_pointer(program: &Program, a: &Expr) -> bool {
    let types = &program.types;
    let mut e = a;
    loop {
        if types
            .pointee(e.ty)
            .is_some_and(|t| types.quals(t).contains(Quals::CONST))
        {
            return true;
        }
        match &e.kind {
            ExprKind::Cast(inner) => e = inner,
            _ => return false,
        }
    }
}

struct Collector<'a, 'p> {
    program: &'p Program,
    r: &'a dyn Resolver<'p>,
    out: &'a mut Vec<MemAccess<'p>>,
}

impl<'p> Collector<'_, 'p> {
    /// Reads of every lvalue loaded in `e`.
    fn reads_in(&mut self, e: &'p Expr) {
        let mut stack = vec![e];
        while let Some(e) = stack.pop() {
            match &e.kind {
                ExprKind::Load(lv) => {
                    self.lval(lv, AccessKind::Read, false);
                    self.push_inside(lv, &mut stack);
                }
                ExprKind::AddrOf(lv) => self.push_inside(lv, &mut stack),
                ExprKind::Unary(_, a) | ExprKind::Cast(a) => stack.push(a),
                ExprKind::Binary(_, a, b) => {
                    stack.push(b);
                    stack.push(a);
                }
                _ => {}
            }
        }
    }

    fn push_inside(&self, lv: &'p Lval, stack: &mut Vec<&'p Expr>) {
        for p in &lv.proj {
            if let Proj::Index(i) = p {
                stack.push(i);
            }
        }
        if let Host::Deref(p) = &lv.host {
            stack.push(p);
        }
    }

    /// Reads of the pointer and index expressions inside `lv` (not of `lv` itself).
    fn reads_inside(&mut self, lv: &'p Lval) {
        let mut stack = Vec::new();
        self.push_inside(lv, &mut stack);
        for e in stack {
            self.reads_in(e);
        }
    }

    fn lval(&mut self, lv: &'p Lval, kind: AccessKind, after_call: bool) {
        let targets = self.r.lval_targets(lv);
        let precise = targets.len() <= 1;
        let atomic = atomic_lval(self.program, lv);
        let unpublished = matches!(&lv.host, Host::Deref(p) if self.r.unpublished(p));
        let region = match &lv.host {
            Host::Deref(p) => self.r.region(p),
            Host::Var(_) => self.r.lval_region(lv),
        };
        for target in targets {
            self.out.push(MemAccess {
                target,
                kind,
                atomic,
                ty: lv.ty,
                site: AccessSite::Lval(lv),
                after_call,
                precise,
                unpublished,
                region,
            });
        }
    }

    /// The size of one object of the type `p` points to (exactly those bytes).
    fn pointee_size(&self, p: &'p Expr) -> Option<(u64, bool)> {
        let types = &self.program.types;
        types
            .pointee(strip_casts(p).ty)
            .or_else(|| types.pointee(p.ty))
            .and_then(|t| types.size_of(t))
            .map(|n| (n, true))
    }

    /// An access to the hidden state of library function `f`.
    fn hidden(&mut self, f: crate::ir::FuncId, kind: AccessKind) {
        let target = Target::Addr(super::Address {
            base: super::Base::Hidden(f),
            range: super::ByteRange::sized(0, 1),
            exact: true,
        });
        self.out.push(MemAccess {
            target,
            kind,
            atomic: false,
            ty: self.program.types.common.char_,
            site: AccessSite::Hidden(f),
            after_call: false,
            precise: true,
            unpublished: false,
            region: None,
        });
    }

    /// An access to the object `p` points to (through a library call): `size` bytes from the
    /// pointed byte, or (`None`) to the end of the object.
    fn pointee(&mut self, p: &'p Expr, kind: AccessKind, atomic: bool, size: Option<(u64, bool)>) {
        let ty: TypeId = self
            .program
            .types
            .pointee(strip_casts(p).ty)
            .or_else(|| self.program.types.pointee(p.ty))
            .unwrap_or(self.program.types.common.void);
        let atomic = atomic || self.program.types.quals(ty).contains(Quals::ATOMIC);
        let targets = self.r.pointee_targets(p, size);
        let precise = targets.len() <= 1;
        let unpublished = self.r.unpublished(p);
        let region = self.r.region(p);
        for target in targets {
            self.out.push(MemAccess {
                target,
                kind,
                atomic,
                ty,
                site: AccessSite::Pointee(p),
                after_call: false,
                precise,
                unpublished,
                region,
            });
        }
    }
}
