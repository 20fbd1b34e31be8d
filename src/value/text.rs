//! Values as text: numbers as Leash prints them, `str` of any value, and JSON, each
//! bounded by a cap and without native recursion in proportion to depth. Child of
//! `value`.

use super::*;

/// `x` as an integer when it is whole and below 2^53 in magnitude: printed as its digits.
/// (One conversion, the processor's: `as` took two, each with its saturation.)
#[inline(always)]
fn small_int(x: f64) -> Option<i64> {
    let i = leash_alloc::trunc_i64(x);
    (x.abs() < 9_007_199_254_740_992.0 && i as f64 == x).then_some(i)
}

/// `str(x)`: a number's text as a string value, an integer's digits written from a
/// buffer on the stack straight into the string (no vector built and copied).
pub fn num_str(x: f64) -> Value {
    if let Some(i) = small_int(x) {
        let mut buf = itoa::Buffer::new();
        return Value::str_from(buf.format(i).as_bytes());
    }
    let mut out = Vec::with_capacity(32);
    fmt_num(x, &mut out);
    Value::str_from(&out)
}

/// Write a number as Leash prints it: integers below 2^53 without a fraction, others in
/// the shortest form that reads back exactly, laid out as JavaScript lays it out.
pub fn fmt_num(x: f64, out: &mut Vec<u8>) {
    if x == 0.0 {
        out.push(b'0');
        return;
    }
    if let Some(i) = small_int(x) {
        let mut buf = itoa::Buffer::new();
        out.extend_from_slice(buf.format(i).as_bytes());
        return;
    }
    // Shortest round-trip digits, ties to even as JavaScript has them (ryu), then laid
    // out by JavaScript's Number::toString rules.
    let neg = x < 0.0;
    let mut buf = ryu::Buffer::new();
    let s = buf.format_finite(x.abs()).as_bytes();
    let (mant, exp) = match s.iter().position(|&c| c == b'e' || c == b'E') {
        Some(i) => (&s[..i], std::str::from_utf8(&s[i + 1..]).ok().and_then(|e| e.parse::<i32>().ok()).unwrap_or(0)),
        None => (s, 0),
    };
    let point = mant.iter().position(|&c| c == b'.').unwrap_or(mant.len()) as i32;
    let mut digits: Vec<u8> = mant.iter().filter(|c| c.is_ascii_digit()).copied().collect();
    let lead = digits.iter().take_while(|&&d| d == b'0').count();
    digits.drain(..lead);
    while digits.last() == Some(&b'0') {
        digits.pop();
    }
    if digits.is_empty() {
        out.push(b'0');
        return;
    }
    let k = digits.len() as i32;
    let n = point + exp - lead as i32; // value = 0.d1d2...dk * 10^n
    if neg {
        out.push(b'-');
    }
    if k <= n && n <= 21 {
        out.extend_from_slice(&digits);
        out.extend(std::iter::repeat_n(b'0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        out.extend_from_slice(&digits[..n as usize]);
        out.push(b'.');
        out.extend_from_slice(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', (-n) as usize));
        out.extend_from_slice(&digits);
    } else {
        out.push(digits[0]);
        if k > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        out.push(b'e');
        out.push(if n > 0 { b'+' } else { b'-' });
        let mut buf = itoa::Buffer::new();
        out.extend_from_slice(buf.format((n - 1).abs()).as_bytes());
    }
}

/// Call `f` with the text of number `x` (integers without an allocation).
#[inline]
pub fn with_num_text<T>(x: f64, f: impl FnOnce(&[u8]) -> T) -> T {
    match small_int(x) {
        Some(i) if x != 0.0 => {
            let mut buf = itoa::Buffer::new();
            f(buf.format(i).as_bytes())
        }
        _ => {
            let mut v = Vec::with_capacity(24);
            fmt_num(x, &mut v);
            f(&v)
        }
    }
}

pub fn num_to_string(x: f64) -> String {
    let mut v = Vec::new();
    fmt_num(x, &mut v);
    String::from_utf8(v).unwrap_or_default()
}

/// The text a writer adds between two looks at the heap (`write_str_within`).
use crate::memory::TEXT_LOOK as HEAP_LOOK;

/// Why a value could not be written as text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextError {
    /// A string inside a list or map is not valid UTF-8 (JSON text must be).
    InvalidUtf8,
    /// The text grew past the byte cap given.
    TooLong,
    /// The heap would pass its ceiling (`write_str_within`).
    Memory,
}

/// Append `str(v)` to `out`. Lists and maps are written as compact JSON; their strings
/// must be valid UTF-8. `cap` bounds the output while it is written.
pub fn write_str(v: &Value, out: &mut Vec<u8>, cap: usize) -> Result<(), TextError> {
    write_str_within(v, out, cap, usize::MAX)
}

/// `write_str`, looking at the heap as the text grows (`memory::text_over` against the
/// live-byte ceiling `heap`): every `HEAP_LOOK` bytes, and before a string of that size
/// or more. A list's text can be many times what the list holds (one string shared by
/// every item), so it is not known first.
pub fn write_str_within(v: &Value, out: &mut Vec<u8>, cap: usize, heap: usize) -> Result<(), TextError> {
    match v {
        Value::Str(s) => {
            if s.len() >= HEAP_LOOK && crate::memory::text_over(out.capacity() - out.len(), s.len(), heap) {
                return Err(TextError::Memory);
            }
            out.extend_from_slice(s)
        }
        Value::List(_) | Value::Map(_) => write_json(v, out, None, 0, cap, heap)?,
        other => write_scalar(other, out),
    }
    if out.len() > cap {
        return Err(TextError::TooLong);
    }
    Ok(())
}

fn write_scalar(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::Unset | Value::Nil => out.extend_from_slice(b"nil"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Num(n) => fmt_num(*n, out),
        Value::Handle(h) => out.extend_from_slice(format!("<{} {}>", h.kind.name(), h.id).as_bytes()),
        _ => {}
    }
}

/// One list or map being written by `write_json`: the next item to write.
enum WriteFrame<'a> {
    List(&'a List, usize),
    Map(&'a Map, usize),
}

/// Write `v` as JSON text: compact when `indent` is None, else laid out as JavaScript's
/// `JSON.stringify(v, null, indent)` does. `nil` is `null`; handles are written as their
/// `str` text in a JSON string. The walk keeps its own work stack (one small record per
/// open list or map), so a value nested millions deep needs no native stack.
/// (`heap`: the live-byte ceiling looked at as in `write_str_within`; `usize::MAX`:
/// none.)
pub fn write_json(
    v: &Value,
    out: &mut Vec<u8>,
    indent: Option<&[u8]>,
    level: usize,
    cap: usize,
    heap: usize,
) -> Result<(), TextError> {
    let mut stack: Vec<WriteFrame<'_>> = Vec::new();
    let mut cur = Some(v);
    let mut look = out.len() + HEAP_LOOK;
    loop {
        if let Some(v) = cur.take() {
            if out.len() > cap {
                return Err(TextError::TooLong);
            }
            if out.len() >= look {
                look = out.len() + HEAP_LOOK;
                if crate::memory::text_over(out.capacity() - out.len(), 0, heap) {
                    return Err(TextError::Memory);
                }
            }
            match v {
                Value::Unset | Value::Nil => out.extend_from_slice(b"null"),
                Value::Bool(_) | Value::Num(_) => write_scalar(v, out),
                Value::Handle(_) => {
                    let mut t = Vec::new();
                    write_scalar(v, &mut t);
                    crate::diag::json_string(out, &t);
                }
                Value::Str(s) => {
                    if std::str::from_utf8(s).is_err() {
                        return Err(TextError::InvalidUtf8);
                    }
                    if s.len() >= HEAP_LOOK && crate::memory::text_over(out.capacity() - out.len(), s.len(), heap) {
                        return Err(TextError::Memory);
                    }
                    crate::diag::json_string(out, s);
                }
                Value::List(l) => {
                    out.push(b'[');
                    if l.is_empty() {
                        out.push(b']');
                    } else {
                        stack.push(WriteFrame::List(l, 0));
                    }
                }
                Value::Map(m) => {
                    out.push(b'{');
                    if m.is_empty() {
                        out.push(b'}');
                    } else {
                        stack.push(WriteFrame::Map(m, 0));
                    }
                }
            }
        }
        // The open container's level: its depth below `v`, from `level`.
        let depth = level + stack.len().saturating_sub(1);
        let Some(top) = stack.last_mut() else { return Ok(()) };
        match top {
            WriteFrame::List(l, i) => {
                if let Some(item) = l.items().get(*i) {
                    if *i > 0 {
                        out.push(b',');
                    }
                    newline_indent(out, indent, depth + 1);
                    cur = Some(item);
                    *i += 1;
                } else {
                    newline_indent(out, indent, depth);
                    out.push(b']');
                    stack.pop();
                }
            }
            WriteFrame::Map(m, i) => {
                if let Some((k, item)) = m.get_index(*i) {
                    if *i > 0 {
                        out.push(b',');
                    }
                    newline_indent(out, indent, depth + 1);
                    if std::str::from_utf8(k).is_err() {
                        return Err(TextError::InvalidUtf8);
                    }
                    crate::diag::json_string(out, k);
                    out.push(b':');
                    if indent.is_some() {
                        out.push(b' ');
                    }
                    cur = Some(item);
                    *i += 1;
                } else {
                    newline_indent(out, indent, depth);
                    out.push(b'}');
                    stack.pop();
                }
            }
        }
        if out.len() > cap {
            return Err(TextError::TooLong);
        }
    }
}

fn newline_indent(out: &mut Vec<u8>, indent: Option<&[u8]>, level: usize) {
    if let Some(ind) = indent {
        if ind.is_empty() {
            return;
        }
        out.push(b'\n');
        for _ in 0..level {
            out.extend_from_slice(ind);
        }
    }
}
