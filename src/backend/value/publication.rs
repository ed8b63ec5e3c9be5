//! Publication of heap objects: which objects a thread allocated are still its own.
//!
//! An object a thread allocates is reachable only by that thread until its address is
//! *published*: stored into memory other threads may read (a global, a heap object, a local
//! whose address is taken), passed to a created thread, or handed to code that may keep it (an
//! unknown function, an atomic store). Until then no other thread can access it, so the
//! thread's accesses to it race with nothing (Goblint's thread-local heap; RacerF's escape
//! analysis is coarser: every allocation escapes, `notes/racerf-goblint.md` §1.2).
//!
//! Between the allocation and the publication the object's address lives only in the thread's
//! *trackable* locals (locals whose address is never taken, parameters and return values of
//! the functions it calls). The analysis keeps, flow-sensitively and per allocation site:
//!
//! - **fresh** (must information, join = intersection): the locals that surely hold the address
//!   of the site's *most recent* object, which is unpublished. An allocation at the site makes
//!   the new object the most recent one (earlier objects of the site may be published: an
//!   allocation in a loop does not make them private again). An access through one of these
//!   locals touches that object only.
//! - **pending** (may information, join = union): sites with an object allocated while other
//!   threads may run whose initial (uninitialised) contents the shared invariant does not hold
//!   yet. At a publication the object's contents as the thread sees them are added to the
//!   invariant; until then other threads cannot read them, so they need not see the
//!   allocation's indeterminate bytes.
//!
//! A value *may carry* a site's object when its points-to set holds the site's base or an
//! unknown address. Integer arithmetic on an address gives an unknown address
//! ([`super::interp`]), so an address laundered through integers still carries its object.
//!
//! The claim "an unpublished object races with nothing" holds under the interleaving semantics
//! of SV-COMP: another thread obtains the address only after the publishing store, which comes
//! after the owner's earlier accesses in program order.

use crate::backend::Base;
use crate::context::ThreadId;
use crate::ir::{EdgeId, FuncId, LocalId};
use racedar_domains::SmallSet;
use smallvec::SmallVec;

/// An allocation site: the function and the allocation call's edge.
pub type Site = (FuncId, EdgeId);

/// A trackable local: a local of a function whose address is never taken.
pub type Holder = (FuncId, LocalId);

/// What is known about the most recent object of a site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreshObj {
    /// The allocation site.
    pub site: Site,
    /// Locals that surely hold the object's address.
    pub holders: SmallSet<Holder>,
    /// The function being analysed surely returns the object's address (set by `return`).
    pub ret: bool,
}

/// Publication facts of one program point of a thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Publication {
    /// Unpublished most recent objects, by site (sorted).
    fresh: SmallVec<[FreshObj; 1]>,
    /// Sites with objects whose initial contents are not in the shared invariant yet.
    pending: SmallSet<Site>,
}

/// The heap base of `site` allocated by `thread`.
pub fn site_base(thread: ThreadId, site: Site) -> Base {
    Base::Heap {
        thread,
        func: site.0,
        edge: site.1,
    }
}

impl Publication {
    /// Whether nothing is known (no fresh object, nothing pending).
    pub fn is_empty(&self) -> bool {
        self.fresh.is_empty() && self.pending.is_empty()
    }

    /// `self ⊔= o`: fresh facts both sides hold (holders intersected), pending sites of either.
    /// Whether `self` changed.
    pub fn join_with(&mut self, o: &Publication) -> bool {
        let mut changed = false;
        let pending = self.pending.union(&o.pending);
        if pending != self.pending {
            self.pending = pending;
            changed = true;
        }
        if self.fresh == o.fresh {
            return changed;
        }
        let mut out: SmallVec<[FreshObj; 1]> = SmallVec::new();
        for f in &self.fresh {
            let Some(g) = o.fresh.iter().find(|g| g.site == f.site) else {
                continue;
            };
            let holders = f.holders.intersection(&g.holders);
            let ret = f.ret && g.ret;
            if !holders.is_empty() || ret {
                out.push(FreshObj {
                    site: f.site,
                    holders,
                    ret,
                });
            }
        }
        if out != self.fresh {
            self.fresh = out;
            changed = true;
        }
        changed
    }

    /// The fresh object of `site`.
    pub fn fresh(&self, site: Site) -> Option<&FreshObj> {
        self.fresh.iter().find(|f| f.site == site)
    }

    /// The site whose most recent object `h` surely holds.
    pub fn held_by(&self, h: Holder) -> Option<Site> {
        self.fresh
            .iter()
            .find(|f| f.holders.contains(&h))
            .map(|f| f.site)
    }

    /// A new object at `site`, held by `holder` (if any): it is now the site's most recent
    /// object. `pending`: its initial contents are not in the shared invariant.
    pub fn allocate(&mut self, site: Site, holder: Option<Holder>, pending: bool) {
        self.fresh.retain(|f| f.site != site);
        if let Some(h) = holder {
            let pos = self.fresh.partition_point(|f| f.site < site);
            self.fresh.insert(
                pos,
                FreshObj {
                    site,
                    holders: SmallSet::singleton(h),
                    ret: false,
                },
            );
        }
        if pending {
            self.pending.insert(site);
        }
    }

    /// `h` now holds the most recent object of `site` too.
    pub fn add_holder(&mut self, site: Site, h: Holder) {
        if let Some(f) = self.fresh.iter_mut().find(|f| f.site == site) {
            f.holders.insert(h);
        }
    }

    /// `h` holds the most recent object of `site`, which is unpublished (a call returned it).
    pub fn restore(&mut self, site: Site, h: Holder) {
        match self.fresh.iter_mut().find(|f| f.site == site) {
            Some(f) => {
                f.holders.insert(h);
            }
            None => {
                let pos = self.fresh.partition_point(|f| f.site < site);
                self.fresh.insert(
                    pos,
                    FreshObj {
                        site,
                        holders: SmallSet::singleton(h),
                        ret: false,
                    },
                );
            }
        }
    }

    /// `h` was overwritten: it holds no fresh object any more.
    pub fn forget_holder(&mut self, h: Holder) {
        self.forget_holders(|x| x == h);
    }

    /// Forgets the holders for which `f` holds (locals of a finished call).
    pub fn forget_holders(&mut self, f: impl Fn(Holder) -> bool) {
        if self.fresh.is_empty() {
            return;
        }
        for o in self.fresh.iter_mut() {
            o.holders.retain(|h| !f(*h));
        }
        self.fresh.retain(|o| !o.holders.is_empty() || o.ret);
    }

    /// Sets the return flags: the returned value is a load of holder `h` (`None`: something
    /// else).
    pub fn set_ret(&mut self, h: Option<Holder>) {
        for o in self.fresh.iter_mut() {
            o.ret = h.is_some_and(|h| o.holders.contains(&h));
        }
        self.fresh.retain(|o| !o.holders.is_empty() || o.ret);
    }

    /// The site whose object a finished call returned, and clears the return flags.
    pub fn take_ret(&mut self) -> Option<Site> {
        let site = self.fresh.iter().find(|o| o.ret).map(|o| o.site);
        self.set_ret(None);
        site
    }

    /// Publishes the objects of the sites for which `carried` holds: they are no longer fresh
    /// and no longer pending. Returns the pending sites removed (their contents must go to the
    /// shared invariant).
    pub fn publish(&mut self, carried: impl Fn(Site) -> bool) -> SmallVec<[Site; 1]> {
        self.fresh.retain(|o| !carried(o.site));
        let mut flushed = SmallVec::new();
        if !self.pending.is_empty() {
            self.pending.retain(|s| {
                if carried(*s) {
                    flushed.push(*s);
                    false
                } else {
                    true
                }
            });
        }
        flushed
    }

    /// Every site with a fresh or pending object.
    pub fn sites(&self) -> SmallVec<[Site; 2]> {
        let mut v: SmallVec<[Site; 2]> = self.fresh.iter().map(|o| o.site).collect();
        v.extend(self.pending.iter().copied());
        v.sort();
        v.dedup();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Site = (FuncId(0), EdgeId(3));
    const T: Site = (FuncId(0), EdgeId(7));
    const P: Holder = (FuncId(0), LocalId(1));
    const Q: Holder = (FuncId(0), LocalId(2));

    #[test]
    fn join_keeps_what_both_paths_know() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), true);
        a.add_holder(S, Q);
        let mut b = Publication::default();
        b.allocate(S, Some(Q), false);
        b.allocate(T, Some(P), false);
        assert!(a.join_with(&b));
        assert_eq!(a.held_by(Q), Some(S));
        assert_eq!(a.held_by(P), None);
        assert!(a.fresh(T).is_none());
        // Pending is may information.
        assert_eq!(a.publish(|s| s == S).as_slice(), &[S]);
    }

    #[test]
    fn a_new_allocation_replaces_the_holders() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), false);
        a.add_holder(S, Q);
        a.allocate(S, Some(Q), false);
        assert_eq!(a.held_by(P), None);
        assert_eq!(a.held_by(Q), Some(S));
        a.forget_holder(Q);
        assert!(a.is_empty());
    }

    #[test]
    fn return_flags() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), false);
        a.set_ret(Some(P));
        a.forget_holders(|h| h.0 == FuncId(0));
        assert_eq!(a.take_ret(), Some(S));
        assert!(a.is_empty());
    }
}
