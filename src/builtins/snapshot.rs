//! Snapshot files (`assert_snapshot`): `DIR/__snapshots__/STEM/NAME.snap`, where DIR is
//! the test file's directory.
//!
//! Safety rules (issue 10): the two folders on the way are opened one component at a time
//! without following symlinks (a planted `__snapshots__ -> /elsewhere` or `STEM -> ..` is
//! an `io` error), so every snapshot stays inside its `__snapshots__` folder; a snapshot
//! is read only when it is a regular file (opened O_NOFOLLOW and non-blocking, checked
//! with fstat: a symlink, FIFO or device is refused at once); it is written to a new
//! temporary file beside it and renamed into place, so a planted symlink or hard link is
//! replaced, never written through. The caller charges the bytes written to the
//! `file_writes` budget before `write` is called.

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

fn io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

/// A stem that names a folder inside `__snapshots__` (not itself, not its parent).
pub fn usable_stem(stem: &str) -> bool {
    !stem.is_empty() && stem != "." && stem != ".." && !stem.contains('/')
}

/// Open `name` in `dir` as a folder, never through a symlink; with `create`, make it
/// when missing. Ok(None): missing (and not created).
fn folder(dir: &OwnedFd, name: &str, create: bool) -> std::io::Result<Option<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    for _ in 0..2 {
        match rustix::fs::openat(dir, name, flags, Mode::empty()) {
            Ok(fd) => return Ok(Some(fd)),
            Err(Errno::NOENT) if create => match rustix::fs::mkdirat(dir, name, Mode::from_raw_mode(0o777)) {
                Ok(()) | Err(Errno::EXIST) => continue,
                Err(e) => return Err(io(e)),
            },
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP) | Err(Errno::NOTDIR) => {
                return Err(std::io::Error::other(format!("{name} is a symbolic link or not a folder")))
            }
            Err(e) => return Err(io(e)),
        }
    }
    Err(std::io::Error::other(format!("{name} keeps changing")))
}

/// The folder `DIR/__snapshots__/STEM`, opened (and with `create`, made).
pub fn open_folder(dir: &Path, stem: &str, create: bool) -> std::io::Result<Option<OwnedFd>> {
    let base = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let base = rustix::fs::open(base, flags, Mode::empty()).map_err(io)?;
    let Some(snaps) = folder(&base, "__snapshots__", create)? else { return Ok(None) };
    folder(&snaps, stem, create)
}

/// The stored snapshot `file` in `folder`, at most `max` bytes (plus one, to see that
/// there was more). Ok(None): there is none.
pub fn read(folder: &OwnedFd, file: &str, max: usize) -> std::io::Result<Option<Vec<u8>>> {
    let flags = OFlags::RDONLY | OFlags::NONBLOCK | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(folder, file, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(Errno::LOOP) => return Err(std::io::Error::other("it is a symbolic link")),
        Err(e) => return Err(io(e)),
    };
    let f = std::fs::File::from(fd);
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other(if meta.is_dir() { "is a directory" } else { "not a regular file" }));
    }
    let mut buf = Vec::new();
    f.take(max as u64 + 1).read_to_end(&mut buf)?;
    Ok(Some(buf))
}

/// Replace (or create) the snapshot `file` in `folder` with `bytes`.
pub fn write(folder: &OwnedFd, file: &str, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = format!(".{file}.tmp{}", std::process::id());
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mode = Mode::from_raw_mode(0o666);
    let fd = match rustix::fs::openat(folder, &tmp, flags, mode) {
        Err(Errno::EXIST) => {
            // Left by a run that died: remove the entry itself (never what it names).
            rustix::fs::unlinkat(folder, &tmp, AtFlags::empty()).map_err(io)?;
            rustix::fs::openat(folder, &tmp, flags, mode).map_err(io)?
        }
        r => r.map_err(io)?,
    };
    let mut f = std::fs::File::from(fd);
    let r = f.write_all(bytes).and_then(|_| f.flush());
    let r = r.and_then(|_| rustix::fs::renameat(folder, &tmp, folder, file).map_err(io));
    if r.is_err() {
        let _ = rustix::fs::unlinkat(folder, &tmp, AtFlags::empty());
    }
    r
}
