//! Running the front end and the analysis on a thread with a large stack.
//!
//! Parsing (lang-c's recursive-descent parser) and lowering recurse over the syntax tree, so
//! generated code that nests very deeply (thousands of levels of parentheses, blocks or
//! `a + a + ...` chains) needs more stack than a default thread has. The CLI, the fuzz targets
//! and the robustness tests all run racedar through [`run`], so they fail (or not) alike.

/// Stack size of the worker thread [`run`] starts: 512 MiB of address space (only the pages
/// used are committed).
pub const STACK_BYTES: usize = 512 << 20;

/// Runs `f` on a new thread named `racedar` with a [`STACK_BYTES`] stack and returns its
/// result.
///
/// Errors: the thread could not be started (the `io::Error`). A panic of `f` is resumed on the
/// calling thread.
pub fn run<T: Send>(f: impl FnOnce() -> T + Send) -> std::io::Result<T> {
    std::thread::scope(|s| {
        let handle = std::thread::Builder::new()
            .name("racedar".into())
            .stack_size(STACK_BYTES)
            .spawn_scoped(s, f)?;
        match handle.join() {
            Ok(v) => Ok(v),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
