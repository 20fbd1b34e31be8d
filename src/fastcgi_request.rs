//! One FastCGI request, end to end, on the thread of its connection (`fastcgi_server.rs`):
//! its records read, the policy applied, a slot among `max_workers` taken, the job sent to
//! the warm process (`fastcgi_warm.rs`), then one `poll` loop over everything the request
//! waits on: the web server's connection (more of the body, ABORT_REQUEST, a disconnect),
//! the job's report socket (the worker's end; `K` goes the other way to have it killed),
//! the worker's stdout and stderr (left to fill for a moment first: a short request's
//! thread wakes once for its worker), and its stdin while body bytes wait to be written.
//! No other thread takes part.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags};
use rustix::net::RecvFlags;

use crate::fastcgi::{self as fcgi, Record};
use crate::fastcgi_shared::{interpreter, private_dir, Conn, Got, Link, Server, FCGI_MAX_CONNS, FCGI_QUEUE_WAIT};
use crate::fastcgi_warm::{log_line, Job, Spares, FCGI_MAX_PARAMS_BYTES, RESOURCES};
use crate::gateway::{self, signal_name, Config, Script, Stderr};
use crate::limits::*;

/// What the summary log line of a request says (shared with `leash-cgi`).
type Entry = gateway::LogEntry;

/// Body bytes held for the worker's stdin at most before the connection is read no
/// further (the web server waits; the worker reads its stdin, or meets its deadline).
const BODY_HELD_MAX: usize = 256 * KIB;

/// How long after a job goes out its worker's stdout and stderr are left to fill (up to
/// what a pipe holds, 64 KiB on Linux) before they are read as they come: see
/// `Run::supervise`. A worker whose output is over what its pipe holds waits for at most
/// this long once.
const PIPES_DEFERRED: Duration = Duration::from_millis(10);

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

/// A record that is not part of the current request (`current`): management records are
/// answered, a second request on the connection is refused (no multiplexing), the rest
/// (stray records of a request already answered) ignored. False: the connection failed.
pub(crate) fn other_record(w: &mut Conn, r: &Record, current: u16) -> bool {
    let reply = match r.kind {
        fcgi::GET_VALUES if r.id == 0 => fcgi::get_values_result(&r.content, FCGI_MAX_CONNS, FCGI_MAX_CONNS),
        fcgi::BEGIN_REQUEST if r.id != current && r.id != 0 => fcgi::end_request(r.id, 0, fcgi::CANT_MPX_CONN),
        k if r.id == 0 => fcgi::unknown_type(k),
        _ => return true,
    };
    w.write_all(&reply).is_ok()
}

/// Serve the request `id` whose BEGIN_REQUEST has arrived. False: the connection is over.
pub(crate) fn request(srv: &Server, link: &mut Link, id: u16) -> bool {
    let mut e = Entry::new(Instant::now());
    let finish = |e: &mut Entry, w: &mut Conn, resp: Vec<u8>, app: u32| -> bool {
        log_line(&e.line());
        respond(w, id, &resp, app, e)
    };
    // The PARAMS stream.
    let mut params: Vec<u8> = Vec::new();
    let mut over = false;
    loop {
        match link.wait(None) {
            Got::Rec(r) if r.id == id && r.kind == fcgi::PARAMS => {
                if r.content.is_empty() {
                    break;
                }
                if params.len() + r.content.len() > FCGI_MAX_PARAMS_BYTES {
                    over = true;
                } else {
                    params.extend_from_slice(&r.content);
                }
            }
            Got::Rec(r) if r.id == id && r.kind == fcgi::ABORT_REQUEST => {
                return aborted(&mut e, &mut link.conn, id);
            }
            Got::Rec(r) => {
                if !other_record(&mut link.conn, &r, id) {
                    return false;
                }
            }
            Got::Closed(why) => {
                return closed(&mut e, "before the request's parameters ended", &why);
            }
            Got::Nothing => {}
        }
    }
    let w = &mut link.conn;
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
            match link.wait(None) {
                Got::Rec(r) if r.id == id && r.kind == fcgi::STDIN => {
                    if r.content.is_empty() {
                        break;
                    }
                    if (b.len() + r.content.len()) as u64 > cfg.max_body_bytes {
                        let r = e.fail(
                            413,
                            format!("request body (no CONTENT_LENGTH) over max_body_bytes ({})", cfg.max_body_bytes),
                        );
                        return finish(&mut e, &mut link.conn, r, 0);
                    }
                    b.extend_from_slice(&r.content);
                }
                Got::Rec(r) if r.id == id && r.kind == fcgi::ABORT_REQUEST => {
                    return aborted(&mut e, &mut link.conn, id);
                }
                Got::Rec(r) => {
                    if !other_record(&mut link.conn, &r, id) {
                        return false;
                    }
                }
                Got::Closed(why) => {
                    return closed(&mut e, "while the body was read", &why);
                }
                Got::Nothing => {}
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
    drop(vars);
    // A queued request waits for a worker at most FCGI_QUEUE_WAIT (its own deadline
    // starts when its worker does).
    let slot = match srv.admit(&cfg, Instant::now() + FCGI_QUEUE_WAIT) {
        Ok(s) => s,
        Err(m) => {
            let r = e.fail(503, m);
            return finish(&mut e, &mut link.conn, r, 0);
        }
    };
    let run = Run { srv, cfg: &cfg, generation, allow, script: &script, id };
    let (resp, app, conn_ok) = run.supervise(env, Body::new(body_len, held, stdin_ended), link, &mut e);
    drop(slot);
    log_line(&e.line());
    let w = &mut link.conn;
    match resp {
        Some(resp) => respond(w, id, &resp, app, &mut e) && conn_ok,
        None => {
            // Aborted: the request ends without a response.
            let _ = w.write_all(&fcgi::end_request(id, 0, fcgi::REQUEST_COMPLETE));
            conn_ok
        }
    }
}

/// What a request passes to its worker's stdin: bytes held until the pipe takes them.
struct Body {
    /// Bytes still to come from the web server (CONTENT_LENGTH less what came).
    left: u64,
    /// Bytes come and not yet written, from `off`.
    held: Vec<u8>,
    off: usize,
    /// The web server's end of the body (an empty STDIN record).
    ended: bool,
    /// The worker's stdin (non-blocking), until all is written, or it fails.
    pipe: Option<OwnedFd>,
}

impl Body {
    /// A body of `len` bytes; `held`: all of it, gathered already (then `ended`).
    fn new(len: u64, held: Option<Vec<u8>>, ended: bool) -> Body {
        let mut b = Body { left: len, held: Vec::new(), off: 0, ended, pipe: None };
        if let Some(h) = held {
            b.left = 0;
            b.held = h;
        }
        b
    }

    fn take(&mut self, data: &[u8]) {
        if self.ended {
            return;
        }
        if data.is_empty() {
            self.ended = true;
            return;
        }
        let k = (data.len() as u64).min(self.left) as usize;
        self.left -= k as u64;
        if self.pipe.is_some() {
            self.held.extend_from_slice(&data[..k]);
        }
    }

    /// Whether the connection may be read for more of it now.
    fn room(&self) -> bool {
        self.held.len() - self.off < BODY_HELD_MAX
    }

    /// Write what the pipe takes now; close it when all is written (or the worker is gone).
    fn flush(&mut self) {
        let Some(p) = &self.pipe else { return };
        while self.off < self.held.len() {
            match rustix::io::write(p, &self.held[self.off..]) {
                Ok(n) => self.off += n,
                Err(rustix::io::Errno::INTR) => {}
                Err(rustix::io::Errno::AGAIN) => break,
                Err(_) => {
                    self.pipe = None;
                    break;
                }
            }
        }
        if self.off >= self.held.len() || self.pipe.is_none() {
            self.held = Vec::new();
            self.off = 0;
            if self.left == 0 || self.ended {
                self.pipe = None;
            }
        } else if self.off >= 64 * KIB && self.off * 2 >= self.held.len() {
            self.held.drain(..self.off);
            self.off = 0;
        }
    }

    /// Whether bytes wait for the pipe.
    fn waiting(&self) -> bool {
        self.pipe.is_some() && self.off < self.held.len()
    }
}

enum End {
    Exited { code: Option<i32>, signal: Option<i32> },
    Deadline,
    OutputOver,
    Failed(String, bool),
    Aborted(String),
}

/// A request admitted to run: what its supervision needs of the server and the policy.
struct Run<'a> {
    srv: &'a Server,
    cfg: &'a Config,
    generation: u64,
    allow: gateway::Allow,
    script: &'a Path,
    id: u16,
}

/// What a report from the warm process (`fastcgi_warm::report`) says.
enum Report {
    /// The worker ended: its exit status and signal, and how it started (the program
    /// cache's `hit`/`new`/`none`, `spare`/`forked`).
    Exited { code: Option<i32>, signal: Option<i32>, cache: &'static str, how: &'static str },
    /// No worker was started.
    Failed(String),
}

fn parse_report(b: &[u8]) -> Option<Report> {
    let text = std::str::from_utf8(b).ok()?;
    let (kind, rest) = text.split_once(' ').unwrap_or((text, ""));
    let mut f = rest.split(' ');
    match kind {
        "E" => {
            let code = f.next().and_then(|c| c.parse().ok());
            let signal = f.next().and_then(|c| c.parse().ok());
            let _pid = f.next();
            let cache = match f.next() {
                Some("hit") => "hit",
                Some("new") => "new",
                _ => "none",
            };
            let how = if f.next() == Some("spare") { "spare" } else { "forked" };
            Some(Report::Exited { code, signal, cache, how })
        }
        "F" => Some(Report::Failed(rest.to_string())),
        _ => None,
    }
}

impl Run<'_> {
    /// Run the worker and wait for its end, passing the body and watching the connection,
    /// all from this thread (one `poll` over the connection, the job's report socket and
    /// the worker's pipes). Returns the response (None when the request was aborted), the
    /// app status, and whether the connection is still good.
    fn supervise(
        &self,
        env: Vec<(OsString, OsString)>,
        mut body: Body,
        link: &mut Link,
        e: &mut Entry,
    ) -> (Option<Vec<u8>>, u32, bool) {
        let (srv, cfg, id) = (self.srv, self.cfg, self.id);
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
        let body_len = body.left + body.held.len() as u64;
        // The worker's stdin is a pipe only when there is a body (else it keeps the warm
        // process's /dev/null), then its stdout and stderr, and the job's report socket.
        let has_stdin = body_len > 0;
        let pipes =
            (|| Ok::<_, std::io::Error>((has_stdin.then(pipe).transpose()?, pipe()?, pipe()?, report_pair()?)))();
        let (stdin_pipe, (out_r, out_w), (err_r, err_w), (rep, rep_theirs)) = match pipes {
            Ok(p) => p,
            Err(err) => return (Some(e.fail(500, format!("cannot make the worker's pipes: {err}"))), 0, true),
        };
        let job = Job {
            id: job_id,
            exec: cfg.worker_exec.then(|| interpreter(cfg)),
            cwd: self.script.parent().unwrap_or(Path::new("/")).to_path_buf(),
            has_stdin,
            args: gateway::worker_args(cfg, self.allow.clone(), self.script),
            env,
            limits: worker_limits(cfg, self.script),
            cache: crate::program_cache::Bounds {
                entries: cfg.program_cache,
                bytes: cfg.program_cache_bytes,
                min_age_ms: cfg.program_cache_min_age_ms,
            },
            spares: Spares { count: cfg.spare_workers, generation: self.generation },
        };
        let (in_r, in_w) = stdin_pipe.unzip();
        let fds: Vec<&OwnedFd> = in_r.iter().chain([&out_w, &err_w, &rep_theirs]).collect();
        if let Err(m) = srv.zygote.start(&job, &fds) {
            return (Some(e.fail(500, format!("cannot start a worker: {m}"))), 0, true);
        }
        drop((job, fds));
        drop((in_r, out_w, err_w, rep_theirs));
        let t0 = Instant::now();
        match in_w {
            Some(w) if rustix::io::ioctl_fionbio(&w, true).is_ok() => body.pipe = Some(w),
            // No body: the worker's stdin is /dev/null (or, should the pipe fail to become
            // non-blocking, closed at once: the worker reads an empty body).
            _ => body.held = Vec::new(),
        }
        body.flush();
        let max_out = cfg.max_output_bytes;
        // The worker's stdout and stderr are read as they become readable: stdout
        // gathered up to max_output_bytes, stderr's start and end kept.
        let mut out_pipe = Some(out_r);
        let mut err_pipe = Some(err_r);
        let mut rep_sock = Some(rep);
        let mut outbuf: Vec<u8> = Vec::new();
        let mut errs = Stderr::default();
        // What the worker's stderr gives, a read at a time (its room is not zeroed).
        let mut chunk: Vec<u8> = Vec::with_capacity(16 * KIB);
        let kill_at = t0 + Duration::from_millis(cfg.max_time_ms + CGI_KILL_GRACE_MS);
        let defer_until = t0 + PIPES_DEFERRED;
        let mut end: Option<End> = None;
        let mut exited: Option<(Option<i32>, Option<i32>)> = None;
        let mut output: Option<Vec<u8>> = None;
        let mut stderr: Option<Stderr> = None;
        let (mut out_done, mut err_done) = (false, false);
        let mut conn_ok = true;
        let mut conn_closed = false;
        let mut killed_at: Option<Instant> = None;
        // The worker killed: the warm process, its parent, is asked to (`K` on the job's
        // report socket; it kills the worker's group, reaps it and reports its end).
        let kill = |rep: &Option<OwnedFd>| {
            if let Some(s) = rep {
                let _ = rustix::net::send(s, b"K", rustix::net::SendFlags::NOSIGNAL | rustix::net::SendFlags::DONTWAIT);
            }
        };
        // What the last poll found ready (at first: the connection, where more may wait).
        let (mut conn_ready, mut rep_ready, mut out_ready, mut err_ready) = (true, false, false, false);
        loop {
            // The connection's records: more of the body, an abort, management records.
            while conn_ready && !conn_closed && body.room() {
                match link.next() {
                    Got::Rec(r) if r.id == id && r.kind == fcgi::STDIN => body.take(&r.content),
                    Got::Rec(r) if r.id == id && r.kind == fcgi::ABORT_REQUEST => {
                        kill(&rep_sock);
                        killed_at.get_or_insert(Instant::now());
                        end.get_or_insert(End::Aborted("the web server aborted the request".into()));
                    }
                    Got::Rec(r) => {
                        if !other_record(&mut link.conn, &r, id) {
                            conn_ok = false;
                        }
                    }
                    Got::Closed(why) => {
                        conn_ok = false;
                        conn_closed = true;
                        if exited.is_none() {
                            kill(&rep_sock);
                            killed_at.get_or_insert(Instant::now());
                            end.get_or_insert(End::Aborted(why));
                        }
                    }
                    Got::Nothing => break,
                }
            }
            body.flush();
            // The warm process's report on this job: its end (one message, after the
            // worker ended; nothing is sent while it runs).
            // (Every way out of the loop is a `break` or a `return`.)
            if rep_ready {
                loop {
                    let Some(s) = &rep_sock else { break };
                    let mut b = [0u8; 512];
                    let got = match rustix::net::recv(s, &mut b, RecvFlags::DONTWAIT) {
                        Ok((0, _)) => None,
                        Ok((n, _)) => Some(n.min(b.len())),
                        Err(rustix::io::Errno::INTR) => continue,
                        Err(rustix::io::Errno::AGAIN) => break,
                        Err(_) => None,
                    };
                    let Some(n) = got else {
                        // Closed without an end reported: the warm process died (or dropped the
                        // job). Whatever the worker still writes is not wanted (its pipes closed:
                        // a worker left running meets a closed stdout).
                        rep_sock = None;
                        if exited.is_none() {
                            self.lost(&mut end, &mut exited, true, "the warm process died".into());
                            (out_done, err_done, out_pipe, err_pipe) = (true, true, None, None);
                        }
                        break;
                    };
                    match parse_report(&b[..n]) {
                        Some(Report::Exited { code, signal, cache, how }) => {
                            e.cache = (cfg.program_cache > 0 && !cfg.worker_exec).then_some(cache);
                            e.worker = Some(how);
                            exited = Some((code, signal));
                            rep_sock = None;
                        }
                        Some(Report::Failed(m)) => {
                            // No worker was started: its pipes close with the job (or were
                            // never given).
                            self.lost(&mut end, &mut exited, false, m);
                            rep_sock = None;
                            (out_done, err_done, out_pipe, err_pipe) = (true, true, None, None);
                        }
                        None => {}
                    }
                }
            }
            if out_ready {
                if let Some(o) = &out_pipe {
                    // Straight into the output (its spare room: 64 KiB or more).
                    outbuf.reserve(64 * KIB);
                    match rustix::io::read(o, rustix::buffer::spare_capacity(&mut outbuf)) {
                        Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => {}
                        Ok(0) | Err(_) => {
                            out_pipe = None;
                            out_done = true;
                            output = Some(std::mem::take(&mut outbuf));
                        }
                        Ok(_) => {
                            if outbuf.len() as u64 > max_out {
                                out_pipe = None;
                                out_done = true;
                                outbuf = Vec::new();
                                kill(&rep_sock);
                                killed_at.get_or_insert(Instant::now());
                                end.get_or_insert(End::OutputOver);
                            }
                        }
                    }
                }
            }
            if err_ready {
                if let Some(f) = &err_pipe {
                    chunk.clear();
                    match rustix::io::read(f, rustix::buffer::spare_capacity(&mut chunk)) {
                        Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => {}
                        Ok(0) | Err(_) => {
                            err_pipe = None;
                            err_done = true;
                            stderr = Some(std::mem::take(&mut errs));
                        }
                        Ok(_) => errs.take(&chunk),
                    }
                }
            }
            if exited.is_some() && out_done && err_done {
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
                kill(&rep_sock);
                killed_at = Some(now);
                end.get_or_insert(End::Deadline);
                (conn_ready, rep_ready, out_ready, err_ready) = (false, false, false, false);
                continue;
            }
            // Wait for any of them. The connection is looked at while the body has room
            // (and it is open); the worker's stdin while body bytes wait for it.
            let watch_conn = !conn_closed && body.room();
            if watch_conn && link.has_record() {
                // Records held back while the body had no room: taken now.
                (conn_ready, rep_ready, out_ready, err_ready) = (true, false, false, false);
                continue;
            }
            let mut fds: Vec<PollFd> = Vec::with_capacity(5);
            let c = watch(&mut fds, watch_conn.then(|| link.fd()), PollFlags::IN);
            // The report socket wakes this thread once, at the worker's end. For
            // `PIPES_DEFERRED` after the job went out the worker's pipes are left to fill:
            // a short request's output is all in them when its end is reported, and it is
            // read then, in one go (one wake-up for the request's worker, not one per
            // write and close). Past it (a longer run, or output over what a pipe holds),
            // or once a kill is under way, the pipes are read as they fill.
            let deferring = exited.is_none() && killed_at.is_none() && now < defer_until;
            let r = watch(&mut fds, rep_sock.as_ref().map(|s| s.as_fd()), PollFlags::IN);
            let o = watch(&mut fds, out_pipe.as_ref().filter(|_| !deferring).map(|s| s.as_fd()), PollFlags::IN);
            let er = watch(&mut fds, err_pipe.as_ref().filter(|_| !deferring).map(|s| s.as_fd()), PollFlags::IN);
            // (The stdin is written at the top of the loop, whatever woke it.)
            watch(&mut fds, body.pipe.as_ref().filter(|_| body.waiting()).map(|s| s.as_fd()), PollFlags::OUT);
            let wait = if deferring { limit.min(defer_until) } else { limit } - now;
            let ts = rustix::event::Timespec { tv_sec: wait.as_secs() as i64, tv_nsec: i64::from(wait.subsec_nanos()) };
            match rustix::event::poll(&mut fds, Some(&ts)) {
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(10)),
            }
            let ready = |at: Option<usize>| at.is_some_and(|j| !fds[j].revents().is_empty());
            (conn_ready, rep_ready, out_ready, err_ready) = (ready(c), ready(r), ready(o), ready(er));
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
            End::Deadline => {
                e.fail(504, format!("killed at the deadline ({} ms)", cfg.max_time_ms + CGI_KILL_GRACE_MS))
            }
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

    /// The job failed or was lost (`F`, or its report socket closed without an end).
    fn lost(&self, end: &mut Option<End>, exited: &mut Option<(Option<i32>, Option<i32>)>, started: bool, m: String) {
        end.get_or_insert(End::Failed(m, started));
        *exited = Some((None, None));
    }
}

/// Add `fd` (if any) to what a poll waits on; where it is.
fn watch<'a>(fds: &mut Vec<PollFd<'a>>, fd: Option<BorrowedFd<'a>>, f: PollFlags) -> Option<usize> {
    fds.push(PollFd::from_borrowed_fd(fd?, f));
    Some(fds.len() - 1)
}

/// The job's report socket: ours (read without blocking) and the warm process's.
fn report_pair() -> std::io::Result<(OwnedFd, OwnedFd)> {
    rustix::net::socketpair(
        rustix::net::AddressFamily::UNIX,
        rustix::net::SocketType::SEQPACKET,
        rustix::net::SocketFlags::CLOEXEC,
        None,
    )
    .map_err(std::io::Error::from)
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
    wanted.iter().enumerate().map(|(i, &v)| (i as u8, hard_limits()[i].map_or(v, |h| v.min(h)))).collect()
}

/// The server's hard limits of `RESOURCES`, read at its first request: a process's hard
/// limits change only from outside (`prlimit`), and the warm process, which forks the
/// workers, keeps those it was started with anyway.
fn hard_limits() -> &'static [Option<u64>; RESOURCES.len()] {
    static HARD: std::sync::OnceLock<[Option<u64>; RESOURCES.len()]> = std::sync::OnceLock::new();
    HARD.get_or_init(|| RESOURCES.map(|r| rustix::process::getrlimit(r).maximum))
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

/// A worker's private TMPDIR (mode 0700): a kept one (`spare_base/req-N`), used where it
/// is, else a new one (`tmp_base/req-N`). When the request ends it is removed with
/// whatever the worker left there, unless the worker is known to have ended (`reuse`) and
/// the directory is as it was given (empty, a directory, mode 0700, ours, no
/// subdirectory): then it is kept (a new one renamed among the kept ones once). The next
/// worker that gets it finds an empty private directory, as a new one would be (its path,
/// inode number and times are all that may be the same as an earlier request's: nothing
/// the earlier request chose).
struct WorkerTmp<'a> {
    srv: &'a Server,
    path: PathBuf,
    /// Among the kept ones already (in `spare_base`).
    kept: bool,
    reuse: bool,
}

impl<'a> WorkerTmp<'a> {
    fn new(srv: &'a Server, job_id: u64) -> std::io::Result<WorkerTmp<'a>> {
        if let Some(path) = srv.spares.lock().ok().and_then(|mut s| s.pop()) {
            return Ok(WorkerTmp { srv, path, kept: true, reuse: false });
        }
        let path = srv.tmp_base.join(format!("req-{job_id}"));
        private_dir(&path)?;
        Ok(WorkerTmp { srv, path, kept: false, reuse: false })
    }
}

/// The server's effective user id (it never changes).
fn euid() -> u32 {
    static EUID: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *EUID.get_or_init(|| rustix::process::geteuid().as_raw())
}

/// Is `p` an empty directory of ours with mode 0700 (a TMPDIR as it was given)?
fn untouched_dir(p: &Path) -> bool {
    use std::os::unix::fs::MetadataExt;
    let Ok(m) = std::fs::symlink_metadata(p) else { return false };
    m.is_dir()
        && m.mode() & 0o7777 == 0o700
        && m.uid() == euid()
        && m.nlink() == 2
        && std::fs::read_dir(p).is_ok_and(|mut d| d.next().is_none())
}

impl Drop for WorkerTmp<'_> {
    fn drop(&mut self) {
        if self.reuse && untouched_dir(&self.path) {
            if let Ok(mut spares) = self.srv.spares.lock() {
                if spares.len() < MAX_SPARES {
                    if self.kept {
                        spares.push(std::mem::take(&mut self.path));
                        return;
                    }
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

#[cfg(test)]
mod tests {
    use super::*;

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
