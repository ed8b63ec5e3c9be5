//! C types of the IR, interned in a [`TypeTable`], with the sizes and alignments of the two
//! SV-COMP data models.
//!
//! Every size, alignment and offset here is in **bytes**, except bit-field positions and widths,
//! which are in **bits** and say so. Types are interned: two structurally equal types have the same
//! [`TypeId`], so type equality is id equality. Struct and union layouts are computed by the front
//! end (`frontend::layout`) when a definition is complete and stored in [`CompInfo`].
//!
//! Source: C11 §6.2.5 (types), §6.7.2.1 (structure and union specifiers); the System V i386 and
//! x86-64 psABIs for ILP32 and LP64 sizes and alignments (as `gcc -m32` / `gcc -m64` lay them out).

use super::Loc;
use rustc_hash::FxHashMap;
use std::fmt::Write as _;

/// The data model: sizes of `int`, `long` and pointers (SV-COMP task option `data_model`).
///
/// `Ilp32` is the i386 System V ABI (`gcc -m32`), `Lp64` the x86-64 System V ABI (`gcc -m64`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum DataModel {
    /// `int`, `long` and pointers are 4 bytes; `long long` and `double` are 4-aligned in structs.
    Ilp32,
    /// `int` is 4 bytes, `long` and pointers 8 (the default).
    #[default]
    Lp64,
}

impl DataModel {
    /// Size of a pointer in bytes.
    pub fn pointer_size(self) -> u64 {
        match self {
            DataModel::Ilp32 => 4,
            DataModel::Lp64 => 8,
        }
    }

    /// Size in bytes of an integer kind.
    pub fn int_size(self, kind: IntKind) -> u64 {
        use IntKind::*;
        match kind {
            Bool | Char | SChar | UChar => 1,
            Short | UShort => 2,
            Int | UInt => 4,
            Long | ULong => self.pointer_size(),
            LongLong | ULongLong => 8,
            Int128 | UInt128 => 16,
        }
    }

    /// ABI alignment in bytes of an integer kind (the alignment used inside structs and by
    /// `_Alignof`; i386 aligns `long long` to 4).
    pub fn int_align(self, kind: IntKind) -> u64 {
        match (self, kind) {
            (DataModel::Ilp32, IntKind::LongLong | IntKind::ULongLong) => 4,
            _ => self.int_size(kind),
        }
    }

    /// Size in bytes of a real floating kind.
    pub fn float_size(self, kind: FloatKind) -> u64 {
        match (self, kind) {
            (_, FloatKind::Float) => 4,
            (_, FloatKind::Double) => 8,
            (DataModel::Ilp32, FloatKind::LongDouble) => 12,
            (DataModel::Lp64, FloatKind::LongDouble) => 16,
            (_, FloatKind::Float128) => 16,
        }
    }

    /// ABI alignment in bytes of a real floating kind.
    pub fn float_align(self, kind: FloatKind) -> u64 {
        match (self, kind) {
            (_, FloatKind::Float) => 4,
            (DataModel::Ilp32, FloatKind::Double | FloatKind::LongDouble) => 4,
            (DataModel::Lp64, FloatKind::Double) => 8,
            (DataModel::Lp64, FloatKind::LongDouble) => 16,
            (_, FloatKind::Float128) => 16,
        }
    }

    /// The integer kind of `size_t`.
    pub fn size_kind(self) -> IntKind {
        match self {
            DataModel::Ilp32 => IntKind::UInt,
            DataModel::Lp64 => IntKind::ULong,
        }
    }

    /// The integer kind of `ptrdiff_t`.
    pub fn ptrdiff_kind(self) -> IntKind {
        match self {
            DataModel::Ilp32 => IntKind::Int,
            DataModel::Lp64 => IntKind::Long,
        }
    }

    /// The SV-COMP spelling, `ILP32` or `LP64`.
    pub fn name(self) -> &'static str {
        match self {
            DataModel::Ilp32 => "ILP32",
            DataModel::Lp64 => "LP64",
        }
    }
}

/// Integer kinds, in C11 rank order within each signedness (§6.3.1.1). Plain `char` is signed
/// on both data models (x86).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IntKind {
    /// `_Bool`.
    Bool,
    /// Plain `char` (signed on x86).
    Char,
    /// `signed char`.
    SChar,
    /// `unsigned char`.
    UChar,
    /// `short`.
    Short,
    /// `unsigned short`.
    UShort,
    /// `int`.
    Int,
    /// `unsigned int`.
    UInt,
    /// `long`.
    Long,
    /// `unsigned long`.
    ULong,
    /// `long long`.
    LongLong,
    /// `unsigned long long`.
    ULongLong,
    /// GNU `__int128`.
    Int128,
    /// GNU `unsigned __int128`.
    UInt128,
}

impl IntKind {
    /// Whether values of this kind are signed (plain `char` is signed on x86).
    pub fn is_signed(self) -> bool {
        use IntKind::*;
        matches!(self, Char | SChar | Short | Int | Long | LongLong | Int128)
    }

    /// Integer conversion rank (C11 §6.3.1.1): 0 for `_Bool` up to 6 for `__int128`.
    pub fn rank(self) -> u8 {
        use IntKind::*;
        match self {
            Bool => 0,
            Char | SChar | UChar => 1,
            Short | UShort => 2,
            Int | UInt => 3,
            Long | ULong => 4,
            LongLong | ULongLong => 5,
            Int128 | UInt128 => 6,
        }
    }

    /// The unsigned kind of the same rank (`Bool` and `UChar` map to themselves).
    pub fn to_unsigned(self) -> IntKind {
        use IntKind::*;
        match self {
            Char | SChar => UChar,
            Short => UShort,
            Int => UInt,
            Long => ULong,
            LongLong => ULongLong,
            Int128 => UInt128,
            k => k,
        }
    }

    /// C spelling of the kind.
    pub fn c_name(self) -> &'static str {
        use IntKind::*;
        match self {
            Bool => "_Bool",
            Char => "char",
            SChar => "signed char",
            UChar => "unsigned char",
            Short => "short",
            UShort => "unsigned short",
            Int => "int",
            UInt => "unsigned int",
            Long => "long",
            ULong => "unsigned long",
            LongLong => "long long",
            ULongLong => "unsigned long long",
            Int128 => "__int128",
            UInt128 => "unsigned __int128",
        }
    }
}

/// Real floating kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FloatKind {
    /// `float`.
    Float,
    /// `double`.
    Double,
    /// `long double` (x87 extended).
    LongDouble,
    /// `_Float128` / `__float128`.
    Float128,
}

impl FloatKind {
    /// C spelling of the kind.
    pub fn c_name(self) -> &'static str {
        match self {
            FloatKind::Float => "float",
            FloatKind::Double => "double",
            FloatKind::LongDouble => "long double",
            FloatKind::Float128 => "_Float128",
        }
    }
}

/// Type qualifiers as a bit set (C11 §6.7.3, plus `_Atomic` as a qualifier).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Quals(u8);

impl Quals {
    /// No qualifier.
    pub const NONE: Quals = Quals(0);
    /// `const`.
    pub const CONST: Quals = Quals(1);
    /// `volatile`.
    pub const VOLATILE: Quals = Quals(2);
    /// `restrict`.
    pub const RESTRICT: Quals = Quals(4);
    /// `_Atomic` (as qualifier or as the `_Atomic(T)` specifier).
    pub const ATOMIC: Quals = Quals(8);

    /// Whether every qualifier of `other` is in `self`.
    pub fn contains(self, other: Quals) -> bool {
        self.0 & other.0 == other.0
    }

    /// Union of two sets.
    pub fn union(self, other: Quals) -> Quals {
        Quals(self.0 | other.0)
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    fn c_prefix(self) -> String {
        let mut s = String::new();
        for (q, name) in [
            (Quals::CONST, "const "),
            (Quals::VOLATILE, "volatile "),
            (Quals::ATOMIC, "_Atomic "),
            (Quals::RESTRICT, "restrict "),
        ] {
            if self.contains(q) {
                s.push_str(name);
            }
        }
        s
    }
}

/// Interned type handle; index into [`TypeTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TypeId(pub u32);

/// Handle of a struct or union definition; index into [`TypeTable::comps`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CompId(pub u32);

/// Length of an array type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArrayLen {
    /// A constant number of elements.
    Fixed(u64),
    /// No size given (`extern int a[];`, a flexible array member, a parameter before adjustment).
    Incomplete,
    /// A variable-length array; the length is only known at run time.
    Variable,
}

/// A function signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FuncSig {
    /// Return type.
    pub ret: TypeId,
    /// Parameter types after adjustment (arrays and functions become pointers).
    pub params: Box<[TypeId]>,
    /// Whether the parameter list ends in `...`.
    pub variadic: bool,
    /// Whether the function has a prototype (false for `int f()` and K&R definitions).
    pub prototyped: bool,
}

/// The shape of a type, without qualifiers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum TypeKind {
    /// `void`.
    Void,
    /// An integer type (enums are lowered to their compatible integer type).
    Int(IntKind),
    /// A real floating type.
    Float(FloatKind),
    /// `_Complex` of a real floating type (two consecutive parts).
    Complex(FloatKind),
    /// Pointer to the given type.
    Pointer(TypeId),
    /// Array of `elem`.
    Array {
        /// Element type.
        elem: TypeId,
        /// Number of elements.
        len: ArrayLen,
    },
    /// A function type.
    Function(FuncSig),
    /// A struct or union (see [`CompInfo`]).
    Comp(CompId),
}

/// A type: its shape plus qualifiers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Type {
    /// Shape.
    pub kind: TypeKind,
    /// Qualifiers on this level of the type (`int *const p`: const is on the pointer).
    pub quals: Quals,
}

/// Struct or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CompKind {
    /// `struct`.
    Struct,
    /// `union`.
    Union,
}

/// Position of a bit-field member.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct BitField {
    /// Bit position of the field's lowest bit, counted from the start of the byte
    /// [`Field::offset`] (0..=7).
    pub bit_offset: u32,
    /// Width in bits (0 for an unnamed `: 0` separator).
    pub width: u32,
}

/// A member of a struct or union.
#[derive(Clone, Debug, PartialEq)]
pub struct Field {
    /// Member name; `None` for an anonymous struct/union member or an unnamed bit-field.
    pub name: Option<String>,
    /// Declared type.
    pub ty: TypeId,
    /// Byte offset from the start of the enclosing struct (for a bit-field: the byte holding its
    /// first bit).
    pub offset: u64,
    /// Bit-field position and width, for bit-field members.
    pub bit_field: Option<BitField>,
}

/// Layout of a complete struct or union.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CompLayout {
    /// `sizeof`, in bytes, including trailing padding (flexible array members add nothing).
    pub size: u64,
    /// Alignment in bytes.
    pub align: u64,
}

/// A struct or union definition.
#[derive(Clone, Debug, PartialEq)]
pub struct CompInfo {
    /// Tag name; `None` for an anonymous struct or union.
    pub tag: Option<String>,
    /// Struct or union.
    pub kind: CompKind,
    /// Members in declaration order.
    pub fields: Vec<Field>,
    /// Layout; `None` while the type is incomplete (declared, not defined).
    pub layout: Option<CompLayout>,
    /// Where it is defined (or first declared, while incomplete).
    pub loc: Loc,
}

impl CompInfo {
    /// The path of member indices that reaches member `name`, looking through anonymous
    /// struct/union members (C11 §6.7.2.1p13). Empty result when there is no such member.
    pub fn field_path(&self, name: &str, types: &TypeTable) -> Vec<u32> {
        for (i, f) in self.fields.iter().enumerate() {
            match &f.name {
                Some(n) if n == name => return vec![i as u32],
                None => {
                    if let TypeKind::Comp(inner) = types.kind(f.ty) {
                        let mut sub = types.comp(*inner).field_path(name, types);
                        if !sub.is_empty() {
                            sub.insert(0, i as u32);
                            return sub;
                        }
                    }
                }
                _ => {}
            }
        }
        Vec::new()
    }
}

/// Frequently used types, interned once by [`TypeTable::new`].
#[derive(Clone, Copy, Debug)]
pub struct CommonTypes {
    /// `void`.
    pub void: TypeId,
    /// `_Bool`.
    pub bool_: TypeId,
    /// `char`.
    pub char_: TypeId,
    /// `unsigned char`.
    pub uchar: TypeId,
    /// `int`.
    pub int: TypeId,
    /// `unsigned int`.
    pub uint: TypeId,
    /// `long`.
    pub long: TypeId,
    /// `unsigned long`.
    pub ulong: TypeId,
    /// `double`.
    pub double: TypeId,
    /// `size_t` of the data model.
    pub size_t: TypeId,
    /// `ptrdiff_t` of the data model.
    pub ptrdiff_t: TypeId,
    /// `void *`.
    pub void_ptr: TypeId,
    /// `char *`.
    pub char_ptr: TypeId,
}

/// The interned types of a program and its struct/union definitions.
#[derive(Clone, Debug)]
pub struct TypeTable {
    /// Data model every size and alignment is computed for.
    pub data_model: DataModel,
    types: Vec<Type>,
    index: FxHashMap<Type, TypeId>,
    /// Struct and union definitions, indexed by [`CompId`].
    pub comps: Vec<CompInfo>,
    /// Frequently used types.
    pub common: CommonTypes,
}

impl TypeTable {
    /// An empty table for `data_model`, with the [`CommonTypes`] interned.
    pub fn new(data_model: DataModel) -> TypeTable {
        let placeholder = TypeId(0);
        let mut t = TypeTable {
            data_model,
            types: Vec::new(),
            index: FxHashMap::default(),
            comps: Vec::new(),
            common: CommonTypes {
                void: placeholder,
                bool_: placeholder,
                char_: placeholder,
                uchar: placeholder,
                int: placeholder,
                uint: placeholder,
                long: placeholder,
                ulong: placeholder,
                double: placeholder,
                size_t: placeholder,
                ptrdiff_t: placeholder,
                void_ptr: placeholder,
                char_ptr: placeholder,
            },
        };
        let void = t.plain(TypeKind::Void);
        let char_ = t.int(IntKind::Char);
        t.common = CommonTypes {
            void,
            bool_: t.int(IntKind::Bool),
            char_,
            uchar: t.int(IntKind::UChar),
            int: t.int(IntKind::Int),
            uint: t.int(IntKind::UInt),
            long: t.int(IntKind::Long),
            ulong: t.int(IntKind::ULong),
            double: t.plain(TypeKind::Float(FloatKind::Double)),
            size_t: t.int(data_model.size_kind()),
            ptrdiff_t: t.int(data_model.ptrdiff_kind()),
            void_ptr: t.pointer(void),
            char_ptr: t.pointer(char_),
        };
        t
    }

    /// Interns a type and returns its id.
    pub fn intern(&mut self, ty: Type) -> TypeId {
        if let Some(&id) = self.index.get(&ty) {
            return id;
        }
        let id = TypeId(self.types.len() as u32);
        self.types.push(ty.clone());
        self.index.insert(ty, id);
        id
    }

    /// Interns an unqualified type of the given shape.
    pub fn plain(&mut self, kind: TypeKind) -> TypeId {
        self.intern(Type {
            kind,
            quals: Quals::NONE,
        })
    }

    /// The unqualified integer type of `kind`.
    pub fn int(&mut self, kind: IntKind) -> TypeId {
        self.plain(TypeKind::Int(kind))
    }

    /// The unqualified pointer type to `target`.
    pub fn pointer(&mut self, target: TypeId) -> TypeId {
        self.plain(TypeKind::Pointer(target))
    }

    /// The type and qualifiers behind an id.
    pub fn get(&self, id: TypeId) -> &Type {
        &self.types[id.0 as usize]
    }

    /// The shape behind an id.
    pub fn kind(&self, id: TypeId) -> &TypeKind {
        &self.types[id.0 as usize].kind
    }

    /// The qualifiers of a type.
    pub fn quals(&self, id: TypeId) -> Quals {
        self.types[id.0 as usize].quals
    }

    /// `id` with exactly the qualifiers `quals`.
    pub fn with_quals(&mut self, id: TypeId, quals: Quals) -> TypeId {
        if self.quals(id) == quals {
            return id;
        }
        let kind = self.kind(id).clone();
        self.intern(Type { kind, quals })
    }

    /// `id` with its qualifiers removed.
    pub fn unqualified(&mut self, id: TypeId) -> TypeId {
        self.with_quals(id, Quals::NONE)
    }

    /// `id` with `quals` added to its qualifiers. Qualifiers on an array type apply to its
    /// elements (C11 §6.7.3p9).
    pub fn add_quals(&mut self, id: TypeId, quals: Quals) -> TypeId {
        if quals.is_empty() {
            return id;
        }
        if let TypeKind::Array { elem, len } = *self.kind(id) {
            let elem = self.add_quals(elem, quals);
            let q = self.quals(id);
            return self.intern(Type {
                kind: TypeKind::Array { elem, len },
                quals: q,
            });
        }
        let q = self.quals(id).union(quals);
        self.with_quals(id, q)
    }

    /// Whether an object of type `ty` may hold a scalar whose type satisfies `leaf`: `ty`
    /// itself, the elements of arrays and the fields of structs and unions, recursively. An
    /// incomplete struct or union (no layout) may hold anything.
    pub fn may_hold(&self, ty: TypeId, leaf: impl Fn(&TypeKind) -> bool) -> bool {
        let mut stack = vec![ty];
        let mut seen = rustc_hash::FxHashSet::default();
        while let Some(t) = stack.pop() {
            if !seen.insert(t) {
                continue;
            }
            match self.kind(t) {
                TypeKind::Array { elem, .. } => stack.push(*elem),
                TypeKind::Comp(c) => {
                    let info = self.comp(*c);
                    if info.layout.is_none() {
                        return true;
                    }
                    stack.extend(info.fields.iter().map(|f| f.ty));
                }
                k if leaf(k) => return true,
                _ => {}
            }
        }
        false
    }

    /// The definition of a struct or union.
    pub fn comp(&self, id: CompId) -> &CompInfo {
        &self.comps[id.0 as usize]
    }

    /// Replaces every struct or union type `Comp(c)` by `Comp(comp_map[c])` (ids out of range
    /// stay), re-interning the types built from them, and returns the map from each old
    /// [`TypeId`] to its new one ([`crate::ir::unify`]). A type whose id changes keeps its old
    /// entry too, with the new content, so an id nobody rewrote still has the new kind; members'
    /// types are rewritten. Types are interned children first, so one pass in id order maps
    /// every child before its parent.
    pub fn remap_comps(&mut self, comp_map: &[CompId]) -> Vec<TypeId> {
        let n = self.types.len();
        let mut map: Vec<TypeId> = Vec::with_capacity(n);
        let of = |map: &[TypeId], t: TypeId| map.get(t.0 as usize).copied().unwrap_or(t);
        for i in 0..n {
            let old = self.types[i].clone();
            let kind = match old.kind {
                TypeKind::Pointer(p) => TypeKind::Pointer(of(&map, p)),
                TypeKind::Array { elem, len } => TypeKind::Array {
                    elem: of(&map, elem),
                    len,
                },
                TypeKind::Function(sig) => TypeKind::Function(FuncSig {
                    ret: of(&map, sig.ret),
                    params: sig.params.iter().map(|p| of(&map, *p)).collect(),
                    variadic: sig.variadic,
                    prototyped: sig.prototyped,
                }),
                TypeKind::Comp(c) => {
                    TypeKind::Comp(comp_map.get(c.0 as usize).copied().unwrap_or(c))
                }
                k => k,
            };
            let id = self.intern(Type {
                kind,
                quals: old.quals,
            });
            map.push(id);
        }
        for (i, id) in map.iter().enumerate() {
            if id.0 as usize != i {
                self.types[i] = self.types[id.0 as usize].clone();
            }
        }
        for comp in &mut self.comps {
            for f in &mut comp.fields {
                f.ty = of(&map, f.ty);
            }
        }
        map
    }

    /// Adds a struct or union definition (complete or not) and returns its id.
    pub fn add_comp(&mut self, info: CompInfo) -> CompId {
        self.comps.push(info);
        CompId(self.comps.len() as u32 - 1)
    }

    /// Number of interned types.
    pub fn len(&self) -> usize {
        self.types.len()
    }

    /// Whether no type is interned (never true after [`TypeTable::new`]).
    pub fn is_empty(&self) -> bool {
        self.types.is_empty()
    }

    /// `sizeof` in bytes; `None` for `void`, functions, incomplete and variable-length types.
    pub fn size_of(&self, id: TypeId) -> Option<u64> {
        let dm = self.data_model;
        match self.kind(id) {
            TypeKind::Void | TypeKind::Function(_) => None,
            TypeKind::Int(k) => Some(dm.int_size(*k)),
            TypeKind::Float(k) => Some(dm.float_size(*k)),
            TypeKind::Complex(k) => Some(2 * dm.float_size(*k)),
            TypeKind::Pointer(_) => Some(dm.pointer_size()),
            TypeKind::Array { elem, len } => match len {
                ArrayLen::Fixed(n) => self.size_of(*elem).map(|s| s.saturating_mul(*n)),
                _ => None,
            },
            TypeKind::Comp(c) => self.comp(*c).layout.map(|l| l.size),
        }
    }

    /// ABI alignment in bytes (1 for `void`, functions and incomplete structs).
    pub fn align_of(&self, id: TypeId) -> u64 {
        let dm = self.data_model;
        match self.kind(id) {
            TypeKind::Void | TypeKind::Function(_) => 1,
            TypeKind::Int(k) => dm.int_align(*k),
            TypeKind::Float(k) | TypeKind::Complex(k) => dm.float_align(*k),
            TypeKind::Pointer(_) => dm.pointer_size(),
            TypeKind::Array { elem, .. } => self.align_of(*elem),
            TypeKind::Comp(c) => self.comp(*c).layout.map_or(1, |l| l.align),
        }
    }

    /// Whether the type is an integer type (including `_Bool` and enums).
    pub fn is_integer(&self, id: TypeId) -> bool {
        matches!(self.kind(id), TypeKind::Int(_))
    }

    /// Whether the type is arithmetic (integer, real or complex floating).
    pub fn is_arithmetic(&self, id: TypeId) -> bool {
        matches!(
            self.kind(id),
            TypeKind::Int(_) | TypeKind::Float(_) | TypeKind::Complex(_)
        )
    }

    /// Whether the type is scalar (arithmetic or pointer).
    pub fn is_scalar(&self, id: TypeId) -> bool {
        self.is_arithmetic(id) || self.is_pointer(id)
    }

    /// Whether the type is a pointer.
    pub fn is_pointer(&self, id: TypeId) -> bool {
        matches!(self.kind(id), TypeKind::Pointer(_))
    }

    /// Whether the type is a struct, union or array.
    pub fn is_aggregate(&self, id: TypeId) -> bool {
        matches!(self.kind(id), TypeKind::Comp(_) | TypeKind::Array { .. })
    }

    /// The pointed-to type of a pointer.
    pub fn pointee(&self, id: TypeId) -> Option<TypeId> {
        match self.kind(id) {
            TypeKind::Pointer(t) => Some(*t),
            _ => None,
        }
    }

    /// The integer kind of an integer type.
    pub fn int_kind(&self, id: TypeId) -> Option<IntKind> {
        match self.kind(id) {
            TypeKind::Int(k) => Some(*k),
            _ => None,
        }
    }

    /// The signature of a function type, or of a pointer to one.
    pub fn func_sig(&self, id: TypeId) -> Option<&FuncSig> {
        match self.kind(id) {
            TypeKind::Function(sig) => Some(sig),
            TypeKind::Pointer(t) => match self.kind(*t) {
                TypeKind::Function(sig) => Some(sig),
                _ => None,
            },
            _ => None,
        }
    }

    /// C spelling of the type, as in a cast: `int *`, `struct s [4]`, `int (*)(void)`.
    pub fn display(&self, id: TypeId) -> String {
        self.declare(id, "")
    }

    /// C declaration of `name` with type `id`: `int *x`, `char x[4]`, `void (*x)(int)`.
    pub fn declare(&self, id: TypeId, name: &str) -> String {
        let ty = self.get(id);
        let q = ty.quals.c_prefix();
        match &ty.kind {
            TypeKind::Pointer(t) => {
                let inner = format!("*{}{}", q, name);
                let inner = match self.kind(*t) {
                    TypeKind::Array { .. } | TypeKind::Function(_) => format!("({inner})"),
                    _ => inner,
                };
                self.declare(*t, &inner)
            }
            TypeKind::Array { elem, len } => {
                let n = match len {
                    ArrayLen::Fixed(n) => n.to_string(),
                    ArrayLen::Incomplete => String::new(),
                    ArrayLen::Variable => "*".to_string(),
                };
                self.declare(*elem, &format!("{name}[{n}]"))
            }
            TypeKind::Function(sig) => {
                let mut params = String::new();
                for (i, p) in sig.params.iter().enumerate() {
                    if i > 0 {
                        params.push_str(", ");
                    }
                    params.push_str(&self.display(*p));
                }
                if sig.variadic {
                    params.push_str(if sig.params.is_empty() {
                        "..."
                    } else {
                        ", ..."
                    });
                } else if sig.params.is_empty() && sig.prototyped {
                    params.push_str("void");
                }
                self.declare(sig.ret, &format!("{name}({params})"))
            }
            base => {
                let mut s = q;
                match base {
                    TypeKind::Void => s.push_str("void"),
                    TypeKind::Int(k) => s.push_str(k.c_name()),
                    TypeKind::Float(k) => s.push_str(k.c_name()),
                    TypeKind::Complex(k) => {
                        let _ = write!(s, "_Complex {}", k.c_name());
                    }
                    TypeKind::Comp(c) => {
                        let info = self.comp(*c);
                        let kw = match info.kind {
                            CompKind::Struct => "struct",
                            CompKind::Union => "union",
                        };
                        match &info.tag {
                            Some(tag) => {
                                let _ = write!(s, "{kw} {tag}");
                            }
                            None => {
                                let _ = write!(s, "{kw} <anon#{}>", c.0);
                            }
                        }
                    }
                    _ => {}
                }
                if !name.is_empty() {
                    s.push(' ');
                    s.push_str(name);
                }
                s
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_the_data_model() {
        let mut t = TypeTable::new(DataModel::Ilp32);
        let long = t.common.long;
        let p = t.common.void_ptr;
        let ld = t.plain(TypeKind::Float(FloatKind::LongDouble));
        assert_eq!(t.size_of(long), Some(4));
        assert_eq!(t.size_of(p), Some(4));
        assert_eq!(t.size_of(ld), Some(12));
        let mut t = TypeTable::new(DataModel::Lp64);
        let long = t.common.long;
        let ld = t.plain(TypeKind::Float(FloatKind::LongDouble));
        assert_eq!(t.size_of(long), Some(8));
        assert_eq!(t.size_of(ld), Some(16));
        assert_eq!(t.align_of(ld), 16);
    }

    #[test]
    fn interning_makes_equal_types_equal_ids() {
        let mut t = TypeTable::new(DataModel::Lp64);
        let int = t.common.int;
        let a = t.pointer(int);
        let b = t.pointer(int);
        assert_eq!(a, b);
        let c = t.add_quals(int, Quals::CONST);
        assert_ne!(c, int);
        assert_eq!(t.unqualified(c), int);
    }

    #[test]
    fn declarations_print_like_c() {
        let mut t = TypeTable::new(DataModel::Lp64);
        let int = t.common.int;
        let arr = t.plain(TypeKind::Array {
            elem: int,
            len: ArrayLen::Fixed(4),
        });
        let parr = t.pointer(arr);
        assert_eq!(t.declare(parr, "p"), "int (*p)[4]");
        let f = t.plain(TypeKind::Function(FuncSig {
            ret: int,
            params: vec![int].into(),
            variadic: false,
            prototyped: true,
        }));
        let fp = t.pointer(f);
        assert_eq!(t.declare(fp, "fp"), "int (*fp)(int)");
        assert_eq!(t.display(fp), "int (*)(int)");
    }
}
