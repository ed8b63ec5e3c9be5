//! Dropping the library declarations a translation unit never uses.
//!
//! A small program that includes `<pthread.h>` and `<stdlib.h>` is about 40 KB after
//! preprocessing, and most of it declares library functions, types and variables it never
//! names. Parsing and lowering them is most of the front end's time on such programs, and a
//! declaration whose names are never used elsewhere has no effect on the program (C11 §6.2.1,
//! §6.7: it only introduces the names). So before parsing, a declaration is removed from the
//! text the parser sees when
//!
//! - it lies wholly in a system header (line markers with flag 3, as gcc and clang write
//!   them), with no directive line inside it, and ends with `;` at the top level;
//! - it has one of four shapes, which say exactly which names it introduces:
//!   - a function prototype `[__extension__] extern ... NAME ( ... ) ... ;`;
//!   - an object declaration `[__extension__] extern ... NAME [ [...] ] ;`;
//!   - a type definition `[__extension__] typedef ... NAME ;` (no parenthesis at the top
//!     level, so no function or pointer-to-function type and no attribute);
//!   - a tag definition `struct|union TAG { ... } ;`;
//!
//!   each with one declarator (no top-level comma), no `=`, no `enum` (whose constants are
//!   names too), and `{ ... }` bodies only after `struct`/`union` (their tags, nested ones
//!   included, count as introduced names);
//! - none of the names it introduces occurs anywhere else in the unit.
//!
//! Declarations are visited from the last to the first and the occurrences of a removed
//! declaration's identifiers are forgotten, so chains (`typedef __int8_t int8_t;` unused, then
//! `__int8_t` unused) go in one pass. Everything in the program's own files stays. Offsets keep
//! mapping to the original text ([`super::compat::OffsetMap`]), so locations are unchanged.

use super::compat::Tok;
use rustc_hash::FxHashMap;

/// One top-level declaration: tokens `first..semi` (the `;` at `semi`) of the unit.
struct Decl {
    first: usize,
    semi: usize,
}

/// The byte ranges (half-open, offsets into `src`) of the declarations to drop, in order;
/// `toks` are the tokens of `src` ([`super::compat::tokens`]).
pub(super) fn unused_declarations(src: &str, toks: &[Tok]) -> Vec<(usize, usize)> {
    let word = |t: &Tok| match *t {
        Tok::Ident(a, b) => Some(&src[a..b]),
        _ => None,
    };
    // How often each identifier occurs in the unit.
    let mut uses: FxHashMap<&str, u32> = FxHashMap::default();
    for t in toks {
        if let Some(w) = word(t) {
            *uses.entry(w).or_default() += 1;
        }
    }
    let decls = system_declarations(src, toks);
    let mut out = Vec::new();
    let mut local: FxHashMap<&str, u32> = FxHashMap::default();
    for d in decls.iter().rev() {
        let body = &toks[d.first..d.semi];
        let Some(names) = introduced_names(src, body) else {
            continue;
        };
        local.clear();
        for t in body {
            if let Some(w) = word(t) {
                *local.entry(w).or_default() += 1;
            }
        }
        let unused = names
            .iter()
            .all(|n| uses.get(n).copied().unwrap_or(0) <= local.get(n).copied().unwrap_or(0));
        if !unused {
            continue;
        }
        for (w, k) in &local {
            if let Some(u) = uses.get_mut(w) {
                *u = u.saturating_sub(*k);
            }
        }
        if let (Some(&Tok::Ident(from, _)), Some(&Tok::Punct(end, _))) =
            (toks.get(d.first), toks.get(d.semi))
        {
            out.push((from, end + 1));
        }
    }
    out.reverse();
    out
}

/// The top-level declarations ending in `;` that lie wholly in system headers, uninterrupted
/// by directive lines and starting with an identifier, in order.
fn system_declarations(src: &str, toks: &[Tok]) -> Vec<Decl> {
    let mut out = Vec::new();
    let mut in_system = false;
    // The current declaration: its first token, whether it started in a system header and
    // whether a directive interrupts it.
    let mut start: Option<usize> = None;
    let mut start_in_system = false;
    let mut interrupted = false;
    let mut depth = 0usize;
    for (i, t) in toks.iter().enumerate() {
        match *t {
            Tok::Directive(a, b) => {
                if start.is_some() {
                    interrupted = true;
                }
                if let Some(system) = marker_is_system(&src[a..b]) {
                    in_system = system;
                }
                continue;
            }
            _ if start.is_none() => {
                start = Some(i);
                start_in_system = in_system;
                interrupted = false;
            }
            _ => {}
        }
        match *t {
            Tok::Punct(_, b'(' | b'[' | b'{') => depth += 1,
            Tok::Punct(_, b')' | b']') => depth = depth.saturating_sub(1),
            Tok::Punct(_, b'}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 && !continues_after_brace(src, toks.get(i + 1)) {
                    // The end of a function body: a new declaration follows.
                    start = None;
                }
            }
            Tok::Punct(_, b';') if depth == 0 => {
                if let Some(first) = start.take()
                    && start_in_system
                    && in_system
                    && !interrupted
                    && matches!(toks[first], Tok::Ident(..))
                {
                    out.push(Decl { first, semi: i });
                }
            }
            _ => {}
        }
    }
    out
}

/// Whether the token after a top-level `}` continues the declaration (a tag body followed by
/// declarators or `;`) rather than starting the next one (after a function body). A wrong
/// answer only merges or splits declarations, and neither shape can then be removed.
fn continues_after_brace(src: &str, next: Option<&Tok>) -> bool {
    match next {
        Some(Tok::Punct(_, c)) => matches!(c, b';' | b'*' | b'(' | b'[' | b','),
        Some(&Tok::Ident(a, b)) => !matches!(
            &src[a..b],
            "extern" | "typedef" | "static" | "__extension__" | "_Static_assert"
        ),
        _ => false,
    }
}

/// For a line marker `# LINE "FILE" FLAGS`, whether it enters system-header text (flag 3);
/// `None` for other directive lines.
fn marker_is_system(line: &str) -> Option<bool> {
    super::source_map::parse_marker_flags(line)
        .map(|(_, _, flags)| flags.split_whitespace().any(|f| f == "3"))
}

/// The names a declaration `toks` (without its `;`) introduces, when it has one of the four
/// shapes of the module documentation; `None` otherwise (it is kept).
fn introduced_names<'a>(src: &'a str, toks: &[Tok]) -> Option<Vec<&'a str>> {
    let word = |t: Option<&Tok>| match t {
        Some(&Tok::Ident(a, b)) => Some(&src[a..b]),
        _ => None,
    };
    let skip = usize::from(word(toks.first()) == Some("__extension__"));
    let lead = word(toks.get(skip))?;
    let mut names = Vec::new();
    let mut depth = 0usize;
    // The identifier before the first top-level `(`, if any.
    let mut call_name: Option<Option<&str>> = None;
    for (k, t) in toks.iter().enumerate() {
        let prev = k.checked_sub(1).and_then(|p| toks.get(p));
        match *t {
            Tok::Punct(_, b'=') => return None,
            Tok::Punct(_, b',') if depth == 0 => return None,
            Tok::Ident(..) if word(Some(t)) == Some("enum") => return None,
            Tok::Punct(_, b'{') => {
                // A body: only of `struct`/`union`, whose tag (if any) is introduced.
                let before = word(prev)?;
                if !matches!(before, "struct" | "union") {
                    let tag_kw = word(k.checked_sub(2).and_then(|p| toks.get(p)))?;
                    if !matches!(tag_kw, "struct" | "union") {
                        return None;
                    }
                    names.push(before);
                }
                depth += 1;
            }
            Tok::Punct(_, b'(') => {
                if depth == 0 && call_name.is_none() {
                    call_name = Some(word(prev));
                }
                depth += 1;
            }
            Tok::Punct(_, b'[') => depth += 1,
            Tok::Punct(_, b')' | b']' | b'}') => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    let last = toks.last()?;
    let is_keyword = super::parse::is_keyword;
    match lead {
        "extern" => {
            let name = match call_name {
                // A function: the identifier before the first top-level `(`.
                Some(n) => n?,
                // An object: the last identifier, or the one before a final `[...]`.
                None => declarator_name(src, toks)?,
            };
            (!is_keyword(name)).then_some(())?;
            names.push(name);
        }
        "typedef" if call_name.is_none() => {
            let name = word(Some(last))?;
            (!is_keyword(name)).then_some(())?;
            names.push(name);
        }
        "struct" | "union" if skip == 0 && matches!(last, Tok::Punct(_, b'}')) => {
            // `struct TAG { ... }`: the tag was collected with the body.
            (!names.is_empty()).then_some(())?;
        }
        _ => return None,
    }
    Some(names)
}

/// The declared identifier of an object declaration without parentheses: the last token, or
/// the identifier before a final array suffix `[...]`.
fn declarator_name<'a>(src: &'a str, toks: &[Tok]) -> Option<&'a str> {
    let mut k = toks.len().checked_sub(1)?;
    if matches!(toks[k], Tok::Punct(_, b']')) {
        let mut depth = 0usize;
        loop {
            match toks[k] {
                Tok::Punct(_, b']') => depth += 1,
                Tok::Punct(_, b'[') => {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                }
                _ => {}
            }
            k = k.checked_sub(1)?;
        }
        k = k.checked_sub(1)?;
    }
    match toks[k] {
        Tok::Ident(a, b) => Some(&src[a..b]),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pruned(src: &str) -> String {
        let toks = super::super::compat::tokens(src);
        let mut out = String::new();
        let mut cursor = 0;
        for (a, b) in unused_declarations(src, &toks) {
            out.push_str(&src[cursor..a]);
            cursor = b;
        }
        out.push_str(&src[cursor..]);
        out
    }

    const HEADER: &str = "# 1 \"/usr/include/stdlib.h\" 1 3 4\n\
        extern int atoi (const char *__nptr)\n     __attribute__ ((__pure__));\n\
        __extension__ extern long long int atoll (const char *__nptr);\n\
        extern void free (void *__ptr) __attribute__ ((__nothrow__ , __leaf__));\n\
        extern void (*signal (int, void (*) (int))) (int);\n\
        typedef signed char __int8_t;\n\
        typedef __int8_t int8_t;\n\
        typedef int __pid_t;\n\
        typedef __pid_t pid_t;\n\
        typedef void (*__sighandler_t) (int);\n\
        struct timespec { long tv_sec; struct inner { int x; } in; };\n\
        struct sched_param { int sched_priority; };\n\
        enum { UNUSED_CONSTANT };\n\
        extern int a, b (int);\n\
        extern char *optarg;\n\
        extern char *__tzname[2];\n\
        extern int opterr;\n";

    #[test]
    fn unused_system_declarations_go_and_the_rest_stays() {
        let src = format!(
            "{HEADER}# 3 \"t.c\" 2\nint main(void) {{ pid_t p; struct inner *i; free(0); \
             return opterr; }}\n"
        );
        let out = pruned(&src);
        for gone in [
            "atoi",
            "atoll",
            "int8_t",
            "sched_param",
            "optarg",
            "__tzname",
        ] {
            assert!(!out.contains(gone), "{gone} left in {out}");
        }
        for kept in [
            "extern void free",
            "signal",
            "typedef int __pid_t",
            "typedef __pid_t pid_t",
            "__sighandler_t",
            "struct timespec",
            "UNUSED_CONSTANT",
            "extern int a, b",
            "extern int opterr",
            "int main(void)",
            "# 3 \"t.c\" 2",
        ] {
            assert!(out.contains(kept), "{kept} missing from {out}");
        }
    }

    #[test]
    fn program_files_and_interrupted_declarations_are_kept() {
        // Without flag 3 the same text is the program's own.
        let own = HEADER.replace(" 1 3 4", " 1");
        assert_eq!(pruned(&own), own);
        let split =
            "# 1 \"/usr/include/x.h\" 1 3 4\nextern int f (int\n# 7 \"/usr/include/x.h\" 3 4\n);\n";
        assert_eq!(pruned(split), split);
        // After a function body, the next declaration is seen on its own.
        let inline = "# 1 \"/usr/include/x.h\" 1 3 4\nextern __inline int g (void) { return 0; }\nextern int h (int);\n";
        assert_eq!(
            pruned(inline),
            "# 1 \"/usr/include/x.h\" 1 3 4\nextern __inline int g (void) { return 0; }\n\n"
        );
    }

    #[test]
    fn markers_are_read() {
        assert_eq!(
            marker_is_system("# 1 \"/usr/include/a.h\" 1 3 4"),
            Some(true)
        );
        assert_eq!(marker_is_system("# 12 \"t.c\" 2"), Some(false));
        assert_eq!(marker_is_system("#line 5 \"a \\\" 3.c\""), Some(false));
        assert_eq!(marker_is_system("#pragma pack(1)"), None);
    }
}
