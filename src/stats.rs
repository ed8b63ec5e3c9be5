//! Run statistics: wall time per phase and peak resident memory, for `--stats` and the JSON
//! report's `"stats"`.

use crate::frontend::FrontendStats;
use crate::ir::Program;
use std::time::Duration;

/// Peak resident set size of this process in bytes (`VmHWM` of `/proc/self/status`); `None`
/// where that file does not exist (not Linux).
pub fn peak_rss_bytes() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// Current resident set size of this process in bytes (`VmRSS` of `/proc/self/status`);
/// `None` where that file does not exist (not Linux).
pub fn current_rss_bytes() -> Option<u64> {
    status_bytes("VmRSS:")
}

/// A `kB` field of `/proc/self/status`, in bytes.
fn status_bytes(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    let kib: u64 = line
        .trim_start_matches(field)
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kib * 1024)
}

/// Phases ended so far in this process (the last [`MAX_RECORDED`]), in order: every
/// [`Phase::new`] records one, so a run stopped by a resource limit (`racedar check
/// --timeout`) can say how far it got.
static ENDED: std::sync::Mutex<Vec<Phase>> = std::sync::Mutex::new(Vec::new());

/// How many ended phases [`ended_phases`] keeps.
pub const MAX_RECORDED: usize = 64;

/// The phases ended so far in this process, oldest first (at most [`MAX_RECORDED`]; a
/// process analysing several programs sees theirs one after the other).
pub fn ended_phases() -> Vec<Phase> {
    ENDED.lock().map(|v| v.clone()).unwrap_or_default()
}

fn record(p: &Phase) {
    if let Ok(mut v) = ENDED.lock() {
        if v.len() >= MAX_RECORDED {
            v.remove(0);
        }
        v.push(p.clone());
    }
}

/// One timed phase.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Phase {
    /// Phase name (`preprocess`, `parse`, `lower`, ...).
    pub name: &'static str,
    /// Wall time in milliseconds.
    pub ms: f64,
    /// Peak resident memory of the process at the end of the phase, in MiB, when known.
    pub peak_rss_mib: Option<f64>,
}

impl Phase {
    /// A phase that took `d` and just ended (the process's peak memory is read now).
    /// The phase is recorded for [`ended_phases`].
    pub fn new(name: &'static str, d: Duration) -> Phase {
        let p = Phase {
            name,
            ms: d.as_secs_f64() * 1000.0,
            peak_rss_mib: peak_rss_bytes().map(|b| b as f64 / (1024.0 * 1024.0)),
        };
        record(&p);
        p
    }
}

/// Statistics of one run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct RunStats {
    /// Timed phases in pipeline order.
    pub phases: Vec<Phase>,
    /// Peak resident memory in MiB, when known.
    pub peak_rss_mib: Option<f64>,
    /// Translation units analysed.
    pub units: usize,
    /// Bytes of preprocessed source.
    pub preprocessed_bytes: usize,
    /// Functions with a body.
    pub functions: usize,
    /// CFG edges over all functions.
    pub edges: usize,
}

/// The larger of two optional memory figures.
fn max_mib(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    }
}

impl RunStats {
    /// Adds another program's statistics to these (a database with several programs): counts
    /// and phase times add up (per phase name), memory is the larger peak.
    pub fn add(&mut self, o: &RunStats) {
        for ph in &o.phases {
            match self.phases.iter_mut().find(|p| p.name == ph.name) {
                Some(p) => {
                    p.ms += ph.ms;
                    p.peak_rss_mib = max_mib(p.peak_rss_mib, ph.peak_rss_mib);
                }
                None => self.phases.push(ph.clone()),
            }
        }
        self.peak_rss_mib = max_mib(self.peak_rss_mib, o.peak_rss_mib);
        self.units += o.units;
        self.preprocessed_bytes += o.preprocessed_bytes;
        self.functions += o.functions;
        self.edges += o.edges;
    }

    /// The statistics of a front-end run: its phases and the size of the lowered program.
    pub fn from_frontend(fs: &FrontendStats, program: &Program) -> RunStats {
        let bodies = program.functions.iter().filter_map(|f| f.body.as_ref());
        RunStats {
            phases: vec![
                Phase::new("preprocess", fs.preprocess),
                Phase::new("parse", fs.parse),
                Phase::new("lower", fs.lower),
            ],
            peak_rss_mib: None,
            units: fs.units,
            preprocessed_bytes: fs.preprocessed_bytes,
            functions: bodies.clone().count(),
            edges: bodies.map(|c| c.edges.len()).sum(),
        }
    }

    /// Renders the statistics as lines for stderr.
    pub fn render(&self) -> String {
        let mut s = String::new();
        // (+ 0.0: an empty sum is -0.0.)
        let total: f64 = self.phases.iter().map(|p| p.ms).sum::<f64>() + 0.0;
        for p in &self.phases {
            s.push_str(&format!(
                "racedar: stats: {:<12} {:>9.2} ms\n",
                p.name, p.ms
            ));
        }
        s.push_str(&format!(
            "racedar: stats: {:<12} {:>9.2} ms\n",
            "total", total
        ));
        if self.units > 0 {
            s.push_str(&format!(
                "racedar: stats: {} unit(s), {} bytes preprocessed, {} functions, {} CFG edges\n",
                self.units, self.preprocessed_bytes, self.functions, self.edges
            ));
        }
        if let Some(m) = self.peak_rss_mib {
            s.push_str(&format!("racedar: stats: peak RSS {m:.1} MiB\n"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn peak_rss_is_readable_on_linux() {
        if std::path::Path::new("/proc/self/status").exists() {
            assert!(super::peak_rss_bytes().is_some_and(|b| b > 0));
        }
    }
}
