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

/// A source position: a line number that is global over all loaded files
/// (see `source::SourceMap::locate`).
pub type Pos = u32;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
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
    Name(Name),
    Paren(Box<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Vec<u8>, Expr)>),
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Call(Box<Expr>, Vec<Expr>),
    Index(Box<Expr>, Box<Expr>),
    Field(Box<Expr>, Name),
}

impl Expr {
    /// Nesting depth as SPEC 3 counts it: parentheses, brackets, braces, call argument
    /// lists, interpolations and unary operators each add one level.
    pub fn depth(&self) -> usize {
        match self {
            Expr::Num(_) | Expr::Str(_) | Expr::Nil | Expr::Bool(_) | Expr::Name(_) => 0,
            Expr::Interp(parts) => parts
                .iter()
                .map(|p| match p {
                    InterpPart::Expr(e) => 1 + e.depth(),
                    _ => 1,
                })
                .max()
                .unwrap_or(0),
            Expr::Paren(e) | Expr::Unary(_, e) => 1 + e.depth(),
            Expr::List(items) => 1 + items.iter().map(Expr::depth).max().unwrap_or(0),
            Expr::Map(items) => 1 + items.iter().map(|(_, e)| e.depth()).max().unwrap_or(0),
            Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => a.depth().max(b.depth()),
            Expr::Call(f, args) => f.depth().max(1 + args.iter().map(Expr::depth).max().unwrap_or(0)),
            Expr::Index(a, i) => a.depth().max(1 + i.depth()),
            Expr::Field(a, _) => a.depth(),
        }
    }

    /// The dotted name of a call's callee (`f` or `ns.f`), if it is one.
    pub fn callee_name(&self) -> Option<String> {
        match self {
            Expr::Name(n) => Some(n.to_string()),
            Expr::Field(base, f) => match &**base {
                Expr::Name(ns) => Some(format!("{ns}.{f}")),
                _ => None,
            },
            _ => None,
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
