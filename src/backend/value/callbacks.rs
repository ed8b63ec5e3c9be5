//! Callbacks in the value analysis ([`crate::model::CallbackUse`]): which functions a call
//! hands to a library function, the ones it runs during the call (entered as calls of kind
//! [`CallKind::Callback`], their parameters bound as the specification says), and the threads
//! and signal handlers it starts (recorded like thread creations).

use super::interp::Interp;
use super::memory::{State, Val, top};
use crate::backend::Base;
use crate::context::CallKind;
use crate::dataflow::{At, Callees};
use crate::ir::{Expr, FuncId, Op};
use crate::model::library::{Param, Runs};
use racedar_domains::{Interval, Ptr};

impl<'p> Interp<'_, 'p> {
    /// The functions the expression `e` designates (`deep`: the function pointers stored in
    /// the objects `e` points to), and whether that is exactly one known function. `None`
    /// when unknown.
    pub fn callback_targets(
        &self,
        s: &State,
        func: FuncId,
        e: &Expr,
        deep: bool,
    ) -> Option<(Vec<FuncId>, bool)> {
        let v = self.eval(s, func, e).as_ptr();
        if v.unknown {
            return None;
        }
        let mut out = Vec::new();
        let mut unknown = false;
        if deep {
            // The function pointers stored in the objects (uninitialised bytes hold none).
            for (b, _) in v.targets() {
                if matches!(b, Base::Func(_) | Base::Str(_)) {
                    continue;
                }
                for t in s.view(b).pointer_targets() {
                    if let Base::Func(g) = t {
                        out.push(g);
                    }
                }
            }
            unknown = out.is_empty();
        } else {
            for (b, _) in v.targets() {
                if let Base::Func(g) = b {
                    out.push(*g);
                }
            }
        }
        out.retain(|g| self.program.function(*g).body.is_some());
        out.sort();
        out.dedup();
        if unknown && out.is_empty() {
            return None;
        }
        let exact = !deep && out.len() == 1 && v.targets().len() == 1 && !v.null;
        Some((out, exact))
    }

    /// Adds to `out` the callbacks the call edge runs during the call.
    pub(super) fn sync_callbacks(&self, at: At<'_>, op: &Op, d: &State, out: &mut Callees) {
        let Op::Call { args, .. } = op else { return };
        for cb in self.roles.callbacks(self.program, op) {
            if cb.runs != Runs::Sync {
                continue;
            }
            let Some(a) = args.get(cb.arg) else { continue };
            out.transfer_too = true;
            if let Some((funcs, exact)) = self.callback_targets(d, at.fctx.func, a, cb.deep) {
                for g in funcs {
                    out.funcs.push((g, CallKind::Callback(cb.index), exact));
                }
            }
        }
    }

    /// The value callback parameter `param` receives from the call's arguments `args`.
    pub(super) fn callback_param(
        &mut self,
        s: &mut State,
        at: At<'_>,
        args: &[Expr],
        param: Param,
        ty: crate::ir::TypeId,
    ) -> Val {
        match param {
            Param::Unknown => self.top_of(ty),
            Param::Fresh => {
                let pointee = self.program.types.pointee(ty);
                let fresh = crate::model::library::Pointer::Fresh;
                self.lib_pointer(s, at, at.fctx.func, args, fresh, pointee)
            }
            Param::Arg(n) => {
                let Some(a) = args.get(n) else {
                    return self.top_of(ty);
                };
                let v = self.eval(s, at.fctx.func, a);
                if v.ptr.targets().is_empty() {
                    return v;
                }
                // A pointer into the same object, at any offset.
                let mut p: Ptr<Base> = Ptr::none();
                p.null = v.ptr.null;
                p.unknown = v.ptr.unknown;
                for (b, _) in v.ptr.targets() {
                    p.add(*b, Interval::TOP);
                }
                Val { int: v.int, ptr: p }
            }
        }
    }

    /// The argument a thread or signal handler a library call starts receives (its first
    /// parameter), for the create records of the thread-modular fixpoint.
    pub(super) fn started_arg(
        &self,
        s: &State,
        func: FuncId,
        args: &[Expr],
        params: &[Param],
    ) -> Val {
        match params.first() {
            Some(Param::Arg(n)) => args.get(*n).map_or_else(top, |a| self.eval(s, func, a)),
            _ => top(),
        }
    }
}
