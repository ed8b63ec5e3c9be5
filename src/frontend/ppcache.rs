//! A cache of preprocessed translation units (`.c` files and `-p` projects), keyed by content, as
//! ccache's "direct mode": the key hashes the preprocessor command, its directory, the source
//! path and the source bytes; an entry records every file the unit included (from its line
//! markers) with its size and modification time (nanoseconds), and is used only while all of
//! them are unchanged, as make decides what to rebuild. (Hashing the headers' bytes instead
//! costs about a millisecond per unit, a tenth of running the preprocessor.)
//!
//! Entries are files `<key>.json` in `<cache>/pp`, where `<cache>` is [`cache_root`]. A missing,
//! unreadable or stale entry is a miss; failing to write one is ignored (the cache only saves
//! time).

use super::compdb::Unit;
use super::preprocess::Preprocessed;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

#[derive(Serialize, Deserialize)]
struct Entry {
    /// (path, `size:mtime_ns` stamp) of every included file.
    deps: Vec<(PathBuf, String)>,
    /// The preprocessed text.
    text: String,
}

/// racedar's cache directory, when one can be named: `$RACEDAR_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/racedar`, else `~/.cache/racedar`. Empty values are unset, and
/// `XDG_CACHE_HOME` and `HOME` count only when absolute (XDG Base Directory specification), so
/// the cache never lands in the current directory by accident. It holds preprocessed units
/// (`pp/`, this module) and the preprocessor commands of compiler drivers (`driver/`, see
/// [`super::driver`]).
pub fn cache_root() -> Option<PathBuf> {
    let var = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    if let Some(d) = var("RACEDAR_CACHE_DIR") {
        return Some(d);
    }
    let base = var("XDG_CACHE_HOME")
        .filter(|p| p.is_absolute())
        .or_else(|| {
            var("HOME")
                .filter(|p| p.is_absolute())
                .map(|h| h.join(".cache"))
        })?;
    Some(base.join("racedar"))
}

/// The directory of preprocessed units: `<cache_root>/pp`.
pub fn default_dir() -> Option<PathBuf> {
    cache_root().map(|r| r.join("pp"))
}

/// Lower-case hexadecimal of `bytes` (cache keys).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `size:mtime_ns` of the file at `p`.
pub(super) fn file_stamp(p: &Path) -> Option<String> {
    let m = std::fs::metadata(p).ok()?;
    let t = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?;
    Some(format!("{}:{}", m.len(), t.as_nanos()))
}

/// The key of a unit: its preprocessing options, directory, path and source bytes.
fn key(unit: &Unit) -> Option<String> {
    let src = std::fs::read(&unit.path).ok()?;
    let mut h = Sha256::new();
    h.update(
        format!(
            "{:?}|{}|{}|",
            unit.preprocess,
            unit.path.display(),
            unit.name
        )
        .as_bytes(),
    );
    // The environment the preprocessor reads besides its arguments.
    for var in [
        "CC",
        "CPATH",
        "C_INCLUDE_PATH",
        "GCC_EXEC_PREFIX",
        "COMPILER_PATH",
    ] {
        h.update(std::env::var(var).unwrap_or_default().as_bytes());
        h.update([0u8]);
    }
    h.update(&src);
    Some(hex(&h.finalize()))
}

/// The preprocessed unit from the cache in `dir`, if an entry is there and still valid.
pub fn lookup(dir: &Path, unit: &Unit) -> Option<Preprocessed> {
    let k = key(unit)?;
    let text = std::fs::read_to_string(dir.join(format!("{k}.json"))).ok()?;
    let e: Entry = serde_json::from_str(&text).ok()?;
    let fresh = e
        .deps
        .iter()
        .all(|(p, h)| file_stamp(p).as_deref() == Some(h.as_str()));
    fresh.then(|| Preprocessed {
        path: unit.name.clone(),
        text: e.text,
    })
}

/// Stores a unit preprocessed in `cwd` (whose line markers still name files as the
/// preprocessor saw them).
pub fn store(dir: &Path, unit: &Unit, pp: &Preprocessed) {
    let Some(k) = key(unit) else { return };
    let cwd = unit.preprocess.cwd.clone().unwrap_or_default();
    let mut deps: Vec<(PathBuf, String)> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for line in pp.text.lines() {
        let Some((_, file, _)) = super::compdb::marker_file(line) else {
            continue;
        };
        if !seen.insert(file.to_string()) {
            continue;
        }
        let p = cwd.join(file);
        match file_stamp(&p) {
            Some(h) => deps.push((p, h)),
            None => return, // an include we cannot stat: do not cache
        }
    }
    let entry = Entry {
        deps,
        text: pp.text.clone(),
    };
    if std::fs::create_dir_all(dir).is_ok()
        && let Ok(json) = serde_json::to_string(&entry)
    {
        write_atomically(&dir.join(format!("{k}.json")), &json);
    }
}

/// Writes `contents` to `file` (in an existing directory) through a temporary file and a
/// rename, so a concurrent reader never sees half of it; failures are ignored (the caches
/// only save time).
pub(super) fn write_atomically(file: &Path, contents: &str) {
    let tmp = file.with_extension(format!("{}.tmp", std::process::id()));
    if std::fs::write(&tmp, contents).is_ok() {
        let _ = std::fs::rename(&tmp, file);
    }
}

/// Stores still being written by [`store_in_background`].
static PENDING: std::sync::Mutex<Vec<std::thread::JoinHandle<()>>> =
    std::sync::Mutex::new(Vec::new());

/// [`store`] on another thread, so that writing the entry overlaps parsing and analysis;
/// [`finish_stores`] waits for it. When no thread can be started nothing is stored.
pub fn store_in_background(dir: &Path, unit: &Unit, pp: &Preprocessed) {
    let (dir, unit, pp) = (dir.to_path_buf(), unit.clone(), pp.clone());
    match std::thread::Builder::new()
        .name("ppcache".into())
        .spawn(move || store(&dir, &unit, &pp))
    {
        Ok(h) => {
            if let Ok(mut v) = PENDING.lock() {
                v.push(h);
            }
        }
        Err(e) => tracing::debug!("cannot start a cache writer: {e}"),
    }
}

/// Waits for the entries [`store_in_background`] is writing (call before the process ends,
/// or a half-written temporary file may stay behind; a reader never sees it).
pub fn finish_stores() {
    let pending = PENDING
        .lock()
        .map(|mut v| std::mem::take(&mut *v))
        .unwrap_or_default();
    for h in pending {
        let _ = h.join();
    }
}
