//! Publication of heap objects: which objects a thread allocated are still its own, and the
//! contents of the most recent one.
//!
//! An object a thread allocates is reachable only by that thread until its address is
//! *published*: stored into memory other threads may read (a global, a heap object, a local
//! whose address is taken), passed to a created thread, or handed to code that may keep it (an
//! unknown function, an atomic store). Until then no other thread can access it, so the
//! thread's accesses to it race with nothing (Goblint's thread-local heap; RacerF's escape
//! analysis is coarser: every allocation escapes, `notes/racerf-goblint.md` §1.2).
//!
//! Between the allocation and the publication the object's address lives only in the thread's
//! *trackable* locals (locals whose address is never taken, the parameters and return values of
//! the functions it calls). The analysis keeps, flow-sensitively and per allocation site:
//!
//! - **fresh** (must information, join = intersection): the locals that surely point into the
//!   site's *most recent* object, which is unpublished, and that object's contents (the
//!   recency abstraction of Balakrishnan and Reps, SAS 2006). The site's base in the memory
//!   stands for the *other* objects of the site; an access through one of these locals touches
//!   the recent object only, so it takes strong updates even when the site allocates in a
//!   loop, and it races with nothing. An allocation at the site makes the new object the most
//!   recent one: the previous one joins the base's objects (its locals no longer point to the
//!   recent object). When a fact ends (publication, a join with a path that does not know it,
//!   its locals overwritten) the recent object's contents are joined into the base's object.
//! - **pending** (may information, join = union): sites with an object allocated while other
//!   threads may run whose contents the shared invariant does not hold yet. At a publication
//!   the object's contents as the thread sees them go to the invariant; until then other
//!   threads cannot read them, so they need not see the allocation's indeterminate bytes.
//!
//! A value *may carry* a site's object when its points-to set holds the site's base or an
//! unknown address. Integer arithmetic on an address gives an unknown address
//! ([`super::interp`]), so an address laundered through integers still carries its object.
//!
//! The claim "an unpublished object races with nothing" holds under the interleaving semantics
//! of SV-COMP: another thread obtains the address only after the publishing store, which comes
//! after the owner's earlier accesses in program order.

use super::memory::Obj;
use crate::backend::Base;
use crate::backend::regions::Region;
use crate::context::ThreadId;
use crate::ir::{EdgeId, FuncId, LocalId};
use racedar_domains::SmallSet;
use smallvec::SmallVec;
use std::rc::Rc;

/// An allocation site in a context: the function, the allocation call's edge, and the call
/// that entered the function ([`Base::Heap`]'s `caller`).
pub type Site = (FuncId, EdgeId, Option<crate::context::CallSite>);

/// A trackable local: a local of a function whose address is never taken.
pub type Holder = (FuncId, LocalId);

/// The size of a pointer cell ([`FreshObj::held_in`]), in bytes (LP64 and ILP32 alike are
/// covered: a cell is only ever recorded at a pointer store of this many bytes).
pub const POINTER_BYTES: i128 = 8;

/// What is known about the most recent object of a site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FreshObj {
    /// The allocation site.
    pub site: Site,
    /// Locals that surely point into the object (when they point into the site's objects).
    pub holders: SmallSet<Holder>,
    /// The function being analysed surely returns an address into the object (set by
    /// `return`).
    pub ret: bool,
    /// The object's contents.
    pub recent: Rc<Obj>,
    /// Regions of the pointers stored into it ([`super::regions`]; may information, sorted):
    /// the object may enter only these regions.
    pub links: SmallVec<[Region; 1]>,
    /// Pointer cells of other sites' recent objects that surely point into this object (must
    /// information, sorted): `(container site, byte offset)`. A pointer stored into the
    /// recent object of another site through one of its holders (`skb->data = malloc(n)`)
    /// leaves the object unpublished while the container is; it is published when the
    /// container's fact ends, or when the cell is overwritten with something else.
    pub held_in: SmallVec<[(Site, i128); 1]>,
}

impl FreshObj {
    fn live(&self) -> bool {
        !self.holders.is_empty() || self.ret || !self.held_in.is_empty()
    }
}

/// A fact that ended: its site and recent object, to be joined into the site's base.
pub type Ended = (Site, Rc<Obj>);

/// Publication facts of one program point of a thread.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Publication {
    /// Unpublished most recent objects, by site (sorted).
    pub fresh: SmallVec<[FreshObj; 1]>,
    /// Sites with objects whose contents are not in the shared invariant yet.
    pub pending: SmallSet<Site>,
    /// Sites whose objects must be published at the next opportunity
    /// ([`super::interp::Interp`] does it after each transfer): a container of theirs
    /// ([`FreshObj::held_in`]) ended, so their address may sit in memory the analysis no
    /// longer follows.
    pub orphans: SmallSet<Site>,
}

/// The heap base of `site` allocated by `thread`.
pub fn site_base(thread: ThreadId, site: Site) -> Base {
    Base::Heap {
        thread,
        func: site.0,
        edge: site.1,
        caller: site.2,
    }
}

/// The site of a heap base.
pub fn base_site(b: &Base) -> Option<Site> {
    match b {
        Base::Heap {
            func, edge, caller, ..
        } => Some((*func, *edge, *caller)),
        _ => None,
    }
}

impl Publication {
    /// Whether nothing is known (no fresh object, nothing pending).
    pub fn is_empty(&self) -> bool {
        self.fresh.is_empty() && self.pending.is_empty() && self.orphans.is_empty()
    }

    /// The site whose recent object the pointer cell at `off` of the recent object of
    /// `container` surely points into ([`FreshObj::held_in`]).
    pub fn held_in(&self, container: Site, off: i128) -> Option<Site> {
        self.fresh
            .iter()
            .find(|f| f.held_in.contains(&(container, off)))
            .map(|f| f.site)
    }

    /// The recent object of `site` is now surely pointed into by the cell at `off` of the
    /// recent object of `container` (both fresh).
    pub fn nest(&mut self, site: Site, container: Site, off: i128) {
        if let Some(f) = self.fresh.iter_mut().find(|f| f.site == site) {
            let pos = f.held_in.partition_point(|x| *x < (container, off));
            if f.held_in.get(pos) != Some(&(container, off)) {
                f.held_in.insert(pos, (container, off));
            }
        }
    }

    /// Bytes `[lo, hi)` of the recent object of `container` were written with something
    /// else than the pointer a cell there held: the objects those cells pointed into become
    /// orphans (their address may still be there, the write being weak or partial).
    pub fn overwrite(&mut self, container: Site, lo: i128, hi: i128) {
        let mut hit: SmallVec<[Site; 1]> = SmallVec::new();
        for f in self.fresh.iter_mut() {
            let before = f.held_in.len();
            f.held_in
                .retain(|(c, o)| *c != container || *o + POINTER_BYTES <= lo || *o >= hi);
            if f.held_in.len() != before {
                hit.push(f.site);
            }
        }
        for site in hit {
            self.orphans.insert(site);
        }
    }

    /// Takes the orphans (to be published).
    pub fn take_orphans(&mut self) -> SmallSet<Site> {
        std::mem::take(&mut self.orphans)
    }

    /// The fresh object of `site`.
    pub fn fresh(&self, site: Site) -> Option<&FreshObj> {
        self.fresh.iter().find(|f| f.site == site)
    }

    /// The site whose most recent object `h` surely points into.
    pub fn held_by(&self, h: Holder) -> Option<Site> {
        self.fresh
            .iter()
            .find(|f| f.holders.contains(&h))
            .map(|f| f.site)
    }

    /// Removes the facts for which `end` holds, returning them. The objects they held in
    /// their pointer cells ([`FreshObj::held_in`]) become orphans; those held nowhere else
    /// end too.
    fn end(&mut self, end: impl Fn(&FreshObj) -> bool) -> SmallVec<[Ended; 1]> {
        let mut out: SmallVec<[Ended; 1]> = SmallVec::new();
        if self.fresh.iter().any(&end) {
            self.fresh.retain(|f| {
                if end(f) {
                    out.push((f.site, f.recent.clone()));
                    false
                } else {
                    true
                }
            });
        }
        // Cascade: facts held in the cells of ended ones.
        let mut i = 0;
        while i < out.len() {
            let gone = out[i].0;
            i += 1;
            let mut orphaned: SmallVec<[Site; 1]> = SmallVec::new();
            for f in self.fresh.iter_mut() {
                if f.held_in.iter().any(|(c, _)| *c == gone) {
                    f.held_in.retain(|(c, _)| *c != gone);
                    orphaned.push(f.site);
                }
            }
            for site in orphaned {
                self.orphans.insert(site);
                if let Some(pos) = self.fresh.iter().position(|f| f.site == site && !f.live()) {
                    let f = self.fresh.remove(pos);
                    out.push((f.site, f.recent));
                }
            }
        }
        out
    }

    /// A new object at `site` with contents `recent`, pointed into by `holder` (`None`: by no
    /// trackable local, so no fact). Returns the previous recent object of the site.
    /// `pending`: its contents are not in the shared invariant.
    pub fn allocate(
        &mut self,
        site: Site,
        holder: Option<Holder>,
        recent: Obj,
        pending: bool,
    ) -> SmallVec<[Ended; 1]> {
        let ended = self.end(|f| f.site == site);
        if let Some(h) = holder {
            let pos = self.fresh.partition_point(|f| f.site < site);
            self.fresh.insert(
                pos,
                FreshObj {
                    site,
                    holders: SmallSet::singleton(h),
                    ret: false,
                    recent: Rc::new(recent),
                    links: SmallVec::new(),
                    held_in: SmallVec::new(),
                },
            );
        }
        if pending {
            self.pending.insert(site);
        }
        ended
    }

    /// A new object at `site` whose address goes straight into the pointer cell at `off` of
    /// the recent object of the fresh site `container` (`p->buf = malloc(n)`), no local
    /// holding it. Returns the previous recent object of the site.
    pub fn allocate_nested(
        &mut self,
        site: Site,
        container: Site,
        off: i128,
        recent: Obj,
        pending: bool,
    ) -> SmallVec<[Ended; 1]> {
        let ended = self.end(|f| f.site == site);
        if self.fresh(container).is_some() {
            let pos = self.fresh.partition_point(|f| f.site < site);
            self.fresh.insert(
                pos,
                FreshObj {
                    site,
                    holders: SmallSet::new(),
                    ret: false,
                    recent: Rc::new(recent),
                    links: SmallVec::new(),
                    held_in: smallvec::smallvec![(container, off)],
                },
            );
        }
        if pending {
            self.pending.insert(site);
        }
        ended
    }

    /// Forgets that the cell at `off` of `container`'s recent object points into `site`'s
    /// (before the cell is written again with the same pointer).
    pub fn unnest(&mut self, site: Site, container: Site, off: i128) {
        if let Some(f) = self.fresh.iter_mut().find(|f| f.site == site) {
            f.held_in.retain(|x| *x != (container, off));
        }
    }

    /// Pointers from `regions` were stored into the recent object of `site`.
    pub fn add_links(&mut self, site: Site, regions: &[Region]) {
        if let Some(f) = self.fresh.iter_mut().find(|f| f.site == site) {
            for r in regions {
                if !f.links.contains(r) {
                    f.links.push(*r);
                    f.links.sort();
                }
            }
        }
    }

    /// `h` now points into the most recent object of `site` too (if it is still fresh).
    pub fn add_holder(&mut self, site: Site, h: Holder) {
        if let Some(f) = self.fresh.iter_mut().find(|f| f.site == site) {
            f.holders.insert(h);
        }
    }

    /// Forgets the holders for which `f` holds (an overwritten local, the locals of a finished
    /// call); returns the facts that ended.
    pub fn forget_holders(&mut self, f: impl Fn(Holder) -> bool) -> SmallVec<[Ended; 1]> {
        if self.fresh.is_empty() {
            return SmallVec::new();
        }
        for o in self.fresh.iter_mut() {
            if o.holders.iter().any(|h| f(*h)) {
                o.holders.retain(|h| !f(*h));
            }
        }
        self.end(|o| !o.live())
    }

    /// Sets the return flags: the returned value points into the recent object of `site`
    /// (`None`: into none). Returns the facts that ended.
    pub fn set_ret(&mut self, site: Option<Site>) -> SmallVec<[Ended; 1]> {
        for o in self.fresh.iter_mut() {
            o.ret = Some(o.site) == site;
        }
        self.end(|o| !o.live())
    }

    /// The site whose recent object a finished call returned (its fact is kept while the
    /// caller stores the result), and clears the other return flags.
    pub fn returned(&self) -> Option<Site> {
        self.fresh.iter().find(|o| o.ret).map(|o| o.site)
    }

    /// Publishes the objects of the sites for which `carried` holds: their facts end and they
    /// are no longer pending. Returns the facts that ended and the pending sites removed
    /// (their contents must go to the shared invariant).
    pub fn publish(
        &mut self,
        carried: impl Fn(Site) -> bool,
    ) -> (SmallVec<[Ended; 1]>, SmallVec<[Site; 1]>) {
        let ended = self.end(|o| carried(o.site));
        self.orphans.retain(|s| !carried(*s));
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
        (ended, flushed)
    }

    /// Every site with a fresh or pending object.
    pub fn sites(&self) -> SmallVec<[Site; 2]> {
        let mut v: SmallVec<[Site; 2]> = self.fresh.iter().map(|o| o.site).collect();
        v.extend(self.pending.iter().copied());
        v.sort();
        v.dedup();
        v
    }

    /// `self ⊔= o` (`widen`: recent objects widened): the facts both sides hold (holders
    /// intersected, recent objects joined), pending sites of either. Returns whether `self`
    /// changed, the facts of `self` that ended and the sites of `o`'s facts that did (their
    /// recent objects are `o`'s to fold).
    pub fn join_with(
        &mut self,
        o: &Publication,
        widen: bool,
    ) -> (bool, SmallVec<[Ended; 1]>, SmallVec<[Ended; 1]>) {
        let mut changed = false;
        let pending = self.pending.union(&o.pending);
        if pending != self.pending {
            self.pending = pending;
            changed = true;
        }
        let orphans = self.orphans.union(&o.orphans);
        if orphans != self.orphans {
            self.orphans = orphans;
            changed = true;
        }
        if self.fresh == o.fresh {
            return (changed, SmallVec::new(), SmallVec::new());
        }
        let mut mine_ended: SmallVec<[Ended; 1]> = SmallVec::new();
        let mut theirs_ended: SmallVec<[Ended; 1]> = SmallVec::new();
        let mut out: SmallVec<[FreshObj; 1]> = SmallVec::new();
        for f in &self.fresh {
            let Some(g) = o.fresh.iter().find(|g| g.site == f.site) else {
                mine_ended.push((f.site, f.recent.clone()));
                continue;
            };
            let holders = f.holders.intersection(&g.holders);
            let ret = f.ret && g.ret;
            // Cells one side does not know may still hold the object: it is an orphan.
            let held_in: SmallVec<[(Site, i128); 1]> = f
                .held_in
                .iter()
                .filter(|x| g.held_in.contains(x))
                .copied()
                .collect();
            if (held_in.len() != f.held_in.len() || held_in.len() != g.held_in.len())
                && !self.orphans.contains(&f.site)
            {
                self.orphans.insert(f.site);
                changed = true;
            }
            if holders.is_empty() && !ret && held_in.is_empty() {
                mine_ended.push((f.site, f.recent.clone()));
                theirs_ended.push((g.site, g.recent.clone()));
                continue;
            }
            let recent = if Rc::ptr_eq(&f.recent, &g.recent) {
                f.recent.clone()
            } else {
                let mut r = (*f.recent).clone();
                if r.join_with(&g.recent, widen) {
                    Rc::new(r)
                } else {
                    f.recent.clone()
                }
            };
            let mut links = f.links.clone();
            for r in &g.links {
                if !links.contains(r) {
                    links.push(*r);
                }
            }
            links.sort();
            out.push(FreshObj {
                site: f.site,
                holders,
                ret,
                recent,
                links,
                held_in,
            });
        }
        for g in &o.fresh {
            if !self.fresh.iter().any(|f| f.site == g.site) {
                theirs_ended.push((g.site, g.recent.clone()));
            }
        }
        // Cells of containers whose facts ended: their objects become orphans, and end when
        // nothing else keeps them.
        loop {
            let sites: SmallVec<[Site; 4]> = out.iter().map(|f| f.site).collect();
            for f in out.iter_mut() {
                let before = f.held_in.len();
                f.held_in.retain(|(c, _)| sites.contains(c));
                if f.held_in.len() != before && !self.orphans.contains(&f.site) {
                    self.orphans.insert(f.site);
                    changed = true;
                }
            }
            let Some(pos) = out.iter().position(|f| !f.live()) else {
                break;
            };
            let f = out.remove(pos);
            if let Some(m) = self.fresh.iter().find(|m| m.site == f.site) {
                mine_ended.push((m.site, m.recent.clone()));
            }
            if let Some(g) = o.fresh.iter().find(|g| g.site == f.site) {
                theirs_ended.push((g.site, g.recent.clone()));
            }
        }
        if out != self.fresh {
            self.fresh = out;
            changed = true;
        }
        (changed, mine_ended, theirs_ended)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Site = (FuncId(0), EdgeId(3), None);
    const T: Site = (FuncId(0), EdgeId(7), None);
    const P: Holder = (FuncId(0), LocalId(1));
    const Q: Holder = (FuncId(0), LocalId(2));

    #[test]
    fn join_keeps_what_both_paths_know() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), Obj::empty(), true);
        a.add_holder(S, Q);
        let mut b = Publication::default();
        b.allocate(S, Some(Q), Obj::empty(), false);
        b.allocate(T, Some(P), Obj::empty(), false);
        let (changed, mine, theirs) = a.join_with(&b, false);
        assert!(changed && mine.is_empty());
        assert_eq!(theirs.len(), 1);
        assert_eq!(a.held_by(Q), Some(S));
        assert_eq!(a.held_by(P), None);
        assert!(a.fresh(T).is_none());
        // Pending is may information.
        let (ended, flushed) = a.publish(|s| s == S);
        assert_eq!(ended.len(), 1);
        assert_eq!(flushed.as_slice(), &[S]);
    }

    #[test]
    fn a_new_allocation_replaces_the_holders() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), Obj::empty(), false);
        a.add_holder(S, Q);
        let ended = a.allocate(S, Some(Q), Obj::empty(), false);
        assert_eq!(ended.len(), 1);
        assert_eq!(a.held_by(P), None);
        assert_eq!(a.held_by(Q), Some(S));
        assert_eq!(a.forget_holders(|h| h == Q).len(), 1);
        assert!(a.is_empty());
    }

    #[test]
    fn nested_objects_follow_their_container() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), Obj::empty(), false);
        a.allocate(T, Some(Q), Obj::empty(), false);
        a.nest(T, S, 16);
        assert_eq!(a.held_in(S, 16), Some(T));
        assert_eq!(a.held_in(S, 8), None);
        // The local holding T goes: T is still held in S's cell.
        assert!(a.forget_holders(|h| h == Q).is_empty());
        assert_eq!(a.held_in(S, 16), Some(T));
        assert!(a.orphans.is_empty());
        // S's fact ends: T must be published, and nothing else keeps its fact.
        let ended = a.forget_holders(|h| h == P);
        assert_eq!(ended.len(), 2);
        assert!(a.orphans.contains(&T));
        assert!(a.fresh.is_empty());
        assert_eq!(a.take_orphans().len(), 1);
        assert!(a.is_empty());
    }

    #[test]
    fn overwritten_and_unknown_cells_orphan_their_objects() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), Obj::empty(), false);
        a.allocate(T, Some(Q), Obj::empty(), false);
        a.nest(T, S, 16);
        // A write next to the cell leaves it.
        a.overwrite(S, 8, 16);
        assert!(a.orphans.is_empty());
        // A write over part of it does not.
        a.overwrite(S, 20, 22);
        assert!(a.orphans.contains(&T));
        assert_eq!(a.held_in(S, 16), None);
        // Paths that disagree on the cell: an orphan too.
        let mut b = Publication::default();
        b.allocate(S, Some(P), Obj::empty(), false);
        b.allocate(T, Some(Q), Obj::empty(), false);
        b.nest(T, S, 16);
        let mut c = b.clone();
        c.overwrite(S, 16, 24);
        c.take_orphans();
        b.join_with(&c, false);
        assert!(b.orphans.contains(&T));
    }

    #[test]
    fn return_flags() {
        let mut a = Publication::default();
        a.allocate(S, Some(P), Obj::empty(), false);
        assert!(a.set_ret(Some(S)).is_empty());
        assert!(a.forget_holders(|h| h.0 == FuncId(0)).is_empty());
        assert_eq!(a.returned(), Some(S));
        assert_eq!(a.set_ret(None).len(), 1);
        assert!(a.is_empty());
    }
}
