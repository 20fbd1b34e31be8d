//! Leash: a line-scripting language whose scripts run on a leash held by the operator.
//!
//! The pipeline, one stage per module:
//! `source` (files, includes, budgets) -> `lexer` -> `parser` (lines, blocks; `ast`)
//! -> `resolve` (validation, names to slots; `program`) -> `interp` (evaluation, with
//! `builtins` and `budget`). `cli` turns the command line into a `cli::Config`.

#![forbid(unsafe_code)]

pub mod app;
pub mod ast;
pub mod budget;
pub mod builtins;
pub mod caps;
pub mod cgi_guard;
pub mod cli;
pub mod compile;
pub mod diag;
pub mod error;
pub mod fastcgi;
pub mod fastcgi_request;
pub mod fastcgi_server;
pub mod fastcgi_shared;
pub mod fastcgi_warm;
pub mod fileio;
pub mod gate;
pub mod gateway;
pub mod interp;
pub mod lexer;
pub mod limits;
pub mod memory;
pub mod meter;
pub mod parser;
pub mod profile;
pub mod program;
pub mod program_cache;
pub mod report;
pub mod resolve;
pub mod source;
pub mod stdlib;
pub mod teach;
#[cfg(test)]
pub(crate) mod test_support;
pub mod testrun;
pub mod tools;
pub mod value;

use std::path::Path;

use diag::{Class, Diagnostic};
use interp::{Interp, RunConfig, Stats, Unwind};
use program::Program;

/// `load_with` within a heap budget (`--max-memory`, which the run then shares): a load
/// that would hold more is a load error of kind `memory`.
pub fn load_within(
    name: &str,
    text: Vec<u8>,
    path: Option<&Path>,
    area: &source::IncludeArea,
    budget: memory::Budget,
) -> Result<Program, Vec<Diagnostic>> {
    memory::with_load_budget(budget, || load_with(name, text, path, area))
}

/// Load and validate a program: every file, every function, before anything runs.
/// Includes may come only from beneath the entry script's directory.
pub fn load(name: &str, text: Vec<u8>, path: Option<&Path>) -> Result<Program, Vec<Diagnostic>> {
    load_with(name, text, path, &source::IncludeArea::default())
}

/// `load`, with includes also allowed from `area` (`--include-path`, read grants).
pub fn load_with(
    name: &str,
    text: Vec<u8>,
    path: Option<&Path>,
    area: &source::IncludeArea,
) -> Result<Program, Vec<Diagnostic>> {
    let (loaded, mut errors) = source::Loader::with_area(area.clone()).load_main(name, text, path);
    ast::clear_names();
    let map = loaded.map.clone();
    // Validate even after parse errors, so that one run reports as many as it can.
    if !errors.stop {
        if let Some(p) = resolve::resolve(loaded, &mut errors) {
            return Ok(p);
        }
    }
    // Source order: within a file by line (errors of one line in the order found);
    // files in the order their first error was found (an include's error before the
    // errors it causes in the file that includes it).
    let mut list = errors.list;
    let mut files: Vec<Option<String>> = Vec::new();
    for e in &list {
        if !files.contains(&e.file) {
            files.push(e.file.clone());
        }
    }
    list.sort_by_key(|e| (files.iter().position(|f| *f == e.file).unwrap_or(0), e.line.unwrap_or(0)));
    Err(list
        .iter()
        .map(|e| {
            let mut d = e.to_diag();
            map.complete(&mut d);
            d
        })
        .collect())
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    pub status: i32,
    pub diag: Option<Diagnostic>,
    pub stats: Stats,
    /// Output held back in CGI mode.
    pub held: Vec<u8>,
    /// The profile of the run, when `RunConfig::profile` asked for one.
    pub profile: Option<Box<profile::Profile>>,
}

/// Set in a process that runs one script and then ends (a `leash-cgi --fastcgi` worker):
/// `run` then leaves the evaluator's memory to the process's end instead of freeing it.
static LAST_RUN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Say that this process ends after its next run (see `run`). For a forked worker, whose
/// heap is a copy-on-write image of its warm process: freeing what a run holds writes to
/// every page of it (malloc's chunk headers and bins), and each first write to a page
/// shared with the warm process copies that page, all for a process about to end.
pub fn set_last_run() {
    LAST_RUN.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Run a loaded program to its end.
///
/// Everything that is not memory is released here, in every case: the output flushed
/// (or held, in CGI mode), the script's readers, sockets and databases closed. After
/// `set_last_run` the evaluator itself (values, globals, the per-run regex cache) is
/// then not dropped: the process ends next, and its memory goes with it.
pub fn run(prog: &Program, cfg: &RunConfig) -> Outcome {
    let mut it = Interp::new(prog, cfg);
    if cfg.profile {
        it.start_profile();
    }
    let r = it.run_main();
    let (mut status, mut diag) = match r {
        Ok(()) => (0, None),
        Err(u) => failure(prog, *u),
    };
    if let Err(m) = it.host.out.flush() {
        // Output that could not be delivered is a failure of the run, unless the run
        // already failed for another reason.
        if diag.is_none() && status == 0 {
            status = 1;
            diag = Some(Diagnostic::new(Class::Runtime, "io", m));
        }
    }
    let held = it.host.out.take_held();
    it.host.files.close_all();
    it.host.net.close_all();
    it.host.db.close_all();
    let profile = it.take_profile();
    let out = Outcome { status, diag, stats: it.stats(), held, profile };
    if LAST_RUN.load(std::sync::atomic::Ordering::Relaxed) {
        std::mem::forget(it);
    }
    out
}

/// The column of the first whole-word `word` in `line` (1-based, characters).
fn word_column(line: &str, word: &str) -> Option<u32> {
    let is_word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = line.as_bytes();
    let mut from = 0;
    while let Some(i) = line[from..].find(word).map(|i| i + from) {
        let j = i + word.len();
        if (i == 0 || !is_word(b[i - 1])) && (j == b.len() || !is_word(b[j])) {
            return Some(diag::char_column(line, i));
        }
        from = i + 1;
    }
    None
}

/// The exit status and diagnostic of a run that stopped early.
pub fn failure(prog: &Program, u: Unwind) -> (i32, Option<Diagnostic>) {
    let (status, class, kind, message, pos, spot, help) = match u {
        Unwind::Exit(n) => return (n, None),
        Unwind::Error(e) => (1, Class::Runtime, e.kind.name().to_string(), e.message, e.pos, e.spot, e.help),
        Unwind::Limit { kind, message, pos } => (4, Class::Limit, kind.name().to_string(), message, pos, 0, None),
    };
    let at = prog.sources.place(pos, spot);
    let mut d = Diagnostic::new(class, kind, message);
    d.file = at.map(|a| a.0.to_string());
    d.line = at.map(|a| a.1);
    if let Some((_, _, Some((c, w)))) = at {
        d.detail.column = Some(c);
        d.detail.width = w;
    }
    d.detail.help.extend(help);
    prog.sources.complete(&mut d);
    // A variable read by an operator on two plain operands has no spot of its own: it
    // stands where the name does (its first whole-word use on the line).
    if d.detail.column.is_none() && d.kind == "name" {
        if let (Some(t), Some(name)) = (&d.detail.source_line, d.message.split('`').nth(1)) {
            if let Some(c) = word_column(t, name) {
                d.detail.column = Some(c);
                d.detail.width = name.len() as u32;
            }
        }
    }
    (status, Some(d))
}
