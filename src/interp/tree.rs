//! The tree evaluator (`LEASH_CORE=tree`; the compiled core is the default since the
//! thirteenth session, and this is its differential oracle while both exist):
//! statements and expressions walked from the resolved tree, with the resolver's idiom
//! nodes (`BinS`, `BinK`, `IncVar`, `MapGet`, `CountIndex`). Everything it shares with
//! the compiled core (places, calls, operators, the charges) lives in the other parts of
//! `interp`. Child of `interp`.

use super::*;

impl<'p> Interp<'p> {
    /// `x = e`: a number is written in place when the variable holds one (see `num_fast`).
    #[inline(always)]
    pub(super) fn set_var(&mut self, slot: Slot, e: &'p Expr) -> R<()> {
        if let Some(x) = self.num_fast(e) {
            let cur = self.slot_mut(slot);
            if let Value::Num(n) = cur {
                *n = x;
                return Ok(());
            }
            return self.store(slot, Value::Num(x));
        }
        let v = self.eval_fast(e)?;
        self.store(slot, v)
    }

    pub fn exec_block(&mut self, block: &'p [Stmt]) -> R<Flow> {
        for s in block {
            match self.exec(s) {
                Ok(Flow::Normal) => {}
                Ok(f) => return Ok(f),
                // A failure raised while running this line gets the line's position.
                Err(e) => return Err(located(e, s.pos)),
            }
        }
        Ok(Flow::Normal)
    }

    #[inline]
    pub(super) fn exec(&mut self, s: &'p Stmt) -> R<Flow> {
        match &s.kind {
            StmtKind::SetLocal(i, e) => {
                self.step(s.pos)?;
                self.set_var(Slot::Local(*i), e)?;
            }
            StmtKind::SetGlobal(i, e) => {
                self.step(s.pos)?;
                self.set_var(Slot::Global(*i), e)?;
            }
            StmtKind::CountIndex(slot, k, e) => {
                self.step(s.pos)?;
                if !self.count_in_place(*slot, e)? {
                    let v = self.eval(e)?;
                    let key = self.eval_fast(k)?;
                    self.set_index(*slot, key, v)?;
                }
            }
            StmtKind::SetIndex(slot, k, e) => {
                self.step(s.pos)?;
                let v = match self.num_fast(e) {
                    Some(x) => Value::Num(x),
                    None => self.eval(e)?,
                };
                let key = self.eval_fast(k)?;
                self.set_index(*slot, key, v)?;
            }
            StmtKind::IncVar(slot, op, k) => {
                self.step(s.pos)?;
                if let Value::Num(a) = self.slot_mut(*slot) {
                    let r = if *op == BinOp::Add { *a + *k } else { *a - *k };
                    if r.is_finite() {
                        *a = r;
                        return Ok(Flow::Normal);
                    }
                }
                self.compound_var(*slot, *op, Value::Num(*k))?;
            }
            StmtKind::CompoundVar(slot, op, e) => {
                self.step(s.pos)?;
                if let Some(k) = self.num_fast(e) {
                    if let Value::Num(a) = self.slot_mut(*slot) {
                        if let Some(r) = arith(*op, *a, k) {
                            *a = r;
                            return Ok(Flow::Normal);
                        }
                    }
                    self.compound_var(*slot, *op, Value::Num(k))?;
                } else {
                    let v = self.eval_fast(e)?;
                    self.compound_var(*slot, *op, v)?;
                }
            }
            StmtKind::Expr(e) => {
                self.step(s.pos)?;
                self.eval(e)?;
            }
            StmtKind::If(arms, else_body) => {
                for arm in arms.iter() {
                    self.step(arm.pos)?;
                    if self.cond(&arm.cond).map_err(|e| located(e, arm.pos))? {
                        return self.exec_block(&arm.body);
                    }
                }
                if let Some(b) = else_body {
                    return self.exec_block(b);
                }
            }
            StmtKind::While(cond, body) => {
                self.step(s.pos)?;
                while self.cond(cond)? {
                    match self.exec_block(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                    self.step(s.pos)?;
                }
            }
            StmtKind::ForRange(f) => {
                let ForRange { var, start, end, step, body } = &**f;
                self.step(s.pos)?;
                return self.for_range(s.pos, *var, start, end, step.as_ref(), body);
            }
            StmtKind::Break => {
                self.step(s.pos)?;
                return Ok(Flow::Break);
            }
            StmtKind::Continue => {
                self.step(s.pos)?;
                return Ok(Flow::Continue);
            }
            StmtKind::Return(e) => {
                self.step(s.pos)?;
                self.ret = match e {
                    Some(e) => match self.num_fast(e) {
                        Some(x) => Value::Num(x),
                        None => self.eval_fast(e)?,
                    },
                    None => Value::Nil,
                };
                return Ok(Flow::Return);
            }
            StmtKind::Block(b) => return self.exec_block(b),
            _ => return self.exec_cold(s),
        }
        Ok(Flow::Normal)
    }

    /// The statements that are rarely on a hot path, kept out of `exec` so that it stays
    /// small.
    #[inline(never)]
    pub(super) fn exec_cold(&mut self, s: &'p Stmt) -> R<Flow> {
        match &s.kind {
            StmtKind::Assign(place, e) => {
                self.step(s.pos)?;
                let v = self.eval(e)?;
                self.assign(place, v)?;
            }
            StmtKind::MultiAssign(places, values) => {
                self.step(s.pos)?;
                self.multi_assign(places, values)?;
            }
            StmtKind::Compound(place, op, e) => {
                self.step(s.pos)?;
                let v = self.eval(e)?;
                self.compound(place, *op, v)?;
            }
            StmtKind::ForIn(f) => {
                let ForIn { first, second, iter, body } = &**f;
                self.step(s.pos)?;
                return self.for_in(s.pos, *first, *second, iter, body);
            }
            StmtKind::Throw(e) => {
                self.step(s.pos)?;
                let v = self.eval(e)?;
                return Err(self.thrown(v, s.pos));
            }
            StmtKind::Try { body, var, handler } => {
                self.step(s.pos)?;
                match self.exec_block(body) {
                    Ok(f) => return Ok(f),
                    Err(u) => match *u {
                        Unwind::Error(e) => {
                            let m = self.error_value(e)?;
                            self.store(*var, m)?;
                            return self.exec_block(handler);
                        }
                        other => return Err(Box::new(other)),
                    },
                }
            }
            _ => unreachable!("hot statements are run by exec"),
        }
        Ok(Flow::Normal)
    }

    /// `a, b = x, y`: every value first, then each target left to right; `a, b = e`:
    /// `e` must be a list of exactly as many items as there are targets.
    pub(super) fn multi_assign(&mut self, places: &'p [Place], values: &'p [Expr]) -> R<()> {
        let vals: Vec<Value> = if values.len() == 1 {
            let v = self.eval(&values[0])?;
            self.unpack(&v, places.len())?
        } else {
            let mut vals = Vec::with_capacity(values.len());
            for e in values {
                vals.push(self.eval(e)?);
            }
            vals
        };
        for (p, v) in places.iter().zip(vals) {
            if p.path.is_empty() {
                self.store(p.root, v)?;
            } else {
                self.assign(p, v)?;
            }
        }
        self.host.check_memory()
    }

    pub(super) fn loop_body(&mut self, body: &'p [Stmt]) -> R<Option<Flow>> {
        Ok(match self.exec_block(body)? {
            Flow::Break => Some(Flow::Normal),
            Flow::Return => Some(Flow::Return),
            _ => None,
        })
    }

    pub(super) fn for_range(
        &mut self,
        pos: Pos,
        var: Slot,
        start: &'p Expr,
        end: &'p Expr,
        step: Option<&'p Expr>,
        body: &'p [Stmt],
    ) -> R<Flow> {
        let a = self.eval(start)?;
        let b = self.eval(end)?;
        let st = match step {
            Some(e) => self.eval(e)?,
            None => Value::Num(1.0),
        };
        let (Value::Num(a), Value::Num(b), Value::Num(st)) = (&a, &b, &st) else {
            let bad = [&a, &b, &st].into_iter().find(|v| !matches!(v, Value::Num(_))).map(|v| v.type_name());
            return Err(self.err(ErrKind::Type, format!("for bounds must be numbers, got {}", bad.unwrap_or("?"))));
        };
        let (a, b, st) = (*a, *b, *st);
        if st == 0.0 {
            return Err(self.err(ErrKind::Value, "for step must not be 0"));
        }
        let mut k: f64 = 0.0;
        loop {
            let mut i = a + k * st;
            if !i.is_finite() {
                // `k * st` may overflow where `a + k * st` does not (1e308 to -1e308 step
                // -1e308): the same sum at half scale, off the hot path.
                i = range_term_wide(a, k, st);
                if !i.is_finite() {
                    break;
                }
            }
            if (st > 0.0 && i > b) || (st < 0.0 && i < b) {
                break;
            }
            match self.slot_mut(var) {
                Value::Num(n) => *n = i,
                _ => self.store(var, Value::Num(i))?,
            }
            if let Some(f) = self.loop_body(body)? {
                return Ok(f);
            }
            k += 1.0;
            self.step(pos)?;
        }
        Ok(Flow::Normal)
    }

    pub(super) fn for_in(
        &mut self,
        pos: Pos,
        first: Slot,
        second: Option<Slot>,
        iter: &'p Expr,
        body: &'p [Stmt],
    ) -> R<Flow> {
        let snap = self.eval(iter)?;
        if !matches!(snap, Value::List(_) | Value::Map(_)) {
            return Err(self.err(ErrKind::Type, format!("for ... in needs a list or map, got {}", snap.type_name())));
        }
        // The snapshot is held by this frame while the loop runs.
        let cost = (ACCT_SNAPSHOT + snap.heap()) as isize;
        self.charge(false, cost)?;
        let r = self.for_in_loop(pos, first, second, &snap, body);
        self.charge(false, -cost)?;
        r
    }

    pub(super) fn for_in_loop(
        &mut self,
        pos: Pos,
        first: Slot,
        second: Option<Slot>,
        snap: &Value,
        body: &'p [Stmt],
    ) -> R<Flow> {
        let n = match snap {
            Value::List(l) => l.len(),
            Value::Map(m) => m.len(),
            _ => 0,
        };
        for i in 0..n {
            match snap {
                Value::List(l) => {
                    let item = l.items()[i].clone();
                    match second {
                        None => self.store(first, item)?,
                        Some(s2) => {
                            self.store(first, Value::Num(i as f64))?;
                            self.store(s2, item)?;
                        }
                    }
                }
                Value::Map(m) => {
                    let (k, v) = m.get_index(i).expect("index in range");
                    let (k, v) = (Value::Str(k.clone()), v.clone());
                    self.store(first, k)?;
                    if let Some(s2) = second {
                        self.store(s2, v)?;
                    }
                }
                _ => {}
            }
            if let Some(f) = self.loop_body(body)? {
                return Ok(f);
            }
            self.step(pos)?;
        }
        Ok(Flow::Normal)
    }

    pub(super) fn eval_keys(&mut self, path: &'p [Expr]) -> R<SmallVec<[Value; 4]>> {
        let mut keys = SmallVec::new();
        for k in path {
            keys.push(self.eval(k)?);
        }
        Ok(keys)
    }

    pub(super) fn assign(&mut self, place: &'p Place, v: Value) -> R<()> {
        let keys = self.eval_keys(&place.path)?;
        self.assign_keys(place.root, &keys, v)
    }

    pub(super) fn compound(&mut self, place: &'p Place, op: BinOp, rhs: Value) -> R<()> {
        let keys = self.eval_keys(&place.path)?;
        self.compound_keys(place.root, &keys, op, rhs)
    }

    #[inline(always)]
    pub(super) fn opnd_num(&self, o: Opnd) -> Option<f64> {
        let v = match o {
            Opnd::Num(n) => return Some(n),
            Opnd::Local(i) => &self.stack[self.base + i as usize],
            Opnd::Global(i) => &self.globals[i as usize],
        };
        match v {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }

    pub(super) fn opnd_val(&self, o: Opnd) -> R<Value> {
        let (v, slot) = match o {
            Opnd::Num(n) => return Ok(Value::Num(n)),
            Opnd::Local(i) => (&self.stack[self.base + i as usize], Slot::Local(i)),
            Opnd::Global(i) => (&self.globals[i as usize], Slot::Global(i)),
        };
        if let Value::Unset = v {
            return Err(self.unset(slot));
        }
        Ok(v.clone())
    }

    /// Evaluate a condition to its truth, without building a bool value where possible.
    #[inline(always)]
    pub(super) fn cond(&mut self, e: &'p Expr) -> R<bool> {
        let operands = match e {
            Expr::BinS(op, _, a, b) => self.opnd_num(*a).zip(self.opnd_num(*b)).map(|p| (op, p)),
            Expr::BinK(op, _, a, k) => self.num_leaf(a).map(|x| (op, (x, *k))),
            _ => None,
        };
        if let Some((op, (x, y))) = operands {
            {
                match op {
                    BinOp::Lt => return Ok(x < y),
                    BinOp::Le => return Ok(x <= y),
                    BinOp::Gt => return Ok(x > y),
                    BinOp::Ge => return Ok(x >= y),
                    BinOp::Eq => return Ok(x == y),
                    BinOp::Ne => return Ok(x != y),
                    _ => {}
                }
            }
        }
        self.cond_slow(e)
    }

    #[inline(never)]
    pub(super) fn cond_slow(&mut self, e: &'p Expr) -> R<bool> {
        // `x == y` and `x != y` on variables and constants (`status == "404"`,
        // `line != nil`): compared where they are, without copying either out; the same
        // comparison and work charge as `binop`.
        if let Expr::Bin(op @ (BinOp::Eq | BinOp::Ne), _, a, b) = e {
            if let (Some(x), Some(y)) = (self.direct(a), self.direct(b)) {
                let mut n = EqCount::default();
                let same = equals_counted(x, y, &mut n);
                self.host.work(n.units())?;
                return Ok(same == (*op == BinOp::Eq));
            }
        }
        Ok(self.eval(e)?.truthy())
    }

    /// The number an expression gives when that is cheap to find without building a
    /// value: a constant, a variable holding a number, or arithmetic on two of those.
    /// Returning the bare f64 (in a register) instead of a `Value` (in memory) avoids
    /// store-forwarding stalls on the hottest paths. None means: use `eval`.
    #[inline(always)]
    pub(super) fn num_fast(&self, e: &Expr) -> Option<f64> {
        match e {
            Expr::BinK(op, _, a, k) => arith(*op, self.num_leaf(a)?, *k),
            _ => self.num_leaf(e),
        }
    }

    #[inline(always)]
    pub(super) fn num_leaf(&self, e: &Expr) -> Option<f64> {
        match e {
            Expr::Const(Value::Num(n)) => Some(*n),
            Expr::Local(i, _) => match &self.stack[self.base + *i as usize] {
                Value::Num(n) => Some(*n),
                _ => None,
            },
            Expr::Global(i, _) => match &self.globals[*i as usize] {
                Value::Num(n) => Some(*n),
                _ => None,
            },
            Expr::BinS(op, _, a, b) => arith(*op, self.opnd_num(*a)?, self.opnd_num(*b)?),
            _ => None,
        }
    }

    /// `eval` with the simplest nodes done in place, without the recursive call.
    #[inline(always)]
    pub(super) fn eval_fast(&mut self, e: &'p Expr) -> R<Value> {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Global(i, sp) => {
                let v = &self.globals[*i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Global(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::Local(i, sp) => {
                let v = &self.stack[self.base + *i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Local(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::BinS(op, sp, a, b) => {
                if let (Some(x), Some(y)) = (self.opnd_num(*a), self.opnd_num(*b)) {
                    return self.num_op(*op, x, y).map_err(|f| spotted(f, *sp));
                }
                self.eval(e)
            }
            _ => self.eval(e),
        }
    }

    pub fn eval(&mut self, e: &'p Expr) -> R<Value> {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Local(i, sp) => {
                let v = &self.stack[self.base + *i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Local(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::Global(i, sp) => {
                let v = &self.globals[*i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Global(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::BinS(op, sp, a, b) => {
                if let (Some(x), Some(y)) = (self.opnd_num(*a), self.opnd_num(*b)) {
                    return self.num_op(*op, x, y).map_err(|f| spotted(f, *sp));
                }
                let x = self.opnd_val(*a)?;
                let y = self.opnd_val(*b)?;
                self.binop(*op, x, y).map_err(|f| spotted(f, *sp))
            }
            Expr::BinK(op, sp, a, k) => {
                let x = self.eval_fast(a)?;
                if let Value::Num(p) = x {
                    return self.num_op(*op, p, *k).map_err(|f| spotted(f, *sp));
                }
                self.binop(*op, x, Value::Num(*k)).map_err(|f| spotted(f, *sp))
            }
            Expr::Bin(op, sp, a, b) => {
                let x = match self.num_fast(a) {
                    Some(n) => Value::Num(n),
                    None => self.eval_fast(a)?,
                };
                let y = match self.num_fast(b) {
                    Some(n) => Value::Num(n),
                    None => self.eval_fast(b)?,
                };
                if let (Value::Num(p), Value::Num(q)) = (&x, &y) {
                    return self.num_op(*op, *p, *q).map_err(|f| spotted(f, *sp));
                }
                self.binop(*op, x, y).map_err(|f| spotted(f, *sp))
            }
            Expr::Call(f, args) => self.call(*f as usize, args),
            Expr::Builtin(b, args, sp) => self.call_builtin(b, args).map_err(|f| spotted(f, *sp)),
            Expr::MapGet(b, args, sp) => self.map_get(b, args).map_err(|f| spotted(f, *sp)),
            Expr::And(a, b) => {
                let x = self.eval(a)?;
                if !x.truthy() {
                    return Ok(x);
                }
                self.eval(b)
            }
            Expr::Or(a, b) => {
                let x = self.eval(a)?;
                if x.truthy() {
                    return Ok(x);
                }
                self.eval(b)
            }
            Expr::Not(a) => Ok(Value::Bool(!self.eval(a)?.truthy())),
            _ => self.eval_cold(e),
        }
    }

    /// Expressions off the arithmetic fast path, kept out of `eval` so that it stays small.
    #[inline(never)]
    pub(super) fn eval_cold(&mut self, e: &'p Expr) -> R<Value> {
        match e {
            Expr::BuiltinPlace(sp, b, place, args) => {
                self.call_builtin_place(b, place, args).map_err(|f| spotted(f, *sp))
            }
            Expr::Neg(a, sp) => match self.eval(a)? {
                Value::Num(n) => Ok(Value::Num(-n)),
                other => Err(spotted(self.err(ErrKind::Type, format!("cannot negate a {}", other.type_name())), *sp)),
            },
            Expr::Index(a, i, sp) => {
                // `m[5]` on a variable: read in place, without copying the list out.
                if let Some(k) = self.num_fast(i) {
                    if let Some(x) = self.direct(a) {
                        return self.index_value(x, &Value::Num(k)).map_err(|f| spotted(f, *sp));
                    }
                }
                let x = self.eval(a)?;
                let k = self.eval(i)?;
                if let (Value::Map(_), Value::Str(s)) = (&x, &k) {
                    self.host.work(key_work(s.len())).map_err(|f| spotted(f, *sp))?;
                }
                self.index_value(&x, &k).map_err(|f| spotted(f, *sp))
            }
            Expr::Field(a, name, sp) => {
                let x = self.eval(a)?;
                match &x {
                    Value::Map(m) => match m.get(name) {
                        Some(v) => Ok(v.clone()),
                        None => Err(spotted(self.missing_field(name, m), *sp)),
                    },
                    other => Err(spotted(
                        self.err(
                            ErrKind::Type,
                            format!("cannot read field `{}` of a {}", String::from_utf8_lossy(name), other.type_name()),
                        ),
                        *sp,
                    )),
                }
            }
            Expr::List(items) => {
                let mut v = Vec::with_capacity(items.len());
                for it in items.iter() {
                    v.push(self.eval(it)?);
                }
                let l = self.host.make_list(v)?;
                self.host.check_memory()?;
                Ok(l)
            }
            Expr::Map(items) => {
                let mut m = Map::with_capacity(items.len());
                for (k, it) in items.iter() {
                    let v = self.eval(it)?;
                    m.insert(k.clone(), v);
                }
                let v = self.host.make_map(m)?;
                self.host.check_memory()?;
                Ok(v)
            }
            Expr::Interp(parts) => {
                let mut out = Vec::new();
                for p in parts {
                    match p {
                        IPart::Lit(b) => out.extend_from_slice(b),
                        IPart::Expr(e) => {
                            let v = self.eval(e)?;
                            self.host.write_text(&v, &mut out, self.host.lim.n(L::String))?;
                        }
                    }
                    self.host.check_str_len(out.len())?;
                    self.host.check_memory_after(out.len())?;
                }
                self.host.work(WORK_CONCAT_BASE + crate::meter::scaled(out.len() as u64, WORK_INTERP_BYTE_X256))?;
                Ok(Value::str(out))
            }
            Expr::Cond(a, c, b) => {
                if self.cond(c)? {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            Expr::WithLambdas(call) => {
                let mark = self.lambdas.len();
                let r = self.eval(call);
                self.lambdas.truncate(mark);
                r
            }
            Expr::Lambda(fi, caps) => {
                let mut vals = Vec::with_capacity(caps.len());
                for c in caps.iter() {
                    vals.push(self.eval_fast(c)?);
                }
                let id = self.lambdas.len() as u32;
                self.lambdas.push((*fi, vals.into_boxed_slice()));
                Ok(Value::Handle(crate::value::Handle { kind: crate::value::HandleKind::Lambda, id }))
            }
            _ => unreachable!("hot expressions are evaluated by eval"),
        }
    }

    #[inline(never)]
    pub(super) fn call(&mut self, fi: usize, args: &'p [Expr]) -> R<Value> {
        let prog = self.prog;
        let f = &prog.funcs[fi];
        let new_base = self.stack.len();
        let mut arg_heap = 0usize;
        for a in args {
            if let Some(x) = self.num_fast(a) {
                self.stack.push(Value::Num(x));
                continue;
            }
            let v = self.eval_fast(a);
            self.push_arg(f, new_base, &mut arg_heap, v)?;
        }
        self.enter(fi, f, args.len(), new_base, arg_heap)
    }

    /// Run user function `fi` whose arguments are on the stack from `new_base`.
    #[inline(always)]
    pub(super) fn enter(
        &mut self,
        fi: usize,
        f: &'p Function,
        nargs: usize,
        new_base: usize,
        arg_heap: usize,
    ) -> R<Value> {
        let saved = self.frame_open(fi, f, nargs, new_base, arg_heap)?;
        let r = self.run_body(fi);
        self.frame_close(new_base, saved);
        match r? {
            Flow::Return => Ok(self.take_ret()),
            _ => Ok(Value::Nil),
        }
    }

    /// Evaluate a builtin's arguments into `vals`. Variables and constants are cloned
    /// straight into place (no temporary `Value` moved through memory). A builtin's
    /// arguments are shared, never copied: they count toward neither `call_args` nor a
    /// frame a second time (SPEC 8, round 3: `len(m)` of a map that fits in a frame always
    /// works); `call_args` bounds the arguments of calls to user functions.
    #[inline(always)]
    pub(super) fn eval_args_into(&mut self, args: &'p [Expr], vals: &mut SmallVec<[Value; 4]>) -> R<()> {
        for a in args {
            let direct = match a {
                Expr::Const(v) => Some(v),
                Expr::Local(i, _) => Some(&self.stack[self.base + *i as usize]),
                Expr::Global(i, _) => Some(&self.globals[*i as usize]),
                _ => None,
            };
            match direct {
                Some(Value::Unset) | None => {
                    let v = self.eval_fast(a)?;
                    vals.push(v);
                }
                Some(v) => vals.push(v.clone()),
            }
        }
        Ok(())
    }

    /// Call a builtin: its arguments' work by its cost rule is charged before it runs
    /// (so a refused call does nothing), its result's after.
    #[inline(never)]
    pub(super) fn call_builtin(&mut self, b: &'static Builtin, args: &'p [Expr]) -> R<Value> {
        self.check_cap(b)?;
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        self.eval_args_into(args, &mut vals)?;
        self.builtin_vals(b, &mut vals)
    }

    /// An argument that is a variable or a constant, read in place (None: unset).
    #[inline(always)]
    pub(super) fn direct<'a>(&'a self, e: &'a Expr) -> Option<&'a Value> {
        let v = match e {
            Expr::Const(v) => v,
            Expr::Local(i, _) => &self.stack[self.base + *i as usize],
            Expr::Global(i, _) => &self.globals[*i as usize],
            _ => return None,
        };
        (!matches!(v, Value::Unset)).then_some(v)
    }

    /// `get(m, k[, d])` on a map and a string key, its arguments variables or constants
    /// (`Expr::MapGet`): the lookup is made on the variable's map in place. The same
    /// charges and checks as the call (`call_builtin`): the builtin's constant work, the
    /// heap check after; anything else (an unset variable, a list, a key of another type)
    /// goes through the call, which says what is wrong.
    #[inline(never)]
    pub(super) fn map_get(&mut self, b: &'static Builtin, args: &'p [Expr]) -> R<Value> {
        let fast = match (self.direct(&args[0]), self.direct(&args[1])) {
            (Some(Value::Map(_)), Some(Value::Str(_))) => {
                let d = match args.get(2) {
                    None => Some(0),
                    Some(e) => self.direct(e).map(Value::acct),
                };
                d.is_some()
            }
            _ => false,
        };
        if !fast {
            return self.call_builtin(b, args);
        }
        let klen = match self.direct(&args[1]) {
            Some(Value::Str(k)) => k.len(),
            _ => 0,
        };
        self.host.work(b.cost.before(&[]).saturating_add(key_work(klen)))?;
        let (Some(Value::Map(m)), Some(Value::Str(k))) = (self.direct(&args[0]), self.direct(&args[1])) else {
            unreachable!("checked above")
        };
        let r = match m.get(k) {
            Some(v) => v.clone(),
            None => match args.get(2).and_then(|e| self.direct(e)) {
                Some(d) => d.clone(),
                None => Value::Nil,
            },
        };
        self.host.check_memory()?;
        Ok(r)
    }

    /// `x[k] = get(x, k, d) + n` (`StmtKind::CountIndex`) when `x` holds a map of its
    /// own (not shared) in which `k` holds a number: the sum stored where the number is,
    /// with one lookup. The charges and checks are those of the general path (`map_get`'s,
    /// then `set_index`'s, which for a number replaced by a number in an unshared map are
    /// none). False, with nothing done or charged, when any of that does not hold: the
    /// caller then runs the general path, which also reports what is wrong.
    #[inline(never)]
    pub(super) fn count_in_place(&mut self, slot: Slot, e: &'p Expr) -> R<bool> {
        let Expr::BinK(op, _, g, n) = e else { return Ok(false) };
        let Expr::MapGet(b, args, sp) = &**g else { return Ok(false) };
        let (Some(Value::Map(m)), Some(Value::Str(k)), Some(_)) =
            (self.direct(&args[0]), self.direct(&args[1]), self.direct(&args[2]))
        else {
            return Ok(false);
        };
        if m.strong_count() != 1 {
            return Ok(false);
        }
        let Some((i, x)) = m.num_of(k) else { return Ok(false) };
        let Some(r) = arith(*op, x, *n) else { return Ok(false) };
        self.host.work(b.cost.before(&[])).map_err(|f| spotted(f, *sp))?;
        self.host.check_memory().map_err(|f| spotted(f, *sp))?;
        let Value::Map(m) = self.slot_mut(slot) else { unreachable!("checked above") };
        let done = m.unique().is_some_and(|m| m.set_num_at(i, r));
        debug_assert!(done, "an unshared map with a number at {i}");
        Ok(true)
    }

    pub(super) fn call_builtin_place(&mut self, b: &'static Builtin, place: &'p Place, args: &'p [Expr]) -> R<Value> {
        self.check_cap(b)?;
        let keys = self.eval_keys(&place.path)?;
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        self.eval_args_into(args, &mut vals)?;
        self.place_builtin_vals(b, place.root, &keys, &mut vals)
    }
}
