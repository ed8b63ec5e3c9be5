//! Whole projects: a compilation database of two translation units is one program; the race
//! across the units is found through `-p` and the locked variant is clean; a struct both
//! units define is one type; a database with
//! two programs analyses each; `--changed` reports only the races touching the given files
//! and `--diff-base` only the new ones, which is what the pre-commit hook relies on (tested
//! with a real `git commit` and hook).

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn racedar() -> Command {
    Command::cargo_bin("racedar").expect("binary")
}

fn json(args: &[&str]) -> (Option<i32>, Value) {
    let out = racedar()
        .args(["check", "--format", "json", "--no-cache"])
        .args(args)
        .output()
        .expect("runs");
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    (out.status.code(), v)
}

#[test]
fn a_race_across_two_units_is_found_through_the_database() {
    let (code, v) = json(&["-p", "tests/fixtures/project/racy/compile_commands.json"]);
    assert_eq!(code, Some(1));
    assert_eq!(v["verdict"], "race");
    let races = v["races"].as_array().expect("races");
    assert_eq!(
        races.len(),
        1,
        "only 'counter' races (each unit's static 'hits' is its own)"
    );
    assert_eq!(races[0]["location"], "counter");
    let mut files: Vec<&str> = races[0]["accesses"]
        .as_array()
        .expect("accesses")
        .iter()
        .filter_map(|a| a["file"].as_str())
        .collect();
    files.sort();
    files.dedup();
    assert_eq!(
        files,
        vec![
            "tests/fixtures/project/racy/src/counter.c",
            "tests/fixtures/project/racy/src/main.c"
        ]
    );
}

#[test]
fn builtins_are_declared_in_every_unit() {
    // Both units expand `va_start` (`__builtin_va_start`) and `bswap_16`
    // (`__builtin_bswap16`); the second unit used to fail with "use of undeclared identifier".
    // log.c also puts `_Alignas` on a struct member.
    let (code, v) = json(&["-p", "tests/fixtures/project/builtins"]);
    assert_eq!(
        (code, &v["verdict"]),
        (Some(0), &Value::from("no-race")),
        "{v}"
    );
    let (code, v) = json(&[
        "tests/fixtures/project/builtins/src/log.c",
        "tests/fixtures/project/builtins/src/main.c",
    ]);
    assert_eq!(
        (code, &v["verdict"]),
        (Some(0), &Value::from("no-race")),
        "{v}"
    );
}

#[test]
fn a_struct_two_units_define_is_one_type() {
    // Both units include node.h; the pointers come from a function no unit defines, so the
    // accesses are matched by type. Each unit lowers its own copy of `struct node` and of the
    // anonymous `stats_t`: unless the copies are one type (C11 §6.2.7), main.c's reads match
    // no write of worker.c.
    let (_, v) = json(&["-p", "tests/fixtures/project/structs"]);
    let races = v["races"].as_array().expect("races");
    for field in ["n->hits", "s->failed"] {
        let race = races
            .iter()
            .find(|r| r["location"] == field)
            .unwrap_or_else(|| panic!("no race on {field}: {v}"));
        let sides: Vec<(String, i64)> = race["accesses"]
            .as_array()
            .expect("accesses")
            .iter()
            .map(|a| {
                let file = a["file"].as_str().unwrap_or("");
                let unit = file.rsplit('/').next().unwrap_or("").to_string();
                (unit, a["line"].as_i64().unwrap_or(0))
            })
            .collect();
        assert!(
            sides.contains(&("main.c".to_string(), 11)),
            "{field}: main.c's read is in the race: {sides:?}"
        );
        assert!(
            sides.iter().any(|(u, _)| u == "worker.c"),
            "{field}: worker.c's write is in the race: {sides:?}"
        );
    }
}

#[test]
fn the_locked_variant_is_clean() {
    let (code, v) = json(&["-p", "tests/fixtures/project/clean"]);
    assert_eq!(code, Some(0));
    assert_eq!(v["verdict"], "no-race");
}

#[test]
fn changed_files_select_the_reported_races() {
    let db = "tests/fixtures/project/racy/compile_commands.json";
    let (code, v) = json(&[
        "-p",
        db,
        "--changed",
        "tests/fixtures/project/racy/src/main.c",
    ]);
    assert_eq!(code, Some(1));
    assert_eq!(v["races"].as_array().map(Vec::len), Some(1));
    let (code, v) = json(&[
        "-p",
        db,
        "--changed",
        "tests/fixtures/project/racy/include/counter.h",
    ]);
    assert_eq!(code, Some(0));
    assert_eq!(v["races"].as_array().map(Vec::len), Some(0));
    // A file that is no part of the program (a typo, a file outside the project) is an
    // input error, not a silent pass.
    for missing in [
        "tests/fixtures/project/racy/src/nosuch.c",
        "tests/fixtures/project/clean/src/main.c",
    ] {
        let out = racedar()
            .args(["check", "-p", db, "--changed", missing])
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{missing}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("not part of the analysed program"),
            "{missing}"
        );
    }
}

#[test]
fn a_bad_database_is_an_input_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = dir.path().join("compile_commands.json");
    std::fs::write(&db, "{ not json").expect("write");
    let out = racedar()
        .args(["check", "--no-cache", "-p"])
        .arg(&db)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("compile_commands.json") && err.contains("not a compilation database"));
}

fn git(dir: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

fn have_git() -> bool {
    let ok = std::process::Command::new("git")
        .arg("--version")
        .output()
        .is_ok();
    if !ok {
        eprintln!("git not available: skipped");
    }
    ok
}

/// A git repository holding the `multi` fixture project (two programs and the library unit
/// they link), committed once.
fn multi_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = dir.path();
    copy_dir(Path::new("tests/fixtures/project/multi"), repo);
    assert!(git(repo, &["init", "-q"]).status.success());
    assert!(git(repo, &["add", "."]).status.success());
    assert!(
        git(repo, &["commit", "-q", "--no-verify", "-m", "init"])
            .status
            .success()
    );
    dir
}

/// The lock/unlock pair around `counter += n` in the fixture's library unit.
const LOCKED_ADD: &str =
    "  pthread_mutex_lock(&counter_lock);\n  counter += n;\n  pthread_mutex_unlock(&counter_lock);";

/// `racedar check --format json -p compile_commands.json ARGS` in `repo` with its own cache
/// directory; (exit code, report).
fn check_in(repo: &Path, cache: &Path, args: &[&str]) -> (Option<i32>, Value) {
    let out = racedar()
        .current_dir(repo)
        .env("RACEDAR_CACHE_DIR", cache)
        .args(["check", "--format", "json", "-p", "compile_commands.json"])
        .args(args)
        .output()
        .expect("runs");
    let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code(), v)
}

/// Several programs in one database: each test program defines its own `log_line` (no
/// redefinition error), both link the library unit, the unit neither links (`journal.c`) is
/// the library part, and `--program` selects one.
#[test]
fn a_database_with_two_programs_analyses_each() {
    let (code, v) = json(&["-p", "tests/fixtures/project/multi/compile_commands.json"]);
    assert_eq!(
        (code, &v["verdict"]),
        (Some(0), &Value::from("no-race")),
        "{v}"
    );
    let out = racedar()
        .args(["check", "--no-cache", "--program", "nosuch", "-p"])
        .arg("tests/fixtures/project/multi/compile_commands.json")
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--program nosuch: no such program")
            && err.contains("tests/fixtures/project/multi/app/main.c"),
        "{err}"
    );
    let (code, _) = json(&[
        "--program",
        "test_counter",
        "-p",
        "tests/fixtures/project/multi/compile_commands.json",
    ]);
    assert_eq!(code, Some(0));
}

/// `--diff-base HEAD` reports the races a change introduces, by fingerprint and accesses: a
/// deleted lock/unlock pair (which changes no line of the racing accesses) is one new race,
/// named with both programs that link the unit, exit 1; the same race once committed is not
/// new (exit 0, counted as known); a new access to the raced variable makes it new again; a
/// harmless change that moves every line is nothing new; and after the fix nothing is
/// reported.
#[test]
fn diff_base_reports_exactly_the_new_race() {
    if !have_git() {
        return;
    }
    let dir = multi_repo();
    let repo = dir.path();
    let cache = tempfile::tempdir().expect("cache");
    let lib = repo.join("lib/counter.c");
    let original = std::fs::read_to_string(&lib).expect("counter.c");
    assert!(original.contains(LOCKED_ADD));
    // Harmless: a comment at the top moves every line.
    std::fs::write(&lib, format!("/* counter library */\n\n{original}")).expect("write");
    let (code, v) = check_in(repo, cache.path(), &["--diff-base", "HEAD"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["races"].as_array().map(Vec::len), Some(0), "{v}");
    // The lock pair removed.
    std::fs::write(&lib, original.replace(LOCKED_ADD, "  counter += n;")).expect("write");
    let (code, v) = check_in(repo, cache.path(), &["--diff-base", "HEAD"]);
    assert_eq!(code, Some(1), "{v}");
    let races = v["races"].as_array().expect("races");
    assert_eq!(races.len(), 1, "{v}");
    assert_eq!(races[0]["location"], "counter");
    assert_eq!(races[0]["program"], "app/main.c, tests/test_counter.c");
    assert_eq!(v["diff_base"]["rev"], "HEAD");
    // Committed, the race is the program's own: not new.
    git(repo, &["commit", "-q", "--no-verify", "-am", "racy"]);
    let (code, v) = check_in(repo, cache.path(), &["--diff-base", "HEAD"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["diff_base"]["known_races"], 1, "{v}");
    // A new access to the raced variable (the workers now also read it, locked): the old
    // race gains an access while its racing pair, and so its fingerprint, stays the old
    // one; that is news.
    let app = repo.join("app/main.c");
    let main_c = std::fs::read_to_string(&app).expect("main.c");
    assert!(main_c.contains("  counter_add(1);\n"));
    std::fs::write(
        &app,
        main_c.replace(
            "  counter_add(1);\n",
            "  counter_add(1);\n  (void)counter_get();\n",
        ),
    )
    .expect("write");
    let (code, v) = check_in(repo, cache.path(), &["--diff-base", "HEAD"]);
    assert_eq!(code, Some(1), "{v}");
    let races = v["races"].as_array().expect("races");
    assert_eq!(races.len(), 1, "{v}");
    assert_eq!(races[0]["location"], "counter");
    std::fs::write(&app, &main_c).expect("write");
    // The fix: nothing new either.
    std::fs::write(&lib, &original).expect("write");
    let (code, v) = check_in(repo, cache.path(), &["--diff-base", "HEAD"]);
    assert_eq!(
        (code, v["races"].as_array().map(Vec::len)),
        (Some(0), Some(0)),
        "{v}"
    );
}

/// A git pre-commit hook running `racedar check -p ... --changed --diff-base HEAD FILES` (the
/// staged C files, as pre-commit passes them) lets through a commit that adds no race and
/// blocks one that removes a lock pair, naming the race.
#[test]
fn a_pre_commit_hook_blocks_commits_adding_a_race() {
    if !have_git() {
        return;
    }
    let dir = multi_repo();
    let repo = dir.path();
    let bin = assert_cmd::cargo::cargo_bin("racedar");
    let hook = repo.join(".git/hooks/pre-commit");
    std::fs::write(
        &hook,
        format!(
            // As pre-commit runs the hook: the staged C files as arguments.
            "#!/bin/sh\nfiles=$(git diff --cached --name-only --diff-filter=ACM -- '*.c')\n\
             [ -z \"$files\" ] && exit 0\n\
             exec '{}' check --no-cache -p compile_commands.json --changed --diff-base HEAD $files\n",
            bin.display()
        ),
    )
    .expect("hook");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let lib = repo.join("lib/counter.c");
    let original = std::fs::read_to_string(&lib).expect("counter.c");
    // Nothing racy: a renamed local.
    std::fs::write(
        &lib,
        original
            .replace("int v;", "int value;")
            .replace("v = ", "value = ")
            .replace("return v;", "return value;"),
    )
    .expect("write");
    git(repo, &["add", "."]);
    let ok = git(repo, &["commit", "-q", "-m", "rename"]);
    assert!(
        ok.status.success(),
        "hook refused a harmless commit: {}{}",
        String::from_utf8_lossy(&ok.stdout),
        String::from_utf8_lossy(&ok.stderr)
    );
    let now = std::fs::read_to_string(&lib).expect("counter.c");
    std::fs::write(&lib, now.replace(LOCKED_ADD, "  counter += n;")).expect("write");
    git(repo, &["add", "."]);
    let refused = git(repo, &["commit", "-q", "-m", "racy"]);
    assert!(!refused.status.success(), "hook let a racy commit through");
    // Git passes a hook's output on to its stderr.
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&refused.stdout),
        String::from_utf8_lossy(&refused.stderr)
    );
    assert!(said.contains("data race on 'counter'"), "{said}");
}

/// Link conflicts between units (a variable defined twice, declared with types of different
/// sizes) are notes that keep the verdict from `no-race`, not errors.
#[test]
fn link_conflicts_are_notes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = dir.path().join("a.c");
    let b = dir.path().join("b.c");
    std::fs::write(&a, "int x = 1;\nlong y;\n").expect("write");
    std::fs::write(
        &b,
        "int x = 2;\nextern int y;\nint main(void) { return x + y; }\n",
    )
    .expect("write");
    let out = racedar()
        .args(["check", "--format", "json"])
        .arg(&a)
        .arg(&b)
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(v["verdict"], "unknown");
    let notes = v["imprecision"].to_string();
    assert!(notes.contains("'x' defined in two units"), "{notes}");
    assert!(
        notes.contains("'y' declared with types of different sizes"),
        "{notes}"
    );
}

/// Preprocessed units are cached by content: a second run reuses the entries, and changing an
/// included header invalidates them (the result follows the header).
#[test]
fn the_preprocessing_cache_follows_included_headers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let proj = dir.path().join("p");
    let cache = dir.path().join("cache");
    copy_dir(Path::new("tests/fixtures/project/racy"), &proj);
    let run = || {
        let out = racedar()
            .env("RACEDAR_CACHE_DIR", &cache)
            .args(["check", "--format", "json", "-p"])
            .arg(proj.join("compile_commands.json"))
            .output()
            .expect("runs");
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        v["races"][0]["location"].as_str().unwrap_or("").to_string()
    };
    assert_eq!(run(), "counter");
    let entries = || {
        std::fs::read_dir(cache.join("pp"))
            .map(|d| d.count())
            .unwrap_or(0)
    };
    assert_eq!(entries(), 2);
    assert_eq!(run(), "counter");
    assert_eq!(entries(), 2, "a second run adds no entry");
    let h = proj.join("include/counter.h");
    let text = std::fs::read_to_string(&h).expect("header");
    std::fs::write(
        &h,
        text.replace(
            "#define COUNTER_H",
            "#define COUNTER_H\n#define counter total",
        ),
    )
    .expect("write");
    assert_eq!(run(), "total");
}
