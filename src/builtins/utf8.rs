//! The `utf8` namespace (round 3): strings seen as code points. Strings are bytes; these
//! read them as UTF-8 and refuse anything else with a `value` error that says where the
//! first bad byte is (except `utf8.valid`, which answers the question). Work is charged
//! by the bytes read (each builtin reads its whole string, or up to the cut for `sub`)
//! and the bytes or items produced.

use unicode_width::UnicodeWidthChar;

use super::Host;
use super::{b, Builtin, Cost};
use crate::diag::ErrKind;
use crate::error::R;
use crate::value::*;

/// Argument `i` as text, or a `value` error naming the first invalid byte.
fn text<'a>(it: &Host, name: &str, args: &'a [Value], i: usize) -> R<&'a str> {
    let s = it.arg_str(name, args, i)?;
    std::str::from_utf8(s).map_err(|e| {
        it.err(
            ErrKind::Value,
            format!("{name}: argument {} is not valid UTF-8 (bad byte at index {})", i + 1, e.valid_up_to()),
        )
    })
}

/// `utf8.len(s)`: the number of code points.
fn len(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let t = text(it, "utf8.len", args, 0)?;
    Ok(Value::Num(t.chars().count() as f64))
}

/// A code-point bound of `utf8.sub` as `slice` takes it: negative from the end, clamped.
fn bound(it: &Host, args: &[Value], i: usize, n: usize, default: usize) -> R<usize> {
    let Some(_) = it.opt(args, i) else { return Ok(default) };
    let v = it.arg_num("utf8.sub", args, i)?;
    if !is_integral(v) {
        return Err(it.err(ErrKind::Value, format!("utf8.sub: argument {} must be an integer", i + 1)));
    }
    let v = if v < 0.0 { v + n as f64 } else { v };
    Ok(v.clamp(0.0, n as f64) as usize)
}

/// `utf8.sub(s, start[, end])`: the code points start..end (end exclusive; negative
/// counts from the end; out of range is clamped, as `slice` does).
fn sub(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let t = text(it, "utf8.sub", args, 0)?;
    let n = t.chars().count();
    let (s, e) = (bound(it, args, 1, n, 0)?, bound(it, args, 2, n, n)?);
    if s >= e {
        return Ok(Value::str(Vec::new()));
    }
    let mut idx = t.char_indices().map(|(b, _)| b).chain(std::iter::once(t.len()));
    let from = idx.nth(s).unwrap_or(t.len());
    let to = if e == n { t.len() } else { idx.nth(e - s - 1).unwrap_or(t.len()) };
    it.room(to - from)?;
    Ok(Value::str_from(&t.as_bytes()[from..to]))
}

/// `utf8.valid(s)`: whether s is valid UTF-8.
fn valid(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("utf8.valid", args, 0)?;
    Ok(Value::Bool(std::str::from_utf8(s).is_ok()))
}

/// `utf8.width(s)`: terminal columns, character by character as `wcwidth` counts: East
/// Asian wide and fullwidth characters 2, combining marks and other zero-width
/// characters 0, control characters 0 (wcwidth says -1: they have no width to add).
fn width(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let t = text(it, "utf8.width", args, 0)?;
    let w: usize = t.chars().map(|c| if c.is_control() { 0 } else { c.width().unwrap_or(0) }).sum();
    Ok(Value::Num(w as f64))
}

/// `utf8.codes(s)`: the list of code points (numbers), as `ord` gives each.
fn codes(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let t = text(it, "utf8.codes", args, 0)?;
    let n = t.chars().count();
    it.list_room(n, n)?;
    let mut items = Vec::with_capacity(n);
    items.extend(t.chars().map(|c| Value::Num(c as u32 as f64)));
    it.make_list(items)
}

pub const TABLE: &[Builtin] = &[
    b("utf8.len", "utf8.len(s)", 1, 1, Cost::bytes(0.875), len),
    b("utf8.sub", "utf8.sub(s, start[, end])", 2, 3, Cost::bytes(0.625), sub),
    b("utf8.valid", "utf8.valid(s)", 1, 1, Cost::bytes(0.75), valid),
    b("utf8.width", "utf8.width(s)", 1, 1, Cost::bytes(1.5), width),
    b("utf8.codes", "utf8.codes(s)", 1, 1, Cost::bytes_items(0.5, 8.0), codes),
];
