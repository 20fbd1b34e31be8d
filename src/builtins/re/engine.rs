//! One pattern compiled: its engines (`Engine`: the lazy DFAs with their prefilter, the
//! PikeVM, the bounded backtracker, `capture.rs`'s program, each with its cache), the
//! forms a pattern is compiled to (`Compiled`: text, and when first needed bytes and
//! ASCII), the pattern's positions (what a subject byte costs the PikeVM), why a pattern
//! is refused (`PatternError`) and the work a compile is charged.

use std::cell::RefCell;
use std::rc::Rc;

use regex_automata::hybrid;
use regex_automata::nfa::thompson::{
    self, backtrack, backtrack::BoundedBacktracker, pikevm, pikevm::PikeVM, WhichCaptures,
};
use regex_automata::util::captures::Captures;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::util::syntax;
use regex_automata::MatchKind;

use super::{capture, sim};
use crate::limits::*;

/// One pattern's engines for one kind of subject: text (valid UTF-8: empty matches
/// never split a character) or bytes.
pub struct Engine {
    /// Forward and reverse lazy DFAs; `None` when the pattern's NFA is too big for the
    /// DFA cache (every search is then the charged PikeVM).
    pub(super) hy: Option<hybrid::regex::Regex>,
    pub(super) pike: PikeVM,
    /// The bounded backtracker over the same NFA: capture groups of a match span short
    /// enough for its visited set (states x span bits, 256 KiB), found faster than by the
    /// PikeVM (the same matches: both report leftmost-first groups; linear too, as every
    /// (state, position) pair is visited at most once). Charged as the PikeVM.
    pub(super) bt: Option<BoundedBacktracker>,
    /// The specialised capture backtracker (`capture.rs`), for patterns it models.
    pub(super) cap: Option<capture::Prog>,
    /// Every match begins where the search does (`^...` without multi-line mode).
    pub(super) anchored: bool,
    /// States of the pattern's Thompson NFA (the up-front weight).
    pub(super) states: u64,
    /// The pattern's positions (see `positions`): what one byte of subject costs the
    /// PikeVM.
    pub(super) threads: u64,
    pub(super) caches: RefCell<Caches>,
}

pub(super) struct Caches {
    pub(super) hy: Option<hybrid::regex::Cache>,
    pub(super) pike: pikevm::Cache,
    pub(super) bt: Option<backtrack::Cache>,
    pub(super) cap: capture::Cache,
    pub(super) sim: sim::SimCache,
    /// The capture slots `re.match` fills (kept: one allocation less per call).
    pub(super) caps: Option<Captures>,
}

/// One pattern compiled for text subjects and, when first needed, for byte subjects.
#[derive(Clone)]
pub struct Compiled {
    pub(super) pat: Rc<str>,
    pub(super) text: Rc<Engine>,
    pub(super) bytes: Rc<std::cell::OnceCell<Result<Rc<Engine>, String>>>,
    /// The pattern compiled with Unicode mode off, for subjects of ASCII bytes only
    /// (None when the pattern needs Unicode mode, a `\p{..}` class say). On such a subject
    /// it finds exactly what the Unicode form finds (every Unicode class agrees with its
    /// ASCII form on ASCII characters, and every position is a character boundary), with
    /// far smaller automata: `\S` is one byte class instead of the UTF-8 sequences of
    /// every non-space character (a log line's regex runs about 2.5x fewer instructions).
    pub(super) ascii: Rc<std::cell::OnceCell<Option<Rc<Engine>>>>,
    /// The ASCII form a warm process compiled already (`warm_patterns`): taken into
    /// `ascii` when it is first needed, charged exactly as a compile then.
    pub(super) warm_ascii: Option<Option<Rc<Engine>>>,
    /// NFA states of the text engine (the `RE` weight).
    pub(super) states: u64,
}

/// The pattern's positions: each byte of a literal, each class and each assertion, with
/// counted repetitions multiplied out. The PikeVM keeps at most about one thread per
/// position alive (a Unicode class is one position: a thread walks its UTF-8 trie one
/// state at a time), so its work per subject byte grows with this, where the NFA's state
/// count would over-charge Unicode classes a hundredfold (`\w` is hundreds of states).
fn positions(h: &regex_syntax::hir::Hir) -> u64 {
    use regex_syntax::hir::{Class, HirKind, Look};
    match h.kind() {
        HirKind::Empty => 0,
        HirKind::Literal(l) => l.0.len() as u64,
        // A thread in a Unicode class walks a UTF-8 trie of up to 4 states, and a Unicode
        // word boundary looks the characters around it up in Unicode's tables:
        // measured, `\b\w+\b` on non-ASCII text is about 16 positions' worth a byte.
        HirKind::Class(c) => match c {
            Class::Unicode(u) if u.ranges().last().is_some_and(|r| r.end() > '\x7f') => 4,
            _ => 1,
        },
        HirKind::Look(l) => match l {
            Look::WordUnicode
            | Look::WordUnicodeNegate
            | Look::WordStartUnicode
            | Look::WordEndUnicode
            | Look::WordStartHalfUnicode
            | Look::WordEndHalfUnicode => 6,
            _ => 1,
        },
        HirKind::Repetition(r) => {
            let n = r.max.unwrap_or(r.min.saturating_add(1)).max(1) as u64;
            positions(&r.sub).saturating_mul(n)
        }
        HirKind::Capture(c) => positions(&c.sub),
        HirKind::Concat(v) | HirKind::Alternation(v) => v.iter().fold(0u64, |a, h| a.saturating_add(positions(h))),
    }
}

/// `utf8`: the engines for valid UTF-8 text (empty matches never split a character);
/// `unicode`: Unicode mode (off only for the ASCII-subject form, see `Compiled::ascii`).
pub(super) fn build(pat: &str, utf8: bool, unicode: bool) -> Result<Engine, PatternError> {
    let hir = syntax::parse_with(pat, &syntax::Config::new().utf8(utf8).unicode(unicode))
        .map_err(|e| PatternError::Syntax(short(&e.to_string())))?;
    let too_big = |e: thompson::BuildError| match e.size_limit() {
        Some(_) => PatternError::TooBig,
        None => PatternError::Syntax(e.to_string()),
    };
    let tc = thompson::Config::new().utf8(utf8).nfa_size_limit(Some(MAX_REGEX_PROGRAM)).shrink(false);
    let nfa = thompson::Compiler::new().configure(tc.clone()).build_from_hir(&hir).map_err(too_big)?;
    let rev = thompson::Compiler::new()
        .configure(tc.reverse(true).which_captures(WhichCaptures::None))
        .build_from_hir(&hir)
        .map_err(too_big)?;
    let pre = Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, &hir);
    let dc = hybrid::dfa::Config::new()
        .cache_capacity(MAX_REGEX_DFA_CACHE)
        .unicode_word_boundary(true)
        .minimum_cache_clear_count(Some(REGEX_DFA_CLEARS))
        .minimum_bytes_per_state(None);
    let fwd = hybrid::dfa::Builder::new()
        .configure(
            dc.clone().specialize_start_states(pre.is_some()).prefilter(pre).match_kind(MatchKind::LeftmostFirst),
        )
        .build_from_nfa(nfa.clone());
    let back = hybrid::dfa::Builder::new()
        .configure(dc.prefilter(None).specialize_start_states(false).match_kind(MatchKind::All))
        .build_from_nfa(rev);
    let hy = match (fwd, back) {
        (Ok(f), Ok(r)) => Some(hybrid::regex::Builder::new().build_from_dfas(f, r)),
        _ => None,
    };
    let states = nfa.states().len() as u64;
    let threads = positions(&hir).max(1);
    let bt = BoundedBacktracker::new_from_nfa(nfa.clone()).ok();
    let cap = capture::Prog::new(&hir, nfa.group_info().slot_len(), nfa.look_matcher().clone());
    let pike = PikeVM::new_from_nfa(nfa).map_err(|e| PatternError::Syntax(e.to_string()))?;
    let caches = RefCell::new(Caches {
        hy: hy.as_ref().map(|h| h.create_cache()),
        pike: pike.create_cache(),
        bt: bt.as_ref().map(|b| b.create_cache()),
        cap: capture::Cache::default(),
        sim: sim::SimCache::default(),
        caps: None,
    });
    let anchored = pike.get_nfa().is_always_start_anchored();
    Ok(Engine { hy, pike, bt, cap, anchored, states, threads, caches })
}

impl Compiled {
    /// The engine for `s`: text when it is valid UTF-8, bytes otherwise; and whether it
    /// was compiled just now (then its compile is charged).
    pub(super) fn engine(&self, s: &[u8]) -> (Result<Rc<Engine>, String>, bool) {
        if s.is_ascii() {
            let fresh = self.ascii.get().is_none();
            let a = self.ascii.get_or_init(|| match &self.warm_ascii {
                Some(w) => w.clone(),
                None => build(&self.pat, false, false).ok().map(Rc::new),
            });
            match a {
                Some(e) => return (Ok(e.clone()), fresh),
                // Tried and refused (a Unicode-only pattern): charged as one more compile.
                None => return (Ok(self.text.clone()), fresh),
            }
        }
        if std::str::from_utf8(s).is_ok() {
            return (Ok(self.text.clone()), false);
        }
        let fresh = self.bytes.get().is_none();
        // The same pattern and limits already compiled once as text; a failure here
        // (not expected) is reported, not hidden.
        let e =
            self.bytes.get_or_init(|| build(&self.pat, false, true).map(Rc::new).map_err(|e| e.to_string())).clone();
        (e, fresh)
    }
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

/// The work of compiling a pattern of `states` NFA states (parsing, the NFAs, the DFAs'
/// and the PikeVM's caches).
pub(super) fn compile_work(states: u64) -> u64 {
    WORK_REGEX_COMPILE.saturating_add(states.saturating_mul(WORK_REGEX_COMPILE_STATE))
}

/// What a compile refused as too big is charged as: it built NFA states up to the
/// program limit (about 16 bytes each) before it stopped.
pub(super) const COMPILE_FAILED_STATES: u64 = (MAX_REGEX_PROGRAM / 16) as u64;
