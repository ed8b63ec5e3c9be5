//! Lowering C expressions: side effects become instructions at the current node, the value
//! becomes a side-effect-free [`Expr`] or an [`Lval`].
//!
//! Evaluation order is left to right (C leaves most of it unspecified). In value context,
//! `++`, assignments, calls, `&&`, `||` and `?:` yield temporaries, except where re-reading a
//! non-volatile local is exact. In void context (expression statements) no temporary is made.

use super::builder::FnBuilder;
use super::convert::{
    self, const_int, convert, is_null_constant, promote, rvalue_type, usual_arith,
};
use super::literal;
use super::{LResult, Lower, Symbol};
use crate::frontend::error::{ErrorKind, FrontendError};
use crate::ir::cfg::{Callee, NodeId, Op};
use crate::ir::expr::{BinOp, Expr, ExprKind, Host, Lval, Proj, UnOp, Var};
use crate::ir::types::{ArrayLen, FuncSig, IntKind, Quals, TypeKind};
use crate::ir::{
    FuncId, Function, Global, InitValue, Linkage, Loc, LocalKind, Storage, StrId, StringLit, TypeId,
};
use lang_c::ast;
use lang_c::span::Node;

/// The result of lowering an expression.
#[derive(Clone, Debug)]
pub(super) enum Val {
    /// An lvalue (not yet read).
    Lv(Lval),
    /// A value.
    Rv(Expr),
}

/// Where a call's result goes.
#[derive(Clone, Debug)]
pub(super) enum CallDest {
    /// Nowhere (expression statement).
    Discard,
    /// Into a fresh temporary, which is the value.
    Temp,
    /// Into this lvalue.
    Into(Lval),
}

/// Builtins that return the type of their first argument's pointee (GCC `__atomic_*_n`,
/// `__atomic_fetch_*`, `__sync_*`).
fn generic_atomic_result(name: &str) -> Option<bool> {
    // Some(true): pointee type of argument 0; Some(false): _Bool.
    if name.starts_with("__atomic_compare_exchange")
        || name == "__sync_bool_compare_and_swap"
        || name == "__atomic_test_and_set"
        || name == "__atomic_always_lock_free"
        || name == "__atomic_is_lock_free"
    {
        return Some(false);
    }
    let pointee = name == "__atomic_load_n"
        || name == "__atomic_exchange_n"
        || (name.starts_with("__atomic_")
            && (name.ends_with("_fetch") || name.contains("_fetch_")))
        || (name.starts_with("__sync_")
            && (name.contains("fetch_and_")
                || name.ends_with("_and_fetch")
                || name == "__sync_val_compare_and_swap"
                || name == "__sync_lock_test_and_set"));
    pointee.then_some(true)
}

impl Lower<'_> {
    /// The value of a void expression (a placeholder: `int 0` of type `void`).
    pub(super) fn void_value(&mut self) -> Expr {
        Expr::int(0, self.pb.program.types.common.void)
    }

    /// Appends an instruction; an error at file scope (a non-constant initialiser).
    pub(super) fn emit(&mut self, op: Op, loc: Loc) -> LResult<()> {
        match self.fb.as_mut() {
            Some(b) => {
                b.emit(op, loc);
                Ok(())
            }
            None => Err(self.error(loc, "initializer element is not a compile-time constant")),
        }
    }

    fn builder(&mut self, loc: Loc) -> LResult<&mut FnBuilder> {
        if self.fb.is_none() {
            return Err(self.error(loc, "initializer element is not a compile-time constant"));
        }
        self.fb
            .as_mut()
            .ok_or_else(|| FrontendError::file(ErrorKind::Semantic, "", "no function body"))
    }

    /// A fresh temporary holding `value`; returns the temporary's value.
    pub(super) fn materialise(&mut self, value: Expr, loc: Loc) -> LResult<Expr> {
        let ty = value.ty;
        let t = self.builder(loc)?.temp(ty, loc);
        let lv = Lval::var(Var::Local(t), ty);
        self.emit(
            Op::Assign {
                lhs: lv.clone(),
                rhs: value,
            },
            loc,
        )?;
        Ok(Expr {
            kind: ExprKind::Load(Box::new(lv)),
            ty,
        })
    }

    /// Type of a local of the current function.
    fn local_ty(&self, id: crate::ir::LocalId) -> TypeId {
        self.fb
            .as_ref()
            .and_then(|b| b.locals.get(id.0 as usize))
            .map_or(self.pb.program.types.common.int, |l| l.ty)
    }

    /// Whether reading `lv` again right after writing it gives the written value and adds no
    /// shared read: a non-volatile, non-atomic local variable.
    fn rereadable(&self, lv: &Lval) -> bool {
        matches!(lv.host, Host::Var(Var::Local(_)))
            && lv.proj.iter().all(|p| matches!(p, Proj::Field { .. }))
            && {
                let q = self.pb.program.types.quals(lv.ty);
                !q.contains(Quals::VOLATILE) && !q.contains(Quals::ATOMIC)
            }
    }

    /// Lowers an expression to an lvalue or value.
    pub(super) fn expr(&mut self, e: &Node<ast::Expression>) -> LResult<Val> {
        use ast::Expression as E;
        let loc = self.loc(e.span);
        match &e.node {
            E::Identifier(id) => self.identifier(&id.node.name, loc),
            E::Constant(c) => self.constant(&c.node, loc).map(Val::Rv),
            E::StringLiteral(s) => {
                let (id, elem) = self.string_literal(&s.node, loc)?;
                let ty = self.types().pointer(elem);
                Ok(Val::Rv(Expr {
                    kind: ExprKind::Str(id),
                    ty,
                }))
            }
            E::GenericSelection(g) => self.generic_selection(g, loc),
            E::Member(m) => self.member(m, loc).map(Val::Lv),
            E::Call(c) => self.call(c, CallDest::Temp, loc),
            E::CompoundLiteral(cl) => self.compound_literal(cl, loc),
            E::SizeOfTy(s) => {
                let outer = std::mem::take(&mut self.pending_vla);
                let ty = self.type_name(&s.node.0);
                let lengths = std::mem::replace(&mut self.pending_vla, outer);
                self.size_of_type(ty?, &lengths, loc).map(Val::Rv)
            }
            E::SizeOfVal(s) => self.size_of_expr(&s.node.0, loc).map(Val::Rv),
            E::AlignOf(a) => {
                let ty = self.type_name(&a.node.0)?;
                let align = self.types().align_of(ty);
                let st = self.pb.program.types.common.size_t;
                Ok(Val::Rv(Expr::int(align as i128, st)))
            }
            E::UnaryOperator(u) => self.unary(u, loc, true),
            E::Cast(c) => {
                let ty = self.type_name(&c.node.type_name)?;
                if matches!(self.types().kind(ty), TypeKind::Void) {
                    self.expr_void(&c.node.expression)?;
                    return Ok(Val::Rv(self.void_value()));
                }
                let v = self.rvalue(&c.node.expression)?;
                Ok(Val::Rv(convert(self.types(), v, ty)))
            }
            E::BinaryOperator(b) => self.binary(b, loc, true),
            E::Conditional(c) => self.conditional(c, loc, true),
            E::Comma(list) => {
                let Some((last, init)) = list.split_last() else {
                    return Ok(Val::Rv(self.void_value()));
                };
                for x in init {
                    self.expr_void(x)?;
                }
                self.expr(last)
            }
            E::OffsetOf(o) => self.offset_of(o, loc).map(Val::Rv),
            E::VaArg(v) => {
                let ty = self.type_name(&v.node.type_name)?;
                let ap = self.rvalue(&v.node.va_list)?;
                let f = self.builtin_function("__builtin_va_arg", loc);
                let t = self.builder(loc)?.temp(ty, loc);
                let dest = Lval::var(Var::Local(t), ty);
                self.emit(
                    Op::Call {
                        dest: Some(dest.clone()),
                        callee: Callee::Direct(f),
                        args: vec![ap],
                    },
                    loc,
                )?;
                Ok(Val::Lv(dest))
            }
            E::Statement(s) => self.statement_expression(s, loc),
        }
    }

    /// Lowers an expression used as a value (lvalue conversion, array and function decay).
    pub(super) fn rvalue(&mut self, e: &Node<ast::Expression>) -> LResult<Expr> {
        let v = self.expr(e)?;
        Ok(self.value_of(v))
    }

    /// Converts a lowered expression to a value: reads an lvalue, decays arrays.
    pub(super) fn value_of(&mut self, v: Val) -> Expr {
        match v {
            Val::Rv(e) => e,
            Val::Lv(mut lv) => match self.types().kind(lv.ty).clone() {
                TypeKind::Array { elem, .. } => {
                    let int = self.pb.program.types.common.int;
                    lv.proj.push(Proj::Index(Box::new(Expr::int(0, int))));
                    lv.ty = elem;
                    let ty = self.types().pointer(elem);
                    Expr {
                        kind: ExprKind::AddrOf(Box::new(lv)),
                        ty,
                    }
                }
                _ => {
                    let ty = self.types().unqualified(lv.ty);
                    Expr {
                        kind: ExprKind::Load(Box::new(lv)),
                        ty,
                    }
                }
            },
        }
    }

    /// Lowers an expression that must designate an object.
    pub(super) fn lvalue(&mut self, e: &Node<ast::Expression>) -> LResult<Lval> {
        match self.expr(e)? {
            Val::Lv(lv) => Ok(lv),
            Val::Rv(_) => Err(self.error(self.loc(e.span), "expression is not assignable")),
        }
    }

    /// The type of an expression without evaluating it (`sizeof`, `typeof`): arrays do not
    /// decay, qualifiers stay.
    pub(super) fn type_of(&mut self, e: &Node<ast::Expression>) -> LResult<TypeId> {
        let (v, _) = self.dry(|l| l.expr(e))?;
        Ok(match v {
            Val::Lv(lv) => lv.ty,
            Val::Rv(e) => e.ty,
        })
    }

    /// Lowers an expression evaluated only for its side effects.
    pub(super) fn expr_void(&mut self, e: &Node<ast::Expression>) -> LResult<()> {
        use ast::Expression as E;
        let loc = self.loc(e.span);
        match &e.node {
            E::Call(c) => {
                self.call(c, CallDest::Discard, loc)?;
            }
            E::BinaryOperator(b) => match b.node.operator.node {
                ast::BinaryOperator::LogicalAnd | ast::BinaryOperator::LogicalOr => {
                    let join = self.builder(loc)?.new_node();
                    let mid = self.builder(loc)?.new_node();
                    if b.node.operator.node == ast::BinaryOperator::LogicalAnd {
                        self.cond(&b.node.lhs, mid, join)?;
                    } else {
                        self.cond(&b.node.lhs, join, mid)?;
                    }
                    self.builder(loc)?.cur = mid;
                    self.expr_void(&b.node.rhs)?;
                    let b = self.builder(loc)?;
                    b.jump(join, loc);
                    b.cur = join;
                }
                _ => {
                    self.binary(b, loc, false)?;
                }
            },
            E::UnaryOperator(u) => {
                self.unary(u, loc, false)?;
            }
            E::Comma(list) => {
                for x in list.iter() {
                    self.expr_void(x)?;
                }
            }
            E::Conditional(c) => {
                self.conditional(c, loc, false)?;
            }
            E::Cast(c) => {
                let ty = self.type_name(&c.node.type_name)?;
                if matches!(self.types().kind(ty), TypeKind::Void) {
                    self.expr_void(&c.node.expression)?;
                } else {
                    self.expr(e)?;
                }
            }
            _ => {
                self.expr(e)?;
            }
        }
        Ok(())
    }

    /// Lowers a condition: control continues at `t` when it is non-zero, at `f` otherwise.
    /// Afterwards the current node is a fresh unreachable one.
    pub(super) fn cond(&mut self, e: &Node<ast::Expression>, t: NodeId, f: NodeId) -> LResult<()> {
        use ast::Expression as E;
        let loc = self.loc(e.span);
        match &e.node {
            E::BinaryOperator(b)
                if matches!(
                    b.node.operator.node,
                    ast::BinaryOperator::LogicalAnd | ast::BinaryOperator::LogicalOr
                ) =>
            {
                self.cond_logical(b, t, f, loc)
            }
            E::UnaryOperator(u) if u.node.operator.node == ast::UnaryOperator::Negate => {
                self.cond(&u.node.operand, f, t)
            }
            E::Comma(list) => {
                let Some((last, init)) = list.split_last() else {
                    return Ok(());
                };
                for x in init {
                    self.expr_void(x)?;
                }
                self.cond(last, t, f)
            }
            _ => {
                let v = self.rvalue(e)?;
                if !self.types().is_scalar(v.ty) {
                    return Err(self.error(loc, "condition is not a scalar value"));
                }
                self.branch(v, t, f, loc)
            }
        }
    }

    /// Condition `a && b` or `a || b`, short-circuiting.
    fn cond_logical(
        &mut self,
        b: &Node<ast::BinaryOperatorExpression>,
        t: NodeId,
        f: NodeId,
        loc: Loc,
    ) -> LResult<()> {
        let mid = self.builder(loc)?.new_node();
        if b.node.operator.node == ast::BinaryOperator::LogicalAnd {
            self.cond(&b.node.lhs, mid, f)?;
        } else {
            self.cond(&b.node.lhs, t, mid)?;
        }
        self.builder(loc)?.cur = mid;
        self.cond(&b.node.rhs, t, f)
    }

    /// Branches on a lowered scalar value; constant conditions keep only the taken edge.
    pub(super) fn branch(&mut self, v: Expr, t: NodeId, f: NodeId, loc: Loc) -> LResult<()> {
        let constant = const_int(&self.pb.program.types, &v);
        let b = self.builder(loc)?;
        let cur = b.cur;
        match constant {
            Some(c) => b.edge(cur, if c != 0 { t } else { f }, Op::Skip, loc),
            None => {
                b.edge(
                    cur,
                    t,
                    Op::Assume {
                        cond: v.clone(),
                        branch: true,
                    },
                    loc,
                );
                b.edge(
                    cur,
                    f,
                    Op::Assume {
                        cond: v,
                        branch: false,
                    },
                    loc,
                );
            }
        }
        b.cur = b.new_node();
        Ok(())
    }

    fn identifier(&mut self, name: &str, loc: Loc) -> LResult<Val> {
        match self.lookup(name) {
            Some(Symbol::Local(l)) => Ok(Val::Lv(Lval::var(Var::Local(l), self.local_ty(l)))),
            Some(Symbol::Global(g)) => {
                let ty = self.pb.program.global(g).ty;
                Ok(Val::Lv(Lval::var(Var::Global(g), ty)))
            }
            Some(Symbol::Func(f)) => Ok(Val::Rv(self.func_value(f))),
            Some(Symbol::EnumConst(v, ty)) => Ok(Val::Rv(Expr::int(v, ty))),
            Some(Symbol::Typedef(_)) => {
                Err(self.error(loc, format!("unexpected type name '{name}' in expression")))
            }
            None => match name {
                "__func__" | "__FUNCTION__" | "__PRETTY_FUNCTION__" => {
                    let fname = self
                        .cur_fn
                        .map(|f| self.pb.program.function(f).name.clone())
                        .unwrap_or_default();
                    let mut bytes = fname.into_bytes();
                    bytes.push(0);
                    let char_ = self.pb.program.types.common.char_;
                    let id = self.add_string(bytes, char_);
                    let ty = self.types().pointer(char_);
                    Ok(Val::Rv(Expr {
                        kind: ExprKind::Str(id),
                        ty,
                    }))
                }
                _ => Err(self.error(loc, format!("use of undeclared identifier '{name}'"))),
            },
        }
    }

    /// The value of function `f` as a pointer.
    pub(super) fn func_value(&mut self, f: FuncId) -> Expr {
        let fty = self.pb.program.function(f).ty;
        let ty = self.types().pointer(fty);
        Expr {
            kind: ExprKind::Func(f),
            ty,
        }
    }

    fn constant(&mut self, c: &ast::Constant, loc: Loc) -> LResult<Expr> {
        let dm = self.pb.program.types.data_model;
        match c {
            ast::Constant::Integer(i) => {
                let (v, k) = literal::integer(i, dm)
                    .ok_or_else(|| self.error(loc, "invalid integer constant"))?;
                if i.suffix.imaginary {
                    self.unsupported(loc, "imaginary constant");
                }
                let ty = self.types().int(k);
                Ok(Expr::int(v, ty))
            }
            ast::Constant::Float(f) => {
                let (v, k) = literal::float(f)
                    .ok_or_else(|| self.error(loc, "invalid floating constant"))?;
                let ty = self.types().plain(TypeKind::Float(k));
                Ok(Expr {
                    kind: ExprKind::Float(v),
                    ty,
                })
            }
            ast::Constant::Character(s) => {
                let (v, w) = literal::character(s)
                    .ok_or_else(|| self.error(loc, "invalid character constant"))?;
                let k = match w {
                    literal::CharWidth::Narrow => IntKind::Int,
                    other => other.kind(),
                };
                let ty = self.types().int(k);
                Ok(Expr::int(v, ty))
            }
        }
    }

    /// Adds a string literal's bytes and returns its id.
    pub(super) fn add_string(&mut self, bytes: Vec<u8>, elem_ty: TypeId) -> StrId {
        self.pb.program.strings.push(StringLit { bytes, elem_ty });
        StrId(self.pb.program.strings.len() as u32 - 1)
    }

    /// Adds a string literal; returns its id and element type.
    pub(super) fn string_literal(
        &mut self,
        pieces: &[String],
        loc: Loc,
    ) -> LResult<(StrId, TypeId)> {
        let (bytes, w) =
            literal::string(pieces).ok_or_else(|| self.error(loc, "invalid string literal"))?;
        let elem = self.types().int(w.kind());
        Ok((self.add_string(bytes, elem), elem))
    }

    /// The function named `name`, declared implicitly (`int name()`) if unknown.
    pub(super) fn builtin_function(&mut self, name: &str, loc: Loc) -> FuncId {
        if let Some(Symbol::Func(f)) = self.lookup(name) {
            return f;
        }
        // Declared implicitly by an earlier unit: declare it in this unit too (every unit
        // sees GCC's builtins).
        if let Some(Symbol::Func(f)) = self.pb.externs.get(name).copied() {
            if let Some(s) = self.scopes.first_mut() {
                s.names.insert(name.to_string(), Symbol::Func(f));
            }
            return f;
        }
        let int = self.pb.program.types.common.int;
        let ty = self.types().plain(TypeKind::Function(FuncSig {
            ret: int,
            params: Box::new([]),
            variadic: false,
            prototyped: false,
        }));
        self.pb.program.functions.push(Function {
            name: name.to_string(),
            ty,
            linkage: Linkage::External,
            params: Vec::new(),
            locals: Vec::new(),
            body: None,
            noreturn: false,
            implicit: true,
            loc,
            specialised: None,
        });
        let f = FuncId(self.pb.program.functions.len() as u32 - 1);
        self.pb.externs.insert(name.to_string(), Symbol::Func(f));
        if let Some(s) = self.scopes.first_mut() {
            s.names.insert(name.to_string(), Symbol::Func(f));
        }
        f
    }

    fn generic_selection(&mut self, g: &Node<ast::GenericSelection>, loc: Loc) -> LResult<Val> {
        let cty = self.type_of(&g.node.expression)?;
        let cty = rvalue_type(self.types(), cty);
        let mut default = None;
        let mut chosen = None;
        for a in &g.node.associations {
            match &a.node {
                ast::GenericAssociation::Type(t) => {
                    let ty = self.type_name(&t.node.type_name)?;
                    let ty = self.types().unqualified(ty);
                    if ty == cty && chosen.is_none() {
                        chosen = Some(&t.node.expression);
                    }
                }
                ast::GenericAssociation::Default(e) => default = Some(e),
            }
        }
        match chosen.or(default) {
            Some(e) => self.expr(e),
            None => Err(self.error(
                loc,
                "controlling expression type not compatible with any generic association",
            )),
        }
    }

    /// `e.f` and `e->f`.
    fn member(&mut self, m: &Node<ast::MemberExpression>, loc: Loc) -> LResult<Lval> {
        let base = match m.node.operator.node {
            ast::MemberOperator::Direct => match self.expr(&m.node.expression)? {
                Val::Lv(lv) => lv,
                Val::Rv(v) => {
                    // A struct value (a call's result): give it a temporary.
                    let ty = v.ty;
                    let t = self.builder(loc)?.temp(ty, loc);
                    let lv = Lval::var(Var::Local(t), ty);
                    self.emit(
                        Op::Assign {
                            lhs: lv.clone(),
                            rhs: v,
                        },
                        loc,
                    )?;
                    lv
                }
            },
            ast::MemberOperator::Indirect => {
                let p = self.rvalue(&m.node.expression)?;
                match self.deref(p, loc)? {
                    Val::Lv(lv) => lv,
                    Val::Rv(_) => {
                        return Err(self.error(loc, "member access through a function pointer"));
                    }
                }
            }
        };
        let name = &m.node.identifier.node.name;
        self.field(base, name, loc)
    }

    /// Projects `base` to its member `name` (looking through anonymous members).
    pub(super) fn field(&mut self, mut base: Lval, name: &str, loc: Loc) -> LResult<Lval> {
        let TypeKind::Comp(comp) = *self.types().kind(base.ty) else {
            let shown = self.types().display(base.ty);
            return Err(self.error(
                loc,
                format!("member reference base type '{shown}' is not a structure or union"),
            ));
        };
        let types = &self.pb.program.types;
        if types.comp(comp).layout.is_none() {
            let shown = types.display(base.ty);
            return Err(self.error(loc, format!("member access into incomplete type '{shown}'")));
        }
        let path = types.comp(comp).field_path(name, types);
        if path.is_empty() {
            let shown = types.display(base.ty);
            return Err(self.error(loc, format!("no member named '{name}' in '{shown}'")));
        }
        let quals = types.quals(base.ty);
        let mut cur = comp;
        let mut ty = base.ty;
        for idx in path {
            base.proj.push(Proj::Field {
                comp: cur,
                index: idx,
            });
            ty = self.pb.program.types.comp(cur).fields[idx as usize].ty;
            if let TypeKind::Comp(c) = *self.types().kind(ty) {
                cur = c;
            }
        }
        base.ty = self.types().add_quals(ty, quals);
        Ok(base)
    }

    /// `*p`: an lvalue, or the function designator itself for function pointers. `*&x` is `x`
    /// and `*(&a[k] + i)` is `a[k + i]`.
    pub(super) fn deref(&mut self, p: Expr, loc: Loc) -> LResult<Val> {
        let Some(pointee) = self.types().pointee(p.ty) else {
            let shown = self.types().display(p.ty);
            return Err(self.error(
                loc,
                format!("indirection requires pointer operand ('{shown}' invalid)"),
            ));
        };
        if matches!(self.types().kind(pointee), TypeKind::Function(_)) {
            return Ok(Val::Rv(p));
        }
        let pty = p.ty;
        match p.kind {
            ExprKind::AddrOf(lv) => Ok(Val::Lv(*lv)),
            ExprKind::Binary(op @ (BinOp::PtrAdd | BinOp::PtrSub), base, i) if base.ty == pty => {
                match split_index(*base) {
                    Ok((mut lv, k)) => {
                        let bop = if op == BinOp::PtrAdd {
                            BinOp::Add
                        } else {
                            BinOp::Sub
                        };
                        let sum = self.arith(bop, k, *i, loc)?;
                        lv.proj.push(Proj::Index(Box::new(sum)));
                        Ok(Val::Lv(lv))
                    }
                    Err(base) => Ok(Val::Lv(Lval {
                        host: Host::Deref(Box::new(Expr {
                            kind: ExprKind::Binary(op, Box::new(base), i),
                            ty: pty,
                        })),
                        proj: Vec::new(),
                        ty: pointee,
                    })),
                }
            }
            kind => Ok(Val::Lv(Lval {
                host: Host::Deref(Box::new(Expr { kind, ty: pty })),
                proj: Vec::new(),
                ty: pointee,
            })),
        }
    }

    /// `&v`.
    pub(super) fn addr_of(&mut self, v: Val, loc: Loc) -> LResult<Expr> {
        match v {
            Val::Lv(lv) => {
                let ty = self.types().pointer(lv.ty);
                if lv.proj.is_empty()
                    && let Host::Deref(p) = lv.host
                {
                    return Ok(Expr { kind: p.kind, ty });
                }
                Ok(Expr {
                    kind: ExprKind::AddrOf(Box::new(lv)),
                    ty,
                })
            }
            Val::Rv(e) => match &e.kind {
                ExprKind::Func(_) | ExprKind::Str(_) => Ok(e),
                _ if self.types().func_sig(e.ty).is_some() => Ok(e),
                _ => Err(self.error(loc, "cannot take the address of an rvalue")),
            },
        }
    }

    fn unary(
        &mut self,
        u: &Node<ast::UnaryOperatorExpression>,
        loc: Loc,
        want: bool,
    ) -> LResult<Val> {
        use ast::UnaryOperator as U;
        let operand = &u.node.operand;
        match u.node.operator.node {
            U::Address => {
                let v = self.expr(operand)?;
                self.addr_of(v, loc).map(Val::Rv)
            }
            U::Indirection => {
                let p = self.rvalue(operand)?;
                self.deref(p, loc)
            }
            U::Plus => {
                let v = self.rvalue(operand)?;
                let ty = promote(self.types(), v.ty);
                Ok(Val::Rv(convert(self.types(), v, ty)))
            }
            U::Minus | U::Complement => {
                let v = self.rvalue(operand)?;
                let ty = promote(self.types(), v.ty);
                let v = convert(self.types(), v, ty);
                let op = if u.node.operator.node == U::Minus {
                    UnOp::Neg
                } else {
                    UnOp::BitNot
                };
                Ok(Val::Rv(self.fold(Expr {
                    kind: ExprKind::Unary(op, Box::new(v)),
                    ty,
                })))
            }
            U::Negate => {
                let v = self.rvalue(operand)?;
                let int = self.pb.program.types.common.int;
                Ok(Val::Rv(self.fold(Expr {
                    kind: ExprKind::Unary(UnOp::LogNot, Box::new(v)),
                    ty: int,
                })))
            }
            U::PreIncrement | U::PreDecrement | U::PostIncrement | U::PostDecrement => {
                let inc = matches!(u.node.operator.node, U::PreIncrement | U::PostIncrement);
                let post = matches!(u.node.operator.node, U::PostIncrement | U::PostDecrement);
                let lv = self.lvalue(operand)?;
                let int = self.pb.program.types.common.int;
                let one = Expr::int(1, int);
                let op = if inc { BinOp::Add } else { BinOp::Sub };
                self.update(lv, op, one, post, want, loc)
            }
        }
    }

    /// `lv op= rhs` (also `++`/`--` with `rhs` 1): the new value is stored; the result is the
    /// old value when `post`, the new one otherwise (only computed when `want`).
    fn update(
        &mut self,
        lv: Lval,
        op: BinOp,
        rhs: Expr,
        post: bool,
        want: bool,
        loc: Loc,
    ) -> LResult<Val> {
        let old = self.value_of(Val::Lv(lv.clone()));
        if post && want {
            let saved = self.materialise(old, loc)?;
            let new = self.arith(op, saved.clone(), rhs, loc)?;
            let new = convert(self.types(), new, lv.ty);
            self.emit(Op::Assign { lhs: lv, rhs: new }, loc)?;
            return Ok(Val::Rv(saved));
        }
        let new = self.arith(op, old, rhs, loc)?;
        let new = convert(self.types(), new, lv.ty);
        self.store(lv, new, want, loc)
    }

    /// Stores `value` into `lv`; when `want`, returns the stored value (re-reading `lv` only if
    /// that is exact, else through a temporary).
    fn store(&mut self, lv: Lval, value: Expr, want: bool, loc: Loc) -> LResult<Val> {
        if !want {
            self.emit(
                Op::Assign {
                    lhs: lv,
                    rhs: value,
                },
                loc,
            )?;
            return Ok(Val::Rv(self.void_value()));
        }
        let constant = matches!(
            value.kind,
            ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Str(_) | ExprKind::Func(_)
        );
        if constant {
            self.emit(
                Op::Assign {
                    lhs: lv,
                    rhs: value.clone(),
                },
                loc,
            )?;
            return Ok(Val::Rv(value));
        }
        if self.rereadable(&lv) {
            self.emit(
                Op::Assign {
                    lhs: lv.clone(),
                    rhs: value,
                },
                loc,
            )?;
            return Ok(Val::Rv(self.value_of(Val::Lv(lv))));
        }
        let t = self.materialise(value, loc)?;
        self.emit(
            Op::Assign {
                lhs: lv,
                rhs: t.clone(),
            },
            loc,
        )?;
        Ok(Val::Rv(t))
    }

    /// Folds an expression whose operands are constants, and the identities `x + 0`, `0 + x`,
    /// `x - 0` (pointer arithmetic included).
    pub(super) fn fold(&mut self, e: Expr) -> Expr {
        let foldable = match &e.kind {
            ExprKind::Unary(_, a) => a.as_int().is_some(),
            ExprKind::Binary(_, a, b) => a.as_int().is_some() && b.as_int().is_some(),
            _ => false,
        };
        if foldable
            && self.types().is_integer(e.ty)
            && let Some(v) = const_int(&self.pb.program.types, &e)
        {
            return Expr::int(v, e.ty);
        }
        let ty = e.ty;
        match e.kind {
            ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::PtrAdd | BinOp::PtrSub, a, b)
                if b.as_int() == Some(0) && a.ty == ty =>
            {
                *a
            }
            ExprKind::Binary(BinOp::Add, a, b) if a.as_int() == Some(0) && b.ty == ty => *b,
            kind => Expr { kind, ty },
        }
    }

    /// Builds `l op r` with C's operand conversions (pointer arithmetic included).
    pub(super) fn arith(&mut self, op: BinOp, l: Expr, r: Expr, loc: Loc) -> LResult<Expr> {
        let t = &mut self.pb.program.types;
        let (lp, rp) = (t.is_pointer(l.ty), t.is_pointer(r.ty));
        let int = t.common.int;
        let e = match op {
            BinOp::Add if lp && t.is_integer(r.ty) => Expr {
                ty: l.ty,
                kind: ExprKind::Binary(BinOp::PtrAdd, Box::new(l), Box::new(r)),
            },
            BinOp::Add if rp && t.is_integer(l.ty) => Expr {
                ty: r.ty,
                kind: ExprKind::Binary(BinOp::PtrAdd, Box::new(r), Box::new(l)),
            },
            BinOp::Sub if lp && t.is_integer(r.ty) => Expr {
                ty: l.ty,
                kind: ExprKind::Binary(BinOp::PtrSub, Box::new(l), Box::new(r)),
            },
            BinOp::Sub if lp && rp => Expr {
                ty: t.common.ptrdiff_t,
                kind: ExprKind::Binary(BinOp::PtrDiff, Box::new(l), Box::new(r)),
            },
            BinOp::PtrAdd | BinOp::PtrSub | BinOp::PtrDiff => Expr {
                ty: if op == BinOp::PtrDiff {
                    t.common.ptrdiff_t
                } else {
                    l.ty
                },
                kind: ExprKind::Binary(op, Box::new(l), Box::new(r)),
            },
            _ if op.is_comparison() => {
                let (l, r) = if lp || rp {
                    // Pointer comparisons: a null constant or integer takes the pointer's type.
                    let (lt, rt) = (l.ty, r.ty);
                    let l = if !lp { convert(t, l, rt) } else { l };
                    let r = if !rp || is_null_constant(t, &r) {
                        convert(t, r, lt)
                    } else {
                        r
                    };
                    (l, r)
                } else if t.is_arithmetic(l.ty) && t.is_arithmetic(r.ty) {
                    let ct = usual_arith(t, l.ty, r.ty);
                    (convert(t, l, ct), convert(t, r, ct))
                } else {
                    return Err(self.error(loc, "invalid operands to comparison"));
                };
                Expr {
                    ty: int,
                    kind: ExprKind::Binary(op, Box::new(l), Box::new(r)),
                }
            }
            BinOp::Shl | BinOp::Shr => {
                let lt = promote(t, l.ty);
                let rt = promote(t, r.ty);
                Expr {
                    ty: lt,
                    kind: ExprKind::Binary(
                        op,
                        Box::new(convert(t, l, lt)),
                        Box::new(convert(t, r, rt)),
                    ),
                }
            }
            _ => {
                if !(t.is_arithmetic(l.ty) && t.is_arithmetic(r.ty)) {
                    let (a, b) = (t.display(l.ty), t.display(r.ty));
                    return Err(self.error(
                        loc,
                        format!(
                            "invalid operands to binary {} ('{a}' and '{b}')",
                            op.c_str()
                        ),
                    ));
                }
                let ct = usual_arith(t, l.ty, r.ty);
                Expr {
                    ty: ct,
                    kind: ExprKind::Binary(
                        op,
                        Box::new(convert(t, l, ct)),
                        Box::new(convert(t, r, ct)),
                    ),
                }
            }
        };
        Ok(self.fold(e))
    }

    fn binary(
        &mut self,
        b: &Node<ast::BinaryOperatorExpression>,
        loc: Loc,
        want: bool,
    ) -> LResult<Val> {
        use ast::BinaryOperator as B;
        let (lhs, rhs) = (&b.node.lhs, &b.node.rhs);
        let op = match b.node.operator.node {
            B::Index => {
                let l = self.rvalue(lhs)?;
                let r = self.rvalue(rhs)?;
                let sum = self.arith(BinOp::Add, l, r, loc)?;
                if !self.types().is_pointer(sum.ty) {
                    return Err(self.error(loc, "subscripted value is not an array or pointer"));
                }
                return self.deref(sum, loc);
            }
            B::Assign => return self.assign(lhs, rhs, want, loc),
            B::LogicalAnd | B::LogicalOr => return self.logical(b, loc),
            B::AssignMultiply => Some(BinOp::Mul),
            B::AssignDivide => Some(BinOp::Div),
            B::AssignModulo => Some(BinOp::Rem),
            B::AssignPlus => Some(BinOp::Add),
            B::AssignMinus => Some(BinOp::Sub),
            B::AssignShiftLeft => Some(BinOp::Shl),
            B::AssignShiftRight => Some(BinOp::Shr),
            B::AssignBitwiseAnd => Some(BinOp::BitAnd),
            B::AssignBitwiseXor => Some(BinOp::BitXor),
            B::AssignBitwiseOr => Some(BinOp::BitOr),
            _ => None,
        };
        if let Some(op) = op {
            let lv = self.lvalue(lhs)?;
            let r = self.rvalue(rhs)?;
            return self.update(lv, op, r, false, want, loc);
        }
        let op = match b.node.operator.node {
            B::Multiply => BinOp::Mul,
            B::Divide => BinOp::Div,
            B::Modulo => BinOp::Rem,
            B::Plus => BinOp::Add,
            B::Minus => BinOp::Sub,
            B::ShiftLeft => BinOp::Shl,
            B::ShiftRight => BinOp::Shr,
            B::Less => BinOp::Lt,
            B::Greater => BinOp::Gt,
            B::LessOrEqual => BinOp::Le,
            B::GreaterOrEqual => BinOp::Ge,
            B::Equals => BinOp::Eq,
            B::NotEquals => BinOp::Ne,
            B::BitwiseAnd => BinOp::BitAnd,
            B::BitwiseXor => BinOp::BitXor,
            _ => BinOp::BitOr,
        };
        let l = self.rvalue(lhs)?;
        let r = self.rvalue(rhs)?;
        self.arith(op, l, r, loc).map(Val::Rv)
    }

    /// `lhs = rhs`. A call on the right stores its result directly into `lhs`.
    fn assign(
        &mut self,
        lhs: &Node<ast::Expression>,
        rhs: &Node<ast::Expression>,
        want: bool,
        loc: Loc,
    ) -> LResult<Val> {
        let lv = self.lvalue(lhs)?;
        if let ast::Expression::Call(c) = &rhs.node
            && (!want || self.rereadable(&lv))
        {
            let ret = self.call_result_type(c)?;
            let target = self.types().unqualified(lv.ty);
            if ret == Some(target) {
                self.call(c, CallDest::Into(lv.clone()), loc)?;
                return Ok(if want {
                    Val::Rv(self.value_of(Val::Lv(lv)))
                } else {
                    Val::Rv(self.void_value())
                });
            }
        }
        let v = self.rvalue(rhs)?;
        let v = convert(self.types(), v, lv.ty);
        self.store(lv, v, want, loc)
    }

    /// Result type of a call expression, without lowering it.
    pub(super) fn call_result_type(
        &mut self,
        c: &Node<ast::CallExpression>,
    ) -> LResult<Option<TypeId>> {
        if let ast::Expression::Identifier(id) = &c.node.callee.node
            && self.lookup(&id.node.name).is_none()
        {
            // Implicitly declared (or a generic builtin): lower through a temporary.
            return Ok(None);
        }
        let cty = self.type_of(&c.node.callee)?;
        let cty = rvalue_type(self.types(), cty);
        Ok(self.types().func_sig(cty).map(|s| s.ret))
    }

    /// `a && b`, `a || b` as values: 1 or 0 in a temporary (folded when constant).
    fn logical(&mut self, b: &Node<ast::BinaryOperatorExpression>, loc: Loc) -> LResult<Val> {
        let int = self.pb.program.types.common.int;
        let and = b.node.operator.node == ast::BinaryOperator::LogicalAnd;
        if let Some(l) = self.try_const(&b.node.lhs)? {
            if (l == 0) == and {
                return Ok(Val::Rv(Expr::int(if and { 0 } else { 1 }, int)));
            }
            if let Some(r) = self.try_const(&b.node.rhs)? {
                return Ok(Val::Rv(Expr::int((r != 0) as i128, int)));
            }
        }
        let fb = self.builder(loc)?;
        let t = fb.temp(int, loc);
        let (yes, no, join) = (fb.new_node(), fb.new_node(), fb.new_node());
        self.cond_logical(b, yes, no, loc)?;
        let lv = Lval::var(Var::Local(t), int);
        let fb = self.builder(loc)?;
        fb.edge(
            yes,
            join,
            Op::Assign {
                lhs: lv.clone(),
                rhs: Expr::int(1, int),
            },
            loc,
        );
        fb.edge(
            no,
            join,
            Op::Assign {
                lhs: lv.clone(),
                rhs: Expr::int(0, int),
            },
            loc,
        );
        fb.cur = join;
        Ok(Val::Rv(self.value_of(Val::Lv(lv))))
    }

    /// `c ? a : b`. A constant condition selects its branch without evaluating the other.
    fn conditional(
        &mut self,
        c: &Node<ast::ConditionalExpression>,
        loc: Loc,
        want: bool,
    ) -> LResult<Val> {
        let (a, b) = (&c.node.then_expression, &c.node.else_expression);
        if let Some(k) = self.try_const(&c.node.condition)? {
            let (taken, other) = if k != 0 { (a, b) } else { (b, a) };
            if !want {
                self.expr_void(taken)?;
                return Ok(Val::Rv(self.void_value()));
            }
            let other_ty = self.type_of(other)?;
            let other_ty = rvalue_type(self.types(), other_ty);
            let v = self.rvalue(taken)?;
            let rty = self.cond_type(v.ty, other_ty, &v, None);
            return Ok(Val::Rv(convert(self.types(), v, rty)));
        }
        let fb = self.builder(loc)?;
        let (yes, no, join) = (fb.new_node(), fb.new_node(), fb.new_node());
        self.cond(&c.node.condition, yes, no)?;
        self.builder(loc)?.cur = yes;
        let va = if want {
            Some(self.rvalue(a)?)
        } else {
            self.expr_void(a).map(|_| None)?
        };
        let end_a = self.builder(loc)?.cur;
        self.builder(loc)?.cur = no;
        let vb = if want {
            Some(self.rvalue(b)?)
        } else {
            self.expr_void(b).map(|_| None)?
        };
        let end_b = self.builder(loc)?.cur;
        let (Some(va), Some(vb)) = (va, vb) else {
            let fb = self.builder(loc)?;
            fb.edge(end_a, join, Op::Skip, loc);
            fb.edge(end_b, join, Op::Skip, loc);
            fb.cur = join;
            return Ok(Val::Rv(self.void_value()));
        };
        let rty = self.cond_type(va.ty, vb.ty, &va, Some(&vb));
        if matches!(self.types().kind(rty), TypeKind::Void) {
            let fb = self.builder(loc)?;
            fb.edge(end_a, join, Op::Skip, loc);
            fb.edge(end_b, join, Op::Skip, loc);
            fb.cur = join;
            return Ok(Val::Rv(self.void_value()));
        }
        let va = convert(self.types(), va, rty);
        let vb = convert(self.types(), vb, rty);
        let fb = self.builder(loc)?;
        let t = fb.temp(rty, loc);
        let lv = Lval::var(Var::Local(t), rty);
        fb.edge(
            end_a,
            join,
            Op::Assign {
                lhs: lv.clone(),
                rhs: va,
            },
            loc,
        );
        fb.edge(
            end_b,
            join,
            Op::Assign {
                lhs: lv.clone(),
                rhs: vb,
            },
            loc,
        );
        fb.cur = join;
        Ok(Val::Rv(self.value_of(Val::Lv(lv))))
    }

    /// Result type of `?:` (C11 §6.5.15p5–6).
    fn cond_type(&mut self, a: TypeId, b: TypeId, va: &Expr, vb: Option<&Expr>) -> TypeId {
        let t = &mut self.pb.program.types;
        if t.is_arithmetic(a) && t.is_arithmetic(b) {
            return usual_arith(t, a, b);
        }
        if matches!(t.kind(a), TypeKind::Void) || matches!(t.kind(b), TypeKind::Void) {
            return t.common.void;
        }
        match (t.is_pointer(a), t.is_pointer(b)) {
            (true, true) => {
                let void_ptr = |ty: TypeId, t: &crate::ir::TypeTable| {
                    t.pointee(ty)
                        .is_some_and(|p| matches!(t.kind(p), TypeKind::Void))
                };
                if vb.is_some_and(|v| is_null_constant(t, v)) {
                    a
                } else if is_null_constant(t, va) {
                    b
                } else if void_ptr(a, t) {
                    a
                } else if void_ptr(b, t) {
                    b
                } else {
                    a
                }
            }
            (true, false) => a,
            (false, true) => b,
            _ => t.unqualified(a),
        }
    }

    /// A call. Builtins that are expressions (`__builtin_expect`, `__builtin_constant_p`,
    /// `__builtin_choose_expr`, `__builtin_object_size`) are folded.
    pub(super) fn call(
        &mut self,
        c: &Node<ast::CallExpression>,
        dest: CallDest,
        loc: Loc,
    ) -> LResult<Val> {
        let args = &c.node.arguments;
        let mut callee_name = None;
        if let ast::Expression::Identifier(id) = &c.node.callee.node {
            let name = id.node.name.as_str();
            callee_name = Some(name);
            if self.lookup(name).is_none() {
                if let Some(v) = self.expression_builtin(name, args, loc)? {
                    return self.deliver(v, dest, loc);
                }
                self.builtin_function(name, loc);
            }
        }
        let f = self.rvalue(&c.node.callee)?;
        let Some(sig) = self.types().func_sig(f.ty).cloned() else {
            let shown = self.types().display(f.ty);
            return Err(self.error(
                loc,
                format!("called object type '{shown}' is not a function or function pointer"),
            ));
        };
        let mut argv = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let v = self.rvalue(a)?;
            let v = match sig.params.get(i) {
                Some(&pt) if sig.prototyped => convert(self.types(), v, pt),
                _ => self.default_promote(v),
            };
            argv.push(v);
        }
        let mut ret = sig.ret;
        if let Some(name) = callee_name {
            match (generic_atomic_result(name), argv.first()) {
                (Some(true), Some(a0)) => {
                    if let Some(p) = self.types().pointee(a0.ty) {
                        ret = self.types().unqualified(p);
                    }
                }
                (Some(false), _) => ret = self.pb.program.types.common.bool_,
                _ => {}
            }
        }
        let callee = match f.kind {
            ExprKind::Func(fid) => Callee::Direct(fid),
            _ => Callee::Indirect(f),
        };
        let is_void = matches!(self.types().kind(ret), TypeKind::Void);
        let (dest, result) = match dest {
            CallDest::Discard => (None, None),
            CallDest::Into(lv) => (Some(lv), None),
            CallDest::Temp if is_void => (None, None),
            CallDest::Temp => {
                let t = self.builder(loc)?.temp(ret, loc);
                let lv = Lval::var(Var::Local(t), ret);
                (Some(lv.clone()), Some(lv))
            }
        };
        self.emit(
            Op::Call {
                dest,
                callee,
                args: argv,
            },
            loc,
        )?;
        Ok(match result {
            Some(lv) => Val::Lv(lv),
            None => Val::Rv(self.void_value()),
        })
    }

    /// Delivers a folded builtin's value to a call destination.
    fn deliver(&mut self, v: Val, dest: CallDest, loc: Loc) -> LResult<Val> {
        match dest {
            CallDest::Temp => Ok(v),
            CallDest::Discard => Ok(Val::Rv(self.void_value())),
            CallDest::Into(lv) => {
                let e = self.value_of(v);
                let e = convert(self.types(), e, lv.ty);
                self.emit(Op::Assign { lhs: lv, rhs: e }, loc)?;
                Ok(Val::Rv(self.void_value()))
            }
        }
    }

    /// Builtins that GCC folds into expressions. `None` when `name` is not one.
    fn expression_builtin(
        &mut self,
        name: &str,
        args: &[Node<ast::Expression>],
        loc: Loc,
    ) -> LResult<Option<Val>> {
        let int = self.pb.program.types.common.int;
        Ok(Some(match (name, args) {
            ("__builtin_expect" | "__builtin_expect_with_probability", [e, ..]) => self.expr(e)?,
            ("__builtin_constant_p", [e]) => {
                let k = self.try_const(e)?.is_some();
                Val::Rv(Expr::int(k as i128, int))
            }
            ("__builtin_choose_expr", [c, a, b]) => {
                let k = self.try_const(c)?.ok_or_else(|| {
                    self.error(loc, "__builtin_choose_expr needs a constant condition")
                })?;
                self.expr(if k != 0 { a } else { b })?
            }
            ("__builtin_object_size" | "__builtin_dynamic_object_size", [p, t]) => {
                self.expr_void(p)?;
                let ty = self.try_const(t)?.unwrap_or(0);
                let st = self.pb.program.types.common.size_t;
                let v = if ty < 2 { -1 } else { 0 };
                Val::Rv(convert(self.types(), Expr::int(v, int), st))
            }
            _ => return Ok(None),
        }))
    }

    /// Default argument promotions (C11 §6.5.2.2p6): integer promotion, `float` to `double`.
    fn default_promote(&mut self, v: Expr) -> Expr {
        let t = &mut self.pb.program.types;
        let ty = match t.kind(v.ty) {
            TypeKind::Float(crate::ir::types::FloatKind::Float) => t.common.double,
            TypeKind::Int(_) => promote(t, v.ty),
            _ => return v,
        };
        convert(t, v, ty)
    }

    fn compound_literal(&mut self, cl: &Node<ast::CompoundLiteral>, loc: Loc) -> LResult<Val> {
        let ty = self.type_name(&cl.node.type_name)?;
        let init = super::init::InitRef::List(&cl.node.initializer_list);
        self.compound_literals += 1;
        if self.fb.is_some() {
            let name = format!("compound#{}", self.compound_literals);
            let t = self.builder(loc)?.add_local(name, ty, LocalKind::Temp, loc);
            let ty = self.init_local(t, ty, init, loc)?;
            return Ok(Val::Lv(Lval::var(Var::Local(t), ty)));
        }
        let (ty, items) = self.initializer(ty, init)?;
        let init = self.static_init(items);
        self.pb.program.globals.push(Global {
            name: format!("compound#{}", self.compound_literals),
            ty,
            linkage: Linkage::None,
            storage: Storage::Defined,
            thread_local: false,
            function: None,
            init,
            loc,
        });
        let g = crate::ir::GlobalId(self.pb.program.globals.len() as u32 - 1);
        Ok(Val::Lv(Lval::var(Var::Global(g), ty)))
    }

    /// Turns initialiser items into static initialiser entries.
    pub(super) fn static_init(
        &mut self,
        items: Vec<super::init::Item>,
    ) -> Vec<crate::ir::InitEntry> {
        items
            .into_iter()
            .map(|it| crate::ir::InitEntry {
                proj: it.proj,
                value: match it.value {
                    super::init::ItemValue::Expr(e) => InitValue::Expr(e),
                    super::init::ItemValue::Str(s) => InitValue::Str(s),
                },
            })
            .collect()
    }

    /// `sizeof(type)`; `lengths` are the lengths of its variable-length dimensions, innermost
    /// first (the run-time size is their product with the element size).
    fn size_of_type(&mut self, ty: TypeId, lengths: &[Expr], loc: Loc) -> LResult<Expr> {
        let st = self.pb.program.types.common.size_t;
        if let Some(s) = self.types().size_of(ty) {
            return Ok(Expr::int(s as i128, st));
        }
        match self.types().kind(ty).clone() {
            TypeKind::Array { elem, len } => {
                let (n, inner) = match (len, lengths.split_last()) {
                    (ArrayLen::Fixed(n), _) => (Expr::int(n as i128, st), lengths),
                    (ArrayLen::Variable, Some((n, inner))) => (n.clone(), inner),
                    _ => {
                        return Ok(Expr {
                            kind: ExprKind::Unknown,
                            ty: st,
                        });
                    }
                };
                let es = self.size_of_type(elem, inner, loc)?;
                let n = convert(self.types(), n, st);
                self.arith(BinOp::Mul, n, es, loc)
            }
            TypeKind::Void | TypeKind::Function(_) => Ok(Expr::int(1, st)), // GNU
            _ => {
                let shown = self.types().display(ty);
                Err(self.error(
                    loc,
                    format!("invalid application of 'sizeof' to an incomplete type '{shown}'"),
                ))
            }
        }
    }

    fn size_of_expr(&mut self, e: &Node<ast::Expression>, loc: Loc) -> LResult<Expr> {
        if let ast::Expression::StringLiteral(s) = &e.node {
            let (bytes, _) = literal::string(&s.node)
                .ok_or_else(|| self.error(loc, "invalid string literal"))?;
            let st = self.pb.program.types.common.size_t;
            return Ok(Expr::int(bytes.len() as i128, st));
        }
        let ty = self.type_of(e)?;
        let mut lengths = Vec::new();
        if let ast::Expression::Identifier(id) = &e.node
            && let (Some(Symbol::Local(l)), Some(fb)) =
                (self.lookup(&id.node.name), self.fb.as_ref())
        {
            lengths = fb.vla_lengths.get(&l).cloned().unwrap_or_default();
        }
        self.size_of_type(ty, &lengths, loc)
    }

    fn offset_of(&mut self, o: &Node<ast::OffsetOfExpression>, loc: Loc) -> LResult<Expr> {
        let ty = self.type_name(&o.node.type_name)?;
        let st = self.pb.program.types.common.size_t;
        // Build `&((T *)0)->designator` and fold it.
        let null = Expr::int(0, st);
        let pty = self.types().pointer(ty);
        let p = convert(self.types(), null, pty);
        let Val::Lv(base) = self.deref(p, loc)? else {
            return Err(self.error(loc, "offsetof of a function type"));
        };
        let d = &o.node.designator.node;
        let mut lv = self.field(base, &d.base.node.name, loc)?;
        for m in &d.members {
            match &m.node {
                ast::OffsetMember::Member(id) | ast::OffsetMember::IndirectMember(id) => {
                    lv = self.field(lv, &id.node.name, loc)?;
                }
                ast::OffsetMember::Index(ix) => {
                    let k = self.rvalue(ix)?;
                    let TypeKind::Array { elem, .. } = *self.types().kind(lv.ty) else {
                        return Err(self.error(loc, "offsetof subscript of a non-array"));
                    };
                    lv.proj.push(Proj::Index(Box::new(k)));
                    lv.ty = elem;
                }
            }
        }
        match convert::const_lval_address(&self.pb.program.types, &lv) {
            Some(off) => Ok(Expr::int(off, st)),
            None => Ok(Expr {
                kind: ExprKind::Unknown,
                ty: st,
            }),
        }
    }

    /// `({ ...; e; })`: the value of the last expression statement, read into a temporary when
    /// it reads memory.
    fn statement_expression(&mut self, s: &Node<ast::Statement>, loc: Loc) -> LResult<Val> {
        let ast::Statement::Compound(items) = &s.node else {
            self.stmt(s)?;
            return Ok(Val::Rv(self.void_value()));
        };
        if self.fb.is_none() {
            return Err(self.error(loc, "statement expression outside a function"));
        }
        self.push_scope();
        let result = (|| {
            let Some((last, init)) = items.split_last() else {
                return Ok(Val::Rv(self.void_value()));
            };
            for it in init {
                self.block_item(it)?;
            }
            if let ast::BlockItem::Statement(st) = &last.node
                && let ast::Statement::Expression(Some(e)) = &st.node
            {
                let v = self.expr(e)?;
                let is_void = match &v {
                    Val::Rv(e) => matches!(self.types().kind(e.ty), TypeKind::Void),
                    Val::Lv(_) => false,
                };
                if is_void {
                    return Ok(v);
                }
                let v = self.value_of(v);
                return if reads_memory(&v) {
                    self.materialise(v, loc).map(Val::Rv)
                } else {
                    Ok(Val::Rv(v))
                };
            }
            self.block_item(last)?;
            Ok(Val::Rv(self.void_value()))
        })();
        self.pop_scope();
        result
    }
}

/// Splits `&lv[k]` into `lv` and `k`; gives the expression back otherwise.
fn split_index(e: Expr) -> Result<(Lval, Expr), Expr> {
    match e.kind {
        ExprKind::AddrOf(mut lv) if matches!(lv.proj.last(), Some(Proj::Index(_))) => {
            match lv.proj.pop() {
                Some(Proj::Index(k)) => Ok((*lv, *k)),
                other => {
                    lv.proj.extend(other);
                    Err(Expr {
                        kind: ExprKind::AddrOf(lv),
                        ty: e.ty,
                    })
                }
            }
        }
        kind => Err(Expr { kind, ty: e.ty }),
    }
}

/// Whether evaluating `e` reads memory.
fn reads_memory(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Load(_) => true,
        ExprKind::AddrOf(lv) => {
            lv.proj
                .iter()
                .any(|p| matches!(p, Proj::Index(i) if reads_memory(i)))
                || matches!(&lv.host, Host::Deref(p) if reads_memory(p))
        }
        ExprKind::Unary(_, a) | ExprKind::Cast(a) => reads_memory(a),
        ExprKind::Binary(_, a, b) => reads_memory(a) || reads_memory(b),
        _ => false,
    }
}
