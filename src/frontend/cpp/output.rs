//! Printing preprocessed tokens the way `gcc -E` does (gcc's `c-ppoutput.cc`), so that line
//! markers, line numbers and columns downstream are the same as with the system preprocessor.
//!
//! - A token that starts a logical line, or a token preceded by whitespace whose line differs
//!   from the current output line, moves the output to its line: up to 7 missing lines are
//!   newlines, more become a line marker `# LINE "FILE"` (gcc's `maybe_print_line`); the
//!   token is then indented to its column.
//! - Entering and leaving an included file print markers with flags ` 1` and ` 2`; files in
//!   system directories add ` 3 4`.
//! - Within a line, a token is preceded by one space when whitespace preceded it in the
//!   source, or when it follows a macro expansion or argument and would otherwise lex together
//!   with the previous token (gcc's `cpp_avoid_paste`).

use super::lex::{AVOID_PASTE, BUILTIN, Interner, Kind, SPACE, SYS, Tok};

/// The output text being built.
pub struct Output {
    /// The text so far.
    pub buf: String,
    /// Something has been printed on the current output line.
    printed: bool,
    /// The source line the current output line stands for.
    src_line: u32,
    /// The previous token on the line, for paste avoidance.
    prev: Option<(Kind, char)>,
    /// The current file's name (as in markers) and whether it is a system header.
    file: (String, bool),
    /// The last token printed was spelled in a system header (gcc's
    /// `prev_was_system_token`).
    prev_sys: bool,
}

impl Output {
    /// An output with nothing printed yet (for the implicit `stdc-predef.h`, which prints
    /// nothing).
    pub fn empty() -> Output {
        Output {
            buf: String::new(),
            printed: false,
            src_line: 1,
            prev: None,
            file: (String::new(), true),
            prev_sys: false,
        }
    }

    /// An output starting as gcc's does: markers for `main`, the builtins, the command line
    /// and the implicitly included `predef` (gcc's `stdc-predef.h`, when found), then line 1
    /// of `main`.
    pub fn new(main: &str, predef: Option<&str>) -> Output {
        let mut o = Output {
            buf: String::with_capacity(64 * 1024),
            printed: false,
            src_line: 1,
            prev: None,
            file: (main.to_string(), false),
            prev_sys: false,
        };
        let main = quote(main);
        o.buf.push_str(&format!(
            "# 0 \"{main}\"\n# 0 \"<built-in>\"\n# 0 \"<command-line>\"\n"
        ));
        if let Some(p) = predef {
            o.buf.push_str(&format!(
                "# 1 \"{}\" 1 3 4\n# 0 \"<command-line>\" 2\n",
                quote(p)
            ));
        }
        o.buf.push_str(&format!("# 1 \"{main}\"\n"));
        o
    }

    /// Prints a line marker for `line` of the current file with extra `flags` (`" 1"`, `" 2"`
    /// or `""`) and, when `sys`, the system-header flags; ends the current line first.
    fn marker(&mut self, line: u32, flags: &str, sys: bool) {
        if self.printed {
            self.buf.push('\n');
        }
        self.printed = false;
        let sys = if sys { " 3 4" } else { "" };
        self.buf.push_str(&format!(
            "# {line} \"{}\"{flags}{sys}\n",
            quote(&self.file.0)
        ));
        self.src_line = line;
    }

    /// Enters the included file `name` (line 1) from line `from` of the current file.
    pub fn enter(&mut self, from: u32, name: &str, system: bool) {
        let includer_sys = self.file.1;
        self.move_to(from, includer_sys);
        self.file = (name.to_string(), system);
        self.marker(1, " 1", system);
    }

    /// Returns to the file `name` at `line` (the line after the `#include`).
    pub fn leave(&mut self, name: &str, system: bool, line: u32) {
        self.file = (name.to_string(), system);
        self.marker(line, " 2", system);
    }

    /// Moves the output to source line `line` of the current file (gcc's `maybe_print_line`);
    /// a marker, if needed, has the system flags when `sys`. Returns whether a marker was
    /// printed.
    fn move_to(&mut self, line: u32, sys: bool) -> bool {
        if self.printed {
            self.buf.push('\n');
            self.src_line += 1;
            self.printed = false;
        }
        if line >= self.src_line && line < self.src_line + 8 {
            while line > self.src_line {
                self.buf.push('\n');
                self.src_line += 1;
            }
            false
        } else {
            self.marker(line, "", sys);
            true
        }
    }

    /// Starts a new output line for a token at `line`:`col` (gcc's `do_line_change`; `sys`:
    /// the token was spelled in a system header). Returns whether a marker was printed.
    pub fn line_change(&mut self, line: u32, col: u32, sys: bool) -> bool {
        let marker = self.move_to(line, sys);
        self.prev = None;
        self.printed = true;
        for _ in 2..col {
            self.buf.push(' ');
        }
        marker
    }

    /// Prints `#pragma` and its text on a line of its own, standing for source line `line`.
    pub fn pragma(&mut self, line: u32, text: &str) {
        let sys = self.file.1;
        self.move_to(line, sys);
        self.buf.push_str("#pragma ");
        self.buf.push_str(text);
        self.buf.push('\n');
        self.src_line += 1;
        self.printed = false;
        self.prev = None;
    }

    /// Prints one token (gcc's `scan_translation_unit`): a token after whitespace or after a
    /// macro expansion whose line is not the current output line moves the output there; a
    /// token whose system-header status differs from the previous token's starts a new line
    /// (with a marker carrying the new status).
    pub fn token(&mut self, t: &Tok, interner: &Interner) {
        let s = interner.str(t.sym);
        let first = s.chars().next().unwrap_or(' ');
        let sys = t.flags & SYS != 0;
        let mut marker = false;
        let pad = t.flags & AVOID_PASTE != 0;
        if pad || t.flags & SPACE != 0 {
            if t.line != self.src_line {
                marker = self.line_change(t.line, t.col, sys);
                self.buf.push(' ');
            } else if !pad
                || t.flags & SPACE != 0
                || match self.prev {
                    Some(p) => avoid_paste(p, t.kind, first, s),
                    None => t.kind == Kind::Punct && s == "#",
                }
            {
                self.buf.push(' ');
            }
        }
        let mut reset_prev = false;
        if !marker && t.flags & BUILTIN == 0 && self.prev_sys != sys {
            self.line_change(t.line, t.col, sys);
            self.prev_sys = sys;
            reset_prev = true;
        }
        self.buf.push_str(s);
        self.printed = true;
        if reset_prev {
            self.prev = None;
            return;
        }
        // Multi-character punctuators that can still paste get a key of their own; other
        // tokens are known by their first character (only punctuators' and `\\` matter).
        let key = if t.kind == Kind::Punct && s.len() > 1 {
            punct_key(s)
        } else {
            first
        };
        self.prev = Some((t.kind, key));
    }
}

/// A one-character key standing for a multi-character punctuator in [`avoid_paste`]: `->`
/// is `R`, `>>` is `}`, `<<` is `{`, and the rest are "never pastes" (`\0`).
fn punct_key(s: &str) -> char {
    match s {
        "->" => 'R',
        ">>" => '}',
        "<<" => '{',
        "%:" => '#',
        _ => '\0',
    }
}

/// Whether a token of kind `b` starting with `c` (spelling `s`) would lex together with the
/// previous token (kind and key from [`Output::token`]) — gcc's `cpp_avoid_paste`.
fn avoid_paste(prev: (Kind, char), b: Kind, c: char, s: &str) -> bool {
    let (a, k) = prev;
    let c = if b == Kind::Punct { c } else { '\0' };
    match a {
        Kind::Punct => {
            // Everything that can paste with '=' (gcc's CPP_LAST_EQ: = ! > < + - * / % & | ^
            // >> <<).
            if c == '='
                && matches!(
                    k,
                    '=' | '!'
                        | '>'
                        | '<'
                        | '+'
                        | '-'
                        | '*'
                        | '/'
                        | '%'
                        | '&'
                        | '|'
                        | '^'
                        | '}'
                        | '{'
                )
            {
                return true;
            }
            match k {
                '>' => c == '>',
                '<' => matches!(c, '<' | '%' | ':'),
                '+' => c == '+',
                '-' => matches!(c, '-' | '>'),
                '/' => matches!(c, '/' | '*'),
                '%' => matches!(c, ':' | '%'),
                '&' => c == '&',
                '|' => c == '|',
                ':' => matches!(c, ':' | '>'),
                'R' => c == '*',
                '.' => matches!(c, '.' | '%') || b == Kind::Number,
                '#' => matches!(c, '#' | '%'),
                _ => false,
            }
        }
        Kind::Ident => {
            (b == Kind::Number && s.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'))
                || matches!(b, Kind::Ident | Kind::Char | Kind::Str)
        }
        Kind::Number => {
            matches!(b, Kind::Number | Kind::Ident | Kind::Char) || matches!(c, '.' | '+' | '-')
        }
        Kind::Other => k == '\\' && b == Kind::Ident,
        _ => false,
    }
}

/// `s` with `\` and `"` escaped, as in a line marker or `__FILE__`.
pub fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len());
    for ch in s.chars() {
        if ch == '\\' || ch == '"' {
            q.push('\\');
        }
        q.push(ch);
    }
    q
}
