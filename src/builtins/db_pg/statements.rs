//! `db.exec`, `db.query` and `db.close` on a PostgreSQL connection: each statement under
//! the run's deadline (the server's `statement_timeout` and the client's own), its rows
//! read one at a time from the portal and charged as they arrive.

use std::pin::Pin;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tokio_postgres::types::Type;

use super::super::db::Rows;
use super::super::Host;
use super::values::{bind, decode, native, text_wrapped, Param, Raw};
use super::{lose, pg_err, run_until, statement_ms, time_limit, PG_TIMEOUT_REFRESH_MS};
use crate::diag::ErrKind;
use crate::error::{Fail, R};
use crate::value::*;

/// The client-side timeout waits this much longer than the server's, so that the
/// server's own cancel (a clean error, the connection kept) normally comes first.
const PG_CLIENT_GRACE_MS: u64 = 250;
/// Work units charged per row received, and per byte of it.
const WORK_PG_ROW: u64 = 300;
const WORK_PG_BYTE: u64 = 1;

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
    let mut out = Rows::new();
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
    out.into_value(it)
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
