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
use crate::model::{Role, Roles};

/// Resolution of lvalues and pointers to targets, supplied by a backend.
pub trait Resolver<'p> {
    /// Where the object designated by `lv` is (several targets when ambiguous).
    fn lval_targets(&self, lv: &'p Lval) -> Vec<Target>;
    /// Where the object `p` points to is: the bytes from the pointed-to address to the end of
    /// its object, or (`sized`) exactly one object of `p`'s pointee type.
    fn pointee_targets(&self, p: &'p Expr, sized: bool) -> Vec<Target>;
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
                        if !store {
                            acc.pointee(p, AccessKind::Read, true, true);
                        }
                        if !load {
                            acc.pointee(p, AccessKind::Write, true, true);
                        }
                    }
                }
                Some(Role::Free { ptr }) | Some(Role::Realloc { ptr }) => {
                    if let Some(p) = args.get(*ptr) {
                        acc.pointee(p, AccessKind::Write, false, false);
                    }
                }
                Some(Role::Library(spec)) => {
                    let pointer_arg = |i: usize| {
                        args.get(i).filter(|a| {
                            program.types.is_pointer(strip_casts(a).ty)
                                && !matches!(strip_casts(a).kind, ExprKind::Str(_))
                        })
                    };
                    let (reads, writes) = spec.read_written(args.len());
                    for (list, kind) in [(reads, AccessKind::Read), (writes, AccessKind::Write)] {
                        for i in list {
                            if let Some(p) = pointer_arg(i) {
                                acc.pointee(p, kind, false, false);
                            }
                        }
                    }
                }
                Some(Role::ThreadUnsafe) => {
                    if let Callee::Direct(f) = callee {
                        let target = Target::Addr(super::Address {
                            base: super::Base::Hidden(*f),
                            range: super::ByteRange::sized(0, 1),
                            exact: true,
                        });
                        for kind in [AccessKind::Read, AccessKind::Write] {
                            acc.out.push(MemAccess {
                                target,
                                kind,
                                atomic: false,
                                ty: program.types.common.char_,
                                site: AccessSite::Hidden(*f),
                                after_call: false,
                                precise: true,
                                unpublished: false,
                                region: None,
                            });
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
                        let kind = if program.types.quals(pointee).contains(Quals::CONST) {
                            AccessKind::Read
                        } else {
                            AccessKind::Write
                        };
                        acc.pointee(a, kind, false, false);
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

    /// An access to the object `p` points to (through a library call).
    fn pointee(&mut self, p: &'p Expr, kind: AccessKind, atomic: bool, sized: bool) {
        let ty: TypeId = self
            .program
            .types
            .pointee(strip_casts(p).ty)
            .or_else(|| self.program.types.pointee(p.ty))
            .unwrap_or(self.program.types.common.void);
        let atomic = atomic || self.program.types.quals(ty).contains(Quals::ATOMIC);
        let targets = self.r.pointee_targets(p, sized);
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
