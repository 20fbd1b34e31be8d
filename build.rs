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
    }
}
