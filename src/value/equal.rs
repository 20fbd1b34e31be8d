//! Structural equality of values, without native recursion in proportion to depth,
//! with what it touched counted for its work charge. Child of `value`.

use super::*;

/// Structural equality; values of different types are never equal. Tests only: a run's
/// comparisons are charged for what they touch (`equals_counted`).
#[cfg(test)]
pub fn equals(a: &Value, b: &Value) -> bool {
    equals_counted(a, b, &mut EqCount::default())
}

/// What a structural comparison touched, for its work charge: values visited and string
/// bytes compared.
#[derive(Debug, Default, Clone, Copy)]
pub struct EqCount {
    pub items: u64,
    pub bytes: u64,
}

impl EqCount {
    /// The work units this comparison costs.
    pub const fn units(&self) -> u64 {
        crate::limits::scaled(self.items, WORK_EQ_ITEM_X256)
            .saturating_add(crate::limits::scaled(self.bytes, WORK_EQ_BYTE_X256))
    }
}

/// Order two byte strings, with the bytes the comparison touched (the common prefix and
/// the first byte that differs): `<`, `>`, `<=`, `>=` are charged by it (a comparison of
/// two long strings that differ early is cheap, one of two long equal prefixes is not).
/// The prefix is found by comparisons of doubling blocks, so the count costs no more
/// than the comparison.
pub fn cmp_touched(a: &[u8], b: &[u8]) -> (std::cmp::Ordering, usize) {
    let n = a.len().min(b.len());
    // Short strings (a character, a word) byte by byte: through the blocks, a one-byte
    // comparison took a `memcmp` call and the halving's set-up, 80 instructions.
    if n <= SHORT_CMP {
        for i in 0..n {
            if a[i] != b[i] {
                return (a[i].cmp(&b[i]), i + 1);
            }
        }
        return (a.len().cmp(&b.len()), n + 1);
    }
    let (mut lo, mut step) = (0usize, 64usize);
    while lo < n {
        let mut hi = (lo + step).min(n);
        if a[lo..hi] != b[lo..hi] {
            // Halve the block that differs (each half compared with memcmp) down to 64
            // bytes, then look byte by byte.
            while hi - lo > 64 {
                let mid = lo + (hi - lo) / 2;
                if a[lo..mid] == b[lo..mid] {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            let i = lo + a[lo..hi].iter().zip(&b[lo..hi]).position(|(x, y)| x != y).unwrap_or(0);
            return (a[i].cmp(&b[i]), i + 1);
        }
        lo = hi;
        step = step.saturating_mul(2);
    }
    (a.len().cmp(&b.len()), n + 1)
}

/// Strings whose shorter one has at most this many bytes are ordered byte by byte.
const SHORT_CMP: usize = 16;

/// Equality of two byte strings, without a `memcmp` call for the short ones (map keys,
/// words, field names): two overlapping 8-byte or 4-byte loads of each, or three bytes.
#[inline(always)]
pub fn bytes_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n > 16 {
        return a == b;
    }
    if n >= 8 {
        let w = |s: &[u8], i: usize| u64::from_le_bytes(s[i..i + 8].try_into().unwrap_or([0; 8]));
        return w(a, 0) == w(b, 0) && w(a, n - 8) == w(b, n - 8);
    }
    if n >= 4 {
        let w = |s: &[u8], i: usize| u32::from_le_bytes(s[i..i + 4].try_into().unwrap_or([0; 4]));
        return w(a, 0) == w(b, 0) && w(a, n - 4) == w(b, n - 4);
    }
    n == 0 || (a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1])
}

/// Equality of two values that are not both lists, both maps or both strings: one item
/// compared, nothing walked.
#[inline]
pub fn equals_scalar(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Nil, Value::Nil) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::Num(x), Value::Num(y)) => x == y,
        (Value::Handle(x), Value::Handle(y)) => x == y,
        _ => false,
    }
}

/// One container pair being compared by `equals_counted`: the next item to compare.
enum EqFrame<'a> {
    List(&'a [Value], &'a [Value], usize),
    Map(&'a Map, &'a Map, usize),
}

/// `equals`, counting what it touched into `n`. Depth first, left to right, stopping at
/// the first difference (so the counts are those of the plain recursive walk), but with
/// an explicit work stack: a value nested millions deep needs no native stack.
pub fn equals_counted(a: &Value, b: &Value, n: &mut EqCount) -> bool {
    let mut stack: Vec<EqFrame<'_>> = Vec::new();
    let mut cur = Some((a, b));
    loop {
        if let Some((a, b)) = cur.take() {
            n.items += 1;
            match (a, b) {
                (Value::Str(x), Value::Str(y)) => {
                    if x.len() == y.len() {
                        n.bytes += x.len() as u64;
                    }
                    if x != y {
                        return false;
                    }
                }
                (Value::List(x), Value::List(y)) => {
                    if !Rc::ptr_eq(x, y) {
                        if x.len() != y.len() {
                            return false;
                        }
                        if !x.is_empty() {
                            stack.push(EqFrame::List(x.items(), y.items(), 0));
                        }
                    }
                }
                (Value::Map(x), Value::Map(y)) => {
                    if !Map::ptr_eq(x, y) {
                        if x.len() != y.len() {
                            return false;
                        }
                        if !x.is_empty() {
                            stack.push(EqFrame::Map(x, y, 0));
                        }
                    }
                }
                _ => {
                    if !equals_scalar(a, b) {
                        return false;
                    }
                }
            }
        }
        let Some(top) = stack.last_mut() else { return true };
        match top {
            EqFrame::List(xs, ys, i) => {
                if *i < xs.len() {
                    cur = Some((&xs[*i], &ys[*i]));
                    *i += 1;
                } else {
                    stack.pop();
                }
            }
            EqFrame::Map(x, y, i) => {
                if let Some((k, v)) = x.get_index(*i) {
                    n.bytes += k.len() as u64;
                    match y.get(k) {
                        Some(w) => cur = Some((v, w)),
                        None => return false,
                    }
                    *i += 1;
                } else {
                    stack.pop();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{bytes_eq, cmp_touched};

    /// `cmp_touched` against the slice ordering and the first difference found by a
    /// plain walk: short strings (byte by byte) and long ones (by blocks) alike, every
    /// length up to 300 against itself, one byte changed at each place, a prefix and a
    /// longer string.
    #[test]
    fn cmp_touched_orders_and_counts() {
        let reference = |a: &[u8], b: &[u8]| {
            let n = a.len().min(b.len());
            let touched = a.iter().zip(b).position(|(x, y)| x != y).map_or(n + 1, |i| i + 1);
            (a.cmp(b), touched)
        };
        for n in 0..300usize {
            let a: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            assert_eq!(cmp_touched(&a, &a), reference(&a, &a), "length {n}");
            for i in (0..n).step_by(if n > 40 { 7 } else { 1 }) {
                let mut b = a.clone();
                b[i] ^= 0x20;
                assert_eq!(cmp_touched(&a, &b), reference(&a, &b), "length {n}, byte {i}");
                assert_eq!(cmp_touched(&b, &a), reference(&b, &a), "length {n}, byte {i}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert_eq!(cmp_touched(&a, &longer), reference(&a, &longer), "lengths {n} and {}", n + 1);
            assert_eq!(cmp_touched(&longer, &a), reference(&longer, &a), "lengths {} and {n}", n + 1);
        }
    }

    /// `bytes_eq` against the slice comparison: every length up to 40, equal, and
    /// differing in each one byte, and lengths that differ.
    #[test]
    fn bytes_eq_is_slice_equality() {
        for n in 0..40usize {
            let a: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            assert!(bytes_eq(&a, &a.clone()), "length {n}");
            for i in 0..n {
                let mut b = a.clone();
                b[i] ^= 0x20;
                assert!(!bytes_eq(&a, &b), "length {n}, byte {i}");
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!bytes_eq(&a, &longer) && !bytes_eq(&longer, &a), "lengths {n} and {}", n + 1);
        }
    }
}
