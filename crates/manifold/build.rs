//! The release link of `manifold` places the functions a gateway runs when it
//! starts and serves (`symbol-order.txt`, written by `scripts/symbol-order`) side
//! by side. Why: the kernel maps code in 64 KiB windows around each page touched,
//! and the ~3 MB of code start-up runs, spread over the 24 MB `.text` in the
//! order the compiler emits it, touched 196 windows (12 MB resident idle); side by
//! side they fill a few. Only for release builds linked by LLD (the default
//! linker of `x86_64-unknown-linux-gnu` since Rust 1.90; not when `RUSTFLAGS`
//! picks another linker, which would reject the flag); `MANIFOLD_NO_SYMBOL_ORDER=1`
//! turns it off. A stale file costs memory,
//! never correctness: names the link does not have are skipped.

use std::path::Path;

/// The first Rust whose `x86_64-unknown-linux-gnu` links with LLD by default.
const LLD_BY_DEFAULT_SINCE: (u32, u32) = (1, 90);

/// The minor version `rustc --version` reports (`rustc 1.95.0 (…)`), if it says.
fn rustc_version() -> Option<(u32, u32)> {
    let rustc = std::env::var_os("RUSTC")?;
    let out = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let mut parts = text.split_whitespace().nth(1)?.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Whether the link uses LLD: this target, a Rust that defaults to it, and no
/// flag choosing another linker.
fn links_with_lld() -> bool {
    let target = std::env::var("TARGET").is_ok_and(|t| t == "x86_64-unknown-linux-gnu");
    let flags = std::env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    let other_linker =
        flags.contains("linker-features") || flags.contains("fuse-ld") || flags.contains("linker=");
    target && !other_linker && rustc_version().is_some_and(|v| v >= LLD_BY_DEFAULT_SINCE)
}

fn main() {
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=MANIFOLD_NO_SYMBOL_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let off = std::env::var_os("MANIFOLD_NO_SYMBOL_ORDER").is_some_and(|v| v != "0");
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
    if release && !off && order.is_file() && links_with_lld() {
        println!(
            "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
            order.display()
        );
        println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
    }
}
