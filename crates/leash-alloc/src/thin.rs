//! [`ThinRc`]: a reference-counted block holding a header and a slice, behind a pointer
//! of one word (single-threaded: the count is a plain `Cell`, and the type is neither
//! `Send` nor `Sync`).
//!
//! Why it is here: the interpreter's values are 16 bytes (a tag and one word), and a map
//! whose values live in its own allocation (a parsed record: a shape pointer, its
//! accounted bytes, then its values, issue 25) needs a one-word pointer to a block whose
//! size depends on the number of values. `Rc<T>` of a sized `T` is one word but fixed in
//! size; `Rc<[T]>` and `Rc<HeaderSlice>` are two words (the length is in the pointer).
//! This keeps the length in the block instead, which safe Rust cannot express, so it
//! lives in the one crate of the project allowed unsafe code (the same idea as
//! `triomphe::ThinArc`, with a non-atomic count).
//!
//! The block is `[count: usize][len: usize][header: H][items: T; len]`, allocated with
//! `std::alloc::alloc`, so the process's global allocator (this crate's `Counting`)
//! counts it like any other block, and `--max-memory` sees it. [`ThinRc::block_size`]
//! gives the bytes requested for a length (for the interpreter's accounting tests).
//!
//! Semantics follow `Rc`: `clone` adds one to the count, `drop` takes one and drops the
//! header and the items and frees the block at zero; [`ThinRc::get_mut`] gives mutable
//! access when this is the only reference, [`ThinRc::make_mut`] copies the block first
//! when it is shared (clone-on-write). The length never changes after construction.

use std::alloc::{self, Layout};
use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

/// The block's fixed part; the items follow it (at `items_offset`).
#[repr(C)]
struct Inner<H, T> {
    count: Cell<usize>,
    len: usize,
    header: H,
    /// Zero-sized: gives the struct at least `T`'s alignment, so that the items can
    /// start right at its end.
    items: [T; 0],
}

/// A one-word, non-atomic reference-counted pointer to a header `H` and a slice of `T`
/// (see the module's comment). `R` is run on the header and the items when the last
/// reference goes, before they are dropped (`NoRelease`: nothing).
pub struct ThinRc<H, T, R: Release<H, T> = NoRelease> {
    ptr: NonNull<Inner<H, T>>,
    /// Owns an `Inner<H, T>` (and the items after it) for the drop check; `NonNull`
    /// already makes the type `!Send` and `!Sync`.
    _owns: PhantomData<(Inner<H, T>, R)>,
}

/// What a block does when its last reference goes, before its header and items are
/// dropped: given them mutably (no other reference exists). The interpreter's maps take
/// their nested values out here, to free them from a work list instead of by recursion.
/// Kept out of `Drop for ThinRc`'s inlined part, which stays a compare and a decrement.
pub trait Release<H, T> {
    fn release(header: &mut H, items: &mut [T]);
}

/// No release step.
pub struct NoRelease;

impl<H, T> Release<H, T> for NoRelease {
    #[inline(always)]
    fn release(_: &mut H, _: &mut [T]) {}
}

impl<H, T, R: Release<H, T>> ThinRc<H, T, R> {
    /// The layout of the block for `len` items and the offset of its first item. Panics
    /// (as `Vec` does) when the size would overflow `isize`.
    #[inline]
    fn layout(len: usize) -> (Layout, usize) {
        let items = Layout::array::<T>(len).expect("ThinRc: capacity overflow");
        let (l, off) = Layout::new::<Inner<H, T>>().extend(items).expect("ThinRc: capacity overflow");
        (l.pad_to_align(), off)
    }

    /// The bytes requested from the allocator for a block of `len` items (the counts,
    /// the header, the items, and padding to the block's alignment).
    pub fn block_size(len: usize) -> usize {
        Self::layout(len).0.size()
    }

    /// A block holding `header` and the items of `items`, with a count of one (`R`
    /// runs when the last reference goes; `new` for none).
    ///
    /// Takes exactly `items.len()` items. An iterator that ends early makes this panic
    /// (after dropping the header and the items it gave, and freeing the block); one
    /// with items left over keeps them unread (they are dropped with the iterator). If
    /// the iterator panics, the same clean-up runs: nothing is leaked and nothing is
    /// read uninitialised.
    pub fn with_release<I>(header: H, items: I) -> Self
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: ExactSizeIterator,
    {
        let mut it = items.into_iter();
        let len = it.len();
        let (layout, off) = Self::layout(len);
        debug_assert_eq!(off, std::mem::size_of::<Inner<H, T>>(), "the items start where `items_ptr` says");
        // SAFETY: `layout` has a non-zero size (it holds two `usize` counts).
        let raw = unsafe { alloc::alloc(layout) };
        let Some(base) = NonNull::new(raw) else { alloc::handle_alloc_error(layout) };
        let inner = base.cast::<Inner<H, T>>().as_ptr();
        // SAFETY: the block is fresh, large and aligned enough for an `Inner` (its layout
        // begins with one); the fields are written in place, never read before.
        unsafe {
            ptr::addr_of_mut!((*inner).count).write(Cell::new(1));
            ptr::addr_of_mut!((*inner).len).write(len);
            ptr::addr_of_mut!((*inner).header).write(header);
        }
        // Until every item is written, a panic (the iterator's, or ours for a short
        // iterator) drops the header and the items written so far and frees the block.
        struct Building<H, T> {
            inner: *mut Inner<H, T>,
            items: *mut T,
            written: usize,
            layout: Layout,
        }
        impl<H, T> Drop for Building<H, T> {
            fn drop(&mut self) {
                // SAFETY: the header and the first `written` items were initialised and
                // nothing else refers to them; the block was allocated with `layout`.
                unsafe {
                    ptr::drop_in_place(ptr::addr_of_mut!((*self.inner).header));
                    ptr::drop_in_place(ptr::slice_from_raw_parts_mut(self.items, self.written));
                    alloc::dealloc(self.inner.cast(), self.layout);
                }
            }
        }
        // SAFETY: `off` is within the block (the items' place, `len` of them).
        let items = unsafe { raw.add(off) }.cast::<T>();
        let mut b = Building { inner, items, written: 0, layout };
        while b.written < len {
            let Some(item) = it.next() else {
                panic!("ThinRc::new: the iterator gave {} items of the {} it said", b.written, len)
            };
            // SAFETY: `written < len`: the slot is inside the block, aligned for `T`,
            // and not yet initialised.
            unsafe { items.add(b.written).write(item) };
            b.written += 1;
        }
        std::mem::forget(b);
        ThinRc { ptr: base.cast(), _owns: PhantomData }
    }

    #[inline(always)]
    fn inner(&self) -> &Inner<H, T> {
        // SAFETY: `ptr` points to a live, initialised `Inner` as long as a `ThinRc` to
        // it exists (the count is at least one).
        unsafe { self.ptr.as_ref() }
    }

    /// The first item's address.
    #[inline(always)]
    fn items_ptr(&self) -> *mut T {
        // `Inner` ends at a multiple of its alignment, which is at least `T`'s (its
        // zero-length `items` field), so the items start right at its end: the offset
        // `layout` computes.
        // SAFETY: one past the `Inner` is inside the block (or its end, for no items).
        unsafe { self.ptr.as_ptr().cast::<u8>().add(std::mem::size_of::<Inner<H, T>>()).cast::<T>() }
    }

    /// The header.
    #[inline(always)]
    pub fn header(&self) -> &H {
        &self.inner().header
    }

    /// The items.
    #[inline(always)]
    pub fn slice(&self) -> &[T] {
        // SAFETY: the block holds `len` initialised items at `items_ptr`, which live as
        // long as `self`; nothing changes them while this shared borrow lasts (mutable
        // access needs `&mut self` and a count of one).
        unsafe { std::slice::from_raw_parts(self.items_ptr(), self.inner().len) }
    }

    /// The number of items.
    #[inline(always)]
    pub fn len(&self) -> usize {
        self.inner().len
    }

    /// Whether there are no items.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many `ThinRc`s point to this block.
    #[inline(always)]
    pub fn strong_count(this: &Self) -> usize {
        this.inner().count.get()
    }

    /// Whether this is the only reference to its block.
    #[inline(always)]
    pub fn is_unique(this: &Self) -> bool {
        this.inner().count.get() == 1
    }

    /// Whether two `ThinRc`s point to the same block.
    #[inline(always)]
    pub fn ptr_eq(a: &Self, b: &Self) -> bool {
        a.ptr == b.ptr
    }

    /// Mutable access to the header and the items, when this is the only reference.
    #[inline(always)]
    pub fn get_mut(this: &mut Self) -> Option<(&mut H, &mut [T])> {
        if Self::is_unique(this) {
            // SAFETY: the count is one, so no other `ThinRc` (and no borrow through
            // one) can reach the block while `this` is borrowed mutably.
            Some(unsafe { this.parts_mut_unchecked() })
        } else {
            None
        }
    }

    /// # Safety
    /// The count must be one.
    #[inline(always)]
    unsafe fn parts_mut_unchecked(&mut self) -> (&mut H, &mut [T]) {
        let inner = self.ptr.as_ptr();
        let len = (*inner).len;
        let items = self.items_ptr();
        // The header and the items do not overlap (the items start after the `Inner`).
        (&mut *ptr::addr_of_mut!((*inner).header), std::slice::from_raw_parts_mut(items, len))
    }
}

impl<H, T> ThinRc<H, T> {
    /// A block holding `header` and the items of `items`, with a count of one and no
    /// release step (see `with_release`, which this is).
    pub fn new<I>(header: H, items: I) -> Self
    where
        I: IntoIterator<Item = T>,
        I::IntoIter: ExactSizeIterator,
    {
        Self::with_release(header, items)
    }
}

impl<H: Clone, T: Clone, R: Release<H, T>> ThinRc<H, T, R> {
    /// Mutable access to the header and the items; a shared block is copied first (its
    /// header and items cloned into a new block that this then points to), as
    /// `Rc::make_mut` does.
    #[inline(always)]
    pub fn make_mut(this: &mut Self) -> (&mut H, &mut [T]) {
        if !Self::is_unique(this) {
            Self::copy(this);
        }
        // SAFETY: the count is one: it was, or `this` is a block just made.
        unsafe { this.parts_mut_unchecked() }
    }

    /// `make_mut`'s copy of a shared block (out of line: the check above stays small).
    #[cold]
    #[inline(never)]
    fn copy(this: &mut Self) {
        *this = Self::with_release(this.header().clone(), this.slice().iter().cloned());
    }
}

impl<H, T, R: Release<H, T>> Clone for ThinRc<H, T, R> {
    /// Another reference to the same block (the count plus one).
    #[inline(always)]
    fn clone(&self) -> Self {
        let c = &self.inner().count;
        // As `Rc`: a count that would wrap is a program that leaked `usize::MAX`
        // references; abort rather than risk a use after free.
        let n = c.get().wrapping_add(1);
        if n == 0 {
            std::process::abort();
        }
        c.set(n);
        ThinRc { ptr: self.ptr, _owns: PhantomData }
    }
}

impl<H, T, R: Release<H, T>> Drop for ThinRc<H, T, R> {
    /// (The test is on the count before the decrement, so that a caller that has just
    /// looked at it, as a map's drop does, lets the compiler fold the two looks.)
    #[inline(always)]
    fn drop(&mut self) {
        let c = &self.inner().count;
        let n = c.get();
        if n == 1 {
            self.drop_slow();
        } else {
            c.set(n - 1);
        }
    }
}

impl<H, T, R: Release<H, T>> ThinRc<H, T, R> {
    /// The last reference goes: drop the header and the items, free the block.
    #[inline(never)]
    fn drop_slow(&mut self) {
        let inner = self.ptr.as_ptr();
        // Frees the block even if dropping the header or an item panics.
        struct Free(*mut u8, Layout);
        impl Drop for Free {
            fn drop(&mut self) {
                // SAFETY: the block was allocated with this layout, and nothing refers
                // to it any more.
                unsafe { alloc::dealloc(self.0, self.1) }
            }
        }
        // SAFETY: the count was one: this is the last reference, the header and the
        // `len` items are initialised and dropped exactly once, here.
        unsafe {
            let len = (*inner).len;
            let _free = Free(inner.cast(), Self::layout(len).0);
            // The release step, while the count is still one (nothing else can reach the
            // block; a panic in it leaves the header and items undropped, never freed
            // twice).
            {
                let (h, items) = self.parts_mut_unchecked();
                R::release(h, items);
            }
            (*inner).count.set(0);
            let items = ptr::slice_from_raw_parts_mut(self.items_ptr(), len);
            // The items first (a panic in one still drops the others, then the header
            // is skipped and the block freed).
            ptr::drop_in_place(items);
            ptr::drop_in_place(ptr::addr_of_mut!((*inner).header));
        }
    }
}

impl<H: fmt::Debug, T: fmt::Debug, R: Release<H, T>> fmt::Debug for ThinRc<H, T, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThinRc").field("header", self.header()).field("items", &self.slice()).finish()
    }
}

/// A `ThinRc` can be sent to no other thread (its count is not atomic):
///
/// ```compile_fail
/// fn send<X: Send>(_: X) {}
/// send(leash_alloc::ThinRc::new((), [1u8]));
/// ```
///
/// nor shared between threads:
///
/// ```compile_fail
/// fn sync<X: Sync>(_: X) {}
/// sync(leash_alloc::ThinRc::new((), [1u8]));
/// ```
#[allow(dead_code)]
struct NotSendNorSync;

#[cfg(test)]
mod tests {
    use super::ThinRc;
    use std::cell::Cell;
    use std::rc::Rc;

    /// Counts its drops in a shared cell.
    #[derive(Clone, Debug)]
    struct D(Rc<Cell<usize>>, u64);
    impl Drop for D {
        fn drop(&mut self) {
            self.0.set(self.0.get() + 1);
        }
    }

    fn ds(n: usize, c: &Rc<Cell<usize>>) -> Vec<D> {
        (0..n as u64).map(|i| D(c.clone(), i)).collect()
    }

    #[test]
    fn one_word_and_the_block_size() {
        assert_eq!(std::mem::size_of::<ThinRc<u64, u64>>(), 8);
        assert_eq!(std::mem::size_of::<Option<ThinRc<u64, u64>>>(), 8);
        // counts 16 + header 24 + 6 items of 16: one block of 136 bytes.
        assert_eq!(ThinRc::<[u64; 3], [u64; 2]>::block_size(6), 136);
        assert_eq!(ThinRc::<(), u8>::block_size(0), 16);
        assert_eq!(ThinRc::<(), u8>::block_size(3), 24);
        assert_eq!(ThinRc::<u8, u128>::block_size(1), 48);
    }

    #[test]
    fn header_and_items_read_back() {
        let r = ThinRc::new(String::from("head"), (0..100u32).map(|i| i * 3));
        assert_eq!(r.header(), "head");
        assert_eq!(r.len(), 100);
        assert!(r.slice().iter().enumerate().all(|(i, v)| *v == i as u32 * 3));
        // Alignment above the counts' (a 16-aligned header and items).
        let a = ThinRc::new(7u128, [1u128, 2, 3]);
        assert_eq!((*a.header(), a.slice()), (7, &[1u128, 2, 3][..]));
        assert_eq!(a.slice().as_ptr() as usize % 16, 0);
        assert_eq!(a.header() as *const u128 as usize % 16, 0);
    }

    #[test]
    fn drops_everything_once_at_the_last_reference() {
        let c = Rc::new(Cell::new(0));
        let r = ThinRc::new(D(c.clone(), 99), ds(5, &c));
        let r2 = r.clone();
        assert_eq!(ThinRc::strong_count(&r), 2);
        assert!(ThinRc::ptr_eq(&r, &r2));
        drop(r);
        assert_eq!(c.get(), 0);
        assert_eq!(ThinRc::strong_count(&r2), 1);
        drop(r2);
        assert_eq!(c.get(), 6);
    }

    #[test]
    fn get_mut_only_when_unique() {
        let mut r = ThinRc::new(1u32, vec![10u32, 20]);
        {
            let (h, s) = ThinRc::get_mut(&mut r).expect("unique");
            *h = 2;
            s[1] = 21;
        }
        let r2 = r.clone();
        assert!(ThinRc::get_mut(&mut r).is_none());
        drop(r2);
        assert!(ThinRc::get_mut(&mut r).is_some());
        assert_eq!((*r.header(), r.slice()), (2, &[10u32, 21][..]));
    }

    #[test]
    fn make_mut_copies_a_shared_block_only() {
        let c = Rc::new(Cell::new(0));
        let mut a = ThinRc::new(D(c.clone(), 0), ds(3, &c));
        let p = a.slice().as_ptr();
        ThinRc::make_mut(&mut a).1[0].1 = 50;
        assert_eq!(a.slice().as_ptr(), p, "unique: changed in place");
        let b = a.clone();
        {
            let (h, s) = ThinRc::make_mut(&mut a);
            h.1 = 7;
            s[2].1 = 70;
        }
        assert!(!ThinRc::ptr_eq(&a, &b));
        assert_eq!((ThinRc::strong_count(&a), ThinRc::strong_count(&b)), (1, 1));
        assert_eq!(a.slice().iter().map(|d| d.1).collect::<Vec<_>>(), [50, 1, 70]);
        assert_eq!(b.slice().iter().map(|d| d.1).collect::<Vec<_>>(), [50, 1, 2]);
        assert_eq!((a.header().1, b.header().1), (7, 0));
        assert_eq!(c.get(), 0);
        drop(a);
        assert_eq!(c.get(), 4);
        drop(b);
        assert_eq!(c.get(), 8);
    }

    #[test]
    fn empty_slices_and_zero_sized_parts() {
        let e = ThinRc::new(5u8, std::iter::empty::<String>());
        assert!(e.is_empty());
        assert_eq!(e.slice(), &[] as &[String]);
        let z = ThinRc::new((), vec![(); 1000]);
        assert_eq!((z.len(), *z.header()), (1000, ()));
        let zz = ThinRc::new((), std::iter::empty::<()>());
        assert_eq!(zz.len(), 0);
        let c = Rc::new(Cell::new(0));
        let mut h = ThinRc::new((), ds(4, &c));
        let h2 = h.clone();
        ThinRc::make_mut(&mut h).1[3].1 = 9;
        drop((h, h2));
        assert_eq!(c.get(), 8);
        // A zero-sized type whose drop counts.
        #[derive(Clone)]
        struct Z;
        thread_local!(static ZD: Cell<usize> = const { Cell::new(0) });
        impl Drop for Z {
            fn drop(&mut self) {
                ZD.with(|d| d.set(d.get() + 1));
            }
        }
        drop(ThinRc::new(Z, (0..10).map(|_| Z)));
        assert_eq!(ZD.with(Cell::get), 11);
    }

    #[test]
    fn many_items_and_many_references() {
        let n = 1 << 20;
        let r = ThinRc::new(n, (0..n).map(|i| i as u64));
        assert_eq!(r.slice().iter().sum::<u64>(), (n as u64) * (n as u64 - 1) / 2);
        let refs: Vec<_> = (0..10_000).map(|_| r.clone()).collect();
        assert_eq!(ThinRc::strong_count(&r), 10_001);
        drop(refs);
        assert_eq!(ThinRc::strong_count(&r), 1);
        let s: Vec<ThinRc<usize, String>> =
            (0..2_000).map(|i| ThinRc::new(i, (0..i % 9).map(|j| j.to_string()))).collect();
        assert!(s.iter().enumerate().all(|(i, r)| *r.header() == i && r.len() == i % 9));
    }

    /// An iterator that says it has `said` items, gives `gives`, and panics at item
    /// `panic_at` if set.
    struct Liar {
        said: usize,
        gives: usize,
        panic_at: Option<usize>,
        n: usize,
        c: Rc<Cell<usize>>,
    }
    impl Iterator for Liar {
        type Item = D;
        fn next(&mut self) -> Option<D> {
            if Some(self.n) == self.panic_at {
                panic!("the iterator panics");
            }
            if self.n == self.gives {
                return None;
            }
            self.n += 1;
            Some(D(self.c.clone(), self.n as u64))
        }
        fn size_hint(&self) -> (usize, Option<usize>) {
            (self.said, Some(self.said))
        }
    }
    impl ExactSizeIterator for Liar {}

    fn liar(said: usize, gives: usize, panic_at: Option<usize>, c: &Rc<Cell<usize>>) -> Liar {
        Liar { said, gives, panic_at, n: 0, c: c.clone() }
    }

    #[test]
    fn a_panicking_or_lying_iterator_leaks_nothing() {
        // On a thread counted as the script's (only it writes its word of the live count),
        // so that the blocks freed can be checked; its panics print nothing (the test
        // harness's capture of the messages would allocate).
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if std::thread::current().name() != Some("thin-quiet") {
                prev(info)
            }
        }));
        let r = std::thread::Builder::new()
            .name("thin-quiet".into())
            .spawn(|| {
                crate::count_here();
                let mine = || crate::MINE.load(std::sync::atomic::Ordering::Relaxed);
                let c = Rc::new(Cell::new(0));
                // What the panic machinery allocates once, first.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ThinRc::new((), liar(3, 3, Some(1), &Rc::new(Cell::new(0))))
                }));
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ThinRc::new((), liar(3, 1, None, &Rc::new(Cell::new(0))))
                }));
                let before = mine();
                // Panics at its third item: the header and the two items given are dropped.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ThinRc::new(D(c.clone(), 0), liar(5, 5, Some(2), &c))
                }));
                assert!(r.is_err());
                drop(r);
                assert_eq!(c.get(), 3);
                // Ends early: a panic, the same clean-up.
                let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    ThinRc::new(D(c.clone(), 0), liar(5, 2, None, &c))
                }));
                assert!(r.is_err());
                drop(r);
                assert_eq!(c.get(), 6);
                assert_eq!(mine(), before, "the blocks were freed");
                // Gives more than it said: the rest is not read.
                let r = ThinRc::new(D(c.clone(), 0), liar(2, 9, None, &c));
                assert_eq!(r.slice().iter().map(|d| d.1).collect::<Vec<_>>(), [1, 2]);
                drop(r);
                assert_eq!(c.get(), 9);
                // Says none: an empty block.
                let r = ThinRc::new(D(c.clone(), 0), liar(0, 4, None, &c));
                assert!(r.is_empty());
                drop(r);
                assert_eq!(c.get(), 10);
                assert_eq!(mine(), before);
            })
            .unwrap()
            .join();
        if let Err(e) = r {
            let m = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
            panic!("{}", m.unwrap_or_default());
        }
    }

    #[test]
    fn the_release_step_runs_once_at_the_last_reference_before_the_drops() {
        thread_local!(static SEEN: Cell<(usize, u64)> = const { Cell::new((0, 0)) });
        struct Sum;
        impl super::Release<u64, D> for Sum {
            fn release(h: &mut u64, items: &mut [D]) {
                // Nothing dropped yet; the items can be changed or taken.
                let c = items.first().map(|d| d.0.get()).unwrap_or(0);
                SEEN.with(|s| s.set((s.get().0 + 1, *h + items.iter().map(|d| d.1).sum::<u64>() + c as u64 * 1000)));
                *h = 0;
            }
        }
        let c = Rc::new(Cell::new(0));
        let a: ThinRc<u64, D, Sum> = ThinRc::with_release(100, ds(4, &c));
        let b = a.clone();
        drop(a);
        assert_eq!(SEEN.with(Cell::get), (0, 0));
        drop(b);
        assert_eq!(SEEN.with(Cell::get), (1, 106));
        assert_eq!(c.get(), 4);
    }

    #[test]
    fn a_panicking_drop_still_frees_the_block_and_the_other_items() {
        #[derive(Clone)]
        struct P(bool, Rc<Cell<usize>>);
        impl Drop for P {
            fn drop(&mut self) {
                self.1.set(self.1.get() + 1);
                if self.0 {
                    panic!("drop panics");
                }
            }
        }
        let c = Rc::new(Cell::new(0));
        let r = ThinRc::new((), vec![P(false, c.clone()), P(true, c.clone()), P(false, c.clone())]);
        assert!(std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(r))).is_err());
        assert_eq!(c.get(), 3);
    }

    #[test]
    fn the_blocks_are_counted_by_the_global_allocator() {
        // Run on a thread of its own, counted as the script's thread (its word is written
        // by it alone), so that other tests' allocations do not blur the figure.
        std::thread::spawn(|| {
            crate::count_here();
            // Out of the stash's sizes (32 to 160 bytes), so each block is malloc's.
            let n = 100;
            let before = crate::MINE.load(std::sync::atomic::Ordering::Relaxed);
            let r = ThinRc::new([0u64; 3], (0..n).map(|i| i as u64));
            let during = crate::MINE.load(std::sync::atomic::Ordering::Relaxed);
            let block = ThinRc::<[u64; 3], u64>::block_size(n);
            assert_eq!(block, 16 + 24 + 8 * n);
            assert_eq!(during.wrapping_sub(before), (block + 8 + 15) & !15);
            drop(r);
            let after = crate::MINE.load(std::sync::atomic::Ordering::Relaxed);
            assert_eq!(after, before);
        })
        .join()
        .unwrap();
    }
}
