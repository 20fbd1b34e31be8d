//! The warm process of `leash-cgi --fastcgi` (`leash --fastcgi-zygote`), its spare
//! workers and the worker (see `fastcgi_server.rs` for the whole picture), and the job
//! message the server sends it.
//!
//! The warm process is single-threaded and runs no script: it reads a job (the worker's
//! argv, environment, directory and limits; descriptors: the worker's stdin when there is
//! a body, its stdout and stderr, and the job's own report socket), hands it to a spare
//! worker or forks one, and reports on the job's report socket `E` (ended, from the
//! worker's pidfd) or `F` (failed); the server sends `K` on it to have the worker killed.
//! The server's request thread polls that socket beside the worker's pipes and the web
//! server's connection: nothing of a request passes through another thread of the server.

use std::ffi::{OsStr, OsString};
use std::io::{IoSlice, IoSliceMut, Write};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

use rustix::net::{
    RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer, SendAncillaryMessage, SendFlags,
};
use rustix::process::{Pid, Resource, Rlimit};

use crate::limits::*;

/// The most bytes of PARAMS one request may send (its CGI variables and headers).
pub const FCGI_MAX_PARAMS_BYTES: usize = 128 * KIB;
/// The most bytes of one message to the warm process (argv, environment, limits).
pub(crate) const JOB_MAX_BYTES: usize = FCGI_MAX_PARAMS_BYTES + 64 * KIB;

/// One line to the log (stderr), in one write.
pub(crate) fn log_line(text: &str) {
    let mut line = String::with_capacity(text.len() + 1);
    line.push_str(text);
    line.push('\n');
    let _ = std::io::stderr().lock().write_all(line.as_bytes());
}

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

pub(crate) const RESOURCES: [Resource; 5] =
    [Resource::Data, Resource::Cpu, Resource::Nofile, Resource::Fsize, Resource::Core];

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
fn close_warm(kids: &mut Vec<Kid>, spares: &mut Vec<SpareWorker>, retired: &mut Vec<(Pid, OwnedFd)>) {
    drop(std::mem::take(kids));
    drop(std::mem::take(spares));
    drop(std::mem::take(retired));
}

/// What the warm process tells the server about a job, one message on the job's own
/// report socket (the last descriptor of the job): `E code signal pid cache how` (the
/// worker ended: its exit status and signal, `-` for none, its pid, `hit`/`new`/`none`,
/// `spare`/`forked`), or `F why` (no worker was started). Nothing is sent while the
/// worker runs, so the server's thread, which watches the socket, wakes once for the
/// worker's end. The other way, the server sends `K` when it wants the worker killed.
/// The socket is closed after `E` or `F`; a server that gave up on the job closed its
/// end, and the send fails quietly (no SIGPIPE).
fn report(to: &impl AsFd, text: &str) {
    let _ = rustix::net::send(to, text.as_bytes(), SendFlags::NOSIGNAL | SendFlags::DONTWAIT);
}

/// A running worker as the warm process watches it: its pid, its pidfd (readable when it
/// ends), its job's report socket (watched for the server's `K` while the server keeps
/// it open), and what its end report says of its start.
struct Kid {
    pid: Pid,
    pfd: OwnedFd,
    rep: OwnedFd,
    rep_open: bool,
    cache: &'static str,
    how: &'static str,
}

impl Kid {
    /// The server wants it gone: SIGKILL to its group (a worker leads its own) and to it
    /// (one that has not called `setsid` yet). Not reaped yet, so its pid is its own.
    fn kill(&self) {
        let _ = rustix::process::kill_process_group(self.pid, rustix::process::Signal::KILL);
        let _ = rustix::process::kill_process(self.pid, rustix::process::Signal::KILL);
    }
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
        // And the constant patterns they pass to `re.*`, compiled (no search run): a
        // worker takes each from here instead of compiling it (`re::warm_patterns`).
        crate::builtins::re::warm_patterns(crate::source::stdlib_patterns().iter().map(String::as_str));
    }
    // The binary's code in 2 MiB pages, so that a fork copies one entry per 2 MiB of it and
    // a worker takes no page fault in it (`leash_alloc::text_in_huge_pages`; nothing is
    // moved when the kernel gives no huge pages).
    if let Err(m) = leash_alloc::text_in_huge_pages() {
        log_line(&format!("leash-cgi: warm process: the code stays in small pages: {m}"));
    }
    // The region each worker's small blocks are cut from, reserved once here rather than
    // in every worker (`leash_alloc::reserve_arena_for_forks`).
    leash_alloc::reserve_arena_for_forks();
    let ctl = match std::io::stdin().as_fd().try_clone_to_owned() {
        Ok(fd) => fd,
        Err(e) => {
            log_line(&format!("leash-cgi: warm process: no control socket: {e}"));
            return 1;
        }
    };
    // Its stdin is /dev/null from now on, and so is a worker's when its request has no
    // body (`STDIN_NULL`: the worker then keeps it instead of opening /dev/null again).
    if let Ok(null) = std::fs::File::open("/dev/null") {
        if rustix::stdio::dup2_stdin(&null).is_ok() {
            STDIN_NULL.store(true, SeqCst);
        }
    }
    // What a run would load lazily anyway and never changes: the stdlib's sources are
    // in the binary already; nothing of a script is touched here.
    let mut kids: Vec<Kid> = Vec::new();
    // Spare workers: forked ahead of requests, each waiting on a socket of its own for one
    // job (`spare`); `retired` ones were told to go and are reaped when they have.
    let mut spares: Vec<SpareWorker> = Vec::new();
    let mut retired: Vec<(Pid, OwnedFd)> = Vec::new();
    let mut want = Spares::default();
    let mut buf = vec![0u8; JOB_MAX_BYTES];
    loop {
        // One spare fewer than wanted: forked once nothing else waits.
        let short = (spares.len() as u64) < want.count;
        let (ctl_ready, ctl_gone, done, asked, lost, reaped, idle) = {
            use rustix::event::{PollFd, PollFlags};
            let mut fds: Vec<PollFd> = Vec::with_capacity(1 + 2 * kids.len() + spares.len() + retired.len());
            fds.push(PollFd::new(&ctl, PollFlags::IN));
            for k in &kids {
                fds.push(PollFd::new(&k.pfd, PollFlags::IN));
            }
            // The report sockets of running workers, for the server's "K" (kill it).
            let mut asking: Vec<usize> = Vec::new();
            for (i, k) in kids.iter().enumerate().filter(|(_, k)| k.rep_open) {
                fds.push(PollFd::new(&k.rep, PollFlags::IN));
                asking.push(i);
            }
            let a = asking.len();
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
                fired(1 + k, 1 + k + a).into_iter().map(|j| asking[j]).collect::<Vec<usize>>(),
                fired(1 + k + a, 1 + k + a + s),
                fired(1 + k + a + s, fds.len()),
                ready == 0,
            )
        };
        // The server asks for a worker's end (its deadline, an abort, a disconnect, output
        // over the bound): killed, group and process (reaped below or later, and reported
        // `E` as any end). A report socket the server closed is watched no more.
        for &i in &asked {
            let mut b = [0u8; 8];
            match rustix::net::recv(&kids[i].rep, &mut b, RecvFlags::DONTWAIT) {
                Ok((n, _)) if n > 0 => {
                    if b[..n.min(b.len())].contains(&b'K') {
                        kids[i].kill();
                    }
                }
                Err(rustix::io::Errno::AGAIN) | Err(rustix::io::Errno::INTR) => {}
                _ => kids[i].rep_open = false,
            }
        }
        for &i in done.iter().rev() {
            match rustix::process::waitpid(Some(kids[i].pid), rustix::process::WaitOptions::NOHANG) {
                Ok(Some((_, st))) => {
                    let code = st.exit_status().map_or("-".to_string(), |c| c.to_string());
                    let sig = st.terminating_signal().map_or("-".to_string(), |c| c.to_string());
                    let k = kids.remove(i);
                    report(&k.rep, &format!("E {code} {sig} {} {} {}", k.pid.as_raw_nonzero(), k.cache, k.how));
                }
                Ok(None) => {}
                Err(_) => {
                    let k = kids.remove(i);
                    report(&k.rep, &format!("E - - {} {} {}", k.pid.as_raw_nonzero(), k.cache, k.how));
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
            let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(4))];
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
            // The worker's pipes (stdin when the request has a body, stdout, stderr), then
            // the job's report socket (the worker checks the count against its job).
            // Without them the job is dropped: the server sees its report socket closed (a
            // lost job).
            if !(3..=4).contains(&fds.len()) {
                buf[..n].fill(0);
                log_line(&format!("leash-cgi: warm process: job {id}: {} descriptors (3 or 4 expected)", fds.len()));
                continue;
            }
            let Some(rep) = fds.pop() else { continue };
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
            let mut served: Option<SpareWorker> = None;
            // (A spare receives into its copy of `buf`: the job and the 8-byte number must fit.)
            let fits = n + 8 <= buf.len();
            while let Some(i) = spares.iter().position(|s| fits && s.serial >= serial) {
                let s = spares.remove(i);
                match s.give(serial, &buf[..n], &fds) {
                    Ok(()) => {
                        served = Some(s);
                        break;
                    }
                    Err(_) => retired.push(s.retire()),
                }
            }
            if let Some(s) = served {
                kids.push(Kid { pid: s.pid, pfd: s.pfd, rep, rep_open: true, cache: cached.name(), how: "spare" });
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
                    drop((ctl, rep));
                    let job = Job::decode(&buf[..n]);
                    // Not freed: the buffer is a mapping of its own (`JOB_MAX_BYTES`), and
                    // unmapping it costs the worker a `munmap` and a TLB flush for nothing
                    // (the process ends after this one job; it holds only this job).
                    std::mem::forget(buf);
                    run_job(job, fds)
                }
                Ok(leash_alloc::Forked::Parent(p)) => {
                    crate::program_cache::clear_choice();
                    // The request's variables are not left in the warm process's memory.
                    buf[..n].fill(0);
                    drop(fds);
                    let Some(pid) = Pid::from_raw(p) else { continue };
                    match rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()) {
                        Ok(pfd) => {
                            kids.push(Kid { pid, pfd, rep, rep_open: true, cache: cached.name(), how: "forked" });
                        }
                        Err(e) => {
                            // Cannot watch it: kill and reap it now.
                            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
                            let _ = rustix::process::waitpid(Some(pid), rustix::process::WaitOptions::empty());
                            report(&rep, &format!("F pidfd_open: {e}"));
                        }
                    }
                }
                Err(m) => {
                    crate::program_cache::clear_choice();
                    buf[..n].fill(0);
                    report(&rep, &format!("F {m}"));
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
    let job = if n >= 8 && (2..=3).contains(&fds.len()) { Job::decode(&buf[8..n]) } else { None };
    // Kept, as in a forked worker: no `munmap` for a process that serves one job.
    std::mem::forget(buf);
    run_job(job, fds)
}

/// A forked worker's job, run; a message that did not decode ends it with 125.
fn run_job(job: Option<Job>, fds: Vec<OwnedFd>) -> ! {
    match job {
        Some(job) => worker(job, fds),
        None => {
            log_line("leash-cgi: worker: a malformed job message");
            leash_alloc::exit_now(125)
        }
    }
}

/// Whether the warm process's stdin is /dev/null (read only), which its workers inherit.
static STDIN_NULL: AtomicBool = AtomicBool::new(false);

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
fn stop_kids(kids: &[Kid], spares: &[SpareWorker], retired: &[(Pid, OwnedFd)]) -> i32 {
    let pids = kids.iter().map(|k| k.pid).chain(spares.iter().map(|s| s.pid)).chain(retired.iter().map(|r| r.0));
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
    // Its pipes: stdin (only with a body), stdout, stderr.
    if fds.len() != 2 + usize::from(job.has_stdin) {
        fail(
            "descriptors",
            &format!("{} for a job {} a body", fds.len(), if job.has_stdin { "with" } else { "without" }),
        );
    }
    let (Some(err), Some(out)) = (fds.pop(), fds.pop()) else { fail("descriptors", &"missing") };
    // Without a body: the warm process's stdin, /dev/null, stays (else it is opened).
    let stdin: Option<OwnedFd> = match fds.pop() {
        Some(inp) => Some(inp),
        None if STDIN_NULL.load(SeqCst) => None,
        None => match std::fs::File::open("/dev/null") {
            Ok(f) => Some(OwnedFd::from(f)),
            Err(e) => fail("/dev/null", &e),
        },
    };
    if let Err(e) = stdin
        .as_ref()
        .map_or(Ok(()), rustix::stdio::dup2_stdin)
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
    // The request's environment and nothing else: one array made at once
    // (`replace_environment`), or else variable by variable.
    if leash_alloc::replace_environment(&job.env).is_err() {
        let old: Vec<OsString> = std::env::vars_os().map(|(k, _)| k).collect();
        for k in old {
            std::env::remove_var(k);
        }
        for (k, v) in &job.env {
            std::env::set_var(k, v);
        }
    }
    if let Some(interp) = &job.exec {
        let e = Command::new(interp).args(&job.args).exec();
        fail(&format!("cannot start the interpreter {}", interp.display()), &e);
    }
    // One run, then `exit_now`: the run's memory is not freed (`set_last_run`).
    crate::set_last_run();
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
}
