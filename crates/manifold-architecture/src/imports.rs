//! The import graph of a crate: each file's module path, the paths its code
//! names (`crate::…`, `super::…`, `self::…`, through a child module), the
//! module file each path leads to, and the cycles between files.
//!
//! Invariants: pure; the crate root (`lib.rs`) is no part of the graph (it
//! declares and re-exports; imports of its items are free).
//!
//! Not here: reading the files (`text`), what a check makes of the graph
//! (`lib.rs`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::text::{ident_at, rust_files, strip_comments, strip_inline_modules};

/// A module's path from the crate root (`["call", "relay", "stream"]`).
pub(crate) type ModPath = Vec<String>;

/// One source file: its module path and its code, comments and strings out.
pub(crate) struct Source {
    pub rel: std::path::PathBuf,
    pub module: ModPath,
    pub code: String,
}

/// File modules that hold only tests, left out of the graph.
const TEST_MODULES: [&str; 2] = ["tests", "proptests"];

/// The crate's files with their module paths (test modules left out), and
/// what could not be read.
pub(crate) fn read_sources(src: &Path) -> (Vec<Source>, Vec<String>) {
    let mut sources = Vec::new();
    let mut problems = Vec::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap_or(&file).to_path_buf();
        let Some(module) = module_of(&rel) else {
            continue;
        };
        // Test modules kept in files (`tests.rs`, `proptests.rs`) are left
        // out like inline ones: a test may reach anywhere in its crate.
        if module
            .last()
            .is_some_and(|m| TEST_MODULES.contains(&m.as_str()))
        {
            continue;
        }
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
pub(crate) fn graph(sources: &[Source]) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
    imports(sources).0
}

/// Each file's imports, and the paths a module names through the crate root
/// (`crate::Item`, `super::Item` from a top-level file) as `file: path`: the
/// root is a face, so an item is imported from the module that defines it.
pub(crate) fn imports(sources: &[Source]) -> (BTreeMap<ModPath, BTreeSet<ModPath>>, Vec<String>) {
    let modules: BTreeSet<&ModPath> = sources.iter().map(|s| &s.module).collect();
    let mut edges = BTreeMap::new();
    let mut through_root = Vec::new();
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
            if deepest.is_empty() {
                // The crate root declares and re-exports; a module naming an
                // item through it hides which module it depends on.
                if !path.is_empty() && !s.module.is_empty() {
                    through_root.push(format!(
                        "{}: names crate::{} through the crate root; import it from the module \
                         that defines it (lib.rs holds only the crate's public face)",
                        s.rel.display(),
                        path.join("::")
                    ));
                }
            } else if deepest != s.module {
                targets.insert(deepest);
            }
        }
        if s.module.is_empty() {
            continue;
        }
        edges.insert(s.module.clone(), targets);
    }
    (edges, through_root)
}

/// The items the crate root defines (`fn`, `struct`, `const`, `impl`, …) as
/// `lib.rs:line: keyword`: a root holds only `mod` declarations and `pub use`
/// re-exports, so every item has a module of its own to be imported from.
pub(crate) fn root_items(sources: &[Source]) -> Vec<String> {
    const ITEMS: [&str; 10] = [
        "fn",
        "struct",
        "enum",
        "union",
        "const",
        "static",
        "type",
        "trait",
        "impl",
        "macro_rules",
    ];
    let Some(root) = sources.iter().find(|s| s.module.is_empty()) else {
        return Vec::new();
    };
    if sources.len() == 1 {
        return Vec::new(); // a crate of one file is all root: nothing to face
    }
    let code = root.code.as_str();
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            c if depth == 0
                && (c.is_ascii_alphabetic() || c == b'_')
                && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_')) =>
            {
                let word = ident_at(&code[i..]);
                if ITEMS.contains(&word) {
                    let line = code[..i].matches('\n').count() + 1;
                    out.push(format!(
                        "{}:{line}: defines a `{word}`; the crate root holds only `mod` and `pub use` \
                         (move the item into a module)",
                        root.rel.display()
                    ));
                    // One report per item: skip to the end of its declaration.
                    while i < bytes.len() && bytes[i] != b';' && bytes[i] != b'{' {
                        i += 1;
                    }
                    continue;
                }
                i += word.len().max(1);
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// Every path in `code` (of module `me`, whose child modules are `children`),
/// made absolute.
pub(crate) fn paths(code: &str, me: &ModPath, children: &BTreeSet<String>) -> Vec<ModPath> {
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
pub(crate) fn cycles(
    graph: &BTreeMap<ModPath, BTreeSet<ModPath>>,
    sources: &[Source],
) -> Vec<String> {
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
