//! racedar's own C preprocessor (C11 §6.10 with the GNU extensions glibc's headers use), run
//! in-process so that a small program costs no compiler start-up (`cc1 -E` needs about 8 ms
//! before it reads a byte; issue 7).
//!
//! It is a drop-in for the system preprocessor, not a replacement of it: the compiler's own
//! configuration — predefined macros and include directories — comes from the system
//! preprocessor once ([`config`]), the output imitates `gcc -E`'s text (line markers, line
//! numbers, columns; `output`) so everything downstream is unchanged, and anything this
//! preprocessor is not sure to do exactly as gcc does is a [`Bail`]: the caller then runs the
//! system preprocessor, which also reports every error with its own message. What is handled:
//! object- and function-like macros with gcc's expansion algorithm (a macro is disabled while
//! its expansion is read; arguments are expanded first; `#`, `##`, variadic macros, GNU named
//! variadics and `, ## __VA_ARGS__`), every conditional directive, `#include` and
//! `#include_next` with gcc's search rules, include guards and `#pragma once`,
//! `#pragma push_macro`/`pop_macro`, `defined`, `__has_include`, the `__has_attribute`
//! family (answers learned from the compiler), and the builtin macros `__FILE__`, `__LINE__`,
//! `__COUNTER__`, `__INCLUDE_LEVEL__`, `__BASE_FILE__` and `__FILE_NAME__`. Bails: `_Pragma`,
//! `__DATE__`/`__TIME__`/`__TIMESTAMP__`, `__VA_OPT__`, `#line`, `#assert`, raw strings,
//! directives inside macro arguments, and every error.

pub mod config;
mod expand;
mod expr;
mod lex;
mod output;

use lex::{BOL, Interner, Kind, Sym, Tok};
use rustc_hash::{FxHashMap, FxHashSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

pub use config::Config;

/// Why the in-process preprocessor gave up on a unit (the system preprocessor then runs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Bail {
    /// A construct this preprocessor does not handle, or an error in the program.
    Unsupported(&'static str),
    /// `__has_attribute`-style queries whose answers are not known yet (spelled
    /// `__has_attribute(x)`); [`config::learn`] asks the compiler.
    Unknown(Vec<String>),
}

/// A builtin macro.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Builtin {
    File,
    BaseFile,
    FileName,
    Line,
    Counter,
    IncludeLevel,
    HasInclude,
    HasIncludeNext,
    /// `__has_attribute`, `__has_cpp_attribute`, `__has_c_attribute`, `__has_builtin`.
    Query,
    /// `_Pragma`, `__DATE__`, `__TIME__`, `__TIMESTAMP__`, `__VA_OPT__`.
    Unsupported,
}

/// A macro definition.
#[derive(Clone, Debug)]
struct Macro {
    /// Parameter names of a function-like macro (`__VA_ARGS__` for `...`); `None` for an
    /// object-like one.
    params: Option<Vec<Sym>>,
    /// The last parameter is variadic.
    variadic: bool,
    /// The replacement list.
    body: Vec<Tok>,
    /// For builtins, which one.
    builtin: Option<Builtin>,
}

/// A conditional group being read.
#[derive(Clone, Copy, Debug)]
struct Cond {
    /// The current group is skipped.
    skipping: bool,
    /// Some group of this conditional was taken (later `#elif`/`#else` groups are skipped).
    taken: bool,
    /// The whole conditional lies in a skipped group.
    outer_skipping: bool,
    /// `#else` was seen.
    seen_else: bool,
}

/// A lexed file and its include guard, if any (gcc's multiple-include optimisation).
struct SourceFile {
    toks: Vec<Tok>,
    guard: Option<Sym>,
}

/// A file being read.
struct Frame {
    file: Rc<SourceFile>,
    pos: usize,
    /// The name used in markers and `__FILE__`.
    name: Rc<str>,
    /// Index in the search chain (quote dirs, then bracket dirs) where the file was found;
    /// `None` for the main file and files found next to their includer.
    found_in: Option<usize>,
    /// Found next to its includer (`#include_next` then starts at the chain's head).
    from_current_dir: bool,
    system: bool,
    conds: Vec<Cond>,
    /// The line to return to in the includer (the line after the `#include`).
    return_line: u32,
}

/// The symbols the preprocessor looks for.
struct Kw {
    hash: Sym,
    hash_digraph: Sym,
    lparen: Sym,
    rparen: Sym,
    comma: Sym,
    hashhash: Sym,
    hashhash_digraph: Sym,
    ellipsis: Sym,
    defined: Sym,
    va_args: Sym,
    one: Sym,
    zero: Sym,
}

impl Kw {
    /// Whether `t` is `#` (or its digraph `%:`).
    fn is_hash(&self, t: &Tok) -> bool {
        t.kind == Kind::Punct && (t.sym == self.hash || t.sym == self.hash_digraph)
    }
}

/// A context of macro expansion: tokens to read, and the macro to re-enable when done.
struct Context {
    toks: Vec<Tok>,
    pos: usize,
    macro_name: Option<Sym>,
}

/// Preprocesses the C file `path` with `config`, naming it `name` in line markers. Relative
/// paths (the file, include directories) are relative to `cwd` when given, as for the system
/// preprocessor run in that directory.
///
/// Returns the preprocessed text with line markers, as `gcc -E` prints it.
///
/// Errors: [`Bail`] for anything not handled here (the caller then runs the system
/// preprocessor).
pub fn preprocess(
    config: &Config,
    path: &Path,
    name: &str,
    cwd: Option<&Path>,
) -> Result<String, Bail> {
    let file = match cwd {
        Some(d) if path.is_relative() => d.join(path),
        _ => path.to_path_buf(),
    };
    let bytes =
        std::fs::read(file).map_err(|_| Bail::Unsupported("cannot read the source file"))?;
    preprocess_source(config, &bytes, name, cwd)
}

/// [`preprocess`] for a main file given as `source` (its includes are still read from the
/// file system; quoted ones relative to the directory part of `name`).
///
/// Errors: as [`preprocess`].
pub fn preprocess_source(
    config: &Config,
    source: &[u8],
    name: &str,
    cwd: Option<&Path>,
) -> Result<String, Bail> {
    let mut pp = Pp::new(config, cwd, name)?;
    // gcc includes `stdc-predef.h` implicitly before the main file; its macros then count as
    // spelled in a system header.
    let predef = pp.find_include("stdc-predef.h", true, false);
    if let Some((path, found_in, _, system)) = &predef {
        let file = pp.load_file(path, *system)?;
        pp.frames.push(Frame {
            file,
            pos: 0,
            name: Rc::from(path.as_str()),
            found_in: *found_in,
            from_current_dir: false,
            system: *system,
            conds: Vec::new(),
            return_line: 0,
        });
        pp.run()?;
        if !pp.out.buf.is_empty() {
            return Err(Bail::Unsupported("stdc-predef.h has tokens"));
        }
    }
    pp.out = output::Output::new(name, predef.as_ref().map(|p| p.0.as_str()));
    let toks = lex::lex(source, &mut pp.interner)?;
    let file = Rc::new(SourceFile { toks, guard: None });
    pp.frames.push(Frame {
        file,
        pos: 0,
        name: Rc::from(name),
        found_in: None,
        from_current_dir: false,
        system: false,
        conds: Vec::new(),
        return_line: 0,
    });
    let r = pp.run();
    if !pp.unknown.is_empty() {
        let mut q: Vec<String> = pp.unknown.into_iter().collect();
        q.sort();
        return Err(Bail::Unknown(q));
    }
    r?;
    Ok(pp.out.buf)
}

/// The directory part of `path` with its trailing `/` (`""` when there is none): the prefix
/// of quoted includes found next to the file.
fn dir_prefix(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..=i])
}

/// Nesting limit for `#include` (gcc's is 200).
const MAX_INCLUDE_DEPTH: usize = 200;
/// Limit on files entered per unit (guarded or `#pragma once` re-inclusions are not entered):
/// a header including itself twice would otherwise grow exponentially up to the depth limit.
const MAX_INCLUDES: u32 = 20_000;
/// Limit on macro expansion steps per unit (a runaway expansion is handed to the system
/// preprocessor, which has its own limits).
const MAX_EXPANSIONS: u64 = 5_000_000;

/// The preprocessor's state for one unit.
struct Pp<'c> {
    config: &'c Config,
    cwd: Option<PathBuf>,
    interner: Interner,
    kw: Kw,
    macros: FxHashMap<Sym, Rc<Macro>>,
    /// Macros whose expansion is being read.
    disabled: FxHashSet<Sym>,
    /// `#pragma push_macro` stacks.
    pushed: FxHashMap<Sym, Vec<Option<Rc<Macro>>>>,
    files: FxHashMap<String, Rc<SourceFile>>,
    /// Whether a candidate include path names a file (each asked of the file system once).
    exists: std::cell::RefCell<FxHashMap<String, bool>>,
    once: FxHashSet<String>,
    frames: Vec<Frame>,
    contexts: Vec<Context>,
    /// Stack of context depths at which reading stops (argument pre-expansion, directives).
    floors: Vec<usize>,
    /// Inside the arguments of a function-like macro (or looking for its `(`).
    collecting: u32,
    /// Looking for the `(` of a function-like macro invocation.
    peeking: bool,
    /// Expanding an `#if` line (`defined` and `__has_include` are operators).
    in_if: bool,
    /// A macro expansion just ended: the next token avoids pasting with the previous one.
    after_expansion: bool,
    /// Spaces carried over an empty expansion to the next token.
    pending_space: bool,
    counter: u64,
    expansions: u64,
    /// Files entered so far.
    includes: u32,
    /// Queries with no known answer.
    unknown: FxHashSet<String>,
    main_name: Rc<str>,
    out: output::Output,
}

/// Where a token was read from (to un-read it).
#[derive(Clone, Copy)]
enum Src {
    Context,
    File,
}

impl<'c> Pp<'c> {
    fn new(config: &'c Config, cwd: Option<&Path>, name: &str) -> Result<Self, Bail> {
        let mut interner = Interner::default();
        let mut i = |s: &str| interner.intern(s);
        let kw = Kw {
            hash: i("#"),
            hash_digraph: i("%:"),
            lparen: i("("),
            rparen: i(")"),
            comma: i(","),
            hashhash: i("##"),
            hashhash_digraph: i("%:%:"),
            ellipsis: i("..."),
            defined: i("defined"),
            va_args: i("__VA_ARGS__"),
            one: i("1"),
            zero: i("0"),
        };
        let mut pp = Pp {
            config,
            cwd: cwd.map(Path::to_path_buf),
            interner,
            kw,
            macros: FxHashMap::default(),
            disabled: FxHashSet::default(),
            pushed: FxHashMap::default(),
            files: FxHashMap::default(),
            exists: std::cell::RefCell::default(),
            once: FxHashSet::default(),
            frames: Vec::new(),
            contexts: Vec::new(),
            floors: Vec::new(),
            collecting: 0,
            peeking: false,
            in_if: false,
            after_expansion: false,
            pending_space: false,
            counter: 0,
            expansions: 0,
            includes: 0,
            unknown: FxHashSet::default(),
            main_name: Rc::from(name),
            out: output::Output::empty(),
        };
        pp.define_builtins()?;
        Ok(pp)
    }

    /// `path` for the file system: relative to `cwd` when given.
    fn resolve_fs(&self, path: &Path) -> PathBuf {
        match &self.cwd {
            Some(d) if path.is_relative() => d.join(path),
            _ => path.to_path_buf(),
        }
    }

    /// Defines the builtins and the compiler's predefined macros (`config.macros`, the
    /// `#define` lines of `cc -dM -E`).
    fn define_builtins(&mut self) -> Result<(), Bail> {
        let builtins = [
            ("__FILE__", Builtin::File),
            ("__BASE_FILE__", Builtin::BaseFile),
            ("__FILE_NAME__", Builtin::FileName),
            ("__LINE__", Builtin::Line),
            ("__COUNTER__", Builtin::Counter),
            ("__INCLUDE_LEVEL__", Builtin::IncludeLevel),
            ("__has_include", Builtin::HasInclude),
            ("__has_include_next", Builtin::HasIncludeNext),
            ("__has_attribute", Builtin::Query),
            ("__has_cpp_attribute", Builtin::Query),
            ("__has_c_attribute", Builtin::Query),
            ("__has_builtin", Builtin::Query),
            ("_Pragma", Builtin::Unsupported),
            ("__DATE__", Builtin::Unsupported),
            ("__TIME__", Builtin::Unsupported),
            ("__TIMESTAMP__", Builtin::Unsupported),
            ("__VA_OPT__", Builtin::Unsupported),
        ];
        for (name, b) in builtins {
            let sym = self.interner.intern(name);
            self.macros.insert(
                sym,
                Rc::new(Macro {
                    params: None,
                    variadic: false,
                    body: Vec::new(),
                    builtin: Some(b),
                }),
            );
        }
        let mut toks = lex::lex(self.config.macros.as_bytes(), &mut self.interner)?;
        for t in &mut toks {
            t.flags |= lex::BUILTIN;
        }
        let mut start = 0;
        while start < toks.len() {
            let end = next_line(&toks, start);
            let line = &toks[start..end];
            if line.len() >= 3 && self.interner.str(line[1].sym) == "define" {
                self.define(&line[2..])?;
            }
            start = end;
        }
        // Macros from the command line (`-D`) are the user's, not the compiler's.
        for name in &self.config.command_line_macros {
            let sym = self.interner.intern(name);
            if let Some(m) = self.macros.get(&sym) {
                let mut m = (**m).clone();
                for t in &mut m.body {
                    t.flags &= !lex::BUILTIN;
                }
                self.macros.insert(sym, Rc::new(m));
            }
        }
        Ok(())
    }

    /// Reads the unit to its end, printing tokens.
    fn run(&mut self) -> Result<(), Bail> {
        loop {
            let Some(t) = self.expand_next()? else {
                return Ok(());
            };
            if t.kind == Kind::Other
                && matches!(self.interner.str(t.sym).as_bytes()[0], b'"' | b'\'')
            {
                return Err(Bail::Unsupported("unterminated literal"));
            }
            self.out.token(&t, &self.interner);
        }
    }

    fn is_hash(&self, t: &Tok) -> bool {
        self.kw.is_hash(t)
    }

    /// The next token of the current file at top level: directives are carried out, skipped
    /// groups passed over, finished included files left. `None` at the end of the unit, or at
    /// the end of the current file while collecting macro arguments.
    fn file_tok(&mut self) -> Result<Option<Tok>, Bail> {
        loop {
            let Some(frame) = self.frames.last_mut() else {
                return Ok(None);
            };
            if frame.pos >= frame.file.toks.len() {
                if self.collecting > 0 {
                    return Ok(None);
                }
                self.leave_file()?;
                continue;
            }
            let t = frame.file.toks[frame.pos];
            if t.flags & BOL != 0 && self.is_hash(&t) {
                if self.peeking {
                    return Ok(None); // A directive line: no `(` follows.
                }
                if self.collecting > 0 {
                    return Err(Bail::Unsupported("directive inside macro arguments"));
                }
                self.directive()?;
                continue;
            }
            let frame = self.frames.last_mut().expect("frame checked above");
            if frame.conds.last().is_some_and(|c| c.skipping) {
                // Pass over the skipped group up to the next directive.
                let toks = &frame.file.toks;
                let mut p = frame.pos + 1;
                while p < toks.len() && !(toks[p].flags & BOL != 0 && self.kw.is_hash(&toks[p])) {
                    p += 1;
                }
                frame.pos = p;
                continue;
            }
            frame.pos += 1;
            if t.flags & BOL != 0 && self.collecting == 0 {
                self.out.line_change(t.line, t.col, t.flags & lex::SYS != 0);
            }
            return Ok(Some(t));
        }
    }

    /// Un-reads the token last read from the file.
    fn unread_file(&mut self) {
        if let Some(f) = self.frames.last_mut() {
            f.pos -= 1;
        }
    }

    /// Leaves the current file at its end.
    fn leave_file(&mut self) -> Result<(), Bail> {
        let frame = self.frames.pop().expect("a frame is open");
        if !frame.conds.is_empty() {
            return Err(Bail::Unsupported("unterminated conditional"));
        }
        if let Some(parent) = self.frames.last() {
            self.out
                .leave(&parent.name, parent.system, frame.return_line);
        }
        Ok(())
    }

    /// Carries out the directive starting at the current position (a `#` at the start of a
    /// line).
    fn directive(&mut self) -> Result<(), Bail> {
        let frame = self.frames.last_mut().expect("a frame is open");
        let start = frame.pos;
        let end = next_line(&frame.file.toks, start);
        frame.pos = end;
        let file = frame.file.clone();
        let line = &file.toks[start + 1..end];
        let skipping = frame.conds.last().is_some_and(|c| c.skipping);
        let Some(first) = line.first() else {
            return Ok(()); // The null directive.
        };
        if first.kind == Kind::Number {
            return if skipping {
                Ok(())
            } else {
                Err(Bail::Unsupported("line marker in source"))
            };
        }
        let name = self.interner.str(first.sym).to_string();
        let rest = &line[1..];
        match name.as_str() {
            "if" | "ifdef" | "ifndef" => {
                let (skip, taken) = if skipping {
                    (true, true)
                } else {
                    let v = self.condition(&name, rest)?;
                    (!v, v)
                };
                self.cur_frame().conds.push(Cond {
                    skipping: skip,
                    taken,
                    outer_skipping: skipping,
                    seen_else: false,
                });
            }
            "elif" | "elifdef" | "elifndef" => {
                let c = *self
                    .cur_frame()
                    .conds
                    .last()
                    .ok_or(Bail::Unsupported("#elif without #if"))?;
                if c.seen_else {
                    return Err(Bail::Unsupported("#elif after #else"));
                }
                let v = if c.outer_skipping || c.taken {
                    false
                } else {
                    self.condition(&name, rest)?
                };
                let c = self.cur_frame().conds.last_mut().expect("checked above");
                c.skipping = !v;
                c.taken |= v;
            }
            "else" => {
                let c = self
                    .cur_frame()
                    .conds
                    .last_mut()
                    .ok_or(Bail::Unsupported("#else without #if"))?;
                if c.seen_else {
                    return Err(Bail::Unsupported("#else after #else"));
                }
                c.seen_else = true;
                c.skipping = c.outer_skipping || c.taken;
                c.taken = true;
            }
            "endif" => {
                self.cur_frame()
                    .conds
                    .pop()
                    .ok_or(Bail::Unsupported("#endif without #if"))?;
            }
            _ if skipping => {}
            "define" => self.define(rest)?,
            "undef" => {
                let t = rest
                    .first()
                    .ok_or(Bail::Unsupported("#undef without name"))?;
                if t.kind != Kind::Ident || rest.len() > 1 {
                    return Err(Bail::Unsupported("malformed #undef"));
                }
                if self.macros.get(&t.sym).is_some_and(|m| m.builtin.is_some()) {
                    return Err(Bail::Unsupported("#undef of a builtin macro"));
                }
                self.macros.remove(&t.sym);
            }
            "include" | "include_next" => {
                let return_line = line.last().map_or(first.line, |t| t.line) + 1;
                self.include(rest, name == "include_next", first.line, return_line)?;
            }
            "pragma" => self.pragma(first.line, rest)?,
            "error" => return Err(Bail::Unsupported("#error")),
            "warning" => {}
            "ident" | "sccs" => {}
            _ => return Err(Bail::Unsupported("unsupported directive")),
        }
        Ok(())
    }

    fn cur_frame(&mut self) -> &mut Frame {
        self.frames.last_mut().expect("a frame is open")
    }

    /// The value of the condition of directive `name` (`if`, `ifdef`, `ifndef` or their `elif`
    /// forms) with operand `rest`.
    fn condition(&mut self, name: &str, rest: &[Tok]) -> Result<bool, Bail> {
        match name {
            "if" | "elif" => self.eval_if(rest),
            "ifdef" | "elifdef" => self.is_defined_arg(rest),
            _ => self.is_defined_arg(rest).map(|d| !d),
        }
    }

    /// The operand of `#ifdef`/`#ifndef`: whether the named macro is defined.
    fn is_defined_arg(&self, rest: &[Tok]) -> Result<bool, Bail> {
        match rest {
            [t, ..] if t.kind == Kind::Ident => Ok(self.macros.contains_key(&t.sym)),
            _ => Err(Bail::Unsupported("#ifdef without a name")),
        }
    }

    /// Evaluates an `#if` line.
    fn eval_if(&mut self, rest: &[Tok]) -> Result<bool, Bail> {
        let toks = self.expand_directive(rest, true)?;
        expr::eval(&toks, &self.interner)
    }

    /// `#define` with `rest` = the tokens after `define`.
    fn define(&mut self, rest: &[Tok]) -> Result<(), Bail> {
        let name = *rest
            .first()
            .ok_or(Bail::Unsupported("#define without name"))?;
        if name.kind != Kind::Ident || name.sym == self.kw.defined {
            return Err(Bail::Unsupported("malformed #define"));
        }
        let mut i = 1;
        let mut params = None;
        let mut variadic = false;
        if rest
            .get(1)
            .is_some_and(|t| t.sym == self.kw.lparen && t.flags & lex::SPACE == 0)
        {
            let mut ps = Vec::new();
            i = 2;
            loop {
                let t = *rest
                    .get(i)
                    .ok_or(Bail::Unsupported("malformed parameters"))?;
                i += 1;
                if t.sym == self.kw.rparen && ps.is_empty() && !variadic {
                    break;
                }
                if t.sym == self.kw.ellipsis {
                    ps.push(self.kw.va_args);
                    variadic = true;
                } else if t.kind == Kind::Ident && t.sym != self.kw.va_args {
                    if ps.contains(&t.sym) {
                        return Err(Bail::Unsupported("duplicate macro parameter"));
                    }
                    ps.push(t.sym);
                    if rest.get(i).is_some_and(|t| t.sym == self.kw.ellipsis) {
                        variadic = true; // GNU named variadic `args...`.
                        i += 1;
                    }
                } else {
                    return Err(Bail::Unsupported("malformed parameters"));
                }
                let sep = *rest
                    .get(i)
                    .ok_or(Bail::Unsupported("malformed parameters"))?;
                i += 1;
                if sep.sym == self.kw.rparen {
                    break;
                }
                if sep.sym != self.kw.comma || variadic {
                    return Err(Bail::Unsupported("malformed parameters"));
                }
            }
            params = Some(ps);
        }
        let mut body: Vec<Tok> = rest[i..].to_vec();
        if let Some(first) = body.first_mut() {
            first.flags &= !(lex::SPACE | BOL);
        }
        for t in &body {
            if self.macros.get(&t.sym).is_some_and(|m| {
                m.builtin == Some(Builtin::Unsupported) && self.interner.str(t.sym) == "__VA_OPT__"
            }) {
                return Err(Bail::Unsupported("__VA_OPT__"));
            }
        }
        let is_paste = |t: &Tok| {
            t.kind == Kind::Punct
                && (t.sym == self.kw.hashhash || t.sym == self.kw.hashhash_digraph)
        };
        if body.first().is_some_and(is_paste) || body.last().is_some_and(is_paste) {
            return Err(Bail::Unsupported("## at either end of a macro"));
        }
        if let Some(ps) = &params {
            // `#` must be followed by a parameter in a function-like macro.
            for (k, t) in body.iter().enumerate() {
                if self.is_hash(t) && !body.get(k + 1).is_some_and(|n| ps.contains(&n.sym)) {
                    return Err(Bail::Unsupported("# not followed by a parameter"));
                }
            }
        }
        let m = Macro {
            params,
            variadic,
            body,
            builtin: None,
        };
        // gcc warns about a different redefinition and takes the new one.
        if self
            .macros
            .get(&name.sym)
            .is_some_and(|old| old.builtin.is_some())
        {
            return Err(Bail::Unsupported("redefinition of a builtin macro"));
        }
        self.macros.insert(name.sym, Rc::new(m));
        Ok(())
    }

    /// `#pragma` at `line`: `once`, `push_macro`, `pop_macro` and `GCC system_header` are
    /// carried out; others are printed for the compiler (as gcc does).
    fn pragma(&mut self, line: u32, rest: &[Tok]) -> Result<(), Bail> {
        let words: Vec<String> = rest
            .iter()
            .map(|t| self.interner.str(t.sym).to_string())
            .collect();
        let words: Vec<&str> = words.iter().map(String::as_str).collect();
        match words.as_slice() {
            ["once"] => {
                let name = self.frames.last().map(|f| f.name.to_string());
                if let Some(n) = name {
                    self.once.insert(n);
                }
            }
            ["push_macro" | "pop_macro", "(", s, ")"] if s.starts_with('"') => {
                let name = self.interner.intern(s.trim_matches('"'));
                if words[0] == "push_macro" {
                    let cur = self.macros.get(&name).cloned();
                    self.pushed.entry(name).or_default().push(cur);
                } else if let Some(saved) = self.pushed.get_mut(&name).and_then(Vec::pop) {
                    match saved {
                        Some(m) => self.macros.insert(name, m),
                        None => self.macros.remove(&name),
                    };
                }
            }
            ["GCC", "system_header"] => {
                return Err(Bail::Unsupported("#pragma GCC system_header"));
            }
            ["GCC", "poison" | "dependency" | "error", ..] => {
                return Err(Bail::Unsupported("#pragma GCC poison/dependency/error"));
            }
            _ => {
                let text = self.spell(rest);
                self.out.pragma(line, &text);
            }
        }
        Ok(())
    }

    /// `#include` / `#include_next` with operand `rest` on line `from`; `return_line` is the
    /// includer's line after the directive.
    fn include(
        &mut self,
        rest: &[Tok],
        next: bool,
        from: u32,
        return_line: u32,
    ) -> Result<(), Bail> {
        let (name, angled) = self.header_name(rest)?;
        if self.frames.len() >= MAX_INCLUDE_DEPTH {
            return Err(Bail::Unsupported("#include nested too deeply"));
        }
        let found = self
            .find_include(&name, angled, next)
            .ok_or(Bail::Unsupported("include file not found"))?;
        let (path, found_in, from_current_dir, system) = found;
        if self.once.contains(&path) {
            return Ok(());
        }
        let file = self.load_file(&path, system)?;
        if file.guard.is_some_and(|g| self.macros.contains_key(&g)) {
            return Ok(());
        }
        self.includes += 1;
        if self.includes > MAX_INCLUDES {
            return Err(Bail::Unsupported("too many files included"));
        }
        let name: Rc<str> = Rc::from(path.as_str());
        self.out.enter(from, &name, system);
        self.frames.push(Frame {
            file,
            pos: 0,
            name,
            found_in,
            from_current_dir,
            system,
            conds: Vec::new(),
            return_line,
        });
        Ok(())
    }

    /// The lexed file at `path` (read and lexed on first use; `system` marks its tokens).
    fn load_file(&mut self, path: &str, system: bool) -> Result<Rc<SourceFile>, Bail> {
        if let Some(f) = self.files.get(path) {
            return Ok(f.clone());
        }
        let bytes = std::fs::read(self.resolve_fs(Path::new(path)))
            .map_err(|_| Bail::Unsupported("cannot read include file"))?;
        let mut toks = lex::lex(&bytes, &mut self.interner)?;
        if system {
            for t in &mut toks {
                t.flags |= lex::SYS;
            }
        }
        let guard = self.guard_of(&toks);
        let f = Rc::new(SourceFile { toks, guard });
        self.files.insert(path.to_string(), f.clone());
        Ok(f)
    }

    /// The header named by an `#include` operand: (name, whether in angle brackets).
    fn header_name(&mut self, rest: &[Tok]) -> Result<(String, bool), Bail> {
        if let [t] = rest
            && t.kind == Kind::HeaderName
        {
            let s = self.interner.str(t.sym);
            return Ok((s[1..s.len() - 1].to_string(), true));
        }
        if let Some(h) = self.header_operand(rest) {
            return Ok(h);
        }
        // A computed include: expand, then read a string or `<` tokens `>`.
        let toks = self.expand_directive(rest, false)?;
        self.header_operand(&toks)
            .ok_or(Bail::Unsupported("malformed #include"))
    }

    /// A header named by tokens (an expanded `#include` operand, or `__has_include`'s): one
    /// `"..."` string, or `<` tokens `>` spelled with their whitespace. Returns (name, whether
    /// in angle brackets).
    fn header_operand(&self, toks: &[Tok]) -> Option<(String, bool)> {
        match toks {
            [t] if t.kind == Kind::Str => {
                let s = self.interner.str(t.sym);
                s.starts_with('"')
                    .then(|| (s[1..s.len() - 1].to_string(), false))
            }
            [l, mid @ .., r] if l.is(&self.interner, "<") && r.is(&self.interner, ">") => {
                Some((self.spell(mid), true))
            }
            _ => None,
        }
    }

    /// The spellings of `toks`, separated by one space where whitespace preceded a token.
    fn spell(&self, toks: &[Tok]) -> String {
        let mut s = String::new();
        for (k, t) in toks.iter().enumerate() {
            if k > 0 && t.flags & lex::SPACE != 0 {
                s.push(' ');
            }
            s.push_str(self.interner.str(t.sym));
        }
        s
    }

    /// Finds an include file as gcc does: a quoted name first next to the includer, then in
    /// the quote directories, then in the bracket directories; `#include_next` continues
    /// after the directory where the current file was found. Returns (path as printed,
    /// chain index, found next to the includer, system header).
    fn find_include(
        &self,
        name: &str,
        angled: bool,
        next: bool,
    ) -> Option<(String, Option<usize>, bool, bool)> {
        let cfg = self.config;
        let chain_len = cfg.quote_dirs.len() + cfg.bracket_dirs.len();
        let dir_of = |i: usize| -> (&str, bool) {
            if i < cfg.quote_dirs.len() {
                (cfg.quote_dirs[i].as_str(), false)
            } else {
                let (d, s) = &cfg.bracket_dirs[i - cfg.quote_dirs.len()];
                (d.as_str(), *s)
            }
        };
        if name.starts_with('/') {
            return self
                .exists(name)
                .then(|| (name.to_string(), None, false, false));
        }
        let frame = self.frames.last();
        let mut start = if angled { cfg.quote_dirs.len() } else { 0 };
        if let (true, Some(frame)) = (next && self.frames.len() > 1, frame) {
            if let Some(i) = frame.found_in {
                start = i + 1;
            } else if frame.from_current_dir {
                start = 0;
            }
        } else if let (false, Some(frame)) = (angled, frame) {
            let path = format!("{}{}", dir_prefix(&frame.name), name);
            if self.exists(&path) {
                return Some((path, None, true, frame.system));
            }
        }
        (start..chain_len).find_map(|i| {
            let (dir, system) = dir_of(i);
            let path = if dir.is_empty() {
                name.to_string()
            } else {
                format!("{dir}/{name}")
            };
            self.exists(&path).then_some((path, Some(i), false, system))
        })
    }

    fn exists(&self, path: &str) -> bool {
        if self.files.contains_key(path) {
            return true;
        }
        if let Some(&known) = self.exists.borrow().get(path) {
            return known;
        }
        let found = self.resolve_fs(Path::new(path)).is_file();
        self.exists.borrow_mut().insert(path.to_string(), found);
        found
    }

    /// The include guard of a file: `#ifndef X` (or `#if !defined X`) as its first directive,
    /// with nothing before it, no `#else`/`#elif` of its own and nothing after the matching
    /// `#endif`.
    fn guard_of(&self, toks: &[Tok]) -> Option<Sym> {
        let first_end = next_line(toks, 0);
        let head = toks.get(..first_end)?;
        if head.len() < 3 || !self.is_hash(&head[0]) {
            return None;
        }
        let word = |t: &Tok| self.interner.str(t.sym);
        let guard = match head {
            [_, d, g] if word(d) == "ifndef" && g.kind == Kind::Ident => g.sym,
            [_, d, n, def, g]
                if word(d) == "if" && word(n) == "!" && def.sym == self.kw.defined =>
            {
                g.sym
            }
            [_, d, n, def, l, g, r]
                if word(d) == "if"
                    && word(n) == "!"
                    && def.sym == self.kw.defined
                    && l.sym == self.kw.lparen
                    && r.sym == self.kw.rparen =>
            {
                g.sym
            }
            _ => return None,
        };
        // Find the matching #endif; it must end the file.
        let mut depth = 0usize;
        let mut p = 0;
        while p < toks.len() {
            let end = next_line(toks, p);
            if self.is_hash(&toks[p]) && p + 1 < end {
                match word(&toks[p + 1]) {
                    "if" | "ifdef" | "ifndef" => depth += 1,
                    // An `#else` branch of the outer conditional does something when the
                    // macro is defined: not a guard.
                    "else" | "elif" | "elifdef" | "elifndef" if depth == 1 => return None,
                    "endif" => {
                        depth -= 1;
                        if depth == 0 {
                            return (end == toks.len()).then_some(guard);
                        }
                    }
                    _ => {}
                }
            } else if depth == 0 {
                return None;
            }
            p = end;
        }
        None
    }
}

/// The index of the first token after the logical line starting at `start`.
fn next_line(toks: &[Tok], start: usize) -> usize {
    let mut p = start + 1;
    while p < toks.len() && toks[p].flags & BOL == 0 {
        p += 1;
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Preprocesses `src` with an empty configuration (no predefined macros, no include
    /// directories).
    fn run(src: &str) -> Result<String, Bail> {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.c");
        std::fs::write(&path, src).expect("write");
        preprocess(&Config::default(), &path, "t.c", None)
    }

    /// The non-directive lines of the output, trimmed.
    fn text(src: &str) -> Vec<String> {
        run(src)
            .expect("preprocesses")
            .lines()
            .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
            .map(|l| l.trim().to_string())
            .collect()
    }

    #[test]
    fn standard_examples_expand_as_c11_says() {
        // C11 §6.10.3.5 EXAMPLE 3, laid out as `gcc -E` prints it (gcc 12: a space kept
        // after an argument, and the line after a macro call that spans lines).
        let src = "#define x 3\n#define f(a) f(x * (a))\n#undef x\n#define x 2\n#define g f\n\
                   #define z z[0]\n#define h g(~\n#define m(a) a(w)\n#define w 0,1\n\
                   #define t(a) a\n#define p() int\n#define q(x) x\n#define r(x,y) x ## y\n\
                   f(y+1) + f(f(z)) % t(t(g)(0) + t)(1);\ng(x+(3,4)-w) | h 5) & m\n(f)^m(m);\n\
                   p() i[q()] = { q(1), r(2,3), r(4,), r(,5), r(,) };\n";
        assert_eq!(
            text(src),
            [
                "f(2 * (y+1)) + f(2 * (f(2 * (z[0])))) % f(2 * (0)) + t(1);",
                "f(2 * (2 +(3,4)-0,1)) | f(2 * (~ 5)) & f(2 * (0,1))",
                "^m(0,1);",
                "int i[] = { 1, 23, 4, 5, };",
            ]
        );
    }

    #[test]
    fn conditionals_guards_and_counters() {
        let src = "#if defined(A) || 1 > 2\nno\n#elif !defined A && __LINE__ == 3\nyes __COUNTER__ __COUNTER__\n#else\nno\n#endif\n#ifdef __FILE__\n__FILE__ __INCLUDE_LEVEL__\n#endif\n";
        assert_eq!(text(src), ["yes 0 1", "\"t.c\" 0"]);
    }

    #[test]
    fn generated_input_never_panics() {
        const PIECES: &[&str] = &[
            "#define ",
            "#undef ",
            "#if ",
            "#ifdef ",
            "#elif ",
            "#else",
            "#endif",
            "#include ",
            "#pragma push_macro(\"A\")",
            "#pragma pop_macro(\"A\")",
            "#line 3",
            "\n",
            " ",
            "A",
            "B",
            "F",
            "(",
            ")",
            ",",
            "##",
            "#",
            "...",
            "__VA_ARGS__",
            "defined",
            "__LINE__",
            "__has_include",
            "<",
            ">",
            "\"t.c\"",
            "1",
            "0x7",
            "'a'",
            "\"s\"",
            "/*",
            "*/",
            "//",
            "\\\n",
            "+",
            "-",
            "/",
            "?",
            ":",
            "F(",
            "A(x) x",
            "B(x, ...) x ## __VA_ARGS__",
            "'",
            "\"",
            "%:",
            "\u{e9}",
            "\t",
            "\r\n",
            "$",
            "@",
            "0 ? 1/0 : 2",
            "(((((",
            ")))))",
        ];
        let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..1500 {
            let n = (next() % 40) as usize;
            let src: String = (0..n)
                .map(|_| PIECES[(next() % PIECES.len() as u64) as usize])
                .collect();
            // Whatever the outcome, it is a value, not a panic.
            let _ = run(&src);
        }
    }
}
