//! Statements: the grammar of one statement's line (`line_parser`: its keyword, an
//! assignment, a call), the line a statement that does not parse still counts as for
//! the block structure and the names it binds (`fallback_from`), and the checks of the
//! expressions a parsed line holds (`check_line`).

use chumsky::input::ValueInput;
use chumsky::prelude::*;

use super::expr::{check_expr, expr_parser, Extra, SExpr, Spots};
use super::Src;
use crate::ast::*;
use crate::diag::LoadKind;
use crate::lexer::{LexedLine, StrLit, Tok};

/// One parsed line, before block structure is applied.
#[derive(Debug, Clone)]
pub(super) enum Line {
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

pub(super) fn line_parser<'a, I>(sp: Spots<'a>) -> impl Parser<'a, I, Line, Extra<'a>> + Clone
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
pub(super) fn fallback_line(first: Option<&Tok>) -> Option<Line> {
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
pub(super) fn fallback_from(toks: &[Tok]) -> Option<Line> {
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

pub(super) fn check_line(line: &mut Line, lexed: &LexedLine, src: Src) -> Result<(), (LoadKind, String)> {
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

/// The first few tokens of a line that does not lex (up to the first failure).
pub(super) fn lex_prefix(line: &str) -> Vec<Tok> {
    use logos::Logos;
    Tok::lexer(line).take(4).map_while(|r| r.ok()).collect()
}
