//! Regions: heap objects hanging off the elements of a global array (Goblint's `region`
//! analysis with per-element locks, `notes/racerf-goblint.md` §5 and §7 pattern 18).
//!
//! ```c
//! struct node *slot[N];  pthread_mutex_t mutex[N];
//! lock(&mutex[i]); list_add(new_node(), slot[i]); unlock(&mutex[i]);
//! ```
//!
//! The *region* of element `k` of such an array (the *root*) is the element itself and the
//! objects stored into it or into an object of the region (the elements may be pointers, or
//! list heads threaded through the objects). When every object enters at most one region, an
//! access to an object reached from `slot[i]` while holding `mutex[i]` (the same index
//! variable `i`, unchanged in between) and another such access to the same object through
//! `slot[j]` holding `mutex[j]` have `i == j`, so they hold the same lock and cannot race. The
//! value backend tracks which pointers lead into which region and checks that objects enter a
//! single region ([`crate::backend::Backend::region_disjoint`]); the lockset analysis tracks the
//! element locks `mutex[i]` ([`crate::lockset::SymLock`]); race detection pairs them up.

use crate::ir::types::{ArrayLen, TypeKind};
use crate::ir::{Expr, FuncId, Host, LocalId, Lval, Program, Proj, Var};

/// A global array (or an array member of a global struct): `len` elements of `elem` bytes
/// starting at byte `start` of `global`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ArrayRoot {
    /// The global holding the array.
    pub global: crate::ir::GlobalId,
    /// Byte offset of the first element in the global.
    pub start: u64,
    /// Element size in bytes.
    pub elem: u64,
    /// Number of elements.
    pub len: u64,
}

/// A local variable (of a function of the accessing thread) whose value is an array index.
pub type IndexVar = (FuncId, LocalId);

/// The region an access goes to: the objects of element `index` of `root`, where `index` is
/// the value of the variable at the access.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Region {
    /// The array of pointers whose elements root the regions.
    pub root: ArrayRoot,
    /// The variable holding the element's index.
    pub index: IndexVar,
}

/// For an element lvalue `G.f….a[e]` of a global (fields, then one index last): the array and
/// the index expression. `None` for other lvalues and arrays of unknown length.
pub fn array_element<'l>(program: &Program, lv: &'l Lval) -> Option<(ArrayRoot, &'l Expr)> {
    let Host::Var(Var::Global(g)) = lv.host else {
        return None;
    };
    let (Proj::Index(ix), fields) = lv.proj.split_last()? else {
        return None;
    };
    let types = &program.types;
    let mut ty = program.global(g).ty;
    let mut start = 0u64;
    for p in fields {
        let Proj::Field { comp, index } = p else {
            return None;
        };
        let f = types.comp(*comp).fields.get(*index as usize)?;
        if f.bit_field.is_some() {
            return None;
        }
        start = start.checked_add(f.offset)?;
        ty = f.ty;
    }
    let TypeKind::Array {
        elem,
        len: ArrayLen::Fixed(len),
    } = types.kind(ty)
    else {
        return None;
    };
    let elem = types.size_of(*elem).filter(|n| *n > 0)?;
    Some((
        ArrayRoot {
            global: g,
            start,
            elem,
            len: *len,
        },
        ix,
    ))
}

/// For an lvalue `G.f….a[e].g…` inside an element of a global array (fields, one index,
/// fields): the array and the index expression. The element `a[e]` is the *root element* of
/// region `e` ([`Region`]).
pub fn root_element<'l>(program: &Program, lv: &'l Lval) -> Option<(ArrayRoot, &'l Expr)> {
    let pos = lv.proj.iter().position(|p| matches!(p, Proj::Index(_)))?;
    if lv.proj[pos + 1..]
        .iter()
        .any(|p| matches!(p, Proj::Index(_)))
    {
        return None;
    }
    let prefix = Lval {
        host: lv.host.clone(),
        proj: lv.proj[..=pos].to_vec(),
        ty: lv.ty,
    };
    let (root, _) = array_element(program, &prefix)?;
    let Proj::Index(ix) = &lv.proj[pos] else {
        return None;
    };
    Some((root, ix))
}

/// The local an index expression reads as a whole (casts aside): `a[i]`.
pub fn index_local(e: &Expr) -> Option<LocalId> {
    match &crate::ir::visit::strip_casts(e).kind {
        crate::ir::ExprKind::Load(lv) if lv.proj.is_empty() => match lv.host {
            Host::Var(Var::Local(l)) => Some(l),
            _ => None,
        },
        _ => None,
    }
}
