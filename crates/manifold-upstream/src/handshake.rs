//! The `initialize` handshake and list fetching, the same over every transport.
//!
//! Manifold declares to upstreams the client capabilities it can relay to the
//! calling client (`sampling`, `elicitation`); a client that lacks one gets the
//! request refused on its behalf with a clear error. `roots` is not declared: an
//! upstream may ask for roots outside any call, and there is no single client to ask.

use manifold_protocol::lists::ListSnapshot;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

use crate::supervisor::Session;
use crate::{ServerFacts, UpstreamError};

pub(crate) async fn initialize(session: &Arc<Session>) -> Result<ServerFacts, UpstreamError> {
    let name = session.router.upstream.clone();
    let params = json!({
        "protocolVersion": crate::UPSTREAM_PROTOCOL_VERSION,
        "capabilities": {"sampling": {}, "elicitation": {}},
        "clientInfo": {"name": crate::CLIENT_NAME, "version": crate::CLIENT_VERSION},
    });
    let result = session
        .request(
            manifold_protocol::methods::INITIALIZE,
            params.as_object().cloned(),
        )
        .await?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| UpstreamError::protocol(&name, "initialize result has no protocolVersion"))?
        .to_string();
    if !manifold_protocol::version::is_supported_legacy(&version) {
        return Err(UpstreamError::protocol(
            &name,
            format!("it answered protocol version {version}, which Manifold does not speak"),
        ));
    }
    let _ = session.protocol_version.set(version.clone());
    let facts = ServerFacts {
        protocol_version: version,
        capabilities: result
            .get("capabilities")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        server_info: result.get("serverInfo").cloned().unwrap_or(Value::Null),
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
    };
    let initialized = json!({"jsonrpc": "2.0", "method": manifold_protocol::methods::INITIALIZED});
    session
        .send_message(initialized.to_string().into_bytes())
        .await;
    if matches!(session.link, crate::supervisor::Link::Http(_)) {
        crate::http::start_get_stream(session);
    }
    Ok(facts)
}

/// Fetches every page of every list the upstream declared.
pub(crate) async fn fetch_lists(
    session: &Arc<Session>,
    facts: &ServerFacts,
) -> Result<ListSnapshot, UpstreamError> {
    let mut snap = ListSnapshot::default();
    if facts.capabilities.contains_key("tools") {
        snap.tools = fetch_all(session, manifold_protocol::methods::TOOLS_LIST, "tools").await?;
    }
    if facts.capabilities.contains_key("prompts") {
        snap.prompts =
            fetch_all(session, manifold_protocol::methods::PROMPTS_LIST, "prompts").await?;
    }
    if facts.capabilities.contains_key("resources") {
        use manifold_protocol::methods as m;
        snap.resources = fetch_all(session, m::RESOURCES_LIST, "resources").await?;
        // Templates are optional even for resource servers: a server without them
        // may answer -32601, which must not fail the connection.
        snap.resource_templates =
            match fetch_all(session, m::RESOURCES_TEMPLATES_LIST, "resourceTemplates").await {
                Ok(t) => t,
                Err(e) => {
                    tracing::debug!(upstream = %session.router.upstream, error = %e,
                        "no resource templates");
                    Vec::new()
                }
            };
    }
    Ok(snap)
}

async fn fetch_all(
    session: &Arc<Session>,
    method: &str,
    member: &str,
) -> Result<Vec<Map<String, Value>>, UpstreamError> {
    let name = session.router.upstream.clone();
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    for _ in 0..crate::MAX_LIST_PAGES {
        let params = cursor.as_ref().map(|c| {
            let mut m = Map::new();
            m.insert("cursor".into(), Value::from(c.clone()));
            m
        });
        let mut result = session.request(method, params).await?;
        let page = match result.get_mut(member).map(Value::take) {
            Some(Value::Array(a)) => a,
            _ => {
                return Err(UpstreamError::protocol(
                    &name,
                    format!("{method} result has no `{member}` array"),
                ))
            }
        };
        items.extend(page.into_iter().filter_map(|v| match v {
            Value::Object(m) => Some(m),
            _ => None,
        }));
        match result.get("nextCursor").and_then(Value::as_str) {
            Some(next) => {
                if !seen.insert(next.to_string()) {
                    return Err(UpstreamError::protocol(
                        &name,
                        format!("{method} returned the cursor {next:?} twice (a pagination loop)"),
                    ));
                }
                cursor = Some(next.to_string());
            }
            None => return Ok(items),
        }
    }
    Err(UpstreamError::protocol(
        &name,
        format!(
            "{method} returned more than {} pages",
            crate::MAX_LIST_PAGES
        ),
    ))
}
