//! The live-bytes bound: `--max-memory` bounds the heap of the process, not only the
//! storage the evaluator accounts for variables.
//!
//! Mechanism (LANGUAGE.md, "Memory", says it for users):
//! - The binaries' global allocator is `leash-alloc`: the system allocator, counting the
//!   malloc chunks it holds live in one atomic word ([`live`]). It never refuses an
//!   allocation; it only counts.
//! - A load and its run share one [`Budget`]: the live bytes when the load began (the
//!   process's own start-up heap, not the script's) plus `--max-memory`. Everything
//!   allocated after that counts: the source text, the syntax tree and the resolved
//!   program, variables, temporaries under evaluation, builtin buffers.
//! - The loader looks at the count after every line it parses and every statement it
//!   resolves ([`load_over`]): past the budget, a load error of kind `memory` (exit 3).
//! - The evaluator looks at it (`Host::check_memory` (`builtins/host.rs`): one load and one compare when
//!   nothing new is held) at every step, after every builtin call, after each `..` and
//!   interpolation, and whenever a list, map or string value is built (literals and
//!   builtins); past the budget, the `memory` limit (exit 4, not catchable). A temporary
//!   is made by one of these, so a run cannot hold much that no check has seen: what can
//!   escape a check is one value under construction (at most a string, a list or a map
//!   at its limits) and a builtin's working buffers, which the value limits bound too.
//! - The frame-storage accounting (`Interp::charge`) is unchanged and stays exact and
//!   deterministic; both bounds apply, and a script that only holds variables meets the
//!   accounted one first (accounting is conservative).
//!
//! What the count leaves out is the documented fixed overhead (`MEMORY_OVERHEAD`): the
//! mapped program, the stacks actually used, malloc's own slack, and what a check can
//! let through before it sees it. SQLite's heap is apart (`DB_HEAP_LIMIT`).

use std::cell::Cell;

use crate::limits::{RSS_CHECK_EVERY, RSS_SLACK};

/// Strings built by `..` and interpolation are followed by a heap check from this size.
pub(crate) const CHECK_FROM: usize = 4096;

/// A buffer from this size is allocated only after `Host::room` has found room for it
/// under the bound. (Smaller ones are seen by the checks after the call: at most a
/// few of them can be made between two checks.)
pub(crate) const ROOM_FROM: usize = 64 * 1024;

/// The text a writer of unknown size (`json.stringify`, `str` of a list) adds between
/// two looks at the heap (`text_over`); a string of this size or more is looked at
/// before it is written.
pub(crate) const TEXT_LOOK: usize = 1024 * 1024;

/// Would a text being built in a buffer with `spare` bytes of unused capacity, with
/// `extra` bytes more, pass the live-byte `ceiling`? The text counts by the bytes it
/// holds, not by its spare capacity (a doubling would count room that is never written,
/// and that the text gives back when it is made a string). Always false for a ceiling
/// of `usize::MAX`.
pub fn text_over(spare: usize, extra: usize, ceiling: usize) -> bool {
    ceiling != usize::MAX && live().saturating_sub(spare).saturating_add(extra) > ceiling
}

/// Heap bytes the process holds live now (malloc chunks, counted by `leash-alloc`).
#[inline(always)]
pub fn live() -> usize {
    leash_alloc::live()
}

/// Count the calling thread's allocations without locked instructions: the thread that
/// runs scripts calls it once (see `leash_alloc::count_here`).
pub fn count_this_thread() {
    leash_alloc::count_here();
}

/// The heap budget of a load and its run: live bytes may grow to `base + max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Live bytes when the budget began (not the script's).
    pub base: usize,
    /// `--max-memory`.
    pub max: usize,
}

impl Budget {
    /// `max` bytes above what the process holds now.
    pub fn start(max: u64) -> Budget {
        Budget { base: live(), max: usize::try_from(max).unwrap_or(usize::MAX) }
    }

    pub fn ceiling(&self) -> usize {
        self.base.saturating_add(self.max)
    }

    /// Bytes held above the base now.
    pub fn used(&self) -> usize {
        live().saturating_sub(self.base)
    }
}

fn over_message(max: usize) -> String {
    format!("the script holds more than {max} bytes of heap (--max-memory)")
}

// ---------------------------------------------------------------------------
// Load
// ---------------------------------------------------------------------------

thread_local! {
    /// The ceiling of the load under way on this thread (none outside `with_load_budget`).
    static LOAD: Cell<Option<Budget>> = const { Cell::new(None) };
}

/// Run a load (`f`) under `budget`: the loader's checks ([`load_over`]) compare with it.
pub fn with_load_budget<T>(budget: Budget, f: impl FnOnce() -> T) -> T {
    let prev = LOAD.with(|c| c.replace(Some(budget)));
    let r = f();
    LOAD.with(|c| c.set(prev));
    r
}

/// Has the load under way gone past its budget? Then the message for its `memory` error.
pub fn load_over() -> Option<String> {
    let b = LOAD.with(Cell::get)?;
    if live() > b.ceiling() {
        return Some(format!("loading the program takes more than {} bytes of heap (--max-memory)", b.max));
    }
    None
}

// ---------------------------------------------------------------------------
// Run
// ---------------------------------------------------------------------------

/// The run's heap meter: its budget, the high-water mark its checks have seen, and the
/// resident-size backstop.
#[derive(Debug)]
pub struct HeapMeter {
    budget: Budget,
    ceiling: usize,
    /// The most any check has seen (never above the ceiling). The allocator holds a copy
    /// as its mark: a check that finds no more than this is one load and one compare.
    high: Cell<usize>,
    /// Peak resident bytes past which the run stops: the resident size when the run
    /// began, plus `--max-memory`, plus `RSS_SLACK`. None if the system cannot say.
    rss_ceiling: Option<usize>,
}

impl HeapMeter {
    pub fn new(budget: Budget) -> Self {
        let high = live().max(budget.base);
        leash_alloc::set_mark(high);
        leash_alloc::set_credit(RSS_CHECK_EVERY);
        let rss_ceiling = leash_alloc::peak_rss().map(|r| r.saturating_add(budget.max).saturating_add(RSS_SLACK));
        HeapMeter { budget, ceiling: budget.ceiling(), high: Cell::new(high), rss_ceiling }
    }

    /// Has the count passed the mark? (Then `observe` decides.) Two loads and a compare.
    #[inline(always)]
    pub fn past_mark(&self) -> bool {
        leash_alloc::past_mark()
    }

    /// Look at the count (and, once the credit is spent, at the resident size): raise
    /// the mark, or say that the budget is exceeded.
    #[cold]
    #[inline(never)]
    pub fn observe(&self) -> Result<(), String> {
        if leash_alloc::credit_spent() {
            leash_alloc::set_credit(RSS_CHECK_EVERY);
            if let (Some(c), Some(rss)) = (self.rss_ceiling, leash_alloc::peak_rss()) {
                if rss > c {
                    leash_alloc::set_mark(0);
                    return Err(format!(
                        "the process has {rss} bytes resident, more than --max-memory ({}) allows",
                        self.budget.max
                    ));
                }
            }
        }
        let now = live();
        if now > self.ceiling {
            // Stay past the mark, so that every later check says so too.
            leash_alloc::set_mark(0);
            return Err(over_message(self.budget.max));
        }
        if now > self.high.get() {
            self.high.set(now);
        }
        leash_alloc::set_mark(self.high.get());
        Ok(())
    }

    /// The heap check for a builder that holds `extra` bytes more than the allocator
    /// sees (values shared while built that the accounting counts at each place):
    /// `memory` once the count and `extra` together pass the bound.
    pub fn observe_with(&self, extra: usize) -> Result<(), String> {
        if live().saturating_add(extra) > self.ceiling {
            return Err(over_message(self.budget.max));
        }
        self.observe()
    }

    /// The live bytes the bound allows (its base and `--max-memory`).
    pub fn ceiling(&self) -> usize {
        self.ceiling
    }

    /// The bound's message (`memory`).
    pub fn over(&self) -> String {
        over_message(self.budget.max)
    }

    /// Room for a buffer of `extra` bytes about to be allocated (`Host::room`): the
    /// bound's message when what is live and `extra` together would pass it. Nothing
    /// changes: the mark stays, so the check after the buffer is made still looks.
    /// (A buffer below `ROOM_FROM` is left to the checks after: always room.)
    #[inline]
    pub fn room(&self, extra: usize) -> Result<(), String> {
        if extra >= ROOM_FROM && live().saturating_add(extra) > self.ceiling {
            return Err(over_message(self.budget.max));
        }
        Ok(())
    }

    /// Room for `add` items more in `out` (`Host::grow_room`, `Host::push_room`): when
    /// they do not fit its capacity and its growth (to twice its capacity, or to what
    /// they need, as `Vec` grows) is `ROOM_FROM` bytes or more, `room` for the growth,
    /// then the growth itself, so that the capacity is the one found room for and the
    /// one `Vec` would have given (a smaller growth is left to `Vec`).
    pub fn grow<T>(&self, out: &mut Vec<T>, add: usize) -> Result<(), String> {
        let need = out.len().saturating_add(add);
        if need > out.capacity() {
            let cap = need.max(out.capacity().saturating_mul(2));
            let bytes = (cap - out.capacity()).saturating_mul(std::mem::size_of::<T>());
            if bytes >= ROOM_FROM {
                self.room(bytes)?;
                out.reserve_exact(cap - out.len());
            }
        }
        Ok(())
    }

    /// The most the checks have seen held above the base (what `--stats` reports; with
    /// `--max-memory` set to it the same run passes, one byte less and it stops).
    pub fn peak(&self) -> usize {
        self.high.get().saturating_sub(self.budget.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The mark and the credit are the process's: tests that set them take turns.
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn the_meter_stops_past_the_budget() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        let b = Budget { base: live(), max: 1 << 30 };
        let m = HeapMeter::new(b);
        assert!(m.observe().is_ok());
        let small = HeapMeter::new(Budget { base: 0, max: 0 });
        // The process holds something, so a budget of nothing above nothing is exceeded,
        // and every check after says so.
        assert!(small.observe().is_err());
        assert!(small.past_mark());
    }

    #[test]
    fn spent_credit_looks_at_the_resident_size() {
        let _turn = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
        // On a thread of its own that counts as the script's thread (only that thread
        // spends credit), with a resident-size ceiling no process can meet.
        // Another test's evaluator (in another module) may set them between two lines
        // here: the sequence is tried until it runs undisturbed.
        std::thread::spawn(|| {
            count_this_thread();
            let mut m = HeapMeter::new(Budget { base: live(), max: 1 << 30 });
            assert!(m.observe().is_ok());
            let mut seen = None;
            for _ in 0..100 {
                m.rss_ceiling = Some(0);
                leash_alloc::set_credit(1000);
                let v = std::hint::black_box(vec![0u8; 2000]);
                if m.past_mark() {
                    seen = m.observe().err();
                }
                drop(v);
                if seen.is_some() {
                    break;
                }
            }
            let e = seen.expect("spending the credit lowers the mark, and the next look fails");
            assert!(e.contains("resident"), "{e}");
            m.rss_ceiling = None;
            assert!(m.observe().is_ok());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_load_budget_applies_only_inside() {
        assert!(load_over().is_none());
        let r = with_load_budget(Budget { base: 0, max: 0 }, load_over);
        assert!(r.is_some_and(|m| m.contains("--max-memory")));
        assert!(load_over().is_none());
    }
}
