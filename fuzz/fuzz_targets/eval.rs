//! The evaluator: a generated program (valid Leash most of the time: see src/gen.rs) is
//! loaded and run under tight budgets: no panic, no internal error, no hang past the
//! deadline.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(src) = leash_fuzz::generated(data) else { return };
    leash_fuzz::on_interp_thread(move || {
        let b = leash_fuzz::TIGHT;
        if let Some((prog, heap)) = leash_fuzz::load(src.into_bytes(), b.memory) {
            let _ = leash_fuzz::run(&prog, heap, vec![b"arg1".to_vec(), b"--x=1".to_vec()], &b);
        }
    });
});
