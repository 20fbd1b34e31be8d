//! `leash-cgi --fastcgi ADDR`: the FastCGI responder (SPEC 12, round 3), with a fresh
//! worker process per request.
//!
//! Three kinds of process:
//! - the **server** (`leash-cgi --fastcgi`): accepts the web server's connections (a unix
//!   socket or TCP on loopback), reads the records (`fastcgi.rs`), applies the same
//!   configuration and per-directory policy as CGI (`gateway.rs`), admits requests
//!   (`max_workers` running, `queue` waiting, then 503), supervises each worker (deadline,
//!   output bound, statuses) and logs one line per request. It is multi-threaded (a thread
//!   per connection and a few per request) and never runs a script itself.
//! - the **warm process** (`leash --fastcgi-zygote`: the interpreter binary named by the
//!   configuration's `interpreter`, by default the `leash` beside `leash-cgi`, started by
//!   the server with `exec`,
//!   so it is single-threaded and has never run anything): it has the interpreter loaded
//!   and only forks. The server sends it each request (the worker's argv, environment,
//!   directory and resource limits, and its three pipes as descriptors) over a
//!   `SOCK_SEQPACKET` pair; it hands it to a spare worker or forks, reports the worker's
//!   pid, and later its exit status (it waits on a pidfd per child), and holds no state
//!   about requests.
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

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io::{IoSlice, IoSliceMut, Read, Write};
use std::mem::MaybeUninit;
use std::net::{TcpListener, TcpStream};
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Condvar, Mutex, RwLock};
use std::time::{Duration, Instant};

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};
use rustix::process::{Pid, Resource, Rlimit};

use crate::fastcgi::{self as fcgi, Record};
use crate::gateway::{self, signal_name, Config, Script, Stderr};
use crate::limits::*;

/// The most bytes of PARAMS one request may send (its CGI variables and headers).
pub const FCGI_MAX_PARAMS_BYTES: usize = 128 * KIB;
/// Connections served at once; more are closed at once (the web server retries or
/// answers 503 itself).
pub const FCGI_MAX_CONNS: usize = 1024;
/// How long a request may wait in the queue for a worker (then 503): as long as the web
/// servers wait for an answer by default (Apache's ProxyTimeout, nginx's
/// fastcgi_read_timeout: 60 s).
pub const FCGI_QUEUE_WAIT: Duration = Duration::from_secs(60);
/// How long a write of a response to the web server may block.
const WRITE_TIMEOUT: Duration = Duration::from_secs(60);
/// The most bytes of one message to the warm process (argv, environment, limits).
const JOB_MAX_BYTES: usize = FCGI_MAX_PARAMS_BYTES + 64 * KIB;

// ---------------------------------------------------------------------------
// The log line
// ---------------------------------------------------------------------------

/// What the summary log line of a request says (shared with `leash-cgi`).
type Entry = gateway::LogEntry;

/// The web server aborted the request before its worker started: logged as 499, and
/// the request ended (false: the connection failed).
fn aborted(e: &mut Entry, w: &mut Conn, id: u16) -> bool {
    e.status = 499;
    e.add_note("the web server aborted the request".into());
    log_line(&e.line());
    w.write_all(&fcgi::end_request(id, 0, fcgi::REQUEST_COMPLETE)).is_ok()
}

/// The web server closed the connection `when` the request was being read: logged as
/// 499; the connection is done.
fn closed(e: &mut Entry, when: &str, why: &dyn std::fmt::Display) -> bool {
    e.status = 499;
    e.add_note(format!("{when}: {why}"));
    log_line(&e.line());
    false
}

/// One line to the log (stderr), in one write.
fn log_line(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

// ---------------------------------------------------------------------------
// Messages between the server and the warm process
// ---------------------------------------------------------------------------

/// A worker to start.
#[derive(Debug, Clone, PartialEq)]
pub struct Job {
    pub id: u64,
    /// `Some(interpreter)`: exec it; `None`: run the interpreter in the forked process.
    pub exec: Option<PathBuf>,
    pub cwd: PathBuf,
    /// Whether the first descriptor sent is the worker's stdin (else /dev/null).
    pub has_stdin: bool,
    pub args: Vec<OsString>,
    pub env: Vec<(OsString, OsString)>,
    pub limits: Vec<(u8, u64)>,
    /// The program cache's bounds (`program_cache*` keys).
    pub cache: crate::program_cache::Bounds,
    /// The spare workers the warm process keeps (`spare_workers`, and the configuration's
    /// generation: spares forked under an older one are retired).
    pub spares: Spares,
}

/// What the warm process learns of the configuration with each job, for its spares.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Spares {
    /// `spare_workers`: idle workers kept forked ahead of requests (beside the at most
    /// `max_workers` running ones: a spare runs nothing until it is given a request).
    pub count: u64,
    /// Bumped by each reload (SIGHUP).
    pub generation: u64,
}

const RESOURCES: [Resource; 5] = [Resource::Data, Resource::Cpu, Resource::Nofile, Resource::Fsize, Resource::Core];

fn put(v: &mut Vec<u8>, b: &[u8]) {
    v.extend_from_slice(&(b.len() as u32).to_le_bytes());
    v.extend_from_slice(b);
}

/// One length-prefixed field of an encoded job at `*at`, and where it started.
fn field<'a>(b: &'a [u8], at: &mut usize) -> Option<(usize, &'a [u8])> {
    let len = u32::from_le_bytes(b.get(*at..*at + 4)?.try_into().ok()?) as usize;
    let s = b.get(*at + 4..*at + 4 + len)?;
    let from = *at;
    *at += 4 + len;
    Some((from, s))
}

fn num(s: &[u8]) -> Option<u64> {
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// The fields of a job in order: `id`, `has_stdin`, then the program cache's key (`exec`,
/// `cwd`, the number of args and each arg: what a worker loads depends on these only),
/// the cache's bounds, the environment, the limits.
impl Job {
    pub fn encode(&self) -> Vec<u8> {
        let mut v = Vec::new();
        put(&mut v, self.id.to_string().as_bytes());
        put(&mut v, if self.has_stdin { b"1" } else { b"0" });
        put(&mut v, self.exec.as_deref().map_or(&b""[..], |p| p.as_os_str().as_bytes()));
        put(&mut v, self.cwd.as_os_str().as_bytes());
        put(&mut v, self.args.len().to_string().as_bytes());
        for a in &self.args {
            put(&mut v, a.as_bytes());
        }
        let b = &self.cache;
        put(&mut v, format!("{}:{}:{}", b.entries, b.bytes, b.min_age_ms).as_bytes());
        let p = &self.spares;
        put(&mut v, format!("{}:{}", p.count, p.generation).as_bytes());
        put(&mut v, self.env.len().to_string().as_bytes());
        for (k, val) in &self.env {
            put(&mut v, &[k.as_bytes(), b"\0", val.as_bytes()].concat());
        }
        put(&mut v, self.limits.len().to_string().as_bytes());
        for (r, n) in &self.limits {
            put(&mut v, format!("{r}:{n}").as_bytes());
        }
        v
    }

    /// What the warm process reads of a job for the program cache, without allocating and
    /// without the request's environment: the cache key (the encoded `exec`, `cwd` and
    /// args, one slice of `b`), whether the worker execs, and the cache's bounds.
    pub fn peek_run(b: &[u8]) -> Option<(&[u8], bool, crate::program_cache::Bounds)> {
        let mut at = 0usize;
        field(b, &mut at)?;
        field(b, &mut at)?;
        let (from, exec) = field(b, &mut at)?;
        field(b, &mut at)?;
        let n = num(field(b, &mut at)?.1)?;
        for _ in 0..n {
            field(b, &mut at)?;
        }
        let key = b.get(from..at)?;
        let bounds = Self::bounds(field(b, &mut at)?.1)?;
        Some((key, !exec.is_empty(), bounds))
    }

    /// The directory and command line in a cache key (`peek_run`).
    pub fn key_run(key: &[u8]) -> Option<(PathBuf, Vec<OsString>)> {
        let mut at = 0usize;
        field(key, &mut at)?;
        let cwd = PathBuf::from(OsStr::from_bytes(field(key, &mut at)?.1));
        let n = num(field(key, &mut at)?.1)? as usize;
        let mut args = Vec::new();
        for _ in 0..n {
            args.push(OsStr::from_bytes(field(key, &mut at)?.1).to_owned());
        }
        (at == key.len()).then_some((cwd, args))
    }

    /// The spares' part of an encoded job (after the cache's bounds), without allocating.
    pub fn peek_spares(b: &[u8]) -> Option<Spares> {
        let mut at = 0usize;
        for _ in 0..4 {
            field(b, &mut at)?;
        }
        let n = num(field(b, &mut at)?.1)?;
        for _ in 0..n + 1 {
            field(b, &mut at)?;
        }
        Self::spares(field(b, &mut at)?.1)
    }

    fn spares(s: &[u8]) -> Option<Spares> {
        let mut f = std::str::from_utf8(s).ok()?.split(':').map(|x| x.parse::<u64>().ok());
        let p = Spares { count: f.next()??, generation: f.next()?? };
        f.next().is_none().then_some(p)
    }

    fn bounds(s: &[u8]) -> Option<crate::program_cache::Bounds> {
        let mut f = std::str::from_utf8(s).ok()?.split(':').map(|x| x.parse::<u64>().ok());
        let b = crate::program_cache::Bounds { entries: f.next()??, bytes: f.next()??, min_age_ms: f.next()?? };
        f.next().is_none().then_some(b)
    }

    /// The id of an encoded job (its first field), without decoding the rest.
    pub fn peek_id(b: &[u8]) -> Option<u64> {
        num(field(b, &mut 0)?.1)
    }

    pub fn decode(b: &[u8]) -> Option<Job> {
        let mut at = 0usize;
        let mut next = || field(b, &mut at).map(|f| f.1);
        let id = num(next()?)?;
        let has_stdin = next()? == b"1";
        let exec = next()?;
        let exec = (!exec.is_empty()).then(|| PathBuf::from(OsStr::from_bytes(exec)));
        let cwd = PathBuf::from(OsStr::from_bytes(next()?));
        let n = num(next()?)? as usize;
        let mut args = Vec::new();
        for _ in 0..n {
            args.push(OsStr::from_bytes(next()?).to_owned());
        }
        let cache = Self::bounds(next()?)?;
        let spares = Self::spares(next()?)?;
        let n = num(next()?)? as usize;
        let mut env = Vec::new();
        for _ in 0..n {
            let kv = next()?;
            let i = kv.iter().position(|&c| c == 0)?;
            env.push((OsStr::from_bytes(&kv[..i]).to_owned(), OsStr::from_bytes(&kv[i + 1..]).to_owned()));
        }
        let n = num(next()?)? as usize;
        let mut limits = Vec::new();
        for _ in 0..n {
            let s = std::str::from_utf8(next()?).ok()?;
            let (r, v) = s.split_once(':')?;
            let r: u8 = r.parse().ok()?;
            if r as usize >= RESOURCES.len() {
                return None;
            }
            limits.push((r, v.parse().ok()?));
        }
        Some(Job { id, exec, cwd, has_stdin, args, env, limits, cache, spares })
    }
}

/// In a process just forked from the warm process: the warm process's descriptors
/// (its workers', spares' and retired spares' pipes and sockets) closed, so that none
/// stays open in a worker or a spare.
fn close_warm(kids: &mut Vec<(u64, Pid, OwnedFd)>, spares: &mut Vec<SpareWorker>, retired: &mut Vec<(Pid, OwnedFd)>) {
    drop(std::mem::take(kids));
    drop(std::mem::take(spares));
    drop(std::mem::take(retired));
}

/// What the warm process tells the server: `S id pid`, `E id code signal`, `F id why`.
fn report(ctl: &impl AsFd, text: &str) {
    let _ = rustix::net::send(ctl, text.as_bytes(), SendFlags::NOSIGNAL);
}

// ---------------------------------------------------------------------------
// The warm process
// ---------------------------------------------------------------------------

/// `leash --fastcgi-zygote`: the warm process (the `leash` binary, so that `leash-cgi`
/// stays small for CGI mode). Its stdin is the control socket.
pub fn zygote_main() -> i32 {
    // Only `leash-cgi --fastcgi` starts it: with an empty environment, one argument, and
    // a SOCK_SEQPACKET socket as stdin. A web server running `leash` as a CGI program
    // (GATEWAY_INTERFACE set; stdin a pipe or a stream socket) gets nothing from it.
    let seqpacket =
        rustix::net::sockopt::socket_type(std::io::stdin()).is_ok_and(|t| t == rustix::net::SocketType::SEQPACKET);
    if std::env::var_os("GATEWAY_INTERFACE").is_some() || std::env::args_os().count() != 2 || !seqpacket {
        log_line("leash: --fastcgi-zygote is started by leash-cgi --fastcgi only");
        return 2;
    }
    // Descriptors its parent's parent leaked (a shell's, a supervisor's) go first: they
    // would reach every worker. Nothing of ours is open yet.
    if let Err(m) = leash_alloc::close_inherited_descriptors() {
        log_line(&format!("leash-cgi: warm process: {m}"));
        return 1;
    }
    // Room for the interpreter on the main thread (see `MAIN_STACK`): raise the stack's
    // soft limit and start again, so that the kernel lays the process out with that much
    // room below the stack. Once only: after the exec the limit is there.
    match main_stack() {
        MainStack::Ready => MAIN_STACK.store(true, SeqCst),
        MainStack::Raised => {
            if let Ok(exe) = std::env::current_exe() {
                let e = Command::new(exe).arg("--fastcgi-zygote").exec();
                log_line(&format!("leash-cgi: warm process: cannot start again with a larger stack: {e}"));
            }
        }
        MainStack::No => {}
    }
    if MAIN_STACK.load(SeqCst) {
        // The stdlib's modules parsed once, here: each worker copies the trees instead of
        // parsing them again (they are part of the binary: nothing of a script is read).
        crate::source::warm_stdlib();
    }
    let ctl = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(e) => {
            log_line(&format!("leash-cgi: warm process: no control socket: {e}"));
            return 1;
        }
    };
    if let Ok(null) = std::fs::File::open("/dev/null") {
        let _ = rustix::stdio::dup2_stdin(&null);
    }
    // What a run would load lazily anyway and never changes: the stdlib's sources are
    // in the binary already; nothing of a script is touched here.
    let mut kids: Vec<(u64, Pid, OwnedFd)> = Vec::new();
    // Spare workers: forked ahead of requests, each waiting on a socket of its own for one
    // job (`spare`); `retired` ones were told to go and are reaped when they have.
    let mut spares: Vec<SpareWorker> = Vec::new();
    let mut retired: Vec<(Pid, OwnedFd)> = Vec::new();
    let mut want = Spares::default();
    let mut buf = vec![0u8; JOB_MAX_BYTES];
    loop {
        // One spare fewer than wanted: forked once nothing else waits.
        let short = (spares.len() as u64) < want.count;
        let (ctl_ready, ctl_gone, done, lost, reaped, idle) = {
            use rustix::event::{PollFd, PollFlags};
            let mut fds: Vec<PollFd> = Vec::with_capacity(1 + kids.len() + spares.len() + retired.len());
            fds.push(PollFd::new(&ctl, PollFlags::IN));
            for (_, _, pfd) in &kids {
                fds.push(PollFd::new(pfd, PollFlags::IN));
            }
            for s in &spares {
                fds.push(PollFd::new(&s.pfd, PollFlags::IN));
            }
            for (_, pfd) in &retired {
                fds.push(PollFd::new(pfd, PollFlags::IN));
            }
            let zero = rustix::event::Timespec { tv_sec: 0, tv_nsec: 0 };
            let ready = match rustix::event::poll(&mut fds, short.then_some(&zero)) {
                Ok(k) => k,
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => {
                    log_line(&format!("leash-cgi: warm process: poll: {e}"));
                    return stop_kids(&kids, &spares, &retired);
                }
            };
            let r = fds[0].revents();
            let (k, s) = (kids.len(), spares.len());
            let fired = |from: usize, to: usize| -> Vec<usize> {
                (from..to).filter(|&i| !fds[i].revents().is_empty()).map(|i| i - from).collect()
            };
            (
                r.contains(PollFlags::IN),
                r.intersects(PollFlags::HUP | PollFlags::ERR),
                fired(1, 1 + k),
                fired(1 + k, 1 + k + s),
                fired(1 + k + s, fds.len()),
                ready == 0,
            )
        };
        for &i in done.iter().rev() {
            let (id, pid, _) = &kids[i];
            match rustix::process::waitpid(Some(*pid), rustix::process::WaitOptions::NOHANG) {
                Ok(Some((_, st))) => {
                    let code = st.exit_status().map_or("-".to_string(), |c| c.to_string());
                    let sig = st.terminating_signal().map_or("-".to_string(), |c| c.to_string());
                    report(&ctl, &format!("E {id} {code} {sig}"));
                    kids.remove(i);
                }
                Ok(None) => {}
                Err(_) => {
                    report(&ctl, &format!("E {id} - -"));
                    kids.remove(i);
                }
            }
        }
        // A spare that ended before it had a request (killed from outside): reaped.
        for &i in lost.iter().rev() {
            let pid = spares[i].pid;
            if !matches!(rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG), Ok(None)) {
                spares.remove(i);
            }
        }
        for &i in reaped.iter().rev() {
            let pid = retired[i].0;
            if !matches!(rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::NOHANG), Ok(None)) {
                retired.remove(i);
            }
        }
        if ctl_ready {
            let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(3))];
            let mut control = RecvAncillaryBuffer::new(&mut space);
            let got =
                rustix::net::recvmsg(&ctl, &mut [IoSliceMut::new(&mut buf)], &mut control, RecvFlags::CMSG_CLOEXEC);
            let n = match got {
                Ok(m) if m.bytes == 0 => return stop_kids(&kids, &spares, &retired),
                Ok(m) => m.bytes,
                Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => continue,
                Err(_) => return stop_kids(&kids, &spares, &retired),
            };
            let mut fds: Vec<OwnedFd> = Vec::new();
            for msg in control.drain() {
                if let RecvAncillaryMessage::ScmRights(rights) = msg {
                    fds.extend(rights);
                }
            }
            // Only the job's id is read here; the worker decodes the rest. (What the warm
            // process allocates and frees after a fork lands on pages it shares with its
            // workers, each write a page copied: it does as little as it can.)
            let Some(id) = Job::peek_id(&buf[..n]) else {
                buf[..n].fill(0);
                log_line("leash-cgi: warm process: a malformed job message (ignored)");
                continue;
            };
            if fds.len() != 3 {
                buf[..n].fill(0);
                report(&ctl, &format!("F {id} the worker's descriptors did not arrive"));
                continue;
            }
            // The configuration as of this job: spares forked under an older one (before
            // a reload), or more than it wants now, are retired.
            if let Some(sp) = Job::peek_spares(&buf[..n]) {
                if sp.generation != want.generation {
                    for s in spares.drain(..) {
                        retired.push(s.retire());
                    }
                }
                while spares.len() as u64 > sp.count {
                    retired.push(spares.remove(0).retire());
                }
                want = sp;
            }
            // The program cache (`program_cache.rs`): the script's loaded program, found
            // or loaded now, chosen for the worker forked next. Only for workers that run
            // on the thread the warm process loads on.
            let cached = match Job::peek_run(&buf[..n]) {
                Some((key, false, b)) if MAIN_STACK.load(SeqCst) => {
                    crate::program_cache::prepare(key, || Job::key_run(key), b)
                }
                _ => crate::program_cache::Outcome::None,
            };
            let serial = crate::program_cache::chosen_serial();
            // A spare serves it when one holds the chosen program (any, when none was
            // chosen); the oldest such first. The job and its descriptors go over the
            // spare's socket; from then on it is a worker like one forked now.
            let mut served = false;
            // (A spare receives into its copy of `buf`: the job and the 8-byte number must fit.)
            let fits = n + 8 <= buf.len();
            while let Some(i) = spares.iter().position(|s| fits && s.serial >= serial) {
                let s = spares.remove(i);
                match s.give(serial, &buf[..n], &fds) {
                    Ok(()) => {
                        report(&ctl, &format!("S {id} {} {} spare", s.pid.as_raw_nonzero(), cached.name()));
                        kids.push((id, s.pid, s.pfd));
                        served = true;
                        break;
                    }
                    Err(_) => retired.push(s.retire()),
                }
            }
            if served {
                crate::program_cache::clear_choice();
                buf[..n].fill(0);
                drop(fds);
                continue;
            }
            // No spare holds the chosen program (cached after they were forked): one of
            // those is retired, so that the next one forked does.
            if serial > 0 {
                if let Some(i) = (0..spares.len()).min_by_key(|&i| spares[i].serial) {
                    retired.push(spares.remove(i).retire());
                }
            }
            match leash_alloc::fork() {
                Ok(leash_alloc::Forked::Child) => {
                    // Nothing of the warm process's descriptors stays open in the worker.
                    close_warm(&mut kids, &mut spares, &mut retired);
                    drop(ctl);
                    let job = Job::decode(&buf[..n]);
                    drop(buf);
                    match job {
                        Some(job) => worker(job, fds),
                        None => {
                            log_line("leash-cgi: worker: a malformed job message");
                            leash_alloc::exit_now(125)
                        }
                    }
                }
                Ok(leash_alloc::Forked::Parent(p)) => {
                    crate::program_cache::clear_choice();
                    // The request's variables are not left in the warm process's memory.
                    buf[..n].fill(0);
                    drop(fds);
                    let Some(pid) = Pid::from_raw(p) else { continue };
                    match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
                        Ok(pfd) => {
                            report(&ctl, &format!("S {id} {p} {} forked", cached.name()));
                            kids.push((id, pid, pfd));
                        }
                        Err(e) => {
                            // Cannot watch it: kill and reap it now.
                            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
                            report(&ctl, &format!("F {id} pidfd_open: {e}"));
                        }
                    }
                }
                Err(m) => {
                    crate::program_cache::clear_choice();
                    buf[..n].fill(0);
                    report(&ctl, &format!("F {id} {m}"));
                }
            }
        } else if ctl_gone {
            return stop_kids(&kids, &spares, &retired);
        } else if short && idle {
            // Nothing waits: a spare is forked now, off any request's path. It is a copy
            // of this process between requests (no request's bytes: `buf` is zeroed after
            // each job), with the program cache as it is now.
            let pair = rustix::net::socketpair(
                rustix::net::AddressFamily::UNIX,
                rustix::net::SocketType::SEQPACKET,
                rustix::net::SocketFlags::CLOEXEC,
                None,
            );
            let Ok((ours, theirs)) = pair else {
                want.count = spares.len() as u64;
                continue;
            };
            let _ = rustix::net::sockopt::set_socket_send_buffer_size(&ours, 2 * JOB_MAX_BYTES);
            let _ = rustix::net::sockopt::set_socket_recv_buffer_size(&theirs, 2 * JOB_MAX_BYTES);
            let serial = crate::program_cache::newest_serial();
            match leash_alloc::fork() {
                Ok(leash_alloc::Forked::Child) => {
                    close_warm(&mut kids, &mut spares, &mut retired);
                    drop(ctl);
                    drop(ours);
                    spare(theirs, buf)
                }
                Ok(leash_alloc::Forked::Parent(p)) => {
                    drop(theirs);
                    let pid = Pid::from_raw(p);
                    match pid.map(|pid| (pid, rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()))) {
                        Some((pid, Ok(pfd))) => {
                            spares.push(SpareWorker { pid, pfd, sock: ours, serial });
                        }
                        Some((pid, Err(_))) => {
                            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
                            want.count = spares.len() as u64;
                        }
                        None => {}
                    }
                }
                Err(m) => {
                    // No spares until the next job says again how many (requests are
                    // served by forks meanwhile).
                    log_line(&format!("leash-cgi: warm process: a spare worker: {m}"));
                    want.count = spares.len() as u64;
                }
            }
        }
    }
}

/// A spare worker as the warm process holds it: its pid and pidfd, the socket its job
/// goes over, and the newest program cache entry it holds (`program_cache::newest_serial`
/// when it was forked).
struct SpareWorker {
    pid: Pid,
    pfd: OwnedFd,
    sock: OwnedFd,
    serial: u64,
}

impl SpareWorker {
    /// Pass the job: the chosen program's number, the encoded job, the three pipes.
    fn give(&self, serial: u64, job: &[u8], fds: &[OwnedFd]) -> rustix::io::Result<()> {
        let borrowed: Vec<_> = fds.iter().map(|f| f.as_fd()).collect();
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(3))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&borrowed));
        let head = serial.to_le_bytes();
        let sent = rustix::net::sendmsg(
            &self.sock,
            &[IoSlice::new(&head), IoSlice::new(job)],
            &mut control,
            SendFlags::NOSIGNAL,
        )?;
        if sent == head.len() + job.len() {
            Ok(())
        } else {
            Err(rustix::io::Errno::MSGSIZE)
        }
    }

    /// Tell it to go (its socket closed: it exits) and make sure (SIGKILL); reaped later.
    fn retire(self) -> (Pid, OwnedFd) {
        drop(self.sock);
        let _ = rustix::process::kill_process(self.pid, rustix::process::Signal::KILL);
        (self.pid, self.pfd)
    }
}

/// A spare worker: a process forked from the warm process between requests, that waits
/// for one job on `sock` and then is that job's worker (never returns). It has run
/// nothing and holds nothing of any request. When its socket closes (the warm process
/// retired it, or ended) it exits.
fn spare(sock: OwnedFd, mut buf: Vec<u8>) -> ! {
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(3))];
    let (n, fds) = loop {
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = rustix::net::recvmsg(&sock, &mut [IoSliceMut::new(&mut buf)], &mut control, RecvFlags::CMSG_CLOEXEC);
        match got {
            Ok(m) if m.bytes == 0 => leash_alloc::exit_now(0),
            Ok(m) => {
                let mut fds: Vec<OwnedFd> = Vec::new();
                for msg in control.drain() {
                    if let RecvAncillaryMessage::ScmRights(rights) = msg {
                        fds.extend(rights);
                    }
                }
                break (m.bytes, fds);
            }
            Err(rustix::io::Errno::INTR) => continue,
            Err(_) => leash_alloc::exit_now(0),
        }
    };
    drop(sock);
    let serial = buf.get(..8).and_then(|h| h.try_into().ok()).map_or(0, u64::from_le_bytes);
    if serial > 0 {
        // The program the warm process found fresh for this job, from the cache as it was
        // when this spare was forked (not found: the worker loads the script itself).
        crate::program_cache::choose(serial);
    }
    let job = if n >= 8 && fds.len() == 3 { Job::decode(&buf[8..n]) } else { None };
    drop(buf);
    match job {
        Some(job) => worker(job, fds),
        None => {
            log_line("leash-cgi: worker: a malformed job message");
            leash_alloc::exit_now(125)
        }
    }
}

/// The stack the main thread may grow to, so that a worker runs the interpreter on it:
/// the interpreter thread's stack (`INTERP_STACK_BYTES`) and room for what is below it.
const MAIN_STACK_BYTES: u64 = INTERP_STACK_BYTES as u64 + 16 * MIB as u64;

/// Whether the warm process's main thread may grow its stack to `MAIN_STACK_BYTES`: then
/// a worker runs the interpreter on its main thread (the one it was forked on), which
/// keeps what the warm process prepared on that thread (`source::warm_stdlib`'s parsed
/// stdlib) and saves a thread per request. Otherwise it starts an interpreter thread as
/// the `leash` binary does.
static MAIN_STACK: AtomicBool = AtomicBool::new(false);

enum MainStack {
    /// The soft limit is high enough (and was at exec, so the layout has the room).
    Ready,
    /// The soft limit was raised now: an exec makes the room.
    Raised,
    /// The hard limit does not allow it.
    No,
}

fn main_stack() -> MainStack {
    let l = rustix::process::getrlimit(Resource::Stack);
    if l.current.is_none_or(|c| c >= MAIN_STACK_BYTES) {
        return MainStack::Ready;
    }
    if l.maximum.is_some_and(|m| m < MAIN_STACK_BYTES) {
        return MainStack::No;
    }
    let raised = Rlimit { current: Some(MAIN_STACK_BYTES), maximum: l.maximum };
    match rustix::process::setrlimit(Resource::Stack, raised) {
        Ok(()) => MainStack::Raised,
        Err(_) => MainStack::No,
    }
}

/// The server went away: its workers (running, spare, retired) go too.
fn stop_kids(kids: &[(u64, Pid, OwnedFd)], spares: &[SpareWorker], retired: &[(Pid, OwnedFd)]) -> i32 {
    let pids = kids.iter().map(|k| k.1).chain(spares.iter().map(|s| s.pid)).chain(retired.iter().map(|r| r.0));
    let pids: Vec<Pid> = pids.collect();
    for pid in &pids {
        // Its group (a worker leads its own), and itself (a worker that has not yet).
        let _ = rustix::process::kill_process_group(*pid, rustix::process::Signal::KILL);
        let _ = rustix::process::kill_process(*pid, rustix::process::Signal::KILL);
    }
    for pid in &pids {
        let _ = rustix::process::waitpid(Some(*pid), rustix::process::WaitOptions::empty());
    }
    0
}

/// The worker: set up the process, then run the script (never returns).
fn worker(job: Job, mut fds: Vec<OwnedFd>) -> ! {
    let fail = |what: &str, e: &dyn std::fmt::Display| -> ! {
        log_line(&format!("leash-cgi: worker: {what}: {e}"));
        std::process::exit(125);
    };
    if let Err(e) = rustix::process::setsid() {
        fail("setsid", &e);
    }
    let err = fds.pop().expect("three descriptors");
    let out = fds.pop().expect("three descriptors");
    let inp = fds.pop().expect("three descriptors");
    let stdin: OwnedFd = if job.has_stdin {
        inp
    } else {
        drop(inp);
        match std::fs::File::open("/dev/null") {
            Ok(f) => OwnedFd::from(f),
            Err(e) => fail("/dev/null", &e),
        }
    };
    if let Err(e) = rustix::stdio::dup2_stdin(&stdin)
        .and_then(|_| rustix::stdio::dup2_stdout(&out))
        .and_then(|_| rustix::stdio::dup2_stderr(&err))
    {
        fail("dup2", &e);
    }
    drop((stdin, out, err));
    // The program cache's share of the data segment is the warm process's, not the
    // script's: RLIMIT_DATA (index 0) is raised by it.
    let extra = if job.exec.is_none() { crate::program_cache::extra_data() } else { 0 };
    for &(r, v) in &job.limits {
        let v = if r == 0 { v.saturating_add(extra) } else { v };
        let r = RESOURCES[r as usize];
        if let Err(e) = rustix::process::setrlimit(r, Rlimit { current: Some(v), maximum: Some(v) }) {
            fail(&format!("setrlimit {r:?}"), &e);
        }
    }
    if let Err(e) = std::env::set_current_dir(&job.cwd) {
        fail("chdir", &e);
    }
    // The request's environment and nothing else.
    let old: Vec<OsString> = std::env::vars_os().map(|(k, _)| k).collect();
    for k in old {
        std::env::remove_var(k);
    }
    for (k, v) in &job.env {
        std::env::set_var(k, v);
    }
    if let Some(interp) = &job.exec {
        let e = Command::new(interp).args(&job.args).exec();
        fail(&format!("cannot start the interpreter {}", interp.display()), &e);
    }
    let code = run_interpreter(job.args);
    // What the script wrote is flushed; then the process ends without running the warm
    // process's destructors (see `leash_alloc::exit_now`).
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    leash_alloc::exit_now(code)
}

/// Run `leash ARGS` in this process, as the `leash` binary's `main` does: on a thread
/// with the interpreter's stack (or on this thread, when its stack may grow as far: see
/// `MAIN_STACK`), a panic reported as an internal error (exit 70).
fn run_interpreter(args: Vec<OsString>) -> i32 {
    // The run's clock (the meter's), as in the `leash` binary's `main`.
    let started = crate::meter::now();
    let (json, stats) = crate::cli::prescan(&args);
    let panic_msg = crate::app::capture_panics();
    if MAIN_STACK.load(SeqCst) {
        crate::memory::count_this_thread();
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| crate::app::main(args, started)));
        return match r {
            Ok(code) => code,
            Err(_) => {
                let msg = panic_msg.lock().ok().and_then(|g| g.clone()).unwrap_or_else(|| "interpreter failed".into());
                crate::app::report_internal(&msg, json, stats, started);
                70
            }
        };
    }
    let t = std::thread::Builder::new().stack_size(INTERP_STACK_BYTES).spawn(move || {
        crate::memory::count_this_thread();
        crate::app::main(args, started)
    });
    match t.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            let msg =
                panic_msg.lock().ok().and_then(|g| g.clone()).unwrap_or_else(|| "interpreter thread failed".into());
            crate::app::report_internal(&msg, json, stats, started);
            70
        }
    }
}

// ---------------------------------------------------------------------------
// The server's side of the warm process
// ---------------------------------------------------------------------------

/// What a request's supervisor hears about its worker.
#[derive(Debug)]
enum W {
    /// The worker's pid, what the program cache did for it (`hit`, `new`, `none`), and
    /// whether it was a spare (`spare`) or forked for the request (`forked`).
    Started(i32, &'static str, &'static str),
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
    },
    Failed(String),
}

/// Events of one connection: its records, and its current request's worker.
enum Ev {
    Rec(Record),
    Closed(String),
    Worker(u64, W),
}

/// Where a connection's events go: its channel, and its bell (an eventfd rung after each
/// event, so that a supervisor waiting in `poll` on its worker's pipes wakes for them).
#[derive(Clone)]
struct Tx {
    tx: Sender<Ev>,
    bell: Arc<OwnedFd>,
}

impl Tx {
    fn new(tx: Sender<Ev>) -> std::io::Result<Tx> {
        let flags = rustix::event::EventfdFlags::CLOEXEC | rustix::event::EventfdFlags::NONBLOCK;
        let bell = rustix::event::eventfd(0, flags).map_err(std::io::Error::from)?;
        Ok(Tx { tx, bell: Arc::new(bell) })
    }

    fn send(&self, ev: Ev) -> Result<(), ()> {
        self.tx.send(ev).map_err(|_| ())?;
        let _ = rustix::io::write(&*self.bell, &1u64.to_ne_bytes());
        Ok(())
    }
}

struct Zygote {
    sock: Mutex<Option<Arc<OwnedFd>>>,
    pending: Mutex<HashMap<u64, Tx>>,
    next: AtomicU64,
}

impl Zygote {
    /// Send a job with its three descriptors (stdin, stdout, stderr); its events go to `tx`.
    fn start(&self, job: &Job, fds: [&OwnedFd; 3], tx: Tx) -> Result<(), String> {
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
        self.pending.lock().map_err(|_| "lock")?.insert(job.id, tx);
        let bytes = job.encode();
        if bytes.len() > JOB_MAX_BYTES {
            self.forget(job.id);
            return Err(format!("the request's environment is too big ({} bytes)", bytes.len()));
        }
        let borrowed = [fds[0].as_fd(), fds[1].as_fd(), fds[2].as_fd()];
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(3))];
        let mut control = SendAncillaryBuffer::new(&mut space);
        control.push(SendAncillaryMessage::ScmRights(&borrowed));
        match rustix::net::sendmsg(&*sock, &[IoSlice::new(&bytes)], &mut control, SendFlags::NOSIGNAL) {
            Ok(_) => Ok(()),
            Err(e) => {
                self.forget(job.id);
                Err(format!("cannot reach the warm process: {e}"))
            }
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut p) = self.pending.lock() {
            p.remove(&id);
        }
    }

    fn tell(&self, id: u64, w: W, done: bool) {
        let Ok(mut p) = self.pending.lock() else { return };
        if let Some(tx) = p.get(&id) {
            let _ = tx.send(Ev::Worker(id, w));
        }
        if done {
            p.remove(&id);
        }
    }
}

/// Keep a warm process running: start it, route its reports, start another when it dies.
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
        let ours = Arc::new(ours);
        if let Ok(mut s) = srv.zygote.sock.lock() {
            *s = Some(ours.clone());
        }
        let mut buf = [0u8; 512];
        loop {
            let n = match rustix::net::recv(&*ours, &mut buf, RecvFlags::empty()) {
                Ok((0, _)) => break,
                Ok((n, _)) => n,
                Err(rustix::io::Errno::INTR) => continue,
                Err(_) => break,
            };
            let text = String::from_utf8_lossy(&buf[..n.min(buf.len())]).into_owned();
            let mut parts = text.splitn(3, ' ');
            let (kind, id, rest) = (parts.next(), parts.next(), parts.next().unwrap_or(""));
            let Some(id) = id.and_then(|i| i.parse::<u64>().ok()) else { continue };
            match kind {
                Some("S") => {
                    let mut f = rest.split(' ');
                    if let Some(Ok(p)) = f.next().map(str::parse) {
                        let cache = match f.next() {
                            Some("hit") => "hit",
                            Some("new") => "new",
                            _ => "none",
                        };
                        let how = if f.next() == Some("spare") { "spare" } else { "forked" };
                        srv.zygote.tell(id, W::Started(p, cache, how), false)
                    }
                }
                Some("E") => {
                    let mut f = rest.split(' ');
                    let code = f.next().and_then(|c| c.parse().ok());
                    let signal = f.next().and_then(|c| c.parse().ok());
                    srv.zygote.tell(id, W::Exited { code, signal }, true);
                }
                Some("F") => srv.zygote.tell(id, W::Failed(rest.to_string()), true),
                _ => {}
            }
        }
        if let Ok(mut s) = srv.zygote.sock.lock() {
            *s = None;
        }
        drop(ours);
        let st = child.wait();
        let pending: Vec<(u64, Tx)> = srv.zygote.pending.lock().map(|mut p| p.drain().collect()).unwrap_or_default();
        for (id, tx) in pending {
            let _ = tx.send(Ev::Worker(id, W::Failed("the warm process died".into())));
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

struct Server {
    config_path: OsString,
    /// The configuration, and its generation (bumped by each reload: the warm process
    /// retires spare workers forked under an older one).
    cfg: RwLock<(Arc<Config>, u64)>,
    zygote: Zygote,
    admit: Mutex<(u64, u64)>,
    admitted: Condvar,
    stopping: AtomicBool,
    /// Requests between BEGIN_REQUEST and their end (what SIGTERM waits for).
    busy: AtomicUsize,
    conns: AtomicUsize,
    /// Where each worker gets a private, empty TMPDIR (removed after its request).
    tmp_base: PathBuf,
    /// Empty private directories kept for reuse as TMPDIRs (`WorkerTmp`): a rename
    /// instead of a mkdir and an rmdir per request (on ext4 with discard, an rmdir frees
    /// an inode and a block through the journal: about a fifth of the server's CPU).
    spare_base: PathBuf,
    spares: Mutex<Vec<PathBuf>>,
}

impl Server {
    fn config(&self) -> Arc<Config> {
        self.config_gen().0
    }

    fn config_gen(&self) -> (Arc<Config>, u64) {
        self.cfg.read().map(|c| c.clone()).unwrap_or_else(|p| p.into_inner().clone())
    }

    /// Wait for a worker slot until `until`: `Err` when the queue is full or the wait ends.
    fn admit(&self, cfg: &Config, until: Instant) -> Result<Slot<'_>, String> {
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
struct Slot<'a>(&'a Server);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut g) = self.0.admit.lock() {
            g.0 = g.0.saturating_sub(1);
        }
        self.0.admitted.notify_one();
    }
}

/// A connection from the web server.
enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    fn try_clone(&self) -> std::io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
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
        zygote: Zygote { sock: Mutex::new(None), pending: Mutex::new(HashMap::new()), next: AtomicU64::new(1) },
        admit: Mutex::new((0, 0)),
        admitted: Condvar::new(),
        stopping: AtomicBool::new(false),
        busy: AtomicUsize::new(0),
        conns: AtomicUsize::new(0),
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
    // Accept until stopping (a non-blocking listener, looked at every 50 ms when idle).
    let nonblock = match &listener {
        Listener::Unix(l, _) => l.set_nonblocking(true),
        Listener::Tcp(l) => l.set_nonblocking(true),
    };
    if let Err(e) = nonblock {
        log_line(&format!("leash-cgi: {e}"));
        return 1;
    }
    let lfd = match &listener {
        Listener::Unix(l, _) => l.as_fd(),
        Listener::Tcp(l) => l.as_fd(),
    };
    while !srv.stopping.load(SeqCst) {
        let accepted = match &listener {
            Listener::Unix(l, _) => l.accept().map(|(s, _)| Conn::Unix(s)),
            Listener::Tcp(l) => l.accept().map(|(s, _)| {
                let _ = s.set_nodelay(true);
                Conn::Tcp(s)
            }),
        };
        match accepted {
            Ok(c) => {
                let _ = match &c {
                    Conn::Unix(s) => s.set_nonblocking(false),
                    Conn::Tcp(s) => s.set_nonblocking(false),
                };
                if srv.conns.load(SeqCst) >= FCGI_MAX_CONNS {
                    log_line(&format!("leash-cgi: a connection refused: {FCGI_MAX_CONNS} are open"));
                    c.shutdown();
                    continue;
                }
                srv.conns.fetch_add(1, SeqCst);
                let s = srv.clone();
                let spawned = spawn_pooled(Box::new(move || {
                    connection(&s, c);
                    s.conns.fetch_sub(1, SeqCst);
                }));
                if spawned.is_err() {
                    srv.conns.fetch_sub(1, SeqCst);
                    log_line("leash-cgi: cannot start a thread for a connection");
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let mut p = [rustix::event::PollFd::new(&lfd, rustix::event::PollFlags::IN)];
                let _ = rustix::event::poll(&mut p, Some(&rustix::event::Timespec { tv_sec: 0, tv_nsec: 50_000_000 }));
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                log_line(&format!("leash-cgi: accept: {e}"));
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    // Drain: no new connections; running requests finish (at most their deadline).
    if let Listener::Unix(_, p) = &listener {
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
fn private_dir(p: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new().mode(0o700).create(p)
}

/// Serve one connection: requests one after another (no multiplexing).
fn connection(srv: &Arc<Server>, conn: Conn) {
    conn.set_write_timeout(WRITE_TIMEOUT);
    let (tx, rx) = mpsc::channel::<Ev>();
    let Ok(tx) = Tx::new(tx) else { return };
    let Ok(mut reader) = conn.try_clone() else { return };
    let rtx = tx.clone();
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let read_thread = spawn_pooled(Box::new(move || {
        loop {
            match fcgi::read_record(&mut reader) {
                Ok(Some(r)) => {
                    if rtx.send(Ev::Rec(r)).is_err() {
                        break;
                    }
                }
                Ok(None) => {
                    let _ = rtx.send(Ev::Closed("the web server closed the connection".into()));
                    break;
                }
                Err(e) => {
                    let _ = rtx.send(Ev::Closed(format!("reading from the web server: {e}")));
                    break;
                }
            }
        }
        drop(reader);
        let _ = done_tx.send(());
    }));
    if read_thread.is_err() {
        log_line("leash-cgi: cannot start a thread to read a connection");
        conn.shutdown();
        return;
    }
    let mut w = conn;
    loop {
        let ev = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok(e) => e,
            Err(RecvTimeoutError::Timeout) => {
                if srv.stopping.load(SeqCst) {
                    break;
                }
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match ev {
            Ev::Rec(r) if r.kind == fcgi::BEGIN_REQUEST && r.id != 0 => match fcgi::parse_begin(&r.content) {
                Ok((fcgi::RESPONDER, flags)) => {
                    srv.busy.fetch_add(1, SeqCst);
                    let ok = request(srv, &mut w, &rx, &tx, r.id);
                    srv.busy.fetch_sub(1, SeqCst);
                    if !ok || flags & fcgi::KEEP_CONN == 0 {
                        break;
                    }
                }
                Ok(_) => {
                    if w.write_all(&fcgi::end_request(r.id, 0, fcgi::UNKNOWN_ROLE)).is_err() {
                        break;
                    }
                }
                Err(_) => break,
            },
            Ev::Rec(r) => {
                if !other_record(srv, &mut w, &r, 0) {
                    break;
                }
            }
            Ev::Closed(_) => break,
            Ev::Worker(..) => {}
        }
    }
    w.shutdown();
    drop(rx);
    // The reader ends once the connection is shut down.
    let _ = done_rx.recv();
}

/// A task for a pooled thread.
type Task = Box<dyn FnOnce() + Send>;

/// Threads waiting for a task (each its own channel), most recently idle last.
static IDLE: Mutex<Vec<(u64, Sender<Task>)>> = Mutex::new(Vec::new());
static THREAD_IDS: AtomicU64 = AtomicU64::new(1);
/// How long an idle pooled thread waits for another task before it ends.
const POOL_IDLE: Duration = Duration::from_secs(30);

/// Run `task` on a thread of the pool: an idle one when there is one, else a new one
/// (which, its task done, waits `POOL_IDLE` for another). A connection costs its two
/// threads (its requests, its reader) only when more are open at once than before.
fn spawn_pooled(task: Task) -> std::io::Result<()> {
    let mut task = task;
    loop {
        let idle = IDLE.lock().ok().and_then(|mut v| v.pop());
        let Some((_, tx)) = idle else { break };
        match tx.send(task) {
            Ok(()) => return Ok(()),
            Err(mpsc::SendError(t)) => task = t,
        }
    }
    let id = THREAD_IDS.fetch_add(1, SeqCst);
    std::thread::Builder::new().spawn(move || {
        let (tx, rx) = mpsc::channel::<Task>();
        let mut next = Some(task);
        while let Some(t) = next.take() {
            t();
            if let Ok(mut v) = IDLE.lock() {
                v.push((id, tx.clone()));
            }
            next = match rx.recv_timeout(POOL_IDLE) {
                Ok(t) => Some(t),
                Err(_) => {
                    // Leave the pool; a task handed over meanwhile is still run.
                    let listed = IDLE.lock().map(|mut v| {
                        let at = v.iter().position(|(i, _)| *i == id);
                        at.map(|i| v.remove(i)).is_some()
                    });
                    if listed.unwrap_or(true) {
                        rx.try_recv().ok()
                    } else {
                        rx.recv().ok()
                    }
                }
            };
        }
    })?;
    Ok(())
}

/// A record that is not part of the current request (`current`): management records are
/// answered, a second request on the connection is refused (no multiplexing), the rest
/// (stray records of a request already answered) ignored. False: the connection failed.
fn other_record(srv: &Server, w: &mut Conn, r: &Record, current: u16) -> bool {
    let reply = match r.kind {
        fcgi::GET_VALUES if r.id == 0 => fcgi::get_values_result(&r.content, FCGI_MAX_CONNS, FCGI_MAX_CONNS),
        fcgi::BEGIN_REQUEST if r.id != current && r.id != 0 => fcgi::end_request(r.id, 0, fcgi::CANT_MPX_CONN),
        k if r.id == 0 => fcgi::unknown_type(k),
        _ => return true,
    };
    let _ = srv;
    w.write_all(&reply).is_ok()
}

/// The script a request names: SCRIPT_FILENAME (Apache's `proxy:fcgi://host:port` prefix
/// taken off), else PATH_TRANSLATED.
fn requested_script(vars: &[(OsString, OsString)]) -> Option<PathBuf> {
    let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone()).filter(|v| !v.is_empty());
    let v = get("SCRIPT_FILENAME").or_else(|| get("PATH_TRANSLATED"))?;
    let b = v.as_bytes();
    for prefix in [&b"proxy:fcgi://"[..], b"proxy:unix:"] {
        if let Some(rest) = b.strip_prefix(prefix) {
            // `proxy:fcgi://localhost/srv/x.lsh`: the path starts at the first `/`.
            let i = rest.iter().position(|&c| c == b'/')?;
            let path = &rest[i..];
            // `proxy:unix:/run/x.sock|fcgi://localhost/srv/x.lsh`
            if let Some(j) = path.windows(7).position(|x| x == b"fcgi://") {
                let r2 = &path[j + 7..];
                let k = r2.iter().position(|&c| c == b'/')?;
                return Some(PathBuf::from(OsStr::from_bytes(&r2[k..])));
            }
            return Some(PathBuf::from(OsStr::from_bytes(path)));
        }
    }
    Some(PathBuf::from(v))
}

/// Write a response for request `id`; false when the web server could not take it.
fn respond(w: &mut Conn, id: u16, body: &[u8], app_status: u32, e: &mut Entry) -> bool {
    match fcgi::write_response(w, id, body, app_status) {
        Ok(()) => true,
        Err(err) => {
            log_line(&format!("leash-cgi: script={:?}: the response could not be sent: {err}", e.script));
            false
        }
    }
}

/// What a request reads of its stdin.
struct Body {
    /// Bytes still to pass to the worker (CONTENT_LENGTH less what passed).
    left: u64,
    /// The worker's stdin, fed by a thread of its own; None once closed.
    tx: Option<Sender<Vec<u8>>>,
    ended: bool,
}

impl Body {
    fn take(&mut self, data: &[u8]) {
        if data.is_empty() {
            self.ended = true;
            self.tx = None;
            return;
        }
        let k = (data.len() as u64).min(self.left) as usize;
        self.left -= k as u64;
        if let Some(tx) = &self.tx {
            if k > 0 && tx.send(data[..k].to_vec()).is_err() {
                self.tx = None;
            }
        }
        if self.left == 0 {
            self.tx = None;
        }
    }
}

/// Serve the request `id` whose BEGIN_REQUEST has arrived. False: the connection is over.
fn request(srv: &Server, w: &mut Conn, rx: &Receiver<Ev>, tx: &Tx, id: u16) -> bool {
    let mut e = Entry::new(Instant::now());
    let finish = |e: &mut Entry, w: &mut Conn, resp: Vec<u8>, app: u32| -> bool {
        log_line(&e.line());
        respond(w, id, &resp, app, e)
    };
    // The PARAMS stream.
    let mut params: Vec<u8> = Vec::new();
    let mut over = false;
    loop {
        match rx.recv() {
            Ok(Ev::Rec(r)) if r.id == id && r.kind == fcgi::PARAMS => {
                if r.content.is_empty() {
                    break;
                }
                if params.len() + r.content.len() > FCGI_MAX_PARAMS_BYTES {
                    over = true;
                } else {
                    params.extend_from_slice(&r.content);
                }
            }
            Ok(Ev::Rec(r)) if r.id == id && r.kind == fcgi::ABORT_REQUEST => {
                return aborted(&mut e, w, id);
            }
            Ok(Ev::Rec(r)) => {
                if !other_record(srv, w, &r, id) {
                    return false;
                }
            }
            Ok(Ev::Closed(why)) => {
                return closed(&mut e, "before the request's parameters ended", &why);
            }
            Ok(Ev::Worker(..)) => {}
            Err(_) => return false,
        }
    }
    if srv.stopping.load(SeqCst) {
        let r = e.fail(503, "the server is stopping");
        return finish(&mut e, w, r, 0);
    }
    if over {
        let r = e.fail(400, format!("the request's parameters are over {FCGI_MAX_PARAMS_BYTES} bytes"));
        finish(&mut e, w, r, 0);
        return false;
    }
    let vars: Vec<(OsString, OsString)> = match fcgi::parse_pairs(&params) {
        Ok(p) => p.into_iter().map(|(k, v)| (OsString::from_vec(k), OsString::from_vec(v))).collect(),
        Err(m) => {
            let r = e.fail(400, format!("malformed PARAMS: {m}"));
            finish(&mut e, w, r, 0);
            return false;
        }
    };
    drop(params);
    let (cfg, generation) = srv.config_gen();
    let Some(requested) = requested_script(&vars) else {
        let r = e.fail(404, "no script: neither SCRIPT_FILENAME nor PATH_TRANSLATED is set");
        return finish(&mut e, w, r, 0);
    };
    e.script = requested.to_string_lossy().into_owned();
    let script = match gateway::resolve_script(&cfg.root, &requested) {
        Script::Found(p) => p,
        Script::NotFound(m) => {
            let r = e.fail(404, m);
            return finish(&mut e, w, r, 0);
        }
        Script::Forbidden(m) => {
            let r = e.fail(403, m);
            return finish(&mut e, w, r, 0);
        }
    };
    e.script = script.to_string_lossy().into_owned();
    let get = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let declared = get("CONTENT_LENGTH").filter(|v| !v.is_empty());
    let mut body_len = match gateway::request_length(declared.as_deref()) {
        Ok(n) => n,
        Err(m) => {
            let r = e.fail(400, m);
            return finish(&mut e, w, r, 0);
        }
    };
    if body_len > cfg.max_body_bytes {
        let r =
            e.fail(413, format!("request body of {body_len} bytes is over max_body_bytes ({})", cfg.max_body_bytes));
        return finish(&mut e, w, r, 0);
    }
    // A body without CONTENT_LENGTH (chunked, from Apache) is gathered first, within
    // max_body_bytes, and passed with its length.
    let mut held: Option<Vec<u8>> = None;
    let mut stdin_ended = false;
    if declared.is_none() {
        let mut b = Vec::new();
        loop {
            match rx.recv() {
                Ok(Ev::Rec(r)) if r.id == id && r.kind == fcgi::STDIN => {
                    if r.content.is_empty() {
                        break;
                    }
                    if (b.len() + r.content.len()) as u64 > cfg.max_body_bytes {
                        let r = e.fail(
                            413,
                            format!("request body (no CONTENT_LENGTH) over max_body_bytes ({})", cfg.max_body_bytes),
                        );
                        return finish(&mut e, w, r, 0);
                    }
                    b.extend_from_slice(&r.content);
                }
                Ok(Ev::Rec(r)) if r.id == id && r.kind == fcgi::ABORT_REQUEST => {
                    return aborted(&mut e, w, id);
                }
                Ok(Ev::Rec(r)) => {
                    if !other_record(srv, w, &r, id) {
                        return false;
                    }
                }
                Ok(Ev::Closed(why)) => {
                    return closed(&mut e, "while the body was read", &why);
                }
                Ok(Ev::Worker(..)) => {}
                Err(_) => return false,
            }
        }
        stdin_ended = true;
        body_len = b.len() as u64;
        if !b.is_empty() {
            e.add_note(format!("a body without CONTENT_LENGTH ({} bytes) passed with its length", b.len()));
            held = Some(b);
        }
    }
    let (allow, _) = gateway::allow_for(&cfg, &script);
    let env = worker_env(&vars, &cfg, &script, held.as_ref().map(|b| b.len() as u64));
    // A queued request waits for a worker at most FCGI_QUEUE_WAIT (its own deadline
    // starts when its worker does).
    let slot = match srv.admit(&cfg, Instant::now() + FCGI_QUEUE_WAIT) {
        Ok(s) => s,
        Err(m) => {
            let r = e.fail(503, m);
            return finish(&mut e, w, r, 0);
        }
    };
    let (resp, app, conn_ok) =
        supervise(srv, (&cfg, generation), allow, &script, env, body_len, held, stdin_ended, id, rx, tx, w, &mut e);
    drop(slot);
    log_line(&e.line());
    match resp {
        Some(resp) => respond(w, id, &resp, app, &mut e) && conn_ok,
        None => {
            // Aborted: the request ends without a response.
            let _ = w.write_all(&fcgi::end_request(id, 0, fcgi::REQUEST_COMPLETE));
            conn_ok
        }
    }
}

/// The worker's environment: the request's CGI variables and headers as CGI mode passes
/// them (SCRIPT_NAME as the web server gave it; PATH_INFO is not supported), `env_pass`
/// variables from the server's own environment, and the worker marker.
fn worker_env(
    vars: &[(OsString, OsString)],
    cfg: &Config,
    script: &Path,
    held_len: Option<u64>,
) -> Vec<(OsString, OsString)> {
    let mut v: Vec<(OsString, OsString)> = vars
        .iter()
        .filter(|(k, _)| k != "PATH_INFO" && !cfg.env_pass.iter().any(|p| k.as_bytes() == p.as_bytes()))
        .cloned()
        .collect();
    for n in &cfg.env_pass {
        if let Some(val) = std::env::var_os(n) {
            v.push((n.into(), val));
        }
    }
    if let Some(n) = held_len {
        v.retain(|(k, _)| k != "CONTENT_LENGTH");
        v.push(("CONTENT_LENGTH".into(), n.to_string().into()));
    }
    let mut env = gateway::worker_env(&v, &cfg.env_pass, script);
    env.retain(|(k, _)| k != "LEASH_CGI_WORKER");
    env.push(("LEASH_CGI_WORKER".into(), "1".into()));
    env
}

/// The `leash` binary: the configuration's `interpreter`, else the one beside `leash-cgi`.
fn interpreter(cfg: &Config) -> PathBuf {
    cfg.interpreter.clone().unwrap_or_else(|| {
        let me = std::env::current_exe().unwrap_or_default();
        me.parent().unwrap_or(Path::new("/")).join("leash")
    })
}

/// The limits a worker runs under, each at most the server's own hard limit (as CGI).
fn worker_limits(cfg: &Config, script: &Path) -> Vec<(u8, u64)> {
    let cpu = cfg.max_time_ms.div_ceil(1000) + CGI_CPU_GRACE_SECS;
    let wanted = [
        CGI_DATA_BASE.saturating_add(cfg.max_memory).saturating_add(MEMORY_OVERHEAD),
        cpu,
        gateway::worker_nofile(&gateway::limits_for(cfg, script)),
        cfg.max_file_size,
        0,
    ];
    wanted
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let hard = rustix::process::getrlimit(RESOURCES[i]).maximum;
            (i as u8, hard.map_or(v, |h| v.min(h)))
        })
        .collect()
}

/// Copy the worker's stderr to the log (see `gateway::worker_stderr_lines`).
fn forward_stderr(err: &Stderr, stats_line: bool) {
    for l in gateway::worker_stderr_lines(err, stats_line) {
        log_line(&l);
    }
}

fn pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    rustix::pipe::pipe_with(rustix::pipe::PipeFlags::CLOEXEC).map_err(std::io::Error::from)
}

/// Spare TMPDIRs kept at most.
const MAX_SPARES: usize = 64;

/// A worker's private TMPDIR (`tmp_base/req-N`, mode 0700): a spare one renamed into
/// place, else a new one. When the request ends it is removed with whatever the worker
/// left there, unless the worker is known to have ended (`reuse`) and the directory is
/// as it was given (empty, a directory, mode 0700, ours, no subdirectory): then it is
/// renamed back among the spares. The next worker that gets it finds an empty private
/// directory, as a new one would be (only its inode number and times differ).
struct WorkerTmp<'a> {
    srv: &'a Server,
    path: PathBuf,
    reuse: bool,
}

impl<'a> WorkerTmp<'a> {
    fn new(srv: &'a Server, job_id: u64) -> std::io::Result<WorkerTmp<'a>> {
        let path = srv.tmp_base.join(format!("req-{job_id}"));
        let spare = srv.spares.lock().ok().and_then(|mut s| s.pop());
        if let Some(sp) = spare {
            if std::fs::rename(&sp, &path).is_ok() {
                return Ok(WorkerTmp { srv, path, reuse: false });
            }
            let _ = std::fs::remove_dir_all(&sp);
        }
        private_dir(&path)?;
        Ok(WorkerTmp { srv, path, reuse: false })
    }
}

/// Is `p` an empty directory of ours with mode 0700 (a TMPDIR as it was given)?
fn untouched_dir(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(p) else { return false };
    m.is_dir()
        && m.mode() & 0o7777 == 0o700
        && m.uid() == rustix::process::geteuid().as_raw()
        && m.nlink() == 2
        && std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

impl Drop for WorkerTmp<'_> {
    fn drop(&mut self) {
        if self.reuse && untouched_dir(&self.path) {
            if let Ok(mut spares) = self.srv.spares.lock() {
                if spares.len() < MAX_SPARES {
                    let name = self.path.file_name().map(|n| n.to_os_string()).unwrap_or_default();
                    let to = self.srv.spare_base.join(name);
                    if std::fs::rename(&self.path, &to).is_ok() {
                        spares.push(to);
                        return;
                    }
                }
            }
        }
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

enum End {
    Exited { code: Option<i32>, signal: Option<i32> },
    Deadline,
    OutputOver,
    Failed(String, bool),
    Aborted(String),
}

/// Run the worker and wait for its end, passing the body and watching the connection.
/// Returns the response (None when the request was aborted), the app status, and whether
/// the connection is still good.
#[allow(clippy::too_many_arguments)]
fn supervise(
    srv: &Server,
    (cfg, generation): (&Config, u64),
    allow: gateway::Allow,
    script: &Path,
    env: Vec<(OsString, OsString)>,
    body_len: u64,
    held: Option<Vec<u8>>,
    stdin_ended: bool,
    id: u16,
    rx: &Receiver<Ev>,
    tx: &Tx,
    w: &mut Conn,
    e: &mut Entry,
) -> (Option<Vec<u8>>, u32, bool) {
    let job_id = srv.zygote.next.fetch_add(1, SeqCst);
    let mut tmp = match WorkerTmp::new(srv, job_id) {
        Ok(t) => t,
        Err(err) => {
            let m = format!("cannot make the worker's TMPDIR in {}: {err}", srv.tmp_base.display());
            return (Some(e.fail(500, m)), 0, true);
        }
    };
    let mut env = env;
    env.retain(|(k, _)| k != "TMPDIR");
    env.push(("TMPDIR".into(), tmp.path.clone().into_os_string()));
    let pipes = (|| Ok::<_, std::io::Error>((pipe()?, pipe()?, pipe()?)))();
    let ((in_r, in_w), (out_r, out_w), (err_r, err_w)) = match pipes {
        Ok(p) => p,
        Err(err) => return (Some(e.fail(500, format!("cannot make the worker's pipes: {err}"))), 0, true),
    };
    let job = Job {
        id: job_id,
        exec: cfg.worker_exec.then(|| interpreter(cfg)),
        cwd: script.parent().unwrap_or(Path::new("/")).to_path_buf(),
        has_stdin: body_len > 0,
        args: gateway::worker_args(cfg, allow, script),
        env,
        limits: worker_limits(cfg, script),
        cache: crate::program_cache::Bounds {
            entries: cfg.program_cache,
            bytes: cfg.program_cache_bytes,
            min_age_ms: cfg.program_cache_min_age_ms,
        },
        spares: Spares { count: cfg.spare_workers, generation },
    };
    if let Err(m) = srv.zygote.start(&job, [&in_r, &out_w, &err_w], tx.clone()) {
        return (Some(e.fail(500, format!("cannot start a worker: {m}"))), 0, true);
    }
    drop((in_r, out_w, err_w));
    let t0 = Instant::now();
    // The body: a thread writes it to the worker's stdin.
    let (btx, brx) = mpsc::channel::<Vec<u8>>();
    if body_len > 0 {
        let in_file = std::fs::File::from(in_w);
        let spawned = spawn_pooled(Box::new(move || {
            let mut f = in_file;
            for chunk in brx {
                if f.write_all(&chunk).is_err() {
                    break;
                }
            }
        }));
        if let Err(err) = spawned {
            log_line(&format!("leash-cgi: cannot start a thread to pass a request body: {err}"));
        }
    } else {
        // No body: the worker's stdin is /dev/null; no thread.
        drop((in_w, brx));
    }
    let mut body = Body { left: body_len, tx: Some(btx), ended: stdin_ended };
    if let Some(b) = held {
        body.take(&b);
        body.tx = None;
    }
    if body_len == 0 {
        body.tx = None;
    }
    let max_out = cfg.max_output_bytes;
    // The worker's stdout and stderr are read here, as they become readable (no thread
    // per pipe): stdout gathered up to max_output_bytes, stderr's start and end kept.
    let mut out_pipe = Some(out_r);
    let mut err_pipe = Some(err_r);
    let mut outbuf: Vec<u8> = Vec::new();
    let mut errs = Stderr::default();
    let mut chunk = vec![0u8; 64 * KIB];
    let kill_at = t0 + Duration::from_millis(cfg.max_time_ms + CGI_KILL_GRACE_MS);
    let mut pid: Option<Pid> = None;
    let mut end: Option<End> = None;
    let mut exited: Option<(Option<i32>, Option<i32>)> = None;
    let mut output: Option<Vec<u8>> = None;
    let mut stderr: Option<Stderr> = None;
    let (mut out_done, mut err_done) = (false, false);
    let mut conn_ok = true;
    let mut killed_at: Option<Instant> = None;
    let mut gone = false;
    let kill = |pid: Option<Pid>| {
        if let Some(p) = pid {
            let _ = rustix::process::kill_process_group(p, rustix::process::Signal::KILL);
        }
    };
    loop {
        // The events that came: records of the connection, reports of the warm process.
        loop {
            let ev = match rx.try_recv() {
                Ok(ev) => ev,
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    gone = true;
                    break;
                }
            };
            match ev {
                Ev::Rec(r) if r.id == id && r.kind == fcgi::STDIN => {
                    if !body.ended {
                        body.take(&r.content);
                    }
                }
                Ev::Rec(r) if r.id == id && r.kind == fcgi::ABORT_REQUEST => {
                    kill(pid);
                    killed_at.get_or_insert(Instant::now());
                    end.get_or_insert(End::Aborted("the web server aborted the request".into()));
                }
                Ev::Rec(r) => {
                    if !other_record(srv, w, &r, id) {
                        conn_ok = false;
                    }
                }
                Ev::Closed(why) => {
                    conn_ok = false;
                    if exited.is_none() {
                        kill(pid);
                        killed_at.get_or_insert(Instant::now());
                        end.get_or_insert(End::Aborted(why));
                    }
                }
                Ev::Worker(j, _) if j != job_id => {}
                Ev::Worker(_, W::Started(p, cache, how)) => {
                    e.cache = (cfg.program_cache > 0 && !cfg.worker_exec).then_some(cache);
                    e.worker = Some(how);
                    pid = Pid::from_raw(p);
                    if killed_at.is_some() {
                        kill(pid);
                    }
                }
                Ev::Worker(_, W::Exited { code, signal }) => exited = Some((code, signal)),
                Ev::Worker(_, W::Failed(m)) => {
                    let started = pid.is_some();
                    end.get_or_insert(End::Failed(m, started));
                    exited = Some((None, None));
                    // Its pipes are closed with it (or never opened).
                    if !started {
                        out_done = true;
                        err_done = true;
                        out_pipe = None;
                        err_pipe = None;
                    }
                }
            }
        }
        if gone || (exited.is_some() && out_done && err_done) {
            break;
        }
        let now = Instant::now();
        // After an exit, the pipes close at once; after a kill, the warm process reports.
        let limit = match (exited.is_some(), killed_at) {
            (true, _) => now + Duration::from_millis(200),
            (false, Some(k)) => k + Duration::from_secs(5),
            (false, None) => kill_at,
        };
        if now >= limit {
            if exited.is_some() || killed_at.is_some() {
                break;
            }
            kill(pid);
            killed_at = Some(now);
            end.get_or_insert(End::Deadline);
            continue;
        }
        let (out_ready, err_ready) = {
            use rustix::event::{PollFd, PollFlags};
            let mut fds: Vec<PollFd> = Vec::with_capacity(3);
            fds.push(PollFd::new(&*tx.bell, PollFlags::IN));
            if let Some(o) = &out_pipe {
                fds.push(PollFd::new(o, PollFlags::IN));
            }
            if let Some(e) = &err_pipe {
                fds.push(PollFd::new(e, PollFlags::IN));
            }
            let wait = limit - now;
            let ts = rustix::event::Timespec { tv_sec: wait.as_secs() as i64, tv_nsec: i64::from(wait.subsec_nanos()) };
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
            let ready = |f: &PollFd| !f.revents().is_empty();
            let mut i = 1;
            let o = out_pipe.is_some() && {
                i += 1;
                ready(&fds[i - 1])
            };
            let e = err_pipe.is_some() && ready(&fds[i]);
            if ready(&fds[0]) {
                let mut b = [0u8; 8];
                let _ = rustix::io::read(&*tx.bell, &mut b);
            }
            (o, e)
        };
        if out_ready {
            if let Some(o) = &out_pipe {
                match rustix::io::read(o, &mut chunk) {
                    Err(rustix::io::Errno::INTR) => {}
                    Ok(0) | Err(_) => {
                        out_pipe = None;
                        out_done = true;
                        output = Some(std::mem::take(&mut outbuf));
                    }
                    Ok(n) => {
                        outbuf.extend_from_slice(&chunk[..n]);
                        if outbuf.len() as u64 > max_out {
                            out_pipe = None;
                            out_done = true;
                            outbuf = Vec::new();
                            kill(pid);
                            killed_at.get_or_insert(Instant::now());
                            end.get_or_insert(End::OutputOver);
                        }
                    }
                }
            }
        }
        if err_ready {
            if let Some(f) = &err_pipe {
                match rustix::io::read(f, &mut chunk) {
                    Err(rustix::io::Errno::INTR) => {}
                    Ok(0) | Err(_) => {
                        err_pipe = None;
                        err_done = true;
                        stderr = Some(std::mem::take(&mut errs));
                    }
                    Ok(n) => errs.take(&chunk[..n]),
                }
            }
        }
    }
    if exited.is_none() {
        // The warm process did not report it: forget it (its report, if it comes, is dropped).
        srv.zygote.forget(job_id);
    }
    // Reported ended by the warm process (a script starts no process of its own): its
    // TMPDIR may go back among the spares if it is as it was given.
    tmp.reuse = exited.is_some() && !matches!(end, Some(End::Failed(..)));
    drop(body);
    let stderr = stderr.unwrap_or_default();
    let (code, signal) = exited.unwrap_or((None, None));
    let end = end.unwrap_or(End::Exited { code, signal });
    let report = match &end {
        End::Exited { code: Some(_), .. } => gateway::read_report(&stderr.tail),
        _ => gateway::Report::default(),
    };
    forward_stderr(&stderr, report.steps.is_some());
    e.steps = report.steps;
    let app = code.unwrap_or(0).max(0) as u32;
    let resp = match end {
        End::Aborted(why) => {
            e.status = 499;
            e.add_note(format!("{why}; the worker was stopped"));
            return (None, 0, conn_ok);
        }
        End::Deadline => e.fail(504, format!("killed at the deadline ({} ms)", cfg.max_time_ms + CGI_KILL_GRACE_MS)),
        End::OutputOver => e.fail(500, format!("output over max_output_bytes ({max_out})")),
        End::Failed(m, true) => e.fail(502, format!("the worker was lost: {m}")),
        End::Failed(m, false) => e.fail(500, format!("cannot start a worker: {m}")),
        End::Exited { code, signal } => match (signal, code) {
            (Some(sig), _) => e.fail(502, format!("the worker died: signal {sig} ({})", signal_name(sig))),
            (None, Some(c)) if c != 0 && report.diag.is_some() => {
                let (class, kind) = report.diag.clone().unwrap_or_default();
                if class == "limit" && kind == "time" {
                    e.fail(504, format!("time limit: max_time_ms ({}) reached", cfg.max_time_ms))
                } else {
                    e.fail(500, format!("the script failed: {class} error [{kind}], exit status {c}"))
                }
            }
            (None, code) => match output.as_deref().map(gateway::response_status) {
                Some(Ok(status)) => {
                    e.status = status;
                    if code != Some(0) {
                        e.add_note(format!("exit status {}", code.map_or("-".into(), |c| c.to_string())));
                    }
                    output.take().unwrap_or_default()
                }
                Some(Err(m)) => e.fail(500, format!("malformed response: {m}")),
                None => e.fail(502, "the worker's output was lost"),
            },
        },
    };
    (Some(resp), app, conn_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_round_trip() {
        let j = Job {
            id: 42,
            exec: Some("/usr/bin/leash".into()),
            cwd: "/srv/www".into(),
            has_stdin: true,
            args: vec!["--cgi".into(), "--".into(), "/srv/www/a b.lsh".into()],
            env: vec![("QUERY_STRING".into(), "a=1&b==2".into()), ("EMPTY".into(), "".into())],
            limits: vec![(0, 1 << 30), (4, 0)],
            cache: crate::program_cache::Bounds { entries: 3, bytes: 1 << 20, min_age_ms: 7 },
            spares: Spares { count: 4, generation: 2 },
        };
        assert_eq!(Job::decode(&j.encode()), Some(j.clone()));
        assert_eq!(Job::peek_id(&j.encode()), Some(42));
        assert_eq!(Job::peek_spares(&j.encode()), Some(j.spares));
        let j2 = Job { exec: None, has_stdin: false, ..j.clone() };
        assert_eq!(Job::decode(&j2.encode()), Some(j2.clone()));
        // The warm process's view: the key is the directory and command line only.
        let e2 = j2.encode();
        let (k, exec, b) = Job::peek_run(&e2).unwrap();
        assert_eq!((exec, b), (false, j.cache));
        assert_eq!(Job::key_run(k), Some((j.cwd.clone(), j.args.clone())));
        let j3 = Job { id: 7, has_stdin: true, env: vec![], limits: vec![], ..j2.clone() };
        assert_eq!(Job::peek_run(&j3.encode()).unwrap().0, k);
        let j4 = Job { args: vec!["--cgi".into(), "--".into(), "/srv/www/c.lsh".into()], ..j2.clone() };
        assert_ne!(Job::peek_run(&j4.encode()).unwrap().0, k);
        let j5 = Job { cwd: "/srv".into(), ..j2.clone() };
        assert_ne!(Job::peek_run(&j5.encode()).unwrap().0, k);
        assert!(Job::peek_run(&j.encode()).unwrap().1);
        let b = j2.encode();
        for cut in 0..b.len() {
            let _ = Job::decode(&b[..cut]);
            let _ = Job::peek_run(&b[..cut]);
            let _ = Job::key_run(&b[..cut]);
            let _ = Job::peek_spares(&b[..cut]);
        }
        assert_eq!(Job::decode(&b[..b.len() - 1]), None);
    }

    #[test]
    fn script_paths_from_apache_and_nginx() {
        let v = |s: &str| vec![(OsString::from("SCRIPT_FILENAME"), OsString::from(s))];
        assert_eq!(requested_script(&v("/srv/a.lsh")), Some("/srv/a.lsh".into()));
        assert_eq!(requested_script(&v("proxy:fcgi://localhost/srv/a.lsh")), Some("/srv/a.lsh".into()));
        assert_eq!(requested_script(&v("proxy:fcgi://127.0.0.1:9000/srv/a.lsh")), Some("/srv/a.lsh".into()));
        assert_eq!(
            requested_script(&v("proxy:unix:/run/l.sock|fcgi://localhost/srv/a.lsh")),
            Some("/srv/a.lsh".into())
        );
        assert_eq!(requested_script(&v("")), None);
        let pt = vec![(OsString::from("PATH_TRANSLATED"), OsString::from("/srv/b.lsh"))];
        assert_eq!(requested_script(&pt), Some("/srv/b.lsh".into()));
    }
}
