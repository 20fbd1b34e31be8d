//! Expressions compiled: operands where they are or into a temporary, operators by
//! their operands' modes, calls and their arguments, `and`/`or`/`if else`, and the
//! checks that let an operand stay where it is (`pure`). Child of `compile`.

use super::*;

impl<'p> Compiler<'p> {
    // ------------------------------------------------------------------
    // Expressions
    // ------------------------------------------------------------------

    /// The operand holding `e`'s value: a variable or constant where it is, or a fresh
    /// temporary it is computed into.
    pub(super) fn operand(&mut self, e: &'p Expr) -> O {
        match e {
            Expr::Const(v) => O { o: self.konst(v.clone()), sp: 0 },
            Expr::Local(i, sp) => O { o: Opd::new(T_LOCAL, *i as usize), sp: *sp },
            Expr::Global(i, sp) => O { o: Opd::new(T_GLOBAL, *i as usize), sp: *sp },
            _ => {
                // The temporaries `e` uses are consumed by the time its value is in
                // `t`: the next operand reuses them.
                let t = self.temp();
                let mark = self.next;
                self.into(e, t);
                self.next = mark;
                O { o: t, sp: 0 }
            }
        }
    }

    /// `operand(e)`, computed into `dst` itself when that is a temporary and `e` is not
    /// a variable or constant (the instruction that reads it then writes `dst`: one
    /// register and one move fewer).
    pub(super) fn operand_in(&mut self, e: &'p Expr, dst: Opd) -> O {
        match e {
            Expr::Const(_) | Expr::Local(..) | Expr::Global(..) => self.operand(e),
            _ if dst.tag() == T_TEMP && dst != DISCARD => {
                self.into(e, dst);
                O { o: dst, sp: 0 }
            }
            _ => self.operand(e),
        }
    }

    /// A binary operator's operand: a variable or number where it is, else `operand`.
    pub(super) fn arg(&mut self, a: &'p Arg) -> O {
        match a {
            Arg::Local(i, sp) => O { o: Opd::new(T_LOCAL, *i as usize), sp: *sp },
            Arg::Global(i, sp) => O { o: Opd::new(T_GLOBAL, *i as usize), sp: *sp },
            Arg::Num(n) => O { o: self.konst(Value::Num(*n)), sp: 0 },
            Arg::Expr(e) => self.operand(e),
        }
    }

    /// The left operand of `a op b`: a variable copied into a temporary first when `b`
    /// could change it (as `operand_before`), an expression computed into `dst` when
    /// given (as `operand_in`), else `arg`.
    pub(super) fn left_arg(&mut self, a: &'p Arg, b: &'p Arg, dst: Option<Opd>) -> O {
        match (a, dst) {
            (Arg::Local(..) | Arg::Global(..), _) if !pure_arg(b) => {
                let s = self.arg(a);
                let t = self.temp();
                self.emit(Op::Move { dst: t, src: s.o }, 0, [s.sp, 0]);
                O { o: t, sp: 0 }
            }
            (Arg::Expr(e), Some(d)) => self.operand_in(e, d),
            _ => self.arg(a),
        }
    }

    /// `operand(e)` for a value read after `later` are evaluated: a variable is copied
    /// into a temporary first when one of them could change it (a call, or a builtin
    /// that changes a place), so that the value is the one it held when `e` was reached
    /// (operands are evaluated left to right).
    pub(super) fn operand_before<'e>(&mut self, e: &'p Expr, later: impl IntoIterator<Item = &'e Expr>) -> O {
        if matches!(e, Expr::Local(..) | Expr::Global(..)) && !later.into_iter().all(pure) {
            let t = self.temp();
            self.into(e, t);
            return O { o: t, sp: 0 };
        }
        self.operand(e)
    }

    /// Compile `e` so that its value lands in `dst`.
    pub(super) fn into(&mut self, e: &'p Expr, dst: Opd) {
        match e {
            Expr::Const(_) | Expr::Local(..) | Expr::Global(..) => {
                let s = self.operand(e);
                self.emit(Op::Move { dst, src: s.o }, 0, [s.sp, 0]);
            }
            Expr::Bin(op, sp, a, Arg::Num(k)) => {
                let a = match a {
                    Arg::Expr(e) => self.operand_in(e, dst),
                    a => self.arg(a),
                };
                self.emit(bin_n_op(*op, dst, a.o, *k), *sp, [a.sp, 0]);
            }
            Expr::Bin(op, sp, a, b) => {
                let a = self.left_arg(a, b, Some(dst));
                let b = self.arg(b);
                self.emit(bin_op(*op, dst, a.o, b.o), *sp, [a.sp, b.sp]);
            }
            Expr::Neg(a, sp) => {
                let a = self.operand(a);
                self.emit(Op::Neg { dst, a: a.o }, *sp, [a.sp, 0]);
            }
            Expr::Not(a) => {
                let a = self.operand(a);
                self.emit(Op::Not { dst, a: a.o }, 0, [a.sp, 0]);
            }
            Expr::Index(..) | Expr::Field(..) if read_chain(e).is_some() => {
                let Some((root, steps)) = read_chain(e) else { unreachable!() };
                let r = self.operand(root);
                let at = self.code.rsteps.len() as u32;
                for s in &steps {
                    let ic = self.ics(1);
                    let step = match s {
                        Expr::Field(_, name, sp) => RStep { key: RKey::Field(name), ic, sp: *sp, ksp: 0 },
                        Expr::Index(_, k, sp) => {
                            let k = self.operand(k);
                            RStep { key: RKey::Index(k.o), ic, sp: *sp, ksp: k.sp }
                        }
                        _ => unreachable!("a read chain's step is an index or a field"),
                    };
                    self.code.rsteps.push(step);
                }
                self.code.rpaths.push(ReadPath { root: r.o, rsp: r.sp, at, n: steps.len() as u32 });
                let path = (self.code.rpaths.len() - 1) as u32;
                let last = self.code.rsteps[self.code.rsteps.len() - 1].sp;
                self.emit(Op::GetPath { dst, path }, last, [r.sp, 0]);
            }
            Expr::Index(a, k, sp) => {
                let a = self.operand_before(a, std::slice::from_ref(&**k));
                let i = num_const(k).and_then(whole_i32);
                let k = self.operand(k);
                match i {
                    Some(i) => {
                        self.emit(Op::IndexN { dst, a: a.o, k: k.o, i }, *sp, [a.sp, k.sp]);
                    }
                    None => {
                        let ic = self.ics(1);
                        self.emit(Op::Index { dst, a: a.o, k: k.o, ic }, *sp, [a.sp, k.sp]);
                    }
                }
            }
            Expr::Field(a, name, sp) => {
                let a = self.operand(a);
                let ic = self.ics(1);
                self.emit(Op::Field { dst, a: a.o, ic, name }, *sp, [a.sp, 0]);
            }
            // A literal's items are operands, as a builtin call's arguments: a constant or
            // a variable is read where it is (a `Move` into a register for each was an
            // instruction more an item).
            Expr::List(items) => {
                let at = self.args(items);
                self.emit(Op::MkList { dst, at, n: items.len() as u32 }, 0, [0, 0]);
            }
            Expr::Map(items) => {
                let at = self.operands_at(items.iter().map(|(_, v)| v));
                let keys: Vec<crate::value::Bytes> = items.iter().map(|(k, _)| k.clone()).collect();
                let shape = self.shapes.shape(&keys);
                self.code.maps.push((items, shape));
                let map = (self.code.maps.len() - 1) as u32;
                self.emit(Op::MkMap { dst, map, at }, 0, [0, 0]);
            }
            Expr::Call(fi, args) => {
                // The arguments are computed into the registers where the callee's frame
                // will start (its first slots), left to right, as Lua's calls place them.
                let start = self.next;
                let regs: Vec<Opd> = args.iter().map(|_| self.temp()).collect();
                for (a, r) in args.iter().zip(regs) {
                    self.into(a, r);
                }
                self.emit(Op::Call { fi: *fi, dst, start, n: args.len() as u32 }, 0, [0, 0]);
            }
            // (`get(m, k, d)` is its own instruction: read in place, as `Index` reads.)
            Expr::Builtin(b, args, sp) => {
                if b.cap.is_some() {
                    self.emit(Op::CapCheck(b), *sp, [0, 0]);
                }
                let at = self.args(args);
                let n = args.len() as u32;
                if b.name == "get" && (2..=3).contains(&n) && b.cap.is_none() {
                    self.emit(Op::Get { b, dst, at, n }, *sp, [0, 0]);
                } else {
                    self.emit(Op::Builtin { b, dst, at, n }, *sp, [0, 0]);
                }
            }
            Expr::BuiltinPlace(sp, b, place, args) => {
                if b.cap.is_some() {
                    self.emit(Op::CapCheck(b), *sp, [0, 0]);
                }
                let path = self.path(place, args);
                let path = self.code.paths[path as usize];
                let at = self.args(args);
                self.code.pcalls.push(PlaceCall { b, path, at, n: args.len() as u32 });
                let call = (self.code.pcalls.len() - 1) as u32;
                self.emit(Op::BuiltinPlace { dst, call }, *sp, [0, 0]);
            }
            Expr::And(a, b) | Expr::Or(a, b) => {
                // Through a temporary: a variable is written once, with the result.
                let t = if dst.tag() == T_TEMP && dst != DISCARD { dst } else { self.temp() };
                self.into(a, t);
                let when = matches!(e, Expr::Or(..));
                let j = self.emit(Op::JumpIf { c: t, when, keep: true, to: 0 }, 0, [0, 0]);
                self.into(b, t);
                let h = self.here();
                self.patch(j, h);
                if t != dst {
                    self.emit(Op::Move { dst, src: t }, 0, [0, 0]);
                }
            }
            Expr::Cond(a, c, b) => {
                let t = if dst.tag() == T_TEMP && dst != DISCARD { dst } else { self.temp() };
                let skip = self.cond_jump(c);
                self.into(a, t);
                let j = self.emit(Op::Jump(0), 0, [0, 0]);
                let h = self.here();
                self.patch_all(skip, h);
                self.into(b, t);
                let h = self.here();
                self.patch(j, h);
                if t != dst {
                    self.emit(Op::Move { dst, src: t }, 0, [0, 0]);
                }
            }
            // A call with anonymous functions among its arguments: they live in the
            // interpreter's table while it runs (`LamMark`, `LamRelease`).
            Expr::WithLambdas(call) => {
                let mark = self.temp().idx() as u32;
                self.emit(Op::LamMark { mark }, 0, [0, 0]);
                self.into(call, dst);
                self.emit(Op::LamRelease { mark }, 0, [0, 0]);
            }
            Expr::Lambda(fi, caps) => {
                let start = self.next;
                let regs: Vec<Opd> = caps.iter().map(|_| self.temp()).collect();
                for (c, r) in caps.iter().zip(regs) {
                    self.into(c, r);
                }
                self.emit(Op::MkLambda { dst, fi: *fi, start, n: caps.len() as u32 }, 0, [0, 0]);
            }
            // Parts that are all texts, variables and constants: one instruction (see
            // `Op::InterpBegin`).
            Expr::Interp(parts)
                if !parts.is_empty()
                    && parts.iter().all(|p| match p {
                        IPart::Lit(_) => true,
                        IPart::Expr(e) => is_read(e),
                    }) =>
            {
                let at = self.code.iparts.len() as u32;
                for p in parts {
                    let part = match p {
                        IPart::Lit(b) => IOp::Lit(b),
                        IPart::Expr(e) => {
                            let a = self.operand(e);
                            IOp::Val(a.o, a.sp)
                        }
                    };
                    self.code.iparts.push(part);
                }
                let n = parts.len() as u32;
                self.emit(Op::InterpBegin { dst, at, n, cap: interp_room(parts) }, 0, [0, 0]);
            }
            // Otherwise each part is evaluated and appended in turn (a later part runs
            // after an earlier one's text is checked against the limits, as in the tree
            // evaluator).
            Expr::Interp(parts) => {
                self.emit(Op::InterpBegin { dst: DISCARD, at: 0, n: 0, cap: interp_room(parts) }, 0, [0, 0]);
                for p in parts {
                    match p {
                        IPart::Lit(b) => {
                            let lit = self.code.lits.len() as u32;
                            self.code.lits.push(b);
                            self.emit(Op::InterpLit { lit }, 0, [0, 0]);
                        }
                        IPart::Expr(e) => {
                            let mark = self.next;
                            let a = self.operand(e);
                            self.emit(Op::InterpAdd { a: a.o }, 0, [a.sp, 0]);
                            self.next = mark;
                        }
                    }
                }
                self.emit(Op::InterpEnd { dst }, 0, [0, 0]);
            }
        }
    }

    /// A call's arguments: each an operand (variables and constants where they are,
    /// anything else computed into a temporary), in order.
    pub(super) fn args(&mut self, args: &'p [Expr]) -> u32 {
        self.operands_at(args.iter())
    }

    /// The operands of `es`, left to right (each as `operand_before` the ones after it),
    /// into `code.args`: where they start.
    pub(super) fn operands_at<I>(&mut self, es: I) -> u32
    where
        I: Iterator<Item = &'p Expr> + Clone,
    {
        let mut os: Vec<O> = Vec::new();
        let mut rest = es;
        while let Some(e) = rest.next() {
            let o = self.operand_before(e, rest.clone());
            os.push(o);
        }
        let at = self.code.args.len() as u32;
        self.code.args.extend(os.iter().map(|o| (o.o, o.sp)));
        at
    }
}

/// A variable or a constant: read where it is, with nothing computed.
fn is_read(e: &Expr) -> bool {
    matches!(e, Expr::Const(_) | Expr::Local(..) | Expr::Global(..))
}

/// The room an interpolation's text starts with: its literal texts and 16 bytes for
/// each other part (a number's text, a short string), at most 4 KiB; a longer text
/// grows as a vector grows.
fn interp_room(parts: &[IPart]) -> u32 {
    let n: usize = parts
        .iter()
        .map(|p| match p {
            IPart::Lit(b) => b.len(),
            _ => 16,
        })
        .sum();
    n.min(4096) as u32
}

/// `e` as a chain of two or more reads (`bodies[i].x`, `t.pos.y`, `grid[y][x]`) whose
/// index keys are constants or variables: the expression it starts from and its steps,
/// innermost first. Nothing runs between the steps (a key is read where it is), so
/// they can be walked in place, in one instruction; an index computed by an expression
/// ends the chain (its own `Index` is the root).
pub(super) fn read_chain(e: &Expr) -> Option<(&Expr, Vec<&Expr>)> {
    let mut steps = Vec::new();
    let mut cur = e;
    loop {
        match cur {
            Expr::Field(a, ..) => {
                steps.push(cur);
                cur = a;
            }
            Expr::Index(a, k, _) if matches!(**k, Expr::Const(_) | Expr::Local(..) | Expr::Global(..)) => {
                steps.push(cur);
                cur = a;
            }
            _ => break,
        }
    }
    if steps.len() < 2 {
        return None;
    }
    steps.reverse();
    Some((cur, steps))
}

/// Whether evaluating `e` can change no variable (no call of any kind in it).
pub(super) fn pure(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::Local(..) | Expr::Global(..) => true,
        Expr::List(items) => items.iter().all(pure),
        Expr::Map(items) => items.iter().all(|(_, e)| pure(e)),
        Expr::Interp(parts) => parts.iter().all(|p| match p {
            IPart::Lit(_) => true,
            IPart::Expr(e) => pure(e),
        }),
        Expr::Neg(a, _) | Expr::Not(a) | Expr::Field(a, ..) => pure(a),
        Expr::Bin(_, _, a, b) => pure_arg(a) && pure_arg(b),
        Expr::And(a, b) | Expr::Or(a, b) | Expr::Index(a, b, _) => pure(a) && pure(b),
        Expr::Cond(a, c, b) => pure(a) && pure(c) && pure(b),
        Expr::Call(..) | Expr::Builtin(..) | Expr::BuiltinPlace(..) | Expr::Lambda(..) | Expr::WithLambdas(_) => false,
    }
}

/// Whether evaluating a binary operator's operand can change no variable.
fn pure_arg(a: &Arg) -> bool {
    match a {
        Arg::Expr(e) => pure(e),
        _ => true,
    }
}

/// The number an expression is, when it is a number constant.
pub(super) fn num_const(e: &Expr) -> Option<f64> {
    match e {
        Expr::Const(Value::Num(n)) => Some(*n),
        _ => None,
    }
}
