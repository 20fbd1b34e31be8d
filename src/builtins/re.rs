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
        let re = Rc::new(Compiled { text, bytes: OnceCell::new(), states: nfa_states(pat) });
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

fn as_text(s: &[u8]) -> Option<&str> {
    std::str::from_utf8(s).ok()
}

fn test(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.test", args)?;
    Ok(Value::Bool(match as_text(s) {
        Some(t) => re.text.is_match(t),
        None => re.bytes().is_match(s),
    }))
}

fn match_(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.match", args)?;
    let group = |g: Option<&[u8]>| g.map(|m| Value::str(m.to_vec())).unwrap_or(Value::Nil);
    let items: Vec<Value> = match as_text(s) {
        Some(t) => match re.text.captures(t) {
            None => return Ok(Value::Nil),
            Some(caps) => caps.iter().map(|g| group(g.map(|m| m.as_str().as_bytes()))).collect(),
        },
        None => match re.bytes().captures(s) {
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
        items.push(Value::str(p.to_vec()));
    }
    it.make_list(items)
}

fn find_all(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.find_all", args)?;
    match as_text(s) {
        Some(t) => collect(it, "re.find_all", "matches", re.text.find_iter(t).map(|m| m.as_str().as_bytes())),
        None => collect(it, "re.find_all", "matches", re.bytes().find_iter(s).map(|m| m.as_bytes())),
    }
}

fn split(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.split", args)?;
    match as_text(s) {
        Some(t) => collect(it, "re.split", "pieces", re.text.split(t).map(str::as_bytes)),
        None => collect(it, "re.split", "pieces", re.bytes().split(s)),
    }
}

fn replace(it: &mut Interp<'_>, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.replace", args)?;
    let with = it.arg_str("re.replace", args, 2)?;
    let mut out = Vec::with_capacity(s.len());
    let mut last = 0;
    match (as_text(s), as_text(with)) {
        (Some(t), Some(w)) => {
            let mut piece = String::new();
            for caps in re.text.captures_iter(t) {
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
        _ => {
            for caps in re.bytes().captures_iter(s) {
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
}
