//! The command line: exit codes, one-line errors naming `file:line` for bad input, and the
//! input options reaching the preprocessor.

use assert_cmd::Command;
use std::path::Path;

fn racedar() -> Command {
    Command::cargo_bin("racedar").expect("binary built")
}

/// Runs `racedar check` on `file` and returns the stderr after checking exit code 2, no panic,
/// and a last line `file:line[:col]: error: ...` naming `shown` (the file as reported).
/// Asserts that racedar exited with 1 (findings), showing its stderr otherwise.
fn assert_findings(out: &std::process::Output) {
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The JSON report on `out`'s stdout without its `stats` (timings differ between runs).
fn report_without_stats(out: &std::process::Output) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    v.as_object_mut().map(|o| o.remove("stats"));
    v
}

fn expect_input_error(args: &[&str], shown: &str) -> String {
    let out = racedar().arg("check").args(args).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(out.status.code(), Some(2), "exit code, stderr:\n{stderr}");
    assert!(!stderr.contains("panicked"), "panic:\n{stderr}");
    let last = stderr.lines().last().unwrap_or_default();
    let rest = last
        .strip_prefix(shown)
        .unwrap_or_else(|| panic!("error line does not start with {shown}: {last}"));
    let mut parts = rest.splitn(3, ':');
    assert_eq!(parts.next(), Some(""), "{last}");
    let line = parts.next().unwrap_or_default();
    assert!(
        line.parse::<u32>().is_ok_and(|l| l >= 1),
        "no line number: {last}"
    );
    assert!(last.contains(": error: "), "{last}");
    stderr
}

#[test]
fn missing_file_is_an_input_error() {
    let err = expect_input_error(
        &["tests/fixtures/bad/does_not_exist.c"],
        "tests/fixtures/bad/does_not_exist.c",
    );
    assert!(err.contains("cannot read file: no such file"), "{err}");
}

#[test]
fn directory_is_an_input_error() {
    let err = expect_input_error(&["tests/fixtures/bad"], "tests/fixtures/bad");
    assert!(err.contains("cannot read file"), "{err}");
}

#[test]
fn binary_file_is_not_c() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("blob.c");
    std::fs::write(&path, [0x7f, b'E', b'L', b'F', 0, 1, 2, 0xff, 0xfe]).expect("write");
    let p = path.to_string_lossy().to_string();
    let err = expect_input_error(&[&p], &p);
    assert!(err.contains("not a C source file"), "{err}");
}

#[test]
fn syntax_error_names_line_and_column() {
    let err = expect_input_error(
        &["tests/fixtures/bad/syntax.c"],
        "tests/fixtures/bad/syntax.c",
    );
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .starts_with("tests/fixtures/bad/syntax.c:4:"),
        "{err}"
    );
    assert!(err.contains("syntax error"), "{err}");
}

#[test]
fn truncated_file_is_a_syntax_error() {
    let src = std::fs::read_to_string("tests/fixtures/frontend/statements.c").expect("fixture");
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("truncated.c");
    // Cut in the middle of a function body.
    let cut = src.find("s += i;").expect("marker");
    std::fs::write(&path, &src[..cut]).expect("write");
    let p = path.to_string_lossy().to_string();
    let err = expect_input_error(&[&p], &p);
    assert!(err.contains("syntax error at end of file"), "{err}");
}

#[test]
fn text_that_is_not_c_is_a_syntax_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "These are notes, not C.\nThey have two lines.\n").expect("write");
    let p = path.to_string_lossy().to_string();
    let err = expect_input_error(&[&p], &p);
    assert!(err.contains("syntax error"), "{err}");
}

#[test]
fn preprocessor_failure_shows_its_output() {
    let err = expect_input_error(
        &["tests/fixtures/bad/missing_include.c"],
        "tests/fixtures/bad/missing_include.c",
    );
    assert!(err.contains("no_such_header.h"), "{err}");
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .contains("preprocessing failed"),
        "{err}"
    );
}

#[test]
fn undeclared_identifier_is_a_semantic_error() {
    let err = expect_input_error(
        &["tests/fixtures/bad/undeclared.c"],
        "tests/fixtures/bad/undeclared.c",
    );
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .starts_with("tests/fixtures/bad/undeclared.c:3:10: "),
        "{err}"
    );
    assert!(
        err.contains("use of undeclared identifier 'undeclared_variable'"),
        "{err}"
    );
}

#[test]
fn errors_in_preprocessed_files_use_line_markers() {
    let err = expect_input_error(&["tests/fixtures/bad/preprocessed_error.i"], "orig.c");
    assert!(
        err.lines()
            .last()
            .unwrap_or_default()
            .starts_with("orig.c:40:"),
        "{err}"
    );
    assert!(err.contains("syntax error"), "{err}");
}

#[test]
fn usage_errors_exit_2() {
    let out = racedar().arg("check").output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let out = racedar()
        .args(["check", "--data-model", "ILP16", "x.c"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn check_succeeds_and_json_has_the_contract_keys() {
    let out = racedar()
        .args([
            "check",
            "--format",
            "json",
            "tests/fixtures/frontend/pthreads.c",
        ])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let races = v["races"].as_array().expect("races list");
    // Exit code 1 exactly when races are reported.
    assert_eq!(
        out.status.code(),
        Some(if races.is_empty() { 0 } else { 1 })
    );
    assert!(["race", "no-race", "unknown"].contains(&v["verdict"].as_str().unwrap_or("")));
    assert!(v["imprecision"].is_array());
    assert!(v["stats"]["phases"].is_array());
    for r in races {
        assert!(["must", "may"].contains(&r["confidence"].as_str().unwrap_or("")));
        for a in r["accesses"].as_array().expect("accesses") {
            assert!(a["file"].is_string() && a["line"].is_u64() && a["column"].is_u64());
            assert!(["read", "write"].contains(&a["kind"].as_str().unwrap_or("")));
            assert!(
                a["thread"].is_string() && a["lockset"].is_array() && a["call_chain"].is_array()
            );
        }
    }
}

#[test]
fn defines_reach_the_preprocessor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("d.c");
    std::fs::write(
        &path,
        "#ifndef WANTED\n#error WANTED missing\n#endif\nint x = WANTED;\n",
    )
    .expect("write");
    let p = path.to_string_lossy().to_string();
    // Without -D the #error fires.
    let out = racedar().args(["check", &p]).output().expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let out = racedar()
        .args(["dump-ir", "-DWANTED=42", &p])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("global int x = { 42 }"));
    // -U undoes a -D; gcc's -include spelling works too.
    let inc = dir.path().join("inc.h");
    std::fs::write(&inc, "#define WANTED 7\n").expect("write");
    let out = racedar()
        .args(["dump-ir", "-include", &inc.to_string_lossy(), &p])
        .output()
        .expect("runs");
    assert!(String::from_utf8_lossy(&out.stdout).contains("global int x = { 7 }"));
}

#[test]
fn include_dirs_reach_the_preprocessor() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::create_dir(dir.path().join("inc")).expect("mkdir");
    std::fs::write(dir.path().join("inc/h.h"), "int from_header;\n").expect("write");
    let path = dir.path().join("m.c");
    std::fs::write(
        &path,
        "#include \"h.h\"\nint main(void) { return from_header; }\n",
    )
    .expect("write");
    let inc = dir.path().join("inc");
    let out = racedar()
        .args([
            "dump-ir",
            "-I",
            &inc.to_string_lossy(),
            &path.to_string_lossy(),
            "--all",
        ])
        .output()
        .expect("runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("from_header"));
}

#[test]
fn cpp_option_and_cc_variable_choose_the_preprocessor() {
    // A "preprocessor" that fails proves which command ran.
    let out = racedar()
        .args(["check", "--cpp", "false", "tests/fixtures/frontend/types.c"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'false' exited"));
    let out = racedar()
        .env("CC", "false")
        .args(["check", "tests/fixtures/frontend/types.c"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    // --cpp wins over CC.
    let out = racedar()
        .env("CC", "false")
        .args(["check", "--cpp", "cc -E", "tests/fixtures/frontend/types.c"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
}

/// The default preprocessor runs through the driver's own preprocessor command, cached in
/// `driver/` of the cache directory: the report is the one the driver gives, and a cached
/// command that no longer starts (a compiler upgrade) falls back to the driver and is
/// forgotten.
#[test]
fn the_driver_shortcut_gives_the_drivers_report() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let run = |direct: &str| {
        let out = racedar()
            .env("RACEDAR_CACHE_DIR", &cache)
            .env("RACEDAR_DIRECT_CPP", direct)
            .args([
                "check",
                "--no-cache",
                "--format",
                "json",
                "tests/fixtures/races/simple_lock.c",
            ])
            .output()
            .expect("runs");
        assert_findings(&out);
        report_without_stats(&out)
    };
    let via_driver = run("0");
    let entries = || {
        std::fs::read_dir(cache.join("driver"))
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.path())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    assert!(entries().is_empty(), "RACEDAR_DIRECT_CPP=0 probes nothing");
    assert_eq!(run("1"), via_driver);
    let cached = entries();
    assert_eq!(cached.len(), 1);
    let text = std::fs::read_to_string(&cached[0]).expect("entry");
    assert!(text.contains("\"Input\""), "{text}");
    assert_eq!(run("1"), via_driver, "from the cache");
    std::fs::write(
        &cached[0],
        r#"{"command":[{"Literal":"/nonexistent/racedar-cc1"},"Input"]}"#,
    )
    .expect("write");
    assert_eq!(
        run("1"),
        via_driver,
        "a stale command falls back to the driver"
    );
    assert!(entries().is_empty(), "and is forgotten");
}

/// A `.c` file's preprocessed text is cached by content: the second run reuses it, and
/// changing an included header invalidates it (the result follows the header).
#[test]
fn single_files_are_cached_until_a_header_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let header = dir.path().join("shared.h");
    std::fs::write(&header, "int counter;\n").expect("write");
    let src = dir.path().join("m.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\n#include \"shared.h\"\n\
         void *w(void *a) { counter++; return a; }\n\
         int main(void) { pthread_t t; pthread_create(&t, 0, w, 0); counter++; return 0; }\n",
    )
    .expect("write");
    let run = || {
        let out = racedar()
            .env("RACEDAR_CACHE_DIR", &cache)
            .args(["check", "--format", "json"])
            .arg(&src)
            .output()
            .expect("runs");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        v["races"][0]["location"].as_str().unwrap_or("").to_string()
    };
    let entries = || {
        std::fs::read_dir(cache.join("pp"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!(run(), "counter");
    assert_eq!(entries(), 1);
    assert_eq!(run(), "counter");
    assert_eq!(entries(), 1, "a second run adds no entry");
    std::fs::write(&header, "int total;\n#define counter total\n").expect("write");
    assert_eq!(run(), "total");
    assert_eq!(entries(), 1, "the stale entry is replaced");
}

/// An empty or relative cache location never puts the cache in the current directory.
#[test]
fn the_cache_never_lands_in_the_current_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/races/simple_lock.c");
    for (xdg, home) in [("", "/nonexistent-home"), ("relative", "also-relative")] {
        let out = racedar()
            .current_dir(dir.path())
            .env_remove("RACEDAR_CACHE_DIR")
            .env("XDG_CACHE_HOME", xdg)
            .env("HOME", home)
            .args(["check", "--format", "json"])
            .arg(&fixture)
            .output()
            .expect("runs");
        assert_findings(&out);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(left.is_empty(), "{left:?}");
    }
}

#[test]
fn preprocessed_files_skip_the_preprocessor() {
    // `.i` input is read as is: a failing CC does not matter.
    let out = racedar()
        .env("CC", "false")
        .args([
            "dump-ir",
            "tests/fixtures/bad/../frontend/../../fixtures/bad/preprocessed_error.i",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("syntax error"));
    assert!(Path::new("tests/fixtures/bad/preprocessed_error.i").exists());
}

#[test]
fn racy_program_shows_both_accesses_threads_and_locksets() {
    let out = racedar()
        .args(["check", "tests/fixtures/races/simple_lock.c"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    let first = text.lines().next().unwrap_or_default();
    assert!(
        first.ends_with("warning: data race on 'glob' (certain, must) [racedar/data-race]"),
        "{text}"
    );
    // Both accesses, both threads, both locksets.
    assert!(text.contains("simple_lock.c:10:3: note: write of 'glob' in thread worker@simple_lock.c:17 holding locks {m}"), "{text}");
    assert!(
        text.contains("simple_lock.c:18:3: note: write of 'glob' in thread main holding no lock"),
        "{text}"
    );
}

#[test]
fn race_free_program_exits_0() {
    let out = racedar()
        .args(["check", "tests/fixtures/races/both_locked.c"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("racedar: no data race"));
}

#[test]
fn fail_on_must_ignores_may_races() {
    let out = racedar()
        .args([
            "check",
            "--no-concrete",
            "--fail-on",
            "must",
            "tests/fixtures/races/conditional_lock.c",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let out = racedar()
        .args(["check", "tests/fixtures/races/conditional_lock.c"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn user_models_extend_the_shipped_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let src = dir.path().join("own_lock.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\nint g;\npthread_mutex_t m;\n\
         extern void my_lock(pthread_mutex_t *); extern void my_unlock(pthread_mutex_t *);\n\
         void *t(void *a) { my_lock(&m); g++; my_unlock(&m); return 0; }\n\
         int main(void) { pthread_t x; pthread_create(&x, 0, t, 0); my_lock(&m); g++; my_unlock(&m); return 0; }\n",
    )
    .expect("write");
    // Unknown to the shipped model: the accesses race.
    let out = racedar()
        .args(["check", "--format", "json", &src.to_string_lossy()])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verdict"], "race");
    // Declared as a lock and an unlock: protected.
    let model = dir.path().join("model.toml");
    std::fs::write(
        &model,
        "[[function]]\nname = \"my_lock\"\nrole = \"lock\"\nlock = 0\n\n\
         [[function]]\nname = \"my_unlock\"\nrole = \"unlock\"\nlock = 0\n",
    )
    .expect("write");
    let out = racedar()
        .args([
            "check",
            "--format",
            "json",
            "--config",
            &model.to_string_lossy(),
            &src.to_string_lossy(),
        ])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verdict"], "no-race");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[[function]]\nname = 1\n").expect("write");
    let out = racedar()
        .args([
            "check",
            "--config",
            &bad.to_string_lossy(),
            &src.to_string_lossy(),
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("bad.toml:1: error: invalid concurrency model")
    );
}

/// `--mode` selects the verdict strategy (seed 001 §5.3): on a program with only a possible
/// race, `under` keeps no race and answers unknown, `over` answers race, `combined` unknown;
/// on a race-free program `under` never claims no-race.
#[test]
fn modes_draw_different_verdicts_from_the_same_races() {
    let run = |mode: &str, file: &str| {
        let out = racedar()
            .args([
                "check",
                "--no-concrete",
                "--format",
                "json",
                "--mode",
                mode,
                file,
            ])
            .output()
            .expect("runs");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        (
            v["verdict"].as_str().unwrap_or("").to_string(),
            v["races"].as_array().map_or(0, |r| r.len()),
        )
    };
    let may = "tests/fixtures/races/conditional_lock.c";
    assert_eq!(run("combined", may), ("unknown".to_string(), 1));
    assert_eq!(run("under", may), ("unknown".to_string(), 0));
    assert_eq!(run("over", may), ("race".to_string(), 1));
    let free = "tests/fixtures/races/both_locked.c";
    assert_eq!(run("combined", free).0, "no-race");
    assert_eq!(run("over", free).0, "no-race");
    assert_eq!(run("under", free).0, "unknown");
}

const RACY: &str = "#include <pthread.h>\nint g;\nvoid *t(void *a) {\n  g++;\n  return 0;\n}\n\
int main(void) {\n  pthread_t id;\n  pthread_create(&id, 0, t, 0);\n  g++;MARK\n  return 0;\n}\n";

fn run_json(args: &[&str], file: &std::path::Path) -> (Option<i32>, serde_json::Value) {
    let out = racedar()
        .args(["check", "--format", "json"])
        .args(args)
        .arg(file)
        .output()
        .expect("runs");
    let v = serde_json::from_slice(&out.stdout).expect("json");
    (out.status.code(), v)
}

/// An ignore comment on either access line suppresses the race: it stays in JSON, marked,
/// and no longer fails the run; a comment for another rule does not.
#[test]
fn inline_ignore_comments_suppress_races() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("r.c");
    std::fs::write(
        &f,
        RACY.replace("MARK", " // racedar-ignore[data-race]: approximate counter"),
    )
    .expect("write");
    let (code, v) = run_json(&[], &f);
    assert_eq!(code, Some(0));
    assert_eq!(v["races"][0]["suppressed"]["kind"], "inSource");
    assert_eq!(
        v["races"][0]["suppressed"]["justification"],
        "approximate counter"
    );
    std::fs::write(&f, RACY.replace("MARK", " // racedar-ignore[deadlock]: no")).expect("write");
    let (code, v) = run_json(&[], &f);
    assert_eq!(code, Some(1));
    assert!(v["races"][0].get("suppressed").is_none());
    std::fs::write(
        &f,
        format!("// racedar-ignore-file\n{}", RACY.replace("MARK", "")),
    )
    .expect("write");
    let (code, _) = run_json(&[], &f);
    assert_eq!(code, Some(0));
}

/// A baseline written from one run suppresses the same races in the next, even after the
/// code moved, and a new race still fails.
#[test]
fn baselines_hide_known_races_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("r.c");
    let base = dir.path().join("base.json");
    std::fs::write(&f, RACY.replace("MARK", "")).expect("write");
    let (code, _) = run_json(&["--write-baseline", base.to_str().expect("utf8")], &f);
    assert_eq!(code, Some(1));
    std::fs::write(&f, format!("\n\n{}", RACY.replace("MARK", ""))).expect("write");
    let (code, v) = run_json(&["--baseline", base.to_str().expect("utf8")], &f);
    assert_eq!(code, Some(0));
    assert_eq!(v["races"][0]["suppressed"]["kind"], "external");
    // A second, new race.
    let two = RACY
        .replace("int g;", "int g, h;")
        .replace(
            "  g++;\n  return 0;\n}\nint",
            "  g++;\n  h++;\n  return 0;\n}\nint",
        )
        .replace("g++;MARK", "g++;\n  h = 1;");
    std::fs::write(&f, two).expect("write");
    let (code, v) = run_json(&["--baseline", base.to_str().expect("utf8")], &f);
    assert_eq!(code, Some(1));
    let open = v["races"]
        .as_array()
        .expect("races")
        .iter()
        .filter(|r| r.get("suppressed").is_none())
        .count();
    assert_eq!(open, 1);
    // A file that is not a baseline is an input error.
    std::fs::write(&base, "not json").expect("write");
    let (code, _) = {
        let out = racedar()
            .args(["check", "--baseline", base.to_str().expect("utf8")])
            .arg(&f)
            .output()
            .expect("runs");
        (out.status.code(), ())
    };
    assert_eq!(code, Some(2));
}

/// A baseline entry is one race with the accesses it had: a new access to the baselined
/// variable (a write whose lock was removed, in a new function) makes the race new again,
/// although its racing pair, and so its fingerprint, is the old one. An ignore comment on a
/// line the race only lists as a further access does not suppress it.
#[test]
fn baselines_and_ignores_are_per_race_pair() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("r.c");
    let base = dir.path().join("base.json");
    std::fs::write(&f, RACY.replace("MARK", "")).expect("write");
    let (code, v) = run_json(&["--write-baseline", base.to_str().expect("utf8")], &f);
    assert_eq!(code, Some(1));
    let fp = v["races"][0]["fingerprint"].clone();
    let grown = RACY
        .replace(
            "int main(void) {",
            "void reset(void) {\n  g = 0; // racedar-ignore[data-race]: not this pair\n}\nint main(void) {",
        )
        .replace("g++;MARK", "g++;\n  reset();");
    std::fs::write(&f, grown).expect("write");
    let (code, v) = run_json(&["--baseline", base.to_str().expect("utf8")], &f);
    let races = v["races"].as_array().expect("races");
    let same: Vec<_> = races.iter().filter(|r| r["fingerprint"] == fp).collect();
    assert_eq!(same.len(), 1, "{v}");
    let listed = same[0]["accesses"]
        .as_array()
        .expect("accesses")
        .iter()
        .skip(2)
        .any(|a| a["expression"] == "g" && a["kind"] == "write");
    assert!(
        listed,
        "the new write is a further access of the old race: {v}"
    );
    assert!(same[0].get("suppressed").is_none(), "{v}");
    assert_eq!(code, Some(1));
}

/// `--svcomp`: the verdict line ends stdout, the exit code is 0 whatever the verdict, a
/// `false` verdict writes a YAML violation witness naming both accesses, and a property other
/// than no-data-race gives `unknown`.
#[test]
fn svcomp_runs_end_with_the_verdict_line_and_exit_zero() {
    let dir = tempfile::tempdir().expect("tempdir");
    let prp = dir.path().join("no-data-race.prp");
    std::fs::write(&prp, "CHECK( init(main()), LTL(G ! data-race) )\n").expect("write");
    let other = dir.path().join("unreach-call.prp");
    std::fs::write(
        &other,
        "CHECK( init(main()), LTL(G ! call(reach_error())) )\n",
    )
    .expect("write");
    let witness = dir.path().join("witness.yml");
    let run = |prp: &std::path::Path, file: &str, w: Option<&std::path::Path>| {
        let mut cmd = racedar();
        cmd.args(["check", "--svcomp", "--property"]).arg(prp);
        if let Some(w) = w {
            cmd.arg("--witness").arg(w);
        }
        let out = cmd.arg(file).output().expect("runs");
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .last()
            .unwrap_or("")
            .to_string()
    };
    assert_eq!(
        run(&prp, "tests/fixtures/races/simple_lock.c", Some(&witness)),
        "SV-COMP result: false(no-data-race)"
    );
    let w = std::fs::read_to_string(&witness).expect("witness written");
    assert!(w.contains("entry_type: violation_sequence"));
    assert!(w.contains("format_version: '2.0'"));
    assert_eq!(w.matches("type: target").count(), 2);
    assert_eq!(
        run(&prp, "tests/fixtures/races/both_locked.c", None),
        "SV-COMP result: true"
    );
    assert_eq!(
        run(&prp, "tests/fixtures/races/concrete_unknown_hook.c", None),
        "SV-COMP result: unknown"
    );
    assert_eq!(
        run(&other, "tests/fixtures/races/simple_lock.c", None),
        "SV-COMP result: unknown"
    );
    // Input errors still end with a verdict line and exit 0.
    assert_eq!(
        run(&prp, "tests/fixtures/does-not-exist.c", None),
        "SV-COMP result: unknown"
    );
}

/// `--explain` shows where a held lock was taken.
#[test]
fn explain_shows_where_locks_were_taken() {
    let out = racedar()
        .args([
            "check",
            "--explain",
            "1",
            "tests/fixtures/races/simple_lock.c",
        ])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("locks surely held: m (taken at tests/fixtures/races/simple_lock.c:9:3)"),
        "{text}"
    );
}

/// `--explain` names a race by position or fingerprint prefix and prints both call chains,
/// the create site, the locks and why the race is only possible; an unknown id is an error.
#[test]
fn explain_prints_chains_sites_and_reasons() {
    let out = racedar()
        .args([
            "check",
            "--no-concrete",
            "--explain",
            "1",
            "tests/fixtures/races/join_grandchild_global_assigned.c",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("access 1:") && text.contains("access 2:"),
        "{text}"
    );
    assert!(
        text.contains("created at tests/fixtures/races/join_grandchild_global_assigned.c:"),
        "{text}"
    );
    assert!(text.contains("locks surely held: none"), "{text}");
    assert!(
        text.contains("not certain: not certainly parallel"),
        "{text}"
    );
    let fp = text
        .split("fingerprint ")
        .nth(1)
        .and_then(|t| t.get(..6))
        .expect("fingerprint")
        .to_string();
    let again = racedar()
        .args([
            "check",
            "--no-concrete",
            "--explain",
            &fp,
            "tests/fixtures/races/join_grandchild_global_assigned.c",
        ])
        .output()
        .expect("runs");
    assert_eq!(String::from_utf8_lossy(&again.stdout), text);
    let none = racedar()
        .args([
            "check",
            "--explain",
            "99",
            "tests/fixtures/races/join_grandchild_global_assigned.c",
        ])
        .output()
        .expect("runs");
    assert_eq!(none.status.code(), Some(2));
}

#[test]
fn deadlocks_are_reported_and_can_be_turned_off() {
    let file = "tests/fixtures/deadlocks/abba_accounts.c";
    let out = racedar()
        .args(["check", "--format", "json", file])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    let ds = v["deadlocks"].as_array().expect("deadlocks list");
    assert_eq!(ds.len(), 1);
    assert_eq!(ds[0]["confidence"], "must");
    for s in ds[0]["cycle"].as_array().expect("cycle") {
        assert!(s["acquire"]["line"].is_u64() && s["while_holding"]["line"].is_u64());
        assert!(s["lock"].is_string() && s["thread"].is_string());
    }
    // Deadlocks are findings: exit 1.
    assert_eq!(out.status.code(), Some(1));
    let out = racedar()
        .args(["check", "--format", "json", "--no-deadlocks", file])
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert!(v.get("deadlocks").is_none());
    let text = racedar().args(["check", file]).output().expect("runs");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("warning: deadlock: lock-order cycle"));
    assert!(text.contains("[racedar/deadlock]"));
}

/// The in-process preprocessor asks the compiler for a `__has_attribute` answer it does not
/// know (once, cached in `cpp/`) and uses it: the race below exists only if the answer is
/// gcc's (1). Turned off (`RACEDAR_BUILTIN_CPP=0`), the system preprocessor gives the same
/// report.
#[test]
fn in_process_preprocessor_learns_query_answers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let src = dir.path().join("q.c");
    std::fs::write(
        &src,
        "#include <pthread.h>\nint x;\nvoid *t(void *a) {\n#if __has_attribute(noreturn) && __has_builtin(__builtin_expect)\n  x = 1;\n#endif\n  return a;\n}\nint main(void) {\n  pthread_t th;\n  pthread_create(&th, 0, t, 0);\n  x = 2;\n  pthread_join(th, 0);\n  return 0;\n}\n",
    )
    .expect("write");
    let run = |builtin: &str| {
        let out = racedar()
            .env("RACEDAR_CACHE_DIR", &cache)
            .env("RACEDAR_BUILTIN_CPP", builtin)
            .args(["check", "--no-cache", "--format", "json"])
            .arg(&src)
            .output()
            .expect("runs");
        report_without_stats(&out)
    };
    let first = run("1");
    assert_eq!(first["verdict"], "race", "{first}");
    let configs: Vec<_> = std::fs::read_dir(cache.join("cpp"))
        .expect("cpp cache")
        .filter_map(Result::ok)
        .map(|e| std::fs::read_to_string(e.path()).expect("entry"))
        .collect();
    assert_eq!(configs.len(), 1);
    assert!(
        configs[0].contains("\"__has_attribute(noreturn)\":1"),
        "{}",
        configs[0]
    );
    assert_eq!(run("1"), first, "from the cached answers");
    assert_eq!(run("0"), first, "the system preprocessor agrees");
}

/// The imprecision entries of a JSON report of `src` (a C program).
fn imprecision_of(src: &str) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("prog.c");
    std::fs::write(&file, src).expect("write");
    let out = racedar()
        .args(["check", "--no-concrete", "--format", "json"])
        .arg(&file)
        .output()
        .expect("runs");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    v["imprecision"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn busy_waiting_is_a_loop_that_waits_for_shared_memory() {
    let common = "#include <pthread.h>\nint flag; int a[8];\n\
                  void *t(void *x) { a[1] = 1; flag = 1; return x; }\n";
    // A flag loop waits for another thread: it may order the threads.
    let spin = format!(
        "{common}int main(void) {{ pthread_t id; pthread_create(&id, 0, t, 0);\n\
         while (!flag) {{}}\n return a[1]; }}\n"
    );
    let found = imprecision_of(&spin);
    assert!(
        found.iter().any(|i| i.contains("busy-waiting loop")),
        "{found:?}"
    );
    // A counted loop reading shared memory ends whatever other threads do.
    let counted = format!(
        "{common}int main(void) {{ pthread_t id; int s = 0; pthread_create(&id, 0, t, 0);\n\
         pthread_join(id, 0);\n for (int i = 0; i < 8; i++) s += a[i];\n return s; }}\n"
    );
    let found = imprecision_of(&counted);
    assert!(
        !found.iter().any(|i| i.contains("busy-waiting loop")),
        "{found:?}"
    );
}

/// `--entry` names a function without a body: one error line, exit 2 (issue 21 item 2).
#[test]
fn entry_without_a_body_is_a_usage_error() {
    let out = racedar()
        .args([
            "check",
            "--entry",
            "no_such_function",
            "tests/fixtures/races/library_counter_locked.c",
        ])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        stderr.trim_end(),
        "racedar: error: --entry no_such_function: no function with a body of that name"
    );
}

/// Code without `main` is checked as a library: its threads are named after the entries, the
/// unlocked write's race is `likely` but never certain, and the verdict is `unknown`.
#[test]
fn code_without_main_is_checked_as_a_library() {
    let out = racedar()
        .args([
            "check",
            "--format",
            "json",
            "tests/fixtures/races/library_counter_unlocked.c",
        ])
        .output()
        .expect("runs");
    assert_findings(&out);
    let v = report_without_stats(&out);
    assert_eq!(v["verdict"], "unknown");
    let races = v["races"].as_array().expect("races");
    assert!(!races.is_empty());
    for r in races {
        assert_eq!(r["confidence"], "may", "{r}");
    }
    let reset = races
        .iter()
        .find(|r| {
            r["accesses"]
                .as_array()
                .is_some_and(|a| a.iter().any(|a| a["line"] == 25))
        })
        .expect("a race on counter_reset's write");
    assert_eq!(reset["evidence"], "likely");
    let threads: Vec<&str> = reset["accesses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|a| a["thread"].as_str())
        .collect();
    assert!(
        threads.contains(&"counter_reset (library entry)"),
        "{threads:?}"
    );
    assert!(
        v["imprecision"]
            .as_array()
            .is_some_and(|i| i.iter().any(|s| s.as_str().is_some_and(|s| s
                .starts_with("library mode: entry functions assumed to be called concurrently"))))
    );
}

/// Two unique threads that each bump two counters of one struct and a separate global, with
/// no lock: the struct's fields are one report (its other field in `other_locations`, both
/// racing pairs listed, the text naming the merged field), the global another. A baseline
/// taken while only one field raced keeps judging per field: the new field's race is reported
/// on its own, the baselined one stays suppressed.
#[test]
fn races_on_one_object_are_one_report_judged_per_field_by_baselines() {
    let src = |fields: &str| {
        format!(
            "#include <pthread.h>\nstruct stats {{ long sent; long lost; }} st;\nlong other;\n\
void *t(void *a) {{\n{fields}  other = 1;\n  return 0;\n}}\n\
int main(void) {{\n  pthread_t x, y;\n  pthread_create(&x, 0, t, 0);\n  pthread_create(&y, 0, t, 0);\n  \
pthread_join(x, 0);\n  pthread_join(y, 0);\n  return 0;\n}}\n"
        )
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let f = dir.path().join("stats.c");
    std::fs::write(&f, src("  st.sent++;\n  st.lost++;\n")).expect("write");
    let (code, v) = run_json(&[], &f);
    assert_eq!(code, Some(1), "{v}");
    let races = v["races"].as_array().expect("races");
    assert_eq!(races.len(), 2, "{v}");
    let on_struct = races
        .iter()
        .find(|r| r["location"] == "st.sent")
        .expect("a report on st");
    assert_eq!(on_struct["other_locations"], serde_json::json!(["st.lost"]));
    let exprs: Vec<&str> = on_struct["accesses"]
        .as_array()
        .expect("accesses")
        .iter()
        .filter_map(|a| a["expression"].as_str())
        .collect();
    assert!(
        exprs.contains(&"st.sent") && exprs.contains(&"st.lost"),
        "{v}"
    );
    let on_other = races
        .iter()
        .find(|r| r["location"] == "other")
        .expect("a report on other");
    assert!(on_other.get("other_locations").is_none(), "{v}");
    let out = racedar()
        .args(["check", "--show", "possible"])
        .arg(&f)
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("note: this object also races on 'st.lost'"),
        "{text}"
    );
    // The merged location's racing pair follows the lead pair (warning, merge note, pair).
    let report: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.contains("data race on 'st."))
        .take(6)
        .collect();
    assert!(report.iter().any(|l| l.contains("of 'st.lost'")), "{text}");
    // Baseline with one field racing, then the second field races too.
    let base = dir.path().join("base.json");
    std::fs::write(&f, src("  st.sent++;\n")).expect("write");
    let (_, _) = run_json(&["--write-baseline", base.to_str().expect("utf8")], &f);
    std::fs::write(&f, src("  st.sent++;\n  st.lost++;\n")).expect("write");
    let (code, v) = run_json(&["--baseline", base.to_str().expect("utf8")], &f);
    assert_eq!(code, Some(1), "{v}");
    let open: Vec<&serde_json::Value> = v["races"]
        .as_array()
        .expect("races")
        .iter()
        .filter(|r| r.get("suppressed").is_none())
        .collect();
    assert_eq!(open.len(), 1, "{v}");
    assert_eq!(open[0]["location"], "st.lost", "{v}");
    assert!(open[0].get("other_locations").is_none(), "{v}");
}
