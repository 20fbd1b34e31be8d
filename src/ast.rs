//! The syntax tree the parser produces: data only, names still as text.
//!
//! `resolve.rs` turns it into the program the evaluator runs (`program.rs`), with names
//! resolved to slots and calls to function indices.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ops::Range;
use std::rc::Rc;

use crate::lexer::Tok;

/// A name in an expression, interned: every use of one name shares one allocation, so
/// that a tree of many short names costs its nodes, not a string per use.
pub type Name = Rc<str>;

thread_local! {
    static NAMES: RefCell<HashSet<Rc<str>>> = RefCell::new(HashSet::new());
}

/// The shared copy of `s`.
pub fn intern(s: String) -> Name {
    NAMES.with(|t| {
        let mut t = t.borrow_mut();
        if let Some(n) = t.get(s.as_str()) {
            return n.clone();
        }
        let n: Name = Rc::from(s);
        t.insert(n.clone());
        n
    })
}

/// Forget the interned names (a load is over; its trees hold what they still need).
pub fn clear_names() {
    NAMES.with(|t| *t.borrow_mut() = HashSet::new());
}

/// Where within its line a node stands: its 1-based character column in the low 20
/// bits and its width in characters in the high 12 (0: not known). See `spot`.
pub type Spot = u32;

thread_local! {
    /// Set while `leash fmt` compares the program before and after formatting: columns
    /// are layout, not program, so every spot is then 0 (not known).
    static NO_SPOTS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Run `f` with spots off (see `NO_SPOTS`).
pub fn without_spots<T>(f: impl FnOnce() -> T) -> T {
    NO_SPOTS.with(|c| c.set(true));
    let r = f();
    NO_SPOTS.with(|c| c.set(false));
    r
}

/// The spot of a node at `column` (1-based, characters), `width` characters wide.
pub fn spot(column: u32, width: u32) -> Spot {
    if column == 0 || column >= 1 << 20 || NO_SPOTS.with(|c| c.get()) {
        return 0;
    }
    column | (width.clamp(1, 4095) << 20)
}

/// The column of a spot (None when not known).
pub fn spot_column(s: Spot) -> Option<u32> {
    let c = s & 0xF_FFFF;
    (c != 0).then_some(c)
}

/// The width of a spot in characters.
pub fn spot_width(s: Spot) -> u32 {
    (s >> 20).max(1)
}

/// A source position: a line number that is global over all loaded files
/// (see `source::SourceMap::locate`).
pub type Pos = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    /// `//`: floored division.
    FloorDiv,
    Mod,
    Pow,
    Concat,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    NotIn,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Mod => "%",
            Pow => "**",
            Concat => "..",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            In => "in",
            NotIn => "not in",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

/// One piece of an interpolated string.
#[derive(Debug, Clone, PartialEq)]
pub enum InterpPart {
    Lit(Vec<u8>),
    /// Tokens of `${...}` not parsed yet (the parser replaces them with `Expr`).
    Raw(Vec<Tok>, Vec<Range<usize>>),
    Expr(Expr),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(f64),
    Str(Vec<u8>),
    Interp(Vec<InterpPart>),
    Nil,
    Bool(bool),
    Name(Name, Spot),
    Paren(Box<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Vec<u8>, Expr)>),
    /// The spot of a unary or binary node is its operator's.
    Unary(UnOp, Box<Expr>, Spot),
    Binary(BinOp, Box<Expr>, Box<Expr>, Spot),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    /// The spot of a call is its callee's name (`f`, `ns.f`).
    Call(Box<Expr>, Vec<Expr>, Spot),
    /// The spot of an index is its `[`.
    Index(Box<Expr>, Box<Expr>, Spot),
    /// The spot of a field is its name.
    Field(Box<Expr>, Name, Spot),
    /// `A if C else B` (then, condition, else): only C and the chosen side are evaluated.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// An anonymous function `fn(PARAMS) => EXPR`, only at a builtin's function parameter.
    Lambda(Box<Lambda>),
}

/// An anonymous function: its parameters, its one-expression body, and the spot of its
/// `fn(PARAMS)` head.
#[derive(Debug, Clone, PartialEq)]
pub struct Lambda {
    pub params: Vec<Name>,
    pub body: Expr,
    pub spot: Spot,
}

impl Expr {
    /// Nesting depth as SPEC 3 counts it: parentheses, brackets, braces, call argument
    /// lists, interpolations and unary operators each add one level.
    pub fn depth(&self) -> usize {
        match self {
            Expr::Num(_) | Expr::Str(_) | Expr::Nil | Expr::Bool(_) | Expr::Name(..) => 0,
            Expr::Interp(parts) => parts
                .iter()
                .map(|p| match p {
                    InterpPart::Expr(e) => 1 + e.depth(),
                    _ => 1,
                })
                .max()
                .unwrap_or(0),
            Expr::Paren(e) | Expr::Unary(_, e, _) => 1 + e.depth(),
            Expr::List(items) => 1 + items.iter().map(Expr::depth).max().unwrap_or(0),
            Expr::Map(items) => 1 + items.iter().map(|(_, e)| e.depth()).max().unwrap_or(0),
            Expr::Binary(_, a, b, _) | Expr::And(a, b) | Expr::Or(a, b) => a.depth().max(b.depth()),
            Expr::Call(f, args, _) => f.depth().max(1 + args.iter().map(Expr::depth).max().unwrap_or(0)),
            Expr::Index(a, i, _) => a.depth().max(1 + i.depth()),
            Expr::Field(a, ..) => a.depth(),
            Expr::Cond(a, c, b) => a.depth().max(c.depth()).max(b.depth()),
            Expr::Lambda(l) => 1 + l.body.depth(),
        }
    }

    /// The dotted name of a call's callee (`f` or `ns.f`), if it is one.
    pub fn callee_name(&self) -> Option<String> {
        match self {
            Expr::Name(n, _) => Some(n.to_string()),
            Expr::Field(base, f, _) => match &**base {
                Expr::Name(ns, _) => Some(format!("{ns}.{f}")),
                _ => None,
            },
            _ => None,
        }
    }

    /// The spot of a callee (`f` or `ns.f`): from the first name to the last.
    pub fn callee_spot(&self) -> Spot {
        match self {
            Expr::Name(_, s) => *s,
            Expr::Field(base, _, s) => match &**base {
                Expr::Name(_, b) => match (spot_column(*b), spot_column(*s)) {
                    (Some(c), Some(e)) if e >= c => spot(c, e - c + spot_width(*s)),
                    _ => *s,
                },
                _ => *s,
            },
            _ => 0,
        }
    }
}

/// A statement with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    pub pos: Pos,
    pub kind: StmtKind,
}

#[derive(Debug, Clone, PartialEq)]
pub struct IfArm {
    pub pos: Pos,
    pub cond: Expr,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum StmtKind {
    /// `PLACE = EXPR` or `PLACE op= EXPR`.
    Assign {
        target: Expr,
        op: Option<BinOp>,
        value: Expr,
    },
    /// `a, b = x, y` (parallel assignment: every value first, then each target left to
    /// right) or `a, b = e` (unpacking: `e` must be a list of exactly that many items).
    /// At least two targets; one value, or as many values as targets.
    MultiAssign {
        targets: Vec<Expr>,
        values: Vec<Expr>,
    },
    /// A call on its own line.
    Call(Expr),
    If {
        arms: Vec<IfArm>,
        else_body: Option<Vec<Stmt>>,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
    },
    /// Boxed, so that every other statement is not as large as a loop header.
    ForRange(Box<ForRange>),
    ForIn(Box<ForIn>),
    Break,
    Continue,
    Return(Option<Expr>),
    Throw(Expr),
    Try {
        body: Vec<Stmt>,
        var: String,
        handler: Vec<Stmt>,
    },
    Global(Vec<String>),
    /// `include "PATH"` before the loader resolves it.
    IncludeReq(Vec<u8>),
    /// An included file's top-level statements, spliced where the include stood.
    Include(Vec<Stmt>),
    Import(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForRange {
    pub var: String,
    pub start: Expr,
    pub end: Expr,
    pub step: Option<Expr>,
    pub body: Vec<Stmt>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ForIn {
    pub first: String,
    pub second: Option<String>,
    pub iter: Expr,
    pub body: Vec<Stmt>,
}

/// A block's statements without spare capacity (blocks grow by pushing).
pub fn tight(mut v: Vec<Stmt>) -> Vec<Stmt> {
    v.shrink_to_fit();
    v
}

/// A function definition.
#[derive(Debug, Clone, PartialEq)]
pub struct FnDef {
    /// Its callable name (`f`, or `module.f` for stdlib module functions).
    pub name: String,
    pub params: Vec<String>,
    pub body: Vec<Stmt>,
    pub pos: Pos,
    /// The stdlib module it belongs to, if any (its own calls resolve there first).
    pub module: Option<String>,
}
