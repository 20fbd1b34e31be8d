//! The command line: options defined once as data (`OPTIONS`), which also produce
//! `--help`. Parsing yields a `Config` and a `Command`, or a usage error.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::caps::{Cap, Caps, ScopeKind};
use crate::limits::*;

/// One option of the table.
pub struct Opt {
    pub name: &'static str,
    /// Name of the value it takes, if any.
    pub value: Option<&'static str>,
    pub help: &'static str,
}

pub const OPTIONS: &[Opt] = &[
    Opt { name: "--max-steps", value: Some("N"), help: "step budget, 1..1000000000000 (default 1000000)" },
    Opt {
        name: "--max-work",
        value: Some("N"),
        help: "work budget (about 1 ns of CPU per unit), 1..10000000000000 (default 2000000000)",
    },
    Opt { name: "--max-time", value: Some("SECONDS"), help: "wall-clock deadline for the whole run (default: none)" },
    Opt {
        name: "--max-memory",
        value: Some("BYTES"),
        help: "bound on all memory held for the script, 1M..64G; K, M, G (default 256M)",
    },
    Opt {
        name: "--limit",
        value: Some("NAME=VALUE"),
        help: "move one run-time limit (repeatable; NAME=max: its ceiling; all=max: every one; the list below)",
    },
    Opt {
        name: "--include-path",
        value: Some("DIR"),
        help: "a directory besides the script's own that include may load from (repeatable)",
    },
    cap_opt(Cap::Read),
    cap_opt(Cap::Files),
    cap_opt(Cap::Network),
    cap_opt(Cap::Listen),
    cap_opt(Cap::Db),
    Opt { name: "--audit", value: Some("FILE"), help: "append one JSON line per gated call to FILE" },
    Opt { name: "--json", value: None, help: "leash check: capabilities and every gated call site as JSON" },
    Opt { name: "--tls-ca-file", value: Some("PATH"), help: "replace default TLS trust (needs --allow-network)" },
    Opt {
        name: "--dns-server",
        value: Some("ADDR[:PORT]"),
        help: "replace the resolver configuration (needs --allow-network)",
    },
    Opt { name: "--seed", value: Some("N"), help: "seed for rand.*, 0..4294967295 (default: from the OS)" },
    Opt { name: "--error-format", value: Some("text|json"), help: "how diagnostics are written to stderr" },
    Opt { name: "--stats", value: None, help: "at exit, write one JSON line of usage figures to stderr" },
    Opt {
        name: "--report",
        value: Some("FILE"),
        help: "at exit (any exit), write status, diagnostics and stats to FILE as one JSON document",
    },
    Opt {
        name: "--profile",
        value: Some("FILE"),
        help: "at exit, write steps and work per call stack to FILE (folded), FILE.work, FILE.lines",
    },
    Opt { name: "--cgi", value: None, help: "CGI mode: hold output; on failure send a generic 500" },
    Opt { name: "--limits", value: None, help: "list every run-time limit: name, default, ceiling, unit, kind, bound" },
    Opt { name: "--builtins", value: None, help: "list every builtin: signature, arity, capability, cost rule" },
    Opt { name: "--filter", value: Some("TEXT"), help: "leash test: run only tests whose names contain TEXT" },
    Opt { name: "--update-snapshots", value: None, help: "leash test: write snapshots instead of comparing" },
    Opt { name: "--format", value: Some("text|json"), help: "leash test: one JSON object per test with json" },
];

/// The option of a capability's `--allow-*` flag, from the capability table
/// (`crate::caps`): it takes an optional `=LIST` scope (when its scope kind has one).
const fn cap_opt(c: Cap) -> Opt {
    Opt { name: c.flag(), value: None, help: c.help() }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub max_steps: u64,
    pub max_work: u64,
    pub max_time: Option<f64>,
    pub max_memory: u64,
    /// The run-time limits, moved by `--limit NAME=VALUE` (SPEC 8.2).
    pub limits: Limits,
    /// `--include-path` directories, canonical.
    pub include_path: Vec<PathBuf>,
    /// The capabilities granted by `--allow-*` flags.
    pub allow: Caps,
    /// The scopes of the `--allow-*` flags and `--audit` (opened by `gate::Gate::new`).
    pub scopes: crate::gate::Specs,
    /// `leash check --json`.
    pub check_json: bool,
    pub tls_ca_file: Option<PathBuf>,
    pub dns_server: Option<String>,
    pub seed: Option<u32>,
    pub json_errors: bool,
    pub stats: bool,
    /// `--profile FILE`.
    pub profile: Option<PathBuf>,
    pub cgi: bool,
    pub filter: Option<String>,
    pub update_snapshots: bool,
    /// `leash test --format json`.
    pub test_json: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_steps: DEFAULT_MAX_STEPS,
            max_work: DEFAULT_MAX_WORK,
            max_time: None,
            max_memory: DEFAULT_MAX_MEMORY,
            limits: Limits::default(),
            include_path: Vec::new(),
            allow: Caps::NONE,
            scopes: crate::gate::Specs::default(),
            check_json: false,
            tls_ca_file: None,
            dns_server: None,
            seed: None,
            json_errors: false,
            stats: false,
            profile: None,
            cgi: false,
            filter: None,
            update_snapshots: false,
            test_json: false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Program {
    File(PathBuf),
    Stdin,
    Inline(String),
}

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Run {
        program: Program,
        args: Vec<Vec<u8>>,
    },
    Check {
        scripts: Vec<PathBuf>,
    },
    Test {
        paths: Vec<PathBuf>,
    },
    Help,
    Version,
    Builtins,
    Limits,
    /// No script: the interactive session (`explicit`: asked for with `leash repl`).
    Repl {
        explicit: bool,
    },
}

pub fn help_text() -> String {
    let mut s = String::from(
        "leash: run scripts on a leash\n\n\
         usage:\n  \
         leash [OPTIONS] SCRIPT [ARG...]     run SCRIPT (\"-\" reads the program from stdin)\n  \
         leash [OPTIONS] -e CODE [ARG...]    run CODE given inline\n  \
         leash check [OPTIONS] SCRIPT...     load and validate only; print the capabilities each needs\n  \
         leash test [OPTIONS] [PATH...]      run test functions of *_test.lsh files\n  \
         leash fmt [--check] FILE...         format scripts in place (- formats stdin to stdout)\n  \
         leash [repl] [OPTIONS]              an interactive session (on a terminal)\n  \
         leash completions bash|zsh|fish|man print shell completions or the man page\n  \
         leash --version | --help | --builtins | --limits\n\noptions:\n",
    );
    for o in OPTIONS {
        let (head, help) = match o.value {
            Some(v) => (format!("{} {v}", o.name), o.help),
            // A scoped gate: its help begins with the optional `[=LIST]`.
            None if o.help.starts_with("[=") => {
                let (list, rest) = o.help.split_once(' ').unwrap_or((o.help, ""));
                (format!("{}{list}", o.name), rest)
            }
            None => (o.name.to_string(), o.help),
        };
        s.push_str(&format!("  {head:<28} {help}\n"));
    }
    s.push_str("\nrun-time limits (--limit NAME=VALUE; bytes take K, M, G; floor 1; see leash --limits):\n");
    for d in LIMITS {
        let head = format!("{} ({})", d.name, d.unit.name());
        s.push_str(&format!("  {head:<28} default {}, up to {}\n", show(d.default, d.unit), d.ceiling_text()));
    }
    s.push_str(
        "\nexit status: 0 success, 1 uncaught runtime error, 2 usage error, 3 load error,\n\
         4 limit exceeded, N from exit(N), 70 internal error\n",
    );
    s
}

/// Scan argv for the two options that shape how even a usage error is reported.
pub fn prescan(args: &[OsString]) -> (bool, bool) {
    let mut json = false;
    let mut stats = false;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_bytes();
        match a {
            b"--error-format" => {
                json = args.get(i + 1).map(|v| v.as_bytes() == b"json").unwrap_or(false);
                i += 1;
            }
            b"--error-format=json" => json = true,
            b"--error-format=text" => json = false,
            b"--stats" => stats = true,
            b"-e" => break,
            _ if a.starts_with(b"--") => {
                if OPTIONS.iter().any(|o| o.name.as_bytes() == a && o.value.is_some()) {
                    i += 1;
                }
            }
            _ => {
                if a != b"check" && a != b"test" {
                    break;
                }
            }
        }
        i += 1;
    }
    (json, stats)
}

/// The `--report` value in argv, found before parsing (so that even a usage error about
/// another option is reported there, by `report::open`). Stops where `prescan` stops:
/// at the program.
pub fn prescan_report(args: &[OsString]) -> Option<OsString> {
    let mut found = None;
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_bytes();
        match a {
            b"--report" => {
                found = args.get(i + 1).cloned();
                i += 1;
            }
            b"-e" | b"--" => break,
            _ if a.starts_with(b"--report=") => found = Some(OsStr::from_bytes(&a[9..]).to_os_string()),
            _ if a.starts_with(b"--") => {
                let name = a.split(|&c| c == b'=').next().unwrap_or(a);
                let takes = OPTIONS.iter().any(|o| o.name.as_bytes() == name && o.value.is_some());
                if takes && !a.contains(&b'=') {
                    i += 1;
                }
            }
            _ => {
                if a != b"check" && a != b"test" && a != b"repl" {
                    break;
                }
            }
        }
        i += 1;
    }
    found
}

fn parse_u64(name: &str, v: &str, lo: u64, hi: u64) -> Result<u64, String> {
    match v.parse::<u64>() {
        Ok(n) if (lo..=hi).contains(&n) => Ok(n),
        _ => Err(format!("{name} takes a whole number from {lo} to {hi}, got \"{v}\"")),
    }
}

/// `--max-memory`'s value: bytes with an optional K, M or G suffix, 1 MiB..64 GiB (also the
/// `max_memory` key of the leash-cgi configuration).
pub fn parse_memory(v: &str) -> Result<u64, String> {
    let err = || format!("--max-memory takes bytes from 1M to 64G (suffixes K, M, G), got \"{v}\"");
    let (digits, mult) = match v.as_bytes().last() {
        Some(b'K') | Some(b'k') => (&v[..v.len() - 1], KIB as u64),
        Some(b'M') | Some(b'm') => (&v[..v.len() - 1], MIB as u64),
        Some(b'G') | Some(b'g') => (&v[..v.len() - 1], 1024 * MIB as u64),
        _ => (v, 1),
    };
    let n: u64 = digits.parse().map_err(|_| err())?;
    let bytes = n.checked_mul(mult).ok_or_else(err)?;
    if !(MIN_MAX_MEMORY..=MAX_MAX_MEMORY).contains(&bytes) {
        return Err(err());
    }
    Ok(bytes)
}

fn parse_time(v: &str) -> Result<f64, String> {
    let err = || format!("--max-time takes seconds, more than 0 and at most {MAX_MAX_TIME_SECS}, got \"{v}\"");
    let ok = !v.is_empty() && v.bytes().all(|c| c.is_ascii_digit() || c == b'.');
    let t: f64 = if ok { v.parse().map_err(|_| err())? } else { return Err(err()) };
    if !(t > 0.0 && t <= MAX_MAX_TIME_SECS) {
        return Err(err());
    }
    Ok(t)
}

fn parse_dns(v: &str) -> Result<String, String> {
    use std::net::{IpAddr, SocketAddr};
    if v.parse::<IpAddr>().is_ok() || v.parse::<SocketAddr>().is_ok() {
        return Ok(v.to_string());
    }
    Err(format!("--dns-server takes an IP address with an optional port, got \"{v}\""))
}

fn text(v: &OsString) -> Result<String, String> {
    v.to_str().map(str::to_string).ok_or_else(|| "option values must be valid UTF-8".to_string())
}

/// Parse the command line (without the program name).
pub fn parse(args: &[OsString]) -> Result<(Config, Command), String> {
    let mut cfg = Config::default();
    let mut given: Vec<crate::limits::Setting> = Vec::new();
    let mut i = 0;
    let mut sub: Option<&str> = None;
    let mut positional: Vec<OsString> = Vec::new();
    let mut inline: Option<String> = None;
    while i < args.len() {
        let a = &args[i];
        let s = a.as_bytes();
        // A run stops parsing options at its program: the rest are script arguments.
        if sub.is_none() && (inline.is_some() || !positional.is_empty()) {
            positional.extend(args[i..].iter().cloned());
            break;
        }
        if s == b"--" {
            positional.extend(args[i + 1..].iter().cloned());
            break;
        }
        if s == b"--help" || s == b"-h" {
            return Ok((cfg, Command::Help));
        }
        if s == b"--version" || s == b"-V" {
            return Ok((cfg, Command::Version));
        }
        if s == b"--builtins" {
            return Ok((cfg, Command::Builtins));
        }
        if s == b"--limits" {
            return Ok((cfg, Command::Limits));
        }
        if s == b"-e" {
            if sub.is_some() {
                return Err("-e cannot be used with check or test".into());
            }
            let code = args.get(i + 1).ok_or("-e needs CODE")?;
            inline = Some(text(code).map_err(|_| "-e CODE must be valid UTF-8".to_string())?);
            i += 2;
            continue;
        }
        if s.starts_with(b"--") {
            let full = text(a)?;
            let (name, attached) = match full.split_once('=') {
                Some((n, v)) => (n.to_string(), Some(v.to_string())),
                None => (full.clone(), None),
            };
            let Some(opt) = OPTIONS.iter().find(|o| o.name == name) else {
                return Err(format!("unknown option {name}"));
            };
            let value = if opt.value.is_some() {
                match attached.clone() {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        Some(text(args.get(i).ok_or_else(|| format!("{name} needs a value"))?)?)
                    }
                }
            } else {
                if attached.is_some() && Cap::by_flag(&name).is_none_or(|c| c.scope() == ScopeKind::None) {
                    return Err(format!("{name} takes no value"));
                }
                None
            };
            // `--allow-X=LIST`: the scope (an empty list is a usage error).
            let scope = |s: &mut crate::gate::ScopeSpec| -> Result<(), String> {
                if attached.as_deref() == Some("") {
                    return Err(format!("{name}= needs a list"));
                }
                s.add(attached.as_deref()).map_err(|m| format!("{name}: {m}"))
            };
            let v = value.unwrap_or_default();
            if let Some(c) = Cap::by_flag(&name) {
                scope(cfg.scopes.cap_mut(c))?;
                cfg.allow.insert(c);
                i += 1;
                continue;
            }
            match name.as_str() {
                "--max-steps" => cfg.max_steps = parse_u64(&name, &v, 1, MAX_MAX_STEPS)?,
                "--max-work" => cfg.max_work = parse_u64(&name, &v, 1, MAX_MAX_WORK)?,
                "--max-time" => cfg.max_time = Some(parse_time(&v)?),
                "--max-memory" => cfg.max_memory = parse_memory(&v)?,
                "--limit" => given.extend(crate::limits::parse_spec(&v).map_err(|m| format!("--limit: {m}"))?),
                "--include-path" => {
                    if cfg.include_path.len() >= MAX_INCLUDE_PATHS {
                        return Err(format!("too many --include-path options (limit is {MAX_INCLUDE_PATHS})"));
                    }
                    let dir = std::fs::canonicalize(&v)
                        .ok()
                        .filter(|d| d.is_dir())
                        .ok_or_else(|| format!("--include-path takes an existing directory, got \"{v}\""))?;
                    cfg.include_path.push(dir);
                }
                "--json" => cfg.check_json = true,
                "--audit" => {
                    if v.is_empty() {
                        return Err("--audit needs a FILE".into());
                    }
                    cfg.scopes.audit = Some(PathBuf::from(&v))
                }
                "--tls-ca-file" => {
                    let p = PathBuf::from(&v);
                    if !p.is_file() {
                        return Err(format!("--tls-ca-file: cannot read \"{v}\""));
                    }
                    cfg.tls_ca_file = Some(p);
                }
                "--dns-server" => cfg.dns_server = Some(parse_dns(&v)?),
                "--seed" => cfg.seed = Some(parse_u64(&name, &v, 0, u32::MAX as u64)? as u32),
                "--error-format" => {
                    cfg.json_errors = match v.as_str() {
                        "json" => true,
                        "text" => false,
                        _ => return Err(format!("--error-format takes text or json, got \"{v}\"")),
                    }
                }
                "--stats" => cfg.stats = true,
                // Opened before parsing (`prescan_report`, `report::open`).
                "--report" => {}
                "--profile" => cfg.profile = Some(PathBuf::from(&v)),
                "--cgi" => cfg.cgi = true,
                "--filter" => cfg.filter = Some(v),
                "--update-snapshots" => cfg.update_snapshots = true,
                "--format" => {
                    cfg.test_json = match v.as_str() {
                        "json" => true,
                        "text" => false,
                        _ => return Err(format!("--format takes text or json, got \"{v}\"")),
                    }
                }
                _ => return Err(format!("unknown option {name}")),
            }
            i += 1;
            continue;
        }
        if s.len() > 1 && s[0] == b'-' {
            return Err(format!("unknown option {}", a.to_string_lossy()));
        }
        if sub.is_none() && positional.is_empty() && inline.is_none() && s == b"repl" {
            sub = Some("repl");
            i += 1;
            continue;
        }
        if sub.is_none() && positional.is_empty() && inline.is_none() && (s == b"check" || s == b"test") {
            sub = Some(if s == b"check" { "check" } else { "test" });
            i += 1;
            continue;
        }
        positional.push(a.clone());
        i += 1;
    }
    cfg.limits.resolve(&given, cfg.max_memory, "--max-memory").map_err(|m| format!("--limit: {m}"))?;
    if let Some((c, need)) = cfg.allow.missing_need() {
        return Err(format!("{} needs {}", c.flag(), need.flag()));
    }
    // They also serve PostgreSQL servers granted by `--allow-db=postgresql://...`.
    let pg = cfg.scopes.cap(Cap::Db).items.iter().any(|i| crate::gate::is_pg_url(i.as_bytes()));
    let network = cfg.allow.has(Cap::Network);
    if cfg.tls_ca_file.is_some() && !network && !pg {
        return Err("--tls-ca-file needs --allow-network (or an --allow-db=postgresql:// scope)".into());
    }
    if cfg.dns_server.is_some() && !network && !pg {
        return Err("--dns-server needs --allow-network (or an --allow-db=postgresql:// scope)".into());
    }
    let to_path = |a: &OsString| PathBuf::from(a);
    let cmd = match sub {
        Some("check") => {
            if positional.is_empty() {
                return Err("check needs at least one SCRIPT".into());
            }
            Command::Check { scripts: positional.iter().map(to_path).collect() }
        }
        Some("repl") => {
            if !positional.is_empty() {
                return Err("repl takes no SCRIPT".into());
            }
            Command::Repl { explicit: true }
        }
        Some(_) => Command::Test { paths: positional.iter().map(to_path).collect() },
        None => {
            let (program, rest) = match inline {
                Some(code) => (Program::Inline(code), &positional[..]),
                None => {
                    let Some(first) = positional.first() else {
                        // On a terminal, the interactive session; `app` gives the usage
                        // error otherwise.
                        return Ok((cfg, Command::Repl { explicit: false }));
                    };
                    let p = if first.as_bytes() == b"-" { Program::Stdin } else { Program::File(to_path(first)) };
                    (p, &positional[1..])
                }
            };
            if rest.len() > MAX_SCRIPT_ARGS {
                return Err(format!("too many script arguments: {} (limit is {MAX_SCRIPT_ARGS})", rest.len()));
            }
            let bytes: usize = rest.iter().map(|a| a.as_bytes().len()).sum();
            if bytes > MAX_SCRIPT_ARG_BYTES {
                return Err(format!("script arguments of {bytes} bytes (limit is {MAX_SCRIPT_ARG_BYTES})"));
            }
            Command::Run { program, args: rest.iter().map(|a| a.as_bytes().to_vec()).collect() }
        }
    };
    Ok((cfg, cmd))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scan(args: &[&str]) -> Option<String> {
        let v: Vec<OsString> = args.iter().map(OsString::from).collect();
        prescan_report(&v).map(|s| s.to_string_lossy().into_owned())
    }

    #[test]
    fn prescan_report_finds_the_report_before_the_program() {
        assert_eq!(scan(&["--report", "r.json", "x.lsh"]).as_deref(), Some("r.json"));
        assert_eq!(scan(&["--report=r.json", "-e", "print(1)"]).as_deref(), Some("r.json"));
        assert_eq!(scan(&["--max-steps", "5", "--report", "a", "test", "dir"]).as_deref(), Some("a"));
        assert_eq!(scan(&["test", "--report", "a"]).as_deref(), Some("a"));
        // After the program, it is a script argument.
        assert_eq!(scan(&["x.lsh", "--report", "r.json"]), None);
        assert_eq!(scan(&["-e", "print(1)", "--report", "r.json"]), None);
        // An option's value that looks like --report is that option's value.
        assert_eq!(scan(&["--audit", "--report", "x.lsh"]), None);
        assert_eq!(scan(&["--report"]), None);
    }

    fn p(args: &[&str]) -> Result<(Config, Command), String> {
        parse(&args.iter().map(OsString::from).collect::<Vec<_>>())
    }

    #[test]
    fn run_and_script_args() {
        let (c, cmd) = p(&["--max-steps", "10", "x.lsh", "--max-steps", "a"]).unwrap();
        assert_eq!(c.max_steps, 10);
        assert_eq!(
            cmd,
            Command::Run { program: Program::File("x.lsh".into()), args: vec![b"--max-steps".to_vec(), b"a".to_vec()] }
        );
        let (_, cmd) = p(&["-e", "print(1)", "a"]).unwrap();
        assert_eq!(cmd, Command::Run { program: Program::Inline("print(1)".into()), args: vec![b"a".to_vec()] });
        let (_, cmd) = p(&["-"]).unwrap();
        assert_eq!(cmd, Command::Run { program: Program::Stdin, args: vec![] });
    }

    #[test]
    fn ranges() {
        assert!(p(&["--max-steps", "0", "x"]).is_err());
        assert!(p(&["--max-steps", "100000000", "x"]).is_ok());
        assert!(p(&["--max-steps", "1000000000000", "x"]).is_ok());
        assert!(p(&["--max-steps", "1000000000001", "x"]).is_err());
        assert_eq!(p(&["--max-work", "10000000000000", "x"]).unwrap().0.max_work, MAX_MAX_WORK);
        for bad in ["0", "-1", "1e9", "x", "10000000000001", ""] {
            assert!(p(&["--max-work", bad, "x"]).is_err(), "--max-work {bad}");
        }
        assert!(p(&["--max-memory", "1M", "x"]).is_ok());
        assert!(p(&["--max-memory", "1048575", "x"]).is_err());
        assert!(p(&["--max-memory", "64G", "x"]).is_ok());
        assert!(p(&["--max-memory", "65G", "x"]).is_err());
        assert!(p(&["--seed", "4294967295", "x"]).is_ok());
        assert!(p(&["--seed", "4294967296", "x"]).is_err());
        assert!(p(&["--max-time", "0", "x"]).is_err());
        assert!(p(&["--max-time", "0.5", "x"]).is_ok());
        assert!(p(&["--error-format", "xml", "x"]).is_err());
        assert!(p(&["--bogus", "x"]).is_err());
    }

    #[test]
    fn limits() {
        let (c, _) = p(&["--limit", "string=2M", "--limit=list=50000", "x"]).unwrap();
        assert_eq!(c.limits.get(L::String), 2 * MIB as u64);
        assert_eq!(c.limits.get(L::List), 50_000);
        assert_eq!(c.limits.get(L::Map), Limits::default().get(L::Map));
        assert!(p(&["--limit", "string=256M", "x"]).is_ok());
        for bad in ["string=0", "string=257M", "string", "string=", "=1", "nosuch=1", "nesting=5", "steps=5", "list=1K"]
        {
            assert!(p(&["--limit", bad, "x"]).is_err(), "--limit {bad}");
        }
        assert!(p(&["--max-memory", "4M", "--limit", "frame_storage=4M", "x"]).is_ok());
        assert!(p(&["--limit", "frame_storage=5M", "--max-memory", "4M", "x"]).is_err());
        assert!(p(&["--limit", "frame_storage=1G", "--max-memory", "1G", "x"]).is_ok());
        assert!(p(&["--limit", "frame_storage=1025M", "--max-memory", "1G", "x"]).is_err());
        assert_eq!(p(&["--limits"]).unwrap().1, Command::Limits);
    }

    #[test]
    fn limits_at_max() {
        // NAME=max: the ceiling; for frame_storage the final --max-memory, whatever the order.
        let (c, _) = p(&["--limit", "string=max", "--limit", "frame_storage=max", "--max-memory", "1G", "x"]).unwrap();
        assert_eq!(c.limits.get(L::String), 256 * MIB as u64);
        assert_eq!(c.limits.get(L::FrameStorage), find("frame_storage").unwrap().ceiling_for(1 << 30));
        // all=max: every limit at its ceiling; a later setting moves one back.
        let (c, _) = p(&["--limit", "all=max", "--limit", "list=100", "x"]).unwrap();
        for d in LIMITS.iter().filter(|d| d.id != L::List) {
            assert_eq!(c.limits.get(d.id), d.ceiling_for(DEFAULT_MAX_MEMORY), "{}", d.name);
        }
        assert_eq!(c.limits.get(L::List), 100);
        for bad in ["all=5", "all=", "all=MAX", "steps=max", "nesting=max", "nosuch=max"] {
            assert!(p(&["--limit", bad, "x"]).is_err(), "--limit {bad}");
        }
    }

    #[test]
    fn gates() {
        assert!(p(&["--allow-listen", "x"]).is_err());
        assert!(p(&["--allow-network", "--allow-listen", "x"]).is_ok());
        assert!(p(&["--dns-server", "127.0.0.1:53", "x"]).is_err());
        assert!(p(&["--allow-network", "--dns-server", "127.0.0.1:53", "x"]).is_ok());
        assert!(p(&["--allow-network", "--dns-server", "nonsense", "x"]).is_err());
    }

    #[test]
    fn check() {
        let (_, cmd) = p(&["check", "a.lsh", "b.lsh"]).unwrap();
        assert_eq!(cmd, Command::Check { scripts: vec!["a.lsh".into(), "b.lsh".into()] });
        assert!(p(&["check"]).is_err());
    }
}
