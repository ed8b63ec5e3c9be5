//! Text form of the IR, printed by `racedar dump-ir` and used by the snapshot tests.
//!
//! The format is C-like and stable:
//!
//! ```text
//! struct s { int a @0; unsigned int b:3 @4.0; } size 8 align 4
//! global int x = 0  [t.c:3:5]
//! fn int main(void)  [t.c:5:5]
//!   local int i
//!   n0 (entry):
//!     -> n1  i = 0;  [6:7]
//! ```
//!
//! Nodes are listed in reverse postorder; each line under a node is one outgoing edge with its
//! instruction and its `[line:col]` (the file is printed only when it differs from the function's).

use super::types::{CompKind, IntKind, TypeKind};
use super::*;
use std::fmt::Write as _;

/// Which parts of the program to print.
#[derive(Clone, Copy, Debug, Default)]
pub struct PrintOptions {
    /// Print declarations and definitions from every file, not only the input files
    /// ([`Program::inputs`]): headers such as `<pthread.h>` included.
    pub all_files: bool,
}

/// Prints the program in the text form described in the module documentation.
pub fn print_program(p: &Program, opts: PrintOptions) -> String {
    let printer = Printer {
        p,
        opts,
        temps: None,
    };
    printer.program()
}

struct Printer<'a> {
    p: &'a Program,
    opts: PrintOptions,
    /// Texts printed instead of lowering temporaries ([`lval_to_source`]).
    temps: Option<&'a rustc_hash::FxHashMap<LocalId, String>>,
}

/// Precedence levels for parenthesisation (higher binds tighter).
const PREC_POSTFIX: u8 = 15;
const PREC_UNARY: u8 = 14;

fn bin_prec(op: BinOp) -> u8 {
    use BinOp::*;
    match op {
        Mul | Div | Rem => 13,
        Add | Sub | PtrAdd | PtrSub | PtrDiff => 12,
        Shl | Shr => 11,
        Lt | Gt | Le | Ge => 10,
        Eq | Ne => 9,
        BitAnd => 8,
        BitXor => 7,
        BitOr => 6,
    }
}

impl Printer<'_> {
    fn shown(&self, loc: Loc) -> bool {
        loc.line != 0 && (self.opts.all_files || self.p.inputs.contains(&loc.file))
    }

    fn program(&self) -> String {
        let p = self.p;
        let mut out = String::new();
        let _ = writeln!(out, "; racedar IR, data model {}", p.data_model().name());
        for (i, c) in p.types.comps.iter().enumerate() {
            if c.layout.is_none() || !self.shown(c.loc) {
                continue;
            }
            self.comp(&mut out, types::CompId(i as u32));
        }
        for g in &p.globals {
            if !self.shown(g.loc) || g.storage == Storage::Extern {
                continue;
            }
            self.global(&mut out, g);
        }
        for (i, f) in p.functions.iter().enumerate() {
            if f.body.is_none() || !self.shown(f.loc) {
                continue;
            }
            self.function(&mut out, FuncId(i as u32));
        }
        out
    }

    fn comp(&self, out: &mut String, id: types::CompId) {
        let t = &self.p.types;
        let c = t.comp(id);
        let kw = match c.kind {
            CompKind::Struct => "struct",
            CompKind::Union => "union",
        };
        let tag = c.tag.clone().unwrap_or_else(|| format!("<anon#{}>", id.0));
        let _ = write!(out, "{kw} {tag} {{");
        for f in &c.fields {
            let name = f.name.as_deref().unwrap_or("<anon>");
            match f.bit_field {
                Some(bf) => {
                    let _ = write!(
                        out,
                        " {}:{} @{}.{};",
                        t.declare(f.ty, name),
                        bf.width,
                        f.offset,
                        bf.bit_offset
                    );
                }
                None => {
                    let _ = write!(out, " {} @{};", t.declare(f.ty, name), f.offset);
                }
            }
        }
        if let Some(l) = c.layout {
            let _ = writeln!(out, " }} size {} align {}", l.size, l.align);
        }
    }

    fn loc(&self, loc: Loc, home: FileId) -> String {
        if loc.line == 0 {
            return String::new();
        }
        if loc.file == home {
            format!("[{}:{}]", loc.line, loc.col)
        } else {
            format!("[{}:{}:{}]", self.p.file_name(loc), loc.line, loc.col)
        }
    }

    fn global_name(&self, g: GlobalId) -> String {
        let gl = self.p.global(g);
        match gl.function {
            Some(f) => format!("{}::{}", self.p.function(f).name, gl.name),
            None => gl.name.clone(),
        }
    }

    fn global(&self, out: &mut String, g: &Global) {
        let t = &self.p.types;
        let name = match g.function {
            Some(f) => format!("{}::{}", self.p.function(f).name, g.name),
            None => g.name.clone(),
        };
        let mut line = String::from("global ");
        if g.linkage == Linkage::Internal {
            line.push_str("static ");
        }
        if g.thread_local {
            line.push_str("_Thread_local ");
        }
        line.push_str(&t.declare(g.ty, &name));
        if !g.init.is_empty() {
            line.push_str(" = {");
            for (i, e) in g.init.iter().enumerate() {
                if i > 0 {
                    line.push(',');
                }
                line.push(' ');
                for pr in &e.proj {
                    match pr {
                        Proj::Field { comp, index } => {
                            let f = &t.comp(*comp).fields[*index as usize];
                            let _ = write!(line, ".{}", f.name.as_deref().unwrap_or("<anon>"));
                        }
                        Proj::Index(ix) => {
                            let _ = write!(line, "[{}]", self.expr(ix, None, 0));
                        }
                    }
                }
                if !e.proj.is_empty() {
                    line.push_str(" = ");
                }
                match &e.value {
                    InitValue::Expr(v) => line.push_str(&self.expr(v, None, 0)),
                    InitValue::Str(s) => line.push_str(&self.string(*s)),
                }
            }
            line.push_str(" }");
        }
        let _ = writeln!(out, "{line}  {}", self.loc(g.loc, FileId(u32::MAX)));
    }

    fn function(&self, out: &mut String, id: FuncId) {
        let p = self.p;
        let t = &p.types;
        let f = p.function(id);
        let Some(cfg) = &f.body else { return };
        let mut head = String::from("fn ");
        if f.linkage == Linkage::Internal {
            head.push_str("static ");
        }
        // Print the signature with parameter names.
        let (ret, variadic) = match t.kind(f.ty) {
            TypeKind::Function(sig) => (sig.ret, sig.variadic),
            _ => (f.ty, false),
        };
        let mut params = Vec::new();
        for pid in &f.params {
            params.push(t.declare(f.local(*pid).ty, &self.local_name(f, *pid)));
        }
        if variadic {
            params.push("...".into());
        }
        if params.is_empty() {
            params.push("void".into());
        }
        head.push_str(&t.declare(ret, &format!("{}({})", f.name, params.join(", "))));
        let _ = writeln!(out, "{head}  {}", self.loc(f.loc, FileId(u32::MAX)));
        if let Some(s) = f.specialised {
            let _ = writeln!(
                out,
                "  // copy for the call at {}",
                self.loc(s.call_loc, FileId(u32::MAX))
            );
        }
        for (i, l) in f.locals.iter().enumerate() {
            if l.kind == LocalKind::Param {
                continue;
            }
            let _ = writeln!(
                out,
                "  local {}",
                t.declare(l.ty, &self.local_name(f, LocalId(i as u32)))
            );
        }
        for n in cfg.reverse_postorder() {
            let node = cfg.node(n);
            let mut tags = Vec::new();
            if n == cfg.entry {
                tags.push("entry");
            }
            if n == cfg.exit {
                tags.push("exit");
            }
            if node.loop_head {
                tags.push("loop head");
            }
            if tags.is_empty() {
                let _ = writeln!(out, "  n{}:", n.0);
            } else {
                let _ = writeln!(out, "  n{} ({}):", n.0, tags.join(", "));
            }
            for e in cfg.succs(n) {
                let _ = writeln!(
                    out,
                    "    -> n{}  {}  {}",
                    e.dst.0,
                    self.op(&e.op, Some(f)),
                    self.loc(e.loc, f.loc.file)
                );
            }
        }
    }

    fn local_name(&self, f: &Function, id: LocalId) -> String {
        if let Some(text) = self.temps.and_then(|t| t.get(&id)) {
            return text.clone();
        }
        let l = f.local(id);
        let dup = f.locals.iter().filter(|o| o.name == l.name).count() > 1;
        if dup {
            format!("{}#{}", l.name, id.0)
        } else {
            l.name.clone()
        }
    }

    fn op(&self, op: &Op, f: Option<&Function>) -> String {
        match op {
            Op::Skip => "skip".into(),
            Op::Assign { lhs, rhs } => {
                format!("{} = {};", self.lval(lhs, f), self.expr(rhs, f, 0))
            }
            Op::Call { dest, callee, args } => {
                let mut s = String::new();
                if let Some(d) = dest {
                    let _ = write!(s, "{} = ", self.lval(d, f));
                }
                match callee {
                    Callee::Direct(fid) => s.push_str(&self.p.function(*fid).name),
                    Callee::Indirect(e) => {
                        let _ = write!(s, "(*{})", self.expr(e, f, PREC_UNARY));
                    }
                }
                let args: Vec<String> = args.iter().map(|a| self.expr(a, f, 0)).collect();
                let _ = write!(s, "({});", args.join(", "));
                s
            }
            Op::Assume { cond, branch } => {
                if *branch {
                    format!("assume({})", self.expr(cond, f, 0))
                } else {
                    format!("assume(!{})", self.expr(cond, f, PREC_UNARY + 1))
                }
            }
            Op::Return(None) => "return;".into(),
            Op::Return(Some(e)) => format!("return {};", self.expr(e, f, 0)),
            Op::Asm { outputs, inputs } => {
                let outs: Vec<String> = outputs.iter().map(|l| self.lval(l, f)).collect();
                let ins: Vec<String> = inputs.iter().map(|e| self.expr(e, f, 0)).collect();
                format!("asm(out: {}; in: {});", outs.join(", "), ins.join(", "))
            }
        }
    }

    fn string(&self, s: StrId) -> String {
        let lit = &self.p.strings[s.0 as usize];
        let elem = self.p.types.size_of(lit.elem_ty).unwrap_or(1).max(1) as usize;
        let mut out = String::new();
        if elem > 1 {
            out.push('L');
        }
        out.push('"');
        let n = lit.bytes.len() / elem;
        for i in 0..n.saturating_sub(1) {
            let mut v: u32 = 0;
            for b in 0..elem {
                v |= (lit.bytes[i * elem + b] as u32) << (8 * b);
            }
            match v {
                0x22 => out.push_str("\\\""),
                0x5c => out.push_str("\\\\"),
                0x0a => out.push_str("\\n"),
                0x09 => out.push_str("\\t"),
                0x20..=0x7e => out.push(char::from(v as u8)),
                _ => {
                    let _ = write!(out, "\\x{v:02x}");
                }
            }
        }
        out.push('"');
        out
    }

    fn int_suffix(&self, ty: TypeId) -> &'static str {
        match self.p.types.int_kind(ty) {
            Some(IntKind::UInt) => "U",
            Some(IntKind::Long) => "L",
            Some(IntKind::ULong) => "UL",
            Some(IntKind::LongLong) => "LL",
            Some(IntKind::ULongLong) => "ULL",
            _ => "",
        }
    }

    /// Prints `e`, parenthesised if its precedence is below `ctx`.
    fn expr(&self, e: &Expr, f: Option<&Function>, ctx: u8) -> String {
        let t = &self.p.types;
        let (s, prec) = match &e.kind {
            ExprKind::Int(v) => {
                let s = format!("{v}{}", self.int_suffix(e.ty));
                let prec = if *v < 0 { PREC_UNARY } else { PREC_POSTFIX };
                (s, prec)
            }
            ExprKind::Float(v) => {
                let suffix = match t.kind(e.ty) {
                    TypeKind::Float(types::FloatKind::Float) => "f",
                    TypeKind::Float(types::FloatKind::LongDouble) => "L",
                    _ => "",
                };
                (format!("{v:?}{suffix}"), PREC_POSTFIX)
            }
            ExprKind::Str(s) => (self.string(*s), PREC_POSTFIX),
            ExprKind::Load(lv) => (self.lval(lv, f), self.lval_prec(lv)),
            ExprKind::AddrOf(lv) => (format!("&{}", self.lval_at(lv, f, PREC_UNARY)), PREC_UNARY),
            ExprKind::Func(fid) => (self.p.function(*fid).name.clone(), PREC_POSTFIX),
            ExprKind::Unary(op, a) => {
                let sym = match op {
                    UnOp::Neg => "-",
                    UnOp::BitNot => "~",
                    UnOp::LogNot => "!",
                };
                (format!("{sym}{}", self.expr(a, f, PREC_UNARY)), PREC_UNARY)
            }
            ExprKind::Binary(op, a, b) => {
                let p = bin_prec(*op);
                (
                    format!(
                        "{} {} {}",
                        self.expr(a, f, p),
                        op.c_str(),
                        self.expr(b, f, p + 1)
                    ),
                    p,
                )
            }
            ExprKind::Cast(a) => (
                format!("({}){}", t.display(e.ty), self.expr(a, f, PREC_UNARY)),
                PREC_UNARY,
            ),
            ExprKind::Unknown => (format!("__unknown({})", t.display(e.ty)), PREC_POSTFIX),
        };
        if prec < ctx { format!("({s})") } else { s }
    }

    fn lval_prec(&self, lv: &Lval) -> u8 {
        match (&lv.host, lv.proj.is_empty()) {
            (Host::Deref(_), true) => PREC_UNARY,
            _ => PREC_POSTFIX,
        }
    }

    fn lval_at(&self, lv: &Lval, f: Option<&Function>, ctx: u8) -> String {
        let s = self.lval(lv, f);
        if self.lval_prec(lv) < ctx {
            format!("({s})")
        } else {
            s
        }
    }

    fn lval(&self, lv: &Lval, f: Option<&Function>) -> String {
        let t = &self.p.types;
        let field_name =
            |comp: types::CompId, index: u32| t.comp(comp).fields[index as usize].name.as_deref();
        // Anonymous struct/union members are invisible in C syntax: `p->x`, not `p-><anon>.x`.
        let mut projs = lv
            .proj
            .iter()
            .filter(|p| !matches!(p, Proj::Field { comp, index } if field_name(*comp, *index).is_none()))
            .peekable();
        let mut s = match &lv.host {
            Host::Var(Var::Global(g)) => self.global_name(*g),
            Host::Var(Var::Local(l)) => match f {
                Some(f) => self.local_name(f, *l),
                None => format!("local#{}", l.0),
            },
            Host::Deref(e) => match projs.peek() {
                Some(Proj::Field { comp, index }) => {
                    let name = field_name(*comp, *index).unwrap_or("<anon>");
                    projs.next();
                    format!("{}->{}", self.expr(e, f, PREC_POSTFIX), name)
                }
                Some(Proj::Index(_)) => format!("(*{})", self.expr(e, f, PREC_UNARY)),
                None if lv.proj.is_empty() => format!("*{}", self.expr(e, f, PREC_UNARY)),
                None => format!("(*{})", self.expr(e, f, PREC_UNARY)),
            },
        };
        for pr in projs {
            match pr {
                Proj::Field { comp, index } => {
                    let _ = write!(s, ".{}", field_name(*comp, *index).unwrap_or("<anon>"));
                }
                Proj::Index(ix) => {
                    let _ = write!(s, "[{}]", self.expr(ix, f, 0));
                }
            }
        }
        s
    }
}

/// Prints an expression in C syntax (without a function context, locals print as `local#N`).
pub fn expr_to_string(p: &Program, e: &Expr, f: Option<&Function>) -> String {
    let printer = Printer {
        p,
        opts: PrintOptions::default(),
        temps: None,
    };
    printer.expr(e, f, 0)
}

/// Prints an lvalue in C syntax: `x`, `s.f`, `p->f`, `a[i]`, `*p`.
pub fn lval_to_string(p: &Program, lv: &Lval, f: Option<&Function>) -> String {
    let printer = Printer {
        p,
        opts: PrintOptions::default(),
        temps: None,
    };
    printer.lval(lv, f)
}

/// Rounds of substituting temporaries into each other's definitions ([`lval_to_source`]).
const TEMP_ROUNDS: usize = 3;

/// Prints an lvalue of function `f` as the source wrote it, as far as the IR tells: each
/// temporary of lowering (`tmp#N`, [`crate::ir::LocalKind::Temp`]) with one definition in `f`
/// is replaced by the expression or call it holds (`((struct s *)get())->f` rather than
/// `((struct s *)tmp#4)->f`), nested up to [`TEMP_ROUNDS`] deep; any other temporary prints as
/// `(…)`. Reports use it so that no IR name reaches a message.
pub fn lval_to_source(p: &Program, lv: &Lval, f: &Function) -> String {
    source_text(p, f, |printer| printer.lval(lv, Some(f)))
}

/// Prints an expression of function `f` as the source wrote it (see [`lval_to_source`]).
pub fn expr_to_source(p: &Program, e: &Expr, f: &Function) -> String {
    source_text(p, f, |printer| printer.expr(e, Some(f), 0))
}

/// Runs `print` without substitutions, and again with the temporaries' source texts
/// ([`temp_texts`], computed only then) when the first text names a temporary.
fn source_text(p: &Program, f: &Function, print: impl Fn(&Printer<'_>) -> String) -> String {
    let mut printer = Printer {
        p,
        opts: PrintOptions::default(),
        temps: None,
    };
    let plain = print(&printer);
    if !plain.contains("tmp#") {
        return plain;
    }
    let texts = temp_texts(p, f);
    printer.temps = Some(&texts);
    print(&printer)
}

/// The source text of each temporary of `f` ([`lval_to_source`]).
fn temp_texts(p: &Program, f: &Function) -> rustc_hash::FxHashMap<LocalId, String> {
    // The single definition of each temporary: an assignment or a call result.
    let mut defs: rustc_hash::FxHashMap<LocalId, Option<&Op>> = rustc_hash::FxHashMap::default();
    for e in f.body.iter().flat_map(|c| c.edges.iter()) {
        let lhs = match &e.op {
            Op::Assign { lhs, .. } => Some(lhs),
            Op::Call { dest: Some(d), .. } => Some(d),
            _ => None,
        };
        if let Some(Lval {
            host: Host::Var(Var::Local(l)),
            proj,
            ..
        }) = lhs
            && proj.is_empty()
            && matches!(f.local(*l).kind, crate::ir::LocalKind::Temp)
        {
            defs.entry(*l)
                .and_modify(|d| *d = None)
                .or_insert(Some(&e.op));
        }
    }
    let mut texts: rustc_hash::FxHashMap<LocalId, String> = f
        .locals
        .iter()
        .enumerate()
        .filter(|(_, l)| matches!(l.kind, crate::ir::LocalKind::Temp))
        .map(|(i, _)| (LocalId(i as u32), "(…)".to_string()))
        .collect();
    for _ in 0..TEMP_ROUNDS {
        let printer = Printer {
            p,
            opts: PrintOptions::default(),
            temps: Some(&texts),
        };
        let next: rustc_hash::FxHashMap<LocalId, String> = texts
            .keys()
            .map(|&l| {
                let text = match defs.get(&l).copied().flatten() {
                    Some(Op::Assign { rhs, .. }) => {
                        let t = printer.expr(rhs, Some(f), 0);
                        if t.contains(' ') { format!("({t})") } else { t }
                    }
                    Some(Op::Call { callee, args, .. }) => {
                        let name = match callee {
                            Callee::Direct(g) => p.function(*g).name.clone(),
                            Callee::Indirect(e) => printer.expr(e, Some(f), PREC_POSTFIX),
                        };
                        let args: Vec<String> =
                            args.iter().map(|a| printer.expr(a, Some(f), 0)).collect();
                        format!("{name}({})", args.join(", "))
                    }
                    _ => "(…)".to_string(),
                };
                (l, text)
            })
            .collect();
        texts = next;
    }
    texts
}
