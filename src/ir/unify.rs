//! One struct or union type per definition shared by several translation units.
//!
//! Each unit of a multi-unit program lowers its own copy of the structs its headers define, so
//! `struct S` of `a.c` and `struct S` of `b.c` would be two [`CompId`]s, and every phase that
//! tells objects apart by their struct type (typed accesses through unresolved pointers,
//! member paths, locks and thread ids by field) would take `p->f` in one unit and `q->f` in the
//! other for different objects: a race between them would go unreported.
//!
//! C11 §6.2.7p1 makes two structure (or union) types declared in separate translation units
//! *compatible* when they have the same tag and their members correspond one to one with the
//! same names, compatible types and (for bit-fields) widths. [`unify_comps`] maps every struct
//! of a later unit that is compatible with one of an earlier unit to that one, and rewrites
//! the program's types and member projections so each shared definition has one id. An
//! incomplete `struct S` of one unit (a pointer to an opaque type) becomes the one complete
//! `struct S` of another when there is exactly one. Structs of one unit stay apart: two
//! definitions in one unit are different types.
//!
//! Members correspond when they have the same names, byte offsets, bit-field positions and
//! types, where a type is compared by its shape ([`Shapes`]): scalars by kind and qualifiers,
//! arrays by length and element, embedded structs by their own shape, and pointers to tagged
//! structs by tag (which keeps recursive types finite).

use super::expr::{Expr, ExprKind, Host, Lval, Proj};
use super::types::{CompId, TypeId, TypeKind, TypeTable};
use super::{InitValue, Op, Program};
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// Gives every struct or union type that several units define compatibly one [`CompId`]
/// (C11 §6.2.7p1) and rewrites `program` to use it: its type table, every expression's,
/// lvalue's, variable's and function's type, and every member projection.
///
/// `unit_starts` holds, per lowered unit in order, the number of comps the type table had when
/// the unit's lowering began (so comp `c` belongs to the last unit whose start is ≤ `c`).
/// With fewer than two units nothing changes.
pub fn unify_comps(program: &mut Program, unit_starts: &[u32]) {
    if unit_starts.len() < 2 {
        return;
    }
    let comp_map = canonical_comps(&program.types, unit_starts);
    if comp_map.iter().enumerate().all(|(i, c)| c.0 as usize == i) {
        return;
    }
    let type_map = program.types.remap_comps(&comp_map);
    let mut m = Remap {
        types: &type_map,
        comps: &comp_map,
    };
    for g in &mut program.globals {
        g.ty = m.ty(g.ty);
        for e in &mut g.init {
            m.projs(&mut e.proj);
            if let InitValue::Expr(x) = &mut e.value {
                m.expr(x);
            }
        }
    }
    for f in &mut program.functions {
        f.ty = m.ty(f.ty);
        for l in &mut f.locals {
            l.ty = m.ty(l.ty);
        }
        if let Some(cfg) = &mut f.body {
            for edge in &mut cfg.edges {
                m.op(&mut edge.op);
            }
        }
    }
}

/// Per comp, the comp it is unified with (itself when none).
fn canonical_comps(types: &TypeTable, unit_starts: &[u32]) -> Vec<CompId> {
    let unit_of = |c: usize| unit_starts.partition_point(|&s| s as usize <= c);
    let mut shapes = Shapes {
        types,
        memo: FxHashMap::default(),
    };
    let n = types.comps.len();
    let mut map: Vec<CompId> = (0..n as u32).map(CompId).collect();
    // Complete definitions: per shape, the first comp and the units already unified with it.
    let mut first: FxHashMap<String, (CompId, Vec<usize>)> = FxHashMap::default();
    for (i, info) in types.comps.iter().enumerate() {
        if info.layout.is_none() {
            continue;
        }
        let key = shapes.comp(CompId(i as u32), 0);
        if let Some(c) = join_first(&mut first, key, i, unit_of(i)) {
            map[i] = c;
        }
    }
    // Incomplete declarations: the one complete definition of the tag in another unit, or
    // the first incomplete declaration of it in another unit.
    let mut complete: FxHashMap<(String, bool), Vec<CompId>> = FxHashMap::default();
    for (i, info) in types.comps.iter().enumerate() {
        if let (Some(tag), Some(_)) = (&info.tag, info.layout) {
            let canon = map[i];
            let e = complete
                .entry((tag.clone(), is_union(types, i)))
                .or_default();
            if !e.contains(&canon) {
                e.push(canon);
            }
        }
    }
    let mut opaque: FxHashMap<(String, bool), (CompId, Vec<usize>)> = FxHashMap::default();
    for (i, info) in types.comps.iter().enumerate() {
        let (Some(tag), None) = (&info.tag, info.layout) else {
            continue;
        };
        let key = (tag.clone(), is_union(types, i));
        let unit = unit_of(i);
        match complete.get(&key).map(Vec::as_slice) {
            Some([c]) => {
                if unit_of(c.0 as usize) != unit {
                    map[i] = *c;
                }
            }
            Some(_) => {}
            None => {
                if let Some(c) = join_first(&mut opaque, key, i, unit) {
                    map[i] = c;
                }
            }
        }
    }
    map
}

/// Comp `i` of unit `unit` with key `key`: the first comp of that key (recorded in `first`
/// with the units joined to it) when it is of another unit not yet joined; `None` when comp
/// `i` stays itself (the first of its key, or a second definition in one unit).
fn join_first<K: std::hash::Hash + Eq>(
    first: &mut FxHashMap<K, (CompId, Vec<usize>)>,
    key: K,
    i: usize,
    unit: usize,
) -> Option<CompId> {
    match first.get_mut(&key) {
        None => {
            first.insert(key, (CompId(i as u32), vec![unit]));
            None
        }
        Some((c, units)) => (!units.contains(&unit)).then(|| {
            units.push(unit);
            *c
        }),
    }
}

fn is_union(types: &TypeTable, i: usize) -> bool {
    types.comps[i].kind == super::types::CompKind::Union
}

/// Type shapes: the text two compatible types of different units share.
struct Shapes<'t> {
    types: &'t TypeTable,
    memo: FxHashMap<CompId, String>,
}

/// Nesting depth past which shapes stop (embedded structs and pointers to anonymous ones).
const MAX_DEPTH: u32 = 16;

impl Shapes<'_> {
    /// The shape of comp `c`: kind, tag, layout and members.
    fn comp(&mut self, c: CompId, depth: u32) -> String {
        if let Some(s) = self.memo.get(&c) {
            return s.clone();
        }
        let info = &self.types.comps[c.0 as usize];
        let mut s = format!("{:?} {:?} {:?} {{", info.kind, info.tag, info.layout);
        if depth <= MAX_DEPTH {
            for f in &info.fields {
                let ty = self.ty(f.ty, depth + 1);
                let _ = write!(s, "{:?}@{}{:?}:{ty};", f.name, f.offset, f.bit_field);
            }
        } else {
            s.push('…');
        }
        s.push('}');
        if depth == 0 {
            self.memo.insert(c, s.clone());
        }
        s
    }

    /// The shape of type `t`.
    fn ty(&mut self, t: TypeId, depth: u32) -> String {
        let quals = self.types.quals(t);
        let body = match self.types.kind(t) {
            TypeKind::Pointer(p) => match self.types.kind(*p) {
                TypeKind::Comp(c) => match &self.types.comps[c.0 as usize].tag {
                    Some(tag) => format!("*{:?} {tag}", self.types.comps[c.0 as usize].kind),
                    None => format!("*{}", self.comp(*c, depth + 1)),
                },
                _ => format!("*{}", self.ty(*p, depth + 1)),
            },
            TypeKind::Array { elem, len } => format!("[{len:?}]{}", self.ty(*elem, depth + 1)),
            TypeKind::Function(sig) => {
                let mut s = String::from("fn(");
                for p in sig.params.iter() {
                    let _ = write!(s, "{},", self.ty(*p, depth + 1));
                }
                let _ = write!(
                    s,
                    "{}{})->{}",
                    sig.variadic,
                    sig.prototyped,
                    self.ty(sig.ret, depth + 1)
                );
                s
            }
            TypeKind::Comp(c) => self.comp(*c, depth + 1),
            k => format!("{k:?}"),
        };
        format!("{quals:?}{body}")
    }
}

/// Rewrites ids through the maps of [`unify_comps`].
struct Remap<'m> {
    types: &'m [TypeId],
    comps: &'m [CompId],
}

impl Remap<'_> {
    fn ty(&self, t: TypeId) -> TypeId {
        self.types.get(t.0 as usize).copied().unwrap_or(t)
    }

    fn comp(&self, c: CompId) -> CompId {
        self.comps.get(c.0 as usize).copied().unwrap_or(c)
    }

    fn expr(&mut self, e: &mut Expr) {
        e.ty = self.ty(e.ty);
        match &mut e.kind {
            ExprKind::Load(lv) | ExprKind::AddrOf(lv) => self.lval(lv),
            ExprKind::Unary(_, x) | ExprKind::Cast(x) => self.expr(x),
            ExprKind::Binary(_, a, b) => {
                self.expr(a);
                self.expr(b);
            }
            ExprKind::Int(_)
            | ExprKind::Float(_)
            | ExprKind::Str(_)
            | ExprKind::Func(_)
            | ExprKind::Unknown => {}
        }
    }

    fn lval(&mut self, lv: &mut Lval) {
        lv.ty = self.ty(lv.ty);
        if let Host::Deref(p) = &mut lv.host {
            self.expr(p);
        }
        self.projs(&mut lv.proj);
    }

    fn projs(&mut self, proj: &mut [Proj]) {
        for p in proj {
            match p {
                Proj::Field { comp, .. } => *comp = self.comp(*comp),
                Proj::Index(i) => self.expr(i),
            }
        }
    }

    fn op(&mut self, op: &mut Op) {
        match op {
            Op::Skip => {}
            Op::Assign { lhs, rhs } => {
                self.lval(lhs);
                self.expr(rhs);
            }
            Op::Call { dest, callee, args } => {
                if let Some(d) = dest {
                    self.lval(d);
                }
                if let super::Callee::Indirect(e) = callee {
                    self.expr(e);
                }
                for a in args {
                    self.expr(a);
                }
            }
            Op::Assume { cond, .. } => self.expr(cond),
            Op::Return(e) => {
                if let Some(e) = e {
                    self.expr(e);
                }
            }
            Op::Asm { outputs, inputs } => {
                for o in outputs {
                    self.lval(o);
                }
                for i in inputs {
                    self.expr(i);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::types::{CompInfo, CompKind, CompLayout, Field};
    use crate::ir::{DataModel, Loc};

    /// A struct `tag` with one member `x` of type `ty` at offset 0.
    fn comp(t: &mut TypeTable, tag: &str, ty: Option<TypeId>) -> CompId {
        t.add_comp(CompInfo {
            tag: Some(tag.to_string()),
            kind: CompKind::Struct,
            fields: ty
                .map(|ty| Field {
                    name: Some("x".to_string()),
                    ty,
                    offset: 0,
                    bit_field: None,
                })
                .into_iter()
                .collect(),
            layout: ty.map(|_| CompLayout { size: 4, align: 4 }),
            loc: Loc::default(),
        })
    }

    #[test]
    fn compatible_definitions_of_later_units_join_the_first() {
        let mut t = TypeTable::new(DataModel::Lp64);
        let int = t.common.int;
        let float = t.common.double;
        let a = comp(&mut t, "S", Some(int)); // unit 0
        let a2 = comp(&mut t, "S", Some(int)); // unit 0 again: a different type
        let b = comp(&mut t, "S", Some(int)); // unit 1: compatible with `a`
        let c = comp(&mut t, "S", Some(float)); // unit 2: another member type
        let d = comp(&mut t, "T", None); // unit 3: opaque, no complete `T` anywhere
        let e = comp(&mut t, "T", None); // unit 4: the same opaque `T`
        let map = canonical_comps(&t, &[0, 2, 3, 4, 5]);
        assert_eq!(map, vec![a, a2, a, c, d, d]);
        let _ = (b, e);
    }

    #[test]
    fn an_opaque_struct_becomes_the_one_complete_definition() {
        let mut t = TypeTable::new(DataModel::Lp64);
        let int = t.common.int;
        let opaque = comp(&mut t, "S", None); // unit 0: `struct S;`
        let full = comp(&mut t, "S", Some(int)); // unit 1
        let map = canonical_comps(&t, &[0, 1]);
        assert_eq!(map, vec![full, full]);
        let _ = opaque;
        // The type table follows: a pointer to unit 0's `struct S` is one to unit 1's.
        let p0 = t.plain(TypeKind::Comp(opaque));
        let p0 = t.plain(TypeKind::Pointer(p0));
        let p1 = t.plain(TypeKind::Comp(full));
        let p1 = t.plain(TypeKind::Pointer(p1));
        let types = t.remap_comps(&map);
        assert_eq!(types[p0.0 as usize], types[p1.0 as usize]);
        assert_eq!(t.kind(p0), t.kind(p1), "the old id has the new content");
    }
}
