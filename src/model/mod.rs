//! The concurrency model: which library functions create and join threads, take and release
//! locks, run atomically, allocate memory, and so on, with their argument positions.
//!
//! Models are TOML files (`config/*.toml`, compiled into the binary; more with `--config FILE`,
//! whose entries override shipped ones). Each `[[function]]` entry names functions (`name`,
//! `names` or `prefix`) and gives a `role` with its argument positions (counted from 0):
//!
//! | role | fields | meaning |
//! |---|---|---|
//! | `thread-create` | `thread-id`, `entry`, `arg` | starts `entry(arg)` in a new thread, stores its id in `*thread-id` |
//! | `thread-join` | `thread-id` | waits for the thread whose id is the argument's value |
//! | `thread-exit` | | ends the calling thread |
//! | `lock` | `lock`, `mode` (`write`/`read`), `kind` (`blocking`/`try`) | takes the lock `*lock`; a `try` lock succeeds when it returns 0 |
//! | `unlock` | `lock` | releases `*lock` |
//! | `mutex-attr-settype` | `attr`, `kind` | sets the mutex type of the attribute object `*attr` |
//! | `mutex-init` | `mutex`, `attr` or `kind` | initialises `*mutex` with the type of `*attr` (a null `attr`: the default type) or the type value `kind` |
//! | `cond-wait` | `cond`, `mutex` | releases `*mutex`, waits, takes it again |
//! | `cond-signal` | `cond` | wakes waiters |
//! | `barrier-init` | `barrier`, `count` | initialises `*barrier` for `count` threads |
//! | `barrier-wait` | `barrier` | waits for the other threads of the barrier |
//! | `once` | `control`, `routine` | runs `routine()` once across all threads |
//! | `key-create` | `key` | creates a thread-specific data key, stored in `*key` |
//! | `specific-get` / `specific-set` | `key`, `value` | reads / sets the calling thread's value for a key |
//! | `sem-init` | `sem`, `value` | initialises `*sem` with the count `value` |
//! | `sem-wait` / `sem-post` | `sem`, `kind` | semaphore down / up |
//! | `atomic-begin` / `atomic-end` | | start / end of an atomic section (one global lock) |
//! | `atomic-function` | | a defined function whose body runs atomically |
//! | `atomic` | `object` | an atomic operation on `*object` |
//! | `alloc` / `realloc` / `free` | `ptr` | heap allocation; `free` writes the freed object |
//! | `library` | see [`library`] | what a library function reads, writes, keeps, frees, returns and calls back (`access` is the older name) |
//! | `thread-unsafe` | | reads and writes hidden library state (POSIX lists it as not thread-safe): two unsynchronised calls race |
//! | `nondet` | | returns an arbitrary value |
//! | `assume` | `cond` | continues only when the argument is non-zero |
//! | `noreturn` | | never returns (`abort`, `exit`, `reach_error`) |
//! | `nonlocal-jump` | `noreturn` | `setjmp`/`longjmp`: control flow the CFG does not show (`noreturn` for `longjmp`) |
//! | `ignore` | | no effect that matters to the analysis |
//!
//! Source: seed 001 §3 ("Concurrency model") and §8; RacerF's `models/*.yaml`
//! (`notes/racerf-goblint.md` §3).

pub mod library;
mod shipped;

use crate::ir::{FuncId, Program};
use rustc_hash::FxHashMap;
use serde::Deserialize;

/// Whether a lock is taken for reading or writing (mutexes always write).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LockMode {
    /// Shared (reader) mode of a read-write lock.
    Read,
    /// Exclusive mode.
    #[default]
    Write,
}

/// Whether a lock operation blocks until it succeeds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum LockKind {
    /// Waits until the lock is taken (assumed never to fail).
    #[default]
    Blocking,
    /// May fail; returns 0 on success (trylock, timedlock).
    Try,
}

/// What a modelled function does. See the module documentation for the TOML spelling.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(tag = "role", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Role {
    /// Thread creation.
    ThreadCreate {
        /// Argument: pointer to where the thread id is stored.
        #[serde(rename = "thread-id")]
        thread_id: usize,
        /// Argument: the entry function.
        entry: usize,
        /// Argument: the value passed to the entry function.
        arg: usize,
    },
    /// Thread join.
    ThreadJoin {
        /// Argument: the thread id (by value).
        #[serde(rename = "thread-id")]
        thread_id: usize,
    },
    /// Ends the calling thread.
    ThreadExit,
    /// Lock acquisition.
    Lock {
        /// Argument: pointer to the lock.
        lock: usize,
        /// Read or write mode.
        #[serde(default)]
        mode: LockMode,
        /// Blocking or try.
        #[serde(default)]
        kind: LockKind,
        /// Taking the lock while the calling thread already holds it in write mode never
        /// succeeds, unless the program may change the mutex type (`pthread_mutexattr_settype`):
        /// a blocking call never returns (a normal mutex deadlocks, a spin lock spins), a try
        /// call fails (`EBUSY`). False where the call may return an error instead (glibc's
        /// `pthread_rwlock_wrlock` returns `EDEADLK`). POSIX.1-2017 `pthread_mutex_lock`.
        #[serde(default, rename = "relock-fails")]
        relock_fails: bool,
    },
    /// Sets the type of a mutex attribute object (`pthread_mutexattr_settype`); a recursive
    /// type makes unlocking a held mutex leave it possibly held.
    MutexAttrSettype {
        /// Argument: pointer to the attribute object.
        attr: usize,
        /// Argument: the mutex type (`PTHREAD_MUTEX_RECURSIVE` is 1 in glibc and musl).
        kind: usize,
    },
    /// Mutex initialisation (`pthread_mutex_init`, `mtx_init`): its type comes from an
    /// attribute object (`attr`, `pthread_mutexattr_settype`) or from a type value (`kind`, C11
    /// `mtx_recursive`); the deadlock detector tells recursive mutexes apart with it.
    MutexInit {
        /// Argument: pointer to the mutex.
        mutex: usize,
        /// Argument: pointer to the attribute object (`NULL`: the default type).
        #[serde(default)]
        attr: Option<usize>,
        /// Argument: the type as a value (C11 `mtx_plain`, `mtx_recursive`, ...).
        #[serde(default)]
        kind: Option<usize>,
    },
    /// Lock release.
    Unlock {
        /// Argument: pointer to the lock.
        lock: usize,
    },
    /// Condition wait: releases and re-takes the mutex.
    CondWait {
        /// Argument: pointer to the condition variable.
        cond: usize,
        /// Argument: pointer to the mutex.
        mutex: usize,
    },
    /// Condition signal or broadcast.
    CondSignal {
        /// Argument: pointer to the condition variable.
        cond: usize,
    },
    /// Barrier initialisation.
    BarrierInit {
        /// Argument: pointer to the barrier.
        barrier: usize,
        /// Argument: how many threads the barrier waits for.
        count: usize,
    },
    /// Barrier wait.
    BarrierWait {
        /// Argument: pointer to the barrier.
        barrier: usize,
    },
    /// One-time initialisation.
    Once {
        /// Argument: pointer to the once-control object.
        control: usize,
        /// Argument: the routine to run.
        routine: usize,
    },
    /// Creation of a thread-specific data key (`pthread_key_create`).
    KeyCreate {
        /// Argument: where the key is stored.
        key: usize,
    },
    /// The calling thread's value for a thread-specific data key (`pthread_getspecific`).
    SpecificGet {
        /// Argument: the key.
        key: usize,
    },
    /// Sets the calling thread's value for a thread-specific data key (`pthread_setspecific`).
    SpecificSet {
        /// Argument: the key.
        key: usize,
        /// Argument: the value.
        value: usize,
    },
    /// Semaphore initialisation with a count.
    SemInit {
        /// Argument: pointer to the semaphore.
        sem: usize,
        /// Argument: the initial count.
        value: usize,
    },
    /// Semaphore down.
    SemWait {
        /// Argument: pointer to the semaphore.
        sem: usize,
        /// Blocking or try.
        #[serde(default)]
        kind: LockKind,
    },
    /// Semaphore up.
    SemPost {
        /// Argument: pointer to the semaphore.
        sem: usize,
    },
    /// Start of an atomic section.
    AtomicBegin,
    /// End of an atomic section.
    AtomicEnd,
    /// A defined function whose body runs atomically.
    AtomicFunction,
    /// An atomic read-modify-write of the object an argument points to.
    Atomic {
        /// Argument: pointer to the object.
        object: usize,
    },
    /// Heap allocation (the result is a fresh object).
    Alloc,
    /// Reallocation of the object `ptr` points to.
    Realloc {
        /// Argument: the old pointer.
        ptr: usize,
    },
    /// Deallocation: a write to the whole object `ptr` points to.
    Free {
        /// Argument: the pointer.
        ptr: usize,
    },
    /// A library function's effects on memory, its returned pointer and its callbacks
    /// ([`library`]; `role = "library"`, formerly `"access"`).
    #[serde(alias = "access")]
    Library(Box<library::LibSpec>),
    /// Reads and writes hidden library state (not thread-safe, POSIX.1-2017 §2.9.1).
    ThreadUnsafe,
    /// Returns an arbitrary value.
    Nondet,
    /// Continues only when the argument is non-zero.
    Assume {
        /// Argument: the condition.
        cond: usize,
    },
    /// Never returns.
    Noreturn,
    /// `setjmp` / `longjmp`: control flow the CFG does not show.
    NonlocalJump {
        /// Whether it never returns (`longjmp`).
        #[serde(default)]
        noreturn: bool,
    },
    /// No effect of interest.
    Ignore,
}

impl Role {
    /// Whether a call never returns to its caller (the path ends there).
    pub fn ends_path(&self) -> bool {
        match self {
            Role::Noreturn | Role::ThreadExit | Role::NonlocalJump { noreturn: true } => true,
            Role::Library(spec) => spec.noreturn,
            _ => false,
        }
    }

    /// Whether the role describes a defined function (its body is analysed under the role)
    /// rather than a library function without body.
    pub fn applies_to_defined(&self) -> bool {
        matches!(self, Role::AtomicFunction)
    }
}

/// One `[[function]]` entry as written in TOML.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Entry {
    name: Option<String>,
    #[serde(default)]
    names: Vec<String>,
    prefix: Option<String>,
    #[serde(flatten)]
    role: Role,
}

#[derive(Debug, Deserialize)]
struct File {
    #[serde(default)]
    function: Vec<Entry>,
}

/// The shipped models, in load order.
const SHIPPED: &[(&str, &str)] = &[
    ("pthread.toml", include_str!("../../config/pthread.toml")),
    (
        "c11-threads.toml",
        include_str!("../../config/c11-threads.toml"),
    ),
    ("svcomp.toml", include_str!("../../config/svcomp.toml")),
    (
        "gcc-atomics.toml",
        include_str!("../../config/gcc-atomics.toml"),
    ),
    ("libc.toml", include_str!("../../config/libc.toml")),
    ("posix.toml", include_str!("../../config/posix.toml")),
    (
        "libraries/openssl.toml",
        include_str!("../../config/libraries/openssl.toml"),
    ),
    (
        "libraries/zlib.toml",
        include_str!("../../config/libraries/zlib.toml"),
    ),
    (
        "libraries/curl.toml",
        include_str!("../../config/libraries/curl.toml"),
    ),
    (
        "libraries/pcap.toml",
        include_str!("../../config/libraries/pcap.toml"),
    ),
    (
        "libraries/glib.toml",
        include_str!("../../config/libraries/glib.toml"),
    ),
    (
        "libraries/event.toml",
        include_str!("../../config/libraries/event.toml"),
    ),
    (
        "libraries/fuse.toml",
        include_str!("../../config/libraries/fuse.toml"),
    ),
    (
        "libraries/ncurses.toml",
        include_str!("../../config/libraries/ncurses.toml"),
    ),
    (
        "libraries/json.toml",
        include_str!("../../config/libraries/json.toml"),
    ),
    (
        "libraries/libpq.toml",
        include_str!("../../config/libraries/libpq.toml"),
    ),
    (
        "libraries/lua.toml",
        include_str!("../../config/libraries/lua.toml"),
    ),
    (
        "libraries/media.toml",
        include_str!("../../config/libraries/media.toml"),
    ),
    (
        "libraries/misc.toml",
        include_str!("../../config/libraries/misc.toml"),
    ),
];

/// A loaded concurrency model: roles by exact name, then by prefix (longest prefix wins).
/// The shipped files are indexed once per process and their entries parsed on first use
/// ([`shipped`]); files added with [`Model::add_toml`] are parsed at once and override them.
#[derive(Clone, Debug, Default)]
pub struct Model {
    by_name: FxHashMap<String, Role>,
    prefixes: Vec<(String, Role)>,
    /// Whether the shipped files are part of the model (below the entries above).
    shipped: bool,
}

/// A model file that does not parse: its name and the TOML error (which gives line and column).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModelError {
    /// File name.
    pub file: String,
    /// What is wrong, with the position.
    pub message: String,
}

impl std::fmt::Display for ModelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let msg = self.message.trim().replace('\n', " ");
        write!(
            f,
            "{}:1: error: invalid concurrency model: {msg}",
            self.file
        )
    }
}

impl Model {
    /// The shipped models.
    pub fn shipped() -> Model {
        Model {
            shipped: true,
            ..Model::default()
        }
    }

    /// Adds the entries of a TOML model; later entries override earlier ones.
    ///
    /// Errors: the text is not valid TOML or does not follow the schema.
    pub fn add_toml(&mut self, file: &str, text: &str) -> Result<(), ModelError> {
        let parsed: File = toml::from_str(text).map_err(|e| ModelError {
            file: file.to_string(),
            message: e.to_string(),
        })?;
        for e in parsed.function {
            let mut names = e.names;
            names.extend(e.name);
            if names.is_empty() && e.prefix.is_none() {
                return Err(ModelError {
                    file: file.to_string(),
                    message: "a [[function]] entry needs `name`, `names` or `prefix`".into(),
                });
            }
            if let Role::Library(spec) = &e.role
                && let Err(message) = spec.validate()
            {
                let name = names
                    .first()
                    .or(e.prefix.as_ref())
                    .cloned()
                    .unwrap_or_default();
                return Err(ModelError {
                    file: file.to_string(),
                    message: format!("function '{name}': {message}"),
                });
            }
            for n in names {
                self.by_name.insert(n, e.role.clone());
            }
            if let Some(p) = e.prefix {
                self.prefixes.retain(|(q, _)| *q != p);
                self.prefixes.push((p, e.role.clone()));
            }
        }
        // Longest prefix first.
        self.prefixes
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Ok(())
    }

    /// Adds every entry of `later`, which override this model's as if `later`'s files had been
    /// added after this model's ([`Model::add_toml`]).
    pub fn extend(&mut self, later: Model) {
        self.shipped |= later.shipped;
        self.by_name.extend(later.by_name);
        for (p, role) in later.prefixes {
            self.prefixes.retain(|(q, _)| *q != p);
            self.prefixes.push((p, role));
        }
        // Longest prefix first.
        self.prefixes
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
    }

    /// The role of a function by name, if the model knows it.
    pub fn role(&self, name: &str) -> Option<&Role> {
        if let Some(r) = self.by_name.get(name) {
            return Some(r);
        }
        let index = self.shipped.then(shipped::index);
        if let Some(r) = index.and_then(|i| i.exact(name)) {
            return Some(r);
        }
        let own = self
            .prefixes
            .iter()
            .find(|(p, _)| name.starts_with(p.as_str()));
        let theirs = index.and_then(|i| i.prefix(name));
        match (own, theirs) {
            (Some((p, r)), Some((q, _))) if p.len() >= q.len() => Some(r),
            (_, Some((_, r))) => Some(r),
            (Some((_, r)), None) => Some(r),
            (None, None) => None,
        }
    }

    /// The roles of a program's functions, indexed by [`FuncId`]: a function with a body gets
    /// a role only if the role applies to defined functions ([`Role::applies_to_defined`]) or a
    /// user model (`--config`) names it exactly: the user's word overrides the body (a lock
    /// wrapper, a thread trampoline, a custom allocator the analysis would not see through).
    pub fn classify(&self, program: &Program) -> Roles {
        let mut roles: Vec<Option<Role>> = program
            .functions
            .iter()
            .map(|f| {
                if f.body.is_some()
                    && let Some(r) = self.by_name.get(&f.name)
                {
                    return Some(r.clone());
                }
                self.role(&f.name)
                    .filter(|r| f.body.is_none() || r.applies_to_defined())
                    .cloned()
            })
            .collect();
        // Defined functions shaped like `void f(int c) { if (!c) abort(); }` are assumptions
        // (SV-COMP's `assume_abort_if_not` and its kin): they return only when `c` holds.
        for (i, f) in program.functions.iter().enumerate() {
            if roles[i].is_none()
                && f.body.is_some()
                && let Some(cond) = assume_wrapper(program, &roles, FuncId(i as u32))
            {
                roles[i] = Some(Role::Assume { cond });
            }
        }
        // Defined functions that only forward their parameters to a lock, unlock, create or
        // join function (`int my_lock(pthread_mutex_t *m) { return pthread_mutex_lock(m); }`)
        // take the callee's role, with the arguments mapped to their parameters (wrappers of
        // wrappers too): each call of a forwarding create wrapper is a create statement of
        // its caller, as if the wrapper were not there. Other create and join wrappers keep
        // their bodies: each call site gets its own copy (`crate::ir::specialise`), which
        // names threads by the wrapper's callers.
        for _ in 0..3 {
            let mut changed = false;
            for i in 0..program.functions.len() {
                if roles[i].is_none()
                    && let Some(r) = forwarding_wrapper(program, &roles, FuncId(i as u32))
                {
                    roles[i] = Some(r);
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        Roles { roles }
    }
}

/// The role of a defined function that only forwards its parameters to one call of a lock,
/// unlock, thread create or join function and returns: no loop, no branch, no other call,
/// assignments only to its own non-parameter locals, and every argument the callee's role
/// names a parameter loaded whole (casts aside). The role is the callee's with those argument
/// positions replaced by the parameters' positions.
fn forwarding_wrapper(program: &Program, roles: &[Option<Role>], func: FuncId) -> Option<Role> {
    use crate::ir::{Callee, ExprKind, Host, Op, Var};
    let f = program.function(func);
    let cfg = f.body.as_ref()?;
    if f.params.is_empty() || cfg.nodes.iter().any(|n| n.loop_head) {
        return None;
    }
    let mut found: Option<Role> = None;
    for e in &cfg.edges {
        match &e.op {
            Op::Skip | Op::Return(_) => {}
            Op::Assign { lhs, .. } => match lhs.host {
                Host::Var(Var::Local(l)) if !f.params.contains(&l) => {}
                _ => return None,
            },
            Op::Call {
                callee: Callee::Direct(g),
                args,
                dest,
            } => {
                if found.is_some() {
                    return None;
                }
                if let Some(d) = dest
                    && !matches!(d.host, Host::Var(Var::Local(l)) if !f.params.contains(&l))
                {
                    return None;
                }
                let param = |i: usize| -> Option<usize> {
                    let a = args.get(i)?;
                    let ExprKind::Load(lv) = &crate::ir::visit::strip_casts(a).kind else {
                        return None;
                    };
                    match lv.host {
                        Host::Var(Var::Local(l)) if lv.proj.is_empty() => {
                            f.params.iter().position(|p| *p == l)
                        }
                        _ => None,
                    }
                };
                found = Some(match roles.get(g.0 as usize)?.as_ref()? {
                    Role::Lock {
                        lock,
                        mode,
                        kind,
                        relock_fails,
                    } => Role::Lock {
                        lock: param(*lock)?,
                        mode: *mode,
                        kind: *kind,
                        relock_fails: *relock_fails,
                    },
                    Role::Unlock { lock } => Role::Unlock {
                        lock: param(*lock)?,
                    },
                    Role::ThreadCreate {
                        thread_id,
                        entry,
                        arg,
                    } => Role::ThreadCreate {
                        thread_id: param(*thread_id)?,
                        entry: param(*entry)?,
                        arg: param(*arg)?,
                    },
                    Role::ThreadJoin { thread_id } => Role::ThreadJoin {
                        thread_id: param(*thread_id)?,
                    },
                    _ => return None,
                });
            }
            _ => return None,
        }
    }
    found
}

/// Whether calling `g` never returns: a role that ends the path, or a defined function whose
/// exit no path reaches.
fn never_returns(program: &Program, roles: &[Option<Role>], g: FuncId) -> bool {
    let f = program.function(g);
    if f.noreturn {
        return true;
    }
    match (roles.get(g.0 as usize).and_then(|r| r.as_ref()), &f.body) {
        (Some(r), _) => r.ends_path(),
        (None, Some(cfg)) => cfg.node(cfg.exit).preds.is_empty(),
        (None, None) => false,
    }
}

/// The parameter `f` assumes, when `f` is an assumption wrapper: an acyclic body that only
/// tests one parameter, ends every path on which it is zero with a call that never returns,
/// and returns on every other path.
fn assume_wrapper(program: &Program, roles: &[Option<Role>], func: FuncId) -> Option<usize> {
    use crate::ir::{BinOp, ExprKind, Host, Op, UnOp, Var};
    let f = program.function(func);
    let cfg = f.body.as_ref()?;
    if f.params.is_empty() || cfg.nodes.iter().any(|n| n.loop_head) {
        return None;
    }
    // Which parameter is tested, and what a branch says about it: Some(true) = non-zero.
    let mut param: Option<usize> = None;
    let mut says = |cond: &crate::ir::Expr, branch: bool| -> Option<Option<bool>> {
        let mut e = crate::ir::visit::strip_casts(cond);
        let mut positive = branch;
        loop {
            match &e.kind {
                ExprKind::Unary(UnOp::LogNot, a) => {
                    positive = !positive;
                    e = crate::ir::visit::strip_casts(a);
                }
                ExprKind::Binary(op @ (BinOp::Ne | BinOp::Eq), a, b) if b.as_int() == Some(0) => {
                    if *op == BinOp::Eq {
                        positive = !positive;
                    }
                    e = crate::ir::visit::strip_casts(a);
                }
                _ => break,
            }
        }
        let ExprKind::Load(lv) = &e.kind else {
            return None;
        };
        let (Host::Var(Var::Local(l)), true) = (&lv.host, lv.proj.is_empty()) else {
            return None;
        };
        let idx = f.params.iter().position(|p| p == l)?;
        if *param.get_or_insert(idx) != idx {
            return None;
        }
        Some(Some(positive))
    };
    // Must-analysis over the acyclic CFG (reverse postorder): is the parameter known non-zero?
    let order = cfg.reverse_postorder();
    let mut known: Vec<Option<bool>> = vec![None; cfg.nodes.len()];
    known[cfg.entry.0 as usize] = Some(false);
    for n in order {
        let Some(k) = known[n.0 as usize] else {
            continue;
        };
        for &eid in &cfg.node(n).succs {
            let e = cfg.edge(eid);
            let out = match &e.op {
                Op::Skip | Op::Return(None) => Some(k),
                Op::Return(Some(x)) if x.as_int().is_some() => Some(k),
                Op::Assume { cond, branch } => match says(cond, *branch)? {
                    Some(true) => Some(true),
                    _ => Some(k),
                },
                Op::Call {
                    callee: crate::ir::Callee::Direct(g),
                    dest: None,
                    ..
                } if never_returns(program, roles, *g) => None,
                _ => return None,
            };
            if let Some(o) = out {
                let d = &mut known[e.dst.0 as usize];
                *d = Some(d.map_or(o, |x| x && o));
            }
        }
    }
    (param.is_some() && known[cfg.exit.0 as usize] == Some(true)).then_some(param?)
}

/// The roles of one program's functions.
#[derive(Clone, Debug, Default)]
pub struct Roles {
    roles: Vec<Option<Role>>,
}

impl Roles {
    /// The role of function `f`, if modelled.
    pub fn get(&self, f: FuncId) -> Option<&Role> {
        self.roles.get(f.0 as usize).and_then(|r| r.as_ref())
    }

    /// Gives function `f` (a function a pass added to the program) role `role`.
    pub fn set(&mut self, f: FuncId, role: Role) {
        let i = f.0 as usize;
        if self.roles.len() <= i {
            self.roles.resize(i + 1, None);
        }
        self.roles[i] = Some(role);
    }

    /// The role of the function an instruction calls directly, if it is a modelled call.
    pub fn of_call(&self, op: &crate::ir::Op) -> Option<&Role> {
        op.direct_callee().and_then(|g| self.get(g))
    }

    /// The functions whose call may run a modelled call with a role satisfying `pick`: those
    /// modelled functions themselves, and every defined function that calls one of them
    /// directly, transitively (calls through pointers are not followed).
    pub fn callers_reaching(
        &self,
        program: &Program,
        pick: impl Fn(&Role) -> bool,
    ) -> rustc_hash::FxHashSet<FuncId> {
        let mut out: rustc_hash::FxHashSet<FuncId> = (0..program.functions.len())
            .map(|i| FuncId(i as u32))
            .filter(|f| self.get(*f).is_some_and(&pick))
            .collect();
        loop {
            let before = out.len();
            for (i, f) in program.functions.iter().enumerate() {
                let id = FuncId(i as u32);
                if out.contains(&id) {
                    continue;
                }
                if let Some(cfg) = &f.body
                    && cfg
                        .edges
                        .iter()
                        .any(|e| e.op.direct_callee().is_some_and(|g| out.contains(&g)))
                {
                    out.insert(id);
                }
            }
            if out.len() == before {
                return out;
            }
        }
    }
}

/// A function a call hands to a library function, and how it runs ([`library::Callback`];
/// for an unknown function, every function it receives runs during the call).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CallbackUse<'r> {
    /// The argument holding it (with `deep`: pointing to an object holding it).
    pub arg: usize,
    /// When it runs.
    pub runs: library::Runs,
    /// The function pointer is stored in the object the argument points to.
    pub deep: bool,
    /// What its parameters receive.
    pub params: &'r [library::Param],
    /// The registry of a `later` callback.
    pub registry: Option<&'r str>,
    /// Members whose functions run first, once ([`library::Callback::first`]).
    pub first: &'r [String],
    /// Members whose functions run last, once ([`library::Callback::last`]).
    pub last: &'r [String],
    /// Its position among the specification's callbacks ([`UNKNOWN_CALLBACK`] for an
    /// unknown function's).
    pub index: u8,
}

/// [`CallbackUse::index`] of a function an unknown function receives.
pub const UNKNOWN_CALLBACK: u8 = u8::MAX;

/// Whether a type may hold a function pointer: a pointer to a function, or a struct, union
/// or array with one inside (incomplete types may).
fn holds_function_pointer(types: &crate::ir::TypeTable, ty: crate::ir::TypeId) -> bool {
    use crate::ir::types::TypeKind;
    types.may_hold(
        ty,
        |k| matches!(k, TypeKind::Pointer(p) if matches!(types.kind(*p), TypeKind::Function(_))),
    )
}

impl Roles {
    /// The callbacks the call `op` hands to a library function: those its specification lists,
    /// or, for an unknown function (no body, no role), every argument that is a function or
    /// points to an object that may hold a function pointer. Code we do not see may run such
    /// a callback during the call or at any later time, from any thread: it runs as a thread
    /// started at the call (any number of instances, never certain), which covers both.
    pub fn callbacks<'a>(&'a self, program: &Program, op: &crate::ir::Op) -> Vec<CallbackUse<'a>> {
        let crate::ir::Op::Call {
            callee: crate::ir::Callee::Direct(f),
            args,
            ..
        } = op
        else {
            return Vec::new();
        };
        match self.get(*f) {
            Some(Role::Library(spec)) => spec
                .callbacks
                .iter()
                .enumerate()
                .map(|(i, c)| CallbackUse {
                    arg: c.arg,
                    runs: c.runs,
                    deep: c.deep,
                    params: &c.params,
                    registry: c.registry.as_deref(),
                    first: &c.first,
                    last: &c.last,
                    index: u8::try_from(i).unwrap_or(UNKNOWN_CALLBACK - 1),
                })
                .collect(),
            None if program.function(*f).body.is_none() => {
                let types = &program.types;
                args.iter()
                    .enumerate()
                    .filter_map(|(i, a)| {
                        let inner = crate::ir::visit::strip_casts(a);
                        let direct = matches!(inner.kind, crate::ir::ExprKind::Func(_))
                            || types.func_sig(a.ty).is_some()
                            || types.func_sig(inner.ty).is_some();
                        let deep = !direct
                            && !matches!(inner.kind, crate::ir::ExprKind::Str(_))
                            && [a.ty, inner.ty].iter().any(|t| {
                                types.pointee(*t).is_some_and(|p| {
                                    matches!(types.kind(p), crate::ir::types::TypeKind::Void)
                                        || holds_function_pointer(types, p)
                                })
                            });
                        (direct || deep).then_some(CallbackUse {
                            arg: i,
                            runs: library::Runs::Thread,
                            deep,
                            params: &[],
                            registry: None,
                            first: &[],
                            last: &[],
                            index: UNKNOWN_CALLBACK,
                        })
                    })
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// The callback of the call `op` with [`CallbackUse::index`] `index`.
    pub fn callback<'a>(
        &'a self,
        program: &Program,
        op: &crate::ir::Op,
        index: u8,
    ) -> Option<CallbackUse<'a>> {
        self.callbacks(program, op)
            .into_iter()
            .find(|c| c.index == index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every TOML example of `config/README.md` (the user reference) is a valid model.
    #[test]
    fn the_config_reference_examples_parse() {
        let text = include_str!("../../config/README.md");
        let blocks: Vec<&str> = text
            .split("```toml")
            .skip(1)
            .filter_map(|b| b.split("```").next())
            .collect();
        assert!(blocks.len() >= 2, "{}", blocks.len());
        for b in blocks {
            let mut m = Model::default();
            assert!(m.add_toml("config/README.md", b).is_ok(), "{b}");
            assert!(!m.by_name.is_empty(), "{b}");
        }
    }

    #[test]
    fn shipped_models_parse() {
        for (name, text) in SHIPPED {
            let mut m = Model::default();
            m.add_toml(name, text).unwrap_or_else(|e| panic!("{e}"));
        }
    }

    /// The lazy index finds exactly the names and prefixes a full parse does, every entry
    /// parses on its own, and no name is described twice (in one file or two).
    #[test]
    fn shipped_index_matches_a_full_parse() {
        let index = shipped::index();
        let mut full: Vec<String> = Vec::new();
        let mut prefixes: Vec<String> = Vec::new();
        for (_, text) in SHIPPED {
            let f: File = toml::from_str(text).unwrap_or_else(|e| panic!("{e}"));
            for e in f.function {
                full.extend(e.names);
                full.extend(e.name);
                prefixes.extend(e.prefix);
            }
        }
        let mut sorted = full.clone();
        sorted.sort();
        let dup: Vec<&String> = sorted
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| &w[0])
            .collect();
        assert!(dup.is_empty(), "described twice: {dup:?}");
        let mut indexed: Vec<&str> = index.names().collect();
        indexed.sort_unstable();
        assert_eq!(
            indexed,
            sorted.iter().map(String::as_str).collect::<Vec<_>>()
        );
        for (file, text) in index.entries() {
            let f: Result<File, _> = toml::from_str(text);
            let f = f.unwrap_or_else(|e| panic!("{file}: {e}\n{text}"));
            assert!(
                f.function.len() <= 1,
                "{file}: one entry per chunk:\n{text}"
            );
            let (names, prefix) = shipped::names_of(text);
            if let Some(e) = f.function.first() {
                let mut want: Vec<&str> = e.names.iter().map(String::as_str).collect();
                want.extend(e.name.as_deref());
                assert_eq!(names, want, "{file}:\n{text}");
                assert_eq!(prefix, e.prefix.as_deref(), "{file}:\n{text}");
            }
        }
        let mut p = prefixes.clone();
        p.sort();
        p.dedup();
        assert_eq!(p.len(), prefixes.len(), "a prefix described twice");
        // Lazy and eager models agree.
        let mut eager = Model::default();
        for (name, text) in SHIPPED {
            eager.add_toml(name, text).unwrap_or_else(|e| panic!("{e}"));
        }
        let lazy = Model::shipped();
        for n in full
            .iter()
            .chain(&prefixes)
            .map(String::as_str)
            .chain(["pthread_foo", "x"])
        {
            assert_eq!(lazy.role(n), eager.role(n), "{n}");
        }
    }

    #[test]
    fn roles_by_name_and_prefix() {
        let m = Model::shipped();
        assert_eq!(
            m.role("pthread_create"),
            Some(&Role::ThreadCreate {
                thread_id: 0,
                entry: 2,
                arg: 3
            })
        );
        assert_eq!(
            m.role("pthread_rwlock_rdlock"),
            Some(&Role::Lock {
                lock: 0,
                mode: LockMode::Read,
                kind: LockKind::Blocking,
                relock_fails: false
            })
        );
        assert_eq!(
            m.role("pthread_mutex_trylock"),
            Some(&Role::Lock {
                lock: 0,
                mode: LockMode::Write,
                kind: LockKind::Try,
                relock_fails: true
            })
        );
        assert_eq!(m.role("__VERIFIER_nondet_int"), Some(&Role::Nondet));
        assert_eq!(m.role("__VERIFIER_atomic_begin"), Some(&Role::AtomicBegin));
        assert_eq!(
            m.role("__VERIFIER_atomic_incr"),
            Some(&Role::AtomicFunction)
        );
        assert_eq!(m.role("__atomic_thread_fence"), Some(&Role::Ignore));
        assert_eq!(
            m.role("__atomic_fetch_add"),
            Some(&Role::Atomic { object: 0 })
        );
        assert_eq!(m.role("no_such_function"), None);
    }

    #[test]
    fn user_models_override_and_report_errors() {
        let mut m = Model::shipped();
        m.add_toml(
            "mine.toml",
            "[[function]]\nname = \"my_lock\"\nrole = \"lock\"\nlock = 1\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            m.role("my_lock"),
            Some(&Role::Lock {
                lock: 1,
                mode: LockMode::Write,
                kind: LockKind::Blocking,
                relock_fails: false
            })
        );
        let err = m
            .add_toml("bad.toml", "[[function]]\nname = \"x\"\nrole = \"fly\"\n")
            .err();
        assert!(err.is_some_and(|e| e.to_string().starts_with("bad.toml:1: error:")));
    }

    #[test]
    fn library_entries_parse_and_bad_ones_are_errors() {
        let text = r#"
[[function]]
name = "getaddrinfo"
role = "library"
reads = [0, 1, 2]
writes = [3]
bytes = { 0 = "string", 2 = "pointee", 4 = "arg1*arg2" }
stores = { 3 = "fresh" }
returns = "arg0"
keeps = [1]
frees = [2]
format = 1
callbacks = [{ arg = 2, runs = "sync", params = ["arg0", "fresh"] },
             { arg = 1, runs = "later", registry = "glut" }]
drives = ["glut"]
"#;
        let mut m = Model::default();
        m.add_toml("lib.toml", text)
            .unwrap_or_else(|e| panic!("{e}"));
        let Some(Role::Library(spec)) = m.role("getaddrinfo") else {
            panic!("not a library entry: {:?}", m.role("getaddrinfo"));
        };
        use library::{Bytes, Param, Pointer, Runs};
        assert_eq!(spec.bytes(0), Bytes::Rest);
        assert_eq!(spec.bytes(2), Bytes::Pointee);
        assert_eq!(spec.bytes(4), Bytes::Product(1, 2));
        assert_eq!(spec.bytes(3), Bytes::Rest);
        assert_eq!(spec.stores().collect::<Vec<_>>(), vec![(3, Pointer::Fresh)]);
        assert_eq!(spec.returns, Pointer::Arg(0));
        assert_eq!(spec.read_written(4), (vec![0, 1, 2], vec![2, 3]));
        assert_eq!(spec.callbacks[0].runs, Runs::Sync);
        assert_eq!(spec.callbacks[0].params, vec![Param::Arg(0), Param::Fresh]);
        for bad in [
            "[[function]]\nname = \"f\"\nrole = \"library\"\nbytes = { x = \"rest\" }\n",
            "[[function]]\nname = \"f\"\nrole = \"library\"\nreturns = \"heap\"\n",
            "[[function]]\nname = \"f\"\nrole = \"library\"\nreeds = [0]\n",
            "[[function]]\nname = \"f\"\nrole = \"library\"\ncallbacks = [{ arg = 0, runs = \"later\" }]\n",
        ] {
            let err = Model::default().add_toml("bad.toml", bad).err();
            assert!(err.is_some(), "accepted: {bad}");
        }
    }

    /// Extending by a separately parsed model is adding its files afterwards.
    #[test]
    fn extending_is_adding_later() {
        let mine = "[[function]]\nname = \"pthread_mutex_lock\"\nrole = \"ignore\"\n\
                    [[function]]\nprefix = \"__atomic_\"\nrole = \"ignore\"\n";
        let mut added = Model::shipped();
        added
            .add_toml("mine.toml", mine)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut user = Model::default();
        user.add_toml("mine.toml", mine)
            .unwrap_or_else(|e| panic!("{e}"));
        let mut extended = Model::shipped();
        extended.extend(user);
        for f in [
            "pthread_mutex_lock",
            "__atomic_fetch_add",
            "__atomic_thread_fence",
            "free",
        ] {
            assert_eq!(extended.role(f), added.role(f), "{f}");
        }
        assert_eq!(extended.role("pthread_mutex_lock"), Some(&Role::Ignore));
        assert_eq!(extended.prefixes, added.prefixes);
    }
}
