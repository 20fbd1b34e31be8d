//! SQLite's allocator and page cache, counted (for `db.*`'s work meter).
//!
//! SQLite copies values inside one instruction of its virtual machine (a recursive CTE's
//! row of 1 MB written to and read back from its queue, a key built and stored for each
//! of 20 indexes, a sorter record), and its progress handler sees only instructions.
//! Those copies go through one of two places, which are counted here:
//! - its allocator (a record or a value that needs a bigger buffer than its register
//!   had, a key read back to be compared, a sorter's records): [`sqlite_allocated`]
//!   counts the bytes asked of it (malloc and realloc);
//! - its page cache (a value bigger than a page is stored in a chain of overflow pages,
//!   each one fetched to be written, read or freed, whether the buffer that receives or
//!   gives the bytes is new or reused): [`sqlite_page_bytes`] counts the bytes of every
//!   page fetched (the page size of the cache it comes from).
//!
//! [`count_sqlite_allocations`] wraps SQLite's defaults (those `SQLITE_CONFIG_GETMALLOC`
//! and `SQLITE_CONFIG_GETPCACHE2` give before initialisation: the C library's malloc with
//! an 8-byte size header on Linux, this build having no `malloc_usable_size`, and
//! SQLite's pcache1) in functions that add to the counters and call the defaults.
//! Freeing and sizing stay SQLite's own, so SQLite's memory statistics and its heap
//! limit (`PRAGMA hard_heap_limit`, kept above this layer in `sqlite3Malloc`) work as
//! before. The sizes SQLite asks for and the pages it fetches depend only on what the
//! SQL does (no addresses, no clock: the size header makes `sqlite3MemSize` exact, and
//! lookaside slots and cached pages are used in the order the statements run), so the
//! counts are the same for every run of the same script.
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

unsafe extern "C" fn pc_rekey(c: *mut ffi::sqlite3_pcache, p: *mut ffi::sqlite3_pcache_page, old: c_uint, new: c_uint) {
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
        if ffi::sqlite3_config(ffi::SQLITE_CONFIG_GETMALLOC, &mut m as *mut ffi::sqlite3_mem_methods) != ffi::SQLITE_OK
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
        ) = (p.xCreate, p.xCachesize, p.xPagecount, p.xFetch, p.xUnpin, p.xRekey, p.xTruncate, p.xDestroy, p.xShrink)
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
        ffi::sqlite3_config(ffi::SQLITE_CONFIG_PCACHE2, &po as *const ffi::sqlite3_pcache_methods2) == ffi::SQLITE_OK
            && ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &mo as *const ffi::sqlite3_mem_methods) == ffi::SQLITE_OK
    }
}

/// Count the bytes SQLite allocates and the pages it fetches from now on (see
/// [`sqlite_allocated`], [`sqlite_page_bytes`]). Call it before the process's first SQLite
/// connection opens (SQLite's allocator and page cache can be replaced only before SQLite
/// initialises); later calls do nothing. True when the counting is in force; false when
/// SQLite was initialised before the first call (nothing is counted then, and SQLite
/// runs as it would have).
pub fn count_sqlite_allocations() -> bool {
    *INSTALLED.get_or_init(install)
}

/// Bytes SQLite has allocated or reallocated (the sizes asked for) since
/// [`count_sqlite_allocations`] took effect: cumulative, never lowered by a free. Compare
/// two readings with `wrapping_sub`.
#[inline]
pub fn sqlite_allocated() -> u64 {
    ALLOCATED.load(Relaxed)
}

/// Bytes of the pages SQLite has fetched from its page cache (each fetch counts its
/// cache's page size, whether the page was cached or new) since
/// [`count_sqlite_allocations`] took effect: cumulative. Compare with `wrapping_sub`.
#[inline]
pub fn sqlite_page_bytes() -> u64 {
    PAGE_BYTES.load(Relaxed)
}
