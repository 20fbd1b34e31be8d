//! What unit tests share: inputs made by enumeration and by a fixed pseudo-random
//! sequence (deterministic: a failure names its input and happens again).

/// Every string of `0..=max_len` symbols over `alphabet`, shortest first.
pub fn all_words(alphabet: &[u8], max_len: u32) -> impl Iterator<Item = Vec<u8>> + '_ {
    let n = alphabet.len();
    (0..=max_len).flat_map(move |len| {
        (0..n.pow(len)).map(move |mut c| {
            let mut w = Vec::with_capacity(len as usize);
            for _ in 0..len {
                w.push(alphabet[c % n]);
                c /= n;
            }
            w
        })
    })
}

/// A xorshift64 sequence from `seed` (not 0).
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}
