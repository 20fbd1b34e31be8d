//! The specialized nodes the resolver picks when a construct's operands allow one, so
//! that the evaluator and the compiled core run common idioms without the general form's
//! work: a binary operator on variables and number constants (`BinS`, `BinK`), `get` on
//! variables and constants (`MapGet`), `x += 1` (`IncVar`), `x[k] = v` (`SetIndex`) and
//! the counting idiom `x[k] = get(x, k, 0) + 1` (`CountIndex`).

use crate::ast::{BinOp, Spot};
use crate::builtins::Builtin;
use crate::program::*;
use crate::value::Value;

/// The node of an assignment to `place` (`op`: a compound assignment's operator) of the
/// resolved value `v`.
pub(super) fn assign_node(op: Option<BinOp>, place: Place, v: Expr) -> StmtKind {
    match (op, place.path.is_empty(), place.root) {
        (None, true, Slot::Local(i)) => StmtKind::SetLocal(i, v),
        (None, true, Slot::Global(i)) => StmtKind::SetGlobal(i, v),
        (None, false, root) if place.path.len() == 1 => {
            let key = place.path.into_iter().next().expect("one key");
            if is_count(root, &key, &v) {
                StmtKind::CountIndex(root, key, v)
            } else {
                StmtKind::SetIndex(root, key, v)
            }
        }
        (None, false, _) => StmtKind::Assign(Box::new(place), v),
        (Some(op @ (BinOp::Add | BinOp::Sub)), true, root) if matches!(v, Expr::Const(Value::Num(_))) => {
            let Expr::Const(Value::Num(k)) = v else { unreachable!() };
            StmtKind::IncVar(root, op, k)
        }
        (Some(op), true, root) => StmtKind::CompoundVar(root, op, v),
        (Some(op), false, _) => StmtKind::Compound(Box::new(place), op, v),
    }
}

/// The node of a call of builtin `b` with the resolved arguments `vals`.
pub(super) fn builtin_node(b: &'static Builtin, vals: Vec<Expr>, sp: Spot) -> Expr {
    // Only a call of valid arity becomes the idiom node (its users index the
    // arguments); a wrong one stays a call, whose arity error load reports.
    if b.name == "get"
        && (2..=3).contains(&vals.len())
        && vals.iter().all(|v| matches!(v, Expr::Const(_) | Expr::Local(..) | Expr::Global(..)))
    {
        return Expr::MapGet(b, vals.into_boxed_slice(), sp);
    }
    if vals.iter().any(|v| matches!(v, Expr::Lambda(..))) {
        return Expr::WithLambdas(Box::new(Expr::Builtin(b, vals.into_boxed_slice(), sp)));
    }
    Expr::Builtin(b, vals.into_boxed_slice(), sp)
}

/// Is `root[key] = v` the counting idiom `x[k] = get(x, k, d) + n` (or `- n`): the map,
/// the key and the default variables or constants, the same map and key on both sides?
fn is_count(root: Slot, key: &Expr, v: &Expr) -> bool {
    let Expr::BinK(BinOp::Add | BinOp::Sub, _, g, _) = v else { return false };
    let Expr::MapGet(_, args, _) = &**g else { return false };
    if args.len() != 3 {
        return false;
    }
    let same_root = match (&args[0], root) {
        (Expr::Local(i, _), Slot::Local(j)) | (Expr::Global(i, _), Slot::Global(j)) => *i == j,
        _ => false,
    };
    let same_key = match (&args[1], key) {
        (Expr::Local(i, _), Expr::Local(j, _)) | (Expr::Global(i, _), Expr::Global(j, _)) => i == j,
        (Expr::Const(Value::Str(a)), Expr::Const(Value::Str(b))) => a == b,
        _ => false,
    };
    same_root && same_key && matches!(args[2], Expr::Const(_))
}

/// Pick the specialized form of a binary operator when its operands allow one.
pub(super) fn specialize(op: BinOp, a: Expr, b: Expr, sp: Spot) -> Expr {
    use BinOp::*;
    let numeric = matches!(op, Add | Sub | Mul | Div | Mod | Pow | Eq | Ne | Lt | Le | Gt | Ge);
    let simple = |e: &Expr| match e {
        Expr::Local(i, _) => Some(Opnd::Local(*i)),
        Expr::Global(i, _) => Some(Opnd::Global(*i)),
        Expr::Const(Value::Num(n)) => Some(Opnd::Num(*n)),
        _ => None,
    };
    if numeric {
        if let (Some(x), Some(y)) = (simple(&a), simple(&b)) {
            return Expr::BinS(op, sp, x, y);
        }
        if let Expr::Const(Value::Num(k)) = b {
            return Expr::BinK(op, sp, Box::new(a), k);
        }
    }
    Expr::Bin(op, sp, Box::new(a), Box::new(b))
}
