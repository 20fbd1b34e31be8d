//! Run budgets for input and output (stdout, stderr, stdin, file writes, streaming
//! reads, environment overlay): one counter type, one charge method, one limit kind each.
//!
//! Storage accounting and the step charge live in the evaluator (`interp.rs`:
//! `Interp::charge` and `Interp::step`), since they sit on its hot path.

use std::io::Write;

use crate::limits::*;

/// A per-run byte budget.
#[derive(Debug, Clone)]
pub struct Budget {
    pub used: u64,
    pub max: u64,
    pub kind: LimitKind,
    pub what: &'static str,
}

impl Budget {
    pub const fn new(kind: LimitKind, max: u64, what: &'static str) -> Self {
        Budget { used: 0, max, kind, what }
    }

    /// Would `n` more bytes fit?
    pub fn fits(&self, n: u64) -> bool {
        self.used.saturating_add(n) <= self.max
    }

    /// Charge `n` bytes, or say why not (nothing is charged then).
    pub fn charge(&mut self, n: u64) -> Result<(), (LimitKind, String)> {
        if !self.fits(n) {
            return Err((self.kind, format!("{} exceed {} bytes per run", self.what, self.max)));
        }
        self.used += n;
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct Budgets {
    pub stdout: Budget,
    pub stderr: Budget,
    pub stdin: Budget,
    pub file_writes: Budget,
    pub file_reads: Budget,
}

impl Budgets {
    pub fn new(lim: &Limits) -> Self {
        Budgets {
            stdout: Budget::new(LimitKind::Stdout, lim.get(L::Stdout), "bytes written to stdout"),
            stderr: Budget::new(LimitKind::Stderr, lim.get(L::Stderr), "bytes written to stderr"),
            stdin: Budget::new(LimitKind::Stdin, lim.get(L::Stdin), "bytes read from stdin"),
            file_writes: Budget::new(LimitKind::FileWrites, lim.get(L::FileWrites), "bytes written to files"),
            file_reads: Budget::new(LimitKind::FileReads, lim.get(L::FileReads), "bytes read by streaming readers"),
        }
    }
}

/// Buffered stdout. In CGI mode everything is held until the run ends.
#[derive(Debug, Default)]
pub struct Output {
    buf: Vec<u8>,
    pub hold: bool,
    /// Set once a write to stdout failed (e.g. a closed pipe).
    pub broken: Option<String>,
}

const FLUSH_AT: usize = 64 * KIB;

impl Output {
    pub fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        self.buf.extend_from_slice(bytes);
        if !self.hold && self.buf.len() >= FLUSH_AT {
            self.flush()?;
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), String> {
        if self.hold || self.buf.is_empty() {
            return Ok(());
        }
        if let Some(b) = &self.broken {
            self.buf.clear();
            return Err(b.clone());
        }
        let mut out = std::io::stdout().lock();
        let r = out.write_all(&self.buf).and_then(|_| out.flush());
        self.buf.clear();
        if let Err(e) = r {
            let m = format!("cannot write to stdout: {}", crate::fileio::io_reason(&e));
            self.broken = Some(m.clone());
            return Err(m);
        }
        Ok(())
    }

    /// Held output (CGI mode), taken at the end of the run.
    pub fn take_held(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.buf)
    }
}

/// The next line of a buffered stream, as `stdin.read_line`, `file.read_line` and
/// `net.read_line` all frame it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextLine {
    /// A line: its text is `avail[..len]` (the LF and a CR before it removed); `consumed`
    /// bytes, ending included, are used up.
    Line { len: usize, consumed: usize },
    /// The stream ended with nothing left.
    End,
    /// No line end buffered yet: read more, then look again from `avail.len()`.
    More,
    /// The line is longer than the limit.
    TooLong,
}

/// Find the next line in `avail` (the unread bytes), resuming the search at `from`
/// (bytes before it hold no LF); `max` bounds a line without its ending; at `eof` the
/// rest is the last line.
pub fn next_line(avail: &[u8], from: usize, max: usize, eof: bool) -> NextLine {
    // An LF past `max + 1` ends a line that is too long anyway: search no further (with
    // memchr, not byte by byte).
    let window = avail.len().min(max.saturating_add(2));
    if let Some(i) = memchr::memchr(b'\n', &avail[from.min(window)..window]).map(|i| i + from.min(window)) {
        let len = if i > 0 && avail[i - 1] == b'\r' { i - 1 } else { i };
        return if len > max { NextLine::TooLong } else { NextLine::Line { len, consumed: i + 1 } };
    }
    if eof {
        return match avail.len() {
            0 => NextLine::End,
            n if n > max => NextLine::TooLong,
            n => NextLine::Line { len: n, consumed: n },
        };
    }
    // A CR may still turn out to precede the LF, so one byte past the limit can wait.
    if avail.len() > max + 1 {
        NextLine::TooLong
    } else {
        NextLine::More
    }
}

#[cfg(test)]
mod tests {
    use super::{next_line, NextLine};

    #[test]
    fn line_framing() {
        assert_eq!(next_line(b"ab\r\ncd", 0, 10, false), NextLine::Line { len: 2, consumed: 4 });
        assert_eq!(next_line(b"cd", 0, 10, false), NextLine::More);
        assert_eq!(next_line(b"cd", 0, 10, true), NextLine::Line { len: 2, consumed: 2 });
        assert_eq!(next_line(b"", 0, 10, true), NextLine::End);
        assert_eq!(next_line(b"abc\n", 0, 3, false), NextLine::Line { len: 3, consumed: 4 });
        assert_eq!(next_line(b"abcd\n", 0, 3, false), NextLine::TooLong);
        assert_eq!(next_line(b"abc\r", 0, 3, false), NextLine::More);
        assert_eq!(next_line(b"abc\r\n", 0, 3, false), NextLine::Line { len: 3, consumed: 5 });
        assert_eq!(next_line(b"abcde", 0, 3, false), NextLine::TooLong);
        assert_eq!(next_line(b"abcd", 0, 3, true), NextLine::TooLong);
        assert_eq!(next_line(b"x\ny\n", 2, 3, false), NextLine::Line { len: 3, consumed: 4 });
        // An LF beyond the window (max + 2 bytes) is not looked for: the line is too long.
        assert_eq!(next_line(b"abcdefgh\n", 0, 3, false), NextLine::TooLong);
        assert_eq!(next_line(b"abcdefgh\n", 0, 3, true), NextLine::TooLong);
        assert_eq!(next_line(b"abcd\r\n", 0, 3, false), NextLine::TooLong);
        assert_eq!(next_line(b"abcd\r\n", 0, 4, false), NextLine::Line { len: 4, consumed: 6 });
        assert_eq!(next_line(b"abcd", 4, 3, false), NextLine::More);
        assert_eq!(next_line(b"abcdef\n", 4, 3, false), NextLine::TooLong);
    }
}
