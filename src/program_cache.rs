//! `leash-cgi --fastcgi`'s parsed-program cache (the warm process's "opcache").
//!
//! The warm process (`fastcgi_warm::zygote_main`) never runs a script, but it may read
//! and load one: before it forks the worker of a request, it looks for the script's
//! loaded [`Program`] here and, when it is missing or stale, reads, parses and resolves
//! it (the same `load_within` a worker calls, under the same limits), so that the forked
//! worker starts from the resolved program instead of reading and loading it again.
//!
//! - **Key.** The worker's command line and directory as the server sends them (the
//!   script's path, every flag: limits, grants, `--include-path`, `--max-memory`), so
//!   two requests share an entry only when their workers would load the same way.
//!   The worker checks again what it would load (the script's name and path and the
//!   include area it computes itself) and loads on its own when they differ.
//! - **Freshness.** The script and every file it includes are `stat`ed on every request
//!   (device, inode, size, modification and change times, to the nanosecond): any
//!   difference and the entry is dropped and the script loaded again. A file changed
//!   less than `program_cache_min_age_ms` before it was read is not cached (a change in
//!   the same timestamp tick, same size, could otherwise go unseen: PHP's
//!   `opcache.file_update_protection`); the worker reads it itself meanwhile.
//! - **Failures are never cached.** A script that does not load (syntax, include,
//!   encoding, a source limit, the load's heap or time bound) is loaded again by its
//!   worker, which reports it exactly as without the cache; the warm process only notes
//!   for a few seconds not to try again while the files are unchanged.
//! - **Hostile sizes.** The warm process loads only a script of at most
//!   [`WARM_MAX_SOURCE`] bytes, under the request's `--max-memory` and within
//!   [`WARM_LOAD_MAX`] (and the request's `--max-time`), and spends at most a tenth of its
//!   time loading (a bucket of [`WARM_LOAD_BUCKET`] refilled at 100 ms a second); past any
//!   of these the worker loads the script itself, under today's limits.
//! - **Bounds.** At most `program_cache` entries and `program_cache_bytes` of loaded
//!   programs (heap bytes held, as the allocator counts them); the least recently used
//!   entry goes first. A program bigger than the byte bound alone is not cached.
//! - **Charges.** The worker's `--max-memory` counts its own program as a load would (the
//!   budget's base is moved down by the entry's bytes); the rest of the cache is the
//!   warm process's, charged to no script: the worker's RLIMIT_DATA is raised by what
//!   the cache adds to the warm process's data segment ([`extra_data`]).
//! - **No run-time state.** Loading evaluates nothing (no builtin runs, no regex is
//!   compiled); the interned names are cleared after each load as after any load.

use std::cell::{Cell, RefCell};
use std::ffi::OsString;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};

use crate::program::Program;
use crate::source::IncludeArea;

/// The largest script (by its size on disk) the warm process loads itself.
pub const WARM_MAX_SOURCE: u64 = 256 * 1024;
/// The longest one load in the warm process may take (then the worker loads).
pub const WARM_LOAD_MAX: Duration = Duration::from_millis(100);
/// The warm process's loading time, a bucket refilled at 100 ms per second.
pub const WARM_LOAD_BUCKET: Duration = Duration::from_millis(500);
/// How long a script that did not load (or was too fresh) is left to its workers before
/// the warm process tries again with unchanged files.
const RETRY_AFTER: Duration = Duration::from_secs(5);

/// The cache's bounds (the configuration's `program_cache*` keys, sent with each job).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    pub entries: u64,
    pub bytes: u64,
    pub min_age_ms: u64,
}

/// What the warm process found for a job (the server logs it as `cache=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A loaded program, still fresh, goes to the worker.
    Hit,
    /// The script was loaded now and goes to the worker.
    New,
    /// The worker loads the script itself.
    None,
}

impl Outcome {
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Hit => "hit",
            Outcome::New => "new",
            Outcome::None => "none",
        }
    }
}

/// A file as `stat` saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Stamp {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

fn stamp(p: &Path) -> Option<Stamp> {
    let m = std::fs::metadata(p).ok()?;
    m.is_file().then(|| Stamp {
        dev: m.dev(),
        ino: m.ino(),
        size: m.size(),
        mtime: (m.mtime(), m.mtime_nsec()),
        ctime: (m.ctime(), m.ctime_nsec()),
    })
}

/// Seconds since the epoch of a stamp's later time.
fn changed_at(s: &Stamp) -> SystemTime {
    let t = s.mtime.max(s.ctime);
    if t.0 < 0 {
        return SystemTime::UNIX_EPOCH;
    }
    SystemTime::UNIX_EPOCH + Duration::new(t.0 as u64, t.1.clamp(0, 999_999_999) as u32)
}

/// A loaded program and what it was loaded as.
#[derive(Debug)]
pub struct Preloaded {
    pub prog: Rc<Program>,
    /// Heap bytes the loaded program holds (what a load in the worker leaves live).
    pub retained: usize,
    name: String,
    path: PathBuf,
    area: IncludeArea,
    /// This entry's number, never given twice in a warm process (1, 2, ...): a spare
    /// worker forked when the newest was N holds every entry numbered up to N that was
    /// still cached then (`fastcgi_warm`'s spares).
    serial: u64,
}

impl Preloaded {
    /// Is this what a worker would load as `name` from `path` with includes from `area`?
    pub fn matches(&self, name: &str, path: &Path, area: &IncludeArea) -> bool {
        self.name == name && self.path == path && self.area.dirs == area.dirs && self.area.everywhere == area.everywhere
    }
}

struct Entry {
    key: Vec<u8>,
    pre: Rc<Preloaded>,
    files: Vec<(PathBuf, Stamp)>,
    used: u64,
}

/// A script left to its workers: until `until`, while its main file is unchanged.
struct Skip {
    key: Vec<u8>,
    main: Option<Stamp>,
    until: Instant,
}

#[derive(Default)]
struct Cache {
    entries: Vec<Entry>,
    skips: Vec<Skip>,
    bytes: usize,
    clock: u64,
    /// The loading-time bucket and when it was last refilled.
    bucket: Option<(Duration, Instant)>,
    /// The warm process's data segment before the cache held anything.
    data_base: Option<u64>,
    /// The last entry number given (`Preloaded::serial`).
    serial: u64,
}

thread_local! {
    static CACHE: RefCell<Cache> = RefCell::new(Cache::default());
    /// The program the warm process chose for the worker it forks next (taken by the
    /// worker's `app::run`; cleared in the warm process after the fork).
    static CHOSEN: RefCell<Option<Rc<Preloaded>>> = const { RefCell::new(None) };
    /// What the cache adds to the warm process's data segment, in bytes.
    static EXTRA_DATA: Cell<u64> = const { Cell::new(0) };
}

/// The worker's side: the program the warm process loaded for it, if it is what the
/// worker would load (`name`, `path`, include `area`). Taken once.
pub fn take(name: &str, path: &Path, area: &IncludeArea) -> Option<Rc<Preloaded>> {
    let pre = CHOSEN.with(|c| c.borrow_mut().take())?;
    pre.matches(name, path, area).then_some(pre)
}

/// The number of the program chosen for the next worker (0: none).
pub fn chosen_serial() -> u64 {
    CHOSEN.with(|c| c.borrow().as_ref().map_or(0, |p| p.serial))
}

/// The last entry number given: a process forked now holds every entry still cached
/// with a number up to it.
pub fn newest_serial() -> u64 {
    CACHE.with(|c| c.borrow().serial)
}

/// A spare worker given its request: choose the cached program numbered `serial` from
/// the cache as it was when the spare was forked (the warm process has just found it
/// fresh). False when this process does not hold it (then the worker loads the script).
pub fn choose(serial: u64) -> bool {
    let pre = CACHE.with(|c| c.borrow().entries.iter().find(|e| e.pre.serial == serial).map(|e| e.pre.clone()));
    let found = pre.is_some();
    CHOSEN.with(|x| *x.borrow_mut() = pre);
    found
}

/// The warm process, after the fork: the choice was the child's.
pub fn clear_choice() {
    CHOSEN.with(|c| *c.borrow_mut() = None);
}

/// Bytes the cache adds to the warm process's data segment (for the worker's RLIMIT_DATA).
pub fn extra_data() -> u64 {
    EXTRA_DATA.with(Cell::get)
}

/// The data segment's size (`/proc/self/status`'s `VmData`, what RLIMIT_DATA bounds).
fn data_size() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let l = s.lines().find(|l| l.starts_with("VmData:"))?;
    let kb: u64 = l.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The warm process's side, before it forks the worker of a job: find or load the
/// program for `key` (the job's directory and command line), and choose it for the
/// worker. `run` gives the worker's directory and command line (read only on a miss).
pub fn prepare(key: &[u8], run: impl FnOnce() -> Option<(PathBuf, Vec<OsString>)>, b: Bounds) -> Outcome {
    clear_choice();
    CACHE.with(|c| {
        let mut c = c.borrow_mut();
        if c.data_base.is_none() {
            c.data_base = data_size();
        }
        let held = (c.entries.len(), c.bytes);
        // Bounds lowered (or the cache turned off) by a reloaded configuration.
        c.evict(b, 0);
        if b.entries == 0 || b.bytes == 0 {
            if (c.entries.len(), c.bytes) != held {
                c.settle();
            }
            return Outcome::None;
        }
        c.clock += 1;
        let now = c.clock;
        // A fresh entry: chosen.
        if let Some(i) = c.entries.iter().position(|e| e.key == key) {
            if c.entries[i].files.iter().all(|(p, s)| stamp(p).as_ref() == Some(s)) {
                c.entries[i].used = now;
                let pre = c.entries[i].pre.clone();
                CHOSEN.with(|x| *x.borrow_mut() = Some(pre));
                return Outcome::Hit;
            }
            let e = c.entries.remove(i);
            c.bytes -= e.pre.retained;
        }
        // In the worker's directory, as the worker parses its command line and opens its
        // grants (relative names); back to `/` after.
        let out = match run() {
            Some((cwd, args)) if std::env::set_current_dir(&cwd).is_ok() => {
                let out = c.load(key, &args, b);
                let _ = std::env::set_current_dir("/");
                out
            }
            _ => Outcome::None,
        };
        if (c.entries.len(), c.bytes) != held {
            c.settle();
        }
        out
    })
}

impl Cache {
    fn load(&mut self, key: &[u8], args: &[OsString], b: Bounds) -> Outcome {
        let started = Instant::now();
        // A script left to its workers for now (its main file unchanged).
        let now_main = script_of(args).as_deref().and_then(stamp);
        if let Some(i) = self.skips.iter().position(|s| s.key == key) {
            if started < self.skips[i].until && self.skips[i].main == now_main {
                return Outcome::None;
            }
            self.skips.remove(i);
        }
        let skip = |c: &mut Cache, until: Instant| {
            if c.skips.len() >= (b.entries as usize).max(16) {
                c.skips.remove(0);
            }
            c.skips.push(Skip { key: key.to_vec(), main: now_main.clone(), until });
            Outcome::None
        };
        let retry = started + RETRY_AFTER;
        let Ok((cfg, crate::cli::Command::Run { program: crate::cli::Program::File(path), .. })) =
            crate::cli::parse(args)
        else {
            return skip(self, retry);
        };
        if !cfg.cgi || !path.is_absolute() || cfg.profile.is_some() {
            return skip(self, retry);
        }
        let Some(main) = stamp(&path) else { return skip(self, retry) };
        if main.size > WARM_MAX_SOURCE {
            return skip(self, retry);
        }
        let min_age = Duration::from_millis(b.min_age_ms);
        let wall = SystemTime::now();
        let fresh = |s: &Stamp| wall.duration_since(changed_at(s)).map_or(true, |age| age < min_age);
        if fresh(&main) {
            // Tried again once it is old enough (or sooner, if it changes again).
            let age = wall.duration_since(changed_at(&main)).unwrap_or_default();
            let left = min_age.saturating_sub(age);
            return skip(self, started + left.min(RETRY_AFTER));
        }
        // The loading-time bucket.
        let (mut left, at) = self.bucket.unwrap_or((WARM_LOAD_BUCKET, started));
        left = (left + started.duration_since(at) / 10).min(WARM_LOAD_BUCKET);
        self.bucket = Some((left, started));
        if left.is_zero() {
            return skip(self, started + Duration::from_millis(100));
        }
        let mut limit = WARM_LOAD_MAX.min(left);
        if let Some(t) = cfg.max_time {
            limit = limit.min(Duration::from_secs_f64(t.clamp(0.0, 1e6)));
        }
        // The include area the worker will compute: its grants opened without the audit
        // log (nothing is created), in its directory.
        let mut specs = cfg.scopes.clone();
        specs.audit = None;
        let Ok(gate) = crate::gate::Gate::new(&specs) else { return skip(self, retry) };
        let area = IncludeArea::of(&cfg.include_path, gate.include_dirs());
        drop(gate);
        let name = path.to_string_lossy().into_owned();
        let before = crate::memory::live();
        let loaded = crate::fileio::read_bounded(&path, crate::limits::MAX_SOURCE_BYTES, true).ok().and_then(|text| {
            let budget =
                crate::memory::Budget { base: before, max: usize::try_from(cfg.max_memory).unwrap_or(usize::MAX) };
            // A load never panics (the house rule); if one did, the warm process goes on
            // and the worker loads the script (and reports what it finds).
            let load = || {
                crate::meter::with_load_deadline(Some(started + limit), || {
                    crate::load_within(&name, text, Some(&path), &area, budget).ok()
                })
            };
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(load)).unwrap_or_else(|_| {
                crate::ast::clear_names();
                None
            })
        });
        let spent = started.elapsed();
        if let Some((l, at)) = self.bucket {
            self.bucket = Some((l.saturating_sub(spent), at));
        }
        let Some(prog) = loaded else { return skip(self, retry) };
        let retained = crate::memory::live().saturating_sub(before);
        // Every file the program came from, as it is now; any of them changed since the
        // read, or too fresh to tell a later change by its stamp: not cached.
        let mut files = vec![(path.clone(), main.clone())];
        for f in prog.sources.files.iter().skip(1) {
            let p = Path::new(&f.name);
            if !p.is_absolute() {
                continue; // a stdlib module: part of the binary
            }
            match stamp(p) {
                Some(s) if !fresh(&s) => files.push((p.to_path_buf(), s)),
                _ => return skip(self, retry),
            }
        }
        if stamp(&path).as_ref() != Some(&main) || retained as u64 > b.bytes {
            return skip(self, retry);
        }
        self.serial += 1;
        let serial = self.serial;
        let pre = Rc::new(Preloaded { prog: Rc::new(prog), retained, name, path, area, serial });
        // Room for one more of `retained` bytes.
        self.evict(b, retained);
        self.bytes += retained;
        self.entries.push(Entry { key: key.to_vec(), pre: pre.clone(), files, used: self.clock });
        CHOSEN.with(|x| *x.borrow_mut() = Some(pre));
        Outcome::New
    }

    /// Drop the least recently used entries until one more of `more` bytes fits in `b`
    /// (with `more` 0: until the entries are within `b`).
    fn evict(&mut self, b: Bounds, more: usize) {
        let room = |c: &Cache| {
            let n = c.entries.len() as u64 + u64::from(more > 0);
            n <= b.entries && (c.bytes + more) as u64 <= b.bytes
        };
        while !self.entries.is_empty() && !room(self) {
            let i = self.entries.iter().enumerate().min_by_key(|(_, e)| e.used).map_or(0, |(i, _)| i);
            let e = self.entries.remove(i);
            self.bytes -= e.pre.retained;
        }
    }

    /// After a change: what the cache adds to the data segment now.
    fn settle(&mut self) {
        if let (Some(base), Some(now)) = (self.data_base, data_size()) {
            EXTRA_DATA.with(|x| x.set(now.saturating_sub(base)));
        }
    }
}

/// The script a worker's command line names (its last argument, after `--`).
fn script_of(args: &[OsString]) -> Option<PathBuf> {
    let i = args.iter().position(|a| a == "--")?;
    args.get(i + 1).map(PathBuf::from)
}
