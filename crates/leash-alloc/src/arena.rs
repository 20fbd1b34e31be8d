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

/// A region reserved ahead by the process that forks (`reserve_ahead`): its start, or
/// 0. Its first `ARENA_STEP` bytes are writable, and it is never touched by that
/// process, so a fork copies no page of it and a child's first write to a page of
/// its copy gets a new zero page, as in a region of its own.
pub(crate) static AHEAD: AtomicUsize = AtomicUsize::new(0);

/// A new region: inaccessible, and its first `writable` bytes made writable.
fn reserve(writable: usize) -> Option<usize> {
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
        return None;
    }
    // SAFETY: the start of the mapping just made, which holds nothing.
    if writable > 0 && unsafe { libc::mprotect(p, writable, libc::PROT_READ | libc::PROT_WRITE) } != 0 {
        // SAFETY: the mapping just made, which nothing uses.
        unsafe { libc::munmap(p, ARENA_RESERVE) };
        return None;
    }
    Some(p as usize)
}

/// In a process that will fork: reserve its children's region now, once (see `AHEAD`),
/// so that each child starts its arena without a system call.
pub fn reserve_ahead() -> bool {
    if AHEAD.load(Relaxed) != 0 {
        return true;
    }
    if let Some(lo) = heap_start() {
        HEAP_LO.store(lo, Relaxed);
    }
    match reserve(ARENA_STEP) {
        Some(lo) => {
            AHEAD.store(lo, Relaxed);
            true
        }
        None => false,
    }
}

/// In the child of a fork, on the thread that forked: the region reserved ahead by the
/// parent (taken: a child of this child would not find it), or a new one.
pub fn start() {
    let ahead = AHEAD.swap(0, Relaxed);
    let (lo, end) = if ahead != 0 {
        (ahead, ahead + ARENA_STEP)
    } else {
        match reserve(0) {
            Some(lo) => (lo, lo),
            None => return,
        }
    };
    LO.store(lo, Relaxed);
    HI.store(lo + ARENA_RESERVE, Relaxed);
    // The parent's heap: [HEAP_LO, the break now) (its start known only to a parent
    // that reserved the region ahead; else no block is taken for the parent's).
    let heap_lo = HEAP_LO.load(Relaxed);
    // SAFETY: sbrk(0) only reads the program break.
    let brk = if heap_lo == 0 { 0 } else { (unsafe { libc::sbrk(0) }) as usize };
    BRK.store(if brk == usize::MAX || brk <= heap_lo { 0 } else { brk }, Relaxed);
    ARENA.with(|a| {
        a.next.set(lo);
        a.end.set(end);
        for f in &a.free {
            f.set(std::ptr::null_mut());
        }
        a.on.set(true);
    });
}

/// The start of the malloc heap (`[heap]` in /proc/self/maps), read by a process that
/// reserves its children's region ahead (`reserve_ahead`); 0 when unknown.
pub(crate) static HEAP_LO: AtomicUsize = AtomicUsize::new(0);
/// The program break at the fork (the end of the parent's malloc heap), in a child
/// whose parent knew its heap's start; 0 otherwise.
pub(crate) static BRK: AtomicUsize = AtomicUsize::new(0);

/// The start of this process's malloc heap, from /proc/self/maps.
fn heap_start() -> Option<usize> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    let line = maps.lines().find(|l| l.ends_with("[heap]"))?;
    usize::from_str_radix(line.split('-').next()?, 16).ok()
}

/// Is `p`, freed or reallocated on the thread that forked, a block of the parent's
/// malloc heap (below the program break at the fork, outside the region)? Then it
/// was allocated before the fork (this thread's blocks since come from the region,
/// and other threads' from malloc arenas of their own), and giving it back to malloc
/// would write malloc's bookkeeping into the parent's free chunks around it: pages
/// the child shares with its parent, each first write a page copied, for memory the
/// child, which serves one request, never needs again. It is left as it is (its bytes
/// are still counted as freed). The exceptions, a block this thread had from malloc
/// after the fork that malloc carved out of the parent's free chunks (one over
/// `ARENA_MAX_CHUNK`, or any once the region is full), are at most the parent's free
/// heap at the fork in all: left as they are too, never more.
#[inline(always)]
pub fn parents(p: *mut u8) -> bool {
    let p = p as usize;
    p < BRK.load(Relaxed) && p >= HEAP_LO.load(Relaxed) && ARENA.try_with(|a| a.on.get()).unwrap_or(false)
}

/// Is `p` a block of the region?
#[inline(always)]
pub fn holds(p: *mut u8) -> bool {
    let p = p as usize;
    p >= LO.load(Relaxed) && p < HI.load(Relaxed)
}

/// A block for chunk size `c` (a multiple of 16, at most `ARENA_MAX_CHUNK`), and
/// whether its bytes are zero (new memory); null when the arena cannot give one.
///
/// Outside a forked child (no region: `LO` is 0) this is one load and a branch, so that
/// the allocator stays small enough to be inlined into its callers; the rest is out of
/// line.
#[inline(always)]
pub fn alloc(c: usize) -> (*mut u8, bool) {
    if LO.load(Relaxed) == 0 {
        return (std::ptr::null_mut(), false);
    }
    alloc_here(c)
}

#[inline(never)]
fn alloc_here(c: usize) -> (*mut u8, bool) {
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
