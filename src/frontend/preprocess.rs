//! Running the C preprocessor.
//!
//! A `.c` file (any name not ending in `.i`) goes through the system preprocessor: `--cpp` if
//! given, else `$CC -E`, else `cc -E`, with `-I`, `-D`, `-U`, `-include` and `-std` passed
//! through and line markers kept (never `-P`), so every token maps back to its original file and
//! line. A `.i` file is read as it is. With the default preprocessor and a cache directory,
//! racedar's in-process preprocessor ([`super::cpp`]) stands in for the system one, configured
//! by it and printing the same text; the system preprocessor runs for whatever it declines.
//!
//! Before anything runs, the file is checked to exist and to look like text: a NUL byte in its
//! first 8 KiB makes it "not a C source file".

use super::error::{ErrorKind, FrontendError};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Options for the preprocessor (the `check` / `dump-ir` input options).
#[derive(Clone, Debug, Default)]
pub struct PreprocessOptions {
    /// Preprocessor command line (split like a shell would); overrides `CC`.
    pub cpp: Option<String>,
    /// `-I` directories, in order.
    pub include_dirs: Vec<PathBuf>,
    /// `-D` macro definitions (`NAME` or `NAME=VALUE`), in order.
    pub defines: Vec<String>,
    /// `-U` macro names, in order.
    pub undefines: Vec<String>,
    /// `-include` files, in order.
    pub includes: Vec<PathBuf>,
    /// `-std=` value (`c11`, `gnu99`, ...).
    pub std: Option<String>,
    /// Further preprocessor arguments, passed as they are (`-isystem DIR`, `-iquote DIR`,
    /// `-m32`, ...: from a compilation database).
    pub extra: Vec<String>,
    /// The directory the preprocessor runs in (a compilation database entry's `directory`;
    /// relative paths in the options are relative to it).
    pub cwd: Option<PathBuf>,
}

/// The preprocessed text of one translation unit.
#[derive(Clone, Debug)]
pub struct Preprocessed {
    /// The input file as the user named it.
    pub path: String,
    /// Preprocessed text (with line markers). Bytes that are not UTF-8 are replaced by `?`, one
    /// for one, so byte offsets are unchanged.
    pub text: String,
}

/// How many leading bytes are inspected for binary content.
const SNIFF_BYTES: usize = 8192;

/// Preprocesses `path` (or reads it, for `.i` files).
///
/// Errors: [`ErrorKind::Io`] when the file cannot be read, [`ErrorKind::NotC`] for binary
/// content, [`ErrorKind::Preprocess`] when the preprocessor cannot be started or exits with a
/// failure (its stderr is in [`FrontendError::detail`]), [`ErrorKind::Usage`] for a malformed
/// `--cpp` command.
pub fn preprocess(path: &Path, opts: &PreprocessOptions) -> Result<Preprocessed, FrontendError> {
    preprocess_named(path, &path.display().to_string(), opts)
}

/// [`preprocess`], naming the unit `name` in locations and errors (e.g. relative to the
/// project root when `path` is absolute).
pub fn preprocess_named(
    path: &Path,
    name: &str,
    opts: &PreprocessOptions,
) -> Result<Preprocessed, FrontendError> {
    let name = name.to_string();
    let bytes = std::fs::read(path).map_err(|e| {
        FrontendError::file(
            ErrorKind::Io,
            &name,
            format!("cannot read file: {}", io_reason(&e)),
        )
    })?;
    if bytes[..bytes.len().min(SNIFF_BYTES)].contains(&0) {
        return Err(FrontendError::file(
            ErrorKind::NotC,
            &name,
            "not a C source file (binary content)",
        ));
    }
    let text = if is_preprocessed(path) {
        bytes
    } else {
        run_cpp(path, &name, opts)?
    };
    Ok(Preprocessed {
        path: name,
        text: to_text(text),
    })
}

/// Whether `path` names an already preprocessed file (`.i`), which is read as it is.
pub fn is_preprocessed(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "i")
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        std::io::ErrorKind::IsADirectory => "is a directory".to_string(),
        _ => e.to_string(),
    }
}

/// The preprocessor command as program + leading arguments.
fn cpp_command(opts: &PreprocessOptions, name: &str) -> Result<Vec<String>, FrontendError> {
    let words = if let Some(cpp) = &opts.cpp {
        shlex::split(cpp).filter(|w| !w.is_empty()).ok_or_else(|| {
            FrontendError::file(
                ErrorKind::Usage,
                name,
                format!("cannot split the preprocessor command '{cpp}'"),
            )
        })?
    } else {
        let cc = std::env::var("CC")
            .ok()
            .filter(|s| !s.trim().is_empty())
            .unwrap_or_else(|| "cc".to_string());
        let mut w = shlex::split(&cc).filter(|w| !w.is_empty()).ok_or_else(|| {
            FrontendError::file(
                ErrorKind::Usage,
                name,
                format!("cannot split the CC command '{cc}'"),
            )
        })?;
        w.push("-E".to_string());
        w
    };
    Ok(words)
}

fn run_cpp(path: &Path, name: &str, opts: &PreprocessOptions) -> Result<Vec<u8>, FrontendError> {
    let words = cpp_command(opts, name)?;
    let (program, lead) = words
        .split_first()
        .ok_or_else(|| FrontendError::file(ErrorKind::Usage, name, "empty preprocessor command"))?;
    let mut args: Vec<String> = lead.to_vec();
    args.push("-D__RACEDAR__=1".to_string());
    if let Some(std) = &opts.std {
        args.push(format!("-std={std}"));
    }
    for d in &opts.include_dirs {
        args.push("-I".to_string());
        args.push(d.display().to_string());
    }
    for d in &opts.defines {
        args.push(format!("-D{d}"));
    }
    for u in &opts.undefines {
        args.push(format!("-U{u}"));
    }
    for i in &opts.includes {
        args.push("-include".to_string());
        args.push(i.display().to_string());
    }
    args.extend(opts.extra.iter().cloned());
    // Whatever the extension, the input is C (gcc would ignore an unknown one as linker input).
    args.push("-x".to_string());
    args.push("c".to_string());
    let cwd = opts.cwd.as_deref();
    // The driver's own preprocessor command, when known (an explicit `--cpp` runs as given).
    let cache = (opts.cpp.is_none() && super::driver::enabled())
        .then(super::ppcache::cache_root)
        .flatten();
    let direct = cache
        .as_deref()
        .and_then(|c| super::driver::direct_command(c, program, &args, path, cwd));
    let spawn = |words: Option<&[String]>| {
        let mut cmd = match words {
            Some([exe, rest @ ..]) => {
                let mut c = Command::new(exe);
                c.args(rest);
                c
            }
            _ => {
                let mut c = Command::new(program);
                c.args(&args).arg(path);
                c
            }
        };
        if let Some(dir) = cwd {
            cmd.current_dir(dir);
        }
        tracing::debug!(?cmd, "preprocessing");
        cmd.output()
    };
    // racedar's own preprocessor, configured like the driver's (see `super::cpp`). Queries it
    // cannot answer yet are asked of the compiler once (a tiny run), then it tries again.
    if let (Some(c), Some(words)) = (&cache, &direct) {
        let mut learned = false;
        while let Some(r) = builtin_cpp(c, words, path, cwd) {
            match r {
                Ok(text) => return Ok(text.into_bytes()),
                Err(super::cpp::Bail::Unknown(q)) if !learned => {
                    learned = true;
                    if let Some(at) = input_index(words, path) {
                        super::cpp::config::learn(c, words, at, cwd, &q);
                    }
                }
                Err(why) => {
                    tracing::debug!(?why, "in-process preprocessor gave up");
                    break;
                }
            }
        }
    }
    let out = match direct.as_deref().map(|w| spawn(Some(w))) {
        Some(Ok(out)) => Ok(out),
        Some(Err(_)) => {
            // The cached preprocessor is gone (a compiler upgrade): ask the driver again next time.
            if let Some(c) = &cache {
                super::driver::forget(c, program, &args, cwd);
            }
            spawn(None)
        }
        None => spawn(None),
    };
    let out = out.map_err(|e| {
        FrontendError::file(
            ErrorKind::Preprocess,
            name,
            format!("cannot run the preprocessor '{program}': {e}"),
        )
    })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
        let status = out
            .status
            .code()
            .map_or_else(|| "a signal".to_string(), |c| format!("status {c}"));
        let mut err = FrontendError::file(
            ErrorKind::Preprocess,
            name,
            format!("preprocessing failed ('{program}' exited with {status})"),
        );
        if let Some((line, msg)) = first_cpp_error(&stderr) {
            err.line = line;
            err.message = format!("preprocessing failed: {msg}");
        }
        err.detail = (!stderr.is_empty()).then_some(stderr);
        return Err(err);
    }
    Ok(out.stdout)
}

/// Where the input file `path` stands in the preprocessor command `words`.
fn input_index(words: &[String], path: &Path) -> Option<usize> {
    let p = path.to_str()?;
    words.iter().rposition(|w| w == p)
}

/// Runs the in-process preprocessor ([`super::cpp`]) on `path` with the configuration of the
/// preprocessor command `words`; `None` when it is off or the command is not supported.
fn builtin_cpp(
    cache: &Path,
    words: &[String],
    path: &Path,
    cwd: Option<&Path>,
) -> Option<Result<String, super::cpp::Bail>> {
    if !super::cpp::config::enabled() {
        return None;
    }
    let at = input_index(words, path)?;
    let config = super::cpp::config::load(cache, words, at, cwd)?;
    Some(super::cpp::preprocess(&config, path, &words[at], cwd))
}

/// The first `file:line:col: error: msg` (or `fatal error`) line of a gcc/clang stderr, as
/// (line, message).
fn first_cpp_error(stderr: &str) -> Option<(u32, String)> {
    stderr.lines().find_map(|l| {
        let idx = l.find(" error: ")?;
        // `l[..idx]` is "file:line:col:" or "file:line:col: fatal"; the line is the first
        // number after the file name.
        let line = l[..idx]
            .split(':')
            .skip(1)
            .find_map(|part| part.trim().parse::<u32>().ok())
            .unwrap_or(1);
        Some((line, l[idx + " error: ".len()..].trim().to_string()))
    })
}

/// Converts bytes to a `String`, replacing each byte of an invalid UTF-8 sequence by `?` so that
/// byte offsets are preserved.
fn to_text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => {
            let bytes = e.into_bytes();
            let mut out = String::with_capacity(bytes.len());
            for chunk in bytes.utf8_chunks() {
                out.push_str(chunk.valid());
                for _ in chunk.invalid() {
                    out.push('?');
                }
            }
            out
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_utf8_keeps_offsets() {
        let s = to_text(vec![b'a', 0xff, 0xfe, b'b']);
        assert_eq!(s, "a??b");
    }

    #[test]
    fn cpp_error_line_is_found() {
        let err =
            "x.c:3:10: fatal error: nope.h: No such file or directory\ncompilation terminated.";
        assert_eq!(
            first_cpp_error(err),
            Some((3, "nope.h: No such file or directory".to_string()))
        );
    }
}
