//! The bytecode's shapes: operands (`Opd`) and their modes, the instruction set (`Op`,
//! `Ins`), and a compiled body (`Code`) with its side tables. Child of `compile`.

use crate::ast::{BinOp, Pos, Spot};
use crate::builtins::Builtin;
use crate::program::*;
use crate::value::{Bytes, Value};
use std::rc::Rc;

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
    /// The position of the line it belongs to (`Code::pos`). Beside the instruction
    /// rather than in a table of its own: a step reads it with the instruction (no
    /// second look-up and bounds check), and it fits in the instruction's padding.
    pub pos: Pos,
}

// An instruction stays 32 bytes (two to a cache line) with its position.
const _: () = assert!(std::mem::size_of::<Ins<'static>>() == 32);

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
    /// `a % k` for a whole constant `k` that is not 0 and fits an `i32`: the
    /// divisor's checks (whole, not 0, in range) made when the code is compiled, so
    /// that the instruction checks only the dividend. Any other constant divisor is a
    /// `BinN`.
    ModN {
        dst: Opd,
        a: Opd,
        k: std::num::NonZeroI32,
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
    /// `Test` of equality (`==`, `!=`) against a nil or boolean constant in the
    /// instruction (`k`: None for nil, else the boolean; `e != nil`, `done == false`):
    /// the operand mode of a constant that is not a number, as Lua's `OP_EQK`. A type
    /// test, charged as `cmp_in_place` charges it; an unset `a` is its `name` error.
    TestK {
        op: BinOp,
        a: Opd,
        k: Option<bool>,
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
    /// `TestBack` against a nil or boolean constant (`TestK`).
    TestKBack {
        op: BinOp,
        a: Opd,
        k: Option<bool>,
        to: u32,
    },
    /// `a[k]`; `ic` is the inline cache of a map read (`Code::ic`).
    Index {
        dst: Opd,
        a: Opd,
        k: Opd,
        ic: u32,
    },
    /// `a[i]` for a whole-number constant index `i` (`k`, the constant's operand, for
    /// every case but a list's item and a string's byte): read without decoding the
    /// key's operand and converting a number (`t[0]`, `pair[1]`, `xs[-1]`, `line[0]`).
    IndexN {
        dst: Opd,
        a: Opd,
        k: Opd,
        i: i32,
    },
    /// A chain of reads (`bodies[i].x`, `t.pos.y`, `grid[y][x]`): `rpaths[path]`, walked
    /// in place from its root to the value written to `dst`, nothing between copied
    /// (as `Index` and `Field` one after the other would copy each step's value into a
    /// temporary and drop it again).
    GetPath {
        dst: Opd,
        path: u32,
    },
    /// `a.name`; `ic` is the read's inline cache (`Code::ic`).
    Field {
        dst: Opd,
        a: Opd,
        ic: u32,
        name: &'p Bytes,
    },
    /// A list of the `n` operands `args[at..]` (a temporary's value moved, a variable's
    /// or constant's copied, as a builtin call's arguments).
    MkList {
        dst: Opd,
        at: u32,
        n: u32,
    },
    /// A map: keys `maps[map]`, values the operands `args[at..]` (one a key).
    MkMap {
        dst: Opd,
        map: u32,
        at: u32,
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
    /// An interpolation. With `n` parts (`n > 0`, all of them texts, variables or
    /// constants: `"${n} items"`), the whole of it in this one instruction: the parts
    /// `iparts[at..at + n]` appended in turn to a text of `cap` bytes' room, each checked
    /// as `InterpLit`/`InterpAdd` check it, the text then finished into `dst` as
    /// `InterpEnd` finishes it (nothing runs between the parts, so nothing can tell it
    /// from the sequence). With none (`n == 0`), the beginning of that sequence, for
    /// parts that are computed: a new text of `cap` bytes' room on the interpreter's
    /// buffer stack (`Interp::ibufs`), outside the registers. (One variant for both: a
    /// variant more in `Op` made the dispatch loop reload a register from the stack at
    /// every instruction, every benchmark 0.3 to 1.3% more instructions.)
    InterpBegin {
        dst: Opd,
        at: u32,
        n: u32,
        cap: u32,
    },
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
    /// `for ... in`: register `base` holds the snapshot (the value of `src`, copied
    /// there unless `src` is that register), `base + 1` the index, `base + 2` the
    /// storage charged for the snapshot.
    ForInPrep {
        base: u32,
        src: Opd,
    },
    ForInNext {
        first: Opd,
        second: Opd,
        base: u32,
        exit: u32,
    },
    /// A `for ... in` loop's back edge (the last instruction of its body, where a
    /// `continue` goes): a step for the header, then the next item into the variables
    /// and a jump back to `to` (the body's first instruction), or past the last item the
    /// loop's end done and its `ForInEnd` (the next instruction, where a `break` goes)
    /// passed over: one instruction per iteration, as `ForBack` for a `for` loop.
    ForInBack {
        first: Opd,
        second: Opd,
        base: u32,
        to: u32,
    },
    ForInEnd {
        base: u32,
    },
    Ret(Opd),
    RetNil,
    End,
}

/// `PLACE`: a variable and its keys' operands (`Code::pkeys[keys..keys + n]`).
#[derive(Debug, Clone, Copy)]
pub struct PathRef {
    pub root: Opd,
    pub keys: u32,
    pub n: u32,
    /// The inline caches of its `n` steps (`Code::ic[ic..ic + n]`).
    pub ic: u32,
}

/// A chain of reads (`Op::GetPath`): its root operand and its spot (an unset
/// variable's error), its steps `Code::rsteps[at..at + n]`, innermost first.
#[derive(Debug, Clone, Copy)]
pub struct ReadPath {
    pub root: Opd,
    pub rsp: Spot,
    pub at: u32,
    pub n: u32,
}

/// One step of a `ReadPath`: `[key]` or `.name`, its inline cache (`Code::ic`), its own
/// spot (a failed read's error, as the `Index` or `Field` it stands for has) and its
/// key's (an unset variable's error).
#[derive(Debug, Clone, Copy)]
pub struct RStep<'p> {
    pub key: RKey<'p>,
    pub ic: u32,
    pub sp: Spot,
    pub ksp: Spot,
}

/// A `ReadPath` step's key: a field name, or an index that is a constant or a variable
/// (read where it is; a key computed by an expression ends the chain).
#[derive(Debug, Clone, Copy)]
pub enum RKey<'p> {
    Field(&'p Bytes),
    Index(Opd),
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

/// A part of an interpolation made by one instruction (`Op::InterpBegin` with parts):
/// a literal text, or a variable or constant read where it is (an unset variable is
/// the `name` error at the spot).
#[derive(Debug, Clone, Copy)]
pub enum IOp<'p> {
    Lit(&'p [u8]),
    Val(Opd, Spot),
}

/// A compiled body.
#[derive(Debug, Default)]
pub struct Code<'p> {
    pub ops: Vec<Ins<'p>>,
    /// Per instruction: its node's spot and its two operands' spots (its line is in
    /// the instruction: `pos`).
    pub spot: Vec<Spot>,
    pub ospot: Vec<[Spot; 2]>,
    pub consts: Vec<Value>,
    /// Call arguments: operand and spot.
    pub args: Vec<(Opd, Spot)>,
    /// Map literals: keys and value expressions, and the shape their maps share (none
    /// for a literal with no key, more than `MAP_SHAPED` or a key twice).
    pub maps: Vec<(&'p [(Bytes, Expr)], Option<Rc<crate::value::Shape>>)>,
    /// The literal parts of interpolations (`Op::InterpLit`).
    pub lits: Vec<&'p [u8]>,
    /// The parts of interpolations made by one instruction (`Op::InterpBegin` with parts).
    pub iparts: Vec<IOp<'p>>,
    pub paths: Vec<PathRef>,
    /// The keys of places (`PathRef`), in order: operand and spot. A constant or a
    /// variable is read where it is when the place is written (see `Compiler::path`).
    pub pkeys: Vec<(Opd, Spot)>,
    pub pcalls: Vec<PlaceCall>,
    /// Chains of reads (`Op::GetPath`) and their steps.
    pub rpaths: Vec<ReadPath>,
    pub rsteps: Vec<RStep<'p>>,
    /// Inline caches: per map read site (a field, an index, a place's step), the index
    /// in the map where its key was found last (`Map::get_cached`). A guess checked
    /// against the key before use, so a wrong one costs one compare.
    pub ic: Vec<crate::value::Site>,
    /// `try` handlers, innermost first (`Handler`), and the for-in bases they list.
    pub handlers: Vec<Handler>,
    pub forins: Vec<u32>,
    /// Locals (parameters first) and all registers.
    pub nlocals: u32,
    pub nregs: u32,
    /// The locals and the `for ... in` loops' registers: what a call's entry makes
    /// unset (a temporary is always written before it is read; these are not).
    pub nfixed: u32,
    /// The storage of the frame that runs this code, before its arguments: its names
    /// and slots (`Function::base_bytes`), read by a call here rather than from the
    /// program's function.
    pub base_bytes: usize,
}

impl Code<'_> {
    /// Place `p`'s keys: operand and spot of each, in order.
    #[inline(always)]
    pub fn place_keys(&self, p: &PathRef) -> &[(Opd, Spot)] {
        &self.pkeys[p.keys as usize..(p.keys + p.n) as usize]
    }

    /// Place `p`'s inline caches, one a key.
    #[inline(always)]
    pub fn place_ics(&self, p: &PathRef) -> &[crate::value::Site] {
        &self.ic[p.ic as usize..(p.ic + p.n) as usize]
    }

    /// The position of instruction `at`'s line.
    #[inline(always)]
    pub fn pos(&self, at: usize) -> Pos {
        self.ops[at].pos
    }
}
