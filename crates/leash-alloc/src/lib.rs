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
//! Small blocks freed on the script's thread are kept for reuse (see [`Stash`]): glibc's
//! own per-thread cache holds only 7 blocks of a size, so freeing a list of a dozen
//! strings sends the rest through its slower paths (about 140 instructions a free and
//! 80 a malloc, measured with callgrind on the text benchmarks), and the next line's
//! strings come back the same way. The stash holds up to 128 blocks of each size from
//! 32 to 160 bytes (at most 110 KiB), and serves them back in a few instructions. Stashed
//! blocks count as freed.
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

use std::alloc::{GlobalAlloc, Layout, System};
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
    /// The script's thread's stash of freed small blocks (empty on other threads).
    static STASH: Stash = const { Stash::new() };
}

/// Chunk sizes stashed: 32, 48, ..., 160 bytes (glibc's smallest chunk is 32).
const STASH_MIN: usize = 32;
const STASH_MAX: usize = 160;
const STASH_CLASSES: usize = (STASH_MAX - STASH_MIN) / 16 + 1;
/// Blocks kept per chunk size.
const STASH_DEPTH: u32 = 128;

/// Freed blocks kept for reuse, one list per chunk size, linked through their first
/// word. Only blocks that came from `malloc` are kept (alignment at most 16 and not
/// above the size: `System` uses `malloc` for exactly those), so any of them serves a
/// request of the same chunk size (glibc gives a chunk of that size at least its usable
/// bytes), and `free` takes it back whenever it leaves the stash. Blocks still stashed
/// when the thread ends stay allocated (the script's thread lives as long as the process).
struct Stash {
    head: [Cell<*mut u8>; STASH_CLASSES],
    len: [Cell<u32>; STASH_CLASSES],
}

impl Stash {
    const fn new() -> Stash {
        Stash {
            head: [const { Cell::new(std::ptr::null_mut()) }; STASH_CLASSES],
            len: [const { Cell::new(0) }; STASH_CLASSES],
        }
    }
}

/// The stash list for a block of layout `l` and chunk size `c`, if it is one to stash.
#[inline(always)]
fn stash_class(l: Layout, c: usize) -> Option<usize> {
    (l.align() <= 16 && l.align() <= l.size() && (STASH_MIN..=STASH_MAX).contains(&c)).then(|| (c - STASH_MIN) >> 4)
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

// SAFETY: every method forwards to `System` with the caller's arguments unchanged, so the
// `GlobalAlloc` contract is `System`'s, except that the script's thread keeps some freed
// small malloc blocks in its stash and hands them out again for requests of the same
// chunk size (see `Stash`: such a block is as good as a fresh `malloc` of that size, and
// `free` takes it back later), and that in a forked process the forking thread's blocks
// may come from `arena`: a block there is at least the chunk size of its layout (so at
// least the request), 16-aligned (the region is page-aligned and every block size a
// multiple of 16), given to one owner at a time (bump or free list), and recognised by
// its address when it is freed or reallocated (never passed to malloc's `free`); and that
// on that thread a block of the parent's malloc heap (`arena::parents`) is never given back
// to malloc: freeing leaves it allocated, reallocating copies it to a new block (malloc
// never sees it again, so nothing is freed twice); the counting touches only the atomics
// above and thread-locals that need no allocation.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        let c = chunk(l);
        if let Some(i) = stash_class(l, c) {
            if OWNER.get() {
                let p = STASH.with(|st| {
                    let p = st.head[i].get();
                    if !p.is_null() {
                        // SAFETY: a stashed block is a live malloc block of chunk size
                        // `c`, owned by the stash, whose first word links the next.
                        st.head[i].set(*(p as *mut *mut u8));
                        st.len[i].set(st.len[i].get() - 1);
                    }
                    p
                });
                if !p.is_null() {
                    add(c);
                    return p;
                }
            }
        }
        let (p, _) = arena_alloc(l, c);
        let p = if p.is_null() { System.alloc(l) } else { p };
        if !p.is_null() {
            add(c);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        let c = chunk(l);
        let p = match arena_alloc(l, c) {
            (p, true) => p,
            (p, false) if !p.is_null() => {
                // SAFETY: a block of at least `l.size()` bytes, ours.
                std::ptr::write_bytes(p, 0, l.size());
                p
            }
            _ => System.alloc_zeroed(l),
        };
        if !p.is_null() {
            add(c);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, l: Layout) {
        let c = chunk(l);
        sub(c);
        if arena::parents(ptr) {
            // A block of the parent's heap: left as it is (see `arena::parents`), not
            // stashed either (reusing it would write to the parent's page).
            return;
        }
        if let Some(i) = stash_class(l, c) {
            if OWNER.get() {
                let kept = STASH.with(|st| {
                    if st.len[i].get() >= STASH_DEPTH {
                        return false;
                    }
                    // SAFETY: the caller gives the block up (the `dealloc` contract); it
                    // is at least 24 usable bytes (chunk 32 or more), room for the link.
                    *(ptr as *mut *mut u8) = st.head[i].get();
                    st.head[i].set(ptr);
                    st.len[i].set(st.len[i].get() + 1);
                    true
                });
                if kept {
                    return;
                }
            }
        }
        if arena::holds(ptr) {
            arena::free(ptr, c);
            return;
        }
        System.dealloc(ptr, l);
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, l: Layout, new_size: usize) -> *mut u8 {
        let p = if arena::holds(ptr) {
            // A block of the arena: kept when the new size fits its chunk, else moved
            // (to the arena or to malloc) and given back.
            let c = chunk(l);
            let nl = Layout::from_size_align_unchecked(new_size, l.align());
            if chunk(nl) <= c {
                ptr
            } else {
                let (q, _) = arena_alloc(nl, chunk(nl));
                let q = if q.is_null() { System.alloc(nl) } else { q };
                if !q.is_null() {
                    // SAFETY: both blocks hold at least `min` bytes and do not overlap.
                    std::ptr::copy_nonoverlapping(ptr, q, l.size().min(new_size));
                    arena::free(ptr, c);
                }
                q
            }
        } else if arena::parents(ptr) {
            // A block of the parent's heap: its bytes copied to a new block, and the old
            // one left as it is (see `arena::parents`).
            let nl = Layout::from_size_align_unchecked(new_size, l.align());
            let (q, _) = arena_alloc(nl, chunk(nl));
            let q = if q.is_null() { System.alloc(nl) } else { q };
            if !q.is_null() {
                // SAFETY: both blocks hold at least `min` bytes and do not overlap.
                std::ptr::copy_nonoverlapping(ptr, q, l.size().min(new_size));
            }
            q
        } else {
            System.realloc(ptr, l, new_size)
        };
        if !p.is_null() {
            // SAFETY: the caller guarantees that `new_size` with `l`'s alignment is a
            // valid layout (the `GlobalAlloc::realloc` contract).
            let (old, new) = (chunk(l), chunk(Layout::from_size_align_unchecked(new_size, l.align())));
            if new >= old {
                // A block that grows may move: count all of it as newly touched.
                add(new - old);
                if OWNER.get() {
                    spend(old);
                }
            } else {
                sub(old - new);
            }
        }
        p
    }
}

/// The arena of a process forked by [`fork`]: small blocks for the thread that forked,
/// in memory of the child's own, so that they are not carved out of the free chunks
/// malloc kept in the parent's heap.
///
/// A forked worker's heap is a copy-on-write image of its warm process's. Malloc serves
/// the worker's small blocks from the free chunks it finds in its bins and per-thread
/// cache, which lie scattered over the parent's heap, and its first write to each page
/// of them copies that page (a page fault and 4 KiB copied): tens of pages for a few
/// kilobytes of strings. Here they come instead one after the other from a region the
/// child maps after the fork (zero pages: a fault each, no copy, and as few pages as the
/// bytes need). Blocks freed go to a list per size and serve the next request of that
/// size. Blocks of more than `ARENA_MAX_CHUNK` bytes, aligned above 16, or asked on
/// another thread go to malloc as before.
///
/// The region is reserved once (`ARENA_RESERVE` bytes, inaccessible, so it counts
/// neither as memory nor against `RLIMIT_DATA`) and made writable `ARENA_STEP` bytes at
/// a time as it fills (then it counts against `RLIMIT_DATA` like heap memory); when that
/// fails or the region is full, blocks come from malloc. A block of the region freed on
/// another thread is left alone (its bytes are not reused; the process is a worker that
/// serves one request). The counts of live bytes are those of malloc's chunks either way
/// (`chunk`): a block here is exactly one chunk's size.
mod arena {
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
}

/// A block for layout `l` of chunk size `c` from the arena of a forked process, if `l`
/// is one it serves and it has room (null otherwise).
#[inline(always)]
fn arena_alloc(l: Layout, c: usize) -> (*mut u8, bool) {
    if l.align() <= 16 && c <= arena::ARENA_MAX_CHUNK {
        arena::alloc(c)
    } else {
        (std::ptr::null_mut(), false)
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

/// What [`fork`] returned in the process that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// This is the new process.
    Child,
    /// This is the process that forked; the child's process id.
    Parent(i32),
}

/// The number of threads of this process (from `/proc`), if readable.
fn threads() -> Option<usize> {
    // `/proc/self/task` has a link count of 2 + the number of threads: one `statx`, where
    // opening and reading `/proc/self/stat` costs three system calls and the kernel's
    // formatting of every field of the process's status.
    use std::os::unix::fs::MetadataExt;
    let n = std::fs::metadata("/proc/self/task").ok()?.nlink();
    if n >= 3 {
        return Some(n as usize - 2);
    }
    // A procfs that counts otherwise: field 20 of `/proc/self/stat`, read at once.
    use std::io::Read;
    let mut buf = [0u8; 2048];
    let n = std::fs::File::open("/proc/self/stat").ok()?.read(&mut buf).ok()?;
    let stat = std::str::from_utf8(&buf[..n]).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_ascii_whitespace().nth(17)?.parse().ok()
}

/// Fork the process (`fork(2)`), for a warm process that starts a fresh worker per
/// request without an `exec` (`leash-cgi --fastcgi`).
///
/// Precondition, checked: the process is single-threaded (`/proc` says one
/// thread). A fork copies only the calling thread, so a lock held by another thread (the
/// allocator's, stdout's) would stay locked forever in the child; with one thread there
/// is none. It refuses (an error, nothing forked) otherwise, or when the thread count
/// cannot be read.
///
/// In the child the forking thread's small blocks come from an arena of the child's own
/// (see `arena`), and the allocator's state starts clean: every live byte is counted as held
/// by "other threads" (none is the script's yet), the mark and the credit are reset (no
/// check is pending), and the calling thread is no longer the script's thread, its stash
/// given back to malloc. The child's first interpreter thread calls [`count_here`] as a
/// fresh process's does, and a run's memory budget starts from the live bytes then.
pub fn fork() -> Result<Forked, String> {
    match threads() {
        Some(1) => {}
        Some(n) => return Err(format!("cannot fork: the process has {n} threads (it must have one)")),
        None => return Err("cannot fork: /proc/self/stat cannot be read (the thread count is unknown)".into()),
    }
    // SAFETY: the process has one thread (checked above), so no lock is held by a thread
    // that the child would not have; fork has no other precondition.
    let pid = unsafe { libc::fork() };
    match pid {
        -1 => Err(format!("cannot fork: {}", std::io::Error::last_os_error())),
        0 => {
            reset_after_fork();
            Ok(Forked::Child)
        }
        p => Ok(Forked::Parent(p)),
    }
}

/// In a process that forks workers with [`fork`] (the warm process of `leash-cgi
/// --fastcgi`): reserve the region each child's arena is cut from now, once, instead of
/// in every child (a `mmap` and an `mprotect` per fork: splitting a fresh mapping costs a
/// short-lived worker more than the fork copies for a mapping the parent never touches).
/// The parent never uses the region; each child takes its own copy-on-write copy of it.
/// False when it cannot be made (each child then makes its own, as before).
pub fn reserve_arena_for_forks() -> bool {
    arena::reserve_ahead()
}

/// Have a listening TCP socket wake `accept` only once a connection has data to read
/// (`TCP_DEFER_ACCEPT`, Linux; a connection that sends nothing is accepted after about
/// `secs` seconds). For a server whose clients speak first (a FastCGI server: the web
/// server sends its request as soon as it connects), the thread that accepts then finds
/// the request there instead of waiting for it once more.
pub fn set_tcp_defer_accept(listener: std::os::fd::BorrowedFd<'_>, secs: i32) -> Result<(), String> {
    use std::os::fd::AsRawFd;
    let v: libc::c_int = secs;
    // SAFETY: setsockopt reads one c_int of the size given from a live local; the
    // descriptor is borrowed, so open for the call.
    let r = unsafe {
        libc::setsockopt(
            listener.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            &v as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(format!("TCP_DEFER_ACCEPT: {}", std::io::Error::last_os_error()))
    }
}

/// Close every descriptor from 3 up (`close_range(2)`), for a process that has just
/// started and must pass none of what it inherited to its children (the warm process of
/// `leash-cgi --fastcgi`: a descriptor its parent leaked would reach every worker).
///
/// Precondition (the caller's, not checked): nothing in the process owns a descriptor
/// from 3 up, that is, it is called first thing in `main`, before any file, socket or
/// pipe is opened; otherwise an `OwnedFd` would be left naming a closed descriptor.
pub fn close_inherited_descriptors() -> Result<(), String> {
    // SAFETY: close_range only closes descriptors; by the precondition none of them is
    // owned by anything in this process.
    let r = unsafe { libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32) };
    if r == 0 {
        Ok(())
    } else {
        Err(format!("close_range: {}", std::io::Error::last_os_error()))
    }
}

/// End the process now with status `code` (`_exit(2)`): no `atexit` handlers, no
/// thread-local destructors, no unmapping of the libraries' data. For a worker forked by
/// [`fork`], whose memory is a copy-on-write image of the warm process: a destructor
/// freeing what the warm process had prepared would copy every page it touches only to
/// give it back. The caller flushes what it has buffered first.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit has no precondition; it does not return.
    unsafe { libc::_exit(code) }
}

extern "C" {
    /// The C library's environment (`environ(7)`), what `getenv` and `std::env` read.
    static mut environ: *mut *mut libc::c_char;
}

/// Make `vars` the process's whole environment, as removing every variable and setting
/// each of `vars` would (`std::env::set_var`), but with one array and one string per
/// variable allocated here, where `setenv` grows its array by one for each variable and
/// keeps a search tree of the strings it made (tens of small mallocs: in a forked worker,
/// each first write to a page of the parent's heap copies that page).
///
/// Refuses (an error, nothing changed) unless the process has one thread (no other
/// thread may read the environment while its array is replaced), or when a name is empty
/// or holds `=` or a NUL byte, a value holds a NUL byte, or a name comes twice (the
/// caller then sets them one by one, as before). The strings and the array are never
/// freed (they are the environment; a later `setenv` copies the array it finds).
pub fn replace_environment(vars: &[(std::ffi::OsString, std::ffi::OsString)]) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    for (i, (k, v)) in vars.iter().enumerate() {
        let (k, v) = (k.as_bytes(), v.as_bytes());
        if k.is_empty() || k.contains(&b'=') || k.contains(&0) || v.contains(&0) {
            return Err("a variable that setenv would refuse".into());
        }
        if vars[..i].iter().any(|(n, _)| n.as_bytes() == k) {
            return Err("a variable named twice".into());
        }
    }
    match threads() {
        Some(1) => {}
        _ => return Err("the process has other threads (or their number is unknown)".into()),
    }
    let mut ptrs: Vec<*mut libc::c_char> = Vec::with_capacity(vars.len() + 1);
    for (k, v) in vars {
        let (k, v) = (k.as_bytes(), v.as_bytes());
        let mut e = Vec::with_capacity(k.len() + v.len() + 2);
        e.extend_from_slice(k);
        e.push(b'=');
        e.extend_from_slice(v);
        e.push(0);
        ptrs.push(Box::leak(e.into_boxed_slice()).as_mut_ptr() as *mut libc::c_char);
    }
    ptrs.push(std::ptr::null_mut());
    let array = Box::leak(ptrs.into_boxed_slice()).as_mut_ptr();
    // SAFETY: one thread (checked above), so nothing reads `environ` while it changes;
    // the array is null-terminated, each entry a NUL-terminated `NAME=value` string, and
    // both live as long as the process (leaked).
    unsafe { environ = array };
    Ok(())
}

/// The allocator's state in a new child (see [`fork`]).
fn reset_after_fork() {
    if OWNER.get() {
        // Give the stash back to malloc (its blocks counted as freed already).
        STASH.with(|st| {
            for i in 0..STASH_CLASSES {
                let mut p = st.head[i].replace(std::ptr::null_mut());
                while !p.is_null() {
                    // SAFETY: a stashed block is a live malloc block owned by the stash,
                    // whose first word links the next.
                    let next = unsafe { *(p as *mut *mut u8) };
                    // SAFETY: `System.alloc` made it (only malloc blocks are stashed);
                    // free() needs no layout.
                    unsafe { libc::free(p as *mut libc::c_void) };
                    p = next;
                }
                st.len[i].set(0);
            }
        });
        OWNER.set(false);
    }
    arena::start();
    OTHERS.store(live(), Relaxed);
    MINE.store(0, Relaxed);
    MARK.store(isize::MAX, Relaxed);
    CREDIT.store(isize::MAX, Relaxed);
}

/// SQLite's allocator and page cache, counted (for `db.*`'s work meter).
///
/// SQLite copies values inside one instruction of its virtual machine (a recursive CTE's
/// row of 1 MB written to and read back from its queue, a key built and stored for each
/// of 20 indexes, a sorter record), and its progress handler sees only instructions.
/// Those copies go through one of two places, which are counted here:
/// - its allocator (a record or a value that needs a bigger buffer than its register
///   had, a key read back to be compared, a sorter's records): [`sqlite_allocated`]
///   counts the bytes asked of it (malloc and realloc);
/// - its page cache (a value bigger than a page is stored in a chain of overflow pages,
///   each one fetched to be written, read or freed, whether the buffer that receives or
///   gives the bytes is new or reused): [`sqlite_page_bytes`] counts the bytes of every
///   page fetched (the page size of the cache it comes from).
///
/// [`count_sqlite_allocations`] wraps SQLite's defaults (those `SQLITE_CONFIG_GETMALLOC`
/// and `SQLITE_CONFIG_GETPCACHE2` give before initialisation: the C library's malloc with
/// an 8-byte size header on Linux, this build having no `malloc_usable_size`, and
/// SQLite's pcache1) in functions that add to the counters and call the defaults.
/// Freeing and sizing stay SQLite's own, so SQLite's memory statistics and its heap
/// limit (`PRAGMA hard_heap_limit`, kept above this layer in `sqlite3Malloc`) work as
/// before. The sizes SQLite asks for and the pages it fetches depend only on what the
/// SQL does (no addresses, no clock: the size header makes `sqlite3MemSize` exact, and
/// lookaside slots and cached pages are used in the order the statements run), so the
/// counts are the same for every run of the same script.
mod sqlite_count {
    use libsqlite3_sys as ffi;
    use std::ffi::{c_int, c_uint, c_void};
    use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
    use std::sync::OnceLock;

    type Malloc = unsafe extern "C" fn(c_int) -> *mut c_void;
    type Realloc = unsafe extern "C" fn(*mut c_void, c_int) -> *mut c_void;

    /// Bytes SQLite has asked its allocator for since the wrapping (wrapping).
    pub(super) static ALLOCATED: AtomicU64 = AtomicU64::new(0);
    /// Bytes of the pages SQLite has fetched from its page cache (wrapping).
    pub(super) static PAGE_BYTES: AtomicU64 = AtomicU64::new(0);
    /// SQLite's default `xMalloc` and `xRealloc`, which the wrappers call.
    static MALLOC: OnceLock<(Malloc, Realloc)> = OnceLock::new();
    /// SQLite's default page cache, which the wrappers call.
    static PCACHE: OnceLock<Pcache> = OnceLock::new();
    /// Did the wrapping take (None until tried)?
    pub(super) static INSTALLED: OnceLock<bool> = OnceLock::new();

    /// The default page cache's methods (plain function pointers: `Send` and `Sync`).
    struct Pcache {
        create: unsafe extern "C" fn(c_int, c_int, c_int) -> *mut ffi::sqlite3_pcache,
        cachesize: unsafe extern "C" fn(*mut ffi::sqlite3_pcache, c_int),
        pagecount: unsafe extern "C" fn(*mut ffi::sqlite3_pcache) -> c_int,
        fetch: unsafe extern "C" fn(*mut ffi::sqlite3_pcache, c_uint, c_int) -> *mut ffi::sqlite3_pcache_page,
        unpin: unsafe extern "C" fn(*mut ffi::sqlite3_pcache, *mut ffi::sqlite3_pcache_page, c_int),
        rekey: unsafe extern "C" fn(*mut ffi::sqlite3_pcache, *mut ffi::sqlite3_pcache_page, c_uint, c_uint),
        truncate: unsafe extern "C" fn(*mut ffi::sqlite3_pcache, c_uint),
        destroy: unsafe extern "C" fn(*mut ffi::sqlite3_pcache),
        shrink: unsafe extern "C" fn(*mut ffi::sqlite3_pcache),
    }

    /// What our `xCreate` gives SQLite as a cache: the default's cache and its page size.
    struct Cache {
        inner: *mut ffi::sqlite3_pcache,
        page: u64,
    }

    unsafe extern "C" fn counted_malloc(n: c_int) -> *mut c_void {
        ALLOCATED.fetch_add(n.max(0) as u64, Relaxed);
        match MALLOC.get() {
            // SAFETY: SQLite's own default xMalloc, called as SQLite would call it.
            Some((m, _)) => unsafe { m(n) },
            None => std::ptr::null_mut(),
        }
    }

    unsafe extern "C" fn counted_realloc(p: *mut c_void, n: c_int) -> *mut c_void {
        // A block that grows may move: all of it counts, as in the global allocator.
        ALLOCATED.fetch_add(n.max(0) as u64, Relaxed);
        match MALLOC.get() {
            // SAFETY: SQLite's own default xRealloc, with SQLite's own arguments (a
            // block its xMalloc made, and the size).
            Some((_, r)) => unsafe { r(p, n) },
            None => std::ptr::null_mut(),
        }
    }

    /// The default page cache. Set before the wrappers are given to SQLite (see
    /// `install`), so SQLite never calls them without it; each still answers without it
    /// (no cache, no page, nothing done) rather than panic across the C boundary.
    fn pc() -> Option<&'static Pcache> {
        PCACHE.get()
    }

    // SAFETY (the page cache wrappers below): SQLite calls them as it would call the
    // default's methods, with a cache made by `pc_create`, a `Box<Cache>` that lives
    // until `pc_destroy`; each unwraps it and calls the default's method with the
    // default's cache and SQLite's other arguments unchanged.
    unsafe extern "C" fn pc_create(page: c_int, extra: c_int, purgeable: c_int) -> *mut ffi::sqlite3_pcache {
        let Some(pc) = pc() else { return std::ptr::null_mut() };
        // SAFETY: see above.
        let inner = unsafe { (pc.create)(page, extra, purgeable) };
        if inner.is_null() {
            return inner;
        }
        Box::into_raw(Box::new(Cache { inner, page: page.max(0) as u64 })) as *mut ffi::sqlite3_pcache
    }

    /// The cache `c` that `pc_create` made.
    unsafe fn cache<'a>(c: *mut ffi::sqlite3_pcache) -> &'a Cache {
        // SAFETY: `c` is a live `Box<Cache>` from `pc_create` (see above).
        unsafe { &*(c as *const Cache) }
    }

    unsafe extern "C" fn pc_cachesize(c: *mut ffi::sqlite3_pcache, n: c_int) {
        if let Some(pc) = pc() {
            // SAFETY: see above.
            unsafe { (pc.cachesize)(cache(c).inner, n) }
        }
    }

    unsafe extern "C" fn pc_pagecount(c: *mut ffi::sqlite3_pcache) -> c_int {
        match pc() {
            // SAFETY: see above.
            Some(pc) => unsafe { (pc.pagecount)(cache(c).inner) },
            None => 0,
        }
    }

    unsafe extern "C" fn pc_fetch(
        c: *mut ffi::sqlite3_pcache,
        key: c_uint,
        create: c_int,
    ) -> *mut ffi::sqlite3_pcache_page {
        // SAFETY: see above.
        let c = unsafe { cache(c) };
        PAGE_BYTES.fetch_add(c.page, Relaxed);
        match pc() {
            // SAFETY: see above.
            Some(pc) => unsafe { (pc.fetch)(c.inner, key, create) },
            None => std::ptr::null_mut(),
        }
    }

    unsafe extern "C" fn pc_unpin(c: *mut ffi::sqlite3_pcache, p: *mut ffi::sqlite3_pcache_page, discard: c_int) {
        if let Some(pc) = pc() {
            // SAFETY: see above.
            unsafe { (pc.unpin)(cache(c).inner, p, discard) }
        }
    }

    unsafe extern "C" fn pc_rekey(
        c: *mut ffi::sqlite3_pcache,
        p: *mut ffi::sqlite3_pcache_page,
        old: c_uint,
        new: c_uint,
    ) {
        if let Some(pc) = pc() {
            // SAFETY: see above.
            unsafe { (pc.rekey)(cache(c).inner, p, old, new) }
        }
    }

    unsafe extern "C" fn pc_truncate(c: *mut ffi::sqlite3_pcache, limit: c_uint) {
        if let Some(pc) = pc() {
            // SAFETY: see above.
            unsafe { (pc.truncate)(cache(c).inner, limit) }
        }
    }

    unsafe extern "C" fn pc_destroy(c: *mut ffi::sqlite3_pcache) {
        // SAFETY: see above; SQLite uses the cache no more after xDestroy.
        let b = unsafe { Box::from_raw(c as *mut Cache) };
        if let Some(pc) = pc() {
            // SAFETY: see above.
            unsafe { (pc.destroy)(b.inner) }
        }
    }

    unsafe extern "C" fn pc_shrink(c: *mut ffi::sqlite3_pcache) {
        if let Some(pc) = pc() {
            // SAFETY: see above.
            unsafe { (pc.shrink)(cache(c).inner) }
        }
    }

    pub(super) fn install() -> bool {
        // SAFETY: `sqlite3_config` with GETMALLOC (GETPCACHE2) writes one
        // `sqlite3_mem_methods` (`sqlite3_pcache_methods2`) into the zeroed value it is
        // given, setting up the defaults first if need be; with MALLOC (PCACHE2) it copies
        // the struct it is given (so a local is fine) and refuses (SQLITE_MISUSE, nothing
        // changed) once SQLite is initialised. They are called once, under the OnceLock
        // in `count_sqlite_allocations`, before any connection of this process exists
        // when the caller does as documented. `xInit`, `xShutdown` and `pArg` stay the
        // default's (pcache1's `xInit` takes its own `pArg`).
        unsafe {
            let mut m: ffi::sqlite3_mem_methods = std::mem::zeroed();
            if ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETMALLOC, &mut m as *mut ffi::sqlite3_mem_methods)
                != ffi::SQLITE_OK
            {
                return false;
            }
            let mut p: ffi::sqlite3_pcache_methods2 = std::mem::zeroed();
            if ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETPCACHE2, &mut p as *mut ffi::sqlite3_pcache_methods2)
                != ffi::SQLITE_OK
            {
                return false;
            }
            let (Some(malloc), Some(realloc)) = (m.xMalloc, m.xRealloc) else { return false };
            let (
                Some(create),
                Some(cachesize),
                Some(pagecount),
                Some(fetch),
                Some(unpin),
                Some(rekey),
                Some(truncate),
                Some(destroy),
                Some(shrink),
            ) = (
                p.xCreate,
                p.xCachesize,
                p.xPagecount,
                p.xFetch,
                p.xUnpin,
                p.xRekey,
                p.xTruncate,
                p.xDestroy,
                p.xShrink,
            )
            else {
                return false;
            };
            if MALLOC.set((malloc, realloc)).is_err()
                || PCACHE
                    .set(Pcache { create, cachesize, pagecount, fetch, unpin, rekey, truncate, destroy, shrink })
                    .is_err()
            {
                return false;
            }
            let mut mo = m;
            mo.xMalloc = Some(counted_malloc);
            mo.xRealloc = Some(counted_realloc);
            let mut po = p;
            po.xCreate = Some(pc_create);
            po.xCachesize = Some(pc_cachesize);
            po.xPagecount = Some(pc_pagecount);
            po.xFetch = Some(pc_fetch);
            po.xUnpin = Some(pc_unpin);
            po.xRekey = Some(pc_rekey);
            po.xTruncate = Some(pc_truncate);
            po.xDestroy = Some(pc_destroy);
            po.xShrink = Some(pc_shrink);
            // The page cache first: if the allocator were wrapped and this refused, the
            // counts would be half there.
            ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE2, &po as *const ffi::sqlite3_pcache_methods2)
                == ffi::SQLITE_OK
                && ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &mo as *const ffi::sqlite3_mem_methods)
                    == ffi::SQLITE_OK
        }
    }
}

/// Count the bytes SQLite allocates and the pages it fetches from now on (see
/// [`sqlite_allocated`], [`sqlite_page_bytes`]). Call it before the process's first SQLite
/// connection opens (SQLite's allocator and page cache can be replaced only before SQLite
/// initialises); later calls do nothing. True when the counting is in force; false when
/// SQLite was initialised before the first call (nothing is counted then, and SQLite
/// runs as it would have).
pub fn count_sqlite_allocations() -> bool {
    *sqlite_count::INSTALLED.get_or_init(sqlite_count::install)
}

/// Bytes SQLite has allocated or reallocated (the sizes asked for) since
/// [`count_sqlite_allocations`] took effect: cumulative, never lowered by a free. Compare
/// two readings with `wrapping_sub`.
#[inline]
pub fn sqlite_allocated() -> u64 {
    sqlite_count::ALLOCATED.load(Relaxed)
}

/// Bytes of the pages SQLite has fetched from its page cache (each fetch counts its
/// cache's page size, whether the page was cached or new) since
/// [`count_sqlite_allocations`] took effect: cumulative. Compare with `wrapping_sub`.
#[inline]
pub fn sqlite_page_bytes() -> u64 {
    sqlite_count::PAGE_BYTES.load(Relaxed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_what_glibc_uses() {
        let c = |n| chunk(Layout::from_size_align(n, 1).unwrap());
        assert_eq!(c(9), 32);
        assert_eq!(c(24), 32);
        assert_eq!(c(25), 48);
        assert_eq!(c(40), 48);
        assert_eq!(c(1000), 1008);
    }

    #[test]
    fn the_stash_serves_freed_blocks_again_and_counts_them() {
        std::thread::spawn(|| {
            count_here();
            let before = MINE.load(Relaxed);
            // A burst bigger than the stash, of several sizes, freed and made again: every
            // block keeps its own bytes, and the count comes back to where it was.
            for round in 0..3u8 {
                let mut v: Vec<Box<[u8]>> = Vec::new();
                for i in 0..1000usize {
                    let n = 1 + i % 150;
                    v.push(vec![round.wrapping_add(i as u8); n].into_boxed_slice());
                }
                for (i, b) in v.iter().enumerate() {
                    assert!(b.iter().all(|&x| x == round.wrapping_add(i as u8)));
                    assert_eq!(b.as_ptr() as usize % 16, 0);
                }
                drop(v);
                assert_eq!(MINE.load(Relaxed), before);
            }
            let a = Box::new([7u64; 4]);
            let p = &*a as *const _ as usize;
            drop(a);
            let b = Box::new([9u64; 4]);
            assert_eq!(&*b as *const _ as usize, p, "a freed block is served again");
            assert_eq!(*b, [9u64; 4]);
        })
        .join()
        .unwrap();
    }

    /// The arena's region is one per process (as a child has one thread that uses it):
    /// the tests that start it take turns.
    static ARENA_TESTS: std::sync::Mutex<()> = std::sync::Mutex::new(());

    #[test]
    fn the_arena_of_a_forked_process() {
        let _turn = ARENA_TESTS.lock().unwrap_or_else(|p| p.into_inner());
        // As in a forked child, on a thread of its own (the test harness has threads, so
        // no fork here: the arena is started as `fork` starts it in the child).
        std::thread::spawn(|| {
            arena::start();
            let mut kept = Vec::new();
            for n in [1usize, 8, 24, 40, 100, 1000, 1017, 5000, 40000, 65000] {
                let v: Vec<u8> = std::hint::black_box((0..n).map(|i| i as u8).collect());
                assert!(arena::holds(v.as_ptr() as *mut u8), "{n}");
                assert_eq!(v.as_ptr() as usize % 16, 0);
                kept.push(v);
            }
            // Past the largest block: malloc's.
            let big: Vec<u8> = std::hint::black_box(vec![3; 1 << 20]);
            assert!(!arena::holds(big.as_ptr() as *mut u8));
            // Grown (moved, contents kept), shrunk (kept in place), freed and served again.
            let mut v = kept.pop().unwrap();
            v.extend(std::iter::repeat_n(9u8, 100_000));
            assert!(!arena::holds(v.as_ptr() as *mut u8));
            assert!(v[..65000].iter().enumerate().all(|(i, &b)| b == i as u8) && v[65000..].iter().all(|&b| b == 9));
            let mut w: Vec<u8> = std::hint::black_box((0..3000).map(|i| i as u8).collect());
            let at = w.as_ptr();
            w.truncate(10);
            w.shrink_to_fit();
            assert_eq!(w.as_ptr(), at);
            assert_eq!(w, (0..10).map(|i| i as u8).collect::<Vec<_>>());
            let a = Box::new([7u64; 30]);
            let p = &*a as *const _ as usize;
            drop(a);
            let b = Box::new([0u64; 30]);
            assert_eq!(&*b as *const _ as usize, p, "a freed block is served again");
            drop(b);
            // A reused block asked zeroed is zeroed.
            let z: Vec<u64> = std::hint::black_box(vec![0u64; 30]);
            assert_eq!(z.as_ptr() as usize, p);
            assert!(z.iter().all(|&x| x == 0));
            // A block freed on another thread is left alone (not reused, not passed to free).
            let moved = kept.pop().unwrap();
            std::thread::spawn(move || drop(moved)).join().unwrap();
            assert!(kept.iter().all(|v| v.iter().enumerate().all(|(i, &b)| b == i as u8)));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn the_arena_reserved_ahead() {
        let _turn = ARENA_TESTS.lock().unwrap_or_else(|p| p.into_inner());
        // As in the child of a process that reserved its children's region ahead: the child
        // takes that region (writable at once), and only once.
        std::thread::spawn(|| {
            assert!(reserve_arena_for_forks());
            let ahead = arena::AHEAD.load(Relaxed);
            assert_ne!(ahead, 0);
            arena::start();
            assert_eq!(arena::AHEAD.load(Relaxed), 0, "taken");
            let v: Vec<u8> = std::hint::black_box((0..5000).map(|i| i as u8).collect());
            assert!(arena::holds(v.as_ptr() as *mut u8));
            assert_eq!(v.as_ptr() as usize, ahead, "the first block at the region's start");
            assert!(v.iter().enumerate().all(|(i, &b)| b == i as u8));
            // The parent's heap, [its start, the break at the fork): its blocks are left
            // as they are when freed here; nothing else is taken for one of them.
            let lo = arena::HEAP_LO.load(Relaxed);
            let brk = arena::BRK.load(Relaxed);
            if lo != 0 {
                assert!(brk > lo, "the break at the start: {brk:#x}, the heap from {lo:#x}");
                assert!(arena::parents(lo as *mut u8) && arena::parents((brk - 16) as *mut u8));
                assert!(!arena::parents(brk as *mut u8) && !arena::parents((lo - 16) as *mut u8));
            }
            assert!(!arena::parents(v.as_ptr() as *mut u8), "a block of the region");
            let mapped: Vec<u8> = std::hint::black_box(vec![5u8; 4 << 20]);
            assert!(!arena::parents(mapped.as_ptr() as *mut u8), "a block malloc mapped");
            // Not on another thread (no arena there).
            if lo != 0 {
                assert!(!std::thread::spawn(move || arena::parents(lo as *mut u8)).join().unwrap());
            }
            let big: Vec<u8> = std::hint::black_box((0..300_000).map(|i| (i % 7) as u8).collect::<Vec<u8>>());
            let many: Vec<Vec<u8>> = (0..200).map(|i| vec![i as u8; 4000]).collect();
            assert!(many.iter().all(|m| arena::holds(m.as_ptr() as *mut u8)), "grown past the first step");
            assert!(many.iter().enumerate().all(|(i, m)| m.iter().all(|&b| b == i as u8)));
            drop(big);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_deferred_accept_waits_for_the_first_bytes() {
        use std::io::{Read, Write};
        use std::os::fd::AsFd;
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        set_tcp_defer_accept(l.as_fd(), 5).unwrap();
        l.set_nonblocking(true).unwrap();
        let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(50));
        let e = l.accept().map(|_| ()).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::WouldBlock, "connected, nothing sent: not accepted yet");
        c.write_all(b"hello").unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(4);
        let (mut s, _) = loop {
            match l.accept() {
                Ok(x) => break x,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && std::time::Instant::now() < end => {
                    std::thread::sleep(std::time::Duration::from_millis(5))
                }
                Err(e) => panic!("{e}"),
            }
        };
        s.set_nonblocking(false).unwrap();
        let mut b = [0u8; 5];
        s.read_exact(&mut b).unwrap();
        assert_eq!(&b, b"hello");
    }

    #[test]
    fn replace_environment_refuses_what_setenv_would_and_threads() {
        let v = |k: &str, x: &str| (std::ffi::OsString::from(k), std::ffi::OsString::from(x));
        for bad in [
            vec![v("", "x")],
            vec![v("A=B", "x")],
            vec![v("A\0", "x")],
            vec![v("A", "x\0")],
            vec![v("A", "1"), v("A", "2")],
        ] {
            assert!(replace_environment(&bad).is_err(), "{bad:?}");
        }
        // The test harness has threads: refused, the environment unchanged.
        let before: Vec<_> = std::env::vars_os().collect();
        let e = replace_environment(&[v("ONLY", "1")]).unwrap_err();
        assert!(e.contains("threads"), "{e}");
        assert_eq!(std::env::vars_os().collect::<Vec<_>>(), before);
    }

    #[test]
    fn fork_refuses_a_threaded_process() {
        // The test harness runs tests on threads of their own: more than one thread.
        let e = fork().unwrap_err();
        assert!(e.contains("threads"), "{e}");
        assert!(threads().unwrap() > 1);
    }

    #[test]
    fn counts_live_bytes() {
        // Other test threads allocate too, but only this one writes `MINE`.
        std::thread::spawn(|| {
            count_here();
            let before = MINE.load(Relaxed);
            // (black_box: an allocation nothing reads may be elided by the optimiser.)
            let v: Vec<u8> = std::hint::black_box(Vec::with_capacity(1 << 20));
            assert_eq!(MINE.load(Relaxed).wrapping_sub(before), (1 << 20) + 16);
            drop(v);
            assert_eq!(MINE.load(Relaxed), before);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn sqlite_allocations_are_counted_and_its_heap_limit_holds() {
        use libsqlite3_sys as ffi;
        assert!(count_sqlite_allocations());
        assert!(count_sqlite_allocations(), "a second call keeps the first's answer");
        let run = |db: *mut ffi::sqlite3, sql: &str| {
            let sql = std::ffi::CString::new(sql).unwrap();
            // SAFETY: an open connection, a NUL-terminated SQL text, no callback.
            unsafe { ffi::sqlite3_exec(db, sql.as_ptr(), None, std::ptr::null_mut(), std::ptr::null_mut()) }
        };
        let mut db = std::ptr::null_mut();
        // SAFETY: opens an in-memory database into `db`.
        let rc = unsafe {
            ffi::sqlite3_open_v2(
                c":memory:".as_ptr(),
                &mut db,
                ffi::SQLITE_OPEN_READWRITE | ffi::SQLITE_OPEN_CREATE,
                std::ptr::null(),
            )
        };
        assert_eq!(rc, ffi::SQLITE_OK);
        assert_eq!(run(db, "CREATE TABLE t(x)"), ffi::SQLITE_OK);
        let (before, pages_before) = (sqlite_allocated(), sqlite_page_bytes());
        assert_eq!(run(db, "INSERT INTO t VALUES (zeroblob(1000000) || 'x')"), ffi::SQLITE_OK);
        let n = sqlite_allocated().wrapping_sub(before);
        assert!((1_000_000..20_000_000).contains(&n), "{n}");
        // Stored in overflow pages: about 250 pages of 4 KiB fetched to be written.
        let pages = sqlite_page_bytes().wrapping_sub(pages_before);
        assert!((1_000_000..20_000_000).contains(&pages), "{pages}");
        // The heap limit still holds (it is kept above the wrapped allocator).
        // SAFETY: plain calls on the open connection, then closing it.
        unsafe {
            let old = ffi::sqlite3_hard_heap_limit64(ffi::sqlite3_memory_used() + 500_000);
            assert_ne!(run(db, "INSERT INTO t VALUES (zeroblob(3000000) || 'x')"), ffi::SQLITE_OK);
            ffi::sqlite3_hard_heap_limit64(old);
            assert_eq!(ffi::sqlite3_close(db), ffi::SQLITE_OK);
        }
    }
}
