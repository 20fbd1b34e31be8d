//! Capture groups of a known match span by a small backtracker specialised for common
//! patterns (issue 12, `logparse`): the lazy DFA has already found the match `[s, e)`, so
//! the groups are those of the highest-priority path of the pattern that starts at `s`
//! and ends exactly at `e` (the path the PikeVM and regex-automata's bounded backtracker
//! report: leftmost-first, alternatives in order, greedy repetitions longest first).
//!
//! The program is compiled from the pattern's HIR. Its hot instruction is `Run`: a greedy
//! repetition of one byte class, scanned with a 256-entry table and backed off one byte
//! at a time (what the Thompson NFA does one state and one position at a time, with
//! visited-set bookkeeping for each). Everything else (literal bytes, classes, group
//! saves, alternations, loops, look-around assertions through regex-automata's own
//! `LookMatcher`) is the usual backtracking over a (instruction, position) visited set,
//! so no pair is explored twice.
//!
//! It refuses (the caller then uses regex-automata's engines) patterns it does not
//! model exactly: classes matching non-ASCII characters (Unicode classes are UTF-8
//! automata; on ASCII subjects the pattern's Unicode-off form, whose classes are byte
//! classes, is used instead), unbounded repetitions of a sub-pattern that can match
//! empty (their priority order depends on the NFA's construction), and programs longer
//! than `MAX_INSTS`. A search gives up (the caller falls back) when its visited set would
//! exceed `MAX_VISITED_BITS` or its steps exceed a budget proportional to program length
//! x span (which bounds the `Run` scans an adversarial pattern could repeat): the work is
//! thus linear in pattern x span, within a small factor of what the caller charged for.

use regex_automata::util::look::{Look, LookMatcher};
use regex_automata::util::primitives::NonMaxUsize;
use regex_syntax::hir::{Class, Hir, HirKind};

/// Longest program compiled (instructions).
const MAX_INSTS: usize = 2048;
/// Largest visited set (bits: instructions x (span + 1)), as the bounded backtracker's.
const MAX_VISITED_BITS: usize = 256 * 1024 * 8;
const NO_ROW: u32 = u32::MAX;

/// Steps (instructions run, bytes scanned) per (instruction, position) pair a search may
/// take before it gives up: one, so that with the fallback engine's run the worst case stays
/// within about twice the PikeVM charge the caller took.
const STEPS_PER_PAIR: usize = 1;

/// Frames the search without the visited set may hold (alternatives still to try and
/// saves to undo) before it gives up: its memory stays a few KiB whatever the subject
/// (`^(a|aa)*b` over 1 MiB of `a` would otherwise stack a frame per repetition).
const MAX_QUICK_FRAMES: usize = 256;

#[derive(Debug, Clone, Copy)]
enum Inst {
    Byte(u8),
    Class(u32),
    /// A greedy repetition of class `cls`, `min..=max` bytes (`max` u32::MAX: unbounded).
    /// `keep`: its shorter candidates are kept to back off to; false when none of them
    /// can go on (see `Prog::new`), as in `\S+ ` or `[^"]*"`.
    Run {
        cls: u32,
        min: u32,
        max: u32,
        keep: bool,
    },
    Save(u32),
    /// Try `0` first, then `1`.
    Split(u32, u32),
    Jmp(u32),
    Look(Look),
    Match,
}

/// A compiled capture program.
#[derive(Debug, Clone)]
pub struct Prog {
    insts: Vec<Inst>,
    /// Per instruction, its row in the visited set, or `NO_ROW`: only the instructions
    /// a path can reach in more than one way (the start, branch and jump targets, what
    /// follows a `Run`) are checked; between two of them a path is straight.
    row: Vec<u32>,
    rows: usize,
    classes: Vec<[bool; 256]>,
    /// Per class, how a `Run` of it is scanned.
    scans: Vec<Scan>,
    slots: usize,
    look: LookMatcher,
}

/// How a run of a class is scanned: byte by byte through its table, or, for a class of
/// all bytes but one, two or three (`[^"]`, `[^ ?"]` in their Unicode-off form), by
/// `memchr` for the first of those.
#[derive(Debug, Clone, Copy)]
enum Scan {
    Table,
    Until1(u8),
    Until2(u8, u8),
    Until3(u8, u8, u8),
}

impl Scan {
    fn of(t: &[bool; 256]) -> Scan {
        let out: Vec<u8> = (0..=255u8).filter(|&b| !t[b as usize]).collect();
        match out[..] {
            [a] => Scan::Until1(a),
            [a, b] => Scan::Until2(a, b),
            [a, b, c] => Scan::Until3(a, b, c),
            _ => Scan::Table,
        }
    }
}

enum Frame {
    Step(u32, usize),
    Restore(u32, Option<usize>),
    /// The remaining candidates of a `Run` at `pc`: continue at `next`, then below, down to `lo`.
    RunNext {
        pc: u32,
        lo: usize,
        next: usize,
    },
}

/// Scratch space kept between calls.
#[derive(Default)]
pub struct Cache {
    visited: Vec<u64>,
    stack: Vec<Frame>,
    slots: Vec<Option<usize>>,
}

impl Cache {
    pub fn memory_usage(&self) -> usize {
        self.visited.capacity() * 8 + self.stack.capacity() * std::mem::size_of::<Frame>() + self.slots.capacity() * 16
    }
}

struct Compiler {
    insts: Vec<Inst>,
    classes: Vec<[bool; 256]>,
    slots: usize,
}

/// The byte table of a class, `None` when it matches a non-ASCII character of a Unicode
/// class (a UTF-8 sequence, not one byte).
fn byte_table(c: &Class) -> Option<[bool; 256]> {
    let mut t = [false; 256];
    match c {
        Class::Bytes(b) => {
            for r in b.ranges() {
                for x in r.start()..=r.end() {
                    t[x as usize] = true;
                }
            }
        }
        Class::Unicode(u) => {
            for r in u.ranges() {
                if r.end() > '\x7f' {
                    return None;
                }
                for x in r.start() as u8..=r.end() as u8 {
                    t[x as usize] = true;
                }
            }
        }
    }
    Some(t)
}

fn look(l: regex_syntax::hir::Look) -> Option<Look> {
    use regex_syntax::hir::Look as H;
    Some(match l {
        H::Start => Look::Start,
        H::End => Look::End,
        H::StartLF => Look::StartLF,
        H::EndLF => Look::EndLF,
        H::StartCRLF => Look::StartCRLF,
        H::EndCRLF => Look::EndCRLF,
        H::WordAscii => Look::WordAscii,
        H::WordAsciiNegate => Look::WordAsciiNegate,
        H::WordUnicode => Look::WordUnicode,
        H::WordUnicodeNegate => Look::WordUnicodeNegate,
        H::WordStartAscii => Look::WordStartAscii,
        H::WordEndAscii => Look::WordEndAscii,
        H::WordStartUnicode => Look::WordStartUnicode,
        H::WordEndUnicode => Look::WordEndUnicode,
        H::WordStartHalfAscii => Look::WordStartHalfAscii,
        H::WordEndHalfAscii => Look::WordEndHalfAscii,
        H::WordStartHalfUnicode => Look::WordStartHalfUnicode,
        H::WordEndHalfUnicode => Look::WordEndHalfUnicode,
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

impl Compiler {
    fn push(&mut self, i: Inst) -> Option<u32> {
        if self.insts.len() >= MAX_INSTS {
            return None;
        }
        self.insts.push(i);
        Some((self.insts.len() - 1) as u32)
    }

    fn class(&mut self, t: [bool; 256]) -> u32 {
        match self.classes.iter().position(|c| *c == t) {
            Some(i) => i as u32,
            None => {
                self.classes.push(t);
                (self.classes.len() - 1) as u32
            }
        }
    }

    fn here(&self) -> u32 {
        self.insts.len() as u32
    }

    fn patch_split_second(&mut self, at: u32, to: u32) {
        if let Inst::Split(_, b) = &mut self.insts[at as usize] {
            *b = to;
        }
    }

    fn patch_split_first(&mut self, at: u32, to: u32) {
        if let Inst::Split(a, _) = &mut self.insts[at as usize] {
            *a = to;
        }
    }

    /// A split preferring the next instruction (greedy) or the target patched later
    /// (lazy); returns its index.
    fn split(&mut self, greedy: bool) -> Option<u32> {
        let at = self.here();
        let next = at + 1;
        self.push(if greedy { Inst::Split(next, u32::MAX) } else { Inst::Split(u32::MAX, next) })
    }

    /// Point the split's "skip" branch at `to`.
    fn patch_skip(&mut self, at: u32, greedy: bool, to: u32) {
        if greedy {
            self.patch_split_second(at, to)
        } else {
            self.patch_split_first(at, to)
        }
    }

    fn c(&mut self, h: &Hir) -> Option<()> {
        match h.kind() {
            HirKind::Empty => {}
            HirKind::Literal(l) => {
                for &b in l.0.iter() {
                    self.push(Inst::Byte(b))?;
                }
            }
            HirKind::Class(c) => {
                let t = byte_table(c)?;
                let i = self.class(t);
                self.push(Inst::Class(i))?;
            }
            HirKind::Look(l) => {
                self.push(Inst::Look(look(*l)?))?;
            }
            HirKind::Capture(c) => {
                let slot = c.index.checked_mul(2)? as usize;
                if slot + 1 >= self.slots {
                    return None;
                }
                self.push(Inst::Save(slot as u32))?;
                self.c(&c.sub)?;
                self.push(Inst::Save(slot as u32 + 1))?;
            }
            HirKind::Concat(v) => {
                for h in v {
                    self.c(h)?;
                }
            }
            HirKind::Alternation(v) => {
                let mut jumps = Vec::new();
                for (i, h) in v.iter().enumerate() {
                    if i + 1 < v.len() {
                        let s = self.split(true)?;
                        self.c(h)?;
                        jumps.push(self.push(Inst::Jmp(u32::MAX))?);
                        let next = self.here();
                        self.patch_split_second(s, next);
                    } else {
                        self.c(h)?;
                    }
                }
                let end = self.here();
                for j in jumps {
                    self.insts[j as usize] = Inst::Jmp(end);
                }
            }
            HirKind::Repetition(r) => {
                let single = match r.sub.kind() {
                    HirKind::Class(c) => Some(byte_table(c)?),
                    HirKind::Literal(l) if l.0.len() == 1 => {
                        let mut t = [false; 256];
                        t[l.0[0] as usize] = true;
                        Some(t)
                    }
                    _ => None,
                };
                if let (Some(t), true) = (single, r.greedy) {
                    let cls = self.class(t);
                    self.push(Inst::Run { cls, min: r.min, max: r.max.unwrap_or(u32::MAX), keep: true })?;
                    return Some(());
                }
                if r.min as usize > MAX_INSTS || r.max.is_some_and(|m| m as usize > MAX_INSTS) {
                    return None;
                }
                match r.max {
                    Some(max) => {
                        for _ in 0..r.min {
                            self.c(&r.sub)?;
                        }
                        // As regex-automata's compiler: the optional copies nested, each
                        // skip going to the end.
                        let mut skips = Vec::new();
                        for _ in r.min..max {
                            skips.push(self.split(r.greedy)?);
                            self.c(&r.sub)?;
                        }
                        let end = self.here();
                        for s in skips {
                            self.patch_skip(s, r.greedy, end);
                        }
                    }
                    None => {
                        // An unbounded loop whose body can match empty: refused (the
                        // NFA compiles it specially, see the module's header).
                        if r.sub.properties().minimum_len().is_none_or(|n| n == 0) {
                            return None;
                        }
                        if r.min == 0 {
                            let s = self.split(r.greedy)?;
                            self.c(&r.sub)?;
                            self.push(Inst::Jmp(s))?;
                            let end = self.here();
                            self.patch_skip(s, r.greedy, end);
                        } else {
                            for _ in 1..r.min {
                                self.c(&r.sub)?;
                            }
                            let top = self.here();
                            self.c(&r.sub)?;
                            // Loop back to `top` (preferred when greedy) or go on.
                            let at = self.here();
                            let next = at + 1;
                            self.push(if r.greedy { Inst::Split(top, next) } else { Inst::Split(next, top) })?;
                        }
                    }
                }
            }
        }
        Some(())
    }
}

/// The first search's budget over a span of `width` positions: the program once and
/// every position twice, plus a little.
fn quick_budget(p: &Prog, width: usize) -> usize {
    p.insts.len().saturating_add(width.saturating_mul(2)).saturating_add(64)
}

impl Prog {
    /// The program for `hir` with `slots` capture slots (two per group, group 0 first),
    /// or `None` when the pattern is not one this engine models.
    pub fn new(hir: &Hir, slots: usize, look: LookMatcher) -> Option<Prog> {
        if slots < 2 {
            return None;
        }
        let mut c = Compiler { insts: Vec::new(), classes: Vec::new(), slots };
        c.c(hir)?;
        c.push(Inst::Match)?;
        let mut join = vec![false; c.insts.len() + 1];
        join[0] = true;
        for (pc, i) in c.insts.iter().enumerate() {
            match *i {
                Inst::Split(a, b) => {
                    join[a as usize] = true;
                    join[b as usize] = true;
                }
                Inst::Jmp(t) => join[t as usize] = true,
                Inst::Run { .. } => join[pc + 1] = true,
                _ => {}
            }
        }
        // A run need not keep its shorter candidates when what must follow it (past group
        // saves, which consume nothing) cannot begin with a byte of its class, or is the
        // end: every shorter candidate ends before a byte of the class (one the run took),
        // or before the span's end, so its path fails at once.
        for pc in 0..c.insts.len() {
            let Inst::Run { cls, .. } = c.insts[pc] else { continue };
            let t = &c.classes[cls as usize];
            let disjoint = |u: &[bool; 256]| !(0..256).any(|b| t[b] && u[b]);
            let mut next = pc + 1;
            while let Some(Inst::Save(_)) = c.insts.get(next) {
                next += 1;
            }
            let stops = match c.insts.get(next) {
                Some(Inst::Byte(b)) => !t[*b as usize],
                Some(Inst::Class(k)) => disjoint(&c.classes[*k as usize]),
                Some(Inst::Run { cls: k, min, .. }) => *min >= 1 && disjoint(&c.classes[*k as usize]),
                Some(Inst::Match) => true,
                _ => false,
            };
            if let Inst::Run { keep, .. } = &mut c.insts[pc] {
                *keep = !stops;
            }
        }
        let scans = c.classes.iter().map(Scan::of).collect();
        let mut rows = 0;
        let row = c
            .insts
            .iter()
            .enumerate()
            .map(|(pc, _)| {
                if join[pc] {
                    rows += 1;
                    rows as u32 - 1
                } else {
                    NO_ROW
                }
            })
            .collect();
        Some(Prog { insts: c.insts, row, rows, classes: c.classes, scans, slots, look })
    }

    /// The capture slots of the highest-priority path from `s` ending exactly at `e`
    /// (which the caller knows to exist), into `out` (`slots` entries): Some(true)
    /// found, Some(false) no path (a bug when the caller knows a match), None gave up
    /// (too big a span for the visited set, or over its step budget): the caller then
    /// uses another engine. (The caller runs the two searches itself, charging each
    /// before it runs.)
    ///
    /// First without the visited set, on a budget of about the program and twice the
    /// span: a path that needs little backtracking (a log line's) is found without the
    /// set's upkeep. Only past that budget, again with the set, on the linear budget.
    /// Both explore paths in the same order, and the set only prunes (instruction,
    /// position) pairs already explored without reaching the end, so both find the
    /// same path.
    #[cfg(test)]
    pub fn try_captures(
        &self,
        c: &mut Cache,
        hay: &[u8],
        s: usize,
        e: usize,
        out: &mut [Option<NonMaxUsize>],
    ) -> Option<bool> {
        if let Some(found) = self.quick(c, hay, s, e, true, out).0 {
            return Some(found);
        }
        self.thorough_captures(c, hay, s, e, out)
    }

    /// The steps the quick search (`quick`) may take over a
    /// span of `width` positions: what the caller charges before it runs.
    pub fn quick_steps(&self, width: usize) -> usize {
        quick_budget(self, width)
    }

    /// The quick search: without the visited set, on the quick budget (about the program
    /// plus twice the span). `exact`: `try_captures`' first search, a path from `s` ending
    /// exactly at `e`. Otherwise, for a pattern anchored at its start, the leftmost-first
    /// match from `s` ending by `e`, with its groups: the first path in priority order that
    /// reaches the end of the pattern is the match the PikeVM reports (leftmost-first is
    /// the order a backtracker tries paths in), and its groups are that path's; `out[1]`
    /// is its end. Some(true) found, Some(false) none, None gave up; with the steps it
    /// took (at most `quick_steps` of the span: all of them when it gave up), for a
    /// caller that charges what the search did.
    pub fn quick(
        &self,
        c: &mut Cache,
        hay: &[u8],
        s: usize,
        e: usize,
        exact: bool,
        out: &mut [Option<NonMaxUsize>],
    ) -> (Option<bool>, usize) {
        let budget = quick_budget(self, e - s + 1);
        let mut left = budget;
        let found = self.search::<false>(c, hay, s, e, exact, out, &mut left);
        // Gave up: the whole budget counts, whatever stopped it.
        let used = if found.is_none() { budget } else { budget - left };
        (found, used)
    }

    /// `try_captures`' second search: with the visited set, on the linear budget.
    pub fn thorough_captures(
        &self,
        c: &mut Cache,
        hay: &[u8],
        s: usize,
        e: usize,
        out: &mut [Option<NonMaxUsize>],
    ) -> Option<bool> {
        let width = e - s + 1;
        let bits = self.rows.checked_mul(width).filter(|&b| b <= MAX_VISITED_BITS)?;
        c.visited.clear();
        c.visited.resize(bits.div_ceil(64), 0);
        let mut budget = self.insts.len().saturating_mul(width).saturating_mul(STEPS_PER_PAIR).saturating_add(64);
        self.search::<true>(c, hay, s, e, true, out, &mut budget)
    }

    /// One backtracking search from `s`, within `..e` (with the visited set when `MEMO`;
    /// a path must end exactly at `e` when `exact`): Some(found), or None when it ran out
    /// of `budget` (what is left of it stays there).
    #[allow(clippy::too_many_arguments)]
    fn search<const MEMO: bool>(
        &self,
        c: &mut Cache,
        hay: &[u8],
        s: usize,
        e: usize,
        exact: bool,
        out: &mut [Option<NonMaxUsize>],
        budget: &mut usize,
    ) -> Option<bool> {
        let width = e - s + 1;
        c.stack.clear();
        c.slots.clear();
        c.slots.resize(self.slots, None);
        let Cache { visited, stack, slots } = c;
        // Frames on the stack that are paths still to try: a group save needs undoing on
        // backtracking only when there is one (with none, a failure ends the search).
        let mut alts = 1usize;
        stack.push(Frame::Step(0, s));
        while let Some(f) = stack.pop() {
            let (mut pc, mut at) = match f {
                Frame::Step(pc, at) => {
                    alts -= 1;
                    (pc as usize, at)
                }
                Frame::Restore(slot, v) => {
                    slots[slot as usize] = v;
                    continue;
                }
                Frame::RunNext { pc, lo, next } => {
                    if next > lo {
                        stack.push(Frame::RunNext { pc, lo, next: next - 1 });
                    } else {
                        alts -= 1;
                    }
                    (pc as usize + 1, next)
                }
            };
            loop {
                if *budget == 0 || (!MEMO && stack.len() > MAX_QUICK_FRAMES) {
                    return None;
                }
                *budget -= 1;
                if MEMO {
                    let row = self.row[pc];
                    if row != NO_ROW {
                        let bit = row as usize * width + (at - s);
                        let (w, m) = (bit / 64, 1u64 << (bit % 64));
                        if visited[w] & m != 0 {
                            break;
                        }
                        visited[w] |= m;
                    }
                }
                match self.insts[pc] {
                    Inst::Byte(b) => {
                        if at < e && hay[at] == b {
                            pc += 1;
                            at += 1;
                        } else {
                            break;
                        }
                    }
                    Inst::Class(k) => {
                        if at < e && self.classes[k as usize][hay[at] as usize] {
                            pc += 1;
                            at += 1;
                        } else {
                            break;
                        }
                    }
                    Inst::Run { cls, min, max, keep } => {
                        let lim = if max == u32::MAX { e } else { e.min(at.saturating_add(max as usize)) };
                        let run = &hay[at..lim];
                        let scanned = match self.scans[cls as usize] {
                            Scan::Until1(a) => memchr::memchr(a, run),
                            Scan::Until2(a, b) => memchr::memchr2(a, b, run),
                            Scan::Until3(a, b, c) => memchr::memchr3(a, b, c, run),
                            Scan::Table => {
                                let t = &self.classes[cls as usize];
                                run.iter().position(|&b| !t[b as usize])
                            }
                        }
                        .unwrap_or(run.len());
                        let r = at + scanned;
                        if *budget < scanned {
                            return None;
                        }
                        *budget -= scanned;
                        let lo = at + min as usize;
                        if r < lo {
                            break;
                        }
                        if keep && r > lo {
                            stack.push(Frame::RunNext { pc: pc as u32, lo, next: r - 1 });
                            alts += 1;
                        }
                        pc += 1;
                        at = r;
                    }
                    Inst::Save(k) => {
                        if alts > 0 {
                            stack.push(Frame::Restore(k, slots[k as usize]));
                        }
                        slots[k as usize] = Some(at);
                        pc += 1;
                    }
                    Inst::Split(a, b) => {
                        stack.push(Frame::Step(b, at));
                        alts += 1;
                        pc = a as usize;
                    }
                    Inst::Jmp(t) => pc = t as usize,
                    Inst::Look(l) => {
                        // Look-around sees the whole subject, as the other engines do.
                        if self.look.matches(l, hay, at) {
                            pc += 1;
                        } else {
                            break;
                        }
                    }
                    Inst::Match => {
                        if (at == e || !exact) && out.len() == slots.len() {
                            for (o, v) in out.iter_mut().zip(slots.iter()) {
                                *o = v.and_then(NonMaxUsize::new);
                            }
                            out[0] = NonMaxUsize::new(s);
                            out[1] = NonMaxUsize::new(at);
                            return Some(true);
                        }
                        break;
                    }
                }
            }
        }
        Some(false)
    }
}
