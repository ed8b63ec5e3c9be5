//! C types from declaration specifiers and declarators (C11 §6.7.2–§6.7.7), struct, union and
//! enum definitions, and GCC attributes that change types (`packed`, `aligned`, `mode`).

use super::convert::const_int;
use super::{LResult, Lower, Symbol, Tag};
use crate::frontend::layout::{self, CompAttrs, MemberDecl};
use crate::ir::types::{
    ArrayLen, CompInfo, CompKind, FloatKind, FuncSig, IntKind, Quals, TypeKind,
};
use crate::ir::{Loc, TypeId};
use lang_c::ast;
use lang_c::span::Node;

/// GCC attributes the lowering understands.
#[derive(Clone, Debug, Default)]
pub(super) struct Attrs {
    /// `packed`.
    pub packed: bool,
    /// `aligned(N)` in bytes (`aligned` alone means 16).
    pub aligned: Option<u64>,
    /// `noreturn`.
    pub noreturn: bool,
    /// `mode(QI|HI|SI|DI|TI|word|pointer)`: integer size in bytes.
    pub mode_size: Option<u64>,
    /// The `__racedar_int128__` marker of the compatibility rewrite (`__int128`).
    pub int128: bool,
    /// The `__racedar_auto_type__` marker (`__auto_type`).
    pub auto_type: bool,
    /// `vector_size(N)` (GCC vector types; unsupported).
    pub vector: bool,
}

/// What a declarator declares: the name and its position (absent for abstract declarators),
/// the full type, and the declarator's own attributes.
pub(super) type Declared = (Option<(String, Loc)>, TypeId, Attrs);

/// Storage-class specifiers (`_Thread_local` is kept apart, in [`DeclSpecs::thread_local`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum StorageClass {
    /// `typedef`.
    Typedef,
    /// `extern`.
    Extern,
    /// `static`.
    Static,
    /// `auto` or `register`.
    Auto,
}

/// Declaration specifiers resolved.
#[derive(Clone, Debug)]
pub(super) struct DeclSpecs {
    /// Base type, qualifiers included.
    pub ty: TypeId,
    /// `typedef`, `extern`, `static`, `auto`, `register`.
    pub storage: Option<StorageClass>,
    /// `_Thread_local` / `__thread`.
    pub thread_local: bool,
    /// `_Noreturn` or `noreturn` attribute.
    pub noreturn: bool,
    /// `inline`.
    pub inline: bool,
    /// Attributes of the specifier list.
    pub attrs: Attrs,
}

/// Strips GCC's `__name__` spelling of an attribute name.
fn attr_name(name: &str) -> &str {
    name.strip_prefix("__")
        .and_then(|n| n.strip_suffix("__"))
        .unwrap_or(name)
}

impl Lower<'_> {
    /// Reads GCC attributes into `attrs`.
    pub(super) fn attributes(&mut self, exts: &[Node<ast::Extension>], attrs: &mut Attrs) {
        for ext in exts {
            let ast::Extension::Attribute(a) = &ext.node else {
                continue;
            };
            match attr_name(&a.name.node) {
                "packed" => attrs.packed = true,
                "aligned" => {
                    let n = a
                        .arguments
                        .first()
                        .and_then(|e| self.try_const(e).ok().flatten())
                        .unwrap_or(16);
                    attrs.aligned = Some(attrs.aligned.unwrap_or(1).max(n.max(1) as u64));
                }
                "racedar_alignas" => {
                    // `_Alignas(X)` rewritten by `compat` as `sizeof(X)`: the alignment of the
                    // type X, or the constant X.
                    let n = match a.arguments.first().map(|e| &e.node) {
                        Some(ast::Expression::SizeOfTy(t)) => self
                            .type_name(&t.node.0)
                            .ok()
                            .map(|ty| self.types().align_of(ty)),
                        Some(ast::Expression::SizeOfVal(v)) => self
                            .try_const(&v.node.0)
                            .ok()
                            .flatten()
                            .map(|n| n.max(1) as u64),
                        _ => None,
                    };
                    if let Some(n) = n {
                        attrs.aligned = Some(attrs.aligned.unwrap_or(1).max(n));
                    }
                }
                "noreturn" => attrs.noreturn = true,
                "racedar_int128" => attrs.int128 = true,
                "racedar_auto_type" => attrs.auto_type = true,
                "vector_size" => attrs.vector = true,
                "mode" => {
                    if let Some(Node {
                        node: ast::Expression::Identifier(id),
                        ..
                    }) = a.arguments.first()
                    {
                        let dm = self.pb.program.types.data_model;
                        attrs.mode_size = match attr_name(&id.node.name) {
                            "QI" | "byte" => Some(1),
                            "HI" => Some(2),
                            "SI" => Some(4),
                            "DI" => Some(8),
                            "TI" => Some(16),
                            "word" | "pointer" => Some(dm.pointer_size()),
                            _ => None,
                        };
                    }
                }
                _ => {}
            }
        }
    }

    /// Resolves declaration specifiers (of a declaration, function definition or parameter).
    pub(super) fn decl_specs(
        &mut self,
        specs: &[Node<ast::DeclarationSpecifier>],
    ) -> LResult<DeclSpecs> {
        use ast::DeclarationSpecifier as D;
        let mut attrs = Attrs::default();
        let mut storage = None;
        let mut thread_local = false;
        let mut noreturn = false;
        let mut inline = false;
        let mut quals = Quals::NONE;
        let mut tspecs = Vec::new();
        let mut align_spec = None;
        // Attributes written after a struct/union specifier apply to that type.
        let mut after_comp = Vec::new();
        let mut seen_comp = false;
        for s in specs {
            match &s.node {
                D::StorageClass(sc) => match &sc.node {
                    ast::StorageClassSpecifier::ThreadLocal => thread_local = true,
                    ast::StorageClassSpecifier::Typedef => storage = Some(StorageClass::Typedef),
                    ast::StorageClassSpecifier::Extern => storage = Some(StorageClass::Extern),
                    ast::StorageClassSpecifier::Static => storage = Some(StorageClass::Static),
                    ast::StorageClassSpecifier::Auto | ast::StorageClassSpecifier::Register => {
                        storage = Some(StorageClass::Auto)
                    }
                },
                D::TypeSpecifier(ts) => {
                    seen_comp |= matches!(ts.node, ast::TypeSpecifier::Struct(_));
                    tspecs.push(ts);
                }
                D::TypeQualifier(q) => quals = quals.union(qual(&q.node)),
                D::Function(f) => match f.node {
                    ast::FunctionSpecifier::Noreturn => noreturn = true,
                    ast::FunctionSpecifier::Inline => inline = true,
                },
                D::Alignment(a) => align_spec = Some(a),
                D::Extension(exts) => {
                    self.attributes(exts, &mut attrs);
                    if seen_comp {
                        after_comp.extend(exts.iter());
                    }
                }
            }
        }
        if let Some(a) = align_spec {
            let n = self.alignment_spec(a)?;
            attrs.aligned = Some(attrs.aligned.unwrap_or(1).max(n));
        }
        let mut comp_attrs = Attrs::default();
        self.attributes(
            &after_comp.into_iter().cloned().collect::<Vec<_>>(),
            &mut comp_attrs,
        );
        comp_attrs.packed |= attrs.packed;
        let ty = self.base_type(&tspecs, quals, &attrs, &comp_attrs)?;
        noreturn |= attrs.noreturn;
        Ok(DeclSpecs {
            ty,
            storage,
            thread_local,
            noreturn,
            inline,
            attrs,
        })
    }

    fn alignment_spec(&mut self, a: &Node<ast::AlignmentSpecifier>) -> LResult<u64> {
        Ok(match &a.node {
            ast::AlignmentSpecifier::Type(tn) => {
                let ty = self.type_name(tn)?;
                self.types().align_of(ty)
            }
            ast::AlignmentSpecifier::Constant(e) => self.try_const(e)?.unwrap_or(1).max(1) as u64,
        })
    }

    /// Resolves a specifier-qualifier list (of a type name or struct member).
    pub(super) fn spec_quals(
        &mut self,
        specs: &[Node<ast::SpecifierQualifier>],
    ) -> LResult<(TypeId, Attrs)> {
        use ast::SpecifierQualifier as S;
        let mut attrs = Attrs::default();
        let mut quals = Quals::NONE;
        let mut tspecs = Vec::new();
        let mut after_comp = Vec::new();
        let mut seen_comp = false;
        for s in specs {
            match &s.node {
                S::TypeSpecifier(ts) => {
                    seen_comp |= matches!(ts.node, ast::TypeSpecifier::Struct(_));
                    tspecs.push(ts);
                }
                S::TypeQualifier(q) => quals = quals.union(qual(&q.node)),
                S::Extension(exts) => {
                    self.attributes(exts, &mut attrs);
                    if seen_comp {
                        after_comp.extend(exts.iter().cloned());
                    }
                }
            }
        }
        let mut comp_attrs = Attrs::default();
        self.attributes(&after_comp, &mut comp_attrs);
        comp_attrs.packed |= attrs.packed;
        let ty = self.base_type(&tspecs, quals, &attrs, &comp_attrs)?;
        Ok((ty, attrs))
    }

    /// The type named by a type name (`int *`, `struct s [3]`).
    pub(super) fn type_name(&mut self, tn: &Node<ast::TypeName>) -> LResult<TypeId> {
        let (base, _) = self.spec_quals(&tn.node.specifiers)?;
        match &tn.node.declarator {
            Some(d) => Ok(self.declarator(base, d)?.1),
            None => Ok(base),
        }
    }

    /// Combines type specifiers into one type (C11 §6.7.2p2).
    fn base_type(
        &mut self,
        tspecs: &[&Node<ast::TypeSpecifier>],
        quals: Quals,
        attrs: &Attrs,
        comp_attrs: &Attrs,
    ) -> LResult<TypeId> {
        use ast::TypeSpecifier as T;
        let (mut void, mut char_, mut short, mut long) = (0, 0, 0, 0);
        let (mut float, mut double, mut signed, mut unsigned, mut bool_, mut complex) =
            (0, 0, 0, 0, 0, 0);
        let mut named: Option<TypeId> = None;
        for ts in tspecs {
            match &ts.node {
                T::Void => void += 1,
                T::Char => char_ += 1,
                T::Short => short += 1,
                T::Int => {}
                T::Long => long += 1,
                T::Float => float += 1,
                T::Double => double += 1,
                T::Signed => signed += 1,
                T::Unsigned => unsigned += 1,
                T::Bool => bool_ += 1,
                T::Complex => complex += 1,
                T::Atomic(tn) => {
                    let t = self.type_name(tn)?;
                    named = Some(self.types().add_quals(t, Quals::ATOMIC));
                }
                T::Struct(st) => named = Some(self.struct_type(st, comp_attrs)?),
                T::Enum(et) => named = Some(self.enum_type(et)?),
                T::TypedefName(id) => match self.lookup(&id.node.name) {
                    Some(Symbol::Typedef(t)) => named = Some(t),
                    _ => {
                        return Err(self.error(
                            self.loc(id.span),
                            format!("unknown type name '{}'", id.node.name),
                        ));
                    }
                },
                T::TypeOf(to) => {
                    named = Some(match &to.node {
                        ast::TypeOf::Expression(e) => self.type_of(e)?,
                        ast::TypeOf::Type(tn) => self.type_name(tn)?,
                    })
                }
                T::TS18661Float(f) => {
                    let k = match (f.width, &f.format) {
                        (32, ast::TS18661FloatFormat::BinaryInterchange) => FloatKind::Float,
                        (32, _) | (64, ast::TS18661FloatFormat::BinaryInterchange) => {
                            FloatKind::Double
                        }
                        (64, _) => FloatKind::LongDouble,
                        _ => FloatKind::Float128,
                    };
                    named = Some(self.types().plain(TypeKind::Float(k)));
                }
            }
        }
        let kind = if let Some(t) = named {
            let t = self.types().add_quals(t, quals);
            return Ok(self.apply_mode(t, attrs));
        } else if void > 0 {
            TypeKind::Void
        } else if bool_ > 0 {
            TypeKind::Int(IntKind::Bool)
        } else if float > 0 || double > 0 {
            let f = if float > 0 {
                FloatKind::Float
            } else if long > 0 {
                FloatKind::LongDouble
            } else {
                FloatKind::Double
            };
            if complex > 0 {
                TypeKind::Complex(f)
            } else {
                TypeKind::Float(f)
            }
        } else if complex > 0 {
            TypeKind::Complex(FloatKind::Double)
        } else {
            let k = if char_ > 0 {
                if signed > 0 {
                    IntKind::SChar
                } else if unsigned > 0 {
                    IntKind::UChar
                } else {
                    IntKind::Char
                }
            } else if short > 0 {
                IntKind::Short
            } else if long >= 2 || attrs.int128 {
                if attrs.int128 {
                    IntKind::Int128
                } else {
                    IntKind::LongLong
                }
            } else if long == 1 {
                IntKind::Long
            } else {
                // `int`, `signed`, `unsigned`, or nothing at all (implicit int).
                IntKind::Int
            };
            let k = if unsigned > 0 && k != IntKind::UChar {
                k.to_unsigned()
            } else {
                k
            };
            TypeKind::Int(k)
        };
        let t = self.types().intern(crate::ir::types::Type { kind, quals });
        Ok(self.apply_mode(t, attrs))
    }

    /// Applies `__attribute__((mode(...)))` to an integer type.
    pub(super) fn apply_mode(&mut self, ty: TypeId, attrs: &Attrs) -> TypeId {
        let Some(size) = attrs.mode_size else {
            return ty;
        };
        let Some(k) = self.types().int_kind(ty) else {
            return ty;
        };
        let dm = self.pb.program.types.data_model;
        let signed = k.is_signed();
        let candidates = [
            IntKind::SChar,
            IntKind::Short,
            IntKind::Int,
            IntKind::LongLong,
            IntKind::Int128,
        ];
        let Some(base) = candidates.into_iter().find(|c| dm.int_size(*c) == size) else {
            return ty;
        };
        let nk = if signed { base } else { base.to_unsigned() };
        let quals = self.types().quals(ty);
        self.types().intern(crate::ir::types::Type {
            kind: TypeKind::Int(nk),
            quals,
        })
    }

    /// Applies a declarator to a base type: returns the declared name (if any), the full type
    /// and the declarator's attributes (C11 §6.7.6).
    pub(super) fn declarator(
        &mut self,
        base: TypeId,
        d: &Node<ast::Declarator>,
    ) -> LResult<Declared> {
        let mut attrs = Attrs::default();
        self.attributes(&d.node.extensions, &mut attrs);
        let mut ty = base;
        // Pointers first, in source order; then array/function suffixes, innermost (leftmost)
        // last.
        let mut suffixes = Vec::new();
        for der in &d.node.derived {
            match &der.node {
                ast::DerivedDeclarator::Pointer(pq) | ast::DerivedDeclarator::Block(pq) => {
                    let mut q = Quals::NONE;
                    for p in pq {
                        match &p.node {
                            ast::PointerQualifier::TypeQualifier(tq) => q = q.union(qual(&tq.node)),
                            ast::PointerQualifier::Extension(exts) => {
                                self.attributes(exts, &mut attrs)
                            }
                        }
                    }
                    let p = self.types().pointer(ty);
                    ty = self.types().add_quals(p, q);
                }
                _ => suffixes.push(der),
            }
        }
        for der in suffixes.iter().rev() {
            ty = match &der.node {
                ast::DerivedDeclarator::Array(a) => self.array_type(ty, a)?,
                ast::DerivedDeclarator::Function(f) => self.function_type(ty, f)?,
                ast::DerivedDeclarator::KRFunction(_) => {
                    let ret = self.types().unqualified(ty);
                    self.types().plain(TypeKind::Function(FuncSig {
                        ret,
                        params: Box::new([]),
                        variadic: false,
                        prototyped: false,
                    }))
                }
                _ => ty,
            };
        }
        ty = self.apply_mode(ty, &attrs);
        match &d.node.kind.node {
            ast::DeclaratorKind::Abstract => Ok((None, ty, attrs)),
            ast::DeclaratorKind::Identifier(id) => {
                Ok((Some((id.node.name.clone(), self.loc(id.span))), ty, attrs))
            }
            ast::DeclaratorKind::Declarator(inner) => {
                let (name, ty, inner_attrs) = self.declarator(ty, inner)?;
                let mut merged = attrs;
                merged.packed |= inner_attrs.packed;
                merged.noreturn |= inner_attrs.noreturn;
                merged.aligned = merged.aligned.max(inner_attrs.aligned);
                Ok((name, ty, merged))
            }
        }
    }

    fn array_type(&mut self, elem: TypeId, a: &Node<ast::ArrayDeclarator>) -> LResult<TypeId> {
        let len = match &a.node.size {
            ast::ArraySize::Unknown => ArrayLen::Incomplete,
            ast::ArraySize::VariableUnknown => ArrayLen::Variable,
            ast::ArraySize::VariableExpression(e) | ast::ArraySize::StaticExpression(e) => {
                match self.try_const(e)? {
                    Some(n) if n < 0 => {
                        return Err(self.error(self.loc(e.span), "array has negative size"));
                    }
                    Some(n) => ArrayLen::Fixed(n as u64),
                    None => {
                        // A variable-length array: evaluate the length where the declaration
                        // is (it may have side effects) and remember it for `sizeof`.
                        if self.fb.is_some() {
                            let n = self.rvalue(e)?;
                            self.pending_vla.push(n);
                        }
                        ArrayLen::Variable
                    }
                }
            }
        };
        Ok(self.types().plain(TypeKind::Array { elem, len }))
    }

    /// Adjusts a parameter type (C11 §6.7.6.3p7–8): arrays become pointers to their element,
    /// functions pointers to functions.
    pub(super) fn adjust_param(&mut self, ty: TypeId) -> TypeId {
        match self.types().kind(ty).clone() {
            TypeKind::Array { elem, .. } => {
                let q = self.types().quals(ty);
                let p = self.types().pointer(elem);
                self.types().add_quals(p, q)
            }
            TypeKind::Function(_) => self.types().pointer(ty),
            _ => ty,
        }
    }

    fn function_type(&mut self, ret: TypeId, f: &Node<ast::FunctionDeclarator>) -> LResult<TypeId> {
        let ret = self.types().unqualified(ret);
        // Parameter VLA lengths are not kept: the parameters are pointers.
        let outer_vla = std::mem::take(&mut self.pending_vla);
        let mut params = Vec::new();
        for p in &f.node.parameters {
            let specs = self.decl_specs(&p.node.specifiers)?;
            let ty = match &p.node.declarator {
                Some(d) => self.declarator(specs.ty, d)?.1,
                None => specs.ty,
            };
            if matches!(self.types().kind(ty), TypeKind::Void) && p.node.declarator.is_none() {
                continue; // `(void)`
            }
            let adjusted = self.adjust_param(ty);
            params.push(adjusted);
        }
        self.pending_vla = outer_vla;
        Ok(self.types().plain(TypeKind::Function(FuncSig {
            ret,
            params: params.into(),
            variadic: matches!(f.node.ellipsis, ast::Ellipsis::Some),
            prototyped: true,
        })))
    }

    /// A struct or union specifier: a reference, a forward declaration or a definition.
    fn struct_type(&mut self, st: &Node<ast::StructType>, attrs: &Attrs) -> LResult<TypeId> {
        let kind = match st.node.kind.node {
            ast::StructKind::Struct => CompKind::Struct,
            ast::StructKind::Union => CompKind::Union,
        };
        let loc = self.loc(st.span);
        let tag = st.node.identifier.as_ref().map(|i| i.node.name.clone());
        let Some(decls) = &st.node.declarations else {
            // Reference or forward declaration.
            if let Some(tag) = &tag
                && let Some(Tag::Comp(c)) = self.lookup_tag(tag)
            {
                return Ok(self.types().plain(TypeKind::Comp(c)));
            }
            let c = self.types().add_comp(CompInfo {
                tag: tag.clone(),
                kind,
                fields: Vec::new(),
                layout: None,
                loc,
            });
            if let Some(tag) = &tag {
                self.bind_tag(tag, Tag::Comp(c));
            }
            return Ok(self.types().plain(TypeKind::Comp(c)));
        };
        // Definition: complete a forward declaration of this scope, or make a new type.
        let existing = tag
            .as_ref()
            .and_then(|t| match self.scopes.last()?.tags.get(t) {
                Some(Tag::Comp(c)) if self.pb.program.types.comp(*c).layout.is_none() => Some(*c),
                _ => None,
            });
        let c = match existing {
            Some(c) => c,
            None => {
                let c = self.types().add_comp(CompInfo {
                    tag: tag.clone(),
                    kind,
                    fields: Vec::new(),
                    layout: None,
                    loc,
                });
                if let Some(tag) = &tag {
                    self.bind_tag(tag, Tag::Comp(c));
                }
                c
            }
        };
        let mut members = Vec::new();
        for d in decls {
            match &d.node {
                ast::StructDeclaration::StaticAssert(sa) => self.static_assert(sa)?,
                ast::StructDeclaration::Field(f) => {
                    let (base, fattrs) = self.spec_quals(&f.node.specifiers)?;
                    let floc = self.loc(f.span);
                    if f.node.declarators.is_empty() {
                        // Anonymous struct/union member (C11 §6.7.2.1p13).
                        if matches!(self.types().kind(base), TypeKind::Comp(_)) {
                            members.push(MemberDecl {
                                name: None,
                                ty: base,
                                bit_width: None,
                                align: fattrs.aligned,
                                loc: floc,
                            });
                        }
                        continue;
                    }
                    for sd in &f.node.declarators {
                        let (name, ty, dattrs) = match &sd.node.declarator {
                            Some(decl) => self.declarator(base, decl)?,
                            None => (None, base, Attrs::default()),
                        };
                        let bit_width = match &sd.node.bit_width {
                            Some(w) => match self.try_const(w)? {
                                Some(n) if n >= 0 => Some(n as u32),
                                _ => {
                                    return Err(self.error(
                                        self.loc(w.span),
                                        "bit-field width is not a non-negative constant",
                                    ));
                                }
                            },
                            None => None,
                        };
                        if dattrs.vector || fattrs.vector {
                            self.unsupported(floc, "GCC vector type");
                        }
                        members.push(MemberDecl {
                            name: name.map(|(n, _)| n),
                            ty,
                            bit_width,
                            align: fattrs.aligned.max(dattrs.aligned),
                            loc: floc,
                        });
                    }
                }
            }
        }
        let cattrs = CompAttrs {
            packed: attrs.packed,
            align: attrs.aligned,
        };
        let (fields, lay) = layout::layout(&self.pb.program.types, kind, &members, cattrs)
            .map_err(|e| self.error(e.loc, e.message))?;
        let info = &mut self.pb.program.types.comps[c.0 as usize];
        info.fields = fields;
        info.layout = Some(lay);
        info.loc = loc;
        Ok(self.types().plain(TypeKind::Comp(c)))
    }

    /// An enum specifier: binds its constants and returns its integer type (GCC: `unsigned int`
    /// when no value is negative, `int` otherwise, wider when the values need it).
    fn enum_type(&mut self, et: &Node<ast::EnumType>) -> LResult<TypeId> {
        let tag = et.node.identifier.as_ref().map(|i| i.node.name.clone());
        if et.node.enumerators.is_empty() {
            if let Some(Tag::Enum(t)) = tag.as_deref().and_then(|t| self.lookup_tag(t)) {
                return Ok(t);
            }
            return Ok(self.pb.program.types.common.uint);
        }
        let int = self.pb.program.types.common.int;
        let mut next: i128 = 0;
        let (mut min, mut max) = (0i128, 0i128);
        let mut consts = Vec::new();
        for en in &et.node.enumerators {
            let v = match &en.node.expression {
                Some(e) => self.try_const(e)?.ok_or_else(|| {
                    self.error(
                        self.loc(e.span),
                        "enumerator value is not an integer constant",
                    )
                })?,
                None => next,
            };
            let name = en.node.identifier.node.name.clone();
            // Constants that fit in int have type int (C11 §6.7.2.2p3; GCC widens others).
            let cty = if i32::try_from(v).is_ok() {
                int
            } else if v < 0 {
                self.types().int(IntKind::LongLong)
            } else {
                self.types().int(IntKind::ULongLong)
            };
            self.bind(&name, Symbol::EnumConst(v, cty));
            consts.push(v);
            min = min.min(v);
            max = max.max(v);
            next = v + 1;
        }
        let k = if min >= 0 && max <= u32::MAX as i128 {
            IntKind::UInt
        } else if min >= i32::MIN as i128 && max <= i32::MAX as i128 {
            IntKind::Int
        } else if min >= 0 {
            IntKind::ULongLong
        } else {
            IntKind::LongLong
        };
        let ty = self.types().int(k);
        if let Some(tag) = &tag {
            self.bind_tag(tag, Tag::Enum(ty));
        }
        Ok(ty)
    }

    /// Checks a `_Static_assert`. Errors: the condition is not constant, or it is false.
    pub(super) fn static_assert(&mut self, sa: &Node<ast::StaticAssert>) -> LResult<()> {
        let loc = self.loc(sa.span);
        match self.try_const(&sa.node.expression)? {
            Some(0) => {
                let msg = super::literal::string(&sa.node.message.node)
                    .map(|(b, _)| {
                        String::from_utf8_lossy(&b[..b.len().saturating_sub(1)]).into_owned()
                    })
                    .unwrap_or_default();
                Err(self.error(loc, format!("static assertion failed: \"{msg}\"")))
            }
            Some(_) => Ok(()),
            None => Err(self.error(
                loc,
                "static assertion expression is not an integer constant",
            )),
        }
    }

    /// Dry-runs `e` and folds it to an integer constant, if it is one (no instruction emitted).
    /// Expressions that cannot be constant ([`Lower::may_be_constant`]) are not lowered at all,
    /// which keeps nested conditions linear.
    pub(super) fn try_const(&mut self, e: &Node<ast::Expression>) -> LResult<Option<i128>> {
        if !self.may_be_constant(e) {
            return Ok(None);
        }
        let (v, emitted) = self.dry(|l| l.rvalue(e))?;
        Ok(if emitted {
            None
        } else {
            const_int(&self.pb.program.types, &v)
        })
    }

    /// A syntactic over-approximation of "is an integer constant expression": false when `e`
    /// reads a variable, calls a function (other than builtins GCC folds), assigns, or contains
    /// a statement or compound literal. Negative answers are memoised per node.
    pub(super) fn may_be_constant(&mut self, e: &Node<ast::Expression>) -> bool {
        use ast::Expression as E;
        let key = (e.span.start, e.span.end);
        if key.1 > key.0 && self.nonconst.contains(&key) {
            return false;
        }
        let r = match &e.node {
            E::Identifier(id) => matches!(self.lookup(&id.node.name), Some(Symbol::EnumConst(..))),
            E::Constant(_) | E::SizeOfTy(_) | E::SizeOfVal(_) | E::AlignOf(_) | E::OffsetOf(_) => {
                true
            }
            E::GenericSelection(_) => true,
            E::StringLiteral(_) | E::CompoundLiteral(_) | E::Statement(_) | E::VaArg(_) => false,
            E::Comma(_) => false,
            E::Call(c) => match &c.node.callee.node {
                E::Identifier(id) => {
                    matches!(
                        id.node.name.as_str(),
                        "__builtin_constant_p" | "__builtin_choose_expr" | "__builtin_expect"
                    ) && self.lookup(&id.node.name).is_none()
                }
                _ => false,
            },
            E::Member(m) => self.may_be_constant(&m.node.expression),
            E::UnaryOperator(u) => match u.node.operator.node {
                ast::UnaryOperator::PreIncrement
                | ast::UnaryOperator::PreDecrement
                | ast::UnaryOperator::PostIncrement
                | ast::UnaryOperator::PostDecrement => false,
                _ => self.may_be_constant(&u.node.operand),
            },
            E::Cast(c) => self.may_be_constant(&c.node.expression),
            E::BinaryOperator(b) => {
                use ast::BinaryOperator as B;
                match b.node.operator.node {
                    B::Assign
                    | B::AssignMultiply
                    | B::AssignDivide
                    | B::AssignModulo
                    | B::AssignPlus
                    | B::AssignMinus
                    | B::AssignShiftLeft
                    | B::AssignShiftRight
                    | B::AssignBitwiseAnd
                    | B::AssignBitwiseXor
                    | B::AssignBitwiseOr => false,
                    // `0 && x` and `1 || x` are constant whatever x is.
                    B::LogicalAnd | B::LogicalOr => self.may_be_constant(&b.node.lhs),
                    _ => self.may_be_constant(&b.node.lhs) && self.may_be_constant(&b.node.rhs),
                }
            }
            E::Conditional(c) => {
                self.may_be_constant(&c.node.condition)
                    && (self.may_be_constant(&c.node.then_expression)
                        || self.may_be_constant(&c.node.else_expression))
            }
        };
        if !r && key.1 > key.0 {
            self.nonconst.insert(key);
        }
        r
    }

    /// Runs `f` without keeping anything it emits (nodes, edges, locals, strings); returns its
    /// result and whether it emitted an instruction.
    pub(super) fn dry<T>(&mut self, f: impl FnOnce(&mut Self) -> LResult<T>) -> LResult<(T, bool)> {
        let scratch = self.fb.is_none();
        if scratch {
            let void = self.pb.program.types.common.void;
            self.fb = Some(super::builder::FnBuilder::new(void));
        }
        let mark = self.fb.as_ref().map(|b| b.mark());
        let strings = self.pb.program.strings.len();
        let unsupported = self.pb.program.unsupported.len();
        let pending = std::mem::take(&mut self.pending_vla);
        self.dry_run += 1;
        let r = f(self);
        self.dry_run -= 1;
        self.pending_vla = pending;
        let mut emitted = false;
        if let (Some(b), Some(m)) = (self.fb.as_mut(), mark) {
            emitted = b.emitted_since(m);
            b.rollback(m);
        }
        self.pb.program.strings.truncate(strings);
        self.pb.program.unsupported.truncate(unsupported);
        if scratch {
            self.fb = None;
        }
        Ok((r?, emitted))
    }
}
/// A type qualifier keyword as a [`Quals`] bit.
fn qual(q: &ast::TypeQualifier) -> Quals {
    match q {
        ast::TypeQualifier::Const => Quals::CONST,
        ast::TypeQualifier::Volatile => Quals::VOLATILE,
        ast::TypeQualifier::Restrict => Quals::RESTRICT,
        ast::TypeQualifier::Atomic => Quals::ATOMIC,
        _ => Quals::NONE,
    }
}
