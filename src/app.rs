//! The commands: run a program, check scripts; writing diagnostics and `--stats`.

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli::{self, Command, Config, Program as Source};
use crate::diag::Diagnostic;
use crate::interp::{RunConfig, SnapshotDir, Stats};
use crate::limits::MAX_SOURCE_BYTES;

const CGI_500: &[u8] =
    b"Status: 500 Internal Server Error\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nInternal Server Error\n";

/// Write the CLI's own output (help, version, the builtin list, `check` and `test` lines)
/// to stdout, flushed at once. Never a `print!` macro: those panic when stdout fails.
fn say(text: &str) -> std::io::Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes()).and_then(|_| o.flush())
}

/// The end of a command whose own output could not be written. A reader that went away
/// (EPIPE: `leash test | head -1`) ends it quietly; any other failure (a full disk) is an
/// `io` diagnostic. Status 1 either way, as for an uncaught `print` failure; a command
/// that had already failed keeps its own status.
fn output_failed(e: &std::io::Error, status: i32, json: bool) -> i32 {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        emit_diag(&stdout_diag(e), json);
    }
    status.max(1)
}

fn stdout_diag(e: &std::io::Error) -> Diagnostic {
    Diagnostic::new(
        crate::diag::Class::Runtime,
        "io",
        format!("cannot write to stdout: {}", crate::fileio::io_reason(e)),
    )
}

fn emit_diag(d: &Diagnostic, json: bool) {
    if crate::report::take_diag(d) {
        return;
    }
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{}", d.render(json));
}

/// Whether the stats are wanted: `--stats`, or a report (which always holds them).
fn want_stats(stats: bool) -> bool {
    stats || crate::report::active()
}

fn emit_stats(s: &Stats, started: Instant) {
    let line = format!(
        "{{\"steps\":{},\"work\":{},\"max_call_depth\":{},\"peak_frame_bytes\":{},\"peak_memory_bytes\":{},\
         \"stdout_bytes\":{},\"stderr_bytes\":{},\"stdin_bytes\":{},\"file_write_bytes\":{},\
         \"file_read_bytes\":{},\"http_requests\":{},\"http_body_bytes\":{},\"net_sent_bytes\":{},\
         \"net_recv_bytes\":{},\"wall_ms\":{}}}",
        s.steps,
        s.work,
        s.max_call_depth,
        s.peak_frame_bytes,
        s.peak_memory_bytes,
        s.stdout_bytes,
        s.stderr_bytes,
        s.stdin_bytes,
        s.file_write_bytes,
        s.file_read_bytes,
        s.http_requests,
        s.http_body_bytes,
        s.net_sent_bytes,
        s.net_recv_bytes,
        crate::meter::since(started).as_millis()
    );
    if crate::report::take_stats(&line) {
        return;
    }
    // One write (stderr is unbuffered: `writeln!` would write each piece; a FastCGI
    // server polling the pipe would wake for each).
    let _ = std::io::stderr().lock().write_all(format!("{{\"stats\":{line}}}\n").as_bytes());
}

/// Install the panic hook the binaries use: a panic's message and place are kept in the
/// slot returned (for `report_internal`), never printed by the default hook.
pub fn capture_panics() -> std::sync::Arc<std::sync::Mutex<Option<String>>> {
    let panic_msg = std::sync::Arc::new(std::sync::Mutex::new(None));
    let slot = panic_msg.clone();
    std::panic::set_hook(Box::new(move |info| {
        let msg = match info.payload().downcast_ref::<&str>() {
            Some(s) => s.to_string(),
            None => info.payload().downcast_ref::<String>().cloned().unwrap_or_else(|| "panic".into()),
        };
        let at = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        if let Ok(mut g) = slot.lock() {
            *g = Some(format!("{msg}{at}"));
        }
    }));
    panic_msg
}

/// Report a panic caught by `main`.
pub fn report_internal(msg: &str, json: bool, stats: bool, started: Instant) {
    let _ = std::io::stdout().flush();
    emit_diag(&Diagnostic::internal(format!("internal error (a bug in leash): {msg}")), json);
    if want_stats(stats) {
        emit_stats(&Stats::default(), started);
    }
}

/// Read a program's text within the source budget.
// A diagnostic is the rare path here; boxing it would only move the allocation.
#[allow(clippy::result_large_err)]
fn read_program(
    src: &Source,
    deadline: Option<Instant>,
) -> Result<(String, Vec<u8>, Option<std::path::PathBuf>), Diagnostic> {
    let fail = |name: &str, e: std::io::Error| {
        let mut d = crate::diag::LoadError::new(
            crate::diag::LoadKind::Include,
            format!("cannot read script: {}", crate::fileio::io_reason(&e)),
            name,
            0,
        )
        .to_diag();
        d.line = None;
        d
    };
    match src {
        Source::File(p) => {
            let name = p.to_string_lossy().into_owned();
            // Only a regular file, opened without blocking: a FIFO, device or directory
            // is a load error at once (a FIFO would block the open forever).
            match crate::fileio::read_bounded(p, MAX_SOURCE_BYTES, true) {
                Ok(t) => Ok((name, t, Some(p.clone()))),
                Err(e) => Err(fail(&name, e)),
            }
        }
        Source::Stdin => {
            use std::io::Read;
            let read = || {
                let mut buf = Vec::new();
                std::io::stdin().lock().take(MAX_SOURCE_BYTES as u64 + 1).read_to_end(&mut buf).map(|_| buf)
            };
            // With `--max-time`, a writer that never closes stdin cannot hold the run
            // past its deadline: the read happens on a thread, waited for until then.
            let got = match deadline {
                None => read(),
                Some(d) => {
                    let (tx, rx) = std::sync::mpsc::sync_channel(1);
                    std::thread::spawn(move || {
                        let _ = tx.send(read());
                    });
                    match rx.recv_timeout(crate::meter::left(d)) {
                        Ok(r) => r,
                        Err(_) => {
                            return Err(Diagnostic::new(
                                crate::diag::Class::Limit,
                                "time",
                                "wall-clock deadline (--max-time) reached while reading the program from stdin",
                            ))
                        }
                    }
                }
            };
            match got {
                Ok(buf) => Ok(("<stdin>".into(), buf, None)),
                Err(e) => Err(fail("<stdin>", e)),
            }
        }
        Source::Inline(code) => Ok(("-e".into(), code.as_bytes().to_vec(), None)),
    }
}

/// Where includes may come from besides the entry script's directory (SPEC 5).
/// An unscoped `--allow-read` or `--allow-files` is a read grant over every path; a
/// scoped one adds its canonical paths to the include path.
fn include_area(cfg: &Config, gate: &crate::gate::Gate) -> crate::source::IncludeArea {
    crate::source::IncludeArea::of(&cfg.include_path, gate.include_dirs())
}

/// Open the granted scopes and the audit log; a failure is a usage error.
fn open_gate(cfg: &Config) -> Result<std::sync::Arc<crate::gate::Gate>, i32> {
    match crate::gate::Gate::new(&cfg.scopes) {
        Ok(g) => Ok(std::sync::Arc::new(g)),
        Err(m) => {
            emit_diag(&Diagnostic::usage(m), cfg.json_errors);
            Err(2)
        }
    }
}

/// The profile of a run, its program, and the run's `--max-time` deadline.
type ProfileOut<'a> = (&'a crate::profile::Profile, &'a crate::program::Program, Option<Instant>);

/// Write `--profile FILE` (and its `.work` and `.lines` companions), streamed and bounded
/// (`profile.rs`: stacks past the bounds in `[other]`, what the deadline left in
/// `[truncated]`); a failure is reported and does not change the exit status.
fn write_profile(path: &Path, p: Option<ProfileOut<'_>>, json: bool) {
    let r = match p {
        Some((p, prog, deadline)) => p.write(prog, path, deadline),
        None => {
            let mut names = vec![path.to_path_buf()];
            for ext in [".work", ".lines"] {
                let mut s = path.as_os_str().to_owned();
                s.push(ext);
                names.push(s.into());
            }
            names.iter().try_for_each(|n| std::fs::write(n, b""))
        }
    };
    if let Err(e) = r {
        let msg = format!("cannot write the profile {}: {}", path.display(), crate::fileio::io_reason(&e));
        emit_diag(
            &Diagnostic {
                class: crate::diag::Class::Runtime,
                kind: "io".into(),
                message: msg,
                file: None,
                line: None,
                detail: Default::default(),
            },
            json,
        );
    }
}

/// Everything after argv: returns the exit status.
pub fn main(args: Vec<OsString>, started: Instant) -> i32 {
    // Under a web server, only the gateway's workers and a page's own interpreter line run.
    if let Some(status) = crate::cgi_guard::check(&args) {
        return status;
    }
    let status = command(args, started);
    // A report always holds the stats, even of an exit that wrote none.
    if crate::report::active() && !crate::report::has_stats() {
        emit_stats(&Stats::default(), started);
    }
    status
}

fn command(args: Vec<OsString>, started: Instant) -> i32 {
    let (json, stats) = cli::prescan(&args);
    // `--report FILE` first: every later exit, a usage error included, is reported there.
    // A report that cannot be written is a usage error before anything runs.
    if let Some(path) = cli::prescan_report(&args) {
        if let Err(m) = crate::report::open(&path) {
            emit_diag(&Diagnostic::usage(m), json);
            return 2;
        }
    }
    // The internal-error path (a panic caught by `main`, exit 70) cannot be reached by any
    // input; this switch lets the test suite check that it works.
    if std::env::var_os("LEASH_TEST_INTERNAL_ERROR").is_some() {
        panic!("deliberate panic (LEASH_TEST_INTERNAL_ERROR is set)");
    }
    // The tools (SPEC 13) take their own arguments.
    if args.first().is_some_and(|a| a == "fmt") {
        return crate::tools::fmt::main(&args[1..]);
    }
    if args.first().is_some_and(|a| a == "completions") {
        return crate::tools::completions::main(&args[1..]);
    }
    let (cfg, cmd) = match cli::parse(&args) {
        Ok(x) => x,
        Err(m) => {
            emit_diag(&Diagnostic::usage(m), json);
            if want_stats(stats) {
                emit_stats(&Stats::default(), started);
            }
            return 2;
        }
    };
    if let Err(m) = report_clash(&cfg, &cmd) {
        // Said on stderr: written to the report, it would replace that very file.
        crate::report::cancel();
        emit_diag(&Diagnostic::usage(m), json);
        return 2;
    }
    match cmd {
        Command::Help => say(&cli::help_text()).map_or_else(|e| output_failed(&e, 0, json), |_| 0),
        Command::Version => {
            say(&format!("leash {}\n", env!("CARGO_PKG_VERSION"))).map_or_else(|e| output_failed(&e, 0, json), |_| 0)
        }
        Command::Builtins => {
            let mut text = String::new();
            for b in crate::builtins::all() {
                let cap = b.cap.map(|c| c.flag()).unwrap_or("-");
                text.push_str(&format!(
                    "{}\t{}\t{}\t{}\t{}\t{}\n",
                    b.name,
                    b.sig,
                    b.arity_text(),
                    cap,
                    b.cost.name(),
                    b.cost.describe()
                ));
            }
            say(&text).map_or_else(|e| output_failed(&e, 0, json), |_| 0)
        }
        Command::Limits => say(&crate::limits::limits_text()).map_or_else(|e| output_failed(&e, 0, json), |_| 0),
        Command::Check { scripts } => check(&cfg, &scripts, started),
        Command::Test { paths } => test(&cfg, &paths, started),
        Command::Run { program, args } => run(&cfg, &program, args, started),
        Command::Repl { explicit } => {
            use std::io::IsTerminal;
            if !explicit && !std::io::stdin().is_terminal() {
                emit_diag(&Diagnostic::usage("no SCRIPT given (try --help)".to_string()), json);
                if want_stats(stats) {
                    emit_stats(&Stats::default(), started);
                }
                return 2;
            }
            let gate = match open_gate(&cfg) {
                Ok(g) => g,
                Err(status) => return status,
            };
            let budget = crate::memory::Budget::start(cfg.max_memory);
            let rc = run_config(&cfg, &gate, vec![], started, budget);
            crate::tools::repl::main(&cfg, rc)
        }
    }
}

/// A `--report` that would replace a file the run reads or writes otherwise (the script,
/// a test file, the audit log, the profile) is a usage error.
fn report_clash(cfg: &Config, cmd: &Command) -> Result<(), String> {
    use std::path::PathBuf;
    if !crate::report::active() {
        return Ok(());
    }
    let mut named: Vec<(&str, PathBuf)> = Vec::new();
    match cmd {
        Command::Run { program: Source::File(p), .. } => named.push(("the script", p.clone())),
        Command::Check { scripts } => named.extend(scripts.iter().map(|p| ("a script to check", p.clone()))),
        Command::Test { paths } => named.extend(paths.iter().map(|p| ("a test file", p.clone()))),
        _ => {}
    }
    if let Some(a) = &cfg.scopes.audit {
        named.push(("the --audit log", a.clone()));
    }
    if let Some(p) = &cfg.profile {
        for ext in ["", ".work", ".lines"] {
            let mut s = p.as_os_str().to_owned();
            s.push(ext);
            named.push(("a --profile file", s.into()));
        }
    }
    match named.iter().find(|(_, p)| crate::report::is_report(p)) {
        Some((what, p)) => Err(format!("--report: \"{}\" is {what}", p.display())),
        None => Ok(()),
    }
}

fn check(cfg: &Config, scripts: &[std::path::PathBuf], started: Instant) -> i32 {
    let mut status = 0;
    let many = scripts.len() > 1;
    let gate = match open_gate(cfg) {
        Ok(g) => g,
        Err(status) => return status,
    };
    let area = include_area(cfg, &gate);
    for s in scripts {
        let src = Source::File(s.clone());
        // Each script is loaded under its own `--max-memory` budget, as a run would be.
        let budget = crate::memory::Budget::start(cfg.max_memory);
        let loaded = read_program(&src, None)
            .map_err(|d| vec![d])
            .and_then(|(name, text, path)| crate::load_within(&name, text, path.as_deref(), &area, budget));
        match loaded {
            Ok(p) if cfg.check_json => {
                if let Err(e) = say(&check_json(s, &p)) {
                    status = output_failed(&e, status, cfg.json_errors);
                    break;
                }
            }
            Ok(p) => {
                let line = if many {
                    format!("{}: capabilities: {}\n", s.display(), p.caps.describe())
                } else {
                    format!("capabilities: {}\n", p.caps.describe())
                };
                if let Err(e) = say(&line) {
                    // The reader is gone: checking the rest would only be more output lost.
                    status = output_failed(&e, status, cfg.json_errors);
                    break;
                }
            }
            Err(ds) => {
                for d in ds {
                    emit_taught(d, cfg);
                }
                status = 3;
            }
        }
    }
    if want_stats(cfg.stats) {
        emit_stats(&Stats::default(), started);
    }
    status
}

/// One `leash check --json` line: the script, its capabilities, its gated call sites.
fn check_json(script: &Path, p: &crate::program::Program) -> String {
    use crate::diag::json_string;
    let mut out = Vec::new();
    out.extend_from_slice(b"{\"script\":");
    json_string(&mut out, script.to_string_lossy().as_bytes());
    out.extend_from_slice(b",\"capabilities\":[");
    let names: Vec<String> = p.caps.names().iter().map(|c| format!("\"{c}\"")).collect();
    out.extend_from_slice(names.join(",").as_bytes());
    out.extend_from_slice(b"],\"calls\":[");
    for (i, s) in p.sites.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"file\":");
        json_string(&mut out, s.file.as_bytes());
        let cap = s.cap.name();
        out.extend_from_slice(
            format!(",\"line\":{},\"builtin\":\"{}\",\"capability\":\"{cap}\",\"target\":", s.line, s.builtin)
                .as_bytes(),
        );
        match &s.target {
            Some(t) => json_string(&mut out, t),
            None => out.extend_from_slice(b"null"),
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}\n");
    String::from_utf8_lossy(&out).into_owned()
}

fn run_config(
    cfg: &Config,
    gate: &std::sync::Arc<crate::gate::Gate>,
    args: Vec<Vec<u8>>,
    started: Instant,
    heap: crate::memory::Budget,
) -> RunConfig {
    RunConfig {
        gate: gate.clone(),
        max_steps: cfg.max_steps,
        max_work: cfg.max_work,
        deadline: cfg.max_time.map(|t| started + Duration::from_secs_f64(t)),
        max_memory: cfg.max_memory,
        limits: cfg.limits,
        seed: cfg.seed,
        caps: cfg.allow,
        args,
        cgi: cfg.cgi,
        snapshots: None,
        net: crate::builtins::netcfg::NetSettings {
            tls_ca_file: cfg.tls_ca_file.clone(),
            dns_server: cfg.dns_server.as_deref().and_then(crate::builtins::netcfg::parse_dns_server),
        },
        heap: Some(heap),
        profile: cfg.profile.is_some(),
    }
}

fn test(cfg: &Config, paths: &[std::path::PathBuf], started: Instant) -> i32 {
    let files = match crate::testrun::collect(paths) {
        Ok(f) => f,
        Err(m) => {
            emit_diag(&Diagnostic::usage(m), cfg.json_errors);
            return 2;
        }
    };
    let gate = match open_gate(cfg) {
        Ok(g) => g,
        Err(status) => return status,
    };
    // Each test file gets its own heap budget (started again by `run_file`).
    let rc = run_config(cfg, &gate, vec![], started, crate::memory::Budget::start(cfg.max_memory));
    let mut summary = crate::testrun::Summary::default();
    let area = include_area(cfg, &gate);
    for f in &files {
        let report = &mut |d: &Diagnostic| emit_taught(d.clone(), cfg);
        summary.json = cfg.test_json;
        // Failures as diagnostics too when a tool asked for them: JSON diagnostics, or a
        // report (which takes them instead of stderr, so stderr still has one copy).
        summary.failure_diags = cfg.json_errors || crate::report::active();
        crate::testrun::run_file(f, &rc, &area, cfg.filter.as_deref(), cfg.update_snapshots, &mut summary, report);
        if summary.output.is_some() {
            break; // stdout failed: the remaining tests would report to no one
        }
    }
    if summary.output.is_none() {
        let last = if cfg.test_json {
            format!("{{\"passed\":{},\"failed\":{}}}\n", summary.passed, summary.failed)
        } else {
            format!("{} passed, {} failed\n", summary.passed, summary.failed)
        };
        if let Err(e) = say(&last) {
            summary.output = Some(e);
        }
    }
    let status = match &summary.output {
        Some(e) => output_failed(e, summary.status(), cfg.json_errors),
        None => summary.status(),
    };
    if want_stats(cfg.stats) {
        emit_stats(&Stats::default(), started);
    }
    status
}

/// What a limit diagnostic tells about the limits of this command line (`teach.rs`).
fn setup(cfg: &Config) -> crate::teach::Setup {
    crate::teach::Setup {
        max_steps: cfg.max_steps,
        max_work: cfg.max_work,
        max_time: cfg.max_time,
        max_memory: cfg.max_memory,
        limits: cfg.limits,
        cgi: cfg.cgi,
    }
}

/// Write a diagnostic, a limit's with its `limit`, `value`, `option` and `help:` line.
fn emit_taught(mut d: Diagnostic, cfg: &Config) {
    crate::teach::teach(&mut d, &setup(cfg));
    emit_diag(&d, cfg.json_errors);
}

fn run(cfg: &Config, src: &Source, args: Vec<Vec<u8>>, started: Instant) -> i32 {
    let finish = |status: i32, stats: &Stats| {
        if want_stats(cfg.stats) {
            emit_stats(stats, started);
        }
        status
    };
    let gate = match open_gate(cfg) {
        Ok(g) => g,
        Err(status) => return finish(status, &Stats::default()),
    };
    // The script's heap budget begins before its text is read: the text, the loaded
    // program and the run all count against `--max-memory`.
    let mut budget = crate::memory::Budget::start(cfg.max_memory);
    // `--max-time` covers loading too (SPEC 1: the deadline of the whole run).
    let deadline = cfg.max_time.map(|t| started + Duration::from_secs_f64(t));
    let area = include_area(cfg, &gate);
    // A FastCGI worker may start from the program its warm process loaded for it
    // (`program_cache.rs`): the same load, done once; the budget counts its bytes.
    if let Source::File(p) = src {
        if let Some(pre) = crate::program_cache::take(&p.to_string_lossy(), p, &area) {
            drop(area);
            budget.base = budget.base.saturating_sub(pre.retained);
            return run_loaded(cfg, &gate, &pre.prog, Some(p.clone()), deadline, args, started, budget);
        }
    }
    let (name, text, path) = match read_program(src, deadline) {
        Ok(x) => x,
        Err(d) => {
            emit_diag(&d, cfg.json_errors);
            if let Some(p) = &cfg.profile {
                write_profile(p, None, cfg.json_errors);
            }
            return finish(if d.class == crate::diag::Class::Limit { 4 } else { 3 }, &Stats::default());
        }
    };
    let loaded = crate::meter::with_load_deadline(deadline, || {
        crate::load_within(&name, text, path.as_deref().map(Path::new), &area, budget)
    });
    drop(area);
    let prog = match loaded {
        Ok(p) => p,
        Err(ds) => {
            // The deadline passing while loading is the run's `time` limit (exit 4), not
            // a fault of the program: it is the only diagnostic then.
            if let Some(t) = ds.iter().find(|d| d.kind == "time").cloned() {
                let mut t = t;
                t.class = crate::diag::Class::Limit;
                emit_taught(t, cfg);
                if let Some(p) = &cfg.profile {
                    write_profile(p, None, cfg.json_errors);
                }
                return finish(4, &Stats::default());
            }
            for d in ds {
                emit_taught(d, cfg);
            }
            if let Some(p) = &cfg.profile {
                // A run that never started (a load error) leaves empty profile files.
                write_profile(p, None, cfg.json_errors);
            }
            return finish(3, &Stats::default());
        }
    };
    run_loaded(cfg, &gate, &prog, path, deadline, args, started, budget)
}

/// Run a loaded program (`run`'s second half).
#[allow(clippy::too_many_arguments)]
fn run_loaded(
    cfg: &Config,
    gate: &std::sync::Arc<crate::gate::Gate>,
    prog: &crate::program::Program,
    path: Option<std::path::PathBuf>,
    deadline: Option<Instant>,
    args: Vec<Vec<u8>>,
    started: Instant,
    budget: crate::memory::Budget,
) -> i32 {
    let finish = |status: i32, stats: &Stats| {
        if want_stats(cfg.stats) {
            emit_stats(stats, started);
        }
        status
    };
    let mut rc = run_config(cfg, gate, args, started, budget);
    rc.snapshots = path.as_deref().map(|p| SnapshotDir {
        dir: p.parent().map(Path::to_path_buf).unwrap_or_default(),
        stem: p.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        update: cfg.update_snapshots,
    });
    let mut out = crate::run(prog, &rc);
    if let (Some(path), Some(p)) = (&cfg.profile, out.profile.take()) {
        write_profile(path, Some((&p, prog, deadline)), cfg.json_errors);
    }
    if let Some(d) = out.diag.as_mut() {
        crate::teach::teach(d, &setup(cfg));
        emit_diag(d, cfg.json_errors);
    }
    if cfg.cgi {
        // CGI: the held output goes out only when the script did not fail; otherwise a
        // generic 500 (the diagnostic above went to the server's error log).
        let mut o = std::io::stdout().lock();
        let body = if out.diag.is_none() { &out.held[..] } else { CGI_500 };
        if let Err(e) = o.write_all(body).and_then(|_| o.flush()) {
            return finish(output_failed(&e, out.status, cfg.json_errors), &out.stats);
        }
    }
    finish(out.status, &out.stats)
}
