//! Suppressions and baselines (`notes/ecosystem.md` §3: the conventions of cppcheck,
//! clang-tidy, Infer and ThreadSanitizer).
//!
//! - `racedar-ignore[data-race]: reason` (or `racedar-ignore: reason`) in a comment on the line
//!   of either access of a race's racing pair (its first two accesses) suppresses that race
//!   (`inSource`, the reason as justification); the further accesses a race lists do not;
//! - `racedar-ignore-file` in a comment anywhere in a file suppresses every race with an access
//!   in that file;
//! - a baseline (`--write-baseline FILE`, then `--baseline FILE`) lists fingerprints (see
//!   [`super::sarif::fingerprint`]) and, per fingerprint, the accesses the race had (function,
//!   kind, expression and lockset: line-independent); a race is suppressed (`external`) when
//!   the baseline lists its fingerprint and every access it has now: a new access to an old
//!   variable (a write whose lock was removed, say) makes the race new again, although its
//!   racing pair, and so its fingerprint, is the old one.
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

/// A baseline file: the fingerprints of accepted races and, per fingerprint, the keys of their
/// accesses ([`access_key`]) (JSON `{"version": 2, "fingerprints": [...], "accesses": {fp:
/// [...]}}`; a version-1 file without `accesses` matches by fingerprint alone).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Baseline {
    /// Format version (1).
    pub version: u32,
    /// Fingerprints, sorted.
    pub fingerprints: BTreeSet<String>,
    /// Per fingerprint, the keys of the race's accesses when the baseline was written.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub accesses: BTreeMap<String, BTreeSet<String>>,
}

impl Baseline {
    /// The baseline of every race of a report (suppressed ones included).
    pub fn of(report: &Report) -> Baseline {
        Baseline {
            version: 2,
            fingerprints: report.races.iter().map(super::sarif::fingerprint).collect(),
            accesses: report
                .races
                .iter()
                .map(|r| {
                    (
                        super::sarif::fingerprint(r),
                        r.accesses.iter().map(access_key).collect(),
                    )
                })
                .collect(),
        }
    }

    /// Reads a baseline file. Errors: unreadable or not a baseline (one line, for exit 2).
    pub fn read(path: &std::path::Path) -> Result<Baseline, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: cannot read baseline: {e}", path.display()))?;
        serde_json::from_str(&text)
            .map_err(|e| format!("{}: not a racedar baseline: {e}", path.display()))
    }

    /// Whether the baseline accepts `race`: its fingerprint is listed and, when the baseline
    /// recorded the race's accesses, it has no access the baselined race did not have.
    pub fn covers(&self, race: &RaceReport) -> bool {
        let fp = super::sarif::fingerprint(race);
        self.fingerprints.contains(&fp)
            && self
                .accesses
                .get(&fp)
                .is_none_or(|old| race.accesses.iter().all(|a| old.contains(&access_key(a))))
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
            baseline.filter(|b| b.covers(race)).map(|_| Suppressed {
                kind: "external",
                justification: "in the baseline".to_string(),
            })
        });
    }
}

/// The line-independent key of an access in a baseline: function, kind, expression and the
/// locks held.
fn access_key(a: &super::AccessReport) -> String {
    format!(
        "{}|{}|{}|{}",
        a.function,
        a.kind,
        a.expression,
        a.lockset.join(",")
    )
}

fn in_source(files: &mut Files, race: &RaceReport) -> Option<Suppressed> {
    // The racing pair only: a comment on a line the race merely lists among further accesses
    // is about another race.
    for a in race.accesses.iter().take(2) {
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
