//! Every bound Leash enforces, each as a named constant with its reason.
//!
//! This is the one place to read or change a limit (in the spirit of Lua's `llimits.h`).
//! Load-time limits are checked by the lexer, parser, loader and validator before main
//! runs; run-time limits are checked by the evaluator's single step charge, its single
//! storage charge, and the budget counters in `budget.rs`.
//!
//! A limit is never catchable by `try`: exceeding one stops the run with exit status 4
//! (or, at load time, status 3), and the diagnostic names the limit's kind (the string
//! returned by [`LimitKind::name`]).

/// Kinds of limit, as they appear in diagnostics (`"kind": "steps"`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitKind {
    Steps,
    Work,
    Time,
    Memory,
    CallDepth,
    SourceBytes,
    SourceLines,
    LineBytes,
    Tokens,
    Functions,
    Params,
    Includes,
    Nesting,
    ExprBytes,
    ExprDepth,
    Identifier,
    Locals,
    String,
    List,
    Map,
    FrameStorage,
    CallArgs,
    Env,
    Stdout,
    Stderr,
    FileWrites,
    Stdin,
    FileReads,
    Readers,
    Json,
    Dir,
    Http,
    Sockets,
    Databases,
}

impl LimitKind {
    pub fn name(self) -> &'static str {
        use LimitKind::*;
        match self {
            Steps => "steps",
            Work => "work",
            Time => "time",
            Memory => "memory",
            CallDepth => "call_depth",
            SourceBytes => "source_bytes",
            SourceLines => "source_lines",
            LineBytes => "line_bytes",
            Tokens => "tokens",
            Functions => "functions",
            Params => "params",
            Includes => "includes",
            Nesting => "nesting",
            ExprBytes => "expr_bytes",
            ExprDepth => "expr_depth",
            Identifier => "identifier",
            Locals => "locals",
            String => "string",
            List => "list",
            Map => "map",
            FrameStorage => "frame_storage",
            CallArgs => "call_args",
            Env => "env",
            Stdout => "stdout",
            Stderr => "stderr",
            FileWrites => "file_writes",
            Stdin => "stdin",
            FileReads => "file_reads",
            Readers => "readers",
            Json => "json",
            Dir => "dir",
            Http => "http",
            Sockets => "sockets",
            Databases => "databases",
        }
    }
}

pub const KIB: usize = 1024;
pub const MIB: usize = 1024 * 1024;

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

/// Default step budget: enough for ordinary scripts, small enough that a runaway
/// loop ends in well under a second.
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;
/// Largest `--max-steps`: keeps any single run to a few seconds of CPU.
pub const MAX_MAX_STEPS: u64 = 100_000_000;
/// Default work budget (`--max-work`, SPEC 8.1): one unit is about a nanosecond of CPU
/// on the benchmark machine, so this is about two seconds of builtin and operator work.
pub const DEFAULT_MAX_WORK: u64 = 2_000_000_000;
/// Largest `--max-work` (10^13, a few hours of CPU): beyond it a budget means nothing.
pub const MAX_MAX_WORK: u64 = 10_000_000_000_000;
/// Default accounted-storage cap (`--max-memory`).
pub const DEFAULT_MAX_MEMORY: u64 = 256 * MIB as u64;
/// Smallest `--max-memory`: below this even small scripts cannot run.
pub const MIN_MAX_MEMORY: u64 = MIB as u64;
/// Largest `--max-memory`.
pub const MAX_MAX_MEMORY: u64 = 64 * 1024 * MIB as u64;
/// Largest `--max-time` in seconds (30 days): a deadline is a safety net, not a scheduler.
pub const MAX_MAX_TIME_SECS: f64 = 30.0 * 86_400.0;
/// Script arguments: count and total bytes, so `args()` is bounded like any value.
pub const MAX_SCRIPT_ARGS: usize = 1024;
pub const MAX_SCRIPT_ARG_BYTES: usize = MIB;

// ---------------------------------------------------------------------------
// Load time: source, tokens, structure
// ---------------------------------------------------------------------------

/// Total source bytes over all loads (main, includes, stdlib modules): bounds parse work.
pub const MAX_SOURCE_BYTES: usize = 4 * MIB;
/// Total source lines over all loads, blank and comment lines included.
pub const MAX_SOURCE_LINES: usize = 100_000;
/// Bytes of one line, LF excluded, CR included: bounds the lexer's per-line work.
pub const MAX_LINE_BYTES: usize = 65_536;
/// Tokens on one line (comments excluded; a string literal is one token).
pub const MAX_TOKENS_PER_LINE: usize = 1024;
/// User functions over all loads (main is not one; stdlib module functions count).
pub const MAX_FUNCTIONS: usize = 4096;
/// Parameters of one function.
pub const MAX_PARAMS: usize = 1024;
/// Include files active at once (the include chain's depth).
pub const MAX_ACTIVE_INCLUDES: usize = 32;
/// `--include-path` options on one command line: every include is checked against each
/// directory, and no real layout needs more than a handful.
pub const MAX_INCLUDE_PATHS: usize = 64;
/// Items in the scope lists of the `--allow-*` flags together, per flag (each is a
/// directory descriptor held open, or a host pattern tried per connection).
pub const MAX_SCOPE_ITEMS: usize = 64;
/// Block nesting (if/while/for/try bodies): bounds the parser's and evaluator's recursion.
pub const MAX_NESTING: usize = 128;
/// Bytes of one expression, measured as its tokens joined by single spaces.
pub const MAX_EXPR_BYTES: usize = 16_384;
/// Expression nesting (parentheses, brackets, braces, argument lists, interpolations,
/// unary operators): bounds the parser's and evaluator's recursion.
pub const MAX_EXPR_DEPTH: usize = 128;
/// Bytes of an identifier.
pub const MAX_IDENT_BYTES: usize = 128;
/// Distinct local names of one frame (parameters, assigned names, loop and catch names).
pub const MAX_LOCALS: usize = 4096;
/// Load errors reported together before the loader gives up.
pub const MAX_LOAD_ERRORS: usize = 20;

// ---------------------------------------------------------------------------
// Run time: values, frames, calls
// ---------------------------------------------------------------------------

/// Active calls, main included: bounds the evaluator's recursion.
pub const MAX_CALL_DEPTH: usize = 64;
/// Bytes of one string value.
pub const MAX_STRING_BYTES: usize = MIB;
/// Items of one list.
pub const MAX_LIST_ITEMS: usize = 16_384;
/// Entries of one map.
pub const MAX_MAP_ENTRIES: usize = 16_384;
/// Accounted storage of one frame; also the largest accounted size of any single value.
pub const MAX_FRAME_BYTES: usize = 2 * MIB;
/// Accounted size of the arguments of one call.
pub const MAX_CALL_ARG_BYTES: usize = 2 * MIB;

// Accounting constants (bytes). They are conservative: at least the heap the value
// really uses on a 64-bit build. A slot is one `Value` (16 bytes).
/// One value slot (a variable, a list item, a map value).
pub const ACCT_SLOT: usize = 16;
/// The shared header of a string (reference counts and vector header).
pub const ACCT_STRING_HEADER: usize = 40;
/// The shared header of a list.
pub const ACCT_LIST_HEADER: usize = 48;
/// The shared header of a map (reference counts, hash table header).
pub const ACCT_MAP_HEADER: usize = 96;
/// One map entry besides its key bytes and its value's own storage: the entry record
/// (hash, key header, value slot) and its share of the hash index.
pub const ACCT_MAP_ENTRY: usize = 64;
/// One `for` loop's snapshot record.
pub const ACCT_SNAPSHOT: usize = 16;

// ---------------------------------------------------------------------------
// Run time: input and output budgets
// ---------------------------------------------------------------------------

/// Bytes written to stdout over the whole run.
pub const MAX_STDOUT_BYTES: u64 = 16 * MIB as u64;
/// Bytes written by one `print` / `write` call (its joined text, newline excluded).
pub const MAX_PRINT_BYTES: usize = MIB;
/// Bytes written to stderr by the script over the whole run (diagnostics excluded).
pub const MAX_STDERR_BYTES: u64 = 16 * MIB as u64;
/// One line read from stdin, its ending excluded.
pub const MAX_STDIN_LINE: usize = 64 * KIB;
/// Bytes consumed from stdin over the whole run, line endings included.
pub const MAX_STDIN_BYTES: u64 = 16 * MIB as u64;
/// Changed keys of the environment overlay.
pub const MAX_ENV_KEYS: usize = 4096;
/// Key and value bytes of the environment overlay.
pub const MAX_ENV_BYTES: usize = 2 * MIB;

// ---------------------------------------------------------------------------
// Run time: files (issue 3) and data (issue 4)
// ---------------------------------------------------------------------------

/// Bytes written by file.write, file.append and file.copy over the run.
pub const MAX_FILE_WRITE_BYTES: u64 = 16 * MIB as u64;
/// Bytes of one value written to a file.
pub const MAX_FILE_WRITE_VALUE: usize = MIB;
/// One line of a streaming reader, its ending excluded.
pub const MAX_READ_LINE: usize = 64 * KIB;
/// Bytes consumed by all streaming readers together over the run.
pub const MAX_FILE_READ_BYTES: u64 = 16 * MIB as u64;
/// Open streaming readers at once.
pub const MAX_READERS: usize = 32;
/// Entries of one directory listing.
pub const MAX_DIR_ENTRIES: usize = 16_384;
/// Name bytes of one directory listing.
pub const MAX_DIR_NAME_BYTES: usize = MIB;
/// Chunk size for file copies: a copy never holds more than this in memory.
pub const COPY_CHUNK: usize = 64 * KIB;
/// JSON text in and out.
pub const MAX_JSON_BYTES: usize = MIB;
/// JSON nesting of arrays and objects (`[]` is depth 1).
pub const MAX_JSON_DEPTH: usize = 64;
/// JSON values (nodes) in one document.
pub const MAX_JSON_NODES: usize = 16_384;
/// Bytes of a regular expression pattern.
pub const MAX_REGEX_PATTERN: usize = 4 * KIB;
/// Compiled size of a regular expression program.
pub const MAX_REGEX_PROGRAM: usize = 2 * MIB;
/// Lazy-DFA cache of one compiled regular expression: past it the engine falls back to
/// a slower search that is still linear, so this bounds memory, not correctness.
pub const MAX_REGEX_DFA_CACHE: usize = MIB;

// ---------------------------------------------------------------------------
// Run time: SQLite (`db.*`, behind --allow-db)
// ---------------------------------------------------------------------------

/// Databases open at once (`db.open`): each connection holds a page cache (about 2 MiB
/// by default) and file descriptors, so the count is bounded like the file readers.
pub const MAX_DB_OPEN: usize = 16;
/// SQLite virtual-machine instructions per step. SQLite's progress handler runs every
/// this many instructions and charges one step. 100 instructions are about 1 us of
/// SQLite work here, so the default budget (1,000,000 steps) stops a runaway query after
/// about a second; a smaller count would spend more time in the handler. Instruction
/// counts are deterministic for the same SQL and data, so step counts stay repeatable.
pub const DB_OPS_PER_STEP: i32 = 100;
/// Progress-handler calls between looks at the wall-clock deadline (every 1,600
/// instructions, some microseconds of work: the clock read is kept off the hot path).
pub const DB_TIME_CHECK_EVERY: u64 = 16;
/// SQLITE_LIMIT_LENGTH: the largest string, blob or table row SQLite will build. SQLite
/// applies it to whole rows too, so it is the string limit plus 64 KiB, room for a row
/// holding one string at the Leash limit and a few other columns; a value of more than
/// 1 MiB coming out of a query is the `string` limit when it is read.
pub const DB_MAX_LENGTH: usize = MAX_STRING_BYTES + 64 * KIB;
/// SQLITE_LIMIT_SQL_LENGTH: bytes of one SQL text. Preparing SQL runs no virtual-machine
/// instruction (so charges no step); this bounds that unmetered parse work.
pub const DB_MAX_SQL_BYTES: usize = 256 * KIB;
/// SQLite's own heap (page caches, sorters, in-memory databases), process-wide, set
/// with `PRAGMA hard_heap_limit` when the first database opens (a script can only
/// lower it). It is apart from `--max-memory`, which accounts Leash values; an
/// allocation past it fails inside SQLite and stops the run with the `memory` limit.
pub const DB_HEAP_LIMIT: usize = 64 * MIB;
/// How long a call waits for another connection's lock before `database is locked`
/// when the run has no deadline, in milliseconds; with `--max-time` (always, under the
/// CGI gateway) it waits until the deadline.
pub const DB_BUSY_TIMEOUT_MS: u64 = 5_000;
/// Longest sleep between two tries for a lock, in milliseconds (the first sleeps are 1, 2,
/// 4 and 8 ms, each shortened by up to half at random). SQLite's own busy timeout sleeps
/// up to 100 ms, so that under many writers the lock is often free while every waiter
/// sleeps, and a waiter can lose it for seconds; short tries keep it busy.
pub const DB_BUSY_MAX_SLEEP_MS: u64 = 10;

// ---------------------------------------------------------------------------
// Work (SPEC 8.1): the cost constants of operators, copies and outside work.
// Builtins carry theirs in their tables' cost column. One unit is meant to be about one
// nanosecond of CPU on the benchmark machine; `bench/work.py` measures each rule and
// bench/README.md has the table. Rates ending in `_X256` are in 1/256 units per byte or
// item, so that rates below one unit stay exact integer arithmetic.
// ---------------------------------------------------------------------------

/// `..` and interpolation, per byte produced (an allocation and a copy).
pub const WORK_CONCAT_BYTE_X256: u32 = 16;
/// Interpolation, per byte produced (written part by part into a growing buffer).
pub const WORK_INTERP_BYTE_X256: u32 = 192;
/// `..` and interpolation, per operation (the allocation).
pub const WORK_CONCAT_BASE: u64 = 20;
/// `==`, `!=`, `in` on lists and maps (and `index_of`, `assert_eq`): per value visited.
pub const WORK_EQ_ITEM_X256: u32 = 1152;
/// ... and per string byte compared (memcmp).
pub const WORK_EQ_BYTE_X256: u32 = 7;
/// `in` on strings: per byte of the subject searched (memchr::memmem).
pub const WORK_FIND_BYTE_X256: u32 = 6;
/// `str` of a list or map (also print, `..` and interpolation of one), JSON text written:
/// per byte of text.
pub const WORK_TEXT_BYTE_X256: u32 = 768;
/// A copy-on-write copy of a shared list, per item (cloning its values).
pub const WORK_COPY_ITEM_X256: u32 = 1900;
/// A copy-on-write copy of a shared map, per entry (cloning keys and values, rebuilding
/// the hash index).
pub const WORK_COPY_ENTRY_X256: u32 = 8 * 256;
/// A copy-on-write copy of a shared string, per byte.
pub const WORK_COPY_BYTE_X256: u32 = 32;
/// Regular expressions: NFA states per extra unit of work per subject byte. The engine
/// runs a lazy DFA (about a nanosecond a byte whatever the pattern) but falls back to
/// simulating the NFA, whose cost per byte grows with the pattern's states, when the DFA's
/// cache thrashes; the charge grows with the states so that a large pattern over a long
/// subject is refused before it runs.
pub const WORK_REGEX_STATES_PER_UNIT: u64 = 32;
/// Regular expressions: work per match (or piece) produced: each is a new string value.
pub const WORK_REGEX_MATCH: u64 = 180;
/// SQLite's virtual machine: work per progress-handler call (every `DB_OPS_PER_STEP`
/// instructions, about a microsecond of SQLite work here).
pub const WORK_DB_TICK: u64 = 1_000;

/// How often (in work units, about a millisecond of CPU) the wall-clock deadline is
/// looked at by the work charge, so a builtin that charges as it goes (copies, JSON,
/// CSV, SQLite) meets the deadline within about a millisecond too.
pub const WORK_TIME_CHECK: u64 = 1 << 20;

/// Long builtins (JSON, CSV, sorting) look at the deadline every this many items, so a
/// call never runs far past `--max-time` (SPEC 8.1: at least every 4,096 items).
pub const LONG_OP_CHECK_ITEMS: usize = 4096;

// ---------------------------------------------------------------------------
// Run time: the live-bytes bound (`memory.rs`)
// ---------------------------------------------------------------------------

/// The documented promise: for any script and input, peak resident memory stays below
/// `--max-memory` plus this. It covers what the heap count leaves out: the mapped
/// program and its start-up heap (about 4 MiB resident), the stacks in use, malloc's own
/// slack, what a check can let through before it sees it (one value under construction,
/// at most a few MiB), and the resident-size backstop's slack and interval below.
pub const MEMORY_OVERHEAD: u64 = 64 * MIB as u64;
/// The resident-size backstop: a run stops (the `memory` limit) when the process's peak
/// resident size passes what it was when the run began plus `--max-memory` plus this.
/// Live bytes stay far below it in ordinary runs (malloc's slack and the code pages
/// touched on first use are a few MiB); only fragmentation, freed memory that malloc
/// keeps between blocks still held, comes near it.
pub const RSS_SLACK: usize = 32 * MIB;
/// Bytes allocated between looks at the resident size (one `getrusage` call, well under
/// a microsecond, per 8 MiB allocated): the resident size cannot grow by more than this
/// between two looks.
pub const RSS_CHECK_EVERY: usize = 8 * MIB;

/// How often (in steps) the wall-clock deadline is looked at. Small enough that a
/// deadline is met within well under a millisecond of running code.
pub const TIME_CHECK_INTERVAL: u64 = 1024;

// ---------------------------------------------------------------------------
// The CGI gateway, leash-cgi (its configuration keys' defaults and bounds, and the
// limits it sets on each worker process)
// ---------------------------------------------------------------------------

/// Bytes of the gateway's configuration file: a configuration is a few lines.
pub const CGI_MAX_CONFIG_BYTES: usize = MIB;
/// Default `max_time_ms`: a page that takes longer than this is broken, not slow.
pub const CGI_DEFAULT_MAX_TIME_MS: u64 = 10_000;
/// Largest `max_time_ms`: the same 30 days as `--max-time`.
pub const CGI_MAX_MAX_TIME_MS: u64 = 30 * 86_400 * 1000;
/// Default `max_output_bytes`: the interpreter's own stdout budget (so by default only
/// that budget applies); at most that too, since no worker can write more.
pub const CGI_DEFAULT_MAX_OUTPUT_BYTES: u64 = MAX_STDOUT_BYTES;
/// Default `max_body_bytes`: the most `cgi.form()` / `cgi.body()` can hold as one string.
pub const CGI_DEFAULT_MAX_BODY_BYTES: u64 = MIB as u64;
/// Default `max_file_size` (RLIMIT_FSIZE of the worker): above the 16 MiB a run may
/// write, leaving room for appending to existing files.
pub const CGI_DEFAULT_MAX_FILE_SIZE: u64 = 64 * MIB as u64;
/// Bounds of `max_file_size`.
pub const CGI_MIN_MAX_FILE_SIZE: u64 = KIB as u64;
pub const CGI_MAX_MAX_FILE_SIZE: u64 = 1 << 40;
/// After `max_time_ms` the worker stops itself (its `--max-time`); the gateway kills it
/// this much later if it has not (blocked where the deadline is not looked at).
pub const CGI_KILL_GRACE_MS: u64 = 500;
/// RLIMIT_DATA of a worker beyond its `max_memory` plus `MEMORY_OVERHEAD`: what the
/// data limit counts that the heap bound does not, namely the interpreter thread's stack
/// reservation (`INTERP_STACK_BYTES`, counted whole though little of it is used), other
/// threads' stacks and the start-up data (16 MiB; measured: 262 MiB of VmData for an
/// empty run), and SQLite's own heap (`DB_HEAP_LIMIT`). RLIMIT_DATA rather than
/// RLIMIT_AS: it leaves out the mapped binary and malloc's reserved but unused address
/// space (64 MiB per thread that allocates), so it follows the heap closely. The heap
/// bound (`--max-memory`, `memory.rs`) is the real bound; this is a backstop.
pub const CGI_DATA_BASE: u64 = (INTERP_STACK_BYTES + 16 * MIB + DB_HEAP_LIMIT) as u64;
/// Stack of the interpreter thread. Recursion is bounded by the load-time limits
/// (expression depth, nesting) and the call depth; this leaves a wide margin. Only the
/// pages used become resident.
pub const INTERP_STACK_BYTES: usize = 256 * MIB;
/// RLIMIT_NOFILE of a worker: 32 readers, 16 sockets, standard streams and the
/// runtime's own descriptors fit with room to spare.
pub const CGI_WORKER_NOFILE: u64 = 256;
/// Seconds of CPU a worker may use beyond its wall-clock budget (RLIMIT_CPU is whole
/// seconds; it only matters if the gateway itself is gone and cannot kill the worker).
pub const CGI_CPU_GRACE_SECS: u64 = 1;
/// Worker stderr (diagnostics, the script's `eprint`) copied to the server's error log
/// per request; the rest is dropped with a note.
pub const CGI_MAX_LOG_BYTES: usize = 64 * KIB;
/// The end of the worker's stderr kept to read its report (last diagnostic, stats).
pub const CGI_REPORT_TAIL_BYTES: usize = 8 * KIB;
/// The header section of a worker's response.
pub const CGI_MAX_HEADER_BYTES: usize = 64 * KIB;
/// Bytes of a request body the gateway reads: what it may pass to the worker (at most
/// `max_body_bytes`, itself at most 16 MiB) and what it reads and drops (a body the script
/// left unread, one over `max_body_bytes`, a chunked one), so that the server finishes
/// writing it and reads the response. Past this it stops reading and the server drops the
/// rest itself; reading 32 MiB from a pipe or a local socket takes some tens of ms.
pub const CGI_MAX_DRAIN_BYTES: u64 = 32 * MIB as u64;
/// After it stops reading a body (past `CGI_MAX_DRAIN_BYTES`, or at the deadline), how
/// long the gateway waits for the bytes already queued on a socket (at most its buffer,
/// some hundreds of KiB) to be read before it exits.
pub const CGI_DRAIN_CLOSE_MS: u64 = 200;

// ---------------------------------------------------------------------------
// Run time: network: http.* (limit kind `http`), net.* (kind `sockets`)
// ---------------------------------------------------------------------------

/// Bytes of a URL given to http.*: bounds what is parsed and sent as the request line.
pub const MAX_URL_BYTES: usize = 8192;
/// Default per-request timeout of http.* (`timeout_ms`), covering resolution, connect,
/// TLS, sending and the whole response.
pub const DEFAULT_HTTP_TIMEOUT_MS: u64 = 5_000;
/// Largest per-request `timeout_ms`.
pub const MAX_HTTP_TIMEOUT_MS: u64 = 30_000;
/// Largest (and default) response body (`max_body`): a body is one string value.
pub const MAX_HTTP_BODY: usize = MIB;
/// Response status line and headers together: a server cannot make us buffer more.
pub const MAX_HTTP_HEADER_BYTES: usize = 64 * KIB;
/// Request headers given in `opts.headers` (names and values together).
pub const MAX_HTTP_REQUEST_HEADER_BYTES: usize = 64 * KIB;
/// HTTP requests per run.
pub const MAX_HTTP_REQUESTS: u64 = 64;
/// Requested timeouts summed over the run; each request reserves its `timeout_ms`
/// before it starts, so a run spends at most this long waiting on HTTP.
pub const MAX_HTTP_TIMEOUT_TOTAL_MS: u64 = 60_000;
/// Request and response bodies together over the run.
pub const MAX_HTTP_BODY_BYTES: u64 = 16 * MIB as u64;

/// Sockets and listeners open at once: each holds a descriptor and kernel buffers.
pub const MAX_OPEN_SOCKETS: usize = 16;
/// `net.connect` calls per run (failed ones too: each one sends packets).
pub const MAX_CONNECTS: u64 = 64;
/// Connections accepted by `net.accept` per run.
pub const MAX_ACCEPTS: u64 = 64;
/// Bytes sent by `net.send` over the run (charged before they are sent).
pub const MAX_NET_SEND_BYTES: u64 = 16 * MIB as u64;
/// Bytes received by `net.recv` and `net.read_line` over the run, line endings included.
pub const MAX_NET_RECV_BYTES: u64 = 16 * MIB as u64;
/// Resolved addresses `net.connect` tries, in order, under its one deadline.
pub const MAX_CONNECT_ADDRS: usize = 8;
/// Default deadline of `net.connect` (resolution, connects and TLS handshake together).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Largest `net.connect` `timeout_ms` (as for http.*).
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 30_000;
/// Largest `timeout_ms` of `net.accept`, `net.recv`, `net.read_line` (10 minutes):
/// a wait longer than that is better written as a loop.
pub const MAX_NET_WAIT_MS: u64 = 600_000;
/// How long `net.send` waits for the peer to take more data before it fails.
pub const NET_SEND_STALL_MS: u64 = 30_000;
/// One line read by `net.read_line`, its ending excluded (as for stdin).
pub const MAX_NET_LINE: usize = 64 * KIB;
/// Largest `max_bytes` of `net.recv` (one string value).
pub const MAX_NET_RECV: usize = MIB;
/// Bytes read from a socket per system call.
pub const NET_CHUNK: usize = 64 * KIB;
/// Name lookups per run (`net.resolve`, and `net.connect` to a name): bounds the DNS
/// traffic a script can cause.
pub const MAX_DNS_LOOKUPS: u64 = 256;
/// How long `net.resolve` waits for an answer.
pub const DNS_TIMEOUT_MS: u64 = 5_000;
/// Bytes of a host name given to net.* (a DNS name is at most 253 bytes).
pub const MAX_HOST_BYTES: usize = 255;
/// Bytes of the `--tls-ca-file` bundle read (the system bundle is about 220 KiB).
pub const MAX_CA_FILE_BYTES: usize = 4 * MIB;
