//! Control-flow graphs: program points (nodes) joined by edges that each carry one simple
//! instruction ([`Op`]).
//!
//! This is the control-flow automaton form used by Goblint and CPAchecker: an abstract
//! interpreter keeps one state per node and applies one transfer function per edge. Branches are
//! pairs of [`Op::Assume`] edges, so conditions refine states on the edge that tests them.
//! Loop heads (targets of retreating edges of a depth-first search from the entry) are marked
//! for widening and unrolling. Every node is reachable from the entry.

use super::FuncId;
use super::Loc;
use super::expr::{Expr, Lval};

/// A program point; index into [`Cfg::nodes`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct NodeId(pub u32);

/// An edge; index into [`Cfg::edges`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EdgeId(pub u32);

/// A program point.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Node {
    /// Outgoing edges, in creation order.
    pub succs: Vec<EdgeId>,
    /// Incoming edges, in creation order.
    pub preds: Vec<EdgeId>,
    /// Whether the node heads a loop (the target of a retreating edge): the place to widen.
    pub loop_head: bool,
}

/// A CFG edge: executing `op` moves control from `src` to `dst`.
#[derive(Clone, Debug, PartialEq)]
pub struct Edge {
    /// Source program point.
    pub src: NodeId,
    /// Target program point.
    pub dst: NodeId,
    /// The instruction.
    pub op: Op,
    /// Source location of the C construct the instruction comes from.
    pub loc: Loc,
    /// 0 for an edge of the program; `k` for the copy of an edge in the `k`-th peeled
    /// iteration of its loop ([`crate::ir::unroll`]).
    pub peel: u8,
    /// A call the analysis added that may not happen in an execution (a callback a library
    /// may run here, [`crate::ir::deferred`]): paths through it are never certain.
    pub uncertain: bool,
}

/// The function called by a [`Op::Call`].
#[derive(Clone, Debug, PartialEq)]
pub enum Callee {
    /// A call of a named function.
    Direct(FuncId),
    /// A call through a function pointer (the expression has pointer-to-function type).
    Indirect(Expr),
}

/// A simple instruction.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// No effect (joins, `goto`, empty statements).
    Skip,
    /// `lhs = rhs` (`rhs` already converted to the type of `lhs`; struct copies included).
    Assign {
        /// Written lvalue.
        lhs: Lval,
        /// Assigned value.
        rhs: Expr,
    },
    /// `dest = callee(args...)`; arguments are converted to the parameter types where the
    /// callee has a prototype (default argument promotions otherwise).
    Call {
        /// Where the result is stored, if anywhere.
        dest: Option<Lval>,
        /// Called function.
        callee: Callee,
        /// Argument values, left to right.
        args: Vec<Expr>,
    },
    /// Continue only if `cond` is non-zero (`branch` true) or zero (`branch` false).
    Assume {
        /// Scalar condition.
        cond: Expr,
        /// Which outcome this edge takes.
        branch: bool,
    },
    /// Return from the function, with the value converted to the return type. The edge leads
    /// to [`Cfg::exit`].
    Return(Option<Expr>),
    /// Inline assembly: an unsupported construct that may write `outputs` and reads `inputs`.
    Asm {
        /// Output operands (written).
        outputs: Vec<Lval>,
        /// Input operands (read).
        inputs: Vec<Expr>,
    },
}

impl Op {
    /// The called function of a direct call.
    pub fn direct_callee(&self) -> Option<FuncId> {
        match self {
            Op::Call {
                callee: Callee::Direct(f),
                ..
            } => Some(*f),
            _ => None,
        }
    }
}

/// A function body as a control-flow graph.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cfg {
    /// Program points; [`NodeId`] indexes them.
    pub nodes: Vec<Node>,
    /// Edges; [`EdgeId`] indexes them.
    pub edges: Vec<Edge>,
    /// Entry point.
    pub entry: NodeId,
    /// The single exit point (target of every [`Op::Return`]).
    pub exit: NodeId,
}

impl Cfg {
    /// Recomputes every node's successor and predecessor lists from the edges (after edges
    /// were added or rewired).
    pub fn rebuild_adjacency(&mut self) {
        for node in self.nodes.iter_mut() {
            node.succs.clear();
            node.preds.clear();
        }
        for (i, e) in self.edges.iter().enumerate() {
            let id = EdgeId(i as u32);
            self.nodes[e.src.0 as usize].succs.push(id);
            self.nodes[e.dst.0 as usize].preds.push(id);
        }
    }

    /// The node behind an id.
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    /// The edge behind an id.
    pub fn edge(&self, id: EdgeId) -> &Edge {
        &self.edges[id.0 as usize]
    }

    /// Outgoing edges of `n`.
    pub fn succs(&self, n: NodeId) -> impl Iterator<Item = &Edge> + '_ {
        self.node(n).succs.iter().map(|e| self.edge(*e))
    }

    /// Whether `to` is reachable from `from` without taking any edge of `avoid`.
    pub fn reaches(&self, from: NodeId, to: NodeId, avoid: &[EdgeId]) -> bool {
        let mut seen = vec![false; self.nodes.len()];
        let mut stack = vec![from];
        while let Some(x) = stack.pop() {
            if x == to {
                return true;
            }
            if std::mem::replace(&mut seen[x.0 as usize], true) {
                continue;
            }
            for &e in &self.node(x).succs {
                if !avoid.contains(&e) {
                    stack.push(self.edge(e).dst);
                }
            }
        }
        false
    }

    /// The natural loop of head `h`, as a membership vector over the nodes: `h` and every node
    /// reaching a back edge into `h` without passing through `h`.
    pub fn loop_body(&self, h: NodeId) -> Vec<bool> {
        let cfg = self;
        let n = cfg.nodes.len();
        // Nodes reachable from h: back-edge sources are preds of h among them.
        let mut from_h = vec![false; n];
        let mut stack = vec![h];
        from_h[h.0 as usize] = true;
        while let Some(x) = stack.pop() {
            for e in cfg.succs(x) {
                if !from_h[e.dst.0 as usize] {
                    from_h[e.dst.0 as usize] = true;
                    stack.push(e.dst);
                }
            }
        }
        let mut body = vec![false; n];
        body[h.0 as usize] = true;
        for &p in &cfg.node(h).preds {
            let src = cfg.edge(p).src;
            if from_h[src.0 as usize] && !body[src.0 as usize] {
                body[src.0 as usize] = true;
                stack.push(src);
            }
        }
        while let Some(x) = stack.pop() {
            for &p in &cfg.node(x).preds {
                let src = cfg.edge(p).src;
                if !body[src.0 as usize] {
                    body[src.0 as usize] = true;
                    stack.push(src);
                }
            }
        }
        body
    }

    /// Nodes in a loop-nested order: reverse postorder, except that the nodes of every loop
    /// come together, right after its head, and before every node the loop exits to (a weak
    /// topological order, Bourdoncle 1993, "Efficient chaotic iteration strategies with
    /// widenings"; exact for the reducible CFGs C produces). A worklist that always takes the
    /// node earliest in this order stabilises a loop before it runs the code after it: plain
    /// reverse postorder can put a loop's exit path before its body, and that path is then
    /// re-run after every pass through the loop.
    ///
    /// Each node is keyed by the reverse-postorder positions of the heads of the natural loops
    /// holding it (outermost first) followed by its own position, and the keys are sorted.
    /// Loop heads are the targets of retreating edges of the search. Unreachable nodes are left
    /// out.
    pub fn loop_nested_order(&self) -> Vec<NodeId> {
        let rpo = self.reverse_postorder();
        let mut pos = vec![usize::MAX; self.nodes.len()];
        for (i, x) in rpo.iter().enumerate() {
            pos[x.0 as usize] = i;
        }
        let mut chains: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for &h in &rpo {
            let hp = pos[h.0 as usize];
            let is_head = self.node(h).preds.iter().any(|&e| {
                let src = pos[self.edge(e).src.0 as usize];
                src != usize::MAX && src >= hp
            });
            if !is_head {
                continue;
            }
            // The natural loop, walking back from the retreating edges' sources to `h`
            // (within reachable nodes; linear in the loop's size).
            let mut stack: Vec<NodeId> = vec![h];
            chains[h.0 as usize].push(hp);
            for &e in &self.node(h).preds {
                let src = self.edge(e).src;
                let sp = pos[src.0 as usize];
                if sp != usize::MAX && sp >= hp && chains[src.0 as usize].last() != Some(&hp) {
                    chains[src.0 as usize].push(hp);
                    stack.push(src);
                }
            }
            while let Some(x) = stack.pop() {
                if x == h {
                    continue;
                }
                for &e in &self.node(x).preds {
                    let src = self.edge(e).src;
                    if pos[src.0 as usize] != usize::MAX
                        && chains[src.0 as usize].last() != Some(&hp)
                    {
                        chains[src.0 as usize].push(hp);
                        stack.push(src);
                    }
                }
            }
        }
        let mut keyed: Vec<(Vec<usize>, NodeId)> = rpo
            .into_iter()
            .map(|x| {
                let mut k = std::mem::take(&mut chains[x.0 as usize]);
                k.push(pos[x.0 as usize]);
                (k, x)
            })
            .collect();
        keyed.sort();
        keyed.into_iter().map(|(_, x)| x).collect()
    }

    /// Nodes in reverse postorder of a depth-first search from the entry (iterative, so deep
    /// graphs cannot overflow the stack). Unreachable nodes are left out.
    pub fn reverse_postorder(&self) -> Vec<NodeId> {
        let mut order = Vec::with_capacity(self.nodes.len());
        let mut visited = vec![false; self.nodes.len()];
        // Stack of (node, index of the next successor to visit).
        let mut stack: Vec<(NodeId, usize)> = Vec::new();
        if self.nodes.is_empty() {
            return order;
        }
        visited[self.entry.0 as usize] = true;
        stack.push((self.entry, 0));
        while let Some(top) = stack.last_mut() {
            let (n, i) = *top;
            let succs = &self.node(n).succs;
            if i < succs.len() {
                top.1 += 1;
                let dst = self.edge(succs[i]).dst;
                if !visited[dst.0 as usize] {
                    visited[dst.0 as usize] = true;
                    stack.push((dst, 0));
                }
            } else {
                order.push(n);
                stack.pop();
            }
        }
        order.reverse();
        order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A CFG over `n` nodes with the given edges (all `Skip`), entry 0 and exit `n - 1`.
    fn cfg(n: u32, edges: &[(u32, u32)]) -> Cfg {
        let mut c = Cfg {
            nodes: vec![Node::default(); n as usize],
            edges: edges
                .iter()
                .map(|&(s, d)| Edge {
                    src: NodeId(s),
                    dst: NodeId(d),
                    op: Op::Skip,
                    loc: Loc::default(),
                    peel: 0,
                    uncertain: false,
                })
                .collect(),
            entry: NodeId(0),
            exit: NodeId(n - 1),
        };
        c.rebuild_adjacency();
        c
    }

    #[test]
    fn loop_body_comes_before_the_loop_exit() {
        // 0 -> 1 (head); 1 -> 3 -> 4 -> 1 (body); 1 -> 2 (exit path) -> 5.
        // The body edge is created first, so a depth-first search finishes the body first and
        // reverse postorder puts the exit path 2, 5 before the body 3, 4.
        let c = cfg(6, &[(0, 1), (1, 3), (3, 4), (4, 1), (1, 2), (2, 5)]);
        let rpo: Vec<u32> = c.reverse_postorder().iter().map(|n| n.0).collect();
        assert_eq!(rpo, vec![0, 1, 2, 5, 3, 4]);
        let order: Vec<u32> = c.loop_nested_order().iter().map(|n| n.0).collect();
        assert_eq!(order, vec![0, 1, 3, 4, 2, 5]);
    }

    #[test]
    fn nested_loops_stay_together() {
        // Outer head 1, inner head 3: 1 -> 2 -> 3 -> 4 -> 3, 3 -> 5 -> 1, 1 -> 6 (exit).
        let c = cfg(
            7,
            &[
                (0, 1),
                (1, 6),
                (1, 2),
                (2, 3),
                (3, 5),
                (3, 4),
                (4, 3),
                (5, 1),
            ],
        );
        let order: Vec<u32> = c.loop_nested_order().iter().map(|n| n.0).collect();
        assert_eq!(order, vec![0, 1, 2, 3, 4, 5, 6]);
    }
}
