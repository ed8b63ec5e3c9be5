//! Snapshots (insta) of the text, JSON and SARIF reports of a few race fixtures and a deadlock
//! fixture: the output contracts of DESIGN.md pinned, so any change to them is reviewed.
//! Run-dependent parts are replaced: JSON `stats` (timings) and the absolute project root of
//! SARIF.

use assert_cmd::Command;

const FIXTURES: [&str; 4] = [
    "tests/fixtures/races/simple_lock.c",
    "tests/fixtures/races/conditional_lock.c",
    "tests/fixtures/races/both_locked.c",
    "tests/fixtures/deadlocks/abba_accounts.c",
];

fn run(format: &str, file: &str) -> String {
    let out = Command::cargo_bin("racedar")
        .expect("binary")
        .args(["check", "--format", format, file])
        .output()
        .expect("runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn name(file: &str) -> &str {
    file.rsplit('/').next().unwrap_or(file)
}

#[test]
fn text_reports() {
    for f in FIXTURES {
        insta::assert_snapshot!(format!("text@{}", name(f)), run("text", f));
    }
}

#[test]
fn json_reports() {
    for f in FIXTURES {
        let mut v: serde_json::Value = serde_json::from_str(&run("json", f)).expect("json");
        v["stats"] = serde_json::Value::from("[stats]");
        let pretty = serde_json::to_string_pretty(&v).expect("serialises");
        insta::assert_snapshot!(format!("json@{}", name(f)), pretty);
    }
}

#[test]
fn sarif_reports() {
    let root = std::fs::canonicalize(".").expect("cwd");
    for f in FIXTURES {
        let text =
            run("sarif", f).replace(&format!("file://{}/", root.display()), "file://[root]/");
        insta::assert_snapshot!(format!("sarif@{}", name(f)), text);
    }
}
