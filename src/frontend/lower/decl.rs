//! Declarations: typedefs, globals (linkage, tentative definitions, static initialisers),
//! functions (declarations and definitions, K&R parameters) and block-scope variables.

use super::builder::FnBuilder;
use super::ctypes::{DeclSpecs, StorageClass};
use super::init::InitRef;
use super::{LResult, Lower, Symbol};
use crate::ir::cfg::Op;
use crate::ir::expr::Expr;
use crate::ir::types::{ArrayLen, FuncSig, TypeKind};
use crate::ir::{FuncId, Function, Global, GlobalId, Linkage, Loc, LocalKind, Storage, TypeId};
use lang_c::ast;
use lang_c::span::Node;

/// The name declared by a declarator, if any.
fn declarator_name(d: &ast::Declarator) -> Option<&str> {
    match &d.kind.node {
        ast::DeclaratorKind::Identifier(id) => Some(&id.node.name),
        ast::DeclaratorKind::Declarator(inner) => declarator_name(&inner.node),
        ast::DeclaratorKind::Abstract => None,
    }
}

/// The parameter list of the function a definition's declarator declares: the suffix applied
/// last, i.e. the first array or function suffix found going outwards from the name
/// (`int (*f(int a))(void)` gives `(int a)`; `int (f)(int a)` gives `(int a)`).
fn own_params(d: &ast::Declarator) -> Option<&ast::DerivedDeclarator> {
    let here = || {
        d.derived
            .iter()
            .map(|x| &x.node)
            .find(|x| !matches!(x, ast::DerivedDeclarator::Pointer(_)))
    };
    match &d.kind.node {
        ast::DeclaratorKind::Declarator(inner) => own_params(&inner.node).or_else(here),
        _ => here(),
    }
}

impl Lower<'_> {
    /// Lowers a top-level declaration, static assertion or function definition.
    pub(super) fn external_declaration(
        &mut self,
        ext: &Node<ast::ExternalDeclaration>,
    ) -> LResult<()> {
        match &ext.node {
            ast::ExternalDeclaration::Declaration(d) => self.declaration(d),
            ast::ExternalDeclaration::StaticAssert(sa) => self.static_assert(sa),
            ast::ExternalDeclaration::FunctionDefinition(fd) => self.function_definition(fd),
        }
    }

    /// Lowers a declaration at file or block scope.
    pub(super) fn declaration(&mut self, d: &Node<ast::Declaration>) -> LResult<()> {
        let specs = self.decl_specs(&d.node.specifiers)?;
        for id in &d.node.declarators {
            self.pending_vla.clear();
            let (name, ty, dattrs) = self.declarator(specs.ty, &id.node.declarator)?;
            let Some((name, loc)) = name else {
                continue;
            };
            if specs.storage == Some(StorageClass::Typedef) {
                self.bind(&name, Symbol::Typedef(ty));
                continue;
            }
            let ty = if specs.attrs.auto_type {
                match &id.node.initializer {
                    Some(Node {
                        node: ast::Initializer::Expression(e),
                        ..
                    }) => {
                        let t = self.type_of(e)?;
                        super::convert::rvalue_type(self.types(), t)
                    }
                    _ => return Err(self.error(loc, "'__auto_type' requires an initializer")),
                }
            } else {
                ty
            };
            if matches!(self.types().kind(ty), TypeKind::Function(_)) {
                let internal = specs.storage == Some(StorageClass::Static);
                let noreturn = specs.noreturn || dattrs.noreturn;
                self.declare_function(&name, ty, internal, noreturn, loc);
                continue;
            }
            let init = id.node.initializer.as_ref().map(InitRef::of);
            if self.scopes.len() == 1 {
                self.declare_global(&name, ty, &specs, init, loc)?;
            } else {
                self.declare_block_var(&name, ty, &specs, init, loc)?;
            }
        }
        Ok(())
    }

    /// Declares (or re-declares) a function; returns its id.
    fn declare_function(
        &mut self,
        name: &str,
        ty: TypeId,
        internal: bool,
        noreturn: bool,
        loc: Loc,
    ) -> FuncId {
        let existing = match self.scopes.first().and_then(|s| s.names.get(name)) {
            Some(Symbol::Func(f)) => Some(*f),
            _ if !internal => match self.pb.externs.get(name) {
                Some(Symbol::Func(f)) => Some(*f),
                _ => None,
            },
            _ => None,
        };
        let f = match existing {
            Some(f) => {
                let func = &mut self.pb.program.functions[f.0 as usize];
                let prototyped = |t: &crate::ir::TypeTable, ty: TypeId| {
                    t.func_sig(ty)
                        .is_some_and(|s| s.prototyped || !s.params.is_empty())
                };
                let types = &self.pb.program.types;
                if func.implicit || (!prototyped(types, func.ty) && prototyped(types, ty)) {
                    func.ty = ty;
                }
                if func.implicit {
                    func.implicit = false;
                    func.loc = loc;
                }
                func.noreturn |= noreturn;
                f
            }
            None => {
                self.pb.program.functions.push(Function {
                    name: name.to_string(),
                    ty,
                    linkage: if internal {
                        Linkage::Internal
                    } else {
                        Linkage::External
                    },
                    params: Vec::new(),
                    locals: Vec::new(),
                    body: None,
                    noreturn,
                    implicit: false,
                    loc,
                    specialised: None,
                });
                let f = FuncId(self.pb.program.functions.len() as u32 - 1);
                if !internal {
                    self.pb.externs.insert(name.to_string(), Symbol::Func(f));
                }
                if let Some(s) = self.scopes.first_mut() {
                    s.names.insert(name.to_string(), Symbol::Func(f));
                }
                f
            }
        };
        self.bind(name, Symbol::Func(f));
        f
    }

    /// The global named `name` visible at file scope (of this unit, or external), if any.
    fn find_global(&self, name: &str, internal: bool) -> Option<GlobalId> {
        match self.scopes.first().and_then(|s| s.names.get(name)) {
            Some(Symbol::Global(g)) => Some(*g),
            _ if !internal => match self.pb.externs.get(name) {
                Some(Symbol::Global(g)) => Some(*g),
                _ => None,
            },
            _ => None,
        }
    }

    /// A new, only declared (`Storage::Extern`) global; external ones are entered in the
    /// program-wide name table.
    fn new_extern_global(
        &mut self,
        name: &str,
        ty: TypeId,
        linkage: Linkage,
        thread_local: bool,
        loc: Loc,
    ) -> GlobalId {
        self.pb.program.globals.push(Global {
            name: name.to_string(),
            ty,
            linkage,
            storage: Storage::Extern,
            thread_local,
            function: None,
            init: Vec::new(),
            loc,
        });
        let g = GlobalId(self.pb.program.globals.len() as u32 - 1);
        if linkage == Linkage::External {
            self.pb.externs.insert(name.to_string(), Symbol::Global(g));
        }
        g
    }

    /// Declares or defines a file-scope variable.
    fn declare_global(
        &mut self,
        name: &str,
        ty: TypeId,
        specs: &DeclSpecs,
        init: Option<InitRef>,
        loc: Loc,
    ) -> LResult<GlobalId> {
        let internal = specs.storage == Some(StorageClass::Static);
        let is_extern = specs.storage == Some(StorageClass::Extern);
        // Declared by an earlier unit of the program (linked by name, not yet seen here)?
        let other_unit = !internal
            && !matches!(
                self.scopes.first().and_then(|s| s.names.get(name)),
                Some(Symbol::Global(_))
            )
            && self.find_global(name, false).is_some();
        if other_unit && let Some(g) = self.find_global(name, false) {
            let old = self.pb.program.global(g).ty;
            let (a, b) = (self.types().size_of(old), self.types().size_of(ty));
            if let (Some(a), Some(b)) = (a, b)
                && a != b
            {
                self.unsupported(
                    loc,
                    format!("'{name}' declared with types of different sizes in two units"),
                );
            }
            if init.is_some() && self.pb.program.global(g).storage == Storage::Defined {
                self.unsupported(
                    loc,
                    format!("'{name}' defined in two units (the first kept)"),
                );
                if let Some(s) = self.scopes.first_mut() {
                    s.names.insert(name.to_string(), Symbol::Global(g));
                }
                return Ok(g);
            }
        }
        let g = match self.find_global(name, internal) {
            Some(g) => g,
            None => {
                let linkage = if internal {
                    Linkage::Internal
                } else {
                    Linkage::External
                };
                self.new_extern_global(name, ty, linkage, specs.thread_local, loc)
            }
        };
        if let Some(s) = self.scopes.first_mut() {
            s.names.insert(name.to_string(), Symbol::Global(g));
        }
        // Merge: complete an array type, record the definition.
        {
            let old_ty = self.pb.program.global(g).ty;
            if matches!(
                self.types().kind(old_ty),
                TypeKind::Array {
                    len: ArrayLen::Incomplete,
                    ..
                }
            ) || self.pb.program.global(g).storage == Storage::Extern
            {
                self.pb.program.globals[g.0 as usize].ty = ty;
            }
            let gl = &mut self.pb.program.globals[g.0 as usize];
            gl.thread_local |= specs.thread_local;
            if !is_extern && gl.storage == Storage::Extern {
                gl.storage = Storage::Tentative;
                gl.loc = loc;
            }
        }
        if let Some(init) = init {
            if self.pb.program.global(g).storage == Storage::Defined {
                return Err(self.error(loc, format!("redefinition of '{name}'")));
            }
            let cur_ty = self.pb.program.global(g).ty;
            let (ty, items) = self.initializer(cur_ty, init)?;
            let entries = self.static_init(items);
            let gl = &mut self.pb.program.globals[g.0 as usize];
            gl.ty = ty;
            gl.init = entries;
            gl.storage = Storage::Defined;
            gl.loc = loc;
        }
        Ok(g)
    }

    /// Declares a block-scope variable: `static` ones become globals, `extern` ones refer to one,
    /// others are locals initialised in place.
    fn declare_block_var(
        &mut self,
        name: &str,
        ty: TypeId,
        specs: &DeclSpecs,
        init: Option<InitRef>,
        loc: Loc,
    ) -> LResult<()> {
        match specs.storage {
            Some(StorageClass::Extern) => {
                let g = match self.find_global(name, false) {
                    Some(g) => g,
                    None => {
                        self.new_extern_global(name, ty, Linkage::External, specs.thread_local, loc)
                    }
                };
                self.bind(name, Symbol::Global(g));
            }
            Some(StorageClass::Static) => {
                // Static storage: the initialiser must be constant; lower it outside the body.
                let fb = self.fb.take();
                let r = match init {
                    Some(init) => self.initializer(ty, init),
                    None => Ok((ty, Vec::new())),
                };
                self.fb = fb;
                let (ty, items) = r?;
                let has_init = init.is_some();
                let entries = self.static_init(items);
                self.pb.program.globals.push(Global {
                    name: name.to_string(),
                    ty,
                    linkage: Linkage::None,
                    storage: if has_init {
                        Storage::Defined
                    } else {
                        Storage::Tentative
                    },
                    thread_local: specs.thread_local,
                    function: self.cur_fn,
                    init: entries,
                    loc,
                });
                let g = GlobalId(self.pb.program.globals.len() as u32 - 1);
                self.bind(name, Symbol::Global(g));
            }
            _ => {
                // Keep VLA lengths as evaluated at the declaration.
                let mut lengths = Vec::new();
                for n in std::mem::take(&mut self.pending_vla) {
                    let n = if matches!(n.kind, crate::ir::ExprKind::Int(_)) {
                        n
                    } else {
                        self.materialise(n, loc)?
                    };
                    lengths.push(n);
                }
                let Some(fb) = self.fb.as_mut() else {
                    return Err(self.error(loc, "block-scope variable outside a function"));
                };
                let l = fb.add_local(name.to_string(), ty, LocalKind::Var, loc);
                if !lengths.is_empty() {
                    fb.vla_lengths.insert(l, lengths);
                }
                self.bind(name, Symbol::Local(l));
                if specs.thread_local {
                    self.unsupported(loc, "_Thread_local block-scope variable without static");
                }
                if let Some(init) = init {
                    self.init_local(l, ty, init, loc)?;
                }
            }
        }
        Ok(())
    }

    /// Lowers a function definition into a CFG.
    fn function_definition(&mut self, fd: &Node<ast::FunctionDefinition>) -> LResult<()> {
        let specs = self.decl_specs(&fd.node.specifiers)?;
        let (name, fty, dattrs) = self.declarator(specs.ty, &fd.node.declarator)?;
        let Some((name, loc)) = name else {
            return Err(self.error(self.loc(fd.span), "function definition without a name"));
        };
        let Some(sig) = self.types().func_sig(fty).cloned() else {
            return Err(self.error(
                loc,
                format!("'{name}' is defined like a function but is not one"),
            ));
        };
        // Parameter names (and K&R types).
        let mut names: Vec<(Option<String>, Loc)> = Vec::new();
        let mut fty = fty;
        match own_params(&fd.node.declarator.node) {
            Some(ast::DerivedDeclarator::Function(f)) => {
                for p in &f.node.parameters {
                    let n = p
                        .node
                        .declarator
                        .as_ref()
                        .and_then(|d| declarator_name(&d.node));
                    let ploc = p.node.declarator.as_ref().map_or(loc, |d| self.loc(d.span));
                    names.push((n.map(str::to_string), ploc));
                }
                if names.len() != sig.params.len() {
                    names.retain(|(n, _)| n.is_some()); // `(void)`
                }
            }
            Some(ast::DerivedDeclarator::KRFunction(ids)) => {
                let mut declared = rustc_hash::FxHashMap::default();
                for d in &fd.node.declarations {
                    let dspecs = self.decl_specs(&d.node.specifiers)?;
                    for id in &d.node.declarators {
                        let (n, t, _) = self.declarator(dspecs.ty, &id.node.declarator)?;
                        if let Some((n, _)) = n {
                            declared.insert(n, t);
                        }
                    }
                }
                let int = self.pb.program.types.common.int;
                let mut params = Vec::new();
                for id in ids {
                    let t = declared.get(&id.node.name).copied().unwrap_or(int);
                    params.push(self.adjust_param(t));
                    names.push((Some(id.node.name.clone()), self.loc(id.span)));
                }
                fty = self.types().plain(TypeKind::Function(FuncSig {
                    ret: sig.ret,
                    params: params.into(),
                    variadic: false,
                    prototyped: false,
                }));
            }
            _ => {}
        }
        let sig = self.types().func_sig(fty).cloned().unwrap_or(sig);
        let internal = specs.storage == Some(StorageClass::Static);
        let f = self.declare_function(&name, fty, internal, specs.noreturn || dattrs.noreturn, loc);
        // An `extern inline` definition (GNU inline-only, as glibc's fortify wrappers) may be
        // repeated or replaced by a real definition; the first real one wins.
        let inline_only = specs.inline && specs.storage == Some(StorageClass::Extern);
        if self.pb.program.function(f).body.is_some() {
            if inline_only {
                return Ok(());
            }
            if !self.pb.inline_only.remove(&f) {
                return Err(self.error(loc, format!("redefinition of '{name}'")));
            }
        } else if inline_only {
            self.pb.inline_only.insert(f);
        }
        // The definition's type wins over earlier declarations.
        self.pb.program.functions[f.0 as usize].ty = fty;
        self.pb.program.functions[f.0 as usize].loc = loc;

        let mut fb = FnBuilder::new(sig.ret);
        self.push_scope();
        let mut params = Vec::new();
        for (i, ty) in sig.params.iter().enumerate() {
            let (pname, ploc) = names.get(i).cloned().unwrap_or((None, loc));
            let l = fb.add_local(
                pname.clone().unwrap_or_else(|| format!("param#{i}")),
                *ty,
                LocalKind::Param,
                ploc,
            );
            params.push(l);
            if let Some(n) = pname {
                self.bind(&n, Symbol::Local(l));
            }
        }
        let outer_fb = self.fb.replace(fb);
        let outer_fn = self.cur_fn.replace(f);
        let result = self.function_body(fd, &name, sig.ret);
        let fb = std::mem::replace(&mut self.fb, outer_fb);
        self.cur_fn = outer_fn;
        self.pop_scope();
        result?;
        let Some(fb) = fb else {
            return Err(self.error(loc, "internal: lost function body"));
        };
        if let Some((label, lloc)) = fb.undefined_label() {
            return Err(self.error(lloc, format!("use of undeclared label '{label}'")));
        }
        let (locals, cfg) = fb.finish();
        let func = &mut self.pb.program.functions[f.0 as usize];
        func.params = params;
        func.locals = locals;
        func.body = Some(cfg);
        Ok(())
    }

    fn function_body(
        &mut self,
        fd: &Node<ast::FunctionDefinition>,
        name: &str,
        ret: TypeId,
    ) -> LResult<()> {
        self.stmt(&fd.node.statement)?;
        // Falling off the end returns (0 from `main`, C11 §5.1.2.2.3).
        let end = self.loc(lang_c::span::Span {
            start: fd.span.end.saturating_sub(1),
            end: fd.span.end,
        });
        let value = (name == "main" && self.types().is_integer(ret)).then(|| Expr::int(0, ret));
        if let Some(fb) = self.fb.as_mut() {
            let exit = fb.exit;
            let cur = fb.cur;
            fb.edge(cur, exit, Op::Return(value), end);
        }
        Ok(())
    }
}
