//! Regular expressions (`re.*`) on the `regex` crate: a linear-time engine (no
//! backtracking, no look-around, no back-references), so matching time grows with
//! pattern size times subject size and never explodes.
//!
//! Patterns are UTF-8 text of at most `MAX_REGEX_PATTERN` bytes and compile to at most
//! `MAX_REGEX_PROGRAM` bytes; the lazy DFA's cache is capped at `MAX_REGEX_DFA_CACHE`
//! (past it the engine falls back to a slower, still linear, search). Subjects are
//! bytes: Unicode classes match UTF-8, and invalid UTF-8 is never matched by `.`.
//! Compiled patterns are kept in a small per-thread LRU cache, so a loop calling
//! `re.test` with one pattern compiles it once; the cache hands out the one compiled
//! regex itself (an `Rc`), never a clone: cloning a `regex::Regex` starts it with an empty
//! matching cache, which made every call rebuild its lazy DFA (about 20 microseconds per
//! `re.match` of a log line).

use std::cell::{OnceCell, RefCell};
use std::rc::Rc;

use regex::{bytes, Regex, RegexBuilder};

use super::{b, Builtin, Cost};
use crate::diag::ErrKind;
use crate::interp::{Interp, R};
use crate::limits::*;
use crate::value::*;

/// Compiled patterns kept per thread.
const CACHE_ENTRIES: usize = 16;

/// One pattern compiled for text subjects (valid UTF-8: empty matches never split a
/// character) and, when first needed, for byte subjects.
pub struct Compiled {
    text: Regex,
    bytes: OnceCell<bytes::Regex>,
    /// The pattern compiled with Unicode mode off, for ASCII subjects (None when the
    /// pattern needs Unicode mode: a `\p{..}` class, say). On a subject of ASCII bytes
    /// only it finds exactly what the Unicode pattern finds (every Unicode class agrees
    /// with its ASCII form on ASCII characters, and every position is a character
    /// boundary), with a much smaller automaton: `\S` is one byte class instead of the
    /// UTF-8 sequences of every non-space character.
    ascii: OnceCell<Option<bytes::Regex>>,
    /// States of the pattern's Thompson NFA: what one byte of subject can cost when the
    /// engine falls back from its lazy DFA to simulating the NFA (the work charge).
    states: u64,
}

/// The states of `pat`'s NFA as the engine compiles it (its own size bound applies).
fn nfa_states(pat: &str) -> u64 {
    use regex_automata::nfa::thompson;
    thompson::Compiler::new()
        .configure(thompson::Config::new().nfa_size_limit(Some(MAX_REGEX_PROGRAM)))
        .build(pat)
        .map(|nfa| nfa.states().len() as u64)
        .unwrap_or(MAX_REGEX_PROGRAM as u64)
}

/// re.*: the subject's bytes at the byte rate, times (1 + the pattern's NFA states /
/// `WORK_REGEX_STATES_PER_UNIT`), charged before the search (its size is known), and
/// `WORK_REGEX_MATCH` per match or piece produced, as they are found.
const RE: Cost = Cost::custom(0.08, 0.0);

impl Compiled {
    fn bytes(&self) -> &bytes::Regex {
        self.bytes.get_or_init(|| {
            // The same pattern and limits already compiled once as text: this cannot fail
            // for a reason the text build did not.
            builder_bytes(self.text.as_str()).build().unwrap_or_else(|_| bytes::Regex::new("$^").expect("trivial"))
        })
    }
}

/// Which compiled form searches a subject.
enum Engine<'a> {
    Text(&'a Regex, &'a str),
    Bytes(&'a bytes::Regex),
}

impl Compiled {
    fn ascii(&self) -> Option<&bytes::Regex> {
        self.ascii
            .get_or_init(|| {
                let mut b = builder_bytes(self.text.as_str());
                b.unicode(false);
                b.build().ok()
            })
            .as_ref()
    }

    /// The engine for subject `s`: the ASCII form for ASCII bytes, the text form for
    /// other UTF-8 (empty matches never split a character), the byte form otherwise.
    fn engine<'a>(&'a self, s: &'a [u8]) -> Engine<'a> {
        if s.is_ascii() {
            if let Some(a) = self.ascii() {
                return Engine::Bytes(a);
            }
        }
        match std::str::from_utf8(s) {
            Ok(t) => Engine::Text(&self.text, t),
            Err(_) => Engine::Bytes(self.bytes()),
        }
    }
}

fn builder_bytes(pat: &str) -> bytes::RegexBuilder {
    let mut b = bytes::RegexBuilder::new(pat);
    b.size_limit(MAX_REGEX_PROGRAM).dfa_size_limit(MAX_REGEX_DFA_CACHE);
    b
}

/// At most `CACHE_ENTRIES` patterns with their last use; looked up by comparing the
/// pattern's bytes (a few comparisons, no hashing of the pattern).
#[derive(Default)]
struct Cache {
    entries: Vec<(String, Rc<Compiled>, u64)>,
    tick: u64,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
}

/// Why a pattern was refused.
#[derive(Debug)]
pub enum PatternError {
    TooLong(usize),
    TooBig,
    Syntax(String),
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatternError::TooLong(n) => {
                write!(f, "pattern of {n} bytes is longer than the limit of {MAX_REGEX_PATTERN}")
            }
            PatternError::TooBig => write!(
                f,
                "pattern compiles to more than {MAX_REGEX_PROGRAM} bytes (Unicode classes such as \\w are large: \
                 try ASCII classes like [a-zA-Z0-9_] or (?-u:\\w), or fewer repetitions)"
            ),
            PatternError::Syntax(m) => write!(f, "bad pattern: {m}"),
        }
    }
}

/// The crate's syntax errors quote the pattern with a caret line, then `error: WHY`:
/// keep the one line a diagnostic needs.
fn short(m: &str) -> String {
    m.lines().rev().find_map(|l| l.strip_prefix("error: ")).unwrap_or(m).to_string()
}

/// Compile `pat` (or fetch it from the cache).
pub fn compile(pat: &str) -> Result<Rc<Compiled>, PatternError> {
    if pat.len() > MAX_REGEX_PATTERN {
        return Err(PatternError::TooLong(pat.len()));
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        c.tick += 1;
        let tick = c.tick;
        if let Some((_, re, used)) = c.entries.iter_mut().find(|(p, _, _)| p == pat) {
            *used = tick;
            return Ok(Rc::clone(re));
        }
        let text =
            RegexBuilder::new(pat).size_limit(MAX_REGEX_PROGRAM).dfa_size_limit(MAX_REGEX_DFA_CACHE).build().map_err(
                |e| match e {
                    regex::Error::CompiledTooBig(_) => PatternError::TooBig,
                    regex::Error::Syntax(m) => PatternError::Syntax(short(&m)),
                    other => PatternError::Syntax(other.to_string()),
                },
            )?;
        let re = Rc::new(Compiled { text, bytes: OnceCell::new(), ascii: OnceCell::new(), states: nfa_states(pat) });
        if c.entries.len() >= CACHE_ENTRIES {
            if let Some(oldest) = (0..c.entries.len()).min_by_key(|&i| c.entries[i].2) {
                c.entries.swap_remove(oldest);
            }
        }
        c.entries.push((pat.to_string(), Rc::clone(&re), tick));
        Ok(re)
    })
}

/// The pattern (argument 0, compiled) and the subject (argument 1).
fn pat_subject<'a>(it: &mut Interp<'_>, name: &str, args: &'a [Value]) -> R<(Rc<Compiled>, &'a [u8])> {
    let pat = it.arg_text(name, args, 0)?;
    let s = it.arg_str(name, args, 1)?;
    let re = compile(pat).map_err(|e| it.err(ErrKind::Value, format!("{name}: {e}")))?;
    let weight = 1 + re.states / WORK_REGEX_STATES_PER_UNIT;
    it.work(RE.units((s.len() as u64).saturating_mul(weight), 0))?;
    Ok((re, s.as_slice()))
}

fn test(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.test", args)?;
    Ok(Value::Bool(match re.engine(s) {
        Engine::Text(r, t) => r.is_match(t),
        Engine::Bytes(r) => r.is_match(s),
    }))
}

fn match_(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.match", args)?;
    let group = |g: Option<&[u8]>| g.map(Value::str_from).unwrap_or(Value::Nil);
    let items: Vec<Value> = match re.engine(s) {
        Engine::Text(r, t) => match r.captures(t) {
            None => return Ok(Value::Nil),
            Some(caps) => caps.iter().map(|g| group(g.map(|m| m.as_str().as_bytes()))).collect(),
        },
        Engine::Bytes(r) => match r.captures(s) {
            None => return Ok(Value::Nil),
            Some(caps) => caps.iter().map(|g| group(g.map(|m| m.as_bytes()))).collect(),
        },
    };
    it.make_list(items)
}

/// Collect the pieces an iterator yields into a list, within the list limit.
fn collect<'a>(it: &mut Interp<'_>, name: &str, what: &str, pieces: impl Iterator<Item = &'a [u8]>) -> R<Value> {
    let mut items = Vec::new();
    for p in pieces {
        it.work(WORK_REGEX_MATCH)?;
        if items.len() == MAX_LIST_ITEMS {
            return Err(it.limit(LimitKind::List, format!("{name}: more than {MAX_LIST_ITEMS} {what}")));
        }
        items.push(Value::str_from(p));
    }
    it.make_list(items)
}

fn find_all(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.find_all", args)?;
    match re.engine(s) {
        Engine::Text(r, t) => collect(it, "re.find_all", "matches", r.find_iter(t).map(|m| m.as_str().as_bytes())),
        Engine::Bytes(r) => collect(it, "re.find_all", "matches", r.find_iter(s).map(|m| m.as_bytes())),
    }
}

fn split(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.split", args)?;
    match re.engine(s) {
        Engine::Text(r, t) => collect(it, "re.split", "pieces", r.split(t).map(str::as_bytes)),
        Engine::Bytes(r) => collect(it, "re.split", "pieces", r.split(s)),
    }
}

fn replace(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.replace", args)?;
    let with = it.arg_str("re.replace", args, 2)?;
    let mut out = Vec::with_capacity(s.len());
    let mut last = 0;
    // A replacement that is not UTF-8 takes the byte form (as does a subject that is not).
    let engine = match (re.engine(s), std::str::from_utf8(with)) {
        (Engine::Text(r, t), Ok(w)) => Ok((r, t, w)),
        (Engine::Text(..), Err(_)) => Err(re.bytes()),
        (Engine::Bytes(r), _) => Err(r),
    };
    match engine {
        Ok((r, t, w)) => {
            let mut piece = String::new();
            for caps in r.captures_iter(t) {
                let m = caps.get(0).expect("group 0 always takes part");
                out.extend_from_slice(&s[last..m.start()]);
                piece.clear();
                caps.expand(w, &mut piece);
                out.extend_from_slice(piece.as_bytes());
                last = m.end();
                it.check_str_len(out.len())?;
                it.work(WORK_REGEX_MATCH)?;
            }
        }
        Err(r) => {
            for caps in r.captures_iter(s) {
                let m = caps.get(0).expect("group 0 always takes part");
                out.extend_from_slice(&s[last..m.start()]);
                caps.expand(with, &mut out);
                last = m.end();
                it.check_str_len(out.len())?;
                it.work(WORK_REGEX_MATCH)?;
            }
        }
    }
    out.extend_from_slice(&s[last..]);
    it.make_str(out)
}

pub const TABLE: &[Builtin] = &[
    b("re.test", "re.test(pattern, s)", 2, 2, RE, test),
    b("re.match", "re.match(pattern, s)", 2, 2, RE, match_),
    b("re.find_all", "re.find_all(pattern, s)", 2, 2, RE, find_all),
    b("re.replace", "re.replace(pattern, s, with)", 3, 3, RE, replace),
    b("re.split", "re.split(pattern, s)", 2, 2, RE, split),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        let at = "a".repeat(MAX_REGEX_PATTERN);
        assert!(compile(&at).is_ok());
        let over = "a".repeat(MAX_REGEX_PATTERN + 1);
        assert!(matches!(compile(&over), Err(PatternError::TooLong(_))));
        // Unicode \w is large: 41 fit in the program bound, 42 do not.
        assert!(compile(r"\w{41}").is_ok());
        assert!(matches!(compile(r"\w{42}"), Err(PatternError::TooBig)));
        assert!(compile(r"(?-u:\w){1000}").is_ok());
        assert!(matches!(compile("("), Err(PatternError::Syntax(_))));
    }

    #[test]
    fn cache_evicts_least_recent() {
        for i in 0..(CACHE_ENTRIES * 2) {
            compile(&format!("x{i}")).unwrap();
        }
        CACHE.with(|c| assert_eq!(c.borrow().entries.len(), CACHE_ENTRIES));
    }

    #[test]
    fn empty_matches_keep_utf8_whole() {
        let re = compile("").unwrap();
        let pieces: Vec<_> = re.text.split("é").collect();
        assert_eq!(pieces, ["", "é", ""]);
        assert!(re.bytes().is_match(b"\xff"));
    }

    /// The ASCII form finds exactly what the Unicode form finds on ASCII subjects: every
    /// capture group's span, for every match, over patterns that use each kind of class.
    #[test]
    fn ascii_form_agrees_on_ascii_subjects() {
        let pats = [
            r"\S+",
            r"\w+",
            r"\b\w+\b",
            r"\B",
            r"(?i)kelvin|s",
            r"(?i)[a-z]+",
            r"[^\]]+",
            r".",
            r"(?s).",
            r"\s+",
            r"\d{3}",
            r"[[:alpha:]]+",
            r"(?m)^\w*$",
            "",
            "a*",
            r"(?P<w>\w)(\W)?",
            r"[^a-z]",
            r"\W+",
            r"[\w--\d]+",
            r#"^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)"#,
            r"(\w+)@(\w+)\.com",
            "é|e",
            r"\x7f|\x00",
            r"[\x00-\x7f]+",
            r"(?u:\w)+",
        ];
        let subjects = [
            "",
            "abc",
            "Kelvin kelvin KELVIN s S",
            "hello, world!\n  foo_bar 123 4567\tx",
            "1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] \"GET /a/b?q=1 HTTP/1.1\" 200 512 \"-\" \"x\"",
            "\x00\x01\x7f ]]] [x] \r\n\r\n",
            "a@b.com c@d.com",
            "aaa",
            "_ _ __ 9_9",
        ];
        for p in pats {
            let re = compile(p).unwrap();
            let Some(a) = re.ascii() else { continue };
            for s in subjects {
                let text: Vec<Vec<Option<(usize, usize)>>> = re
                    .text
                    .captures_iter(s)
                    .map(|c| c.iter().map(|g| g.map(|m| (m.start(), m.end()))).collect())
                    .collect();
                let ascii: Vec<Vec<Option<(usize, usize)>>> = a
                    .captures_iter(s.as_bytes())
                    .map(|c| c.iter().map(|g| g.map(|m| (m.start(), m.end()))).collect())
                    .collect();
                assert_eq!(text, ascii, "pattern {p:?} on {s:?}");
            }
        }
        // A pattern that needs Unicode mode has no ASCII form and keeps the text form.
        assert!(compile(r"\p{Greek}").unwrap().ascii().is_none());
        assert!(matches!(compile(r"\p{Greek}").unwrap().engine(b"abc"), Engine::Text(..)));
    }
}
