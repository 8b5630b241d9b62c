//! `--app NAME`: an MCP Apps server in miniature, as the official examples
//! (`@modelcontextprotocol/server-basic-*`) are: a tool `get-time` whose
//! `_meta.ui.resourceUri` (and the earlier flat `ui/resourceUri`) names the
//! UI resource `ui://get-time/mcp-app.html`, listed and readable as
//! `text/html;profile=mcp-app`. NAME is written into the HTML and the tool's
//! answer, so two such servers behind one gateway can be told apart (both
//! publish the same URI, as the two official examples do). And `refresh-time`,
//! a tool for the app only (`visibility: ["app"]`).
//!
//! Not here: serving the HTML to a browser (a host does that).

use serde_json::{json, Value};

/// The UI resource's URI, the same in every `--app` server.
pub const APP_URI: &str = "ui://get-time/mcp-app.html";
/// The MCP Apps HTML profile.
pub const APP_MIME: &str = "text/html;profile=mcp-app";
/// The tool the UI belongs to.
pub const APP_TOOL: &str = "get-time";
/// A tool only the app calls (`_meta.ui.visibility: ["app"]`), as
/// `server-pdf`'s page loader is.
pub const APP_ONLY_TOOL: &str = "refresh-time";

/// The tool's definition.
pub(crate) fn tool() -> Value {
    json!({
        "name": APP_TOOL,
        "description": "The current time, with an app that shows it.",
        "inputSchema": {"type": "object", "properties": {}},
        "_meta": {"ui": {"resourceUri": APP_URI}, "ui/resourceUri": APP_URI}
    })
}

/// The app-only tool's definition.
pub(crate) fn app_only_tool() -> Value {
    json!({
        "name": APP_ONLY_TOOL,
        "description": "The time again, for the app's refresh button.",
        "inputSchema": {"type": "object", "properties": {}},
        "_meta": {"ui": {"resourceUri": APP_URI, "visibility": ["app"]}}
    })
}

/// The listed UI resource.
pub(crate) fn resource() -> Value {
    json!({"uri": APP_URI, "name": "get-time app", "mimeType": APP_MIME})
}

/// The UI resource's HTML.
pub fn html(name: &str) -> String {
    format!(
        "<!doctype html><html><head><title>get-time</title></head><body data-server=\"{name}\"><p>get-time app of {name}</p></body></html>"
    )
}

/// `resources/read` of [`APP_URI`].
pub(crate) fn read(name: &str) -> Value {
    json!({"contents": [{"uri": APP_URI, "mimeType": APP_MIME, "text": html(name)}]})
}

/// `tools/call` of [`APP_TOOL`]: the time, a link to the app, and the UI
/// reference again in the result's `_meta`.
pub(crate) fn call(name: &str) -> Value {
    json!({
        "content": [
            {"type": "text", "text": format!("12:00 at {name}")},
            {"type": "resource_link", "uri": APP_URI, "name": "get-time app", "mimeType": APP_MIME}
        ],
        "structuredContent": {"time": "12:00", "server": name},
        "_meta": {"ui": {"resourceUri": APP_URI}}
    })
}
