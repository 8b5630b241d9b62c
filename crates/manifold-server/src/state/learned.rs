//! URIs learned from results, for routing reads: which upstream owns a
//! resource URI (`Gateway::owner_of`). First match wins:
//! 1. the merged lists and templates (see `manifold_catalog::resources`);
//! 2. URIs Manifold has passed to a client in a result (`resource_link`, embedded
//!    resources, `resources/read` contents), remembered per upstream, at most
//!    [`LEARNED_URI_CAPACITY`] of them (the oldest is forgotten first);
//! 3. the only ready upstream that declared `resources`, if there is exactly one.
//!
//! Invariants: learning is cheap when a result names no URI (the bytes are only
//! parsed if they contain `"uri"`); the mutex is never held across `.await`.
//!
//! Not here: what a read of an unowned URI answers (the call chain's
//! `resolve`).

use parking_lot::Mutex;
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

/// URIs remembered from results (rule 2 above). Beyond this the oldest goes.
pub const LEARNED_URI_CAPACITY: usize = 10_000;

/// URIs seen in results, with the upstream that produced them; bounded, FIFO.
#[derive(Default)]
pub(crate) struct Learned(Mutex<LearnedUris>);

#[derive(Default)]
struct LearnedUris {
    owner: HashMap<String, Arc<str>>,
    order: VecDeque<String>,
}

impl LearnedUris {
    fn insert(&mut self, uri: String, upstream: &Arc<str>) {
        if self.owner.insert(uri.clone(), upstream.clone()).is_none() {
            self.order.push_back(uri);
            while self.order.len() > LEARNED_URI_CAPACITY {
                if let Some(old) = self.order.pop_front() {
                    self.owner.remove(&old);
                }
            }
        }
    }
}

impl Learned {
    /// Remembers the URIs in a result (`content` of a tool result,
    /// `messages[].content` of a prompt, `contents` of a read).
    pub(crate) fn learn(&self, upstream: &Arc<str>, raw: &RawValue) {
        if !raw.get().contains("\"uri\"") {
            return;
        }
        let Ok(v) = serde_json::from_str::<Value>(raw.get()) else {
            return;
        };
        let uris = uris_in(&v);
        if uris.is_empty() {
            return;
        }
        let mut learned = self.0.lock();
        for uri in uris {
            learned.insert(uri, upstream);
        }
    }

    pub(crate) fn owner(&self, uri: &str) -> Option<Arc<str>> {
        self.0.lock().owner.get(uri).cloned()
    }
}

/// The URIs a result hands to the client.
fn uris_in(v: &Value) -> Vec<String> {
    let mut uris: Vec<String> = Vec::new();
    let mut from_block = |block: &Value| {
        let uri = match block.get("type").and_then(Value::as_str) {
            Some("resource_link") => block.get("uri"),
            Some("resource") => block.get("resource").and_then(|r| r.get("uri")),
            _ => None,
        };
        uris.extend(uri.and_then(Value::as_str).map(str::to_string));
    };
    for block in v
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        from_block(block);
    }
    for msg in v
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match msg.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().for_each(&mut from_block),
            Some(block) => from_block(block),
            None => {}
        }
    }
    uris.extend(
        v.get("contents")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("uri").and_then(Value::as_str).map(str::to_string)),
    );
    uris
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn uris_come_from_links_embedded_resources_prompts_and_reads() {
        let v = json!({
            "content": [
                {"type": "resource_link", "uri": "a://1"},
                {"type": "resource", "resource": {"uri": "a://2"}},
                {"type": "text", "text": "no uri", "uri": "not://this"}
            ],
            "messages": [
                {"content": {"type": "resource_link", "uri": "a://3"}},
                {"content": [{"type": "resource_link", "uri": "a://4"}]}
            ],
            "contents": [{"uri": "a://5"}]
        });
        assert_eq!(uris_in(&v), ["a://1", "a://2", "a://3", "a://4", "a://5"]);
    }

    #[test]
    fn the_oldest_uri_is_forgotten_beyond_the_bound() {
        let learned = Learned::default();
        let up: Arc<str> = Arc::from("u");
        for i in 0..=LEARNED_URI_CAPACITY {
            let raw =
                RawValue::from_string(format!(r#"{{"contents":[{{"uri":"x://{i}"}}]}}"#)).unwrap();
            learned.learn(&up, &raw);
        }
        assert_eq!(learned.owner("x://0"), None, "the oldest went");
        assert_eq!(learned.owner("x://1").as_deref(), Some("u"));
        assert_eq!(
            learned
                .owner(&format!("x://{LEARNED_URI_CAPACITY}"))
                .as_deref(),
            Some("u")
        );
    }
}
