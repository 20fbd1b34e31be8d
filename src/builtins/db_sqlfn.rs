//! SQL functions on the leash (SPEC 10, round 3: "SQLite stays on the leash").
//!
//! SQLite runs a whole SQL function call as one virtual-machine instruction, so its
//! progress handler (the step and work meter of `db.rs`) cannot see what the call does:
//! `randomblob(1000000)` per row, `replace`/`instr`/`trim(X, Y)` at O(n*m), a `GLOB` with a
//! long class run, ran for seconds to minutes inside one instruction, uncharged and past
//! `--max-time`. Every connection therefore gets these functions in place of SQLite's own
//! (a function registered on a connection is found before the built-in of that name and
//! arity):
//! - written here, linear or charged step by step, with the deadline looked at as they go:
//!   `randomblob`, `zeroblob`, `replace`, `instr`, `trim`/`ltrim`/`rtrim`, `glob`, `like`,
//!   `length`, `upper`, `lower`, `hex`;
//! - delegated, charged by the bytes they take and give: `printf`/`format`, `substr`/
//!   `substring`, `quote`, `concat`, `concat_ws`, `char`, `unhex` (run by SQLite itself
//!   on a private in-memory connection, so their results are SQLite's to the byte; each is
//!   linear in its input and output, which SQLITE_LIMIT_LENGTH bounds).
//! Any call with a REAL argument where the text of the number matters is delegated too, so
//! that numbers read as SQLite writes them.
//!
//! Work: `charge` adds to the call's SQL-function work, which the progress handler and
//! `finish` in `db.rs` add to the run's work meter; when it would pass the work left, or
//! the deadline has passed, the function fails and `db.rs` reports the limit.

use std::sync::{Arc, Mutex};

use rusqlite::functions::{Context, FunctionFlags};
use rusqlite::types::{Value as Sql, ValueRef};
use rusqlite::{Connection, Error};

use crate::limits::*;

/// What the SQL functions charge their work to (the meter of `db.rs`).
pub trait Charge: Send + Sync + 'static {
    /// Charge `units` of work; false when that passes the work left or the deadline has
    /// passed (the call must then fail: `db.rs` reports the limit).
    fn charge(&self, units: u64) -> bool;
}

type Shared = Arc<dyn Charge>;

fn stopped() -> Error {
    Error::UserFunctionError("interrupted (a limit of the run was reached)".into())
}

fn pay(m: &Shared, units: u64) -> rusqlite::Result<()> {
    if m.charge(units) {
        Ok(())
    } else {
        Err(stopped())
    }
}

/// Work for `n` bytes at `x256` / 256 units a byte, with the call's base.
fn bytes_work(n: usize, x256: u32) -> u64 {
    WORK_SQLFN_BASE + (n as u64 * u64::from(x256)) / 256
}

/// Register the functions on `conn`; `max_len` is its SQLITE_LIMIT_LENGTH.
pub fn register(conn: &Connection, meter: Shared, max_len: usize) -> rusqlite::Result<()> {
    let engine = Arc::new(Mutex::new(Engine::open(max_len)?));
    // Innocuous, as SQLite's own are: usable in views, triggers, CHECK constraints and
    // indexes of a database whose schema is not trusted.
    let plain = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_INNOCUOUS;
    let det = plain | FunctionFlags::SQLITE_DETERMINISTIC;
    let m = meter.clone();
    conn.create_scalar_function("randomblob", 1, plain, move |ctx| randomblob(&m, ctx, max_len))?;
    let m = meter.clone();
    conn.create_scalar_function("zeroblob", 1, det, move |ctx| zeroblob(&m, ctx, max_len))?;
    let (m, e) = (meter.clone(), engine.clone());
    conn.create_scalar_function("replace", 3, det, move |ctx| replace(&m, &e, ctx, max_len))?;
    let (m, e) = (meter.clone(), engine.clone());
    conn.create_scalar_function("instr", 2, det, move |ctx| instr(&m, &e, ctx))?;
    for (name, ends) in [("trim", Ends::Both), ("ltrim", Ends::Left), ("rtrim", Ends::Right)] {
        for n in [1, 2] {
            let (m, e) = (meter.clone(), engine.clone());
            conn.create_scalar_function(name, n, det, move |ctx| trim(&m, &e, ctx, name, ends))?;
        }
    }
    let (m, e) = (meter.clone(), engine.clone());
    conn.create_scalar_function("glob", 2, det, move |ctx| pattern(&m, &e, ctx, Dialect::Glob))?;
    for n in [2, 3] {
        let (m, e) = (meter.clone(), engine.clone());
        conn.create_scalar_function("like", n, det, move |ctx| pattern(&m, &e, ctx, Dialect::Like))?;
    }
    for (name, f) in
        [("length", Simple::Length), ("upper", Simple::Upper), ("lower", Simple::Lower), ("hex", Simple::Hex)]
    {
        let (m, e) = (meter.clone(), engine.clone());
        conn.create_scalar_function(name, 1, det, move |ctx| simple(&m, &e, ctx, name, f))?;
    }
    // Delegated: (name, arity; -1 for any).
    for (name, n) in [
        ("printf", -1),
        ("format", -1),
        ("substr", 2),
        ("substr", 3),
        ("substring", 2),
        ("substring", 3),
        ("quote", 1),
        ("concat", -1),
        ("concat_ws", -1),
        ("char", -1),
        ("unhex", 1),
        ("unhex", 2),
    ] {
        let (m, e) = (meter.clone(), engine.clone());
        conn.create_scalar_function(name, n, det, move |ctx| delegated(&m, &e, ctx, name))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The private connection that runs SQLite's own functions for the delegated calls
// ---------------------------------------------------------------------------

struct Engine {
    conn: Connection,
}

impl Engine {
    fn open(max_len: usize) -> rusqlite::Result<Engine> {
        let conn = Connection::open_in_memory()?;
        conn.set_limit(rusqlite::limits::Limit::SQLITE_LIMIT_LENGTH, max_len.min(i32::MAX as usize) as i32)?;
        Ok(Engine { conn })
    }

    /// `SELECT name(?1, ?2, ...)` with these values, by SQLite itself.
    fn call(&self, name: &str, args: &[Sql]) -> rusqlite::Result<Sql> {
        let marks: Vec<String> = (1..=args.len()).map(|i| format!("?{i}")).collect();
        let sql = format!("SELECT {name}({})", marks.join(","));
        let mut st = self.conn.prepare(&sql)?;
        st.query_row(rusqlite::params_from_iter(args.iter()), |r| r.get::<_, Sql>(0))
    }
}

fn engine_call(e: &Arc<Mutex<Engine>>, name: &str, ctx: &Context<'_>) -> rusqlite::Result<Sql> {
    let args: Vec<Sql> = (0..ctx.len())
        .map(|i| match ctx.get_raw(i) {
            ValueRef::Null => Sql::Null,
            ValueRef::Integer(i) => Sql::Integer(i),
            ValueRef::Real(f) => Sql::Real(f),
            ValueRef::Text(t) => Sql::Text(String::from_utf8_lossy(t).into_owned()),
            ValueRef::Blob(b) => Sql::Blob(b.to_vec()),
        })
        .collect();
    let g = e.lock().map_err(|_| Error::UserFunctionError("SQL function engine unavailable".into()))?;
    g.call(name, &args)
}

fn raw_len(v: ValueRef<'_>) -> usize {
    match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => b.len(),
        _ => 8,
    }
}

fn any_real(ctx: &Context<'_>) -> bool {
    (0..ctx.len()).any(|i| matches!(ctx.get_raw(i), ValueRef::Real(_)))
}

fn out_len(v: &Sql) -> usize {
    match v {
        Sql::Text(s) => s.len(),
        Sql::Blob(b) => b.len(),
        _ => 8,
    }
}

/// A delegated call: charged by its input before, by its output after.
fn delegated(m: &Shared, e: &Arc<Mutex<Engine>>, ctx: &Context<'_>, name: &str) -> rusqlite::Result<Sql> {
    let input: usize = (0..ctx.len()).map(|i| raw_len(ctx.get_raw(i))).sum();
    pay(m, bytes_work(input, WORK_SQLFN_BYTE_X256))?;
    let r = engine_call(e, name, ctx)?;
    pay(m, bytes_work(out_len(&r), WORK_SQLFN_BYTE_X256) - WORK_SQLFN_BASE)?;
    Ok(r)
}

// ---------------------------------------------------------------------------
// Written here
// ---------------------------------------------------------------------------

/// An argument's bytes as SQLite's text functions see them (None for NULL; a REAL is
/// never asked for: those calls are delegated). An integer's text is made in `keep`.
fn borrowed<'a>(v: &'a ValueRef<'_>, keep: &'a mut Option<Vec<u8>>) -> Option<&'a [u8]> {
    match v {
        ValueRef::Null | ValueRef::Real(_) => None,
        ValueRef::Integer(i) => {
            *keep = Some(i.to_string().into_bytes());
            keep.as_deref()
        }
        ValueRef::Text(b) | ValueRef::Blob(b) => Some(b),
    }
}

fn text_value(b: Vec<u8>) -> Sql {
    // SQLite's text is UTF-8 by declaration; bytes that are not stay as they are.
    match String::from_utf8(b) {
        Ok(s) => Sql::Text(s),
        Err(e) => Sql::Text(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

fn too_big() -> Error {
    Error::SqliteFailure(rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_TOOBIG), Some("string or blob too big".into()))
}

fn count_arg(ctx: &Context<'_>) -> i64 {
    match ctx.get_raw(0) {
        ValueRef::Integer(i) => i,
        ValueRef::Real(f) => f as i64,
        ValueRef::Text(t) => {
            std::str::from_utf8(t).ok().and_then(|s| s.trim().parse::<f64>().ok()).map_or(0, |f| f as i64)
        }
        _ => 0,
    }
}

fn randomblob(m: &Shared, ctx: &Context<'_>, max_len: usize) -> rusqlite::Result<Sql> {
    let n = count_arg(ctx).max(1) as u64;
    if n > max_len as u64 {
        return Err(too_big());
    }
    let n = n as usize;
    let mut out = vec![0u8; n];
    // In pieces, each charged before it is made, so a long one stops at the budget.
    for chunk in out.chunks_mut(SQLFN_CHUNK) {
        pay(m, bytes_work(chunk.len(), WORK_SQLFN_RANDOM_BYTE_X256))?;
        fill_random(chunk);
    }
    Ok(Sql::Blob(out))
}

fn fill_random(buf: &mut [u8]) {
    let mut done = 0;
    while done < buf.len() {
        match rustix::rand::getrandom(&mut buf[done..], rustix::rand::GetRandomFlags::empty()) {
            Ok(0) | Err(_) => break,
            Ok(n) => done += n,
        }
    }
}

fn zeroblob(m: &Shared, ctx: &Context<'_>, max_len: usize) -> rusqlite::Result<Sql> {
    let n = count_arg(ctx).max(0) as u64;
    if n > max_len as u64 {
        return Err(too_big());
    }
    pay(m, bytes_work(n as usize, WORK_SQLFN_BYTE_X256))?;
    Ok(Sql::Blob(vec![0u8; n as usize]))
}

/// `replace(X, Y, Z)`: every Y in X replaced by Z, left to right (memmem: linear).
fn replace(m: &Shared, e: &Arc<Mutex<Engine>>, ctx: &Context<'_>, max_len: usize) -> rusqlite::Result<Sql> {
    if any_real(ctx) {
        return delegated(m, e, ctx, "replace");
    }
    let (x, y, z) = (ctx.get_raw(0), ctx.get_raw(1), ctx.get_raw(2));
    let (mut kx, mut ky, mut kz) = (None, None, None);
    let (Some(x), Some(y), Some(z)) = (borrowed(&x, &mut kx), borrowed(&y, &mut ky), borrowed(&z, &mut kz)) else {
        return Ok(Sql::Null);
    };
    if y.is_empty() {
        pay(m, bytes_work(x.len(), WORK_SQLFN_BYTE_X256))?;
        return Ok(text_value(x.to_vec()));
    }
    pay(m, bytes_work(x.len() + y.len(), WORK_SQLFN_FIND_BYTE_X256))?;
    let mut out = Vec::with_capacity(x.len());
    let mut at = 0;
    for i in memchr::memmem::find_iter(x, y) {
        if i < at {
            continue;
        }
        out.extend_from_slice(&x[at..i]);
        out.extend_from_slice(z);
        at = i + y.len();
        if out.len() > max_len {
            return Err(too_big());
        }
        if out.len() % SQLFN_CHUNK < z.len() {
            pay(m, bytes_work(SQLFN_CHUNK, WORK_SQLFN_BYTE_X256))?;
        }
    }
    out.extend_from_slice(&x[at..]);
    if out.len() > max_len {
        return Err(too_big());
    }
    pay(m, bytes_work(out.len(), WORK_SQLFN_BYTE_X256))?;
    Ok(text_value(out))
}

/// Characters (UTF-8 lead bytes) in `b`.
fn chars(b: &[u8]) -> usize {
    b.iter().filter(|&&c| (c & 0xC0) != 0x80).count()
}

/// `instr(X, Y)`: the 1-based position of the first Y in X, in characters (in bytes when
/// both are blobs), 0 when there is none.
fn instr(m: &Shared, e: &Arc<Mutex<Engine>>, ctx: &Context<'_>) -> rusqlite::Result<Sql> {
    if any_real(ctx) {
        return delegated(m, e, ctx, "instr");
    }
    let (x, y) = (ctx.get_raw(0), ctx.get_raw(1));
    let blobs = matches!((x, y), (ValueRef::Blob(_), ValueRef::Blob(_)));
    let (mut kx, mut ky) = (None, None);
    let (Some(xb), Some(yb)) = (borrowed(&x, &mut kx), borrowed(&y, &mut ky)) else {
        return Ok(Sql::Null);
    };
    pay(m, bytes_work(xb.len() + yb.len(), WORK_SQLFN_FIND_BYTE_X256))?;
    let Some(i) = memchr::memmem::find(xb, yb) else { return Ok(Sql::Integer(0)) };
    Ok(Sql::Integer(if blobs { i as i64 + 1 } else { chars(&xb[..i]) as i64 + 1 }))
}

#[derive(Clone, Copy)]
enum Ends {
    Both,
    Left,
    Right,
}

/// The end of the UTF-8 character that starts at `i` (an invalid byte is one character).
fn char_end(b: &[u8], i: usize) -> usize {
    let mut j = i + 1;
    while j < b.len() && (b[j] & 0xC0) == 0x80 {
        j += 1;
    }
    j
}

/// The start of the UTF-8 character that ends at `j`, not before `lo`.
fn char_start(b: &[u8], lo: usize, j: usize) -> usize {
    let mut i = j - 1;
    while i > lo && (b[i] & 0xC0) == 0x80 {
        i -= 1;
    }
    i
}

/// `trim(X[, Y])`: the characters of Y (a space by default) removed from X's ends. The set
/// is built once (a table for ASCII, a sorted list for the rest), and only the characters
/// removed are looked at: linear in |X| + |Y| (plus a log factor for non-ASCII sets).
fn trim(m: &Shared, e: &Arc<Mutex<Engine>>, ctx: &Context<'_>, name: &str, ends: Ends) -> rusqlite::Result<Sql> {
    if any_real(ctx) {
        return delegated(m, e, ctx, name);
    }
    let x = ctx.get_raw(0);
    let mut kx = None;
    let Some(xb) = borrowed(&x, &mut kx) else { return Ok(Sql::Null) };
    let mut ky = None;
    let y = if ctx.len() > 1 { ctx.get_raw(1) } else { ValueRef::Text(b" ") };
    let Some(yb) = borrowed(&y, &mut ky) else { return Ok(Sql::Null) };
    pay(m, bytes_work(xb.len() + yb.len(), WORK_SQLFN_TRIM_BYTE_X256))?;
    let mut ascii = [false; 128];
    let mut wide: Vec<&[u8]> = Vec::new();
    let mut i = 0;
    while i < yb.len() {
        let j = char_end(yb, i);
        if j == i + 1 && yb[i] < 128 {
            ascii[yb[i] as usize] = true;
        } else {
            wide.push(&yb[i..j]);
        }
        i = j;
    }
    pay(m, wide.len() as u64 * WORK_SQLFN_SORT_ITEM)?;
    wide.sort_unstable();
    wide.dedup();
    let has = |c: &[u8]| {
        if c.len() == 1 && c[0] < 128 {
            ascii[c[0] as usize]
        } else {
            wide.binary_search(&c).is_ok()
        }
    };
    let (mut lo, mut hi) = (0, xb.len());
    if !matches!(ends, Ends::Right) {
        while lo < hi {
            let j = char_end(xb, lo).min(hi);
            if !has(&xb[lo..j]) {
                break;
            }
            lo = j;
        }
    }
    if !matches!(ends, Ends::Left) {
        while hi > lo {
            let i = char_start(xb, lo, hi);
            if !has(&xb[i..hi]) {
                break;
            }
            hi = i;
        }
    }
    Ok(text_value(xb[lo..hi].to_vec()))
}

#[derive(Clone, Copy)]
enum Simple {
    Length,
    Upper,
    Lower,
    Hex,
}

fn simple(m: &Shared, e: &Arc<Mutex<Engine>>, ctx: &Context<'_>, name: &str, f: Simple) -> rusqlite::Result<Sql> {
    let v = ctx.get_raw(0);
    if matches!(v, ValueRef::Real(_)) {
        return delegated(m, e, ctx, name);
    }
    let mut keep = None;
    let Some(b) = borrowed(&v, &mut keep) else {
        return Ok(if matches!(f, Simple::Hex) { Sql::Text(String::new()) } else { Sql::Null });
    };
    let per = if matches!(f, Simple::Length) { WORK_SQLFN_FIND_BYTE_X256 } else { WORK_SQLFN_BYTE_X256 };
    pay(m, bytes_work(b.len(), per))?;
    Ok(match f {
        Simple::Length => match v {
            ValueRef::Blob(_) => Sql::Integer(b.len() as i64),
            // Characters before the first NUL, as SQLite counts them.
            _ => {
                let end = memchr::memchr(0, b).unwrap_or(b.len());
                Sql::Integer(chars(&b[..end]) as i64)
            }
        },
        Simple::Upper => text_value(b.to_ascii_uppercase()),
        Simple::Lower => text_value(b.to_ascii_lowercase()),
        Simple::Hex => {
            const D: &[u8; 16] = b"0123456789ABCDEF";
            let mut out = Vec::with_capacity(b.len() * 2);
            for c in b {
                out.push(D[(c >> 4) as usize]);
                out.push(D[(c & 15) as usize]);
            }
            pay(m, bytes_work(out.len(), WORK_SQLFN_BYTE_X256) - WORK_SQLFN_BASE)?;
            text_value(out)
        }
    })
}

// ---------------------------------------------------------------------------
// GLOB and LIKE: compiled once per call, matched with charged steps
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq)]
enum Dialect {
    Glob,
    Like,
}

enum Tok {
    Lit(u32),
    One,
    Many,
    /// Sorted, merged ranges; `neg` inverts.
    Class {
        neg: bool,
        ranges: Vec<(u32, u32)>,
    },
}

/// Decode the UTF-8 characters of `b` (an invalid byte stands for itself).
fn decode(b: &[u8]) -> Vec<u32> {
    match std::str::from_utf8(b) {
        Ok(s) => s.chars().map(|c| c as u32).collect(),
        Err(_) => String::from_utf8_lossy(b).chars().map(|c| c as u32).collect(),
    }
}

/// `None`: a GLOB class that is not closed (matches nothing, as in SQLite).
fn compile(p: &[u32], d: Dialect, esc: Option<u32>) -> Option<Vec<Tok>> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < p.len() {
        let c = p[i];
        i += 1;
        match d {
            Dialect::Like => {
                if Some(c) == esc {
                    // An escape before the pattern's end takes the next character as is;
                    // at the end it matches nothing.
                    let &n = p.get(i)?;
                    i += 1;
                    out.push(Tok::Lit(fold(n, d)));
                } else if c == '%' as u32 {
                    out.push(Tok::Many);
                } else if c == '_' as u32 {
                    out.push(Tok::One);
                } else {
                    out.push(Tok::Lit(fold(c, d)));
                }
            }
            Dialect::Glob => match char::from_u32(c) {
                Some('*') => out.push(Tok::Many),
                Some('?') => out.push(Tok::One),
                Some('[') => {
                    let mut neg = false;
                    if p.get(i) == Some(&('^' as u32)) {
                        neg = true;
                        i += 1;
                    }
                    let mut ranges = Vec::new();
                    if p.get(i) == Some(&(']' as u32)) {
                        ranges.push((']' as u32, ']' as u32));
                        i += 1;
                    }
                    loop {
                        let &c = p.get(i)?;
                        if c == ']' as u32 {
                            i += 1;
                            break;
                        }
                        if c == '-' as u32 && !ranges.is_empty() && p.get(i + 1).is_some_and(|&n| n != ']' as u32) {
                            let lo = ranges.last().map_or(c, |r: &(u32, u32)| r.0);
                            let hi = p[i + 1];
                            if let Some(last) = ranges.last_mut() {
                                *last = (lo, hi);
                            }
                            i += 2;
                            continue;
                        }
                        ranges.push((c, c));
                        i += 1;
                    }
                    ranges.retain(|r| r.0 <= r.1);
                    ranges.sort_unstable();
                    let mut merged: Vec<(u32, u32)> = Vec::with_capacity(ranges.len());
                    for r in ranges {
                        match merged.last_mut() {
                            Some(l) if r.0 <= l.1.saturating_add(1) => l.1 = l.1.max(r.1),
                            _ => merged.push(r),
                        }
                    }
                    out.push(Tok::Class { neg, ranges: merged });
                }
                _ => out.push(Tok::Lit(c)),
            },
        }
    }
    Some(out)
}

/// LIKE folds ASCII letters only (SQLite without ICU).
fn fold(c: u32, d: Dialect) -> u32 {
    if d == Dialect::Like && (u32::from(b'A')..=u32::from(b'Z')).contains(&c) {
        c + 32
    } else {
        c
    }
}

fn tok_matches(t: &Tok, c: u32, d: Dialect) -> bool {
    match t {
        Tok::Lit(l) => *l == fold(c, d),
        Tok::One => true,
        Tok::Many => false,
        Tok::Class { neg, ranges } => {
            let i = ranges.partition_point(|r| r.1 < c);
            let inside = i < ranges.len() && ranges[i].0 <= c;
            inside != *neg
        }
    }
}

/// Wildcard matching with the one-star backtrack (a later star supersedes an earlier
/// one): at most |text| x |pattern| steps, charged every `SQLFN_CHUNK` steps.
fn matches(m: &Shared, pat: &[Tok], text: &[u32], d: Dialect) -> rusqlite::Result<bool> {
    let (mut p, mut t) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    let mut steps: u64 = 0;
    loop {
        steps += 1;
        if steps.is_multiple_of(SQLFN_CHUNK as u64) {
            pay(m, SQLFN_CHUNK as u64 * WORK_SQLFN_MATCH_STEP)?;
        }
        if p < pat.len() {
            if let Tok::Many = pat[p] {
                // Runs of stars are one star.
                while p < pat.len() && matches!(pat[p], Tok::Many) {
                    p += 1;
                }
                if p == pat.len() {
                    return Ok(true);
                }
                star = Some((p, t));
                continue;
            }
            if t < text.len() && tok_matches(&pat[p], text[t], d) {
                p += 1;
                t += 1;
                continue;
            }
        } else if t == text.len() {
            return Ok(true);
        }
        match star {
            Some((sp, st)) if st < text.len() => {
                star = Some((sp, st + 1));
                p = sp;
                t = st + 1;
            }
            _ => return Ok(false),
        }
    }
}

fn pattern(m: &Shared, e: &Arc<Mutex<Engine>>, ctx: &Context<'_>, d: Dialect) -> rusqlite::Result<Sql> {
    let name = if d == Dialect::Glob { "glob" } else { "like" };
    if any_real(ctx) {
        return delegated(m, e, ctx, name);
    }
    let (pv, xv) = (ctx.get_raw(0), ctx.get_raw(1));
    let (mut kp, mut kx) = (None, None);
    let (Some(pb), Some(xb)) = (borrowed(&pv, &mut kp), borrowed(&xv, &mut kx)) else {
        return Ok(Sql::Null);
    };
    if pb.len() > SQLFN_PATTERN_MAX {
        return Err(Error::UserFunctionError("LIKE or GLOB pattern too complex".into()));
    }
    let esc = if ctx.len() > 2 {
        let ev = ctx.get_raw(2);
        let mut ke = None;
        let Some(eb) = borrowed(&ev, &mut ke) else { return Ok(Sql::Null) };
        let ec = decode(eb);
        if ec.len() != 1 {
            return Err(Error::UserFunctionError("ESCAPE expression must be a single character".into()));
        }
        Some(ec[0])
    } else {
        None
    };
    // Decoding both, and compiling the pattern (a class's characters sorted and merged).
    pay(m, bytes_work(xb.len(), WORK_SQLFN_TRIM_BYTE_X256) + pb.len() as u64 * WORK_SQLFN_SORT_ITEM / 4)?;
    let Some(toks) = compile(&decode(pb), d, esc) else { return Ok(Sql::Integer(0)) };
    let text = decode(xb);
    Ok(Sql::Integer(matches(m, &toks, &text, d)? as i64))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Free;
    impl Charge for Free {
        fn charge(&self, _: u64) -> bool {
            true
        }
    }

    fn conn_pair() -> (Connection, Connection) {
        let ours = Connection::open_in_memory().unwrap();
        register(&ours, Arc::new(Free), 1 << 20).unwrap();
        (ours, Connection::open_in_memory().unwrap())
    }

    /// Our functions give SQLite's own results on a table of edge cases.
    #[test]
    fn the_same_results_as_sqlite() {
        let (ours, theirs) = conn_pair();
        let exprs = [
            "replace('abcabc', 'b', 'XY')",
            "replace('aaaa', 'aa', 'b')",
            "replace('abc', '', 'z')",
            "replace(NULL, 'a', 'b')",
            "replace('x', NULL, 'b')",
            "replace(12345, 3, 9)",
            "replace(1.5, '5', '6')",
            "replace('héllo', 'é', 'e')",
            "instr('hello', 'l')",
            "instr('héllo', 'l')",
            "instr('hello', '')",
            "instr('', 'a')",
            "instr(x'0102030405', x'0304')",
            "instr('abc', NULL)",
            "instr(12345, 34)",
            "trim('  ab  ')",
            "ltrim('  ab  ')",
            "rtrim('  ab  ')",
            "trim('xxabyxx', 'xy')",
            "trim('ééaéé', 'é')",
            "trim('aaa', 'a')",
            "trim('abc', '')",
            "trim(NULL)",
            "trim('ab', NULL)",
            "trim(1.25, '5')",
            "'abc' GLOB 'a*'",
            "'abc' GLOB '*c'",
            "'abc' GLOB 'a?c'",
            "'abc' GLOB '[a-c]bc'",
            "'abc' GLOB '[^a]bc'",
            "'a]c' GLOB 'a[]]c'",
            "'a-c' GLOB 'a[-]c'",
            "'abc' GLOB 'a[b'",
            "'abc' GLOB 'ABC'",
            "'ébc' GLOB '?bc'",
            "'aXb' GLOB 'a[W-Y]b'",
            "'' GLOB '*'",
            "'' GLOB '?'",
            "'abcabc' GLOB '*b*c'",
            "'abc' LIKE 'ABC'",
            "'abc' LIKE 'a%'",
            "'abc' LIKE '_b_'",
            "'a%c' LIKE 'a!%c' ESCAPE '!'",
            "'abc' LIKE 'a!%c' ESCAPE '!'",
            "'é' LIKE 'É'",
            "NULL LIKE 'a'",
            "'a' LIKE NULL",
            "'mississippi' LIKE '%iss%ppi'",
            "length('héllo')",
            "length(x'00ff00')",
            "length(12345)",
            "length(1.5)",
            "length(NULL)",
            "length('ab' || char(0) || 'cd')",
            "upper('héllo')",
            "lower('HÉLLO')",
            "hex('ab')",
            "hex(x'00ff')",
            "hex(255)",
            "hex(NULL)",
            "printf('%5.2f|%d|%s', 3.14159, 42, 'x')",
            "format('%q', 'it''s')",
            "substr('héllo', 2, 3)",
            "substr('hello', -3)",
            "substr(x'010203', 2)",
            "quote('a''b')",
            "quote(x'0102')",
            "concat('a', NULL, 1, 2.5)",
            "concat_ws('-', 'a', 'b')",
            "char(72, 105)",
            "unhex('4142')",
            "length(zeroblob(10))",
            "typeof(zeroblob(3))",
            "length(randomblob(7))",
            "length(randomblob(0))",
            "typeof(randomblob(2))",
        ];
        let mut wrong = Vec::new();
        for e in exprs {
            let q = format!("SELECT {e}");
            let a: Sql = ours.query_row(&q, [], |r| r.get(0)).unwrap_or_else(|err| panic!("{e}: {err}"));
            let b: Sql = theirs.query_row(&q, [], |r| r.get(0)).unwrap_or_else(|err| panic!("{e}: {err}"));
            if a != b {
                wrong.push(format!("{e}: ours {a:?}, SQLite's {b:?}"));
            }
        }
        assert!(wrong.is_empty(), "{wrong:#?}");
    }

    /// .cargo/config.toml's LIBSQLITE3_FLAGS reached the bundled SQLite's build.
    #[test]
    fn the_build_keeps_temporary_storage_in_memory_and_maps_nothing() {
        let c = Connection::open_in_memory().unwrap();
        let mut st = c.prepare("PRAGMA compile_options").unwrap();
        let opts: Vec<String> = st.query_map([], |r| r.get(0)).unwrap().map(|r| r.unwrap()).collect();
        assert!(opts.iter().any(|o| o == "TEMP_STORE=3"), "{opts:?}");
        assert!(opts.iter().any(|o| o == "MAX_MMAP_SIZE=0"), "{opts:?}");
    }

    /// A long class run and a long pattern match in steps, not in a quadratic class scan.
    #[test]
    fn classes_are_looked_up_by_bisection() {
        let pat = decode(format!("[{}]", "a".repeat(10_000) + "b-z").as_bytes());
        let toks = compile(&pat, Dialect::Glob, None).unwrap();
        let Tok::Class { ranges, .. } = &toks[0] else { panic!() };
        assert_eq!(ranges.as_slice(), &[('a' as u32, 'z' as u32)]);
    }
}
