//! Semantic search quality on real tool definitions: recall@1, @5 and @10 of
//! the lexical ranking (as shipped), the dense one alone and the hybrid, over
//! the query splits of manifold-catalog's `tests/search_queries.json` and the
//! `para` split of `tests/search_queries_para.json` (tasks in the user's own
//! words, written before any semantic ranker existed), on the 742 tools of
//! `../shared/data/tool-catalog/catalog.json`, with the pinned model
//! (`MANIFOLD_TEST_MODEL`, which `scripts/peers` fetches into
//! `.peers/models/all-MiniLM-L6-v2`).
//!
//! Without the catalogue or the model the test says it is skipped, unless
//! `MANIFOLD_TEST_MODEL` is set (as `.peers/env.sh` sets it in CI): then a
//! missing model fails. The fusion was chosen on `dev` only (`tune`, ignored).
//!
//! `cargo test --release -p manifold-semantic --test semantic_quality -- --nocapture`
//! prints the table recorded in docs/benchmarks.md.

use std::io::Write;
use std::path::PathBuf;

use manifold_catalog::search::{SearchIndex, SearchRequest, ToolDoc, ToolId};
use manifold_semantic::dense::DenseIndex;
use manifold_semantic::fuse::{self, Fusion};
use manifold_semantic::local::LocalModel;
use manifold_semantic::store::VectorStore;
use manifold_semantic::text;
use serde_json::{Map, Value};

/// recall@5 floors a little under what the hybrid reached when the held-out
/// splits were first run with it (para 0.45, fresh2 0.77, word-sharing dev +
/// holdout + fresh 0.95; docs/benchmarks.md, "Semantic search"): a change that
/// loses a few queries fails here. Issue 43 asked 0.70 on paraphrases: not
/// reached with all-MiniLM-L6-v2 (dense alone reaches 0.47 on `para`), and
/// said so in the docs. The word-sharing floor is the issue's: no drop.
const FLOOR_AT_5_PARA: f64 = 0.40;
const FLOOR_AT_5_FRESH2: f64 = 0.70;
const FLOOR_AT_5_WORD_SHARING: f64 = 0.90;

const SPLITS: [&str; 6] = ["dev", "holdout", "fresh", "fresh2", "para", "para_dev"];

struct Query {
    text: String,
    expected: Vec<String>,
    split: usize,
}

struct Tool {
    name: String,
    upstream: String,
    def: Map<String, Value>,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn say(line: &str) {
    let _ = writeln!(std::io::stderr(), "semantic_quality: {line}");
}

fn load() -> Option<(Vec<Tool>, Vec<Query>, LocalModel)> {
    let catalog = std::env::var_os("MANIFOLD_TOOL_CATALOG")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("../shared/data/tool-catalog/catalog.json"));
    let required = std::env::var_os("MANIFOLD_TEST_MODEL");
    let model_dir = required
        .clone()
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".peers/models/all-MiniLM-L6-v2"));
    let Ok(bytes) = std::fs::read(&catalog) else {
        say(&format!(
            "SKIPPED: no tool catalogue at {}",
            catalog.display()
        ));
        return None;
    };
    if !model_dir.join("model.safetensors").exists() && required.is_none() {
        say(&format!(
            "SKIPPED: no model at {} (scripts/peers fetches it)",
            model_dir.display()
        ));
        return None;
    }
    let model = LocalModel::load(&model_dir).expect("the pinned model loads");
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
    let mut queries = Vec::new();
    for file in [
        include_str!("../../manifold-catalog/tests/search_queries.json"),
        include_str!("../../manifold-catalog/tests/search_queries_para.json"),
        include_str!("../../manifold-catalog/tests/search_queries_para_dev.json"),
    ] {
        let parsed: Value = serde_json::from_str(file).expect("queries are JSON");
        for q in parsed["queries"].as_array().expect("queries") {
            queries.push(Query {
                text: q["query"].as_str().expect("query").to_string(),
                expected: q["expected"]
                    .as_array()
                    .expect("expected")
                    .iter()
                    .map(|e| e.as_str().expect("name").to_string())
                    .collect(),
                split: SPLITS
                    .iter()
                    .position(|s| q["split"] == *s)
                    .expect("a known split"),
            });
        }
    }
    Some((tools, queries, model))
}

/// The lexical index and the tools' vectors (cached under the test's target
/// directory, so a second run embeds nothing).
fn indexes(tools: &[Tool], model: &LocalModel) -> (SearchIndex, DenseIndex) {
    let index = SearchIndex::build(tools.iter().map(|t| ToolDoc {
        name: &t.name,
        upstream: &t.upstream,
        tool: &t.def,
    }));
    let texts: Vec<String> = tools
        .iter()
        .map(|t| text::tool_text(&t.name, &t.upstream, &t.def))
        .collect();
    let cache = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("semantic-cache");
    let mut store = VectorStore::open(Some(&cache), model.id(), model.dim()).expect("cache");
    let missing: Vec<&str> = texts
        .iter()
        .filter(|t| store.get(&text::key(t)).is_none())
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        let started = std::time::Instant::now();
        let vectors = model.embed(&missing).expect("embedding");
        say(&format!(
            "embedded {} tools in {:.1} s",
            missing.len(),
            started.elapsed().as_secs_f64()
        ));
        let new = missing.iter().map(|t| text::key(t)).zip(vectors).collect();
        store.insert(new, &|_| true).expect("cache write");
    }
    let mut dense = DenseIndex::new(tools.len(), model.dim());
    for (i, t) in texts.iter().enumerate() {
        if let Some(v) = store.get(&text::key(t)) {
            dense.set(i as ToolId, &v);
        }
    }
    (index, dense)
}

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
    fn rate(&self, i: usize) -> f64 {
        self.at[i] as f64 / self.n.max(1) as f64
    }
}

enum Mode {
    Lexical,
    Dense,
    Hybrid(Fusion),
}

/// Recall per split for `mode`; the query vectors are `qv[i]`.
fn measure(
    index: &SearchIndex,
    dense: &DenseIndex,
    queries: &[Query],
    qv: &[Vec<f32>],
    mode: &Mode,
) -> [Recall; 6] {
    let mut out = [Recall::default(); 6];
    for (q, v) in queries.iter().zip(qv) {
        let request = SearchRequest::new(&q.text, Some(10)).expect("a valid query");
        let ids: Vec<ToolId> = match mode {
            Mode::Lexical => {
                fuse::search(index, dense, None, &request, &|_| true, Fusion::default())
                    .iter()
                    .map(|f| f.id)
                    .collect()
            }
            Mode::Dense => dense
                .nearest(v, &|_| true, 10)
                .iter()
                .map(|h| h.0)
                .collect(),
            Mode::Hybrid(f) => fuse::search(index, dense, Some(v), &request, &|_| true, *f)
                .iter()
                .map(|f| f.id)
                .collect(),
        };
        let rank = ids.iter().position(|id| {
            q.expected
                .iter()
                .any(|e| index.name(*id) == Some(e.as_str()))
        });
        out[q.split].add(rank);
    }
    out
}

fn table(name: &str, r: &[Recall; 6]) {
    for (split, rec) in SPLITS.iter().zip(r) {
        say(&format!(
            "| {name} | {split} ({}) | {:.2} | {:.2} | {:.2} |",
            rec.n,
            rec.rate(0),
            rec.rate(1),
            rec.rate(2)
        ));
    }
}

fn word_sharing(r: &[Recall; 6]) -> f64 {
    let (found, n) = r[..3]
        .iter()
        .fold((0, 0), |(f, n), x| (f + x.at[1], n + x.n));
    found as f64 / n.max(1) as f64
}

/// The indexes, the queries and their vectors.
type Setup = (SearchIndex, DenseIndex, Vec<Query>, Vec<Vec<f32>>);

fn setup() -> Option<Setup> {
    let (tools, queries, model) = load()?;
    let (index, dense) = indexes(&tools, &model);
    assert_eq!(dense.present(), tools.len(), "every tool has a vector");
    let texts: Vec<&str> = queries.iter().map(|q| q.text.as_str()).collect();
    let qv = model.embed(&texts).expect("query vectors");
    Some((index, dense, queries, qv))
}

#[test]
fn hybrid_search_finds_tasks_in_the_users_own_words() {
    let Some((index, dense, queries, qv)) = setup() else {
        return;
    };
    let lexical = measure(&index, &dense, &queries, &qv, &Mode::Lexical);
    let dense_only = measure(&index, &dense, &queries, &qv, &Mode::Dense);
    let hybrid = measure(
        &index,
        &dense,
        &queries,
        &qv,
        &Mode::Hybrid(Fusion::default()),
    );
    say("| ranking | queries | recall@1 | recall@5 | recall@10 |");
    table("lexical (BM25F, shipped)", &lexical);
    table("dense only", &dense_only);
    table("hybrid (shipped fusion)", &hybrid);
    say(&format!(
        "word-sharing (dev + holdout + fresh) recall@5: lexical {:.2}, hybrid {:.2}",
        word_sharing(&lexical),
        word_sharing(&hybrid)
    ));
    assert!(
        hybrid[4].rate(1) >= FLOOR_AT_5_PARA,
        "para recall@5 {:.2} < {FLOOR_AT_5_PARA}",
        hybrid[4].rate(1)
    );
    assert!(
        hybrid[3].rate(1) >= FLOOR_AT_5_FRESH2,
        "fresh2 recall@5 {:.2} < {FLOOR_AT_5_FRESH2}",
        hybrid[3].rate(1)
    );
    assert!(
        word_sharing(&hybrid) >= FLOOR_AT_5_WORD_SHARING,
        "word-sharing recall@5 {:.2} < {FLOOR_AT_5_WORD_SHARING}",
        word_sharing(&hybrid)
    );
}

/// The grid the fusion was chosen on: `dev` (word-sharing) and `para_dev`
/// (the user's own words, on tools disjoint from `para`'s) only; it never
/// prints the held-out splits.
#[test]
#[ignore = "prints the dev grid the fusion was chosen on"]
fn tune() {
    let Some((index, dense, queries, qv)) = setup() else {
        return;
    };
    let tuning = |q: &Query| q.split == 0 || q.split == 5;
    let (dev, dev_qv): (Vec<Query>, Vec<Vec<f32>>) = queries
        .into_iter()
        .zip(qv)
        .filter(|(q, _)| tuning(q))
        .unzip();
    let show = |name: &str, r: &[Recall; 6]| {
        say(&format!(
            "{name}: dev {:.2} {:.2} {:.2} | para_dev {:.2} {:.2} {:.2}",
            r[0].rate(0),
            r[0].rate(1),
            r[0].rate(2),
            r[5].rate(0),
            r[5].rate(1),
            r[5].rate(2)
        ))
    };
    show(
        "lexical",
        &measure(&index, &dense, &dev, &dev_qv, &Mode::Lexical),
    );
    show(
        "dense",
        &measure(&index, &dense, &dev, &dev_qv, &Mode::Dense),
    );
    for k in [5.0, 10.0, 20.0, 60.0] {
        for semantic in [0.75, 1.0, 1.25, 1.5, 2.0, 3.0] {
            let f = Fusion {
                lexical: 1.0,
                semantic,
                k,
            };
            let r = measure(&index, &dense, &dev, &dev_qv, &Mode::Hybrid(f));
            show(&format!("k {k} semantic {semantic}"), &r);
        }
    }
}

/// What text a tool is embedded as, compared on the tuning splits only
/// (dense alone, recall@1/5/10): the shipped `tool_text`, and shorter forms.
#[test]
#[ignore = "embeds the catalogue several times; prints the tuning splits only"]
fn tool_text_variants() {
    let Some((tools, queries, model)) = load() else {
        return;
    };
    let tuning: Vec<&Query> = queries
        .iter()
        .filter(|q| q.split == 0 || q.split == 5)
        .collect();
    let texts: Vec<&str> = tuning.iter().map(|q| q.text.as_str()).collect();
    let qv = model.embed(&texts).expect("query vectors");
    let first_sentence = |d: &str| -> String {
        let d = d.split_whitespace().collect::<Vec<_>>().join(" ");
        match d.find(". ") {
            Some(i) => d[..i + 1].to_string(),
            None => d,
        }
    };
    let variants: Vec<(&str, Vec<String>)> = vec![
        (
            "shipped",
            tools
                .iter()
                .map(|t| text::tool_text(&t.name, &t.upstream, &t.def))
                .collect(),
        ),
        (
            "name + title + first sentence",
            tools
                .iter()
                .map(|t| {
                    let bare = t.name.split("__").nth(1).unwrap_or(&t.name);
                    format!(
                        "{}: {}. {}",
                        text::words(&t.upstream),
                        text::words(bare),
                        first_sentence(
                            t.def
                                .get("description")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                        )
                    )
                })
                .collect(),
        ),
        (
            "name + description, no parameters",
            tools
                .iter()
                .map(|t| {
                    let bare = t.name.split("__").nth(1).unwrap_or(&t.name);
                    format!(
                        "{}: {}. {}",
                        text::words(&t.upstream),
                        text::words(bare),
                        t.def
                            .get("description")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                    )
                })
                .collect(),
        ),
    ];
    for (name, texts) in &variants {
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let started = std::time::Instant::now();
        let vectors = model.embed(&refs).expect("embedding");
        let mut dense = DenseIndex::new(tools.len(), model.dim());
        for (i, v) in vectors.iter().enumerate() {
            dense.set(i as ToolId, v);
        }
        let mut r = [Recall::default(); 6];
        for (q, v) in tuning.iter().zip(&qv) {
            let ids: Vec<ToolId> = dense
                .nearest(v, &|_| true, 10)
                .iter()
                .map(|h| h.0)
                .collect();
            let rank = ids
                .iter()
                .position(|id| q.expected.contains(&tools[*id as usize].name));
            r[q.split].add(rank);
        }
        say(&format!(
            "{name} ({:.1} s): dev {:.2} {:.2} {:.2} | para_dev {:.2} {:.2} {:.2}",
            started.elapsed().as_secs_f64(),
            r[0].rate(0),
            r[0].rate(1),
            r[0].rate(2),
            r[5].rate(0),
            r[5].rate(1),
            r[5].rate(2)
        ));
    }
}
