//! Validation before main: every function, reachable or not, is checked and resolved.
//!
//! - functions: duplicates, clashes with builtins and reserved names, the function limit;
//! - scope (SPEC 6): in a function, a name assigned anywhere in its body (or bound by
//!   `for`/`catch`, or a parameter, or changed in place by `push` and friends) is local
//!   unless listed in `global`; other names are globals;
//! - calls: unknown functions, arity of user functions and builtins, place arguments;
//! - reserved names (namespaces, imported modules) never used as variables;
//! - the locals limit; capabilities reached (for `leash check`).
//!
//! The output is a `Program` in which names are slots and calls are indices.
//!
//! Its parts: this file walks the tree (expressions, places, statements) with the scope
//! of the function being resolved, and holds the driver (`resolve`); `resolve/calls.rs`
//! resolves calls (user functions, builtins, function arguments, anonymous functions);
//! `resolve/bindings.rs` finds the names a body binds, before it is resolved (SPEC 6).
//! The tree it makes has one node per construct (no node shaped like an idiom): the
//! compiler picks an instruction by its operands' modes (`compile.rs`).

use std::collections::{HashMap, HashSet};

use crate::ast::{Expr as AExpr, FnDef, InterpPart, Pos, Spot, Stmt as AStmt, StmtKind as AKind, UnOp};
use crate::builtins;
use crate::diag::{LoadError, LoadErrors, LoadKind};
use crate::limits::*;
use crate::program::*;
use crate::source::{Loaded, SourceMap};
use crate::value::{bytes, Value};

mod bindings;
mod calls;

use bindings::collect_bindings;

struct FnCtx {
    locals: HashMap<String, u32>,
    module: Option<String>,
    /// In an anonymous function: the slot names (parameters, then captured variables)
    /// and, for each captured variable, how the enclosing scope reads it.
    lambda: Option<LambdaCtx>,
}

struct LambdaCtx {
    names: Vec<String>,
    captures: Vec<Expr>,
}

/// Is `a` one edit (insert, delete, replace, or swap of neighbours) from `b`?
fn one_edit(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a == b || a.len().abs_diff(b.len()) > 1 {
        return false;
    }
    let p = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let (ra, rb) = (&a[p..], &b[p..]);
    if ra.len() == rb.len() {
        ra[1..] == rb[1..] || (ra.len() >= 2 && ra[0] == rb[1] && ra[1] == rb[0] && ra[2..] == rb[2..])
    } else if ra.len() > rb.len() {
        ra[1..] == *rb
    } else {
        rb[1..] == *ra
    }
}

/// The known name one edit from `name`, if there is exactly one best (the first found).
fn near<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<String> {
    let mut found: Vec<&str> = known.into_iter().filter(|k| one_edit(name, k)).collect();
    found.sort_unstable();
    found.dedup();
    found.first().map(|s| s.to_string())
}

struct Resolver<'a> {
    errors: &'a mut LoadErrors,
    map: &'a SourceMap,
    fn_index: HashMap<String, usize>,
    fn_params: Vec<usize>,
    globals: HashMap<String, u32>,
    global_names: Vec<String>,
    reserved: HashSet<String>,
    modules: HashSet<String>,
    caps: Caps,
    sites: Vec<crate::program::CallSite>,
    ctx: Option<FnCtx>,
    /// The scopes that enclose the anonymous function being resolved (innermost last).
    outer: Vec<Option<FnCtx>>,
    /// The anonymous functions' synthetic functions, numbered after the named ones.
    lambdas: Vec<Function>,
    /// How many named functions there are.
    nfns: usize,
    pos: Pos,
    /// Names assigned somewhere as globals: in main (assignment, `for`, `catch`), or in a
    /// function that declares them `global` (SPEC 7: a read of any other name that is not
    /// a local is a load error).
    assigned: HashSet<String>,
}

impl Resolver<'_> {
    fn err(&mut self, kind: LoadKind, msg: impl Into<String>) {
        self.err_full(0, kind, msg, None);
    }

    /// A load error at `spot` of the current line, with an optional help line.
    fn err_full(&mut self, spot: Spot, kind: LoadKind, msg: impl Into<String>, help: Option<String>) {
        let (file, line, at) = match self.map.place(self.pos, spot) {
            Some((f, l, at)) => (Some(f.to_string()), Some(l), at),
            None => (None, None, None),
        };
        let mut e = LoadError { kind, message: msg.into(), file, line, detail: Default::default() };
        if let Some((c, w)) = at {
            e = e.at(c, w);
        }
        if let Some(h) = help {
            e = e.help(h);
        }
        self.errors.push(e);
    }

    /// A reserved name used as a variable: say which namespace, suggest another name.
    fn reserved_err(&mut self, spot: Spot, name: &str, msg: String) {
        let what = if self.modules.contains(name) {
            format!("`{name}` is the imported module `{name}`")
        } else {
            let fns: Vec<&str> = builtins::all()
                .filter_map(|b| b.name.strip_prefix(name).and_then(|r| r.strip_prefix('.')).map(|_| b.name))
                .take(3)
                .collect();
            format!(
                "`{name}` is the builtin namespace of {}",
                fns.join(", ") + if fns.len() == 3 { ", ..." } else { "" }
            )
        };
        self.err_full(spot, LoadKind::Name, msg, Some(format!("{what}; choose another name, such as `{name}_value`")));
    }

    /// A read of `name`, which resolved to `slot`: a global must be assigned somewhere.
    fn check_read(&mut self, name: &str, slot: Slot, spot: Spot) {
        if matches!(slot, Slot::Local(_)) || self.assigned.contains(name) {
            return;
        }
        let mut known: Vec<&str> = self.assigned.iter().map(String::as_str).collect();
        if let Some(ctx) = &self.ctx {
            known.extend(ctx.locals.keys().map(String::as_str));
        }
        let help = near(name, known).map(|n| format!("did you mean `{n}`?"));
        let msg = if self.ctx.is_some() {
            format!("variable `{name}` is never assigned: not in this function, and not as a global")
        } else {
            format!("variable `{name}` is never assigned")
        };
        self.err_full(spot, LoadKind::Name, msg, help);
    }

    fn global_slot(&mut self, name: &str) -> u32 {
        if let Some(&i) = self.globals.get(name) {
            return i;
        }
        let i = self.global_names.len() as u32;
        if self.global_names.len() == MAX_LOCALS {
            self.err(LoadKind::Limit(LimitKind::Locals), format!("more than {MAX_LOCALS} global variables"));
        }
        self.globals.insert(name.to_string(), i);
        self.global_names.push(name.to_string());
        i
    }

    /// A name that is written (assigned, bound by for/catch, or a place root).
    fn write_slot(&mut self, name: &str) -> Slot {
        self.write_slot_at(name, 0)
    }

    fn write_slot_at(&mut self, name: &str, spot: Spot) -> Slot {
        if self.reserved.contains(name) {
            self.reserved_err(spot, name, format!("`{name}` is reserved and cannot be assigned"));
        }
        self.read_slot(name)
    }

    fn read_slot(&mut self, name: &str) -> Slot {
        if let Some(ctx) = &self.ctx {
            if let Some(&i) = ctx.locals.get(name) {
                return Slot::Local(i);
            }
        }
        Slot::Global(self.global_slot(name))
    }

    // ------------------------------------------------------------------
    // Expressions
    // ------------------------------------------------------------------

    fn expr(&mut self, e: &AExpr) -> Expr {
        match e {
            AExpr::Num(n) => Expr::Const(Value::Num(*n)),
            AExpr::Str(s) => Expr::Const(Value::str_from(s.as_slice())),
            AExpr::Nil => Expr::Const(Value::Nil),
            AExpr::Bool(b) => Expr::Const(Value::Bool(*b)),
            AExpr::Name(n, sp) => {
                if self.reserved.contains(&**n) {
                    self.reserved_err(*sp, n, format!("`{n}` is a namespace, not a value"));
                    return Expr::Const(Value::Nil);
                }
                if self.ctx.as_ref().is_some_and(|c| c.lambda.is_some() && !c.locals.contains_key(&**n)) {
                    return self.capture(n, *sp);
                }
                let slot = self.read_slot(n);
                self.check_read(n, slot, *sp);
                match slot {
                    Slot::Local(i) => Expr::Local(i, *sp),
                    Slot::Global(i) => Expr::Global(i, *sp),
                }
            }
            AExpr::Paren(e) => self.expr(e),
            AExpr::Interp(parts) => Expr::Interp(
                parts
                    .iter()
                    .map(|p| match p {
                        InterpPart::Lit(b) => IPart::Lit(bytes(b)),
                        InterpPart::Expr(e) => IPart::Expr(self.expr(e)),
                        InterpPart::Raw(..) => IPart::Lit(bytes(b"")),
                    })
                    .collect(),
            ),
            AExpr::List(items) => Expr::List(items.iter().map(|x| self.expr(x)).collect()),
            AExpr::Map(items) => Expr::Map(items.iter().map(|(k, x)| (bytes(k), self.expr(x))).collect()),
            AExpr::Unary(UnOp::Neg, x, sp) => match self.expr(x) {
                Expr::Const(Value::Num(n)) => Expr::Const(Value::Num(-n)),
                other => Expr::Neg(Box::new(other), *sp),
            },
            AExpr::Unary(UnOp::Not, x, _) => Expr::Not(Box::new(self.expr(x))),
            AExpr::Binary(op, a, b, sp) => Expr::Bin(*op, *sp, Arg::of(self.expr(a)), Arg::of(self.expr(b))),
            AExpr::And(a, b) => Expr::And(Box::new(self.expr(a)), Box::new(self.expr(b))),
            AExpr::Or(a, b) => Expr::Or(Box::new(self.expr(a)), Box::new(self.expr(b))),
            AExpr::Index(a, i, sp) => Expr::Index(Box::new(self.expr(a)), Box::new(self.expr(i)), *sp),
            AExpr::Field(base, name, sp) => {
                if let AExpr::Name(ns, _) = &**base {
                    if self.reserved.contains(&**ns) {
                        let full = format!("{ns}.{name}");
                        if let Some(v) = builtins::constant(&full) {
                            return Expr::Const(v);
                        }
                        let at = e.callee_spot();
                        if builtins::lookup(&full).is_some() || self.fn_index.contains_key(&full) {
                            self.err_full(
                                at,
                                LoadKind::Syntax,
                                format!("`{full}` is a function: call it with (...)"),
                                None,
                            );
                        } else {
                            let help = self.near_function(&full).map(|n| format!("did you mean `{n}`?"));
                            self.err_full(at, LoadKind::Name, format!("unknown name `{full}`"), help);
                        }
                        return Expr::Const(Value::Nil);
                    }
                }
                Expr::Field(Box::new(self.expr(base)), bytes(name.as_bytes()), *sp)
            }
            AExpr::Call(callee, args, sp) => self.call(callee, args, *sp),
            AExpr::Cond(a, c, b) => {
                let c = self.expr(c);
                let (a, b) = (self.expr(a), self.expr(b));
                Expr::Cond(Box::new(a), Box::new(c), Box::new(b))
            }
            AExpr::Lambda(l) => {
                self.err_full(
                    l.spot,
                    LoadKind::Syntax,
                    "an anonymous function can only be the argument of a builtin that takes a function",
                    Some(LAMBDA_HELP.into()),
                );
                Expr::Const(Value::Nil)
            }
        }
    }

    /// A place: a variable, then index and field steps. None if `e` is not one. `reads`:
    /// the place's variable is read too (an element change, an in-place builtin).
    fn place(&mut self, e: &AExpr, reads: bool) -> Option<Place> {
        let mut path = Vec::new();
        let mut cur = e;
        loop {
            match cur {
                AExpr::Name(n, sp) => {
                    let root = self.write_slot_at(n, *sp);
                    if reads || !path.is_empty() {
                        self.check_read(n, root, *sp);
                    }
                    path.reverse();
                    return Some(Place { root, path });
                }
                AExpr::Index(base, i, _) => {
                    path.push(self.expr(i));
                    cur = base;
                }
                AExpr::Field(base, f, _) => {
                    path.push(Expr::Const(Value::Str(bytes(f.as_bytes()))));
                    cur = base;
                }
                _ => return None,
            }
        }
    }

    // ------------------------------------------------------------------
    // Statements
    // ------------------------------------------------------------------

    /// Resolve a block, consuming its syntax tree: each statement's tree is freed once
    /// its program form is built, so that the two are not held whole at once. After each
    /// statement the heap is compared with the load's budget.
    fn block(&mut self, stmts: Vec<AStmt>) -> Block {
        let mut out = Vec::with_capacity(stmts.len());
        for s in stmts {
            if self.errors.stop {
                break;
            }
            if let Some(st) = self.stmt(s) {
                out.push(st);
            }
            if let Some((k, m)) = crate::meter::load_over() {
                self.err(LoadKind::Limit(k), m);
                self.errors.stop = true;
            }
        }
        out.into_boxed_slice()
    }

    fn stmt(&mut self, s: AStmt) -> Option<Stmt> {
        self.pos = s.pos;
        let kind = match s.kind {
            AKind::Assign { target, op, value } => {
                if let (AExpr::Lambda(l), AExpr::Name(n, _)) = (&value, &target) {
                    self.err_full(
                        l.spot,
                        LoadKind::Syntax,
                        "a variable cannot hold a function",
                        Some(format!(
                            "define `fn {n}(...)` ... `end` at the top level and pass `{n}`, or write the `fn(...) => ...` \
                             where it is used, as the argument of `map`, `filter`, `sort_by`..."
                        )),
                    );
                    return None;
                }
                let v = self.expr(&value);
                let Some(place) = self.place(&target, op.is_some()) else {
                    self.err(LoadKind::Syntax, "cannot assign to this expression");
                    return None;
                };
                assign_node(op, place, v)
            }
            AKind::MultiAssign { targets, values } => {
                let vals: Box<[Expr]> = values.iter().map(|v| self.expr(v)).collect();
                let mut places = Vec::with_capacity(targets.len());
                for t in &targets {
                    match self.place(t, false) {
                        Some(p) => places.push(p),
                        None => {
                            self.err(LoadKind::Syntax, "cannot assign to this expression");
                            return None;
                        }
                    }
                }
                StmtKind::MultiAssign(places.into_boxed_slice(), vals)
            }
            AKind::Call(e) => StmtKind::Expr(self.expr(&e)),
            AKind::If { arms, else_body } => {
                let arms = arms
                    .into_iter()
                    .map(|a| {
                        self.pos = a.pos;
                        let cond = self.expr(&a.cond);
                        drop(a.cond);
                        Arm { pos: a.pos, cond, body: self.block(a.body) }
                    })
                    .collect();
                StmtKind::If(arms, else_body.map(|b| self.block(b)))
            }
            AKind::While { cond, body } => {
                let c = self.expr(&cond);
                StmtKind::While(c, self.block(body))
            }
            AKind::ForRange(f) => {
                let crate::ast::ForRange { var, start, end, step, body } = *f;
                let start = self.expr(&start);
                let end = self.expr(&end);
                let step = step.as_ref().map(|e| self.expr(e));
                let var = self.write_slot(&var);
                StmtKind::ForRange(Box::new(ForRange { var, start, end, step, body: self.block(body) }))
            }
            AKind::ForIn(f) => {
                let crate::ast::ForIn { first, second, iter, body } = *f;
                let iter = self.expr(&iter);
                let first = self.write_slot(&first);
                let second = second.as_ref().map(|n| self.write_slot(n));
                StmtKind::ForIn(Box::new(ForIn { first, second, iter, body: self.block(body) }))
            }
            AKind::Break => StmtKind::Break,
            AKind::Continue => StmtKind::Continue,
            AKind::Return(e) => StmtKind::Return(e.as_ref().map(|e| self.expr(e))),
            AKind::Throw(e) => StmtKind::Throw(self.expr(&e)),
            AKind::Try { body, var, handler } => {
                let b = self.block(body);
                self.pos = s.pos;
                let var = self.write_slot(&var);
                StmtKind::Try { body: b, var, handler: self.block(handler) }
            }
            AKind::Global(names) => {
                for n in &names {
                    if self.reserved.contains(n) {
                        self.reserved_err(0, n, format!("`{n}` is reserved and cannot be a variable"));
                    }
                }
                return None;
            }
            AKind::Include(stmts) => StmtKind::Block(self.block(stmts)),
            AKind::IncludeReq(_) | AKind::Import(_) => return None,
        };
        Some(Stmt { pos: s.pos, kind })
    }
}

const LAMBDA_HELP: &str = "pass it straight to a builtin that takes a function (`map(xs, fn(x) => x * 2)`; also \
     `filter`, `sort`, `sort_by`, `reduce`, `any`, `all`, `count`, `group_by`, `re.replace`), or define \
     `fn NAME(...)` ... `end` at the top level";

fn frame_base_bytes(names: &[String]) -> usize {
    names.iter().map(|n| n.len() + ACCT_SLOT).sum()
}

/// Validate and resolve a loaded program. Errors go to `errors`; the program is
/// returned only when there are none.
pub fn resolve(loaded: Loaded, errors: &mut LoadErrors) -> Option<Program> {
    let Loaded { main, fns, modules, map } = loaded;
    let mut reserved: HashSet<String> = builtins::NAMESPACES.iter().map(|s| s.to_string()).collect();
    reserved.extend(modules.iter().cloned());
    let mut r = Resolver {
        errors,
        map: &map,
        fn_index: HashMap::new(),
        fn_params: Vec::new(),
        globals: HashMap::new(),
        global_names: Vec::new(),
        reserved,
        modules: modules.iter().cloned().collect(),
        caps: Caps::default(),
        sites: Vec::new(),
        ctx: None,
        outer: Vec::new(),
        lambdas: Vec::new(),
        nfns: fns.len(),
        pos: 0,
        assigned: HashSet::new(),
    };
    {
        let (mut a, mut ch, mut gl) = (Vec::new(), Vec::new(), Vec::new());
        collect_bindings(&main, &mut a, &mut ch, &mut gl);
        r.assigned.extend(a);
        for f in &fns {
            let (mut a, mut ch, mut gl) = (Vec::new(), Vec::new(), Vec::new());
            collect_bindings(&f.body, &mut a, &mut ch, &mut gl);
            let gl: HashSet<String> = gl.into_iter().collect();
            r.assigned.extend(a.into_iter().filter(|n| gl.contains(n)));
        }
    }

    // Functions: names, duplicates, limits.
    for (i, f) in fns.iter().enumerate() {
        r.pos = f.pos;
        if i == MAX_FUNCTIONS {
            r.err(LoadKind::Limit(LimitKind::Functions), format!("more than {MAX_FUNCTIONS} functions"));
        }
        let short = f.name.rsplit('.').next().unwrap_or(&f.name).to_string();
        // A module function is always called by its qualified name (`cgi.env`), so its
        // short name may be a namespace's; the module's own name stays reserved.
        if r.reserved.contains(&short) && (f.module.is_none() || f.module.as_deref() == Some(short.as_str())) {
            r.err(LoadKind::Name, format!("`{short}` is reserved and cannot name a function"));
        } else if f.module.is_none() && builtins::lookup(&f.name).is_some() {
            r.err(LoadKind::Name, format!("`{}` is a builtin function and cannot be redefined", f.name));
        }
        if let Some(&prev) = r.fn_index.get(&f.name) {
            let at = map.locate(fns[prev].pos).map(|(f, l)| format!(" (first defined at {f}:{l})")).unwrap_or_default();
            r.err(LoadKind::Name, format!("function `{}` is defined twice{at}", f.name));
            r.fn_params.push(f.params.len());
            continue;
        }
        r.fn_index.insert(f.name.clone(), i);
        r.fn_params.push(f.params.len());
    }

    // Main first, so that globals get slots in order of appearance there.
    let main_block = r.block(main);

    let mut funcs = Vec::with_capacity(fns.len());
    for f in fns {
        funcs.push(resolve_fn(&mut r, f));
    }
    funcs.append(&mut r.lambdas);
    if !r.errors.is_empty() {
        return None;
    }
    let main_base_bytes = frame_base_bytes(&r.global_names);
    let (global_names, caps) = (std::mem::take(&mut r.global_names), r.caps);
    let sites = std::mem::take(&mut r.sites);
    drop(r);
    Some(Program { sites, main: main_block, global_names, main_base_bytes, funcs, caps, sources: map })
}

fn resolve_fn(r: &mut Resolver<'_>, f: FnDef) -> Function {
    r.pos = f.pos;
    let mut names: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for p in &f.params {
        if r.reserved.contains(p) {
            r.err(LoadKind::Name, format!("`{p}` is reserved and cannot be a parameter"));
        }
        if !seen.insert(p.clone()) {
            r.err(LoadKind::Name, format!("parameter `{p}` appears twice"));
        }
        names.push(p.clone());
    }
    let mut bound = Vec::new();
    let mut changed = Vec::new();
    let mut declared = Vec::new();
    collect_bindings(&f.body, &mut bound, &mut changed, &mut declared);
    let declared: HashSet<String> = declared.into_iter().collect();
    for p in &f.params {
        if declared.contains(p) {
            r.err(LoadKind::Name, format!("parameter `{p}` cannot also be declared global"));
        }
    }
    for n in bound {
        if !declared.contains(&n) && seen.insert(n.clone()) {
            names.push(n);
        }
    }
    // SPEC 7: changing an element of a name the function never assigns, without
    // `global`, changes nothing the caller sees: a load error that suggests `global`.
    // The name is then a local, so that it is reported once.
    for (n, pos, sp) in changed {
        if declared.contains(&n) || !seen.insert(n.clone()) || r.reserved.contains(&n) {
            continue;
        }
        r.pos = pos;
        let short = f.name.rsplit('.').next().unwrap_or(&f.name).to_string();
        r.err_full(
            sp,
            LoadKind::Name,
            format!("`{n}` is changed in `{short}` but never assigned there"),
            Some(format!("add `global {n}` at the top of `{short}` to change the global `{n}`")),
        );
        names.push(n);
    }
    r.pos = f.pos;
    if names.len() > MAX_LOCALS {
        r.err(
            LoadKind::Limit(LimitKind::Locals),
            format!("function `{}` has {} local names (limit is {MAX_LOCALS})", f.name, names.len()),
        );
    }
    let locals = names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
    r.ctx = Some(FnCtx { locals, module: f.module.clone(), lambda: None });
    let body = r.block(f.body);
    r.ctx = None;
    Function {
        name: f.name,
        nparams: f.params.len(),
        base_bytes: frame_base_bytes(&names),
        slot_names: names,
        body,
        pos: f.pos,
    }
}

/// The node of an assignment to `place` (`op`: a compound assignment's operator) of the
/// resolved value `v`.
fn assign_node(op: Option<crate::ast::BinOp>, place: Place, v: Expr) -> StmtKind {
    match (op, place.path.is_empty(), place.root) {
        (None, true, Slot::Local(i)) => StmtKind::SetLocal(i, v),
        (None, true, Slot::Global(i)) => StmtKind::SetGlobal(i, v),
        (None, false, root) if place.path.len() == 1 => {
            let key = place.path.into_iter().next().expect("one key");
            StmtKind::SetIndex(root, key, v)
        }
        (None, false, _) => StmtKind::Assign(Box::new(place), v),
        (Some(op), true, root) => StmtKind::CompoundVar(root, op, v),
        (Some(op), false, _) => StmtKind::Compound(Box::new(place), op, v),
    }
}

#[cfg(test)]
mod tests {
    use crate::program::{Program, Slot, StmtKind};

    fn load(src: &str) -> Result<Program, Vec<(String, Option<u32>)>> {
        crate::load("t.lsh", src.as_bytes().to_vec(), None)
            .map_err(|ds| ds.into_iter().map(|d| (d.kind, d.line)).collect())
    }

    fn kinds(src: &str) -> Vec<(String, Option<u32>)> {
        load(src).err().unwrap_or_default()
    }

    #[test]
    fn assigned_names_are_local_unless_global() {
        let p = load("x = 1\nfn f(a)\n  b = a\n  y = x\n  global z\n  z = 2\n  return b\nend\n").unwrap();
        let f = &p.funcs[0];
        assert_eq!(f.slot_names, vec!["a", "b", "y"]);
        assert_eq!(p.global_names, vec!["x", "z"]);
        // `y = x` reads the global x and writes local y.
        match &f.body[1].kind {
            StmtKind::SetLocal(_, crate::program::Expr::Global(..)) => {}
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn in_place_builtins_make_their_root_local() {
        let p = load("fn f()\n  xs = []\n  push(xs, 1)\nend\n").unwrap();
        assert_eq!(p.funcs[0].slot_names, vec!["xs"]);
        // Changed but never assigned, not a parameter, not global: a load error (SPEC 7).
        assert_eq!(kinds("fn g()\n  push(ys, 1)\nend\n"), vec![("name".into(), Some(2))]);
        let p = load("ys = []\nfn g()\n  global ys\n  push(ys, 1)\nend\n").unwrap();
        assert!(p.funcs[0].slot_names.is_empty());
        assert_eq!(p.global_names, vec!["ys"]);
        match &p.funcs[0].body[0].kind {
            StmtKind::Expr(crate::program::Expr::BuiltinPlace(_, _, place, _)) => {
                assert_eq!(place.root, Slot::Global(0))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unknown_functions_and_arity() {
        assert_eq!(kinds("nope(1)\n"), vec![("name".into(), Some(1))]);
        assert_eq!(kinds("x = len(1, 2)\n"), vec![("arity".into(), Some(1))]);
        assert_eq!(kinds("fn f(a)\nend\nf()\n"), vec![("arity".into(), Some(3))]);
        assert_eq!(kinds("x = math.nope(1)\n"), vec![("name".into(), Some(1))]);
        // Functions are hoisted and checked even when never called.
        assert!(load("f()\nfn f()\nend\n").is_ok());
        assert_eq!(kinds("fn never()\n  nope()\nend\n"), vec![("name".into(), Some(2))]);
    }

    #[test]
    fn reserved_and_duplicate_names() {
        assert_eq!(kinds("json = 1\n"), vec![("name".into(), Some(1))]);
        assert_eq!(kinds("x = math\n"), vec![("name".into(), Some(1))]);
        assert_eq!(kinds("fn f(env)\nend\n"), vec![("name".into(), Some(1))]);
        assert_eq!(kinds("fn len(x)\nend\n"), vec![("name".into(), Some(1))]);
        assert_eq!(kinds("fn f()\nend\nfn f()\nend\n"), vec![("name".into(), Some(3))]);
        assert_eq!(kinds("fn f(a, a)\nend\n"), vec![("name".into(), Some(1))]);
        // Core builtin names are free for variables.
        assert!(load("max = 3\nprint(max(max, 4))\n").is_ok());
    }

    #[test]
    fn place_arguments_must_be_places() {
        assert_eq!(kinds("push([], 1)\n"), vec![("syntax".into(), Some(1))]);
        assert!(load("m = {}\nm.xs = []\npush(m.xs, 1)\n").is_ok());
    }

    #[test]
    fn capabilities_are_found_statically() {
        // SPEC 9: `read` when the code only reads; the call site is recorded with its target.
        let p = load("fn never()\n  file.read(\"x\")\nend\nprint(1)\n").unwrap();
        assert_eq!(p.caps.describe(), "read");
        assert_eq!(p.sites.len(), 1);
        assert_eq!((p.sites[0].line, p.sites[0].builtin), (2, "file.read"));
        assert_eq!(p.sites[0].target.as_deref(), Some(&b"x"[..]));
        let p = load("file.write(\"x\", \"y\")\nfile.read(\"x\")\n").unwrap();
        assert_eq!(p.caps.describe(), "files");
        let p = load("print(1)\n").unwrap();
        assert_eq!(p.caps.describe(), "none");
    }

    #[test]
    fn function_arguments() {
        // SPEC 10: the bare name of a user function, resolved and arity-checked at load.
        assert!(load("fn lt(a, b)\n  return a < b\nend\nx = sort([2, 1], lt)\n").is_ok());
        assert_eq!(kinds("fn one(a)\nend\nx = sort([1], one)\n"), vec![("arity".into(), Some(3))]);
        assert_eq!(kinds("x = map([1], nope)\n"), vec![("name".into(), Some(1))]);
        assert_eq!(kinds("f = 1\nx = map([1], f)\n"), vec![("name".into(), Some(2))]);
        assert_eq!(kinds("fn f(a)\nend\nx = map([1], \"f\")\n"), vec![("syntax".into(), Some(3))]);
        // Where a value is accepted too, a variable is a value; a function's name the function.
        assert!(load("k = \"a\"\nx = sort_by([], k)\n").is_ok());
        assert!(load("fn k(x)\nend\nx = sort_by([], k)\n").is_ok());
        assert_eq!(kinds("fn k(x, y)\nend\nx = sort_by([], k)\n"), vec![("arity".into(), Some(3))]);
        // The new builtins' names are taken.
        assert_eq!(kinds("fn count(x)\nend\n"), vec![("name".into(), Some(1))]);
    }

    #[test]
    fn namespace_constants_fold() {
        let p = load("x = math.pi\n").unwrap();
        match &p.main[0].kind {
            StmtKind::SetGlobal(_, crate::program::Expr::Const(crate::value::Value::Num(n))) => {
                assert_eq!(*n, std::f64::consts::PI)
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(kinds("x = json.parse\n"), vec![("syntax".into(), Some(1))]);
    }
}
