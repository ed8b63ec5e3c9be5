//! Every C file of the shared corpus (`../shared/corpus/manifest.jsonl`: the svcomp, annotated,
//! racerf, deadlock and realworld suites) lowers to IR without error, with each task's include
//! directories and data model. Skipped, with a message, when the corpus is not there.

mod common;

use common::corpus;
use racedar::frontend::{self, FrontendOptions, PreprocessOptions};
use racedar::ir::DataModel;
use std::path::PathBuf;
use std::sync::Mutex;

struct Task {
    path: PathBuf,
    include_dirs: Vec<PathBuf>,
    data_model: DataModel,
}

fn tasks(files: Vec<corpus::CorpusFile>) -> Vec<Task> {
    files
        .into_iter()
        .map(|f| Task {
            path: f.path,
            include_dirs: f.include_dirs,
            data_model: if f.data_model == "ILP32" {
                DataModel::Ilp32
            } else {
                DataModel::Lp64
            },
        })
        .collect()
}

#[test]
fn every_corpus_file_lowers() {
    let root = corpus::root();
    let Some(files) = corpus::files(&root) else {
        eprintln!("skipped: no corpus at {}", root.display());
        return;
    };
    let tasks = tasks(files);
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
