//! Snapshots (insta) of the text, JSON and SARIF reports of a few race fixtures (one per
//! evidence tier: certain, likely, possible; a lock in a heap object; a thread started through
//! a trampoline), a deadlock fixture and a degraded run: the output
//! contracts of DESIGN.md pinned, so any change to them is reviewed.
//! Run-dependent parts are replaced: JSON `stats` (timings) and the absolute project root of
//! SARIF.

use assert_cmd::Command;

const FIXTURES: [&str; 8] = [
    "tests/fixtures/races/simple_lock.c",
    "tests/fixtures/races/conditional_lock.c",
    "tests/fixtures/races/both_locked.c",
    "tests/fixtures/races/evidence_likely.c",
    "tests/fixtures/races/evidence_possible.c",
    "tests/fixtures/races/heap_lock_named.c",
    "tests/fixtures/races/trampoline_thread.c",
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

/// A program creating more threads than the thread-creation graph holds: the analysis is
/// degraded, which the text says once at the top, JSON in `degraded` and SARIF in a
/// tool-execution notification.
#[test]
fn degraded_reports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut src = String::from(
        "#include <pthread.h>\nvoid *w(void *a) { return a; }\nint main(void) {\n  pthread_t t[300];\n",
    );
    for i in 0..300 {
        src.push_str(&format!("  pthread_create(&t[{i}], 0, w, 0);\n"));
    }
    src.push_str("  return 0;\n}\n");
    std::fs::write(dir.path().join("many_threads.c"), src).expect("write");
    let root = std::fs::canonicalize(dir.path()).expect("dir");
    let run_in = |format: &str| {
        let out = Command::cargo_bin("racedar")
            .expect("binary")
            .current_dir(dir.path())
            .args(["check", "--format", format, "many_threads.c"])
            .output()
            .expect("runs");
        String::from_utf8_lossy(&out.stdout)
            .replace(&format!("file://{}/", root.display()), "file://[root]/")
    };
    let text = run_in("text");
    assert!(
        text.starts_with("racedar: warning: results are less reliable: more than"),
        "{text}"
    );
    insta::assert_snapshot!("text@degraded", text);
    let mut v: serde_json::Value = serde_json::from_str(&run_in("json")).expect("json");
    v["stats"] = serde_json::Value::from("[stats]");
    assert_eq!(v["degraded"].as_array().map(Vec::len), Some(1), "{v}");
    insta::assert_snapshot!(
        "json@degraded",
        serde_json::to_string_pretty(&v).expect("serialises")
    );
    let sarif = run_in("sarif");
    let log: serde_json::Value = serde_json::from_str(&sarif).expect("sarif");
    let notes = &log["runs"][0]["invocations"][0]["toolExecutionNotifications"];
    assert_eq!(notes.as_array().map(Vec::len), Some(1), "{sarif}");
    insta::assert_snapshot!("sarif@degraded", sarif);
}
