//! The block structure: each parsed line applied in turn (`FileParser::apply`), pairing
//! `if`/`elif`/`else`/`end`, loops, `try`/`catch` and `fn` into the tree of a file's
//! statements and functions, and checking the structure as it goes (a `break` outside a
//! loop, a block never closed, the nesting limit).

use super::line::Line;
use super::ParsedFile;
use crate::ast::*;
use crate::diag::{LoadError, LoadErrors, LoadKind};
use crate::limits::*;

/// An open block while building the tree.
enum Open {
    If { arms: Vec<IfArm>, else_body: Option<Vec<Stmt>>, pos: Pos },
    While { cond: Expr, body: Vec<Stmt>, pos: Pos },
    ForRange { var: String, start: Expr, end: Expr, step: Option<Expr>, body: Vec<Stmt>, pos: Pos },
    ForIn { first: String, second: Option<String>, iter: Expr, body: Vec<Stmt>, pos: Pos },
    Try { body: Vec<Stmt>, var: Option<String>, handler: Vec<Stmt>, pos: Pos },
    Fn { name: String, params: Vec<String>, body: Vec<Stmt>, pos: Pos },
}

impl Open {
    fn body(&mut self) -> &mut Vec<Stmt> {
        match self {
            Open::If { arms, else_body, .. } => match else_body {
                Some(b) => b,
                None => &mut arms.last_mut().expect("if has an arm").body,
            },
            Open::While { body, .. }
            | Open::ForRange { body, .. }
            | Open::ForIn { body, .. }
            | Open::Fn { body, .. } => body,
            Open::Try { body, var, handler, .. } => {
                if var.is_some() {
                    handler
                } else {
                    body
                }
            }
        }
    }
    fn pos(&self) -> Pos {
        match self {
            Open::If { pos, .. }
            | Open::While { pos, .. }
            | Open::ForRange { pos, .. }
            | Open::ForIn { pos, .. }
            | Open::Try { pos, .. }
            | Open::Fn { pos, .. } => *pos,
        }
    }
    fn keyword(&self) -> &'static str {
        match self {
            Open::If { .. } => "if",
            Open::While { .. } => "while",
            Open::ForRange { .. } | Open::ForIn { .. } => "for",
            Open::Try { .. } => "try",
            Open::Fn { .. } => "fn",
        }
    }
    fn is_loop(&self) -> bool {
        matches!(self, Open::While { .. } | Open::ForRange { .. } | Open::ForIn { .. })
    }
}

pub(super) struct FileParser<'e> {
    pub(super) file: String,
    base: Pos,
    pub(super) errors: &'e mut LoadErrors,
    stack: Vec<Open>,
    out: ParsedFile,
    /// Block depth not counting `fn`.
    depth: usize,
    /// The file's end was read as part of an unfinished statement (`Fatal`): blocks left
    /// open are closed without an error (their `end` was swallowed).
    pub(super) truncated: bool,
}

impl<'e> FileParser<'e> {
    /// The parser of file `file`, whose line 0 is the global position `base`.
    pub(super) fn new(file: &str, base: Pos, errors: &'e mut LoadErrors) -> Self {
        FileParser {
            file: file.to_string(),
            base,
            errors,
            stack: Vec::new(),
            out: ParsedFile::default(),
            depth: 0,
            truncated: false,
        }
    }
}

impl FileParser<'_> {
    pub(super) fn err(&mut self, kind: LoadKind, msg: impl Into<String>, line: usize) {
        self.errors.push(LoadError::new(kind, msg, &self.file, line as u32));
    }

    fn pos(&self, line: usize) -> Pos {
        self.base + line as u32
    }

    fn line_of(&self, pos: Pos) -> usize {
        (pos - self.base) as usize
    }

    fn push_stmt(&mut self, s: Stmt) {
        match self.stack.last_mut() {
            Some(open) => open.body().push(s),
            None => self.out.top.push(s),
        }
    }

    fn in_fn(&self) -> bool {
        self.stack.iter().any(|o| matches!(o, Open::Fn { .. }))
    }

    fn in_loop(&self) -> bool {
        for o in self.stack.iter().rev() {
            if o.is_loop() {
                return true;
            }
            if matches!(o, Open::Fn { .. }) {
                return false;
            }
        }
        false
    }

    fn open(&mut self, o: Open, line: usize) {
        if !matches!(o, Open::Fn { .. }) {
            self.depth += 1;
            if self.depth == MAX_NESTING + 1 {
                self.err(
                    LoadKind::Limit(LimitKind::Nesting),
                    format!("blocks nested too deeply (limit is {MAX_NESTING})"),
                    line,
                );
            }
        }
        self.stack.push(o);
    }

    fn close(&mut self, line: usize) {
        let Some(o) = self.stack.pop() else {
            self.err(LoadKind::Structure, "`end` without an open block", line);
            return;
        };
        if !matches!(o, Open::Fn { .. }) {
            self.depth -= 1;
        }
        let stmt = |pos, kind| Stmt { pos, kind };
        match o {
            Open::If { mut arms, else_body, pos } => {
                for a in arms.iter_mut() {
                    a.body.shrink_to_fit();
                }
                arms.shrink_to_fit();
                self.push_stmt(stmt(pos, StmtKind::If { arms, else_body: else_body.map(tight) }))
            }
            Open::While { cond, body, pos } => self.push_stmt(stmt(pos, StmtKind::While { cond, body: tight(body) })),
            Open::ForRange { var, start, end, step, body, pos } => self.push_stmt(stmt(
                pos,
                StmtKind::ForRange(Box::new(ForRange { var, start, end, step, body: tight(body) })),
            )),
            Open::ForIn { first, second, iter, body, pos } => {
                self.push_stmt(stmt(pos, StmtKind::ForIn(Box::new(ForIn { first, second, iter, body: tight(body) }))))
            }
            Open::Try { body, var, handler, pos } => match var {
                Some(var) => {
                    self.push_stmt(stmt(pos, StmtKind::Try { body: tight(body), var, handler: tight(handler) }))
                }
                None => {
                    let l = self.line_of(pos);
                    self.err(LoadKind::Structure, "`try` without `catch`", l);
                }
            },
            Open::Fn { name, params, body, pos } => {
                if !name.is_empty() {
                    self.out.fns.push(FnDef { name, params, body: tight(body), pos, module: None });
                }
            }
        }
    }

    /// Apply one parsed line to the block structure.
    pub(super) fn apply(&mut self, line_no: usize, line: Line) {
        let pos = self.pos(line_no);
        match line {
            Line::If(c) => self
                .open(Open::If { arms: vec![IfArm { pos, cond: c.0, body: vec![] }], else_body: None, pos }, line_no),
            Line::Elif(c) => match self.stack.last_mut() {
                Some(Open::If { arms, else_body: None, .. }) => arms.push(IfArm { pos, cond: c.0, body: vec![] }),
                Some(Open::If { .. }) => self.err(LoadKind::Structure, "`elif` after `else`", line_no),
                _ => self.err(LoadKind::Structure, "`elif` without `if`", line_no),
            },
            Line::Else => match self.stack.last_mut() {
                Some(Open::If { else_body: e @ None, .. }) => *e = Some(vec![]),
                Some(Open::If { .. }) => self.err(LoadKind::Structure, "a second `else`", line_no),
                _ => self.err(LoadKind::Structure, "`else` without `if`", line_no),
            },
            Line::End => self.close(line_no),
            Line::While(c) => self.open(Open::While { cond: c.0, body: vec![], pos }, line_no),
            Line::ForRange(var, a, b, s) => self
                .open(Open::ForRange { var, start: a.0, end: b.0, step: s.map(|s| s.0), body: vec![], pos }, line_no),
            Line::ForIn(first, second, e) => {
                self.open(Open::ForIn { first, second, iter: e.0, body: vec![], pos }, line_no)
            }
            Line::Try => self.open(Open::Try { body: vec![], var: None, handler: vec![], pos }, line_no),
            Line::Catch(name) => match self.stack.last_mut() {
                Some(Open::Try { var: v @ None, .. }) => *v = Some(name),
                Some(Open::Try { .. }) => self.err(LoadKind::Structure, "a second `catch`", line_no),
                _ => self.err(LoadKind::Structure, "`catch` without `try`", line_no),
            },
            Line::Fn(name, params) => {
                if !self.stack.is_empty() {
                    self.err(LoadKind::Structure, "`fn` is allowed only at top level", line_no);
                }
                if params.len() > MAX_PARAMS {
                    self.err(
                        LoadKind::Limit(LimitKind::Params),
                        format!("function `{name}` has {} parameters (limit is {MAX_PARAMS})", params.len()),
                        line_no,
                    );
                }
                self.open(Open::Fn { name, params, body: vec![], pos }, line_no)
            }
            Line::Break | Line::Continue => {
                let word = if matches!(line, Line::Break) { "break" } else { "continue" };
                if !self.in_loop() {
                    self.err(LoadKind::Structure, format!("`{word}` outside a loop"), line_no);
                    return;
                }
                let kind = if word == "break" { StmtKind::Break } else { StmtKind::Continue };
                self.push_stmt(Stmt { pos, kind });
            }
            Line::Return(e) => {
                if !self.in_fn() {
                    self.err(LoadKind::Structure, "`return` outside a function", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::Return(e.map(|e| e.0)) });
            }
            Line::Global(names) => {
                if !self.in_fn() {
                    self.err(LoadKind::Structure, "`global` outside a function", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::Global(names) });
            }
            Line::Throw(e) => self.push_stmt(Stmt { pos, kind: StmtKind::Throw(e.0) }),
            Line::Include(path) => {
                if !self.stack.is_empty() {
                    self.err(LoadKind::Structure, "`include` is allowed only at top level", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::IncludeReq(path) });
            }
            Line::Import(name) => {
                if !self.stack.is_empty() {
                    self.err(LoadKind::Structure, "`import` is allowed only at top level", line_no);
                    return;
                }
                self.push_stmt(Stmt { pos, kind: StmtKind::Import(name) });
            }
            Line::Assign(target, op, value) => {
                self.push_stmt(Stmt { pos, kind: StmtKind::Assign { target, op, value: value.0 } })
            }
            Line::MultiAssign(targets, values) => {
                if targets.len() == 1 {
                    let n = values.len();
                    let le = LoadError::new(
                        LoadKind::Syntax,
                        format!("one target but {n} values: a name holds one value"),
                        &self.file,
                        line_no as u32,
                    );
                    self.errors
                        .push(le.help("write a list in brackets (`x = [a, b]`), or name a target for each value"));
                    return;
                }
                if values.len() > 1 && values.len() != targets.len() {
                    let (t, v) = (targets.len(), values.len());
                    self.err(
                        LoadKind::Syntax,
                        format!("{t} targets but {v} values: give each target one value"),
                        line_no,
                    );
                    return;
                }
                let values = values.into_iter().map(|v| v.0).collect();
                self.push_stmt(Stmt { pos, kind: StmtKind::MultiAssign { targets, values } })
            }
            Line::Call(e) => {
                if matches!(e.0, Expr::Call(..)) {
                    self.push_stmt(Stmt { pos, kind: StmtKind::Call(e.0) });
                } else if matches!(e.0, Expr::Lambda(..)) {
                    let msg = "an anonymous function can only be the argument of a builtin that takes a function";
                    self.err(LoadKind::Syntax, msg, line_no);
                } else {
                    self.err(LoadKind::Syntax, "only a call can stand alone as a statement", line_no);
                }
            }
        }
    }

    pub(super) fn finish(mut self) -> ParsedFile {
        if self.errors.stop {
            // Loading ends here (too many errors, or the memory budget): nothing more to say.
            return self.out;
        }
        while let Some(o) = self.stack.last_mut() {
            let (pos, kw) = (o.pos(), o.keyword());
            if let Open::Try { var: v @ None, .. } = o {
                *v = Some("_".into()); // reported once, as the unclosed block
            }
            let l = self.line_of(pos);
            if !self.truncated {
                self.err(LoadKind::Structure, format!("`{kw}` block is never closed with `end`"), l);
            }
            // Close it anyway, so that what it holds is still validated.
            self.close(l);
        }
        self.out.top.shrink_to_fit();
        self.out
    }
}
