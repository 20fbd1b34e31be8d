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
        // position-independent). Its ~1.4 MB of pointer tables (`.data.rel.ro`, mostly
        // chrono-tz's) then need no relocation at start: clean file pages, not ~360
        // pages written by the loader in every process (start-up about 1 ms less; each
        // FastCGI fork copies fewer page tables). The price: no ASLR for the executable
        // image (libraries, heap and stack stay randomised). Off by default.
        println!("cargo:rerun-if-env-changed=LEASH_NO_PIE");
        if std::env::var_os("LEASH_NO_PIE").is_some_and(|v| v == "1") {
            println!("cargo:rustc-link-arg-bin=leash=-no-pie");
        }
    }
}
