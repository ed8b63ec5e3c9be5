//! The shipped model files, indexed by function name without parsing them (about 14,000
//! functions in 800 KB of TOML: parsing all of it costs some 30 ms and 18 MB per run, more than
//! analysing an SV-COMP task). A cheap line scan finds each `[[function]]` entry's `name`,
//! `names` and `prefix`; an entry is parsed the first time a program uses one of its functions.
//! The test `shipped_index_matches_a_full_parse` checks the scan against a full parse.

use super::{File, Role, SHIPPED};
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

/// One `[[function]]` entry of a shipped file.
struct Entry {
    /// The file it is in.
    file: &'static str,
    /// Its TOML text, from its `[[function]]` line to the next entry.
    text: &'static str,
    /// Its role, parsed on first use (`None`: it does not parse, which a test rules out).
    role: OnceLock<Option<Role>>,
}

/// The entries of the shipped files and their names.
pub(super) struct Index {
    entries: Vec<Entry>,
    by_name: FxHashMap<&'static str, u32>,
    /// Prefix entries, longest prefix first.
    prefixes: Vec<(&'static str, u32)>,
}

/// The index of the shipped files, built once per process.
pub(super) fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| build(SHIPPED))
}

/// The quoted strings of `s` (identifiers: no escapes), outside `#` comments.
fn quoted(s: &str) -> impl Iterator<Item = &str> {
    // A `#` outside quotes starts a comment.
    let s = match s.find('#') {
        Some(i) if s[..i].matches('"').count().is_multiple_of(2) => &s[..i],
        _ => s,
    };
    s.split('"').skip(1).step_by(2)
}

/// The key a line assigns (`names = [...]` gives `names`), if any.
fn key_of(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start();
    let (k, rest) = t.split_once('=')?;
    Some((k.trim(), rest))
}

/// The names and prefixes one entry's text declares.
pub(super) fn names_of(text: &str) -> (Vec<&str>, Option<&str>) {
    let mut names = Vec::new();
    let mut prefix = None;
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        match key_of(line) {
            Some(("name", rest)) => names.extend(quoted(rest).take(1)),
            Some(("prefix", rest)) => prefix = quoted(rest).next(),
            Some(("names", rest)) => {
                let mut part = rest;
                loop {
                    let body = part.split('#').next().unwrap_or(part);
                    names.extend(quoted(part));
                    if body.contains(']') {
                        break;
                    }
                    match lines.next() {
                        Some(l) => part = l,
                        None => break,
                    }
                }
            }
            _ => {}
        }
    }
    (names, prefix)
}

fn build(files: &'static [(&'static str, &'static str)]) -> Index {
    let mut idx = Index {
        entries: Vec::new(),
        by_name: FxHashMap::default(),
        prefixes: Vec::new(),
    };
    for (file, text) in files {
        // Entry start offsets: lines that are exactly `[[function]]`.
        let mut starts = Vec::new();
        let mut off = 0;
        for line in text.split_inclusive('\n') {
            if line.trim() == "[[function]]" {
                starts.push(off);
            }
            off += line.len();
        }
        starts.push(text.len());
        for w in starts.windows(2) {
            let entry_text = &text[w[0]..w[1]];
            let id = idx.entries.len() as u32;
            let (names, prefix) = names_of(entry_text);
            for n in names {
                idx.by_name.insert(n, id);
            }
            if let Some(p) = prefix {
                idx.prefixes.retain(|(q, _)| *q != p);
                idx.prefixes.push((p, id));
            }
            idx.entries.push(Entry {
                file,
                text: entry_text,
                role: OnceLock::new(),
            });
        }
    }
    idx.prefixes
        .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
    idx
}

impl Index {
    fn role_of(&self, id: u32) -> Option<&Role> {
        let e = self.entries.get(id as usize)?;
        e.role
            .get_or_init(|| match toml::from_str::<File>(e.text) {
                Ok(f) => f.function.into_iter().next().map(|x| x.role),
                Err(err) => {
                    tracing::error!("{}: invalid shipped model entry: {err}", e.file);
                    None
                }
            })
            .as_ref()
    }

    /// The role of `name` by exact name.
    pub(super) fn exact(&self, name: &str) -> Option<&Role> {
        self.role_of(*self.by_name.get(name)?)
    }

    /// The longest shipped prefix of `name` and its role.
    pub(super) fn prefix(&self, name: &str) -> Option<(&'static str, &Role)> {
        let (p, id) = self.prefixes.iter().find(|(p, _)| name.starts_with(p))?;
        Some((p, self.role_of(*id)?))
    }

    /// Every (file, entry text) pair, for tests.
    #[cfg(test)]
    pub(super) fn entries(&self) -> impl Iterator<Item = (&'static str, &'static str)> + '_ {
        self.entries.iter().map(|e| (e.file, e.text))
    }

    /// The names the index maps to entries, for tests.
    #[cfg(test)]
    pub(super) fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.by_name.keys().copied()
    }
}
