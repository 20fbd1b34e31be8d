//! `leash fmt`: the one canonical layout (SPEC 13).
//!
//! The formatter works on the lexer's tokens, one line at a time, and never rebuilds a
//! line from the syntax tree: each token is written as its own source text (so numbers,
//! strings and interpolations stay exactly as written), and only the space between tokens,
//! the indentation and the space before a comment change. Lines are never joined or split,
//! so every statement keeps its line number.
//!
//! The layout: two spaces of indentation per open block (`fn`, `if`, `while`, `for`, `try`
//! ... `end`; `elif`, `else` and `catch` at the level of their `if` or `try`), one space
//! around binary operators and keywords and after commas and colons, none inside brackets,
//! before a comma or colon, around `.`, after a unary `-`, or before the `(` of a call and
//! the `[` of an index. A comment keeps its text and its line, one space after the code
//! before it. No trailing spaces, no trailing blank lines, one final newline, LF line ends.
//! A statement continued over lines (brackets open) indents its continuation lines one
//! level more per line that left brackets open; a line that starts with closers stands
//! at the level of the line that opened them. A block string's content lines and its
//! closing delimiter are kept byte for byte (their indentation is part of the string).
//!
//! The guarantee that formatting never changes a program is checked, not assumed: the
//! formatted text is parsed again and its syntax tree (statement positions included) must
//! equal the original's, or the file is left as it is and the run fails. A file that does
//! not parse is not formatted (its load errors are reported, as `leash check` would).

use std::io::{Read, Write};
use std::path::Path;

use crate::diag::{Diagnostic, LoadErrors};
use crate::lexer::{block_opener, closes_block, lex_line, operand_end, Tok};
use crate::limits::MAX_SOURCE_BYTES;

/// Why a text could not be formatted.
#[derive(Debug)]
pub enum FmtError {
    /// It does not load (the diagnostics of the parser).
    Load(Vec<Diagnostic>),
    /// The formatted text would parse to a different program (a bug in the formatter;
    /// the file is left as it is).
    Changed,
}

fn split_lines(src: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = src.split('\n').collect();
    if src.ends_with('\n') || src.is_empty() {
        lines.pop();
    }
    lines
}

/// The parse of `src` as the loader sees it, as comparable text: the syntax tree and the
/// load errors.
fn parse_dump(name: &str, src: &str) -> (String, Vec<Diagnostic>) {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let lines: Vec<&str> = split_lines(src).into_iter().map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let mut errors = LoadErrors::default();
    // Columns change with the layout: the comparison is of the program without them.
    let parsed = crate::ast::without_spots(|| crate::parser::parse_file(name, 0, &lines, &mut errors));
    let dump = format!("{:?}\n{:?}", parsed.top, parsed.fns);
    crate::ast::clear_names();
    (dump, errors.list.iter().map(|e| e.to_diag()).collect())
}

/// Whether one space goes between `prev` and `cur`. `prev_unary` says `prev` is a unary `-`.
fn space_between(prev: &Tok, prev_unary: bool, cur: &Tok) -> bool {
    use Tok::*;
    if matches!(cur, RParen | RBracket | RBrace | Comma | Colon | Dot) {
        return false;
    }
    if matches!(prev, LParen | LBracket | LBrace | Dot) || prev_unary {
        return false;
    }
    if matches!(cur, LParen | LBracket) && operand_end(prev) {
        return false;
    }
    // An anonymous function's parameters follow `fn` as a call's arguments follow its name.
    if matches!(cur, LParen) && matches!(prev, Fn) {
        return false;
    }
    true
}

fn opens_block(t: &Tok) -> bool {
    matches!(t, Tok::If | Tok::While | Tok::For | Tok::Fn | Tok::Try)
}

fn bracket_delta(t: &Tok) -> isize {
    match t {
        Tok::LParen | Tok::LBracket | Tok::LBrace => 1,
        Tok::RParen | Tok::RBracket | Tok::RBrace => -1,
        _ => 0,
    }
}

/// The canonical layout of `src`, without the safety check (see [`format_source`]).
pub fn layout(src: &str) -> String {
    let src = src.strip_prefix('\u{feff}').unwrap_or(src);
    let mut out: Vec<String> = Vec::new();
    let mut depth: usize = 0;
    // Brackets left open by the lines before (a statement continued onto this line):
    // for each, the line that opened it. A continuation line is indented one level per
    // line that left brackets open, not per bracket (`f(g(` opens one level).
    let mut open: Vec<usize> = Vec::new();
    // The delimiter of the block string whose content lines are being copied.
    let mut block: Option<&str> = None;
    for (n, raw) in split_lines(src).into_iter().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if let Some(d) = block {
            // Content and closing lines are kept byte for byte: their indentation is
            // part of the string.
            if closes_block(line, d) {
                block = None;
            }
            out.push(line.to_string());
            continue;
        }
        let lexed = match lex_line(line) {
            Ok(l) => l,
            Err(_) => {
                // Not a line this lexer reads (the parse check refuses such files before
                // they get here): kept as it is.
                out.push(line.trim_end().to_string());
                continue;
            }
        };
        let levels = |open: &[usize]| {
            let mut ls = open.to_vec();
            ls.dedup();
            ls.len()
        };
        let code_end = lexed.spans.last().map_or(0, |s| s.end);
        let rest = line[code_end..].trim();
        let comment = if rest.starts_with('#') { rest } else { "" };
        let Some(first) = lexed.toks.first() else {
            if comment.is_empty() {
                out.push(String::new());
            } else {
                let level = depth + levels(&open);
                out.push(format!("{}{comment}", "  ".repeat(level)));
            }
            continue;
        };
        let continued = !open.is_empty();
        let mut level = depth;
        if !continued {
            match first {
                Tok::End => {
                    depth = depth.saturating_sub(1);
                    level = depth;
                }
                Tok::Elif | Tok::Else | Tok::Catch => level = depth.saturating_sub(1),
                t if opens_block(t) => depth += 1,
                _ => {}
            }
        } else {
            // Closers that begin the line stand at the level of the line that opened them.
            let lead = lexed.toks.iter().take_while(|t| bracket_delta(t) < 0).count();
            level += levels(&open[..open.len().saturating_sub(lead)]);
        }
        let mut text = "  ".repeat(level);
        let mut prev: Option<&Tok> = None;
        let mut prev_unary = false;
        for (t, span) in lexed.toks.iter().zip(&lexed.spans) {
            let unary = matches!(t, Tok::Minus) && !prev.is_some_and(operand_end);
            if let Some(p) = prev {
                if space_between(p, prev_unary, t) {
                    text.push(' ');
                }
            }
            text.push_str(&line[span.clone()]);
            match bracket_delta(t) {
                1 => open.push(n),
                -1 => {
                    open.pop();
                }
                _ => {}
            }
            prev = Some(t);
            prev_unary = unary;
        }
        if !comment.is_empty() {
            text.push(' ');
            text.push_str(comment);
        }
        out.push(text);
        block = block_opener(&lexed);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    let mut s = out.join("\n");
    if !s.is_empty() {
        s.push('\n');
    }
    s
}

/// `src` in the canonical layout, checked to parse to the same program.
pub fn format_source(name: &str, src: &str) -> Result<String, FmtError> {
    let (before, errors) = parse_dump(name, src);
    if !errors.is_empty() {
        return Err(FmtError::Load(errors));
    }
    let formatted = layout(src);
    let (after, errors_after) = parse_dump(name, &formatted);
    if before != after || !errors_after.is_empty() {
        return Err(FmtError::Changed);
    }
    Ok(formatted)
}

fn emit(d: &Diagnostic, json: bool) {
    let _ = writeln!(std::io::stderr().lock(), "{}", d.render(json));
}

fn usage(m: &str) -> i32 {
    emit(&Diagnostic::usage(m.to_string()), false);
    2
}

/// Format one text; report a failure. `None` when it cannot be formatted.
fn format_reported(name: &str, bytes: &[u8], json: bool) -> Option<String> {
    let Ok(src) = std::str::from_utf8(bytes) else {
        let d = crate::diag::LoadError::new(crate::diag::LoadKind::Encoding, "source is not valid UTF-8", name, 1);
        emit(&d.to_diag(), json);
        return None;
    };
    match format_source(name, src) {
        Ok(s) => Some(s),
        Err(FmtError::Load(ds)) => {
            for d in &ds {
                emit(d, json);
            }
            None
        }
        Err(FmtError::Changed) => {
            let msg = format!("{name}: formatting would change the program (a bug in leash fmt); left as it is");
            emit(&Diagnostic::internal(msg), json);
            None
        }
    }
}

/// `leash fmt [--check] FILE...` and `leash fmt [--check] -`. Exit status: 0 done (or,
/// with `--check`, nothing would change), 1 with `--check` when a file would change, 2
/// usage, 3 a file could not be read or does not parse (it is left as it is).
pub fn main(args: &[std::ffi::OsString]) -> i32 {
    let mut check = false;
    let mut json = false;
    let mut files: Vec<&std::ffi::OsStr> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_os_str();
        match a.to_str() {
            Some("--check") => check = true,
            Some("--error-format") => {
                i += 1;
                match args.get(i).and_then(|v| v.to_str()) {
                    Some("json") => json = true,
                    Some("text") => json = false,
                    _ => return usage("--error-format takes text or json"),
                }
            }
            Some("--error-format=json") => json = true,
            Some("--error-format=text") => json = false,
            Some("--help") | Some("-h") => {
                let _ = std::io::stdout().write_all(
                    b"usage: leash fmt [--check] FILE...   format scripts in place\n       \
                      leash fmt [--check] -         format stdin to stdout\n",
                );
                return 0;
            }
            Some(s) if s.starts_with("--") => return usage(&format!("unknown option {s} for fmt")),
            _ => files.push(a),
        }
        i += 1;
    }
    if files.is_empty() {
        return usage("fmt needs at least one FILE (or - for stdin)");
    }
    let mut status = 0;
    for f in files {
        if f == "-" {
            let mut buf = Vec::new();
            if let Err(e) = std::io::stdin().lock().take(MAX_SOURCE_BYTES as u64 + 1).read_to_end(&mut buf) {
                emit(&Diagnostic::usage(format!("cannot read stdin: {}", crate::fileio::io_reason(&e))), json);
                status = status.max(3);
                continue;
            }
            match format_reported("<stdin>", &buf, json) {
                Some(s) if check => {
                    if s.as_bytes() != buf {
                        status = status.max(1);
                    }
                }
                Some(s) => {
                    let mut o = std::io::stdout().lock();
                    if o.write_all(s.as_bytes()).and_then(|_| o.flush()).is_err() {
                        status = status.max(1);
                    }
                }
                None => status = 3,
            }
            continue;
        }
        let path = Path::new(f);
        let name = path.to_string_lossy().into_owned();
        let bytes = match crate::fileio::read_bounded(path, MAX_SOURCE_BYTES, true) {
            Ok(b) => b,
            Err(e) => {
                let d = crate::diag::LoadError::new(
                    crate::diag::LoadKind::Include,
                    format!("cannot read script: {}", crate::fileio::io_reason(&e)),
                    &name,
                    0,
                );
                let mut d = d.to_diag();
                d.line = None;
                emit(&d, json);
                status = 3;
                continue;
            }
        };
        let Some(s) = format_reported(&name, &bytes, json) else {
            status = 3;
            continue;
        };
        if s.as_bytes() == bytes {
            continue;
        }
        if check {
            let _ = writeln!(std::io::stdout().lock(), "{name}");
            status = status.max(1);
        } else if let Err(e) = std::fs::write(path, s.as_bytes()) {
            let msg = format!("cannot write {name}: {}", crate::fileio::io_reason(&e));
            emit(&Diagnostic::usage(msg), json);
            status = 3;
        }
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> String {
        format_source("t.lsh", s).unwrap()
    }

    #[test]
    fn spacing() {
        assert_eq!(f("x=1+2*-3\n"), "x = 1 + 2 * -3\n");
        assert_eq!(f("print( f(a,b) [ 0 ] .. str.upper( \"a\" ) )"), "print(f(a, b)[0] .. str.upper(\"a\"))\n");
        assert_eq!(f("m = { a : 1 , \"b\":[ 1,-2 ] }"), "m = {a: 1, \"b\": [1, -2]}\n");
        assert_eq!(f("x = a - -b\ny = not x\nz = - (x)\n"), "x = a - -b\ny = not x\nz = -(x)\n");
        assert_eq!(f("if(x)and not(y)\nend\n"), "if (x) and not (y)\nend\n");
        assert_eq!(f("x = \"a ${ 1+2 }  b\"  # c  \n"), "x = \"a ${ 1+2 }  b\" # c\n");
    }

    #[test]
    fn indentation_and_comments() {
        let src = "# top\nfn f(a)\nif a\n# inner\nreturn 1\nelif a>2\nreturn 2\nelse\ntry\nthrow 1\ncatch e\nend\nend\nend\n\n\n";
        let want = "# top\nfn f(a)\n  if a\n    # inner\n    return 1\n  elif a > 2\n    return 2\n  else\n    try\n      throw 1\n    catch e\n    end\n  end\nend\n";
        assert_eq!(f(src), want);
        assert_eq!(f(want), want);
        assert_eq!(f("\u{feff}x = 1\r\ny = 2"), "x = 1\ny = 2\n");
        assert_eq!(f(""), "");
        assert_eq!(f("\n\n"), "");
    }

    #[test]
    fn continuation_lines_and_block_strings() {
        // One level per line that left brackets open; leading closers at their opener's level.
        let src = "fn f(a)\nx = g(h(\n1,\n[2,\n3]),\n{a: 1,\nb: 2}\n)\nend\n";
        let want = "fn f(a)\n  x = g(h(\n    1,\n    [2,\n      3]),\n    {a: 1,\n      b: 2}\n  )\nend\n";
        assert_eq!(f(src), want);
        assert_eq!(f(want), want);
        // Block string lines are kept byte for byte (trailing spaces and tabs too).
        let src = "if x\ns=\"\"\"\n \t a  \n\n   # b\n \"\"\"\nt = [1, '''\n  raw  \n  '''\n]\nend\n";
        let want = "if x\n  s = \"\"\"\n \t a  \n\n   # b\n \"\"\"\n  t = [1, '''\n  raw  \n  '''\n  ]\nend\n";
        assert_eq!(f(src), want);
        assert_eq!(f(want), want);
    }

    #[test]
    fn refuses_what_does_not_parse() {
        assert!(matches!(format_source("t.lsh", "x = (1\n"), Err(FmtError::Load(_))));
        assert!(matches!(format_source("t.lsh", "if x\n"), Err(FmtError::Load(_))));
    }
}
