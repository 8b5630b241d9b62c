//! Architecture tests: a crate declares its modules in layers, top to bottom, and
//! [`check`] reads every source file and reports each `crate::…` import that
//! points up a layer, and each cycle between modules of one layer.
//!
//! What counts as an import: every `crate::name` path in the code (in `use`
//! declarations, groups `crate::{a, b::c}` included, and inline paths), comments
//! stripped. A `name` that is not a declared module (an item of the crate root, such
//! as a shared error type) may be used from anywhere. `lib.rs` declares the modules
//! and re-exports them, so it is not checked.
//!
//! Invariants: pure (reads files, no other I/O); the report names the file, the
//! import and both layers, so a failure says what to move.
//!
//! Not here: crate-to-crate direction (Cargo already forbids cycles there).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's layers, top first: each entry lists the top-level modules (a file
/// `src/x.rs` or a folder `src/x/`) on that layer.
pub type Layers<'a> = &'a [&'a [&'a str]];

/// Every violation in the crate whose sources are under `src`, or the list of
/// files that could not be placed. Empty means the structure holds.
pub fn check(src: &Path, layers: Layers<'_>) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, mods)| mods.iter().map(move |m| (*m, i)))
        .collect();
    let mut problems = Vec::new();
    // Same-layer imports between different modules, for the cycle check.
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap_or(&file);
        let Some(module) = top_module(rel) else {
            continue; // lib.rs: the root
        };
        let Some(&mine) = layer_of.get(module.as_str()) else {
            problems.push(format!(
                "{}: module `{module}` is in no layer; add it to the architecture test",
                rel.display()
            ));
            continue;
        };
        let text = match std::fs::read_to_string(&file) {
            Ok(t) => t,
            Err(e) => {
                problems.push(format!("{}: cannot read: {e}", rel.display()));
                continue;
            }
        };
        for target in crate_imports(&strip_comments(&text)) {
            let Some((&name, &theirs)) = layer_of.get_key_value(target.as_str()) else {
                continue; // an item of the crate root
            };
            if name == module {
                continue;
            }
            if theirs < mine {
                problems.push(format!(
                    "{}: imports crate::{name}, which is on a higher layer ({} is above {})",
                    rel.display(),
                    layers[theirs].join("/"),
                    layers[mine].join("/")
                ));
            } else if theirs == mine {
                let from = layers[mine]
                    .iter()
                    .find(|m| **m == module)
                    .copied()
                    .unwrap_or("");
                edges.entry(from).or_default().insert(name);
            }
        }
    }
    problems.extend(cycles(&edges));
    problems
}

/// `transport/http.rs` → `transport`; `router.rs` → `router`; `lib.rs` → none.
fn top_module(rel: &Path) -> Option<String> {
    let mut parts = rel.components();
    let first = parts.next()?.as_os_str().to_string_lossy().into_owned();
    if parts.next().is_some() {
        return Some(first);
    }
    let stem = first.strip_suffix(".rs")?;
    (stem != "lib" && stem != "main").then(|| stem.to_string())
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
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

/// The text without `//` comments (doc comments included) and `/* */` blocks.
fn strip_comments(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("//") {
            rest = after.find('\n').map_or("", |i| &after[i..]);
        } else if let Some(after) = rest.strip_prefix("/*") {
            rest = after.find("*/").map_or("", |i| &after[i + 2..]);
        } else if rest.starts_with('"') {
            // Skip string literals: a `crate::` inside a message is not an import.
            let end = string_end(rest);
            out.push_str("\"\"");
            rest = &rest[end..];
        } else {
            let c = rest.chars().next().unwrap_or(' ');
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
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

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment after every `crate::` (each member of a group).
fn crate_imports(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("crate::") {
        let before = rest[..i].chars().next_back();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue; // e.g. `my_crate::`
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0usize;
            let mut start = 0usize;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        push_member(&group[start..j], &mut out);
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        push_member(&group[start..j], &mut out);
                        start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            let name = ident_at(rest);
            if !name.is_empty() {
                out.push(name.to_string());
            }
        }
    }
    out
}

fn push_member(member: &str, out: &mut Vec<String>) {
    let name = ident_at(member.trim());
    if !name.is_empty() && name != "self" {
        out.push(name.to_string());
    }
}

/// Each cycle among same-layer imports, once.
fn cycles(edges: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<String> {
    let mut found = BTreeSet::new();
    for &start in edges.keys() {
        let mut path = vec![start];
        walk(start, start, edges, &mut path, &mut found);
    }
    found
        .into_iter()
        .map(|c: Vec<&str>| {
            format!(
                "modules on one layer import each other in a cycle: {}",
                c.join(" → ")
            )
        })
        .collect()
}

fn walk<'a>(
    start: &'a str,
    at: &'a str,
    edges: &BTreeMap<&'a str, BTreeSet<&'a str>>,
    path: &mut Vec<&'a str>,
    found: &mut BTreeSet<Vec<&'a str>>,
) {
    for &next in edges.get(at).into_iter().flatten() {
        if next == start {
            // Canonical form: rotated to start at its smallest name.
            let min = path
                .iter()
                .enumerate()
                .min_by_key(|(_, m)| **m)
                .map_or(0, |(i, _)| i);
            let mut cycle: Vec<&str> = path[min..].iter().chain(&path[..min]).copied().collect();
            cycle.push(cycle[0]);
            found.insert(cycle);
        } else if !path.contains(&next) {
            path.push(next);
            walk(start, next, edges, path, found);
            path.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imports_are_found_in_uses_groups_and_paths_but_not_comments_or_strings() {
        let code = strip_comments(
            r#"
            use crate::a::X;
            use crate::{b, c::{D, E}, self};
            // use crate::commented;
            /// [`crate::doc`]
            fn f() { crate::d::g(); let s = "crate::in_string"; my_crate::e(); }
            "#,
        );
        assert_eq!(crate_imports(&code), ["a", "b", "c", "d"]);
    }

    #[test]
    fn upward_imports_and_same_layer_cycles_are_reported() {
        let dir = std::env::temp_dir().join(format!("arch-check-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("low")).unwrap();
        let write = |p: &str, t: &str| std::fs::write(dir.join(p), t).unwrap();
        write(
            "lib.rs",
            "mod top; mod mid_a; mod mid_b; mod low; use crate::top::X;",
        );
        write("top.rs", "use crate::low::Y; use crate::Shared;");
        write("mid_a.rs", "use crate::mid_b::Z;");
        write("mid_b.rs", "use crate::mid_a::W;");
        write("low/mod.rs", "mod inner;");
        write("low/inner.rs", "use crate::top::X; use super::Q;");
        let layers: Layers = &[&["top"], &["mid_a", "mid_b"], &["low"]];
        let problems = check(&dir, layers);
        assert_eq!(problems.len(), 2, "{problems:#?}");
        assert!(
            problems[0].contains("low/inner.rs: imports crate::top"),
            "{problems:#?}"
        );
        assert!(
            problems[1].contains("mid_a → mid_b → mid_a"),
            "{problems:#?}"
        );
        write("extra.rs", "");
        assert!(check(&dir, layers)
            .iter()
            .any(|p| p.contains("`extra` is in no layer")));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
