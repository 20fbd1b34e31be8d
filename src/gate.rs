//! The gate: capability scopes (SPEC 9). Paths granted by `--allow-read=`,
//! `--allow-files=` and `--allow-db=` are opened as directory descriptors when the run
//! starts; every path a script names is then opened *beneath* one of them by the kernel
//! (`openat2` with `RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS`, or, where the kernel lacks
//! `openat2`, a walk of one `O_NOFOLLOW` open per component), so there is no moment
//! between a check and an open for a symlink swap to slip into. A builtin never opens a
//! path itself: it asks the gate for a descriptor (`open`) or for the directory that
//! holds a name (`parent`), and works on that.
//!
//! Host scopes (`--allow-network=`, `--allow-listen=`) are checked against the address
//! a connection really goes to, after DNS (`host_allowed`, `listen_allowed`).
//!
//! The audit log (`--audit FILE`) is opened here, by the operator's flag; its device and
//! inode are remembered and any descriptor the gate hands out that is that file is
//! refused, whatever path led to it.

use std::ffi::OsString;
use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::caps::Cap;

/// One `--allow-X[=A,B]` flag as written: `all` when any occurrence had no list.
#[derive(Debug, Clone, Default)]
pub struct ScopeSpec {
    pub all: bool,
    pub items: Vec<String>,
}

impl ScopeSpec {
    pub fn add(&mut self, list: Option<&str>) -> Result<(), String> {
        match list {
            None => self.all = true,
            Some(l) => {
                for item in l.split(',') {
                    if item.is_empty() {
                        return Err("an empty item in a scope list".into());
                    }
                    if self.items.len() >= crate::limits::MAX_SCOPE_ITEMS {
                        return Err(format!("more than {} scope items", crate::limits::MAX_SCOPE_ITEMS));
                    }
                    self.items.push(item.to_string());
                }
            }
        }
        Ok(())
    }
    /// The list, or None when the flag grants everywhere.
    pub fn only(&self) -> Option<&[String]> {
        if self.all {
            None
        } else {
            Some(&self.items)
        }
    }
}

/// The scope specs of the command line (before anything is opened).
#[derive(Debug, Clone, Default)]
pub struct Specs {
    /// One spec per capability, indexed by `Cap` (the table in `crate::caps`).
    caps: [ScopeSpec; Cap::ALL.len()],
    pub audit: Option<PathBuf>,
}

impl Specs {
    pub fn cap(&self, c: Cap) -> &ScopeSpec {
        &self.caps[c as usize]
    }
    pub fn cap_mut(&mut self, c: Cap) -> &mut ScopeSpec {
        &mut self.caps[c as usize]
    }
}

// ----------------------------------------------------------------------
// Paths
// ----------------------------------------------------------------------

/// A granted directory (or file: `file` is its name inside `dir`).
#[derive(Debug)]
pub struct PathGrant {
    /// Absolute paths that lead to the grant: the canonical one, and the one written
    /// (made absolute) when it differs and has no `..`.
    names: Vec<PathBuf>,
    /// The canonical path, as messages show it.
    pub real: PathBuf,
    dir: OwnedFd,
    file: Option<OsString>,
}

#[derive(Debug)]
pub enum PathScope {
    All,
    Only(Vec<PathGrant>),
}

/// Which grant a path operation needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// Reading: `--allow-read` or `--allow-files` scopes.
    Read,
    /// Writing: `--allow-files` scopes.
    Write,
    /// A database file: `--allow-db` scopes.
    Db,
}

/// Where a path lies: anywhere (an unscoped flag), or beneath a grant.
#[derive(Debug)]
pub enum Loc<'g> {
    Free(PathBuf),
    Beneath { grant: &'g PathGrant, rel: PathBuf, shown: PathBuf, flag: &'static str },
}

impl Loc<'_> {
    /// The target as the audit log and messages show it.
    pub fn shown(&self) -> String {
        match self {
            Loc::Free(p) => p.to_string_lossy().into_owned(),
            Loc::Beneath { shown, .. } => shown.to_string_lossy().into_owned(),
        }
    }
}

/// A gate failure: a refusal (a `permission` error, its message complete but for the
/// builtin's name) or an I/O error from the open.
#[derive(Debug)]
pub enum GateErr {
    Refused(String),
    Io(std::io::Error),
}

impl From<std::io::Error> for GateErr {
    fn from(e: std::io::Error) -> Self {
        GateErr::Io(e)
    }
}

fn rx(e: Errno) -> std::io::Error {
    std::io::Error::from_raw_os_error(e.raw_os_error())
}

// ----------------------------------------------------------------------
// Hosts
// ----------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
enum HostPat {
    /// An exact name (lowercase, no trailing dot).
    Name(String),
    /// `*.example.com`: any name ending in `.example.com`.
    Suffix(String),
    /// An address or a CIDR range.
    Net(IpAddr, u8),
}

#[derive(Debug, Clone, PartialEq)]
pub struct HostGrant {
    pat: HostPat,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum HostScope {
    All,
    Only(Vec<HostGrant>),
}

fn in_net(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let ip = match (ip, net) {
        (IpAddr::V6(v6), IpAddr::V4(_)) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => return false,
        },
        _ => ip,
    };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            let m = if bits == 0 { 0 } else { u32::MAX << (32 - bits as u32) };
            u32::from(a) & m == u32::from(b) & m
        }
        (IpAddr::V6(a), IpAddr::V6(b)) => {
            let m = if bits == 0 { 0 } else { u128::MAX << (128 - bits as u32) };
            u128::from(a) & m == u128::from(b) & m
        }
        _ => false,
    }
}

/// Parse one host item: `NAME[:PORT]`, `*.NAME[:PORT]`, `IP[:PORT]`, `[IPV6]:PORT`,
/// `IPV6`, `CIDR` (`10.0.0.0/8`, `fd00::/8`; a CIDR takes no port).
pub fn parse_host(item: &str, flag: &str) -> Result<HostGrant, String> {
    let bad = |why: &str| format!("{flag}: \"{item}\" {why}");
    let port_of = |p: &str| p.parse::<u16>().ok().filter(|&n| n > 0).ok_or_else(|| bad("has a bad port"));
    if let Some((net, bits)) = item.split_once('/') {
        let ip: IpAddr = net.parse().map_err(|_| bad("is not a CIDR range"))?;
        let max = if ip.is_ipv4() { 32 } else { 128 };
        let bits: u8 = bits.parse().ok().filter(|&b| b <= max).ok_or_else(|| bad("has a bad prefix length"))?;
        return Ok(HostGrant { pat: HostPat::Net(ip, bits), port: None });
    }
    if let Some(rest) = item.strip_prefix('[') {
        let (ip, tail) = rest.split_once(']').ok_or_else(|| bad("is missing `]`"))?;
        let ip: std::net::Ipv6Addr = ip.parse().map_err(|_| bad("is not an IPv6 address"))?;
        let port = match tail {
            "" => None,
            t => Some(port_of(t.strip_prefix(':').ok_or_else(|| bad("has text after `]`"))?)?),
        };
        return Ok(HostGrant { pat: HostPat::Net(IpAddr::V6(ip), 128), port });
    }
    if let Ok(ip) = item.parse::<IpAddr>() {
        let bits = if ip.is_ipv4() { 32 } else { 128 };
        return Ok(HostGrant { pat: HostPat::Net(ip, bits), port: None });
    }
    let (host, port) = match item.rsplit_once(':') {
        Some((h, p)) => (h, Some(port_of(p)?)),
        None => (item, None),
    };
    if let Ok(ip) = host.parse::<std::net::Ipv4Addr>() {
        return Ok(HostGrant { pat: HostPat::Net(IpAddr::V4(ip), 32), port });
    }
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    let valid = |h: &str| {
        !h.is_empty()
            && h.len() <= 253
            && h.split('.')
                .all(|l| !l.is_empty() && l.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_'))
    };
    if let Some(suffix) = host.strip_prefix("*.") {
        if !valid(suffix) {
            return Err(bad("is not a host name"));
        }
        return Ok(HostGrant { pat: HostPat::Suffix(suffix.to_string()), port });
    }
    if !valid(&host) {
        return Err(bad("is not a host name, address or CIDR range"));
    }
    Ok(HostGrant { pat: HostPat::Name(host), port })
}

impl HostScope {
    fn build(spec: &ScopeSpec, flag: &str) -> Result<Option<HostScope>, String> {
        if !spec.all && spec.items.is_empty() {
            return Ok(None);
        }
        match spec.only() {
            None => Ok(Some(HostScope::All)),
            Some(items) => {
                Ok(Some(HostScope::Only(items.iter().map(|i| parse_host(i, flag)).collect::<Result<Vec<_>, _>>()?)))
            }
        }
    }

    /// May a connection to `addr`, reached through the name `name` (as the script wrote
    /// it, before resolution), go ahead? A name grant covers the addresses that name
    /// resolved to (the connection is to one of them); an address grant checks the
    /// address itself.
    pub fn allows(&self, name: &str, addr: SocketAddr) -> bool {
        let grants = match self {
            HostScope::All => return true,
            HostScope::Only(g) => g,
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let name = name.trim_start_matches('[').trim_end_matches(']');
        let literal = name.parse::<IpAddr>().is_ok();
        grants.iter().any(|g| {
            if g.port.is_some_and(|p| p != addr.port()) {
                return false;
            }
            match &g.pat {
                HostPat::Net(net, bits) => in_net(addr.ip(), *net, *bits),
                HostPat::Name(n) => !literal && n == name,
                HostPat::Suffix(s) => !literal && name.len() > s.len() + 1 && name.ends_with(&format!(".{s}")),
            }
        })
    }

    /// May the script look the name up at all (`net.resolve`, and before any connect)?
    /// A name outside every name grant may still be looked up when an address grant
    /// exists (its addresses are checked after resolution).
    pub fn may_resolve(&self, name: &str) -> bool {
        let grants = match self {
            HostScope::All => return true,
            HostScope::Only(g) => g,
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        grants.iter().any(|g| match &g.pat {
            HostPat::Net(..) => true,
            HostPat::Name(n) => *n == name,
            HostPat::Suffix(s) => name.ends_with(&format!(".{s}")),
        })
    }
}

/// A PostgreSQL server scope of `--allow-db=postgresql://HOST[:PORT][/DB]`: the host as
/// an `--allow-network` host item (a name, `*.suffix` or an address; the port 5432 when
/// none is written), and the database (any when none is written, or `*`).
#[derive(Debug, Clone, PartialEq)]
pub struct PgGrant {
    host: HostScope,
    db: Option<String>,
}

/// Does this `--allow-db` item (or `db.open` argument) name a PostgreSQL server?
pub fn is_pg_url(s: &[u8]) -> bool {
    let starts = |p: &[u8]| s.len() >= p.len() && s[..p.len()].eq_ignore_ascii_case(p);
    starts(b"postgresql://") || starts(b"postgres://")
}

/// Parse one `postgresql://HOST[:PORT][/DB]` scope item.
pub fn parse_pg_scope(item: &str, flag: &str) -> Result<PgGrant, String> {
    let bad = |why: &str| format!("{flag}: \"{item}\" {why}");
    let rest = item.split_once("://").map(|(_, r)| r).unwrap_or_default();
    let (hostport, db) = match rest.split_once('/') {
        Some((h, d)) => (h, d),
        None => (rest, ""),
    };
    if hostport.contains('@') {
        return Err(bad("names a user (a scope names a server and a database: postgresql://HOST[:PORT]/DB)"));
    }
    if db.contains('?') || db.contains('/') || hostport.contains('?') {
        return Err(bad("is not of the form postgresql://HOST[:PORT]/DB"));
    }
    if hostport.is_empty() {
        return Err(bad("names no host"));
    }
    let mut g = parse_host(hostport, flag)?;
    if g.port.is_none() {
        g.port = Some(5432);
    }
    let db = match db {
        "" | "*" => None,
        d => Some(d.to_string()),
    };
    Ok(PgGrant { host: HostScope::Only(vec![g]), db })
}

// ----------------------------------------------------------------------
// The gate
// ----------------------------------------------------------------------

/// Bytes of a call's target that its audit line quotes (PATH_MAX): the rest is cut, and
/// counted in the line's `target_cut` (issue 23: a script passing a 1 MiB path 100 times
/// wrote 600 MB of log).
pub const AUDIT_TARGET_MAX: usize = 4096;

/// Work charged for one audit line: its `write` (measured at about 1.5 us for a short
/// line to a file) and one unit a byte of the line (escaping and copying).
pub fn audit_work(line_bytes: usize) -> u64 {
    if line_bytes == 0 {
        0
    } else {
        AUDIT_LINE_WORK + line_bytes as u64
    }
}

/// The fixed part of [`audit_work`].
pub const AUDIT_LINE_WORK: u64 = 2_000;

/// One gated call, as its audit line says it.
#[derive(Debug)]
pub struct AuditRecord<'a> {
    pub step: u64,
    pub file: &'a str,
    pub line: Option<u32>,
    pub builtin: &'a str,
    pub capability: &'a str,
    pub target: Option<&'a str>,
    pub bytes: u64,
    pub result: &'a str,
}

#[derive(Debug)]
pub struct Audit {
    file: Mutex<std::fs::File>,
    dev: u64,
    ino: u64,
}

#[derive(Debug, Default)]
pub struct Gate {
    pub read: Option<PathScope>,
    pub files: Option<PathScope>,
    pub db: Option<PathScope>,
    pub network: Option<HostScope>,
    pub listen: Option<HostScope>,
    /// PostgreSQL servers granted by `--allow-db=postgresql://...` items (none: no server).
    pub pg: Vec<PgGrant>,
    pub audit: Option<Audit>,
    /// The working directory when the run started (relative paths are beneath it).
    cwd: PathBuf,
    /// Tests only: pretend the kernel has no `openat2` (`LEASH_TEST_NO_OPENAT2`).
    no_openat2: bool,
}

/// Lexically absolute components of `p` (`.` and repeated slashes dropped, `..` kept).
fn absolute(cwd: &Path, p: &Path) -> PathBuf {
    let full = if p.is_absolute() { p.to_path_buf() } else { cwd.join(p) };
    full.components().filter(|c| !matches!(c, Component::CurDir)).collect()
}

fn open_grant(item: &str, flag: &str, cwd: &Path) -> Result<PathGrant, String> {
    let p = Path::new(item);
    let bad = |why: String| format!("{flag}: \"{item}\": {why}");
    let real = std::fs::canonicalize(p).map_err(|e| bad(crate::fileio::io_reason(&e)));
    let written = absolute(cwd, p);
    let mut names = Vec::new();
    let (real, dir, file) = match real {
        Ok(real) if real.is_dir() => {
            let fd = rustix::fs::open(&real, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| bad(crate::fileio::io_reason(&rx(e))))?;
            (real, fd, None)
        }
        other => {
            // A file, existing or not (a database to be created): its directory must
            // exist, and the grant is that one name in it.
            if let Err(e) = &other {
                // A read grant names what exists; a files or db grant may name a file
                // still to be created (in a directory that exists).
                if flag == FLAG_READ {
                    return Err(e.clone());
                }
            }
            if let Ok(real) = &other {
                if !real.is_file() {
                    return Err(bad("is neither a directory nor a regular file".into()));
                }
            }
            let name = written.file_name().ok_or_else(|| bad("names no file".into()))?.to_os_string();
            let parent = written.parent().unwrap_or(Path::new("/"));
            let preal = std::fs::canonicalize(parent).map_err(|e| bad(crate::fileio::io_reason(&e)))?;
            if let Ok(real) = &other {
                // A symlink granted by name grants the name, not what it points to.
                if real.parent() != Some(&preal) || real.file_name() != Some(&name) {
                    return Err(bad("is a symbolic link (grant the file it points to)".into()));
                }
            }
            let fd = rustix::fs::open(&preal, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
                .map_err(|e| bad(crate::fileio::io_reason(&rx(e))))?;
            let real = preal.join(&name);
            if !written.starts_with(&preal) {
                names.push(written.clone());
            }
            (real, fd, Some(name))
        }
    };
    names.insert(0, real.clone());
    if file.is_none() && written != real && !written.components().any(|c| c == Component::ParentDir) {
        names.push(written);
    }
    Ok(PathGrant { names, real, dir, file })
}

impl PathScope {
    fn build(spec: &ScopeSpec, flag: &str, cwd: &Path) -> Result<Option<PathScope>, String> {
        if !spec.all && spec.items.is_empty() {
            return Ok(None);
        }
        match spec.only() {
            None => Ok(Some(PathScope::All)),
            Some(items) => Ok(Some(PathScope::Only(
                items.iter().map(|i| open_grant(i, flag, cwd)).collect::<Result<Vec<_>, _>>()?,
            ))),
        }
    }

    /// The canonical directories of the scope (None: everywhere), for includes.
    pub fn dirs(&self) -> Option<Vec<PathBuf>> {
        match self {
            PathScope::All => None,
            PathScope::Only(g) => Some(g.iter().map(|g| g.real.clone()).collect()),
        }
    }
}

const FLAG_READ: &str = Cap::Read.flag();
const FLAG_FILES: &str = Cap::Files.flag();
const FLAG_DB: &str = Cap::Db.flag();

impl Gate {
    /// Open every granted path and the audit log. A grant that cannot be opened is a
    /// usage error.
    pub fn new(specs: &Specs) -> Result<Gate, String> {
        let cwd = std::env::current_dir().map_err(|e| format!("cannot read the working directory: {e}"))?;
        // `--allow-db` items that name PostgreSQL servers are host scopes; the rest are
        // paths (SQLite files). A bare `--allow-db` grants every path, and no server.
        let mut db_paths = specs.cap(Cap::Db).clone();
        db_paths.items.retain(|i| !is_pg_url(i.as_bytes()));
        let pg = specs
            .cap(Cap::Db)
            .items
            .iter()
            .filter(|i| is_pg_url(i.as_bytes()))
            .map(|i| parse_pg_scope(i, FLAG_DB))
            .collect::<Result<Vec<_>, _>>()?;
        let mut gate = Gate {
            read: PathScope::build(specs.cap(Cap::Read), FLAG_READ, &cwd)?,
            files: PathScope::build(specs.cap(Cap::Files), FLAG_FILES, &cwd)?,
            db: PathScope::build(&db_paths, FLAG_DB, &cwd)?,
            pg,
            network: HostScope::build(specs.cap(Cap::Network), Cap::Network.flag())?,
            listen: HostScope::build(specs.cap(Cap::Listen), Cap::Listen.flag())?,
            audit: None,
            cwd,
            no_openat2: std::env::var_os("LEASH_TEST_NO_OPENAT2").is_some(),
        };
        if let Some(p) = &specs.audit {
            // Where the operator's name is (its directory, canonical), before anything is
            // created: a log in a directory the script may write is refused.
            let abs = absolute(&gate.cwd, p);
            if let (Some(dir), Some(name)) = (abs.parent(), abs.file_name()) {
                if let Ok(dir) = std::fs::canonicalize(dir) {
                    gate.audit_writable(p, &dir, name)?;
                }
            }
            let f =
                std::fs::OpenOptions::new().append(true).create(true).open(p).map_err(|e| {
                    format!("--audit: cannot open \"{}\": {}", p.display(), crate::fileio::io_reason(&e))
                })?;
            let st = rustix::fs::fstat(&f).map_err(|e| format!("--audit: {}", rx(e)))?;
            if !rustix::fs::FileType::from_raw_mode(st.st_mode).is_file() {
                return Err(format!("--audit: \"{}\" is not a regular file", p.display()));
            }
            // And where the file really is (the name may be a symbolic link).
            if let Ok(real) = std::fs::canonicalize(p) {
                if let (Some(dir), Some(name)) = (real.parent(), real.file_name()) {
                    gate.audit_writable(p, dir, name)?;
                }
            }
            gate.audit = Some(Audit { file: Mutex::new(f), dev: st.st_dev, ino: st.st_ino });
        }
        Ok(gate)
    }

    /// Refuse an audit file (`name` in the canonical directory `dir`) that a script could
    /// rename, remove or replace with a file of its own: one in the area of a write
    /// scope. A directory grant of `--allow-files` or `--allow-db` (or either flag
    /// unscoped) covers everything beneath it; a file grant covers that file, and for
    /// `--allow-db` also SQLite's companions of it (`NAME-journal`, `NAME-wal`,
    /// `NAME-shm`), which SQLite creates and removes itself.
    fn audit_writable(&self, audit: &Path, dir: &Path, name: &std::ffi::OsStr) -> Result<(), String> {
        for (scope, flag) in [(&self.files, FLAG_FILES), (&self.db, FLAG_DB)] {
            let Some(scope) = scope else { continue };
            let hit = match scope {
                PathScope::All => Some(format!("{flag} (unscoped)")),
                PathScope::Only(grants) => grants.iter().find_map(|g| {
                    let inside = match &g.file {
                        None => dir.starts_with(&g.real),
                        Some(f) => {
                            let companion = flag == FLAG_DB && {
                                let mut c = f.as_bytes().to_vec();
                                c.push(b'-');
                                name.as_bytes().starts_with(&c)
                            };
                            g.real.parent() == Some(dir) && (f.as_os_str() == name || companion)
                        }
                    };
                    inside.then(|| format!("{flag}=\"{}\"", g.real.display()))
                }),
            };
            if let Some(grant) = hit {
                return Err(format!(
                    "--audit \"{}\" is within {grant}: a script could rename it and write a log of its own \
                     in its place (put the audit file outside every scope the script may write)",
                    audit.display()
                ));
            }
        }
        Ok(())
    }

    /// The directories includes may load from because of read grants: None when a
    /// grant covers everywhere.
    pub fn include_dirs(&self) -> Option<Vec<PathBuf>> {
        let mut out = Vec::new();
        for s in [&self.read, &self.files].into_iter().flatten() {
            out.extend(s.dirs()?);
        }
        Some(out)
    }

    fn scopes(&self, need: Need) -> Vec<(&PathScope, &'static str)> {
        let mut v = Vec::new();
        match need {
            Need::Read => {
                if let Some(s) = &self.read {
                    v.push((s, FLAG_READ));
                }
                if let Some(s) = &self.files {
                    v.push((s, FLAG_FILES));
                }
            }
            Need::Write => {
                if let Some(s) = &self.files {
                    v.push((s, FLAG_FILES));
                }
            }
            Need::Db => {
                if let Some(s) = &self.db {
                    v.push((s, FLAG_DB));
                }
            }
        }
        v
    }

    fn flags_named(&self, need: Need) -> String {
        let names: Vec<&str> = self.scopes(need).iter().map(|s| s.1).collect();
        if names.is_empty() {
            match need {
                Need::Read => FLAG_READ.into(),
                Need::Write => FLAG_FILES.into(),
                Need::Db => FLAG_DB.into(),
            }
        } else {
            names.join(" / ")
        }
    }

    /// `p` made absolute lexically (as a refusal shows it).
    pub fn shown_abs(&self, p: &[u8]) -> String {
        absolute(&self.cwd, Path::new(std::ffi::OsStr::from_bytes(p))).to_string_lossy().into_owned()
    }

    /// Where the path `p` lies for `need`, or a refusal naming the flag and the target.
    pub fn locate(&self, need: Need, p: &[u8]) -> Result<Loc<'_>, GateErr> {
        let path = Path::new(std::ffi::OsStr::from_bytes(p));
        let scopes = self.scopes(need);
        if scopes.iter().any(|s| matches!(s.0, PathScope::All)) {
            return Ok(Loc::Free(path.to_path_buf()));
        }
        let abs = absolute(&self.cwd, path);
        for (scope, flag) in &scopes {
            let PathScope::Only(grants) = scope else { continue };
            for g in grants {
                for name in &g.names {
                    let Ok(rest) = abs.strip_prefix(name) else { continue };
                    let rel = match &g.file {
                        Some(f) if rest.as_os_str().is_empty() => PathBuf::from(f),
                        Some(_) => continue,
                        None if rest.as_os_str().is_empty() => PathBuf::from("."),
                        None => rest.to_path_buf(),
                    };
                    let shown = g.real.parent().filter(|_| g.file.is_some()).unwrap_or(&g.real).join(&rel);
                    let shown: PathBuf = shown.components().filter(|c| !matches!(c, Component::CurDir)).collect();
                    return Ok(Loc::Beneath { grant: g, rel, shown, flag });
                }
            }
        }
        Err(GateErr::Refused(format!("\"{}\" is outside the {} scope", abs.display(), self.flags_named(need))))
    }

    fn escape(loc: &Loc<'_>) -> GateErr {
        let (shown, flag) = match loc {
            Loc::Beneath { shown, flag, .. } => (shown.display().to_string(), *flag),
            Loc::Free(p) => (p.display().to_string(), ""),
        };
        GateErr::Refused(format!("\"{shown}\" leaves the {flag} scope (through a symbolic link or \"..\")"))
    }

    /// Open `loc` with `flags` (and `mode` when creating). Beneath a grant, the kernel
    /// resolves the path inside the granted directory and refuses any way out.
    pub fn open(&self, loc: &Loc<'_>, flags: OFlags, mode: Mode) -> Result<OwnedFd, GateErr> {
        let fd = match loc {
            Loc::Free(p) => rustix::fs::open(p, flags | OFlags::CLOEXEC, mode).map_err(rx)?,
            Loc::Beneath { grant, rel, .. } => {
                let mut res = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
                if grant.file.is_some() {
                    res |= ResolveFlags::NO_SYMLINKS;
                }
                self.open_beneath(grant.dir.as_fd(), rel, flags | OFlags::CLOEXEC, mode, res).map_err(|e| {
                    if e == Errno::XDEV || (e == Errno::LOOP && !flags.contains(OFlags::NOFOLLOW)) {
                        Self::escape(loc)
                    } else {
                        GateErr::Io(rx(e))
                    }
                })?
            }
        };
        self.not_audit(&fd, loc)?;
        Ok(fd)
    }

    fn open_beneath(
        &self,
        dir: BorrowedFd<'_>,
        rel: &Path,
        flags: OFlags,
        mode: Mode,
        res: ResolveFlags,
    ) -> Result<OwnedFd, Errno> {
        if !self.no_openat2 {
            for _ in 0..8 {
                match rustix::fs::openat2(dir, rel, flags, mode, res) {
                    Err(Errno::AGAIN) | Err(Errno::INTR) => continue,
                    Err(Errno::NOSYS) => break,
                    other => return other,
                }
            }
        }
        walk(dir, rel, flags, mode)
    }

    /// Refuse a descriptor that is the audit log.
    fn not_audit(&self, fd: &OwnedFd, loc: &Loc<'_>) -> Result<(), GateErr> {
        if let Some(a) = &self.audit {
            let st = rustix::fs::fstat(fd).map_err(rx)?;
            if st.st_dev == a.dev && st.st_ino == a.ino {
                return Err(GateErr::Refused(format!("\"{}\" is the audit log", loc.shown())));
            }
        }
        if crate::report::active() {
            let st = rustix::fs::fstat(fd).map_err(rx)?;
            if crate::report::refuses_file(st.st_dev, st.st_ino) {
                return Err(GateErr::Refused(format!("\"{}\" is the --report file", loc.shown())));
            }
        }
        Ok(())
    }

    /// The directory that holds `loc`'s last component, opened (beneath the grant), and
    /// that name: for creating, removing and renaming names.
    pub fn parent(&self, loc: &Loc<'_>) -> Result<(OwnedFd, OsString), GateErr> {
        let (dir_loc, name) = match loc {
            Loc::Free(p) => {
                let name = p.file_name().ok_or_else(|| GateErr::Io(rx(Errno::INVAL)))?;
                let parent = match p.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                (Loc::Free(parent), name.to_os_string())
            }
            Loc::Beneath { grant, rel, shown, flag } => {
                let last = rel.components().next_back();
                let Some(Component::Normal(name)) = last else {
                    return Err(GateErr::Refused(format!("\"{}\" is the {flag} scope itself", shown.display())));
                };
                let parent = match rel.parent() {
                    Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
                    _ => PathBuf::from("."),
                };
                (Loc::Beneath { grant, rel: parent, shown: shown.clone(), flag }, name.to_os_string())
            }
        };
        let fd = match &dir_loc {
            Loc::Free(p) => {
                rustix::fs::open(p, OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).map_err(rx)?
            }
            Loc::Beneath { grant, rel, .. } => {
                let res = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
                let fl = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
                self.open_beneath(grant.dir.as_fd(), rel, fl, Mode::empty(), res).map_err(|e| {
                    if e == Errno::XDEV || e == Errno::LOOP || e == Errno::NOTDIR && self.no_openat2 {
                        Self::escape(loc)
                    } else {
                        GateErr::Io(rx(e))
                    }
                })?
            }
        };
        if let Some(a) = &self.audit {
            if let Ok(st) = rustix::fs::statat(&fd, &name, AtFlags::SYMLINK_NOFOLLOW) {
                if st.st_dev == a.dev && st.st_ino == a.ino {
                    return Err(GateErr::Refused(format!("\"{}\" is the audit log", loc.shown())));
                }
            }
        }
        if crate::report::refuses_name(&fd, &name) {
            return Err(GateErr::Refused(format!("\"{}\" is the --report file", loc.shown())));
        }
        Ok((fd, name))
    }

    /// The host scope check for a connection (`--allow-network`).
    pub fn connect_allowed(&self, name: &str, addr: SocketAddr) -> bool {
        self.network.as_ref().is_none_or(|s| s.allows(name, addr))
    }

    pub fn resolve_allowed(&self, name: &str) -> bool {
        self.network.as_ref().is_none_or(|s| s.may_resolve(name))
    }

    /// The listen scope check (`--allow-listen`): the address as bound.
    pub fn listen_allowed(&self, host: &str, addr: SocketAddr) -> bool {
        self.listen.as_ref().is_none_or(|s| s.allows(host, addr))
    }

    /// May the script connect to the PostgreSQL server at `addr`, reached through `name`,
    /// for the database `db`?
    pub fn pg_allowed(&self, name: &str, addr: SocketAddr, db: &str) -> bool {
        self.pg.iter().any(|g| g.host.allows(name, addr) && g.db.as_deref().is_none_or(|d| d == db))
    }

    /// May the name of a PostgreSQL server be looked up at all?
    pub fn pg_may_resolve(&self, name: &str) -> bool {
        self.pg.iter().any(|g| g.host.may_resolve(name))
    }

    pub fn auditing(&self) -> bool {
        self.audit.is_some()
    }

    /// Append one gated call's line to the audit log, with one `write` (a failure to
    /// write it does not stop the script). The target is quoted up to
    /// [`AUDIT_TARGET_MAX`] bytes (cut at a character boundary), and `target_cut` then
    /// says how many bytes were left out. Returns the bytes of the line, for its work
    /// charge ([`audit_work`]); 0 when not auditing.
    pub fn audit_record(&self, r: &AuditRecord<'_>) -> usize {
        let Some(a) = &self.audit else { return 0 };
        let mut out = Vec::with_capacity(256);
        out.extend_from_slice(format!("{{\"step\":{},\"file\":", r.step).as_bytes());
        crate::diag::json_string(&mut out, r.file.as_bytes());
        let line = r.line.map_or_else(|| "null".to_string(), |l| l.to_string());
        out.extend_from_slice(
            format!(",\"line\":{line},\"builtin\":\"{}\",\"capability\":\"{}\",\"target\":", r.builtin, r.capability)
                .as_bytes(),
        );
        let mut cut = 0;
        match r.target {
            Some(t) => {
                let mut end = t.len().min(AUDIT_TARGET_MAX);
                while !t.is_char_boundary(end) {
                    end -= 1;
                }
                cut = t.len() - end;
                crate::diag::json_string(&mut out, &t.as_bytes()[..end]);
            }
            None => out.extend_from_slice(b"null"),
        }
        if cut > 0 {
            out.extend_from_slice(format!(",\"target_cut\":{cut}").as_bytes());
        }
        out.extend_from_slice(format!(",\"bytes\":{},\"result\":\"{}\"}}\n", r.bytes, r.result).as_bytes());
        let mut f = a.file.lock().unwrap_or_else(|p| p.into_inner());
        let _ = f.write_all(&out);
        out.len()
    }
}

/// The per-component walk for kernels without `openat2`: every component is opened
/// with `O_NOFOLLOW` relative to the one before, `..` goes back up the descriptors
/// already held and never above the grant. Any symlink is refused (ELOOP), even one
/// that would stay inside: the walk cannot follow one safely.
fn walk(dir: BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
    let comps: Vec<Component<'_>> = rel.components().filter(|c| !matches!(c, Component::CurDir)).collect();
    let mut stack: Vec<OwnedFd> = Vec::new();
    fn top_of<'a>(stack: &'a [OwnedFd], dir: BorrowedFd<'a>) -> BorrowedFd<'a> {
        match stack.last() {
            Some(f) => f.as_fd(),
            None => dir,
        }
    }
    let last_normal = comps.iter().rposition(|c| matches!(c, Component::Normal(_)));
    for (i, c) in comps.iter().enumerate() {
        match c {
            Component::ParentDir => {
                if stack.pop().is_none() {
                    return Err(Errno::XDEV);
                }
            }
            Component::Normal(n) if Some(i) == last_normal && i == comps.len() - 1 => {
                let here = top_of(&stack, dir);
                let follow = !flags.contains(OFlags::NOFOLLOW);
                let is_link = || {
                    rustix::fs::statat(here, *n, AtFlags::SYMLINK_NOFOLLOW).is_ok_and(|st| {
                        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink
                    })
                };
                return match rustix::fs::openat(here, *n, flags | OFlags::NOFOLLOW, mode) {
                    // The walk never follows a link: one the caller wanted followed is refused.
                    Err(Errno::LOOP) | Err(Errno::NOTDIR) if follow && is_link() => Err(Errno::XDEV),
                    Ok(fd) if follow && flags.contains(OFlags::PATH) => {
                        // O_PATH | O_NOFOLLOW opens a link itself: refuse it likewise.
                        let st = rustix::fs::fstat(&fd)?;
                        if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
                            Err(Errno::XDEV)
                        } else {
                            Ok(fd)
                        }
                    }
                    other => other,
                };
            }
            Component::Normal(n) => {
                let fd = rustix::fs::openat(
                    top_of(&stack, dir),
                    *n,
                    OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                );
                match fd {
                    Ok(fd) => stack.push(fd),
                    Err(Errno::NOTDIR) => {
                        let st = rustix::fs::statat(top_of(&stack, dir), *n, AtFlags::SYMLINK_NOFOLLOW)?;
                        if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
                            return Err(Errno::XDEV);
                        }
                        return Err(Errno::NOTDIR);
                    }
                    Err(e) => return Err(e),
                }
            }
            // An absolute rel never reaches here (rel is relative to the grant).
            _ => return Err(Errno::XDEV),
        }
    }
    // The path ends in `..` or names the grant itself: open the directory reached.
    rustix::fs::openat(top_of(&stack, dir), ".", flags, mode)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope(items: &[&str]) -> HostScope {
        HostScope::Only(items.iter().map(|i| parse_host(i, "--allow-network").unwrap()).collect())
    }

    #[test]
    fn hosts() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let s = scope(&["127.0.0.1:8080", "10.0.0.0/8", "*.example.com", "api.test:443", "[::1]:9000"]);
        assert!(s.allows("127.0.0.1", a("127.0.0.1:8080")));
        assert!(!s.allows("127.0.0.1", a("127.0.0.1:8081")));
        assert!(!s.allows("127.0.0.2", a("127.0.0.2:8080")));
        assert!(s.allows("x", a("10.2.3.4:1")));
        assert!(s.allows("a.example.com", a("1.2.3.4:80")));
        assert!(!s.allows("example.com", a("1.2.3.4:80")));
        assert!(s.allows("API.test.", a("1.2.3.4:443")));
        assert!(!s.allows("api.test", a("1.2.3.4:80")));
        assert!(s.allows("::1", a("[::1]:9000")));
        assert!(!s.allows("::1", a("[::1]:9001")));
        assert!(parse_host("10.0.0.0/33", "f").is_err());
        assert!(parse_host("a..b", "f").is_err());
        assert!(parse_host("host:0", "f").is_err());
        assert!(parse_host("::1", "f").is_ok());
    }

    #[test]
    fn pg_scopes() {
        let a = |s: &str| s.parse::<SocketAddr>().unwrap();
        let g = |items: &[&str]| Gate {
            pg: items.iter().map(|i| parse_pg_scope(i, "--allow-db").unwrap()).collect(),
            ..Gate::default()
        };
        let gate = g(&["postgresql://db.internal/app", "postgres://127.0.0.1:5433", "postgresql://[::1]:6000/*"]);
        assert!(gate.pg_allowed("db.internal", a("10.1.2.3:5432"), "app"));
        assert!(!gate.pg_allowed("db.internal", a("10.1.2.3:5433"), "app"));
        assert!(!gate.pg_allowed("db.internal", a("10.1.2.3:5432"), "other"));
        assert!(!gate.pg_allowed("other.internal", a("10.1.2.3:5432"), "app"));
        assert!(gate.pg_allowed("localhost", a("127.0.0.1:5433"), "anything"));
        assert!(!gate.pg_allowed("localhost", a("127.0.0.2:5433"), "anything"));
        assert!(gate.pg_allowed("::1", a("[::1]:6000"), "x"));
        assert!(gate.pg_may_resolve("db.internal") && gate.pg_may_resolve("anything"));
        assert!(!g(&["postgresql://db.internal/app"]).pg_may_resolve("evil.example"));
        assert!(!Gate::default().pg_allowed("127.0.0.1", a("127.0.0.1:5432"), "app"));
        for bad in
            ["postgresql://u@h/db", "postgresql:///db", "postgresql://h/db?sslmode=require", "postgresql://h:0/d"]
        {
            assert!(parse_pg_scope(bad, "--allow-db").is_err(), "{bad}");
        }
        assert!(is_pg_url(b"PostgreSQL://x") && !is_pg_url(b"data/app.db"));
    }
}
