//! The gateway (`leash-cgi`): its configuration parser, then the request handling on a
//! parsed configuration: where the requested script is (inside a fixed document root
//! with symlinks that point in and out), its grants and arguments, the worker's
//! environment, CONTENT_LENGTH, the worker's response header and its stderr report.
#![no_main]
use std::ffi::OsString;
use std::os::unix::ffi::OsStringExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use leash::gateway::{self, Script};
use libfuzzer_sys::fuzz_target;

/// The input: six fields split at NUL bytes: the configuration (TOML; `@ROOT@` stands for
/// the fuzz document root), the requested path, CONTENT_LENGTH, the environment (lines
/// `NAME=value`), the worker's stdout, the worker's stderr.
struct Request {
    config: String,
    requested: Vec<u8>,
    content_length: Vec<u8>,
    vars: Vec<(Vec<u8>, Vec<u8>)>,
    response: Vec<u8>,
    stderr: Vec<u8>,
}

impl Request {
    fn from(data: &[u8]) -> Request {
        let mut f = data.splitn(6, |&c| c == 0).map(<[u8]>::to_vec);
        let mut next = || f.next().unwrap_or_default();
        let config = String::from_utf8_lossy(&next()).into_owned();
        let requested = next();
        let content_length = next();
        let vars = next()
            .split(|&c| c == b'\n')
            .filter_map(|l| {
                let i = l.iter().position(|&c| c == b'=')?;
                Some((l[..i].to_vec(), l[i + 1..].to_vec()))
            })
            .collect();
        Request { config, requested, content_length, vars, response: next(), stderr: next() }
    }
}

/// The document root: a few scripts, a non-script, symlinks inside and out.
fn root() -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let base = std::env::temp_dir().join(format!("leash-fuzz-gateway-{}", std::process::id()));
        let www = base.join("www");
        let _ = std::fs::create_dir_all(www.join("sub/deeper"));
        let _ = std::fs::create_dir_all(base.join("outside"));
        let files =
            [("www/a.lsh", "print(1)\n"), ("www/sub/b.lsh", ""), ("www/notes.txt", "secret"), ("outside/o.lsh", "")];
        for (f, t) in files {
            let _ = std::fs::write(base.join(f), t);
        }
        let _ = std::os::unix::fs::symlink("notes.txt", www.join("x.lsh"));
        let _ = std::os::unix::fs::symlink("../outside/o.lsh", www.join("out.lsh"));
        let _ = std::os::unix::fs::symlink("../outside", www.join("outdir"));
        let _ = std::os::unix::fs::symlink("a.lsh", www.join("sub/up.lsh"));
        std::fs::canonicalize(&www).expect("the fuzz root")
    })
}

fuzz_target!(|data: &[u8]| {
    let r = Request::from(data);
    let root = root();
    let text = r.config.replace("@ROOT@", &root.to_string_lossy());
    let cfg = match gateway::parse_config(&text) {
        Ok(c) => c,
        Err(m) => {
            assert!(!m.contains('\n'), "a configuration error spans lines: {m:?}");
            // Request handling with a fixed configuration instead.
            gateway::parse_config(&format!("root = \"{}\"\n", root.display())).expect("the fixed configuration")
        }
    };
    assert!(cfg.root.is_absolute());

    let requested = PathBuf::from(OsString::from_vec(r.requested.clone()));
    let requested = if requested.is_absolute() { requested } else { cfg.root.join(requested) };
    if let Script::Found(p) = gateway::resolve_script(&cfg.root, &requested) {
        assert!(p.starts_with(&cfg.root), "found outside the root: {p:?}");
        assert!(p.extension().is_some_and(|e| e == "lsh"), "found a non-.lsh file: {p:?}");
        assert!(p.is_file(), "found a non-file: {p:?}");
        let canon = std::fs::canonicalize(&p).expect("canonical");
        assert_eq!(canon, p);
    }
    let script = cfg.root.join("a.lsh");
    let (allow, _) = gateway::allow_for(&cfg, &script);
    let _ = gateway::worker_args(&cfg, allow, &script);
    let vars: Vec<(OsString, OsString)> =
        r.vars.iter().map(|(k, v)| (OsString::from_vec(k.clone()), OsString::from_vec(v.clone()))).collect();
    let env = gateway::worker_env(&vars, &cfg.env_pass, &script);
    for (k, _) in &env {
        assert!(!k.is_empty());
    }

    let cl = OsString::from_vec(r.content_length);
    if let Ok(n) = gateway::request_length(Some(&cl)) {
        assert!(n < 1_000_000_000_000_000);
    }
    match gateway::response_status(&r.response) {
        Ok(s) => {
            assert!((100..=599).contains(&s), "status {s}");
            let _ = gateway::reason(s);
            let g = gateway::generic_response(s);
            assert_eq!(gateway::response_status(&g), Ok(s), "the generic response reads back");
        }
        Err(m) => assert!(!m.contains('\n') || m.contains('"'), "message {m:?}"),
    }
    let _ = gateway::read_report(&r.stderr);
    let line = gateway::one_line(&String::from_utf8_lossy(&r.stderr));
    assert!(!line.contains('\n'));
});
