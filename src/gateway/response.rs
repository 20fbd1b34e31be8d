//! What comes back from a CGI or FastCGI worker, and what the gateway says about it:
//! the status of the worker's CGI response (or why it is malformed), the report at the
//! end of its stderr (`--stats` and the last diagnostic), the request's summary log
//! line, the generic responses the gateway sends itself, and the worker's stderr as
//! the log shows it.

use std::io::Read;

use crate::limits::*;

// ---------------------------------------------------------------------------
// What comes back
// ---------------------------------------------------------------------------

/// The status a worker's CGI response gives the client, or why it is malformed: header
/// lines (`Name: value`, LF or CRLF) up to a blank line, at least one of them, within
/// 64 KiB. `Status: NNN ...` sets the status; a `Location` without it means 302.
pub fn response_status(out: &[u8]) -> Result<u16, String> {
    let mut status = None;
    let mut location = false;
    let mut fields = 0;
    let mut pos = 0;
    loop {
        if pos >= CGI_MAX_HEADER_BYTES {
            return Err(format!("response header section over {CGI_MAX_HEADER_BYTES} bytes"));
        }
        let Some(nl) = out[pos..].iter().position(|&c| c == b'\n') else {
            return Err(if out.is_empty() {
                "the script wrote nothing (no CGI header)".into()
            } else {
                "response headers do not end with a blank line".into()
            });
        };
        let mut line = &out[pos..pos + nl];
        pos += nl + 1;
        if line.last() == Some(&b'\r') {
            line = &line[..line.len() - 1];
        }
        if line.is_empty() {
            break;
        }
        let Some(colon) = line.iter().position(|&c| c == b':') else {
            return Err(format!("malformed header line: {:?}", String::from_utf8_lossy(&line[..line.len().min(80)])));
        };
        let name = &line[..colon];
        let token = |c: &u8| c.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.iter().all(token) {
            return Err(format!("malformed header name: {:?}", String::from_utf8_lossy(&name[..name.len().min(80)])));
        }
        if let Some(&c) = line[colon + 1..].iter().find(|&&c| is_control(c)) {
            return Err(format!(
                "the value of header {} holds a control character ({c:#04x})",
                String::from_utf8_lossy(&name[..name.len().min(80)])
            ));
        }
        let value = String::from_utf8_lossy(&line[colon + 1..]).trim().to_string();
        fields += 1;
        if name.eq_ignore_ascii_case(b"status") {
            let code = value.get(..3).and_then(|c| c.parse::<u16>().ok()).filter(|c| (100..=599).contains(c));
            let rest_ok = value.len() == 3 || value.as_bytes().get(3) == Some(&b' ');
            match code {
                Some(c) if rest_ok => status = Some(c),
                _ => return Err(format!("malformed Status header: {value:?}")),
            }
        } else if name.eq_ignore_ascii_case(b"location") {
            location = true;
        }
    }
    if fields == 0 {
        return Err("the response has no header lines".into());
    }
    Ok(status.unwrap_or(if location { 302 } else { 200 }))
}

/// A control character that a header value must not hold: all of them but tab (RFC 9110,
/// section 5.5: a field value is visible characters, spaces, tabs and obs-text).
pub fn is_control(c: u8) -> bool {
    (c < 0x20 && c != b'\t') || c == 0x7f
}

/// What the worker's `--stats` line and last diagnostic (both on stderr, JSON) say.
#[derive(Debug, Default, PartialEq)]
pub struct Report {
    pub steps: Option<u64>,
    /// `(class, kind)` of the diagnostic that ended the run (`("limit", "time")`).
    pub diag: Option<(String, String)>,
}

fn json_str_field<'a>(line: &'a str, field: &str) -> Option<&'a str> {
    let key = format!("\"{field}\":\"");
    let start = line.find(&key)? + key.len();
    let end = line[start..].find('"')?;
    Some(&line[start..start + end])
}

/// Read the report from the end of the worker's stderr. Leash writes, at exit, its
/// diagnostic (if the run failed) and then the stats line, so only the last two lines
/// count (a script's own `eprint` output comes earlier).
pub fn read_report(stderr_tail: &[u8]) -> Report {
    let text = String::from_utf8_lossy(stderr_tail);
    let mut lines = text.lines().rev().filter(|l| !l.trim().is_empty());
    let mut r = Report::default();
    let Some(last) = lines.next() else { return r };
    let Some(rest) = last.strip_prefix("{\"stats\":{\"steps\":") else { return r };
    r.steps = rest.split(|c: char| !c.is_ascii_digit()).next().and_then(|n| n.parse().ok());
    if let Some(prev) = lines.next() {
        if prev.starts_with("{\"error\":\"") {
            if let (Some(class), Some(kind)) = (json_str_field(prev, "error"), json_str_field(prev, "kind")) {
                r.diag = Some((class.to_string(), kind.to_string()));
            }
        }
    }
    r
}

/// The reason phrase for the statuses the gateway itself sends.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        302 => "Found",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        413 => "Content Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        504 => "Gateway Timeout",
        _ => "",
    }
}

/// What the summary log line of a request says (`leash-cgi` and the FastCGI server):
/// one line per request, its notes joined with `; `.
pub struct LogEntry {
    pub started: std::time::Instant,
    pub script: String,
    pub status: u16,
    pub steps: Option<u64>,
    pub note: Option<String>,
    /// FastCGI: what the program cache did (`hit`, `new`, `none`); not in CGI mode.
    pub cache: Option<&'static str>,
    /// FastCGI: which worker served (`spare`: one forked ahead; `forked`: forked for
    /// this request); not in CGI mode.
    pub worker: Option<&'static str>,
}

impl LogEntry {
    /// A request that started at `started` (a 500 until it says otherwise).
    pub fn new(started: std::time::Instant) -> Self {
        LogEntry { started, script: "-".into(), status: 500, steps: None, note: None, cache: None, worker: None }
    }

    /// Answer with a generic response for `status`; `why` goes to the log only.
    pub fn fail(&mut self, status: u16, why: impl Into<String>) -> Vec<u8> {
        self.status = status;
        self.add_note(why.into());
        generic_response(status)
    }

    pub fn add_note(&mut self, n: String) {
        self.note = Some(match self.note.take() {
            Some(old) => format!("{old}; {n}"),
            None => n,
        });
    }

    pub fn line(&self) -> String {
        let time = chrono::DateTime::<chrono::Utc>::from(std::time::SystemTime::now());
        let mut s = format!(
            "leash-cgi: time={} script={:?} status={} duration_ms={} steps={}",
            time.format("%Y-%m-%dT%H:%M:%S%.3fZ"),
            self.script,
            self.status,
            self.started.elapsed().as_millis(),
            self.steps.map(|n| n.to_string()).unwrap_or_else(|| "-".into())
        );
        if let Some(c) = self.cache {
            s.push_str(&format!(" cache={c}"));
        }
        if let Some(w) = self.worker {
            s.push_str(&format!(" worker={w}"));
        }
        if let Some(n) = &self.note {
            s.push_str(&format!(" note={n:?}"));
        }
        s
    }
}

/// A complete generic CGI response for `status` (nothing about the cause).
pub fn generic_response(status: u16) -> Vec<u8> {
    let r = reason(status);
    format!("Status: {status} {r}\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n{r}\n").into_bytes()
}

// ---------------------------------------------------------------------------
// A worker's stderr and death, as the CGI and FastCGI front ends log them
// ---------------------------------------------------------------------------

/// What the worker wrote to stderr: the start (copied to the log) and the end (its report).
#[derive(Default, Debug)]
pub struct Stderr {
    pub head: Vec<u8>,
    pub tail: Vec<u8>,
    pub total: u64,
}

impl Stderr {
    /// Take the next bytes the worker wrote: the start kept up to CGI_MAX_LOG_BYTES, the
    /// end up to CGI_REPORT_TAIL_BYTES (to twice that between trims).
    pub fn take(&mut self, c: &[u8]) {
        let n = c.len();
        self.total += n as u64;
        let room = CGI_MAX_LOG_BYTES.saturating_sub(self.head.len());
        self.head.extend_from_slice(&c[..room.min(n)]);
        self.tail.extend_from_slice(c);
        if self.tail.len() > 2 * CGI_REPORT_TAIL_BYTES {
            self.tail.drain(..self.tail.len() - CGI_REPORT_TAIL_BYTES);
        }
    }
}

pub fn read_stderr(mut r: impl Read) -> Stderr {
    let mut s = Stderr::default();
    let mut chunk = [0u8; 8192];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        s.take(&chunk[..n]);
    }
    s
}

/// A signal's name for the log.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        1 => "SIGHUP",
        2 => "SIGINT",
        4 => "SIGILL",
        6 => "SIGABRT",
        7 => "SIGBUS",
        8 => "SIGFPE",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        13 => "SIGPIPE",
        15 => "SIGTERM",
        24 => "SIGXCPU (the CPU limit)",
        25 => "SIGXFSZ (max_file_size)",
        _ => "signal",
    }
}

/// The log lines for a worker's stderr: a line at a time with control characters
/// escaped, leaving out its final stats line (its figures are in the summary line).
pub fn worker_stderr_lines(err: &Stderr, stats_line: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(&err.head);
    let mut lines: Vec<&str> = text.lines().collect();
    if stats_line && err.total as usize == err.head.len() {
        if let Some(i) = lines.iter().rposition(|l| !l.trim().is_empty()) {
            lines.remove(i);
        }
    }
    let mut out: Vec<String> = lines
        .into_iter()
        .map(|l| {
            let clean: String =
                l.chars().map(|c| if c.is_control() && c != '\t' { char::REPLACEMENT_CHARACTER } else { c }).collect();
            format!("leash-cgi: worker: {clean}")
        })
        .collect();
    if err.total > err.head.len() as u64 {
        out.push(format!("leash-cgi: worker: ({} more bytes of stderr not logged)", err.total - err.head.len() as u64));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_and_reports() {
        assert_eq!(response_status(b"Content-Type: text/plain\r\n\r\nhi"), Ok(200));
        assert_eq!(response_status(b"Status: 404 Not Found\nContent-Type: text/plain\n\n"), Ok(404));
        assert_eq!(response_status(b"Location: http://x/\r\n\r\n"), Ok(302));
        assert_eq!(response_status(b"Status: 201\r\nX: y\r\n\r\n"), Ok(201));
        assert!(response_status(b"").is_err());
        assert!(response_status(b"hello\n\n").is_err());
        assert!(response_status(b"\r\nbody").is_err());
        assert!(response_status(b"Content-Type: text/plain").is_err());
        assert!(response_status(b"Status: 99\n\n").is_err());
        assert!(response_status(b"Status: 2000\n\n").is_err());
        assert!(response_status(b"Bad Name: x\n\n").is_err());
        assert_eq!(response_status(b"X: a\tb\x80\r\n\r\n"), Ok(200));
        for c in (0u8..0x20).filter(|&c| c != b'\t' && c != b'\n').chain([0x7f]) {
            let head = [b"X: a".as_slice(), &[c], b"b\r\n\r\n"].concat();
            let e = response_status(&head).unwrap_err();
            assert!(e.contains("control character"), "{c:#04x}: {e}");
        }
        let r = read_report(
            b"hello\n{\"error\":\"limit\",\"kind\":\"time\",\"message\":\"x\"}\n{\"stats\":{\"steps\":42,\"x\":1}}\n",
        );
        assert_eq!(r.steps, Some(42));
        assert_eq!(r.diag, Some(("limit".into(), "time".into())));
        let r = read_report(b"{\"error\":\"runtime\",\"kind\":\"arith\"}\nplain\n{\"stats\":{\"steps\":7}}\n");
        assert_eq!(r, Report { steps: Some(7), diag: None });
        assert_eq!(read_report(b"{\"error\":\"runtime\",\"kind\":\"arith\"}\n"), Report::default());
    }
}
