//! Determinism (DESIGN.md, "Output contracts"): the same input gives the same report, run
//! after run and whatever the number of worker threads (racedar has no `--jobs` option; its
//! only parallelism is rayon's pool, sized by `RAYON_NUM_THREADS`).
//!
//! Over the corpus (`../shared/corpus`, skipped with a message when absent) and the race
//! fixtures, each program is analysed twice, with `RAYON_NUM_THREADS=1` and `=2`: the JSON
//! reports must be byte-identical up to their `"stats"` member (the last one; it holds wall
//! times and memory, which vary) and agree on the counts inside it. The text and SARIF formats
//! hold no timings and are compared whole on the fixtures.

mod common;

use common::corpus;
use std::path::{Path, PathBuf};
use std::process::Command;

struct Task {
    path: PathBuf,
    args: Vec<String>,
}

fn corpus_tasks(root: &Path) -> Vec<Task> {
    let files = corpus::files(root).unwrap_or_default();
    files
        .into_iter()
        // The realworld programs take seconds each in a debug build: the small suites cover
        // the same code paths.
        .filter(|f| f.suite != "realworld")
        .map(|f| {
            let mut args = vec!["--data-model".to_string(), f.data_model];
            for d in &f.include_dirs {
                args.push("-I".into());
                args.push(d.display().to_string());
            }
            Task { path: f.path, args }
        })
        .collect()
}

/// `racedar check --format FORMAT ARGS FILE` with `RAYON_NUM_THREADS=threads`: stdout.
fn output(task: &Task, format: &str, threads: usize) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_racedar"))
        .args(["check", "--format", format])
        .args(&task.args)
        .arg(&task.path)
        .env("RAYON_NUM_THREADS", threads.to_string())
        .output()
        .expect("racedar runs");
    out.stdout
}

/// The JSON report without its timings: the text before `"stats"`, and the counts in it.
fn without_timings(json: &[u8]) -> (Vec<u8>, serde_json::Value) {
    let text = String::from_utf8_lossy(json);
    let Some(at) = text.rfind(",\"stats\":") else {
        return (json.to_vec(), serde_json::Value::Null);
    };
    let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let mut stats = v["stats"].clone();
    if let Some(o) = stats.as_object_mut() {
        o.remove("phases");
        o.remove("peak_rss_mib");
    }
    (text.as_bytes()[..at].to_vec(), stats)
}

/// Runs `check` over `tasks` on two worker threads; returns the programs whose reports differ.
fn differing(tasks: &[Task], formats: &[&str]) -> Vec<String> {
    let next = std::sync::Mutex::new(0usize);
    let bad = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().expect("lock");
                        *n += 1;
                        *n - 1
                    };
                    let Some(t) = tasks.get(i) else { break };
                    for format in formats {
                        let (a, b) = (output(t, format, 1), output(t, format, 2));
                        let same = if *format == "json" {
                            without_timings(&a) == without_timings(&b)
                        } else {
                            a == b
                        };
                        if !same {
                            bad.lock()
                                .expect("lock")
                                .push(format!("{} ({format})", t.path.display()));
                        }
                    }
                }
            });
        }
    });
    let mut bad = bad.into_inner().expect("lock");
    bad.sort();
    bad
}

#[test]
fn fixture_reports_are_identical_across_runs_and_thread_counts() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/races");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    files.sort();
    let tasks: Vec<Task> = files
        .into_iter()
        .map(|path| Task {
            path,
            args: Vec::new(),
        })
        .collect();
    let bad = differing(&tasks, &["json", "text", "sarif"]);
    assert!(bad.is_empty(), "reports differ:\n{}", bad.join("\n"));
}

#[test]
fn corpus_reports_are_identical_across_runs_and_thread_counts() {
    let root = corpus::root();
    let tasks = corpus_tasks(&root);
    if tasks.is_empty() {
        eprintln!("skipped: no corpus at {}", root.display());
        return;
    }
    let bad = differing(&tasks, &["json"]);
    assert!(bad.is_empty(), "reports differ:\n{}", bad.join("\n"));
}
