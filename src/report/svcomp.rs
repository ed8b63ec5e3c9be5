//! SV-COMP runs (`notes/ecosystem.md` §5): the property check, the verdict line and the
//! violation witness.
//!
//! The verdict is the combined one (DESIGN.md "Output contracts"): `true` only when no race is
//! possible, `false(no-data-race)` only on a must-race, `unknown` otherwise. A `false` verdict
//! comes with a violation witness in the YAML format 2.0 of the SV-COMP witness rules: one
//! `violation_sequence` whose last segment holds the two racing accesses as `target`
//! waypoints (the concurrency extension's way to name a data race).

use super::{Report, Verdict};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::Path;

/// The specification text of the no-data-race property.
pub const NO_DATA_RACE: &str = "CHECK( init(main()), LTL(G ! data-race) )";

/// Whether a property file's text is the no-data-race property (whitespace ignored).
pub fn is_no_data_race(property: &str) -> bool {
    let squeeze = |s: &str| s.chars().filter(|c| !c.is_whitespace()).collect::<String>();
    let p = squeeze(property);
    !p.is_empty() && p == squeeze(NO_DATA_RACE)
}

/// The verdict string of an SV-COMP run.
pub fn result(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Race => "false(no-data-race)",
        Verdict::NoRace => "true",
        Verdict::Unknown => "unknown",
    }
}

/// The last line of an SV-COMP run.
pub fn result_line(verdict: Verdict) -> String {
    format!("SV-COMP result: {}", result(verdict))
}

#[derive(Serialize)]
struct Entry {
    entry_type: &'static str,
    metadata: Metadata,
    content: Vec<SegmentItem>,
}

#[derive(Serialize)]
struct Metadata {
    format_version: &'static str,
    uuid: String,
    creation_time: String,
    producer: Producer,
    task: Task,
}

#[derive(Serialize)]
struct Producer {
    name: &'static str,
    version: &'static str,
}

#[derive(Serialize)]
struct Task {
    input_files: Vec<String>,
    input_file_hashes: std::collections::BTreeMap<String, String>,
    specification: &'static str,
    data_model: String,
    language: &'static str,
}

#[derive(Serialize)]
struct SegmentItem {
    segment: Vec<WaypointItem>,
}

#[derive(Serialize)]
struct WaypointItem {
    waypoint: Waypoint,
}

#[derive(Serialize)]
struct Waypoint {
    #[serde(rename = "type")]
    kind: &'static str,
    action: &'static str,
    location: WitnessLocation,
}

#[derive(Serialize)]
struct WitnessLocation {
    file_name: String,
    line: u32,
    column: u32,
}

/// The violation witness of a report with a must-race, as YAML (`None` without one).
/// `inputs` are the task files (hashed with SHA-256), `data_model` `ILP32` or `LP64`.
pub fn witness(report: &Report, inputs: &[&Path], data_model: &str) -> Option<String> {
    let race = report.races.iter().find(|r| r.confidence == "must")?;
    let mut hashes = std::collections::BTreeMap::new();
    let mut names = Vec::new();
    for p in inputs {
        let name = p.display().to_string();
        if let Ok(bytes) = std::fs::read(p) {
            let digest = Sha256::digest(&bytes);
            hashes.insert(name.clone(), hex(&digest));
        }
        names.push(name);
    }
    let targets = race
        .accesses
        .iter()
        .take(2)
        .map(|a| WaypointItem {
            waypoint: Waypoint {
                kind: "target",
                action: "follow",
                location: WitnessLocation {
                    file_name: a.file.clone(),
                    line: a.line,
                    column: a.column,
                },
            },
        })
        .collect();
    // A name-based UUID (version 5 layout) from the task hashes and the race.
    let seed = format!(
        "{}|{}",
        hashes.values().cloned().collect::<Vec<_>>().join(","),
        race.fingerprint
    );
    let h = Sha256::digest(seed.as_bytes());
    let uuid = format!(
        "{}-{}-5{}-{:x}{}-{}",
        hex(&h[0..4]),
        hex(&h[4..6]),
        &hex(&h[6..8])[1..],
        (h[8] & 0x3) | 0x8,
        &hex(&h[8..10])[1..],
        hex(&h[10..16])
    );
    let entry = Entry {
        entry_type: "violation_sequence",
        metadata: Metadata {
            format_version: "2.0",
            uuid,
            creation_time: humantime::format_rfc3339_seconds(std::time::SystemTime::now())
                .to_string(),
            producer: Producer {
                name: "racedar",
                version: env!("CARGO_PKG_VERSION"),
            },
            task: Task {
                input_files: names,
                input_file_hashes: hashes,
                specification: NO_DATA_RACE,
                data_model: data_model.to_string(),
                language: "C",
            },
        },
        content: vec![SegmentItem { segment: targets }],
    };
    serde_yaml_ng::to_string(&vec![entry]).ok()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn only_the_no_data_race_property_is_recognised() {
        assert!(super::is_no_data_race(
            "CHECK( init(main()), LTL(G ! data-race) )\n"
        ));
        assert!(super::is_no_data_race(
            "CHECK(init(main()),LTL(G ! data-race))"
        ));
        assert!(!super::is_no_data_race(
            "CHECK( init(main()), LTL(G ! call(reach_error())) )"
        ));
        assert!(!super::is_no_data_race(""));
    }
}
