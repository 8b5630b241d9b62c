//! `[discovery.semantic]`: semantic tool search for search and code endpoints.
//! Without the section, search is lexical only, exactly as before. With it,
//! `search_tools` (and a script's `search()`) fuses the lexical ranking with a
//! dense one, from either a model directory run in process (`model`) or an
//! OpenAI-compatible embeddings endpoint (`url` + `model_name`).
//!
//! The whole section is fixed at start (`fixed`): the model is loaded, and its
//! vectors computed, once.
//!
//! Not here: loading the model or calling the endpoint (manifold-server
//! `runtime::semantic`), the ranking (manifold-semantic).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::time::Duration;

/// Default `timeout`: one request to an embeddings endpoint.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest `timeout` accepted.
pub const MAX_TIMEOUT: Duration = Duration::from_secs(60);
/// Default `max_batch`: texts per request to an embeddings endpoint (tool
/// definitions are sent in batches of at most this many).
pub const DEFAULT_MAX_BATCH: usize = 64;
/// The largest `max_batch` accepted.
pub const MAX_BATCH: usize = 2_048;
/// Default `retries`: more tries of a failed request to an embeddings
/// endpoint, each within what is left of `timeout` for a query.
pub const DEFAULT_RETRIES: u32 = 1;

/// `[discovery]` in the file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DiscoverySection {
    /// Semantic search; without it, lexical only.
    #[serde(default)]
    pub semantic: Option<SemanticSection>,
}

/// `[discovery.semantic]` in the file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SemanticSection {
    /// A sentence-transformers model directory (BERT family: `config.json`,
    /// `model.safetensors`, `tokenizer.json`, `1_Pooling/config.json`), run
    /// in process. Exclusive with `url`.
    #[serde(default)]
    pub model: Option<String>,
    /// An OpenAI-compatible embeddings endpoint (`http://…/v1/embeddings`:
    /// Ollama, TEI, vLLM). Exclusive with `model`; needs `model_name`.
    #[serde(default)]
    pub url: Option<String>,
    /// The `model` member of a request to `url`.
    #[serde(default)]
    pub model_name: Option<String>,
    /// A bearer token for `url` (`${VAR}` expands); never sent elsewhere. With
    /// it, `url` must be `https://` (or `http://` to a loopback address).
    #[serde(default)]
    pub api_key: Option<String>,
    /// One request to `url` (`"2s"`, [`DEFAULT_TIMEOUT`]).
    #[serde(default)]
    pub timeout: Option<String>,
    /// Texts per request to `url` ([`DEFAULT_MAX_BATCH`]).
    #[serde(default)]
    pub max_batch: Option<usize>,
    /// More tries of a failed request to `url` ([`DEFAULT_RETRIES`]).
    #[serde(default)]
    pub retries: Option<u32>,
    /// A directory for the tool vectors, so a restart embeds nothing already
    /// embedded (default: none, vectors kept in memory only).
    #[serde(default)]
    pub cache: Option<String>,
}

/// Where vectors come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Embeddings {
    /// A model directory, run in process.
    Model(PathBuf),
    /// An embeddings endpoint.
    Remote {
        url: String,
        model_name: String,
        api_key: Option<String>,
        timeout: Duration,
        max_batch: usize,
        retries: u32,
    },
}

/// `[discovery.semantic]`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SemanticConfig {
    pub embeddings: Embeddings,
    pub cache: Option<PathBuf>,
}

/// `[discovery.semantic]` checked: exactly one of `model` and `url`; the
/// endpoint's settings only with `url`. `expand` fills `${VAR}` in `api_key`.
pub(crate) fn validate(
    d: &DiscoverySection,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<Option<SemanticConfig>, String> {
    let Some(s) = &d.semantic else {
        return Ok(None);
    };
    let cache = match s.cache.as_deref() {
        Some("") => return Err("key `discovery.semantic.cache`: an empty path".into()),
        Some(c) => Some(PathBuf::from(c)),
        None => None,
    };
    let embeddings = match (&s.model, &s.url) {
        (Some(_), Some(_)) => {
            return Err("[discovery.semantic]: set `model` (a directory, run in process) or `url` (an embeddings endpoint), not both".into())
        }
        (None, None) => {
            return Err("[discovery.semantic]: set `model` (a sentence-transformers directory) or `url` + `model_name` (an OpenAI-compatible embeddings endpoint)".into())
        }
        (Some(model), None) => {
            for (key, set) in [
                ("model_name", s.model_name.is_some()),
                ("api_key", s.api_key.is_some()),
                ("timeout", s.timeout.is_some()),
                ("max_batch", s.max_batch.is_some()),
                ("retries", s.retries.is_some()),
            ] {
                if set {
                    return Err(format!(
                        "key `discovery.semantic.{key}`: only means something with `url`"
                    ));
                }
            }
            if model.is_empty() {
                return Err("key `discovery.semantic.model`: an empty path".into());
            }
            Embeddings::Model(PathBuf::from(model))
        }
        (None, Some(url)) => {
            let parsed = url::Url::parse(url)
                .map_err(|e| format!("key `discovery.semantic.url`: not a URL: {e}"))?;
            if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
                return Err(format!(
                    "key `discovery.semantic.url`: must be an http:// or https:// URL, got {url:?}"
                ));
            }
            if s.api_key.is_some() {
                // The key goes only where it cannot be read on the way.
                crate::auth::check_fetch_url("discovery.semantic.url", url)?;
            }
            let model_name = match s.model_name.as_deref() {
                Some(m) if !m.is_empty() => m.to_string(),
                _ => {
                    return Err("key `discovery.semantic.model_name`: required with `url` (the `model` the endpoint serves, e.g. \"nomic-embed-text\")".into())
                }
            };
            let timeout = match s.timeout.as_deref() {
                None => DEFAULT_TIMEOUT,
                Some(t) => {
                    let t = crate::limits::duration("discovery.semantic.timeout", t)?;
                    if t.is_zero() || t > MAX_TIMEOUT {
                        return Err(format!(
                            "key `discovery.semantic.timeout`: must be more than 0 and at most {}s",
                            MAX_TIMEOUT.as_secs()
                        ));
                    }
                    t
                }
            };
            let max_batch = s.max_batch.unwrap_or(DEFAULT_MAX_BATCH);
            if max_batch == 0 || max_batch > MAX_BATCH {
                return Err(format!(
                    "key `discovery.semantic.max_batch`: must be from 1 to {MAX_BATCH}"
                ));
            }
            let api_key = match &s.api_key {
                Some(k) => Some(expand("discovery.semantic.api_key", k)?),
                None => None,
            };
            Embeddings::Remote {
                url: url.clone(),
                model_name,
                api_key,
                timeout,
                max_batch,
                retries: s.retries.unwrap_or(DEFAULT_RETRIES).min(5),
            }
        }
    };
    Ok(Some(SemanticConfig { embeddings, cache }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(s: SemanticSection) -> Result<Option<SemanticConfig>, String> {
        validate(&DiscoverySection { semantic: Some(s) }, &|_, v: &str| {
            Ok(v.replace("${KEY}", "secret"))
        })
    }

    #[test]
    fn no_section_is_lexical_only() {
        assert_eq!(
            validate(&DiscoverySection::default(), &|_, v| Ok(v.into())),
            Ok(None)
        );
    }

    #[test]
    fn a_model_or_an_endpoint_and_their_refusals() {
        let model = check(SemanticSection {
            model: Some("models/mini".into()),
            cache: Some("cache".into()),
            ..Default::default()
        })
        .unwrap()
        .unwrap();
        assert_eq!(model.embeddings, Embeddings::Model("models/mini".into()));
        let remote = check(SemanticSection {
            url: Some("http://127.0.0.1:11434/v1/embeddings".into()),
            model_name: Some("nomic-embed-text".into()),
            api_key: Some("${KEY}".into()),
            ..Default::default()
        })
        .unwrap()
        .unwrap();
        assert!(matches!(
            remote.embeddings,
            Embeddings::Remote { ref api_key, timeout, max_batch: DEFAULT_MAX_BATCH, .. }
                if api_key.as_deref() == Some("secret") && timeout == DEFAULT_TIMEOUT
        ));
        let refusals: [(SemanticSection, &str); 7] = [
            (
                SemanticSection {
                    url: Some("http://embeddings.example/v1/embeddings".into()),
                    model_name: Some("m".into()),
                    api_key: Some("k".into()),
                    ..Default::default()
                },
                "https://",
            ),
            (SemanticSection::default(), "set `model`"),
            (
                SemanticSection {
                    model: Some("m".into()),
                    url: Some("http://x/v1/embeddings".into()),
                    ..Default::default()
                },
                "not both",
            ),
            (
                SemanticSection {
                    url: Some("http://x/v1/embeddings".into()),
                    ..Default::default()
                },
                "model_name",
            ),
            (
                SemanticSection {
                    url: Some("file:///etc/passwd".into()),
                    model_name: Some("m".into()),
                    ..Default::default()
                },
                "http:// or https://",
            ),
            (
                SemanticSection {
                    model: Some("m".into()),
                    timeout: Some("1s".into()),
                    ..Default::default()
                },
                "discovery.semantic.timeout",
            ),
            (
                SemanticSection {
                    url: Some("http://x/v1/embeddings".into()),
                    model_name: Some("m".into()),
                    max_batch: Some(0),
                    ..Default::default()
                },
                "max_batch",
            ),
        ];
        for (s, want) in refusals {
            let e = check(s).unwrap_err();
            assert!(e.contains(want), "{e} lacks {want}");
        }
    }
}
