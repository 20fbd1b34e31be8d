//! The evaluator: runs a validated `Program`.
//!
//! - Steps: `Interp::step` is the one place a step is charged (and the wall-clock
//!   deadline looked at).
//! - Storage: `Interp::charge` is the one place frame storage and total memory are
//!   charged; every store into a variable goes through it.
//! - Heap: `Host::check_memory` (`builtins/host.rs`) compares the process's live heap with
//!   `--max-memory` at every step, after every builtin call and operator that builds a
//!   value, and when a list, map or string is built.
//! - Control flow (`Flow`: break, continue, return) travels apart from failures
//!   (`Unwind`: runtime errors, limits, exit).
//! - Builtins get the `host` field (`builtins::host::Host`: meter, heap, limits, gate,
//!   output, each area's state), never the evaluator; those that call user functions
//!   get `Callbacks` (the host and `call_fn`), implemented here.
//!
//! Parts: `interp/places.rs` (place writes),
//! `interp/calls.rs` (frames, calls, builtin calls, capability checks), `interp/ops.rs`
//! (operators), `vm.rs` (the dispatch loop that runs every body, compiled by
//! `compile.rs`: the only evaluator since the fourteenth session, when the tree
//! evaluator that was its oracle was deleted, WORKLOG); this file keeps the
//! interpreter's state, the step and storage charges, variables and errors.

use std::rc::Rc;

use crate::ast::{BinOp, Pos};
use crate::builtins::{Builtin, Cap, Imp};
use crate::diag::ErrKind;
use crate::limits::*;
use crate::program::*;
use crate::value::*;

pub use crate::builtins::host::{concat_work, find_bytes, find_work, key_work, Host, RunConfig, SnapshotDir};
use crate::error::located;
pub use crate::error::{spotted, Fail, RtError, Unwind, NO_POS, R};

#[path = "interp/calls.rs"]
mod calls;
#[path = "interp/ops.rs"]
mod ops;
#[path = "interp/places.rs"]
mod places;
#[path = "vm.rs"]
mod vm;

pub use ops::floor_div;
use ops::{arith, int_mod_by};

/// How a block ended. A returned value waits in `Interp::ret`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

/// Usage figures reported by `--stats`.
#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub steps: u64,
    pub work: u64,
    pub max_call_depth: usize,
    pub peak_frame_bytes: usize,
    /// The larger of peak accounted storage and the peak heap the checks saw.
    pub peak_memory_bytes: usize,
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub stdin_bytes: u64,
    pub file_write_bytes: u64,
    pub file_read_bytes: u64,
    pub http_requests: u64,
    pub http_body_bytes: u64,
    pub net_sent_bytes: u64,
    pub net_recv_bytes: u64,
}

const MAIN_FN: usize = usize::MAX;

/// What a call saves of its caller's frame: base, frame bytes, function. (Not the
/// line: only a gated call's audit line reads `Host::pos`, and its call sets it.)
pub(crate) type Saved = (usize, usize, usize);

// (`repr(C)`, the frame's base first: at the interpreter's own address, where the
// dispatch loop reads it with no field address of its own. Laid out by the compiler,
// the loop kept the addresses of `base` and of the stack's fields in stack slots and
// reloaded them for every operand: 1 to 3% more instructions on every benchmark,
// WORKLOG twentieth session.)
#[repr(C)]
pub struct Interp<'p> {
    base: usize,
    pub(crate) stack: Vec<Value>,
    pub(crate) globals: Vec<Value>,
    pub(crate) prog: &'p Program,
    /// The function running now (`MAIN_FN` in main), for naming variables in errors.
    func: usize,
    depth: usize,
    max_depth: usize,
    /// The anonymous functions of the builtin calls running now: each one's synthetic
    /// function and the values it captured when its call started (a stack: a call's
    /// entries are dropped when it returns; see `Expr::WithLambdas`).
    pub(crate) lambdas: Vec<(u32, Box<[Value]>)>,
    /// The texts of the interpolations compiled code is building now, innermost last
    /// (`Op::InterpBegin` .. `Op::InterpEnd`; a catch cuts it back, as it does `lambdas`).
    pub(crate) ibufs: Vec<Vec<u8>>,

    /// The value of the `return` being carried out.
    ret: Value,

    gbytes: usize,
    fbytes: usize,
    mem: usize,
    peak_frame: usize,
    peak_mem: usize,
    /// What a builtin may touch (meter, heap, limits, gate, output, each area's state):
    /// lent to each builtin call (`builtins::host`).
    pub(crate) host: Host,

    /// `--profile`: the profiler, fed from the meter's slow path and at calls.
    pub(crate) profile: Option<Box<crate::profile::Profile>>,
    /// Each function's code, compiled on its first call, and main's (shared with the
    /// runs of compiled code, which hold references into it).
    codes: Rc<crate::compile::Codes<'p>>,
}

/// `a + k * st` for a `for` loop whose `k * st` overflowed: computed at half scale and
/// doubled back (halving and doubling are exact here), so the term is the one the plain
/// sum would give with an unbounded exponent: finite when it is within range.
fn range_term_wide(a: f64, k: f64, st: f64) -> f64 {
    if !a.is_finite() {
        return a;
    }
    (a / 2.0 + k * (st / 2.0)) * 2.0
}

impl<'p> Interp<'p> {
    pub fn new(prog: &'p Program, cfg: &RunConfig) -> Self {
        Interp {
            prog,
            stack: Vec::with_capacity(256),
            base: 0,
            globals: vec![Value::Unset; prog.global_names.len()],
            func: MAIN_FN,
            depth: 1,
            max_depth: 1,
            ret: Value::Nil,
            lambdas: Vec::new(),
            ibufs: Vec::new(),
            gbytes: 0,
            fbytes: 0,
            mem: 0,
            peak_frame: 0,
            peak_mem: 0,
            host: Host::new(cfg),
            profile: None,
            codes: Rc::new(crate::compile::Codes::new(prog)),
        }
    }

    /// Run body `fi` (a function, or main for `MAIN_FN`) on the current frame: its
    /// compiled code (compiled on first use).
    fn run_body(&mut self, fi: usize) -> R<Flow> {
        let codes = self.codes.clone();
        let code = codes.get(fi);
        self.frame_registers(code, self.base, code.nlocals as usize)?;
        self.run_code(&codes, code)
    }

    /// Make the registers of compiled `code` on the stack for the current frame, unset
    /// those from register `from` up to its loops' (`Code::nfixed`), and look at the heap
    /// (a call is a check point). From `run_body` `from` is past the locals: the stack
    /// ends at the arguments (`enter`: a builtin's callback, a test; the locals past
    /// them are made by the resize, unset) or main's registers are reused (the REPL runs
    /// one input after another, and the loops' registers may hold what an earlier one
    /// left). From a compiled call `from` is past the arguments: the caller's dead
    /// temporaries may lie there.
    /// `b` is the frame's base (`self.base`, passed in: read back from `self` right
    /// after the call had stored it, it cost a compiled call 4% more instructions).
    #[inline(always)]
    fn frame_registers(&mut self, code: &crate::compile::Code<'p>, b: usize, from: usize) -> R<()> {
        let need = b + code.nregs as usize;
        if self.stack.len() < need {
            self.stack.resize_with(need, Default::default);
        }
        for cell in &mut self.stack[b + from..b + code.nfixed as usize] {
            *cell = Value::Unset;
        }
        self.host.check_memory()
    }

    /// The interactive session's next entry: run `prog` (the session's functions and the
    /// new entry) on this same interpreter, keeping the globals by name, with a fresh
    /// step and work budget (SPEC 13).
    /// `carry` holds the session's globals that the running program does not name.
    pub fn switch_program(&mut self, prog: &'p Program, carry: &mut std::collections::HashMap<String, Value>) {
        for (n, v) in self.prog.global_names.iter().zip(std::mem::take(&mut self.globals)) {
            if !matches!(v, Value::Unset) {
                carry.insert(n.clone(), v);
            }
        }
        let mut g = vec![Value::Unset; prog.global_names.len()];
        for (i, n) in prog.global_names.iter().enumerate() {
            if let Some(v) = carry.remove(n) {
                g[i] = v;
            }
        }
        self.prog = prog;
        self.codes = Rc::new(crate::compile::Codes::new(prog));
        self.globals = g;
        self.host.meter.reset();
        self.func = MAIN_FN;
        self.depth = 1;
        self.base = 0;
        self.stack.clear();
    }

    /// The value of global `name`, if it has one.
    pub fn global(&self, name: &str) -> Option<&Value> {
        let i = self.prog.global_names.iter().position(|m| m == name)?;
        match &self.globals[i] {
            Value::Unset => None,
            v => Some(v),
        }
    }

    /// Profile this run (`--profile`).
    pub fn start_profile(&mut self) {
        self.profile = Some(Box::default());
        self.host.meter.profile();
    }

    /// The profile, with everything counted up to now attributed.
    pub fn take_profile(&mut self) -> Option<Box<crate::profile::Profile>> {
        let (steps, work) = (self.host.meter.steps(), self.host.meter.worked());
        let mut p = self.profile.take()?;
        p.sync(steps, work);
        Some(p)
    }

    #[cold]
    #[inline(never)]
    fn step_slow(&mut self, pos: Pos) -> R<()> {
        let r = self.host.meter.step_slow();
        if let Some(p) = self.profile.as_deref_mut() {
            p.step(pos, self.host.meter.steps(), self.host.meter.worked());
        }
        r.map_err(|e| located(e, pos))
    }

    /// Run main's statements of the current program as one REPL entry (its storage
    /// base was charged with the session's first).
    pub fn run_entry(&mut self) -> R<Flow> {
        self.run_body(MAIN_FN)
    }

    /// Run main. The caller turns the result into an exit status.
    pub fn run_main(&mut self) -> R<()> {
        self.charge(true, self.prog.main_base_bytes as isize)?;
        self.run_body(MAIN_FN)?;
        Ok(())
    }

    /// The globals after main ran (the test runner restores them before each test).
    pub fn snapshot_globals(&self) -> (Vec<Value>, usize) {
        (self.globals.clone(), self.gbytes)
    }

    pub fn restore_globals(&mut self, snap: &(Vec<Value>, usize)) {
        self.mem = self.mem - self.gbytes + snap.1;
        self.gbytes = snap.1;
        self.globals = snap.0.clone();
    }

    /// Call function `fi` without arguments, with a fresh step and work budget (`leash test`).
    pub fn call_test(&mut self, fi: usize) -> R<()> {
        self.host.meter.reset();
        let f = &self.prog.funcs[fi];
        self.enter(fi, f, 0, self.stack.len(), 0)?;
        Ok(())
    }

    pub fn stats(&self) -> Stats {
        Stats {
            steps: self.host.meter.steps(),
            work: self.host.meter.worked(),
            max_call_depth: self.max_depth,
            peak_frame_bytes: self.peak_frame,
            peak_memory_bytes: self.peak_mem.max(self.host.heap.peak()),
            stdout_bytes: self.host.budgets.stdout.used,
            stderr_bytes: self.host.budgets.stderr.used,
            stdin_bytes: self.host.budgets.stdin.used,
            file_write_bytes: self.host.budgets.file_writes.used,
            file_read_bytes: self.host.budgets.file_reads.used,
            http_requests: self.host.net.get().map_or(0, |n| n.http.requests),
            http_body_bytes: self.host.net.get().map_or(0, |n| n.http.bodies.used),
            net_sent_bytes: self.host.net.get().map_or(0, |n| n.sent.used),
            net_recv_bytes: self.host.net.get().map_or(0, |n| n.received.used),
        }
    }

    // ------------------------------------------------------------------
    // Errors
    // ------------------------------------------------------------------

    pub fn err(&self, kind: ErrKind, message: impl Into<String>) -> Fail {
        crate::error::error(kind, message.into())
    }

    pub fn limit(&self, kind: LimitKind, message: impl Into<String>) -> Fail {
        crate::error::limit(kind, message.into())
    }

    fn slot_name(&self, slot: Slot) -> &str {
        match slot {
            Slot::Global(i) => &self.prog.global_names[i as usize],
            Slot::Local(i) => &self.prog.funcs[self.func].slot_names[i as usize],
        }
    }

    #[cold]
    fn unset(&self, slot: Slot) -> Fail {
        let name = self.slot_name(slot);
        let mut e = self.err(ErrKind::Name, format!("variable `{name}` has no value"));
        if let Unwind::Error(r) = &mut *e {
            r.help = Some(match slot {
                // SPEC 7: a local read before any assignment may have meant the global.
                Slot::Local(_) if self.prog.global_names.iter().any(|g| g == name) => {
                    format!("`{name}` is a local of this function (it is assigned here); add `global {name}` to use the global")
                }
                _ => format!("`{name}` is assigned only on a path that has not run yet"),
            });
        }
        e
    }

    #[cold]
    fn unset_at(&self, slot: Slot, sp: crate::ast::Spot) -> Fail {
        spotted(self.unset(slot), sp)
    }

    // ------------------------------------------------------------------
    // The step and work charges (the meter, meter.rs)
    // ------------------------------------------------------------------

    /// Charge one step for the line at `pos` and look at the heap (a loop's back edge).
    #[inline(always)]
    pub fn step(&mut self, pos: Pos) -> R<()> {
        self.host.pos = pos;
        if self.host.meter.step_due() {
            self.step_slow(pos)?;
        }
        self.host.check_memory().map_err(|e| located(e, pos))
    }

    /// Charge one step for a line of compiled code: the heap is looked at on the back
    /// edges of loops, at calls and after every operation that builds a value, not on
    /// every line (`step` does both).
    #[inline(always)]
    pub(crate) fn step_line(&mut self, pos: Pos) -> R<()> {
        self.host.pos = pos;
        if self.host.meter.step_due() {
            self.step_slow(pos)?;
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // The storage charge
    // ------------------------------------------------------------------

    /// Charge `delta` bytes of accounted storage to main's frame (`global`) or the
    /// current function's frame, and to the run's total.
    #[inline(always)]
    pub fn charge(&mut self, global: bool, delta: isize) -> R<()> {
        if delta == 0 {
            return Ok(());
        }
        let fb = if global || self.func == MAIN_FN { &mut self.gbytes } else { &mut self.fbytes };
        *fb = (*fb as isize + delta) as usize;
        self.mem = (self.mem as isize + delta) as usize;
        if delta > 0 {
            let f = *fb;
            if f > self.peak_frame {
                self.peak_frame = f;
            }
            if self.mem > self.peak_mem {
                self.peak_mem = self.mem;
            }
            if f > self.host.lim.n(L::FrameStorage) || self.mem > self.host.max_mem {
                return Err(self.charge_refused(f));
            }
        }
        Ok(())
    }

    /// The failure of a storage charge that took frame `f` or the run past its limit.
    #[cold]
    #[inline(never)]
    fn charge_refused(&self, f: usize) -> Fail {
        if f > self.host.lim.n(L::FrameStorage) {
            return self.limit(
                LimitKind::FrameStorage,
                format!(
                    "frame storage exceeds {max_frame_bytes} bytes",
                    max_frame_bytes = self.host.lim.n(L::FrameStorage)
                ),
            );
        }
        self.limit(LimitKind::Memory, format!("accounted storage exceeds {} bytes (--max-memory)", self.host.max_mem))
    }

    // ------------------------------------------------------------------
    // Variables
    // ------------------------------------------------------------------

    #[inline]
    fn store(&mut self, slot: Slot, v: Value) -> R<()> {
        self.store_inline(slot, v)
    }

    /// `store`, inlined where the value is made (the compiled core's writes): passed by
    /// value to an out-of-line call, a value just built by two 8-byte stores was copied
    /// into the argument with a 16-byte load that missed store forwarding (see `Value`).
    #[inline(always)]
    pub(crate) fn store_inline(&mut self, slot: Slot, v: Value) -> R<()> {
        let nh = v.heap();
        let (old, global) = match slot {
            Slot::Local(i) => (std::mem::replace(&mut self.stack[self.base + i as usize], v), false),
            Slot::Global(i) => (std::mem::replace(&mut self.globals[i as usize], v), true),
        };
        let oh = old.heap();
        vm::drop_held(old);
        if nh != oh {
            self.charge(global, nh as isize - oh as isize)?;
        }
        Ok(())
    }

    #[inline]
    fn slot_mut(&mut self, slot: Slot) -> &mut Value {
        match slot {
            Slot::Local(i) => &mut self.stack[self.base + i as usize],
            Slot::Global(i) => &mut self.globals[i as usize],
        }
    }

    // ------------------------------------------------------------------
    // Thrown errors, unpacking and catch values
    // ------------------------------------------------------------------

    /// The error `throw v` raises on the line at `pos`.
    pub(crate) fn thrown(&self, v: Value, pos: Pos) -> Fail {
        let mut text = Vec::new();
        let message = match write_str(&v, &mut text, self.host.lim.n(L::String)) {
            Ok(()) => String::from_utf8_lossy(&text).into_owned(),
            Err(_) => format!("a thrown {}", v.type_name()),
        };
        Box::new(Unwind::Error(RtError { kind: ErrKind::User, message, pos, spot: 0, help: None, value: Some(v) }))
    }

    /// `a, b = e`: the items of `v`, which must be a list of exactly `n` (both
    /// evaluators).
    pub(crate) fn unpack(&self, v: &Value, n: usize) -> R<Vec<Value>> {
        match v {
            Value::List(l) if l.len() == n => Ok(l.items().to_vec()),
            Value::List(l) => {
                let m = l.len();
                let s = if m == 1 { "" } else { "s" };
                Err(self.err(ErrKind::Value, format!("cannot unpack a list of {m} item{s} into {n} targets")))
            }
            other => Err(self.err(
                ErrKind::Type,
                format!("cannot unpack a {} into {n} targets: it must be a list", other.type_name()),
            )),
        }
    }

    /// The map a `catch` variable receives.
    fn error_value(&self, e: RtError) -> R<Value> {
        let mut m = Map::with_capacity(5);
        let s = |t: &str| Value::string(t);
        m.insert(bytes(b"kind"), s(e.kind.name()));
        m.insert(bytes(b"message"), s(&e.message));
        if let Some((file, line, _)) = self.prog.sources.place(e.pos, e.spot) {
            m.insert(bytes(b"file"), s(file));
            m.insert(bytes(b"line"), Value::Num(line as f64));
        } else {
            m.insert(bytes(b"file"), Value::Nil);
            m.insert(bytes(b"line"), Value::Nil);
        }
        if let Some(v) = e.value {
            m.insert(bytes(b"value"), v);
        }
        self.host.make_map(m)
    }
}

/// The way back into the evaluator for the builtins that call user functions
/// (`builtins::host::Callbacks`): the host, and the ordinary call.
impl crate::builtins::host::HasHost for Interp<'_> {
    #[inline]
    fn host(&mut self) -> &mut Host {
        &mut self.host
    }
}

impl crate::builtins::host::Callbacks for Interp<'_> {
    fn callable(&self, f: crate::builtins::FnRef) -> bool {
        match f {
            crate::builtins::FnRef::Named(fi) => fi < self.prog.funcs.len(),
            crate::builtins::FnRef::Lambda(li) => li < self.lambdas.len(),
        }
    }

    fn call(&mut self, f: crate::builtins::FnRef, args: &mut [Value]) -> R<Value> {
        self.call_fn(f, args)
    }
}

#[cfg(test)]
mod size_tests {
    #[test]
    fn sizes() {
        eprintln!(
            "Value {} R<Value> {} R<Flow> {} Expr {} Stmt {} ast::Expr {} ast::Stmt {} Tok {}",
            std::mem::size_of::<super::Value>(),
            std::mem::size_of::<super::R<super::Value>>(),
            std::mem::size_of::<super::R<super::Flow>>(),
            std::mem::size_of::<super::Expr>(),
            std::mem::size_of::<super::Stmt>(),
            std::mem::size_of::<crate::ast::Expr>(),
            std::mem::size_of::<crate::ast::Stmt>(),
            std::mem::size_of::<crate::lexer::Tok>(),
        );
        // The program's node must stay 40 bytes (WORKLOG.md, "Memory"): spots fit in padding.
        assert!(std::mem::size_of::<super::Expr>() <= 40);
    }
}
