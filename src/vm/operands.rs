//! The compiled core's operands: reading a register, a variable or a constant in
//! place (`rd`), moving a temporary out (`val`), and writing a result where it goes
//! (`put` and its forms for plain values, values that hold storage and numbers), with
//! the storage charges a write makes. Child of `vm`.

use super::*;
use crate::ast::Spot;
use crate::builtins::{Builtin, PeekFn};

impl<'p> Interp<'p> {
    // ------------------------------------------------------------------
    // Operands
    // ------------------------------------------------------------------

    /// The value an operand names, in place (a variable may be unset).
    #[inline(always)]
    pub(super) fn rd<'a>(&'a self, code: &'a Code<'p>, o: Opd) -> &'a Value {
        if o.is_reg() {
            &self.stack[self.base + o.idx()]
        } else if o.tag() == T_GLOBAL {
            &self.globals[o.idx()]
        } else {
            &code.consts[o.idx()]
        }
    }

    /// The cell of variable or temporary `var` and the value of operand `k` beside it, in
    /// place (None: both name the same cell).
    #[inline(always)]
    pub(super) fn cell_and_key<'a>(
        &'a mut self,
        code: &'a Code<'p>,
        var: Opd,
        k: Opd,
    ) -> Option<(&'a mut Value, &'a Value)> {
        let b = self.base;
        match (var.is_reg(), k.tag()) {
            (_, T_CONST) => Some((self.cell(var), &code.consts[k.idx()])),
            (true, T_GLOBAL) => Some((&mut self.stack[b + var.idx()], &self.globals[k.idx()])),
            (false, T_GLOBAL) => {
                let [c, key] = self.globals.get_disjoint_mut([var.idx(), k.idx()]).ok()?;
                Some((c, &*key))
            }
            (false, _) => Some((&mut self.globals[var.idx()], &self.stack[b + k.idx()])),
            (true, _) => {
                let [c, key] = self.stack.get_disjoint_mut([b + var.idx(), b + k.idx()]).ok()?;
                Some((c, &*key))
            }
        }
    }

    /// The cell of a variable or temporary.
    #[inline(always)]
    pub(super) fn cell(&mut self, o: Opd) -> &mut Value {
        if o.is_reg() {
            &mut self.stack[self.base + o.idx()]
        } else {
            &mut self.globals[o.idx()]
        }
    }

    /// An operand's value to keep: a temporary is moved out, a variable or constant
    /// copied (shared); an unset variable is the `name` error at `sp`.
    #[inline(always)]
    pub(super) fn val(&mut self, code: &Code<'p>, o: Opd, sp: impl FnOnce() -> Spot) -> R<Value> {
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

    /// The `name` error of the first unset variable among `specs` (a literal's items,
    /// checked before any is taken, so that `val_set` can take them all).
    #[inline(always)]
    pub(super) fn none_unset(&self, code: &Code<'p>, specs: &[(Opd, Spot)]) -> R<()> {
        for &(o, sp) in specs {
            if matches!(o.tag(), T_LOCAL | T_GLOBAL) && matches!(self.rd(code, o), Value::Unset) {
                return Err(self.unset_at(slot_of(o), sp));
            }
        }
        Ok(())
    }

    /// `val` of an operand that is not an unset variable (`none_unset`): a temporary
    /// moved out, a variable or constant copied.
    #[inline(always)]
    pub(super) fn val_set(&mut self, code: &Code<'p>, o: Opd) -> Value {
        match o.tag() {
            T_TEMP => std::mem::take(&mut self.stack[self.base + o.idx()]),
            T_CONST => code.consts[o.idx()].clone(),
            _ => self.rd(code, o).clone(),
        }
    }

    /// A returned operand that is not plain (a plain one goes by its payload): a
    /// temporary or a local moved out (the frame's registers are emptied next, and its
    /// storage is released as a whole: no count changes), a global or constant shared
    /// by its pointer (`Got::of`), an unset variable the `name` error at `sp`.
    #[inline(always)]
    pub(super) fn ret_val(&mut self, code: &Code<'p>, o: Opd, sp: impl FnOnce() -> Spot) -> R<Got> {
        if o.tag() == T_TEMP {
            return Ok(Got::Val(std::mem::take(&mut self.stack[self.base + o.idx()])));
        }
        // (A local apart from the temporary, not one test of `is_reg`: with the one
        // test, a returned temporary took binarytrees 0.5% more instructions.)
        if o.tag() == T_LOCAL {
            let v = std::mem::take(&mut self.stack[self.base + o.idx()]);
            if let Value::Unset = v {
                return Err(self.unset_at(slot_of(o), sp()));
            }
            return Ok(Got::Val(v));
        }
        let v = self.rd(code, o);
        if let Value::Unset = v {
            return Err(self.unset_at(slot_of(o), sp()));
        }
        Ok(Got::of(v))
    }

    /// A builtin's `peek` over its arguments read in place (None: an argument is an
    /// unset variable, or the peek does not answer).
    #[inline(always)]
    pub(super) fn peek_call(&self, code: &Code<'p>, peek: PeekFn, specs: &[(Opd, Spot)]) -> Option<Value> {
        // (One argument, most peeked calls (`len(l)`, `abs(x)`), without the loop.)
        if let [(o, _)] = specs {
            let v = self.rd(code, *o);
            if let Value::Unset = v {
                return None;
            }
            return peek(std::slice::from_ref(&v));
        }
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
    pub(super) fn peeked(&mut self, b: &'static Builtin, dst: Opd, specs: &[(Opd, Spot)], v: Value) -> R<()> {
        self.host.work(b.cost.before(&[]))?;
        self.host.check_memory()?;
        for &(o, _) in specs {
            self.consume(o);
        }
        self.put(dst, v)
    }

    /// `get(m, k[, d])` read in place: a string key of a map, its value or the default
    /// (nil without one) (None: other operands, or an unset variable, for the
    /// builtin's own path). A reference, not a `Got`: a `Got` made on the three paths
    /// (found, default, nil) was one value in a stack slot, written by parts and read
    /// back whole, a store-forwarding stall on every `get` (wordfreq, fourteenth session).
    #[inline(always)]
    pub(super) fn get_fast<'a>(&'a self, code: &'a Code<'p>, specs: &[(Opd, Spot)]) -> Option<&'a Value> {
        let (&(mo, _), &(ko, _)) = (specs.first()?, specs.get(1)?);
        let (Value::Map(m), Value::Str(k)) = (self.rd(code, mo), self.rd(code, ko)) else { return None };
        if k.len() > KEY_FREE_BYTES {
            return None;
        }
        // (An unset default is the builtin's `name` error, found or not.)
        let d = match specs.get(2) {
            None => &Value::Nil,
            Some(&(d, _)) => match self.rd(code, d) {
                Value::Unset => return None,
                v => v,
            },
        };
        Some(m.get(k).unwrap_or(d))
    }

    /// `get`'s call read in place (`get_fast`) ended: charged as `peeked` charges it, its
    /// temporaries let go (the value was taken out before: a number as itself, else as a
    /// `Got`), the value written by `put`.
    #[inline(always)]
    pub(super) fn got_from(&mut self, b: &'static Builtin, specs: &[(Opd, Spot)]) -> R<()> {
        self.host.work(b.cost.before(&[]))?;
        self.host.check_memory()?;
        for &(o, _) in specs {
            self.consume(o);
        }
        Ok(())
    }

    /// A builtin call: its arguments copied out (up to four in an array on the native
    /// stack, no vector to build and free), the call, the arguments dropped before the
    /// result is written.
    #[inline(never)]
    pub(super) fn call_vals(&mut self, code: &Code<'p>, b: &'static Builtin, dst: Opd, specs: &[(Opd, Spot)]) -> R<()> {
        // (One, two and three arguments in arrays of their own length: with four slots
        // for every call, the unused ones were written and dropped too.)
        let v = if let Ok(one) = <&[(Opd, Spot); 1]>::try_from(specs) {
            let [(o, sp)] = *one;
            let v = self.val(code, o, || sp)?;
            self.builtin_array(b, [v])?
        } else if let Ok(two) = <&[(Opd, Spot); 2]>::try_from(specs) {
            let [(o0, sp0), (o1, sp1)] = *two;
            let v0 = self.val(code, o0, || sp0)?;
            let v1 = self.val(code, o1, || sp1)?;
            self.builtin_array(b, [v0, v1])?
        } else if let Ok(three) = <&[(Opd, Spot); 3]>::try_from(specs) {
            let [(o0, sp0), (o1, sp1), (o2, sp2)] = *three;
            let v0 = self.val(code, o0, || sp0)?;
            let v1 = self.val(code, o1, || sp1)?;
            let v2 = self.val(code, o2, || sp2)?;
            self.builtin_array(b, [v0, v1, v2])?
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

    /// `builtin_vals` on an array of arguments, each dropped after by its kind (a
    /// number needs no drop: the array's drop glue was a call on every builtin call).
    #[inline(always)]
    fn builtin_array<const N: usize>(&mut self, b: &'static Builtin, mut vals: [Value; N]) -> R<Value> {
        let r = self.builtin_vals(b, &mut vals);
        for v in vals {
            drop_held(v);
        }
        r
    }

    /// A builtin call's arguments into `out` (as long as `specs`), in order.
    #[inline(always)]
    pub(super) fn vals_into(&mut self, code: &Code<'p>, specs: &[(Opd, Spot)], out: &mut [Value]) -> R<()> {
        for (slot, &(o, sp)) in out.iter_mut().zip(specs) {
            *slot = self.val(code, o, || sp)?;
        }
        Ok(())
    }

    /// Drop what a temporary operand holds once its instruction has read it in place
    /// (a variable or constant stays), so that no stale reference makes a later write
    /// copy a shared value.
    #[inline(always)]
    pub(super) fn consume(&mut self, o: Opd) {
        if o.tag() == T_TEMP {
            // A plain value refers to nothing, so it may stay (a temporary is written
            // before it is read): no store at all on numeric paths.
            let cell = &mut self.stack[self.base + o.idx()];
            if holds(cell) {
                *cell = Value::Unset;
            }
        }
    }

    /// The truth of an operand, read in place.
    #[inline]
    pub(super) fn truth(&mut self, code: &Code<'p>, o: Opd, sp: impl FnOnce() -> Spot) -> R<bool> {
        match self.rd(code, o) {
            Value::Bool(b) => Ok(*b),
            Value::Unset => Err(self.unset_at(slot_of(o), sp())),
            v => Ok(v.truthy()),
        }
    }

    /// Write `v` to a destination: a variable through `store` (its storage charged), a
    /// temporary as it is.
    #[inline(always)]
    pub(super) fn put(&mut self, dst: Opd, v: Value) -> R<()> {
        match dst.tag() {
            T_TEMP => {
                if dst != DISCARD {
                    let old = std::mem::replace(&mut self.stack[self.base + dst.idx()], v);
                    drop_held(old);
                } else {
                    drop_held(v);
                }
                Ok(())
            }
            _ => self.store_inline(slot_of(dst), v),
        }
    }

    /// Write a plain value: over a value that holds nothing (plain or unset: no
    /// storage changes, nothing to drop) in place, over a temporary (not charged) by its
    /// payload, else as `put` (see `Plain`).
    #[inline(always)]
    pub(super) fn put_p(&mut self, dst: Opd, p: Plain) -> R<()> {
        if dst == DISCARD {
            return Ok(());
        }
        let temp = dst.tag() == T_TEMP;
        let cell = self.cell(dst);
        if !holds(cell) {
            // (Nothing to drop: written without the drop glue, which was a call for
            // every boolean or nil written. Callgrind: queens -2.0%, richards -1.4%,
            // bounce -1.3%, jsonparse -1.0%, fib +0.3%; CPU 0.992x over twelve
            // workloads, WORKLOG thirty-sixth session.)
            std::mem::forget(std::mem::replace(cell, p.value()));
            return Ok(());
        }
        if temp {
            p.write(cell);
            return Ok(());
        }
        self.store_inline(slot_of(dst), p.value())
    }

    /// Write a value read in place (`Got`).
    #[inline(always)]
    pub(super) fn put_got(&mut self, dst: Opd, g: Got) -> R<()> {
        match g {
            Got::Plain(p) => self.put_p(dst, p),
            Got::Heap(h) => self.put_heap(dst, h),
            Got::Val(v) => self.put(dst, v),
        }
    }

    /// `put_heap` out of line: for a fast path of `vm_exec` that writes a string it
    /// read (inline, the write's code made LLVM keep the globals' address in a stack
    /// slot for the whole loop: `loop` +18% CPU, WORKLOG thirty-third session).
    #[inline(never)]
    pub(super) fn put_heap_out(&mut self, dst: Opd, h: Heap) -> R<()> {
        self.put_heap(dst, h)
    }

    /// Write a value that holds storage into its destination in place (see `Heap`),
    /// charged as `put` charges it.
    #[inline(always)]
    pub(super) fn put_heap(&mut self, dst: Opd, h: Heap) -> R<()> {
        if dst == DISCARD {
            return Ok(());
        }
        let temp = dst.tag() == T_TEMP;
        let nh = if temp { 0 } else { h.heap() };
        let cell = self.cell(dst);
        let old = h.replace(cell);
        if temp {
            drop_held(old);
            return Ok(());
        }
        // (The old value measured and dropped by its kind, here: through `Value::heap`
        // and the drop glue of `Value`, two calls more on every `x = x.next` and every
        // `for w in words`.)
        let oh = match old {
            Value::Str(s) => {
                let h = crate::value::str_heap(&s);
                drop(s);
                h
            }
            Value::Map(m) => {
                let h = m.acct();
                drop(m);
                h
            }
            Value::List(l) => {
                let h = l.acct();
                drop(l);
                h
            }
            old if is_plain(&old) => 0,
            old => {
                let h = old.heap();
                drop(old);
                h
            }
        };
        if nh != oh {
            self.charge(dst.tag() == T_GLOBAL, nh as isize - oh as isize)?;
        }
        Ok(())
    }

    /// Write a number: over a number in place (no storage changes).
    #[inline(always)]
    pub(super) fn put_num(&mut self, dst: Opd, x: f64) -> R<()> {
        if dst == DISCARD {
            return Ok(());
        }
        if let Value::Num(n) = self.cell(dst) {
            *n = x;
            return Ok(());
        }
        self.put(dst, Value::Num(x))
    }
}

/// The variable an operand names (for its storage charge and its name in errors).
#[inline]
pub(super) fn slot_of(o: Opd) -> Slot {
    match o.tag() {
        T_GLOBAL => Slot::Global(o.idx() as u32),
        _ => Slot::Local(o.idx() as u32),
    }
}

/// Drop `v`, calling its drop glue only when it may hold something (the glue is out
/// of line: a call for every discarded result and every temporary written over).
#[inline(always)]
pub(crate) fn drop_held(v: Value) {
    if holds(&v) {
        drop(v);
    } else {
        std::mem::forget(v);
    }
}

/// A value that may hold storage (a string, a list, a map, a handle): one that needs
/// its drop glue. (Not plain and not unset: one compare of the kind.)
#[inline(always)]
pub(crate) fn holds(v: &Value) -> bool {
    !matches!(v, Value::Unset | Value::Nil | Value::Bool(_) | Value::Num(_))
}

/// A value that holds no storage and needs no drop: nil, a boolean, a number.
#[inline(always)]
pub(super) fn is_plain(v: &Value) -> bool {
    matches!(v, Value::Nil | Value::Bool(_) | Value::Num(_))
}

/// Write plain `x` over `item` when that is plain too (no storage changes).
#[inline(always)]
pub(super) fn put_plain(item: &mut Value, x: Plain) -> bool {
    if is_plain(item) {
        x.write(item);
        true
    } else {
        false
    }
}

/// A value read in place for a register: a plain one by its payload, any other cloned.
pub(super) enum Got {
    Plain(Plain),
    Heap(Heap),
    Val(Value),
}

impl Got {
    #[inline(always)]
    pub(super) fn value(self) -> Value {
        match self {
            Got::Plain(p) => p.value(),
            Got::Heap(h) => h.value(),
            Got::Val(v) => v,
        }
    }

    #[inline(always)]
    pub(super) fn of(v: &Value) -> Got {
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
pub(super) enum Heap {
    Str(Bytes),
    List(Rc<List>),
    Map(Map),
}

impl Heap {
    #[inline(always)]
    pub(super) fn value(self) -> Value {
        match self {
            Heap::Str(s) => Value::Str(s),
            Heap::List(l) => Value::List(l),
            Heap::Map(m) => Value::Map(m),
        }
    }

    /// Its accounted storage (`Value::heap`).
    #[inline(always)]
    pub(super) fn heap(&self) -> usize {
        match self {
            Heap::Str(s) => crate::value::str_heap(s),
            Heap::List(l) => l.acct(),
            Heap::Map(m) => m.acct(),
        }
    }

    /// Written into `cell`, the value it held returned.
    #[inline(always)]
    pub(super) fn replace(self, cell: &mut Value) -> Value {
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
pub(super) enum Plain {
    Nil,
    Bool(bool),
    Num(f64),
}

impl Plain {
    #[inline(always)]
    pub(super) fn value(self) -> Value {
        match self {
            Plain::Nil => Value::Nil,
            Plain::Bool(b) => Value::Bool(b),
            Plain::Num(n) => Value::Num(n),
        }
    }

    #[inline(always)]
    pub(super) fn of(v: &Value) -> Option<Plain> {
        match v {
            Value::Num(n) => Some(Plain::Num(*n)),
            Value::Nil => Some(Plain::Nil),
            Value::Bool(b) => Some(Plain::Bool(*b)),
            _ => None,
        }
    }

    #[inline(always)]
    pub(super) fn write(self, item: &mut Value) {
        match (self, item) {
            (Plain::Num(n), Value::Num(old)) => *old = n,
            (Plain::Num(n), item) => *item = Value::Num(n),
            (Plain::Nil, item) => *item = Value::Nil,
            (Plain::Bool(b), item) => *item = Value::Bool(b),
        }
    }
}

/// A comparison of two numbers (a test instruction's `op` is always a comparison).
#[inline(always)]
pub(super) fn num_cmp(op: BinOp, x: f64, y: f64) -> bool {
    use BinOp::*;
    match op {
        Lt => x < y,
        Le => x <= y,
        Gt => x > y,
        Ge => x >= y,
        Eq => x == y,
        // (Every other kind named, not `_`: with every kind an arm, the jump table needs
        // no range check of the kind, as `vm_exec`'s dispatch.)
        Ne | Add | Sub | Mul | Div | FloorDiv | Mod | Pow | Concat | In | NotIn => x != y,
    }
}
