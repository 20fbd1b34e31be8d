//! `--profile FILE` (SPEC 13): where a run's steps and work went, exactly.
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
//! Written at exit, whatever the exit (a limit too), as three files:
//! - `FILE`: folded stacks by steps, `main;f;g 1234`, one line a stack (the input of
//!   `inferno-flamegraph`, `flamegraph.pl` and speedscope);
//! - `FILE.work`: the same stacks by work units;
//! - `FILE.lines`: one line per source line that ran, tab-separated
//!   `FILE:LINE STEPS WORK CALLS` under a header line (CALLS: user function calls made
//!   from that line).

use std::collections::HashMap;
use std::io::Write;

use crate::ast::Pos;
use crate::program::Program;

#[derive(Debug, Default, Clone, Copy)]
struct Cell {
    steps: u64,
    work: u64,
    calls: u64,
}

/// A node of the call tree: its parent and function (`usize::MAX` for main).
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
    node: u32,
    line: Option<Pos>,
    /// The callers' node and line, innermost last.
    saved: Vec<(u32, Option<Pos>)>,
    seen_steps: u64,
    seen_work: u64,
}

impl Default for Profile {
    fn default() -> Self {
        Profile {
            lines: HashMap::new(),
            nodes: vec![Node { parent: u32::MAX, func: usize::MAX, steps: 0, work: 0 }],
            children: HashMap::new(),
            node: 0,
            line: None,
            saved: Vec::new(),
            seen_steps: 0,
            seen_work: 0,
        }
    }
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
        let key = (self.node, func);
        let next = self.nodes.len() as u32;
        let id = *self.children.entry(key).or_insert(next);
        if id == next {
            self.nodes.push(Node { parent: self.node, func, steps: 0, work: 0 });
        }
        self.node = id;
    }

    /// The call begun by the matching `enter` is over (returned or unwinding).
    pub fn leave(&mut self, steps: u64, work: u64) {
        self.sync(steps, work);
        if let Some((n, l)) = self.saved.pop() {
            self.node = n;
            self.line = l;
        }
    }

    fn stack_name(&self, prog: &Program, mut id: u32) -> String {
        let mut names = Vec::new();
        while id != u32::MAX {
            let n = &self.nodes[id as usize];
            names.push(match prog.funcs.get(n.func) {
                Some(f) => f.name.replace([';', ' '], "_"),
                None => "main".to_string(),
            });
            id = n.parent;
        }
        names.reverse();
        names.join(";")
    }

    /// The folded stacks by steps and by work, and the per-line table.
    pub fn render(&self, prog: &Program) -> (String, String, String) {
        let mut by_steps = String::new();
        let mut by_work = String::new();
        for (i, n) in self.nodes.iter().enumerate() {
            let name = self.stack_name(prog, i as u32);
            if n.steps > 0 {
                by_steps.push_str(&format!("{name} {}\n", n.steps));
            }
            if n.work > 0 {
                by_work.push_str(&format!("{name} {}\n", n.work));
            }
        }
        let mut rows: Vec<(String, u32, Cell)> = self
            .lines
            .iter()
            .map(|(&pos, c)| match prog.sources.locate(pos) {
                Some((f, l)) => (f.to_string(), l, *c),
                None => ("?".to_string(), pos, *c),
            })
            .collect();
        rows.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
        let mut lines = String::from("line\tsteps\twork\tcalls\n");
        for (f, l, c) in rows {
            lines.push_str(&format!("{f}:{l}\t{}\t{}\t{}\n", c.steps, c.work, c.calls));
        }
        (by_steps, by_work, lines)
    }

    /// Write the three files of `--profile FILE`.
    pub fn write(&self, prog: &Program, path: &std::path::Path) -> std::io::Result<()> {
        let (s, w, l) = self.render(prog);
        let with = |ext: &str| {
            let mut p = path.as_os_str().to_owned();
            p.push(ext);
            std::path::PathBuf::from(p)
        };
        std::fs::File::create(path)?.write_all(s.as_bytes())?;
        std::fs::File::create(with(".work"))?.write_all(w.as_bytes())?;
        std::fs::File::create(with(".lines"))?.write_all(l.as_bytes())?;
        Ok(())
    }
}
