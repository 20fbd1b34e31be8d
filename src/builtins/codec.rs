//! Byte codecs: `html.escape`, `base64.encode` / `base64.decode` (RFC 4648, standard
//! alphabet, padding required), `hash.sha256` (lowercase hex).

use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::Host;
use super::{b, Builtin, Cost};
use crate::diag::ErrKind;
use crate::error::R;
use crate::value::*;

fn html_escape(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("html.escape", args, 0)?;
    // The escaped size first (an entity is up to 6 bytes for 1), so that the text's
    // room is found before it is built (`str_room`).
    let size = s.iter().fold(0usize, |n, &c| {
        n + match c {
            b'&' => 5,
            b'<' | b'>' => 4,
            b'"' => 6,
            b'\'' => 5,
            _ => 1,
        }
    });
    it.str_room(size)?;
    let mut out = Vec::with_capacity(size);
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let rep: &[u8] = match c {
            b'&' => b"&amp;",
            b'<' => b"&lt;",
            b'>' => b"&gt;",
            b'"' => b"&quot;",
            b'\'' => b"&#39;",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        out.extend_from_slice(rep);
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    it.make_str(out)
}

fn b64_encode(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("base64.encode", args, 0)?;
    let n = base64::encoded_len(s.len(), true).unwrap_or(usize::MAX);
    it.str_room(n)?;
    let out = base64::engine::general_purpose::STANDARD.encode(s.as_slice());
    Ok(Value::str(out.into_bytes()))
}

fn b64_decode(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("base64.decode", args, 0)?;
    match base64::engine::general_purpose::STANDARD.decode(s.as_slice()) {
        Ok(out) => Ok(Value::str(out)),
        Err(e) => {
            let why = match e {
                base64::DecodeError::InvalidByte(at, c) => {
                    if c == b'=' {
                        format!("misplaced padding at offset {at}")
                    } else {
                        format!("invalid byte 0x{c:02x} at offset {at}")
                    }
                }
                base64::DecodeError::InvalidLength(_) => {
                    "invalid length (padded base64 is a multiple of 4 characters)".to_string()
                }
                base64::DecodeError::InvalidLastSymbol(at, _) => {
                    format!("non-canonical final symbol at offset {at}")
                }
                base64::DecodeError::InvalidPadding => "missing or invalid padding".to_string(),
            };
            Err(it.err(ErrKind::Parse, format!("base64.decode: {why}")))
        }
    }
}

fn sha256(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("hash.sha256", args, 0)?;
    let digest = Sha256::digest(s.as_slice());
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(64);
    for byte in digest {
        out.push(HEX[(byte >> 4) as usize]);
        out.push(HEX[(byte & 15) as usize]);
    }
    Ok(Value::str(out))
}

pub const TABLE: &[Builtin] = &[
    b("html.escape", "html.escape(s)", 1, 1, Cost::bytes(1.0), html_escape),
    b("base64.encode", "base64.encode(s)", 1, 1, Cost::bytes(0.27), b64_encode),
    b("base64.decode", "base64.decode(s)", 1, 1, Cost::bytes(0.28), b64_decode),
    b("hash.sha256", "hash.sha256(s)", 1, 1, Cost::bytes(1.0), sha256),
];
