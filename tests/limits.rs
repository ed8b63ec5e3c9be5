//! Resource limits of `racedar check` (`--timeout`, `--max-memory`): a run that reaches one
//! ends with verdict `unknown`, the reason (JSON `imprecision` and `stopped`, the text summary
//! line, a SARIF tool execution notification) and exit code 3 (0 with `--svcomp`), never a
//! kill; a run within its limits is unchanged.

use assert_cmd::Command;
use std::path::{Path, PathBuf};

fn racedar() -> Command {
    Command::cargo_bin("racedar").expect("binary built")
}

/// Writes a generated program of `modules` modules (each a lock, shared counters and four
/// functions, about 30 lines) and four worker threads into `dir`.
fn big_program(dir: &Path, modules: usize) -> PathBuf {
    let mut c = String::from("#include <pthread.h>\n");
    for m in 0..modules {
        c.push_str(&format!(
            "pthread_mutex_t lock_{m} = PTHREAD_MUTEX_INITIALIZER;\n\
             int shared_{m};\nlong stat_{m};\n\
             static int helper_{m}(int x) {{\n  int acc = 0;\n  int i;\n\
             \x20 for (i = 0; i < (x & 7); i++) {{\n    acc += i * 3;\n  }}\n  return acc;\n}}\n\
             void update_{m}(int v) {{\n  pthread_mutex_lock(&lock_{m});\n\
             \x20 shared_{m} += v;\n  pthread_mutex_unlock(&lock_{m});\n}}\n\
             int query_{m}(void) {{\n  int v;\n  pthread_mutex_lock(&lock_{m});\n\
             \x20 v = shared_{m};\n  pthread_mutex_unlock(&lock_{m});\n  return v;\n}}\n\
             void run_{m}(int seed) {{\n  update_{m}(helper_{m}(seed));\n\
             \x20 if (query_{m}() > 10) {{\n    stat_{m}++;\n  }}\n}}\n"
        ));
    }
    for t in 0..4 {
        c.push_str(&format!("void *worker_{t}(void *arg) {{\n"));
        for m in (t..modules).step_by(4) {
            c.push_str(&format!("  run_{m}({m});\n"));
        }
        c.push_str("  return 0;\n}\n");
    }
    c.push_str("int main(void) {\n  pthread_t t[4];\n");
    for t in 0..4 {
        c.push_str(&format!("  pthread_create(&t[{t}], 0, worker_{t}, 0);\n"));
    }
    c.push_str(
        "  for (int i = 0; i < 4; i++) {\n    pthread_join(t[i], 0);\n  }\n  return 0;\n}\n",
    );
    let path = dir.join("big.c");
    std::fs::write(&path, c).expect("write program");
    path
}

/// Runs `racedar check ARGS FILE`; returns (exit code, stdout, stderr).
fn check(args: &[&str], file: &Path) -> (Option<i32>, String, String) {
    let out = racedar()
        .arg("check")
        .args(args)
        .arg(file)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(!stderr.contains("panicked"), "panic:\n{stderr}");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).to_string(),
        stderr,
    )
}

fn json(stdout: &str) -> serde_json::Value {
    serde_json::from_str(stdout).unwrap_or_else(|e| panic!("not JSON ({e}):\n{stdout}"))
}

#[test]
fn timeout_stops_with_unknown_and_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = big_program(dir.path(), 700);
    let (code, out, err) = check(&["--timeout", "0.05", "--format", "json"], &file);
    assert_eq!(code, Some(3), "stderr:\n{err}");
    let v = json(&out);
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["races"].as_array().map(Vec::len), Some(0));
    assert!(
        v.get("deadlocks").is_none(),
        "deadlocks were not searched: {v}"
    );
    assert_eq!(v["stopped"]["limit"], "timeout");
    assert_eq!(v["stopped"]["value"], 0.05);
    let reason = v["imprecision"][0].as_str().unwrap_or_default();
    assert!(reason.contains("time limit of 0.05 s"), "{reason}");
    assert!(err.contains("analysis stopped"), "{err}");

    let (code, out, _) = check(&["--timeout", "0.05"], &file);
    assert_eq!(code, Some(3));
    let last = out.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("racedar: unknown: analysis stopped: the time limit of 0.05 s"),
        "{out}"
    );

    let (code, out, _) = check(&["--timeout", "0.05", "--format", "sarif"], &file);
    assert_eq!(code, Some(3));
    let v = json(&out);
    let inv = &v["runs"][0]["invocations"][0];
    assert_eq!(inv["executionSuccessful"], false, "{v}");
    let note = &inv["toolExecutionNotifications"][0];
    assert_eq!(note["descriptor"]["id"], "racedar/timeout");
    assert!(
        note["message"]["text"]
            .as_str()
            .is_some_and(|t| t.contains("time limit")),
        "{note}"
    );

    let (code, out, _) = check(&["--timeout", "0.05", "--svcomp"], &file);
    assert_eq!(code, Some(0));
    assert_eq!(out.lines().last(), Some("SV-COMP result: unknown"), "{out}");
}

#[test]
fn memory_limit_stops_with_unknown_and_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = big_program(dir.path(), 700);
    // Any process is larger than 1 MiB: the limit is reached at the first check.
    let (code, out, err) = check(&["--max-memory", "1", "--format", "json"], &file);
    assert_eq!(code, Some(3), "stderr:\n{err}");
    let v = json(&out);
    assert_eq!(v["verdict"], "unknown");
    assert_eq!(v["stopped"]["limit"], "max-memory");
    assert_eq!(v["stopped"]["value"], 1.0);
    let reason = v["imprecision"][0].as_str().unwrap_or_default();
    assert!(reason.contains("memory limit of 1 MiB"), "{reason}");
    let (code, out, _) = check(&["--max-memory", "1"], &file);
    assert_eq!(code, Some(3));
    assert!(
        out.contains("memory limit of 1 MiB (--max-memory)"),
        "{out}"
    );
}

#[test]
fn runs_within_their_limits_are_unchanged() {
    let file = Path::new("tests/fixtures/frontend/pthreads.c");
    let strip = |out: &str| {
        let mut v = json(out);
        if let Some(o) = v.as_object_mut() {
            o.remove("stats");
        }
        v
    };
    let (code, plain, _) = check(&["--format", "json"], file);
    let (limited_code, limited, _) = check(
        &[
            "--format",
            "json",
            "--timeout",
            "600",
            "--max-memory",
            "100000",
        ],
        file,
    );
    assert_eq!(code, limited_code);
    assert_eq!(strip(&plain), strip(&limited));
    assert!(json(&limited).get("stopped").is_none());
}

#[test]
fn limits_must_be_positive() {
    for args in [
        ["--timeout", "0"],
        ["--timeout", "-1"],
        ["--timeout", "inf"],
        ["--max-memory", "0"],
    ] {
        let (code, _, err) = check(&args, Path::new("tests/fixtures/frontend/pthreads.c"));
        assert_eq!(code, Some(2), "{args:?}: {err}");
    }
}

/// A recursive function's result grows by one per return into its own context
/// (`return (*s == c) + count(s + 1, c)`): the fixpoint must widen there instead of running
/// the value analysis out of its budget (which degrades every pointer to the syntactic
/// answer).
#[test]
fn recursive_results_do_not_exhaust_the_value_analysis() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("count.c");
    std::fs::write(
        &file,
        "#include <pthread.h>\n\
         int hits;\n\
         int count(const char *s, char c) {\n  if (*s == 0) return 0;\n\
         \x20 return (*s == c) + count(s + 1, c);\n}\n\
         void *worker(void *arg) {\n  hits = count(arg, 'x');\n  return 0;\n}\n\
         int main(int argc, char **argv) {\n  pthread_t t;\n  int n = count(argv[0], 'y');\n\
         \x20 pthread_create(&t, 0, worker, argv[0]);\n  hits = n;\n  pthread_join(t, 0);\n  return 0;\n}\n",
    )
    .expect("write program");
    let (code, out, err) = check(&["--format", "json"], &file);
    assert_eq!(code, Some(1), "stderr:\n{err}");
    let v = json(&out);
    assert!(v.get("degraded").is_none(), "degraded: {}", v["degraded"]);
    assert_eq!(v["verdict"], "race");
}
