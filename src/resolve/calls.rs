//! Calls: what a call names (a user function, a builtin, a stdlib module's function),
//! its arity, the capabilities it reaches (for `leash check`), a builtin's place and
//! function arguments, and anonymous functions (made synthetic user functions, with the
//! variables they capture).

use crate::ast::{Expr as AExpr, Spot};
use crate::builtins::{self, Builtin, VARIADIC};
use crate::diag::LoadKind;
use crate::program::*;
use crate::value::{Handle, HandleKind, Value};

use super::{frame_base_bytes, near, FnCtx, LambdaCtx, Resolver};

impl Resolver<'_> {
    /// A variable that the anonymous function being resolved reads from the scope around
    /// it: read there (with that scope's checks, so an error comes in source order),
    /// its value captured when the builtin call starts, and a slot of its own here.
    pub(super) fn capture(&mut self, n: &crate::ast::Name, sp: Spot) -> Expr {
        let inner = self.ctx.take();
        self.ctx = self.outer.pop().expect("an anonymous function has a scope around it");
        let e = self.expr(&AExpr::Name(n.clone(), sp));
        self.outer.push(self.ctx.take());
        self.ctx = inner;
        let ctx = self.ctx.as_mut().expect("in an anonymous function");
        let lam = ctx.lambda.as_mut().expect("in an anonymous function");
        let i = lam.names.len() as u32;
        ctx.locals.insert(n.to_string(), i);
        lam.names.push(n.to_string());
        lam.captures.push(e);
        Expr::Local(i, sp)
    }

    /// An anonymous function at the function parameter of builtin `b`, which calls it
    /// with `want` arguments: checked like a named function argument (its arity, its
    /// parameters' names, its body's names), and made a synthetic user function whose
    /// body is `return EXPR` at this line (so each call costs the one step of a line).
    fn lambda(&mut self, b: &'static Builtin, want: usize, l: &crate::ast::Lambda) -> Expr {
        let noun = |n: usize| if n == 1 { "argument" } else { "arguments" };
        let has = l.params.len();
        if has != want {
            let s = if has == 1 { "" } else { "s" };
            self.err_full(
                l.spot,
                LoadKind::Arity,
                format!("this function takes {has} parameter{s}, but `{}` calls it with {want} {}", b.name, noun(want)),
                Some(format!("`{}` passes {want} {} to its function argument", b.name, noun(want))),
            );
        }
        let mut names: Vec<String> = Vec::new();
        for p in &l.params {
            if self.reserved.contains(&**p) {
                self.reserved_err(l.spot, p, format!("`{p}` is reserved and cannot be a parameter"));
            } else if names.iter().any(|n| **n == **p) {
                self.err_full(l.spot, LoadKind::Name, format!("parameter `{p}` appears twice"), None);
            }
            names.push(p.to_string());
        }
        let locals = names.iter().enumerate().map(|(i, n)| (n.clone(), i as u32)).collect();
        let module = self.ctx.as_ref().and_then(|c| c.module.clone());
        let saved = self.ctx.take();
        self.outer.push(saved);
        self.ctx = Some(FnCtx { locals, module, lambda: Some(LambdaCtx { names, captures: Vec::new() }) });
        let body = self.expr(&l.body);
        let ctx = std::mem::replace(&mut self.ctx, self.outer.pop().expect("pushed above"));
        let LambdaCtx { names, captures } = ctx.and_then(|c| c.lambda).expect("a lambda context");
        let line = self.map.locate(self.pos).map_or(0, |(_, l)| l);
        let fi = self.nfns + self.lambdas.len();
        self.lambdas.push(Function {
            name: format!("fn@{line}"),
            nparams: has,
            base_bytes: frame_base_bytes(&names),
            slot_names: names,
            body: Box::new([Stmt { pos: self.pos, kind: StmtKind::Return(Some(body)) }]),
            pos: self.pos,
        });
        Expr::Lambda(fi as u32, captures.into_boxed_slice())
    }

    /// What a call names. In a stdlib module, a bare name is a builtin and the module's
    /// own functions are called by their qualified names (`path.basename`), so that a
    /// module may define `join` or `split` without shadowing the builtins.
    fn lookup_call(&self, name: &str) -> Option<Result<usize, &'static Builtin>> {
        if let Some((ns, _)) = name.split_once('.') {
            if self.modules.contains(ns) {
                return self.fn_index.get(name).map(|&i| Ok(i));
            }
            return builtins::lookup(name).map(Err);
        }
        let in_module = self.ctx.as_ref().is_some_and(|c| c.module.is_some());
        if !in_module {
            if let Some(&i) = self.fn_index.get(name) {
                return Some(Ok(i));
            }
            return builtins::lookup(name).map(Err);
        }
        builtins::lookup(name).or_else(|| builtins::lookup_module_only(name)).map(Err)
    }

    /// A known function (user or builtin) one edit from `name`.
    pub(super) fn near_function(&self, name: &str) -> Option<String> {
        let user = self.fn_index.keys().map(String::as_str);
        near(name, user.chain(builtins::all().map(|b| b.name)))
    }

    pub(super) fn call(&mut self, callee: &AExpr, args: &[AExpr], sp: Spot) -> Expr {
        let Some(name) = callee.callee_name() else {
            self.err_full(sp, LoadKind::Syntax, "only a named function can be called", None);
            return Expr::Const(Value::Nil);
        };
        let Some(target) = self.lookup_call(&name) else {
            let help = self.near_function(&name).map(|n| format!("did you mean `{n}`?"));
            self.err_full(sp, LoadKind::Name, format!("unknown function `{name}`"), help);
            return Expr::Const(Value::Nil);
        };
        match target {
            Ok(fi) => {
                let n = self.fn_params[fi];
                if args.len() != n {
                    let s = if n == 1 { "" } else { "s" };
                    self.err_full(
                        sp,
                        LoadKind::Arity,
                        format!("`{name}` takes {n} argument{s}, got {}", args.len()),
                        None,
                    );
                }
                Expr::Call(fi as u32, args.iter().map(|a| self.expr(a)).collect())
            }
            Err(b) => {
                let n = args.len();
                if n < b.min as usize || (b.max != VARIADIC && n > b.max as usize) {
                    self.err_full(sp, LoadKind::Arity, format!("`{name}` takes {}, got {n}", b.arity_text()), None);
                }
                if let Some(cap) = b.cap {
                    let (file, line) = match self.map.locate(self.pos) {
                        Some((f, l)) => (f.to_string(), l),
                        None => (String::new(), 0),
                    };
                    let target = match args.first() {
                        Some(AExpr::Str(s)) if b.name == "db.open" => Some(crate::builtins::db_pg::redact(s)),
                        Some(AExpr::Str(s)) => Some(s.clone()),
                        _ => None,
                    };
                    self.sites.push(crate::program::CallSite { file, line, builtin: b.name, cap, target });
                }
                if let Some(cap) = b.cap {
                    self.caps.add_used(cap);
                }
                if b.is_place() {
                    if self.ctx.as_ref().is_some_and(|c| c.lambda.is_some()) {
                        self.err_full(
                            sp,
                            LoadKind::Syntax,
                            format!(
                                "an anonymous function cannot change anything: `{name}` changes its first argument"
                            ),
                            Some("compute a new value instead (`concat(xs, [x])`), or use a named function".into()),
                        );
                        return Expr::Const(Value::Nil);
                    }
                    let Some((first, rest)) = args.split_first() else {
                        return Expr::Const(Value::Nil);
                    };
                    let Some(place) = self.place(first, true) else {
                        self.err_full(
                            sp,
                            LoadKind::Syntax,
                            format!("`{name}` changes its first argument in place: it must be a variable or an element of one"),
                            None,
                        );
                        return Expr::Const(Value::Nil);
                    };
                    return Expr::BuiltinPlace(sp, b, Box::new(place), rest.iter().map(|a| self.expr(a)).collect());
                }
                let mut vals: Vec<Expr> = args.iter().enumerate().map(|(i, a)| self.builtin_arg(b, i, a, sp)).collect();
                if b.name == "is_main" {
                    // Whether this call stands in the entry script (the first file loaded).
                    let here = self.map.locate(self.pos).map(|(f, _)| f);
                    let entry = self.map.files.first().map(|f| f.name.as_str());
                    vals.push(Expr::Const(Value::Bool(here.is_some() && here == entry)));
                }
                builtin_node(b, vals, sp)
            }
        }
    }

    /// Argument `i` of a call of builtin `b`: at its function parameter (SPEC 10), the
    /// bare name of a top-level user function becomes a reference to it, its arity
    /// checked against how `b` calls it; anywhere else an ordinary expression.
    fn builtin_arg(&mut self, b: &'static Builtin, i: usize, a: &AExpr, call_spot: Spot) -> Expr {
        let Some(fp) = b.fnp.filter(|p| p.pos as usize == i) else { return self.expr(a) };
        let want = fp.arity as usize;
        let noun = |n: usize| if n == 1 { "argument" } else { "arguments" };
        if let AExpr::Lambda(l) = a {
            return self.lambda(b, want, l);
        }
        if let AExpr::Name(n, sp) = a {
            if let Some(fi) = self.user_function(n) {
                let has = self.fn_params[fi];
                if has != want {
                    self.err_full(
                        *sp,
                        LoadKind::Arity,
                        format!("`{n}` takes {has} {}, but `{}` calls it with {want}", noun(has), b.name),
                        Some(format!("`{}` passes {want} {} to its function argument", b.name, noun(want))),
                    );
                }
                return Expr::Const(Value::Handle(Handle { kind: HandleKind::Function, id: fi as u32 }));
            }
            if !fp.only {
                return self.expr(a);
            }
            let user: Vec<&str> = self
                .fn_index
                .iter()
                .filter(|(k, &fi)| !k.contains('.') && self.fn_params[fi] == want)
                .map(|(k, _)| k.as_str())
                .collect();
            let help = match near(n, user) {
                Some(m) => format!("did you mean `{m}`?"),
                None if builtins::lookup(n).is_some() => {
                    format!("`{n}` is a builtin: pass a function of your own that calls it")
                }
                None => format!("define `fn {n}(...)` with {want} {} at the top level", noun(want)),
            };
            self.err_full(
                *sp,
                LoadKind::Name,
                format!("`{n}` is not a function: argument {} of `{}` must name a user function", i + 1, b.name),
                Some(help),
            );
            return Expr::Const(Value::Nil);
        }
        if !fp.only {
            return self.expr(a);
        }
        self.err_full(
            call_spot,
            LoadKind::Syntax,
            format!(
                "argument {} of `{}` must be a function taking {want} {}: the bare name of a user function, or `fn(...) => EXPR`",
                i + 1,
                b.name,
                noun(want)
            ),
            None,
        );
        Expr::Const(Value::Nil)
    }

    /// The top-level user function that a bare name at a function parameter names (the
    /// loaded program's functions, includes too; not a stdlib module's, and none inside
    /// a module).
    fn user_function(&self, name: &str) -> Option<usize> {
        if self.ctx.as_ref().is_some_and(|c| c.module.is_some()) || name.contains('.') {
            return None;
        }
        self.fn_index.get(name).copied()
    }
}

/// The node of a call of builtin `b` with the resolved arguments `vals`.
fn builtin_node(b: &'static Builtin, vals: Vec<Expr>, sp: Spot) -> Expr {
    if vals.iter().any(|v| matches!(v, Expr::Lambda(..))) {
        return Expr::WithLambdas(Box::new(Expr::Builtin(b, vals.into_boxed_slice(), sp)));
    }
    Expr::Builtin(b, vals.into_boxed_slice(), sp)
}
