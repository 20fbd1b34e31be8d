//! Statements compiled: assignments, loops and their back edges, `if`, `try`, `return`,
//! the step each line is charged, and conditions as jumps. Child of `compile`.

use super::*;

impl<'p> Compiler<'p> {
    pub(super) fn stmt(&mut self, s: &'p Stmt) {
        let floor = self.next;
        self.pos = s.pos;
        match &s.kind {
            StmtKind::SetLocal(i, e) => {
                self.step(s.pos);
                self.into(e, Opd::new(T_LOCAL, *i as usize));
            }
            StmtKind::SetGlobal(i, e) => {
                self.step(s.pos);
                self.into(e, Opd::new(T_GLOBAL, *i as usize));
            }
            StmtKind::SetIndex(slot, k, e) => {
                self.step(s.pos);
                let v = self.operand_before(e, std::slice::from_ref(k));
                let k = self.operand(k);
                let ic = self.ics(1);
                self.emit(Op::SetIdx { var: slot_opd(*slot), k: k.o, v: v.o, ic }, 0, [k.sp, v.sp]);
            }
            StmtKind::CompoundVar(slot, op, e) => {
                self.step(s.pos);
                if let Some(k) = num_const(e) {
                    self.emit(upd_n_op(*op, slot_opd(*slot), k), 0, [0, 0]);
                } else {
                    let v = self.operand(e);
                    self.emit(Op::Upd { op: *op, var: slot_opd(*slot), v: v.o }, 0, [v.sp, 0]);
                }
            }
            StmtKind::Assign(place, e) => {
                self.step(s.pos);
                let v = self.operand_before(e, &place.path);
                let path = self.path(place, &[]);
                self.emit(Op::SetPath { path, v: v.o }, 0, [v.sp, 0]);
            }
            StmtKind::Compound(place, op, e) => {
                self.step(s.pos);
                let v = self.operand_before(e, &place.path);
                let path = self.path(place, &[]);
                self.emit(Op::UpdPath { op: *op, path, v: v.o }, 0, [v.sp, 0]);
            }
            StmtKind::Expr(e) => {
                self.step(s.pos);
                self.into(e, DISCARD);
            }
            StmtKind::If(arms, else_body) => {
                let mut ends = Vec::new();
                for (n, arm) in arms.iter().enumerate() {
                    self.step(arm.pos);
                    let skip = self.cond_jump(&arm.cond);
                    self.next = floor;
                    self.block(&arm.body);
                    if n + 1 < arms.len() || else_body.is_some() {
                        ends.push(self.emit(Op::Jump(0), 0, [0, 0]));
                    }
                    let h = self.here();
                    self.patch_all(skip, h);
                }
                if let Some(b) = else_body {
                    self.block(b);
                }
                let h = self.here();
                for j in ends {
                    self.patch(j, h);
                }
            }
            StmtKind::While(cond, body) => {
                self.step(s.pos);
                // The back edge charges the header's later steps itself.
                self.flush_step();
                let top = self.here();
                let exits = self.cond_jump(cond);
                self.next = floor;
                // (One jump, the test at the top: repeated at the back edge below.)
                let exit = if exits.len() == 1 { exits[0] } else { usize::MAX };
                self.loops.push(Loop { brk: exits, cont: vec![] });
                self.block(body);
                self.pos = s.pos;
                // A test that is one instruction is repeated at the back edge (its line
                // and columns too, for the same diagnostics); anything else is
                // computed again at the top.
                let inverted = match self.code.ops[top].op {
                    Op::TestN { op, a, k, .. } if exit == top => Some(Op::TestNBack { op, a, k, to: top as u32 + 1 }),
                    Op::Test { op, a, b, .. } if exit == top => Some(Op::TestBack { op, a, b, to: top as u32 + 1 }),
                    Op::TestK { op, a, k, .. } if exit == top => Some(Op::TestKBack { op, a, k, to: top as u32 + 1 }),
                    _ => None,
                };
                let back = match inverted {
                    Some(op) => {
                        let (spot, ospot) = (self.code.spot[top], self.code.ospot[top]);
                        self.emit(op, spot, ospot)
                    }
                    None => self.emit(Op::StepJump(top as u32), 0, [0, 0]),
                };
                self.close_loop(back, back + 1);
            }
            StmtKind::ForRange(f) => {
                self.step(s.pos);
                let base = self.next;
                let regs = [self.temp(), self.temp(), self.temp(), self.temp()];
                self.into(&f.start, regs[0]);
                self.into(&f.end, regs[1]);
                match &f.step {
                    Some(e) => self.into(e, regs[2]),
                    None => {
                        let one = self.konst(Value::Num(1.0));
                        self.emit(Op::Move { dst: regs[2], src: one }, 0, [0, 0]);
                    }
                }
                self.pos = s.pos;
                self.emit(Op::ForPrep { base }, 0, [0, 0]);
                let top = self.emit(Op::ForNext { var: slot_opd(f.var), base, exit: 0 }, 0, [0, 0]);
                self.loops.push(Loop { brk: vec![top], cont: vec![] });
                self.block(&f.body);
                self.pos = s.pos;
                let back = self.emit(Op::ForBack { var: slot_opd(f.var), base, to: top as u32 + 1 }, 0, [0, 0]);
                self.close_loop(back, back + 1);
            }
            StmtKind::ForIn(f) => {
                self.step(s.pos);
                let base = self.forin_next;
                self.forin_next += 3;
                let regs = [0, 1, 2].map(|i| Opd::new(T_TEMP, (base + i) as usize));
                // The cost register is a number only while the loop holds its snapshot
                // (set by ForInPrep, cleared by ForInEnd, by a `catch` that the loop's
                // error reached (`Handler::forins`), and unset at a call's entry with the
                // other loop registers): what a `try` left by an error releases. The
                // registers are the loop's alone, so it holds no number here.
                self.code.forins.push(base);
                // A variable or constant is copied to the snapshot register by
                // ForInPrep itself (no move of its own).
                let src = self.operand_in(&f.iter, regs[0]);
                self.pos = s.pos;
                self.emit(Op::ForInPrep { base, src: src.o }, 0, [src.sp, 0]);
                let second = f.second.map(slot_opd).unwrap_or(NONE);
                let top = self.emit(Op::ForInNext { first: slot_opd(f.first), second, base, exit: 0 }, 0, [0, 0]);
                self.loops.push(Loop { brk: vec![top], cont: vec![] });
                self.block(&f.body);
                self.pos = s.pos;
                let first = slot_opd(f.first);
                let back = self.emit(Op::ForInBack { first, second, base, to: top as u32 + 1 }, 0, [0, 0]);
                let end = self.emit(Op::ForInEnd { base }, 0, [0, 0]);
                self.close_loop(back, end);
            }
            StmtKind::Break | StmtKind::Continue => {
                // (Outside a loop both are load errors: there is always a loop here.)
                self.step(s.pos);
                let j = self.emit(Op::Jump(0), 0, [0, 0]);
                if let Some(l) = self.loops.last_mut() {
                    match s.kind {
                        StmtKind::Break => l.brk.push(j),
                        _ => l.cont.push(j),
                    }
                }
            }
            StmtKind::Return(e) => {
                self.step(s.pos);
                match e {
                    Some(e) => {
                        let v = self.operand(e);
                        self.emit(Op::Ret(v.o), 0, [v.sp, 0]);
                    }
                    None => {
                        self.emit(Op::RetNil, 0, [0, 0]);
                    }
                }
            }
            StmtKind::Block(b) => self.block(b),
            StmtKind::Try { body, var, handler } => {
                self.step(s.pos);
                let save = self.temp().idx() as u32;
                self.temp();
                let floor = self.next;
                self.emit(Op::TryEnter { save }, 0, [0, 0]);
                let start = self.here() as u32;
                let f0 = self.code.forins.len() as u32;
                self.block(body);
                let end = self.here() as u32;
                let forins = (f0, self.code.forins.len() as u32);
                let skip = self.emit(Op::Jump(0), 0, [0, 0]);
                let to = self.here() as u32;
                self.code.handlers.push(Handler { start, end, to, var: slot_opd(*var), mark: floor, forins, save });
                self.block(handler);
                let h = self.here();
                self.patch(skip, h);
            }
            StmtKind::Throw(e) => {
                self.step(s.pos);
                let v = self.operand(e);
                self.emit(Op::Throw(v.o), 0, [v.sp, 0]);
            }
            // Every value first (one list unpacked, or one value each), then each target
            // left to right, a target's keys evaluated when its turn comes.
            StmtKind::MultiAssign(places, values) => {
                self.step(s.pos);
                let n = places.len();
                let start = self.next;
                let regs: Vec<Opd> = (0..n).map(|_| self.temp()).collect();
                if let [one] = &**values {
                    let t = self.temp();
                    self.into(one, t);
                    self.emit(Op::Unpack { src: t, start, n: n as u32 }, 0, [0, 0]);
                } else {
                    for (v, r) in values.iter().zip(&regs) {
                        self.into(v, *r);
                    }
                }
                for (p, r) in places.iter().zip(regs) {
                    if p.path.is_empty() {
                        self.emit(Op::Move { dst: slot_opd(p.root), src: r }, 0, [0, 0]);
                    } else {
                        let path = self.path(p, &[]);
                        self.emit(Op::SetPath { path, v: r }, 0, [0, 0]);
                    }
                }
            }
        }
        self.next = floor;
    }

    /// End a loop: its breaks go to `brk`, its continues to `cont`.
    pub(super) fn close_loop(&mut self, cont: usize, brk: usize) {
        let l = self.loops.pop().expect("a loop");
        for j in l.cont {
            self.patch(j, cont);
        }
        for j in l.brk {
            self.patch(j, brk);
        }
    }

    /// The place `p`: its keys' operands, in order, for an instruction that runs once
    /// they and `after` (a place builtin's other arguments) are evaluated. A constant
    /// key is read where it is; so is a variable, when every key after it and every
    /// expression of `after` is a constant or a variable too (nothing evaluated later
    /// can change it, and an unset one is still the first error: the instruction
    /// checks the keys in order); any other key is computed into a temporary.
    pub(super) fn path(&mut self, p: &'p Place, after: &[Expr]) -> u32 {
        let keys = self.code.pkeys.len() as u32;
        let simple = |e: &Expr| matches!(e, Expr::Const(_) | Expr::Local(..) | Expr::Global(..));
        for (i, k) in p.path.iter().enumerate() {
            let o = match k {
                Expr::Local(..) | Expr::Global(..)
                    if !(p.path[i + 1..].iter().all(simple) && after.iter().all(simple)) =>
                {
                    let t = self.temp();
                    self.into(k, t);
                    O { o: t, sp: 0 }
                }
                _ => self.operand(k),
            };
            self.code.pkeys.push((o.o, o.sp));
        }
        let ic = self.ics(p.path.len());
        self.code.paths.push(PathRef { root: slot_opd(p.root), keys, n: p.path.len() as u32, ic });
        (self.code.paths.len() - 1) as u32
    }

    /// Compile a condition: the jumps (to be patched) taken when it is false; it goes
    /// on past them when it is true. `and`, `or` and `not` become jumps, as Lua's
    /// `luaK_goiftrue` makes them: nothing is computed into a temporary but the
    /// operands themselves (`if t.pending and not t.holding`: two tests, no value made,
    /// moved and tested again).
    pub(super) fn cond_jump(&mut self, e: &'p Expr) -> Vec<usize> {
        self.cond(e, false)
    }

    /// The jumps taken when `e`'s truth comes out `when`.
    fn cond(&mut self, e: &'p Expr, when: bool) -> Vec<usize> {
        match e {
            Expr::And(a, b) | Expr::Or(a, b) => {
                if matches!(e, Expr::Or(..)) == when {
                    // Either side decides it (`a or b` true, `a and b` false).
                    let mut j = self.cond(a, when);
                    j.extend(self.cond(b, when));
                    j
                } else {
                    // Both sides must: the first's other outcome goes past the second.
                    let past = self.cond(a, !when);
                    let j = self.cond(b, when);
                    let h = self.here();
                    self.patch_all(past, h);
                    j
                }
            }
            Expr::Not(a) => self.cond(a, !when),
            // (The test instructions jump when false only: a comparison whose true
            // jumps is computed and its value tested.)
            Expr::Bin(op, sp, a, Arg::Num(k)) if is_cmp(*op) && !when => {
                let a = self.arg(a);
                vec![self.emit(Op::TestN { op: *op, a: a.o, k: *k, to: 0 }, *sp, [a.sp, 0])]
            }
            // `==`/`!=` against nil or a boolean: the constant's own test.
            Expr::Bin(op @ (BinOp::Eq | BinOp::Ne), sp, a, Arg::Expr(k))
                if !when && matches!(**k, Expr::Const(Value::Nil | Value::Bool(_))) =>
            {
                let k = match **k {
                    Expr::Const(Value::Bool(b)) => Some(b),
                    _ => None,
                };
                let a = self.arg(a);
                vec![self.emit(Op::TestK { op: *op, a: a.o, k, to: 0 }, *sp, [a.sp, 0])]
            }
            Expr::Bin(op, sp, a, b) if is_cmp(*op) && !when => {
                let a = self.left_arg(a, b, None);
                let b = self.arg(b);
                vec![self.emit(Op::Test { op: *op, a: a.o, b: b.o, to: 0 }, *sp, [a.sp, b.sp])]
            }
            _ => self.jump_if(e, when),
        }
    }

    /// `e` computed and its truth tested: a jump taken when it comes out `when`.
    fn jump_if(&mut self, e: &'p Expr, when: bool) -> Vec<usize> {
        let c = self.operand(e);
        vec![self.emit(Op::JumpIf { c: c.o, when, keep: false, to: 0 }, 0, [c.sp, 0])]
    }
}
