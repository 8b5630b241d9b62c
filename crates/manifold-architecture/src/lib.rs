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
//! leads to the deepest module file it names. The crate root (`lib.rs`)
//! declares and re-exports modules, and may hold items every module shares:
//! it is no part of the graph (imports of its items are free).
//!
//! Invariants: pure (reads files, no other I/O), no dependencies; every report
//! names the files and the import, so a failure says what to move.
//!
//! Not here: crate-to-crate direction (Cargo already forbids cycles there).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A crate's layers, top first: each entry lists the top-level modules (a file
/// `src/x.rs` or a folder `src/x/`) on that layer.
pub type Layers<'a> = &'a [&'a [&'a str]];

/// A module's path from the crate root (`["call", "relay", "stream"]`).
type ModPath = Vec<String>;

/// One source file: its module path and its code, comments and strings out.
struct Source {
    rel: PathBuf,
    module: ModPath,
    code: String,
}

/// Every violation in the crate whose sources are under `src`: upward imports,
/// modules in no layer, and file-level cycles. Empty means the structure holds.
pub fn check(src: &Path, layers: Layers<'_>) -> Vec<String> {
    let (sources, mut problems) = read_sources(src);
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(i, mods)| mods.iter().map(move |m| (*m, i)))
        .collect();
    let graph = graph(&sources);
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

/// The crate's files with their module paths, and what could not be read.
fn read_sources(src: &Path) -> (Vec<Source>, Vec<String>) {
    let mut sources = Vec::new();
    let mut problems = Vec::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap_or(&file).to_path_buf();
        let Some(module) = module_of(&rel) else {
            continue;
        };
        match std::fs::read_to_string(&file) {
            Ok(text) => sources.push(Source {
                rel,
                module,
                code: strip_inline_modules(&strip_comments(&text)),
            }),
            Err(e) => problems.push(format!("{}: cannot read: {e}", rel.display())),
        }
    }
    (sources, problems)
}

/// `call/relay/stream.rs` → `call::relay::stream`; `call/mod.rs` → `call`;
/// `lib.rs` → the root; `main.rs` and anything not Rust → none.
fn module_of(rel: &Path) -> Option<ModPath> {
    let mut parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let last = parts.pop()?;
    let stem = last.strip_suffix(".rs")?;
    match stem {
        "lib" if parts.is_empty() => Some(Vec::new()),
        "main" if parts.is_empty() => None,
        "mod" => Some(parts),
        _ => {
            parts.push(stem.to_string());
            Some(parts)
        }
    }
}

/// Each file's imports: the module files its paths lead to (itself left out).
fn graph(sources: &[Source]) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    let modules: BTreeSet<&ModPath> = sources.iter().map(|s| &s.module).collect();
    let mut edges = BTreeMap::new();
    for s in sources {
        let children: BTreeSet<String> = modules
            .iter()
            .filter(|m| m.len() == s.module.len() + 1 && m.starts_with(&s.module))
            .filter_map(|m| m.last().cloned())
            .collect();
        let mut targets = BTreeSet::new();
        for path in paths(&s.code, &s.module, &children) {
            let mut deepest = Vec::new();
            for (i, _) in path.iter().enumerate() {
                let prefix = path[..=i].to_vec();
                if modules.contains(&prefix) {
                    deepest = prefix;
                }
            }
            // The crate root declares and re-exports: not part of the graph.
            if deepest != s.module && !deepest.is_empty() {
                targets.insert(deepest);
            }
        }
        if s.module.is_empty() {
            continue;
        }
        edges.insert(s.module.clone(), targets);
    }
    edges
}

/// Every path in `code` (of module `me`, whose child modules are `children`),
/// made absolute.
fn paths(code: &str, me: &ModPath, children: &BTreeSet<String>) -> Vec<ModPath> {
    let mut out = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0
            || !(bytes[i - 1].is_ascii_alphanumeric()
                || bytes[i - 1] == b'_'
                || bytes[i - 1] == b':');
        if !boundary || !(bytes[i].is_ascii_alphabetic() || bytes[i] == b'_') {
            i += 1;
            continue;
        }
        let word = ident_at(&code[i..]);
        let after = &code[i + word.len()..];
        if !after.starts_with("::") {
            i += word.len().max(1);
            continue;
        }
        let base: Option<ModPath> = match word {
            "crate" => Some(Vec::new()),
            "self" => Some(me.clone()),
            "super" => Some(me[..me.len().saturating_sub(1)].to_vec()),
            w if children.contains(w) => {
                let mut p = me.clone();
                p.push(w.to_string());
                Some(p)
            }
            _ => None,
        };
        let Some(mut base) = base else {
            i += word.len();
            continue;
        };
        let mut rest = &after[2..];
        // `super::super::…`
        while let Some(r) = rest.strip_prefix("super::") {
            base.pop();
            rest = r;
        }
        use_tree(rest, base, &mut out);
        i += word.len();
    }
    out
}

/// The paths of a use tree starting at `s` (after a `::`), under `prefix`.
fn use_tree(s: &str, prefix: ModPath, out: &mut Vec<ModPath>) -> usize {
    let mut prefix = prefix;
    let mut at = 0;
    loop {
        let rest = &s[at..];
        let trimmed = rest.trim_start();
        at += rest.len() - trimmed.len();
        if let Some(group) = trimmed.strip_prefix('{') {
            at += 1;
            let mut inner = group;
            loop {
                let used = use_tree(inner, prefix.clone(), out);
                at += used;
                inner = &inner[used..];
                let t = inner.trim_start();
                at += inner.len() - t.len();
                if let Some(r) = t.strip_prefix(',') {
                    at += 1;
                    inner = r;
                    if inner.trim_start().starts_with('}') {
                        let t2 = inner.trim_start();
                        at += inner.len() - t2.len() + 1;
                        return at;
                    }
                } else {
                    if t.starts_with('}') {
                        at += 1;
                    }
                    return at;
                }
            }
        }
        let word = ident_at(trimmed);
        if word.is_empty() || word == "self" {
            out.push(prefix);
            return at + word.len();
        }
        at += word.len();
        prefix.push(word.to_string());
        if s[at..].starts_with("::") {
            at += 2;
            continue;
        }
        out.push(prefix);
        return at;
    }
}

/// Each cycle of the file graph, once, as its files.
fn cycles(graph: &BTreeMap<ModPath, BTreeSet<ModPath>>, sources: &[Source]) -> Vec<String> {
    let file_of: BTreeMap<&ModPath, &Path> = sources
        .iter()
        .map(|s| (&s.module, s.rel.as_path()))
        .collect();
    let name = |m: &ModPath| {
        file_of
            .get(m)
            .map_or_else(|| m.join("::"), |p| p.display().to_string())
    };
    // Strongly connected components (Tarjan), each with more than one file.
    let nodes: Vec<&ModPath> = graph.keys().collect();
    let index_of: BTreeMap<&ModPath, usize> =
        nodes.iter().enumerate().map(|(i, m)| (*m, i)).collect();
    let mut state = Tarjan {
        index: vec![None; nodes.len()],
        low: vec![0; nodes.len()],
        on_stack: vec![false; nodes.len()],
        stack: Vec::new(),
        next: 0,
        components: Vec::new(),
    };
    let succ = |i: usize| -> Vec<usize> {
        graph[nodes[i]]
            .iter()
            .filter_map(|t| index_of.get(t).copied())
            .collect()
    };
    for v in 0..nodes.len() {
        if state.index[v].is_none() {
            state.visit(v, &succ);
        }
    }
    let mut out = Vec::new();
    for comp in state.components.into_iter().filter(|c| c.len() > 1) {
        let mut files: Vec<String> = comp.iter().map(|&i| name(nodes[i])).collect();
        files.sort();
        // One import of each file into another of the cycle, to say what to move.
        let members: BTreeSet<usize> = comp.iter().copied().collect();
        let edges: Vec<String> = comp
            .iter()
            .flat_map(|&i| {
                succ(i)
                    .into_iter()
                    .filter(|j| members.contains(j))
                    .map(move |j| (i, j))
            })
            .map(|(i, j)| format!("{} imports {}", name(nodes[i]), name(nodes[j])))
            .collect();
        out.push(format!(
            "files import each other in a cycle: {} ({})",
            files.join(", "),
            edges.join("; ")
        ));
    }
    out
}

struct Tarjan {
    index: Vec<Option<usize>>,
    low: Vec<usize>,
    on_stack: Vec<bool>,
    stack: Vec<usize>,
    next: usize,
    components: Vec<Vec<usize>>,
}

impl Tarjan {
    fn visit(&mut self, v: usize, succ: &dyn Fn(usize) -> Vec<usize>) {
        self.index[v] = Some(self.next);
        self.low[v] = self.next;
        self.next += 1;
        self.stack.push(v);
        self.on_stack[v] = true;
        for w in succ(v) {
            match self.index[w] {
                None => {
                    self.visit(w, succ);
                    self.low[v] = self.low[v].min(self.low[w]);
                }
                Some(iw) if self.on_stack[w] => self.low[v] = self.low[v].min(iw),
                Some(_) => {}
            }
        }
        if Some(self.low[v]) == self.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = self.stack.pop() {
                self.on_stack[w] = false;
                comp.push(w);
                if w == v {
                    break;
                }
            }
            self.components.push(comp);
        }
    }
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

/// The length of the brace block `s` starts with (`{` … its `}`).
fn matching_brace(s: &str) -> usize {
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

/// The text without `//` comments (doc comments included), `/* */` blocks and
/// the contents of string and character literals.
fn strip_comments(text: &str) -> String {
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
fn strip_inline_modules(code: &str) -> String {
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

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

#[cfg(test)]
mod tests;
