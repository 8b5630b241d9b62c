//! `manifold-load --search-index TOOLS`: the tool search index alone, in this
//! process (no gateway, no network): build time, heap bytes per tool and
//! single-thread query latency over a catalogue of TOOLS tools.
//!
//! The catalogue is the real one (`--catalog`, 742 tools of 20 servers) copied
//! until it holds TOOLS tools, each copy under its own upstream names (`github`,
//! `github1`, `github2`, …), so exposed names and the upstream field differ from
//! copy to copy while descriptions repeat. The index is built the way a gateway
//! builds it: [`SearchIndex::from_list`] over the merged [`Catalog`]'s tools (the
//! catalogue's own merge is not timed). Queries are the user-phrased tasks of
//! `crates/manifold-catalog/tests/search_queries.json`, asked round after round,
//! over everything and within a view of half the tools (a `[[policy]]` caller).
//!
//! Not here: `search_tools` through a gateway (latency of the whole request).

use anyhow::{bail, Context, Result};
use manifold_catalog::search::{SearchIndex, SearchRequest, ToolSet};
use manifold_catalog::{Catalog, ItemFilter, NamingPolicy, PrefixMode, UpstreamInput};
use serde_json::Value;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Builds timed; the median is reported.
const BUILDS: usize = 5;
/// Times each query is asked per measurement.
const ROUNDS: usize = 200;

const QUERIES: &str = include_str!("../../manifold-catalog/tests/search_queries.json");

pub fn run(catalog: &Path, tools: usize, model: Option<&Path>) -> Result<()> {
    if tools == 0 {
        bail!("--search-index needs at least one tool");
    }
    let bytes = std::fs::read(catalog).with_context(|| {
        format!(
            "the tool catalogue {} (--catalog; ../shared/data/tool-catalog/catalog.json \
             from the workspace root)",
            catalog.display()
        )
    })?;
    let catalog: Value = serde_json::from_slice(&bytes).context("catalog.json")?;
    let servers = catalog["servers"]
        .as_array()
        .context("catalog.json has no `servers`")?;
    let real: usize = servers
        .iter()
        .map(|s| s["tools"].as_array().map_or(0, Vec::len))
        .sum();
    if real == 0 {
        bail!("catalog.json has no tools");
    }
    // Copies of every server, each under its own name, until `tools` tools.
    let mut inputs = Vec::new();
    let mut left = tools;
    'copies: for copy in 0.. {
        for server in servers {
            if left == 0 {
                break 'copies;
            }
            let base = server["name"].as_str().context("a server without a name")?;
            let name = match copy {
                0 => base.to_string(),
                n => format!("{base}{n}"),
            };
            let list: Vec<_> = server["tools"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_object)
                .take(left)
                .cloned()
                .collect();
            left -= list.len();
            inputs.push(UpstreamInput {
                name: Arc::from(name.as_str()),
                prefix: name,
                lists: Arc::new(manifold_catalog::UpstreamLists {
                    tools: list,
                    ..Default::default()
                }),
                filter: Arc::new(ItemFilter::default()),
                overrides: Default::default(),
            });
        }
    }
    let policy = NamingPolicy {
        separator: "__".into(),
        prefix_mode: PrefixMode::Always,
        max_length: 128,
        configured_upstreams: inputs.len(),
        uris: Default::default(),
    };
    let merged = Catalog::build(&inputs, &policy, 1_000);
    let list = &merged.tools;

    let mut builds = Vec::new();
    let mut index = None;
    let cpu_before = cpu_time();
    for _ in 0..BUILDS {
        let t = Instant::now();
        let built = SearchIndex::from_list(list);
        builds.push(t.elapsed());
        index = Some(built);
    }
    // On a shared machine the wall clock counts other processes' turns too.
    let build_cpu = cpu_time()
        .zip(cpu_before)
        .map(|(after, before)| after.saturating_sub(before) / BUILDS as u32);
    let index = index.context("no build")?;
    builds.sort();
    let build = builds[builds.len() / 2];

    let queries: Value = serde_json::from_str(QUERIES).context("search_queries.json")?;
    let requests: Vec<SearchRequest> = queries["queries"]
        .as_array()
        .context("no queries")?
        .iter()
        .filter_map(|q| q["query"].as_str())
        .map(|q| SearchRequest::new(q, None))
        .collect::<Result<_, _>>()?;
    if requests.is_empty() {
        bail!("search_queries.json has no queries");
    }
    let half: ToolSet = (0..index.len() as u32).filter(|id| id % 2 == 0).collect();

    println!(
        "{} tools ({} real ones, {} upstreams), {} distinct terms, {} postings; {} queries × {ROUNDS} rounds, one thread",
        index.len(),
        real,
        inputs.len(),
        index.vocabulary_len(),
        index.postings_len(),
        requests.len(),
    );
    println!();
    println!("| tools | index build, wall (median of {BUILDS}) | CPU (mean) | index heap | per tool | query p50 | query p99 | within a half view: p50 | p99 |");
    println!("|---|---|---|---|---|---|---|---|---|");
    let all = latencies(&index, &requests, &|_| true);
    let view = latencies(&index, &requests, &|id| half.contains(id));
    println!(
        "| {} | {:.1} ms | {} | {:.2} MiB | {} B | {} µs | {} µs | {} µs | {} µs |",
        index.len(),
        build.as_secs_f64() * 1e3,
        build_cpu.map_or("?".into(), |d| format!("{:.0} ms", d.as_secs_f64() * 1e3)),
        index.heap_bytes() as f64 / (1024.0 * 1024.0),
        index.bytes_per_tool(),
        micros(all.0),
        micros(all.1),
        micros(view.0),
        micros(view.1),
    );
    if let Some(model) = model {
        let texts: Vec<String> = requests.iter().map(|r| r.text().to_string()).collect();
        crate::semantic_index::run(model, list, &index, &texts)?;
    }
    Ok(())
}

/// p50 and p99 of every query asked [`ROUNDS`] times.
fn latencies(
    index: &SearchIndex,
    requests: &[SearchRequest],
    keep: &dyn Fn(u32) -> bool,
) -> (Duration, Duration) {
    // Warm-up, not recorded.
    for r in requests {
        std::hint::black_box(index.search(r, keep));
    }
    let mut lat = Vec::with_capacity(requests.len() * ROUNDS);
    for _ in 0..ROUNDS {
        for r in requests {
            let t = Instant::now();
            std::hint::black_box(index.search(r, keep));
            lat.push(t.elapsed());
        }
    }
    lat.sort_unstable();
    let pct = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    (pct(0.50), pct(0.99))
}

/// This process's CPU time (user + system) from `/proc/self/stat`, in clock
/// ticks of 10 ms (`USER_HZ` is 100 on Linux); `None` elsewhere.
fn cpu_time() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) start after ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(Duration::from_millis(ticks * 10))
}

fn micros(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}
