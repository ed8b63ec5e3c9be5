//! The shared corpus (`../shared/corpus/manifest.jsonl`) for the tests that run over it; they
//! skip, with a message, when it is absent.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// One C file of the manifest (its first entry; several tasks can share a file).
pub struct CorpusFile {
    /// The path relative to the corpus root, as in the manifest.
    pub rel: String,
    /// The task's suite (`svcomp`, `annotated`, `racerf`, `deadlock`, `realworld`).
    pub suite: String,
    /// The file, under the corpus root.
    pub path: PathBuf,
    /// The task's include directories, under the corpus root.
    pub include_dirs: Vec<PathBuf>,
    /// `ILP32` or `LP64`.
    pub data_model: String,
}

impl CorpusFile {
    /// The task's data model.
    pub fn model(&self) -> racedar::ir::DataModel {
        if self.data_model == "ILP32" {
            racedar::ir::DataModel::Ilp32
        } else {
            racedar::ir::DataModel::Lp64
        }
    }
}

/// The corpus root beside the checkout.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus")
}

/// Every file of the manifest under `root`, once each, in manifest order; `None` when there is
/// no manifest.
pub fn files(root: &Path) -> Option<Vec<CorpusFile>> {
    let manifest = std::fs::read_to_string(root.join("manifest.jsonl")).ok()?;
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for line in manifest.lines().filter(|l| !l.trim().is_empty()) {
        let v: serde_json::Value = serde_json::from_str(line).expect("manifest line is JSON");
        let Some(rel) = v["path"].as_str() else {
            continue;
        };
        if !seen.insert(rel.to_string()) {
            continue;
        }
        let include_dirs = v["include_dirs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|d| d.as_str())
            .map(|d| root.join(d))
            .collect();
        out.push(CorpusFile {
            rel: rel.to_string(),
            suite: v["suite"].as_str().unwrap_or("").to_string(),
            path: root.join(rel),
            include_dirs,
            data_model: v["data_model"].as_str().unwrap_or("LP64").to_string(),
        });
    }
    Some(out)
}
