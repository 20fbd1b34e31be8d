//! Parser: lines to statements, statements to blocks.
//!
//! Each line is lexed (`lexer.rs`) and parsed by a `chumsky` line parser whose
//! expressions use the Pratt precedence table of SPEC 3. The block builder then pairs
//! `if`/`elif`/`else`/`end`, loops, `try`/`catch`, and `fn` into a tree, checking
//! structure as it goes. Errors are collected (see `diag::LoadErrors`), and parsing goes
//! on after an error so that several can be reported at once.
//!
//! Its parts, in the order a file goes through them: `parser/gather.rs` delimits each
//! statement over its physical lines (open brackets, block strings) and lexes it;
//! `parser/line.rs` parses a statement's line (its keyword, assignment or call), and
//! `parser/expr.rs` the expressions in it (the Pratt table, parse fuel, the expression
//! limits, interpolations); `parser/blocks.rs` applies each line to the block structure;
//! `parser/hints.rs` turns a line that does not lex or parse into a diagnostic with
//! help. This file holds the driver (`parse_file`) and what they all share (`Src`).

use chumsky::prelude::*;

use crate::ast::*;
use crate::diag::{char_column, LoadError, LoadErrors, LoadKind};
use crate::lexer::{LexedLine, Tok};
use crate::limits::*;

mod blocks;
mod expr;
mod gather;
mod hints;
mod line;

use blocks::FileParser;
use expr::{bracket_depth, depth_error, fueled, out_of_fuel_message, syntax_message, Spots};
use gather::{gather, line_starts, Fatal};
use hints::parse_hints;
use line::{check_line, fallback_from, fallback_line, lex_prefix, line_parser};

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

/// The statements and functions of one source file.
#[derive(Debug, Default)]
pub struct ParsedFile {
    pub top: Vec<Stmt>,
    pub fns: Vec<FnDef>,
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
    let mut fp = FileParser::new(file, base, errors);
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
