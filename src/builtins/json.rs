//! `json.parse` and `json.stringify`: RFC 8259 JSON, strict, with the JSON limits
//! (SPEC 8) enforced while the text is read or written, never after an unbounded value
//! has been built.
//!
//! - Input and output: at most the `json` limit in bytes; nesting at most `json_depth`
//!   (`[]` is depth 1); at most `json_nodes` values, every container and scalar
//!   counted. Exceeding any is the `json` limit (fatal). The same three bounds hold in
//!   both directions, so whatever `json.stringify` writes, `json.parse` reads back.
//! - Malformed text is a `parse` error naming line and column: invalid UTF-8, a byte
//!   order mark, comments, trailing commas, `NaN`/`Infinity`, leading zeros, control
//!   characters in strings, lone surrogate escapes, numbers that overflow binary64,
//!   anything after the value.
//! - Objects keep key order; a repeated key keeps its first position and last value.

use std::collections::HashMap;
use std::rc::Rc;

use super::Host;
use super::{b, gated, Builtin, Cap, Cost};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

// ----------------------------------------------------------------------
// Parsing
// ----------------------------------------------------------------------

/// Why parsing stopped.
#[derive(Debug, PartialEq)]
pub enum ParseError {
    /// Malformed text: message and byte offset.
    Syntax(String, usize),
    /// A JSON limit (depth, nodes, bytes).
    Limit(String),
    /// The run's deadline passed while parsing.
    Time,
    /// The values built passed `--max-memory` (the heap check, every 4,096 values).
    Memory(String),
    /// A stream's malformed text: message, line and column (1-based; the column counts
    /// bytes), as `Syntax` gives them through `line_col` for a whole text.
    SyntaxAt(String, usize, usize),
    /// A stream's feed failed (a read budget, an I/O error, the work budget): the feed
    /// keeps the failure.
    Feed,
}

/// The JSON limits of a run (`json`, `json_depth`, `json_nodes`).
#[derive(Clone, Copy, Debug)]
pub struct JsonLimits {
    pub bytes: usize,
    pub depth: usize,
    pub nodes: usize,
}

impl JsonLimits {
    pub fn of(l: &Limits) -> Self {
        JsonLimits { bytes: l.n(L::Json), depth: l.n(L::JsonDepth), nodes: l.n(L::JsonNodes) }
    }
}

impl Default for JsonLimits {
    fn default() -> Self {
        JsonLimits::of(&Limits::default())
    }
}

/// Where a parser's text comes from: one whole text (`json.parse`), or a stream read in
/// bounded chunks (`json.read`, `Stream`). Positions are offsets into `bytes()`, which
/// a stream moves on as it reads: `more` drops the bytes before `keep` (the parser's
/// position: nothing before it is looked at again) and appends the next chunk.
trait Text {
    /// Whether more text can come (false: `more` never reads, and the stream-only
    /// checks compile away).
    const STREAM: bool;
    fn bytes(&self) -> &[u8];
    /// Drop the bytes before `keep` and read more: (bytes dropped, whether any came).
    fn more(&mut self, keep: usize) -> PR<(usize, bool)>;
    /// The run's heap bound, looked at every `LONG_OP_CHECK_ITEMS` values.
    fn heap(&self) -> Option<&crate::memory::HeapMeter>;
}

/// One whole text.
struct Whole<'a> {
    s: &'a [u8],
    heap: Option<&'a crate::memory::HeapMeter>,
}

impl Text for Whole<'_> {
    const STREAM: bool = false;
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        self.s
    }
    #[inline(always)]
    fn more(&mut self, _: usize) -> PR<(usize, bool)> {
        Ok((0, false))
    }
    fn heap(&self) -> Option<&crate::memory::HeapMeter> {
        self.heap
    }
}

struct Parser<T: Text> {
    lim: JsonLimits,
    s: T,
    i: usize,
    nodes: usize,
    /// The run's deadline, looked at every `LONG_OP_CHECK_ITEMS` values.
    deadline: Option<std::time::Instant>,
    /// Scratch buffer for strings with escapes.
    buf: Vec<u8>,
    /// Object keys seen so far (those without escapes), shared between objects: records
    /// with the same keys then hold one copy of each.
    keys: HashMap<Box<[u8]>, Bytes, foldhash::fast::RandomState>,
    /// Entries of the objects being parsed (a stack shared by nested objects), so that
    /// each map is built at exactly its size.
    pairs: Vec<(Bytes, Value)>,
    /// Items of the arrays being parsed (a stack shared by nested arrays), so that each
    /// list is built at exactly its length, not at a capacity grown by doubling.
    items: Vec<Value>,
    /// Short string values seen lately: equal values share one box (`StrCache`).
    intern: StrCache,
    /// Key sequences seen lately: objects with the keys of earlier ones share them
    /// (`ShapeCache`; large texts only, as the `StrCache`).
    shapes: Option<ShapeCache>,
    /// Small arrays of scalars seen lately: equal ones share one list (`ListCache`;
    /// large texts only).
    lists: Option<ListCache>,
    /// The bytes the lists shared so far beyond their first place would hold as copies
    /// (`list_own`): the heap check counts them, so that a document of repeated arrays
    /// stops with `memory` while it is parsed, where its accounted size would stop it
    /// after.
    shared: usize,
}

/// Most distinct keys kept for sharing in one parse.
const MAX_SHARED_KEYS: usize = 1024;

/// Slots of a `StrCache`: 32 KiB of pointers.
const INTERN_SLOTS: usize = 4096;
/// Longest string value shared through a `StrCache`.
pub const INTERN_MAX: usize = 64;
/// Texts shorter than this parse without a `StrCache` (`json.next` parses one line at a
/// time: the cache would cost more than it saves).
pub const INTERN_MIN_TEXT: usize = 64 * 1024;

/// Short string values made lately (`INTERN_SLOTS` slots, direct-mapped by a hash of the
/// bytes), for parsers of large texts (`json.parse`, `csv.parse`): an equal value later
/// in the text shares the earlier one's box, as equal JSON keys do. Strings are
/// copy-on-write, so sharing is invisible to scripts; it makes repeated values (`"GET"`,
/// `"active"`, tags, a CSV file's category column) cost a slot each instead of a 48-byte
/// box. A value that misses takes the slot; a collision only costs a miss, so no text
/// makes it slower than one hash and one compare per value. The accounted size of a
/// shared string is still counted in full at each place that holds it (a bound above
/// what is held, as for shared keys).
#[derive(Debug, Default)]
pub struct StrCache {
    slots: Vec<Option<Bytes>>,
}

impl StrCache {
    /// A cache when `on` (else every `get` makes a new string).
    pub fn new(on: bool) -> Self {
        StrCache { slots: if on { vec![None; INTERN_SLOTS] } else { Vec::new() } }
    }

    /// A string of `b`: the cached equal one when there is one, else a new one (which
    /// takes the slot).
    #[inline]
    pub fn get(&mut self, b: &[u8]) -> Bytes {
        if b.len() > INTERN_MAX || self.slots.is_empty() {
            return bytes(b);
        }
        use std::hash::BuildHasher;
        let h = foldhash::fast::FixedState::with_seed(0x5eed).hash_one(b);
        let slot = &mut self.slots[(h as usize) & (INTERN_SLOTS - 1)];
        if let Some(s) = slot {
            if s.as_slice() == b {
                return s.clone();
            }
        }
        let s = bytes(b);
        *slot = Some(s.clone());
        s
    }
}

/// Slots of a `ListCache`.
const LIST_SLOTS: usize = 1024;
/// Most items of an array shared through a `ListCache`.
const LIST_SHARE_MAX: usize = 8;

/// Small arrays made lately (`LIST_SLOTS` slots, direct-mapped by a hash of the items),
/// as the `StrCache` for strings: an array of up to `LIST_SHARE_MAX` scalars (numbers,
/// `true`, `false`, `null`, strings of up to `INTERN_MAX` bytes) equal to one made
/// earlier in the text shares its list. Lists are copy-on-write, so sharing is invisible
/// to scripts (the first change through one reference copies it); repeated small arrays
/// (tags, flags, a pair of coordinates seen before) then cost a slot each instead of a
/// list (64-byte box and the items' chunk). Numbers compare by their bits (`0` and `-0`
/// stay apart). A shared list is accounted in full at each place that holds it.
struct ListCache {
    slots: Vec<Option<std::rc::Rc<List>>>,
}

impl ListCache {
    fn new() -> Self {
        ListCache { slots: vec![None; LIST_SLOTS] }
    }

    /// The earlier list equal to `items` (`Ok`), or, for items that could be shared, the
    /// slot a new list of them takes (`Err(Some(slot))`).
    fn find(&mut self, items: &[Value]) -> Result<Value, Option<usize>> {
        use std::hash::{BuildHasher, Hasher};
        if items.len() > LIST_SHARE_MAX {
            return Err(None);
        }
        let mut h = foldhash::fast::FixedState::with_seed(0x11_57).build_hasher();
        h.write_usize(items.len());
        for v in items {
            match v {
                Value::Nil => h.write_u8(0),
                Value::Bool(b) => h.write_u8(1 + *b as u8),
                Value::Num(x) => h.write_u64(x.to_bits()),
                Value::Str(b) if b.len() <= INTERN_MAX => h.write(b),
                _ => return Err(None),
            }
        }
        let i = (h.finish() as usize) & (LIST_SLOTS - 1);
        if let Some(l) = &self.slots[i] {
            let same = l.len() == items.len()
                && l.items().iter().zip(items).all(|(a, b)| match (a, b) {
                    (Value::Nil, Value::Nil) => true,
                    (Value::Bool(x), Value::Bool(y)) => x == y,
                    (Value::Num(x), Value::Num(y)) => x.to_bits() == y.to_bits(),
                    (Value::Str(x), Value::Str(y)) => std::rc::Rc::ptr_eq(x, y) || x.as_slice() == y.as_slice(),
                    _ => false,
                });
            if same {
                return Ok(Value::List(l.clone()));
            }
        }
        Err(Some(i))
    }

    /// A list of `items`, kept in slot `i` for the arrays that follow.
    fn put(&mut self, i: usize, items: Vec<Value>) -> Value {
        let l = std::rc::Rc::new(List::from_vec(items));
        if let Some(slot) = self.slots.get_mut(i) {
            *slot = Some(l.clone());
        }
        Value::List(l)
    }
}

/// What a copy of a shared list would hold besides its items (which it would share):
/// its header and its slots, as accounted.
fn list_own(v: &Value) -> usize {
    match v {
        Value::List(l) => ACCT_LIST_HEADER + l.len() * ACCT_SLOT,
        _ => 0,
    }
}

type PR<T> = Result<T, ParseError>;

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
    /// Bytes read so far, and the most the text may have.
    total: usize,
    max: usize,
    /// No more text for the parser (the feed's end, or invalid UTF-8).
    eof: bool,
    /// The feed's end.
    done: bool,
    /// The first invalid UTF-8: its line and column.
    bad: Option<(usize, usize)>,
}

impl<'f> Stream<'f> {
    fn new(feed: &'f mut dyn Feed, max: usize) -> Self {
        Stream {
            buf: Vec::new(),
            feed,
            base: 0,
            lines: 0,
            line_start: 0,
            checked: 0,
            total: 0,
            max,
            eof: false,
            done: false,
            bad: None,
        }
    }

    /// Line and column of buffer position `at`.
    fn line_col(&self, at: usize) -> (usize, usize) {
        let before = &self.buf[..at.min(self.buf.len())];
        let line = self.lines + memchr::memchr_iter(b'\n', before).count() + 1;
        let start = match memchr::memrchr(b'\n', before) {
            Some(p) => self.base + p + 1,
            None => self.line_start,
        };
        (line, self.base + at - start + 1)
    }

    fn too_long(&self) -> ParseError {
        ParseError::Limit(format!("JSON text of more than {} bytes", self.max))
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
            if self.total > self.max {
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
            Err(ParseError::Limit(m)) if self.total <= self.max => Err(ParseError::Limit(m)),
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
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        &self.buf
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
        if self.total > self.max {
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
    let mut st = Stream::new(feed, lim.bytes);
    while !st.eof && st.buf.len() < INTERN_MIN_TEXT {
        st.more(0)?;
    }
    let large = st.buf.len() >= INTERN_MIN_TEXT;
    let mut p = Parser::new(st, deadline, lim, large);
    let r = p.document();
    // The parser's stacks and caches go before the rest is read.
    let Parser { s: mut st, .. } = p;
    st.finish(r)
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

/// A parse's outcome as text, the same for a whole text and a stream: the value written
/// compactly, or the error with its line and column (tests, the fuzz target).
pub fn outcome(r: PR<Value>, text: Option<&[u8]>) -> String {
    match r {
        Ok(v) => {
            match stringify_until(&v, b"", None, JsonLimits { bytes: usize::MAX, depth: 1 << 20, nodes: usize::MAX }) {
                Ok(t) => format!("ok {}", String::from_utf8_lossy(&t)),
                Err(e) => format!("ok, unwritable: {e:?}"),
            }
        }
        Err(ParseError::Syntax(m, at)) => {
            let (l, c) = line_col(text.unwrap_or(b""), at);
            format!("syntax: {m} at line {l}, column {c}")
        }
        Err(ParseError::SyntaxAt(m, l, c)) => format!("syntax: {m} at line {l}, column {c}"),
        Err(e) => format!("{e:?}"),
    }
}

/// Parse JSON text into a value, within the JSON limits.
pub fn parse(text: &[u8]) -> PR<Value> {
    parse_until(text, None, JsonLimits::default())
}

/// `parse`, stopping with `ParseError::Time` once `deadline` has passed.
pub fn parse_until(text: &[u8], deadline: Option<std::time::Instant>, lim: JsonLimits) -> PR<Value> {
    parse_within(text, deadline, lim, None)
}

/// `parse_until`, also stopping with `ParseError::Memory` once the values built pass the
/// run's heap bound.
pub fn parse_within<'a>(
    text: &'a [u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
    heap: Option<&'a crate::memory::HeapMeter>,
) -> PR<Value> {
    if text.len() > lim.bytes {
        return Err(ParseError::Limit(format!("JSON text of more than {} bytes", lim.bytes)));
    }
    if let Err(e) = std::str::from_utf8(text) {
        return Err(ParseError::Syntax("invalid UTF-8".into(), e.valid_up_to()));
    }
    let large = text.len() >= INTERN_MIN_TEXT;
    let mut p = Parser::new(Whole { s: text, heap }, deadline, lim, large);
    p.document()
}

impl<T: Text> Parser<T> {
    fn new(s: T, deadline: Option<std::time::Instant>, lim: JsonLimits, large: bool) -> Self {
        Parser {
            s,
            i: 0,
            nodes: 0,
            lim,
            deadline,
            buf: Vec::new(),
            keys: HashMap::default(),
            pairs: Vec::new(),
            items: Vec::new(),
            intern: StrCache::new(large),
            shapes: large.then(ShapeCache::new),
            lists: large.then(ListCache::new),
            shared: 0,
        }
    }

    /// The one value of the text, with nothing but white space after it.
    fn document(&mut self) -> PR<Value> {
        self.ws()?;
        let v = self.value(0)?;
        self.ws()?;
        if self.i < self.s.bytes().len() {
            return Err(self.unexpected("after the value"));
        }
        Ok(v)
    }

    /// Read more of a stream, keeping the bytes from the position on: whether the
    /// buffer changed (the position moved, or bytes came).
    #[cold]
    #[inline(never)]
    fn more(&mut self) -> PR<bool> {
        let (dropped, got) = self.s.more(self.i)?;
        self.i -= dropped;
        Ok(got || dropped > 0)
    }

    /// At least `n` bytes from the position on, unless the text ends first.
    #[inline]
    fn need(&mut self, n: usize) -> PR<()> {
        while T::STREAM && self.s.bytes().len() - self.i < n {
            if !self.s.more(self.i).map(|(d, got)| {
                self.i -= d;
                got
            })? {
                break;
            }
        }
        Ok(())
    }

    /// A stream: the whole string token that starts at the position (its quote) in the
    /// buffer, up to its closing quote or the end of the text. Whether the buffer changed.
    #[cold]
    #[inline(never)]
    fn ensure_string(&mut self) -> PR<bool> {
        let mut j = self.i + 1;
        let mut changed = false;
        loop {
            let s = self.s.bytes();
            while j < s.len() {
                match memchr::memchr2(b'"', b'\\', &s[j..]) {
                    None => j = s.len(),
                    Some(k) if s[j + k] == b'"' => return Ok(changed),
                    Some(k) => j += k + 2,
                }
            }
            let off = j - self.i;
            let (dropped, got) = self.s.more(self.i)?;
            self.i -= dropped;
            changed |= got || dropped > 0;
            if !got {
                return Ok(changed);
            }
            j = self.i + off;
        }
    }

    /// A stream: the whole number token at the position in the buffer.
    #[inline(never)]
    fn ensure_number(&mut self) -> PR<()> {
        let mut j = self.i;
        loop {
            let s = self.s.bytes();
            while j < s.len() && matches!(s[j], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E') {
                j += 1;
            }
            if j < s.len() {
                return Ok(());
            }
            let off = j - self.i;
            if !self.more()? {
                return Ok(());
            }
            j = self.i + off;
        }
    }
    /// White space; on a stream, then either a byte at the position or the end of the text.
    #[inline]
    fn ws(&mut self) -> PR<()> {
        loop {
            while let Some(&c) = self.s.bytes().get(self.i) {
                if c == b' ' || c == b'\n' || c == b'\r' || c == b'\t' {
                    self.i += 1;
                } else {
                    return Ok(());
                }
            }
            if !T::STREAM || !self.more()? {
                return Ok(());
            }
        }
    }

    fn unexpected(&mut self, context: &str) -> ParseError {
        if T::STREAM {
            // The character shown: all of it, though it may straddle two chunks.
            if let Err(e) = self.need(4) {
                return e;
            }
        }
        let s = self.s.bytes();
        match s.get(self.i) {
            None => ParseError::Syntax(format!("unexpected end of input {context}"), self.i),
            Some(_) => {
                let rest = &s[self.i..(self.i + 4).min(s.len())];
                let rest = match std::str::from_utf8(rest) {
                    Ok(r) => r,
                    Err(e) => std::str::from_utf8(&rest[..e.valid_up_to()]).unwrap_or(""),
                };
                let c = rest.chars().next().unwrap_or('?');
                let shown = if c.is_control() { format!("{:?}", c) } else { format!("'{c}'") };
                ParseError::Syntax(format!("unexpected character {shown} {context}"), self.i)
            }
        }
    }

    fn syntax(&self, msg: &str, at: usize) -> ParseError {
        ParseError::Syntax(msg.to_string(), at)
    }

    #[inline]
    fn count(&mut self) -> PR<()> {
        self.nodes += 1;
        if self.nodes > self.lim.nodes {
            return Err(ParseError::Limit(format!("JSON document of more than {} values", self.lim.nodes)));
        }
        if self.nodes.is_multiple_of(LONG_OP_CHECK_ITEMS) {
            return self.look();
        }
        Ok(())
    }

    /// The deadline and the heap, every `LONG_OP_CHECK_ITEMS` values.
    #[cold]
    #[inline(never)]
    fn look(&self) -> PR<()> {
        if crate::meter::past(self.deadline) {
            return Err(ParseError::Time);
        }
        if let Some(h) = self.s.heap() {
            if self.shared > 0 {
                h.observe_with(self.shared).map_err(ParseError::Memory)?;
            } else if h.past_mark() {
                h.observe().map_err(ParseError::Memory)?;
            }
        }
        Ok(())
    }

    /// value -> object | array | string | number | true | false | null
    fn value(&mut self, depth: usize) -> PR<Value> {
        let Some(&c) = self.s.bytes().get(self.i) else {
            return Err(self.unexpected("where a value was expected"));
        };
        match c {
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'"' => {
                self.count()?;
                Ok(Value::Str(self.string_value()?))
            }
            b'-' | b'0'..=b'9' => {
                self.count()?;
                Ok(Value::Num(self.number()?))
            }
            b't' => self.literal(b"true", Value::Bool(true)),
            b'f' => self.literal(b"false", Value::Bool(false)),
            b'n' => self.literal(b"null", Value::Nil),
            _ => Err(self.unexpected("where a value was expected")),
        }
    }

    fn literal(&mut self, word: &[u8], v: Value) -> PR<Value> {
        self.need(word.len())?;
        if self.s.bytes()[self.i..].starts_with(word) {
            self.count()?;
            self.i += word.len();
            Ok(v)
        } else {
            Err(self.unexpected("where a value was expected"))
        }
    }

    fn enter(&mut self, depth: usize) -> PR<()> {
        if depth > self.lim.depth {
            return Err(ParseError::Limit(format!("JSON nested more than {} deep", self.lim.depth)));
        }
        self.count()
    }

    /// array -> '[' ws ( value ws ( ',' ws value ws )* )? ']'
    fn array(&mut self, depth: usize) -> PR<Value> {
        self.enter(depth)?;
        self.i += 1;
        self.ws()?;
        if self.s.bytes().get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(match &mut self.lists {
                Some(c) => match c.find(&[]) {
                    Ok(v) => {
                        self.shared += list_own(&v);
                        v
                    }
                    Err(Some(slot)) => c.put(slot, Vec::new()),
                    Err(None) => Value::list(Vec::new()),
                },
                None => Value::list(Vec::new()),
            });
        }
        let start = self.items.len();
        loop {
            let v = self.value(depth)?;
            self.items.push(v);
            self.ws()?;
            match self.s.bytes().get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.ws()?;
                }
                Some(b']') => {
                    self.i += 1;
                    if let Some(c) = &mut self.lists {
                        match c.find(&self.items[start..]) {
                            Ok(v) => {
                                self.items.truncate(start);
                                self.shared += list_own(&v);
                                return Ok(v);
                            }
                            Err(Some(slot)) => {
                                let items: Vec<Value> = self.items.drain(start..).collect();
                                return Ok(c.put(slot, items));
                            }
                            Err(None) => {}
                        }
                    }
                    return Ok(Value::list(self.take_items(start)));
                }
                _ => return Err(self.unexpected("in an array (expected ',' or ']')")),
            }
        }
    }

    /// The items of the array that began at `start` on the item stack, in a vector of
    /// exactly their number. The outermost array takes the stack itself, shrunk (a large
    /// buffer shrinks in place), so a document's one big array is never copied.
    fn take_items(&mut self, start: usize) -> Vec<Value> {
        if start == 0 {
            let mut all = std::mem::take(&mut self.items);
            all.shrink_to_fit();
            all
        } else {
            self.items.drain(start..).collect()
        }
    }

    /// object -> '{' ws ( string ws ':' ws value ws ( ',' ws string ws ':' ws value ws )* )? '}'
    fn object(&mut self, depth: usize) -> PR<Value> {
        self.enter(depth)?;
        self.i += 1;
        self.ws()?;
        if self.s.bytes().get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(Value::map(Map::with_capacity(0)));
        }
        let start = self.pairs.len();
        let r = self.object_entries(depth);
        if let Err(e) = r {
            self.pairs.truncate(start);
            return Err(e);
        }
        if let Some(cache) = &mut self.shapes {
            if let Some(shape) = cache.get(self.pairs[start..].iter().map(|(k, _)| k)) {
                return Ok(Value::map(Map::shaped(&shape, self.pairs.drain(start..).map(|(_, v)| v))));
            }
        }
        let entries = self.pairs.drain(start..);
        let mut m = Map::with_capacity(entries.len());
        for (k, v) in entries {
            m.insert(k, v);
        }
        Ok(Value::map(m))
    }

    fn object_entries(&mut self, depth: usize) -> PR<()> {
        loop {
            if self.s.bytes().get(self.i) != Some(&b'"') {
                return Err(self.unexpected("in an object (expected a string key)"));
            }
            let k = self.key()?;
            self.ws()?;
            if self.s.bytes().get(self.i) != Some(&b':') {
                return Err(self.unexpected("in an object (expected ':')"));
            }
            self.i += 1;
            self.ws()?;
            let v = self.value(depth)?;
            self.pairs.push((k, v));
            self.ws()?;
            match self.s.bytes().get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    self.ws()?;
                }
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(self.unexpected("in an object (expected ',' or '}')")),
            }
        }
    }

    /// An object key: shared with earlier equal keys when it has no escapes.
    fn key(&mut self) -> PR<Bytes> {
        let s = self.s.bytes();
        let start = self.i + 1;
        let mut j = start;
        while j < s.len() {
            let c = s[j];
            if c == b'"' {
                let k = &s[start..j];
                self.i = j + 1;
                if let Some(shared) = self.keys.get(k) {
                    return Ok(shared.clone());
                }
                let b = bytes(k);
                if self.keys.len() < MAX_SHARED_KEYS {
                    self.keys.insert(k.into(), b.clone());
                }
                return Ok(b);
            }
            if c == b'\\' || c < 0x20 {
                break;
            }
            j += 1;
        }
        Ok(Rc::new(LStr::from(self.string()?)))
    }

    /// A string value: shared with an equal short string met lately (`intern`).
    fn string_value(&mut self) -> PR<Bytes> {
        let s = self.s.bytes();
        let start = self.i + 1;
        let mut j = start;
        while j < s.len() {
            let c = s[j];
            if c == b'"' {
                self.i = j + 1;
                return Ok(self.intern.get(&s[start..j]));
            }
            if c == b'\\' || c < 0x20 {
                break;
            }
            j += 1;
        }
        let b = self.string()?;
        if b.len() <= INTERN_MAX {
            Ok(self.intern.get(&b))
        } else {
            Ok(Rc::new(LStr::from(b)))
        }
    }

    /// string -> '"' ( unescaped | '\' escape )* '"'; the input is known to be UTF-8.
    fn string(&mut self) -> PR<Vec<u8>> {
        if T::STREAM {
            // The whole token in the buffer: nothing below reads more.
            self.ensure_string()?;
        }
        self.i += 1;
        let s = self.s.bytes();
        let start = self.i;
        let mut j = start;
        while j < s.len() {
            let c = s[j];
            if c == b'"' {
                self.i = j + 1;
                return Ok(s[start..j].to_vec());
            }
            if c == b'\\' || c < 0x20 {
                break;
            }
            j += 1;
        }
        // Slow path: escapes.
        let mut buf = std::mem::take(&mut self.buf);
        buf.clear();
        buf.extend_from_slice(&s[start..j]);
        let r = self.string_slow(j, &mut buf);
        let out = r.map(|()| buf.as_slice().to_vec());
        self.buf = buf;
        out
    }

    fn string_slow(&mut self, mut j: usize, buf: &mut Vec<u8>) -> PR<()> {
        loop {
            let Some(&c) = self.s.bytes().get(j) else {
                self.i = j;
                return Err(self.unexpected("in a string"));
            };
            match c {
                b'"' => {
                    self.i = j + 1;
                    return Ok(());
                }
                b'\\' => {
                    let Some(&e) = self.s.bytes().get(j + 1) else {
                        self.i = j + 1;
                        return Err(self.unexpected("in a string escape"));
                    };
                    let simple = match e {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 0x08,
                        b'f' => 0x0c,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => 0,
                        _ => {
                            self.i = j + 1;
                            return Err(self.unexpected("in a string escape"));
                        }
                    };
                    if e != b'u' {
                        buf.push(simple);
                        j += 2;
                        continue;
                    }
                    let hi = self.hex4(j + 2)?;
                    j += 6;
                    let cp = if (0xD800..0xDC00).contains(&hi) {
                        let s = self.s.bytes();
                        if s.get(j) == Some(&b'\\') && s.get(j + 1) == Some(&b'u') {
                            let lo = self.hex4(j + 2)?;
                            if !(0xDC00..0xE000).contains(&lo) {
                                return Err(self.syntax("a high surrogate escape not followed by a low one", j));
                            }
                            j += 6;
                            0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                        } else {
                            return Err(self.syntax("a high surrogate escape not followed by a low one", j));
                        }
                    } else if (0xDC00..0xE000).contains(&hi) {
                        return Err(self.syntax("a lone low surrogate escape", j - 6));
                    } else {
                        hi
                    };
                    let ch = char::from_u32(cp).unwrap_or('\u{FFFD}');
                    buf.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes());
                }
                0..=0x1f => {
                    self.i = j;
                    return Err(self.unexpected("in a string (control characters must be escaped)"));
                }
                _ => {
                    // Copy the run up to the next quote, backslash or control character.
                    let s = self.s.bytes();
                    let start = j;
                    while j < s.len() && s[j] != b'"' && s[j] != b'\\' && s[j] >= 0x20 {
                        j += 1;
                    }
                    buf.extend_from_slice(&s[start..j]);
                }
            }
        }
    }

    fn hex4(&mut self, at: usize) -> PR<u32> {
        let mut v = 0u32;
        for k in 0..4 {
            let d = match self.s.bytes().get(at + k) {
                Some(&c @ b'0'..=b'9') => c - b'0',
                Some(&c @ b'a'..=b'f') => c - b'a' + 10,
                Some(&c @ b'A'..=b'F') => c - b'A' + 10,
                _ => {
                    self.i = at + k;
                    return Err(self.unexpected("in a \\u escape (expected 4 hex digits)"));
                }
            };
            v = v * 16 + d as u32;
        }
        Ok(v)
    }

    /// number -> '-'? ( '0' | [1-9][0-9]* ) ( '.' [0-9]+ )? ( [eE] [+-]? [0-9]+ )?
    fn number(&mut self) -> PR<f64> {
        if T::STREAM {
            self.ensure_number()?;
        }
        let s = self.s.bytes();
        let start = self.i;
        let mut j = start;
        let neg = s[j] == b'-';
        if neg {
            j += 1;
        }
        let digits_start = j;
        match s.get(j) {
            Some(b'0') => j += 1,
            Some(b'1'..=b'9') => {
                while j < s.len() && s[j].is_ascii_digit() {
                    j += 1;
                }
            }
            _ => {
                self.i = j;
                return Err(self.unexpected("in a number"));
            }
        }
        let int_end = j;
        let mut simple = true;
        if s.get(j) == Some(&b'.') {
            j += 1;
            if !s.get(j).is_some_and(u8::is_ascii_digit) {
                self.i = j;
                return Err(self.unexpected("in a number (expected a digit after '.')"));
            }
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            simple = false;
        }
        if matches!(s.get(j), Some(b'e' | b'E')) {
            j += 1;
            if matches!(s.get(j), Some(b'+' | b'-')) {
                j += 1;
            }
            if !s.get(j).is_some_and(u8::is_ascii_digit) {
                self.i = j;
                return Err(self.unexpected("in a number (expected an exponent digit)"));
            }
            while j < s.len() && s[j].is_ascii_digit() {
                j += 1;
            }
            simple = false;
        }
        self.i = j;
        if simple && int_end - digits_start <= 15 {
            let mut n: u64 = 0;
            for &d in &s[digits_start..int_end] {
                n = n * 10 + (d - b'0') as u64;
            }
            let x = n as f64;
            return Ok(if neg { -x } else { x });
        }
        // The slice is ASCII, so this cannot fail; std's parse rounds correctly.
        let text = std::str::from_utf8(&s[start..j]).unwrap_or("0");
        let x: f64 = text.parse().unwrap_or(f64::NAN);
        if !x.is_finite() {
            return Err(self.syntax("number out of range (not finite as a binary64)", start));
        }
        Ok(x)
    }
}

/// Line and column (1-based; the column counts bytes) of a byte offset.
fn line_col(text: &[u8], at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.iter().filter(|&&c| c == b'\n').count() + 1;
    let col = at - before.iter().rposition(|&c| c == b'\n').map(|p| p + 1).unwrap_or(0) + 1;
    (line, col)
}

// ----------------------------------------------------------------------
// Writing
// ----------------------------------------------------------------------

/// Why writing stopped.
#[derive(Debug, PartialEq)]
pub enum WriteError {
    /// A value JSON cannot hold (a handle, invalid UTF-8).
    Value(String),
    /// A JSON limit (depth, nodes, bytes).
    Limit(String),
    /// The run's deadline passed while writing.
    Time,
    /// The sink of `write_chunks` refused a chunk (it keeps why).
    Sink,
}

struct Writer<'a> {
    lim: JsonLimits,
    out: Vec<u8>,
    indent: &'a [u8],
    nodes: usize,
    deadline: Option<std::time::Instant>,
    /// Where the text goes in chunks (`write_chunks`): `out` is handed to it and emptied
    /// once it holds `WRITE_CHUNK` bytes. None: all of it stays in `out`.
    sink: Option<&'a mut dyn FnMut(&[u8]) -> Result<(), ()>>,
    /// Bytes handed to the sink so far.
    flushed: usize,
}

/// The chunk `write_chunks` hands on (and the most it holds besides one string or number).
const WRITE_CHUNK: usize = 64 * 1024;

type WR = Result<(), WriteError>;

/// Write `v` as JSON text: compact when `indent` is empty, else laid out as
/// JavaScript's `JSON.stringify(v, null, indent)`.
pub fn stringify(v: &Value, indent: &[u8]) -> Result<Vec<u8>, WriteError> {
    stringify_until(v, indent, None, JsonLimits::default())
}

/// `stringify`, stopping with `WriteError::Time` once `deadline` has passed.
pub fn stringify_until(
    v: &Value,
    indent: &[u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
) -> Result<Vec<u8>, WriteError> {
    let mut w = Writer { out: Vec::new(), indent, nodes: 0, lim, deadline, sink: None, flushed: 0 };
    w.value(v, 0)?;
    if w.out.len() > lim.bytes {
        return Err(too_long(lim.bytes));
    }
    Ok(w.out)
}

/// `stringify_until`, handing the text to `sink` in chunks of about `WRITE_CHUNK` bytes
/// instead of holding it: its length. The same text and the same errors, found in the
/// same order (a sink that refuses is `WriteError::Sink`; it keeps why).
pub fn write_chunks(
    v: &Value,
    indent: &[u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), ()>,
) -> Result<usize, WriteError> {
    let mut w = Writer {
        out: Vec::with_capacity(WRITE_CHUNK + 1024),
        indent,
        nodes: 0,
        lim,
        deadline,
        sink: Some(sink),
        flushed: 0,
    };
    w.value(v, 0)?;
    if w.total() > lim.bytes {
        return Err(too_long(lim.bytes));
    }
    w.flush()?;
    Ok(w.flushed)
}

fn too_long(max: usize) -> WriteError {
    WriteError::Limit(format!("JSON text of more than {max} bytes"))
}

/// Bytes that need escaping in a JSON string: controls, quote, backslash.
static ESCAPE: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    while i < 0x20 {
        t[i] = true;
        i += 1;
    }
    t[b'"' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// Append a JSON string literal for `s`, which must be valid UTF-8 (checked by callers).
/// Non-ASCII characters are written as they are; controls as `\n`-style or `\u00XX`.
pub fn write_string(out: &mut Vec<u8>, s: &[u8]) {
    out.reserve(s.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        if !ESCAPE[c as usize] {
            continue;
        }
        out.extend_from_slice(&s[start..i]);
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[(c >> 4) as usize]);
                out.push(HEX[(c & 15) as usize]);
            }
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

impl Writer<'_> {
    #[inline]
    fn count(&mut self) -> WR {
        self.nodes += 1;
        if self.nodes > self.lim.nodes {
            return Err(WriteError::Limit(format!("JSON document of more than {} values", self.lim.nodes)));
        }
        if self.nodes.is_multiple_of(LONG_OP_CHECK_ITEMS) && crate::meter::past(self.deadline) {
            return Err(WriteError::Time);
        }
        if self.total() > self.lim.bytes {
            return Err(too_long(self.lim.bytes));
        }
        if self.out.len() >= WRITE_CHUNK && self.sink.is_some() {
            self.flush()?;
        }
        Ok(())
    }

    /// Bytes written so far.
    #[inline]
    fn total(&self) -> usize {
        self.flushed + self.out.len()
    }

    /// Hand what `out` holds to the sink.
    #[cold]
    #[inline(never)]
    fn flush(&mut self) -> WR {
        if let Some(sink) = &mut self.sink {
            if !self.out.is_empty() {
                sink(&self.out).map_err(|()| WriteError::Sink)?;
                self.flushed += self.out.len();
                self.out.clear();
            }
        }
        Ok(())
    }

    fn text(&mut self, s: &[u8], what: &str) -> WR {
        if self.total() + s.len() + 2 > self.lim.bytes {
            return Err(too_long(self.lim.bytes));
        }
        if std::str::from_utf8(s).is_err() {
            return Err(WriteError::Value(format!("{what} is not valid UTF-8")));
        }
        write_string(&mut self.out, s);
        Ok(())
    }

    fn newline(&mut self, level: usize) {
        if !self.indent.is_empty() {
            self.out.push(b'\n');
            for _ in 0..level {
                self.out.extend_from_slice(self.indent);
            }
        }
    }

    fn value(&mut self, v: &Value, depth: usize) -> WR {
        self.count()?;
        match v {
            Value::Unset | Value::Nil => self.out.extend_from_slice(b"null"),
            Value::Bool(true) => self.out.extend_from_slice(b"true"),
            Value::Bool(false) => self.out.extend_from_slice(b"false"),
            Value::Num(n) => fmt_num(*n, &mut self.out),
            Value::Str(s) => self.text(s, "a string")?,
            Value::Handle(h) => {
                return Err(WriteError::Value(format!("a {} handle cannot be written as JSON", h.kind.name())))
            }
            Value::List(l) => {
                if depth + 1 > self.lim.depth {
                    return Err(WriteError::Limit(format!("JSON nested more than {} deep", self.lim.depth)));
                }
                self.out.push(b'[');
                if l.is_empty() {
                    self.out.push(b']');
                    return Ok(());
                }
                for (i, item) in l.items().iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.newline(depth + 1);
                    self.value(item, depth + 1)?;
                }
                self.newline(depth);
                self.out.push(b']');
            }
            Value::Map(m) => {
                if depth + 1 > self.lim.depth {
                    return Err(WriteError::Limit(format!("JSON nested more than {} deep", self.lim.depth)));
                }
                self.out.push(b'{');
                if m.is_empty() {
                    self.out.push(b'}');
                    return Ok(());
                }
                for (i, (k, item)) in m.iter().enumerate() {
                    if i > 0 {
                        self.out.push(b',');
                    }
                    self.newline(depth + 1);
                    self.text(k, "a map key")?;
                    self.out.push(b':');
                    if !self.indent.is_empty() {
                        self.out.push(b' ');
                    }
                    self.value(item, depth + 1)?;
                }
                self.newline(depth);
                self.out.push(b'}');
            }
        }
        Ok(())
    }
}

// ----------------------------------------------------------------------
// Builtins
// ----------------------------------------------------------------------

fn json_parse(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_str("json.parse", args, 0)?;
    let r = parse_within(s, it.meter.deadline, JsonLimits::of(&it.lim), Some(&it.heap));
    parsed(it, r, "json.parse", s, true)
}

/// A parse's value (checked against the frame limit) or its failure: the limit it
/// reached, or the syntax error at its line and column (`whole`: a document of many
/// lines) or column (one line of JSON Lines), after `prefix`.
fn parsed(it: &Host, r: Result<Value, ParseError>, prefix: &str, text: &[u8], whole: bool) -> R<Value> {
    match r {
        Ok(v) => {
            it.check_value(&v)?;
            Ok(v)
        }
        Err(ParseError::Memory(m)) => Err(it.limit(LimitKind::Memory, m)),
        Err(ParseError::Limit(m)) => Err(it.limit(LimitKind::Json, format!("{prefix}: {m}"))),
        Err(ParseError::Time) => Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached")),
        Err(ParseError::Syntax(m, at)) => {
            let (line, col) = line_col(text, at);
            let at = if whole { format!("line {line}, column {col}") } else { format!("column {col}") };
            Err(it.err(ErrKind::Parse, format!("{prefix}: {m} at {at}")))
        }
        Err(ParseError::SyntaxAt(m, line, col)) => {
            Err(it.err(ErrKind::Parse, format!("{prefix}: {m} at line {line}, column {col}")))
        }
        // The caller takes the feed's own failure first.
        Err(ParseError::Feed) => Err(it.err(ErrKind::Io, format!("{prefix}: reading failed"))),
    }
}

/// The indent argument at `pos` (as `json.stringify` takes it).
fn indent_arg(it: &Host, name: &str, args: &[Value], pos: usize) -> R<Vec<u8>> {
    Ok(match it.opt(args, pos) {
        None => Vec::new(),
        Some(Value::Num(_)) => {
            let n = it.arg_int(name, args, pos, 0.0, 10.0)? as usize;
            vec![b' '; n]
        }
        Some(Value::Str(s)) => {
            if s.len() > 10 || std::str::from_utf8(s).is_err() {
                return Err(
                    it.err(ErrKind::Value, format!("{name}: an indent string must be valid UTF-8 of at most 10 bytes"))
                );
            }
            s.to_vec()
        }
        Some(other) => return Err(it.type_err(name, pos, "a number or a string", other)),
    })
}

/// The length of the text `json.stringify` would give, and every error it would give,
/// without holding the text (`write_chunks` into nothing): for `json.write` and
/// `json.print`, which check their budgets before the first byte goes out.
fn measure_text(it: &mut Host, name: &str, v: &Value, indent: &[u8]) -> R<usize> {
    match write_chunks(v, indent, it.meter.deadline, JsonLimits::of(&it.lim), &mut |_| Ok(())) {
        Ok(n) => Ok(n),
        Err(WriteError::Value(m)) => {
            it.work(STRINGIFY.units(v.acct() as u64, 0))?;
            Err(it.err(ErrKind::Value, format!("{name}: {m}")))
        }
        Err(WriteError::Limit(m)) => Err(it.limit(LimitKind::Json, format!("{name}: {m}"))),
        Err(WriteError::Time) => Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached")),
        Err(WriteError::Sink) => Err(it.err(ErrKind::Io, format!("{name}: the text could not be written"))),
    }
}

/// The second pass of `json.write` and `json.print`: the text again, into `sink`.
fn fill_text(
    v: &Value,
    indent: &[u8],
    deadline: Option<std::time::Instant>,
    lim: JsonLimits,
    sink: &mut dyn FnMut(&[u8]) -> Result<(), ()>,
) -> super::files::Filled {
    use super::files::Filled;
    match write_chunks(v, indent, deadline, lim, sink) {
        Ok(_) => Filled::Done,
        Err(WriteError::Time) => Filled::Time,
        Err(_) => Filled::Refused,
    }
}

/// json.print: the text made twice (its length first, then its bytes) and written once
/// to stdout's buffer, per byte of the text (release build, 2026-12-04, `bench/work.py`:
/// 1.34 ns a unit).
const WRITE: Cost = Cost::custom(4.0, 0.0);

/// json.write: the same, and the bytes written to the file (the kernel's copy into the
/// page cache: `bench/work.py` measured 2.2 to 2.8 ns a unit at 4 a byte).
const WRITE_FILE: Cost = Cost::custom(8.0, 0.0);

/// `json.write(path, v[, indent])`: `file.write(path, json.stringify(v[, indent]))`
/// without holding the text. The text's length is found first (every error
/// `json.stringify` gives, found there, writes nothing), then the file-write limits are
/// checked as `file.write` checks them, the file opened and truncated, the length
/// charged, and the text written in chunks of 64 KiB.
fn json_write(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.write";
    let p = it.arg_str(NAME, args, 0)?.clone();
    let indent = indent_arg(it, NAME, args, 2)?;
    let n = measure_text(it, NAME, &args[1], &indent)?;
    it.work(WRITE_FILE.units(n as u64, 0))?;
    let (deadline, lim) = (it.meter.deadline, JsonLimits::of(&it.lim));
    let v = &args[1];
    super::files::write_streamed(it, NAME, &p, n, &mut |sink| fill_text(v, &indent, deadline, lim, sink))?;
    Ok(Value::Nil)
}

/// `json.print(v[, indent])`: `print(json.stringify(v[, indent]))` without holding the
/// text: the same limits (one print's bytes, the newline excluded; the run's stdout
/// budget, charged with the newline before anything is written), the text written in
/// chunks.
fn json_print(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.print";
    let indent = indent_arg(it, NAME, args, 1)?;
    let n = measure_text(it, NAME, &args[0], &indent)?;
    it.work(WRITE.units(n as u64, 0))?;
    if n > it.lim.n(L::StdoutPrint) {
        return Err(it.limit(
            LimitKind::Stdout,
            // (as `print` of the text says it)
            format!("text of more than {max_print_bytes} bytes", max_print_bytes = it.lim.n(L::StdoutPrint)),
        ));
    }
    it.budgets.stdout.charge(n as u64 + 1).map_err(|e| it.budget_fail(e))?;
    let (deadline, lim) = (it.meter.deadline, JsonLimits::of(&it.lim));
    let mut failed = None;
    let out = &mut it.out;
    let filled = fill_text(&args[0], &indent, deadline, lim, &mut |chunk| {
        out.write(chunk).map_err(|m| {
            failed = Some(m);
        })
    });
    if let Some(m) = failed {
        return Err(it.err(ErrKind::Io, m));
    }
    match filled {
        super::files::Filled::Done => {}
        super::files::Filled::Time => return Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached")),
        super::files::Filled::Refused => {
            return Err(it.err(ErrKind::Io, format!("{NAME}: the text could not be written")))
        }
    }
    it.out.write(b"\n").map_err(|m| it.err(ErrKind::Io, m))?;
    Ok(Value::Nil)
}

fn json_stringify(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.stringify";
    let indent = indent_arg(it, NAME, args, 1)?;
    match stringify_until(&args[0], &indent, it.meter.deadline, JsonLimits::of(&it.lim)) {
        Ok(out) => Ok(Value::str(out)),
        Err(WriteError::Value(m)) => {
            // It failed part way through: charge the value's accounted size, a bound on
            // what it wrote before it stopped.
            it.work(STRINGIFY.units(args[0].acct() as u64, 0))?;
            Err(it.err(ErrKind::Value, format!("{NAME}: {m}")))
        }
        Err(WriteError::Limit(m)) => Err(it.limit(LimitKind::Json, format!("{NAME}: {m}"))),
        Err(WriteError::Time) => Err(it.limit(LimitKind::Time, "wall-clock deadline (--max-time) reached")),
        Err(WriteError::Sink) => Err(it.err(ErrKind::Io, format!("{NAME}: the text could not be written"))),
    }
}

/// json.next: each line read, at json.parse's rate plus the read (charged as it goes).
const NEXT: Cost = Cost::custom(21.0, 0.0);

/// `json.next(source)`: the next value of a JSON Lines stream, nil at its end. The source
/// is `"-"` (stdin, within the stdin budgets), a file reader (`file.open`, within the
/// streaming-read budgets) or a socket (`net.read_line`'s budgets). One line is held at
/// a time, so a filter over a stream of any length runs in constant memory; blank lines
/// are skipped; a line that is not one JSON value is a `parse` error naming its number.
fn json_next(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.next";
    enum Src {
        Stdin,
        File(u32),
        Sock(u32),
    }
    let src = match &args[0] {
        Value::Str(s) if s.as_slice() == b"-" => Src::Stdin,
        Value::Handle(h) if h.kind == HandleKind::File => {
            Src::File(super::files::reader_id(it, NAME, &args[0], HandleKind::File)?)
        }
        Value::Handle(h) if h.kind == HandleKind::Socket => Src::Sock(h.id),
        Value::Str(_) => {
            return Err(
                it.err(ErrKind::Value, format!("{NAME}: the source is \"-\" (stdin), a file reader or a socket"))
            )
        }
        other => return Err(it.type_err(NAME, 0, "\"-\", a file reader or a socket", other)),
    };
    loop {
        let (line, n) = match src {
            Src::Stdin => {
                let l = super::stdin::next_stdin_line(it)?;
                (l, it.stdin.lines)
            }
            Src::File(id) => {
                let l = super::files::next_line(it, NAME, id)?;
                (l, super::files::lines_read(it, id))
            }
            Src::Sock(id) => {
                let v = super::net::read_line(it, &mut [args[0].clone()])?;
                let l = match v {
                    Value::Str(s) => Some(s.to_vec()),
                    _ => None,
                };
                (l, super::net::lines_read(it, id))
            }
        };
        let Some(line) = line else { return Ok(Value::Nil) };
        it.work(NEXT.units(line.len() as u64, 0))?;
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            continue;
        }
        let r = parse_within(&line, it.meter.deadline, JsonLimits::of(&it.lim), Some(&it.heap));
        return parsed(it, r, &format!("{NAME}: line {n}"), &line, false);
    }
}

/// json.read: each chunk read, at json.parse's rate (the text is read once and parsed
/// once, as `json.parse(file.read(path))` reads and parses it).
const READ: Cost = Cost::custom(20.0, 0.0);

/// `json.read`'s source: stdin, or a file reader.
enum ReadSrc {
    Stdin,
    File(u32),
}

/// The chunks of a `json.read`: each charged to its read budget and to the work meter as
/// it comes; the deadline and the heap looked at after each.
struct HostFeed<'h> {
    it: &'h mut Host,
    src: ReadSrc,
    fail: Option<crate::error::Fail>,
}

impl Feed for HostFeed<'_> {
    fn chunk(&mut self, buf: &mut Vec<u8>) -> Result<bool, ()> {
        let it = &mut *self.it;
        let r = match self.src {
            ReadSrc::Stdin => super::stdin::next_chunk(it, buf),
            ReadSrc::File(id) => super::files::next_chunk(it, "json.read", id, buf),
        };
        let r = r.and_then(|n| {
            it.work(READ.units(n as u64, 0))?;
            it.check_time()?;
            it.check_memory()?;
            Ok(n)
        });
        match r {
            Ok(n) => Ok(n > 0),
            Err(f) => {
                self.fail = Some(f);
                Err(())
            }
        }
    }
    fn heap(&self) -> Option<&crate::memory::HeapMeter> {
        Some(&self.it.heap)
    }
}

/// `json.read(source)`: the one JSON document of a file reader (`file.open`) or of stdin
/// (`"-"`), read to its end in chunks: the text is never held whole, only the token being
/// read and one chunk. The same value and the same errors as `json.parse` of the whole
/// text (a syntax error's line and column; the JSON limits; invalid UTF-8 and a text
/// over the `json` limit reported whatever else it holds); the bytes count against the
/// reader's budget (`file_reads`, or `stdin`).
fn json_read(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "json.read";
    let src = match &args[0] {
        Value::Str(s) if s.as_slice() == b"-" => ReadSrc::Stdin,
        Value::Handle(h) if h.kind == HandleKind::File => {
            ReadSrc::File(super::files::reader_id(it, NAME, &args[0], HandleKind::File)?)
        }
        Value::Str(_) => {
            return Err(it.err(
                ErrKind::Value,
                format!("{NAME}: the source is \"-\" (stdin) or a file reader (file.open(path))"),
            ))
        }
        other => return Err(it.type_err(NAME, 0, "\"-\" or a file reader", other)),
    };
    let (deadline, lim) = (it.meter.deadline, JsonLimits::of(&it.lim));
    let mut feed = HostFeed { it, src, fail: None };
    let r = read_stream(&mut feed, deadline, lim);
    if let Some(f) = feed.fail.take() {
        return Err(f);
    }
    parsed(it, r, NAME, b"", true)
}

/// json.stringify: the bytes of the text written.
const STRINGIFY: Cost = Cost::bytes(2.0);

pub const TABLE: &[Builtin] = &[
    b("json.parse", "json.parse(s)", 1, 1, Cost::bytes(20.0), json_parse),
    b("json.stringify", "json.stringify(v[, indent])", 1, 2, STRINGIFY, json_stringify),
    b("json.next", "json.next(source)", 1, 1, NEXT, json_next),
    b("json.read", "json.read(source)", 1, 1, READ, json_read),
    gated("json.write", "json.write(path, v[, indent])", 2, 3, Cap::Files, WRITE_FILE, json_write),
    b("json.print", "json.print(v[, indent])", 1, 2, WRITE, json_print),
];

#[cfg(test)]
mod tests {
    const MAX_JSON_BYTES: usize = LIMITS[L::Json as usize].default as usize;
    const MAX_JSON_DEPTH: usize = LIMITS[L::JsonDepth as usize].default as usize;
    const MAX_JSON_NODES: usize = LIMITS[L::JsonNodes as usize].default as usize;

    use super::*;

    #[test]
    fn long_parses_and_writes_look_at_the_deadline() {
        let doc = format!("[{}0]", "0,".repeat(10_000));
        let past = Some(crate::meter::now());
        assert!(matches!(parse_until(doc.as_bytes(), past, JsonLimits::default()), Err(ParseError::Time)));
        let v = parse(doc.as_bytes()).unwrap();
        assert!(matches!(stringify_until(&v, b"", past, JsonLimits::default()), Err(WriteError::Time)));
        // Below one check interval, the clock is not looked at.
        assert!(parse_until(b"[1,2,3]", past, JsonLimits::default()).is_ok());
    }

    fn ok(s: &str) -> Value {
        parse(s.as_bytes()).unwrap_or_else(|e| panic!("{s:?}: {e:?}"))
    }

    fn round(s: &str) -> String {
        String::from_utf8(stringify(&ok(s), b"").unwrap()).unwrap()
    }

    fn syntax(s: &[u8]) -> bool {
        matches!(parse(s), Err(ParseError::Syntax(..)))
    }

    fn limit(s: &[u8]) -> bool {
        matches!(parse(s), Err(ParseError::Limit(..)))
    }

    #[test]
    fn scalars_and_containers() {
        assert_eq!(round(" [1, -0, 2.5e3, true, false, null, \"x\"] "), r#"[1,0,2500,true,false,null,"x"]"#);
        assert_eq!(round(r#"{"b":1,"a":{"c":[]},"b":2}"#), r#"{"b":2,"a":{"c":[]}}"#);
        assert_eq!(round("123456789012345678901234567890"), "1.2345678901234568e+29");
        assert_eq!(round("9007199254740993"), "9007199254740992");
        assert_eq!(round("0.1"), "0.1");
        assert_eq!(round("1E-7"), "1e-7");
        assert_eq!(round("-123"), "-123");
    }

    #[test]
    fn strings_and_escapes() {
        assert_eq!(round(r#""a\"b\\c\/d\b\f\n\r\t""#), r#""a\"b\\c/d\b\f\n\r\t""#);
        assert_eq!(round(r#""\u0041\u00e9\u20AC""#), "\"Aé€\"");
        assert_eq!(round(r#""\ud83d\ude00""#), "\"😀\"");
        assert_eq!(round(r#""\u0000\u001f""#), r#""\u0000\u001f""#);
        assert_eq!(round("\"é😀\""), "\"é😀\"");
        assert!(syntax(br#""\ud83d""#));
        assert!(syntax(br#""\ud83dx""#));
        assert!(syntax(br#""\ud83d\u0041""#));
        assert!(syntax(br#""\ude00""#));
        assert!(syntax(br#""\x""#));
        assert!(syntax(br#""\u12""#));
        assert!(syntax(b"\"a\tb\""));
        assert!(syntax(b"\"abc"));
        assert!(syntax(b"\"\xff\""));
    }

    #[test]
    fn strictness() {
        for bad in [
            "",
            " ",
            "[1,]",
            "{\"a\":1,}",
            "[1 2]",
            "01",
            "-",
            "1.",
            ".5",
            "+1",
            "1e",
            "1e+",
            "NaN",
            "Infinity",
            "-Infinity",
            "[1]x",
            "[1] [2]",
            "/* c */ 1",
            "1 // c",
            "{'a':1}",
            "{a:1}",
            "tru",
            "nul",
            "[",
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "\u{feff}1",
            "1e400",
            "-1e400",
            "0x10",
            "[\u{0c}]",
        ] {
            assert!(syntax(bad.as_bytes()), "{bad:?} should be a syntax error");
        }
        assert_eq!(round("1e-400"), "0");
    }

    #[test]
    fn depth_bound() {
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(parse(deep(MAX_JSON_DEPTH).as_bytes()).is_ok());
        assert!(limit(deep(MAX_JSON_DEPTH + 1).as_bytes()));
        assert!(limit("[".repeat(100_000).as_bytes()));
        let obj = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        assert!(parse(obj(MAX_JSON_DEPTH).as_bytes()).is_ok());
        assert!(limit(obj(MAX_JSON_DEPTH + 1).as_bytes()));
        // Writing: the same bound.
        let mut v = Value::list(vec![]);
        for _ in 1..MAX_JSON_DEPTH {
            v = Value::list(vec![v]);
        }
        assert!(stringify(&v, b"").is_ok());
        let v = Value::list(vec![v]);
        assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
    }

    #[test]
    fn node_bound() {
        let list = |n: usize| format!("[{}]", vec!["0"; n].join(","));
        assert!(parse(list(MAX_JSON_NODES - 1).as_bytes()).is_ok());
        assert!(limit(list(MAX_JSON_NODES).as_bytes()));
        let v = Value::list(vec![Value::Nil; MAX_JSON_NODES - 1]);
        assert!(stringify(&v, b"").is_ok());
        let v = Value::list(vec![Value::Nil; MAX_JSON_NODES]);
        assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
    }

    #[test]
    fn byte_bound() {
        let s = format!("\"{}\"", "a".repeat(MAX_JSON_BYTES - 2));
        assert!(parse(s.as_bytes()).is_ok());
        let s = format!("\"{}\"", "a".repeat(MAX_JSON_BYTES - 1));
        assert!(limit(s.as_bytes()));
        let v = Value::str(vec![b'a'; MAX_JSON_BYTES - 2]);
        assert_eq!(stringify(&v, b"").unwrap().len(), MAX_JSON_BYTES);
        let v = Value::str(vec![b'a'; MAX_JSON_BYTES - 1]);
        assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
        let v = Value::str(vec![b'\n'; MAX_JSON_BYTES / 2 - 1]);
        assert_eq!(stringify(&v, b"").unwrap().len(), MAX_JSON_BYTES);
        let v = Value::str(vec![b'\n'; MAX_JSON_BYTES / 2]);
        assert!(matches!(stringify(&v, b""), Err(WriteError::Limit(_))));
    }

    #[test]
    fn indented_layout() {
        let v = ok(r#"{"a":[1,{"b":null}],"c":{},"d":[]}"#);
        let out = String::from_utf8(stringify(&v, b"  ").unwrap()).unwrap();
        assert_eq!(out, "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": {},\n  \"d\": []\n}");
        let out = String::from_utf8(stringify(&ok("[1,2]"), b"\t").unwrap()).unwrap();
        assert_eq!(out, "[\n\t1,\n\t2\n]");
    }

    #[test]
    fn refused_values() {
        assert!(matches!(stringify(&Value::str(vec![0xff]), b""), Err(WriteError::Value(_))));
        let mut m = Map::new();
        m.insert(crate::value::bytes(&[0xc3]), Value::Nil);
        assert!(matches!(stringify(&Value::map(m), b""), Err(WriteError::Value(_))));
        let h = Value::Handle(Handle { kind: HandleKind::File, id: 1 });
        assert!(matches!(stringify(&Value::list(vec![h]), b""), Err(WriteError::Value(_))));
    }

    #[test]
    fn mutations_never_panic_and_round_trip() {
        let seeds: [&[u8]; 5] = [
            br#"{"a":[1,2.5e-3,-0,true,false,null],"b":{"c":"\u00e9\ud83d\ude00\n"}}"#,
            b"[[[[[]]]],{},\"x\",123456789012345678901234567890]",
            "{\"\u{e9}\":\"\u{1F600}\",\"k\":[1e308,-1E-308]}".as_bytes(),
            b"  [ 1 , [ 2 , [ 3 ] ] , { \"a\" : { \"b\" : null } } ]  ",
            b"\"\\\"\\/\\b\\f\\t\"",
        ];
        let mut x: u64 = 0x9E3779B97F4A7C15;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let alphabet = b"[]{},:\"\\/0123456789.eE+-tfnulrsaxu \t\n\r\x00\x1f\xc3\xa9\xff";
        for seed in seeds {
            for _ in 0..3000 {
                let mut doc = seed.to_vec();
                for _ in 0..(next() % 4 + 1) {
                    let i = (next() as usize) % (doc.len() + 1);
                    match next() % 3 {
                        0 if i < doc.len() => {
                            doc.remove(i);
                        }
                        1 => doc.insert(i, alphabet[(next() as usize) % alphabet.len()]),
                        _ => doc.truncate(i),
                    }
                }
                if let Ok(v) = parse(&doc) {
                    let text = stringify(&v, b"").expect("a parsed value can be written");
                    let back = parse(&text).expect("written text parses");
                    assert!(equals(&v, &back), "{:?}", String::from_utf8_lossy(&doc));
                }
            }
        }
    }

    #[test]
    fn objects_of_one_key_sequence_share_a_shape_in_large_documents() {
        // records of two sequences in turn, nested ones, one with a key twice (the last
        // value wins, as before), one of nine keys, empty ones
        let mut parts = Vec::new();
        for i in 0..3000 {
            parts.push(match i % 5 {
                0 => format!(r#"{{"a":{i},"b":{{"x":1,"y":[{i}]}}}}"#),
                1 => format!(r#"{{"b":{i},"a":"s"}}"#),
                2 => format!(r#"{{"a":{i},"a":2}}"#),
                3 => r#"{"1":1,"2":2,"3":3,"4":4,"5":5,"6":6,"7":7,"8":8,"9":9}"#.to_string(),
                _ => "{}".to_string(),
            });
        }
        let doc = format!("[{}]", parts.join(","));
        assert!(doc.len() >= INTERN_MIN_TEXT);
        let v = ok(&doc);
        let Value::List(l) = &v else { panic!() };
        let m = |i: usize| match &l.items()[i] {
            Value::Map(m) => m.clone(),
            _ => panic!(),
        };
        for i in [0, 1, 2, 3, 4, 2995, 2996, 2997, 2998, 2999] {
            let r = m(i);
            let keys: Vec<Vec<u8>> = r.keys().map(|k| k.to_vec()).collect();
            match i % 5 {
                0 => {
                    assert_eq!(keys, [b"a".to_vec(), b"b".to_vec()]);
                    assert!(matches!(r.get(b"a"), Some(Value::Num(n)) if *n == i as f64));
                    let Some(Value::Map(inner)) = r.get(b"b") else { panic!() };
                    assert_eq!(inner.is_shaped(), i > 0);
                    assert_eq!(r.is_shaped(), i > 0);
                }
                1 => {
                    assert_eq!(keys, [b"b".to_vec(), b"a".to_vec()]);
                    assert_eq!(r.is_shaped(), i > 1);
                }
                2 => {
                    assert_eq!(keys, [b"a".to_vec()]);
                    assert!(matches!(r.get(b"a"), Some(Value::Num(n)) if *n == 2.0));
                    assert!(!r.is_shaped());
                }
                3 => {
                    assert_eq!(r.len(), 9);
                    assert!(!r.is_shaped());
                }
                _ => assert!(r.is_empty() && !r.is_shaped()),
            }
        }
        // Equal to the same text parsed small (no shapes below `INTERN_MIN_TEXT`).
        for i in [5, 6, 7, 8, 9] {
            let one = ok(&parts[i]);
            assert!(equals(&one, &l.items()[i]), "{}", parts[i]);
        }
    }

    #[test]
    fn equal_small_arrays_of_scalars_share_one_list_in_large_documents() {
        let mut parts = Vec::new();
        for i in 0..3000 {
            parts.push(match i % 6 {
                0 => r#"["a","bb",1,true,null]"#.to_string(),
                1 => "[0]".to_string(),
                2 => "[-0]".to_string(),
                3 => format!("[{i},[1]]"),
                4 => "[1,2,3,4,5,6,7,8,9]".to_string(),
                _ => "[]".to_string(),
            });
        }
        let doc = format!("[{},\"{}\"]", parts.join(","), "x".repeat(INTERN_MIN_TEXT));
        let v = ok(&doc);
        let Value::List(l) = &v else { panic!() };
        let list = |i: usize| match &l.items()[i] {
            Value::List(x) => x.clone(),
            _ => panic!(),
        };
        let distinct = |k: usize| {
            let mut p: Vec<*const List> = (0..500).map(|j| Rc::as_ptr(&list(6 * j + k))).collect();
            p.sort();
            p.dedup();
            p.len()
        };
        // shared: scalars and short strings, `[0]`, `[-0]` (apart from `[0]`), `[]`
        assert_eq!(distinct(0), 1);
        assert_eq!(distinct(1), 1);
        assert_eq!(distinct(2), 1);
        assert!(!Rc::ptr_eq(&list(1), &list(2)));
        assert_eq!(distinct(5), 1);
        // not shared: an array holding an array (its inner `[1]` is), nine items
        assert_eq!(distinct(3), 500);
        assert_eq!(distinct(4), 500);
        let inner = |i: usize| match &list(i).items()[1] {
            Value::List(x) => x.clone(),
            _ => panic!(),
        };
        assert!(Rc::ptr_eq(&inner(3), &inner(9)));
        // the same values as the text parsed without the cache
        for i in 0..12 {
            assert!(equals(&ok(&parts[i]), &l.items()[i]), "{}", parts[i]);
        }
        let Value::Num(z) = list(2).items()[0] else { panic!() };
        assert!(z.is_sign_negative());
    }

    #[test]
    fn repeated_strings_share_one_box_in_large_documents() {
        let rec = r#"{"tag":"active","city":"S\u00e3o Paulo","id":"#;
        let doc: String = format!("[{}]", (0..4000).map(|i| format!("{rec}\"u{i}\"}}")).collect::<Vec<_>>().join(","));
        assert!(doc.len() >= INTERN_MIN_TEXT);
        let v = ok(&doc);
        let Value::List(l) = &v else { panic!() };
        let field = |i: usize, k: &str| match &l.items()[i] {
            Value::Map(m) => match m.get(k.as_bytes()) {
                Some(Value::Str(s)) => s.clone(),
                _ => panic!(),
            },
            _ => panic!(),
        };
        // Equal short values (escaped or not) share, up to a rare eviction from their
        // slot by a distinct value hashed to it; distinct ones stay distinct.
        let boxes = |k: &str| {
            let mut p: Vec<*const LStr> = (0..4000).map(|i| Rc::as_ptr(&field(i, k))).collect();
            p.sort();
            p.dedup();
            p.len()
        };
        assert!(boxes("tag") <= 20, "{}", boxes("tag"));
        assert!(boxes("city") <= 20, "{}", boxes("city"));
        assert_eq!(boxes("id"), 4000);
        assert_eq!(field(0, "city").as_slice(), "São Paulo".as_bytes());
        assert_eq!(field(17, "id").as_slice(), b"u17");
        // Accounting still counts every reference in full (a bound above what is held).
        // The first record is a small map, the others share its key sequence's shape.
        for i in [0, 1, 3999] {
            let Value::Map(m) = &l.items()[i] else { panic!() };
            let strs: usize = ["tag", "city", "id"].iter().map(|k| str_heap(&field(i, k))).sum();
            assert_eq!(m.is_shaped(), i > 0);
            let header = if i == 0 {
                ACCT_SMALL_MAP_HEADER + 3 * ACCT_SMALL_MAP_ENTRY
            } else {
                ACCT_SHAPED_MAP_HEADER + 3 * ACCT_SHAPED_MAP_ENTRY
            };
            assert!(m.acct() >= header + strs);
        }
        // Small documents parse without the cache.
        let Value::List(small) = ok(r#"[{"t":"x"},{"t":"x"}]"#) else { panic!() };
        let t = |i: usize| match &small.items()[i] {
            Value::Map(m) => match m.get(b"t") {
                Some(Value::Str(s)) => s.clone(),
                _ => panic!(),
            },
            _ => panic!(),
        };
        assert!(!Rc::ptr_eq(&t(0), &t(1)));
    }

    #[test]
    fn lists_are_built_at_their_length() {
        let cap = |v: &Value| match v {
            Value::List(l) => {
                (l.acct() - ACCT_LIST_HEADER - l.items().iter().map(Value::heap).sum::<usize>()) / ACCT_SLOT
            }
            _ => panic!(),
        };
        let doc = format!("[[1,2,3],[{}],[]]", vec!["[4,5,6,7,8]"; 1000].join(","));
        let v = ok(&doc);
        assert_eq!(cap(&v), 3);
        let Value::List(l) = &v else { panic!() };
        assert_eq!(cap(&l.items()[0]), 3);
        assert_eq!(cap(&l.items()[1]), 1000);
        let Value::List(inner) = &l.items()[1] else { panic!() };
        assert_eq!(cap(&inner.items()[999]), 5);
        assert_eq!(cap(&l.items()[2]), 0);
        assert_eq!(cap(&ok("[1,2,3,4,5,6,7,8,9]")), 9);
        // A syntax error part way leaves nothing behind.
        assert!(syntax(b"[[1,2],[3,"));
    }

    #[test]
    fn positions() {
        assert_eq!(line_col(b"[1,\n 2,]", 7), (2, 4));
        assert_eq!(line_col(b"x", 0), (1, 1));
        match parse(b"[1,\n  ]") {
            Err(ParseError::Syntax(_, at)) => assert_eq!(line_col(b"[1,\n  ]", at), (2, 3)),
            other => panic!("{other:?}"),
        }
    }

    /// `text` read as a stream in pieces of `n` bytes.
    fn streamed(text: &[u8], n: usize, lim: JsonLimits) -> String {
        let mut feed = Pieces(text.chunks(n.max(1)).map(|c| c.to_vec()).collect());
        outcome(read_stream(&mut feed, None, lim), None)
    }

    fn whole(text: &[u8], lim: JsonLimits) -> String {
        outcome(parse_until(text, None, lim), Some(text))
    }

    #[test]
    fn a_stream_in_any_pieces_parses_as_the_whole_text() {
        let mut docs: Vec<Vec<u8>> = [
            " [1, -0, 2.5e3, true, false, null, \"x\"] ",
            r#"{"b":1,"a":{"c":[]},"b":2}"#,
            "123456789012345678901234567890",
            "\n\n  [1,\n 2,]",
            r#"["a\u00e9\ud83d\ude00\n\t\"\\", "\ud800", "\udc00x"]"#,
            r#"{"k\u0041": "v", "é": "日本"}"#,
            "[1 2]",
            "[1,,2]",
            "tru",
            "nul",
            "[true, fals]",
            "-",
            "1.",
            "1e",
            "01",
            "\"abc",
            "\"ab\\",
            "\"\\u12\"",
            "{\"a\" 1}",
            "[1] x",
            "[\"日本語\" x]",
            "[\"a\u{1}\"]",
            "",
            "   ",
            "[[[[[[[[[[]]]]]]]]]]",
            "1e400",
        ]
        .iter()
        .map(|d| d.as_bytes().to_vec())
        .collect();
        docs.push(b"[\"\xff\"]".to_vec());
        docs.push(b"[1,,2, \"\xe2\x82\"]".to_vec());
        docs.push(b"\"\xe6\x97\xa5".to_vec());
        docs.push(b"[\"x\"]\xe6".to_vec());
        let lim = JsonLimits::default();
        for d in &docs {
            let want = whole(d, lim);
            for n in 1..=9 {
                assert_eq!(streamed(d, n, lim), want, "{:?} in pieces of {n}", String::from_utf8_lossy(d));
            }
        }
        // The limits: bytes (whatever the text holds), depth, nodes.
        let small = JsonLimits { bytes: 20, depth: 3, nodes: 6 };
        for d in [
            &b"[1,2,3,4,5,6,7,8,9,10,11]"[..],
            b"[[[[1]]]]",
            b"[1,2,3,4,5,6]",
            b"[1,2,3,4,5]",
            b"[[[1]]]",
            b"[1,,2,3,4,5,6,7,8,9,10]",
            b"[[[[\xff]]]]",
        ] {
            for n in 1..=5 {
                assert_eq!(streamed(d, n, small), whole(d, small), "{:?}", String::from_utf8_lossy(d));
            }
        }
    }

    #[test]
    fn a_large_stream_shares_as_the_whole_text_does() {
        let mut d = String::from("[\n");
        for i in 0..3000 {
            d.push_str(&format!(
                "  {{\"id\": {i}, \"name\": \"n{}\", \"tags\": [\"a\", \"bb\"], \"s\": \"x\\ty{}\", \"f\": {}.5}},\n",
                i % 7,
                "z".repeat(i % 90),
                i
            ));
        }
        d.push_str("  {}\n]");
        assert!(d.len() > INTERN_MIN_TEXT);
        let lim = JsonLimits { bytes: 1 << 24, depth: 64, nodes: 1 << 20 };
        let v = parse_until(d.as_bytes(), None, lim).unwrap();
        for n in [1, 7, 4096, 65536, 1 << 20] {
            let mut feed = Pieces(d.as_bytes().chunks(n).map(|c| c.to_vec()).collect());
            let w = read_stream(&mut feed, None, lim).unwrap();
            assert_eq!(outcome(Ok(w.clone()), None), outcome(Ok(v.clone()), None));
            assert_eq!(w.acct(), v.acct(), "the same sharing, so the same accounted size");
        }
        // An error far in: its line and column.
        let bad = d.replacen("\"id\": 2999", "\"id\": 2999,", 1);
        for n in [3, 4096, 65536] {
            assert_eq!(streamed(bad.as_bytes(), n, lim), whole(bad.as_bytes(), lim));
        }
    }
}
