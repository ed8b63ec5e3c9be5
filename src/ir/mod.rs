//! The intermediate representation every analysis runs on.
//!
//! A [`Program`] is the whole linked program: its [`Global`]s, its [`Function`]s (each with a
//! control-flow graph of simple instructions, see [`mod@cfg`]), its string literals, the interned
//! [`types`], and the source files every [`Loc`] points into. The front end
//! ([`crate::frontend`]) builds it once; later phases only read it.
//!
//! Ids are `u32` newtypes indexing the program's vectors, so they are cheap to copy, hash and
//! store in bit sets.

pub mod cfg;
pub mod deferred;
pub mod expr;
pub mod harness;
pub mod pretty;
pub mod specialise;
pub mod types;
pub mod unify;
pub mod unroll;
pub mod visit;

pub use cfg::{Callee, Cfg, Edge, EdgeId, Node, NodeId, Op};
pub use expr::{BinOp, Expr, ExprKind, Host, Lval, Proj, UnOp, Var};
pub use types::{DataModel, TypeId, TypeTable};

/// Index of a source file in [`Program::files`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct FileId(pub u32);

/// A position in the original (not preprocessed) source: file, line and column, both counted
/// from 1. Columns count bytes. Line 0 means "no position" (compiler-generated code).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Loc {
    /// Source file.
    pub file: FileId,
    /// Line, from 1.
    pub line: u32,
    /// Column in bytes, from 1.
    pub col: u32,
}

/// Index of a global variable in [`Program::globals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GlobalId(pub u32);

/// Index of a function in [`Program::functions`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FuncId(pub u32);

/// Index of a local variable in [`Function::locals`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);

/// Index of a string literal in [`Program::strings`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StrId(pub u32);

/// Linkage of a global name (C11 §6.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Linkage {
    /// Visible to other translation units (linked by name).
    External,
    /// `static` at file scope: private to its translation unit.
    Internal,
    /// No linkage: a function-local `static`, or an anonymous object such as a file-scope
    /// compound literal.
    None,
}

/// Whether a global is defined here or only declared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Storage {
    /// `extern` declaration only; the object lives in code we do not see.
    Extern,
    /// A tentative definition (`int x;` at file scope): zero-initialised.
    Tentative,
    /// A definition with an initialiser (the rest of the object is zero).
    Defined,
}

/// A value stored by a static initialiser into a sub-object.
#[derive(Clone, Debug, PartialEq)]
pub enum InitValue {
    /// A constant expression (integer, floating, address constant) of the sub-object's type.
    Expr(Expr),
    /// A string literal copied into a character array: as many of its characters as fit.
    Str(StrId),
}

/// One item of a static initialiser: the sub-object (projections from the global) and its value.
/// Items apply in order (later ones override earlier ones); everything not covered is zero.
#[derive(Clone, Debug, PartialEq)]
pub struct InitEntry {
    /// Path from the global to the initialised sub-object (field and constant index projections).
    pub proj: Vec<Proj>,
    /// The stored value.
    pub value: InitValue,
}

/// A global variable (including function-local `static` variables and file-scope compound
/// literals).
#[derive(Clone, Debug, PartialEq)]
pub struct Global {
    /// C name (for a function-local static, its name inside the function).
    pub name: String,
    /// Declared type, qualifiers included.
    pub ty: TypeId,
    /// Linkage.
    pub linkage: Linkage,
    /// Definition status.
    pub storage: Storage,
    /// `_Thread_local` / `__thread`: one instance per thread.
    pub thread_local: bool,
    /// For a function-local static, the enclosing function.
    pub function: Option<FuncId>,
    /// Static initialiser items (empty for zero-initialised and extern globals).
    pub init: Vec<InitEntry>,
    /// Where it is (first) declared.
    pub loc: Loc,
}

/// What a local variable is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LocalKind {
    /// A formal parameter.
    Param,
    /// A local variable of the source program.
    Var,
    /// A temporary introduced by lowering (for `e++`, calls in expressions, `?:`, compound
    /// literals, ...).
    Temp,
}

/// A local variable of a function (one instance per call).
#[derive(Clone, Debug, PartialEq)]
pub struct Local {
    /// C name; temporaries are named `tmp#N`.
    pub name: String,
    /// Declared type, qualifiers included.
    pub ty: TypeId,
    /// Parameter, variable or temporary.
    pub kind: LocalKind,
    /// Declaration position.
    pub loc: Loc,
}

/// A function: declaration, and body when defined.
#[derive(Clone, Debug, PartialEq)]
pub struct Function {
    /// C name.
    pub name: String,
    /// Function type (see [`types::FuncSig`]).
    pub ty: TypeId,
    /// Linkage.
    pub linkage: Linkage,
    /// Parameters, in order (indices into `locals`); empty for declarations.
    pub params: Vec<LocalId>,
    /// Parameters, variables and temporaries of the body.
    pub locals: Vec<Local>,
    /// The body; `None` for a function only declared (a library function, say).
    pub body: Option<Cfg>,
    /// Declared `_Noreturn` or `__attribute__((noreturn))`.
    pub noreturn: bool,
    /// Whether the front end declared it implicitly (a call to an undeclared function).
    pub implicit: bool,
    /// Definition position, else first declaration.
    pub loc: Loc,
    /// For a copy made for one call site ([`crate::ir::specialise`]): what it copies and
    /// where it is called; `None` for a function of the program.
    pub specialised: Option<Specialisation>,
}

/// Where a specialised copy of a function comes from ([`crate::ir::specialise`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Specialisation {
    /// The function of the program it copies.
    pub original: FuncId,
    /// The function containing its only call site.
    pub caller: FuncId,
    /// The source location of that call.
    pub call_loc: Loc,
}

impl Function {
    /// The local behind an id.
    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id.0 as usize]
    }

    /// The source location of statement `edge` of the body (the default location when there
    /// is no such statement).
    pub fn edge_loc(&self, edge: EdgeId) -> Loc {
        self.body
            .as_ref()
            .and_then(|c| c.edges.get(edge.0 as usize))
            .map(|e| e.loc)
            .unwrap_or_default()
    }
}

/// A string literal's contents.
#[derive(Clone, Debug, PartialEq)]
pub struct StringLit {
    /// The characters, encoded in the target's byte order (little-endian), terminating zero
    /// included.
    pub bytes: Vec<u8>,
    /// Element type (`char`, `wchar_t`, `char16_t`, `char32_t`).
    pub elem_ty: TypeId,
}

/// A construct the front end lowered imprecisely (inline assembly, an unknown builtin, ...).
/// Later phases turn these into `imprecision` reasons.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Unsupported {
    /// Where it is.
    pub loc: Loc,
    /// What it is, in a few words.
    pub what: String,
}

/// A whole program.
#[derive(Clone, Debug)]
pub struct Program {
    /// Source files named by [`Loc::file`], as the preprocessor's line markers name them.
    pub files: Vec<String>,
    /// The files given to racedar (the translation units' main files), as opposed to the
    /// headers they include.
    pub inputs: Vec<FileId>,
    /// All types, sizes and layouts.
    pub types: TypeTable,
    /// Global variables.
    pub globals: Vec<Global>,
    /// Functions (defined and declared).
    pub functions: Vec<Function>,
    /// String literals.
    pub strings: Vec<StringLit>,
    /// Constructs lowered imprecisely, in source order.
    pub unsupported: Vec<Unsupported>,
}

impl Program {
    /// An empty program for a data model.
    pub fn new(data_model: DataModel) -> Program {
        Program {
            files: Vec::new(),
            inputs: Vec::new(),
            types: TypeTable::new(data_model),
            globals: Vec::new(),
            functions: Vec::new(),
            strings: Vec::new(),
            unsupported: Vec::new(),
        }
    }

    /// The global behind an id.
    pub fn global(&self, id: GlobalId) -> &Global {
        &self.globals[id.0 as usize]
    }

    /// The function behind an id.
    pub fn function(&self, id: FuncId) -> &Function {
        &self.functions[id.0 as usize]
    }

    /// The function with external or internal linkage named `name` (the first one, if several
    /// translation units define internal functions of that name).
    pub fn function_by_name(&self, name: &str) -> Option<FuncId> {
        self.functions
            .iter()
            .position(|f| f.name == name && f.linkage != Linkage::None)
            .map(|i| FuncId(i as u32))
    }

    /// The file name behind a location.
    pub fn file_name(&self, loc: Loc) -> &str {
        self.files
            .get(loc.file.0 as usize)
            .map_or("<unknown>", |s| s.as_str())
    }

    /// The data model of the program.
    pub fn data_model(&self) -> DataModel {
        self.types.data_model
    }
}
