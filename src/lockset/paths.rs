//! Lock paths: a lock named by the access path that reaches it from a global through pointer
//! cells (`compress_have->mutex`, `in_pool.have->mutex`), for the lock calls whose object the
//! value analysis cannot single out (a lock allocated by a helper called in a loop is one heap
//! summary object, so its address names no single lock).
//!
//! The path is read from the lock call's argument, through the parameters of the wrappers that
//! pass it down (`possess(compress_have)` calls `pthread_mutex_lock(&bolt->mutex)`: the
//! parameter `bolt` is bound to `compress_have` at every call of the context), as RacerD and
//! Infer name locks by access paths and Goblint's symbolic locks name them by expressions.
//!
//! Two threads that take the lock through the same path hold the same lock when the pointer
//! cells along the path keep their values while the locks are held. [`unstable_cells`] checks
//! that over the program's writes to those cells: a write while no other thread runs (`main`
//! before it creates threads) or to an object not published yet keeps the identity; any other
//! write makes it an assumption, reported as an imprecision that blocks a `no-race` verdict
//! (the races the path lock excludes could be real if the program swaps lock objects while
//! threads hold them).

use crate::context::{CallKind, FnCtxId, ThreadContexts, ThreadId};
use crate::ir::types::CompId;
use crate::ir::{
    EdgeId, Expr, ExprKind, FuncId, GlobalId, Host, LocalId, Lval, Op, Program, Proj, Var,
};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// How many parameter bindings (calls up) a path follows.
const MAX_BINDINGS: usize = 4;

/// A pointer cell read along a path.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cell {
    /// A pointer stored in a global that is not a struct member (the global and the byte
    /// offset of the pointer in it).
    Global(GlobalId, u64),
    /// A pointer stored in member `index` of struct or union `comp` (in a global or in any
    /// object the path reaches).
    Field(CompId, u32),
}

/// Where a path starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Root {
    /// At the address of a global.
    Global(GlobalId),
    /// At the address parameter `index` of a function holds (a *relative* path: it names a
    /// lock only for one call, see [`LockPath::relative`]).
    Param(FuncId, u32),
}

/// A lock named by its access path: start at `root`, for each offset but the last add it and
/// load the pointer stored there, then add the last offset (all in bytes). A path from a
/// global loads at least one pointer (a lock at a constant offset of a global has an
/// address).
///
/// A path from a parameter names the lock of one call: a lock wrapper called with different
/// arguments takes a different lock each time, so such a lock excludes nothing by itself; the
/// lockset analysis renames it into the caller's terms when the call returns (the argument's
/// own path) and forgets it when that fails.
#[derive(Clone, Debug)]
pub struct LockPath {
    /// Where the path starts.
    pub root: Root,
    /// Byte offsets (see the type's docs); at least two.
    pub offs: SmallVec<[u64; 3]>,
    /// The pointer cells loaded along the path, one per offset but the last.
    pub cells: SmallVec<[Cell; 2]>,
    /// The lock as C text (`compress_have->mutex`; for a relative path, with a mark after
    /// the parameter: see [`LockPath::display`]).
    text: String,
}

impl LockPath {
    /// The identity of the lock: the root and the offsets.
    pub fn key(&self) -> (Root, SmallVec<[u64; 3]>) {
        (self.root, self.offs.clone())
    }

    /// The lock as C text (`compress_have->mutex`, `pool->have->mutex`).
    pub fn display(&self) -> String {
        self.text.replace(ROOT_MARK, "")
    }

    /// Whether the path starts at a parameter (it names a lock only within one call).
    pub fn relative(&self) -> bool {
        matches!(self.root, Root::Param(..))
    }

    /// The path of the lock this relative path names in a caller whose argument for the
    /// parameter has path `arg` (a path from a global that loads no pointer is a lock
    /// address: see [`LockPath::global_address`]).
    fn rebased(&self, arg: &Sym) -> LockPath {
        // The argument's address: `arg.offs` loads, then `arg.off`; the path adds its first
        // offset to that and goes on.
        let mut offs = arg.offs.clone();
        let mut cells = arg.cells.clone();
        let first = self.offs.first().copied().unwrap_or(0);
        offs.push(arg.off.saturating_add(first));
        offs.extend(self.offs.iter().skip(1).copied());
        cells.extend(self.cells.iter().copied());
        // The text: the argument's object, then the path's members and loads past its root.
        let text = match self.text.split_once(ROOT_MARK) {
            Some((_, rest)) => rebase_text(&arg.text, rest),
            None => self.text.clone(),
        };
        LockPath {
            root: arg.root,
            offs,
            cells,
            text,
        }
    }

    /// For a path from a global that loads no pointer: the global and the lock's byte offset.
    pub fn global_address(&self) -> Option<(GlobalId, u64)> {
        match (self.root, self.cells.is_empty(), self.offs.as_slice()) {
            (Root::Global(g), true, [off]) => Some((g, *off)),
            _ => None,
        }
    }
}

/// Separates a relative path's parameter from the rest of its text in [`Sym::text`] while
/// the text is built (never shown: [`lock_path`] renders it away).
const ROOT_MARK: char = '\u{1}';

/// `object` (a C lvalue) followed by `rest`, the members (`.f`, `->f`) of a text built from a
/// parameter's pointee.
fn rebase_text(object: &str, rest: &str) -> String {
    let mut out = object.to_string();
    let mut rest = rest;
    // The first member applies to the object itself.
    if let Some(r) = rest.strip_prefix("->") {
        rest = r;
        out = match out.strip_prefix('*') {
            Some(inner) => format!("{inner}->{}", take_member(&mut rest)),
            None => format!("{out}.{}", take_member(&mut rest)),
        };
    }
    out.push_str(rest);
    out
}

/// The leading member name of `rest`, which it drops.
fn take_member<'a>(rest: &mut &'a str) -> &'a str {
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let (name, tail) = rest.split_at(end);
    *rest = tail;
    name
}

/// A pointer value as a path: it designates the object described by `text`, at byte `off`
/// past the object reached by loading the pointers at `offs` from `root`.
#[derive(Clone, Debug)]
struct Sym {
    root: Root,
    offs: SmallVec<[u64; 3]>,
    cells: SmallVec<[Cell; 2]>,
    off: u64,
    /// The member selected last (the cell a load from here reads).
    field: Option<(CompId, u32)>,
    /// The designated object as a C lvalue.
    text: String,
}

impl Sym {
    fn same(&self, o: &Sym) -> bool {
        self.root == o.root && self.offs == o.offs && self.off == o.off
    }
}

/// What [`lock_path`] needs of a thread: its contexts and, per function context, the call
/// edges (caller context, edge) that enter it.
pub struct Callers<'a> {
    tc: &'a ThreadContexts,
    callers: FxHashMap<FnCtxId, crate::context::CallSites>,
}

impl<'a> Callers<'a> {
    /// The reverse call graph of a thread's contexts (plain and atomic calls only: a callback
    /// or a once-routine gets no arguments from the call).
    pub fn new(tc: &'a ThreadContexts) -> Callers<'a> {
        Callers {
            tc,
            callers: tc.callers(),
        }
    }

    /// The thread.
    pub fn thread(&self) -> ThreadId {
        self.tc.thread
    }
}

/// Per function, the parameters that are never written and whose address is never taken
/// (so they hold the argument's value throughout the call).
#[derive(Default, Debug, Clone)]
pub struct StableParams {
    by_func: FxHashMap<FuncId, FxHashSet<LocalId>>,
}

impl StableParams {
    fn get(&mut self, program: &Program, func: FuncId) -> &FxHashSet<LocalId> {
        self.by_func.entry(func).or_insert_with(|| {
            let f = program.function(func);
            let mut out: FxHashSet<LocalId> = f.params.iter().copied().collect();
            let Some(cfg) = &f.body else {
                return FxHashSet::default();
            };
            crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
                out.remove(&l);
            });
            for e in &cfg.edges {
                crate::ir::visit::written_locals(&e.op, &mut |l| {
                    out.remove(&l);
                });
            }
            out
        })
    }
}

/// The lock path of the lock call argument `arg` (an address) at edge `eid` of context `ctx`
/// of a thread, when it reads only globals, memory reached from them and parameters every
/// caller binds to the same path (at most [`MAX_BINDINGS`] calls up). `None` otherwise.
pub fn lock_path(
    program: &Program,
    callers: &Callers<'_>,
    params: &mut StableParams,
    ctx: FnCtxId,
    arg: &Expr,
) -> Option<LockPath> {
    let s = eval_ptr(program, callers, params, ctx, arg, 0)?;
    if matches!(s.root, Root::Global(_)) && s.cells.is_empty() {
        return None;
    }
    let mut offs = s.offs;
    offs.push(s.off);
    Some(LockPath {
        root: s.root,
        offs,
        cells: s.cells,
        text: s.text,
    })
}

/// The path of the lock relative path `path` (of the callee of call edge `eid` in context
/// `ctx`) names in the caller: the callee's parameter replaced by the call's argument.
/// `None` when the argument has no path.
pub fn rebase(
    program: &Program,
    callers: &Callers<'_>,
    params: &mut StableParams,
    ctx: FnCtxId,
    eid: EdgeId,
    path: &LockPath,
) -> Option<LockPath> {
    let Root::Param(_, index) = path.root else {
        return Some(path.clone());
    };
    let func = callers.tc.ctx(ctx).func;
    let Op::Call { args, .. } = &program.function(func).body.as_ref()?.edge(eid).op else {
        return None;
    };
    let arg = eval_ptr(program, callers, params, ctx, args.get(index as usize)?, 0)?;
    Some(path.rebased(&arg))
}

/// The path of the object pointer `e` designates.
fn eval_ptr(
    program: &Program,
    callers: &Callers<'_>,
    params: &mut StableParams,
    ctx: FnCtxId,
    e: &Expr,
    depth: usize,
) -> Option<Sym> {
    let func = callers.tc.ctx(ctx).func;
    let e = crate::ir::visit::strip_casts(e);
    match &e.kind {
        ExprKind::AddrOf(lv) => eval_lval(program, callers, params, ctx, lv, depth),
        ExprKind::Load(lv) => {
            if let (Host::Var(Var::Local(l)), true) = (&lv.host, lv.proj.is_empty()) {
                if params.get(program, func).contains(l) {
                    return bound_param(program, callers, params, ctx, *l, depth).or_else(|| {
                        // Bound to different paths: relative to the parameter, in the lock
                        // call's own function only.
                        let f = program.function(func);
                        let index = f.params.iter().position(|p| p == l)?;
                        (depth == 0).then(|| Sym {
                            root: Root::Param(func, index as u32),
                            offs: SmallVec::new(),
                            cells: SmallVec::new(),
                            off: 0,
                            field: None,
                            text: format!(
                                "*{}{ROOT_MARK}",
                                f.locals.get(l.0 as usize).map_or("?", |x| x.name.as_str())
                            ),
                        })
                    });
                }
                // `p = &O.f` defined once: the path of `&O.f`.
                let alias = super::local_alias(program, func, e)?;
                return eval_ptr(program, callers, params, ctx, &alias, depth);
            }
            let s = eval_lval(program, callers, params, ctx, lv, depth)?;
            load(s)
        }
        _ => None,
    }
}

/// The path of the object lvalue `lv` designates.
fn eval_lval(
    program: &Program,
    callers: &Callers<'_>,
    params: &mut StableParams,
    ctx: FnCtxId,
    lv: &Lval,
    depth: usize,
) -> Option<Sym> {
    let mut s = match &lv.host {
        Host::Var(Var::Global(g)) => {
            let global = program.global(*g);
            // One instance per thread: the same path names different locks.
            if global.thread_local {
                return None;
            }
            Sym {
                root: Root::Global(*g),
                offs: SmallVec::new(),
                cells: SmallVec::new(),
                off: 0,
                field: None,
                text: global.name.clone(),
            }
        }
        Host::Var(Var::Local(_)) => return None,
        Host::Deref(p) => {
            let mut s = eval_ptr(program, callers, params, ctx, p, depth)?;
            if lv.proj.is_empty() {
                s.text = format!("*{}", s.text);
            }
            s
        }
    };
    for p in &lv.proj {
        let Proj::Field { comp, index } = p else {
            return None;
        };
        let field = program.types.comp(*comp).fields.get(*index as usize)?;
        s.off = s.off.checked_add(field.offset)?;
        s.field = Some((*comp, *index));
        // An anonymous member is not named in C.
        if let Some(name) = &field.name {
            s.text = match s.text.strip_prefix('*') {
                Some(inner) => format!("{inner}->{name}"),
                None => format!("{}.{name}", s.text),
            };
        }
    }
    Some(s)
}

/// The path of the pointer stored in the object `s` designates.
fn load(mut s: Sym) -> Option<Sym> {
    let cell = match (s.field, s.root) {
        (Some((comp, index)), _) => Cell::Field(comp, index),
        (None, Root::Global(g)) if s.cells.is_empty() => Cell::Global(g, s.off),
        // A pointer loaded from a heap object at no member: nothing to check its writes by.
        (None, _) => return None,
    };
    s.cells.push(cell);
    s.offs.push(s.off);
    s.off = 0;
    s.field = None;
    s.text = format!("*{}", s.text);
    Some(s)
}

/// The path parameter `l` of context `ctx` holds: the one its argument has at every call
/// entering the context, when they all agree.
fn bound_param(
    program: &Program,
    callers: &Callers<'_>,
    params: &mut StableParams,
    ctx: FnCtxId,
    l: LocalId,
    depth: usize,
) -> Option<Sym> {
    if depth >= MAX_BINDINGS {
        return None;
    }
    let func = callers.tc.ctx(ctx).func;
    let index = program.function(func).params.iter().position(|p| *p == l)?;
    let sites = callers.callers.get(&ctx)?.clone();
    let mut out: Option<Sym> = None;
    for (c, e, kind) in sites {
        // Entered some other way (a callback, a once-routine): nobody we see binds it.
        if !matches!(kind, CallKind::Plain | CallKind::Atomic) {
            return None;
        }
        let caller = program.function(callers.tc.ctx(c).func);
        let Op::Call { args, .. } = &caller.body.as_ref()?.edge(e).op else {
            return None;
        };
        let s = eval_ptr(program, callers, params, c, args.get(index)?, depth + 1)?;
        match &out {
            Some(o) if !o.same(&s) => return None,
            Some(_) => {}
            None => out = Some(s),
        }
    }
    out
}

/// A write that may change a lock path's cell while other threads run: where, and which cell
/// (as C text).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct UnstableCell {
    /// The lock, as C text.
    pub lock: String,
    /// The write.
    pub loc: crate::ir::Loc,
}

/// Whether a write to `lv` may change `cell`: a store to the pointer itself, or to a whole
/// object containing it (a struct copy).
pub fn writes_cell(program: &Program, lv: &Lval, cell: Cell) -> bool {
    match cell {
        Cell::Global(g, off) => {
            if lv.host != Host::Var(Var::Global(g)) {
                return false;
            }
            // Offset of the written member; a non-constant index may be anywhere.
            let mut at = 0u64;
            for p in &lv.proj {
                match p {
                    Proj::Field { comp, index } => {
                        match program.types.comp(*comp).fields.get(*index as usize) {
                            Some(f) => at = at.saturating_add(f.offset),
                            None => return true,
                        }
                    }
                    Proj::Index(_) => return true,
                }
            }
            let size = program.types.size_of(lv.ty).unwrap_or(u64::MAX);
            at <= off && off < at.saturating_add(size.max(1))
        }
        Cell::Field(comp, index) => {
            if lv.proj.iter().any(
                |p| matches!(p, Proj::Field { comp: c, index: i } if *c == comp && *i == index),
            ) {
                return true;
            }
            // A copy of a whole instance.
            matches!(program.types.kind(lv.ty), crate::ir::types::TypeKind::Comp(c) if *c == comp)
        }
    }
}

/// The writes that make lock paths' identities assumptions: each write (`writes`: the written
/// lvalue, where, and whether it surely happens while no other thread runs or to an object
/// not published yet) that may change a cell of a path in `paths`, where the write is not
/// harmless; a global cell whose address is taken (`taken`) may be written anywhere, which
/// counts as a write at the global's declaration. Sorted, one per (lock, place).
pub fn unstable_cells<'l>(
    program: &Program,
    paths: &[LockPath],
    taken: &FxHashSet<GlobalId>,
    writes: impl Iterator<Item = (&'l Lval, crate::ir::Loc, bool)>,
) -> Vec<UnstableCell> {
    let mut out = Vec::new();
    // Relative paths exclude nothing; their renamings into callers are paths of their own.
    let paths: Vec<&LockPath> = paths.iter().filter(|p| !p.relative()).collect();
    for p in &paths {
        for c in &p.cells {
            if let Cell::Global(g, _) = c
                && taken.contains(g)
            {
                out.push(UnstableCell {
                    lock: p.display(),
                    loc: program.global(*g).loc,
                });
            }
        }
    }
    for (lv, loc, harmless) in writes {
        if harmless {
            continue;
        }
        for p in &paths {
            if p.cells.iter().any(|c| writes_cell(program, lv, *c)) {
                out.push(UnstableCell {
                    lock: p.display(),
                    loc,
                });
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether a global's address is taken anywhere (then its cells may be written through
/// pointers [`writes_cell`] does not see).
pub fn address_taken_globals(program: &Program) -> FxHashSet<GlobalId> {
    let mut out = FxHashSet::default();
    let mut see = |e: &Expr| {
        crate::ir::visit::walk_expr(e, &mut |x| {
            if let ExprKind::AddrOf(lv) = &x.kind
                && let Host::Var(Var::Global(g)) = lv.host
            {
                out.insert(g);
            }
        });
    };
    for f in &program.functions {
        if let Some(cfg) = &f.body {
            for e in &cfg.edges {
                crate::ir::visit::op_exprs(&e.op, &mut see);
            }
        }
    }
    for g in &program.globals {
        for item in &g.init {
            if let crate::ir::InitValue::Expr(e) = &item.value {
                see(e);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebased_text_applies_the_first_member_to_the_argument_object() {
        // `possess(compress_have)`: the argument designates `*compress_have`.
        assert_eq!(
            rebase_text("*compress_have", "->mutex"),
            "compress_have->mutex"
        );
        // `possess(p->have)` with `p = &in_pool`: the argument designates `*in_pool.have`.
        assert_eq!(
            rebase_text("*in_pool.have", "->mutex"),
            "in_pool.have->mutex"
        );
        // `take(&in_pool)` for a path `p->have->m`: the argument designates `in_pool`.
        assert_eq!(rebase_text("in_pool", "->have->m"), "in_pool.have->m");
        // A lock at the parameter's pointee itself.
        assert_eq!(rebase_text("*g_lock_ptr", ""), "*g_lock_ptr");
    }

    #[test]
    fn member_names_end_at_the_next_operator() {
        let mut rest = "have->m";
        assert_eq!(take_member(&mut rest), "have");
        assert_eq!(rest, "->m");
    }
}
