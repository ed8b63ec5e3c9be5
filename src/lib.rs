#![warn(missing_docs)]
//! racedar: a static data-race and deadlock detector for C programs using POSIX threads.
//!
//! The pipeline (see `DESIGN.md` of the project) runs top to bottom, each phase asking the
//! earlier ones through their APIs:
//!
//! 1. [`frontend`]: preprocess, parse (lang-c) and lower C to the IR, with types and layouts for
//!    the ILP32 or LP64 data model.
//! 2. [`ir`]: the program as globals, functions with control-flow graphs of simple instructions,
//!    and interned types; `racedar dump-ir` prints it.
//! 3. [`model`]: the concurrency model (which calls lock, create, join, ...), from `config/*.toml`.
//! 4. [`backend`]: the sequential analysis of each thread, queried by every later phase
//!    (syntactic, or the value analysis of `backend::value`).
//! 5. [`threads`]: the thread-creation graph; [`context`]: analysis contexts (thread, call
//!    string, statement) and the per-thread context graph.
//! 6. [`lockset`] and [`mhp`]: locksets and active threads per context, both solved by the
//!    generic engine of [`dataflow`]; lockset facts carry branch [`guards`] on locals
//!    (conditional locking).
//! 7. [`races`]: accesses, escape, the access-state machine and may/must race classification;
//!    [`deadlocks`]: the lock-order graph from the locksets, its cycles and double locks.
//! 8. [`concrete`]: a concrete interpreter of the IR that witnesses races in real executions
//!    (deterministic schedules and inputs), turning possible races into certain ones.
//! 9. [`pipeline`] runs 3–8 and decides the verdict; [`report`] renders JSON, text and SARIF.
//!
//! Shared utilities: [`stats`] (time and peak memory of a run), [`stack`] (the large stack
//! the front end and the analysis run on).

pub mod backend;
pub mod changes;
pub mod concrete;
pub mod context;
pub mod counters;
pub mod dataflow;
pub mod deadlocks;
pub mod frontend;
pub mod guards;
pub mod ir;
pub mod lockset;
pub mod mhp;
pub mod model;
pub mod pipeline;
pub mod races;
pub mod report;
pub mod semaphores;
pub mod stack;
pub mod stats;
pub mod threads;
pub mod waits;
