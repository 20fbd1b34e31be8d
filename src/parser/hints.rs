//! Help for a line that does not lex or parse (SPEC 7): the spot of the mistake and what
//! to write instead, for the mistakes people bring from other languages (`//` and `--`
//! comments, `&&`, `then`, `else if`, `===`, `lambda`, a block's `:`) and for brackets
//! that do not match (pointing at the opener).

use super::Src;
use crate::diag::{char_column, char_width, LoadError};
use crate::lexer::{operand_end, LexError, LexedLine, Tok};

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
pub(super) fn lex_hints(mut le: LoadError, f: &crate::lexer::LexFailure, text: &str) -> LoadError {
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
pub(super) fn parse_hints(le: LoadError, at: usize, l: &LexedLine, src: Src) -> LoadError {
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
                && operand_end(&toks[at - 1])
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
