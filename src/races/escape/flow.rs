//! Where the addresses of locals and of heap objects flow (see the parent module): per
//! function, a union-find over the *nodes* that may hold such an address (trackable locals,
//! the address of each local, the objects of each allocation site in a local), a flag per
//! class when some address of it escapes, and, between functions, which classes a call passes
//! to which parameter. A parameter escapes when its class does; a class escapes when it is
//! passed to an escaping parameter (a fixpoint over the call graph).

use crate::ir::types::TypeKind;
use crate::ir::visit::{strip_casts, walk_cfg_addr_taken};
use crate::ir::{
    BinOp, Callee, EdgeId, Expr, ExprKind, FuncId, Host, LocalId, Lval, Op, Program, UnOp, Var,
};
use crate::model::library::{Param, Pointer};
use crate::model::{Role, Roles};
use rustc_hash::{FxHashMap, FxHashSet};

/// Something that may hold an address the analysis tracks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Node {
    /// The value of a trackable local.
    Value(LocalId),
    /// The address of a local.
    Addr(LocalId),
    /// The objects allocated by a call into a local.
    Site(EdgeId),
}

/// The flow facts of one function.
#[derive(Default)]
struct FnFlow {
    nodes: FxHashMap<Node, u32>,
    parent: Vec<u32>,
    escapes: Vec<bool>,
    /// (class, callee, parameter position): the class is passed to that parameter.
    passes: Vec<(u32, FuncId, usize)>,
}

impl FnFlow {
    fn node(&mut self, n: Node) -> u32 {
        if let Some(&i) = self.nodes.get(&n) {
            return i;
        }
        let i = self.parent.len() as u32;
        self.parent.push(i);
        self.escapes.push(false);
        self.nodes.insert(n, i);
        i
    }

    fn find(&mut self, mut i: u32) -> u32 {
        while self.parent[i as usize] != i {
            let p = self.parent[i as usize];
            self.parent[i as usize] = self.parent[p as usize];
            i = p;
        }
        i
    }

    fn union(&mut self, a: u32, b: u32) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a as usize] = b;
            self.escapes[b as usize] |= self.escapes[a as usize];
        }
    }

    fn escape(&mut self, i: u32) {
        let r = self.find(i);
        self.escapes[r as usize] = true;
    }

    fn escaped(&mut self, n: Node) -> bool {
        match self.nodes.get(&n).copied() {
            Some(i) => {
                let r = self.find(i);
                self.escapes[r as usize]
            }
            None => false,
        }
    }
}

/// The result: escaped locals and the allocation sites whose objects stay private.
pub(super) struct Flow {
    /// Locals whose address may escape.
    pub escaped_locals: FxHashSet<(FuncId, LocalId)>,
    /// Allocation calls (into a local) whose objects never escape.
    pub private_sites: FxHashSet<(FuncId, EdgeId)>,
}

/// Per function, the locals whose value the flow tracks: not address-taken, not arrays.
fn trackable(program: &Program, func: FuncId) -> FxHashSet<LocalId> {
    let f = program.function(func);
    let Some(cfg) = &f.body else {
        return FxHashSet::default();
    };
    let mut taken = FxHashSet::default();
    walk_cfg_addr_taken(cfg, &mut |l| {
        taken.insert(l);
    });
    (0..f.locals.len() as u32)
        .map(LocalId)
        .filter(|l| {
            !taken.contains(l)
                && !matches!(program.types.kind(f.local(*l).ty), TypeKind::Array { .. })
        })
        .collect()
}

/// Whether a value of type `ty` read from memory may hold an address the flow tracks: a
/// pointer or an aggregate (an address kept in an integer object, `uintptr_t`, is the
/// documented assumption of the parent module).
fn may_hold_address(program: &Program, ty: crate::ir::TypeId) -> bool {
    matches!(
        program.types.kind(ty),
        TypeKind::Pointer(_) | TypeKind::Comp(_) | TypeKind::Array { .. } | TypeKind::Void
    )
}

/// The nodes whose addresses the value of `e` may carry. A node's class also stands for the
/// contents of its objects: a value loaded from a local's memory or through a pointer of a
/// class carries that class.
///
/// A value too narrow to hold an address (`(unsigned char)x`, an `int` on LP64) carries
/// nothing, and pointer arithmetic (`p + i`) carries its pointer operand, not the offset: an
/// address computed from another one keeps its object, and an integer that does not hold a
/// whole address cannot give it back.
fn carried(program: &Program, e: &Expr, track: &FxHashSet<LocalId>, out: &mut Vec<Node>) {
    let types = &program.types;
    if types.is_integer(e.ty)
        && types
            .size_of(e.ty)
            .is_some_and(|n| n < types.data_model.pointer_size())
    {
        return;
    }
    match &e.kind {
        ExprKind::Load(lv) => match &lv.host {
            Host::Var(Var::Local(l)) if lv.proj.is_empty() && track.contains(l) => {
                out.push(Node::Value(*l));
            }
            Host::Var(Var::Local(l)) => {
                if may_hold_address(program, lv.ty) {
                    out.push(Node::Addr(*l));
                }
            }
            Host::Var(Var::Global(_)) => {}
            Host::Deref(p) => {
                if may_hold_address(program, lv.ty) {
                    carried(program, p, track, out);
                }
            }
        },
        ExprKind::AddrOf(lv) => match &lv.host {
            Host::Var(Var::Local(l)) => out.push(Node::Addr(*l)),
            Host::Var(Var::Global(_)) => {}
            Host::Deref(p) => carried(program, p, track, out),
        },
        ExprKind::Cast(a) => carried(program, a, track, out),
        ExprKind::Unary(UnOp::LogNot, _) => {}
        ExprKind::Unary(_, a) => carried(program, a, track, out),
        ExprKind::Binary(op, a, b) => {
            if !matches!(
                op,
                BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge | BinOp::Eq | BinOp::Ne
            ) {
                let is_ptr = |x: &Expr| {
                    matches!(
                        types.kind(x.ty),
                        TypeKind::Pointer(_) | TypeKind::Array { .. }
                    )
                };
                // `p + i`, `p - i`: the pointer operand's object (`p - q` is an integer).
                let pointer_arith = is_ptr(e) && (is_ptr(a) != is_ptr(b));
                if !pointer_arith || is_ptr(a) {
                    carried(program, a, track, out);
                }
                if !pointer_arith || is_ptr(b) {
                    carried(program, b, track, out);
                }
            }
        }
        ExprKind::Int(_)
        | ExprKind::Float(_)
        | ExprKind::Str(_)
        | ExprKind::Func(_)
        | ExprKind::Unknown => {}
    }
}

/// The node whose class a store into `lv` puts the value in: the trackable local `lv` is, or
/// the local whose memory `lv` designates directly (`l.f`, `a[i]`); `None` for other memory
/// (globals, objects reached through pointers: the value escapes).
fn container(lv: &Lval, track: &FxHashSet<LocalId>) -> Option<Node> {
    match lv.host {
        Host::Var(Var::Local(l)) if lv.proj.is_empty() && track.contains(&l) => {
            Some(Node::Value(l))
        }
        Host::Var(Var::Local(l)) => Some(Node::Addr(l)),
        _ => None,
    }
}

/// Argument positions of a role whose pointer the callee may keep (see
/// [`super::non_escaping_args`]).
fn kept(role: &Role, n: usize) -> Vec<usize> {
    let safe = super::non_escaping_args(role, n);
    (0..n).filter(|i| !safe.contains(i)).collect()
}

/// Builds one function's flow facts.
fn function_flow(program: &Program, roles: &Roles, func: FuncId) -> FnFlow {
    let mut fl = FnFlow::default();
    let f = program.function(func);
    let Some(cfg) = &f.body else { return fl };
    let track = trackable(program, func);
    // Parameters are nodes from the start (callers pass into them).
    for p in &f.params {
        if track.contains(p) {
            fl.node(Node::Value(*p));
        }
    }
    let mut nodes = Vec::new();
    let mut flows_into = |fl: &mut FnFlow, e: &Expr, into: Option<u32>| {
        nodes.clear();
        carried(program, e, &track, &mut nodes);
        for n in nodes.iter() {
            let i = fl.node(*n);
            match into {
                Some(t) => fl.union(i, t),
                None => fl.escape(i),
            }
        }
    };
    for (ei, e) in cfg.edges.iter().enumerate() {
        let edge = EdgeId(ei as u32);
        match &e.op {
            Op::Skip | Op::Assume { .. } => {}
            Op::Assign { lhs, rhs } => {
                let into = container(lhs, &track).map(|n| fl.node(n));
                flows_into(&mut fl, rhs, into);
            }
            Op::Return(Some(x)) => flows_into(&mut fl, x, None),
            Op::Return(None) => {}
            Op::Asm { inputs, .. } => {
                for x in inputs {
                    flows_into(&mut fl, x, None);
                }
            }
            Op::Call { dest, callee, args } => {
                let dest_node = dest
                    .as_ref()
                    .and_then(|d| container(d, &track))
                    .map(|n| fl.node(n));
                match callee {
                    Callee::Indirect(_) => {
                        for a in args {
                            flows_into(&mut fl, a, None);
                        }
                    }
                    Callee::Direct(g) if program.function(*g).body.is_some() => {
                        // Into the callee's parameters.
                        for (k, a) in args.iter().enumerate() {
                            let mut ns = Vec::new();
                            carried(program, a, &track, &mut ns);
                            let into = program.function(*g).params.get(k).copied();
                            for n in ns {
                                let i = fl.node(n);
                                match into {
                                    Some(_) => fl.passes.push((i, *g, k)),
                                    // A variadic argument: read with va_arg, unseen.
                                    None => fl.escape(i),
                                }
                            }
                        }
                    }
                    Callee::Direct(g) => {
                        let role = roles.get(*g);
                        match role {
                            None => {
                                for a in args {
                                    flows_into(&mut fl, a, None);
                                }
                            }
                            Some(r) => {
                                let keep = kept(r, args.len());
                                for (k, a) in args.iter().enumerate() {
                                    if keep.contains(&k) {
                                        flows_into(&mut fl, a, None);
                                    }
                                }
                                if let Role::Library(spec) = r {
                                    // The result may be (a pointer into) an argument.
                                    let returned: Vec<usize> = match spec.returns {
                                        Pointer::Arg(n) => vec![n],
                                        Pointer::Unknown => (0..args.len()).collect(),
                                        _ => Vec::new(),
                                    };
                                    let pointer_result = dest
                                        .as_ref()
                                        .is_some_and(|d| may_hold_address(program, d.ty));
                                    if pointer_result {
                                        for n in returned {
                                            if let Some(a) = args.get(n) {
                                                flows_into(&mut fl, a, dest_node);
                                            }
                                        }
                                    }
                                    // Stored through an out-parameter (`strtok_r`'s saveptr
                                    // `&save` receives a pointer into its first argument):
                                    // into the class of a local whose address is passed,
                                    // else escaping.
                                    for (k, kind) in spec.stores() {
                                        let Pointer::Arg(n) = kind else { continue };
                                        let (Some(a), Some(out)) = (args.get(n), args.get(k))
                                        else {
                                            continue;
                                        };
                                        let into = match &strip_casts(out).kind {
                                            ExprKind::AddrOf(lv) => container(lv, &track),
                                            _ => None,
                                        }
                                        .map(|x| fl.node(x));
                                        flows_into(&mut fl, a, into);
                                    }
                                    // Callbacks receiving arguments.
                                    for cb in roles.callbacks(program, &e.op) {
                                        let target = args.get(cb.arg).and_then(|x| {
                                            match strip_casts(x).kind {
                                                ExprKind::Func(h)
                                                    if !cb.deep
                                                        && program.function(h).body.is_some() =>
                                                {
                                                    Some(h)
                                                }
                                                _ => None,
                                            }
                                        });
                                        for (i, p) in cb.params.iter().enumerate() {
                                            let Param::Arg(n) = p else { continue };
                                            let Some(a) = args.get(*n) else { continue };
                                            let mut ns = Vec::new();
                                            carried(program, a, &track, &mut ns);
                                            for x in ns {
                                                let id = fl.node(x);
                                                match target {
                                                    Some(h) => fl.passes.push((id, h, i)),
                                                    None => fl.escape(id),
                                                }
                                            }
                                        }
                                    }
                                }
                                if matches!(r, Role::Alloc | Role::Realloc { .. })
                                    && let Some(d) = dest_node
                                {
                                    let site = fl.node(Node::Site(edge));
                                    fl.union(site, d);
                                } else if matches!(r, Role::Library(s) if matches!(s.returns, Pointer::Fresh | Pointer::ThreadStatic))
                                    && let Some(d) = dest_node
                                {
                                    let site = fl.node(Node::Site(edge));
                                    fl.union(site, d);
                                }
                            }
                        }
                    }
                }
                // A result stored into memory: an allocation's objects escape with it.
                if dest.is_some() && dest_node.is_none() {
                    let site = fl.node(Node::Site(edge));
                    fl.escape(site);
                }
            }
        }
    }
    fl
}

/// Computes the flow facts of the whole program.
pub(super) fn compute(program: &Program, roles: &Roles) -> Flow {
    let n = program.functions.len();
    let mut flows: Vec<FnFlow> = (0..n)
        .map(|i| function_flow(program, roles, FuncId(i as u32)))
        .collect();
    // Parameters that escape, to a fixpoint.
    loop {
        let mut changed = false;
        for fi in 0..n {
            let passes = std::mem::take(&mut flows[fi].passes);
            for &(class, g, k) in &passes {
                let Some(p) = program.function(g).params.get(k).copied() else {
                    continue;
                };
                let callee_escapes = if g.0 as usize == fi {
                    flows[fi].escaped(Node::Value(p))
                } else {
                    match flows.get_mut(g.0 as usize) {
                        // A parameter the callee does not track (address-taken): escapes.
                        Some(cf) => {
                            !cf.nodes.contains_key(&Node::Value(p)) || cf.escaped(Node::Value(p))
                        }
                        None => true,
                    }
                };
                let r = flows[fi].find(class);
                if callee_escapes && !flows[fi].escapes[r as usize] {
                    flows[fi].escapes[r as usize] = true;
                    changed = true;
                }
            }
            flows[fi].passes = passes;
        }
        if !changed {
            break;
        }
    }
    let mut out = Flow {
        escaped_locals: FxHashSet::default(),
        private_sites: FxHashSet::default(),
    };
    for (fi, fl) in flows.iter_mut().enumerate() {
        let func = FuncId(fi as u32);
        let keys: Vec<Node> = fl.nodes.keys().copied().collect();
        for k in keys {
            match k {
                Node::Addr(l) => {
                    if fl.escaped(k) {
                        out.escaped_locals.insert((func, l));
                    }
                }
                Node::Site(e) => {
                    if !fl.escaped(k) {
                        out.private_sites.insert((func, e));
                    }
                }
                Node::Value(_) => {}
            }
        }
    }
    out
}
