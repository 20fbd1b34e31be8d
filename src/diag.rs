//! Diagnostics: what went wrong, where, and how it is written to stderr.
//!
//! Every failure Leash reports (usage, load, runtime, limit, internal) becomes one
//! [`Diagnostic`], rendered either as text (`FILE:LINE: runtime error [arith]: ...`) or,
//! with `--error-format json`, as one JSON object per line:
//! `{"error":"runtime","kind":"arith","message":"...","file":"calc.lsh","line":12}`.

use crate::limits::LimitKind;

/// The class of a diagnostic: the `error` field of the JSON form.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Usage,
    Load,
    Runtime,
    Limit,
    Internal,
}

impl Class {
    pub fn name(self) -> &'static str {
        match self {
            Class::Usage => "usage",
            Class::Load => "load",
            Class::Runtime => "runtime",
            Class::Limit => "limit",
            Class::Internal => "internal",
        }
    }
}

/// Kinds of recoverable runtime error (SPEC 7). Catchable with `try`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrKind {
    Type,
    Value,
    Index,
    Key,
    Name,
    Arith,
    Parse,
    Io,
    Permission,
    Network,
    Db,
    Assert,
    User,
}

impl ErrKind {
    pub fn name(self) -> &'static str {
        use ErrKind::*;
        match self {
            Type => "type",
            Value => "value",
            Index => "index",
            Key => "key",
            Name => "name",
            Arith => "arith",
            Parse => "parse",
            Io => "io",
            Permission => "permission",
            Network => "network",
            Db => "db",
            Assert => "assert",
            User => "user",
        }
    }
}

/// Kinds of load error that are not limits (SPEC 7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LoadKind {
    Syntax,
    Structure,
    Name,
    Arity,
    Encoding,
    Include,
    /// A load-time limit (source bytes, tokens, nesting, ...).
    Limit(LimitKind),
}

impl LoadKind {
    pub fn name(self) -> &'static str {
        match self {
            LoadKind::Syntax => "syntax",
            LoadKind::Structure => "structure",
            LoadKind::Name => "name",
            LoadKind::Arity => "arity",
            LoadKind::Encoding => "encoding",
            LoadKind::Include => "include",
            LoadKind::Limit(k) => k.name(),
        }
    }
}

/// Where within its line a diagnostic points, and what it can add: the spot (a
/// 1-based column and a width, both in characters), the source line itself (filled in
/// from the loaded sources when the diagnostic is made), and `help:` lines.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Detail {
    pub column: Option<u32>,
    /// Characters under the caret (at least 1).
    pub width: u32,
    pub source_line: Option<String>,
    pub help: Vec<String>,
    /// A limit diagnostic's `limit`, `value` and `option` (SPEC 7; `teach.rs`).
    pub limit: Option<LimitNote>,
}

/// Which limit stopped a run, its value, and the option that raises it (SPEC 7).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LimitNote {
    /// The name `--limit` takes, or `steps`, `work`, `memory`, `time`, or a load-time
    /// limit's kind.
    pub name: String,
    /// The limit in force, as JSON number text.
    pub value: String,
    /// The exact option (or, under the CGI gateway, configuration key) that raises it;
    /// None for a limit no one can move (a load-time limit, or one at its ceiling).
    pub option: Option<String>,
}

/// An error found while loading: kind, message and where.
#[derive(Clone, Debug)]
pub struct LoadError {
    pub kind: LoadKind,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub detail: Detail,
}

impl LoadError {
    pub fn new(kind: LoadKind, message: impl Into<String>, file: &str, line: u32) -> Self {
        LoadError {
            kind,
            message: message.into(),
            file: Some(file.to_string()),
            line: Some(line),
            detail: Detail::default(),
        }
    }

    /// Point at `column` (1-based, characters), `width` characters wide.
    pub fn at(mut self, column: u32, width: u32) -> Self {
        self.detail.column = Some(column.max(1));
        self.detail.width = width.max(1);
        self
    }

    pub fn help(mut self, h: impl Into<String>) -> Self {
        self.detail.help.push(h.into());
        self
    }

    pub fn to_diag(&self) -> Diagnostic {
        Diagnostic {
            class: Class::Load,
            kind: self.kind.name().to_string(),
            message: self.message.clone(),
            file: self.file.clone(),
            line: self.line,
            detail: self.detail.clone(),
        }
    }
}

/// The 1-based character column of byte offset `byte` in `line`.
pub fn char_column(line: &str, byte: usize) -> u32 {
    let b = byte.min(line.len());
    let b = (0..=b).rev().find(|&i| line.is_char_boundary(i)).unwrap_or(0);
    line[..b].chars().count() as u32 + 1
}

/// The width in characters of `line[range]` (at least 1).
pub fn char_width(line: &str, range: std::ops::Range<usize>) -> u32 {
    let (a, b) = (range.start.min(line.len()), range.end.min(line.len()));
    match line.get(a..b) {
        Some(s) => (s.chars().count() as u32).max(1),
        None => 1,
    }
}

/// The column of a line's first non-blank character (1 for a blank line).
pub fn first_column(line: &str) -> u32 {
    char_column(line, line.len() - line.trim_start().len())
}

/// One reported failure.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub class: Class,
    pub kind: String,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub detail: Detail,
}

/// Whether text diagnostics may use colour: only when stderr is a terminal and
/// `NO_COLOR` is unset (https://no-color.org: any value, even empty, turns colour off).
pub fn colour_wanted() -> bool {
    use std::io::IsTerminal;
    std::env::var_os("NO_COLOR").is_none() && std::io::stderr().is_terminal()
}

impl Diagnostic {
    pub fn new(class: Class, kind: impl Into<String>, message: impl Into<String>) -> Self {
        Diagnostic {
            class,
            kind: kind.into(),
            message: message.into(),
            file: None,
            line: None,
            detail: Detail::default(),
        }
    }

    pub fn usage(message: impl Into<String>) -> Self {
        Diagnostic::new(Class::Usage, "usage", message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Diagnostic::new(Class::Internal, "internal", message)
    }

    /// The first line of the text form: `FILE:LINE:COLUMN: runtime error [kind]: message`
    /// (`FILE:LINE:` when the column is not known, `leash:` without a file).
    pub fn headline(&self) -> String {
        let mut s = String::new();
        match (&self.file, self.line, self.detail.column) {
            (Some(f), Some(l), Some(c)) => s.push_str(&format!("{f}:{l}:{c}: ")),
            (Some(f), Some(l), None) => s.push_str(&format!("{f}:{l}: ")),
            (Some(f), None, _) => s.push_str(&format!("{f}: ")),
            _ => s.push_str("leash: "),
        }
        s.push_str(self.class.name());
        s.push_str(" error [");
        s.push_str(&self.kind);
        s.push_str("]: ");
        s.push_str(&self.message);
        s
    }

    /// Text form: the headline, then (when the source line is known) the line with a
    /// caret under the spot, in the manner of rustc, and the `help:` lines. Rendered by
    /// `annotate-snippets`, in colour only when `colour` is set.
    pub fn render_text_with(&self, colour: bool) -> String {
        use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
        let mut s = self.headline();
        let d = &self.detail;
        let (Some(line), Some(text)) = (self.line, d.source_line.as_deref()) else {
            for h in &d.help {
                s.push_str("\nhelp: ");
                s.push_str(h);
            }
            return s;
        };
        // Annotation spans are byte ranges of the shown line; columns are characters.
        let text = text.strip_suffix('\r').unwrap_or(text);
        // A PostgreSQL URL's password in the line is never shown.
        let text = &*mask_passwords(text);
        // Without a column, the whole statement is underlined.
        let (start, end) = match d.column {
            Some(col) => {
                let start = text.char_indices().nth(col.max(1) as usize - 1).map(|(i, _)| i).unwrap_or(text.len());
                let end = text[start..]
                    .char_indices()
                    .nth(d.width.max(1) as usize)
                    .map(|(i, _)| start + i)
                    .unwrap_or(text.len());
                (start, end)
            }
            None => (text.len() - text.trim_start().len(), text.trim_end().len()),
        };
        let level = if self.class == Class::Load || self.class == Class::Runtime || self.class == Class::Limit {
            Level::ERROR
        } else {
            Level::NOTE
        };
        let snippet = Snippet::source(text)
            .line_start(line as usize)
            .fold(false)
            .annotation(AnnotationKind::Primary.span(start..end.max(start)));
        let mut group = Group::with_level(level).element(snippet);
        for h in &d.help {
            group = group.element(Level::HELP.message(h.as_str()));
        }
        let renderer = if colour { Renderer::styled() } else { Renderer::plain() };
        let body = renderer.render(&[group]);
        s.push('\n');
        s.push_str(body.trim_end_matches('\n'));
        s
    }

    /// Text form without colour.
    pub fn render_text(&self) -> String {
        self.render_text_with(false)
    }

    /// JSON form: one object, no trailing newline.
    pub fn render_json(&self) -> String {
        let mut out = Vec::new();
        out.extend_from_slice(b"{\"error\":");
        json_string(&mut out, self.class.name().as_bytes());
        out.extend_from_slice(b",\"kind\":");
        json_string(&mut out, self.kind.as_bytes());
        out.extend_from_slice(b",\"message\":");
        json_string(&mut out, self.message.as_bytes());
        if let Some(f) = &self.file {
            out.extend_from_slice(b",\"file\":");
            json_string(&mut out, f.as_bytes());
        }
        if let Some(l) = self.line {
            out.extend_from_slice(format!(",\"line\":{l}").as_bytes());
        }
        if let (Some(_), Some(c)) = (self.line, self.detail.column) {
            out.extend_from_slice(format!(",\"column\":{c}").as_bytes());
        }
        if let Some(n) = &self.detail.limit {
            out.extend_from_slice(b",\"limit\":");
            json_string(&mut out, n.name.as_bytes());
            out.extend_from_slice(b",\"value\":");
            out.extend_from_slice(n.value.as_bytes());
            out.extend_from_slice(b",\"option\":");
            match &n.option {
                Some(o) => json_string(&mut out, o.as_bytes()),
                None => out.extend_from_slice(b"null"),
            }
        }
        if !self.detail.help.is_empty() {
            out.extend_from_slice(b",\"help\":[");
            for (i, h) in self.detail.help.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                json_string(&mut out, h.as_bytes());
            }
            out.push(b']');
        }
        out.push(b'}');
        String::from_utf8_lossy(&out).into_owned()
    }

    pub fn render(&self, json: bool) -> String {
        if json {
            self.render_json()
        } else {
            self.render_text_with(colour_wanted())
        }
    }
}

/// Write `s` as a JSON string literal. Invalid UTF-8 sequences are replaced by U+FFFD
/// (callers that must refuse invalid UTF-8 check before calling).
pub fn json_string(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let text = String::from_utf8_lossy(s);
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: Option<&[u8]> = match b {
            b'"' => Some(b"\\\""),
            b'\\' => Some(b"\\\\"),
            b'\n' => Some(b"\\n"),
            b'\r' => Some(b"\\r"),
            b'\t' => Some(b"\\t"),
            0x08 => Some(b"\\b"),
            0x0c => Some(b"\\f"),
            _ => None,
        };
        if let Some(e) = esc {
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(e);
            start = i + 1;
        } else if b < 0x20 {
            out.extend_from_slice(&bytes[start..i]);
            out.extend_from_slice(format!("\\u{:04x}", b).as_bytes());
            start = i + 1;
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_rendering_has_all_fields() {
        let d = Diagnostic {
            class: Class::Runtime,
            kind: "arith".into(),
            message: "division by zero".into(),
            file: Some("calc.lsh".into()),
            line: Some(12),
            detail: Detail::default(),
        };
        assert_eq!(
            d.render_json(),
            r#"{"error":"runtime","kind":"arith","message":"division by zero","file":"calc.lsh","line":12}"#
        );
        assert_eq!(d.render_text(), "calc.lsh:12: runtime error [arith]: division by zero");
    }

    #[test]
    fn json_string_escapes_controls() {
        let mut out = Vec::new();
        json_string(&mut out, b"a\"b\\c\n\x01");
        assert_eq!(out, br#""a\"b\\c\n\u0001""#);
    }
}

/// Load errors collected over a whole load, capped at `MAX_LOAD_ERRORS`.
#[derive(Debug, Default)]
pub struct LoadErrors {
    pub list: Vec<LoadError>,
    /// Set when loading cannot go on (a source budget is exhausted, or the cap is reached).
    pub stop: bool,
}

impl LoadErrors {
    pub fn push(&mut self, e: LoadError) {
        if self.list.len() < crate::limits::MAX_LOAD_ERRORS {
            self.list.push(e);
        }
        if self.list.len() >= crate::limits::MAX_LOAD_ERRORS {
            self.stop = true;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }
}

/// How many bytes of script data a message quotes at most (SPEC 7; issue 23): a message
/// never carries a whole 900 KB key or value, and building it costs a bounded amount.
pub const QUOTE_MAX: usize = 200;

/// Script data as a message quotes it: in double quotes with Rust's escapes (control
/// characters and invalid UTF-8 visible), at most `QUOTE_MAX` bytes of it, then how many
/// bytes were cut: `"aaaa…" (+899800 bytes)`. The one rule for every message that shows
/// a key, an option name, a header or any other string the script gave.
pub fn quoted(b: &[u8]) -> String {
    let (text, cut) = clip(b);
    if cut == 0 {
        format!("{text:?}")
    } else {
        format!("{:?} (+{cut} bytes)", format!("{text}…"))
    }
}

/// The same bound without the quotes and escapes, for text already inside a message's
/// own quotes (a path, a column name): `aaaa… (+899800 bytes)`.
pub fn clipped(b: &[u8]) -> String {
    match clip(b) {
        (text, 0) => text.into_owned(),
        (text, cut) => format!("{text}… (+{cut} bytes)"),
    }
}

/// At most `QUOTE_MAX` bytes of `b` as text, and how many bytes were left out.
fn clip(b: &[u8]) -> (std::borrow::Cow<'_, str>, usize) {
    let cut = b.len().saturating_sub(QUOTE_MAX);
    (String::from_utf8_lossy(&b[..b.len() - cut]), cut)
}

/// `line` with the password of any PostgreSQL URL in it masked (each character an
/// `*`, so that columns stay where they were): for source lines shown in diagnostics.
pub fn mask_passwords(line: &str) -> std::borrow::Cow<'_, str> {
    let lower = line.to_ascii_lowercase();
    if !lower.contains("postgres") {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out: Vec<char> = line.chars().collect();
    let idx: Vec<usize> = line.char_indices().map(|(i, _)| i).collect();
    let mut from = 0;
    while let Some(k) = lower[from..].find("://") {
        let start = from + k + 3;
        from = start;
        if !(lower[..start - 3].ends_with("postgresql") || lower[..start - 3].ends_with("postgres")) {
            continue;
        }
        let end = line[start..]
            .find(|c: char| c == '/' || c == '"' || c == '\'' || c == '?' || c.is_whitespace())
            .map_or(line.len(), |e| start + e);
        let auth = &line[start..end];
        if let Some(at) = auth.rfind('@') {
            if let Some(colon) = auth[..at].find(':') {
                for (ci, bi) in idx.iter().enumerate() {
                    if *bi > start + colon && *bi < start + at {
                        out[ci] = '*';
                    }
                }
            }
        }
    }
    std::borrow::Cow::Owned(out.into_iter().collect())
}
