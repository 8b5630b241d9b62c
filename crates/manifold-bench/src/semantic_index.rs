//! `manifold-load --search-index TOOLS --model DIR`: semantic search's costs
//! beside the lexical index's, in this process: embedding time per tool (the
//! catalogue's real tools, on every core the model's thread pool takes; set
//! `RAYON_NUM_THREADS=1` for one), bytes per tool vector, and single-thread
//! query latency p50/p99 of the hybrid search over TOOLS tools — with the
//! query's vector computed (a query never asked before) and cached (asked
//! again) — against the lexical search alone.
//!
//! A copy of a real tool (`github1__…`) takes its original's vector: their
//! texts differ only in the upstream's name, and embedding 10,000 tools would
//! measure the same thing 13 times over. Search cost does not depend on which
//! vectors they are.

use anyhow::{Context, Result};
use manifold_catalog::search::{SearchIndex, SearchRequest};
use manifold_catalog::NamedList;
use manifold_semantic::dense::DenseIndex;
use manifold_semantic::fuse::{self, Fusion};
use manifold_semantic::local::LocalModel;
use manifold_semantic::text;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

/// Rounds of every query for the cached-vector latencies.
const ROUNDS: usize = 20;

pub fn run(model: &Path, list: &NamedList, index: &SearchIndex, queries: &[String]) -> Result<()> {
    let t = Instant::now();
    let model = LocalModel::load(model).context("--model")?;
    println!();
    println!(
        "semantic: model loaded in {:.2} s",
        t.elapsed().as_secs_f64()
    );
    // The real tools are those of upstreams without a copy number.
    let mut texts = Vec::new();
    let mut originals: HashMap<String, usize> = HashMap::new();
    let mut of: Vec<Option<usize>> = Vec::new();
    for e in list.listed() {
        let tool = match serde_json::from_slice(e.json()) {
            Ok(Value::Object(m)) => m,
            _ => Map::new(),
        };
        let base = e.upstream.trim_end_matches(|c: char| c.is_ascii_digit());
        let bare = e
            .exposed
            .split_once("__")
            .map_or(e.exposed.as_str(), |x| x.1);
        let key = format!("{base}__{bare}");
        let slot = *originals.entry(key).or_insert_with(|| {
            texts.push(text::tool_text(&e.exposed, &e.upstream, &tool));
            texts.len() - 1
        });
        of.push(Some(slot));
    }
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let t = Instant::now();
    let vectors = model.embed(&refs)?;
    let embed = t.elapsed();
    let mut dense = DenseIndex::new(of.len(), model.dim());
    for (id, slot) in of.iter().enumerate() {
        if let Some(v) = slot.and_then(|s| vectors.get(s)) {
            dense.set(id as u32, v);
        }
    }
    let requests: Vec<SearchRequest> = queries
        .iter()
        .map(|q| SearchRequest::new(q, None))
        .collect::<Result<_, _>>()?;
    // A query never asked: embedded, then searched.
    let mut fresh = Vec::new();
    let mut qvs = Vec::new();
    for r in &requests {
        let t = Instant::now();
        let qv = model.embed(&[r.text()])?.pop().context("no vector")?;
        std::hint::black_box(fuse::search(
            index,
            &dense,
            Some(&qv),
            r,
            &|_| true,
            Fusion::default(),
        ));
        fresh.push(t.elapsed());
        qvs.push(qv);
    }
    let mut cached = Vec::new();
    let mut lexical = Vec::new();
    for _ in 0..ROUNDS {
        for (r, qv) in requests.iter().zip(&qvs) {
            let t = Instant::now();
            std::hint::black_box(fuse::search(
                index,
                &dense,
                Some(qv),
                r,
                &|_| true,
                Fusion::default(),
            ));
            cached.push(t.elapsed());
            let t = Instant::now();
            std::hint::black_box(index.search(r, &|_| true));
            lexical.push(t.elapsed());
        }
    }
    println!(
        "semantic: {} distinct tool texts embedded in {:.1} s ({:.1} ms per tool), vectors of {} floats",
        texts.len(),
        embed.as_secs_f64(),
        embed.as_secs_f64() * 1e3 / texts.len().max(1) as f64,
        model.dim()
    );
    println!();
    println!("| tools | vectors heap | per tool | lexical p50 / p99 | hybrid, query vector cached p50 / p99 | hybrid, query embedded p50 / p99 |");
    println!("|---|---|---|---|---|---|");
    let (l, c, f) = (pct(&mut lexical), pct(&mut cached), pct(&mut fresh));
    println!(
        "| {} | {:.2} MiB | {} B | {} / {} µs | {} / {} µs | {} / {} µs |",
        dense.len(),
        dense.heap_bytes() as f64 / (1024.0 * 1024.0),
        dense.heap_bytes() / dense.len().max(1),
        micros(l.0),
        micros(l.1),
        micros(c.0),
        micros(c.1),
        micros(f.0),
        micros(f.1),
    );
    Ok(())
}

fn pct(lat: &mut [Duration]) -> (Duration, Duration) {
    lat.sort_unstable();
    let at = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1))];
    (at(0.50), at(0.99))
}

fn micros(d: Duration) -> String {
    format!("{:.0}", d.as_secs_f64() * 1e6)
}
