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

use crate::ast::{BinOp, Pos, Spot};
use crate::builtins::Builtin;
use crate::program::*;
use crate::value::{Bytes, Value};

/// An operand or destination: a register (local or temporary), a global or a constant,
/// with its index. See the module notes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Opd(pub u32);

// Registers have the top bit clear, so that the common case is one sign test.
pub const T_LOCAL: u32 = 0;
pub const T_TEMP: u32 = 1;
pub const T_GLOBAL: u32 = 2;
pub const T_CONST: u32 = 3;
const IDX: u32 = 0x3FFF_FFFF;

impl Opd {
    #[inline(always)]
    pub fn new(tag: u32, i: usize) -> Opd {
        Opd(tag << 30 | i as u32)
    }
    #[inline(always)]
    pub fn tag(self) -> u32 {
        self.0 >> 30
    }
    #[inline(always)]
    pub fn idx(self) -> usize {
        (self.0 & IDX) as usize
    }
    /// A register (local or temporary): read from the frame.
    #[inline(always)]
    pub fn is_reg(self) -> bool {
        (self.0 as i32) >= 0
    }
}

/// The destination that drops what is written (a call statement's result).
pub const DISCARD: Opd = Opd(T_TEMP << 30 | IDX);
/// No operand (a `for` loop without a second variable).
pub const NONE: Opd = Opd(T_CONST << 30 | IDX);

/// An instruction and whether a step is charged before it runs: the step of a line is
/// carried by the line's first instruction (no instruction of its own), except where a
/// jump must not repeat it (a `while` header's, `Op::Step`).
#[derive(Debug, Clone, Copy)]
pub struct Ins<'p> {
    pub op: Op<'p>,
    pub step: bool,
}

/// One instruction. Jump targets are instruction indices.
#[derive(Debug, Clone, Copy)]
pub enum Op<'p> {
    /// Charge a step for the line in `pos` (the line runs now).
    Step,
    /// Charge a step for the loop header in `pos`, then jump (a loop's back edge).
    StepJump(u32),
    Move {
        dst: Opd,
        src: Opd,
    },
    Bin {
        op: BinOp,
        dst: Opd,
        a: Opd,
        b: Opd,
    },
    Neg {
        dst: Opd,
        a: Opd,
    },
    Not {
        dst: Opd,
        a: Opd,
    },
    /// `a op k` with a number constant `k` in the instruction (`i % 7`, `n - 1`).
    BinN {
        op: BinOp,
        dst: Opd,
        a: Opd,
        k: f64,
    },
    /// `Bin` and `BinN` for the four commonest operators, each its own instruction (as
    /// Lua's `OP_ADD`, `OP_ADDK`): the operator is decided by the one dispatch, not by a
    /// second jump inside the instruction. Emitted by `bin_op`/`bin_n_op`.
    Add {
        dst: Opd,
        a: Opd,
        b: Opd,
    },
    Sub {
        dst: Opd,
        a: Opd,
        b: Opd,
    },
    Mul {
        dst: Opd,
        a: Opd,
        b: Opd,
    },
    Mod {
        dst: Opd,
        a: Opd,
        b: Opd,
    },
    AddN {
        dst: Opd,
        a: Opd,
        k: f64,
    },
    SubN {
        dst: Opd,
        a: Opd,
        k: f64,
    },
    MulN {
        dst: Opd,
        a: Opd,
        k: f64,
    },
    ModN {
        dst: Opd,
        a: Opd,
        k: f64,
    },
    /// `UpdN` with `+` and with `-` (`i += 1`, `n -= 1`).
    IncN {
        var: Opd,
        k: f64,
    },
    DecN {
        var: Opd,
        k: f64,
    },
    Jump(u32),
    /// Jump when the truth of `c` is `when`; a temporary `c` is consumed unless `keep`
    /// (`and` and `or` keep it: it may be their value).
    JumpIf {
        c: Opd,
        when: bool,
        keep: bool,
        to: u32,
    },
    /// Jump when `a op b` (a comparison) is false: a condition and its branch in one.
    Test {
        op: BinOp,
        a: Opd,
        b: Opd,
        to: u32,
    },
    /// `Test` against a number constant (`n < 2`).
    TestN {
        op: BinOp,
        a: Opd,
        k: f64,
        to: u32,
    },
    /// A `while` loop's back edge when its test is one `Test` (loop inversion, as
    /// compilers rotate loops): the header's step and the heap check, then the test
    /// again, on to `to` (the body) when it holds, else out of the loop: one dispatch
    /// per iteration instead of a jump and a test.
    TestBack {
        op: BinOp,
        a: Opd,
        b: Opd,
        to: u32,
    },
    /// `TestBack` against a number constant.
    TestNBack {
        op: BinOp,
        a: Opd,
        k: f64,
        to: u32,
    },
    /// `a[k]`; `ic` is the inline cache of a map read (`Code::ic`).
    Index {
        dst: Opd,
        a: Opd,
        k: Opd,
        ic: u32,
    },
    /// `a.name`; `ic` is the read's inline cache (`Code::ic`).
    Field {
        dst: Opd,
        a: Opd,
        ic: u32,
        name: &'p Bytes,
    },
    /// A list of the `n` temporaries from register `start`.
    MkList {
        dst: Opd,
        start: u32,
        n: u32,
    },
    /// A map: keys `maps[map]`, values the temporaries from register `start`.
    MkMap {
        dst: Opd,
        map: u32,
        start: u32,
    },
    /// A call of user function `fi`, its `n` arguments in the registers from `start`,
    /// where its frame starts.
    Call {
        fi: u32,
        dst: Opd,
        start: u32,
        n: u32,
    },
    /// The capability check a gated builtin makes before its arguments are evaluated.
    CapCheck(&'static Builtin),
    /// A call of a builtin, its arguments `args[at..at + n]`.
    Builtin {
        b: &'static Builtin,
        dst: Opd,
        at: u32,
        n: u32,
    },
    /// `get(m, k[, d])` (`b` is `get`, its arguments `args[at..at + n]`): a string key
    /// of a map looked up in place and its value (else the default) written straight to
    /// `dst`, as `Index` does; any other operands go to the builtin.
    Get {
        b: &'static Builtin,
        dst: Opd,
        at: u32,
        n: u32,
    },
    /// A builtin that changes a place in place: `pcalls[call]`.
    BuiltinPlace {
        dst: Opd,
        call: u32,
    },
    /// An interpolation begins: a new text on the interpreter's buffer stack
    /// (`Interp::ibufs`), outside the registers.
    InterpBegin,
    /// The literal text `code.lits[lit]` appended to the innermost buffer.
    InterpLit {
        lit: u32,
    },
    /// The text of `a` appended to the innermost buffer.
    InterpAdd {
        a: Opd,
    },
    /// The innermost buffer, finished, to `dst` as a string (its work charged).
    InterpEnd {
        dst: Opd,
    },
    /// `throw a`.
    Throw(Opd),
    /// Entering a `try` body: the length of the anonymous-function table now goes to
    /// register `save` and the interpolation buffers' count to `save + 1`, for a catch
    /// to cut both back to (`Handler::save`).
    TryEnter {
        save: u32,
    },
    /// The length of the anonymous-function table into register `mark` (a call with
    /// anonymous functions among its arguments begins).
    LamMark {
        mark: u32,
    },
    /// Cut the anonymous-function table back to the length in register `mark` (the
    /// call has returned: its anonymous functions are gone).
    LamRelease {
        mark: u32,
    },
    /// An anonymous function `fi` with the `n` captured values from register `start`:
    /// added to the table, its handle into `dst`.
    MkLambda {
        dst: Opd,
        fi: u32,
        start: u32,
        n: u32,
    },
    /// `a, b = e`: the `n` items of the list in temporary `src` into the temporaries
    /// from register `start` (a list of exactly `n`, or the error).
    Unpack {
        src: Opd,
        start: u32,
        n: u32,
    },
    /// `x op= v` on a variable.
    Upd {
        op: BinOp,
        var: Opd,
        v: Opd,
    },
    /// `x op= k` with a number constant (`i += 1`).
    UpdN {
        op: BinOp,
        var: Opd,
        k: f64,
    },
    /// `x[k] = v` on a variable; `ic` is the inline cache of a map key (`Code::ic`).
    SetIdx {
        var: Opd,
        k: Opd,
        v: Opd,
        ic: u32,
    },
    /// `PLACE = v` for `paths[path]`.
    SetPath {
        path: u32,
        v: Opd,
    },
    /// `PLACE op= v` for `paths[path]`.
    UpdPath {
        op: BinOp,
        path: u32,
        v: Opd,
    },
    /// A numeric `for`: registers `base..base + 4` hold start, end, step and the count.
    ForPrep {
        base: u32,
    },
    /// The next value of the `for` variable, or a jump to `exit` past the end.
    ForNext {
        var: Opd,
        base: u32,
        exit: u32,
    },
    /// The count up, a step for the header, and the loop's next value: the variable
    /// set and a jump back to `to` (the body's first instruction), or on past the end
    /// (one instruction per iteration, as Lua's `FORLOOP`).
    ForBack {
        var: Opd,
        base: u32,
        to: u32,
    },
    /// `for ... in`: register `base` holds the snapshot, `base + 1` the index,
    /// `base + 2` the storage charged for the snapshot.
    ForInPrep {
        base: u32,
    },
    ForInNext {
        first: Opd,
        second: Opd,
        base: u32,
        exit: u32,
    },
    ForInEnd {
        base: u32,
    },
    Ret(Opd),
    RetNil,
    End,
}

/// `PLACE`: a variable and the registers holding its keys.
#[derive(Debug, Clone, Copy)]
pub struct PathRef {
    pub root: Opd,
    pub keys: u32,
    pub n: u32,
    /// The inline caches of its `n` steps (`Code::ic[ic..ic + n]`).
    pub ic: u32,
}

/// A `try`'s handler: an error raised by an instruction in `start..end` of this code
/// (the body; a call's callee included) is caught here, innermost first.
#[derive(Debug, Clone, Copy)]
pub struct Handler {
    pub start: u32,
    pub end: u32,
    /// Where the `catch` part starts.
    pub to: u32,
    /// The `catch` variable.
    pub var: Opd,
    /// Temporaries from this register up are the body's: cleared when it is left by an
    /// error (no stale reference may make a later write copy a value).
    pub mark: u32,
    /// The `for ... in` loops inside the body: `Code::forins[forins.0..forins.1]`, the
    /// register bases whose snapshot charge an error leaving them releases.
    pub forins: (u32, u32),
    /// The register `TryEnter` wrote the anonymous-function table's length to (and
    /// the interpolation buffers' count to the next one).
    pub save: u32,
}

/// A place builtin's call: its place, its other arguments, and the builtin.
#[derive(Debug, Clone, Copy)]
pub struct PlaceCall {
    pub b: &'static Builtin,
    pub path: PathRef,
    pub at: u32,
    pub n: u32,
}

/// A compiled body.
#[derive(Debug, Default)]
pub struct Code<'p> {
    pub ops: Vec<Ins<'p>>,
    /// Per instruction: its line, its node's spot, and its two operands' spots.
    pub pos: Vec<Pos>,
    pub spot: Vec<Spot>,
    pub ospot: Vec<[Spot; 2]>,
    pub consts: Vec<Value>,
    /// Call arguments: operand and spot.
    pub args: Vec<(Opd, Spot)>,
    pub maps: Vec<&'p [(Bytes, Expr)]>,
    /// The literal parts of interpolations (`Op::InterpLit`).
    pub lits: Vec<&'p [u8]>,
    pub paths: Vec<PathRef>,
    pub pcalls: Vec<PlaceCall>,
    /// Inline caches: per map read site (a field, an index, a place's step), the index
    /// in the map where its key was found last (`Map::get_cached`). A guess checked
    /// against the key before use, so a wrong one costs one compare.
    pub ic: Vec<std::cell::Cell<u32>>,
    /// `try` handlers, innermost first (`Handler`), and the for-in bases they list.
    pub handlers: Vec<Handler>,
    pub forins: Vec<u32>,
    /// Locals (parameters first) and all registers.
    pub nlocals: u32,
    pub nregs: u32,
    /// The locals and the `for ... in` loops' registers: what a call's entry makes
    /// unset (a temporary is always written before it is read; these are not).
    pub nfixed: u32,
}

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

/// Compile a function body (`nlocals` slots) or main's (0).
pub fn compile<'p>(body: &'p [Stmt], nlocals: usize) -> Code<'p> {
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
    };
    c.block(body);
    c.emit(Op::End, 0, [0, 0]);
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
        BinOp::Mod => Op::ModN { dst, a, k },
        op => Op::BinN { op, dst, a, k },
    }
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
        self.code.ops.push(Ins { op, step });
        self.code.pos.push(self.pos);
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

    /// Point the jump at `at` to `to`.
    fn patch(&mut self, at: usize, to: usize) {
        let to = to as u32;
        match &mut self.code.ops[at].op {
            Op::Jump(t) | Op::StepJump(t) => *t = to,
            Op::JumpIf { to: t, .. } | Op::Test { to: t, .. } | Op::TestN { to: t, .. } => *t = to,
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

    fn stmt(&mut self, s: &'p Stmt) {
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
            StmtKind::IncVar(slot, op, k) => {
                self.step(s.pos);
                self.emit(upd_n_op(*op, slot_opd(*slot), *k), 0, [0, 0]);
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
                let path = self.path(place);
                self.emit(Op::SetPath { path, v: v.o }, 0, [v.sp, 0]);
            }
            StmtKind::Compound(place, op, e) => {
                self.step(s.pos);
                let v = self.operand_before(e, &place.path);
                let path = self.path(place);
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
                    self.patch(skip, h);
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
                let exit = self.cond_jump(cond);
                self.next = floor;
                self.loops.push(Loop { brk: vec![exit], cont: vec![] });
                self.block(body);
                self.pos = s.pos;
                // A test that is one instruction is repeated at the back edge (its line
                // and columns too, for the same diagnostics); anything else is
                // computed again at the top.
                let inverted = match self.code.ops[top].op {
                    Op::TestN { op, a, k, .. } if exit == top => Some(Op::TestNBack { op, a, k, to: top as u32 + 1 }),
                    Op::Test { op, a, b, .. } if exit == top => Some(Op::TestBack { op, a, b, to: top as u32 + 1 }),
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
                // (set by ForInPrep, cleared by ForInEnd): what a `try` left by an error
                // releases (`Handler::forins`). The registers are the loop's alone.
                let nil = self.konst(Value::Nil);
                self.emit(Op::Move { dst: regs[2], src: nil }, 0, [0, 0]);
                self.code.forins.push(base);
                self.into(&f.iter, regs[0]);
                self.pos = s.pos;
                self.emit(Op::ForInPrep { base }, 0, [0, 0]);
                let second = f.second.map(slot_opd).unwrap_or(NONE);
                let top = self.emit(Op::ForInNext { first: slot_opd(f.first), second, base, exit: 0 }, 0, [0, 0]);
                self.loops.push(Loop { brk: vec![top], cont: vec![] });
                self.block(&f.body);
                self.pos = s.pos;
                let back = self.emit(Op::StepJump(top as u32), 0, [0, 0]);
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
            // The counting idiom of the tree evaluator is an ordinary `x[k] = e` here.
            StmtKind::CountIndex(slot, k, e) => {
                self.step(s.pos);
                let v = self.operand_before(e, std::slice::from_ref(k));
                let k = self.operand(k);
                let ic = self.ics(1);
                self.emit(Op::SetIdx { var: slot_opd(*slot), k: k.o, v: v.o, ic }, 0, [k.sp, v.sp]);
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
                        let path = self.path(p);
                        self.emit(Op::SetPath { path, v: r }, 0, [0, 0]);
                    }
                }
            }
        }
        self.next = floor;
    }

    /// End a loop: its breaks go to `brk`, its continues to `cont`.
    fn close_loop(&mut self, cont: usize, brk: usize) {
        let l = self.loops.pop().expect("a loop");
        for j in l.cont {
            self.patch(j, cont);
        }
        for j in l.brk {
            self.patch(j, brk);
        }
    }

    /// The place `p`: its keys evaluated into registers, in order.
    fn path(&mut self, p: &'p Place) -> u32 {
        let start = self.next;
        let regs: Vec<Opd> = p.path.iter().map(|_| self.temp()).collect();
        for (k, r) in p.path.iter().zip(regs) {
            self.into(k, r);
        }
        let ic = self.ics(p.path.len());
        self.code.paths.push(PathRef { root: slot_opd(p.root), keys: start, n: p.path.len() as u32, ic });
        (self.code.paths.len() - 1) as u32
    }

    /// Compile a condition; the returned jump (to be patched) is taken when it is false.
    fn cond_jump(&mut self, e: &'p Expr) -> usize {
        match e {
            Expr::BinS(op, sp, a, Opnd::Num(k)) if is_cmp(*op) => {
                let a = self.opnd(*a);
                self.emit(Op::TestN { op: *op, a, k: *k, to: 0 }, *sp, [0, 0])
            }
            Expr::BinS(op, sp, a, b) if is_cmp(*op) => {
                let (a, b) = (self.opnd(*a), self.opnd(*b));
                self.emit(Op::Test { op: *op, a, b, to: 0 }, *sp, [0, 0])
            }
            Expr::BinK(op, sp, a, k) if is_cmp(*op) => {
                let a = self.operand(a);
                self.emit(Op::TestN { op: *op, a: a.o, k: *k, to: 0 }, *sp, [a.sp, 0])
            }
            Expr::Bin(op, sp, a, b) if is_cmp(*op) && num_const(b).is_some() => {
                let a = self.operand(a);
                let k = num_const(b).unwrap_or(0.0);
                self.emit(Op::TestN { op: *op, a: a.o, k, to: 0 }, *sp, [a.sp, 0])
            }
            Expr::Bin(op, sp, a, b) if is_cmp(*op) => {
                let a = self.operand_before(a, std::slice::from_ref(&**b));
                let b = self.operand(b);
                self.emit(Op::Test { op: *op, a: a.o, b: b.o, to: 0 }, *sp, [a.sp, b.sp])
            }
            _ => {
                let c = self.operand(e);
                self.emit(Op::JumpIf { c: c.o, when: false, keep: false, to: 0 }, 0, [c.sp, 0])
            }
        }
    }

    // ------------------------------------------------------------------
    // Expressions
    // ------------------------------------------------------------------

    fn opnd(&mut self, o: Opnd) -> Opd {
        match o {
            Opnd::Local(i) => Opd::new(T_LOCAL, i as usize),
            Opnd::Global(i) => Opd::new(T_GLOBAL, i as usize),
            Opnd::Num(n) => self.konst(Value::Num(n)),
        }
    }

    /// The operand holding `e`'s value: a variable or constant where it is, or a fresh
    /// temporary it is computed into.
    fn operand(&mut self, e: &'p Expr) -> O {
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
    fn operand_in(&mut self, e: &'p Expr, dst: Opd) -> O {
        match e {
            Expr::Const(_) | Expr::Local(..) | Expr::Global(..) => self.operand(e),
            _ if dst.tag() == T_TEMP && dst != DISCARD => {
                self.into(e, dst);
                O { o: dst, sp: 0 }
            }
            _ => self.operand(e),
        }
    }

    /// `operand(e)` for a value read after `later` are evaluated: a variable is copied
    /// into a temporary first when one of them could change it (a call, or a builtin
    /// that changes a place), so that the value is the one it held when `e` was reached,
    /// as the tree evaluator reads it.
    fn operand_before(&mut self, e: &'p Expr, later: &[Expr]) -> O {
        if matches!(e, Expr::Local(..) | Expr::Global(..)) && !later.iter().all(pure) {
            let t = self.temp();
            self.into(e, t);
            return O { o: t, sp: 0 };
        }
        self.operand(e)
    }

    /// Compile `e` so that its value lands in `dst`.
    fn into(&mut self, e: &'p Expr, dst: Opd) {
        match e {
            Expr::Const(_) | Expr::Local(..) | Expr::Global(..) => {
                let s = self.operand(e);
                self.emit(Op::Move { dst, src: s.o }, 0, [s.sp, 0]);
            }
            Expr::BinS(op, sp, a, Opnd::Num(k)) => {
                let a = self.opnd(*a);
                self.emit(bin_n_op(*op, dst, a, *k), *sp, [0, 0]);
            }
            Expr::BinS(op, sp, a, b) => {
                let (a, b) = (self.opnd(*a), self.opnd(*b));
                self.emit(bin_op(*op, dst, a, b), *sp, [0, 0]);
            }
            Expr::BinK(op, sp, a, k) => {
                let a = self.operand_in(a, dst);
                self.emit(bin_n_op(*op, dst, a.o, *k), *sp, [a.sp, 0]);
            }
            Expr::Bin(op, sp, a, b) if num_const(b).is_some() => {
                let a = self.operand_in(a, dst);
                let k = num_const(b).unwrap_or(0.0);
                self.emit(bin_n_op(*op, dst, a.o, k), *sp, [a.sp, 0]);
            }
            Expr::Bin(op, sp, a, b) => {
                let a = match a.as_ref() {
                    Expr::Const(_) | Expr::Local(..) | Expr::Global(..) => {
                        self.operand_before(a, std::slice::from_ref(&**b))
                    }
                    _ => self.operand_in(a, dst),
                };
                let b = self.operand(b);
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
            Expr::Index(a, k, sp) => {
                let a = self.operand_before(a, std::slice::from_ref(&**k));
                let k = self.operand(k);
                let ic = self.ics(1);
                self.emit(Op::Index { dst, a: a.o, k: k.o, ic }, *sp, [a.sp, k.sp]);
            }
            Expr::Field(a, name, sp) => {
                let a = self.operand(a);
                let ic = self.ics(1);
                self.emit(Op::Field { dst, a: a.o, ic, name }, *sp, [a.sp, 0]);
            }
            Expr::List(items) => {
                let start = self.next;
                let regs: Vec<Opd> = items.iter().map(|_| self.temp()).collect();
                for (it, r) in items.iter().zip(regs) {
                    self.into(it, r);
                }
                self.emit(Op::MkList { dst, start, n: items.len() as u32 }, 0, [0, 0]);
            }
            Expr::Map(items) => {
                let start = self.next;
                let regs: Vec<Opd> = items.iter().map(|_| self.temp()).collect();
                for ((_, it), r) in items.iter().zip(regs) {
                    self.into(it, r);
                }
                self.code.maps.push(items);
                let map = (self.code.maps.len() - 1) as u32;
                self.emit(Op::MkMap { dst, map, start }, 0, [0, 0]);
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
            // `get(m, k, d)`: the tree evaluator reads the map in place (`MapGet`); here
            // the builtin call is no copy either (its argument shares the map), and its
            // charges are the same.
            Expr::Builtin(b, args, sp) | Expr::MapGet(b, args, sp) => {
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
                let path = self.path(place);
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
                self.patch(skip, h);
                self.into(b, t);
                let h = self.here();
                self.patch(j, h);
                if t != dst {
                    self.emit(Op::Move { dst, src: t }, 0, [0, 0]);
                }
            }
            // Interpolation is evaluated by the tree evaluator for now.
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
            // Each part is evaluated and appended in turn (a later part runs after an
            // earlier one's text is checked against the limits, as in the tree
            // evaluator).
            Expr::Interp(parts) => {
                self.emit(Op::InterpBegin, 0, [0, 0]);
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
    fn args(&mut self, args: &'p [Expr]) -> u32 {
        let os: Vec<O> = args.iter().enumerate().map(|(i, a)| self.operand_before(a, &args[i + 1..])).collect();
        let at = self.code.args.len() as u32;
        self.code.args.extend(os.iter().map(|o| (o.o, o.sp)));
        at
    }
}

/// Whether evaluating `e` can change no variable (no call of any kind in it).
fn pure(e: &Expr) -> bool {
    match e {
        Expr::Const(_) | Expr::Local(..) | Expr::Global(..) | Expr::BinS(..) => true,
        Expr::List(items) => items.iter().all(pure),
        Expr::Map(items) => items.iter().all(|(_, e)| pure(e)),
        Expr::Interp(parts) => parts.iter().all(|p| match p {
            IPart::Lit(_) => true,
            IPart::Expr(e) => pure(e),
        }),
        Expr::Neg(a, _) | Expr::Not(a) | Expr::BinK(_, _, a, _) | Expr::Field(a, ..) => pure(a),
        Expr::Bin(_, _, a, b) | Expr::And(a, b) | Expr::Or(a, b) | Expr::Index(a, b, _) => pure(a) && pure(b),
        Expr::Cond(a, c, b) => pure(a) && pure(c) && pure(b),
        Expr::Call(..)
        | Expr::Builtin(..)
        | Expr::BuiltinPlace(..)
        | Expr::MapGet(..)
        | Expr::Lambda(..)
        | Expr::WithLambdas(_) => false,
    }
}

/// The number an expression is, when it is a number constant.
fn num_const(e: &Expr) -> Option<f64> {
    match e {
        Expr::Const(Value::Num(n)) => Some(*n),
        _ => None,
    }
}
