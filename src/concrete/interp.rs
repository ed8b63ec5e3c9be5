//! The concrete interpreter: one [`Machine`] state (memory, threads with call stacks,
//! synchronisation objects) and [`Machine::step`], which executes one CFG edge of one thread.
//!
//! A step is atomic and reports the memory accesses it made (as the static analysis counts
//! them, `crate::backend::accesses`: loads and stores of lvalues, library reads and writes
//! through pointers, atomic operations; none on synchronisation objects) and the
//! synchronisation events that order threads ([`Event`]). A step that cannot proceed (a lock
//! held by another thread, a thread not yet finished) changes nothing and reports
//! [`Outcome::Blocked`]. Anything the model does not understand or that is undefined behaviour
//! returns a [`Stop`]: the execution ends there, and only what happened before counts.

use super::memory::{FUNC_BASE, Memory, ObjId, Origin};
use super::sync::SyncState;
use super::value::{self, Repr, Val, int_value, repr, trunc};
use super::{NondetPlan, Stop};
use crate::ir::types::{ArrayLen, BitField, TypeKind};
use crate::ir::{
    BinOp, Callee, EdgeId, Expr, ExprKind, FuncId, GlobalId, Host, LocalId, Lval, NodeId, Op,
    Program, Proj, Storage, TypeId, Var,
};
use crate::model::{Role, Roles};

/// Threads an execution may create before it stops.
pub const MAX_THREADS: usize = 128;
/// Call depth before an execution stops.
const MAX_FRAMES: usize = 2000;

/// One memory access of a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Access {
    /// The object.
    pub obj: ObjId,
    /// First byte (offset in the object).
    pub lo: u64,
    /// One past the last byte.
    pub hi: u64,
    /// A write (else a read).
    pub write: bool,
    /// An atomic access.
    pub atomic: bool,
    /// The function of the statement.
    pub func: FuncId,
    /// The statement (the call statement for the store of a call's result).
    pub edge: EdgeId,
}

impl Access {
    /// Whether two accesses of different threads conflict: overlapping bytes of one object,
    /// a write among them, not both atomic.
    pub fn conflicts(&self, o: &Access) -> bool {
        self.obj == o.obj
            && self.lo < o.hi
            && o.lo < self.hi
            && (self.write || o.write)
            && !(self.atomic && o.atomic)
    }
}

/// What a happens-before edge goes through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SyncKey {
    /// A mutex, spin lock or read-write lock.
    Lock(u64),
    /// A condition variable.
    Cond(u64),
    /// A semaphore.
    Sem(u64),
    /// A barrier.
    Barrier(u64),
    /// A once control.
    Once(u64),
    /// An object accessed atomically.
    Atomic(u64),
    /// The global atomic section (`__VERIFIER_atomic_begin`).
    Section,
}

/// A synchronisation event of a step, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The thread acquires what was released through the key.
    Acquire(SyncKey),
    /// The thread releases through the key.
    Release(SyncKey),
    /// The thread created this thread.
    Create(usize),
    /// The thread joined this (finished) thread.
    Join(usize),
}

/// What a step did.
#[derive(Clone, Debug, Default)]
pub struct StepOut {
    /// Memory accesses, in order.
    pub accesses: Vec<Access>,
    /// Synchronisation events, in order.
    pub events: Vec<Event>,
}

/// Whether a step happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The thread moved on.
    Progress,
    /// The thread must wait; nothing changed.
    Blocked,
}

/// What a thread is doing.
#[derive(Clone, Debug, PartialEq)]
pub enum Status {
    /// Running its code.
    Ready,
    /// Ended.
    Done,
    /// Waiting on a condition variable (its mutex released).
    WaitCond {
        /// The condition variable.
        cond: u64,
        /// The mutex to take again.
        mutex: u64,
        /// Wake-up order.
        seq: u64,
    },
    /// Waiting at a barrier.
    WaitBarrier {
        /// The barrier.
        barrier: u64,
    },
    /// Woken: finishes its pending library call with `ret` after taking `relock`.
    Resume {
        /// Result of the call.
        ret: u128,
        /// Mutex to take first.
        relock: Option<u64>,
        /// What it synchronises with.
        from: Option<SyncKey>,
    },
}

/// Why a frame was pushed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    /// An ordinary call (or a thread's entry function).
    Plain,
    /// The routine of `pthread_once` on this control.
    Once(u64),
    /// A function whose body runs atomically (`__VERIFIER_atomic_*`).
    Atomic,
}

/// A call frame.
#[derive(Clone, Debug)]
pub struct Frame {
    /// The function.
    pub func: FuncId,
    /// The current program point.
    pub node: NodeId,
    /// Addresses of the locals (0: not allocated yet).
    pub locals: Vec<u64>,
    /// The call statement in progress in this frame (a callee runs or a library call waits).
    pub call: Option<EdgeId>,
    /// Why it was pushed.
    pub kind: FrameKind,
    /// Locals not allocated yet.
    pub missing: usize,
    /// The argument area of a variadic function's call: the arguments after its named
    /// parameters (`super::varargs`).
    pub varargs: Option<u64>,
}

/// A thread.
#[derive(Clone, Debug)]
pub struct Thread {
    /// Call stack, innermost last.
    pub frames: Vec<Frame>,
    /// What it is doing.
    pub status: Status,
    /// Its entry function.
    pub entry: FuncId,
    /// Its instances of `_Thread_local` globals.
    pub tls: Vec<(GlobalId, u64)>,
    /// Nondeterministic values drawn so far.
    pub nondets: u64,
    /// Uninitialised local variables created so far (each gets a value of the plan).
    pub uninit: u64,
    /// The value it ended with.
    pub retval: u128,
    /// Whether a join consumed it.
    pub joined: bool,
    /// Thread-specific data (`pthread_setspecific`) by key.
    pub specific: Vec<(u64, u128)>,
    /// The address of its `errno` (allocated when `__errno_location` is first called).
    pub errno: Option<u64>,
}

/// The accesses a step collects, with the statement they are attributed to.
pub(super) struct Acc {
    pub func: FuncId,
    pub edge: EdgeId,
    pub list: Vec<Access>,
}

impl Acc {
    pub(super) fn push(&mut self, obj: ObjId, lo: u64, len: u64, write: bool, atomic: bool) {
        self.list.push(Access {
            obj,
            lo,
            hi: lo + len,
            write,
            atomic,
            func: self.func,
            edge: self.edge,
        });
    }
}

/// Where an lvalue is.
#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    pub addr: u64,
    pub ty: TypeId,
    pub bf: Option<BitField>,
}

/// What a call of a function without body did.
pub(super) enum Ext {
    /// Returns this value (`None`: no value) to the caller.
    Return(Option<Val>),
    /// Cannot proceed now.
    Block,
    /// The thread waits; its status says for what (the call finishes on wake-up).
    Wait,
    /// A frame was pushed (a once routine).
    Pushed,
    /// The calling thread ends with this value.
    ExitThread(u128),
    /// The program ends.
    ExitProgram,
}

/// The state of a concrete execution.
#[derive(Clone)]
pub struct Machine<'p> {
    /// The program.
    pub p: &'p Program,
    pub(super) roles: &'p Roles,
    /// Memory.
    pub mem: Memory,
    pub(super) globals: Vec<u64>,
    strings: Vec<u64>,
    /// Threads; index 0 runs `main`.
    pub threads: Vec<Thread>,
    /// Synchronisation objects.
    pub sync: SyncState,
    pub(super) nondet: NondetPlan,
    /// The thread inside an atomic section, and its nesting depth.
    pub(super) section: Option<(usize, u32)>,
    /// Whether the program has ended (main returned, `exit`, `abort`, failed assertion).
    pub exited: bool,
    /// Why the execution stopped, if it did.
    pub stopped: Option<Stop>,
}

impl<'p> Machine<'p> {
    /// The initial state: globals initialised, `main` about to run in thread 0 with
    /// `arguments` after the program name (`argv[1]` on; `argv[argc]` is a null pointer).
    ///
    /// Errors: no `main`, an initialiser or type the model does not support.
    pub fn new(
        p: &'p Program,
        roles: &'p Roles,
        nondet: NondetPlan,
        arguments: &[&str],
    ) -> Result<Self, Stop> {
        let mut m = Machine {
            p,
            roles,
            mem: Memory::new(p.types.data_model.pointer_size()),
            globals: vec![0; p.globals.len()],
            strings: Vec::new(),
            threads: Vec::new(),
            sync: SyncState::default(),
            nondet,
            section: None,
            exited: false,
            stopped: None,
        };
        for (i, s) in p.strings.iter().enumerate() {
            let id = m.mem.alloc(
                s.bytes.len() as u64,
                1,
                Origin::Str(crate::ir::StrId(i as u32)),
            )?;
            m.mem.write_at(id, 0, &s.bytes)?;
            m.mem.set_flags(id, true, false);
            m.strings.push(m.mem.object(id).base);
        }
        let mut opaque_file = 0;
        for (i, g) in p.globals.iter().enumerate() {
            if g.thread_local {
                continue;
            }
            let size = p.types.size_of(g.ty);
            let id = m.mem.alloc(
                size.unwrap_or(0),
                p.types.align_of(g.ty),
                Origin::Global(GlobalId(i as u32)),
            )?;
            m.globals[i] = m.mem.object(id).base;
            if g.storage == Storage::Extern {
                // The standard streams (glibc's names, and BSD's behind its macros).
                if matches!(
                    g.name.as_str(),
                    "stdin" | "stdout" | "stderr" | "__stdinp" | "__stdoutp" | "__stderrp"
                ) && size == Some(p.types.data_model.pointer_size())
                {
                    if opaque_file == 0 {
                        let f = m.mem.alloc(256, 16, Origin::Opaque)?;
                        m.mem.set_flags(f, false, true);
                        opaque_file = m.mem.object(f).base;
                    }
                    let bytes = value::encode(
                        &Val::Int(opaque_file as u128),
                        Repr::Ptr { bits: 64 },
                        size.unwrap_or(0),
                    )?;
                    m.mem.write_at(id, 0, &bytes)?;
                } else if matches!(g.name.as_str(), "environ" | "__environ")
                    && size == Some(p.types.data_model.pointer_size())
                {
                    // No environment variables: an array holding only its null terminator.
                    let psize = p.types.data_model.pointer_size();
                    let env = m.mem.alloc(psize, psize, Origin::Opaque)?;
                    let at = m.mem.object(env).base as u128;
                    let bytes = value::encode(&Val::Int(at), Repr::Ptr { bits: 64 }, psize)?;
                    m.mem.write_at(id, 0, &bytes)?;
                } else if let Some((v, n)) = super::library::LIBRARY_VARIABLES
                    .iter()
                    .find(|(name, _, _)| *name == g.name)
                    .map(|&(_, v, n)| {
                        (
                            v,
                            if n == 0 {
                                p.types.data_model.pointer_size()
                            } else {
                                n
                            },
                        )
                    })
                    .filter(|(_, n)| size == Some(*n))
                {
                    let bytes = value::encode(&Val::Int(v as u128), Repr::Ptr { bits: 64 }, n)?;
                    m.mem.write_at(id, 0, &bytes)?;
                } else {
                    m.mem.set_flags(id, false, true);
                }
            } else if size.is_none() {
                m.mem.set_flags(id, false, true);
            }
        }
        for (i, g) in p.globals.iter().enumerate() {
            if !g.thread_local && g.storage != Storage::Extern {
                m.initialise(GlobalId(i as u32), m.globals[i])?;
            }
        }
        let main = p
            .functions
            .iter()
            .position(|f| f.name == "main" && f.body.is_some())
            .map(|i| FuncId(i as u32))
            .ok_or_else(|| Stop::new("no main function"))?;
        m.spawn(main)?;
        // main(argc, argv): the program name, then the arguments of the plan.
        let f = p.function(main);
        let mut args = Vec::new();
        if !f.params.is_empty() {
            let psize = p.types.data_model.pointer_size();
            let n = 1 + arguments.len() as u64;
            let argv = m.mem.alloc((n + 1) * psize, psize, Origin::Opaque)?;
            let words = std::iter::once("prog").chain(arguments.iter().copied());
            for (i, w) in words.enumerate() {
                let mut bytes = w.as_bytes().to_vec();
                bytes.push(0);
                let s = m.mem.alloc(bytes.len() as u64, 1, Origin::Opaque)?;
                m.mem.write_at(s, 0, &bytes)?;
                let sb = m.mem.object(s).base as u128;
                m.mem.write_at(
                    argv,
                    i as u64 * psize,
                    &value::encode(&Val::Int(sb), Repr::Ptr { bits: 64 }, psize)?,
                )?;
            }
            args.push((Val::Int(n as u128), p.types.common.int));
            args.push((
                Val::Int(m.mem.object(argv).base as u128),
                p.types.common.void_ptr,
            ));
        }
        m.push_frame(0, main, args, FrameKind::Plain)?;
        Ok(m)
    }

    /// A copy of this state drawing nondeterministic values by `plan` from now on.
    pub fn with_plan(&self, plan: NondetPlan) -> Self {
        let mut m = self.clone();
        m.nondet = plan;
        m
    }

    /// Creates a thread about to run `entry` (its frame is pushed by the caller).
    pub(super) fn spawn(&mut self, entry: FuncId) -> Result<usize, Stop> {
        if self.threads.len() >= MAX_THREADS {
            return Err(Stop::new("too many threads"));
        }
        let tid = self.threads.len();
        let mut tls = Vec::new();
        for (i, g) in self.p.globals.iter().enumerate() {
            if g.thread_local {
                let gid = GlobalId(i as u32);
                let size = self
                    .p
                    .types
                    .size_of(g.ty)
                    .ok_or_else(|| Stop::new("thread-local object of unknown size"))?;
                let id = self
                    .mem
                    .alloc(size, self.p.types.align_of(g.ty), Origin::Global(gid))?;
                let base = self.mem.object(id).base;
                tls.push((gid, base));
            }
        }
        self.threads.push(Thread {
            frames: Vec::new(),
            status: Status::Ready,
            entry,
            tls: tls.clone(),
            nondets: 0,
            uninit: 0,
            retval: 0,
            joined: false,
            specific: Vec::new(),
            errno: None,
        });
        for (g, base) in tls {
            self.initialise(g, base)?;
        }
        Ok(tid)
    }

    /// Applies the static initialiser of global `g` to its object at `base`.
    fn initialise(&mut self, g: GlobalId, base: u64) -> Result<(), Stop> {
        let p = self.p;
        let glob = p.global(g);
        for item in &glob.init {
            let mut addr = base;
            let mut cur = glob.ty;
            let mut bf = None;
            for pr in &item.proj {
                match pr {
                    Proj::Field { comp, index } => {
                        let f = p
                            .types
                            .comp(*comp)
                            .fields
                            .get(*index as usize)
                            .ok_or_else(|| Stop::new("bad field"))?;
                        addr += f.offset;
                        cur = f.ty;
                        bf = f.bit_field;
                    }
                    Proj::Index(i) => {
                        let n = i.as_int().ok_or_else(|| Stop::new("non-constant index"))?;
                        let TypeKind::Array { elem, .. } = p.types.kind(cur) else {
                            return Err(Stop::new("index into a non-array"));
                        };
                        let es = p.types.size_of(*elem).ok_or_else(|| Stop::new("size"))?;
                        addr = addr.wrapping_add((n as u64).wrapping_mul(es));
                        cur = *elem;
                        bf = None;
                    }
                }
            }
            let place = Place { addr, ty: cur, bf };
            let mut acc = Acc {
                func: FuncId(0),
                edge: EdgeId(0),
                list: Vec::new(),
            };
            match &item.value {
                crate::ir::InitValue::Expr(e) => {
                    let v = self.eval(usize::MAX, e, &mut acc)?;
                    let v = self.conv(&v, e.ty, cur)?;
                    self.store(&place, &v, false, &mut acc)?;
                }
                crate::ir::InitValue::Str(s) => {
                    let bytes = &p.strings[s.0 as usize].bytes;
                    let size = p.types.size_of(cur).unwrap_or(bytes.len() as u64);
                    let n = (bytes.len() as u64).min(size);
                    let (id, off) = self.mem.locate(addr, n)?;
                    self.mem.write_at(id, off, &bytes[..n as usize])?;
                }
            }
        }
        Ok(())
    }

    /// The representation of a type, or a stop.
    pub(super) fn repr(&self, ty: TypeId) -> Result<Repr, Stop> {
        repr(&self.p.types, ty).ok_or_else(|| Stop::new("unsupported type"))
    }

    /// `v` of type `from` converted to type `to`.
    pub(super) fn conv(&self, v: &Val, from: TypeId, to: TypeId) -> Result<Val, Stop> {
        if from == to {
            return Ok(v.clone());
        }
        value::convert(v, self.repr(from)?, self.repr(to)?)
    }

    /// The address of a global in thread `tid`.
    fn global_addr(&self, tid: usize, g: GlobalId) -> Result<u64, Stop> {
        if self.p.global(g).thread_local {
            self.threads
                .get(tid)
                .and_then(|t| t.tls.iter().find(|(x, _)| *x == g))
                .map(|(_, a)| *a)
                .ok_or_else(|| Stop::new("thread-local object outside a thread"))
        } else {
            Ok(self.globals[g.0 as usize])
        }
    }

    fn local_addr(&self, tid: usize, l: LocalId) -> Result<u64, Stop> {
        let a = self
            .threads
            .get(tid)
            .and_then(|t| t.frames.last())
            .and_then(|f| f.locals.get(l.0 as usize))
            .copied()
            .unwrap_or(0);
        if a == 0 {
            Err(Stop::new("local without storage"))
        } else {
            Ok(a)
        }
    }

    /// The address of function `f`.
    pub fn func_addr(f: FuncId) -> u128 {
        (FUNC_BASE + 16 * f.0 as u64) as u128
    }

    /// The function at an address.
    pub(super) fn func_at(&self, v: &Val) -> Result<FuncId, Stop> {
        let Val::Int(a) = v else {
            return Err(Stop::new("call through a non-pointer"));
        };
        let a = *a;
        let base = FUNC_BASE as u128;
        if a < base
            || !(a - base).is_multiple_of(16)
            || (a - base) / 16 >= self.p.functions.len() as u128
        {
            return Err(Stop::new("call through an invalid function pointer"));
        }
        Ok(FuncId(((a - base) / 16) as u32))
    }

    /// Evaluates an expression in the top frame of thread `tid`, recording its reads.
    pub(super) fn eval(&self, tid: usize, e: &Expr, acc: &mut Acc) -> Result<Val, Stop> {
        let types = &self.p.types;
        match &e.kind {
            ExprKind::Int(v) => match self.repr(e.ty)? {
                Repr::Int { bits, .. } | Repr::Ptr { bits } => {
                    Ok(Val::Int(trunc(*v as u128, bits)))
                }
                Repr::Float { bytes } => value::convert(
                    &Val::Int(*v as u128),
                    Repr::Int {
                        bits: 128,
                        signed: true,
                        boolean: false,
                    },
                    Repr::Float { bytes },
                ),
                _ => Err(Stop::new("integer constant of a strange type")),
            },
            ExprKind::Float(f) => match self.repr(e.ty)? {
                Repr::Float { bytes: 4 } => Ok(Val::Float(*f as f32 as f64)),
                Repr::Float { .. } => Ok(Val::Float(*f)),
                _ => Err(Stop::new("floating constant of a strange type")),
            },
            ExprKind::Str(s) => Ok(Val::Int(self.strings[s.0 as usize] as u128)),
            ExprKind::Load(lv) => {
                let pl = self.place(tid, lv, false, acc)?;
                let atomic = types.quals(lv.ty).contains(crate::ir::types::Quals::ATOMIC);
                self.load(&pl, atomic, acc)
            }
            ExprKind::AddrOf(lv) => Ok(Val::Int(self.place(tid, lv, true, acc)?.addr as u128)),
            ExprKind::Func(f) => Ok(Val::Int(Self::func_addr(*f))),
            ExprKind::Unary(op, a) => {
                let v = self.eval(tid, a, acc)?;
                value::unary(*op, &v, self.repr(a.ty)?, self.repr(e.ty)?)
            }
            ExprKind::Binary(op, a, b) => {
                let va = self.eval(tid, a, acc)?;
                let vb = self.eval(tid, b, acc)?;
                self.binary(*op, &va, &vb, a.ty, b.ty, e.ty)
            }
            ExprKind::Cast(a) => {
                let v = self.eval(tid, a, acc)?;
                if matches!(types.kind(a.ty), TypeKind::Function(_)) {
                    return Ok(v);
                }
                self.conv(&v, a.ty, e.ty)
            }
            ExprKind::Unknown => Err(Stop::new("an expression the front end did not model")),
        }
    }

    fn binary(
        &self,
        op: BinOp,
        a: &Val,
        b: &Val,
        ta: TypeId,
        tb: TypeId,
        te: TypeId,
    ) -> Result<Val, Stop> {
        let types = &self.p.types;
        let elem = |t: TypeId| -> u64 {
            types
                .pointee(t)
                .and_then(|x| types.size_of(x))
                .filter(|s| *s > 0)
                .unwrap_or(1)
        };
        match (op, a, b) {
            (BinOp::PtrAdd | BinOp::PtrSub, Val::Int(p), Val::Int(i)) => {
                let mut n = int_value(*i, self.repr(tb)?);
                if op == BinOp::PtrSub {
                    n = -n;
                }
                let r = self.ptr_offset(*p, n, elem(ta))?;
                Ok(Val::Int(r))
            }
            (BinOp::PtrDiff, Val::Int(x), Val::Int(y)) => {
                let d = (*x as i128 - *y as i128) / elem(ta) as i128;
                match self.repr(te)? {
                    Repr::Int { bits, .. } => Ok(Val::Int(trunc(d as u128, bits))),
                    _ => Err(Stop::new("pointer difference of a strange type")),
                }
            }
            (_, Val::Float(x), Val::Float(y)) => {
                let bytes = match self.repr(if op.is_comparison() { ta } else { te })? {
                    Repr::Float { bytes } => bytes,
                    _ => 8,
                };
                value::float_binary(op, *x, *y, bytes)
            }
            (_, Val::Int(x), Val::Int(y)) => {
                let r = if op.is_comparison() {
                    self.repr(ta)?
                } else {
                    self.repr(te)?
                };
                value::int_binary(op, *x, *y, r, self.repr(tb)?).map(Val::Int)
            }
            _ => Err(Stop::new("operands of unexpected shapes")),
        }
    }

    /// `p + n * elem`, which must stay inside (or one past) the object `p` points into.
    pub(super) fn ptr_offset(&self, p: u128, n: i128, elem: u64) -> Result<u128, Stop> {
        let delta = n
            .checked_mul(elem as i128)
            .ok_or_else(|| Stop::new("pointer arithmetic overflow"))?;
        if delta == 0 {
            return Ok(p);
        }
        let Some((id, off)) = u64::try_from(p).ok().and_then(|a| self.mem.find_near(a)) else {
            return Err(Stop::new("arithmetic on an invalid pointer"));
        };
        let o = self.mem.object(id);
        let new = off + delta;
        let slack = super::memory::SLACK as i128;
        if new < -slack || new > o.size as i128 + slack {
            return Err(Stop::new("pointer arithmetic out of bounds"));
        }
        Ok((o.base as i128 + new) as u128)
    }

    /// The place an lvalue designates (`addr_only`: its address is taken, so an index one past
    /// the end of an array is fine).
    pub(super) fn place(
        &self,
        tid: usize,
        lv: &Lval,
        addr_only: bool,
        acc: &mut Acc,
    ) -> Result<Place, Stop> {
        let p = self.p;
        let types = &p.types;
        let (mut addr, mut cur) = match &lv.host {
            Host::Var(Var::Global(g)) => (self.global_addr(tid, *g)?, p.global(*g).ty),
            Host::Var(Var::Local(l)) => {
                let f = self
                    .threads
                    .get(tid)
                    .and_then(|t| t.frames.last())
                    .ok_or_else(|| Stop::new("local outside a function"))?;
                (self.local_addr(tid, *l)?, p.function(f.func).local(*l).ty)
            }
            Host::Deref(e) => {
                let v = self.eval(tid, e, acc)?;
                let Val::Int(a) = v else {
                    return Err(Stop::new("dereference of a non-pointer"));
                };
                let ty = types
                    .pointee(e.ty)
                    .ok_or_else(|| Stop::new("dereference of a non-pointer type"))?;
                (
                    u64::try_from(a).map_err(|_| Stop::new("invalid pointer"))?,
                    ty,
                )
            }
        };
        let mut bf = None;
        for pr in &lv.proj {
            match pr {
                Proj::Field { comp, index } => {
                    let f = types
                        .comp(*comp)
                        .fields
                        .get(*index as usize)
                        .ok_or_else(|| Stop::new("bad field"))?;
                    addr = addr.wrapping_add(f.offset);
                    cur = f.ty;
                    bf = f.bit_field.filter(|b| b.width > 0);
                }
                Proj::Index(i) => {
                    let iv = self.eval(tid, i, acc)?;
                    let Val::Int(iv) = iv else {
                        return Err(Stop::new("non-integer index"));
                    };
                    let n = int_value(iv, self.repr(i.ty)?);
                    let TypeKind::Array { elem, len } = types.kind(cur) else {
                        return Err(Stop::new("index into a non-array"));
                    };
                    if let ArrayLen::Fixed(l) = len
                        && *l > 0
                        && (n < 0 || n > *l as i128 || (n == *l as i128 && !addr_only))
                    {
                        return Err(Stop::new("array index out of bounds"));
                    }
                    let es = types
                        .size_of(*elem)
                        .ok_or_else(|| Stop::new("element of unknown size"))?;
                    let delta = n
                        .checked_mul(es as i128)
                        .ok_or_else(|| Stop::new("index overflow"))?;
                    addr = (addr as i128 + delta) as u64;
                    cur = *elem;
                    bf = None;
                }
            }
        }
        Ok(Place {
            addr,
            ty: lv.ty,
            bf,
        })
    }

    /// Reads the value at a place.
    pub(super) fn load(&self, pl: &Place, atomic: bool, acc: &mut Acc) -> Result<Val, Stop> {
        let r = self.repr(pl.ty)?;
        if let Some(bf) = pl.bf {
            let Repr::Int { bits, signed, .. } = r else {
                return Err(Stop::new("bit-field of a strange type"));
            };
            let n = (bf.bit_offset + bf.width).div_ceil(8) as u64;
            let (id, off) = self.mem.locate(pl.addr, n)?;
            acc.push(id, off, n, false, atomic);
            let raw = match value::decode(&self.mem.read_at(id, off, n), Repr::Ptr { bits: 128 }) {
                Val::Int(x) => x,
                _ => 0,
            };
            let v = trunc(raw >> bf.bit_offset, bf.width);
            let v = if signed {
                value::sext(v, bf.width) as u128
            } else {
                v
            };
            return Ok(Val::Int(trunc(v, bits)));
        }
        let size = self
            .p
            .types
            .size_of(pl.ty)
            .ok_or_else(|| Stop::new("load of unknown size"))?;
        let (id, off) = self.mem.locate(pl.addr, size)?;
        acc.push(id, off, size, false, atomic);
        Ok(value::decode(&self.mem.read_at(id, off, size), r))
    }

    /// Writes a value (already of the place's type) to a place.
    pub(super) fn store(
        &mut self,
        pl: &Place,
        v: &Val,
        atomic: bool,
        acc: &mut Acc,
    ) -> Result<(), Stop> {
        let r = self.repr(pl.ty)?;
        if let Some(bf) = pl.bf {
            let Val::Int(x) = v else {
                return Err(Stop::new("bit-field store of a non-integer"));
            };
            let n = (bf.bit_offset + bf.width).div_ceil(8) as u64;
            let (id, off) = self.mem.locate(pl.addr, n)?;
            acc.push(id, off, n, true, atomic);
            let raw = match value::decode(&self.mem.read_at(id, off, n), Repr::Ptr { bits: 128 }) {
                Val::Int(x) => x,
                _ => 0,
            };
            let mask = trunc(u128::MAX, bf.width) << bf.bit_offset;
            let new = (raw & !mask) | ((trunc(*x, bf.width) << bf.bit_offset) & mask);
            let bytes = value::encode(&Val::Int(new), Repr::Ptr { bits: 128 }, n)?;
            return self.mem.write_at(id, off, &bytes);
        }
        let size = self
            .p
            .types
            .size_of(pl.ty)
            .ok_or_else(|| Stop::new("store of unknown size"))?;
        let (id, off) = self.mem.locate(pl.addr, size)?;
        acc.push(id, off, size, true, atomic);
        let bytes = value::encode(v, r, size)?;
        self.mem.write_at(id, off, &bytes)
    }

    /// Allocates the locals of the top frame of `tid` that `op` (and, for a return, the
    /// caller's pending call) names.
    fn ensure_locals(&mut self, tid: usize, op: &Op) -> Result<(), Stop> {
        if self.threads[tid]
            .frames
            .last()
            .is_none_or(|f| f.missing == 0)
        {
            return Ok(());
        }
        let mut needed: Vec<LocalId> = Vec::new();
        let mut note = |lv: &Lval| {
            if let Host::Var(Var::Local(l)) = lv.host {
                needed.push(l);
            }
        };
        crate::ir::visit::op_exprs(op, &mut |x| {
            if let ExprKind::Load(lv) | ExprKind::AddrOf(lv) = &x.kind {
                note(lv);
            }
        });
        match op {
            Op::Assign { lhs, .. } => note(lhs),
            Op::Call { dest: Some(d), .. } => note(d),
            Op::Asm { outputs, .. } => outputs.iter().for_each(&mut note),
            _ => {}
        }
        let depth = self.threads[tid].frames.len();
        if depth > 0 {
            self.allocate(tid, depth - 1, &needed)?;
        }
        Ok(())
    }

    fn allocate(&mut self, tid: usize, frame: usize, needed: &[LocalId]) -> Result<(), Stop> {
        let func = self.threads[tid].frames[frame].func;
        let f = self.p.function(func);
        for &l in needed {
            if self.threads[tid].frames[frame].locals[l.0 as usize] != 0 {
                continue;
            }
            let ty = f.local(l).ty;
            let Some(size) = self.p.types.size_of(ty) else {
                continue; // a variable-length array: no storage, its uses stop
            };
            let id = self.mem.alloc(
                size,
                self.p.types.align_of(ty),
                Origin::Local { func, local: l },
            )?;
            let fr = &mut self.threads[tid].frames[frame];
            fr.locals[l.0 as usize] = self.mem.object(id).base;
            fr.missing -= 1;
            // An uninitialised integer variable holds an indeterminate value: one of the plan.
            if f.local(l).kind == crate::ir::LocalKind::Var
                && let Ok(r @ Repr::Int { .. }) = self.repr(ty)
            {
                let n = self.threads[tid].uninit;
                self.threads[tid].uninit += 1;
                let v = self.nondet.value(tid as u64, (1 << 40) + n);
                let v = value::convert(
                    &Val::Int(v as u128),
                    Repr::Int {
                        bits: 128,
                        signed: true,
                        boolean: false,
                    },
                    r,
                )?;
                self.mem.write_at(id, 0, &value::encode(&v, r, size)?)?;
            }
        }
        Ok(())
    }

    /// Pushes a frame of `func` in thread `tid` with arguments (value and type).
    pub(super) fn push_frame(
        &mut self,
        tid: usize,
        func: FuncId,
        args: Vec<(Val, TypeId)>,
        kind: FrameKind,
    ) -> Result<(), Stop> {
        let f = self.p.function(func);
        let Some(cfg) = &f.body else {
            return Err(Stop::new("call of a function without body"));
        };
        if args.len() < f.params.len() {
            return Err(Stop::new("call with too few arguments"));
        }
        if self.threads[tid].frames.len() >= MAX_FRAMES {
            return Err(Stop::new("call stack too deep"));
        }
        let varargs = if self.p.types.func_sig(f.ty).is_some_and(|s| s.variadic) {
            Some(self.argument_area(&args[f.params.len()..])?)
        } else {
            None
        };
        self.threads[tid].frames.push(Frame {
            func,
            node: cfg.entry,
            locals: vec![0; f.locals.len()],
            call: None,
            kind,
            missing: f.locals.len(),
            varargs,
        });
        let frame = self.threads[tid].frames.len() - 1;
        self.allocate(tid, frame, &f.params)?;
        let mut acc = Acc {
            func,
            edge: EdgeId(0),
            list: Vec::new(),
        };
        for (&pid, (v, ty)) in f.params.iter().zip(args) {
            let pty = f.local(pid).ty;
            let v = self.conv(&v, ty, pty)?;
            let addr = self.local_addr(tid, pid)?;
            let pl = Place {
                addr,
                ty: pty,
                bf: None,
            };
            self.store(&pl, &v, false, &mut acc)?;
        }
        Ok(())
    }

    /// Pops the top frame of `tid`, ending its locals' lifetimes.
    fn pop_frame(&mut self, tid: usize) -> Option<Frame> {
        let fr = self.threads[tid].frames.pop()?;
        for &a in fr.locals.iter().chain(&fr.varargs) {
            if a != 0
                && let Some((id, 0)) = self.mem.find(a)
            {
                self.mem.kill(id);
            }
        }
        Some(fr)
    }

    /// Whether thread `tid` may be scheduled (it may still block when stepped).
    pub fn runnable(&self, tid: usize) -> bool {
        if self.exited {
            return false;
        }
        if let Some((owner, _)) = self.section
            && owner != tid
        {
            return false;
        }
        self.threads
            .get(tid)
            .is_some_and(|t| matches!(t.status, Status::Ready | Status::Resume { .. }))
    }

    /// Whether every thread has ended or the program has exited.
    pub fn finished(&self) -> bool {
        self.exited || self.threads.iter().all(|t| t.status == Status::Done)
    }

    /// The statement thread `tid` is at (the pending call while it waits), if any.
    pub fn position(&self, tid: usize) -> Option<(FuncId, NodeId)> {
        let f = self.threads.get(tid)?.frames.last()?;
        Some((f.func, f.node))
    }

    /// Executes one step of thread `tid`.
    ///
    /// Errors: the execution cannot go on (see [`Stop`]).
    pub fn step(&mut self, tid: usize) -> Result<(Outcome, StepOut), Stop> {
        let mut out = StepOut::default();
        let status = self.threads[tid].status.clone();
        match status {
            Status::Done | Status::WaitCond { .. } | Status::WaitBarrier { .. } => {
                return Ok((Outcome::Blocked, out));
            }
            Status::Resume { ret, relock, from } => {
                if let Some(m) = relock {
                    if !self.sync.lock_available(m, tid, true) {
                        return Ok((Outcome::Blocked, out));
                    }
                    let kind = self.sync.kind_of(m).unwrap_or_default();
                    self.sync.lock(m, tid, true, false, kind);
                    out.events.push(Event::Acquire(SyncKey::Lock(m)));
                }
                if let Some(k) = from {
                    out.events.push(Event::Acquire(k));
                }
                self.threads[tid].status = Status::Ready;
                let ret_ty = self.pending_ret_type(tid);
                let v = Val::Int(ret);
                let v = match ret_ty {
                    Some(t) => value::convert(
                        &v,
                        Repr::Int {
                            bits: 128,
                            signed: true,
                            boolean: false,
                        },
                        self.repr(t)?,
                    )?,
                    None => v,
                };
                let mut acc = self.acc_for_pending(tid);
                self.finish_call(tid, Some(v), &mut acc)?;
                out.accesses = acc.list;
                return Ok((Outcome::Progress, out));
            }
            Status::Ready => {}
        }
        let Some(frame) = self.threads[tid].frames.last() else {
            return Err(Stop::new("thread without frame"));
        };
        let (func, node) = (frame.func, frame.node);
        let p = self.p;
        let cfg = p
            .function(func)
            .body
            .as_ref()
            .ok_or_else(|| Stop::new("frame of a function without body"))?;
        // Allocate what the candidate edges name first (deterministic, harmless if blocked).
        for &e in &cfg.node(node).succs {
            self.ensure_locals(tid, &cfg.edge(e).op)?;
        }
        let mut acc = Acc {
            func,
            edge: EdgeId(0),
            list: Vec::new(),
        };
        let mut chosen = None;
        for &eid in &cfg.node(node).succs {
            let e = cfg.edge(eid);
            acc.edge = eid;
            if let Op::Assume { cond, branch } = &e.op {
                let mut trial = Acc {
                    func,
                    edge: eid,
                    list: Vec::new(),
                };
                let v = self.eval(tid, cond, &mut trial)?;
                if value::truth(&v)? == *branch {
                    acc.list = trial.list;
                    chosen = Some(eid);
                    break;
                }
            } else {
                chosen = Some(eid);
                break;
            }
        }
        let Some(eid) = chosen else {
            return Err(Stop::new("no feasible successor"));
        };
        acc.edge = eid;
        let e = cfg.edge(eid);
        let outcome = match &e.op {
            Op::Skip | Op::Assume { .. } => {
                self.set_node(tid, e.dst);
                Outcome::Progress
            }
            Op::Assign { lhs, rhs } => {
                let v = self.eval(tid, rhs, &mut acc)?;
                let pl = self.place(tid, lhs, false, &mut acc)?;
                let atomic = p
                    .types
                    .quals(lhs.ty)
                    .contains(crate::ir::types::Quals::ATOMIC);
                let v = self.conv(&v, rhs.ty, lhs.ty)?;
                self.store(&pl, &v, atomic, &mut acc)?;
                self.set_node(tid, e.dst);
                Outcome::Progress
            }
            Op::Return(r) => {
                let v = match r {
                    Some(x) => Some((self.eval(tid, x, &mut acc)?, x.ty)),
                    None => None,
                };
                self.do_return(tid, v, &mut acc, &mut out)?;
                Outcome::Progress
            }
            Op::Asm { .. } => return Err(Stop::new("inline assembly")),
            Op::Call { callee, args, dest } => {
                let f = match callee {
                    Callee::Direct(f) => *f,
                    Callee::Indirect(x) => {
                        let v = self.eval(tid, x, &mut acc)?;
                        self.func_at(&v)?
                    }
                };
                let mut vals = Vec::with_capacity(args.len());
                for a in args {
                    vals.push((self.eval(tid, a, &mut acc)?, a.ty));
                }
                let fun = p.function(f);
                if let Some(b) = super::varargs::Builtin::of(&fun.name) {
                    self.va_builtin(tid, b, args, dest.as_ref(), &mut acc)?;
                    self.set_node(tid, e.dst);
                    Outcome::Progress
                } else if fun.body.is_some() {
                    let kind = if matches!(self.roles.get(f), Some(Role::AtomicFunction)) {
                        if !self.enter_section(tid) {
                            return Ok((Outcome::Blocked, out));
                        }
                        out.events.push(Event::Acquire(SyncKey::Section));
                        FrameKind::Atomic
                    } else {
                        FrameKind::Plain
                    };
                    if let Some(fr) = self.threads[tid].frames.last_mut() {
                        fr.call = Some(eid);
                    }
                    self.push_frame(tid, f, vals, kind)?;
                    Outcome::Progress
                } else {
                    if let Some(fr) = self.threads[tid].frames.last_mut() {
                        fr.call = Some(eid);
                    }
                    match self.call_external(
                        tid,
                        f,
                        args,
                        &vals,
                        dest.is_some(),
                        &mut acc,
                        &mut out,
                    )? {
                        Ext::Block => {
                            if let Some(fr) = self.threads[tid].frames.last_mut() {
                                fr.call = None;
                            }
                            let blocked = StepOut {
                                accesses: acc.list,
                                events: Vec::new(),
                            };
                            return Ok((Outcome::Blocked, blocked));
                        }
                        Ext::Return(v) => {
                            self.finish_call(tid, v, &mut acc)?;
                            Outcome::Progress
                        }
                        Ext::Wait | Ext::Pushed => Outcome::Progress,
                        Ext::ExitThread(v) => {
                            self.exit_thread(tid, v)?;
                            Outcome::Progress
                        }
                        Ext::ExitProgram => {
                            self.exited = true;
                            Outcome::Progress
                        }
                    }
                }
            }
        };
        out.accesses = acc.list;
        Ok((outcome, out))
    }

    fn set_node(&mut self, tid: usize, n: NodeId) {
        if let Some(f) = self.threads[tid].frames.last_mut() {
            f.node = n;
        }
    }

    /// Takes the atomic section for `tid` (false: another thread is inside).
    pub(super) fn enter_section(&mut self, tid: usize) -> bool {
        match &mut self.section {
            Some((o, d)) if *o == tid => {
                *d += 1;
                true
            }
            Some(_) => false,
            None => {
                self.section = Some((tid, 1));
                true
            }
        }
    }

    /// Leaves the atomic section (false: `tid` was not inside).
    pub(super) fn leave_section(&mut self, tid: usize) -> bool {
        match &mut self.section {
            Some((o, d)) if *o == tid => {
                *d -= 1;
                if *d == 0 {
                    self.section = None;
                }
                true
            }
            _ => false,
        }
    }

    /// The return type of the call pending in the top frame of `tid`.
    fn pending_ret_type(&self, tid: usize) -> Option<TypeId> {
        let fr = self.threads[tid].frames.last()?;
        let eid = fr.call?;
        let cfg = self.p.function(fr.func).body.as_ref()?;
        let callee = match &cfg.edge(eid).op {
            Op::Call {
                callee: Callee::Direct(f),
                ..
            } => *f,
            _ => return None,
        };
        self.p
            .types
            .func_sig(self.p.function(callee).ty)
            .map(|s| s.ret)
    }

    fn acc_for_pending(&self, tid: usize) -> Acc {
        let fr = self.threads[tid].frames.last();
        Acc {
            func: fr.map_or(FuncId(0), |f| f.func),
            edge: fr.and_then(|f| f.call).unwrap_or(EdgeId(0)),
            list: Vec::new(),
        }
    }

    /// Finishes the call pending in the top frame of `tid`: stores the result (of the
    /// callee's return type) in the call's destination and moves past the call.
    pub(super) fn finish_call(
        &mut self,
        tid: usize,
        v: Option<Val>,
        acc: &mut Acc,
    ) -> Result<(), Stop> {
        let Some(fr) = self.threads[tid].frames.last_mut() else {
            return Ok(());
        };
        let Some(eid) = fr.call.take() else {
            return Err(Stop::new("no pending call"));
        };
        let func = fr.func;
        let cfg = self
            .p
            .function(func)
            .body
            .as_ref()
            .ok_or_else(|| Stop::new("no body"))?;
        let e = cfg.edge(eid);
        acc.func = func;
        acc.edge = eid;
        if let Op::Call {
            dest: Some(d),
            callee,
            ..
        } = &e.op
        {
            let ret_ty = match callee {
                Callee::Direct(f) => self.p.types.func_sig(self.p.function(*f).ty).map(|s| s.ret),
                Callee::Indirect(x) => self.p.types.func_sig(x.ty).map(|s| s.ret),
            };
            let Some(v) = v else {
                return Err(Stop::new("use of the result of a call without one"));
            };
            let pl = self.place(tid, d, false, acc)?;
            let v = match ret_ty {
                Some(t) => self.conv(&v, t, d.ty)?,
                None => v,
            };
            self.store(&pl, &v, false, acc)?;
        }
        self.set_node(tid, e.dst);
        Ok(())
    }

    /// Returns from the top frame of `tid` with a value (and its type).
    fn do_return(
        &mut self,
        tid: usize,
        v: Option<(Val, TypeId)>,
        acc: &mut Acc,
        out: &mut StepOut,
    ) -> Result<(), Stop> {
        let Some(fr) = self.pop_frame(tid) else {
            return Err(Stop::new("return without frame"));
        };
        match fr.kind {
            FrameKind::Plain => {}
            FrameKind::Atomic => {
                if self.leave_section(tid) {
                    out.events.push(Event::Release(SyncKey::Section));
                }
            }
            FrameKind::Once(ctl) => {
                self.sync.onces.insert(ctl, super::sync::Once::Done);
                out.events.push(Event::Release(SyncKey::Once(ctl)));
                // pthread_once returns 0.
                let r = self.pending_ret_type(tid);
                let v = r.map(|_| Val::Int(0));
                let v = match (v, r) {
                    (Some(v), Some(t)) => Some(value::convert(
                        &v,
                        Repr::Int {
                            bits: 128,
                            signed: true,
                            boolean: false,
                        },
                        self.repr(t)?,
                    )?),
                    _ => None,
                };
                return self.finish_call(tid, v, acc);
            }
        }
        if self.threads[tid].frames.is_empty() {
            if tid == 0 {
                self.exited = true;
                return Ok(());
            }
            let rv = match v {
                Some((Val::Int(x), _)) => x,
                _ => 0,
            };
            return self.exit_thread(tid, rv);
        }
        // Allocate the caller's destination locals.
        let depth = self.threads[tid].frames.len();
        let caller = &self.threads[tid].frames[depth - 1];
        if let Some(eid) = caller.call
            && let Some(cfg) = &self.p.function(caller.func).body
        {
            let op = &cfg.edge(eid).op;
            self.ensure_locals(tid, op)?;
        }
        self.finish_call(tid, v.map(|(x, _)| x), acc)
    }

    /// Ends thread `tid` with a value.
    pub(super) fn exit_thread(&mut self, tid: usize, v: u128) -> Result<(), Stop> {
        if self.threads[tid]
            .specific
            .iter()
            .any(|(k, v)| *v != 0 && self.sync.keys.get(*k as usize).copied().unwrap_or(false))
        {
            return Err(Stop::new(
                "thread-specific data destructors are not modelled",
            ));
        }
        if self.leave_section(tid) {
            self.section = None;
        }
        while self.pop_frame(tid).is_some() {}
        let t = &mut self.threads[tid];
        t.status = Status::Done;
        t.retval = v;
        if tid == 0 && self.threads.iter().all(|t| t.status == Status::Done) {
            self.exited = true;
        }
        Ok(())
    }

    /// Draws the next nondeterministic value of thread `tid`.
    pub(super) fn next_nondet(&mut self, tid: usize) -> i128 {
        let n = self.threads[tid].nondets;
        self.threads[tid].nondets += 1;
        self.nondet.value(tid as u64, n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frontend::{self, FrontendOptions};
    use crate::ir::DataModel;

    /// Runs `main` of a C program to its end in thread 0 only, returning the machine.
    fn run(src: &str, dm: DataModel) -> (Program, Result<u128, Stop>) {
        let dir = std::env::temp_dir().join(format!(
            "racedar-concrete-{}-{}",
            std::process::id(),
            src.len()
        ));
        let _ = std::fs::create_dir_all(&dir);
        let path = dir.join("t.c");
        std::fs::write(&path, src).unwrap_or_else(|e| panic!("{e}"));
        let opts = FrontendOptions {
            data_model: dm,
            ..FrontendOptions::default()
        };
        let (program, _) =
            frontend::load(std::slice::from_ref(&path), &opts).unwrap_or_else(|e| panic!("{e}"));
        let result = {
            let roles = crate::model::Model::shipped().classify(&program);
            let mut m = match Machine::new(&program, &roles, NondetPlan::Const(0), &[]) {
                Ok(m) => m,
                Err(e) => return (program.clone(), Err(e)),
            };
            let mut r = Err(Stop::new("step budget"));
            for _ in 0..100_000 {
                match m.step(0) {
                    Err(e) => {
                        r = Err(e);
                        break;
                    }
                    Ok(_) if m.exited => {
                        r = Ok(0);
                        break;
                    }
                    Ok(_) => {}
                }
            }
            r.map(|_| {
                let g = program
                    .globals
                    .iter()
                    .position(|g| g.name == "result")
                    .unwrap_or(0);
                let a = m.globals[g];
                let (id, off) = m.mem.locate(a, 4).unwrap_or_else(|e| panic!("{e:?}"));
                match value::decode(&m.mem.read_at(id, off, 4), Repr::Ptr { bits: 32 }) {
                    Val::Int(x) => x,
                    _ => 0,
                }
            })
        };
        (program, result)
    }

    fn result_of(src: &str, dm: DataModel) -> u128 {
        match run(src, dm).1 {
            Ok(v) => v,
            Err(e) => panic!("stopped: {e:?}"),
        }
    }

    #[test]
    fn integers_wrap_to_their_width() {
        let src = "unsigned int result;\n\
                   int main(void) { unsigned char c = 250; c += 10; unsigned short s = 65535;\n\
                   s++; int i = -1; unsigned u = i; result = c + s + (u == 4294967295u) * 100; return 0; }\n";
        assert_eq!(result_of(src, DataModel::Ilp32), 104);
    }

    #[test]
    fn signed_overflow_stops() {
        let src = "int result;\nint main(void) { int i = 2147483647; i = i + 1; result = i; return 0; }\n";
        assert!(run(src, DataModel::Lp64).1.is_err());
    }

    #[test]
    fn pointers_round_trip_through_integers() {
        let src = "int result; int x = 5;\n\
                   int main(void) { long l = (long)&x; int *p = (int *)l; *p = 7;\n\
                   void *v = (void *)(long)3; result = x * 10 + (int)(long)v; return 0; }\n";
        assert_eq!(result_of(src, DataModel::Lp64), 73);
        assert_eq!(result_of(src, DataModel::Ilp32), 73);
    }

    #[test]
    fn struct_copies_and_fields() {
        let src = "struct s { char c; int a[3]; struct { short h; } in; };\n\
                   int result; struct s g = { 1, { 2, 3, 4 }, { 5 } };\n\
                   int main(void) { struct s l = g; l.a[1] = 30; g.in.h = 9;\n\
                   result = l.c + l.a[0] + l.a[1] + l.a[2] + l.in.h + g.in.h * 100; return 0; }\n";
        assert_eq!(result_of(src, DataModel::Ilp32), 1 + 2 + 30 + 4 + 5 + 900);
    }

    #[test]
    fn heap_blocks_and_use_after_free() {
        let src = "#include <stdlib.h>\n#include <string.h>\nint result;\n\
                   int main(void) { int *p = malloc(4 * sizeof(int)); memset(p, 0, 4 * sizeof(int));\n\
                   p[3] = 8; int *q = calloc(2, sizeof(int)); q[1] = p[3] + p[0];\n\
                   result = q[1]; free(p); free(q); return 0; }\n";
        assert_eq!(result_of(src, DataModel::Lp64), 8);
        let uaf = "#include <stdlib.h>\nint result;\n\
                   int main(void) { int *p = malloc(sizeof(int)); free(p); result = *p; return 0; }\n";
        assert!(run(uaf, DataModel::Lp64).1.is_err());
        let oob = "#include <stdlib.h>\nint result;\n\
                   int main(void) { int *p = malloc(2 * sizeof(int)); result = p[2]; return 0; }\n";
        assert!(run(oob, DataModel::Lp64).1.is_err());
    }

    #[test]
    fn bit_fields_and_functions() {
        let src = "struct b { unsigned a : 3; int s : 4; unsigned c : 9; };\nint result;\n\
                   static int twice(int x) { return 2 * x; }\n\
                   int main(void) { struct b v = { 0 }; v.a = 9; v.s = -3; v.c = 300;\n\
                   int (*f)(int) = twice; result = v.a + v.s * 10 + f(v.c); return 0; }\n";
        assert_eq!(result_of(src, DataModel::Lp64), (1 - 30 + 600) as u128);
    }

    #[test]
    fn unknown_functions_stop() {
        let src = "int result; extern int mystery(int);\n\
                   int main(void) { result = mystery(1); return 0; }\n";
        assert!(run(src, DataModel::Lp64).1.is_err());
    }
}
