//! Programs at the analysis's size bounds: a thread whose calls through unresolved function
//! pointers would give it more function contexts than `racedar::context::MAX_CONTEXTS` is
//! analysed (such calls enter their many targets without a call string,
//! `racedar::context::FANOUT_CONTEXTS`, and contexts beyond the bound share the
//! context-insensitive one) instead of crashing.

use assert_cmd::Command;

/// 460 functions whose addresses are taken, each called through a function pointer from 460
/// call sites: with the syntactic backend (every address-taken function of the pointer's type)
/// and call strings of length 1, 211,600 contexts of one thread if each call site told its
/// targets apart.
fn many_contexts() -> String {
    let n = 460;
    let mut c = String::from("#include <pthread.h>\n");
    for i in 0..n {
        c.push_str(&format!("int f_{i}(int x) {{ return x + {i}; }}\n"));
    }
    let names: Vec<String> = (0..n).map(|i| format!("f_{i}")).collect();
    c.push_str(&format!("int (*tab[])(int) = {{{}}};\n", names.join(", ")));
    c.push_str("int g;\n");
    for j in 0..n {
        c.push_str(&format!("void g_{j}(int k) {{ g += tab[k]({j}); }}\n"));
    }
    c.push_str("void *worker(void *a) {\n");
    for j in 0..n {
        c.push_str(&format!("  g_{j}({j});\n"));
    }
    c.push_str("  return 0;\n}\n");
    c.push_str(
        "int main(void) {\n  pthread_t t;\n  pthread_create(&t, 0, worker, 0);\n  \
         pthread_join(t, 0);\n  return g;\n}\n",
    );
    c
}

#[test]
#[cfg_attr(
    debug_assertions,
    ignore = "a few seconds in release builds, minutes in debug builds"
)]
fn contexts_beyond_the_bound_share_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("contexts.c");
    std::fs::write(&path, many_contexts()).expect("write");
    let out = Command::cargo_bin("racedar")
        .expect("binary built")
        .args(["check", "--backend", "syntactic", "--format", "json"])
        .arg(&path)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    // `g` is written by the worker and read by main after the join only.
    assert_eq!(v["verdict"], "no-race", "{v}");
}

#[test]
fn calls_through_unresolved_pointers_enter_their_targets_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("fanout.c");
    // 60 functions called through a table from 60 sites: 3,600 contexts with call strings,
    // more than `racedar::context::FANOUT_THREAD_CONTEXTS`.
    let n = 60;
    let mut c = String::from("#include <pthread.h>\n");
    for i in 0..n {
        c.push_str(&format!("int f_{i}(int x) {{ return x + {i}; }}\n"));
    }
    let names: Vec<String> = (0..n).map(|i| format!("f_{i}")).collect();
    c.push_str(&format!(
        "int (*tab[])(int) = {{{}}};\nint g;\n",
        names.join(", ")
    ));
    c.push_str("void *worker(void *a) {\n");
    for j in 0..n {
        c.push_str(&format!("  g += tab[{j}]({j});\n"));
    }
    c.push_str(
        "  return 0;\n}\nint main(void) {\n  pthread_t t;\n  \
         pthread_create(&t, 0, worker, 0);\n  pthread_join(t, 0);\n  return g;\n}\n",
    );
    std::fs::write(&path, c).expect("write");
    let (mut program, _) = racedar::frontend::load(
        std::slice::from_ref(&path),
        &racedar::frontend::FrontendOptions::default(),
    )
    .expect("lowers");
    let opts = racedar::pipeline::AnalysisOptions {
        backend: racedar::pipeline::BackendKind::Syntactic,
        ..Default::default()
    };
    let mut roles = opts.model.classify(&program);
    racedar::pipeline::prepare(&mut program, &mut roles, &opts);
    let analysis = racedar::pipeline::analyse(&program, &roles, &opts);
    let contexts: usize = analysis.graph.contexts.iter().map(|c| c.ctxs.len()).sum();
    // main and the worker, each target once per thread that reaches it.
    assert!(contexts <= 2 + n, "{contexts} contexts");
    assert_eq!(analysis.verdict, racedar::report::Verdict::NoRace);
}
