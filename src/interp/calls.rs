//! Calls: a user function's frame opened and closed with its accounting (work, the
//! argument and depth limits, frame storage, the profile), callbacks from builtins,
//! capability checks with the audit log, and builtin calls with their cost rules. Both
//! cores call through here. Child of `interp`.

use super::*;
use smallvec::SmallVec;

impl<'p> Interp<'p> {
    /// Call user function `fi` with `args` from a builtin (a function argument, SPEC 10):
    /// an ordinary call, through the same path as a call in the source (call depth,
    /// argument and frame storage, steps and work of its lines, the profile's stacks);
    /// the arguments are copies (copy-on-write) the callee cannot change for the caller.
    /// Each call is charged `WORK_CALLBACK` work first (in `enter`, as every call is).
    /// An anonymous function's captured values follow its arguments (its frame's slots
    /// after its parameters), copies like the arguments.
    pub fn call_fn(&mut self, fr: crate::builtins::FnRef, args: &mut [Value]) -> R<Value> {
        let new_base = self.stack.len();
        let mut arg_heap = 0usize;
        let n = args.len();
        for v in args {
            arg_heap += v.heap();
            self.stack.push(std::mem::take(v));
        }
        let (fi, nargs) = match fr {
            crate::builtins::FnRef::Named(fi) => (fi, n),
            crate::builtins::FnRef::Lambda(li) => {
                let (fi, caps) = &self.lambdas[li];
                for v in caps.iter() {
                    arg_heap += v.heap();
                    self.stack.push(v.clone());
                }
                (*fi as usize, n + caps.len())
            }
        };
        let prog = self.prog;
        let f = &prog.funcs[fi];
        if arg_heap > self.host.lim.n(L::CallArgs) {
            self.stack.truncate(new_base);
            return Err(self.call_refused(fi, arg_heap));
        }
        self.enter(fi, f, nargs, new_base, arg_heap)
    }

    /// Run user function `fi` whose `nargs` arguments are on the stack from `new_base`
    /// (a builtin's callback, `leash test`'s call of a test): its frame opened
    /// (`frame_enter`; on a failure the arguments are dropped and nothing is left open),
    /// its body run, its frame closed (its values dropped, the caller's frame back); its
    /// return value.
    pub(super) fn enter(
        &mut self,
        fi: usize,
        f: &'p Function,
        nargs: usize,
        new_base: usize,
        arg_heap: usize,
    ) -> R<Value> {
        let saved = self.saved();
        if let Err(e) = self.frame_enter(fi, f.base_bytes, nargs, new_base, arg_heap, saved) {
            self.stack.truncate(new_base);
            return Err(e);
        }
        let r = self.run_body(fi);
        self.stack.truncate(new_base);
        self.frame_leave(saved);
        match r? {
            Flow::Return => Ok(self.take_ret()),
            _ => Ok(Value::Nil),
        }
    }

    /// The value of the `return` just carried out.
    #[inline(always)]
    pub(crate) fn take_ret(&mut self) -> Value {
        match self.ret {
            // Rebuilt rather than moved: a number goes by its payload (a whole `Value`
            // moved through memory stalls on store forwarding).
            Value::Num(n) => Value::Num(n),
            _ => std::mem::take(&mut self.ret),
        }
    }

    /// What a call changes and its return restores: the caller's frame base, storage
    /// and function (taken before `frame_enter`).
    #[inline(always)]
    pub(crate) fn saved(&self) -> Saved {
        (self.base, self.fbytes, self.func)
    }

    /// The accounting of a call of user function `fi` whose frame starts at `new_base`
    /// (the values on the stack are the caller's business): the call's
    /// work, the argument and depth limits, the frame's storage, the profile. On failure
    /// nothing is changed but the work charged (the caller's frame back from `saved`,
    /// `self.saved()` taken just before).
    #[inline(always)]
    pub(crate) fn frame_enter(
        &mut self,
        fi: usize,
        base_bytes: usize,
        nargs: usize,
        new_base: usize,
        arg_heap: usize,
        saved: Saved,
    ) -> R<()> {
        // Every call is charged a little work, from the source or from a builtin alike: a
        // line of many calls to an empty function is one step, but not free.
        self.host.work(WORK_CALLBACK)?;
        if arg_heap + nargs * ACCT_SLOT > self.host.lim.n(L::CallArgs) || self.depth >= self.host.lim.n(L::CallDepth) {
            return Err(self.call_refused(fi, arg_heap + nargs * ACCT_SLOT));
        }
        if let Some(p) = self.profile.as_deref_mut() {
            p.enter(fi, self.host.meter.steps(), self.host.meter.worked());
        }
        self.base = new_base;
        self.func = fi;
        self.depth += 1;
        if self.depth > self.max_depth {
            self.max_depth = self.depth;
        }
        // The new frame's storage: its names and slots, and the arguments it holds.
        let fb = base_bytes + arg_heap;
        self.fbytes = fb;
        self.mem += fb;
        if fb > self.host.lim.n(L::FrameStorage) || self.mem > self.host.max_mem {
            self.fbytes = 0;
            self.mem -= fb;
            let e = match self.charge(false, fb as isize) {
                Err(e) => e,
                Ok(()) => self.limit(LimitKind::FrameStorage, "frame storage exceeded"),
            };
            self.frame_leave(saved);
            return Err(e);
        }
        if fb > self.peak_frame {
            self.peak_frame = fb;
        }
        if self.mem > self.peak_mem {
            self.peak_mem = self.mem;
        }
        Ok(())
    }

    /// Undo `frame_enter`: the frame's storage released, the caller's frame back.
    #[inline(always)]
    pub(crate) fn frame_leave(&mut self, saved: Saved) {
        self.mem -= self.fbytes;
        self.depth -= 1;
        (self.base, self.fbytes, self.func) = saved;
        if let Some(p) = self.profile.as_deref_mut() {
            p.leave(self.host.meter.steps(), self.host.meter.worked());
        }
    }

    #[cold]
    pub(super) fn call_refused(&self, fi: usize, arg_bytes: usize) -> Fail {
        let f = &self.prog.funcs[fi];
        if arg_bytes > self.host.lim.n(L::CallArgs) {
            self.limit(
                LimitKind::CallArgs,
                format!(
                    "arguments of `{}` exceed {max_call_arg_bytes} accounted bytes",
                    f.name,
                    max_call_arg_bytes = self.host.lim.n(L::CallArgs)
                ),
            )
        } else {
            self.limit(
                LimitKind::CallDepth,
                format!("more than {max_call_depth} active calls", max_call_depth = self.host.lim.n(L::CallDepth)),
            )
        }
    }

    #[inline(always)]
    pub(super) fn check_cap(&mut self, b: &Builtin) -> R<()> {
        match b.cap {
            None => Ok(()),
            Some(_) => self.check_cap_slow(b),
        }
    }

    #[inline(never)]
    pub(super) fn check_cap_slow(&mut self, b: &Builtin) -> R<()> {
        let Some(cap) = b.cap else { return Ok(()) };
        let (ok, flag) = (self.host.caps.allows(cap), cap.info().wanted);
        self.host.audit_target = None;
        self.host.audit_bytes = 0;
        if ok {
            Ok(())
        } else {
            let e = self.err(ErrKind::Permission, format!("{} needs {flag}", b.name));
            self.audit_end(b, Err(e))
        }
    }

    /// The end of a gated call: its audit line (`--audit`), allowed or refused.
    #[inline(never)]
    pub(crate) fn audit_end<T>(&mut self, b: &Builtin, r: R<T>) -> R<T> {
        if !self.host.gate.auditing() {
            return r;
        }
        let result = match &r {
            Ok(_) => "ok",
            Err(e) => match &**e {
                Unwind::Error(x) => x.kind.name(),
                Unwind::Limit { .. } => "limit",
                Unwind::Exit(_) => "exit",
            },
        };
        let (file, line) = match self.prog.sources.locate(self.host.pos) {
            Some((f, l)) => (f, Some(l)),
            None => ("", None),
        };
        let cap = b.cap.map_or("none", Cap::name);
        let written = self.host.gate.audit_record(&crate::gate::AuditRecord {
            step: self.host.meter.steps(),
            file,
            line,
            builtin: b.name,
            capability: cap,
            target: self.host.audit_target.as_deref(),
            bytes: self.host.audit_bytes,
            result,
        });
        // Writing the line is work like any output (the target quoted is bounded).
        self.host.work(crate::gate::audit_work(written))?;
        r
    }

    /// A builtin's call with its arguments evaluated (its capability checked before
    /// they were): the work of its arguments by its cost rule, the call, its audit line,
    /// the work of its result, the heap check.
    pub(super) fn builtin_vals(&mut self, b: &'static Builtin, vals: &mut [Value]) -> R<Value> {
        let cost = b.cost;
        self.host.work(cost.before(vals))?;
        // The line of a gated call, set by `vm_op`: its audit line's, after callbacks
        // that made gated calls of their own.
        let pos = self.host.pos;
        let r = match b.imp {
            Imp::Plain(f) => f(&mut self.host, vals),
            Imp::Calls(f) => f(self, vals),
            Imp::Place(_) => unreachable!("place builtins are called through BuiltinPlace"),
        };
        let r = if b.cap.is_some() {
            self.host.pos = pos;
            self.audit_end(b, r)
        } else {
            r
        };
        // (A result that measures nothing, a number from `min`, adds nothing: told
        // without the call.)
        if cost.measures_result() {
            if let Ok(v) = &r {
                if crate::builtins::sized(v) {
                    self.host.work(cost.after(v))?;
                }
            }
        }
        self.host.check_memory()?;
        r
    }

    /// A place builtin's call with its place's keys and its arguments evaluated (keys
    /// other than numbers and constant strings: `push(m[k], v)`).
    pub(super) fn place_builtin_vals(
        &mut self,
        b: &'static Builtin,
        root: Slot,
        keys: &[Value],
        vals: &mut [Value],
    ) -> R<Value> {
        let r = self.place_builtin_on(b, root, keys, vals);
        self.place_end(b, r)
    }

    /// A place builtin at its place through the place functions (`modify_place`, which
    /// copy shared containers and report a step that does not resolve), before its end.
    fn place_builtin_on(&mut self, b: &'static Builtin, root: Slot, keys: &[Value], vals: &mut [Value]) -> R<Value> {
        self.host.work(b.cost.before(vals))?;
        self.modify_place(root, keys, &mut |this, target| place_leaf(&mut this.host, b, target, vals))
    }

    /// `place_builtin_vals` with keys that are numbers or constant strings, read where
    /// they are (`push(piles[i], d)`): the place walked in place when it can be
    /// (`value::in_place`: the variable changed where it is, by one difference of
    /// storage charged), else as any place, its keys made values.
    #[inline(always)]
    pub(super) fn place_builtin_at(
        &mut self,
        b: &'static Builtin,
        root: Slot,
        ks: &[PathKey<'_>],
        ics: &[crate::value::Site],
        vals: &mut [Value],
    ) -> R<Value> {
        // (An unset variable: its `name` error, from the place functions.)
        let walked = match self.cell_and_host(root) {
            (Value::Unset, _) => None,
            (cell, host) => crate::value::in_place(cell, ks, ics, |target| {
                host.work(b.cost.before(vals))?;
                place_leaf(host, b, target, vals)
            }),
        };
        let r = match walked {
            Some((r, d)) => {
                self.charge(matches!(root, Slot::Global(_)), d)?;
                r
            }
            None => self.place_builtin_keys(b, root, ks, vals),
        };
        self.place_end(b, r)
    }

    /// A place builtin on a variable itself (`push(xs, v)`): changed where it is and
    /// measured once, as `place_builtin_at` changes a place. (Not through
    /// `place_builtin_at` with no keys: its walk's closure made storage take 3.3% more
    /// instructions, sieve 1.8%.)
    #[inline(always)]
    pub(super) fn place_builtin_var(&mut self, b: &'static Builtin, root: Slot, vals: &mut [Value]) -> R<Value> {
        self.host.work(b.cost.before(vals))?;
        self.place_builtin_var_worked(b, root, vals)
    }

    /// A place builtin with a `fast` change (`Builtin::fast`: constant work) on variable
    /// `root` itself with `vals`: its work charged, then, when the variable holds a
    /// list it alone holds and `fast` answers, the list's storage change charged as
    /// `place_builtin_var` charges it (the list measured before and after) and the
    /// heap looked at; otherwise the call is made as `place_builtin_var` makes it (its
    /// work already charged). No copy of the list, no walk, no call through the place
    /// functions: `push(xs, v)` 375 -> 249 machine instructions (WORKLOG, thirty-fourth
    /// session).
    #[inline(always)]
    pub(super) fn place_var_fast(
        &mut self,
        b: &'static Builtin,
        fast: crate::builtins::ListFast,
        root: Slot,
        vals: &mut [Value],
    ) -> R<Value> {
        self.host.work(b.cost.before(&[]))?;
        let (cell, host) = self.cell_and_host(root);
        if let Value::List(rc) = cell {
            if let Some(l) = Rc::get_mut(rc) {
                let before = l.acct();
                if let Some(r) = fast.apply(host, l, vals) {
                    let d = l.acct() as isize - before as isize;
                    self.charge(matches!(root, Slot::Global(_)), d)?;
                    // (`place_end` without its result's work: a `fast` entry's cost
                    // measures nothing, a unit test of the tables checks it.)
                    self.host.check_memory()?;
                    return Ok(r);
                }
            }
        }
        self.place_builtin_var_worked(b, root, vals)
    }

    /// `place_builtin_var` past its work.
    #[inline(always)]
    fn place_builtin_var_worked(&mut self, b: &'static Builtin, root: Slot, vals: &mut [Value]) -> R<Value> {
        let r = match self.cell_and_host(root) {
            // (Its `name` error, from the place functions.)
            (Value::Unset, _) => {
                self.modify_place(root, &[], &mut |this, target| place_leaf(&mut this.host, b, target, vals))
            }
            (cell, host) => {
                let (r, d) = crate::value::measured(cell, |target| place_leaf(host, b, target, vals));
                self.charge(matches!(root, Slot::Global(_)), d)?;
                r
            }
        };
        self.place_end(b, r)
    }

    /// Variable `root`'s cell and the host, borrowed apart (the frame's separate
    /// parts): a place builtin changes the value where it is.
    #[inline(always)]
    fn cell_and_host(&mut self, root: Slot) -> (&mut Value, &mut Host) {
        let cell = match root {
            Slot::Local(i) => &mut self.stack[self.base + i as usize],
            Slot::Global(i) => &mut self.globals[i as usize],
        };
        (cell, &mut self.host)
    }

    /// `place_builtin_at`'s place as any place (shared containers copied, errors
    /// reported), its keys made values.
    #[cold]
    #[inline(never)]
    fn place_builtin_keys(
        &mut self,
        b: &'static Builtin,
        root: Slot,
        ks: &[PathKey<'_>],
        vals: &mut [Value],
    ) -> R<Value> {
        let keys: SmallVec<[Value; 4]> = ks.iter().map(|k| k.value()).collect();
        self.place_builtin_on(b, root, &keys, vals)
    }

    /// A place builtin's end: the work of its result (its cost rule), the heap check.
    #[inline(always)]
    fn place_end(&mut self, b: &'static Builtin, r: R<Value>) -> R<Value> {
        if b.cost.measures_result() {
            if let Ok(v) = &r {
                self.host.work(b.cost.after(v))?;
            }
        }
        self.host.check_memory()?;
        r
    }
}

/// A place builtin at its place: the work of the value it changes (its cost rule), then
/// the change. On the host alone: the place's walk holds the variable's cell.
#[inline(always)]
fn place_leaf(host: &mut Host, b: &'static Builtin, target: &mut Value, vals: &mut [Value]) -> R<Value> {
    let Imp::Place(f) = b.imp else { unreachable!("plain builtins are called through Builtin") };
    if b.cost.measures_target() {
        host.work(b.cost.target(target))?;
    }
    f(host, target, vals)
}
