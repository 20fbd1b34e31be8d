//! `--report FILE` (SPEC 1): at exit, whatever the exit, one JSON document
//! `{"status": N, "diagnostics": [...], "stats": {...}}` written to FILE, and nothing but
//! what the script wrote on stderr.
//!
//! - The path is checked before anything runs (`open`): its directory must exist and take
//!   a new file (a probe file is created and removed there), and the name must be absent
//!   or a regular file (never a directory, a device, a FIFO: the report replaces it). A
//!   path that fails is a usage error (exit 2) on stderr, before the run.
//! - While the report is on, every diagnostic and the stats line go to it instead of
//!   stderr (`app::emit_diag`, `app::emit_stats` call `take_diag`, `take_stats`).
//! - At exit (`finish`, called by `main` after the interpreter thread has ended, panics
//!   included), the document is written to a new temporary file beside FILE (created
//!   with O_EXCL, never through a symlink) and renamed over FILE: a reader sees the old
//!   report or the whole new one, never a part.
//! - The script cannot reach the report: the gate refuses the name FILE in its directory
//!   for creating, removing, renaming and linking (`refuses_name`), and refuses any
//!   descriptor that is the file found at FILE when the run began or the file at FILE now
//!   (`refuses_file`: one a create just made), as it does for the audit log. The temporary file exists only after the script has ended.

use std::ffi::{OsStr, OsString};
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

struct Report {
    /// The directory that holds the report (O_PATH).
    dir: OwnedFd,
    /// Device and inode of that directory.
    dir_id: (u64, u64),
    /// The report's name in it.
    name: OsString,
    /// The path as the operator wrote it (for messages).
    shown: PathBuf,
    /// Device and inode of the file at the name when the run began, if one was there.
    existing: Option<(u64, u64)>,
    /// Diagnostics, each rendered as `--error-format json` renders it.
    diags: Vec<String>,
    /// The stats object (`{"steps":...}`).
    stats: Option<String>,
}

static REPORT: Mutex<Option<Report>> = Mutex::new(None);

fn lock() -> std::sync::MutexGuard<'static, Option<Report>> {
    REPORT.lock().unwrap_or_else(|p| p.into_inner())
}

fn io(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

/// A temporary name beside the report: `.NAME.leash-PID-N.tmp`.
fn temp_name(name: &OsStr, n: u32) -> OsString {
    let mut t = OsString::from(".");
    t.push(name);
    t.push(format!(".leash-{}-{n}.tmp", std::process::id()));
    t
}

/// Create a new temporary file beside the report (never through a symlink, never an
/// existing name): the descriptor and its name.
fn create_temp(dir: &OwnedFd, name: &OsStr) -> std::io::Result<(OwnedFd, OsString)> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let salt =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.subsec_nanos()).unwrap_or(0);
    let mut last = Errno::EXIST;
    for n in 0..16u32 {
        let t = temp_name(name, salt.wrapping_add(n.wrapping_mul(7919)));
        match rustix::fs::openat(dir, &t, flags, Mode::from_raw_mode(0o644)) {
            Ok(fd) => return Ok((fd, t)),
            Err(Errno::EXIST) => last = Errno::EXIST,
            Err(e) => return Err(io(e)),
        }
    }
    Err(io(last))
}

/// Turn the report on for `path`, or say (as a usage error's message) why it cannot be
/// written.
pub fn open(path: &OsStr) -> Result<(), String> {
    let shown = PathBuf::from(path);
    let bad = |why: String| format!("--report: cannot write \"{}\": {why}", shown.display());
    if path.is_empty() {
        return Err("--report needs a FILE".into());
    }
    if path.as_bytes().ends_with(b"/") {
        return Err(bad("names a directory".into()));
    }
    let p = Path::new(path);
    let name = match p.file_name() {
        Some(n) if n != "." && n != ".." => n.to_os_string(),
        _ => return Err(bad("names no file".into())),
    };
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let dir = rustix::fs::open(parent, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .map_err(|e| bad(crate::fileio::io_reason(&io(e))))?;
    let st = rustix::fs::fstat(&dir).map_err(|e| bad(crate::fileio::io_reason(&io(e))))?;
    let dir_id = (st.st_dev, st.st_ino);
    let existing = match rustix::fs::statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(s) => match FileType::from_raw_mode(s.st_mode) {
            FileType::RegularFile => Some((s.st_dev, s.st_ino)),
            // A symlink at the name is replaced by the report (never written through).
            FileType::Symlink => None,
            FileType::Directory => return Err(bad("it is a directory".into())),
            _ => return Err(bad("it is not a regular file".into())),
        },
        Err(Errno::NOENT) => None,
        Err(e) => return Err(bad(crate::fileio::io_reason(&io(e)))),
    };
    // Prove now that a file can be made there: the report's own write at exit does the
    // same (a new file beside it, renamed).
    let (fd, tmp) = create_temp(&dir, &name).map_err(|e| bad(crate::fileio::io_reason(&e)))?;
    drop(fd);
    let _ = rustix::fs::unlinkat(&dir, &tmp, AtFlags::empty());
    *lock() = Some(Report { dir, dir_id, name, shown, existing, diags: Vec::new(), stats: None });
    Ok(())
}

/// Turn the report off (nothing is written at exit).
pub fn cancel() {
    lock().take();
}

/// Whether a report is being kept (diagnostics and stats go there, not to stderr).
pub fn active() -> bool {
    lock().is_some()
}

/// Whether the report holds the stats yet.
pub fn has_stats() -> bool {
    lock().as_ref().is_some_and(|r| r.stats.is_some())
}

/// Keep a diagnostic for the report: true when kept (a report is on).
pub fn take_diag(d: &crate::diag::Diagnostic) -> bool {
    let mut g = lock();
    match g.as_mut() {
        Some(r) => {
            r.diags.push(d.render_json());
            true
        }
        None => false,
    }
}

/// Keep the stats object (`{...}`) for the report: true when kept.
pub fn take_stats(stats: &str) -> bool {
    let mut g = lock();
    match g.as_mut() {
        Some(r) => {
            r.stats = Some(stats.to_string());
            true
        }
        None => false,
    }
}

/// Whether the gate must refuse the name `name` in the directory `dir` (the report's
/// own name: the script may not create, remove, rename or link it).
pub fn refuses_name(dir: &impl AsFd, name: &OsStr) -> bool {
    let g = lock();
    let Some(r) = g.as_ref() else { return false };
    if r.name != name {
        return false;
    }
    match rustix::fs::fstat(dir) {
        Ok(st) => (st.st_dev, st.st_ino) == r.dir_id,
        Err(_) => true,
    }
}

/// Whether the gate must refuse an opened file: the one at the report's path when the
/// run began, or the one there now (a file the open itself just created, by whatever
/// path or symlink led to it).
pub fn refuses_file(dev: u64, ino: u64) -> bool {
    let g = lock();
    let Some(r) = g.as_ref() else { return false };
    if r.existing == Some((dev, ino)) {
        return true;
    }
    match rustix::fs::statat(&r.dir, &r.name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => (st.st_dev, st.st_ino) == (dev, ino),
        Err(_) => false,
    }
}

/// Whether `p` names the report: the same name in the same directory, or the file that
/// was at the report's path when the run began. Used to refuse a report that would
/// replace the script, the audit log or the profile.
pub fn is_report(p: &Path) -> bool {
    let g = lock();
    let Some(r) = g.as_ref() else { return false };
    if let (Some(e), Ok(st)) = (r.existing, rustix::fs::stat(p)) {
        if (st.st_dev, st.st_ino) == e {
            return true;
        }
    }
    let Some(name) = p.file_name() else { return false };
    if name != r.name.as_os_str() {
        return false;
    }
    let parent = match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    rustix::fs::stat(parent).is_ok_and(|st| (st.st_dev, st.st_ino) == r.dir_id)
}

/// The document for `status`.
fn document(r: &Report, status: i32) -> Vec<u8> {
    let mut out = format!("{{\"status\":{status},\"diagnostics\":[").into_bytes();
    for (i, d) in r.diags.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(d.as_bytes());
    }
    out.extend_from_slice(b"],\"stats\":");
    out.extend_from_slice(r.stats.as_deref().unwrap_or("{}").as_bytes());
    out.extend_from_slice(b"}\n");
    out
}

/// Write the report (when one is on) for the exit `status`. A failure is said on stderr;
/// the status stays.
pub fn finish(status: i32) {
    let Some(r) = lock().take() else { return };
    let doc = document(&r, status);
    let write = || -> std::io::Result<()> {
        let (fd, tmp) = create_temp(&r.dir, &r.name)?;
        let mut f = std::fs::File::from(fd);
        let done = f
            .write_all(&doc)
            .and_then(|_| f.flush())
            .and_then(|_| rustix::fs::renameat(&r.dir, &tmp, &r.dir, &r.name).map_err(io));
        if done.is_err() {
            let _ = rustix::fs::unlinkat(&r.dir, &tmp, AtFlags::empty());
        }
        done
    };
    if let Err(e) = write() {
        // The report is lost: say so, with what it would have held.
        let mut err = std::io::stderr().lock();
        let _ = writeln!(
            err,
            "leash: io error [io]: cannot write the report \"{}\": {}",
            r.shown.display(),
            crate::fileio::io_reason(&e)
        );
        for d in &r.diags {
            let _ = writeln!(err, "{d}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_shape() {
        let dir = rustix::fs::open(".", OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).unwrap();
        let r = Report {
            dir,
            dir_id: (0, 0),
            name: "r.json".into(),
            shown: "r.json".into(),
            existing: None,
            diags: vec!["{\"error\":\"usage\"}".into()],
            stats: None,
        };
        assert_eq!(document(&r, 2), b"{\"status\":2,\"diagnostics\":[{\"error\":\"usage\"}],\"stats\":{}}\n");
    }
}
