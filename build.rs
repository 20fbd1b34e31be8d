//! Link the start-up path first (see scripts/link-order.py): on Linux, pass
//! link/startup.ld to the linker, which places the functions a minimal run executes at the
//! start of the text so that start-up touches few pages.

fn main() {
    let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("link").join("startup.ld");
    println!("cargo:rerun-if-changed=link/startup.ld");
    println!("cargo:rerun-if-changed=build.rs");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").map(|o| o == "linux").unwrap_or(false);
    if linux {
        // Pack the executable's relative relocations (about 13,000, mostly pointers in
        // static tables) in the compact RELR form: the loader reads a few KB instead of
        // ~300 KB of relocation entries at start-up. glibc 2.36+ applies them; the
        // executable stays position-independent (ASLR).
        println!("cargo:rustc-link-arg-bin=leash=-Wl,-z,pack-relative-relocs");
    }
    if linux && script.exists() {
        println!("cargo:rustc-link-arg-bin=leash=-Wl,-T,{}", script.display());
    }
}
