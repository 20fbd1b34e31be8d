//! The dispatch loop: runs compiled code (`compile.rs`) on the interpreter's frame.
//!
//! One `match` over the instruction (`vm_exec`; the instructions whose fast paths are
//! long in `vm_op`, out of line), operands read where they are (`Interp::rd`), the
//! number fast paths inline and everything else in the helpers of `interp` (`binop`,
//! `index_value`, `set_index`, the builtin call), so an operator's meaning is written
//! once. Steps, work and storage are charged by the same functions as in
//! `interp.rs` (`step`, `work`, `store`/`charge`). An error raised by an instruction is
//! given its line and column from the code's side table (`fail_at`).
//!
//! This is a child module of `interp` so that it works on the interpreter's frame
//! directly. Its children: `vm/operands.rs` (reading operands in place and writing
//! results, with their charges) and `vm/ops.rs` (the instructions past their fast
//! paths).

use super::*;
use crate::compile::*;

#[path = "vm/operands.rs"]
mod operands;
#[path = "vm/ops.rs"]
mod ops;

pub(super) use operands::drop_held;
use operands::*;

/// A compiled caller waiting for its callee (calls between compiled functions run in
/// the same loop, without a native call each).
///
/// Every field is a whole word: a frame built on the native stack by narrower stores
/// and copied with wider loads made every call stall on the CPU's store forwarding.
struct VmFrame<'c, 'p> {
    code: &'c Code<'p>,
    /// Where the caller goes on (its call instruction is at `pc - 1`).
    pc: usize,
    /// The call's destination operand (`Opd`'s word, widened), kept here so that the
    /// return does not read the call instruction again.
    dst: u64,
    saved: Saved,
}

/// The compiled callers waiting, innermost last. A call writes its frame field by
/// field into a slot kept from earlier calls (`Vec::push` built the frame on the
/// native stack first and copied it with 16-byte loads of what had just been written
/// by 8-byte stores, a store-forwarding stall on every call); slots past `depth` are
/// stale and reused.
struct Frames<'c, 'p> {
    v: Vec<VmFrame<'c, 'p>>,
    depth: usize,
}

impl<'c, 'p> Frames<'c, 'p> {
    #[inline(always)]
    fn push(&mut self, code: &'c Code<'p>, pc: usize, dst: Opd, saved: Saved) {
        let dst = u64::from(dst.0);
        match self.v.get_mut(self.depth) {
            Some(f) => {
                f.code = code;
                f.pc = pc;
                f.dst = dst;
                f.saved.0 = saved.0;
                f.saved.1 = saved.1;
                f.saved.2 = saved.2;
            }
            None => self.v.push(VmFrame { code, pc, dst, saved }),
        }
        self.depth += 1;
    }

    /// The innermost frame, taken off.
    #[inline(always)]
    fn pop(&mut self) -> Option<(&'c Code<'p>, usize, Opd, Saved)> {
        self.depth = self.depth.checked_sub(1)?;
        let f = &self.v[self.depth];
        Some((f.code, f.pc, Opd(f.dst as u32), f.saved))
    }
}

/// Why `vm_exec` stopped.
enum Exit<'c, 'p> {
    /// The run of the outermost code is over.
    Done(Flow),
    /// Instruction `at` of this code failed.
    Fail(&'c Code<'p>, usize, Fail),
}

impl<'p> Interp<'p> {
    /// Run a compiled body on the current frame (its registers already on the stack).
    /// A call of a user function from here opens its frame and runs its code in this
    /// same loop; its return closes the frame and goes on in the caller.
    pub(crate) fn run_code(&mut self, codes: &Codes<'p>, first: &Code<'p>) -> R<Flow> {
        // The texts of interpolations an error leaves unfinished go with it.
        let ib = self.ibufs.len();
        let r = self.run_code_in(codes, first);
        if r.is_err() {
            self.ibufs.truncate(ib);
        }
        r
    }

    fn run_code_in<'c>(&mut self, codes: &'c Codes<'p>, first: &'c Code<'p>) -> R<Flow> {
        let mut frames = Frames { v: Vec::new(), depth: 0 };
        let (mut cur, mut pc) = (first, 0usize);
        loop {
            match self.vm_exec(codes, cur, pc, &mut frames) {
                Exit::Done(flow) => return Ok(flow),
                Exit::Fail(code, at, e) => (cur, pc) = self.vm_unwind(code, at, e, &mut frames)?,
            }
        }
    }

    /// Run `code` from instruction `pc`, calls and returns between compiled functions
    /// included, until the outermost code ends or an instruction fails.
    ///
    /// The loop's state is `self`, the code (a plain reference into `Codes`: a call or
    /// a return moves a pointer, no reference count) and the instruction index, and
    /// nothing inline here keeps them out of registers: calls, returns and every
    /// instruction whose fast path is not short run out of line (`vm_call`, `vm_ret`,
    /// `vm_op`), each returning what the loop goes on with. Measured (WORKLOG, twelfth
    /// session): with the unwinding, an `Rc` for the code and the returns inline, LLVM
    /// kept the index and the code in stack slots, two store-to-load forwardings on
    /// the path to every next instruction.
    #[inline(never)]
    fn vm_exec<'c>(
        &mut self,
        codes: &'c Codes<'p>,
        mut code: &'c Code<'p>,
        mut pc: usize,
        frames: &mut Frames<'c, 'p>,
    ) -> Exit<'c, 'p> {
        // Instruction `$at` run by `vm_op`, the index it returns next. A macro, not a
        // helper: the same code at each place (a helper moved the loop's layout, WORKLOG
        // thirteenth session).
        macro_rules! out_of_line {
            ($at:expr) => {
                match self.vm_op(code, $at) {
                    Ok(to) => {
                        pc = to;
                        Ok(())
                    }
                    Err(e) => Err(e),
                }
            };
        }
        loop {
            let at = pc;
            pc += 1;
            let ins = &code.ops[at];
            let stepped = if ins.step { self.step_line(ins.pos) } else { Ok(()) };
            let r: R<()> = if let Err(e) = stepped {
                Err(e)
            } else {
                match ins.op {
                    Op::Step => self.step_line(ins.pos),
                    Op::StepJump(to) => {
                        pc = to as usize;
                        self.step(ins.pos)
                    }
                    // (A plain value read needs no `consume`: it refers to nothing, and
                    // a temporary holding one may stay.)
                    Op::Move { dst, src } => match Plain::of(self.rd(code, src)) {
                        Some(p) => self.put_p(dst, p),
                        None => match self.val(code, src, || code.ospot[at][0]) {
                            Ok(v) => self.put(dst, v),
                            Err(e) => Err(e),
                        },
                    },
                    Op::Bin { op, dst, a, b } => self.op_bin(code, at, op, dst, a, b),
                    Op::Add { dst, a, b } => self.op_bin(code, at, BinOp::Add, dst, a, b),
                    Op::Sub { dst, a, b } => self.op_bin(code, at, BinOp::Sub, dst, a, b),
                    Op::Mul { dst, a, b } => self.op_bin(code, at, BinOp::Mul, dst, a, b),
                    Op::Mod { dst, a, b } => self.op_bin(code, at, BinOp::Mod, dst, a, b),
                    Op::BinN { op, dst, a, k } => self.op_bin_n(code, at, op, dst, a, k),
                    Op::AddN { dst, a, k } => self.op_bin_n(code, at, BinOp::Add, dst, a, k),
                    Op::SubN { dst, a, k } => self.op_bin_n(code, at, BinOp::Sub, dst, a, k),
                    Op::MulN { dst, a, k } => self.op_bin_n(code, at, BinOp::Mul, dst, a, k),
                    Op::ModN { dst, a, k } => match self.rd(code, a) {
                        Value::Num(x) => match int_mod_by(*x, k) {
                            Some(r) => self.put_num(dst, r),
                            None => self.mod_n_slow(code, at, dst, a, k),
                        },
                        _ => self.mod_n_slow(code, at, dst, a, k),
                    },
                    Op::TestN { op, a, k, to } => {
                        let t = match self.rd(code, a) {
                            Value::Num(x) => Ok(num_cmp(op, *x, k)),
                            _ => self.test_n_slow(code, at, op, a, k),
                        };
                        branch(t, false, to, &mut pc)
                    }
                    Op::TestNBack { op, a, k, to } => match self.step(ins.pos) {
                        Ok(()) => {
                            let t = match self.rd(code, a) {
                                Value::Num(x) => Ok(num_cmp(op, *x, k)),
                                _ => self.test_n_slow(code, at, op, a, k),
                            };
                            branch_back(t, to, &mut pc)
                        }
                        Err(e) => Err(e),
                    },
                    Op::TestBack { op, a, b, to } => match self.step(ins.pos) {
                        Ok(()) => {
                            let t = match (self.rd(code, a), self.rd(code, b)) {
                                (Value::Num(x), Value::Num(y)) => Ok(num_cmp(op, *x, *y)),
                                _ => self.test_other(code, at, op, a, b),
                            };
                            branch_back(t, to, &mut pc)
                        }
                        Err(e) => Err(e),
                    },
                    Op::UpdN { op, var, k } => self.op_upd_n(op, var, k),
                    Op::IncN { var, k } => self.op_upd_n(BinOp::Add, var, k),
                    Op::DecN { var, k } => self.op_upd_n(BinOp::Sub, var, k),
                    Op::Test { op, a, b, to } => {
                        let t = match (self.rd(code, a), self.rd(code, b)) {
                            (Value::Num(x), Value::Num(y)) => Ok(num_cmp(op, *x, *y)),
                            _ => self.test_other(code, at, op, a, b),
                        };
                        branch(t, false, to, &mut pc)
                    }
                    Op::JumpIf { c, when, keep, to } => match self.truth(code, c, || code.ospot[at][0]) {
                        Ok(t) => {
                            if !keep {
                                self.consume(c);
                            }
                            if t == when {
                                std::hint::cold_path();
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
                            self.upd_slow(code, at, op, var, v)
                        }
                    }
                    Op::ForNext { var, base, exit } => match self.for_value(base, 0.0) {
                        None => {
                            std::hint::cold_path();
                            pc = exit as usize;
                            Ok(())
                        }
                        Some(i) => self.put_num(var, i),
                    },
                    Op::ForBack { var, base, to } => match self.step(ins.pos) {
                        Ok(()) => match self.for_value(base, 1.0) {
                            None => {
                                std::hint::cold_path();
                                Ok(())
                            }
                            Some(i) => {
                                pc = to as usize;
                                self.put_num(var, i)
                            }
                        },
                        Err(e) => Err(e),
                    },
                    Op::Call { .. } => match self.vm_call(codes, code, pc, frames, ins) {
                        Ok(callee) => {
                            code = callee;
                            pc = 0;
                            continue;
                        }
                        Err(e) => Err(e),
                    },
                    Op::Ret(_) | Op::RetNil | Op::End => {
                        let (ret, flow) = match ins.op {
                            Op::Ret(o) => (o, Flow::Return),
                            Op::RetNil => (NONE, Flow::Return),
                            _ => (NONE, Flow::Normal),
                        };
                        match self.vm_ret(code, at, frames, ret) {
                            Ok(Some((caller, to))) => {
                                code = caller;
                                pc = to;
                                continue;
                            }
                            Ok(None) => return Exit::Done(flow),
                            Err(e) => Err(e),
                        }
                    }
                    Op::Index { dst, a, k, .. } | Op::IndexN { dst, a, k, .. } => 'op: {
                        // The site's cache for a constant key (a record's field), else
                        // the hash (a key that changes would miss the cache each time).
                        // (`index_in_place` in vm/ops.rs makes the same reads for a chain's
                        // slow walk: keep the two in step. Shared through one function,
                        // this path cost fannkuch 0.6% more instructions.)
                        // A whole-number constant index reads a list's item without its
                        // operand's decode and conversion; the two share the write (a
                        // copy of it for each made the loop keep its index in a stack
                        // slot: loop +3%).
                        // A list's item that is a number is written as one (through
                        // `Got`, its kind was matched, the `Got` built on the native
                        // stack, copied and matched again: about 40 instructions). Only
                        // a number: an arm more for a boolean or a list (queens 3%,
                        // binarytrees 2% fewer instructions) made LLVM keep `self` in a
                        // stack slot on the arithmetic paths, loop +11% CPU (WORKLOG,
                        // thirty-second session).
                        // A map's value or a string's byte that is a string is written
                        // as one too, by a call (`put_heap_out`): the write inline made
                        // LLVM keep the globals' address in a stack slot, loop +18% CPU
                        // (thirty-third session).
                        let fast = match (ins.op, self.rd(code, a)) {
                            (op, Value::List(l)) => {
                                let j = match op {
                                    Op::IndexN { i, .. } => list_at_int(i, l.len()),
                                    _ => match self.rd(code, k) {
                                        Value::Num(n) => list_at(*n, l.len()),
                                        _ => None,
                                    },
                                };
                                match j.map(|j| &l.items()[j]) {
                                    Some(Value::Num(x)) => {
                                        let x = *x;
                                        self.consume(a);
                                        self.consume(k);
                                        break 'op self.put_num(dst, x);
                                    }
                                    item => item.map(Got::of),
                                }
                            }
                            // (`IndexN` on anything else reads its constant as `Index`
                            // does: a string's byte stays on this path.)
                            (op, x) => match (x, self.rd(code, k)) {
                                (Value::Map(m), Value::Str(s)) if s.len() <= KEY_FREE_BYTES => {
                                    let v = match op {
                                        Op::Index { ic, .. } if k.tag() == T_CONST => {
                                            m.get_cached(s, &code.ic[ic as usize])
                                        }
                                        _ => m.get(s),
                                    };
                                    match v {
                                        Some(Value::Str(v)) => {
                                            let v = v.clone();
                                            self.consume(a);
                                            self.consume(k);
                                            break 'op self.put_heap_out(dst, Heap::Str(v));
                                        }
                                        v => v.map(Got::of),
                                    }
                                }
                                (Value::Str(s), Value::Num(n)) => match list_at(*n, s.len()) {
                                    Some(i) => {
                                        let v = crate::value::byte_str(s[i]);
                                        self.consume(a);
                                        self.consume(k);
                                        break 'op self.put_heap_out(dst, Heap::Str(v));
                                    }
                                    None => None,
                                },
                                _ => None,
                            },
                        };
                        match fast {
                            Some(g) => {
                                self.consume(a);
                                self.consume(k);
                                self.put_got(dst, g)
                            }
                            None => self.index_slow(code, at, dst, a, k),
                        }
                    }
                    Op::Field { dst, a, ic, name } => 'op: {
                        let fast = match self.rd(code, a) {
                            Value::Map(m) => match m.get_cached(name, &code.ic[ic as usize]) {
                                // (A number as one, not through `Got`'s dispatch.)
                                Some(Value::Num(x)) => Some(Got::Plain(Plain::Num(*x))),
                                // (A record into its variable, `x = x.next`, written
                                // here: through `Got` it went by the native stack.)
                                Some(Value::Map(v)) => {
                                    let v = v.clone();
                                    self.consume(a);
                                    break 'op self.put_heap(dst, Heap::Map(v));
                                }
                                // (A string by a call, as `Index` writes one: `x = r.name`
                                // 159 -> 132 machine instructions.)
                                Some(Value::Str(v)) => {
                                    let v = v.clone();
                                    self.consume(a);
                                    break 'op self.put_heap_out(dst, Heap::Str(v));
                                }
                                v => v.map(Got::of),
                            },
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
                    Op::GetPath { dst, path } => self.get_path(code, dst, path),
                    Op::MkList { dst, at, n } => self.mk_list(code, dst, at, n),
                    Op::MkMap { dst, map, at } => self.mk_map(code, dst, map, at),
                    Op::SetIdx { var, k, v, ic } => self.vm_set_index(code, at, var, k, v, ic),
                    // The next item of a list into the one loop variable, here; the
                    // rest (a map, two variables, the end) in `vm_op`.
                    Op::ForInNext { first, second, base, .. } if second == NONE => {
                        match self.for_in_item(first, base) {
                            Some(r) => r,
                            None => out_of_line!(at),
                        }
                    }
                    // `get(m, k[, d])` read in place here; any other operands in `vm_op`.
                    Op::Get { b, dst, at: args, n } => {
                        let specs = &code.args[args as usize..(args + n) as usize];
                        match self.get_fast(code, specs) {
                            Some(Value::Num(x)) => {
                                let x = *x;
                                match self.got_from(b, specs) {
                                    Ok(()) => self.put_num(dst, x),
                                    Err(e) => Err(e),
                                }
                            }
                            Some(v) => {
                                let g = Got::of(v);
                                match self.got_from(b, specs) {
                                    Ok(()) => self.put_got(dst, g),
                                    Err(e) => Err(e),
                                }
                            }
                            None => out_of_line!(at),
                        }
                    }
                    // The back edge: the step, then a list's next item into the one
                    // loop variable here; the rest in `vm_op`.
                    Op::ForInBack { first, second, base, to } => match self.step(ins.pos) {
                        Ok(()) => match if second == NONE { self.for_in_item(first, base) } else { None } {
                            Some(r) => {
                                pc = to as usize;
                                r
                            }
                            // A map's next entry, a list's item with its index, or the
                            // loop's end: `for_in_back`, not through `vm_op`.
                            None => match self.for_in_back(first, second, base, to, at) {
                                Ok(to) => {
                                    pc = to;
                                    Ok(())
                                }
                                Err(e) => Err(e),
                            },
                        },
                        Err(e) => Err(e),
                    },
                    Op::SetPath { path, v } => self.vm_set_path(code, at, path, None, v),
                    Op::UpdPath { op, path, v } => self.vm_set_path(code, at, path, Some(op), v),
                    Op::TestK { op, a, k, to } => {
                        let t = self.test_k(code, at, op, a, k);
                        branch(t, false, to, &mut pc)
                    }
                    Op::TestKBack { op, a, k, to } => match self.step(ins.pos) {
                        Ok(()) => {
                            let t = self.test_k(code, at, op, a, k);
                            branch_back(t, to, &mut pc)
                        }
                        Err(e) => Err(e),
                    },
                    // Every other instruction, out of line: its code kept out of this loop's
                    // registers. (Named, not `_`: with every kind an arm, the jump table
                    // needs no range check of the kind.)
                    Op::Neg { .. }
                    | Op::Not { .. }
                    | Op::CapCheck(_)
                    | Op::Builtin { .. }
                    | Op::BuiltinPlace { .. }
                    | Op::InterpBegin { .. }
                    | Op::InterpLit { .. }
                    | Op::InterpAdd { .. }
                    | Op::InterpEnd { .. }
                    | Op::Throw(_)
                    | Op::TryEnter { .. }
                    | Op::LamMark { .. }
                    | Op::LamRelease { .. }
                    | Op::MkLambda { .. }
                    | Op::Unpack { .. }
                    | Op::ForPrep { .. }
                    | Op::ForInPrep { .. }
                    | Op::ForInNext { .. }
                    | Op::ForInEnd { .. } => out_of_line!(at),
                }
            };
            if let Err(e) = r {
                return Exit::Fail(code, at, e);
            }
        }
    }

    /// A call of user function `fi` at the instruction before `pc` of `cur`: its frame
    /// opened (`vm_call_open`), the caller's frame kept, the callee's code.
    /// (The call instruction `ins` is passed whole: its four fields as arguments took
    /// three of them through the native stack.)
    #[inline(never)]
    fn vm_call<'c>(
        &mut self,
        codes: &'c Codes<'p>,
        cur: &'c Code<'p>,
        pc: usize,
        frames: &mut Frames<'c, 'p>,
        ins: &Ins<'p>,
    ) -> R<&'c Code<'p>> {
        let Op::Call { fi, start, n, dst } = ins.op else { unreachable!("vm_call runs a call") };
        // The caller's frame first, with what the return restores (read before the call
        // changes it, as `frame_enter` reads it): the caller's code, index and
        // destination need no register through the call's accounting.
        let saved = self.saved();
        frames.push(cur, pc, dst, saved);
        match self.vm_call_open(codes, fi as usize, start, n, saved) {
            Ok(callee) => Ok(callee),
            Err(e) => {
                frames.depth -= 1;
                Err(e)
            }
        }
    }

    /// A `return` of operand `ret` (`NONE`: nil, as `return` alone and the end of a
    /// body give) at instruction `at` of `code`: to the compiled caller's code and
    /// index, or None when `code` is the outermost (`self.ret` set). (`NONE` rather
    /// than an `Option`: the option's operand went through the native stack.)
    #[inline(never)]
    fn vm_ret<'c>(
        &mut self,
        code: &'c Code<'p>,
        at: usize,
        frames: &mut Frames<'c, 'p>,
        ret: Opd,
    ) -> R<Option<(&'c Code<'p>, usize)>> {
        let outermost = frames.depth == 0;
        match (ret != NONE).then_some(ret) {
            // A plain result goes by its payload straight to the call's
            // register (a `Got` made here and moved into the return went
            // through the stack: a store-forwarding stall on every return).
            // (No `consume` of a plain value, as `Move`.)
            Some(o) => match Plain::of(self.rd(code, o)) {
                Some(p) if outermost => {
                    self.ret = p.value();
                    Ok(None)
                }
                Some(p) => self.vm_return(code, frames, |this, dst| this.put_p(dst, p)).map(Some),
                None => match self.ret_val(code, o, || code.ospot[at][0]) {
                    Ok(g) if outermost => {
                        self.ret = g.value();
                        Ok(None)
                    }
                    Ok(g) => self.vm_return(code, frames, |this, dst| this.put_got(dst, g)).map(Some),
                    Err(e) => Err(e),
                },
            },
            None if outermost => {
                self.ret = Value::Nil;
                Ok(None)
            }
            None => self.vm_return(code, frames, |this, dst| this.put_p(dst, Plain::Nil)).map(Some),
        }
    }

    /// The instructions `vm_exec` does not run itself: builtin calls, those that build
    /// texts and anonymous functions (a list or map literal has its own function,
    /// `mk_list`/`mk_map`), the `for ... in` loop's, `try`'s and the rarer ones, out of
    /// line so that their code stays out of the loop's registers (WORKLOG, twelfth
    /// session: with the builtin calls inline, the release build kept the instruction
    /// index in a stack slot). The index to go on with.
    #[inline(never)]
    fn vm_op(&mut self, code: &Code<'p>, at: usize) -> R<usize> {
        let ins = &code.ops[at];
        let mut pc = at + 1;
        let r: R<()> = match ins.op {
            // (A gated call's line, for its audit line, here: a return does not restore
            // the caller's.)
            Op::CapCheck(b) => {
                self.host.pos = code.pos(at);
                self.check_cap(b)
            }
            Op::BuiltinPlace { dst, call } => self.vm_place(code, dst, call),
            Op::Throw(a) => match self.val(code, a, || code.ospot[at][0]) {
                Ok(v) => Err(self.thrown(v, code.pos(at))),
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
                let vals: Box<[Value]> = self.stack[b..b + n as usize].iter_mut().map(std::mem::take).collect();
                let id = self.lambdas.len() as u32;
                self.lambdas.push((fi, vals));
                self.put(dst, Value::Handle(crate::value::Handle { kind: crate::value::HandleKind::Lambda, id }))
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
            Op::InterpBegin { dst, at, n, cap } if n > 0 => self.interp_all(code, dst, at, n, cap),
            Op::InterpBegin { cap, .. } => {
                self.ibufs.push(Vec::with_capacity(cap as usize));
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
                    Ok(v) => match self
                        .host
                        .text_room(&v, &mut out)
                        .and_then(|()| self.host.write_text(&v, &mut out, self.host.lim.n(L::String)))
                    {
                        Ok(()) => self.interp_part(out),
                        Err(e) => Err(e),
                    },
                    Err(e) => Err(e),
                }
            }
            Op::InterpEnd { dst } => {
                let out = self.ibufs.pop().unwrap_or_default();
                self.interp_end(dst, out)
            }
            Op::ForPrep { base } => self.for_prep(base),
            Op::ForInPrep { base, src } => self.for_in_prep(code, at, base, src),
            // Past the last item the loop's end is done here and its `ForInEnd` (at
            // `exit`, where a `break` goes) passed over: one instruction less a loop.
            Op::ForInNext { first, second, base, exit } => match self.for_in_next(first, second, base) {
                Ok(true) => Ok(()),
                Ok(false) => {
                    pc = exit as usize + 1;
                    self.for_in_end(base)
                }
                Err(e) => Err(e),
            },
            Op::ForInEnd { base } => self.for_in_end(base),
            Op::Builtin { b, dst, at: args, n } => {
                if b.cap.is_some() {
                    // (Again: its arguments may have called functions that made gated
                    // calls of their own.)
                    self.host.pos = code.pos(at);
                }
                let specs = &code.args[args as usize..(args + n) as usize];
                match b.peek.and_then(|p| self.peek_call(code, p, specs)) {
                    Some(v) => self.peeked(b, dst, specs, v),
                    None => self.call_vals(code, b, dst, specs),
                }
            }
            Op::Get { b, dst, at: args, n } => {
                let specs = &code.args[args as usize..(args + n) as usize];
                self.call_vals(code, b, dst, specs)
            }
            _ => unreachable!("vm_exec runs {:?} itself", ins.op),
        };
        r.map(|()| pc)
    }

    /// `Op::MkList`: a list of the `n` operands from `args[at]` (temporaries moved out),
    /// into `dst`. (Called from `vm_exec` directly: through `vm_op`'s second dispatch,
    /// every list literal took about 30 instructions more.)
    #[inline(never)]
    fn mk_list(&mut self, code: &Code<'p>, dst: Opd, at: u32, n: u32) -> R<()> {
        let specs = &code.args[at as usize..(at + n) as usize];
        // (Pushed one by one: collected after `none_unset`, as `mk_map` reads its
        // values, binarytrees took 0.6% more instructions. A plain item by its
        // payload, without `val`'s match of every kind; the others' storage summed as
        // they are taken, not in a second pass: binarytrees 2.4% fewer.)
        let mut items: Vec<Value> = Vec::with_capacity(specs.len());
        let mut heap = 0;
        for &(o, sp) in specs {
            let v = match Plain::of(self.rd(code, o)) {
                Some(p) => p.value(),
                None => {
                    let v = self.val(code, o, || sp)?;
                    heap += v.heap();
                    v
                }
            };
            items.push(v);
        }
        let l = self.host.make_list_measured(items, heap)?;
        self.host.check_memory()?;
        self.put(dst, l)
    }

    /// `Op::MkMap`: map literal `map` of `code` (its keys, and their shape when one can
    /// take them) with the operands from `args[at]` as values (temporaries moved out),
    /// into `dst`. (Called from `vm_exec` directly, as `mk_list`.)
    #[inline(never)]
    fn mk_map(&mut self, code: &Code<'p>, dst: Opd, map: u32, at: u32) -> R<()> {
        // A literal's maps share its keys (`Map::shaped`: no key hashed or compared, 8
        // bytes an entry less); one whose keys a shape cannot take is built key by key
        // (a key given twice keeps its last value).
        let (keys, shape) = &code.maps[map as usize];
        let specs = &code.args[at as usize..at as usize + keys.len()];
        // (Checked first, then taken straight into the map: gathered into a vector
        // first, json took 2% more instructions.)
        self.none_unset(code, specs)?;
        let vals = specs.iter().map(|&(o, _)| self.val_set(code, o));
        let m = match shape {
            Some(shape) => Map::shaped(shape, vals),
            None => {
                let mut m = Map::with_capacity(keys.len());
                for ((k, _), v) in keys.iter().zip(vals) {
                    m.insert(k.clone(), v);
                }
                m
            }
        };
        let v = self.host.make_map(m)?;
        self.host.check_memory()?;
        self.put(dst, v)
    }

    /// Instruction `at` of `cur` failed with `e`: a `try` around it in this code catches
    /// it; else each compiled caller's frame is closed, as a return through `enter` would
    /// close it, and its call is where the error is looked for next. The code and index
    /// to go on with, or the error out of the run.
    #[cold]
    #[inline(never)]
    fn vm_unwind<'c>(
        &mut self,
        cur: &'c Code<'p>,
        at: usize,
        e: Fail,
        frames: &mut Frames<'c, 'p>,
    ) -> R<(&'c Code<'p>, usize)> {
        // The failing instruction's line and column.
        let mut e = located(spotted(e, cur.spot[at]), cur.pos(at));
        let mut here = cur;
        let mut at = at;
        loop {
            if let Some(h) = catcher(&here, at, &e) {
                match *e {
                    Unwind::Error(err) => match self.vm_catch(&here, h, err) {
                        Ok(()) => return Ok((here, h.to as usize)),
                        // A failure of the catch itself (its storage) goes on.
                        Err(e2) => e = located(e2, here.pos(at)),
                    },
                    other => e = Box::new(other),
                }
            }
            match frames.pop() {
                None => return Err(e),
                Some((fcode, fpc, _, saved)) => {
                    self.vm_leave(&here, saved);
                    at = fpc - 1;
                    e = located(spotted(e, fcode.spot[at]), fcode.pos(at));
                    here = fcode;
                }
            }
        }
    }

    /// `Op::InterpBegin` with `n` parts: the parts `iparts[at..at + n]` of `code`
    /// appended in turn to a text of `cap` bytes' room, each checked as `interp_part`
    /// checks it, the text then finished as `InterpEnd` finishes it.
    #[inline(never)]
    fn interp_all(&mut self, code: &Code<'p>, dst: Opd, at: u32, n: u32, cap: u32) -> R<()> {
        let mut out = Vec::with_capacity(cap as usize);
        let limit = self.host.lim.n(L::String);
        for part in &code.iparts[at as usize..(at + n) as usize] {
            match *part {
                IOp::Lit(b) => out.extend_from_slice(b),
                IOp::Val(o, sp) => {
                    // (Read where it is: the host writes its text beside the stack.)
                    let v = match o.tag() {
                        T_CONST => &code.consts[o.idx()],
                        T_GLOBAL => &self.globals[o.idx()],
                        _ => &self.stack[self.base + o.idx()],
                    };
                    if let Value::Unset = v {
                        return Err(self.unset_at(slot_of(o), sp));
                    }
                    self.host.text_room(v, &mut out)?;
                    self.host.write_text(v, &mut out, limit)?;
                }
            }
            self.interp_checked(out.len())?;
        }
        self.interp_end(dst, out)
    }

    /// An interpolation's text after a part: back on the buffer stack once the string
    /// limit and the memory bound allow its length (checked after every part).
    #[inline]
    fn interp_part(&mut self, out: Vec<u8>) -> R<()> {
        let n = out.len();
        self.ibufs.push(out);
        self.interp_checked(n)
    }

    /// The checks of an interpolation's text of `n` bytes after a part: the string
    /// limit, then the memory bound.
    #[inline(always)]
    fn interp_checked(&self, n: usize) -> R<()> {
        self.host.check_str_len(n)?;
        self.host.check_memory_after(n)
    }

    /// An interpolation's finished text `out` into `dst`, its work charged by its bytes.
    #[inline(always)]
    fn interp_end(&mut self, dst: Opd, out: Vec<u8>) -> R<()> {
        let w = crate::meter::scaled(out.len() as u64, WORK_INTERP_BYTE_X256);
        self.host.work(WORK_CONCAT_BASE + w)?;
        self.put(dst, Value::str(out))
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

    /// A compiled callee returns to its compiled caller (the frame on top of `frames`):
    /// its frame closed, its value written to the call's destination by `write`. A failure of that write is the
    /// caller's call instruction's. The caller's code and where it goes on.
    ///
    /// The registers are emptied before the caller's frame is taken off (`frames` holds
    /// one): what it restores is not kept live through that loop.
    #[inline]
    fn vm_return<'c>(
        &mut self,
        code: &Code<'p>,
        frames: &mut Frames<'c, 'p>,
        write: impl FnOnce(&mut Self, Opd) -> R<()>,
    ) -> R<(&'c Code<'p>, usize)> {
        self.clear_fixed(code);
        let Some((fcode, fpc, dst, saved)) = frames.pop() else { unreachable!("a return to a caller has its frame") };
        self.frame_leave(saved);
        let r = write(self, dst);
        match r {
            Ok(()) => Ok((fcode, fpc)),
            Err(e) => {
                let call = fpc - 1;
                Err(located(spotted(e, fcode.spot[call]), fcode.pos(call)))
            }
        }
    }

    // ------------------------------------------------------------------
    // Calls
    // ------------------------------------------------------------------

    /// A call of user function `fi` whose `n` arguments are in this frame's registers
    /// from `start`: its frame opened there (`frame_enter`: the call's work, the
    /// argument and depth limits, the frame's storage), its other locals unset, its
    /// registers on the stack, the heap looked at (`saved`: what the return restores,
    /// taken before). Its code.
    fn vm_call_open<'c>(
        &mut self,
        codes: &'c Codes<'p>,
        fi: usize,
        start: u32,
        n: u32,
        saved: Saved,
    ) -> R<&'c Code<'p>> {
        let new_base = self.base + start as usize;
        let n = n as usize;
        let mut arg_heap = 0usize;
        for v in &self.stack[new_base..new_base + n] {
            if !is_plain(v) {
                arg_heap += v.heap();
            }
        }
        let code = codes.get(fi);
        self.frame_enter(fi, code.base_bytes, n, new_base, arg_heap, saved)?;
        // Its locals past the arguments and its loops' registers unset.
        if let Err(e) = self.frame_registers(code, new_base, n) {
            self.vm_leave(code, saved);
            return Err(e);
        }
        Ok(code)
    }

    /// Close the frame of compiled `code` (the current one): its registers emptied (the
    /// stack keeps its length: the next call reuses them), its accounting undone.
    #[inline(always)]
    fn vm_leave(&mut self, code: &Code<'p>, saved: Saved) {
        self.clear_registers(code);
        self.frame_leave(saved);
    }

    /// The registers of compiled `code`'s frame (the current one) emptied at a return:
    /// its locals and its loops' registers. Its temporaries hold nothing to drop there:
    /// an instruction takes what it reads from a temporary (`consume`, `val`), and a
    /// catch clears the temporaries of the statement it cuts short (`vm_catch`), so at a
    /// statement's end they are unset or plain. Debug builds check it: the fuzz
    /// targets are built so (the `eval` target runs generated programs), and the whole
    /// pytest suite passed on such a build (`CARGO_PROFILE_QUICK_DEBUG_ASSERTIONS=true`,
    /// WORKLOG twenty-third session). A failure that leaves the frame (`vm_leave`)
    /// clears them all.
    #[inline(always)]
    fn clear_fixed(&mut self, code: &Code<'p>) {
        let b = self.base;
        debug_assert!(
            self.stack[b + code.nfixed as usize..b + code.nregs as usize].iter().all(|v| !holds(v)),
            "a temporary holds a value at a return"
        );
        self.clear_first(code.nfixed);
    }

    /// The registers of compiled `code`'s frame (the current one) emptied of values
    /// that hold storage, all of them.
    #[inline(always)]
    fn clear_registers(&mut self, code: &Code<'p>) {
        self.clear_first(code.nregs);
    }

    /// The current frame's first `n` registers emptied of values that hold storage.
    #[inline(always)]
    fn clear_first(&mut self, n: u32) {
        // A value that holds storage is dropped; a plain one may stay (a call's entry
        // unsets the locals and loop registers, and a temporary is written before it is
        // read), which saves the clearing of most registers.
        let b = self.base;
        for cell in &mut self.stack[b..b + n as usize] {
            if holds(cell) {
                *cell = Value::Unset;
            }
        }
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

/// The work of an equality test of two plain values (one item compared), as
/// `cmp_in_place` charges it.
const WORK_EQ_PLAIN: u64 = EqCount { items: 1, bytes: 0 }.units();

impl<'p> Interp<'p> {
    /// `TestK`'s test: `a == k` or `a != k` for the nil or boolean constant `k` (None:
    /// nil), a type test in place.
    #[inline(always)]
    fn test_k(&mut self, code: &Code<'p>, at: usize, op: BinOp, a: Opd, k: Option<bool>) -> R<bool> {
        let same = match (self.rd(code, a), k) {
            (Value::Nil, None) => true,
            (Value::Bool(p), Some(q)) => *p == q,
            (Value::Unset, _) => return Err(self.unset_operand(code, at, a, code.ospot[at][0])),
            _ => false,
        };
        self.consume(a);
        self.host.work(WORK_EQ_PLAIN)?;
        Ok(same == (op == BinOp::Eq))
    }

    /// Operand `o` of instruction `at` is an unset variable: its `name` error at its
    /// spot `sp`, on the instruction's line (as a comparison reports it).
    #[cold]
    #[inline(never)]
    pub(super) fn unset_operand(&self, code: &Code<'p>, at: usize, o: Opd, sp: crate::ast::Spot) -> Fail {
        located(self.unset_at(slot_of(o), sp), code.pos(at))
    }
}

/// A forward test's outcome: on to `to` when it came out `when`, else the next
/// instruction.
///
/// The jump is marked cold, the back edge's exit too (`branch_back`): a branch whose
/// sides both only set the index would otherwise become a conditional move, which puts
/// the test's operand load and compare on the path to the next instruction's address
/// (the processor waits for them instead of predicting; measured: a bare counting loop
/// 33 ms against 20 ms). Which side is cold changes only the code's layout.
#[inline(always)]
fn branch(t: R<bool>, when: bool, to: u32, pc: &mut usize) -> R<()> {
    if t? == when {
        std::hint::cold_path();
        *pc = to as usize;
    }
    Ok(())
}

/// A loop's back edge: back to `to` when the test came out true, else out of the loop.
#[inline(always)]
fn branch_back(t: R<bool>, to: u32, pc: &mut usize) -> R<()> {
    if t? {
        *pc = to as usize;
    } else {
        std::hint::cold_path();
    }
    Ok(())
}
