//! Suppressions and baselines (`notes/ecosystem.md` §3: the conventions of cppcheck,
//! clang-tidy, Infer and ThreadSanitizer).
//!
//! - `racedar-ignore[data-race]: reason` (or `racedar-ignore: reason`) in a comment on the line
//!   of either racing access suppresses that race (`inSource`, the reason as justification);
//! - `racedar-ignore-file` in a comment anywhere in a file suppresses every race with an access
//!   in that file;
//! - a baseline (`--write-baseline FILE`, then `--baseline FILE`) lists fingerprints (see
//!   [`super::sarif::fingerprint`]); races whose fingerprint it lists are suppressed
//!   (`external`).
//!
//! Suppressed races stay in JSON and SARIF, marked; the text report and the exit code ignore
//! them.

use super::{RaceReport, Report};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};

/// Why a race is suppressed.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Suppressed {
    /// SARIF suppression kind: `inSource` (a comment) or `external` (a baseline).
    pub kind: &'static str,
    /// The reason given in the comment, or which baseline.
    pub justification: String,
}

/// The rule names an ignore comment may list for races.
const RULE_NAMES: [&str; 2] = ["data-race", "racedar/data-race"];

/// What an ignore comment on a line says: `Some(reason)` when it suppresses data races.
fn line_ignores(line: &str) -> Option<String> {
    let at = line.find("racedar-ignore")?;
    let rest = &line[at + "racedar-ignore".len()..];
    if rest.starts_with("-file") {
        return None;
    }
    let rest = match rest.strip_prefix('[') {
        Some(r) => {
            let end = r.find(']')?;
            let rules = &r[..end];
            let listed = rules
                .split(',')
                .map(str::trim)
                .any(|x| RULE_NAMES.contains(&x));
            if !listed {
                return None;
            }
            &r[end + 1..]
        }
        None => rest,
    };
    let reason = rest
        .trim_start_matches(':')
        .trim()
        .trim_end_matches("*/")
        .trim();
    Some(if reason.is_empty() {
        "suppressed in source".to_string()
    } else {
        reason.to_string()
    })
}

/// A source file of a report, read once: its lines and whether it is ignored as a whole.
struct Source {
    lines: Vec<String>,
    ignore_file: bool,
}

/// The source files of a report, read once.
#[derive(Default)]
struct Files {
    text: BTreeMap<String, Option<Source>>,
}

impl Files {
    fn get(&mut self, file: &str) -> Option<&Source> {
        self.text
            .entry(file.to_string())
            .or_insert_with(|| {
                std::fs::read_to_string(file).ok().map(|t| Source {
                    ignore_file: t.contains("racedar-ignore-file"),
                    lines: t.lines().map(str::to_string).collect(),
                })
            })
            .as_ref()
    }
}

/// A baseline file: the fingerprints of accepted races (JSON `{"version": 1, "fingerprints":
/// [...]}`).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Baseline {
    /// Format version (1).
    pub version: u32,
    /// Fingerprints, sorted.
    pub fingerprints: BTreeSet<String>,
}

impl Baseline {
    /// The baseline of every race of a report (suppressed ones included).
    pub fn of(report: &Report) -> Baseline {
        Baseline {
            version: 1,
            fingerprints: report.races.iter().map(super::sarif::fingerprint).collect(),
        }
    }

    /// Reads a baseline file. Errors: unreadable or not a baseline (one line, for exit 2).
    pub fn read(path: &std::path::Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read baseline: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a racedar baseline: {e}", path.display()))
    }

    /// The baseline as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

/// Marks the suppressed races of `report`: by comments in the sources of their accesses, and
/// by `baseline` when given.
pub fn apply(report: &mut Report, baseline: Option<&Baseline>) {
    let mut files = Files::default();
    for race in &mut report.races {
        race.suppressed = in_source(&mut files, race).or_else(|| {
            baseline
                .filter(|b| b.fingerprints.contains(&super::sarif::fingerprint(race)))
                .map(|_| Suppressed {
                    kind: "external",
                    justification: "in the baseline".to_string(),
                })
        });
    }
}

fn in_source(files: &mut Files, race: &RaceReport) -> Option<Suppressed> {
    for a in &race.accesses {
        let Some(src) = files.get(&a.file) else {
            continue;
        };
        if src.ignore_file {
            return Some(Suppressed {
                kind: "inSource",
                justification: format!("racedar-ignore-file in {}", a.file),
            });
        }
        let line = (a.line as usize)
            .checked_sub(1)
            .and_then(|i| src.lines.get(i));
        if let Some(reason) = line.and_then(|l| line_ignores(l)) {
            return Some(Suppressed {
                kind: "inSource",
                justification: reason,
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::line_ignores;

    #[test]
    fn ignore_comments_name_the_rule_or_nothing() {
        assert_eq!(
            line_ignores("  g++; // racedar-ignore[data-race]: counter is approximate"),
            Some("counter is approximate".to_string())
        );
        assert_eq!(
            line_ignores("g++; /* racedar-ignore */"),
            Some("suppressed in source".to_string())
        );
        assert_eq!(
            line_ignores("g++; // racedar-ignore[deadlock]: other rule"),
            None
        );
        assert_eq!(line_ignores("g++; // racedar-ignore-file"), None);
        assert_eq!(line_ignores("g++;"), None);
    }
}
