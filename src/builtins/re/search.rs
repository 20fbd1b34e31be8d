//! One call's search (`Run`) and what each step of it is charged: the lazy DFAs charged
//! per byte scanned and per state built, the resumable NFA simulation (`sim.rs`) run
//! `SIM_CHUNK_UNITS` of work at a time, and capture groups (`capture.rs`'s backtracker,
//! then regex-automata's) charged before they run and refused when the budget or the
//! deadline cannot cover them (see `re.rs`'s header). Oversized caches are dropped
//! when the call ends.

use std::rc::Rc;
use std::time::Duration;

use regex_automata::hybrid;
use regex_automata::util::captures::Captures;
use regex_automata::util::iter::Searcher;
use regex_automata::{Anchored, Input, Match};

use super::engine::{compile_work, Compiled, Engine, COMPILE_FAILED_STATES};
use super::{capture, sim};
use crate::builtins::host::HasHost;
use crate::builtins::Host;
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;

/// Work between two charges of the NFA simulation (about a millisecond: the meter looks
/// at the deadline every `WORK_TIME_CHECK` units).
const SIM_CHUNK_UNITS: u64 = 1 << 18;

/// One call's search state: the engine, the DFA bytes already charged for, and the
/// bytes scanned so far.
pub(super) struct Run<'h> {
    pub(super) e: Rc<Engine>,
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
    quick_work(p.quick_steps(len.saturating_add(1)))
}

/// The capture engine's quick search that took `steps` steps: its set-up and its steps.
fn quick_work(steps: usize) -> u64 {
    WORK_REGEX_CAPTURES.saturating_add((steps as u64).saturating_mul(WORK_REGEX_QUICK_STEP))
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
    pub(super) fn new(it: &mut Host, name: &str, re: &Compiled, hay: &'h [u8]) -> R<Run<'h>> {
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
    pub(super) fn is_match(&mut self, it: &mut Host) -> R<bool> {
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
    pub(super) fn find(&mut self, it: &mut Host, input: &Input<'_>) -> R<Option<Match>> {
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
    pub(super) fn captures(&mut self, it: &mut Host, name: &str, m: Match, caps: &mut Captures) -> R<()> {
        let e = self.e.clone();
        if let Some(p) = e.cap.as_ref() {
            // The capture engine's quick search first, charged the steps it took (its
            // whole budget when it gave up: the program, twice the span and 64, so at
            // most that span's worth, which the match's scan has been charged for);
            // only when it gives up, the searches that may take pattern x span. (Until
            // 2026-12-05 the whole budget was charged before it ran: a two-byte match
            // was charged 176 units for a search of a few steps.)
            caps.set_pattern(Some(regex_automata::PatternID::ZERO));
            let (found, steps) = {
                let mut c = e.caches.borrow_mut();
                p.quick(&mut c.cap, self.hay, m.start(), m.end(), true, caps.slots_mut())
            };
            it.work(quick_work(steps))?;
            if found == Some(true) {
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
    pub(super) fn find_anchored(&mut self, it: &mut Host, caps: &mut Captures) -> R<Option<bool>> {
        let e = self.e.clone();
        let Some(p) = e.cap.as_ref().filter(|_| e.anchored) else { return Ok(None) };
        it.work(quick_charge(p, self.hay.len()))?;
        caps.set_pattern(Some(regex_automata::PatternID::ZERO));
        let found = p.quick(&mut e.caches.borrow_mut().cap, self.hay, 0, self.hay.len(), false, caps.slots_mut()).0;
        Ok(found)
    }

    /// Every leftmost-first match, in order (empty matches as the `regex` crate's
    /// iterators report them), each passed to `f`; stops at the first error.
    pub(super) fn each<C: HasHost + ?Sized>(
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
pub(super) fn sim_find(e: &Engine, input: &Input<'_>, mut charge: impl FnMut(u64) -> R<()>) -> R<Option<Match>> {
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
