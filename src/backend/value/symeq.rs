//! Symbolic equalities (Goblint's `var_eq`): a trackable local holds the address `&L` of an
//! lvalue `L` whose address depends only on trackable locals of the same function (`m =
//! &s->mutex`, `d = &s->datum`, `p = &a[i]`).
//!
//! The fact holds from the assignment until the local or one of the locals `L` reads is
//! overwritten, whatever path led there, so `lock(m)` names the lock `s->mutex` of the current
//! `s` even when `s` was assigned on several paths (`crate::lockset::SymLock`). Must
//! information: joins keep the facts both sides hold.

use super::publication::Holder;
use crate::ir::{Expr, ExprKind, FuncId, Host, LocalId, Var};
use rustc_hash::FxHashSet;
use smallvec::SmallVec;
use std::rc::Rc;

/// One fact: `x == addr`, valid while neither `x` nor a local of `deps` changes.
#[derive(Clone, Debug, PartialEq)]
pub struct SymEq {
    /// The local holding the address.
    pub x: Holder,
    /// The address expression (an `AddrOf`).
    pub addr: Rc<Expr>,
    /// The locals (of `x`'s function) the address depends on.
    pub deps: SmallVec<[LocalId; 2]>,
}

/// The facts of a program point, sorted by local.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SymEqs(pub SmallVec<[SymEq; 1]>);

impl SymEqs {
    /// The address `x` holds.
    pub fn of(&self, x: Holder) -> Option<&SymEq> {
        self.0.iter().find(|e| e.x == x)
    }

    /// `x == e` (replacing what was known about `x`).
    pub fn set(&mut self, e: SymEq) {
        self.0.retain(|f| f.x != e.x);
        let pos = self.0.partition_point(|f| f.x < e.x);
        self.0.insert(pos, e);
    }

    /// Forgets the facts `h` is part of (as the local or a dependency); `h` was overwritten.
    pub fn forget(&mut self, h: Holder) {
        if !self.0.is_empty() {
            self.0
                .retain(|e| e.x != h && !(e.x.0 == h.0 && e.deps.contains(&h.1)));
        }
    }

    /// Forgets the facts about the locals of `g` (a call entered or left it).
    pub fn forget_func(&mut self, g: FuncId) {
        if !self.0.is_empty() {
            self.0.retain(|e| e.x.0 != g);
        }
    }

    /// `self ⊔= o` (intersection); whether `self` changed.
    pub fn join_with(&mut self, o: &SymEqs) -> bool {
        if self.0 == o.0 {
            return false;
        }
        let before = self.0.len();
        self.0.retain(|e| o.0.contains(e));
        self.0.len() != before
    }
}

/// The fact an assignment `x = rhs` in `func` establishes: `rhs` is `&L` with `L` reading only
/// locals of `func` outside `taken` (whole, by value).
pub fn of_assignment(
    func: FuncId,
    x: LocalId,
    rhs: &Expr,
    taken: &FxHashSet<(FuncId, LocalId)>,
) -> Option<SymEq> {
    let rhs = crate::ir::visit::strip_casts(rhs);
    let ExprKind::AddrOf(lv) = &rhs.kind else {
        return None;
    };
    let mut deps: SmallVec<[LocalId; 2]> = SmallVec::new();
    let mut ok = true;
    crate::ir::visit::walk_lval(lv, &mut |e| {
        if let ExprKind::Load(inner) = &e.kind {
            match (&inner.host, inner.proj.is_empty()) {
                (Host::Var(Var::Local(l)), true) if !taken.contains(&(func, *l)) => deps.push(*l),
                _ => ok = false,
            }
        }
    });
    if !ok || deps.contains(&x) {
        return None;
    }
    deps.sort();
    deps.dedup();
    Some(SymEq {
        x: (func, x),
        addr: Rc::new(rhs.clone()),
        deps,
    })
}
