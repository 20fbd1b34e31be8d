//! SQLite (`db.*`), behind `--allow-db`: the bundled SQLite through `rusqlite`.
//!
//! - Lazy: nothing SQLite-related runs until a script calls `db.open` (the state below
//!   is an empty map until then), so start-up does not pay for it.
//! - Steps: every `DB_OPS_PER_STEP` virtual-machine instructions SQLite's progress
//!   handler counts one step in a shared `Meter`; it interrupts SQLite when the steps
//!   left at the start of the call are used up, or when the `--max-time` deadline has
//!   passed. After every call into SQLite the interpreter charges what was counted
//!   through `Host::charge_steps` (the one step counter), so a runaway query stops
//!   with the `steps` limit, exactly at the budget, or the `time` limit.
//! - Refused: `ATTACH` and `DETACH` (an authorizer, and SQLITE_LIMIT_ATTACHED 0), the
//!   `load_extension()` SQL function (authorizer; extension loading is never enabled).
//!   Defensive mode is on (no writable schema, no shadow-table writes) and the schema
//!   is untrusted (functions with side effects are not run from views and triggers).
//! - Memory: SQLite's lengths are capped (SQLITE_LIMIT_LENGTH, SQL_LENGTH), its heap is
//!   capped process-wide (`PRAGMA hard_heap_limit`), and query results are built within
//!   the value limits while the rows are read (a row past the list limit, or rows past
//!   the frame-storage limit, stop the run before more is read).
//! - Locks: a call that needs a lock another connection holds waits for it (a busy
//!   handler that tries again every few ms) until the `--max-time` deadline, or for
//!   `DB_BUSY_TIMEOUT_MS` without one. A transaction that has read and then wants to
//!   write is refused at once by SQLite while another connection writes (waiting could
//!   deadlock); its `database is locked` error says to begin it with `BEGIN IMMEDIATE`.
//! - At most `databases` (the limit) databases are open at once; all are closed at the end of a
//!   run (an open transaction is rolled back by SQLite then).

use std::collections::HashMap;
use std::os::unix::ffi::OsStrExt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rusqlite::config::DbConfig;
use rusqlite::fallible_iterator::FallibleIterator;
use rusqlite::hooks::{AuthAction, AuthContext, Authorization};
use rusqlite::limits::Limit;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Batch, Connection, ErrorCode, OpenFlags, Statement};

use super::Host;
use super::{gated, Builtin, Cap, Cost, CONST};
use crate::diag::ErrKind;
use crate::error::{Fail, R};
use crate::limits::*;
use crate::value::*;

/// Why the progress handler interrupted SQLite.
const STOP_NONE: u8 = 0;
const STOP_STEPS: u8 = 1;
const STOP_TIME: u8 = 2;

/// What the authorizer refused last (for the error message).
const DENIED_NONE: u8 = 0;
const DENIED_ATTACH: u8 = 1;
const DENIED_DETACH: u8 = 2;
const DENIED_EXTENSION: u8 = 3;
const DENIED_PRAGMA: u8 = 4;

/// Pragmas that reach outside the leash (SPEC 10, round 3), refused like ATTACH: where
/// temporary files go (`temp_store_directory`, `data_store_directory`), memory-mapped I/O
/// (`mmap_size` above 0: a mapped file is resident memory no bound sees; the build also
/// caps it at 0), moving temporary storage out of memory (`temp_store` other than
/// MEMORY; the build keeps it in memory whatever the pragma says), trusting the schema,
/// the process-wide heap limits SQLite lives under, and `case_sensitive_like` (it would
/// replace the charged `like` with SQLite's own). Reading any of them is allowed.
fn pragma_refused(name: &str, value: Option<&str>) -> bool {
    let Some(v) = value.map(|v| v.trim().trim_matches(|c| c == '\'' || c == '"').to_ascii_lowercase()) else {
        return false;
    };
    match name.to_ascii_lowercase().as_str() {
        "temp_store_directory" | "data_store_directory" | "hard_heap_limit" | "soft_heap_limit" => true,
        "case_sensitive_like" => true,
        "mmap_size" => v != "0",
        "temp_store" => !(v == "2" || v == "memory"),
        "trusted_schema" => !(v == "0" || v == "off" || v == "false" || v == "no"),
        _ => false,
    }
}

/// Shared by the interpreter and the callbacks it gives SQLite (which must be `Send`
/// and `'static`, so they cannot borrow the interpreter).
#[derive(Debug)]
struct Meter {
    /// Steps counted by the progress handler during the current call into SQLite.
    used: AtomicU64,
    /// Steps left when the current call started.
    allowance: AtomicU64,
    stop: AtomicU8,
    denied: AtomicU8,
    /// The busy handler gave up waiting for a lock during the current call.
    busy_gave_up: AtomicBool,
    deadline: Option<Instant>,
    /// Work charged by SQL functions (db_sqlfn.rs) during the current call.
    fn_work: AtomicU64,
    /// Work left when the current call started.
    work_allowance: AtomicU64,
    /// Set while `db.open` runs its own setup statements (the authorizer lets them be).
    setup: AtomicBool,
    /// `leash_alloc::sqlite_allocated()` and `sqlite_page_bytes()` when the current
    /// call started.
    alloc_base: AtomicU64,
    page_base: AtomicU64,
}

impl super::db_sqlfn::Charge for Meter {
    fn charge(&self, units: u64) -> bool {
        self.fn_work.fetch_add(units, Relaxed);
        if self.work() > self.work_allowance.load(Relaxed) {
            self.stop.store(STOP_STEPS, Relaxed);
            return false;
        }
        if crate::meter::past(self.deadline) {
            self.stop.store(STOP_TIME, Relaxed);
            return false;
        }
        true
    }
}

impl Meter {
    /// Work for the bytes SQLite has allocated and the page bytes it has fetched during
    /// the current call: the big copies it makes inside one instruction (a recursive
    /// CTE's rows, index keys, sorter records) go through its allocator or its page
    /// cache (`leash_alloc` counts both), and the instructions alone do not show them.
    fn alloc_work(&self) -> u64 {
        let (alloc, pages) = self.copied();
        (alloc.saturating_mul(u64::from(WORK_DB_ALLOC_BYTE_X256)) / 256)
            .saturating_add(pages.saturating_mul(u64::from(WORK_DB_PAGE_BYTE_X256)) / 256)
    }

    /// Bytes SQLite has allocated, and bytes of the pages it has fetched, during the
    /// current call.
    fn copied(&self) -> (u64, u64) {
        (
            leash_alloc::sqlite_allocated().wrapping_sub(self.alloc_base.load(Relaxed)),
            leash_alloc::sqlite_page_bytes().wrapping_sub(self.page_base.load(Relaxed)),
        )
    }

    /// All the work of the current call so far: instructions, SQL functions, allocation.
    fn work(&self) -> u64 {
        self.used
            .load(Relaxed)
            .saturating_mul(WORK_DB_TICK)
            .saturating_add(self.fn_work.load(Relaxed))
            .saturating_add(self.alloc_work())
    }

    /// The progress handler: true interrupts SQLite.
    fn tick(&self) -> bool {
        let n = self.used.fetch_add(1, Relaxed) + 1;
        if n > self.allowance.load(Relaxed) || self.work() > self.work_allowance.load(Relaxed) {
            self.stop.store(STOP_STEPS, Relaxed);
            return true;
        }
        if let Some(d) = self.deadline {
            if n.is_multiple_of(DB_TIME_CHECK_EVERY) && crate::meter::now() >= d {
                self.stop.store(STOP_TIME, Relaxed);
                return true;
            }
        }
        false
    }

    /// The busy handler: SQLite calls it while a lock this call needs is held by another
    /// connection, `count` times before in this wait. It sleeps a little and says to try
    /// again (true), until the deadline (without one, `DB_BUSY_TIMEOUT_MS` after the wait
    /// began, kept in `until`).
    fn busy(&self, until: &mut Option<Instant>, count: i32) -> bool {
        let now = crate::meter::now();
        if count == 0 || until.is_none() {
            *until = Some(self.deadline.unwrap_or(now + Duration::from_millis(DB_BUSY_TIMEOUT_MS)));
        }
        let end = until.unwrap_or(now);
        if now >= end {
            self.busy_gave_up.store(true, Relaxed);
            return false;
        }
        std::thread::sleep(busy_sleep(count, jitter()).min(end - now));
        true
    }

    /// The authorizer, called while SQL is prepared.
    fn authorize(&self, ctx: AuthContext<'_>) -> Authorization {
        if self.setup.load(Relaxed) {
            return Authorization::Allow;
        }
        let denied = match ctx.action {
            AuthAction::Attach { .. } => DENIED_ATTACH,
            AuthAction::Detach { .. } => DENIED_DETACH,
            AuthAction::Function { function_name } if function_name.eq_ignore_ascii_case("load_extension") => {
                DENIED_EXTENSION
            }
            AuthAction::Pragma { pragma_name, pragma_value } if pragma_refused(pragma_name, pragma_value) => {
                DENIED_PRAGMA
            }
            _ => return Authorization::Allow,
        };
        self.denied.store(denied, Relaxed);
        Authorization::Deny
    }
}

/// The sleep before try `count + 1` for a lock: 1, 2, 4, 8, then `DB_BUSY_MAX_SLEEP_MS`
/// ms, less up to half of it by `jitter` (any number), so that waiters do not try in step.
fn busy_sleep(count: i32, jitter: u64) -> Duration {
    let full = (1000u64 << count.clamp(0, 4)).min(DB_BUSY_MAX_SLEEP_MS * 1000);
    Duration::from_micros(full - jitter % (full / 2 + 1))
}

/// A number that differs between processes and moments (the clock's microseconds).
fn jitter() -> u64 {
    let t = crate::meter::wall();
    u64::from(t.subsec_micros()) ^ u64::from(std::process::id()).wrapping_mul(2_654_435_761)
}

/// Open databases.
#[derive(Debug, Default)]
pub struct DbState {
    conns: HashMap<u32, Connection>,
    next_id: u32,
    /// Made by the first `db.open` (and the process-wide heap limit set then).
    meter: Option<Arc<Meter>>,
    /// PostgreSQL connections (`db_pg.rs`), numbered with the same ids.
    pub pg: super::db_pg::PgState,
}

impl DbState {
    /// Close every open database (at the end of a run).
    pub fn close_all(&mut self) {
        self.conns.clear();
        self.pg.close_all();
    }

    pub fn open_count(&self) -> usize {
        self.conns.len() + self.pg.len()
    }
}

/// A path or column name inside a message's quotes: at most `diag::QUOTE_MAX` bytes of it.
fn shown(p: &[u8]) -> String {
    crate::diag::clipped(p)
}

/// The text of a SQLite error, and whether it is SQLite running out of memory.
fn message(e: &rusqlite::Error) -> (String, bool) {
    match e {
        rusqlite::Error::SqliteFailure(f, msg) => {
            (msg.clone().unwrap_or_else(|| f.to_string()), f.code == ErrorCode::OutOfMemory)
        }
        rusqlite::Error::SqlInputError { error, msg, .. } => (msg.clone(), error.code == ErrorCode::OutOfMemory),
        other => (other.to_string(), false),
    }
}

/// A SQLite error as a `db` error (`NAME: SQLite's message`); SQLite out of memory (its
/// heap limit) is the `memory` limit instead.
fn db_err(it: &Host, name: &str, m: &Meter, e: rusqlite::Error) -> Fail {
    let (msg, oom) = message(&e);
    if oom {
        return it.limit(
            LimitKind::Memory,
            format!(
                "{name}: SQLite ran out of memory (its heap is limited to {} bytes)",
                DB_HEAP_LIMIT.min(it.max_memory())
            ),
        );
    }
    let refused = match m.denied.load(Relaxed) {
        DENIED_ATTACH => "ATTACH is refused: ",
        DENIED_DETACH => "DETACH is refused: ",
        DENIED_EXTENSION => "extension loading is refused: ",
        DENIED_PRAGMA => "this PRAGMA reaches outside the leash and is refused: ",
        _ => "",
    };
    let busy = matches!(&e, rusqlite::Error::SqliteFailure(f, _) if f.code == ErrorCode::DatabaseBusy);
    let why = if !busy {
        String::new()
    } else if m.busy_gave_up.load(Relaxed) {
        format!(" (another connection held the lock for {DB_BUSY_TIMEOUT_MS} ms)")
    } else {
        // SQLite refuses without waiting: a transaction that has read cannot wait for the
        // write lock of a connection that waits for that read to end.
        " (another connection is writing, and a transaction that has read cannot wait for it: \
         begin a transaction that reads and then writes with BEGIN IMMEDIATE)"
            .to_string()
    };
    it.err(ErrKind::Db, format!("{name}: {refused}{msg}{why}"))
}

fn limit_setup(conn: &Connection, max_string: usize) -> rusqlite::Result<()> {
    let length = (max_string + DB_LENGTH_SLACK).min(i32::MAX as usize) as i32;
    conn.set_limit(Limit::SQLITE_LIMIT_LENGTH, length)?;
    conn.set_limit(Limit::SQLITE_LIMIT_SQL_LENGTH, DB_MAX_SQL_BYTES as i32)?;
    conn.set_limit(Limit::SQLITE_LIMIT_ATTACHED, 0)?;
    // No helper threads for sorting: all of SQLite's work happens under the meter.
    conn.set_limit(Limit::SQLITE_LIMIT_WORKER_THREADS, 0)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_DEFENSIVE, true)?;
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_TRUSTED_SCHEMA, false)?;
    Ok(())
}

/// Get ready for a call into SQLite: reset the meter to the steps (and work) left.
fn begin(it: &Host) -> R<Arc<Meter>> {
    it.check_time()?;
    let m = it.db.meter.clone().expect("a database is open, so the meter exists");
    m.used.store(0, Relaxed);
    m.stop.store(STOP_NONE, Relaxed);
    m.denied.store(DENIED_NONE, Relaxed);
    m.busy_gave_up.store(false, Relaxed);
    m.fn_work.store(0, Relaxed);
    m.alloc_base.store(leash_alloc::sqlite_allocated(), Relaxed);
    m.page_base.store(leash_alloc::sqlite_page_bytes(), Relaxed);
    // Each progress-handler call is one step and WORK_DB_TICK units of work, SQL
    // functions charge their own work, and the bytes SQLite allocates and the page bytes
    // it fetches are charged by size: SQLite stops at whichever budget runs out first.
    m.allowance.store(it.steps_left(), Relaxed);
    m.work_allowance.store(it.work_left(), Relaxed);
    Ok(m)
}

/// After a call into SQLite: charge the steps and work it used, then the deadline.
fn finish(it: &mut Host, m: &Meter) -> R<()> {
    let used = m.used.load(Relaxed);
    it.charge_steps(used)?;
    it.work(m.work())?;
    if m.stop.load(Relaxed) == STOP_TIME {
        return Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached"));
    }
    it.check_time()
}

fn db_id(it: &Host, name: &str, v: &Value) -> R<u32> {
    let h = it.arg_handle(name, std::slice::from_ref(v), 0, &[HandleKind::Db], |h| {
        it.db.conns.contains_key(&h.id) || it.db.pg.has(h.id)
    })?;
    Ok(h.id)
}

/// The parameters argument.
enum Params<'a> {
    None,
    List(&'a List),
    Map(&'a Map),
}

fn sql_value<'a>(it: &Host, name: &str, which: &dyn Fn() -> String, v: &'a Value) -> R<ValueRef<'a>> {
    Ok(match v {
        Value::Nil | Value::Unset => ValueRef::Null,
        Value::Bool(b) => ValueRef::Integer(*b as i64),
        Value::Num(n) => {
            // Integral numbers within i64 are INTEGER (so `id = ?` matches an INTEGER
            // column and `?` in LIMIT works); others are REAL.
            if is_integral(*n) && *n >= -9_223_372_036_854_775_808.0 && *n < 9_223_372_036_854_775_808.0 {
                ValueRef::Integer(*n as i64)
            } else {
                ValueRef::Real(*n)
            }
        }
        // Strings are TEXT, bytes as they are (`CAST(? AS BLOB)` makes a blob).
        Value::Str(s) => ValueRef::Text(s.as_slice()),
        other => {
            return Err(it.err(
                ErrKind::Type,
                format!("{name}: {} must be nil, a bool, a number or a string, got {}", which(), other.type_name()),
            ))
        }
    })
}

/// Check the parameters argument (index `i`) and the types of its values, before
/// SQLite is touched.
fn params_of<'a>(it: &Host, name: &str, args: &'a [Value], i: usize) -> R<Params<'a>> {
    match it.opt(args, i) {
        None => Ok(Params::None),
        Some(Value::List(l)) => {
            for (k, v) in l.items().iter().enumerate() {
                sql_value(it, name, &|| format!("parameter {}", k + 1), v)?;
            }
            Ok(Params::List(l))
        }
        // A map's values are checked as they are bound (keys the SQL does not name are
        // ignored, whatever they hold).
        Some(Value::Map(m)) => Ok(Params::Map(m)),
        Some(other) => Err(it.type_err(name, i, "a list or a map", other)),
    }
}

/// Charge the bytes a value moves into or out of SQLite (bound parameters, returned
/// values) to the call's work; past the work left, the call stops (`finish` reports it).
fn charge_bytes(it: &Host, name: &str, m: &Meter, v: ValueRef<'_>) -> R<()> {
    use super::db_sqlfn::Charge;
    let n = match v {
        ValueRef::Text(b) | ValueRef::Blob(b) => b.len() as u64,
        _ => return Ok(()),
    };
    if m.charge(n * u64::from(WORK_DB_BYTE_X256) / 256) {
        Ok(())
    } else {
        Err(it.err(ErrKind::Db, format!("{name}: interrupted (a limit of the run was reached)")))
    }
}

fn bind(it: &Host, name: &str, m: &Meter, stmt: &mut Statement<'_>, p: &Params<'_>) -> R<()> {
    let count = stmt.parameter_count();
    let bind_one = |stmt: &mut Statement<'_>, i: usize, v: ValueRef<'_>| {
        charge_bytes(it, name, m, v)?;
        stmt.raw_bind_parameter(i, ToSqlOutput::Borrowed(v)).map_err(|e| db_err(it, name, m, e))
    };
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    match p {
        Params::None => {
            if count > 0 {
                return Err(it.err(
                    ErrKind::Db,
                    format!("{name}: the SQL has {count} parameter{} and no values were given", plural(count)),
                ));
            }
        }
        Params::List(l) => {
            if l.len() != count {
                return Err(it.err(
                    ErrKind::Db,
                    format!(
                        "{name}: the SQL has {count} parameter{} but {} value{} given",
                        plural(count),
                        l.len(),
                        if l.len() == 1 { " was" } else { "s were" }
                    ),
                ));
            }
            for (k, v) in l.items().iter().enumerate() {
                let v = sql_value(it, name, &|| format!("parameter {}", k + 1), v)?;
                bind_one(stmt, k + 1, v)?;
            }
        }
        Params::Map(map) => {
            for i in 1..=count {
                let pname = match stmt.parameter_name(i) {
                    Some(n) if !n.starts_with('?') => n.to_string(),
                    _ => {
                        return Err(it.err(
                            ErrKind::Db,
                            format!("{name}: parameter {i} has no name (bind `?` placeholders with a list)"),
                        ))
                    }
                };
                let Some(v) = map.get(&pname.as_bytes()[1..]) else {
                    return Err(it.err(ErrKind::Db, format!("{name}: no value for parameter {pname}")));
                };
                let v = sql_value(it, name, &|| format!("parameter {pname}"), v)?;
                bind_one(stmt, i, v)?;
            }
        }
    }
    Ok(())
}

/// Prepare `sql` as exactly one statement (None when it holds no statement).
fn prepare_one<'c>(it: &Host, name: &str, m: &Meter, conn: &'c Connection, sql: &str) -> R<Option<Statement<'c>>> {
    match conn.prepare(sql) {
        Ok(s) => Ok(Some(s)),
        Err(rusqlite::Error::Empty) => Ok(None),
        Err(rusqlite::Error::MultipleStatement) => Err(it.err(
            ErrKind::Db,
            format!("{name}: the SQL holds more than one statement (parameters bind to one statement)"),
        )),
        Err(e) => Err(db_err(it, name, m, e)),
    }
}

/// Run a prepared statement to its end, discarding rows; the rows it changed.
fn run_to_end(it: &Host, name: &str, m: &Meter, conn: &Connection, stmt: &mut Statement<'_>) -> R<u64> {
    let before = conn.total_changes();
    let mut rows = stmt.raw_query();
    while rows.next().map_err(|e| db_err(it, name, m, e))?.is_some() {}
    drop(rows);
    // `changes()` keeps the count of the last INSERT, UPDATE or DELETE; a statement that
    // changed nothing (CREATE, SELECT, ...) leaves the total alone: it changed 0 rows.
    Ok(if conn.total_changes() == before { 0 } else { conn.changes() })
}

fn exec_in(it: &Host, name: &str, m: &Meter, conn: &Connection, sql: &str, p: &Params<'_>) -> R<u64> {
    if !matches!(p, Params::None) {
        let Some(mut stmt) = prepare_one(it, name, m, conn, sql)? else { return Ok(0) };
        bind(it, name, m, &mut stmt, p)?;
        return run_to_end(it, name, m, conn, &mut stmt);
    }
    // Without parameters, a script: every statement in order.
    let mut batch = Batch::new(conn, sql);
    let mut changed = 0;
    while let Some(mut stmt) = batch.next().map_err(|e| db_err(it, name, m, e))? {
        bind(it, name, m, &mut stmt, &Params::None)?;
        changed += run_to_end(it, name, m, conn, &mut stmt)?;
    }
    Ok(changed)
}

/// A result column's value as a Leash value.
fn leash_value(it: &Host, name: &str, col: &[u8], v: ValueRef<'_>) -> R<Value> {
    const EXACT: u64 = 1 << 53;
    Ok(match v {
        ValueRef::Null => Value::Nil,
        ValueRef::Integer(i) => {
            if i.unsigned_abs() > EXACT {
                return Err(it.err(
                    ErrKind::Db,
                    format!(
                        "{name}: column \"{}\" holds the integer {i}, beyond 2^53 where numbers are exact \
                         (CAST it AS TEXT or AS REAL in the SQL)",
                        shown(col)
                    ),
                ));
            }
            Value::Num(i as f64)
        }
        ValueRef::Real(f) => {
            if !f.is_finite() {
                return Err(it.err(ErrKind::Db, format!("{name}: column \"{}\" holds a non-finite real", shown(col))));
            }
            Value::Num(f)
        }
        ValueRef::Text(b) | ValueRef::Blob(b) => {
            it.check_str_len(b.len())?;
            Value::str_from(b)
        }
    })
}

/// Rows read so far, with their accounted storage, checked as each row arrives (SQLite's
/// results and PostgreSQL's, `db_pg/statements.rs`).
pub(super) struct Rows {
    rows: Vec<Value>,
    acct: usize,
}

impl Rows {
    pub(super) fn new() -> Self {
        Rows { rows: Vec::new(), acct: ACCT_LIST_HEADER }
    }

    /// Room for one more row (checked before the row is built).
    pub(super) fn room(&self, it: &Host, name: &str) -> R<()> {
        if self.rows.len() >= it.lim.n(L::List) {
            return Err(it.limit(
                LimitKind::List,
                format!("{name}: a result of more than {max_list_items} rows", max_list_items = it.lim.n(L::List)),
            ));
        }
        Ok(())
    }

    pub(super) fn push(&mut self, it: &Host, name: &str, row: Value) -> R<()> {
        self.room(it, name)?;
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

    pub(super) fn into_value(mut self, it: &Host) -> R<Value> {
        self.rows.shrink_to_fit();
        it.make_list(self.rows)
    }
}

/// rusqlite panics on a column name that is not UTF-8 (possible in a crafted database
/// file) and on a value SQLite could not produce (out of memory); these become errors.
fn guarded<T>(it: &Host, name: &str, f: impl FnOnce() -> T) -> R<T> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| {
        it.err(ErrKind::Db, format!("{name}: SQLite gave a column name that is not UTF-8, or ran out of memory"))
    })
}

fn query_in(it: &Host, name: &str, m: &Meter, conn: &Connection, sql: &str, p: &Params<'_>) -> R<Value> {
    let Some(mut stmt) = prepare_one(it, name, m, conn, sql)? else { return it.make_list(vec![]) };
    bind(it, name, m, &mut stmt, p)?;
    let names: Vec<Bytes> = guarded(it, name, || stmt.column_names().map(|n| bytes(n.as_bytes())).collect())?;
    let mut out = Rows::new();
    let mut rows = stmt.raw_query();
    while let Some(row) = rows.next().map_err(|e| db_err(it, name, m, e))? {
        out.room(it, name)?;
        let mut map = Map::with_capacity(names.len());
        for (i, col) in names.iter().enumerate() {
            let v = guarded(it, name, || row.get_ref(i))?.map_err(|e| db_err(it, name, m, e))?;
            charge_bytes(it, name, m, v)?;
            let v = leash_value(it, name, col, v)?;
            map.insert(col.clone(), v);
        }
        out.push(it, name, it.make_map(map)?)?;
    }
    drop(rows);
    out.into_value(it)
}

/// A database path under `--allow-db=PATH,...`: the directory that holds it is opened
/// beneath the grant (no symlink or `..` out), the file and its journal, WAL and shm
/// names must not be symlinks, and SQLite gets the directory's real path (read back from
/// the opened descriptor) joined with the name. None when the flag is unscoped or the
/// database is `:memory:`. SQLite opens the journal files by that path itself: a third
/// party that swaps a directory on that path between this check and SQLite's open is
/// not covered (the script itself cannot: it does one thing at a time).
fn scoped_path(it: &mut Host, p: &[u8]) -> R<Option<Vec<u8>>> {
    const NAME: &str = "db.open";
    if p == b":memory:" {
        return Ok(None);
    }
    let gate = it.gate.clone();
    let refuse = |it: &Host, m: String| it.err(ErrKind::Permission, format!("{NAME}: {m}"));
    let io = |it: &Host, e: std::io::Error| {
        it.err(ErrKind::Db, format!("{NAME}: cannot open \"{}\": {}", shown(p), crate::fileio::io_reason(&e)))
    };
    let loc = gate.locate(crate::gate::Need::Db, p).map_err(|e| match e {
        crate::gate::GateErr::Refused(m) => refuse(it, m),
        crate::gate::GateErr::Io(e) => io(it, e),
    })?;
    it.audit_note(loc.shown());
    if matches!(loc, crate::gate::Loc::Free(_)) {
        return Ok(None);
    }
    let (dir, name) = gate.parent(&loc).map_err(|e| match e {
        crate::gate::GateErr::Refused(m) => refuse(it, m),
        crate::gate::GateErr::Io(e) => io(it, e),
    })?;
    for suffix in ["", "-journal", "-wal", "-shm"] {
        let mut n = name.clone();
        n.push(suffix);
        if let Ok(st) = rustix::fs::statat(&dir, &n, rustix::fs::AtFlags::SYMLINK_NOFOLLOW) {
            if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
                return Err(refuse(
                    it,
                    format!("\"{}{suffix}\" is a symbolic link (refused under --allow-db=)", loc.shown()),
                ));
            }
        }
    }
    use std::os::fd::AsRawFd;
    let real = std::fs::read_link(format!("/proc/self/fd/{}", dir.as_raw_fd())).map_err(|e| io(it, e))?;
    let mut out = real.into_os_string().into_encoded_bytes();
    out.push(b'/');
    out.extend_from_slice(name.as_encoded_bytes());
    Ok(Some(out))
}

fn open(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "db.open";
    let p = it.arg_str(NAME, args, 0)?.clone();
    if it.db.open_count() >= it.lim.n(L::Databases) {
        return Err(it.limit(
            LimitKind::Databases,
            format!("more than {max_db_open} open databases", max_db_open = it.lim.n(L::Databases)),
        ));
    }
    if p.contains(&0) {
        return Err(it.err(ErrKind::Value, format!("{NAME}: argument 1 contains a NUL byte")));
    }
    if super::db_pg::is_url(&p) {
        let c = super::db_pg::open(it, &p)?;
        it.db.next_id += 1;
        let id = it.db.next_id;
        it.db.pg.insert(id, c);
        return Ok(Value::Handle(Handle { kind: HandleKind::Db, id }));
    }
    it.check_time()?;
    let first = it.db.meter.is_none();
    let deadline = it.meter.deadline;
    let m = it
        .db
        .meter
        .get_or_insert_with(|| {
            Arc::new(Meter {
                used: AtomicU64::new(0),
                allowance: AtomicU64::new(0),
                stop: AtomicU8::new(STOP_NONE),
                denied: AtomicU8::new(DENIED_NONE),
                busy_gave_up: AtomicBool::new(false),
                deadline,
                fn_work: AtomicU64::new(0),
                work_allowance: AtomicU64::new(0),
                setup: AtomicBool::new(false),
                alloc_base: AtomicU64::new(0),
                page_base: AtomicU64::new(0),
            })
        })
        .clone();
    let fail = |it: &Host, e: rusqlite::Error| {
        let (msg, oom) = message(&e);
        if oom {
            return db_err(it, NAME, &m, e);
        }
        it.err(ErrKind::Db, format!("{NAME}: cannot open \"{}\": {msg}", shown(&p)))
    };
    // A path is a path, never a URI: `file:x.db?mode=ro` names a file called that. (The
    // bundled SQLite reads names beginning `file:` as URIs whatever the open flags say,
    // so such a relative name is opened as `./file:...`.)
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let mut path = Vec::with_capacity(p.len() + 2);
    match scoped_path(it, &p)? {
        Some(real) => {
            // Beneath a `--allow-db=` grant: the real path of a directory opened beneath
            // the grant, and SQLite told not to follow a symlink at the last name.
            flags |= OpenFlags::SQLITE_OPEN_NOFOLLOW;
            path.extend_from_slice(&real);
        }
        None => {
            if p.len() >= 5 && p[..5].eq_ignore_ascii_case(b"file:") {
                path.extend_from_slice(b"./");
            }
            path.extend_from_slice(&p);
        }
    }
    // Before SQLite initialises (this is the first thing in the process to touch it):
    // from now on the bytes SQLite allocates and the pages it fetches are counted, and
    // charged by `Meter::work`.
    leash_alloc::count_sqlite_allocations();
    let mut conn =
        Connection::open_with_flags(Path::new(std::ffi::OsStr::from_bytes(&path)), flags).map_err(|e| fail(it, e))?;
    limit_setup(&conn, it.lim.n(L::String)).map_err(|e| fail(it, e))?;
    // SQL functions charged by their size and stopped at the budgets and the deadline.
    let length = (it.lim.n(L::String) + DB_LENGTH_SLACK).min(i32::MAX as usize);
    super::db_sqlfn::register(&conn, m.clone(), length).map_err(|e| fail(it, e))?;
    let (pm, am, bm) = (m.clone(), m.clone(), m.clone());
    conn.progress_handler(DB_OPS_PER_STEP, Some(move || pm.tick())).map_err(|e| fail(it, e))?;
    conn.authorizer(Some(move |ctx: AuthContext<'_>| am.authorize(ctx))).map_err(|e| fail(it, e))?;
    let mut until = None;
    conn.busy_handler(Some(move |count| bm.busy(&mut until, count))).map_err(|e| fail(it, e))?;
    begin(it)?;
    m.setup.store(true, Relaxed);
    let r = (|| {
        if first {
            // Process-wide; SQL can only lower it afterwards.
            // Never above --max-memory: SQLite's heap (its temporary storage included,
            // which the build keeps in memory) stays under the run's memory bound.
            let heap = DB_HEAP_LIMIT.min(it.max_memory());
            conn.query_row(&format!("PRAGMA hard_heap_limit = {heap}"), [], |_| Ok(()))?;
        }
        // Read the header now, so that a file that is not a database fails here.
        conn.query_row("PRAGMA schema_version", [], |_| Ok(()))
    })();
    m.setup.store(false, Relaxed);
    finish(it, &m)?;
    r.map_err(|e| fail(it, e))?;
    it.db.next_id += 1;
    let id = it.db.next_id;
    it.db.conns.insert(id, conn);
    Ok(Value::Handle(Handle { kind: HandleKind::Db, id }))
}

fn exec(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "db.exec";
    let id = db_id(it, NAME, &args[0])?;
    if it.db.pg.has(id) {
        return super::db_pg::exec(it, args, id);
    }
    let sql = it.arg_text(NAME, args, 1)?;
    let p = params_of(it, NAME, args, 2)?;
    let conn = &it.db.conns[&id];
    let m = begin(it)?;
    let r = exec_in(it, NAME, &m, conn, sql, &p);
    finish(it, &m)?;
    Ok(Value::Num(r? as f64))
}

fn query(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "db.query";
    let id = db_id(it, NAME, &args[0])?;
    if it.db.pg.has(id) {
        return super::db_pg::query(it, args, id);
    }
    let sql = it.arg_text(NAME, args, 1)?;
    let p = params_of(it, NAME, args, 2)?;
    let conn = &it.db.conns[&id];
    let m = begin(it)?;
    let r = query_in(it, NAME, &m, conn, sql, &p);
    finish(it, &m)?;
    r
}

fn close(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "db.close";
    let id = db_id(it, NAME, &args[0])?;
    if it.db.pg.has(id) {
        return super::db_pg::close(it, id);
    }
    let conn = it.db.conns.remove(&id).expect("checked handle");
    if let Err((_, e)) = conn.close() {
        let (msg, _) = message(&e);
        return Err(it.err(ErrKind::Db, format!("{NAME}: {msg}")));
    }
    Ok(Value::Nil)
}

const D: Cap = Cap::Db;

pub const TABLE: &[Builtin] = &[
    gated("db.open", "db.open(path or url)", 1, 1, D, CONST, open),
    gated("db.exec", "db.exec(db, sql[, params])", 2, 3, D, Cost::io(1.0), exec),
    gated("db.query", "db.query(db, sql[, params])", 2, 3, D, Cost::items(2.0), query),
    gated("db.close", "db.close(db)", 1, 1, D, CONST, close),
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtins::host::RunConfig;
    use crate::error::Unwind;

    fn limit_kind(f: &Fail) -> LimitKind {
        match &**f {
            Unwind::Limit { kind, .. } => *kind,
            other => panic!("not a limit: {other:?}"),
        }
    }

    /// Rows are maps, whose accounted size reaches the frame limit first in any real
    /// query; the row-count check (the list limit) is tested here on bare values.
    #[test]
    fn the_row_count_is_checked_before_each_row() {
        let it = Host::new(&RunConfig::default());
        let mut rows = Rows::new();
        for _ in 0..it.lim.n(L::List) {
            rows.push(&it, "db.query", Value::Nil).unwrap();
        }
        assert_eq!(limit_kind(&rows.room(&it, "db.query").unwrap_err()), LimitKind::List);
        assert_eq!(limit_kind(&rows.push(&it, "db.query", Value::Nil).unwrap_err()), LimitKind::List);
        let v = rows.into_value(&it).unwrap();
        assert!(matches!(&v, Value::List(l) if l.len() == it.lim.n(L::List)));
    }

    #[test]
    fn the_meter_interrupts_past_the_allowance_and_the_deadline() {
        let m = Meter {
            used: AtomicU64::new(0),
            allowance: AtomicU64::new(3),
            stop: AtomicU8::new(STOP_NONE),
            denied: AtomicU8::new(DENIED_NONE),
            busy_gave_up: AtomicBool::new(false),
            deadline: None,
            fn_work: AtomicU64::new(0),
            work_allowance: AtomicU64::new(u64::MAX),
            setup: AtomicBool::new(false),
            alloc_base: AtomicU64::new(0),
            page_base: AtomicU64::new(0),
        };
        assert!(!m.tick() && !m.tick() && !m.tick());
        assert!(m.tick());
        assert_eq!(m.stop.load(Relaxed), STOP_STEPS);
        let m = Meter { deadline: Some(crate::meter::now()), allowance: AtomicU64::new(u64::MAX), ..m };
        m.used.store(0, Relaxed);
        m.stop.store(STOP_NONE, Relaxed);
        let ticks = (0..DB_TIME_CHECK_EVERY).filter(|_| m.tick()).count();
        assert_eq!((ticks, m.stop.load(Relaxed)), (1, STOP_TIME));
    }

    #[test]
    fn busy_sleeps_are_short_and_spread() {
        let ms = |count, jitter| busy_sleep(count, jitter).as_micros() as u64;
        assert_eq!([0, 1, 2, 3, 4, 9].map(|c| ms(c, 0)), [1000, 2000, 4000, 8000, 10_000, 10_000]);
        assert!((0..10_000).all(|j| (5000..=10_000).contains(&ms(7, j))));
        assert!((0..10_000).all(|j| (500..=1000).contains(&ms(0, j))));
        assert_ne!(ms(4, 1), ms(4, 2));
    }

    #[test]
    fn the_busy_handler_waits_until_the_deadline_and_no_longer() {
        let m = Meter {
            used: AtomicU64::new(0),
            allowance: AtomicU64::new(0),
            stop: AtomicU8::new(STOP_NONE),
            denied: AtomicU8::new(DENIED_NONE),
            busy_gave_up: AtomicBool::new(false),
            deadline: Some(crate::meter::after(Duration::from_millis(30))),
            fn_work: AtomicU64::new(0),
            work_allowance: AtomicU64::new(u64::MAX),
            setup: AtomicBool::new(false),
            alloc_base: AtomicU64::new(0),
            page_base: AtomicU64::new(0),
        };
        let (start, mut until, mut count) = (crate::meter::now(), None, 0);
        while m.busy(&mut until, count) {
            count += 1;
        }
        let waited = crate::meter::since(start);
        assert!(waited >= Duration::from_millis(30) && waited < Duration::from_millis(500), "{waited:?}");
        assert!(count >= 4 && m.busy_gave_up.load(Relaxed), "{count}");
        assert_eq!(until, m.deadline);
        // Without a deadline each wait has its own DB_BUSY_TIMEOUT_MS.
        let m = Meter { deadline: None, ..m };
        let mut until = None;
        assert!(m.busy(&mut until, 0));
        let end = until.expect("set by the first call");
        let want = crate::meter::after(Duration::from_millis(DB_BUSY_TIMEOUT_MS));
        assert!(end <= want && end + Duration::from_millis(200) > want);
    }
}
