//! Errors of the front end: one line naming `file:line[:col]`, exit code 2.

use std::fmt;

/// What went wrong, for callers that need to tell cases apart (tests, the CLI's exit codes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The input file could not be read (missing, unreadable, a directory).
    Io,
    /// The input is not C source (binary content).
    NotC,
    /// The preprocessor could not be started or failed.
    Preprocess,
    /// The preprocessed text does not parse.
    Syntax,
    /// The program parses but is not valid C as far as lowering is concerned (undeclared
    /// identifier, member of a non-struct, non-constant array size, failed `_Static_assert`).
    Semantic,
    /// An unusable option or option value (a malformed `--cpp` command, say).
    Usage,
}

/// A front-end error with the position it concerns.
///
/// `Display` gives one line, `file:line:col: error: message` (the column is left out when
/// unknown, the line is 1 when the error concerns the file as a whole). [`FrontendError::detail`]
/// holds extra text for the user (the preprocessor's stderr) to be printed before that line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrontendError {
    /// Category.
    pub kind: ErrorKind,
    /// File the error is in, as the user or the preprocessor's line markers name it.
    pub file: String,
    /// Line, from 1.
    pub line: u32,
    /// Column in bytes, from 1; 0 when unknown.
    pub col: u32,
    /// One-line message.
    pub message: String,
    /// Further output to show before the one-line message (e.g. the preprocessor's stderr).
    pub detail: Option<String>,
}

impl FrontendError {
    /// An error about a whole file (reported at line 1).
    pub fn file(kind: ErrorKind, file: impl Into<String>, message: impl Into<String>) -> Self {
        FrontendError {
            kind,
            file: file.into(),
            line: 1,
            col: 0,
            message: message.into(),
            detail: None,
        }
    }
}

impl fmt::Display for FrontendError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // One line whatever the message holds (file names and messages may quote input).
        let one_line = |s: &str| s.replace('\n', "\\n").replace('\r', "\\r");
        let (file, message) = (one_line(&self.file), one_line(&self.message));
        if self.col > 0 {
            write!(f, "{}:{}:{}: error: {}", file, self.line, self.col, message)
        } else {
            write!(f, "{}:{}: error: {}", file, self.line, message)
        }
    }
}

impl std::error::Error for FrontendError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_print_on_one_line() {
        let mut e = FrontendError::file(ErrorKind::Syntax, "a\nb.c", "expected '\n' or '\r'");
        e.col = 3;
        let shown = e.to_string();
        assert_eq!(shown.lines().count(), 1, "{shown}");
        assert!(shown.starts_with("a\\nb.c:1:3: error: "), "{shown}");
    }
}
