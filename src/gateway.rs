//! The CGI gateway's policy (`leash-cgi`, src/bin/leash-cgi.rs): its operator
//! configuration, where a script may be, what reaches the worker (argv, environment),
//! and how a worker's CGI response and report are read. The binary does the process
//! work (spawning, limits, the deadline); everything here is pure enough to unit-test.
//!
//! The configuration is a TOML file (the `toml` crate parses it) whose path is in
//! `LEASH_CGI_CONFIG`:
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

use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
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

/// The run-time limits a script runs under: `[limits]`, then the `[dir.limits]` of the
/// most specific `[[dir]]` that holds it. Only moved limits are listed.
pub fn limits_for(cfg: &Config, script: &Path) -> Vec<(L, u64)> {
    let mut out = cfg.limits.clone();
    if let Some(rule) = rule_for(cfg, script) {
        for &(l, v) in &rule.limits {
            out.retain(|(k, _)| *k != l);
            out.push((l, v));
        }
    }
    out
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
                .map_err(|e| format!("`{what}`: \"{entry}\": {}", crate::source::io_reason(&e)))?
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
        .map_err(|e| format!("`root` {}: {}", root.display(), crate::source::io_reason(&e)))?;
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
    let bytes = crate::source::read_bounded(p, CGI_MAX_CONFIG_BYTES, false)
        .map_err(|e| format!("cannot read {}: {}", p.display(), crate::source::io_reason(&e)))?;
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

// ---------------------------------------------------------------------------
// Where a script may be
// ---------------------------------------------------------------------------

/// What the requested script path turned out to be.
#[derive(Debug, PartialEq)]
pub enum Script {
    /// A regular `.lsh` file inside the root: its canonical path.
    Found(PathBuf),
    /// 404: nothing there (and where it would be is inside the root).
    NotFound(String),
    /// 403: outside the root (symlinks followed), not a `.lsh` file (neither the name asked
    /// for nor the file it resolves to may end otherwise), or unreadable.
    Forbidden(String),
}

/// Where `p` would be if it existed: the canonical path of its deepest existing ancestor
/// with the rest appended (`..` in the rest stays unresolved, so it counts as outside).
fn would_be(p: &Path) -> Option<PathBuf> {
    let mut rest: Vec<&OsStr> = Vec::new();
    let mut cur = p;
    loop {
        if let Ok(c) = std::fs::canonicalize(cur) {
            let mut out = c;
            for part in rest.iter().rev() {
                if *part == ".." {
                    return None;
                }
                out.push(part);
            }
            return Some(out);
        }
        rest.push(cur.file_name().unwrap_or(OsStr::new("..")));
        cur = cur.parent()?;
    }
}

/// Decide what a request for `requested` (PATH_TRANSLATED) runs. `root` is canonical.
pub fn resolve_script(root: &Path, requested: &Path) -> Script {
    if !requested.is_absolute() {
        return Script::NotFound(format!("script path is not absolute: {}", requested.display()));
    }
    if requested.extension() != Some(OsStr::new("lsh")) {
        return Script::Forbidden("not a .lsh script".into());
    }
    match std::fs::canonicalize(requested) {
        Ok(c) => {
            if !c.starts_with(root) {
                return Script::Forbidden(format!("resolves outside root, to {}", c.display()));
            }
            // `x.lsh -> notes.txt`: what runs is the file the name resolves to.
            if c.extension() != Some(OsStr::new("lsh")) {
                return Script::Forbidden(format!("not a .lsh script: resolves to {}", c.display()));
            }
            match std::fs::metadata(&c) {
                Ok(m) if m.is_file() => Script::Found(c),
                Ok(_) => Script::Forbidden("not a regular file".into()),
                Err(e) => Script::Forbidden(crate::source::io_reason(&e)),
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound || e.raw_os_error() == Some(20) => {
            // ENOTDIR: a path through a file (/x.lsh/more). Say 404 only when the place
            // it names is inside the root, so the answer tells nothing about the outside.
            match would_be(requested) {
                Some(w) if w.starts_with(root) => Script::NotFound("no such script".into()),
                _ => Script::Forbidden("resolves outside root".into()),
            }
        }
        Err(e) => Script::Forbidden(crate::source::io_reason(&e)),
    }
}

/// The capabilities for a script (canonical path): those of the most specific `[[dir]]`
/// whose directory (canonicalized now) holds it, else the default `allow`.
pub fn allow_for(cfg: &Config, script: &Path) -> (Allow, Option<PathBuf>) {
    match rule_for(cfg, script) {
        Some(rule) => (rule.allow.clone().unwrap_or_else(|| cfg.allow.clone()), Some(rule.path.clone())),
        None => (cfg.allow.clone(), None),
    }
}

/// The most specific `[[dir]]` whose directory (canonicalized now) holds the script.
fn rule_for<'c>(cfg: &'c Config, script: &Path) -> Option<&'c DirRule> {
    let mut best: Option<(usize, &DirRule)> = None;
    for rule in &cfg.dirs {
        let Ok(dir) = std::fs::canonicalize(cfg.root.join(&rule.path)) else { continue };
        if !dir.starts_with(&cfg.root) || !script.starts_with(&dir) {
            continue;
        }
        let depth = dir.components().count();
        if best.is_none_or(|(d, _)| depth > d) {
            best = Some((depth, rule));
        }
    }
    best.map(|(_, rule)| rule)
}

// ---------------------------------------------------------------------------
// What reaches the worker
// ---------------------------------------------------------------------------

/// The meta-variables of CGI/1.1 (RFC 3875, section 4.1) and the few that servers
/// commonly add (REQUEST_URI, REQUEST_SCHEME, HTTPS, REMOTE_PORT, SERVER_ADDR), passed
/// through when set. `HTTP_*` request headers pass too (but not `HTTP_PROXY`).
pub const CGI_VARS: &[&str] = &[
    "AUTH_TYPE",
    "CONTENT_LENGTH",
    "CONTENT_TYPE",
    "GATEWAY_INTERFACE",
    "PATH_INFO",
    "PATH_TRANSLATED",
    "QUERY_STRING",
    "REMOTE_ADDR",
    "REMOTE_HOST",
    "REMOTE_IDENT",
    "REMOTE_USER",
    "REQUEST_METHOD",
    "SCRIPT_NAME",
    "SERVER_NAME",
    "SERVER_PORT",
    "SERVER_PROTOCOL",
    "SERVER_SOFTWARE",
    "REQUEST_URI",
    "REQUEST_SCHEME",
    "HTTPS",
    "REMOTE_PORT",
    "SERVER_ADDR",
];

fn is_header_var(name: &[u8]) -> bool {
    name.len() > 5
        && name.starts_with(b"HTTP_")
        && name != b"HTTP_PROXY"
        && name.iter().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == b'_')
}

/// The worker's whole environment, from the gateway's: the CGI variables and `HTTP_*`
/// headers, then the `env_pass` names. The script is presented as the CGI script itself:
/// SCRIPT_NAME is its URL path (the gateway's PATH_INFO, when the server gave one),
/// SCRIPT_FILENAME its canonical file, and PATH_INFO / PATH_TRANSLATED are removed (the
/// gateway does not support extra path information after a script).
pub fn worker_env(vars: &[(OsString, OsString)], env_pass: &[String], script: &Path) -> Vec<(OsString, OsString)> {
    let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let mut out: Vec<(OsString, OsString)> = Vec::new();
    let set = |k: &str, v: OsString, out: &mut Vec<(OsString, OsString)>| {
        out.retain(|(n, _)| n != k);
        out.push((k.into(), v));
    };
    for (k, v) in vars {
        let name = k.as_bytes();
        let keep = is_header_var(name) || CGI_VARS.iter().any(|c| c.as_bytes() == name);
        if keep {
            set(&k.to_string_lossy(), v.clone(), &mut out);
        }
    }
    for n in env_pass {
        if let Some(v) = get(n) {
            set(n, v, &mut out);
        }
    }
    if let Some(info) = get("PATH_INFO").filter(|v| !v.is_empty()) {
        set("SCRIPT_NAME", info, &mut out);
    }
    out.retain(|(k, _)| k != "PATH_INFO" && k != "PATH_TRANSLATED");
    set("SCRIPT_FILENAME", script.as_os_str().to_owned(), &mut out);
    // Only workers started here carry the marker (SPEC 12: only the gateway starts workers).
    set(crate::cgi_guard::WORKER_MARKER, "1".into(), &mut out);
    if get("GATEWAY_INTERFACE").is_none() {
        set("GATEWAY_INTERFACE", "CGI/1.1".into(), &mut out);
    }
    out.sort();
    out
}

/// `[limits]` as `--check-config` shows it: `string=2M list=50000`, or `(defaults)`.
pub fn describe_limits(limits: &[(L, u64)]) -> String {
    if limits.is_empty() {
        return "(defaults)".into();
    }
    let parts: Vec<String> = limits
        .iter()
        .map(|&(l, n)| format!("{}={}", LIMITS[l as usize].name, crate::limits::show(n, LIMITS[l as usize].unit)))
        .collect();
    parts.join(" ")
}

/// RLIMIT_NOFILE of a worker: `CGI_WORKER_NOFILE` holds the default readers, sockets and
/// databases with room to spare; raised ones add their descriptors (a database can hold
/// three: the file, its journal or WAL, and the shared-memory index).
pub fn worker_nofile(limits: &[(L, u64)]) -> u64 {
    let extra = |l: L, per: u64| {
        let n = limits.iter().rev().find(|(k, _)| *k == l).map_or(0, |&(_, n)| n);
        n.saturating_sub(LIMITS[l as usize].default).saturating_mul(per)
    };
    CGI_WORKER_NOFILE + extra(L::Readers, 1) + extra(L::SocketsOpen, 1) + extra(L::Databases, 3)
}

/// The worker's arguments (after the interpreter's path).
pub fn worker_args(cfg: &Config, allow: Allow, script: &Path) -> Vec<OsString> {
    let secs = cfg.max_time_ms as f64 / 1000.0;
    let mut v: Vec<OsString> = vec![
        "--cgi".into(),
        "--error-format".into(),
        "json".into(),
        "--stats".into(),
        "--max-steps".into(),
        cfg.max_steps.to_string().into(),
        "--max-work".into(),
        cfg.max_work.to_string().into(),
        "--max-time".into(),
        format!("{secs}").into(),
        "--max-memory".into(),
        cfg.max_memory.to_string().into(),
    ];
    v.extend(allow.flags().into_iter().map(OsString::from));
    for (l, n) in limits_for(cfg, script) {
        v.push("--limit".into());
        v.push(format!("{}={n}", LIMITS[l as usize].name).into());
    }
    // Includes may come from anywhere beneath the root (SPEC 5), not only beside the script.
    v.push("--include-path".into());
    v.push(cfg.root.as_os_str().to_owned());
    v.push("--".into());
    v.push(script.as_os_str().to_owned());
    v
}

/// CONTENT_LENGTH of the request: 0 when unset or empty; an error when it is not a
/// number of bytes.
pub fn request_length(v: Option<&OsStr>) -> Result<u64, String> {
    let Some(v) = v.filter(|v| !v.is_empty()) else { return Ok(0) };
    let b = v.as_bytes();
    if b.len() > 15 || !b.iter().all(u8::is_ascii_digit) {
        return Err(format!("CONTENT_LENGTH is not a number of bytes: {:?}", v.to_string_lossy()));
    }
    Ok(v.to_string_lossy().parse().unwrap_or(0))
}

// ---------------------------------------------------------------------------
// What comes back
// ---------------------------------------------------------------------------

/// The status a worker's CGI response gives the client, or why it is malformed: header
/// lines (`Name: value`, LF or CRLF) up to a blank line, at least one of them, within
/// 64 KiB. `Status: NNN ...` sets the status; a `Location` without it means 302.
pub fn response_status(out: &[u8]) -> Result<u16, String> {
    let mut status = None;
    let mut location = false;
    let mut fields = 0;
    let mut pos = 0;
    loop {
        if pos >= CGI_MAX_HEADER_BYTES {
            return Err(format!("response header section over {CGI_MAX_HEADER_BYTES} bytes"));
        }
        let Some(nl) = out[pos..].iter().position(|&c| c == b'\n') else {
            return Err(if out.is_empty() {
                "the script wrote nothing (no CGI header)".into()
            } else {
                "response headers do not end with a blank line".into()
            });
        };
        let mut line = &out[pos..pos + nl];
        pos += nl + 1;
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            return Err(format!("malformed header line: {:?}", String::from_utf8_lossy(&line[..line.len().min(80)])));
        };
        let name = &line[..colon];
        let token = |c: &u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.iter().all(token) {
            return Err(format!("malformed header name: {:?}", String::from_utf8_lossy(&name[..name.len().min(80)])));
        }
        if let Some(&c) = line[colon + 1..].iter().find(|&&c| is_control(c)) {
            return Err(format!(
                "the value of header {} holds a control character ({c:#04x})",
                String::from_utf8_lossy(&name[..name.len().min(80)])
            ));
        }
        let value = String::from_utf8_lossy(&line[colon + 1..]).trim().to_string();
        fields += 1;
        if name.eq_ignore_ascii_case(b"status") {
            let code = value.get(..3).and_then(|c| c.parse::<u16>().ok()).filter(|c| (100..=599).contains(c));
            let rest_ok = value.len() == 3 || value.as_bytes().get(3) == Some(&b' ');
            match code {
                Some(c) if rest_ok => status = Some(c),
                _ => return Err(format!("malformed Status header: {value:?}")),
            }
        } else if name.eq_ignore_ascii_case(b"location") {
            location = true;
        }
    }
    if fields == 0 {
        return Err("the response has no header lines".into());
    }
    Ok(status.unwrap_or(if location { 302 } else { 200 }))
}

/// A control character that a header value must not hold: all of them but tab (RFC 9110,
/// section 5.5: a field value is visible characters, spaces, tabs and obs-text).
pub fn is_control(c: u8) -> bool {
    (c < 0x20 && c != b'\t') || c == 0x7f
}

/// What the worker's `--stats` line and last diagnostic (both on stderr, JSON) say.
#[derive(Debug, Default, PartialEq)]
pub struct Report {
    pub steps: Option<u64>,
    /// `(class, kind)` of the diagnostic that ended the run (`("limit", "time")`).
    pub diag: Option<(String, String)>,
}

fn json_str_field<'a>(line: &'a str, field: &str) -> Option<&'a str> {
    let key = format!("\"{field}\":\"");
    let start = line.find(&key)? + key.len();
    let end = line[start..].find('"')?;
    Some(&line[start..start + end])
}

/// Read the report from the end of the worker's stderr. Leash writes, at exit, its
/// diagnostic (if the run failed) and then the stats line, so only the last two lines
/// count (a script's own `eprint` output comes earlier).
pub fn read_report(stderr_tail: &[u8]) -> Report {
    let text = String::from_utf8_lossy(stderr_tail);
    let mut lines = text.lines().rev().filter(|l| !l.trim().is_empty());
    let mut r = Report::default();
    let Some(last) = lines.next() else { return r };
    let Some(rest) = last.strip_prefix("{\"stats\":{\"steps\":") else { return r };
    r.steps = rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok());
    if let Some(prev) = lines.next() {
        if prev.starts_with("{\"error\":\"") {
            if let (Some(class), Some(kind)) = (json_str_field(prev, "error"), json_str_field(prev, "kind")) {
                r.diag = Some((class.to_string(), kind.to_string()));
            }
        }
    }
    r
}

/// The reason phrase for the statuses the gateway itself sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Content Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// What the summary log line of a request says (`leash-cgi` and the FastCGI server):
/// one line per request, its notes joined with `; `.
pub struct LogEntry {
    pub started: std::time::Instant,
    pub script: String,
    pub status: u16,
    pub steps: Option<u64>,
    pub note: Option<String>,
    /// FastCGI: what the program cache did (`hit`, `new`, `none`); not in CGI mode.
    pub cache: Option<&'static str>,
    /// FastCGI: which worker served (`spare`: one forked ahead; `forked`: forked for
    /// this request); not in CGI mode.
    pub worker: Option<&'static str>,
}

impl LogEntry {
    /// A request that started at `started` (a 500 until it says otherwise).
    pub fn new(started: std::time::Instant) -> Self {
        LogEntry { started, script: "-".into(), status: 500, steps: None, note: None, cache: None, worker: None }
    }

    /// Answer with a generic response for `status`; `why` goes to the log only.
    pub fn fail(&mut self, status: u16, why: impl Into<String>) -> Vec<u8> {
        self.status = status;
        self.add_note(why.into());
        generic_response(status)
    }

    pub fn add_note(&mut self, n: String) {
        self.note = Some(match self.note.take() {
            Some(old) => format!("{old}; {n}"),
            None => n,
        });
    }

    pub fn line(&self) -> String {
        let time = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
        let mut s = format!(
            "leash-cgi: time={} script={:?} status={} duration_ms={} steps={}",
            time.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
            self.script,
            self.status,
            self.started.elapsed().as_millis(),
            self.steps.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
        );
        if let Some(c) = self.cache {
            s.push_str(&format!(" cache={c}"));
        }
        if let Some(w) = self.worker {
            s.push_str(&format!(" worker={w}"));
        }
        if let Some(n) = &self.note {
            s.push_str(&format!(" note={n:?}"));
        }
        s
    }
}

/// A complete generic CGI response for `status` (nothing about the cause).
pub fn generic_response(status: u16) -> Vec<u8> {
    let r = reason(status);
    format!("Status: {status} {r}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{r}\n").into_bytes()
}

// ---------------------------------------------------------------------------
// A worker's stderr and death, as the CGI and FastCGI front ends log them
// ---------------------------------------------------------------------------

/// What the worker wrote to stderr: the start (copied to the log) and the end (its report).
#[derive(Default, Debug)]
pub struct Stderr {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub total: u64,
}

impl Stderr {
    /// Take the next bytes the worker wrote: the start kept up to CGI_MAX_LOG_BYTES, the
    /// end up to CGI_REPORT_TAIL_BYTES (to twice that between trims).
    pub fn take(&mut self, c: &[u8]) {
        let n = c.len();
        self.total += n as u64;
        let room = CGI_MAX_LOG_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&c[..room.min(n)]);
        self.tail.extend_from_slice(c);
        if self.tail.len() > 2 * CGI_REPORT_TAIL_BYTES {
            self.tail.drain(..self.tail.len() - CGI_REPORT_TAIL_BYTES);
        }
    }
}

pub fn read_stderr(mut r: impl Read) -> Stderr {
    let mut s = Stderr::default();
    let mut chunk = [0u8; 8192];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        s.take(&chunk[..n]);
    }
    s
}

/// A signal's name for the log.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        24 => "SIGXCPU (the CPU limit)",
        25 => "SIGXFSZ (max_file_size)",
        _ => "signal",
    }
}

/// The log lines for a worker's stderr: a line at a time with control characters
/// escaped, leaving out its final stats line (its figures are in the summary line).
pub fn worker_stderr_lines(err: &Stderr, stats_line: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(&err.head);
    let mut lines: Vec<&str> = text.lines().collect();
    if stats_line && err.total as usize == err.head.len() {
        if let Some(i) = lines.iter().rposition(|l| !l.trim().is_empty()) {
            lines.remove(i);
        }
    }
    let mut out: Vec<String> = lines
        .into_iter()
        .map(|l| {
            let clean: String =
                l.chars().map(|c| if c.is_control() && c != '\t' { char::REPLACEMENT_CHARACTER } else { c }).collect();
            format!("leash-cgi: worker: {clean}")
        })
        .collect();
    if err.total > err.head.len() as u64 {
        out.push(format!("leash-cgi: worker: ({} more bytes of stderr not logged)", err.total - err.head.len() as u64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh directory, removed when the guard is dropped.
    struct TmpDir(PathBuf);

    impl Drop for TmpDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    impl std::ops::Deref for TmpDir {
        type Target = PathBuf;
        fn deref(&self) -> &PathBuf {
            &self.0
        }
    }

    fn tmpdir(tag: &str) -> TmpDir {
        let d = std::env::temp_dir().join(format!("leash-gw-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(std::fs::canonicalize(&d).unwrap())
    }

    /// Every consumer of the capability table (`crate::caps`) agrees with it: the CLI's
    /// options, parsing and `--help`; the gateway's `allow` and the flags it passes on;
    /// `leash check` (text and `--json` read `Caps::names` and `Cap::name`); the run-time
    /// refusal; the builtin tables.
    #[test]
    fn capability_table_consumers() {
        use crate::caps::TABLE;
        let d = tmpdir("captable");
        let help = crate::cli::help_text();
        for row in &TABLE {
            let c = row.cap;
            // CLI: the option, its help line, bare and scoped parsing.
            let opt = crate::cli::OPTIONS.iter().find(|o| o.name == row.flag).expect(row.flag);
            assert!(opt.value.is_none() && opt.help == row.help, "{}", row.flag);
            // A scoped flag's help begins with its `[=LIST]`, which `--help` writes after it.
            assert_eq!(row.help.starts_with("[="), row.scope != crate::caps::ScopeKind::None, "{}", row.flag);
            let (list, rest) =
                row.help.split_once(' ').filter(|_| row.help.starts_with("[=")).unwrap_or(("", row.help));
            assert!(help.contains(&format!("  {}{list} ", row.flag)) && help.contains(rest), "{}", row.flag);
            let mut argv: Vec<OsString> = row.needs.iter().map(|n| OsString::from(n.flag())).collect();
            argv.extend([row.flag.into(), "x.lsh".into()]);
            let (cfg, _) = crate::cli::parse(&argv).unwrap();
            assert!(cfg.allow.has(c) && cfg.scopes.cap(c).all, "{}", row.flag);
            let scoped = crate::cli::parse(&[format!("{}=a", row.flag).into(), "x.lsh".into()]);
            if row.scope == crate::caps::ScopeKind::None {
                assert!(scoped.is_err());
            } else if row.needs.is_empty() {
                assert_eq!(scoped.unwrap().0.scopes.cap(c).items, ["a"], "{}", row.flag);
            }
            for n in row.needs {
                let e = crate::cli::parse(&[row.flag.into(), "x.lsh".into()]).unwrap_err();
                assert_eq!(e, format!("{} needs {}", row.flag, n.flag()));
            }
            // The gateway: the name grants the capability and passes the flag on.
            let mut names: Vec<String> = row.needs.iter().map(|n| format!("\"{}\"", n.name())).collect();
            names.push(format!("\"{}\"", row.name));
            let text = format!("root = \"{}\"\nallow = [{}]\n", d.display(), names.join(", "));
            let a = parse_config(&text).unwrap().allow;
            assert!(a.caps.has(c) && a.flags().contains(&row.flag.to_string()), "{}", row.name);
            for n in row.needs {
                let text = format!("root = \"{}\"\nallow = [\"{}\"]\n", d.display(), row.name);
                let e = parse_config(&text).unwrap_err();
                assert!(e.contains(&format!("\"{}\" needs \"{}\" too", row.name, n.name())), "{e}");
            }
            // A builtin gated by it: `leash check` names it, a run without it is refused
            // with the table's text.
            let b = crate::builtins::all().find(|b| b.cap == Some(c)).expect(row.name);
            let args = vec!["\"\""; b.min as usize].join(", ");
            let prog = crate::load("t.lsh", format!("x = {}({args})\n", b.name).into_bytes(), None).unwrap();
            assert!(prog.caps.has(c) && prog.caps.names().iter().all(|n| Cap::by_name(n).is_some()));
            assert_eq!(prog.sites[0].cap.name(), row.name);
            let out = crate::run(&prog, &crate::interp::RunConfig::default());
            let diag = out.diag.expect(row.name);
            assert_eq!(diag.message, format!("{} needs {}", b.name, row.wanted));
        }
        let e = parse_config(&format!("root = \"{}\"\nallow = [\"shell\"]\n", d.display())).unwrap_err();
        assert!(e.contains(&format!("(known: {}, optionally =SCOPE)", Cap::names_listed())), "{e}");
    }

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

    #[test]
    fn scripts_resolve_inside_root() {
        let d = tmpdir("paths");
        let root = d.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("a.lsh"), "").unwrap();
        std::fs::write(root.join("sub/b.lsh"), "").unwrap();
        std::fs::write(d.join("out.lsh"), "").unwrap();
        std::os::unix::fs::symlink(d.join("out.lsh"), root.join("link.lsh")).unwrap();
        std::os::unix::fs::symlink(&*d, root.join("up")).unwrap();
        std::fs::create_dir(root.join("dir.lsh")).unwrap();
        assert_eq!(resolve_script(&root, &root.join("a.lsh")), Script::Found(root.join("a.lsh")));
        assert_eq!(resolve_script(&root, &root.join("sub/../a.lsh")), Script::Found(root.join("a.lsh")));
        assert!(matches!(resolve_script(&root, &root.join("nope.lsh")), Script::NotFound(_)));
        assert!(matches!(resolve_script(&root, &root.join("a.lsh/x.lsh")), Script::NotFound(_)));
        assert!(matches!(resolve_script(&root, &root.join("link.lsh")), Script::Forbidden(_)));
        assert!(matches!(resolve_script(&root, &root.join("up/out.lsh")), Script::Forbidden(_)));
        assert!(matches!(resolve_script(&root, &root.join("up/none.lsh")), Script::Forbidden(_)));
        assert!(matches!(resolve_script(&root, &d.join("out.lsh")), Script::Forbidden(_)));
        assert!(matches!(resolve_script(&root, &d.join("none.lsh")), Script::Forbidden(_)));
        assert!(matches!(resolve_script(&root, &root.join("../none.lsh")), Script::Forbidden(_)));
        assert!(matches!(resolve_script(&root, &root.join("a.txt")), Script::Forbidden(_)));
        assert!(matches!(resolve_script(&root, &root.join("dir.lsh")), Script::Forbidden(_)));
        std::fs::write(root.join("notes.txt"), "").unwrap();
        std::os::unix::fs::symlink(root.join("notes.txt"), root.join("notes.lsh")).unwrap();
        std::os::unix::fs::symlink(root.join("a.lsh"), root.join("a.txt.lsh")).unwrap();
        assert!(
            matches!(resolve_script(&root, &root.join("notes.lsh")), Script::Forbidden(m) if m.contains("not a .lsh"))
        );
        assert_eq!(resolve_script(&root, &root.join("a.txt.lsh")), Script::Found(root.join("a.lsh")));
        assert!(matches!(resolve_script(&root, Path::new("a.lsh")), Script::NotFound(_)));
    }

    #[test]
    fn the_most_specific_dir_rule_wins() {
        let d = tmpdir("dirs");
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        let c = parse_config(&format!(
            "root = \"{}\"\nallow = [\"db\"]\n[[dir]]\npath = \"a/b\"\nallow = [\"network\"]\n\
             [[dir]]\npath = \"a\"\nallow = [\"files\"]\n[[dir]]\npath = \"missing\"\nallow = []\n",
            d.display()
        ))
        .unwrap();
        assert_eq!(allow_for(&c, &d.join("x.lsh")).0.describe(), "db");
        assert_eq!(allow_for(&c, &d.join("a/x.lsh")).0.describe(), "files");
        assert_eq!(allow_for(&c, &d.join("a/b/x.lsh")).0.describe(), "network");
        assert_eq!(allow_for(&c, &d.join("ab/x.lsh")).0.describe(), "db");
    }

    #[test]
    fn only_cgi_variables_reach_the_worker() {
        let vars: Vec<(OsString, OsString)> = [
            ("QUERY_STRING", "a=1"),
            ("HTTP_USER_AGENT", "ua"),
            ("HTTP_PROXY", "evil"),
            ("SECRET", "s"),
            ("TZ", "UTC"),
            ("PATH_INFO", "/x.lsh"),
            ("PATH_TRANSLATED", "/srv/x.lsh"),
            ("SCRIPT_NAME", "/cgi-bin/leash-cgi"),
            ("LEASH_CGI_CONFIG", "/etc/x"),
        ]
        .iter()
        .map(|(k, v)| (OsString::from(k), OsString::from(v)))
        .collect();
        let env = worker_env(&vars, &["TZ".into(), "MISSING".into()], Path::new("/srv/x.lsh"));
        let names: Vec<String> = env.iter().map(|(k, _)| k.to_string_lossy().into_owned()).collect();
        assert_eq!(
            names,
            [
                "GATEWAY_INTERFACE",
                "HTTP_USER_AGENT",
                "LEASH_CGI_WORKER",
                "QUERY_STRING",
                "SCRIPT_FILENAME",
                "SCRIPT_NAME",
                "TZ"
            ]
        );
        let get = |n: &str| env.iter().find(|(k, _)| k == n).map(|(_, v)| v.to_string_lossy().into_owned());
        assert_eq!(get("SCRIPT_NAME").as_deref(), Some("/x.lsh"));
        assert_eq!(get("SCRIPT_FILENAME").as_deref(), Some("/srv/x.lsh"));
    }

    #[test]
    fn responses_and_reports() {
        assert_eq!(response_status(b"Content-Type: text/plain\r\n\r\nhi"), Ok(200));
        assert_eq!(response_status(b"Status: 404 Not Found\nContent-Type: text/plain\n\n"), Ok(404));
        assert_eq!(response_status(b"Location: http://x/\r\n\r\n"), Ok(302));
        assert_eq!(response_status(b"Status: 201\r\nX: y\r\n\r\n"), Ok(201));
        assert!(response_status(b"").is_err());
        assert!(response_status(b"hello\n\n").is_err());
        assert!(response_status(b"\r\nbody").is_err());
        assert!(response_status(b"Content-Type: text/plain").is_err());
        assert!(response_status(b"Status: 99\n\n").is_err());
        assert!(response_status(b"Status: 2000\n\n").is_err());
        assert!(response_status(b"Bad Name: x\n\n").is_err());
        assert_eq!(response_status(b"X: a\tb\x80\r\n\r\n"), Ok(200));
        for c in (0u8..0x20).filter(|&c| c != b'\t' && c != b'\n').chain([0x7f]) {
            let head = [b"X: a".as_slice(), &[c], b"b\r\n\r\n"].concat();
            let e = response_status(&head).unwrap_err();
            assert!(e.contains("control character"), "{c:#04x}: {e}");
        }
        let r = read_report(
            b"hello\n{\"error\":\"limit\",\"kind\":\"time\",\"message\":\"x\"}\n{\"stats\":{\"steps\":42,\"x\":1}}\n",
        );
        assert_eq!(r.steps, Some(42));
        assert_eq!(r.diag, Some(("limit".into(), "time".into())));
        let r = read_report(b"{\"error\":\"runtime\",\"kind\":\"arith\"}\nplain\n{\"stats\":{\"steps\":7}}\n");
        assert_eq!(r, Report { steps: Some(7), diag: None });
        assert_eq!(read_report(b"{\"error\":\"runtime\",\"kind\":\"arith\"}\n"), Report::default());
        assert_eq!(request_length(None), Ok(0));
        assert_eq!(request_length(Some(OsStr::new("12"))), Ok(12));
        assert!(request_length(Some(OsStr::new("-1"))).is_err());
        assert!(request_length(Some(OsStr::new("1e3"))).is_err());
    }
}
