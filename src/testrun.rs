//! `leash test [PATH...]` (SPEC 11): run the `test_` functions of `*_test.lsh` files.
//!
//! For each file: load and validate it, run its top level once, snapshot the globals;
//! then for each function of that file whose name starts with `test_`, in source order,
//! restore the snapshot and call it with a fresh step budget. A test passes when it
//! returns; it fails on an uncaught error or a limit. One line per test (`ok NAME` or
//! `FAIL NAME: message`), then `N passed, N failed`. Exit 0 when all passed, 1
//! otherwise, 3 on a load error.

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
    filter: Option<&str>,
    update: bool,
    summary: &mut Summary,
    report: &mut dyn FnMut(&Diagnostic),
) {
    let name = path.to_string_lossy().into_owned();
    let budget = crate::memory::Budget::start(cfg.max_memory);
    let text = match crate::source::read_bounded(path, crate::limits::MAX_SOURCE_BYTES, false) {
        Ok(t) => t,
        Err(e) => {
            let mut d = crate::diag::LoadError::new(
                crate::diag::LoadKind::Include,
                format!("cannot read test file: {}", crate::source::io_reason(&e)),
                &name,
                0,
            )
            .to_diag();
            d.line = None;
            report(&d);
            summary.load_errors = true;
            return;
        }
    };
    let prog = match crate::load_within(&name, text, Some(path), budget) {
        Ok(p) => p,
        Err(ds) => {
            ds.iter().for_each(&mut *report);
            summary.load_errors = true;
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
    let say = |it: &mut Interp<'_>, line: String| {
        let _ = it.out.flush();
        let mut o = std::io::stdout().lock();
        let _ = writeln!(o, "{line}");
        let _ = o.flush();
    };
    if let Err(u) = it.run_main() {
        let (_, d) = crate::failure(&prog, *u);
        let msg = d.as_ref().map(|d| d.message.clone()).unwrap_or_else(|| "exit during the top level".into());
        say(&mut it, format!("FAIL {name}: {msg}"));
        if let Some(d) = d {
            report(&d);
        }
        summary.failed += 1;
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
        if f.nparams != 0 {
            say(&mut it, format!("FAIL {}: a test function takes no arguments", f.name));
            summary.failed += 1;
            continue;
        }
        it.restore_globals(&snap);
        match it.call_test(fi) {
            Ok(()) => {
                say(&mut it, format!("ok {}", f.name));
                summary.passed += 1;
            }
            Err(u) => {
                let (status, d) = crate::failure(&prog, *u);
                let msg = match &d {
                    Some(d) => d.message.clone(),
                    None => format!("exit({status}) called"),
                };
                say(&mut it, format!("FAIL {}: {msg}", f.name));
                if let Some(d) = d {
                    report(&d);
                }
                summary.failed += 1;
            }
        }
    }
    let _ = it.out.flush();
    it.files.close_all();
    it.net.close_all();
    it.db.close_all();
}
