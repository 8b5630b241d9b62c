//! `manifold auth hash-key`: reads an API key on stdin and prints the line for
//! `[[auth.api_keys]] hash`, so the key itself never goes in a file or on a
//! command line (where `ps` and shell history would keep it).
//!
//! Invariants: the key is read from stdin only, up to [`MAX_KEY_BYTES`];
//! surrounding white space (the newline from `echo`) is not part of it; an
//! empty key is refused.

use std::io::Read;
use std::process::ExitCode;

/// The longest key read.
pub const MAX_KEY_BYTES: u64 = 4096;
/// The shortest key accepted: a key is a secret, not a password.
pub const MIN_KEY_CHARS: usize = 16;

pub fn hash_key() -> ExitCode {
    let mut key = String::new();
    if let Err(e) = std::io::stdin()
        .take(MAX_KEY_BYTES + 1)
        .read_to_string(&mut key)
    {
        eprintln!("manifold auth hash-key: cannot read the key from stdin: {e}");
        return ExitCode::from(super::USAGE);
    }
    let trimmed = key.trim();
    if key.len() as u64 > MAX_KEY_BYTES {
        eprintln!("manifold auth hash-key: the key is longer than {MAX_KEY_BYTES} bytes");
        return ExitCode::from(super::USAGE);
    }
    if trimmed.chars().count() < MIN_KEY_CHARS {
        eprintln!(
            "manifold auth hash-key: give a key of at least {MIN_KEY_CHARS} characters on stdin, \
             e.g. `openssl rand -hex 32 | tee key.txt | manifold auth hash-key`"
        );
        return ExitCode::from(super::USAGE);
    }
    println!("{}", manifold_policy::hash_key(trimmed));
    ExitCode::SUCCESS
}
