//! Criterion benchmarks of the front-end phases (preprocess, parse, lower) on a small SV-COMP
//! task, a medium and the largest real-world program of the shared corpus
//! (`../shared/corpus`, read through its manifest). Skipped when the corpus is absent.
//!
//! Run: `cargo bench --bench frontend`.

use criterion::{Criterion, criterion_group, criterion_main};
use racedar::frontend::lower::ProgramBuilder;
use racedar::frontend::preprocess::{self, PreprocessOptions};
use racedar::frontend::{parse, source_map::FileTable};
use racedar::ir::DataModel;
use std::hint::black_box;
use std::path::{Path, PathBuf};

/// A corpus program: label, path, include directories, data model.
struct Program {
    label: &'static str,
    path: PathBuf,
    include_dirs: Vec<PathBuf>,
    data_model: DataModel,
}

/// Picks the first svcomp task, the median and the largest real-world program.
fn programs() -> Vec<Program> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus");
    let Ok(manifest) = std::fs::read_to_string(root.join("manifest.jsonl")) else {
        eprintln!("skipped: no corpus at {}", root.display());
        return Vec::new();
    };
    let mut svcomp = None;
    let mut realworld = Vec::new();
    for line in manifest.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let Some(path) = v["path"].as_str() else {
            continue;
        };
        let path = root.join(path);
        let include_dirs: Vec<PathBuf> = v["include_dirs"]
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
        match v["suite"].as_str() {
            Some("svcomp") if svcomp.is_none() => {
                svcomp = Some(Program {
                    label: "small-svcomp",
                    path,
                    include_dirs,
                    data_model,
                })
            }
            Some("realworld") => {
                let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                realworld.push((size, path, include_dirs, data_model));
            }
            _ => {}
        }
    }
    realworld.sort_by_key(|r| r.0);
    let mut out: Vec<Program> = svcomp.into_iter().collect();
    for (label, idx) in [
        ("medium-realworld", realworld.len() / 2),
        ("largest-realworld", realworld.len().wrapping_sub(1)),
    ] {
        if let Some((_, path, include_dirs, data_model)) = realworld.get(idx).cloned() {
            out.push(Program {
                label,
                path,
                include_dirs,
                data_model,
            });
        }
    }
    out
}

fn frontend(c: &mut Criterion) {
    for p in programs() {
        let opts = PreprocessOptions {
            include_dirs: p.include_dirs.clone(),
            ..Default::default()
        };
        let mut group = c.benchmark_group(p.label);
        group.sample_size(10);
        group.bench_function("preprocess", |b| {
            b.iter(|| black_box(preprocess::preprocess(&p.path, &opts).expect("preprocesses")))
        });
        let pp = preprocess::preprocess(&p.path, &opts).expect("preprocesses");
        group.bench_function("parse", |b| {
            b.iter(|| {
                let mut files = FileTable::default();
                black_box(parse::parse(&pp.path, pp.text.clone(), &mut files).expect("parses"))
            })
        });
        group.bench_function("lower", |b| {
            b.iter_batched(
                || {
                    let mut pb = ProgramBuilder::new(p.data_model);
                    let main = pb.files.intern(&pp.path);
                    let parsed =
                        parse::parse(&pp.path, pp.text.clone(), &mut pb.files).expect("parses");
                    (pb, parsed, main)
                },
                |(mut pb, parsed, main)| {
                    pb.lower_unit(&parsed, main).expect("lowers");
                    black_box(pb.finish())
                },
                criterion::BatchSize::LargeInput,
            )
        });
        group.finish();
    }
}

criterion_group!(benches, frontend);
criterion_main!(benches);
