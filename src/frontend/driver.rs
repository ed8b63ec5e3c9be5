//! Running the preprocessor proper instead of the compiler driver.
//!
//! `cc -E file.c` starts the driver (`gcc`), which reads its specs and then starts the real
//! preprocessor (`cc1 -E`, or `clang -cc1 -E`) with a long, fixed command line. On small
//! programs the driver costs about as much as the preprocessing itself (about 6 ms of 15 ms
//! on the SV-COMP tasks), so racedar asks the driver once what it would run
//! (`cc -### -E ...`, which prints the commands without running them) and then runs that
//! command itself. This is the compiler's configuration, never the program's text: the
//! preprocessed output is byte for byte the driver's (the tests below check it).
//!
//! The answer is cached per driver and argument list in `<cache>/driver/<key>.json`, where
//! `<cache>` is [`crate::frontend::ppcache::cache_root`]; the key hashes the driver's resolved
//! path, size and modification time, the working directory and every argument except the
//! input file. A driver that prints anything but exactly one command, or a command that
//! names the input other than as a whole argument, gets "no shortcut" (also cached), and
//! racedar runs the driver as before. `RACEDAR_DIRECT_CPP=0` turns the shortcut off.

use super::ppcache::{file_stamp, hex, write_atomically};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::process::Command;

/// One argument of the preprocessor's command line, as cached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
enum Arg {
    /// Passed as it is.
    Literal(String),
    /// The input file's path.
    Input,
}

/// A cache entry: the command the driver runs (program first), or `None` when there is no
/// shortcut for this driver and these arguments.
#[derive(Serialize, Deserialize)]
struct Entry {
    command: Option<Vec<Arg>>,
}

/// Whether the shortcut is on (`RACEDAR_DIRECT_CPP` is not `0`).
pub fn enabled() -> bool {
    std::env::var_os("RACEDAR_DIRECT_CPP").is_none_or(|v| v != "0")
}

/// The preprocessor command line the driver `program` would run for `args` followed by the
/// input `input`, with `input` in place; `None` when there is no shortcut (the driver cannot
/// be found or probed, or its answer is not one plain command).
///
/// `cache` is racedar's cache directory ([`super::ppcache::cache_root`]); `args` are the
/// driver's arguments before the input (its leading words, `-E` included, and the options);
/// `cwd` is the directory it runs in.
pub fn direct_command(
    cache: &Path,
    program: &str,
    args: &[String],
    input: &Path,
    cwd: Option<&Path>,
) -> Option<Vec<String>> {
    let dir = cache.join("driver");
    let key = key(program, args, cwd)?;
    let file = dir.join(format!("{key}.json"));
    let cached = std::fs::read_to_string(&file)
        .ok()
        .and_then(|t| serde_json::from_str::<Entry>(&t).ok());
    let entry = match cached {
        Some(e) => e,
        // Probing costs a driver run: only when the answer can be kept.
        None if std::fs::create_dir_all(&dir).is_err() => return None,
        None => {
            let e = Entry {
                command: probe(program, args, input, cwd),
            };
            store(&file, &e);
            e
        }
    };
    let input = input.to_str()?;
    Some(
        entry
            .command?
            .into_iter()
            .map(|a| match a {
                Arg::Literal(s) => s,
                Arg::Input => input.to_string(),
            })
            .collect(),
    )
}

/// Forgets the command cached in `cache` for `program` and `args` (after it failed to start).
pub fn forget(cache: &Path, program: &str, args: &[String], cwd: Option<&Path>) {
    if let Some(key) = key(program, args, cwd) {
        let _ = std::fs::remove_file(cache.join("driver").join(format!("{key}.json")));
    }
}

/// The cache key: the driver's identity (resolved path, size, modification time), the
/// working directory and the arguments.
fn key(program: &str, args: &[String], cwd: Option<&Path>) -> Option<String> {
    command_key(
        &resolve(program, cwd)?,
        cwd,
        args.iter().map(String::as_str),
    )
}

/// A cache key for running the program `exe` with `args` in `cwd`: a hash of the program's
/// path, size and modification time, the directory and the arguments. `None` when `exe`
/// cannot be stat'ed.
pub(super) fn command_key<'a>(
    exe: &Path,
    cwd: Option<&Path>,
    args: impl IntoIterator<Item = &'a str>,
) -> Option<String> {
    let stamp = file_stamp(exe)?;
    let mut h = Sha256::new();
    h.update(format!("{}|{stamp}|{cwd:?}|", exe.display()).as_bytes());
    for a in args {
        h.update(a.as_bytes());
        h.update([0u8]);
    }
    Some(hex(&h.finalize()))
}

/// `program` as a file: itself when it names a path, else the first match on `PATH`.
fn resolve(program: &str, cwd: Option<&Path>) -> Option<PathBuf> {
    if program.contains('/') {
        let p = PathBuf::from(program);
        let p = match cwd {
            Some(d) if p.is_relative() => d.join(p),
            _ => p,
        };
        return std::fs::canonicalize(p).ok();
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .and_then(|p| std::fs::canonicalize(p).ok())
}

/// Asks the driver which command it would run (`-###`) and turns the answer into a template.
fn probe(program: &str, args: &[String], input: &Path, cwd: Option<&Path>) -> Option<Vec<Arg>> {
    let mut cmd = Command::new(program);
    cmd.args(args).arg("-###").arg(input);
    if let Some(d) = cwd {
        cmd.current_dir(d);
    }
    let out = cmd.output().ok()?;
    if !out.status.success() {
        return None;
    }
    let text = String::from_utf8(out.stderr).ok()?;
    template(&text, input.to_str()?)
}

/// The single command of a `-###` listing as a template over `input`; `None` when the listing
/// has no command or several, or when an argument mentions the input other than whole.
///
/// Command lines are the lines starting with a space; gcc double-quotes the arguments with
/// characters other than letters, digits and `_/-.` (escaping `"`, `\` and `$` with `\`),
/// clang quotes every argument: both are shell words.
///
/// The driver's `-dumpbase NAME`, `-dumpbase-ext EXT` and `-auxbase NAME` (names of auxiliary
/// output files, derived from the input and unused by `-E`) are left out.
fn template(listing: &str, input: &str) -> Option<Vec<Arg>> {
    let mut commands = listing
        .lines()
        .filter(|l| l.starts_with(' '))
        .map(shlex::split);
    let words = commands.next()??;
    if commands.next().is_some() || words.is_empty() {
        return None;
    }
    let mut out = Vec::with_capacity(words.len());
    let mut skip = false;
    for w in words {
        if skip {
            skip = false;
            continue;
        }
        if matches!(w.as_str(), "-dumpbase" | "-dumpbase-ext" | "-auxbase") {
            skip = true;
            continue;
        }
        if w == input {
            out.push(Arg::Input);
        } else if w.contains(input) {
            return None;
        } else {
            out.push(Arg::Literal(w));
        }
    }
    out.contains(&Arg::Input).then_some(out)
}

/// Writes `e` to `file` in the existing directory ([`write_atomically`]).
fn store(file: &Path, e: &Entry) {
    if let Ok(json) = serde_json::to_string(e) {
        write_atomically(file, &json);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GCC: &str = "Using built-in specs.\nCOLLECT_GCC=gcc\nTarget: x86_64-linux-gnu\n \
\"/usr/lib/gcc/x86_64-linux-gnu/12/cc1\" \"-E\" \"-quiet\" \"-I\" \"inc dir\" \
\"-D__RACEDAR__=1\" \"a/x.c\" \"-mtune=generic\" \"-dumpbase\" \"x.c\" \"-dumpbase-ext\" \".c\"\n\
COLLECT_GCC_OPTIONS='-E' '-I' 'inc dir'\n";

    #[test]
    fn gcc_listing_becomes_a_template() {
        let t = template(GCC, "a/x.c").expect("template");
        let lit = |s: &str| Arg::Literal(s.to_string());
        assert_eq!(
            t,
            vec![
                lit("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"),
                lit("-E"),
                lit("-quiet"),
                lit("-I"),
                lit("inc dir"),
                lit("-D__RACEDAR__=1"),
                Arg::Input,
                lit("-mtune=generic"),
            ]
        );
    }

    #[test]
    fn several_commands_or_a_mangled_input_give_no_template() {
        let two = format!("{GCC} \"/usr/bin/as\" \"-o\" \"x.o\"\n");
        assert_eq!(template(&two, "a/x.c"), None);
        let mangled = " \"cc1\" \"-E\" \"-MF\" \"a/x.c.d\" \"a/x.c\"\n";
        assert_eq!(template(mangled, "a/x.c"), None);
        assert_eq!(template("no commands here\n", "a/x.c"), None);
    }

    #[test]
    fn gcc_quotes_only_some_arguments() {
        let listing = " /usr/lib/gcc/x86_64-linux-gnu/12/cc1 -E -quiet -D \"__RACEDAR__=1\" \
                       a/x.c \"-mtune=generic\" \"d\\\"q\" -dumpbase x.c\n";
        let t = template(listing, "a/x.c").expect("template");
        let lit = |s: &str| Arg::Literal(s.to_string());
        assert_eq!(
            t,
            vec![
                lit("/usr/lib/gcc/x86_64-linux-gnu/12/cc1"),
                lit("-E"),
                lit("-quiet"),
                lit("-D"),
                lit("__RACEDAR__=1"),
                Arg::Input,
                lit("-mtune=generic"),
                lit("d\"q"),
            ]
        );
    }

    /// The shortcut's output is the driver's, byte for byte (skipped without a `cc`).
    #[test]
    fn direct_output_is_the_drivers() {
        let Ok(dir) = tempfile::tempdir() else {
            return;
        };
        let input = dir.path().join("t.c");
        let src = "#include <stdlib.h>\n#include <pthread.h>\n#define N 3\nint a[N];\n\
                   int main(void) { return a[__LINE__ % N] + (int)sizeof(pthread_t); }\n";
        if std::fs::write(&input, src).is_err() {
            return;
        }
        let args: Vec<String> = ["-E", "-D__RACEDAR__=1", "-DEXTRA=1", "-x", "c"]
            .map(String::from)
            .to_vec();
        let via_driver = Command::new("cc").args(&args).arg(&input).output();
        let Ok(via_driver) = via_driver else {
            return; // no C compiler here
        };
        assert!(via_driver.status.success());
        let cache = dir.path().join("cache");
        let command = direct_command(&cache, "cc", &args, &input, None)
            .expect("gcc and clang drivers give a shortcut");
        assert_ne!(command[0], "cc", "the command is the preprocessor proper");
        let direct = Command::new(&command[0])
            .args(&command[1..])
            .output()
            .expect("runs");
        assert!(direct.status.success());
        assert_eq!(
            String::from_utf8_lossy(&direct.stdout),
            String::from_utf8_lossy(&via_driver.stdout)
        );
        // The second time comes from the cache, for another input too.
        let other = dir.path().join("u.c");
        assert!(std::fs::write(&other, "int u;\n").is_ok());
        let again = direct_command(&cache, "cc", &args, &other, None).expect("cached");
        assert_eq!(again.len(), command.len());
        assert!(again.iter().any(|a| a == other.to_str().unwrap_or("")));
        assert_eq!(
            std::fs::read_dir(cache.join("driver"))
                .map(|d| d.count())
                .ok(),
            Some(1)
        );
    }
}
