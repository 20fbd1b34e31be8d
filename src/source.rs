//! Source files: reading, encoding, the source budgets, `include` and `import`.
//!
//! The loader reads the main script, then every include (once per canonical path, cycles
//! refused, at most `MAX_ACTIVE_INCLUDES` active) and every imported stdlib module,
//! charging all of them to the source byte and line budgets. Each file gets a range of
//! global positions so that one `u32` names any line of any file.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::ast::{FnDef, Pos, Stmt, StmtKind};
use crate::diag::{LoadError, LoadErrors, LoadKind};
use crate::fileio::{io_reason, open_regular, read_open};
use crate::limits::*;
use crate::parser::{parse_file, ParsedFile};
use crate::stdlib;

#[derive(Debug, Clone)]
pub struct SourceFile {
    pub name: String,
    pub base: Pos,
    pub nlines: u32,
    /// The file's text (BOM removed), kept to show the line of a diagnostic.
    pub text: std::rc::Rc<str>,
    /// The byte offset of each line's start in `text` (empty: not known, found by
    /// scanning), so that placing a spot costs the length of its statement only.
    pub starts: std::rc::Rc<[u32]>,
}

impl SourceFile {
    /// The text of line `line` (1-based) and the rest of the file after it, from the
    /// start of that line.
    fn from_line(&self, line: u32) -> Option<&str> {
        let i = line.checked_sub(1)? as usize;
        match self.starts.get(i) {
            Some(&b) => self.text.get(b as usize..),
            None if self.starts.is_empty() => {
                let mut at = 0usize;
                for _ in 0..i {
                    at += self.text.get(at..)?.find('\n')? + 1;
                }
                self.text.get(at..)
            }
            None => None,
        }
    }
}

/// All loaded files, for turning a position back into (file, line).
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    pub files: Vec<SourceFile>,
}

impl SourceMap {
    pub fn locate(&self, pos: Pos) -> Option<(&str, u32)> {
        // Files are added in increasing base order.
        let i = self.files.partition_point(|f| f.base < pos);
        let f = self.files.get(i.checked_sub(1)?)?;
        if pos > f.base && pos <= f.base + f.nlines.max(1) {
            Some((&f.name, pos - f.base))
        } else {
            None
        }
    }

    /// Where `spot` of the statement at `pos` is: its file, physical line, and column and
    /// width when the spot has them. The column of a spot counts characters over the
    /// statement's lines joined with `\n` (SPEC 2: a statement goes on over lines while a
    /// bracket is open), so a spot past the end of the first line lies on a later one.
    pub fn place(&self, pos: Pos, spot: crate::ast::Spot) -> Option<(&str, u32, Option<(u32, u32)>)> {
        let (name, line) = self.locate(pos)?;
        let Some(mut col) = crate::ast::spot_column(spot) else { return Some((name, line, None)) };
        let width = crate::ast::spot_width(spot);
        let i = self.files.partition_point(|f| f.base < pos).checked_sub(1)?;
        let mut l = line;
        for t in self.files[i].from_line(line)?.split('\n') {
            let t = t.strip_suffix('\r').unwrap_or(t);
            let n = t.chars().count() as u32;
            if col <= n + 1 || l >= self.files[i].nlines {
                let w = if col <= n { width.min(n + 1 - col) } else { 1 };
                return Some((name, l, Some((col, w))));
            }
            col -= n + 1;
            l += 1;
        }
        Some((name, line, None))
    }

    /// The text of line `line` (1-based) of the file diagnostics call `name`.
    pub fn line_text(&self, name: &str, line: u32) -> Option<&str> {
        let f = self.files.iter().find(|f| f.name == name)?;
        let l = f.from_line(line)?.split('\n').next()?;
        Some(l.strip_suffix('\r').unwrap_or(l))
    }

    /// Fill in what the loaded sources can add to a diagnostic: the source line, and
    /// when no column is known the line's first non-blank character.
    pub fn complete(&self, d: &mut crate::diag::Diagnostic) {
        let (Some(f), Some(l)) = (&d.file, d.line) else { return };
        if let Some(t) = self.line_text(f, l) {
            if d.detail.column.is_none() && d.class == crate::diag::Class::Load {
                d.detail.column = Some(crate::diag::first_column(t));
            }
            d.detail.source_line = Some(t.to_string());
        } else if d.class == crate::diag::Class::Load && d.detail.column.is_none() {
            d.detail.column = Some(1);
        }
    }
}

/// What the loader produced: main's statements (includes spliced in), every function,
/// and the modules imported.
#[derive(Debug, Default)]
pub struct Loaded {
    pub main: Vec<Stmt>,
    pub fns: Vec<FnDef>,
    pub modules: Vec<String>,
    pub map: SourceMap,
}

/// Where `include` may read from (SPEC 5). An include must resolve (every symlink and
/// `..` resolved, checked on the descriptor actually opened) beneath the entry script's
/// directory (the working directory for `-e` and stdin programs), beneath one of `dirs`
/// (the operator's `--include-path DIR`; `root` under leash-cgi), or inside a read grant.
#[derive(Debug, Clone, Default)]
pub struct IncludeArea {
    /// Canonical directories beside the entry script's own (`--include-path`).
    pub dirs: Vec<PathBuf>,
    /// A read grant covers every path: `--allow-files` today. Hook for issue 14: a scoped
    /// `--allow-read=PATH,...` / `--allow-files=PATH,...` adds its canonical paths to
    /// `dirs` (a file scope covers that file), and only an unscoped flag sets this.
    pub everywhere: bool,
}

impl IncludeArea {
    /// The `--include-path` directories and the read grants' canonical directories
    /// (`grants`; None when a grant covers every path).
    pub fn of(include_path: &[PathBuf], grants: Option<Vec<PathBuf>>) -> Self {
        let mut dirs = include_path.to_vec();
        let everywhere = match grants {
            None => true,
            Some(d) => {
                dirs.extend(d);
                false
            }
        };
        IncludeArea { dirs, everywhere }
    }

    /// Is the canonical path `p` inside the area, given the entry directory `entry`?
    fn covers(&self, entry: Option<&Path>, p: &Path) -> bool {
        self.everywhere || entry.is_some_and(|e| p.starts_with(e)) || self.dirs.iter().any(|d| p.starts_with(d))
    }
}

/// The path the kernel really opened for `f` (from /proc), when the system tells it.
fn opened_path(f: &std::fs::File) -> Option<PathBuf> {
    use std::os::fd::AsRawFd;
    std::fs::read_link(format!("/proc/self/fd/{}", f.as_raw_fd())).ok()
}

/// Where a load was asked for: a file and line, for diagnostics.
type At = Option<(String, u32)>;

pub struct Loader {
    pub errors: LoadErrors,
    out: Loaded,
    bytes: usize,
    lines: usize,
    next_base: Pos,
    loaded: HashSet<PathBuf>,
    active: Vec<PathBuf>,
    /// 1 when the main script is a file (and so sits at the bottom of `active`).
    main_active: usize,
    /// Where includes may come from, and the entry script's canonical directory.
    area: IncludeArea,
    entry_dir: Option<PathBuf>,
}

impl Default for Loader {
    fn default() -> Self {
        Self::new()
    }
}

impl Loader {
    pub fn new() -> Self {
        Loader {
            errors: LoadErrors::default(),
            out: Loaded::default(),
            bytes: 0,
            lines: 0,
            next_base: 0,
            loaded: HashSet::new(),
            active: Vec::new(),
            main_active: 0,
            area: IncludeArea::default(),
            entry_dir: None,
        }
    }

    /// A loader whose includes must come from inside `area` (besides the entry script's
    /// own directory).
    pub fn with_area(area: IncludeArea) -> Self {
        Loader { area, ..Self::new() }
    }

    fn err(&mut self, kind: LoadKind, msg: impl Into<String>, at: &At) {
        self.errors.push(LoadError {
            kind,
            message: msg.into(),
            file: at.as_ref().map(|a| a.0.clone()),
            line: at.as_ref().map(|a| a.1),
            detail: Default::default(),
        });
    }

    /// Load a program: `name` is how diagnostics call it, `path` its file (for includes
    /// relative to it and cycle detection; None for `-e` and stdin programs).
    pub fn load_main(mut self, name: &str, text: Vec<u8>, path: Option<&Path>) -> (Loaded, LoadErrors) {
        let dir = path.and_then(|p| p.parent()).map(Path::to_path_buf).unwrap_or_default();
        // The directory includes are relative to, canonical: the script's own, or the
        // working directory for `-e` and stdin programs.
        let here = if dir.as_os_str().is_empty() { Path::new(".") } else { &dir };
        self.entry_dir = std::fs::canonicalize(here).ok();
        let canon = path.and_then(|p| std::fs::canonicalize(p).ok());
        if let Some(c) = &canon {
            self.loaded.insert(c.clone());
            self.active.push(c.clone());
            self.main_active = 1;
        }
        let stmts = self.load_text(name, text, &dir, None, &None);
        self.out.main = stmts;
        (self.out, self.errors)
    }

    /// Check encoding and budgets, parse, and expand includes and imports.
    fn load_text(&mut self, name: &str, text: Vec<u8>, dir: &Path, module: Option<&str>, at: &At) -> Vec<Stmt> {
        if self.errors.stop {
            return vec![];
        }
        self.bytes += text.len();
        if self.bytes > MAX_SOURCE_BYTES {
            self.err(
                LoadKind::Limit(LimitKind::SourceBytes),
                format!("source exceeds {MAX_SOURCE_BYTES} bytes over all loaded files"),
                &at.clone().or(Some((name.to_string(), 1))),
            );
            self.errors.stop = true;
            return vec![];
        }
        let body = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(&text);
        let src = match std::str::from_utf8(body) {
            Ok(s) => s,
            Err(e) => {
                let line = body[..e.valid_up_to()].iter().filter(|&&b| b == b'\n').count() as u32 + 1;
                let valid = &body[..e.valid_up_to()];
                let start = valid.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
                let col = std::str::from_utf8(&valid[start..]).map_or(1, |t| t.chars().count() as u32 + 1);
                self.errors
                    .push(LoadError::new(LoadKind::Encoding, "source is not valid UTF-8", name, line).at(col, 1));
                return vec![];
            }
        };
        let mut lines: Vec<&str> = src.split('\n').collect();
        if src.ends_with('\n') || src.is_empty() {
            lines.pop();
        }
        self.lines += lines.len();
        if self.lines > MAX_SOURCE_LINES {
            self.err(
                LoadKind::Limit(LimitKind::SourceLines),
                format!("source exceeds {MAX_SOURCE_LINES} lines over all loaded files"),
                &at.clone().or(Some((name.to_string(), 1))),
            );
            self.errors.stop = true;
            return vec![];
        }
        let base = self.next_base;
        self.next_base += lines.len() as u32 + 1;
        self.out.map.files.push(SourceFile {
            name: name.to_string(),
            base,
            nlines: lines.len() as u32,
            text: std::rc::Rc::from(src),
            starts: lines
                .iter()
                .scan(0u32, |at, l| {
                    let b = *at;
                    *at += l.len() as u32 + 1;
                    Some(b)
                })
                .collect(),
        });
        for (i, l) in lines.iter_mut().enumerate() {
            if l.len() > MAX_LINE_BYTES {
                self.err(
                    LoadKind::Limit(LimitKind::LineBytes),
                    format!("line of {} bytes (limit is {MAX_LINE_BYTES})", l.len()),
                    &Some((name.to_string(), i as u32 + 1)),
                );
                *l = "";
            } else if let Some(s) = l.strip_suffix('\r') {
                *l = s;
            }
        }
        let parsed = match module.and_then(|m| warm_module(m, base)) {
            Some(p) => p,
            None => parse_file(name, base, &lines, &mut self.errors),
        };
        let mut fns = parsed.fns;
        if let Some(m) = module {
            for f in fns.iter_mut() {
                f.name = format!("{m}.{}", f.name);
                f.module = Some(m.to_string());
            }
        }
        self.out.fns.extend(fns);
        let mut out = Vec::with_capacity(parsed.top.len());
        for s in parsed.top {
            let line = s.pos - base;
            let here: At = Some((name.to_string(), line));
            match s.kind {
                StmtKind::IncludeReq(p) => {
                    if module.is_some() {
                        self.err(LoadKind::Structure, "a stdlib module cannot include files", &here);
                        continue;
                    }
                    if let Some(stmts) = self.include(&p, dir, &here) {
                        out.push(Stmt { pos: s.pos, kind: StmtKind::Include(stmts) });
                    }
                }
                StmtKind::Import(m) => self.import(&m, &here),
                _ if module.is_some() => {
                    self.err(LoadKind::Structure, "a stdlib module holds only `fn` and `import`", &here);
                }
                kind => out.push(Stmt { pos: s.pos, kind }),
            }
        }
        out
    }

    fn include(&mut self, raw: &[u8], dir: &Path, at: &At) -> Option<Vec<Stmt>> {
        let rel = String::from_utf8_lossy(raw).into_owned();
        let path = dir.join(&rel);
        let name = path.to_string_lossy().into_owned();
        let outside = |c: &Path| {
            format!(
                "cannot include \"{rel}\": {} is outside the script's directory and every --include-path \
                 (no read grant covers it)",
                c.display()
            )
        };
        let canon = match std::fs::canonicalize(&path) {
            Ok(c) => c,
            Err(e) => {
                // Say "outside" rather than "missing" when the nearest existing folder is
                // outside the area, so that a refused include tells nothing of what is there.
                let msg = match self.nearest_existing(&path) {
                    Some(c) if !self.area.covers(self.entry_dir.as_deref(), &c) => outside(&path),
                    _ => format!("cannot include \"{rel}\": {}", io_reason(&e)),
                };
                self.err(LoadKind::Include, msg, at);
                return None;
            }
        };
        if !self.area.covers(self.entry_dir.as_deref(), &canon) {
            self.err(LoadKind::Include, outside(&canon), at);
            return None;
        }
        if self.active.contains(&canon) {
            self.err(LoadKind::Include, format!("include cycle: \"{rel}\" is already being loaded"), at);
            return None;
        }
        if self.loaded.contains(&canon) {
            return None; // a second include of the same file is a no-op
        }
        // Active include files: the chain of includes being loaded, the main script not
        // counted (so `-e` code and a script file allow the same depth).
        if self.active.len() - self.main_active >= MAX_ACTIVE_INCLUDES {
            self.err(
                LoadKind::Limit(LimitKind::Includes),
                format!("too many nested includes (limit is {MAX_ACTIVE_INCLUDES})"),
                at,
            );
            self.errors.stop = true;
            return None;
        }
        let file = match open_regular(&path) {
            Ok(f) => f,
            Err(e) => {
                self.err(LoadKind::Include, format!("cannot include \"{rel}\": {}", io_reason(&e)), at);
                return None;
            }
        };
        // Check what was really opened, not only what the path named a moment ago: a
        // symlink swapped in between cannot smuggle in a file from outside the area.
        if let Some(real) = opened_path(&file) {
            if !self.area.covers(self.entry_dir.as_deref(), &real) {
                self.err(LoadKind::Include, outside(&real), at);
                return None;
            }
        }
        let text = match read_open(file, MAX_SOURCE_BYTES.saturating_sub(self.bytes)) {
            Ok(t) => t,
            Err(e) => {
                self.err(LoadKind::Include, format!("cannot include \"{rel}\": {}", io_reason(&e)), at);
                return None;
            }
        };
        self.loaded.insert(canon.clone());
        self.active.push(canon);
        let sub_dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let stmts = self.load_text(&name, text, &sub_dir, None, at);
        self.active.pop();
        Some(stmts)
    }

    /// The canonical form of the nearest ancestor of `path` that exists.
    fn nearest_existing(&self, path: &Path) -> Option<PathBuf> {
        path.ancestors().skip(1).find_map(|a| {
            let a = if a.as_os_str().is_empty() { Path::new(".") } else { a };
            std::fs::canonicalize(a).ok()
        })
    }

    fn import(&mut self, m: &str, at: &At) {
        if self.out.modules.iter().any(|x| x == m) {
            return;
        }
        let Some(text) = stdlib::module(m) else {
            self.err(LoadKind::Include, format!("no stdlib module named `{m}`"), at);
            return;
        };
        self.out.modules.push(m.to_string());
        let name = format!("stdlib/{m}.lsh");
        self.load_text(&name, text.as_bytes().to_vec(), Path::new(""), Some(m), at);
    }
}

thread_local! {
    /// Stdlib modules parsed ahead of time by [`warm_stdlib`], at base 0: a load on this
    /// thread copies a module's trees from here (re-based) instead of parsing its text.
    /// Kept for the life of the process and never dropped (no destructor runs at a
    /// worker's exit, which would free, and so copy on write, every page of it).
    static WARM: std::cell::Cell<&'static [(&'static str, ParsedFile)]> = const { std::cell::Cell::new(&[]) };
}

/// Parse every stdlib module now, once, on this thread, so that every later import on
/// this thread (and in every process forked from it) copies the parsed trees instead of
/// parsing the module's text again: `leash-cgi --fastcgi`'s warm process calls it before
/// it forks its first worker (the stdlib is part of the binary, so this touches nothing
/// of any script). A module that does not parse cleanly is left to the normal path.
/// Positions in the copies are the ones a parse at the import's base would give: a
/// position is the line's global number (base + line), and nothing else in the trees
/// depends on the base.
pub fn warm_stdlib() {
    let mut warm = Vec::new();
    for m in stdlib::names() {
        let Some(text) = stdlib::module(m) else { continue };
        let src = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut lines: Vec<&str> = src.split('\n').collect();
        if src.ends_with('\n') || src.is_empty() {
            lines.pop();
        }
        if lines.iter().any(|l| l.len() > MAX_LINE_BYTES) {
            continue;
        }
        for l in lines.iter_mut() {
            if let Some(s) = l.strip_suffix('\r') {
                *l = s;
            }
        }
        let mut errors = LoadErrors::default();
        let parsed = parse_file(&format!("stdlib/{m}.lsh"), 0, &lines, &mut errors);
        let clean =
            errors.list.is_empty() && !errors.stop && parsed.top.iter().all(|s| matches!(s.kind, StmtKind::Import(_)));
        if clean {
            warm.push((m, parsed));
        }
    }
    WARM.with(|w| w.set(Vec::leak(warm)));
    // The trees hold the names they use; the interner starts empty for the first load.
    crate::ast::clear_names();
}

/// The constant patterns the stdlib's modules pass to `re.*` (`re.NAME("...", ...)` with
/// a plain string literal first), for a warm process to compile once
/// (`builtins::re::warm_patterns`). Read from the modules' text in the binary.
pub fn stdlib_patterns() -> Vec<String> {
    use crate::lexer::{lex_line, StrLit, Tok};
    let mut out: Vec<String> = Vec::new();
    for m in stdlib::names() {
        let Some(text) = stdlib::module(m) else { continue };
        for line in text.lines() {
            if !line.contains("re.") || line.len() > MAX_LINE_BYTES {
                continue;
            }
            let Ok(l) = lex_line(line) else { continue };
            for w in l.toks.windows(5) {
                if let [Tok::Ident(r), Tok::Dot, Tok::Ident(_), Tok::LParen, Tok::Str(StrLit::Plain(p))] = w {
                    if r == "re" {
                        if let Ok(p) = std::str::from_utf8(p) {
                            if !out.iter().any(|q| q == p) {
                                out.push(p.to_string());
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// A copy of stdlib module `m` as parsed at `base`, if [`warm_stdlib`] parsed it.
fn warm_module(m: &str, base: Pos) -> Option<ParsedFile> {
    WARM.with(|w| {
        let (_, p) = w.get().iter().find(|(n, _)| *n == m)?;
        let mut p = ParsedFile { top: p.top.clone(), fns: p.fns.clone() };
        rebase(&mut p.top, base);
        for f in p.fns.iter_mut() {
            f.pos += base;
            rebase(&mut f.body, base);
        }
        Some(p)
    })
}

/// Add `d` to every position in `stmts` (statements, their arms and nested blocks).
fn rebase(stmts: &mut [Stmt], d: Pos) {
    for s in stmts {
        s.pos += d;
        match &mut s.kind {
            StmtKind::If { arms, else_body } => {
                for a in arms.iter_mut() {
                    a.pos += d;
                    rebase(&mut a.body, d);
                }
                if let Some(b) = else_body {
                    rebase(b, d);
                }
            }
            StmtKind::While { body, .. } => rebase(body, d),
            StmtKind::ForRange(f) => rebase(&mut f.body, d),
            StmtKind::ForIn(f) => rebase(&mut f.body, d),
            StmtKind::Try { body, handler, .. } => {
                rebase(body, d);
                rebase(handler, d);
            }
            StmtKind::Include(b) => rebase(b, d),
            StmtKind::Assign { .. }
            | StmtKind::MultiAssign { .. }
            | StmtKind::Call(_)
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(_)
            | StmtKind::Throw(_)
            | StmtKind::Global(_)
            | StmtKind::IncludeReq(_)
            | StmtKind::Import(_) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stdlib_patterns_are_the_modules_constant_patterns() {
        let p = stdlib_patterns();
        assert!(p.iter().any(|p| p == "^[A-Z0-9_]+$"), "{p:?}");
        assert!(p.iter().any(|p| p == "[\\x00-\\x08\\x0a-\\x1f\\x7f]"), "{p:?}");
        assert!(p.iter().all(|p| crate::builtins::re::compile(p).is_ok()), "{p:?}");
        assert_eq!(p.iter().collect::<HashSet<_>>().len(), p.len());
    }

    #[test]
    fn positions_map_back_to_files() {
        let mut m = SourceMap::default();
        m.files.push(SourceFile { name: "a".into(), base: 0, nlines: 3, text: "".into(), starts: Default::default() });
        m.files.push(SourceFile { name: "b".into(), base: 4, nlines: 2, text: "".into(), starts: Default::default() });
        assert_eq!(m.locate(1), Some(("a", 1)));
        assert_eq!(m.locate(3), Some(("a", 3)));
        assert_eq!(m.locate(5), Some(("b", 1)));
        assert_eq!(m.locate(6), Some(("b", 2)));
    }

    #[test]
    fn warm_stdlib_modules_load_as_parsed() {
        // On a thread of its own: the warm trees are per thread.
        std::thread::spawn(|| {
            let src = b"x = 1\n\nimport cgi\nimport path\ny = 2\nimport args\n".to_vec();
            let (cold, e) = Loader::new().load_main("t", src.clone(), None);
            assert!(e.is_empty());
            warm_stdlib();
            WARM.with(|w| assert_eq!(w.get().len(), stdlib::names().count()));
            let (warm, e) = Loader::new().load_main("t", src, None);
            assert!(e.is_empty());
            assert_eq!(cold.fns, warm.fns);
            assert_eq!(cold.main, warm.main);
            assert_eq!(cold.modules, warm.modules);
            assert!(warm.fns.iter().any(|f| f.pos > 6), "the modules' positions are re-based");
            let bases = |l: &Loaded| l.map.files.iter().map(|f| (f.name.clone(), f.base, f.nlines)).collect::<Vec<_>>();
            assert_eq!(bases(&cold), bases(&warm));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn line_counting() {
        let (l, e) = Loader::new().load_main("t", b"x = 1\ny = 2\n".to_vec(), None);
        assert!(e.is_empty());
        assert_eq!(l.map.files[0].nlines, 2);
        let (l, _) = Loader::new().load_main("t", b"x = 1\ny = 2".to_vec(), None);
        assert_eq!(l.map.files[0].nlines, 2);
    }

    #[test]
    fn encoding_error_names_the_line() {
        let (_, e) = Loader::new().load_main("t", b"x = 1\ny = \"\xff\"\n".to_vec(), None);
        assert_eq!(e.list[0].kind, LoadKind::Encoding);
        assert_eq!(e.list[0].line, Some(2));
    }
}
