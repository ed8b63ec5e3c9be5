//! Function-pointer targets by a flow-insensitive, field-based analysis: the functions a call
//! through a pointer may reach are those whose address flows into the place the pointer is
//! read from, not every address-taken function of a compatible type (issue "Real programs",
//! item 4: "function pointers resolve to the values assigned to them").
//!
//! This is the two-layer type analysis of Lu and Hu ("Where does it go? Refining indirect-call
//! targets with multi-layer type analysis", CCS 2019) written as a subset-based propagation
//! over *slots*:
//! - a variable (global, or local of one function), whatever its projections by index;
//! - a member of a struct type (field-based: every object of the type shares the slot, so
//!   struct copies, heap objects and pointers to them need no points-to information);
//! - the return value of a function.
//!
//! Facts propagate along assignments, argument passing (including calls through pointers,
//! resolved by the facts themselves, to a fixpoint) and returns. Where the analysis loses
//! track, it stays sound by falling back to signatures, but only over the *escaped*
//! functions: those stored where no slot names the memory (`*p = f` for a `p` that is no
//! member), passed to code we do not see (library functions, variadic arguments, functions
//! with a concurrency role), or kept in a slot whose address is taken (`&fp`) or that code we
//! do not see may write (an `extern` global). A read the analysis cannot name (`*p`, a slot
//! whose address is taken, a member of a type that code we do not see may fill, the result of
//! an unknown function, a parameter of a function called from unknown places) may therefore
//! yield any escaped function of a compatible type.
//!
//! Known limit (shared with Lu and Hu's first layer): members are told apart by their struct
//! type, so an object accessed through a pointer to an unrelated struct type would be missed.
//! Struct types converted into one another by a cast (`(struct base *)d`) share one slot for
//! all their members; a conversion through `void *` to an unrelated struct type is not seen.

use crate::ir::types::{CompId, CompKind, TypeKind};
use crate::ir::visit::op_exprs;
use crate::ir::{
    Callee, Expr, ExprKind, FuncId, GlobalId, Host, InitValue, LocalId, Lval, Op, Program, Proj,
    Storage, Var,
};
use crate::model::Roles;
use rustc_hash::{FxHashMap, FxHashSet};

/// A place a function pointer may be stored in (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Slot {
    /// A global variable, every element and byte of it.
    Global(GlobalId),
    /// A local variable (parameter, temporary) of a function, every instance.
    Local(FuncId, LocalId),
    /// Member `index` of every object of struct type `comp`.
    Field(CompId, u32),
    /// Every member of a union type, and every member of the struct types cast into one
    /// another (one slot for all of them).
    Merged,
    /// The value a function returns.
    Ret(FuncId),
}

/// What a slot may hold, or an expression may evaluate to.
#[derive(Clone, Debug, Default, PartialEq)]
struct Facts {
    /// Functions (sorted, without duplicates).
    funcs: Vec<FuncId>,
    /// Whether it may also hold a value the analysis lost track of (any escaped function).
    unknown: bool,
}

impl Facts {
    fn unknown() -> Facts {
        Facts {
            funcs: Vec::new(),
            unknown: true,
        }
    }

    /// Joins `other` into `self`; whether `self` grew.
    fn join(&mut self, other: &Facts) -> bool {
        let mut grew = false;
        if other.unknown && !self.unknown {
            self.unknown = true;
            grew = true;
        }
        for f in &other.funcs {
            if let Err(i) = self.funcs.binary_search(f) {
                self.funcs.insert(i, *f);
                grew = true;
            }
        }
        grew
    }

    fn is_empty(&self) -> bool {
        self.funcs.is_empty() && !self.unknown
    }
}

/// The function-pointer facts of a program (computed once, by [`FuncPtrs::new`]).
#[derive(Debug, Default)]
pub struct FuncPtrs {
    slots: FxHashMap<Slot, Facts>,
    /// Slots whose address the program takes: reads of them may see any escaped function.
    exposed: FxHashSet<Slot>,
    /// Struct types cast into other struct types (their members share [`Slot::Merged`]).
    merged: FxHashSet<CompId>,
    /// The escaped functions, sorted.
    escaped: Vec<FuncId>,
}

impl FuncPtrs {
    /// Runs the analysis over every function body and static initialiser of `program` (to a
    /// fixpoint; each round is linear in the size of the program, and the facts only grow).
    /// `address_taken`: the functions whose address the program uses as a value
    /// ([`super::syntactic::Syntactic::address_taken`]).
    pub fn new(program: &Program, roles: &Roles, address_taken: &[FuncId]) -> FuncPtrs {
        let mut fp = FuncPtrs {
            merged: merged_comps(program),
            ..FuncPtrs::default()
        };
        let mut escaped: Vec<FuncId> = Vec::new();
        // Functions called from places we do not see (address taken, or never called by the
        // program: main, library entries) receive unknown arguments.
        let mut called = vec![false; program.functions.len()];
        for f in &program.functions {
            for e in f.body.iter().flat_map(|c| &c.edges) {
                if let Some(g) = e.op.direct_callee()
                    && let Some(c) = called.get_mut(g.0 as usize)
                {
                    *c = true;
                }
            }
        }
        for (gi, g) in program.globals.iter().enumerate() {
            let gid = GlobalId(gi as u32);
            if g.storage == Storage::Extern {
                fp.slots.insert(Slot::Global(gid), Facts::unknown());
            }
            for item in &g.init {
                let InitValue::Expr(e) = &item.value else {
                    continue;
                };
                let v = fp.eval(program, None, e);
                let slot = match last_field(&item.proj) {
                    Some((c, i)) => fp.field_slot(program, c, i),
                    None => Slot::Global(gid),
                };
                fp.slots.entry(slot).or_default().join(&v);
                if g.storage == Storage::Extern {
                    escaped.extend(v.funcs.iter().copied());
                }
            }
        }
        for (fi, f) in program.functions.iter().enumerate() {
            let fid = FuncId(fi as u32);
            if f.body.is_some() && (address_taken.binary_search(&fid).is_ok() || !called[fi]) {
                for p in &f.params {
                    fp.slots.insert(Slot::Local(fid, *p), Facts::unknown());
                }
            }
            if let Some(cfg) = &f.body {
                for e in &cfg.edges {
                    fp.note_exposed(program, fid, &e.op);
                }
            }
        }
        loop {
            let mut grew = false;
            for (fi, f) in program.functions.iter().enumerate() {
                let fid = FuncId(fi as u32);
                let Some(cfg) = &f.body else {
                    continue;
                };
                for e in &cfg.edges {
                    grew |= fp.transfer(program, roles, fid, &e.op, &mut escaped);
                }
            }
            // Functions kept in exposed or unknown-writable slots escape too.
            for s in &fp.exposed {
                if let Some(v) = fp.slots.get(s) {
                    escaped.extend(v.funcs.iter().copied());
                }
            }
            escaped.sort();
            escaped.dedup();
            if escaped != fp.escaped {
                fp.escaped = escaped.clone();
                grew = true;
            }
            if !grew {
                break;
            }
        }
        fp
    }

    /// The functions a call through `e` (in function `func`) may reach: those stored where
    /// `e` reads, and the escaped functions of a compatible type (`compatible`) when the read
    /// may see a value the analysis lost. Sorted; functions without a body included.
    pub fn targets(
        &self,
        program: &Program,
        func: FuncId,
        e: &Expr,
        compatible: &dyn Fn(FuncId) -> bool,
    ) -> Vec<FuncId> {
        let v = self.eval(program, Some(func), e);
        let mut out = v.funcs;
        if v.unknown {
            out.extend(self.escaped.iter().copied().filter(|f| compatible(*f)));
            out.sort();
            out.dedup();
        }
        out
    }

    /// The functions stored in members of struct type `comp` (and of the struct types nested
    /// in it), sorted. Members may also hold escaped functions (code we do not see may fill
    /// them), which the caller adds by type.
    pub fn member_targets(&self, program: &Program, comp: CompId) -> Vec<FuncId> {
        let mut facts = Facts::default();
        let mut stack = vec![comp];
        let mut seen = FxHashSet::default();
        while let Some(c) = stack.pop() {
            if !seen.insert(c) {
                continue;
            }
            for (i, fd) in program.types.comp(c).fields.iter().enumerate() {
                if let Some(v) = self.slots.get(&self.field_slot(program, c, i as u32)) {
                    facts.join(v);
                }
                let mut t = fd.ty;
                while let TypeKind::Array { elem, .. } = program.types.kind(t) {
                    t = *elem;
                }
                if let TypeKind::Comp(inner) = program.types.kind(t) {
                    stack.push(*inner);
                }
            }
        }
        facts.funcs
    }

    /// The escaped functions (sorted): every call the analysis cannot follow may reach them.
    pub fn escaped(&self) -> &[FuncId] {
        &self.escaped
    }

    fn field_slot(&self, program: &Program, comp: CompId, index: u32) -> Slot {
        if self.merged.contains(&comp) || program.types.comp(comp).kind == CompKind::Union {
            Slot::Merged
        } else {
            Slot::Field(comp, index)
        }
    }

    /// The slot an lvalue designates: its last member, else its variable; `None` for memory
    /// only a pointer names (`*p`, `p[i]`).
    fn slot(&self, program: &Program, func: Option<FuncId>, lv: &Lval) -> Option<Slot> {
        if let Some((c, i)) = last_field(&lv.proj) {
            return Some(self.field_slot(program, c, i));
        }
        match lv.host {
            Host::Var(Var::Global(g)) => Some(Slot::Global(g)),
            Host::Var(Var::Local(l)) => func.map(|f| Slot::Local(f, l)),
            Host::Deref(_) => None,
        }
    }

    /// What reading `lv` may yield.
    fn read(&self, program: &Program, func: Option<FuncId>, lv: &Lval) -> Facts {
        let Some(s) = self.slot(program, func, lv) else {
            return Facts::unknown();
        };
        let mut v = self.slots.get(&s).cloned().unwrap_or_default();
        // A member may be filled by code we do not see (a library's own objects), an exposed
        // slot through a pointer.
        if matches!(s, Slot::Field(..) | Slot::Merged) || self.exposed.contains(&s) {
            v.unknown = true;
        }
        v
    }

    fn eval(&self, program: &Program, func: Option<FuncId>, e: &Expr) -> Facts {
        match &e.kind {
            ExprKind::Func(f) => Facts {
                funcs: vec![*f],
                unknown: false,
            },
            ExprKind::Load(lv) => self.read(program, func, lv),
            ExprKind::Cast(x) | ExprKind::Unary(_, x) => self.eval(program, func, x),
            ExprKind::Binary(_, a, b) => {
                let mut v = self.eval(program, func, a);
                v.join(&self.eval(program, func, b));
                v
            }
            ExprKind::Unknown => Facts::unknown(),
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) | ExprKind::AddrOf(_) => {
                Facts::default()
            }
        }
    }

    /// Marks the slots whose address `op` takes (a pointer to them may write or read them).
    fn note_exposed(&mut self, program: &Program, func: FuncId, op: &Op) {
        let mut found: Vec<Slot> = Vec::new();
        op_exprs(op, &mut |y| {
            if let ExprKind::AddrOf(lv) = &y.kind
                && !matches!(program.types.kind(lv.ty), TypeKind::Comp(_))
                && let Some(s) = self.slot(program, Some(func), lv)
            {
                found.push(s);
            }
        });
        self.exposed.extend(found);
    }

    /// Stores `v` into `lv` (escaping its functions when no slot names the memory).
    fn store(
        &mut self,
        program: &Program,
        func: FuncId,
        lv: &Lval,
        v: &Facts,
        escaped: &mut Vec<FuncId>,
    ) -> bool {
        if v.is_empty() {
            return false;
        }
        match self.slot(program, Some(func), lv) {
            Some(s) => self.slots.entry(s).or_default().join(v),
            None => {
                escaped.extend(v.funcs.iter().copied());
                false
            }
        }
    }

    /// One transfer function: whether a slot grew.
    fn transfer(
        &mut self,
        program: &Program,
        roles: &Roles,
        func: FuncId,
        op: &Op,
        escaped: &mut Vec<FuncId>,
    ) -> bool {
        match op {
            Op::Assign { lhs, rhs } => {
                let v = self.eval(program, Some(func), rhs);
                self.store(program, func, lhs, &v, escaped)
            }
            Op::Return(Some(e)) => {
                let v = self.eval(program, Some(func), e);
                !v.is_empty() && self.slots.entry(Slot::Ret(func)).or_default().join(&v)
            }
            Op::Asm { outputs, .. } => {
                let mut grew = false;
                for lv in outputs {
                    grew |= self.store(program, func, lv, &Facts::unknown(), escaped);
                }
                grew
            }
            Op::Call { dest, callee, args } => {
                let vals: Vec<Facts> = args
                    .iter()
                    .map(|a| self.eval(program, Some(func), a))
                    .collect();
                let callees: Vec<FuncId> = match callee {
                    Callee::Direct(g) => vec![*g],
                    Callee::Indirect(e) => {
                        let v = self.eval(program, Some(func), e);
                        let mut c = v.funcs;
                        if v.unknown {
                            c.extend(self.escaped.iter().copied());
                        }
                        c
                    }
                };
                let mut result = Facts::default();
                let mut grew = false;
                let mut unseen = callees.is_empty();
                for g in callees {
                    let gf = program.function(g);
                    if gf.body.is_none() || roles.get(g).is_some() {
                        unseen = true;
                    }
                    if gf.body.is_none() {
                        continue;
                    }
                    for (k, v) in vals.iter().enumerate() {
                        match gf.params.get(k) {
                            Some(p) if !v.is_empty() => {
                                grew |= self.slots.entry(Slot::Local(g, *p)).or_default().join(v)
                            }
                            Some(_) => {}
                            None => escaped.extend(v.funcs.iter().copied()),
                        }
                    }
                    if let Some(r) = self.slots.get(&Slot::Ret(g)) {
                        result.join(&r.clone());
                    }
                }
                if unseen {
                    // Code we do not see may keep and call what it is given, and return
                    // anything.
                    for v in &vals {
                        escaped.extend(v.funcs.iter().copied());
                    }
                    result.unknown = true;
                }
                if let Some(d) = dest {
                    grew |= self.store(program, func, d, &result, escaped);
                }
                grew
            }
            Op::Skip | Op::Assume { .. } | Op::Return(None) => false,
        }
    }
}

/// The last member projection of a path (indices after it select inside the member).
fn last_field(proj: &[Proj]) -> Option<(CompId, u32)> {
    proj.iter().rev().find_map(|p| match p {
        Proj::Field { comp, index } => Some((*comp, *index)),
        Proj::Index(_) => None,
    })
}

/// The struct types a cast converts a pointer to into a pointer to another struct type.
fn merged_comps(program: &Program) -> FxHashSet<CompId> {
    let types = &program.types;
    let comp_of = |t| match types.pointee(t).map(|p| types.kind(p)) {
        Some(TypeKind::Comp(c)) => Some(*c),
        _ => None,
    };
    let mut out = FxHashSet::default();
    let mut note = |e: &Expr| {
        if let ExprKind::Cast(x) = &e.kind
            && let (Some(a), Some(b)) = (comp_of(e.ty), comp_of(x.ty))
            && a != b
        {
            out.insert(a);
            out.insert(b);
        }
    };
    for f in &program.functions {
        for e in f.body.iter().flat_map(|c| &c.edges) {
            op_exprs(&e.op, &mut note);
        }
    }
    for g in &program.globals {
        for item in &g.init {
            if let InitValue::Expr(e) = &item.value {
                crate::ir::visit::walk_expr(e, &mut note);
            }
        }
    }
    out
}
