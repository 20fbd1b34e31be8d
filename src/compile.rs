//! The compiler: turns a validated function body (`program.rs`) into bytecode for the
//! dispatch loop (`vm.rs`, run by `Interp::run_code`).
//!
//! - Registers: a frame's registers are its local slots (`0..nlocals`, as the resolver
//!   numbered them) followed by temporaries; both live on the interpreter's value stack
//!   from the frame's base, so a local is the same cell for the compiled code and for
//!   the tree evaluator (`interp.rs`).
//! - Operands (`Opd`): an operator reads a local, a temporary, a global or a constant
//!   where it is (its mode in the top two bits), so `x % m`, `x % a[0]` and `x % 7` are
//!   one instruction each with no copy; a temporary is consumed by the instruction that
//!   reads it (moved out), so that no stale reference makes a later write copy a value.
//! - Steps: the compiler emits `Op::Step` (or a back edge that steps) exactly where the
//!   tree evaluator charges a step (SPEC 8: one per logical line run; a loop header once
//!   per test), so both count the same.
//! - A side table gives each instruction its line (`pos`) and the column of the node
//!   that raised an error (`spot`, `ospot` for its operands), read only on errors.
//! - `try` is an exception table (`Handler`): the instruction range of its body, where
//!   its `catch` starts, and what leaving the body by an error releases. Nothing runs
//!   on entering a `try`; the dispatch loop looks in the table only when an error is
//!   raised, innermost handler first, frame by frame (as Lua's and starlark's do).
//! - Read sites of map keys keep an inline cache each (`Code::ic`).
//! - Every statement and every expression is compiled. An interpolation builds its
//!   text in a buffer outside the registers (`Interp::ibufs`), cut back by a catch.
//!
//! This file holds the compiler's state and its entry (`compile`); its children hold the
//! rest: `compile/code.rs` (operands, the instruction set, a compiled body and its side
//! tables), `compile/stmt.rs` (statements, steps, conditions as jumps) and
//! `compile/expr.rs` (expressions, operators by operand modes, calls).

use std::rc::Rc;

use crate::ast::{BinOp, Pos, Spot};
use crate::program::*;
use crate::value::Value;

#[path = "compile/code.rs"]
mod code;
#[path = "compile/expr.rs"]
mod expr;
#[path = "compile/stmt.rs"]
mod stmt;

pub use code::*;
use expr::num_const;

/// An operand and the spot of its name (0: a constant or a temporary).
#[derive(Clone, Copy)]
struct O {
    o: Opd,
    sp: Spot,
}

struct Loop {
    brk: Vec<usize>,
    cont: Vec<usize>,
}

struct Compiler<'p> {
    code: Code<'p>,
    /// The next free temporary (a register index).
    next: u32,
    pos: Pos,
    loops: Vec<Loop>,
    /// A step charged for `pos`, to be carried by the next instruction emitted.
    step_pending: bool,
    /// The next of the registers set apart for `for ... in` loops (three each).
    forin_next: u32,
    /// The program's map literal shapes (`Codes::shapes`), lent for this body.
    shapes: LiteralShapes,
}

/// The shapes of a program's map literals, one for each sequence of keys: literals with
/// the same keys in the same order, in any function, build maps of one shape (the
/// bodies of n-body, the records a program makes in several places), so that a site
/// reading a field of any of them is served by its cache's one shape (`value::Site`).
#[derive(Default)]
pub struct LiteralShapes(std::collections::HashMap<Vec<Vec<u8>>, Option<Rc<crate::value::Shape>>>);

impl LiteralShapes {
    /// The shape of a literal with `keys` (none for keys a shaped map cannot take).
    fn shape(&mut self, keys: &[crate::value::Bytes]) -> Option<Rc<crate::value::Shape>> {
        let k: Vec<Vec<u8>> = keys.iter().map(|k| k.as_slice().to_vec()).collect();
        self.0.entry(k).or_insert_with(|| crate::value::Shape::new(keys)).clone()
    }
}

/// How many `for ... in` loops a body holds, nested ones included (not those of
/// anonymous functions: each is a body of its own).
fn count_forins(body: &[Stmt]) -> u32 {
    body.iter()
        .map(|s| match &s.kind {
            StmtKind::ForIn(f) => 1 + count_forins(&f.body),
            StmtKind::ForRange(f) => count_forins(&f.body),
            StmtKind::While(_, b) | StmtKind::Block(b) => count_forins(b),
            StmtKind::If(arms, other) => {
                arms.iter().map(|a| count_forins(&a.body)).sum::<u32>() + other.as_deref().map_or(0, count_forins)
            }
            StmtKind::Try { body, handler, .. } => count_forins(body) + count_forins(handler),
            _ => 0,
        })
        .sum()
}

/// Every body of a program compiled on its first use and kept for the program's life.
/// The dispatch loop holds plain references into it, so a call or a return moves a
/// pointer, not a reference count.
pub struct Codes<'p> {
    prog: &'p Program,
    /// One per function, then main's.
    cells: Box<[std::cell::OnceCell<Code<'p>>]>,
    shapes: std::cell::RefCell<LiteralShapes>,
}

impl<'p> Codes<'p> {
    pub fn new(prog: &'p Program) -> Self {
        Codes {
            prog,
            cells: (0..=prog.funcs.len()).map(|_| std::cell::OnceCell::new()).collect(),
            shapes: Default::default(),
        }
    }

    /// Function `fi`'s code, or main's for any index past the functions.
    #[inline(always)]
    pub fn get(&self, fi: usize) -> &Code<'p> {
        // (The compiled case first, by one look at the cell: the clamp and the cell's
        // own `get_or_init` cost every call about a dozen instructions.)
        match self.cells.get(fi).and_then(|c| c.get()) {
            Some(code) => code,
            None => self.get_first(fi),
        }
    }

    /// `get` of a function not compiled yet (or of main, by an index past the
    /// functions).
    #[cold]
    #[inline(never)]
    fn get_first(&self, fi: usize) -> &Code<'p> {
        let i = fi.min(self.prog.funcs.len());
        self.cells[i].get_or_init(|| self.compile_body(i))
    }

    /// Function `i`'s code compiled (main's for `i` past the functions): once each, off
    /// the call's path.
    #[cold]
    #[inline(never)]
    fn compile_body(&self, i: usize) -> Code<'p> {
        let prog = self.prog;
        let shapes = &mut self.shapes.borrow_mut();
        match prog.funcs.get(i) {
            Some(f) => Code { base_bytes: f.base_bytes, ..compile(&f.body, f.slot_names.len(), shapes) },
            None => Code { base_bytes: prog.main_base_bytes, ..compile(&prog.main, 0, shapes) },
        }
    }
}

/// Compile a function body (`nlocals` slots) or main's (0).
pub fn compile<'p>(body: &'p [Stmt], nlocals: usize, shapes: &mut LiteralShapes) -> Code<'p> {
    // Each `for ... in` has three registers of its own, after the locals and below every
    // temporary, that nothing else writes: its cost register is a number exactly while
    // it holds its snapshot, which is what a catch reads (`Handler::forins`); a
    // temporary sharing the register could leave a number there before the loop runs.
    let reserved = nlocals as u32 + 3 * count_forins(body);
    let mut c = Compiler {
        code: Code { nlocals: nlocals as u32, nregs: reserved, nfixed: reserved, ..Default::default() },
        next: reserved,
        pos: 0,
        loops: Vec::new(),
        step_pending: false,
        forin_next: nlocals as u32,
        shapes: std::mem::take(shapes),
    };
    c.block(body);
    c.emit(Op::End, 0, [0, 0]);
    *shapes = c.shapes;
    c.code
}

fn slot_opd(s: Slot) -> Opd {
    match s {
        Slot::Local(i) => Opd::new(T_LOCAL, i as usize),
        Slot::Global(i) => Opd::new(T_GLOBAL, i as usize),
    }
}

/// `a op b`, as its own instruction for the commonest operators (see `Op::Add`).
fn bin_op(op: BinOp, dst: Opd, a: Opd, b: Opd) -> Op<'static> {
    match op {
        BinOp::Add => Op::Add { dst, a, b },
        BinOp::Sub => Op::Sub { dst, a, b },
        BinOp::Mul => Op::Mul { dst, a, b },
        BinOp::Mod => Op::Mod { dst, a, b },
        op => Op::Bin { op, dst, a, b },
    }
}

/// `a op k`, as its own instruction for the commonest operators (see `Op::Add`).
fn bin_n_op(op: BinOp, dst: Opd, a: Opd, k: f64) -> Op<'static> {
    match op {
        BinOp::Add => Op::AddN { dst, a, k },
        BinOp::Sub => Op::SubN { dst, a, k },
        BinOp::Mul => Op::MulN { dst, a, k },
        BinOp::Mod => match whole_i32(k).and_then(std::num::NonZeroI32::new) {
            Some(k) => Op::ModN { dst, a, k },
            None => Op::BinN { op, dst, a, k },
        },
        op => Op::BinN { op, dst, a, k },
    }
}

/// `k` as an `i32` when it is one exactly (a whole number in range; -0 is 0). For
/// `ModN`'s divisor (0 and -0 then left out by `NonZeroI32`) and `IndexN`'s index.
fn whole_i32(k: f64) -> Option<i32> {
    let i = k as i32;
    (f64::from(i) == k).then_some(i)
}

/// `x op= k`, as its own instruction for `+` and `-` (see `Op::IncN`).
fn upd_n_op(op: BinOp, var: Opd, k: f64) -> Op<'static> {
    match op {
        BinOp::Add => Op::IncN { var, k },
        BinOp::Sub => Op::DecN { var, k },
        op => Op::UpdN { op, var, k },
    }
}

fn is_cmp(op: BinOp) -> bool {
    matches!(op, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)
}

impl<'p> Compiler<'p> {
    fn here(&self) -> usize {
        self.code.ops.len()
    }

    fn emit(&mut self, op: Op<'p>, spot: Spot, ospot: [Spot; 2]) -> usize {
        let step = std::mem::take(&mut self.step_pending);
        self.code.ops.push(Ins { op, step, pos: self.pos });
        self.code.spot.push(spot);
        self.code.ospot.push(ospot);
        self.code.ops.len() - 1
    }

    /// `n` new inline caches; the first one's index.
    fn ics(&mut self, n: usize) -> u32 {
        let at = self.code.ic.len();
        self.code.ic.resize_with(at + n, Default::default);
        at as u32
    }

    fn temp(&mut self) -> Opd {
        let r = self.next;
        self.next += 1;
        if self.next > self.code.nregs {
            self.code.nregs = self.next;
        }
        Opd::new(T_TEMP, r as usize)
    }

    fn konst(&mut self, v: Value) -> Opd {
        self.code.consts.push(v);
        Opd::new(T_CONST, self.code.consts.len() - 1)
    }

    /// `patch` each of `jumps`.
    fn patch_all(&mut self, jumps: Vec<usize>, to: usize) {
        for j in jumps {
            self.patch(j, to);
        }
    }

    /// Point the jump at `at` to `to`.
    fn patch(&mut self, at: usize, to: usize) {
        let to = to as u32;
        match &mut self.code.ops[at].op {
            Op::Jump(t) | Op::StepJump(t) => *t = to,
            Op::JumpIf { to: t, .. } | Op::Test { to: t, .. } | Op::TestN { to: t, .. } | Op::TestK { to: t, .. } => {
                *t = to
            }
            Op::ForNext { exit, .. } | Op::ForInNext { exit, .. } => *exit = to,
            _ => unreachable!("not a jump"),
        }
    }

    // ------------------------------------------------------------------
    // Statements
    // ------------------------------------------------------------------

    fn block(&mut self, b: &'p [Stmt]) {
        for s in b {
            self.stmt(s);
        }
    }

    /// Charge a step for the line at `pos`, carried by the next instruction.
    fn step(&mut self, pos: Pos) {
        self.flush_step();
        self.pos = pos;
        self.step_pending = true;
    }

    /// A step still pending becomes an instruction of its own (before a jump target that
    /// must not repeat it, or before another step).
    fn flush_step(&mut self) {
        if self.step_pending {
            self.step_pending = false;
            self.emit(Op::Step, 0, [0, 0]);
        }
    }
}
