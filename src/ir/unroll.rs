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
//! copied edge remembers its copy number in [`Edge::peel`]. Loops of functions that only ever
//! run inside a loop of their callers ([`repeated_functions`]) are left alone: every copy would
//! run many times, its threads would not be unique, and each copy's threads would only be
//! analysed again.

use super::cfg::{Callee, Op};
use super::cfg::{Cfg, Edge, EdgeId, Node, NodeId};
use super::{FuncId, Program};
use crate::model::{Role, Roles};
use rustc_hash::FxHashSet;

/// Peels `n` iterations of every thread-creating loop of every function; returns how many
/// loops were peeled.
pub fn peel_thread_loops(program: &mut Program, roles: &Roles, n: u8) -> usize {
    if n == 0 {
        return 0;
    }
    let creators = roles.callers_reaching(program, |r| matches!(r, Role::ThreadCreate { .. }));
    let repeated = repeated_functions(program);
    let mut peeled = 0;
    for (fi, f) in program.functions.iter_mut().enumerate() {
        if repeated.contains(&FuncId(fi as u32)) {
            continue;
        }
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

/// The functions every call of which runs inside a loop of its caller, or in another such
/// function (a greatest fixpoint over direct calls): each call of them may run many times in
/// one thread. Only defined functions; those whose address is taken (thread entries,
/// callbacks) and `main` are never among them.
pub fn repeated_functions(program: &Program) -> FxHashSet<FuncId> {
    let taken = super::specialise::address_taken(program);
    // Per function, its direct call sites: (caller, inside a loop of the caller).
    let mut sites: Vec<Vec<(FuncId, bool)>> = vec![Vec::new(); program.functions.len()];
    for (ci, caller) in program.functions.iter().enumerate() {
        let Some(cfg) = &caller.body else { continue };
        let bodies: Vec<Vec<bool>> = (0..cfg.nodes.len())
            .filter(|h| cfg.nodes[*h].loop_head)
            .map(|h| cfg.loop_body(NodeId(h as u32)))
            .collect();
        for e in &cfg.edges {
            if let Op::Call {
                callee: Callee::Direct(g),
                ..
            } = &e.op
                && let Some(v) = sites.get_mut(g.0 as usize)
            {
                let in_loop = bodies
                    .iter()
                    .any(|b| b.get(e.src.0 as usize).copied().unwrap_or(false));
                v.push((FuncId(ci as u32), in_loop));
            }
        }
    }
    let mut set: FxHashSet<FuncId> = (0..program.functions.len())
        .map(|i| FuncId(i as u32))
        .filter(|f| {
            !sites[f.0 as usize].is_empty()
                && program.function(*f).body.is_some()
                && !taken.contains(f)
                && program.function(*f).name != "main"
        })
        .collect();
    loop {
        let drop: Vec<FuncId> = set
            .iter()
            .copied()
            .filter(|f| {
                sites[f.0 as usize]
                    .iter()
                    .any(|(caller, in_loop)| !in_loop && !set.contains(caller))
            })
            .collect();
        if drop.is_empty() {
            return set;
        }
        for f in drop {
            set.remove(&f);
        }
    }
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
    fn create_loops_of_functions_run_in_a_loop_are_not_peeled() {
        // `spawn_all` runs only inside main's loop (directly or through `tick`): its copies
        // would all run many times. `once` also runs outside any loop: it is peeled.
        let mut p = lower(
            "#include <pthread.h>\nvoid *t(void *a) { return 0; }\n\
             void spawn_all(int n) { pthread_t id; for (int i = 0; i < n; i++) \
             pthread_create(&id, 0, t, 0); }\n\
             void tick(int n) { spawn_all(n); }\n\
             void once(int n) { pthread_t id; for (int i = 0; i < n; i++) \
             pthread_create(&id, 0, t, 0); }\n\
             int main(int c, char **v) { once(c); while (c--) { tick(c); once(c); } return 0; }\n",
        );
        let roles = Model::shipped().classify(&p);
        let repeated: Vec<String> = {
            let mut v: Vec<String> = super::repeated_functions(&p)
                .iter()
                .map(|f| p.function(*f).name.clone())
                .collect();
            v.sort();
            v
        };
        assert_eq!(repeated, vec!["spawn_all".to_string(), "tick".to_string()]);
        // `once`'s loop and main's (which creates through its calls).
        assert_eq!(super::peel_thread_loops(&mut p, &roles, 2), 2);
        let copies = |name: &str| {
            let f = p.function_by_name(name).expect("function");
            let cfg = p.function(f).body.as_ref().expect("body");
            cfg.edges.iter().filter(|e| e.peel > 0).count()
        };
        assert_eq!(copies("spawn_all"), 0);
        assert!(copies("once") > 0);
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
