//! [`trunc_i64`]: a float's integer part in one machine instruction, for the
//! interpreter's conversions of numbers to integers (a list's index, `%`'s and `//`'s
//! integer path), each of which checks the result converts back to the number.
//!
//! Why it is here: Rust's `as` saturates (NaN to 0, past the range to the nearest end),
//! which on x86-64 costs five instructions after the conversion (two compares, two
//! conditional moves and a constant), on every list index. The processor's own
//! conversion (`cvttsd2si`, SSE2, part of every x86-64 processor) gives
//! `i64::MIN` for NaN and for anything out of range instead, which a caller that checks
//! `trunc_i64(x) as f64 == x` rejects just as well: `i64::MIN as f64` is -2^63, equal
//! only to the number -2^63, whose integer part `i64::MIN` is. Safe Rust cannot call
//! the intrinsic (it is marked with its target feature), so it lives in the one crate
//! of the project allowed unsafe code.

/// The integer part of `x` (truncated toward zero) when it is in `i64`'s range; for
/// NaN and numbers out of range, `i64::MIN`.
#[inline(always)]
pub fn trunc_i64(x: f64) -> i64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: SSE2 is part of the x86-64 baseline, always available; both
        // intrinsics only compute on registers (no memory, no other precondition).
        unsafe { std::arch::x86_64::_mm_cvttsd_si64(std::arch::x86_64::_mm_set_sd(x)) }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        // -2^63 <= x < 2^63: in range (NaN fails both compares).
        if x >= -9_223_372_036_854_775_808.0 && x < 9_223_372_036_854_775_808.0 {
            x as i64
        } else {
            i64::MIN
        }
    }
}
