//! Specialisation of thread-creating (and thread-joining) functions per call site.
//!
//! A thread is identified by its entry function and its create statement ([`crate::threads`]).
//! A wrapper such as `int spawn(pthread_t *t, void *(*f)(void *), void *a) { return
//! pthread_create(t, 0, f, a); }` called from two places holds one create statement for both
//! calls: their threads merge into one non-unique thread, and a join in the caller cannot say
//! which of them it ends. Goblint handles this with its `threadCreateWrapper` analysis (a
//! wrapper's call site, not the create inside it, names the thread; `ana.thread.wrappers`,
//! `ana.thread.unique_thread_id_count`); RacerF misses it (`notes/racerf-goblint.md` §1.5).
//!
//! This pass does the same by copying: every reachable direct call of a small, non-recursive
//! function that may create or join a thread gets its own copy of the function when the function
//! is called from several sites (or may also be called through a pointer, which keeps using the
//! original). The copy runs exactly
//! when the original would have run at that site, so the program's executions are unchanged; a
//! copy called once (not in a loop, from a thread running once) holds a create statement that
//! runs once, and its thread is unique. Copies of a wrapper call copies of the functions it
//! calls in turn, callers being specialised before callees. Each copy records its origin in
//! [`Function::specialised`].
//!
//! Bounded: functions of at most [`MAX_BODY_EDGES`] statements with at most [`MAX_SITES`] call
//! sites, at most [`MAX_COPIES`] copies and [`MAX_COPIED_EDGES`] copied statements in all;
//! functions on a cycle of the call graph are never copied. Each thread a copy starts is
//! analysed on its own, so a copy costs the code of the threads it creates as well: the
//! threads created below the copies of one function, summed over its call sites, may run at
//! most [`MAX_THREAD_EDGES`] statements, those below all copies [`MAX_TOTAL_THREAD_EDGES`] (an
//! `init()` called from many places that starts a large worker thread keeps its single thread;
//! see [`ThreadCost`]).

use super::cfg::{Callee, EdgeId, Op};
use super::expr::ExprKind;
use super::{FuncId, Function, Linkage, Program, Specialisation};
use crate::model::{Role, Roles};
use petgraph::graph::{DiGraph, NodeIndex};
use rustc_hash::{FxHashMap, FxHashSet};

/// Largest function (in CFG edges) that is copied.
pub const MAX_BODY_EDGES: usize = 200;
/// Most call sites of one function that are given copies (a function called more often keeps
/// its shared body).
pub const MAX_SITES: usize = 8;
/// Most copies in a program.
pub const MAX_COPIES: usize = 64;
/// Most copied CFG edges in a program.
pub const MAX_COPIED_EDGES: usize = 4000;
/// Most statements of the threads created below the copies of one function, over all its
/// call sites ([`ThreadCost`]).
pub const MAX_THREAD_EDGES: usize = 1000;
/// Most statements of the threads created below all copies in a program.
pub const MAX_TOTAL_THREAD_EDGES: usize = 2000;
/// Depth to which a thread-entry argument is followed through parameters to call sites.
const ENTRY_DEPTH: usize = 4;
/// Depth to which calls of thread functions are followed below a copied function.
const CALL_DEPTH: usize = 8;

/// Estimates of the analysis work the copies of a function add: each copy that holds a create
/// statement starts a thread of its own, whose code (the statements reachable from its entry
/// through direct calls and creates) is analysed again. Costs are in CFG edges, saturated just
/// above [`MAX_THREAD_EDGES`] (a larger cost is refused anyway).
struct ThreadCost<'a> {
    roles: &'a Roles,
    /// Functions whose address is taken.
    taken: &'a FxHashSet<FuncId>,
    /// Functions that may create or join threads.
    targets: &'a FxHashSet<FuncId>,
    /// Direct call sites of each function: (caller, argument list).
    sites: FxHashMap<FuncId, Vec<(FuncId, Vec<super::Expr>)>>,
    /// Statements reachable from each entry function, memoised.
    reach: FxHashMap<FuncId, usize>,
    /// Statements of the threads created below each function, memoised.
    below: FxHashMap<FuncId, usize>,
    /// The cost of a thread whose entry is not known: the largest reach of a function whose
    /// address is taken (computed on first use).
    unknown: Option<usize>,
}

impl<'a> ThreadCost<'a> {
    fn new(
        program: &Program,
        roles: &'a Roles,
        taken: &'a FxHashSet<FuncId>,
        targets: &'a FxHashSet<FuncId>,
    ) -> ThreadCost<'a> {
        let mut sites: FxHashMap<FuncId, Vec<(FuncId, Vec<super::Expr>)>> = FxHashMap::default();
        for (i, f) in program.functions.iter().enumerate() {
            let Some(cfg) = &f.body else { continue };
            for e in &cfg.edges {
                if let Op::Call {
                    callee: Callee::Direct(g),
                    args,
                    ..
                } = &e.op
                {
                    sites
                        .entry(*g)
                        .or_default()
                        .push((FuncId(i as u32), args.clone()));
                }
            }
        }
        ThreadCost {
            roles,
            taken,
            targets,
            sites,
            reach: FxHashMap::default(),
            below: FxHashMap::default(),
            unknown: None,
        }
    }

    /// The functions a thread-entry expression of `func` may name: a function, or a
    /// parameter followed to the arguments of `func`'s call sites (`binding`, when given, are
    /// the arguments of the one call that matters); `None` when unknown.
    fn entries(
        &self,
        program: &Program,
        func: FuncId,
        e: &super::Expr,
        binding: Option<(FuncId, &[super::Expr])>,
        depth: usize,
    ) -> Option<Vec<FuncId>> {
        match &super::visit::strip_casts(e).kind {
            ExprKind::Func(f) => Some(vec![*f]),
            _ => {
                let l = super::visit::local_of(e)?;
                let k = program.function(func).params.iter().position(|p| *p == l)?;
                if depth == 0 {
                    return None;
                }
                if let Some((caller, args)) = binding {
                    return self.entries(program, caller, args.get(k)?, None, depth - 1);
                }
                // A copy is called where its original is (one of those calls).
                let original = program
                    .function(func)
                    .specialised
                    .map_or(func, |s| s.original);
                let sites = self.sites.get(&original)?;
                let mut out = Vec::new();
                for (caller, args) in sites {
                    out.extend(self.entries(program, *caller, args.get(k)?, None, depth - 1)?);
                }
                Some(out)
            }
        }
    }

    /// Statements reachable from `f` through direct calls and the entries of creates
    /// (saturated); with `indirect`, a call through a pointer or a create of an unknown entry
    /// on the way adds [`ThreadCost::unknown`] (the callee may be any function whose address
    /// is taken).
    fn reach(&mut self, program: &Program, f: FuncId, indirect: bool) -> usize {
        if indirect && let Some(n) = self.reach.get(&f) {
            return *n;
        }
        let cap = MAX_THREAD_EDGES + 1;
        let mut seen: FxHashSet<FuncId> = FxHashSet::default();
        let mut stack = vec![f];
        let mut n = 0usize;
        let mut unknown = false;
        while let Some(g) = stack.pop() {
            if n >= cap {
                break;
            }
            if !seen.insert(g) {
                continue;
            }
            let Some(cfg) = &program.function(g).body else {
                continue;
            };
            n += cfg.edges.len();
            for e in &cfg.edges {
                match (&e.op, self.roles.of_call(&e.op)) {
                    (Op::Call { args, .. }, Some(Role::ThreadCreate { entry, .. })) => {
                        match args.get(*entry).map(|a| &super::visit::strip_casts(a).kind) {
                            Some(ExprKind::Func(t)) => stack.push(*t),
                            _ => unknown = true,
                        }
                    }
                    (
                        Op::Call {
                            callee: Callee::Indirect(_),
                            ..
                        },
                        None,
                    ) => unknown = true,
                    (op, _) => stack.extend(op.direct_callee()),
                }
            }
        }
        if indirect && unknown && n < cap {
            n += self.unknown(program);
        }
        let n = n.min(cap);
        if indirect {
            self.reach.insert(f, n);
        }
        n
    }

    /// The cost of a thread whose entry is unknown, or of a call through a pointer: the
    /// largest reach (through direct calls) of a function whose address is taken.
    fn unknown(&mut self, program: &Program) -> usize {
        if let Some(n) = self.unknown {
            return n;
        }
        let mut sorted: Vec<FuncId> = self.taken.iter().copied().collect();
        sorted.sort();
        let mut n = 0;
        for f in sorted {
            n = n.max(self.reach(program, f, false));
            if n > MAX_THREAD_EDGES {
                break;
            }
        }
        self.unknown = Some(n);
        n
    }

    /// Statements of the threads created in `w` and below it (through direct calls of
    /// thread functions), for its call with arguments `binding` when given (saturated).
    fn below(
        &mut self,
        program: &Program,
        w: FuncId,
        binding: Option<(FuncId, &[super::Expr])>,
        depth: usize,
    ) -> usize {
        if binding.is_none()
            && let Some(n) = self.below.get(&w)
        {
            return *n;
        }
        let cap = MAX_THREAD_EDGES + 1;
        let mut n = 0usize;
        if let Some(cfg) = &program.function(w).body {
            for e in &cfg.edges {
                if n >= cap {
                    break;
                }
                match (&e.op, self.roles.of_call(&e.op)) {
                    (Op::Call { args, .. }, Some(Role::ThreadCreate { entry, .. })) => {
                        let entries = args
                            .get(*entry)
                            .and_then(|a| self.entries(program, w, a, binding, ENTRY_DEPTH));
                        n += match entries {
                            Some(fs) => fs.iter().map(|f| self.reach(program, *f, true)).sum(),
                            None => self.unknown(program),
                        };
                    }
                    (op, _) => {
                        if let Some(g) = op.direct_callee()
                            && self.targets.contains(&g)
                            && g != w
                            && depth > 0
                        {
                            n += self.below(program, g, None, depth - 1);
                        }
                    }
                }
            }
        }
        let n = n.min(cap);
        if binding.is_none() {
            self.below.insert(w, n);
        }
        n
    }
}

/// Functions whose address is taken (in a body or a static initialiser): they may be called
/// through a pointer, by the program or by library code.
pub(crate) fn address_taken(program: &Program) -> FxHashSet<FuncId> {
    let mut out = FxHashSet::default();
    let mut note = |x: &super::Expr| {
        if let ExprKind::Func(f) = x.kind {
            out.insert(f);
        }
    };
    for f in &program.functions {
        if let Some(cfg) = &f.body {
            for e in &cfg.edges {
                // `op_exprs` reaches every sub-expression.
                super::visit::op_exprs(&e.op, &mut note);
            }
        }
    }
    for g in &program.globals {
        for item in &g.init {
            if let super::InitValue::Expr(v) = &item.value {
                super::visit::walk_expr(v, &mut note);
            }
        }
    }
    out
}

/// The direct call graph of the defined functions, and for each function whether it lies on a
/// cycle (recursion).
fn recursive_functions(program: &Program) -> (DiGraph<(), ()>, Vec<bool>) {
    let n = program.functions.len();
    let mut g: DiGraph<(), ()> = DiGraph::with_capacity(n, n);
    for _ in 0..n {
        g.add_node(());
    }
    let mut recursive = vec![false; n];
    for (i, f) in program.functions.iter().enumerate() {
        let Some(cfg) = &f.body else { continue };
        let mut seen = FxHashSet::default();
        for e in &cfg.edges {
            if let Some(t) = e.op.direct_callee()
                && program.function(t).body.is_some()
                && seen.insert(t)
            {
                if t.0 as usize == i {
                    recursive[i] = true;
                }
                g.add_edge(NodeIndex::new(i), NodeIndex::new(t.0 as usize), ());
            }
        }
    }
    for scc in petgraph::algo::tarjan_scc(&g) {
        if scc.len() > 1 {
            for x in scc {
                recursive[x.index()] = true;
            }
        }
    }
    (g, recursive)
}

/// Gives call sites of thread-creating or thread-joining functions their own copies of the
/// callee (see the module documentation); returns the number of copies made. `roles` must
/// classify the functions of `program` as it was before: copies get no role (a function with
/// a role is never copied).
pub fn specialise_thread_functions(program: &mut Program, roles: &Roles) -> usize {
    // Functions that may create or join a thread when called.
    let targets = roles.callers_reaching(program, |r| {
        matches!(r, Role::ThreadCreate { .. } | Role::ThreadJoin { .. })
    });
    if targets.is_empty() {
        return 0;
    }
    let taken = address_taken(program);
    let (graph, recursive) = recursive_functions(program);
    // Reachable functions: from `main` and from every function whose address is taken.
    let n = program.functions.len();
    let mut reachable = vec![false; n];
    let mut stack: Vec<usize> = program
        .functions
        .iter()
        .enumerate()
        .filter(|(i, f)| {
            f.body.is_some() && (f.name == "main" || taken.contains(&FuncId(*i as u32)))
        })
        .map(|(i, _)| i)
        .collect();
    while let Some(i) = stack.pop() {
        if std::mem::replace(&mut reachable[i], true) {
            continue;
        }
        for t in graph.neighbors(NodeIndex::new(i)) {
            if !reachable[t.index()] {
                stack.push(t.index());
            }
        }
    }
    // Callers before callees: reverse postorder of a depth-first search over the call graph.
    let mut order = Vec::with_capacity(n);
    let mut visited = vec![false; n];
    for root in 0..n {
        if visited[root] {
            continue;
        }
        visited[root] = true;
        let mut dfs: Vec<(usize, Vec<usize>)> = vec![(root, callees_sorted(&graph, root))];
        while let Some(top) = dfs.len().checked_sub(1) {
            match dfs[top].1.pop() {
                Some(next) if !visited[next] => {
                    visited[next] = true;
                    let succ = callees_sorted(&graph, next);
                    dfs.push((next, succ));
                }
                Some(_) => {}
                None => {
                    order.push(dfs[top].0);
                    dfs.pop();
                }
            }
        }
    }
    order.reverse();
    let mut copies = 0usize;
    let mut copied_edges = 0usize;
    let mut thread_edges = 0usize;
    let mut cost = ThreadCost::new(program, roles, &taken, &targets);
    for w in order {
        let wid = FuncId(w as u32);
        let f = program.function(wid);
        let Some(body) = &f.body else { continue };
        if !targets.contains(&wid)
            || recursive[w]
            || roles.get(wid).is_some()
            || f.name == "main"
            || body.edges.len() > MAX_BODY_EDGES
        {
            continue;
        }
        let size = body.edges.len();
        // Direct call sites in reachable functions (copies made so far included).
        let mut sites: Vec<(FuncId, EdgeId)> = Vec::new();
        for (i, g) in program.functions.iter().enumerate() {
            let live = reachable.get(i).copied().unwrap_or(false);
            let Some(cfg) = &g.body else { continue };
            if !live {
                continue;
            }
            for (ei, e) in cfg.edges.iter().enumerate() {
                if e.op.direct_callee() == Some(wid) {
                    sites.push((FuncId(i as u32), EdgeId(ei as u32)));
                }
            }
        }
        // Every direct call gets a copy (the original is left to calls through pointers, if
        // any), so that every thread of the function is named by its call.
        let several = sites.len() >= 2 || (taken.contains(&wid) && !sites.is_empty());
        if !several || sites.len() > MAX_SITES {
            continue;
        }
        let new = sites.len();
        if copies + new > MAX_COPIES || copied_edges + new * size > MAX_COPIED_EDGES {
            continue;
        }
        // The threads the copies start (each analysed on its own).
        let mut threads = 0usize;
        for &(caller, edge) in &sites {
            let args = match program
                .function(caller)
                .body
                .as_ref()
                .and_then(|c| c.edges.get(edge.0 as usize))
                .map(|e| &e.op)
            {
                Some(Op::Call { args, .. }) => args.clone(),
                _ => Vec::new(),
            };
            threads += cost.below(program, wid, Some((caller, &args)), CALL_DEPTH);
        }
        let name = &program.function(wid).name;
        tracing::debug!(func = %name, sites = new, size, threads, "copies per call site");
        if threads > MAX_THREAD_EDGES || thread_edges + threads > MAX_TOTAL_THREAD_EDGES {
            continue;
        }
        thread_edges += threads;
        for &(caller, edge) in &sites {
            let id = FuncId(program.functions.len() as u32);
            let Some(call_loc) = program
                .function(caller)
                .body
                .as_ref()
                .and_then(|c| c.edges.get(edge.0 as usize))
                .map(|e| e.loc)
            else {
                continue;
            };
            let original = program.function(wid);
            let copy = Function {
                linkage: Linkage::Internal,
                specialised: Some(Specialisation {
                    original: wid,
                    caller,
                    call_loc,
                }),
                ..original.clone()
            };
            program.functions.push(copy);
            reachable.push(true);
            if let Some(Op::Call { callee, .. }) = program.functions[caller.0 as usize]
                .body
                .as_mut()
                .and_then(|c| c.edges.get_mut(edge.0 as usize))
                .map(|e| &mut e.op)
            {
                *callee = Callee::Direct(id);
            }
            copies += 1;
            copied_edges += size;
        }
        // The original is now called only through pointers, if at all.
        if !taken.contains(&wid) {
            reachable[w] = false;
        }
    }
    copies
}

/// The callees of function `i` in the call graph, in decreasing order (popped smallest first).
fn callees_sorted(graph: &DiGraph<(), ()>, i: usize) -> Vec<usize> {
    let mut v: Vec<usize> = graph
        .neighbors(NodeIndex::new(i))
        .map(|x| x.index())
        .collect();
    v.sort_unstable_by(|a, b| b.cmp(a));
    v.dedup();
    v
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

    fn callees_of(p: &crate::ir::Program, name: &str) -> Vec<crate::ir::FuncId> {
        let f = p.function_by_name(name).expect("function");
        p.function(f)
            .body
            .as_ref()
            .expect("body")
            .edges
            .iter()
            .filter_map(|e| e.op.direct_callee())
            .filter(|g| p.function(*g).body.is_some())
            .collect()
    }

    #[test]
    fn a_wrapper_called_twice_gets_a_copy_per_call() {
        let mut p = lower(
            "#include <pthread.h>\nvoid *t(void *a) { return 0; }\n\
             int spawn(pthread_t *x) { return pthread_create(x, 0, t, 0); }\n\
             int main(void) { pthread_t a, b; spawn(&a); spawn(&b); return 0; }\n",
        );
        let roles = Model::shipped().classify(&p);
        assert_eq!(super::specialise_thread_functions(&mut p, &roles), 2);
        let original = p.function_by_name("spawn").expect("spawn");
        let calls = callees_of(&p, "main");
        assert_eq!(calls.len(), 2);
        assert_ne!(calls[0], calls[1]);
        for c in calls {
            let copy = p.function(c);
            assert_eq!(copy.name, "spawn");
            assert!(copy.specialised.is_some_and(|s| s.original == original));
        }
    }

    #[test]
    fn nested_wrappers_are_copied_callers_first() {
        let mut p = lower(
            "#include <pthread.h>\nvoid *t(void *a) { return 0; }\n\
             int inner(pthread_t *x) { return pthread_create(x, 0, t, 0); }\n\
             int outer(pthread_t *x) { return inner(x); }\n\
             int main(void) { pthread_t a, b; outer(&a); outer(&b); return 0; }\n",
        );
        let roles = Model::shipped().classify(&p);
        // A copy of `outer` per call, whose calls of `inner` then get a copy of `inner` each.
        assert_eq!(super::specialise_thread_functions(&mut p, &roles), 4);
        let inners = p
            .functions
            .iter()
            .filter(|f| f.name == "inner" && f.specialised.is_some())
            .count();
        assert_eq!(inners, 2);
    }

    #[test]
    fn recursive_and_single_site_functions_are_left_alone() {
        let mut p = lower(
            "#include <pthread.h>\nvoid *t(void *a) { return 0; }\n\
             int once(pthread_t *x) { return pthread_create(x, 0, t, 0); }\n\
             int rec(pthread_t *x, int n) { if (n) return rec(x, n - 1); \
             return pthread_create(x, 0, t, 0); }\n\
             int main(void) { pthread_t a, b, c; once(&a); rec(&b, 2); rec(&c, 3); return 0; }\n",
        );
        let roles = Model::shipped().classify(&p);
        assert_eq!(super::specialise_thread_functions(&mut p, &roles), 0);
    }

    #[test]
    fn wrappers_of_large_threads_are_left_alone() {
        // A thread of more than MAX_THREAD_EDGES statements: one copy per call would analyse
        // it once per call.
        let body = "g = g + 1;\n".repeat(super::MAX_THREAD_EDGES + 10);
        let mut p = lower(&format!(
            "#include <pthread.h>\nint g;\nvoid *big(void *a) {{ {body} return 0; }}\n\
             int spawn(pthread_t *x) {{ return pthread_create(x, 0, big, 0); }}\n\
             int main(void) {{ pthread_t a, b; spawn(&a); spawn(&b); return 0; }}\n"
        ));
        let roles = Model::shipped().classify(&p);
        assert_eq!(super::specialise_thread_functions(&mut p, &roles), 0);
        // The same through a call by pointer inside a small thread.
        let mut p = lower(&format!(
            "#include <pthread.h>\nint g;\nvoid big(void) {{ {body} }}\n\
             void (*hook)(void) = big;\n\
             void *small(void *a) {{ hook(); return 0; }}\n\
             int spawn(pthread_t *x) {{ return pthread_create(x, 0, small, 0); }}\n\
             int main(void) {{ pthread_t a, b; spawn(&a); spawn(&b); return 0; }}\n"
        ));
        let roles = Model::shipped().classify(&p);
        assert_eq!(super::specialise_thread_functions(&mut p, &roles), 0);
    }

    #[test]
    fn entries_passed_as_arguments_are_costed_per_call() {
        // A generic wrapper: the entry is a parameter, followed to each call's argument.
        let mut p = lower(
            "#include <pthread.h>\nvoid *t1(void *a) { return 0; }\nvoid *t2(void *a) { return 0; }\n\
             int spawn(pthread_t *x, void *(*f)(void *)) { return pthread_create(x, 0, f, 0); }\n\
             int main(void) { pthread_t a, b; spawn(&a, t1); spawn(&b, t2); return 0; }\n",
        );
        let roles = Model::shipped().classify(&p);
        assert_eq!(super::specialise_thread_functions(&mut p, &roles), 2);
    }
}
