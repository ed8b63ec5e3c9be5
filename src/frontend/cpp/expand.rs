//! Macro expansion (C11 §6.10.3), with gcc's algorithm: expansions are contexts on a stack;
//! a macro is disabled while its context is on the stack, and a disabled macro's name read
//! there is marked [`NO_EXPAND`] for good (§6.10.3.4p2). A function-like macro's arguments
//! are collected through contexts and file lines, fully expanded on their own unless they
//! are operands of `#` or `##`, and substituted; the result is pushed and rescanned.
//!
//! Tokens pushed in a context take the line and column of the outermost invocation (gcc's
//! expansion point), which is where `gcc -E` prints them and what `__LINE__` gives.

use super::lex::{self, AVOID_PASTE, BOL, BUILTIN, Kind, NO_EXPAND, SPACE, SYS, Tok};
use super::output::quote;
use super::{Bail, Builtin, Context, MAX_EXPANSIONS, Macro, Pp, Src};

/// The deepest nesting of macro invocations in arguments expanded here.
const MAX_NESTING: usize = 200;

impl Pp<'_> {
    /// The next token, unexpanded: from the innermost context, else from the file. `None` at
    /// a floor (the end of an argument or directive being expanded) or at the end of input.
    pub(super) fn next_tok(&mut self) -> Result<Option<(Tok, Src)>, Bail> {
        loop {
            let floor = self.floors.last().copied().unwrap_or(0);
            if self.contexts.len() > floor {
                let ctx = self.contexts.last_mut().expect("non-empty above the floor");
                if ctx.pos < ctx.toks.len() {
                    let mut t = ctx.toks[ctx.pos];
                    ctx.pos += 1;
                    self.mark(&mut t);
                    return Ok(Some((t, Src::Context)));
                }
                let ctx = self.contexts.pop().expect("non-empty above the floor");
                if let Some(m) = ctx.macro_name {
                    self.disabled.remove(&m);
                    self.after_expansion = true;
                }
                continue;
            }
            if !self.floors.is_empty() {
                return Ok(None);
            }
            return Ok(self.file_tok()?.map(|mut t| {
                if t.flags & BOL != 0 && self.collecting == 0 {
                    // A new output line: gcc forgets the whitespace of an empty expansion
                    // that ended the previous line (`print.source` is reset).
                    self.pending_space = false;
                }
                self.mark(&mut t);
                (t, Src::File)
            }));
        }
    }

    /// Applies the pending paste-avoidance and space flags to a token being read.
    fn mark(&mut self, t: &mut Tok) {
        if self.after_expansion {
            t.flags |= AVOID_PASTE;
            self.after_expansion = false;
        }
        if self.pending_space {
            t.flags |= SPACE | AVOID_PASTE;
            self.pending_space = false;
        }
    }

    /// Un-reads the token just read from `src`.
    fn unread(&mut self, src: Src) {
        match src {
            Src::Context => {
                if let Some(c) = self.contexts.last_mut() {
                    c.pos -= 1;
                }
            }
            Src::File => self.unread_file(),
        }
    }

    /// Whether the next token is `(` (consumed if so) — the test for a function-like macro
    /// invocation. A directive line or the end of the file means no.
    fn peek_lparen(&mut self) -> Result<bool, Bail> {
        let saved = (self.after_expansion, self.pending_space);
        self.collecting += 1;
        self.peeking = true;
        let r = self.next_tok();
        self.peeking = false;
        self.collecting -= 1;
        match r? {
            Some((t, _)) if t.kind == Kind::Punct && t.sym == self.kw.lparen => Ok(true),
            Some((_, src)) => {
                self.unread(src);
                (self.after_expansion, self.pending_space) = saved;
                Ok(false)
            }
            None => Ok(false),
        }
    }

    /// The next fully macro-expanded token.
    pub(super) fn expand_next(&mut self) -> Result<Option<Tok>, Bail> {
        loop {
            let Some((t, _)) = self.next_tok()? else {
                return Ok(None);
            };
            if t.kind != Kind::Ident || t.flags & NO_EXPAND != 0 {
                return Ok(Some(t));
            }
            if self.in_if && t.sym == self.kw.defined {
                return self.defined_operator(t).map(Some);
            }
            let Some(m) = self.macros.get(&t.sym).cloned() else {
                return Ok(Some(t));
            };
            if self.disabled.contains(&t.sym) {
                let mut t = t;
                t.flags |= NO_EXPAND;
                return Ok(Some(t));
            }
            if let Some(b) = m.builtin {
                return self.builtin(b, t).map(Some);
            }
            self.expansions += 1;
            if self.expansions > MAX_EXPANSIONS {
                return Err(Bail::Unsupported("too many macro expansions"));
            }
            let body = match &m.params {
                None => m.body.clone(),
                Some(params) => {
                    if !self.peek_lparen()? {
                        return Ok(Some(t));
                    }
                    let (args, va_absent) = self.collect_args(&t, params.len(), m.variadic)?;
                    self.substitute(&m, args, va_absent)?
                }
            };
            self.push_expansion(&t, body);
        }
    }

    /// Pushes the replacement `body` of the macro named by `name` as a context.
    fn push_expansion(&mut self, name: &Tok, mut body: Vec<Tok>) {
        for t in &mut body {
            t.line = name.line;
            t.col = name.col;
            t.flags &= !BOL;
        }
        match body.first_mut() {
            Some(first) => {
                first.flags = (first.flags & !SPACE) | (name.flags & SPACE) | AVOID_PASTE
            }
            None => self.pending_space |= name.flags & SPACE != 0,
        }
        self.disabled.insert(name.sym);
        self.contexts.push(Context {
            toks: body,
            pos: 0,
            macro_name: Some(name.sym),
        });
    }

    /// Collects the arguments of an invocation of `name` (after its `(`): one token list per
    /// parameter (an omitted variadic argument is empty).
    fn collect_args(
        &mut self,
        name: &Tok,
        nparams: usize,
        variadic: bool,
    ) -> Result<(Vec<Vec<Tok>>, bool), Bail> {
        self.collecting += 1;
        let mut args: Vec<Vec<Tok>> = vec![Vec::new()];
        let mut depth = 0u32;
        let result = loop {
            let Some((mut t, _)) = self.next_tok()? else {
                break Err(Bail::Unsupported("unterminated macro invocation"));
            };
            if t.flags & BOL != 0 {
                t.flags = (t.flags & !BOL) | SPACE;
            }
            t.line = name.line;
            t.col = name.col;
            if t.kind == Kind::Punct {
                if t.sym == self.kw.lparen {
                    depth += 1;
                } else if t.sym == self.kw.rparen {
                    if depth == 0 {
                        break Ok(());
                    }
                    depth -= 1;
                } else if t.sym == self.kw.comma
                    && depth == 0
                    && !(variadic && args.len() == nparams)
                {
                    args.push(Vec::new());
                    continue;
                }
            }
            args.last_mut().expect("at least one argument").push(t);
        };
        self.collecting -= 1;
        result?;
        if nparams == 0 {
            return if args.len() == 1 && args[0].is_empty() {
                Ok((Vec::new(), false))
            } else {
                Err(Bail::Unsupported(
                    "arguments given to a macro without parameters",
                ))
            };
        }
        let va_absent = variadic && args.len() + 1 == nparams;
        if va_absent {
            args.push(Vec::new());
        }
        if args.len() != nparams {
            return Err(Bail::Unsupported("wrong number of macro arguments"));
        }
        Ok((args, va_absent))
    }

    /// Expands `toks` on their own (an argument before substitution, or a directive line with
    /// `in_if`).
    fn expand_isolated(&mut self, toks: Vec<Tok>) -> Result<Vec<Tok>, Bail> {
        // Arguments nest through recursion: bound it (gcc has no such limit, so hand such
        // input to it).
        if self.floors.len() > MAX_NESTING {
            return Err(Bail::Unsupported("macro arguments nested too deeply"));
        }
        let saved = (self.after_expansion, self.pending_space);
        self.after_expansion = false;
        self.pending_space = false;
        self.floors.push(self.contexts.len());
        self.contexts.push(Context {
            toks,
            pos: 0,
            macro_name: None,
        });
        let mut out = Vec::new();
        let r = loop {
            match self.expand_next() {
                Ok(Some(t)) => out.push(t),
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            }
        };
        self.floors.pop();
        (self.after_expansion, self.pending_space) = saved;
        r.map(|()| out)
    }

    /// The tokens of a directive line after macro expansion; `in_if` makes `defined` and
    /// `__has_include` operators.
    pub(super) fn expand_directive(&mut self, rest: &[Tok], in_if: bool) -> Result<Vec<Tok>, Bail> {
        self.in_if = in_if;
        let r = self.expand_isolated(rest.to_vec());
        self.in_if = false;
        r
    }

    fn is_paste(&self, t: &Tok) -> bool {
        t.kind == Kind::Punct && (t.sym == self.kw.hashhash || t.sym == self.kw.hashhash_digraph)
    }

    /// The replacement of a function-like macro `m` for `args`: parameters replaced (`#`
    /// stringifies, `##` pastes, other uses get the fully expanded argument).
    /// `va_absent`: the variable arguments were left out altogether (not just empty).
    fn substitute(
        &mut self,
        m: &Macro,
        args: Vec<Vec<Tok>>,
        va_absent: bool,
    ) -> Result<Vec<Tok>, Bail> {
        let params = m.params.as_deref().unwrap_or_default();
        let body = &m.body;
        let param_of = |t: &Tok| {
            (t.kind == Kind::Ident)
                .then(|| params.iter().position(|p| *p == t.sym))
                .flatten()
        };
        let mut expanded: Vec<Option<Vec<Tok>>> = vec![None; args.len()];
        // `None` is a placemarker (an empty argument next to `##`).
        let mut out: Vec<Option<Tok>> = Vec::with_capacity(body.len());
        // Indices in `out` of the tokens after which a `##` stands.
        let mut pastes: Vec<usize> = Vec::new();
        let mut next_avoid = false;
        let mut carry_space = false;
        let mut i = 0;
        while i < body.len() {
            let t = body[i];
            let prev_paste = i > 0 && self.is_paste(&body[i - 1]);
            let next_paste = body.get(i + 1).is_some_and(|n| self.is_paste(n));
            if self.is_paste(&t) {
                pastes.push(out.len());
                i += 1;
                continue;
            }
            if self.is_hash(&t)
                && let Some(k) = body.get(i + 1).and_then(&param_of)
            {
                let mut s = self.stringify(&args[k]);
                // gcc gives the string the location of the last token read from the file
                // (the invocation's `)`), hence that file's system-header status.
                let sys = self.frames.last().is_some_and(|f| f.system);
                s.flags = (t.flags & SPACE) | if sys { SYS } else { 0 };
                out.push(Some(s));
                i += 2;
                continue;
            }
            let Some(k) = param_of(&t) else {
                let mut t = t;
                if next_avoid {
                    t.flags |= AVOID_PASTE;
                    next_avoid = false;
                }
                if carry_space {
                    t.flags |= SPACE;
                    carry_space = false;
                }
                out.push(Some(t));
                i += 1;
                continue;
            };
            // GNU: `, ## __VA_ARGS__` drops the comma when the variable arguments are left out.
            if prev_paste
                && m.variadic
                && k == params.len() - 1
                && i >= 2
                && body[i - 2].sym == self.kw.comma
            {
                let paste_at = pastes.pop();
                if va_absent {
                    out.pop();
                } else if let Some(p) = paste_at {
                    // The comma stays and nothing is pasted.
                    debug_assert_eq!(p, out.len());
                }
                let mut first = true;
                for &a in &args[k] {
                    let mut a = a;
                    if first {
                        a.flags |= AVOID_PASTE;
                        first = false;
                    }
                    out.push(Some(a));
                }
                next_avoid = true;
                i += 1;
                continue;
            }
            let toks: Vec<Tok> = if prev_paste || next_paste {
                args[k].clone()
            } else {
                if expanded[k].is_none() {
                    expanded[k] = Some(self.expand_isolated(args[k].clone())?);
                }
                expanded[k].clone().unwrap_or_default()
            };
            if toks.is_empty() {
                if prev_paste || next_paste {
                    out.push(None);
                } else if t.flags & SPACE != 0 {
                    carry_space = true;
                }
            }
            for (j, mut a) in toks.into_iter().enumerate() {
                if j == 0 {
                    let space = t.flags & SPACE != 0 || carry_space;
                    carry_space = false;
                    a.flags = (a.flags & !SPACE) | if space { SPACE } else { 0 } | AVOID_PASTE;
                }
                out.push(Some(a));
            }
            next_avoid = true;
            i += 1;
        }
        if pastes.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        self.paste_all(out, &pastes)
    }

    /// Carries out the `##` operators of a substituted body: `pastes` are indices of `out`
    /// where a `##` stood (between `out[p - 1]` and `out[p]`).
    fn paste_all(&mut self, out: Vec<Option<Tok>>, pastes: &[usize]) -> Result<Vec<Tok>, Bail> {
        let mut res: Vec<Option<Tok>> = Vec::with_capacity(out.len());
        let mut pi = 0;
        for (idx, t) in out.into_iter().enumerate() {
            let pasting = pi < pastes.len() && pastes[pi] == idx;
            while pi < pastes.len() && pastes[pi] == idx {
                pi += 1;
            }
            if !pasting || res.is_empty() {
                res.push(t);
                continue;
            }
            let lhs = res.pop().expect("checked non-empty");
            let joined = match (lhs, t) {
                (None, r) => r,
                (l, None) => l,
                (Some(l), Some(r)) => Some(self.paste(l, r)?),
            };
            res.push(joined);
        }
        Ok(res.into_iter().flatten().collect())
    }

    /// Pastes two tokens into one (C11 §6.10.3.3).
    fn paste(&mut self, l: Tok, r: Tok) -> Result<Tok, Bail> {
        let text = format!("{}{}", self.interner.str(l.sym), self.interner.str(r.sym));
        let toks = lex::lex(text.as_bytes(), &mut self.interner)?;
        match toks.as_slice() {
            [t] if t.flags & SPACE == 0 && !(t.kind == Kind::Punct && text == "//") => Ok(Tok {
                sym: t.sym,
                kind: t.kind,
                flags: l.flags & (SPACE | AVOID_PASTE | SYS | BUILTIN),
                line: l.line,
                col: l.col,
            }),
            _ => Err(Bail::Unsupported("pasting does not give one token")),
        }
    }

    /// The string literal spelling the argument `arg` (C11 §6.10.3.2).
    fn stringify(&mut self, arg: &[Tok]) -> Tok {
        let mut s = String::from("\"");
        for (k, t) in arg.iter().enumerate() {
            if k > 0 && t.flags & SPACE != 0 {
                s.push(' ');
            }
            let text = self.interner.str(t.sym);
            if matches!(t.kind, Kind::Str | Kind::Char) {
                s.push_str(&quote(text));
            } else {
                s.push_str(text);
            }
        }
        s.push('"');
        let line = arg.first().map_or(0, |t| t.line);
        Tok {
            sym: self.interner.intern(&s),
            kind: Kind::Str,
            flags: 0,
            line,
            col: 0,
        }
    }

    /// A number token replacing `at`.
    fn number_tok(&mut self, value: u64, at: &Tok) -> Tok {
        Tok {
            sym: self.interner.intern(&value.to_string()),
            kind: Kind::Number,
            flags: at.flags & (SPACE | AVOID_PASTE | SYS | BUILTIN),
            line: at.line,
            col: at.col,
        }
    }

    /// `defined X` or `defined ( X )` in an `#if` line, as 1 or 0.
    fn defined_operator(&mut self, at: Tok) -> Result<Tok, Bail> {
        let bad = Bail::Unsupported("malformed defined");
        let (mut t, _) = self.next_tok()?.ok_or(bad.clone())?;
        let paren = t.kind == Kind::Punct && t.sym == self.kw.lparen;
        if paren {
            t = self.next_tok()?.ok_or(bad.clone())?.0;
        }
        if t.kind != Kind::Ident {
            return Err(bad);
        }
        if paren {
            let (r, _) = self.next_tok()?.ok_or(bad.clone())?;
            if r.sym != self.kw.rparen {
                return Err(bad);
            }
        }
        let v = self.macros.contains_key(&t.sym);
        let sym = if v { self.kw.one } else { self.kw.zero };
        Ok(Tok {
            sym,
            kind: Kind::Number,
            ..at
        })
    }

    /// The raw tokens of a parenthesised operand `( ... )` following a builtin.
    fn paren_operand(&mut self) -> Result<Vec<Tok>, Bail> {
        let bad = Bail::Unsupported("malformed builtin operand");
        let (t, _) = self.next_tok()?.ok_or(bad.clone())?;
        if t.sym != self.kw.lparen {
            return Err(bad);
        }
        let mut depth = 0;
        let mut toks = Vec::new();
        loop {
            let (t, _) = self.next_tok()?.ok_or(bad.clone())?;
            if t.kind == Kind::Punct && t.sym == self.kw.lparen {
                depth += 1;
            } else if t.kind == Kind::Punct && t.sym == self.kw.rparen {
                if depth == 0 {
                    return Ok(toks);
                }
                depth -= 1;
            }
            toks.push(t);
        }
    }

    /// Expands the builtin macro `b` named by `at`.
    fn builtin(&mut self, b: Builtin, at: Tok) -> Result<Tok, Bail> {
        let string = |pp: &mut Self, s: &str| Tok {
            sym: pp.interner.intern(&format!("\"{}\"", quote(s))),
            kind: Kind::Str,
            flags: at.flags & (SPACE | AVOID_PASTE | SYS | BUILTIN),
            line: at.line,
            col: at.col,
        };
        match b {
            Builtin::File => {
                let name = self.frames.last().map(|f| f.name.clone());
                Ok(string(self, name.as_deref().unwrap_or("")))
            }
            Builtin::BaseFile => {
                let name = self.main_name.clone();
                Ok(string(self, &name))
            }
            Builtin::FileName => {
                let name = self.frames.last().map(|f| f.name.clone());
                let name = name.as_deref().unwrap_or("");
                let base = name.rsplit('/').next().unwrap_or(name).to_string();
                Ok(string(self, &base))
            }
            Builtin::Line => Ok(self.number_tok(u64::from(at.line), &at)),
            Builtin::Counter => {
                let c = self.counter;
                self.counter += 1;
                Ok(self.number_tok(c, &at))
            }
            Builtin::IncludeLevel => {
                let level = self.frames.len().saturating_sub(1) as u64;
                Ok(self.number_tok(level, &at))
            }
            Builtin::HasInclude | Builtin::HasIncludeNext => {
                if !self.in_if {
                    return Err(Bail::Unsupported("__has_include outside #if"));
                }
                let toks = self.paren_operand()?;
                let (name, angled) = self
                    .header_operand(&toks)
                    .ok_or(Bail::Unsupported("malformed __has_include"))?;
                let found = self
                    .find_include(&name, angled, b == Builtin::HasIncludeNext)
                    .is_some();
                Ok(self.number_tok(u64::from(found), &at))
            }
            Builtin::Query => {
                let toks = self.paren_operand()?;
                let mut key = format!("{}(", self.interner.str(at.sym));
                for t in &toks {
                    if t.kind == Kind::Ident
                        && self.macros.get(&t.sym).is_some_and(|m| m.builtin.is_none())
                    {
                        return Err(Bail::Unsupported("macro in a __has_attribute operand"));
                    }
                    key.push_str(self.interner.str(t.sym));
                }
                key.push(')');
                let v = match self.config.answers.get(&key) {
                    Some(&v) => v,
                    None => {
                        self.unknown.insert(key);
                        0
                    }
                };
                Ok(self.number_tok(v, &at))
            }
            Builtin::Unsupported => Err(Bail::Unsupported("unsupported builtin macro")),
        }
    }
}
