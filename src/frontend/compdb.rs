//! Compilation databases (`compile_commands.json`, the Clang JSON format: a list of
//! `{directory, file, command | arguments}` entries; `notes/ecosystem.md` §4).
//!
//! Each entry becomes one translation unit preprocessed with its own flags in its own
//! directory: the preprocessor-relevant arguments are kept (`-D`, `-U`, `-I`, `-include`,
//! `-std=`, `-isystem`, `-iquote`, `-idirafter`, `-imacros`, `--sysroot`, `-m32`/`-m64`,
//! `-target`), the rest (`-c`, `-o`, warnings, optimisation, dependency output) dropped.
//! Entries for non-C files (assembly, C++) are skipped.

use super::error::{ErrorKind, FrontendError};
use super::preprocess::PreprocessOptions;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One translation unit of a database.
#[derive(Clone, Debug)]
pub struct Unit {
    /// The source file (absolute, or relative to the current directory).
    pub path: PathBuf,
    /// The name locations use: relative to the current directory when the file is under it.
    pub name: String,
    /// How to preprocess it.
    pub preprocess: PreprocessOptions,
}

#[derive(Deserialize)]
struct Entry {
    directory: PathBuf,
    file: PathBuf,
    #[serde(default)]
    command: Option<String>,
    #[serde(default)]
    arguments: Option<Vec<String>>,
}

/// Arguments that take a value, kept for the preprocessor.
const KEEP_WITH_VALUE: [&str; 6] = [
    "-isystem",
    "-iquote",
    "-idirafter",
    "-imacros",
    "-target",
    "--sysroot",
];

/// Arguments that take a value and are dropped.
const DROP_WITH_VALUE: [&str; 7] = ["-o", "-MF", "-MT", "-MQ", "-x", "-arch", "-Xclang"];

/// The preprocessing options of one command line (`args[0]` is the compiler), on top of the
/// user's `base` options (whose `-I`, `-D`, ... come first).
fn options_of(args: &[String], dir: &Path, base: &PreprocessOptions) -> PreprocessOptions {
    let mut o = base.clone();
    o.cwd = Some(dir.to_path_buf());
    let mut it = args.iter().skip(1).peekable();
    while let Some(a) = it.next() {
        let mut value = |flag: &str| -> Option<String> {
            match a.strip_prefix(flag) {
                Some("") => it.next().cloned(),
                Some(v) => Some(v.trim_start_matches('=').to_string()),
                None => None,
            }
        };
        if let Some(v) = value("-D") {
            o.defines.push(v);
        } else if let Some(v) = value("-U") {
            o.undefines.push(v);
        } else if a == "-include" {
            if let Some(v) = it.next() {
                o.includes.push(PathBuf::from(v));
            }
        } else if let Some(v) = a.strip_prefix("-std=") {
            o.std = Some(v.to_string());
        } else if let Some(flag) = KEEP_WITH_VALUE.iter().find(|f| a.starts_with(**f)) {
            if a == flag {
                if let Some(v) = it.next() {
                    o.extra.push(a.clone());
                    o.extra.push(v.clone());
                }
            } else {
                o.extra.push(a.clone());
            }
        } else if let Some(v) = a.strip_prefix("-I") {
            let v = if v.is_empty() {
                it.next().cloned().unwrap_or_default()
            } else {
                v.to_string()
            };
            o.include_dirs.push(PathBuf::from(v));
        } else if a == "-m32" || a == "-m64" || a == "-pthread" || a.starts_with("--target=") {
            o.extra.push(a.clone());
        } else if DROP_WITH_VALUE.contains(&a.as_str()) {
            it.next();
        }
    }
    o
}

/// Whether a database entry is a C translation unit.
fn is_c(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| matches!(e, "c" | "i" | "h"))
}

/// The name of `path` in reports: relative to the current directory when under it.
pub fn display_name(path: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let rel = cwd
        .and_then(|c| std::fs::canonicalize(c).ok())
        .and_then(|c| abs.strip_prefix(c).ok().map(Path::to_path_buf));
    rel.unwrap_or(abs).display().to_string()
}

/// The parts of a line marker `# 12 "path" flags` naming a real file (not `<built-in>`): the
/// line number, the file name as written, and the rest of the line after the closing quote.
pub fn marker_file(line: &str) -> Option<(&str, &str, &str)> {
    let rest = line
        .strip_prefix("# ")
        .filter(|r| r.starts_with(|c: char| c.is_ascii_digit()))?;
    let open = rest.find('"')?;
    let close = open + 1 + rest[open + 1..].find('"')?;
    let file = &rest[open + 1..close];
    (!file.starts_with('<')).then(|| (rest[..open].trim_end(), file, &rest[close + 1..]))
}

/// Renames the files of the line markers (`# 12 "path" ...`) of a unit preprocessed in `dir`
/// to their report names (see [`display_name`]), so locations name files relative to the
/// project root whatever directory the unit was compiled in.
pub fn rename_markers(text: &str, dir: Option<&Path>) -> String {
    let mut names: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let renamed = marker_file(line).map(|(number, file, after)| {
            let name = names.entry(file.to_string()).or_insert_with(|| {
                let p = Path::new(file);
                let full = match dir {
                    Some(d) if p.is_relative() => d.join(p),
                    _ => p.to_path_buf(),
                };
                display_name(&full)
            });
            format!(
                "# {number} \"{}\"{after}",
                name.replace('\\', "\\\\").replace('"', "\\\"")
            )
        });
        match renamed {
            Some(l) => out.push_str(&l),
            None => out.push_str(line),
        }
    }
    out
}

/// Reads a compilation database: `path` is the JSON file or a directory holding
/// `compile_commands.json`. `base` are the command line's own preprocessing options.
///
/// Errors: [`ErrorKind::Io`] when the file cannot be read, [`ErrorKind::Usage`] when it is not
/// a compilation database or lists no C file (one line naming the file).
pub fn read(path: &Path, base: &PreprocessOptions) -> Result<Vec<Unit>, FrontendError> {
    let file = if path.is_dir() {
        path.join("compile_commands.json")
    } else {
        path.to_path_buf()
    };
    let name = file.display().to_string();
    let text = std::fs::read_to_string(&file).map_err(|e| {
        FrontendError::file(
            ErrorKind::Io,
            &name,
            format!("cannot read compilation database: {e}"),
        )
    })?;
    let entries: Vec<Entry> = serde_json::from_str(&text).map_err(|e| {
        let mut err = FrontendError::file(
            ErrorKind::Usage,
            &name,
            format!("not a compilation database: {e}"),
        );
        err.line = u32::try_from(e.line()).unwrap_or(0);
        err
    })?;
    // Absolute paths: the preprocessor runs in each entry's directory.
    let db_dir = file
        .parent()
        .map(|d| {
            if d.as_os_str().is_empty() {
                Path::new(".")
            } else {
                d
            }
        })
        .and_then(|d| std::fs::canonicalize(d).ok())
        .unwrap_or_default();
    let mut units = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for e in entries {
        let dir = if e.directory.is_absolute() {
            e.directory.clone()
        } else {
            db_dir.join(&e.directory)
        };
        let src = if e.file.is_absolute() {
            e.file.clone()
        } else {
            dir.join(&e.file)
        };
        if !is_c(&src) {
            continue;
        }
        let args = match (&e.arguments, &e.command) {
            (Some(a), _) => a.clone(),
            (None, Some(c)) => shlex::split(c).ok_or_else(|| {
                FrontendError::file(
                    ErrorKind::Usage,
                    &name,
                    format!("cannot split the command of {}", e.file.display()),
                )
            })?,
            (None, None) => Vec::new(),
        };
        let src = std::fs::canonicalize(&src).unwrap_or(src);
        if !seen.insert(src.clone()) {
            continue; // the same file compiled twice: one unit
        }
        units.push(Unit {
            name: display_name(&src),
            preprocess: options_of(&args, &dir, base),
            path: src,
        });
    }
    if units.is_empty() {
        return Err(FrontendError::file(
            ErrorKind::Usage,
            &name,
            "the compilation database lists no C file",
        ));
    }
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preprocessor_flags_are_kept_and_the_rest_dropped() {
        let args: Vec<String> = [
            "gcc",
            "-c",
            "-O2",
            "-Wall",
            "-DX=1",
            "-D",
            "Y",
            "-Iinc",
            "-I",
            "other",
            "-include",
            "cfg.h",
            "-std=gnu11",
            "-isystem",
            "sys",
            "-o",
            "a.o",
            "-MF",
            "a.d",
            "a.c",
            "-m32",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let o = options_of(&args, Path::new("/p"), &PreprocessOptions::default());
        assert_eq!(o.defines, vec!["X=1", "Y"]);
        assert_eq!(
            o.include_dirs,
            vec![PathBuf::from("inc"), PathBuf::from("other")]
        );
        assert_eq!(o.includes, vec![PathBuf::from("cfg.h")]);
        assert_eq!(o.std.as_deref(), Some("gnu11"));
        assert_eq!(o.extra, vec!["-isystem", "sys", "-m32"]);
        assert_eq!(o.cwd.as_deref(), Some(Path::new("/p")));
    }
}
