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

use smallvec::SmallVec;
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

#[path = "vm.rs"]
mod vm;

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

/// What a call saves of its caller's frame: base, frame bytes, function, line.
/// The caller's frame across a call: base, frame bytes, function and line (as a whole
/// word: see `vm::VmFrame`).
pub(crate) type Saved = (usize, usize, usize, u64);

pub struct Interp<'p> {
    pub(crate) prog: &'p Program,
    pub(crate) stack: Vec<Value>,
    base: usize,
    pub(crate) globals: Vec<Value>,
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
    pub(crate) profile: Option<Box<crate::tools::profile::Profile>>,
    /// Run compiled code (`compile.rs`, `vm.rs`; `LEASH_CORE=vm`); false: the tree
    /// evaluator runs every body (the default, and the differential oracle while both
    /// exist: the compiled core does not yet beat it; WORKLOG, issue 24).
    compiled: bool,
    /// Each function's code, compiled on its first call, and main's.
    codes: Vec<Option<Rc<crate::compile::Code<'p>>>>,
}

/// Whether this process runs compiled code: `LEASH_CORE=vm` selects it, anything else
/// (or nothing) the tree evaluator (read once).
fn core_compiled() -> bool {
    static C: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *C.get_or_init(|| std::env::var_os("LEASH_CORE").is_some_and(|v| v == "vm"))
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
            compiled: core_compiled(),
            codes: Vec::new(),
        }
    }

    /// Run body `fi` (a function, or main for `MAIN_FN`) on the current frame: its
    /// compiled code (compiled on first use), or the tree evaluator.
    fn run_body(&mut self, fi: usize) -> R<Flow> {
        let prog = self.prog;
        let body: &'p [Stmt] = if fi == MAIN_FN { &prog.main } else { &prog.funcs[fi].body };
        if !self.compiled {
            return self.exec_block(body);
        }
        let code = self.code_for(fi)?;
        self.run_code(code)
    }

    /// The compiled code of body `fi` (compiled on first use), with the current frame's
    /// registers made on the stack and the heap looked at (a call is a check point).
    #[inline]
    fn code_for(&mut self, fi: usize) -> R<Rc<crate::compile::Code<'p>>> {
        let code = self.code_of(fi);
        let need = self.base + code.nregs as usize;
        if self.stack.len() < need {
            self.stack.resize_with(need, Default::default);
        }
        // Its loops' registers unset (main's may hold a value an earlier run of main
        // left there, as the REPL runs one input after another).
        let b = self.base;
        for cell in &mut self.stack[b + code.nlocals as usize..b + code.nfixed as usize] {
            *cell = Value::Unset;
        }
        self.host.check_memory()?;
        Ok(code)
    }

    /// The code of function `fi` (`MAIN_FN`: main's), compiled on its first use.
    #[inline]
    pub(crate) fn code_of(&mut self, fi: usize) -> Rc<crate::compile::Code<'p>> {
        let i = if fi == MAIN_FN { self.prog.funcs.len() } else { fi };
        if let Some(Some(c)) = self.codes.get(i) {
            return c.clone();
        }
        self.compile_code(fi)
    }

    #[inline(never)]
    fn compile_code(&mut self, fi: usize) -> Rc<crate::compile::Code<'p>> {
        let prog = self.prog;
        let i = if fi == MAIN_FN { prog.funcs.len() } else { fi };
        if self.codes.len() <= i {
            self.codes.resize(prog.funcs.len() + 1, None);
        }
        let code = match &self.codes[i] {
            Some(c) => c.clone(),
            None => {
                let (body, n): (&'p [Stmt], usize) = if fi == MAIN_FN {
                    (&prog.main, 0)
                } else {
                    (&prog.funcs[fi].body, prog.funcs[fi].slot_names.len())
                };
                let c = Rc::new(crate::compile::compile(body, n));
                self.codes[i] = Some(c.clone());
                c
            }
        };
        code
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
        self.codes.clear();
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
    pub fn take_profile(&mut self) -> Option<Box<crate::tools::profile::Profile>> {
        let (steps, work) = (self.host.meter.steps, self.host.meter.work);
        let mut p = self.profile.take()?;
        p.sync(steps, work);
        Some(p)
    }

    #[cold]
    #[inline(never)]
    fn step_slow(&mut self, pos: Pos) -> R<()> {
        let r = self.host.meter.step_slow();
        if let Some(p) = self.profile.as_deref_mut() {
            p.step(pos, self.host.meter.steps, self.host.meter.work);
        }
        r.map_err(|e| located(e, pos))
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
        self.call(fi, &[])?;
        Ok(())
    }

    pub fn stats(&self) -> Stats {
        Stats {
            steps: self.host.meter.steps,
            work: self.host.meter.work,
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

    /// Charge one step for the line at `pos`.
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
    /// every line (`step` does it for the tree evaluator).
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
        drop(old);
        if nh != oh {
            self.charge(global, nh as isize - oh as isize)?;
        }
        Ok(())
    }

    /// `x = e`: a number is written in place when the variable holds one (see `num_fast`).
    #[inline(always)]
    fn set_var(&mut self, slot: Slot, e: &'p Expr) -> R<()> {
        if let Some(x) = self.num_fast(e) {
            let cur = self.slot_mut(slot);
            if let Value::Num(n) = cur {
                *n = x;
                return Ok(());
            }
            return self.store(slot, Value::Num(x));
        }
        let v = self.eval_fast(e)?;
        self.store(slot, v)
    }

    #[inline]
    fn slot_mut(&mut self, slot: Slot) -> &mut Value {
        match slot {
            Slot::Local(i) => &mut self.stack[self.base + i as usize],
            Slot::Global(i) => &mut self.globals[i as usize],
        }
    }

    // ------------------------------------------------------------------
    // Statements
    // ------------------------------------------------------------------

    pub fn exec_block(&mut self, block: &'p [Stmt]) -> R<Flow> {
        for s in block {
            match self.exec(s) {
                Ok(Flow::Normal) => {}
                Ok(f) => return Ok(f),
                // A failure raised while running this line gets the line's position.
                Err(e) => return Err(located(e, s.pos)),
            }
        }
        Ok(Flow::Normal)
    }

    #[inline]
    fn exec(&mut self, s: &'p Stmt) -> R<Flow> {
        match &s.kind {
            StmtKind::SetLocal(i, e) => {
                self.step(s.pos)?;
                self.set_var(Slot::Local(*i), e)?;
            }
            StmtKind::SetGlobal(i, e) => {
                self.step(s.pos)?;
                self.set_var(Slot::Global(*i), e)?;
            }
            StmtKind::CountIndex(slot, k, e) => {
                self.step(s.pos)?;
                if !self.count_in_place(*slot, e)? {
                    let v = self.eval(e)?;
                    let key = self.eval_fast(k)?;
                    self.set_index(*slot, key, v)?;
                }
            }
            StmtKind::SetIndex(slot, k, e) => {
                self.step(s.pos)?;
                let v = match self.num_fast(e) {
                    Some(x) => Value::Num(x),
                    None => self.eval(e)?,
                };
                let key = self.eval_fast(k)?;
                self.set_index(*slot, key, v)?;
            }
            StmtKind::IncVar(slot, op, k) => {
                self.step(s.pos)?;
                if let Value::Num(a) = self.slot_mut(*slot) {
                    let r = if *op == BinOp::Add { *a + *k } else { *a - *k };
                    if r.is_finite() {
                        *a = r;
                        return Ok(Flow::Normal);
                    }
                }
                self.compound_var(*slot, *op, Value::Num(*k))?;
            }
            StmtKind::CompoundVar(slot, op, e) => {
                self.step(s.pos)?;
                if let Some(k) = self.num_fast(e) {
                    if let Value::Num(a) = self.slot_mut(*slot) {
                        if let Some(r) = arith(*op, *a, k) {
                            *a = r;
                            return Ok(Flow::Normal);
                        }
                    }
                    self.compound_var(*slot, *op, Value::Num(k))?;
                } else {
                    let v = self.eval_fast(e)?;
                    self.compound_var(*slot, *op, v)?;
                }
            }
            StmtKind::Expr(e) => {
                self.step(s.pos)?;
                self.eval(e)?;
            }
            StmtKind::If(arms, else_body) => {
                for arm in arms.iter() {
                    self.step(arm.pos)?;
                    if self.cond(&arm.cond).map_err(|e| located(e, arm.pos))? {
                        return self.exec_block(&arm.body);
                    }
                }
                if let Some(b) = else_body {
                    return self.exec_block(b);
                }
            }
            StmtKind::While(cond, body) => {
                self.step(s.pos)?;
                while self.cond(cond)? {
                    match self.exec_block(body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        _ => {}
                    }
                    self.step(s.pos)?;
                }
            }
            StmtKind::ForRange(f) => {
                let ForRange { var, start, end, step, body } = &**f;
                self.step(s.pos)?;
                return self.for_range(s.pos, *var, start, end, step.as_ref(), body);
            }
            StmtKind::Break => {
                self.step(s.pos)?;
                return Ok(Flow::Break);
            }
            StmtKind::Continue => {
                self.step(s.pos)?;
                return Ok(Flow::Continue);
            }
            StmtKind::Return(e) => {
                self.step(s.pos)?;
                self.ret = match e {
                    Some(e) => match self.num_fast(e) {
                        Some(x) => Value::Num(x),
                        None => self.eval_fast(e)?,
                    },
                    None => Value::Nil,
                };
                return Ok(Flow::Return);
            }
            StmtKind::Block(b) => return self.exec_block(b),
            _ => return self.exec_cold(s),
        }
        Ok(Flow::Normal)
    }

    /// The statements that are rarely on a hot path, kept out of `exec` so that it stays
    /// small.
    #[inline(never)]
    fn exec_cold(&mut self, s: &'p Stmt) -> R<Flow> {
        match &s.kind {
            StmtKind::Assign(place, e) => {
                self.step(s.pos)?;
                let v = self.eval(e)?;
                self.assign(place, v)?;
            }
            StmtKind::MultiAssign(places, values) => {
                self.step(s.pos)?;
                self.multi_assign(places, values)?;
            }
            StmtKind::Compound(place, op, e) => {
                self.step(s.pos)?;
                let v = self.eval(e)?;
                self.compound(place, *op, v)?;
            }
            StmtKind::ForIn(f) => {
                let ForIn { first, second, iter, body } = &**f;
                self.step(s.pos)?;
                return self.for_in(s.pos, *first, *second, iter, body);
            }
            StmtKind::Throw(e) => {
                self.step(s.pos)?;
                let v = self.eval(e)?;
                return Err(self.thrown(v, s.pos));
            }
            StmtKind::Try { body, var, handler } => {
                self.step(s.pos)?;
                match self.exec_block(body) {
                    Ok(f) => return Ok(f),
                    Err(u) => match *u {
                        Unwind::Error(e) => {
                            let m = self.error_value(e)?;
                            self.store(*var, m)?;
                            return self.exec_block(handler);
                        }
                        other => return Err(Box::new(other)),
                    },
                }
            }
            _ => unreachable!("hot statements are run by exec"),
        }
        Ok(Flow::Normal)
    }

    /// `a, b = x, y`: every value first, then each target left to right; `a, b = e`:
    /// `e` must be a list of exactly as many items as there are targets.
    fn multi_assign(&mut self, places: &'p [Place], values: &'p [Expr]) -> R<()> {
        let vals: Vec<Value> = if values.len() == 1 {
            let v = self.eval(&values[0])?;
            self.unpack(&v, places.len())?
        } else {
            let mut vals = Vec::with_capacity(values.len());
            for e in values {
                vals.push(self.eval(e)?);
            }
            vals
        };
        for (p, v) in places.iter().zip(vals) {
            if p.path.is_empty() {
                self.store(p.root, v)?;
            } else {
                self.assign(p, v)?;
            }
        }
        self.host.check_memory()
    }

    /// The error `throw v` raises on the line at `pos` (both evaluators).
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

    fn loop_body(&mut self, body: &'p [Stmt]) -> R<Option<Flow>> {
        Ok(match self.exec_block(body)? {
            Flow::Break => Some(Flow::Normal),
            Flow::Return => Some(Flow::Return),
            _ => None,
        })
    }

    fn for_range(
        &mut self,
        pos: Pos,
        var: Slot,
        start: &'p Expr,
        end: &'p Expr,
        step: Option<&'p Expr>,
        body: &'p [Stmt],
    ) -> R<Flow> {
        let a = self.eval(start)?;
        let b = self.eval(end)?;
        let st = match step {
            Some(e) => self.eval(e)?,
            None => Value::Num(1.0),
        };
        let (Value::Num(a), Value::Num(b), Value::Num(st)) = (&a, &b, &st) else {
            let bad = [&a, &b, &st].into_iter().find(|v| !matches!(v, Value::Num(_))).map(|v| v.type_name());
            return Err(self.err(ErrKind::Type, format!("for bounds must be numbers, got {}", bad.unwrap_or("?"))));
        };
        let (a, b, st) = (*a, *b, *st);
        if st == 0.0 {
            return Err(self.err(ErrKind::Value, "for step must not be 0"));
        }
        let mut k: f64 = 0.0;
        loop {
            let mut i = a + k * st;
            if !i.is_finite() {
                // `k * st` may overflow where `a + k * st` does not (1e308 to -1e308 step
                // -1e308): the same sum at half scale, off the hot path.
                i = range_term_wide(a, k, st);
                if !i.is_finite() {
                    break;
                }
            }
            if (st > 0.0 && i > b) || (st < 0.0 && i < b) {
                break;
            }
            match self.slot_mut(var) {
                Value::Num(n) => *n = i,
                _ => self.store(var, Value::Num(i))?,
            }
            if let Some(f) = self.loop_body(body)? {
                return Ok(f);
            }
            k += 1.0;
            self.step(pos)?;
        }
        Ok(Flow::Normal)
    }

    fn for_in(&mut self, pos: Pos, first: Slot, second: Option<Slot>, iter: &'p Expr, body: &'p [Stmt]) -> R<Flow> {
        let snap = self.eval(iter)?;
        if !matches!(snap, Value::List(_) | Value::Map(_)) {
            return Err(self.err(ErrKind::Type, format!("for ... in needs a list or map, got {}", snap.type_name())));
        }
        // The snapshot is held by this frame while the loop runs.
        let cost = (ACCT_SNAPSHOT + snap.heap()) as isize;
        self.charge(false, cost)?;
        let r = self.for_in_loop(pos, first, second, &snap, body);
        self.charge(false, -cost)?;
        r
    }

    fn for_in_loop(&mut self, pos: Pos, first: Slot, second: Option<Slot>, snap: &Value, body: &'p [Stmt]) -> R<Flow> {
        let n = match snap {
            Value::List(l) => l.len(),
            Value::Map(m) => m.len(),
            _ => 0,
        };
        for i in 0..n {
            match snap {
                Value::List(l) => {
                    let item = l.items()[i].clone();
                    match second {
                        None => self.store(first, item)?,
                        Some(s2) => {
                            self.store(first, Value::Num(i as f64))?;
                            self.store(s2, item)?;
                        }
                    }
                }
                Value::Map(m) => {
                    let (k, v) = m.get_index(i).expect("index in range");
                    let (k, v) = (Value::Str(k.clone()), v.clone());
                    self.store(first, k)?;
                    if let Some(s2) = second {
                        self.store(s2, v)?;
                    }
                }
                _ => {}
            }
            if let Some(f) = self.loop_body(body)? {
                return Ok(f);
            }
            self.step(pos)?;
        }
        Ok(Flow::Normal)
    }

    // ------------------------------------------------------------------
    // Places
    // ------------------------------------------------------------------

    fn eval_keys(&mut self, path: &'p [Expr]) -> R<SmallVec<[Value; 4]>> {
        let mut keys = SmallVec::new();
        for k in path {
            keys.push(self.eval(k)?);
        }
        Ok(keys)
    }

    fn map_key<'k>(&self, k: &'k Value) -> R<&'k [u8]> {
        match k {
            Value::Str(s) => Ok(s),
            other => Err(self.err(ErrKind::Type, format!("map keys are strings, got {}", other.type_name()))),
        }
    }

    fn missing_key(&self, k: &[u8]) -> Fail {
        self.err(ErrKind::Key, format!("key {} not found", crate::diag::quoted(k)))
    }

    /// A field `m.k` that is not there: the key error, with a help line naming the
    /// nearest key of a small map (`opts.ignore_case` for `--ignore-case`: the same
    /// name but for case and `-`/`_`, else an edit distance of at most a third of the
    /// name). Maps of more than 64 keys and names over 64 bytes get no search; the
    /// comparison is charged as work (a unit per byte pair).
    #[cold]
    fn missing_field(&mut self, k: &[u8], m: &crate::value::Map) -> Fail {
        let mut e = self.missing_key(k);
        if m.len() > 64 || k.len() > 64 {
            return e;
        }
        let norm = |x: &[u8]| -> Vec<u8> {
            x.iter().map(|c| if *c == b'-' { b'_' } else { c.to_ascii_lowercase() }).collect()
        };
        let q = norm(k);
        let mut cells = 0u64;
        let mut best: Option<(usize, &[u8])> = None;
        for (key, _) in m.iter() {
            if key.len() > 64 {
                continue;
            }
            let c = norm(key);
            cells += (q.len() * c.len()) as u64 + c.len() as u64;
            let d = if c == q { 0 } else { crate::builtins::date::distance(&q, &c) };
            if d <= if q.len() >= 4 { (q.len() / 3).max(2) } else { 1 } && best.is_none_or(|(b, _)| d < b) {
                best = Some((d, key));
            }
        }
        if let Some((_, key)) = best {
            if let Unwind::Error(r) = &mut *e {
                r.help = Some(format!("did you mean \"{}\"?", String::from_utf8_lossy(key)));
            }
        }
        if let Err(limit) = self.host.work(cells) {
            return limit;
        }
        e
    }

    /// Walk `keys` into `v` (copying shared containers on the way) and apply `leaf` to
    /// the value found. Accounting inside containers is kept by `with_item`/`with_value`.
    fn nav_mut(
        &mut self,
        v: &mut Value,
        keys: &[Value],
        leaf: &mut dyn FnMut(&mut Self, &mut Value) -> R<Value>,
    ) -> R<Value> {
        let Some((k, rest)) = keys.split_first() else {
            return leaf(self, v);
        };
        match v {
            Value::List(rc) => {
                let i = self.host.index(k, rc.len())?;
                self.host.cow(rc)?;
                Rc::make_mut(rc).with_item(i, |item| self.nav_mut(item, rest, leaf))
            }
            Value::Map(rc) => {
                let key = self.map_key(k)?;
                if !rc.contains(key) {
                    return Err(self.missing_key(key));
                }
                self.host.cow(rc)?;
                Rc::make_mut(rc).with_value(key, |item| self.nav_mut(item, rest, leaf)).expect("key present")
            }
            other => Err(self.err(ErrKind::Type, format!("cannot index a {}", other.type_name()))),
        }
    }

    /// Change the value at `place` through `leaf`, charging the change of storage.
    fn modify_place(
        &mut self,
        root: Slot,
        keys: &[Value],
        leaf: &mut dyn FnMut(&mut Self, &mut Value) -> R<Value>,
    ) -> R<Value> {
        if matches!(self.slot_mut(root), Value::Unset) {
            return Err(self.unset(root));
        }
        let mut v = std::mem::take(self.slot_mut(root));
        let before = v.heap() as isize;
        let r = self.nav_mut(&mut v, keys, leaf);
        let after = v.heap() as isize;
        *self.slot_mut(root) = v;
        self.charge(matches!(root, Slot::Global(_)), after - before)?;
        r
    }

    /// `x[k] = v` on a variable holding a list or map.
    fn set_index(&mut self, slot: Slot, key: Value, v: Value) -> R<()> {
        let mut cur = std::mem::take(self.slot_mut(slot));
        let before = cur.heap() as isize;
        let r = match &mut cur {
            Value::Map(rc) => match key {
                Value::Str(k) => {
                    if let Err(e) = self.host.work(key_work(k.len())) {
                        *self.slot_mut(slot) = cur;
                        return Err(e);
                    }
                    if rc.len() >= self.host.lim.n(L::Map) && !rc.contains(&k) {
                        Err(self.limit(
                            LimitKind::Map,
                            format!(
                                "map of more than {max_map_entries} entries",
                                max_map_entries = self.host.lim.n(L::Map)
                            ),
                        ))
                    } else {
                        self.host.cow(rc).map(|_| {
                            Rc::make_mut(rc).insert(k, v);
                        })
                    }
                }
                other => Err(self.err(ErrKind::Type, format!("map keys are strings, got {}", other.type_name()))),
            },
            Value::List(rc) => match self.host.index(&key, rc.len()) {
                Ok(i) => self.host.cow(rc).map(|_| {
                    Rc::make_mut(rc).set(i, v);
                }),
                Err(e) => Err(e),
            },
            Value::Unset => Err(self.unset(slot)),
            other => Err(self.err(ErrKind::Type, format!("cannot assign into a {}", other.type_name()))),
        };
        let after = cur.heap() as isize;
        *self.slot_mut(slot) = cur;
        r?;
        self.charge(matches!(slot, Slot::Global(_)), after - before)
    }

    fn assign(&mut self, place: &'p Place, v: Value) -> R<()> {
        let keys = self.eval_keys(&place.path)?;
        self.assign_keys(place.root, &keys, v)
    }

    /// `PLACE = v` with the place's keys evaluated.
    fn assign_keys(&mut self, root: Slot, keys: &[Value], v: Value) -> R<()> {
        let (last, parents) = keys.split_last().expect("a place with a path");
        let mut v = Some(v);
        self.modify_place(root, parents, &mut |this, container| {
            let v = v.take().unwrap_or(Value::Nil);
            match container {
                Value::List(rc) => {
                    let i = this.host.index(last, rc.len())?;
                    this.host.cow(rc)?;
                    Rc::make_mut(rc).set(i, v);
                }
                Value::Map(rc) => {
                    let key = this.map_key(last)?;
                    if !rc.contains(key) {
                        this.host.check_map_len(rc.len() + 1)?;
                    }
                    let key = match last {
                        Value::Str(s) => s.clone(),
                        _ => unreachable!(),
                    };
                    this.host.cow(rc)?;
                    Rc::make_mut(rc).insert(key, v);
                }
                other => {
                    return Err(this.err(ErrKind::Type, format!("cannot assign into a {}", other.type_name())));
                }
            }
            Ok(Value::Nil)
        })?;
        Ok(())
    }

    /// `x op= v` on a variable: numbers and unshared strings change in place.
    fn compound_var(&mut self, slot: Slot, op: BinOp, rhs: Value) -> R<()> {
        let cur = self.slot_mut(slot);
        if let (Value::Num(a), Value::Num(b)) = (&mut *cur, &rhs) {
            let r = match op {
                BinOp::Add => *a + *b,
                BinOp::Sub => *a - *b,
                BinOp::Mul => *a * *b,
                _ => f64::NAN,
            };
            if r.is_finite() {
                *a = r;
                return Ok(());
            }
        }
        match cur {
            Value::Unset => Err(self.unset(slot)),
            Value::Str(_) if op == BinOp::Concat => {
                let Value::Str(mut rc) = std::mem::take(self.slot_mut(slot)) else { unreachable!() };
                let before = str_heap(&rc);
                let r = self.append_str(&mut rc, &rhs);
                let after = str_heap(&rc);
                *self.slot_mut(slot) = Value::Str(rc);
                r?;
                self.charge(matches!(slot, Slot::Global(_)), after as isize - before as isize)
            }
            _ => {
                let old = cur.clone();
                let v = self.binop(op, old, rhs)?;
                self.store(slot, v)
            }
        }
    }

    fn compound(&mut self, place: &'p Place, op: BinOp, rhs: Value) -> R<()> {
        let keys = self.eval_keys(&place.path)?;
        self.compound_keys(place.root, &keys, op, rhs)
    }

    /// `PLACE op= v` with the place's keys evaluated.
    fn compound_keys(&mut self, root: Slot, keys: &[Value], op: BinOp, rhs: Value) -> R<()> {
        let mut rhs = Some(rhs);
        self.modify_place(root, keys, &mut |this, cur| {
            let rhs = rhs.take().unwrap_or(Value::Nil);
            if op == BinOp::Concat {
                if let Value::Str(rc) = cur {
                    return this.append_str(rc, &rhs).map(|_| Value::Nil);
                }
            }
            let old = std::mem::take(cur);
            match this.binop(op, old.clone(), rhs) {
                Ok(v) => {
                    *cur = v;
                    Ok(Value::Nil)
                }
                Err(e) => {
                    *cur = old;
                    Err(e)
                }
            }
        })?;
        Ok(())
    }

    /// `s ..= v` on a string: in place when the string is not shared.
    fn append_str(&mut self, rc: &mut Bytes, v: &Value) -> R<()> {
        self.host.cow(rc)?;
        match v {
            Value::Str(t) => {
                self.host.check_str_len(rc.len() + t.len())?;
                self.host.work(concat_work(t.len()))?;
                let s = Rc::make_mut(rc);
                reserve_str(s, t.len());
                s.extend_from_slice(t);
            }
            Value::Num(n) => {
                let mut tmp = Vec::with_capacity(24);
                fmt_num(*n, &mut tmp);
                self.host.check_str_len(rc.len() + tmp.len())?;
                self.host.work(concat_work(tmp.len()))?;
                let s = Rc::make_mut(rc);
                reserve_str(s, tmp.len());
                s.extend_from_slice(&tmp);
            }
            other => {
                let t = self.host.to_text(other, self.host.lim.n(L::String))?;
                self.host.check_str_len(rc.len() + t.len())?;
                self.host.work(concat_work(t.len()))?;
                let s = Rc::make_mut(rc);
                reserve_str(s, t.len());
                s.extend_from_slice(&t);
            }
        }
        Ok(())
    }

    // ------------------------------------------------------------------
    // Expressions
    // ------------------------------------------------------------------

    /// A number operation on two numbers (the fast path of arithmetic and comparison).
    #[inline(always)]
    fn num_op(&mut self, op: BinOp, p: f64, q: f64) -> R<Value> {
        let r = match op {
            BinOp::Add => p + q,
            BinOp::Sub => p - q,
            BinOp::Mul => p * q,
            BinOp::Lt => return Ok(Value::Bool(p < q)),
            BinOp::Le => return Ok(Value::Bool(p <= q)),
            BinOp::Gt => return Ok(Value::Bool(p > q)),
            BinOp::Ge => return Ok(Value::Bool(p >= q)),
            BinOp::Eq => return Ok(Value::Bool(p == q)),
            BinOp::Ne => return Ok(Value::Bool(p != q)),
            BinOp::Mod => match int_mod(p, q) {
                Some(r) => r,
                None => return self.binop(op, Value::Num(p), Value::Num(q)),
            },
            _ => return self.binop(op, Value::Num(p), Value::Num(q)),
        };
        if r.is_finite() {
            Ok(Value::Num(r))
        } else {
            Err(self.err(ErrKind::Arith, "arithmetic overflow"))
        }
    }

    #[inline(always)]
    fn opnd_num(&self, o: Opnd) -> Option<f64> {
        let v = match o {
            Opnd::Num(n) => return Some(n),
            Opnd::Local(i) => &self.stack[self.base + i as usize],
            Opnd::Global(i) => &self.globals[i as usize],
        };
        match v {
            Value::Num(n) => Some(*n),
            _ => None,
        }
    }

    fn opnd_val(&self, o: Opnd) -> R<Value> {
        let (v, slot) = match o {
            Opnd::Num(n) => return Ok(Value::Num(n)),
            Opnd::Local(i) => (&self.stack[self.base + i as usize], Slot::Local(i)),
            Opnd::Global(i) => (&self.globals[i as usize], Slot::Global(i)),
        };
        if let Value::Unset = v {
            return Err(self.unset(slot));
        }
        Ok(v.clone())
    }

    /// Evaluate a condition to its truth, without building a bool value where possible.
    #[inline(always)]
    fn cond(&mut self, e: &'p Expr) -> R<bool> {
        let operands = match e {
            Expr::BinS(op, _, a, b) => self.opnd_num(*a).zip(self.opnd_num(*b)).map(|p| (op, p)),
            Expr::BinK(op, _, a, k) => self.num_leaf(a).map(|x| (op, (x, *k))),
            _ => None,
        };
        if let Some((op, (x, y))) = operands {
            {
                match op {
                    BinOp::Lt => return Ok(x < y),
                    BinOp::Le => return Ok(x <= y),
                    BinOp::Gt => return Ok(x > y),
                    BinOp::Ge => return Ok(x >= y),
                    BinOp::Eq => return Ok(x == y),
                    BinOp::Ne => return Ok(x != y),
                    _ => {}
                }
            }
        }
        self.cond_slow(e)
    }

    #[inline(never)]
    fn cond_slow(&mut self, e: &'p Expr) -> R<bool> {
        // `x == y` and `x != y` on variables and constants (`status == "404"`,
        // `line != nil`): compared where they are, without copying either out; the same
        // comparison and work charge as `binop`.
        if let Expr::Bin(op @ (BinOp::Eq | BinOp::Ne), _, a, b) = e {
            if let (Some(x), Some(y)) = (self.direct(a), self.direct(b)) {
                let mut n = EqCount::default();
                let same = equals_counted(x, y, &mut n);
                self.host.work(n.units())?;
                return Ok(same == (*op == BinOp::Eq));
            }
        }
        Ok(self.eval(e)?.truthy())
    }

    /// The number an expression gives when that is cheap to find without building a
    /// value: a constant, a variable holding a number, or arithmetic on two of those.
    /// Returning the bare f64 (in a register) instead of a `Value` (in memory) avoids
    /// store-forwarding stalls on the hottest paths. None means: use `eval`.
    #[inline(always)]
    fn num_fast(&self, e: &Expr) -> Option<f64> {
        match e {
            Expr::BinK(op, _, a, k) => arith(*op, self.num_leaf(a)?, *k),
            _ => self.num_leaf(e),
        }
    }

    #[inline(always)]
    fn num_leaf(&self, e: &Expr) -> Option<f64> {
        match e {
            Expr::Const(Value::Num(n)) => Some(*n),
            Expr::Local(i, _) => match &self.stack[self.base + *i as usize] {
                Value::Num(n) => Some(*n),
                _ => None,
            },
            Expr::Global(i, _) => match &self.globals[*i as usize] {
                Value::Num(n) => Some(*n),
                _ => None,
            },
            Expr::BinS(op, _, a, b) => arith(*op, self.opnd_num(*a)?, self.opnd_num(*b)?),
            _ => None,
        }
    }

    /// `eval` with the simplest nodes done in place, without the recursive call.
    #[inline(always)]
    fn eval_fast(&mut self, e: &'p Expr) -> R<Value> {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Global(i, sp) => {
                let v = &self.globals[*i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Global(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::Local(i, sp) => {
                let v = &self.stack[self.base + *i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Local(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::BinS(op, sp, a, b) => {
                if let (Some(x), Some(y)) = (self.opnd_num(*a), self.opnd_num(*b)) {
                    return self.num_op(*op, x, y).map_err(|f| spotted(f, *sp));
                }
                self.eval(e)
            }
            _ => self.eval(e),
        }
    }

    pub fn eval(&mut self, e: &'p Expr) -> R<Value> {
        match e {
            Expr::Const(v) => Ok(v.clone()),
            Expr::Local(i, sp) => {
                let v = &self.stack[self.base + *i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Local(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::Global(i, sp) => {
                let v = &self.globals[*i as usize];
                if let Value::Unset = v {
                    return Err(self.unset_at(Slot::Global(*i), *sp));
                }
                Ok(v.clone())
            }
            Expr::BinS(op, sp, a, b) => {
                if let (Some(x), Some(y)) = (self.opnd_num(*a), self.opnd_num(*b)) {
                    return self.num_op(*op, x, y).map_err(|f| spotted(f, *sp));
                }
                let x = self.opnd_val(*a)?;
                let y = self.opnd_val(*b)?;
                self.binop(*op, x, y).map_err(|f| spotted(f, *sp))
            }
            Expr::BinK(op, sp, a, k) => {
                let x = self.eval_fast(a)?;
                if let Value::Num(p) = x {
                    return self.num_op(*op, p, *k).map_err(|f| spotted(f, *sp));
                }
                self.binop(*op, x, Value::Num(*k)).map_err(|f| spotted(f, *sp))
            }
            Expr::Bin(op, sp, a, b) => {
                let x = match self.num_fast(a) {
                    Some(n) => Value::Num(n),
                    None => self.eval_fast(a)?,
                };
                let y = match self.num_fast(b) {
                    Some(n) => Value::Num(n),
                    None => self.eval_fast(b)?,
                };
                if let (Value::Num(p), Value::Num(q)) = (&x, &y) {
                    return self.num_op(*op, *p, *q).map_err(|f| spotted(f, *sp));
                }
                self.binop(*op, x, y).map_err(|f| spotted(f, *sp))
            }
            Expr::Call(f, args) => self.call(*f as usize, args),
            Expr::Builtin(b, args, sp) => self.call_builtin(b, args).map_err(|f| spotted(f, *sp)),
            Expr::MapGet(b, args, sp) => self.map_get(b, args).map_err(|f| spotted(f, *sp)),
            Expr::And(a, b) => {
                let x = self.eval(a)?;
                if !x.truthy() {
                    return Ok(x);
                }
                self.eval(b)
            }
            Expr::Or(a, b) => {
                let x = self.eval(a)?;
                if x.truthy() {
                    return Ok(x);
                }
                self.eval(b)
            }
            Expr::Not(a) => Ok(Value::Bool(!self.eval(a)?.truthy())),
            _ => self.eval_cold(e),
        }
    }

    /// Expressions off the arithmetic fast path, kept out of `eval` so that it stays small.
    #[inline(never)]
    fn eval_cold(&mut self, e: &'p Expr) -> R<Value> {
        match e {
            Expr::BuiltinPlace(sp, b, place, args) => {
                self.call_builtin_place(b, place, args).map_err(|f| spotted(f, *sp))
            }
            Expr::Neg(a, sp) => match self.eval(a)? {
                Value::Num(n) => Ok(Value::Num(-n)),
                other => Err(spotted(self.err(ErrKind::Type, format!("cannot negate a {}", other.type_name())), *sp)),
            },
            Expr::Index(a, i, sp) => {
                // `m[5]` on a variable: read in place, without copying the list out.
                if let Some(k) = self.num_fast(i) {
                    if let Some(x) = self.direct(a) {
                        return self.index_value(x, &Value::Num(k)).map_err(|f| spotted(f, *sp));
                    }
                }
                let x = self.eval(a)?;
                let k = self.eval(i)?;
                if let (Value::Map(_), Value::Str(s)) = (&x, &k) {
                    self.host.work(key_work(s.len())).map_err(|f| spotted(f, *sp))?;
                }
                self.index_value(&x, &k).map_err(|f| spotted(f, *sp))
            }
            Expr::Field(a, name, sp) => {
                let x = self.eval(a)?;
                match &x {
                    Value::Map(m) => match m.get(name) {
                        Some(v) => Ok(v.clone()),
                        None => Err(spotted(self.missing_field(name, m), *sp)),
                    },
                    other => Err(spotted(
                        self.err(
                            ErrKind::Type,
                            format!("cannot read field `{}` of a {}", String::from_utf8_lossy(name), other.type_name()),
                        ),
                        *sp,
                    )),
                }
            }
            Expr::List(items) => {
                let mut v = Vec::with_capacity(items.len());
                for it in items.iter() {
                    v.push(self.eval(it)?);
                }
                let l = self.host.make_list(v)?;
                self.host.check_memory()?;
                Ok(l)
            }
            Expr::Map(items) => {
                let mut m = Map::with_capacity(items.len());
                for (k, it) in items.iter() {
                    let v = self.eval(it)?;
                    m.insert(k.clone(), v);
                }
                let v = self.host.make_map(m)?;
                self.host.check_memory()?;
                Ok(v)
            }
            Expr::Interp(parts) => {
                let mut out = Vec::new();
                for p in parts {
                    match p {
                        IPart::Lit(b) => out.extend_from_slice(b),
                        IPart::Expr(e) => {
                            let v = self.eval(e)?;
                            self.host.write_text(&v, &mut out, self.host.lim.n(L::String))?;
                        }
                    }
                    self.host.check_str_len(out.len())?;
                    self.host.check_memory_after(out.len())?;
                }
                self.host.work(WORK_CONCAT_BASE + crate::meter::scaled(out.len() as u64, WORK_INTERP_BYTE_X256))?;
                Ok(Value::str(out))
            }
            Expr::Cond(a, c, b) => {
                if self.cond(c)? {
                    self.eval(a)
                } else {
                    self.eval(b)
                }
            }
            Expr::WithLambdas(call) => {
                let mark = self.lambdas.len();
                let r = self.eval(call);
                self.lambdas.truncate(mark);
                r
            }
            Expr::Lambda(fi, caps) => {
                let mut vals = Vec::with_capacity(caps.len());
                for c in caps.iter() {
                    vals.push(self.eval_fast(c)?);
                }
                let id = self.lambdas.len() as u32;
                self.lambdas.push((*fi, vals.into_boxed_slice()));
                Ok(Value::Handle(crate::value::Handle { kind: crate::value::HandleKind::Lambda, id }))
            }
            _ => unreachable!("hot expressions are evaluated by eval"),
        }
    }

    pub fn index_value(&self, x: &Value, k: &Value) -> R<Value> {
        match x {
            Value::List(l) => {
                let i = self.host.index(k, l.len())?;
                Ok(l.items()[i].clone())
            }
            Value::Map(m) => {
                let key = self.map_key(k)?;
                match m.get(key) {
                    Some(v) => Ok(v.clone()),
                    None => Err(self.missing_key(key)),
                }
            }
            Value::Str(s) => {
                let i = self.host.index(k, s.len())?;
                Ok(Value::str(vec![s[i]]))
            }
            other => Err(self.err(ErrKind::Type, format!("cannot index a {}", other.type_name()))),
        }
    }

    /// Binary operators (SPEC 3).
    #[inline(never)]
    pub fn binop(&mut self, op: BinOp, x: Value, y: Value) -> R<Value> {
        use BinOp::*;
        match op {
            Add | Sub | Mul | Div | FloorDiv | Mod | Pow => {
                let (Value::Num(a), Value::Num(b)) = (&x, &y) else {
                    return Err(self.err(
                        ErrKind::Type,
                        format!(
                            "operands of {} must be numbers, got {} and {}",
                            op.symbol(),
                            x.type_name(),
                            y.type_name()
                        ),
                    ));
                };
                let (a, b) = (*a, *b);
                let r = match op {
                    Add => a + b,
                    Sub => a - b,
                    Mul => a * b,
                    Div => {
                        if b == 0.0 {
                            return Err(self.err(ErrKind::Arith, "division by zero"));
                        }
                        a / b
                    }
                    FloorDiv => {
                        if b == 0.0 {
                            return Err(self.err(ErrKind::Arith, "division by zero"));
                        }
                        floor_div(a, b)
                    }
                    Mod => {
                        if b == 0.0 {
                            return Err(self.err(ErrKind::Arith, "modulo by zero"));
                        }
                        if let Some(r) = int_mod(a, b) {
                            return Ok(Value::Num(r));
                        }
                        let r = a % b;
                        if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                            r + b
                        } else {
                            r
                        }
                    }
                    _ => a.powf(b),
                };
                if r.is_finite() {
                    Ok(Value::Num(r))
                } else if r.is_nan() {
                    Err(self.err(ErrKind::Arith, format!("result of {} is not a number", op.symbol())))
                } else {
                    Err(self.err(ErrKind::Arith, "arithmetic overflow"))
                }
            }
            Concat => self.host.concat(&x, &y),
            Eq | Ne => {
                let mut n = EqCount::default();
                let same = equals_counted(&x, &y, &mut n);
                self.host.work(n.units())?;
                Ok(Value::Bool(same == (op == Eq)))
            }
            Lt | Le | Gt | Ge => {
                let ord = match (&x, &y) {
                    (Value::Num(a), Value::Num(b)) => a.partial_cmp(b),
                    (Value::Str(a), Value::Str(b)) => {
                        let (o, touched) = crate::value::cmp_touched(a, b);
                        self.host.work(crate::meter::scaled(touched as u64, WORK_EQ_BYTE_X256))?;
                        Some(o)
                    }
                    _ => {
                        return Err(self.err(
                            ErrKind::Type,
                            format!("cannot compare {} with {} using {}", x.type_name(), y.type_name(), op.symbol()),
                        ))
                    }
                };
                let Some(o) = ord else { return Ok(Value::Bool(false)) };
                use std::cmp::Ordering::*;
                Ok(Value::Bool(match op {
                    Lt => o == Less,
                    Le => o != Greater,
                    Gt => o == Greater,
                    _ => o != Less,
                }))
            }
            In | NotIn => {
                let found = match &y {
                    Value::List(l) => {
                        let mut n = EqCount::default();
                        let found = l.items().iter().any(|v| equals_counted(v, &x, &mut n));
                        self.host.work(n.units())?;
                        found
                    }
                    Value::Map(m) => match &x {
                        Value::Str(k) => {
                            self.host.work(crate::meter::scaled(k.len() as u64, WORK_EQ_BYTE_X256))?;
                            m.contains(k)
                        }
                        _ => false,
                    },
                    Value::Str(s) => match &x {
                        Value::Str(sub) => {
                            self.host.work(find_work(s.len(), sub.len()))?;
                            find_bytes(s, sub).is_some()
                        }
                        other => {
                            return Err(self.err(
                                ErrKind::Type,
                                format!("`in` a string needs a string on the left, got {}", other.type_name()),
                            ))
                        }
                    },
                    other => {
                        return Err(self.err(
                            ErrKind::Type,
                            format!("`in` needs a list, map or string on the right, got {}", other.type_name()),
                        ))
                    }
                };
                Ok(Value::Bool(found == (op == In)))
            }
        }
    }

    // ------------------------------------------------------------------
    // Calls
    // ------------------------------------------------------------------

    #[inline(never)]
    fn call(&mut self, fi: usize, args: &'p [Expr]) -> R<Value> {
        let prog = self.prog;
        let f = &prog.funcs[fi];
        let new_base = self.stack.len();
        let mut arg_heap = 0usize;
        for a in args {
            if let Some(x) = self.num_fast(a) {
                self.stack.push(Value::Num(x));
                continue;
            }
            let v = self.eval_fast(a);
            self.push_arg(f, new_base, &mut arg_heap, v)?;
        }
        self.enter(fi, f, args.len(), new_base, arg_heap)
    }

    /// Push one evaluated argument of a call of `f` into the new frame at `new_base`
    /// (both evaluators): `call_args` is checked while collecting, so that no call holds
    /// much past the limit; on a failure the arguments pushed so far are dropped.
    #[inline(always)]
    pub(crate) fn push_arg(&mut self, f: &Function, new_base: usize, arg_heap: &mut usize, v: R<Value>) -> R<()> {
        match v {
            Ok(v) => {
                *arg_heap += v.heap();
                self.stack.push(v);
                if *arg_heap > self.host.lim.n(L::CallArgs) {
                    self.stack.truncate(new_base);
                    return Err(self.call_refused(f, *arg_heap));
                }
                Ok(())
            }
            Err(e) => {
                self.stack.truncate(new_base);
                Err(e)
            }
        }
    }

    /// Call user function `fi` with `args` from a builtin (a function argument, SPEC 10):
    /// an ordinary call, through the same path as a call in the source (call depth,
    /// argument and frame storage, steps and work of its lines, the profile's stacks);
    /// the arguments are copies (copy-on-write) the callee cannot change for the caller.
    /// Each call is charged `WORK_CALLBACK` work first (in `enter`, as every call is).
    /// An anonymous function's captured values follow its arguments (its frame's slots
    /// after its parameters), copies like the arguments.
    pub fn call_fn(&mut self, fr: crate::builtins::FnRef, args: &mut [Value]) -> R<Value> {
        let new_base = self.stack.len();
        let mut arg_heap = 0usize;
        let n = args.len();
        for v in args {
            arg_heap += v.heap();
            self.stack.push(std::mem::take(v));
        }
        let (fi, nargs) = match fr {
            crate::builtins::FnRef::Named(fi) => (fi, n),
            crate::builtins::FnRef::Lambda(li) => {
                let (fi, caps) = &self.lambdas[li];
                for v in caps.iter() {
                    arg_heap += v.heap();
                    self.stack.push(v.clone());
                }
                (*fi as usize, n + caps.len())
            }
        };
        let prog = self.prog;
        let f = &prog.funcs[fi];
        if arg_heap > self.host.lim.n(L::CallArgs) {
            self.stack.truncate(new_base);
            return Err(self.call_refused(f, arg_heap));
        }
        self.enter(fi, f, nargs, new_base, arg_heap)
    }

    /// Run user function `fi` whose arguments are on the stack from `new_base`.
    #[inline(always)]
    fn enter(&mut self, fi: usize, f: &'p Function, nargs: usize, new_base: usize, arg_heap: usize) -> R<Value> {
        let saved = self.frame_open(fi, f, nargs, new_base, arg_heap)?;
        let r = self.run_body(fi);
        self.frame_close(new_base, saved);
        match r? {
            Flow::Return => Ok(self.take_ret()),
            _ => Ok(Value::Nil),
        }
    }

    /// The value of the `return` just carried out.
    #[inline(always)]
    pub(crate) fn take_ret(&mut self) -> Value {
        match self.ret {
            // Rebuilt rather than moved: see `num_fast`.
            Value::Num(n) => Value::Num(n),
            _ => std::mem::take(&mut self.ret),
        }
    }

    /// Open the frame of a call of user function `fi` whose arguments are on the stack
    /// from `new_base` (`frame_enter`), its other slots unset. On failure nothing is
    /// left open (the arguments are gone). The value returned is what `frame_close`
    /// restores.
    #[inline(always)]
    pub(crate) fn frame_open(
        &mut self,
        fi: usize,
        f: &'p Function,
        nargs: usize,
        new_base: usize,
        arg_heap: usize,
    ) -> R<Saved> {
        match self.frame_enter(fi, f, nargs, new_base, arg_heap) {
            Ok(saved) => {
                let nslots = f.slot_names.len();
                if nslots > nargs && !self.compiled {
                    self.stack.resize(new_base + nslots, Value::Unset);
                }
                Ok(saved)
            }
            Err(e) => {
                self.stack.truncate(new_base);
                Err(e)
            }
        }
    }

    /// Close the frame `frame_open` opened: its storage released, its values dropped,
    /// the caller's frame back.
    #[inline(always)]
    pub(crate) fn frame_close(&mut self, new_base: usize, saved: Saved) {
        self.stack.truncate(new_base);
        self.frame_leave(saved);
    }

    /// The accounting of a call of user function `fi` whose frame starts at `new_base`
    /// (both evaluators; the values on the stack are the caller's business): the call's
    /// work, the argument and depth limits, the frame's storage, the profile. On failure
    /// nothing is changed but the work charged.
    #[inline(always)]
    pub(crate) fn frame_enter(
        &mut self,
        fi: usize,
        f: &'p Function,
        nargs: usize,
        new_base: usize,
        arg_heap: usize,
    ) -> R<Saved> {
        // Every call is charged a little work, from the source or from a builtin alike: a
        // line of many calls to an empty function is one step, but not free.
        self.host.work(WORK_CALLBACK)?;
        if arg_heap + nargs * ACCT_SLOT > self.host.lim.n(L::CallArgs) || self.depth >= self.host.lim.n(L::CallDepth) {
            return Err(self.call_refused(f, arg_heap + nargs * ACCT_SLOT));
        }
        let saved = (self.base, self.fbytes, self.func, self.host.pos as u64);
        if let Some(p) = self.profile.as_deref_mut() {
            p.enter(fi, self.host.meter.steps, self.host.meter.work);
        }
        self.base = new_base;
        self.func = fi;
        self.depth += 1;
        if self.depth > self.max_depth {
            self.max_depth = self.depth;
        }
        // The new frame's storage: its names and slots, and the arguments it holds.
        let fb = f.base_bytes + arg_heap;
        self.fbytes = fb;
        self.mem += fb;
        if fb > self.host.lim.n(L::FrameStorage) || self.mem > self.host.max_mem {
            self.fbytes = 0;
            self.mem -= fb;
            let e = match self.charge(false, fb as isize) {
                Err(e) => e,
                Ok(()) => self.limit(LimitKind::FrameStorage, "frame storage exceeded"),
            };
            self.frame_leave(saved);
            return Err(e);
        }
        if fb > self.peak_frame {
            self.peak_frame = fb;
        }
        if self.mem > self.peak_mem {
            self.peak_mem = self.mem;
        }
        Ok(saved)
    }

    /// Undo `frame_enter`: the frame's storage released, the caller's frame back.
    #[inline(always)]
    pub(crate) fn frame_leave(&mut self, saved: Saved) {
        self.mem -= self.fbytes;
        self.depth -= 1;
        let pos;
        (self.base, self.fbytes, self.func, pos) = saved;
        self.host.pos = pos as Pos;
        if let Some(p) = self.profile.as_deref_mut() {
            p.leave(self.host.meter.steps, self.host.meter.work);
        }
    }

    #[cold]
    fn call_refused(&self, f: &Function, arg_bytes: usize) -> Fail {
        if arg_bytes > self.host.lim.n(L::CallArgs) {
            self.limit(
                LimitKind::CallArgs,
                format!(
                    "arguments of `{}` exceed {max_call_arg_bytes} accounted bytes",
                    f.name,
                    max_call_arg_bytes = self.host.lim.n(L::CallArgs)
                ),
            )
        } else {
            self.limit(
                LimitKind::CallDepth,
                format!("more than {max_call_depth} active calls", max_call_depth = self.host.lim.n(L::CallDepth)),
            )
        }
    }

    #[inline(always)]
    fn check_cap(&mut self, b: &Builtin) -> R<()> {
        match b.cap {
            None => Ok(()),
            Some(_) => self.check_cap_slow(b),
        }
    }

    #[inline(never)]
    fn check_cap_slow(&mut self, b: &Builtin) -> R<()> {
        let Some(cap) = b.cap else { return Ok(()) };
        let (ok, flag) = (self.host.caps.allows(cap), cap.info().wanted);
        self.host.audit_target = None;
        self.host.audit_bytes = 0;
        if ok {
            Ok(())
        } else {
            let e = self.err(ErrKind::Permission, format!("{} needs {flag}", b.name));
            self.audit_end(b, Err(e))
        }
    }

    /// The end of a gated call: its audit line (`--audit`), allowed or refused.
    #[inline(never)]
    pub(crate) fn audit_end<T>(&mut self, b: &Builtin, r: R<T>) -> R<T> {
        if !self.host.gate.auditing() {
            return r;
        }
        let result = match &r {
            Ok(_) => "ok",
            Err(e) => match &**e {
                Unwind::Error(x) => x.kind.name(),
                Unwind::Limit { .. } => "limit",
                Unwind::Exit(_) => "exit",
            },
        };
        let (file, line) = match self.prog.sources.locate(self.host.pos) {
            Some((f, l)) => (f, Some(l)),
            None => ("", None),
        };
        let cap = b.cap.map_or("none", Cap::name);
        let written = self.host.gate.audit_record(&crate::gate::AuditRecord {
            step: self.host.meter.steps,
            file,
            line,
            builtin: b.name,
            capability: cap,
            target: self.host.audit_target.as_deref(),
            bytes: self.host.audit_bytes,
            result,
        });
        // Writing the line is work like any output (the target quoted is bounded).
        self.host.work(crate::gate::audit_work(written))?;
        r
    }

    /// Evaluate a builtin's arguments into `vals`. Variables and constants are cloned
    /// straight into place (no temporary `Value` moved through memory). A builtin's
    /// arguments are shared, never copied: they count toward neither `call_args` nor a
    /// frame a second time (SPEC 8, round 3: `len(m)` of a map that fits in a frame always
    /// works); `call_args` bounds the arguments of calls to user functions.
    #[inline(always)]
    fn eval_args_into(&mut self, args: &'p [Expr], vals: &mut SmallVec<[Value; 4]>) -> R<()> {
        for a in args {
            let direct = match a {
                Expr::Const(v) => Some(v),
                Expr::Local(i, _) => Some(&self.stack[self.base + *i as usize]),
                Expr::Global(i, _) => Some(&self.globals[*i as usize]),
                _ => None,
            };
            match direct {
                Some(Value::Unset) | None => {
                    let v = self.eval_fast(a)?;
                    vals.push(v);
                }
                Some(v) => vals.push(v.clone()),
            }
        }
        Ok(())
    }

    /// Call a builtin: its arguments' work by its cost rule is charged before it runs
    /// (so a refused call does nothing), its result's after.
    #[inline(never)]
    fn call_builtin(&mut self, b: &'static Builtin, args: &'p [Expr]) -> R<Value> {
        self.check_cap(b)?;
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        self.eval_args_into(args, &mut vals)?;
        self.builtin_vals(b, &mut vals)
    }

    /// A builtin's call with its arguments evaluated (its capability checked before
    /// they were): the work of its arguments by its cost rule, the call, its audit line,
    /// the work of its result, the heap check.
    fn builtin_vals(&mut self, b: &'static Builtin, vals: &mut [Value]) -> R<Value> {
        let cost = b.cost;
        self.host.work(cost.before(vals))?;
        let r = match b.imp {
            Imp::Plain(f) => f(&mut self.host, vals),
            Imp::Calls(f) => f(self, vals),
            Imp::Place(_) => unreachable!("place builtins are called through BuiltinPlace"),
        };
        let r = if b.cap.is_some() { self.audit_end(b, r) } else { r };
        if cost.measures_result() {
            if let Ok(v) = &r {
                self.host.work(cost.after(v))?;
            }
        }
        self.host.check_memory()?;
        r
    }

    /// An argument that is a variable or a constant, read in place (None: unset).
    #[inline(always)]
    fn direct<'a>(&'a self, e: &'a Expr) -> Option<&'a Value> {
        let v = match e {
            Expr::Const(v) => v,
            Expr::Local(i, _) => &self.stack[self.base + *i as usize],
            Expr::Global(i, _) => &self.globals[*i as usize],
            _ => return None,
        };
        (!matches!(v, Value::Unset)).then_some(v)
    }

    /// `get(m, k[, d])` on a map and a string key, its arguments variables or constants
    /// (`Expr::MapGet`): the lookup is made on the variable's map in place. The same
    /// charges and checks as the call (`call_builtin`): the builtin's constant work, the
    /// heap check after; anything else (an unset variable, a list, a key of another type)
    /// goes through the call, which says what is wrong.
    #[inline(never)]
    fn map_get(&mut self, b: &'static Builtin, args: &'p [Expr]) -> R<Value> {
        let fast = match (self.direct(&args[0]), self.direct(&args[1])) {
            (Some(Value::Map(_)), Some(Value::Str(_))) => {
                let d = match args.get(2) {
                    None => Some(0),
                    Some(e) => self.direct(e).map(Value::acct),
                };
                d.is_some()
            }
            _ => false,
        };
        if !fast {
            return self.call_builtin(b, args);
        }
        let klen = match self.direct(&args[1]) {
            Some(Value::Str(k)) => k.len(),
            _ => 0,
        };
        self.host.work(b.cost.before(&[]).saturating_add(key_work(klen)))?;
        let (Some(Value::Map(m)), Some(Value::Str(k))) = (self.direct(&args[0]), self.direct(&args[1])) else {
            unreachable!("checked above")
        };
        let r = match m.get(k) {
            Some(v) => v.clone(),
            None => match args.get(2).and_then(|e| self.direct(e)) {
                Some(d) => d.clone(),
                None => Value::Nil,
            },
        };
        self.host.check_memory()?;
        Ok(r)
    }

    /// `x[k] = get(x, k, d) + n` (`StmtKind::CountIndex`) when `x` holds a map of its
    /// own (not shared) in which `k` holds a number: the sum stored where the number is,
    /// with one lookup. The charges and checks are those of the general path (`map_get`'s,
    /// then `set_index`'s, which for a number replaced by a number in an unshared map are
    /// none). False, with nothing done or charged, when any of that does not hold: the
    /// caller then runs the general path, which also reports what is wrong.
    #[inline(never)]
    fn count_in_place(&mut self, slot: Slot, e: &'p Expr) -> R<bool> {
        let Expr::BinK(op, _, g, n) = e else { return Ok(false) };
        let Expr::MapGet(b, args, sp) = &**g else { return Ok(false) };
        let (Some(Value::Map(m)), Some(Value::Str(k)), Some(_)) =
            (self.direct(&args[0]), self.direct(&args[1]), self.direct(&args[2]))
        else {
            return Ok(false);
        };
        if Rc::strong_count(m) != 1 {
            return Ok(false);
        }
        let Some((i, x)) = m.num_of(k) else { return Ok(false) };
        let Some(r) = arith(*op, x, *n) else { return Ok(false) };
        self.host.work(b.cost.before(&[])).map_err(|f| spotted(f, *sp))?;
        self.host.check_memory().map_err(|f| spotted(f, *sp))?;
        let Value::Map(m) = self.slot_mut(slot) else { unreachable!("checked above") };
        let done = Rc::get_mut(m).is_some_and(|m| m.set_num_at(i, r));
        debug_assert!(done, "an unshared map with a number at {i}");
        Ok(true)
    }

    fn call_builtin_place(&mut self, b: &'static Builtin, place: &'p Place, args: &'p [Expr]) -> R<Value> {
        self.check_cap(b)?;
        let keys = self.eval_keys(&place.path)?;
        let mut vals: SmallVec<[Value; 4]> = SmallVec::new();
        self.eval_args_into(args, &mut vals)?;
        self.place_builtin_vals(b, place.root, &keys, vals)
    }

    /// A place builtin's call with its place's keys and its arguments evaluated.
    fn place_builtin_vals(
        &mut self,
        b: &'static Builtin,
        root: Slot,
        keys: &[Value],
        mut vals: SmallVec<[Value; 4]>,
    ) -> R<Value> {
        let Imp::Place(f) = b.imp else { unreachable!("plain builtins are called through Builtin") };
        let cost = b.cost;
        self.host.work(cost.before(&vals))?;
        let r = self.modify_place(root, keys, &mut |this, target| {
            if cost.measures_target() {
                this.host.work(cost.target(target))?;
            }
            f(&mut this.host, target, &mut vals)
        });
        if cost.measures_result() {
            if let Ok(v) = &r {
                self.host.work(cost.after(v))?;
            }
        }
        self.host.check_memory()?;
        r
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

/// Arithmetic that succeeds with a finite number (None: let the general path decide,
/// and report the error if there is one).
#[inline(always)]
fn arith(op: BinOp, x: f64, y: f64) -> Option<f64> {
    let r = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Mod => int_mod(x, y)?,
        _ => return None,
    };
    r.is_finite().then_some(r)
}

/// Floored division `a // b` (b not 0), as Python computes it for floats: exact for
/// integers below 2^53, and the quotient that `%`'s floored remainder goes with.
pub fn floor_div(a: f64, b: f64) -> f64 {
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div == 0.0 {
        return 0.0;
    }
    let f = div.floor();
    if div - f > 0.5 {
        f + 1.0
    } else {
        f
    }
}

/// Floored modulo of two integral numbers that fit exactly in i64 arithmetic (the
/// common case, done without a floating-point remainder). None otherwise.
#[inline(always)]
fn int_mod(a: f64, b: f64) -> Option<f64> {
    const LIM: f64 = 9_007_199_254_740_992.0;
    if a.abs() < LIM && b.abs() < LIM && b != 0.0 {
        let (x, y) = (a as i64, b as i64);
        if x as f64 != a || y as f64 != b {
            return None;
        }
        let mut r = x % y;
        if r != 0 && ((r < 0) != (y < 0)) {
            r += y;
        }
        return Some(r as f64);
    }
    None
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
