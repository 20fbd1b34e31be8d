//! `leash-cgi`: the gateway a web server runs for `*.lsh` files (Apache: `Action` plus
//! `AddHandler`; the script's path arrives in PATH_TRANSLATED).
//!
//! One request per process: read the operator configuration (`LEASH_CGI_CONFIG`), check
//! the script (inside the root, symlinks followed), then run it in a worker process,
//! `leash --cgi ... SCRIPT`, with a clean environment, resource limits set on the worker,
//! and a wall-clock deadline. The worker's response goes to the client only when the run
//! succeeded and the response is well formed; otherwise the client gets a generic status
//! (404, 403, 413, 500, 502, 504) and the reason goes to stderr (the server's error log),
//! always ending with one summary line per request, written before the response (a client
//! that leaves mid-response can take the log's pipe with it), each line in one write.
//!
//! The request body is read on a thread of its own for the whole request, whatever the
//! script does with it: the first CONTENT_LENGTH bytes go to the worker while it takes
//! them, the rest is read and dropped, up to `CGI_MAX_DRAIN_BYTES` and the deadline, after
//! which the gateway stops reading (see `stop_reading`). The server, which writes the
//! whole body before it reads the response (Apache's mod_cgi and mod_cgid both do), is so
//! never left blocked writing it while the gateway writes a page bigger than a pipe, and
//! mod_cgid's socket is never closed with unread bytes (which would reset it and lose the
//! response).
//!
//! The policy (configuration, paths, environment, response checks) is in the library,
//! `leash::gateway`; this file does the process work.

#![forbid(unsafe_code)]

use std::ffi::OsString;
use std::io::{IsTerminal, Read, Write};
use std::os::fd::AsFd;
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::{Duration, Instant};

use leash::gateway::{self, read_stderr, signal_name, Allow, Config, Script, Stderr};
use leash::limits::*;
use rustix::process::{Resource, Rlimit};

/// What the summary log line of a request says (shared with the FastCGI server).
type Entry = gateway::LogEntry;

/// What a request leaves for after the response: the body still being read, and until when.
struct Pending {
    input: Option<Input>,
    /// Until when the rest of the body is waited for: the request's deadline.
    until: Instant,
}

fn main() {
    let started = Instant::now();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    // Under a web server (GATEWAY_INTERFACE set) arguments are ignored: Apache passes the
    // words of a query string without `=` as arguments.
    if std::env::var_os("GATEWAY_INTERFACE").is_none() && !args.is_empty() {
        std::process::exit(command(&args));
    }
    let mut entry = Entry::new(started);
    let mut pending = Pending { input: None, until: deadline(started, CGI_DEFAULT_MAX_TIME_MS) };
    let served = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| serve(&mut entry, &mut pending)));
    let response = match served {
        Ok(r) => r,
        Err(_) => entry.fail(500, "internal error in leash-cgi (a bug)"),
    };
    // A request answered without a worker still has its body read (and dropped).
    let input = pending.input.take().unwrap_or_else(|| Input::start(None, 0));
    log_line(&entry.line());
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(&response).and_then(|_| out.flush()) {
        log_line(&format!("leash-cgi: script={:?}: the response could not be sent: {e}", entry.script));
    }
    drop(out);
    input.finish(pending.until);
}

/// The end of a request that started at `t` with `max_time_ms`: when its worker is killed.
fn deadline(t: Instant, max_time_ms: u64) -> Instant {
    t + Duration::from_millis(max_time_ms.saturating_add(CGI_KILL_GRACE_MS))
}

/// One line to the log (stderr), newline included, in one write: stderr is unbuffered, and
/// text and newline written apart reach the server as two reads, which it logs as two
/// entries (one of them empty) or glues to another process's line.
fn log_line(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

// ---------------------------------------------------------------------------
// The request body
// ---------------------------------------------------------------------------

/// The thread that reads the request body (see the module's doc).
struct Input {
    ended: mpsc::Receiver<()>,
}

impl Input {
    /// Start reading stdin: its first `pass` bytes go to `worker` while it takes them.
    fn start(worker: Option<ChildStdin>, pass: u64) -> Input {
        let (tx, ended) = mpsc::channel();
        // A terminal (someone trying the gateway by hand) sends no body.
        if !std::io::stdin().is_terminal() {
            std::thread::spawn(move || {
                pump(worker, pass);
                let _ = tx.send(());
            });
        }
        Input { ended }
    }

    /// Wait, until `until`, for the body to end; then stop reading it, and give the bytes
    /// already queued a moment to be read.
    fn finish(self, until: Instant) {
        let left = until.saturating_duration_since(Instant::now());
        if !matches!(self.ended.recv_timeout(left), Err(RecvTimeoutError::Timeout)) {
            return;
        }
        stop_reading();
        let _ = self.ended.recv_timeout(Duration::from_millis(CGI_DRAIN_CLOSE_MS));
    }
}

/// Read stdin to its end: the first `pass` bytes to the worker (until it stops taking
/// them), everything else dropped; past `CGI_MAX_DRAIN_BYTES`, stop reading.
fn pump(mut worker: Option<ChildStdin>, mut pass: u64) {
    let mut input = std::io::stdin().lock();
    let mut buf = vec![0u8; 64 * KIB];
    let mut total = 0u64;
    let mut stopped = false;
    loop {
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        total += n as u64;
        if let Some(w) = worker.as_mut() {
            let k = (n as u64).min(pass);
            pass -= k;
            // A worker that exited or closed its stdin ends the copy (EPIPE); all of the
            // body passed, it gets its end of input.
            if w.write_all(&buf[..k as usize]).is_err() || pass == 0 {
                worker = None;
            }
        }
        if total >= CGI_MAX_DRAIN_BYTES && !stopped {
            // What is queued on a socket is still read below, then the end comes.
            stop_reading();
            stopped = true;
        }
    }
}

/// Stop reading the request body. A socket (mod_cgid) has its reading side shut: the
/// server's writes then fail at once, it drops the rest of the body and reads the
/// response, and what was already queued is read to the end, so that closing the socket
/// does not reset it. A pipe (mod_cgi) is closed, /dev/null put in its place: the
/// server's writes fail (EPIPE) and it does the same.
fn stop_reading() {
    if let Ok(fd) = std::io::stdin().as_fd().try_clone_to_owned() {
        if UnixStream::from(fd).shutdown(std::net::Shutdown::Read).is_ok() {
            return;
        }
    }
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
    }
}

/// Write the gateway's own output (help, version, the configuration) to stdout, flushed
/// at once; its status. Never a `print!` macro: those panic when stdout fails. A reader
/// that went away (EPIPE: `leash-cgi --help | head -c1`) ends it quietly; any other
/// failure (a full disk) is a diagnostic line. Status 1 either way, as for `leash`.
fn say(text: &str) -> i32 {
    let mut o = std::io::stdout().lock();
    match o.write_all(text.as_bytes()).and_then(|_| o.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 1,
        Err(e) => {
            log_line(&format!("leash-cgi: cannot write to stdout: {}", leash::fileio::io_reason(&e)));
            1
        }
    }
}

/// `leash-cgi --help`, `--version`, `--check-config [FILE]`: for the operator's shell.
fn command(args: &[OsString]) -> i32 {
    let a: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
    match a.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["--fastcgi", addr] => leash::fastcgi_server::serve(addr),
        ["--version"] => say(&format!("leash-cgi {}\n", env!("CARGO_PKG_VERSION"))),
        ["--help"] | ["-h"] => say(&format!(
            "leash-cgi: the CGI gateway for Leash scripts\n\n\
             usage:\n  leash-cgi                       handle one CGI request (run by the web server)\n  \
             leash-cgi --fastcgi ADDR         serve FastCGI on ADDR (unix:/path or 127.0.0.1:PORT)\n  \
             leash-cgi --check-config [FILE]  check a configuration (default: ${})\n  \
             leash-cgi --version | --help\n",
            gateway::CONFIG_ENV
        )),
        ["--check-config", rest @ ..] if rest.len() <= 1 => {
            let path = match rest.first() {
                Some(p) => Some(OsString::from(p)),
                None => std::env::var_os(gateway::CONFIG_ENV),
            };
            match gateway::load_config(path.as_deref()) {
                Ok(c) => say(&describe(&c)),
                Err(m) => {
                    log_line(&format!("leash-cgi: configuration: {m}"));
                    1
                }
            }
        }
        _ => {
            log_line("leash-cgi: unknown arguments (see leash-cgi --help)");
            2
        }
    }
}

fn describe(c: &Config) -> String {
    let mut s = format!(
        "root = {}\ninterpreter = {}\nmax_steps = {}\nmax_work = {}\nmax_time_ms = {}\nmax_memory = {}\n\
         max_output_bytes = {}\nmax_body_bytes = {}\nmax_file_size = {}\nenv_pass = {:?}\nallow = {}\n",
        c.root.display(),
        interpreter(c).display(),
        c.max_steps,
        c.max_work,
        c.max_time_ms,
        c.max_memory,
        c.max_output_bytes,
        c.max_body_bytes,
        c.max_file_size,
        c.env_pass,
        c.allow.describe()
    );
    s.push_str(&format!(
        "max_workers = {}\nqueue = {}\nworker_start = {}\n",
        c.max_workers,
        c.queue,
        if c.worker_exec { "exec" } else { "fork" }
    ));
    s.push_str(&format!("limits = {}\n", gateway::describe_limits(&c.limits)));
    for d in &c.dirs {
        let allow = d.allow.as_ref().map_or_else(|| "(default)".to_string(), |a| a.describe());
        s.push_str(&format!("dir {} allow = {}\n", d.path.display(), allow));
        if !d.limits.is_empty() {
            s.push_str(&format!("dir {} limits = {}\n", d.path.display(), gateway::describe_limits(&d.limits)));
        }
    }
    s
}

fn interpreter(c: &Config) -> PathBuf {
    c.interpreter.clone().unwrap_or_else(|| {
        let me = std::env::current_exe().unwrap_or_default();
        me.parent().unwrap_or(Path::new("/")).join("leash")
    })
}

fn serve(e: &mut Entry, pending: &mut Pending) -> Vec<u8> {
    let requested = std::env::var_os("PATH_TRANSLATED").filter(|p| !p.is_empty());
    if let Some(p) = &requested {
        e.script = p.to_string_lossy().into_owned();
    }
    let cfg = match gateway::load_config(std::env::var_os(gateway::CONFIG_ENV).as_deref()) {
        Ok(c) => c,
        Err(m) => return e.fail(500, format!("configuration: {m}")),
    };
    pending.until = deadline(e.started, cfg.max_time_ms);
    let Some(requested) = requested else {
        return e.fail(404, "no script: PATH_TRANSLATED is not set");
    };
    let script = match gateway::resolve_script(&cfg.root, Path::new(&requested)) {
        Script::Found(p) => p,
        Script::NotFound(m) => return e.fail(404, m),
        Script::Forbidden(m) => return e.fail(403, m),
    };
    e.script = script.to_string_lossy().into_owned();
    let body_len = match gateway::request_length(std::env::var_os("CONTENT_LENGTH").as_deref()) {
        Ok(n) => n,
        Err(m) => return e.fail(400, m),
    };
    if body_len > cfg.max_body_bytes {
        return e
            .fail(413, format!("request body of {body_len} bytes is over max_body_bytes ({})", cfg.max_body_bytes));
    }
    if std::env::var_os("CONTENT_LENGTH").is_none_or(|v| v.is_empty())
        && std::env::var_os("HTTP_TRANSFER_ENCODING").is_some()
    {
        e.note = Some("a request body without CONTENT_LENGTH (chunked) is read and dropped, not passed on".into());
    }
    let (allow, _) = gateway::allow_for(&cfg, &script);
    let vars: Vec<(OsString, OsString)> = std::env::vars_os().collect();
    let env = gateway::worker_env(&vars, &cfg.env_pass, &script);
    supervise(&cfg, allow, &script, env, body_len, e, pending)
}

// ---------------------------------------------------------------------------
// Resource limits of the worker
// ---------------------------------------------------------------------------

/// The limits a worker runs under, each at most the gateway's own hard limit.
fn worker_limits(cfg: &Config, script: &Path) -> Vec<(Resource, u64)> {
    let cpu = cfg.max_time_ms.div_ceil(1000) + CGI_CPU_GRACE_SECS;
    let wanted = [
        (Resource::Data, CGI_DATA_BASE.saturating_add(cfg.max_memory).saturating_add(MEMORY_OVERHEAD)),
        (Resource::Cpu, cpu),
        (Resource::Nofile, gateway::worker_nofile(&gateway::limits_for(cfg, script))),
        (Resource::Fsize, cfg.max_file_size),
        (Resource::Core, 0),
    ];
    wanted
        .iter()
        .map(|&(r, v)| {
            let hard = rustix::process::getrlimit(r).maximum;
            (r, hard.map_or(v, |h| v.min(h)))
        })
        .collect()
}

/// Lower the gateway's own soft limits to the worker's just around the spawn, so that the
/// worker starts under them (there is no way to set them in the child between fork and
/// exec without unsafe code); returns the old limits to put back.
fn lower_own(limits: &[(Resource, u64)]) -> Vec<(Resource, Rlimit)> {
    let mut saved = Vec::new();
    for &(r, v) in limits {
        let old = rustix::process::getrlimit(r);
        if rustix::process::setrlimit(r, Rlimit { current: Some(v), maximum: old.maximum }).is_ok() {
            saved.push((r, old));
        }
    }
    saved
}

fn restore_own(saved: Vec<(Resource, Rlimit)>) {
    for (r, old) in saved {
        let _ = rustix::process::setrlimit(r, old);
    }
}

/// Then make them the worker's hard limits too, so that it cannot raise them back.
fn pin_limits(child: &Child, limits: &[(Resource, u64)]) -> Result<(), String> {
    let pid = rustix::process::Pid::from_child(child);
    for &(r, v) in limits {
        rustix::process::prlimit(Some(pid), r, Rlimit { current: Some(v), maximum: Some(v) })
            .map_err(|e| format!("cannot set the worker's {r:?} limit: {e}"))?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Supervision
// ---------------------------------------------------------------------------

enum Event {
    StdoutDone,
    OutputOver,
    StderrDone,
}

enum End {
    Exited(ExitStatus),
    Deadline,
    OutputOver,
}

/// Kill the worker and everything in its process group, and reap it.
fn kill(child: &mut Child) {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    let _ = child.kill();
    let _ = child.wait();
}

/// Copy the worker's stderr to ours (see `gateway::worker_stderr_lines`).
fn forward_stderr(err: &Stderr, stats_line: bool) {
    for l in gateway::worker_stderr_lines(err, stats_line) {
        log_line(&l);
    }
}

fn supervise(
    cfg: &Config,
    allow: Allow,
    script: &Path,
    env: Vec<(OsString, OsString)>,
    body_len: u64,
    e: &mut Entry,
    pending: &mut Pending,
) -> Vec<u8> {
    let interp = interpreter(cfg);
    let mut cmd = Command::new(&interp);
    cmd.args(gateway::worker_args(cfg, allow, script))
        .env_clear()
        .envs(env)
        .current_dir(script.parent().unwrap_or(Path::new("/")))
        .stdin(if body_len > 0 { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let limits = worker_limits(cfg, script);
    let saved = lower_own(&limits);
    let spawned = cmd.spawn();
    restore_own(saved);
    let mut child = match spawned {
        Ok(c) => c,
        Err(err) => return e.fail(500, format!("cannot start the interpreter {}: {err}", interp.display())),
    };
    let t0 = Instant::now();
    let mut notes: Vec<String> = Vec::new();
    if let Err(m) = pin_limits(&child, &limits) {
        // The soft limits are in place from the start; only their hard ceiling is missing.
        notes.push(m);
    }

    // The request body: at most CONTENT_LENGTH bytes of it to the worker.
    pending.input = Some(Input::start(child.stdin.take(), body_len));
    let (tx, rx) = mpsc::channel();
    let mut out = child.stdout.take().expect("stdout is piped");
    let max_out = cfg.max_output_bytes;
    let tx_out = tx.clone();
    let out_thread = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = (&mut out).take(max_out + 1).read_to_end(&mut buf);
        if buf.len() as u64 > max_out {
            let _ = tx_out.send(Event::OutputOver);
            return Vec::new();
        }
        let _ = tx_out.send(Event::StdoutDone);
        buf
    });
    let err = child.stderr.take().expect("stderr is piped");
    let tx_err = tx;
    let err_thread = std::thread::spawn(move || {
        let s = read_stderr(err);
        let _ = tx_err.send(Event::StderrDone);
        s
    });

    let kill_at = t0 + Duration::from_millis(cfg.max_time_ms + CGI_KILL_GRACE_MS);
    let (mut out_done, mut err_done) = (false, false);
    let end = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break End::Exited(st);
        }
        let now = Instant::now();
        if now >= kill_at {
            kill(&mut child);
            break End::Deadline;
        }
        // Leash holds its output until it exits, so the pipes closing is the sign to look
        // at the process again; until then wait for them (or the deadline).
        let wait = if out_done && err_done { Duration::from_millis(1) } else { kill_at - now };
        match rx.recv_timeout(wait) {
            Ok(Event::OutputOver) => {
                kill(&mut child);
                break End::OutputOver;
            }
            Ok(Event::StdoutDone) => out_done = true,
            Ok(Event::StderrDone) => err_done = true,
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => std::thread::sleep(Duration::from_millis(1)),
        }
    };
    // Anything still holding the pipes (a process the worker started) goes with its group.
    let settle = Instant::now() + Duration::from_millis(200);
    while !(out_done && err_done) {
        match rx.recv_timeout(settle.saturating_duration_since(Instant::now())) {
            Ok(Event::StdoutDone) | Ok(Event::OutputOver) => out_done = true,
            Ok(Event::StderrDone) => err_done = true,
            Err(_) => {
                let pid = rustix::process::Pid::from_child(&child);
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                break;
            }
        }
    }
    let output = out_thread.join().unwrap_or_default();
    let stderr = err_thread.join().unwrap_or_default();

    let report = match &end {
        End::Exited(st) if st.code().is_some() => gateway::read_report(&stderr.tail),
        _ => gateway::Report::default(),
    };
    forward_stderr(&stderr, report.steps.is_some());
    e.steps = report.steps;
    let note = |e: &mut Entry, extra: Vec<String>| {
        for n in extra {
            e.add_note(n);
        }
    };
    let response = match end {
        End::Deadline => e.fail(504, format!("killed at the deadline ({} ms)", cfg.max_time_ms + CGI_KILL_GRACE_MS)),
        End::OutputOver => e.fail(500, format!("output over max_output_bytes ({max_out})")),
        End::Exited(st) => match (st.signal(), st.code()) {
            (Some(sig), _) => e.fail(502, format!("the worker died: signal {sig} ({})", signal_name(sig))),
            (None, Some(code)) if code != 0 && report.diag.is_some() => {
                let (class, kind) = report.diag.clone().unwrap_or_default();
                if class == "limit" && kind == "time" {
                    e.fail(504, format!("time limit: max_time_ms ({}) reached", cfg.max_time_ms))
                } else {
                    e.fail(500, format!("the script failed: {class} error [{kind}], exit status {code}"))
                }
            }
            (None, code) => match gateway::response_status(&output) {
                Ok(status) => {
                    e.status = status;
                    if code != Some(0) {
                        notes.push(format!("exit status {}", code.unwrap_or(-1)));
                    }
                    output
                }
                Err(m) => e.fail(500, format!("malformed response: {m}")),
            },
        },
    };
    note(e, notes);
    response
}
