//! `manifold audit verify PATH...`: check the hash chain of audit log files
//! offline (see `manifold_audit::verify`).
//!
//! One path: that log and its rotated siblings (`PATH.N` … `PATH.1`, then `PATH`),
//! oldest first, so a rotation boundary is checked too; the output says when more
//! than one file was found. Several paths: exactly those files, in the order given.
//!
//! Exit codes: 0 the chain is intact, 1 a problem was found (the report names
//! `file:line`), 2 a file cannot be read.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::{FAILED, USAGE};

pub fn verify(paths: &[PathBuf]) -> ExitCode {
    let mut out = String::new();
    let files = match paths {
        [one] => match manifold_audit::log_files(one) {
            Ok(files) => {
                if files.len() > 1 {
                    out.push_str(&format!(
                        "Verifying {} with its rotated files, oldest first: {}\n",
                        one.display(),
                        files
                            .iter()
                            .map(|f| f.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
                files
            }
            Err(e) => {
                eprintln!("manifold: {e}");
                return ExitCode::from(USAGE);
            }
        },
        many => many.to_vec(),
    };
    let report = match manifold_audit::verify(&files) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("manifold: {e}");
            return ExitCode::from(USAGE);
        }
    };
    out.push_str(&report.to_string());
    out.push('\n');
    let _ = std::io::stdout().lock().write_all(out.as_bytes());
    if report.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(FAILED)
    }
}
