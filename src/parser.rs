//! Parser: lines to statements, statements to blocks.
//!
//! Each line is lexed (`lexer.rs`) and parsed by a `chumsky` line parser whose
//! expressions use the Pratt precedence table of SPEC 3. The block builder then pairs
//! `if`/`elif`/`else`/`end`, loops, `try`/`catch`, and `fn` into a tree, checking
//! structure as it goes. Errors are collected (see `diag::LoadErrors`), and parsing goes
//! on after an error so that several can be reported at once.

use chumsky::extra;
use chumsky::input::ValueInput;
use chumsky::pratt::{infix, left, none, postfix, prefix, right};
use chumsky::prelude::*;
use std::ops::Range;

use crate::ast::*;
use crate::diag::{char_column, char_width, LoadError, LoadErrors, LoadKind};
use crate::lexer::{
    block_indent, block_opener, block_string, closes_block, lex_line, LexError, LexedLine, Part, StrLit, Tok,
};
use crate::limits::*;

type Extra<'a> = extra::Err<Rich<'a, Tok>>;

// Parse fuel. The combinator parser backtracks: on a line that does not parse, it tries
// every other reading of what came before the error, and nested calls whose arguments
// hold operator chains (`f(a - - - b(g(a - - - b(... %)))`) make that exponential (a
// 300-byte line ran for minutes; the `layout` fuzz target found it). So each statement
// gets fuel for 64 + 4 per token operand attempts: a statement that parses uses at most
// one per token (every statement of the repository's scripts, tests and fuzz corpus was
// measured: at most 0.7 per token beyond the first few, erroneous ones included). When
// the fuel runs out every attempt fails at once, and the statement is one syntax error
// saying so. With the expression-bytes limit and the 20 load errors after which loading
// stops, a load's parse work stays linear in its size (about 0.7 us per unit of fuel).
thread_local! {
    static FUEL: std::cell::Cell<u64> = const { std::cell::Cell::new(u64::MAX) };
}
const FUEL_BASE: u64 = 64;
const FUEL_PER_TOKEN: u64 = 4;
const OUT_OF_FUEL: &str = "statement too tangled to parse";

/// Run `parse` on `ntoks` tokens with their fuel; true as well when the fuel ran out.
fn fueled<T>(ntoks: usize, parse: impl FnOnce() -> T) -> (T, bool) {
    let fuel = FUEL_BASE + FUEL_PER_TOKEN * ntoks as u64;
    FUEL.with(|f| f.set(fuel));
    let r = parse();
    let left = FUEL.with(|f| f.replace(u64::MAX));
    (r, left == 0)
}

/// Burn one unit of fuel; false when there is none left.
fn burn() -> bool {
    FUEL.with(|f| {
        let n = f.get();
        f.set(n.saturating_sub(1));
        n > 0
    })
}

/// An expression with the token range it came from (for the expression-bytes limit).
#[derive(Debug, Clone)]
struct SExpr(Expr, Range<usize>);

/// One parsed line, before block structure is applied.
#[derive(Debug, Clone)]
enum Line {
    If(SExpr),
    Elif(SExpr),
    Else,
    End,
    While(SExpr),
    ForRange(String, SExpr, SExpr, Option<SExpr>),
    ForIn(String, Option<String>, SExpr),
    Break,
    Continue,
    Fn(String, Vec<String>),
    Return(Option<SExpr>),
    Global(Vec<String>),
    Try,
    Catch(String),
    Throw(SExpr),
    Include(Vec<u8>),
    Import(String),
    Assign(Expr, Option<BinOp>, SExpr),
    MultiAssign(Vec<Expr>, Vec<SExpr>),
    Call(SExpr),
}

/// A statement's text: its physical lines joined with `\n` (one line for most), and
/// where each line starts in it (byte, character) when there are several.
#[derive(Clone, Copy)]
struct Src<'a> {
    text: &'a str,
    starts: &'a [(usize, u32)],
}

impl Src<'_> {
    /// The 1-based character column of byte `b` within the statement's text (columns
    /// count on over the lines of a statement written over several; see
    /// `source::SourceMap::place`). Only the byte's own line is scanned.
    fn col(&self, b: usize) -> u32 {
        if self.starts.len() < 2 {
            return char_column(self.text, b);
        }
        let j = self.starts.partition_point(|s| s.0 <= b).saturating_sub(1);
        let (b0, c0) = self.starts[j];
        let end = self.starts.get(j + 1).map_or(self.text.len(), |s| s.0 - 1);
        c0 + char_column(&self.text[b0..end], b - b0)
    }

    /// The physical line (index from the statement's first) and 1-based column of byte `b`.
    fn place(&self, b: usize) -> (usize, u32) {
        let c = self.col(b);
        split_column(self.starts, c)
    }
}

/// A column counted over a statement's joined lines, as (line index, column in that line).
fn split_column(starts: &[(usize, u32)], col: u32) -> (usize, u32) {
    if starts.len() < 2 {
        return (0, col);
    }
    let j = starts.partition_point(|s| s.1 < col).saturating_sub(1);
    (j, col - starts[j].1)
}

/// Token spans and the statement's text, for turning token positions into spots
/// (columns and widths in characters) as nodes are built.
#[derive(Clone, Copy)]
struct Spots<'a> {
    spans: &'a [Range<usize>],
    src: Src<'a>,
}

impl Spots<'_> {
    /// The spot of the tokens `r` (token indices).
    fn of(&self, r: Range<usize>) -> Spot {
        let last = r.end.saturating_sub(1).max(r.start);
        match (self.spans.get(r.start), self.spans.get(last)) {
            (Some(a), Some(b)) => spot(self.src.col(a.start), char_width(self.src.text, a.start..b.end)),
            _ => 0,
        }
    }
}

// expr -> or-expr [ 'if' or-expr 'else' expr ]      (conditional, right-associative)
// or-expr -> by the precedence table of SPEC 3:
//   or < and < not < comparisons (non-associative) < .. (right) < + - < * / // %
//   < unary - < ** (right) < call, index, field
// atom -> literal | NAME | '(' expr ')' | list | map | lambda
// lambda -> 'fn' '(' [NAME {',' NAME}] ')' '=>' expr
fn expr_parser<'a, I>(sp: Spots<'a>) -> impl Parser<'a, I, Expr, Extra<'a>> + Clone
where
    I: ValueInput<'a, Token = Tok, Span = SimpleSpan>,
{
    let at = move |s: SimpleSpan| sp.of(s.start..s.end);
    recursive(move |expr| {
        let ident = select! { Tok::Ident(s) => s };
        let literal = select! {
            Tok::Num(n) => Expr::Num(n),
            Tok::Str(StrLit::Plain(b)) => Expr::Str(b),
            Tok::Str(StrLit::Interp(parts)) => Expr::Interp(parts.into_iter().map(|p| match p {
                Part::Lit(b) => InterpPart::Lit(b),
                Part::Code(t, s) => InterpPart::Raw(t, s),
            }).collect()),
            Tok::Nil => Expr::Nil,
            Tok::True => Expr::Bool(true),
            Tok::False => Expr::Bool(false),
        };
        let items = expr.clone().separated_by(just(Tok::Comma)).allow_trailing().collect::<Vec<_>>();
        let list = items.clone().delimited_by(just(Tok::LBracket), just(Tok::RBracket)).map(Expr::List);
        let key = select! {
            Tok::Ident(s) => s.into_bytes(),
            Tok::Str(StrLit::Plain(b)) => b,
        };
        let map = key
            .then_ignore(just(Tok::Colon))
            .then(expr.clone())
            .separated_by(just(Tok::Comma))
            .allow_trailing()
            .collect::<Vec<_>>()
            .delimited_by(just(Tok::LBrace), just(Tok::RBrace))
            .map(Expr::Map);
        let paren = expr.clone().delimited_by(just(Tok::LParen), just(Tok::RParen)).map(|e| Expr::Paren(Box::new(e)));
        let name = ident.map_with(move |s, x| Expr::Name(intern(s), at(x.span())));
        let fuel = empty().try_map(|(), s: SimpleSpan| if burn() { Ok(()) } else { Err(Rich::custom(s, OUT_OF_FUEL)) });
        let params = ident
            .map(intern)
            .separated_by(just(Tok::Comma))
            .collect::<Vec<_>>()
            .delimited_by(just(Tok::LParen), just(Tok::RParen));
        let lambda = just(Tok::Fn)
            .ignore_then(params)
            .map_with(move |p, x| (p, at(x.span())))
            .then_ignore(just(Tok::Arrow))
            .then(expr.clone())
            .map(|((params, spot), body)| Expr::Lambda(Box::new(Lambda { params, body, spot })));
        let atom = fuel.ignore_then(choice((literal, name, paren, list, map, lambda)));

        let args = items.delimited_by(just(Tok::LParen), just(Tok::RParen)).map_with(|a, x| {
            let s: SimpleSpan = x.span();
            (a, s.start)
        });
        let index = expr.clone().delimited_by(just(Tok::LBracket), just(Tok::RBracket)).map_with(move |i, x| {
            let s: SimpleSpan = x.span();
            (i, sp.of(s.start..s.start + 1))
        });
        let field = just(Tok::Dot).ignore_then(ident.map_with(move |n, x| (intern(n), at(x.span()))));
        let mul_op = select! {
            Tok::Star => BinOp::Mul, Tok::Slash => BinOp::Div, Tok::SlashSlash => BinOp::FloorDiv,
            Tok::Percent => BinOp::Mod,
        }
        .map_with(move |o, x| (o, at(x.span())));
        let add_op =
            select! { Tok::Plus => BinOp::Add, Tok::Minus => BinOp::Sub }.map_with(move |o, x| (o, at(x.span())));
        let cmp_op = choice((
            select! {
                Tok::Eq => BinOp::Eq, Tok::Ne => BinOp::Ne, Tok::Lt => BinOp::Lt, Tok::Le => BinOp::Le,
                Tok::Gt => BinOp::Gt, Tok::Ge => BinOp::Ge, Tok::In => BinOp::In,
            },
            just(Tok::Not).then(just(Tok::In)).to(BinOp::NotIn),
        ))
        .map_with(move |o, x| (o, at(x.span())));
        let tok_at = move |t: Tok| just(t).map_with(move |_, x| at(x.span()));
        let bin = |op: BinOp, l: Expr, r: Expr, s: Spot| Expr::Binary(op, Box::new(l), Box::new(r), s);
        let ops = atom.pratt((
            postfix(10, args, move |f, (a, open): (Vec<Expr>, usize), x| {
                let s: SimpleSpan = x.span();
                let callee = sp.of(s.start..open.max(s.start + 1));
                Expr::Call(Box::new(f), a, callee)
            }),
            postfix(10, index, |x, (i, s), _| Expr::Index(Box::new(x), Box::new(i), s)),
            postfix(10, field, |x, (n, s), _| Expr::Field(Box::new(x), n, s)),
            infix(right(9), tok_at(Tok::Pow), move |l, s, r, _| bin(BinOp::Pow, l, r, s)),
            prefix(8, tok_at(Tok::Minus), |s, e, _| Expr::Unary(UnOp::Neg, Box::new(e), s)),
            infix(left(7), mul_op, move |l, (op, s), r, _| bin(op, l, r, s)),
            infix(left(6), add_op, move |l, (op, s), r, _| bin(op, l, r, s)),
            infix(right(5), tok_at(Tok::Concat), move |l, s, r, _| bin(BinOp::Concat, l, r, s)),
            infix(none(4), cmp_op, move |l, (op, s), r, _| bin(op, l, r, s)),
            prefix(3, tok_at(Tok::Not), |s, e, _| Expr::Unary(UnOp::Not, Box::new(e), s)),
            infix(left(2), just(Tok::And), |l, _, r, _| Expr::And(Box::new(l), Box::new(r))),
            infix(left(1), just(Tok::Or), |l, _, r, _| Expr::Or(Box::new(l), Box::new(r))),
        ));
        ops.clone().then(just(Tok::If).ignore_then(ops).then_ignore(just(Tok::Else)).then(expr).or_not()).map(
            |(a, rest)| match rest {
                Some((c, b)) => Expr::Cond(Box::new(a), Box::new(c), Box::new(b)),
                None => a,
            },
        )
    })
}

fn line_parser<'a, I>(sp: Spots<'a>) -> impl Parser<'a, I, Line, Extra<'a>> + Clone
where
    I: ValueInput<'a, Token = Tok, Span = SimpleSpan>,
{
    let at = move |s: SimpleSpan| sp.of(s.start..s.end);
    let expr = expr_parser::<I>(sp);
    let sexpr = expr.clone().map_with(|e, x| {
        let sp: SimpleSpan = x.span();
        SExpr(e, sp.start..sp.end)
    });
    let ident = select! { Tok::Ident(s) => s };

    // place -> NAME ( '[' expr ']' | '.' NAME )*
    let place = ident.map_with(move |s, x| Expr::Name(intern(s), at(x.span()))).foldl(
        choice((
            expr.clone().delimited_by(just(Tok::LBracket), just(Tok::RBracket)).map_with(move |i, x| {
                let s: SimpleSpan = x.span();
                (Some(i), None, sp.of(s.start..s.start + 1))
            }),
            just(Tok::Dot).ignore_then(ident.map_with(move |n, x| (None, Some(intern(n)), at(x.span())))),
        ))
        .repeated(),
        |base, step| match step {
            (Some(i), _, s) => Expr::Index(Box::new(base), Box::new(i), s),
            (_, Some(n), s) => Expr::Field(Box::new(base), n, s),
            _ => base,
        },
    );
    let assign_op = select! {
        Tok::Assign => None,
        Tok::PlusAssign => Some(BinOp::Add),
        Tok::MinusAssign => Some(BinOp::Sub),
        Tok::StarAssign => Some(BinOp::Mul),
        Tok::SlashAssign => Some(BinOp::Div),
        Tok::SlashSlashAssign => Some(BinOp::FloorDiv),
        Tok::PercentAssign => Some(BinOp::Mod),
        Tok::ConcatAssign => Some(BinOp::Concat),
    };
    // assign -> place {',' place} ASSIGN_OP expr {',' expr}
    // One target and one value is an assignment (`x = e`, `x += e`); more on either side
    // a parallel assignment or an unpacking (`a, b = b, a`; `lo, hi = bounds(xs)`).
    let assign = place
        .separated_by(just(Tok::Comma))
        .at_least(1)
        .collect::<Vec<_>>()
        .then(assign_op)
        .then(sexpr.clone().separated_by(just(Tok::Comma)).at_least(1).collect::<Vec<_>>())
        .try_map(|((mut t, op), mut v), s| match (t.len(), v.len(), op) {
            (1, 1, _) => Ok(Line::Assign(t.pop().expect("one"), op, v.pop().expect("one"))),
            (_, _, None) => Ok(Line::MultiAssign(t, v)),
            _ => Err(Rich::custom(s, "a compound assignment takes one target and one value")),
        });

    let for_range = just(Tok::For)
        .ignore_then(ident)
        .then_ignore(just(Tok::Assign))
        .then(sexpr.clone())
        .then_ignore(just(Tok::To))
        .then(sexpr.clone())
        .then(just(Tok::Step).ignore_then(sexpr.clone()).or_not())
        .map(|(((v, a), b), s)| Line::ForRange(v, a, b, s));
    let for_in = just(Tok::For)
        .ignore_then(ident)
        .then(just(Tok::Comma).ignore_then(ident).or_not())
        .then_ignore(just(Tok::In))
        .then(sexpr.clone())
        .map(|((a, b), e)| Line::ForIn(a, b, e));
    let params =
        ident.separated_by(just(Tok::Comma)).collect::<Vec<_>>().delimited_by(just(Tok::LParen), just(Tok::RParen));
    let path = select! { Tok::Str(StrLit::Plain(b)) => b };

    choice((
        just(Tok::If).ignore_then(sexpr.clone()).map(Line::If),
        just(Tok::Elif).ignore_then(sexpr.clone()).map(Line::Elif),
        just(Tok::Else).to(Line::Else),
        just(Tok::End).to(Line::End),
        just(Tok::While).ignore_then(sexpr.clone()).map(Line::While),
        for_range,
        for_in,
        just(Tok::Break).to(Line::Break),
        just(Tok::Continue).to(Line::Continue),
        just(Tok::Fn).ignore_then(ident).then(params).map(|(n, p)| Line::Fn(n, p)),
        just(Tok::Return)
            .ignore_then(sexpr.clone().separated_by(just(Tok::Comma)).at_least(1).collect::<Vec<_>>().or_not())
            .map(|v| Line::Return(v.map(list_of))),
        just(Tok::Global)
            .ignore_then(ident.separated_by(just(Tok::Comma)).at_least(1).collect::<Vec<_>>())
            .map(Line::Global),
        just(Tok::Try).to(Line::Try),
        just(Tok::Catch).ignore_then(ident).map(Line::Catch),
        just(Tok::Throw).ignore_then(sexpr.clone()).map(Line::Throw),
        just(Tok::Include).ignore_then(path).map(Line::Include),
        just(Tok::Import).ignore_then(ident).map(Line::Import),
        assign,
        sexpr.map(Line::Call),
    ))
    .then_ignore(end())
}

/// `return a, b`: one expression, or the list of several (its range spans them all).
fn list_of(mut v: Vec<SExpr>) -> SExpr {
    if v.len() == 1 {
        return v.pop().expect("one");
    }
    let r = v[0].1.start..v.last().map_or(0, |e| e.1.end);
    SExpr(Expr::List(v.into_iter().map(|e| e.0).collect()), r)
}

/// The keyword a line starts with decides its block role even when the rest of the
/// line does not parse, so that one bad line does not derail the structure.
fn fallback_line(first: Option<&Tok>) -> Option<Line> {
    let dummy = || SExpr(Expr::Nil, 0..0);
    Some(match first? {
        Tok::If => Line::If(dummy()),
        Tok::Elif => Line::Elif(dummy()),
        Tok::Else => Line::Else,
        Tok::End => Line::End,
        Tok::While => Line::While(dummy()),
        Tok::For => Line::ForIn("_".into(), None, dummy()),
        Tok::Fn => Line::Fn(String::new(), vec![]),
        Tok::Try => Line::Try,
        Tok::Catch => Line::Catch("_".into()),
        _ => return None,
    })
}

/// `fallback_line`, and for a line that starts as an assignment (`NAME =`, `NAME +=`)
/// or names its loop or catch variable, a line that binds that name: so that a line that
/// does not parse does not also make every later read of its name an error.
fn fallback_from(toks: &[Tok]) -> Option<Line> {
    let dummy = || SExpr(Expr::Nil, 0..0);
    let assign_op = |t: Option<&Tok>| match t {
        Some(Tok::Assign) => Some(None),
        Some(Tok::PlusAssign) => Some(Some(BinOp::Add)),
        Some(Tok::MinusAssign) => Some(Some(BinOp::Sub)),
        Some(Tok::StarAssign) => Some(Some(BinOp::Mul)),
        Some(Tok::SlashAssign) => Some(Some(BinOp::Div)),
        Some(Tok::SlashSlashAssign) => Some(Some(BinOp::FloorDiv)),
        Some(Tok::PercentAssign) => Some(Some(BinOp::Mod)),
        Some(Tok::ConcatAssign) => Some(Some(BinOp::Concat)),
        _ => None,
    };
    match (toks.first(), toks.get(1)) {
        (Some(Tok::Ident(n)), t) if assign_op(t).is_some() => {
            let op = assign_op(t).flatten();
            Some(Line::Assign(Expr::Name(intern(n.clone()), 0), op, dummy()))
        }
        (Some(Tok::For), Some(Tok::Ident(n))) => {
            let second = match (toks.get(2), toks.get(3)) {
                (Some(Tok::Comma), Some(Tok::Ident(m))) => Some(m.clone()),
                _ => None,
            };
            Some(Line::ForIn(n.clone(), second, dummy()))
        }
        (Some(Tok::Catch), Some(Tok::Ident(n))) => Some(Line::Catch(n.clone())),
        // `fn(x) => ...` at the start of a line is an anonymous function, not a definition.
        (Some(Tok::Fn), Some(Tok::LParen)) => None,
        (first, _) => fallback_line(first),
    }
}

fn syntax_message(e: &Rich<'_, Tok>) -> String {
    match e.found() {
        Some(t) => format!("unexpected {}", t.describe()),
        None => "unexpected end of line".to_string(),
    }
}

/// An open block while building the tree.
enum Open {
    If { arms: Vec<IfArm>, else_body: Option<Vec<Stmt>>, pos: Pos },
    While { cond: Expr, body: Vec<Stmt>, pos: Pos },
    ForRange { var: String, start: Expr, end: Expr, step: Option<Expr>, body: Vec<Stmt>, pos: Pos },
    ForIn { first: String, second: Option<String>, iter: Expr, body: Vec<Stmt>, pos: Pos },
    Try { body: Vec<Stmt>, var: Option<String>, handler: Vec<Stmt>, pos: Pos },
    Fn { name: String, params: Vec<String>, body: Vec<Stmt>, pos: Pos },
}

impl Open {
    fn body(&mut self) -> &mut Vec<Stmt> {
        match self {
            Open::If { arms, else_body, .. } => match else_body {
                Some(b) => b,
                None => &mut arms.last_mut().expect("if has an arm").body,
            },
            Open::While { body, .. }
            | Open::ForRange { body, .. }
            | Open::ForIn { body, .. }
            | Open::Fn { body, .. } => body,
            Open::Try { body, var, handler, .. } => {
                if var.is_some() {
                    handler
                } else {
                    body
                }
            }
        }
    }
    fn pos(&self) -> Pos {
        match self {
            Open::If { pos, .. }
            | Open::While { pos, .. }
            | Open::ForRange { pos, .. }
            | Open::ForIn { pos, .. }
            | Open::Try { pos, .. }
            | Open::Fn { pos, .. } => *pos,
        }
    }
    fn keyword(&self) -> &'static str {
        match self {
            Open::If { .. } => "if",
            Open::While { .. } => "while",
            Open::ForRange { .. } | Open::ForIn { .. } => "for",
            Open::Try { .. } => "try",
            Open::Fn { .. } => "fn",
        }
    }
    fn is_loop(&self) -> bool {
        matches!(self, Open::While { .. } | Open::ForRange { .. } | Open::ForIn { .. })
    }
}

/// The statements and functions of one source file.
#[derive(Debug, Default)]
pub struct ParsedFile {
    pub top: Vec<Stmt>,
    pub fns: Vec<FnDef>,
}

struct FileParser<'e> {
    file: String,
    base: Pos,
    errors: &'e mut LoadErrors,
    stack: Vec<Open>,
    out: ParsedFile,
    /// Block depth not counting `fn`.
    depth: usize,
    /// The file's end was read as part of an unfinished statement (`Fatal`): blocks left
    /// open are closed without an error (their `end` was swallowed).
    truncated: bool,
}

impl FileParser<'_> {
    fn err(&mut self, kind: LoadKind, msg: impl Into<String>, line: usize) {
        self.errors.push(LoadError::new(kind, msg, &self.file, line as u32));
    }

    fn pos(&self, line: usize) -> Pos {
        self.base + line as u32
    }

    fn line_of(&self, pos: Pos) -> usize {
        (pos - self.base) as usize
    }

    fn push_stmt(&mut self, s: Stmt) {
        match self.stack.last_mut() {
            Some(open) => open.body().push(s),
            None => self.out.top.push(s),
        }
    }

    fn in_fn(&self) -> bool {
        self.stack.iter().any(|o| matches!(o, Open::Fn { .. }))
    }

    fn in_loop(&self) -> bool {
        for o in self.stack.iter().rev() {
            if o.is_loop() {
                return true;
            }
            if matches!(o, Open::Fn { .. }) {
                return false;
            }
        }
        false
    }

    fn open(&mut self, o: Open, line: usize) {
        if !matches!(o, Open::Fn { .. }) {
            self.depth += 1;
            if self.depth == MAX_NESTING + 1 {
                self.err(
                    LoadKind::Limit(LimitKind::Nesting),
                    format!("blocks nested too deeply (limit is {MAX_NESTING})"),
                    line,
                );
            }
        }
        self.stack.push(o);
    }

    fn close(&mut self, line: usize) {
        let Some(o) = self.stack.pop() else {
            self.err(LoadKind::Structure, "`end` without an open block", line);
            return;
        };
        if !matches!(o, Open::Fn { .. }) {
            self.depth -= 1;
        }
        let stmt = |pos, kind| Stmt { pos, kind };
        match o {
            Open::If { mut arms, else_body, pos } => {
                for a in arms.iter_mut() {
                    a.body.shrink_to_fit();
                }
                arms.shrink_to_fit();
                self.push_stmt(stmt(pos, StmtKind::If { arms, else_body: else_body.map(tight) }))
            }
            Open::While { cond, body, pos } => self.push_stmt(stmt(pos, StmtKind::While { cond, body: tight(body) })),
            Open::ForRange { var, start, end, step, body, pos } => self.push_stmt(stmt(
                pos,
                StmtKind::ForRange(Box::new(ForRange { var, start, end, step, body: tight(body) })),
            )),
            Open::ForIn { first, second, iter, body, pos } => {
                self.push_stmt(stmt(pos, StmtKind::ForIn(Box::new(ForIn { first, second, iter, body: tight(body) }))))
            }
            Open::Try { body, var, handler, pos } => match var {
                Some(var) => {
                    self.push_stmt(stmt(pos, StmtKind::Try { body: tight(body), var, handler: tight(handler) }))
                }
                None => {
                    let l = self.line_of(pos);
                    self.err(LoadKind::Structure, "`try` without `catch`", l);
                }
            },
            Open::Fn { name, params, body, pos } => {
                if !name.is_empty() {
                    self.out.fns.push(FnDef { name, params, body: tight(body), pos, module: None });
                }
            }
        }
    }

    /// Apply one parsed line to the block structure.
    fn apply(&mut self, line_no: usize, line: Line) {
        let pos = self.pos(line_no);
        match line {
            Line::If(c) => self
                .open(Open::If { arms: vec![IfArm { pos, cond: c.0, body: vec![] }], else_body: None, pos }, line_no),
            Line::Elif(c) => match self.stack.last_mut() {
                Some(Open::If { arms, else_body: None, .. }) => arms.push(IfArm { pos, cond: c.0, body: vec![] }),
                Some(Open::If { .. }) => self.err(LoadKind::Structure, "`elif` after `else`", line_no),
                _ => self.err(LoadKind::Structure, "`elif` without `if`", line_no),
            },
            Line::Else => match self.stack.last_mut() {
                Some(Open::If { else_body: e @ None, .. }) => *e = Some(vec![]),
                Some(Open::If { .. }) => self.err(LoadKind::Structure, "a second `else`", line_no),
                _ => self.err(LoadKind::Structure, "`else` without `if`", line_no),
            },
            Line::End => self.close(line_no),
            Line::While(c) => self.open(Open::While { cond: c.0, body: vec![], pos }, line_no),
            Line::ForRange(var, a, b, s) => self
                .open(Open::ForRange { var, start: a.0, end: b.0, step: s.map(|s| s.0), body: vec![], pos }, line_no),
            Line::ForIn(first, second, e) => {
                self.open(Open::ForIn { first, second, iter: e.0, body: vec![], pos }, line_no)
            }
            Line::Try => self.open(Open::Try { body: vec![], var: None, handler: vec![], pos }, line_no),
            Line::Catch(name) => match self.stack.last_mut() {
                Some(Open::Try { var: v @ None, .. }) => *v = Some(name),
                Some(Open::Try { .. }) => self.err(LoadKind::Structure, "a second `catch`", line_no),
                _ => self.err(LoadKind::Structure, "`catch` without `try`", line_no),
            },
            Line::Fn(name, params) => {
                if !self.stack.is_empty() {
                    self.err(LoadKind::Structure, "`fn` is allowed only at top level", line_no);
                }
                if params.len() > MAX_PARAMS {
                    self.err(
                        LoadKind::Limit(LimitKind::Params),
                        format!("function `{name}` has {} parameters (limit is {MAX_PARAMS})", params.len()),
                        line_no,
                    );
                }
                self.open(Open::Fn { name, params, body: vec![], pos }, line_no)
            }
            Line::Break | Line::Continue => {
                let word = if matches!(line, Line::Break) { "break" } else { "continue" };
                if !self.in_loop() {
                    self.err(LoadKind::Structure, format!("`{word}` outside a loop"), line_no);
                    return;
                }
                let kind = if word == "break" { StmtKind::Break } else { StmtKind::Continue };
                self.push_stmt(Stmt { pos, kind });
            }
            Line::Return(e) => {
                if !self.in_fn() {
                    self.err(LoadKind::Structure, "`return` outside a function", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::Return(e.map(|e| e.0)) });
            }
            Line::Global(names) => {
                if !self.in_fn() {
                    self.err(LoadKind::Structure, "`global` outside a function", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::Global(names) });
            }
            Line::Throw(e) => self.push_stmt(Stmt { pos, kind: StmtKind::Throw(e.0) }),
            Line::Include(path) => {
                if !self.stack.is_empty() {
                    self.err(LoadKind::Structure, "`include` is allowed only at top level", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::IncludeReq(path) });
            }
            Line::Import(name) => {
                if !self.stack.is_empty() {
                    self.err(LoadKind::Structure, "`import` is allowed only at top level", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::Import(name) });
            }
            Line::Assign(target, op, value) => {
                self.push_stmt(Stmt { pos, kind: StmtKind::Assign { target, op, value: value.0 } })
            }
            Line::MultiAssign(targets, values) => {
                if targets.len() == 1 {
                    let n = values.len();
                    let le = LoadError::new(
                        LoadKind::Syntax,
                        format!("one target but {n} values: a name holds one value"),
                        &self.file,
                        line_no as u32,
                    );
                    self.errors
                        .push(le.help("write a list in brackets (`x = [a, b]`), or name a target for each value"));
                    return;
                }
                if values.len() > 1 && values.len() != targets.len() {
                    let (t, v) = (targets.len(), values.len());
                    self.err(
                        LoadKind::Syntax,
                        format!("{t} targets but {v} values: give each target one value"),
                        line_no,
                    );
                    return;
                }
                let values = values.into_iter().map(|v| v.0).collect();
                self.push_stmt(Stmt { pos, kind: StmtKind::MultiAssign { targets, values } })
            }
            Line::Call(e) => {
                if matches!(e.0, Expr::Call(..)) {
                    self.push_stmt(Stmt { pos, kind: StmtKind::Call(e.0) });
                } else if matches!(e.0, Expr::Lambda(..)) {
                    let msg = "an anonymous function can only be the argument of a builtin that takes a function";
                    self.err(LoadKind::Syntax, msg, line_no);
                } else {
                    self.err(LoadKind::Syntax, "only a call can stand alone as a statement", line_no);
                }
            }
        }
    }

    fn finish(mut self) -> ParsedFile {
        if self.errors.stop {
            // Loading ends here (too many errors, or the memory budget): nothing more to say.
            return self.out;
        }
        while let Some(o) = self.stack.last_mut() {
            let (pos, kw) = (o.pos(), o.keyword());
            if let Open::Try { var: v @ None, .. } = o {
                *v = Some("_".into()); // reported once, as the unclosed block
            }
            let l = self.line_of(pos);
            if !self.truncated {
                self.err(LoadKind::Structure, format!("`{kw}` block is never closed with `end`"), l);
            }
            // Close it anyway, so that what it holds is still validated.
            self.close(l);
        }
        self.out.top.shrink_to_fit();
        self.out
    }
}

/// Parse the expressions of interpolations (`InterpPart::Raw`) inside `e`.
fn finish_interp(e: &mut Expr, depth_budget: usize, src: Src) -> Result<(), (LoadKind, String)> {
    let mut r = Ok(());
    visit_mut(e, &mut |x| {
        if r.is_err() {
            return;
        }
        if let Expr::Interp(parts) = x {
            for p in parts.iter_mut() {
                if let InterpPart::Raw(toks, spans) = p {
                    match parse_expr_tokens(toks, spans, src, depth_budget) {
                        Ok(inner) => *p = InterpPart::Expr(inner),
                        Err(err) => {
                            r = Err(err);
                            return;
                        }
                    }
                }
            }
        }
    });
    r
}

fn visit_mut(e: &mut Expr, f: &mut impl FnMut(&mut Expr)) {
    f(e);
    match e {
        Expr::Paren(a) | Expr::Unary(_, a, _) | Expr::Field(a, ..) => visit_mut(a, f),
        Expr::List(items) => items.iter_mut().for_each(|x| visit_mut(x, f)),
        Expr::Map(items) => items.iter_mut().for_each(|(_, x)| visit_mut(x, f)),
        Expr::Binary(_, a, b, _) | Expr::And(a, b) | Expr::Or(a, b) | Expr::Index(a, b, _) => {
            visit_mut(a, f);
            visit_mut(b, f);
        }
        Expr::Call(c, args, _) => {
            visit_mut(c, f);
            args.iter_mut().for_each(|x| visit_mut(x, f));
        }
        Expr::Cond(a, c, b) => {
            visit_mut(a, f);
            visit_mut(c, f);
            visit_mut(b, f);
        }
        Expr::Lambda(l) => visit_mut(&mut l.body, f),
        _ => {}
    }
}

/// Bracket nesting of a token list: a cheap lower bound of expression depth, checked
/// before parsing so that hostile nesting never reaches the recursive parser.
fn bracket_depth(toks: &[Tok]) -> usize {
    let (mut d, mut max) = (0usize, 0usize);
    for t in toks {
        match t {
            Tok::LParen | Tok::LBracket | Tok::LBrace => {
                d += 1;
                max = max.max(d);
            }
            Tok::RParen | Tok::RBracket | Tok::RBrace => d = d.saturating_sub(1),
            _ => {}
        }
    }
    max
}

fn out_of_fuel_message() -> String {
    format!(
        "{OUT_OF_FUEL}: it has an error, and the parser gave up looking for where (check its brackets and operators)"
    )
}

fn depth_error() -> (LoadKind, String) {
    (LoadKind::Limit(LimitKind::ExprDepth), format!("expression nested too deeply (limit is {MAX_EXPR_DEPTH})"))
}

/// Parse a bare expression from tokens (interpolations).
fn parse_expr_tokens(
    toks: &[Tok],
    spans: &[Range<usize>],
    src: Src,
    depth_budget: usize,
) -> Result<Expr, (LoadKind, String)> {
    if toks.is_empty() {
        return Err((LoadKind::Syntax, "empty interpolation `${}`".into()));
    }
    if bracket_depth(toks) > depth_budget {
        return Err(depth_error());
    }
    let p = expr_parser::<&[Tok]>(Spots { spans, src }).then_ignore(end());
    let (parsed, out_of_fuel) = fueled(toks.len(), || p.parse(toks).into_result());
    if out_of_fuel {
        return Err((LoadKind::Syntax, out_of_fuel_message()));
    }
    let mut e = parsed.map_err(|errs| (LoadKind::Syntax, errs.first().map(syntax_message).unwrap_or_default()))?;
    finish_interp(&mut e, depth_budget.saturating_sub(1), src)?;
    if e.depth() > depth_budget {
        return Err(depth_error());
    }
    Ok(e)
}

/// Check an expression of a statement against the expression limits and parse its
/// interpolations.
fn check_expr(se: &mut SExpr, lexed: &LexedLine, src: Src) -> Result<(), (LoadKind, String)> {
    let range = se.1.clone();
    if !range.is_empty() {
        let n = range.len();
        let bytes: usize = lexed.spans[range].iter().map(|s| s.len()).sum::<usize>() + n - 1;
        if bytes > MAX_EXPR_BYTES {
            return Err((
                LoadKind::Limit(LimitKind::ExprBytes),
                format!("expression of {bytes} bytes (limit is {MAX_EXPR_BYTES})"),
            ));
        }
    }
    finish_interp(&mut se.0, MAX_EXPR_DEPTH - 1, src)?;
    if se.0.depth() > MAX_EXPR_DEPTH {
        return Err(depth_error());
    }
    Ok(())
}

fn check_line(line: &mut Line, lexed: &LexedLine, src: Src) -> Result<(), (LoadKind, String)> {
    let mut exprs: Vec<&mut SExpr> = Vec::new();
    match line {
        Line::If(e) | Line::Elif(e) | Line::While(e) | Line::Throw(e) | Line::Call(e) => exprs.push(e),
        Line::ForRange(_, a, b, s) => {
            exprs.push(a);
            exprs.push(b);
            if let Some(s) = s {
                exprs.push(s);
            }
        }
        Line::ForIn(_, _, e) => exprs.push(e),
        Line::Return(Some(e)) => exprs.push(e),
        Line::Assign(target, _, v) => {
            let mut t = SExpr(std::mem::replace(target, Expr::Nil), 0..0);
            let r = check_expr(&mut t, lexed, src);
            *target = t.0;
            r?;
            exprs.push(v);
        }
        Line::MultiAssign(targets, vs) => {
            for target in targets.iter_mut() {
                let mut t = SExpr(std::mem::replace(target, Expr::Nil), 0..0);
                let r = check_expr(&mut t, lexed, src);
                *target = t.0;
                r?;
            }
            exprs.extend(vs.iter_mut());
        }
        _ => {}
    }
    for e in exprs {
        check_expr(e, lexed, src)?;
    }
    Ok(())
}

fn lex_kind(e: &LexError) -> LoadKind {
    match e {
        LexError::IdentTooLong => LoadKind::Limit(LimitKind::Identifier),
        LexError::TooDeep => LoadKind::Limit(LimitKind::ExprDepth),
        LexError::TooManyTokens => LoadKind::Limit(LimitKind::Tokens),
        _ => LoadKind::Syntax,
    }
}

/// One statement's physical lines, lexed (SPEC 2): a statement continues onto the next
/// line while a `(`, `[` or `{` is open, and a block string's content lines and closing
/// delimiter belong to the statement that opens it.
struct Gathered {
    /// The index of its last physical line.
    last: usize,
    /// Its tokens, with spans into its lines joined by `\n`.
    lexed: LexedLine,
    /// A failure found while gathering (a line that does not lex, a bracket or block
    /// string open at the end of the file, bad block string content): it is reported
    /// instead of parsing the statement.
    fail: Option<LoadError>,
    /// The statement could not be delimited: see `Fatal`.
    fatal: Fatal,
}

/// Why a statement could not be delimited.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Fatal {
    No,
    /// The load's memory budget is exhausted: loading stops.
    Memory,
    /// A bracket is still open at the end of the file: every line after the opener was
    /// taken as part of the statement. They are read again, one statement per line,
    /// only to keep the structure (blocks, functions, assigned names) for the checks
    /// that follow; their own syntax errors are not reported (they would mostly be
    /// consequences of the missing closer).
    Bracket,
    /// A block string is never closed: its lines after the opener are its content (text,
    /// not code), so nothing after the opener is read.
    Block,
}

/// An upper bound on the token text of a statement whose expressions all fit the
/// expression-bytes limit (at most three expressions, and a few keywords besides): a
/// statement past it is refused without holding more of its tokens.
const MAX_STMT_TOKEN_BYTES: usize = 3 * (MAX_EXPR_BYTES + 1) + 2 * MAX_IDENT_BYTES + 64;

/// Gather the statement that starts at physical line `first` (0-based; it has tokens).
/// With `single`, the statement ends with its first line (and the block string it opens).
fn gather(file: &str, lines: &[&str], first: usize, single: bool) -> Gathered {
    let mut g = Gathered { last: first, lexed: LexedLine::default(), fail: None, fatal: Fatal::No };
    // Open brackets: their kind (1 `(`, 2 `[`, 3 `{`), and where each stands (line, byte).
    let mut open: Vec<(i8, usize, usize)> = Vec::new();
    let mut off = 0usize; // byte offset of line `i` within the joined text
    let mut token_bytes = 0usize;
    let mut i = first;
    let at = |line: usize, byte: usize, width: usize| {
        let t = lines[line];
        (line as u32 + 1, char_column(t, byte), char_width(t, byte..byte + width))
    };
    loop {
        let text = lines[i];
        if i > first {
            if let Some((k, m)) = crate::meter::load_over() {
                g.fail = Some(LoadError::new(LoadKind::Limit(k), m, file, i as u32 + 1));
                g.fatal = Fatal::Memory;
                g.last = i;
                return g;
            }
        }
        let l = match lex_line(text) {
            Ok(l) => l,
            Err(f) => {
                // A line that does not lex ends its statement.
                let le = LoadError::new(lex_kind(&f.error), f.message(), file, i as u32 + 1)
                    .at(char_column(text, f.span.start), char_width(text, f.span.clone()));
                if g.fail.is_none() {
                    g.fail = Some(lex_hints(le, &f, text));
                }
                g.last = i;
                return g;
            }
        };
        let mut ended = false;
        for (t, sp) in l.toks.iter().zip(&l.spans) {
            token_bytes += sp.len() + 1;
            let k: i8 = match t {
                Tok::LParen => 1,
                Tok::LBracket => 2,
                Tok::LBrace => 3,
                Tok::RParen => -1,
                Tok::RBracket => -2,
                Tok::RBrace => -3,
                _ => continue,
            };
            if k > 0 {
                open.push((k, i, sp.start));
            } else if open.pop().map(|o| o.0) != Some(-k) {
                // A closer of the wrong kind, or without an opener: the statement ends
                // with this line, and the parse reports it.
                ended = true;
            }
        }
        let block = block_opener(&l).map(|d| (d, l.spans.last().map_or(0, |s| s.start)));
        if token_bytes > MAX_STMT_TOKEN_BYTES && g.fail.is_none() {
            g.fail = Some(LoadError::new(
                LoadKind::Limit(LimitKind::ExprBytes),
                format!("statement of more than {MAX_STMT_TOKEN_BYTES} bytes of tokens: an expression in it is over the limit of {MAX_EXPR_BYTES} bytes"),
                file,
                first as u32 + 1,
            ));
        }
        if g.fail.is_none() {
            if i == first {
                g.lexed = l;
            } else {
                g.lexed.toks.extend(l.toks);
                g.lexed.spans.extend(l.spans.into_iter().map(|s| s.start + off..s.end + off));
            }
        }
        off += text.len() + 1;
        if let Some((delim, opener)) = block {
            let raw = delim == "\'\'\'";
            let Some(close) = (i + 1..lines.len()).find(|&k| closes_block(lines[k], delim)) else {
                let (ln, c, w) = at(i, opener, 3);
                let mut le =
                    LoadError::new(LoadKind::Syntax, format!("block string `{delim}` is never closed"), file, ln)
                        .at(c, w);
                let near = (i + 1..lines.len()).find(|&k| lines[k].trim_start_matches([' ', '\t']).starts_with(delim));
                le = match near {
                    Some(k) => le.help(format!(
                        "its closing `{delim}` stands alone on its line: line {} has `{}`; put what follows \
                         `{delim}` on the next line",
                        k + 1,
                        lines[k].trim()
                    )),
                    None => le.help(format!(
                        "close it with a line holding only `{delim}` (that line's indentation is removed from \
                         every line of the string)"
                    )),
                };
                g.fail = Some(le);
                g.fatal = Fatal::Block;
                g.last = lines.len() - 1;
                return g;
            };
            let mut content = Vec::with_capacity(close - i - 1);
            for line in &lines[i + 1..close] {
                content.push((*line, off));
                off += line.len() + 1;
            }
            let indent = block_indent(lines[close]);
            let end = off + lines[close].len();
            off += lines[close].len() + 1;
            match block_string(&content, indent, raw) {
                Ok(lit) => {
                    if g.fail.is_none() {
                        let n = g.lexed.toks.len() - 1;
                        g.lexed.toks[n] = Tok::Str(lit);
                        g.lexed.spans[n].end = end;
                    }
                }
                Err(e) => {
                    let k = i + 1 + e.line;
                    let (ln, c, w) = at(k, e.byte, 1);
                    if g.fail.is_none() {
                        g.fail = Some(LoadError::new(LoadKind::Syntax, e.message, file, ln).at(c, w));
                    }
                }
            }
            i = close;
        }
        if open.is_empty() || ended || single {
            g.last = i;
            return g;
        }
        if i + 1 == lines.len() {
            let (k, ol, ob) = open[0];
            let (ln, c, w) = at(ol, ob, 1);
            let (opener, close) = match k {
                1 => ("(", ")"),
                2 => ("[", "]"),
                _ => ("{", "}"),
            };
            g.fail =
                Some(LoadError::new(LoadKind::Syntax, format!("`{opener}` is never closed"), file, ln).at(c, w).help(
                    format!(
                        "close it with `{close}`: a statement goes on over lines while a bracket is open, and this \
                         one reaches the end of the file"
                    ),
                ));
            g.fatal = Fatal::Bracket;
            g.last = i;
            return g;
        }
        i += 1;
    }
}

/// Where each line of `lines` starts in their join with `\n`: (byte, character).
fn line_starts(lines: &[&str]) -> Vec<(usize, u32)> {
    let mut out = Vec::with_capacity(lines.len());
    let (mut b, mut c) = (0usize, 0u32);
    for l in lines {
        out.push((b, c));
        b += l.len() + 1;
        c = c.saturating_add(l.chars().count() as u32 + 1);
    }
    out
}

/// Parse one file's text (already checked for encoding and line sizes) into its
/// top-level statements and functions. `base` is the global position of line 0.
///
/// Statements are lexed and parsed one at a time, so that only one statement's tokens
/// are held; after each line the heap is compared with the load's budget
/// (`memory::load_over`). A statement written over several lines is parsed from its
/// lines joined with `\n`; it stands at its first line (where its step is charged), and
/// the columns of its spots count on over its lines, so that a diagnostic names the
/// physical line of the spot (`Src::place`, `source::SourceMap::place`).
pub fn parse_file(file: &str, base: Pos, lines: &[&str], errors: &mut LoadErrors) -> ParsedFile {
    let mut fp = FileParser {
        file: file.to_string(),
        base,
        errors,
        stack: Vec::new(),
        out: ParsedFile::default(),
        depth: 0,
        truncated: false,
    };
    let mut i = 0;
    let mut quiet = false;
    while i < lines.len() {
        if fp.errors.stop {
            break;
        }
        let line_no = i + 1;
        if let Some((k, m)) = crate::meter::load_over() {
            fp.err(LoadKind::Limit(k), m, line_no);
            fp.errors.stop = true;
            break;
        }
        // Blank and comment lines: nothing to gather.
        let t = lines[i].trim_start_matches([' ', '\t', '\r', '\x0c']);
        if t.is_empty() || t.starts_with('#') {
            i += 1;
            continue;
        }
        let g = gather(&fp.file, lines, i, quiet);
        let first = i;
        i = g.last + 1;
        // While quiet, errors are dropped (see `Fatal::Bracket`).
        let n0 = fp.errors.list.len();
        let was_quiet = quiet;
        if let Some(le) = g.fail {
            fp.errors.push(le);
            // The block role and bound names of its first line (`fallback_from`).
            if let Some(fb) = fallback_from(&lex_prefix(lines[first])) {
                fp.apply(line_no, fb);
            }
            match g.fatal {
                Fatal::No => {}
                Fatal::Memory => {
                    fp.errors.stop = true;
                    break;
                }
                Fatal::Block => {
                    if was_quiet {
                        fp.errors.list.truncate(n0);
                    }
                    fp.truncated = true;
                    break;
                }
                Fatal::Bracket => {
                    fp.truncated = true;
                    quiet = true;
                    i = first + 1;
                }
            }
            if was_quiet {
                fp.errors.list.truncate(n0);
            }
            continue;
        }
        let l = g.lexed;
        if l.toks.is_empty() {
            continue;
        }
        let joined;
        let starts;
        let text: &str = if g.last == first {
            starts = Vec::new();
            lines[first]
        } else {
            joined = lines[first..=g.last].join("\n");
            starts = line_starts(&lines[first..=g.last]);
            &joined
        };
        let src = Src { text, starts: &starts };
        parse_statement(&mut fp, line_no, &l, src);
        if quiet {
            fp.errors.list.truncate(n0);
            continue;
        }
        if !starts.is_empty() {
            // Columns counted over the joined lines name the physical line of the spot.
            for e in fp.errors.list[n0..].iter_mut() {
                if e.line == Some(line_no as u32) {
                    if let Some(c) = e.detail.column {
                        let (j, col) = split_column(&starts, c);
                        let n = lines[first + j].chars().count() as u32;
                        let room = (n + 1).saturating_sub(col).max(1);
                        e.line = Some((first + j + 1) as u32);
                        e.detail.column = Some(col);
                        e.detail.width = e.detail.width.min(room);
                    }
                }
            }
        }
    }
    fp.finish()
}

/// Parse one gathered statement and apply it to the block structure.
fn parse_statement(fp: &mut FileParser, line_no: usize, l: &LexedLine, src: Src) {
    if bracket_depth(&l.toks) > MAX_EXPR_DEPTH {
        let (k, m) = depth_error();
        fp.err(k, m, line_no);
        if let Some(fb) = fallback_line(l.toks.first()) {
            fp.apply(line_no, fb);
        }
        return;
    }
    // The parser borrows its input for its whole life, so it is made for each
    // statement: that lets each statement's tokens go as soon as it is parsed.
    let spots = Spots { spans: &l.spans, src };
    let (parsed, out_of_fuel) = fueled(l.toks.len(), || line_parser::<&[Tok]>(spots).parse(&l.toks[..]).into_result());
    if out_of_fuel {
        fp.err(LoadKind::Syntax, out_of_fuel_message(), line_no);
        if let Some(fb) = fallback_from(&l.toks) {
            fp.apply(line_no, fb);
        }
        return;
    }
    match parsed {
        Ok(mut line) => match check_line(&mut line, l, src) {
            Ok(()) => fp.apply(line_no, line),
            Err((k, m)) => {
                fp.err(k, m, line_no);
                if let Some(fb) = fallback_from(&l.toks) {
                    fp.apply(line_no, fb);
                }
            }
        },
        Err(errs) => {
            let msg = errs.first().map(syntax_message).unwrap_or_else(|| "syntax error".into());
            let at = errs.first().map_or(l.toks.len(), |e| e.span().start);
            let le = LoadError::new(LoadKind::Syntax, msg, &fp.file, line_no as u32);
            fp.errors.push(parse_hints(le, at, l, src));
            // `else if` keeps the structure an `elif` would.
            let fb = match (l.toks.first(), l.toks.get(1)) {
                (Some(Tok::Else), Some(Tok::If)) => fallback_line(Some(&Tok::Elif)),
                _ => fallback_from(&l.toks),
            };
            if let Some(fb) = fb {
                fp.apply(line_no, fb);
            }
        }
    }
}

/// The spot of token `i` of a lexed line (past the last token: just after it).
fn tok_at(l: &LexedLine, text: &str, i: usize) -> (u32, u32) {
    match l.spans.get(i) {
        Some(r) => (char_column(text, r.start), char_width(text, r.clone())),
        None => (l.spans.last().map_or(1, |r| char_column(text, r.end)), 1),
    }
}

/// Where a line uses `//` or `--` as if it began a comment: the byte offset of the
/// first such pair outside a string literal.
fn comment_marker(text: &str) -> Option<(usize, &'static str)> {
    let b = text.as_bytes();
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' && q == b'"' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                b'"' | b'\'' => quote = Some(c),
                b'#' => return None,
                b'/' if b.get(i + 1) == Some(&b'/') => return Some((i, "//")),
                b'-' if b.get(i + 1) == Some(&b'-') => return Some((i, "--")),
                _ => {}
            },
        }
        i += 1;
    }
    None
}

const COMMENT_HELP: &str = "comments start with `#` in Leash";

/// Help for a line that does not lex: operators from other languages, comments.
fn lex_hints(mut le: LoadError, f: &crate::lexer::LexFailure, text: &str) -> LoadError {
    if let Some((at, m)) = comment_marker(text) {
        if at <= f.span.start {
            le.message = format!("`{m}` does not start a comment");
            return le.at(char_column(text, at), 2).help(format!("{COMMENT_HELP}: write `#` instead of `{m}`"));
        }
    }
    if f.error != LexError::Unexpected {
        return le;
    }
    let rest = &text[f.span.start.min(text.len())..];
    let (word, help) = if rest.starts_with("&&") {
        ("&&", "use `and` for `&&`")
    } else if rest.starts_with("||") {
        ("||", "use `or` for `||`")
    } else if rest.starts_with('!') {
        ("!", "use `not` for `!` (`not x`); `!=` is the only operator with `!`")
    } else if rest.starts_with('&') {
        ("&", "use `and` for a logical and; for bits, `bit.band(a, b)`")
    } else if rest.starts_with('|') {
        ("|", "use `or` for a logical or; for bits, `bit.bor(a, b)`")
    } else if rest.starts_with(';') {
        (";", "one statement per line: remove the `;`")
    } else if rest.chars().next().is_some_and(|c| c.is_alphabetic() && !c.is_ascii()) {
        let c = rest.chars().next().unwrap_or('?');
        let w = c.len_utf8();
        return le
            .at(char_column(text, f.span.start), 1)
            .help(format!("names are ASCII letters, digits and `_`; `{}` can stand only in a string", &rest[..w]));
    } else {
        return le;
    };
    le.at(char_column(text, f.span.start), word.chars().count() as u32).help(help)
}

/// Brackets of a line: the first one that is unmatched (an opener never closed, a closer
/// without an opener, or a closer of the wrong kind): its token index, the message, and
/// for a wrong closer the index of the opener it meets.
fn bracket_problem(toks: &[Tok]) -> Option<(usize, String, Option<usize>)> {
    let mut stack: Vec<(usize, &Tok)> = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        match t {
            Tok::LParen | Tok::LBracket | Tok::LBrace => stack.push((i, t)),
            Tok::RParen | Tok::RBracket | Tok::RBrace => match stack.pop() {
                Some((_, o)) if close_of(o) == t.text() => {}
                Some((j, o)) => {
                    return Some((i, format!("`{}` does not close the `{}` before it", t.text(), o.text()), Some(j)))
                }
                None => return Some((i, format!("`{}` without an opening `{}`", t.text(), opener_of(t)), None)),
            },
            _ => {}
        }
    }
    stack.first().map(|&(i, o)| (i, format!("`{}` is never closed", o.text()), None))
}

fn close_of(t: &Tok) -> &'static str {
    match t {
        Tok::LParen => ")",
        Tok::LBracket => "]",
        _ => "}",
    }
}

fn opener_of(t: &Tok) -> &'static str {
    match t {
        Tok::RParen => "(",
        Tok::RBracket => "[",
        _ => "{",
    }
}

/// The spot and help of a line that lexes but does not parse, for the mistakes people
/// bring from other languages (SPEC 7): `then`, `else if`, `===`, `//` comments,
/// unbalanced brackets (pointing at the opener).
fn parse_hints(le: LoadError, at: usize, l: &LexedLine, src: Src) -> LoadError {
    let text = src.text;
    let toks = &l.toks;
    let ident = |i: usize| match toks.get(i) {
        Some(Tok::Ident(s)) => Some(s.as_str()),
        _ => None,
    };
    let adjacent = |i: usize| l.spans.get(i).zip(l.spans.get(i + 1)).is_some_and(|(a, b)| a.end == b.start);
    let point = |le: LoadError, i: usize, n: usize| {
        let (c, _) = tok_at(l, text, i);
        let end = l.spans.get(i + n - 1).map_or(text.len(), |r| r.end);
        let w = l.spans.get(i).map_or(1, |r| char_width(text, r.start..end));
        le.at(c, w)
    };
    // A keyword that needs no terminator, as other languages write it.
    let opens_cond = matches!(toks.first(), Some(Tok::If | Tok::Elif | Tok::While));
    if let Some(i) = (0..toks.len()).find(|&i| ident(i) == Some("then")).filter(|_| opens_cond) {
        let mut le = point(le, i, 1);
        le.message = "unexpected `then`".into();
        return le.help(format!(
            "Leash has no `then`: the condition of `{}` ends with its line; remove `then`",
            toks[0].text()
        ));
    }
    if matches!(toks.first(), Some(Tok::Else)) && matches!(toks.get(1), Some(Tok::If)) {
        let mut le = point(le, 0, 2);
        le.message = "`else if` is not Leash".into();
        return le.help("write `elif` for `else if`");
    }
    if matches!(ident(0), Some("elsif" | "elseif" | "else_if")) {
        return point(le, 0, 1).help("write `elif`");
    }
    // An anonymous function written as a block (`fn(x) x * 2 end`, `fn(x) return x end`)
    // or in another language's spelling (`lambda x: x * 2`).
    if let Some(i) = (1..toks.len()).find(|&i| toks[i] == Tok::Fn && toks.get(i + 1) == Some(&Tok::LParen)) {
        let close = (i + 2..toks.len()).find(|&j| toks[j] == Tok::RParen);
        if close.is_none_or(|j| toks.get(j + 1) != Some(&Tok::Arrow)) {
            let n = close.map_or(2, |j| j + 1 - i);
            let mut le = point(le, i, n);
            le.message = "an anonymous function needs `=>` and one expression".into();
            return le.help(
                "write `fn(x) => x * 2`: the body is one expression after `=>`, with no `return` and no `end` \
                 (for more than an expression, define `fn NAME(x)` ... `end` at the top level and pass NAME)",
            );
        }
    }
    if let Some(i) = (0..toks.len()).find(|&i| ident(i) == Some("lambda")) {
        let mut le = point(le, i, 1);
        le.message = "Leash has no `lambda`".into();
        return le.help("write an anonymous function as `fn(x) => x * 2`");
    }
    // (Not within a block string's content, which is text, not code.)
    let block = src.starts.len() > 1
        && toks.iter().zip(&l.spans).any(|(t, s)| matches!(t, Tok::Str(_)) && text[s.clone()].contains('\n'));
    // `//` is floored division: a comment only when words follow it that no expression
    // can hold (`x = 1 // the answer`: two operands side by side).
    let comment_like = |m: &str| {
        m == "--"
            || (at > 0
                && at < toks.len()
                && crate::tools::fmt::operand_end(&toks[at - 1])
                && matches!(toks[at], Tok::Ident(_) | Tok::Num(_) | Tok::Str(_)))
            || toks.first() == Some(&Tok::SlashSlash)
    };
    if let Some((b, m)) = comment_marker(text).filter(|&(_, m)| !block && comment_like(m)) {
        let (c, _) = (char_column(text, b), 0);
        let mut le = le.at(c, 2);
        le.message = format!("`{m}` does not start a comment");
        return le.help(format!("{COMMENT_HELP}: write `#` instead of `{m}`"));
    }
    for i in 0..toks.len() {
        match (&toks[i], toks.get(i + 1)) {
            (Tok::Eq, Some(Tok::Assign)) if adjacent(i) => {
                let mut le = point(le, i, 2);
                le.message = "`===` is not an operator".into();
                return le.help("use `==`: values of different types are never equal, so no `===` is needed");
            }
            (Tok::Ne, Some(Tok::Assign)) if adjacent(i) => {
                let mut le = point(le, i, 2);
                le.message = "`!==` is not an operator".into();
                return le.help("use `!=`: values of different types are never equal");
            }
            _ => {}
        }
    }
    if let Some((i, msg, opener)) = bracket_problem(toks) {
        let t = &toks[i];
        let mut le = point(le, i, 1);
        le.message = msg;
        let help = match (t, opener) {
            (Tok::LParen | Tok::LBracket | Tok::LBrace, _) => {
                format!("close it with `{}`", close_of(t))
            }
            (_, Some(j)) => {
                let (oj, c) = src.place(l.spans[j].start);
                let (ij, _) = src.place(l.spans[i].start);
                let at = if oj == ij {
                    format!("column {c}")
                } else {
                    format!("line {}, column {c}", le.line.unwrap_or(0) + oj as u32)
                };
                format!("the `{}` at {at} is closed by `{}`", toks[j].text(), close_of(&toks[j]))
            }
            _ => format!("remove it, or add the `{}` it closes", opener_of(t)),
        };
        return le.help(help);
    }
    if matches!(toks.first(), Some(Tok::If | Tok::Elif | Tok::Else | Tok::While | Tok::For | Tok::Fn | Tok::Try))
        && matches!(toks.last(), Some(Tok::Colon))
        && at + 1 >= toks.len()
    {
        return point(le, toks.len() - 1, 1).help("a block needs no `:`: its line opens it and `end` closes it");
    }
    if matches!(toks.first(), Some(Tok::While | Tok::For)) {
        if let Some(i) = (0..toks.len()).find(|&i| ident(i) == Some("do")) {
            return point(le, i, 1).help("Leash has no `do`: the loop header ends with its line; remove `do`");
        }
    }
    let (c, w) = tok_at(l, text, at);
    le.at(c, w)
}

/// The first few tokens of a line that does not lex (up to the first failure).
fn lex_prefix(line: &str) -> Vec<Tok> {
    use logos::Logos;
    Tok::lexer(line).take(4).map_while(|r| r.ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(src: &str) -> (ParsedFile, Vec<LoadError>) {
        let lines: Vec<&str> = src.lines().collect();
        let mut errs = LoadErrors::default();
        let p = parse_file("t.lsh", 0, &lines, &mut errs);
        (p, errs.list)
    }

    fn expr(src: &str) -> Expr {
        let (p, e) = parse(&format!("x = {src}"));
        assert!(e.is_empty(), "{e:?}");
        match &p.top[0].kind {
            StmtKind::Assign { value, .. } => value.clone(),
            other => panic!("{other:?}"),
        }
    }

    fn show(e: &Expr) -> String {
        match e {
            Expr::Num(n) => format!("{n}"),
            Expr::Name(n, _) => n.to_string(),
            Expr::Paren(e) => show(e),
            Expr::Unary(UnOp::Neg, e, _) => format!("(-{})", show(e)),
            Expr::Unary(UnOp::Not, e, _) => format!("(not {})", show(e)),
            Expr::Binary(op, a, b, _) => format!("({} {} {})", show(a), op.symbol(), show(b)),
            Expr::And(a, b) => format!("({} and {})", show(a), show(b)),
            Expr::Or(a, b) => format!("({} or {})", show(a), show(b)),
            Expr::Call(f, args, _) => {
                format!("{}({})", show(f), args.iter().map(show).collect::<Vec<_>>().join(", "))
            }
            Expr::Field(a, n, _) => format!("{}.{}", show(a), n),
            Expr::Index(a, i, _) => format!("{}[{}]", show(a), show(i)),
            Expr::Cond(a, c, b) => format!("({} if {} else {})", show(a), show(c), show(b)),
            Expr::Lambda(l) => {
                let ps: Vec<String> = l.params.iter().map(|p| p.to_string()).collect();
                format!("fn({}) => {}", ps.join(", "), show(&l.body))
            }
            other => format!("{other:?}"),
        }
    }

    #[test]
    fn precedence() {
        assert_eq!(show(&expr("1 + 2 * 3")), "(1 + (2 * 3))");
        assert_eq!(show(&expr("-2 ** 2")), "(-(2 ** 2))");
        assert_eq!(show(&expr("2 ** 3 ** 2")), "(2 ** (3 ** 2))");
        assert_eq!(show(&expr("2 ** -1")), "(2 ** (-1))");
        assert_eq!(show(&expr("a .. b .. c")), "(a .. (b .. c))");
        assert_eq!(show(&expr("a or b and c")), "(a or (b and c))");
        assert_eq!(show(&expr("not a == b")), "(not (a == b))");
        assert_eq!(show(&expr("a not in b")), "(a not in b)");
        assert_eq!(show(&expr("1 + 2 .. 3")), "((1 + 2) .. 3)");
        assert_eq!(show(&expr("m.f(1)[2]")), "m.f(1)[2]");
        // Round 3: the conditional is loosest and right-associative; `//` is a `*` level.
        assert_eq!(show(&expr("a + 1 if c or d else b")), "((a + 1) if (c or d) else b)");
        assert_eq!(show(&expr("a if b else c if d else e")), "(a if b else (c if d else e))");
        assert_eq!(show(&expr("-7 // 2 * 3")), "(((-7) // 2) * 3)");
        assert_eq!(show(&expr("f(x, fn(a, b) => a > b if a else b)")), "f(x, fn(a, b) => ((a > b) if a else b))");
        assert_eq!(show(&expr("a - b - c")), "((a - b) - c)");
    }

    #[test]
    fn comparisons_do_not_chain() {
        let (_, e) = parse("x = a < b < c");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].kind, LoadKind::Syntax);
        let (_, e) = parse("x = (a < b) < c");
        assert!(e.is_empty());
    }

    #[test]
    fn blocks() {
        let (p, e) = parse("if a\n  x = 1\nelif b\n  x = 2\nelse\n  x = 3\nend\nfn f(a, b)\n  return a\nend\n");
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(p.top.len(), 1);
        assert_eq!(p.fns.len(), 1);
        assert_eq!(p.fns[0].params, vec!["a", "b"]);
    }

    #[test]
    fn structure_errors() {
        let (_, e) = parse("end");
        assert_eq!(e[0].kind, LoadKind::Structure);
        let (_, e) = parse("while x\n");
        assert_eq!(e[0].kind, LoadKind::Structure);
        let (_, e) = parse("break");
        assert_eq!(e[0].kind, LoadKind::Structure);
        let (_, e) = parse("while x\nfn f()\nbreak\nend\nend");
        assert!(e.iter().any(|e| e.kind == LoadKind::Structure && e.line == Some(3)), "{e:?}");
        let (_, e) = parse("x + 1");
        assert_eq!(e[0].kind, LoadKind::Syntax);
        let (_, e) = parse("try\nx = 1\nend");
        assert_eq!(e[0].kind, LoadKind::Structure);
    }

    #[test]
    fn errors_keep_structure() {
        // A wrong closer ends its statement on its line (an open `(` would go on).
        let (_, e) = parse("if (x]\n  x = 1\nend\ny = )\n");
        assert_eq!(e.len(), 2, "{e:?}");
        assert_eq!(e[0].line, Some(1));
        assert_eq!(e[1].line, Some(4));
    }

    #[test]
    fn statements_continue_while_brackets_are_open() {
        let (p, e) = parse("x = f(\n  1,\n\n  # c\n  [2,\n   3])\nif g(1,\n     2)\nend\ny = 1\n");
        assert!(e.is_empty(), "{e:?}");
        assert_eq!(p.top.len(), 3);
        assert_eq!(p.top.iter().map(|s| s.pos).collect::<Vec<_>>(), vec![1, 7, 10]);
        // A spot on a later line has a column counted over the joined lines.
        let (_, e) = parse("x = f(\n  1 +* 2)\n");
        assert_eq!((e[0].line, e[0].detail.column), (Some(2), Some(6)), "{e:?}");
        // Open at the end of the file: one error, at the opener.
        let (_, e) = parse("if a\n  x = [1,\n  2\nend\n");
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!((e[0].line, e[0].detail.column), (Some(2), Some(7)));
    }

    /// Mangled statements over lines and block strings: every variant loads or fails
    /// with errors that name a line of the file, and nothing panics (a cheap, seeded
    /// cousin of the `load` fuzz target for the gathering code).
    #[test]
    fn mangled_multiline_sources_never_panic() {
        let seeds = [
            "x = f(\n  1,\n\n  # c\n  [2,\n   3])\nif g(1,\n     2)\nend\n",
            "s = \"\"\"\n    <p>${a}é</p>\n      \\t\\\n    x\n\n    \"\"\"\nt = '''\n\tr ${x}\n\t'''\n",
            "print(\"a\", \"\"\"\n  b\n  \"\"\"\n)\nm = {\n  k: [1, {\n    j: 2}],\n}\n",
        ];
        let pieces = ["\"\"\"", "'''", "(", ")", "[", "]", "{", "}", "\n", ",", " ", "\t", "\\", "${", "\"", "é", "#"];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for round in 0..3000 {
            let mut s = seeds[round % seeds.len()].to_string();
            for _ in 0..1 + next(4) {
                let mut at = next(s.len() + 1);
                while !s.is_char_boundary(at) {
                    at -= 1;
                }
                if next(3) == 0 && at < s.len() {
                    let mut end = at + 1;
                    while !s.is_char_boundary(end) {
                        end += 1;
                    }
                    s.replace_range(at..end, "");
                } else {
                    s.insert_str(at, pieces[next(pieces.len())]);
                }
            }
            let nlines = s.lines().count() as u32;
            let (_, errs) = parse(&s);
            for e in errs {
                let l = e.line.unwrap_or(1);
                assert!(l >= 1 && l <= nlines.max(1), "{s:?}: {e:?}");
            }
        }
    }

    #[test]
    fn block_strings() {
        let s = |src: &str| match expr(src) {
            Expr::Str(b) => String::from_utf8(b).unwrap(),
            other => panic!("{other:?}"),
        };
        assert_eq!(s("\"\"\"\n    a\n      b\n\n    \"\"\""), "a\n  b\n");
        assert_eq!(s("\'\'\'\n  \\n ${x}\n  \'\'\'"), "\\n ${x}");
        assert_eq!(s("\"\"\"\n  a\\\n  b\\t\n  \"\"\""), "ab\t");
        assert!(matches!(expr("\"\"\"\n  ${1}\n  \"\"\""), Expr::Interp(_)));
        let (_, e) = parse("x = \"\"\"\n    a\n  b\n    \"\"\"\n");
        assert_eq!((e.len(), e[0].line), (1, Some(3)), "{e:?}");
        let (_, e) = parse("if a\n  x = \"\"\"\n  b\nend\n");
        assert_eq!((e.len(), e[0].line, e[0].detail.column), (1, Some(2), Some(7)), "{e:?}");
    }

    #[test]
    fn nesting_limit() {
        let deep = |n: usize| "if x\n".repeat(n) + &"end\n".repeat(n);
        assert!(parse(&deep(128)).1.is_empty());
        let (_, e) = parse(&deep(129));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].kind, LoadKind::Limit(LimitKind::Nesting));
    }

    #[test]
    fn expression_depth() {
        let nest = |n: usize| format!("x = {}1{}", "(".repeat(n), ")".repeat(n));
        assert!(parse(&nest(128)).1.is_empty());
        assert_eq!(parse(&nest(129)).1[0].kind, LoadKind::Limit(LimitKind::ExprDepth));
        let neg = |n: usize| format!("x = {}1", "- ".repeat(n));
        assert!(parse(&neg(128)).1.is_empty());
        assert_eq!(parse(&neg(129)).1[0].kind, LoadKind::Limit(LimitKind::ExprDepth));
        let calls = |n: usize| format!("x = {}1{}", "f(".repeat(n), ")".repeat(n));
        assert!(parse(&calls(128)).1.is_empty());
        assert_eq!(parse(&calls(129)).1[0].kind, LoadKind::Limit(LimitKind::ExprDepth));
    }

    #[test]
    fn interpolation() {
        let e = expr(r#""a${1 + f("x")}b""#);
        let Expr::Interp(parts) = e else { panic!() };
        assert!(matches!(&parts[1], InterpPart::Expr(Expr::Binary(BinOp::Add, ..))));
        let (_, e) = parse(r#"x = "${}""#);
        assert_eq!(e[0].kind, LoadKind::Syntax);
    }

    #[test]
    fn statements() {
        let (p, e) = parse("for i = 1 to 10 step 2\nend\nfor k, v in m\nend\nm.a[1] ..= \"x\"\nprint(1)\n");
        assert!(e.is_empty(), "{e:?}");
        assert!(matches!(&p.top[0].kind, StmtKind::ForRange(f) if f.step.is_some()));
        assert!(matches!(&p.top[1].kind, StmtKind::ForIn(f) if f.second.is_some()));
        assert!(matches!(p.top[2].kind, StmtKind::Assign { op: Some(BinOp::Concat), .. }));
        assert!(matches!(p.top[3].kind, StmtKind::Call(_)));
    }
}
