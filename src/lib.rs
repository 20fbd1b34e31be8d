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
pub mod cli;
pub mod diag;
pub mod gate;
pub mod gateway;
pub mod interp;
pub mod lexer;
pub mod limits;
pub mod memory;
pub mod meter;
pub mod parser;
pub mod program;
pub mod resolve;
pub mod source;
pub mod stdlib;
pub mod testrun;
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
    // Validate even after parse errors, so that one run reports as many as it can.
    if !errors.stop {
        if let Some(p) = resolve::resolve(loaded, &mut errors) {
            return Ok(p);
        }
    }
    Err(errors.list.iter().map(|e| e.to_diag()).collect())
}

/// How a run ended.
#[derive(Debug)]
pub struct Outcome {
    pub status: i32,
    pub diag: Option<Diagnostic>,
    pub stats: Stats,
    /// Output held back in CGI mode.
    pub held: Vec<u8>,
}

/// Run a loaded program to its end.
pub fn run(prog: &Program, cfg: &RunConfig) -> Outcome {
    let mut it = Interp::new(prog, cfg);
    let r = it.run_main();
    let (mut status, mut diag) = match r {
        Ok(()) => (0, None),
        Err(u) => failure(prog, *u),
    };
    if let Err(m) = it.out.flush() {
        // Output that could not be delivered is a failure of the run, unless the run
        // already failed for another reason.
        if diag.is_none() && status == 0 {
            status = 1;
            diag = Some(Diagnostic { class: Class::Runtime, kind: "io".into(), message: m, file: None, line: None });
        }
    }
    let held = it.out.take_held();
    it.files.close_all();
    it.net.close_all();
    it.db.close_all();
    Outcome { status, diag, stats: it.stats(), held }
}

/// The exit status and diagnostic of a run that stopped early.
pub fn failure(prog: &Program, u: Unwind) -> (i32, Option<Diagnostic>) {
    let locate = |pos| prog.sources.locate(pos).map(|(f, l)| (f.to_string(), l));
    let (status, class, kind, message, pos) = match u {
        Unwind::Exit(n) => return (n, None),
        Unwind::Error(e) => (1, Class::Runtime, e.kind.name().to_string(), e.message, e.pos),
        Unwind::Limit { kind, message, pos } => (4, Class::Limit, kind.name().to_string(), message, pos),
    };
    let at = locate(pos);
    let file = at.as_ref().map(|a| a.0.clone());
    (status, Some(Diagnostic { class, kind, message, file, line: at.map(|a| a.1) }))
}
