//! The per-thread cache of compiled patterns (`CACHE_ENTRIES`, least recently used
//! evicted; the last call's pattern value found by pointer), the patterns a FastCGI warm
//! process compiled ahead of its runs (`warm_patterns`), and the pattern argument of a
//! call compiled or fetched, with the work to charge for it.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use super::engine::{build, compile_work, Compiled, Engine, PatternError, COMPILE_FAILED_STATES};
use crate::builtins::Host;
use crate::error::R;
use crate::limits::*;
use crate::value::*;

/// Compiled patterns kept per thread.
pub(super) const CACHE_ENTRIES: usize = 16;

#[derive(Default)]
pub(super) struct Cache {
    /// Pattern -> compiled form and when it was last used (shared with `last`).
    pub(super) map: HashMap<String, (Compiled, Rc<std::cell::Cell<u64>>)>,
    tick: u64,
    /// The pattern value of the last call (held, so it cannot change or be freed while
    /// here) and its entry: a loop calling `re.match(pat, line)` with one variable finds
    /// it by pointer, without hashing the pattern or checking its UTF-8 again.
    pub(super) last: Option<(Bytes, Compiled, Rc<std::cell::Cell<u64>>)>,
}

thread_local! {
    pub(super) static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
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

/// Compile `pat` (or fetch it from the cache).
pub fn compile(pat: &str) -> Result<Compiled, PatternError> {
    compile_charged(pat).0
}

/// Compile `pat` (or fetch it from the cache), with the work the compile did (0 for a
/// cache hit).
pub(super) fn compile_charged(pat: &str) -> (Result<Compiled, PatternError>, u64) {
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
pub(super) fn compile_entry(pat: &str, work: &mut u64) -> Result<(Compiled, Rc<std::cell::Cell<u64>>), PatternError> {
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
pub(super) fn compile_arg<'a>(
    it: &Host,
    name: &str,
    args: &'a [Value],
) -> R<(Result<Compiled, PatternError>, u64, &'a Bytes)> {
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
