//! The release link of `manifold` places the functions a gateway runs when it
//! starts and serves (`symbol-order.txt`, written by `scripts/symbol-order`) side
//! by side. Why: the kernel maps code in 64 KiB windows around each page touched,
//! and the ~3 MB of code start-up runs, spread over the 24 MB `.text` in the
//! order the compiler emits it, touched 196 windows (12 MB resident idle); side by
//! side they fill a few.
//!
//! Only for release builds, and only when the linker takes the flag: LLD does (the
//! default of rustup's `x86_64-unknown-linux-gnu` toolchains since Rust 1.90), GNU
//! ld rejects it — distributions' own `rustc` builds and a configured linker may
//! use it — so a one-line program is linked with the flag first, with the same
//! linker and flags, and the flag is passed only if that link succeeds.
//! `MANIFOLD_NO_SYMBOL_ORDER=1` turns it off. A stale file costs memory, never
//! correctness: names the link does not have are skipped.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Whether a program links with `--symbol-ordering-file` on this build's
/// compiler, target, linker and flags.
fn linker_takes_order(order: &Path) -> bool {
    let (Some(rustc), Some(out)) = (std::env::var_os("RUSTC"), std::env::var_os("OUT_DIR")) else {
        return false;
    };
    let out = PathBuf::from(out);
    let mut cmd = Command::new(rustc);
    cmd.args(["--crate-type=bin", "--crate-name=order_probe", "-"])
        .arg("-o")
        .arg(out.join("order-probe"))
        .arg(format!(
            "-Clink-arg=-Wl,--symbol-ordering-file={}",
            order.display()
        ))
        .arg("-Clink-arg=-Wl,--no-warn-symbol-ordering");
    if let Ok(target) = std::env::var("TARGET") {
        cmd.arg(format!("--target={target}"));
    }
    if let Some(linker) = std::env::var_os("RUSTC_LINKER") {
        let mut flag = std::ffi::OsString::from("-Clinker=");
        flag.push(linker);
        cmd.arg(flag);
    }
    if let Ok(flags) = std::env::var("CARGO_ENCODED_RUSTFLAGS") {
        cmd.args(flags.split('\u{1f}').filter(|f| !f.is_empty()));
    }
    let Ok(mut child) = cmd
        .current_dir(&out)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
    else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(b"fn main() {}\n");
    }
    child.wait().is_ok_and(|s| s.success())
}

fn main() {
    println!("cargo:rerun-if-changed=symbol-order.txt");
    println!("cargo:rerun-if-env-changed=MANIFOLD_NO_SYMBOL_ORDER");
    let release = std::env::var("PROFILE").is_ok_and(|p| p == "release");
    let off = std::env::var_os("MANIFOLD_NO_SYMBOL_ORDER").is_some_and(|v| v != "0");
    let order = Path::new(env!("CARGO_MANIFEST_DIR")).join("symbol-order.txt");
    if release && !off && order.is_file() {
        if linker_takes_order(&order) {
            println!(
                "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
                order.display()
            );
            println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
        } else {
            println!(
                "cargo:warning=the linker does not take --symbol-ordering-file (not LLD?): \
                 manifold is linked in the compiler's order (more resident code when idle)"
            );
        }
    }
}
