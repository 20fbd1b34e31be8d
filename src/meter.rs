//! The meters: steps, work and the wall-clock deadline (SPEC 8 and 8.1).
//!
//! This is the one place anything is charged to a run's CPU budgets:
//! - [`Meter::step`]: one step per executed line (exact, deterministic);
//! - [`Meter::work`]: work units for everything whose cost grows with the size of what
//!   it touches (builtins by their cost rule, `..` and interpolation, comparisons of
//!   containers, copy-on-write copies, SQLite's virtual machine, bytes moved by I/O).
//!   One unit is meant to be about one nanosecond of CPU on the benchmark machine
//!   (`bench/work.py` calibrates the constants);
//! - the deadline (`--max-time`), looked at every `TIME_CHECK_INTERVAL` steps and every
//!   `WORK_TIME_CHECK` units of work, so a long builtin that charges as it goes looks at
//!   the clock too.
//!
//! Both counters are held as what is left before their next check point, so the hot
//! path is a decrement and a sign test for a step, a compare and a subtraction for a
//! charge of work (with the steps and work done as the check point less what is left:
//! `steps()`, `worked()`); the limits and the clock are looked at only when a counter
//! passes its next check point.
//!
//! The clock is read here and nowhere else in a run ([`now`], [`wall`]): builtins that
//! wait (sockets, HTTP, SQLite's busy handler, PostgreSQL, stdin, `sleep`) or check the
//! deadline as they go (regex, JSON, sorts, SQLite's progress handler) ask the meter
//! ([`Meter::deadline_passed`], [`Meter::remaining`], [`Meter::until`]) or these
//! functions ([`past`], [`left`], [`since`]) for a deadline they carry onto another
//! thread or callback. One clock source is also what lets a test move time (the `fake`
//! module below, in unit tests only).

use std::time::{Duration, Instant, SystemTime};

use crate::error::{Fail, Unwind, NO_POS, R};
use crate::limits::*;

#[derive(Debug, Clone)]
pub struct Meter {
    /// The steps taken are `step_check - left` (`steps()`): a step counts down, one
    /// decrement and a sign test, with no compare against a limit read from memory.
    /// Negative once the check point is passed, where `step_slow` looks.
    left: i64,
    pub max_steps: u64,
    /// When the steps pass this, `step_slow` looks at the step limit and the clock.
    step_check: u64,
    /// The work done is `work_check - wleft` (`worked()`): a charge that fits is one
    /// compare and a subtraction, with no saturating add.
    wleft: u64,
    pub max_work: u64,
    /// When the work passes this, `work_slow` looks at the work limit and the clock.
    work_check: u64,
    pub deadline: Option<Instant>,
    /// When the run started (`clock()`).
    pub started: Instant,
    /// `--profile`: keep the step check point at the current step, so that every step
    /// takes the slow path, where the profiler is fed (`profile.rs`). Off, the step
    /// path is exactly what it is without a profiler.
    pub profiling: bool,
}

// ---------------------------------------------------------------------------
// Loading: the same deadline (and the load's heap budget) while the program is read,
// parsed and validated
// ---------------------------------------------------------------------------

thread_local! {
    static LOAD_DEADLINE: std::cell::Cell<Option<Instant>> = const { std::cell::Cell::new(None) };
}

/// Run `f` (a load) with `--max-time`'s deadline in force: the loader looks at it between
/// lines and statements (`load_over`), so a dense 4 MiB source cannot run past it.
pub fn with_load_deadline<T>(deadline: Option<Instant>, f: impl FnOnce() -> T) -> T {
    let prev = LOAD_DEADLINE.with(|c| c.replace(deadline));
    let r = f();
    LOAD_DEADLINE.with(|c| c.set(prev));
    r
}

/// Has the load under way gone past a limit: its heap budget (`memory`) or the run's
/// deadline (`time`)? Then the limit and its message. Called once per source line parsed
/// and statement validated: the clock is read only when a deadline is set.
pub fn load_over() -> Option<(LimitKind, String)> {
    if let Some(m) = crate::memory::load_over() {
        return Some((LimitKind::Memory, m));
    }
    let d = LOAD_DEADLINE.with(std::cell::Cell::get)?;
    (now() >= d).then(|| (LimitKind::Time, "wall-clock deadline (--max-time) reached while loading the program".into()))
}

fn limit(kind: LimitKind, message: String) -> Fail {
    Box::new(Unwind::Limit { kind, message, pos: NO_POS })
}

impl Meter {
    pub fn new(max_steps: u64, max_work: u64, deadline: Option<Instant>) -> Self {
        let mut m = Meter {
            left: 0,
            max_steps,
            step_check: 0,
            wleft: 0,
            max_work,
            work_check: 0,
            deadline,
            started: now(),
            profiling: false,
        };
        m.rearm();
        m
    }

    /// Start a fresh step and work budget (each test of `leash test`).
    pub fn reset(&mut self) {
        self.set_steps(0);
        self.set_work(0);
        self.rearm();
    }

    fn rearm(&mut self) {
        let steps = self.steps();
        self.step_check = self.next_step_check();
        self.set_steps(steps);
        let work = self.worked();
        self.work_check = self.next_work_check();
        self.set_work(work);
    }

    /// The work done.
    #[inline(always)]
    pub fn worked(&self) -> u64 {
        self.work_check - self.wleft
    }

    /// Set the work done (at most the current check point).
    fn set_work(&mut self, work: u64) {
        self.wleft = self.work_check.saturating_sub(work);
    }

    /// The steps taken.
    #[inline(always)]
    pub fn steps(&self) -> u64 {
        (i128::from(self.step_check) - i128::from(self.left)) as u64
    }

    /// Set the steps taken (against the current check point).
    fn set_steps(&mut self, steps: u64) {
        let left = i128::from(self.step_check) - i128::from(steps);
        self.left = left.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    }

    /// Turn the profiler's feed on (see `profiling`).
    pub fn profile(&mut self) {
        self.profiling = true;
        self.rearm();
    }

    fn next_step_check(&self) -> u64 {
        let steps = self.steps();
        if self.profiling {
            return steps.min(self.max_steps);
        }
        let t = if self.deadline.is_some() { steps + TIME_CHECK_INTERVAL } else { u64::MAX };
        // (At most `i64::MAX`: the countdown `left` is signed.)
        t.min(self.max_steps).min(i64::MAX as u64)
    }

    fn next_work_check(&self) -> u64 {
        let t = if self.deadline.is_some() { self.worked().saturating_add(WORK_TIME_CHECK) } else { u64::MAX };
        t.min(self.max_work)
    }

    // ------------------------------------------------------------------
    // Steps
    // ------------------------------------------------------------------

    /// Charge one step.
    #[inline(always)]
    pub fn step(&mut self) -> R<()> {
        if self.step_due() {
            return self.step_slow();
        }
        Ok(())
    }

    /// Count one step; true when the slow path ([`Meter::step_slow`]) must look at it.
    /// The same countdown as [`Meter::step`], for a caller with its own slow path.
    #[inline(always)]
    pub fn step_due(&mut self) -> bool {
        self.left -= 1;
        self.left < 0
    }

    /// Charge `n` steps at once, for work done outside the evaluator (SQLite's virtual
    /// machine, metered by its progress handler).
    pub fn steps_n(&mut self, n: u64) -> R<()> {
        self.set_steps(self.steps().saturating_add(n));
        if self.left < 0 {
            return self.step_slow();
        }
        Ok(())
    }

    #[cold]
    pub fn step_slow(&mut self) -> R<()> {
        let steps = self.steps();
        if steps > self.max_steps {
            self.set_steps(self.max_steps);
            return Err(limit(LimitKind::Steps, format!("step limit of {} reached", self.max_steps)));
        }
        self.check_time()?;
        self.step_check = self.next_step_check();
        self.set_steps(steps);
        Ok(())
    }

    /// Steps left before the `steps` limit.
    pub fn steps_left(&self) -> u64 {
        self.max_steps.saturating_sub(self.steps())
    }

    // ------------------------------------------------------------------
    // Work
    // ------------------------------------------------------------------

    /// Charge `n` units of work. Past the budget: the `work` limit, and the work used
    /// stays at the budget (the refused charge is not counted, and the work it stands
    /// for is not done when the charge comes first).
    #[inline(always)]
    pub fn work(&mut self, n: u64) -> R<()> {
        if n > self.wleft {
            return self.work_slow(n);
        }
        self.wleft -= n;
        Ok(())
    }

    /// A charge past the check point: the limit, else the clock and the next check
    /// point. (The work done is held as the check point itself where it passes it.)
    #[cold]
    fn work_slow(&mut self, n: u64) -> R<()> {
        let w = self.worked().saturating_add(n);
        if w > self.max_work {
            self.work_check = self.max_work;
            self.wleft = 0;
            return Err(limit(LimitKind::Work, format!("work limit of {} reached (--max-work)", self.max_work)));
        }
        self.work_check = w;
        self.wleft = 0;
        self.check_time()?;
        self.work_check = self.next_work_check();
        self.set_work(w);
        Ok(())
    }

    /// Work left before the `work` limit.
    pub fn work_left(&self) -> u64 {
        self.max_work.saturating_sub(self.worked())
    }

    // ------------------------------------------------------------------
    // The deadline
    // ------------------------------------------------------------------

    /// Stop if the deadline has passed.
    pub fn check_time(&self) -> R<()> {
        if self.deadline_passed() {
            return Err(limit(LimitKind::Time, "wall-clock deadline (--max-time) reached".into()));
        }
        Ok(())
    }

    /// Has the deadline (`--max-time`) passed? False without one.
    pub fn deadline_passed(&self) -> bool {
        past(self.deadline)
    }

    /// The time left before the deadline (zero once past it); None without one.
    pub fn remaining(&self) -> Option<Duration> {
        self.deadline.map(left)
    }

    /// When a wait of `own` (a builtin's own timeout, if any) must end: the earlier of
    /// `now + own` and the deadline; None when neither bounds it.
    pub fn until(&self, own: Option<Duration>) -> Option<Instant> {
        let own = own.map(after);
        match (own, self.deadline) {
            (Some(o), Some(d)) => Some(o.min(d)),
            (o, d) => o.or(d),
        }
    }

    /// The time since the run started (`clock()`).
    pub fn elapsed(&self) -> Duration {
        since(self.started)
    }
}

// ---------------------------------------------------------------------------
// The clock: the one place a run reads the time
// ---------------------------------------------------------------------------

/// Now, on the monotonic clock every deadline and timeout of a run is measured on.
#[inline]
pub fn now() -> Instant {
    #[cfg(test)]
    {
        Instant::now() + fake::skew()
    }
    #[cfg(not(test))]
    {
        Instant::now()
    }
}

/// `now + d`: when a wait of `d` that starts now ends.
pub fn after(d: Duration) -> Instant {
    now() + d
}

/// Has `deadline` (if any) passed?
pub fn past(deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|d| now() >= d)
}

/// The time left before `t` (zero once it has passed).
pub fn left(t: Instant) -> Duration {
    t.saturating_duration_since(now())
}

/// The time since `t`.
pub fn since(t: Instant) -> Duration {
    now().saturating_duration_since(t)
}

/// The wall clock, as the time since the Unix epoch (`date.now()`; zero before 1970).
pub fn wall() -> Duration {
    #[cfg(test)]
    let t = SystemTime::now() + fake::skew();
    #[cfg(not(test))]
    let t = SystemTime::now();
    t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default()
}

/// A fake clock for unit tests: `advance` moves this thread's [`now`] and [`wall`]
/// forward (a run and the callbacks it gives SQLite and the JSON parser read the clock
/// on its own thread).
#[cfg(test)]
pub mod fake {
    use std::cell::Cell;
    use std::time::Duration;

    thread_local! {
        static SKEW: Cell<Duration> = const { Cell::new(Duration::ZERO) };
    }

    pub fn skew() -> Duration {
        SKEW.with(Cell::get)
    }

    /// Move this thread's clock forward by `d`.
    pub fn advance(d: Duration) {
        SKEW.with(|s| s.set(s.get() + d));
    }

    /// Put this thread's clock back to the real one.
    pub fn reset() {
        SKEW.with(|s| s.set(Duration::ZERO));
    }
}

/// `n * rate / 256`, rounded up (`limits::scaled`, beside the rates).
pub use crate::limits::scaled;

#[cfg(test)]
mod tests {
    use super::*;

    fn kind(r: R<()>) -> Option<&'static str> {
        match r {
            Ok(()) => None,
            Err(e) => match *e {
                Unwind::Limit { kind, .. } => Some(kind.name()),
                _ => Some("other"),
            },
        }
    }

    #[test]
    fn work_is_exact_at_the_budget() {
        let mut m = Meter::new(10, 100, None);
        assert_eq!(kind(m.work(60)), None);
        assert_eq!(kind(m.work(40)), None);
        assert_eq!(m.worked(), 100);
        assert_eq!(kind(m.work(1)), Some("work"));
        assert_eq!(m.worked(), 100);
        m.reset();
        assert_eq!(m.worked(), 0);
        assert_eq!(kind(m.work(u64::MAX)), Some("work"));
    }

    #[test]
    fn steps_are_exact_at_the_budget() {
        let mut m = Meter::new(3, 100, None);
        for _ in 0..3 {
            assert_eq!(kind(m.step()), None);
        }
        assert_eq!(kind(m.step()), Some("steps"));
        assert_eq!(m.steps(), 3);
    }

    #[test]
    fn a_passed_deadline_stops_work_charges() {
        let past = now();
        let mut m = Meter::new(1000, u64::MAX / 2, Some(past));
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert_eq!(kind(m.work(WORK_TIME_CHECK + 1)), Some("time"));
    }

    #[test]
    fn the_fake_clock_moves_the_deadline_checks() {
        let hour = Duration::from_secs(3600);
        let mut m = Meter::new(u64::MAX / 2, u64::MAX / 2, Some(after(hour)));
        assert!(!m.deadline_passed() && m.remaining().unwrap() > hour / 2);
        assert_eq!(kind(m.work(WORK_TIME_CHECK + 1)), None);
        let own = m.until(Some(Duration::from_secs(1))).unwrap();
        assert!(own < m.deadline.unwrap() && m.until(None) == m.deadline);
        let wall0 = wall();
        fake::advance(2 * hour);
        assert!(m.deadline_passed() && m.remaining() == Some(Duration::ZERO));
        assert!(past(Some(own)) && left(own) == Duration::ZERO && m.elapsed() >= 2 * hour);
        assert!(wall() >= wall0 + 2 * hour);
        assert_eq!(kind(m.work(WORK_TIME_CHECK + 1)), Some("time"));
        for _ in 0..=TIME_CHECK_INTERVAL {
            if let Err(e) = m.step() {
                assert_eq!(kind(Err(e)), Some("time"));
                fake::reset();
                return;
            }
        }
        panic!("no step looked at the clock");
    }

    /// Builtins never read the clock themselves: they ask the meter.
    #[test]
    fn no_builtin_reads_the_clock() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/builtins");
        let mut stack = vec![dir];
        let mut seen = 0;
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    for bad in ["Instant::now", "SystemTime::now", "Utc::now", "Local::now"] {
                        assert!(!text.contains(bad), "{} reads the clock ({bad}): ask the meter", p.display());
                    }
                    // `Instant::elapsed` reads it too; `Meter::elapsed` is the meter's.
                    let own = text.lines().filter(|l| l.contains(".elapsed()") && !l.contains("meter.elapsed()"));
                    assert_eq!(own.count(), 0, "{} reads the clock (.elapsed()): ask the meter", p.display());
                    seen += 1;
                }
            }
        }
        assert!(seen > 20, "{seen} files");
    }

    #[test]
    fn scaled_rounds_up() {
        assert_eq!(scaled(0, 256), 0);
        assert_eq!(scaled(1, 1), 1);
        assert_eq!(scaled(512, 128), 256);
        assert_eq!(scaled(3, 256), 3);
    }
}
