//! Code a child process runs after `fork` (issue "Real programs", item 3).
//!
//! ```c
//! pid = fork();
//! if (pid == 0) { serve(); _exit(0); }   // the child: another process
//! children[n++] = pid;                   // the parent
//! ```
//!
//! A call of a function whose specification says `fork` returns 0 in a child process whose
//! only thread is the caller. The *child region* of such a call is the code dominated by the
//! branch on which its result (or a copy of it, a local written only by that copy) is zero:
//! the nodes of the function no path from its entry reaches without taking that branch, and
//! the function contexts entered only from child regions or from such contexts. The accesses
//! made there happen in another address space: they race with nothing of the parent's
//! threads. A child that creates threads of its own is not told apart (its code is analysed
//! as the parent's).

use crate::context::{FnCtxId, ThreadId};
use crate::ir::visit::strip_casts;
use crate::ir::{BinOp, EdgeId, Expr, ExprKind, FuncId, LocalId, NodeId, Op, Program, UnOp};
use crate::model::{Role, Roles};
use crate::threads::ThreadGraph;
use rustc_hash::{FxHashMap, FxHashSet};

/// The code child processes run (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct ChildCode {
    /// Per function, its nodes in child regions.
    nodes: FxHashMap<FuncId, Vec<bool>>,
    /// Per thread, the function contexts entered only from child regions.
    ctxs: Vec<FxHashSet<FnCtxId>>,
}

/// Whether `cond` taking `branch` says local `l` is zero (`l == 0`, `!l`, or `l` false).
fn says_zero(cond: &Expr, branch: bool, l: &FxHashSet<LocalId>) -> bool {
    let is_l = |e: &Expr| crate::ir::visit::local_of(e).is_some_and(|x| l.contains(&x));
    let e = strip_casts(cond);
    match &e.kind {
        ExprKind::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b) => {
            let zero = |x: &Expr| strip_casts(x).as_int() == Some(0);
            let test = (is_l(a) && zero(b)) || (is_l(b) && zero(a));
            test && (*op == BinOp::Eq) == branch
        }
        ExprKind::Unary(UnOp::LogNot, a) => is_l(a) && branch,
        _ => is_l(e) && !branch,
    }
}

/// The nodes of one function in child regions, if it has any.
fn child_nodes(program: &Program, roles: &Roles, func: FuncId) -> Option<Vec<bool>> {
    let cfg = program.function(func).body.as_ref()?;
    // Locals holding a fork result: the call's destination, and copies written only once.
    let mut results: FxHashSet<LocalId> = FxHashSet::default();
    for e in &cfg.edges {
        if let (Op::Call { dest: Some(d), .. }, Some(Role::Library(spec))) =
            (&e.op, roles.of_call(&e.op))
            && spec.fork
            && let Some(l) = crate::ir::visit::whole_local(d)
        {
            results.insert(l);
        }
    }
    if results.is_empty() {
        return None;
    }
    let mut writes: FxHashMap<LocalId, usize> = FxHashMap::default();
    for e in &cfg.edges {
        let written = match &e.op {
            Op::Assign { lhs, .. } => crate::ir::visit::whole_local(lhs),
            Op::Call { dest: Some(d), .. } => crate::ir::visit::whole_local(d),
            _ => None,
        };
        if let Some(l) = written {
            *writes.entry(l).or_default() += 1;
        }
    }
    let mut taken = FxHashSet::default();
    crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
        taken.insert(l);
    });
    results.retain(|l| writes.get(l) == Some(&1) && !taken.contains(l));
    loop {
        let before = results.len();
        for e in &cfg.edges {
            if let Op::Assign { lhs, rhs } = &e.op
                && let Some(x) = crate::ir::visit::whole_local(lhs)
                && crate::ir::visit::local_of(rhs).is_some_and(|y| results.contains(&y))
                && writes.get(&x) == Some(&1)
                && !taken.contains(&x)
            {
                results.insert(x);
            }
        }
        if results.len() == before {
            break;
        }
    }
    let mut region = vec![false; cfg.nodes.len()];
    let mut any = false;
    for (ei, e) in cfg.edges.iter().enumerate() {
        let Op::Assume { cond, branch } = &e.op else {
            continue;
        };
        if !says_zero(cond, *branch, &results) {
            continue;
        }
        // Nodes reachable from the entry avoiding this edge are not dominated by it.
        let skip = EdgeId(ei as u32);
        let mut seen = vec![false; cfg.nodes.len()];
        let mut stack = vec![cfg.entry];
        seen[cfg.entry.0 as usize] = true;
        while let Some(n) = stack.pop() {
            for &s in &cfg.node(n).succs {
                if s == skip {
                    continue;
                }
                let d = cfg.edge(s).dst;
                if !seen[d.0 as usize] {
                    seen[d.0 as usize] = true;
                    stack.push(d);
                }
            }
        }
        for (i, r) in region.iter_mut().enumerate() {
            if !seen[i] {
                *r = true;
                any = true;
            }
        }
    }
    // The exit node is the parent's too (a child that returns rejoins the common code only
    // through nodes the entry reaches without the branch, so this only matters for a child
    // that always exits).
    region[cfg.exit.0 as usize] = false;
    any.then_some(region)
}

impl ChildCode {
    /// Finds the child regions of a program's fork calls and the function contexts of each
    /// thread entered only from them.
    pub fn compute(program: &Program, roles: &Roles, graph: &ThreadGraph) -> ChildCode {
        let mut nodes = FxHashMap::default();
        for i in 0..program.functions.len() {
            let f = FuncId(i as u32);
            if let Some(r) = child_nodes(program, roles, f) {
                nodes.insert(f, r);
            }
        }
        if nodes.is_empty() {
            return ChildCode::default();
        }
        let in_region = |nodes: &FxHashMap<FuncId, Vec<bool>>, f: FuncId, n: NodeId| {
            nodes
                .get(&f)
                .is_some_and(|r| r.get(n.0 as usize).copied().unwrap_or(false))
        };
        let mut ctxs = Vec::with_capacity(graph.contexts.len());
        for tc in &graph.contexts {
            // Incoming calls of each context: (caller context, caller's node).
            let mut incoming: FxHashMap<FnCtxId, Vec<(FnCtxId, FuncId, NodeId)>> =
                FxHashMap::default();
            for ((c, e), targets) in &tc.calls {
                let func = tc.ctx(*c).func;
                let Some(src) = program
                    .function(func)
                    .body
                    .as_ref()
                    .and_then(|cfg| cfg.edges.get(e.0 as usize))
                    .map(|x| x.src)
                else {
                    continue;
                };
                for t in targets {
                    incoming.entry(t.ctx).or_default().push((*c, func, src));
                }
            }
            let mut child: FxHashSet<FnCtxId> = FxHashSet::default();
            loop {
                let before = child.len();
                for (t, ins) in &incoming {
                    if child.contains(t) || *t == tc.entry {
                        continue;
                    }
                    if ins
                        .iter()
                        .all(|(c, f, n)| child.contains(c) || in_region(&nodes, *f, *n))
                    {
                        child.insert(*t);
                    }
                }
                if child.len() == before {
                    break;
                }
            }
            ctxs.push(child);
        }
        let code = ChildCode { nodes, ctxs };
        // A child that starts threads: not told apart.
        for t in graph.threads.iter() {
            let Some(site) = t.site else { continue };
            for parent in &t.parents {
                let tc = graph.contexts(*parent);
                let node = program
                    .function(site.func)
                    .body
                    .as_ref()
                    .and_then(|cfg| cfg.edges.get(site.edge.0 as usize))
                    .map(|e| e.src);
                let Some(node) = node else { continue };
                let in_child = tc.ids().any(|c| {
                    tc.ctx(c).func == site.func && code.contains(*parent, c, site.func, node)
                });
                if in_child {
                    return ChildCode::default();
                }
            }
        }
        code
    }

    /// Whether node `node` of function `func`, in context `ctx` of `thread`, runs only in a
    /// child process.
    pub fn contains(&self, thread: ThreadId, ctx: FnCtxId, func: FuncId, node: NodeId) -> bool {
        if self.nodes.is_empty() {
            return false;
        }
        self.nodes
            .get(&func)
            .is_some_and(|r| r.get(node.0 as usize).copied().unwrap_or(false))
            || self
                .ctxs
                .get(thread.0 as usize)
                .is_some_and(|s| s.contains(&ctx))
    }
}
