//! Robustness of `racedar check` on bad and extreme input (DESIGN.md, "Never crash on input"):
//! every run ends with exit code 0, 1 or 2 within a time bound, never with a panic (101), a
//! signal (a stack overflow aborts) or a hang.
//!
//! * Mutants: deterministic, seeded mutants of the fixture programs (deleted, duplicated and
//!   swapped lines, swapped, deleted and replaced tokens, truncations, random bytes).
//! * Deep and large input, generated here: 10 000 levels of blocks, `if`s and conditional
//!   expressions, 10 000-term sums, a 10 000-case `switch`, a 20 000-statement function, a
//!   thousand nested loops, long call and member chains, recursion (direct and mutual, also
//!   through function pointers), self-referential structures, thousands of functions; and
//!   10 000 levels of parentheses and of calls, past the bracket-nesting limit
//!   (`racedar::frontend::parse::MAX_BRACKET_DEPTH`): rejected with a one-line error.
//!
//! Every program runs through the binary, as a user runs it.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How a run ended.
#[derive(Debug)]
enum End {
    /// Exit code.
    Code(i32),
    /// Killed by a signal (stack overflow, abort).
    Signal,
    /// Still running after the time bound.
    Timeout,
}

/// Runs `racedar check --format json ARGS FILE` with a time bound.
fn run(file: &Path, args: &[&str], bound: Duration) -> (End, Duration, String) {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_racedar"))
        .arg("check")
        .args(["--format", "json"])
        .args(args)
        .arg(file)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("racedar starts");
    // Read stderr on a thread so a chatty child never blocks on a full pipe.
    let mut stderr = child.stderr.take().expect("piped stderr");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
        s
    });
    let end = loop {
        match child.try_wait().expect("wait") {
            Some(status) => {
                break match status.code() {
                    Some(c) => End::Code(c),
                    None => End::Signal,
                };
            }
            None if start.elapsed() > bound => {
                let _ = child.kill();
                let _ = child.wait();
                break End::Timeout;
            }
            None => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    let elapsed = start.elapsed();
    let err = reader.join().unwrap_or_default();
    (end, elapsed, err)
}

/// Whether a run ended as racedar promises: 0 (no findings), 1 (findings) or 2 (bad input,
/// with a one-line `file:line` error).
fn acceptable(end: &End, stderr: &str) -> Result<(), String> {
    match end {
        End::Code(0 | 1) => Ok(()),
        End::Code(2) => {
            let last = stderr.lines().last().unwrap_or("");
            if last.contains(": error: ") {
                Ok(())
            } else {
                Err(format!("exit 2 without a one-line error: {stderr}"))
            }
        }
        End::Code(c) => Err(format!("exit code {c}: {stderr}")),
        End::Signal => Err(format!("killed by a signal: {stderr}")),
        End::Timeout => Err("timed out".into()),
    }
}

/// A small deterministic pseudo-random generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// A number in `0..n` (`n > 0`).
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Byte ranges of the tokens of C text (identifiers, numbers, single punctuation bytes).
fn tokens(src: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < src.len() {
        let c = src[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_alphanumeric() || c == b'_' {
            while i < src.len() && (src[i].is_ascii_alphanumeric() || src[i] == b'_') {
                i += 1;
            }
        } else {
            i += 1;
        }
        out.push((start, i));
    }
    out
}

/// Words spliced into programs by the token-replacing mutation.
const VOCABULARY: &[&str] = &[
    "(",
    ")",
    "{",
    "}",
    "[",
    "]",
    ";",
    ",",
    "*",
    "&",
    "=",
    "==",
    "->",
    ".",
    "...",
    "#",
    "\"",
    "'",
    "/*",
    "//",
    "\\",
    "int",
    "void",
    "struct",
    "union",
    "enum",
    "typedef",
    "static",
    "extern",
    "const",
    "volatile",
    "_Atomic",
    "sizeof",
    "return",
    "goto",
    "case",
    "default",
    "switch",
    "while",
    "for",
    "do",
    "if",
    "else",
    "break",
    "continue",
    "asm",
    "__asm__",
    "__attribute__((packed))",
    "__thread",
    "_Thread_local",
    "__int128",
    "__typeof__(x)",
    "({ 0; })",
    "pthread_create",
    "pthread_join",
    "pthread_mutex_lock",
    "pthread_mutex_unlock",
    "malloc",
    "free",
    "setjmp",
    "longjmp",
    "NULL",
    "0",
    "-1",
    "2147483648",
    "0x7fffffffffffffff",
    "1e308",
    "'\\0'",
    "\"s\"",
    "main",
    "L",
    "__VERIFIER_atomic_begin",
];

/// One mutant of `src`; `kind` picks the mutation.
fn mutate(src: &[u8], kind: usize, rng: &mut Rng) -> Vec<u8> {
    let lines: Vec<&[u8]> = src.split_inclusive(|&b| b == b'\n').collect();
    let toks = tokens(src);
    let mut out: Vec<u8>;
    match kind {
        // Delete one line.
        0 => {
            let k = rng.below(lines.len());
            out = lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != k)
                .flat_map(|(_, l)| l.iter().copied())
                .collect();
        }
        // Duplicate one line.
        1 => {
            let k = rng.below(lines.len());
            out = Vec::new();
            for (i, l) in lines.iter().enumerate() {
                out.extend_from_slice(l);
                if i == k {
                    out.extend_from_slice(l);
                }
            }
        }
        // Swap two lines.
        2 => {
            let (a, b) = (rng.below(lines.len()), rng.below(lines.len()));
            let mut ls = lines.clone();
            ls.swap(a, b);
            out = ls.concat();
        }
        // Swap two adjacent tokens.
        3 if toks.len() > 1 => {
            let k = rng.below(toks.len() - 1);
            let ((a0, a1), (b0, b1)) = (toks[k], toks[k + 1]);
            out = src[..a0].to_vec();
            out.extend_from_slice(&src[b0..b1]);
            out.extend_from_slice(&src[a1..b0]);
            out.extend_from_slice(&src[a0..a1]);
            out.extend_from_slice(&src[b1..]);
        }
        // Delete one token.
        4 if !toks.is_empty() => {
            let (a, b) = toks[rng.below(toks.len())];
            out = [&src[..a], &src[b..]].concat();
        }
        // Replace one token by another of the program or of the vocabulary.
        5 if !toks.is_empty() => {
            let (a, b) = toks[rng.below(toks.len())];
            let word: Vec<u8> = if rng.below(2) == 0 {
                let (c, d) = toks[rng.below(toks.len())];
                src[c..d].to_vec()
            } else {
                VOCABULARY[rng.below(VOCABULARY.len())].as_bytes().to_vec()
            };
            out = [&src[..a], &word[..], &src[b..]].concat();
        }
        // Truncate.
        6 => {
            out = src[..rng.below(src.len())].to_vec();
        }
        // Insert random bytes (any value, NUL and invalid UTF-8 included).
        7 => {
            let at = rng.below(src.len() + 1);
            let n = 1 + rng.below(8);
            let junk: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            out = [&src[..at], &junk[..], &src[at..]].concat();
        }
        // Overwrite a few random bytes with printable ASCII.
        8 => {
            out = src.to_vec();
            for _ in 0..1 + rng.below(4) {
                if !out.is_empty() {
                    let at = rng.below(out.len());
                    out[at] = b' ' + (rng.below(95) as u8);
                }
            }
        }
        // Cut a random slice out.
        _ => {
            let a = rng.below(src.len());
            let b = (a + rng.below(200)).min(src.len());
            out = [&src[..a], &src[b..]].concat();
        }
    }
    out
}

fn fixture_programs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut files = Vec::new();
    for dir in ["races", "deadlocks"] {
        if let Ok(rd) = std::fs::read_dir(root.join(dir)) {
            files.extend(
                rd.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "c")),
            );
        }
    }
    files.sort();
    files
}

/// Runs `check` on each of `jobs` (name, program) on two worker threads: how each ended, in
/// order.
fn run_each(jobs: &[(String, PathBuf)], bound: Duration) -> Vec<(End, Duration, String)> {
    let next = std::sync::Mutex::new(0usize);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..2 {
            s.spawn(|| {
                loop {
                    let i = {
                        let mut n = next.lock().expect("lock");
                        *n += 1;
                        *n - 1
                    };
                    let Some((_, path)) = jobs.get(i) else {
                        break;
                    };
                    let r = run(path, &[], bound);
                    results.lock().expect("lock").push((i, r));
                }
            });
        }
    });
    let mut results = results.into_inner().expect("lock");
    results.sort_by_key(|(i, _)| *i);
    results.into_iter().map(|(_, r)| r).collect()
}

/// A few hundred seeded mutants of the fixture programs all end with 0, 1 or 2
/// (`RACEDAR_MUTANTS=N` runs N mutants instead of 300, e.g. 1000 for issue 8's count).
#[test]
fn mutants_of_fixtures_never_crash_or_hang() {
    let dir = tempfile::tempdir().expect("temp dir");
    let files = fixture_programs();
    assert!(files.len() > 20, "too few fixtures");
    let mut rng = Rng(0x0005_eed0_fa11_c0de);
    let mut jobs = Vec::new();
    let total: usize = std::env::var("RACEDAR_MUTANTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300);
    for n in 0..total {
        let f = &files[rng.below(files.len())];
        let src = std::fs::read(f).expect("readable fixture");
        let kind = n % 10;
        let mutant = mutate(&src, kind, &mut rng);
        // Keep the fixture's name so that error messages and includes behave the same.
        let path = dir.path().join(format!("m{n:03}_k{kind}.c"));
        std::fs::write(&path, &mutant).expect("write mutant");
        let name = format!(
            "mutant {n} (kind {kind}) of {}",
            f.file_name()
                .map(|s| s.to_string_lossy())
                .unwrap_or_default()
        );
        jobs.push((name, path));
    }
    let results = run_each(&jobs, Duration::from_secs(60));
    let mut failures = Vec::new();
    let (mut analysed, mut rejected, mut other) = (0, 0, 0);
    let mut slowest = Duration::ZERO;
    for ((name, _), (end, took, err)) in jobs.iter().zip(&results) {
        slowest = slowest.max(*took);
        match end {
            End::Code(0 | 1) => analysed += 1,
            End::Code(2) => rejected += 1,
            _ => other += 1,
        }
        if let Err(e) = acceptable(end, err) {
            failures.push(format!("{name}: {e}"));
        }
    }
    eprintln!(
        "{total} mutants: {analysed} analysed, {rejected} rejected with exit 2, {other} other \
         (panic, signal or timeout); slowest {:.2} s",
        slowest.as_secs_f64()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The mix is meaningful: both outcomes occur.
    assert!(analysed > total / 10 && rejected > total / 10);
}

/// Generated extreme programs: deep nesting, huge statements and functions, recursion.
fn extreme_programs() -> Vec<(&'static str, String)> {
    const N: usize = 10_000;
    let header = "#include <pthread.h>\nint g;\nint f(int a) { return a; }\n";
    let thread = |body: &str| {
        format!(
            "{header}void *t(void *a) {{ {body} return 0; }}\nint main(void) {{ pthread_t h; pthread_create(&h, 0, t, 0); g = 1; pthread_join(h, 0); return 0; }}\n"
        )
    };
    let mut v: Vec<(&'static str, String)> = vec![
        (
            "parentheses",
            thread(&format!("int x = {}g{};", "(".repeat(N), ")".repeat(N))),
        ),
        (
            "blocks",
            thread(&format!("{}g = 1;{}", "{".repeat(N), "}".repeat(N))),
        ),
        ("ifs", thread(&format!("{}g = 1;", "if (g) ".repeat(N)))),
        // Loop analyses compute each loop's body: nested loops cost time quadratic in their
        // depth, so a thousand levels.
        (
            "whiles",
            thread(&format!("{}g = 1;", "while (g) ".repeat(N / 10))),
        ),
        (
            "fors",
            thread(&format!(
                "int i; {}g = 1;",
                "for (i = 0; i < 2; i++) ".repeat(N / 10)
            )),
        ),
        ("sum", thread(&format!("int x = g{};", " + g".repeat(N)))),
        (
            "conditionals",
            thread(&format!(
                "int x = {}1{};",
                "g ? ".repeat(N),
                " : 0".repeat(N)
            )),
        ),
        (
            "calls",
            thread(&format!("int x = {}1{};", "f(".repeat(N), ")".repeat(N))),
        ),
        (
            "negations",
            thread(&format!("int x = {}g;", "- ".repeat(N))),
        ),
        (
            "casts",
            thread(&format!("long x = {}g;", "(long)(int)".repeat(N / 2))),
        ),
        (
            "pointers",
            format!("int {}p;\nint main(void) {{ return 0; }}\n", "*".repeat(N)),
        ),
        (
            "initializer",
            format!(
                "int a[1] = {}1{};\nint main(void) {{ return a[0]; }}\n",
                "{".repeat(N),
                "}".repeat(N)
            ),
        ),
    ];
    let cases: String = (0..N)
        .map(|i| format!("case {i}: g = {i}; break;\n"))
        .collect();
    v.push(("switch", thread(&format!("switch (g) {{ {cases} }}"))));
    let long: String = (0..10_000)
        .map(|i| format!("x = x + g; g = x ^ {i};\n"))
        .collect();
    v.push(("long function", thread(&format!("int x = 0; {long}"))));
    let chain: String = (0..2_000)
        .map(|i| format!("void c{i}(void) {{ g++; c{}(); }}\n", i + 1))
        .collect();
    v.push((
        "call chain",
        format!("#include <pthread.h>\nint g;\n{chain}void c2000(void) {{ g++; }}\nvoid *t(void *a) {{ c0(); return 0; }}\nint main(void) {{ pthread_t h; pthread_create(&h, 0, t, 0); c0(); pthread_join(h, 0); return 0; }}\n"),
    ));
    v.push((
        "recursion",
        "#include <pthread.h>\nint g;\nint r(int n) { if (n <= 0) return g; g = n; return r(n - 1) + r(n - 2); }\nint even(int n);\nint odd(int n) { return n == 0 ? 0 : even(n - 1); }\nint even(int n) { g++; return n == 0 ? 1 : odd(n - 1); }\nvoid *t(void *a) { r(30); return (void *)(long)even(1000); }\nint main(void) { pthread_t h; pthread_create(&h, 0, t, 0); r(5); pthread_join(h, 0); return 0; }\n".to_string(),
    ));
    v.push((
        "recursion through function pointers",
        "#include <pthread.h>\nint g;\nint (*fp_a)(int);\nint (*fp_b)(int);\nint a(int n) { g++; return n ? fp_b(n - 1) : 0; }\nint b(int n) { return n ? fp_a(n - 1) : 1; }\nstruct ops { int (*go)(int); struct ops *next; } o1, o2 = { b, &o1 };\nvoid *t(void *p) { struct ops *o = p; return (void *)(long)o->next->go(10); }\nint main(void) { pthread_t h; fp_a = a; fp_b = b; o1.go = a; o1.next = &o2; pthread_create(&h, 0, t, &o1); t(&o2); pthread_join(h, 0); return g; }\n".to_string(),
    ));
    v.push((
        "self-referential structures",
        "#include <pthread.h>\n#include <stdlib.h>\nstruct node { int v; struct node *next; struct node *self; struct tree { struct tree *l, *r; struct node *n; } t; };\nstruct node *head;\npthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;\nvoid *t(void *a) { for (int i = 0; i < 100; i++) { struct node *n = malloc(sizeof *n); if (!n) return 0; n->self = n; n->t.n = n; n->t.l = &n->t; pthread_mutex_lock(&m); n->next = head; head = n; pthread_mutex_unlock(&m); } return 0; }\nint main(void) { pthread_t h[4]; for (int i = 0; i < 4; i++) pthread_create(&h[i], 0, t, 0); for (int i = 0; i < 4; i++) pthread_join(h[i], 0); for (struct node *n = head; n; n = n->next->self->t.n) n->v++; return 0; }\n".to_string(),
    ));
    // Each member access of a chain resolves the chain before it: quadratic, a thousand.
    let members: String = "->next".repeat(N / 10);
    v.push((
        "member chain",
        format!("struct s {{ struct s *next; int v; }} *p;\nint main(void) {{ return p{members}->v; }}\n"),
    ));
    let threads: String = (0..300)
        .map(|i| format!("pthread_create(&h[{i}], 0, t, 0);\n"))
        .collect();
    v.push((
        "many creates",
        format!("#include <pthread.h>\nint g;\nvoid *t(void *a) {{ g++; return 0; }}\nint main(void) {{ pthread_t h[300]; {threads} return 0; }}\n"),
    ));
    let funcs: String = (0..5_000)
        .map(|i| format!("int f{i}(int x) {{ return x + {i}; }}\n"))
        .collect();
    v.push((
        "many functions",
        format!("{funcs}int main(void) {{ return f4999(1); }}\n"),
    ));
    v
}

/// Deep and large programs end normally (no stack overflow) in bounded time: analysed, or,
/// past the bracket-nesting limit ([`racedar::frontend::parse::MAX_BRACKET_DEPTH`]), rejected
/// with a one-line error.
#[test]
fn deep_and_large_programs_end_in_bounded_time() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut jobs = Vec::new();
    for (name, src) in extreme_programs() {
        let path = dir.path().join(format!("{}.c", name.replace(' ', "_")));
        std::fs::write(&path, src).expect("write program");
        jobs.push((name.to_string(), path));
    }
    let bracketed = ["parentheses", "calls"];
    let results = run_each(&jobs, Duration::from_secs(120));
    let mut failures = Vec::new();
    for ((name, _), (end, took, err)) in jobs.iter().zip(&results) {
        eprintln!("{name}: {end:?} in {took:.1?}");
        let rejected = bracketed.contains(&name.as_str());
        let ok = match end {
            End::Code(2) if rejected => err.contains("nested deeper than"),
            End::Code(0 | 1) => !rejected,
            _ => false,
        };
        if !ok {
            failures.push(format!("{name}: {end:?} after {took:.1?}: {err}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
