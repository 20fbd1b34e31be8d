//! `stdin`: line and byte reads from standard input, within the stdin budgets.
//!
//! Reads go through a reader thread feeding a bounded channel, so that a blocking read
//! still ends at the `--max-time` deadline.

use std::io::Read;
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};

use super::Host;
use super::{b, Builtin, Cost};
use crate::budget::{next_line, NextLine};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

const CHUNK: usize = 64 * KIB;

#[derive(Debug, Default)]
pub struct StdinState {
    buf: Vec<u8>,
    pos: usize,
    eof: bool,
    /// Why reading stdin failed (stdin is a directory, an I/O error): once the input read
    /// before the failure is used up, every read fails this way.
    failed: Option<String>,
    rx: Option<Receiver<Chunk>>,
    /// Lines read so far (`json.next("-")` names a bad line by its number).
    pub lines: u64,
}

/// What the reader thread sends: input, or the error that ended it.
type Chunk = Result<Vec<u8>, String>;

fn start_reader() -> Receiver<Chunk> {
    let (tx, rx) = sync_channel::<Chunk>(2);
    std::thread::spawn(move || {
        let mut input = std::io::stdin();
        loop {
            let mut chunk = vec![0u8; CHUNK];
            match input.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    chunk.truncate(n);
                    if tx.send(Ok(chunk)).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Not the end of input: a read that failed (EISDIR when stdin is a
                    // directory, EIO) is an `io` error for the script.
                    let _ = tx.send(Err(format!("cannot read stdin: {}", crate::fileio::io_reason(&e))));
                    break;
                }
            }
        }
    });
    rx
}

/// Wait for more input. Returns false at the end of input, and when reading failed
/// (`failed` is set then: see `at_end`).
fn fill(it: &mut Host) -> R<bool> {
    if it.stdin.eof {
        return Ok(false);
    }
    let rx = it.stdin.rx.get_or_insert_with(start_reader);
    let got = match it.meter.remaining() {
        None => rx.recv().ok(),
        Some(left) => match rx.recv_timeout(left) {
            Ok(c) => Some(c),
            Err(RecvTimeoutError::Disconnected) => None,
            Err(RecvTimeoutError::Timeout) => {
                return Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached while reading stdin"))
            }
        },
    };
    let st = &mut it.stdin;
    match got {
        Some(Err(m)) => {
            st.failed = Some(m);
            st.eof = true;
            Ok(false)
        }
        Some(Ok(chunk)) => {
            if st.pos > 0 && st.pos * 2 >= st.buf.len() {
                st.buf.drain(..st.pos);
                st.pos = 0;
            }
            // (A line of hundreds of MiB is buffered whole: its growth is found room
            // for first.)
            if let Err(m) = it.heap.grow(&mut st.buf, chunk.len()) {
                return Err(it.memory_over(m));
            }
            st.buf.extend_from_slice(&chunk);
            Ok(true)
        }
        None => {
            st.eof = true;
            Ok(false)
        }
    }
}

/// What a read returns once nothing is left: nil at the end of input, an `io` error
/// when reading stdin failed (the input read before the failure is returned first).
fn at_end(it: &Host) -> R<Value> {
    match &it.stdin.failed {
        Some(m) => Err(it.err(ErrKind::Io, m.clone())),
        None => Ok(Value::Nil),
    }
}

fn consume(it: &mut Host, n: usize) -> R<()> {
    it.budgets.stdin.charge(n as u64).map_err(|e| it.budget_fail(e))?;
    it.stdin.pos += n;
    Ok(())
}

fn line_limit(it: &Host) -> crate::error::Fail {
    it.limit(
        LimitKind::Stdin,
        format!("a stdin line longer than {max_stdin_line} bytes", max_stdin_line = it.lim.n(L::StdinLine)),
    )
}

/// The next line of stdin as `stdin.read_line` reads it, for the streaming readers over
/// stdin (`csv.open("-")`, `json.next("-")`): None at the end of input.
pub fn next_stdin_line(it: &mut Host) -> R<Option<Vec<u8>>> {
    match read_line(it, &mut [])? {
        Value::Str(s) => Ok(Some(s.to_vec())),
        _ => Ok(None),
    }
}

/// The next bytes of stdin (what is buffered, else one chunk), appended to `buf` and
/// charged to the stdin budget: how many, 0 at the end of input (`json.read("-")`).
pub fn next_chunk(it: &mut Host, buf: &mut Vec<u8>) -> R<usize> {
    let _ = it.out.flush();
    if it.stdin.pos == it.stdin.buf.len() {
        it.stdin.buf.clear();
        it.stdin.pos = 0;
        if !fill(it)? {
            at_end(it)?;
            return Ok(0);
        }
    }
    let n = it.stdin.buf.len() - it.stdin.pos;
    it.budgets.stdin.charge(n as u64).map_err(|e| it.budget_fail(e))?;
    buf.extend_from_slice(&it.stdin.buf[it.stdin.pos..]);
    it.stdin.pos += n;
    Ok(n)
}

pub(crate) fn read_line(it: &mut Host, _: &mut [Value]) -> R<Value> {
    let _ = it.out.flush();
    let mut searched = 0;
    loop {
        let avail = &it.stdin.buf[it.stdin.pos..];
        match next_line(avail, searched, it.line_cap(L::StdinLine), it.stdin.eof) {
            NextLine::Line { len, consumed } => {
                // (The heap is a field apart from stdin's buffer.)
                if let Err(m) = it.heap.room(len) {
                    return Err(it.memory_over(m));
                }
                let v = Value::str_from(&avail[..len]);
                consume(it, consumed)?;
                it.stdin.lines += 1;
                return Ok(v);
            }
            NextLine::End => return at_end(it),
            NextLine::TooLong => return Err(it.line_too_long(L::StdinLine, || line_limit(it))),
            NextLine::More => {
                searched = avail.len();
                fill(it)?;
            }
        }
    }
}

fn read(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = it.arg_int("stdin.read", args, 0, 1.0, it.lim.n(L::String) as f64)? as usize;
    let _ = it.out.flush();
    while it.stdin.buf.len() - it.stdin.pos < n {
        if !fill(it)? {
            break;
        }
    }
    let avail = &it.stdin.buf[it.stdin.pos..];
    if avail.is_empty() {
        return at_end(it);
    }
    let take = avail.len().min(n);
    it.room(take)?;
    let avail = &it.stdin.buf[it.stdin.pos..];
    let v = Value::str_from(&avail[..take]);
    consume(it, take)?;
    Ok(v)
}

pub const TABLE: &[Builtin] = &[
    b("stdin.read_line", "stdin.read_line()", 0, 0, Cost::io(1.0), read_line),
    b("stdin.read", "stdin.read(max_bytes)", 1, 1, Cost::io(1.0), read),
];
