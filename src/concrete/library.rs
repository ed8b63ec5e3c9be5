//! Models of the library functions a concrete execution may call: POSIX threads and
//! synchronisation, C11 threads, the SV-COMP functions, gcc's atomic builtins, and the parts
//! of the C library (allocation, `mem*`/`str*`, output) whose effect is known exactly.
//!
//! Functions are recognised by their concurrency-model role ([`crate::model::Role`]) first,
//! then by name. A function that is neither stops the execution: its effect is unknown, unless
//! its library specification says it changes nothing the program sees and its result is not
//! used.
//!
//! The environment of an execution is one a real run may have: no arguments (`argc` 1), no
//! environment variables (`getenv` returns null, `environ` empty, `getopt` -1), no signal delivered (installing
//! handlers and masks changes nothing), the C library's `getopt` variables at their initial
//! values ([`LIBRARY_VARIABLES`]), a clock that stands still ([`CLOCK_START`]), a machine with
//! [`ONLINE_CPUS`] processors and 4 KiB pages, an empty working directory (opening a file
//! fails) and standard streams that are not terminals. The explorer may also run `main` with
//! operands (`super::explore::ARGUMENT_VECTORS`); `getopt` then finds no option.
//! Accesses are recorded as the static analysis counts them (`crate::backend::accesses`):
//! synchronisation calls access nothing but their argument expressions, library functions
//! read and write the bytes they touch, atomic builtins access their object atomically.
//! Deallocation (`free`, `realloc`) is not claimed as an access: whether releasing a block
//! races with a use of it is not settled by SV-COMP's definition of a data race (Goblint does
//! not count it), so a witness never rests on it; a use after the release still stops the
//! execution.

use super::Stop;
use super::interp::{Acc, Event, Ext, FrameKind, Machine, Status, StepOut, SyncKey};
use super::memory::{MAX_OBJECT, Origin};
use super::sync::{self, LockOutcome, MutexKind};
use super::value::{self, Repr, Val, int_value, trunc};
use super::varargs::FormatArgs;
use crate::ir::{Expr, FuncId, TypeId};
use crate::model::{LockKind, LockMode, Role};

/// `PTHREAD_BARRIER_SERIAL_THREAD` (glibc).
const BARRIER_SERIAL: i128 = -1;

/// The time every clock reading of a concrete execution gives (seconds since the Epoch).
const CLOCK_START: i128 = 1_700_000_000;

/// `ENOENT` and `ENOTTY` (Linux).
const ENOENT: i32 = 2;
const ENOTTY: i32 = 25;

/// Bytes of the zeroed block a library function returns as a new object when its result type
/// gives no size (`char *`, `void *`): an empty string with room to spare.
const FRESH_RESULT_BYTES: u64 = 256;

/// Processors of the machine a concrete execution runs on.
const ONLINE_CPUS: i128 = 4;

/// glibc's `sysconf` names: `_SC_PAGESIZE`, `_SC_NPROCESSORS_CONF`, `_SC_NPROCESSORS_ONLN`.
const SC_PAGESIZE: i128 = 30;
const SC_NPROCESSORS_CONF: i128 = 83;
const SC_NPROCESSORS_ONLN: i128 = 84;

/// Bytes of glibc's `sigset_t` (1024 signal bits).
const SIGSET_BYTES: u64 = 128;

/// Variables of the C library a program may read and write, with their values at program
/// start (POSIX getopt: `optind` 1, `opterr` non-zero, `optopt` and `optarg` unset); other
/// library objects stay opaque (an access stops the execution). (name, value, size in bytes;
/// 0: pointer-sized)
pub(super) const LIBRARY_VARIABLES: [(&str, i128, u64); 4] = [
    ("optind", 1, 4),
    ("opterr", 1, 4),
    ("optopt", 63, 4),
    ("optarg", 0, 0),
];

const SIGNED128: Repr = Repr::Int {
    bits: 128,
    signed: true,
    boolean: false,
};

impl Machine<'_> {
    /// The integer value of argument `i`.
    fn int_arg(&self, vals: &[(Val, TypeId)], i: usize) -> Result<i128, Stop> {
        match vals.get(i) {
            Some((Val::Int(x), ty)) => Ok(int_value(*x, self.repr(*ty)?)),
            _ => Err(Stop::new("missing or non-integer argument")),
        }
    }

    /// The address argument `i` holds.
    fn ptr_arg(&self, vals: &[(Val, TypeId)], i: usize) -> Result<u64, Stop> {
        match vals.get(i) {
            Some((Val::Int(x), _)) => {
                u64::try_from(*x).map_err(|_| Stop::new("invalid pointer argument"))
            }
            _ => Err(Stop::new("missing or non-pointer argument")),
        }
    }

    /// The address of a synchronisation object argument, which must lie in a live object of
    /// the program (a null or dangling mutex pointer is undefined behaviour).
    fn sync_arg(&self, vals: &[(Val, TypeId)], i: usize) -> Result<u64, Stop> {
        let a = self.ptr_arg(vals, i)?;
        match self.mem.find(a) {
            Some((id, off)) if off < self.mem.object(id).size && self.mem.object(id).live => Ok(a),
            _ => Err(Stop::new(
                "synchronisation object through an invalid pointer",
            )),
        }
    }

    /// The value `v` as a result of `f` (of its return type).
    fn ret(&self, f: FuncId, v: i128) -> Result<Option<Val>, Stop> {
        let Some(sig) = self.p.types.func_sig(self.p.function(f).ty) else {
            return Ok(Some(Val::Int(v as u128)));
        };
        match self.repr(sig.ret)? {
            Repr::Void => Ok(None),
            r => value::convert(&Val::Int(v as u128), SIGNED128, r).map(Some),
        }
    }

    /// Reads `n` bytes at `addr`, recording a read when `record`.
    fn read_mem(&self, addr: u64, n: u64, acc: &mut Acc, record: bool) -> Result<Vec<u8>, Stop> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let (id, off) = self.mem.locate(addr, n)?;
        if record {
            acc.push(id, off, n, false, false);
        }
        Ok(self.mem.read_at(id, off, n))
    }

    /// Writes bytes at `addr`, recording a write when `record`.
    fn write_mem(
        &mut self,
        addr: u64,
        data: &[u8],
        acc: &mut Acc,
        record: bool,
        atomic: bool,
    ) -> Result<(), Stop> {
        if data.is_empty() {
            return Ok(());
        }
        let (id, off) = self.mem.locate(addr, data.len() as u64)?;
        if record {
            acc.push(id, off, data.len() as u64, true, atomic);
        }
        self.mem.write_at(id, off, data)
    }

    /// The length of the C string at `addr` (bytes before the terminating zero).
    fn strlen_at(&self, addr: u64, limit: Option<u64>) -> Result<u64, Stop> {
        let Some((id, off)) = self.mem.find(addr) else {
            return Err(Stop::new("string through an invalid pointer"));
        };
        let o = self.mem.object(id);
        if !o.live || o.opaque {
            return Err(Stop::new("string in a dead or opaque object"));
        }
        let avail = o.size.saturating_sub(off);
        let bytes = self.mem.read_at(id, off, avail);
        let max = limit.unwrap_or(u64::MAX);
        match bytes
            .iter()
            .take(max.min(avail) as usize)
            .position(|b| *b == 0)
        {
            Some(n) => Ok(n as u64),
            None if max <= avail => Ok(max),
            None => Err(Stop::new("unterminated string")),
        }
    }

    /// Reads the NUL-terminated string at `addr`, its terminator included, recording the read.
    ///
    /// Errors: as [`Self::strlen_at`] without a limit.
    fn read_string(&self, addr: u64, acc: &mut Acc) -> Result<Vec<u8>, Stop> {
        let n = self.strlen_at(addr, None)?;
        self.read_mem(addr, n + 1, acc, true)
    }

    /// Allocates a heap block of `size` bytes at the call statement of `acc`.
    fn heap_alloc(&mut self, size: u64, acc: &Acc) -> Result<u64, Stop> {
        if size > MAX_OBJECT {
            return Ok(0); // the allocation fails, as it may
        }
        let id = self.mem.alloc(
            size,
            16,
            Origin::Heap {
                func: acc.func,
                edge: acc.edge,
            },
        )?;
        Ok(self.mem.object(id).base)
    }

    /// The live heap block starting at `addr` (for `free` and `realloc`).
    fn heap_block(&self, addr: u64) -> Result<(super::memory::ObjId, u64), Stop> {
        match self.mem.find(addr) {
            Some((id, 0))
                if self.mem.object(id).live
                    && matches!(self.mem.object(id).origin, Origin::Heap { .. }) =>
            {
                Ok((id, self.mem.object(id).size))
            }
            _ => Err(Stop::new("free of a pointer that is not a live heap block")),
        }
    }

    /// The type an argument pointer points to, before conversions.
    fn pointee_of(&self, e: Option<&Expr>) -> Option<TypeId> {
        let e = crate::ir::visit::strip_casts(e?);
        self.p.types.pointee(e.ty)
    }

    /// The mutex type a lock at `addr` starts with: from glibc's `__kind` field of a
    /// statically initialised `pthread_mutex_t`.
    fn initial_kind(&self, addr: u64, name: &str) -> MutexKind {
        if !name.starts_with("pthread_mutex") || self.sync.locks.contains_key(&addr) {
            return self.sync.kind_of(addr).unwrap_or_default();
        }
        let off = if self.p.types.data_model.pointer_size() == 8 {
            16
        } else {
            12
        };
        match self.mem.locate(addr, 24) {
            Ok((id, o)) => {
                let b = self.mem.read_at(id, o + off, 4);
                MutexKind::of(u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as u128)
            }
            Err(_) => MutexKind::Normal,
        }
    }

    /// Calls function `f`, which has no body, in thread `tid` with arguments `args` (values
    /// `vals`); the call statement is `acc`'s; `result_used`: the statement stores the result.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn call_external(
        &mut self,
        tid: usize,
        f: FuncId,
        args: &[Expr],
        vals: &[(Val, TypeId)],
        result_used: bool,
        acc: &mut Acc,
        out: &mut StepOut,
    ) -> Result<Ext, Stop> {
        let name = self.p.function(f).name.as_str();
        let c11 = name.starts_with("mtx_")
            || name.starts_with("cnd_")
            || name.starts_with("thrd_")
            || name.starts_with("tss_");
        // C11 <threads.h> results: thrd_success 0, thrd_busy 1, thrd_error 2, thrd_timedout 4.
        let status = |e: u128| -> i128 {
            if !c11 {
                e as i128
            } else {
                match e {
                    0 => 0,
                    sync::EBUSY => 1,
                    sync::ETIMEDOUT => 4,
                    _ => 2,
                }
            }
        };
        let role = self.roles.get(f).cloned();
        match role {
            Some(Role::ThreadCreate {
                thread_id,
                entry,
                arg,
            }) => {
                let idp = self.ptr_arg(vals, thread_id)?;
                let ent = self.func_at(&vals.get(entry).ok_or_else(|| Stop::new("arg"))?.0)?;
                if self.p.function(ent).body.is_none() {
                    return Err(Stop::new("thread entry without body"));
                }
                let (a, aty) = vals
                    .get(arg)
                    .cloned()
                    .ok_or_else(|| Stop::new("missing thread argument"))?;
                let child = self.spawn(ent)?;
                self.push_frame(child, ent, vec![(a, aty)], FrameKind::Plain)?;
                let size = self.pointee_size(
                    args.get(thread_id),
                    16,
                    self.p.types.data_model.pointer_size(),
                );
                let bytes =
                    value::encode(&Val::Int(child as u128 + 1), Repr::Ptr { bits: 128 }, size)?;
                self.write_mem(idp, &bytes, acc, false, false)?;
                out.events.push(Event::Create(child));
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            Some(Role::ThreadJoin { thread_id }) => {
                let t = self.int_arg(vals, thread_id)? - 1;
                if t < 0 || t as usize >= self.threads.len() || t as usize == tid {
                    return Err(Stop::new("join of an invalid thread"));
                }
                let t = t as usize;
                if self.threads[t].joined {
                    return Err(Stop::new("thread joined twice"));
                }
                if self.threads[t].status != Status::Done {
                    return Ok(Ext::Block);
                }
                if name != "__goblint_assume_join" && vals.len() > thread_id + 1 {
                    let rp = self.ptr_arg(vals, thread_id + 1)?;
                    if rp != 0 {
                        let size = self.pointee_size(
                            args.get(thread_id + 1),
                            16,
                            self.p.types.data_model.pointer_size(),
                        );
                        let rv = self.threads[t].retval;
                        let bytes = value::encode(&Val::Int(rv), Repr::Ptr { bits: 128 }, size)?;
                        self.write_mem(rp, &bytes, acc, false, false)?;
                    }
                }
                self.threads[t].joined = true;
                out.events.push(Event::Join(t));
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            Some(Role::ThreadExit) => {
                let v = match vals.first() {
                    Some((Val::Int(x), _)) => *x,
                    _ => 0,
                };
                Ok(Ext::ExitThread(v))
            }
            Some(Role::Lock {
                lock, mode, kind, ..
            }) => {
                let addr = self.sync_arg(vals, lock)?;
                let k0 = self.initial_kind(addr, name);
                let write = mode == LockMode::Write;
                let timed = name.contains("timed") || name.contains("clock");
                match self.sync.lock(addr, tid, write, kind == LockKind::Try, k0) {
                    LockOutcome::Done => {
                        out.events.push(Event::Acquire(SyncKey::Lock(addr)));
                        Ok(Ext::Return(self.ret(f, 0)?))
                    }
                    LockOutcome::Error(e) => {
                        let e = if timed && e == sync::EBUSY {
                            sync::ETIMEDOUT
                        } else {
                            e
                        };
                        Ok(Ext::Return(self.ret(f, status(e))?))
                    }
                    LockOutcome::Wait => Ok(Ext::Block),
                    LockOutcome::Undefined => Err(Stop::new("undefined lock operation")),
                }
            }
            Some(Role::Unlock { lock }) => {
                let addr = self.sync_arg(vals, lock)?;
                let k0 = self.initial_kind(addr, name);
                match self.sync.unlock(addr, tid, k0) {
                    LockOutcome::Done => {
                        out.events.push(Event::Release(SyncKey::Lock(addr)));
                        Ok(Ext::Return(self.ret(f, 0)?))
                    }
                    LockOutcome::Error(e) => Ok(Ext::Return(self.ret(f, status(e))?)),
                    _ => Err(Stop::new("unlock of a mutex the thread does not hold")),
                }
            }
            Some(Role::CondWait { cond, mutex }) => {
                let c = self.sync_arg(vals, cond)?;
                let m = self.sync_arg(vals, mutex)?;
                let held = self
                    .sync
                    .locks
                    .get(&m)
                    .filter(|l| l.writer == Some(tid))
                    .map(|l| l.depth);
                match held {
                    Some(1) => {}
                    Some(_) => return Err(Stop::new("condition wait on a recursively held mutex")),
                    None => {
                        let k = self.sync.kind_of(m).unwrap_or_default();
                        if k == MutexKind::Normal {
                            return Err(Stop::new("condition wait without the mutex"));
                        }
                        return Ok(Ext::Return(self.ret(f, status(sync::EPERM))?));
                    }
                }
                self.sync.unlock(m, tid, MutexKind::Normal);
                out.events.push(Event::Release(SyncKey::Lock(m)));
                let seq = self.sync.wait_seq;
                self.sync.wait_seq += 1;
                self.threads[tid].status = Status::WaitCond {
                    cond: c,
                    mutex: m,
                    seq,
                };
                Ok(Ext::Wait)
            }
            Some(Role::CondSignal { cond }) => {
                let c = self.sync_arg(vals, cond)?;
                let all = name.contains("broadcast");
                let mut waiting: Vec<(u64, usize, u64)> = self
                    .threads
                    .iter()
                    .enumerate()
                    .filter_map(|(i, t)| match t.status {
                        Status::WaitCond { cond, mutex, seq } if cond == c => Some((seq, i, mutex)),
                        _ => None,
                    })
                    .collect();
                waiting.sort();
                out.events.push(Event::Release(SyncKey::Cond(c)));
                for (_, t, m) in waiting.into_iter().take(if all { usize::MAX } else { 1 }) {
                    self.threads[t].status = Status::Resume {
                        ret: 0,
                        relock: Some(m),
                        from: Some(SyncKey::Cond(c)),
                    };
                }
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            Some(Role::BarrierWait { barrier }) => {
                let b = self.sync_arg(vals, barrier)?;
                let Some(st) = self.sync.barriers.get_mut(&b) else {
                    return Err(Stop::new("wait on an uninitialised barrier"));
                };
                st.waiting += 1;
                out.events.push(Event::Release(SyncKey::Barrier(b)));
                if st.waiting >= st.count {
                    st.waiting = 0;
                    for t in self.threads.iter_mut() {
                        if t.status == (Status::WaitBarrier { barrier: b }) {
                            t.status = Status::Resume {
                                ret: 0,
                                relock: None,
                                from: Some(SyncKey::Barrier(b)),
                            };
                        }
                    }
                    out.events.push(Event::Acquire(SyncKey::Barrier(b)));
                    Ok(Ext::Return(self.ret(f, BARRIER_SERIAL)?))
                } else {
                    self.threads[tid].status = Status::WaitBarrier { barrier: b };
                    Ok(Ext::Wait)
                }
            }
            Some(Role::Once { control, routine }) => {
                let ctl = self.sync_arg(vals, control)?;
                match self.sync.onces.get(&ctl) {
                    Some(sync::Once::Done) => {
                        out.events.push(Event::Acquire(SyncKey::Once(ctl)));
                        Ok(Ext::Return(self.ret(f, 0)?))
                    }
                    Some(sync::Once::Running(_)) => Ok(Ext::Block),
                    None => {
                        let r =
                            self.func_at(&vals.get(routine).ok_or_else(|| Stop::new("arg"))?.0)?;
                        self.sync.onces.insert(ctl, sync::Once::Running(tid));
                        self.push_frame(tid, r, Vec::new(), FrameKind::Once(ctl))?;
                        Ok(Ext::Pushed)
                    }
                }
            }
            Some(Role::SemWait { sem, kind }) => {
                let s = self.sync_arg(vals, sem)?;
                let Some(v) = self.sync.sems.get_mut(&s) else {
                    return Err(Stop::new("wait on an uninitialised semaphore"));
                };
                if *v > 0 {
                    *v -= 1;
                    out.events.push(Event::Acquire(SyncKey::Sem(s)));
                    Ok(Ext::Return(self.ret(f, 0)?))
                } else if kind == LockKind::Try {
                    Ok(Ext::Return(self.ret(f, -1)?))
                } else {
                    Ok(Ext::Block)
                }
            }
            Some(Role::SemPost { sem }) => {
                let s = self.sync_arg(vals, sem)?;
                let Some(v) = self.sync.sems.get_mut(&s) else {
                    return Err(Stop::new("post on an uninitialised semaphore"));
                };
                *v += 1;
                out.events.push(Event::Release(SyncKey::Sem(s)));
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            Some(Role::AtomicBegin) => {
                if !self.enter_section(tid) {
                    return Ok(Ext::Block);
                }
                out.events.push(Event::Acquire(SyncKey::Section));
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            Some(Role::AtomicEnd) => {
                if !self.leave_section(tid) {
                    return Err(Stop::new("end of an atomic section never begun"));
                }
                out.events.push(Event::Release(SyncKey::Section));
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            Some(Role::MutexAttrSettype { attr, kind }) => {
                let a = self.sync_arg(vals, attr)?;
                let k = self.int_arg(vals, kind)?;
                self.sync.attrs.insert(a, MutexKind::of(k as u128));
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            Some(Role::Nondet) => {
                let v = self.next_nondet(tid);
                let sig = self.p.types.func_sig(self.p.function(f).ty);
                match sig.map(|s| self.repr(s.ret)) {
                    Some(Ok(Repr::Ptr { .. })) if v != 0 => {
                        Err(Stop::new("nondeterministic non-null pointer"))
                    }
                    Some(Ok(Repr::Aggregate { .. } | Repr::Void)) => {
                        Err(Stop::new("nondeterministic value of an aggregate type"))
                    }
                    _ => Ok(Ext::Return(self.ret(f, v)?)),
                }
            }
            Some(Role::Assume { cond }) => {
                let c = match vals.get(cond) {
                    Some((v, _)) => value::truth(v)?,
                    None => false,
                };
                if c {
                    Ok(Ext::Return(self.ret(f, 0)?))
                } else {
                    Err(Stop::new("assumption does not hold"))
                }
            }
            Some(r @ (Role::Noreturn | Role::Library(_))) if r.ends_path() => {
                if name == "__builtin_unreachable" {
                    return Err(Stop::new("__builtin_unreachable reached"));
                }
                Ok(Ext::ExitProgram)
            }
            Some(Role::NonlocalJump { .. }) => Err(Stop::new("setjmp/longjmp")),
            Some(Role::Atomic { .. }) => self.atomic_builtin(f, name, args, vals, acc, out),
            _ => self.libc(tid, f, name, args, vals, result_used, acc),
        }
    }

    /// gcc's `__atomic_*` and `__sync_*` builtins and C11's `atomic_*` functions.
    fn atomic_builtin(
        &mut self,
        f: FuncId,
        name: &str,
        args: &[Expr],
        vals: &[(Val, TypeId)],
        acc: &mut Acc,
        out: &mut StepOut,
    ) -> Result<Ext, Stop> {
        if name == "atomic_is_lock_free" || name.ends_with("always_lock_free") {
            return Ok(Ext::Return(self.ret(f, 1)?));
        }
        let p = self.ptr_arg(vals, 0)?;
        let elem = self
            .pointee_of(args.first())
            .ok_or_else(|| Stop::new("atomic operation on a non-pointer"))?;
        let flag = name.contains("test_and_set") || name.contains("clear");
        let size = if flag {
            1
        } else {
            self.p
                .types
                .size_of(elem)
                .filter(|s| matches!(s, 1 | 2 | 4 | 8 | 16))
                .ok_or_else(|| Stop::new("atomic operation on an object of odd size"))?
        };
        let bits = (size * 8) as u32;
        let (id, off) = self.mem.locate(p, size)?;
        let old = match value::decode(&self.mem.read_at(id, off, size), Repr::Ptr { bits: 128 }) {
            Val::Int(x) => x,
            _ => 0,
        };
        let load_only = name.contains("load");
        let store_only = name.contains("store") || name.contains("clear");
        let key = SyncKey::Atomic(p);
        out.events.push(Event::Acquire(key));
        out.events.push(Event::Release(key));
        // The value operand of `__atomic_*` builtins without `_n` comes through a pointer.
        let generic = name.starts_with("__atomic_") && !name.ends_with("_n");
        let operand = |m: &Machine<'_>, i: usize, acc: &mut Acc| -> Result<u128, Stop> {
            if generic {
                let q = m.ptr_arg(vals, i)?;
                match value::decode(&m.read_mem(q, size, acc, false)?, Repr::Ptr { bits: 128 }) {
                    Val::Int(x) => Ok(x),
                    _ => Ok(0),
                }
            } else {
                match vals.get(i) {
                    Some((Val::Int(x), _)) => Ok(trunc(*x, bits)),
                    _ => Err(Stop::new("atomic operand")),
                }
            }
        };
        let enc = |v: u128| value::encode(&Val::Int(v), Repr::Ptr { bits: 128 }, size);
        let result_old = |m: &Machine<'_>, v: u128| -> Result<Option<Val>, Stop> {
            let r = value::convert(
                &Val::Int(v),
                Repr::Int {
                    bits,
                    signed: false,
                    boolean: false,
                },
                Repr::Int {
                    bits: 128,
                    signed: false,
                    boolean: false,
                },
            )?;
            match (r, m.p.types.func_sig(m.p.function(f).ty).map(|s| s.ret)) {
                (Val::Int(x), Some(rt)) => match m.repr(rt)? {
                    Repr::Void => Ok(None),
                    r => value::convert(
                        &Val::Int(x),
                        Repr::Int {
                            bits,
                            signed: false,
                            boolean: false,
                        },
                        r,
                    )
                    .map(Some),
                },
                (r, _) => Ok(Some(r)),
            }
        };
        if name.contains("compare_exchange") || name.contains("compare_and_swap") {
            let sync_style = name.starts_with("__sync_");
            let (expected, desired) = if sync_style {
                (operand(self, 1, acc)?, operand(self, 2, acc)?)
            } else {
                let ep = self.ptr_arg(vals, 1)?;
                let e = match value::decode(
                    &self.read_mem(ep, size, acc, false)?,
                    Repr::Ptr { bits: 128 },
                ) {
                    Val::Int(x) => x,
                    _ => 0,
                };
                (e, operand(self, 2, acc)?)
            };
            acc.push(id, off, size, false, true);
            let ok = old == expected;
            if ok {
                acc.push(id, off, size, true, true);
                self.mem.write_at(id, off, &enc(desired)?)?;
            } else if !sync_style {
                let ep = self.ptr_arg(vals, 1)?;
                self.write_mem(ep, &enc(old)?, acc, false, false)?;
            }
            if name == "__sync_val_compare_and_swap" {
                return Ok(Ext::Return(result_old(self, old)?));
            }
            return Ok(Ext::Return(self.ret(f, i128::from(ok))?));
        }
        if load_only {
            acc.push(id, off, size, false, true);
            if generic {
                let rp = self.ptr_arg(vals, 1)?;
                self.write_mem(rp, &enc(old)?, acc, false, false)?;
                return Ok(Ext::Return(self.ret(f, 0)?));
            }
            return Ok(Ext::Return(result_old(self, old)?));
        }
        if store_only || name == "__sync_lock_release" || name == "atomic_init" {
            let v = if name.contains("clear") || name == "__sync_lock_release" {
                0
            } else {
                operand(self, 1, acc)?
            };
            acc.push(id, off, size, true, true);
            self.mem.write_at(id, off, &enc(v)?)?;
            return Ok(Ext::Return(self.ret(f, 0)?));
        }
        acc.push(id, off, size, false, true);
        acc.push(id, off, size, true, true);
        if name.contains("test_and_set") && !name.starts_with("__sync_") {
            self.mem.write_at(id, off, &enc(1)?)?;
            return Ok(Ext::Return(self.ret(f, i128::from(old != 0))?));
        }
        if name.contains("exchange") || name == "__sync_lock_test_and_set" {
            let v = operand(self, 1, acc)?;
            self.mem.write_at(id, off, &enc(v)?)?;
            if generic {
                let rp = self.ptr_arg(vals, 2)?;
                self.write_mem(rp, &enc(old)?, acc, false, false)?;
                return Ok(Ext::Return(self.ret(f, 0)?));
            }
            return Ok(Ext::Return(result_old(self, old)?));
        }
        // Read-modify-write: which operation, and whether the old or the new value returns.
        let body = name
            .trim_start_matches("__atomic_")
            .trim_start_matches("__sync_")
            .trim_start_matches("atomic_")
            .trim_end_matches("_explicit");
        let (op, returns_old) = if let Some(op) = body.strip_prefix("fetch_and_") {
            (op, true)
        } else if let Some(op) = body.strip_prefix("fetch_") {
            (op, true)
        } else if let Some(op) = body.strip_suffix("_and_fetch") {
            (op, false)
        } else if let Some(op) = body.strip_suffix("_fetch") {
            (op, false)
        } else {
            return Err(Stop::new("unknown atomic builtin"));
        };
        let v = operand(self, 1, acc)?;
        let new = trunc(
            match op {
                "add" => old.wrapping_add(v),
                "sub" => old.wrapping_sub(v),
                "and" => old & v,
                "or" => old | v,
                "xor" => old ^ v,
                "nand" => !(old & v),
                _ => return Err(Stop::new("unknown atomic operation")),
            },
            bits,
        );
        self.mem.write_at(id, off, &enc(new)?)?;
        Ok(Ext::Return(result_old(
            self,
            if returns_old { old } else { new },
        )?))
    }

    /// The C library functions the model knows by name.
    #[allow(clippy::too_many_arguments)]
    fn libc(
        &mut self,
        tid: usize,
        f: FuncId,
        name: &str,
        args: &[Expr],
        vals: &[(Val, TypeId)],
        result_used: bool,
        acc: &mut Acc,
    ) -> Result<Ext, Stop> {
        let name = name
            .strip_prefix("__builtin_")
            .filter(|n| !n.starts_with("__"))
            .unwrap_or(name);
        let name = name
            .strip_prefix("__builtin___")
            .or_else(|| name.strip_prefix("__"))
            .and_then(|n| n.strip_suffix("_chk"))
            .unwrap_or(name);
        let ok = |m: &Machine<'_>| m.ret(f, 0).map(Ext::Return);
        match name {
            // Each thread's own `errno`, zero at its start.
            "__errno_location" => {
                let a = self.errno_of(tid)?;
                Ok(Ext::Return(self.ret(f, a as i128)?))
            }
            // No file exists (the working directory is empty): opening or examining a path
            // fails with ENOENT; the standard streams are not terminals (ENOTTY).
            "open" | "open64" | "__open" | "__open64" | "__open_2" | "__open64_2" | "openat"
            | "openat64" | "stat" | "stat64" | "lstat" | "lstat64" | "__xstat" | "__xstat64"
            | "__lxstat" | "__lxstat64" | "access" | "opendir" | "fopen" | "fopen64" => {
                self.set_errno(tid, ENOENT)?;
                // A null `FILE *` or `DIR *`, -1 from the others.
                let r = if matches!(name, "fopen" | "fopen64" | "opendir") {
                    0
                } else {
                    -1
                };
                Ok(Ext::Return(self.ret(f, r)?))
            }
            // `assert` called as a function (no <assert.h> macro): a failed one ends the run.
            "assert" => {
                if self.int_arg(vals, 0)? == 0 {
                    return Err(Stop::new("failed assertion"));
                }
                Ok(Ext::Return(None))
            }
            "isatty" => {
                self.set_errno(tid, ENOTTY)?;
                Ok(Ext::Return(self.ret(f, 0)?))
            }
            // No terminal exists in the environment: terminal attributes cannot be read or set.
            "tcgetattr" | "tcsetattr" => {
                self.set_errno(tid, ENOTTY)?;
                Ok(Ext::Return(self.ret(f, -1)?))
            }
            // Exit handlers are registered; an execution looks for witnesses before its exit,
            // so they never need to run.
            "atexit" | "at_quick_exit" | "on_exit" => ok(self),
            // Stream buffering and the system log change nothing the program reads.
            "setbuf" | "setvbuf" | "setbuffer" | "setlinebuf" | "openlog" | "closelog" => ok(self),
            "syslog" | "vsyslog" => {
                self.format_reads(vals, 1, name == "vsyslog", acc)?;
                Ok(Ext::Return(None))
            }
            // No message catalogue is installed: gettext returns its message id itself, and
            // setting a text domain (or its directory, or its codeset) returns what was set.
            "gettext" | "textdomain" => self.same_pointer(f, vals, 0),
            "dgettext"
            | "dcgettext"
            | "dngettext"
            | "bindtextdomain"
            | "bind_textdomain_codeset" => self.same_pointer(f, vals, 1),
            "strerror" => {
                let text: &[u8] = match self.int_arg(vals, 0)? {
                    0 => b"Success\0",
                    2 => b"No such file or directory\0",
                    25 => b"Inappropriate ioctl for device\0",
                    _ => {
                        return Err(Stop::new(
                            "strerror of an error the environment never gives",
                        ));
                    }
                };
                let a = self.heap_alloc(text.len() as u64, acc)?;
                if a == 0 {
                    return Err(Stop::new("strerror buffer"));
                }
                self.write_mem(a, text, acc, false, false)?;
                Ok(Ext::Return(self.ret(f, i128::from(a))?))
            }
            // A machine with [`ONLINE_CPUS`] processors and 4 KiB pages; other names stop.
            "sysconf" => match self.int_arg(vals, 0)? {
                SC_NPROCESSORS_CONF | SC_NPROCESSORS_ONLN => {
                    Ok(Ext::Return(self.ret(f, ONLINE_CPUS)?))
                }
                SC_PAGESIZE => Ok(Ext::Return(self.ret(f, 4096)?)),
                _ => Err(Stop::new("sysconf of an unmodelled name")),
            },
            "get_nprocs" | "get_nprocs_conf" => Ok(Ext::Return(self.ret(f, ONLINE_CPUS)?)),
            // Broken-down time in the environment's time zone, UTC (no `TZ`): `gmtime` and
            // `localtime` fill a new `struct tm` (glibc's is one static object; a new one per
            // call shares less, so nothing is witnessed through it), the `_r` forms the
            // caller's.
            "gmtime" | "localtime" | "gmtime_r" | "localtime_r" => {
                let reentrant = name.ends_with("_r");
                let tsize = self.pointee_size(args.first(), 8, 8);
                let t = self.ptr_arg(vals, 0)?;
                let raw = self.read_mem(t, tsize, acc, true)?;
                let secs = value::sext(
                    raw.iter()
                        .rev()
                        .fold(0u128, |a, b| (a << 8) | u128::from(*b)),
                    8 * tsize as u32,
                );
                let tm = self.broken_down_time(secs)?;
                let at = if reentrant {
                    self.ptr_arg(vals, 1)?
                } else {
                    let a = self.heap_alloc(tm.len() as u64, acc)?;
                    if a == 0 {
                        return Err(Stop::new("broken-down time buffer"));
                    }
                    a
                };
                self.write_mem(at, &tm, acc, reentrant, false)?;
                Ok(Ext::Return(self.ret(f, i128::from(at))?))
            }
            // Time as text in the C locale (C11 §7.27.3.5), for the conversions below;
            // others stop. The result counts the bytes written without the NUL, 0 when the
            // text does not fit.
            "strftime" => {
                let buf = self.ptr_arg(vals, 0)?;
                let max = self.int_arg(vals, 1)?.max(0) as u64;
                let fmt = self.ptr_arg(vals, 2)?;
                let fmt = self.read_string(fmt, acc)?;
                let tm_at = self.ptr_arg(vals, 3)?;
                let raw = self.read_mem(tm_at, 36, acc, true)?;
                let mut tm = [0i64; 9];
                for (i, v) in tm.iter_mut().enumerate() {
                    let b: [u8; 4] = raw[4 * i..4 * i + 4].try_into().unwrap_or([0; 4]);
                    *v = i64::from(i32::from_le_bytes(b));
                }
                let mut text = strftime_c(&fmt[..fmt.len() - 1], &tm)
                    .ok_or_else(|| Stop::new("strftime conversion not modelled"))?;
                if text.len() as u64 >= max {
                    return Ok(Ext::Return(self.ret(f, 0)?));
                }
                let len = text.len();
                text.push(0);
                self.write_mem(buf, &text, acc, true, false)?;
                Ok(Ext::Return(self.ret(f, len as i128)?))
            }
            "difftime" => {
                let (a, b) = (self.int_arg(vals, 0)?, self.int_arg(vals, 1)?);
                Ok(Ext::Return(Some(Val::Float((a - b) as f64))))
            }
            // PR_SET_NAME (15): names the calling thread, which nothing the program reads
            // shows (PR_GET_NAME and the other options are not modelled).
            "prctl" if self.int_arg(vals, 0)? == 15 => {
                let s = self.ptr_arg(vals, 1)?;
                let n = self.strlen_at(s, Some(16))?;
                self.read_mem(s, (n + 1).min(16), acc, true)?;
                ok(self)
            }
            // Formatted output into a buffer: glibc's text, cut to the size (snprintf).
            // Formatted output into a new block of exactly the text's size (GNU asprintf).
            "asprintf" | "vasprintf" => {
                let mut fargs = self.format_args(vals, 1, name == "vasprintf")?;
                let s = self.ptr_arg(vals, 1)?;
                let mut text = self.format(s, &mut fargs, acc, true)?;
                let len = text.len();
                text.push(0);
                let a = self.heap_alloc(text.len() as u64, acc)?;
                if a == 0 {
                    return Ok(Ext::Return(self.ret(f, -1)?));
                }
                self.write_mem(a, &text, acc, false, false)?;
                let strp = self.ptr_arg(vals, 0)?;
                let psize = self.p.types.data_model.pointer_size();
                let bytes =
                    value::encode(&Val::Int(u128::from(a)), Repr::Ptr { bits: 128 }, psize)?;
                self.write_mem(strp, &bytes, acc, true, false)?;
                Ok(Ext::Return(self.ret(f, len as i128)?))
            }
            "snprintf" | "sprintf" | "vsnprintf" | "vsprintf" => {
                let (fmt, limit) = if name.ends_with("snprintf") {
                    (2, Some(self.int_arg(vals, 1)?.max(0) as u64))
                } else {
                    (1, None)
                };
                let mut fargs = self.format_args(vals, fmt, name.starts_with('v'))?;
                let s = self.ptr_arg(vals, fmt)?;
                let text = self.format(s, &mut fargs, acc, true)?;
                let buf = self.ptr_arg(vals, 0)?;
                let mut put = text.clone();
                if let Some(l) = limit {
                    put.truncate(l.saturating_sub(1) as usize);
                }
                if limit != Some(0) {
                    put.push(0);
                    self.write_mem(buf, &put, acc, true, false)?;
                }
                Ok(Ext::Return(self.ret(f, text.len() as i128)?))
            }
            // The environment of a concrete execution (module docs): no variables set.
            "getenv" | "secure_getenv" => Ok(Ext::Return(self.ret(f, 0)?)),
            // No options: when no argument from `argv[optind]` on is an option (a null
            // pointer ends them; operands do not start with '-', or are "-" alone), getopt
            // returns -1 and changes nothing (POSIX getopt stops at the first operand; GNU
            // getopt, which permutes, finds no option after it either).
            "getopt" | "getopt_long" | "getopt_long_only" => {
                let argv = self.ptr_arg(vals, 1)?;
                let optind = self.extern_int("optind").unwrap_or(1);
                let psize = self.p.types.data_model.pointer_size();
                let mut at = u64::try_from(optind)
                    .ok()
                    .and_then(|i| i.checked_mul(psize))
                    .and_then(|o| argv.checked_add(o))
                    .ok_or_else(|| Stop::new("getopt with an invalid optind"))?;
                loop {
                    let arg = self.read_pointer(at)?;
                    if arg == 0 {
                        return Ok(Ext::Return(self.ret(f, -1)?));
                    }
                    // An option: '-' and at least one more character.
                    if self.strlen_at(arg, Some(2))? == 2
                        && self.read_mem(arg, 1, acc, false)? == b"-"
                    {
                        return Err(Stop::new("getopt with options"));
                    }
                    at += psize;
                }
            }
            // Signal sets (glibc: a bit per signal, `signo - 1`; sigfillset leaves out the two
            // signals glibc keeps for itself, 32 and 33).
            "sigemptyset" | "sigfillset" => {
                let set = self.ptr_arg(vals, 0)?;
                let n = self.pointee_size(args.first(), 4096, SIGSET_BYTES);
                let mut bytes = vec![if name == "sigfillset" { 0xff } else { 0 }; n as usize];
                if name == "sigfillset" {
                    for sig in [32u64, 33] {
                        if let Some(b) = bytes.get_mut(((sig - 1) / 8) as usize) {
                            *b &= !(1 << ((sig - 1) % 8));
                        }
                    }
                }
                self.write_mem(set, &bytes, acc, true, false)?;
                ok(self)
            }
            "sigaddset" | "sigdelset" => {
                let set = self.ptr_arg(vals, 0)?;
                let sig = self.int_arg(vals, 1)?;
                let n = self.pointee_size(args.first(), 4096, SIGSET_BYTES);
                if sig < 1 || (sig - 1) as u64 >= n * 8 {
                    return Ok(Ext::Return(self.ret(f, -1)?));
                }
                let at = set + (sig as u64 - 1) / 8;
                let mut b = self.read_mem(at, 1, acc, true)?;
                let bit = 1u8 << ((sig as u64 - 1) % 8);
                if name == "sigaddset" {
                    b[0] |= bit;
                } else {
                    b[0] &= !bit;
                }
                self.write_mem(at, &b, acc, true, false)?;
                ok(self)
            }
            // The environment delivers no signal: installing a handler or a mask changes
            // nothing the execution sees; the previous action and mask were the defaults
            // (`SIG_DFL`, empty), written where the caller asks for them.
            "sigaction" | "sigprocmask" | "pthread_sigmask" => {
                let old = self.ptr_arg(vals, 2)?;
                if old != 0 {
                    let n = self.pointee_size(args.get(2), 4096, 0);
                    if n == 0 {
                        return Err(Stop::new("previous signal action of unknown size"));
                    }
                    self.write_mem(old, &vec![0; n as usize], acc, true, false)?;
                }
                ok(self)
            }
            "signal" | "sysv_signal" | "bsd_signal" => ok(self),
            // The clock stands still at [`CLOCK_START`] (successive readings may be equal, as
            // with a coarse clock).
            "clock_gettime" | "gettimeofday" => {
                let k = if name == "clock_gettime" { 1 } else { 0 };
                let out = self.ptr_arg(vals, k)?;
                let half = self.pointee_size(args.get(k), 4096, 0) / 2;
                if out == 0 || half == 0 {
                    return Err(Stop::new("clock reading of unknown layout"));
                }
                let mut bytes = value::encode(&Val::Int(CLOCK_START as u128), SIGNED128, half)?;
                bytes.extend(std::iter::repeat_n(0, half as usize));
                self.write_mem(out, &bytes, acc, true, false)?;
                ok(self)
            }
            "malloc" | "valloc" | "pvalloc" | "alloca" => {
                let n = self.int_arg(vals, 0)? as u64;
                let a = self.heap_alloc(n, acc)?;
                Ok(Ext::Return(self.ret(f, a as i128)?))
            }
            "calloc" => {
                let n = self.int_arg(vals, 0)? as u64;
                let s = self.int_arg(vals, 1)? as u64;
                let a = match n.checked_mul(s) {
                    Some(t) => self.heap_alloc(t, acc)?,
                    None => 0,
                };
                Ok(Ext::Return(self.ret(f, a as i128)?))
            }
            "aligned_alloc" | "memalign" => {
                let n = self.int_arg(vals, 1)? as u64;
                let a = self.heap_alloc(n, acc)?;
                Ok(Ext::Return(self.ret(f, a as i128)?))
            }
            "realloc" => {
                let old = self.ptr_arg(vals, 0)?;
                let n = self.int_arg(vals, 1)? as u64;
                if n == 0 {
                    return Err(Stop::new("realloc to size 0"));
                }
                if old == 0 {
                    let a = self.heap_alloc(n, acc)?;
                    return Ok(Ext::Return(self.ret(f, a as i128)?));
                }
                let (id, size) = self.heap_block(old)?;
                let a = self.heap_alloc(n, acc)?;
                if a == 0 {
                    return Ok(Ext::Return(self.ret(f, 0)?));
                }
                let data = self.mem.read_at(id, 0, size.min(n));
                self.write_mem(a, &data, acc, false, false)?;
                self.mem.kill(id);
                Ok(Ext::Return(self.ret(f, a as i128)?))
            }
            "free" | "cfree" => {
                let p = self.ptr_arg(vals, 0)?;
                if p != 0 {
                    let (id, _) = self.heap_block(p)?;
                    self.mem.kill(id);
                }
                ok(self)
            }
            "memset" => {
                let p = self.ptr_arg(vals, 0)?;
                let c = self.int_arg(vals, 1)? as u8;
                let n = self.int_arg(vals, 2)? as u64;
                if n > MAX_OBJECT {
                    return Err(Stop::new("memset out of bounds"));
                }
                self.write_mem(p, &vec![c; n as usize], acc, true, false)?;
                Ok(Ext::Return(self.ret(f, p as i128)?))
            }
            "bzero" | "explicit_bzero" => {
                let p = self.ptr_arg(vals, 0)?;
                let n = self.int_arg(vals, 1)? as u64;
                if n > MAX_OBJECT {
                    return Err(Stop::new("bzero out of bounds"));
                }
                self.write_mem(p, &vec![0; n as usize], acc, true, false)?;
                ok(self)
            }
            "memcpy" | "memmove" | "mempcpy" => {
                let d = self.ptr_arg(vals, 0)?;
                let s = self.ptr_arg(vals, 1)?;
                let n = self.int_arg(vals, 2)? as u64;
                if n > MAX_OBJECT {
                    return Err(Stop::new("copy out of bounds"));
                }
                let data = self.read_mem(s, n, acc, true)?;
                self.write_mem(d, &data, acc, true, false)?;
                let r = if name == "mempcpy" { d + n } else { d };
                Ok(Ext::Return(self.ret(f, r as i128)?))
            }
            "strcpy" | "stpcpy" => {
                let d = self.ptr_arg(vals, 0)?;
                let s = self.ptr_arg(vals, 1)?;
                let data = self.read_string(s, acc)?;
                self.write_mem(d, &data, acc, true, false)?;
                let r = if name == "stpcpy" {
                    d + data.len() as u64 - 1
                } else {
                    d
                };
                Ok(Ext::Return(self.ret(f, r as i128)?))
            }
            "strncpy" => {
                let d = self.ptr_arg(vals, 0)?;
                let s = self.ptr_arg(vals, 1)?;
                let n = self.int_arg(vals, 2)? as u64;
                if n > MAX_OBJECT {
                    return Err(Stop::new("strncpy out of bounds"));
                }
                let l = self.strlen_at(s, Some(n))?;
                let mut data = self.read_mem(s, (l + 1).min(n), acc, true)?;
                data.resize(n as usize, 0);
                self.write_mem(d, &data, acc, true, false)?;
                Ok(Ext::Return(self.ret(f, d as i128)?))
            }
            "strcat" | "strncat" => {
                let d = self.ptr_arg(vals, 0)?;
                let s = self.ptr_arg(vals, 1)?;
                let limit = if name == "strncat" {
                    Some(self.int_arg(vals, 2)? as u64)
                } else {
                    None
                };
                let dl = self.strlen_at(d, None)?;
                self.read_mem(d, dl + 1, acc, true)?;
                let sl = self.strlen_at(s, limit)?;
                let mut data = self.read_mem(s, sl, acc, true)?;
                data.push(0);
                self.write_mem(d + dl, &data, acc, true, false)?;
                Ok(Ext::Return(self.ret(f, d as i128)?))
            }
            "strlen" | "strnlen" => {
                let s = self.ptr_arg(vals, 0)?;
                let limit = if name == "strnlen" {
                    Some(self.int_arg(vals, 1)? as u64)
                } else {
                    None
                };
                let n = self.strlen_at(s, limit)?;
                let touched = if limit.is_some_and(|l| n >= l) {
                    n
                } else {
                    n + 1
                };
                self.read_mem(s, touched, acc, true)?;
                Ok(Ext::Return(self.ret(f, n as i128)?))
            }
            "strcmp" | "strncmp" | "memcmp" => {
                let a = self.ptr_arg(vals, 0)?;
                let b = self.ptr_arg(vals, 1)?;
                let (x, y) = if name == "memcmp" {
                    let n = self.int_arg(vals, 2)? as u64;
                    (
                        self.read_mem(a, n, acc, true)?,
                        self.read_mem(b, n, acc, true)?,
                    )
                } else {
                    let limit = if name == "strncmp" {
                        Some(self.int_arg(vals, 2)? as u64)
                    } else {
                        None
                    };
                    let la = self.strlen_at(a, limit)?;
                    let lb = self.strlen_at(b, limit)?;
                    let full = |l: u64| {
                        if limit.is_some_and(|m| l >= m) {
                            l
                        } else {
                            l + 1
                        }
                    };
                    (
                        self.read_mem(a, full(la), acc, true)?,
                        self.read_mem(b, full(lb), acc, true)?,
                    )
                };
                let r = match x.cmp(&y) {
                    std::cmp::Ordering::Less => -1,
                    std::cmp::Ordering::Equal => 0,
                    std::cmp::Ordering::Greater => 1,
                };
                Ok(Ext::Return(self.ret(f, r)?))
            }
            "strchr" | "strrchr" => {
                let s = self.ptr_arg(vals, 0)?;
                let c = self.int_arg(vals, 1)? as u8;
                let data = self.read_string(s, acc)?;
                let pos = if name == "strchr" {
                    data.iter().position(|b| *b == c)
                } else {
                    data.iter().rposition(|b| *b == c)
                };
                Ok(Ext::Return(
                    self.ret(f, pos.map_or(0, |i| (s + i as u64) as i128))?,
                ))
            }
            "strdup" => {
                let s = self.ptr_arg(vals, 0)?;
                let data = self.read_string(s, acc)?;
                let a = self.heap_alloc(data.len() as u64, acc)?;
                if a != 0 {
                    self.write_mem(a, &data, acc, false, false)?;
                }
                Ok(Ext::Return(self.ret(f, a as i128)?))
            }
            // String to integer (C11 §7.22.1.2, §7.22.1.4): exactly as the C library
            // converts; `ato*` of a value out of range is undefined behaviour.
            "atoi"
            | "atol"
            | "atoll"
            | "strtol"
            | "strtoul"
            | "strtoll"
            | "strtoull"
            | "strtoq"
            | "strtouq"
            | "strtoimax"
            | "strtoumax"
            | "__isoc23_strtol"
            | "__isoc23_strtoul"
            | "__isoc23_strtoll"
            | "__isoc23_strtoull"
            | "__strtol_internal"
            | "__strtoul_internal"
            | "__strtoll_internal"
            | "__strtoull_internal" => self.string_to_integer(tid, f, name, vals, acc),
            "sscanf" | "__isoc99_sscanf" | "__isoc23_sscanf" => self.scan_string(f, vals, acc),
            "abs" | "labs" | "llabs" => {
                let v = self.int_arg(vals, 0)?;
                // abs of the most negative value is undefined.
                if let Some(Repr::Int { bits, .. }) =
                    vals.first().and_then(|(_, t)| self.repr(*t).ok())
                    && bits < 128
                    && v == -(1i128 << (bits - 1))
                {
                    return Err(Stop::new("abs overflow"));
                }
                Ok(Ext::Return(self.ret(f, v.abs())?))
            }
            "printf" | "vprintf" | "puts" | "putchar" | "perror" => {
                match name {
                    "printf" | "vprintf" => self.format_reads(vals, 0, name == "vprintf", acc)?,
                    "puts" | "perror" => {
                        let s = self.ptr_arg(vals, 0)?;
                        if s != 0 {
                            self.read_string(s, acc)?;
                        }
                    }
                    _ => {}
                }
                let r = if name == "putchar" {
                    self.int_arg(vals, 0)? & 0xFF
                } else {
                    -1
                };
                Ok(Ext::Return(self.ret(f, r)?))
            }
            "fprintf" | "vfprintf" | "fputs" | "fflush" | "fputc" | "putc" => {
                match name {
                    "fprintf" | "vfprintf" => {
                        self.format_reads(vals, 1, name == "vfprintf", acc)?
                    }
                    "fputs" => {
                        let s = self.ptr_arg(vals, 0)?;
                        self.read_string(s, acc)?;
                    }
                    _ => {}
                }
                Ok(Ext::Return(self.ret(f, -1)?))
            }
            "rand" | "random" => {
                let v = self.next_nondet(tid).rem_euclid(1 << 31);
                Ok(Ext::Return(self.ret(f, v)?))
            }
            // Input from outside: any character or EOF (C11 §7.21.7.6).
            "getchar" => {
                let v = self.next_nondet(tid).rem_euclid(257) - 1;
                Ok(Ext::Return(self.ret(f, v)?))
            }
            "srand"
            | "srandom"
            | "sleep"
            | "usleep"
            | "sched_yield"
            | "pthread_yield"
            | "thrd_yield"
            | "pthread_detach"
            | "thrd_detach"
            | "pthread_mutexattr_destroy"
            | "pthread_cond_init"
            | "pthread_cond_destroy"
            | "pthread_condattr_init"
            | "pthread_condattr_destroy"
            | "pthread_barrierattr_init"
            | "pthread_barrierattr_destroy"
            | "pthread_barrier_destroy"
            | "pthread_rwlockattr_init"
            | "pthread_rwlockattr_destroy"
            | "pthread_key_delete"
            | "sem_destroy"
            | "cnd_init"
            | "cnd_destroy"
            | "tss_delete"
            | "expect"
            | "pthread_setname_np"
            | "prefetch" => {
                if name == "expect" {
                    let v = self.int_arg(vals, 0)?;
                    return Ok(Ext::Return(self.ret(f, v)?));
                }
                ok(self)
            }
            n if n.starts_with("pthread_attr_")
                && !n.starts_with("pthread_attr_get")
                && n != "pthread_attr_setaffinity_np" =>
            {
                ok(self)
            }
            "time" => {
                let t = CLOCK_START;
                let p = self.ptr_arg(vals, 0)?;
                if p != 0 {
                    let size = self.p.types.size_of(self.p.types.common.long).unwrap_or(8);
                    let bytes = value::encode(&Val::Int(t as u128), Repr::Ptr { bits: 128 }, size)?;
                    self.write_mem(p, &bytes, acc, false, false)?;
                }
                Ok(Ext::Return(self.ret(f, t)?))
            }
            // Byte order: the executions run on a little-endian machine, so network order is
            // the reverse of the host's.
            "htons" | "ntohs" | "bswap16" => {
                let v = self.int_arg(vals, 0)? as u16;
                Ok(Ext::Return(self.ret(f, i128::from(v.swap_bytes()))?))
            }
            "htonl" | "ntohl" | "bswap32" => {
                let v = self.int_arg(vals, 0)? as u32;
                Ok(Ext::Return(self.ret(f, i128::from(v.swap_bytes()))?))
            }
            "bswap64" => {
                let v = self.int_arg(vals, 0)? as u64;
                Ok(Ext::Return(self.ret(f, i128::from(v.swap_bytes()))?))
            }
            "ffs" | "ffsl" | "ffsll" => {
                let v = self.int_arg(vals, 0)?;
                let bits = match vals.first().map(|(_, t)| self.repr(*t)) {
                    Some(Ok(Repr::Int { bits, .. })) => bits,
                    _ => 32,
                };
                let x = trunc(v as u128, bits);
                let r = if x == 0 {
                    0
                } else {
                    x.trailing_zeros() as i128 + 1
                };
                Ok(Ext::Return(self.ret(f, r)?))
            }
            "getpid" | "gettid" => Ok(Ext::Return(self.ret(f, 4242 + tid as i128)?)),
            "pthread_self" | "thrd_current" => Ok(Ext::Return(self.ret(f, tid as i128 + 1)?)),
            "pthread_equal" | "thrd_equal" => {
                let a = self.int_arg(vals, 0)?;
                let b = self.int_arg(vals, 1)?;
                Ok(Ext::Return(self.ret(f, i128::from(a == b))?))
            }
            "pthread_mutex_init" | "mtx_init" | "pthread_spin_init" | "pthread_rwlock_init" => {
                let m = self.sync_arg(vals, 0)?;
                let kind = if name == "pthread_mutex_init" {
                    let a = self.ptr_arg(vals, 1)?;
                    self.sync.attrs.get(&a).copied().unwrap_or_default()
                } else if name == "mtx_init" {
                    if self.int_arg(vals, 1)? & 1 != 0 {
                        MutexKind::Recursive
                    } else {
                        MutexKind::Normal
                    }
                } else {
                    MutexKind::Normal
                };
                if self.sync.locks.get(&m).is_some_and(|l| l.writer.is_some()) {
                    return Err(Stop::new("initialisation of a held lock"));
                }
                self.sync.locks.insert(
                    m,
                    sync::Lock {
                        kind,
                        ..sync::Lock::default()
                    },
                );
                ok(self)
            }
            "pthread_mutex_destroy"
            | "mtx_destroy"
            | "pthread_spin_destroy"
            | "pthread_rwlock_destroy" => {
                let m = self.sync_arg(vals, 0)?;
                if self
                    .sync
                    .locks
                    .get(&m)
                    .is_some_and(|l| l.writer.is_some() || !l.readers.is_empty())
                {
                    return Err(Stop::new("destruction of a held lock"));
                }
                ok(self)
            }
            "pthread_mutexattr_init" => {
                let a = self.sync_arg(vals, 0)?;
                self.sync.attrs.insert(a, MutexKind::Normal);
                ok(self)
            }
            "pthread_barrier_init" => {
                let b = self.sync_arg(vals, 0)?;
                let n = self.int_arg(vals, 2)?;
                if n <= 0 || n > u32::MAX as i128 {
                    return Ok(Ext::Return(self.ret(f, 22)?));
                }
                self.sync.barriers.insert(
                    b,
                    sync::Barrier {
                        count: n as u32,
                        waiting: 0,
                    },
                );
                ok(self)
            }
            "sem_init" => {
                let s = self.sync_arg(vals, 0)?;
                let v = self.int_arg(vals, 2)?;
                if v < 0 {
                    return Err(Stop::new("negative semaphore value"));
                }
                self.sync.sems.insert(s, v as u64);
                ok(self)
            }
            "sem_getvalue" => {
                let s = self.ptr_arg(vals, 0)?;
                let v = *self
                    .sync
                    .sems
                    .get(&s)
                    .ok_or_else(|| Stop::new("uninitialised semaphore"))?;
                let p = self.ptr_arg(vals, 1)?;
                let bytes = value::encode(&Val::Int(v as u128), Repr::Ptr { bits: 128 }, 4)?;
                self.write_mem(p, &bytes, acc, false, false)?;
                ok(self)
            }
            "pthread_key_create" | "tss_create" => {
                let k = self.ptr_arg(vals, 0)?;
                let dtor = self.ptr_arg(vals, 1)? != 0;
                let key = self.sync.keys.len() as u128;
                self.sync.keys.push(dtor);
                let size = self.pointee_size(args.first(), 8, 4);
                let bytes = value::encode(&Val::Int(key), Repr::Ptr { bits: 128 }, size)?;
                self.write_mem(k, &bytes, acc, false, false)?;
                ok(self)
            }
            "pthread_getspecific" | "tss_get" => {
                let k = self.int_arg(vals, 0)? as u64;
                let v = self.threads[tid]
                    .specific
                    .iter()
                    .find(|(x, _)| *x == k)
                    .map_or(0, |(_, v)| *v);
                Ok(Ext::Return(self.ret(f, v as i128)?))
            }
            "pthread_setspecific" | "tss_set" => {
                let k = self.int_arg(vals, 0)? as u64;
                if k as usize >= self.sync.keys.len() {
                    return Err(Stop::new("unknown thread-specific data key"));
                }
                let v = match vals.get(1) {
                    Some((Val::Int(x), _)) => *x,
                    _ => 0,
                };
                let sp = &mut self.threads[tid].specific;
                sp.retain(|(x, _)| *x != k);
                sp.push((k, v));
                ok(self)
            }
            // A function whose specification says it changes nothing the program can see
            // (no write through its arguments, nothing kept, freed, called back or started)
            // and whose result is not used cannot steer the execution: it goes on, as in an
            // environment where the call returns (issue "Soundness and recall on real code",
            // item 5).
            _ if !result_used && self.effect_free(f, args.len()) => Ok(Ext::Return(None)),
            _ => {
                let roles = self.roles;
                let ext = match roles.get(f) {
                    // No effect on memory the program reaches: only the result matters.
                    Some(Role::Ignore) => self.effect_free_result(f, vals, result_used)?,
                    Some(Role::Library(spec)) if spec.environment => {
                        self.environment_call(f, spec, args, vals, acc)?
                    }
                    _ => None,
                };
                ext.ok_or_else(|| {
                    tracing::debug!(function = name, "unknown function");
                    Stop::new("call of an unknown function")
                })
            }
        }
    }

    /// The address of thread `tid`'s `errno` (allocated, zero, on first use).
    fn errno_of(&mut self, tid: usize) -> Result<u64, Stop> {
        if let Some(a) = self.threads[tid].errno {
            return Ok(a);
        }
        let id = self.mem.alloc(4, 4, Origin::Opaque)?;
        self.mem.write_at(id, 0, &[0; 4])?;
        let a = self.mem.object(id).base;
        self.threads[tid].errno = Some(a);
        Ok(a)
    }

    /// Sets thread `tid`'s `errno` to `e`.
    fn set_errno(&mut self, tid: usize, e: i32) -> Result<(), Stop> {
        let a = self.errno_of(tid)?;
        let (id, off) = self.mem.locate(a, 4)?;
        self.mem.write_at(id, off, &e.to_le_bytes())
    }

    /// The bytes of glibc's `struct tm` for `secs` seconds since the Epoch in UTC: nine
    /// `int`s (seconds, minutes, hours, day of the month, month from 0, years since 1900,
    /// weekday from Sunday, day of the year from 0, no daylight saving time), `tm_gmtoff` 0 and
    /// `tm_zone` pointing to "GMT".
    ///
    /// Errors: a year outside `int`.
    fn broken_down_time(&mut self, secs: i128) -> Result<Vec<u8>, Stop> {
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        // Civil date from days since 1970-01-01 (H. Hinnant's days_from_civil inverse).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy_march = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy_march + 2) / 153;
        let mday = doy_march - (153 * mp + 2) / 5 + 1;
        let mon = if mp < 10 { mp + 2 } else { mp - 10 };
        let year = yoe + era * 400 + i128::from(mon < 2);
        let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
        let before = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334][mon as usize];
        let yday = before + mday - 1 + i128::from(leap && mon >= 2);
        let wday = (days + 4).rem_euclid(7);
        let fields = [
            rem % 60,
            rem / 60 % 60,
            rem / 3600,
            mday,
            mon,
            year - 1900,
            wday,
            yday,
            0,
        ];
        let mut out = Vec::new();
        for v in fields {
            let v = i32::try_from(v).map_err(|_| Stop::new("year out of range"))?;
            out.extend_from_slice(&v.to_le_bytes());
        }
        let psize = self.p.types.data_model.pointer_size();
        out.resize(out.len().next_multiple_of(psize as usize), 0);
        out.extend(std::iter::repeat_n(0, psize as usize)); // tm_gmtoff
        let zone = self.mem.alloc(4, 1, Origin::Opaque)?;
        self.mem.write_at(zone, 0, b"GMT\0")?;
        self.mem.set_flags(zone, true, false);
        let z = u128::from(self.mem.object(zone).base);
        out.extend(value::encode(&Val::Int(z), Repr::Ptr { bits: 128 }, psize)?);
        Ok(out)
    }

    /// `sscanf` on the string at argument 0 with the format at argument 1 (C11 §7.21.6.2):
    /// white space, ordinary characters, and the conversions `d i u o x X s c n %` (with
    /// widths, `*` and length modifiers), storing through the arguments after the format.
    /// Returns the count of assigned conversions, or `EOF` when the input ends before the
    /// first conversion.
    ///
    /// Errors: a conversion it does not model (floating, `[`, `p`), too few arguments.
    fn scan_string(
        &mut self,
        f: FuncId,
        vals: &[(Val, TypeId)],
        acc: &mut Acc,
    ) -> Result<Ext, Stop> {
        let input = self.ptr_arg(vals, 0)?;
        let text = self.read_string(input, acc)?;
        let fmt = self.ptr_arg(vals, 1)?;
        let fmt = self.read_string(fmt, acc)?;
        let mut args = FormatArgs::List { vals, next: 2 };
        let psize = self.p.types.data_model.pointer_size();
        let lsize = self.p.types.size_of(self.p.types.common.long).unwrap_or(8);
        let space = |c: u8| matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r');
        let (mut at, mut i, mut assigned) = (0usize, 0usize, 0i128);
        let at_end = |at: usize| text.get(at).is_none_or(|c| *c == 0);
        let mut converted_any = false;
        while let Some(&c) = fmt.get(i).filter(|c| **c != 0) {
            if space(c) {
                while text.get(at).is_some_and(|c| space(*c)) {
                    at += 1;
                }
                i += 1;
                continue;
            }
            if c != b'%' || fmt.get(i + 1) == Some(&b'%') {
                let skip = if c == b'%' { 2 } else { 1 };
                if c == b'%' {
                    while text.get(at).is_some_and(|c| space(*c)) {
                        at += 1;
                    }
                }
                if text.get(at) != Some(&c) || at_end(at) {
                    break;
                }
                at += 1;
                i += skip;
                continue;
            }
            i += 1;
            let suppress = fmt.get(i) == Some(&b'*');
            if suppress {
                i += 1;
            }
            let mut width = 0usize;
            while let Some(d) = fmt.get(i).filter(|d| d.is_ascii_digit()) {
                width = width
                    .saturating_mul(10)
                    .saturating_add(usize::from(d - b'0'));
                i += 1;
            }
            let mut size = 4u64;
            let mut longs = 0;
            while let Some(&l) = fmt.get(i) {
                if l == b'l' {
                    longs += 1;
                }
                size = match l {
                    b'h' if size == 2 => 1,
                    b'h' => 2,
                    b'l' if longs > 1 => 8,
                    b'l' => lsize,
                    b'j' | b'q' => 8,
                    b'z' | b't' => psize,
                    _ => break,
                };
                i += 1;
            }
            let conv = *fmt
                .get(i)
                .ok_or_else(|| Stop::new("sscanf format ends in a conversion"))?;
            i += 1;
            if conv != b'c' && conv != b'n' {
                while text.get(at).is_some_and(|c| space(*c)) {
                    at += 1;
                }
            }
            if conv != b'n' && at_end(at) {
                if !converted_any {
                    return Ok(Ext::Return(self.ret(f, -1)?));
                }
                break;
            }
            let limit = if width == 0 { usize::MAX } else { width };
            match conv {
                b'd' | b'i' | b'u' | b'o' | b'x' | b'X' => {
                    let base = match conv {
                        b'i' => 0,
                        b'o' => 8,
                        b'x' | b'X' => 16,
                        _ => 10,
                    };
                    let end = text.len().min(at.saturating_add(limit));
                    let mut field = text[at..end].to_vec();
                    field.push(0);
                    let (negative, magnitude, used) = parse_integer(&field, base);
                    if used == 0 {
                        break;
                    }
                    at += used as usize;
                    converted_any = true;
                    if !suppress {
                        let v = if negative {
                            magnitude.wrapping_neg()
                        } else {
                            magnitude
                        };
                        let p = args.pointer(self)?;
                        let bytes = value::encode(&Val::Int(v), Repr::Ptr { bits: 128 }, size)?;
                        self.write_mem(p, &bytes, acc, true, false)?;
                        assigned += 1;
                    }
                }
                b's' | b'c' => {
                    let mut end = at;
                    let want = if conv == b'c' && width == 0 { 1 } else { limit };
                    while end - at < want
                        && !at_end(end)
                        && (conv == b'c' || !text.get(end).is_some_and(|c| space(*c)))
                    {
                        end += 1;
                    }
                    if conv == b'c' && end - at < want {
                        break;
                    }
                    let mut bytes = text[at..end].to_vec();
                    at = end;
                    converted_any = true;
                    if !suppress {
                        if conv == b's' {
                            bytes.push(0);
                        }
                        let p = args.pointer(self)?;
                        self.write_mem(p, &bytes, acc, true, false)?;
                        assigned += 1;
                    }
                }
                b'n' => {
                    if !suppress {
                        let p = args.pointer(self)?;
                        let bytes =
                            value::encode(&Val::Int(at as u128), Repr::Ptr { bits: 128 }, size)?;
                        self.write_mem(p, &bytes, acc, true, false)?;
                    }
                }
                _ => return Err(Stop::new("sscanf conversion not modelled")),
            }
        }
        Ok(Ext::Return(self.ret(f, assigned)?))
    }

    /// A call of a C library string-to-integer function `name` (`ato*` or `strto*`) on the
    /// string at argument 0 (base argument 2 and end pointer argument 1 for `strto*`): the
    /// string's bytes are read, the end pointer written, and the result clamped with `ERANGE`
    /// as C11 §7.22.1.4p8 says.
    ///
    /// Errors: an `ato*` result out of range (undefined behaviour), a base other than 0 or
    /// 2 to 36, a string through an invalid pointer.
    fn string_to_integer(
        &mut self,
        tid: usize,
        f: FuncId,
        name: &str,
        vals: &[(Val, TypeId)],
        acc: &mut Acc,
    ) -> Result<Ext, Stop> {
        let s = self.ptr_arg(vals, 0)?;
        let text = self.read_string(s, acc)?;
        let ato = name.starts_with("ato");
        let base = if ato { 10 } else { self.int_arg(vals, 2)? };
        if base != 0 && !(2..=36).contains(&base) {
            return Err(Stop::new("string conversion in an invalid base"));
        }
        let (negative, magnitude, end) = parse_integer(&text, base as u32);
        let types = &self.p.types;
        let ret = types
            .func_sig(self.p.function(f).ty)
            .map(|sig| sig.ret)
            .and_then(|t| value::repr(types, t));
        let Some(Repr::Int { bits, signed, .. }) = ret else {
            return Err(Stop::new("string conversion of a strange result type"));
        };
        let (max, min) = if signed {
            ((1u128 << (bits - 1)) - 1, 1u128 << (bits - 1))
        } else {
            (trunc(u128::MAX, bits), 0)
        };
        let fits = if signed && negative {
            magnitude <= min
        } else {
            magnitude <= max
        };
        if !fits && ato {
            return Err(Stop::new("ato* of a value out of range"));
        }
        let v: i128 = match (fits, signed, negative) {
            (true, _, false) => magnitude as i128,
            (true, true, true) => -(magnitude as i128),
            // An unsigned conversion negates in the result type.
            (true, false, true) => trunc(magnitude.wrapping_neg(), bits) as i128,
            (false, true, true) => -(min as i128),
            (false, _, _) => max as i128,
        };
        if !fits {
            self.set_errno(tid, 34)?; // ERANGE
        }
        if !ato {
            let endp = self.ptr_arg(vals, 1)?;
            if endp != 0 {
                let psize = self.p.types.data_model.pointer_size();
                let at = Val::Int(u128::from(s + end));
                let bytes = value::encode(&at, Repr::Ptr { bits: 128 }, psize)?;
                self.write_mem(endp, &bytes, acc, true, false)?;
            }
        }
        Ok(Ext::Return(self.ret(f, v)?))
    }

    /// The size in bytes of the object argument `e` points to, `default` when its type does
    /// not give one between 1 and `max`.
    fn pointee_size(&self, e: Option<&Expr>, max: u64, default: u64) -> u64 {
        self.pointee_of(e)
            .and_then(|t| self.p.types.size_of(t))
            .filter(|n| *n > 0 && *n <= max)
            .unwrap_or(default)
    }

    /// The value of the C library's `int` variable `name` (`optind`), when the program declares
    /// it (it then lives in the execution's memory, see [`LIBRARY_VARIABLES`]).
    fn extern_int(&self, name: &str) -> Option<i128> {
        let i = self.p.globals.iter().position(|g| {
            g.name == name && g.storage == crate::ir::Storage::Extern && !g.thread_local
        })?;
        let bytes = self.mem.read_at(self.mem.find(self.globals[i])?.0, 0, 4);
        let raw = u32::from_le_bytes(bytes.try_into().ok()?);
        Some(raw as i32 as i128)
    }

    /// Whether `f`'s library specification (called with `n` arguments) says the call writes
    /// no memory of the program through its arguments, keeps, frees and stores no pointer,
    /// runs no callback, starts nothing (threads, processes) and returns: what the program
    /// can observe of it is its result alone. Functions without a specification are not.
    fn effect_free(&self, f: FuncId, n: usize) -> bool {
        let Some(Role::Library(spec)) = self.roles.get(f) else {
            return false;
        };
        spec.read_written(n).1.is_empty()
            && spec.keeps.is_empty()
            && spec.frees.is_empty()
            && spec.stores().next().is_none()
            && spec.copies().next().is_none()
            && spec.callbacks.is_empty()
            && spec.drives.is_empty()
            && spec.spawns.is_empty()
            && spec.format.is_none()
            && !spec.noreturn
            && !spec.fork
    }

    /// Runs a call of `f` from its library specification `spec` alone, when the specification
    /// says everything the call does that the program can see and that its outcome comes from
    /// the environment (`environment`; issue "Soundness and recall on real code", item 5).
    /// The call reads and writes the bytes of its pointer arguments the
    /// specification names (recorded as accesses, as the static analysis counts them), the
    /// written bytes hold the specification's `fill` or zero, a pointer it stores through an
    /// argument is the one another argument holds, and its result is what the specification
    /// says a returned pointer points to (a new zeroed block for `fresh` and
    /// `thread-static`, the argument's pointer for `argN`, null for `unknown`) or, for an
    /// integer, 0 (success for most of POSIX, end of input for reads).
    ///
    /// The execution is then one of an environment whose library returned those values: every
    /// byte and result it chose is one the function may produce (zero bytes, a null pointer or
    /// 0 are each a possible outcome: an empty name, no entry, success), so a race it
    /// witnesses is one a real run may show with that environment.
    ///
    /// `Ok(None)`: the specification does not say enough (a callback that runs during the
    /// call or in a thread, a driven or spawned registry, a fork, a copy, a free, a format, a
    /// call that does not return, a pointer stored that is not an argument's, a
    /// floating-point result, a byte count that is not known).
    fn environment_call(
        &mut self,
        f: FuncId,
        spec: &crate::model::library::LibSpec,
        args: &[Expr],
        vals: &[(Val, TypeId)],
        acc: &mut Acc,
    ) -> Result<Option<Ext>, Stop> {
        use crate::model::library::{Bytes, Fill, Pointer, Runs};
        let synchronous = spec
            .callbacks
            .iter()
            .any(|c| matches!(c.runs, Runs::Sync | Runs::Thread));
        if synchronous
            || !spec.drives.is_empty()
            || !spec.spawns.is_empty()
            || spec.fork
            || spec.noreturn
            || !spec.frees.is_empty()
            || spec.copies().next().is_some()
            || spec.format.is_some()
        {
            return Ok(None);
        }
        let n = args.len();
        let (reads, writes) = spec.read_written(n);
        let ptr_size = self.p.types.data_model.pointer_size();
        // The bytes argument `i` names, from the address it holds (`None`: unknown).
        let count = |m: &Machine<'_>, i: usize, addr: u64| -> Result<Option<u64>, Stop> {
            Ok(match spec.bytes(i) {
                Bytes::Rest => m
                    .mem
                    .find(addr)
                    .map(|(id, off)| m.mem.object(id).size.saturating_sub(off)),
                Bytes::Pointee => {
                    let t = m.pointee_of(args.get(i));
                    t.and_then(|t| m.p.types.size_of(t)).filter(|s| *s > 0)
                }
                Bytes::Arg(k) => u64::try_from(m.int_arg(vals, k)?).ok(),
                Bytes::Product(a, b) => u64::try_from(m.int_arg(vals, a)?)
                    .ok()
                    .zip(u64::try_from(m.int_arg(vals, b)?).ok())
                    .and_then(|(x, y)| x.checked_mul(y)),
            })
        };
        // Every access first (a null optional argument is skipped), then the reads, then the
        // writes; an argument both read and written is planned once.
        let mut args_accessed: Vec<usize> = reads.iter().chain(writes.iter()).copied().collect();
        args_accessed.sort_unstable();
        args_accessed.dedup();
        let mut planned = Vec::new();
        for i in &args_accessed {
            let addr = self.ptr_arg(vals, *i)?;
            if addr == 0 {
                continue;
            }
            let Some(len) = count(self, *i, addr)? else {
                return Ok(None);
            };
            if len > MAX_OBJECT {
                return Ok(None);
            }
            planned.push((*i, addr, len));
        }
        for (i, addr, len) in &planned {
            if reads.contains(i) {
                self.read_mem(*addr, *len, acc, true)?;
            }
        }
        for (i, addr, len) in &planned {
            if writes.contains(i) {
                let byte = match spec.fill {
                    Some(Fill::Arg(k)) => self.int_arg(vals, k)? as u8,
                    Some(Fill::Zero) | None => 0,
                };
                self.write_mem(*addr, &vec![byte; *len as usize], acc, true, false)?;
            }
        }
        // Pointers stored through arguments: only another argument's pointer is known.
        for (k, ptr) in spec.stores() {
            let Pointer::Arg(src) = ptr else {
                return Ok(None);
            };
            let dst = self.ptr_arg(vals, k)?;
            if dst == 0 {
                continue;
            }
            let v = self.ptr_arg(vals, src)?;
            let bytes = v.to_le_bytes();
            let Some(b) = bytes.get(..ptr_size as usize) else {
                return Ok(None);
            };
            self.write_mem(dst, b, acc, true, false)?;
        }
        // The result.
        let Some(sig) = self.p.types.func_sig(self.p.function(f).ty) else {
            return Ok(None);
        };
        let ret_ty = sig.ret;
        let result = match self.repr(ret_ty)? {
            Repr::Void => None,
            Repr::Ptr { .. } => {
                let addr = match spec.returns {
                    Pointer::Unknown => 0,
                    Pointer::Arg(k) => self.ptr_arg(vals, k)?,
                    Pointer::Fresh | Pointer::ThreadStatic => {
                        let size = self
                            .p
                            .types
                            .pointee(ret_ty)
                            .and_then(|t| self.p.types.size_of(t))
                            .filter(|s| *s > 1)
                            .unwrap_or(FRESH_RESULT_BYTES);
                        let a = self.heap_alloc(size, acc)?;
                        if a != 0 {
                            self.write_mem(a, &vec![0; size as usize], acc, false, false)?;
                        }
                        a
                    }
                    Pointer::Static => return Ok(None),
                };
                self.ret(f, addr as i128)?
            }
            Repr::Int { .. } => self.ret(f, 0)?,
            _ => return Ok(None),
        };
        Ok(Some(Ext::Return(result)))
    }

    /// The result of a call of `f` that changes no memory of the program (the `ignore` role):
    /// nothing when the result is not used, and for the functions of `<math.h>` that [`math`]
    /// knows their exact value; `Ok(None)` for any other used result (an `ignore` function
    /// may compute it from its arguments, as `__builtin_bswap32` does).
    fn effect_free_result(
        &self,
        f: FuncId,
        vals: &[(Val, TypeId)],
        result_used: bool,
    ) -> Result<Option<Ext>, Stop> {
        if !result_used {
            return Ok(Some(Ext::Return(None)));
        }
        let Some(sig) = self.p.types.func_sig(self.p.function(f).ty) else {
            return Ok(None);
        };
        let to = self.repr(sig.ret)?;
        let result = match to {
            Repr::Void => None,
            Repr::Int { .. } | Repr::Ptr { .. } => return Ok(None),
            Repr::Float { .. } => {
                let mut xs = Vec::new();
                for (v, ty) in vals {
                    let r = self.repr(*ty)?;
                    match value::convert(v, r, Repr::Float { bytes: 8 })? {
                        Val::Float(x) => xs.push(x),
                        _ => return Ok(None),
                    }
                }
                let Some(y) = math(&self.p.function(f).name, &xs) else {
                    return Ok(None);
                };
                Some(value::convert(
                    &Val::Float(y),
                    Repr::Float { bytes: 8 },
                    to,
                )?)
            }
            Repr::Aggregate { .. } => return Ok(None),
        };
        Ok(Some(Ext::Return(result)))
    }

    /// Returns argument `i`'s pointer (a text-domain call that returns what it was given);
    /// a null argument, which asks for the current setting instead, stops the execution.
    fn same_pointer(&self, f: FuncId, vals: &[(Val, TypeId)], i: usize) -> Result<Ext, Stop> {
        let p = self.ptr_arg(vals, i)?;
        if p == 0 {
            return Err(Stop::new("query of the current text domain"));
        }
        Ok(Ext::Return(self.ret(f, i128::from(p))?))
    }

    /// Records the reads `printf`-style functions make: the format string and every string a
    /// `%s` conversion prints. `fmt` is the index of the format argument; the arguments after
    /// it are converted, or, for a `v*printf` function (`va`), the `va_list` after it.
    fn format_reads(
        &mut self,
        vals: &[(Val, TypeId)],
        fmt: usize,
        va: bool,
        acc: &mut Acc,
    ) -> Result<(), Stop> {
        let mut args = self.format_args(vals, fmt, va)?;
        let s = self.ptr_arg(vals, fmt)?;
        self.format(s, &mut args, acc, false).map(|_| ())
    }

    /// The arguments the format at argument `fmt` converts: the call's own after it, or those
    /// of the `va_list` after it (`va`).
    fn format_args<'v>(
        &self,
        vals: &'v [(Val, TypeId)],
        fmt: usize,
        va: bool,
    ) -> Result<FormatArgs<'v>, Stop> {
        if va {
            let (v, _) = vals
                .get(fmt + 1)
                .ok_or_else(|| Stop::new("missing va_list argument"))?;
            Ok(FormatArgs::Va {
                at: self.va_list_cursor(v)?,
            })
        } else {
            Ok(FormatArgs::List {
                vals,
                next: fmt + 1,
            })
        }
    }

    /// Interprets the `printf`-style format at address `s` with `args` (ISO C11 §7.21.6.1),
    /// recording the reads of the format and of `%s` strings. With `render`, returns the text
    /// glibc prints (integers, characters, strings, pointers; a floating conversion stops the
    /// execution; `%n` stores the count so far); otherwise only walks the arguments.
    ///
    /// Errors: `%n` without `render`, an unknown conversion, too few arguments.
    fn format(
        &mut self,
        s: u64,
        args: &mut FormatArgs<'_>,
        acc: &mut Acc,
        render: bool,
    ) -> Result<Vec<u8>, Stop> {
        let text = self.read_string(s, acc)?;
        let psize = self.p.types.data_model.pointer_size() as u32 * 8;
        let lsize = self.p.types.size_of(self.p.types.common.long).unwrap_or(8) as u32 * 8;
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() && text[i] != 0 {
            if text[i] != b'%' {
                out.push(text[i]);
                i += 1;
                continue;
            }
            i += 1;
            let mut spec = Spec::default();
            // Flags.
            while let Some(&c) = text.get(i) {
                match c {
                    b'-' => spec.left = true,
                    b'+' => spec.plus = true,
                    b' ' => spec.space = true,
                    b'#' => spec.alt = true,
                    b'0' => spec.zero = true,
                    b'\'' => {}
                    _ => break,
                }
                i += 1;
            }
            // Width and precision; `*` takes an argument.
            let mut in_precision = false;
            while let Some(&c) = text.get(i) {
                match c {
                    b'*' => {
                        let v = args.int(self, 32)?;
                        if in_precision {
                            spec.precision = (v >= 0).then_some(v as u64);
                        } else if v < 0 {
                            spec.left = true;
                            spec.width = v.unsigned_abs() as u64;
                        } else {
                            spec.width = v as u64;
                        }
                    }
                    b'.' => {
                        in_precision = true;
                        spec.precision = Some(0);
                    }
                    b'0'..=b'9' => {
                        let d = (c - b'0') as u64;
                        if in_precision {
                            spec.precision = Some(spec.precision.unwrap_or(0) * 10 + d);
                        } else {
                            spec.width = spec.width.saturating_mul(10).saturating_add(d);
                        }
                    }
                    _ => break,
                }
                i += 1;
            }
            // Length modifier: the bits of the converted integer.
            let mut bits = 32;
            let mut long_double = false;
            while let Some(&c) = text.get(i) {
                match c {
                    b'h' => bits = if bits == 16 { 8 } else { 16 },
                    // `l` is long; `ll` (handled below) long long.
                    b'l' => bits = lsize,
                    b'q' | b'j' => bits = 64,
                    b'z' | b't' => bits = psize,
                    b'L' => long_double = true,
                    _ => break,
                }
                if c == b'l' && text.get(i + 1) == Some(&b'l') {
                    bits = 64;
                    i += 1;
                }
                i += 1;
            }
            let Some(&conv) = text.get(i) else { break };
            i += 1;
            if conv == b'%' {
                out.push(b'%');
                continue;
            }
            match conv {
                b's' => {
                    let p = args.pointer(self)?;
                    if p == 0 {
                        // glibc prints "(null)", or nothing when the precision is below 6.
                        if render {
                            let text: &[u8] = if spec.precision.is_some_and(|m| m < 6) {
                                b""
                            } else {
                                b"(null)"
                            };
                            spec.pad(&mut out, text, false);
                        }
                        continue;
                    }
                    let l = self.strlen_at(p, spec.precision)?;
                    let touched = if spec.precision.is_some_and(|m| l >= m) {
                        l
                    } else {
                        l + 1
                    };
                    let bytes = self.read_mem(p, touched, acc, true)?;
                    if render {
                        spec.pad(&mut out, &bytes[..l as usize], false);
                    }
                }
                // The count of bytes written so far, stored through the argument.
                b'n' if render => {
                    let p = args.pointer(self)?;
                    let count = Val::Int(out.len() as u128);
                    let bytes =
                        value::encode(&count, Repr::Ptr { bits: 128 }, u64::from(bits / 8))?;
                    self.write_mem(p, &bytes, acc, true, false)?;
                }
                b'n' => return Err(Stop::new("printf %n")),
                b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' | b'p' if render => {
                    let v = args.int(self, if conv == b'p' { psize } else { bits })?;
                    let body = match conv {
                        b'c' => vec![v as u8],
                        b'p' if v == 0 => b"(nil)".to_vec(),
                        b'p' => format!("0x{:x}", trunc(v as u128, psize)).into_bytes(),
                        _ => spec.integer(conv, v, bits),
                    };
                    let numeric = !matches!(conv, b'c' | b'p');
                    spec.pad(&mut out, &body, numeric);
                }
                b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' | b'p' => {
                    args.int(self, if conv == b'p' { psize } else { bits })?;
                }
                b'e' | b'E' | b'f' | b'F' | b'g' | b'G' | b'a' | b'A' if !render => {
                    if long_double {
                        return Err(Stop::new("long double argument"));
                    }
                    args.skip_double(self)?;
                }
                b'e' | b'E' | b'f' | b'F' | b'g' | b'G' | b'a' | b'A' => {
                    return Err(Stop::new("formatting of a floating value"));
                }
                _ => return Err(Stop::new("unknown printf conversion")),
            }
        }
        Ok(out)
    }
}

/// The text of `strftime` format `fmt` for the `struct tm` fields `tm` (seconds, minutes,
/// hours, day of the month, month from 0, years since 1900, weekday, day of the year, DST) in
/// the C locale, time zone UTC; `None` for a conversion it does not know or a field out of
/// range.
fn strftime_c(fmt: &[u8], tm: &[i64; 9]) -> Option<Vec<u8>> {
    const DAYS: [&str; 7] = [
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
    ];
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    let [sec, min, hour, mday, mon, year, wday, yday, _] = *tm;
    let day = DAYS.get(usize::try_from(wday).ok()?)?;
    let month = MONTHS.get(usize::try_from(mon).ok()?)?;
    let mut out = Vec::new();
    let mut i = 0;
    while i < fmt.len() {
        if fmt[i] != b'%' {
            out.push(fmt[i]);
            i += 1;
            continue;
        }
        let c = *fmt.get(i + 1)?;
        i += 2;
        let piece = match c {
            b'Y' => format!("{}", year + 1900),
            b'y' => format!("{:02}", (year + 1900).rem_euclid(100)),
            b'C' => format!("{:02}", (year + 1900).div_euclid(100)),
            b'm' => format!("{:02}", mon + 1),
            b'd' => format!("{mday:02}"),
            b'e' => format!("{mday:2}"),
            b'H' => format!("{hour:02}"),
            b'I' => format!("{:02}", (hour + 11) % 12 + 1),
            b'M' => format!("{min:02}"),
            b'S' => format!("{sec:02}"),
            b'j' => format!("{:03}", yday + 1),
            b'p' => (if hour < 12 { "AM" } else { "PM" }).to_string(),
            b'a' => day[..3].to_string(),
            b'A' => day.to_string(),
            b'b' | b'h' => month[..3].to_string(),
            b'B' => month.to_string(),
            b'D' => format!(
                "{:02}/{mday:02}/{:02}",
                mon + 1,
                (year + 1900).rem_euclid(100)
            ),
            b'F' => format!("{}-{:02}-{mday:02}", year + 1900, mon + 1),
            b'T' => format!("{hour:02}:{min:02}:{sec:02}"),
            b'R' => format!("{hour:02}:{min:02}"),
            b'Z' => "GMT".to_string(),
            b'z' => "+0000".to_string(),
            b'n' => "\n".to_string(),
            b't' => "\t".to_string(),
            b'%' => "%".to_string(),
            _ => return None,
        };
        out.extend_from_slice(piece.as_bytes());
    }
    Some(out)
}

/// Parses the subject sequence of `strtol` in `base` (0: from the prefix) from NUL-terminated
/// `text` (C11 §7.22.1.4p2–p7): white space, a sign, a `0x` prefix (bases 0 and 16), digits.
/// Returns the sign, the magnitude (saturated at `u128::MAX`) and the offset of the first
/// byte not converted (0 when no digit was: the whole string is left).
fn parse_integer(text: &[u8], base: u32) -> (bool, u128, u64) {
    let at = |i: usize| text.get(i).copied().unwrap_or(0);
    let mut i = 0;
    while matches!(at(i), b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') {
        i += 1;
    }
    let negative = at(i) == b'-';
    if matches!(at(i), b'+' | b'-') {
        i += 1;
    }
    let digit = |c: u8| (c as char).to_digit(36);
    let hex_prefix = at(i) == b'0'
        && matches!(at(i + 1), b'x' | b'X')
        && digit(at(i + 2)).is_some_and(|d| d < 16);
    let base = match base {
        0 if hex_prefix => 16,
        0 if at(i) == b'0' => 8,
        0 => 10,
        b => b,
    };
    if base == 16 && hex_prefix {
        i += 2;
    }
    let start = i;
    let mut magnitude: u128 = 0;
    while let Some(d) = digit(at(i)).filter(|d| *d < base) {
        magnitude = magnitude
            .saturating_mul(u128::from(base))
            .saturating_add(u128::from(d));
        i += 1;
    }
    if i == start {
        return (false, 0, 0);
    }
    (negative, magnitude, i as u64)
}

/// One conversion specification of a `printf` format (ISO C11 §7.21.6.1p4).
#[derive(Default)]
struct Spec {
    left: bool,
    plus: bool,
    space: bool,
    alt: bool,
    zero: bool,
    width: u64,
    precision: Option<u64>,
}

impl Spec {
    /// The text of integer conversion `conv` of `v` converted to `bits` bits, without padding.
    fn integer(&self, conv: u8, v: i128, bits: u32) -> Vec<u8> {
        let raw = trunc(v as u128, bits);
        let (neg, mag) = if matches!(conv, b'd' | b'i') {
            let signed = int_value(
                raw,
                Repr::Int {
                    bits,
                    signed: true,
                    boolean: false,
                },
            );
            (signed < 0, signed.unsigned_abs())
        } else {
            (false, raw)
        };
        let mut digits = match conv {
            b'x' => format!("{mag:x}"),
            b'X' => format!("{mag:X}"),
            b'o' => format!("{mag:o}"),
            _ => format!("{mag}"),
        };
        if let Some(p) = self.precision {
            if p == 0 && mag == 0 {
                digits.clear();
            }
            while (digits.len() as u64) < p {
                digits.insert(0, '0');
            }
        }
        let prefix = match conv {
            b'd' | b'i' if neg => "-",
            b'd' | b'i' if self.plus => "+",
            b'd' | b'i' if self.space => " ",
            b'x' if self.alt && mag != 0 => "0x",
            b'X' if self.alt && mag != 0 => "0X",
            b'o' if self.alt && !digits.starts_with('0') => "0",
            _ => "",
        };
        format!("{prefix}{digits}").into_bytes()
    }

    /// Appends `body` padded to the width: left-justified, zero-filled after the sign or
    /// prefix (numbers without a precision), or right-justified with spaces.
    fn pad(&self, out: &mut Vec<u8>, body: &[u8], numeric: bool) {
        let fill = self.width.saturating_sub(body.len() as u64) as usize;
        if self.left {
            out.extend_from_slice(body);
            out.extend(std::iter::repeat_n(b' ', fill));
        } else if numeric && self.zero && self.precision.is_none() {
            let sign = body
                .iter()
                .take_while(|c| matches!(c, b'-' | b'+' | b' '))
                .count()
                .max(if body.starts_with(b"0x") || body.starts_with(b"0X") {
                    2
                } else {
                    0
                });
            out.extend_from_slice(&body[..sign]);
            out.extend(std::iter::repeat_n(b'0', fill));
            out.extend_from_slice(&body[sign..]);
        } else {
            out.extend(std::iter::repeat_n(b' ', fill));
            out.extend_from_slice(body);
        }
    }
}

/// The value of the `<math.h>` function `name` (`f` and `l` variants included) at `xs`,
/// computed in double precision (the `float` variants are then rounded to single precision by
/// the caller's conversion; glibc's own results may differ in the last place). `None` for
/// other functions or a wrong argument count.
fn math(name: &str, xs: &[f64]) -> Option<f64> {
    let base = name.strip_prefix("__builtin_").unwrap_or(name);
    let known = |n: &str| {
        [
            "sqrt", "fabs", "floor", "ceil", "trunc", "round", "exp", "log", "log10", "log2",
            "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "tanh", "cbrt", "pow",
            "atan2", "fmod", "hypot", "fmin", "fmax",
        ]
        .contains(&n)
    };
    let base = if known(base) {
        base
    } else {
        base.strip_suffix('f')
            .or_else(|| base.strip_suffix('l'))
            .filter(|b| known(b))?
    };
    Some(match (base, xs) {
        ("sqrt", [x]) => x.sqrt(),
        ("fabs", [x]) => x.abs(),
        ("floor", [x]) => x.floor(),
        ("ceil", [x]) => x.ceil(),
        ("trunc", [x]) => x.trunc(),
        ("round", [x]) => x.round(),
        ("exp", [x]) => x.exp(),
        ("log", [x]) => x.ln(),
        ("log10", [x]) => x.log10(),
        ("log2", [x]) => x.log2(),
        ("sin", [x]) => x.sin(),
        ("cos", [x]) => x.cos(),
        ("tan", [x]) => x.tan(),
        ("asin", [x]) => x.asin(),
        ("acos", [x]) => x.acos(),
        ("atan", [x]) => x.atan(),
        ("sinh", [x]) => x.sinh(),
        ("cosh", [x]) => x.cosh(),
        ("tanh", [x]) => x.tanh(),
        ("cbrt", [x]) => x.cbrt(),
        ("pow", [x, y]) => x.powf(*y),
        ("atan2", [y, x]) => y.atan2(*x),
        ("fmod", [x, y]) => x % y,
        ("hypot", [x, y]) => x.hypot(*y),
        ("fmin", [x, y]) => x.min(*y),
        ("fmax", [x, y]) => x.max(*y),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::{math, parse_integer, strftime_c};

    #[test]
    fn integers_parse_as_strtol_does() {
        // (text, base) -> (negative, magnitude, end)
        assert_eq!(parse_integer(b"  -42x\0", 10), (true, 42, 5));
        assert_eq!(parse_integer(b"+7\0", 0), (false, 7, 2));
        assert_eq!(parse_integer(b"0x1F\0", 0), (false, 31, 4));
        assert_eq!(parse_integer(b"0x1F\0", 16), (false, 31, 4));
        assert_eq!(parse_integer(b"017\0", 0), (false, 15, 3));
        // "0x" without a hex digit: the 0 alone is converted.
        assert_eq!(parse_integer(b"0xg\0", 0), (false, 0, 1));
        // No digit: nothing converted, the end is the string itself.
        assert_eq!(parse_integer(b"  -\0", 10), (false, 0, 0));
        assert_eq!(parse_integer(b"z\0", 36), (false, 35, 1));
        assert_eq!(
            parse_integer(b"999999999999999999999999999999999999999999\0", 10).1,
            u128::MAX
        );
    }

    #[test]
    fn strftime_formats_in_the_c_locale() {
        // 2023-11-14 22:13:20, a Tuesday, day 318 of the year.
        let tm = [20, 13, 22, 14, 10, 123, 2, 317, 0];
        assert_eq!(
            strftime_c(b"%D-%T %F %a %b %e %j %I%p %y %Z %%", &tm).as_deref(),
            Some(&b"11/14/23-22:13:20 2023-11-14 Tue Nov 14 318 10PM 23 GMT %"[..])
        );
        assert_eq!(strftime_c(b"%c", &tm), None);
        assert_eq!(strftime_c(b"%a", &[0, 0, 0, 1, 0, 70, 9, 0, 0]), None);
    }

    #[test]
    fn math_functions_and_their_variants() {
        assert_eq!(math("sqrt", &[4.0]), Some(2.0));
        assert_eq!(math("powf", &[2.0, 3.0]), Some(8.0));
        assert_eq!(math("__builtin_fabsl", &[-1.5]), Some(1.5));
        assert_eq!(math("atan2", &[0.0, 1.0]), Some(0.0));
        // A wrong argument count, an unknown function, a suffix on an unknown stem.
        assert_eq!(math("pow", &[2.0]), None);
        assert_eq!(math("frexp", &[1.0]), None);
        assert_eq!(math("sqrtx", &[4.0]), None);
    }
}
