//! The JSON writer: `json.stringify` (the text in one buffer), `json.write` and
//! `json.print` (the text handed on in chunks, `write_chunks`), within the JSON limits
//! and the deadline.

use super::limits::JsonLimits;
use crate::limits::LONG_OP_CHECK_ITEMS;
use crate::value::*;

/// Why writing stopped.
#[derive(Debug, PartialEq)]
pub enum WriteError {
    /// A value JSON cannot hold (a handle, invalid UTF-8).
    Value(String),
    /// A JSON limit (depth, nodes, bytes).
    Limit(String),
    /// The heap passed `--max-memory` while the text grew (`JsonLimits::heap`).
    Memory,
    /// The run's deadline passed while writing.
    Time,
    /// The sink of `write_chunks` refused a chunk (it keeps why).
    Sink,
}

struct Writer<'a> {
    lim: JsonLimits,
    out: Vec<u8>,
    indent: &'a [u8],
    nodes: usize,
    deadline: Option<std::time::Instant>,
    /// Where the text goes in chunks (`write_chunks`): `out` is handed to it and emptied
    /// once it holds `WRITE_CHUNK` bytes. None: all of it stays in `out`.
    sink: Option<&'a mut dyn FnMut(&[u8]) -> Result<(), ()>>,
    /// Bytes handed to the sink so far.
    flushed: usize,
    /// The length of `out` from which the heap is looked at next (`JsonLimits::heap`):
    /// every `HEAP_LOOK` bytes of text.
    heap_at: usize,
}

/// The text the writer adds between two looks at the heap (with a string's own bytes
/// found room for before they are written, and at most one node's indentation, 40 KiB,
/// past it).
use crate::memory::TEXT_LOOK as HEAP_LOOK;

/// The chunk `write_chunks` hands on (and the most it holds besides one string or number).
const WRITE_CHUNK: usize = 64 * 1024;

type WR = Result<(), WriteError>;

/// Write `v` as JSON text: compact when `indent` is empty, else laid out as
/// JavaScript's `JSON.stringify(v, null, indent)`.
pub fn stringify(v: &Value, indent: &[u8]) -> Result<Vec<u8>, WriteError> {
    stringify_until(v, indent, None, JsonLimits::default())
}

/// `stringify`, stopping with `WriteError::Time` once `deadline` has passed.
pub fn stringify_until(
    v: &Value,
    indent: &[u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
) -> Result<Vec<u8>, WriteError> {
    Ok(write(v, indent, deadline, lim, None)?.out)
}

/// `stringify_until`, handing the text to `sink` in chunks of about `WRITE_CHUNK` bytes
/// instead of holding it: its length. The same text and the same errors, found in the
/// same order (a sink that refuses is `WriteError::Sink`; it keeps why).
pub fn write_chunks(
    v: &Value,
    indent: &[u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), ()>,
) -> Result<usize, WriteError> {
    Ok(write(v, indent, deadline, lim, Some(sink))?.flushed)
}

/// The writer of both: `v` written, into `out` or through `sink`.
fn write<'a>(
    v: &Value,
    indent: &'a [u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
    sink: Option<&'a mut dyn FnMut(&[u8]) -> Result<(), ()>>,
) -> Result<Writer<'a>, WriteError> {
    let out = if sink.is_some() { Vec::with_capacity(WRITE_CHUNK + 1024) } else { Vec::new() };
    let mut w = Writer { out, indent, nodes: 0, lim, deadline, sink, flushed: 0, heap_at: HEAP_LOOK };
    w.value(v, 0)?;
    if w.total() > lim.bytes {
        return Err(w.too_long());
    }
    w.flush()?;
    Ok(w)
}

/// Bytes that need escaping in a JSON string: controls, quote, backslash.
static ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Append a JSON string literal for `s`, which must be valid UTF-8 (checked by callers).
/// Non-ASCII characters are written as they are; controls as `\n`-style or `\u00XX`.
pub fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        if !ESCAPE[c as usize] {
            continue;
        }
        out.extend_from_slice(&s[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

impl Writer<'_> {
    #[inline]
    fn count(&mut self) -> WR {
        self.nodes += 1;
        if self.nodes > self.lim.nodes {
            return Err(WriteError::Limit(self.lim.too_many()));
        }
        if self.nodes.is_multiple_of(LONG_OP_CHECK_ITEMS) && crate::meter::past(self.deadline) {
            return Err(WriteError::Time);
        }
        if self.total() > self.lim.bytes {
            return Err(self.too_long());
        }
        if self.out.len() >= WRITE_CHUNK && self.sink.is_some() {
            self.flush()?;
        }
        if self.out.len() >= self.heap_at {
            self.heap_look(0)?;
        }
        Ok(())
    }

    /// The heap with `extra` bytes more about to be written: past `JsonLimits::heap`,
    /// `WriteError::Memory`. The text counts by what it holds, not by its capacity (a
    /// doubling would count spare room that is never written, and that the text gives
    /// back when it is made a string).
    #[cold]
    #[inline(never)]
    fn heap_look(&mut self, extra: usize) -> WR {
        self.heap_at = self.out.len() + HEAP_LOOK;
        if crate::memory::text_over(self.out.capacity() - self.out.len(), extra, self.lim.heap) {
            return Err(WriteError::Memory);
        }
        Ok(())
    }

    fn too_long(&self) -> WriteError {
        WriteError::Limit(self.lim.too_long())
    }

    /// Bytes written so far.
    #[inline]
    fn total(&self) -> usize {
        self.flushed + self.out.len()
    }

    /// Hand what `out` holds to the sink.
    #[cold]
    #[inline(never)]
    fn flush(&mut self) -> WR {
        if let Some(sink) = &mut self.sink {
            if !self.out.is_empty() {
                sink(&self.out).map_err(|()| WriteError::Sink)?;
                self.flushed += self.out.len();
                self.out.clear();
            }
        }
        Ok(())
    }

    fn text(&mut self, s: &[u8], what: &str) -> WR {
        if self.total() + s.len() + 2 > self.lim.bytes {
            return Err(self.too_long());
        }
        if std::str::from_utf8(s).is_err() {
            return Err(WriteError::Value(format!("{what} is not valid UTF-8")));
        }
        if s.len() >= HEAP_LOOK {
            self.heap_look(s.len())?;
        }
        write_string(&mut self.out, s);
        Ok(())
    }

    fn newline(&mut self, level: usize) {
        if !self.indent.is_empty() {
            self.out.push(b'\n');
            for _ in 0..level {
                self.out.extend_from_slice(self.indent);
            }
        }
    }

    fn value(&mut self, v: &Value, depth: usize) -> WR {
        self.count()?;
        match v {
            Value::Unset | Value::Nil => self.out.extend_from_slice(b"null"),
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            Value::Num(n) => fmt_num(*n, &mut self.out),
            Value::Str(s) => self.text(s, "a string")?,
            Value::Handle(h) => {
                return Err(WriteError::Value(format!("a {} handle cannot be written as JSON", h.kind.name())))
            }
            Value::List(l) => {
                if depth + 1 > self.lim.depth {
                    return Err(WriteError::Limit(self.lim.too_deep()));
                }
                self.out.push(b'[');
                if l.is_empty() {
                    self.out.push(b']');
                    return Ok(());
                }
                for (i, item) in l.items().iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.newline(depth + 1);
                    self.value(item, depth + 1)?;
                }
                self.newline(depth);
                self.out.push(b']');
            }
            Value::Map(m) => {
                if depth + 1 > self.lim.depth {
                    return Err(WriteError::Limit(self.lim.too_deep()));
                }
                self.out.push(b'{');
                if m.is_empty() {
                    self.out.push(b'}');
                    return Ok(());
                }
                for (i, (k, item)) in m.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.newline(depth + 1);
                    self.text(k, "a map key")?;
                    self.out.push(b':');
                    if !self.indent.is_empty() {
                        self.out.push(b' ');
                    }
                    self.value(item, depth + 1)?;
                }
                self.newline(depth);
                self.out.push(b'}');
            }
        }
        Ok(())
    }
}
