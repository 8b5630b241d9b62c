//! What fingerprinting costs per catalogue change: [`decide`] over one
//! upstream publishing 1,000 tools of about 1 KiB each, at first sight
//! (everything pinned), unchanged (everything approved) and all changed
//! (a diff each). Run it optimized, as the gateway runs:
//! `cargo run --release -p manifold-integrity --example decide_cost`.
//!
//! Not a test: numbers depend on the machine; they go in docs/benchmarks.md.

use manifold_catalog::UpstreamLists;
use manifold_config::integrity::NewTools;
use manifold_integrity::{decide, PinStore, Rules};
use serde_json::{json, Map, Value};
use std::time::{Duration, Instant, SystemTime};

/// Tools in the catalogue measured.
const TOOLS: usize = 1000;
/// Runs of each measurement; the median is printed.
const RUNS: usize = 21;

fn tool(i: usize, version: &str) -> Map<String, Value> {
    let v = json!({
        "name": format!("tool_{i:04}"),
        "title": format!("Tool {i}"),
        "description": format!("Does thing number {i} to a repository. {version} \
            Use it when the user asks for thing {i}; it needs the owner and the repository."),
        "inputSchema": {"type": "object", "properties": {
            "owner": {"type": "string", "description": "The account that owns the repository."},
            "repo": {"type": "string", "description": "The repository's name."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 30},
            "labels": {"type": "array", "items": {"type": "string"}},
            "state": {"type": "string", "enum": ["open", "closed", "all"]}},
            "required": ["owner", "repo"], "additionalProperties": false},
        "annotations": {"readOnlyHint": true, "openWorldHint": true},
        "_meta": {"build": 7}
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object"),
    }
}

fn lists(version: &str) -> UpstreamLists {
    UpstreamLists {
        tools: (0..TOOLS).map(|i| tool(i, version)).collect(),
        ..Default::default()
    }
}

fn median(mut f: impl FnMut() -> Duration) -> Duration {
    let mut times: Vec<Duration> = (0..RUNS).map(|_| f()).collect();
    times.sort();
    times[RUNS / 2]
}

fn main() {
    let rules = Rules {
        new_tools: NewTools::Allow,
        trust_on_first_use: true,
    };
    let now = SystemTime::now();
    let v1 = lists("v1");
    let v2 = lists("v2");
    let bytes = serde_json::to_vec(&v1.tools).map(|b| b.len()).unwrap_or(0);
    let first = median(|| {
        let t = Instant::now();
        let d = decide(&PinStore::new(), "gh", &v1, &rules, now);
        std::hint::black_box(d);
        t.elapsed()
    });
    let mut store = PinStore::new();
    store.apply(&decide(&store, "gh", &v1, &rules, now).update);
    let unchanged = median(|| {
        let t = Instant::now();
        std::hint::black_box(decide(&store, "gh", &v1, &rules, now));
        t.elapsed()
    });
    let changed = median(|| {
        let t = Instant::now();
        std::hint::black_box(decide(&store, "gh", &v2, &rules, now));
        t.elapsed()
    });
    println!("{TOOLS} tools, {bytes} bytes of definitions; median of {RUNS} runs:");
    println!("  first sight (all pinned):  {first:?}");
    println!("  unchanged (all approved):  {unchanged:?}");
    println!("  all changed (a diff each): {changed:?}");
}
