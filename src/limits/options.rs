//! Moving the run-time limits: `--limit NAME=VALUE` and the gateway's `[limits]` entries
//! read into settings (`NAME=max`, `all=max`), checked against each limit's floor and
//! ceiling under the final `--max-memory`, with the usage errors that say why a name or
//! value is refused; and `leash --limits`, the table as text.

use super::table::{find, show, Ceiling, LimitDef, Limits, Unit, K, L, LIMITS, M};
use super::{GIB, MAX_MAX_MEMORY};

/// Limit kinds that have their own flags, and load-time kinds: named in usage errors.
pub const OWN_FLAGS: &[(&str, &str)] =
    &[("steps", "--max-steps"), ("work", "--max-work"), ("memory", "--max-memory"), ("time", "--max-time")];
pub const LOAD_TIME_NAMES: &[&str] = &[
    "source_bytes",
    "source_lines",
    "line_bytes",
    "tokens",
    "functions",
    "params",
    "includes",
    "nesting",
    "expr_bytes",
    "expr_depth",
    "identifier",
    "locals",
];

impl Limits {
    /// Apply one `NAME=VALUE` (the text after `--limit`), returning which limit it set.
    /// `max` stands for the ceiling under the largest `--max-memory`; `all=max` is refused
    /// here (it names no one limit): the command line and the gateway read it with
    /// [`parse_spec`] and [`Limits::resolve`], once `--max-memory` is known.
    pub fn apply(&mut self, spec: &str) -> Result<L, String> {
        let Some((name, value)) = spec.split_once('=') else {
            return Err(format!("takes NAME=VALUE, got \"{spec}\" (leash --limits lists the names)"));
        };
        let d = lookup(name)?;
        self.set(d.id, parse_value(d, value, None)?);
        Ok(d.id)
    }

    /// Apply settings read by [`parse_spec`], in order, under the final `max_memory`
    /// (`flag` names it in errors: `--max-memory`, or the gateway's `max_memory`): `max`
    /// becomes the limit's ceiling, and a number given for a limit whose ceiling is the
    /// memory bound must be within it.
    pub fn resolve(&mut self, settings: &[Setting], max_memory: u64, flag: &str) -> Result<(), String> {
        for s in settings {
            let d = &LIMITS[s.id as usize];
            let ceiling = d.ceiling_for(max_memory);
            match s.value {
                None => self.set(s.id, ceiling),
                Some(v) => {
                    if v > ceiling {
                        return Err(format!(
                            "{} takes bytes from {} to {flag} ({}), got {}",
                            d.name,
                            d.floor,
                            show(ceiling, Unit::Bytes),
                            show(v, Unit::Bytes)
                        ));
                    }
                    self.set(s.id, v);
                }
            }
        }
        Ok(())
    }

    /// The limits in `given` whose ceiling is `--max-memory`, checked against its final
    /// value (`flag` names it: `--max-memory`, or the gateway's `max_memory`). Defaults
    /// are not checked: `--max-memory 1M` alone stays valid, and the memory limit is
    /// then the one met first.
    pub fn check_memory(&self, max_memory: u64, given: &[L], flag: &str) -> Result<(), String> {
        for d in LIMITS.iter().filter(|d| matches!(d.ceiling, Ceiling::MaxMemory) && given.contains(&d.id)) {
            let v = self.get(d.id);
            if v > d.ceiling_for(max_memory) {
                return Err(format!(
                    "{} takes bytes from {} to {flag} ({}), got {}",
                    d.name,
                    d.floor,
                    show(d.ceiling_for(max_memory), Unit::Bytes),
                    show(v, Unit::Bytes)
                ));
            }
        }
        Ok(())
    }
}

/// One `--limit` setting as read: which limit, and its value (`None`: `max`, the ceiling
/// under the final memory bound).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Setting {
    pub id: L,
    pub value: Option<u64>,
}

/// Read one `NAME=VALUE` (the text after `--limit`, or a `[limits]` entry): `NAME=max`
/// is the limit's ceiling, `all=max` every run-time limit's ceiling (SPEC 8.2).
pub fn parse_spec(spec: &str) -> Result<Vec<Setting>, String> {
    let Some((name, value)) = spec.split_once('=') else {
        return Err(format!("takes NAME=VALUE, got \"{spec}\" (leash --limits lists the names)"));
    };
    if name == "all" {
        if value != "max" {
            return Err(format!(
                "all takes only max (all=max moves every run-time limit to its ceiling), got \"{value}\""
            ));
        }
        return Ok(LIMITS.iter().map(|d| Setting { id: d.id, value: None }).collect());
    }
    let d = lookup(name)?;
    if value == "max" {
        return Ok(vec![Setting { id: d.id, value: None }]);
    }
    Ok(vec![Setting { id: d.id, value: Some(parse_value(d, value, None)?) }])
}

/// The row named `name`, or a usage error saying why there is none.
pub fn lookup(name: &str) -> Result<&'static LimitDef, String> {
    if let Some(d) = find(name) {
        return Ok(d);
    }
    if let Some((_, flag)) = OWN_FLAGS.iter().find(|(n, _)| *n == name) {
        return Err(format!("{name} has its own option, {flag}"));
    }
    if LOAD_TIME_NAMES.contains(&name) {
        return Err(format!("{name} is a load-time limit and cannot be moved"));
    }
    if name == "http" || name == "sockets" {
        let subs: Vec<&str> = LIMITS.iter().filter(|d| d.name.starts_with(name)).map(|d| d.name).collect();
        return Err(format!("{name} is moved by its sub-budgets: {}", subs.join(", ")));
    }
    Err(format!("unknown limit \"{name}\" (leash --limits lists them)"))
}

/// Parse `value` for limit `d`: a whole number, with a K, M or G suffix for bytes, in
/// floor..ceiling (the ceiling under `max_memory` when known).
pub fn parse_value(d: &LimitDef, value: &str, max_memory: Option<u64>) -> Result<u64, String> {
    let ceiling = match (d.ceiling, max_memory) {
        (Ceiling::MaxMemory, None) => MAX_MAX_MEMORY,
        _ => d.ceiling_for(max_memory.unwrap_or(MAX_MAX_MEMORY)),
    };
    let range = || {
        let top = match d.ceiling {
            Ceiling::MaxMemory => "--max-memory".to_string(),
            Ceiling::Fixed(_) => show(ceiling, d.unit),
        };
        if d.unit == Unit::Bytes {
            format!("{} takes bytes from {} to {top} (suffixes K, M, G), got \"{value}\"", d.name, d.floor)
        } else {
            format!("{} takes a whole number of {} from {} to {top}, got \"{value}\"", d.name, d.unit.name(), d.floor)
        }
    };
    let (digits, mult) = match (d.unit, value.as_bytes().last()) {
        (Unit::Bytes, Some(b'K' | b'k')) => (&value[..value.len() - 1], K),
        (Unit::Bytes, Some(b'M' | b'm')) => (&value[..value.len() - 1], M),
        (Unit::Bytes, Some(b'G' | b'g')) => (&value[..value.len() - 1], GIB),
        _ => (value, 1),
    };
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(range());
    }
    let n = digits.parse::<u64>().ok().and_then(|n| n.checked_mul(mult)).ok_or_else(range)?;
    if n < d.floor || n > ceiling {
        return Err(range());
    }
    Ok(n)
}

/// `leash --limits`: one line per limit, tab-separated: name, default, ceiling, unit,
/// kind, what it bounds.
pub fn limits_text() -> String {
    let mut s = String::from("name\tdefault\tceiling\tunit\tkind\tbounds\n");
    for d in LIMITS {
        s.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\t{}\n",
            d.name,
            show(d.default, d.unit),
            d.ceiling_text(),
            d.unit.name(),
            d.kind.name(),
            d.what
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_and_suffixes() {
        let d = find("string").unwrap();
        assert_eq!(parse_value(d, "2M", None), Ok(2 * M));
        assert_eq!(parse_value(d, "64k", None), Ok(64 * K));
        assert_eq!(parse_value(d, "1", None), Ok(1));
        for bad in ["", "0", "M", "2MB", "1.5M", "-1", " 1", "257M", "1G", "99999999999999999999999"] {
            assert!(parse_value(d, bad, None).is_err(), "{bad}");
        }
        let d = find("frame_storage").unwrap();
        assert_eq!(parse_value(d, "32M", None), Ok(32 * M));
        assert!(parse_value(d, "32M", Some(16 * M)).is_err());
        assert_eq!(parse_value(d, "64G", None), Ok(64 * GIB));
        assert!(parse_value(d, "65G", None).is_err());
        assert!(parse_value(find("list").unwrap(), "2K", None).is_err());
        assert_eq!(show(16 * M, Unit::Bytes), "16M");
        assert_eq!(show(16_384, Unit::Items), "16384");
    }
}
