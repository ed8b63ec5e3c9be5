//! Every C file of the shared corpus (`../shared/corpus/manifest.jsonl`: the svcomp, annotated,
//! racerf, deadlock and realworld suites) lowers to IR without error, with each task's include
//! directories and data model. Skipped, with a message, when the corpus is not there.

use racedar::frontend::{self, FrontendOptions, PreprocessOptions};
use racedar::ir::DataModel;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

struct Task {
    path: PathBuf,
    include_dirs: Vec<PathBuf>,
    data_model: DataModel,
}

fn tasks(root: &Path) -> Vec<Task> {
    let manifest = std::fs::read_to_string(root.join("manifest.jsonl")).expect("manifest");
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in manifest.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("manifest line is JSON");
        let path = v["path"].as_str().expect("path").to_string();
        if !seen.insert(path.clone()) {
            continue;
        }
        let include_dirs = v["include_dirs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d.as_str())
                    .map(|d| root.join(d))
                    .collect()
            })
            .unwrap_or_default();
        let data_model = match v["data_model"].as_str() {
            Some("ILP32") => DataModel::Ilp32,
            _ => DataModel::Lp64,
        };
        out.push(Task {
            path: root.join(path),
            include_dirs,
            data_model,
        });
    }
    out
}

#[test]
fn every_corpus_file_lowers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    if !root.join("manifest.jsonl").exists() {
        eprintln!("skipped: no corpus at {}", root.display());
        return;
    }
    let tasks = tasks(&root);
    assert!(
        tasks.len() > 300,
        "manifest lists only {} files",
        tasks.len()
    );
    let next = Mutex::new(0usize);
    let failures = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            // Lowering recurses over the syntax tree: give the workers a large stack.
            std::thread::Builder::new()
                .stack_size(256 << 20)
                .spawn_scoped(s, || {
                    loop {
                        let i = {
                            let mut n = next.lock().expect("lock");
                            *n += 1;
                            *n - 1
                        };
                        let Some(t) = tasks.get(i) else { break };
                        let opts = FrontendOptions {
                            preprocess: PreprocessOptions {
                                include_dirs: t.include_dirs.clone(),
                                ..Default::default()
                            },
                            data_model: t.data_model,
                        };
                        if let Err(e) = frontend::load(std::slice::from_ref(&t.path), &opts) {
                            failures
                                .lock()
                                .expect("lock")
                                .push(format!("{}: {e}", t.path.display()));
                        }
                    }
                })
                .expect("spawn");
        }
    });
    let failures = failures.into_inner().expect("lock");
    eprintln!(
        "lowered {} of {} corpus files",
        tasks.len() - failures.len(),
        tasks.len()
    );
    assert!(
        failures.is_empty(),
        "{} files fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
