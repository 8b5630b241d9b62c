//! Semantic search's running part (`[discovery.semantic]`): the embedder (the
//! in-process model, or an OpenAI-compatible embeddings endpoint), the tool
//! vectors (`VectorStore`, keyed by the digest of each tool's text, so a
//! definition is embedded once for every endpoint and view), the bounded cache
//! of query vectors, and the fallback to lexical ranking.
//!
//! Invariants: no lock is held across an await or an embedding (the store and
//! the caches are locked to read or to insert, never while the model runs); a
//! request to the endpoint is bounded by `timeout`, its answer by
//! [`MAX_EMBEDDINGS_BODY`], its batch by `max_batch`; a failure never fails a
//! search: it is ranked lexically, counted, and logged at most once per
//! [`FALLBACK_LOG_EVERY`], and after a failed query the endpoint is left
//! alone for [`QUERY_RETRY_AFTER`]. The endpoint's key goes to `url` only.
//!
//! Not here: the ranking (manifold-semantic), which tools a caller may see
//! (its view's filter, in `handlers/discovery.rs`), the per-catalogue dense
//! index (`views`).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use manifold_config::semantic::{Embeddings, SemanticConfig};
use manifold_semantic::store::{QueryCache, VectorStore};
use manifold_semantic::SemanticError;
use serde_json::Value;

/// The largest answer read from an embeddings endpoint (a batch of
/// `max_batch` vectors of a few thousand floats fits many times over).
pub const MAX_EMBEDDINGS_BODY: usize = 64 * 1024 * 1024;
/// A fallback to lexical ranking is logged at most this often (each is counted).
pub const FALLBACK_LOG_EVERY: Duration = Duration::from_secs(60);
/// After an embeddings endpoint failed a query, searches are lexical for
/// this long without asking it again (each still counted as a fallback), so
/// an endpoint that never answers costs one timeout, not one per search.
pub const QUERY_RETRY_AFTER: Duration = Duration::from_secs(30);
/// Tool texts embedded per step of a catalogue's embedding: between steps the
/// gateway's shutdown is checked, and the vectors so far are kept.
pub const EMBED_STEP: usize = 64;

/// What computes vectors.
enum Embedder {
    #[cfg(feature = "semantic-local")]
    Local(Arc<manifold_semantic::local::LocalModel>),
    Remote(Box<Remote>),
}

struct Remote {
    url: String,
    model_name: String,
    api_key: Option<String>,
    timeout: Duration,
    max_batch: usize,
    retries: u32,
    client: manifold_foundation::http::Client,
}

/// The semantic layer of a running gateway.
pub(crate) struct Semantic {
    embedder: Embedder,
    /// What the vectors are of (a digest of the model, or the endpoint's URL
    /// and model name): vectors of another id are never compared.
    id: String,
    store: Mutex<Option<VectorStore>>,
    cache: Option<std::path::PathBuf>,
    queries: Mutex<QueryCache>,
    fallbacks: AtomicU64,
    last_logged: Mutex<Option<Instant>>,
    /// After a query's embedding failed at the endpoint: until when searches
    /// go lexical at once, without asking it.
    queries_down_until: Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Semantic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Semantic")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

impl Semantic {
    /// Loads the model (blocking: it reads and hashes the weights) or sets up
    /// the endpoint's client. A model directory that cannot load is an error
    /// naming the file and why.
    pub(crate) fn load(config: &SemanticConfig) -> Result<Semantic, String> {
        let (embedder, id, dim) = match &config.embeddings {
            #[cfg(feature = "semantic-local")]
            Embeddings::Model(dir) => {
                let model =
                    manifold_semantic::local::LocalModel::load(dir).map_err(|e| e.to_string())?;
                let id = model.id().to_string();
                let dim = Some(model.dim());
                (Embedder::Local(Arc::new(model)), id, dim)
            }
            #[cfg(not(feature = "semantic-local"))]
            Embeddings::Model(dir) => {
                return Err(format!(
                    "[discovery.semantic] model = {}: this binary was built without the \
                     in-process model (cargo feature `semantic-local`); use `url` (an \
                     embeddings endpoint) or a build with the feature",
                    dir.display()
                ))
            }
            Embeddings::Remote {
                url,
                model_name,
                api_key,
                timeout,
                max_batch,
                retries,
            } => {
                let id = hex::encode(sha2::Digest::finalize(sha2::Digest::chain_update(
                    sha2::Sha256::default(),
                    format!("{url}\n{model_name}"),
                )));
                let client = manifold_foundation::http::client(
                    &manifold_foundation::http::Options::new(*timeout),
                );
                let remote = Remote {
                    url: url.clone(),
                    model_name: model_name.clone(),
                    api_key: api_key.clone(),
                    timeout: *timeout,
                    max_batch: *max_batch,
                    retries: *retries,
                    client,
                };
                (Embedder::Remote(Box::new(remote)), id, None)
            }
        };
        let semantic = Semantic {
            embedder,
            id,
            store: Mutex::new(None),
            cache: config.cache.clone(),
            queries: Mutex::new(QueryCache::default()),
            fallbacks: AtomicU64::new(0),
            last_logged: Mutex::new(None),
            queries_down_until: Mutex::new(None),
        };
        // A local model's length is known: open the store (and its file) now,
        // so a bad cache directory stops the start.
        if let Some(dim) = dim {
            semantic.open_store(dim).map_err(|e| e.to_string())?;
        }
        Ok(semantic)
    }

    fn open_store(&self, dim: usize) -> Result<(), SemanticError> {
        let mut store = self.store.lock();
        if store.is_none() {
            *store = Some(VectorStore::open(self.cache.as_deref(), &self.id, dim)?);
        }
        Ok(())
    }

    /// Searches that were ranked lexically because the semantic part failed.
    pub(crate) fn fallbacks(&self) -> u64 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Counts a fallback and logs it (at most once per [`FALLBACK_LOG_EVERY`]).
    pub(crate) fn fell_back(&self, why: &str) {
        let n = self.fallbacks.fetch_add(1, Ordering::Relaxed) + 1;
        let mut last = self.last_logged.lock();
        if last.is_none_or(|t| t.elapsed() >= FALLBACK_LOG_EVERY) {
            *last = Some(Instant::now());
            drop(last);
            tracing::warn!(
                fallbacks = n,
                "semantic search fell back to lexical ranking: {why}"
            );
        }
    }

    /// The vector of a query (cached). Blocking: call it off the async workers.
    pub(crate) fn query_vector(&self, query: &str) -> Result<Arc<[f32]>, SemanticError> {
        if let Some(v) = self.queries.lock().get(query) {
            return Ok(v);
        }
        // An endpoint that just failed is not asked again for a while: a
        // search would otherwise wait out its timeout every time.
        if let Some(until) = *self.queries_down_until.lock() {
            if Instant::now() < until {
                return Err(SemanticError::Inference(
                    "the embeddings endpoint failed recently; asked again shortly".into(),
                ));
            }
        }
        let mut v = match self.embed(&[query]) {
            Ok(v) => v,
            Err(e) => {
                if matches!(self.embedder, Embedder::Remote(_)) {
                    *self.queries_down_until.lock() = Some(Instant::now() + QUERY_RETRY_AFTER);
                }
                return Err(e);
            }
        };
        let v: Arc<[f32]> = v
            .pop()
            .ok_or_else(|| SemanticError::Inference("no vector for the query".into()))?
            .into();
        self.queries.lock().put(query, v.clone());
        Ok(v)
    }

    /// The vectors of `texts` (tool texts, keyed by their digests), embedding
    /// only those not held yet, [`EMBED_STEP`] at a time until `stop`.
    /// Blocking. Returns each text's vector, or `None` for one not embedded.
    pub(crate) fn tool_vectors(
        &self,
        texts: &[String],
        stop: &tokio_util::sync::CancellationToken,
    ) -> Result<Vec<Option<Arc<[f32]>>>, SemanticError> {
        let keys: Vec<[u8; 32]> = texts
            .iter()
            .map(|t| manifold_semantic::text::key(t))
            .collect();
        let missing: Vec<usize> = {
            let store = self.store.lock();
            (0..texts.len())
                .filter(|i| store.as_ref().is_none_or(|s| s.get(&keys[*i]).is_none()))
                .collect()
        };
        let started = Instant::now();
        let live: std::collections::HashSet<[u8; 32]> = keys.iter().copied().collect();
        for step in missing.chunks(EMBED_STEP) {
            if stop.is_cancelled() {
                break;
            }
            let batch: Vec<&str> = step.iter().map(|i| texts[*i].as_str()).collect();
            let vectors = self.embed(&batch)?;
            let dim = vectors.first().map_or(0, Vec::len);
            self.open_store(dim)?;
            let new = step.iter().map(|i| keys[*i]).zip(vectors).collect();
            if let Some(store) = self.store.lock().as_mut() {
                store.insert(new, &|k| live.contains(k))?;
            }
        }
        if !missing.is_empty() {
            tracing::info!(
                tools = missing.len(),
                ms = started.elapsed().as_millis() as u64,
                "semantic search: tool definitions embedded"
            );
        }
        let store = self.store.lock();
        Ok(keys
            .iter()
            .map(|k| store.as_ref().and_then(|s| s.get(k)))
            .collect())
    }

    /// Vectors of `texts`, in order. Blocking (a remote request is driven on
    /// the current runtime from this blocking thread).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SemanticError> {
        match &self.embedder {
            #[cfg(feature = "semantic-local")]
            Embedder::Local(model) => model.embed(texts),
            Embedder::Remote(remote) => {
                let handle = tokio::runtime::Handle::try_current()
                    .map_err(|_| SemanticError::Inference("no runtime for the request".into()))?;
                let mut out = Vec::with_capacity(texts.len());
                for batch in texts.chunks(remote.max_batch) {
                    out.extend(handle.block_on(remote.embed(batch))?);
                }
                Ok(out)
            }
        }
    }
}

impl Remote {
    /// One batch, retried up to `retries` more times while `timeout` lasts.
    async fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, SemanticError> {
        let deadline = Instant::now() + self.timeout * (self.retries + 1);
        let mut last = String::new();
        for _ in 0..=self.retries {
            let left = deadline
                .saturating_duration_since(Instant::now())
                .min(self.timeout);
            if left.is_zero() {
                break;
            }
            match self.once(texts, left).await {
                Ok(v) => return Ok(v),
                Err(why) => last = why,
            }
        }
        Err(SemanticError::Inference(format!(
            "{}: {last}",
            manifold_foundation::redact::url(&self.url)
        )))
    }

    async fn once(&self, texts: &[&str], within: Duration) -> Result<Vec<Vec<f32>>, String> {
        let body = serde_json::json!({"model": self.model_name, "input": texts});
        let mut req =
            http::Request::post(&self.url).header(http::header::CONTENT_TYPE, "application/json");
        if let Some(key) = &self.api_key {
            req = req.header(http::header::AUTHORIZATION, format!("Bearer {key}"));
        }
        let req = req
            .body(http_body_util::Full::new(Bytes::from(body.to_string())))
            .map_err(|e| e.to_string())?;
        let got = manifold_foundation::http::fetch(&self.client, req, MAX_EMBEDDINGS_BODY, within)
            .await
            .map_err(|e| e.to_string())?;
        if !got.status.is_success() {
            return Err(format!("HTTP {}", got.status));
        }
        parse_embeddings(&got.body, texts.len())
    }
}

/// `{"data": [{"index": i, "embedding": [...]}, ...]}` → the vectors in input
/// order, normalized (endpoints differ on whether they normalize).
fn parse_embeddings(body: &[u8], n: usize) -> Result<Vec<Vec<f32>>, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let data = v["data"].as_array().ok_or("no `data` array")?;
    if data.len() != n {
        return Err(format!("{} vectors for {n} inputs", data.len()));
    }
    let mut out: Vec<Option<Vec<f32>>> = vec![None; n];
    for (pos, item) in data.iter().enumerate() {
        let i = item["index"].as_u64().map_or(pos, |i| i as usize);
        let vector: Vec<f32> = item["embedding"]
            .as_array()
            .ok_or("an item without an `embedding` array")?
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32))
            .collect::<Option<_>>()
            .ok_or("an embedding with a non-number")?;
        let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
        if vector.is_empty() || !norm.is_finite() || norm == 0.0 {
            return Err("an empty or zero embedding".into());
        }
        let slot = out.get_mut(i).ok_or("an `index` out of range")?;
        *slot = Some(vector.into_iter().map(|x| x / norm).collect());
    }
    let out: Vec<Vec<f32>> = out
        .into_iter()
        .collect::<Option<_>>()
        .ok_or("an input without a vector")?;
    match out.windows(2).all(|w| w[0].len() == w[1].len()) {
        true => Ok(out),
        false => Err("embeddings of different lengths".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endpoints_answer_is_read_in_input_order_and_normalized() {
        let body = br#"{"data":[{"index":1,"embedding":[0,2]},{"index":0,"embedding":[3,4]}]}"#;
        let v = parse_embeddings(body, 2).unwrap();
        assert_eq!(v, vec![vec![0.6, 0.8], vec![0.0, 1.0]]);
        for (bad, why) in [
            (&br#"{"data":[]}"#[..], "0 vectors"),
            (
                br#"{"data":[{"index":5,"embedding":[1]},{"embedding":[1]}]}"#,
                "out of range",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[0,0]},{"index":1,"embedding":[1,0]}]}"#,
                "zero",
            ),
            (
                br#"{"data":[{"index":0,"embedding":[1]},{"index":1,"embedding":[1,0]}]}"#,
                "different lengths",
            ),
            (b"<html>", "not JSON"),
        ] {
            let e = parse_embeddings(bad, 2).unwrap_err();
            assert!(e.contains(why), "{e} lacks {why}");
        }
    }
}
