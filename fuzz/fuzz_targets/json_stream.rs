//! json.read's chunked parser: a text fed in pieces of any sizes parses to what the
//! whole text gives: the same value, or the same error (with its line and column).
//! Input: a limits byte, four chunk-size bytes (1..=64 bytes each, used in turn), the text.
#![no_main]
use std::collections::VecDeque;

use leash::builtins::json::{outcome, parse_until, read_stream, JsonLimits, Pieces};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if data.len() < 5 {
        return;
    }
    let lim = if data[0] & 1 == 0 {
        JsonLimits::default()
    } else {
        JsonLimits { bytes: 256, depth: 5, nodes: 40, heap: usize::MAX }
    };
    let sizes: Vec<usize> = data[1..5].iter().map(|b| 1 + (*b as usize % 64)).collect();
    let text = &data[5..];
    let mut pieces = VecDeque::new();
    let (mut i, mut k) = (0, 0);
    while i < text.len() {
        let n = sizes[k % 4].min(text.len() - i);
        pieces.push_back(text[i..i + n].to_vec());
        i += n;
        k += 1;
    }
    let whole = outcome(parse_until(text, None, lim), Some(text));
    let streamed = outcome(read_stream(&mut Pieces(pieces), None, lim), None);
    assert_eq!(whole, streamed, "pieces of {sizes:?}");
});
