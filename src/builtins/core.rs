//! Core builtins: output, types and conversions, program (args, exit, assertions).

use std::io::Write;

use super::snapshot;
use super::Host;
use super::{b, Builtin, Cost, CONST, VARIADIC};
use crate::diag::ErrKind;
use crate::error::{Unwind, R};
use crate::limits::*;
use crate::value::*;

/// Join the `str` of each argument with `sep` into one print's text (within 1 MiB).
fn joined(it: &mut Host, args: &[Value], sep: &[u8]) -> R<Vec<u8>> {
    let mut out = Vec::new();
    for (i, a) in args.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(sep);
        }
        it.write_text_as(a, &mut out, it.lim.n(L::StdoutPrint), LimitKind::Stdout)?;
    }
    if out.len() > it.lim.n(L::StdoutPrint) {
        return Err(it.limit(
            LimitKind::Stdout,
            format!("one print of more than {max_print_bytes} bytes", max_print_bytes = it.lim.n(L::StdoutPrint)),
        ));
    }
    Ok(out)
}

/// Write to stdout within the run's stdout budget.
pub fn emit(it: &mut Host, text: &[u8]) -> R<()> {
    it.budgets.stdout.charge(text.len() as u64).map_err(|e| it.budget_fail(e))?;
    it.out.write(text).map_err(|m| it.err(ErrKind::Io, m))
}

fn print(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let mut text = joined(it, args, b" ")?;
    text.push(b'\n');
    emit(it, &text)?;
    Ok(Value::Nil)
}

fn write(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let text = joined(it, args, b"")?;
    emit(it, &text)?;
    Ok(Value::Nil)
}

fn eprint(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let mut text = joined(it, args, b" ")?;
    text.push(b'\n');
    it.budgets.stderr.charge(text.len() as u64).map_err(|e| it.budget_fail(e))?;
    let _ = it.out.flush();
    let _ = std::io::stderr().write_all(&text);
    Ok(Value::Nil)
}

fn type_(_: &mut Host, args: &mut [Value]) -> R<Value> {
    Ok(Value::string(args[0].type_name()))
}

fn str_(it: &mut Host, args: &mut [Value]) -> R<Value> {
    match &args[0] {
        Value::Str(_) => return Ok(std::mem::take(&mut args[0])),
        Value::Num(x) => return Ok(num_str(*x)),
        _ => {}
    }
    Ok(Value::str(it.to_text(&args[0], it.lim.n(L::String))?))
}

/// Parse number text: optional sign, decimal (digits, fraction, exponent) or `0x` hex,
/// surrounding ASCII whitespace allowed. Not finite is not a number.
pub fn parse_number(s: &[u8]) -> Option<f64> {
    let t = std::str::from_utf8(s).ok()?.trim_matches(|c: char| c.is_ascii_whitespace());
    let (neg, body) = match t.as_bytes().first()? {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let v = if let Some(hex) = body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
        if hex.is_empty() || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
            return None;
        }
        hex.bytes().fold(0f64, |acc, c| acc * 16.0 + (c as char).to_digit(16).unwrap_or(0) as f64)
    } else {
        // Only digits, one '.', and an exponent: refuse "inf", "nan", "1_000" and the like.
        let b = body.as_bytes();
        let mut i = 0;
        let mut digits = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
            digits += 1;
        }
        // A whole number of up to 15 digits is exact in binary64: no need for the
        // decimal-to-binary parser (the common case: `int(m[6])` on a log's byte count).
        if i == b.len() && (1..=15).contains(&digits) {
            let v = b.iter().fold(0u64, |acc, &c| acc * 10 + (c - b'0') as u64) as f64;
            return Some(if neg { -v } else { v });
        }
        if i < b.len() && b[i] == b'.' {
            i += 1;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
                digits += 1;
            }
        }
        if digits == 0 {
            return None;
        }
        if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
            i += 1;
            if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                i += 1;
            }
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                i += 1;
            }
            if i == start {
                return None;
            }
        }
        if i != b.len() {
            return None;
        }
        body.parse::<f64>().ok()?
    };
    let v = if neg { -v } else { v };
    v.is_finite().then_some(v)
}

fn num(it: &mut Host, args: &mut [Value]) -> R<Value> {
    match &args[0] {
        Value::Num(n) => Ok(Value::Num(*n)),
        Value::Str(s) => match parse_number(s) {
            Some(v) => Ok(Value::Num(v)),
            None => Err(it.err(ErrKind::Parse, format!("num: not a number: \"{}\"", shorten(s)))),
        },
        other => Err(it.type_err("num", 0, "a string or number", other)),
    }
}

/// Text of possibly long input, for messages.
pub fn shorten(s: &[u8]) -> String {
    let t = String::from_utf8_lossy(&s[..s.len().min(40)]).into_owned();
    if s.len() > 40 {
        format!("{t}...")
    } else {
        t
    }
}

fn int(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = match &args[0] {
        Value::Num(n) => *n,
        Value::Str(s) => match parse_number(s) {
            Some(v) => v,
            None => return Err(it.err(ErrKind::Parse, format!("int: not a number: \"{}\"", shorten(s)))),
        },
        other => return Err(it.type_err("int", 0, "a string or number", other)),
    };
    Ok(Value::Num(n.trunc() + 0.0))
}

fn bool_(_: &mut Host, args: &mut [Value]) -> R<Value> {
    Ok(Value::Bool(args[0].truthy()))
}

fn args_(it: &mut Host, _: &mut [Value]) -> R<Value> {
    let items = it.script_args.iter().map(|a| Value::str(a.clone())).collect();
    it.make_list(items)
}

fn exit(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let code = match it.opt(args, 0) {
        None => 0,
        Some(_) => it.arg_int("exit", args, 0, 0.0, 255.0)?,
    };
    Err(Box::new(Unwind::Exit(code as i32)))
}

fn assert(it: &mut Host, args: &mut [Value]) -> R<Value> {
    if args[0].truthy() {
        return Ok(Value::Nil);
    }
    let msg = match args.get(1) {
        Some(m) => String::from_utf8_lossy(&it.to_text(m, it.lim.n(L::String))?).into_owned(),
        None => "assertion failed".to_string(),
    };
    Err(it.err(ErrKind::Assert, msg))
}

fn assert_eq(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let mut n = EqCount::default();
    let same = equals_counted(&args[0], &args[1], &mut n);
    it.work(n.units())?;
    if same {
        return Ok(Value::Nil);
    }
    let (mut msg, units) = difference(&args[0], &args[1]);
    // The walk reads both values again and writes at most MAX_PATHS quoted lines (or
    // the diff): charged by what it touched and wrote.
    it.work(units)?;
    if let Some(m) = args.get(2) {
        let t = it.to_text(m, it.lim.n(L::String))?;
        msg = format!("{}: {msg}", String::from_utf8_lossy(&t));
    }
    Err(it.err(ErrKind::Assert, msg))
}

/// Longest quoted value in an assertion message, in bytes (longer ones are cut, with
/// the count of bytes cut).
pub const QUOTE_MAX: usize = 200;
/// At most this many differing paths are listed; then a count of the rest.
pub const MAX_PATHS: usize = 10;
/// A unified diff in an assertion message keeps at most this many lines.
pub const MAX_DIFF_LINES: usize = 200;

/// A value as an assertion message quotes it: JSON (strings quoted, `nil`), at most
/// `QUOTE_MAX` bytes; a longer string is cut at a character boundary and says how many
/// bytes were cut (`"aaa..." (1000 more bytes)`), a longer list or map its size.
pub fn quote(v: &Value) -> String {
    match v {
        Value::Nil | Value::Unset => "nil".into(),
        Value::Str(s) => {
            let text = String::from_utf8_lossy(s);
            let cut = text.floor_char_boundary(QUOTE_MAX.min(text.len()));
            let mut out = Vec::new();
            crate::diag::json_string(&mut out, text[..cut].as_bytes());
            let mut q = String::from_utf8_lossy(&out).into_owned();
            if cut < text.len() {
                q.insert_str(q.len() - 1, "...");
                q.push_str(&format!(" ({} more bytes)", s.len().saturating_sub(cut)));
            }
            q
        }
        _ => {
            let mut out = Vec::new();
            let whole = write_json(v, &mut out, None, 0, QUOTE_MAX, usize::MAX).is_ok() && out.len() <= QUOTE_MAX;
            let s = String::from_utf8_lossy(&out).into_owned();
            if whole {
                return s;
            }
            let cut = s.floor_char_boundary(QUOTE_MAX.min(s.len()));
            let size = match v {
                Value::List(l) => format!("a list of {} items", l.len()),
                Value::Map(m) => format!("a map of {} keys", m.len()),
                other => other.type_name().to_string(),
            };
            format!("{}... ({size})", &s[..cut])
        }
    }
}

/// What differs between `got` and `want` (known to differ), as an assertion message, and
/// the work units of finding and writing it: for lists and maps the paths that differ
/// (`[3].name: expected "ada", got "Ada"`; at most `MAX_PATHS`, then a count), for
/// strings of more than one line a unified diff, else `expected X, got Y`.
pub fn difference(got: &Value, want: &Value) -> (String, u64) {
    match (got, want) {
        (Value::Str(g), Value::Str(w)) if g.contains(&b'\n') || w.contains(&b'\n') => {
            let diff = unified_diff(w, g);
            let mut lines = diff.lines();
            let mut out = String::from("strings differ:");
            for l in lines.by_ref().take(MAX_DIFF_LINES) {
                out.push('\n');
                // Each diff line is bounded like a quoted value.
                if l.len() > QUOTE_MAX {
                    let cut = l.floor_char_boundary(QUOTE_MAX);
                    out.push_str(&format!("{}... ({} more bytes)", &l[..cut], l.len() - cut));
                } else {
                    out.push_str(l);
                }
            }
            let rest = lines.count();
            if rest > 0 {
                out.push_str(&format!("\n... and {rest} more lines of the diff"));
            }
            let units = (g.len() + w.len() + out.len()) as u64;
            (out, units)
        }
        (Value::List(_), Value::List(_)) | (Value::Map(_), Value::Map(_)) => {
            let mut d = Diffs::default();
            let mut path = String::new();
            walk(&mut path, got, want, &mut d, 0);
            if d.count == 1 && d.root {
                return (d.shown.remove(0), d.units);
            }
            let what = if matches!(got, Value::List(_)) { "lists" } else { "maps" };
            let mut out = format!("{what} differ at {} path{}:", d.count, if d.count == 1 { "" } else { "s" });
            for l in &d.shown {
                out.push_str("\n  ");
                out.push_str(l);
            }
            if d.count > d.shown.len() as u64 {
                out.push_str(&format!("\n  ... and {} more", d.count - d.shown.len() as u64));
            }
            let units = d.units + out.len() as u64;
            (out, units)
        }
        _ => {
            let s = format!("expected {}, got {}", quote(want), quote(got));
            let units = s.len() as u64;
            (s, units)
        }
    }
}

#[derive(Default)]
struct Diffs {
    shown: Vec<String>,
    count: u64,
    units: u64,
    /// The one difference found is the whole value (no path).
    root: bool,
}

/// Path text of a map key: `.name` for a plain name, else `["a key"]` (bounded).
fn key_path(path: &mut String, k: &[u8]) {
    let plain = !k.is_empty()
        && k.len() <= 64
        && (k[0].is_ascii_alphabetic() || k[0] == b'_')
        && k.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if plain {
        path.push('.');
        path.push_str(std::str::from_utf8(k).unwrap_or(""));
    } else {
        path.push('[');
        path.push_str(&quote(&Value::Str(bytes(k))));
        path.push(']');
    }
}

const MISSING: &str = "<missing>";

fn record(path: &str, want: Option<&Value>, got: Option<&Value>, d: &mut Diffs) {
    d.count += 1;
    if d.shown.len() < MAX_PATHS {
        let q = |v: Option<&Value>| v.map(quote).unwrap_or_else(|| MISSING.to_string());
        let line = if path.is_empty() {
            d.root = true;
            format!("expected {}, got {}", q(want), q(got))
        } else {
            // A path is bounded too: deep nesting of long keys would make it long.
            let p = if path.len() > 4 * QUOTE_MAX {
                let cut = path.floor_char_boundary(4 * QUOTE_MAX);
                format!("{}... ({} more bytes)", &path[..cut], path.len() - cut)
            } else {
                path.to_string()
            };
            format!("{p}: expected {}, got {}", q(want), q(got))
        };
        d.units += line.len() as u64;
        d.shown.push(line);
    }
}

fn walk(path: &mut String, got: &Value, want: &Value, d: &mut Diffs, depth: usize) {
    d.units += 1;
    match (got, want) {
        (Value::List(g), Value::List(w)) if depth < 256 => {
            if std::rc::Rc::ptr_eq(g, w) {
                return;
            }
            let (gi, wi) = (g.items(), w.items());
            for i in 0..gi.len().max(wi.len()) {
                let l = path.len();
                path.push_str(&format!("[{i}]"));
                match (gi.get(i), wi.get(i)) {
                    (Some(a), Some(b)) => walk(path, a, b, d, depth + 1),
                    (a, b) => {
                        d.units += 1;
                        record(path, b, a, d)
                    }
                }
                path.truncate(l);
            }
        }
        (Value::Map(g), Value::Map(w)) if depth < 256 => {
            if Map::ptr_eq(g, w) {
                return;
            }
            for (k, wv) in w.iter() {
                let l = path.len();
                d.units += k.len() as u64;
                key_path(path, k);
                match g.get(k) {
                    Some(gv) => walk(path, gv, wv, d, depth + 1),
                    None => record(path, Some(wv), None, d),
                }
                path.truncate(l);
            }
            for (k, gv) in g.iter() {
                d.units += k.len() as u64;
                if !w.contains(k) {
                    let l = path.len();
                    key_path(path, k);
                    record(path, None, Some(gv), d);
                    path.truncate(l);
                }
            }
        }
        _ => {
            let mut n = EqCount::default();
            if !equals_counted(got, want, &mut n) {
                record(path, Some(want), Some(got), d);
            }
            d.units += n.units();
        }
    }
}

/// `assert_snapshot(name, value)`: compare `str(value)` with the stored snapshot
/// `__snapshots__/<stem>/<name>.snap` beside the test file; with `--update-snapshots`,
/// write it instead.
fn assert_snapshot(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let name = it.arg_text("assert_snapshot", args, 0)?.to_string();
    let safe = !name.is_empty()
        && name.len() <= 128
        && name != "."
        && name != ".."
        && name.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'));
    if !safe {
        return Err(
            it.err(ErrKind::Value, "assert_snapshot: a name is 1 to 128 letters, digits, '_', '-' or '.'".to_string())
        );
    }
    let Some(dir) = it.snapshots.clone() else {
        return Err(it.err(ErrKind::Value, "assert_snapshot needs a script file (not -e or stdin)"));
    };
    if !snapshot::usable_stem(&dir.stem) {
        return Err(it.err(
            ErrKind::Value,
            format!("assert_snapshot: the script's name gives no snapshot folder (stem {:?})", dir.stem),
        ));
    }
    let text = it.to_text(&args[1], it.lim.n(L::String))?;
    let file_name = format!("{name}.snap");
    let file = dir.dir.join("__snapshots__").join(&dir.stem).join(&file_name);
    let io = |it: &Host, what: &str, e: std::io::Error| {
        it.err(
            ErrKind::Io,
            format!("assert_snapshot: cannot {what} {}: {}", file.display(), crate::fileio::io_reason(&e)),
        )
    };
    let folder = snapshot::open_folder(&dir.dir, &dir.stem, dir.update).map_err(|e| io(it, "open the folder of", e))?;
    let stored = match &folder {
        Some(f) => snapshot::read(f, &file_name, it.lim.n(L::String)).map_err(|e| io(it, "read", e))?,
        None => None,
    };
    if dir.update {
        let Some(folder) = folder else {
            return Err(io(it, "create the folder of", std::io::Error::from(std::io::ErrorKind::NotFound)));
        };
        if stored.as_deref() != Some(&text[..]) {
            // Charged before anything reaches the disk, like file.write.
            it.budgets.file_writes.charge(text.len() as u64).map_err(|e| it.budget_fail(e))?;
            snapshot::write(&folder, &file_name, &text).map_err(|e| io(it, "write", e))?;
        }
        return Ok(Value::Nil);
    }
    match stored {
        Some(stored) if stored == text => Ok(Value::Nil),
        Some(stored) => {
            // The diff reads both texts once: charged like the comparison's bytes.
            it.work((stored.len() + text.len()) as u64)?;
            Err(it.err(
                ErrKind::Assert,
                format!(
                    "snapshot {name} differs (run with --update-snapshots to accept):\n{}",
                    unified_diff(&stored, &text)
                ),
            ))
        }
        None => {
            Err(it
                .err(ErrKind::Assert, format!("snapshot {name} is missing (run with --update-snapshots to write it)")))
        }
    }
}

/// A unified diff of `expected` and `actual` by lines: one hunk from the first line that
/// differs to the last, with up to 3 lines of context (linear in the texts' size; not a
/// minimal diff, but a true one that `patch` accepts).
pub fn unified_diff(expected: &[u8], actual: &[u8]) -> String {
    let split = |t: &[u8]| -> Vec<String> {
        let s = String::from_utf8_lossy(t);
        let mut v: Vec<String> = s.split('\n').map(str::to_string).collect();
        if s.ends_with('\n') {
            v.pop();
        }
        v
    };
    let (a, b) = (split(expected), split(actual));
    let pre = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let max_suf = a.len().min(b.len()) - pre;
    let suf = a.iter().rev().zip(b.iter().rev()).take(max_suf).take_while(|(x, y)| x == y).count();
    let ctx = 3;
    let start = pre.saturating_sub(ctx);
    let (a_end, b_end) = (a.len() - suf, b.len() - suf);
    let tail = suf.min(ctx);
    let mut out = String::from("--- expected\n+++ actual\n");
    let range = |from: usize, n: usize| if n == 0 { format!("{from},0") } else { format!("{},{n}", from + 1) };
    out.push_str(&format!("@@ -{} +{} @@\n", range(start, a_end + tail - start), range(start, b_end + tail - start)));
    for l in &a[start..pre] {
        out.push_str(&format!(" {l}\n"));
    }
    for l in &a[pre..a_end] {
        out.push_str(&format!("-{l}\n"));
    }
    for l in &b[pre..b_end] {
        out.push_str(&format!("+{l}\n"));
    }
    for l in &a[a_end..a_end + tail] {
        out.push_str(&format!(" {l}\n"));
    }
    if expected.last() != actual.last() && (expected.last() == Some(&b'\n') || actual.last() == Some(&b'\n')) {
        out.push_str("\\ No newline at end of one of the texts\n");
    }
    out.trim_end_matches('\n').to_string()
}

/// `fail(kind, message)`: raise a runtime error of a named kind. Callable only from
/// stdlib modules (see `MODULE_ONLY`), so that a module written in Leash can refuse a bad
/// argument with the kind a builtin would use (`value`, `type`, ...), not `user`.
fn fail(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let kind = it.arg_text("fail", args, 0)?;
    let kind = match kind {
        "type" => ErrKind::Type,
        "value" => ErrKind::Value,
        "index" => ErrKind::Index,
        "key" => ErrKind::Key,
        "parse" => ErrKind::Parse,
        "io" => ErrKind::Io,
        "user" => ErrKind::User,
        other => return Err(it.err(ErrKind::Value, format!("fail: unknown error kind \"{other}\""))),
    };
    let msg = String::from_utf8_lossy(it.arg_str("fail", args, 1)?).into_owned();
    Err(it.err(kind, msg))
}

/// clock(): seconds since the run started, monotonic, fractional.
fn clock(it: &mut Host, _args: &mut [Value]) -> R<Value> {
    Ok(Value::Num(it.meter.elapsed().as_secs_f64()))
}

/// sleep(seconds): wait. The total asked for over the run is bounded by the `sleep`
/// limit (checked before waiting: a request past it waits not at all), and the wait
/// ends at the `--max-time` deadline with the `time` limit.
fn sleep(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let secs = it.arg_num("sleep", args, 0)?;
    if secs < 0.0 {
        return Err(it.err(
            ErrKind::Value,
            format!("sleep: argument 1 must not be negative, got {}", crate::value::num_to_string(secs)),
        ));
    }
    let max_sleep = it.lim.n(L::Sleep) as f64 / 1000.0;
    if it.slept + secs > max_sleep {
        return Err(it.limit(
            LimitKind::Sleep,
            format!(
                "sleep: {} s more would wait longer than {} s in all (the sleep limit)",
                crate::value::num_to_string(secs),
                crate::value::num_to_string(max_sleep)
            ),
        ));
    }
    it.slept += secs;
    let want = std::time::Duration::from_secs_f64(secs);
    match it.meter.remaining() {
        Some(left) if want >= left => {
            std::thread::sleep(left);
            Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached"))
        }
        _ => {
            std::thread::sleep(want);
            Ok(Value::Nil)
        }
    }
}

/// is_main(): true in the entry script's code while it runs as a script; false in an
/// included file's code and under `leash test`. The resolver passes whether the call
/// stands in the entry script as a hidden argument (it knows every call's file).
fn is_main(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let in_entry = matches!(args.first(), Some(Value::Bool(true)));
    Ok(Value::Bool(in_entry && !it.testing))
}

/// Builtins that only stdlib modules can call: a bare name in a module resolves here
/// after the public table; in a script these names are free for user functions.
pub const MODULE_ONLY: &[Builtin] = &[b("fail", "fail(kind, message)", 2, 2, CONST, fail)];

pub const TABLE: &[Builtin] = &[
    b("print", "print(...)", 0, VARIADIC, Cost::bytes(1.0), print),
    b("write", "write(...)", 0, VARIADIC, Cost::bytes(1.0), write),
    b("eprint", "eprint(...)", 0, VARIADIC, Cost::bytes(1.0), eprint),
    b("type", "type(v)", 1, 1, CONST, type_),
    b("str", "str(v)", 1, 1, CONST, str_),
    b("num", "num(s)", 1, 1, Cost::bytes(1.0), num),
    b("int", "int(v)", 1, 1, Cost::bytes(1.0), int),
    b("bool", "bool(v)", 1, 1, CONST, bool_),
    b("args", "args()", 0, 0, Cost::items(2.0), args_),
    b("exit", "exit([status])", 0, 1, CONST, exit),
    b("assert", "assert(cond[, message])", 1, 2, CONST, assert),
    b("assert_eq", "assert_eq(actual, expected[, message])", 2, 3, CONST, assert_eq),
    b("assert_snapshot", "assert_snapshot(name, value)", 2, 2, Cost::bytes(1.0), assert_snapshot),
    b("clock", "clock()", 0, 0, CONST, clock),
    b("sleep", "sleep(seconds)", 1, 1, CONST, sleep),
    b("is_main", "is_main()", 0, 0, CONST, is_main),
];

#[cfg(test)]
mod tests {
    use super::parse_number;

    /// `sleep` asks the meter how much time is left: with the (fake) clock moved past
    /// the deadline, it stops at once with the `time` limit instead of waiting.
    #[test]
    fn sleep_reads_the_meters_clock() {
        let hour = std::time::Duration::from_secs(3600);
        let prog = crate::load("t.lsh", b"sleep(0.5)\n".to_vec(), None).unwrap();
        let cfg = super::super::host::RunConfig { deadline: Some(crate::meter::after(hour)), ..Default::default() };
        crate::meter::fake::advance(2 * hour);
        let out = crate::run(&prog, &cfg);
        crate::meter::fake::reset();
        let d = out.diag.expect("the time limit");
        assert_eq!((out.status, d.kind.as_str()), (4, "time"));
    }

    #[test]
    fn number_text() {
        assert_eq!(parse_number(b"12"), Some(12.0));
        assert_eq!(parse_number(b" -1.5e3 "), Some(-1500.0));
        assert_eq!(parse_number(b"0xff"), Some(255.0));
        assert_eq!(parse_number(b".5"), Some(0.5));
        assert_eq!(parse_number(b"5."), Some(5.0));
        assert_eq!(parse_number(b""), None);
        assert_eq!(parse_number(b"abc"), None);
        assert_eq!(parse_number(b"inf"), None);
        assert_eq!(parse_number(b"nan"), None);
        assert_eq!(parse_number(b"1e999"), None);
        assert_eq!(parse_number(b"1e"), None);
        assert_eq!(parse_number(b"1 2"), None);
    }

    #[test]
    fn whole_numbers_read_directly_match_the_decimal_parser() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut texts: Vec<String> = [
            "0",
            "-0",
            "+0",
            "007",
            "-007",
            "999999999999999",
            "9999999999999999",
            "123456789012345",
            "1234567890123456",
            "9007199254740993",
            " 42 ",
            "-1",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let digits = 1 + (x % 18) as usize;
            let n = format!("{:0width$}", x % 10u64.pow(digits as u32), width = (x >> 40) as usize % 3 + digits);
            texts.push(if x & 1 == 0 { n } else { format!("-{n}") });
        }
        for t in texts {
            let want = t.trim().parse::<f64>().ok();
            let got = parse_number(t.as_bytes());
            assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{t:?}");
        }
    }
}
