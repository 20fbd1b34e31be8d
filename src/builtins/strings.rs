//! String builtins. Strings are bytes; functions that work on characters (`upper`,
//! `lower`, `trim`, `chars`, `reverse`, `pad_*`, `ord`) read valid UTF-8 as Unicode and
//! fall back to ASCII rules (or refuse, where characters are the point) otherwise.

use super::host::find_bytes;
use super::Host;
use super::{b, Builtin, Cost, CONST};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

fn case(it: &mut Host, args: &mut [Value], name: &str, upper: bool) -> R<Value> {
    let s = it.arg_str(name, args, 0)?;
    // ASCII text (the common case) maps byte by byte, as Unicode case mapping does on it.
    if s.is_ascii() {
        // A short text is mapped on the stack and copied straight into its string (a
        // vector allocated and freed besides cost about a third of the call).
        if s.len() <= crate::value::STR_INLINE {
            let mut buf = [0u8; crate::value::STR_INLINE];
            let b = &mut buf[..s.len()];
            b.copy_from_slice(s);
            if upper {
                b.make_ascii_uppercase();
            } else {
                b.make_ascii_lowercase();
            }
            it.check_str_len(b.len())?;
            return Ok(Value::str_from(b));
        }
        it.room(s.len())?;
        let out = if upper { s.to_ascii_uppercase() } else { s.to_ascii_lowercase() };
        return it.make_str(out);
    }
    // Non-ASCII text goes through Unicode's tables: charged by its worst shape.
    let extra = crate::meter::scaled(s.len() as u64, WORK_CASE_UNICODE_BYTE_X256);
    it.work(extra)?;
    let s = it.arg_str(name, args, 0)?;
    // (Room for the text's length: a case mapping that grows a character is seen by
    // the check after the call.)
    it.room(s.len())?;
    let out = match std::str::from_utf8(s) {
        Ok(t) => {
            if upper {
                t.to_uppercase().into_bytes()
            } else {
                t.to_lowercase().into_bytes()
            }
        }
        Err(_) => {
            if upper {
                s.to_ascii_uppercase()
            } else {
                s.to_ascii_lowercase()
            }
        }
    };
    it.make_str(out)
}

fn upper(it: &mut Host, args: &mut [Value]) -> R<Value> {
    case(it, args, "upper", true)
}

fn lower(it: &mut Host, args: &mut [Value]) -> R<Value> {
    case(it, args, "lower", false)
}

fn trimmed(it: &mut Host, args: &mut [Value], name: &str, start: bool, end: bool) -> R<Value> {
    let s = it.arg_str(name, args, 0)?;
    if s.is_ascii() {
        // ASCII text (valid UTF-8 by itself) trimmed byte by byte, of the characters
        // Unicode calls white space among ASCII's (tab, line feed, vertical tab, form
        // feed, carriage return, space: what `str::trim` takes), without the UTF-8
        // validation that cost more than the trim.
        let ws = |b: &u8| *b == b' ' || (b'\t'..=b'\r').contains(b);
        let mut t: &[u8] = s;
        if start {
            t = &t[t.iter().position(|b| !ws(b)).unwrap_or(t.len())..];
        }
        if end {
            t = &t[..t.iter().rposition(|b| !ws(b)).map_or(0, |k| k + 1)];
        }
        return Ok(Value::str_from(t));
    }
    // Validating non-ASCII text as UTF-8 costs more than the ASCII rate.
    let extra = crate::meter::scaled(s.len() as u64, WORK_TRIM_UNICODE_BYTE_X256);
    it.work(extra)?;
    let s = it.arg_str(name, args, 0)?;
    let out: &[u8] = match std::str::from_utf8(s) {
        Ok(t) => {
            let mut t = t;
            if start {
                t = t.trim_start();
            }
            if end {
                t = t.trim_end();
            }
            t.as_bytes()
        }
        Err(_) => {
            let mut t: &[u8] = s;
            if start {
                t = t.trim_ascii_start();
            }
            if end {
                t = t.trim_ascii_end();
            }
            t
        }
    };
    Ok(Value::str_from(out))
}

fn trim(it: &mut Host, args: &mut [Value]) -> R<Value> {
    trimmed(it, args, "trim", true, true)
}

fn trim_start(it: &mut Host, args: &mut [Value]) -> R<Value> {
    trimmed(it, args, "trim_start", true, false)
}

fn trim_end(it: &mut Host, args: &mut [Value]) -> R<Value> {
    trimmed(it, args, "trim_end", false, true)
}

fn replace(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("replace", args, 0)?;
    let from = it.arg_str("replace", args, 1)?;
    let to = it.arg_str("replace", args, 2)?;
    if from.is_empty() {
        return Err(it.err(ErrKind::Value, "replace: the text to replace must not be empty"));
    }
    let count = match it.opt(args, 3) {
        None => usize::MAX,
        Some(_) => it.arg_int("replace", args, 3, 0.0, 9_007_199_254_740_991.0)? as usize,
    };
    // A one-byte text is looked for by `memchr` (a searcher's set-up cost more than a
    // short subject's whole search), any other by one searcher for the whole call.
    let r = match from.as_slice() {
        &[b] => replaced(it, s, to, 1, count, |h| memchr::memchr(b, h))?,
        _ => {
            let finder = memchr::memmem::Finder::new(from.as_slice());
            replaced(it, s, to, from.len(), count, |h| finder.find(h))?
        }
    };
    // Nothing replaced: a copy of the text, made at once (a copy and not the text
    // itself: a shared string would make a later `..=` on the result copy it, a work
    // charge the call did not make before).
    Ok(r.unwrap_or_else(|| Value::str_from(s)))
}

/// `s` with up to `count` occurrences of a text of `n` bytes (found by `find`) replaced
/// by `to`; None when there is none. The result's size is known before it is built
/// (`str_room`): at most the subject's when `to` is no longer than the text, else by
/// the occurrences counted first (one search more, only for a replacement that grows
/// the text: `replace(s, "a", "aa")` would otherwise double a text past
/// `--max-memory` before any check saw it).
fn replaced(
    it: &Host,
    s: &[u8],
    to: &[u8],
    n: usize,
    count: usize,
    find: impl Fn(&[u8]) -> Option<usize>,
) -> R<Option<Value>> {
    let mut rest: &[u8] = s;
    let first = if count > 0 { find(rest) } else { None };
    let Some(mut i) = first else { return Ok(None) };
    let size = if to.len() <= n {
        s.len()
    } else {
        let mut k = 1usize;
        let mut r = &rest[i + n..];
        while k < count {
            match find(r) {
                Some(j) => {
                    k += 1;
                    r = &r[j + n..];
                }
                None => break,
            }
        }
        s.len().saturating_add(k.saturating_mul(to.len() - n))
    };
    it.str_room(size)?;
    let mut out = Vec::with_capacity(size);
    let mut done = 0;
    loop {
        out.extend_from_slice(&rest[..i]);
        out.extend_from_slice(to);
        rest = &rest[i + n..];
        done += 1;
        if done >= count {
            break;
        }
        match find(rest) {
            Some(j) => i = j,
            None => break,
        }
    }
    out.extend_from_slice(rest);
    it.make_str(out).map(Some)
}

/// starts_with, ends_with: the bytes of the affix compared.
const AFFIX: Cost = Cost::custom(0.02, 0.0);

fn starts_with(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("starts_with", args, 0)?;
    let p = it.arg_str("starts_with", args, 1)?;
    let r = s.starts_with(p);
    it.work(AFFIX.units(p.len() as u64, 0))?;
    Ok(Value::Bool(r))
}

fn ends_with(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("ends_with", args, 0)?;
    let p = it.arg_str("ends_with", args, 1)?;
    let r = s.ends_with(p);
    it.work(AFFIX.units(p.len() as u64, 0))?;
    Ok(Value::Bool(r))
}

fn find(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("find", args, 0)?;
    let sub = it.arg_str("find", args, 1)?;
    Ok(Value::Num(find_bytes(s, sub).map(|i| i as f64).unwrap_or(-1.0)))
}

/// repeat: the bytes of the result (a string) or its items (a list), charged before it
/// is built.
pub(crate) const REPEAT: Cost = Cost::custom(0.035, 6.0);

fn repeat(it: &mut Host, args: &mut [Value]) -> R<Value> {
    if let Value::List(_) = &args[0] {
        return super::collections::repeat_list(it, args);
    }
    let s = match &args[0] {
        Value::Str(s) => s,
        other => return Err(it.type_err("repeat", 0, "a string or list", other)),
    };
    let n = it.arg_int("repeat", args, 1, 0.0, 9_007_199_254_740_991.0)? as u64;
    let total = (s.len() as u64).saturating_mul(n);
    if total > it.lim.n(L::String) as u64 {
        return Err(it.limit(
            LimitKind::String,
            format!("string of more than {max_string_bytes} bytes", max_string_bytes = it.lim.n(L::String)),
        ));
    }
    it.room(total as usize)?;
    // Charged before the string is built (its size is known).
    it.work(REPEAT.units(total, 0))?;
    Ok(Value::str(s.repeat(n as usize)))
}

fn chars(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let t = it.arg_text("chars", args, 0)?;
    let n = t.chars().count();
    it.list_room(n, n)?;
    let mut items = Vec::with_capacity(n);
    items.extend(t.chars().map(|c| Value::string(c.encode_utf8(&mut [0; 4]))));
    it.make_list(items)
}

fn ord(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let t = it.arg_text("ord", args, 0)?;
    let mut cs = t.chars();
    match (cs.next(), cs.next()) {
        (Some(c), None) => Ok(Value::Num(c as u32 as f64)),
        _ => Err(it.err(ErrKind::Value, "ord: needs a string of exactly one character")),
    }
}

fn chr(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = it.arg_int("chr", args, 0, 0.0, 0x10FFFF as f64)?;
    if (0..128).contains(&n) {
        return Ok(Value::Str(crate::value::byte_str(n as u8)));
    }
    match char::from_u32(n as u32) {
        Some(c) => Ok(Value::string(c.encode_utf8(&mut [0; 4]))),
        None => Err(it.err(ErrKind::Value, format!("chr: {n} is not a Unicode scalar value"))),
    }
}

/// Width of a string for padding: characters when valid UTF-8, else bytes.
fn width(s: &[u8]) -> usize {
    // (ASCII text, the common case, without the UTF-8 validation: each byte a character.)
    if s.is_ascii() {
        return s.len();
    }
    match std::str::from_utf8(s) {
        Ok(t) => t.chars().count(),
        Err(_) => s.len(),
    }
}

fn pad(it: &mut Host, args: &mut [Value], name: &str, left: bool) -> R<Value> {
    let s = it.arg_str(name, args, 0)?;
    let w = it.arg_int(name, args, 1, 0.0, it.lim.n(L::String) as f64)? as usize;
    let fill: &[u8] = match it.opt(args, 2) {
        None => b" ",
        Some(_) => {
            let f = it.arg_str(name, args, 2)?;
            if width(f) != 1 {
                return Err(it.err(ErrKind::Value, format!("{name}: the fill must be one character")));
            }
            f
        }
    };
    let have = width(s);
    if have >= w {
        return Ok(args[0].clone());
    }
    let n = w - have;
    let total = s.len() + n * fill.len();
    it.str_room(total)?;
    // A short result is laid out on the stack and copied straight into its string (no
    // vector allocated and freed besides); a longer one in a vector of its length.
    if total <= crate::value::STR_INLINE {
        let mut buf = [0u8; crate::value::STR_INLINE];
        let mut k = 0;
        let mut put = |b: &[u8], times: usize| {
            for _ in 0..times {
                buf[k..k + b.len()].copy_from_slice(b);
                k += b.len();
            }
        };
        if left {
            put(fill, n);
            put(s, 1);
        } else {
            put(s, 1);
            put(fill, n);
        }
        return Ok(Value::str_from(&buf[..k]));
    }
    let mut out = Vec::with_capacity(total);
    let add_fill = |out: &mut Vec<u8>| match *fill {
        [b] => out.resize(out.len() + n, b),
        _ => out.extend_from_slice(&fill.repeat(n)),
    };
    if left {
        add_fill(&mut out);
        out.extend_from_slice(s);
    } else {
        out.extend_from_slice(s);
        add_fill(&mut out);
    }
    Ok(Value::str(out))
}

fn pad_left(it: &mut Host, args: &mut [Value]) -> R<Value> {
    pad(it, args, "pad_left", true)
}

fn pad_right(it: &mut Host, args: &mut [Value]) -> R<Value> {
    pad(it, args, "pad_right", false)
}

// ----------------------------------------------------------------------
// Bytes (round 3): strings are bytes; these see them as bytes, whatever UTF-8 says.
// ----------------------------------------------------------------------

/// `byte(n)`: the one-byte string of byte value n (0..255).
fn byte(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = it.arg_int("byte", args, 0, 0.0, 255.0)?;
    Ok(Value::str(vec![n as u8]))
}

/// `byte_at(s, i)`: the byte value at index i (negative from the end).
fn byte_at(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("byte_at", args, 0)?;
    let n = it.arg_int("byte_at", args, 1, -9_007_199_254_740_991.0, 9_007_199_254_740_991.0)?;
    let i = if n < 0 { n + s.len() as i64 } else { n };
    if i < 0 || i >= s.len() as i64 {
        return Err(it.err(ErrKind::Index, format!("byte_at: index {n} out of range for length {}", s.len())));
    }
    Ok(Value::Num(s[i as usize] as f64))
}

/// tr: the bytes of the string, `from` and `to`, charged before the one pass.
const TR: Cost = Cost::custom(1.25, 0.0);

/// `tr(s, from, to)`: each byte of `from` in s becomes the byte at the same index of
/// `to`, or is removed when `to` is shorter; a byte listed twice in `from` maps as its
/// last listing says (as Python's `str.maketrans` and POSIX `tr` do). One pass over s
/// through a 256-entry table.
fn tr(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("tr", args, 0)?;
    let from = it.arg_str("tr", args, 1)?;
    let to = it.arg_str("tr", args, 2)?;
    it.work(TR.units((s.len() + from.len() + to.len()) as u64, 0))?;
    if to.len() > from.len() {
        return Err(it.err(
            ErrKind::Value,
            format!(
                "tr: `to` ({} bytes) is longer than `from` ({} bytes): each byte of `to` replaces the byte of `from` at its index",
                to.len(),
                from.len()
            ),
        ));
    }
    // 0..=255: the byte it becomes; 256: removed.
    let mut table: [u16; 256] = std::array::from_fn(|b| b as u16);
    for (i, &f) in from.iter().enumerate() {
        table[f as usize] = to.get(i).map_or(256, |&t| t as u16);
    }
    it.room(s.len())?;
    let mut out = Vec::with_capacity(s.len());
    for &c in s.iter() {
        let t = table[c as usize];
        if t < 256 {
            out.push(t as u8);
        }
    }
    it.make_str(out)
}

/// count(s, sub): the bytes of s scanned, charged before; each match found, after.
pub(crate) const COUNT_SUB: Cost = Cost::custom(0.05, 0.0);
const COUNT_MATCH: u64 = 8;

/// `count(s, sub)`: non-overlapping occurrences of sub in s, left to right; an empty
/// sub occurs len(s) + 1 times (between every two bytes and at both ends, as Python counts).
pub(crate) fn count_sub(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("count", args, 0)?;
    let sub = match &args[1] {
        Value::Str(t) => t,
        other => return Err(it.type_err("count", 1, "a string (argument 1 is a string)", other)),
    };
    if sub.is_empty() {
        return Ok(Value::Num((s.len() + 1) as f64));
    }
    it.work(COUNT_SUB.units(s.len() as u64, 0))?;
    // memmem's matches do not overlap: each search starts after the last match.
    let n = memchr::memmem::find_iter(s.as_slice(), sub.as_slice()).count();
    it.work((n as u64).saturating_mul(COUNT_MATCH))?;
    Ok(Value::Num(n as f64))
}

pub const TABLE: &[Builtin] = &[
    b("upper", "upper(s)", 1, 1, Cost::bytes(0.0625), upper),
    b("lower", "lower(s)", 1, 1, Cost::bytes(0.0625), lower),
    b("trim", "trim(s)", 1, 1, Cost::bytes(0.125), trim),
    b("trim_start", "trim_start(s)", 1, 1, Cost::bytes(0.125), trim_start),
    b("trim_end", "trim_end(s)", 1, 1, Cost::bytes(0.125), trim_end),
    b("replace", "replace(s, from, to[, count])", 3, 4, Cost::bytes(1.5), replace),
    b("starts_with", "starts_with(s, prefix)", 2, 2, AFFIX, starts_with),
    b("ends_with", "ends_with(s, suffix)", 2, 2, AFFIX, ends_with),
    b("find", "find(s, sub)", 2, 2, Cost::bytes(1.5), find),
    b("repeat", "repeat(s_or_list, n)", 2, 2, REPEAT, repeat),
    // (50 a character until 2026-12-07: 0.45 ns a unit; four-byte characters, its worst
    // shape, 0.52; bench/work.py rows "chars", "chars (four-byte characters)".)
    b("chars", "chars(s)", 1, 1, Cost::bytes_items(1.0, 35.0), chars),
    b("ord", "ord(c)", 1, 1, CONST, ord),
    b("chr", "chr(n)", 1, 1, CONST, chr),
    b("pad_left", "pad_left(s, width[, fill])", 2, 3, Cost::bytes(0.0625), pad_left),
    b("pad_right", "pad_right(s, width[, fill])", 2, 3, Cost::bytes(0.0625), pad_right),
    b("byte", "byte(n)", 1, 1, CONST, byte),
    b("byte_at", "byte_at(s, i)", 2, 2, CONST, byte_at),
    b("tr", "tr(s, from, to)", 3, 3, TR, tr),
];
