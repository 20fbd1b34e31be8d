//! The `GlobalAlloc` methods of `Counting`: each forwards to `std::alloc::System` (or, in
//! a forked process, to the `arena`) and counts the chunk; the script's thread keeps its
//! freed small blocks in a stash (`Stash`) and serves them again.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use super::{add, arena, chunk, spend, sub, Counting, OWNER};

thread_local! {
    /// The script's thread's stash of freed small blocks (empty on other threads).
    pub(super) static STASH: Stash = const { Stash::new() };
}

/// Chunk sizes stashed: 32, 48, ..., 160 bytes (glibc's smallest chunk is 32).
const STASH_MIN: usize = 32;
const STASH_MAX: usize = 160;
pub(super) const STASH_CLASSES: usize = (STASH_MAX - STASH_MIN) / 16 + 1;
/// Bytes kept per chunk size (the blocks of a size: this over the chunk size).
const STASH_CLASS_BYTES: usize = 512 * 1024;
/// Blocks kept per chunk size: `STASH_CLASS_BYTES` of each.
pub(super) const STASH_DEPTH: [u32; STASH_CLASSES] = {
    let mut d = [0; STASH_CLASSES];
    let mut i = 0;
    while i < STASH_CLASSES {
        d[i] = (STASH_CLASS_BYTES / (STASH_MIN + 16 * i)) as u32;
        i += 1;
    }
    d
};

/// Freed blocks kept for reuse, one list per chunk size, linked through their first
/// word. Only blocks that came from `malloc` are kept (alignment at most 16 and not
/// above the size: `System` uses `malloc` for exactly those), so any of them serves a
/// request of the same chunk size (glibc gives a chunk of that size at least its usable
/// bytes), and `free` takes it back whenever it leaves the stash. Blocks still stashed
/// when the thread ends stay allocated (the script's thread lives as long as the process).
pub(super) struct Stash {
    pub(super) head: [Cell<*mut u8>; STASH_CLASSES],
    pub(super) len: [Cell<u32>; STASH_CLASSES],
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
/// (The list's index is computed first and checked once: a chunk under `STASH_MIN`
/// wraps to a large index. The range of `c` checked apart left the index's own bounds
/// check on the path to every stashed block; so did the two alignment tests, which are
/// one compare against the smaller bound.)
#[inline(always)]
fn stash_class(l: Layout, c: usize) -> Option<usize> {
    let i = c.wrapping_sub(STASH_MIN) >> 4;
    (i < STASH_CLASSES && l.align() <= l.size().min(16)).then_some(i)
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
                let p = stash_take(i);
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
                    if st.len[i].get() >= STASH_DEPTH[i] {
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
        // SAFETY: the caller guarantees that `new_size` with `l`'s alignment is a valid
        // layout (the `GlobalAlloc::realloc` contract).
        let nl = Layout::from_size_align_unchecked(new_size, l.align());
        if let Some(q) = self.stash_realloc(ptr, l, nl) {
            return q;
        }
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

impl Counting {
    /// `realloc` of a malloc block of a stashed size to another stashed size, on the
    /// script's thread, when the stash holds a block of the new size: that block (taken
    /// and counted as `alloc` takes it), the bytes copied (at most 152), the old block
    /// freed (to the stash when it has room).
    /// A list growing from 4 to 8 items (a 64-byte buffer to a 128-byte one) then takes
    /// a block a freed list left, where glibc's `realloc` went through its slower paths.
    /// None for anything else (`realloc` goes on as before).
    ///
    /// # Safety
    ///
    /// `ptr` and `l` as `GlobalAlloc::realloc` takes them; `nl` a valid layout of `l`'s
    /// alignment.
    #[inline(always)]
    unsafe fn stash_realloc(&self, ptr: *mut u8, l: Layout, nl: Layout) -> Option<*mut u8> {
        let (c, nc) = (chunk(l), chunk(nl));
        let j = stash_class(nl, nc)?;
        stash_class(l, c)?;
        if c == nc || !OWNER.get() || arena::holds(ptr) || arena::parents(ptr) {
            return None;
        }
        // (As `alloc` serves `nl` from the stash.)
        let q = stash_take(j);
        if q.is_null() {
            return None;
        }
        add(nc);
        // SAFETY: `ptr` holds at least `l.size()` bytes and `q` at least `nl.size()`;
        // they are two live blocks, so they do not overlap.
        std::ptr::copy_nonoverlapping(ptr, q, l.size().min(nl.size()));
        // SAFETY: the caller gives `ptr` (of layout `l`) up: `realloc` succeeded.
        self.dealloc(ptr, l);
        Some(q)
    }
}

/// A block of stash list `i` taken off it, or null when the list is empty (the
/// script's thread only: the caller checked `OWNER`).
#[inline(always)]
fn stash_take(i: usize) -> *mut u8 {
    STASH.with(|st| {
        let p = st.head[i].get();
        if !p.is_null() {
            // SAFETY: a stashed block is a live malloc block of its list's chunk size,
            // owned by the stash, whose first word links the next.
            st.head[i].set(unsafe { *(p as *mut *mut u8) });
            st.len[i].set(st.len[i].get() - 1);
        }
        p
    })
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
