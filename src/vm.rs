//! The dispatch loop: runs compiled code (`compile.rs`) on the interpreter's frame.
//!
//! One `match` over the instruction, operands read where they are (`Interp::rd`), the
//! number fast paths inline and everything else in the same helpers the tree evaluator
//! uses (`binop`, `index_value`, `set_index`, the builtin call), so an operator's meaning
//! is written once. Steps, work and storage are charged by the same functions as in
//! `interp.rs` (`step`, `work`, `store`/`charge`). An error raised by an instruction is
//! given its line and column from the code's side table (`fail_at`).
//!
//! This is a child module of `interp` so that it works on the interpreter's frame
//! directly.

use std::cell::Cell;

use smallvec::SmallVec;

use super::*;
use crate::ast::Spot;
use crate::builtins::{Builtin, PeekFn};
use crate::compile::*;

/// A compiled caller waiting for its callee (calls between compiled functions run in
/// the same loop, without a native call each).
///
/// Every field is a whole word, and the register the result goes to is read from the
/// call instruction itself (as Lua's `OP_RETURN` does): a frame built on the native
/// stack by narrower stores and copied with wider loads made every call stall on the
/// CPU's store forwarding.
struct VmFrame<'p> {
    code: Rc<Code<'p>>,
    /// Where the caller goes on (its call instruction is at `pc - 1`).
    pc: usize,
    saved: Saved,
}

/// The compiled callers waiting, innermost last. A call writes its frame field by
/// field into a slot kept from earlier calls (`Vec::push` built the frame on the
/// native stack first and copied it with 16-byte loads of what had just been written
/// by 8-byte stores, a store-forwarding stall on every call); slots past `depth` are
/// stale and reused.
struct Frames<'p> {
    v: Vec<VmFrame<'p>>,
    depth: usize,
}

impl<'p> Frames<'p> {
    #[inline(always)]
    fn push(&mut self, code: &Rc<Code<'p>>, pc: usize, saved: Saved) {
        match self.v.get_mut(self.depth) {
            Some(f) => {
                if !Rc::ptr_eq(&f.code, code) {
                    f.code = code.clone();
                }
                f.pc = pc;
                f.saved.0 = saved.0;
                f.saved.1 = saved.1;
                f.saved.2 = saved.2;
                f.saved.3 = saved.3;
            }
            None => self.v.push(VmFrame { code: code.clone(), pc, saved }),
        }
        self.depth += 1;
    }

    /// The innermost frame, taken off (its code shared with the stale slot).
    #[inline(always)]
    fn pop(&mut self) -> Option<(Rc<Code<'p>>, usize, Saved)> {
        self.depth = self.depth.checked_sub(1)?;
        let f = &self.v[self.depth];
        Some((f.code.clone(), f.pc, f.saved))
    }
}

impl<'p> Interp<'p> {
    /// Run a compiled body on the current frame (its registers already on the stack).
    /// A call of a user function from here opens its frame and runs its code in this
    /// same loop; its return closes the frame and goes on in the caller.
    pub(crate) fn run_code(&mut self, first: Rc<Code<'p>>) -> R<Flow> {
        // The texts of interpolations an error leaves unfinished go with it.
        let ib = self.ibufs.len();
        let r = self.run_code_in(first);
        if r.is_err() {
            self.ibufs.truncate(ib);
        }
        r
    }

    fn run_code_in(&mut self, first: Rc<Code<'p>>) -> R<Flow> {
        let mut frames = Frames { v: Vec::new(), depth: 0 };
        let mut pc = 0usize;
        // The code to go on with after a call or a return (set, then the inner loop left).
        let mut next: Option<Rc<Code<'p>>> = Some(first);
        while let Some(cur) = next.take() {
            let code: &Code<'p> = &cur;
            loop {
                let at = pc;
                pc += 1;
                let ins = &code.ops[at];
                let stepped = if ins.step { self.step_line(code.pos[at]) } else { Ok(()) };
                let r: R<()> = if let Err(e) = stepped {
                    Err(e)
                } else {
                    match ins.op {
                        Op::Step => self.step_line(code.pos[at]),
                        Op::StepJump(to) => {
                            pc = to as usize;
                            self.step(code.pos[at])
                        }
                        Op::Move { dst, src } => match Plain::of(self.rd(code, src)) {
                            Some(p) => {
                                self.consume(src);
                                self.put_p(dst, p)
                            }
                            None => match self.val(code, src, || code.ospot[at][0]) {
                                Ok(v) => self.put(dst, v),
                                Err(e) => Err(e),
                            },
                        },
                        Op::Bin { op, dst, a, b } => {
                            let nums = match (self.rd(code, a), self.rd(code, b)) {
                                (Value::Num(x), Value::Num(y)) => Some((*x, *y)),
                                _ => None,
                            };
                            match nums {
                                Some((x, y)) => match arith(op, x, y) {
                                    Some(r) => self.put_num(dst, r),
                                    None => match self.num_op(op, x, y) {
                                        Ok(v) => self.put(dst, v),
                                        Err(e) => Err(e),
                                    },
                                },
                                None => self.bin_slow(code, at, op, dst, a, b),
                            }
                        }
                        Op::BinN { op, dst, a, k } => match self.rd(code, a) {
                            Value::Num(x) => {
                                let x = *x;
                                match arith(op, x, k) {
                                    Some(r) => self.put_num(dst, r),
                                    None => match self.num_op(op, x, k) {
                                        Ok(v) => self.put(dst, v),
                                        Err(e) => Err(e),
                                    },
                                }
                            }
                            _ => self.bin_n_slow(code, at, op, dst, a, k),
                        },
                        Op::TestN { op, a, k, to } => {
                            let t = match self.rd(code, a) {
                                Value::Num(x) => Ok(num_cmp(op, *x, k)),
                                _ => self.test_n_slow(code, at, op, a, k),
                            };
                            branch(t, false, to, &mut pc)
                        }
                        Op::TestNBack { op, a, k, to } => match self.step(code.pos[at]) {
                            Ok(()) => {
                                let t = match self.rd(code, a) {
                                    Value::Num(x) => Ok(num_cmp(op, *x, k)),
                                    _ => self.test_n_slow(code, at, op, a, k),
                                };
                                branch(t, true, to, &mut pc)
                            }
                            Err(e) => Err(e),
                        },
                        Op::TestBack { op, a, b, to } => match self.step(code.pos[at]) {
                            Ok(()) => {
                                let t = match (self.rd(code, a), self.rd(code, b)) {
                                    (Value::Num(x), Value::Num(y)) => Ok(num_cmp(op, *x, *y)),
                                    _ => self.test_slow(code, at, op, a, b),
                                };
                                branch(t, true, to, &mut pc)
                            }
                            Err(e) => Err(e),
                        },
                        Op::UpdN { op, var, k } => {
                            if let Value::Num(x) = self.cell(var) {
                                if let Some(r) = arith(op, *x, k) {
                                    *x = r;
                                    continue;
                                }
                            }
                            self.compound_var(slot_of(var), op, Value::Num(k))
                        }
                        Op::Test { op, a, b, to } => {
                            let t = match (self.rd(code, a), self.rd(code, b)) {
                                (Value::Num(x), Value::Num(y)) => Ok(num_cmp(op, *x, *y)),
                                _ => self.test_slow(code, at, op, a, b),
                            };
                            branch(t, false, to, &mut pc)
                        }
                        Op::JumpIf { c, when, keep, to } => match self.truth(code, c, || code.ospot[at][0]) {
                            Ok(t) => {
                                if !keep {
                                    self.consume(c);
                                }
                                if t == when {
                                    pc = to as usize;
                                }
                                Ok(())
                            }
                            Err(e) => Err(e),
                        },
                        Op::Jump(to) => {
                            pc = to as usize;
                            Ok(())
                        }
                        Op::Index { dst, a, k, ic } => {
                            let fast = match (self.rd(code, a), self.rd(code, k)) {
                                (Value::List(l), Value::Num(n)) => list_at(*n, l.len()).map(|i| &l.items()[i]),
                                (Value::Map(m), Value::Str(s)) if s.len() <= KEY_FREE_BYTES => {
                                    m.get_cached(s, &code.ic[ic as usize])
                                }
                                _ => None,
                            }
                            .map(Got::of);
                            match fast {
                                Some(g) => {
                                    self.consume(a);
                                    self.consume(k);
                                    self.put_got(dst, g)
                                }
                                None => self.index_slow(code, at, dst, a, k),
                            }
                        }
                        Op::Field { dst, a, ic, name } => {
                            let fast = match self.rd(code, a) {
                                Value::Map(m) => m.get_cached(name, &code.ic[ic as usize]).map(Got::of),
                                _ => None,
                            };
                            match fast {
                                Some(g) => {
                                    self.consume(a);
                                    self.put_got(dst, g)
                                }
                                None => self.field_slow(code, at, dst, a, name),
                            }
                        }
                        Op::Call { fi, start, n, .. } => match self.vm_call_open(fi as usize, start, n) {
                            Ok((callee, saved)) => {
                                frames.push(&cur, pc, saved);
                                next = Some(callee);
                                pc = 0;
                                break;
                            }
                            Err(e) => Err(e),
                        },
                        Op::CapCheck(b) => self.check_cap(b),
                        Op::Builtin { b, dst, at: args, n } => {
                            let specs = &code.args[args as usize..(args + n) as usize];
                            match b.peek.and_then(|p| self.peek_call(code, p, specs)) {
                                Some(v) => self.peeked(b, dst, specs, v),
                                None => self.call_vals(code, b, dst, specs),
                            }
                        }
                        Op::BuiltinPlace { dst, call } => {
                            let pcall = code.pcalls[call as usize];
                            match self.vm_place_call(code, &pcall) {
                                Ok(v) => self.put(dst, v),
                                Err(e) => Err(e),
                            }
                        }
                        Op::Upd { op, var, v } => {
                            let done = match self.rd(code, v) {
                                Value::Num(y) => {
                                    let y = *y;
                                    match self.cell(var) {
                                        Value::Num(x) => match arith(op, *x, y) {
                                            Some(r) => {
                                                *x = r;
                                                true
                                            }
                                            None => false,
                                        },
                                        _ => false,
                                    }
                                }
                                _ => false,
                            };
                            if done {
                                Ok(())
                            } else {
                                match self.val(code, v, || code.ospot[at][0]) {
                                    Ok(rhs) => self.compound_var(slot_of(var), op, rhs),
                                    Err(e) => Err(e),
                                }
                            }
                        }
                        Op::Throw(a) => match self.val(code, a, || code.ospot[at][0]) {
                            Ok(v) => Err(self.thrown(v, code.pos[at])),
                            Err(e) => Err(e),
                        },
                        Op::TryEnter { save } => {
                            let b = self.base + save as usize;
                            self.stack[b] = Value::Num(self.lambdas.len() as f64);
                            self.stack[b + 1] = Value::Num(self.ibufs.len() as f64);
                            Ok(())
                        }
                        Op::LamMark { mark } => {
                            self.stack[self.base + mark as usize] = Value::Num(self.lambdas.len() as f64);
                            Ok(())
                        }
                        Op::LamRelease { mark } => {
                            if let Value::Num(n) = self.stack[self.base + mark as usize] {
                                self.lambdas.truncate(n as usize);
                            }
                            Ok(())
                        }
                        Op::MkLambda { dst, fi, start, n } => {
                            let b = self.base + start as usize;
                            let vals: Box<[Value]> =
                                self.stack[b..b + n as usize].iter_mut().map(std::mem::take).collect();
                            let id = self.lambdas.len() as u32;
                            self.lambdas.push((fi, vals));
                            self.put(
                                dst,
                                Value::Handle(crate::value::Handle { kind: crate::value::HandleKind::Lambda, id }),
                            )
                        }
                        Op::Unpack { src, start, n } => {
                            let v = std::mem::take(&mut self.stack[self.base + src.idx()]);
                            match self.unpack(&v, n as usize) {
                                Ok(items) => {
                                    let b = self.base + start as usize;
                                    for (cell, item) in self.stack[b..b + n as usize].iter_mut().zip(items) {
                                        *cell = item;
                                    }
                                    Ok(())
                                }
                                Err(e) => Err(e),
                            }
                        }
                        Op::SetIdx { var, k, v, ic } => self.vm_set_index(code, at, var, k, v, ic),
                        Op::SetPath { path, v } => self.vm_set_path(code, at, path, None, v),
                        Op::UpdPath { op, path, v } => self.vm_set_path(code, at, path, Some(op), v),
                        Op::MkList { dst, start, n } => {
                            let b = self.base + start as usize;
                            let items: Vec<Value> =
                                self.stack[b..b + n as usize].iter_mut().map(std::mem::take).collect();
                            match self.host.make_list(items) {
                                Ok(l) => match self.host.check_memory() {
                                    Ok(()) => self.put(dst, l),
                                    Err(e) => Err(e),
                                },
                                Err(e) => Err(e),
                            }
                        }
                        Op::MkMap { dst, map, start } => {
                            let keys = code.maps[map as usize];
                            let b = self.base + start as usize;
                            let mut m = Map::with_capacity(keys.len());
                            for (i, (k, _)) in keys.iter().enumerate() {
                                m.insert(k.clone(), std::mem::take(&mut self.stack[b + i]));
                            }
                            match self.host.make_map(m) {
                                Ok(v) => match self.host.check_memory() {
                                    Ok(()) => self.put(dst, v),
                                    Err(e) => Err(e),
                                },
                                Err(e) => Err(e),
                            }
                        }
                        Op::Neg { dst, a } => match self.val(code, a, || code.ospot[at][0]) {
                            Ok(Value::Num(n)) => self.put_num(dst, -n),
                            Ok(other) => Err(self.err(ErrKind::Type, format!("cannot negate a {}", other.type_name()))),
                            Err(e) => Err(e),
                        },
                        Op::Not { dst, a } => match self.truth(code, a, || code.ospot[at][0]) {
                            Ok(t) => {
                                self.consume(a);
                                self.put(dst, Value::Bool(!t))
                            }
                            Err(e) => Err(e),
                        },
                        Op::InterpBegin => {
                            self.ibufs.push(Vec::new());
                            Ok(())
                        }
                        Op::InterpLit { lit } => {
                            let mut out = self.ibufs.pop().unwrap_or_default();
                            out.extend_from_slice(code.lits[lit as usize]);
                            self.interp_part(out)
                        }
                        Op::InterpAdd { a } => {
                            let mut out = self.ibufs.pop().unwrap_or_default();
                            match self.val(code, a, || code.ospot[at][0]) {
                                Ok(v) => match self.host.write_text(&v, &mut out, self.host.lim.n(L::String)) {
                                    Ok(()) => self.interp_part(out),
                                    Err(e) => Err(e),
                                },
                                Err(e) => Err(e),
                            }
                        }
                        Op::InterpEnd { dst } => {
                            let out = self.ibufs.pop().unwrap_or_default();
                            let n = crate::meter::scaled(out.len() as u64, WORK_INTERP_BYTE_X256);
                            match self.host.work(WORK_CONCAT_BASE + n) {
                                Ok(()) => self.put(dst, Value::str(out)),
                                Err(e) => Err(e),
                            }
                        }
                        Op::ForPrep { base } => self.for_prep(base),
                        Op::ForNext { var, base, exit } => match self.for_value(base, 0.0) {
                            None => {
                                pc = exit as usize;
                                Ok(())
                            }
                            Some(i) => self.put_num(var, i),
                        },
                        Op::ForBack { var, base, to } => match self.step(code.pos[at]) {
                            Ok(()) => match self.for_value(base, 1.0) {
                                None => Ok(()),
                                Some(i) => {
                                    pc = to as usize;
                                    self.put_num(var, i)
                                }
                            },
                            Err(e) => Err(e),
                        },
                        Op::ForInPrep { base } => self.for_in_prep(base),
                        Op::ForInNext { first, second, base, exit } => match self.for_in_next(first, second, base) {
                            Ok(true) => Ok(()),
                            Ok(false) => {
                                pc = exit as usize;
                                Ok(())
                            }
                            Err(e) => Err(e),
                        },
                        Op::ForInEnd { base } => {
                            let b = self.base + base as usize;
                            let cost = match self.stack[b + 2] {
                                Value::Num(c) => c as isize,
                                _ => 0,
                            };
                            self.stack[b] = Value::Unset;
                            self.stack[b + 2] = Value::Nil;
                            self.charge(false, -cost)
                        }
                        Op::Ret(o) => match self.ret_val(code, o, || code.ospot[at][0]) {
                            Ok(g) => match frames.pop() {
                                None => {
                                    self.ret = g.value();
                                    return Ok(Flow::Return);
                                }
                                Some(f) => match self.vm_return(code, f, g, &mut next, &mut pc) {
                                    Ok(()) => break,
                                    Err(e) => Err(e),
                                },
                            },
                            Err(e) => Err(e),
                        },
                        Op::RetNil => match frames.pop() {
                            None => {
                                self.ret = Value::Nil;
                                return Ok(Flow::Return);
                            }
                            Some(f) => match self.vm_return(code, f, Got::Plain(Plain::Nil), &mut next, &mut pc) {
                                Ok(()) => break,
                                Err(e) => Err(e),
                            },
                        },
                        Op::End => match frames.pop() {
                            None => return Ok(Flow::Normal),
                            Some(f) => match self.vm_return(code, f, Got::Plain(Plain::Nil), &mut next, &mut pc) {
                                Ok(()) => break,
                                Err(e) => Err(e),
                            },
                        },
                    }
                };
                if let Err(e) = r {
                    // The failing instruction's line and column. A `try` around it in this
                    // code catches it; else each compiled caller's frame is closed, as a
                    // return through `enter` would close it, and its call is where the
                    // error is looked for next.
                    let mut e = located(spotted(e, code.spot[at]), code.pos[at]);
                    let mut here = cur.clone();
                    let mut at = at;
                    loop {
                        if let Some(h) = catcher(&here, at, &e) {
                            match *e {
                                Unwind::Error(err) => match self.vm_catch(&here, h, err) {
                                    Ok(()) => {
                                        pc = h.to as usize;
                                        next = Some(here);
                                        break;
                                    }
                                    // A failure of the catch itself (its storage) goes on.
                                    Err(e2) => e = located(e2, here.pos[at]),
                                },
                                other => e = Box::new(other),
                            }
                        }
                        match frames.pop() {
                            None => return Err(e),
                            Some((fcode, fpc, saved)) => {
                                self.vm_leave(&here, saved);
                                at = fpc - 1;
                                e = located(spotted(e, fcode.spot[at]), fcode.pos[at]);
                                here = fcode;
                            }
                        }
                    }
                    break;
                }
            }
        }
        Ok(Flow::Normal)
    }

    /// An interpolation's text after a part: back on the buffer stack once the string
    /// limit and the memory bound allow its length (checked after every part, as the
    /// tree evaluator does).
    #[inline]
    fn interp_part(&mut self, out: Vec<u8>) -> R<()> {
        let n = out.len();
        self.ibufs.push(out);
        self.host.check_str_len(n)?;
        self.host.check_memory_after(n)
    }

    /// Catch error `e` with handler `h` of `code` (this frame's): the snapshots of the
    /// `for ... in` loops the error left are released and the body's temporaries
    /// cleared, then the error's map goes to the `catch` variable.
    #[cold]
    #[inline(never)]
    fn vm_catch(&mut self, code: &Code<'p>, h: Handler, e: RtError) -> R<()> {
        // The anonymous functions of calls the error left are gone, as they are when
        // such a call returns.
        if let Value::Num(n) = self.stack[self.base + h.save as usize] {
            self.lambdas.truncate(n as usize);
        }
        // So are the texts of the interpolations it left.
        if let Value::Num(n) = self.stack[self.base + h.save as usize + 1] {
            self.ibufs.truncate(n as usize);
        }
        for &b in &code.forins[h.forins.0 as usize..h.forins.1 as usize] {
            let b = self.base + b as usize;
            // The snapshot and the index go too (the loop's registers are below the
            // temporaries cleared next).
            self.stack[b] = Value::Unset;
            self.stack[b + 1] = Value::Unset;
            if let Value::Num(cost) = self.stack[b + 2] {
                self.stack[b + 2] = Value::Nil;
                self.charge(false, -(cost as isize))?;
            }
        }
        for r in h.mark as usize..code.nregs as usize {
            self.stack[self.base + r] = Value::Unset;
        }
        let m = self.error_value(e)?;
        self.put(h.var, m)
    }

    /// A compiled callee returns `v` to its compiled caller `f`: its frame closed, the
    /// value written to the call's destination, the caller's code next. A failure of
    /// that write is the caller's call instruction's.
    #[inline]
    fn vm_return(
        &mut self,
        code: &Code<'p>,
        (fcode, fpc, saved): (Rc<Code<'p>>, usize, Saved),
        v: Got,
        next: &mut Option<Rc<Code<'p>>>,
        pc: &mut usize,
    ) -> R<()> {
        self.vm_leave(code, saved);
        let call = fpc - 1;
        let dst = match fcode.ops[call].op {
            Op::Call { dst, .. } => dst,
            _ => unreachable!("a frame returns to a call instruction"),
        };
        let r = self.put_got(dst, v);
        let r = r.map_err(|e| located(spotted(e, fcode.spot[call]), fcode.pos[call]));
        *pc = fpc;
        *next = Some(fcode);
        r
    }

    // ------------------------------------------------------------------
    // Operands
    // ------------------------------------------------------------------

    /// The value an operand names, in place (a variable may be unset).
    #[inline(always)]
    fn rd<'a>(&'a self, code: &'a Code<'p>, o: Opd) -> &'a Value {
        if o.is_reg() {
            &self.stack[self.base + o.idx()]
        } else if o.tag() == T_GLOBAL {
            &self.globals[o.idx()]
        } else {
            &code.consts[o.idx()]
        }
    }

    /// The cell of a variable or temporary.
    #[inline(always)]
    fn cell(&mut self, o: Opd) -> &mut Value {
        if o.is_reg() {
            &mut self.stack[self.base + o.idx()]
        } else {
            &mut self.globals[o.idx()]
        }
    }

    /// An operand's value to keep: a temporary is moved out, a variable or constant
    /// copied (shared); an unset variable is the `name` error at `sp`.
    #[inline(always)]
    fn val(&mut self, code: &Code<'p>, o: Opd, sp: impl FnOnce() -> Spot) -> R<Value> {
        match o.tag() {
            T_TEMP => Ok(std::mem::take(&mut self.stack[self.base + o.idx()])),
            T_CONST => Ok(code.consts[o.idx()].clone()),
            _ => {
                let v = self.rd(code, o);
                if let Value::Unset = v {
                    return Err(self.unset_at(slot_of(o), sp()));
                }
                Ok(v.clone())
            }
        }
    }

    /// A returned operand: a plain value by its payload (see `Plain`), any other as `val`.
    #[inline(always)]
    fn ret_val(&mut self, code: &Code<'p>, o: Opd, sp: impl FnOnce() -> Spot) -> R<Got> {
        if let Some(p) = Plain::of(self.rd(code, o)) {
            self.consume(o);
            return Ok(Got::Plain(p));
        }
        self.val(code, o, sp).map(Got::Val)
    }

    /// A builtin's `peek` over its arguments read in place (None: an argument is an
    /// unset variable, or the peek does not answer).
    #[inline(always)]
    fn peek_call(&self, code: &Code<'p>, peek: PeekFn, specs: &[(Opd, Spot)]) -> Option<Value> {
        let mut refs: [&Value; 3] = [&Value::Nil; 3];
        if specs.len() > refs.len() {
            return None;
        }
        for (r, &(o, _)) in refs.iter_mut().zip(specs) {
            let v = self.rd(code, o);
            if let Value::Unset = v {
                return None;
            }
            *r = v;
        }
        peek(&refs[..specs.len()])
    }

    /// A peeked call's end: what the call would charge (its constant work, the heap
    /// check), its temporaries consumed, the value written.
    #[inline(always)]
    fn peeked(&mut self, b: &'static Builtin, dst: Opd, specs: &[(Opd, Spot)], v: Value) -> R<()> {
        self.host.work(b.cost.before(&[]))?;
        self.host.check_memory()?;
        for &(o, _) in specs {
            self.consume(o);
        }
        self.put(dst, v)
    }

    /// A builtin call: its arguments copied out (up to four in an array on the native
    /// stack, no vector to build and free), the call, the arguments dropped before the
    /// result is written.
    #[inline(never)]
    fn call_vals(&mut self, code: &Code<'p>, b: &'static Builtin, dst: Opd, specs: &[(Opd, Spot)]) -> R<()> {
        let v = if let Ok(one) = <&[(Opd, Spot); 1]>::try_from(specs) {
            let [(o, sp)] = *one;
            let v = self.val(code, o, || sp)?;
            self.builtin_vals(b, &mut [v])?
        } else if specs.len() <= 4 {
            let mut vals: [Value; 4] = Default::default();
            self.vals_into(code, specs, &mut vals)?;
            self.builtin_vals(b, &mut vals[..specs.len()])?
        } else {
            let mut vals: Vec<Value> = vec![Value::Unset; specs.len()];
            self.vals_into(code, specs, &mut vals)?;
            self.builtin_vals(b, &mut vals)?
        };
        self.put(dst, v)
    }

    /// A builtin call's arguments into `out` (as long as `specs`), in order.
    #[inline(always)]
    fn vals_into(&mut self, code: &Code<'p>, specs: &[(Opd, Spot)], out: &mut [Value]) -> R<()> {
        for (slot, &(o, sp)) in out.iter_mut().zip(specs) {
            *slot = self.val(code, o, || sp)?;
        }
        Ok(())
    }

    /// Drop what a temporary operand holds once its instruction has read it in place
    /// (a variable or constant stays), so that no stale reference makes a later write
    /// copy a shared value.
    #[inline(always)]
    fn consume(&mut self, o: Opd) {
        if o.tag() == T_TEMP {
            // A plain value refers to nothing, so it may stay (a temporary is written
            // before it is read): no store at all on numeric paths.
            let cell = &mut self.stack[self.base + o.idx()];
            if !is_plain(cell) {
                *cell = Value::Unset;
            }
        }
    }

    /// The truth of an operand, read in place.
    #[inline]
    fn truth(&mut self, code: &Code<'p>, o: Opd, sp: impl FnOnce() -> Spot) -> R<bool> {
        match self.rd(code, o) {
            Value::Bool(b) => Ok(*b),
            Value::Unset => Err(self.unset_at(slot_of(o), sp())),
            v => Ok(v.truthy()),
        }
    }

    /// Write `v` to a destination: a variable through `store` (its storage charged), a
    /// temporary as it is.
    #[inline(always)]
    fn put(&mut self, dst: Opd, v: Value) -> R<()> {
        match dst.tag() {
            T_TEMP => {
                if dst != DISCARD {
                    self.stack[self.base + dst.idx()] = v;
                }
                Ok(())
            }
            _ => self.store_inline(slot_of(dst), v),
        }
    }

    /// Write a plain value: over a temporary (not charged) or over a plain value (none
    /// held) by its payload, else as `put` (see `Plain`).
    #[inline(always)]
    fn put_p(&mut self, dst: Opd, p: Plain) -> R<()> {
        if dst == DISCARD {
            return Ok(());
        }
        let temp = dst.tag() == T_TEMP;
        let cell = self.cell(dst);
        if temp || is_plain(cell) {
            p.write(cell);
            return Ok(());
        }
        self.store_inline(slot_of(dst), p.value())
    }

    /// Write a value read in place (`Got`).
    #[inline(always)]
    fn put_got(&mut self, dst: Opd, g: Got) -> R<()> {
        match g {
            Got::Plain(p) => self.put_p(dst, p),
            Got::Heap(h) => self.put_heap(dst, h),
            Got::Val(v) => self.put(dst, v),
        }
    }

    /// Write a value that holds storage into its destination in place (see `Heap`),
    /// charged as `put` charges it.
    #[inline(always)]
    fn put_heap(&mut self, dst: Opd, h: Heap) -> R<()> {
        if dst == DISCARD {
            return Ok(());
        }
        let temp = dst.tag() == T_TEMP;
        let nh = if temp { 0 } else { h.heap() };
        let cell = self.cell(dst);
        let old = h.replace(cell);
        if temp {
            drop(old);
            return Ok(());
        }
        let oh = if is_plain(&old) { 0 } else { old.heap() };
        drop(old);
        if nh != oh {
            self.charge(dst.tag() == T_GLOBAL, nh as isize - oh as isize)?;
        }
        Ok(())
    }

    /// Write a number: over a number in place (no storage changes).
    #[inline(always)]
    fn put_num(&mut self, dst: Opd, x: f64) -> R<()> {
        if dst == DISCARD {
            return Ok(());
        }
        if let Value::Num(n) = self.cell(dst) {
            *n = x;
            return Ok(());
        }
        self.put(dst, Value::Num(x))
    }

    // ------------------------------------------------------------------
    // Slow paths
    // ------------------------------------------------------------------

    #[inline(never)]
    fn bin_n_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, dst: Opd, a: Opd, k: f64) -> R<()> {
        let x = self.val(code, a, || code.ospot[at][0]).map_err(|e| located(e, code.pos[at]))?;
        let v = self.binop(op, x, Value::Num(k))?;
        self.put(dst, v)
    }

    #[inline(never)]
    fn test_n_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, a: Opd, k: f64) -> R<bool> {
        let x = self.val(code, a, || code.ospot[at][0]).map_err(|e| located(e, code.pos[at]))?;
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            let mut n = EqCount::default();
            let same = equals_counted(&x, &Value::Num(k), &mut n);
            self.host.work(n.units())?;
            return Ok(same == (op == BinOp::Eq));
        }
        Ok(self.binop(op, x, Value::Num(k))?.truthy())
    }

    #[inline(never)]
    fn bin_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, dst: Opd, a: Opd, b: Opd) -> R<()> {
        if op == BinOp::Concat {
            // Both operands read in place (a constant or variable is not copied).
            let (stack, globals, base) = (&self.stack, &self.globals, self.base);
            let at_opd = |o: Opd| -> &Value {
                if o.is_reg() {
                    &stack[base + o.idx()]
                } else if o.tag() == T_GLOBAL {
                    &globals[o.idx()]
                } else {
                    &code.consts[o.idx()]
                }
            };
            let (x, y) = (at_opd(a), at_opd(b));
            if !matches!(x, Value::Unset) && !matches!(y, Value::Unset) {
                let v = self.host.concat(x, y)?;
                self.consume(a);
                self.consume(b);
                return self.put(dst, v);
            }
        }
        let [sa, sb] = code.ospot[at];
        // An unset operand's error carries its name's column or none, never the
        // operator's (as the tree evaluator reports it).
        let x = self.val(code, a, || sa).map_err(|e| located(e, code.pos[at]))?;
        let y = self.val(code, b, || sb).map_err(|e| located(e, code.pos[at]))?;
        let v = self.binop(op, x, y)?;
        self.put(dst, v)
    }

    /// A comparison that is not of two numbers: `==` and `!=` compare in place (as the
    /// tree evaluator's `cond_slow`), the rest through `binop`.
    #[inline(never)]
    fn test_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, a: Opd, b: Opd) -> R<bool> {
        let [sa, sb] = code.ospot[at];
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            if let Value::Unset = self.rd(code, a) {
                return Err(located(self.unset_at(slot_of(a), sa), code.pos[at]));
            }
            if let Value::Unset = self.rd(code, b) {
                return Err(located(self.unset_at(slot_of(b), sb), code.pos[at]));
            }
            let mut n = EqCount::default();
            let same = equals_counted(self.rd(code, a), self.rd(code, b), &mut n);
            for o in [a, b] {
                self.consume(o);
            }
            self.host.work(n.units())?;
            return Ok(same == (op == BinOp::Eq));
        }
        // An unset operand's error carries its name's column or none, never the
        // operator's (as the tree evaluator reports it).
        let x = self.val(code, a, || sa).map_err(|e| located(e, code.pos[at]))?;
        let y = self.val(code, b, || sb).map_err(|e| located(e, code.pos[at]))?;
        Ok(self.binop(op, x, y)?.truthy())
    }

    #[inline(never)]
    fn index_slow(&mut self, code: &Code<'p>, at: usize, dst: Opd, a: Opd, k: Opd) -> R<()> {
        let [sa, sk] = code.ospot[at];
        let x = self.val(code, a, || sa)?;
        let key = self.val(code, k, || sk)?;
        if let (Value::Map(_), Value::Str(s)) = (&x, &key) {
            self.host.work(key_work(s.len()))?;
        }
        let v = self.index_value(&x, &key)?;
        self.put(dst, v)
    }

    #[inline(never)]
    fn field_slow(&mut self, code: &Code<'p>, at: usize, dst: Opd, a: Opd, name: &Bytes) -> R<()> {
        let x = self.val(code, a, || code.ospot[at][0]).map_err(|e| located(e, code.pos[at]))?;
        match &x {
            Value::Map(m) => match m.get(name) {
                Some(v) => {
                    let v = v.clone();
                    self.put(dst, v)
                }
                None => Err(self.missing_field(name, m)),
            },
            other => Err(self.err(
                ErrKind::Type,
                format!("cannot read field `{}` of a {}", String::from_utf8_lossy(name), other.type_name()),
            )),
        }
    }

    /// A call of user function `fi` whose `n` arguments are in this frame's registers
    /// from `start`: its frame opened there (`frame_enter`: the call's work, the
    /// argument and depth limits, the frame's storage), its other locals unset, its
    /// registers on the stack, the heap looked at. Its code and what the return restores.
    fn vm_call_open(&mut self, fi: usize, start: u32, n: u32) -> R<(Rc<Code<'p>>, Saved)> {
        let prog = self.prog;
        let f = &prog.funcs[fi];
        let new_base = self.base + start as usize;
        let n = n as usize;
        let mut arg_heap = 0usize;
        for v in &self.stack[new_base..new_base + n] {
            if !is_plain(v) {
                arg_heap += v.heap();
            }
        }
        let code = self.code_of(fi);
        let saved = self.frame_enter(fi, f, n, new_base, arg_heap)?;
        let need = new_base + code.nregs as usize;
        if self.stack.len() < need {
            self.stack.resize_with(need, Default::default);
        }
        // Its locals past the arguments, and its loops' registers, unset: the caller's
        // dead temporaries may lie there.
        for cell in &mut self.stack[new_base + n..new_base + code.nfixed as usize] {
            *cell = Value::Unset;
        }
        if let Err(e) = self.host.check_memory() {
            self.vm_leave(&code, saved);
            return Err(e);
        }
        Ok((code, saved))
    }

    /// Close the frame of compiled `code` (the current one): its registers emptied (the
    /// stack keeps its length: the next call reuses them), its accounting undone.
    #[inline(always)]
    fn vm_leave(&mut self, code: &Code<'p>, saved: Saved) {
        // A value that holds storage is dropped; a plain one may stay (a call's entry
        // unsets the locals and loop registers, and a temporary is written before it is
        // read), which saves the clearing of most registers.
        let b = self.base;
        for cell in &mut self.stack[b..b + code.nregs as usize] {
            if !is_plain(cell) && !matches!(cell, Value::Unset) {
                *cell = Value::Unset;
            }
        }
        self.frame_leave(saved);
    }

    fn path_keys(&mut self, p: &PathRef) -> SmallVec<[Value; 4]> {
        let b = self.base + p.keys as usize;
        self.stack[b..b + p.n as usize].iter_mut().map(std::mem::take).collect()
    }

    fn vm_place_call(&mut self, code: &Code<'p>, pc: &PlaceCall) -> R<Value> {
        let keys = self.path_keys(&pc.path);
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        for &(o, sp) in &code.args[pc.at as usize..(pc.at + pc.n) as usize] {
            vals.push(self.val(code, o, || sp)?);
        }
        self.place_builtin_vals(pc.b, slot_of(pc.path.root), &keys, vals)
    }

    /// `x[k] = v`: a plain value (nil, a boolean, a number) over a plain value in a list
    /// or map of the variable's own is written in place (no storage changes: plain
    /// values hold none; a map key within `KEY_FREE_BYTES` costs no work; the map's
    /// key is found through the site's inline cache); anything else through
    /// `set_index`.
    fn vm_set_index(&mut self, code: &Code<'p>, at: usize, var: Opd, k: Opd, v: Opd, ic: u32) -> R<()> {
        if let Some(x) = Plain::of(self.rd(code, v)) {
            let key = self.rd(code, k).clone();
            let done = match (self.cell(var), &key) {
                (Value::List(l), Value::Num(i)) => match Rc::get_mut(l) {
                    Some(l) => match list_at(*i, l.len()) {
                        Some(j) => l.with_item(j, |item| put_plain(item, x)),
                        None => false,
                    },
                    None => false,
                },
                (Value::Map(m), Value::Str(s)) if s.len() <= KEY_FREE_BYTES => match Rc::get_mut(m) {
                    Some(m) => {
                        m.with_value_cached(s, &code.ic[ic as usize], |item| put_plain(item, x)).unwrap_or(false)
                    }
                    None => false,
                },
                _ => false,
            };
            if done {
                self.consume(k);
                return Ok(());
            }
        }
        let [sk, sv] = code.ospot[at];
        let val = self.val(code, v, || sv)?;
        let key = self.val(code, k, || sk)?;
        self.set_index(slot_of(var), key, val)
    }

    /// `PLACE = v` and `PLACE op= v`: a number over a number along containers the
    /// variable alone holds is written in place; anything else through the tree
    /// evaluator's place functions (which copy shared containers and charge).
    fn vm_set_path(&mut self, code: &Code<'p>, at: usize, path: u32, op: Option<BinOp>, v: Opd) -> R<()> {
        let p = code.paths[path as usize];
        let rhs = self.val(code, v, || code.ospot[at][0])?;
        let keys = self.path_keys(&p);
        if let Value::Num(y) = rhs {
            let root = self.cell(p.root);
            let ics = &code.ic[p.ic as usize..(p.ic + p.n) as usize];
            if num_in_place(root, &keys, ics, &mut |x| match op {
                None => Some(y),
                Some(op) => arith(op, x, y),
            }) {
                return Ok(());
            }
        }
        match op {
            None => self.assign_keys(slot_of(p.root), &keys, rhs),
            Some(op) => self.compound_keys(slot_of(p.root), &keys, op, rhs),
        }
    }

    /// A numeric `for`'s next value (its count moved on by `up` first), or None past
    /// the end. Its registers hold numbers from `ForPrep` on (the compiler's own).
    #[inline(always)]
    fn for_value(&mut self, base: u32, up: f64) -> Option<f64> {
        let b = self.base + base as usize;
        let Some([Value::Num(a), Value::Num(end), Value::Num(st), Value::Num(k)]) =
            self.stack.get_mut(b..b + 4).and_then(|s| <&mut [Value; 4]>::try_from(s).ok())
        else {
            return None;
        };
        *k += up;
        let (a, end, st, k) = (*a, *end, *st, *k);
        let mut i = a + k * st;
        if !i.is_finite() {
            i = range_term_wide(a, k, st);
        }
        if !i.is_finite() || (st > 0.0 && i > end) || (st < 0.0 && i < end) {
            None
        } else {
            Some(i)
        }
    }

    fn for_prep(&mut self, base: u32) -> R<()> {
        let b = self.base + base as usize;
        let (a, e, st) = (&self.stack[b], &self.stack[b + 1], &self.stack[b + 2]);
        let (Value::Num(_), Value::Num(_), Value::Num(st)) = (a, e, st) else {
            let bad = [a, e, st].into_iter().find(|v| !matches!(v, Value::Num(_))).map(|v| v.type_name());
            return Err(self.err(ErrKind::Type, format!("for bounds must be numbers, got {}", bad.unwrap_or("?"))));
        };
        if *st == 0.0 {
            return Err(self.err(ErrKind::Value, "for step must not be 0"));
        }
        self.stack[b + 3] = Value::Num(0.0);
        Ok(())
    }

    fn for_in_prep(&mut self, base: u32) -> R<()> {
        let b = self.base + base as usize;
        let snap = &self.stack[b];
        if !matches!(snap, Value::List(_) | Value::Map(_)) {
            return Err(self.err(ErrKind::Type, format!("for ... in needs a list or map, got {}", snap.type_name())));
        }
        // The snapshot is held by this frame while the loop runs.
        let cost = ACCT_SNAPSHOT + snap.heap();
        self.charge(false, cost as isize)?;
        self.stack[b + 1] = Value::Num(0.0);
        self.stack[b + 2] = Value::Num(cost as f64);
        Ok(())
    }

    /// A `for ... in` loop's index register (at `b + 1`) past item `i`: it holds a number
    /// while the loop runs, so its payload alone is written (see `Plain`).
    #[inline(always)]
    fn set_index_reg(&mut self, b: usize, i: usize) {
        match &mut self.stack[b + 1] {
            Value::Num(n) => *n = (i + 1) as f64,
            slot => *slot = Value::Num((i + 1) as f64),
        }
    }

    /// The next item of a `for ... in` into its variables; false past the end.
    ///
    /// Each case writes its values where it makes them: a cloned item carried out of the
    /// match (as one tuple for all cases) went through a stack temporary written by two
    /// 8-byte stores and read back by one 16-byte load, a store-forwarding stall on every
    /// iteration.
    fn for_in_next(&mut self, first: Opd, second: Opd, base: u32) -> R<bool> {
        let b = self.base + base as usize;
        // (The index is a count this loop wrote: a signed conversion is exact and
        // cheaper than the saturating unsigned one.)
        let i = match self.stack[b + 1] {
            Value::Num(i) => i as i64 as usize,
            _ => 0,
        };
        match &self.stack[b] {
            Value::List(l) if i < l.len() => {
                let item = &l.items()[i];
                if second == NONE {
                    let g = Got::of(item);
                    self.set_index_reg(b, i);
                    self.put_got(first, g)?;
                } else {
                    let g = Got::of(item);
                    self.set_index_reg(b, i);
                    self.put_p(first, Plain::Num(i as f64))?;
                    self.put_got(second, g)?;
                }
                Ok(true)
            }
            Value::Map(m) if i < m.len() => {
                let (k, v) = m.get_index(i).expect("index in range");
                let k = Heap::Str(k.clone());
                let v = (second != NONE).then(|| Got::of(v));
                self.set_index_reg(b, i);
                self.put_heap(first, k)?;
                if let Some(v) = v {
                    self.put_got(second, v)?;
                }
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// The variable an operand names (for its storage charge and its name in errors).
#[inline]
fn slot_of(o: Opd) -> Slot {
    match o.tag() {
        T_GLOBAL => Slot::Global(o.idx() as u32),
        _ => Slot::Local(o.idx() as u32),
    }
}

/// The handler of `code` that catches `e` raised at instruction `at`: the innermost
/// `try` whose body holds it, for an error (a limit is never caught).
#[inline]
fn catcher(code: &Code<'_>, at: usize, e: &Fail) -> Option<Handler> {
    if !matches!(**e, Unwind::Error(_)) {
        return None;
    }
    let at = at as u32;
    code.handlers.iter().find(|h| h.start <= at && at < h.end).copied()
}

/// A test's outcome: on to `to` when it came out `when`, else the next instruction.
#[inline(always)]
fn branch(t: R<bool>, when: bool, to: u32, pc: &mut usize) -> R<()> {
    if t? == when {
        *pc = to as usize;
    }
    Ok(())
}

/// A value that holds no storage and needs no drop: nil, a boolean, a number.
#[inline(always)]
fn is_plain(v: &Value) -> bool {
    matches!(v, Value::Nil | Value::Bool(_) | Value::Num(_))
}

/// Write plain `x` over `item` when that is plain too (no storage changes).
#[inline(always)]
fn put_plain(item: &mut Value, x: Plain) -> bool {
    if is_plain(item) {
        x.write(item);
        true
    } else {
        false
    }
}

/// A value read in place for a register: a plain one by its payload, any other cloned.
enum Got {
    Plain(Plain),
    Heap(Heap),
    Val(Value),
}

impl Got {
    #[inline(always)]
    fn value(self) -> Value {
        match self {
            Got::Plain(p) => p.value(),
            Got::Heap(h) => h.value(),
            Got::Val(v) => v,
        }
    }

    #[inline(always)]
    fn of(v: &Value) -> Got {
        match v {
            Value::Num(n) => Got::Plain(Plain::Num(*n)),
            Value::Nil => Got::Plain(Plain::Nil),
            Value::Bool(b) => Got::Plain(Plain::Bool(*b)),
            Value::Str(s) => Got::Heap(Heap::Str(s.clone())),
            Value::List(l) => Got::Heap(Heap::List(l.clone())),
            Value::Map(m) => Got::Heap(Heap::Map(m.clone())),
            other => Got::Val(other.clone()),
        }
    }
}

/// A value that holds storage, read out of a list, a map or a register as its one
/// pointer (its count raised) and written into its destination there (`put_heap`):
/// a cloned `Value` carried to its destination went through a stack temporary written
/// by two 8-byte stores and read back by one 16-byte load, which misses the CPU's
/// store forwarding (a dozen cycles on every `for w in words`).
enum Heap {
    Str(Bytes),
    List(Rc<List>),
    Map(Rc<Map>),
}

impl Heap {
    #[inline(always)]
    fn value(self) -> Value {
        match self {
            Heap::Str(s) => Value::Str(s),
            Heap::List(l) => Value::List(l),
            Heap::Map(m) => Value::Map(m),
        }
    }

    /// Its accounted storage (`Value::heap`).
    #[inline(always)]
    fn heap(&self) -> usize {
        match self {
            Heap::Str(s) => crate::value::str_heap(s),
            Heap::List(l) => l.acct(),
            Heap::Map(m) => m.acct(),
        }
    }

    /// Written into `cell`, the value it held returned.
    #[inline(always)]
    fn replace(self, cell: &mut Value) -> Value {
        match self {
            Heap::Str(s) => std::mem::replace(cell, Value::Str(s)),
            Heap::List(l) => std::mem::replace(cell, Value::List(l)),
            Heap::Map(m) => std::mem::replace(cell, Value::Map(m)),
        }
    }
}

/// A value that holds no storage, read out of its register by its payload alone: a
/// number written a moment before by an 8-byte store is read back by an 8-byte load
/// (a 16-byte load of the whole value would miss the CPU's store forwarding), and
/// written over a number by its payload alone.
#[derive(Clone, Copy)]
enum Plain {
    Nil,
    Bool(bool),
    Num(f64),
}

impl Plain {
    #[inline(always)]
    fn value(self) -> Value {
        match self {
            Plain::Nil => Value::Nil,
            Plain::Bool(b) => Value::Bool(b),
            Plain::Num(n) => Value::Num(n),
        }
    }

    #[inline(always)]
    fn of(v: &Value) -> Option<Plain> {
        match v {
            Value::Num(n) => Some(Plain::Num(*n)),
            Value::Nil => Some(Plain::Nil),
            Value::Bool(b) => Some(Plain::Bool(*b)),
            _ => None,
        }
    }

    #[inline(always)]
    fn write(self, item: &mut Value) {
        match (self, item) {
            (Plain::Num(n), Value::Num(old)) => *old = n,
            (Plain::Num(n), item) => *item = Value::Num(n),
            (Plain::Nil, item) => *item = Value::Nil,
            (Plain::Bool(b), item) => *item = Value::Bool(b),
        }
    }
}

/// The item index a number names in a list of `len` items (negative from the end),
/// when it is a whole number in range.
#[inline(always)]
fn list_at(n: f64, len: usize) -> Option<usize> {
    let i = if n < 0.0 { n + len as f64 } else { n };
    if i >= 0.0 && i < len as f64 {
        let j = i as usize;
        if j as f64 == i {
            return Some(j);
        }
    }
    None
}

#[inline(always)]
fn num_cmp(op: BinOp, x: f64, y: f64) -> bool {
    match op {
        BinOp::Lt => x < y,
        BinOp::Le => x <= y,
        BinOp::Gt => x > y,
        BinOp::Ge => x >= y,
        BinOp::Eq => x == y,
        _ => x != y,
    }
}

/// Follow `keys` through lists and maps that nothing else shares down to a number and
/// replace it by `f(number)`; false (nothing changed) when any of that does not hold.
/// A number replaced by a number changes no accounting.
fn num_in_place(v: &mut Value, keys: &[Value], ics: &[Cell<u32>], f: &mut dyn FnMut(f64) -> Option<f64>) -> bool {
    let (Some((k, rest)), Some((ic, ics))) = (keys.split_first(), ics.split_first()) else {
        if let Value::Num(x) = v {
            if let Some(r) = f(*x) {
                *x = r;
                return true;
            }
        }
        return false;
    };
    match (v, k) {
        (Value::List(rc), Value::Num(n)) => {
            let Some(l) = Rc::get_mut(rc) else { return false };
            let Some(i) = list_at(*n, l.len()) else { return false };
            l.with_item(i, |item| num_in_place(item, rest, ics, f))
        }
        (Value::Map(rc), Value::Str(key)) => {
            if key.len() > KEY_FREE_BYTES {
                return false;
            }
            let Some(m) = Rc::get_mut(rc) else { return false };
            m.with_value_cached(key.as_slice(), ic, |item| num_in_place(item, rest, ics, f)).unwrap_or(false)
        }
        _ => false,
    }
}
