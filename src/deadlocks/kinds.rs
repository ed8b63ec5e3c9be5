//! Mutex types, as far as deadlocks care: a recursive mutex counts how often its holder locked
//! it, so locking it again is no double lock; every other type (normal, default, error-checking)
//! is non-recursive, and locking it again while holding it is a double lock (the normal and
//! default types wait forever, the error-checking type fails with `EDEADLK`).
//!
//! A mutex may be recursive when
//! - a `mutex-init` call (`pthread_mutex_init(m, attr)`) may initialise it with an attribute
//!   object that some `pthread_mutexattr_settype` call may give the recursive type
//!   (`PTHREAD_MUTEX_RECURSIVE`: 1 in glibc and musl, 2 on macOS, whose `pthread_mutex_t` is
//!   `struct _opaque_pthread_mutex_t`; a type that is not a constant counts), or a C11
//!   `mtx_init(m, type)` whose type may include `mtx_recursive` (bit 0);
//! - its static initialiser sets glibc's `__kind` field to the recursive kind
//!   (`PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP`) or macOS's `__sig` to a signature other than
//!   the normal and error-checking ones (`0x32AAABA7`, `0x32AAABA1`).
//!
//! An initialisation of an unknown mutex with a possibly recursive type makes every mutex
//! possibly recursive (no double lock is then reported). Goblint's `pthreadMutexType` analysis
//! (`notes/deadlock.md` §3, `71-doublelocking`) draws the same line.

use crate::backend::{Backend, Base, PointsTo};
use crate::ir::{Expr, InitValue, Program, Proj};
use crate::lockset::{LockId, LockKey, LockTable};
use crate::model::{Role, Roles};
use crate::threads::ThreadGraph;
use rustc_hash::FxHashSet;

/// macOS's signatures of a normal and an error-checking mutex (`_PTHREAD_MUTEX_SIG_init`,
/// `_PTHREAD_ERRORCHECK_MUTEX_SIG_init`).
const DARWIN_NON_RECURSIVE_SIGS: [i128; 2] = [0x32AA_ABA7, 0x32AA_ABA1];

/// Which locks may be recursive (see the module documentation).
#[derive(Clone, Debug, Default)]
pub struct MutexTypes {
    /// Locks (base and offset) a recursive initialisation reaches.
    locks: FxHashSet<LockId>,
    /// Objects a recursive initialisation reaches at an imprecise offset, or whose static
    /// initialiser makes some mutex of theirs recursive.
    bases: FxHashSet<Base>,
    /// A recursive initialisation of an unknown mutex: every lock may be recursive.
    all: bool,
}

impl MutexTypes {
    /// Collects the possibly recursive mutexes of a program from every reachable function
    /// context.
    pub fn compute<'p, B: Backend<'p>>(
        program: &Program,
        roles: &Roles,
        backend: &B,
        graph: &ThreadGraph,
        table: &mut LockTable,
    ) -> MutexTypes {
        let mut out = MutexTypes::default();
        static_kinds(program, &mut out.bases);
        let recursive = recursive_type(program);
        // Attribute objects that may get the recursive type.
        let mut attr_bases: FxHashSet<Base> = FxHashSet::default();
        let mut attr_any = false;
        crate::threads::for_each_call(program, roles, graph, |tc, c, eid, role, args| {
            let Role::MutexAttrSettype { attr, kind } = role else {
                return;
            };
            let ctx = tc.context(c, eid);
            let non_recursive = args.get(*kind).is_some_and(|k| {
                let r = backend.value(&ctx, k);
                matches!((r.lo, r.hi), (Some(lo), Some(hi)) if recursive < lo || hi < recursive)
            });
            if non_recursive {
                return;
            }
            match args.get(*attr).map(|a| backend.value_ptr(&ctx, a)) {
                Some(PointsTo::Known(addrs)) if !addrs.is_empty() => {
                    attr_bases.extend(addrs.iter().map(|a| a.base));
                }
                _ => attr_any = true,
            }
        });
        crate::threads::for_each_call(program, roles, graph, |tc, c, eid, role, args| {
            let Role::MutexInit { mutex, attr, kind } = role else {
                return;
            };
            let ctx = tc.context(c, eid);
            let recursive_init = match (attr, kind) {
                (Some(a), _) => match args.get(*a) {
                    None => false,
                    Some(e) if is_null(e) => false,
                    Some(e) => match backend.value_ptr(&ctx, e) {
                        PointsTo::Known(addrs) if !addrs.is_empty() => {
                            attr_any || addrs.iter().any(|x| attr_bases.contains(&x.base))
                        }
                        _ => attr_any || !attr_bases.is_empty(),
                    },
                },
                (None, Some(k)) => args.get(*k).is_none_or(|e| {
                    let r = backend.value(&ctx, e);
                    !matches!((r.lo, r.hi), (Some(lo), Some(hi)) if lo == hi && lo & 1 == 0)
                }),
                (None, None) => false,
            };
            if !recursive_init {
                return;
            }
            match args.get(*mutex).map(|m| backend.value_ptr(&ctx, m)) {
                Some(PointsTo::Known(addrs)) if !addrs.is_empty() => {
                    for a in addrs {
                        if a.exact {
                            out.locks
                                .insert(table.intern(LockKey::Addr(a.base, a.range.lo)));
                        } else {
                            out.bases.insert(a.base);
                        }
                    }
                }
                _ => out.all = true,
            }
        });
        out
    }

    /// Whether lock `l` may be recursive (relocking it is no double lock).
    pub fn may_be_recursive(&self, table: &LockTable, l: LockId) -> bool {
        if self.all || self.locks.contains(&l) {
            return true;
        }
        match table.key(l) {
            LockKey::Addr(b, _) => self.bases.contains(&b),
            // Unknown and atomic-section locks are never double-lock candidates.
            _ => true,
        }
    }
}

/// The value of `PTHREAD_MUTEX_RECURSIVE`: 2 when the program's mutex type is macOS's, else 1
/// (glibc, musl).
fn recursive_type(program: &Program) -> i128 {
    let darwin = program
        .types
        .comps
        .iter()
        .any(|c| c.tag.as_deref() == Some("_opaque_pthread_mutex_t"));
    if darwin { 2 } else { 1 }
}

/// Whether an expression is a null pointer constant.
fn is_null(e: &Expr) -> bool {
    crate::ir::visit::strip_casts(e).as_int() == Some(0)
}

/// Globals whose static initialiser gives some mutex of theirs a possibly recursive type.
fn static_kinds(program: &Program, out: &mut FxHashSet<Base>) {
    for (gi, g) in program.globals.iter().enumerate() {
        let recursive = g.init.iter().any(|item| {
            let Some(Proj::Field { comp, index }) = item.proj.last() else {
                return false;
            };
            let name = program
                .types
                .comp(*comp)
                .fields
                .get(*index as usize)
                .and_then(|f| f.name.as_deref());
            let value = match &item.value {
                InitValue::Expr(x) => crate::ir::visit::strip_casts(x).as_int(),
                InitValue::Str(_) => None,
            };
            match name {
                // glibc's kind: the low bits are the type (PTHREAD_MUTEX_RECURSIVE_NP = 1).
                Some("__kind") => value.is_none_or(|v| v & 3 == 1),
                Some("__sig") => {
                    value.is_none_or(|v| v != 0 && !DARWIN_NON_RECURSIVE_SIGS.contains(&v))
                }
                _ => false,
            }
        });
        if recursive {
            out.insert(Base::Global(crate::ir::GlobalId(gi as u32)));
        }
    }
}
