//! Preprocessing tokens of one source file (C11 §5.1.1.2 phases 1–3, §6.4).
//!
//! A file is lexed once, completely, into a vector of [`Tok`]s: backslash-newline splices are
//! removed first (phase 2), comments become whitespace (phase 3), and every token records its
//! physical line and byte column (from 1) and whether whitespace precedes it ([`SPACE`]) or it
//! begins a logical line ([`BOL`]). A `<...>` after `#include`, `#include_next` or `#import` is
//! one [`Kind::HeaderName`] token, as §6.4.7 asks. Spellings are interned ([`Interner`]).
//!
//! Lexing follows gcc's rules where C leaves room: `$` and bytes ≥ 0x80 are identifier
//! characters, an unterminated quote makes the rest of its line one [`Kind::Other`] token, and
//! digraphs are punctuators. Anything gcc would reject (an unterminated comment, a raw string)
//! is a [`super::Bail`], so the system preprocessor reports it.

use super::Bail;
use rustc_hash::FxHashMap;
use std::borrow::Cow;
use std::rc::Rc;

/// An interned spelling.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Sym(pub u32);

/// Interned spellings of one preprocessor run (one allocation per distinct spelling).
pub struct Interner {
    map: FxHashMap<Rc<str>, Sym>,
    names: Vec<Rc<str>>,
    /// Symbols of one-byte ASCII spellings (most punctuators), found without hashing.
    single: [Option<Sym>; 128],
}

impl Default for Interner {
    fn default() -> Self {
        let mut map = FxHashMap::default();
        // A unit with <stdio.h> and <pthread.h> has about 5 000 distinct spellings.
        map.reserve(4096);
        Interner {
            map,
            names: Vec::with_capacity(4096),
            single: [None; 128],
        }
    }
}

impl Interner {
    /// The symbol of `s`, interning it on first use.
    pub fn intern(&mut self, s: &str) -> Sym {
        if let [b] = s.as_bytes()
            && let Some(slot) = self.single.get(usize::from(*b))
        {
            if let Some(sym) = *slot {
                return sym;
            }
            let sym = self.insert(s);
            self.single[usize::from(*b)] = Some(sym);
            return sym;
        }
        if let Some(&sym) = self.map.get(s) {
            return sym;
        }
        self.insert(s)
    }

    fn insert(&mut self, s: &str) -> Sym {
        let sym = Sym(self.names.len() as u32);
        let name: Rc<str> = Rc::from(s);
        self.names.push(name.clone());
        self.map.insert(name, sym);
        sym
    }

    /// The spelling of `sym`.
    pub fn str(&self, sym: Sym) -> &str {
        &self.names[sym.0 as usize]
    }
}

/// The kind of a preprocessing token (C11 §6.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// An identifier (keywords included).
    Ident,
    /// A preprocessing number.
    Number,
    /// A character constant, prefix included.
    Char,
    /// A string literal, prefix included.
    Str,
    /// A punctuator.
    Punct,
    /// A `<...>` header name (only after `#include`).
    HeaderName,
    /// Any other character, or an unterminated quote and the rest of its line.
    Other,
}

/// Whitespace (or a comment) precedes the token on its logical line.
pub const SPACE: u8 = 1;
/// The token is the first of its logical line.
pub const BOL: u8 = 2;
/// The identifier named a macro that was being expanded: never expand it (C11 §6.10.3.4p2).
pub const NO_EXPAND: u8 = 4;
/// The token follows a macro expansion or an argument: the output separates it from the
/// previous token if the two would lex as one (gcc's `avoid_paste`).
pub const AVOID_PASTE: u8 = 8;
/// The token was spelled in a system header (for a macro's tokens: where the macro was
/// defined; gcc's `in_system_include_at`).
pub const SYS: u8 = 16;
/// The token was spelled by the compiler (a predefined macro's replacement).
pub const BUILTIN: u8 = 32;

/// A preprocessing token.
#[derive(Clone, Copy, Debug)]
pub struct Tok {
    /// The spelling.
    pub sym: Sym,
    /// The kind.
    pub kind: Kind,
    /// [`SPACE`], [`BOL`], [`NO_EXPAND`], [`AVOID_PASTE`], [`SYS`] and [`BUILTIN`] bits.
    pub flags: u8,
    /// Physical line (from 1) in its file; for tokens of a macro body, the line of the
    /// outermost invocation.
    pub line: u32,
    /// Byte column (from 1) in its physical line.
    pub col: u32,
}

impl Tok {
    /// Whether the token is the punctuator `p`.
    pub fn is(&self, interner: &Interner, p: &str) -> bool {
        self.kind == Kind::Punct && interner.str(self.sym) == p
    }
}

/// The length of the punctuator (C11 §6.4.6, digraphs included) at the start of `s`, longest
/// match; 0 when `s` does not start with one.
fn punct_len(s: &[u8]) -> usize {
    let at = |k: usize| s.get(k).copied().unwrap_or(0);
    let (n, n2) = (at(1), at(2));
    match at(0) {
        b'%' if n == b':' && n2 == b'%' && at(3) == b':' => 4,
        b'%' if matches!(n, b'=' | b'>' | b':') => 2,
        b'.' if n == b'.' && n2 == b'.' => 3,
        b'<' if n == b'<' && n2 == b'=' => 3,
        b'<' if matches!(n, b'<' | b'=' | b':' | b'%') => 2,
        b'>' if n == b'>' && n2 == b'=' => 3,
        b'>' if matches!(n, b'>' | b'=') => 2,
        b'-' if matches!(n, b'>' | b'-' | b'=') => 2,
        b'+' if matches!(n, b'+' | b'=') => 2,
        b'&' if matches!(n, b'&' | b'=') => 2,
        b'|' if matches!(n, b'|' | b'=') => 2,
        b'=' | b'!' | b'*' | b'/' | b'^' if n == b'=' => 2,
        b'#' if n == b'#' => 2,
        b':' if n == b'>' => 2,
        b'%' | b'.' | b'<' | b'>' | b'-' | b'+' | b'&' | b'|' | b'=' | b'!' | b'*' | b'/'
        | b'^' | b'#' | b':' | b'[' | b']' | b'(' | b')' | b'{' | b'}' | b'~' | b'?' | b';'
        | b',' => 1,
        _ => 0,
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80
}

fn is_ident_cont(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

/// The text of a file with backslash-newlines removed, and where they were.
struct Spliced<'a> {
    /// The text (the file itself when it has no splice).
    text: Cow<'a, [u8]>,
    /// Offsets in `text` where a splice was removed, ascending.
    splices: Vec<usize>,
}

fn splice(src: &[u8]) -> Spliced<'_> {
    let mut text: Vec<u8> = Vec::new();
    let mut splices = Vec::new();
    let mut copied = 0;
    for bs in memchr::memchr_iter(b'\\', src) {
        if bs < copied {
            continue;
        }
        // gcc allows whitespace between the backslash and the newline (with a warning).
        let mut j = bs + 1;
        while j < src.len() && matches!(src[j], b' ' | b'\t' | b'\r') {
            j += 1;
        }
        if j < src.len() && src[j] == b'\n' {
            if text.is_empty() {
                text.reserve(src.len());
            }
            text.extend_from_slice(&src[copied..bs]);
            splices.push(text.len());
            copied = j + 1;
        }
    }
    if splices.is_empty() {
        return Spliced {
            text: Cow::Borrowed(src),
            splices,
        };
    }
    text.extend_from_slice(&src[copied..]);
    Spliced {
        text: Cow::Owned(text),
        splices,
    }
}

/// Lexes a whole file.
///
/// Errors: [`Bail`] for an unterminated comment or a raw string literal.
pub fn lex(src: &[u8], interner: &mut Interner) -> Result<Vec<Tok>, Bail> {
    let Spliced { text, splices } = splice(src);
    let s = &text[..];
    // Token boundaries never split a UTF-8 sequence (bytes >= 0x80 only occur inside
    // identifiers, literals and comments), so spellings are slices of `src_str`.
    let src_str =
        std::str::from_utf8(s).map_err(|_| Bail::Unsupported("source text is not UTF-8"))?;
    let mut toks = Vec::with_capacity(s.len() / 8);
    let mut i = 0;
    let mut line: u32 = 1;
    let mut line_start = 0usize;
    let mut next_splice = 0usize;
    let mut flags = BOL;
    // State for header names: 0 = nothing, 1 = `#` at the start of a line, 2 = `# include`.
    let mut hdr_state = 0u8;
    let advance_splices = |pos: usize, line: &mut u32, line_start: &mut usize, ns: &mut usize| {
        while *ns < splices.len() && splices[*ns] <= pos {
            *line += 1;
            *line_start = splices[*ns];
            *ns += 1;
        }
    };
    while i < s.len() {
        let b = s[i];
        match b {
            b'\n' => {
                i += 1;
                advance_splices(i, &mut line, &mut line_start, &mut next_splice);
                line += 1;
                line_start = i;
                flags = BOL;
                hdr_state = 0;
                continue;
            }
            b' ' | b'\t' | b'\r' | 0x0b | 0x0c => {
                i += 1;
                flags |= SPACE;
                continue;
            }
            b'/' if s.get(i + 1) == Some(&b'*') => {
                let end = memchr::memmem::find(&s[i + 2..], b"*/")
                    .ok_or(Bail::Unsupported("unterminated comment"))?;
                let stop = i + 2 + end + 2;
                // Newlines inside the comment still count lines.
                for k in memchr::memchr_iter(b'\n', &s[i..stop]) {
                    advance_splices(i + k, &mut line, &mut line_start, &mut next_splice);
                    line += 1;
                    line_start = i + k + 1;
                }
                i = stop;
                flags |= SPACE;
                continue;
            }
            b'/' if s.get(i + 1) == Some(&b'/') => {
                i = memchr::memchr(b'\n', &s[i..]).map_or(s.len(), |k| i + k);
                flags |= SPACE;
                continue;
            }
            _ => {}
        }
        advance_splices(i, &mut line, &mut line_start, &mut next_splice);
        let start = i;
        let col = (start - line_start + 1) as u32;
        let kind;
        if hdr_state == 2 && b == b'<' {
            match s[i..].iter().position(|&c| c == b'>' || c == b'\n') {
                Some(k) if s[i + k] == b'>' => {
                    i += k + 1;
                    kind = Kind::HeaderName;
                }
                _ => {
                    i += 1;
                    kind = Kind::Punct;
                }
            }
        } else if is_ident_start(b) {
            while i < s.len() && is_ident_cont(s[i]) {
                i += 1;
            }
            let word = &s[start..i];
            let prefix = matches!(word, b"L" | b"u" | b"U" | b"u8");
            let raw = matches!(word, b"R" | b"LR" | b"uR" | b"UR" | b"u8R");
            match s.get(i) {
                Some(b'"') if raw => return Err(Bail::Unsupported("raw string literal")),
                Some(&q @ (b'"' | b'\'')) if prefix && !(q == b'\'' && word == b"u8") => {
                    kind = lex_quoted(s, &mut i, q);
                }
                _ => kind = Kind::Ident,
            }
        } else if b.is_ascii_digit() || (b == b'.' && s.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            i += 1;
            while i < s.len() {
                let c = s[i];
                let sign =
                    matches!(c, b'+' | b'-') && matches!(s[i - 1], b'e' | b'E' | b'p' | b'P');
                if sign || is_ident_cont(c) || c == b'.' {
                    i += 1;
                } else {
                    break;
                }
            }
            kind = Kind::Number;
        } else if b == b'"' || b == b'\'' {
            kind = lex_quoted(s, &mut i, b);
        } else if let n @ 1.. = punct_len(&s[i..]) {
            i += n;
            kind = Kind::Punct;
        } else {
            // One character (a whole UTF-8 sequence would have been an identifier).
            i += 1;
            kind = Kind::Other;
        }
        let spelling = src_str
            .get(start..i)
            .ok_or(Bail::Unsupported("token splits a character"))?;
        let sym = interner.intern(spelling);
        hdr_state = match (hdr_state, kind) {
            (0, Kind::Punct) if flags & BOL != 0 && matches!(spelling, "#" | "%:") => 1,
            (1, Kind::Ident) if matches!(spelling, "include" | "include_next" | "import") => 2,
            _ => 3,
        };
        toks.push(Tok {
            sym,
            kind,
            flags,
            line,
            col,
        });
        flags = 0;
    }
    Ok(toks)
}

/// Lexes a string or character literal from its opening quote `q` at or after `*i` (a prefix
/// may precede it); an unterminated one takes the rest of the line as [`Kind::Other`].
fn lex_quoted(s: &[u8], i: &mut usize, q: u8) -> Kind {
    let mut j = *i + 1;
    while j < s.len() {
        match s[j] {
            b'\\' if j + 1 < s.len() && s[j + 1] != b'\n' => j += 2,
            b'\n' => break,
            c if c == q => {
                *i = j + 1;
                return if q == b'"' { Kind::Str } else { Kind::Char };
            }
            _ => j += 1,
        }
    }
    *i = j;
    Kind::Other
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spell(src: &str) -> Vec<(String, u32, u32, u8)> {
        let mut it = Interner::default();
        let toks = lex(src.as_bytes(), &mut it).expect("lexes");
        toks.iter()
            .map(|t| (it.str(t.sym).to_string(), t.line, t.col, t.flags))
            .collect()
    }

    #[test]
    fn tokens_lines_columns_and_flags() {
        let t = spell("int x = a+++b; /* c\n */ y\n#include <a b.h>\nL'x' 1.5e+3 .5 u8\"s\"");
        let names: Vec<&str> = t.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            names,
            [
                "int", "x", "=", "a", "++", "+", "b", ";", "y", "#", "include", "<a b.h>", "L'x'",
                "1.5e+3", ".5", "u8\"s\""
            ]
        );
        assert_eq!(t[0], ("int".to_string(), 1, 1, BOL));
        assert_eq!(t[8], ("y".to_string(), 2, 5, SPACE));
        assert_eq!(t[9].1, 3);
        assert_eq!(t[12].1, 4);
    }

    #[test]
    fn punctuators_take_the_longest_match() {
        let t = spell("a<<=b>>c...d%:%:e->f<:g");
        let p: Vec<&str> = t.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(
            p,
            [
                "a", "<<=", "b", ">>", "c", "...", "d", "%:%:", "e", "->", "f", "<:", "g"
            ]
        );
        assert_eq!(spell("..")[0].0, ".");
    }

    #[test]
    fn splices_allow_trailing_whitespace_and_keep_other_backslashes() {
        let t = spell("ab\\ \t\ncd \"x\\\\\" '\\n'\ne");
        let p: Vec<&str> = t.iter().map(|x| x.0.as_str()).collect();
        assert_eq!(p, ["abcd", "\"x\\\\\"", "'\\n'", "e"]);
        assert_eq!(t[3].1, 3, "the splice counts a line");
    }

    #[test]
    fn splices_keep_physical_lines() {
        let t = spell("#define A \\\n  1\nB");
        assert_eq!(t[3], ("1".to_string(), 2, 3, SPACE));
        assert_eq!(t[4], ("B".to_string(), 3, 1, BOL));
    }

    #[test]
    fn unterminated_quote_is_other_and_comment_bails() {
        let t = spell("don't x\ny");
        assert_eq!(t[1].0, "'t x");
        assert!(lex(b"/* open", &mut Interner::default()).is_err());
    }
}
