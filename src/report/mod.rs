//! Reports: the JSON contract of `DESIGN.md` ("Output contracts"), text summaries.
//!
//! Until the race analysis exists, a check reports verdict `unknown` with the reason in
//! `imprecision`; the shape of the JSON object is already the final one, so the corpus scorer
//! can run racedar end to end.

use crate::stats::RunStats;
use serde::Serialize;

/// The data-race verdict of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// A must-race was found.
    Race,
    /// The over-approximating analysis found no may-race.
    NoRace,
    /// Neither could be established (see `imprecision`).
    Unknown,
}

/// The JSON report (`--format json`).
#[derive(Clone, Debug, Serialize)]
pub struct JsonReport {
    /// Verdict.
    pub verdict: Verdict,
    /// Races found (empty until the race analysis exists).
    pub races: Vec<serde_json::Value>,
    /// Reasons the verdict is not definite, sorted.
    pub imprecision: Vec<String>,
    /// Timings and counts.
    pub stats: RunStats,
}

impl JsonReport {
    /// Serialises the report as one line of JSON.
    pub fn to_json(&self) -> String {
        // Serialising plain data structs cannot fail.
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }
}
