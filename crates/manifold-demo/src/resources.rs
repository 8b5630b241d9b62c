//! The demo upstream's resources, templates, subscriptions and completions.
//!
//! - `demo://readme` is listed; `demo://item/{id}` is a template; any
//!   `demo://linked/<n>` exists but is listed nowhere (the `link` tool hands it out
//!   as a `resource_link`), so a gateway can only route it by remembering the link.
//! - Subscriptions are recorded; the `touch` tool sends
//!   `notifications/resources/updated` for a URI (server-wide, not tied to a call).
//! - Completion: `greet`'s `name` argument from a fixed list, `demo://item/{id}`'s
//!   `id` from 1–3; values start with what was typed.
//! - With `--docs`: the template `file:///srv/docs/{+path}`, and a read of any
//!   `file:` or `https:` URI answers `read <uri>` with the URI byte for byte as
//!   it arrived (so a test sees what a gateway forwarded).

use serde_json::{json, Map, Value};

use crate::codes;
use crate::config::DEFAULT_INSTRUCTIONS;
use crate::jsonrpc::RpcError;
use crate::server::DemoServer;

/// The listed readme resource.
pub(crate) const README_URI: &str = "demo://readme";

pub(super) const TEMPLATE: &str = "demo://item/{id}";
/// The `--docs` template.
pub(super) const DOCS_TEMPLATE: &str = "file:///srv/docs/{+path}";
const NAMES: [&str; 4] = ["Alice", "Albert", "Bob", "Carol"];

pub(super) fn templates(docs: bool) -> Value {
    let mut templates = vec![json!({
        "uriTemplate": TEMPLATE,
        "name": "item",
        "description": "An item by id.",
        "mimeType": "text/plain"
    })];
    if docs {
        templates.push(json!({
            "uriTemplate": DOCS_TEMPLATE,
            "name": "docs",
            "description": "A document under /srv/docs.",
            "mimeType": "text/plain"
        }));
    }
    json!({ "resourceTemplates": templates })
}

fn uri_of(params: &Map<String, Value>) -> Result<&str, RpcError> {
    params
        .get("uri")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("params.uri must be a string"))
}

pub(super) fn read(params: &Map<String, Value>, docs: bool) -> Result<Value, RpcError> {
    let uri = uri_of(params)?;
    let scheme = uri.split_once(':').map(|(s, _)| s.to_ascii_lowercase());
    let text = if docs && matches!(scheme.as_deref(), Some("file" | "https")) {
        format!("read {uri}")
    } else if uri == README_URI {
        DEFAULT_INSTRUCTIONS.to_string()
    } else if let Some(id) = uri.strip_prefix("demo://item/").filter(|i| !i.is_empty()) {
        format!("item {id}")
    } else if let Some(n) = uri.strip_prefix("demo://linked/").filter(|i| !i.is_empty()) {
        format!("linked resource {n}")
    } else {
        return Err(RpcError::new(
            codes::RESOURCE_NOT_FOUND,
            format!("Resource not found: {uri}"),
        ));
    };
    Ok(
        json!({"contents": [{"uri": uri, "mimeType": "text/plain", "text": text}],
              "x-demo-read-extra": 1}),
    )
}

pub(super) fn subscription(
    server: &DemoServer,
    method: &str,
    params: &Map<String, Value>,
) -> Result<Value, RpcError> {
    let uri = uri_of(params)?.to_string();
    let mut subscribed = server.subscribed.lock();
    if method == "resources/subscribe" {
        subscribed.insert(uri);
    } else {
        subscribed.remove(&uri);
    }
    Ok(json!({}))
}

/// Whether a subscription to `uri` is in force: a `resources/subscribe`, or an
/// open listen stream's `resourceSubscriptions`.
pub(super) fn is_subscribed(server: &DemoServer, uri: &str) -> bool {
    server.subscribed.lock().contains(uri) || server.watched.lock().contains_key(uri)
}

/// The `resourceSubscriptions` of one open listen stream: counted in while it
/// lives, out when it is dropped (the stream ended or the request was cancelled).
pub(super) struct Watch<'a> {
    server: &'a DemoServer,
    uris: Vec<String>,
}

impl<'a> Watch<'a> {
    pub(super) fn new(server: &'a DemoServer, uris: Vec<String>) -> Watch<'a> {
        let mut watched = server.watched.lock();
        for u in &uris {
            *watched.entry(u.clone()).or_default() += 1;
        }
        Watch { server, uris }
    }

    pub(super) fn contains(&self, uri: &str) -> bool {
        self.uris.iter().any(|u| u == uri)
    }
}

impl Drop for Watch<'_> {
    fn drop(&mut self) {
        let mut watched = self.server.watched.lock();
        for u in &self.uris {
            if let Some(n) = watched.get_mut(u) {
                *n -= 1;
                if *n == 0 {
                    watched.remove(u);
                }
            }
        }
    }
}

pub(super) fn complete(params: &Map<String, Value>) -> Result<Value, RpcError> {
    let reference = params
        .get("ref")
        .ok_or_else(|| RpcError::invalid_params("params.ref is required"))?;
    let typed = params
        .get("argument")
        .and_then(|a| a.get("value"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let candidates: Vec<String> = match (
        reference.get("type").and_then(Value::as_str),
        reference.get("name").and_then(Value::as_str),
        reference.get("uri").and_then(Value::as_str),
    ) {
        (Some("ref/prompt"), Some("greet"), _) => NAMES.iter().map(|n| n.to_string()).collect(),
        (Some("ref/resource"), _, Some(TEMPLATE)) => (1..=3).map(|i| i.to_string()).collect(),
        (Some("ref/prompt"), Some(name), _) => {
            return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")))
        }
        _ => return Err(RpcError::invalid_params("Unknown reference")),
    };
    let values: Vec<String> = candidates
        .into_iter()
        .filter(|c| c.starts_with(typed))
        .collect();
    Ok(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
}
