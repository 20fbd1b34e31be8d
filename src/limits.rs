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
//!
//! Its parts: this file holds the limit kinds of diagnostics and the fixed bounds (load
//! time, accounting, work costs, the gateway's, the network's); `limits/table.rs` the
//! run-time limits the operator moves (`L`, the `LIMITS` table, a run's `Limits`);
//! `limits/options.rs` how they are moved (`--limit NAME=VALUE`, `[limits]`) and listed
//! (`leash --limits`). Everything public is re-exported here.

mod options;
mod table;

pub use options::{limits_text, lookup, parse_spec, parse_value, Setting, LOAD_TIME_NAMES, OWN_FLAGS};
pub use table::{
    find, show, Ceiling, LimitDef, Limits, Unit, CALL_FRAME_WORST, L, LIMITS, MAX_CALL_DEPTH_CEILING,
    MAX_JSON_DEPTH_CEILING, N_LIMITS,
};

/// Kinds of limit, as they appear in diagnostics (`"kind": "steps"`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LimitKind {
    Steps,
    Work,
    Time,
    Sleep,
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
            Sleep => "sleep",
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

pub const GIB: u64 = 1024 * 1024 * 1024;
pub const TIB: u64 = 1024 * GIB;

// ---------------------------------------------------------------------------
// Command line
// ---------------------------------------------------------------------------

/// Default step budget: enough for ordinary scripts, small enough that a runaway
/// loop ends in well under a second.
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;
/// Largest `--max-steps` (10^12): work, memory and time bound a run now, so the step
/// budget is a count the operator sets, not a CPU bound (SPEC 1; it was 10^8).
pub const MAX_MAX_STEPS: u64 = 1_000_000_000_000;
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
/// Seconds `sleep` may wait in all over one run: a script that waits is still bounded
/// without `--max-time` (a CGI request or a forgotten loop of sleeps ends).
pub const MAX_SLEEP_SECS: f64 = 60.0; // the default of the `sleep` row (in ms there)
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
/// The shared header of a small map (one that never held more than 8 entries, kept in
/// one vector without a hash index; `MAP_SMALL` in src/value.rs): reference counts,
/// header, and the rounding of its entry vector.
pub const ACCT_SMALL_MAP_HEADER: usize = 80;
/// One entry of a small map besides its key bytes and its value's own storage: the
/// entry record (key pointer, value slot: 24 bytes) and a margin.
pub const ACCT_SMALL_MAP_ENTRY: usize = 32;
/// The shared header of a shaped map (built by `json.parse` or `csv.parse` with the key
/// sequence of other maps; `Shape` in src/value.rs): reference counts, header, and its
/// values' box (with the pointer to the shared shape) and its rounding.
pub const ACCT_SHAPED_MAP_HEADER: usize = 80;
/// One entry of a shaped map besides its key bytes and its value's own storage: the
/// value slot (16 bytes) and the key's pointer in the shared shape (8).
pub const ACCT_SHAPED_MAP_ENTRY: usize = 24;
/// One `for` loop's snapshot record.
pub const ACCT_SNAPSHOT: usize = 16;

// ---------------------------------------------------------------------------
// Run time: input and output budgets
// ---------------------------------------------------------------------------

// ---------------------------------------------------------------------------
// Run time: files (issue 3) and data (issue 4)
// ---------------------------------------------------------------------------

/// Chunk size for file copies: a copy never holds more than this in memory.
pub const COPY_CHUNK: usize = 64 * KIB;
/// Bytes of a regular expression pattern.
pub const MAX_REGEX_PATTERN: usize = 4 * KIB;
/// Compiled size of a regular expression program.
pub const MAX_REGEX_PROGRAM: usize = 2 * MIB;
/// Lazy-DFA cache of one compiled regular expression (each of its forward and reverse
/// DFAs): past it the DFA clears it, and after `REGEX_DFA_CLEARS` clears in one call it
/// gives up for the PikeVM (charged), so this bounds memory, not correctness.
pub const MAX_REGEX_DFA_CACHE: usize = MIB;

// ---------------------------------------------------------------------------
// Run time: SQLite (`db.*`, behind --allow-db)
// ---------------------------------------------------------------------------

/// SQLite virtual-machine instructions per step. SQLite's progress handler runs every
/// this many instructions and charges one step. 100 instructions are about 1 us of
/// SQLite work here, so the default budget (1,000,000 steps) stops a runaway query after
/// about a second; a smaller count would spend more time in the handler. Instruction
/// counts are deterministic for the same SQL and data, so step counts stay repeatable.
pub const DB_OPS_PER_STEP: i32 = 100;
/// Progress-handler calls between looks at the wall-clock deadline (every 1,600
/// instructions, some microseconds of work: the clock read is kept off the hot path).
pub const DB_TIME_CHECK_EVERY: u64 = 16;
/// SQLITE_LIMIT_LENGTH, the largest string, blob or table row SQLite will build, is the
/// run's `string` limit plus this. SQLite applies it to whole rows too, so this leaves
/// room for a row holding one string at the Leash limit and a few other columns; a value
/// longer than the string limit coming out of a query is the `string` limit when it is read.
pub const DB_LENGTH_SLACK: usize = 64 * KIB;
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

/// `n * rate / 256`, rounded up: a charge at a rate given in 1/256 units per item
/// (here, beside the rates, so that what values charge needs nothing of the meter).
#[inline(always)]
pub const fn scaled(n: u64, rate_x256: u32) -> u64 {
    (n.saturating_mul(rate_x256 as u64)).saturating_add(255) >> 8
}

/// `..` and interpolation, per byte produced (an allocation and a copy).
pub const WORK_CONCAT_BYTE_X256: u32 = 11;
/// Interpolation, per byte produced (written part by part into a growing buffer).
pub const WORK_INTERP_BYTE_X256: u32 = 192;
/// `..` and interpolation, per operation (the allocation).
pub const WORK_CONCAT_BASE: u64 = 20;
/// `==`, `!=`, `in` on lists and maps (and `index_of`, `assert_eq`): per value visited.
pub const WORK_EQ_ITEM_X256: u32 = 980;
/// ... and per string byte compared (memcmp).
pub const WORK_EQ_BYTE_X256: u32 = 7;
/// Hashing a map key (foldhash) and comparing it with the entry found, per byte past
/// `KEY_FREE_BYTES` (x256): a lookup of a 1 MB key is charged, a short one costs nothing
/// more than its operation.
pub const WORK_HASH_BYTE_X256: u32 = 4;
pub const KEY_FREE_BYTES: usize = 64;
/// `in`, `find`, `index_of` on strings: per byte of the subject and the needle searched
/// (memchr::memmem), set by its worst input shape (a needle that almost matches
/// everywhere: 1.5 to 2.5 ns a byte here), not by the typical memchr-fast search (issue 23).
pub const WORK_FIND_BYTE_X256: u32 = 384;
/// Case mapping of non-ASCII text (`upper`, `lower`: Unicode tables) and validating it
/// (`trim`): per byte on top of the ASCII rate (x256).
pub const WORK_CASE_UNICODE_BYTE_X256: u32 = 1792;
pub const WORK_TRIM_UNICODE_BYTE_X256: u32 = 150;
/// `str` of a list or map (also print, `..` and interpolation of one), JSON text written:
/// per byte of text.
pub const WORK_TEXT_BYTE_X256: u32 = 768;
/// A copy-on-write copy of a shared list, per item (cloning its values).
pub const WORK_COPY_ITEM_X256: u32 = 1150;
/// A copy-on-write copy of a shared map, per entry (cloning keys and values, rebuilding
/// the hash index).
pub const WORK_COPY_ENTRY_X256: u32 = 7 * 256;
/// A copy-on-write copy of a shared string, per byte.
pub const WORK_COPY_BYTE_X256: u32 = 32;
/// One call of a user function, from the source or as a function argument of a
/// higher-order builtin (`sort(xs, before)`, `map`, `re.replace(pat, s, fn)`, ...: SPEC
/// 10): entering and leaving the frame and copying the arguments, besides what the
/// function's own lines charge (a function with an empty body runs no line, so a line of
/// many calls to it is bounded by this charge alone).
pub const WORK_CALLBACK: u64 = 20;
/// Regular expressions: NFA states per extra unit of work per subject byte, in the
/// up-front charge of the lazy DFA's pass (about a nanosecond a byte whatever the
/// pattern, less with a literal prefilter; a big pattern's DFA states are bigger). What the
/// engine does past that pass (DFA states built, rescans, the PikeVM) is charged by the
/// constants below, step by step (src/builtins/re.rs).
pub const WORK_REGEX_STATES_PER_UNIT: u64 = 32;
/// Regular expressions: work per match (or piece) produced: each is a new string value
/// (180, then 120 until 2026-12-02: on an idle machine with the capture engine,
/// bench/work.py measured re.replace at 0.42 ns per unit with 120).
pub const WORK_REGEX_MATCH: u64 = 60;
/// fmt: work per byte of the format string (scanning it and copying its literal text:
/// bench/work.py row "fmt (text)": about 1.5 ns per format byte on an idle machine on
/// 2026-12-02, when 5 units a byte measured 0.27 ns per unit; 4.7 ns under load before).
pub const WORK_FMT_FORMAT_BYTE: u64 = 1;
/// `fmt`: per digit of an exact decimal expansion (`%.1000f` of 1e-300, `%d` of 1e300),
/// made with bignum arithmetic: about 50 ns a digit at worst (issue 23).
pub const WORK_FMT_EXACT_DIGIT: u64 = 50;
/// Regular expressions: the PikeVM or the backtracker on a match's span (the
/// capture-group search), per subject byte per pattern position, charged before it runs.
pub const WORK_REGEX_PIKE_X256: u32 = 2048;
/// Regular expressions: the resumable NFA simulation the lazy DFA falls back to (its
/// searches, rescans included), per position scanned per pattern position, charged as it
/// goes (about 2.5x faster than the PikeVM: it tracks where a match starts, not groups).
/// (768, 3 a position, measured 0.48 ns per unit on an idle machine: then 2.5, measured
/// 0.49 on 2026-12-05: then 1.75. Set by its worst shape, a long bounded repetition on
/// random text (`a[ab]{400}c`, bench/work.py row "re (PikeVM)", half the pattern's
/// positions live at every byte): 1.75 measured 2.3 to 3 ns per unit on the Intel
/// machine of 2026-12-05, so 3.5 since; the rescan row, fewer live positions, is its
/// typical shape.)
pub const WORK_REGEX_SIM_X256: u32 = 896;
/// Regular expressions: the set-up of one capture-group search (the PikeVM on one match's
/// span), on top of its bytes (150, then 60 until 2026-12-02; the capture engine of
/// src/builtins/re/capture.rs made it cheaper).
pub const WORK_REGEX_CAPTURES: u64 = 30;
/// Regular expressions: per step of the capture engine's quick search (a program
/// instruction run or a subject byte scanned; src/builtins/re/capture.rs), charged for
/// its whole step budget (the program once, each position twice) before it runs. Until
/// 2026-12-02 every capture search was charged the PikeVM's rate (8 per byte per
/// pattern position), about 30 times what the engine takes on a log line: logparse's
/// 100,000 lines needed 2.6 billion units, past the default `--max-work`, for 0.2 s of
/// CPU. The PikeVM's rate is now charged only when the quick search gives up.
pub const WORK_REGEX_QUICK_STEP: u64 = 2;
/// Regular expressions: the lazy DFA's states, per byte of DFA cache they fill (building
/// one costs about its size), charged after each search.
pub const WORK_REGEX_DFA_BYTE_X256: u32 = 1280;
/// Regular expressions: how many times one call's lazy DFA may clear its cache before it
/// gives up (deterministically) for the charged PikeVM. Each fill of the cache is some
/// milliseconds, so a DFA search never runs far past the deadline.
pub const REGEX_DFA_CLEARS: usize = 3;
/// Regular expressions: lazy-DFA bytes scanned (from the prefilter's first candidate:
/// the up-front charge pays for the skip to it), per byte, at the DFA's speed (about
/// 2 ns a byte), not the prefilter's. Until 2026-12-02 the up-front charge was taken to
/// pay for twice the subject at 0.05 a byte: `re.test("^(a|aa)*b", s)` over 1 MiB ran
/// 2.3 ms for 50,000 units, 47 ns a unit. An iteration rescans when a pattern's
/// higher-priority branch outlives each match (`[ab]*c|a` over `aaa..` scans to the
/// end for every `a`).
pub const WORK_REGEX_SCAN_BYTE_X256: u32 = 448;
/// Regular expressions: compiling a pattern (on a miss of the per-thread cache of compiled
/// patterns): a base (the engines' caches) ...
pub const WORK_REGEX_COMPILE: u64 = 50_000;
/// ... and per NFA state (Unicode classes are large: `\w{40}` is 12,664 states and
/// about 15 ms).
pub const WORK_REGEX_COMPILE_STATE: u64 = 700;
/// SQLite's virtual machine: work per progress-handler call (every `DB_OPS_PER_STEP`
/// instructions, about a microsecond of SQLite work here).
pub const WORK_DB_TICK: u64 = 1_000;
/// SQL functions (src/builtins/db_sqlfn.rs), charged by the bytes they read and write:
/// a call's base, then per byte (x256) for copies and case mapping, searches (memmem),
/// trimming (characters split and looked up), random bytes (the kernel's generator),
/// and per step of a GLOB or LIKE match.
pub const WORK_SQLFN_BASE: u64 = 50;
/// Bytes bound as `db.*` parameters and returned in rows (x256 per byte).
pub const WORK_DB_BYTE_X256: u32 = 64;
/// Bytes SQLite allocates or reallocates during a `db.*` call (x256 per byte; counted by
/// `leash_alloc::sqlite_allocated`): the copies SQLite makes inside one instruction of
/// its virtual machine (a recursive CTE's rows, index keys, sorter records) land there.
pub const WORK_DB_ALLOC_BYTE_X256: u32 = 48;
/// Bytes of the pages SQLite fetches from its page cache during a `db.*` call (x256 per
/// byte; `leash_alloc::sqlite_page_bytes`): a value bigger than a page is written, read
/// and freed through a chain of overflow pages, each one fetched.
pub const WORK_DB_PAGE_BYTE_X256: u32 = 24;
pub const WORK_SQLFN_BYTE_X256: u32 = 256;
pub const WORK_SQLFN_FIND_BYTE_X256: u32 = 256;
pub const WORK_SQLFN_TRIM_BYTE_X256: u32 = 1024;
pub const WORK_SQLFN_RANDOM_BYTE_X256: u32 = 512;
pub const WORK_SQLFN_MATCH_STEP: u64 = 3;
/// Per item sorted (a trim set's non-ASCII characters, a GLOB class's characters).
pub const WORK_SQLFN_SORT_ITEM: u64 = 64;
/// SQL functions charge (and look at the deadline) at least every this many bytes or steps.
pub const SQLFN_CHUNK: usize = 4096;
/// The longest LIKE or GLOB pattern, in bytes (SQLite's own default).
pub const SQLFN_PATTERN_MAX: usize = 50_000;

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
pub const CGI_DEFAULT_MAX_OUTPUT_BYTES: u64 = 16 * MIB as u64;
/// Largest `max_output_bytes`: the gateway holds a response whole before it sends it.
pub const CGI_MAX_MAX_OUTPUT_BYTES: u64 = 16 * MIB as u64;
/// Largest `max_body_bytes`: the default stdin budget of the worker.
pub const CGI_MAX_MAX_BODY_BYTES: u64 = 16 * MIB as u64;
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

/// Default deadline of `net.connect` (resolution, connects and TLS handshake together).
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 5_000;
/// Largest `net.connect` `timeout_ms` (as for http.*).
pub const MAX_CONNECT_TIMEOUT_MS: u64 = 30_000;
/// Largest `timeout_ms` of `net.accept`, `net.recv`, `net.read_line` (10 minutes):
/// a wait longer than that is better written as a loop.
pub const MAX_NET_WAIT_MS: u64 = 600_000;
/// How long `net.send` waits for the peer to take more data before it fails.
pub const NET_SEND_STALL_MS: u64 = 30_000;
/// Largest `max_bytes` of `net.recv` (one string value).
pub const MAX_NET_RECV: usize = MIB;
/// Bytes read from a socket per system call.
pub const NET_CHUNK: usize = 64 * KIB;
/// How long `net.resolve` waits for an answer.
pub const DNS_TIMEOUT_MS: u64 = 5_000;
/// Bytes of a host name given to net.* (a DNS name is at most 253 bytes).
pub const MAX_HOST_BYTES: usize = 255;
/// Bytes of the `--tls-ca-file` bundle read (the system bundle is about 220 KiB).
pub const MAX_CA_FILE_BYTES: usize = 4 * MIB;
