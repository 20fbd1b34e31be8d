//! What the threads of `leash-cgi --fastcgi` share (`fastcgi_server.rs` accepts and
//! serves connections, `fastcgi_request.rs` carries each request): the server's state
//! (configuration, admission among `max_workers` and the queue, the warm process's socket,
//! kept TMPDIRs), and a connection to the web server read without blocking (`Link`).

use std::ffi::OsString;
use std::io::{IoSlice, Read, Write};
use std::mem::MaybeUninit;
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use rustix::net::{RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags};

use crate::fastcgi::{self as fcgi, Record};
use crate::fastcgi_warm::{Job, JOB_MAX_BYTES};
use crate::gateway::Config;
use crate::limits::*;

/// Connections served at once; more are closed at once (the web server retries or
/// answers 503 itself).
pub const FCGI_MAX_CONNS: usize = 1024;
/// How long a request may wait in the queue for a worker (then 503): as long as the web
/// servers wait for an answer by default (Apache's ProxyTimeout, nginx's
/// fastcgi_read_timeout: 60 s).
pub const FCGI_QUEUE_WAIT: Duration = Duration::from_secs(60);
/// How long a write of a response to the web server may block.
pub(crate) const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// The room a read of the connection has at least.
pub(crate) const READ_CHUNK: usize = 16 * KIB;
pub(crate) struct Zygote {
    pub(crate) sock: Mutex<Option<Arc<OwnedFd>>>,
    pub(crate) next: AtomicU64,
}

impl Zygote {
    /// Send a job with its descriptors: the worker's stdin (when `job.has_stdin`), stdout
    /// and stderr, and the warm process's end of the job's report socket.
    pub(crate) fn start(&self, job: &Job, fds: &[&OwnedFd]) -> Result<(), String> {
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
        if fds.len() != 3 + usize::from(job.has_stdin) {
            return Err(format!("{} descriptors for a job", fds.len()));
        }
        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&borrowed));
        match rustix::net::sendmsg(&*sock, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL) {
            Ok(_) => Ok(()),
            Err(e) => Err(format!("cannot reach the warm process: {e}")),
        }
    }
}

/// The `leash` binary: the configuration's `interpreter`, else the one beside `leash-cgi`.
pub(crate) fn interpreter(cfg: &Config) -> PathBuf {
    cfg.interpreter.clone().unwrap_or_else(|| {
        let me = std::env::current_exe().unwrap_or_default();
        me.parent().unwrap_or(Path::new("/")).join("leash")
    })
}

pub(crate) struct Server {
    pub(crate) config_path: OsString,
    /// The configuration, and its generation (bumped by each reload: the warm process
    /// retires spare workers forked under an older one).
    pub(crate) cfg: RwLock<(Arc<Config>, u64)>,
    pub(crate) zygote: Zygote,
    pub(crate) admit: Mutex<(u64, u64)>,
    pub(crate) admitted: Condvar,
    pub(crate) stopping: AtomicBool,
    /// Requests between BEGIN_REQUEST and their end (what SIGTERM waits for).
    pub(crate) busy: AtomicUsize,
    pub(crate) conns: AtomicUsize,
    /// Acceptor threads waiting in `accept` (`acceptor`).
    pub(crate) acceptors_idle: AtomicUsize,
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
        // A request waits in the queue only after counting itself there under the lock
        // (`admit`): none counted, none to wake (and no `futex` call per request).
        let queued = match self.0.admit.lock() {
            Ok(mut g) => {
                g.0 = g.0.saturating_sub(1);
                g.1 > 0
            }
            Err(_) => true,
        };
        if queued {
            self.0.admitted.notify_one();
        }
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
    pub(crate) fn shutdown(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
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
    pub(crate) fn new(conn: Conn) -> Link {
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

    /// Read what has arrived, without waiting; how many bytes came.
    fn fill(&mut self) -> usize {
        if self.ended.is_some() {
            return 0;
        }
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        // Into the buffer's spare room (at least `READ_CHUNK`), not zeroed first (it was
        // 16 KiB of zeroes a read); `spare_capacity` sets the length to what came.
        self.buf.reserve(READ_CHUNK);
        let got = rustix::net::recv(self.conn.fd(), rustix::buffer::spare_capacity(&mut self.buf), RecvFlags::DONTWAIT);
        let n = match got {
            Ok((0, _)) => {
                self.ended = Some("the web server closed the connection".into());
                0
            }
            Ok((n, _)) => n,
            Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => 0,
            Err(e) => {
                self.ended = Some(format!("reading from the web server: {e}"));
                0
            }
        };
        n
    }

    /// The next record without waiting.
    pub(crate) fn next(&mut self) -> Got {
        // (Read until a whole record is in, or nothing more has come: a record of 64 KiB
        // takes a few reads, none of them a wait.)
        loop {
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
            if self.ended.is_some() || self.fill() == 0 {
                return match &self.ended {
                    Some(why) => Got::Closed(why.clone()),
                    None => Got::Nothing,
                };
            }
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

/// A directory only the owner can use.
pub(crate) fn private_dir(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(p)
}
