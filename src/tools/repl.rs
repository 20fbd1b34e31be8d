//! The interactive session (SPEC 13): `leash` alone on a terminal, or `leash repl`.
//!
//! Each entry (a line, or a block continued until its `end`, its brackets balance and
//! its block strings close)
//! is loaded together with the functions defined so far, and run on the same
//! interpreter, so globals and functions are kept between entries; each entry gets a
//! fresh step and work budget, and every other leash of the run's flags (gates, memory,
//! output budgets) holds for the whole session. A one-line entry that reads as an
//! expression is evaluated into the global `_` and its value printed (`str` form;
//! strings quoted) unless it is nil. A load error, runtime error or limit is reported and
//! the session goes on; `exit(N)` or Ctrl-D ends it. History is kept in
//! `$XDG_DATA_HOME/leash/history` (else `~/.local/share/leash/history`).

use std::io::Write;
use std::path::PathBuf;

use rustyline::error::ReadlineError;

use crate::cli::Config;
use crate::diag::Diagnostic;
use crate::interp::{Interp, RunConfig};
use crate::lexer::{block_opener, closes_block, lex_line, Tok};
use crate::program::Program;
use crate::value::Value;

/// Where the history is kept.
pub fn history_path() -> Option<PathBuf> {
    let data = match std::env::var_os("XDG_DATA_HOME").filter(|d| !d.is_empty()) {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(std::env::var_os("HOME")?).join(".local").join("share"),
    };
    Some(data.join("leash").join("history"))
}

/// How far `line` opens (positive) or closes blocks and brackets: (blocks, brackets),
/// and the delimiter of a block string it opens.
fn balance(line: &str) -> (isize, isize, Option<&'static str>) {
    let Ok(l) = lex_line(line) else { return (0, 0, None) };
    let mut brackets = 0;
    for t in &l.toks {
        match t {
            Tok::LParen | Tok::LBracket | Tok::LBrace => brackets += 1,
            Tok::RParen | Tok::RBracket | Tok::RBrace => brackets -= 1,
            _ => {}
        }
    }
    let blocks = match (l.toks.first(), l.toks.get(1)) {
        // `fn(x) => ...` is an anonymous function, not a definition: it opens no block.
        (Some(Tok::Fn), Some(Tok::LParen)) => 0,
        (Some(Tok::If | Tok::While | Tok::For | Tok::Fn | Tok::Try), _) => 1,
        (Some(Tok::End), _) => -1,
        _ => 0,
    };
    (blocks, brackets, block_opener(&l))
}

/// The function definitions of an entry (name, source lines), and its other lines.
fn split_fns(entry: &str) -> (Vec<(String, String)>, String) {
    let mut fns = Vec::new();
    let mut rest = String::new();
    let mut cur: Option<(String, String)> = None;
    let mut depth = 0isize;
    // The delimiter of the block string whose content lines are being read.
    let mut block: Option<&str> = None;
    for line in entry.lines() {
        let content = block.is_some();
        let b = match block {
            Some(d) => {
                if closes_block(line, d) {
                    block = None;
                }
                0
            }
            None => {
                let (b, _, opens) = balance(line);
                block = opens;
                b
            }
        };
        if cur.is_none() && depth == 0 && !content {
            if let Ok(l) = lex_line(line) {
                if let (Some(Tok::Fn), Some(Tok::Ident(n))) = (l.toks.first(), l.toks.get(1)) {
                    cur = Some((n.clone(), String::new()));
                }
            }
        }
        depth += b;
        match &mut cur {
            Some((_, text)) => {
                text.push_str(line);
                text.push('\n');
                if depth <= 0 {
                    fns.extend(cur.take());
                    depth = 0;
                }
            }
            None => {
                rest.push_str(line);
                rest.push('\n');
            }
        }
    }
    if let Some(c) = cur {
        fns.push(c);
    }
    (fns, rest)
}

/// A string value as a literal that reads back (`"a\n"`).
fn quoted(b: &[u8]) -> String {
    let mut s = String::from("\"");
    let text = String::from_utf8_lossy(b);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            '\t' => s.push_str("\\t"),
            '\r' => s.push_str("\\r"),
            '$' if chars.peek() == Some(&'{') => s.push_str("\\$"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => s.push_str(&format!("\\x{:02x}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

struct Session {
    /// The functions defined so far, by name (a new definition replaces the old).
    fns: Vec<(String, String)>,
    json: bool,
    cfg: Config,
    /// The globals the current program does not name.
    carry: std::collections::HashMap<String, Value>,
    /// The globals that have a value (after the last entry).
    known: std::collections::BTreeSet<String>,
    budget: crate::memory::Budget,
}

impl Session {
    fn source(&self, entry: &str, extra: &[(String, String)]) -> String {
        // The entry first, so that its diagnostics name its own line numbers.
        let mut s = entry.to_string();
        // The globals earlier entries gave a value are assigned as far as the load-time
        // name check goes (SPEC 7): a function never called assigns them (no step, no
        // value changed), so `x = 5` then `print(x)` loads.
        if !self.known.is_empty() {
            s.push_str("fn __repl_globals__()\n");
            for n in &self.known {
                s.push_str(&format!("  global {n}\n  {n} = nil\n"));
            }
            s.push_str("end\n");
        }
        for (n, text) in &self.fns {
            if !extra.iter().any(|(m, _)| m == n) {
                s.push_str(text);
            }
        }
        for (_, text) in extra {
            s.push_str(text);
        }
        s
    }

    fn load(&self, text: String) -> Result<Program, Vec<Diagnostic>> {
        let area = crate::source::IncludeArea {
            dirs: self.cfg.include_path.clone(),
            everywhere: self.cfg.allow.has(crate::caps::Cap::Files),
        };
        crate::load_within("<repl>", text.into_bytes(), None, &area, self.budget)
    }

    fn emit(&self, d: &Diagnostic) {
        let _ = writeln!(std::io::stderr().lock(), "{}", d.render(self.json));
    }
}

/// Run one entry. `Some(status)` when the session is to end (`exit(N)`).
fn run_entry(s: &mut Session, it: &mut Interp<'static>, entry: &str) -> Option<i32> {
    let (new_fns, rest) = split_fns(entry);
    // A one-line entry that reads as an expression: its value goes to `_` and is shown.
    let single = entry.trim_end().lines().count() == 1 && new_fns.is_empty();
    let mut shown = false;
    let prog = if single {
        match s.load(s.source(&format!("_ = ({})\n", entry.trim()), &[])) {
            Ok(p) => {
                shown = true;
                Ok(p)
            }
            Err(_) => s.load(s.source(&rest, &new_fns)),
        }
    } else {
        s.load(s.source(&rest, &new_fns))
    };
    let prog = match prog {
        Ok(p) => p,
        Err(ds) => {
            for d in &ds {
                s.emit(d);
            }
            return None;
        }
    };
    // Kept for the session: the interpreter refers to it from now on.
    let prog: &'static Program = Box::leak(Box::new(prog));
    for (n, text) in new_fns {
        s.fns.retain(|(m, _)| *m != n);
        s.fns.push((n, text));
    }
    it.switch_program(prog, &mut s.carry);
    let r = it.run_entry();
    // Every global with a value now (kept even when the entry failed part way).
    for n in &prog.global_names {
        if it.global(n).is_some() && n != "_" {
            s.known.insert(n.clone());
        }
    }
    s.known.extend(s.carry.keys().filter(|n| n.as_str() != "_").cloned());
    let flushed = it.host.out.flush();
    let mut end = None;
    match r {
        Ok(_) => {
            if shown {
                if let Some(v) = it.global("_").cloned() {
                    let text = match &v {
                        Value::Nil => None,
                        Value::Str(b) => Some(quoted(b)),
                        other => it
                            .host
                            .to_text(other, it.host.lim.n(crate::limits::L::String))
                            .ok()
                            .map(|b| String::from_utf8_lossy(&b).into_owned()),
                    };
                    if let Some(t) = text {
                        let _ = writeln!(std::io::stdout().lock(), "{t}");
                    }
                }
            }
        }
        Err(u) => {
            let (status, diag) = crate::failure(prog, *u);
            if let Some(d) = diag {
                s.emit(&d);
            } else {
                end = Some(status);
            }
        }
    }
    if let Err(m) = flushed {
        s.emit(&Diagnostic {
            class: crate::diag::Class::Runtime,
            kind: "io".into(),
            message: m,
            file: None,
            line: None,
            detail: Default::default(),
        });
    }
    end
}

/// The session: returns the exit status.
pub fn main(cfg: &Config, rc: RunConfig) -> i32 {
    let budget = rc.heap.unwrap_or_else(|| crate::memory::Budget::start(cfg.max_memory));
    let mut s = Session {
        fns: Vec::new(),
        json: cfg.json_errors,
        cfg: cfg.clone(),
        carry: Default::default(),
        known: Default::default(),
        budget,
    };
    let empty: &'static Program = match s.load(String::new()) {
        Ok(p) => Box::leak(Box::new(p)),
        Err(ds) => {
            for d in &ds {
                s.emit(d);
            }
            return 3;
        }
    };
    let mut it = Interp::new(empty, &rc);
    let mut ed = match rustyline::DefaultEditor::new() {
        Ok(e) => e,
        Err(e) => {
            s.emit(&Diagnostic::usage(format!("cannot start the interactive session: {e}")));
            return 2;
        }
    };
    let history = history_path();
    if let Some(h) = &history {
        let _ = ed.load_history(h);
    }
    let _ = writeln!(std::io::stdout().lock(), "leash {} (Ctrl-D to end)", env!("CARGO_PKG_VERSION"));
    let mut status = 0;
    let mut entry = String::new();
    let (mut blocks, mut brackets) = (0isize, 0isize);
    // The delimiter of an open block string: its lines, blank ones too, are its content.
    let mut block: Option<&str> = None;
    loop {
        let prompt = if entry.is_empty() { "> " } else { "... " };
        match ed.readline(prompt) {
            Ok(line) => {
                entry.push_str(&line);
                entry.push('\n');
                if let Some(d) = block {
                    if closes_block(&line, d) {
                        block = None;
                    }
                    if block.is_some() || blocks > 0 || brackets > 0 {
                        continue;
                    }
                } else {
                    let (b, k, opens) = balance(&line);
                    blocks += b;
                    brackets += k;
                    block = opens;
                    if block.is_some()
                        || (blocks > 0 || brackets > 0) && !line.trim().is_empty()
                        || (blocks > 0 && line.trim().is_empty())
                    {
                        continue;
                    }
                }
                let text = std::mem::take(&mut entry);
                (blocks, brackets) = (0, 0);
                if text.trim().is_empty() {
                    continue;
                }
                let _ = ed.add_history_entry(text.trim_end());
                if let Some(h) = &history {
                    if let Some(d) = h.parent() {
                        let _ = std::fs::create_dir_all(d);
                    }
                    let _ = ed.save_history(h);
                }
                if let Some(n) = run_entry(&mut s, &mut it, &text) {
                    status = n;
                    break;
                }
            }
            Err(ReadlineError::Interrupted) => {
                // Ctrl-C drops the entry being written.
                entry.clear();
                (blocks, brackets, block) = (0, 0, None);
            }
            Err(ReadlineError::Eof) => break,
            Err(e) => {
                s.emit(&Diagnostic::usage(format!("cannot read the terminal: {e}")));
                status = 1;
                break;
            }
        }
    }
    it.host.files.close_all();
    it.host.net.close_all();
    it.host.db.close_all();
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_functions_from_statements() {
        let (f, rest) = split_fns("fn a(x)\n  if x\n  end\n  return 1\nend\nprint(a(1))\n");
        assert_eq!(f, vec![("a".to_string(), "fn a(x)\n  if x\n  end\n  return 1\nend\n".to_string())]);
        assert_eq!(rest, "print(a(1))\n");
    }

    #[test]
    fn quotes_strings() {
        assert_eq!(quoted(b"a\"b\\\n${x}$y"), "\"a\\\"b\\\\\\n\\${x}$y\"");
    }
}
