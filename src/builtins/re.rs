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
//!
//! The parts: `engine` (one pattern's engines and compiled forms, why a pattern is
//! refused, what a compile costs), `search` (one call's search, `Run`, driving the
//! engines above and charging each step), `cache` (the per-thread cache of compiled
//! patterns, the warm process's patterns, a call's pattern argument), `sim` (the
//! resumable NFA simulation), `capture` (the specialised capture backtracker); here the
//! builtins and their up-front charge.

mod cache;
mod capture;
mod engine;
mod search;
mod sim;
#[cfg(test)]
mod tests;

pub use cache::{compile, forget_patterns, warm_count, warm_patterns};
pub use engine::{Compiled, Engine, PatternError};

use regex_automata::util::captures::Captures;
use regex_automata::Input;

use super::host::HasHost;
use super::Host;
use super::{b, calls, Builtin, Callbacks, Cost};
use crate::diag::ErrKind;
use crate::error::R;
use crate::limits::*;
use crate::value::*;
use cache::compile_arg;
use search::Run;

/// re.*: the subject's bytes at the byte rate, times (1 + the pattern's NFA states /
/// `WORK_REGEX_STATES_PER_UNIT`), charged before the search (its size is known), and
/// `WORK_REGEX_MATCH` per match or piece produced, as they are found; past that, the
/// engine's own charges (see the module's header).
const RE: Cost = Cost::custom(0.05, 0.0);

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
    it.push_room(items)?;
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
        // (The size is not known first: the heap is looked at as the text grows, as an
        // interpolation's is.)
        cx.host().check_memory_after(out.len())?;
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
