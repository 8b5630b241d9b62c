//! A crate's layers and [`check`]: imports point down the layers, no file
//! imports one that imports it back, and the crate root is a face only.

use std::collections::BTreeMap;
use std::path::Path;

use crate::imports::{cycles, imports, read_sources, root_items};

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

/// Which top-level modules each top-level module of the crate under `src`
/// imports (itself left out): the graph a crate's [`Layers`] must order.
pub fn dependencies(src: &Path) -> BTreeMap<String, std::collections::BTreeSet<String>> {
    let (sources, _) = read_sources(src);
    let (graph, _) = imports(&sources);
    let mut out: BTreeMap<String, std::collections::BTreeSet<String>> = BTreeMap::new();
    for (from, targets) in &graph {
        let Some(top) = from.first() else { continue };
        let entry = out.entry(top.clone()).or_default();
        for t in targets {
            if let Some(their) = t.first().filter(|t| *t != top) {
                entry.insert(their.clone());
            }
        }
    }
    out
}
