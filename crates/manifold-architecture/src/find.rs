//! Where a call is made ([`calls`]: the places an observation is finished)
//! and the literals that belong in a table ([`numbers`]: JSON-RPC error codes).

use std::path::Path;

use crate::text::{rust_files, strip_comments, strip_inline_modules};

/// Where `needle` (e.g. `.finish(`) is called in code under `src`, comments and
/// strings left out: `file:line` each.
pub fn calls(src: &Path, needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for file in rust_files(src) {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let code = strip_comments(&text);
        let rel = file.strip_prefix(src).unwrap_or(&file);
        for (n, line) in code.lines().enumerate() {
            if line.contains(needle) {
                out.push(format!("{}:{}", rel.display(), n + 1));
            }
        }
    }
    out
}

/// Literals that look like JSON-RPC error numbers (`-32xxx`) in code under
/// `src`, outside the files of `tables` and out of tests: `file:line: text`
/// each.
pub fn numbers(src: &Path, tables: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap_or(&file);
        let rel_text = rel.to_string_lossy().replace('\\', "/");
        if tables.contains(&rel_text.as_str()) || rel_text.ends_with("tests.rs") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let code = strip_inline_modules(&strip_comments(&text));
        for (n, line) in code.lines().enumerate() {
            let bytes = line.as_bytes();
            let found = (0..bytes.len().saturating_sub(5)).any(|i| {
                bytes[i] == b'-'
                    && &bytes[i + 1..i + 3] == b"32"
                    && bytes[i + 3..i + 6].iter().all(u8::is_ascii_digit)
                    && bytes.get(i + 6).is_none_or(|b| !b.is_ascii_digit())
            });
            if found {
                out.push(format!("{rel_text}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    out
}
