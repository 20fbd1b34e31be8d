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
//!
//! Its parts: this file holds the run's connections (`PgState`), the errors and
//! deadlines they share, and `db.open`'s connection set-up; `db_pg/url.rs` the URL and
//! what is shown of it; `db_pg/wire.rs` the stream under the client (the message-size
//! guard, TLS); `db_pg/values.rs` Leash values to parameters and columns to values;
//! `db_pg/statements.rs` `db.exec`, `db.query` and `db.close`.

use std::collections::HashMap;
use std::future::Future;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::netcfg::{self, LookupError};
use super::Host;
use crate::diag::ErrKind;
use crate::error::{Fail, R};
use crate::limits::*;

mod statements;
mod url;
mod values;
mod wire;

pub use statements::{close, exec, query};
pub use url::{is_url, mask_passwords, redact};
use url::{parse_url, PgUrl};
pub use values::translate;
use wire::{Guarded, PgTls};

/// The statement timeout of a run without `--max-time`, ms.
const PG_STATEMENT_TIMEOUT_MS: u64 = 30_000;
/// Re-send `statement_timeout` before a statement when this long has passed since it
/// was last set (the server's bound then overshoots the deadline by at most this).
const PG_TIMEOUT_REFRESH_MS: u64 = 100;
/// Largest protocol message read from the server, bytes (a row, an error): a longer
/// one is refused as its header arrives, before its body is buffered.
const PG_MAX_MESSAGE: u64 = 64 * MIB as u64;
/// Work units charged for a connection's set-up.
const WORK_PG_CONNECT: u64 = 100_000;
/// Addresses tried at most per connection.
const PG_MAX_ADDRS: usize = 8;

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
