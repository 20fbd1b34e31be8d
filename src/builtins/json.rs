//! JSON (`json.*`): RFC 8259 JSON, strict, with the JSON limits
//! (SPEC 8) enforced while the text is read or written, never after an unbounded value
//! has been built.
//!
//! - Input and output: at most the `json` limit in bytes; nesting at most `json_depth`
//!   (`[]` is depth 1); at most `json_nodes` values, every container and scalar
//!   counted. Exceeding any is the `json` limit (fatal). The same three bounds hold in
//!   both directions, so whatever `json.stringify` writes, `json.parse` reads back.
//! - Malformed text is a `parse` error naming line and column: invalid UTF-8, a byte
//!   order mark, comments, trailing commas, `NaN`/`Infinity`, leading zeros, control
//!   characters in strings, lone surrogate escapes, numbers that overflow binary64,
//!   anything after the value.
//! - Objects keep key order; a repeated key keeps its first position and last value.
//!
//! The parts: `parse` (the parser, over one whole text or a stream), `stream`
//! (`json.read`'s text read in chunks from a `Feed`), `share` (equal strings and small
//! arrays of a large parse sharing one box), `write` (the writer, into one buffer or in
//! chunks), `limits` (the bounds both directions share); here the builtins.

mod limits;
mod parse;
mod share;
mod stream;
#[cfg(test)]
mod tests;
mod write;

pub use limits::JsonLimits;
pub use parse::{parse, parse_until, parse_within, ParseError};
pub use share::{StrCache, INTERN_MAX, INTERN_MIN_TEXT};
pub use stream::{read_stream, Feed, Pieces};
pub use write::{stringify, stringify_until, write_chunks, write_string, WriteError};

use super::Host;
use super::{b, gated, Builtin, Cap, Cost};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;
use parse::{line_col, PR};

/// A parse's outcome as text, the same for a whole text and a stream: the value written
/// compactly, or the error with its line and column (tests, the fuzz target).
pub fn outcome(r: PR<Value>, text: Option<&[u8]>) -> String {
    match r {
        Ok(v) => {
            match stringify_until(
                &v,
                b"",
                None,
                JsonLimits { bytes: usize::MAX, depth: 1 << 20, nodes: usize::MAX, heap: usize::MAX },
            ) {
                Ok(t) => format!("ok {}", String::from_utf8_lossy(&t)),
                Err(e) => format!("ok, unwritable: {e:?}"),
            }
        }
        Err(ParseError::Syntax(m, at)) => {
            let (l, c) = line_col(text.unwrap_or(b""), at);
            format!("syntax: {m} at line {l}, column {c}")
        }
        Err(ParseError::SyntaxAt(m, l, c)) => format!("syntax: {m} at line {l}, column {c}"),
        Err(e) => format!("{e:?}"),
    }
}

fn json_parse(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("json.parse", args, 0)?;
    parsed(it, parse_in(it, s), "json.parse", s, true)
}

/// `text` parsed within the run's JSON limits, deadline and heap bound.
fn parse_in(it: &Host, text: &[u8]) -> PR<Value> {
    parse_within(text, it.meter.deadline, JsonLimits::of(&it.lim), Some(&it.heap))
}

/// A parse's value (checked against the frame limit) or its failure: the limit it
/// reached, or the syntax error at its line and column (`whole`: a document of many
/// lines) or column (one line of JSON Lines), after `prefix`.
fn parsed(it: &Host, r: Result<Value, ParseError>, prefix: &str, text: &[u8], whole: bool) -> R<Value> {
    match r {
        Ok(v) => {
            it.check_value(&v)?;
            Ok(v)
        }
        Err(ParseError::Memory(m)) => Err(it.limit(LimitKind::Memory, m)),
        Err(ParseError::Limit(m)) => Err(it.limit(LimitKind::Json, format!("{prefix}: {m}"))),
        Err(ParseError::Time) => Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached")),
        Err(ParseError::Syntax(m, at)) => {
            let (line, col) = line_col(text, at);
            let at = if whole { format!("line {line}, column {col}") } else { format!("column {col}") };
            Err(it.err(ErrKind::Parse, format!("{prefix}: {m} at {at}")))
        }
        Err(ParseError::SyntaxAt(m, line, col)) => {
            Err(it.err(ErrKind::Parse, format!("{prefix}: {m} at line {line}, column {col}")))
        }
        // The caller takes the feed's own failure first.
        Err(ParseError::Feed) => Err(it.err(ErrKind::Io, format!("{prefix}: reading failed"))),
    }
}

/// The indent argument at `pos` (as `json.stringify` takes it).
fn indent_arg(it: &Host, name: &str, args: &[Value], pos: usize) -> R<Vec<u8>> {
    Ok(match it.opt(args, pos) {
        None => Vec::new(),
        Some(Value::Num(_)) => {
            let n = it.arg_int(name, args, pos, 0.0, 10.0)? as usize;
            vec![b' '; n]
        }
        Some(Value::Str(s)) => {
            if s.len() > 10 || std::str::from_utf8(s).is_err() {
                return Err(
                    it.err(ErrKind::Value, format!("{name}: an indent string must be valid UTF-8 of at most 10 bytes"))
                );
            }
            s.to_vec()
        }
        Some(other) => return Err(it.type_err(name, pos, "a number or a string", other)),
    })
}

/// The length of the text `json.stringify` would give, and every error it would give,
/// without holding the text (`write_chunks` into nothing): for `json.write` and
/// `json.print`, which check their budgets before the first byte goes out.
fn measure_text(it: &mut Host, name: &str, v: &Value, indent: &[u8]) -> R<usize> {
    let r = write_chunks(v, indent, it.meter.deadline, JsonLimits::of(&it.lim), &mut |_| Ok(()));
    written(it, name, v, r)
}

/// What writing `v` gave, or its failure: the limit it reached or the value it could not
/// write (charged the value's accounted size, a bound on what was written before it
/// stopped), after `name`.
fn written<T>(it: &mut Host, name: &str, v: &Value, r: Result<T, WriteError>) -> R<T> {
    match r {
        Ok(t) => Ok(t),
        Err(WriteError::Value(m)) => {
            it.work(STRINGIFY.units(v.acct() as u64, 0))?;
            Err(it.err(ErrKind::Value, format!("{name}: {m}")))
        }
        Err(WriteError::Limit(m)) => Err(it.limit(LimitKind::Json, format!("{name}: {m}"))),
        Err(WriteError::Memory) => Err(it.limit(LimitKind::Memory, it.heap.over())),
        Err(WriteError::Time) => Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached")),
        Err(WriteError::Sink) => Err(it.err(ErrKind::Io, format!("{name}: the text could not be written"))),
    }
}

/// The second pass of `json.write` and `json.print`: the text again, into `sink`.
fn fill_text(
    v: &Value,
    indent: &[u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), ()>,
) -> super::files::Filled {
    use super::files::Filled;
    match write_chunks(v, indent, deadline, lim, sink) {
        Ok(_) => Filled::Done,
        Err(WriteError::Time) => Filled::Time,
        Err(_) => Filled::Refused,
    }
}

/// json.print: the text made twice (its length first, then its bytes) and written once
/// to stdout's buffer, per byte of the text (release build, 2026-12-04, `bench/work.py`:
/// 1.34 ns a unit).
const WRITE: Cost = Cost::custom(4.0, 0.0);

/// json.write: the same, and the bytes written to the file (the kernel's copy into the
/// page cache: `bench/work.py` measured 2.2 to 2.8 ns a unit at 4 a byte).
const WRITE_FILE: Cost = Cost::custom(8.0, 0.0);

/// `json.write(path, v[, indent])`: `file.write(path, json.stringify(v[, indent]))`
/// without holding the text. The text's length is found first (every error
/// `json.stringify` gives, found there, writes nothing), then the file-write limits are
/// checked as `file.write` checks them, the file opened and truncated, the length
/// charged, and the text written in chunks of 64 KiB.
fn json_write(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.write";
    let p = it.arg_str(NAME, args, 0)?.clone();
    let indent = indent_arg(it, NAME, args, 2)?;
    let n = measure_text(it, NAME, &args[1], &indent)?;
    it.work(WRITE_FILE.units(n as u64, 0))?;
    let (deadline, lim) = (it.meter.deadline, JsonLimits::of(&it.lim));
    let v = &args[1];
    super::files::write_streamed(it, NAME, &p, n, &mut |sink| fill_text(v, &indent, deadline, lim, sink))?;
    Ok(Value::Nil)
}

/// `json.print(v[, indent])`: `print(json.stringify(v[, indent]))` without holding the
/// text: the same limits (one print's bytes, the newline excluded; the run's stdout
/// budget, charged with the newline before anything is written), the text written in
/// chunks.
fn json_print(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.print";
    let indent = indent_arg(it, NAME, args, 1)?;
    let n = measure_text(it, NAME, &args[0], &indent)?;
    it.work(WRITE.units(n as u64, 0))?;
    if n > it.lim.n(L::StdoutPrint) {
        return Err(it.limit(
            LimitKind::Stdout,
            // (as `print` of the text says it)
            format!("text of more than {max_print_bytes} bytes", max_print_bytes = it.lim.n(L::StdoutPrint)),
        ));
    }
    it.budgets.stdout.charge(n as u64 + 1).map_err(|e| it.budget_fail(e))?;
    let (deadline, lim) = (it.meter.deadline, JsonLimits::of(&it.lim));
    let mut failed = None;
    let out = &mut it.out;
    let filled = fill_text(&args[0], &indent, deadline, lim, &mut |chunk| {
        out.write(chunk).map_err(|m| {
            failed = Some(m);
        })
    });
    if let Some(m) = failed {
        return Err(it.err(ErrKind::Io, m));
    }
    match filled {
        super::files::Filled::Done => {}
        super::files::Filled::Time => return Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached")),
        super::files::Filled::Refused => {
            return Err(it.err(ErrKind::Io, format!("{NAME}: the text could not be written")))
        }
    }
    it.out.write(b"\n").map_err(|m| it.err(ErrKind::Io, m))?;
    Ok(Value::Nil)
}

fn json_stringify(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.stringify";
    let indent = indent_arg(it, NAME, args, 1)?;
    let r = stringify_until(&args[0], &indent, it.meter.deadline, JsonLimits::of(&it.lim).with_heap(&it.heap));
    Ok(Value::str(written(it, NAME, &args[0], r)?))
}

/// json.next: each line read, at json.parse's rate plus the read (charged as it goes).
const NEXT: Cost = Cost::custom(21.0, 0.0);

/// `json.next(source)`: the next value of a JSON Lines stream, nil at its end. The source
/// is `"-"` (stdin, within the stdin budgets), a file reader (`file.open`, within the
/// streaming-read budgets) or a socket (`net.read_line`'s budgets). One line is held at
/// a time, so a filter over a stream of any length runs in constant memory; blank lines
/// are skipped; a line that is not one JSON value is a `parse` error naming its number.
fn json_next(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.next";
    enum Src {
        Stdin,
        File(u32),
        Sock(u32),
    }
    let src = match &args[0] {
        Value::Str(s) if s.as_slice() == b"-" => Src::Stdin,
        Value::Handle(h) if h.kind == HandleKind::File => {
            Src::File(super::files::reader_id(it, NAME, &args[0], HandleKind::File)?)
        }
        Value::Handle(h) if h.kind == HandleKind::Socket => Src::Sock(h.id),
        Value::Str(_) => {
            return Err(
                it.err(ErrKind::Value, format!("{NAME}: the source is \"-\" (stdin), a file reader or a socket"))
            )
        }
        other => return Err(it.type_err(NAME, 0, "\"-\", a file reader or a socket", other)),
    };
    loop {
        let (line, n) = match src {
            Src::Stdin => {
                let l = super::stdin::next_stdin_line(it)?;
                (l, it.stdin.lines)
            }
            Src::File(id) => {
                let l = super::files::next_line(it, NAME, id)?;
                (l, super::files::lines_read(it, id))
            }
            Src::Sock(id) => {
                let v = super::net::read_line(it, &mut [args[0].clone()])?;
                let l = match v {
                    Value::Str(s) => Some(s.to_vec()),
                    _ => None,
                };
                (l, super::net::lines_read(it, id))
            }
        };
        let Some(line) = line else { return Ok(Value::Nil) };
        it.work(NEXT.units(line.len() as u64, 0))?;
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        return parsed(it, parse_in(it, &line), &format!("{NAME}: line {n}"), &line, false);
    }
}

/// json.read: each chunk read, at json.parse's rate (the text is read once and parsed
/// once, as `json.parse(file.read(path))` reads and parses it).
const READ: Cost = Cost::custom(20.0, 0.0);

/// `json.read`'s source: stdin, or a file reader.
enum ReadSrc {
    Stdin,
    File(u32),
}

/// The chunks of a `json.read`: each charged to its read budget and to the work meter as
/// it comes; the deadline and the heap looked at after each.
struct HostFeed<'h> {
    it: &'h mut Host,
    src: ReadSrc,
    fail: Option<crate::error::Fail>,
}

impl Feed for HostFeed<'_> {
    fn chunk(&mut self, buf: &mut Vec<u8>) -> Result<bool, ()> {
        let it = &mut *self.it;
        let r = match self.src {
            ReadSrc::Stdin => super::stdin::next_chunk(it, buf),
            ReadSrc::File(id) => super::files::next_chunk(it, "json.read", id, buf),
        };
        let r = r.and_then(|n| {
            it.work(READ.units(n as u64, 0))?;
            it.check_time()?;
            it.check_memory()?;
            Ok(n)
        });
        match r {
            Ok(n) => Ok(n > 0),
            Err(f) => {
                self.fail = Some(f);
                Err(())
            }
        }
    }
    fn heap(&self) -> Option<&crate::memory::HeapMeter> {
        Some(&self.it.heap)
    }
}

/// `json.read(source)`: the one JSON document of a file reader (`file.open`) or of stdin
/// (`"-"`), read to its end in chunks: the text is never held whole, only the token being
/// read and one chunk. The same value and the same errors as `json.parse` of the whole
/// text (a syntax error's line and column; the JSON limits; invalid UTF-8 and a text
/// over the `json` limit reported whatever else it holds); the bytes count against the
/// reader's budget (`file_reads`, or `stdin`).
fn json_read(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.read";
    let src = match &args[0] {
        Value::Str(s) if s.as_slice() == b"-" => ReadSrc::Stdin,
        Value::Handle(h) if h.kind == HandleKind::File => {
            ReadSrc::File(super::files::reader_id(it, NAME, &args[0], HandleKind::File)?)
        }
        Value::Str(_) => {
            return Err(it.err(
                ErrKind::Value,
                format!("{NAME}: the source is \"-\" (stdin) or a file reader (file.open(path))"),
            ))
        }
        other => return Err(it.type_err(NAME, 0, "\"-\" or a file reader", other)),
    };
    let (deadline, lim) = (it.meter.deadline, JsonLimits::of(&it.lim));
    let mut feed = HostFeed { it, src, fail: None };
    let r = read_stream(&mut feed, deadline, lim);
    if let Some(f) = feed.fail.take() {
        return Err(f);
    }
    parsed(it, r, NAME, b"", true)
}

/// json.stringify: the bytes of the text written.
const STRINGIFY: Cost = Cost::bytes(2.0);

pub const TABLE: &[Builtin] = &[
    b("json.parse", "json.parse(s)", 1, 1, Cost::bytes(20.0), json_parse),
    b("json.stringify", "json.stringify(v[, indent])", 1, 2, STRINGIFY, json_stringify),
    b("json.next", "json.next(source)", 1, 1, NEXT, json_next),
    b("json.read", "json.read(source)", 1, 1, READ, json_read),
    gated("json.write", "json.write(path, v[, indent])", 2, 3, Cap::Files, WRITE_FILE, json_write),
    b("json.print", "json.print(v[, indent])", 1, 2, WRITE, json_print),
];
