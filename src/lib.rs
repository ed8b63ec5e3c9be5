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
//! 3. Concurrency model, backends (syntactic, value analysis), thread-creation graph, lockset and
//!    may-happen-in-parallel analyses, race classification and reports follow in their own
//!    modules as they are built.
//!
//! Shared utilities: [`stats`] (time and peak memory of a run).

pub mod frontend;
pub mod ir;
pub mod report;
pub mod stats;
