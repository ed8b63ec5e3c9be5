//! Helpers shared by the integration-test binaries (each binary uses some of them).
#![allow(dead_code)]

pub mod corpus;

/// Wall-clock bound of one fixture's analysis (each takes well under a second): past it the
/// fixture is reported as not terminating instead of holding the whole suite until CI's limit
/// (a fixpoint that never ends, as the active-threads analysis once did).
pub const FIXTURE_BOUND: std::time::Duration = std::time::Duration::from_secs(120);

/// Runs `check` (a fixture's checks, giving its problems) on a thread of its own, bounded by
/// [`FIXTURE_BOUND`]: a run that does not end in time, or panics, is one problem naming
/// `fixture` (a runaway run goes on in the background until the test process exits).
pub fn bounded(
    fixture: &std::path::Path,
    check: impl FnOnce() -> Vec<String> + Send + 'static,
) -> Vec<String> {
    use std::sync::mpsc::{RecvTimeoutError, channel};
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(check());
    });
    match rx.recv_timeout(FIXTURE_BOUND) {
        Ok(problems) => problems,
        Err(RecvTimeoutError::Timeout) => vec![format!(
            "{}: the analysis did not end within {} s",
            fixture.display(),
            FIXTURE_BOUND.as_secs()
        )],
        Err(RecvTimeoutError::Disconnected) => {
            vec![format!("{}: the analysis panicked", fixture.display())]
        }
    }
}
