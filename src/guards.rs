//! Branch guards on locals: the path sensitivity the lockset analysis needs for conditional
//! locking,
//!
//! ```c
//! if (c) lock(&m);   ...   if (c) x++;   ...   if (c) unlock(&m);
//! ```
//!
//! where the access runs only on the paths that took the lock. A lockset fact (one class of
//! paths, [`crate::lockset`]) carries the outcomes of the branch tests on a few locals as
//! [`Guard`]s `(x - k ≠ 0) = nonzero`; a branch whose test contradicts them is not followed
//! by that fact. Assignments `x = x ± k` shift the guards of `x` (so `i++; if (i - 1)` is the
//! same test as `if (i)`), `x = k` makes `x` known, any other store of `x` forgets them.
//! Goblint gets the same effect from path-sensitive mutex and integer domains
//! (`notes/racerf-goblint.md`, path sensitivity); RacerF has no equivalent.
//!
//! Only [`guard_locals`] are tracked: integer locals of at least 32 bits whose address is never
//! taken, tested by two or more branches of a function that locks or unlocks. The offsets stay
//! within ±[`MAX_OFFSET`], so two different offsets are different values of the local's type
//! (the arithmetic `x - k` is modulo 2^32 or 2^64, and a shift preserves `x - k` exactly).
//! Forgetting a guard is always sound: it only keeps a branch the fact could have pruned.

use crate::ir::{BinOp, Expr, ExprKind, FuncId, LocalId, Op, Program, UnOp};
use crate::model::{Role, Roles};
use rustc_hash::{FxHashMap, FxHashSet};
use smallvec::SmallVec;

/// The outcome of a test on a local: `(local - offset ≠ 0) == nonzero` for `local` of `func`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guard {
    /// The function whose local is tested.
    pub func: FuncId,
    /// The local.
    pub local: LocalId,
    /// The constant subtracted before the test (|offset| <= [`MAX_OFFSET`]).
    pub offset: i128,
    /// Whether `local - offset` is non-zero (`false`: the local equals `offset`).
    pub nonzero: bool,
}

/// The guards of one fact, sorted, at most [`MAX_GUARDS`].
pub type Guards = SmallVec<[Guard; 1]>;

/// Most guards a fact keeps (further ones are not recorded).
pub const MAX_GUARDS: usize = 4;

/// Largest offset magnitude kept (far below 2^31, so offsets never wrap).
pub const MAX_OFFSET: i128 = 1 << 24;

/// The locals worth guarding (module docs): `(function, local)` pairs.
pub fn guard_locals(program: &Program, roles: &Roles) -> FxHashSet<(FuncId, LocalId)> {
    let mut out = FxHashSet::default();
    for (fi, f) in program.functions.iter().enumerate() {
        let Some(cfg) = &f.body else { continue };
        let func = FuncId(fi as u32);
        let locks = cfg.edges.iter().any(|e| {
            matches!(
                roles.of_call(&e.op),
                Some(Role::Lock { .. } | Role::Unlock { .. })
            )
        });
        if !locks {
            continue;
        }
        let mut taken = FxHashSet::default();
        crate::ir::visit::walk_cfg_addr_taken(cfg, &mut |l| {
            taken.insert(l);
        });
        let mut tests: FxHashMap<LocalId, usize> = FxHashMap::default();
        for e in &cfg.edges {
            if let Op::Assume { cond, branch: true } = &e.op
                && let Some((l, _, _)) = read_test(cond)
            {
                *tests.entry(l).or_default() += 1;
            }
        }
        for (l, n) in tests {
            let ty = f.locals.get(l.0 as usize).map(|x| x.ty);
            let wide = ty.is_some_and(|t| {
                program.types.is_integer(t) && program.types.size_of(t).is_some_and(|s| s >= 4)
            });
            if n >= 2 && wide && !taken.contains(&l) {
                out.insert((func, l));
            }
        }
    }
    out
}

/// The whole local an expression reads, with no cast around the load (a cast could change
/// the value tested, unlike [`crate::ir::visit::local_of`]).
fn local_of(e: &Expr) -> Option<LocalId> {
    match &e.kind {
        ExprKind::Load(lv) => crate::ir::visit::whole_local(lv),
        _ => None,
    }
}

/// A small integer constant (under casts, which keep values this small).
fn small_int(e: &Expr) -> Option<i128> {
    crate::ir::visit::strip_casts(e)
        .as_int()
        .filter(|k| k.abs() <= MAX_OFFSET)
}

/// `x ± k` as `(x, +k or -k)`; `x` alone as `(x, 0)`.
fn shifted_local(e: &Expr) -> Option<(LocalId, i128)> {
    if let Some(l) = local_of(e) {
        return Some((l, 0));
    }
    let ExprKind::Binary(op, a, b) = &e.kind else {
        return None;
    };
    let (l, k) = (local_of(a)?, small_int(b)?);
    match op {
        BinOp::Add => Some((l, k)),
        BinOp::Sub => Some((l, -k)),
        _ => None,
    }
}

/// Reads a condition as a test on a local when true: `(x, k, nonzero)` meaning
/// `(x - k ≠ 0) == nonzero`. Forms: `x`, `x - k`, `x + k`, `!e`, `e == k`, `e != k`, `k == e`,
/// `k != e` with `e` one of the first three.
fn read_test(cond: &Expr) -> Option<(LocalId, i128, bool)> {
    match &cond.kind {
        ExprKind::Unary(UnOp::LogNot, e) => read_test(e).map(|(l, k, nz)| (l, k, !nz)),
        ExprKind::Binary(op @ (BinOp::Eq | BinOp::Ne), a, b) => {
            let (e, c) = match (small_int(a), small_int(b)) {
                (None, Some(c)) => (a, c),
                (Some(c), None) => (b, c),
                _ => return None,
            };
            let (l, s) = shifted_local(e)?;
            // `x + s == c`: x - (c - s) == 0.
            let k = c - s;
            (k.abs() <= MAX_OFFSET).then_some((l, k, *op == BinOp::Ne))
        }
        _ => {
            let (l, s) = shifted_local(cond)?;
            // `x + s` non-zero: x - (-s) ≠ 0.
            Some((l, -s, true))
        }
    }
}

/// The guard a branch edge (`cond` taken as `branch`) of `func` establishes, when it tests a
/// local of `tracked`.
pub fn branch_guard(
    func: FuncId,
    cond: &Expr,
    branch: bool,
    tracked: &FxHashSet<(FuncId, LocalId)>,
) -> Option<Guard> {
    let (local, offset, nonzero) = read_test(cond)?;
    tracked.contains(&(func, local)).then_some(Guard {
        func,
        local,
        offset,
        nonzero: nonzero == branch,
    })
}

/// `gs` with the guard `g` added; `None` when they contradict (the branch is impossible on
/// these paths).
pub fn assume(gs: &Guards, g: Guard) -> Option<Guards> {
    let same = |h: &&Guard| h.func == g.func && h.local == g.local;
    for h in gs.iter().filter(same) {
        if h.offset == g.offset {
            // The same test again: consistent only with the same outcome.
            return (h.nonzero == g.nonzero).then(|| gs.clone());
        }
        if !h.nonzero {
            // The local is known (= h.offset): x - g.offset is non-zero.
            return g.nonzero.then(|| gs.clone());
        }
    }
    let mut out = gs.clone();
    if !g.nonzero {
        // A known value implies every non-zero guard of the local (checked above).
        out.retain(|h| !(h.func == g.func && h.local == g.local));
    }
    if out.len() >= MAX_GUARDS {
        return Some(gs.clone());
    }
    out.push(g);
    out.sort();
    Some(out)
}

/// The guards after the guard local `local` of `func` ([`guard_locals`]) is assigned `rhs`
/// (`None`: an unknown value, e.g. a call's result): shifted by `x = x ± k`, replaced by
/// `x = k`, dropped otherwise.
pub fn assign(gs: &mut Guards, func: FuncId, local: LocalId, rhs: Option<&Expr>) {
    let ours = |h: &Guard| h.func == func && h.local == local;
    if let Some((l, s)) = rhs.and_then(shifted_local)
        && l == local
    {
        // x' = x + s: (x - k) = (x' - (k + s)).
        for h in gs.iter_mut().filter(|h| ours(h)) {
            h.offset += s;
        }
        gs.retain(|h| !ours(h) || h.offset.abs() <= MAX_OFFSET);
        gs.sort();
        return;
    }
    gs.retain(|h| !ours(h));
    if let Some(k) = rhs.and_then(small_int)
        && gs.len() < MAX_GUARDS
    {
        gs.push(Guard {
            func,
            local,
            offset: k,
            nonzero: false,
        });
        gs.sort();
    }
}

/// Drops the guards on locals of `func` (a call enters a new frame of it, a return leaves it).
pub fn forget_frame(gs: &mut Guards, func: FuncId) {
    gs.retain(|h| h.func != func);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{Host, Lval, Var};

    fn g(offset: i128, nonzero: bool) -> Guard {
        Guard {
            func: FuncId(0),
            local: LocalId(0),
            offset,
            nonzero,
        }
    }

    #[test]
    fn same_test_must_agree() {
        let gs = assume(&Guards::new(), g(0, true)).expect("consistent");
        assert!(assume(&gs, g(0, false)).is_none());
        assert_eq!(assume(&gs, g(0, true)), Some(gs.clone()));
    }

    #[test]
    fn known_value_decides_other_tests() {
        let gs = assume(&Guards::new(), g(0, false)).expect("consistent"); // x == 0
        assert!(assume(&gs, g(1, false)).is_none()); // x == 1 impossible
        assert!(assume(&gs, g(1, true)).is_some()); // x != 1 holds
    }

    #[test]
    fn increment_shifts_the_test() {
        // `if (!i)` then `i = i + 1`: `i - 1` is zero.
        let mut gs = assume(&Guards::new(), g(0, false)).expect("consistent");
        let one = Expr {
            kind: ExprKind::Int(1),
            ty: crate::ir::types::TypeId(0),
        };
        let i = Expr {
            kind: ExprKind::Load(Box::new(Lval {
                host: Host::Var(Var::Local(LocalId(0))),
                proj: Vec::new(),
                ty: crate::ir::types::TypeId(0),
            })),
            ty: crate::ir::types::TypeId(0),
        };
        let rhs = Expr {
            kind: ExprKind::Binary(BinOp::Add, Box::new(i), Box::new(one)),
            ty: crate::ir::types::TypeId(0),
        };
        assign(&mut gs, FuncId(0), LocalId(0), Some(&rhs));
        assert_eq!(gs.as_slice(), &[g(1, false)]);
        assert!(assume(&gs, g(1, true)).is_none());
    }

    #[test]
    fn other_stores_forget() {
        let mut gs = assume(&Guards::new(), g(0, true)).expect("consistent");
        assign(&mut gs, FuncId(0), LocalId(0), None);
        assert!(gs.is_empty());
    }
}
