//! The CGI gateway's operator configuration: the TOML file (the `toml` crate parses it)
//! whose path is in `LEASH_CGI_CONFIG`, read once and checked whole, so that a request
//! meets only settled values (`Config`). What a request then gets from it (its script's
//! `[[dir]]`, capabilities and limits) is decided in `gateway.rs`.
//!
//! ```toml
//! root = "/srv/www"                 # scripts must resolve inside it (required)
//! interpreter = "/usr/local/bin/leash"
//! max_steps = 1000000
//! max_work = 2000000000
//! max_time_ms = 10000
//! max_memory = "256M"
//! max_output_bytes = 16777216
//! max_body_bytes = 1048576
//! max_file_size = 67108864
//! env_pass = ["TZ"]
//! allow = []
//! [limits]                          # run-time limits (SPEC 8.2), the names of --limit
//! string = "2M"
//! [[dir]]
//! path = "admin"                    # relative to root
//! allow = ["files"]
//! [dir.limits]                      # moves these on top of [limits] for this dir
//! frame_storage = "32M"
//! ```
//!
//! `leash-cgi --fastcgi` reads three more keys (CGI mode ignores them): `max_workers`
//! (requests running at once), `queue` (requests waiting for one; more get 503) and
//! `worker_start` (`"fork"`, the default, or `"exec"`); and the program cache's bounds,
//! `program_cache` (entries, 0 turns it off), `program_cache_bytes` and
//! `program_cache_min_age_ms` (`program_cache.rs`); and `spare_workers`, the fresh
//! workers the warm process keeps forked ahead of requests (`fastcgi_warm.rs`).

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

use crate::caps::{Cap, Caps, ScopeKind};
use crate::limits::*;

/// The environment variable naming the configuration file.
pub const CONFIG_ENV: &str = "LEASH_CGI_CONFIG";

/// Capabilities granted to a script (SPEC 9), named as the capability table names them
/// (`crate::caps`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Allow {
    pub caps: Caps,
    /// Scoped entries (`"files=data/uploads"`): capability and item, paths already made
    /// absolute beneath `root`. A capability granted bare as well is unscoped.
    pub scoped: Vec<(Cap, String)>,
    /// Capabilities granted bare (everywhere).
    pub bare: Vec<Cap>,
}

impl Allow {
    /// The `leash` flags that grant these capabilities (with their scopes).
    pub fn flags(&self) -> Vec<String> {
        let mut v = Vec::new();
        for cap in Cap::ALL {
            if !self.caps.has(cap) {
                continue;
            }
            let items: Vec<&str> = self.scoped.iter().filter(|(c, _)| *c == cap).map(|(_, i)| i.as_str()).collect();
            if self.bare.contains(&cap) || items.is_empty() {
                v.push(cap.flag().to_string());
            } else {
                v.push(format!("{}={}", cap.flag(), items.join(",")));
            }
        }
        v
    }

    /// `files network`, `files=/srv/data network`, or `none`.
    pub fn describe(&self) -> String {
        let names: Vec<String> = self.flags().iter().map(|f| f.trim_start_matches("--allow-").to_string()).collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(" ")
        }
    }
}

/// A `[[dir]]` table: scripts under `root/path` get `allow` instead of the default.
#[derive(Debug, Clone, PartialEq)]
pub struct DirRule {
    /// Relative to the root, as written (no `..`, not absolute).
    pub path: PathBuf,
    /// None: the default `allow` (a `[[dir]]` that only moves limits).
    pub allow: Option<Allow>,
    /// `[dir.limits]`: moved on top of the top-level `[limits]`.
    pub limits: Vec<(L, u64)>,
}

/// The operator configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// The document root, canonical: scripts must resolve inside it.
    pub root: PathBuf,
    /// The `leash` binary; `None`: the `leash` beside `leash-cgi`.
    pub interpreter: Option<PathBuf>,
    pub max_steps: u64,
    pub max_work: u64,
    pub max_time_ms: u64,
    pub max_memory: u64,
    pub max_output_bytes: u64,
    pub max_body_bytes: u64,
    pub max_file_size: u64,
    pub env_pass: Vec<String>,
    pub allow: Allow,
    /// `[limits]`: the run-time limits moved for every script, as `--limit` would.
    pub limits: Vec<(L, u64)>,
    pub dirs: Vec<DirRule>,
    /// FastCGI (`leash-cgi --fastcgi`): requests running at once.
    pub max_workers: u64,
    /// FastCGI: requests waiting for a worker; more are answered 503.
    pub queue: u64,
    /// FastCGI: `worker_start = "exec"`: each worker execs the interpreter (instead of
    /// running it in the process forked from the warm one).
    pub worker_exec: bool,
    /// FastCGI: the program cache (`program_cache.rs`): entries (0: off), bytes of loaded
    /// programs, and how old a file must be to be cached.
    pub program_cache: u64,
    pub program_cache_bytes: u64,
    pub program_cache_min_age_ms: u64,
    /// FastCGI: workers forked ahead of requests, each waiting for one request (idle
    /// processes beside the `max_workers` running ones).
    pub spare_workers: u64,
}

/// FastCGI defaults and bounds (`max_workers`, `queue`).
pub const FCGI_DEFAULT_MAX_WORKERS: u64 = 16;
pub const FCGI_MAX_MAX_WORKERS: u64 = 4096;
pub const FCGI_DEFAULT_QUEUE: u64 = 64;
pub const FCGI_MAX_QUEUE: u64 = 65_536;
/// FastCGI program cache defaults and bounds (`program_cache`, `program_cache_bytes`,
/// `program_cache_min_age_ms`).
pub const FCGI_DEFAULT_PROGRAM_CACHE: u64 = 64;
pub const FCGI_MAX_PROGRAM_CACHE: u64 = 4096;
pub const FCGI_DEFAULT_PROGRAM_CACHE_BYTES: u64 = 32 * MIB as u64;
pub const FCGI_MAX_PROGRAM_CACHE_BYTES: u64 = 1024 * MIB as u64;
pub const FCGI_DEFAULT_PROGRAM_CACHE_MIN_AGE_MS: u64 = 2000;
pub const FCGI_MAX_PROGRAM_CACHE_MIN_AGE_MS: u64 = 3_600_000;
/// FastCGI spare workers (`spare_workers`): default and bound.
pub const FCGI_DEFAULT_SPARE_WORKERS: u64 = 0;
pub const FCGI_MAX_SPARE_WORKERS: u64 = 256;

const KEYS: &[&str] = &[
    "root",
    "interpreter",
    "max_steps",
    "max_work",
    "max_time_ms",
    "max_memory",
    "max_output_bytes",
    "max_body_bytes",
    "max_file_size",
    "env_pass",
    "allow",
    "limits",
    "dir",
    "max_workers",
    "queue",
    "worker_start",
    "program_cache",
    "program_cache_bytes",
    "program_cache_min_age_ms",
    "spare_workers",
];

/// A `[limits]` table: names and values as `--limit` takes them (numbers, or strings
/// with K, M, G for bytes), each within its floor and ceiling; the limits whose ceiling
/// is `--max-memory` within `max_memory`. `NAME = "max"` is the limit's ceiling, and
/// `all = "max"` every run-time limit's ceiling, the other entries of the table moving
/// theirs from there (whatever the order they are written in).
fn parse_limits(v: &toml::Value, what: &str, max_memory: u64) -> Result<Vec<(L, u64)>, String> {
    let toml::Value::Table(t) = v else {
        return Err(format!("`{what}` must be a table, got {}", v.type_str()));
    };
    let mut settings: Vec<Setting> = Vec::new();
    let all_first = t.iter().filter(|(n, _)| *n == "all").chain(t.iter().filter(|(n, _)| *n != "all"));
    for (name, value) in all_first {
        let text = match value {
            toml::Value::Integer(n) => n.to_string(),
            toml::Value::String(s) => s.clone(),
            other => return Err(format!("`{what}`: {name} must be a number or a string, got {}", other.type_str())),
        };
        settings.extend(crate::limits::parse_spec(&format!("{name}={text}")).map_err(|m| format!("`{what}`: {m}"))?);
    }
    let mut lim = Limits::default();
    lim.resolve(&settings, max_memory, "max_memory").map_err(|m| format!("`{what}`: {m}"))?;
    let mut out: Vec<(L, u64)> = Vec::new();
    for s in &settings {
        out.retain(|(k, _)| *k != s.id);
        out.push((s.id, lim.get(s.id)));
    }
    Ok(out)
}

fn int_key(t: &toml::Table, key: &str, default: u64, lo: u64, hi: u64) -> Result<u64, String> {
    match t.get(key) {
        None => Ok(default),
        Some(toml::Value::Integer(n)) if *n >= 0 && (lo..=hi).contains(&(*n as u64)) => Ok(*n as u64),
        Some(v) => Err(format!("`{key}` must be a whole number from {lo} to {hi}, got {}", show(v))),
    }
}

/// A value as a message shows it: numbers as written, anything else by its type.
fn show(v: &toml::Value) -> String {
    match v {
        toml::Value::Integer(n) => n.to_string(),
        toml::Value::Float(f) => f.to_string(),
        toml::Value::String(s) => format!("{s:?}"),
        other => format!("a {}", other.type_str()),
    }
}

fn str_key(t: &toml::Table, key: &str) -> Result<Option<String>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(format!("`{key}` must be a string, got {}", v.type_str())),
    }
}

fn str_list(v: &toml::Value, what: &str) -> Result<Vec<String>, String> {
    let toml::Value::Array(items) = v else {
        return Err(format!("`{what}` must be a list of strings, got {}", v.type_str()));
    };
    items
        .iter()
        .map(|i| match i {
            toml::Value::String(s) => Ok(s.clone()),
            other => Err(format!("`{what}` must be a list of strings, found {}", other.type_str())),
        })
        .collect()
}

/// A scoped path entry: relative to root (or absolute), and after every symlink and
/// `..` inside root; a file that does not exist yet needs its directory to.
fn scope_path(root: &Path, item: &str, what: &str, entry: &str) -> Result<String, String> {
    let p = root.join(item);
    let real = match std::fs::canonicalize(&p) {
        Ok(r) => r,
        Err(_) => {
            let parent = p.parent().unwrap_or(root);
            let name = p.file_name().ok_or(format!("`{what}`: \"{entry}\" names no file"))?;
            std::fs::canonicalize(parent)
                .map_err(|e| format!("`{what}`: \"{entry}\": {}", crate::fileio::io_reason(&e)))?
                .join(name)
        }
    };
    if !real.starts_with(root) {
        return Err(format!("`{what}`: \"{entry}\" resolves outside root ({})", real.display()));
    }
    real.to_str().map(str::to_string).ok_or(format!("`{what}`: \"{entry}\" is not UTF-8"))
}

fn parse_allow(v: &toml::Value, what: &str, root: &Path) -> Result<Allow, String> {
    let mut a = Allow::default();
    for entry in str_list(v, what)? {
        let (name, scope) = match entry.split_once('=') {
            Some((n, s)) => (n, Some(s)),
            None => (entry.as_str(), None),
        };
        let Some(cap) = Cap::by_name(name) else {
            return Err(format!(
                "`{what}`: unknown capability \"{name}\" (known: {}, optionally =SCOPE)",
                Cap::names_listed()
            ));
        };
        a.caps.insert(cap);
        match scope {
            None => a.bare.push(cap),
            Some(s) => {
                for item in s.split(',') {
                    if item.is_empty() {
                        return Err(format!("`{what}`: \"{entry}\" has an empty scope item"));
                    }
                    let shown = format!("`{what}`: {}", cap.name());
                    let item = match cap.scope() {
                        ScopeKind::Host => {
                            crate::gate::parse_host(item, &shown)?;
                            item.to_string()
                        }
                        ScopeKind::PathOrPg if crate::gate::is_pg_url(item.as_bytes()) => {
                            crate::gate::parse_pg_scope(item, &shown)?;
                            item.to_string()
                        }
                        ScopeKind::Path | ScopeKind::PathOrPg => scope_path(root, item, what, &entry)?,
                        ScopeKind::None => {
                            return Err(format!("`{what}`: \"{}\" takes no scope", cap.name()));
                        }
                    };
                    if item.contains(',') {
                        return Err(format!("`{what}`: \"{entry}\": a path with a comma cannot be a scope"));
                    }
                    a.scoped.push((cap, item));
                }
            }
        }
    }
    if let Some((c, need)) = a.caps.missing_need() {
        return Err(format!("`{what}`: \"{}\" needs \"{}\" too", c.name(), need.name()));
    }
    Ok(a)
}

fn valid_env_name(n: &str) -> bool {
    !n.is_empty() && n.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_') && !n.as_bytes()[0].is_ascii_digit()
}

/// Parse and check a configuration file's text. The root must exist: it is
/// canonicalized here, so that every later comparison is between canonical paths.
pub fn parse_config(text: &str) -> Result<Config, String> {
    // A message quotes values from the file, whose strings may hold escaped control
    // characters (`"a\nb"`): shown escaped, so that the message stays one log line.
    parse_config_text(text).map_err(|m| escape_controls(&m))
}

/// `s` with each control character written as its escape (`\n`, `\u{7f}`).
fn escape_controls(s: &str) -> String {
    s.chars().fold(String::with_capacity(s.len()), |mut out, c| {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
        out
    })
}

fn parse_config_text(text: &str) -> Result<Config, String> {
    let t: toml::Table = text.parse().map_err(|e: toml::de::Error| one_line(&e.to_string()))?;
    for k in t.keys() {
        if !KEYS.contains(&k.as_str()) {
            return Err(format!("unknown key `{k}`"));
        }
    }
    let root = str_key(&t, "root")?.ok_or("`root` is required")?;
    let root = PathBuf::from(root);
    if !root.is_absolute() {
        return Err(format!("`root` must be an absolute path, got {}", root.display()));
    }
    let root = std::fs::canonicalize(&root)
        .map_err(|e| format!("`root` {}: {}", root.display(), crate::fileio::io_reason(&e)))?;
    if !root.is_dir() {
        return Err(format!("`root` {} is not a directory", root.display()));
    }
    let interpreter = match str_key(&t, "interpreter")? {
        None => None,
        Some(p) => {
            let p = PathBuf::from(p);
            if !p.is_absolute() {
                return Err(format!("`interpreter` must be an absolute path, got {}", p.display()));
            }
            Some(p)
        }
    };
    let max_steps = int_key(&t, "max_steps", DEFAULT_MAX_STEPS, 1, MAX_MAX_STEPS)?;
    let max_work = int_key(&t, "max_work", DEFAULT_MAX_WORK, 1, MAX_MAX_WORK)?;
    let max_time_ms = int_key(&t, "max_time_ms", CGI_DEFAULT_MAX_TIME_MS, 1, CGI_MAX_MAX_TIME_MS)?;
    let max_memory = match t.get("max_memory") {
        None => DEFAULT_MAX_MEMORY,
        Some(toml::Value::Integer(n)) if *n >= 0 => {
            crate::cli::parse_memory(&n.to_string()).map_err(|_| bad_memory(&n.to_string()))?
        }
        Some(toml::Value::String(s)) => crate::cli::parse_memory(s).map_err(|_| bad_memory(s))?,
        Some(v) => return Err(bad_memory(&show(v))),
    };
    let max_output_bytes = int_key(&t, "max_output_bytes", CGI_DEFAULT_MAX_OUTPUT_BYTES, 1, CGI_MAX_MAX_OUTPUT_BYTES)?;
    let max_body_bytes = int_key(&t, "max_body_bytes", CGI_DEFAULT_MAX_BODY_BYTES, 0, CGI_MAX_MAX_BODY_BYTES)?;
    let limits = match t.get("limits") {
        None => Vec::new(),
        Some(v) => parse_limits(v, "limits", max_memory)?,
    };
    let max_file_size =
        int_key(&t, "max_file_size", CGI_DEFAULT_MAX_FILE_SIZE, CGI_MIN_MAX_FILE_SIZE, CGI_MAX_MAX_FILE_SIZE)?;
    let env_pass = match t.get("env_pass") {
        None => Vec::new(),
        Some(v) => str_list(v, "env_pass")?,
    };
    if let Some(bad) = env_pass.iter().find(|n| !valid_env_name(n)) {
        return Err(format!("`env_pass`: \"{bad}\" is not a variable name (letters, digits, _)"));
    }
    let allow = match t.get("allow") {
        None => Allow::default(),
        Some(v) => parse_allow(v, "allow", &root)?,
    };
    let mut dirs = Vec::new();
    match t.get("dir") {
        None => {}
        Some(toml::Value::Array(tables)) => {
            for (i, d) in tables.iter().enumerate() {
                let what = format!("[[dir]] #{}", i + 1);
                let toml::Value::Table(d) = d else {
                    return Err(format!("{what} must be a table"));
                };
                for k in d.keys() {
                    if k != "path" && k != "allow" && k != "limits" {
                        return Err(format!("{what}: unknown key `{k}`"));
                    }
                }
                let path = str_key(d, "path")?.ok_or(format!("{what}: `path` is required"))?;
                let path = PathBuf::from(path);
                let plain = path.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
                if path.as_os_str().is_empty() || !plain {
                    return Err(format!(
                        "{what}: `path` must be relative to root, without `..`, got \"{}\"",
                        path.display()
                    ));
                }
                let limits = match d.get("limits") {
                    None => Vec::new(),
                    Some(v) => parse_limits(v, &format!("{what} limits"), max_memory)?,
                };
                let allow = match d.get("allow") {
                    Some(a) => Some(parse_allow(a, "allow", &root)?),
                    None if d.contains_key("limits") => None,
                    None => return Err(format!("{what}: `allow` or `limits` is required")),
                };
                dirs.push(DirRule { path, allow, limits });
            }
        }
        Some(_) => return Err("`dir` must be written as [[dir]] tables".into()),
    }
    let max_workers = int_key(&t, "max_workers", FCGI_DEFAULT_MAX_WORKERS, 1, FCGI_MAX_MAX_WORKERS)?;
    let queue = int_key(&t, "queue", FCGI_DEFAULT_QUEUE, 0, FCGI_MAX_QUEUE)?;
    let worker_exec = match str_key(&t, "worker_start")?.as_deref() {
        None | Some("fork") => false,
        Some("exec") => true,
        Some(other) => return Err(format!("`worker_start` must be \"fork\" or \"exec\", got {other:?}")),
    };
    let program_cache = int_key(&t, "program_cache", FCGI_DEFAULT_PROGRAM_CACHE, 0, FCGI_MAX_PROGRAM_CACHE)?;
    let program_cache_bytes =
        int_key(&t, "program_cache_bytes", FCGI_DEFAULT_PROGRAM_CACHE_BYTES, 0, FCGI_MAX_PROGRAM_CACHE_BYTES)?;
    let program_cache_min_age_ms = int_key(
        &t,
        "program_cache_min_age_ms",
        FCGI_DEFAULT_PROGRAM_CACHE_MIN_AGE_MS,
        0,
        FCGI_MAX_PROGRAM_CACHE_MIN_AGE_MS,
    )?;
    let spare_workers = int_key(&t, "spare_workers", FCGI_DEFAULT_SPARE_WORKERS, 0, FCGI_MAX_SPARE_WORKERS)?;
    Ok(Config {
        root,
        interpreter,
        max_steps,
        max_work,
        max_time_ms,
        max_memory,
        max_output_bytes,
        max_body_bytes,
        max_file_size,
        env_pass,
        allow,
        limits,
        dirs,
        max_workers,
        queue,
        worker_exec,
        program_cache,
        program_cache_bytes,
        program_cache_min_age_ms,
        spare_workers,
    })
}

fn bad_memory(v: &str) -> String {
    format!("`max_memory` must be bytes from 1M to 64G (a number, or a string with K, M or G), got {v}")
}

/// Read the configuration file named by `LEASH_CGI_CONFIG` (given here as `path`).
pub fn load_config(path: Option<&OsStr>) -> Result<Config, String> {
    let Some(path) = path.filter(|p| !p.is_empty()) else {
        return Err(format!("{CONFIG_ENV} is not set"));
    };
    let p = Path::new(path);
    let bytes = crate::fileio::read_bounded(p, CGI_MAX_CONFIG_BYTES, false)
        .map_err(|e| format!("cannot read {}: {}", p.display(), crate::fileio::io_reason(&e)))?;
    if bytes.len() > CGI_MAX_CONFIG_BYTES {
        return Err(format!("{} is over {CGI_MAX_CONFIG_BYTES} bytes", p.display()));
    }
    let text = String::from_utf8(bytes).map_err(|_| format!("{} is not valid UTF-8", p.display()))?;
    parse_config(&text).map_err(|m| format!("{}: {m}", p.display()))
}

/// Messages of the TOML parser span lines; a log line must not.
pub fn one_line(s: &str) -> String {
    s.split('\n').map(str::trim_end).filter(|l| !l.trim().is_empty()).collect::<Vec<_>>().join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gateway::tests::tmpdir;

    #[test]
    fn scoped_allow_entries() {
        let d = tmpdir("scoped");
        std::fs::create_dir_all(d.join("data/uploads")).unwrap();
        std::fs::create_dir_all(d.join("templates")).unwrap();
        std::os::unix::fs::symlink("/etc", d.join("data/out")).unwrap();
        let c = parse_config(&format!(
            "root = \"{}\"\n[[dir]]\npath = \"data\"\nallow = [\"files=data/uploads\", \"read=templates\", \
             \"db=data/app.db\", \"network=api.example.com:443\"]\n",
            d.display()
        ))
        .unwrap();
        let flags = c.dirs[0].allow.as_ref().unwrap().flags();
        assert_eq!(
            flags,
            vec![
                format!("--allow-read={}/templates", d.display()),
                format!("--allow-files={}/data/uploads", d.display()),
                "--allow-network=api.example.com:443".to_string(),
                format!("--allow-db={}/data/app.db", d.display()),
            ]
        );
        for (bad, want) in [
            ("files=../x", "outside root"),
            ("files=data/out", "outside root"),
            ("files=nope/x", "No such file"),
            ("network=a..b", "not a host name"),
            ("files=", "empty scope item"),
        ] {
            let text = format!("root = \"{}\"\nallow = [\"{bad}\"]\n", d.display());
            let e = parse_config(&text).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
    }

    #[test]
    fn config_defaults_and_keys() {
        let d = tmpdir("cfg");
        let c = parse_config(&format!("root = \"{}\"\n", d.display())).unwrap();
        assert_eq!(c.root, *d);
        assert_eq!(c.max_steps, DEFAULT_MAX_STEPS);
        assert_eq!(c.max_work, DEFAULT_MAX_WORK);
        assert_eq!(c.max_time_ms, CGI_DEFAULT_MAX_TIME_MS);
        assert_eq!(c.max_memory, DEFAULT_MAX_MEMORY);
        assert_eq!(c.allow, Allow::default());
        assert_eq!((c.max_workers, c.queue, c.worker_exec), (FCGI_DEFAULT_MAX_WORKERS, FCGI_DEFAULT_QUEUE, false));
        assert_eq!(
            (c.program_cache, c.program_cache_bytes, c.program_cache_min_age_ms),
            (FCGI_DEFAULT_PROGRAM_CACHE, FCGI_DEFAULT_PROGRAM_CACHE_BYTES, FCGI_DEFAULT_PROGRAM_CACHE_MIN_AGE_MS)
        );
        assert_eq!(c.spare_workers, FCGI_DEFAULT_SPARE_WORKERS);
        let c = parse_config(&format!(
            "root = \"{}\"\nmax_memory = \"64M\"\nallow = [\"files\"]\nenv_pass = [\"TZ\"]\n\
             [[dir]]\npath = \"a/b\"\nallow = [\"network\", \"listen\"]\n",
            d.display()
        ))
        .unwrap();
        assert_eq!(c.max_memory, 64 << 20);
        assert!(c.allow.caps.has(Cap::Files) && !c.allow.caps.has(Cap::Network));
        assert_eq!(c.dirs.len(), 1);
        let a = c.dirs[0].allow.clone().unwrap();
        assert!(a.caps.has(Cap::Listen) && a.caps.has(Cap::Network) && !a.caps.has(Cap::Files));
        for (bad, want) in [
            ("max_steps = 0", "max_steps"),
            ("max_work = 0", "max_work"),
            ("max_workers = 0", "max_workers"),
            ("queue = -1", "queue"),
            ("worker_start = \"vfork\"", "worker_start"),
            ("program_cache = 4097", "program_cache"),
            ("program_cache = -1", "program_cache"),
            ("program_cache_bytes = 1073741825", "program_cache_bytes"),
            ("program_cache_min_age_ms = 3600001", "program_cache_min_age_ms"),
            ("spare_workers = 257", "spare_workers"),
            ("spare_workers = -1", "spare_workers"),
            ("max_work = 10000000000001", "max_work"),
            ("max_stepz = 1", "unknown key `max_stepz`"),
            ("allow = [\"shell\"]", "unknown capability"),
            ("allow = [\"listen\"]", "needs \"network\""),
            ("env_pass = [\"A=B\"]", "not a variable name"),
            ("max_memory = \"1K\"", "max_memory"),
            ("[[dir]]\npath = \"../x\"\nallow = []", "without `..`"),
            ("[[dir]]\npath = \"/x\"\nallow = []", "relative"),
            ("[[dir]]\npath = \"x\"", "`allow` or `limits` is required"),
        ] {
            let text = format!("root = \"{}\"\n{bad}\n", d.display());
            let e = parse_config(&text).unwrap_err();
            assert!(e.contains(want), "{bad}: {e}");
        }
        assert!(parse_config("max_steps = 5").unwrap_err().contains("`root` is required"));
        assert!(parse_config("root = \"relative\"").unwrap_err().contains("absolute"));
        assert!(parse_config("root = \"/no/such/dir/x\"").is_err());
        assert!(!one_line(&parse_config("root = [").unwrap_err()).contains('\n'));
        // Values quoted in a message keep it one line (the gateway fuzz target, 2026-12-02).
        for bad in
            ["allow = [\"liste\\nroo\"]", "env_pass = [\"A\\r\\nB\"]", "[[dir]]\npath = \"../a\\n\\u007f\"\nallow = []"]
        {
            let e = parse_config(&format!("root = \"{}\"\n{bad}\n", d.display())).unwrap_err();
            assert!(!e.chars().any(char::is_control), "{bad}: {e:?}");
            assert!(e.contains("\\n"), "{bad}: {e:?}");
        }
    }
}
