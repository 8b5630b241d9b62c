//! MCP extensions (`capabilities.extensions`, `"<prefix>/<name>": {settings}`)
//! as a gateway relays them: which of an upstream's it can advertise as its
//! own, and the ones it declares to upstreams itself.
//!
//! - MCP Apps (`io.modelcontextprotocol/ui`): no methods of its own, only
//!   `ui://` resources and `_meta` members, which Manifold relays (and
//!   namespaces): relayed in both eras, and declared to upstreams.
//! - Tasks ([`crate::tasks::EXTENSION`]): routed by Manifold, advertised in
//!   the 2026-07-28 era only (see `tasks`).
//! - Skills ([`SKILLS`]): `skills/list` merged, `skills/get` and
//!   `resources/directory/read` routed by Manifold, in both eras (SEP-2640
//!   adds `ttlMs`/`cacheScope` from 2026-07-28 on); `directoryRead` is
//!   advertised when any upstream declares it (a directory read goes to the
//!   owner only when that owner declared it).
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

/// Whether an upstream's `capabilities` declare Skills.
pub fn declares_skills(capabilities: &Map<String, Value>) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(SKILLS))
        .is_some_and(Value::is_object)
}

/// Whether an upstream's `capabilities` declare Skills with `directoryRead`.
pub fn declares_directory_read(capabilities: &Map<String, Value>) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(SKILLS))
        .is_some_and(caps_directory_read)
}

/// The extensions of `upstreams` (their `capabilities`) that Manifold
/// advertises as its own, the first upstream's settings for each (Skills:
/// `directoryRead` when any declares it); `stateless`: the 2026-07-28 era
/// (Tasks is advertised there only).
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
                crate::tasks::EXTENSION => stateless,
                _ => true,
            };
            if !routed || !settings.is_object() {
                continue;
            }
            if name == SKILLS {
                // Manifold's own settings: it routes directory reads to the
                // upstreams that serve them.
                let reads = caps_directory_read(settings);
                let entry = out.entry(name.clone()).or_insert_with(|| json!({}));
                if reads {
                    entry["directoryRead"] = Value::Bool(true);
                }
            } else if !out.contains_key(name) {
                out.insert(name.clone(), settings.clone());
            }
        }
    }
    out
}

fn caps_directory_read(settings: &Value) -> bool {
    settings.get("directoryRead").and_then(Value::as_bool) == Some(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn ui_skills_and_unknown_extensions_are_relayed_tasks_only_when_stateless() {
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
            json!({UI: {"mimeTypes": [UI_MIME_TYPE]}, "com.example/x": {"v": 1}, SKILLS: {"directoryRead": true}})
        );
        let stateless = relayed([&a, &b], true);
        assert!(stateless.contains_key(crate::tasks::EXTENSION));
        assert_eq!(stateless[SKILLS], json!({"directoryRead": true}));
        // Skills without directory reads anywhere: the extension, no setting.
        let plain = caps(json!({"extensions": {SKILLS: {"x-future": 1}}}));
        assert_eq!(relayed([&plain], true)[SKILLS], json!({}));
        assert!(declares_skills(&plain) && !declares_directory_read(&plain));
        assert!(declares_directory_read(&b) && !declares_skills(&none));
    }
}
