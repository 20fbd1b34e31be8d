//! The run-time limits the operator moves (SPEC 8.2): `--limit NAME=VALUE`, `leash --limits`,
//! the gateway's `[limits]`. One row per limit: its name, default, floor, ceiling, unit and
//! what it bounds. The parser, `--limits`, `--help`, the usage errors and the docs table
//! (UTILITIES.md, generated from `leash --limits`) all read this table. A run holds its
//! values in a `Limits`, which every reader of a limit consults (`it.lim.n(L::String)`).
//! Reading and checking the settings that move them is `options.rs`.

use super::{LimitKind, GIB, INTERP_STACK_BYTES, KIB, MAX_SLEEP_SECS, MIB, TIB};

/// One movable run-time limit. Index into `LIMITS` and `Limits` with `L::X as usize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum L {
    String,
    List,
    Map,
    FrameStorage,
    CallArgs,
    CallDepth,
    Env,
    EnvBytes,
    Stdout,
    StdoutPrint,
    Stderr,
    FileWrites,
    FileWritesValue,
    Stdin,
    StdinLine,
    FileReads,
    FileReadsLine,
    Readers,
    Json,
    JsonDepth,
    JsonNodes,
    Dir,
    DirBytes,
    Databases,
    HttpRequests,
    HttpTimeouts,
    HttpBodies,
    SocketsOpen,
    SocketsConnects,
    SocketsAccepts,
    SocketsSent,
    SocketsReceived,
    SocketsLine,
    SocketsLookups,
    SocketsAddrs,
    Sleep,
}

/// The unit of a limit's value: byte limits take K, M, G suffixes (KiB, MiB, GiB).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Items,
    Entries,
    Calls,
    Keys,
    Levels,
    Values,
    Handles,
    Requests,
    Ms,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Bytes => "bytes",
            Unit::Items => "items",
            Unit::Entries => "entries",
            Unit::Calls => "calls",
            Unit::Keys => "keys",
            Unit::Levels => "levels",
            Unit::Values => "values",
            Unit::Handles => "handles",
            Unit::Requests => "count",
            Unit::Ms => "ms",
        }
    }
}

/// The largest value a limit may be given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ceiling {
    /// A fixed number.
    Fixed(u64),
    /// The run's `--max-memory` (or the gateway's `max_memory`): a frame or a call's
    /// arguments cannot usefully hold more than all storage together. (Until round 3 it
    /// was at most 32 MiB, the nesting a frame could hold being walked on the native
    /// stack; every walk over a value now keeps its own work stack, SPEC 8.)
    MaxMemory,
}

/// One row of the table.
#[derive(Clone, Copy, Debug)]
pub struct LimitDef {
    pub id: L,
    /// The `--limit` name: the limit kind of its diagnostics, or `KIND_SUB` for a second
    /// bound of the same kind (`json_depth`, `stdin_line`, `http_requests`).
    pub name: &'static str,
    /// The kind its diagnostics carry.
    pub kind: LimitKind,
    pub default: u64,
    pub floor: u64,
    pub ceiling: Ceiling,
    pub unit: Unit,
    pub what: &'static str,
}

// The native stack of the interpreter thread (`INTERP_STACK_BYTES`, 256 MiB) is shared
// out between the things that recurse, so that at every ceiling together it cannot
// overflow (measured, WORKLOG 2026-12-01):
// - Leash calls: a quarter (64 MiB) for `call_depth` calls of the deepest kind;
// - the rest for builtins (JSON at `json_depth`, sorting, regex) and the evaluator.
// Nested values take none: `str`, `==`, `in`, JSON and CSV writing, copies and dropping
// walk them with explicit work stacks on the heap (value.rs), so a value nested as deep
// as `--max-memory` allows needs no native stack in proportion to its depth.

/// The most native stack one Leash call uses: a call made from an expression nested 128
/// deep inside blocks nested 128 deep (the load-time limits) measured 119,700 bytes in
/// the quick build and 115,400 in the release build (a plain `return f(n - 1) + 1`
/// about 1,000 and 770).
pub const CALL_FRAME_WORST: usize = 128 * KIB;
/// `call_depth`'s ceiling: 512 such calls fill a quarter of the stack.
pub const MAX_CALL_DEPTH_CEILING: u64 = (INTERP_STACK_BYTES / 4 / CALL_FRAME_WORST) as u64;

/// `json_depth`'s ceiling: `json.parse` and `json.stringify` recurse once per level
/// (measured well under a KiB of stack a level), within the builtins' share.
pub const MAX_JSON_DEPTH_CEILING: u64 = 4096;

const fn row(
    id: L,
    name: &'static str,
    kind: LimitKind,
    default: u64,
    ceiling: u64,
    unit: Unit,
    what: &'static str,
) -> LimitDef {
    LimitDef { id, name, kind, default, floor: 1, ceiling: Ceiling::Fixed(ceiling), unit, what }
}

pub(super) const M: u64 = MIB as u64;
pub(super) const K: u64 = KIB as u64;
/// Items of the largest list or map, JSON nodes, directory entries: 16,777,216.
const MAX_ITEMS: u64 = 1 << 24;
/// The largest single string any limit lets a run build: 256 MiB.
const MAX_BYTES_ONE: u64 = 256 * M;
/// Ceiling of per-run byte budgets (stdin, streaming reads, outputs, sockets): 1 TiB.
const MAX_BYTES_RUN: u64 = TIB;
/// Ceiling of per-run counts (requests, connects, accepts, lookups).
const MAX_COUNT_RUN: u64 = 1_000_000;

use LimitKind as Kd;

/// Every run-time limit, in the order of `L`.
pub const LIMITS: &[LimitDef] = &[
    row(L::String, "string", Kd::String, M, MAX_BYTES_ONE, Unit::Bytes, "bytes of one string value"),
    row(L::List, "list", Kd::List, 16_384, MAX_ITEMS, Unit::Items, "items of one list"),
    row(L::Map, "map", Kd::Map, 16_384, MAX_ITEMS, Unit::Entries, "entries of one map"),
    LimitDef {
        id: L::FrameStorage,
        name: "frame_storage",
        kind: Kd::FrameStorage,
        default: 2 * M,
        floor: 1,
        ceiling: Ceiling::MaxMemory,
        unit: Unit::Bytes,
        what: "accounted storage of one frame (variables, values, arguments, for snapshots), and of any one value",
    },
    LimitDef {
        id: L::CallArgs,
        name: "call_args",
        kind: Kd::CallArgs,
        default: 2 * M,
        floor: 1,
        ceiling: Ceiling::MaxMemory,
        unit: Unit::Bytes,
        what: "accounted storage of the arguments of one call",
    },
    row(
        L::CallDepth,
        "call_depth",
        Kd::CallDepth,
        64,
        MAX_CALL_DEPTH_CEILING,
        Unit::Calls,
        "active calls, main included",
    ),
    row(L::Env, "env", Kd::Env, 4096, 1 << 20, Unit::Keys, "changed keys of the environment overlay"),
    row(
        L::EnvBytes,
        "env_bytes",
        Kd::Env,
        2 * M,
        MAX_BYTES_ONE,
        Unit::Bytes,
        "key and value bytes of the environment overlay",
    ),
    row(L::Stdout, "stdout", Kd::Stdout, 16 * M, MAX_BYTES_RUN, Unit::Bytes, "bytes written to stdout per run"),
    row(
        L::StdoutPrint,
        "stdout_print",
        Kd::Stdout,
        M,
        MAX_BYTES_ONE,
        Unit::Bytes,
        "bytes of one print or write call (newline excluded)",
    ),
    row(
        L::Stderr,
        "stderr",
        Kd::Stderr,
        16 * M,
        MAX_BYTES_RUN,
        Unit::Bytes,
        "bytes the script writes to stderr per run",
    ),
    row(
        L::FileWrites,
        "file_writes",
        Kd::FileWrites,
        16 * M,
        MAX_BYTES_RUN,
        Unit::Bytes,
        "bytes written by file.write, file.append and file.copy per run",
    ),
    row(
        L::FileWritesValue,
        "file_writes_value",
        Kd::FileWrites,
        M,
        MAX_BYTES_ONE,
        Unit::Bytes,
        "bytes of one value written to a file",
    ),
    row(
        L::Stdin,
        "stdin",
        Kd::Stdin,
        16 * M,
        MAX_BYTES_RUN,
        Unit::Bytes,
        "bytes consumed from stdin per run, line endings included",
    ),
    row(
        L::StdinLine,
        "stdin_line",
        Kd::Stdin,
        64 * K,
        MAX_BYTES_ONE,
        Unit::Bytes,
        "bytes of one stdin line, ending excluded",
    ),
    row(
        L::FileReads,
        "file_reads",
        Kd::FileReads,
        16 * M,
        MAX_BYTES_RUN,
        Unit::Bytes,
        "bytes consumed by all streaming readers together per run",
    ),
    row(
        L::FileReadsLine,
        "file_reads_line",
        Kd::FileReads,
        64 * K,
        MAX_BYTES_ONE,
        Unit::Bytes,
        "bytes of one line of a streaming reader, ending excluded",
    ),
    row(L::Readers, "readers", Kd::Readers, 32, 1024, Unit::Handles, "streaming file readers open at once"),
    row(L::Json, "json", Kd::Json, M, MAX_BYTES_ONE, Unit::Bytes, "bytes of JSON text parsed or written"),
    row(
        L::JsonDepth,
        "json_depth",
        Kd::Json,
        64,
        MAX_JSON_DEPTH_CEILING,
        Unit::Levels,
        "nesting of JSON arrays and objects ([] is depth 1)",
    ),
    row(L::JsonNodes, "json_nodes", Kd::Json, 16_384, MAX_ITEMS, Unit::Values, "values (nodes) of one JSON document"),
    row(L::Dir, "dir", Kd::Dir, 16_384, MAX_ITEMS, Unit::Entries, "entries of one directory listing"),
    row(L::DirBytes, "dir_bytes", Kd::Dir, M, MAX_BYTES_ONE, Unit::Bytes, "name bytes of one directory listing"),
    row(L::Databases, "databases", Kd::Databases, 16, 64, Unit::Handles, "SQLite databases open at once"),
    row(L::HttpRequests, "http_requests", Kd::Http, 64, MAX_COUNT_RUN, Unit::Requests, "HTTP requests per run"),
    row(
        L::HttpTimeouts,
        "http_timeouts",
        Kd::Http,
        60_000,
        30 * 86_400 * 1000,
        Unit::Ms,
        "HTTP time waited over the run (each request reserves its timeout_ms; what it did not use is returned)",
    ),
    row(
        L::HttpBodies,
        "http_bodies",
        Kd::Http,
        16 * M,
        MAX_BYTES_RUN,
        Unit::Bytes,
        "HTTP request and response bodies together per run",
    ),
    row(L::SocketsOpen, "sockets_open", Kd::Sockets, 16, 1024, Unit::Handles, "sockets and listeners open at once"),
    row(
        L::SocketsConnects,
        "sockets_connects",
        Kd::Sockets,
        64,
        MAX_COUNT_RUN,
        Unit::Requests,
        "net.connect calls per run (failed ones too)",
    ),
    row(
        L::SocketsAccepts,
        "sockets_accepts",
        Kd::Sockets,
        64,
        MAX_COUNT_RUN,
        Unit::Requests,
        "connections accepted per run",
    ),
    row(
        L::SocketsSent,
        "sockets_sent",
        Kd::Sockets,
        16 * M,
        MAX_BYTES_RUN,
        Unit::Bytes,
        "bytes sent on sockets per run",
    ),
    row(
        L::SocketsReceived,
        "sockets_received",
        Kd::Sockets,
        16 * M,
        MAX_BYTES_RUN,
        Unit::Bytes,
        "bytes received on sockets per run, line endings included",
    ),
    row(
        L::SocketsLine,
        "sockets_line",
        Kd::Sockets,
        64 * K,
        MAX_BYTES_ONE,
        Unit::Bytes,
        "bytes of one net.read_line line, ending excluded",
    ),
    row(
        L::SocketsLookups,
        "sockets_lookups",
        Kd::Sockets,
        256,
        MAX_COUNT_RUN,
        Unit::Requests,
        "name lookups per run (net.resolve, net.connect to a name)",
    ),
    row(L::SocketsAddrs, "sockets_addrs", Kd::Sockets, 8, 64, Unit::Requests, "addresses one net.connect tries"),
    row(
        L::Sleep,
        "sleep",
        Kd::Sleep,
        (MAX_SLEEP_SECS * 1000.0) as u64,
        30 * 86_400 * 1000,
        Unit::Ms,
        "time all sleep() calls of a run may wait in total",
    ),
];

/// Number of movable limits.
pub const N_LIMITS: usize = L::Sleep as usize + 1;

impl LimitDef {
    /// The ceiling under `--max-memory` `max_memory`.
    pub fn ceiling_for(&self, max_memory: u64) -> u64 {
        match self.ceiling {
            Ceiling::Fixed(n) => n,
            Ceiling::MaxMemory => max_memory,
        }
    }

    /// The ceiling as `leash --limits` prints it.
    pub fn ceiling_text(&self) -> String {
        match self.ceiling {
            Ceiling::Fixed(n) => show(n, self.unit),
            Ceiling::MaxMemory => "--max-memory".to_string(),
        }
    }
}

/// A value as the docs write it: bytes with the largest exact suffix (`64K`, `16M`).
pub fn show(n: u64, unit: Unit) -> String {
    if unit == Unit::Bytes {
        for (suffix, size) in [("T", TIB), ("G", GIB), ("M", M), ("K", K)] {
            if n >= size && n.is_multiple_of(size) {
                return format!("{}{suffix}", n / size);
            }
        }
    }
    n.to_string()
}

/// The row of `name`.
pub fn find(name: &str) -> Option<&'static LimitDef> {
    LIMITS.iter().find(|d| d.name == name)
}

/// The values a run's limits have: the defaults, moved by `--limit` or `[limits]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    v: [u64; N_LIMITS],
}

impl Default for Limits {
    fn default() -> Self {
        let mut v = [0; N_LIMITS];
        for d in LIMITS {
            v[d.id as usize] = d.default;
        }
        Limits { v }
    }
}

impl Limits {
    /// The value as a byte or item count.
    #[inline(always)]
    pub fn n(&self, l: L) -> usize {
        self.v[l as usize].min(usize::MAX as u64) as usize
    }

    /// The value as it was given.
    #[inline(always)]
    pub fn get(&self, l: L) -> u64 {
        self.v[l as usize]
    }

    pub fn set(&mut self, l: L, value: u64) {
        self.v[l as usize] = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::DEFAULT_MAX_MEMORY;

    #[test]
    fn the_table_is_in_the_order_of_l_and_names_are_unique() {
        assert_eq!(LIMITS.len(), N_LIMITS);
        for (i, d) in LIMITS.iter().enumerate() {
            assert_eq!(d.id as usize, i, "{}", d.name);
            assert!(d.floor == 1 && d.default >= d.floor, "{}", d.name);
            assert!(d.default <= d.ceiling_for(DEFAULT_MAX_MEMORY), "{}", d.name);
            assert!(d.name == d.kind.name() || d.name.starts_with(&format!("{}_", d.kind.name())), "{}", d.name);
            assert_eq!(LIMITS.iter().filter(|e| e.name == d.name).count(), 1, "{}", d.name);
        }
        assert_eq!(MAX_CALL_DEPTH_CEILING, 512);
    }
}
