//! The loader: any bytes are a program that loads (and is valid) or a list of load errors,
//! never a panic, within the heap budget.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = data.to_vec();
    leash_fuzz::on_interp_thread(move || {
        let _ = leash_fuzz::load(text, leash_fuzz::TIGHT.memory);
    });
});
