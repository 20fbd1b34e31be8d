//! Places: `x[k] = v`, `PLACE = v` and `PLACE op= v` along lists and maps, copying
//! shared containers and charging what changes; the errors of missing keys and fields.
//! Both cores write places here. Child of `interp`.

use super::*;

impl<'p> Interp<'p> {
    pub(super) fn map_key<'k>(&self, k: &'k Value) -> R<&'k [u8]> {
        match k {
            Value::Str(s) => Ok(s),
            other => Err(self.err(ErrKind::Type, format!("map keys are strings, got {}", other.type_name()))),
        }
    }

    pub(super) fn missing_key(&self, k: &[u8]) -> Fail {
        self.err(ErrKind::Key, format!("key {} not found", crate::diag::quoted(k)))
    }

    /// A field `m.k` that is not there: the key error, with a help line naming the
    /// nearest key of a small map (`opts.ignore_case` for `--ignore-case`: the same
    /// name but for case and `-`/`_`, else an edit distance of at most a third of the
    /// name). Maps of more than 64 keys and names over 64 bytes get no search; the
    /// comparison is charged as work (a unit per byte pair).
    #[cold]
    pub(super) fn missing_field(&mut self, k: &[u8], m: &crate::value::Map) -> Fail {
        let mut e = self.missing_key(k);
        if m.len() > 64 || k.len() > 64 {
            return e;
        }
        let norm = |x: &[u8]| -> Vec<u8> {
            x.iter().map(|c| if *c == b'-' { b'_' } else { c.to_ascii_lowercase() }).collect()
        };
        let q = norm(k);
        let mut cells = 0u64;
        let mut best: Option<(usize, &[u8])> = None;
        for (key, _) in m.iter() {
            if key.len() > 64 {
                continue;
            }
            let c = norm(key);
            cells += (q.len() * c.len()) as u64 + c.len() as u64;
            let d = if c == q { 0 } else { crate::builtins::date::distance(&q, &c) };
            if d <= if q.len() >= 4 { (q.len() / 3).max(2) } else { 1 } && best.is_none_or(|(b, _)| d < b) {
                best = Some((d, key));
            }
        }
        if let Some((_, key)) = best {
            if let Unwind::Error(r) = &mut *e {
                r.help = Some(format!("did you mean \"{}\"?", String::from_utf8_lossy(key)));
            }
        }
        if let Err(limit) = self.host.work(cells) {
            return limit;
        }
        e
    }

    /// Walk `keys` into `v` (copying shared containers on the way) and apply `leaf` to
    /// the value found. Accounting inside containers is kept by `with_item`/`with_value`.
    pub(super) fn nav_mut(
        &mut self,
        v: &mut Value,
        keys: &[Value],
        leaf: &mut dyn FnMut(&mut Self, &mut Value) -> R<Value>,
    ) -> R<Value> {
        let Some((k, rest)) = keys.split_first() else {
            return leaf(self, v);
        };
        match v {
            Value::List(rc) => {
                let i = self.host.index(k, rc.len())?;
                self.host.cow(rc)?;
                Rc::make_mut(rc).with_item(i, |item| self.nav_mut(item, rest, leaf))
            }
            Value::Map(rc) => {
                let key = self.map_key(k)?;
                if !rc.contains(key) {
                    return Err(self.missing_key(key));
                }
                self.host.cow(rc)?;
                rc.with_value(key, |item| self.nav_mut(item, rest, leaf)).expect("key present")
            }
            other => Err(self.err(ErrKind::Type, format!("cannot index a {}", other.type_name()))),
        }
    }

    /// Change the value at `place` through `leaf`, charging the change of storage.
    pub(super) fn modify_place(
        &mut self,
        root: Slot,
        keys: &[Value],
        leaf: &mut dyn FnMut(&mut Self, &mut Value) -> R<Value>,
    ) -> R<Value> {
        self.modify_var(root, |this, v| this.nav_mut(v, keys, leaf))
    }

    /// A variable's value changed in place by `leaf`: an unset variable is its `name`
    /// error; the value's storage before and after is charged. `modify_place` walks its
    /// keys inside; a place builtin on the variable itself (`push(xs, v)`) calls it
    /// directly, without the walk and its dynamic call.
    #[inline]
    pub(super) fn modify_var(&mut self, root: Slot, leaf: impl FnOnce(&mut Self, &mut Value) -> R<Value>) -> R<Value> {
        if matches!(self.slot_mut(root), Value::Unset) {
            return Err(self.unset(root));
        }
        let mut v = std::mem::take(self.slot_mut(root));
        let before = v.heap() as isize;
        let r = leaf(self, &mut v);
        let after = v.heap() as isize;
        *self.slot_mut(root) = v;
        self.charge(matches!(root, Slot::Global(_)), after - before)?;
        r
    }

    /// `x[k] = v` on a variable holding a list or map.
    pub(super) fn set_index(&mut self, slot: Slot, key: Value, v: Value) -> R<()> {
        let mut cur = std::mem::take(self.slot_mut(slot));
        let before = cur.heap() as isize;
        let r = match &mut cur {
            Value::Map(rc) => match key {
                Value::Str(k) => {
                    if let Err(e) = self.host.work(key_work(k.len())) {
                        *self.slot_mut(slot) = cur;
                        return Err(e);
                    }
                    if rc.len() >= self.host.lim.n(L::Map) && !rc.contains(&k) {
                        Err(self.limit(
                            LimitKind::Map,
                            format!(
                                "map of more than {max_map_entries} entries",
                                max_map_entries = self.host.lim.n(L::Map)
                            ),
                        ))
                    } else {
                        self.host.cow(rc).map(|_| {
                            rc.insert(k, v);
                        })
                    }
                }
                other => Err(self.err(ErrKind::Type, format!("map keys are strings, got {}", other.type_name()))),
            },
            Value::List(rc) => match self.host.index(&key, rc.len()) {
                Ok(i) => self.host.cow(rc).map(|_| {
                    Rc::make_mut(rc).set(i, v);
                }),
                Err(e) => Err(e),
            },
            Value::Unset => Err(self.unset(slot)),
            other => Err(self.err(ErrKind::Type, format!("cannot assign into a {}", other.type_name()))),
        };
        let after = cur.heap() as isize;
        *self.slot_mut(slot) = cur;
        r?;
        self.charge(matches!(slot, Slot::Global(_)), after - before)
    }

    /// `PLACE = v` with the place's keys evaluated.
    pub(super) fn assign_keys(&mut self, root: Slot, keys: &[Value], v: Value) -> R<()> {
        let (last, parents) = keys.split_last().expect("a place with a path");
        let mut v = Some(v);
        self.modify_place(root, parents, &mut |this, container| {
            let v = v.take().unwrap_or(Value::Nil);
            match container {
                Value::List(rc) => {
                    let i = this.host.index(last, rc.len())?;
                    this.host.cow(rc)?;
                    Rc::make_mut(rc).set(i, v);
                }
                Value::Map(rc) => {
                    let key = this.map_key(last)?;
                    if !rc.contains(key) {
                        this.host.check_map_len(rc.len() + 1)?;
                    }
                    let key = match last {
                        Value::Str(s) => s.clone(),
                        _ => unreachable!(),
                    };
                    this.host.cow(rc)?;
                    rc.insert(key, v);
                }
                other => {
                    return Err(this.err(ErrKind::Type, format!("cannot assign into a {}", other.type_name())));
                }
            }
            Ok(Value::Nil)
        })?;
        Ok(())
    }

    /// `x op= v` on a variable: numbers and unshared strings change in place.
    pub(super) fn compound_var(&mut self, slot: Slot, op: BinOp, rhs: Value) -> R<()> {
        let cur = self.slot_mut(slot);
        if let (Value::Num(a), Value::Num(b)) = (&mut *cur, &rhs) {
            let r = match op {
                BinOp::Add => *a + *b,
                BinOp::Sub => *a - *b,
                BinOp::Mul => *a * *b,
                _ => f64::NAN,
            };
            if r.is_finite() {
                *a = r;
                return Ok(());
            }
        }
        match cur {
            Value::Unset => Err(self.unset(slot)),
            Value::Str(_) if op == BinOp::Concat => {
                let Value::Str(mut rc) = std::mem::take(self.slot_mut(slot)) else { unreachable!() };
                let before = str_heap(&rc);
                let r = self.append_str(&mut rc, &rhs);
                let after = str_heap(&rc);
                *self.slot_mut(slot) = Value::Str(rc);
                r?;
                self.charge(matches!(slot, Slot::Global(_)), after as isize - before as isize)
            }
            _ => {
                let old = cur.clone();
                let v = self.binop(op, old, rhs)?;
                self.store(slot, v)
            }
        }
    }

    /// `PLACE op= v` with the place's keys evaluated.
    pub(super) fn compound_keys(&mut self, root: Slot, keys: &[Value], op: BinOp, rhs: Value) -> R<()> {
        let mut rhs = Some(rhs);
        self.modify_place(root, keys, &mut |this, cur| {
            let rhs = rhs.take().unwrap_or(Value::Nil);
            if op == BinOp::Concat {
                if let Value::Str(rc) = cur {
                    return this.append_str(rc, &rhs).map(|_| Value::Nil);
                }
            }
            let old = std::mem::take(cur);
            match this.binop(op, old.clone(), rhs) {
                Ok(v) => {
                    *cur = v;
                    Ok(Value::Nil)
                }
                Err(e) => {
                    *cur = old;
                    Err(e)
                }
            }
        })?;
        Ok(())
    }

    /// `s ..= v` on a string: in place when the string is not shared.
    pub(super) fn append_str(&mut self, rc: &mut Bytes, v: &Value) -> R<()> {
        self.host.cow(rc)?;
        match v {
            Value::Str(t) => {
                self.host.check_str_len(rc.len() + t.len())?;
                self.host.work(concat_work(t.len()))?;
                self.host.room(t.len())?;
                let s = Rc::make_mut(rc);
                reserve_str(s, t.len());
                s.extend_from_slice(t);
            }
            Value::Num(n) => {
                let mut tmp = Vec::with_capacity(24);
                fmt_num(*n, &mut tmp);
                self.host.check_str_len(rc.len() + tmp.len())?;
                self.host.work(concat_work(tmp.len()))?;
                let s = Rc::make_mut(rc);
                reserve_str(s, tmp.len());
                s.extend_from_slice(&tmp);
            }
            other => {
                let t = self.host.to_text(other, self.host.lim.n(L::String))?;
                self.host.check_str_len(rc.len() + t.len())?;
                self.host.work(concat_work(t.len()))?;
                self.host.room(t.len())?;
                let s = Rc::make_mut(rc);
                reserve_str(s, t.len());
                s.extend_from_slice(&t);
            }
        }
        Ok(())
    }
}
