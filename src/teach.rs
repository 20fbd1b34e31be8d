//! Limit diagnostics that teach (SPEC 7): which limit stopped the run, its value, and
//! the exact option that raises it, with its ceiling.
//!
//! A limit diagnostic gets the JSON fields `limit` (the name `--limit` takes, or `steps`,
//! `work`, `memory`, `time`), `value` (the limit in force) and `option` (the option that
//! raises it, four times the value up to the ceiling: `--max-steps 4000000`,
//! `--limit file_reads=64M`; under CGI the leash-cgi configuration key instead), and a
//! text `help:` line: `raise it with --limit file_reads=64M (ceiling 1T)`. A load-time
//! limit, which no option moves, says so, with `option` null.

use crate::diag::{Class, Diagnostic, LimitNote};
use crate::limits::*;

/// What the run was given: the limits a diagnostic can name and how they were set.
#[derive(Clone, Debug)]
pub struct Setup {
    pub max_steps: u64,
    pub max_work: u64,
    pub max_time: Option<f64>,
    pub max_memory: u64,
    pub limits: Limits,
    /// Under CGI: the option is the leash-cgi configuration key.
    pub cgi: bool,
}

/// The value of a load-time limit (SPEC 8's table).
fn load_time_value(name: &str) -> Option<u64> {
    Some(match name {
        "source_bytes" => MAX_SOURCE_BYTES as u64,
        "source_lines" => MAX_SOURCE_LINES as u64,
        "line_bytes" => MAX_LINE_BYTES as u64,
        "tokens" => MAX_TOKENS_PER_LINE as u64,
        "functions" => MAX_FUNCTIONS as u64,
        "params" => MAX_PARAMS as u64,
        "includes" => MAX_ACTIVE_INCLUDES as u64,
        "nesting" => MAX_NESTING as u64,
        "expr_bytes" => MAX_EXPR_BYTES as u64,
        "expr_depth" => MAX_EXPR_DEPTH as u64,
        "identifier" => MAX_IDENT_BYTES as u64,
        "locals" => MAX_LOCALS as u64,
        _ => return None,
    })
}

/// Where `word` (a decimal number) first stands in `text` as a whole number.
fn number_at(text: &str, word: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(i) = text[from..].find(word).map(|i| i + from) {
        let j = i + word.len();
        if (i == 0 || !b[i - 1].is_ascii_digit()) && (j == b.len() || !b[j].is_ascii_digit()) {
            return Some(i);
        }
        from = i + 1;
    }
    None
}

/// The row of the `--limit` table a run-time limit diagnostic of `kind` is about: the
/// kind's own row when it has one alone; of several (`stdin`, `stdin_line`), the one
/// whose value the message states, the kind's own row first, else the one stated
/// first. (A message states its limit before the figures of the run: "requested HTTP
/// timeouts exceed 20000 ms per run (64 ms reserved, 20000 ms asked)" is about
/// `http_timeouts`, though 64 is `http_requests`' value too.)
pub fn row_for(kind: &str, message: &str, lim: &Limits) -> Option<&'static LimitDef> {
    let rows: Vec<&LimitDef> = LIMITS.iter().filter(|d| d.kind.name() == kind).collect();
    match rows.len() {
        0 => None,
        1 => Some(rows[0]),
        _ => {
            let stated: Vec<(usize, &LimitDef)> =
                rows.iter().filter_map(|d| Some((number_at(message, &lim.get(d.id).to_string())?, *d))).collect();
            stated
                .iter()
                .find(|(_, d)| d.name == kind)
                .or(stated.iter().min_by_key(|(at, _)| *at))
                .map(|(_, d)| *d)
                .or(rows.iter().find(|d| d.name == kind).copied())
                .or(rows.first().copied())
        }
    }
}

/// Four times `v`, at most `ceiling`.
fn more(v: u64, ceiling: u64) -> u64 {
    v.saturating_mul(4).min(ceiling)
}

fn secs(x: f64) -> String {
    let mut out = Vec::new();
    crate::value::fmt_num(x, &mut out);
    String::from_utf8_lossy(&out).into_owned()
}

/// Fill in `d`'s limit fields and its `help:` line, when it is a limit diagnostic.
pub fn teach(d: &mut Diagnostic, s: &Setup) {
    let limit_class = d.class == Class::Limit;
    if !(limit_class || d.class == Class::Load) || d.detail.limit.is_some() {
        return;
    }
    let kind = d.kind.clone();
    // Load-time limits: no option moves them.
    if let Some(v) = load_time_value(&kind).filter(|_| d.class == Class::Load) {
        d.detail.limit = Some(LimitNote { name: kind.clone(), value: v.to_string(), option: None });
        d.detail
            .help
            .push(format!("{kind} is a load-time limit ({v}): no option moves it; split the script or the line"));
        return;
    }
    // (option, value text, suggestion shown in the help line, ceiling text)
    let own = |flag: &str, key: &str, v: u64, ceiling: u64, unit: Unit| -> (Option<String>, String, String) {
        if v >= ceiling {
            return (None, v.to_string(), format!("it is at its ceiling ({})", show(ceiling, unit)));
        }
        let n = more(v, ceiling);
        let option = if s.cgi {
            if unit == Unit::Bytes {
                format!("{key} = \"{}\"", show(n, unit))
            } else {
                format!("{key} = {n}")
            }
        } else {
            format!("{flag} {}", show(n, unit))
        };
        let help = if s.cgi {
            format!("raise it in the leash-cgi configuration: {option} (ceiling {})", show(ceiling, unit))
        } else {
            format!("raise it with {option} (ceiling {})", show(ceiling, unit))
        };
        (Some(option), v.to_string(), help)
    };
    let (name, (option, value, help)) = match kind.as_str() {
        "steps" => ("steps", own("--max-steps", "max_steps", s.max_steps, MAX_MAX_STEPS, Unit::Items)),
        "work" => ("work", own("--max-work", "max_work", s.max_work, MAX_MAX_WORK, Unit::Items)),
        "memory" => ("memory", own("--max-memory", "max_memory", s.max_memory, MAX_MAX_MEMORY, Unit::Bytes)),
        "time" => {
            let Some(t) = s.max_time else { return };
            let top = MAX_MAX_TIME_SECS;
            let r = if t >= top {
                (None, secs(t), format!("it is at its ceiling ({} s)", secs(top)))
            } else if s.cgi {
                let ms = ((t * 4.0).min(top) * 1000.0).round() as u64;
                let o = format!("max_time_ms = {ms}");
                let h = format!("raise it in the leash-cgi configuration: {o} (ceiling {})", CGI_MAX_MAX_TIME_MS);
                (Some(o), secs(t), h)
            } else {
                let o = format!("--max-time {}", secs((t * 4.0).min(top)));
                let h = format!("raise it with {o} (ceiling {})", secs(top));
                (Some(o), secs(t), h)
            };
            ("time", r)
        }
        _ if limit_class => {
            let Some(row) = row_for(&kind, &d.message, &s.limits) else { return };
            let v = s.limits.get(row.id);
            let ceiling = row.ceiling_for(s.max_memory);
            let memory_bound = matches!(row.ceiling, Ceiling::MaxMemory);
            let r = if v >= ceiling && memory_bound {
                // At the memory bound: it is the memory bound that moves it.
                let (o, _, h) = own("--max-memory", "max_memory", s.max_memory, MAX_MAX_MEMORY, Unit::Bytes);
                let h = h.replacen("raise it", &format!("{} is at --max-memory; raise both", row.name), 1);
                (o.map(|o| if s.cgi { o } else { format!("{o} --limit {}=max", row.name) }), v.to_string(), h)
            } else if v >= ceiling {
                (None, v.to_string(), format!("it is at its ceiling ({})", show(ceiling, row.unit)))
            } else {
                let n = more(v, ceiling);
                let top = if memory_bound {
                    format!("ceiling: --max-memory, {}", show(ceiling, row.unit))
                } else {
                    format!("ceiling {}", show(ceiling, row.unit))
                };
                if s.cgi {
                    let val =
                        if row.unit == Unit::Bytes { format!("\"{}\"", show(n, row.unit)) } else { n.to_string() };
                    let o = format!("[limits] {} = {val}", row.name);
                    let h = format!("raise it in the leash-cgi configuration: {o} ({top})");
                    (Some(o), v.to_string(), h)
                } else {
                    let o = format!("--limit {}={}", row.name, show(n, row.unit));
                    let h = format!("raise it with {o} ({top}), or every limit with --limit all=max");
                    (Some(o), v.to_string(), h)
                }
            };
            (row.name, r)
        }
        _ => return,
    };
    d.detail.limit = Some(LimitNote { name: name.to_string(), value, option });
    d.detail.help.push(help);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> Setup {
        Setup {
            max_steps: DEFAULT_MAX_STEPS,
            max_work: DEFAULT_MAX_WORK,
            max_time: None,
            max_memory: DEFAULT_MAX_MEMORY,
            limits: Limits::default(),
            cgi: false,
        }
    }

    fn taught(class: Class, kind: &str, message: &str, s: &Setup) -> Diagnostic {
        let mut d = Diagnostic::new(class, kind, message);
        teach(&mut d, s);
        d
    }

    #[test]
    fn file_reads_as_the_spec_shows_it() {
        let d = taught(
            Class::Limit,
            "file_reads",
            "bytes read by streaming readers exceed 16777216 bytes per run",
            &setup(),
        );
        let n = d.detail.limit.clone().unwrap();
        assert_eq!((n.name.as_str(), n.value.as_str()), ("file_reads", "16777216"));
        assert_eq!(n.option.as_deref(), Some("--limit file_reads=64M"));
        assert!(
            d.detail.help[0].starts_with("raise it with --limit file_reads=64M (ceiling 1T)"),
            "{:?}",
            d.detail.help
        );
        let d = taught(Class::Limit, "file_reads", "a line longer than 65536 bytes", &setup());
        assert_eq!(d.detail.limit.unwrap().option.as_deref(), Some("--limit file_reads_line=256K"));
    }

    #[test]
    fn of_several_stated_limits_the_first_stated() {
        // The reservation that is refused after 64 ms were used: 64 is also the
        // default `http_requests`, which must not be taken for the limit.
        let d = taught(
            Class::Limit,
            "http",
            "requested HTTP timeouts exceed 60000 ms per run (64 ms reserved, 60000 ms asked)",
            &setup(),
        );
        assert_eq!(d.detail.limit.unwrap().name, "http_timeouts");
        let d = taught(Class::Limit, "http", "more than 64 HTTP requests per run", &setup());
        assert_eq!(d.detail.limit.unwrap().name, "http_requests");
    }

    #[test]
    fn own_flags_load_time_and_cgi() {
        let d = taught(Class::Limit, "steps", "step limit of 1000000 reached", &setup());
        assert_eq!(d.detail.limit.unwrap().option.as_deref(), Some("--max-steps 4000000"));
        let d = taught(Class::Load, "nesting", "blocks nested too deep", &setup());
        let n = d.detail.limit.unwrap();
        assert_eq!((n.value.as_str(), n.option), ("128", None));
        let mut s = setup();
        s.cgi = true;
        let d = taught(Class::Limit, "string", "string of more than 1048576 bytes", &s);
        assert_eq!(d.detail.limit.unwrap().option.as_deref(), Some("[limits] string = \"4M\""));
        let d = taught(Class::Limit, "steps", "step limit of 1000000 reached", &s);
        assert_eq!(d.detail.limit.unwrap().option.as_deref(), Some("max_steps = 4000000"));
        let d = taught(Class::Runtime, "value", "bad", &s);
        assert!(d.detail.limit.is_none() && d.detail.help.is_empty());
    }
}
