//! Building one function's control-flow graph.
//!
//! Lowering appends edges at the *current* node; jumps (`goto`, `break`, `return`) leave a fresh
//! node with no predecessor as the current one, so code after them is unreachable and pruned.
//! [`FnBuilder::finish`] forwards chains of `skip` edges, drops unreachable nodes, numbers nodes
//! in reverse postorder and marks loop heads (targets of retreating edges).

use crate::ir::cfg::{Cfg, Edge, EdgeId, Node, NodeId, Op};
use crate::ir::expr::Expr;
use crate::ir::{Loc, Local, LocalId, LocalKind, TypeId};
use rustc_hash::FxHashMap;

/// A `case` label's values.
#[derive(Clone, Copy, Debug)]
pub enum CaseLabel {
    /// `case v:`.
    Value(i128),
    /// GNU `case lo ... hi:` (inclusive).
    Range(i128, i128),
}

/// The cases collected while lowering a `switch` body.
#[derive(Clone, Debug, Default)]
pub struct SwitchCtx {
    /// Each case label with its node and location, in source order.
    pub cases: Vec<(CaseLabel, NodeId, Loc)>,
    /// The `default:` node.
    pub default: Option<NodeId>,
}

/// A named label of the function.
#[derive(Clone, Copy, Debug)]
struct Label {
    node: NodeId,
    defined: bool,
    first_use: Loc,
}

/// A position to return to after a dry run (see [`FnBuilder::mark`]).
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    nodes: u32,
    edges: usize,
    locals: usize,
    cur: NodeId,
}

/// The CFG and locals of the function being lowered.
#[derive(Clone, Debug)]
pub struct FnBuilder {
    /// Parameters, variables and temporaries created so far.
    pub locals: Vec<Local>,
    n_nodes: u32,
    edges: Vec<Edge>,
    /// Where the next instruction goes.
    pub cur: NodeId,
    /// Entry node.
    pub entry: NodeId,
    /// Exit node (target of every return).
    pub exit: NodeId,
    labels: FxHashMap<String, Label>,
    /// `break` targets, innermost last.
    pub breaks: Vec<NodeId>,
    /// `continue` targets, innermost last.
    pub continues: Vec<NodeId>,
    /// Enclosing `switch` statements, innermost last.
    pub switches: Vec<SwitchCtx>,
    /// Declared return type.
    pub ret_ty: TypeId,
    /// Lengths of the variable-length dimensions of local arrays (innermost first).
    pub vla_lengths: FxHashMap<LocalId, Vec<Expr>>,
    temps: u32,
}

impl FnBuilder {
    /// A builder for a function returning `ret_ty`: entry and exit nodes exist, the current node
    /// is the entry.
    pub fn new(ret_ty: TypeId) -> FnBuilder {
        FnBuilder {
            locals: Vec::new(),
            n_nodes: 2,
            edges: Vec::new(),
            cur: NodeId(0),
            entry: NodeId(0),
            exit: NodeId(1),
            labels: FxHashMap::default(),
            breaks: Vec::new(),
            continues: Vec::new(),
            switches: Vec::new(),
            ret_ty,
            vla_lengths: FxHashMap::default(),
            temps: 0,
        }
    }

    /// A fresh node with no edges.
    pub fn new_node(&mut self) -> NodeId {
        self.n_nodes += 1;
        NodeId(self.n_nodes - 1)
    }

    /// Adds an edge.
    pub fn edge(&mut self, src: NodeId, dst: NodeId, op: Op, loc: Loc) {
        self.edges.push(Edge {
            src,
            dst,
            op,
            loc,
            peel: 0,
            uncertain: false,
        });
    }

    /// Appends `op` at the current node; the current node becomes its target.
    pub fn emit(&mut self, op: Op, loc: Loc) {
        let next = self.new_node();
        self.edge(self.cur, next, op, loc);
        self.cur = next;
    }

    /// Jumps from the current node to `target`; the current node becomes a fresh unreachable
    /// one.
    pub fn jump(&mut self, target: NodeId, loc: Loc) {
        self.edge(self.cur, target, Op::Skip, loc);
        self.cur = self.new_node();
    }

    /// Adds a local and returns its id.
    pub fn add_local(&mut self, name: String, ty: TypeId, kind: LocalKind, loc: Loc) -> LocalId {
        self.locals.push(Local {
            name,
            ty,
            kind,
            loc,
        });
        LocalId(self.locals.len() as u32 - 1)
    }

    /// A fresh temporary of type `ty`.
    pub fn temp(&mut self, ty: TypeId, loc: Loc) -> LocalId {
        self.temps += 1;
        let name = format!("tmp#{}", self.temps);
        self.add_local(name, ty, LocalKind::Temp, loc)
    }

    /// The node of label `name` (created on first use).
    pub fn label(&mut self, name: &str, loc: Loc) -> NodeId {
        if let Some(l) = self.labels.get(name) {
            return l.node;
        }
        let node = self.new_node();
        self.labels.insert(
            name.to_string(),
            Label {
                node,
                defined: false,
                first_use: loc,
            },
        );
        node
    }

    /// Marks label `name` as defined; returns false if it was already.
    pub fn define_label(&mut self, name: &str, loc: Loc) -> (NodeId, bool) {
        let node = self.label(name, loc);
        let l = self
            .labels
            .get_mut(name)
            .map(|l| std::mem::replace(&mut l.defined, true));
        (node, l != Some(true))
    }

    /// A label used by `goto` but never defined, with its first use.
    pub fn undefined_label(&self) -> Option<(String, Loc)> {
        let mut undefined: Vec<_> = self
            .labels
            .iter()
            .filter(|(_, l)| !l.defined)
            .map(|(n, l)| (n.clone(), l.first_use))
            .collect();
        undefined.sort_by_key(|(_, loc)| *loc);
        undefined.into_iter().next()
    }

    /// The current size, to undo a dry run with [`FnBuilder::rollback`].
    pub fn mark(&self) -> Mark {
        Mark {
            nodes: self.n_nodes,
            edges: self.edges.len(),
            locals: self.locals.len(),
            cur: self.cur,
        }
    }

    /// Whether an edge was added since `m`.
    pub fn emitted_since(&self, m: Mark) -> bool {
        self.edges.len() > m.edges
    }

    /// Forgets every node, edge and local added since `m`.
    pub fn rollback(&mut self, m: Mark) {
        self.n_nodes = m.nodes;
        self.edges.truncate(m.edges);
        self.locals.truncate(m.locals);
        self.cur = m.cur;
    }

    /// Finishes the graph (see the module documentation) and returns the locals and the CFG.
    pub fn finish(self) -> (Vec<Local>, Cfg) {
        let n = self.n_nodes as usize;
        // 1. Forward nodes whose only outgoing edge is a skip to another node.
        let mut out_count = vec![0u32; n];
        for e in &self.edges {
            out_count[e.src.0 as usize] += 1;
        }
        let mut fwd: Vec<Option<NodeId>> = vec![None; n];
        for e in &self.edges {
            if matches!(e.op, Op::Skip) && e.src != e.dst && out_count[e.src.0 as usize] == 1 {
                fwd[e.src.0 as usize] = Some(e.dst);
            }
        }
        // Resolve chains, breaking cycles of skips (`l: goto l;`-like loops).
        let mut resolved: Vec<NodeId> = (0..n as u32).map(NodeId).collect();
        let mut state = vec![0u8; n]; // 0 = todo, 1 = in progress, 2 = done
        for start in 0..n {
            if state[start] == 2 {
                continue;
            }
            let mut path = Vec::new();
            let mut cur = start;
            let target = loop {
                if state[cur] == 2 {
                    break resolved[cur];
                }
                if state[cur] == 1 {
                    // Cycle: stop forwarding at this node.
                    fwd[cur] = None;
                    break NodeId(cur as u32);
                }
                state[cur] = 1;
                path.push(cur);
                match fwd[cur] {
                    Some(next) => cur = next.0 as usize,
                    None => break NodeId(cur as u32),
                }
            };
            for p in path {
                resolved[p] = if fwd[p].is_some() {
                    target
                } else {
                    NodeId(p as u32)
                };
                state[p] = 2;
            }
        }
        let entry = resolved[self.entry.0 as usize];
        let exit = self.exit;
        let mut edges: Vec<Edge> = Vec::with_capacity(self.edges.len());
        for mut e in self.edges {
            if fwd[e.src.0 as usize].is_some() {
                continue; // the forwarded skip itself
            }
            e.src = resolved[e.src.0 as usize];
            e.dst = resolved[e.dst.0 as usize];
            edges.push(e);
        }
        // 2. Reverse postorder from the entry over the remaining edges.
        let mut succs: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, e) in edges.iter().enumerate() {
            succs[e.src.0 as usize].push(i);
        }
        let mut visited = vec![false; n];
        let mut post = Vec::new();
        let mut stack: Vec<(usize, usize)> = vec![(entry.0 as usize, 0)];
        visited[entry.0 as usize] = true;
        while let Some(top) = stack.last_mut() {
            let (node, i) = *top;
            if i < succs[node].len() {
                top.1 += 1;
                let dst = edges[succs[node][i]].dst.0 as usize;
                if !visited[dst] {
                    visited[dst] = true;
                    stack.push((dst, 0));
                }
            } else {
                post.push(node);
                stack.pop();
            }
        }
        post.reverse();
        if !visited[exit.0 as usize] {
            post.push(exit.0 as usize); // a function that never returns keeps its exit
        }
        let mut number = vec![u32::MAX; n];
        for (i, &old) in post.iter().enumerate() {
            number[old] = i as u32;
        }
        // 3. Renumber, keep edges between kept nodes, in source order.
        let mut cfg = Cfg {
            nodes: vec![Node::default(); post.len()],
            edges: Vec::with_capacity(edges.len()),
            entry: NodeId(number[entry.0 as usize]),
            exit: NodeId(number[exit.0 as usize]),
        };
        for mut e in edges {
            let (s, d) = (number[e.src.0 as usize], number[e.dst.0 as usize]);
            if s == u32::MAX || d == u32::MAX {
                continue;
            }
            e.src = NodeId(s);
            e.dst = NodeId(d);
            let id = EdgeId(cfg.edges.len() as u32);
            cfg.nodes[s as usize].succs.push(id);
            cfg.nodes[d as usize].preds.push(id);
            if d <= s {
                cfg.nodes[d as usize].loop_head = true;
            }
            cfg.edges.push(e);
        }
        (self.locals, cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::types::{DataModel, TypeTable};

    #[test]
    fn skips_are_forwarded_and_dead_code_dropped() {
        let t = TypeTable::new(DataModel::Lp64);
        let mut b = FnBuilder::new(t.common.void);
        let l = Loc::default();
        let join = b.new_node();
        b.jump(join, l); // entry -skip-> join: entry is forwarded
        b.emit(Op::Return(None), l); // dead
        b.cur = join;
        let exit = b.exit;
        b.edge(join, exit, Op::Return(None), l);
        let (_, cfg) = b.finish();
        assert_eq!(cfg.nodes.len(), 2);
        assert_eq!(cfg.edges.len(), 1);
        assert_eq!(cfg.edges[0].op, Op::Return(None));
    }

    #[test]
    fn loop_heads_are_retreating_edge_targets() {
        let t = TypeTable::new(DataModel::Lp64);
        let mut b = FnBuilder::new(t.common.void);
        let l = Loc::default();
        let head = b.new_node();
        let cond = Expr::int(1, t.common.int);
        b.edge(b.entry, head, Op::Return(None), l);
        let body = b.new_node();
        b.edge(
            head,
            body,
            Op::Assume {
                cond: cond.clone(),
                branch: true,
            },
            l,
        );
        b.edge(body, head, Op::Return(None), l);
        b.edge(
            head,
            b.exit,
            Op::Assume {
                cond,
                branch: false,
            },
            l,
        );
        let (_, cfg) = b.finish();
        let heads: Vec<usize> = (0..cfg.nodes.len())
            .filter(|&i| cfg.nodes[i].loop_head)
            .collect();
        assert_eq!(heads, vec![1]);
    }
}
