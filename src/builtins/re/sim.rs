//! A resumable NFA simulation: the leftmost-first match bounds the PikeVM finds, computed
//! the same way (one ordered thread list per position, the unanchored `(?s:.)*?` prefix
//! simulated by adding the start state's closure at each position until a match is
//! found), but run a bounded number of positions at a time, so that the caller can charge
//! the work meter and look at the deadline between runs (issue 8: a PikeVM search cannot
//! be interrupted, so its rescans could only be charged up front or not at all).
//!
//! It tracks one offset per thread (where its match started), not capture groups: groups
//! are found afterwards on the match's span, whose length bounds that search.

use regex_automata::nfa::thompson::{State, NFA};
use regex_automata::util::primitives::StateID;
use regex_automata::Input;

/// An ordered set of NFA states with a start offset per member.
#[derive(Debug, Default, Clone)]
struct Threads {
    dense: Vec<StateID>,
    sparse: Vec<u32>,
    start: Vec<usize>,
}

impl Threads {
    fn resize(&mut self, n: usize) {
        if self.sparse.len() != n {
            self.sparse = vec![0; n];
            self.start = vec![0; n];
            self.dense = Vec::with_capacity(n);
        }
    }

    #[inline(always)]
    fn contains(&self, sid: StateID) -> bool {
        let i = self.sparse[sid.as_usize()] as usize;
        i < self.dense.len() && self.dense[i] == sid
    }

    /// Insert `sid`; false when it is already a member.
    #[inline(always)]
    fn insert(&mut self, sid: StateID) -> bool {
        if self.contains(sid) {
            return false;
        }
        self.sparse[sid.as_usize()] = self.dense.len() as u32;
        self.dense.push(sid);
        true
    }

    fn clear(&mut self) {
        self.dense.clear();
    }
}

/// The scratch space of searches (kept with the engine's other caches).
#[derive(Debug, Default, Clone)]
pub struct SimCache {
    curr: Threads,
    next: Threads,
    stack: Vec<StateID>,
}

impl SimCache {
    pub fn memory_usage(&self) -> usize {
        (self.curr.sparse.len() + self.next.sparse.len()) * (4 + 4 + std::mem::size_of::<usize>())
            + self.stack.capacity() * 4
    }
}

/// One search in progress over `input`'s span (leftmost-first).
#[derive(Debug, Clone)]
pub struct Search {
    at: usize,
    /// The best match so far: (start, end).
    hm: Option<(usize, usize)>,
    done: bool,
    anchored: bool,
}

/// What a search found once it is done.
pub enum Step {
    /// Not done yet: call `run` again.
    More,
    Done(Option<(usize, usize)>),
}

impl Search {
    pub fn new(nfa: &NFA, input: &Input<'_>, cache: &mut SimCache) -> Search {
        let n = nfa.states().len();
        cache.curr.resize(n);
        cache.next.resize(n);
        cache.curr.clear();
        cache.next.clear();
        cache.stack.clear();
        let anchored = input.get_anchored().is_anchored() || nfa.is_always_start_anchored();
        Search { at: input.start(), hm: None, done: input.is_done(), anchored }
    }

    /// Where the search is (the next position it will look at).
    pub fn at(&self) -> usize {
        self.at
    }

    /// Run at most `max_positions` positions; `Step::Done` with the match once it is
    /// decided. The positions run are `at()` after minus before.
    pub fn run(&mut self, nfa: &NFA, input: &Input<'_>, cache: &mut SimCache, max_positions: usize) -> Step {
        let hay = input.haystack();
        let start_id = nfa.start_anchored();
        let end = input.end();
        let stop = self.at.saturating_add(max_positions);
        let SimCache { curr, next, stack } = cache;
        while !self.done && self.at <= end && self.at < stop {
            let at = self.at;
            if curr.dense.is_empty() && (self.hm.is_some() || (self.anchored && at > input.start())) {
                self.done = true;
                break;
            }
            if self.hm.is_none() && (!self.anchored || at == input.start()) {
                closure(nfa, stack, curr, hay, at, start_id, at);
            }
            for i in 0..curr.dense.len() {
                let sid = curr.dense[i];
                let from = curr.start[sid.as_usize()];
                let to = match nfa.state(sid) {
                    State::ByteRange { trans } => trans.matches(hay, at).then_some(trans.next),
                    State::Sparse(s) => s.matches(hay, at),
                    State::Dense(d) => d.matches(hay, at),
                    State::Match { .. } => {
                        self.hm = Some((from, at));
                        break;
                    }
                    _ => None,
                };
                if let Some(to) = to {
                    closure(nfa, stack, next, hay, at + 1, to, from);
                }
            }
            if input.get_earliest() && self.hm.is_some() {
                self.done = true;
                break;
            }
            std::mem::swap(curr, next);
            next.clear();
            self.at += 1;
        }
        if self.at > end {
            self.done = true;
        }
        if self.done {
            Step::Done(self.hm)
        } else {
            Step::More
        }
    }
}

/// Add the epsilon closure of `sid` at `at` to `set`, in priority order, each thread
/// starting at `from`.
#[inline(always)]
fn closure(nfa: &NFA, stack: &mut Vec<StateID>, set: &mut Threads, hay: &[u8], at: usize, sid: StateID, from: usize) {
    stack.push(sid);
    while let Some(mut sid) = stack.pop() {
        loop {
            if !set.insert(sid) {
                break;
            }
            match nfa.state(sid) {
                State::Fail | State::Match { .. } | State::ByteRange { .. } | State::Sparse(_) | State::Dense(_) => {
                    set.start[sid.as_usize()] = from;
                    break;
                }
                State::Look { look, next } => {
                    if !nfa.look_matcher().matches(*look, hay, at) {
                        break;
                    }
                    sid = *next;
                }
                State::Union { alternates } => {
                    let Some(&first) = alternates.first() else { break };
                    stack.extend(alternates[1..].iter().rev().copied());
                    sid = first;
                }
                State::BinaryUnion { alt1, alt2 } => {
                    stack.push(*alt2);
                    sid = *alt1;
                }
                State::Capture { next, .. } => sid = *next,
            }
        }
    }
}
