//! `leash-cgi --fastcgi ADDR`: the FastCGI responder (SPEC 12, round 3), with a fresh
//! worker process per request.
//!
//! Three kinds of process:
//! - the **server** (`leash-cgi --fastcgi`): accepts the web server's connections (a unix
//!   socket or TCP on loopback), reads the records (`fastcgi.rs`), applies the same
//!   configuration and per-directory policy as CGI (`gateway.rs`), admits requests
//!   (`max_workers` running, `queue` waiting, then 503), supervises each worker (deadline,
//!   output bound, statuses) and logs one line per request. It is multi-threaded (a thread
//!   per connection, pooled; a request is carried end to end by its connection's thread,
//!   `fastcgi_request.rs`, with one `poll` over the connection, the job's report socket
//!   and the worker's pipes) and never runs a script itself.
//! - the **warm process** (`leash --fastcgi-zygote`: the interpreter binary named by the
//!   configuration's `interpreter`, by default the `leash` beside `leash-cgi`, started by
//!   the server with `exec`,
//!   so it is single-threaded and has never run anything): it has the interpreter loaded
//!   and only forks. The server sends it each request (the worker's argv, environment,
//!   directory and resource limits, and its three pipes as descriptors) over a
//!   `SOCK_SEQPACKET` pair; it hands it to a spare worker or forks, reports the worker's
//!   pid, and later its exit status (it waits on a pidfd per child), on a socket of the
//!   job's own that came with it, and holds no state about requests (`fastcgi_warm.rs`).
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

use std::ffi::OsString;
use std::io::{IoSlice, Read, Write};
use std::mem::MaybeUninit;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use rustix::net::{RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use crate::fastcgi::{self as fcgi, Record};
use crate::fastcgi_request::{other_record, request};
use crate::fastcgi_warm::{log_line, JOB_MAX_BYTES};
use crate::gateway::{self, Config};
use crate::limits::*;

pub use crate::fastcgi_warm::{zygote_main, Job, Spares, FCGI_MAX_PARAMS_BYTES};

/// Connections served at once; more are closed at once (the web server retries or
/// answers 503 itself).
pub const FCGI_MAX_CONNS: usize = 1024;
/// How long a request may wait in the queue for a worker (then 503): as long as the web
/// servers wait for an answer by default (Apache's ProxyTimeout, nginx's
/// fastcgi_read_timeout: 60 s).
pub const FCGI_QUEUE_WAIT: Duration = Duration::from_secs(60);
/// How long a write of a response to the web server may block.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// How much a read of the connection takes at most.
const READ_CHUNK: usize = 16 * KIB;

// ---------------------------------------------------------------------------
// The server's side of the warm process
// ---------------------------------------------------------------------------

pub(crate) struct Zygote {
    sock: Mutex<Option<Arc<OwnedFd>>>,
    pub(crate) next: AtomicU64,
}

impl Zygote {
    /// Send a job with its four descriptors (the worker's stdin, stdout and stderr, and the
    /// warm process's end of the job's report socket).
    pub(crate) fn start(&self, job: &Job, fds: [&OwnedFd; 4]) -> Result<(), String> {
        // At start-up, or while it is restarted, the warm process may be a moment away.
        let until = Instant::now() + Duration::from_secs(5);
        let sock = loop {
            if let Some(s) = self.sock.lock().map_err(|_| "lock")?.clone() {
                break s;
            }
            if Instant::now() >= until {
                return Err("the warm process is not running".into());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        let bytes = job.encode();
        if bytes.len() > JOB_MAX_BYTES {
            return Err(format!("the request's environment is too big ({} bytes)", bytes.len()));
        }
        let borrowed = fds.map(|f| f.as_fd());
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&borrowed));
        match rustix::net::sendmsg(&*sock, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL) {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("cannot reach the warm process: {e}")),
        }
    }
}

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

/// The `leash` binary: the configuration's `interpreter`, else the one beside `leash-cgi`.
pub(crate) fn interpreter(cfg: &Config) -> PathBuf {
    cfg.interpreter.clone().unwrap_or_else(|| {
        let me = std::env::current_exe().unwrap_or_default();
        me.parent().unwrap_or(Path::new("/")).join("leash")
    })
}

// ---------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------

pub(crate) struct Server {
    config_path: OsString,
    /// The configuration, and its generation (bumped by each reload: the warm process
    /// retires spare workers forked under an older one).
    cfg: RwLock<(Arc<Config>, u64)>,
    pub(crate) zygote: Zygote,
    admit: Mutex<(u64, u64)>,
    admitted: Condvar,
    pub(crate) stopping: AtomicBool,
    /// Requests between BEGIN_REQUEST and their end (what SIGTERM waits for).
    busy: AtomicUsize,
    conns: AtomicUsize,
    /// Acceptor threads waiting in `accept` (`acceptor`).
    acceptors_idle: AtomicUsize,
    /// Where a worker gets a new private, empty TMPDIR when none is kept.
    pub(crate) tmp_base: PathBuf,
    /// Empty private directories kept for reuse as TMPDIRs, in place (`WorkerTmp`):
    /// nothing instead of a mkdir and an rmdir per request (on ext4 with discard, an
    /// rmdir frees an inode and a block through the journal: about a fifth of the
    /// server's CPU), and no rename either.
    pub(crate) spare_base: PathBuf,
    pub(crate) spares: Mutex<Vec<PathBuf>>,
}

impl Server {
    pub(crate) fn config(&self) -> Arc<Config> {
        self.config_gen().0
    }

    pub(crate) fn config_gen(&self) -> (Arc<Config>, u64) {
        self.cfg.read().map(|c| c.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Wait for a worker slot until `until`: `Err` when the queue is full or the wait ends.
    pub(crate) fn admit(&self, cfg: &Config, until: Instant) -> Result<Slot<'_>, String> {
        let mut g = self.admit.lock().map_err(|_| "lock")?;
        if g.0 < cfg.max_workers {
            g.0 += 1;
            return Ok(Slot(self));
        }
        if g.1 >= cfg.queue {
            return Err(format!("max_workers ({}) busy and the queue ({}) full", cfg.max_workers, cfg.queue));
        }
        g.1 += 1;
        loop {
            let now = Instant::now();
            if now >= until {
                g.1 -= 1;
                return Err(format!(
                    "waited {} s in the queue for a worker (max_workers {})",
                    FCGI_QUEUE_WAIT.as_secs(),
                    cfg.max_workers
                ));
            }
            g = self.admitted.wait_timeout(g, until - now).map_err(|_| "lock")?.0;
            if g.0 < cfg.max_workers {
                g.1 -= 1;
                g.0 += 1;
                return Ok(Slot(self));
            }
        }
    }
}

/// A running worker's place among `max_workers`.
pub(crate) struct Slot<'a>(&'a Server);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut g) = self.0.admit.lock() {
            g.0 = g.0.saturating_sub(1);
        }
        self.0.admitted.notify_one();
    }
}

/// A connection from the web server.
pub(crate) enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    fn fd(&self) -> BorrowedFd<'_> {
        match self {
            Conn::Unix(s) => s.as_fd(),
            Conn::Tcp(s) => s.as_fd(),
        }
    }
    fn shutdown(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }
    fn set_write_timeout(&self, d: Duration) {
        let _ = match self {
            Conn::Unix(s) => s.set_write_timeout(Some(d)),
            Conn::Tcp(s) => s.set_write_timeout(Some(d)),
        };
    }
}

impl Read for Conn {
    fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(b),
            Conn::Tcp(s) => s.read(b),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(b),
            Conn::Tcp(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What a connection has for its thread now.
pub(crate) enum Got {
    Rec(Record),
    /// It can be read no more (closed by the web server, a read error, a malformed record).
    Closed(String),
    /// No whole record yet.
    Nothing,
}

/// The web server's connection: written with blocking writes (`WRITE_TIMEOUT`), read
/// without blocking into a buffer whole records are taken from, so that the one thread
/// serving it can wait on it and on a worker at once (`poll`).
pub(crate) struct Link {
    pub(crate) conn: Conn,
    buf: Vec<u8>,
    /// Where the bytes not yet taken start in `buf`.
    at: usize,
    ended: Option<String>,
}

impl Link {
    fn new(conn: Conn) -> Link {
        Link { conn, buf: Vec::new(), at: 0, ended: None }
    }

    pub(crate) fn fd(&self) -> BorrowedFd<'_> {
        self.conn.fd()
    }

    /// The header of the next record, when all of the record is in the buffer.
    fn whole(&self) -> Option<Result<(fcgi::Header, usize), String>> {
        let b = &self.buf[self.at..];
        let h: [u8; 8] = b.get(..8)?.try_into().ok()?;
        let head = match fcgi::parse_header(&h) {
            Ok(h) => h,
            Err(m) => return Some(Err(m)),
        };
        let total = 8 + head.content_len as usize + head.padding as usize;
        (b.len() >= total).then_some(Ok((head, total)))
    }

    /// Whether a whole record waits in the buffer (or a malformed one).
    pub(crate) fn has_record(&self) -> bool {
        self.whole().is_some()
    }

    /// Read what has arrived, without waiting.
    fn fill(&mut self) {
        if self.ended.is_some() {
            return;
        }
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        let old = self.buf.len();
        self.buf.resize(old + READ_CHUNK, 0);
        let got = rustix::net::recv(self.conn.fd(), &mut self.buf[old..], RecvFlags::DONTWAIT);
        let n = match got {
            Ok((0, _)) => {
                self.ended = Some("the web server closed the connection".into());
                0
            }
            Ok((n, _)) => n.min(READ_CHUNK),
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => 0,
            Err(e) => {
                self.ended = Some(format!("reading from the web server: {e}"));
                0
            }
        };
        self.buf.truncate(old + n);
    }

    /// The next record without waiting.
    pub(crate) fn next(&mut self) -> Got {
        for attempt in 0..2 {
            match self.whole() {
                Some(Ok((head, total))) => {
                    let from = self.at + 8;
                    let content = self.buf[from..from + head.content_len as usize].to_vec();
                    self.at += total;
                    if self.at == self.buf.len() {
                        self.buf.clear();
                        self.at = 0;
                    }
                    return Got::Rec(Record { kind: head.kind, id: head.id, content });
                }
                Some(Err(m)) => {
                    self.ended = Some(format!("reading from the web server: {m}"));
                    self.buf.clear();
                    self.at = 0;
                    return Got::Closed(self.ended.clone().unwrap_or_default());
                }
                None => {}
            }
            if let Some(why) = &self.ended {
                return Got::Closed(why.clone());
            }
            if attempt == 0 {
                self.fill();
            }
        }
        match &self.ended {
            Some(why) => Got::Closed(why.clone()),
            None => Got::Nothing,
        }
    }

    /// The next record, waiting at most `wait` (None: as long as it takes) for it.
    pub(crate) fn wait(&mut self, wait: Option<Duration>) -> Got {
        let until = wait.map(|d| Instant::now() + d);
        loop {
            match self.next() {
                Got::Nothing => {}
                got => return got,
            }
            let left = until.map(|u| u.saturating_duration_since(Instant::now()));
            if left == Some(Duration::ZERO) {
                return Got::Nothing;
            }
            let ts = left
                .map(|d| rustix::event::Timespec { tv_sec: d.as_secs() as i64, tv_nsec: i64::from(d.subsec_nanos()) });
            let mut p = [rustix::event::PollFd::from_borrowed_fd(self.conn.fd(), rustix::event::PollFlags::IN)];
            if let Err(e) = rustix::event::poll(&mut p, ts.as_ref()) {
                if e != rustix::io::Errno::INTR {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
    }
}

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
    let listener = match bind(addr) {
        Ok(l) => l,
        Err(m) => {
            log_line(&format!("leash-cgi: {m}"));
            return 1;
        }
    };
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

/// A directory only the owner can use.
pub(crate) fn private_dir(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(p)
}

/// Serve one connection: requests one after another (no multiplexing), each carried end
/// to end by this thread.
fn connection(srv: &Arc<Server>, conn: Conn) {
    conn.set_write_timeout(WRITE_TIMEOUT);
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

    fn accept(&self) -> std::io::Result<Conn> {
        match self {
            Listener::Unix(l, _) => l.accept().map(|(s, _)| Conn::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| {
                let _ = s.set_nodelay(true);
                Conn::Tcp(s)
            }),
        }
    }
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
