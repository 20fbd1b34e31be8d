//! The names a body binds, found before it is resolved (SPEC 6): a name assigned anywhere
//! in a function's body (or bound by `for` or `catch`) is local unless declared `global`,
//! and a name changed in place (an element assignment, an in-place builtin such as
//! `push`) is reported when the function never assigns it.

use crate::ast::{Expr as AExpr, InterpPart, Pos, Spot, Stmt as AStmt, StmtKind as AKind};
use crate::builtins;

/// A name changed in place (an element assignment root, or the root of an in-place
/// builtin's place argument), with where.
pub(super) type Change = (String, Pos, Spot);

/// Names a body binds: `assigned` gets assignment roots (plain or compound) and loop and
/// catch variables; `changed` the roots of element changes and in-place builtin calls;
/// `globals` the names it declares `global`.
pub(super) fn collect_bindings(
    stmts: &[AStmt],
    assigned: &mut Vec<String>,
    changed: &mut Vec<Change>,
    globals: &mut Vec<String>,
) {
    fn root(e: &AExpr) -> Option<(&str, Spot)> {
        match e {
            AExpr::Name(n, s) => Some((n, *s)),
            AExpr::Index(b, ..) | AExpr::Field(b, ..) => root(b),
            _ => None,
        }
    }
    fn in_expr(e: &AExpr, pos: Pos, changed: &mut Vec<Change>) {
        match e {
            AExpr::Call(callee, args, _) => {
                if let Some(name) = callee.callee_name() {
                    if builtins::lookup(&name).is_some_and(|b| b.is_place()) {
                        if let Some((r, s)) = args.first().and_then(root) {
                            changed.push((r.to_string(), pos, s));
                        }
                    }
                }
                args.iter().for_each(|a| in_expr(a, pos, changed));
            }
            AExpr::Paren(a) | AExpr::Unary(_, a, _) | AExpr::Field(a, ..) => in_expr(a, pos, changed),
            AExpr::Binary(_, a, b, _) | AExpr::And(a, b) | AExpr::Or(a, b) | AExpr::Index(a, b, _) => {
                in_expr(a, pos, changed);
                in_expr(b, pos, changed);
            }
            AExpr::Cond(a, c, b) => {
                in_expr(a, pos, changed);
                in_expr(c, pos, changed);
                in_expr(b, pos, changed);
            }
            AExpr::List(items) => items.iter().for_each(|a| in_expr(a, pos, changed)),
            AExpr::Map(items) => items.iter().for_each(|(_, a)| in_expr(a, pos, changed)),
            AExpr::Interp(parts) => parts.iter().for_each(|p| {
                if let InterpPart::Expr(e) = p {
                    in_expr(e, pos, changed)
                }
            }),
            _ => {}
        }
    }
    for s in stmts {
        let pos = s.pos;
        match &s.kind {
            AKind::Assign { target, value, .. } => {
                in_expr(target, pos, changed);
                in_expr(value, pos, changed);
                match (target, root(target)) {
                    (AExpr::Name(n, _), _) => assigned.push(n.to_string()),
                    (_, Some((r, sp))) => changed.push((r.to_string(), pos, sp)),
                    _ => {}
                }
            }
            AKind::MultiAssign { targets, values } => {
                for t in targets {
                    in_expr(t, pos, changed);
                    match (t, root(t)) {
                        (AExpr::Name(n, _), _) => assigned.push(n.to_string()),
                        (_, Some((r, sp))) => changed.push((r.to_string(), pos, sp)),
                        _ => {}
                    }
                }
                values.iter().for_each(|v| in_expr(v, pos, changed));
            }
            AKind::Call(e) | AKind::Throw(e) => in_expr(e, pos, changed),
            AKind::Return(Some(e)) => in_expr(e, pos, changed),
            AKind::If { arms, else_body } => {
                for a in arms {
                    in_expr(&a.cond, a.pos, changed);
                    collect_bindings(&a.body, assigned, changed, globals);
                }
                if let Some(b) = else_body {
                    collect_bindings(b, assigned, changed, globals);
                }
            }
            AKind::While { cond, body } => {
                in_expr(cond, pos, changed);
                collect_bindings(body, assigned, changed, globals);
            }
            AKind::ForRange(f) => {
                let crate::ast::ForRange { var, start, end, step, body } = &**f;
                assigned.push(var.clone());
                in_expr(start, pos, changed);
                in_expr(end, pos, changed);
                if let Some(s) = step {
                    in_expr(s, pos, changed);
                }
                collect_bindings(body, assigned, changed, globals);
            }
            AKind::ForIn(f) => {
                let crate::ast::ForIn { first, second, iter, body } = &**f;
                assigned.push(first.clone());
                if let Some(s) = second {
                    assigned.push(s.clone());
                }
                in_expr(iter, pos, changed);
                collect_bindings(body, assigned, changed, globals);
            }
            AKind::Try { body, var, handler } => {
                collect_bindings(body, assigned, changed, globals);
                assigned.push(var.clone());
                collect_bindings(handler, assigned, changed, globals);
            }
            AKind::Global(names) => globals.extend(names.iter().cloned()),
            AKind::Include(b) => collect_bindings(b, assigned, changed, globals),
            _ => {}
        }
    }
}
