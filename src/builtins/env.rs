//! `env`: the process environment as the script sees it. `env.set` changes a
//! script-local overlay (bounded by the `env` limit); the process environment itself is
//! never changed.

use std::collections::HashMap;

use super::Host;
use super::{b, Builtin, Cost, CONST};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

/// Changed keys: a value, or None for a key the script removed.
#[derive(Debug, Default)]
pub struct EnvOverlay {
    changed: HashMap<Vec<u8>, Option<Vec<u8>>>,
    bytes: usize,
}

fn os_get(name: &[u8]) -> Option<Vec<u8>> {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    std::env::var_os(std::ffi::OsStr::from_bytes(name)).map(|v| v.into_vec())
}

fn name_arg<'a>(it: &Host, f: &str, args: &'a [Value]) -> R<&'a [u8]> {
    let n = it.arg_str(f, args, 0)?;
    if n.is_empty() || n.contains(&b'=') || n.contains(&0) {
        return Err(it.err(ErrKind::Value, format!("{f}: invalid variable name")));
    }
    Ok(n)
}

fn get(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = name_arg(it, "env.get", args)?;
    let v = match it.env.changed.get(n) {
        Some(v) => v.clone(),
        None => os_get(n),
    };
    Ok(match v {
        Some(v) => Value::str(v),
        None => args.get(1).cloned().unwrap_or(Value::Nil),
    })
}

fn set(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = name_arg(it, "env.set", args)?.to_vec();
    let v = match &args[1] {
        Value::Nil => None,
        Value::Str(s) => {
            if s.contains(&0) {
                return Err(it.err(ErrKind::Value, "env.set: a value cannot hold a NUL byte"));
            }
            Some(s.to_vec())
        }
        other => return Err(it.type_err("env.set", 1, "a string or nil", other)),
    };
    let size = |k: &[u8], v: &Option<Vec<u8>>| k.len() + v.as_ref().map_or(0, |v| v.len());
    let old = it.env.changed.get(&n).map(|o| size(&n, o));
    let new_bytes = it.env.bytes - old.unwrap_or(0) + size(&n, &v);
    let new_keys = it.env.changed.len() + usize::from(old.is_none());
    if new_keys > it.lim.n(L::Env) {
        return Err(it.limit(
            LimitKind::Env,
            format!("more than {max_env_keys} changed environment variables", max_env_keys = it.lim.n(L::Env)),
        ));
    }
    if new_bytes > it.lim.n(L::EnvBytes) {
        return Err(it.limit(
            LimitKind::Env,
            format!("environment overlay exceeds {max_env_bytes} bytes", max_env_bytes = it.lim.n(L::EnvBytes)),
        ));
    }
    it.env.bytes = new_bytes;
    it.env.changed.insert(n, v);
    Ok(Value::Nil)
}

fn all(it: &mut Host, _: &mut [Value]) -> R<Value> {
    use std::os::unix::ffi::OsStringExt;
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = std::env::vars_os()
        .map(|(k, v)| (k.into_vec(), v.into_vec()))
        .filter(|(k, _)| !it.env.changed.contains_key(k))
        .collect();
    pairs.extend(it.env.changed.iter().filter_map(|(k, v)| v.as_ref().map(|v| (k.clone(), v.clone()))));
    pairs.sort();
    it.check_map_len(pairs.len())?;
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(bytes_vec(k), Value::str(v));
    }
    it.make_map(m)
}

pub const TABLE: &[Builtin] = &[
    b("env.get", "env.get(name[, default])", 1, 2, CONST, get),
    b("env.set", "env.set(name, value)", 2, 2, Cost::bytes(1.0), set),
    // Per variable: read from the process environment, copied, sorted, made a map entry
    // (bench/work.py's env.all rows, release build, 2026-12-03: 260 to 570 ns a variable,
    // growing with the count (the sort, the map): short names, 200-byte names sharing a
    // prefix, the script's overlay; the review's 1,200 was on a loaded machine: issue 23).
    // (350 until 2026-12-07: its worst shape, the long names, 0.64 ns a unit; short
    // names 0.45, under the band.)
    b("env.all", "env.all()", 0, 0, Cost::items(280.0), all),
];
