//! `net.*`: TCP sockets (plain or TLS), listeners and name resolution.
//!
//! `net.connect`, `net.resolve`, `net.send/recv/read_line/close/addr` need
//! `--allow-network`; `net.listen` and `net.accept` need `--allow-listen`.
//!
//! Every socket is non-blocking underneath: each wait is a `poll` bounded by the call's
//! own timeout and by the run's `--max-time` deadline, so no call waits past either.
//! When the run's deadline is what ended a wait, the run stops with a `time` limit;
//! when the call's own timeout did, `net.recv` / `net.read_line` / `net.connect` raise
//! a `network` error and `net.accept` returns nil.
//!
//! TLS runs on rustls directly (the handshake and records driven by hand over the
//! non-blocking socket), verifying the chain against the run's trust and the name the
//! script asked for. A TLS failure, an I/O error or a stalled send leaves the handle
//! unusable: later calls on it are `network` errors, and only `net.close` and
//! `net.addr` still work.
//!
//! Run budgets (limit kind `sockets`): 16 sockets and listeners open at once, 64
//! connects and 64 accepts, 16 MiB sent and 16 MiB received, 256 name lookups.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec};

use super::netcfg::{self, Dns, LookupError, NetSettings, Tls};
use super::Host;
use super::{gated, Builtin, Cap, Cost, CONST};
use crate::budget::{Budget, NextLine};
use crate::diag::ErrKind;
use crate::error::{Fail, R};
use crate::limits::*;
use crate::value::*;

/// An open socket.
struct Sock {
    tcp: TcpStream,
    tls: Option<Box<rustls::ClientConnection>>,
    /// Bytes received and not yet consumed: `buf[pos..]`.
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    /// Why the socket can no longer be used (after a TLS or I/O failure).
    broken: Option<String>,
    peer: SocketAddr,
    local: SocketAddr,
    /// Lines read by `net.read_line` (`json.next` names a bad line by its number).
    lines: u64,
}

struct Listener {
    l: TcpListener,
    local: SocketAddr,
}

/// Network state of a run: the operator's settings, lazily built TLS and DNS, HTTP
/// state, open sockets and listeners, and the run budgets.
pub struct NetState {
    pub settings: NetSettings,
    pub tls: Tls,
    dns: Option<Arc<Dns>>,
    pub http: super::http::HttpState,
    socks: HashMap<u32, Sock>,
    listeners: HashMap<u32, Listener>,
    next_id: u32,
    pub connects: u64,
    pub accepts: u64,
    pub lookups: u64,
    pub sent: Budget,
    pub received: Budget,
}

/// The network state of a run, kept out of line and made on first use: a run that
/// never touches the network allocates nothing for it, and the evaluator's own state
/// stays small (its hot fields share fewer cache lines).
#[derive(Debug, Default)]
pub struct NetSlot {
    state: Option<Box<NetState>>,
    /// The operator's settings, when any were given.
    given: Option<Box<NetSettings>>,
    /// The per-run byte budgets of the run's limits: sent, received, HTTP bodies.
    budgets: [u64; 3],
}

impl NetSlot {
    pub fn new(settings: &NetSettings, lim: &Limits) -> Self {
        let given = settings.tls_ca_file.is_some() || settings.dns_server.is_some();
        let budgets = [lim.get(L::SocketsSent), lim.get(L::SocketsReceived), lim.get(L::HttpBodies)];
        NetSlot { state: None, given: given.then(|| Box::new(settings.clone())), budgets }
    }

    /// Make the state if this is the run's first network call. Every network builtin
    /// calls this before anything else touches the state.
    pub fn ensure(&mut self) {
        if self.state.is_none() {
            let settings = self.given.as_deref().cloned().unwrap_or_default();
            let mut st = NetState::new(settings);
            [st.sent.max, st.received.max, st.http.bodies.max] = self.budgets;
            self.state = Some(Box::new(st));
        }
    }

    /// The state, if the run has used the network.
    pub fn get(&self) -> Option<&NetState> {
        self.state.as_deref()
    }

    /// Close everything (end of a run).
    pub fn close_all(&mut self) {
        if let Some(s) = &mut self.state {
            s.close_all();
        }
    }
}

impl std::ops::Deref for NetSlot {
    type Target = NetState;
    fn deref(&self) -> &NetState {
        self.state.as_deref().expect("network state is made before use (NetSlot::ensure)")
    }
}

impl std::ops::DerefMut for NetSlot {
    fn deref_mut(&mut self) -> &mut NetState {
        self.state.as_deref_mut().expect("network state is made before use (NetSlot::ensure)")
    }
}

impl std::fmt::Debug for NetState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NetState({} sockets, {} listeners)", self.socks.len(), self.listeners.len())
    }
}

impl Default for NetState {
    fn default() -> Self {
        NetState::new(NetSettings::default())
    }
}

impl NetState {
    /// Cheap: nothing is built until a script uses the network.
    pub fn new(settings: NetSettings) -> Self {
        NetState {
            settings,
            tls: Tls::default(),
            dns: None,
            http: Default::default(),
            socks: HashMap::new(),
            listeners: HashMap::new(),
            next_id: 0,
            connects: 0,
            accepts: 0,
            lookups: 0,
            sent: Budget::new(LimitKind::Sockets, Limits::default().get(L::SocketsSent), "bytes sent on sockets"),
            received: Budget::new(
                LimitKind::Sockets,
                Limits::default().get(L::SocketsReceived),
                "bytes received on sockets",
            ),
        }
    }

    /// The `--dns-server` resolver, if the operator gave one (made on first use).
    pub fn dns(&mut self) -> Option<Arc<Dns>> {
        let server = self.settings.dns_server?;
        Some(Arc::clone(self.dns.get_or_insert_with(|| Arc::new(Dns::new(server)))))
    }

    /// Close every socket and listener and drop the HTTP agent (end of a run).
    pub fn close_all(&mut self) {
        for (_, mut s) in self.socks.drain() {
            close_notify(&mut s);
        }
        self.listeners.clear();
        self.http.close_all();
    }

    pub fn open_count(&self) -> usize {
        self.socks.len() + self.listeners.len()
    }
}

// ----------------------------------------------------------------------
// Waiting
// ----------------------------------------------------------------------

/// Wait until `fd` is ready for `flags` or `until` passes (None: no end). True when
/// ready (errors and hang-ups count as ready: the next read or write reports them).
fn wait_fd(fd: &impl AsFd, flags: PollFlags, until: Option<Instant>) -> std::io::Result<bool> {
    loop {
        let ts = until.map(|u| {
            let left = crate::meter::left(u);
            Timespec { tv_sec: left.as_secs() as _, tv_nsec: left.subsec_nanos() as _ }
        });
        let mut fds = [PollFd::new(fd, flags)];
        match rustix::event::poll(&mut fds, ts.as_ref()) {
            Ok(0) => {
                if crate::meter::past(until) {
                    return Ok(false);
                }
            }
            Ok(_) => return Ok(true),
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(std::io::Error::from_raw_os_error(e.raw_os_error())),
        }
    }
}

/// The earlier of the call's own end and the run's deadline.
fn until_of(it: &Host, own: Option<Duration>) -> Option<Instant> {
    it.meter.until(own)
}

fn deadline_passed(it: &Host) -> bool {
    it.meter.deadline_passed()
}

fn time_limit(it: &Host, name: &str) -> Fail {
    it.limit(LimitKind::Time, format!("wall-clock deadline (--max-time) reached in {name}"))
}

/// A wait that ended: the run's deadline (a `time` limit) or the call's own timeout
/// (a `network` error).
fn timed_out(it: &Host, name: &str, what: &str, ms: u64) -> Fail {
    if deadline_passed(it) {
        return time_limit(it, name);
    }
    it.err(ErrKind::Network, format!("{name}: {what} timed out after {ms} ms"))
}

fn reason(e: &std::io::Error) -> String {
    if let Some(inner) = e.get_ref() {
        if let Some(r) = inner.downcast_ref::<rustls::Error>() {
            return format!("TLS: {r}");
        }
    }
    crate::fileio::io_reason(e)
}

// ----------------------------------------------------------------------
// Socket I/O
// ----------------------------------------------------------------------

enum Fill {
    Data,
    Eof,
    Timeout,
}

/// Receive more bytes into the socket's buffer.
fn fill(s: &mut Sock, until: Option<Instant>) -> std::io::Result<Fill> {
    use std::io::ErrorKind::*;
    if s.pos > 0 {
        s.buf.drain(..s.pos);
        s.pos = 0;
    }
    let start = s.buf.len();
    loop {
        s.buf.resize(start + NET_CHUNK, 0);
        let got = match &mut s.tls {
            None => s.tcp.read(&mut s.buf[start..]),
            Some(conn) => conn.reader().read(&mut s.buf[start..]),
        };
        match got {
            Ok(0) => {
                s.buf.truncate(start);
                s.eof = true;
                return Ok(Fill::Eof);
            }
            Ok(n) => {
                s.buf.truncate(start + n);
                return Ok(Fill::Data);
            }
            // A TLS peer that closes without close_notify: the end of the stream, as
            // most TLS clients treat it.
            Err(e) if e.kind() == UnexpectedEof && s.tls.is_some() => {
                s.buf.truncate(start);
                s.eof = true;
                return Ok(Fill::Eof);
            }
            Err(e) if e.kind() == Interrupted => {}
            Err(e) if e.kind() == WouldBlock => {
                s.buf.truncate(start);
                match &mut s.tls {
                    None => {
                        if !wait_fd(&s.tcp, PollFlags::IN, until)? {
                            return Ok(Fill::Timeout);
                        }
                    }
                    Some(conn) => {
                        // Records wanted: read what the socket has, or wait for it.
                        match conn.read_tls(&mut s.tcp) {
                            Ok(_) => {}
                            Err(e) if e.kind() == Interrupted => {}
                            Err(e) if e.kind() == WouldBlock => {
                                if !wait_fd(&s.tcp, PollFlags::IN, until)? {
                                    return Ok(Fill::Timeout);
                                }
                                continue;
                            }
                            Err(e) => return Err(e),
                        }
                        if let Err(e) = conn.process_new_packets() {
                            let _ = flush_tls_now(conn, &mut s.tcp);
                            return Err(std::io::Error::other(e));
                        }
                        // Anything the records call for (alerts, key updates), without waiting.
                        let _ = flush_tls_now(conn, &mut s.tcp);
                    }
                }
            }
            Err(e) => {
                s.buf.truncate(start);
                return Err(e);
            }
        }
    }
}

/// Write pending TLS records as far as the socket takes them now.
fn flush_tls_now(conn: &mut rustls::ClientConnection, tcp: &mut TcpStream) -> std::io::Result<()> {
    while conn.wants_write() {
        match conn.write_tls(tcp) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Wait for room to write: the stall timeout, never past the run's deadline.
fn wait_writable(tcp: &TcpStream, deadline: Option<Instant>) -> std::io::Result<bool> {
    let stall = crate::meter::after(Duration::from_millis(NET_SEND_STALL_MS));
    wait_fd(tcp, PollFlags::OUT, Some(deadline.map(|d| d.min(stall)).unwrap_or(stall)))
}

/// Write pending TLS records, waiting for room. False: the wait ended.
fn flush_tls(
    conn: &mut rustls::ClientConnection,
    tcp: &mut TcpStream,
    deadline: Option<Instant>,
) -> std::io::Result<bool> {
    while conn.wants_write() {
        match conn.write_tls(tcp) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                if !wait_writable(tcp, deadline)? {
                    return Ok(false);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Send all of `data`. False: the peer took no data for the stall timeout, or the
/// run's deadline passed.
fn send_all(s: &mut Sock, data: &[u8], deadline: Option<Instant>) -> std::io::Result<bool> {
    use std::io::ErrorKind::*;
    let mut off = 0;
    match &mut s.tls {
        None => {
            while off < data.len() {
                match s.tcp.write(&data[off..]) {
                    Ok(n) => off += n,
                    Err(e) if e.kind() == Interrupted => {}
                    Err(e) if e.kind() == WouldBlock => {
                        if !wait_writable(&s.tcp, deadline)? {
                            return Ok(false);
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        Some(conn) => {
            while off < data.len() {
                off += conn.writer().write(&data[off..])?;
                if !flush_tls(conn, &mut s.tcp, deadline)? {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// Say goodbye on a TLS socket (best effort, without waiting).
fn close_notify(s: &mut Sock) {
    if let Some(conn) = &mut s.tls {
        if s.broken.is_none() {
            conn.send_close_notify();
            let _ = flush_tls_now(conn, &mut s.tcp);
        }
    }
}

enum Hs {
    Done,
    Timeout,
}

/// Drive the TLS handshake to its end, or until `until`.
fn handshake(conn: &mut rustls::ClientConnection, tcp: &mut TcpStream, until: Option<Instant>) -> std::io::Result<Hs> {
    use std::io::ErrorKind::*;
    loop {
        while conn.wants_write() {
            match conn.write_tls(tcp) {
                Ok(_) => {}
                Err(e) if e.kind() == Interrupted => {}
                Err(e) if e.kind() == WouldBlock => {
                    if !wait_fd(tcp, PollFlags::OUT, until)? {
                        return Ok(Hs::Timeout);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        if !conn.is_handshaking() {
            return Ok(Hs::Done);
        }
        match conn.read_tls(tcp) {
            Ok(0) => return Err(std::io::Error::new(UnexpectedEof, "the peer closed the connection")),
            Ok(_) => {
                if let Err(e) = conn.process_new_packets() {
                    let _ = flush_tls_now(conn, tcp);
                    return Err(std::io::Error::other(e));
                }
            }
            Err(e) if e.kind() == Interrupted => {}
            Err(e) if e.kind() == WouldBlock => {
                if !wait_fd(tcp, PollFlags::IN, until)? {
                    return Ok(Hs::Timeout);
                }
            }
            Err(e) => return Err(e),
        }
    }
}

// ----------------------------------------------------------------------
// Arguments
// ----------------------------------------------------------------------

/// A host argument: a name or an IP address (IPv6 with or without brackets).
fn host_arg(it: &Host, name: &str, args: &[Value], i: usize) -> R<String> {
    let h = it.arg_str(name, args, i)?;
    let bad = |why: &str| it.err(ErrKind::Value, format!("{name}: argument {} {why}", i + 1));
    if h.is_empty() {
        return Err(bad("must not be empty"));
    }
    if h.len() > MAX_HOST_BYTES {
        return Err(bad(&format!("is longer than {MAX_HOST_BYTES} bytes")));
    }
    if !h.iter().all(|c| c.is_ascii_alphanumeric() || b".-_:[]".contains(c)) {
        return Err(bad(&format!("is not a host name or IP address: {}", crate::diag::quoted(h))));
    }
    Ok(String::from_utf8_lossy(h).into_owned())
}

/// An optional `timeout_ms` argument of net.accept / net.recv / net.read_line.
fn wait_arg(it: &Host, name: &str, args: &[Value], i: usize) -> R<Option<u64>> {
    match it.opt(args, i) {
        None => Ok(None),
        Some(_) => Ok(Some(it.arg_int(name, args, i, 0.0, MAX_NET_WAIT_MS as f64)? as u64)),
    }
}

fn handle_arg(it: &Host, name: &str, args: &[Value], i: usize, kinds: &[HandleKind]) -> R<Handle> {
    it.arg_handle(name, args, i, kinds, |h| match h.kind {
        HandleKind::Socket => it.net.socks.contains_key(&h.id),
        _ => it.net.listeners.contains_key(&h.id),
    })
}

fn sock_arg(it: &Host, name: &str, args: &[Value]) -> R<u32> {
    let h = handle_arg(it, name, args, 0, &[HandleKind::Socket])?;
    if let Some(why) = &it.net.socks[&h.id].broken {
        return Err(
            it.err(ErrKind::Network, format!("{name}: the socket is unusable after an earlier failure ({why})"))
        );
    }
    Ok(h.id)
}

fn slot_check(it: &Host) -> R<()> {
    if it.net.open_count() >= it.lim.n(L::SocketsOpen) {
        return Err(it.limit(
            LimitKind::Sockets,
            format!(
                "more than {max_open_sockets} sockets and listeners open at once",
                max_open_sockets = it.lim.n(L::SocketsOpen)
            ),
        ));
    }
    Ok(())
}

fn new_id(it: &mut Host) -> u32 {
    it.net.next_id += 1;
    it.net.next_id
}

/// Charge one name lookup to the run's budget.
fn charge_lookup(it: &mut Host) -> R<()> {
    if it.net.lookups >= it.lim.get(L::SocketsLookups) {
        return Err(it.limit(
            LimitKind::Sockets,
            format!(
                "more than {max_dns_lookups} name lookups per run",
                max_dns_lookups = it.lim.get(L::SocketsLookups)
            ),
        ));
    }
    it.net.lookups += 1;
    Ok(())
}

// ----------------------------------------------------------------------
// Builtins
// ----------------------------------------------------------------------

fn connect(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.connect";
    let host = host_arg(it, NAME, args, 0)?;
    let port = it.arg_int(NAME, args, 1, 1.0, 65535.0)? as u16;
    let mut tls = false;
    let mut timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
    if it.opt(args, 2).is_some() {
        let m = it.arg_map(NAME, args, 2)?;
        for (k, v) in m.iter() {
            match (k.as_slice(), v) {
                (b"tls", Value::Bool(b)) => tls = *b,
                (b"tls", Value::Nil) => {}
                (b"tls", other) => {
                    return Err(
                        it.err(ErrKind::Type, format!("{NAME}: option tls must be a bool, got {}", other.type_name()))
                    )
                }
                (b"timeout_ms", Value::Nil) => {}
                (b"timeout_ms", Value::Num(n)) => {
                    timeout_ms = it.int_in(NAME, 2, *n, 1.0, MAX_CONNECT_TIMEOUT_MS as f64).map_err(|_| {
                        it.err(
                            ErrKind::Value,
                            format!(
                                "{NAME}: option timeout_ms must be an integer in 1..{MAX_CONNECT_TIMEOUT_MS}, got {}",
                                num_to_string(*n)
                            ),
                        )
                    })? as u64
                }
                (b"timeout_ms", other) => {
                    return Err(it.err(
                        ErrKind::Type,
                        format!("{NAME}: option timeout_ms must be a number, got {}", other.type_name()),
                    ))
                }
                (other, _) => {
                    return Err(it.err(
                        ErrKind::Value,
                        format!("{NAME}: unknown option {} (known: tls, timeout_ms)", crate::diag::quoted(other)),
                    ))
                }
            }
        }
    }
    slot_check(it)?;
    if it.net.connects >= it.lim.get(L::SocketsConnects) {
        return Err(it.limit(
            LimitKind::Sockets,
            format!(
                "more than {max_connects} net.connect calls per run",
                max_connects = it.lim.get(L::SocketsConnects)
            ),
        ));
    }
    it.net.connects += 1;
    if deadline_passed(it) {
        return Err(time_limit(it, NAME));
    }
    // One deadline for resolution, connects and the handshake.
    let until = until_of(it, Some(Duration::from_millis(timeout_ms))).expect("a connect has a deadline");
    let shown = if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let gate = it.gate.clone();
    let ips = match netcfg::ip_literal(&host) {
        Some(ip) => vec![ip],
        None => {
            // A name no grant could cover is refused before any DNS query is sent.
            if !gate.resolve_allowed(&host) {
                it.audit_note(shown.clone());
                return Err(
                    it.err(ErrKind::Permission, format!("{NAME}: \"{shown}\" is outside the --allow-network scope"))
                );
            }
            charge_lookup(it)?;
            let dns = it.net.dns();
            let left = crate::meter::left(until);
            match netcfg::lookup(dns.as_deref(), &host, left) {
                Ok(v) => v,
                Err(LookupError::Timeout) => {
                    return Err(timed_out(it, NAME, &format!("resolving \"{host}\""), timeout_ms))
                }
                Err(LookupError::Failed(m)) => {
                    return Err(it.err(ErrKind::Network, format!("{NAME}: cannot resolve \"{host}\": {m}")))
                }
            }
        }
    };
    // The scope is checked on the addresses the connection will really go to (after
    // DNS): only those are tried.
    let all = ips.len();
    let ips: Vec<IpAddr> =
        ips.into_iter().filter(|ip| gate.connect_allowed(&host, SocketAddr::new(*ip, port))).collect();
    if ips.is_empty() {
        it.audit_note(shown.clone());
        let what = if netcfg::ip_literal(&host).is_some() {
            String::new()
        } else {
            format!(" (resolved to {all} address(es))")
        };
        return Err(
            it.err(ErrKind::Permission, format!("{NAME}: \"{shown}\"{what} is outside the --allow-network scope"))
        );
    }
    let mut last: Option<std::io::Error> = None;
    let mut tcp = None;
    for ip in ips.iter().take(it.lim.n(L::SocketsAddrs)) {
        let left = crate::meter::left(until);
        if left.is_zero() {
            break;
        }
        match TcpStream::connect_timeout(&SocketAddr::new(*ip, port), left) {
            Ok(s) => {
                tcp = Some(s);
                break;
            }
            Err(e) => last = Some(e),
        }
    }
    let Some(mut tcp) = tcp else {
        let timed = crate::meter::now() >= until
            || last.as_ref().map(|e| e.kind() == std::io::ErrorKind::TimedOut).unwrap_or(false);
        if timed {
            return Err(timed_out(it, NAME, &format!("connecting to {shown}"), timeout_ms));
        }
        let why = last.map(|e| reason(&e)).unwrap_or_else(|| "no address to try".into());
        return Err(it.err(ErrKind::Network, format!("{NAME}: cannot connect to {shown}: {why}")));
    };
    let fail = |it: &Host, e: std::io::Error| it.err(ErrKind::Network, format!("{NAME}: {shown}: {}", reason(&e)));
    tcp.set_nodelay(true).map_err(|e| fail(it, e))?;
    tcp.set_nonblocking(true).map_err(|e| fail(it, e))?;
    let peer = tcp.peer_addr().map_err(|e| fail(it, e))?;
    let local = tcp.local_addr().map_err(|e| fail(it, e))?;
    it.audit_note(format!("{shown} -> {peer}"));
    let conn = if tls {
        let cfg =
            it.net.tls.client_config(&it.net.settings).map_err(|m| it.err(ErrKind::Network, format!("{NAME}: {m}")))?;
        let bare = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let server = rustls::pki_types::ServerName::try_from(bare)
            .map_err(|_| it.err(ErrKind::Network, format!("{NAME}: \"{host}\" is not a name TLS can verify")))?;
        let mut conn = rustls::ClientConnection::new(cfg, server)
            .map_err(|e| it.err(ErrKind::Network, format!("{NAME}: TLS set-up failed: {e}")))?;
        match handshake(&mut conn, &mut tcp, Some(until)) {
            Ok(Hs::Done) => {}
            Ok(Hs::Timeout) => return Err(timed_out(it, NAME, &format!("TLS handshake with {shown}"), timeout_ms)),
            Err(e) => {
                return Err(
                    it.err(ErrKind::Network, format!("{NAME}: TLS handshake with {shown} failed: {}", reason(&e)))
                )
            }
        }
        Some(Box::new(conn))
    } else {
        None
    };
    let id = new_id(it);
    it.net
        .socks
        .insert(id, Sock { tcp, tls: conn, buf: Vec::new(), pos: 0, eof: false, broken: None, peer, local, lines: 0 });
    Ok(Value::Handle(Handle { kind: HandleKind::Socket, id }))
}

fn listen(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.listen";
    let h = it.arg_str(NAME, args, 0)?;
    let ip: IpAddr = match h.as_slice() {
        b"" | b"localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        other => std::str::from_utf8(other).ok().and_then(netcfg::ip_literal).ok_or_else(|| {
            it.err(
                ErrKind::Value,
                format!(
                    "{NAME}: argument 1 must be an IP address or \"\" (127.0.0.1), got {}",
                    crate::diag::quoted(other)
                ),
            )
        })?,
    };
    let port = it.arg_int(NAME, args, 1, 0.0, 65535.0)? as u16;
    slot_check(it)?;
    let addr = SocketAddr::new(ip, port);
    it.audit_note(addr.to_string());
    if !it.gate.listen_allowed(&ip.to_string(), addr) {
        return Err(it.err(ErrKind::Permission, format!("{NAME}: {addr} is outside the --allow-listen scope")));
    }
    let l = TcpListener::bind(addr)
        .map_err(|e| it.err(ErrKind::Network, format!("{NAME}: cannot listen on {addr}: {}", reason(&e))))?;
    l.set_nonblocking(true).map_err(|e| it.err(ErrKind::Network, format!("{NAME}: {}", reason(&e))))?;
    let local = l.local_addr().map_err(|e| it.err(ErrKind::Network, format!("{NAME}: {}", reason(&e))))?;
    let id = new_id(it);
    it.net.listeners.insert(id, Listener { l, local });
    Ok(Value::Handle(Handle { kind: HandleKind::Listener, id }))
}

fn accept(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.accept";
    let h = handle_arg(it, NAME, args, 0, &[HandleKind::Listener])?;
    let wait = wait_arg(it, NAME, args, 1)?;
    slot_check(it)?;
    if it.net.accepts >= it.lim.get(L::SocketsAccepts) {
        return Err(it.limit(
            LimitKind::Sockets,
            format!(
                "more than {max_accepts} accepted connections per run",
                max_accepts = it.lim.get(L::SocketsAccepts)
            ),
        ));
    }
    if deadline_passed(it) {
        return Err(time_limit(it, NAME));
    }
    let until = until_of(it, wait.map(Duration::from_millis));
    let (tcp, peer) = loop {
        let l = &it.net.listeners[&h.id].l;
        match l.accept() {
            Ok(x) => break x,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => match wait_fd(l, PollFlags::IN, until) {
                Ok(true) => {}
                Ok(false) => {
                    if deadline_passed(it) {
                        return Err(time_limit(it, NAME));
                    }
                    return Ok(Value::Nil);
                }
                Err(e) => return Err(it.err(ErrKind::Network, format!("{NAME}: {}", reason(&e)))),
            },
            Err(e) if matches!(e.kind(), std::io::ErrorKind::Interrupted | std::io::ErrorKind::ConnectionAborted) => {}
            Err(e) => return Err(it.err(ErrKind::Network, format!("{NAME}: {}", reason(&e)))),
        }
    };
    let fail = |it: &Host, e: std::io::Error| it.err(ErrKind::Network, format!("{NAME}: {}", reason(&e)));
    tcp.set_nonblocking(true).map_err(|e| fail(it, e))?;
    tcp.set_nodelay(true).map_err(|e| fail(it, e))?;
    let local = tcp.local_addr().map_err(|e| fail(it, e))?;
    it.net.accepts += 1;
    let id = new_id(it);
    it.net
        .socks
        .insert(id, Sock { tcp, tls: None, buf: Vec::new(), pos: 0, eof: false, broken: None, peer, local, lines: 0 });
    Ok(Value::Handle(Handle { kind: HandleKind::Socket, id }))
}

fn send(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.send";
    let id = sock_arg(it, NAME, args)?;
    let data = it.arg_str(NAME, args, 1)?.clone();
    if data.is_empty() {
        return Ok(Value::Nil);
    }
    it.net.sent.charge(data.len() as u64).map_err(|e| it.budget_fail(e))?;
    it.audit_bytes = data.len() as u64;
    if deadline_passed(it) {
        return Err(time_limit(it, NAME));
    }
    let deadline = it.meter.deadline;
    let s = it.net.socks.get_mut(&id).expect("checked socket");
    match send_all(s, &data, deadline) {
        Ok(true) => Ok(Value::Nil),
        Ok(false) => {
            if deadline_passed(it) {
                return Err(time_limit(it, NAME));
            }
            let why = format!("the peer took no data for {NET_SEND_STALL_MS} ms");
            it.net.socks.get_mut(&id).expect("checked socket").broken = Some(why.clone());
            Err(it.err(ErrKind::Network, format!("{NAME}: {why}")))
        }
        Err(e) => {
            let why = reason(&e);
            it.net.socks.get_mut(&id).expect("checked socket").broken = Some(why.clone());
            Err(it.err(ErrKind::Network, format!("{NAME}: {why}")))
        }
    }
}

/// Receive more into socket `id`'s buffer, mapping the outcome for the script.
/// Ok(true): more data or the end of the stream; Ok(false) never (timeouts are errors).
fn fill_for(it: &mut Host, name: &str, id: u32, until: Option<Instant>, wait: Option<u64>) -> R<()> {
    let s = it.net.socks.get_mut(&id).expect("checked socket");
    // (A long line is buffered whole: its growth is found room for first.)
    if let Err(m) = it.heap.grow(&mut s.buf, NET_CHUNK) {
        return Err(it.memory_over(m));
    }
    match fill(s, until) {
        Ok(Fill::Data) | Ok(Fill::Eof) => Ok(()),
        Ok(Fill::Timeout) => Err(timed_out(it, name, "receiving", wait.unwrap_or(0))),
        Err(e) => {
            let why = reason(&e);
            it.net.socks.get_mut(&id).expect("checked socket").broken = Some(why.clone());
            Err(it.err(ErrKind::Network, format!("{name}: {why}")))
        }
    }
}

fn consume(it: &mut Host, id: u32, n: usize) -> R<()> {
    it.net.received.charge(n as u64).map_err(|e| it.budget_fail(e))?;
    it.net.socks.get_mut(&id).expect("checked socket").pos += n;
    Ok(())
}

fn recv(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.recv";
    let id = sock_arg(it, NAME, args)?;
    let max = it.arg_int(NAME, args, 1, 1.0, MAX_NET_RECV as f64)? as usize;
    let wait = wait_arg(it, NAME, args, 2)?;
    if deadline_passed(it) {
        return Err(time_limit(it, NAME));
    }
    let until = until_of(it, wait.map(Duration::from_millis));
    loop {
        let s = &it.net.socks[&id];
        let avail = s.buf.len() - s.pos;
        if avail > 0 {
            let take = avail.min(max);
            let v = Value::str_from(&s.buf[s.pos..s.pos + take]);
            consume(it, id, take)?;
            it.audit_bytes = take as u64;
            return Ok(v);
        }
        if s.eof {
            return Ok(Value::Nil);
        }
        fill_for(it, NAME, id, until, wait)?;
    }
}

fn line_limit(it: &Host) -> Fail {
    it.limit(
        LimitKind::Sockets,
        format!("a line longer than {max_net_line} bytes from a socket", max_net_line = it.lim.n(L::SocketsLine)),
    )
}

/// Lines socket `id` has read so far.
pub(crate) fn lines_read(it: &Host, id: u32) -> u64 {
    it.net.socks.get(&id).map_or(0, |s| s.lines)
}

pub(crate) fn read_line(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.read_line";
    let id = sock_arg(it, NAME, args)?;
    let wait = wait_arg(it, NAME, args, 1)?;
    if deadline_passed(it) {
        return Err(time_limit(it, NAME));
    }
    let until = until_of(it, wait.map(Duration::from_millis));
    let mut searched = 0;
    loop {
        let s = &it.net.socks[&id];
        let avail = &s.buf[s.pos..];
        match crate::budget::next_line(avail, searched, it.line_cap(L::SocketsLine), s.eof) {
            NextLine::Line { len, consumed } => {
                if let Err(m) = it.heap.room(len) {
                    return Err(it.memory_over(m));
                }
                let v = Value::str_from(&avail[..len]);
                consume(it, id, consumed)?;
                if let Some(s) = it.net.socks.get_mut(&id) {
                    s.lines += 1;
                }
                return Ok(v);
            }
            NextLine::End => return Ok(Value::Nil),
            NextLine::TooLong => return Err(it.line_too_long(L::SocketsLine, || line_limit(it))),
            NextLine::More => searched = avail.len(),
        }
        // The buffer is compacted by `fill`: the search restarts from where it was.
        fill_for(it, NAME, id, until, wait)?;
    }
}

fn close(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.close";
    let h = handle_arg(it, NAME, args, 0, &[HandleKind::Socket, HandleKind::Listener])?;
    match h.kind {
        HandleKind::Socket => {
            if let Some(mut s) = it.net.socks.remove(&h.id) {
                close_notify(&mut s);
            }
        }
        _ => {
            it.net.listeners.remove(&h.id);
        }
    }
    Ok(Value::Nil)
}

fn addr_map(it: &Host, a: SocketAddr, local: Option<SocketAddr>) -> R<Value> {
    let mut m = Map::with_capacity(4);
    m.insert(bytes(b"host"), Value::str(a.ip().to_string().into_bytes()));
    m.insert(bytes(b"port"), Value::Num(a.port() as f64));
    if let Some(l) = local {
        m.insert(bytes(b"local_host"), Value::str(l.ip().to_string().into_bytes()));
        m.insert(bytes(b"local_port"), Value::Num(l.port() as f64));
    }
    it.make_map(m)
}

fn addr(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.addr";
    let h = handle_arg(it, NAME, args, 0, &[HandleKind::Socket, HandleKind::Listener])?;
    match h.kind {
        HandleKind::Socket => {
            let s = &it.net.socks[&h.id];
            addr_map(it, s.peer, Some(s.local))
        }
        _ => addr_map(it, it.net.listeners[&h.id].local, None),
    }
}

fn resolve(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "net.resolve";
    let name = host_arg(it, NAME, args, 0)?;
    it.audit_note(name.clone());
    let ips = match netcfg::ip_literal(&name) {
        Some(ip) => vec![ip],
        None => {
            if !it.gate.resolve_allowed(&name) {
                return Err(
                    it.err(ErrKind::Permission, format!("{NAME}: \"{name}\" is outside the --allow-network scope"))
                );
            }
            charge_lookup(it)?;
            if deadline_passed(it) {
                return Err(time_limit(it, NAME));
            }
            let until = until_of(it, Some(Duration::from_millis(DNS_TIMEOUT_MS))).expect("a lookup has a deadline");
            let dns = it.net.dns();
            match netcfg::lookup(dns.as_deref(), &name, crate::meter::left(until)) {
                Ok(v) => v,
                Err(LookupError::Timeout) => {
                    return Err(timed_out(it, NAME, &format!("resolving \"{name}\""), DNS_TIMEOUT_MS))
                }
                Err(LookupError::Failed(m)) => {
                    return Err(it.err(ErrKind::Network, format!("{NAME}: cannot resolve \"{name}\": {m}")))
                }
            }
        }
    };
    it.make_list(ips.into_iter().map(|ip| Value::str(ip.to_string().into_bytes())).collect())
}

const N: Cap = Cap::Network;
const L: Cap = Cap::Listen;

pub const TABLE: &[Builtin] = &[
    gated("net.connect", "net.connect(host, port[, opts])", 2, 3, N, CONST, connect),
    gated("net.listen", "net.listen(host, port)", 2, 2, L, CONST, listen),
    gated("net.accept", "net.accept(listener[, timeout_ms])", 1, 2, L, CONST, accept),
    gated("net.send", "net.send(socket, data)", 2, 2, N, Cost::io(1.0), send),
    gated("net.recv", "net.recv(socket, max_bytes[, timeout_ms])", 2, 3, N, Cost::io(1.0), recv),
    gated("net.read_line", "net.read_line(socket[, timeout_ms])", 1, 2, N, Cost::io(1.0), read_line),
    gated("net.close", "net.close(handle)", 1, 1, N, CONST, close),
    gated("net.addr", "net.addr(handle)", 1, 1, N, CONST, addr),
    gated("net.resolve", "net.resolve(name)", 1, 1, N, Cost::items(2.0), resolve),
];
