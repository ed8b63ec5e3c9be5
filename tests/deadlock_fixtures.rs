//! Deadlock fixtures with inline expectations (`tests/fixtures/deadlocks/README.md` documents
//! the marks): each file is analysed with the value backend and every mark is checked against
//! the report's deadlocks.

use racedar::frontend::{self, FrontendOptions};
use racedar::pipeline::{self, AnalysisOptions};
use racedar::report::Report;
use racedar::stats::RunStats;
use std::collections::BTreeSet;
use std::path::Path;

mod common;

/// Expectations read from a fixture.
#[derive(Default, Debug)]
struct Expect {
    deadlock: Option<bool>,
    must: BTreeSet<u32>,
    reported: BTreeSet<u32>,
    not_must: BTreeSet<u32>,
    not_reported: BTreeSet<u32>,
    double: BTreeSet<u32>,
}

fn expectations(src: &str) -> Expect {
    let mut e = Expect::default();
    for (i, line) in src.lines().enumerate() {
        let n = i as u32 + 1;
        let Some(comment) = line.split("//").nth(1) else {
            continue;
        };
        if let Some(v) = comment.trim().strip_prefix("EXPECT:") {
            e.deadlock = match v.trim() {
                "deadlock" => Some(true),
                "no-deadlock" => Some(false),
                other => panic!("line {n}: unknown expectation {other}"),
            };
            continue;
        }
        for w in comment.split_whitespace() {
            match w {
                "DEADLOCK" => {
                    e.must.insert(n);
                }
                "MAYDEADLOCK" => {
                    e.reported.insert(n);
                }
                "NOMUST" => {
                    e.not_must.insert(n);
                }
                "NODEADLOCK" => {
                    e.not_reported.insert(n);
                }
                "DOUBLELOCK" => {
                    e.double.insert(n);
                }
                _ => {}
            }
        }
    }
    e
}

fn check_fixture(path: &Path) -> Vec<String> {
    let rel = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .expect("fixture under the manifest dir")
        .to_path_buf();
    let src = std::fs::read_to_string(path).expect("readable fixture");
    let exp = expectations(&src);
    let (mut program, _) = frontend::load(std::slice::from_ref(&rel), &FrontendOptions::default())
        .unwrap_or_else(|e| panic!("{} does not lower: {e}", rel.display()));
    let opts = AnalysisOptions::default();
    let mut roles = opts.model.classify(&program);
    pipeline::prepare(&mut program, &mut roles, &opts);
    let analysis = pipeline::analyse(&program, &roles, &opts);
    let report = Report::build(&analysis, RunStats::default());
    let deadlocks = report.deadlocks.clone().unwrap_or_default();
    let (mut must_lines, mut any_lines, mut double_lines) =
        (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
    for d in &deadlocks {
        for s in &d.cycle {
            for l in [s.acquire.line, s.while_holding.line] {
                any_lines.insert(l);
                if d.confidence == "must" {
                    must_lines.insert(l);
                }
                if d.cycle.len() == 1 {
                    double_lines.insert(l);
                }
            }
        }
    }
    let mut problems = Vec::new();
    let name = rel.display();
    if let Some(want) = exp.deadlock
        && want == deadlocks.is_empty()
    {
        problems.push(format!(
            "{name}: {} deadlocks reported, expected {}",
            deadlocks.len(),
            if want { "some" } else { "none" }
        ));
    }
    let checks: [(&BTreeSet<u32>, &BTreeSet<u32>, bool, &str); 5] = [
        (&exp.must, &must_lines, true, "expected in a must deadlock"),
        (&exp.reported, &any_lines, true, "expected in some deadlock"),
        (
            &exp.double,
            &double_lines,
            true,
            "expected in a double lock",
        ),
        (
            &exp.not_must,
            &must_lines,
            false,
            "reported in a must deadlock",
        ),
        (
            &exp.not_reported,
            &any_lines,
            false,
            "reported, expected no deadlock",
        ),
    ];
    for (lines, got, wanted, what) in checks {
        for l in lines {
            if got.contains(l) != wanted {
                problems.push(format!("{name}:{l}: {what}"));
            }
        }
    }
    if !problems.is_empty() {
        problems.push(format!("{name}: report was {}", report.to_json()));
    }
    problems
}

#[test]
fn deadlock_fixtures_meet_their_expectations() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/deadlocks");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    files.sort();
    assert!(files.len() >= 15, "too few fixtures: {}", files.len());
    let mut problems = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).expect("readable");
        let e = expectations(&src);
        assert!(e.deadlock.is_some(), "{} has no EXPECT line", f.display());
        let owned = f.clone();
        problems.extend(common::bounded(f, move || check_fixture(&owned)));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_deadlocks_turns_the_detector_off() {
    let rel = Path::new("tests/fixtures/deadlocks/abba_accounts.c");
    let (mut program, _) =
        frontend::load(&[rel.to_path_buf()], &FrontendOptions::default()).expect("lowers");
    let opts = AnalysisOptions {
        deadlocks: false,
        ..AnalysisOptions::default()
    };
    let mut roles = opts.model.classify(&program);
    pipeline::prepare(&mut program, &mut roles, &opts);
    let analysis = pipeline::analyse(&program, &roles, &opts);
    let report = Report::build(&analysis, RunStats::default());
    assert!(report.deadlocks.is_none());
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).expect("json");
    assert!(json.get("deadlocks").is_none());
}
