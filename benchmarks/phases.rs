//! Criterion benchmarks of every phase of `racedar check` (preprocess, parse, lower, model,
//! threads, lockset, mhp, races, deadlocks, concrete) on the smallest, a medium and the largest
//! real-world program of the shared corpus (`../shared/corpus/realworld`, chosen by file size
//! among the programs with a `main`). Skipped when the corpus is absent.
//!
//! Each analysis phase is timed alone: the phases before it run once (or, for the phases that
//! consume their inputs, in an untimed setup per iteration) through the pipeline's phase
//! functions (`racedar::pipeline::{thread_graph, active_threads, find_races, ...}`), the same
//! code `racedar check` runs.
//!
//! Run: `cargo bench --bench phases` (a few minutes: 10 samples per benchmark); one program:
//! `cargo bench --bench phases -- largest`. Under `cargo test --benches` (criterion's test mode)
//! only the smallest program runs, once per phase.

use criterion::{BatchSize, BenchmarkGroup, Criterion, SamplingMode, criterion_group};
use criterion::{criterion_main, measurement::WallTime};
use racedar::backend::value::ValueBackend;
use racedar::frontend::lower::ProgramBuilder;
use racedar::frontend::preprocess::{self, PreprocessOptions};
use racedar::frontend::{self, FrontendOptions, parse, source_map::FileTable};
use racedar::ir::{DataModel, Program};
use racedar::lockset::LocksetResult;
use racedar::pipeline::{self, AnalysisOptions};
use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A real-world program of the corpus.
struct Input {
    /// Benchmark group name (`small-NAME`, `medium-NAME`, `largest-NAME`).
    label: String,
    path: PathBuf,
    include_dirs: Vec<PathBuf>,
    data_model: DataModel,
}

/// Whether criterion measures (`cargo bench`) rather than tests (`cargo test --benches`).
fn measuring() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test")
}

/// The real-world programs of the manifest, smallest first: (file size in bytes, input).
fn realworld(root: &Path) -> Vec<(u64, Input)> {
    let Ok(manifest) = std::fs::read_to_string(root.join("manifest.jsonl")) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for line in manifest.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some("realworld"), Some(path)) = (v["suite"].as_str(), v["path"].as_str()) else {
            continue;
        };
        let path = root.join(path);
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        let include_dirs = v["include_dirs"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|d| d.as_str())
                    .map(|d| root.join(d))
                    .collect()
            })
            .unwrap_or_default();
        let data_model = if v["data_model"] == "ILP32" {
            DataModel::Ilp32
        } else {
            DataModel::Lp64
        };
        let name = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        out.push((
            size,
            Input {
                label: name,
                path,
                include_dirs,
                data_model,
            },
        ));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.path.cmp(&b.1.path)));
    out
}

fn frontend_options(p: &Input) -> FrontendOptions {
    FrontendOptions {
        preprocess: PreprocessOptions {
            include_dirs: p.include_dirs.clone(),
            ..Default::default()
        },
        data_model: p.data_model,
    }
}

/// The lowered program of `p` as `racedar check` analyses it, when it loads and has a `main`.
fn prepared(p: &Input, opts: &AnalysisOptions) -> Option<(Program, racedar::model::Roles)> {
    let (mut program, _) = frontend::load(std::slice::from_ref(&p.path), &frontend_options(p))
        .map_err(|e| eprintln!("skipped {}: {e}", p.path.display()))
        .ok()?;
    pipeline::main_function(&program)?;
    let mut roles = opts.model.classify(&program);
    pipeline::prepare(&mut program, &mut roles, opts);
    Some((program, roles))
}

/// The smallest, the median and the largest real-world program with a `main` (only the
/// smallest outside measuring mode).
fn programs() -> Vec<Input> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let all = realworld(&root);
    if all.is_empty() {
        eprintln!("skipped: no corpus at {}", root.display());
        return Vec::new();
    }
    let opts = AnalysisOptions::default();
    let has_main = |i: &Input| prepared(i, &opts).is_some();
    let n = all.len();
    // Search from each starting index upwards (downwards for the largest) for a program with
    // a main.
    let mut picks: Vec<(&str, usize)> = Vec::new();
    if let Some(i) = (0..n).find(|&i| has_main(&all[i].1)) {
        picks.push(("small", i));
    }
    if measuring() {
        if let Some(i) = (n / 2..n).find(|&i| has_main(&all[i].1)) {
            picks.push(("medium", i));
        }
        if let Some(i) = (0..n).rev().find(|&i| has_main(&all[i].1)) {
            picks.push(("largest", i));
        }
    }
    picks.dedup_by_key(|p| p.1);
    let mut all: Vec<Option<Input>> = all.into_iter().map(|(_, i)| Some(i)).collect();
    picks
        .into_iter()
        .filter_map(|(size, i)| {
            let mut p = all[i].take()?;
            p.label = format!("{size}-{}", p.label);
            Some(p)
        })
        .collect()
}

fn configure(group: &mut BenchmarkGroup<'_, WallTime>) {
    group
        .sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
}

fn frontend_phases(group: &mut BenchmarkGroup<'_, WallTime>, p: &Input) {
    let opts = frontend_options(p).preprocess;
    let Ok(pp) = preprocess::preprocess(&p.path, &opts) else {
        eprintln!("skipped {}: preprocessing failed", p.path.display());
        return;
    };
    group.bench_function("preprocess", |b| {
        b.iter(|| black_box(preprocess::preprocess(&p.path, &opts).is_ok()))
    });
    group.bench_function("parse", |b| {
        b.iter(|| {
            let mut files = FileTable::default();
            black_box(parse::parse(&pp.path, pp.text.clone(), &mut files).is_ok())
        })
    });
    group.bench_function("lower", |b| {
        b.iter_batched(
            || {
                let mut pb = ProgramBuilder::new(p.data_model);
                let main = pb.files.intern(&pp.path);
                let parsed = parse::parse(&pp.path, pp.text.clone(), &mut pb.files).ok();
                (pb, parsed, main)
            },
            |(mut pb, parsed, main)| {
                if let Some(parsed) = parsed {
                    let _ = pb.lower_unit(&parsed, main);
                }
                black_box(pb.finish())
            },
            BatchSize::LargeInput,
        )
    });
}

fn analysis_phases(group: &mut BenchmarkGroup<'_, WallTime>, p: &Input) {
    let opts = AnalysisOptions::default();
    let Some((program, roles)) = prepared(p, &opts) else {
        return;
    };
    let Some(main) = pipeline::main_function(&program) else {
        return;
    };
    let (program, roles) = (&program, &roles);
    let depth = opts.context_depth;
    let backend = || ValueBackend::new(program, roles, depth);
    group.bench_function("model", |b| b.iter(|| black_box(backend())));
    group.bench_function("threads", |b| {
        b.iter_batched(
            backend,
            |mut be| {
                let g = pipeline::thread_graph(program, roles, &mut be, main, depth);
                (be, g)
            },
            BatchSize::PerIteration,
        )
    });
    // The inputs of the later phases, computed once.
    let mut be = backend();
    let graph = pipeline::thread_graph(program, roles, &mut be, main, depth);
    let be = &be;
    let graph = &graph;
    let locksets = || LocksetResult::compute(program, roles, be, graph);
    group.bench_function("lockset", |b| b.iter(locksets));
    group.bench_function("mhp", |b| {
        b.iter(|| pipeline::active_threads(program, roles, be, graph))
    });
    let (mhp, facts) = pipeline::active_threads(program, roles, be, graph);
    let (mhp, facts) = (&mhp, &facts[..]);
    // Race detection and deadlock detection add to the lock table: fresh locksets each time.
    group.bench_function("races", |b| {
        b.iter_batched(
            locksets,
            |mut ls| {
                let r = pipeline::find_races(program, roles, be, graph, &mut ls, mhp, facts);
                (r, ls)
            },
            BatchSize::PerIteration,
        )
    });
    let with_races = || {
        let mut ls = locksets();
        let (races, inherited) =
            pipeline::find_races(program, roles, be, graph, &mut ls, mhp, facts);
        (races, inherited, ls)
    };
    group.bench_function("deadlocks", |b| {
        b.iter_batched(
            with_races,
            |(races, inherited, mut ls)| {
                let d = pipeline::find_deadlocks(
                    program,
                    roles,
                    be,
                    graph,
                    (mhp, facts, &inherited),
                    &mut ls,
                    false,
                );
                (d, races, inherited, ls)
            },
            BatchSize::PerIteration,
        )
    });
    let (races, _, _) = with_races();
    group.bench_function("concrete", |b| {
        b.iter_batched(
            || races.clone(),
            |mut r| {
                let w = pipeline::witness_races(program, roles, &mut r);
                (w, r)
            },
            BatchSize::PerIteration,
        )
    });
}

fn phases(c: &mut Criterion) {
    for p in programs() {
        let mut group = c.benchmark_group(&p.label);
        configure(&mut group);
        frontend_phases(&mut group, &p);
        analysis_phases(&mut group, &p);
        group.finish();
    }
}

criterion_group!(benches, phases);
criterion_main!(benches);
