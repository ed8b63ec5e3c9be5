//! Soundness cross-check between the two engines (issue "Soundness and recall on real code",
//! item 2), over what the concrete interpreter does in the executions it tries
//! (`racedar::concrete::reached`):
//! - every CFG node it reaches is reachable in the static analysis, in a thread with the same
//!   entry function (the lockset analysis's reachability, which decides which accesses the
//!   race search considers): a node reached concretely but unreachable statically is code that
//!   silently dropped out of the analysis;
//! - every statement that accesses an object two threads access (one writing) is an access the
//!   race search considered, in a thread with the same entry;
//! - no call the analysis reaches leaves its (surely called, defined) callee unanalysed (the
//!   pipeline's "never analysed" imprecision).
//!
//! Functions with a role (assumptions, lock wrappers, library models) are analysed by their
//! role, not their body, and are left out. A violation fails the test naming the program, the
//! function and the node or line.
//!
//! Over every race fixture and the small corpus suites (svcomp, annotated, racerf, deadlock);
//! the real-world suite is checked by the ignored test `crosscheck_realworld` (run it with
//! `cargo test --release --test engine_crosscheck -- --ignored`). The corpus part skips, with
//! a message, when the corpus is not there.

mod common;

use common::corpus;
use racedar::concrete::{self, Budget};
use racedar::frontend::{self, FrontendOptions, PreprocessOptions};
use racedar::ir::DataModel;
use racedar::pipeline::{self, AnalysisOptions};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// One program to check.
struct Task {
    path: PathBuf,
    include_dirs: Vec<PathBuf>,
    data_model: DataModel,
    configs: Vec<String>,
}

/// The nodes the concrete interpreter reaches that the analysis of `t` does not, and the
/// statements accessing shared objects concretely that the race search has no access for, as
/// messages; with the numbers of nodes and statements checked.
fn violations(t: &Task) -> (Vec<String>, usize, usize) {
    let opts = FrontendOptions {
        preprocess: PreprocessOptions {
            include_dirs: t.include_dirs.clone(),
            ..Default::default()
        },
        data_model: t.data_model,
    };
    let Ok((mut program, _)) = frontend::load(std::slice::from_ref(&t.path), &opts) else {
        return (Vec::new(), 0, 0); // lowering is checked elsewhere
    };
    let mut model = racedar::model::Model::shipped();
    for f in &t.configs {
        let text = std::fs::read_to_string(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        model
            .add_toml(f, &text)
            .unwrap_or_else(|e| panic!("{f}: {e}"));
    }
    let aopts = AnalysisOptions {
        model,
        concrete: false,
        ..Default::default()
    };
    let mut roles = aopts.model.classify(&program);
    pipeline::prepare(&mut program, &mut roles, &aopts);
    let analysis = pipeline::analyse(&program, &roles, &aopts);
    let concrete::Reached { nodes, shared } =
        concrete::reached(&program, &roles, Budget::default());
    let mut out = Vec::new();
    // Calls the analysis reached whose callee it never entered (item 3: no code may silently
    // drop out of the analysis).
    for i in &analysis.imprecision {
        if i.reason.contains("never analysed") {
            out.push(format!(
                "{}: line {}: {}",
                t.path.display(),
                i.loc.map_or(0, |l| l.line),
                i.reason
            ));
        }
    }
    // Statements the race search considered, by the entry of their thread.
    let considered: std::collections::HashSet<_> = analysis
        .races
        .accesses
        .iter()
        .map(|a| (analysis.graph.thread(a.thread).entry, a.func, a.edge))
        .collect();
    let mut shared: Vec<_> = shared.into_iter().collect();
    shared.sort();
    let counts = (nodes.len(), shared.len());
    for (entry, func, edge) in shared {
        if roles.get(func).is_some() || considered.contains(&(entry, func, edge)) {
            continue;
        }
        let f = program.function(func);
        out.push(format!(
            "{}: the statement at line {} of {} accesses an object another thread accesses \
             (concretely, in a thread of {}), but the race search has no access there",
            t.path.display(),
            f.edge_loc(edge).line,
            f.name,
            program.function(entry).name
        ));
    }
    let mut reached: Vec<_> = nodes.into_iter().collect();
    reached.sort();
    for (entry, func, node) in reached {
        // A function with a role (an assumption, a lock wrapper, a library model) is analysed
        // by its role, not by its body.
        if roles.get(func).is_some() {
            continue;
        }
        let ok = analysis
            .graph
            .threads
            .iter()
            .filter(|th| th.entry == entry)
            .any(|th| {
                let tc = analysis.graph.contexts(th.id);
                tc.ids()
                    .filter(|c| tc.ctx(*c).func == func)
                    .any(|c| analysis.locksets.reachable(th.id, c, node))
            });
        if !ok {
            let f = program.function(func);
            let loc = f
                .body
                .as_ref()
                .and_then(|cfg| {
                    cfg.edges
                        .iter()
                        .find(|e| e.src == node || e.dst == node)
                        .map(|e| e.loc.line)
                })
                .unwrap_or(0);
            out.push(format!(
                "{}: node {} of {} (near line {loc}), reached concretely by a thread of {}, \
                 is unreachable in the analysis",
                t.path.display(),
                node.0,
                f.name,
                program.function(entry).name
            ));
        }
    }
    (out, counts.0, counts.1)
}

/// Checks `tasks` on two threads; panics with every violation.
fn check(tasks: Vec<Task>) {
    let next = Mutex::new(0usize);
    let failures = Mutex::new(Vec::new());
    let counts = Mutex::new((0usize, 0usize));
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
                    let (v, n, k) = violations(t);
                    failures.lock().expect("lock").extend(v);
                    let mut c = counts.lock().expect("lock");
                    c.0 += n;
                    c.1 += k;
                }
            });
        }
    });
    let mut failures = failures.into_inner().expect("lock");
    let (n, k) = counts.into_inner().expect("lock");
    failures.sort();
    assert!(
        failures.is_empty(),
        "{} nodes reached concretely but unreachable statically:\n{}",
        failures.len(),
        failures.join("\n")
    );
    eprintln!(
        "checked {} programs: {} nodes reached, {} statements accessing shared objects",
        tasks.len(),
        n,
        k
    );
}

/// The `--config` files of a fixture's `ARGS:` line.
fn fixture_configs(src: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in src.lines() {
        if let Some(a) = line
            .split("//")
            .nth(1)
            .and_then(|c| c.trim().strip_prefix("ARGS:"))
        {
            let words: Vec<&str> = a.split_whitespace().collect();
            for w in words.windows(2) {
                if w[0] == "--config" {
                    out.push(w[1].to_string());
                }
            }
        }
    }
    out
}

#[test]
fn crosscheck_fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/races");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("fixtures")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "c"))
        .collect();
    paths.sort();
    let tasks = paths
        .into_iter()
        .map(|p| {
            let src = std::fs::read_to_string(&p).expect("fixture");
            Task {
                configs: fixture_configs(&src),
                path: p
                    .strip_prefix(env!("CARGO_MANIFEST_DIR"))
                    .unwrap_or(&p)
                    .to_path_buf(),
                include_dirs: Vec::new(),
                data_model: DataModel::Lp64,
            }
        })
        .collect();
    check(tasks);
}

fn corpus_tasks(keep: impl Fn(&str) -> bool) -> Option<Vec<Task>> {
    let root = corpus::root();
    let Some(files) = corpus::files(&root) else {
        eprintln!("skipped: no corpus at {}", root.display());
        return None;
    };
    Some(
        files
            .into_iter()
            .filter(|f| keep(&f.suite))
            .map(|f| Task {
                data_model: f.model(),
                path: f.path,
                include_dirs: f.include_dirs,
                configs: Vec::new(),
            })
            .collect(),
    )
}

#[test]
fn crosscheck_corpus() {
    if let Some(tasks) = corpus_tasks(|s| s != "realworld") {
        check(tasks);
    }
}

#[test]
#[ignore = "slow in debug builds: run with --release -- --ignored"]
fn crosscheck_realworld() {
    if let Some(tasks) = corpus_tasks(|s| s == "realworld") {
        check(tasks);
    }
}
