//! Thread ids kept in a struct field (`struct worker { pthread_t tid; ... }`): whether nothing
//! but the create statements that fill it can change the field between the create and a later
//! join through it (`pthread_join(w[i]->tid, 0)`).
//!
//! The check is syntactic over the whole program and relies on C's effective-type rules
//! (C11 §6.5p7): the field's bytes can be written only through an lvalue naming the field, an
//! lvalue of a type containing the struct, an lvalue of the field's integer type (either
//! signedness) or a character type reached through a pointer, a create writing the id through
//! a pointer, or a library function writing through a pointer argument (freeing an object also
//! lets a later allocation reuse its bytes). Each of these must be absent, or be one of the
//! given create and free statements.

use crate::ir::types::{CompId, IntKind, TypeId, TypeKind, TypeTable};
use crate::ir::visit::{op_exprs, strip_casts, whole_local};
use crate::ir::{Callee, EdgeId, Expr, ExprKind, FuncId, Host, LocalId, Lval, Op, Program, Proj};
use crate::model::{Role, Roles};
use rustc_hash::FxHashSet;

/// Whether field `field` of struct `comp` is written by nothing but `creates` (create
/// statements storing an id into it, as `(function, edge)`), and no object that may hold the
/// field is freed or handed to a library function that writes, except by `frees`.
pub(super) fn written_only_by(
    program: &Program,
    roles: &Roles,
    comp: CompId,
    field: u32,
    creates: &[(FuncId, EdgeId)],
    frees: &[(FuncId, EdgeId)],
) -> bool {
    let types = &program.types;
    let Some(f) = types.comp(comp).fields.get(field as usize) else {
        return false;
    };
    let Some(id_kind) = types.int_kind(f.ty) else {
        return false;
    };
    let names_field = |lv: &Lval| {
        lv.proj
            .iter()
            .any(|p| matches!(p, Proj::Field { comp: c, index } if *c == comp && *index == field))
    };
    let (id_lo, id_hi) = (
        f.offset,
        f.offset + types.size_of(f.ty).unwrap_or(u64::MAX / 2),
    );
    // A member access `p->g…` through a pointer to a struct: it writes inside an object of
    // that struct (C11 §6.5.2.3), so not the field when the struct neither holds `comp` nor is
    // `comp` with `g`'s bytes apart from the field's.
    let other_member = |lv: &Lval| {
        let Host::Deref(p) = &lv.host else {
            return false;
        };
        let Some(Proj::Field { comp: c, index }) = lv.proj.first() else {
            return false;
        };
        if types.pointee(p.ty).map(|t| types.kind(t)) != Some(&TypeKind::Comp(*c)) {
            return false;
        }
        let Some(g) = types.comp(*c).fields.get(*index as usize) else {
            return false;
        };
        // The lvalue lies inside member `g`.
        if *c != comp {
            return !contains_comp(types, g.ty, comp, 0);
        }
        let Some(size) = types.size_of(g.ty) else {
            return false;
        };
        *index != field && (g.offset + size <= id_lo || g.offset >= id_hi)
    };
    // An lvalue that may write the field's bytes.
    let may_write = |lv: &Lval| {
        names_field(lv)
            || contains_comp(types, lv.ty, comp, 0)
            || (matches!(lv.host, Host::Deref(_))
                && aliases_int(types, lv.ty, id_kind)
                && !other_member(lv))
    };
    // A pointer argument through which a callee may write the field.
    let risky_pointer = |e: &Expr| {
        let ty = strip_casts(e).ty;
        let Some(pointee) = types.pointee(ty) else {
            return false;
        };
        matches!(types.kind(pointee), TypeKind::Void)
            || aliases_int(types, pointee, id_kind)
            || contains_comp(types, pointee, comp, 0)
    };
    for (fi, func) in program.functions.iter().enumerate() {
        let fid = FuncId(fi as u32);
        let Some(cfg) = &func.body else { continue };
        for (ei, e) in cfg.edges.iter().enumerate() {
            let here = (fid, EdgeId(ei as u32));
            let exempt_create = creates.contains(&here);
            // Addresses of the field exist only as the arguments of its creates.
            let mut addr = false;
            op_exprs(&e.op, &mut |x| {
                if let ExprKind::AddrOf(lv) = &x.kind
                    && names_field(lv)
                {
                    addr = true;
                }
            });
            if addr && !exempt_create {
                return false;
            }
            match &e.op {
                Op::Assign { lhs, .. } if may_write(lhs) => return false,
                Op::Asm { outputs, .. } if !outputs.is_empty() => return false,
                Op::Call { dest, callee, args } => {
                    if dest.as_ref().is_some_and(may_write) {
                        return false;
                    }
                    let written: Vec<&Expr> = match callee {
                        Callee::Indirect(_) => args.iter().collect(),
                        Callee::Direct(g) => {
                            let defined = program.function(*g).body.is_some();
                            match roles.get(*g) {
                                None if defined => Vec::new(),
                                None => args.iter().collect(),
                                Some(Role::ThreadCreate { thread_id, .. }) => {
                                    if exempt_create {
                                        Vec::new()
                                    } else {
                                        match args.get(*thread_id) {
                                            Some(a) if !named_object(a, cfg, roles) => vec![a],
                                            _ => Vec::new(),
                                        }
                                    }
                                }
                                Some(Role::Free { ptr } | Role::Realloc { ptr }) => {
                                    if frees.contains(&here) {
                                        Vec::new()
                                    } else {
                                        args.get(*ptr).into_iter().collect()
                                    }
                                }
                                Some(Role::Atomic { object }) => {
                                    args.get(*object).into_iter().collect()
                                }
                                Some(Role::Library(spec)) => {
                                    let (_, written) = spec.read_written(args.len());
                                    written.iter().filter_map(|k| args.get(*k)).collect()
                                }
                                Some(_) => Vec::new(),
                            }
                        }
                    };
                    if written.into_iter().any(risky_pointer) {
                        return false;
                    }
                }
                _ => {}
            }
        }
    }
    true
}

/// Whether an address argument names a variable's sub-object (`&v`, `&v.a[i]`, not the struct
/// field: the caller checks that) or an element of a fresh allocation a local holds
/// (`ids + i`, `&ids[i]`), so no object holding the field is written through it.
fn named_object(e: &Expr, cfg: &crate::ir::Cfg, roles: &Roles) -> bool {
    let fresh = |p: &Expr| {
        let p = match &strip_casts(p).kind {
            ExprKind::Binary(crate::ir::BinOp::PtrAdd, a, _) => a.as_ref(),
            _ => p,
        };
        crate::ir::visit::local_of(p).is_some_and(|l| fresh_allocations(cfg, roles, l))
    };
    match &strip_casts(e).kind {
        ExprKind::AddrOf(lv) => match &lv.host {
            Host::Var(_) => true,
            Host::Deref(p) => fresh(p),
        },
        _ => fresh(e),
    }
}

/// Whether an lvalue of type `ty` may access an object of integer kind `kind` (the same kind
/// of either signedness, or a character type).
fn aliases_int(types: &TypeTable, ty: TypeId, kind: IntKind) -> bool {
    match types.kind(ty) {
        TypeKind::Int(k) => {
            matches!(k, IntKind::Char | IntKind::SChar | IntKind::UChar)
                || unsigned_of(*k) == unsigned_of(kind)
        }
        _ => false,
    }
}

fn unsigned_of(k: IntKind) -> IntKind {
    match k {
        IntKind::SChar | IntKind::Char => IntKind::UChar,
        IntKind::Short => IntKind::UShort,
        IntKind::Int => IntKind::UInt,
        IntKind::Long => IntKind::ULong,
        IntKind::LongLong => IntKind::ULongLong,
        IntKind::Int128 => IntKind::UInt128,
        other => other,
    }
}

/// Whether type `ty` is or contains (as a member or element, at any depth) struct `comp`.
fn contains_comp(types: &TypeTable, ty: TypeId, comp: CompId, depth: u32) -> bool {
    if depth > 16 {
        return true;
    }
    match types.kind(ty) {
        TypeKind::Comp(c) => {
            *c == comp
                || types
                    .comp(*c)
                    .fields
                    .iter()
                    .any(|f| contains_comp(types, f.ty, comp, depth + 1))
        }
        TypeKind::Array { elem, .. } => contains_comp(types, *elem, comp, depth + 1),
        _ => false,
    }
}

/// Whether every write of local `l` in `cfg` stores a fresh allocation: an allocation call's
/// result, or a copy of a temporary every write of which is one.
pub(super) fn fresh_allocations(cfg: &crate::ir::Cfg, roles: &Roles, l: LocalId) -> bool {
    let mut taken = FxHashSet::default();
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |x| {
        taken.insert(x);
    });
    let writes = |x: LocalId| -> Vec<&Op> {
        cfg.edges
            .iter()
            .map(|e| &e.op)
            .filter(|op| {
                let mut w = false;
                crate::ir::visit::written_locals(op, &mut |y| w |= y == x);
                w
            })
            .collect()
    };
    let alloc = |op: &Op, x: LocalId| match op {
        Op::Call { dest: Some(d), .. } => {
            whole_local(d) == Some(x) && matches!(roles.of_call(op), Some(Role::Alloc))
        }
        _ => false,
    };
    let only_allocs = |x: LocalId| {
        let ws = writes(x);
        !taken.contains(&x) && !ws.is_empty() && ws.iter().all(|op| alloc(op, x))
    };
    let ws = writes(l);
    !taken.contains(&l)
        && !ws.is_empty()
        && ws.iter().all(|op| {
            alloc(op, l)
                || matches!(op, Op::Assign { lhs, rhs } if whole_local(lhs) == Some(l)
                    && crate::ir::visit::local_of(rhs).is_some_and(|t| t != l && only_allocs(t)))
        })
}
