//! The global allocator of the leash binaries: the system allocator (glibc malloc), with
//! a count of the bytes it holds live.
//!
//! It only counts. It never refuses an allocation on purpose (Rust aborts the process
//! when an allocation fails); the interpreter reads [`live`] at its checks and stops a
//! run that holds too much with its `memory` limit (leash's `src/memory.rs`).
//!
//! Each allocation is counted as the chunk malloc really uses for it, not only the bytes
//! asked for: on 64-bit glibc a chunk is the request plus an 8-byte header, rounded up to
//! 16 (see `chunk`). So many small values (a string's 40-byte shared header is a 48-byte
//! chunk) count what they cost.
//!
//! The count is kept without locked instructions on the thread that runs scripts: that
//! thread (the one that called [`count_here`]) is the only writer of its word, which it
//! updates with a plain load and store; every other thread adds to a second word with
//! an atomic add. [`live`] is their sum (wrapping: a block allocated on one thread and
//! freed on another moves bytes from one word to the other, and the sum stays right).
//!
//! Two more words serve the interpreter's check, so that it stays two loads and a
//! compare:
//! - the mark ([`set_mark`]): the check looks further only when [`live`] passes it. It
//!   is kept as a mark for the script thread's own word (the mark less what the other
//!   threads held when it was set), so that the check reads one counter, not two; what
//!   other threads allocate is seen at the next look (they hold little: a stdin reader's
//!   buffer, a DNS answer);
//! - the credit ([`set_credit`]): bytes the script's thread may allocate before the
//!   process's resident size is looked at again ([`peak_rss`]); spending it lowers the
//!   mark to zero, so that the next check looks. Live bytes cannot see fragmentation
//!   (memory freed between blocks that stay, which malloc keeps); the resident size
//!   can, and it cannot grow by more than what was allocated since the last look.
//!
//! Small blocks freed on the script's thread are kept for reuse (see `global.rs`'s
//! `Stash`): glibc's own per-thread cache holds only 7 blocks of a size, so freeing a
//! list of a dozen strings sends the rest through its slower paths (about 140
//! instructions a free and 80 a malloc, measured with callgrind on the text benchmarks),
//! and the next line's strings come back the same way. The stash holds up to 512 KiB of
//! blocks of each chunk size from 32 to 160 bytes (16,384 blocks of 32 bytes, 3,276 of
//! 160; 4.5 MiB at most over the nine sizes, well inside the resident-size slack of
//! leash's `RSS_SLACK`), and serves them back in a few instructions: a tree of small
//! lists or a document's parsed values freed and built again come back from it, not
//! from malloc's slower paths; so does a small block resized to another stashed size
//! (a list's buffer growing from 4 to 8 items). Stashed blocks count as freed.
//!
//! In a process made by [`fork`] (a `leash-cgi --fastcgi` worker), the thread that
//! forked takes its blocks of up to 64 KiB from an arena mapped after the fork instead of
//! from malloc (see `arena`): malloc would carve them out of the free chunks scattered
//! over the parent's heap, copying a page at the first write to each.
//!
//! This is the only crate of the project with unsafe code: `GlobalAlloc` is an unsafe
//! trait, each method forwards to `std::alloc::System` under the same contract (or to
//! the arena of a forked process, which keeps it too),
//! `getrusage` is a C call, and so is [`fork`] (for `leash-cgi --fastcgi`'s warm
//! process; single-threaded callers only, checked, the counters reset in the child).
//! It also wraps SQLite's allocator and page cache to count the bytes SQLite allocates and
//! the page bytes it fetches ([`count_sqlite_allocations`]): `sqlite3_config` is a C call.
//! [`trunc_i64`] calls an SSE2 intrinsic (marked with its target feature, so unsafe to
//! call, though every x86-64 processor has it).
//!
//! The parts: here the counters, the mark and the credit, and what the interpreter
//! calls to read and set them; `global` the `GlobalAlloc` methods and the stash of the
//! script's thread; `arena` the small blocks of a forked process's thread; `process`
//! the process-wide calls (`fork`, the environment, descriptors, `exit_now`) and the
//! allocator's state after a fork; `sqlite_count` the counting of SQLite's allocations
//! and page fetches; `text` the executable's code moved to huge pages for a process that
//! forks workers ([`text_in_huge_pages`]: `mmap`, `madvise`, `mprotect`, `mremap` and
//! the copy of the code are C calls and raw memory); `thin` a container for the
//! interpreter's values, [`ThinRc`] (a one-word reference-counted pointer to a header and
//! a slice in one block: the length is kept in the block, which safe Rust cannot say);
//! `num` a float's integer part without `as`'s saturation ([`trunc_i64`]: the
//! processor's conversion, an intrinsic safe Rust cannot call).

mod arena;
mod global;
mod num;
mod process;
mod sqlite_count;
#[cfg(test)]
mod tests;
mod text;
mod thin;

pub use num::trunc_i64;
pub use process::{
    close_inherited_descriptors, exit_now, fork, replace_environment, reserve_arena_for_forks, set_tcp_defer_accept,
    Forked,
};
pub use sqlite_count::{count_sqlite_allocations, sqlite_allocated, sqlite_page_bytes};
pub use text::text_in_huge_pages;
pub use thin::{NoRelease, Release, ThinRc};

use std::alloc::Layout;
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting.
pub struct Counting;

/// Bytes counted by the script's thread (its only writer).
static MINE: AtomicUsize = AtomicUsize::new(0);
/// Bytes counted by every other thread.
static OTHERS: AtomicUsize = AtomicUsize::new(0);
/// The mark for `MINE`, signed (`MINE` wraps below zero when the script's thread frees
/// what others allocated).
static MARK: AtomicIsize = AtomicIsize::new(isize::MAX);
/// Written only by the script's thread, like `MINE`.
static CREDIT: AtomicIsize = AtomicIsize::new(isize::MAX);

thread_local! {
    /// Is this the script's thread? (A constant initializer and no destructor: reading
    /// it is one load, and it never allocates.)
    static OWNER: Cell<bool> = const { Cell::new(false) };
}

/// The bytes malloc uses for an allocation of `l`: the request plus its 8-byte header,
/// rounded up to 16. Two instructions, on the path of every allocation, so three small
/// differences from glibc are left out: its smallest chunk is 32 bytes (requests of 8
/// bytes or less are rare here: short strings are stored inline), blocks aligned above 16
/// take padding (none here), and large blocks are mapped in whole pages (up to 4 KiB
/// more per block of 128 KiB or more: under 3%).
#[inline(always)]
fn chunk(l: Layout) -> usize {
    (l.size() + 8 + 15) & !15
}

#[inline(always)]
fn add(n: usize) {
    if OWNER.get() {
        MINE.store(MINE.load(Relaxed).wrapping_add(n), Relaxed);
        spend(n);
    } else {
        OTHERS.fetch_add(n, Relaxed);
    }
}

#[inline(always)]
fn sub(n: usize) {
    if OWNER.get() {
        MINE.store(MINE.load(Relaxed).wrapping_sub(n), Relaxed);
    } else {
        OTHERS.fetch_sub(n, Relaxed);
    }
}

/// Spend allocation credit (the script's thread only).
#[inline(always)]
fn spend(n: usize) {
    let c = CREDIT.load(Relaxed).wrapping_sub(n as isize);
    CREDIT.store(c, Relaxed);
    if c < 0 {
        MARK.store(isize::MIN, Relaxed);
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Make the calling thread the script's thread: its allocations are counted without
/// locked instructions, and only they spend the credit. Call it from one thread only.
pub fn count_here() {
    OWNER.set(true);
}

/// Bytes of malloc chunks held live by the whole process now.
#[inline(always)]
pub fn live() -> usize {
    MINE.load(Relaxed).wrapping_add(OTHERS.load(Relaxed))
}

/// Has the script's thread's count passed the mark (or the credit been spent)? Two
/// loads and a compare.
#[inline(always)]
pub fn past_mark() -> bool {
    (MINE.load(Relaxed) as isize) > MARK.load(Relaxed)
}

/// Set the mark: [`past_mark`] is true once [`live`] passes `mark` (as far as the
/// script's thread's allocations go), or at once when `mark` is 0.
pub fn set_mark(mark: usize) {
    let m = if mark == 0 { isize::MIN } else { mark.wrapping_sub(OTHERS.load(Relaxed)) as isize };
    MARK.store(m, Relaxed);
}

/// Allow `bytes` more of allocation on the script's thread before the mark drops to zero.
pub fn set_credit(bytes: usize) {
    CREDIT.store(bytes.min(isize::MAX as usize) as isize, Relaxed);
}

/// Has the credit been spent?
pub fn credit_spent() -> bool {
    CREDIT.load(Relaxed) < 0
}

/// The most the process has had resident, in bytes (`getrusage`), if the system says.
/// Called through `syscall`, which the standard library imports already: a symbol of its
/// own would cost every start-up a dynamic-linker lookup (about 6,000 instructions).
pub fn peak_rss() -> Option<usize> {
    // SAFETY: getrusage writes one `rusage` into the zeroed value it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::syscall(libc::SYS_getrusage, libc::RUSAGE_SELF, &mut u as *mut libc::rusage) };
    (r == 0).then(|| (u.ru_maxrss.max(0) as usize).saturating_mul(1024))
}
