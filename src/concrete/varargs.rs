//! Variadic functions in concrete executions (ISO C11 §7.16, `<stdarg.h>`): the arguments after
//! a variadic function's named parameters, `va_start`/`va_arg`/`va_copy`/`va_end` (which the
//! front end lowers to calls of GCC's `__builtin_va_*`), and the `va_list` a `v*printf`
//! function formats from ([`FormatArgs`]).
//!
//! The arguments after the named ones are laid out as the System V ABIs pass them on the
//! stack, in an *argument area* the call allocates and the return frees: each argument (already
//! promoted by the caller, C11 §6.5.2.2p7) in its own slot of a multiple of [`slot`] bytes.
//! A `va_list` holds the address of the next slot, where the ABI keeps it: on x86-64 in the
//! `overflow_arg_area` member of `struct __va_list_tag` (psABI §3.5.7; `gp_offset` and
//! `fp_offset` say every register argument is consumed), on i386 in the `char *` itself. So a
//! `va_list` can be copied, passed to another function, and read by it, as in a real run.
//!
//! Reading past the last argument stops the execution (undefined behaviour, C11 §7.16.1.1p2).
//! The argument area and `va_list` objects are the thread's own: their accesses are not recorded.

use super::Stop;
use super::interp::{Acc, Machine};
use super::memory::Origin;
use super::value::{self, Repr, Val, int_value, trunc};
use crate::ir::types::DataModel;
use crate::ir::{Expr, ExprKind, Lval, TypeId};

/// Offset of `overflow_arg_area` in x86-64's `struct __va_list_tag` (bytes).
const OVERFLOW_AREA: u64 = 8;
/// Bytes of x86-64's `struct __va_list_tag`.
const VA_LIST_TAG: u64 = 24;
/// `gp_offset` and `fp_offset` once the 6 general and 8 vector registers are consumed
/// (psABI §3.5.7: 6 × 8 and 48 + 8 × 16).
const GP_CONSUMED: u32 = 48;
const FP_CONSUMED: u32 = 176;

/// The `<stdarg.h>` builtin a function name is, if any.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Builtin {
    /// `va_start(ap, last)`.
    Start,
    /// `va_arg(ap, T)`, lowered to a call whose destination has type `T`.
    Arg,
    /// `va_copy(dst, src)`.
    Copy,
    /// `va_end(ap)`.
    End,
}

impl Builtin {
    /// The builtin called `name`.
    pub(super) fn of(name: &str) -> Option<Builtin> {
        Some(match name {
            "__builtin_va_start" | "__builtin_stdarg_start" => Builtin::Start,
            "__builtin_va_arg" => Builtin::Arg,
            "__builtin_va_copy" | "__va_copy" => Builtin::Copy,
            "__builtin_va_end" => Builtin::End,
            _ => return None,
        })
    }
}

/// Bytes of one stack slot: 8 on x86-64, 4 on i386 (an argument takes a multiple of it).
fn slot(dm: DataModel) -> u64 {
    dm.pointer_size()
}

/// `n` rounded up to a multiple of the slot.
fn slots(dm: DataModel, n: u64) -> u64 {
    n.div_ceil(slot(dm)).max(1) * slot(dm)
}

impl Machine<'_> {
    /// Allocates the argument area of a call of a variadic function: the arguments after the
    /// named parameters (value and type), each in its own slots. Returns the area's address.
    ///
    /// Errors: an argument of unknown size or representation.
    pub(super) fn argument_area(&mut self, extra: &[(Val, TypeId)]) -> Result<u64, Stop> {
        let dm = self.p.types.data_model;
        let mut bytes = Vec::new();
        for (v, ty) in extra {
            let size = self
                .p
                .types
                .size_of(*ty)
                .ok_or_else(|| Stop::new("variadic argument of unknown size"))?;
            let mut b = value::encode(v, self.repr(*ty)?, size)?;
            b.resize(slots(dm, size) as usize, 0);
            bytes.extend_from_slice(&b);
        }
        let id = self
            .mem
            .alloc(bytes.len() as u64, slot(dm), Origin::Opaque)?;
        self.mem.write_at(id, 0, &bytes)?;
        Ok(self.mem.object(id).base)
    }

    /// Where the `va_list` argument `e` keeps the address of the next argument: the
    /// `overflow_arg_area` member it points to on x86-64, the `char *` object it loads on i386.
    fn cursor_place(&self, tid: usize, e: Option<&Expr>, acc: &mut Acc) -> Result<u64, Stop> {
        let e = e.ok_or_else(|| Stop::new("va_list argument missing"))?;
        match self.p.types.data_model {
            DataModel::Lp64 => match self.eval(tid, e, acc)? {
                Val::Int(a) => u64::try_from(a)
                    .ok()
                    .and_then(|a| a.checked_add(OVERFLOW_AREA))
                    .ok_or_else(|| Stop::new("invalid va_list")),
                _ => Err(Stop::new("invalid va_list")),
            },
            DataModel::Ilp32 => match &e.kind {
                ExprKind::Load(lv) => Ok(self.place(tid, lv, true, acc)?.addr),
                ExprKind::Cast(inner) => self.cursor_place(tid, Some(inner), acc),
                _ => Err(Stop::new("va_list that is not an object")),
            },
        }
    }

    /// Reads a pointer-sized value at `addr`, without recording an access (the thread's own
    /// `va_list`, the `argv` array).
    ///
    /// Errors: `addr` is not inside a live object, or the value is no address.
    pub(super) fn read_pointer(&self, addr: u64) -> Result<u64, Stop> {
        let n = self.p.types.data_model.pointer_size();
        let (id, off) = self.mem.locate(addr, n)?;
        match value::decode(
            &self.mem.read_at(id, off, n),
            Repr::Ptr { bits: 8 * n as u32 },
        ) {
            Val::Int(x) => u64::try_from(x).map_err(|_| Stop::new("invalid va_list")),
            _ => Err(Stop::new("invalid va_list")),
        }
    }

    /// Writes a pointer-sized value at `addr` (not recorded).
    fn write_pointer(&mut self, addr: u64, v: u64) -> Result<(), Stop> {
        let n = self.p.types.data_model.pointer_size();
        let (id, off) = self.mem.locate(addr, n)?;
        let bytes = value::encode(&Val::Int(v as u128), Repr::Ptr { bits: 128 }, n)?;
        self.mem.write_at(id, off, &bytes)
    }

    /// Executes a `<stdarg.h>` builtin called in the top frame of `tid` with argument
    /// expressions `args`; `dest` is the destination of `va_arg`.
    ///
    /// Errors: `va_start` outside a variadic function, `va_arg` past the last argument or
    /// without a destination, an invalid `va_list`.
    pub(super) fn va_builtin(
        &mut self,
        tid: usize,
        b: Builtin,
        args: &[Expr],
        dest: Option<&Lval>,
        acc: &mut Acc,
    ) -> Result<(), Stop> {
        let dm = self.p.types.data_model;
        match b {
            Builtin::End => Ok(()),
            Builtin::Start => {
                let area = self
                    .threads
                    .get(tid)
                    .and_then(|t| t.frames.last())
                    .and_then(|f| f.varargs)
                    .ok_or_else(|| Stop::new("va_start outside a variadic function"))?;
                let at = self.cursor_place(tid, args.first(), acc)?;
                if dm == DataModel::Lp64 {
                    let base = at - OVERFLOW_AREA;
                    let (id, off) = self.mem.locate(base, VA_LIST_TAG)?;
                    let mut tag = Vec::with_capacity(VA_LIST_TAG as usize);
                    tag.extend_from_slice(&GP_CONSUMED.to_le_bytes());
                    tag.extend_from_slice(&FP_CONSUMED.to_le_bytes());
                    tag.extend_from_slice(&area.to_le_bytes());
                    tag.extend_from_slice(&0u64.to_le_bytes());
                    self.mem.write_at(id, off, &tag)
                } else {
                    self.write_pointer(at, area)
                }
            }
            Builtin::Copy => {
                let to = self.cursor_place(tid, args.first(), acc)?;
                let from = self.cursor_place(tid, args.get(1), acc)?;
                let next = self.read_pointer(from)?;
                self.write_pointer(to, next)
            }
            Builtin::Arg => {
                let d = dest.ok_or_else(|| Stop::new("va_arg without a destination"))?;
                let at = self.cursor_place(tid, args.first(), acc)?;
                let next = self.read_pointer(at)?;
                let size = self
                    .p
                    .types
                    .size_of(d.ty)
                    .ok_or_else(|| Stop::new("va_arg of unknown size"))?;
                let (id, off) = self.mem.locate(next, size)?;
                let v = value::decode(&self.mem.read_at(id, off, size), self.repr(d.ty)?);
                self.write_pointer(at, next + slots(dm, size))?;
                let pl = self.place(tid, d, false, acc)?;
                self.store(&pl, &v, false, acc)
            }
        }
    }

    /// The address of the next argument a `va_list` argument value designates (for the
    /// `v*printf` functions, which receive the `va_list` by value).
    pub(super) fn va_list_cursor(&self, v: &Val) -> Result<u64, Stop> {
        let Val::Int(a) = v else {
            return Err(Stop::new("invalid va_list"));
        };
        let a = u64::try_from(*a).map_err(|_| Stop::new("invalid va_list"))?;
        match self.p.types.data_model {
            DataModel::Lp64 => self.read_pointer(a + OVERFLOW_AREA),
            DataModel::Ilp32 => Ok(a),
        }
    }
}

/// The arguments a `printf`-style format converts: the call's own after the format, or those
/// a `va_list` designates (`vprintf` and the like).
pub(super) enum FormatArgs<'v> {
    /// Arguments of the call (value and type), the next one at `next`.
    List {
        /// The call's arguments.
        vals: &'v [(Val, TypeId)],
        /// Index of the next argument to convert.
        next: usize,
    },
    /// The argument area, the next argument at address `at`.
    Va {
        /// Address of the next slot.
        at: u64,
    },
}

impl FormatArgs<'_> {
    /// The next argument as an integer of `bits` bits (an `int` at least: narrower ones were
    /// promoted), advancing past it.
    ///
    /// Errors: no argument left.
    pub(super) fn int(&mut self, m: &Machine<'_>, bits: u32) -> Result<i128, Stop> {
        match self {
            FormatArgs::List { vals, next } => {
                let r = match vals.get(*next) {
                    Some((Val::Int(x), ty)) => int_value(*x, m.repr(*ty)?),
                    _ => return Err(Stop::new("printf with too few arguments")),
                };
                *next += 1;
                Ok(r)
            }
            FormatArgs::Va { at } => {
                let n = u64::from(bits.max(32) / 8);
                let (id, off) = m.mem.locate(*at, n)?;
                let raw = match value::decode(&m.mem.read_at(id, off, n), Repr::Ptr { bits: 128 }) {
                    Val::Int(x) => trunc(x, 8 * n as u32),
                    _ => 0,
                };
                *at += slots(m.p.types.data_model, n);
                Ok(value::sext(raw, 8 * n as u32))
            }
        }
    }

    /// Skips a `double` argument (a floating conversion that is not rendered).
    ///
    /// Errors: no argument left.
    pub(super) fn skip_double(&mut self, m: &Machine<'_>) -> Result<(), Stop> {
        match self {
            FormatArgs::List { vals, next } => {
                if vals.get(*next).is_none() {
                    return Err(Stop::new("printf with too few arguments"));
                }
                *next += 1;
            }
            FormatArgs::Va { at } => {
                m.mem.locate(*at, 8)?;
                *at += slots(m.p.types.data_model, 8);
            }
        }
        Ok(())
    }

    /// The next argument as a pointer, advancing past it.
    ///
    /// Errors: no argument left, a value that is no address.
    pub(super) fn pointer(&mut self, m: &Machine<'_>) -> Result<u64, Stop> {
        let bits = 8 * m.p.types.data_model.pointer_size() as u32;
        let v = self.int(m, bits)?;
        u64::try_from(trunc(v as u128, bits)).map_err(|_| Stop::new("invalid pointer argument"))
    }
}
