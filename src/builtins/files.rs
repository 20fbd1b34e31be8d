//! Files and directories (`file.*`, `dir.*`), behind `--allow-files`.
//!
//! Safety rules (SPEC 9, issue 3):
//! - only regular files are read or written: every open is non-blocking (a FIFO never
//!   hangs the open) and the opened descriptor is checked with fstat before any byte
//!   moves; a directory, device or FIFO is an `io` error;
//! - `file.copy` and `file.rename` refuse a symlink source (O_NOFOLLOW / lstat) and
//!   refuse an existing destination atomically (O_EXCL / RENAME_NOREPLACE);
//! - copies move in bounded chunks; every byte written is charged to the file-write
//!   budget before it is written, so nothing past the budget reaches the disk;
//! - streaming readers are bounded per line and per run, and at most 32 are open.

use std::collections::HashMap;
use std::ffi::OsString;
use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};

use super::Host;
use super::{gated, Builtin, Cap, Cost, CONST};
use crate::budget::NextLine;
use crate::diag::ErrKind;
use crate::error::{Fail, R};
use crate::fileio::io_reason;
use crate::gate::{GateErr, Need};
use crate::limits::*;
use crate::value::*;

/// An open streaming reader.
#[derive(Debug)]
pub struct Reader {
    /// None: a reader over stdin (`csv.open("-")`), read as `stdin.read_line` reads.
    file: Option<File>,
    /// Lines read so far (`json.next` names a bad line by its number).
    pub lines: u64,
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    pub kind: HandleKind,
    /// For CSV readers: the parsing state.
    csv: Option<Box<super::csv::CsvStream>>,
}

/// Open streaming readers (file and CSV readers share the slots and the read budget).
#[derive(Debug, Default)]
pub struct FileState {
    readers: HashMap<u32, Reader>,
    next_id: u32,
}

impl FileState {
    /// Release every open reader (at the end of a run).
    pub fn close_all(&mut self) {
        self.readers.clear();
    }

    pub fn open_count(&self) -> usize {
        self.readers.len()
    }
}

fn shown(p: &[u8]) -> String {
    String::from_utf8_lossy(p).into_owned()
}

fn io_err(it: &Host, name: &str, what: &str, p: &[u8], e: &std::io::Error) -> Fail {
    it.err(ErrKind::Io, format!("{name}: cannot {what} \"{}\": {}", shown(p), io_reason(e)))
}

fn rx(e: rustix::io::Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

fn not_regular(meta: &std::fs::Metadata) -> Option<&'static str> {
    let ft = meta.file_type();
    if ft.is_file() {
        None
    } else if ft.is_dir() {
        Some("is a directory")
    } else {
        Some("not a regular file")
    }
}

/// Open `p` for `need` through the gate (beneath its grant when scoped): the
/// descriptor, never a path, is what the builtin works on. A refusal is a `permission`
/// error naming the flag and the resolved target.
fn gate_open(it: &mut Host, name: &str, what: &str, need: Need, p: &[u8], flags: OFlags, mode: Mode) -> R<OwnedFd> {
    let gate = it.gate.clone();
    let loc = locate(it, &gate, name, what, need, p)?;
    it.audit_note(loc.shown());
    gate.open(&loc, flags, mode).map_err(|e| gate_fail(it, name, what, p, e))
}

/// The directory holding `p`'s last name (opened through the gate) and that name.
fn gate_parent(it: &mut Host, name: &str, what: &str, need: Need, p: &[u8]) -> R<(OwnedFd, OsString)> {
    let gate = it.gate.clone();
    let loc = locate(it, &gate, name, what, need, p)?;
    it.audit_note(loc.shown());
    gate.parent(&loc).map_err(|e| gate_fail(it, name, what, p, e))
}

/// Locate `p` for `need`; a refused path is still noted for the audit line.
fn locate<'g>(
    it: &mut Host,
    gate: &'g crate::gate::Gate,
    name: &str,
    what: &str,
    need: Need,
    p: &[u8],
) -> R<crate::gate::Loc<'g>> {
    gate.locate(need, p).map_err(|e| {
        it.audit_note(gate.shown_abs(p));
        gate_fail(it, name, what, p, e)
    })
}

fn gate_fail(it: &Host, name: &str, what: &str, p: &[u8], e: GateErr) -> Fail {
    match e {
        GateErr::Refused(m) => it.err(ErrKind::Permission, format!("{name}: {m}")),
        GateErr::Io(e) => io_err(it, name, what, p, &e),
    }
}

fn file_type(st: &rustix::fs::Stat) -> FileType {
    FileType::from_raw_mode(st.st_mode)
}

/// Refuse anything but a regular file (the descriptor is checked before any byte moves).
fn regular(fd: OwnedFd) -> std::io::Result<File> {
    let f = File::from(fd);
    if let Some(why) = not_regular(&f.metadata()?) {
        return Err(std::io::Error::other(why));
    }
    Ok(f)
}

/// Open a path for reading, refusing anything but a regular file without blocking.
fn open_read(it: &mut Host, name: &str, what: &str, p: &[u8], nofollow: bool) -> R<File> {
    let mut flags = OFlags::RDONLY | OFlags::NONBLOCK;
    if nofollow {
        flags |= OFlags::NOFOLLOW;
    }
    let fd = gate_open(it, name, what, Need::Read, p, flags, Mode::empty())?;
    regular(fd).map_err(|e| io_err(it, name, what, p, &e))
}

fn read(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("file.read", args, 0)?.clone();
    let mut f = open_read(it, "file.read", "read", &p, false)?;
    // Reserve the file's size up front (plus one byte to see the end), so that a file at
    // the string limit is not held in a buffer doubled past it.
    let size = f.metadata().map(|m| m.len()).unwrap_or(0).min(it.lim.n(L::String) as u64) as usize;
    it.room(size + 1)?;
    let mut buf = Vec::with_capacity(size + 1);
    // (A file whose size is not known, a pipe, or that grows while it is read, grows
    // the buffer: each growth found room for first.)
    if let Err(e) = it.read_within(&mut f, it.lim.n(L::String) as u64 + 1, &mut buf)? {
        return Err(io_err(it, "file.read", "read", &p, &e));
    }
    if buf.len() <= it.lim.n(L::String) {
        buf.shrink_to_fit();
    }
    it.audit_bytes = buf.len() as u64;
    it.make_str(buf)
}

/// Charge `n` bytes to the file-write budget (nothing is written when it fails).
fn charge_write(it: &mut Host, n: usize) -> R<()> {
    it.budgets.file_writes.charge(n as u64).map_err(|e| it.budget_fail(e))
}

/// A write of `len` bytes to `p` begun: the value limit and the run's budget checked
/// before anything is opened, the file opened, the write charged (`file.write`,
/// `file.append` and the streamed writers alike).
fn begin_write(it: &mut Host, name: &str, p: &[u8], len: usize, truncate: bool) -> R<File> {
    if len > it.lim.n(L::FileWritesValue) {
        return Err(it.limit(
            LimitKind::FileWrites,
            format!(
                "{name}: a value of more than {max_file_write_value} bytes",
                max_file_write_value = it.lim.n(L::FileWritesValue)
            ),
        ));
    }
    if !it.budgets.file_writes.fits(len as u64) {
        return Err(it.limit(
            LimitKind::FileWrites,
            format!(
                "bytes written to files exceed {max_file_write_bytes} per run",
                max_file_write_bytes = it.lim.get(L::FileWrites)
            ),
        ));
    }
    let f = open_write(it, name, p, truncate)?;
    charge_write(it, len)?;
    Ok(f)
}

fn write_common(it: &mut Host, args: &mut [Value], name: &str, truncate: bool) -> R<Value> {
    let p = it.arg_str(name, args, 0)?.clone();
    let data = it.arg_str(name, args, 1)?.clone();
    let mut f = begin_write(it, name, &p, data.len(), truncate)?;
    f.write_all(&data).map_err(|e| io_err(it, name, "write", &p, &e))?;
    it.audit_bytes = data.len() as u64;
    Ok(Value::Nil)
}

/// How a chunked writer's `fill` ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Filled {
    Done,
    /// The function it was given refused a chunk.
    Refused,
    /// The run's deadline passed.
    Time,
}

/// Open `p` for writing as `file.write` (`truncate`) or `file.append` do: a regular file
/// within the grant, created if missing.
fn open_write(it: &mut Host, name: &str, p: &[u8], truncate: bool) -> R<File> {
    // Never O_TRUNC at the open: the descriptor is checked first (a regular file, not
    // the audit log), then truncated.
    let extra = if truncate { OFlags::empty() } else { OFlags::APPEND };
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CREATE | extra;
    let fd = gate_open(it, name, "write", Need::Write, p, flags, Mode::from_raw_mode(0o666))?;
    let f = regular(fd).map_err(|e| io_err(it, name, "write", p, &e))?;
    if truncate {
        f.set_len(0).map_err(|e| io_err(it, name, "write", p, &e))?;
    }
    Ok(f)
}

/// Write a text of `len` bytes that `fill` produces in chunks to the file at `p` as
/// `file.write(p, text)` would (`json.write`): the same checks, in the same order (the
/// value limit, the run's budget, the open), the same charge, but the text is never
/// held whole. `fill` hands each chunk to the function it is given.
pub fn write_streamed(
    it: &mut Host,
    name: &str,
    p: &[u8],
    len: usize,
    fill: &mut dyn FnMut(&mut dyn FnMut(&[u8]) -> Result<(), ()>) -> Filled,
) -> R<()> {
    let mut f = begin_write(it, name, p, len, true)?;
    let mut failed = None;
    let mut written = 0usize;
    let filled = fill(&mut |chunk: &[u8]| {
        // Never past the length charged.
        if written + chunk.len() > len {
            return Err(());
        }
        match f.write_all(chunk) {
            Ok(()) => {
                written += chunk.len();
                Ok(())
            }
            Err(e) => {
                failed = Some(e);
                Err(())
            }
        }
    });
    if let Some(e) = failed {
        return Err(io_err(it, name, "write", p, &e));
    }
    if filled == Filled::Time {
        return Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached"));
    }
    if filled != Filled::Done || written != len {
        return Err(it.err(ErrKind::Io, format!("{name}: the text changed while it was written")));
    }
    it.audit_bytes = len as u64;
    Ok(())
}

fn write(it: &mut Host, args: &mut [Value]) -> R<Value> {
    write_common(it, args, "file.write", true)
}

fn append(it: &mut Host, args: &mut [Value]) -> R<Value> {
    write_common(it, args, "file.append", false)
}

fn exists(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("file.exists", args, 0)?.clone();
    let gate = it.gate.clone();
    let loc = locate(it, &gate, "file.exists", "stat", Need::Read, &p)?;
    it.audit_note(loc.shown());
    match gate.open(&loc, OFlags::PATH, Mode::empty()) {
        Ok(_) => Ok(Value::Bool(true)),
        Err(GateErr::Io(_)) => Ok(Value::Bool(false)),
        Err(e) => Err(gate_fail(it, "file.exists", "stat", &p, e)),
    }
}

fn remove(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("file.remove", args, 0)?.clone();
    let (dir, name) = gate_parent(it, "file.remove", "remove", Need::Write, &p)?;
    if let Ok(st) = rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        if file_type(&st) == FileType::Directory {
            return Err(it.err(ErrKind::Io, format!("file.remove: cannot remove \"{}\": is a directory", shown(&p))));
        }
    }
    rustix::fs::unlinkat(&dir, &name, AtFlags::empty()).map_err(|e| io_err(it, "file.remove", "remove", &p, &rx(e)))?;
    Ok(Value::Nil)
}

fn copy(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let src = it.arg_str("file.copy", args, 0)?.clone();
    let dst = it.arg_str("file.copy", args, 1)?.clone();
    let gate = it.gate.clone();
    let loc = locate(it, &gate, "file.copy", "read", Need::Read, &src)?;
    let src_shown = loc.shown();
    it.audit_note(src_shown.clone());
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW;
    let fd = match gate.open(&loc, flags, Mode::empty()) {
        Err(GateErr::Io(e)) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
            // A link: one that leads out of the scope is a refusal, one inside an io error.
            if let Err(GateErr::Refused(m)) = gate.open(&loc, OFlags::PATH, Mode::empty()) {
                return Err(it.err(ErrKind::Permission, format!("file.copy: {m}")));
            }
            return Err(it.err(ErrKind::Io, format!("file.copy: source \"{}\" is a symbolic link", shown(&src))));
        }
        other => other.map_err(|e| gate_fail(it, "file.copy", "read", &src, e))?,
    };
    let mut from = regular(fd).map_err(|e| io_err(it, "file.copy", "read", &src, &e))?;
    let size = from.metadata().map(|m| m.len()).unwrap_or(0);
    if !it.budgets.file_writes.fits(size) {
        return Err(it.limit(
            LimitKind::FileWrites,
            format!(
                "bytes written to files exceed {max_file_write_bytes} per run",
                max_file_write_bytes = it.lim.get(L::FileWrites)
            ),
        ));
    }
    // The destination: one new name in a directory opened beneath its grant (O_EXCL:
    // never an existing file, never through a symlink).
    let (dir, name) = gate_parent(it, "file.copy", "create", Need::Write, &dst)?;
    it.audit_note(format!("{src_shown} -> {}", it.audit_target.clone().unwrap_or_default()));
    let flags = OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    let to = rustix::fs::openat(&dir, &name, flags, Mode::from_raw_mode(0o666))
        .map_err(|e| io_err(it, "file.copy", "create", &dst, &rx(e)))?;
    let mut to = regular(to).map_err(|e| io_err(it, "file.copy", "create", &dst, &e))?;
    let r = copy_chunks(it, &mut from, &mut to, &src, &dst);
    if r.is_err() {
        drop(to);
        let _ = rustix::fs::unlinkat(&dir, &name, AtFlags::empty());
    }
    r.map(|_| Value::Nil)
}

/// file.copy: the bytes read and written, charged chunk by chunk.
const COPY: Cost = Cost::custom(0.25, 0.0);

fn copy_chunks(it: &mut Host, from: &mut File, to: &mut File, src: &[u8], dst: &[u8]) -> R<()> {
    let mut chunk = vec![0u8; COPY_CHUNK];
    loop {
        let n = match from.read(&mut chunk) {
            Ok(0) => return Ok(()),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(io_err(it, "file.copy", "read", src, &e)),
        };
        charge_write(it, n)?;
        it.work(COPY.units(2 * n as u64, 0))?;
        to.write_all(&chunk[..n]).map_err(|e| io_err(it, "file.copy", "write", dst, &e))?;
        it.audit_bytes += n as u64;
        it.check_time()?;
    }
}

fn rename(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let src = it.arg_str("file.rename", args, 0)?.clone();
    let dst = it.arg_str("file.rename", args, 1)?.clone();
    // Both ends are names in directories opened beneath their grants; the rename is
    // done on those descriptors (renameat), so neither end can be redirected.
    let (sdir, sname) = gate_parent(it, "file.rename", "rename", Need::Write, &src)?;
    let src_shown = it.audit_target.clone().unwrap_or_default();
    let (ddir, dname) = gate_parent(it, "file.rename", "rename", Need::Write, &dst)?;
    it.audit_note(format!("{src_shown} -> {}", it.audit_target.clone().unwrap_or_default()));
    let st = rustix::fs::statat(&sdir, &sname, AtFlags::SYMLINK_NOFOLLOW)
        .map_err(|e| io_err(it, "file.rename", "rename", &src, &rx(e)))?;
    if file_type(&st) == FileType::Symlink {
        return Err(it.err(ErrKind::Io, format!("file.rename: source \"{}\" is a symbolic link", shown(&src))));
    }
    rustix::fs::renameat_with(&sdir, &sname, &ddir, &dname, rustix::fs::RenameFlags::NOREPLACE)
        .map_err(|e| io_err(it, "file.rename", "rename", &src, &rx(e)))?;
    // The source was checked before the rename; if it was swapped for a link in
    // between, put it back and refuse.
    let moved = rustix::fs::statat(&ddir, &dname, AtFlags::SYMLINK_NOFOLLOW);
    if moved.map(|m| file_type(&m) == FileType::Symlink).unwrap_or(false) {
        let _ = rustix::fs::renameat_with(&ddir, &dname, &sdir, &sname, rustix::fs::RenameFlags::NOREPLACE);
        return Err(it.err(ErrKind::Io, format!("file.rename: source \"{}\" is a symbolic link", shown(&src))));
    }
    Ok(Value::Nil)
}

fn size(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("file.size", args, 0)?.clone();
    let fd = gate_open(it, "file.size", "stat", Need::Read, &p, OFlags::PATH, Mode::empty())?;
    let st = rustix::fs::fstat(&fd).map_err(|e| io_err(it, "file.size", "stat", &p, &rx(e)))?;
    if file_type(&st) == FileType::Directory {
        return Err(it.err(ErrKind::Io, format!("file.size: \"{}\" is a directory", shown(&p))));
    }
    Ok(Value::Num(st.st_size as f64))
}

fn stat(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("file.stat", args, 0)?.clone();
    // O_PATH | O_NOFOLLOW: a symlink is described, not followed (as lstat).
    let fd = gate_open(it, "file.stat", "stat", Need::Read, &p, OFlags::PATH | OFlags::NOFOLLOW, Mode::empty())?;
    let m = rustix::fs::fstat(&fd).map_err(|e| io_err(it, "file.stat", "stat", &p, &rx(e)))?;
    let ft = file_type(&m);
    let modified =
        if m.st_mtime >= 0 { Value::Num(m.st_mtime as f64 + m.st_mtime_nsec as f64 / 1e9) } else { Value::Nil };
    let mut out = Map::new();
    let mut put = |k: &str, v: Value| {
        out.insert(bytes(k.as_bytes()), v);
    };
    put("size", Value::Num(m.st_size as f64));
    put("is_file", Value::Bool(ft == FileType::RegularFile));
    put("is_dir", Value::Bool(ft == FileType::Directory));
    put("is_symlink", Value::Bool(ft == FileType::Symlink));
    put("modified", modified);
    it.make_map(out)
}

/// Open a reader over a regular file, within the reader slots.
pub fn open_reader(it: &mut Host, name: &str, p: &[u8], kind: HandleKind) -> R<Handle> {
    if it.files.readers.len() >= it.lim.n(L::Readers) {
        return Err(it.limit(
            LimitKind::Readers,
            format!("more than {max_readers} open readers", max_readers = it.lim.n(L::Readers)),
        ));
    }
    // "-": standard input, within the stdin budgets (a second reader over it shares it).
    let f = if p == b"-" { None } else { Some(open_read(it, name, "open", p, false)?) };
    it.files.next_id += 1;
    let id = it.files.next_id;
    it.files.readers.insert(id, Reader { file: f, lines: 0, buf: Vec::new(), pos: 0, eof: false, kind, csv: None });
    Ok(Handle { kind, id })
}

/// Keep the CSV state of reader `id`.
pub fn set_csv(it: &mut Host, id: u32, st: Box<super::csv::CsvStream>) {
    if let Some(r) = it.files.readers.get_mut(&id) {
        r.csv = Some(st);
    }
}

/// Take the CSV state of reader `id` (put it back with `set_csv`).
pub fn take_csv(it: &mut Host, id: u32) -> Box<super::csv::CsvStream> {
    it.files.readers.get_mut(&id).and_then(|r| r.csv.take()).expect("a CSV reader has its state")
}

/// Lines reader `id` has read so far.
pub fn lines_read(it: &Host, id: u32) -> u64 {
    it.files.readers.get(&id).map_or(0, |r| r.lines)
}

pub fn reader_id(it: &Host, name: &str, v: &Value, kind: HandleKind) -> R<u32> {
    let h = it.arg_handle(name, std::slice::from_ref(v), 0, &[kind], |h| it.files.readers.contains_key(&h.id))?;
    Ok(h.id)
}

fn read_limit(it: &Host) -> Fail {
    it.limit(
        LimitKind::FileReads,
        format!("a line longer than {max_read_line} bytes", max_read_line = it.lim.n(L::FileReadsLine)),
    )
}

/// Read the next line of reader `id`: ending removed, None at the end. Bytes consumed
/// (endings included) are charged to the shared streaming-read budget.
pub fn next_line(it: &mut Host, name: &str, id: u32) -> R<Option<Vec<u8>>> {
    if it.files.readers.get(&id).is_some_and(|r| r.file.is_none()) {
        let line = super::stdin::next_stdin_line(it)?;
        if line.is_some() {
            it.files.readers.get_mut(&id).expect("checked reader").lines += 1;
        }
        return Ok(line);
    }
    let mut searched = 0;
    let cap = it.line_cap(L::FileReadsLine);
    loop {
        let r = it.files.readers.get_mut(&id).expect("checked reader");
        let avail = &r.buf[r.pos..];
        match crate::budget::next_line(avail, searched, cap, r.eof) {
            NextLine::Line { len, consumed } => {
                // (The heap is a field apart from the readers: no second look-up.)
                if let Err(m) = it.heap.room(len) {
                    return Err(it.memory_over(m));
                }
                let line = avail[..len].to_vec();
                it.budgets.file_reads.charge(consumed as u64).map_err(|e| it.budget_fail(e))?;
                let r = it.files.readers.get_mut(&id).expect("checked reader");
                r.pos += consumed;
                r.lines += 1;
                return Ok(Some(line));
            }
            NextLine::End => return Ok(None),
            NextLine::TooLong => return Err(it.line_too_long(L::FileReadsLine, || read_limit(it))),
            NextLine::More => searched = avail.len(),
        }
        if r.pos > 0 {
            r.buf.drain(..r.pos);
            r.pos = 0;
        }
        let start = r.buf.len();
        // (A long line is buffered whole: its growth is found room for first.)
        if let Err(m) = it.heap.grow(&mut r.buf, COPY_CHUNK) {
            return Err(it.memory_over(m));
        }
        r.buf.resize(start + COPY_CHUNK, 0);
        let got = loop {
            match r.file.as_mut().expect("a file reader").read(&mut r.buf[start..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match got {
            Ok(n) => {
                r.buf.truncate(start + n);
                if n == 0 {
                    r.eof = true;
                }
            }
            Err(e) => {
                r.buf.truncate(start);
                return Err(it.err(ErrKind::Io, format!("{name}: read failed: {}", io_reason(&e))));
            }
        }
    }
}

/// The next bytes of reader `id` (what it has buffered, else one chunk of the file),
/// appended to `buf` and charged to the streaming-read budget: how many, 0 at the end
/// (`json.read`).
pub fn next_chunk(it: &mut Host, name: &str, id: u32, buf: &mut Vec<u8>) -> R<usize> {
    if it.files.readers.get(&id).is_some_and(|r| r.file.is_none()) {
        return super::stdin::next_chunk(it, buf);
    }
    let r = it.files.readers.get_mut(&id).expect("checked reader");
    let start = buf.len();
    if r.pos < r.buf.len() {
        buf.extend_from_slice(&r.buf[r.pos..]);
        r.buf.clear();
        r.pos = 0;
    } else if !r.eof {
        buf.resize(start + COPY_CHUNK, 0);
        let got = loop {
            match r.file.as_mut().expect("a file reader").read(&mut buf[start..]) {
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        match got {
            Ok(n) => {
                buf.truncate(start + n);
                if n == 0 {
                    r.eof = true;
                }
            }
            Err(e) => {
                buf.truncate(start);
                return Err(it.err(ErrKind::Io, format!("{name}: read failed: {}", io_reason(&e))));
            }
        }
    }
    let n = buf.len() - start;
    it.budgets.file_reads.charge(n as u64).map_err(|e| it.budget_fail(e))?;
    Ok(n)
}

fn open(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("file.open", args, 0)?.clone();
    Ok(Value::Handle(open_reader(it, "file.open", &p, HandleKind::File)?))
}

fn read_line(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let id = reader_id(it, "file.read_line", &args[0], HandleKind::File)?;
    Ok(match next_line(it, "file.read_line", id)? {
        Some(l) => Value::str(l),
        None => Value::Nil,
    })
}

/// Close reader `v` of `kind` (a second close is a value error).
pub fn close_reader(it: &mut Host, name: &str, v: &Value, kind: HandleKind) -> R<Value> {
    let id = reader_id(it, name, v, kind)?;
    it.files.readers.remove(&id);
    Ok(Value::Nil)
}

fn close(it: &mut Host, args: &mut [Value]) -> R<Value> {
    close_reader(it, "file.close", &args[0], HandleKind::File)
}

fn dir_list(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("dir.list", args, 0)?.clone();
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK;
    let fd = gate_open(it, "dir.list", "list", Need::Read, &p, flags, Mode::empty())?;
    let rd = rustix::fs::Dir::new(fd).map_err(|e| io_err(it, "dir.list", "list", &p, &rx(e)))?;
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut bytes = 0usize;
    for entry in rd {
        let entry = entry.map_err(|e| io_err(it, "dir.list", "list", &p, &rx(e)))?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let name = name.to_vec();
        bytes += name.len();
        if names.len() == it.lim.n(L::Dir) {
            return Err(it.limit(
                LimitKind::Dir,
                format!("directory of more than {max_dir_entries} entries", max_dir_entries = it.lim.n(L::Dir)),
            ));
        }
        if bytes > it.lim.n(L::DirBytes) {
            return Err(it.limit(
                LimitKind::Dir,
                format!(
                    "directory names exceed {max_dir_name_bytes} bytes",
                    max_dir_name_bytes = it.lim.n(L::DirBytes)
                ),
            ));
        }
        names.push(name);
        it.check_time()?;
    }
    // The names' bytes (read, copied, compared by the sort), before the sort.
    it.work((bytes as u64).saturating_mul(DIR_LIST_NAME_BYTE_X256) / 256)?;
    names.sort();
    it.make_list(names.into_iter().map(Value::str).collect())
}

/// `dir.list`: work per byte of the names (x256), beside the rule's 550 per entry
/// (release build, 2026-12-03, `bench/work.py` and 100 listings of 4,096 to 16,384
/// entries: 573 to 612 ns an entry of 7-byte names, 1,093 of 106-byte names, 1,600 to
/// 1,650 of 255-byte names sharing a prefix; the review measured 433 a unit at 2 an
/// entry: issue 23).
const DIR_LIST_NAME_BYTE_X256: u64 = 1152;

fn dir_create(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("dir.create", args, 0)?.clone();
    let (dir, name) = gate_parent(it, "dir.create", "create", Need::Write, &p)?;
    rustix::fs::mkdirat(&dir, &name, Mode::from_raw_mode(0o777))
        .map_err(|e| io_err(it, "dir.create", "create", &p, &rx(e)))?;
    Ok(Value::Nil)
}

fn dir_remove(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let p = it.arg_str("dir.remove", args, 0)?.clone();
    let (dir, name) = gate_parent(it, "dir.remove", "remove", Need::Write, &p)?;
    rustix::fs::unlinkat(&dir, &name, AtFlags::REMOVEDIR)
        .map_err(|e| io_err(it, "dir.remove", "remove", &p, &rx(e)))?;
    Ok(Value::Nil)
}

const F: Cap = Cap::Files;
const R: Cap = Cap::Read;

pub const TABLE: &[Builtin] = &[
    gated("file.read", "file.read(path)", 1, 1, R, Cost::io(0.04), read),
    gated("file.write", "file.write(path, text)", 2, 2, F, Cost::io(0.34), write),
    gated("file.append", "file.append(path, text)", 2, 2, F, Cost::io(0.5), append),
    gated("file.exists", "file.exists(path)", 1, 1, R, CONST, exists),
    gated("file.remove", "file.remove(path)", 1, 1, F, CONST, remove),
    gated("file.copy", "file.copy(from, to)", 2, 2, F, COPY, copy),
    gated("file.rename", "file.rename(from, to)", 2, 2, F, CONST, rename),
    gated("file.size", "file.size(path)", 1, 1, R, CONST, size),
    gated("file.stat", "file.stat(path)", 1, 1, R, CONST, stat),
    gated("file.open", "file.open(path)", 1, 1, R, CONST, open),
    gated("file.read_line", "file.read_line(reader)", 1, 1, R, Cost::io(0.125), read_line),
    gated("file.close", "file.close(reader)", 1, 1, R, CONST, close),
    // Per entry: read from the kernel, copied, sorted; and 4.5 per byte of the names
    // (`DIR_LIST_NAME_BYTE_X256`).
    gated("dir.list", "dir.list(path)", 1, 1, R, Cost::items(550.0), dir_list),
    gated("dir.create", "dir.create(path)", 1, 1, F, CONST, dir_create),
    gated("dir.remove", "dir.remove(path)", 1, 1, F, CONST, dir_remove),
];
