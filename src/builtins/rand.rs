//! `rand`: a seeded generator (xoshiro256** seeded through splitmix64), so that a run
//! with `--seed N` or after `rand.seed(N)` draws the same numbers on every machine.

use super::Host;
use super::{b, Builtin, Cost, CONST};
use crate::diag::ErrKind;
use crate::error::R;
use crate::value::*;

#[derive(Debug, Clone)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl Rng {
    /// Seeded from `seed`, or from the operating system's randomness.
    pub fn new(seed: Option<u32>) -> Self {
        match seed {
            Some(s) => Rng::seeded(s as u64),
            None => {
                use std::hash::{BuildHasher, Hasher};
                let mut h = std::collections::hash_map::RandomState::new().build_hasher();
                h.write_u64(0x5eed);
                Rng::seeded(h.finish())
            }
        }
    }

    pub fn seeded(seed: u64) -> Self {
        let mut x = seed;
        Rng { s: [splitmix(&mut x), splitmix(&mut x), splitmix(&mut x), splitmix(&mut x)] }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn float(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform in 0..n (n > 0), without modulo bias.
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let r = self.next_u64();
            if r < zone {
                return r % n;
            }
        }
    }
}

fn int(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let lo = it.arg_int("rand.int", args, 0, i32::MIN as f64, i32::MAX as f64)?;
    let hi = it.arg_int("rand.int", args, 1, i32::MIN as f64, i32::MAX as f64)?;
    if lo > hi {
        return Err(it.err(ErrKind::Value, format!("rand.int: lower bound {lo} is above upper bound {hi}")));
    }
    let span = (hi - lo) as u64 + 1;
    Ok(Value::Num((lo + it.rng.below(span) as i64) as f64))
}

fn float(it: &mut Host, _: &mut [Value]) -> R<Value> {
    Ok(Value::Num(it.rng.float()))
}

fn seed(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let s = it.arg_int("rand.seed", args, 0, 0.0, u32::MAX as f64)?;
    it.rng = Rng::seeded(s as u64);
    Ok(Value::Nil)
}

fn choice(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let l = it.arg_list("rand.choice", args, 0)?;
    if l.is_empty() {
        return Err(it.err(ErrKind::Value, "rand.choice: the list is empty"));
    }
    let i = it.rng.below(l.len() as u64) as usize;
    Ok(l.items()[i].clone())
}

fn shuffle(it: &mut Host, args: &mut [Value]) -> R<Value> {
    let n = it.arg_list("rand.shuffle", args, 0)?.len();
    it.room(n.saturating_mul(crate::limits::ACCT_SLOT))?;
    let mut items = it.arg_list("rand.shuffle", args, 0)?.items().to_vec();
    for i in (1..items.len()).rev() {
        let j = it.rng.below(i as u64 + 1) as usize;
        items.swap(i, j);
    }
    it.make_list(items)
}

pub const TABLE: &[Builtin] = &[
    b("rand.int", "rand.int(lo, hi)", 2, 2, CONST, int),
    b("rand.float", "rand.float()", 0, 0, CONST, float),
    b("rand.seed", "rand.seed(n)", 1, 1, CONST, seed),
    b("rand.choice", "rand.choice(list)", 1, 1, CONST, choice),
    b("rand.shuffle", "rand.shuffle(list)", 1, 1, Cost::items(6.0), shuffle),
];
