//! Differential runs (`--diff-base REV`, issue 21 item 3): the program is analysed as it is
//! at the git revision `REV` and as it is now, and only races and deadlocks whose
//! fingerprints are new are reported (Infer's `reportdiff`, `notes/ecosystem.md` §3). A
//! deleted lock/unlock pair changes no line of either racing access, so filtering by changed
//! lines misses exactly the races a commit introduces; comparing fingerprints does not.
//!
//! This module makes the program at `REV` readable as files: a [`Snapshot`] holds the files
//! git tracks at `REV` (C sources and headers) and the untracked ones of the working tree
//! (generated headers such as `config.h` are the same at both revisions), under one directory
//! per tree, reused while the tree is unchanged, so its preprocessed units stay in the
//! preprocessor cache. [`Snapshot::map`] moves a path of the working tree into it.

use sha2::{Digest, Sha256};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Files larger than this (bytes) are not copied into a snapshot (no C source is).
const MAX_FILE_BYTES: u64 = 4 << 20;

/// Snapshot directories kept in the cache (the most recently used ones).
const KEPT_SNAPSHOTS: usize = 4;

/// The files of a repository at one revision, in a directory of their own.
#[derive(Debug)]
pub struct Snapshot {
    /// The repository's top level (canonical).
    pub root: PathBuf,
    /// Where the snapshot is.
    pub dir: PathBuf,
    /// The tree id of the revision (hex).
    pub tree: String,
    /// Keeps a snapshot made outside the cache alive (deleted on drop).
    _temp: Option<tempfile::TempDir>,
}

/// Whether `path` is a file the C front end may read: sources, headers and included tables.
fn is_c_related(path: &str) -> bool {
    let ext = Path::new(path)
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("");
    matches!(ext, "c" | "h" | "i" | "inc" | "def" | "x" | "tbl")
}

/// Runs git with `args` in the current directory; its standard output.
///
/// Errors: git cannot be run or fails (one line with git's first line of error).
fn git(args: &[&str]) -> Result<Vec<u8>, String> {
    let out = Command::new("git")
        .args(args)
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "git {} failed: {}",
            args.first().copied().unwrap_or(""),
            msg.lines().next().unwrap_or("").trim()
        ));
    }
    Ok(out.stdout)
}

impl Snapshot {
    /// The repository of the current directory at revision `rev`: reused from
    /// `cache/snapshot/` when a complete one of the same tree is there, else written there
    /// (or into a temporary directory without `cache`). Untracked files are copied from the
    /// working tree on every call.
    ///
    /// Errors: not in a git repository, an unknown revision, git failing, or a file that
    /// cannot be written (one line).
    pub fn take(rev: &str, cache: Option<&Path>) -> Result<Snapshot, String> {
        let top = String::from_utf8_lossy(&git(&["rev-parse", "--show-toplevel"])?)
            .trim()
            .to_string();
        let root = std::fs::canonicalize(&top).map_err(|e| format!("{top}: {e}"))?;
        let spec = format!("{rev}^{{tree}}");
        let tree = String::from_utf8_lossy(
            &git(&["rev-parse", "--verify", "--quiet", &spec])
                .map_err(|_| format!("--diff-base {rev}: not a revision of this repository"))?,
        )
        .trim()
        .to_string();
        let (dir, temp) = match cache {
            Some(c) => {
                let mut h = Sha256::new();
                h.update(root.to_string_lossy().as_bytes());
                h.update(tree.as_bytes());
                let key = crate::frontend::ppcache::hex(&h.finalize()[..12]);
                (c.join("snapshot").join(key), None)
            }
            None => {
                let t = tempfile::tempdir().map_err(|e| format!("cannot make a directory: {e}"))?;
                (t.path().to_path_buf(), Some(t))
            }
        };
        let snap = Snapshot {
            root,
            dir,
            tree,
            _temp: temp,
        };
        let done = snap.dir.join(".racedar-complete");
        if !done.exists() {
            snap.write_tracked()?;
            std::fs::write(&done, b"").map_err(|e| format!("{}: {e}", done.display()))?;
        }
        snap.copy_untracked()?;
        if let Some(c) = cache {
            prune(&c.join("snapshot"), &snap.dir);
        }
        Ok(snap)
    }

    /// Writes the C-related files of the tree into the snapshot directory.
    fn write_tracked(&self) -> Result<(), String> {
        let listing = git(&["ls-tree", "-r", "-z", "--full-tree", &self.tree])?;
        let mut blobs: Vec<(String, String)> = Vec::new();
        for entry in listing.split(|b| *b == 0) {
            let entry = String::from_utf8_lossy(entry);
            let Some((meta, path)) = entry.split_once('\t') else {
                continue;
            };
            let mut meta = meta.split_whitespace();
            let (Some(mode), Some(kind), Some(id)) = (meta.next(), meta.next(), meta.next()) else {
                continue;
            };
            if kind == "blob" && mode.starts_with("100") && is_c_related(path) {
                blobs.push((id.to_string(), path.to_string()));
            }
        }
        let mut child = Command::new("git")
            .args(["cat-file", "--batch"])
            .current_dir(&self.root)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run git: {e}"))?;
        let mut stdin = child.stdin.take().ok_or("git cat-file: no input")?;
        let ids: Vec<String> = blobs.iter().map(|(id, _)| id.clone()).collect();
        let feeder = std::thread::spawn(move || {
            for id in ids {
                if writeln!(stdin, "{id}").is_err() {
                    break;
                }
            }
        });
        let mut out = BufReader::new(child.stdout.take().ok_or("git cat-file: no output")?);
        for (_, path) in &blobs {
            let mut header = String::new();
            out.read_line(&mut header)
                .map_err(|e| format!("git cat-file: {e}"))?;
            let size: u64 = header
                .split_whitespace()
                .nth(2)
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| format!("git cat-file: unexpected output '{}'", header.trim()))?;
            let mut bytes = Vec::new();
            (&mut out)
                .take(size + 1)
                .read_to_end(&mut bytes)
                .map_err(|e| format!("git cat-file: {e}"))?;
            bytes.truncate(size as usize);
            if size <= MAX_FILE_BYTES {
                self.write_file(path, &bytes)?;
            }
        }
        let _ = feeder.join();
        let _ = child.wait();
        Ok(())
    }

    /// Copies the untracked C-related files of the working tree (ignored ones included:
    /// generated headers) into the snapshot.
    fn copy_untracked(&self) -> Result<(), String> {
        let root = self.root.to_string_lossy().to_string();
        let listing = git(&[
            "-C",
            &root,
            "ls-files",
            "-z",
            "--others",
            "--exclude-standard",
        ])?;
        let ignored = git(&[
            "-C",
            &root,
            "ls-files",
            "-z",
            "--others",
            "--ignored",
            "--exclude-standard",
        ])?;
        for path in listing.split(|b| *b == 0).chain(ignored.split(|b| *b == 0)) {
            let path = String::from_utf8_lossy(path);
            if path.is_empty() || !is_c_related(&path) {
                continue;
            }
            let src = self.root.join(path.as_ref());
            if std::fs::metadata(&src).is_ok_and(|m| m.is_file() && m.len() <= MAX_FILE_BYTES)
                && let Ok(bytes) = std::fs::read(&src)
            {
                self.write_file(&path, &bytes)?;
            }
        }
        Ok(())
    }

    fn write_file(&self, rel: &str, bytes: &[u8]) -> Result<(), String> {
        let dst = self.dir.join(rel);
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        if std::fs::read(&dst).is_ok_and(|old| old == bytes) {
            return Ok(()); // unchanged: keep the time stamp the preprocessor cache checks
        }
        std::fs::write(&dst, bytes).map_err(|e| format!("{}: {e}", dst.display()))
    }

    /// `p` (absolute, or relative to the current directory) moved into the snapshot when it
    /// is inside the repository; other paths (system headers) unchanged.
    pub fn map(&self, p: &Path) -> PathBuf {
        let abs = if p.is_absolute() {
            p.to_path_buf()
        } else {
            std::env::current_dir().map_or_else(|_| p.to_path_buf(), |c| c.join(p))
        };
        let abs = std::fs::canonicalize(&abs).unwrap_or(abs);
        match abs.strip_prefix(&self.root) {
            Ok(rel) => self.dir.join(rel),
            Err(_) => p.to_path_buf(),
        }
    }

    /// A command-line word with every occurrence of the repository's path replaced by the
    /// snapshot's (`-I/repo/include` becomes `-I/cache/snapshot/KEY/include`).
    pub fn map_word(&self, w: &str) -> String {
        w.replace(
            self.root.to_string_lossy().as_ref(),
            self.dir.to_string_lossy().as_ref(),
        )
    }
}

/// Removes snapshot directories of `dir` beyond the [`KEPT_SNAPSHOTS`] most recently used,
/// never `keep`.
fn prune(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut dirs: Vec<(std::time::SystemTime, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let t = e.metadata().ok()?.modified().ok()?;
            Some((t, e.path()))
        })
        .filter(|(_, p)| p != keep)
        .collect();
    dirs.sort();
    let excess = (dirs.len() + 1).saturating_sub(KEPT_SNAPSHOTS);
    for (_, p) in dirs.into_iter().take(excess) {
        let _ = std::fs::remove_dir_all(p);
    }
    // Mark `keep` as just used.
    let _ = std::fs::write(keep.join(".racedar-complete"), b"");
}

#[cfg(test)]
mod tests {
    use super::is_c_related;

    #[test]
    fn c_files_are_taken() {
        assert!(is_c_related("src/a.c") && is_c_related("include/x.h") && is_c_related("t.def"));
        assert!(!is_c_related("README.md") && !is_c_related("Makefile"));
    }
}
