//! The backend: the sequential analysis of each thread that every later phase queries
//! (seed 001 §4, Fig. 2).
//!
//! | seed 001 Fig. 2 | here |
//! |---|---|
//! | `analyse_thread : Function × State → Result` | [`Backend::analyse_thread`] |
//! | `state : Result × Context → State` | [`Backend::state`] |
//! | `value : Result × Context × Expr → Value` | [`Backend::value`] |
//! | `value_ptr : Result × Context × Expr → 2^Address` | [`Backend::value_ptr`] |
//! | `functions : Result × Context × Expr → 2^Function` | [`Backend::functions`] |
//! | `accesses : Result × Context × Expr → (2^Address)²` | [`Backend::accesses`] (per statement) |
//!
//! A backend keeps the results of `analyse_thread` itself, keyed by thread, so the queries take
//! only the [`Context`]. Two implementations: [`syntactic`] (addresses read off expressions, no
//! state) and [`value`] (the interval/points-to abstract interpreter, thread-modular).
//!
//! Addresses are a [`Base`] (a memory object) plus a [`ByteRange`] inside it. When a backend
//! cannot tell where a pointer points, an access gets a [`Target::Typed`] target: it may touch
//! any escaped object holding a sub-object of a compatible type.

pub mod accesses;
pub mod funcptrs;
pub mod regions;
pub mod syntactic;
pub mod value;

use crate::context::{CallSite, Context, ThreadContexts, ThreadId};
use crate::ir::types::{CompId, IntKind, TypeKind, TypeTable};
use crate::ir::{EdgeId, Expr, FuncId, GlobalId, LocalId, Lval, StrId, TypeId};
use crate::threads::ThreadGraph;

/// A memory object (seed 001 §3, "base address").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Base {
    /// A global variable (including function-local statics).
    Global(GlobalId),
    /// A local variable of `func` in the stack of `thread` (all instances in that thread).
    Local {
        /// Thread whose stack holds it.
        thread: ThreadId,
        /// Function.
        func: FuncId,
        /// Variable.
        local: LocalId,
    },
    /// The objects allocated at a call site, by a thread.
    Heap {
        /// Allocating thread.
        thread: ThreadId,
        /// Function containing the allocation call.
        func: FuncId,
        /// The allocation call.
        edge: EdgeId,
        /// The call that entered the allocating function, in the allocating context (`None`
        /// for a thread's entry function): the objects an allocation wrapper (`xmalloc`,
        /// `msg_new`) returns to different callers are told apart, at the precision of the
        /// context depth (issue "Real programs", item 4).
        caller: Option<crate::context::CallSite>,
    },
    /// A string literal (never written by a correct program).
    Str(StrId),
    /// The hidden state of a library function that is not thread-safe.
    Hidden(FuncId),
    /// The code of a function: the target of a function pointer in the value analysis; never
    /// accessed as data.
    Func(FuncId),
    /// The value `thread` associated with the thread-specific data key held in global `key`
    /// (`pthread_setspecific` / `pthread_getspecific`): one pointer per thread, `NULL` until the
    /// thread sets it. Only the value backend stores it; never accessed as data by the program.
    Specific {
        /// The thread owning the value.
        thread: ThreadId,
        /// The global variable holding the key.
        key: GlobalId,
    },
}

/// A half-open byte range `[lo, hi)` inside a base; `hi == u64::MAX` means "to the end".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ByteRange {
    /// First byte.
    pub lo: u64,
    /// One past the last byte.
    pub hi: u64,
}

impl ByteRange {
    /// The whole object.
    pub const ALL: ByteRange = ByteRange {
        lo: 0,
        hi: u64::MAX,
    };

    /// `[lo, lo + size)`, saturating.
    pub fn sized(lo: u64, size: u64) -> ByteRange {
        ByteRange {
            lo,
            hi: lo.saturating_add(size.max(1)),
        }
    }

    /// Whether the two ranges share a byte.
    pub fn overlaps(&self, other: &ByteRange) -> bool {
        self.lo < other.hi && other.lo < self.hi
    }
}

/// A concrete address: base and byte range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address {
    /// The object.
    pub base: Base,
    /// The bytes touched.
    pub range: ByteRange,
    /// Whether the range is exactly the accessed bytes (constant indices), as opposed to a
    /// range covering several possible elements.
    pub exact: bool,
}

/// A coarse class of types for matching accesses through unknown pointers with objects they may
/// touch (C11 §6.5p7, effective types, with signedness ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TypeClass {
    /// Character types and `void`: may alias anything.
    Any,
    /// An integer type of this many bytes.
    Int(u64),
    /// A floating type of this many bytes.
    Float(u64),
    /// A pointer to an object, by what it points to ([`Pointee`]).
    Pointer(Pointee),
    /// A pointer to a function: never the same object as a data pointer (C11 §6.5p7, the
    /// two are not compatible types).
    FnPointer,
    /// A struct or union.
    Comp(CompId),
}

impl TypeClass {
    /// The class of a type (arrays are classed by their element).
    pub fn of(types: &TypeTable, ty: TypeId) -> TypeClass {
        match types.kind(ty) {
            TypeKind::Void => TypeClass::Any,
            TypeKind::Int(k) => match k {
                IntKind::Char | IntKind::SChar | IntKind::UChar => TypeClass::Any,
                _ => TypeClass::Int(types.size_of(ty).unwrap_or(0)),
            },
            TypeKind::Float(_) | TypeKind::Complex(_) => {
                TypeClass::Float(types.size_of(ty).unwrap_or(0))
            }
            TypeKind::Pointer(p) if matches!(types.kind(*p), TypeKind::Function(_)) => {
                TypeClass::FnPointer
            }
            TypeKind::Pointer(p) => TypeClass::Pointer(match types.kind(*p) {
                TypeKind::Void => Pointee::Any,
                _ => match TypeClass::of(types, *p) {
                    TypeClass::Comp(c) => Pointee::Comp(c),
                    _ => Pointee::Scalar,
                },
            }),
            TypeKind::Function(_) => TypeClass::Pointer(Pointee::Any),
            TypeKind::Array { elem, .. } => TypeClass::of(types, *elem),
            TypeKind::Comp(c) => TypeClass::Comp(*c),
        }
    }

    /// The class with pointers not told apart by what they point to (every pointer is
    /// `Pointer(Pointee::Any)`).
    pub fn loose(self) -> TypeClass {
        match self {
            TypeClass::Pointer(_) => TypeClass::Pointer(Pointee::Any),
            c => c,
        }
    }
}

/// What a pointer object points to, for telling pointer objects apart by type (C11 §6.5p7:
/// a pointer object is read and written through lvalues of its own type; pointer types to
/// unrelated structs, or to a struct and to a scalar, are not compatible). `void *` stands
/// for any pointer: programs convert it freely, and generic code writes `T *` objects through
/// `void **`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Pointee {
    /// `void`: any pointer.
    Any,
    /// A struct or union.
    Comp(CompId),
    /// Anything else: a character, integer, floating or pointer type.
    Scalar,
}

/// Where an access goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// A known object.
    Addr(Address),
    /// Somewhere an unknown pointer points: any escaped object of a compatible type.
    Typed(TypeClass),
}

/// Read or write.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessKind {
    /// A read.
    Read,
    /// A write (assignment, call result, `free`, library write).
    Write,
}

/// What an access is written as, for reports.
#[derive(Clone, Copy, Debug)]
pub enum AccessSite<'p> {
    /// An lvalue of the program.
    Lval(&'p Lval),
    /// The object a pointer expression points to (a library call's argument).
    Pointee(&'p Expr),
    /// The hidden state of a library function called here.
    Hidden(FuncId),
}

/// One memory access of a statement.
#[derive(Clone, Copy, Debug)]
pub struct MemAccess<'p> {
    /// Where it goes.
    pub target: Target,
    /// Read or write.
    pub kind: AccessKind,
    /// An atomic access (of an `_Atomic` object or by an atomic builtin); two atomic accesses
    /// never race.
    pub atomic: bool,
    /// Type of the accessed object.
    pub ty: TypeId,
    /// How the program writes it.
    pub site: AccessSite<'p>,
    /// The store of a call's result: it happens when the call returns (its lockset is the one
    /// after the call).
    pub after_call: bool,
    /// The only object the expression can touch (seed 001 §7, condition 8).
    pub precise: bool,
    /// The access touches only an object its thread allocated and has not published yet
    /// (`value::publication`): no other thread can reach it, so it races with nothing.
    pub unpublished: bool,
    /// The access goes to an object of this region ([`regions`]).
    pub region: Option<regions::Region>,
}

/// Where a thread published objects it had kept to itself (`value::publication`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Publishing {
    /// The objects' base.
    pub object: Base,
    /// Published by a store to memory (its write is an access of the statement) or a thread
    /// creation, which order the earlier accesses before any thread that obtains the address
    /// (interleaving semantics); false for a call that may keep the address.
    pub store: bool,
}

/// What a pointer expression may point to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PointsTo {
    /// One of these addresses.
    Known(Vec<Address>),
    /// Unknown.
    Unknown,
}

/// The functions a function-pointer expression may designate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FuncTargets {
    /// Candidates, sorted.
    pub funcs: Vec<FuncId>,
    /// Whether it is exactly one known function.
    pub exact: bool,
}

/// An integer range `[lo, hi]` (inclusive) a value may take; `None` bounds are unknown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntRange {
    /// Lower bound.
    pub lo: Option<i128>,
    /// Upper bound.
    pub hi: Option<i128>,
}

impl IntRange {
    /// Any value.
    pub const TOP: IntRange = IntRange { lo: None, hi: None };
}

/// The backend interface (seed 001 Fig. 2).
///
/// The thread-modular fixpoint (seed 001 Algorithm 1) drives it in rounds: each round builds the
/// thread-creation graph, analysing every thread it discovers with
/// [`Backend::analyse_thread`]; rounds repeat until [`Backend::end_round`] says the results
/// are stable.
pub trait Backend<'p> {
    /// Abstract state at a statement.
    type State: Clone + std::fmt::Debug;

    /// Name shown in reports (`syntactic`, `value`).
    fn name(&self) -> &'static str;

    /// Starts a round; `prev` is the previous round's thread-creation graph.
    fn begin_round(&mut self, _prev: Option<&ThreadGraph>) {}

    /// Analyses `thread` (entry `entry`, created at `site`; `None` for `main`) as a
    /// sequential program from the state its creators pass it, keeping the result for the
    /// queries.
    fn analyse_thread(&mut self, thread: ThreadId, entry: FuncId, site: Option<CallSite>);

    /// Ends a round whose graph has `threads` threads; whether the results are stable (no
    /// further round needed).
    fn end_round(&mut self, _threads: usize) -> bool {
        true
    }

    /// The function contexts the analysis of `thread` reached, with the calls between them
    /// (`None`: the caller enumerates them from [`Backend::functions`]).
    fn thread_contexts(&self, _thread: ThreadId) -> Option<ThreadContexts> {
        None
    }

    /// The state before the statement of `ctx`.
    fn state(&self, ctx: &Context) -> Self::State;

    /// The values an integer expression may take at `ctx`.
    fn value(&self, ctx: &Context, e: &Expr) -> IntRange;

    /// The addresses a pointer expression may take at `ctx`.
    fn value_ptr(&self, ctx: &Context, e: &Expr) -> PointsTo;

    /// The functions a function-pointer expression may designate at `ctx`.
    fn functions(&self, ctx: &Context, e: &Expr) -> FuncTargets;

    /// The functions a callback argument `e` of a library call designates at `ctx` (`deep`:
    /// the function pointers stored in the objects `e` points to, as `sigaction`'s `struct
    /// sigaction`). Defaults to [`Backend::functions`] for direct callbacks and to every
    /// function a deep callback's pointee type could hold.
    fn callback_functions(&self, ctx: &Context, e: &Expr, deep: bool) -> FuncTargets {
        if deep {
            FuncTargets {
                funcs: Vec::new(),
                exact: false,
            }
        } else {
            self.functions(ctx, e)
        }
    }

    /// The one byte offset (possibly negative) that every object a pointer expression may
    /// point to at `ctx` is pointed to at: `Some(c)` when `e` points to at least one object
    /// and to each at exactly offset `c` (or is null); `None` when unknown or imprecise.
    /// Defaults to `None`.
    fn exact_offset(&self, _ctx: &Context, _e: &Expr) -> Option<i128> {
        None
    }

    /// The memory accesses of the statement of `ctx` (not those of called functions).
    fn accesses(&self, ctx: &Context) -> Vec<MemAccess<'p>>;

    /// Whether the statement of `ctx` can execute (its source is reachable and, for a branch,
    /// its condition can hold). Defaults to true.
    fn feasible(&self, _ctx: &Context) -> bool {
        true
    }

    /// Whether `base` stands for a single concrete object in every run (a heap base
    /// allocated at most once). Defaults to false.
    fn single_object(&self, _base: &Base) -> bool {
        false
    }

    /// Where objects were published whose earlier accesses were reported as unpublished
    /// ([`MemAccess::unpublished`]). Defaults to none.
    fn publishing(&self) -> Vec<Publishing> {
        Vec::new()
    }

    /// The address expression `&L` the pointer expression `e` (a local) surely holds at
    /// `ctx`, with `L` depending only on locals unchanged since (`m = &s->mutex`). Defaults
    /// to none.
    fn alias(&self, _ctx: &Context, _e: &Expr) -> Option<Expr> {
        None
    }

    /// Whether every object stored into an element of `root` (or into an object reachable
    /// from one) enters the region of at most one element, ever ([`regions`]). Defaults to
    /// false.
    fn region_disjoint(&self, _root: &regions::ArrayRoot) -> bool {
        false
    }

    /// Reasons the backend's results are less precise than usual (budget exhausted,
    /// fixpoint not reached), for the verdict's imprecision list.
    fn degradations(&self) -> Vec<String> {
        Vec::new()
    }

    /// Called after the thread-modular fixpoint: when the backend gave up precision in a way
    /// that a cheaper configuration may avoid (the value analysis with call-string contexts
    /// ran out of its budget), resets itself to that configuration and returns true; the
    /// fixpoint then runs again from the start. Defaults to false.
    fn retry_cheaper(&mut self) -> bool {
        false
    }

    /// Whether every answer is the same for all threads (queries' [`Context::thread`] is
    /// ignored): true of the syntactic backend and of a degraded value backend. The
    /// per-thread analyses then share one solution among threads with equal function
    /// contexts. Defaults to false.
    fn thread_independent(&self) -> bool {
        false
    }
}
