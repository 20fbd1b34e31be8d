//! The validated program the evaluator runs: names resolved to slots, calls resolved to
//! function indices or builtin entries, constants folded. Built by `resolve.rs`; nothing
//! here is looked up by name while running.

use crate::ast::{BinOp, Pos, Spot};
use crate::builtins::Builtin;
use crate::source::SourceMap;
use crate::value::{Bytes, Value};

/// Where a variable lives: the current function's frame, or the globals (main's frame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    Local(u32),
    Global(u32),
}

/// An assignable place: a variable and a path of keys into it (`m.items[2]`).
#[derive(Debug, Clone)]
pub struct Place {
    pub root: Slot,
    /// Index or field keys; a field is a constant string key.
    pub path: Vec<Expr>,
}

/// An operand of a binary operator: a variable or a number constant held in the node
/// itself (the operand modes the compiler gives the instruction, as `Opd` has them),
/// anything else boxed. A chain like `x = a + b + 1 + ...` then takes one allocation per
/// operator, not two (the 4 MiB source limit's densest programs within the default
/// `--max-memory`, WORKLOG 2026-12-05, fourteenth session).
#[derive(Debug, Clone)]
pub enum Arg {
    Local(u32, Spot),
    Global(u32, Spot),
    Num(f64),
    Expr(Box<Expr>),
}

impl Arg {
    pub fn of(e: Expr) -> Arg {
        match e {
            Expr::Local(i, sp) => Arg::Local(i, sp),
            Expr::Global(i, sp) => Arg::Global(i, sp),
            Expr::Const(Value::Num(n)) => Arg::Num(n),
            e => Arg::Expr(Box::new(e)),
        }
    }
}

#[derive(Debug, Clone)]
pub enum IPart {
    Lit(Bytes),
    Expr(Expr),
}

/// An expression. Lists of operands are boxed slices (no spare capacity), and the node
/// is 40 bytes, so that the loaded program stays a small multiple of its source
/// (WORKLOG.md, "Memory"). `repr(u8)` keeps the variant in a plain first byte: left to
/// itself, the compiler would hide it in the niche of `BinS`'s first operand, and every
/// match on an expression would pay three more instructions to decode it.
#[derive(Debug, Clone)]
#[repr(u8)]
///
/// Nodes that can fail carry the `Spot` (column and width) of their operator, index,
/// name or callee, for the diagnostic; it is read only on the error path. In
/// `BuiltinPlace` it comes first, so that the node stays within 40 bytes.
pub enum Expr {
    Const(Value),
    Local(u32, Spot),
    Global(u32, Spot),
    List(Box<[Expr]>),
    Map(Box<[(Bytes, Expr)]>),
    Interp(Box<[IPart]>),
    Neg(Box<Expr>, Spot),
    Not(Box<Expr>),
    Bin(BinOp, Spot, Arg, Arg),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Index(Box<Expr>, Box<Expr>, Spot),
    Field(Box<Expr>, Bytes, Spot),
    /// A call of user function `.0`.
    Call(u32, Box<[Expr]>),
    /// A call of a builtin.
    Builtin(&'static Builtin, Box<[Expr]>, Spot),
    /// A call of a builtin whose first argument is a place it changes in place.
    BuiltinPlace(Spot, &'static Builtin, Box<Place>, Box<[Expr]>),
    /// `A if C else B`: (then, condition, else).
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// An anonymous function at a builtin's function parameter: the synthetic user
    /// function `.0` (its parameters, then one slot per captured variable) and the
    /// expressions whose values it captures, evaluated when the builtin call starts
    /// (`Interp::lambda`). Only inside a `WithLambdas` call.
    Lambda(u32, Box<[Expr]>),
    /// A builtin call with anonymous functions among its arguments: the captured values
    /// they hold live exactly as long as the call.
    WithLambdas(Box<Expr>),
}

pub type Block = Box<[Stmt]>;

#[derive(Debug, Clone)]
pub struct Stmt {
    pub pos: Pos,
    pub kind: StmtKind,
}

#[derive(Debug, Clone)]
pub struct Arm {
    pub pos: Pos,
    pub cond: Expr,
    pub body: Block,
}

#[derive(Debug, Clone)]
pub enum StmtKind {
    /// `x = e` for a local or global variable (the common case, kept apart for speed).
    SetLocal(u32, Expr),
    SetGlobal(u32, Expr),
    /// `x[k] = e` or `x.k = e`: one step into a variable (kept apart for speed).
    SetIndex(Slot, Expr, Expr),
    /// `PLACE = e` with a longer path.
    Assign(Box<Place>, Expr),
    /// `PLACE op= e`.
    Compound(Box<Place>, BinOp, Expr),
    /// `x op= e` on a variable.
    CompoundVar(Slot, BinOp, Expr),
    /// `a, b = x, y` (values: one per target) or `a, b = e` (one value, unpacked).
    MultiAssign(Box<[Place]>, Box<[Expr]>),
    /// A call statement.
    Expr(Expr),
    If(Box<[Arm]>, Option<Block>),
    While(Expr, Block),
    /// Boxed: a loop header runs once per loop, and inline it would make every
    /// statement as large as itself.
    ForRange(Box<ForRange>),
    ForIn(Box<ForIn>),
    Break,
    Continue,
    Return(Option<Expr>),
    Throw(Expr),
    Try {
        body: Block,
        var: Slot,
        handler: Block,
    },
    /// An included file's top level: costs no step itself.
    Block(Block),
}

#[derive(Debug, Clone)]
pub struct ForRange {
    pub var: Slot,
    pub start: Expr,
    pub end: Expr,
    pub step: Option<Expr>,
    pub body: Block,
}

#[derive(Debug, Clone)]
pub struct ForIn {
    pub first: Slot,
    pub second: Option<Slot>,
    pub iter: Expr,
    pub body: Block,
}

#[derive(Debug, Clone)]
pub struct Function {
    pub name: String,
    pub nparams: usize,
    /// Parameters first, then the other locals.
    pub slot_names: Vec<String>,
    /// Accounted storage of an empty frame: its name bytes and slots.
    pub base_bytes: usize,
    pub body: Block,
    pub pos: Pos,
}

/// Capabilities a program's calls reach (for `leash check`): a set of the one table's
/// capabilities (`crate::caps`).
pub use crate::caps::Caps;

/// A gated call in the loaded code (for `leash check --json`): where, which builtin,
/// and its first argument when that is a literal string.
#[derive(Debug, Clone)]
pub struct CallSite {
    pub file: String,
    pub line: u32,
    pub builtin: &'static str,
    pub cap: crate::builtins::Cap,
    pub target: Option<Vec<u8>>,
}

#[derive(Debug)]
pub struct Program {
    /// Every gated call site, in source order of resolution.
    pub sites: Vec<CallSite>,
    pub main: Block,
    pub global_names: Vec<String>,
    /// Accounted storage of main's frame before any variable holds a value.
    pub main_base_bytes: usize,
    pub funcs: Vec<Function>,
    pub caps: Caps,
    pub sources: SourceMap,
}
