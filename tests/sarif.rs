//! SARIF output: every log validates against the official SARIF 2.1.0 JSON schema
//! (`tests/fixtures/sarif/sarif-schema-2.1.0.json`, from OASIS), and carries what GitHub code
//! scanning reads (`notes/ecosystem.md` §2.1).

use assert_cmd::Command;
use serde_json::Value;

const SCHEMA_URL: &str = "https://raw.githubusercontent.com/oasis-tcs/sarif-spec/master/Schemata/sarif-schema-2.1.0.json";

fn sarif_of(file: &str) -> Value {
    let out = Command::cargo_bin("racedar")
        .expect("binary")
        .args(["check", "--format", "sarif", file])
        .output()
        .expect("runs");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "exit {:?}",
        out.status
    );
    serde_json::from_slice(&out.stdout).expect("SARIF is JSON")
}

/// The official schema, compiled with format assertions.
fn schema() -> (boon::Schemas, boon::SchemaIndex) {
    let text = std::fs::read_to_string("tests/fixtures/sarif/sarif-schema-2.1.0.json")
        .expect("schema file");
    let schema: Value = serde_json::from_str(&text).expect("schema is JSON");
    let mut compiler = boon::Compiler::new();
    compiler.enable_format_assertions();
    compiler
        .add_resource(SCHEMA_URL, schema)
        .expect("schema added");
    let mut schemas = boon::Schemas::new();
    let idx = compiler
        .compile(SCHEMA_URL, &mut schemas)
        .expect("schema compiles");
    (schemas, idx)
}

fn validate(log: &Value) {
    let (schemas, idx) = schema();
    if let Err(e) = schemas.validate(log, idx) {
        panic!("SARIF log does not validate: {e:#}");
    }
}

#[test]
fn sarif_of_racy_and_clean_fixtures_validates() {
    for f in [
        "tests/fixtures/races/simple_lock.c",
        "tests/fixtures/races/conditional_lock.c",
        "tests/fixtures/races/grandchild.c",
        "tests/fixtures/races/both_locked.c",
    ] {
        validate(&sarif_of(f));
    }
}

#[test]
fn the_schema_check_rejects_a_broken_log() {
    let mut log = sarif_of("tests/fixtures/races/simple_lock.c");
    log["runs"][0]["results"][0]["level"] = Value::from("fatal");
    let (schemas, idx) = schema();
    assert!(schemas.validate(&log, idx).is_err());
}

#[test]
fn a_race_result_has_what_code_scanning_reads() {
    let log = sarif_of("tests/fixtures/races/simple_lock.c");
    assert_eq!(log["version"], "2.1.0");
    let run = &log["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "racedar");
    assert_eq!(run["tool"]["driver"]["rules"][0]["id"], "racedar/data-race");
    assert!(
        run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
            .as_str()
            .is_some_and(|u| u.starts_with("file://") && u.ends_with('/'))
    );
    let r = &run["results"][0];
    assert_eq!(r["ruleId"], "racedar/data-race");
    // simple_lock.c has a must-race: level error.
    assert_eq!(r["level"], "error");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(
        loc["artifactLocation"]["uri"],
        "tests/fixtures/races/simple_lock.c"
    );
    assert_eq!(loc["artifactLocation"]["uriBaseId"], "%SRCROOT%");
    assert!(loc["region"]["startLine"].as_i64().is_some_and(|l| l > 0));
    // The other access is related location 1, referenced from the message.
    assert_eq!(r["relatedLocations"][0]["id"], 1);
    assert!(
        r["message"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("](1)"))
    );
    // One code flow with a thread flow per access.
    assert_eq!(
        r["codeFlows"][0]["threadFlows"].as_array().map(Vec::len),
        Some(2)
    );
    let fp = &r["partialFingerprints"];
    assert!(fp["racedar/v1"].as_str().is_some_and(|s| s.len() == 16));
    assert!(
        fp["primaryLocationLineHash"]
            .as_str()
            .is_some_and(|s| s.contains(':'))
    );
}

#[test]
fn likely_races_are_warnings_and_possible_ones_notes() {
    for (file, evidence, level) in [
        (
            "tests/fixtures/races/evidence_likely.c",
            "likely",
            "warning",
        ),
        (
            "tests/fixtures/races/evidence_possible.c",
            "possible",
            "note",
        ),
        ("tests/fixtures/races/simple_lock.c", "certain", "error"),
    ] {
        let log = sarif_of(file);
        let results = log["runs"][0]["results"].as_array().expect("results");
        assert!(!results.is_empty(), "{file}");
        for r in results {
            assert_eq!(r["level"], level, "{file}");
            assert_eq!(r["properties"]["evidence"], evidence, "{file}");
        }
    }
}

#[test]
fn fingerprints_do_not_depend_on_lines() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = std::fs::read_to_string("tests/fixtures/races/simple_lock.c").expect("fixture");
    let a = dir.path().join("a.c");
    let b = dir.path().join("b.c");
    std::fs::write(&a, &src).expect("write");
    std::fs::write(&b, format!("\n\n/* moved */\n{src}")).expect("write");
    let fp = |p: &std::path::Path| {
        let out = Command::cargo_bin("racedar")
            .expect("binary")
            .args(["check", "--format", "json"])
            .arg(p)
            .output()
            .expect("runs");
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["races"][0]["fingerprint"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let (fa, fb) = (fp(&a), fp(&b));
    assert!(!fa.is_empty());
    assert_eq!(fa, fb);
}

#[test]
fn a_deadlock_result_has_a_thread_flow_per_step() {
    let log = sarif_of("tests/fixtures/deadlocks/abba_accounts.c");
    validate(&log);
    let run = &log["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().expect("rules");
    assert!(rules.iter().any(|r| r["id"] == "racedar/deadlock"));
    let results = run["results"].as_array().expect("results");
    let d = results
        .iter()
        .find(|r| r["ruleId"] == "racedar/deadlock")
        .expect("a deadlock result");
    // The rule index points at the deadlock rule.
    let idx = d["ruleIndex"].as_u64().expect("rule index") as usize;
    assert_eq!(rules[idx]["id"], "racedar/deadlock");
    assert_eq!(d["level"], "error");
    assert_eq!(
        d["codeFlows"][0]["threadFlows"].as_array().map(Vec::len),
        Some(2)
    );
    // Both lock calls of both steps are related locations.
    assert_eq!(d["relatedLocations"].as_array().map(Vec::len), Some(4));
    assert!(
        d["partialFingerprints"]["racedar/v1"]
            .as_str()
            .is_some_and(|s| s.len() == 16)
    );
}
