//! Tool search quality on real tool definitions: recall@1, @5 and @10 of the
//! ranking over `tests/search_queries.json` (tasks phrased as a user would ask),
//! against plain BM25 over descriptions as the baseline, on the 742 tools of 20
//! public MCP servers in `../shared/data/tool-catalog/catalog.json` (relative to the
//! workspace root; `MANIFOLD_TOOL_CATALOG` names another path). The catalogue is
//! not in this repository: without it the test says it is skipped, and why.
//!
//! A query is found at k when any of its expected tools ranks in the top k. The
//! `dev` and `holdout` queries were written before the ranker and the ranker was
//! tuned on `dev` only; `holdout` was looked at after that (its first-look numbers
//! are in docs/benchmarks.md), and the `fresh` queries were written then, before
//! they were ever run; the `fresh2` queries were written later, before the next
//! round of ranking changes and before they were ever run. Misses are printed for the dev split only
//! (`MANIFOLD_SEARCH_SHOW_ALL=1` prints the others too).
//!
//! `cargo test -p manifold-catalog --test search_quality -- --nocapture` prints the
//! table recorded in docs/benchmarks.md.

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;

use manifold_catalog::search::{Ranking, SearchIndex, SearchRequest, ToolDoc};
use serde_json::{Map, Value};

/// recall@5 floors, a little under what the ranking reaches (0.91 over the 122
/// dev, holdout and fresh queries, 0.81 over the 32 fresh ones, 0.43 over the 30
/// fresh2 ones; docs/benchmarks.md): a change that loses a query or two fails here.
const FLOOR_AT_5_ALL: f64 = 0.88;
const FLOOR_AT_5_FRESH: f64 = 0.78;
const FLOOR_AT_5_FRESH2: f64 = 0.40;

struct Query {
    text: String,
    expected: Vec<String>,
    split: usize,
}

/// The splits of the query set, in `Recalls` order.
const SPLITS: [&str; 4] = ["dev", "holdout", "fresh", "fresh2"];

struct Tool {
    name: String,
    upstream: String,
    def: Map<String, Value>,
}

fn catalog_path() -> PathBuf {
    match std::env::var_os("MANIFOLD_TOOL_CATALOG") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../../shared/data/tool-catalog/catalog.json"),
    }
}

fn load() -> Option<(Vec<Tool>, Vec<Query>)> {
    let path = catalog_path();
    let Ok(bytes) = std::fs::read(&path) else {
        // Straight to stderr, past the test harness's capture: a skip is news.
        let _ = writeln!(
            std::io::stderr(),
            "search_quality: SKIPPED: no tool catalogue at {} (it lives outside the repository: \
             ../shared/data/tool-catalog/catalog.json from the workspace root, or set MANIFOLD_TOOL_CATALOG)",
            path.display()
        );
        return None;
    };
    let catalog: Value = serde_json::from_slice(&bytes).expect("catalog.json is JSON");
    let mut tools = Vec::new();
    for server in catalog["servers"].as_array().expect("servers") {
        let upstream = server["name"].as_str().expect("server name");
        for tool in server["tools"].as_array().expect("tools") {
            tools.push(Tool {
                name: format!("{upstream}__{}", tool["name"].as_str().expect("tool name")),
                upstream: upstream.to_string(),
                def: tool.as_object().expect("tool object").clone(),
            });
        }
    }
    let queries: Value = serde_json::from_str(include_str!("search_queries.json")).unwrap();
    let queries = queries["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| Query {
            text: q["query"].as_str().unwrap().to_string(),
            expected: q["expected"]
                .as_array()
                .unwrap()
                .iter()
                .map(|e| e.as_str().unwrap().to_string())
                .collect(),
            split: SPLITS
                .iter()
                .position(|s| q["split"] == *s)
                .expect("split is dev, holdout, fresh or fresh2"),
        })
        .collect();
    Some((tools, queries))
}

/// Found-at-k counts for k = 1, 5, 10 over a subset of queries.
#[derive(Default, Clone, Copy)]
struct Recall {
    n: usize,
    at: [usize; 3],
}

impl Recall {
    fn add(&mut self, rank: Option<usize>) {
        self.n += 1;
        for (i, k) in [1, 5, 10].into_iter().enumerate() {
            if rank.is_some_and(|r| r < k) {
                self.at[i] += 1;
            }
        }
    }
    fn merge(self, other: &Recall) -> Recall {
        Recall {
            n: self.n + other.n,
            at: [0, 1, 2].map(|i| self.at[i] + other.at[i]),
        }
    }
    fn rate(&self, i: usize) -> f64 {
        self.at[i] as f64 / self.n.max(1) as f64
    }
    fn row(&self) -> String {
        format!(
            "{:.2} | {:.2} | {:.2}",
            self.rate(0),
            self.rate(1),
            self.rate(2)
        )
    }
}

/// Per split (`SPLITS`), then all queries.
type Recalls = [Recall; 5];

/// Runs `rank` (query → names best first) over the queries.
fn evaluate(queries: &[Query], rank: &dyn Fn(&str) -> Vec<String>, show_misses: bool) -> Recalls {
    let show_all = std::env::var_os("MANIFOLD_SEARCH_SHOW_ALL").is_some();
    // `MANIFOLD_SEARCH_MISS_AT=k` prints misses at k instead of 5.
    let at: usize = std::env::var("MANIFOLD_SEARCH_MISS_AT")
        .ok()
        .and_then(|k| k.parse().ok())
        .unwrap_or(5);
    let mut recalls = Recalls::default();
    for q in queries {
        let ranked = rank(&q.text);
        let first = ranked.iter().position(|n| q.expected.contains(n));
        if show_misses && first.is_none_or(|r| r >= at) && (q.split == 0 || show_all) {
            println!(
                "  miss@{at} [{}]: {:?} want {:?} (rank {:?}); got {:?}",
                SPLITS[q.split],
                q.text,
                q.expected,
                first.map(|r| r + 1),
                &ranked[..ranked.len().min(at.max(3))]
            );
        }
        recalls[q.split].add(first);
        recalls[SPLITS.len()].add(first);
    }
    recalls
}

/// Plain BM25 (k1 1.2, b 0.75) over descriptions: lowercase, split at anything not
/// a letter or digit, no stemming, stopwords, synonyms or other fields.
fn baseline(tools: &[Tool]) -> impl Fn(&str) -> Vec<String> + '_ {
    let tokens = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|t| !t.is_empty())
            .map(str::to_lowercase)
            .collect()
    };
    let docs: Vec<Vec<String>> = tools
        .iter()
        .map(|t| {
            tokens(
                t.def
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or(""),
            )
        })
        .collect();
    let mut df: HashMap<String, f64> = HashMap::new();
    for d in &docs {
        let mut seen: Vec<&String> = d.iter().collect();
        seen.sort();
        seen.dedup();
        for t in seen {
            *df.entry(t.clone()).or_default() += 1.0;
        }
    }
    let n = docs.len() as f64;
    let avg = docs.iter().map(Vec::len).sum::<usize>() as f64 / n;
    move |query: &str| {
        let q = tokens(query);
        let mut scored: Vec<(f64, &str)> = docs
            .iter()
            .zip(tools)
            .map(|(d, tool)| {
                let mut s = 0.0;
                for term in &q {
                    let tf = d.iter().filter(|t| *t == term).count() as f64;
                    if tf > 0.0 {
                        let df = df[term];
                        let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
                        s += idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * d.len() as f64 / avg));
                    }
                }
                (s, tool.name.as_str())
            })
            .filter(|(s, _)| *s > 0.0)
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        scored
            .into_iter()
            .take(10)
            .map(|(_, n)| n.to_string())
            .collect()
    }
}

fn index(tools: &[Tool], ranking: Ranking) -> SearchIndex {
    SearchIndex::build_with(
        tools.iter().map(|t| ToolDoc {
            name: &t.name,
            upstream: &t.upstream,
            tool: &t.def,
        }),
        ranking,
    )
}

fn ranker(index: &SearchIndex) -> impl Fn(&str) -> Vec<String> + '_ {
    move |q: &str| {
        let request = SearchRequest::new(q, Some(10)).expect("a valid query");
        index
            .search(&request, &|_| true)
            .into_iter()
            .map(|h| h.name.to_string())
            .collect()
    }
}

#[test]
fn recall_on_the_real_catalogue() {
    let Some((tools, queries)) = load() else {
        return;
    };
    assert!(queries.len() >= 50, "at least 50 queries");
    for q in &queries {
        for e in &q.expected {
            assert!(
                tools.iter().any(|t| &t.name == e),
                "{e} is not in the catalogue"
            );
        }
    }
    let full = index(&tools, Ranking::default());
    let plain = index(
        &tools,
        Ranking {
            synonym_weight: 0.0,
            ..Ranking::default()
        },
    );
    println!("{} tools, {} queries", tools.len(), queries.len());
    // `MANIFOLD_SEARCH_EXPLAIN="query|query"`: the top 10 with scores.
    for q in std::env::var("MANIFOLD_SEARCH_EXPLAIN")
        .unwrap_or_default()
        .split('|')
    {
        if let Ok(request) = SearchRequest::new(q, Some(10)) {
            println!("{q:?} → {:?}", request.terms());
            for h in full.search(&request, &|_| true) {
                println!("  {:7.3} {}", h.score, h.name);
            }
        }
    }
    println!("misses of the ranking (dev split):");
    let shipped = evaluate(&queries, &ranker(&full), true);
    let unexpanded = evaluate(&queries, &ranker(&plain), false);
    let base = evaluate(&queries, &baseline(&tools), false);
    println!("| ranking | queries | recall@1 | recall@5 | recall@10 |");
    println!("|---|---|---|---|---|");
    for (name, recalls) in [
        ("BM25 over descriptions (baseline)", base),
        (
            "BM25F + coverage + product, no synonym expansion",
            unexpanded,
        ),
        ("BM25F + synonyms + coverage + product (shipped)", shipped),
    ] {
        for (split, r) in SPLITS.iter().chain(&["all"]).zip(recalls) {
            println!("| {name} | {split} ({}) | {} |", r.n, r.row());
        }
    }
    let [dev, holdout, fresh, fresh2, all] = shipped;
    let earlier = dev.merge(&holdout).merge(&fresh);
    println!("dev, holdout and fresh ({}): {}", earlier.n, earlier.row());
    assert!(
        earlier.rate(1) >= FLOOR_AT_5_ALL,
        "recall@5 over dev, holdout and fresh {:.3} fell under {FLOOR_AT_5_ALL}",
        earlier.rate(1)
    );
    assert!(
        fresh.rate(1) >= FLOOR_AT_5_FRESH,
        "recall@5 of the fresh queries {:.3} fell under {FLOOR_AT_5_FRESH}",
        fresh.rate(1)
    );
    assert!(
        fresh2.rate(1) >= FLOOR_AT_5_FRESH2,
        "recall@5 of the fresh2 queries {:.3} fell under {FLOOR_AT_5_FRESH2}",
        fresh2.rate(1)
    );
    assert!(
        all.rate(1) > base[SPLITS.len()].rate(1),
        "the ranking must beat the baseline"
    );
}

/// Tuning aid, by hand: recall on the dev split only (the held-out split stays
/// unseen) over a grid of ranking parameters.
/// `cargo test -p manifold-catalog --test search_quality tune -- --ignored --nocapture`
#[test]
#[ignore]
fn tune() {
    let Some((tools, queries)) = load() else {
        return;
    };
    let dev: Vec<Query> = queries.into_iter().filter(|q| q.split == 0).collect();
    let base = Ranking::default();
    for coverage in [0.0, 0.25, 0.5, 0.75, 1.0] {
        for other in [1.0, 0.7, 0.5, 0.3] {
            let mut r = base.clone();
            r.coverage = coverage;
            r.other_product = other;
            let idx = index(&tools, r);
            let d = evaluate(&dev, &ranker(&idx), false)[0];
            println!("coverage {coverage} other_product {other}: {}", d.row());
        }
    }
}
