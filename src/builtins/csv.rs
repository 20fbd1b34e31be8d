//! CSV (`csv.parse`, `csv.stringify`) on the `csv` crate: RFC 4180 quoting (fields in
//! double quotes may hold delimiters, line ends and doubled quotes), LF, CRLF or CR line
//! ends, any single-byte delimiter and quote. Fields are bytes, kept as they are.
//!
//! Bounds: rows and fields per row by the list limit (16,384), header maps by the map
//! limit, fields by the string limit (the input is a string, so at most 1 MiB), and the
//! rows built so far by the frame-storage limit, all checked while reading.
//! `csv.open` / `csv.next` / `csv.close` stream records from a file through a file reader
//! (`--allow-files`; the reader slots and the streaming-read budget are shared).

use ::csv::{QuoteStyle, Terminator, WriterBuilder};
use csv_core::ReadRecordResult;

use super::Host;
use super::{b, gated, Builtin, Cap, Cost, CONST};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

/// Options of `csv.parse` and `csv.stringify`.
#[derive(Debug, Clone)]
pub struct Opts {
    pub header: Option<bool>,
    pub delimiter: u8,
    pub quote: u8,
    pub crlf: bool,
}

impl Default for Opts {
    fn default() -> Self {
        Opts { header: None, delimiter: b',', quote: b'"', crlf: false }
    }
}

/// Read the options map (argument `i`, optional). `writing` allows `line_end`.
pub fn opts(it: &Host, name: &str, args: &[Value], i: usize, writing: bool) -> R<Opts> {
    let mut o = Opts::default();
    let Some(_) = it.opt(args, i) else { return Ok(o) };
    let m = it.arg_map(name, args, i)?;
    let one_byte = |k: &str, v: &Value| -> R<u8> {
        match v {
            Value::Str(s) if s.len() == 1 && !matches!(s[0], b'\r' | b'\n') => Ok(s[0]),
            Value::Str(_) => {
                Err(it.err(ErrKind::Value, format!("{name}: option {k} must be one byte, not a line end")))
            }
            other => {
                Err(it.err(ErrKind::Type, format!("{name}: option {k} must be a string, got {}", other.type_name())))
            }
        }
    };
    for (k, v) in m.iter() {
        match k.as_slice() {
            b"header" => match v {
                Value::Bool(h) => o.header = Some(*h),
                other => {
                    return Err(it.err(
                        ErrKind::Type,
                        format!("{name}: option header must be a bool, got {}", other.type_name()),
                    ))
                }
            },
            b"delimiter" => o.delimiter = one_byte("delimiter", v)?,
            b"quote" => o.quote = one_byte("quote", v)?,
            b"line_end" if writing => match v {
                Value::Str(s) if s.as_slice() == b"\n" => o.crlf = false,
                Value::Str(s) if s.as_slice() == b"\r\n" => o.crlf = true,
                _ => {
                    return Err(it.err(ErrKind::Value, format!("{name}: option line_end must be \"\\n\" or \"\\r\\n\"")))
                }
            },
            other => {
                let known = if writing { "header, delimiter, quote, line_end" } else { "header, delimiter, quote" };
                return Err(it.err(
                    ErrKind::Value,
                    format!("{name}: unknown option {} (known: {known})", crate::diag::quoted(other)),
                ));
            }
        }
    }
    if o.delimiter == o.quote {
        return Err(it.err(ErrKind::Value, format!("{name}: the delimiter and the quote must differ")));
    }
    Ok(o)
}

/// The line on which a quoted field is left open at the end of the input, if any
/// (the `csv` crate would read such a field to the end without a word).
///
/// Only quotes matter: one opens a field where a field starts (the input's start, or
/// after a delimiter or a line end), and inside it a quote closes it unless doubled. So
/// the scan jumps from quote to quote (memchr) rather than stepping a state machine
/// through every byte, which cost `csv.next` and `csv.parse` about 1.5 ns a byte
/// (`unclosed_quote_by_bytes`, the test's oracle, is that machine).
fn unclosed_quote(s: &[u8], delimiter: u8, quote: u8) -> Option<usize> {
    let mut i = 0;
    loop {
        // Outside a quoted field: the next quote that opens one.
        let p = loop {
            let p = i + memchr::memchr(quote, &s[i..])?;
            if p == 0 || matches!(s[p - 1], b'\n' | b'\r') || s[p - 1] == delimiter {
                break p;
            }
            i = p + 1;
        };
        // Inside: the quote that closes it (a doubled quote is one quote of the field).
        i = p + 1;
        loop {
            let Some(q) = memchr::memchr(quote, &s[i..]) else {
                return Some(1 + memchr::memchr_iter(b'\n', &s[..p]).count());
            };
            if s.get(i + q + 1) == Some(&quote) {
                i += q + 2;
            } else {
                i += q + 1;
                break;
            }
        }
    }
}

/// Turns records into rows: the header (in header mode), the ragged-row check, lists or
/// maps. Shared by `csv.parse` and the streaming `csv.next`.
#[derive(Debug)]
pub struct RowBuilder {
    header_mode: bool,
    header: Option<Vec<Bytes>>,
    /// The header's shape (at most `MAP_SHAPED` columns): every row's map shares its keys.
    shape: Option<std::rc::Rc<Shape>>,
    width: Option<usize>,
    /// Equal short fields share one string (`csv.parse` of a large text).
    values: super::json::StrCache,
}

impl RowBuilder {
    pub fn new(header_mode: bool) -> Self {
        RowBuilder { header_mode, header: None, shape: None, width: None, values: Default::default() }
    }

    /// The row of record `rec` (read at `line`), or None when it was the header.
    pub fn take(&mut self, it: &Host, name: &str, rec: &Record, line: u64) -> R<Option<Value>> {
        let n = rec.len();
        if n > it.lim.n(L::List) {
            return Err(it.limit(
                LimitKind::List,
                format!(
                    "{name}: line {line} has more than {max_list_items} fields",
                    max_list_items = it.lim.n(L::List)
                ),
            ));
        }
        match self.width {
            None => self.width = Some(n),
            Some(w) if w != n => {
                let first = if self.header_mode { "the header" } else { "the first row" };
                return Err(it.err(
                    ErrKind::Parse,
                    format!("{name}: ragged rows: line {line} has {n} fields, but {first} has {w}"),
                ));
            }
            Some(_) => {}
        }
        if self.header_mode && self.header.is_none() {
            let names: Vec<Bytes> = rec.iter().map(bytes).collect();
            for (i, k) in names.iter().enumerate() {
                if names[..i].contains(k) {
                    return Err(it.err(
                        ErrKind::Parse,
                        format!("{name}: the header names column {} twice", crate::diag::quoted(k)),
                    ));
                }
            }
            self.shape = Shape::new(&names);
            self.header = Some(names);
            return Ok(None);
        }
        Ok(Some(match &self.header {
            Some(_) if let Some(shape) = &self.shape => {
                let values = &mut self.values;
                Value::map(Map::shaped(shape, rec.iter().map(|f| Value::Str(values.get(f)))))
            }
            Some(names) => {
                let mut m = Map::with_capacity(names.len());
                for (k, f) in names.iter().zip(rec.iter()) {
                    m.insert(k.clone(), Value::Str(self.values.get(f)));
                }
                Value::map(m)
            }
            None => {
                it.room(n * ACCT_SLOT)?;
                let mut fields = Vec::with_capacity(n);
                fields.extend(rec.iter().map(|f| Value::Str(self.values.get(f))));
                Value::list(fields)
            }
        }))
    }
}

/// One record's fields: their bytes back to back and where each ends.
#[derive(Debug, Default)]
pub struct Record {
    data: Vec<u8>,
    ends: Vec<usize>,
    len: usize,
}

impl Record {
    fn len(&self) -> usize {
        self.len
    }

    fn iter(&self) -> impl ExactSizeIterator<Item = &[u8]> + '_ {
        let mut start = 0;
        self.ends[..self.len].iter().map(move |&e| {
            let f = &self.data[start..e];
            start = e;
            f
        })
    }
}

/// The `csv_core` parser (the `csv` crate's own, without its per-reader set-up: building
/// a reader costs about 20 microseconds, which a per-record `csv.next` or a per-line
/// `csv.parse` paid every time). One is kept per thread and reset for each input; it is
/// rebuilt only when the delimiter or the quote changes. Same dialect as before: CRLF,
/// LF or CR end a record, doubled quotes inside quotes, empty lines skipped.
struct Core {
    rd: csv_core::Reader,
    delimiter: u8,
    quote: u8,
}

thread_local! {
    static CORE: std::cell::RefCell<Option<Core>> = const { std::cell::RefCell::new(None) };
}

/// Reads the records of `s` in turn (a parser reset at its start). `each` gets every
/// record with the line it starts on (1-based, counting from the end of the previous
/// record, as the `csv` crate's positions do) and returns whether to go on.
fn records(it: &mut Host, o: &Opts, s: &[u8], mut each: impl FnMut(&mut Host, &Record, u64) -> R<bool>) -> R<()> {
    let mut core = CORE.with(|c| c.borrow_mut().take());
    let rd = match &mut core {
        Some(c) if c.delimiter == o.delimiter && c.quote == o.quote => {
            c.rd.reset();
            c
        }
        _ => core.insert(Core {
            rd: csv_core::ReaderBuilder::new()
                .delimiter(o.delimiter)
                .quote(o.quote)
                .terminator(csv_core::Terminator::CRLF)
                .build(),
            delimiter: o.delimiter,
            quote: o.quote,
        }),
    };
    let r = read_all(it, &mut rd.rd, s, &mut each);
    CORE.with(|c| *c.borrow_mut() = core);
    r
}

/// (The record's buffers grow only after `Host::room` has found room for them: a record
/// of millions of empty fields is a few bytes of text each, and eight bytes of ends.)
fn read_all(
    it: &mut Host,
    rd: &mut csv_core::Reader,
    s: &[u8],
    each: &mut impl FnMut(&mut Host, &Record, u64) -> R<bool>,
) -> R<()> {
    let mut rec = Record { data: vec![0; 256.min(s.len() + 1)], ends: vec![0; 16], len: 0 };
    let mut input = s;
    loop {
        let line = rd.line();
        let (mut out, mut nends) = (0, 0);
        loop {
            let (res, nin, nout, ne) = rd.read_record(input, &mut rec.data[out..], &mut rec.ends[nends..]);
            input = &input[nin..];
            out += nout;
            nends += ne;
            match res {
                // The whole input was given at once: the next call with nothing left
                // tells the parser the input ended.
                ReadRecordResult::InputEmpty => continue,
                ReadRecordResult::OutputFull => {
                    let n = rec.data.len().max(64) * 2;
                    it.room(n - rec.data.len())?;
                    rec.data.resize(n, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    let n = rec.ends.len() * 2;
                    it.room((n - rec.ends.len()) * std::mem::size_of::<usize>())?;
                    rec.ends.resize(n, 0);
                }
                ReadRecordResult::Record => {
                    // csv_core gives each field's end relative to the record's start.
                    rec.len = nends;
                    if !each(it, &rec, line)? {
                        return Ok(());
                    }
                    break;
                }
                ReadRecordResult::End => return Ok(()),
            }
        }
    }
}

/// The state of a streaming CSV reader (`csv.open`), kept with its file reader.
#[derive(Debug)]
pub struct CsvStream {
    opts: Opts,
    rows: RowBuilder,
    /// Physical lines consumed so far.
    line: u64,
}

fn open(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "csv.open";
    let p = it.arg_str(NAME, args, 0)?.clone();
    let o = opts(it, NAME, args, 1, false)?;
    let h = super::files::open_reader(it, NAME, &p, HandleKind::Csv)?;
    let header_mode = o.header == Some(true);
    super::files::set_csv(it, h.id, Box::new(CsvStream { opts: o, rows: RowBuilder::new(header_mode), line: 0 }));
    Ok(Value::Handle(h))
}

/// The next record's text: physical lines joined while a quoted field is open.
fn next_record(it: &mut Host, id: u32, st: &mut CsvStream) -> R<Option<(Vec<u8>, u64)>> {
    const NAME: &str = "csv.next";
    loop {
        let Some(mut rec) = super::files::next_line(it, NAME, id)? else { return Ok(None) };
        st.line += 1;
        let first = st.line;
        if rec.is_empty() {
            continue; // empty lines are skipped, as csv.parse skips them
        }
        while unclosed_quote(&rec, st.opts.delimiter, st.opts.quote).is_some() {
            let Some(more) = super::files::next_line(it, NAME, id)? else {
                return Err(
                    it.err(ErrKind::Parse, format!("{NAME}: a quoted field opened on line {first} is never closed"))
                );
            };
            st.line += 1;
            if rec.len() + 1 + more.len() > it.lim.n(L::String) {
                return Err(it.limit(
                    LimitKind::FileReads,
                    format!(
                        "{NAME}: a record longer than {max_string_bytes} bytes",
                        max_string_bytes = it.lim.n(L::String)
                    ),
                ));
            }
            rec.push(b'\n');
            rec.extend_from_slice(&more);
        }
        return Ok(Some((rec, first)));
    }
}

fn next(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "csv.next";
    let id = super::files::reader_id(it, NAME, &args[0], HandleKind::Csv)?;
    let mut st = super::files::take_csv(it, id);
    let r = next_row(it, id, &mut st);
    super::files::set_csv(it, id, st);
    r
}

fn next_row(it: &mut Host, id: u32, st: &mut CsvStream) -> R<Value> {
    const NAME: &str = "csv.next";
    loop {
        let Some((text, line)) = next_record(it, id, st)? else { return Ok(Value::Nil) };
        it.work(NEXT.units(text.len() as u64, 0))?;
        // The record's first record only (as one physical record was read).
        let mut row = None;
        let rows = &mut st.rows;
        records(it, &st.opts, &text, |it, rec, _| {
            row = rows.take(it, NAME, rec, line)?;
            Ok(false)
        })?;
        if let Some(row) = row {
            it.check_value(&row)?;
            return Ok(row);
        }
    }
}

fn close(it: &mut Host, args: &mut [Value]) -> R<Value> {
    super::files::close_reader(it, "csv.close", &args[0], HandleKind::Csv)
}

fn parse(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "csv.parse";
    let s = it.arg_str(NAME, args, 0)?;
    let o = opts(it, NAME, args, 1, false)?;
    if let Some(line) = unclosed_quote(s, o.delimiter, o.quote) {
        return Err(it.err(ErrKind::Parse, format!("{NAME}: a quoted field opened on line {line} is never closed")));
    }
    let mut rows_b = RowBuilder::new(o.header == Some(true));
    rows_b.values = super::json::StrCache::new(s.len() >= super::json::INTERN_MIN_TEXT);
    let mut rows: Vec<Value> = Vec::new();
    let mut acct = ACCT_LIST_HEADER;
    let mut read = 0usize;
    records(it, &o, s, |it, rec, line| {
        read += 1;
        if read.is_multiple_of(LONG_OP_CHECK_ITEMS) {
            it.check_time()?;
            // The heap bound too: a file too big for --max-memory stops while it is parsed.
            it.check_memory()?;
        }
        // `take` refuses a record of more fields than the list limit.
        let Some(row) = rows_b.take(it, NAME, rec, line)? else { return Ok(true) };
        if rows.len() == it.lim.n(L::List) {
            return Err(it.limit(
                LimitKind::List,
                format!("{NAME}: more than {max_list_items} rows", max_list_items = it.lim.n(L::List)),
            ));
        }
        acct += row.acct();
        if acct > it.lim.n(L::FrameStorage) {
            return Err(it.limit(
                LimitKind::FrameStorage,
                format!(
                    "{NAME}: the rows exceed the frame limit of {max_frame_bytes} accounted bytes",
                    max_frame_bytes = it.lim.n(L::FrameStorage)
                ),
            ));
        }
        rows.push(row);
        Ok(true)
    })?;
    // Give back the growth slack (a large buffer shrinks in place).
    rows.shrink_to_fit();
    it.make_list(rows)
}

/// Write one cell's text.
fn cell<'a>(v: &'a Value, scratch: &'a mut Vec<u8>) -> Result<&'a [u8], &'static str> {
    match v {
        Value::Str(s) => Ok(s),
        Value::Num(n) => {
            scratch.clear();
            fmt_num(*n, scratch);
            Ok(scratch)
        }
        Value::Bool(true) => Ok(b"true"),
        Value::Bool(false) => Ok(b"false"),
        Value::Nil | Value::Unset => Ok(b""),
        other => Err(other.type_name()),
    }
}

fn stringify(it: &mut Host, args: &mut [Value]) -> R<Value> {
    const NAME: &str = "csv.stringify";
    let rows = it.arg_list(NAME, args, 0)?;
    let o = opts(it, NAME, args, 1, true)?;
    let mut wr = WriterBuilder::new()
        .flexible(true)
        .delimiter(o.delimiter)
        .quote(o.quote)
        .quote_style(QuoteStyle::Necessary)
        .terminator(if o.crlf { Terminator::CRLF } else { Terminator::Any(b'\n') })
        .from_writer(Vec::new());
    let io = |it: &Host, e: ::csv::Error| it.err(ErrKind::Value, format!("{NAME}: {e}"));
    let bad_cell = |it: &Host, row: usize, t: &str| {
        it.err(
            ErrKind::Type,
            format!("{NAME}: row {} holds a {t}; cells must be strings, numbers, bools or nil", row + 1),
        )
    };
    let mut record: Vec<Vec<u8>> = Vec::new();
    let mut scratch = Vec::new();
    let keys: Option<Vec<Bytes>> = match rows.items().first() {
        Some(Value::Map(m)) => Some(m.keys().cloned().collect()),
        _ => None,
    };
    if let Some(ks) = &keys {
        if o.header != Some(false) {
            wr.write_record(ks.iter().map(|k| k.as_slice())).map_err(|e| io(it, e))?;
        }
    }
    let mut width = None;
    for (r, row) in rows.items().iter().enumerate() {
        record.clear();
        match (row, &keys) {
            (Value::List(l), None) => {
                for v in l.items() {
                    record.push(cell(v, &mut scratch).map_err(|t| bad_cell(it, r, t))?.to_vec());
                }
            }
            (Value::Map(m), Some(ks)) => {
                if m.len() != ks.len() || ks.iter().any(|k| !m.contains(k)) {
                    return Err(
                        it.err(ErrKind::Value, format!("{NAME}: row {} has other keys than the first row", r + 1))
                    );
                }
                for k in ks {
                    let v = m.get(k).unwrap_or(&Value::Nil);
                    record.push(cell(v, &mut scratch).map_err(|t| bad_cell(it, r, t))?.to_vec());
                }
            }
            (other, _) => {
                let want = if keys.is_some() { "a map (as the first row is)" } else { "a list (as the first row is)" };
                return Err(
                    it.err(ErrKind::Type, format!("{NAME}: row {} must be {want}, got {}", r + 1, other.type_name()))
                );
            }
        }
        if record.is_empty() {
            return Err(it.err(ErrKind::Value, format!("{NAME}: row {} has no fields (CSV cannot hold it)", r + 1)));
        }
        match width {
            None => width = Some(record.len()),
            Some(w) if w != record.len() => {
                return Err(it.err(
                    ErrKind::Value,
                    format!("{NAME}: ragged rows: row {} has {} fields, but the first has {w}", r + 1, record.len()),
                ))
            }
            Some(_) => {}
        }
        wr.write_record(&record).map_err(|e| io(it, e))?;
        it.check_str_len(wr.get_ref().len())?;
    }
    let out = wr.into_inner().map_err(|e| it.err(ErrKind::Value, format!("{NAME}: {}", e.error())))?;
    it.make_str(out)
}

/// csv.next: the fields of the record read, the bytes of its text (charged by
/// `next_row` as it is read: a field's bytes are scanned, parsed and copied), and a base
/// for reading and parsing the record (measured: about 1.2 us for a 6-field record of 40
/// bytes, with the reused parser; it was 20,000 when each record set up a reader of its
/// own). The rates are calibrated by bench/work.py: until 2026-12-07 it was 50 a field
/// and nothing a byte, 0.41 ns a unit for 3-byte fields and 2.18 for 30-byte ones (row
/// `csv.next (30-byte fields)`: under-charged).
const NEXT: Cost = Cost::new(super::Rule::Items, 400, 1.0, 20.0);

pub const TABLE: &[Builtin] = &[
    // The text's bytes and the rows made (30 a byte until 2026-12-07: a record per two
    // or three bytes, `a\n` or `a\r\n`, measured 1.5 to 2.4 ns a unit, as a record costs
    // about 110 ns whatever its length; bench/work.py rows "csv.parse (...)").
    b("csv.parse", "csv.parse(s[, opts])", 1, 2, Cost::bytes_items(14.0, 80.0), parse),
    b("csv.stringify", "csv.stringify(rows[, opts])", 1, 2, Cost::bytes(6.0), stringify),
    gated("csv.open", "csv.open(path[, opts])", 1, 2, Cap::Read, CONST, open),
    gated("csv.next", "csv.next(reader)", 1, 1, Cap::Read, NEXT, next),
    gated("csv.close", "csv.close(reader)", 1, 1, Cap::Read, CONST, close),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_unclosed_quotes() {
        assert_eq!(unclosed_quote(b"a,b\n\"c", b',', b'"'), Some(2));
        assert_eq!(unclosed_quote(b"a,\"b\"\"\nc\",d\n", b',', b'"'), None);
        assert_eq!(unclosed_quote(b"a\"b,c", b',', b'"'), None);
        assert_eq!(unclosed_quote(b"\"a\"\"", b',', b'"'), Some(1));
        assert_eq!(unclosed_quote(b"'a;b';'c", b';', b'\''), Some(1));
    }

    /// The state machine `unclosed_quote` replaced, byte by byte: its oracle.
    fn unclosed_quote_by_bytes(s: &[u8], delimiter: u8, quote: u8) -> Option<usize> {
        #[derive(PartialEq)]
        enum St {
            Start,
            Field,
            Quoted,
            QuoteInQuoted,
        }
        let mut st = St::Start;
        let mut line = 1;
        let mut opened = 1;
        for &c in s {
            if c == b'\n' {
                line += 1;
            }
            st = match st {
                St::Start | St::Field if c == delimiter || c == b'\n' || c == b'\r' => St::Start,
                St::Start if c == quote => {
                    opened = line;
                    St::Quoted
                }
                St::Start | St::Field => St::Field,
                St::Quoted if c == quote => St::QuoteInQuoted,
                St::Quoted => St::Quoted,
                St::QuoteInQuoted if c == quote => St::Quoted,
                St::QuoteInQuoted if c == delimiter || c == b'\n' || c == b'\r' => St::Start,
                St::QuoteInQuoted => St::Field,
            };
        }
        (st == St::Quoted).then_some(opened)
    }

    /// Every input of up to 7 bytes over an alphabet of the delimiter, the quote, both
    /// line ends and a plain byte, and longer random ones: the jumps from quote to quote
    /// agree with the state machine.
    #[test]
    fn unclosed_quote_agrees_with_the_byte_machine() {
        let alphabet = [b',', b'"', b'\n', b'\r', b'a'];
        let mut cases = 0;
        for s in crate::test_support::all_words(&alphabet, 7) {
            assert_eq!(unclosed_quote(&s, b',', b'"'), unclosed_quote_by_bytes(&s, b',', b'"'), "{s:?}");
            cases += 1;
        }
        let mut rng = crate::test_support::XorShift(0x9e3779b97f4a7c15);
        for _ in 0..2000 {
            let len = rng.next_u64() % 200;
            let s: Vec<u8> = (0..len).map(|_| alphabet[(rng.next_u64() % 5) as usize]).collect();
            assert_eq!(unclosed_quote(&s, b',', b'"'), unclosed_quote_by_bytes(&s, b',', b'"'), "{s:?}");
            assert_eq!(unclosed_quote(&s, b'"', b','), unclosed_quote_by_bytes(&s, b'"', b','), "{s:?}");
            cases += 2;
        }
        assert!(cases > 100_000);
    }
}
