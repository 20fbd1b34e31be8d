//! The global allocator of the leash binaries: the system allocator (glibc malloc), with
//! a count of the bytes it holds live.
//!
//! It only counts. It never refuses an allocation on purpose (Rust aborts the process
//! when an allocation fails); the interpreter reads [`live`] at its checks and stops a
//! run that holds too much with its `memory` limit (leash's `src/memory.rs`).
//!
//! Each allocation is counted as the chunk malloc really uses for it, not only the bytes
//! asked for: on 64-bit glibc a chunk is the request plus an 8-byte header, rounded up to
//! 16 and at least 32 bytes; a large request (from 128 KiB, where malloc maps its own
//! pages) is rounded up to whole 4 KiB pages. So many small values (a 1-byte string is a
//! 40-byte shared header and a 1-byte buffer, 80 bytes of chunks) count what they cost.
//!
//! The count is one atomic word (relaxed order: it is a statistic, read at checks, not a
//! lock); [`peak`] is its high-water mark, updated by a plain compare on the allocating
//! path (two threads racing may lose one update of the peak, never of the count).
//!
//! Two more words serve the interpreter's check, so that it stays one compare:
//! - the mark ([`set_mark`]): the check looks further only when [`live`] passes it;
//! - the credit ([`set_credit`]): bytes that may be allocated before the process's
//!   resident size is looked at again ([`peak_rss`]); spending it lowers the mark to
//!   zero, so that the next check looks. Live bytes cannot see fragmentation (memory
//!   freed between blocks that stay, which malloc keeps); the resident size can, and
//!   it cannot grow by more than what was allocated since the last look.
//!
//! [`configure`] makes glibc give every block of 128 KiB or more its own mapping,
//! returned to the system when freed (its default raises that threshold as blocks are
//! freed, and large freed blocks then stay resident as holes).
//!
//! This is the only crate of the project with unsafe code: `GlobalAlloc` is an unsafe
//! trait, each method forwards to `std::alloc::System` under the same contract, and
//! `mallopt` and `getrusage` are C calls.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting.
pub struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static MARK: AtomicUsize = AtomicUsize::new(usize::MAX);
static CREDIT: AtomicIsize = AtomicIsize::new(isize::MAX);

/// Requests from this size get their own mapping from glibc (its initial mmap threshold).
const MMAP_FROM: usize = 128 * 1024;
const PAGE: usize = 4096;

/// The bytes malloc uses for an allocation of `l`.
#[inline(always)]
fn chunk(l: Layout) -> usize {
    let size = l.size();
    // Alignments above malloc's own 16 are served from a larger chunk with padding.
    let size = if l.align() > 16 { size + l.align() } else { size };
    if size >= MMAP_FROM {
        (size + 16 + PAGE - 1) & !(PAGE - 1)
    } else {
        ((size + 8 + 15) & !15).max(32)
    }
}

#[inline(always)]
fn add(n: usize) {
    let now = LIVE.fetch_add(n, Relaxed) + n;
    if now > PEAK.load(Relaxed) {
        PEAK.store(now, Relaxed);
    }
    spend(n);
}

/// Spend allocation credit (a plain load and store: a lost update between threads only
/// delays the next look at the resident size a little).
#[inline(always)]
fn spend(n: usize) {
    let c = CREDIT.load(Relaxed).wrapping_sub(n as isize);
    CREDIT.store(c, Relaxed);
    if c < 0 {
        MARK.store(0, Relaxed);
    }
}

#[inline(always)]
fn sub(n: usize) {
    LIVE.fetch_sub(n, Relaxed);
}

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is `System`'s; the counting touches only the two atomics.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let p = System.alloc(l);
        if !p.is_null() {
            add(chunk(l));
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(l);
        if !p.is_null() {
            add(chunk(l));
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, l: Layout) {
        System.dealloc(ptr, l);
        sub(chunk(l));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, l, new_size);
        if !p.is_null() {
            // SAFETY: the caller guarantees that `new_size` with `l`'s alignment is a
            // valid layout (the `GlobalAlloc::realloc` contract).
            let (old, new) = (chunk(l), chunk(Layout::from_size_align_unchecked(new_size, l.align())));
            if new >= old {
                add(new - old);
                // A block that grows may move: count all of it as newly touched.
                spend(old);
            } else {
                sub(old - new);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Bytes of malloc chunks held live by the whole process now.
#[inline(always)]
pub fn live() -> usize {
    LIVE.load(Relaxed)
}

/// The most [`live`] has been since the process started.
pub fn peak() -> usize {
    PEAK.load(Relaxed)
}

/// Has [`live`] passed the mark (or the credit been spent)? One compare of two words.
#[inline(always)]
pub fn past_mark() -> bool {
    LIVE.load(Relaxed) > MARK.load(Relaxed)
}

/// Set the mark that [`past_mark`] compares with.
pub fn set_mark(mark: usize) {
    MARK.store(mark, Relaxed);
}

/// Allow `bytes` more of allocation before the mark drops to zero.
pub fn set_credit(bytes: usize) {
    CREDIT.store(bytes.min(isize::MAX as usize) as isize, Relaxed);
}

/// Has the credit been spent?
pub fn credit_spent() -> bool {
    CREDIT.load(Relaxed) < 0
}

/// The most the process has had resident, in bytes (`getrusage`), if the system says.
pub fn peak_rss() -> Option<usize> {
    // SAFETY: getrusage writes one `rusage` into the zeroed value it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    (r == 0).then(|| (u.ru_maxrss.max(0) as usize).saturating_mul(1024))
}

/// Blocks from this size get their own mapping (see [`configure`]).
pub const MMAP_THRESHOLD: usize = MMAP_FROM;

/// Configure malloc for a bounded process: blocks of [`MMAP_THRESHOLD`] or more are
/// always mapped on their own and unmapped when freed (the default raises that
/// threshold up to 32 MiB as large blocks are freed, after which freed large blocks
/// stay resident). Call it once, early.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets malloc's tuning parameters.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_FROM as libc::c_int);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_what_glibc_uses() {
        let c = |n| chunk(Layout::from_size_align(n, 1).unwrap());
        assert_eq!(c(1), 32);
        assert_eq!(c(24), 32);
        assert_eq!(c(25), 48);
        assert_eq!(c(40), 48);
        assert_eq!(c(1000), 1008);
        assert_eq!(c(1 << 20), (1 << 20) + PAGE);
    }

    #[test]
    fn counts_live_bytes() {
        let before = live();
        let v: Vec<u8> = Vec::with_capacity(1 << 20);
        // Other test threads allocate too: the count moves by at least this one.
        assert!(live() >= before + (1 << 20) || peak() >= before + (1 << 20));
        drop(v);
        assert!(peak() >= 1 << 20);
    }
}
