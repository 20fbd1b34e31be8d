//! The JSON parser: one recursive-descent parser over a `Text`, which is one whole text
//! (`json.parse`, `json.next`: `Whole`, monomorphised on its own so the stream's checks
//! compile away) or a stream read in chunks (`json.read`: `stream::Stream`). The JSON
//! limits, the deadline and the heap bound are looked at while the value is built.

use std::collections::HashMap;

use super::limits::JsonLimits;
use super::share::{list_own, ListCache, StrCache, INTERN_MAX, INTERN_MIN_TEXT};
use crate::limits::*;
use crate::value::*;

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

/// Where a parser's text comes from: one whole text (`json.parse`), or a stream read in
/// bounded chunks (`json.read`, `Stream`). Positions are offsets into `bytes()`, which
/// a stream moves on as it reads: `more` drops the bytes before `keep` (the parser's
/// position: nothing before it is looked at again) and appends the next chunk.
pub(super) trait Text {
    /// Whether more text can come (false: `more` never reads, and the stream-only
    /// checks compile away).
    const STREAM: bool;
    /// An object key as the parser's key table holds it: for one whole text, a slice of
    /// the text (no copy); for a stream, whose buffer moves on, a copy. Each source thus
    /// has its own table type, and so its own look-up code, inlined into its parser.
    type Key: std::borrow::Borrow<[u8]> + std::hash::Hash + Eq;
    fn bytes(&self) -> &[u8];
    /// The key table's entry for `bytes()[start..end]`.
    fn key(&self, start: usize, end: usize) -> Self::Key;
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

impl<'a> Text for Whole<'a> {
    const STREAM: bool = false;
    type Key = &'a [u8];
    #[inline(always)]
    fn bytes(&self) -> &[u8] {
        self.s
    }
    #[inline(always)]
    fn key(&self, start: usize, end: usize) -> &'a [u8] {
        let s: &'a [u8] = self.s;
        &s[start..end]
    }
    #[inline(always)]
    fn more(&mut self, _: usize) -> PR<(usize, bool)> {
        Ok((0, false))
    }
    fn heap(&self) -> Option<&crate::memory::HeapMeter> {
        self.heap
    }
}

pub(super) struct Parser<T: Text> {
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
    keys: HashMap<T::Key, Bytes, foldhash::fast::RandomState>,
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

pub(super) type PR<T> = Result<T, ParseError>;

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
        return Err(ParseError::Limit(lim.too_long()));
    }
    if let Err(e) = std::str::from_utf8(text) {
        return Err(ParseError::Syntax("invalid UTF-8".into(), e.valid_up_to()));
    }
    let large = text.len() >= INTERN_MIN_TEXT;
    let mut p = Parser::new(Whole { s: text, heap }, deadline, lim, large);
    p.document()
}

impl<T: Text> Parser<T> {
    pub(super) fn new(s: T, deadline: Option<std::time::Instant>, lim: JsonLimits, large: bool) -> Self {
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
    pub(super) fn document(&mut self) -> PR<Value> {
        self.ws()?;
        let v = self.value(0)?;
        self.ws()?;
        if self.i < self.s.bytes().len() {
            return Err(self.unexpected("after the value"));
        }
        Ok(v)
    }

    /// The text, once the parse is over (its stacks and caches dropped).
    pub(super) fn into_text(self) -> T {
        self.s
    }

    /// Read more of a stream, keeping the bytes from the position on (the position moves
    /// by what was dropped): whether bytes came (false: the text has ended).
    #[cold]
    #[inline(never)]
    fn more(&mut self) -> PR<bool> {
        let (dropped, got) = self.s.more(self.i)?;
        self.i -= dropped;
        Ok(got)
    }

    /// At least `n` bytes from the position on, unless the text ends first.
    #[inline]
    fn need(&mut self, n: usize) -> PR<()> {
        while T::STREAM && self.s.bytes().len() - self.i < n {
            if !self.more()? {
                break;
            }
        }
        Ok(())
    }

    /// A stream: the whole string token that starts at the position (its quote) in the
    /// buffer, up to its closing quote or the end of the text.
    #[cold]
    #[inline(never)]
    fn ensure_string(&mut self) -> PR<()> {
        let mut j = self.i + 1;
        loop {
            let s = self.s.bytes();
            while j < s.len() {
                match memchr::memchr2(b'"', b'\\', &s[j..]) {
                    None => j = s.len(),
                    Some(k) if s[j + k] == b'"' => return Ok(()),
                    Some(k) => j += k + 2,
                }
            }
            let off = j - self.i;
            if !self.more()? {
                return Ok(());
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
            return Err(ParseError::Limit(self.lim.too_many()));
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
            return Err(ParseError::Limit(self.lim.too_deep()));
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
                    self.keys.insert(self.s.key(start, j), b.clone());
                }
                return Ok(b);
            }
            if c == b'\\' || c < 0x20 {
                break;
            }
            j += 1;
        }
        Ok(bytes_vec(self.string()?))
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
            Ok(bytes_vec(b))
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
pub(super) fn line_col(text: &[u8], at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    let col = at - memchr::memrchr(b'\n', before).map_or(0, |p| p + 1) + 1;
    (line, col)
}
