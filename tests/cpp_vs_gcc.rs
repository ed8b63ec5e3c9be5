//! racedar's in-process preprocessor against the system one (`cc1 -E`, run through the
//! driver's own command line): on small fixtures of the tricky cases and on every C file of the
//! shared corpus (skipped, with a message, when absent), each non-directive output line must
//! have the same file, line number and text (spacing included, so columns agree). A file the
//! in-process preprocessor declines ([`Bail`]) is allowed but counted, and the count is bounded.

mod common;

use common::corpus;
use racedar::frontend::cpp::{self, Bail, config};
use racedar::frontend::driver;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (file, line, text) of every non-empty, non-directive line of `gcc -E`-style output.
fn lines(text: &str) -> Vec<(String, u32, String)> {
    let mut out = Vec::new();
    let mut file = String::new();
    let mut line = 1u32;
    for l in text.lines() {
        if let Some(rest) = l.strip_prefix("# ") {
            let mut parts = rest.splitn(2, ' ');
            if let (Some(n), Some(name)) = (parts.next(), parts.next())
                && let (Ok(n), Some(q)) = (n.parse::<u32>(), name.strip_prefix('"'))
            {
                file = q.split('"').next().unwrap_or("").to_string();
                line = n;
                continue;
            }
        }
        if !l.trim().is_empty() && !l.starts_with('#') {
            out.push((file.clone(), line, l.trim_end().to_string()));
        }
        line += 1;
    }
    out
}

/// Outcome of one comparison.
enum Outcome {
    Same,
    Declined(String),
    Differs(String),
}

fn compare(cache: &Path, path: &Path, include_dirs: &[PathBuf]) -> Outcome {
    let mut args: Vec<String> = vec!["-E".into(), "-D__RACEDAR__=1".into()];
    for d in include_dirs {
        args.push("-I".into());
        args.push(d.display().to_string());
    }
    args.push("-x".into());
    args.push("c".into());
    let Some(words) = driver::direct_command(cache, "cc", &args, path, None) else {
        return Outcome::Declined("no driver command".into());
    };
    let Some(at) = words.iter().rposition(|w| Path::new(w) == path) else {
        return Outcome::Declined("input not in command".into());
    };
    let Some(cfg) = config::load(cache, &words, at, None) else {
        return Outcome::Declined("configuration not supported".into());
    };
    let gcc = Command::new(&words[0])
        .args(&words[1..])
        .output()
        .expect("cc1 runs");
    let ours = match cpp::preprocess(&cfg, path, &words[at], None) {
        Ok(t) => t,
        Err(Bail::Unsupported(why)) => {
            return if gcc.status.success() {
                Outcome::Declined(why.to_string())
            } else {
                Outcome::Same
            };
        }
        Err(Bail::Unknown(q)) => {
            config::learn(cache, &words, at, None, &q);
            let cfg = config::load(cache, &words, at, None).expect("config");
            match cpp::preprocess(&cfg, path, &words[at], None) {
                Ok(t) => t,
                Err(e) => return Outcome::Declined(format!("{e:?} after learning {q:?}")),
            }
        }
    };
    if !gcc.status.success() {
        return Outcome::Differs("gcc fails, racedar's preprocessor does not".into());
    }
    let theirs = String::from_utf8_lossy(&gcc.stdout);
    let (a, b) = (lines(&ours), lines(&theirs));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x != y {
            return Outcome::Differs(format!(
                "output line {i}: racedar {x:?}\n                 gcc     {y:?}"
            ));
        }
    }
    if a.len() != b.len() {
        return Outcome::Differs(format!("{} lines vs gcc's {}", a.len(), b.len()));
    }
    Outcome::Same
}

/// Fixture sources exercising the preprocessor's corner cases.
const FIXTURES: &[&str] = &[
    "#define A 1\n#define F(x, y) x ## y + #x\nint a = A; int b = F(a, 2);\nint c = F(,);\n",
    "#define E(fmt, ...) f(fmt, ## __VA_ARGS__)\nE(1); E(1, 2, 3); E(1,);\n",
    "#define G(args...) g(args)\nG(); G(1,2);\n",
    "#define f(x) x + f\n#define g f(1)(2)\ng; f(f(3));\n",
    "#define EMPTY\n#define LPAREN (\nint EMPTY x; int y = EMPTY-1; -EMPTY-1; +EMPTY+;\n",
    "#define h() H\n#define str(s) # s\n#define xstr(s) str(s)\nh() str( a  +  \"b\\n\" 'c' ) xstr(__LINE__)\n",
    "#if 0\n#error no\n'unterminated\n#elif 1 + 1 == 2 && defined(__STDC__) && !defined X\nint ok;\n#else\nint bad;\n#endif\n",
    "int a = \\\n  1 +\\\n2;\n\n\n\n\n\n\n\n\n\n\nint far;\n",
    "#define M(a) a\nint x = M(1\n+\n2);\nint after;\n",
    "#define f(x) [x]\nint f\n;\nf\n(1)\n",
    "#include <stdio.h>\n#include <pthread.h>\n#include <assert.h>\nint main(void) { assert(1 == 1); printf(\"%d\", __LINE__); return 0; }\n",
    "#include <limits.h>\n#include <stdint.h>\n#include <stddef.h>\n#if INT_MAX > 0 && UINT64_MAX == 0xffffffffffffffffULL\nint ok;\n#endif\n",
    "#if __has_include(<stdio.h>) && !__has_include(\"nope.h\")\nint has;\n#endif\n#ifdef __has_attribute\nint attr = __has_attribute(noreturn);\n#endif\n",
    "#define CAT(a, b) a ## b\nint CAT(x, 1) = CAT(0x, 1f); char *s = CAT(L, \"w\");\nint CAT(,y);\n",
    "  #  define   SP   a   b\n\tSP  SP\n x = SP+SP;\n",
    // C11 §6.10.3.5 EXAMPLE 3.
    "#define x 3\n#define f(a) f(x * (a))\n#undef x\n#define x 2\n#define g f\n#define z z[0]\n\
     #define h g(~\n#define m(a) a(w)\n#define w 0,1\n#define t(a) a\n#define p() int\n\
     #define q(x) x\n#define r(x,y) x ## y\nf(y+1) + f(f(z)) % t(t(g)(0) + t)(1);\n\
     g(x+(3,4)-w) | h 5) & m\n(f)^m(m);\np() i[q()] = { q(1), r(2,3), r(4,), r(,5), r(,) };\n",
    // C11 §6.10.3.5 EXAMPLE 4 and 7.
    "#define str(s) # s\n#define xstr(s) str(s)\n#define INCFILE(n) vers ## n\n\
     #define glue(a, b) a ## b\n#define xglue(a, b) glue(a, b)\n#define HIGHLOW \"hello\"\n\
     #define LOW LOW \", world\"\nglue(HIGH, LOW); xglue(HIGH, LOW)\nxstr(INCFILE(2).h)\n\
     #define debug(...) fprintf(stderr, __VA_ARGS__)\n#define showlist(...) puts(#__VA_ARGS__)\n\
     debug(\"X = %d\\n\", x); showlist(The first, second, and third items.);\n",
    // An empty expansion ending a line, and empty arguments before a non-empty one.
    "#define EMPTY\nint f(void) EMPTY\n{ return 0; }\n\
     #define SG(TAG, NAME, ATTRS, M...) union { struct { M } ATTRS; struct TAG { M } ATTRS NAME; }\n\
     SG(, addrs, , int a; int b;);\n",
    "#pragma pack(push, 1)\n#define P 1\n#pragma push_macro(\"P\")\n#undef P\n#define P 2\nint a = P;\n\
     #pragma pop_macro(\"P\")\nint b = P;\n#pragma GCC diagnostic push\nint c;\n",
];

fn with_cache<T>(f: impl FnOnce(&Path) -> T) -> T {
    let dir = tempfile::tempdir().expect("tempdir");
    f(dir.path())
}

#[test]
fn fixtures_match_gcc() {
    with_cache(|cache| {
        let src = tempfile::tempdir().expect("tempdir");
        let mut failures = Vec::new();
        for (i, text) in FIXTURES.iter().enumerate() {
            let path = src.path().join(format!("f{i}.c"));
            std::fs::write(&path, text).expect("write fixture");
            match compare(cache, &path, &[]) {
                Outcome::Same => {}
                Outcome::Declined(why) => failures.push(format!("fixture {i}: declined: {why}")),
                Outcome::Differs(d) => failures.push(format!("fixture {i}: {d}")),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    });
}

#[test]
fn include_search_matches_gcc() {
    with_cache(|cache| {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let files = [
            (
                "main.c",
                "#include \"local.h\"\n#include \"local.h\"\n#include \"twice.h\"\n#include \"twice.h\"\n\
                        #include <x.h>\n#include \"once.h\"\n\
                        #include \"once.h\"\n#define HDR <x.h>\n#include HDR\n#define Q \"sub/q.h\"\n#include Q\n\
                        int main_end;\n",
            ),
            (
                "local.h",
                "#ifndef LOCAL_H\n#define LOCAL_H\nint local;\n#endif\n",
            ),
            // Not an include guard: the #else branch counts on the second inclusion.
            (
                "twice.h",
                "#ifndef TWICE_H\n#define TWICE_H\nint first;\n#else\nint again;\n#endif\n",
            ),
            ("once.h", "#pragma once\nint once;\n"),
            ("sub/q.h", "#include \"r.h\"\nint q;\n"),
            ("sub/r.h", "int r_next_to_q;\n"),
            ("d1/x.h", "int x1;\n#include_next <x.h>\n"),
            (
                "d2/x.h",
                "#if __INCLUDE_LEVEL__ > 0\nint x2 = __INCLUDE_LEVEL__;\n#endif\n",
            ),
        ];
        for (name, text) in files {
            let p = d.join(name);
            std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
            std::fs::write(&p, text).expect("write");
        }
        match compare(cache, &d.join("main.c"), &[d.join("d1"), d.join("d2")]) {
            Outcome::Same => {}
            Outcome::Declined(why) => panic!("declined: {why}"),
            Outcome::Differs(why) => panic!("{why}"),
        }
    });
}

#[test]
fn declines_what_it_does_not_handle() {
    with_cache(|cache| {
        let src = tempfile::tempdir().expect("tempdir");
        for (i, text) in [
            "_Pragma(\"once\") int x;\n",
            "#error stop\n",
            "#line 10 \"x.c\"\nint x;\n",
            "#define F(x) x\nF(\n#define Y\n1)\n",
            "#include \"missing.h\"\n",
            // Includes itself twice per level, 150 levels: 2^150 entries without a bound.
            "#if __INCLUDE_LEVEL__ < 150\n#include __FILE__\n#include __FILE__\n#endif\n",
        ]
        .iter()
        .enumerate()
        {
            let path = src.path().join(format!("d{i}.c"));
            std::fs::write(&path, text).expect("write");
            let args = vec!["-E".to_string(), "-x".into(), "c".into()];
            let words = driver::direct_command(cache, "cc", &args, &path, None).expect("driver");
            let at = words
                .iter()
                .rposition(|w| Path::new(w) == path)
                .expect("input");
            let cfg = config::load(cache, &words, at, None).expect("config");
            let r = cpp::preprocess(&cfg, &path, &words[at], None);
            assert!(
                matches!(r, Err(Bail::Unsupported(_))),
                "case {i} should be declined: {r:?}"
            );
        }
    });
}

#[test]
fn corpus_matches_gcc() {
    let root = corpus::root();
    let Some(files) = corpus::files(&root) else {
        eprintln!("skipped: no corpus at {}", root.display());
        return;
    };
    let tasks: Vec<_> = files.iter().filter(|f| f.rel.ends_with(".c")).collect();
    with_cache(|cache| {
        let mut declined: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut differs = Vec::new();
        for f in &tasks {
            match compare(cache, &f.path, &f.include_dirs) {
                Outcome::Same => {}
                Outcome::Declined(why) => declined.entry(why).or_default().push(f.rel.clone()),
                Outcome::Differs(d) => differs.push(format!("{}: {d}", f.rel)),
            }
        }
        let n_declined: usize = declined.values().map(Vec::len).sum();
        eprintln!(
            "{} files: {} same as gcc, {} declined, {} differ",
            tasks.len(),
            tasks.len() - n_declined - differs.len(),
            n_declined,
            differs.len()
        );
        for (why, files) in &declined {
            eprintln!("declined ({why}): {}", files.join(" "));
        }
        assert!(differs.is_empty(), "{}", differs.join("\n"));
        assert!(
            n_declined * 20 <= tasks.len(),
            "more than 5% of the corpus is declined"
        );
    });
}

/// Every header under the compiler's include directories (two levels deep), included on its
/// own: the same output as gcc, or declined. Slow (thousands of headers); run with
/// `cargo test --release --test cpp_vs_gcc -- --ignored`.
#[test]
#[ignore]
fn system_headers_match_gcc() {
    with_cache(|cache| {
        let src = tempfile::tempdir().expect("tempdir");
        let mut headers = Vec::new();
        for root in ["/usr/include", "/usr/lib/gcc/x86_64-linux-gnu/12/include"] {
            let Ok(top) = std::fs::read_dir(root) else {
                continue;
            };
            for e in top.flatten() {
                let p = e.path();
                if p.is_dir() {
                    for e2 in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                        headers.push(e2.path());
                    }
                } else {
                    headers.push(p);
                }
            }
        }
        headers.retain(|h| h.extension().is_some_and(|e| e == "h"));
        headers.sort();
        let mut same = 0;
        let mut declined: BTreeMap<String, usize> = BTreeMap::new();
        let mut differs = Vec::new();
        for (i, h) in headers.iter().enumerate() {
            let path = src.path().join(format!("h{i}.c"));
            std::fs::write(
                &path,
                format!("#include \"{}\"\nint racedar_end;\n", h.display()),
            )
            .expect("write");
            match compare(cache, &path, &[]) {
                Outcome::Same => same += 1,
                Outcome::Declined(why) => *declined.entry(why).or_default() += 1,
                Outcome::Differs(d) => differs.push(format!("{}: {d}", h.display())),
            }
        }
        eprintln!(
            "{} headers: {same} same, {} declined, {} differ; declined: {declined:?}",
            headers.len(),
            declined.values().sum::<usize>(),
            differs.len()
        );
        assert!(differs.is_empty(), "{}", differs.join("\n"));
    });
}
