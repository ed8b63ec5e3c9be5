//! Liveness of the locals the active-threads facts track (free locals' constraints and flag
//! values, [`super::MhpFact`]).
//!
//! A constraint or flag value only matters to a later test of its local in the same function
//! activation. Once no test of the local can follow before it is redefined, the fact can forget
//! it: facts that differ only in dead constraints describe the same threads and certainty, and
//! keeping them apart only multiplies the facts (one per branch of every test of a free local)
//! and the work. Classic backward liveness (a local is live at a node when some path from the
//! node reads it before writing it), restricted to the tracked locals.

use crate::ir::{FuncId, NodeId};
use crate::ir::{Host, LocalId, Lval, Op, Program, Var};
use rustc_hash::FxHashSet;

/// Per node of one function, the tracked locals live there (sorted, deduplicated).
#[derive(Debug, Default)]
pub struct Liveness {
    live: Vec<Vec<LocalId>>,
}

impl Liveness {
    /// Liveness of the `tracked` locals of `func` (empty for a function without body).
    pub fn compute(program: &Program, func: FuncId, tracked: &FxHashSet<LocalId>) -> Liveness {
        let Some(cfg) = &program.function(func).body else {
            return Liveness::default();
        };
        let n = cfg.nodes.len();
        let mut live: Vec<Vec<LocalId>> = vec![Vec::new(); n];
        if tracked.is_empty() {
            return Liveness { live };
        }
        let whole = |lv: &Lval| match lv.host {
            Host::Var(Var::Local(l)) if lv.proj.is_empty() && tracked.contains(&l) => Some(l),
            _ => None,
        };
        // Per edge: tracked locals it reads and the tracked local it defines.
        let per_edge: Vec<(Vec<LocalId>, Option<LocalId>)> = cfg
            .edges
            .iter()
            .map(|e| {
                let mut reads = Vec::new();
                crate::ir::visit::op_exprs(&e.op, &mut |y| {
                    if let crate::ir::ExprKind::Load(lv) = &y.kind
                        && let Host::Var(Var::Local(l)) = lv.host
                        && tracked.contains(&l)
                    {
                        reads.push(l);
                    }
                });
                let def = match &e.op {
                    Op::Assign { lhs, .. } => whole(lhs),
                    Op::Call { dest: Some(d), .. } => whole(d),
                    _ => None,
                };
                (reads, def)
            })
            .collect();
        // Backward iteration in postorder (reverse of the reverse postorder) until stable.
        let mut order = cfg.reverse_postorder();
        order.reverse();
        let mut changed = true;
        while changed {
            changed = false;
            for &node in &order {
                let mut set: Vec<LocalId> = Vec::new();
                for &eid in &cfg.node(node).succs {
                    let (reads, def) = &per_edge[eid.0 as usize];
                    let dst = cfg.edge(eid).dst;
                    set.extend(reads.iter().copied());
                    set.extend(
                        live[dst.0 as usize]
                            .iter()
                            .copied()
                            .filter(|l| Some(*l) != *def),
                    );
                }
                set.sort();
                set.dedup();
                if set != live[node.0 as usize] {
                    live[node.0 as usize] = set;
                    changed = true;
                }
            }
        }
        Liveness { live }
    }

    /// Whether `l` is live at `node` (false for unknown nodes).
    pub fn is_live(&self, node: NodeId, l: LocalId) -> bool {
        self.live
            .get(node.0 as usize)
            .is_some_and(|v| v.binary_search(&l).is_ok())
    }
}
