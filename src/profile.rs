//! `--profile FILE` (SPEC 13): where a run's steps and work went, exactly.
//!
//! The profile's data and its writer: the evaluator (`interp`) feeds it during the run
//! and `app` writes it at exit. It imports only `ast` and `program`, so the evaluator
//! depends on it and nothing of it depends on the evaluator.
//!
//! The profiler is fed by the meter's own figures, never by sampling: every step is
//! attributed to its line and to the call stack it ran in, and the work charged between
//! two points of the run (two steps, a call and a step, a return and a step) to the line
//! and stack that were current. The totals therefore equal `--stats`.
//!
//! Cost when `--profile` is off: nothing on the step path (the meter's step check is the
//! one compare it always was; profiling works by keeping that check point at the current
//! step, so that every step takes the meter's slow path, which feeds the profiler), and
//! one well-predicted branch at a user function's entry and one at its return.
//!
//! Written at exit, whatever the exit (a limit too), as three files, streamed (through a
//! small buffer, never one string of the whole profile):
//! - `FILE`: folded stacks by steps, `main;f;g 1234`, one line a stack (the input of
//!   `inferno-flamegraph`, `flamegraph.pl` and speedscope);
//! - `FILE.work`: the same stacks by work units;
//! - `FILE.lines`: one line per source line that ran, tab-separated
//!   `FILE:LINE STEPS WORK CALLS` under a header line (CALLS: user function calls made
//!   from that line).
//!
//! Bounds (operator outputs are on the leash too, issue 23):
//! - at most [`MAX_STACKS`] distinct stacks are kept; a call that would make a new one
//!   past that runs in the `[other]` stack (its callees too), so the tree's memory is
//!   bounded; it is allocated during the run and counted against `--max-memory`;
//! - the stack text written is at most [`MAX_STACK_TEXT`] bytes a file; the stacks past
//!   it are folded into `[other]` too;
//! - writing stops [`WRITE_GRACE`] after the `--max-time` deadline: what is left is
//!   folded into one `[truncated]` line (stack files) or summed in a `[truncated]` row
//!   (lines file), so every file's totals still equal `--stats`;
//! - writing holds a 64 KiB buffer per file and one stack's frames (at most
//!   `call_depth` of them) beyond the tree: fixed operator overhead.

use std::collections::HashMap;
use std::io::Write;
use std::time::{Duration, Instant};

use crate::ast::Pos;
use crate::program::Program;

/// Distinct call stacks a profile keeps (the `[other]` stack takes the rest).
pub const MAX_STACKS: usize = 65_536;
/// Bytes of stack names a stack file holds at most (the rest goes to `[other]`).
pub const MAX_STACK_TEXT: u64 = 32 << 20;
/// How long past the `--max-time` deadline the profile may still be written.
pub const WRITE_GRACE: Duration = Duration::from_millis(100);

/// The stack that takes the calls past `MAX_STACKS` (and the stacks past the text bound).
pub const OTHER: &str = "[other]";
/// The line that takes what was not written by the deadline.
pub const TRUNCATED: &str = "[truncated]";

/// `Node::func` of the root (main) and of the `[other]` node.
const MAIN: usize = usize::MAX;
const OTHER_FUNC: usize = usize::MAX - 1;

/// Stacks between two looks at the clock while writing.
const CLOCK_EVERY: usize = 64;

#[derive(Debug, Default, Clone, Copy)]
struct Cell {
    steps: u64,
    work: u64,
    calls: u64,
}

/// A node of the call tree: its parent and function (`MAIN` for main).
#[derive(Debug, Clone, Copy)]
struct Node {
    parent: u32,
    func: usize,
    steps: u64,
    work: u64,
}

#[derive(Debug)]
pub struct Profile {
    lines: HashMap<Pos, Cell>,
    nodes: Vec<Node>,
    children: HashMap<(u32, usize), u32>,
    /// The `[other]` node, once a call found the stack table full.
    other: Option<u32>,
    node: u32,
    line: Option<Pos>,
    /// The callers' node and line, innermost last.
    saved: Vec<(u32, Option<Pos>)>,
    seen_steps: u64,
    seen_work: u64,
    /// Bound on distinct stacks (`MAX_STACKS`; the unit tests lower it).
    max_stacks: usize,
    /// Bound on a stack file's text (`MAX_STACK_TEXT`; the unit tests lower it).
    max_text: u64,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            lines: HashMap::new(),
            nodes: vec![Node { parent: u32::MAX, func: MAIN, steps: 0, work: 0 }],
            children: HashMap::new(),
            other: None,
            node: 0,
            line: None,
            saved: Vec::new(),
            seen_steps: 0,
            seen_work: 0,
            max_stacks: MAX_STACKS,
            max_text: MAX_STACK_TEXT,
        }
    }
}

/// Which file a stack walk is writing, and how far it got.
struct Folded<W: Write> {
    out: W,
    text: u64,
}

impl Profile {
    /// Attribute what the meter counted since the last point to the current line and stack.
    pub fn sync(&mut self, steps: u64, work: u64) {
        let ds = steps.saturating_sub(self.seen_steps);
        let dw = work.saturating_sub(self.seen_work);
        self.seen_steps = steps;
        self.seen_work = work;
        if ds == 0 && dw == 0 {
            return;
        }
        let n = &mut self.nodes[self.node as usize];
        n.steps += ds;
        n.work += dw;
        if let Some(l) = self.line {
            let c = self.lines.entry(l).or_default();
            c.steps += ds;
            c.work += dw;
        }
    }

    /// A step was charged at `pos` (the meter's count is now `steps`).
    pub fn step(&mut self, pos: Pos, steps: u64, work: u64) {
        if steps == self.seen_steps {
            return; // refused by the step limit: not counted
        }
        self.sync(steps - 1, work);
        self.line = Some(pos);
        self.sync(steps, work);
    }

    /// A call of user function `func` begins (its frame is set up).
    pub fn enter(&mut self, func: usize, steps: u64, work: u64) {
        self.sync(steps, work);
        if let Some(l) = self.line {
            self.lines.entry(l).or_default().calls += 1;
        }
        self.saved.push((self.node, self.line));
        if Some(self.node) == self.other {
            return; // everything called from `[other]` stays in it
        }
        let key = (self.node, func);
        let id = match self.children.get(&key) {
            Some(&id) => id,
            None if self.nodes.len() < self.max_stacks => {
                let id = self.nodes.len() as u32;
                self.children.insert(key, id);
                self.nodes.push(Node { parent: self.node, func, steps: 0, work: 0 });
                id
            }
            None => self.other_node(),
        };
        self.node = id;
    }

    /// The `[other]` node (made the first time the table is full: one past the bound).
    fn other_node(&mut self) -> u32 {
        match self.other {
            Some(id) => id,
            None => {
                let id = self.nodes.len() as u32;
                self.nodes.push(Node { parent: u32::MAX, func: OTHER_FUNC, steps: 0, work: 0 });
                self.other = Some(id);
                id
            }
        }
    }

    /// The call begun by the matching `enter` is over (returned or unwinding).
    pub fn leave(&mut self, steps: u64, work: u64) {
        self.sync(steps, work);
        if let Some((n, l)) = self.saved.pop() {
            self.node = n;
            self.line = l;
        }
    }

    /// Distinct stacks recorded (`[other]` included when it was needed).
    pub fn stacks(&self) -> usize {
        self.nodes.len()
    }

    fn frame_name(prog: &Program, func: usize) -> &str {
        match func {
            MAIN => "main",
            OTHER_FUNC => OTHER,
            f => prog.funcs.get(f).map_or("?", |f| f.name.as_str()),
        }
    }

    /// Write one frame name (`;` and spaces, which the folded format reserves, as `_`).
    fn put_frame<W: Write>(out: &mut W, name: &str) -> std::io::Result<()> {
        if name.bytes().any(|b| b == b';' || b == b' ') {
            out.write_all(name.replace([';', ' '], "_").as_bytes())
        } else {
            out.write_all(name.as_bytes())
        }
    }

    /// Write the folded stacks by steps and by work, streamed, one walk for both: each
    /// stack's frames are gathered by walking up its parents into `frames` (reused).
    fn write_stacks<W: Write>(
        &self,
        prog: &Program,
        steps: &mut Folded<W>,
        work: &mut Folded<W>,
        stop: Option<Instant>,
    ) -> std::io::Result<()> {
        let mut frames: Vec<usize> = Vec::new();
        // What goes to `[other]` (the node itself, and stacks past the text bound) and
        // what the deadline left unwritten.
        let (mut other_s, mut other_w) = (0u64, 0u64);
        let (mut late_s, mut late_w) = (0u64, 0u64);
        let mut late = false;
        // Set by the first stack that does not fit in `max_text`: it and every later one
        // go to `[other]` (no more walks up the tree).
        let mut full = false;
        for (i, n) in self.nodes.iter().enumerate() {
            if !late && i % CLOCK_EVERY == 0 && stop.is_some_and(|t| Instant::now() >= t) {
                late = true;
            }
            if n.steps == 0 && n.work == 0 {
                continue;
            }
            if late {
                late_s += n.steps;
                late_w += n.work;
                continue;
            }
            if full || n.func == OTHER_FUNC {
                other_s += n.steps;
                other_w += n.work;
                continue;
            }
            frames.clear();
            let mut id = i as u32;
            let mut len = 0u64;
            while id != u32::MAX {
                let m = &self.nodes[id as usize];
                frames.push(m.func);
                len += Self::frame_name(prog, m.func).len() as u64 + 1;
                id = m.parent;
            }
            let fits = |f: &Folded<W>, v: u64| v == 0 || f.text + len <= self.max_text;
            if !fits(steps, n.steps) || !fits(work, n.work) {
                full = true;
                other_s += n.steps;
                other_w += n.work;
                continue;
            }
            for (f, v) in [(&mut *steps, n.steps), (&mut *work, n.work)] {
                if v == 0 {
                    continue;
                }
                for (k, &func) in frames.iter().rev().enumerate() {
                    if k > 0 {
                        f.out.write_all(b";")?;
                    }
                    Self::put_frame(&mut f.out, Self::frame_name(prog, func))?;
                }
                writeln!(f.out, " {v}")?;
                f.text += len;
            }
        }
        for (f, o, l) in [(&mut *steps, other_s, late_s), (&mut *work, other_w, late_w)] {
            if o > 0 {
                writeln!(f.out, "{OTHER} {o}")?;
            }
            if l > 0 {
                writeln!(f.out, "{TRUNCATED} {l}")?;
            }
        }
        Ok(())
    }

    /// Write the per-line table, sorted by file and line; rows the deadline left
    /// unwritten are summed in one `[truncated]` row.
    fn write_lines<W: Write>(&self, prog: &Program, out: &mut W, stop: Option<Instant>) -> std::io::Result<()> {
        let mut rows: Vec<(&str, u32, Cell)> = self
            .lines
            .iter()
            .map(|(&pos, c)| match prog.sources.locate(pos) {
                Some((f, l)) => (f, l, *c),
                None => ("?", pos, *c),
            })
            .collect();
        rows.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        out.write_all(b"line\tsteps\twork\tcalls\n")?;
        let mut late: Option<Cell> = None;
        for (i, (f, l, c)) in rows.into_iter().enumerate() {
            if late.is_none() && i % CLOCK_EVERY == 0 && stop.is_some_and(|t| Instant::now() >= t) {
                late = Some(Cell::default());
            }
            match &mut late {
                Some(t) => {
                    t.steps += c.steps;
                    t.work += c.work;
                    t.calls += c.calls;
                }
                None => writeln!(out, "{f}:{l}\t{}\t{}\t{}", c.steps, c.work, c.calls)?,
            }
        }
        if let Some(t) = late {
            writeln!(out, "{TRUNCATED}\t{}\t{}\t{}", t.steps, t.work, t.calls)?;
        }
        Ok(())
    }

    /// Write the three files of `--profile FILE`; `deadline` is the run's `--max-time`
    /// deadline (writing stops `WRITE_GRACE` after it).
    pub fn write(&self, prog: &Program, path: &std::path::Path, deadline: Option<Instant>) -> std::io::Result<()> {
        let stop = deadline.map(|d| d + WRITE_GRACE);
        let with = |ext: &str| {
            let mut p = path.as_os_str().to_owned();
            p.push(ext);
            std::path::PathBuf::from(p)
        };
        let buffered =
            |p: &std::path::Path| std::fs::File::create(p).map(|f| std::io::BufWriter::with_capacity(64 << 10, f));
        let mut lines = buffered(&with(".lines"))?;
        self.write_lines(prog, &mut lines, stop)?;
        lines.flush()?;
        drop(lines);
        let mut steps = Folded { out: buffered(path)?, text: 0 };
        let mut work = Folded { out: buffered(&with(".work"))?, text: 0 };
        self.write_stacks(prog, &mut steps, &mut work, stop)?;
        steps.out.flush()?;
        work.out.flush()?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prog() -> Program {
        crate::load("t.lsh", b"fn f()\nend\nfn g()\nend\nf()\n".to_vec(), None).unwrap()
    }

    /// Calls `f` (0) and `g` (1) nested as `path` says, one step in each, then returns.
    fn chain(p: &mut Profile, path: &[usize], clock: &mut u64) {
        for &f in path {
            p.enter(f, *clock, 0);
            *clock += 1;
            p.step(1, *clock, 0);
        }
        for _ in path {
            p.leave(*clock, 0);
        }
    }

    fn written(p: &Profile, deadline: Option<Instant>) -> (String, String) {
        let dir =
            std::env::temp_dir().join(format!("leash-prof-{}-{:?}", std::process::id(), std::thread::current().id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("p");
        p.write(&prog(), &path, deadline).unwrap();
        let s = std::fs::read_to_string(&path).unwrap();
        let l = std::fs::read_to_string(dir.join("p.lines")).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        (s, l)
    }

    fn total(folded: &str) -> u64 {
        folded.lines().map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap()).sum()
    }

    #[test]
    fn stacks_at_the_bound_and_one_past() {
        // main + f + f;g = 3 stacks: with a bound of 3 all are kept, with 2 `f;g` (and
        // what it calls) is `[other]`.
        for (bound, other) in [(3, false), (2, true)] {
            let mut p = Profile { max_stacks: bound, ..Profile::default() };
            let mut clock = 0;
            chain(&mut p, &[0, 1, 0], &mut clock);
            chain(&mut p, &[0, 1], &mut clock);
            let (s, _) = written(&p, None);
            assert_eq!(total(&s), clock, "{s}");
            assert_eq!(s.contains("[other] 3\n"), other, "{s}");
            assert_eq!(s.contains("main;f;g "), !other, "{s}");
            assert!(s.contains("main;f 2\n"), "{s}");
            assert!(p.stacks() <= bound + 1);
        }
    }

    #[test]
    fn text_at_the_bound_and_one_past() {
        // "main;f 2\n": the stack text of `main;f` is 7 bytes counted ("main;" + "f;").
        for (bound, other) in [(7, false), (6, true)] {
            let mut p = Profile { max_text: bound, ..Profile::default() };
            let mut clock = 0;
            chain(&mut p, &[0], &mut clock);
            chain(&mut p, &[0], &mut clock);
            let (s, _) = written(&p, None);
            assert_eq!(total(&s), clock, "{s}");
            assert_eq!(s.contains("[other] 2\n"), other, "{s}");
        }
    }

    #[test]
    fn deadline_passed_truncates_and_keeps_totals() {
        let mut p = Profile::default();
        let mut clock = 0;
        chain(&mut p, &[0, 1], &mut clock);
        let (s, l) = written(&p, Some(Instant::now() - WRITE_GRACE * 2));
        assert_eq!(s, format!("[truncated] {clock}\n"));
        assert_eq!(l, format!("line\tsteps\twork\tcalls\n[truncated]\t{clock}\t0\t1\n"));
    }
}
