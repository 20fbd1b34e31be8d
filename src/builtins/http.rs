//! `http.*`: HTTP and HTTPS requests through ureq (rustls with ring), behind
//! `--allow-network`.
//!
//! Rules (SPEC 10, SOCKETS.md):
//! - http and https URLs only (at most 8,192 bytes); no proxies (the proxy environment
//!   variables are ignored); redirects are never followed (a 3xx is a response); any
//!   status is a response; TLS verification is always on;
//! - `timeout_ms` (1..30,000, default 5,000) bounds the whole exchange: resolution,
//!   connect, TLS, sending, and reading the response; `--max-time` bounds it too;
//! - response headers at most 64 KiB, body at most `max_body` (1..1 MiB, default 1 MiB):
//!   past either, a `network` error;
//! - run budgets (limit kind `http`): 64 requests, 60,000 ms of time waited (each
//!   request reserves its timeout before it starts, and the part it did not use is
//!   returned when it ends), 16 MiB of request and response bodies.

use std::sync::Arc;
use std::time::Duration;

use ureq::http::{HeaderName, HeaderValue, Method, Uri};

use super::netcfg::UreqDns;
use super::Host;
use super::{gated, Builtin, Cap, Cost};
use crate::budget::Budget;
use crate::diag::ErrKind;
use crate::error::{Fail, R};
use crate::limits::*;
use crate::value::*;

/// HTTP state of a run: the agent (built on the first request) and the run budgets.
#[derive(Debug)]
pub struct HttpState {
    agent: Option<ureq::Agent>,
    /// A refusal by the scoped resolver (`netcfg::ScopedDns`) during the last request.
    refused: Arc<std::sync::Mutex<Option<String>>>,
    pub requests: u64,
    pub reserved_ms: u64,
    pub bodies: Budget,
}

impl Default for HttpState {
    fn default() -> Self {
        HttpState {
            agent: None,
            refused: Default::default(),
            requests: 0,
            reserved_ms: 0,
            bodies: Budget::new(
                LimitKind::Http,
                Limits::default().get(L::HttpBodies),
                "HTTP request and response bodies",
            ),
        }
    }
}

impl HttpState {
    /// Drop the agent and its pooled connections (at the end of a run).
    pub fn close_all(&mut self) {
        self.agent = None;
    }
}

/// Options of one request.
struct Opts {
    headers: Vec<(HeaderName, HeaderValue)>,
    timeout_ms: u64,
    max_body: usize,
    body: Option<Bytes>,
}

fn opts(it: &Host, name: &str, args: &[Value], i: usize, body_allowed: bool) -> R<Opts> {
    let mut o = Opts { headers: Vec::new(), timeout_ms: DEFAULT_HTTP_TIMEOUT_MS, max_body: MAX_HTTP_BODY, body: None };
    if it.opt(args, i).is_none() {
        return Ok(o);
    }
    let m = it.arg_map(name, args, i)?;
    let int = |k: &str, v: &Value, lo: u64, hi: u64| -> R<u64> {
        match v {
            Value::Num(n) if is_integral(*n) && *n >= lo as f64 && *n <= hi as f64 => Ok(*n as u64),
            Value::Num(n) => Err(it.err(
                ErrKind::Value,
                format!("{name}: option {k} must be an integer in {lo}..{hi}, got {}", num_to_string(*n)),
            )),
            other => {
                Err(it.err(ErrKind::Type, format!("{name}: option {k} must be a number, got {}", other.type_name())))
            }
        }
    };
    for (k, v) in m.iter() {
        match k.as_slice() {
            b"timeout_ms" => o.timeout_ms = int("timeout_ms", v, 1, MAX_HTTP_TIMEOUT_MS)?,
            b"max_body" => o.max_body = int("max_body", v, 1, MAX_HTTP_BODY as u64)? as usize,
            b"headers" => o.headers = headers(it, name, v)?,
            b"body" if body_allowed => match v {
                Value::Str(s) => o.body = Some(s.clone()),
                Value::Nil => o.body = None,
                other => {
                    return Err(it.err(
                        ErrKind::Type,
                        format!("{name}: option body must be a string, got {}", other.type_name()),
                    ))
                }
            },
            other => {
                let known =
                    if body_allowed { "headers, timeout_ms, max_body, body" } else { "headers, timeout_ms, max_body" };
                return Err(it.err(
                    ErrKind::Value,
                    format!("{name}: unknown option {} (known: {known})", crate::diag::quoted(other)),
                ));
            }
        }
    }
    Ok(o)
}

fn headers(it: &Host, name: &str, v: &Value) -> R<Vec<(HeaderName, HeaderValue)>> {
    let Value::Map(m) = v else {
        return Err(it.err(ErrKind::Type, format!("{name}: option headers must be a map, got {}", v.type_name())));
    };
    let mut out = Vec::with_capacity(m.len());
    let mut bytes = 0usize;
    for (k, v) in m.iter() {
        let Value::Str(val) = v else {
            return Err(it.err(
                ErrKind::Type,
                format!("{name}: header {} must be a string, got {}", crate::diag::quoted(k), v.type_name()),
            ));
        };
        bytes += k.len() + val.len();
        if bytes > MAX_HTTP_REQUEST_HEADER_BYTES {
            return Err(
                it.err(ErrKind::Value, format!("{name}: request headers exceed {MAX_HTTP_REQUEST_HEADER_BYTES} bytes"))
            );
        }
        let hn = HeaderName::from_bytes(k)
            .map_err(|_| it.err(ErrKind::Value, format!("{name}: invalid header name {}", crate::diag::quoted(k))))?;
        // The body's framing is ureq's to write: a script's own would contradict it.
        if hn == ureq::http::header::CONTENT_LENGTH || hn == ureq::http::header::TRANSFER_ENCODING {
            return Err(it.err(ErrKind::Value, format!("{name}: header {hn} is set from the body, not by the script")));
        }
        let hv = HeaderValue::from_bytes(val).map_err(|_| {
            it.err(ErrKind::Value, format!("{name}: invalid value for header {}", crate::diag::quoted(k)))
        })?;
        out.push((hn, hv));
    }
    Ok(out)
}

/// A URL as it appears in messages (long ones shortened).
fn shown_url(u: &str) -> String {
    if u.len() <= 120 {
        return u.to_string();
    }
    let mut end = 117;
    while !u.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &u[..end])
}

fn check_url(it: &Host, name: &str, url: &Bytes) -> R<(Uri, String)> {
    if url.len() > MAX_URL_BYTES {
        return Err(it.err(ErrKind::Value, format!("{name}: URL of more than {MAX_URL_BYTES} bytes")));
    }
    let text =
        std::str::from_utf8(url).map_err(|_| it.err(ErrKind::Value, format!("{name}: URL is not valid UTF-8")))?;
    let scheme = text.split_once("://").map(|(s, _)| s.to_ascii_lowercase());
    match scheme.as_deref() {
        Some("http") | Some("https") => {}
        Some(s) if !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(&c)) => {
            return Err(
                it.err(ErrKind::Value, format!("{name}: only http and https URLs are allowed, got scheme \"{s}\""))
            )
        }
        _ => {
            return Err(it.err(
                ErrKind::Value,
                format!("{name}: URL must start with http:// or https://, got \"{}\"", shown_url(text)),
            ))
        }
    }
    let uri: Uri = text
        .parse()
        .map_err(|e| it.err(ErrKind::Value, format!("{name}: invalid URL \"{}\": {e}", shown_url(text))))?;
    if uri.host().map(str::is_empty).unwrap_or(true) {
        return Err(it.err(ErrKind::Value, format!("{name}: URL has no host: \"{}\"", shown_url(text))));
    }
    Ok((uri, text.to_string()))
}

fn method_of(it: &Host, name: &str, m: &[u8]) -> R<Method> {
    let upper = m.to_ascii_uppercase();
    if upper.is_empty()
        || upper.len() > 32
        || !upper.iter().all(|c| c.is_ascii_alphabetic() || *c == b'-' || *c == b'_')
    {
        return Err(it.err(
            ErrKind::Value,
            format!("{name}: invalid method {} (letters, - and _ only)", crate::diag::quoted(m)),
        ));
    }
    Method::from_bytes(&upper)
        .map_err(|_| it.err(ErrKind::Value, format!("{name}: invalid method {}", crate::diag::quoted(m))))
}

/// The agent, built on the first request with the operator's trust and resolver.
fn agent(it: &mut Host) -> Result<ureq::Agent, String> {
    if let Some(a) = &it.net.http.agent {
        return Ok(a.clone());
    }
    use ureq::tls::{Certificate, RootCerts, TlsConfig, TlsProvider};
    let roots = match it.net.tls.ca_certs(&it.net.settings)? {
        None => RootCerts::WebPki,
        Some(certs) => {
            let list: Vec<Certificate<'static>> = certs.iter().map(|c| Certificate::from_der(c).to_owned()).collect();
            RootCerts::new_with_certs(&list)
        }
    };
    let tls = TlsConfig::builder()
        .provider(TlsProvider::Rustls)
        .root_certs(roots)
        .unversioned_rustls_crypto_provider(super::netcfg::provider())
        .build();
    let config = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .https_only(false)
        .proxy(None)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .save_redirect_history(false)
        .user_agent(concat!("leash/", env!("CARGO_PKG_VERSION")))
        .max_response_header_size(MAX_HTTP_HEADER_BYTES)
        .allow_non_standard_methods(true)
        .tls_config(tls)
        .build();
    let scoped = matches!(it.gate.network, Some(crate::gate::HostScope::Only(_)));
    let agent = match it.net.dns() {
        dns if scoped => ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::new(),
            super::netcfg::ScopedDns { dns, gate: it.gate.clone(), refused: it.net.http.refused.clone() },
        ),
        None => ureq::Agent::new_with_config(config),
        Some(dns) => ureq::Agent::with_parts(
            config,
            ureq::unversioned::transport::DefaultConnector::new(),
            UreqDns(Arc::clone(&dns)),
        ),
    };
    it.net.http.agent = Some(agent.clone());
    Ok(agent)
}

/// Why a request failed, in words.
fn reason(e: &ureq::Error, timeout_ms: u64) -> String {
    use ureq::Error as E;
    match e {
        E::Timeout(_) => format!("timed out after {timeout_ms} ms"),
        E::HostNotFound => "cannot resolve the host".into(),
        E::Io(io) => io_reason(io, timeout_ms),
        E::LargeResponseHeader(_, _) => format!("response headers exceed {MAX_HTTP_HEADER_BYTES} bytes"),
        E::Rustls(r) => format!("TLS: {r}"),
        E::Tls(s) => format!("TLS: {s}"),
        E::ConnectionFailed => "connection failed".into(),
        other => other.to_string(),
    }
}

fn io_reason(e: &std::io::Error, timeout_ms: u64) -> String {
    if let Some(inner) = e.get_ref() {
        if let Some(ue) = inner.downcast_ref::<ureq::Error>() {
            return reason(ue, timeout_ms);
        }
        if let Some(r) = inner.downcast_ref::<rustls::Error>() {
            return format!("TLS: {r}");
        }
    }
    if matches!(e.kind(), std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock) {
        return format!("timed out after {timeout_ms} ms");
    }
    crate::fileio::io_reason(e)
}

/// A failed exchange: a `time` limit when the run's deadline has passed, else a
/// `network` error.
fn failed(it: &Host, what: &str, why: String) -> Fail {
    if it.meter.deadline_passed() {
        return it.limit(LimitKind::Time, format!("wall-clock deadline (--max-time) reached during {what}"));
    }
    it.err(ErrKind::Network, format!("{what}: {why}"))
}

/// http.*: the bytes of the request's arguments (URL, body) and of the response body.
const HTTP: Cost = Cost::io(1.0);

fn request(it: &mut Host, name: &str, method: Method, url: &Bytes, body: Option<Bytes>, o: Opts) -> R<Value> {
    let (uri, text) = check_url(it, name, url)?;
    let what = format!("{name}: {method} {}", shown_url(&text));
    it.audit_note(shown_url(&text));
    let mut o = o;
    let body = body.or(o.body.take());
    // The run budgets, before anything is sent.
    let st = &it.net.http;
    if st.requests >= it.lim.get(L::HttpRequests) {
        return Err(it.limit(
            LimitKind::Http,
            format!(
                "more than {max_http_requests} HTTP requests per run",
                max_http_requests = it.lim.get(L::HttpRequests)
            ),
        ));
    }
    if st.reserved_ms + o.timeout_ms > it.lim.get(L::HttpTimeouts) {
        let reserved = st.reserved_ms;
        return Err(it.limit(
            LimitKind::Http,
            format!(
                "requested HTTP timeouts exceed {max_http_timeout_total_ms} ms per run ({reserved} ms reserved, {} ms asked)",
                o.timeout_ms, max_http_timeout_total_ms = it.lim.get(L::HttpTimeouts)
            ),
        ));
    }
    let body_len = body.as_ref().map(|b| b.len()).unwrap_or(0) as u64;
    it.net.http.bodies.charge(body_len).map_err(|e| it.budget_fail(e))?;
    let st = &mut it.net.http;
    st.requests += 1;
    st.reserved_ms += o.timeout_ms;
    // The part of the reservation the request did not use is returned when it ends,
    // however it ends (SPEC 10): the budget bounds time spent waiting, not the number
    // of fast requests. Used time is counted in whole milliseconds, rounded up.
    let timeout_ms = o.timeout_ms;
    let started = crate::meter::now();
    let r = exchange(it, name, &what, method, uri, body, body_len, o);
    let used = (crate::meter::since(started).as_micros().div_ceil(1000) as u64).min(timeout_ms);
    let st = &mut it.net.http;
    st.reserved_ms = st.reserved_ms.saturating_sub(timeout_ms - used);
    r
}

/// The request itself, once its budgets are reserved.
#[allow(clippy::too_many_arguments)]
fn exchange(
    it: &mut Host,
    name: &str,
    what: &str,
    method: Method,
    uri: ureq::http::Uri,
    body: Option<Bytes>,
    body_len: u64,
    o: Opts,
) -> R<Value> {
    // The wait: the request's timeout, never past the run's deadline.
    let mut wait = Duration::from_millis(o.timeout_ms);
    if let Some(left) = it.meter.remaining() {
        if left.is_zero() {
            return Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached"));
        }
        wait = wait.min(left);
    }
    let agent = agent(it).map_err(|m| it.err(ErrKind::Network, format!("{what}: {m}")))?;
    let mut b = ureq::http::Request::builder().method(method).uri(uri);
    for (k, v) in o.headers {
        b = b.header(k, v);
    }
    let sent = match body {
        None => b.body(()).map(|r| agent.configure_request(r).timeout_global(Some(wait)).build()).map(|r| agent.run(r)),
        Some(data) => b
            .body(data.as_slice().to_vec())
            .map(|r| agent.configure_request(r).timeout_global(Some(wait)).build())
            .map(|r| agent.run(r)),
    };
    let refused = it.net.http.refused.lock().unwrap_or_else(|p| p.into_inner()).take();
    if let Some(m) = refused {
        return Err(it.err(ErrKind::Permission, format!("{name}: {m}")));
    }
    let mut resp = match sent {
        Err(e) => return Err(it.err(ErrKind::Value, format!("{what}: {e}"))),
        Ok(Err(e)) => return Err(failed(it, what, reason(&e, o.timeout_ms))),
        Ok(Ok(r)) => r,
    };
    let status = resp.status().as_u16();
    let mut hmap = Map::with_capacity(resp.headers().keys_len());
    for k in resp.headers().keys() {
        let mut joined: Vec<u8> = Vec::new();
        for (i, v) in resp.headers().get_all(k).iter().enumerate() {
            if i > 0 {
                joined.extend_from_slice(b", ");
            }
            joined.extend_from_slice(v.as_bytes());
        }
        hmap.insert(bytes(k.as_str().as_bytes()), Value::str(joined));
    }
    // The body: at most max_body, and never past the run's body budget.
    let left = it.net.http.bodies.max - it.net.http.bodies.used;
    let cap = (o.max_body as u64).min(left);
    let mut data = Vec::new();
    // (Read a chunk at a time, each growth of the buffer found room for first.)
    let mut body = resp.body_mut().with_config().limit(u64::MAX).reader();
    let got = it.read_within(&mut body, cap + 1, &mut data)?;
    if let Err(e) = got {
        return Err(failed(it, what, format!("reading the body: {}", io_reason(&e, o.timeout_ms))));
    }
    it.net.http.bodies.charge(data.len() as u64).map_err(|e| it.budget_fail(e))?;
    it.audit_bytes = body_len + data.len() as u64;
    // The body received (the request's own body is charged with the arguments).
    it.work(HTTP.units(data.len() as u64, 0))?;
    if data.len() > o.max_body {
        return Err(
            it.err(ErrKind::Network, format!("{what}: response body longer than max_body ({} bytes)", o.max_body))
        );
    }
    let mut out = Map::with_capacity(3);
    out.insert(bytes(b"status"), Value::Num(status as f64));
    out.insert(bytes(b"headers"), it.make_map(hmap)?);
    out.insert(bytes(b"body"), it.make_str(data)?);
    it.make_map(out)
}

fn http_request(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "http.request";
    let m = it.arg_str(NAME, args, 0)?;
    let method = method_of(it, NAME, m)?;
    let url = it.arg_str(NAME, args, 1)?.clone();
    let o = opts(it, NAME, args, 2, true)?;
    request(it, NAME, method, &url, None, o)
}

fn http_get(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "http.get";
    let url = it.arg_str(NAME, args, 0)?.clone();
    let o = opts(it, NAME, args, 1, false)?;
    request(it, NAME, Method::GET, &url, None, o)
}

fn http_post(it: &mut Host, args: &mut [Value]) -> R<Value> {
    it.net.ensure();
    const NAME: &str = "http.post";
    let url = it.arg_str(NAME, args, 0)?.clone();
    let body = it.arg_str(NAME, args, 1)?.clone();
    let o = opts(it, NAME, args, 2, false)?;
    request(it, NAME, Method::POST, &url, Some(body), o)
}

const N: Cap = Cap::Network;

pub const TABLE: &[Builtin] = &[
    gated("http.request", "http.request(method, url[, opts])", 2, 3, N, HTTP, http_request),
    gated("http.get", "http.get(url[, opts])", 1, 2, N, HTTP, http_get),
    gated("http.post", "http.post(url, body[, opts])", 2, 3, N, HTTP, http_post),
];
