//! The allocator's unit tests: chunk sizes, the stash, the arena, the live count, the
//! process calls' refusals, and SQLite's counted allocations.

use super::process::threads;
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

/// `f` on a thread of its own that counts as the script's (`count_here`: the stash's
/// thread), given the live count it started with.
fn on_script_thread(f: impl FnOnce(usize) + Send + 'static) {
    std::thread::spawn(|| {
        count_here();
        f(MINE.load(Relaxed));
    })
    .join()
    .unwrap();
}

#[test]
fn the_stash_serves_freed_blocks_again_and_counts_them() {
    on_script_thread(|before| {
        // A burst of 150 sizes (nine chunk sizes), freed and made again, three times:
        // every block keeps its own bytes, and the count comes back to where it was.
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
    });
}

#[test]
fn the_stash_holds_at_most_its_bytes_of_a_size() {
    on_script_thread(|before| {
        // More blocks of one chunk size (32: 24 bytes asked) than the stash keeps: the
        // stash fills to its bound and the rest go back to malloc; all of them count as
        // freed, and the stash serves its blocks again.
        let depth = global::STASH_DEPTH[0] as usize;
        assert_eq!(depth * 32, 512 * 1024);
        for round in 0..2u8 {
            let v: Vec<Box<[u8; 24]>> = (0..depth + 5000).map(|i| Box::new([round ^ i as u8; 24])).collect();
            assert!(v.iter().enumerate().all(|(i, b)| b.iter().all(|&x| x == round ^ i as u8)));
            drop(v);
            assert_eq!(MINE.load(Relaxed), before);
            assert_eq!(global::STASH.with(|st| st.len[0].get()) as usize, depth);
        }
    });
}

#[test]
fn a_small_block_resized_takes_a_stashed_block() {
    on_script_thread(|before| {
        // A freed block of 100 bytes (chunk 112) waits in the stash; a vector of 24
        // bytes (chunk 32) grown to 100 takes it, its bytes copied, and its old block
        // goes to the stash.
        let b = Box::new([0u8; 100]);
        let p = &*b as *const _ as usize;
        drop(b);
        let mut v: Vec<u8> = Vec::with_capacity(24);
        v.extend(0..24u8);
        let old = v.as_ptr() as usize;
        v.reserve_exact(76);
        assert_eq!(v.as_ptr() as usize, p, "the stashed block serves the grown vector");
        assert_eq!(v, (0..24u8).collect::<Vec<_>>());
        v.extend(24..100u8);
        assert_eq!(v, (0..100u8).collect::<Vec<_>>());
        let c = Box::new([7u8; 24]);
        assert_eq!(&*c as *const _ as usize, old, "the vector's old block went to the stash");
        drop(c);
        drop(v);
        assert_eq!(MINE.load(Relaxed), before);
    });
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
    on_script_thread(|before| {
        // (black_box: an allocation nothing reads may be elided by the optimiser.)
        let v: Vec<u8> = std::hint::black_box(Vec::with_capacity(1 << 20));
        assert_eq!(MINE.load(Relaxed).wrapping_sub(before), (1 << 20) + 16);
        drop(v);
        assert_eq!(MINE.load(Relaxed), before);
    });
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

/// `trunc_i64`: `as` within `i64`'s range, `i64::MIN` for NaN and past it, so that a
/// number converts back to itself exactly when it is whole and in range.
#[test]
fn trunc_i64_is_as_in_range_and_min_outside() {
    // 2^63, and the largest double below it.
    let lim = 9_223_372_036_854_775_808.0_f64;
    let big = 9_223_372_036_854_774_784.0;
    for x in [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 3.7, -3.7, 4503599627370497.0, 1e18, -1e18, big, -big, -lim] {
        assert_eq!(trunc_i64(x), x as i64, "{x}");
    }
    assert_eq!(trunc_i64(-lim), i64::MIN);
    for x in [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, lim, -lim * 2.0, 1e300, -1e300] {
        assert_eq!(trunc_i64(x), i64::MIN, "{x}");
    }
    // Converted back, only whole numbers in range are themselves.
    let whole = |x: f64| trunc_i64(x) as f64 == x;
    assert!(whole(42.0) && whole(-42.0) && whole(-lim) && whole(big));
    assert!(!whole(lim) && !whole(f64::NAN) && !whole(f64::INFINITY) && !whole(0.25) && !whole(1e19));
}
