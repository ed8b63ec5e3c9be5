//! Region facts of the value analysis ([`crate::backend::regions`]).
//!
//! - **Origins** (must information per program point, join = intersection): a trackable local
//!   `x` *comes from* region `(R, y)` when its value, if it points to an object, points into an
//!   object of the region of element `y` of root `R` (`x = R[y]`, `x = z->next` with `z` from
//!   that region, `x = z + k`, parameters bound to such expressions). A fact ends when `x` or
//!   `y` is overwritten.
//! - **Pointer stores**: every store of a possible address the thread performs, with where it
//!   goes and what it stores (a fresh object, a pointer from a known region, anything else).
//!   [`disjoint`] checks from them that objects enter at most one region of a root: every
//!   address stored into the root array or into an object reachable from it is a fresh
//!   (unpublished, [`super::publication`]) object, null, or a pointer from the very region it
//!   is stored into. Pointers stored into a fresh object are checked when it enters a region:
//!   it may only enter the regions they come from.

use crate::backend::Base;
use crate::backend::regions::{ArrayRoot, Region};
use crate::ir::{InitValue, Program};
use racedar_domains::Interval;
use rustc_hash::FxHashSet;
use smallvec::SmallVec;

use super::publication::Holder;

/// Must-facts "local `x` comes from region `r`", sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Origins(pub SmallVec<[(Holder, Region); 1]>);

impl Origins {
    /// The region `x` comes from.
    pub fn of(&self, x: Holder) -> Option<Region> {
        self.0.iter().find(|(h, _)| *h == x).map(|(_, r)| *r)
    }

    /// `x` comes from `r` (replacing what was known about `x`).
    pub fn set(&mut self, x: Holder, r: Region) {
        self.0.retain(|(h, _)| *h != x);
        let pos = self.0.partition_point(|(h, _)| *h < x);
        self.0.insert(pos, (x, r));
    }

    /// Forgets the facts about locals for which `f` holds, as the pointer or as the index.
    pub fn forget(&mut self, f: impl Fn(Holder) -> bool) {
        if !self.0.is_empty() {
            self.0.retain(|(h, r)| !f(*h) && !f(r.index));
        }
    }

    /// `self ⊔= o` (intersection); whether `self` changed.
    pub fn join_with(&mut self, o: &Origins) -> bool {
        if self.0 == o.0 {
            return false;
        }
        let before = self.0.len();
        self.0.retain(|x| o.0.contains(x));
        self.0.len() != before
    }
}

/// What a pointer store stores.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Stored {
    /// The address of the recent, unpublished object of a site (it was in no region), which
    /// holds pointers from these regions.
    Fresh(SmallVec<[Region; 1]>),
    /// A pointer from a region.
    From(Region),
    /// Anything else that may be an address.
    Other,
}

/// One store of a possible address.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PtrStore {
    /// Where it goes.
    pub targets: SmallVec<[(Base, Interval); 1]>,
    /// It may go anywhere (an unresolved pointer).
    pub anywhere: bool,
    /// The region of the object written (through a pointer from it, or the root element
    /// `R[y]` itself).
    pub into: Option<Region>,
    /// The bases the stored value may point to.
    pub value: SmallVec<[Base; 2]>,
    /// The stored value may be an unknown address.
    pub value_unknown: bool,
    /// What kind of value it is.
    pub stored: Stored,
    /// It goes into the recent object of a site through a pointer into it (the object's
    /// links record it; it is checked when the object enters a region).
    pub into_fresh: bool,
}

/// Pointer stores kept per thread analysis before region reasoning is given up.
pub const MAX_PTR_STORES: usize = 20_000;

/// Whether the objects stored into `root`'s elements (and into objects reachable from them)
/// each enter at most one region of `root`, given every pointer store of the program.
pub fn disjoint<'s>(
    program: &Program,
    root: &ArrayRoot,
    stores: impl Iterator<Item = &'s PtrStore> + Clone,
) -> bool {
    let g = program.global(root.global);
    if g.storage == crate::ir::Storage::Extern || g.thread_local {
        return false;
    }
    let end = root
        .start
        .saturating_add(root.elem.saturating_mul(root.len));
    // Addresses in the static initialiser of the array.
    if g.init.iter().any(|item| match &item.value {
        InitValue::Expr(e) => {
            let mut addr = false;
            crate::ir::visit::walk_expr(e, &mut |x| {
                addr |= matches!(
                    x.kind,
                    crate::ir::ExprKind::AddrOf(_)
                        | crate::ir::ExprKind::Str(_)
                        | crate::ir::ExprKind::Func(_)
                );
            });
            addr
        }
        InitValue::Str(_) => false,
    }) {
        return false;
    }
    let in_root = |(b, off): &(Base, Interval)| {
        *b == Base::Global(root.global)
            && off.lo() < end as i128
            && off.hi().saturating_add(1) > root.start as i128
    };
    let mut reach: FxHashSet<Base> = FxHashSet::default();
    loop {
        let mut grew = false;
        for st in stores.clone() {
            let into_root = st.targets.iter().any(in_root);
            let into_region = st.targets.iter().any(|(b, _)| reach.contains(b));
            if !(st.anywhere || into_root || into_region) {
                continue;
            }
            // The region the stored pointers must come from (the one they go into).
            let same = |r: &Region| {
                r.root == *root
                    && !st.anywhere
                    && st
                        .into
                        .is_some_and(|i| i.root == *root && i.index == r.index)
            };
            let ok = st.into_fresh
                || match &st.stored {
                    Stored::Fresh(links) => links.iter().all(same),
                    Stored::From(r) => same(r),
                    Stored::Other => st.value.is_empty() && !st.value_unknown,
                };
            if !ok {
                return false;
            }
            for b in &st.value {
                grew |= reach.insert(*b);
            }
        }
        if !grew {
            return true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{FuncId, LocalId};

    fn region(y: u32) -> Region {
        Region {
            root: ArrayRoot {
                global: crate::ir::GlobalId(0),
                start: 0,
                elem: 8,
                len: 4,
            },
            index: (FuncId(0), LocalId(y)),
        }
    }

    #[test]
    fn origins_are_must_facts() {
        let x = (FuncId(0), LocalId(5));
        let mut a = Origins::default();
        a.set(x, region(1));
        let mut b = a.clone();
        assert!(!a.join_with(&b));
        b.set(x, region(2));
        assert!(a.join_with(&b));
        assert_eq!(a.of(x), None);
        let mut c = Origins::default();
        c.set(x, region(1));
        c.forget(|h| h == (FuncId(0), LocalId(1)));
        assert_eq!(c.of(x), None);
    }
}
