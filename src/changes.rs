//! Changed lines of a git working tree (`--diff-base REV`): races are reported only when one
//! of their accesses is on a line added or changed since `REV` (the clang-tidy-diff and Infer
//! "changed files" convention, `notes/ecosystem.md` §3).

use std::collections::BTreeMap;
use std::path::Path;

/// Changed line ranges (inclusive, from 1) per file, files named as in reports.
#[derive(Clone, Debug, Default)]
pub struct ChangedLines {
    files: BTreeMap<String, Vec<(u32, u32)>>,
}

impl ChangedLines {
    /// Whether `line` of `file` (named as in reports) was added or changed.
    pub fn touches(&self, file: &str, line: u32) -> bool {
        let name = crate::frontend::compdb::display_name(Path::new(file));
        self.files
            .get(&name)
            .is_some_and(|r| r.iter().any(|(lo, hi)| *lo <= line && line <= *hi))
    }

    /// Parses `git diff -U0` output; paths are relative to the current directory.
    pub fn parse(diff: &str) -> ChangedLines {
        let mut out = ChangedLines::default();
        let mut current: Option<String> = None;
        for l in diff.lines() {
            if let Some(path) = l.strip_prefix("+++ ") {
                current = path
                    .strip_prefix("b/")
                    .filter(|_| path != "/dev/null")
                    .map(|p| crate::frontend::compdb::display_name(Path::new(p)));
            } else if let Some(hunk) = l.strip_prefix("@@ ") {
                // @@ -a[,b] +c[,d] @@
                let Some(plus) = hunk.split_whitespace().find(|w| w.starts_with('+')) else {
                    continue;
                };
                let mut it = plus[1..].split(',');
                let start: u32 = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                let count: u32 = it.next().and_then(|x| x.parse().ok()).unwrap_or(1);
                if let (Some(f), true) = (&current, count > 0) {
                    out.files
                        .entry(f.clone())
                        .or_default()
                        .push((start, start + count - 1));
                }
            }
        }
        out
    }
}

/// The lines changed in the working tree since `rev`.
///
/// Errors: git cannot be run or fails (not a repository, unknown revision), as one line.
pub fn changed_lines(rev: &str) -> Result<ChangedLines, String> {
    let out = std::process::Command::new("git")
        .args([
            "diff",
            "-U0",
            "--no-color",
            "--no-ext-diff",
            "--relative",
            rev,
            "--",
        ])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !out.status.success() {
        let msg = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "git diff {rev} failed: {}",
            msg.lines().next().unwrap_or("").trim()
        ));
    }
    Ok(ChangedLines::parse(&String::from_utf8_lossy(&out.stdout)))
}

#[cfg(test)]
mod tests {
    use super::ChangedLines;

    #[test]
    fn hunks_give_changed_ranges() {
        let diff = "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -3 +3,2 @@\n-a\n+b\n+c\n\
                    @@ -10,2 +11,0 @@\n-d\n-e\n@@ -20 +20 @@\n-f\n+g\n";
        let c = ChangedLines::parse(diff);
        assert!(c.touches("x.c", 3) && c.touches("x.c", 4) && c.touches("x.c", 20));
        assert!(!c.touches("x.c", 5) && !c.touches("x.c", 11) && !c.touches("y.c", 3));
    }
}
