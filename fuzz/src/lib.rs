//! What the fuzz targets share: the interpreter thread, loading and running a program
//! under tight budgets, and the properties every run must keep.
//!
//! The counting allocator (`leash-alloc`) is the global allocator here too: it comes with
//! the `leash` library, as in the binaries, so the heap checks of `--max-memory` see
//! what they see in a real run. Each run gets its own heap budget (`Budget::start`).

#![forbid(unsafe_code)]

pub mod gen;

/// The program the generator (`gen.rs`) writes from fuzz input `data` (None when the
/// input runs out first), printed to stderr when `LEASH_FUZZ_PRINT` is set (to see what
/// a crash ran): the `eval` target's input.
pub fn generated(data: &[u8]) -> Option<String> {
    let mut u = arbitrary::Unstructured::new(data);
    let src = gen::program(&mut u).ok()?;
    if std::env::var_os("LEASH_FUZZ_PRINT").is_some() {
        eprintln!("----\n{src}----");
    }
    Some(src)
}

use std::sync::mpsc;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use leash::interp::RunConfig;
use leash::program::{Caps, Program};

/// The budgets of a fuzzed run: small, so that a run takes milliseconds.
#[derive(Debug, Clone, Copy)]
pub struct Budgets {
    pub steps: u64,
    pub work: u64,
    pub time: Duration,
    pub memory: u64,
}

pub const TIGHT: Budgets =
    Budgets { steps: 20_000, work: 200_000_000, time: Duration::from_millis(1000), memory: 32 * 1024 * 1024 };

/// How far past its deadline a run may end before it counts as a hang. Generous (the
/// machine is shared, and a scheduler delay is not a bug); libFuzzer's `-timeout`
/// catches a real hang.
pub const OVERSHOOT: Duration = Duration::from_millis(2000);

type Job = Box<dyn FnOnce() + Send>;

/// Run `f` on the interpreter thread: one thread for the whole campaign, with the stack
/// the `leash` binary gives its interpreter (`limits::INTERP_STACK_BYTES`), counted by
/// the allocator as the script's thread (as `src/main.rs` does). A panic there aborts
/// the process (libFuzzer's panic hook), which is what a fuzzer wants.
pub fn on_interp_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    static TX: OnceLock<Mutex<mpsc::Sender<Job>>> = OnceLock::new();
    let tx = TX.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("interp".into())
            .stack_size(leash::limits::INTERP_STACK_BYTES)
            .spawn(move || {
                leash::memory::count_this_thread();
                while let Ok(job) = rx.recv() {
                    job();
                }
            })
            .expect("spawn the interpreter thread");
        Mutex::new(tx)
    });
    let (rtx, rrx) = mpsc::channel();
    let job: Job = Box::new(move || {
        let _ = rtx.send(f());
    });
    tx.lock().unwrap().send(job).expect("interpreter thread gone");
    rrx.recv().expect("interpreter thread died")
}

/// Load `text` as a program named `fuzz.lsh` (no file: includes resolve beneath the
/// working directory) under a heap budget of `memory` bytes. Load errors are an answer,
/// not a failure; each must be well formed.
pub fn load(text: Vec<u8>, memory: u64) -> Option<(Program, leash::memory::Budget)> {
    let budget = leash::memory::Budget::start(memory);
    match leash::load_within("fuzz.lsh", text, None, &Default::default(), budget) {
        Ok(p) => Some((p, budget)),
        Err(ds) => {
            assert!(!ds.is_empty(), "a failed load with no diagnostic");
            for d in &ds {
                assert_ne!(d.kind, "internal", "internal load error: {d:?}");
            }
            None
        }
    }
}

/// Run a loaded program under `b`, with script arguments `args`, output held (as in CGI
/// mode, so nothing reaches the fuzzer's stdout). Checks: no internal error, an exit
/// status from the documented set, no overshoot of the deadline.
pub fn run(prog: &Program, heap: leash::memory::Budget, args: Vec<Vec<u8>>, b: &Budgets) -> leash::Outcome {
    run_with(prog, heap, args, b, Caps::default())
}

/// `run` with capabilities granted (unscoped: the `db` target's `--allow-db` for
/// `:memory:` databases).
pub fn run_with(
    prog: &Program,
    heap: leash::memory::Budget,
    args: Vec<Vec<u8>>,
    b: &Budgets,
    caps: Caps,
) -> leash::Outcome {
    no_growth();
    let started = Instant::now();
    let cfg = RunConfig {
        max_steps: b.steps,
        max_work: b.work,
        deadline: Some(started + b.time),
        max_memory: b.memory,
        seed: Some(12345),
        args,
        cgi: true,
        heap: Some(heap),
        caps,
        ..Default::default()
    };
    let out = leash::run(prog, &cfg);
    let took = started.elapsed();
    assert!(took <= b.time + OVERSHOOT, "the run took {took:?}, past its deadline of {:?}", b.time);
    assert_ne!(out.status, 70, "exit status 70");
    if let Some(d) = &out.diag {
        assert_ne!(d.kind, "internal", "internal error: {d:?}");
        match out.status {
            1 | 4 => {}
            s => panic!("status {s} with diagnostic {d:?}"),
        }
    }
    out
}

/// How much more heap than at the first run the process may hold when a run starts: the
/// runs' own heap is freed when they end, so growth past this is a leak from run to run
/// (counted by `leash-alloc`: Rust allocations only, not libFuzzer's own).
pub const GROWTH: usize = 64 * 1024 * 1024;

fn no_growth() {
    static FIRST: OnceLock<usize> = OnceLock::new();
    let now = leash::memory::live();
    let first = *FIRST.get_or_init(|| now);
    assert!(now <= first + GROWTH, "the heap grew from {first} to {now} bytes across runs");
}

/// Load `src` (which must load) once per process and keep it: the parser targets run a
/// fixed driver script with the fuzzed data as its argument.
pub fn driver(src: &'static str) -> &'static Program {
    thread_local! {
        static CACHE: std::cell::RefCell<Vec<(usize, &'static Program)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let key = src.as_ptr() as usize;
    CACHE.with(|c| {
        if let Some((_, p)) = c.borrow().iter().find(|(k, _)| *k == key) {
            return *p;
        }
        let p: &'static Program = match leash::load("driver.lsh", src.as_bytes().to_vec(), None) {
            Ok(p) => Box::leak(Box::new(p)),
            Err(ds) => panic!("the driver script does not load: {ds:?}"),
        };
        c.borrow_mut().push((key, p));
        p
    })
}

/// Run the driver `src` with `args` on the interpreter thread. A driver signals a broken
/// property with `exit(99)` (after printing what it found, held in the outcome).
pub fn run_driver(src: &'static str, args: Vec<Vec<u8>>) -> leash::Outcome {
    run_driver_with(src, args, Caps::default())
}

/// `run_driver` with capabilities granted.
pub fn run_driver_with(src: &'static str, args: Vec<Vec<u8>>, caps: Caps) -> leash::Outcome {
    on_interp_thread(move || {
        let prog = driver(src);
        let heap = leash::memory::Budget::start(TIGHT.memory);
        let out = run_with(prog, heap, args, &TIGHT, caps);
        if std::env::var_os("LEASH_FUZZ_PRINT").is_some() {
            eprintln!(
                "status {}, diagnostic {:?}, output {:?}",
                out.status,
                out.diag,
                String::from_utf8_lossy(&out.held)
            );
        }
        if out.status == 99 {
            panic!("property broken: {}", String::from_utf8_lossy(&out.held));
        }
        out
    })
}
