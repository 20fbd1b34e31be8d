//! Regular expressions (`re.*`) on regex-automata's engines: linear-time (no
//! backtracking, no look-around, no back-references), so matching time grows with
//! pattern size times subject size and never explodes.
//!
//! Patterns are UTF-8 text of at most `MAX_REGEX_PATTERN` bytes and compile to at most
//! `MAX_REGEX_PROGRAM` bytes. Subjects are bytes: Unicode classes match UTF-8, and
//! invalid UTF-8 is never matched by `.`. Compiled patterns are kept in a small
//! per-thread LRU cache, so a loop calling `re.test` with one pattern compiles it once.
//!
//! The search, and what it is charged (SPEC 8.1, issue 10 item 11). The `regex` crate's
//! own engine selection cannot be metered: when its lazy DFA's cache thrashes it falls
//! back, silently and without a look at the clock, to simulating the NFA, at about 4 ns
//! per NFA state per byte (`a[ab]{1280}[^ab]` over 1 MiB of random `a`/`b`: 11 s of CPU
//! for a charge of 4 ms). So the engines are driven here, each step charged:
//! 1. the lazy DFA (forward to find where a match ends, reverse to find where it
//!    starts), with a prefilter on the pattern's literal prefixes. Its cache is capped
//!    at `MAX_REGEX_DFA_CACHE` and it may clear it at most `REGEX_DFA_CLEARS` times per
//!    call, then it gives up: deterministically, for the same pattern, subject and call
//!    history. Charged: the subject's bytes up front (`RE`: a prefilter's skip to the
//!    first candidate, at memchr's speed), every byte the DFAs scan from there as they are
//!    scanned (`WORK_REGEX_SCAN_BYTE_X256`; iteration can rescan), and the DFA states it built
//!    (bytes of cache, `WORK_REGEX_DFA_BYTE_X256`) after each search;
//! 2. when it gives up (or meets a byte it cannot handle: Unicode `\b` on non-ASCII),
//!    or has no DFA (an NFA too big for its cache), a resumable NFA simulation
//!    (`sim.rs`: the matches the PikeVM finds, leftmost-first) run about
//!    `SIM_CHUNK_UNITS` of work at a time, each run charged as it ends, per position
//!    scanned x pattern positions x `WORK_REGEX_SIM_X256`: every search of a call,
//!    rescans of an iteration included, is charged for what it scans, and the meter
//!    looks at the work limit and the deadline about every millisecond of it;
//! 3. capture groups (`re.match`, `re.replace` with `$` in the replacement): for the
//!    patterns it models (byte classes: on ASCII subjects, the Unicode-off form), the
//!    specialised backtracker of `capture.rs` (greedy byte-class runs scanned with a
//!    table, a visited set at join points, a step budget of one per instruction x
//!    position); otherwise, or when it gives up, regex-automata's backtracker or PikeVM;
//!    each anchored on the match's span (whose length bounds it), charged the PikeVM's
//!    rate BEFORE it runs: refused with `work` if the budget cannot pay, and with `time`
//!    if, at that rate (margin 2), it would end past `--max-time`.
//!
//! A DFA search is bounded by the clear limit (a few cache fills, some milliseconds)
//! and charged as it ends, so no step runs far past the deadline.

mod capture;
mod sim;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use regex_automata::hybrid;
use regex_automata::nfa::thompson::{
    self, backtrack, backtrack::BoundedBacktracker, pikevm, pikevm::PikeVM, WhichCaptures,
};
use regex_automata::util::captures::Captures;
use regex_automata::util::iter::Searcher;
use regex_automata::util::prefilter::Prefilter;
use regex_automata::util::syntax;
use regex_automata::{Anchored, Input, Match, MatchKind};

use super::host::HasHost;
use super::Host;
use super::{b, calls, Builtin, Callbacks, Cost};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

/// Work between two charges of the NFA simulation (about a millisecond: the meter looks
/// at the deadline every `WORK_TIME_CHECK` units).
const SIM_CHUNK_UNITS: u64 = 1 << 18;

/// Compiled patterns kept per thread.
const CACHE_ENTRIES: usize = 16;

/// One pattern's engines for one kind of subject: text (valid UTF-8: empty matches
/// never split a character) or bytes.
pub struct Engine {
    /// Forward and reverse lazy DFAs; `None` when the pattern's NFA is too big for the
    /// DFA cache (every search is then the charged PikeVM).
    hy: Option<hybrid::regex::Regex>,
    pike: PikeVM,
    /// The bounded backtracker over the same NFA: capture groups of a match span short
    /// enough for its visited set (states x span bits, 256 KiB), found faster than by the
    /// PikeVM (the same matches: both report leftmost-first groups; linear too, as every
    /// (state, position) pair is visited at most once). Charged as the PikeVM.
    bt: Option<BoundedBacktracker>,
    /// The specialised capture backtracker (`capture.rs`), for patterns it models.
    cap: Option<capture::Prog>,
    /// Every match begins where the search does (`^...` without multi-line mode).
    anchored: bool,
    /// States of the pattern's Thompson NFA (the up-front weight).
    states: u64,
    /// The pattern's positions (see `positions`): what one byte of subject costs the
    /// PikeVM.
    threads: u64,
    caches: RefCell<Caches>,
}

struct Caches {
    hy: Option<hybrid::regex::Cache>,
    pike: pikevm::Cache,
    bt: Option<backtrack::Cache>,
    cap: capture::Cache,
    sim: sim::SimCache,
    /// The capture slots `re.match` fills (kept: one allocation less per call).
    caps: Option<Captures>,
}

/// One pattern compiled for text subjects and, when first needed, for byte subjects.
#[derive(Clone)]
pub struct Compiled {
    pat: Rc<str>,
    text: Rc<Engine>,
    bytes: Rc<std::cell::OnceCell<Result<Rc<Engine>, String>>>,
    /// The pattern compiled with Unicode mode off, for subjects of ASCII bytes only
    /// (None when the pattern needs Unicode mode, a `\p{..}` class say). On such a subject
    /// it finds exactly what the Unicode form finds (every Unicode class agrees with its
    /// ASCII form on ASCII characters, and every position is a character boundary), with
    /// far smaller automata: `\S` is one byte class instead of the UTF-8 sequences of
    /// every non-space character (a log line's regex runs about 2.5x fewer instructions).
    ascii: Rc<std::cell::OnceCell<Option<Rc<Engine>>>>,
    /// The ASCII form a warm process compiled already (`warm_patterns`): taken into
    /// `ascii` when it is first needed, charged exactly as a compile then.
    warm_ascii: Option<Option<Rc<Engine>>>,
    /// NFA states of the text engine (the `RE` weight).
    states: u64,
}

/// re.*: the subject's bytes at the byte rate, times (1 + the pattern's NFA states /
/// `WORK_REGEX_STATES_PER_UNIT`), charged before the search (its size is known), and
/// `WORK_REGEX_MATCH` per match or piece produced, as they are found; past that, the
/// engine's own charges (see the module's header).
const RE: Cost = Cost::custom(0.05, 0.0);

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
fn build(pat: &str, utf8: bool, unicode: bool) -> Result<Engine, PatternError> {
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
    fn engine(&self, s: &[u8]) -> (Result<Rc<Engine>, String>, bool) {
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

/// One call's search state: the engine, the DFA bytes already charged for, and the
/// bytes scanned so far.
struct Run<'h> {
    e: Rc<Engine>,
    hay: &'h [u8],
    /// DFA bytes scanned already charged (each search's bytes are charged after it).
    paid: u64,
    scanned: u64,
    /// Positions the NFA simulation has run in this call, and the work charged for them.
    sim_positions: u64,
    sim_charged: u64,
}

/// The PikeVM's work over `bytes` of subject: per byte per position.
fn pike_units(bytes: u64, states: u64) -> u64 {
    crate::meter::scaled(bytes.saturating_add(1).saturating_mul(states.max(1)), WORK_REGEX_PIKE_X256)
}

/// Charge `units` of PikeVM work before it runs, then the deadline check.
fn pike_charge(it: &mut Host, name: &str, units: u64) -> R<()> {
    it.work(units)?;
    pike_deadline(it, name, units)
}

/// The capture engine's quick search over `len` bytes: its set-up and its step budget
/// (the program once, every position twice), charged before it runs.
fn quick_charge(p: &capture::Prog, len: usize) -> u64 {
    WORK_REGEX_CAPTURES
        .saturating_add((p.quick_steps(len.saturating_add(1)) as u64).saturating_mul(WORK_REGEX_QUICK_STEP))
}

/// The PikeVM cannot be interrupted: a search whose work (at about a nanosecond a unit,
/// with a margin of 2) would end past the deadline is stopped now rather than let run
/// past it.
fn pike_deadline(it: &mut Host, name: &str, units: u64) -> R<()> {
    if let Some(left) = it.meter.remaining() {
        let need = Duration::from_nanos(units.saturating_mul(2).min(u64::MAX / 4));
        // Zero left: the deadline has passed (even a search that needs nothing stops).
        if need > left || left.is_zero() {
            let left = left.as_millis();
            return Err(it.limit(
                LimitKind::Time,
                format!(
                    "{name}: this search needs about {} ms of CPU and {left} ms are left (--max-time)",
                    units / 1_000_000
                ),
            ));
        }
    }
    Ok(())
}

impl<'h> Run<'h> {
    fn new(it: &mut Host, name: &str, re: &Compiled, hay: &'h [u8]) -> R<Run<'h>> {
        let (e, fresh) = re.engine(hay);
        if fresh {
            it.work(compile_work(e.as_ref().map_or(COMPILE_FAILED_STATES, |e| e.states)))?;
        }
        let e = e.map_err(|m| it.err(ErrKind::Value, format!("{name}: {m}")))?;
        {
            // A cache that gave up in an earlier call starts this one afresh.
            let mut c = e.caches.borrow_mut();
            if let (Some(hy), Some(hc)) = (e.hy.as_ref(), c.hy.as_mut()) {
                if hc.forward().clear_count() >= REGEX_DFA_CLEARS || hc.reverse().clear_count() >= REGEX_DFA_CLEARS {
                    hy.reset_cache(hc);
                }
            }
        }
        // The up-front charge pays for the prefilter's skipping to a first candidate (at
        // memchr's speed, not counted as scanned); every byte the DFAs scan from there
        // is charged as scanned (`charge_dfa`), at about 2 ns, 40 times the up-front rate.
        Ok(Run { e, hay, paid: 0, scanned: 0, sim_positions: 0, sim_charged: 0 })
    }

    /// Charge what one lazy-DFA search did: bytes scanned past what was paid, and the
    /// states it built (cache bytes; a clear counts the whole cache).
    fn charge_dfa(
        &mut self,
        it: &mut Host,
        span: usize,
        before: (usize, usize, usize),
        c: &hybrid::regex::Cache,
    ) -> R<()> {
        let (mem0, clears0, len0) = before;
        let (mem1, clears1, len1) = dfa_gauge(c);
        let scanned = if clears1 == clears0 { len1.saturating_sub(len0) } else { 2 * span } as u64;
        self.scanned += scanned;
        let mut units = 0u64;
        if self.scanned > self.paid {
            units += crate::meter::scaled(self.scanned - self.paid, WORK_REGEX_SCAN_BYTE_X256);
            self.paid = self.scanned;
        }
        let built = mem1.saturating_sub(mem0) + (clears1 - clears0) * MAX_REGEX_DFA_CACHE;
        units += crate::meter::scaled(built as u64, WORK_REGEX_DFA_BYTE_X256);
        if units > 0 {
            it.work(units)?;
        }
        Ok(())
    }

    /// Whether the pattern matches anywhere in the subject.
    fn is_match(&mut self, it: &mut Host) -> R<bool> {
        let input = Input::new(self.hay).earliest(true);
        let e = self.e.clone();
        {
            let mut c = e.caches.borrow_mut();
            let c = &mut *c;
            if let (Some(hy), Some(hc)) = (e.hy.as_ref(), c.hy.as_mut()) {
                let before = dfa_gauge(hc);
                let r = hy.forward().try_search_fwd(hc.forward_mut(), &input);
                self.charge_dfa(it, self.hay.len(), before, hc)?;
                if let Ok(m) = r {
                    return Ok(m.is_some());
                }
            }
        }
        Ok(self.nfa_find(it, &input)?.is_some())
    }

    /// The leftmost-first match in `input`'s span.
    fn find(&mut self, it: &mut Host, input: &Input<'_>) -> R<Option<Match>> {
        let e = self.e.clone();
        {
            let mut c = e.caches.borrow_mut();
            let c = &mut *c;
            if let (Some(hy), Some(hc)) = (e.hy.as_ref(), c.hy.as_mut()) {
                let before = dfa_gauge(hc);
                let r = hy.try_search(hc, input);
                self.charge_dfa(it, input.end().saturating_sub(input.start()), before, hc)?;
                if let Ok(m) = r {
                    return Ok(m);
                }
            }
        }
        self.nfa_find(it, input)
    }

    /// The leftmost-first match in `input`'s span by the NFA simulation (what the PikeVM
    /// finds), run `SIM_CHUNK_UNITS` of work at a time, each run charged as it ends (per
    /// position x pattern positions, at the PikeVM's rate): so every search of a call,
    /// rescans included, is charged for what it scans, and the meter looks at the work
    /// limit and the deadline about every millisecond of it.
    fn nfa_find(&mut self, it: &mut Host, input: &Input<'_>) -> R<Option<Match>> {
        let e = self.e.clone();
        let (positions, charged) = (&mut self.sim_positions, &mut self.sim_charged);
        sim_find(&e, input, |ran| {
            *positions += ran;
            let due = crate::meter::scaled(positions.saturating_mul(e.threads), WORK_REGEX_SIM_X256);
            if due > *charged {
                it.work(due - *charged)?;
                *charged = due;
            }
            Ok(())
        })
    }

    /// The capture groups of match `m` (the PikeVM anchored on its span).
    fn captures(&mut self, it: &mut Host, name: &str, m: Match, caps: &mut Captures) -> R<()> {
        let e = self.e.clone();
        if let Some(p) = e.cap.as_ref() {
            // The capture engine's quick search first, charged its step budget before it
            // runs; only when it gives up, the searches that may take pattern x span.
            it.work(quick_charge(p, m.len()))?;
            caps.set_pattern(Some(regex_automata::PatternID::ZERO));
            let mut c = e.caches.borrow_mut();
            if p.quick(&mut c.cap, self.hay, m.start(), m.end(), true, caps.slots_mut()) == Some(true) {
                return Ok(());
            }
        }
        pike_charge(it, name, WORK_REGEX_CAPTURES + pike_units(m.len() as u64, e.threads))?;
        let input = Input::new(self.hay).span(m.range()).anchored(Anchored::Yes);
        let mut c = e.caches.borrow_mut();
        let c = &mut *c;
        if let Some(p) = e.cap.as_ref() {
            caps.set_pattern(Some(regex_automata::PatternID::ZERO));
            if p.thorough_captures(&mut c.cap, self.hay, m.start(), m.end(), caps.slots_mut()) == Some(true) {
                return Ok(());
            }
        }
        if let (Some(bt), Some(bc)) = (e.bt.as_ref(), c.bt.as_mut()) {
            if m.len() <= bt.max_haystack_len() && bt.try_search(bc, &input, caps).is_ok() {
                return Ok(());
            }
        }
        e.pike.search(&mut c.pike, &input, caps);
        Ok(())
    }

    /// For a pattern anchored at its start that the capture engine models, the match and
    /// its groups (into `caps`) in one backtracking pass, without the DFA's: Some(true)
    /// found, Some(false) no match, None when the engine does not apply or gave up on its
    /// quick budget (about the program plus twice the subject, charged before it runs:
    /// `quick_charge`); the caller then searches as usual.
    fn find_anchored(&mut self, it: &mut Host, caps: &mut Captures) -> R<Option<bool>> {
        let e = self.e.clone();
        let Some(p) = e.cap.as_ref().filter(|_| e.anchored) else { return Ok(None) };
        it.work(quick_charge(p, self.hay.len()))?;
        caps.set_pattern(Some(regex_automata::PatternID::ZERO));
        let found = p.quick(&mut e.caches.borrow_mut().cap, self.hay, 0, self.hay.len(), false, caps.slots_mut());
        Ok(found)
    }

    /// Every leftmost-first match, in order (empty matches as the `regex` crate's
    /// iterators report them), each passed to `f`; stops at the first error.
    fn each<C: HasHost + ?Sized>(
        &mut self,
        cx: &mut C,
        _name: &str,
        mut f: impl FnMut(&mut C, &mut Self, Match) -> R<()>,
    ) -> R<()> {
        let mut searcher = Searcher::new(Input::new(self.hay));
        let mut fail = None;
        loop {
            let next = searcher.try_advance(|input| match self.find(cx.host(), input) {
                Ok(m) => Ok(m),
                Err(e) => {
                    fail = Some(e);
                    Ok(None)
                }
            });
            if let Some(e) = fail.take() {
                return Err(e);
            }
            match next {
                Ok(Some(m)) => f(cx, self, m)?,
                _ => return Ok(()),
            }
        }
    }
}

/// The leftmost-first match in `input`'s span by the NFA simulation, `charge` called
/// with the positions scanned after each run of about `SIM_CHUNK_UNITS` of work (an
/// error from it ends the search).
fn sim_find(e: &Engine, input: &Input<'_>, mut charge: impl FnMut(u64) -> R<()>) -> R<Option<Match>> {
    let nfa = e.pike.get_nfa();
    // As the PikeVM: with UTF-8 text, an empty match must not split a character; one
    // that would is searched for again from one byte further.
    let utf8empty = nfa.has_empty() && nfa.is_utf8();
    let chunk =
        (SIM_CHUNK_UNITS.saturating_mul(256) / e.threads.saturating_mul(WORK_REGEX_SIM_X256 as u64)).max(1) as usize;
    let mut input = input.clone();
    let mut c = e.caches.borrow_mut();
    loop {
        let mut search = sim::Search::new(nfa, &input, &mut c.sim);
        let found = loop {
            let before = search.at();
            let step = search.run(nfa, &input, &mut c.sim, chunk);
            let done = matches!(step, sim::Step::Done(_));
            charge((search.at() - before) as u64 + done as u64)?;
            if let sim::Step::Done(m) = step {
                break m;
            }
        };
        let Some((s, t)) = found else { return Ok(None) };
        if !utf8empty || input.is_char_boundary(t) {
            return Ok(Some(Match::must(0, s..t)));
        }
        if input.get_anchored().is_anchored() {
            return Ok(None);
        }
        input.set_start(input.start() + 1);
    }
}

/// Caches are kept between calls (a loop over one pattern reuses its DFA states), but one
/// that grew past `KEEP_CACHE` bytes (a thrashing search fills 1 MiB per DFA) is dropped
/// at the end of its call, so that 16 cached patterns do not hold tens of MiB of the
/// run's memory budget.
const KEEP_CACHE: usize = 256 * 1024;

impl Drop for Run<'_> {
    fn drop(&mut self) {
        if let Ok(mut c) = self.e.caches.try_borrow_mut() {
            if let (Some(hy), Some(hc)) = (self.e.hy.as_ref(), c.hy.as_mut()) {
                if hc.memory_usage() > KEEP_CACHE {
                    *hc = hy.create_cache();
                }
            }
            if c.pike.memory_usage() > KEEP_CACHE {
                c.pike = self.e.pike.create_cache();
            }
            if c.cap.memory_usage() > KEEP_CACHE {
                c.cap = capture::Cache::default();
            }
            if c.sim.memory_usage() > KEEP_CACHE {
                c.sim = sim::SimCache::default();
            }
        }
    }
}

/// (cache bytes, clears, bytes searched) of both lazy DFAs.
fn dfa_gauge(c: &hybrid::regex::Cache) -> (usize, usize, usize) {
    let (f, r) = c.as_parts();
    (c.memory_usage(), f.clear_count() + r.clear_count(), f.search_total_len() + r.search_total_len())
}

#[derive(Default)]
struct Cache {
    /// Pattern -> compiled form and when it was last used (shared with `last`).
    map: HashMap<String, (Compiled, Rc<std::cell::Cell<u64>>)>,
    tick: u64,
    /// The pattern value of the last call (held, so it cannot change or be freed while
    /// here) and its entry: a loop calling `re.match(pat, line)` with one variable finds
    /// it by pointer, without hashing the pattern or checking its UTF-8 again.
    last: Option<(Bytes, Compiled, Rc<std::cell::Cell<u64>>)>,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    /// Patterns compiled ahead of any run by `leash-cgi --fastcgi`'s warm process
    /// (`warm_patterns`), each handed to the first run that compiles the pattern (see
    /// `Warm`).
    static WARM: RefCell<HashMap<String, Warm>> = RefCell::new(HashMap::new());
}

/// A pattern compiled by `warm_patterns`: its text and ASCII forms (None: refused), and
/// whether a run has taken it. The engines stay referenced here, so that a worker that
/// took them never frees them (each free would write to, so copy, a page it shares with
/// the warm process).
struct Warm {
    text: Rc<Engine>,
    ascii: Option<Rc<Engine>>,
    taken: bool,
}

/// Compile `pats` now, on this thread, for the runs of the processes forked from this one
/// later (`leash-cgi --fastcgi`'s warm process: the constant patterns of the stdlib's
/// modules, so that each worker does not compile `cgi.headers`'s again). Only patterns
/// (text) are compiled: no search runs, so the engines' caches are as new. A pattern
/// that does not compile is left out (a run compiles it and reports it as always). A run
/// that compiles one of them takes it from here (once: a second compile of it in the
/// same process, after the per-run cache dropped it, builds it anew), and is charged the
/// same work as for compiling it: the compile's cost is moved, not its charge.
pub fn warm_patterns<'a>(pats: impl IntoIterator<Item = &'a str>) {
    for pat in pats {
        if pat.len() > MAX_REGEX_PATTERN || WARM.with(|w| w.borrow().contains_key(pat)) {
            continue;
        }
        let Ok(text) = build(pat, true, true) else { continue };
        let ascii = build(pat, false, false).ok().map(Rc::new);
        WARM.with(|w| w.borrow_mut().insert(pat.to_string(), Warm { text: Rc::new(text), ascii, taken: false }));
    }
}

/// How many patterns `warm_patterns` holds that no run has taken yet.
pub fn warm_count() -> usize {
    WARM.with(|w| w.borrow().values().filter(|w| !w.taken).count())
}

/// The warm engines of `pat`, if `warm_patterns` compiled it and no run took them yet.
fn take_warm(pat: &str) -> Option<(Rc<Engine>, Option<Rc<Engine>>)> {
    WARM.with(|w| {
        let mut w = w.borrow_mut();
        let e = w.get_mut(pat).filter(|e| !e.taken)?;
        e.taken = true;
        Some((e.text.clone(), e.ascii.clone()))
    })
}

/// Empty this thread's cache of compiled patterns. A run begins and ends with it empty
/// (`Host::new` and `Host`'s drop call this), so in a process that runs many
/// scripts (`leash test`, the fuzz targets, an embedding) one run's patterns, up to
/// 16 x 3 engines with their DFA caches, tens of MiB, neither stay on the heap after it
/// nor count against the next run's `--max-memory`, and what a run is charged for
/// compiling does not depend on which runs came before it.
pub fn forget_patterns() {
    // Taken out first, then dropped outside the borrow (a pattern's drop touches nothing
    // here, but a borrow held across arbitrary drops is a needless risk).
    let old = CACHE.with(|c| c.try_borrow_mut().map(|mut c| std::mem::take(&mut *c)).ok());
    drop(old);
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
fn compile_work(states: u64) -> u64 {
    WORK_REGEX_COMPILE.saturating_add(states.saturating_mul(WORK_REGEX_COMPILE_STATE))
}

/// What a compile refused as too big is charged as: it built NFA states up to the
/// program limit (about 16 bytes each) before it stopped.
const COMPILE_FAILED_STATES: u64 = (MAX_REGEX_PROGRAM / 16) as u64;

/// Compile `pat` (or fetch it from the cache).
pub fn compile(pat: &str) -> Result<Compiled, PatternError> {
    compile_charged(pat).0
}

/// Compile `pat` (or fetch it from the cache), with the work the compile did (0 for a
/// cache hit).
fn compile_charged(pat: &str) -> (Result<Compiled, PatternError>, u64) {
    if pat.len() > MAX_REGEX_PATTERN {
        return (Err(PatternError::TooLong(pat.len())), 0);
    }
    let mut work = 0;
    let r = compile_inner(pat, &mut work);
    (r, work)
}

fn compile_inner(pat: &str, work: &mut u64) -> Result<Compiled, PatternError> {
    compile_entry(pat, work).map(|(re, _)| re)
}

/// The cache's entry for `pat` (compiled now on a miss, `work` set to what that cost).
fn compile_entry(pat: &str, work: &mut u64) -> Result<(Compiled, Rc<std::cell::Cell<u64>>), PatternError> {
    if pat.len() > MAX_REGEX_PATTERN {
        return Err(PatternError::TooLong(pat.len()));
    }
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        c.tick += 1;
        let tick = c.tick;
        if let Some((re, used)) = c.map.get(pat) {
            used.set(tick);
            return Ok((re.clone(), used.clone()));
        }
        let (text, warm_ascii) = match take_warm(pat) {
            Some((text, ascii)) => (text, Some(ascii)),
            None => (
                Rc::new(build(pat, true, true).inspect_err(|e| {
                    *work = compile_work(if matches!(e, PatternError::TooBig) { COMPILE_FAILED_STATES } else { 0 })
                })?),
                None,
            ),
        };
        let states = text.states;
        *work = compile_work(states);
        let re = Compiled { pat: pat.into(), text, bytes: Rc::default(), ascii: Rc::default(), warm_ascii, states };
        if c.map.len() >= CACHE_ENTRIES {
            if let Some(old) = c.map.iter().min_by_key(|(_, (_, t))| t.get()).map(|(k, _)| k.clone()) {
                c.map.remove(&old);
            }
        }
        let used = Rc::new(std::cell::Cell::new(tick));
        c.map.insert(pat.to_string(), (re.clone(), used.clone()));
        Ok((re, used))
    })
}

/// The pattern argument compiled, by pointer when it is the last call's pattern value (a
/// hit there counts as a use of its cache entry, exactly as a look-up by text does), the
/// work a compile did (0 for a hit), and the subject (argument 1, checked before any
/// compile, as the arguments are checked in order).
fn compile_arg<'a>(it: &Host, name: &str, args: &'a [Value]) -> R<(Result<Compiled, PatternError>, u64, &'a Bytes)> {
    if let Value::Str(p) = &args[0] {
        let hit = CACHE.with(|c| {
            let mut c = c.borrow_mut();
            let c = &mut *c;
            match &c.last {
                // Still in the map (its use count is shared): a hit.
                Some((q, re, used)) if Rc::ptr_eq(p, q) && Rc::strong_count(used) > 1 => {
                    c.tick += 1;
                    used.set(c.tick);
                    Some(re.clone())
                }
                _ => None,
            }
        });
        if let Some(re) = hit {
            let s = it.arg_str(name, args, 1)?;
            return Ok((Ok(re), 0, s));
        }
    }
    let pat = it.arg_text(name, args, 0)?;
    let s = it.arg_str(name, args, 1)?;
    if pat.len() > MAX_REGEX_PATTERN {
        return Ok((Err(PatternError::TooLong(pat.len())), 0, s));
    }
    let mut work = 0;
    let r = compile_entry(pat, &mut work);
    if let (Ok((re, used)), Value::Str(p)) = (&r, &args[0]) {
        CACHE.with(|c| c.borrow_mut().last = Some((p.clone(), re.clone(), used.clone())));
    }
    Ok((r.map(|(re, _)| re), work, s))
}

/// The pattern (argument 0, compiled) and the subject (argument 1), and the up-front
/// charge.
fn pat_subject<'a>(it: &mut Host, name: &str, args: &'a [Value]) -> R<(Compiled, &'a [u8])> {
    let (re, work, s) = compile_arg(it, name, args)?;
    it.work(work)?;
    let re = re.map_err(|e| it.err(ErrKind::Value, format!("{name}: {e}")))?;
    let weight = 1 + re.states / WORK_REGEX_STATES_PER_UNIT;
    it.work(RE.units((s.len() as u64).saturating_mul(weight), 0))?;
    Ok((re, s.as_slice()))
}

fn test(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.test", args)?;
    let mut run = Run::new(it, "re.test", &re, s)?;
    Ok(Value::Bool(run.is_match(it)?))
}

fn match_(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.match", args)?;
    let mut run = Run::new(it, "re.match", &re, s)?;
    let e = run.e.clone();
    let mut caps = e.caches.borrow_mut().caps.take().unwrap_or_else(|| e.pike.create_captures());
    let r = match run.find_anchored(it, &mut caps) {
        Ok(Some(true)) => Ok(true),
        Ok(Some(false)) => Ok(false),
        Ok(None) => match run.find(it, &Input::new(s)) {
            Ok(Some(m)) => run.captures(it, "re.match", m, &mut caps).map(|()| true),
            Ok(None) => Ok(false),
            Err(e) => Err(e),
        },
        Err(e) => Err(e),
    };
    let items = r.map(|found| found.then(|| group_values(&caps, s)));
    e.caches.borrow_mut().caps = Some(caps);
    match items? {
        Some(items) => it.make_list(items),
        None => Ok(Value::Nil),
    }
}

/// Collect the pieces `pieces` yields into a list, within the list limit.
fn push_piece(it: &mut Host, name: &str, what: &str, items: &mut Vec<Value>, p: &[u8]) -> R<()> {
    it.work(WORK_REGEX_MATCH)?;
    if items.len() == it.lim.n(L::List) {
        return Err(it.limit(LimitKind::List, format!("{name}: more than {} {what}", it.lim.n(L::List))));
    }
    items.push(Value::str_from(p));
    Ok(())
}

fn find_all(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.find_all", args)?;
    let mut run = Run::new(it, "re.find_all", &re, s)?;
    let mut items = Vec::new();
    run.each(it, "re.find_all", |it, _, m| push_piece(it, "re.find_all", "matches", &mut items, &s[m.range()]))?;
    it.make_list(items)
}

fn split(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(it, "re.split", args)?;
    let mut run = Run::new(it, "re.split", &re, s)?;
    let mut items = Vec::new();
    let mut last = 0;
    run.each(it, "re.split", |it, _, m| {
        push_piece(it, "re.split", "pieces", &mut items, &s[last..m.start()])?;
        last = m.end();
        Ok(())
    })?;
    push_piece(it, "re.split", "pieces", &mut items, &s[last..])?;
    it.make_list(items)
}

/// The groups of a match as `re.match` gives them: `[whole, group1, ...]`, nil for a
/// group that took no part.
fn group_values(caps: &Captures, s: &[u8]) -> Vec<Value> {
    let mut items = Vec::with_capacity(caps.group_len());
    items.extend(caps.iter().map(|g| g.map(|sp| Value::str_from(&s[sp.range()])).unwrap_or(Value::Nil)));
    items
}

fn replace(cx: &mut dyn Callbacks, args: &mut [Value]) -> R<Value> {
    let (re, s) = pat_subject(cx.host(), "re.replace", args)?;
    if let Some(fi) = super::fn_arg(&args[2]) {
        // `re.replace(pat, s, fn)`: each match is replaced by fn(groups), `groups` as
        // `re.match` gives them; the result must be a string, used as it is (`$` is not
        // interpreted).
        return replace_each(cx, &re, s, true, |cx, caps, out| {
            let groups = cx.host().make_list(group_values(caps.expect("captures asked for"), s))?;
            match cx.call(fi, &mut [groups])? {
                Value::Str(r) => Ok(out.extend_from_slice(&r)),
                other => Err(cx.host().err(
                    ErrKind::Type,
                    format!("re.replace: the function must return a string, got {}", other.type_name()),
                )),
            }
        });
    }
    let it = cx.host();
    let with = it.arg_str("re.replace", args, 2)?;
    // Groups are only needed when the replacement names one.
    replace_each(it, &re, s, with.contains(&b'$'), |_, caps, out| {
        match caps {
            Some(caps) => caps.interpolate_bytes_into(s, with, out),
            None => out.extend_from_slice(with),
        }
        Ok(())
    })
}

/// Replace every match of `re` in `s` by what `put` writes (given the match's groups
/// when `groups` is set), within the string limit, `WORK_REGEX_MATCH` per match.
fn replace_each<C: HasHost + ?Sized>(
    cx: &mut C,
    re: &Compiled,
    s: &[u8],
    groups: bool,
    mut put: impl FnMut(&mut C, Option<&Captures>, &mut Vec<u8>) -> R<()>,
) -> R<Value> {
    let mut run = Run::new(cx.host(), "re.replace", re, s)?;
    let mut caps = groups.then(|| run.e.pike.create_captures());
    let mut out = Vec::with_capacity(s.len());
    let mut last = 0;
    run.each(cx, "re.replace", |cx, run, m| {
        out.extend_from_slice(&s[last..m.start()]);
        if let Some(caps) = caps.as_mut() {
            run.captures(cx.host(), "re.replace", m, caps)?;
        }
        put(cx, caps.as_ref(), &mut out)?;
        last = m.end();
        cx.host().check_str_len(out.len())?;
        cx.host().work(WORK_REGEX_MATCH)
    })?;
    out.extend_from_slice(&s[last..]);
    cx.host().make_str(out)
}

pub const TABLE: &[Builtin] = &[
    b("re.test", "re.test(pattern, s)", 2, 2, RE, test),
    b("re.match", "re.match(pattern, s)", 2, 2, RE, match_),
    b("re.find_all", "re.find_all(pattern, s)", 2, 2, RE, find_all),
    calls("re.replace", "re.replace(pattern, s, with | FN(groups))", 3, 3, RE, replace).with_fn(2, 1, false),
    b("re.split", "re.split(pattern, s)", 2, 2, RE, split),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_patterns_are_taken_once_and_charged_as_compiled() {
        // On a thread of its own: the tables are per thread.
        std::thread::spawn(|| {
            forget_patterns();
            let pats = ["^[A-Z0-9_]+$", "[\\x00-\\x08\\x0a-\\x1f\\x7f]", "(", "\\p{Greek}+"];
            let cold: Vec<_> = pats.iter().map(|p| compile_charged(p).1).collect();
            forget_patterns();
            warm_patterns(pats);
            // The one that does not compile is left out.
            assert_eq!(warm_count(), 3);
            let warm: Vec<_> = pats.iter().map(|p| compile_charged(p).1).collect();
            assert_eq!(warm, cold);
            assert_eq!(warm_count(), 0);
            // Taken: the same engine, and its ASCII form given as a compile (charged).
            let re = compile("^[A-Z0-9_]+$").unwrap();
            assert!(re.warm_ascii.is_some());
            let (e, fresh) = re.engine(b"ABC");
            assert!(fresh && e.is_ok());
            let (_, fresh) = re.engine(b"ABC");
            assert!(!fresh);
            // Unicode-only: the ASCII form was refused in the warm process too.
            let g = compile("\\p{Greek}+").unwrap();
            assert!(matches!(g.warm_ascii, Some(None)));
            // Gone from the per-run cache, compiled anew: not warm any more.
            forget_patterns();
            assert!(compile("^[A-Z0-9_]+$").unwrap().warm_ascii.is_none());
        })
        .join()
        .unwrap();
    }

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
    fn forgetting_empties_the_cache() {
        compile("abc").unwrap();
        forget_patterns();
        CACHE.with(|c| {
            assert!(c.borrow().map.is_empty());
            assert!(c.borrow().last.is_none());
        });
        let mut work = 0;
        compile_entry("abc", &mut work).unwrap();
        assert!(work > 0, "compiled again after forgetting, and charged for it");
    }

    #[test]
    fn cache_evicts_least_recent() {
        for i in 0..(CACHE_ENTRIES * 2) {
            compile(&format!("x{i}")).unwrap();
        }
        CACHE.with(|c| assert_eq!(c.borrow().map.len(), CACHE_ENTRIES));
    }

    #[test]
    fn empty_matches_keep_utf8_whole() {
        let re = compile("").unwrap();
        // The text engine never splits a character with an empty match (the split
        // around it is ["", "é", ""]); the bytes engine matches anywhere.
        let e = re.engine("é".as_bytes()).0.unwrap();
        let mut c = e.pike.create_cache();
        let at: Vec<_> = e.pike.find_iter(&mut c, "é").map(|m| m.start()).collect();
        assert_eq!(at, [0, 2]);
        let hy = e.hy.as_ref().unwrap();
        let mut hc = hy.create_cache();
        let at: Vec<_> = hy.find_iter(&mut hc, "é").map(|m| m.start()).collect();
        assert_eq!(at, [0, 2]);
        let b = re.engine(b"\xff").0.unwrap();
        let mut c = b.pike.create_cache();
        assert_eq!(b.pike.find_iter(&mut c, &b"\xc3\xa9"[..]).count(), 3);
    }

    /// The resumable NFA simulation finds exactly the matches the PikeVM finds (every
    /// match of an iteration, and `is_match`), with text, byte and ASCII engines, over
    /// patterns with empty matches, assertions, priorities and Unicode classes.
    #[test]
    fn simulation_agrees_with_pikevm() {
        let pats = [
            "",
            "a*",
            "x*",
            r"[ab]*c|a",
            r"a[ab]{20}[^ab]",
            r"(a|ab)(c|bcd)(d*)",
            r"\b\w+\b",
            r"\B",
            r"\w+",
            r"(?m)^\w*$",
            r"(?m)^",
            r"$",
            r"^abc",
            r"(?i)é|e",
            r".*",
            r"(?s).",
            r"\s+",
            r"[^a-z]",
            r"a|b|c|abc",
            r"(?:ab)*?b",
            r"\d{3}-\d+",
            r#"^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)"#,
        ];
        let subjects: [&[u8]; 10] = [
            b"",
            b"abc",
            b"aaaa",
            b"abababababababababababababx abc",
            "héllo wörld Été e".as_bytes(),
            b"hello, world!\n  foo_bar 123-4567\tx\n\n",
            b"1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] \"GET /a/b?q=1 HTTP/1.1\" 200 512 \"-\" \"x\"",
            b"\xff\xfeab\xc3\xa9c\xc3",
            b"abcd abcbcd ac",
            "éé".as_bytes(),
        ];
        let mut compared = 0;
        for p in pats {
            let re = compile(p).unwrap();
            for s in subjects {
                let e = re.engine(s).0.unwrap();
                let mut c = e.pike.create_cache();
                let want: Vec<_> = e.pike.find_iter(&mut c, s).map(|m| m.range()).collect();
                let mut got = Vec::new();
                let mut searcher = Searcher::new(Input::new(s));
                while let Some(m) = searcher.advance(|input| Ok(sim_find(&e, input, |_| Ok(())).ok().flatten())) {
                    got.push(m.range());
                }
                assert_eq!(got, want, "pattern {p:?} on {s:?}");
                let input = Input::new(s).earliest(true);
                let yes = sim_find(&e, &input, |_| Ok(())).ok().flatten().is_some();
                assert_eq!(yes, e.pike.is_match(&mut c, input.clone()), "is_match {p:?} on {s:?}");
                compared += 1;
            }
        }
        assert!(compared >= 200);
    }

    /// The ASCII form finds exactly what the Unicode text form finds on ASCII subjects:
    /// every capture group's span of every match, with the PikeVM and with the
    /// backtracker, over patterns using each kind of class and assertion.
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
            r"\b",
            r"(?-u:\b)x",
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
        let spans = |e: &Engine, s: &str| -> Vec<Vec<Option<(usize, usize)>>> {
            let mut c = e.pike.create_cache();
            e.pike
                .captures_iter(&mut c, s.as_bytes())
                .map(|caps| {
                    (0..caps.group_len()).map(|g| caps.get_group(g).map(|m| (m.start, m.end))).collect::<Vec<_>>()
                })
                .collect()
        };
        let mut compared = 0;
        for p in pats {
            let re = compile(p).unwrap();
            let Some(a) = build(p, false, false).ok() else { continue };
            for s in subjects {
                assert_eq!(spans(&re.text, s), spans(&a, s), "pattern {p:?} on {s:?}");
                // The backtracker (captures of a match's span) agrees with the PikeVM.
                let (Some(bt), mut bc) = (a.bt.as_ref(), a.bt.as_ref().map(|b| b.create_cache())) else { continue };
                let mut c1 = bt.create_captures();
                let mut c2 = a.pike.create_captures();
                let input = Input::new(s.as_bytes());
                bt.try_search(bc.as_mut().unwrap(), &input, &mut c1).unwrap();
                a.pike.search(&mut a.pike.create_cache(), &input, &mut c2);
                assert_eq!(format!("{c1:?}"), format!("{c2:?}"), "pattern {p:?} on {s:?}");
                compared += 1;
            }
        }
        assert!(compared > 200);
        // A pattern that needs Unicode mode has no ASCII form and keeps the text form.
        assert!(build(r"\p{Greek}", false, false).is_err());
        let re = compile(r"\p{Greek}").unwrap();
        let (e, _) = re.engine(b"abc");
        assert!(Rc::ptr_eq(&e.unwrap(), &re.text));
    }

    /// A random pattern from a small grammar (fixed-seed generator).
    fn random_pattern(rng: &mut u64, depth: u32) -> String {
        let mut next = |n: u64| {
            *rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (*rng >> 33) % n
        };
        let atoms = [
            "a", "b", "c", "ab", " ", "[ab]", "[^a]", r"\s", r"\S", r"\w", r"\d", ".", "é", r"[^ \]]", "^", "$", r"\b",
            r"\B", "", "(?m:^)", "(?m:$)", "(?i:B)",
        ];
        if depth == 0 {
            return atoms[next(atoms.len() as u64) as usize].to_string();
        }
        let k = next(10);
        let sub = |rng: &mut u64| random_pattern(rng, depth - 1);
        match k {
            0 | 1 => format!("{}{}", sub(rng), sub(rng)),
            2 => format!("({})", sub(rng)),
            3 => format!("(?:{}|{})", sub(rng), sub(rng)),
            4 => format!("({}|{}|{})", sub(rng), sub(rng), sub(rng)),
            5 => {
                let q = ["*", "+", "?", "{1,3}", "{2}", "*?", "+?", "??", "{0,2}", "{2,}"];
                let mut r2 = *rng;
                r2 = r2.wrapping_mul(6364136223846793005).wrapping_add(1);
                *rng = r2;
                format!("(?:{}){}", sub(rng), q[((r2 >> 33) % q.len() as u64) as usize])
            }
            6 => format!("({})*", sub(rng)),
            7 => format!("{}+", atoms[5 + (depth as usize % 9)]),
            _ => sub(rng),
        }
    }

    /// The specialised capture engine reports exactly the groups the PikeVM reports
    /// (anchored on each match's span), over fixed and random patterns and subjects:
    /// ASCII, non-ASCII and invalid UTF-8, empty matches, alternations, nested and
    /// repeated groups, groups that do not participate.
    #[test]
    fn capture_engine_agrees_with_pikevm() {
        let mut pats: Vec<String> = [
            r#"^(\S+) \S+ \S+ \[([^\]]+)\] "(\S+) ([^ ?"]+)\S* [^"]*" (\d{3}) (\d+|-)"#,
            r"(a|ab)(c|bcd)(d*)",
            r"(a*)(a*)(a+)b?",
            r"(\w+)@(\w+)\.com",
            r"(a)|(b)|(c)",
            r"((a)|b)+",
            r"(?:(a)|b)+",
            r"(a+?)(a*)",
            r"(\d{1,3})(\d*)",
            r"(\S*)(\S*)(x?)",
            r"(a|)(b|)",
            r"()",
            r"(\b\w+\b)\s*(\w*)",
            r"(?m)^(\w*)$",
            r"([ab]{2,4})([ab]{0,2}?)(b)?",
            r"(.)(.)?",
            r"(é+)(e?)",
            r"([^a]+)(a)",
            r"(?i)(K)(s+)",
            r"((a)(b)?)*c",
            // Runs that keep no shorter candidates (what follows cannot take a byte of
            // theirs) and runs that must keep them.
            r"(a+)a",
            r"(a+)(b)",
            r"([ab]+)(b)",
            r"(\S+)(\s)(\S*)",
            r#"([^"]*)"(.*)"#,
            r"(a+)$",
            r"(a+)()b",
            r"(\d+)(\d)",
            r"(\d+)([a-c]+)(a)?",
            r"(a{1,3})(a{0,2})(b)",
            r"([^ ]+) ([^ ]*) ?(.*)",
            r"(a+)(?:b|a)",
            r"(a+)\b(b)?",
            r"([^ab]+)(c|a)",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let mut rng = 0x5eed_u64;
        for i in 0..400 {
            pats.push(random_pattern(&mut rng, 1 + i % 4));
        }
        let mut subjects: Vec<Vec<u8>> = [
            &b""[..],
            b"a",
            b"ab",
            b"abcd abcbcd ac",
            b"aaaab",
            b"x@y.com and a_b@cd.com",
            b"1.2.3.4 - - [01/Jan/2026:00:00:00 +0000] \"GET /a/b?q=1 HTTP/1.1\" 200 512 \"-\" \"x\"",
            b"12345 67",
            b"abcabcab c\nb a\n\n",
            "éé e é a".as_bytes(),
            b"\xff\xfeab\xc3\xa9c\xc3",
            b"kKs S ss",
        ]
        .iter()
        .map(|s| s.to_vec())
        .collect();
        for _ in 0..30 {
            let alpha: [&[u8]; 8] = [b"a", b"b", b"c", b" ", "é".as_bytes(), b"\n", b"1", b"]"];
            let mut s = Vec::new();
            rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            for _ in 0..((rng >> 33) % 12) {
                rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                s.extend_from_slice(alpha[((rng >> 33) % 8) as usize]);
            }
            subjects.push(s);
        }
        let (mut compared, mut modelled, mut gave_up) = (0, 0, 0);
        for p in &pats {
            let Ok(re) = compile(p) else { continue };
            for s in &subjects {
                let e = re.engine(s).0.unwrap();
                let Some(prog) = e.cap.as_ref() else { continue };
                modelled += 1;
                let mut c = e.pike.create_cache();
                let mut cc = capture::Cache::default();
                let matches: Vec<Match> = e.pike.find_iter(&mut c, s.as_slice()).collect();
                for m in matches {
                    let input = Input::new(s.as_slice()).span(m.range()).anchored(Anchored::Yes);
                    let mut want = e.pike.create_captures();
                    e.pike.search(&mut c, &input, &mut want);
                    let mut got = e.pike.create_captures();
                    got.set_pattern(Some(regex_automata::PatternID::ZERO));
                    match prog.try_captures(&mut cc, s, m.start(), m.end(), got.slots_mut()) {
                        Some(true) => {}
                        Some(false) => panic!("pattern {p:?} on {s:?} at {m:?}: no path found, {want:?} exists"),
                        None => {
                            // Over its step budget: the caller falls back to the PikeVM.
                            gave_up += 1;
                            continue;
                        }
                    }
                    assert_eq!(format!("{got:?}"), format!("{want:?}"), "pattern {p:?} on {s:?} at {m:?}");
                    compared += 1;
                }
            }
        }
        assert!(modelled > 3000, "{modelled}");
        assert!(compared > 5000, "{compared}");
        assert!(gave_up * 100 < compared, "{gave_up} of {compared}");
        // Runs backing off into runs with no path to the end: quadratic candidates, so the
        // engine gives up at its budget (the caller falls back to regex-automata's).
        let q = compile(r"(a*)(a*)(a*)c|(a*)b").unwrap();
        let s = format!("{}b", "a".repeat(200));
        let e = q.engine(s.as_bytes()).0.unwrap();
        let mut got = e.pike.create_captures();
        let prog = e.cap.as_ref().unwrap();
        assert_eq!(prog.try_captures(&mut capture::Cache::default(), s.as_bytes(), 0, s.len(), got.slots_mut()), None);
        // Anchored at the start, the engine finds the match itself (re.match without the
        // DFA pass): the same match and groups as the PikeVM's, or no match when it has
        // none, on every pattern above anchored with `^`.
        let (mut found, mut none, mut quick_gave_up) = (0, 0, 0);
        for p in &pats {
            let Ok(re) = compile(&format!("^(?:{p})")) else { continue };
            for s in &subjects {
                let e = re.engine(s).0.unwrap();
                let Some(prog) = e.cap.as_ref() else { continue };
                assert!(e.anchored, "{p}");
                let mut c = e.pike.create_cache();
                let mut want = e.pike.create_captures();
                e.pike.search(&mut c, &Input::new(s.as_slice()), &mut want);
                let mut got = e.pike.create_captures();
                got.set_pattern(Some(regex_automata::PatternID::ZERO));
                match prog.quick(&mut capture::Cache::default(), s, 0, s.len(), false, got.slots_mut()) {
                    Some(true) => {
                        assert_eq!(format!("{got:?}"), format!("{want:?}"), "pattern ^(?:{p}) on {s:?}");
                        found += 1;
                    }
                    Some(false) => {
                        assert!(!want.is_match(), "pattern ^(?:{p}) on {s:?}: no match found, {want:?} exists");
                        none += 1;
                    }
                    None => quick_gave_up += 1,
                }
            }
        }
        assert!(found > 3000 && none > 1000, "{found} {none}");
        assert!(quick_gave_up * 20 < found, "{quick_gave_up} of {found}");
        assert!(!compile("(?m)^(a)").unwrap().text.anchored);
        // The log pattern is modelled in its ASCII form, not in its Unicode form.
        let log = compile(&pats[0]).unwrap();
        assert!(log.engine(b"x").0.unwrap().cap.is_some());
        assert!(log.text.cap.is_none());
    }
}
