//! Dates and times (`date.*`) on chrono. A time is a number: seconds since the Unix
//! epoch (UTC), possibly fractional. Times are handled to the microsecond (a binary64
//! near the present holds about a quarter of a microsecond), within chrono's range of
//! years -262143..262142.

use std::fmt::Write as _;

use chrono::format::{Item, Parsed, StrftimeItems};
use chrono::{DateTime, Datelike, FixedOffset, NaiveDateTime, NaiveTime, Timelike, Utc};

use super::{b, Builtin, Cost, CONST};
use crate::diag::ErrKind;
use crate::interp::{Interp, R};
use crate::limits::*;
use crate::value::*;

/// Largest magnitude of a UTC offset, in seconds (a day less one second).
pub const MAX_UTC_OFFSET: i64 = 86_399;

fn now(_: &mut Interp<'_>, _: &mut [Value]) -> R<Value> {
    let d = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    Ok(Value::Num(d.as_secs_f64()))
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

fn time_arg(it: &Interp<'_>, name: &str, args: &[Value], i: usize) -> R<DateTime<Utc>> {
    let t = it.arg_num(name, args, i)?;
    to_datetime(t).ok_or_else(|| {
        it.err(ErrKind::Value, format!("{name}: time {} is outside the years -262143..262142", num_to_string(t)))
    })
}

fn offset_arg(it: &Interp<'_>, name: &str, args: &[Value], i: usize) -> R<FixedOffset> {
    let secs = match it.opt(args, i) {
        None => 0,
        Some(_) => it.arg_int(name, args, i, -MAX_UTC_OFFSET as f64, MAX_UTC_OFFSET as f64)?,
    };
    Ok(FixedOffset::east_opt(secs as i32).expect("offset within a day"))
}

/// A strftime format, checked: an unknown or incomplete specifier is a `value` error.
/// The items are read as they are used, never collected: one specifier such as `%c`
/// stands for a dozen items, and a 1 MiB format would make a list of millions.
fn format_items<'a>(it: &Interp<'_>, name: &str, fmt: &'a str) -> R<StrftimeItems<'a>> {
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
/// written only when not zero, with at most 6 digits and no trailing zeros.
fn rfc3339(dt: &DateTime<FixedOffset>, out: &mut String) {
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
    if off == 0 {
        out.push('Z');
    } else {
        let sign = if off < 0 { '-' } else { '+' };
        let a = off.abs();
        let _ = write!(out, "{sign}{:02}:{:02}", a / 3600, a / 60 % 60);
    }
}

fn format(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.format";
    let dt = time_arg(it, NAME, args, 0)?;
    let off = offset_arg(it, NAME, args, 2)?;
    let local = dt.with_timezone(&off);
    let mut w = Bounded { out: String::new(), max: it.lim.n(L::String), over: false };
    match it.opt(args, 1) {
        None => {
            if off.local_minus_utc() % 60 != 0 {
                return Err(it.err(
                    ErrKind::Value,
                    format!("{NAME}: RFC 3339 cannot show a UTC offset with seconds (give a format)"),
                ));
            }
            rfc3339(&local, &mut w.out);
        }
        Some(_) => {
            let fmt = it.arg_text(NAME, args, 1)?;
            // One item at a time: chrono writes a whole format into a string of its own
            // before handing it on, so this keeps that string to one item's text.
            for item in format_items(it, NAME, fmt)? {
                if write!(w, "{}", local.format_with_items(std::iter::once(item))).is_err() {
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

/// Parse `s` with a strftime format. Without an offset in the text the time is UTC;
/// without a time of day it is midnight.
pub fn parse_with<'a, B: std::borrow::Borrow<Item<'a>>>(
    s: &str,
    items: impl Iterator<Item = B>,
) -> Result<f64, chrono::format::ParseError> {
    let mut p = Parsed::new();
    chrono::format::parse(&mut p, s, items)?;
    if p.offset().is_some() {
        return p.to_datetime().map(|dt| seconds(&dt));
    }
    match p.to_naive_datetime_with_offset(0) {
        Ok(n) => Ok(seconds(&n.and_utc())),
        Err(e) => {
            let no_time = p.hour_div_12().is_none() && p.hour_mod_12().is_none() && p.timestamp().is_none();
            if no_time && e.kind() == chrono::format::ParseErrorKind::NotEnough {
                let d = p.to_naive_date()?;
                Ok(seconds(&NaiveDateTime::new(d, NaiveTime::MIN).and_utc()))
            } else {
                Err(e)
            }
        }
    }
}

fn parse(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.parse";
    let raw = it.arg_str(NAME, args, 0)?;
    let Ok(s) = std::str::from_utf8(raw) else {
        return Err(it.err(ErrKind::Parse, format!("{NAME}: the text is not valid UTF-8")));
    };
    let r = match it.opt(args, 1) {
        None => DateTime::parse_from_rfc3339(s).map(|dt| seconds(&dt)),
        Some(_) => {
            let fmt = it.arg_text(NAME, args, 1)?;
            let items = format_items(it, NAME, fmt)?;
            parse_with(s, items)
        }
    };
    match r {
        Ok(t) => Ok(Value::Num(t)),
        Err(e) => {
            let shown: String = s.chars().take(64).collect();
            let what = if args.len() > 1 && !matches!(args[1], Value::Nil) { "the format" } else { "RFC 3339" };
            Err(it.err(ErrKind::Parse, format!("{NAME}: {shown:?} is not a valid date for {what}: {e}")))
        }
    }
}

fn parts(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "date.parts";
    let dt = time_arg(it, NAME, args, 0)?;
    let off = offset_arg(it, NAME, args, 1)?;
    let d = dt.with_timezone(&off);
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

pub const TABLE: &[Builtin] = &[
    b("date.now", "date.now()", 0, 0, CONST, now),
    b("date.parse", "date.parse(s[, format])", 1, 2, Cost::bytes(1.0), parse),
    b("date.format", "date.format(t[, format[, utc_offset]])", 1, 3, Cost::bytes(40.0), format),
    b("date.parts", "date.parts(t[, utc_offset])", 1, 2, CONST, parts),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn rfc(t: f64, off: i32) -> String {
        let dt = to_datetime(t).unwrap().with_timezone(&FixedOffset::east_opt(off).unwrap());
        let mut s = String::new();
        rfc3339(&dt, &mut s);
        s
    }

    fn p(s: &str, f: &str) -> Result<f64, chrono::format::ParseError> {
        parse_with(s, StrftimeItems::new(f))
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
