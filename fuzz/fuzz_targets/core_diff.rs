//! The two evaluators against each other (issue 24: the tree evaluator is the compiled
//! core's oracle): a generated program (src/gen.rs, as the `eval` target writes them) is
//! loaded once and run on the tree evaluator and on the compiled core under the same
//! tight budgets, seed and arguments. Both runs keep `run`'s checks (no panic, no
//! internal error, never exit 70, no hang past the deadline), and they must agree on the
//! exit status, the output, the diagnostic (kind, message, file, line and its details)
//! and the steps and work counted. Not compared: a run that ended on the `memory` or
//! `time` limit (the heap each core holds and the time it takes differ by design), and
//! programs that read the clock (`clock`, `date.now`, `sleep`).
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(src) = leash_fuzz::generated(data) else { return };
    let clocked = ["clock(", "date.now", "sleep("].iter().any(|w| src.contains(w));
    leash_fuzz::on_interp_thread(move || {
        let b = leash_fuzz::TIGHT;
        let Some((prog, heap)) = leash_fuzz::load(src.into_bytes(), b.memory) else { return };
        let args = vec![b"arg1".to_vec(), b"--x=1".to_vec()];
        let caps = Default::default();
        let tree = leash_fuzz::run_on(&prog, heap, args.clone(), &b, caps, Some(false));
        let vm = leash_fuzz::run_on(&prog, heap, args, &b, caps, Some(true));
        let timed = |o: &leash::Outcome| o.diag.as_ref().is_some_and(|d| d.kind == "memory" || d.kind == "time");
        if clocked || timed(&tree) || timed(&vm) {
            return;
        }
        let show = |o: &leash::Outcome| {
            format!(
                "status {} steps {} work {}\ndiag {:?}\noutput {:?}",
                o.status,
                o.stats.steps,
                o.stats.work,
                o.diag,
                String::from_utf8_lossy(&o.held)
            )
        };
        let (a, z) = (show(&tree), show(&vm));
        assert!(a == z, "the cores disagree\n-- tree:\n{a}\n-- compiled:\n{z}");
    });
});
