//! Lexer: one source line to tokens, with `logos`.
//!
//! Strings are lexed whole by a callback: escapes are decoded here, and each `${...}`
//! interpolation is lexed (recursively, with this same lexer) into its own token list,
//! which the parser turns into an expression. A string literal is one token.

use logos::Logos;
use std::ops::Range;

use crate::limits::{MAX_EXPR_DEPTH, MAX_IDENT_BYTES, MAX_TOKENS_PER_LINE};

/// Why a line could not be lexed.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum LexError {
    #[default]
    Unexpected,
    UnterminatedString,
    BadEscape(String),
    NotFinite,
    BadNumber,
    IdentTooLong,
    TooDeep,
    TooManyTokens,
    /// Something after a block string's opening `"""` or `'''` on its line.
    BlockNotLast,
}

/// One piece of an interpolated string.
#[derive(Debug, Clone, PartialEq)]
pub enum Part {
    Lit(Vec<u8>),
    /// The tokens of `${...}` and their spans (byte ranges within the line).
    Code(Vec<Tok>, Vec<Range<usize>>),
}

/// A string literal: plain bytes, or a mix of literal bytes and interpolations.
#[derive(Debug, Clone, PartialEq)]
pub enum StrLit {
    Plain(Vec<u8>),
    Interp(Vec<Part>),
}

#[derive(Logos, Debug, Clone, PartialEq)]
#[logos(skip r"[ \t\r\f]+")]
#[logos(skip(r"#[^\n]*", allow_greedy = true))]
#[logos(error = LexError)]
#[logos(extras = usize)]
pub enum Tok {
    #[token("if")]
    If,
    #[token("elif")]
    Elif,
    #[token("else")]
    Else,
    #[token("end")]
    End,
    #[token("while")]
    While,
    #[token("for")]
    For,
    #[token("in")]
    In,
    #[token("to")]
    To,
    #[token("step")]
    Step,
    #[token("break")]
    Break,
    #[token("continue")]
    Continue,
    #[token("fn")]
    Fn,
    #[token("return")]
    Return,
    #[token("global")]
    Global,
    #[token("try")]
    Try,
    #[token("catch")]
    Catch,
    #[token("throw")]
    Throw,
    #[token("include")]
    Include,
    #[token("import")]
    Import,
    #[token("and")]
    And,
    #[token("or")]
    Or,
    #[token("not")]
    Not,
    #[token("nil")]
    Nil,
    #[token("true")]
    True,
    #[token("false")]
    False,

    #[regex("[A-Za-z_][A-Za-z0-9_]*", ident)]
    Ident(String),
    #[regex(r"[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?", decimal)]
    #[regex("0[xX][0-9a-fA-F]+", hex)]
    Num(f64),
    #[token("\"", string)]
    #[token("'", raw_string)]
    Str(StrLit),
    /// The opener of a block string (`"""`, or `'''` when raw), the last token of its
    /// line; the parser reads the content lines that follow and makes it a `Str`.
    #[token("\"\"\"", |lex| block_open(lex, false))]
    #[token("'''", |lex| block_open(lex, true))]
    BlockOpen(bool),

    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("//")]
    SlashSlash,
    #[token("%")]
    Percent,
    #[token("**")]
    Pow,
    #[token("..")]
    Concat,
    #[token("=")]
    Assign,
    #[token("+=")]
    PlusAssign,
    #[token("-=")]
    MinusAssign,
    #[token("*=")]
    StarAssign,
    #[token("/=")]
    SlashAssign,
    #[token("//=")]
    SlashSlashAssign,
    #[token("%=")]
    PercentAssign,
    #[token("..=")]
    ConcatAssign,
    #[token("==")]
    Eq,
    #[token("!=")]
    Ne,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    #[token(":")]
    Colon,
    /// The arrow of an anonymous function, `fn(x) => x * 2`.
    #[token("=>")]
    Arrow,
}

impl Tok {
    /// How the token reads in a diagnostic.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("name `{s}`"),
            Tok::Num(_) => "number".to_string(),
            Tok::Str(_) => "string".to_string(),
            Tok::BlockOpen(_) => "block string".to_string(),
            other => format!("`{}`", other.text()),
        }
    }

    pub fn text(&self) -> &'static str {
        use Tok::*;
        match self {
            If => "if",
            Elif => "elif",
            Else => "else",
            End => "end",
            While => "while",
            For => "for",
            In => "in",
            To => "to",
            Step => "step",
            Break => "break",
            Continue => "continue",
            Fn => "fn",
            Return => "return",
            Global => "global",
            Try => "try",
            Catch => "catch",
            Throw => "throw",
            Include => "include",
            Import => "import",
            And => "and",
            Or => "or",
            Not => "not",
            Nil => "nil",
            True => "true",
            False => "false",
            Ident(_) => "name",
            Num(_) => "number",
            Str(_) => "string",
            BlockOpen(false) => "\"\"\"",
            BlockOpen(true) => "'''",
            Plus => "+",
            Minus => "-",
            Star => "*",
            Slash => "/",
            SlashSlash => "//",
            Percent => "%",
            Pow => "**",
            Concat => "..",
            Assign => "=",
            PlusAssign => "+=",
            MinusAssign => "-=",
            StarAssign => "*=",
            SlashAssign => "/=",
            SlashSlashAssign => "//=",
            PercentAssign => "%=",
            ConcatAssign => "..=",
            Eq => "==",
            Ne => "!=",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            LParen => "(",
            RParen => ")",
            LBracket => "[",
            RBracket => "]",
            LBrace => "{",
            RBrace => "}",
            Comma => ",",
            Dot => ".",
            Colon => ":",
            Arrow => "=>",
        }
    }
}

fn ident(lex: &mut logos::Lexer<Tok>) -> Result<String, LexError> {
    let s = lex.slice();
    if s.len() > MAX_IDENT_BYTES {
        return Err(LexError::IdentTooLong);
    }
    Ok(s.to_string())
}

fn decimal(lex: &mut logos::Lexer<Tok>) -> Result<f64, LexError> {
    let v: f64 = lex.slice().parse().map_err(|_| LexError::BadNumber)?;
    if v.is_finite() {
        Ok(v)
    } else {
        Err(LexError::NotFinite)
    }
}

fn hex(lex: &mut logos::Lexer<Tok>) -> Result<f64, LexError> {
    let mut v = 0f64;
    for c in lex.slice()[2..].chars() {
        v = v * 16.0 + c.to_digit(16).unwrap_or(0) as f64;
    }
    if v.is_finite() {
        Ok(v)
    } else {
        Err(LexError::NotFinite)
    }
}

fn raw_string(lex: &mut logos::Lexer<Tok>) -> Result<StrLit, LexError> {
    let rem = lex.remainder();
    match rem.find('\'') {
        Some(end) => {
            let bytes = rem.as_bytes()[..end].to_vec();
            lex.bump(end + 1);
            Ok(StrLit::Plain(bytes))
        }
        None => Err(LexError::UnterminatedString),
    }
}

fn hex_val(b: u8) -> Option<u32> {
    (b as char).to_digit(16)
}

fn string(lex: &mut logos::Lexer<Tok>) -> Result<StrLit, LexError> {
    // Offset of the remainder within the line: spans of interpolated tokens are line-relative.
    let base = lex.span().end;
    let mut parts: Vec<Part> = Vec::new();
    let mut lit: Vec<u8> = Vec::new();
    let (n, _) = decode(lex.remainder(), base, lex.extras, true, &mut parts, &mut lit).map_err(|(e, _)| e)?;
    lex.bump(n);
    Ok(string_lit(parts, lit))
}

fn string_lit(mut parts: Vec<Part>, lit: Vec<u8>) -> StrLit {
    if parts.is_empty() {
        return StrLit::Plain(lit);
    }
    if !lit.is_empty() {
        parts.push(Part::Lit(lit));
    }
    StrLit::Interp(parts)
}

/// Decode the text of a `"..."` string after its opening quote (`quoted`: it ends at the
/// closing `"`), or one content line of a `"""` block string (it runs to the end of
/// `rem`; a `"` is an ordinary character). Escapes are decoded into `lit`, and each
/// `${...}` is lexed into a `Part::Code` whose spans are offset by `base`. Returns the
/// bytes consumed, and whether a block line ended with a lone `\` (the line joins the
/// next); an error comes with its byte offset within `rem`.
fn decode(
    rem: &str,
    base: usize,
    depth: usize,
    quoted: bool,
    parts: &mut Vec<Part>,
    lit: &mut Vec<u8>,
) -> Result<(usize, bool), (LexError, usize)> {
    let bytes = rem.as_bytes();
    let mut i = 0;
    loop {
        let Some(&b) = bytes.get(i) else {
            if quoted {
                return Err((LexError::UnterminatedString, i));
            }
            return Ok((i, false));
        };
        match b {
            b'"' if quoted => {
                i += 1;
                break;
            }
            b'\\' => {
                let Some(&e) = bytes.get(i + 1) else {
                    if quoted {
                        return Err((LexError::UnterminatedString, i));
                    }
                    return Ok((i + 1, true));
                };
                let at = i;
                i += 2;
                match e {
                    b'\\' => lit.push(b'\\'),
                    b'"' => lit.push(b'"'),
                    b'n' => lit.push(b'\n'),
                    b't' => lit.push(b'\t'),
                    b'r' => lit.push(b'\r'),
                    b'0' => lit.push(0),
                    b'$' => lit.push(b'$'),
                    b'x' => {
                        let (Some(h), Some(l)) =
                            (bytes.get(i).and_then(|&c| hex_val(c)), bytes.get(i + 1).and_then(|&c| hex_val(c)))
                        else {
                            return Err((LexError::BadEscape("\\x needs two hex digits".into()), at));
                        };
                        lit.push((h * 16 + l) as u8);
                        i += 2;
                    }
                    b'u' => {
                        let bad = |m: String| Err((LexError::BadEscape(m), at));
                        if bytes.get(i) != Some(&b'{') {
                            return bad("\\u needs {hex digits}".into());
                        }
                        let mut j = i + 1;
                        let mut cp: u32 = 0;
                        while let Some(d) = bytes.get(j).and_then(|&c| hex_val(c)) {
                            if j - (i + 1) >= 6 {
                                return bad("\\u{...} takes 1 to 6 hex digits".into());
                            }
                            cp = cp * 16 + d;
                            j += 1;
                        }
                        if j == i + 1 || bytes.get(j) != Some(&b'}') {
                            return bad("\\u{...} takes 1 to 6 hex digits".into());
                        }
                        let Some(c) = char::from_u32(cp) else {
                            return bad(format!("\\u{{{cp:x}}} is not a Unicode scalar value"));
                        };
                        let mut buf = [0u8; 4];
                        lit.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        i = j + 1;
                    }
                    other => {
                        let shown = rem[i - 1..].chars().next().unwrap_or(other as char);
                        return Err((LexError::BadEscape(format!("unknown escape \\{shown}")), at));
                    }
                }
            }
            b'$' if bytes.get(i + 1) == Some(&b'{') => {
                let depth = depth + 1;
                if depth > MAX_EXPR_DEPTH {
                    return Err((LexError::TooDeep, i));
                }
                let start = i + 2;
                let inner_src = &rem[start..];
                let mut inner = Tok::lexer_with_extras(inner_src, depth);
                let mut toks = Vec::new();
                let mut spans = Vec::new();
                let mut braces = 0usize;
                let end;
                loop {
                    match inner.next() {
                        None => return Err((LexError::UnterminatedString, i)),
                        Some(Err(e)) => return Err((e, start + inner.span().start)),
                        Some(Ok(t)) => {
                            if t == Tok::RBrace {
                                if braces == 0 {
                                    end = inner.span().end;
                                    break;
                                }
                                braces -= 1;
                            } else if t == Tok::LBrace {
                                braces += 1;
                            } else if matches!(t, Tok::BlockOpen(_)) {
                                return Err((LexError::BlockNotLast, start + inner.span().start));
                            }
                            let sp = inner.span();
                            spans.push(base + start + sp.start..base + start + sp.end);
                            toks.push(t);
                        }
                    }
                }
                if !lit.is_empty() {
                    parts.push(Part::Lit(std::mem::take(lit)));
                }
                parts.push(Part::Code(toks, spans));
                i = start + end;
            }
            _ => {
                lit.push(b);
                i += 1;
            }
        }
    }
    Ok((i, false))
}

/// `"""` or `'''` must end its line: only spaces and tabs may follow it.
fn block_open(lex: &mut logos::Lexer<Tok>, raw: bool) -> Result<bool, LexError> {
    if lex.remainder().bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
        Ok(raw)
    } else {
        Err(LexError::BlockNotLast)
    }
}

/// A token after which a `-` is binary and a `(` or `[` is a call or an index (what
/// `leash fmt` spaces by, and the parser's hints read).
pub fn operand_end(t: &Tok) -> bool {
    matches!(
        t,
        Tok::Ident(_)
            | Tok::Num(_)
            | Tok::Str(_)
            | Tok::Nil
            | Tok::True
            | Tok::False
            | Tok::RParen
            | Tok::RBracket
            | Tok::RBrace
    )
}

/// The delimiter of a block string opened at the end of a lexed line, if one is.
pub fn block_opener(l: &LexedLine) -> Option<&'static str> {
    match l.toks.last() {
        Some(Tok::BlockOpen(raw)) => Some(if *raw { "'''" } else { "\"\"\"" }),
        _ => None,
    }
}

/// Whether `line` closes a block string opened with `delim`: the delimiter alone on
/// its line, with only spaces or tabs before (its indentation) and after it.
pub fn closes_block(line: &str, delim: &str) -> bool {
    line.trim_matches([' ', '\t', '\r']) == delim
}

/// The indentation of a closing delimiter's line.
pub fn block_indent(line: &str) -> &str {
    &line[..line.len() - line.trim_start_matches([' ', '\t']).len()]
}

/// Why a block string's content could not be read: the content line (index), the byte
/// within that line, and the message.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockError {
    pub line: usize,
    pub byte: usize,
    pub message: String,
}

/// An indentation in words: "4 spaces", "1 tab", "1 tab, 2 spaces".
fn describe_indent(indent: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut rest = indent;
    while let Some(c) = rest.chars().next() {
        let n = rest.len() - rest.trim_start_matches(c).len();
        let word = match (c, n) {
            (' ', 1) => "space",
            (' ', _) => "spaces",
            (_, 1) => "tab",
            _ => "tabs",
        };
        parts.push(format!("{n} {word}"));
        rest = &rest[n..];
    }
    parts.join(", ")
}

/// The value of a block string (SPEC 3): `content` holds its lines, each with its byte
/// offset within the statement's text (for the spans of interpolations); `indent` is the
/// closing delimiter's indentation, removed from every line. A line holding only spaces
/// and tabs is empty; any other line must start with exactly `indent`. The lines are
/// joined with `\n` (so no final newline unless the last line is blank). In `"""`,
/// escapes and `${...}` are read as in `"..."` (an interpolation stays within its line),
/// and a line ending with a lone `\` joins the next (no newline between them); in `'''`
/// nothing is interpreted.
pub fn block_string(content: &[(&str, usize)], indent: &str, raw: bool) -> Result<StrLit, BlockError> {
    let mut parts: Vec<Part> = Vec::new();
    let mut lit: Vec<u8> = Vec::new();
    let mut join = false;
    for (n, &(line, off)) in content.iter().enumerate() {
        if n > 0 && !join {
            lit.push(b'\n');
        }
        join = false;
        if line.bytes().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
            continue;
        }
        let Some(body) = line.strip_prefix(indent) else {
            return Err(BlockError {
                line: n,
                byte: 0,
                message: format!(
                    "this line of the block string is not indented as far as its closing delimiter ({})",
                    describe_indent(indent)
                ),
            });
        };
        if raw {
            lit.extend_from_slice(body.as_bytes());
            continue;
        }
        let at = off + indent.len();
        match decode(body, at, 0, false, &mut parts, &mut lit) {
            Ok((_, j)) => join = j,
            Err((e, b)) => {
                let message = match e {
                    LexError::UnterminatedString => {
                        "`${` is not closed on its line (an interpolation stays within one line)".to_string()
                    }
                    LexError::BlockNotLast => "a block string cannot stand inside an interpolation".to_string(),
                    other => LexFailure { error: other, text: String::new(), span: 0..0 }.message(),
                };
                return Err(BlockError { line: n, byte: indent.len() + b, message });
            }
        }
    }
    Ok(string_lit(parts, lit))
}

/// A lexed line: tokens and their byte spans within the line.
#[derive(Debug, Default)]
pub struct LexedLine {
    pub toks: Vec<Tok>,
    pub spans: Vec<Range<usize>>,
}

/// A lexing failure and the text it happened at.
#[derive(Debug, Clone, PartialEq)]
pub struct LexFailure {
    pub error: LexError,
    pub text: String,
    /// Where in the line (bytes).
    pub span: Range<usize>,
}

impl LexFailure {
    pub fn message(&self) -> String {
        match &self.error {
            LexError::Unexpected => {
                let c = self.text.chars().next().unwrap_or('?');
                if c == '"' || c == '\'' {
                    "unterminated string".to_string()
                } else {
                    format!("unexpected character `{}`", c.escape_default())
                }
            }
            LexError::UnterminatedString => "unterminated string".to_string(),
            LexError::BadEscape(m) => m.clone(),
            LexError::NotFinite => format!("number literal `{}` is not finite", self.text),
            LexError::BadNumber => format!("malformed number `{}`", self.text),
            LexError::IdentTooLong => {
                format!("identifier of {} bytes (limit is {})", self.text.len(), MAX_IDENT_BYTES)
            }
            LexError::TooDeep => format!("expression nested too deeply (limit is {MAX_EXPR_DEPTH})"),
            LexError::TooManyTokens => format!("too many tokens on one line (limit is {MAX_TOKENS_PER_LINE})"),
            LexError::BlockNotLast => {
                "a block string's opening delimiter must end its line (its content starts on the next line)".to_string()
            }
        }
    }
}

/// Lex one line (without its line ending).
pub fn lex_line(line: &str) -> Result<LexedLine, LexFailure> {
    let mut lexer = Tok::lexer(line);
    let mut out = LexedLine::default();
    while let Some(t) = lexer.next() {
        match t {
            Ok(t) => {
                if out.toks.len() == MAX_TOKENS_PER_LINE {
                    return Err(LexFailure { error: LexError::TooManyTokens, text: String::new(), span: lexer.span() });
                }
                out.toks.push(t);
                out.spans.push(lexer.span());
            }
            Err(error) => {
                return Err(LexFailure { error, text: lexer.slice().to_string(), span: lexer.span() });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex_line(s).unwrap().toks
    }

    #[test]
    fn keywords_identifiers_numbers() {
        assert_eq!(
            toks("if iffy 12 1.5 2e-3 0xff"),
            vec![Tok::If, Tok::Ident("iffy".into()), Tok::Num(12.0), Tok::Num(1.5), Tok::Num(0.002), Tok::Num(255.0)]
        );
    }

    #[test]
    fn operators_longest_match() {
        assert_eq!(
            toks("a ..= b .. c ** d"),
            vec![
                Tok::Ident("a".into()),
                Tok::ConcatAssign,
                Tok::Ident("b".into()),
                Tok::Concat,
                Tok::Ident("c".into()),
                Tok::Pow,
                Tok::Ident("d".into())
            ]
        );
        assert_eq!(toks("1..2"), vec![Tok::Num(1.0), Tok::Concat, Tok::Num(2.0)]);
    }

    #[test]
    fn comments_are_skipped() {
        assert_eq!(toks("x = 1 # one"), vec![Tok::Ident("x".into()), Tok::Assign, Tok::Num(1.0)]);
        assert!(toks("# only").is_empty());
        assert_eq!(toks("\"# not a comment\""), vec![Tok::Str(StrLit::Plain(b"# not a comment".to_vec()))]);
    }

    #[test]
    fn escapes() {
        assert_eq!(
            toks(r#""a\n\t\\\"\$\x41\u{e9}\0""#),
            vec![Tok::Str(StrLit::Plain(b"a\n\t\\\"$A\xc3\xa9\0".to_vec()))]
        );
        assert_eq!(toks("'raw\\n'"), vec![Tok::Str(StrLit::Plain(b"raw\\n".to_vec()))]);
        assert_eq!(toks("\"^a+b$\""), vec![Tok::Str(StrLit::Plain(b"^a+b$".to_vec()))]);
        assert!(matches!(lex_line(r#""\q""#).unwrap_err().error, LexError::BadEscape(_)));
        assert!(matches!(lex_line(r#""\u{110000}""#).unwrap_err().error, LexError::BadEscape(_)));
        assert!(matches!(lex_line(r#""\u{1234567}""#).unwrap_err().error, LexError::BadEscape(_)));
    }

    #[test]
    fn interpolation_nests() {
        let t = toks(r#""a${f("}")}b""#);
        let Tok::Str(StrLit::Interp(parts)) = &t[0] else { panic!("{t:?}") };
        assert_eq!(parts.len(), 3);
        assert_eq!(parts[0], Part::Lit(b"a".to_vec()));
        let Part::Code(inner, _) = &parts[1] else { panic!() };
        assert_eq!(inner.len(), 4);
        assert_eq!(parts[2], Part::Lit(b"b".to_vec()));
    }

    #[test]
    fn errors() {
        assert_eq!(lex_line("\"abc").unwrap_err().error, LexError::UnterminatedString);
        assert_eq!(lex_line("1e999").unwrap_err().error, LexError::NotFinite);
        assert_eq!(lex_line("a @ b").unwrap_err().error, LexError::Unexpected);
        let long = "a".repeat(129);
        assert_eq!(lex_line(&long).unwrap_err().error, LexError::IdentTooLong);
        assert!(lex_line(&"a".repeat(128)).is_ok());
        let many = "a ".repeat(1025);
        assert_eq!(lex_line(&many).unwrap_err().error, LexError::TooManyTokens);
        assert!(lex_line(&"a ".repeat(1024)).is_ok());
    }
}
