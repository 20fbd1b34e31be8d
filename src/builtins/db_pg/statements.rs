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

/// No answer before the deadline: the connection is lost (its protocol state is
/// unknown), and the run's time limit says so.
fn past_deadline(it: &mut Host, name: &str, id: u32) -> Fail {
    lose(it, id, "no answer before the deadline");
    time_limit(it, name, "the statement")
}

/// A statement's answer (a simple query's messages or a portal's rows), read one item
/// at a time under the statement's deadline. On any failure the stream is dropped
/// before the connection is looked at or lost.
struct Answer<'a, S> {
    name: &'a str,
    id: u32,
    rt: &'a tokio::runtime::Runtime,
    until: Instant,
    stream: Option<Pin<Box<S>>>,
}

impl<'a, S, T> Answer<'a, S>
where
    S: futures_util::Stream<Item = Result<T, tokio_postgres::Error>>,
{
    fn new(name: &'a str, id: u32, rt: &'a tokio::runtime::Runtime, until: Instant, stream: S) -> Self {
        Answer { name, id, rt, until, stream: Some(Box::pin(stream)) }
    }

    /// The next item, or None at the end: the deadline loses the connection; the
    /// server's error is the statement's.
    fn next(&mut self, it: &mut Host) -> R<Option<T>> {
        let got = match &mut self.stream {
            Some(s) => run_until(self.rt, self.until, s.next()),
            None => Some(None),
        };
        match got {
            Some(None) => Ok(None),
            Some(Some(Ok(x))) => Ok(Some(x)),
            None => {
                self.stream = None;
                Err(past_deadline(it, self.name, self.id))
            }
            Some(Some(Err(e))) => {
                self.stream = None;
                Err(pg_err(it, self.name, self.id, e))
            }
        }
    }

    /// A limit in the middle of the answer: the rest is not read, so the connection is
    /// lost.
    fn stop(&mut self, it: &mut Host, e: Fail) -> Fail {
        self.stream = None;
        lose(it, self.id, "stopped in the middle of a result");
        e
    }

    /// Read the rest, charging each item by `size`, dropping it (after a catchable
    /// error, so that the connection can go on).
    fn drain(&mut self, it: &mut Host, size: impl Fn(&T) -> usize) -> R<()> {
        while let Some(x) = self.next(it)? {
            if let Err(e) = charge_row(it, size(&x)) {
                return Err(self.stop(it, e));
            }
        }
        Ok(())
    }
}

/// The SQL of a statement call (argument 1, its parameters bound from argument 2), run
/// by `f` once the connection is ready, the bytes received noted for the audit line.
fn statement<T>(
    it: &mut Host,
    name: &str,
    args: &[Value],
    id: u32,
    f: impl FnOnce(&mut Host, &tokio::runtime::Runtime, Instant, &str, &[Param]) -> R<T>,
) -> R<T> {
    let sql = it.arg_text(name, args, 1)?.to_string();
    let (sql, params) = bind(it, name, &sql, it.opt(args, 2))?;
    let (rt, until) = ready(it, name, id)?;
    let before = it.db.pg.conns[&id].io.received.load(Relaxed);
    it.audit_note(it.db.pg.conns[&id].shown.clone());
    let r = f(it, &rt, until, &sql, &params);
    if let Some(c) = it.db.pg.conns.get(&id) {
        it.audit_bytes = c.io.received.load(Relaxed) - before;
    }
    r
}

pub fn exec(it: &mut Host, args: &mut [Value], id: u32) -> R<Value> {
    const NAME: &str = "db.exec";
    let plain = it.opt(args, 2).is_none_or(|v| matches!(v, Value::Nil));
    let n = statement(it, NAME, args, id, |it, rt, until, sql, params| {
        if params.is_empty() && plain {
            exec_script(it, NAME, id, rt, until, sql)
        } else {
            exec_params(it, NAME, id, rt, until, sql, params)
        }
    })?;
    Ok(Value::Num(n as f64))
}

/// Without parameters: every statement of the SQL in order (the simple protocol);
/// rows of a statement that returns them are read, charged and dropped.
fn exec_script(it: &mut Host, name: &str, id: u32, rt: &tokio::runtime::Runtime, until: Instant, sql: &str) -> R<u64> {
    use tokio_postgres::SimpleQueryMessage as M;
    let client = it.db.pg.conns[&id].client.as_ref().expect("not lost");
    let stream = match run_until(rt, until, client.simple_query_raw(sql)) {
        None => return Err(past_deadline(it, name, id)),
        Some(Err(e)) => return Err(pg_err(it, name, id, e)),
        Some(Ok(s)) => s,
    };
    let mut answer = Answer::new(name, id, rt, until, stream);
    let mut changed = 0u64;
    let mut rows_seen = false;
    while let Some(m) = answer.next(it)? {
        match m {
            M::RowDescription(_) => rows_seen = true,
            M::Row(r) => {
                let n: usize = (0..r.len()).map(|i| r.get(i).map_or(0, str::len)).sum();
                if let Err(e) = charge_row(it, n) {
                    return Err(answer.stop(it, e));
                }
            }
            M::CommandComplete(n) => {
                if !rows_seen {
                    changed += n;
                }
                rows_seen = false;
            }
            _ => {}
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
        None => return Err(past_deadline(it, name, id)),
        Some(Err(e)) => return Err(param_err(it, name, id, e)),
        Some(Ok(s)) => s,
    };
    let mut answer = Answer::new(name, id, rt, until, stream);
    answer.drain(it, |row| row.raw_size_bytes())?;
    // As SQLite's: a statement that returns rows changed none.
    Ok(if returns_rows { 0 } else { answer.stream.as_ref().and_then(|s| s.rows_affected()).unwrap_or(0) })
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
    statement(it, NAME, args, id, |it, rt, until, sql, params| query_in(it, NAME, id, rt, until, sql, params))
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
        None => return Err(past_deadline(it, name, id)),
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
    let mut answer = Answer::new(name, id, rt, until, stream);
    let mut out = Rows::new();
    while let Some(row) = answer.next(it)? {
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
                return Err(answer.stop(it, e));
            }
            // A catchable error: the rest of the result is read (and charged) and
            // dropped, so that the connection can go on.
            return Err(answer.drain(it, |row| row.raw_size_bytes()).err().unwrap_or(e));
        }
    }
    drop(answer);
    out.into_value(it)
}

pub fn close(it: &mut Host, id: u32) -> R<Value> {
    if let Some(c) = it.db.pg.conns.remove(&id) {
        it.audit_note(c.shown.clone());
        let until = crate::meter::after(Duration::from_millis(1000));
        it.db.pg.shut(c, it.meter.deadline.map_or(until, |d| d.min(until)));
    }
    Ok(Value::Nil)
}
