//! From byte offsets of preprocessed text to original (file, line, column).
//!
//! The preprocessor's line markers (`# 12 "file.c" 1 3`, or `#line 12 "file.c"`) say which file
//! and line the next line of output comes from. A [`SourceMap`] indexes the line starts and the
//! markers once, so each lookup is two binary searches. Columns are byte columns of the
//! preprocessed line, which equal the original columns for tokens not produced by a macro
//! expansion.

use super::compat::OffsetMap;
use crate::ir::{FileId, Loc};
use rustc_hash::FxHashMap;

/// Interns file names into [`FileId`]s, program-wide.
#[derive(Clone, Debug, Default)]
pub struct FileTable {
    /// Names, indexed by `FileId`.
    pub names: Vec<String>,
    index: FxHashMap<String, FileId>,
}

impl FileTable {
    /// The id of `name`, adding it if new.
    pub fn intern(&mut self, name: &str) -> FileId {
        if let Some(&id) = self.index.get(name) {
            return id;
        }
        let id = FileId(self.names.len() as u32);
        self.names.push(name.to_string());
        self.index.insert(name.to_string(), id);
        id
    }
}

/// A line marker: from preprocessed line `pp_line + 1` on, lines come from `file`, starting at
/// `line`.
#[derive(Clone, Copy, Debug)]
struct Marker {
    pp_line: u32,
    file: FileId,
    line: u32,
}

/// Offsets of (rewritten) preprocessed text to original locations.
#[derive(Clone, Debug)]
pub struct SourceMap {
    line_starts: Vec<u32>,
    markers: Vec<Marker>,
    main_file: FileId,
    offsets: OffsetMap,
}

impl SourceMap {
    /// Indexes `text` (the preprocessed text *before* compatibility rewriting) whose main file is
    /// `main_file`; `offsets` maps rewritten offsets back to `text`.
    pub fn new(text: &str, main_file: FileId, files: &mut FileTable, offsets: OffsetMap) -> Self {
        let mut line_starts = vec![0u32];
        let mut markers = Vec::new();
        let bytes = text.as_bytes();
        for (i, &b) in bytes.iter().enumerate() {
            if b == b'\n' {
                line_starts.push(i as u32 + 1);
            }
        }
        for (pp_line, &start) in line_starts.iter().enumerate() {
            let start = start as usize;
            if bytes.get(start) != Some(&b'#') {
                continue;
            }
            let end = bytes[start..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(bytes.len(), |p| start + p);
            if let Some((line, file)) = parse_marker(&text[start..end]) {
                markers.push(Marker {
                    pp_line: pp_line as u32,
                    file: files.intern(&file),
                    line,
                });
            }
        }
        SourceMap {
            line_starts,
            markers,
            main_file,
            offsets,
        }
    }

    /// The original location of byte `offset` of the rewritten text.
    pub fn loc(&self, offset: usize) -> Loc {
        let off = self.offsets.to_original(offset) as u32;
        let pp_line = self
            .line_starts
            .partition_point(|&s| s <= off)
            .saturating_sub(1);
        let col = off - self.line_starts[pp_line] + 1;
        let m = self
            .markers
            .partition_point(|m| (m.pp_line as usize) < pp_line);
        if m == 0 {
            return Loc {
                file: self.main_file,
                line: pp_line as u32 + 1,
                col,
            };
        }
        let marker = self.markers[m - 1];
        Loc {
            file: marker.file,
            line: marker.line + (pp_line as u32 - marker.pp_line - 1),
            col,
        }
    }
}

/// Parses `# 12 "file" flags` or `#line 12 "file"` into (12, file).
fn parse_marker(line: &str) -> Option<(u32, String)> {
    parse_marker_flags(line).map(|(num, name, _)| (num, name))
}

/// Parses `# 12 "file" flags` or `#line 12 "file"` into (12, file, the text after the closing
/// quote: gcc's flags, `1` entering a file, `2` returning to one, `3` a system header).
pub(super) fn parse_marker_flags(line: &str) -> Option<(u32, String, &str)> {
    let rest = line.strip_prefix('#')?.trim_start();
    let rest = rest.strip_prefix("line").unwrap_or(rest).trim_start();
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    if digits == 0 {
        return None;
    }
    let num: u32 = rest[..digits].parse().ok()?;
    let rest = rest[digits..].trim_start();
    let quoted = rest.strip_prefix('"')?;
    let mut name = String::new();
    let mut chars = quoted.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((num, name, &quoted[i + 1..])),
            '\\' => {
                if let Some((_, n)) = chars.next() {
                    name.push(n);
                }
            }
            c => name.push(c),
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_map_lines_to_files() {
        let text = "# 1 \"a.c\"\nint x;\n# 1 \"b.h\" 1\nint y;\nint z;\n# 3 \"a.c\" 2\nint w;\n";
        let mut files = FileTable::default();
        let main = files.intern("a.c");
        let sm = SourceMap::new(text, main, &mut files, OffsetMap::default());
        let at = |s: &str| sm.loc(text.find(s).unwrap());
        assert_eq!(
            at("int x"),
            Loc {
                file: main,
                line: 1,
                col: 1
            }
        );
        let b = files.intern("b.h");
        assert_eq!(
            at("int z"),
            Loc {
                file: b,
                line: 2,
                col: 1
            }
        );
        assert_eq!(
            at("w;"),
            Loc {
                file: main,
                line: 3,
                col: 5
            }
        );
    }

    #[test]
    fn no_markers_means_main_file_lines() {
        let text = "int x;\n  int y;\n";
        let mut files = FileTable::default();
        let main = files.intern("t.i");
        let sm = SourceMap::new(text, main, &mut files, OffsetMap::default());
        assert_eq!(
            sm.loc(text.find("y").unwrap()),
            Loc {
                file: main,
                line: 2,
                col: 7
            }
        );
    }

    #[test]
    fn marker_names_unescape() {
        assert_eq!(
            parse_marker("# 7 \"dir\\\\x.c\" 2"),
            Some((7, "dir\\x.c".to_string()))
        );
        assert_eq!(
            parse_marker("#line 9 \"q.c\""),
            Some((9, "q.c".to_string()))
        );
        assert_eq!(parse_marker("#pragma once"), None);
    }
}
