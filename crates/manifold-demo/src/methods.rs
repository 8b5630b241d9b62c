//! The session-era methods (revisions 2024-11-05 to 2025-11-25): `initialize`
//! (negotiating the revision, recording the client's capabilities) and the
//! dispatch of every other method to the tools, prompts, resources,
//! completions and logging, with the MCP Apps and Skills extensions when their
//! flags are on.
//!
//! Invariants: an unknown method is -32601; `tools/list` pages by a decimal
//! offset cursor, and a cursor past the end is -32602; the app's tools come
//! after the last page.
//!
//! Not here: the 2026-07-28 mode (`modern`, which reuses this dispatch), the
//! request's life around it (`request`), the tools themselves (`tools`).

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::codes;
use crate::identity::{
    LATEST_PROTOCOL_VERSION, SERVER_NAME, SERVER_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
use crate::jsonrpc::RpcError;
use crate::resources::{self, README_URI};
use crate::server::DemoServer;
use crate::session::Session;
use crate::transport::CallContext;
use crate::{app, skill, tools};

impl Session {
    pub(crate) fn initialize(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let config = &self.server.config;
        if config.fail_initialize {
            return Err(RpcError::new(
                codes::INTERNAL_ERROR,
                "initialize failed (--fail-initialize)",
            ));
        }
        let version = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(v))
            .unwrap_or(LATEST_PROTOCOL_VERSION);
        *self.client_capabilities.lock() = params.get("capabilities").cloned();
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(version));
        result.insert(
            "capabilities".into(),
            json!({
                "tools": {"listChanged": true},
                "prompts": {"listChanged": false},
                "resources": {"subscribe": true, "listChanged": false},
                "completions": {},
                "logging": {}
            }),
        );
        result.insert(
            "serverInfo".into(),
            json!({"name": SERVER_NAME, "version": SERVER_VERSION}),
        );
        if let Some(text) = config.instructions.as_deref().filter(|t| !t.is_empty()) {
            result.insert("instructions".into(), json!(text));
        }
        if config.app.is_some() {
            result["capabilities"]["extensions"] = json!({
                manifold_protocol::extensions::UI: {"mimeTypes": [app::APP_MIME]}
            });
        }
        if config.skill.is_some() {
            result["capabilities"]["extensions"][manifold_protocol::extensions::SKILLS] =
                skill::extension();
        }
        Ok(Value::Object(result))
    }

    pub(crate) async fn dispatch(
        self: &Arc<Self>,
        method: &str,
        params: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Value, RpcError> {
        if let Some(text) = &self.server.config.skill {
            let lies = self.server.config.skill_digest_lies;
            if let Some(answer) = skill::dispatch(text, lies, method, params) {
                return answer;
            }
        }
        match method {
            "ping" => Ok(json!({})),
            "tools/list" => self.list_tools(params),
            "tools/call" => match &self.server.config.app {
                Some(app)
                    if matches!(
                        params.get("name").and_then(Value::as_str),
                        Some(app::APP_TOOL | app::APP_ONLY_TOOL)
                    ) =>
                {
                    Ok(app::call(app))
                }
                _ => tools::call(self, params, ctx).await,
            },
            "prompts/list" => Ok(json!({"prompts": [{
                "name": "greet",
                "description": "Ask the model to greet someone.",
                "arguments": [{"name": "name", "description": "Who to greet", "required": true}]
            }]})),
            "prompts/get" => get_prompt(params),
            "resources/list" => {
                let mut resources = vec![json!({
                    "uri": README_URI,
                    "name": "readme",
                    "description": self.server.config.readme_description,
                    "mimeType": "text/plain",
                    "x-demo-resource-extra": {"kept": true}
                })];
                if self.server.config.app.is_some() {
                    resources.push(app::resource());
                }
                if self.server.config.skill.is_some() {
                    resources.extend(skill::resources());
                }
                Ok(json!({ "resources": resources }))
            }
            "resources/templates/list" => Ok(resources::templates(self.server.config.docs)),
            "resources/read" => match &self.server.config.app {
                Some(app) if params.get("uri").and_then(Value::as_str) == Some(app::APP_URI) => {
                    Ok(app::read(app))
                }
                _ => resources::read(params, self.server.config.docs),
            },
            "resources/subscribe" | "resources/unsubscribe" => {
                resources::subscription(&self.server, method, params)
            }
            "completion/complete" => resources::complete(params),
            "logging/setLevel" => set_log_level(&self.server, params),
            _ => Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }

    pub(crate) fn list_tools(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        // The cursor is the decimal offset of the first tool of the page.
        let offset = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .parse::<usize>()
                .map_err(|_| RpcError::invalid_params(format!("Invalid cursor: {cursor}")))?,
            Some(_) => return Err(RpcError::invalid_params("Invalid cursor: not a string")),
        };
        let page_size = self.server.config.page_size;
        let (tools, next) = self
            .server
            .tools
            .page(offset, page_size)
            .ok_or_else(|| RpcError::invalid_params(format!("Invalid cursor: {offset}")))?;
        let mut tools = tools;
        if next.is_none() && self.server.config.app.is_some() {
            tools.push(app::tool());
            tools.push(app::app_only_tool());
        }
        let mut result = Map::new();
        result.insert("tools".into(), Value::Array(tools));
        if let Some(next) = next {
            result.insert("nextCursor".into(), json!(next.to_string()));
        }
        Ok(Value::Object(result))
    }
}

fn get_prompt(params: &Map<String, Value>) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    if name != "greet" {
        return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")));
    }
    let who = params
        .get("arguments")
        .and_then(|args| args.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Missing required argument: name"))?;
    Ok(json!({
        "description": "Greeting prompt",
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("Please greet {who}.")}}]
    }))
}

fn set_log_level(server: &DemoServer, params: &Map<String, Value>) -> Result<Value, RpcError> {
    match params.get("level").and_then(Value::as_str) {
        Some(level) if manifold_protocol::logging::LogLevel::parse(level).is_some() => {
            *server.log_level.lock() = Some(level.to_string());
            Ok(json!({}))
        }
        _ => Err(RpcError::invalid_params("Invalid log level")),
    }
}
