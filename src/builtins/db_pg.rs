//! PostgreSQL behind `db.*` (SPEC 10, round 3): `db.open("postgresql://user@host[:port]/db")`
//! and the same `db.exec`, `db.query`, `db.close` as SQLite, through `tokio-postgres`
//! (TLS through rustls with the ring provider, as `net.*` and `http.*`).
//!
//! - Lazy: no runtime, TLS or resolver is made until a script opens a PostgreSQL URL.
//!   Every connection lives on one current-thread tokio runtime of the run; it only runs
//!   inside a builtin call (nothing happens in the background between calls).
//! - The gate: the host is resolved with the network code's resolver (`--dns-server` or
//!   the system's), each address is checked against the `--allow-db=postgresql://...`
//!   scopes (`Gate::pg_allowed`, the `--allow-network` host rules with the database
//!   name too), and only allowed addresses are connected to: our own TCP socket, handed
//!   to the client with `connect_raw`. `--allow-network` does not grant it.
//! - The leash: the connection's set-up (resolution, TCP, TLS, start-up and
//!   authentication) runs under one deadline (`connect_timeout`, 5 s by default, never
//!   past `--max-time`). Every statement runs under the server's `statement_timeout`
//!   (set from the time left) and a client-side timeout a little longer; past the
//!   deadline the run stops with the `time` limit. Rows are read one at a time from a
//!   portal stream (`query_raw`) and charged to work and storage as each arrives, so a
//!   10-million-row SELECT ends with a limit, not with the result in memory first; the
//!   protocol reader refuses any one message longer than `PG_MAX_MESSAGE` bytes before
//!   it is buffered.
//! - The password (from the URL, or `PGPASSWORD` of the environment when the operator
//!   passes it) is never shown: messages, audit lines and `leash check` show the URL
//!   without it.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_postgres::types::{FromSql, IsNull, ToSql, Type};

use super::netcfg::{self, LookupError};
use super::Host;
use crate::diag::ErrKind;
use crate::error::{Fail, R};
use crate::limits::*;
use crate::value::*;

/// Default connection set-up deadline (resolution, TCP, TLS, authentication), ms.
const PG_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Largest `connect_timeout` a URL may ask for, seconds.
const PG_MAX_CONNECT_TIMEOUT_S: u64 = 30;
/// The statement timeout of a run without `--max-time`, ms.
const PG_STATEMENT_TIMEOUT_MS: u64 = 30_000;
/// The client-side timeout waits this much longer than the server's, so that the
/// server's own cancel (a clean error, the connection kept) normally comes first.
const PG_CLIENT_GRACE_MS: u64 = 250;
/// Re-send `statement_timeout` before a statement when this long has passed since it
/// was last set (the server's bound then overshoots the deadline by at most this).
const PG_TIMEOUT_REFRESH_MS: u64 = 100;
/// Largest protocol message read from the server, bytes (a row, an error): a longer
/// one is refused as its header arrives, before its body is buffered.
const PG_MAX_MESSAGE: u64 = 64 * MIB as u64;
/// Work units charged per row received, and per byte of it.
const WORK_PG_ROW: u64 = 300;
const WORK_PG_BYTE: u64 = 1;
/// Work units charged for a connection's set-up.
const WORK_PG_CONNECT: u64 = 100_000;
/// Addresses tried at most per connection.
const PG_MAX_ADDRS: usize = 8;

/// Does the `db.open` argument name a PostgreSQL server?
pub fn is_url(p: &[u8]) -> bool {
    crate::gate::is_pg_url(p)
}

/// A `db.open` literal as `leash check --json` shows it: a PostgreSQL URL without its
/// password (and without its query).
pub fn redact(p: &[u8]) -> Vec<u8> {
    if !is_url(p) {
        return p.to_vec();
    }
    match parse_url(&String::from_utf8_lossy(p)) {
        Ok(u) => u.shown().into_bytes(),
        Err(_) => b"postgresql://(unparsable URL)".to_vec(),
    }
}

/// `line` with the password of any PostgreSQL URL in it masked (each character an
/// `*`, so that columns stay where they were): for source lines shown in diagnostics.
pub fn mask_passwords(line: &str) -> std::borrow::Cow<'_, str> {
    let lower = line.to_ascii_lowercase();
    if !lower.contains("postgres") {
        return std::borrow::Cow::Borrowed(line);
    }
    let mut out: Vec<char> = line.chars().collect();
    let idx: Vec<usize> = line.char_indices().map(|(i, _)| i).collect();
    let mut from = 0;
    while let Some(k) = lower[from..].find("://") {
        let start = from + k + 3;
        from = start;
        if !(lower[..start - 3].ends_with("postgresql") || lower[..start - 3].ends_with("postgres")) {
            continue;
        }
        let end = line[start..]
            .find(|c: char| c == '/' || c == '"' || c == '\'' || c == '?' || c.is_whitespace())
            .map_or(line.len(), |e| start + e);
        let auth = &line[start..end];
        if let Some(at) = auth.rfind('@') {
            if let Some(colon) = auth[..at].find(':') {
                for (ci, bi) in idx.iter().enumerate() {
                    if *bi > start + colon && *bi < start + at {
                        out[ci] = '*';
                    }
                }
            }
        }
    }
    std::borrow::Cow::Owned(out.into_iter().collect())
}

/// Bytes received and the message-size guard, shared with the protocol reader.
#[derive(Debug, Default)]
struct Io {
    received: AtomicU64,
    /// The size of a message refused by the guard (0: none).
    too_big: AtomicU64,
}

/// Open PostgreSQL connections and their runtime.
#[derive(Default)]
pub struct PgState {
    rt: Option<Arc<tokio::runtime::Runtime>>,
    conns: HashMap<u32, PgConn>,
    /// Connections opened in this run (bounded like `net.connect`'s).
    opened: u64,
}

impl std::fmt::Debug for PgState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PgState({} connections)", self.conns.len())
    }
}

pub struct PgConn {
    /// None once the connection is lost (the handle stays until `db.close`).
    client: Option<tokio_postgres::Client>,
    task: Option<tokio::task::JoinHandle<()>>,
    /// Why the connection was lost.
    lost: Option<String>,
    shown: String,
    io: Arc<Io>,
    /// When `statement_timeout` was last set.
    timeout_set: Instant,
}

impl PgState {
    pub fn has(&self, id: u32) -> bool {
        self.conns.contains_key(&id)
    }

    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    pub fn insert(&mut self, id: u32, c: PgConn) {
        self.conns.insert(id, c);
    }

    /// Close every connection (end of a run): each is told to terminate, all within
    /// 200 ms.
    pub fn close_all(&mut self) {
        let until = crate::meter::after(Duration::from_millis(200));
        let ids: Vec<u32> = self.conns.keys().copied().collect();
        for id in ids {
            if let Some(c) = self.conns.remove(&id) {
                self.shut(c, until);
            }
        }
    }

    fn shut(&self, mut c: PgConn, until: Instant) {
        drop(c.client.take());
        if let (Some(rt), Some(task)) = (&self.rt, c.task.take()) {
            // Dropping the client ends the connection's task (it sends Terminate).
            rt.block_on(async {
                let _ = tokio::time::timeout_at(until.into(), task).await;
            });
        }
    }
}

// ----------------------------------------------------------------------
// URLs
// ----------------------------------------------------------------------

#[derive(Debug)]
struct PgUrl {
    user: String,
    password: Option<String>,
    host: String,
    port: u16,
    db: String,
    tls: bool,
    connect_timeout_ms: u64,
    application_name: Option<String>,
}

impl PgUrl {
    fn host_shown(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        }
    }

    /// The URL as messages and audit lines show it: never the password.
    fn shown(&self) -> String {
        format!("postgresql://{}@{}:{}/{}", self.user, self.host_shown(), self.port, self.db)
    }
}

fn pct_decode(s: &str, what: &str) -> Result<String, String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            let hex = b.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
            let v = hex
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("a bad %-escape in the {what}"))?;
            out.push(v);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    let s = String::from_utf8(out).map_err(|_| format!("the {what} is not UTF-8"))?;
    if s.contains('\0') {
        return Err(format!("the {what} contains a NUL byte"));
    }
    Ok(s)
}

/// Parse `postgresql://user[:password]@host[:port][/db][?sslmode=..&connect_timeout=..]`.
/// A message never quotes the URL (it may hold a password).
fn parse_url(url: &str) -> Result<PgUrl, String> {
    let rest = url.split_once("://").map(|(_, r)| r).unwrap_or_default();
    let (main, query) = match rest.split_once('?') {
        Some((m, q)) => (m, q),
        None => (rest, ""),
    };
    let (auth, db) = match main.split_once('/') {
        Some((a, d)) => (a, d),
        None => (main, ""),
    };
    let (userinfo, hostport) = match auth.rsplit_once('@') {
        Some((u, h)) => (u, h),
        None => return Err("names no user (postgresql://USER@HOST[:PORT]/DB)".into()),
    };
    let (user, password) = match userinfo.split_once(':') {
        Some((u, p)) => (u, Some(pct_decode(p, "password")?)),
        None => (userinfo, None),
    };
    let user = pct_decode(user, "user")?;
    if user.is_empty() {
        return Err("names no user (postgresql://USER@HOST[:PORT]/DB)".into());
    }
    let (host, port) = if let Some(r) = hostport.strip_prefix('[') {
        let (h, tail) = r.split_once(']').ok_or("has a host with `[` and no `]`")?;
        let port = match tail {
            "" => None,
            t => Some(t.strip_prefix(':').ok_or("has text after `]`")?),
        };
        if h.parse::<std::net::Ipv6Addr>().is_err() {
            return Err("has a bad IPv6 address".into());
        }
        (h.to_string(), port)
    } else {
        match hostport.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (hostport.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err("names no host (a Unix socket is not supported: use host and port)".into());
    }
    if host.starts_with('/') || host.starts_with('%') || host.contains(',') {
        return Err("names a Unix socket or several hosts (one host and port only)".into());
    }
    if !host.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'-' | b'_' | b':')) {
        return Err("has a bad host name".into());
    }
    let port = match port {
        None => 5432,
        Some(p) => p.parse::<u16>().ok().filter(|&n| n > 0).ok_or("has a bad port")?,
    };
    let db = if db.is_empty() { user.clone() } else { pct_decode(db, "database name")? };
    let mut u = PgUrl {
        user,
        password,
        host: host.to_ascii_lowercase(),
        port,
        db,
        tls: false,
        connect_timeout_ms: PG_CONNECT_TIMEOUT_MS,
        application_name: None,
    };
    for kv in query.split('&').filter(|s| !s.is_empty()) {
        let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
        let v = pct_decode(v, "query")?;
        match k {
            "sslmode" => {
                u.tls = match v.as_str() {
                    "disable" => false,
                    "require" | "verify-ca" | "verify-full" => true,
                    other => {
                        return Err(format!(
                    "has sslmode={other:?} (known: disable, require, verify-ca, verify-full; TLS is always verified)"
                ))
                    }
                }
            }
            "connect_timeout" => {
                let s: u64 = v
                    .parse()
                    .ok()
                    .filter(|&s| (1..=PG_MAX_CONNECT_TIMEOUT_S).contains(&s))
                    .ok_or(format!("has a bad connect_timeout (1..{PG_MAX_CONNECT_TIMEOUT_S} seconds)"))?;
                u.connect_timeout_ms = s * 1000;
            }
            "application_name" => {
                if v.len() > 63 || !v.bytes().all(|c| c.is_ascii_graphic() || c == b' ') {
                    return Err("has a bad application_name".into());
                }
                u.application_name = Some(v);
            }
            other => {
                return Err(format!(
                    "has the unknown parameter {:?} (known: sslmode, connect_timeout, application_name)",
                    other.chars().take(40).collect::<String>()
                ))
            }
        }
    }
    Ok(u)
}

// ----------------------------------------------------------------------
// The protocol reader's guard, and TLS
// ----------------------------------------------------------------------

/// A stream whose incoming bytes are PostgreSQL protocol messages: counts them, and
/// refuses a message longer than `PG_MAX_MESSAGE` as soon as its header arrives.
struct Guarded<S> {
    inner: S,
    io: Arc<Io>,
    hdr: [u8; 5],
    hdr_len: usize,
    body_left: u64,
}

impl<S> Guarded<S> {
    fn new(inner: S, io: Arc<Io>) -> Self {
        Guarded { inner, io, hdr: [0; 5], hdr_len: 0, body_left: 0 }
    }

    fn scan(&mut self, mut b: &[u8]) -> std::io::Result<()> {
        while !b.is_empty() {
            if self.body_left > 0 {
                let n = (self.body_left.min(b.len() as u64)) as usize;
                self.body_left -= n as u64;
                b = &b[n..];
                continue;
            }
            self.hdr[self.hdr_len] = b[0];
            self.hdr_len += 1;
            b = &b[1..];
            if self.hdr_len == 5 {
                self.hdr_len = 0;
                let len = u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]]) as u64;
                if len < 4 {
                    return Err(std::io::Error::other("a malformed message from the server"));
                }
                if len - 4 > PG_MAX_MESSAGE {
                    self.io.too_big.store(len - 4, Relaxed);
                    return Err(std::io::Error::other(format!(
                        "a message of {} bytes from the server (more than {PG_MAX_MESSAGE})",
                        len - 4
                    )));
                }
                self.body_left = len - 4;
            }
        }
        Ok(())
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Guarded<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => {
                let got = &buf.filled()[before..];
                this.io.received.fetch_add(got.len() as u64, Relaxed);
                let got = got.to_vec();
                Poll::Ready(this.scan(&got))
            }
            other => other,
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Guarded<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> tokio_postgres::tls::TlsStream for Guarded<S> {
    fn channel_binding(&self) -> tokio_postgres::tls::ChannelBinding {
        tokio_postgres::tls::ChannelBinding::none()
    }
}

/// TLS for one connection: rustls with the run's trust (`--tls-ca-file` or the built-in
/// roots), the peer's chain and name always verified.
struct PgTls {
    cfg: Arc<rustls::ClientConfig>,
    name: rustls::pki_types::ServerName<'static>,
    io: Arc<Io>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S: AsyncRead + AsyncWrite + Unpin + Send + 'static> tokio_postgres::tls::TlsConnect<S> for PgTls {
    type Stream = Guarded<tokio_rustls::client::TlsStream<S>>;
    type Error = std::io::Error;
    type Future = BoxFuture<std::io::Result<Self::Stream>>;

    fn connect(self, stream: S) -> Self::Future {
        Box::pin(async move {
            let s = tokio_rustls::TlsConnector::from(self.cfg).connect(self.name, stream).await?;
            Ok(Guarded::new(s, self.io))
        })
    }
}

// ----------------------------------------------------------------------
// Helpers
// ----------------------------------------------------------------------

fn time_limit(it: &Host, name: &str, what: &str) -> Fail {
    if it.meter.deadline.is_some() {
        it.limit(LimitKind::Time, format!("wall-clock deadline (--max-time) reached ({name}: {what})"))
    } else {
        it.err(ErrKind::Db, format!("{name}: {what} took longer than {PG_STATEMENT_TIMEOUT_MS} ms"))
    }
}

/// Run `fut` on the runtime until `until` (None when it did not end by then).
fn run_until<F: Future>(rt: &tokio::runtime::Runtime, until: Instant, fut: F) -> Option<F::Output> {
    rt.block_on(async { tokio::time::timeout_at(until.into(), fut).await.ok() })
}

/// A server error's text: `message (SQLSTATE code)` with its detail and hint.
fn pg_message(e: &tokio_postgres::Error) -> String {
    if let Some(d) = e.as_db_error() {
        let mut m = format!("{} (SQLSTATE {})", d.message(), d.code().code());
        if let Some(x) = d.detail() {
            m.push_str(&format!("; detail: {x}"));
        }
        if let Some(x) = d.hint() {
            m.push_str(&format!("; hint: {x}"));
        }
        return m;
    }
    let mut s = e.to_string();
    let mut src = std::error::Error::source(e);
    while let Some(x) = src {
        let t = x.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        src = x.source();
    }
    // Keep messages one line, and short.
    let s: String = s.chars().map(|c| if c.is_control() { ' ' } else { c }).take(500).collect();
    s
}

/// An error from the client as a Leash error; a lost connection is marked lost.
fn pg_err(it: &mut Host, name: &str, id: u32, e: tokio_postgres::Error) -> Fail {
    let code = e.code().map(|c| c.code().to_string());
    if code.as_deref() == Some("57014") {
        // query_canceled: the server's statement_timeout (from the time left) fired.
        if let Some(left) = it.meter.remaining() {
            if Duration::from_millis(PG_TIMEOUT_REFRESH_MS * 2) >= left {
                return time_limit(it, name, "the statement was stopped by the server at the deadline");
            }
        }
    }
    let c = it.db.pg.conns.get_mut(&id);
    let too_big = c.as_ref().map(|c| c.io.too_big.load(Relaxed)).unwrap_or(0);
    if too_big > 0 {
        lose(it, id, "a message too large");
        return it.limit(
            LimitKind::FrameStorage,
            format!("{name}: the server sent a message of {too_big} bytes (at most {PG_MAX_MESSAGE} are read)"),
        );
    }
    if e.is_closed() || e.as_db_error().is_none() && code.is_none() && is_io(&e) {
        let why = pg_message(&e);
        let shown = it.db.pg.conns.get(&id).map(|c| c.shown.clone()).unwrap_or_default();
        lose(it, id, &why);
        return it.err(ErrKind::Db, format!("{name}: the connection to {shown} was lost ({why})"));
    }
    if let Some(d) = e.as_db_error() {
        if d.code().code().starts_with("57P") || d.code().code() == "08006" {
            // Terminated by an administrator, server shutdown: the connection is gone.
            lose(it, id, d.message());
        }
    }
    it.err(ErrKind::Db, format!("{name}: {}", pg_message(&e)))
}

fn is_io(e: &tokio_postgres::Error) -> bool {
    use std::error::Error;
    e.source().is_some_and(|s| s.is::<std::io::Error>())
}

/// Mark connection `id` lost: its client and task are dropped.
fn lose(it: &mut Host, id: u32, why: &str) {
    if let Some(c) = it.db.pg.conns.get_mut(&id) {
        c.client = None;
        if let Some(t) = c.task.take() {
            t.abort();
        }
        if c.lost.is_none() {
            c.lost = Some(why.chars().take(200).collect());
        }
    }
}

// ----------------------------------------------------------------------
// db.open
// ----------------------------------------------------------------------

/// Open a connection for `db.open(url)` (the caller has checked the open-databases limit).
pub fn open(it: &mut Host, raw: &[u8]) -> R<PgConn> {
    const NAME: &str = "db.open";
    let text = std::str::from_utf8(raw)
        .map_err(|_| it.err(ErrKind::Value, format!("{NAME}: the PostgreSQL URL is not UTF-8")))?;
    let mut u = parse_url(text).map_err(|m| it.err(ErrKind::Value, format!("{NAME}: the PostgreSQL URL {m}")))?;
    let shown = u.shown();
    it.audit_note(shown.clone());
    it.check_time()?;
    let most = it.lim.get(L::SocketsConnects);
    if it.db.pg.opened >= most {
        return Err(it.limit(LimitKind::Databases, format!("more than {most} PostgreSQL connections per run")));
    }
    it.db.pg.opened += 1;
    it.work(WORK_PG_CONNECT)?;
    let gate = it.gate.clone();
    let grant = format!("--allow-db=postgresql://{}:{}/{}", u.host_shown(), u.port, u.db);
    let refuse = |it: &Host, what: String| {
        it.err(
            ErrKind::Permission,
            format!("{NAME}: \"{shown}\"{what} is outside the --allow-db scope (it needs {grant})"),
        )
    };
    let literal = netcfg::ip_literal(&u.host);
    if literal.is_none() && !gate.pg_may_resolve(&u.host) {
        return Err(refuse(it, String::new()));
    }
    let until = crate::meter::after(Duration::from_millis(u.connect_timeout_ms));
    let until = it.meter.deadline.map_or(until, |d| d.min(until));
    it.net.ensure();
    let ips = match literal {
        Some(ip) => vec![ip],
        None => {
            let dns = it.net.dns();
            let left = crate::meter::left(until);
            match netcfg::lookup(dns.as_deref(), &u.host, left) {
                Ok(v) => v,
                Err(LookupError::Timeout) => return Err(set_up_timeout(it, NAME, &shown, &u, "resolving the host")),
                Err(LookupError::Failed(m)) => {
                    return Err(it.err(ErrKind::Db, format!("{NAME}: cannot resolve \"{}\": {m}", u.host)))
                }
            }
        }
    };
    // The scope is checked on the addresses the connection really goes to.
    let all = ips.len();
    let ips: Vec<IpAddr> =
        ips.into_iter().filter(|ip| gate.pg_allowed(&u.host, SocketAddr::new(*ip, u.port), &u.db)).collect();
    if ips.is_empty() {
        let what = if literal.is_some() { String::new() } else { format!(" (resolved to {all} address(es))") };
        return Err(refuse(it, what));
    }
    // The password: the URL's, else PGPASSWORD when the operator passed it.
    if u.password.is_none() {
        u.password = std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty() && !p.contains('\0'));
    }
    let tls = if u.tls {
        let cfg =
            it.net.tls.client_config(&it.net.settings).map_err(|m| it.err(ErrKind::Db, format!("{NAME}: {m}")))?;
        let name = rustls::pki_types::ServerName::try_from(u.host.clone())
            .map_err(|_| it.err(ErrKind::Db, format!("{NAME}: \"{}\" is not a name TLS can verify", u.host)))?;
        Some((cfg, name))
    } else {
        None
    };
    let rt = match &it.db.pg.rt {
        Some(rt) => rt.clone(),
        None => {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_io()
                .enable_time()
                .build()
                .map_err(|e| it.err(ErrKind::Db, format!("{NAME}: cannot start the PostgreSQL runtime: {e}")))?;
            let rt = Arc::new(rt);
            it.db.pg.rt = Some(rt.clone());
            rt
        }
    };
    let statement_ms = statement_ms(it);
    let mut config = tokio_postgres::Config::new();
    config.user(&u.user).dbname(&u.db).application_name(u.application_name.as_deref().unwrap_or("leash"));
    if let Some(p) = &u.password {
        config.password(p.as_bytes());
    }
    config.ssl_mode(if tls.is_some() {
        tokio_postgres::config::SslMode::Require
    } else {
        tokio_postgres::config::SslMode::Disable
    });
    let io = Arc::new(Io::default());
    let io2 = io.clone();
    let port = u.port;
    let r = run_until(&rt, until, async move {
        let mut last = None;
        let mut tcp = None;
        for ip in ips.iter().take(PG_MAX_ADDRS) {
            match tokio::net::TcpStream::connect(SocketAddr::new(*ip, port)).await {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let Some(tcp) = tcp else {
            return Err(Setup::Connect(last.map(|e| e.to_string()).unwrap_or_else(|| "no address to try".into())));
        };
        let _ = tcp.set_nodelay(true);
        let peer = tcp.peer_addr().ok();
        let (client, task) = match tls {
            Some((cfg, name)) => {
                let (client, conn) =
                    config.connect_raw(tcp, PgTls { cfg, name, io: io2 }).await.map_err(|e| Setup::Pg(e, peer))?;
                (
                    client,
                    tokio::spawn(async move {
                        let _ = conn.await;
                    }),
                )
            }
            None => {
                let (client, conn) = config
                    .connect_raw(Guarded::new(tcp, io2), tokio_postgres::NoTls)
                    .await
                    .map_err(|e| Setup::Pg(e, peer))?;
                (
                    client,
                    tokio::spawn(async move {
                        let _ = conn.await;
                    }),
                )
            }
        };
        // Session settings: the statement timeout from the time left, and UTC (timestamps
        // with a time zone come back in UTC). Sent as statements, not as start-up
        // `options`, which poolers such as PgBouncer refuse.
        client
            .batch_execute(&format!("SET statement_timeout = {statement_ms}; SET TimeZone = 'UTC'"))
            .await
            .map_err(|e| Setup::Pg(e, peer))?;
        Ok((client, task, peer))
    });
    it.audit_bytes = io.received.load(Relaxed);
    let (client, task, peer) = match r {
        None => return Err(set_up_timeout(it, NAME, &shown, &u, "connecting")),
        Some(Err(Setup::Connect(why))) => {
            return Err(it.err(ErrKind::Db, format!("{NAME}: cannot connect to {shown}: {why}")))
        }
        Some(Err(Setup::Pg(e, peer))) => {
            let at = peer.map(|p| format!(" at {p}")).unwrap_or_default();
            let m = pg_message(&e);
            // A TLS failure keeps rustls's words (unknown issuer, name mismatch...).
            return Err(it.err(ErrKind::Db, format!("{NAME}: cannot connect to {shown}{at}: {m}")));
        }
        Some(Ok(x)) => x,
    };
    if let Some(p) = peer {
        it.audit_note(format!("{shown} -> {p}"));
    }
    Ok(PgConn { client: Some(client), task: Some(task), lost: None, shown, io, timeout_set: crate::meter::now() })
}

enum Setup {
    Connect(String),
    Pg(tokio_postgres::Error, Option<SocketAddr>),
}

fn set_up_timeout(it: &Host, name: &str, shown: &str, u: &PgUrl, what: &str) -> Fail {
    if it.meter.deadline_passed() {
        return time_limit(it, name, &format!("{what} {shown}"));
    }
    it.err(
        ErrKind::Db,
        format!("{name}: {what} {shown} took longer than {} ms (connect_timeout)", u.connect_timeout_ms),
    )
}

/// The statement timeout for a statement starting now: the time left (at least 1 ms),
/// or `PG_STATEMENT_TIMEOUT_MS` without a deadline.
fn statement_ms(it: &Host) -> u64 {
    match it.meter.remaining() {
        Some(left) => (left.as_millis() as u64).max(1),
        None => PG_STATEMENT_TIMEOUT_MS,
    }
}

// ----------------------------------------------------------------------
// Parameters
// ----------------------------------------------------------------------

/// Rewrite the placeholders of `sql` to `$1`, `$2`...: `?` (`named` false) or `:name`
/// (`named` true; a name used twice is one parameter). Quoted strings, quoted
/// identifiers, dollar-quoted strings, comments and `::` casts are left alone. Returns
/// the SQL and the names in parameter order (for `?`, as many empty names).
pub fn translate(sql: &str, named: bool) -> (String, Vec<String>) {
    let b = sql.as_bytes();
    let mut out = String::with_capacity(sql.len() + 8);
    let mut names: Vec<String> = Vec::new();
    let ident = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    let mut i = 0;
    let mut from = 0;
    while i < b.len() {
        let c = b[i];
        match c {
            b'\'' => {
                // E'...' takes backslash escapes.
                let esc = i > 0 && (b[i - 1] == b'e' || b[i - 1] == b'E') && (i < 2 || !ident(b[i - 2]));
                i += 1;
                while i < b.len() {
                    if esc && b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == b'\'' {
                        if b.get(i + 1) == Some(&b'\'') {
                            i += 2;
                            continue;
                        }
                        break;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += 1;
                }
                i += 1;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'$' if i == 0 || !ident(b[i - 1]) => {
                // $tag$ ... $tag$ (a `$1` is a parameter, not a tag).
                let mut j = i + 1;
                while j < b.len() && ident(b[j]) && !(j == i + 1 && b[j].is_ascii_digit()) {
                    j += 1;
                }
                if j < b.len() && b[j] == b'$' && !(j > i + 1 && b[i + 1].is_ascii_digit()) {
                    let tag = &sql[i..=j];
                    match sql[j + 1..].find(tag) {
                        Some(k) => i = j + 1 + k + tag.len(),
                        None => i = b.len(),
                    }
                } else {
                    i += 1;
                }
            }
            b':' if b.get(i + 1) == Some(&b':') => i += 2,
            b':' if named && b.get(i + 1).is_some_and(|&c| c.is_ascii_alphabetic() || c == b'_') => {
                let mut j = i + 1;
                while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                let name = &sql[i + 1..j];
                let n = match names.iter().position(|x| x == name) {
                    Some(k) => k + 1,
                    None => {
                        names.push(name.to_string());
                        names.len()
                    }
                };
                out.push_str(&sql[from..i]);
                out.push_str(&format!("${n}"));
                i = j;
                from = j;
            }
            b'?' if !named => {
                names.push(String::new());
                out.push_str(&sql[from..i]);
                out.push_str(&format!("${}", names.len()));
                i += 1;
                from = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&sql[from.min(sql.len())..]);
    (out, names)
}

/// A Leash value as a statement parameter: sent in the text format (the server parses
/// it as the type it inferred for the parameter, as psql would a literal), bytes for a
/// `bytea` parameter as they are.
#[derive(Debug)]
enum Param {
    Null,
    Bool(bool),
    Num(f64),
    Str(Vec<u8>),
}

impl ToSql for Param {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        let int = matches!(*ty, Type::INT2 | Type::INT4 | Type::INT8 | Type::OID);
        match self {
            Param::Null => return Ok(IsNull::Yes),
            Param::Bool(b) if int => out.extend_from_slice(if *b { b"1" } else { b"0" }),
            Param::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
            Param::Num(n) => out.extend_from_slice(num_to_string(*n).as_bytes()),
            Param::Str(s) => {
                if *ty != Type::BYTEA && s.contains(&0) {
                    return Err("a string parameter contains a NUL byte (PostgreSQL text cannot hold one)".into());
                }
                out.extend_from_slice(s)
            }
        }
        Ok(IsNull::No)
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    fn encode_format(&self, ty: &Type) -> tokio_postgres::types::Format {
        if matches!(self, Param::Str(_)) && *ty == Type::BYTEA {
            tokio_postgres::types::Format::Binary
        } else {
            tokio_postgres::types::Format::Text
        }
    }

    tokio_postgres::types::to_sql_checked!();
}

fn param_of(it: &Host, name: &str, which: &dyn Fn() -> String, v: &Value) -> R<Param> {
    Ok(match v {
        Value::Nil | Value::Unset => Param::Null,
        Value::Bool(b) => Param::Bool(*b),
        Value::Num(n) => Param::Num(*n),
        Value::Str(s) => Param::Str(s.as_slice().to_vec()),
        other => {
            return Err(it.err(
                ErrKind::Type,
                format!("{name}: {} must be nil, a bool, a number or a string, got {}", which(), other.type_name()),
            ))
        }
    })
}

/// The SQL with `$n` placeholders and the values, from the SQL and the params argument.
fn bind(it: &Host, name: &str, sql: &str, p: Option<&Value>) -> R<(String, Vec<Param>)> {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match p {
        None | Some(Value::Nil) => Ok((sql.to_string(), Vec::new())),
        Some(Value::List(l)) => {
            let (out, names) = translate(sql, false);
            let mut vals = Vec::with_capacity(l.len());
            for (k, v) in l.items().iter().enumerate() {
                vals.push(param_of(it, name, &|| format!("parameter {}", k + 1), v)?);
            }
            if names.is_empty() {
                // No `?`: the SQL may use `$1`... itself (the server counts them).
                return Ok((out, vals));
            }
            if names.len() != vals.len() {
                return Err(it.err(
                    ErrKind::Db,
                    format!(
                        "{name}: the SQL has {} parameter{} but {} value{} given",
                        names.len(),
                        plural(names.len()),
                        vals.len(),
                        if vals.len() == 1 { " was" } else { "s were" }
                    ),
                ));
            }
            Ok((out, vals))
        }
        Some(Value::Map(m)) => {
            let (out, names) = translate(sql, true);
            let mut vals = Vec::with_capacity(names.len());
            for n in &names {
                let Some(v) = m.get(n.as_bytes()) else {
                    return Err(it.err(ErrKind::Db, format!("{name}: no value for parameter :{n}")));
                };
                vals.push(param_of(it, name, &|| format!("parameter :{n}"), v)?);
            }
            Ok((out, vals))
        }
        Some(other) => Err(it.type_err(name, 2, "a list or a map", other)),
    }
}

// ----------------------------------------------------------------------
// Values
// ----------------------------------------------------------------------

/// A column's raw bytes, whatever its type.
struct Raw<'a>(Option<&'a [u8]>);

impl<'a> FromSql<'a> for Raw<'a> {
    fn from_sql(_: &Type, raw: &'a [u8]) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(Some(raw)))
    }
    fn from_sql_null(_: &Type) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(Raw(None))
    }
    fn accepts(_: &Type) -> bool {
        true
    }
}

/// Types whose binary form `decode` converts; any other is fetched as text.
fn native(ty: &Type) -> bool {
    matches!(
        *ty,
        Type::BOOL
            | Type::INT2
            | Type::INT4
            | Type::INT8
            | Type::OID
            | Type::FLOAT4
            | Type::FLOAT8
            | Type::NUMERIC
            | Type::TEXT
            | Type::VARCHAR
            | Type::BPCHAR
            | Type::NAME
            | Type::UNKNOWN
            | Type::CHAR
            | Type::JSON
            | Type::JSONB
            | Type::XML
            | Type::BYTEA
    ) || matches!(ty.kind(), tokio_postgres::types::Kind::Enum(_))
}

/// The text of a binary `numeric`.
fn numeric_text(b: &[u8]) -> Option<String> {
    let rd = |i: usize| b.get(i..i + 2).map(|x| i16::from_be_bytes([x[0], x[1]]));
    let (n, weight, sign, dscale) = (rd(0)? as usize, rd(2)? as i32, rd(4)? as u16, rd(6)?.max(0) as usize);
    match sign {
        0xC000 => return Some("NaN".into()),
        0xD000 => return Some("Infinity".into()),
        0xF000 => return Some("-Infinity".into()),
        _ => {}
    }
    let digits: Vec<i16> = (0..n).map(|k| rd(8 + 2 * k)).collect::<Option<_>>()?;
    let mut s = String::new();
    if sign == 0x4000 {
        s.push('-');
    }
    // Integer part: groups 0..=weight.
    if weight < 0 {
        s.push('0');
    } else {
        for k in 0..=weight as usize {
            let d = digits.get(k).copied().unwrap_or(0);
            if k == 0 {
                s.push_str(&d.to_string());
            } else {
                s.push_str(&format!("{d:04}"));
            }
        }
    }
    if dscale > 0 {
        s.push('.');
        let mut frac = String::new();
        let mut k = weight + 1;
        while frac.len() < dscale {
            let d = if k < 0 { 0 } else { digits.get(k as usize).copied().unwrap_or(0) };
            frac.push_str(&format!("{d:04}"));
            k += 1;
        }
        frac.truncate(dscale);
        s.push_str(&frac);
    }
    Some(s)
}

fn decode(it: &Host, name: &str, col: &str, ty: &Type, raw: Option<&[u8]>) -> R<Value> {
    const EXACT: u64 = 1 << 53;
    let Some(b) = raw else { return Ok(Value::Nil) };
    let bad = || it.err(ErrKind::Db, format!("{name}: column \"{col}\" ({}) came malformed", ty.name()));
    let int = |i: i64| -> R<Value> {
        if i.unsigned_abs() > EXACT {
            return Err(it.err(
                ErrKind::Db,
                format!(
                    "{name}: column \"{col}\" holds the integer {i}, beyond 2^53 where numbers are exact \
                     (cast it to text or to float8 in the SQL)"
                ),
            ));
        }
        Ok(Value::Num(i as f64))
    };
    let float = |f: f64| -> R<Value> {
        if !f.is_finite() {
            return Err(it.err(
                ErrKind::Db,
                format!("{name}: column \"{col}\" holds a non-finite number (cast it to text in the SQL)"),
            ));
        }
        Ok(Value::Num(f))
    };
    let arr = |n: usize| -> R<&[u8]> {
        if b.len() == n {
            Ok(b)
        } else {
            Err(bad())
        }
    };
    match *ty {
        Type::BOOL => Ok(Value::Bool(arr(1)?[0] != 0)),
        Type::INT2 => int(i16::from_be_bytes(arr(2)?.try_into().map_err(|_| bad())?) as i64),
        Type::INT4 => int(i32::from_be_bytes(arr(4)?.try_into().map_err(|_| bad())?) as i64),
        Type::OID => int(u32::from_be_bytes(arr(4)?.try_into().map_err(|_| bad())?) as i64),
        Type::INT8 => int(i64::from_be_bytes(arr(8)?.try_into().map_err(|_| bad())?)),
        Type::FLOAT4 => float(f32::from_be_bytes(arr(4)?.try_into().map_err(|_| bad())?) as f64),
        Type::FLOAT8 => float(f64::from_be_bytes(arr(8)?.try_into().map_err(|_| bad())?)),
        Type::NUMERIC => {
            let t = numeric_text(b).ok_or_else(bad)?;
            match t.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(Value::Num(f)),
                _ => float(f64::NAN),
            }
        }
        Type::JSONB => {
            let t = b.get(1..).filter(|_| b.first() == Some(&1)).ok_or_else(bad)?;
            it.check_str_len(t.len())?;
            Ok(Value::str_from(t))
        }
        _ => {
            it.check_str_len(b.len())?;
            Ok(Value::str_from(b))
        }
    }
}

// ----------------------------------------------------------------------
// db.exec, db.query
// ----------------------------------------------------------------------

/// Ready a connection for a statement: it must not be lost; `statement_timeout` is set
/// again from the time left when it was set long enough ago.
fn ready(it: &mut Host, name: &str, id: u32) -> R<(Arc<tokio::runtime::Runtime>, Instant)> {
    it.check_time()?;
    let rt = it.db.pg.rt.clone().expect("a connection is open, so the runtime exists");
    let c = &it.db.pg.conns[&id];
    if let Some(why) = &c.lost {
        return Err(it.err(ErrKind::Db, format!("{name}: the connection to {} was lost ({why})", c.shown)));
    }
    let ms = statement_ms(it);
    let until = crate::meter::after(Duration::from_millis(ms + PG_CLIENT_GRACE_MS));
    if it.meter.deadline.is_some() && crate::meter::since(c.timeout_set) >= Duration::from_millis(PG_TIMEOUT_REFRESH_MS)
    {
        let client = c.client.as_ref().expect("not lost");
        let sql = format!("SET statement_timeout = {ms}");
        match run_until(&rt, until, client.simple_query(&sql)) {
            None => {
                lose(it, id, "no answer before the deadline");
                return Err(time_limit(it, name, "setting the statement timeout"));
            }
            // In a failed transaction SET is refused: the client-side timeout still holds.
            Some(Err(e)) if e.code().is_some_and(|c| c.code() == "25P02") => {}
            Some(Err(e)) => return Err(pg_err(it, name, id, e)),
            Some(Ok(_)) => {}
        }
        if let Some(c) = it.db.pg.conns.get_mut(&id) {
            c.timeout_set = crate::meter::now();
        }
    }
    Ok((rt, until))
}

/// Charge one row of `n` bytes.
fn charge_row(it: &mut Host, n: usize) -> R<()> {
    it.work(WORK_PG_ROW + WORK_PG_BYTE * n as u64)
}

pub fn exec(it: &mut Host, args: &mut [Value], id: u32) -> R<Value> {
    const NAME: &str = "db.exec";
    let sql = it.arg_text(NAME, args, 1)?.to_string();
    let (sql, params) = bind(it, NAME, &sql, it.opt(args, 2))?;
    let (rt, until) = ready(it, NAME, id)?;
    let before = it.db.pg.conns[&id].io.received.load(Relaxed);
    it.audit_note(it.db.pg.conns[&id].shown.clone());
    let r = if params.is_empty() && it.opt(args, 2).is_none_or(|v| matches!(v, Value::Nil)) {
        exec_script(it, NAME, id, &rt, until, &sql)
    } else {
        exec_params(it, NAME, id, &rt, until, &sql, &params)
    };
    if let Some(c) = it.db.pg.conns.get(&id) {
        it.audit_bytes = c.io.received.load(Relaxed) - before;
    }
    Ok(Value::Num(r? as f64))
}

/// Without parameters: every statement of the SQL in order (the simple protocol);
/// rows of a statement that returns them are read, charged and dropped.
fn exec_script(it: &mut Host, name: &str, id: u32, rt: &tokio::runtime::Runtime, until: Instant, sql: &str) -> R<u64> {
    use tokio_postgres::SimpleQueryMessage as M;
    let client = it.db.pg.conns[&id].client.as_ref().expect("not lost");
    let stream = match run_until(rt, until, client.simple_query_raw(sql)) {
        None => {
            lose(it, id, "no answer before the deadline");
            return Err(time_limit(it, name, "the statement"));
        }
        Some(Err(e)) => return Err(pg_err(it, name, id, e)),
        Some(Ok(s)) => s,
    };
    let mut stream = Box::pin(stream);
    let mut changed = 0u64;
    let mut rows_seen = false;
    loop {
        match run_until(rt, until, stream.next()) {
            None => {
                drop(stream);
                lose(it, id, "no answer before the deadline");
                return Err(time_limit(it, name, "the statement"));
            }
            Some(None) => break,
            Some(Some(Err(e))) => {
                drop(stream);
                return Err(pg_err(it, name, id, e));
            }
            Some(Some(Ok(M::RowDescription(_)))) => rows_seen = true,
            Some(Some(Ok(M::Row(r)))) => {
                let n: usize = (0..r.len()).map(|i| r.get(i).map_or(0, str::len)).sum();
                if let Err(e) = charge_row(it, n) {
                    drop(stream);
                    lose(it, id, "stopped in the middle of a result");
                    return Err(e);
                }
            }
            Some(Some(Ok(M::CommandComplete(n)))) => {
                if !rows_seen {
                    changed += n;
                }
                rows_seen = false;
            }
            Some(Some(Ok(_))) => {}
        }
    }
    Ok(changed)
}

fn exec_params(
    it: &mut Host,
    name: &str,
    id: u32,
    rt: &tokio::runtime::Runtime,
    until: Instant,
    sql: &str,
    params: &[Param],
) -> R<u64> {
    let client = it.db.pg.conns[&id].client.as_ref().expect("not lost");
    let r = run_until(rt, until, async {
        let st = client.prepare(sql).await?;
        let returns_rows = !st.columns().is_empty();
        let s = client.query_raw(&st, params.iter()).await?;
        Ok::<_, tokio_postgres::Error>((s, returns_rows))
    });
    let (stream, returns_rows) = match r {
        None => {
            lose(it, id, "no answer before the deadline");
            return Err(time_limit(it, name, "the statement"));
        }
        Some(Err(e)) => return Err(param_err(it, name, id, e)),
        Some(Ok(s)) => s,
    };
    let mut stream = Box::pin(stream);
    loop {
        match run_until(rt, until, stream.next()) {
            None => {
                drop(stream);
                lose(it, id, "no answer before the deadline");
                return Err(time_limit(it, name, "the statement"));
            }
            Some(None) => break,
            Some(Some(Err(e))) => {
                drop(stream);
                return Err(pg_err(it, name, id, e));
            }
            Some(Some(Ok(row))) => {
                if let Err(e) = charge_row(it, row.raw_size_bytes()) {
                    drop(stream);
                    lose(it, id, "stopped in the middle of a result");
                    return Err(e);
                }
            }
        }
    }
    // As SQLite's: a statement that returns rows changed none.
    Ok(if returns_rows { 0 } else { stream.rows_affected().unwrap_or(0) })
}

/// An error of preparing or binding: a parameter count that does not match is said
/// as SQLite's is.
fn param_err(it: &mut Host, name: &str, id: u32, e: tokio_postgres::Error) -> Fail {
    let s = e.to_string();
    if let Some(rest) = s.strip_prefix("expected ") {
        if rest.contains("parameters but got") {
            return it.err(ErrKind::Db, format!("{name}: the SQL {}", s.replacen("expected", "expects", 1)));
        }
    }
    pg_err(it, name, id, e)
}

/// Rows read so far with their accounted storage (as SQLite's results are checked).
struct Rows {
    rows: Vec<Value>,
    acct: usize,
}

impl Rows {
    fn push(&mut self, it: &Host, name: &str, row: Value) -> R<()> {
        if self.rows.len() >= it.lim.n(L::List) {
            return Err(it.limit(
                LimitKind::List,
                format!("{name}: a result of more than {max_list_items} rows", max_list_items = it.lim.n(L::List)),
            ));
        }
        self.acct += row.acct();
        if self.acct > it.lim.n(L::FrameStorage) {
            return Err(it.limit(
                LimitKind::FrameStorage,
                format!(
                    "{name}: the rows exceed the frame limit of {max_frame_bytes} accounted bytes",
                    max_frame_bytes = it.lim.n(L::FrameStorage)
                ),
            ));
        }
        self.rows.push(row);
        Ok(())
    }
}

/// `SELECT` the statement's columns as text where their type is not one `decode`
/// converts: `WITH q(c1, c2, ...) AS (SQL) SELECT q.c1, q.c2::text AS "name", ...`
/// (a data-modifying statement with RETURNING may stand in a WITH too).
fn text_wrapped(sql: &str, cols: &[tokio_postgres::Column]) -> String {
    let body = sql.trim_end().trim_end_matches(';');
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let list: Vec<String> = (1..=cols.len()).map(|i| format!("c{i}")).collect();
    let sel: Vec<String> = cols
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if native(c.type_()) {
                format!("q.c{} AS {}", i + 1, q(c.name()))
            } else if *c.type_() == Type::INET {
                // inet's cast to text shows the mask; its output does not.
                format!(
                    "CASE WHEN q.c{n} IS NULL THEN NULL ELSE format('%s', q.c{n}) END AS {}",
                    q(c.name()),
                    n = i + 1
                )
            } else {
                format!("q.c{}::text AS {}", i + 1, q(c.name()))
            }
        })
        .collect();
    format!("WITH q({}) AS (\n{body}\n) SELECT {} FROM q", list.join(", "), sel.join(", "))
}

pub fn query(it: &mut Host, args: &mut [Value], id: u32) -> R<Value> {
    const NAME: &str = "db.query";
    let sql = it.arg_text(NAME, args, 1)?.to_string();
    let (sql, params) = bind(it, NAME, &sql, it.opt(args, 2))?;
    let (rt, until) = ready(it, NAME, id)?;
    let before = it.db.pg.conns[&id].io.received.load(Relaxed);
    it.audit_note(it.db.pg.conns[&id].shown.clone());
    let r = query_in(it, NAME, id, &rt, until, &sql, &params);
    if let Some(c) = it.db.pg.conns.get(&id) {
        it.audit_bytes = c.io.received.load(Relaxed) - before;
    }
    r
}

fn query_in(
    it: &mut Host,
    name: &str,
    id: u32,
    rt: &tokio::runtime::Runtime,
    until: Instant,
    sql: &str,
    params: &[Param],
) -> R<Value> {
    let client = it.db.pg.conns[&id].client.as_ref().expect("not lost");
    let r = run_until(rt, until, async {
        let mut st = client.prepare(sql).await?;
        if st.columns().iter().any(|c| !native(c.type_())) {
            // Other types come back as their text: the same statement, its columns cast.
            let wrapped = text_wrapped(sql, st.columns());
            if let Ok(w) = client.prepare(&wrapped).await {
                st = w;
            }
        }
        let s = client.query_raw(&st, params.iter()).await?;
        Ok::<_, tokio_postgres::Error>((s, st))
    });
    let (stream, st) = match r {
        None => {
            lose(it, id, "no answer before the deadline");
            return Err(time_limit(it, name, "the statement"));
        }
        Some(Err(e)) => return Err(param_err(it, name, id, e)),
        Some(Ok(s)) => s,
    };
    let cols: Vec<(Bytes, Type)> =
        st.columns().iter().map(|c| (bytes(c.name().as_bytes()), c.type_().clone())).collect();
    if let Some((n, ty)) = cols.iter().find(|(_, t)| !native(t)) {
        drop(stream);
        return Err(it.err(
            ErrKind::Db,
            format!(
                "{name}: column \"{}\" has the type {}, which cannot be read here: cast it to text in the SQL",
                String::from_utf8_lossy(n),
                ty.name()
            ),
        ));
    }
    let mut stream = Box::pin(stream);
    let mut out = Rows { rows: Vec::new(), acct: ACCT_LIST_HEADER };
    loop {
        let row = match run_until(rt, until, stream.next()) {
            None => {
                drop(stream);
                lose(it, id, "no answer before the deadline");
                return Err(time_limit(it, name, "the statement"));
            }
            Some(None) => break,
            Some(Some(Err(e))) => {
                drop(stream);
                return Err(pg_err(it, name, id, e));
            }
            Some(Some(Ok(row))) => row,
        };
        let built = (|| {
            charge_row(it, row.raw_size_bytes())?;
            let mut map = Map::with_capacity(cols.len());
            for (i, (col, ty)) in cols.iter().enumerate() {
                let raw: Raw<'_> = row.try_get(i).map_err(|e| it.err(ErrKind::Db, format!("{name}: {e}")))?;
                let v = decode(it, name, &String::from_utf8_lossy(col), ty, raw.0)?;
                map.insert(col.clone(), v);
            }
            let m = it.make_map(map)?;
            out.push(it, name, m)
        })();
        if let Err(e) = built {
            if !matches!(&*e, crate::error::Unwind::Error(_)) {
                // A limit ends the run: the rest of the result is not read.
                drop(stream);
                lose(it, id, "stopped in the middle of a result");
                return Err(e);
            }
            // A catchable error: the rest of the result is read (and charged) and
            // dropped, so that the connection can go on.
            return Err(drain(it, name, id, rt, until, stream).err().unwrap_or(e));
        }
    }
    drop(stream);
    let mut rows = out.rows;
    rows.shrink_to_fit();
    it.make_list(rows)
}

/// Read the rest of a result, charging its rows, dropping them.
fn drain(
    it: &mut Host,
    name: &str,
    id: u32,
    rt: &tokio::runtime::Runtime,
    until: Instant,
    mut stream: Pin<Box<tokio_postgres::RowStream>>,
) -> R<()> {
    loop {
        match run_until(rt, until, stream.next()) {
            None => {
                drop(stream);
                lose(it, id, "no answer before the deadline");
                return Err(time_limit(it, name, "the statement"));
            }
            Some(None) => return Ok(()),
            Some(Some(Err(e))) => {
                drop(stream);
                return Err(pg_err(it, name, id, e));
            }
            Some(Some(Ok(row))) => {
                if let Err(e) = charge_row(it, row.raw_size_bytes()) {
                    drop(stream);
                    lose(it, id, "stopped in the middle of a result");
                    return Err(e);
                }
            }
        }
    }
}

pub fn close(it: &mut Host, id: u32) -> R<Value> {
    if let Some(c) = it.db.pg.conns.remove(&id) {
        it.audit_note(c.shown.clone());
        let until = crate::meter::after(Duration::from_millis(1000));
        it.db.pg.shut(c, it.meter.deadline.map_or(until, |d| d.min(until)));
    }
    Ok(Value::Nil)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders() {
        assert_eq!(translate("SELECT ?, ? FROM t", false), ("SELECT $1, $2 FROM t".into(), vec![String::new(); 2]));
        let (s, n) =
            translate("SELECT :a, :b::int, :a, 'x:y ?', \"c:d\", $$:e$$, $t$ ? $t$ -- :f\n /* :g /* ? */ */ :h", true);
        assert_eq!(s, "SELECT $1, $2::int, $1, 'x:y ?', \"c:d\", $$:e$$, $t$ ? $t$ -- :f\n /* :g /* ? */ */ $3");
        assert_eq!(n, ["a", "b", "h"]);
        assert_eq!(translate("SELECT E'\\'?' , ?", false).0, "SELECT E'\\'?' , $1");
        assert_eq!(translate("SELECT 'it''s ?', ?", false).0, "SELECT 'it''s ?', $1");
        assert_eq!(translate("SELECT $1 + ?", false).0, "SELECT $1 + $1");
        assert_eq!(translate("SELECT a::text FROM t WHERE x = :x", true).0, "SELECT a::text FROM t WHERE x = $1");
        assert_eq!(translate("SELECT 'unterminated ?", false).1.len(), 0);
    }

    #[test]
    fn urls() {
        let u =
            parse_url("postgresql://app:s%40cret@DB.internal:6432/site?sslmode=verify-full&connect_timeout=3").unwrap();
        assert_eq!(
            (u.user.as_str(), u.password.as_deref(), u.host.as_str(), u.port),
            ("app", Some("s@cret"), "db.internal", 6432)
        );
        assert_eq!((u.db.as_str(), u.tls, u.connect_timeout_ms), ("site", true, 3000));
        assert_eq!(u.shown(), "postgresql://app@db.internal:6432/site");
        let u = parse_url("postgres://me@[::1]/").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.db.as_str()), ("::1", 5432, "me"));
        assert_eq!(u.shown(), "postgresql://me@[::1]:5432/me");
        for bad in [
            "postgresql://host/db",
            "postgresql://u@/db",
            "postgresql://u@h:0/db",
            "postgresql://u@h/db?sslmode=prefer",
            "postgresql://u@h/db?foo=1",
            "postgresql://u@%2Ftmp/db",
            "postgresql://u:pw@h/db?connect_timeout=99",
        ] {
            let e = parse_url(bad).unwrap_err();
            assert!(!e.contains("pw"), "{e}");
        }
        assert_eq!(redact(b"postgresql://u:secret@h/db"), b"postgresql://u@h:5432/db");
        assert_eq!(redact(b"data/app.db"), b"data/app.db");
        assert_eq!(
            mask_passwords(r#"h = db.open("postgresql://u:pw@h/db")"#),
            r#"h = db.open("postgresql://u:**@h/db")"#
        );
        assert_eq!(mask_passwords("x = 'postgres://u:p@ss@h' .. z"), "x = 'postgres://u:****@h' .. z");
        assert_eq!(mask_passwords("print(\"postgres is fine: a:b@c\")"), "print(\"postgres is fine: a:b@c\")");
    }

    #[test]
    fn numerics() {
        // 12345.678: weight 1, groups 1, 2345, 6780; dscale 3.
        let enc = |n: i16, w: i16, s: u16, d: i16, g: &[i16]| {
            let mut v = Vec::new();
            for x in [n, w, s as i16, d] {
                v.extend_from_slice(&x.to_be_bytes());
            }
            for x in g {
                v.extend_from_slice(&x.to_be_bytes());
            }
            v
        };
        assert_eq!(numeric_text(&enc(3, 1, 0, 3, &[1, 2345, 6780])).unwrap(), "12345.678");
        assert_eq!(numeric_text(&enc(1, -1, 0x4000, 2, &[500])).unwrap(), "-0.05");
        assert_eq!(numeric_text(&enc(0, 0, 0, 0, &[])).unwrap(), "0");
        assert_eq!(numeric_text(&enc(1, 2, 0, 0, &[7])).unwrap(), "700000000");
        assert_eq!(numeric_text(&enc(0, 0, 0xC000, 0, &[])).unwrap(), "NaN");
    }
}
