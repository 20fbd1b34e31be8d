//! The FastCGI record layer (FastCGI specification 1.0, sections 3 to 5), for
//! `leash-cgi --fastcgi` (the server is `fastcgi_server.rs`).
//!
//! A record is an 8-byte header (version 1, type, request id and content length big-endian,
//! padding length, a reserved byte), its content (at most 65,535 bytes) and its padding.
//! Name-value pairs (PARAMS, GET_VALUES) are a length (one byte below 128, else four with
//! the high bit set) for the name, one for the value, then the bytes of each.
//!
//! Everything here is pure (bytes in, values out) so that it can be tested against the
//! specification's layouts and fuzzed (`fuzz/fuzz_targets/fastcgi.rs`). Reading never
//! allocates more than one record's content (64 KiB) at a time; a stream of PARAMS is
//! gathered by the caller up to its own bound (`FCGI_MAX_PARAMS_BYTES`).

use std::io::{Read, Write};

pub const VERSION_1: u8 = 1;

pub const BEGIN_REQUEST: u8 = 1;
pub const ABORT_REQUEST: u8 = 2;
pub const END_REQUEST: u8 = 3;
pub const PARAMS: u8 = 4;
pub const STDIN: u8 = 5;
pub const STDOUT: u8 = 6;
pub const STDERR: u8 = 7;
pub const DATA: u8 = 8;
pub const GET_VALUES: u8 = 9;
pub const GET_VALUES_RESULT: u8 = 10;
pub const UNKNOWN_TYPE: u8 = 11;

/// Roles (BEGIN_REQUEST).
pub const RESPONDER: u16 = 1;
pub const AUTHORIZER: u16 = 2;
pub const FILTER: u16 = 3;

/// BEGIN_REQUEST flag: keep the connection open after the request.
pub const KEEP_CONN: u8 = 1;

/// protocolStatus of END_REQUEST.
pub const REQUEST_COMPLETE: u8 = 0;
pub const CANT_MPX_CONN: u8 = 1;
pub const OVERLOADED: u8 = 2;
pub const UNKNOWN_ROLE: u8 = 3;

/// The most content one record holds.
pub const MAX_CONTENT: usize = 65_535;

/// A record's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub kind: u8,
    pub id: u16,
    pub content_len: u16,
    pub padding: u8,
}

/// Parse a record header. Only version 1 exists.
pub fn parse_header(h: &[u8; 8]) -> Result<Header, String> {
    if h[0] != VERSION_1 {
        return Err(format!("FastCGI record of version {} (only 1 exists)", h[0]));
    }
    Ok(Header {
        kind: h[1],
        id: u16::from_be_bytes([h[2], h[3]]),
        content_len: u16::from_be_bytes([h[4], h[5]]),
        padding: h[6],
    })
}

/// The header bytes of a record.
pub fn header_bytes(kind: u8, id: u16, content_len: usize, padding: u8) -> [u8; 8] {
    debug_assert!(content_len <= MAX_CONTENT);
    let id = id.to_be_bytes();
    let len = (content_len as u16).to_be_bytes();
    [VERSION_1, kind, id[0], id[1], len[0], len[1], padding, 0]
}

/// A whole record as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    pub kind: u8,
    pub id: u16,
    pub content: Vec<u8>,
}

/// Read one record. `Ok(None)`: the stream ended cleanly between records. A stream that
/// ends inside a record, or a record of another version, is an error.
pub fn read_record(r: &mut impl Read) -> std::io::Result<Option<Record>> {
    let mut h = [0u8; 8];
    let mut got = 0;
    while got < 8 {
        match r.read(&mut h[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let head = parse_header(&h).map_err(|m| std::io::Error::new(std::io::ErrorKind::InvalidData, m))?;
    let mut content = vec![0u8; head.content_len as usize + head.padding as usize];
    r.read_exact(&mut content)?;
    content.truncate(head.content_len as usize);
    Ok(Some(Record { kind: head.kind, id: head.id, content }))
}

/// The body of a BEGIN_REQUEST record: role and flags.
pub fn parse_begin(content: &[u8]) -> Result<(u16, u8), String> {
    if content.len() < 8 {
        return Err(format!("BEGIN_REQUEST body of {} bytes (8 expected)", content.len()));
    }
    Ok((u16::from_be_bytes([content[0], content[1]]), content[2]))
}

/// A BEGIN_REQUEST record (for tests and clients).
pub fn begin_request(id: u16, role: u16, flags: u8) -> Vec<u8> {
    let r = role.to_be_bytes();
    record(BEGIN_REQUEST, id, &[r[0], r[1], flags, 0, 0, 0, 0, 0])
}

/// An END_REQUEST record.
pub fn end_request(id: u16, app_status: u32, protocol_status: u8) -> Vec<u8> {
    let a = app_status.to_be_bytes();
    record(END_REQUEST, id, &[a[0], a[1], a[2], a[3], protocol_status, 0, 0, 0])
}

/// The reply to a management record of a type we do not know.
pub fn unknown_type(kind: u8) -> Vec<u8> {
    record(UNKNOWN_TYPE, 0, &[kind, 0, 0, 0, 0, 0, 0, 0])
}

/// One record with `content` (at most `MAX_CONTENT` bytes), padded to a multiple of 8
/// as the specification recommends.
pub fn record(kind: u8, id: u16, content: &[u8]) -> Vec<u8> {
    let pad = (8 - content.len() % 8) % 8;
    let mut v = Vec::with_capacity(8 + content.len() + pad);
    v.extend_from_slice(&header_bytes(kind, id, content.len(), pad as u8));
    v.extend_from_slice(content);
    v.resize(v.len() + pad, 0);
    v
}

/// A whole stream (STDOUT, STDERR, STDIN, PARAMS): `data` in records, then the empty
/// record that ends it.
pub fn stream(kind: u8, id: u16, data: &[u8]) -> Vec<u8> {
    // Chunks of 32 KiB: a multiple of 8, so no padding is needed but at the end.
    const CHUNK: usize = 32 * 1024;
    let mut v = Vec::with_capacity(data.len() + 8 * (data.len() / CHUNK + 3));
    for c in data.chunks(CHUNK) {
        v.extend_from_slice(&record(kind, id, c));
    }
    v.extend_from_slice(&record(kind, id, &[]));
    v
}

/// Write the records of a response: STDOUT stream and END_REQUEST.
pub fn write_response(w: &mut impl Write, id: u16, stdout: &[u8], app_status: u32) -> std::io::Result<()> {
    // Large bodies go out in slices, without copying the whole page into records first;
    // the last slice (all of a page of up to 512 KiB) goes out with the end of the stream
    // and END_REQUEST in one write.
    const SLICE: usize = 32 * 1024 * 16;
    let mut slices = stdout.chunks(SLICE).peekable();
    loop {
        let s = slices.next().unwrap_or(&[]);
        let last = slices.peek().is_none();
        let mut buf = Vec::with_capacity(s.len() + 8 * 17 + if last { 24 } else { 0 });
        for c in s.chunks(32 * 1024) {
            push_record(&mut buf, STDOUT, id, c);
        }
        if last {
            push_record(&mut buf, STDOUT, id, &[]);
            buf.extend_from_slice(&end_request(id, app_status, REQUEST_COMPLETE));
            w.write_all(&buf)?;
            return w.flush();
        }
        w.write_all(&buf)?;
    }
}

/// One record added to `buf` (as `record` makes it).
fn push_record(buf: &mut Vec<u8>, kind: u8, id: u16, content: &[u8]) {
    let pad = (8 - content.len() % 8) % 8;
    buf.extend_from_slice(&header_bytes(kind, id, content.len(), pad as u8));
    buf.extend_from_slice(content);
    buf.resize(buf.len() + pad, 0);
}

/// One length of a name-value pair; `Ok(None)` when `b` is too short.
fn pair_len(b: &[u8], at: &mut usize) -> Option<usize> {
    let first = *b.get(*at)?;
    if first < 0x80 {
        *at += 1;
        return Some(first as usize);
    }
    let four = b.get(*at..*at + 4)?;
    *at += 4;
    Some((u32::from_be_bytes([four[0] & 0x7f, four[1], four[2], four[3]])) as usize)
}

/// Name-value pairs: names and values as bytes.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Parse name-value pairs (a whole PARAMS stream, or a GET_VALUES body).
pub fn parse_pairs(b: &[u8]) -> Result<Pairs, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let start = at;
        let short = || format!("name-value pair cut short at byte {start} of {}", b.len());
        let n = pair_len(b, &mut at).ok_or_else(short)?;
        let v = pair_len(b, &mut at).ok_or_else(short)?;
        let end = at.checked_add(n).and_then(|e| e.checked_add(v)).filter(|&e| e <= b.len()).ok_or_else(short)?;
        out.push((b[at..at + n].to_vec(), b[at + n..end].to_vec()));
        at = end;
    }
    Ok(out)
}

fn put_len(v: &mut Vec<u8>, n: usize) {
    if n < 0x80 {
        v.push(n as u8);
    } else {
        v.extend_from_slice(&((n as u32) | 0x8000_0000).to_be_bytes());
    }
}

/// Encode name-value pairs.
pub fn encode_pairs<'a>(pairs: impl IntoIterator<Item = (&'a [u8], &'a [u8])>) -> Vec<u8> {
    let mut v = Vec::new();
    for (n, val) in pairs {
        put_len(&mut v, n.len());
        put_len(&mut v, val.len());
        v.extend_from_slice(n);
        v.extend_from_slice(val);
    }
    v
}

/// The GET_VALUES_RESULT record answering `query` (a GET_VALUES body): the variables we
/// know (FCGI_MAX_CONNS, FCGI_MAX_REQS, FCGI_MPXS_CONNS), in the order asked, others
/// left out as the specification says.
pub fn get_values_result(query: &[u8], max_conns: usize, max_reqs: usize) -> Vec<u8> {
    let asked = parse_pairs(query).unwrap_or_default();
    let (conns, reqs) = (max_conns.to_string(), max_reqs.to_string());
    let mut answer: Vec<(&[u8], &[u8])> = Vec::new();
    for (name, _) in &asked {
        let v: &[u8] = match name.as_slice() {
            b"FCGI_MAX_CONNS" => conns.as_bytes(),
            b"FCGI_MAX_REQS" => reqs.as_bytes(),
            b"FCGI_MPXS_CONNS" => b"0",
            _ => continue,
        };
        answer.push((name.as_slice(), v));
    }
    let body = encode_pairs(answer);
    // A reply bigger than a record cannot come from a valid query (it answers at most
    // three names); cut, to stay one record.
    record(GET_VALUES_RESULT, 0, &body[..body.len().min(MAX_CONTENT)])
}

/// Parse every record in `bytes` and every PARAMS body in them (the fuzz target's entry):
/// never panics; returns how many records were read.
pub fn parse_all(bytes: &[u8]) -> usize {
    let mut r = bytes;
    let mut n = 0;
    while let Ok(Some(rec)) = read_record(&mut r) {
        n += 1;
        match rec.kind {
            PARAMS | GET_VALUES => {
                let _ = parse_pairs(&rec.content);
                let _ = get_values_result(&rec.content, 1, 1);
            }
            BEGIN_REQUEST => {
                let _ = parse_begin(&rec.content);
            }
            _ => {}
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_is_the_specification_s() {
        // FCGI_Header: version, type, requestIdB1, requestIdB0, contentLengthB1,
        // contentLengthB0, paddingLength, reserved.
        assert_eq!(header_bytes(STDOUT, 0x0102, 0x0304, 5), [1, 6, 1, 2, 3, 4, 5, 0]);
        let h = parse_header(&[1, 4, 0, 1, 0x12, 0x34, 4, 0]).unwrap();
        assert_eq!(h, Header { kind: PARAMS, id: 1, content_len: 0x1234, padding: 4 });
        assert!(parse_header(&[2, 4, 0, 1, 0, 0, 0, 0]).is_err());
        // FCGI_BeginRequestBody: roleB1, roleB0, flags, reserved[5].
        assert_eq!(begin_request(1, RESPONDER, KEEP_CONN), vec![1, 1, 0, 1, 0, 8, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0]);
        assert_eq!(parse_begin(&[0, 1, 1, 0, 0, 0, 0, 0]), Ok((RESPONDER, KEEP_CONN)));
        assert!(parse_begin(&[0, 1]).is_err());
        // FCGI_EndRequestBody: appStatusB3..B0, protocolStatus, reserved[3].
        assert_eq!(end_request(7, 0x01020304, OVERLOADED), vec![1, 3, 0, 7, 0, 8, 0, 0, 1, 2, 3, 4, 2, 0, 0, 0]);
        // FCGI_UnknownTypeBody: type, reserved[7].
        assert_eq!(unknown_type(42), vec![1, 11, 0, 0, 0, 8, 0, 0, 42, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn records_round_trip_with_padding() {
        let r = record(STDIN, 3, b"hello");
        assert_eq!(r.len(), 16);
        assert_eq!(&r[..8], &[1, 5, 0, 3, 0, 5, 3, 0]);
        let mut s = r.as_slice();
        assert_eq!(read_record(&mut s).unwrap(), Some(Record { kind: STDIN, id: 3, content: b"hello".to_vec() }));
        assert_eq!(read_record(&mut s).unwrap(), None);
        // Cut inside the header or the content: an error, not a clean end.
        assert!(read_record(&mut &r[..4]).is_err());
        assert!(read_record(&mut &r[..10]).is_err());
        let big = vec![7u8; 100_000];
        let st = stream(STDOUT, 1, &big);
        let mut s = st.as_slice();
        let mut got = Vec::new();
        loop {
            let rec = read_record(&mut s).unwrap().unwrap();
            assert_eq!((rec.kind, rec.id), (STDOUT, 1));
            if rec.content.is_empty() {
                break;
            }
            assert!(rec.content.len() <= MAX_CONTENT);
            got.extend_from_slice(&rec.content);
        }
        assert_eq!(got, big);
        let mut w = Vec::new();
        write_response(&mut w, 1, &big, 0).unwrap();
        assert_eq!(&w[..w.len() - 16], st.as_slice());
        assert_eq!(&w[w.len() - 16..], end_request(1, 0, REQUEST_COMPLETE).as_slice());
    }

    #[test]
    fn a_response_in_as_few_writes_as_its_slices() {
        // A writer that takes each buffer whole and counts them.
        struct Count(Vec<u8>, usize);
        impl Write for Count {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.extend_from_slice(b);
                self.1 += 1;
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        for (len, writes) in [(0usize, 1usize), (5_525, 1), (512 * 1024, 1), (512 * 1024 + 1, 2), (1_300_000, 3)] {
            let body: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let mut w = Count(Vec::new(), 0);
            write_response(&mut w, 7, &body, 3).unwrap();
            assert_eq!(w.1, writes, "{len} bytes");
            let mut want = stream(STDOUT, 7, &body);
            want.extend_from_slice(&end_request(7, 3, REQUEST_COMPLETE));
            assert_eq!(w.0, want, "{len} bytes");
        }
    }

    #[test]
    fn name_value_pairs() {
        // Lengths below 128 take one byte, others four with the high bit set.
        let long = vec![b'x'; 300];
        let enc = encode_pairs([(b"A".as_slice(), b"1".as_slice()), (b"LONG", long.as_slice())]);
        assert_eq!(&enc[..4], &[1, 1, b'A', b'1']);
        assert_eq!(&enc[4..9], &[4, 0x80, 0, 1, 44]);
        let p = parse_pairs(&enc).unwrap();
        assert_eq!(p, vec![(b"A".to_vec(), b"1".to_vec()), (b"LONG".to_vec(), long.clone())]);
        assert!(parse_pairs(&enc[..enc.len() - 1]).is_err());
        assert!(parse_pairs(&[0x80]).is_err());
        assert!(parse_pairs(&[0xff, 0xff, 0xff, 0xff, 0]).is_err());
        assert_eq!(parse_pairs(&[0, 0]).unwrap(), vec![(vec![], vec![])]);
    }

    #[test]
    fn get_values_answers_what_it_knows() {
        let q = encode_pairs([
            (b"FCGI_MPXS_CONNS".as_slice(), b"".as_slice()),
            (b"OTHER", b""),
            (b"FCGI_MAX_CONNS", b""),
            (b"FCGI_MAX_REQS", b""),
        ]);
        let r = get_values_result(&q, 10, 20);
        let rec = read_record(&mut r.as_slice()).unwrap().unwrap();
        assert_eq!((rec.kind, rec.id), (GET_VALUES_RESULT, 0));
        assert_eq!(
            parse_pairs(&rec.content).unwrap(),
            vec![
                (b"FCGI_MPXS_CONNS".to_vec(), b"0".to_vec()),
                (b"FCGI_MAX_CONNS".to_vec(), b"10".to_vec()),
                (b"FCGI_MAX_REQS".to_vec(), b"20".to_vec()),
            ]
        );
        assert_eq!(parse_all(&[r.as_slice(), &q].concat()), 1);
    }
}
