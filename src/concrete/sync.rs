//! The state of synchronisation objects (POSIX mutexes, read-write and spin locks, condition
//! variables, semaphores, barriers, once controls, thread-specific data keys), kept beside
//! memory and keyed by the object's address, as the C library keeps it inside objects the
//! program treats as opaque.
//!
//! Semantics follow POSIX.1-2017 (`pthread_mutex_lock`, `pthread_cond_wait`, `sem_wait`,
//! `pthread_barrier_wait`, `pthread_once`): a normal mutex locked twice by its owner deadlocks,
//! a recursive one counts, an error-checking one returns `EDEADLK`; unlocking a mutex the
//! caller does not hold is an error for error-checking and recursive mutexes and undefined
//! behaviour otherwise. Spurious wake-ups of condition variables are not generated (the
//! executions explored are a subset of the real ones).

use std::collections::BTreeMap;

/// `EBUSY` (Linux).
pub const EBUSY: u128 = 16;
/// `EDEADLK` (Linux).
pub const EDEADLK: u128 = 35;
/// `EPERM` (Linux).
pub const EPERM: u128 = 1;
/// `ETIMEDOUT` (Linux).
pub const ETIMEDOUT: u128 = 110;

/// The type of a mutex (`pthread_mutexattr_settype`; glibc's numbering).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MutexKind {
    /// `PTHREAD_MUTEX_NORMAL` / default: relocking deadlocks, foreign unlocks are undefined.
    #[default]
    Normal,
    /// `PTHREAD_MUTEX_RECURSIVE` (1).
    Recursive,
    /// `PTHREAD_MUTEX_ERRORCHECK` (2).
    ErrorCheck,
}

impl MutexKind {
    /// The kind of glibc's type number.
    pub fn of(n: u128) -> MutexKind {
        match n {
            1 => MutexKind::Recursive,
            2 => MutexKind::ErrorCheck,
            _ => MutexKind::Normal,
        }
    }
}

/// A lock: mutex, spin lock or read-write lock.
#[derive(Clone, Debug, Default)]
pub struct Lock {
    /// Its type.
    pub kind: MutexKind,
    /// The thread holding it exclusively.
    pub writer: Option<usize>,
    /// How often the writer holds it (recursive mutexes).
    pub depth: u32,
    /// Threads holding it shared (one entry per hold).
    pub readers: Vec<usize>,
}

impl Lock {
    /// Whether `tid` can take it now in the given mode.
    pub fn available(&self, tid: usize, write: bool) -> bool {
        match self.writer {
            Some(w) => w == tid && self.kind == MutexKind::Recursive && write,
            None => !write || self.readers.is_empty(),
        }
    }
}

/// What a result of a lock operation is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LockOutcome {
    /// Taken (or released): returns 0.
    Done,
    /// Fails with this error number, without blocking.
    Error(u128),
    /// The caller must wait.
    Wait,
    /// Undefined behaviour.
    Undefined,
}

/// A barrier (`pthread_barrier_init`).
#[derive(Clone, Debug, Default)]
pub struct Barrier {
    /// Threads to wait for.
    pub count: u32,
    /// Threads waiting now.
    pub waiting: u32,
}

/// State of a once control.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Once {
    /// The routine runs in this thread.
    Running(usize),
    /// The routine has returned.
    Done,
}

/// Synchronisation state of an execution.
#[derive(Clone, Debug, Default)]
pub struct SyncState {
    /// Locks by address.
    pub locks: BTreeMap<u64, Lock>,
    /// Mutex attribute objects by address: the mutex type they set.
    pub attrs: BTreeMap<u64, MutexKind>,
    /// Semaphore values by address.
    pub sems: BTreeMap<u64, u64>,
    /// Barriers by address.
    pub barriers: BTreeMap<u64, Barrier>,
    /// Once controls by address.
    pub onces: BTreeMap<u64, Once>,
    /// Thread-specific data keys created: whether each has a destructor.
    pub keys: Vec<bool>,
    /// Order in which threads started waiting on condition variables (wake-up order).
    pub wait_seq: u64,
}

impl SyncState {
    /// Takes lock `addr` for `tid` (`write`: exclusively), or says why not; `try_only`: fail
    /// with `EBUSY` instead of waiting. `kind` is the mutex type used when the lock is first
    /// seen (from its static initialiser).
    pub fn lock(
        &mut self,
        addr: u64,
        tid: usize,
        write: bool,
        try_only: bool,
        kind: MutexKind,
    ) -> LockOutcome {
        let l = self.locks.entry(addr).or_insert_with(|| Lock {
            kind,
            ..Lock::default()
        });
        if l.available(tid, write) {
            if write {
                l.writer = Some(tid);
                l.depth += 1;
            } else {
                l.readers.push(tid);
            }
            return LockOutcome::Done;
        }
        if try_only {
            LockOutcome::Error(EBUSY)
        } else if write && l.writer == Some(tid) && l.kind == MutexKind::ErrorCheck {
            LockOutcome::Error(EDEADLK)
        } else {
            LockOutcome::Wait
        }
    }

    /// Whether `tid` could take lock `addr` now.
    pub fn lock_available(&self, addr: u64, tid: usize, write: bool) -> bool {
        self.locks
            .get(&addr)
            .is_none_or(|l| l.available(tid, write))
    }

    /// Releases lock `addr` held by `tid`.
    pub fn unlock(&mut self, addr: u64, tid: usize, kind: MutexKind) -> LockOutcome {
        let l = self.locks.entry(addr).or_insert_with(|| Lock {
            kind,
            ..Lock::default()
        });
        if l.writer == Some(tid) {
            l.depth -= 1;
            if l.depth == 0 {
                l.writer = None;
            }
            return LockOutcome::Done;
        }
        if let Some(i) = l.readers.iter().position(|r| *r == tid) {
            l.readers.remove(i);
            return LockOutcome::Done;
        }
        match l.kind {
            MutexKind::Normal => LockOutcome::Undefined,
            _ => LockOutcome::Error(EPERM),
        }
    }

    /// The type of a known lock.
    pub fn kind_of(&self, addr: u64) -> Option<MutexKind> {
        self.locks.get(&addr).map(|l| l.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mutex_kinds() {
        let mut s = SyncState::default();
        assert_eq!(
            s.lock(8, 0, true, false, MutexKind::Normal),
            LockOutcome::Done
        );
        assert_eq!(
            s.lock(8, 0, true, false, MutexKind::Normal),
            LockOutcome::Wait
        );
        assert_eq!(
            s.lock(8, 1, true, true, MutexKind::Normal),
            LockOutcome::Error(EBUSY)
        );
        assert_eq!(s.unlock(8, 1, MutexKind::Normal), LockOutcome::Undefined);
        assert_eq!(s.unlock(8, 0, MutexKind::Normal), LockOutcome::Done);
        let r = MutexKind::Recursive;
        assert_eq!(s.lock(16, 0, true, false, r), LockOutcome::Done);
        assert_eq!(s.lock(16, 0, true, false, r), LockOutcome::Done);
        assert_eq!(s.unlock(16, 0, r), LockOutcome::Done);
        assert!(!s.lock_available(16, 1, true));
        assert_eq!(s.unlock(16, 0, r), LockOutcome::Done);
        assert!(s.lock_available(16, 1, true));
        let e = MutexKind::ErrorCheck;
        assert_eq!(s.unlock(24, 0, e), LockOutcome::Error(EPERM));
        assert_eq!(s.lock(24, 0, true, false, e), LockOutcome::Done);
        assert_eq!(s.lock(24, 0, true, false, e), LockOutcome::Error(EDEADLK));
        assert_eq!(s.lock(24, 0, true, true, e), LockOutcome::Error(EBUSY));
    }

    #[test]
    fn readers_share() {
        let mut s = SyncState::default();
        let n = MutexKind::Normal;
        assert_eq!(s.lock(8, 0, false, false, n), LockOutcome::Done);
        assert_eq!(s.lock(8, 1, false, false, n), LockOutcome::Done);
        assert_eq!(s.lock(8, 2, true, true, n), LockOutcome::Error(EBUSY));
        assert_eq!(s.unlock(8, 0, n), LockOutcome::Done);
        assert_eq!(s.unlock(8, 1, n), LockOutcome::Done);
        assert_eq!(s.lock(8, 2, true, false, n), LockOutcome::Done);
    }
}
