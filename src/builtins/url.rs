//! URLs: percent-encoding (`url.encode`, `url.decode`), form-encoded query strings
//! (`url.parse_query`, `url.build_query`) and splitting a URL into its parts
//! (`url.parse`, RFC 3986).

use super::Host;
use super::{b, Builtin, Cost};
use crate::diag::ErrKind;
use crate::error::R;
use crate::value::*;

const HEX: &[u8; 16] = b"0123456789ABCDEF";

#[inline]
fn unreserved(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~')
}

/// Percent-encode every byte but the unreserved ones; `plus` writes a space as `+`.
fn encode_into(out: &mut Vec<u8>, s: &[u8], plus: bool) {
    for &c in s {
        if unreserved(c) {
            out.push(c);
        } else if plus && c == b' ' {
            out.push(b'+');
        } else {
            out.push(b'%');
            out.push(HEX[(c >> 4) as usize]);
            out.push(HEX[(c & 15) as usize]);
        }
    }
}

fn hexval(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Percent-decoding as the WHATWG URL Standard does it: `%` and two hex digits is the
/// byte they name; a `%` without two hex digits stays as it is. With `plus`, `+` is a
/// space (form encoding).
fn decode(s: &[u8], plus: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        if c == b'%' {
            let hi = s.get(i + 1).copied().and_then(hexval);
            let lo = s.get(i + 2).copied().and_then(hexval);
            if let (Some(h), Some(l)) = (hi, lo) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
            out.push(b'%');
        } else {
            out.push(if plus && c == b'+' { b' ' } else { c });
        }
        i += 1;
    }
    out
}

/// Decoded form-data bytes as UTF-8, each invalid sequence replaced by U+FFFD (the
/// standard's "UTF-8 decode without BOM", as browsers and Python's `parse_qsl` do).
fn form_text(b: Vec<u8>) -> Vec<u8> {
    match String::from_utf8(b) {
        Ok(s) => s.into_bytes(),
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned().into_bytes(),
    }
}

fn url_encode(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("url.encode", args, 0)?;
    // Its size first (three bytes for each one encoded), for `str_room`.
    let size = s.iter().fold(0usize, |n, &c| n + if unreserved(c) { 1 } else { 3 });
    it.str_room(size)?;
    let mut out = Vec::with_capacity(size);
    encode_into(&mut out, s, false);
    it.make_str(out)
}

fn url_decode(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("url.decode", args, 0)?;
    it.room(s.len())?;
    // A malformed `%` stays as it is; the bytes are returned as decoded (SPEC 10).
    Ok(Value::str(decode(s, false)))
}

fn parse_query(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "url.parse_query";
    let s = it.arg_str(NAME, args, 0)?;
    let body: &[u8] = s.strip_prefix(b"?").unwrap_or(s);
    let mut m = Map::new();
    // The WHATWG application/x-www-form-urlencoded parser: split on `&`, skip empty
    // pieces, split at the first `=`, `+` to space, percent-decode (a malformed `%` stays),
    // then UTF-8 with U+FFFD for invalid bytes. A repeated key keeps its last value.
    for part in body.split(|&c| c == b'&') {
        if part.is_empty() {
            continue;
        }
        let (k, v) = match part.iter().position(|&c| c == b'=') {
            Some(i) => (&part[..i], &part[i + 1..]),
            None => (part, &b""[..]),
        };
        let key = form_text(decode(k, true));
        let val = form_text(decode(v, true));
        m.insert(bytes_vec(key), Value::str(val));
        it.check_map_len(m.len())?;
    }
    it.make_map(m)
}

fn build_query(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "url.build_query";
    let m = it.arg_map(NAME, args, 0)?;
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut pair = |out: &mut Vec<u8>, k: &[u8], v: &Value| -> Result<(), String> {
        scratch.clear();
        match v {
            Value::Str(s) => scratch.extend_from_slice(s),
            Value::Num(n) => fmt_num(*n, &mut scratch),
            Value::Bool(t) => scratch.extend_from_slice(if *t { b"true" } else { b"false" }),
            other => return Err(other.type_name().to_string()),
        }
        if !out.is_empty() {
            out.push(b'&');
        }
        encode_into(out, k, true);
        out.push(b'=');
        encode_into(out, &scratch, true);
        Ok(())
    };
    for (k, v) in m.iter() {
        let r = match v {
            Value::List(l) => l.items().iter().try_for_each(|item| pair(&mut out, k, item)),
            other => pair(&mut out, k, other),
        };
        if let Err(t) = r {
            return Err(it.err(
                ErrKind::Type,
                format!(
                    "{NAME}: value of key {} must be a string, number, bool or a list of them, got {t}",
                    crate::diag::quoted(k)
                ),
            ));
        }
        it.check_str_len(out.len())?;
    }
    it.make_str(out)
}

/// The parts of a URL (RFC 3986 generic syntax), as slices of the input.
#[derive(Debug, Default, PartialEq)]
pub struct Parts<'a> {
    pub scheme: Option<String>,
    pub user: Option<&'a [u8]>,
    pub host: Option<&'a [u8]>,
    pub port: Option<u16>,
    pub path: &'a [u8],
    pub query: Option<&'a [u8]>,
    pub fragment: Option<&'a [u8]>,
}

/// Split a URL or relative reference. Err(message) when malformed.
pub fn split(s: &[u8]) -> Result<Parts<'_>, String> {
    if let Some(i) = s.iter().position(|&c| c <= b' ' || c == 0x7f) {
        return Err(format!("space or control character at offset {i}"));
    }
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            if !(s.get(i + 1).is_some_and(u8::is_ascii_hexdigit) && s.get(i + 2).is_some_and(u8::is_ascii_hexdigit)) {
                return Err(format!("bad %-escape at offset {i}"));
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    let mut p = Parts::default();
    let mut rest = s;
    if let Some(h) = rest.iter().position(|&c| c == b'#') {
        p.fragment = Some(&rest[h + 1..]);
        rest = &rest[..h];
    }
    if let Some(q) = rest.iter().position(|&c| c == b'?') {
        p.query = Some(&rest[q + 1..]);
        rest = &rest[..q];
    }
    // scheme -> ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":"
    if let Some(c) = rest.iter().position(|&c| c == b':' || c == b'/') {
        if rest[c] == b':' {
            let name = &rest[..c];
            let valid = name.first().is_some_and(u8::is_ascii_alphabetic)
                && name.iter().all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.'));
            if !valid {
                return Err("invalid scheme (or a ':' in the first segment of a relative path)".into());
            }
            p.scheme = Some(String::from_utf8_lossy(name).to_ascii_lowercase());
            rest = &rest[c + 1..];
        }
    }
    // authority -> [ userinfo "@" ] host [ ":" port ]
    if let Some(after) = rest.strip_prefix(b"//") {
        let end = after.iter().position(|&c| c == b'/').unwrap_or(after.len());
        let mut auth = &after[..end];
        rest = &after[end..];
        if let Some(at) = auth.iter().rposition(|&c| c == b'@') {
            p.user = Some(&auth[..at]);
            auth = &auth[at + 1..];
        }
        let port_text: Option<&[u8]>;
        if auth.first() == Some(&b'[') {
            let close = auth.iter().position(|&c| c == b']').ok_or("unclosed '[' in the host")?;
            let inner = &auth[1..close];
            let ipv6 = inner.iter().all(|&c| c.is_ascii_hexdigit() || matches!(c, b':' | b'.'));
            let future = matches!(inner.first(), Some(b'v' | b'V'));
            if inner.is_empty() || !(ipv6 || future) {
                return Err("invalid IP literal in the host".into());
            }
            p.host = Some(inner);
            port_text = match &auth[close + 1..] {
                [] => None,
                [b':', port @ ..] => Some(port),
                _ => return Err("unexpected text after ']' in the host".into()),
            };
        } else {
            let (host, port) = match auth.iter().position(|&c| c == b':') {
                Some(c) => (&auth[..c], Some(&auth[c + 1..])),
                None => (auth, None),
            };
            let ok = |c: u8| unreserved(c) || c >= 0x80 || b"%!$&'()*+,;=".contains(&c);
            if let Some(&bad) = host.iter().find(|&&c| !ok(c)) {
                return Err(format!("invalid character {:?} in the host", bad as char));
            }
            p.host = Some(host);
            port_text = port;
        }
        if let Some(t) = port_text {
            if !t.is_empty() {
                if t.len() > 5 || !t.iter().all(u8::is_ascii_digit) {
                    return Err("the port is not a number in 0..65535".into());
                }
                let n: u32 = t.iter().fold(0, |a, &d| a * 10 + (d - b'0') as u32);
                if n > 65535 {
                    return Err("the port is not a number in 0..65535".into());
                }
                p.port = Some(n as u16);
            }
        }
    }
    p.path = rest;
    Ok(p)
}

fn url_parse(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("url.parse", args, 0)?;
    let p = split(s).map_err(|m| it.err(ErrKind::Parse, format!("url.parse: {m}")))?;
    let opt = |x: Option<&[u8]>| x.map(Value::str_from).unwrap_or(Value::Nil);
    let mut m = Map::new();
    let mut put = |k: &str, v: Value| {
        m.insert(bytes(k.as_bytes()), v);
    };
    put("scheme", p.scheme.as_deref().map(Value::string).unwrap_or(Value::Nil));
    put("user", opt(p.user));
    put("host", opt(p.host));
    put("port", p.port.map(|n| Value::Num(n as f64)).unwrap_or(Value::Nil));
    put("path", Value::str_from(p.path));
    put("query", opt(p.query));
    put("fragment", opt(p.fragment));
    it.make_map(m)
}

pub const TABLE: &[Builtin] = &[
    b("url.encode", "url.encode(s)", 1, 1, Cost::bytes(0.8), url_encode),
    b("url.decode", "url.decode(s)", 1, 1, Cost::bytes(1.0), url_decode),
    b("url.parse", "url.parse(s)", 1, 1, Cost::bytes(1.0), url_parse),
    b("url.parse_query", "url.parse_query(s)", 1, 1, Cost::bytes(15.0), parse_query),
    b("url.build_query", "url.build_query(m)", 1, 1, Cost::bytes(1.0), build_query),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_urls() {
        let p = split(b"HTTPS://u:pw@Example.com:8443/a/b?x=1&y#frag").unwrap();
        assert_eq!(p.scheme.as_deref(), Some("https"));
        assert_eq!(p.user, Some(&b"u:pw"[..]));
        assert_eq!(p.host, Some(&b"Example.com"[..]));
        assert_eq!(p.port, Some(8443));
        assert_eq!(p.path, b"/a/b");
        assert_eq!(p.query, Some(&b"x=1&y"[..]));
        assert_eq!(p.fragment, Some(&b"frag"[..]));
        let p = split(b"http://[::1]:80").unwrap();
        assert_eq!((p.host, p.port, p.path), (Some(&b"::1"[..]), Some(80), &b""[..]));
        let p = split(b"/search?q=a+b").unwrap();
        assert_eq!((p.scheme, p.host, p.path, p.query), (None, None, &b"/search"[..], Some(&b"q=a+b"[..])));
        let p = split(b"mailto:a@b.c").unwrap();
        assert_eq!((p.host, p.path), (None, &b"a@b.c"[..]));
        let p = split(b"file:///etc/hosts").unwrap();
        assert_eq!((p.host, p.path), (Some(&b""[..]), &b"/etc/hosts"[..]));
        let p = split(b"http://h:/?#").unwrap();
        assert_eq!((p.port, p.query, p.fragment), (None, Some(&b""[..]), Some(&b""[..])));
        for bad in [
            &b"http://h:99999/"[..],
            b"http://h:8x/",
            b"http://[::1/",
            b"http://[::1]x/",
            b"1http://h/",
            b"a b",
            b"http://h/%zz",
            b"http://h/%4",
            b"http://h<>/",
            b"http://h\t/",
            b"http://h:1:2/",
        ] {
            assert!(split(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn codes() {
        let mut out = Vec::new();
        encode_into(&mut out, b"a b&c/~\xff", false);
        assert_eq!(out, b"a%20b%26c%2F~%FF");
        out.clear();
        encode_into(&mut out, b"a b", true);
        assert_eq!(out, b"a+b");
        assert_eq!(decode(b"a+b%2f%2F", false), b"a+b//");
        assert_eq!(decode(b"a+b", true), b"a b");
        assert_eq!(decode(b"x%", false), b"x%");
        assert_eq!(decode(b"x%g0%4", false), b"x%g0%4");
        assert_eq!(form_text(decode(b"%FFa%C3%A9", true)), "\u{FFFD}a\u{e9}".as_bytes());
    }
}
