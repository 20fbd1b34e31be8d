//! Operators: the number fast paths (`arith`, `int_mod`), floored division, `binop` for
//! every operator and operand type, and `index_value`. Written once.
//! Child of `interp`.

use super::*;

impl<'p> Interp<'p> {
    /// A number operation on two numbers (the fast path of arithmetic and comparison).
    #[inline(always)]
    pub(super) fn num_op(&mut self, op: BinOp, p: f64, q: f64) -> R<Value> {
        let r = match op {
            BinOp::Add => p + q,
            BinOp::Sub => p - q,
            BinOp::Mul => p * q,
            BinOp::Lt => return Ok(Value::Bool(p < q)),
            BinOp::Le => return Ok(Value::Bool(p <= q)),
            BinOp::Gt => return Ok(Value::Bool(p > q)),
            BinOp::Ge => return Ok(Value::Bool(p >= q)),
            BinOp::Eq => return Ok(Value::Bool(p == q)),
            BinOp::Ne => return Ok(Value::Bool(p != q)),
            BinOp::Mod => match int_mod(p, q) {
                Some(r) => r,
                None => return self.binop(op, Value::Num(p), Value::Num(q)),
            },
            // (Here rather than in `arith`: there, the operator's `match` grew for
            // every instruction whose operator is not a constant, nbody +1.3%.)
            BinOp::FloorDiv => match int_floor_div(p, q) {
                Some(r) => r,
                None => return self.binop(op, Value::Num(p), Value::Num(q)),
            },
            _ => return self.binop(op, Value::Num(p), Value::Num(q)),
        };
        if r.is_finite() {
            Ok(Value::Num(r))
        } else {
            Err(self.err(ErrKind::Arith, "arithmetic overflow"))
        }
    }

    pub fn index_value(&self, x: &Value, k: &Value) -> R<Value> {
        match x {
            Value::List(l) => {
                let i = self.host.index(k, l.len())?;
                Ok(l.items()[i].clone())
            }
            Value::Map(m) => {
                let key = self.map_key(k)?;
                match m.get(key) {
                    Some(v) => Ok(v.clone()),
                    None => Err(self.missing_key(key)),
                }
            }
            Value::Str(s) => {
                let i = self.host.index(k, s.len())?;
                Ok(Value::Str(crate::value::byte_str(s[i])))
            }
            other => Err(self.err(ErrKind::Type, format!("cannot index a {}", other.type_name()))),
        }
    }

    /// Binary operators (SPEC 3).
    #[inline(never)]
    pub fn binop(&mut self, op: BinOp, x: Value, y: Value) -> R<Value> {
        use BinOp::*;
        match op {
            Add | Sub | Mul | Div | FloorDiv | Mod | Pow => {
                let (Value::Num(a), Value::Num(b)) = (&x, &y) else {
                    return Err(self.err(
                        ErrKind::Type,
                        format!(
                            "operands of {} must be numbers, got {} and {}",
                            op.symbol(),
                            x.type_name(),
                            y.type_name()
                        ),
                    ));
                };
                let (a, b) = (*a, *b);
                let r = match op {
                    Add => a + b,
                    Sub => a - b,
                    Mul => a * b,
                    Div => {
                        if b == 0.0 {
                            return Err(self.err(ErrKind::Arith, "division by zero"));
                        }
                        a / b
                    }
                    FloorDiv => {
                        if b == 0.0 {
                            return Err(self.err(ErrKind::Arith, "division by zero"));
                        }
                        floor_div(a, b)
                    }
                    Mod => {
                        if b == 0.0 {
                            return Err(self.err(ErrKind::Arith, "modulo by zero"));
                        }
                        if let Some(r) = int_mod(a, b) {
                            return Ok(Value::Num(r));
                        }
                        let r = a % b;
                        if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                            r + b
                        } else {
                            r
                        }
                    }
                    _ => a.powf(b),
                };
                if r.is_finite() {
                    Ok(Value::Num(r))
                } else if r.is_nan() {
                    Err(self.err(ErrKind::Arith, format!("result of {} is not a number", op.symbol())))
                } else {
                    Err(self.err(ErrKind::Arith, "arithmetic overflow"))
                }
            }
            Concat => self.host.concat(&x, &y),
            Eq | Ne => {
                let mut n = EqCount::default();
                let same = equals_counted(&x, &y, &mut n);
                self.host.work(n.units())?;
                Ok(Value::Bool(same == (op == Eq)))
            }
            Lt | Le | Gt | Ge => {
                let ord = match (&x, &y) {
                    (Value::Num(a), Value::Num(b)) => a.partial_cmp(b),
                    (Value::Str(a), Value::Str(b)) => {
                        let (o, touched) = crate::value::cmp_touched(a, b);
                        self.host.work(crate::meter::scaled(touched as u64, WORK_EQ_BYTE_X256))?;
                        Some(o)
                    }
                    _ => {
                        return Err(self.err(
                            ErrKind::Type,
                            format!("cannot compare {} with {} using {}", x.type_name(), y.type_name(), op.symbol()),
                        ))
                    }
                };
                let Some(o) = ord else { return Ok(Value::Bool(false)) };
                use std::cmp::Ordering::*;
                Ok(Value::Bool(match op {
                    Lt => o == Less,
                    Le => o != Greater,
                    Gt => o == Greater,
                    _ => o != Less,
                }))
            }
            In | NotIn => {
                let found = match &y {
                    Value::List(l) => {
                        let mut n = EqCount::default();
                        let found = l.items().iter().any(|v| equals_counted(v, &x, &mut n));
                        self.host.work(n.units())?;
                        found
                    }
                    Value::Map(m) => match &x {
                        Value::Str(k) => {
                            self.host.work(crate::meter::scaled(k.len() as u64, WORK_EQ_BYTE_X256))?;
                            m.contains(k)
                        }
                        _ => false,
                    },
                    Value::Str(s) => match &x {
                        Value::Str(sub) => {
                            self.host.work(find_work(s.len(), sub.len()))?;
                            find_bytes(s, sub).is_some()
                        }
                        other => {
                            return Err(self.err(
                                ErrKind::Type,
                                format!("`in` a string needs a string on the left, got {}", other.type_name()),
                            ))
                        }
                    },
                    other => {
                        return Err(self.err(
                            ErrKind::Type,
                            format!("`in` needs a list, map or string on the right, got {}", other.type_name()),
                        ))
                    }
                };
                Ok(Value::Bool(found == (op == In)))
            }
        }
    }
}

/// Arithmetic that succeeds with a finite number (None: let the general path decide,
/// and report the error if there is one).
#[inline(always)]
pub(super) fn arith(op: BinOp, x: f64, y: f64) -> Option<f64> {
    let r = match op {
        BinOp::Add => x + y,
        BinOp::Sub => x - y,
        BinOp::Mul => x * y,
        BinOp::Mod => int_mod(x, y)?,
        // (A divisor of 0 or -0 is the general path's `division by zero`; a quotient
        // past the largest number is its overflow.)
        BinOp::Div if y != 0.0 => x / y,
        _ => return None,
    };
    r.is_finite().then_some(r)
}

/// Floored division `a // b` (b not 0), as Python computes it for floats: exact for
/// integers below 2^53, and the quotient that `%`'s floored remainder goes with.
pub fn floor_div(a: f64, b: f64) -> f64 {
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div == 0.0 {
        return 0.0;
    }
    let f = div.floor();
    if div - f > 0.5 {
        f + 1.0
    } else {
        f
    }
}

/// `int_mod(a, k)` for a divisor known to be a whole number other than 0 within `i32`
/// (`Op::ModN`): only the dividend is checked. The same result as `int_mod`.
#[inline(always)]
pub(super) fn int_mod_by(a: f64, k: std::num::NonZeroI32) -> Option<f64> {
    if a.abs() < INT_LIM {
        // (Within 2^53: the processor's conversion, without `as`'s saturation.)
        let x = leash_alloc::trunc_i64(a);
        if x as f64 == a {
            return Some(floored_rem(x, i64::from(k.get())));
        }
    }
    None
}

/// Floored modulo of two integral numbers that fit exactly in i64 arithmetic (the
/// common case, done without a floating-point remainder). None otherwise.
#[inline(always)]
fn int_mod(a: f64, b: f64) -> Option<f64> {
    let (x, y) = whole_pair(a, b)?;
    Some(floored_rem(x, y))
}

/// Floored division `a // b` of two whole numbers within 2^53 (b not 0), in integers:
/// `floor_div`'s result (a zero quotient is +0 there too), without its `fmod` and
/// `floor` calls. None otherwise (the general path: `floor_div`, or the error).
#[inline(always)]
fn int_floor_div(a: f64, b: f64) -> Option<f64> {
    let (x, y) = whole_pair(a, b)?;
    let (q, r) = (x.wrapping_div(y), x.wrapping_rem(y));
    let q = if r != 0 && ((r < 0) != (y < 0)) { q - 1 } else { q };
    Some(q as f64)
}

/// `a` and `b` as integers, when both are whole numbers within 2^53 and `b` is not 0.
#[inline(always)]
fn whole_pair(a: f64, b: f64) -> Option<(i64, i64)> {
    if a.abs() < INT_LIM && b.abs() < INT_LIM {
        // (Within 2^53: the processor's conversion, without `as`'s saturation.)
        let (x, y) = (leash_alloc::trunc_i64(a), leash_alloc::trunc_i64(b));
        // (`y == 0` tested on the integer: the remainder's own check of it folds away;
        // `wrapping_rem` has no overflow check, and within 2^53 there is none to make.)
        if y != 0 && x as f64 == a && y as f64 == b {
            return Some((x, y));
        }
    }
    None
}

/// 2^53, the bound of `whole_pair` and `int_mod_by`: below it every whole number is a
/// float exactly, so the integer remainder and quotient are the exact ones.
const INT_LIM: f64 = 9_007_199_254_740_992.0;

/// The floored remainder of `x` by `y` (not 0; both within 2^53, so `wrapping_rem`
/// has no overflow to check), as a number.
#[inline(always)]
fn floored_rem(x: i64, y: i64) -> f64 {
    let mut r = x.wrapping_rem(y);
    if r != 0 && ((r < 0) != (y < 0)) {
        r += y;
    }
    r as f64
}
