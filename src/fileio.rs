//! File reads within a bound, and the words of an I/O error: what the loader (`source`),
//! the builtins, the gate, the report, the tools and the commands share. It imports
//! nothing of the crate, so every module may use it.

use std::io::Read;
use std::path::Path;

/// Open a regular file for reading without blocking (a FIFO or device is refused at
/// once, never waited on); the descriptor is checked with fstat before any byte moves.
pub fn open_regular(path: &Path) -> std::io::Result<std::fs::File> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = rustix::fs::open(path, flags, Mode::empty())
        .map_err(|e| std::io::Error::from_raw_os_error(e.raw_os_error()))?;
    let f = std::fs::File::from(fd);
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(if meta.is_dir() { "is a directory" } else { "not a regular file" }));
    }
    Ok(f)
}

/// Read at most `max` bytes (plus one, to see that there was more) of an open file.
pub fn read_open(f: std::fs::File, max: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    f.take(max as u64 + 1).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Read at most `max` bytes of a file (a device or pipe cannot make the loader read
/// more than the source budget allows). With `regular_only`, anything but a regular
/// file is refused without blocking (scripts, test files, includes: a FIFO would block
/// the open forever, even past `--max-time`); `leash - < <(...)` still runs a pipe.
pub fn read_bounded(path: &Path, max: usize, regular_only: bool) -> std::io::Result<Vec<u8>> {
    let f = if regular_only { open_regular(path)? } else { std::fs::File::open(path)? };
    if f.metadata()?.is_dir() {
        return Err(std::io::Error::other("is a directory"));
    }
    read_open(f, max)
}

/// Why an I/O operation failed, as users should read it (the OS's reason).
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    // Drop Rust's " (os error N)" suffix: the OS reason is what users need.
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}
