//! `json.read`'s text: read in bounded chunks from a `Feed` (a file reader or stdin; the
//! tests' and the fuzz target's `Pieces`) and parsed as it comes by the one parser
//! (`parse::Parser` over a `Stream`), giving the value, the errors (line and column) and
//! the limits that `json.parse` gives for the whole text.

use super::limits::JsonLimits;
use super::parse::{line_col, ParseError, Parser, Text, PR};
use super::share::INTERN_MIN_TEXT;
use crate::value::Value;

/// Where a stream's text comes from (`json.read`: a file reader or stdin).
pub trait Feed {
    /// Append the next chunk of the text (a bounded number of bytes) to `buf`: false, or
    /// nothing appended, at its end. `Err(())`: the feed failed, and keeps why.
    #[allow(clippy::result_unit_err)]
    fn chunk(&mut self, buf: &mut Vec<u8>) -> Result<bool, ()>;
    /// The run's heap bound.
    fn heap(&self) -> Option<&crate::memory::HeapMeter>;
}

/// A text read in chunks from a `Feed`: the buffer holds the bytes from the parser's
/// position (or the start of the token it is reading) to the end of the last chunk.
/// It checks what `parse_within` checks of a whole text, as the text comes: its length
/// (the `json` limit) and UTF-8 (at its first invalid byte the text ends for the
/// parser; the error is reported once the rest has been read, so that a text too long
/// is the `json` limit whatever it holds, as for `json.parse`). It counts the lines of
/// what it drops, so that an error names the line and column a whole text would.
struct Stream<'f> {
    buf: Vec<u8>,
    feed: &'f mut dyn Feed,
    /// The offset in the text of `buf[0]`.
    base: usize,
    /// Line ends before `base`, and the offset of the first byte after the last of them.
    lines: usize,
    line_start: usize,
    /// `buf[..checked]` is valid UTF-8 (an incomplete character at the end waits for the
    /// next chunk).
    checked: usize,
    /// Bytes read so far; the most the text may have is `lim.bytes`.
    total: usize,
    lim: JsonLimits,
    /// No more text for the parser (the feed's end, or invalid UTF-8).
    eof: bool,
    /// The feed's end.
    done: bool,
    /// The first invalid UTF-8: its line and column.
    bad: Option<(usize, usize)>,
}

impl<'f> Stream<'f> {
    fn new(feed: &'f mut dyn Feed, lim: JsonLimits) -> Self {
        Stream {
            buf: Vec::new(),
            feed,
            base: 0,
            lines: 0,
            line_start: 0,
            checked: 0,
            total: 0,
            lim,
            eof: false,
            done: false,
            bad: None,
        }
    }

    /// Line and column of buffer position `at`: those within the buffer, after the lines
    /// dropped before it.
    fn line_col(&self, at: usize) -> (usize, usize) {
        match line_col(&self.buf, at) {
            (1, _) => (self.lines + 1, self.base + at - self.line_start + 1),
            (line, col) => (self.lines + line, col),
        }
    }

    fn too_long(&self) -> ParseError {
        ParseError::Limit(self.lim.too_long())
    }

    /// Check the bytes read since the last check; at invalid UTF-8, end the text there.
    fn validate(&mut self) {
        match std::str::from_utf8(&self.buf[self.checked..]) {
            Ok(_) => self.checked = self.buf.len(),
            Err(e) if e.error_len().is_none() && !self.done => self.checked += e.valid_up_to(),
            Err(e) => {
                let at = self.checked + e.valid_up_to();
                self.bad = Some(self.line_col(at));
                self.buf.truncate(at);
                self.checked = at;
                self.eof = true;
            }
        }
    }

    /// Read the rest of the feed after the parse stopped: a text past the `json` limit
    /// is that limit, and one with invalid UTF-8 that error, whatever stopped the parse
    /// (a whole text is checked for both before it is parsed).
    fn drain(&mut self) -> PR<()> {
        while !self.eof {
            let keep = self.buf.len();
            self.more(keep)?;
        }
        let mut scratch = Vec::new();
        while !self.done {
            scratch.clear();
            let got = self.feed.chunk(&mut scratch).map_err(|()| ParseError::Feed)?;
            self.total += scratch.len();
            if self.total > self.lim.bytes {
                return Err(self.too_long());
            }
            if !got || scratch.is_empty() {
                self.done = true;
            }
        }
        Ok(())
    }

    /// What a parse that ended with `r` gives, once the rest of the text has been read.
    fn finish(&mut self, r: PR<Value>) -> PR<Value> {
        let r = match r {
            Err(ParseError::Syntax(m, at)) => {
                let (line, col) = self.line_col(at);
                Err(ParseError::SyntaxAt(m, line, col))
            }
            Err(ParseError::Limit(m)) if self.total <= self.lim.bytes => Err(ParseError::Limit(m)),
            Ok(v) => Ok(v),
            Err(e) => return Err(e),
        };
        self.drain()?;
        if let Some((line, col)) = self.bad {
            return Err(ParseError::SyntaxAt("invalid UTF-8".into(), line, col));
        }
        r
    }
}

impl Text for Stream<'_> {
    const STREAM: bool = true;
    type Key = Box<[u8]>;
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        &self.buf
    }
    fn key(&self, start: usize, end: usize) -> Box<[u8]> {
        self.buf[start..end].into()
    }

    fn more(&mut self, keep: usize) -> PR<(usize, bool)> {
        if self.eof {
            return Ok((0, false));
        }
        // Never a byte not yet checked (an incomplete character waiting for the next
        // chunk): dropping less is always right, the parser moves by what was dropped.
        let keep = keep.min(self.checked);
        if keep > 0 {
            let gone = &self.buf[..keep];
            let n = memchr::memchr_iter(b'\n', gone).count();
            if n > 0 {
                self.lines += n;
                self.line_start = self.base + memchr::memrchr(b'\n', gone).map_or(0, |p| p + 1);
            }
            self.buf.drain(..keep);
            self.base += keep;
            self.checked = self.checked.saturating_sub(keep);
        }
        let before = self.buf.len();
        let got = self.feed.chunk(&mut self.buf).map_err(|()| ParseError::Feed)?;
        let came = self.buf.len() - before;
        if !got || came == 0 {
            self.done = true;
            self.eof = true;
        }
        self.total += came;
        if self.total > self.lim.bytes {
            return Err(self.too_long());
        }
        self.validate();
        Ok((keep, self.buf.len() > before))
    }

    fn heap(&self) -> Option<&crate::memory::HeapMeter> {
        self.feed.heap()
    }
}

/// Parse the one JSON value of the text `feed` gives, reading it in chunks: the same
/// value, the same errors (a syntax error's line and column in `SyntaxAt`) and the same
/// limits as `parse_within` of the whole text, never holding more of the text than the
/// token being read and one chunk. Objects share their shapes, strings and small arrays
/// as `json.parse` of the whole text does (the caches are on when the text has at least
/// `INTERN_MIN_TEXT` bytes: the parse starts once that much has been read).
pub fn read_stream(feed: &mut dyn Feed, deadline: Option<std::time::Instant>, lim: JsonLimits) -> PR<Value> {
    let mut st = Stream::new(feed, lim);
    while !st.eof && st.buf.len() < INTERN_MIN_TEXT {
        st.more(0)?;
    }
    let large = st.buf.len() >= INTERN_MIN_TEXT;
    let mut p = Parser::new(st, deadline, lim, large);
    let r = p.document();
    // The parser's stacks and caches go before the rest is read.
    p.into_text().finish(r)
}

/// A feed of the given pieces, one a chunk (tests and the fuzz target: chunk boundaries
/// anywhere).
pub struct Pieces(pub std::collections::VecDeque<Vec<u8>>);

impl Feed for Pieces {
    fn chunk(&mut self, buf: &mut Vec<u8>) -> Result<bool, ()> {
        while let Some(p) = self.0.pop_front() {
            if !p.is_empty() {
                buf.extend_from_slice(&p);
                return Ok(true);
            }
        }
        Ok(false)
    }
    fn heap(&self) -> Option<&crate::memory::HeapMeter> {
        None
    }
}
