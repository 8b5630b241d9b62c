//! The release link of `manifold` places the functions a gateway runs when it
//! starts and serves (`symbol-order.txt`, written by `scripts/symbol-order`) side
//! by side. Why: the kernel maps code in 64 KiB windows around each page touched,
//! and the ~3 MB of code start-up runs, spread over the 24 MB `.text` in the
//! order the compiler emits it, touched 196 windows (12 MB resident idle); side by
//! side they fill a few. Only with LLD (the default linker of this target since
//! Rust 1.90) and only for release builds; `MANIFOLD_NO_SYMBOL_ORDER=1` turns it
//! off (a linker that is not LLD rejects the flag). A stale file costs memory,
//! never correctness: names the link does not have are skipped.

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=MANIFOLD_NO_SYMBOL_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let lld_target = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    let off = std::env::var_os("MANIFOLD_NO_SYMBOL_ORDER").is_some_and(|v| v != "0");
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
    if release && lld_target && !off && order.is_file() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
