//! Architecture tests: a crate declares its top-level modules in layers, top
//! to bottom, and [`check`] reads every source file and reports
//! - each import that points up a layer (`crate::…` into a higher layer);
//! - each cycle between files: no file imports, directly or through others, a
//!   file that imports it (`crate::…`, `super::…`, `self::…` and paths through
//!   a child module all count), so every file has a place in one order.
//!
//! [`chain`] checks a chain of steps kept as one folder: a file (or folder) per
//! step and nothing else beside the chain's own, each function of the chain's
//! `mod.rs` calling the steps it uses in the documented order, every step
//! reached from the chain, and the order written the same in the docs that
//! show it. [`calls`] finds where a call is made (the places an observation is
//! finished), and [`numbers`] the literals that belong in a table (JSON-RPC
//! error codes).
//!
//! What counts as an import: every path in the code — `use` declarations
//! (groups and nested groups included) and inline paths — with comments,
//! string literals and inline `mod … { … }` blocks (tests) left out. A path
//! leads to the deepest module file it names. The crate root (`lib.rs`) is
//! the crate's public face: it declares modules and re-exports, and [`check`]
//! reports any item it defines and any module naming an item through it
//! (`crate::Item`), so every import names the module it depends on.
//!
//! Invariants: pure (reads files, no other I/O), no dependencies; every report
//! names the files and the import, so a failure says what to move.
//!
//! Not here: crate-to-crate direction (Cargo already forbids cycles there).

mod imports;
mod text;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use imports::{cycles, graph, imports, read_sources, root_items};
#[cfg(test)]
use imports::{paths, ModPath};
use text::{ident_at, matching_brace, rust_files, strip_comments, strip_inline_modules};

/// A crate's layers, top first: each entry lists the top-level modules (a file
/// `src/x.rs` or a folder `src/x/`) on that layer.
pub type Layers<'a> = &'a [&'a [&'a str]];

/// Every violation in the crate whose sources are under `src`: upward imports,
/// modules in no layer, file-level cycles, items defined in the crate root and
/// imports through it. Empty means the structure holds.
pub fn check(src: &Path, layers: Layers<'_>) -> Vec<String> {
    let (sources, mut problems) = read_sources(src);
    problems.extend(root_items(&sources));
    let (graph, through_root) = imports(&sources);
    problems.extend(through_root);
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, mods)| mods.iter().map(move |m| (*m, i)))
        .collect();
    for s in &sources {
        let Some(top) = s.module.first() else {
            continue; // lib.rs: the root
        };
        let Some(&mine) = layer_of.get(top.as_str()) else {
            problems.push(format!(
                "{}: module `{top}` is in no layer; add it to the architecture test",
                s.rel.display()
            ));
            continue;
        };
        for target in graph.get(&s.module).into_iter().flatten() {
            let Some(their_top) = target.first() else {
                continue; // an item of the crate root
            };
            let Some(&theirs) = layer_of.get(their_top.as_str()) else {
                continue;
            };
            if theirs < mine {
                problems.push(format!(
                    "{}: imports crate::{}, which is on a higher layer ({} is above {})",
                    s.rel.display(),
                    target.join("::"),
                    layers[theirs].join("/"),
                    layers[mine].join("/")
                ));
            }
        }
    }
    problems.extend(cycles(&graph, &sources));
    problems
}

/// The step chain in folder `src/<dir>`: its `mod.rs` functions call the steps
/// in the order of `steps` (each step a file `<step>.rs` or a folder
/// `<step>/`; besides them the folder holds only `mod.rs` and the files named
/// in `also`); every step is imported by the chain or by a step after it; and
/// each of `docs` (paths from the workspace) writes the order as `arrows`.
pub fn chain(
    src: &Path,
    dir: &str,
    steps: &[&str],
    also: &[&str],
    docs: &[(&Path, &str)],
) -> Vec<String> {
    let mut problems = Vec::new();
    let folder = src.join(dir);
    let mut present = BTreeSet::new();
    for e in std::fs::read_dir(&folder).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let stem = name.strip_suffix(".rs").unwrap_or(&name).to_string();
        if stem == "mod" || also.contains(&stem.as_str()) {
            continue;
        }
        if !steps.contains(&stem.as_str()) {
            problems.push(format!(
                "{dir}/{name}: not a step of the chain ({}); a step is a file of its own, \
                 anything else belongs to one",
                steps.join(", ")
            ));
        }
        present.insert(stem);
    }
    for step in steps {
        if !present.contains(*step) {
            problems.push(format!("{dir}/: no file or folder for the step `{step}`"));
        }
    }
    let (sources, read) = read_sources(src);
    problems.extend(read);
    let chain_mod = vec![dir.to_string()];
    let Some(chain) = sources.iter().find(|s| s.module == chain_mod) else {
        problems.push(format!("{dir}/mod.rs: not found"));
        return problems;
    };
    for (name, body) in functions(&chain.code) {
        let mut last: Option<(usize, &str)> = None;
        for (i, step) in step_calls(body, steps) {
            if let Some((j, before)) = last {
                if i < j {
                    problems.push(format!(
                        "{dir}/mod.rs: fn {name} calls `{step}` after `{before}`; the chain's order is {}",
                        steps.join(" → ")
                    ));
                }
            }
            last = Some((i, step));
        }
    }
    // Every step is reached: from the chain, or from a step (the last ones run
    // inside the relay's answer).
    let graph = graph(&sources);
    let mut reached = BTreeSet::new();
    let mut stack = vec![chain_mod.clone()];
    while let Some(m) = stack.pop() {
        for t in graph.get(&m).into_iter().flatten() {
            if t.first() == Some(&chain_mod[0]) && reached.insert(t.clone()) {
                stack.push(t.clone());
            }
        }
    }
    for step in steps {
        let path = vec![dir.to_string(), step.to_string()];
        if !reached.iter().any(|r| r.starts_with(&path)) {
            problems.push(format!(
                "{dir}/{step}: no part of the chain imports this step"
            ));
        }
    }
    let arrows = steps
        .iter()
        .map(|s| s.replace('_', " "))
        .collect::<Vec<_>>()
        .join(" → ");
    for (doc, label) in docs {
        match std::fs::read_to_string(doc) {
            Ok(text) if text.contains(&arrows) => {}
            Ok(_) => problems.push(format!(
                "{label}: does not show the call chain as the code runs it: `{arrows}`"
            )),
            Err(e) => problems.push(format!("{label}: cannot read: {e}")),
        }
    }
    problems
}

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

/// The `fn`s of `code` with their bodies.
fn functions(code: &str) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut rest = code;
    while let Some(i) = rest.find("fn ") {
        let before = rest[..i].chars().next_back();
        let after = &rest[i + 3..];
        rest = after;
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let name = ident_at(after.trim_start());
        let Some(open) = after.find('{') else { break };
        if after[..open].contains(';') {
            continue; // a declaration without a body
        }
        let body = &after[open..];
        let end = matching_brace(body);
        out.push((name, &body[..end]));
        rest = &body[end..];
    }
    out
}

/// The steps `body` refers to (`<step>::`), in order, with their index.
fn step_calls<'s>(body: &str, steps: &[&'s str]) -> Vec<(usize, &'s str)> {
    let mut found: Vec<(usize, usize, &str)> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let needle = format!("{step}::");
        let mut from = 0;
        while let Some(at) = body[from..].find(&needle) {
            let pos = from + at;
            let before = body[..pos].chars().next_back();
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
                found.push((pos, i, step));
            }
            from = pos + needle.len();
        }
    }
    found.sort();
    found.into_iter().map(|(_, i, s)| (i, s)).collect()
}

#[cfg(test)]
mod tests;
