//! Race fixtures with inline expectations (`tests/fixtures/races/README.md` documents the marks):
//! each file is analysed (value backend unless its `ARGS:` line says `--backend syntactic`) and
//! every mark is checked against the report.

use racedar::frontend::{self, FrontendOptions};
use racedar::pipeline::{self, AnalysisOptions, BackendKind};
use racedar::report::Report;
use racedar::stats::RunStats;
use std::collections::BTreeSet;
use std::path::Path;

mod common;

/// Expectations read from a fixture.
#[derive(Default, Debug)]
struct Expect {
    verdict: Option<String>,
    context_depth: Option<usize>,
    syntactic: bool,
    concrete: bool,
    /// Extra model files (`--config FILE`), relative to the crate root.
    configs: Vec<String>,
    /// Library entries (`--entry FUNC`).
    entries: Vec<String>,
    must: BTreeSet<u32>,
    reported: BTreeSet<u32>,
    /// Lines with an access in a race of evidence `likely` or `certain`.
    likely: BTreeSet<u32>,
    not_must: BTreeSet<u32>,
    not_reported: BTreeSet<u32>,
}

fn expectations(src: &str) -> Expect {
    let mut e = Expect::default();
    for (i, line) in src.lines().enumerate() {
        let n = i as u32 + 1;
        let Some(comment) = line.split("//").nth(1) else {
            continue;
        };
        let words: Vec<&str> = comment.split_whitespace().collect();
        if let Some(v) = comment.trim().strip_prefix("VERDICT:") {
            e.verdict = Some(v.trim().to_string());
            continue;
        }
        if let Some(a) = comment.trim().strip_prefix("ARGS:") {
            let a: Vec<&str> = a.split_whitespace().collect();
            e.concrete |= a.contains(&"--concrete");
            for w in a.windows(2) {
                match w {
                    ["--context-depth", d] => e.context_depth = d.parse().ok(),
                    ["--backend", "syntactic"] => e.syntactic = true,
                    ["--config", f] => e.configs.push(f.to_string()),
                    ["--entry", f] => e.entries.push(f.to_string()),
                    _ => {}
                }
            }
            continue;
        }
        for w in words {
            match w {
                "RACE" => {
                    e.must.insert(n);
                }
                "MAYRACE" => {
                    e.reported.insert(n);
                }
                "LIKELY" => {
                    e.likely.insert(n);
                }
                "NOMUST" => {
                    e.not_must.insert(n);
                }
                "NORACE" => {
                    e.not_reported.insert(n);
                }
                _ => {}
            }
        }
    }
    e
}

/// Checks a fixture's marks; `concrete` overrides whether concrete witnesses are searched
/// (by default only when its `ARGS:` line says `--concrete`).
fn check_fixture(path: &Path, concrete: Option<bool>) -> Vec<String> {
    let rel = path
        .strip_prefix(env!("CARGO_MANIFEST_DIR"))
        .expect("fixture under the manifest dir")
        .to_path_buf();
    let src = std::fs::read_to_string(path).expect("readable fixture");
    let mut exp = expectations(&src);
    let concrete = concrete.unwrap_or(exp.concrete);
    if concrete && !exp.concrete {
        // Only what concrete witnesses can never change: lines that never race, and
        // race-free verdicts.
        exp.must.clear();
        exp.reported.clear();
        exp.likely.clear();
        exp.not_must.clear();
        if exp.verdict.as_deref() != Some("no-race") {
            exp.verdict = None;
        }
    }
    let (mut program, _) = frontend::load(std::slice::from_ref(&rel), &FrontendOptions::default())
        .unwrap_or_else(|e| panic!("{} does not lower: {e}", rel.display()));
    let mut model = racedar::model::Model::shipped();
    for f in &exp.configs {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        model
            .add_toml(f, &text)
            .unwrap_or_else(|e| panic!("{name}: {e}", name = rel.display()));
    }
    let opts = AnalysisOptions {
        model,
        context_depth: exp.context_depth.unwrap_or(1),
        backend: if exp.syntactic {
            BackendKind::Syntactic
        } else {
            BackendKind::Value
        },
        concrete,
        entries: exp.entries.clone(),
        ..Default::default()
    };
    let mut roles = opts.model.classify(&program);
    pipeline::prepare(&mut program, &mut roles, &opts);
    let analysis = pipeline::analyse(&program, &roles, &opts);
    let report = Report::build(&analysis, RunStats::default());
    let mut must_lines = BTreeSet::new();
    let mut any_lines = BTreeSet::new();
    let mut likely_lines = BTreeSet::new();
    for r in &report.races {
        for a in &r.accesses {
            any_lines.insert(a.line);
            if r.evidence != "possible" {
                likely_lines.insert(a.line);
            }
            if r.confidence == "must" {
                must_lines.insert(a.line);
            }
        }
    }
    let mut problems = Vec::new();
    let name = rel.display();
    if let Some(v) = &exp.verdict {
        let got = serde_json::to_value(report.verdict).expect("verdict serialises");
        if got.as_str() != Some(v.as_str()) {
            problems.push(format!("{name}: verdict {got}, expected {v}"));
        }
    }
    for l in &exp.must {
        if !must_lines.contains(l) {
            problems.push(format!("{name}:{l}: expected in a must race"));
        }
    }
    for l in &exp.reported {
        if !any_lines.contains(l) {
            problems.push(format!("{name}:{l}: expected in some race"));
        }
    }
    for l in &exp.likely {
        if !likely_lines.contains(l) {
            problems.push(format!(
                "{name}:{l}: expected in a likely (or certain) race"
            ));
        }
    }
    for l in &exp.not_must {
        if must_lines.contains(l) {
            problems.push(format!("{name}:{l}: reported in a must race"));
        }
    }
    for l in &exp.not_reported {
        if any_lines.contains(l) {
            problems.push(format!("{name}:{l}: reported, expected no race"));
        }
    }
    if !problems.is_empty() {
        problems.push(format!("{name}: report was {}", report.to_json()));
    }
    problems
}

/// The race fixtures, sorted by path.
fn fixture_files() -> Vec<std::path::PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/races");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    files.sort();
    files
}

/// [`check_fixture`], bounded in time ([`common::bounded`]).
fn check_fixture_bounded(path: &Path, concrete: Option<bool>) -> Vec<String> {
    let owned = path.to_path_buf();
    common::bounded(path, move || check_fixture(&owned, concrete))
}

#[test]
fn race_fixtures_meet_their_expectations() {
    let files = fixture_files();
    assert!(files.len() >= 20, "too few fixtures: {}", files.len());
    let mut problems = Vec::new();
    for f in &files {
        let src = std::fs::read_to_string(f).expect("readable");
        let e = expectations(&src);
        assert!(
            e.verdict.is_some()
                && !(e.must.is_empty()
                    && e.reported.is_empty()
                    && e.not_reported.is_empty()
                    && e.not_must.is_empty()),
            "{} has no expectations",
            f.display()
        );
        problems.extend(check_fixture_bounded(f, None));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Races witnessed by concrete executions never fall on lines that do not race, nor turn a
/// race-free fixture racy.
#[test]
fn concrete_witnesses_respect_every_fixture() {
    let files = fixture_files();
    let mut problems = Vec::new();
    for f in &files {
        problems.extend(check_fixture_bounded(f, Some(true)));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
