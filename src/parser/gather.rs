//! Delimiting statements (SPEC 2): a statement goes on over its physical lines while a
//! bracket is open, and a block string's content lines and closing delimiter belong to
//! the statement that opens it. Each is lexed as it is gathered, and what stops a
//! statement from being delimited (a bracket or block string open at the end of the
//! file, the load's memory budget) is said here.

use super::hints::lex_hints;
use crate::diag::{char_column, char_width, LoadError, LoadKind};
use crate::lexer::{block_indent, block_opener, block_string, closes_block, lex_line, LexError, LexedLine, Tok};
use crate::limits::*;

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
pub(super) struct Gathered {
    /// The index of its last physical line.
    pub(super) last: usize,
    /// Its tokens, with spans into its lines joined by `\n`.
    pub(super) lexed: LexedLine,
    /// A failure found while gathering (a line that does not lex, a bracket or block
    /// string open at the end of the file, bad block string content): it is reported
    /// instead of parsing the statement.
    pub(super) fail: Option<LoadError>,
    /// The statement could not be delimited: see `Fatal`.
    pub(super) fatal: Fatal,
}

/// Why a statement could not be delimited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Fatal {
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
pub(super) fn gather(file: &str, lines: &[&str], first: usize, single: bool) -> Gathered {
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
pub(super) fn line_starts(lines: &[&str]) -> Vec<(usize, u32)> {
    let mut out = Vec::with_capacity(lines.len());
    let (mut b, mut c) = (0usize, 0u32);
    for l in lines {
        out.push((b, c));
        b += l.len() + 1;
        c = c.saturating_add(l.chars().count() as u32 + 1);
    }
    out
}
