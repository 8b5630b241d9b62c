//! Reading Rust sources as text: every `.rs` file under a folder, the code
//! without comments, string and character literals, or inline `mod … { … }`
//! blocks (unit tests), and the small scanners the checks share.
//!
//! Invariants: pure; a literal's content never looks like code (a `crate::`
//! in a message is not an import).
//!
//! Not here: what the paths mean (`imports`).

use std::path::{Path, PathBuf};

pub(crate) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// The text without `//` comments (doc comments included), `/* */` blocks and
/// the contents of string and character literals.
pub(crate) fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else if let Some(end) = raw_string_end(rest) {
            out.push_str("\"\"");
            rest = &rest[end..];
        } else if rest.starts_with('"') {
            let end = string_end(rest);
            out.push_str("\"\"");
            rest = &rest[end..];
        } else if let Some(end) = char_literal_end(rest) {
            out.push_str("' '");
            rest = &rest[end..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The code without inline `mod name { … }` blocks (unit tests): their
/// `super::` means the file itself, and what tests use is not an import of
/// the code.
pub(crate) fn strip_inline_modules(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(i) = rest.find("mod ") {
        let before = rest[..i].chars().next_back();
        let after = &rest[i + 4..];
        let name = ident_at(after.trim_start());
        let tail = after.trim_start()[name.len()..].trim_start();
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') || !tail.starts_with('{') {
            out.push_str(&rest[..i + 4]);
            rest = after;
            continue;
        }
        out.push_str(&rest[..i]);
        let open = rest.len() - tail.len();
        let end = open + matching_brace(tail);
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// `r"…"`, `r#"…"#` (any number of `#`), `br"…"`: the offset past its end.
fn raw_string_end(s: &str) -> Option<usize> {
    let body = s.strip_prefix("br").or_else(|| s.strip_prefix('r'))?;
    let hashes = body.len() - body.trim_start_matches('#').len();
    let open = body[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = open.find(&close)?;
    Some(s.len() - open.len() + end + close.len())
}

/// The byte offset just past the string literal `s` starts with.
fn string_end(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// A character literal (`'x'`, `'\n'`, `'\''`), not a lifetime.
fn char_literal_end(s: &str) -> Option<usize> {
    let body = s.strip_prefix('\'')?;
    let mut chars = body.char_indices();
    let (_, first) = chars.next()?;
    let after = if first == '\\' {
        let (_, _) = chars.next()?;
        chars.find(|(_, c)| *c == '\'')?.0
    } else {
        let (i, c) = chars.next()?;
        if c != '\'' {
            return None;
        }
        i
    };
    Some(1 + after + 1)
}

pub(crate) fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The length of the brace block `s` starts with (`{` … its `}`).
pub(crate) fn matching_brace(s: &str) -> usize {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
    }
    s.len()
}
