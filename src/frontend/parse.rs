//! Parsing preprocessed C with lang-c (GNU C11 flavour).
//!
//! The text is first rewritten by [`super::compat`]. When lang-c stops at an identifier where it
//! expected a type name, the declaration is an implicit-`int` one (`main() {}`,
//! `static f() {}`, `register i;`): `int ` is inserted and the parse retried, at most
//! [`MAX_IMPLICIT_INT_FIXES`] times. Any other syntax error is reported at its original
//! location.

use super::compat::Rewriter;
use super::error::{ErrorKind, FrontendError};
use super::source_map::{FileTable, SourceMap};
use lang_c::ast::TranslationUnit;
use lang_c::driver::{Config, Flavor};

/// Bound on implicit-`int` insertions per translation unit (each costs one re-parse).
pub const MAX_IMPLICIT_INT_FIXES: usize = 64;

/// Deepest nesting of parentheses and square brackets accepted (clang's default
/// `-fbracket-depth` too; C11 §5.2.4.1 asks for 63). lang-c's parser takes time and memory
/// quadratic in this depth (`f(f(f(...)))`, nested compound literals or statement
/// expressions: minutes and gigabytes at a few thousand levels), so deeper input is rejected
/// with an error instead. Braces (blocks, initialisers) are not limited.
pub const MAX_BRACKET_DEPTH: usize = 256;

/// The byte offset of the first `(` or `[` of `text` nested deeper than
/// [`MAX_BRACKET_DEPTH`], outside string and character literals, comments and directive
/// lines.
fn too_deep(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        match c {
            b'"' | b'\'' => {
                i += 1;
                while i < b.len() && b[i] != c && b[i] != b'\n' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'#' if line_start => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i < b.len() && !(b[i] == b'*' && b.get(i + 1) == Some(&b'/')) {
                    i += 1;
                }
                i += 1;
            }
            b'(' | b'[' => {
                depth += 1;
                if depth > MAX_BRACKET_DEPTH {
                    return Some(i);
                }
            }
            b')' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if c == b'\n' {
            line_start = true;
        } else if !c.is_ascii_whitespace() {
            line_start = false;
        }
        i += 1;
    }
    None
}

/// A parsed translation unit with what is needed to map its spans back to source.
pub struct ParsedUnit {
    /// The AST; spans are byte offsets into `text`.
    pub unit: TranslationUnit,
    /// The text that was parsed (preprocessed and rewritten).
    pub text: String,
    /// Maps spans to original locations.
    pub source_map: SourceMap,
}

/// C keywords, which are never the identifier of an implicit-`int` declaration.
pub(super) fn is_keyword(word: &str) -> bool {
    lang_c_keywords().contains(&word)
}

fn lang_c_keywords() -> &'static [&'static str] {
    &[
        "auto",
        "break",
        "case",
        "char",
        "const",
        "continue",
        "default",
        "do",
        "double",
        "else",
        "enum",
        "extern",
        "float",
        "for",
        "goto",
        "if",
        "inline",
        "int",
        "long",
        "register",
        "restrict",
        "return",
        "short",
        "signed",
        "sizeof",
        "static",
        "struct",
        "switch",
        "typedef",
        "union",
        "unsigned",
        "void",
        "volatile",
        "while",
        "_Alignas",
        "_Alignof",
        "_Atomic",
        "_Bool",
        "_Complex",
        "_Generic",
        "_Noreturn",
        "_Static_assert",
        "_Thread_local",
        "__attribute__",
        "__attribute",
        "__extension__",
        "__asm__",
        "__asm",
        "asm",
        "__inline",
        "__inline__",
        "__typeof__",
        "__typeof",
        "typeof",
        "__const",
        "__restrict",
        "__restrict__",
        "__volatile__",
        "__signed__",
    ]
}

/// The identifier starting at `pos`, if any.
fn ident_at(text: &str, pos: usize) -> Option<&str> {
    let rest = text.get(pos..)?;
    let len = rest
        .bytes()
        .position(|b| !(b.is_ascii_alphanumeric() || b == b'_' || b == b'$'))
        .unwrap_or(rest.len());
    let word = &rest[..len];
    let first = word.bytes().next()?;
    (first.is_ascii_alphabetic() || first == b'_').then_some(word)
}

/// Parses the preprocessed text of the file `path`.
///
/// Errors: [`ErrorKind::Syntax`] with the original file, line and column of the first token
/// lang-c could not parse (after implicit-`int` recovery).
pub fn parse(
    path: &str,
    preprocessed: String,
    files: &mut FileTable,
) -> Result<ParsedUnit, FrontendError> {
    let main_file = files.intern(path);
    let mut rw = Rewriter::new(preprocessed);
    let config = Config {
        cpp_command: String::new(),
        cpp_options: Vec::new(),
        flavor: Flavor::GnuC11,
    };
    if let Some(offset) = too_deep(&rw.text) {
        let source_map = SourceMap::new(rw.original(), main_file, files, rw.map.clone());
        let loc = source_map.loc(offset);
        return Err(FrontendError {
            kind: ErrorKind::Syntax,
            file: files.names[loc.file.0 as usize].clone(),
            line: loc.line,
            col: loc.col,
            message: format!(
                "parentheses and brackets nested deeper than {MAX_BRACKET_DEPTH} levels are not \
                 supported"
            ),
            detail: None,
        });
    }
    let mut fixes = 0;
    loop {
        // lang-c takes the text by value; keep ours for the retry.
        match lang_c::driver::parse_preprocessed(&config, rw.text.clone()) {
            Ok(parse) => {
                let source_map = SourceMap::new(rw.original(), main_file, files, rw.map.clone());
                return Ok(ParsedUnit {
                    unit: parse.unit,
                    text: parse.source,
                    source_map,
                });
            }
            Err(e) => {
                let fixable = e.expected.contains("<typedef_name>")
                    && ident_at(&rw.text, e.offset).is_some_and(|w| !is_keyword(w));
                if fixable && fixes < MAX_IMPLICIT_INT_FIXES {
                    fixes += 1;
                    tracing::debug!(offset = e.offset, "inserting implicit int");
                    rw.insert(e.offset, "int ");
                    continue;
                }
                let source_map = SourceMap::new(rw.original(), main_file, files, rw.map.clone());
                let loc = source_map.loc(e.offset);
                let found = describe_token(&rw.text, e.offset);
                let mut expected: Vec<&str> = e.expected.iter().copied().collect();
                expected.sort_unstable();
                let expected: Vec<String> = expected
                    .iter()
                    .filter(|s| !s.is_empty())
                    .map(|s| format!("'{}'", s.escape_default()))
                    .collect();
                let message = if expected.is_empty() || expected.len() > 8 {
                    format!("syntax error at {found}")
                } else {
                    format!(
                        "syntax error at {found}, expected {}",
                        expected.join(" or ")
                    )
                };
                return Err(FrontendError {
                    kind: ErrorKind::Syntax,
                    file: files.names[loc.file.0 as usize].clone(),
                    line: loc.line,
                    col: loc.col,
                    message,
                    detail: None,
                });
            }
        }
    }
}

/// A short description of the token at `pos` for error messages.
fn describe_token(text: &str, pos: usize) -> String {
    let Some(rest) = text.get(pos..) else {
        return "end of file".to_string();
    };
    let tok: String = match ident_at(text, pos) {
        Some(w) => w.to_string(),
        None => rest.chars().take(1).collect(),
    };
    if tok.is_empty() || tok.trim().is_empty() {
        "end of file".to_string()
    } else {
        format!("'{}'", tok.escape_default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn implicit_int_is_recovered() {
        let mut files = FileTable::default();
        let p = parse(
            "t.c",
            "main() { register i; return 0; }\n".into(),
            &mut files,
        );
        assert!(p.is_ok());
    }

    #[test]
    fn deep_nesting_is_an_error_at_its_line() {
        let mut files = FileTable::default();
        let deep = format!(
            "# 3 \"t.c\"\nchar *s = \"((((\";\nint x = {}1{};\n",
            "f(".repeat(MAX_BRACKET_DEPTH + 1),
            ")".repeat(MAX_BRACKET_DEPTH + 1)
        );
        let err = parse("t.c", deep, &mut files).err().unwrap();
        assert_eq!(err.kind, ErrorKind::Syntax);
        assert_eq!((err.file.as_str(), err.line), ("t.c", 4));
        assert!(err.message.contains("nested deeper"), "{}", err.message);
        let ok = format!(
            "int f(int);\nint x = {}1{};\n",
            "f(".repeat(MAX_BRACKET_DEPTH),
            ")".repeat(MAX_BRACKET_DEPTH)
        );
        assert!(parse("t.c", ok, &mut files).is_ok());
    }

    #[test]
    fn syntax_errors_name_the_original_line() {
        let mut files = FileTable::default();
        let text = "# 1 \"t.c\"\nint x;\n# 7 \"t.c\"\nint y = ;\n".to_string();
        let err = parse("t.c", text, &mut files).err().unwrap();
        assert_eq!(err.kind, ErrorKind::Syntax);
        assert_eq!((err.file.as_str(), err.line, err.col), ("t.c", 7, 9));
        assert!(
            err.message.contains("syntax error at ';'"),
            "{}",
            err.message
        );
    }
}
