//! PostgreSQL URLs (`postgresql://user[:password]@host[:port][/db][?...]`): parsing them,
//! and showing them without their password (messages, audit lines, `leash check`, and
//! source lines quoted in diagnostics).

/// Default connection set-up deadline (resolution, TCP, TLS, authentication), ms.
const PG_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Largest `connect_timeout` a URL may ask for, seconds.
const PG_MAX_CONNECT_TIMEOUT_S: u64 = 30;

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

/// Source lines quoted in diagnostics have their passwords masked by `diag` itself (so
/// that `diag` needs nothing of the builtins); the function is shown here too, where
/// the URLs are parsed.
pub use crate::diag::mask_passwords;

#[derive(Debug)]
pub(super) struct PgUrl {
    pub(super) user: String,
    pub(super) password: Option<String>,
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) db: String,
    pub(super) tls: bool,
    pub(super) connect_timeout_ms: u64,
    pub(super) application_name: Option<String>,
}

impl PgUrl {
    pub(super) fn host_shown(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        }
    }

    /// The URL as messages and audit lines show it: never the password.
    pub(super) fn shown(&self) -> String {
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
pub(super) fn parse_url(url: &str) -> Result<PgUrl, String> {
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
