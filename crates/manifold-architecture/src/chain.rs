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
/// in `also`); every step is called by the chain itself and no step imports
/// another (earlier or later); and
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
    // Every step is reached from the chain itself, and no step imports
    // another (earlier or later): only the chain composes them.
    let graph = graph(&sources);
    let step_of = |m: &Vec<String>| -> Option<&str> {
        (m.len() >= 2 && m[0] == dir)
            .then(|| steps.iter().copied().find(|s| m[1] == *s))
            .flatten()
    };
    let from_chain = graph.get(&chain_mod).cloned().unwrap_or_default();
    for step in steps {
        if !from_chain.iter().any(|t| step_of(t) == Some(*step)) {
            problems.push(format!(
                "{dir}/mod.rs: never calls the step `{step}`; the chain runs every step itself"
            ));
        }
    }
    for (from, targets) in &graph {
        let Some(mine) = step_of(from) else { continue };
        for t in targets {
            if let Some(theirs) = step_of(t).filter(|s| *s != mine) {
                let (i, j) = (
                    steps.iter().position(|s| *s == mine).unwrap_or(0),
                    steps.iter().position(|s| *s == theirs).unwrap_or(0),
                );
                let which = if j > i { "a later" } else { "an earlier" };
                problems.push(format!(
                    "{}: the step `{mine}` imports {which} step, `{theirs}` ({}); steps do not call \
                     each other, the chain (mod.rs) composes them, and what they share is in `{}`",
                    from.join("/"),
                    t.join("::"),
                    also.join("`, `")
                ));
            }
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
