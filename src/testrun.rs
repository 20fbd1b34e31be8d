//! `leash test [PATH...]` (SPEC 11): run the `test_` functions of `*_test.lsh` files.
//!
//! For each file: load and validate it, run its top level once, snapshot the globals;
//! then for each function of that file whose name starts with `test_`, in source order,
//! restore the snapshot and call it with a fresh step budget. A test passes when it
//! returns; it fails on an uncaught error or a limit. One line per test (`ok FILE NAME`
//! or `FAIL FILE NAME: message`), then `N passed, N failed`; a file that fails to load or
//! whose top level fails is one failed test (`FAIL FILE: message`). With `--format json`,
//! one JSON object per test instead (file, name, outcome, message, steps, work, ms).
//! Exit 0 when all passed, 1 otherwise, 3 on a load error.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::diag::Diagnostic;
use crate::interp::{Interp, RunConfig, SnapshotDir};

/// What a test run found.
#[derive(Debug, Default)]
pub struct Summary {
    pub passed: usize,
    pub failed: usize,
    pub load_errors: bool,
    /// Set when a result line could not be written to stdout (the run stops there).
    pub output: Option<std::io::Error>,
    /// `--format json`: one JSON object per test.
    pub json: bool,
    /// `--error-format json`: a test's failure is also written to stderr as a JSON
    /// diagnostic, for tools that asked for diagnostics; in text each failure is written
    /// once, on stdout (SPEC 11, round 3).
    pub failure_diags: bool,
}

/// One test's result, as a line of text or a JSON object.
struct Outcome<'a> {
    file: &'a str,
    name: Option<&'a str>,
    ok: bool,
    message: Option<&'a str>,
    steps: Option<u64>,
    work: Option<u64>,
    ms: Option<f64>,
    /// Where a failure happened: the file (as a diagnostic names it) and the line.
    at: Option<(&'a str, u32)>,
}

/// Where a diagnostic points, for a result line (`./` left out).
fn place(d: Option<&Diagnostic>) -> Option<(&str, u32)> {
    let d = d?;
    let file = d.file.as_deref()?;
    Some((file.strip_prefix("./").unwrap_or(file), d.line?))
}

impl Outcome<'_> {
    fn render(&self, json: bool) -> String {
        if !json {
            let mut s = String::from(if self.ok { "ok " } else { "FAIL " });
            s.push_str(self.file);
            if let Some(n) = self.name {
                s.push(' ');
                s.push_str(n);
            }
            if let Some(m) = self.message {
                s.push_str(": ");
                s.push_str(m);
            }
            if let Some((f, l)) = self.at {
                s.push_str(&format!("\n  at {f}:{l}"));
            }
            return s;
        }
        let mut o = Vec::new();
        o.extend_from_slice(b"{\"file\":");
        crate::diag::json_string(&mut o, self.file.as_bytes());
        o.extend_from_slice(b",\"name\":");
        match self.name {
            Some(n) => crate::diag::json_string(&mut o, n.as_bytes()),
            None => o.extend_from_slice(b"null"),
        }
        o.extend_from_slice(if self.ok { b",\"outcome\":\"ok\"" } else { b",\"outcome\":\"fail\"" });
        o.extend_from_slice(b",\"message\":");
        match self.message {
            Some(m) => crate::diag::json_string(&mut o, m.as_bytes()),
            None => o.extend_from_slice(b"null"),
        }
        if let Some(n) = self.steps {
            o.extend_from_slice(format!(",\"steps\":{n}").as_bytes());
        }
        if let Some(n) = self.work {
            o.extend_from_slice(format!(",\"work\":{n}").as_bytes());
        }
        if let Some(ms) = self.ms {
            o.extend_from_slice(format!(",\"ms\":{:.3}", ms).as_bytes());
        }
        if let Some((f, l)) = self.at {
            o.extend_from_slice(b",\"failure_file\":");
            crate::diag::json_string(&mut o, f.as_bytes());
            o.extend_from_slice(format!(",\"line\":{l}").as_bytes());
        }
        o.push(b'}');
        String::from_utf8_lossy(&o).into_owned()
    }
}

/// Write one result line; false (and the error kept) when stdout failed.
fn say_line(summary: &mut Summary, line: &str) -> bool {
    let mut o = std::io::stdout().lock();
    match writeln!(o, "{line}").and_then(|_| o.flush()) {
        Ok(()) => true,
        Err(e) => {
            summary.output = Some(e);
            false
        }
    }
}

impl Summary {
    pub fn status(&self) -> i32 {
        if self.load_errors {
            3
        } else if self.failed > 0 {
            1
        } else {
            0
        }
    }
}

/// The test files under `paths` (a directory is searched recursively for `*_test.lsh`,
/// in sorted order; a file named explicitly runs whatever its name).
pub fn collect(paths: &[PathBuf]) -> Result<Vec<PathBuf>, String> {
    let defaults = [PathBuf::from(".")];
    let paths = if paths.is_empty() { &defaults[..] } else { paths };
    let mut out = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p).map_err(|e| format!("cannot read {}: {}", p.display(), e))?;
        if meta.is_dir() {
            walk(p, &mut out, 0).map_err(|e| format!("cannot list {}: {}", p.display(), e))?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> std::io::Result<()> {
    if depth > 64 {
        return Ok(());
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.filter_map(|e| e.ok()).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let ft = e.file_type()?;
        let name = e.file_name();
        let name = name.to_string_lossy();
        if ft.is_dir() {
            if name.starts_with('.') || name == "target" || name == "__snapshots__" {
                continue;
            }
            walk(&path, out, depth + 1)?;
        } else if ft.is_file() && name.ends_with("_test.lsh") {
            out.push(path);
        }
    }
    Ok(())
}

/// Run the tests of one file, writing result lines to stdout and diagnostics through
/// `report`.
pub fn run_file(
    path: &Path,
    cfg: &RunConfig,
    area: &crate::source::IncludeArea,
    filter: Option<&str>,
    update: bool,
    summary: &mut Summary,
    report: &mut dyn FnMut(&Diagnostic),
) {
    let name = path.to_string_lossy().into_owned();
    // How result lines call the file: its path as given, without a leading `./`.
    let shown = name.strip_prefix("./").unwrap_or(&name).to_string();
    let json = summary.json;
    let budget = crate::memory::Budget::start(cfg.max_memory);
    // A regular file only, opened without blocking (a FIFO named directly must not hang).
    let loaded = match crate::fileio::read_bounded(path, crate::limits::MAX_SOURCE_BYTES, true) {
        Ok(text) => crate::load_within(&name, text, Some(path), area, budget),
        Err(e) => {
            let mut d = crate::diag::LoadError::new(
                crate::diag::LoadKind::Include,
                format!("cannot read test file: {}", crate::fileio::io_reason(&e)),
                &name,
                0,
            )
            .to_diag();
            d.line = None;
            Err(vec![d])
        }
    };
    let prog = match loaded {
        Ok(p) => p,
        Err(ds) => {
            // A file that cannot be read or does not load counts as one failed test (SPEC 11).
            summary.load_errors = true;
            summary.failed += 1;
            let msg = ds.first().map(|d| format!("load error [{}]: {}", d.kind, d.message)).unwrap_or_default();
            let o = Outcome {
                file: &shown,
                name: None,
                ok: false,
                message: Some(&msg),
                steps: None,
                work: None,
                ms: None,
                at: None,
            };
            if say_line(summary, &o.render(json)) {
                ds.iter().for_each(&mut *report);
            }
            return;
        }
    };
    let mut cfg = cfg.clone();
    cfg.heap = Some(budget);
    cfg.snapshots = Some(SnapshotDir {
        dir: path.parent().map(Path::to_path_buf).unwrap_or_default(),
        stem: path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
        update,
    });
    let mut it = Interp::new(&prog, &cfg);
    it.host.testing = true;
    // One result line, after the test's own output. False when stdout failed: the
    // failure is kept in the summary and the file's remaining tests are not run.
    let say = |it: &mut Interp<'_>, summary: &mut Summary, o: Outcome<'_>| -> bool {
        let _ = it.host.out.flush();
        say_line(summary, &o.render(json))
    };
    if let Err(u) = it.run_main() {
        let (_, d) = crate::failure(&prog, *u);
        let msg = d.as_ref().map(|d| d.message.clone()).unwrap_or_else(|| "exit during the top level".into());
        let msg = format!("top level: {msg}");
        summary.failed += 1;
        let (steps, work) = (Some(it.host.meter.steps()), Some(it.host.meter.worked()));
        // Written once, on stdout, with where it happened (SPEC 11, round 3).
        let at = place(d.as_ref());
        let o = Outcome { file: &shown, name: None, ok: false, message: Some(&msg), steps, work, ms: None, at };
        if say(&mut it, summary, o) && summary.failure_diags {
            if let Some(d) = d {
                report(&d);
            }
        }
        finish(&mut it);
        return;
    }
    let snap = it.snapshot_globals();
    // The file's own functions (not those of its includes or modules), in source order.
    let own = prog.sources.files.first().map(|f| (f.base, f.base + f.nlines)).unwrap_or((0, 0));
    for (fi, f) in prog.funcs.iter().enumerate() {
        if !f.name.starts_with("test_") || f.pos <= own.0 || f.pos > own.1 {
            continue;
        }
        if filter.is_some_and(|t| !f.name.contains(t)) {
            continue;
        }
        let tname = Some(f.name.as_str());
        if f.nparams != 0 {
            summary.failed += 1;
            let m = "a test function takes no arguments";
            let o = Outcome {
                file: &shown,
                name: tname,
                ok: false,
                message: Some(m),
                steps: None,
                work: None,
                ms: None,
                at: None,
            };
            if !say(&mut it, summary, o) {
                break;
            }
            continue;
        }
        it.restore_globals(&snap);
        let t0 = std::time::Instant::now();
        let r = it.call_test(fi);
        let ms = Some(t0.elapsed().as_secs_f64() * 1000.0);
        let (steps, work) = (Some(it.host.meter.steps()), Some(it.host.meter.worked()));
        match r {
            Ok(()) => {
                summary.passed += 1;
                let o = Outcome { file: &shown, name: tname, ok: true, message: None, steps, work, ms, at: None };
                if !say(&mut it, summary, o) {
                    break;
                }
            }
            Err(u) => {
                let (status, d) = crate::failure(&prog, *u);
                let msg = match &d {
                    Some(d) => d.message.clone(),
                    None => format!("exit({status}) called"),
                };
                summary.failed += 1;
                // Written once, on stdout, with where it happened (SPEC 11, round 3).
                let at = place(d.as_ref());
                let o = Outcome { file: &shown, name: tname, ok: false, message: Some(&msg), steps, work, ms, at };
                if !say(&mut it, summary, o) {
                    break;
                }
                if let (Some(d), true) = (d, summary.failure_diags) {
                    report(&d);
                }
            }
        }
    }
    finish(&mut it);
}

/// The end of a file's tests: its output out, its handles closed.
fn finish(it: &mut Interp<'_>) {
    let _ = it.host.out.flush();
    it.host.files.close_all();
    it.host.net.close_all();
    it.host.db.close_all();
}
