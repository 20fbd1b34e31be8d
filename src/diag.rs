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

/// An error found while loading: kind, message and where.
#[derive(Clone, Debug)]
pub struct LoadError {
    pub kind: LoadKind,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl LoadError {
    pub fn new(kind: LoadKind, message: impl Into<String>, file: &str, line: u32) -> Self {
        LoadError { kind, message: message.into(), file: Some(file.to_string()), line: Some(line) }
    }

    pub fn to_diag(&self) -> Diagnostic {
        Diagnostic {
            class: Class::Load,
            kind: self.kind.name().to_string(),
            message: self.message.clone(),
            file: self.file.clone(),
            line: self.line,
        }
    }
}

/// One reported failure.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub class: Class,
    pub kind: String,
    pub message: String,
    pub file: Option<String>,
    pub line: Option<u32>,
}

impl Diagnostic {
    pub fn usage(message: impl Into<String>) -> Self {
        Diagnostic { class: Class::Usage, kind: "usage".into(), message: message.into(), file: None, line: None }
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Diagnostic { class: Class::Internal, kind: "internal".into(), message: message.into(), file: None, line: None }
    }

    /// Text form: `FILE:LINE: runtime error [kind]: message`.
    pub fn render_text(&self) -> String {
        let mut s = String::new();
        match (&self.file, self.line) {
            (Some(f), Some(l)) => s.push_str(&format!("{f}:{l}: ")),
            (Some(f), None) => s.push_str(&format!("{f}: ")),
            _ => s.push_str("leash: "),
        }
        s.push_str(self.class.name());
        s.push_str(" error [");
        s.push_str(&self.kind);
        s.push_str("]: ");
        s.push_str(&self.message);
        s
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
        out.push(b'}');
        String::from_utf8_lossy(&out).into_owned()
    }

    pub fn render(&self, json: bool) -> String {
        if json {
            self.render_json()
        } else {
            self.render_text()
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
