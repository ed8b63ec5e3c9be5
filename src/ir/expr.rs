//! Side-effect-free expressions and lvalues of the IR.
//!
//! After lowering, an expression never writes memory, calls a function or branches: every `++`,
//! assignment, call, `&&`/`||`/`?:` and comma has become an instruction of the CFG (see
//! [`crate::ir::cfg::Op`]). Expressions are typed trees in the style of CIL (Necula et al., "CIL:
//! Intermediate Language and Tools for Analysis and Transformation of C Programs", CC 2002):
//! an [`Lval`] is a *host* (a variable or a dereferenced pointer) followed by a path of field and
//! index projections, so the memory accessed is read off as base + offset.
//!
//! Every implicit conversion of C (integer promotion, usual arithmetic conversions, assignment
//! conversion, array and function decay) is explicit: a [`ExprKind::Cast`] or an
//! [`ExprKind::AddrOf`] of element 0.

use super::types::{CompId, TypeId};
use super::{FuncId, GlobalId, LocalId, StrId};

/// A typed, side-effect-free expression.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    /// The expression.
    pub kind: ExprKind,
    /// Its type (unqualified for rvalues).
    pub ty: TypeId,
}

/// Expression forms.
#[derive(Clone, Debug, PartialEq)]
pub enum ExprKind {
    /// Integer constant, already converted to `ty` (wrapped to its width).
    Int(i128),
    /// Floating constant.
    Float(f64),
    /// Address of the first character of a string literal (type `char *` or `wchar_t *`).
    Str(StrId),
    /// Read of the value stored in an lvalue (a memory read access).
    Load(Box<Lval>),
    /// Address of an lvalue (no memory access).
    AddrOf(Box<Lval>),
    /// Address of a function (a function designator after decay).
    Func(FuncId),
    /// Unary operator.
    Unary(UnOp, Box<Expr>),
    /// Binary operator; both operands already converted as C requires.
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// Conversion of the operand to `ty`.
    Cast(Box<Expr>),
    /// A value the front end could not model (an unsupported construct; recorded in
    /// [`crate::ir::Program::unsupported`]). Any value of `ty`.
    Unknown,
}

/// Unary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    /// Arithmetic negation `-e`.
    Neg,
    /// Bitwise complement `~e`.
    BitNot,
    /// Logical negation `!e` (result `int` 0 or 1).
    LogNot,
}

/// Binary operators. Comparisons yield `int` 0 or 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    /// `+` on arithmetic operands.
    Add,
    /// `-` on arithmetic operands.
    Sub,
    /// `*`.
    Mul,
    /// `/`.
    Div,
    /// `%`.
    Rem,
    /// `<<`.
    Shl,
    /// `>>`.
    Shr,
    /// `&`.
    BitAnd,
    /// `|`.
    BitOr,
    /// `^`.
    BitXor,
    /// `<`.
    Lt,
    /// `>`.
    Gt,
    /// `<=`.
    Le,
    /// `>=`.
    Ge,
    /// `==`.
    Eq,
    /// `!=`.
    Ne,
    /// Pointer plus integer; the integer counts elements of the pointee type.
    PtrAdd,
    /// Pointer minus integer; the integer counts elements of the pointee type.
    PtrSub,
    /// Pointer minus pointer: the distance in elements (type `ptrdiff_t`).
    PtrDiff,
}

impl BinOp {
    /// The comparison with its operands swapped (`a < b` is `b > a`); other operators are
    /// returned as they are.
    pub fn mirrored(self) -> BinOp {
        match self {
            BinOp::Lt => BinOp::Gt,
            BinOp::Gt => BinOp::Lt,
            BinOp::Le => BinOp::Ge,
            BinOp::Ge => BinOp::Le,
            o => o,
        }
    }

    /// The comparison that holds exactly when this one fails (`None` for other operators).
    pub fn negated(self) -> Option<BinOp> {
        Some(match self {
            BinOp::Lt => BinOp::Ge,
            BinOp::Ge => BinOp::Lt,
            BinOp::Gt => BinOp::Le,
            BinOp::Le => BinOp::Gt,
            BinOp::Eq => BinOp::Ne,
            BinOp::Ne => BinOp::Eq,
            _ => return None,
        })
    }

    /// C spelling of the operator.
    pub fn c_str(self) -> &'static str {
        use BinOp::*;
        match self {
            Add | PtrAdd => "+",
            Sub | PtrSub | PtrDiff => "-",
            Mul => "*",
            Div => "/",
            Rem => "%",
            Shl => "<<",
            Shr => ">>",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Lt => "<",
            Gt => ">",
            Le => "<=",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
        }
    }

    /// Whether the operator is a comparison (result `int` 0/1).
    pub fn is_comparison(self) -> bool {
        use BinOp::*;
        matches!(self, Lt | Gt | Le | Ge | Eq | Ne)
    }
}

/// A variable: global (including function-local `static`) or local of a function instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Var {
    /// A global variable.
    Global(GlobalId),
    /// A local variable or parameter of the enclosing function.
    Local(LocalId),
}

/// Where an lvalue starts.
#[derive(Clone, Debug, PartialEq)]
pub enum Host {
    /// A named variable.
    Var(Var),
    /// The object a pointer points to (`*e`, `e->f`, `e[i]` for pointer `e`).
    Deref(Box<Expr>),
}

/// One step from an object to a sub-object.
#[derive(Clone, Debug, PartialEq)]
pub enum Proj {
    /// Member `index` of the struct or union `comp`.
    Field {
        /// The struct or union.
        comp: CompId,
        /// Index into [`crate::ir::types::CompInfo::fields`].
        index: u32,
    },
    /// Element of an array object (the index counts elements).
    Index(Box<Expr>),
}

/// An lvalue: a host followed by projections, with the type of the designated object
/// (qualifiers included: an `_Atomic` or `volatile` object shows here).
#[derive(Clone, Debug, PartialEq)]
pub struct Lval {
    /// Where the lvalue starts.
    pub host: Host,
    /// Field and index projections from the host, outermost first.
    pub proj: Vec<Proj>,
    /// Type of the designated object.
    pub ty: TypeId,
}

impl Lval {
    /// The lvalue naming variable `var` of type `ty`.
    pub fn var(var: Var, ty: TypeId) -> Lval {
        Lval {
            host: Host::Var(var),
            proj: Vec::new(),
            ty,
        }
    }
}

impl Expr {
    /// An integer constant of type `ty`.
    pub fn int(value: i128, ty: TypeId) -> Expr {
        Expr {
            kind: ExprKind::Int(value),
            ty,
        }
    }

    /// The constant integer value, if this is an integer constant.
    pub fn as_int(&self) -> Option<i128> {
        match self.kind {
            ExprKind::Int(v) => Some(v),
            _ => None,
        }
    }
}
