//! `fmt(format, ...)`: printf-style formatting (SPEC 10), as C and Python's `%` know it.
//!
//! A conversion is `%[flags][width][.precision]conv`:
//! - flags: `-` (left-justify), `0` (pad numbers with zeros), `+` (always a sign),
//!   ` ` (a space where a plus sign would go);
//! - width: the least number of characters (UTF-8 characters, not bytes);
//! - precision: digits after the point for `%f` and `%e`, significant digits for `%g`,
//!   the least number of digits for `%d %i %x %X %o %b`, the most characters for `%s`
//!   and `%q`;
//! - conv: `s` (`str` of the value), `d`/`i` (an integral number), `f` `e` `g`
//!   (numbers), `x` `X` `o` `b` (non-negative integers below 2^64, in hex, upper-case
//!   hex, octal, binary), `q` (the value as JSON), `%` (a percent sign, no argument).
//!
//! Too few or too many arguments, an unknown conversion, or a value of the wrong type
//! for its conversion is a `value` error that names the argument's position (the format
//! is argument 1). Work: one unit per byte produced (the `custom` rule), charged as
//! each piece is produced; `%s` of a list or map is charged by `str` as usual. The
//! result is a string: past the string limit, the `string` limit.

use super::Host;
use super::*;
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::{is_integral, Value};

/// fmt: one unit per byte of the result, charged piece by piece, and
/// `WORK_FMT_FORMAT_BYTE` per byte of the format, charged before it is read.
pub const FMT: Cost = Cost::custom(1.0, 0.0);

#[derive(Default, Clone, Copy)]
struct Spec {
    left: bool,
    zero: bool,
    plus: bool,
    space: bool,
    width: usize,
    prec: Option<usize>,
}

fn ordinal(i: usize) -> String {
    format!("argument {}", i + 1)
}

fn fmt(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "fmt";
    let f = it.arg_str(NAME, args, 0)?.clone();
    // Scanning the format costs by its length, known before any work: charged first.
    it.work((f.len() as u64).saturating_mul(WORK_FMT_FORMAT_BYTE))?;
    let mut out: Vec<u8> = Vec::with_capacity(f.len());
    let mut next = 1usize;
    let mut i = 0usize;
    let mut charged = 0usize;
    let r = (|| -> R<()> {
        while i < f.len() {
            let Some(p) = f[i..].iter().position(|&c| c == b'%') else {
                out.extend_from_slice(&f[i..]);
                break;
            };
            out.extend_from_slice(&f[i..i + p]);
            let start = i + p;
            i = start + 1;
            let mut s = Spec::default();
            while let Some(&c) = f.get(i) {
                match c {
                    b'-' => s.left = true,
                    b'0' => s.zero = true,
                    b'+' => s.plus = true,
                    b' ' => s.space = true,
                    _ => break,
                }
                i += 1;
            }
            let digits = |i: &mut usize| -> Option<usize> {
                let b = *i;
                let mut n: usize = 0;
                while let Some(d) = f.get(*i).filter(|c| c.is_ascii_digit()) {
                    n = n.saturating_mul(10).saturating_add((d - b'0') as usize);
                    *i += 1;
                }
                (*i > b).then_some(n)
            };
            s.width = digits(&mut i).unwrap_or(0);
            if f.get(i) == Some(&b'.') {
                i += 1;
                s.prec = Some(digits(&mut i).unwrap_or(0));
            }
            // Width and precision are at most the string limit (beyond it no piece fits).
            let max_field = it.lim.n(L::String);
            if s.width > max_field || s.prec.is_some_and(|p| p > max_field) {
                return Err(it.limit(LimitKind::String, format!("{NAME}: a field wider than {max_field} bytes")));
            }
            // A wide field is found room for before it is padded: the padded piece, and
            // its copy in the text (`%200000000s` is 200 MB from a 12-byte format).
            it.room(s.width.saturating_mul(2))?;
            let Some(&conv) = f.get(i) else {
                return Err(it.err(
                    ErrKind::Value,
                    format!("{NAME}: the format ends inside a conversion (at byte {start}); write `%%` for a `%`"),
                ));
            };
            i += 1;
            if conv == b'%' {
                out.push(b'%');
                continue;
            }
            if !b"sdifegxXobq".contains(&conv) {
                let shown = String::from_utf8_lossy(&f[start..(i - 1 + utf8_len(conv)).min(f.len())]).into_owned();
                return Err(it.err(ErrKind::Value, format!("{NAME}: unknown conversion `{shown}` in the format")));
            }
            let pos = next;
            next += 1;
            if pos >= args.len() {
                return Err(it.err(
                    ErrKind::Value,
                    format!(
                        "{NAME}: too few arguments: `%{}` has no value ({} would be the value)",
                        conv as char,
                        ordinal(pos)
                    ),
                ));
            }
            let piece = convert(it, conv, s, &args[pos], pos)?;
            if out.len() + piece.len() > it.lim.n(L::String) {
                return Err(it.limit(LimitKind::String, format!("string of more than {} bytes", it.lim.n(L::String))));
            }
            out.extend_from_slice(&piece);
            it.work(FMT.units((out.len() - charged) as u64, 0))?;
            charged = out.len();
            if out.len() > it.lim.n(L::String) {
                return Err(it.limit(LimitKind::String, format!("string of more than {} bytes", it.lim.n(L::String))));
            }
        }
        if next < args.len() {
            return Err(it.err(
                ErrKind::Value,
                format!(
                    "{NAME}: too many arguments: the format uses {} value{}, {} is extra",
                    next - 1,
                    if next == 2 { "" } else { "s" },
                    ordinal(next)
                ),
            ));
        }
        Ok(())
    })();
    // Charged for what was produced, on the failing path too.
    it.work(FMT.units(out.len().saturating_sub(charged) as u64, 0))?;
    r?;
    if out.len() > it.lim.n(L::String) {
        return Err(it.limit(LimitKind::String, format!("string of more than {} bytes", it.lim.n(L::String))));
    }
    Ok(Value::str(out))
}

fn utf8_len(first: u8) -> usize {
    match first {
        0xF0..=0xF7 => 4,
        0xE0..=0xEF => 3,
        0xC0..=0xDF => 2,
        _ => 1,
    }
}

/// One conversion of value `v` (argument `pos`).
fn convert(it: &mut Host, conv: u8, s: Spec, v: &Value, pos: usize) -> R<Vec<u8>> {
    let wrong = |it: &Host, want: &str| {
        it.err(
            ErrKind::Value,
            format!("fmt: `%{}` needs {want}, but {} is a {}", conv as char, ordinal(pos), v.type_name()),
        )
    };
    match conv {
        b's' | b'q' => {
            let mut text = Vec::new();
            if conv == b's' {
                let max = it.lim.n(L::String);
                it.write_text(v, &mut text, max)?;
            } else {
                match crate::builtins::json::stringify_until(
                    v,
                    b"",
                    it.meter.deadline,
                    crate::builtins::json::JsonLimits::of(&it.lim).with_heap(&it.heap),
                ) {
                    Ok(t) => text = t,
                    Err(crate::builtins::json::WriteError::Time) => {
                        return Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached"))
                    }
                    Err(crate::builtins::json::WriteError::Limit(m)) => {
                        return Err(it.limit(LimitKind::Json, format!("fmt: {m}")))
                    }
                    Err(crate::builtins::json::WriteError::Memory) => {
                        return Err(it.limit(LimitKind::Memory, it.heap.over()))
                    }
                    Err(crate::builtins::json::WriteError::Value(m)) => {
                        return Err(it.err(ErrKind::Value, format!("fmt: `%q` of {}: {m}", ordinal(pos))))
                    }
                    // Only `json.write`'s chunked writing has a sink.
                    Err(crate::builtins::json::WriteError::Sink) => {
                        return Err(it.err(ErrKind::Io, "fmt: `%q`: the text could not be written"))
                    }
                }
            }
            if let Some(p) = s.prec {
                let cut = char_prefix(&text, p);
                text.truncate(cut);
            }
            Ok(pad(text, s))
        }
        b'd' | b'i' => {
            let Value::Num(x) = v else { return Err(wrong(it, "a number")) };
            if !is_integral(*x) {
                return Err(it.err(
                    ErrKind::Value,
                    format!(
                        "fmt: `%{}` needs an integral number, but {} is {}",
                        conv as char,
                        ordinal(pos),
                        crate::value::num_to_string(*x)
                    ),
                ));
            }
            // Past 10^17 the digits come from an exact (bignum) expansion: charged by
            // its worst shape, per digit.
            if x.abs() >= 1e17 {
                it.work((x.abs().log10().floor() as u64 + 1) * WORK_FMT_EXACT_DIGIT)?;
            }
            let mut digits = format!("{:.0}", x.abs()).into_bytes();
            min_digits(&mut digits, s.prec);
            Ok(signed(digits, *x < 0.0, s))
        }
        b'x' | b'X' | b'o' | b'b' => {
            let Value::Num(x) = v else { return Err(wrong(it, "a number")) };
            if !is_integral(*x) || *x < 0.0 || *x >= 18_446_744_073_709_551_616.0 {
                return Err(it.err(
                    ErrKind::Value,
                    format!(
                        "fmt: `%{}` needs an integer in 0..2^64, but {} is {}",
                        conv as char,
                        ordinal(pos),
                        crate::value::num_to_string(*x)
                    ),
                ));
            }
            let n = *x as u64;
            let mut digits = match conv {
                b'x' => format!("{n:x}"),
                b'X' => format!("{n:X}"),
                b'o' => format!("{n:o}"),
                _ => format!("{n:b}"),
            }
            .into_bytes();
            min_digits(&mut digits, s.prec);
            Ok(signed(digits, false, s))
        }
        _ => {
            // f, e, g
            let Value::Num(x) = v else { return Err(wrong(it, "a number")) };
            let p = s.prec.unwrap_or(6);
            // Rust's formatter refuses (panics on) a precision above u16::MAX; past
            // EXACT_DIGITS every digit of a binary64 is a zero, so those are appended.
            let q = p.min(EXACT_DIGITS);
            let zeros = p - q;
            // Digits past the shortest form come from an exact (bignum) expansion, whose
            // cost per digit grows with the number's exponent: charged by the worst shape
            // (`%.1000f` of 1e-300), per digit, before it is made.
            if q > 17 || x.abs() >= 1e17 {
                let span = q as u64 + x.abs().log10().abs().min(400.0) as u64;
                it.work(span * WORK_FMT_EXACT_DIGIT)?;
            }
            let body = match conv {
                b'f' => {
                    let mut t = format!("{:.*}", q, x.abs());
                    t.extend(std::iter::repeat_n('0', zeros));
                    t
                }
                b'e' => {
                    let t = exp_form(x.abs(), q);
                    match t.split_once('e') {
                        Some((m, e)) if zeros > 0 => format!("{m}{}e{e}", "0".repeat(zeros)),
                        _ => t,
                    }
                }
                // Trailing zeros are removed, and the choice of form looks at exponents
                // of at most 308: the same text as with the full precision.
                _ => general(x.abs(), q),
            };
            let neg = x.is_sign_negative() && *x != 0.0;
            Ok(signed(body.into_bytes(), neg, s))
        }
    }
}

/// Bytes of the first `n` characters of `t` (all of an invalid tail counts bytewise).
fn char_prefix(t: &[u8], n: usize) -> usize {
    let mut count = 0;
    for (i, &b) in t.iter().enumerate() {
        if b & 0xC0 != 0x80 {
            if count == n {
                return i;
            }
            count += 1;
        }
    }
    t.len()
}

fn chars(t: &[u8]) -> usize {
    t.iter().filter(|&&b| b & 0xC0 != 0x80).count()
}

fn min_digits(d: &mut Vec<u8>, prec: Option<usize>) {
    if let Some(p) = prec {
        if d.len() < p {
            let mut z = vec![b'0'; p - d.len()];
            z.append(d);
            *d = z;
        }
    }
}

/// The most digits a conversion of a binary64 formats itself: its exact decimal
/// expansion has at most 1,074 digits after the point and 767 significant digits, so
/// every digit past this many is a zero.
const EXACT_DIGITS: usize = 1100;

/// `d.ddde+XX`, as C writes `%e`.
fn exp_form(x: f64, p: usize) -> String {
    let s = format!("{:.*e}", p, x);
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let e: i32 = exp.parse().unwrap_or(0);
    format!("{mant}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
}

/// `%g`: `%e` or `%f` by the exponent, with `p` significant digits, trailing zeros
/// removed (C's rule: `%e` when the exponent is below -4 or at least the precision).
fn general(x: f64, p: usize) -> String {
    let p = p.max(1);
    if x == 0.0 {
        return "0".to_string();
    }
    let e = exp_form(x, p - 1);
    let exp: i32 = e.rsplit_once('e').and_then(|(_, x)| x.parse().ok()).unwrap_or(0);
    let strip = |s: String| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        }
    };
    if exp < -4 || exp >= p as i32 {
        let (mant, ex) = e.split_once('e').unwrap_or((&e, "+00"));
        format!("{}e{ex}", strip(mant.to_string()))
    } else {
        strip(format!("{:.*}", (p as i32 - 1 - exp).max(0) as usize, x))
    }
}

/// A number's text with its sign and padding.
fn signed(digits: Vec<u8>, neg: bool, s: Spec) -> Vec<u8> {
    let sign: &[u8] = if neg {
        b"-"
    } else if s.plus {
        b"+"
    } else if s.space {
        b" "
    } else {
        b""
    };
    let len = sign.len() + digits.len();
    if s.zero && !s.left && s.width > len {
        let mut out = sign.to_vec();
        out.resize(sign.len() + s.width - len, b'0');
        out.extend_from_slice(&digits);
        return out;
    }
    let mut t = sign.to_vec();
    t.extend_from_slice(&digits);
    pad(t, s)
}

/// Pad `t` with spaces to the width (in characters).
fn pad(t: Vec<u8>, s: Spec) -> Vec<u8> {
    let n = chars(&t);
    if s.width <= n {
        return t;
    }
    let fill = vec![b' '; s.width - n];
    if s.left {
        let mut t = t;
        t.extend_from_slice(&fill);
        t
    } else {
        let mut out = fill;
        out.extend_from_slice(&t);
        out
    }
}

pub const TABLE: &[Builtin] = &[b("fmt", "fmt(format, ...)", 1, VARIADIC, FMT, fmt)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn general_and_exponent_forms() {
        assert_eq!(exp_form(12345.678, 2), "1.23e+04");
        assert_eq!(exp_form(0.000123, 1), "1.2e-04");
        assert_eq!(general(0.0001, 6), "0.0001");
        assert_eq!(general(0.00001, 6), "1e-05");
        assert_eq!(general(123456.0, 6), "123456");
        assert_eq!(general(1234567.0, 6), "1.23457e+06");
        assert_eq!(general(1.5, 6), "1.5");
        assert_eq!(general(100.0, 2), "1e+02");
    }
}
