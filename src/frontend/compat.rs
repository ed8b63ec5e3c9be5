//! Source rewriting for the GNU extensions lang-c cannot parse.
//!
//! lang-c 0.15 rejects `__thread`, `__int128` and its typedefs, `__float128`, `__auto_type`,
//! `asm goto`, `__label__`, clang's nullability qualifiers, and implicit-int definitions such as
//! `main() { ... }` (`notes/ecosystem.md` §1.1). Instead of a prelude of `-D` macros, which would
//! not reach `.i` files, the preprocessed text is rewritten token by token:
//!
//! | GNU construct | becomes |
//! |---|---|
//! | `__thread` | `_Thread_local` |
//! | `__int128`, `__int128_t` | `long long __attribute__((__racedar_int128__))` |
//! | `__uint128_t` | `unsigned long long __attribute__((__racedar_int128__))` |
//! | `__float128` | `_Float128` |
//! | `__float80` | `long double` |
//! | `__auto_type` | `int __attribute__((__racedar_auto_type__))` |
//! | `_Nullable`, `_Nonnull`, `_Null_unspecified` | (removed) |
//! | `__label__ a, b;` | (removed) |
//! | `asm goto (... : labels)` | `asm (...)` without the label list |
//! | `_Alignas(X)` | `__attribute__((__racedar_alignas__(sizeof(X))))` |
//!
//! The marker attributes are read back by the lowering, which restores 128-bit integers and
//! infers `__auto_type` from the initialiser, so nothing is lost but the labels of `asm goto`
//! (inline assembly is unsupported anyway). lang-c accepts `_Alignas` only among declaration
//! specifiers, not on struct members; as an attribute it is accepted in both places, and
//! `sizeof(X)` parses whether `X` is a type or a constant, so the lowering reads the alignment
//! back from the operand. Implicit `int` is inserted on demand: when a parse
//! fails at an identifier where a type name was expected, `int ` is inserted there and the
//! parse retried ([`Rewriter::insert`]).
//!
//! Every edit keeps lines intact, and an [`OffsetMap`] maps offsets of the rewritten text back
//! to the original, so locations stay exact.

/// Maps byte offsets of rewritten text back to offsets of the original text.
#[derive(Clone, Debug, Default)]
pub struct OffsetMap {
    /// (start in rewritten text, start in original text) of each stretch of copied text, sorted
    /// by the first component; for equal starts the last entry wins.
    segments: Vec<(usize, usize)>,
}

impl OffsetMap {
    /// The original offset of rewritten offset `pos` (inside replacement text: the offset of the
    /// replaced token).
    pub fn to_original(&self, pos: usize) -> usize {
        let i = self.segments.partition_point(|&(new, _)| new <= pos);
        if i == 0 {
            return pos;
        }
        let (new, old) = self.segments[i - 1];
        old + (pos - new)
    }
}

/// One replacement in original coordinates.
#[derive(Clone, Debug)]
struct Edit {
    at: usize,
    len: usize,
    text: std::borrow::Cow<'static, str>,
}

/// The rewritten text of one translation unit and how to map it back.
#[derive(Clone, Debug)]
pub struct Rewriter {
    original: String,
    edits: Vec<Edit>,
    /// The current rewritten text.
    pub text: String,
    /// Offsets of `text` back to `original`.
    pub map: OffsetMap,
}

impl Rewriter {
    /// Rewrites the GNU constructs of the table in the module documentation.
    ///
    /// Also drops the library declarations the unit never uses ([`super::prune`]) and the
    /// directive lines (line markers, `#pragma`), which lang-c would only skip.
    pub fn new(original: String) -> Rewriter {
        let toks = tokens(&original);
        let mut edits = scan_edits(&original, &toks);
        let mut drops = super::prune::unused_declarations(&original, &toks);
        // Directive lines (line markers, pragmas) mean nothing to lang-c, and locations come
        // from the original text: the parser does not see them.
        drops.extend(toks.iter().filter_map(|t| match *t {
            Tok::Directive(a, b) => Some((a, b)),
            _ => None,
        }));
        drops.sort_unstable();
        if !drops.is_empty() {
            let inside = |at: usize| {
                let k = drops.partition_point(|&(_, end)| end <= at);
                drops.get(k).is_some_and(|&(from, _)| from <= at)
            };
            edits.retain(|e| !inside(e.at));
            edits.extend(drops.iter().map(|&(from, end)| Edit {
                at: from,
                len: end - from,
                text: "".into(),
            }));
            edits.sort_by_key(|e| e.at);
        }
        let mut r = Rewriter {
            original,
            edits,
            text: String::new(),
            map: OffsetMap::default(),
        };
        r.rebuild();
        r
    }

    /// The text before rewriting.
    pub fn original(&self) -> &str {
        &self.original
    }

    /// Inserts `text` at offset `pos` of the *rewritten* text and rebuilds it.
    pub fn insert(&mut self, pos: usize, text: &'static str) {
        let at = self.map.to_original(pos);
        let i = self
            .edits
            .partition_point(|e| e.at < at || (e.at == at && e.len == 0));
        self.edits.insert(
            i,
            Edit {
                at,
                len: 0,
                text: text.into(),
            },
        );
        self.rebuild();
    }

    fn rebuild(&mut self) {
        let src = &self.original;
        let extra: usize = self.edits.iter().map(|e| e.text.len()).sum();
        let mut text = String::with_capacity(src.len() + extra);
        let mut segments = Vec::with_capacity(2 * self.edits.len() + 1);
        let mut cursor = 0;
        for e in &self.edits {
            if e.at < cursor {
                continue; // overlapping edit (cannot happen with scan_edits); skip it
            }
            segments.push((text.len(), cursor));
            text.push_str(&src[cursor..e.at]);
            // Replacement text maps to the start of the replaced token.
            segments.push((text.len(), e.at));
            text.push_str(&e.text);
            cursor = e.at + e.len;
            // A zero-length stretch so that text after the replacement maps exactly.
            segments.push((text.len(), cursor));
        }
        segments.push((text.len(), cursor));
        text.push_str(&src[cursor..]);
        self.text = text;
        self.map = OffsetMap { segments };
    }
}

const INT128: &str = "long long __attribute__((__racedar_int128__))";
const UINT128: &str = "unsigned long long __attribute__((__racedar_int128__))";

fn replacement(ident: &str) -> Option<&'static str> {
    Some(match ident {
        "__thread" => "_Thread_local",
        "__int128" | "__int128_t" => INT128,
        "__uint128_t" => UINT128,
        "__float128" => "_Float128",
        "__float80" => "long double",
        "__auto_type" => "int __attribute__((__racedar_auto_type__))",
        "_Nullable" | "_Nonnull" | "_Null_unspecified" => "",
        _ => return None,
    })
}

/// Whether `b` can start / continue an identifier.
fn ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$'
}
fn ident_cont(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'$'
}

/// A minimal lexer over preprocessed C: identifiers, punctuators and directive lines (line
/// markers, `#pragma`); literals, numbers and comments are skipped.
struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    at_line_start: bool,
}

/// A token the rewriter cares about (byte offsets into the text; ranges half-open).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Tok {
    /// An identifier or keyword: `start..end`.
    Ident(usize, usize),
    /// A one-byte punctuator at an offset (`::` is two).
    Punct(usize, u8),
    /// A line starting with `#` (a line marker, `#pragma`, `#ident`): `start..end`, the
    /// newline excluded.
    Directive(usize, usize),
}

/// The tokens of preprocessed text `src`, in order.
pub(super) fn tokens(src: &str) -> Vec<Tok> {
    let mut lexer = Lexer {
        src: src.as_bytes(),
        pos: 0,
        at_line_start: true,
    };
    let mut toks = Vec::with_capacity(src.len() / 4);
    while let Some(t) = lexer.next() {
        toks.push(t);
    }
    toks
}

impl<'a> Lexer<'a> {
    fn next(&mut self) -> Option<Tok> {
        let s = self.src;
        while self.pos < s.len() {
            let b = s[self.pos];
            match b {
                b'\n' => {
                    self.pos += 1;
                    self.at_line_start = true;
                }
                b' ' | b'\t' | b'\r' | b'\x0c' | b'\x0b' => self.pos += 1,
                b'#' if self.at_line_start => {
                    // Line marker or directive (#pragma, #ident): the whole line.
                    let start = self.pos;
                    while self.pos < s.len() && s[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                    return Some(Tok::Directive(start, self.pos));
                }
                b'"' | b'\'' => {
                    self.at_line_start = false;
                    self.pos += 1;
                    while self.pos < s.len() && s[self.pos] != b && s[self.pos] != b'\n' {
                        if s[self.pos] == b'\\' {
                            self.pos += 1;
                        }
                        self.pos += 1;
                    }
                    self.pos += 1;
                }
                b'/' if s.get(self.pos + 1) == Some(&b'*') => {
                    self.pos += 2;
                    while self.pos + 1 < s.len()
                        && !(s[self.pos] == b'*' && s[self.pos + 1] == b'/')
                    {
                        self.pos += 1;
                    }
                    self.pos += 2;
                }
                b'/' if s.get(self.pos + 1) == Some(&b'/') => {
                    while self.pos < s.len() && s[self.pos] != b'\n' {
                        self.pos += 1;
                    }
                }
                b'0'..=b'9' => {
                    self.at_line_start = false;
                    // pp-number: digits, letters, '.', and signs after exponents.
                    self.pos += 1;
                    while self.pos < s.len() {
                        let c = s[self.pos];
                        let exponent_sign = (c == b'+' || c == b'-')
                            && matches!(s[self.pos - 1], b'e' | b'E' | b'p' | b'P');
                        if ident_cont(c) || c == b'.' || exponent_sign {
                            self.pos += 1;
                        } else {
                            break;
                        }
                    }
                }
                _ if ident_start(b) => {
                    self.at_line_start = false;
                    let start = self.pos;
                    while self.pos < s.len() && ident_cont(s[self.pos]) {
                        self.pos += 1;
                    }
                    return Some(Tok::Ident(start, self.pos));
                }
                _ => {
                    self.at_line_start = false;
                    self.pos += 1;
                    return Some(Tok::Punct(self.pos - 1, b));
                }
            }
        }
        None
    }
}

fn scan_edits(src: &str, toks: &[Tok]) -> Vec<Edit> {
    // Cheap exit: most translation units contain none of the rewritten words.
    const WORDS: [&str; 9] = [
        "__attribute",
        "__thread",
        "_Alignas",
        "__int128",
        "__uint128",
        "__float",
        "__auto_type",
        "_Null",
        "__label__",
    ];
    let needs_work =
        WORDS.iter().any(|w| src.contains(w)) || src.contains("_Nonnull") || src.contains("goto");
    if !needs_work {
        return Vec::new();
    }
    let mut edits = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        let Tok::Ident(a, b) = t else {
            i += 1;
            continue;
        };
        let w = &src[a..b];
        if let Some(text) = replacement(w) {
            edits.push(Edit {
                at: a,
                len: b - a,
                text: text.into(),
            });
        } else if matches!(w, "struct" | "union" | "enum") {
            tag_attribute_edits(src, toks, i, &mut edits);
        } else if w == "__label__" {
            // `__label__ a, b;` declares local labels: drop the whole declaration.
            let mut j = i + 1;
            while j < toks.len() && !matches!(toks[j], Tok::Punct(_, b';')) {
                j += 1;
            }
            if let Some(&Tok::Punct(end, _)) = toks.get(j) {
                edits.push(Edit {
                    at: a,
                    len: end + 1 - a,
                    text: "".into(),
                });
                i = j + 1;
                continue;
            }
        } else if matches!(w, "asm" | "__asm" | "__asm__") {
            i = asm_goto_edits(src, toks, i, &mut edits);
            continue;
        } else if w == "_Alignas"
            && let Some(close) = matching_paren(toks, i + 1)
        {
            edits.push(Edit {
                at: a,
                len: b - a,
                text: "__attribute__((__racedar_alignas__(sizeof".into(),
            });
            edits.push(Edit {
                at: close + 1,
                len: 0,
                text: ")))".into(),
            });
        }
        i += 1;
    }
    // The closing text of `_Alignas` comes after the edits inside its parentheses.
    edits.sort_by_key(|e| e.at);
    edits
}

/// Handles `struct|union|enum __attribute__((...)) tag { ... }` with the keyword at token
/// `i` (lang-c takes attributes there for a declarator, so `tag { ... }` reads as a function
/// definition): the attributes move after the closing brace of the body, where GNU C gives them
/// the same meaning (`packed`, `aligned`) and lang-c accepts them, or are dropped when no body
/// follows (a reference or forward declaration). Line markers inside them stay where they are
/// (the rewriter drops them), and the removed text leaves its line breaks behind, so lines stay
/// intact.
fn tag_attribute_edits(src: &str, toks: &[Tok], i: usize, edits: &mut Vec<Edit>) {
    let is_attr = |t: Option<&Tok>| matches!(t, Some(Tok::Ident(a, b)) if matches!(&src[*a..*b], "__attribute__" | "__attribute"));
    // The attributes' text, in pieces between line markers.
    let mut pieces: Vec<(usize, usize)> = Vec::new();
    let mut j = i + 1;
    while is_attr(toks.get(j)) {
        let (Some(Tok::Ident(from, _)), Some(close)) =
            (toks.get(j), matching_index(toks, j + 1, b'(', b')'))
        else {
            return;
        };
        let mut start = *from;
        for t in &toks[j..close] {
            if let Tok::Directive(a, b) = *t {
                if !src[start..a].trim().is_empty() {
                    pieces.push((start, a));
                }
                start = b;
            }
        }
        let Tok::Punct(end, _) = toks[close] else {
            return;
        };
        pieces.push((start, end + 1));
        j = skip_directives(toks, close + 1);
    }
    if pieces.is_empty() {
        return;
    }
    if matches!(toks.get(j), Some(Tok::Ident(..))) {
        j = skip_directives(toks, j + 1); // the tag
    }
    if let Some(Tok::Punct(_, b'{')) = toks.get(j) {
        let Some(Tok::Punct(close, _)) =
            matching_index(toks, j, b'{', b'}').and_then(|k| toks.get(k))
        else {
            return;
        };
        let mut moved = String::new();
        for &(a, b) in &pieces {
            moved.push(' ');
            moved.push_str(&src[a..b].replace('\n', " "));
        }
        edits.push(Edit {
            at: close + 1,
            len: 0,
            text: moved.into(),
        });
    }
    for (a, b) in pieces {
        edits.push(Edit {
            at: a,
            len: b - a,
            text: "\n".repeat(src[a..b].matches('\n').count()).into(),
        });
    }
}

/// The index of the first token from `i` that is not a line marker or directive.
fn skip_directives(toks: &[Tok], i: usize) -> usize {
    i + toks.get(i..).map_or(0, |ts| {
        ts.iter()
            .take_while(|t| matches!(t, Tok::Directive(..)))
            .count()
    })
}

/// The index of the token `close` matching the `open` punctuator that is token `at` (line
/// markers before it skipped), if token `at` is one.
fn matching_index(toks: &[Tok], at: usize, open: u8, close: u8) -> Option<usize> {
    let at = skip_directives(toks, at);
    if !matches!(toks.get(at), Some(Tok::Punct(_, c)) if *c == open) {
        return None;
    }
    let mut depth = 0usize;
    for (k, t) in toks.iter().enumerate().skip(at) {
        match *t {
            Tok::Punct(_, c) if c == open => depth += 1,
            Tok::Punct(_, c) if c == close => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// The offset of the `)` matching the `(` that is token `open`, if token `open` is one.
fn matching_paren(toks: &[Tok], open: usize) -> Option<usize> {
    // A line marker may stand between a macro's expansion and its arguments (`alignas(64)`
    // from `<stdalign.h>` is `_Alignas`, a marker line, then `(64)`).
    match toks.get(matching_index(toks, open, b'(', b')')?) {
        Some(Tok::Punct(at, _)) => Some(*at),
        _ => None,
    }
}

/// Handles `asm [qualifiers] goto (template : out : in : clobbers : labels)` starting at token
/// `i`: removes `goto` and the label list. Returns the index of the next token to scan.
fn asm_goto_edits(src: &str, toks: &[Tok], i: usize, edits: &mut Vec<Edit>) -> usize {
    let word = |t: &Tok| match *t {
        Tok::Ident(a, b) => &src[a..b],
        Tok::Punct(..) | Tok::Directive(..) => "",
    };
    let mut j = i + 1;
    let mut goto_at = None;
    while let Some(t) = toks.get(j) {
        match word(t) {
            "volatile" | "__volatile__" | "__volatile" | "inline" | "__inline__" | "__inline" => {}
            "goto" => {
                if let Tok::Ident(a, b) = *t {
                    goto_at = Some((a, b));
                }
            }
            _ => break,
        }
        j += 1;
    }
    let Some((ga, gb)) = goto_at else {
        return i + 1;
    };
    if !matches!(toks.get(j), Some(Tok::Punct(_, b'('))) {
        return i + 1;
    }
    edits.push(Edit {
        at: ga,
        len: gb - ga,
        text: "".into(),
    });
    // Find the 4th top-level ':' and the closing ')'.
    let mut depth = 0usize;
    let mut colons = 0usize;
    let mut fourth = None;
    let mut k = j;
    while let Some(t) = toks.get(k) {
        match *t {
            Tok::Punct(_, b'(') => depth += 1,
            Tok::Punct(p, b')') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    if let Some(f) = fourth {
                        edits.push(Edit {
                            at: f,
                            len: p - f,
                            text: "".into(),
                        });
                    }
                    return k + 1;
                }
            }
            Tok::Punct(p, b':') if depth == 1 => {
                colons += 1;
                if colons == 4 {
                    fourth = Some(p);
                }
            }
            _ => {}
        }
        k += 1;
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_gnu_words_and_maps_offsets_back() {
        let src = "__thread int x; unsigned __int128 y; int z;".to_string();
        let r = Rewriter::new(src.clone());
        assert_eq!(
            r.text,
            "_Thread_local int x; unsigned long long __attribute__((__racedar_int128__)) y; int z;"
        );
        let z_new = r.text.find("z;").unwrap();
        assert_eq!(r.map.to_original(z_new), src.find("z;").unwrap());
        let y_new = r.text.find("y;").unwrap();
        assert_eq!(r.map.to_original(y_new), src.find("y;").unwrap());
    }

    #[test]
    fn leaves_strings_alone_and_drops_directives() {
        let src = "# 1 \"__thread.c\"\nchar *s = \"__thread\"; int __threadx;".to_string();
        let r = Rewriter::new(src.clone());
        assert_eq!(r.text, "\nchar *s = \"__thread\"; int __threadx;");
        let s_new = r.text.find("s =").unwrap();
        assert_eq!(r.map.to_original(s_new), src.find("s =").unwrap());
    }

    #[test]
    fn insertion_keeps_mapping() {
        let src = "int a;\nmain() { return 0; }".to_string();
        let mut r = Rewriter::new(src.clone());
        let pos = r.text.find("main").unwrap();
        r.insert(pos, "int ");
        assert_eq!(r.text, "int a;\nint main() { return 0; }");
        let ret = r.text.find("return").unwrap();
        assert_eq!(r.map.to_original(ret), src.find("return").unwrap());
        assert_eq!(r.map.to_original(pos), pos);
    }

    #[test]
    fn asm_goto_loses_goto_and_labels() {
        let src = "void f(void) { asm volatile goto (\"jmp %l0\" : : \"r\"(1) : \"memory\" : out); out: ; }";
        let r = Rewriter::new(src.to_string());
        assert_eq!(
            r.text,
            "void f(void) { asm volatile  (\"jmp %l0\" : : \"r\"(1) : \"memory\" ); out: ; }"
        );
    }

    #[test]
    fn alignas_from_a_system_macro_becomes_an_attribute_across_a_line_marker() {
        // What `gcc -E` makes of `alignas(64) struct n *head;` with `<stdalign.h>`.
        let src = "struct q {\n# 3 \"a.c\" 3 4\n _Alignas\n# 3 \"a.c\"\n (64) struct n *head; };";
        let out = Rewriter::new(src.to_string()).text;
        assert!(
            out.contains("__racedar_alignas__(sizeof") && out.contains("(64)))) struct n"),
            "{out}"
        );
        assert!(!out.contains("_Alignas"), "{out}");
    }

    #[test]
    fn attributes_after_a_tag_keyword_move_after_the_body() {
        let src = "struct __attribute__((packed)) s { char c; struct __attribute__((aligned(8))) \
                   { int y; } in; } v; struct __attribute__((aligned(8))) s *p;";
        let r = Rewriter::new(src.to_string());
        assert_eq!(
            r.text,
            "struct  s { char c; struct  { int y; } __attribute__((aligned(8))) in; } \
             __attribute__((packed)) v; struct  s *p;"
        );
        let v = r.text.find("v;").unwrap();
        assert_eq!(r.map.to_original(v), src.find("v;").unwrap());
    }

    #[test]
    fn attributes_after_a_tag_keyword_move_across_line_markers() {
        // What `gcc -E` makes of `struct __attribute__((aligned(alignof(long)))) m { ... }`
        // with `<stdalign.h>`.
        let src = "typedef struct __attribute__((aligned(\n# 3 \"a.c\" 3 4\n _Alignof\n# 3 \"a.c\"\n (long)))) m { int x; } t;";
        let r = Rewriter::new(src.to_string());
        assert!(
            r.text.contains("{ int x; } __attribute__((aligned(")
                && r.text.contains("(long)))) t;"),
            "{}",
            r.text
        );
        assert!(
            !r.text[..r.text.find('{').unwrap()].contains("__attribute__"),
            "{}",
            r.text
        );
    }

    #[test]
    fn alignas_becomes_an_attribute() {
        let src = "struct s { _Alignas(__int128) char c; _Alignas(8) int x; };";
        let r = Rewriter::new(src.to_string());
        assert_eq!(
            r.text,
            "struct s { __attribute__((__racedar_alignas__(sizeof(long long \
             __attribute__((__racedar_int128__)))))) char c; \
             __attribute__((__racedar_alignas__(sizeof(8)))) int x; };"
        );
        let x = r.text.find("x;").unwrap();
        assert_eq!(r.map.to_original(x), src.find("x;").unwrap());
    }

    #[test]
    fn local_label_declarations_are_removed() {
        let r = Rewriter::new("void f(void) { __label__ a, b; a: ; }".to_string());
        assert_eq!(r.text, "void f(void) {  a: ; }");
    }
}
