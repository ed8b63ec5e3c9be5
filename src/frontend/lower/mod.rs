//! Lowering the lang-c AST to the IR.
//!
//! [`ProgramBuilder`] holds the program being built and persists across translation units, so
//! several units link into one [`Program`] (external names are shared, `static` ones are not).
//! A private `Lower` walks one unit: C scopes, types and layouts (`ctypes`), declarations
//! (`decl`), initialisers (`init`), expressions (`expr`) and statements (`stmt`); the CFG of
//! each function is built by `builder::FnBuilder`.
//!
//! Every side effect of a C expression becomes an instruction; the remaining expressions are
//! side-effect free and fully typed, with C's implicit conversions made explicit (`convert`).

mod builder;
mod convert;
mod ctypes;
mod decl;
mod expr;
mod init;
mod literal;
mod stmt;

use super::error::{ErrorKind, FrontendError};
use super::layout::{self, CompAttrs, MemberDecl};
use super::parse::ParsedUnit;
use super::source_map::{FileTable, SourceMap};
use crate::ir::types::{ArrayLen, CompId, CompInfo, CompKind, DataModel, TypeId, TypeKind};
use crate::ir::{FileId, FuncId, GlobalId, Loc, LocalId, Program, Unsupported};
use builder::FnBuilder;
use lang_c::span::Span;
use rustc_hash::FxHashMap;

/// Result of lowering steps.
pub(crate) type LResult<T> = Result<T, FrontendError>;

/// What an ordinary identifier denotes in a scope.
#[derive(Clone, Copy, Debug)]
enum Symbol {
    Local(LocalId),
    Global(GlobalId),
    Func(FuncId),
    EnumConst(i128, TypeId),
    Typedef(TypeId),
}

/// What a struct/union/enum tag denotes.
#[derive(Clone, Copy, Debug)]
enum Tag {
    Comp(CompId),
    Enum(TypeId),
}

/// One C scope: ordinary identifiers and tags.
#[derive(Default, Debug)]
struct Scope {
    names: FxHashMap<String, Symbol>,
    tags: FxHashMap<String, Tag>,
}

/// The program under construction, shared by all translation units.
pub struct ProgramBuilder {
    program: Program,
    /// Source files of every unit.
    pub files: FileTable,
    /// External-linkage names across units.
    externs: FxHashMap<String, Symbol>,
    /// Functions whose body comes from an `extern inline` (GNU inline-only) definition, which a
    /// later definition may replace.
    inline_only: rustc_hash::FxHashSet<FuncId>,
    /// Per lowered unit, the number of struct and union types when its lowering began
    /// ([`crate::ir::unify::unify_comps`]).
    unit_comps: Vec<u32>,
}

impl ProgramBuilder {
    /// An empty program for `data_model`.
    pub fn new(data_model: DataModel) -> ProgramBuilder {
        ProgramBuilder {
            program: Program::new(data_model),
            files: FileTable::default(),
            externs: FxHashMap::default(),
            inline_only: rustc_hash::FxHashSet::default(),
            unit_comps: Vec::new(),
        }
    }

    /// Lowers one parsed translation unit whose main file is `main_file` into the program.
    ///
    /// Errors: [`ErrorKind::Semantic`] for invalid C the lowering cannot give a meaning to
    /// (undeclared identifiers, members of non-structs, non-constant sizes, failed static
    /// assertions, redefinitions).
    pub fn lower_unit(&mut self, unit: &ParsedUnit, main_file: FileId) -> LResult<()> {
        if !self.program.inputs.contains(&main_file) {
            self.program.inputs.push(main_file);
        }
        self.unit_comps.push(self.program.types.comps.len() as u32);
        let va_list = self.va_list_type();
        let mut lower = Lower {
            pb: self,
            sm: &unit.source_map,
            scopes: vec![Scope::default()],
            fb: None,
            cur_fn: None,
            dry_run: 0,
            pending_vla: Vec::new(),
            compound_literals: 0,
            nonconst: rustc_hash::FxHashSet::default(),
        };
        lower.bind("__builtin_va_list", Symbol::Typedef(va_list));
        for ext in &unit.unit.0 {
            lower.external_declaration(ext)?;
        }
        Ok(())
    }

    /// GCC's builtin `__builtin_va_list`: `char *` on i386; on x86-64 an array of one
    /// `struct __va_list_tag { unsigned gp_offset, fp_offset; void *overflow_arg_area,
    /// *reg_save_area; }` (System V x86-64 psABI §3.5.7).
    fn va_list_type(&mut self) -> TypeId {
        let t = &mut self.program.types;
        match t.data_model {
            DataModel::Ilp32 => t.common.char_ptr,
            DataModel::Lp64 => {
                if let Some(c) = t.comps.iter().position(|c| {
                    c.tag.as_deref() == Some("__va_list_tag") && c.loc == Loc::default()
                }) {
                    let comp = t.plain(TypeKind::Comp(CompId(c as u32)));
                    return t.plain(TypeKind::Array {
                        elem: comp,
                        len: ArrayLen::Fixed(1),
                    });
                }
                let (uint, vp) = (t.common.uint, t.common.void_ptr);
                let members: Vec<MemberDecl> = [
                    ("gp_offset", uint),
                    ("fp_offset", uint),
                    ("overflow_arg_area", vp),
                    ("reg_save_area", vp),
                ]
                .into_iter()
                .map(|(n, ty)| MemberDecl {
                    name: Some(n.to_string()),
                    ty,
                    bit_width: None,
                    align: None,
                    loc: Loc::default(),
                })
                .collect();
                let laid = layout::layout(t, CompKind::Struct, &members, CompAttrs::default());
                let (fields, lay) = match laid {
                    Ok((f, l)) => (f, Some(l)),
                    Err(_) => (Vec::new(), None),
                };
                let c = t.add_comp(CompInfo {
                    tag: Some("__va_list_tag".to_string()),
                    kind: CompKind::Struct,
                    fields,
                    layout: lay,
                    loc: Loc::default(),
                });
                let comp = t.plain(TypeKind::Comp(c));
                t.plain(TypeKind::Array {
                    elem: comp,
                    len: ArrayLen::Fixed(1),
                })
            }
        }
    }

    /// The finished program, with the struct types several units define compatibly unified
    /// ([`crate::ir::unify`]).
    pub fn finish(mut self) -> Program {
        crate::ir::unify::unify_comps(&mut self.program, &self.unit_comps);
        self.program.files = self.files.names;
        self.program.unsupported.sort();
        self.program.unsupported.dedup();
        self.program
    }
}

/// Lowering state for one translation unit.
struct Lower<'a> {
    pb: &'a mut ProgramBuilder,
    sm: &'a SourceMap,
    /// Scopes, file scope first.
    scopes: Vec<Scope>,
    /// The function body being built, if inside one.
    fb: Option<FnBuilder>,
    /// The function being defined.
    cur_fn: Option<FuncId>,
    /// Nesting depth of dry runs ([`Lower::dry`]): nothing lowered inside is kept.
    dry_run: u32,
    /// Lengths of the variable-length arrays of the declarator or type name just lowered,
    /// innermost dimension first.
    pending_vla: Vec<crate::ir::Expr>,
    /// Counter naming compound literals.
    compound_literals: u32,
    /// Spans of expressions known not to be constant ([`Lower::may_be_constant`]).
    nonconst: rustc_hash::FxHashSet<(usize, usize)>,
}

impl Lower<'_> {
    fn types(&mut self) -> &mut crate::ir::TypeTable {
        &mut self.pb.program.types
    }

    /// Original location of a span's start.
    fn loc(&self, span: Span) -> Loc {
        self.sm.loc(span.start)
    }

    /// A semantic error at `loc`.
    fn error(&self, loc: Loc, message: impl Into<String>) -> FrontendError {
        FrontendError {
            kind: ErrorKind::Semantic,
            file: self
                .pb
                .files
                .names
                .get(loc.file.0 as usize)
                .cloned()
                .unwrap_or_default(),
            line: loc.line,
            col: loc.col,
            message: message.into(),
            detail: None,
        }
    }

    /// Records a construct lowered imprecisely.
    fn unsupported(&mut self, loc: Loc, what: impl Into<String>) {
        self.pb.program.unsupported.push(Unsupported {
            loc,
            what: what.into(),
        });
    }

    fn push_scope(&mut self) {
        self.scopes.push(Scope::default());
    }

    fn pop_scope(&mut self) {
        if self.scopes.len() > 1 {
            self.scopes.pop();
        }
    }

    fn lookup(&self, name: &str) -> Option<Symbol> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.names.get(name).copied())
    }

    fn lookup_tag(&self, name: &str) -> Option<Tag> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.tags.get(name).copied())
    }

    fn bind(&mut self, name: &str, sym: Symbol) {
        if let Some(s) = self.scopes.last_mut() {
            s.names.insert(name.to_string(), sym);
        }
    }

    fn bind_tag(&mut self, name: &str, tag: Tag) {
        if let Some(s) = self.scopes.last_mut() {
            s.tags.insert(name.to_string(), tag);
        }
    }
}
