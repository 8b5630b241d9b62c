//! A chain of steps kept as one folder ([`chain`]): a file per step, the
//! chain's functions calling them in the documented order, every step reached,
//! and the order written the same in the docs that show it.

use std::collections::BTreeSet;
use std::path::Path;

use crate::imports::{graph, read_sources};
use crate::text::{ident_at, matching_brace};

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
