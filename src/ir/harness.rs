//! Library mode: a synthetic `main` that calls a library's entry functions from any number of
//! threads at once (issue 21 item 2; DESIGN.md, "Pipeline": "entries: main, or in library
//! mode every exported function (any number of threads)").
//!
//! Code without `main` (or any code, when `racedar check --entry FUNC` names the entries) is
//! analysed as a library whose entry functions other code may call concurrently. The pass
//! adds, after the thread loops were peeled and the thread functions specialised:
//!
//! - per entry `F`, a thread routine [`routine_name`] (`F (library entry)`, the name reports
//!   give its threads) that calls `F` once. Each pointer parameter gets a *fresh object* of
//!   the routine's own (a local: a struct, or an array of [`ELEMENTS`] elements of a scalar or
//!   pointer type, or [`OPAQUE_BYTES`] bytes for `void` and incomplete types), and each
//!   pointer member of such a struct points to a fresh object of its own too; so memory
//!   reached only through the arguments is private to the calling thread, the usual
//!   thread-safety contract "distinct objects may be used concurrently". Objects two levels
//!   behind an argument are left unknown (the escape analysis follows one level,
//!   [`crate::races::escape`]), as are the other parameters (uninitialised locals: any value).
//! - the harness [`HARNESS`] (the thread everything starts from) with one node looping
//!   through a thread creation per routine (the thread-creating function of
//!   [`crate::ir::deferred::SPAWN`]): every routine is a non-unique thread, created any number
//!   of times, in parallel with all the others and with itself.
//!
//! Globals start from their initial values (nothing runs before the entries). The names of
//! the added functions contain spaces, so no C symbol can clash with them. The pipeline then
//! starts from [`HARNESS`] instead of `main` and records that races found this way rest on an
//! assumption ([`crate::pipeline`]: never `must`, the verdict at best `no-race`).

use super::cfg::{Callee, Cfg, Edge, Node, NodeId, Op};
use super::expr::{Expr, ExprKind, Host, Lval, Proj, Var};
use super::types::{ArrayLen, TypeId, TypeKind};
use super::{FuncId, Function, Linkage, Loc, Local, LocalId, LocalKind, Program};
use crate::model::Roles;

/// The name of the harness function threads start from in library mode.
pub const HARNESS: &str = "library entries";

/// Elements of the fresh array behind a pointer parameter to a scalar or pointer.
pub const ELEMENTS: u64 = 16;

/// Bytes of the fresh object behind a `void *` parameter or a pointer to an incomplete type.
pub const OPAQUE_BYTES: u64 = 64;

/// The name of the thread routine that calls entry `entry` (and so of its threads in reports).
pub fn routine_name(entry: &str) -> String {
    format!("{entry} (library entry)")
}

/// The harness function of a program in library mode, if the pass added one.
pub fn harness(program: &Program) -> Option<FuncId> {
    program
        .functions
        .iter()
        .position(|f| f.name == HARNESS && f.body.is_some())
        .map(|i| FuncId(i as u32))
}

/// Whether `func` is the harness (a thread created there is a library entry's thread).
pub fn is_harness(program: &Program, func: FuncId) -> bool {
    program.function(func).name == HARNESS
}

/// Entry functions chosen automatically beyond this number are left out (each entry is a
/// thread whose analyses cost about the size of the code it reaches; a library of hundreds of
/// externally visible functions would otherwise take minutes). The run says so
/// ([`left_out`]) and `--entry` names others.
pub const MAX_AUTO_ENTRIES: usize = 3;

/// The functions library mode may take as entries without `--entry`: those with a body and
/// external linkage other than `main` that the concurrency model gives no role and no other
/// function calls directly (an API function another one calls is analysed inside its
/// caller's thread too), in program order; all of the first kind when every one is called.
fn candidates(program: &Program, roles: &Roles) -> Vec<FuncId> {
    let all: Vec<FuncId> = program
        .functions
        .iter()
        .enumerate()
        .filter(|(i, f)| {
            f.body.is_some()
                && f.linkage == Linkage::External
                && f.specialised.is_none()
                && f.name != "main"
                && roles.get(FuncId(*i as u32)).is_none()
        })
        .map(|(i, _)| FuncId(i as u32))
        .collect();
    let called: rustc_hash::FxHashSet<FuncId> = program
        .functions
        .iter()
        .filter_map(|f| f.body.as_ref())
        .flat_map(|c| c.edges.iter().filter_map(|e| e.op.direct_callee()))
        .collect();
    let roots: Vec<FuncId> = all
        .iter()
        .copied()
        .filter(|f| !called.contains(f))
        .collect();
    if roots.is_empty() { all } else { roots }
}

/// How many automatically chosen entries [`entries`] leaves out ([`MAX_AUTO_ENTRIES`]) and
/// how many there were; `None` when none is left out or `--entry` names them.
pub fn left_out(program: &Program, roles: &Roles, names: &[String]) -> Option<(usize, usize)> {
    if !names.is_empty() {
        return None;
    }
    let n = candidates(program, roles).len();
    (n > MAX_AUTO_ENTRIES).then(|| (n - MAX_AUTO_ENTRIES, n))
}

/// The entry functions of library mode: the functions named in `names` (`--entry`, in
/// order, duplicates once), or, when `names` is empty, the first [`MAX_AUTO_ENTRIES`] of the
/// externally visible functions no other function calls (see [`candidates`]).
///
/// # Errors
/// The first name of `names` that is not a function with a body:
/// `--entry NAME: no function with a body of that name`.
pub fn entries(program: &Program, roles: &Roles, names: &[String]) -> Result<Vec<FuncId>, String> {
    if names.is_empty() {
        let mut c = candidates(program, roles);
        c.truncate(MAX_AUTO_ENTRIES);
        return Ok(c);
    }
    let mut out = Vec::new();
    for n in names {
        let f = program
            .functions
            .iter()
            .position(|f| &f.name == n && f.body.is_some() && f.linkage != Linkage::None)
            .map(|i| FuncId(i as u32))
            .ok_or_else(|| format!("--entry {n}: no function with a body of that name"))?;
        if !out.contains(&f) {
            out.push(f);
        }
    }
    Ok(out)
}

/// Adds the harness and one thread routine per entry (module documentation); returns the
/// harness.
pub fn add_harness(program: &mut Program, roles: &mut Roles, entries: &[FuncId]) -> FuncId {
    let spawn = super::deferred::spawn_function(program, roles);
    let routines: Vec<(FuncId, Loc)> = entries
        .iter()
        .map(|&e| (add_routine(program, e), program.function(e).loc))
        .collect();
    let types = &mut program.types;
    let void = types.common.void;
    let vp = types.common.void_ptr;
    let ty = types.plain(TypeKind::Function(super::types::FuncSig {
        ret: void,
        params: Box::new([]),
        variadic: false,
        prototyped: true,
    }));
    // entry → L (loop head, one self-loop per routine) → exit.
    let (entry, l, exit) = (NodeId(0), NodeId(1), NodeId(2));
    let mut cfg = Cfg {
        nodes: vec![
            Node::default(),
            Node {
                loop_head: true,
                ..Node::default()
            },
            Node::default(),
        ],
        edges: Vec::new(),
        entry,
        exit,
    };
    cfg.edges.push(edge(entry, l, Op::Skip, Loc::default()));
    for &(r, loc) in &routines {
        let fp = program.types.pointer(program.function(r).ty);
        let op = Op::Call {
            dest: None,
            callee: Callee::Direct(spawn),
            args: vec![
                Expr::int(0, vp),
                Expr {
                    kind: ExprKind::Func(r),
                    ty: fp,
                },
                Expr::int(0, vp),
            ],
        };
        cfg.edges.push(edge(l, l, op, loc));
    }
    cfg.edges
        .push(edge(l, exit, Op::Return(None), Loc::default()));
    cfg.rebuild_adjacency();
    program.functions.push(Function {
        name: HARNESS.to_string(),
        ty,
        linkage: Linkage::Internal,
        params: Vec::new(),
        locals: Vec::new(),
        body: Some(cfg),
        noreturn: false,
        implicit: false,
        loc: Loc::default(),
        specialised: None,
    });
    FuncId(program.functions.len() as u32 - 1)
}

fn edge(src: NodeId, dst: NodeId, op: Op, loc: Loc) -> Edge {
    Edge {
        src,
        dst,
        op,
        loc,
        peel: 0,
        uncertain: false,
    }
}

/// A fresh object for a pointer to `pointee`: its type, and whether it is an array (so the
/// argument is the address of element 0). `None` for a pointer to a function.
fn fresh_type(program: &mut Program, pointee: TypeId) -> Option<(TypeId, bool)> {
    let types = &mut program.types;
    match types.kind(pointee) {
        TypeKind::Function(_) => None,
        TypeKind::Comp(_) if types.size_of(pointee).is_some() => Some((pointee, false)),
        TypeKind::Int(_) | TypeKind::Float(_) | TypeKind::Complex(_) | TypeKind::Pointer(_) => {
            let elem = pointee;
            Some((
                types.plain(TypeKind::Array {
                    elem,
                    len: ArrayLen::Fixed(ELEMENTS),
                }),
                true,
            ))
        }
        TypeKind::Array { .. } if types.size_of(pointee).is_some() => Some((pointee, false)),
        // void, an incomplete struct or array: bytes.
        _ => {
            let elem = types.common.char_;
            Some((
                types.plain(TypeKind::Array {
                    elem,
                    len: ArrayLen::Fixed(OPAQUE_BYTES),
                }),
                true,
            ))
        }
    }
}

/// The address of fresh local `local` of type `ty` (element 0 of an array) converted to
/// pointer type `to`.
fn address(program: &mut Program, local: LocalId, ty: TypeId, array: bool, to: TypeId) -> Expr {
    let types = &mut program.types;
    let (lv, elem) = match types.kind(ty) {
        TypeKind::Array { elem, .. } if array => {
            let elem = *elem;
            let idx = Expr::int(0, types.common.long);
            (
                Lval {
                    host: Host::Var(Var::Local(local)),
                    proj: vec![Proj::Index(Box::new(idx))],
                    ty: elem,
                },
                elem,
            )
        }
        _ => (Lval::var(Var::Local(local), ty), ty),
    };
    let ptr = types.pointer(elem);
    let e = Expr {
        kind: ExprKind::AddrOf(Box::new(lv)),
        ty: ptr,
    };
    if ptr == to {
        e
    } else {
        Expr {
            kind: ExprKind::Cast(Box::new(e)),
            ty: to,
        }
    }
}

/// Adds the thread routine of entry `entry` (module documentation).
fn add_routine(program: &mut Program, entry: FuncId) -> FuncId {
    let f = program.function(entry);
    let name = routine_name(&f.name);
    let loc = f.loc;
    let params: Vec<(String, TypeId)> = f
        .params
        .iter()
        .map(|&p| (f.local(p).name.clone(), f.local(p).ty))
        .collect();
    let mut locals: Vec<Local> = Vec::new();
    let new_local = |locals: &mut Vec<Local>, name: String, ty: TypeId| {
        locals.push(Local {
            name,
            ty,
            kind: LocalKind::Var,
            loc,
        });
        LocalId(locals.len() as u32 - 1)
    };
    let mut ops: Vec<Op> = Vec::new();
    let mut args: Vec<Expr> = Vec::new();
    for (pname, pty) in params {
        let pty = program.types.unqualified(pty);
        let fresh = program
            .types
            .pointee(pty)
            .map(|t| program.types.unqualified(t))
            .and_then(|t| fresh_type(program, t));
        let Some((oty, array)) = fresh else {
            // Not a pointer to an object: any value.
            let l = new_local(&mut locals, format!("<argument {pname}>"), pty);
            args.push(Expr {
                kind: ExprKind::Load(Box::new(Lval::var(Var::Local(l), pty))),
                ty: pty,
            });
            continue;
        };
        let obj = new_local(&mut locals, format!("<object at {pname}>"), oty);
        // The pointer members of a struct object point to fresh objects of their own.
        if !array && let TypeKind::Comp(c) = program.types.kind(oty) {
            let comp = program.types.comp(*c);
            let struct_ = comp.kind == super::types::CompKind::Struct;
            let cid = *c;
            let fields: Vec<(u32, Option<String>, TypeId)> = comp
                .fields
                .iter()
                .enumerate()
                .filter(|_| struct_)
                .map(|(i, fl)| (i as u32, fl.name.clone(), fl.ty))
                .collect();
            for (index, fname, fty) in fields {
                let fty_u = program.types.unqualified(fty);
                let Some(target) = program.types.pointee(fty_u) else {
                    continue;
                };
                let target = program.types.unqualified(target);
                let Some((mty, marray)) = fresh_type(program, target) else {
                    continue;
                };
                let fname = fname.unwrap_or_else(|| format!("#{index}"));
                let m = new_local(&mut locals, format!("<object at {pname}->{fname}>"), mty);
                let rhs = address(program, m, mty, marray, fty_u);
                ops.push(Op::Assign {
                    lhs: Lval {
                        host: Host::Var(Var::Local(obj)),
                        proj: vec![Proj::Field { comp: cid, index }],
                        ty: fty,
                    },
                    rhs,
                });
            }
        }
        args.push(address(program, obj, oty, array, pty));
    }
    ops.push(Op::Call {
        dest: None,
        callee: Callee::Direct(entry),
        args,
    });
    ops.push(Op::Return(None));
    let n = ops.len();
    let mut cfg = Cfg {
        nodes: vec![Node::default(); n + 1],
        edges: ops
            .into_iter()
            .enumerate()
            .map(|(i, op)| edge(NodeId(i as u32), NodeId(i as u32 + 1), op, loc))
            .collect(),
        entry: NodeId(0),
        exit: NodeId(n as u32),
    };
    cfg.rebuild_adjacency();
    let types = &mut program.types;
    let void = types.common.void;
    let ty = types.plain(TypeKind::Function(super::types::FuncSig {
        ret: void,
        params: Box::new([]),
        variadic: false,
        prototyped: true,
    }));
    program.functions.push(Function {
        name,
        ty,
        linkage: Linkage::Internal,
        params: Vec::new(),
        locals,
        body: Some(cfg),
        noreturn: false,
        implicit: false,
        loc,
        specialised: None,
    });
    FuncId(program.functions.len() as u32 - 1)
}
