//! `leash`: argv -> `app::main` on a thread with room for deep (but bounded) recursion;
//! a panic anywhere becomes an `internal` diagnostic and exit status 70.

use std::ffi::OsString;

/// Stack of the interpreter thread (see `limits::INTERP_STACK_BYTES`).
const STACK_BYTES: usize = leash::limits::INTERP_STACK_BYTES;

fn main() {
    // The warm process of `leash-cgi --fastcgi` (it refuses unless started by it: see
    // `fastcgi_server::zygote_main`). First, while the process is single-threaded.
    if std::env::args_os().nth(1).is_some_and(|a| a == "--fastcgi-zygote") {
        std::process::exit(leash::fastcgi_server::zygote_main());
    }
    // The run's clock (the meter's): `--max-time`'s deadline counts from here.
    let started = leash::meter::now();
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let (json, stats) = leash::cli::prescan(&args);
    let panic_msg = leash::app::capture_panics();
    let worker = std::thread::Builder::new().stack_size(STACK_BYTES).spawn(move || {
        leash::memory::count_this_thread();
        leash::app::main(args, started)
    });
    let code = match worker.map(|h| h.join()) {
        Ok(Ok(code)) => code,
        _ => {
            let msg =
                panic_msg.lock().ok().and_then(|g| g.clone()).unwrap_or_else(|| "interpreter thread failed".into());
            leash::app::report_internal(&msg, json, stats, started);
            70
        }
    };
    // `--report FILE`: the document is written last, whatever the exit.
    leash::report::finish(code);
    std::process::exit(code);
}
