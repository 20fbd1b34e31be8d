//! The CGI gateway's policy (`leash-cgi`, src/bin/leash-cgi.rs, and the FastCGI server):
//! what a request may run and what reaches the worker that runs it. The binary does the
//! process work (spawning, limits, the deadline); everything here is pure enough to
//! unit-test. Its parts:
//!
//! - `gateway/config.rs`: the operator configuration (`LEASH_CGI_CONFIG`, a TOML file),
//!   read and checked once;
//! - this file: per request, where a script may be, the capabilities and limits it runs
//!   under, and the worker's environment and arguments;
//! - `gateway/response.rs`: what comes back from the worker (its CGI response, its
//!   report and stderr) and what the gateway logs and answers.
//!
//! Everything public of the parts is re-exported here (`gateway::parse_config`,
//! `gateway::response_status`, ...).

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::limits::*;

mod config;
mod response;

pub use config::{
    load_config, one_line, parse_config, Allow, Config, DirRule, CONFIG_ENV, FCGI_DEFAULT_MAX_WORKERS,
    FCGI_DEFAULT_PROGRAM_CACHE, FCGI_DEFAULT_PROGRAM_CACHE_BYTES, FCGI_DEFAULT_PROGRAM_CACHE_MIN_AGE_MS,
    FCGI_DEFAULT_QUEUE, FCGI_DEFAULT_SPARE_WORKERS, FCGI_MAX_MAX_WORKERS, FCGI_MAX_PROGRAM_CACHE,
    FCGI_MAX_PROGRAM_CACHE_BYTES, FCGI_MAX_PROGRAM_CACHE_MIN_AGE_MS, FCGI_MAX_QUEUE, FCGI_MAX_SPARE_WORKERS,
};
pub use response::{
    generic_response, is_control, read_report, read_stderr, reason, response_status, signal_name, worker_stderr_lines,
    LogEntry, Report, Stderr,
};

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
                Err(e) => Script::Forbidden(crate::fileio::io_reason(&e)),
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
        Err(e) => Script::Forbidden(crate::fileio::io_reason(&e)),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::caps::Cap;

    /// A fresh directory, removed when the guard is dropped (`config.rs`'s tests use it too).
    pub(super) struct TmpDir(PathBuf);

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

    pub(super) fn tmpdir(tag: &str) -> TmpDir {
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
    fn request_lengths() {
        assert_eq!(request_length(None), Ok(0));
        assert_eq!(request_length(Some(OsStr::new("12"))), Ok(12));
        assert!(request_length(Some(OsStr::new("-1"))).is_err());
        assert!(request_length(Some(OsStr::new("1e3"))).is_err());
    }
}
