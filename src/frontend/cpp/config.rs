//! The compiler's preprocessor configuration, asked once and cached: predefined macros
//! (`cc1 -E -dM`), include search directories (`-v`), and answers to `__has_attribute`-style
//! queries (learned as programs ask them).
//!
//! The configuration belongs to one preprocessor command line (the `cc1 -E ...` command the
//! compiler driver runs, from [`super::super::driver`]), minus the input file: the cache key
//! hashes the preprocessor's path, size and modification time, the working directory and
//! every other argument. Entries are `<cache>/cpp/<key>.json`. Only command lines whose every
//! argument is known to leave the preprocessor's behaviour described by macros and search
//! directories are accepted ([`supported`]); any other gets `None`, and the system
//! preprocessor runs as before.

use crate::frontend::driver::command_key;
use crate::frontend::ppcache::write_atomically;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The preprocessor configuration of one command line.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Config {
    /// The predefined macros, as `#define` lines (`cc1 -E -dM` on an empty file; includes the
    /// command line's `-D` and `-U`).
    pub macros: String,
    /// `#include "..."` directories searched after the includer's own (`-iquote`), in order.
    pub quote_dirs: Vec<String>,
    /// `#include <...>` directories in order, each with whether it holds system headers
    /// (every directory but the `-I` ones).
    pub bracket_dirs: Vec<(String, bool)>,
    /// Answers to queries, keyed by their spelling without spaces (`__has_attribute(x)`).
    pub answers: BTreeMap<String, u64>,
    /// Names of the macros defined on the command line (`-D`), which gcc counts as the
    /// user's rather than its own.
    pub command_line_macros: Vec<String>,
    /// Directories the preprocessor would search but found missing ("ignoring nonexistent
    /// directory"): creating one makes the cached configuration stale.
    #[serde(default)]
    pub absent_dirs: Vec<String>,
}

impl Config {
    /// Whether the search directories are still as probed: every listed directory exists and
    /// every absent one is still absent (relative ones taken from `cwd`).
    fn still_valid(&self, cwd: Option<&Path>) -> bool {
        let is_dir = |d: &str| match cwd {
            Some(c) if Path::new(d).is_relative() => c.join(d).is_dir(),
            _ => Path::new(d).is_dir(),
        };
        self.quote_dirs.iter().all(|d| is_dir(d))
            && self.bracket_dirs.iter().all(|(d, _)| is_dir(d))
            && !self.absent_dirs.iter().any(|d| is_dir(d))
    }
}

/// Whether the in-process preprocessor is on (`RACEDAR_BUILTIN_CPP` is not `0`).
pub fn enabled() -> bool {
    std::env::var_os("RACEDAR_BUILTIN_CPP").is_none_or(|v| v != "0")
}

/// Options that take a separate value, all known not to change how text is preprocessed
/// beyond macros and search directories.
const WITH_VALUE: &[&str] = &[
    "-I",
    "-D",
    "-U",
    "-imultiarch",
    "-isystem",
    "-iquote",
    "-idirafter",
    "-isysroot",
    "-iprefix",
    "-dumpbase",
    "-dumpdir",
];

/// Flag prefixes that change only macros or code generation (never how text is lexed).
const PREFIXES: &[&str] = &["-I", "-D", "-U", "-m", "-O", "-g", "-W", "-std=gnu"];

/// `-f` options that change lexing or output and so are left to the system preprocessor.
const F_REJECTED: &[&str] = &[
    "-fdirectives-only",
    "-fpreprocessed",
    "-fno-dollars-in-identifiers",
    "-finput-charset",
    "-fexec-charset",
    "-fwide-exec-charset",
    "-fextended-identifiers",
    "-fmacro-prefix-map",
    "-ffile-prefix-map",
    "-fworking-directory",
    "-fno-show-column",
    "-ftrack-macro-expansion",
    "-fdebug-cpp",
    "-ftabstop",
    "-fno-canonical-system-headers",
    "-fopenacc",
    "-fopenmp",
];

/// Whether every argument of `command` (program first; `input` at index `input_at`) is one
/// whose effect the configuration captures.
pub fn supported(command: &[String], input_at: usize) -> bool {
    let mut i = 1;
    while i < command.len() {
        let a = command[i].as_str();
        i += 1;
        if i - 1 == input_at || a == "-E" || a == "-quiet" || a == "-pthread" {
            continue;
        }
        if WITH_VALUE.contains(&a) {
            i += 1;
            continue;
        }
        if a.starts_with("-f") {
            if F_REJECTED.iter().any(|r| a.starts_with(r)) {
                return false;
            }
            continue;
        }
        if a.starts_with("-Werror") || a == "-W" {
            return false;
        }
        if !PREFIXES.iter().any(|p| a.starts_with(p)) {
            return false;
        }
    }
    true
}

/// The configuration for `command` (the preprocessor command line, with the input file at
/// index `input_at`) run in `cwd`, from the cache in `cache` or by asking the preprocessor
/// (and caching the answer). `None` when the command is not [`supported`] or cannot be asked.
pub fn load(
    cache: &Path,
    command: &[String],
    input_at: usize,
    cwd: Option<&Path>,
) -> Option<Config> {
    if !supported(command, input_at) {
        return None;
    }
    let file = entry_path(cache, command, input_at, cwd)?;
    if let Some(c) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str::<Config>(&t).ok())
        .filter(|c| c.still_valid(cwd))
    {
        return Some(c);
    }
    let c = probe(command, input_at, cwd)?;
    store(&file, &c);
    Some(c)
}

/// Asks the compiler the answers of `queries` (spelled as in [`Config::answers`]) and adds
/// them to the cached configuration of `command`. Failures are ignored (the queries stay
/// unknown and the system preprocessor keeps handling programs that ask them).
pub fn learn(
    cache: &Path,
    command: &[String],
    input_at: usize,
    cwd: Option<&Path>,
    queries: &[String],
) {
    let Some(file) = entry_path(cache, command, input_at, cwd) else {
        return;
    };
    let Some(mut c) = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str::<Config>(&t).ok())
    else {
        return;
    };
    let dir = cache.join("cpp");
    let src_path = dir.join(format!("probe-{}.c", std::process::id()));
    let mut src = String::new();
    for q in queries {
        src.push_str(&format!("__racedar_answer {q}\n"));
    }
    if std::fs::write(&src_path, src).is_err() {
        return;
    }
    let out = run(command, input_at, cwd, &src_path.display().to_string(), &[]);
    let _ = std::fs::remove_file(&src_path);
    let Some((stdout, _)) = out else {
        return;
    };
    let values: Vec<u64> = stdout
        .lines()
        .filter_map(|l| l.trim().strip_prefix("__racedar_answer "))
        .filter_map(|v| v.trim().parse().ok())
        .collect();
    if values.len() != queries.len() {
        return;
    }
    for (q, v) in queries.iter().zip(values) {
        c.answers.insert(q.clone(), v);
    }
    store(&file, &c);
}

/// The cache file of `command`'s configuration.
fn entry_path(
    cache: &Path,
    command: &[String],
    input_at: usize,
    cwd: Option<&Path>,
) -> Option<PathBuf> {
    // The input file's place counts, not its name.
    let args = command
        .iter()
        .enumerate()
        .map(|(i, a)| if i == input_at { "" } else { a.as_str() });
    let key = command_key(Path::new(command.first()?), cwd, args)?;
    Some(cache.join("cpp").join(format!("{key}.json")))
}

fn store(file: &Path, c: &Config) {
    if let (Some(dir), Ok(text)) = (file.parent(), serde_json::to_string(c))
        && std::fs::create_dir_all(dir).is_ok()
    {
        write_atomically(file, &text);
    }
}

/// Runs `command` with `input` in place of the input file and `extra` arguments appended;
/// (stdout, stderr) when it succeeds.
fn run(
    command: &[String],
    input_at: usize,
    cwd: Option<&Path>,
    input: &str,
    extra: &[&str],
) -> Option<(String, String)> {
    let mut cmd = Command::new(command.first()?);
    for (i, a) in command.iter().enumerate().skip(1) {
        cmd.arg(if i == input_at { input } else { a.as_str() });
    }
    cmd.args(extra);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd.output().ok()?;
    out.status.success().then(|| {
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    })
}

/// Asks the preprocessor for its macros and search directories.
fn probe(command: &[String], input_at: usize, cwd: Option<&Path>) -> Option<Config> {
    let (macros, stderr) = run(command, input_at, cwd, "/dev/null", &["-dM", "-v"])?;
    let (quote, bracket, absent_dirs) = parse_search_dirs(&stderr)?;
    let user: Vec<String> = user_include_dirs(command);
    let bracket_dirs = bracket
        .into_iter()
        .map(|d| {
            let system = !user.contains(&d);
            (d, system)
        })
        .collect();
    Some(Config {
        macros,
        quote_dirs: quote,
        bracket_dirs,
        answers: BTreeMap::new(),
        command_line_macros: command_line_macros(command),
        absent_dirs,
    })
}

/// The values of option `opt` in `command`, given as `opt VALUE` or `optVALUE`.
fn option_values(command: &[String], opt: &str) -> Vec<String> {
    let mut values = Vec::new();
    let mut it = command.iter();
    while let Some(a) = it.next() {
        if a == opt {
            values.extend(it.next().cloned());
        } else if let Some(v) = a.strip_prefix(opt) {
            values.push(v.to_string());
        }
    }
    values
}

/// The names of the `-D` macros of `command`.
fn command_line_macros(command: &[String]) -> Vec<String> {
    option_values(command, "-D")
        .iter()
        .map(|d| d.split(['=', '(']).next().unwrap_or("").to_string())
        .collect()
}

/// The `-I` directories of `command`, without trailing slashes.
fn user_include_dirs(command: &[String]) -> Vec<String> {
    option_values(command, "-I")
        .into_iter()
        .map(|d| {
            let t = d.trim_end_matches('/');
            if t.is_empty() {
                d.clone()
            } else {
                t.to_string()
            }
        })
        .collect()
}

/// The quote and bracket search lists of a `-v` run's stderr, and the directories it
/// ignored as nonexistent.
fn parse_search_dirs(stderr: &str) -> Option<(Vec<String>, Vec<String>, Vec<String>)> {
    let mut quote = Vec::new();
    let mut bracket = Vec::new();
    let mut absent = Vec::new();
    let mut section = 0;
    let mut ended = false;
    for line in stderr.lines() {
        if let Some(d) = line
            .strip_prefix("ignoring nonexistent directory \"")
            .and_then(|r| r.strip_suffix('"'))
        {
            absent.push(d.to_string());
        } else if line.starts_with("#include \"...\" search starts here:") {
            section = 1;
        } else if line.starts_with("#include <...> search starts here:") {
            section = 2;
        } else if line.starts_with("End of search list.") {
            ended = true;
            break;
        } else if let Some(d) = line.strip_prefix(' ') {
            if d.contains(" (framework directory)") {
                return None;
            }
            match section {
                1 => quote.push(d.to_string()),
                2 => bracket.push(d.to_string()),
                _ => {}
            }
        }
    }
    ended.then_some((quote, bracket, absent))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_string).collect()
    }

    #[test]
    fn plain_gcc_commands_are_supported_and_others_not() {
        let c = words(
            "cc1 -E -quiet -I include -imultiarch x86_64-linux-gnu -D X=1 in.c -mtune=generic -march=x86-64 -fasynchronous-unwind-tables",
        );
        assert!(supported(&c, 9));
        let c = words("cc1 -E -quiet -include x.h in.c");
        assert!(!supported(&c, 5));
        let c = words("cc1 -E -quiet -std=c99 in.c");
        assert!(!supported(&c, 4), "ISO modes turn on trigraphs");
        let c = words("cc1 -E -quiet -fdirectives-only in.c");
        assert!(!supported(&c, 4));
    }

    #[test]
    fn a_created_or_removed_directory_makes_the_configuration_stale() {
        let dir = tempfile::tempdir().expect("tempdir");
        let c = Config {
            bracket_dirs: vec![("inc".to_string(), false)],
            absent_dirs: vec!["later".to_string()],
            ..Config::default()
        };
        assert!(!c.still_valid(Some(dir.path())), "inc is missing");
        std::fs::create_dir(dir.path().join("inc")).expect("mkdir");
        assert!(c.still_valid(Some(dir.path())));
        std::fs::create_dir(dir.path().join("later")).expect("mkdir");
        assert!(!c.still_valid(Some(dir.path())), "later now exists");
    }

    #[test]
    fn search_lists_are_read() {
        let err = "ignoring nonexistent directory \"/x\"\n#include \"...\" search starts here:\n q\n#include <...> search starts here:\n include\n /usr/include\nEnd of search list.\n";
        let (q, b, absent) = parse_search_dirs(err).expect("parses");
        assert_eq!(q, ["q"]);
        assert_eq!(b, ["include", "/usr/include"]);
        assert_eq!(absent, ["/x"]);
        assert_eq!(
            user_include_dirs(&words("cc1 -I include/ -Ia")),
            ["include", "a"]
        );
    }
}
