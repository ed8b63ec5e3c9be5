//! Initialisers (C11 §6.7.9): braced lists with designators and brace elision, string literals
//! for character arrays, completion of arrays of unknown size.
//!
//! [`Lower::initializer`] flattens an initialiser into [`Item`]s, each storing one value into a
//! sub-object (a projection path from the initialised object). Items apply in order; what no item
//! covers is zero. Static objects keep the items as their static initialiser; locals get a
//! `__builtin_memset` to zero (unless every scalar is covered) followed by one assignment per
//! item.

use super::convert::convert;
use super::{LResult, Lower};
use crate::ir::cfg::{Callee, Op};
use crate::ir::expr::{Expr, ExprKind, Lval, Proj, Var};
use crate::ir::types::{ArrayLen, CompKind, TypeKind};
use crate::ir::{Loc, LocalId, StrId, TypeId};
use lang_c::ast;
use lang_c::span::Node;

/// An initialiser: one expression or a braced list.
#[derive(Clone, Copy)]
pub(super) enum InitRef<'a> {
    /// `= e`.
    Expr(&'a Node<ast::Expression>),
    /// `= { ... }`.
    List(&'a [Node<ast::InitializerListItem>]),
}

impl<'a> InitRef<'a> {
    /// The initialiser of an AST node.
    pub(super) fn of(init: &'a Node<ast::Initializer>) -> InitRef<'a> {
        match &init.node {
            ast::Initializer::Expression(e) => InitRef::Expr(e),
            ast::Initializer::List(l) => InitRef::List(l),
        }
    }
}

/// The value an item stores.
#[derive(Clone, Debug)]
pub(super) enum ItemValue {
    /// A value of the sub-object's type.
    Expr(Expr),
    /// A string literal copied into a character array.
    Str(StrId),
}

/// One store of an initialiser.
#[derive(Clone, Debug)]
pub(super) struct Item {
    /// Path from the initialised object to the sub-object.
    pub proj: Vec<Proj>,
    /// Type of the sub-object.
    pub ty: TypeId,
    /// Stored value.
    pub value: ItemValue,
}

/// Largest number of elements a GNU range designator `[lo ... hi]` may span.
const MAX_RANGE_DESIGNATOR: i128 = 1 << 20;

fn with(proj: &[Proj], p: Proj) -> Vec<Proj> {
    let mut v = proj.to_vec();
    v.push(p);
    v
}

impl Lower<'_> {
    /// Flattens an initialiser for an object of type `ty`; returns the type completed by the
    /// initialiser (`int a[] = {1, 2}` has type `int [2]`) and the items.
    pub(super) fn initializer(
        &mut self,
        ty: TypeId,
        init: InitRef,
    ) -> LResult<(TypeId, Vec<Item>)> {
        let mut out = Vec::new();
        let used = match init {
            InitRef::Expr(e) => self.init_expr(ty, Vec::new(), e, &mut out)?,
            InitRef::List(l) => self.init_braced(ty, Vec::new(), l, &mut out)?,
        };
        let ty = match *self.types().kind(ty) {
            TypeKind::Array {
                elem,
                len: ArrayLen::Incomplete,
            } => self.types().plain(TypeKind::Array {
                elem,
                len: ArrayLen::Fixed(used),
            }),
            _ => ty,
        };
        Ok((ty, out))
    }

    /// Lowers the initialisation of local `t`; returns its (completed) type.
    pub(super) fn init_local(
        &mut self,
        t: LocalId,
        ty: TypeId,
        init: InitRef,
        loc: Loc,
    ) -> LResult<TypeId> {
        let simple = match init {
            InitRef::Expr(e) => {
                !self.string_into_char_array(ty, e) && {
                    self.types().is_scalar(ty) || {
                        let ety = self.type_of(e)?;
                        let (a, b) = (self.types().unqualified(ety), self.types().unqualified(ty));
                        a == b
                    }
                }
            }
            InitRef::List(_) => false,
        };
        if let (true, InitRef::Expr(e)) = (simple, init) {
            let lv = Lval::var(Var::Local(t), ty);
            if let ast::Expression::Call(c) = &e.node {
                let target = self.types().unqualified(ty);
                if self.call_result_type(c)? == Some(target) {
                    self.call(c, super::expr::CallDest::Into(lv), loc)?;
                } else {
                    let v = self.call(c, super::expr::CallDest::Temp, loc)?;
                    let v = self.value_of(v);
                    let v = convert(self.types(), v, ty);
                    self.emit(Op::Assign { lhs: lv, rhs: v }, loc)?;
                }
            } else {
                let v = self.rvalue(e)?;
                let v = convert(self.types(), v, ty);
                self.emit(Op::Assign { lhs: lv, rhs: v }, loc)?;
            }
            return Ok(ty);
        }
        let (ty, items) = self.initializer(ty, init)?;
        if let Some(fb) = self.fb.as_mut()
            && let Some(l) = fb.locals.get_mut(t.0 as usize)
        {
            l.ty = ty;
        }
        let whole = Lval::var(Var::Local(t), ty);
        if !self.covers_everything(ty, &items) {
            let size = self.types().size_of(ty).unwrap_or(0);
            let dst = self.addr_of(super::expr::Val::Lv(whole.clone()), loc)?;
            let st = self.pb.program.types.common.size_t;
            let int = self.pb.program.types.common.int;
            let memset = self.builtin_function("__builtin_memset", loc);
            self.emit(
                Op::Call {
                    dest: None,
                    callee: Callee::Direct(memset),
                    args: vec![dst, Expr::int(0, int), Expr::int(size as i128, st)],
                },
                loc,
            )?;
        }
        for it in items {
            let mut lv = whole.clone();
            lv.proj.extend(it.proj);
            lv.ty = it.ty;
            match it.value {
                ItemValue::Expr(v) => self.emit(Op::Assign { lhs: lv, rhs: v }, loc)?,
                ItemValue::Str(s) => {
                    let n = self.pb.program.strings[s.0 as usize].bytes.len() as u64;
                    let n = n.min(self.types().size_of(lv.ty).unwrap_or(n));
                    let dst = self.value_of(super::expr::Val::Lv(lv));
                    let elem = self.pb.program.strings[s.0 as usize].elem_ty;
                    let sty = self.types().pointer(elem);
                    let st = self.pb.program.types.common.size_t;
                    let memcpy = self.builtin_function("__builtin_memcpy", loc);
                    self.emit(
                        Op::Call {
                            dest: None,
                            callee: Callee::Direct(memcpy),
                            args: vec![
                                dst,
                                Expr {
                                    kind: ExprKind::Str(s),
                                    ty: sty,
                                },
                                Expr::int(n as i128, st),
                            ],
                        },
                        loc,
                    )?;
                }
            }
        }
        Ok(ty)
    }

    /// Number of scalar sub-objects of `ty` (saturating; unions count as uncoverable).
    fn leaf_count(&self, ty: TypeId) -> u64 {
        let t = &self.pb.program.types;
        match t.kind(ty) {
            TypeKind::Array {
                elem,
                len: ArrayLen::Fixed(n),
            } => self.leaf_count(*elem).saturating_mul(*n),
            TypeKind::Array { .. } => u64::MAX,
            TypeKind::Comp(c) => {
                let info = t.comp(*c);
                if info.kind == CompKind::Union {
                    return u64::MAX;
                }
                info.fields
                    .iter()
                    .filter(|f| f.name.is_some() || f.bit_field.is_none())
                    .fold(0u64, |acc, f| acc.saturating_add(self.leaf_count(f.ty)))
            }
            _ => 1,
        }
    }

    /// Whether the items store into every scalar of `ty` (so no zero-fill is needed).
    fn covers_everything(&self, ty: TypeId, items: &[Item]) -> bool {
        let total = self.leaf_count(ty);
        if total == u64::MAX {
            return false;
        }
        let mut seen = rustc_hash::FxHashSet::default();
        let mut covered: u64 = 0;
        for it in items {
            let mut key = Vec::with_capacity(it.proj.len());
            for p in &it.proj {
                match p {
                    Proj::Field { index, .. } => key.push((0u8, *index as i128)),
                    Proj::Index(e) => match e.as_int() {
                        Some(k) => key.push((1, k)),
                        None => return false,
                    },
                }
            }
            if !seen.insert(key) {
                return false; // overlapping items: be conservative
            }
            covered = covered.saturating_add(match &it.value {
                ItemValue::Expr(_) => self.leaf_count(it.ty),
                ItemValue::Str(s) => {
                    let len = self.pb.program.strings[s.0 as usize].bytes.len() as u64;
                    let size = self.pb.program.types.size_of(it.ty).unwrap_or(u64::MAX);
                    if len >= size {
                        self.leaf_count(it.ty)
                    } else {
                        0
                    }
                }
            });
        }
        covered == total
    }

    /// Whether `e` is a string literal initialising the character array type `ty`.
    fn string_into_char_array(&self, ty: TypeId, e: &Node<ast::Expression>) -> bool {
        let t = &self.pb.program.types;
        let ast::Expression::StringLiteral(s) = &e.node else {
            return false;
        };
        let TypeKind::Array { elem, .. } = t.kind(ty) else {
            return false;
        };
        let Some(k) = t.int_kind(*elem) else {
            return false;
        };
        let wide = s
            .node
            .iter()
            .any(|p| !p.starts_with('"') && !p.starts_with("u8"));
        let esize = t.data_model.int_size(k);
        if wide { esize > 1 } else { esize == 1 }
    }

    /// A string literal into a character array; returns the number of elements it has.
    fn init_string(
        &mut self,
        ty: TypeId,
        proj: Vec<Proj>,
        e: &Node<ast::Expression>,
        out: &mut Vec<Item>,
    ) -> LResult<u64> {
        let ast::Expression::StringLiteral(s) = &e.node else {
            return Ok(0);
        };
        let loc = self.loc(e.span);
        let (id, elem) = self.string_literal(&s.node, loc)?;
        let esize = self.types().size_of(elem).unwrap_or(1).max(1);
        let n = self.pb.program.strings[id.0 as usize].bytes.len() as u64 / esize;
        out.push(Item {
            proj,
            ty,
            value: ItemValue::Str(id),
        });
        Ok(n)
    }

    /// One expression for a sub-object of type `ty` (scalar, same-type aggregate, string for
    /// a character array, or the first scalar of an aggregate). Returns the element count used
    /// (for arrays of unknown size).
    fn init_expr(
        &mut self,
        ty: TypeId,
        proj: Vec<Proj>,
        e: &Node<ast::Expression>,
        out: &mut Vec<Item>,
    ) -> LResult<u64> {
        if self.string_into_char_array(ty, e) {
            return self.init_string(ty, proj, e, out);
        }
        if !self.types().is_aggregate(ty) {
            let v = self.rvalue(e)?;
            let v = convert(self.types(), v, ty);
            out.push(Item {
                proj,
                ty,
                value: ItemValue::Expr(v),
            });
            return Ok(1);
        }
        let ety = self.type_of(e)?;
        let (a, b) = (self.types().unqualified(ety), self.types().unqualified(ty));
        if a == b {
            let v = self.rvalue(e)?;
            out.push(Item {
                proj,
                ty,
                value: ItemValue::Expr(v),
            });
            return Ok(1);
        }
        // An expression for an aggregate initialises its first member.
        match self.member_at(ty, 0) {
            Some((mty, p, _)) => {
                self.init_expr(mty, with(&proj, p), e, out)?;
                Ok(1)
            }
            None => Ok(0),
        }
    }

    fn init_braced(
        &mut self,
        ty: TypeId,
        proj: Vec<Proj>,
        items: &[Node<ast::InitializerListItem>],
        out: &mut Vec<Item>,
    ) -> LResult<u64> {
        if !self.types().is_aggregate(ty) {
            // `int x = { 1 };`
            if let Some(first) = items.first() {
                match InitRef::of(&first.node.initializer) {
                    InitRef::Expr(e) => {
                        self.init_expr(ty, proj, e, out)?;
                    }
                    InitRef::List(l) => {
                        self.init_braced(ty, proj, l, out)?;
                    }
                }
            }
            return Ok(1);
        }
        if let [only] = items
            && let (true, InitRef::Expr(e)) = (
                only.node.designation.is_empty(),
                InitRef::of(&only.node.initializer),
            )
            && self.string_into_char_array(ty, e)
        {
            return self.init_string(ty, proj, e, out);
        }
        let mut idx = 0;
        self.init_members(ty, &proj, items, &mut idx, true, 0, false, out)
    }

    /// The member at or after position `cur` of aggregate `ty` that an initialiser fills next:
    /// (its type, the projection to it, its position). Unnamed bit-fields are skipped; a union
    /// only has its first named member.
    fn member_at(&mut self, ty: TypeId, cur: u64) -> Option<(TypeId, Proj, u64)> {
        let int = self.pb.program.types.common.int;
        match self.types().kind(ty).clone() {
            TypeKind::Array { elem, len } => {
                let inside = match len {
                    ArrayLen::Fixed(n) => cur < n,
                    _ => true,
                };
                inside.then(|| {
                    (
                        elem,
                        Proj::Index(Box::new(Expr::int(cur as i128, int))),
                        cur,
                    )
                })
            }
            TypeKind::Comp(c) => {
                let info = self.pb.program.types.comp(c);
                if info.kind == CompKind::Union && cur > 0 {
                    return None;
                }
                info.fields
                    .iter()
                    .enumerate()
                    .skip(cur as usize)
                    .find(|(_, f)| f.name.is_some() || f.bit_field.is_none())
                    .map(|(i, f)| {
                        (
                            f.ty,
                            Proj::Field {
                                comp: c,
                                index: i as u32,
                            },
                            i as u64,
                        )
                    })
            }
            _ => None,
        }
    }

    /// Fills the members of `ty` from `items[*idx..]`, starting at member position `start`.
    /// In a braced list, designators re-position and excess items are ignored; without braces
    /// (brace elision, or the continuation after a nested designator) it stops at the end of
    /// the aggregate or at a designator. `ignore_designation` treats the designation of the
    /// first item as already applied. Returns the element count reached.
    #[allow(clippy::too_many_arguments)]
    fn init_members(
        &mut self,
        ty: TypeId,
        proj: &[Proj],
        items: &[Node<ast::InitializerListItem>],
        idx: &mut usize,
        braced: bool,
        start: u64,
        mut ignore_designation: bool,
        out: &mut Vec<Item>,
    ) -> LResult<u64> {
        let mut cur: u64 = start;
        let mut max: u64 = start;
        let types = &self.pb.program.types;
        let is_union =
            matches!(types.kind(ty), TypeKind::Comp(c) if types.comp(*c).kind == CompKind::Union);
        while let Some(item) = items.get(*idx) {
            if !item.node.designation.is_empty() && !ignore_designation {
                if !braced {
                    break;
                }
                let init = InitRef::of(&item.node.initializer);
                cur = self.designate(ty, proj, &item.node.designation, init, items, idx, out)?;
            } else {
                ignore_designation = false;
                match self.member_at(ty, cur) {
                    None => {
                        if !braced {
                            break;
                        }
                        *idx += 1; // excess initialiser (GCC warns and ignores it)
                        continue;
                    }
                    Some((mty, p, pos)) => {
                        let before = *idx;
                        self.init_one(mty, with(proj, p), items, idx, out)?;
                        if *idx == before {
                            *idx += 1;
                        }
                        cur = if is_union { u64::MAX } else { pos + 1 };
                    }
                }
            }
            if cur != u64::MAX {
                max = max.max(cur);
            }
        }
        Ok(max)
    }

    /// Initialises one member from `items[*idx]` (and more items under brace elision).
    fn init_one(
        &mut self,
        mty: TypeId,
        proj: Vec<Proj>,
        items: &[Node<ast::InitializerListItem>],
        idx: &mut usize,
        out: &mut Vec<Item>,
    ) -> LResult<()> {
        let Some(item) = items.get(*idx) else {
            return Ok(());
        };
        match InitRef::of(&item.node.initializer) {
            InitRef::List(l) => {
                *idx += 1;
                self.init_braced(mty, proj, l, out)?;
            }
            InitRef::Expr(e) => {
                if self.needs_elision(mty, e)? {
                    self.init_members(mty, &proj, items, idx, false, 0, true, out)?;
                } else {
                    *idx += 1;
                    self.init_expr(mty, proj, e, out)?;
                }
            }
        }
        Ok(())
    }

    /// Whether expression `e` for a sub-object of type `ty` starts a brace-elided list: `ty` is
    /// an aggregate and `e` is neither of its type nor a string for a character array.
    fn needs_elision(&mut self, ty: TypeId, e: &Node<ast::Expression>) -> LResult<bool> {
        if !self.types().is_aggregate(ty) || self.string_into_char_array(ty, e) {
            return Ok(false);
        }
        let ety = self.type_of(e)?;
        let (a, b) = (self.types().unqualified(ety), self.types().unqualified(ty));
        Ok(a != b)
    }

    /// Applies the designation of `items[*idx]` (`.a.b[2] = ...`) inside an object of type `ty`,
    /// consuming that item and, after a nested designator, the undesignated items that continue
    /// the designated sub-aggregate (C11 §6.7.9p17). Returns the position after the first
    /// designator.
    #[allow(clippy::too_many_arguments)]
    fn designate(
        &mut self,
        ty: TypeId,
        proj: &[Proj],
        desig: &[Node<ast::Designator>],
        init: InitRef,
        items: &[Node<ast::InitializerListItem>],
        idx: &mut usize,
        out: &mut Vec<Item>,
    ) -> LResult<u64> {
        let Some((first, rest)) = desig.split_first() else {
            *idx += 1;
            return Ok(0);
        };
        let loc = self.loc(first.span);
        let int = self.pb.program.types.common.int;
        let (targets, next) = match &first.node {
            ast::Designator::Member(id) => {
                let TypeKind::Comp(c) = *self.types().kind(ty) else {
                    return Err(self.error(loc, "field designator in a non-struct initializer"));
                };
                let types = &self.pb.program.types;
                let path = types.comp(c).field_path(&id.node.name, types);
                let Some(&top) = path.first() else {
                    return Err(self.error(loc, format!("no member named '{}'", id.node.name)));
                };
                let mut p = proj.to_vec();
                let mut cur = c;
                let mut mty = ty;
                for i in path {
                    p.push(Proj::Field {
                        comp: cur,
                        index: i,
                    });
                    mty = self.pb.program.types.comp(cur).fields[i as usize].ty;
                    if let TypeKind::Comp(n) = *self.types().kind(mty) {
                        cur = n;
                    }
                }
                (vec![(mty, p)], top as u64 + 1)
            }
            ast::Designator::Index(e) => {
                let k = self.designator_index(e, loc)?;
                let elem = self.array_elem(ty, loc)?;
                let p = with(proj, Proj::Index(Box::new(Expr::int(k, int))));
                (vec![(elem, p)], k as u64 + 1)
            }
            ast::Designator::Range(r) => {
                let lo = self.designator_index(&r.node.from, loc)?;
                let hi = self.designator_index(&r.node.to, loc)?.max(lo);
                if hi - lo > MAX_RANGE_DESIGNATOR {
                    return Err(self.error(loc, "designator range too large"));
                }
                let elem = self.array_elem(ty, loc)?;
                let targets = (lo..=hi)
                    .map(|k| (elem, with(proj, Proj::Index(Box::new(Expr::int(k, int))))))
                    .collect();
                (targets, hi as u64 + 1)
            }
        };
        // A range applies the same initialiser to every element; each application re-reads
        // the items from the same position.
        let start = *idx;
        let mut end = start;
        for (mty, p) in targets {
            *idx = start;
            if rest.is_empty() {
                match init {
                    InitRef::List(l) => {
                        *idx += 1;
                        self.init_braced(mty, p, l, out)?;
                    }
                    InitRef::Expr(e) if self.needs_elision(mty, e)? => {
                        self.init_members(mty, &p, items, idx, false, 0, true, out)?;
                    }
                    InitRef::Expr(e) => {
                        *idx += 1;
                        self.init_expr(mty, p, e, out)?;
                    }
                }
            } else {
                let inner = self.designate(mty, &p, rest, init, items, idx, out)?;
                // Continue the designated sub-aggregate with the following plain items.
                self.init_members(mty, &p, items, idx, false, inner, false, out)?;
            }
            end = end.max(*idx);
        }
        *idx = end.max(start + 1);
        Ok(next)
    }

    fn designator_index(&mut self, e: &Node<ast::Expression>, loc: Loc) -> LResult<i128> {
        match self.try_const(e)? {
            Some(k) if k >= 0 => Ok(k),
            _ => Err(self.error(
                loc,
                "array designator is not a non-negative integer constant",
            )),
        }
    }

    fn array_elem(&mut self, ty: TypeId, loc: Loc) -> LResult<TypeId> {
        match self.types().kind(ty) {
            TypeKind::Array { elem, .. } => Ok(*elem),
            _ => Err(self.error(loc, "array designator in a non-array initializer")),
        }
    }
}
