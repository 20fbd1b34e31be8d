//! `leash-cgi --fastcgi ADDR`: the FastCGI responder (SPEC 12, round 3), with a fresh
//! worker process per request.
//!
//! Three kinds of process:
//! - the **server** (`leash-cgi --fastcgi`): accepts the web server's connections (a unix
//!   socket or TCP on loopback), reads the records (`fastcgi.rs`), applies the same
//!   configuration and per-directory policy as CGI (`gateway.rs`), admits requests
//!   (`max_workers` running, `queue` waiting, then 503), supervises each worker (deadline,
//!   output bound, statuses) and logs one line per request. It is multi-threaded (a thread
//!   per connection, the one that accepted it; a request is carried end to end by it,
//!   `fastcgi_request.rs`, with one `poll` over the connection, the job's report socket
//!   and the worker's pipes) and never runs a script itself.
//! - the **warm process** (`leash --fastcgi-zygote`: the interpreter binary named by the
//!   configuration's `interpreter`, by default the `leash` beside `leash-cgi`, started by
//!   the server with `exec`,
//!   so it is single-threaded and has never run anything): it has the interpreter loaded
//!   and only forks. The server sends it each request (the worker's argv, environment,
//!   directory and resource limits, and its pipes as descriptors: stdin only with a body)
//!   over a `SOCK_SEQPACKET` pair; it hands it to a spare worker or forks, reports the
//!   worker's end (it waits on a pidfd per child) on a socket of the job's own that came
//!   with it, kills the worker when the server asks on that socket, and holds no state
//!   about requests (`fastcgi_warm.rs`).
//! - **spare workers** (`spare_workers`): forked by the warm process between requests,
//!   each waits on a socket of its own for one job, then is that job's worker; replaced
//!   when the warm process is idle, retired after a reload; idle, they are not counted
//!   among `max_workers` (which bounds the requests running), but bounded by their own key.
//! - the **worker**, one per request, forked from the warm process: it starts a session
//!   of its own (so the whole group can be killed), puts the pipes on 0, 1 and 2 and closes
//!   every other descriptor it inherited, sets its resource limits (soft and hard), changes
//!   to the script's directory, replaces its whole environment with the request's, and runs
//!   `leash --cgi ... SCRIPT` in its own process exactly as the `leash` binary would (or,
//!   with `worker_start = "exec"`, execs the interpreter binary). It exits when the script
//!   ends. Nothing of one request reaches another: each worker is a copy of a process that
//!   has run no script, and its heap, globals, regex cache, allocator counters, files and
//!   environment end with it.
//!
//! The warm process is restarted when it dies; requests it was running are 502.

use std::io::Write;
use std::net::TcpListener;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use crate::fastcgi as fcgi;
use crate::fastcgi_request::{other_record, request};
use crate::fastcgi_shared::{interpreter, private_dir, Conn, Got, Link, Server, Zygote, WRITE_TIMEOUT};
use crate::fastcgi_warm::{log_line, JOB_MAX_BYTES};
use crate::gateway;
use crate::limits::*;

pub use crate::fastcgi_shared::{FCGI_MAX_CONNS, FCGI_QUEUE_WAIT};
pub use crate::fastcgi_warm::{zygote_main, Job, Spares, FCGI_MAX_PARAMS_BYTES};

/// Keep a warm process running: start it, start another when it dies. (Its reports go to
/// each job's own socket: nothing is routed here.)
fn run_zygote(srv: Arc<Server>) {
    loop {
        let exe = interpreter(&srv.config());
        let pair = rustix::net::socketpair(
            rustix::net::AddressFamily::UNIX,
            rustix::net::SocketType::SEQPACKET,
            rustix::net::SocketFlags::CLOEXEC,
            None,
        );
        let (ours, theirs) = match pair {
            Ok(p) => p,
            Err(e) => {
                log_line(&format!("leash-cgi: cannot make the warm process's socket: {e}"));
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        let _ = rustix::net::sockopt::set_socket_send_buffer_size(&ours, 2 * JOB_MAX_BYTES);
        let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&theirs, 2 * JOB_MAX_BYTES);
        let child = Command::new(&exe)
            .arg("--fastcgi-zygote")
            .env_clear()
            .stdin(Stdio::from(theirs))
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn();
        let mut child = match child {
            Ok(c) => c,
            Err(e) => {
                log_line(&format!("leash-cgi: cannot start the warm process {}: {e}", exe.display()));
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        if let Ok(mut s) = srv.zygote.sock.lock() {
            *s = Some(Arc::new(ours));
        }
        // It runs until it dies (its jobs' report sockets close with it: their requests
        // end 502 or 500) or the server ends.
        let st = child.wait();
        if let Ok(mut s) = srv.zygote.sock.lock() {
            *s = None;
        }
        if srv.stopping.load(SeqCst) {
            return;
        }
        log_line(&format!("leash-cgi: the warm process ended ({st:?}); starting another"));
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

fn bind(addr: &str) -> Result<Listener, String> {
    if let Some(path) = addr.strip_prefix("unix:") {
        let p = PathBuf::from(path);
        if !p.is_absolute() {
            return Err(format!("unix socket path must be absolute, got {path:?}"));
        }
        if std::fs::symlink_metadata(&p).is_ok() {
            if UnixStream::connect(&p).is_ok() {
                return Err(format!("{path} is in use by another server"));
            }
            use std::os::unix::fs::FileTypeExt;
            match std::fs::symlink_metadata(&p) {
                Ok(m) if m.file_type().is_socket() => {
                    std::fs::remove_file(&p).map_err(|e| format!("cannot remove the stale socket {path}: {e}"))?
                }
                _ => return Err(format!("{path} exists and is not a socket")),
            }
        }
        let l = UnixListener::bind(&p).map_err(|e| format!("cannot listen on {path}: {e}"))?;
        return Ok(Listener::Unix(l, p));
    }
    let sa: std::net::SocketAddr =
        addr.parse().map_err(|_| format!("ADDR must be unix:/path or IP:PORT on loopback, got {addr:?}"))?;
    if !sa.ip().is_loopback() {
        return Err(format!(
            "{addr} is not a loopback address: FastCGI has no authentication, so leash-cgi listens only on \
             127.0.0.1, ::1 or a unix socket"
        ));
    }
    let l = TcpListener::bind(sa).map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    // What each connection needs, set once: Linux gives an accepted TCP socket the
    // listener's options (`tcp_options_inherited` checks it on the first connection).
    let _ = rustix::net::sockopt::set_tcp_nodelay(&l, true);
    let _ = rustix::net::sockopt::set_socket_timeout(&l, rustix::net::sockopt::Timeout::Send, Some(WRITE_TIMEOUT));
    // A connection is accepted once its first records are in (a web server sends them as
    // soon as it connects): one wake-up of the accepting thread instead of two.
    let _ = leash_alloc::set_tcp_defer_accept(l.as_fd(), 5);
    Ok(Listener::Tcp(l))
}

/// `leash-cgi --fastcgi ADDR`: serve until SIGTERM (or SIGINT); the exit status.
pub fn serve(addr: &str) -> i32 {
    let config_path = std::env::var_os(gateway::CONFIG_ENV).unwrap_or_default();
    let cfg = match gateway::load_config(Some(&config_path)) {
        Ok(c) => c,
        Err(m) => {
            log_line(&format!("leash-cgi: configuration: {m}"));
            return 1;
        }
    };
    // The signals are taken before the socket listens: a client may connect (and a
    // supervisor send SIGHUP) as soon as it does, and a SIGHUP before the handler was
    // set would end the process (its default action).
    let mut signals = match signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGHUP,
    ]) {
        Ok(s) => s,
        Err(e) => {
            log_line(&format!("leash-cgi: cannot handle signals: {e}"));
            return 1;
        }
    };
    let listener = match bind(addr) {
        Ok(l) => l,
        Err(m) => {
            log_line(&format!("leash-cgi: {m}"));
            return 1;
        }
    };
    let tmp_base = std::env::temp_dir().join(format!("leash-cgi-{}", std::process::id()));
    let spare_base = std::env::temp_dir().join(format!("leash-cgi-{}.spare", std::process::id()));
    for dir in [&tmp_base, &spare_base] {
        let _ = std::fs::remove_dir_all(dir);
        if let Err(e) = private_dir(dir) {
            log_line(&format!("leash-cgi: cannot make {}: {e}", dir.display()));
            return 1;
        }
    }
    log_line(&format!(
        "leash-cgi: FastCGI on {addr} (pid {}, max_workers {}, queue {}, workers by {})",
        std::process::id(),
        cfg.max_workers,
        cfg.queue,
        if cfg.worker_exec { "exec" } else { "fork" }
    ));
    let srv = Arc::new(Server {
        config_path,
        cfg: RwLock::new((Arc::new(cfg), 0)),
        zygote: Zygote { sock: Mutex::new(None), next: AtomicU64::new(1) },
        admit: Mutex::new((0, 0)),
        admitted: Condvar::new(),
        stopping: AtomicBool::new(false),
        busy: AtomicUsize::new(0),
        conns: AtomicUsize::new(0),
        acceptors_idle: AtomicUsize::new(0),
        tmp_base,
        spare_base,
        spares: Mutex::new(Vec::new()),
    });
    {
        let s = srv.clone();
        std::thread::spawn(move || run_zygote(s));
    }
    {
        let s = srv.clone();
        std::thread::spawn(move || {
            for sig in signals.forever() {
                if sig == signal_hook::consts::SIGHUP {
                    match gateway::load_config(Some(&s.config_path)) {
                        Ok(c) => {
                            log_line(&format!(
                                "leash-cgi: configuration reloaded (max_workers {}, queue {})",
                                c.max_workers, c.queue
                            ));
                            if let Ok(mut g) = s.cfg.write() {
                                *g = (Arc::new(c), g.1 + 1);
                            }
                            s.admitted.notify_all();
                        }
                        Err(m) => log_line(&format!("leash-cgi: configuration not reloaded, the old one stays: {m}")),
                    }
                } else {
                    log_line("leash-cgi: stopping: finishing the running requests");
                    s.stopping.store(true, SeqCst);
                    break;
                }
            }
        });
    }
    // Accept until stopping: threads that each accept a connection and serve it
    // (`acceptor`); this one waits for the signal.
    let fd = listener.fd().try_clone_to_owned();
    let listener = Arc::new(listener);
    let (fd, started) = match fd {
        Ok(fd) => {
            let _ =
                rustix::net::sockopt::set_socket_timeout(&fd, rustix::net::sockopt::Timeout::Recv, Some(ACCEPT_TICK));
            srv.acceptors_idle.fetch_add(1, SeqCst);
            let (s, l) = (srv.clone(), listener.clone());
            (fd, std::thread::Builder::new().spawn(move || acceptor(s, l)))
        }
        Err(e) => {
            log_line(&format!("leash-cgi: {e}"));
            return 1;
        }
    };
    if let Err(e) = started {
        log_line(&format!("leash-cgi: cannot start a thread to accept connections: {e}"));
        return 1;
    }
    while !srv.stopping.load(SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    // No new connections (the acceptors blocked in accept wake with an error and go).
    let _ = rustix::net::shutdown(&fd, rustix::net::Shutdown::Both);
    drop(fd);
    // Drain: no new connections; running requests finish (at most their deadline).
    if let Listener::Unix(_, p) = &*listener {
        let _ = std::fs::remove_file(p);
    }
    drop(listener);
    let cfg = srv.config();
    let until = Instant::now() + Duration::from_millis(cfg.max_time_ms + CGI_KILL_GRACE_MS + 2000);
    while srv.busy.load(SeqCst) > 0 && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = std::fs::remove_dir_all(&srv.tmp_base);
    let _ = std::fs::remove_dir_all(&srv.spare_base);
    log_line("leash-cgi: stopped");
    0
}

/// Serve one connection: requests one after another (no multiplexing), each carried end
/// to end by this thread.
fn connection(srv: &Arc<Server>, conn: Conn) {
    let mut link = Link::new(conn);
    loop {
        let r = match link.wait(Some(Duration::from_millis(200))) {
            Got::Rec(r) => r,
            Got::Closed(_) => break,
            Got::Nothing => {
                if srv.stopping.load(SeqCst) {
                    break;
                }
                continue;
            }
        };
        if r.kind == fcgi::BEGIN_REQUEST && r.id != 0 {
            match fcgi::parse_begin(&r.content) {
                Ok((fcgi::RESPONDER, flags)) => {
                    srv.busy.fetch_add(1, SeqCst);
                    let ok = request(srv, &mut link, r.id);
                    srv.busy.fetch_sub(1, SeqCst);
                    if !ok || flags & fcgi::KEEP_CONN == 0 {
                        break;
                    }
                }
                Ok(_) => {
                    if link.conn.write_all(&fcgi::end_request(r.id, 0, fcgi::UNKNOWN_ROLE)).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            }
        } else if !other_record(&mut link.conn, &r, 0) {
            break;
        }
    }
    link.conn.shutdown();
}

/// How long an acceptor waits in `accept` before it looks at the server again.
const ACCEPT_TICK: Duration = Duration::from_secs(1);
/// Ticks an idle acceptor waits before it ends (one always stays).
const ACCEPT_IDLE_TICKS: u32 = 30;

impl Listener {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Listener::Unix(l, _) => l.as_fd(),
            Listener::Tcp(l) => l.as_fd(),
        }
    }

    /// A connection, with no Nagle delay (TCP) and `WRITE_TIMEOUT` on its writes.
    fn accept(&self) -> std::io::Result<Conn> {
        match self {
            Listener::Unix(l, _) => l.accept().map(|(s, _)| {
                let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
                Conn::Unix(s)
            }),
            Listener::Tcp(l) => l.accept().map(|(s, _)| {
                if !tcp_options_inherited(&s) {
                    let _ = s.set_nodelay(true);
                    let _ = s.set_write_timeout(Some(WRITE_TIMEOUT));
                }
                Conn::Tcp(s)
            }),
        }
    }
}

/// Whether accepted TCP connections have the listener's `TCP_NODELAY` and send timeout
/// (set in `bind`; Linux copies a listener's options into the sockets it accepts):
/// looked at once, on the first connection, and set on each connection otherwise.
fn tcp_options_inherited(s: &std::net::TcpStream) -> bool {
    static INHERITED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INHERITED.get_or_init(|| {
        s.nodelay().unwrap_or(false) && s.write_timeout().ok().flatten().is_some_and(|t| t == WRITE_TIMEOUT)
    })
}

/// An acceptor: accepts a connection and serves it on this thread, then accepts again.
/// When the last idle acceptor takes a connection it starts another first, so accepting
/// never waits for a thread, and no connection is handed from one thread to another. An
/// acceptor idle for `ACCEPT_IDLE_TICKS` ends, unless it is the last idle one. (Counted
/// idle in `acceptors_idle` by whoever starts it.)
fn acceptor(srv: Arc<Server>, listener: Arc<Listener>) {
    let mut idle_ticks = 0;
    loop {
        if srv.stopping.load(SeqCst) {
            break;
        }
        match listener.accept() {
            Ok(c) => {
                idle_ticks = 0;
                let idle_left = srv.acceptors_idle.fetch_sub(1, SeqCst) - 1;
                let open = srv.conns.fetch_add(1, SeqCst) + 1;
                if open > FCGI_MAX_CONNS || srv.stopping.load(SeqCst) {
                    if open > FCGI_MAX_CONNS {
                        log_line(&format!("leash-cgi: a connection refused: {FCGI_MAX_CONNS} are open"));
                    }
                    c.shutdown();
                } else {
                    if idle_left == 0 {
                        srv.acceptors_idle.fetch_add(1, SeqCst);
                        let (s, l) = (srv.clone(), listener.clone());
                        if std::thread::Builder::new().spawn(move || acceptor(s, l)).is_err() {
                            srv.acceptors_idle.fetch_sub(1, SeqCst);
                            log_line("leash-cgi: cannot start a thread to accept connections");
                        }
                    }
                    connection(&srv, c);
                }
                srv.conns.fetch_sub(1, SeqCst);
                srv.acceptors_idle.fetch_add(1, SeqCst);
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                idle_ticks += 1;
                if idle_ticks >= ACCEPT_IDLE_TICKS
                    && srv.acceptors_idle.fetch_update(SeqCst, SeqCst, |v| (v > 1).then(|| v - 1)).is_ok()
                {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                if srv.stopping.load(SeqCst) {
                    break;
                }
                log_line(&format!("leash-cgi: accept: {e}"));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    srv.acceptors_idle.fetch_sub(1, SeqCst);
}
