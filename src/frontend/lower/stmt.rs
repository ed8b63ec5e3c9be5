//! Lowering statements into the CFG: blocks, `if`, loops, `switch` (as a chain of `assume`
//! edges, fall-through and GNU case ranges included), `goto` and labels, `break`, `continue`,
//! `return`, inline assembly.

use super::builder::{CaseLabel, SwitchCtx};
use super::convert::{convert, promote};
use super::{LResult, Lower};
use crate::ir::Loc;
use crate::ir::cfg::{NodeId, Op};
use crate::ir::expr::{BinOp, Expr};
use lang_c::ast;
use lang_c::span::Node;

impl Lower<'_> {
    /// Lowers one item of a block.
    pub(super) fn block_item(&mut self, it: &Node<ast::BlockItem>) -> LResult<()> {
        match &it.node {
            ast::BlockItem::Declaration(d) => self.declaration(d),
            ast::BlockItem::StaticAssert(sa) => self.static_assert(sa),
            ast::BlockItem::Statement(s) => self.stmt(s),
        }
    }

    fn cur(&mut self, loc: Loc) -> LResult<NodeId> {
        match self.fb.as_ref() {
            Some(b) => Ok(b.cur),
            None => Err(self.error(loc, "statement outside a function")),
        }
    }

    fn set_cur(&mut self, n: NodeId) {
        if let Some(b) = self.fb.as_mut() {
            b.cur = n;
        }
    }

    fn new_node(&mut self, loc: Loc) -> LResult<NodeId> {
        match self.fb.as_mut() {
            Some(b) => Ok(b.new_node()),
            None => Err(self.error(loc, "statement outside a function")),
        }
    }

    fn jump(&mut self, target: NodeId, loc: Loc) {
        if let Some(b) = self.fb.as_mut() {
            b.jump(target, loc);
        }
    }

    /// Continues at `n`: jumps there from the current node and makes it current.
    fn enter(&mut self, n: NodeId, loc: Loc) {
        self.jump(n, loc);
        self.set_cur(n);
    }

    /// Lowers a statement at the current node.
    pub(super) fn stmt(&mut self, s: &Node<ast::Statement>) -> LResult<()> {
        use ast::Statement as S;
        let loc = self.loc(s.span);
        match &s.node {
            S::Compound(items) => {
                self.push_scope();
                let r = items.iter().try_for_each(|it| self.block_item(it));
                self.pop_scope();
                r
            }
            S::Expression(Some(e)) => self.expr_void(e),
            S::Expression(None) => Ok(()),
            S::Labeled(l) => self.labeled(l, loc),
            S::If(i) => {
                let (t, f, join) = (
                    self.new_node(loc)?,
                    self.new_node(loc)?,
                    self.new_node(loc)?,
                );
                self.cond(&i.node.condition, t, f)?;
                self.set_cur(t);
                self.stmt(&i.node.then_statement)?;
                self.jump(join, loc);
                self.set_cur(f);
                if let Some(e) = &i.node.else_statement {
                    self.stmt(e)?;
                }
                self.enter(join, loc);
                Ok(())
            }
            S::While(w) => {
                let (head, body, exit) = (
                    self.new_node(loc)?,
                    self.new_node(loc)?,
                    self.new_node(loc)?,
                );
                self.enter(head, loc);
                self.cond(&w.node.expression, body, exit)?;
                self.set_cur(body);
                self.loop_body(&w.node.statement, exit, head)?;
                self.jump(head, loc);
                self.set_cur(exit);
                Ok(())
            }
            S::DoWhile(d) => {
                let (body, test, exit) = (
                    self.new_node(loc)?,
                    self.new_node(loc)?,
                    self.new_node(loc)?,
                );
                self.enter(body, loc);
                self.loop_body(&d.node.statement, exit, test)?;
                self.enter(test, loc);
                self.cond(&d.node.expression, body, exit)?;
                self.set_cur(exit);
                Ok(())
            }
            S::For(f) => {
                self.push_scope();
                let r = self.for_loop(f, loc);
                self.pop_scope();
                r
            }
            S::Switch(sw) => self.switch(sw, loc),
            S::Goto(l) => {
                let target = match self.fb.as_mut() {
                    Some(b) => b.label(&l.node.name, loc),
                    None => return Err(self.error(loc, "goto outside a function")),
                };
                self.jump(target, loc);
                Ok(())
            }
            S::Continue => {
                let target = self.fb.as_ref().and_then(|b| b.continues.last().copied());
                match target {
                    Some(t) => {
                        self.jump(t, loc);
                        Ok(())
                    }
                    None => Err(self.error(loc, "'continue' statement not in loop statement")),
                }
            }
            S::Break => {
                let target = self.fb.as_ref().and_then(|b| b.breaks.last().copied());
                match target {
                    Some(t) => {
                        self.jump(t, loc);
                        Ok(())
                    }
                    None => {
                        Err(self.error(loc, "'break' statement not in loop or switch statement"))
                    }
                }
            }
            S::Return(e) => self.return_stmt(e.as_deref(), loc),
            S::Asm(a) => self.asm(a, loc),
        }
    }

    /// Lowers a loop body with its `break` and `continue` targets.
    fn loop_body(&mut self, body: &Node<ast::Statement>, brk: NodeId, cont: NodeId) -> LResult<()> {
        if let Some(b) = self.fb.as_mut() {
            b.breaks.push(brk);
            b.continues.push(cont);
        }
        let r = self.stmt(body);
        if let Some(b) = self.fb.as_mut() {
            b.breaks.pop();
            b.continues.pop();
        }
        r
    }

    fn for_loop(&mut self, f: &Node<ast::ForStatement>, loc: Loc) -> LResult<()> {
        match &f.node.initializer.node {
            ast::ForInitializer::Empty => {}
            ast::ForInitializer::Expression(e) => self.expr_void(e)?,
            ast::ForInitializer::Declaration(d) => self.declaration(d)?,
            ast::ForInitializer::StaticAssert(sa) => self.static_assert(sa)?,
        }
        let (head, body, step, exit) = (
            self.new_node(loc)?,
            self.new_node(loc)?,
            self.new_node(loc)?,
            self.new_node(loc)?,
        );
        self.enter(head, loc);
        match &f.node.condition {
            Some(c) => self.cond(c, body, exit)?,
            None => self.jump(body, loc),
        }
        self.set_cur(body);
        self.loop_body(&f.node.statement, exit, step)?;
        self.enter(step, loc);
        if let Some(s) = &f.node.step {
            self.expr_void(s)?;
        }
        self.jump(head, loc);
        self.set_cur(exit);
        Ok(())
    }

    fn labeled(&mut self, l: &Node<ast::LabeledStatement>, loc: Loc) -> LResult<()> {
        let node = match &l.node.label.node {
            ast::Label::Identifier(id) => {
                let Some(b) = self.fb.as_mut() else {
                    return Err(self.error(loc, "label outside a function"));
                };
                let (n, fresh) = b.define_label(&id.node.name, loc);
                if !fresh {
                    return Err(
                        self.error(loc, format!("redefinition of label '{}'", id.node.name))
                    );
                }
                n
            }
            ast::Label::Case(e) => {
                let v = self.case_value(e)?;
                let node = self.new_node(loc)?;
                self.add_case(CaseLabel::Value(v), node, loc)?;
                node
            }
            ast::Label::CaseRange(r) => {
                let lo = self.case_value(&r.node.low)?;
                let hi = self.case_value(&r.node.high)?;
                let node = self.new_node(loc)?;
                self.add_case(CaseLabel::Range(lo, hi), node, loc)?;
                node
            }
            ast::Label::Default => {
                let node = self.new_node(loc)?;
                let ok = match self.fb.as_mut().and_then(|b| b.switches.last_mut()) {
                    Some(sw) if sw.default.is_none() => {
                        sw.default = Some(node);
                        Ok(())
                    }
                    Some(_) => Err("multiple default labels in one switch"),
                    None => Err("'default' statement not in switch statement"),
                };
                ok.map_err(|m| self.error(loc, m))?;
                node
            }
        };
        self.enter(node, loc);
        self.stmt(&l.node.statement)
    }

    fn case_value(&mut self, e: &Node<ast::Expression>) -> LResult<i128> {
        self.try_const(e)?.ok_or_else(|| {
            self.error(
                self.loc(e.span),
                "case label does not reduce to an integer constant",
            )
        })
    }

    fn add_case(&mut self, label: CaseLabel, node: NodeId, loc: Loc) -> LResult<()> {
        match self.fb.as_mut().and_then(|b| b.switches.last_mut()) {
            Some(sw) => {
                sw.cases.push((label, node, loc));
                Ok(())
            }
            None => Err(self.error(loc, "'case' statement not in switch statement")),
        }
    }

    /// `switch`: the body is lowered first (collecting case labels), then a dispatch chain from
    /// the switch point tests the cases in order: `assume(e == c)` to the case, `assume(e != c)`
    /// to the next test, and finally to `default` or past the switch.
    fn switch(&mut self, sw: &Node<ast::SwitchStatement>, loc: Loc) -> LResult<()> {
        let v = self.rvalue(&sw.node.expression)?;
        if !self.types().is_integer(v.ty) {
            return Err(self.error(loc, "statement requires expression of integer type"));
        }
        let ty = promote(self.types(), v.ty);
        let v = convert(self.types(), v, ty);
        let dispatch = self.cur(loc)?;
        let exit = self.new_node(loc)?;
        // The body starts unreachable: only case labels enter it.
        let dead = self.new_node(loc)?;
        self.set_cur(dead);
        if let Some(b) = self.fb.as_mut() {
            b.switches.push(SwitchCtx::default());
            b.breaks.push(exit);
        }
        let r = self.stmt(&sw.node.statement);
        let ctx = match self.fb.as_mut() {
            Some(b) => {
                b.breaks.pop();
                b.switches.pop().unwrap_or_default()
            }
            None => SwitchCtx::default(),
        };
        r?;
        self.jump(exit, loc);
        let int = self.pb.program.types.common.int;
        let mut test = dispatch;
        for (label, target, cloc) in ctx.cases {
            let next = self.new_node(cloc)?;
            let c = |l: &mut Self, k: i128| convert(l.types(), Expr::int(k, int), ty);
            match label {
                CaseLabel::Value(k) => {
                    let k = c(self, k);
                    let eq = self.arith(BinOp::Eq, v.clone(), k, cloc)?;
                    self.set_cur(test);
                    self.branch(eq, target, next, cloc)?;
                }
                CaseLabel::Range(lo, hi) => {
                    let (lo, hi) = (c(self, lo), c(self, hi));
                    let ge = self.arith(BinOp::Ge, v.clone(), lo, cloc)?;
                    let le = self.arith(BinOp::Le, v.clone(), hi, cloc)?;
                    let mid = self.new_node(cloc)?;
                    self.set_cur(test);
                    self.branch(ge, mid, next, cloc)?;
                    self.set_cur(mid);
                    self.branch(le, target, next, cloc)?;
                }
            }
            test = next;
        }
        self.set_cur(test);
        self.jump(ctx.default.unwrap_or(exit), loc);
        self.set_cur(exit);
        Ok(())
    }

    fn return_stmt(&mut self, e: Option<&Node<ast::Expression>>, loc: Loc) -> LResult<()> {
        let ret_ty = match self.fb.as_ref() {
            Some(b) => b.ret_ty,
            None => return Err(self.error(loc, "return outside a function")),
        };
        let value = match e {
            None => None,
            Some(e) => {
                if matches!(self.types().kind(ret_ty), crate::ir::types::TypeKind::Void) {
                    self.expr_void(e)?;
                    None
                } else {
                    let v = self.rvalue(e)?;
                    Some(convert(self.types(), v, ret_ty))
                }
            }
        };
        if let Some(b) = self.fb.as_mut() {
            let exit = b.exit;
            let cur = b.cur;
            b.edge(cur, exit, Op::Return(value), loc);
            b.cur = b.new_node();
        }
        Ok(())
    }

    /// Inline assembly: an unsupported construct; its operands are kept so that later phases
    /// see what it may write and read.
    fn asm(&mut self, a: &Node<ast::AsmStatement>, loc: Loc) -> LResult<()> {
        let (mut outputs, mut inputs) = (Vec::new(), Vec::new());
        if let ast::AsmStatement::GnuExtended(x) = &a.node {
            for o in &x.outputs {
                outputs.push(self.lvalue(&o.node.variable_name)?);
            }
            for i in &x.inputs {
                inputs.push(self.rvalue(&i.node.variable_name)?);
            }
        }
        self.unsupported(loc, "inline assembly");
        self.emit(Op::Asm { outputs, inputs }, loc)
    }
}
