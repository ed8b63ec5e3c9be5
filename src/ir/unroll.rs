//! Loop peeling for thread-creating loops (seed 001 §5.2: "loops are unrolled so that threads
//! created in the first iterations are unique").
//!
//! A thread created in a loop may run several times at once, so a race of it with itself or
//! with the code after the loop can never be certain. Peeling the first `n` iterations of the
//! loop gives each of them its own create statement, executed at most once: those threads are
//! unique, and races between them (or with them) can be must-races. The remaining loop keeps
//! its create statement and stands for all later iterations. Peeling keeps the program's
//! executions: every copy tests the loop condition like the original.
//!
//! Peeled loops are the outermost loops whose body (not a nested loop of it) holds a call that
//! may create a thread (a create, or a call of a defined function that may create one). Each
//! copied edge remembers its copy number in [`Edge::peel`].

use super::Program;
use super::cfg::{Cfg, Edge, EdgeId, Node, NodeId};
use crate::model::{Role, Roles};

/// Peels `n` iterations of every thread-creating loop of every function; returns how many
/// loops were peeled.
pub fn peel_thread_loops(program: &mut Program, roles: &Roles, n: u8) -> usize {
    if n == 0 {
        return 0;
    }
    let creators = roles.callers_reaching(program, |r| matches!(r, Role::ThreadCreate { .. }));
    let mut peeled = 0;
    for f in program.functions.iter_mut() {
        let Some(cfg) = f.body.as_mut() else { continue };
        let creates: Vec<EdgeId> = (0..cfg.edges.len())
            .map(|i| EdgeId(i as u32))
            .filter(|e| {
                cfg.edge(*e)
                    .op
                    .direct_callee()
                    .is_some_and(|g| creators.contains(&g))
            })
            .collect();
        if creates.is_empty() {
            continue;
        }
        let heads: Vec<NodeId> = (0..cfg.nodes.len())
            .map(|i| NodeId(i as u32))
            .filter(|h| cfg.node(*h).loop_head)
            .collect();
        let bodies: Vec<(NodeId, Vec<bool>)> =
            heads.iter().map(|h| (*h, cfg.loop_body(*h))).collect();
        // Outermost loops whose own body (outside nested loops) creates.
        let mut chosen: Vec<(NodeId, Vec<bool>)> = Vec::new();
        for (h, body) in &bodies {
            let nested_in_other = bodies.iter().any(|(h2, b2)| h2 != h && b2[h.0 as usize]);
            if nested_in_other {
                continue;
            }
            let creates_here = creates.iter().any(|e| {
                let src = cfg.edge(*e).src;
                body[src.0 as usize]
                    && !bodies
                        .iter()
                        .any(|(h2, b2)| h2 != h && body[h2.0 as usize] && b2[src.0 as usize])
            });
            if creates_here {
                chosen.push((*h, body.clone()));
            }
        }
        for (h, body) in chosen {
            peel(cfg, h, &body, n);
            peeled += 1;
        }
    }
    peeled
}

/// Peels `n` copies of the loop `body` headed by `h` in front of it. `body` may be shorter
/// than the node list when other loops of the function were peeled first: their copies are
/// not members.
fn peel(cfg: &mut Cfg, h: NodeId, body: &[bool], n: u8) {
    let body = |x: NodeId| body.get(x.0 as usize).copied().unwrap_or(false);
    let members: Vec<NodeId> = (0..cfg.nodes.len() as u32)
        .map(NodeId)
        .filter(|x| body(*x))
        .collect();
    let orig_edges = cfg.edges.len();
    // copies[c][node] = the node's copy in iteration c (1-based).
    let mut copies: Vec<Vec<Option<NodeId>>> = Vec::new();
    for _ in 0..n {
        let mut map = vec![None; cfg.nodes.len()];
        for &m in &members {
            let id = NodeId(cfg.nodes.len() as u32);
            cfg.nodes.push(Node {
                succs: Vec::new(),
                preds: Vec::new(),
                loop_head: m != h && cfg.node(m).loop_head,
            });
            map[m.0 as usize] = Some(id);
        }
        copies.push(map);
    }
    let copy_of = |copies: &Vec<Vec<Option<NodeId>>>, c: usize, x: NodeId| {
        copies[c].get(x.0 as usize).copied().flatten()
    };
    // Edges entering the loop from outside now enter the first copy.
    let first_head = copy_of(&copies, 0, h).unwrap_or(h);
    for e in cfg.edges.iter_mut().take(orig_edges) {
        if e.dst == h && !body(e.src) {
            e.dst = first_head;
        }
    }
    if cfg.entry == h {
        cfg.entry = first_head;
    }
    // Each copy's edges: back edges go to the next copy (the original loop after the last).
    let mut new_edges: Vec<Edge> = Vec::new();
    for c in 0..n as usize {
        for e in cfg.edges.iter().take(orig_edges) {
            if !body(e.src) {
                continue;
            }
            let Some(src) = copy_of(&copies, c, e.src) else {
                continue;
            };
            let dst = if e.dst == h {
                if c + 1 < n as usize {
                    copy_of(&copies, c + 1, h).unwrap_or(h)
                } else {
                    h
                }
            } else if body(e.dst) {
                copy_of(&copies, c, e.dst).unwrap_or(e.dst)
            } else {
                e.dst
            };
            new_edges.push(Edge {
                src,
                dst,
                op: e.op.clone(),
                loc: e.loc,
                peel: (c + 1) as u8,
                uncertain: e.uncertain,
            });
        }
    }
    cfg.edges.extend(new_edges);
    cfg.rebuild_adjacency();
}

#[cfg(test)]
mod tests {
    use crate::frontend::{self, FrontendOptions};
    use crate::model::Model;

    fn lower(src: &str) -> crate::ir::Program {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.c");
        std::fs::write(&path, src).expect("write");
        frontend::load(&[path], &FrontendOptions::default())
            .expect("lowers")
            .0
    }

    #[test]
    fn a_create_loop_gets_two_unique_creates_and_keeps_its_loop() {
        let mut p = lower(
            "#include <pthread.h>\nvoid *t(void *a) { return 0; }\n\
             int main(void) { pthread_t id[4]; for (int i = 0; i < 4; i++) \
             pthread_create(&id[i], 0, t, 0); return 0; }\n",
        );
        let roles = Model::shipped().classify(&p);
        assert_eq!(super::peel_thread_loops(&mut p, &roles, 2), 1);
        let main = p.function_by_name("main").expect("main");
        let cfg = p.function(main).body.as_ref().expect("body");
        let creates: Vec<u8> = cfg
            .edges
            .iter()
            .filter(|e| {
                e.op.direct_callee()
                    .is_some_and(|g| p.function(g).name == "pthread_create")
            })
            .map(|e| e.peel)
            .collect();
        let mut sorted = creates.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2]);
        // Still one loop (the original), and every node is reachable.
        assert_eq!(cfg.nodes.iter().filter(|n| n.loop_head).count(), 1);
        assert_eq!(cfg.reverse_postorder().len(), cfg.nodes.len());
    }

    #[test]
    fn loops_without_creates_are_left_alone() {
        let mut p = lower("int g; int main(void) { for (int i = 0; i < 4; i++) g++; return 0; }\n");
        let roles = Model::shipped().classify(&p);
        let before = p
            .function(p.function_by_name("main").expect("main"))
            .body
            .clone();
        assert_eq!(super::peel_thread_loops(&mut p, &roles, 2), 0);
        let after = p
            .function(p.function_by_name("main").expect("main"))
            .body
            .clone();
        assert_eq!(before, after);
    }

    #[test]
    fn two_create_loops_of_one_function_are_both_peeled() {
        // The second loop's body was computed before the first peel added nodes.
        let mut p = lower(
            "#include <pthread.h>\nvoid *t(void *a) { return 0; }\n\
             int main(void) { pthread_t id[4]; \
             for (int i = 0; i < 4; i++) pthread_create(&id[i], 0, t, 0); \
             for (int j = 0; j < 4; j++) pthread_create(&id[j], 0, t, 0); return 0; }\n",
        );
        let roles = Model::shipped().classify(&p);
        assert_eq!(super::peel_thread_loops(&mut p, &roles, 2), 2);
        let main = p.function_by_name("main").expect("main");
        let cfg = p.function(main).body.as_ref().expect("body");
        let peeled = cfg.edges.iter().filter(|e| e.peel > 0).count();
        assert!(
            peeled >= 8,
            "both loops copied twice: {peeled} copied edges"
        );
        assert_eq!(cfg.nodes.iter().filter(|n| n.loop_head).count(), 2);
        assert_eq!(cfg.reverse_postorder().len(), cfg.nodes.len());
    }
}
