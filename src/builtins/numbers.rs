//! Number builtins and the `math` namespace. Every result must be finite: a result
//! that is not (`sqrt(-1)`, `math.log(0)`, overflow) is an `arith` error.

use super::Host;
use super::{b, Builtin, CONST};
use crate::diag::ErrKind;
use crate::error::R;
use crate::value::*;

fn finite(it: &Host, name: &str, x: f64) -> R<Value> {
    if x.is_finite() {
        Ok(Value::Num(x + 0.0))
    } else if x.is_nan() {
        Err(it.err(ErrKind::Arith, format!("{name}: result is not a number")))
    } else {
        Err(it.err(ErrKind::Arith, format!("{name}: result is not finite")))
    }
}

/// A number builtin's peek (`Builtin::peek`): its finite result from number arguments
/// read in place (None: another argument, or a result the call reports as an error).
fn peeked(r: f64) -> Option<Value> {
    r.is_finite().then_some(Value::Num(r + 0.0))
}

macro_rules! unary {
    ($fname:ident, $name:expr, $op:expr) => {
        fn $fname(it: &mut Host, args: &mut [Value]) -> R<Value> {
            let x = it.arg_num($name, args, 0)?;
            let f: fn(f64) -> f64 = $op;
            finite(it, $name, f(x))
        }
    };
}

unary!(abs, "abs", f64::abs);
unary!(floor, "floor", f64::floor);
unary!(ceil, "ceil", f64::ceil);
unary!(sqrt, "sqrt", f64::sqrt);
unary!(sin, "math.sin", f64::sin);
unary!(cos, "math.cos", f64::cos);
unary!(tan, "math.tan", f64::tan);
unary!(log, "math.log", f64::ln);
unary!(log10, "math.log10", f64::log10);
unary!(exp, "math.exp", f64::exp);

/// The peek of a builtin of one number computed by `f`.
fn peek1(args: &[&Value], f: fn(f64) -> f64) -> Option<Value> {
    let [Value::Num(x)] = args else { return None };
    peeked(f(*x))
}

/// The peek of a builtin of two numbers computed by `f`.
fn peek2(args: &[&Value], f: fn(f64, f64) -> f64) -> Option<Value> {
    let [Value::Num(x), Value::Num(y)] = args else { return None };
    peeked(f(*x, *y))
}

fn round(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let x = it.arg_num("round", args, 0)?;
    let d = match it.opt(args, 1) {
        None => 0,
        Some(_) => it.arg_int("round", args, 1, -308.0, 308.0)?,
    };
    finite(it, "round", round_digits(x, d as i32))
}

/// `x` rounded half away from zero at `d` decimal places (negative `d`: to tens,
/// hundreds, ...). A number whose scaled value is already integral (at least 2^52 in
/// magnitude) is returned as it is: scaling it up and back down could only lose bits
/// (`round(1e21, 2)` is `1e21`).
pub fn round_digits(x: f64, d: i32) -> f64 {
    if d == 0 {
        return x.round();
    }
    const INTEGRAL: f64 = 4_503_599_627_370_496.0; // 2^52
    if d > 0 {
        let m = 10f64.powi(d);
        let scaled = x * m;
        if !scaled.is_finite() || scaled.abs() >= INTEGRAL {
            return x;
        }
        let r = scaled.round() / m;
        if r.is_finite() {
            r
        } else {
            x
        }
    } else {
        let m = 10f64.powi(-d);
        if !m.is_finite() {
            return 0.0 * x.signum();
        }
        let scaled = x / m;
        if scaled.abs() >= INTEGRAL {
            return x;
        }
        let r = scaled.round() * m;
        if r.is_finite() {
            r
        } else {
            x
        }
    }
}

fn atan2(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let y = it.arg_num("math.atan2", args, 0)?;
    let x = it.arg_num("math.atan2", args, 1)?;
    finite(it, "math.atan2", y.atan2(x))
}

fn pow(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let x = it.arg_num("math.pow", args, 0)?;
    let y = it.arg_num("math.pow", args, 1)?;
    finite(it, "math.pow", x.powf(y))
}

pub const TABLE: &[Builtin] = &[
    b("abs", "abs(x)", 1, 1, CONST, abs).with_peek(|a| peek1(a, f64::abs)),
    b("floor", "floor(x)", 1, 1, CONST, floor).with_peek(|a| peek1(a, f64::floor)),
    b("ceil", "ceil(x)", 1, 1, CONST, ceil).with_peek(|a| peek1(a, f64::ceil)),
    b("round", "round(x[, digits])", 1, 2, CONST, round).with_peek(|a| peek1(a, |x| round_digits(x, 0))),
    b("sqrt", "sqrt(x)", 1, 1, CONST, sqrt).with_peek(|a| peek1(a, f64::sqrt)),
    b("math.sin", "math.sin(x)", 1, 1, CONST, sin).with_peek(|a| peek1(a, f64::sin)),
    b("math.cos", "math.cos(x)", 1, 1, CONST, cos).with_peek(|a| peek1(a, f64::cos)),
    b("math.tan", "math.tan(x)", 1, 1, CONST, tan).with_peek(|a| peek1(a, f64::tan)),
    b("math.atan2", "math.atan2(y, x)", 2, 2, CONST, atan2).with_peek(|a| peek2(a, f64::atan2)),
    b("math.log", "math.log(x)", 1, 1, CONST, log).with_peek(|a| peek1(a, f64::ln)),
    b("math.log10", "math.log10(x)", 1, 1, CONST, log10).with_peek(|a| peek1(a, f64::log10)),
    b("math.exp", "math.exp(x)", 1, 1, CONST, exp).with_peek(|a| peek1(a, f64::exp)),
    b("math.pow", "math.pow(x, y)", 2, 2, CONST, pow).with_peek(|a| peek2(a, f64::powf)),
];
