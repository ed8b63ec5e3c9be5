//! Footprints: the globals a function may access by name, to cut a callee context's entry
//! state down to what the callee can read (the frame rule of interprocedural shape analysis;
//! Rinetzky et al., "Interprocedural shape analysis for cutpoint-free programs", SAS 2005,
//! cut the heap at calls the same way).
//!
//! A callee context is shared by its callers (call strings are bounded), so its entry state
//! joins every caller's whole memory: each change anywhere in a caller reaches the callee's
//! entry, runs its body again and flows back to every caller. Objects the callee cannot
//! reach are left out of its entry state instead: it reads them nowhere, and the call's
//! return takes every object the callee did not write from the caller's state before the
//! call ([`super::interp::Interp::call_return`]), so they come back unchanged.
//!
//! An object is reachable by the callee when the callee or a function it calls names it (a
//! global), when it is the callee's own, or when a pointer in a reachable object or in
//! another thread's stores leads to it ([`Footprints::cut_entry`]). A function whose calls
//! cannot all be followed by name (an indirect call, a library callback, a thread creation,
//! which starts a thread from the whole state) has no footprint: its entry keeps everything.

use super::memory::{Obj, State};
use crate::backend::Base;
use crate::ir::cfg::{Callee, Op};
use crate::ir::expr::{ExprKind, Host, Lval, Var};
use crate::ir::{FuncId, GlobalId, Program};
use crate::model::{Role, Roles};
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::FxHashSet;

/// The globals each function may access by name, transitively through the functions it
/// calls directly; `None` for a function without a footprint (see the module doc). Source:
/// the frame rule, as in Rinetzky et al. (SAS 2005).
#[derive(Debug, Default)]
pub struct Footprints {
    per_func: Vec<Option<Footprint>>,
}

/// What a function and the functions it calls (transitively) may reach by name.
#[derive(Clone, Debug, Default)]
struct Footprint {
    /// The globals they name.
    globals: FxHashSet<GlobalId>,
    /// The functions themselves: their heap sites and locals stay in the entry state (a new
    /// allocation at a site joins the site's earlier objects; a local keeps its object).
    funcs: FxHashSet<FuncId>,
}

impl Footprints {
    /// Computes the footprints of every function of `program`.
    pub fn new(program: &Program, roles: &Roles) -> Footprints {
        let n = program.functions.len();
        // Direct: the globals each function names; whether it has a call that cannot be
        // followed by name; its direct callees with bodies.
        let mut named: Vec<FxHashSet<GlobalId>> = vec![FxHashSet::default(); n];
        // Functions without a body are never entered (their footprint stays unknown).
        let mut open = vec![false; n];
        let mut callees: Vec<Vec<FuncId>> = vec![Vec::new(); n];
        for (fi, f) in program.functions.iter().enumerate() {
            let Some(cfg) = &f.body else { continue };
            let names = &mut named[fi];
            let host = |lv: &Lval, names: &mut FxHashSet<GlobalId>| {
                if let Host::Var(Var::Global(g)) = lv.host {
                    names.insert(g);
                }
            };
            for e in &cfg.edges {
                match &e.op {
                    Op::Assign { lhs, .. } => host(lhs, names),
                    Op::Call { dest, callee, .. } => {
                        if let Some(d) = dest {
                            host(d, names);
                        }
                        match callee {
                            Callee::Indirect(_) => open[fi] = true,
                            Callee::Direct(g) => {
                                let creates =
                                    matches!(roles.get(*g), Some(Role::ThreadCreate { .. }));
                                if creates || !roles.callbacks(program, &e.op).is_empty() {
                                    open[fi] = true;
                                } else if program.function(*g).body.is_some() {
                                    callees[fi].push(*g);
                                }
                            }
                        }
                    }
                    Op::Asm { outputs, .. } => {
                        for o in outputs {
                            host(o, names);
                        }
                    }
                    _ => {}
                }
                crate::ir::visit::op_exprs(&e.op, &mut |y| {
                    if let ExprKind::Load(lv) | ExprKind::AddrOf(lv) = &y.kind
                        && let Host::Var(Var::Global(g)) = lv.host
                    {
                        names.insert(g);
                    }
                });
            }
        }
        // Transitive closure over direct calls: strongly connected components come callees
        // first (petgraph's Tarjan order), so each takes its callees' final sets.
        let mut g: DiGraph<(), ()> = DiGraph::with_capacity(n, n);
        for _ in 0..n {
            g.add_node(());
        }
        for (fi, cs) in callees.iter().enumerate() {
            for c in cs {
                g.add_edge(NodeIndex::new(fi), NodeIndex::new(c.0 as usize), ());
            }
        }
        let mut per_func: Vec<Option<Footprint>> = vec![None; n];
        for scc in petgraph::algo::tarjan_scc(&g) {
            let members: Vec<usize> = scc.iter().map(|x| x.index()).collect();
            let inside: FxHashSet<usize> = members.iter().copied().collect();
            let mut fp = Footprint::default();
            let mut closed = true;
            for &m in &members {
                closed &= !open[m];
                fp.globals.extend(named[m].iter().copied());
                fp.funcs.insert(FuncId(m as u32));
                for c in &callees[m] {
                    let c = c.0 as usize;
                    if inside.contains(&c) {
                        continue;
                    }
                    match &per_func[c] {
                        Some(cf) => {
                            fp.globals.extend(cf.globals.iter().copied());
                            fp.funcs.extend(cf.funcs.iter().copied());
                        }
                        None => closed = false,
                    }
                }
            }
            if closed {
                for &m in &members {
                    per_func[m] = Some(fp.clone());
                }
            }
        }
        Footprints { per_func }
    }

    /// Leaves out of `s`, the entry state of a call of `func`, every global, local and heap
    /// object the callee cannot reach: reachable are the globals of its footprint, the
    /// locals and heap sites of the functions of its footprint (the bound parameters among
    /// them), the objects other threads' stores point to
    /// (`escaped`: a read of a shared location may yield them), the heap objects with a
    /// recent-object fact (their contents and base go together), and every object a pointer
    /// in a reachable object points to. Objects only an unresolved pointer could reach stay
    /// out too: the value analysis reads nothing through such a pointer (any value) and
    /// writes nothing of the thread's own state. Does nothing for a function without a
    /// footprint.
    pub fn cut_entry(&self, s: &mut State, func: FuncId, escaped: &FxHashSet<Base>) {
        let Some(Some(fp)) = self.per_func.get(func.0 as usize) else {
            return;
        };
        let mut reach: FxHashSet<Base> = FxHashSet::default();
        let mut work: Vec<Base> = Vec::new();
        let add = |b: Base, reach: &mut FxHashSet<Base>, work: &mut Vec<Base>| {
            if reach.insert(b) {
                work.push(b);
            }
        };
        for g in &fp.globals {
            add(Base::Global(*g), &mut reach, &mut work);
        }
        for b in escaped {
            add(*b, &mut reach, &mut work);
        }
        for (b, _) in s.delta.iter() {
            let own = match b {
                Base::Local { func: f, .. } | Base::Heap { func: f, .. } => fp.funcs.contains(f),
                _ => false,
            };
            if own || s.fresh_of(b).is_some() {
                add(*b, &mut reach, &mut work);
            }
        }
        let visit = |o: &Obj, reach: &mut FxHashSet<Base>, work: &mut Vec<Base>| {
            for t in o.pointer_targets() {
                add(t, reach, work);
            }
        };
        while let Some(b) = work.pop() {
            // The object as `State::obj` finds it, without copying it; default objects
            // (any value, or nothing stored) hold no address.
            match (s.delta.get(&b), s.frame.init.get(&b), b) {
                (Some(o), _, _) | (None, Some(o), _) => visit(o, &mut reach, &mut work),
                (None, None, Base::Global(g)) => {
                    if let Some(o) = s.frame.globals.get(g.0 as usize) {
                        visit(o, &mut reach, &mut work);
                    }
                }
                _ => {}
            }
            if let Some(f) = s.fresh_of(&b) {
                visit(&f.recent, &mut reach, &mut work);
            }
        }
        let cut: Vec<Base> = s
            .delta
            .keys()
            .filter(|b| matches!(b, Base::Global(_) | Base::Local { .. } | Base::Heap { .. }))
            .filter(|b| !reach.contains(b))
            .copied()
            .collect();
        for b in cut {
            s.forget(&b);
        }
    }
}
