//! The executable's code in huge pages, for a process that forks short-lived workers
//! ([`text_in_huge_pages`]; `leash-cgi --fastcgi`'s warm process).
//!
//! A fork does not copy the page-table entries of a file mapping that has no private
//! page, so a worker forked from a warm process starts with none of the code mapped: every
//! 64 KiB of code it runs is a page fault (the kernel maps 16 pages around each), and its
//! exit unmaps every entry again. Measured (WORKLOG, ninth session): 44 such faults in
//! `leash`'s code and 8 in its read-only data a worker, about a quarter of a worker's CPU
//! with the unmapping at its exit. Copying the entries at the fork instead costs more
//! than the faults (about 3,300 entries a fork: eighth session, tried and dropped).
//!
//! Here the code is moved, in place, to anonymous memory in 2 MiB pages: the same bytes
//! at the same addresses, read-only and executable as before. A fork copies one entry
//! per 2 MiB of it (the page is shared, never written), a worker takes no fault in it and
//! its exit drops one entry per 2 MiB. Only whole 2 MiB pages are moved: those wholly
//! inside the executable's code mapping, and the one where the code starts when what
//! precedes the code in that page is the executable's own read-only data mapping (that
//! tail of the read-only data then becomes executable too, as in the traditional layout
//! where `.rodata` and `.text` share one segment). The rest stays as it was.
//!
//! It happens only when the kernel gives huge pages (transparent huge pages `always` or
//! `madvise`): the copy is checked to be in huge pages before it replaces anything, and
//! dropped otherwise (the code in small anonymous pages would cost every fork a copied
//! entry per 4 KiB). Tools that read symbols by address from the executable's mapping
//! (perf) see the moved part as anonymous memory.

const HUGE: usize = 2 << 20;

/// A line of `/proc/self/maps`: start, end, permissions, offset, path.
struct Map {
    start: usize,
    end: usize,
    perms: String,
    path: String,
}

fn maps() -> Result<Vec<Map>, String> {
    let text = std::fs::read_to_string("/proc/self/maps").map_err(|e| format!("/proc/self/maps: {e}"))?;
    let mut out = Vec::new();
    for line in text.lines() {
        let mut f = line.split_ascii_whitespace();
        let (Some(range), Some(perms)) = (f.next(), f.next()) else { continue };
        let (_off, _dev, _inode) = (f.next(), f.next(), f.next());
        let path = f.collect::<Vec<_>>().join(" ");
        let Some((a, b)) = range.split_once('-') else { continue };
        let (Ok(start), Ok(end)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16)) else { continue };
        out.push(Map { start, end, perms: perms.to_string(), path });
    }
    Ok(out)
}

/// Whether the kernel hands out transparent huge pages to a mapping that asks.
fn thp_available() -> bool {
    std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
        .is_ok_and(|s| s.contains("[always]") || s.contains("[madvise]"))
}

/// kB of `AnonHugePages` of the mapping starting at `start` (from `/proc/self/smaps`).
fn anon_huge_kb(start: usize) -> Option<usize> {
    let text = std::fs::read_to_string("/proc/self/smaps").ok()?;
    let head = format!("{start:x}-");
    let mut inside = false;
    for line in text.lines() {
        // A mapping's line starts with its range ("7f0000-7f2000 r-xp ..."), a field's
        // with its name ("AnonHugePages:     2048 kB").
        let first = line.split_ascii_whitespace().next().unwrap_or("");
        if first.contains('-') && first.bytes().all(|b| b == b'-' || b.is_ascii_hexdigit()) {
            inside = first.starts_with(&head);
        } else if inside {
            if let Some(v) = line.strip_prefix("AnonHugePages:") {
                return v.trim().trim_end_matches("kB").trim().parse().ok();
            }
        }
    }
    None
}

/// The range of the executable's code to move: whole 2 MiB pages (see the module's
/// comment), or None.
fn range_to_move(maps: &[Map], exe: &str) -> Option<(usize, usize)> {
    let i = maps.iter().position(|m| m.path == exe && m.perms == "r-xp")?;
    let text = &maps[i];
    let up = text.start.div_ceil(HUGE) * HUGE;
    let down = text.start / HUGE * HUGE;
    // The page where the code starts, when the executable's read-only data fills the rest
    // of it (the mapping just before the code, contiguous, read only, the same file).
    let lo = match i.checked_sub(1).map(|j| &maps[j]) {
        Some(p)
            if down < text.start && p.path == exe && p.perms == "r--p" && p.end == text.start && p.start <= down =>
        {
            down
        }
        _ => up,
    };
    let hi = text.end / HUGE * HUGE;
    (hi > lo).then_some((lo, hi))
}

/// Move the executable's code to 2 MiB pages of anonymous memory, in place (see the
/// module's comment). Returns the bytes moved (0 when nothing could be: no huge pages,
/// no whole 2 MiB page of code). Call it once, early, on a process that is about to fork
/// workers; the process must have one thread (checked: another thread running code in
/// the range while it is replaced would fault, wait and go on, but nothing is gained by
/// allowing it).
pub fn text_in_huge_pages() -> Result<usize, String> {
    if super::process::threads() != Some(1) {
        return Err("the process must have one thread".into());
    }
    if !thp_available() {
        return Ok(0);
    }
    let exe = std::fs::read_link("/proc/self/exe").map_err(|e| format!("/proc/self/exe: {e}"))?;
    let exe = exe.to_string_lossy().into_owned();
    let Some((lo, hi)) = range_to_move(&maps()?, &exe) else { return Ok(0) };
    let len = hi - lo;
    // SAFETY: a new private anonymous mapping at an address the kernel chooses: nothing
    // of the process is there; it is ours until unmapped.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len + HUGE,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        return Err(format!("mmap: {}", std::io::Error::last_os_error()));
    }
    let raw = raw as usize;
    let at = raw.div_ceil(HUGE) * HUGE;
    // The parts before and after the aligned `len` bytes are given back.
    // SAFETY: both ranges are inside the mapping just made, which nothing else uses.
    unsafe {
        if at > raw {
            libc::munmap(raw as *mut libc::c_void, at - raw);
        }
        if raw + len + HUGE > at + len {
            libc::munmap((at + len) as *mut libc::c_void, raw + len + HUGE - (at + len));
        }
    }
    let unmap = |why: String| -> Result<usize, String> {
        // SAFETY: the copy's mapping, ours and used by nothing (the code was not replaced).
        unsafe { libc::munmap(at as *mut libc::c_void, len) };
        Err(why)
    };
    // SAFETY: madvise on our own mapping only changes how the kernel backs it.
    if unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_HUGEPAGE) } != 0 {
        return unmap(format!("madvise: {}", std::io::Error::last_os_error()));
    }
    // SAFETY: [lo, hi) is mapped readable (the executable's code, and its read-only data
    // for the first page: both read-only, so nothing writes them while they are read);
    // [at, at + len) is our writable mapping of the same length; they do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(lo as *const u8, at as *mut u8, len) };
    if anon_huge_kb(at) != Some(len / 1024) {
        // MADV_COLLAPSE (Linux 6.1): the kernel gathers the pages into huge ones now.
        // SAFETY: as the madvise above; the contents are kept.
        unsafe { libc::madvise(at as *mut libc::c_void, len, 25) };
        if anon_huge_kb(at) != Some(len / 1024) {
            return unmap("the copy is not in huge pages".into());
        }
    }
    // SAFETY: our own mapping, made read-only and executable (never writable again).
    if unsafe { libc::mprotect(at as *mut libc::c_void, len, libc::PROT_READ | libc::PROT_EXEC) } != 0 {
        return unmap(format!("mprotect: {}", std::io::Error::last_os_error()));
    }
    // The copy replaces [lo, hi): one system call, under the kernel's lock on the address
    // space, the page tables moved (2 MiB entries stay 2 MiB). The bytes at every address
    // are the ones that were there; code running now (this function, which may be inside
    // the range) returns into the same instructions.
    // SAFETY: [lo, hi) held only the executable's code and read-only data, which no Rust
    // object owns and nothing writes; the new mapping holds the same bytes at the same
    // addresses with the same or wider (read + execute) permissions, so every reference
    // to them stays valid. On failure mremap changes nothing.
    let r = unsafe {
        libc::mremap(
            at as *mut libc::c_void,
            len,
            len,
            libc::MREMAP_MAYMOVE | libc::MREMAP_FIXED,
            lo as *mut libc::c_void,
        )
    };
    if r as usize != lo {
        return unmap(format!("mremap: {}", std::io::Error::last_os_error()));
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(start: usize, end: usize, perms: &str, path: &str) -> Map {
        Map { start, end, perms: perms.into(), path: path.into() }
    }

    #[test]
    fn whole_huge_pages_of_the_code_only() {
        let exe = "/usr/bin/leash";
        let m = 1 << 20;
        // The code starts inside a 2 MiB page whose start is the executable's read-only
        // data, contiguous: that page is moved, and the whole ones after it, up to the
        // last whole one (the rest of the code shares its page with the relocated data).
        let maps = vec![
            map(0x4000_0000 + 0x1000, 0x4000_0000 + 3 * m, "r--p", exe),
            map(0x4000_0000 + 3 * m, 0x4000_0000 + 10 * m + 0x5000, "r-xp", exe),
            map(0x4000_0000 + 10 * m + 0x5000, 0x4000_0000 + 11 * m, "r--p", exe),
        ];
        assert_eq!(range_to_move(&maps, exe), Some((0x4000_0000 + 2 * m, 0x4000_0000 + 10 * m)));
        // Not when what precedes the code in its first page is not the executable's
        // read-only data: then from the first whole page of code.
        let mut other = maps.iter().map(|x| map(x.start, x.end, &x.perms, &x.path)).collect::<Vec<_>>();
        other[0].perms = "rw-p".into();
        assert_eq!(range_to_move(&other, exe), Some((0x4000_0000 + 4 * m, 0x4000_0000 + 10 * m)));
        other[0].perms = "r--p".into();
        other[0].path = "/usr/lib/libc.so.6".into();
        assert_eq!(range_to_move(&other, exe), Some((0x4000_0000 + 4 * m, 0x4000_0000 + 10 * m)));
        // A gap between them: the same.
        let gap = vec![
            map(0x4000_0000, 0x4000_0000 + 3 * m - 0x1000, "r--p", exe),
            map(0x4000_0000 + 3 * m, 0x4000_0000 + 10 * m, "r-xp", exe),
        ];
        assert_eq!(range_to_move(&gap, exe), Some((0x4000_0000 + 4 * m, 0x4000_0000 + 10 * m)));
        // Read-only data that starts inside the same 2 MiB page: that page is not whole.
        let short = vec![
            map(0x4000_0000 + 3 * m - 0x1000, 0x4000_0000 + 3 * m, "r--p", exe),
            map(0x4000_0000 + 3 * m, 0x4000_0000 + 6 * m, "r-xp", exe),
        ];
        assert_eq!(range_to_move(&short, exe), Some((0x4000_0000 + 4 * m, 0x4000_0000 + 6 * m)));
        // Code aligned already.
        let aligned = vec![map(0x4000_0000, 0x4000_0000 + 4 * m, "r-xp", exe)];
        assert_eq!(range_to_move(&aligned, exe), Some((0x4000_0000, 0x4000_0000 + 4 * m)));
        // Code smaller than a whole page, another file's code, none: nothing.
        let small = vec![map(0x4000_0000 + 0x3000, 0x4000_0000 + 2 * m + 0x1000, "r-xp", exe)];
        assert_eq!(range_to_move(&small, exe), None);
        assert_eq!(range_to_move(&aligned, "/usr/bin/other"), None);
        assert_eq!(range_to_move(&[], exe), None);
    }

    #[test]
    fn refused_with_another_thread() {
        // The test harness runs tests on threads of their own: this process has several.
        let t = std::thread::spawn(|| std::thread::sleep(std::time::Duration::from_millis(300)));
        assert!(text_in_huge_pages().is_err());
        t.join().unwrap();
    }
}
