//! The process-wide calls of the leash binaries that need a C call: [`fork`] (and the
//! allocator's state in the child), [`close_inherited_descriptors`], [`exit_now`] and
//! [`replace_environment`].

use std::sync::atomic::Ordering::Relaxed;

use super::global::{STASH, STASH_CLASSES};
use super::{arena, live, CREDIT, MARK, MINE, OTHERS, OWNER};

/// What [`fork`] returned in the process that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forked {
    /// This is the new process.
    Child,
    /// This is the process that forked; the child's process id.
    Parent(i32),
}

/// The number of threads of this process (from `/proc`), if readable.
pub(super) fn threads() -> Option<usize> {
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
/// given back to malloc. The child's first interpreter thread calls
/// [`count_here`](crate::count_here) as a fresh process's does, and a run's memory budget
/// starts from the live bytes then.
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
