//! The host: everything a builtin may touch, and nothing of the evaluator.
//!
//! A builtin is `fn(&mut Host, &mut [Value])` (a place builtin also gets its place): it
//! reaches the run's meter (steps, work, the deadline: the one clock), the heap bound and
//! the value limits (storage), the capability grant and the audit log (the gate), the
//! output budgets, and each area's state (files, sockets, databases, the random
//! generator, the environment overlay, stdin). It cannot name the evaluator's stack,
//! frames, globals or code: `Interp` owns one `Host` (its `host` field) and lends it to
//! each builtin call. The builtins that call user functions (`map`, `sort` with a
//! function, `re.replace` with one, ...) take a [`Callbacks`] instead: the host, and
//! one way back into the evaluator, the ordinary call.
//!
//! A test (`builtins::tests::no_builtin_names_the_evaluator`) checks that no file under
//! `src/builtins/` names `Interp` or imports `crate::interp`.

use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::ast::Pos;
use crate::budget::{Budgets, Output};
use crate::caps::Caps;
use crate::diag::ErrKind;
use crate::error::{Fail, NO_POS, R};
use crate::limits::*;
use crate::memory::HeapMeter;
use crate::meter::Meter;
use crate::value::*;

use super::FnRef;

/// What the operator granted and set for this run.
#[derive(Debug, Clone)]
pub struct RunConfig {
    /// The capability scopes and the audit log (`gate.rs`).
    pub gate: std::sync::Arc<crate::gate::Gate>,
    pub max_steps: u64,
    pub max_work: u64,
    pub deadline: Option<Instant>,
    pub max_memory: u64,
    /// The run-time limits (`--limit`, the gateway's `[limits]`).
    pub limits: Limits,
    pub seed: Option<u32>,
    pub caps: Caps,
    pub args: Vec<Vec<u8>>,
    pub cgi: bool,
    pub snapshots: Option<SnapshotDir>,
    /// `--tls-ca-file` and `--dns-server`.
    pub net: crate::builtins::netcfg::NetSettings,
    /// The heap budget the program was loaded under (`memory::Budget`), so that the run
    /// shares it; None starts one when the run starts (the program then not counted).
    pub heap: Option<crate::memory::Budget>,
    /// `--profile`: feed a profiler (returned in the run's outcome).
    pub profile: bool,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            gate: Default::default(),
            max_steps: DEFAULT_MAX_STEPS,
            max_work: DEFAULT_MAX_WORK,
            deadline: None,
            max_memory: DEFAULT_MAX_MEMORY,
            limits: Limits::default(),
            seed: None,
            caps: Caps::default(),
            args: vec![],
            cgi: false,
            snapshots: None,
            net: Default::default(),
            heap: None,
            profile: false,
        }
    }
}

/// `assert_snapshot` files live in `DIR/__snapshots__/STEM/NAME.snap`.
#[derive(Debug, Clone)]
pub struct SnapshotDir {
    pub dir: std::path::PathBuf,
    pub stem: String,
    pub update: bool,
}

/// What a builtin may touch (see the module's note). Owned by the evaluator, one per run.
pub struct Host {
    /// Steps, work and the deadline: the one place anything is charged (meter.rs).
    pub(crate) meter: Meter,
    /// The live-bytes bound (`memory.rs`).
    pub(crate) heap: HeapMeter,
    /// `--max-memory`, in bytes (the accounted-storage bound too).
    pub(crate) max_mem: usize,
    pub(crate) caps: Caps,
    /// The run-time limits this run is held to (SPEC 8.2): every reader of one asks here.
    pub(crate) lim: Limits,
    /// Capability scopes and the audit log.
    pub(crate) gate: Arc<crate::gate::Gate>,
    /// What the gated call now running touched, for its audit line: the resolved
    /// target and the bytes moved.
    pub(crate) audit_target: Option<String>,
    pub(crate) audit_bytes: u64,
    /// The line of the gated call running now (for its audit line): set by the call
    /// (`vm_op`). A step writes it too (without that store the dispatch loop kept the
    /// interpreter's address in a stack slot: `loop` +1.5% instructions), but a return
    /// does not restore the caller's.
    pub(crate) pos: Pos,
    pub(crate) budgets: Budgets,
    pub(crate) out: Output,
    pub(crate) script_args: Vec<Vec<u8>>,
    pub(crate) rng: super::rand::Rng,
    pub(crate) env: super::env::EnvOverlay,
    pub(crate) stdin: super::stdin::StdinState,
    pub(crate) files: super::files::FileState,
    /// Sockets, listeners, HTTP, TLS and DNS (all built on first use).
    pub(crate) net: super::net::NetSlot,
    /// Open SQLite databases (nothing SQLite-related exists until `db.open` runs).
    pub(crate) db: super::db::DbState,
    /// Where `assert_snapshot` keeps its snapshots.
    pub(crate) snapshots: Option<SnapshotDir>,
    /// Seconds asked of `sleep` so far (the `sleep` limit).
    pub(crate) slept: f64,
    /// Set by `leash test`: `is_main()` is false there.
    pub testing: bool,
}

/// The way back into the evaluator, for the builtins that call user functions (the
/// ones with a function parameter, `Builtin::fnp`): the host, and the ordinary call.
/// Nothing else of the evaluator (its stack, frames, globals, code) is reachable.
pub trait Callbacks: HasHost {
    /// Whether `f` is a function a builtin may call now (a named function of the
    /// program, or an anonymous function of a builtin call running now).
    fn callable(&self, f: FnRef) -> bool;
    /// Call `f` with `args` (moved out of the slice, which is left holding nils): an
    /// ordinary call (call depth, steps of its lines, work, storage, the profile).
    fn call(&mut self, f: FnRef, args: &mut [Value]) -> R<Value>;
}

/// What holds the host: the host itself, or a builtin's `Callbacks` (so that a helper
/// can serve both kinds of builtin: `re.replace` with a string or a function).
pub trait HasHost {
    fn host(&mut self) -> &mut Host;
}

impl HasHost for Host {
    #[inline(always)]
    fn host(&mut self) -> &mut Host {
        self
    }
}

/// A run's compiled patterns go with it (see `re::forget_patterns`).
impl Drop for Host {
    fn drop(&mut self) {
        super::re::forget_patterns();
    }
}

impl Host {
    pub fn new(cfg: &RunConfig) -> Self {
        let mut out = Output::default();
        out.hold = cfg.cgi;
        crate::value::set_growth_limits(&cfg.limits);
        // Before the heap budget starts: no earlier run's compiled patterns are held.
        super::re::forget_patterns();
        Host {
            meter: Meter::new(cfg.max_steps, cfg.max_work, cfg.deadline),
            heap: HeapMeter::new(cfg.heap.unwrap_or_else(|| crate::memory::Budget::start(cfg.max_memory))),
            max_mem: cfg.max_memory.min(usize::MAX as u64) as usize,
            caps: cfg.caps,
            lim: cfg.limits,
            gate: cfg.gate.clone(),
            audit_target: None,
            audit_bytes: 0,
            pos: NO_POS,
            budgets: Budgets::new(&cfg.limits),
            out,
            script_args: cfg.args.clone(),
            rng: super::rand::Rng::new(cfg.seed),
            env: Default::default(),
            stdin: Default::default(),
            files: Default::default(),
            net: super::net::NetSlot::new(&cfg.net, &cfg.limits),
            db: Default::default(),
            snapshots: cfg.snapshots.clone(),
            slept: 0.0,
            testing: false,
        }
    }

    // ------------------------------------------------------------------
    // Failures
    // ------------------------------------------------------------------

    /// A runtime error of `kind` (its line and spot are given where it is caught).
    pub fn err(&self, kind: ErrKind, message: impl Into<String>) -> Fail {
        crate::error::error(kind, message.into())
    }

    /// A limit of `kind` reached.
    pub fn limit(&self, kind: LimitKind, message: impl Into<String>) -> Fail {
        crate::error::limit(kind, message.into())
    }

    /// A budget charge failed: turn it into its limit.
    pub fn budget_fail(&self, e: (LimitKind, String)) -> Fail {
        self.limit(e.0, e.1)
    }

    /// Charge `n` units of work (the one work charge: builtins, operators, copies, I/O
    /// and SQLite all come here). Past the budget, the `work` limit.
    #[inline(always)]
    pub fn work(&mut self, n: u64) -> R<()> {
        self.meter.work(n)
    }

    /// Charge `n` steps at once, for work done outside the evaluator (SQLite's virtual
    /// machine, metered by its progress handler). Past the budget, the `steps` limit.
    pub fn charge_steps(&mut self, n: u64) -> R<()> {
        self.meter.steps_n(n)
    }

    /// `--max-memory`, in bytes.
    pub fn max_memory(&self) -> usize {
        self.max_mem
    }

    /// Steps left before the `steps` limit (what outside work may still be charged).
    pub fn steps_left(&self) -> u64 {
        self.meter.steps_left()
    }

    /// Work left before the `work` limit.
    pub fn work_left(&self) -> u64 {
        self.meter.work_left()
    }

    /// Stop if the deadline has passed.
    pub fn check_time(&self) -> R<()> {
        self.meter.check_time()
    }

    // ------------------------------------------------------------------
    // Storage: the value limits
    // ------------------------------------------------------------------

    /// Refuse to build a value whose accounted size exceeds one frame.
    #[inline]
    pub fn check_value(&self, v: &Value) -> R<()> {
        if v.acct() > self.lim.n(L::FrameStorage) {
            return Err(self.value_refused(v));
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn value_refused(&self, v: &Value) -> Fail {
        self.limit(
            LimitKind::FrameStorage,
            format!(
                "a value of {} accounted bytes exceeds the frame limit of {max_frame_bytes}",
                v.acct(),
                max_frame_bytes = self.lim.n(L::FrameStorage)
            ),
        )
    }

    pub fn check_list_len(&self, n: usize) -> R<()> {
        if n > self.lim.n(L::List) {
            return Err(self.limit(
                LimitKind::List,
                format!("list of more than {max_list_items} items", max_list_items = self.lim.n(L::List)),
            ));
        }
        Ok(())
    }

    pub fn check_map_len(&self, n: usize) -> R<()> {
        if n > self.lim.n(L::Map) {
            return Err(self.limit(
                LimitKind::Map,
                format!("map of more than {max_map_entries} entries", max_map_entries = self.lim.n(L::Map)),
            ));
        }
        Ok(())
    }

    #[inline(always)]
    pub fn check_str_len(&self, n: usize) -> R<()> {
        if n > self.lim.n(L::String) {
            return Err(self.str_too_long());
        }
        Ok(())
    }

    /// Room on the heap for `bytes` more, asked before a buffer of that size is
    /// allocated (a result whose size is known first: `repeat`, `pad_left`, `..`,
    /// `chars`, `split`, ...): `memory` when what is held and `bytes` together would
    /// pass `--max-memory`. The heap checks after a call (`check_memory`) see a value
    /// only once it is made, so without this one call could make a value many times the
    /// bound (`chars` of a 16 MB string: a list of 256 MiB) before any check saw it. A
    /// buffer below `ROOM_FROM` is left to those checks (the documented overhead
    /// covers it).
    #[inline]
    pub fn room(&self, bytes: usize) -> R<()> {
        self.heap.room(bytes).map_err(|m| self.memory_over(m))
    }

    /// `room` for one more item of a list being built item by item, whose length is not
    /// known first (`re.find_all`): `grow_room` for one item, so its capacity, and its
    /// accounted storage, are the ones pushing gives.
    #[inline]
    pub fn push_room(&self, items: &mut Vec<Value>) -> R<()> {
        if items.len() == items.capacity() {
            return self.grow_room(items, 1);
        }
        Ok(())
    }

    /// Room for `add` items more in `out`, a text or list being built: when they do not
    /// fit its capacity, `room` for its growth (to twice its capacity, or to what they
    /// need, as `Vec` grows), found before it grows (`HeapMeter::grow`).
    #[inline]
    pub fn grow_room<T>(&self, out: &mut Vec<T>, add: usize) -> R<()> {
        self.heap.grow(out, add).map_err(|m| self.memory_over(m))
    }

    /// Read `r` to its end into `buf`, at most `most` bytes in all, a chunk at a time
    /// (into the room `buf` has, or 64 KiB more), each growth of `buf` found room for
    /// first (`grow_room`). The read's own failure is the inner result.
    pub fn read_within(&self, r: &mut impl std::io::Read, most: u64, buf: &mut Vec<u8>) -> R<std::io::Result<()>> {
        use std::io::Read;
        const CHUNK: usize = 64 * 1024;
        loop {
            let left = most.saturating_sub(buf.len() as u64);
            if left == 0 {
                return Ok(Ok(()));
            }
            let want = ((buf.capacity() - buf.len()).max(CHUNK) as u64).min(left) as usize;
            self.grow_room(buf, want)?;
            match r.take(want as u64).read_to_end(buf) {
                Ok(n) if n < want => return Ok(Ok(())),
                Ok(_) => {}
                Err(e) => return Ok(Err(e)),
            }
        }
    }

    /// The `memory` limit with the bound's message `m` (from `HeapMeter`).
    #[cold]
    pub fn memory_over(&self, m: String) -> Fail {
        self.limit(LimitKind::Memory, m)
    }

    /// `grow_room` for a big string `v` about to be appended to `out` (an interpolation's
    /// part; within the string limit, whose error comes first). A short one writes
    /// little, and a growth it causes is seen by the checks after.
    #[inline]
    pub fn text_room(&self, v: &Value, out: &mut Vec<u8>) -> R<()> {
        if let Value::Str(s) = v {
            if s.len() >= crate::memory::ROOM_FROM && out.len() + s.len() <= self.lim.n(L::String) {
                return self.grow_room(out, s.len());
            }
        }
        Ok(())
    }

    /// The string limit and `room` for a string of `n` bytes about to be built.
    #[inline]
    pub fn str_room(&self, n: usize) -> R<()> {
        self.check_str_len(n)?;
        self.room(n)
    }

    /// The list limit and `room` for a list of `n` items about to be built with that
    /// capacity (`cap`, at least `n`: a slot of `ACCT_SLOT` bytes each).
    #[inline]
    pub fn list_room(&self, n: usize, cap: usize) -> R<()> {
        self.check_list_len(n)?;
        self.room(cap.saturating_mul(ACCT_SLOT))
    }

    /// The longest line a line reader may return under line limit `l`: a line is a
    /// string, so a raised line limit does not lift the string limit.
    #[inline]
    pub fn line_cap(&self, l: L) -> usize {
        self.lim.n(l).min(self.lim.n(L::String))
    }

    /// The failure of a line past `line_cap(l)`: the line limit's own, or the string
    /// limit's when that is the lower.
    pub fn line_too_long(&self, l: L, own: impl FnOnce() -> Fail) -> Fail {
        if self.lim.n(L::String) < self.lim.n(l) {
            self.str_too_long()
        } else {
            own()
        }
    }

    #[cold]
    #[inline(never)]
    pub(crate) fn str_too_long(&self) -> Fail {
        self.limit(
            LimitKind::String,
            format!("string of more than {max_string_bytes} bytes", max_string_bytes = self.lim.n(L::String)),
        )
    }

    /// Charge the copy that a copy-on-write change of `v` is about to make: nothing
    /// when it is not shared, else its items or bytes (the one place copies are charged).
    /// (Room for the copy is found before it is made: `room`.)
    #[inline]
    pub fn cow<S: Shared>(&mut self, v: &S) -> R<()> {
        if v.is_shared() {
            self.work(v.copy_work())?;
            return self.room(v.copy_bytes());
        }
        Ok(())
    }

    /// Build a list value from items, within the list and frame limits.
    #[inline]
    pub fn make_list(&self, items: Vec<Value>) -> R<Value> {
        self.check_list_len(items.len())?;
        let v = Value::list(items);
        self.check_value(&v)?;
        Ok(v)
    }

    /// `make_list` of items whose storage the caller measured (`List::from_measured`).
    #[inline]
    pub fn make_list_measured(&self, items: Vec<Value>, heap: usize) -> R<Value> {
        self.check_list_len(items.len())?;
        let v = Value::List(std::rc::Rc::new(List::from_measured(items, heap)));
        self.check_value(&v)?;
        Ok(v)
    }

    pub fn make_map(&self, m: Map) -> R<Value> {
        self.check_map_len(m.len())?;
        let v = Value::map(m);
        self.check_value(&v)?;
        Ok(v)
    }

    pub fn make_str(&self, b: Vec<u8>) -> R<Value> {
        self.check_str_len(b.len())?;
        Ok(Value::str(b))
    }

    /// Resolve an index `k` for a sequence of length `len` (negative counts from the end).
    pub fn index(&self, k: &Value, len: usize) -> R<usize> {
        let Value::Num(n) = k else {
            return Err(self.err(ErrKind::Type, format!("index must be a number, got {}", k.type_name())));
        };
        if !is_integral(*n) {
            return Err(self.err(ErrKind::Value, format!("index {} is not an integer", num_to_string(*n))));
        }
        let i = if *n < 0.0 { *n + len as f64 } else { *n };
        if i < 0.0 || i >= len as f64 {
            return Err(self.err(ErrKind::Index, format!("index {} out of range for length {len}", num_to_string(*n))));
        }
        Ok(i as usize)
    }

    /// `str(v)` as bytes, within `cap` bytes (the string limit unless said otherwise).
    pub fn to_text(&mut self, v: &Value, cap: usize) -> R<Vec<u8>> {
        let mut out = Vec::new();
        self.write_text(v, &mut out, cap)?;
        Ok(out)
    }

    /// Append `str(v)`; the text must stay within `cap` bytes (the string limit).
    pub fn write_text(&mut self, v: &Value, out: &mut Vec<u8>, cap: usize) -> R<()> {
        self.write_text_as(v, out, cap, LimitKind::String)
    }

    /// Append `str(v)`; growing past `cap` is the limit `kind`.
    /// The text of a list or map is charged as work by the bytes written, also when it
    /// stops at the cap (it did that much).
    pub fn write_text_as(&mut self, v: &Value, out: &mut Vec<u8>, cap: usize, kind: LimitKind) -> R<()> {
        let start = out.len();
        let r = write_str_within(v, out, cap, self.heap.ceiling());
        if matches!(v, Value::List(_) | Value::Map(_)) {
            self.work(crate::meter::scaled((out.len() - start) as u64, WORK_TEXT_BYTE_X256))?;
        }
        match r {
            Ok(()) => Ok(()),
            Err(TextError::InvalidUtf8) => {
                Err(self.err(ErrKind::Value, "a string inside the value is not valid UTF-8"))
            }
            Err(TextError::TooLong) => Err(self.limit(kind, format!("text of more than {cap} bytes"))),
            Err(TextError::Memory) => Err(self.memory_over(self.heap.over())),
        }
    }

    /// Note what a gated call touches, for its audit line: the resolved target.
    pub fn audit_note(&mut self, target: impl Into<String>) {
        if self.gate.auditing() {
            self.audit_target = Some(target.into());
        }
    }

    /// The heap check: past `--max-memory`, the `memory` limit.
    #[inline(always)]
    pub fn check_memory(&self) -> R<()> {
        if self.heap.past_mark() {
            return self.heap_observe();
        }
        Ok(())
    }

    /// `x .. y`: exactly one allocation for the common string and number operands; the
    /// bytes it produces are checked against the string limit and charged before they
    /// are copied. Both evaluators' `..` (operands read in place: nothing is cloned).
    pub fn concat(&mut self, x: &Value, y: &Value) -> R<Value> {
        let mut joined = |a: &[u8], b: &[u8]| -> R<Value> {
            self.str_room(a.len() + b.len())?;
            self.work(concat_work(a.len() + b.len()))?;
            let mut out = LStr::with_capacity(a.len() + b.len());
            out.extend_from_slice(a);
            out.extend_from_slice(b);
            self.check_memory_after(out.len())?;
            Ok(Value::Str(Rc::new(out)))
        };
        match (x, y) {
            (Value::Str(a), Value::Str(b)) => joined(a, b),
            (Value::Str(a), Value::Num(n)) => with_num_text(*n, |t| joined(a, t)),
            (Value::Num(n), Value::Str(b)) => with_num_text(*n, |t| joined(t, b)),
            _ => {
                let mut out = Vec::new();
                self.write_text(x, &mut out, self.lim.n(L::String))?;
                self.write_text(y, &mut out, self.lim.n(L::String))?;
                self.check_str_len(out.len())?;
                self.check_memory_after(out.len())?;
                self.work(concat_work(out.len()))?;
                Ok(Value::str(out))
            }
        }
    }

    /// The heap check after building a string of `len` bytes, made only for one of at
    /// least `CHECK_FROM` bytes: smaller temporaries are seen by the next check (one line
    /// holds at most a few hundred of them, so at most about a MiB goes unseen).
    #[inline(always)]
    pub fn check_memory_after(&self, len: usize) -> R<()> {
        if len >= crate::memory::CHECK_FROM {
            return self.check_memory();
        }
        Ok(())
    }

    #[cold]
    #[inline(never)]
    fn heap_observe(&self) -> R<()> {
        self.heap.observe().map_err(|m| self.limit(LimitKind::Memory, m))
    }
}

/// Byte-substring search, linear in the subject (memchr's Two-Way/SIMD searcher).
pub fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    memchr::memmem::find(hay, needle)
}

/// Work of producing `n` bytes by concatenation or interpolation.
#[inline]
pub fn concat_work(n: usize) -> u64 {
    WORK_CONCAT_BASE + crate::meter::scaled(n as u64, WORK_CONCAT_BYTE_X256)
}

/// Hashing and comparing a map key: free up to `KEY_FREE_BYTES` (within the operation's
/// own cost), then by its bytes, so a 1 MB key looked up per line is charged for it.
#[inline]
pub fn key_work(len: usize) -> u64 {
    if len <= KEY_FREE_BYTES {
        0
    } else {
        crate::meter::scaled(len as u64, WORK_HASH_BYTE_X256)
    }
}

/// Work of searching `hay` for a needle of `needle` bytes.
#[inline]
pub fn find_work(hay: usize, needle: usize) -> u64 {
    crate::meter::scaled((hay + needle) as u64, WORK_FIND_BYTE_X256)
}

/// What a copy-on-write copy costs (SPEC 8.1: copies are charged when they happen).
pub trait CopyCost {
    fn copy_work(&self) -> u64;
    /// The bytes the copy allocates (its items' slots, or its bytes; what they refer to
    /// is shared, not copied), for `Host::room`.
    fn copy_bytes(&self) -> usize;
}

/// A handle whose change copies what it points to while that is shared: an `Rc` of a
/// list or string, or a map (a handle to one block).
pub trait Shared: CopyCost {
    fn is_shared(&self) -> bool;
}

impl<T: CopyCost> CopyCost for Rc<T> {
    #[inline]
    fn copy_work(&self) -> u64 {
        (**self).copy_work()
    }
    #[inline]
    fn copy_bytes(&self) -> usize {
        (**self).copy_bytes()
    }
}

impl<T: CopyCost> Shared for Rc<T> {
    #[inline]
    fn is_shared(&self) -> bool {
        Rc::strong_count(self) > 1
    }
}

impl Shared for Map {
    #[inline]
    fn is_shared(&self) -> bool {
        self.strong_count() > 1
    }
}

impl CopyCost for List {
    fn copy_work(&self) -> u64 {
        crate::meter::scaled(self.len() as u64, WORK_COPY_ITEM_X256)
    }
    fn copy_bytes(&self) -> usize {
        self.len().saturating_mul(ACCT_SLOT)
    }
}

impl CopyCost for Map {
    fn copy_work(&self) -> u64 {
        crate::meter::scaled(self.len() as u64, WORK_COPY_ENTRY_X256)
    }
    fn copy_bytes(&self) -> usize {
        self.len().saturating_mul(ACCT_SLOT)
    }
}

impl CopyCost for LStr {
    fn copy_work(&self) -> u64 {
        crate::meter::scaled(self.len() as u64, WORK_COPY_BYTE_X256)
    }
    fn copy_bytes(&self) -> usize {
        self.len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{all, Imp};
    use super::*;

    /// Builtins take the host, never the evaluator: no file under `src/builtins/` names
    /// `Interp` or imports the evaluator's module in its code (comments aside).
    #[test]
    fn no_builtin_names_the_evaluator() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/builtins");
        let mut files = 0;
        for entry in std::fs::read_dir(dir).expect("src/builtins") {
            let path = entry.expect("an entry").path();
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            files += 1;
            let text = std::fs::read_to_string(&path).expect("a source file");
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or("");
                // (Spelt in two halves, so that this line does not name them either.)
                for word in [concat!("Inter", "p"), concat!("crate::inter", "p"), concat!("super::super::inter", "p")] {
                    assert!(!code.contains(word), "{}:{}: names `{word}`: {line}", path.display(), n + 1);
                }
            }
        }
        assert!(files > 20, "read {files} files under {dir}");
    }

    /// `room` refuses a buffer past what the bound leaves before it is allocated, with
    /// the `memory` limit; the growth helpers keep `Vec`'s own capacities, so a list or
    /// text built through them is accounted as one grown by pushing.
    #[test]
    fn room_comes_before_a_buffer_and_growth_keeps_the_vec_rule() {
        use crate::error::Unwind;
        let it = Host::new(&RunConfig::default());
        assert!(it.room(1 << 20).is_ok());
        match &*it.room(usize::MAX / 2).unwrap_err() {
            Unwind::Limit { kind, .. } => assert_eq!(*kind, LimitKind::Memory),
            other => panic!("not a limit: {other:?}"),
        }
        // (Below `ROOM_FROM` a buffer is left to the checks after.)
        assert!(it.str_room(crate::memory::ROOM_FROM - 1).is_ok());
        assert!(it.list_room(it.lim.n(L::List) + 1, 0).is_err());
        let (mut a, mut b): (Vec<Value>, Vec<Value>) = (Vec::new(), Vec::new());
        for _ in 0..100_000 {
            it.push_room(&mut a).unwrap();
            a.push(Value::Nil);
            b.push(Value::Nil);
            assert_eq!(a.capacity(), b.capacity());
        }
        let (mut s, mut t): (Vec<u8>, Vec<u8>) = (Vec::new(), Vec::new());
        for n in [1, 70_000, 5, 200_000, 3, 1 << 20] {
            it.grow_room(&mut s, n).unwrap();
            s.resize(s.len() + n, 0);
            t.resize(t.len() + n, 0);
            assert_eq!(s.capacity(), t.capacity(), "after {n}");
        }
    }

    /// A builtin reaches the evaluator's call only when it has a function parameter:
    /// those, and only those, are `Imp::Calls`.
    #[test]
    fn only_builtins_with_a_function_parameter_call_back() {
        for b in all() {
            assert_eq!(b.fnp.is_some(), matches!(b.imp, Imp::Calls(_)), "{}", b.name);
        }
    }
}
