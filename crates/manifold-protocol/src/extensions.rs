//! MCP extensions (`capabilities.extensions`, `"<prefix>/<name>": {settings}`)
//! as a gateway relays them: which of an upstream's it can advertise as its
//! own, and the ones it declares to upstreams itself.
//!
//! - MCP Apps (`io.modelcontextprotocol/ui`): no methods of its own, only
//!   `ui://` resources and `_meta` members, which Manifold relays (and
//!   namespaces): relayed in both eras, and declared to upstreams.
//! - Tasks ([`crate::tasks::EXTENSION`]): routed by Manifold, advertised in
//!   the 2026-07-28 era only (see `tasks`).
//! - Skills ([`SKILLS`]): methods (`skills/list`, `skills/get`) Manifold does
//!   not route yet, so it is not advertised.
//! - Any other: relayed as the upstreams declare it (an extension that adds
//!   methods gets -32601 for them until Manifold routes them).
//!
//! Not here: the Tasks extension's own rules (`tasks`).

use serde_json::{json, Map, Value};

/// MCP Apps.
pub const UI: &str = "io.modelcontextprotocol/ui";
/// The HTML profile MCP Apps' UI resources use.
pub const UI_MIME_TYPE: &str = "text/html;profile=mcp-app";
/// Skills (SEP-2640).
pub const SKILLS: &str = "io.modelcontextprotocol/skills";

/// What Manifold declares to an upstream as a client: that it relays MCP
/// Apps' UI resources (so servers that check for it publish their apps).
pub fn declared_to_upstreams() -> Value {
    json!({ UI: {"mimeTypes": [UI_MIME_TYPE]} })
}

/// The extensions of `upstreams` (their `capabilities`) that Manifold
/// advertises as its own, the first upstream's settings for each; `stateless`:
/// the 2026-07-28 era (Tasks is advertised there only).
pub fn relayed<'a>(
    upstreams: impl IntoIterator<Item = &'a Map<String, Value>>,
    stateless: bool,
) -> Map<String, Value> {
    let mut out = Map::new();
    for caps in upstreams {
        let Some(Value::Object(ext)) = caps.get("extensions") else {
            continue;
        };
        for (name, settings) in ext {
            let routed = match name.as_str() {
                SKILLS => false,
                crate::tasks::EXTENSION => stateless,
                _ => true,
            };
            if routed && settings.is_object() && !out.contains_key(name) {
                out.insert(name.clone(), settings.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn ui_and_unknown_extensions_are_relayed_tasks_only_when_stateless_skills_not_yet() {
        let a = caps(
            json!({"extensions": {UI: {"mimeTypes": [UI_MIME_TYPE]}, "com.example/x": {"v": 1}}}),
        );
        let b = caps(
            json!({"extensions": {crate::tasks::EXTENSION: {}, SKILLS: {"directoryRead": true}, "com.example/x": {"v": 2}}}),
        );
        let none = caps(json!({"tools": {}}));
        let session = relayed([&a, &b, &none], false);
        assert_eq!(
            Value::Object(session),
            json!({UI: {"mimeTypes": [UI_MIME_TYPE]}, "com.example/x": {"v": 1}})
        );
        let stateless = relayed([&a, &b], true);
        assert!(stateless.contains_key(crate::tasks::EXTENSION));
        assert!(!stateless.contains_key(SKILLS));
    }
}
