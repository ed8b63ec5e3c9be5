//! Callbacks that run later than their registration, made explicit in the CFG: exit handlers
//! (`atexit`: [`Runs::Exit`]) and callbacks a library keeps and runs from a later call that
//! drives their registry ([`Runs::Later`]: `glutDisplayFunc` runs from `glutMainLoop`).
//!
//! Before each call that drives a registry (for `exit`: each call of a function whose
//! specification drives `exit`, and each `return` of `main`), the pass inserts a node with one
//! self-loop edge per registered callback: `src → L`, `L → L` calling each callback (with
//! unknown arguments), `L → dst` the driving call itself. The callbacks thus run any number of
//! times, in any order, in the thread of the driving call, which over-approximates what the
//! library does. A call that *spawns* a registry (FUSE's multithreaded loop) starts them as
//! threads instead: the loop's edges call [`SPAWN`], a function the pass adds with the role of
//! a thread creation (`SPAWN(0, callback, 0)`), so each callback is a thread created any number
//! of times. A registry no call of the program drives runs its callbacks right after their
//! registration instead. Callbacks registered as `first` members (FUSE's `init`) run once, in
//! the driving thread, before the loop node: the library runs them before any other callback
//! of the registry. Callbacks registered as `last` members (FUSE's `destroy`) run once, in the
//! driving thread, right after the driving call (which returns once the others have ended).
//!
//! Registered functions are found syntactically: a function name (through casts), or, for a
//! callback stored in an object (`deep`), the functions in the static initialiser of the global
//! whose address is passed, in the initialisers of the globals of the object's struct type and
//! those assigned to members of that type anywhere in the program. A registration whose callback is none of these is recorded as an
//! [`Unsupported`] construct (the verdict cannot be `no-race`).

use super::cfg::{Callee, Edge, EdgeId, Node, NodeId, Op};
use super::expr::{ExprKind, Host, Var};
use super::types::TypeKind;
use super::visit::{strip_casts, walk_expr};
use super::{FuncId, Loc, Program, Unsupported};
use crate::model::library::Runs;
use crate::model::{Role, Roles};
use std::collections::BTreeMap;

/// The registry of exit handlers.
pub const EXIT: &str = "exit";

/// The name of the thread-creating function the pass adds for spawned callbacks.
pub const SPAWN: &str = "__racedar_spawn";

/// The callback functions a registration's argument `a` names (see the module documentation);
/// `None` when they cannot be told.
fn registered(program: &Program, a: &super::Expr, deep: bool) -> Option<Vec<FuncId>> {
    let inner = strip_casts(a);
    if let ExprKind::Func(f) = inner.kind {
        return Some(vec![f]);
    }
    // A null pointer or a constant like `SIG_IGN`, or no pointer at all: no callback.
    let types = &program.types;
    if inner.as_int().is_some() || (!types.is_pointer(a.ty) && !types.is_pointer(inner.ty)) {
        return Some(Vec::new());
    }
    if !deep {
        return None;
    }
    let out = struct_functions(program, a, |_| true);
    (!out.is_empty()).then_some(out)
}

/// The defined functions stored in the struct `a` points to, in members whose projection path
/// `keep` accepts: in the static initialiser of the global `a` points to, in the initialisers
/// of the globals of the struct type, and assigned to members of that type anywhere in the
/// program (a table of operations chosen at run time). Sorted.
fn struct_functions(
    program: &Program,
    a: &super::Expr,
    keep: impl Fn(&[super::expr::Proj]) -> bool,
) -> Vec<FuncId> {
    let types = &program.types;
    let inner = strip_casts(a);
    let mut out = Vec::new();
    let from_init = |g: &super::Global, out: &mut Vec<FuncId>| {
        for item in &g.init {
            if let super::InitValue::Expr(v) = &item.value
                && keep(&item.proj)
            {
                walk_expr(v, &mut |x| {
                    if let ExprKind::Func(f) = x.kind {
                        out.push(f);
                    }
                });
            }
        }
    };
    if let ExprKind::AddrOf(lv) = &inner.kind
        && let Host::Var(Var::Global(g)) = lv.host
    {
        from_init(program.global(g), &mut out);
    }
    let comp = [a.ty, inner.ty]
        .iter()
        .filter_map(|t| types.pointee(*t))
        .find_map(|t| match types.kind(t) {
            TypeKind::Comp(c) => Some(*c),
            _ => None,
        });
    if let Some(c) = comp {
        for g in &program.globals {
            if matches!(types.kind(g.ty), TypeKind::Comp(x) if *x == c) {
                from_init(g, &mut out);
            }
        }
        for f in &program.functions {
            let Some(cfg) = &f.body else { continue };
            for e in &cfg.edges {
                if let Op::Assign { lhs, rhs } = &e.op
                    && lhs
                        .proj
                        .iter()
                        .any(|p| matches!(p, super::expr::Proj::Field { comp, .. } if *comp == c))
                    && keep(&lhs.proj)
                    && let ExprKind::Func(g) = strip_casts(rhs).kind
                {
                    out.push(g);
                }
            }
        }
    }
    out.retain(|f| program.function(*f).body.is_some());
    out.sort();
    out.dedup();
    out
}

/// The functions stored in members named `names` of the struct argument `a` points to (the
/// [`crate::model::library::Callback::first`] or [`crate::model::library::Callback::last`]
/// members): in the static initialiser of the global it points to or of any global of the
/// struct type, or assigned to such a member. None without names.
fn named_members(program: &Program, a: &super::Expr, names: &[String]) -> Vec<FuncId> {
    if names.is_empty() {
        return Vec::new();
    }
    let types = &program.types;
    let named = |proj: &[super::expr::Proj]| {
        proj.iter()
            .rev()
            .find_map(|p| match p {
                super::expr::Proj::Field { comp, index } => types
                    .comp(*comp)
                    .fields
                    .get(*index as usize)
                    .and_then(|f| f.name.as_deref()),
                _ => None,
            })
            .is_some_and(|n| names.iter().any(|x| x == n))
    };
    struct_functions(program, a, named)
}

/// A call edge of a function.
type Site = (FuncId, EdgeId);

/// Inserts the calls of deferred callbacks (see the module documentation). Returns how many
/// driving statements got them.
pub fn insert_deferred_callbacks(program: &mut Program, roles: &mut Roles) -> usize {
    let main = program.function_by_name("main");
    // Registry → callbacks, and registrations per registry.
    let mut handlers: BTreeMap<String, Vec<FuncId>> = BTreeMap::new();
    // Registry → callbacks that run once, first ([`crate::model::library::Callback::first`]).
    let mut firsts: BTreeMap<String, Vec<FuncId>> = BTreeMap::new();
    // Registry → callbacks that run once, last ([`crate::model::library::Callback::last`]).
    let mut lasts: BTreeMap<String, Vec<FuncId>> = BTreeMap::new();
    let mut registrations: BTreeMap<String, Vec<Site>> = BTreeMap::new();
    let mut drivers: BTreeMap<String, Vec<Site>> = BTreeMap::new();
    let mut spawners: BTreeMap<String, Vec<Site>> = BTreeMap::new();
    let mut unsupported: Vec<Unsupported> = Vec::new();
    for (fi, f) in program.functions.iter().enumerate() {
        let func = FuncId(fi as u32);
        let Some(cfg) = &f.body else { continue };
        for (ei, e) in cfg.edges.iter().enumerate() {
            let site = (func, EdgeId(ei as u32));
            if Some(func) == main && matches!(e.op, Op::Return(_)) {
                drivers.entry(EXIT.to_string()).or_default().push(site);
                continue;
            }
            let Op::Call { args, .. } = &e.op else {
                continue;
            };
            if let Some(Role::Library(spec)) = roles.of_call(&e.op) {
                for r in &spec.drives {
                    drivers.entry(r.clone()).or_default().push(site);
                }
                for r in &spec.spawns {
                    spawners.entry(r.clone()).or_default().push(site);
                }
            }
            for cb in roles.callbacks(program, &e.op) {
                let registry = match cb.runs {
                    Runs::Exit => EXIT,
                    Runs::Later => cb.registry.unwrap_or_default(),
                    _ => continue,
                };
                let Some(a) = args.get(cb.arg) else { continue };
                match registered(program, a, cb.deep) {
                    Some(fs) => {
                        let (first, last) = (
                            named_members(program, a, cb.first),
                            named_members(program, a, cb.last),
                        );
                        handlers.entry(registry.to_string()).or_default().extend(
                            fs.into_iter()
                                .filter(|f| !first.contains(f) && !last.contains(f)),
                        );
                        firsts
                            .entry(registry.to_string())
                            .or_default()
                            .extend(first);
                        lasts.entry(registry.to_string()).or_default().extend(last);
                    }
                    None => {
                        let name =
                            e.op.direct_callee()
                                .map_or("?", |g| program.function(g).name.as_str());
                        unsupported.push(Unsupported {
                            loc: e.loc,
                            what: format!(
                                "a callback registered with '{name}' that is not a known function"
                            ),
                        });
                    }
                }
                registrations
                    .entry(registry.to_string())
                    .or_default()
                    .push(site);
            }
        }
    }
    // (site, after it, uncertain, spawned) → callbacks to insert there. Exit handlers surely
    // run at exit; a library need not run the callbacks it keeps.
    let mut insertions: BTreeMap<(Site, bool, bool, bool), Vec<FuncId>> = BTreeMap::new();
    // (site, after it) → callbacks to run once before the loop there.
    let mut preludes: BTreeMap<(Site, bool), Vec<FuncId>> = BTreeMap::new();
    // (site, after it) → callbacks to run once after the loop there.
    let mut postludes: BTreeMap<(Site, bool), Vec<FuncId>> = BTreeMap::new();
    for registry in firsts.keys().chain(lasts.keys()) {
        handlers.entry(registry.clone()).or_default();
    }
    for (registry, hs) in handlers {
        let first = firsts.get(&registry).cloned().unwrap_or_default();
        let last = lasts.get(&registry).cloned().unwrap_or_default();
        let driven = drivers.get(&registry).filter(|d| !d.is_empty());
        let spawned = spawners.get(&registry).filter(|d| !d.is_empty());
        let mut at: Vec<(Site, bool, bool)> = Vec::new();
        match (driven, spawned) {
            (None, None) => {
                // Nothing drives the registry: right after each registration.
                let regs = registrations.get(&registry).cloned().unwrap_or_default();
                at.extend(regs.into_iter().map(|s| (s, true, false)));
            }
            (d, sp) => {
                at.extend(d.into_iter().flatten().map(|s| (*s, false, false)));
                at.extend(sp.into_iter().flatten().map(|s| (*s, false, true)));
            }
        }
        let uncertain = registry != EXIT;
        for (site, after, spawn) in at {
            insertions
                .entry((site, after, uncertain, spawn))
                .or_default()
                .extend(hs.iter().copied());
            if !first.is_empty() {
                preludes
                    .entry((site, after))
                    .or_default()
                    .extend(first.iter().copied());
            }
            if !last.is_empty() {
                postludes
                    .entry((site, after))
                    .or_default()
                    .extend(last.iter().copied());
            }
        }
    }
    let n = insertions.len();
    let spawn = insertions
        .keys()
        .any(|k| k.3)
        .then(|| spawn_function(program, roles));
    for (((func, edge), after, uncertain, spawned), mut hs) in insertions {
        hs.sort();
        hs.dedup();
        let calls: Vec<Op> = hs
            .iter()
            .map(|h| match spawn.filter(|_| spawned) {
                Some(sp) => {
                    let types = &mut program.types;
                    let vp = types.common.void_ptr;
                    let fty = program.functions[h.0 as usize].ty;
                    let fp = program.types.pointer(fty);
                    Op::Call {
                        dest: None,
                        callee: Callee::Direct(sp),
                        args: vec![
                            super::Expr::int(0, vp),
                            super::Expr {
                                kind: ExprKind::Func(*h),
                                ty: fp,
                            },
                            super::Expr::int(0, vp),
                        ],
                    }
                }
                None => Op::Call {
                    dest: None,
                    callee: Callee::Direct(*h),
                    args: Vec::new(),
                },
            })
            .collect();
        // The first callbacks run once, before the loop, the last ones once after it (direct
        // calls in the driving thread, even where the others are spawned).
        let once = |fs: Option<Vec<FuncId>>| -> Vec<Op> {
            let mut fs = fs.unwrap_or_default();
            fs.sort();
            fs.dedup();
            fs.into_iter()
                .map(|h| Op::Call {
                    dest: None,
                    callee: Callee::Direct(h),
                    args: Vec::new(),
                })
                .collect()
        };
        let prelude = once(preludes.remove(&((func, edge), after)));
        let postlude = once(postludes.remove(&((func, edge), after)));
        if let Some(cfg) = program.functions[func.0 as usize].body.as_mut() {
            insert_loop(cfg, edge, [prelude, calls, postlude], after, uncertain);
        }
    }
    program.unsupported.extend(unsupported);
    program.unsupported.sort();
    program.unsupported.dedup();
    n
}

/// Adds the thread-creating function [`SPAWN`] (`SPAWN(thread-id pointer, entry, argument)`,
/// no body) and gives it the role of a thread creation; returns the one an earlier pass added,
/// if any ([`crate::ir::harness`] uses it too).
pub(crate) fn spawn_function(program: &mut Program, roles: &mut Roles) -> FuncId {
    if let Some(i) = program.functions.iter().position(|f| {
        f.name == SPAWN && f.body.is_none() && f.implicit && f.linkage == super::Linkage::Internal
    }) && matches!(roles.get(FuncId(i as u32)), Some(Role::ThreadCreate { .. }))
    {
        return FuncId(i as u32);
    }
    let types = &mut program.types;
    let int = types.common.int;
    let ty = types.plain(TypeKind::Function(super::types::FuncSig {
        ret: int,
        params: Box::new([]),
        variadic: false,
        prototyped: false,
    }));
    program.functions.push(super::Function {
        name: SPAWN.to_string(),
        ty,
        linkage: super::Linkage::Internal,
        params: Vec::new(),
        locals: Vec::new(),
        body: None,
        noreturn: false,
        implicit: true,
        loc: Loc::default(),
        specialised: None,
    });
    let f = FuncId(program.functions.len() as u32 - 1);
    roles.set(
        f,
        Role::ThreadCreate {
            thread_id: 0,
            entry: 1,
            arg: 2,
        },
    );
    f
}

/// Splits edge `e` with a node looping through the `calls` (before the edge's instruction, or
/// `after` it), entered through the `prelude` calls in sequence; the `postlude` calls follow
/// in sequence after the loop (after) or after the edge's instruction (before); `uncertain`:
/// the calls may not happen ([`super::cfg::Edge::uncertain`]).
fn insert_loop(
    cfg: &mut super::Cfg,
    e: EdgeId,
    [prelude, calls, postlude]: [Vec<Op>; 3],
    after: bool,
    uncertain: bool,
) {
    let Some(edge) = cfg.edges.get(e.0 as usize).cloned() else {
        return;
    };
    let l = NodeId(cfg.nodes.len() as u32);
    cfg.nodes.push(Node {
        loop_head: true,
        ..Node::default()
    });
    let loc: Loc = edge.loc;
    // From `from`, `ops` in sequence; returns the node after the last.
    let chain = |cfg: &mut super::Cfg, from: NodeId, ops: Vec<Op>| {
        let mut cur = from;
        for op in ops {
            let n = NodeId(cfg.nodes.len() as u32);
            cfg.nodes.push(Node::default());
            cfg.edges.push(Edge {
                src: cur,
                dst: n,
                op,
                loc,
                peel: edge.peel,
                uncertain,
            });
            cur = n;
        }
        cur
    };
    let skip = |cfg: &mut super::Cfg, src: NodeId, dst: NodeId| {
        cfg.edges.push(Edge {
            src,
            dst,
            op: Op::Skip,
            loc,
            peel: edge.peel,
            uncertain: false,
        });
    };
    // The original edge ends before the prelude (after), or starts from the loop node and
    // ends before the postlude (before: the driving call returns after the last callbacks,
    // which run once the spawned ones have ended).
    if after {
        let a = NodeId(cfg.nodes.len() as u32);
        cfg.nodes.push(Node::default());
        cfg.edges[e.0 as usize].dst = a;
        let entered = chain(cfg, a, prelude);
        skip(cfg, entered, l);
        let left = chain(cfg, l, postlude);
        skip(cfg, left, edge.dst);
    } else {
        cfg.edges[e.0 as usize].src = l;
        if !postlude.is_empty() {
            let m = NodeId(cfg.nodes.len() as u32);
            cfg.nodes.push(Node::default());
            cfg.edges[e.0 as usize].dst = m;
            let left = chain(cfg, m, postlude);
            skip(cfg, left, edge.dst);
        }
        let entered = chain(cfg, edge.src, prelude);
        skip(cfg, entered, l);
    }
    for op in calls {
        cfg.edges.push(Edge {
            src: l,
            dst: l,
            op,
            loc,
            peel: edge.peel,
            uncertain,
        });
    }
    cfg.rebuild_adjacency();
}
