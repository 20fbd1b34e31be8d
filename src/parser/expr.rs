//! Expressions: the `chumsky` grammar of SPEC 3's precedence table (`expr_parser`, which
//! statements use for theirs), the parse fuel that keeps a backtracking parse linear,
//! and the checks an expression passes after it parses (the expression-bytes and depth
//! limits, the expressions of its interpolations).

use chumsky::extra;
use chumsky::input::ValueInput;
use chumsky::pratt::{infix, left, none, postfix, prefix, right};
use chumsky::prelude::*;
use std::ops::Range;

use super::Src;
use crate::ast::*;
use crate::diag::{char_width, LoadKind};
use crate::lexer::{LexedLine, Part, StrLit, Tok};
use crate::limits::*;

pub(super) type Extra<'a> = extra::Err<Rich<'a, Tok>>;

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
pub(super) fn fueled<T>(ntoks: usize, parse: impl FnOnce() -> T) -> (T, bool) {
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
pub(super) struct SExpr(pub(super) Expr, pub(super) Range<usize>);
/// Token spans and the statement's text, for turning token positions into spots
/// (columns and widths in characters) as nodes are built.
#[derive(Clone, Copy)]
pub(super) struct Spots<'a> {
    pub(super) spans: &'a [Range<usize>],
    pub(super) src: Src<'a>,
}

impl Spots<'_> {
    /// The spot of the tokens `r` (token indices).
    pub(super) fn of(&self, r: Range<usize>) -> Spot {
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
pub(super) fn expr_parser<'a, I>(sp: Spots<'a>) -> impl Parser<'a, I, Expr, Extra<'a>> + Clone
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

pub(super) fn syntax_message(e: &Rich<'_, Tok>) -> String {
    match e.found() {
        Some(t) => format!("unexpected {}", t.describe()),
        None => "unexpected end of line".to_string(),
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
pub(super) fn bracket_depth(toks: &[Tok]) -> usize {
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

pub(super) fn out_of_fuel_message() -> String {
    format!(
        "{OUT_OF_FUEL}: it has an error, and the parser gave up looking for where (check its brackets and operators)"
    )
}

pub(super) fn depth_error() -> (LoadKind, String) {
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
pub(super) fn check_expr(se: &mut SExpr, lexed: &LexedLine, src: Src) -> Result<(), (LoadKind, String)> {
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
