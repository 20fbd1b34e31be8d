//! What `http.*` and `net.*` share: the operator's settings (`--tls-ca-file`,
//! `--dns-server`), TLS trust, and name resolution.
//!
//! Nothing here is built before a script calls a network builtin: the trust store, the
//! rustls configuration, the hickory resolver and its tokio runtime are made on first
//! use and kept for the rest of the run (a `print("hello")` pays for none of them).
//!
//! Trust: by default the Mozilla roots compiled in from `webpki-roots` (the same for
//! http.* and net.*, on every machine); `--tls-ca-file PATH` replaces them with the PEM
//! certificates of PATH. Verification of the peer's chain and of its name (the host the
//! script asked for) is always on.
//!
//! Resolution: by default the system resolver (`getaddrinfo`, so `/etc/hosts` and
//! `/etc/resolv.conf`), run on a helper thread so that a lookup ends at its deadline;
//! with `--dns-server ADDR[:PORT]`, only that server is asked (UDP, then TCP when an
//! answer is truncated), through hickory-resolver on a current-thread tokio runtime;
//! the hosts file is not read then.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, RecvTimeoutError};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;

use crate::limits::*;

/// The operator's network settings for a run.
#[derive(Debug, Clone, Default)]
pub struct NetSettings {
    /// `--tls-ca-file`: replaces the default TLS trust.
    pub tls_ca_file: Option<PathBuf>,
    /// `--dns-server`: replaces the resolver configuration.
    pub dns_server: Option<SocketAddr>,
}

/// Parse a `--dns-server` value: an IP address (port 53) or an address with a port
/// (`[v6]:port` for IPv6).
pub fn parse_dns_server(v: &str) -> Option<SocketAddr> {
    if let Ok(ip) = v.parse::<IpAddr>() {
        return Some(SocketAddr::new(ip, 53));
    }
    v.parse::<SocketAddr>().ok()
}

/// The ring crypto provider (the only one built in).
pub fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// Certificates of the `--tls-ca-file` bundle.
pub fn load_ca_file(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let shown = path.display();
    let text = crate::fileio::read_bounded(path, MAX_CA_FILE_BYTES, false)
        .map_err(|e| format!("cannot read --tls-ca-file \"{shown}\": {}", crate::fileio::io_reason(&e)))?;
    if text.len() > MAX_CA_FILE_BYTES {
        return Err(format!("--tls-ca-file \"{shown}\" is larger than {MAX_CA_FILE_BYTES} bytes"));
    }
    let mut certs = Vec::new();
    for c in CertificateDer::pem_slice_iter(&text) {
        certs.push(c.map_err(|e| format!("--tls-ca-file \"{shown}\": bad PEM: {e}"))?);
    }
    if certs.is_empty() {
        return Err(format!("--tls-ca-file \"{shown}\" holds no certificate"));
    }
    Ok(certs)
}

/// Lazily built TLS trust and client configuration for `net.connect`.
#[derive(Default)]
pub struct Tls {
    ca: OnceLock<Result<Option<Arc<Vec<CertificateDer<'static>>>>, String>>,
    client: OnceLock<Result<Arc<rustls::ClientConfig>, String>>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tls")
    }
}

impl Tls {
    /// The operator's CA certificates (None: the default roots).
    pub fn ca_certs(&self, s: &NetSettings) -> Result<Option<Arc<Vec<CertificateDer<'static>>>>, String> {
        self.ca
            .get_or_init(|| match &s.tls_ca_file {
                None => Ok(None),
                Some(p) => load_ca_file(p).map(|c| Some(Arc::new(c))),
            })
            .clone()
    }

    /// The rustls client configuration of `net.connect`.
    pub fn client_config(&self, s: &NetSettings) -> Result<Arc<rustls::ClientConfig>, String> {
        self.client
            .get_or_init(|| {
                let mut roots = rustls::RootCertStore::empty();
                match self.ca_certs(s)? {
                    None => roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned()),
                    Some(certs) => {
                        let (added, _) = roots.add_parsable_certificates(certs.iter().cloned());
                        if added == 0 {
                            return Err("--tls-ca-file holds no usable CA certificate".into());
                        }
                    }
                }
                let cfg = rustls::ClientConfig::builder_with_provider(provider())
                    .with_safe_default_protocol_versions()
                    .map_err(|e| format!("TLS set-up failed: {e}"))?
                    .with_root_certificates(roots)
                    .with_no_client_auth();
                Ok(Arc::new(cfg))
            })
            .clone()
    }
}

/// Why a lookup failed.
#[derive(Debug)]
pub enum LookupError {
    /// The deadline passed first.
    Timeout,
    /// An answer that says no, or a resolver failure.
    Failed(String),
}

/// The `--dns-server` resolver: a hickory resolver on its own current-thread tokio
/// runtime, built on the first lookup.
pub struct Dns {
    server: SocketAddr,
    inner: OnceLock<Result<(tokio::runtime::Runtime, hickory_resolver::TokioResolver), String>>,
}

impl std::fmt::Debug for Dns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Dns({})", self.server)
    }
}

impl Dns {
    pub fn new(server: SocketAddr) -> Self {
        Dns { server, inner: OnceLock::new() }
    }

    fn build(server: SocketAddr) -> Result<(tokio::runtime::Runtime, hickory_resolver::TokioResolver), String> {
        use hickory_resolver::config::*;
        use hickory_resolver::net::runtime::TokioRuntimeProvider;
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the DNS runtime: {e}"))?;
        let mut ns = NameServerConfig::udp_and_tcp(server.ip());
        for c in &mut ns.connections {
            c.port = server.port();
        }
        let config = ResolverConfig::from_name_servers(vec![ns]);
        let resolver = rt.block_on(async {
            let mut b = hickory_resolver::Resolver::builder_with_config(config, TokioRuntimeProvider::default());
            let o = b.options_mut();
            o.ip_strategy = LookupIpStrategy::Ipv4AndIpv6;
            o.use_hosts_file = ResolveHosts::Never;
            o.attempts = 1;
            o.cache_size = 256;
            b.build()
        });
        let resolver = resolver.map_err(|e| format!("cannot set up the resolver: {e}"))?;
        Ok((rt, resolver))
    }

    /// Look `name` up (A and AAAA), waiting at most `wait`.
    pub fn lookup(&self, name: &str, wait: Duration) -> Result<Vec<IpAddr>, LookupError> {
        let (rt, resolver) =
            self.inner.get_or_init(|| Dns::build(self.server)).as_ref().map_err(|e| LookupError::Failed(e.clone()))?;
        // A trailing dot: the name is complete (no search domains are configured anyway).
        let fqdn = if name.ends_with('.') { name.to_string() } else { format!("{name}.") };
        let r = rt.block_on(async { tokio::time::timeout(wait, resolver.lookup_ip(fqdn.as_str())).await });
        match r {
            Err(_) => Err(LookupError::Timeout),
            Ok(Err(e)) => Err(LookupError::Failed(dns_reason(&e.to_string()))),
            Ok(Ok(l)) => Ok(l.iter().collect()),
        }
    }
}

fn dns_reason(s: &str) -> String {
    if s.contains("no record") || s.contains("NXDomain") || s.contains("NoRecordsFound") {
        "no such host".into()
    } else {
        s.to_string()
    }
}

/// Look `name` up with the system resolver on a helper thread, waiting at most `wait`.
/// (A lookup that outlives its wait finishes on its thread and is dropped.)
pub fn system_lookup(name: &str, wait: Duration) -> Result<Vec<IpAddr>, LookupError> {
    let (tx, rx) = sync_channel(1);
    let host = name.to_string();
    let spawned = std::thread::Builder::new().name("leash-dns".into()).spawn(move || {
        let _ = tx.send((host.as_str(), 0u16).to_socket_addrs().map(|it| it.map(|a| a.ip()).collect::<Vec<_>>()));
    });
    if let Err(e) = spawned {
        return Err(LookupError::Failed(format!("cannot start a lookup: {e}")));
    }
    match rx.recv_timeout(wait) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(LookupError::Failed(system_reason(&e))),
        Err(RecvTimeoutError::Timeout) => Err(LookupError::Timeout),
        Err(RecvTimeoutError::Disconnected) => Err(LookupError::Failed("the lookup failed".into())),
    }
}

fn system_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    if s.contains("not known") || s.contains("No address associated") || s.contains("nodename nor servname") {
        "no such host".into()
    } else {
        s.strip_prefix("failed to lookup address information: ").unwrap_or(&s).to_string()
    }
}

/// An IP literal, with or without the brackets of a URL's IPv6 host.
pub fn ip_literal(host: &str) -> Option<IpAddr> {
    let h = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    h.parse().ok()
}

/// Addresses in their first order, without repeats.
pub fn dedup(v: Vec<IpAddr>) -> Vec<IpAddr> {
    let mut out: Vec<IpAddr> = Vec::with_capacity(v.len());
    for a in v {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// Resolve `name` with the run's resolver (`dns`: the `--dns-server` one, if any).
pub fn lookup(dns: Option<&Dns>, name: &str, wait: Duration) -> Result<Vec<IpAddr>, LookupError> {
    if let Some(ip) = ip_literal(name) {
        return Ok(vec![ip]);
    }
    let v = match dns {
        Some(d) => d.lookup(name, wait)?,
        None => system_lookup(name, wait)?,
    };
    let v = dedup(v);
    if v.is_empty() {
        return Err(LookupError::Failed("no addresses".into()));
    }
    Ok(v)
}

/// The host of `uri` and its port (the scheme's default when none is written).
fn host_port(uri: &ureq::http::Uri) -> Result<(&str, u16), ureq::Error> {
    let host = uri.host().ok_or_else(|| ureq::Error::BadUri("no host".into()))?;
    Ok((host, uri.port_u16().unwrap_or(if uri.scheme_str() == Some("https") { 443 } else { 80 })))
}

/// The `--dns-server` resolver as ureq's resolver for http.*.
#[derive(Debug)]
pub struct UreqDns(pub Arc<Dns>);

impl ureq::unversioned::resolver::Resolver for UreqDns {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let (host, port) = host_port(uri)?;
        let wait = *timeout.after;
        let ips = lookup(Some(&self.0), host, wait).map_err(|e| match e {
            LookupError::Timeout => ureq::Error::Timeout(ureq::Timeout::Resolve),
            LookupError::Failed(_) => ureq::Error::HostNotFound,
        })?;
        let mut out = self.empty();
        for ip in ips {
            if out.try_push(SocketAddr::new(ip, port)).is_err() {
                break;
            }
        }
        Ok(out)
    }
}

/// The resolver of http.* under a scoped `--allow-network=`: resolves (with the
/// `--dns-server` resolver, or the system's) and hands ureq only the addresses the scope
/// allows for that name and port, so the connection can only go to an address that was
/// checked. A refusal is written to `refused` for the caller to report.
#[derive(Debug)]
pub struct ScopedDns {
    pub dns: Option<Arc<Dns>>,
    pub gate: Arc<crate::gate::Gate>,
    pub refused: Arc<std::sync::Mutex<Option<String>>>,
}

impl ureq::unversioned::resolver::Resolver for ScopedDns {
    fn resolve(
        &self,
        uri: &ureq::http::Uri,
        _config: &ureq::config::Config,
        timeout: ureq::unversioned::transport::NextTimeout,
    ) -> Result<ureq::unversioned::resolver::ResolvedSocketAddrs, ureq::Error> {
        let (host, port) = host_port(uri)?;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        let refuse = |why: String| {
            *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
            ureq::Error::Io(std::io::Error::new(std::io::ErrorKind::PermissionDenied, "outside the scope"))
        };
        let shown = format!("{host}:{port}");
        if ip_literal(host).is_none() && !self.gate.resolve_allowed(bare) {
            return Err(refuse(format!("\"{shown}\" is outside the --allow-network scope")));
        }
        let ips = lookup(self.dns.as_deref(), host, *timeout.after).map_err(|e| match e {
            LookupError::Timeout => ureq::Error::Timeout(ureq::Timeout::Resolve),
            LookupError::Failed(_) => ureq::Error::HostNotFound,
        })?;
        let all = ips.len();
        let mut out = self.empty();
        for ip in ips {
            let a = SocketAddr::new(ip, port);
            if self.gate.connect_allowed(bare, a) && out.try_push(a).is_err() {
                break;
            }
        }
        if out.is_empty() {
            return Err(refuse(format!(
                "\"{shown}\" (resolved to {all} address(es)) is outside the --allow-network scope"
            )));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dns_server_values() {
        assert_eq!(parse_dns_server("127.0.0.1"), Some("127.0.0.1:53".parse().unwrap()));
        assert_eq!(parse_dns_server("127.0.0.1:5353"), Some("127.0.0.1:5353".parse().unwrap()));
        assert_eq!(parse_dns_server("::1"), Some("[::1]:53".parse().unwrap()));
        assert_eq!(parse_dns_server("[::1]:5353"), Some("[::1]:5353".parse().unwrap()));
        assert_eq!(parse_dns_server("example.com"), None);
    }

    #[test]
    fn literals() {
        assert_eq!(ip_literal("[::1]"), Some("::1".parse().unwrap()));
        assert_eq!(ip_literal("10.0.0.1"), Some("10.0.0.1".parse().unwrap()));
        assert_eq!(ip_literal("localhost"), None);
        let a: IpAddr = "127.0.0.1".parse().unwrap();
        assert_eq!(dedup(vec![a, a]), vec![a]);
    }
}
