//! The `bit` namespace (round 3): bitwise operations on integral numbers.
//!
//! Operands are integral numbers in -2^53..2^53 (every integer a number holds exactly),
//! taken as 64-bit two's complement. A result outside -2^53..2^53 would not survive the
//! trip back into a number, so it is an `arith` error, never a silent rounding
//! (`bit.lshift(1, 54)`, `bit.rshift(-1, 1)`). Shift counts are integers from 0: a count
//! of 64 or more shifts every bit out (0, or -1 for `arshift` of a negative number),
//! as the operation on a wider integer would; a negative count is a `value` error, as
//! in Python. All are constant work.

use super::Host;
use super::{b, Builtin, CONST};
use crate::diag::ErrKind;
use crate::error::R;
use crate::value::*;

const LIMIT: f64 = 9_007_199_254_740_992.0; // 2^53

fn operand(it: &Host, name: &str, args: &[Value], i: usize) -> R<i64> {
    it.arg_int(name, args, i, -LIMIT, LIMIT)
}

fn count(it: &Host, name: &str, args: &[Value], i: usize) -> R<u32> {
    Ok(it.arg_int(name, args, i, 0.0, LIMIT)?.min(64) as u32)
}

fn result(it: &Host, name: &str, r: i128) -> R<Value> {
    if r < -(1i128 << 53) || r > (1i128 << 53) {
        return Err(it.err(
            ErrKind::Arith,
            format!("{name}: the result {r} is outside -2^53..2^53, where every integer is a number exactly"),
        ));
    }
    Ok(Value::Num(r as f64))
}

fn band(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (a, b) = (operand(it, "bit.band", args, 0)?, operand(it, "bit.band", args, 1)?);
    result(it, "bit.band", (a & b) as i128)
}

fn bor(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (a, b) = (operand(it, "bit.bor", args, 0)?, operand(it, "bit.bor", args, 1)?);
    result(it, "bit.bor", (a | b) as i128)
}

fn bxor(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (a, b) = (operand(it, "bit.bxor", args, 0)?, operand(it, "bit.bxor", args, 1)?);
    result(it, "bit.bxor", (a ^ b) as i128)
}

fn bnot(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let a = operand(it, "bit.bnot", args, 0)?;
    result(it, "bit.bnot", (!a) as i128)
}

fn lshift(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (a, n) = (operand(it, "bit.lshift", args, 0)?, count(it, "bit.lshift", args, 1)?);
    let r = if n >= 64 { 0 } else { a.wrapping_shl(n) };
    // Bits shifted past bit 63 are lost in 64 bits; the result is the 64-bit one.
    result(it, "bit.lshift", r as i128)
}

/// Logical: zeros come in at the top; the 64 bits are then read as unsigned.
fn rshift(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (a, n) = (operand(it, "bit.rshift", args, 0)?, count(it, "bit.rshift", args, 1)?);
    let r = if n >= 64 { 0 } else { (a as u64) >> n };
    result(it, "bit.rshift", r as i128)
}

/// Arithmetic: the sign bit comes in at the top.
fn arshift(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let (a, n) = (operand(it, "bit.arshift", args, 0)?, count(it, "bit.arshift", args, 1)?);
    let r = a >> n.min(63);
    result(it, "bit.arshift", r as i128)
}

pub const TABLE: &[Builtin] = &[
    b("bit.band", "bit.band(a, b)", 2, 2, CONST, band),
    b("bit.bor", "bit.bor(a, b)", 2, 2, CONST, bor),
    b("bit.bxor", "bit.bxor(a, b)", 2, 2, CONST, bxor),
    b("bit.bnot", "bit.bnot(a)", 1, 1, CONST, bnot),
    b("bit.lshift", "bit.lshift(a, n)", 2, 2, CONST, lshift),
    b("bit.rshift", "bit.rshift(a, n)", 2, 2, CONST, rshift),
    b("bit.arshift", "bit.arshift(a, n)", 2, 2, CONST, arshift),
];
