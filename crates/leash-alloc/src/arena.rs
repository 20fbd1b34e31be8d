//! The arena of a process forked by [`fork`](crate::fork): small blocks for the thread
//! that forked, in memory of the child's own, so that they are not carved out of the free
//! chunks malloc kept in the parent's heap.
//!
//! A forked worker's heap is a copy-on-write image of its warm process's. Malloc serves
//! the worker's small blocks from the free chunks it finds in its bins and per-thread
//! cache, which lie scattered over the parent's heap, and its first write to each page
//! of them copies that page (a page fault and 4 KiB copied): tens of pages for a few
//! kilobytes of strings. Here they come instead one after the other from a region the
//! child maps after the fork (zero pages: a fault each, no copy, and as few pages as the
//! bytes need). Blocks freed go to a list per size and serve the next request of that
//! size. Blocks of more than `ARENA_MAX_CHUNK` bytes, aligned above 16, or asked on
//! another thread go to malloc as before.
//!
//! The region is reserved once (`ARENA_RESERVE` bytes, inaccessible, so it counts
//! neither as memory nor against `RLIMIT_DATA`) and made writable `ARENA_STEP` bytes at
//! a time as it fills (then it counts against `RLIMIT_DATA` like heap memory); when that
//! fails or the region is full, blocks come from malloc. A block of the region freed on
//! another thread is left alone (its bytes are not reused; the process is a worker that
//! serves one request). The counts of live bytes are those of malloc's chunks either way
//! (`chunk`): a block here is exactly one chunk's size.
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Blocks of up to this many bytes (a chunk size, see `chunk`) come from the arena:
/// chunk sizes up to `SMALL` each a size of its own (multiples of 16), larger ones
/// rounded up to a power of two (a vector that grows doubles anyway).
pub const ARENA_MAX_CHUNK: usize = 64 << 10;
const SMALL: usize = 1024;
const CLASSES: usize = SMALL / 16 + 1 + (ARENA_MAX_CHUNK.trailing_zeros() - SMALL.trailing_zeros()) as usize;

/// The list and the block size for chunk size `c` (at most `ARENA_MAX_CHUNK`).
#[inline(always)]
fn class(c: usize) -> (usize, usize) {
    if c <= SMALL {
        (c >> 4, c)
    } else {
        let size = c.next_power_of_two();
        (SMALL / 16 + (size.trailing_zeros() - SMALL.trailing_zeros()) as usize, size)
    }
}
const ARENA_RESERVE: usize = 64 << 20;
const ARENA_STEP: usize = 256 << 10;

/// The reserved region, [LO, HI) (0, 0 before it is made): any thread may ask
/// whether a block is in it.
static LO: AtomicUsize = AtomicUsize::new(0);
static HI: AtomicUsize = AtomicUsize::new(0);

struct State {
    on: Cell<bool>,
    /// The next free byte, the end of the writable part.
    next: Cell<usize>,
    end: Cell<usize>,
    free: [Cell<*mut u8>; CLASSES],
}

thread_local! {
    static ARENA: State = const {
        State {
            on: Cell::new(false),
            next: Cell::new(0),
            end: Cell::new(0),
            free: [const { Cell::new(std::ptr::null_mut()) }; CLASSES],
        }
    };
}

/// In the child of a fork, on the thread that forked: reserve the region.
pub fn start() {
    // SAFETY: a new anonymous mapping, inaccessible; nothing else is touched.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            ARENA_RESERVE,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        return;
    }
    let lo = p as usize;
    LO.store(lo, Relaxed);
    HI.store(lo + ARENA_RESERVE, Relaxed);
    ARENA.with(|a| {
        a.next.set(lo);
        a.end.set(lo);
        for f in &a.free {
            f.set(std::ptr::null_mut());
        }
        a.on.set(true);
    });
}

/// Is `p` a block of the region?
#[inline(always)]
pub fn holds(p: *mut u8) -> bool {
    let p = p as usize;
    p >= LO.load(Relaxed) && p < HI.load(Relaxed)
}

/// A block for chunk size `c` (a multiple of 16, at most `ARENA_MAX_CHUNK`), and
/// whether its bytes are zero (new memory); null when the arena cannot give one.
#[inline(always)]
pub fn alloc(c: usize) -> (*mut u8, bool) {
    ARENA
        .try_with(|a| {
            if !a.on.get() {
                return (std::ptr::null_mut(), false);
            }
            let (i, size) = class(c);
            let f = &a.free[i];
            let p = f.get();
            if !p.is_null() {
                // SAFETY: a freed block of this class, owned by the list, whose first
                // word links the next.
                f.set(unsafe { *(p as *mut *mut u8) });
                return (p, false);
            }
            let at = a.next.get();
            if at + size > a.end.get() && !grow(a, size) {
                return (std::ptr::null_mut(), false);
            }
            a.next.set(at + size);
            (at as *mut u8, true)
        })
        .unwrap_or((std::ptr::null_mut(), false))
}

/// Make the next `ARENA_STEP` bytes (or more, for `c`) writable.
#[cold]
fn grow(a: &State, c: usize) -> bool {
    let end = a.end.get();
    let step = ARENA_STEP.max(c);
    if end + step > HI.load(Relaxed) {
        return false;
    }
    // SAFETY: [end, end + step) is inside the reserved region, not yet writable, and
    // holds nothing.
    let r = unsafe { libc::mprotect(end as *mut libc::c_void, step, libc::PROT_READ | libc::PROT_WRITE) };
    if r != 0 {
        return false;
    }
    a.end.set(end + step);
    true
}

/// Take back a block of the region, of chunk size `c`.
#[inline(always)]
pub fn free(p: *mut u8, c: usize) {
    let _ = ARENA.try_with(|a| {
        if a.on.get() && c <= ARENA_MAX_CHUNK {
            // A block given for chunk size `c` is at least `class(c)`'s size (one
            // kept in place by a `realloc` that shrank it is larger).
            let f = &a.free[class(c).0];
            // SAFETY: the caller gives the block up; it is at least 16 bytes, room for
            // the link.
            unsafe { *(p as *mut *mut u8) = f.get() };
            f.set(p);
        }
        // Otherwise (another thread): left alone.
    });
}
