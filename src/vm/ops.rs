//! The compiled core's instructions past their fast paths: operators on operands
//! that are not both numbers, reads of indexes and fields through the shared helpers,
//! place writes, builtin calls with their arguments, and the `for` loops' registers.
//! Child of `vm`.

use smallvec::SmallVec;

use super::*;

impl<'p> Interp<'p> {
    // ------------------------------------------------------------------
    // Arithmetic (inlined into the dispatch loop: each specialised instruction calls
    // these with its operator constant, which folds the operator's `match` away)
    // ------------------------------------------------------------------

    /// `dst = a op b`: two numbers in place, else the general path.
    #[inline(always)]
    pub(super) fn op_bin(&mut self, code: &Code<'p>, at: usize, op: BinOp, dst: Opd, a: Opd, b: Opd) -> R<()> {
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

    /// `dst = a op k` with a number constant.
    #[inline(always)]
    pub(super) fn op_bin_n(&mut self, code: &Code<'p>, at: usize, op: BinOp, dst: Opd, a: Opd, k: f64) -> R<()> {
        match self.rd(code, a) {
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
        }
    }

    /// `Op::ModN` past its fast path (a dividend that is not a whole number within
    /// 2^53, or not a number): `BinN`'s path with the divisor as a number.
    #[inline(never)]
    pub(super) fn mod_n_slow(
        &mut self,
        code: &Code<'p>,
        at: usize,
        dst: Opd,
        a: Opd,
        k: std::num::NonZeroI32,
    ) -> R<()> {
        self.op_bin_n(code, at, BinOp::Mod, dst, a, f64::from(k.get()))
    }

    /// `x op= k` on a variable: a number in place, else the general path.
    #[inline(always)]
    pub(super) fn op_upd_n(&mut self, op: BinOp, var: Opd, k: f64) -> R<()> {
        if let Value::Num(x) = self.cell(var) {
            if let Some(r) = arith(op, *x, k) {
                *x = r;
                return Ok(());
            }
        }
        self.compound_var(slot_of(var), op, Value::Num(k))
    }

    // ------------------------------------------------------------------
    // Slow paths
    // ------------------------------------------------------------------

    /// `var op= v` past `Upd`'s two numbers. `s ..= t`, a string onto a string that
    /// nothing else holds, is appended where it is: the general path
    /// (`compound_var`) takes the string out of its variable and puts it back, and
    /// looks at the right side's type twice on the way. The same work, limits and
    /// storage: a string that is shared, would pass the `string` limit or is not a
    /// string goes the general way.
    #[inline(never)]
    pub(super) fn upd_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, var: Opd, v: Opd) -> R<()> {
        let rhs = match (op, self.val(code, v, || code.ospot[at][0])?) {
            (BinOp::Concat, Value::Str(t)) => match self.append_var(var, &t) {
                // (The text dropped as a string: the drop glue of `Value` was a call.)
                Some(r) => return r,
                None => Value::Str(t),
            },
            (_, rhs) => rhs,
        };
        self.compound_var(slot_of(var), op, rhs)
    }

    /// `var ..= t` in place when `var` holds a string nothing else shares and the result
    /// is within the `string` limit (None: the general way).
    #[inline(always)]
    fn append_var(&mut self, var: Opd, t: &[u8]) -> Option<R<()>> {
        let limit = self.host.lim.n(L::String);
        let cell = if var.is_reg() { &mut self.stack[self.base + var.idx()] } else { &mut self.globals[var.idx()] };
        let Value::Str(rc) = cell else { return None };
        let s = Rc::get_mut(rc)?;
        if s.len() + t.len() > limit {
            return None;
        }
        if let Err(e) = self.host.work(concat_work(t.len())) {
            return Some(Err(e));
        }
        if s.append_within(t) {
            return Some(Ok(()));
        }
        if let Err(e) = self.host.room(t.len()) {
            return Some(Err(e));
        }
        let before = str_heap(s);
        reserve_str(s, t.len());
        s.extend_from_slice(t);
        let grown = str_heap(s) - before;
        Some(self.charge(!var.is_reg(), grown as isize))
    }

    #[inline(never)]
    pub(super) fn bin_n_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, dst: Opd, a: Opd, k: f64) -> R<()> {
        let x = self.val(code, a, || code.ospot[at][0]).map_err(|e| located(e, code.pos(at)))?;
        let v = self.binop(op, x, Value::Num(k))?;
        self.put(dst, v)
    }

    #[inline(never)]
    pub(super) fn test_n_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, a: Opd, k: f64) -> R<bool> {
        let x = self.val(code, a, || code.ospot[at][0]).map_err(|e| located(e, code.pos(at)))?;
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            let mut n = EqCount::default();
            let same = equals_counted(&x, &Value::Num(k), &mut n);
            self.host.work(n.units())?;
            return Ok(same == (op == BinOp::Eq));
        }
        Ok(self.binop(op, x, Value::Num(k))?.truthy())
    }

    #[inline(never)]
    pub(super) fn bin_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, dst: Opd, a: Opd, b: Opd) -> R<()> {
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
        } else if let Some((t, w)) = cmp_in_place(op, self.rd(code, a), self.rd(code, b)) {
            self.consume(a);
            self.consume(b);
            self.host.work(w)?;
            return self.put_p(dst, Plain::Bool(t));
        }
        let [sa, sb] = code.ospot[at];
        // An unset operand's error carries its name's column or none, never the
        // operator's.
        let x = self.val(code, a, || sa).map_err(|e| located(e, code.pos(at)))?;
        let y = self.val(code, b, || sb).map_err(|e| located(e, code.pos(at)))?;
        let v = self.binop(op, x, y)?;
        self.put(dst, v)
    }

    /// A comparison that is not of two numbers: those `cmp_in_place` makes here (a small
    /// function: its entry saves few registers; `e != nil`, `c == "{"`), the rest in
    /// `test_slow`.
    /// (Inline in `vm_exec`, this made every other workload's loop 0.3 to 1.5% more
    /// instructions, the dispatch loop's registers spilled differently.)
    #[inline(never)]
    pub(super) fn test_other(&mut self, code: &Code<'p>, at: usize, op: BinOp, a: Opd, b: Opd) -> R<bool> {
        match cmp_in_place(op, self.rd(code, a), self.rd(code, b)) {
            Some((t, w)) => {
                self.consume(a);
                self.consume(b);
                self.host.work(w)?;
                Ok(t)
            }
            None => self.test_slow(code, at, op, a, b),
        }
    }

    /// The comparisons `cmp_in_place` does not make: `==` and `!=` walk both values, the
    /// rest go through `binop`.
    #[inline(never)]
    fn test_slow(&mut self, code: &Code<'p>, at: usize, op: BinOp, a: Opd, b: Opd) -> R<bool> {
        let [sa, sb] = code.ospot[at];
        if matches!(op, BinOp::Eq | BinOp::Ne) {
            if let Value::Unset = self.rd(code, a) {
                return Err(self.unset_operand(code, at, a, sa));
            }
            if let Value::Unset = self.rd(code, b) {
                return Err(self.unset_operand(code, at, b, sb));
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
        // operator's.
        let x = self.val(code, a, || sa).map_err(|e| located(e, code.pos(at)))?;
        let y = self.val(code, b, || sb).map_err(|e| located(e, code.pos(at)))?;
        Ok(self.binop(op, x, y)?.truthy())
    }

    #[inline(never)]
    pub(super) fn index_slow(&mut self, code: &Code<'p>, at: usize, dst: Opd, a: Opd, k: Opd) -> R<()> {
        let [sa, sk] = code.ospot[at];
        let x = self.val(code, a, || sa)?;
        let key = self.val(code, k, || sk)?;
        let v = self.read_index(&x, &key)?;
        self.put(dst, v)
    }

    /// `x[key]` past `Index`'s fast path: a map's string key charged by its bytes.
    fn read_index(&mut self, x: &Value, key: &Value) -> R<Value> {
        if let (Value::Map(_), Value::Str(s)) = (x, key) {
            self.host.work(key_work(s.len()))?;
        }
        self.index_value(x, key)
    }

    #[inline(never)]
    pub(super) fn field_slow(&mut self, code: &Code<'p>, at: usize, dst: Opd, a: Opd, name: &Bytes) -> R<()> {
        let x = self.val(code, a, || code.ospot[at][0]).map_err(|e| located(e, code.pos(at)))?;
        let v = self.read_field(&x, name)?;
        self.put(dst, v)
    }

    /// `x.name` past `Field`'s fast path (a map without the field, or not a map).
    fn read_field(&mut self, x: &Value, name: &Bytes) -> R<Value> {
        match x {
            Value::Map(m) => match m.get(name) {
                Some(v) => Ok(v.clone()),
                None => Err(self.missing_field(name, m)),
            },
            other => Err(self.err(
                ErrKind::Type,
                format!("cannot read field `{}` of a {}", String::from_utf8_lossy(name), other.type_name()),
            )),
        }
    }

    /// A chain of reads (`Op::GetPath`) walked in place: each step a list item by a
    /// number or a map entry by a field or a short string key, as `Index` and `Field`
    /// read them without charge, and the value at its end written to `dst` (the only
    /// copy made). Any other step goes to `get_path_slow`.
    #[inline(never)]
    pub(super) fn get_path(&mut self, code: &Code<'p>, dst: Opd, path: u32) -> R<()> {
        let p = code.rpaths[path as usize];
        let steps = &code.rsteps[p.at as usize..(p.at + p.n) as usize];
        let fast = 'walk: {
            let mut cur = self.rd(code, p.root);
            if let [s0, s1] = steps {
                // (Two steps, the most common chain, `tasks[t].priority`: unrolled.)
                let Some(v) = self.read_step(code, cur, s0) else { break 'walk None };
                let Some(v) = self.read_step(code, v, s1) else { break 'walk None };
                cur = v;
            } else {
                for s in steps {
                    match self.read_step(code, cur, s) {
                        Some(v) => cur = v,
                        None => break 'walk None,
                    }
                }
            }
            // A number (a record's field, mostly) is written as one, not through
            // `Got`'s dispatch on the kind of value.
            if let Value::Num(x) = cur {
                let x = *x;
                self.consume(p.root);
                return self.put_num(dst, x);
            }
            Some(Got::of(cur))
        };
        match fast {
            Some(g) => {
                self.consume(p.root);
                self.put_got(dst, g)
            }
            None => self.get_path_slow(code, dst, path),
        }
    }

    /// One step of `get_path`'s walk from `cur`, None where the walk cannot go on in
    /// place.
    #[inline(always)]
    fn read_step<'a>(&'a self, code: &'a Code<'p>, cur: &'a Value, s: &RStep<'p>) -> Option<&'a Value> {
        // (The site's cache looked up only where a map is read: a list's item needs none.)
        let ic = || &code.ic[s.ic as usize];
        match (cur, s.key) {
            (Value::Map(m), RKey::Field(name)) => m.get_cached(name, ic()),
            (Value::List(l), RKey::Index(k)) => match self.rd(code, k) {
                Value::Num(n) => list_at(*n, l.len()).map(|i| &l.items()[i]),
                _ => None,
            },
            (Value::Map(m), RKey::Index(k)) => match self.rd(code, k) {
                Value::Str(key) if key.len() <= KEY_FREE_BYTES => {
                    if k.tag() == T_CONST {
                        m.get_cached(key, ic())
                    } else {
                        m.get(key)
                    }
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// `get_path` step by step, each as its `Index` or `Field` would be made: the same
    /// work, errors and spots (a string's byte, a long key, a missing field, an unset
    /// variable).
    #[inline(never)]
    fn get_path_slow(&mut self, code: &Code<'p>, dst: Opd, path: u32) -> R<()> {
        // (The chain looked up again here, not passed: kept live through the walk for
        // this call, its values took stack slots on the fast path.)
        let p = code.rpaths[path as usize];
        let steps = &code.rsteps[p.at as usize..(p.at + p.n) as usize];
        let mut x = self.val(code, p.root, || p.rsp)?;
        for s in steps {
            x = match s.key {
                RKey::Field(name) => self.read_field(&x, name).map_err(|e| spotted(e, s.sp))?,
                RKey::Index(k) => {
                    let key = self.val(code, k, || s.ksp)?;
                    match index_in_place(&x, &key) {
                        Some(v) => v,
                        None => self.read_index(&x, &key).map_err(|e| spotted(e, s.sp))?,
                    }
                }
            };
        }
        self.put(dst, x)
    }

    /// The keys of place `p`, in order: a temporary moved out, a variable or constant
    /// copied (an unset variable is the `name` error at its spot, the first key's
    /// first).
    pub(super) fn path_keys(&mut self, code: &Code<'p>, p: &PathRef) -> R<SmallVec<[Value; 4]>> {
        let mut keys = SmallVec::new();
        for &(o, sp) in code.place_keys(p) {
            keys.push(self.val(code, o, || sp)?);
        }
        Ok(keys)
    }

    /// The keys of place `p` into `ks` when each is a number or a constant string (at
    /// most four): false, with nothing taken, for any other (an unset variable
    /// included: `path_keys` reports it).
    #[inline(always)]
    fn plain_keys<'c>(&self, code: &'c Code<'p>, p: &PathRef, ks: &mut [PathKey<'c>; 4]) -> bool {
        let ops = code.place_keys(p);
        if ops.len() > ks.len() {
            return false;
        }
        for (k, &(o, _)) in ks.iter_mut().zip(ops) {
            match self.pkey(code, o) {
                Some(pk) => *k = pk,
                None => return false,
            }
        }
        true
    }

    /// Key operand `o` as a `PathKey`: a number where it is, or a constant string.
    #[inline(always)]
    fn pkey<'c>(&self, code: &'c Code<'p>, o: Opd) -> Option<PathKey<'c>> {
        match o.tag() {
            T_CONST => match &code.consts[o.idx()] {
                Value::Num(n) => Some(PathKey::Num(*n)),
                Value::Str(s) => Some(PathKey::Str(s.as_slice())),
                _ => None,
            },
            _ => match self.rd(code, o) {
                Value::Num(n) => Some(PathKey::Num(*n)),
                _ => None,
            },
        }
    }

    /// `Op::BuiltinPlace`: place builtin call `call` of `code`, its result into `dst`.
    /// A variable itself changed by a builtin with a `fast` change and at most one
    /// argument after the place (`push(xs, v)`, `pop(xs)`) goes by `place_var_fast`,
    /// its argument read here (a plain one by its payload); any other call by
    /// `vm_place_call`. (Through `vm_op`: called from `vm_exec` directly, `push(xs, v)`
    /// took about 40 instructions fewer, but `loop`, which calls no builtin, 2.4% more,
    /// fib 1.3% more: the dispatch loop's registers, as for `Op::Builtin`.)
    #[inline]
    pub(super) fn vm_place(&mut self, code: &Code<'p>, dst: Opd, call: u32) -> R<()> {
        let pc = &code.pcalls[call as usize];
        if let (0, Some(fast), 0..=1) = (pc.path.n, pc.b.fast, pc.n) {
            let n = pc.n as usize;
            let v = if n == 1 {
                let (o, sp) = code.args[pc.at as usize];
                match Plain::of(self.rd(code, o)) {
                    Some(p) => p.value(),
                    None => self.val(code, o, || sp)?,
                }
            } else {
                Value::Nil
            };
            let mut args = [v];
            let r = self.place_var_fast(pc.b, fast, slot_of(pc.path.root), &mut args[..n]);
            let [v] = args;
            drop_held(v);
            return match r {
                Ok(v) => self.put(dst, v),
                Err(e) => Err(e),
            };
        }
        let pc = *pc;
        match self.vm_place_call(code, &pc) {
            Ok(v) => self.put(dst, v),
            Err(e) => Err(e),
        }
    }

    /// A place builtin's call (`push(piles[i], d)`): keys that are numbers or constant
    /// strings are read where they are, nothing collected, and the place is walked in
    /// place (`value::in_place`); any other keys are collected (`path_keys`) for the
    /// place functions.
    pub(super) fn vm_place_call(&mut self, code: &Code<'p>, pc: &PlaceCall) -> R<Value> {
        if pc.path.n > 0 {
            let mut ks = [PathKey::Num(0.0); 4];
            if self.plain_keys(code, &pc.path, &mut ks) {
                return self.vm_place_call_at(code, pc, &ks[..pc.path.n as usize]);
            }
        }
        // (A variable itself, `push(xs, v)`, is changed here, in `vm_op`: through
        // `vm_place_call_at`, a call level more, storage took 6.8% more instructions.)
        let collected: SmallVec<[Value; 4]>;
        let keys: &[Value] = if pc.path.n == 0 {
            &[]
        } else {
            collected = self.path_keys(code, &pc.path)?;
            &collected
        };
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        for &(o, sp) in &code.args[pc.at as usize..(pc.at + pc.n) as usize] {
            vals.push(self.val(code, o, || sp)?);
        }
        let root = slot_of(pc.path.root);
        let r = if keys.is_empty() {
            self.place_builtin_var(pc.b, root, &mut vals)
        } else {
            self.place_builtin_vals(pc.b, root, keys, &mut vals)
        };
        drop_args(vals);
        r
    }

    /// `vm_place_call` with keys that are numbers or constant strings (`ks`), read
    /// where they are.
    #[inline(never)]
    fn vm_place_call_at(&mut self, code: &Code<'p>, pc: &PlaceCall, ks: &[PathKey<'_>]) -> R<Value> {
        // (One argument after the place, `push(groups[k], v)`, in an array of its own.)
        if let [(o, sp)] = code.args[pc.at as usize..(pc.at + pc.n) as usize] {
            let mut vals = [self.val(code, o, || sp)?];
            let r = self.place_builtin_at(pc.b, slot_of(pc.path.root), ks, code.place_ics(&pc.path), &mut vals);
            let [v] = vals;
            drop_held(v);
            return r;
        }
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        for &(o, sp) in &code.args[pc.at as usize..(pc.at + pc.n) as usize] {
            vals.push(self.val(code, o, || sp)?);
        }
        let r = self.place_builtin_at(pc.b, slot_of(pc.path.root), ks, code.place_ics(&pc.path), &mut vals);
        drop_args(vals);
        r
    }

    /// `x[k] = v`: a plain value (nil, a boolean, a number) over a plain value in a list
    /// or map of the variable's own is written in place (no storage changes: plain
    /// values hold none; a map key within `KEY_FREE_BYTES` costs no work; a constant
    /// key is found through the site's inline cache, any other where the map's last
    /// look-up found one, else by its hash); anything else through `set_index`.
    pub(super) fn vm_set_index(&mut self, code: &Code<'p>, at: usize, var: Opd, k: Opd, v: Opd, ic: u32) -> R<()> {
        if let Some(x) = Plain::of(self.rd(code, v)) {
            // The site's cache for a constant key (a record's field); any other key is
            // looked for first where this map's last look-up found one (`m[k] =
            // get(m, k, 0) + 1`), then by its hash.
            let site = (k.tag() == T_CONST).then(|| &code.ic[ic as usize]);
            let done = match self.cell_and_key(code, var, k) {
                Some((cell, key)) => set_plain_in_place(cell, key, site, x),
                None => {
                    let key = self.rd(code, k).clone();
                    set_plain_in_place(self.cell(var), &key, site, x)
                }
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

    /// `PLACE = v` and `PLACE op= v`: a plain value (nil, a boolean, a number) over a
    /// plain value, or a number changed by a number, along containers the variable
    /// alone holds, is written in place (`plain_leaf`); anything else through the place
    /// functions of `interp/places.rs` (which copy shared containers and charge).
    pub(super) fn vm_set_path(&mut self, code: &Code<'p>, at: usize, path: u32, op: Option<BinOp>, v: Opd) -> R<()> {
        let p = code.paths[path as usize];
        // A plain value is read where it is (a temporary holding one may stay, see
        // `consume`).
        if let Some(y) = Plain::of(self.rd(code, v)) {
            // Keys that are numbers or constant strings are read where they are, with
            // nothing collected (`bodies[i].vx += dt * ax`, `p.x = 0`, `t.done =
            // true`).
            if p.n == 1 {
                // (Indexed directly: through `place_keys`/`place_ics` this path took 44
                // instructions more, the slices' bounds.)
                let ko = code.pkeys[p.keys as usize].0;
                if let Some(k) = self.pkey(code, ko) {
                    let ic = std::slice::from_ref(&code.ic[p.ic as usize]);
                    if let Some(x) = plain_leaf(self.cell(p.root), &[k], ic) {
                        if plain_update(x, op, y) {
                            return Ok(());
                        }
                    }
                } else if self.plain_at_str_key(code, p.root, ko, op, y) {
                    // (`counts[w] += 1`: a string key in a variable or temporary.)
                    self.consume(ko);
                    return Ok(());
                }
            } else if p.n == 2 {
                // (Two keys, the most common chain, `bodies[i].vx`, `grid[y][x]`: read
                // into registers, without the array and loop of the general case: 40
                // instructions fewer.)
                let at = p.keys as usize;
                let (o0, o1) = (code.pkeys[at].0, code.pkeys[at + 1].0);
                if let (Some(k0), Some(k1)) = (self.pkey(code, o0), self.pkey(code, o1)) {
                    let (ic0, ic1) = (&code.ic[p.ic as usize], &code.ic[p.ic as usize + 1]);
                    if let Some(x) = plain_leaf2(self.cell(p.root), k0, ic0, k1, ic1) {
                        if plain_update(x, op, y) {
                            return Ok(());
                        }
                    }
                }
            } else {
                let mut ks = [PathKey::Num(0.0); 4];
                if self.plain_keys(code, &p, &mut ks) {
                    let ics = code.place_ics(&p);
                    if let Some(x) = plain_leaf(self.cell(p.root), &ks[..p.n as usize], ics) {
                        // (A temporary key held a number: it may stay, see `consume`.)
                        if plain_update(x, op, y) {
                            return Ok(());
                        }
                    }
                }
            }
        }
        self.set_path_slow(code, at, &p, op, v)
    }

    /// `m[k] = y` or `m[k] op= y` (`y` plain) on a map variable that nothing else
    /// shares, whose key `k` is a string in a variable or temporary (read in place,
    /// beside the map) and whose entry holds a plain value: changed in place, looked
    /// for first where the map's last look-up found a key, then by its hash. False:
    /// nothing changed (the general path does it, with its errors).
    #[inline(always)]
    fn plain_at_str_key(&mut self, code: &Code<'p>, root: Opd, ko: Opd, op: Option<BinOp>, y: Plain) -> bool {
        let Some((cell, key)) = self.cell_and_key(code, root, ko) else { return false };
        map_entry_in_place(cell, key, None, |item| is_plain(item) && plain_update(item, op, y))
    }

    /// `vm_set_path` past its plain fast path: the value and the keys collected, then
    /// the place functions of `interp/places.rs`.
    #[inline(never)]
    fn set_path_slow(&mut self, code: &Code<'p>, at: usize, p: &PathRef, op: Option<BinOp>, v: Opd) -> R<()> {
        let rhs = self.val(code, v, || code.ospot[at][0])?;
        let keys = self.path_keys(code, p)?;
        match op {
            None => self.assign_keys(slot_of(p.root), &keys, rhs),
            Some(op) => self.compound_keys(slot_of(p.root), &keys, op, rhs),
        }
    }

    /// A numeric `for`'s next value (its count moved on by `up` first), or None past
    /// the end. Its registers hold numbers from `ForPrep` on (the compiler's own).
    #[inline(always)]
    pub(super) fn for_value(&mut self, base: u32, up: f64) -> Option<f64> {
        let b = self.base + base as usize;
        let Some([Value::Num(a), Value::Num(end), Value::Num(st), Value::Num(k)]) =
            self.stack.get_mut(b..b + 4).and_then(|s| <&mut [Value; 4]>::try_from(s).ok())
        else {
            return None;
        };
        // A loop of whole numbers (`whole_range`): `k` counts up to -1, `a` is the term
        // one past the end: each term exact, no finiteness or end to test.
        if *k < 0.0 {
            *k += up;
            return if *k < 0.0 { Some(*a + *k * *st) } else { None };
        }
        *k += up;
        let (a, end, st, k) = (*a, *end, *st, *k);
        let i = a + k * st;
        if !i.is_finite() {
            return for_value_wide(a, end, st, k);
        }
        // (The step is not 0, `for_prep` refuses it, and not NaN, which makes `i` NaN:
        // its sign alone says which way the end lies, one compare fewer a round.)
        let past = if st > 0.0 { i > end } else { i < end };
        if past {
            None
        } else {
            Some(i)
        }
    }

    pub(super) fn for_prep(&mut self, base: u32) -> R<()> {
        let b = self.base + base as usize;
        let (a, e, st) = (&self.stack[b], &self.stack[b + 1], &self.stack[b + 2]);
        let (&Value::Num(a), &Value::Num(e), &Value::Num(st)) = (a, e, st) else {
            let bad = [a, e, st].into_iter().find(|v| !matches!(v, Value::Num(_))).map(|v| v.type_name());
            return Err(self.err(ErrKind::Type, format!("for bounds must be numbers, got {}", bad.unwrap_or("?"))));
        };
        if st == 0.0 {
            return Err(self.err(ErrKind::Value, "for step must not be 0"));
        }
        match whole_range(a, e, st) {
            Some((past, k)) => {
                self.stack[b] = Value::Num(past);
                self.stack[b + 3] = Value::Num(k);
            }
            None => self.stack[b + 3] = Value::Num(0.0),
        }
        Ok(())
    }

    pub(super) fn for_in_prep(&mut self, code: &Code<'p>, at: usize, base: u32, src: Opd) -> R<()> {
        let b = self.base + base as usize;
        if src != Opd::new(T_TEMP, base as usize) {
            let v = self.val(code, src, || code.ospot[at][0])?;
            self.stack[b] = v;
        }
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
    pub(super) fn set_index_reg(&mut self, b: usize, i: usize) {
        match &mut self.stack[b + 1] {
            Value::Num(n) => *n = (i + 1) as f64,
            slot => *slot = Value::Num((i + 1) as f64),
        }
    }

    /// A `for ... in` loop's end: its snapshot let go and its charge released, the
    /// charge register back to nil (see `ForInPrep`).
    #[inline(always)]
    pub(super) fn for_in_end(&mut self, base: u32) -> R<()> {
        let b = self.base + base as usize;
        let cost = match self.stack[b + 2] {
            Value::Num(c) => c as isize,
            _ => 0,
        };
        self.stack[b] = Value::Unset;
        self.stack[b + 2] = Value::Nil;
        self.charge(false, -cost)
    }

    /// A `for ... in` loop's back edge past `for_in_item` (a map, two variables, the
    /// end), from the dispatch loop without `vm_op`'s dispatch (50 instructions a map's
    /// entry): where it goes on, the loop's body at `to` or past its end (`at + 2`).
    /// (One call with the index as its result, as `vm_op`'s: written in the dispatch
    /// loop, the two outcomes cost a list's loop 4 instructions an item.)
    #[inline(never)]
    pub(super) fn for_in_back(&mut self, first: Opd, second: Opd, base: u32, to: u32, at: usize) -> R<usize> {
        if self.for_in_step(first, second, base)? {
            Ok(to as usize)
        } else {
            self.for_in_end(base)?;
            Ok(at + 2)
        }
    }

    /// `for_in_step` for a list and one loop variable, when the list has a next item:
    /// the item written to the variable (None: `for_in_back` or `for_in_next` does it, or
    /// ends the loop).
    #[inline(always)]
    pub(super) fn for_in_item(&mut self, first: Opd, base: u32) -> Option<R<()>> {
        let b = self.base + base as usize;
        let (Value::List(l), Value::Num(i)) = (self.stack.get(b)?, self.stack.get(b + 1)?) else {
            return None;
        };
        // (A count this loop wrote: the processor's conversion is exact for it.)
        let i = leash_alloc::trunc_i64(*i) as usize;
        let g = Got::of(l.items().get(i)?);
        self.set_index_reg(b, i);
        Some(self.put_got(first, g))
    }

    /// `for_in_step` for `vm_op`'s `ForInNext` (a loop's first item), out of line:
    /// inlined into `vm_op`, it moved the layout of every builtin call's path (array
    /// +0.6%). `for_in_back` inlines `for_in_step` itself.
    pub(super) fn for_in_next(&mut self, first: Opd, second: Opd, base: u32) -> R<bool> {
        self.for_in_step(first, second, base)
    }

    /// The next item of a `for ... in` into its variables; false past the end.
    ///
    /// Each case writes its values where it makes them: a cloned item carried out of the
    /// match (as one tuple for all cases) went through a stack temporary written by two
    /// 8-byte stores and read back by one 16-byte load, a store-forwarding stall on every
    /// iteration.
    #[inline(always)]
    fn for_in_step(&mut self, first: Opd, second: Opd, base: u32) -> R<bool> {
        let b = self.base + base as usize;
        // (The index is a count this loop wrote: the processor's signed conversion is
        // exact for it, cheaper than `as`'s saturating ones.)
        let i = match self.stack[b + 1] {
            Value::Num(i) => leash_alloc::trunc_i64(i) as usize,
            _ => 0,
        };
        match &self.stack[b] {
            // (With one variable the dispatch loop takes a list's items itself through
            // `for_in_item`; this arm does both kinds so that the function is whole.)
            Value::List(l) if i < l.len() => {
                let g = Got::of(&l.items()[i]);
                self.set_index_reg(b, i);
                if second == NONE {
                    self.put_got(first, g)?;
                } else {
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

/// A comparison of two values read in place that needs no walk: `==` and `!=` with a
/// side that is nil, a boolean or a number (`e != nil`: equal only to its like), or of
/// two strings (`c == "{"`); `<`, `<=`, `>`, `>=` of two strings (`c >= "0"`); `in` and
/// `not in` of a string and a map (`k in m`). Its
/// outcome and its work, as `binop` counts them (`equals_counted`: one item, and the
/// bytes of two strings of one length; an order: the bytes it touched; `in`: the key's
/// bytes). None: the
/// general path (containers, an unset operand, a type error).
#[inline(always)]
fn cmp_in_place(op: BinOp, x: &Value, y: &Value) -> Option<(bool, u64)> {
    use std::cmp::Ordering::*;
    match op {
        BinOp::Eq | BinOp::Ne => {
            let (same, bytes) = match (x, y) {
                // `e != nil`, `t[0] == nil` (the right operand nil, as a comparison with
                // the literal is written) first: a type test.
                (x, Value::Nil) if !matches!(x, Value::Unset) => (matches!(x, Value::Nil), 0),
                // (`bytes_eq`: a short string without slice equality's `bcmp` call,
                // which saved and restored the registers around it: `c == " "` 212 -> 191
                // machine instructions.)
                (Value::Str(p), Value::Str(q)) => (
                    crate::value::bytes_eq(p.as_slice(), q.as_slice()),
                    if p.len() == q.len() { p.len() as u64 } else { 0 },
                ),
                // (An unset operand is a `name` error, on the general path.)
                (Value::Unset, _) | (_, Value::Unset) => return None,
                _ if is_plain(x) || is_plain(y) => (equals_scalar(x, y), 0),
                _ => return None,
            };
            Some((same == (op == BinOp::Eq), EqCount { items: 1, bytes }.units()))
        }
        // `k in m` for a string and a map: one look-up, charged by the key's bytes.
        BinOp::In | BinOp::NotIn => match (x, y) {
            (Value::Str(k), Value::Map(m)) => {
                let found = m.contains(k);
                Some((found == (op == BinOp::In), crate::meter::scaled(k.len() as u64, WORK_EQ_BYTE_X256)))
            }
            _ => None,
        },
        BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => match (x, y) {
            (Value::Str(p), Value::Str(q)) => {
                let (o, touched) = cmp_touched(p, q);
                let t = match op {
                    BinOp::Lt => o == Less,
                    BinOp::Le => o != Greater,
                    BinOp::Gt => o == Greater,
                    _ => o != Less,
                };
                Some((t, crate::meter::scaled(touched as u64, WORK_EQ_BYTE_X256)))
            }
            _ => None,
        },
        _ => None,
    }
}

/// `x[key]` as `Index`'s fast path reads it (vm.rs; keep the two in step), without
/// charge: a list's item or a string's byte by a number in range, a map's entry by a
/// short string key it holds.
fn index_in_place(x: &Value, key: &Value) -> Option<Value> {
    match (x, key) {
        (Value::List(l), Value::Num(n)) => list_at(*n, l.len()).map(|i| l.items()[i].clone()),
        (Value::Map(m), Value::Str(k)) if k.len() <= KEY_FREE_BYTES => m.get(k).cloned(),
        (Value::Str(s), Value::Num(n)) => list_at(*n, s.len()).map(|i| Value::Str(crate::value::byte_str(s[i]))),
        _ => None,
    }
}

/// `cell[key] = x` for a plain `x` over a plain item, in place, when the container is
/// held by `cell` alone (false: the general path must do it). `site`: the instruction's
/// cache, for a constant key.
#[inline(always)]
fn set_plain_in_place(cell: &mut Value, key: &Value, site: Option<&Site>, x: Plain) -> bool {
    if let (Value::List(l), Value::Num(i)) = (&mut *cell, key) {
        return match Rc::get_mut(l) {
            // (No `with_item`: plain over plain changes no accounting, and its two
            // looks at the item's storage were 5% of fannkuch.)
            Some(l) => match list_at(*i, l.len()).and_then(|j| l.plain_mut(j)) {
                Some(item) => {
                    x.write(item);
                    true
                }
                None => false,
            },
            None => false,
        };
    }
    map_entry_in_place(cell, key, site, |item| put_plain(item, x))
}

/// The entry of string key `key` (within `KEY_FREE_BYTES`) of the map `cell` holds
/// alone, changed in place by `f`, which may only replace a plain value by a plain
/// value (the map's accounting is not kept for it); false when `cell` and `key` are
/// not such a map and key, the entry is missing or `f` declines. Looked for at `site`
/// (a constant key's cache), else where the map's last look-up found a key, then by
/// the hash.
#[inline(always)]
fn map_entry_in_place(cell: &mut Value, key: &Value, site: Option<&Site>, f: impl FnOnce(&mut Value) -> bool) -> bool {
    let (Value::Map(m), Value::Str(s)) = (cell, key) else { return false };
    if s.len() > KEY_FREE_BYTES {
        return false;
    }
    let Some(m) = m.unique() else { return false };
    // (`f` changes only a plain value into a plain value, else declines: no storage
    // changes, so the entry is reached without the map's accounting, which measured
    // the value before and after: a record's field set took 50 instructions more
    // than a list's item.)
    let slot = match site {
        Some(site) => m.value_cached_mut(s, site),
        None => m.value_hinted_mut(s),
    };
    slot.is_some_and(f)
}

/// Plain `x` (a place's value, reached in place) set to plain `y` (`op` None) or
/// changed by `x op y` when both are numbers and the result is one (true); false,
/// with `x` as it was, for anything else (the general path does it, with its errors).
/// Plain over plain changes no accounting.
#[inline(always)]
fn plain_update(x: &mut Value, op: Option<BinOp>, y: Plain) -> bool {
    match (op, x, y) {
        (None, x, y) => {
            y.write(x);
            true
        }
        (Some(op), Value::Num(x), Plain::Num(y)) => match arith(op, *x, y) {
            Some(r) => {
                *x = r;
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// A place builtin's arguments dropped after its call: through their drop glue (a call)
/// only when one may still hold something or they spilled to the heap (the builtin
/// mostly took its value: `push(xs, v)` leaves an unset cell).
#[inline(always)]
fn drop_args(vals: SmallVec<[Value; 4]>) {
    if !vals.spilled() && !vals.iter().any(holds) {
        std::mem::forget(vals);
    } else {
        drop(vals);
    }
}

/// 2^51: the loops `whole_range` takes have bounds and steps of whole numbers up to
/// this magnitude, so that every number it and the loop work out is a whole number
/// within 2^53, exact (the span is at most 2^52 + 2^51).
const WHOLE: f64 = 2_251_799_813_685_248.0;

/// 1.5 * 2^52: `(x + ROUND) - ROUND` is `x` rounded to a whole number for |x| up to
/// 2^51 (the sum lies where the spacing of numbers is 1).
const ROUND: f64 = 6_755_399_441_055_744.0;

/// A number that is whole, up to 2^51 in magnitude (not NaN, not infinite). (Not the
/// arithmetic's test, `whole_pair` in interp/ops.rs, a conversion to an integer and
/// back within 2^53: for three numbers at every loop entry that cost about 23
/// instructions more, and the loop needs the narrower bound anyway. WORKLOG,
/// twenty-eighth session.)
#[inline(always)]
fn whole(x: f64) -> bool {
    x.abs() <= WHOLE && (x + ROUND) - ROUND == x
}

/// A numeric `for` loop of whole numbers from `a` to `end` by `st`, when each of its
/// terms is exact: the term one past its last, and its count register's first value
/// (minus the number of terms). The loop then runs `past + k * st` for `k` from that up
/// to -1, the same numbers as `a + k * st` for `k` from 0, with no end or finiteness to
/// test a round. None (the general loop): a bound or step that is not whole within
/// 2^51, a start of -0 (the general loop's first term keeps its sign), or no term at
/// all. Worked out at every entry to the loop: compares and one division, no rounding
/// call and no conversion but the division's.
fn whole_range(a: f64, end: f64, st: f64) -> Option<(f64, f64)> {
    let room = if st > 0.0 { end - a } else { a - end };
    if !(room >= 0.0) || !whole(a) || !whole(end) || !whole(st) || a.to_bits() == (-0.0f64).to_bits() {
        return None;
    }
    // (`room` and `by` are whole and below 2^53: the quotient's floor is exact.)
    let by = st.abs();
    let n = if by == 1.0 { room + 1.0 } else { ((room / by) as i64 + 1) as f64 };
    Some((a + n * st, -n))
}

/// `for_value` past a term `a + k * st` that is not finite (a start, end or step that
/// is not finite, or a product that overflowed): the term computed wide
/// (`range_term_wide`), None when it is still not finite or past the end. Out of line:
/// the loop's round stays one finiteness test.
#[cold]
#[inline(never)]
fn for_value_wide(a: f64, end: f64, st: f64, k: f64) -> Option<f64> {
    let i = range_term_wide(a, k, st);
    if !i.is_finite() || (st > 0.0 && i > end) || (st < 0.0 && i < end) {
        None
    } else {
        Some(i)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which loops run by their count of whole terms, and where those start.
    #[test]
    fn whole_ranges() {
        let e = WHOLE;
        assert_eq!(whole_range(1.0, 5.0, 1.0), Some((6.0, -5.0)));
        assert_eq!(whole_range(5.0, 1.0, -1.0), Some((0.0, -5.0)));
        assert_eq!(whole_range(1.0, 10.0, 3.0), Some((13.0, -4.0)));
        assert_eq!(whole_range(3.0, 3.0, 7.0), Some((10.0, -1.0)));
        assert_eq!(whole_range(e - 3.0, e - 1.0, 1.0), Some((e, -3.0)));
        assert_eq!(whole_range(-e + 2.0, -e + 1.0, -1.0), Some((-e, -2.0)));
        assert_eq!(whole_range(10.0, -7.0, -5.0), Some((-10.0, -4.0)));
        // No term, a part that is not whole, -0, NaN, infinities: the general loop.
        assert_eq!(whole_range(4.0, 3.0, 1.0), None);
        assert_eq!(whole_range(0.5, 3.0, 1.0), None);
        assert_eq!(whole_range(1.0, 3.5, 1.0), None);
        assert_eq!(whole_range(1.0, 3.0, 0.5), None);
        assert_eq!(whole_range(-0.0, 3.0, 1.0), None);
        assert_eq!(whole_range(f64::NAN, 3.0, 1.0), None);
        assert_eq!(whole_range(1.0, f64::INFINITY, 1.0), None);
        // The widest: from -2^51 to 2^51, by 1 or by 2^51.
        assert_eq!(whole_range(-e, e, 1.0), Some((e + 1.0, -(2.0 * e + 1.0))));
        assert_eq!(whole_range(e, -e, -e), Some((-2.0 * e, -3.0)));
        // A bound or step past 2^51.
        assert_eq!(whole_range(e + 1.0, e + 2.0, 1.0), None);
        assert_eq!(whole_range(0.0, e + 2.0, 1.0), None);
        assert_eq!(whole_range(0.0, 10.0, e + 2.0), None);
        assert_eq!(whole_range(1.0, 2f64.powi(60), 2f64.powi(59)), None);
        // The floor of a quotient near 2^52.
        assert_eq!(whole_range(-e, e - 1.0, e - 1.0), Some((2.0 * e - 3.0, -3.0)));
    }
}
