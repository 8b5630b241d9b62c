//! The era probe, the `initialize` handshake and list fetching, the same over
//! every transport.
//!
//! Era: unless the config pins one, Manifold first sends `server/discover` the
//! 2026-07-28 way (`_meta` and headers). Only a discover result that lists a
//! stateless revision Manifold speaks makes the upstream stateless; any other answer
//! (an error of any code, an HTTP error, a result of another shape, silence for
//! [`PROBE_TIMEOUT`](crate::limits::PROBE_TIMEOUT)) falls back to `initialize`. A dual-era
//! server commits a stdio connection to the era of its first answer, so nothing is
//! sent after a successful probe but stateless requests.
//!
//! Manifold declares to upstreams the client capabilities it can relay to the
//! calling client (`sampling`, `elicitation`, and the MCP Apps extension,
//! whose UI resources it relays); a client that lacks one gets the
//! request refused on its behalf with a clear error. `roots` is not declared: an
//! upstream may ask for roots outside any call, and there is no single client to ask.

use manifold_protocol::lists::ListSnapshot;
use serde_json::{json, Map, Value};
use std::collections::HashSet;
use std::sync::Arc;

use crate::call::{self, Call};
use crate::connection::Connection;
use crate::message::CallOutcome;
use crate::wire::request_meta;
use crate::{error::UpstreamError, facts::ServerFacts};
use manifold_config::UpstreamProtocol;
use manifold_protocol::methods::{self as m, meta};
use manifold_protocol::version;
use manifold_protocol::ErrorCode;

/// Finds the upstream's era (as configured, or probed) and sets the session up.
pub(crate) async fn establish(
    session: &Arc<Connection>,
    protocol: UpstreamProtocol,
) -> Result<ServerFacts, UpstreamError> {
    match protocol {
        UpstreamProtocol::Session => initialize(session).await,
        UpstreamProtocol::Stateless => match probe(session).await? {
            Ok(facts) => Ok(facts),
            Err(why) => Err(UpstreamError::protocol(
                session.wire.upstream(),
                format!("`protocol = \"2026-07-28\"` is configured, but {why}"),
            )),
        },
        UpstreamProtocol::Auto => match probe(session).await? {
            Ok(facts) => Ok(facts),
            Err(why) => {
                tracing::debug!(upstream = %session.wire.upstream(), %why,
                    "not a 2026-07-28 server; using initialize");
                initialize(session).await
            }
        },
    }
}

/// Sends `server/discover`. `Ok(Ok(facts))`: a 2026-07-28 upstream (the session now
/// speaks 2026-07-28). `Ok(Err(why))`: it is not one. `Err`: it cannot be reached.
///
/// An `UnsupportedProtocolVersionError` (-32022) is a 2026-07-28 answer: the probe is
/// sent once more with a revision from its `supported` list that Manifold speaks.
async fn probe(session: &Arc<Connection>) -> Result<Result<ServerFacts, String>, UpstreamError> {
    let mut asking = version::LATEST_STATELESS;
    for _ in 0..PROBE_ATTEMPTS {
        match discover(session, asking).await? {
            Discovered::Result(result) => return Ok(facts_of(session, &result)),
            // Once more, even with the same revision: a server may refuse a
            // request for a reason it fixes by itself (a restart mid-probe).
            Discovered::Retry(v) => asking = v,
            Discovered::NotStateless(why) => return Ok(Err(why)),
        }
    }
    Ok(Err(
        "server/discover kept refusing every revision Manifold speaks".into(),
    ))
}

/// `server/discover` attempts when the upstream answers -32022.
const PROBE_ATTEMPTS: usize = 2;

enum Discovered {
    Result(Map<String, Value>),
    /// -32022 naming a stateless revision Manifold speaks.
    Retry(&'static str),
    NotStateless(String),
}

async fn discover(session: &Arc<Connection>, asking: &str) -> Result<Discovered, UpstreamError> {
    let mut params = Map::new();
    params.insert("_meta".into(), Value::Object(request_meta(asking, None)));
    let headers = vec![
        (m::HEADER_METHOD.to_string(), m::SERVER_DISCOVER.to_string()),
        (m::HEADER_PROTOCOL_VERSION.to_string(), asking.to_string()),
    ];
    let timeout = session.wire.timeout.min(crate::limits::PROBE_TIMEOUT);
    let mut call = Call::start(
        session,
        m::SERVER_DISCOVER,
        Some(params),
        headers,
        timeout,
        None,
    )
    .await?;
    let raw = match call.outcome().await {
        CallOutcome::Result(raw) => raw,
        CallOutcome::Error(raw) => {
            let err: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            let supported = err
                .pointer("/data/supported")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let ours = version::STATELESS_SUPPORTED
                .iter()
                .find(|v| supported.iter().any(|s| s.as_str() == Some(**v)));
            let code = ErrorCode::of_error(raw.get());
            return Ok(match (code, ours) {
                (Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION), Some(v)) => Discovered::Retry(v),
                _ => Discovered::NotStateless(format!(
                    "server/discover answered the error {}",
                    raw.get()
                )),
            });
        }
        CallOutcome::Failed(e) if e.is_unavailable() => return Err(e),
        CallOutcome::Failed(e) => {
            return Ok(Discovered::NotStateless(format!(
                "server/discover failed: {e}"
            )))
        }
    };
    Ok(
        match serde_json::from_str::<Map<String, Value>>(raw.get()) {
            Ok(result) => Discovered::Result(result),
            Err(_) => {
                Discovered::NotStateless("the server/discover result is not an object".into())
            }
        },
    )
}

/// What a discover result says, if it names a stateless revision Manifold speaks.
fn facts_of(session: &Connection, result: &Map<String, Value>) -> Result<ServerFacts, String> {
    let offered: Vec<&str> = result
        .get("supportedVersions")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(chosen) = version::STATELESS_SUPPORTED
        .iter()
        .find(|v| offered.contains(v))
    else {
        return Err(format!(
            "server/discover offered {offered:?}, no stateless revision Manifold speaks"
        ));
    };
    let _ = session.wire.protocol_version.set(chosen.to_string());
    let server_info = result
        .get("_meta")
        .and_then(|m| m.get(meta::SERVER_INFO))
        .cloned()
        .unwrap_or(Value::Null);
    Ok(ServerFacts {
        protocol_version: chosen.to_string(),
        capabilities: result
            .get("capabilities")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        server_info,
        instructions: result
            .get("instructions")
            .and_then(Value::as_str)
            .map(str::to_string),
    })
}

pub(crate) async fn initialize(session: &Arc<Connection>) -> Result<ServerFacts, UpstreamError> {
    let name = session.wire.upstream().clone();
    let params = json!({
        "protocolVersion": crate::limits::UPSTREAM_PROTOCOL_VERSION,
        "capabilities": {
            "sampling": {},
            "elicitation": {},
            "extensions": manifold_protocol::extensions::declared_to_upstreams(),
        },
        "clientInfo": {"name": crate::limits::CLIENT_NAME, "version": crate::limits::CLIENT_VERSION},
    });
    let result = call::request(session, m::INITIALIZE, params.as_object().cloned()).await?;
    let version = result
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| UpstreamError::protocol(&name, "initialize result has no protocolVersion"))?
        .to_string();
    if !manifold_protocol::version::is_supported_session(&version) {
        return Err(UpstreamError::protocol(
            &name,
            format!("it answered protocol version {version}, which Manifold does not speak"),
        ));
    }
    let _ = session.wire.protocol_version.set(version.clone());
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
    session.initialized().await;
    Ok(facts)
}

/// Fetches every page of every list the upstream declared.
/// The lists, and how long they may be kept: the shortest `ttlMs` a stateless
/// upstream gave (never below [`MIN_LIST_TTL`](crate::limits::MIN_LIST_TTL)); `None` when
/// only `list_changed` ends them.
pub(crate) async fn fetch_lists(
    session: &Arc<Connection>,
    facts: &ServerFacts,
) -> Result<(ListSnapshot, Option<std::time::Duration>), UpstreamError> {
    let mut snap = ListSnapshot::default();
    let mut ttl = Ttl(None);
    if facts.capabilities.contains_key("tools") {
        snap.tools = fetch_all(session, m::TOOLS_LIST, "tools", &mut ttl).await?;
    }
    if facts.capabilities.contains_key("prompts") {
        snap.prompts = fetch_all(session, m::PROMPTS_LIST, "prompts", &mut ttl).await?;
    }
    if facts.capabilities.contains_key("resources") {
        snap.resources = fetch_all(session, m::RESOURCES_LIST, "resources", &mut ttl).await?;
        // Templates are optional even for resource servers: a server without them
        // may answer -32601, which must not fail the connection.
        let templates = fetch_all(
            session,
            m::RESOURCES_TEMPLATES_LIST,
            "resourceTemplates",
            &mut ttl,
        );
        snap.resource_templates = match templates.await {
            Ok(t) => t,
            Err(e) => {
                tracing::debug!(upstream = %session.wire.upstream(), error = %e,
                        "no resource templates");
                Vec::new()
            }
        };
    }
    if manifold_protocol::extensions::declares_skills(&facts.capabilities) {
        // An upstream whose skills cannot be listed still serves its tools:
        // its skills are left out (and reachable by URI), the connection kept.
        snap.skills = match fetch_all(session, m::SKILLS_LIST, "skills", &mut ttl).await {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(upstream = %session.wire.upstream(), error = %e,
                        "it declares io.modelcontextprotocol/skills but skills/list failed; its skills are not listed");
                Vec::new()
            }
        };
    }
    Ok((snap, ttl.0.map(|t| t.max(crate::limits::MIN_LIST_TTL))))
}

/// The shortest `ttlMs` seen across list pages.
struct Ttl(Option<std::time::Duration>);

impl Ttl {
    fn see(&mut self, result: &Value) {
        if let Some(ms) = result.get("ttlMs").and_then(Value::as_u64) {
            let t = std::time::Duration::from_millis(ms);
            self.0 = Some(self.0.map_or(t, |cur| cur.min(t)));
        }
    }
}

async fn fetch_all(
    session: &Arc<Connection>,
    method: &str,
    member: &str,
    ttl: &mut Ttl,
) -> Result<Vec<Map<String, Value>>, UpstreamError> {
    let name = session.wire.upstream().clone();
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    let mut seen = HashSet::new();
    let mut bytes = 0usize;
    for _ in 0..crate::limits::MAX_LIST_PAGES {
        let params = cursor.as_ref().map(|c| {
            let mut m = Map::new();
            m.insert("cursor".into(), Value::from(c.clone()));
            m
        });
        let (mut result, size) = call::request_sized(session, method, params).await?;
        // Counted before anything is kept: a hostile upstream's pages stop at
        // the bound, whatever their number.
        bytes = bytes.saturating_add(size);
        if bytes > session.max_list_bytes {
            return Err(UpstreamError::protocol(
                &name,
                format!(
                    "{method} returned more than {} bytes (limits.max_list_bytes); raise it if this upstream is trusted",
                    session.max_list_bytes
                ),
            ));
        }
        ttl.see(&result);
        let page = match result.get_mut(member).map(Value::take) {
            Some(Value::Array(a)) => a,
            _ => {
                return Err(UpstreamError::protocol(
                    &name,
                    format!("{method} result has no `{member}` array"),
                ))
            }
        };
        for v in page {
            let Value::Object(item) = v else { continue };
            let size = manifold_foundation::json::encoded_len(&item);
            if size > session.max_item_bytes {
                return Err(UpstreamError::protocol(
                    &name,
                    format!(
                        "{method} item `{}` is {size} bytes, over limits.max_item_bytes ({}); raise it if this upstream is trusted",
                        label(&item),
                        session.max_item_bytes
                    ),
                ));
            }
            items.push(item);
        }
        if items.len() > session.max_list_items {
            return Err(UpstreamError::protocol(
                &name,
                format!(
                    "{method} returned more than {} items (limits.max_list_items); raise it if this upstream is trusted",
                    session.max_list_items
                ),
            ));
        }
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
            crate::limits::MAX_LIST_PAGES
        ),
    ))
}

/// How an error names an item: its name, URI or template, shortened and made
/// printable.
fn label(item: &Map<String, Value>) -> String {
    let name = ["name", "uri", "uriTemplate"]
        .iter()
        .find_map(|k| item.get(*k).and_then(Value::as_str))
        .unwrap_or("");
    let short: String = name.chars().take(64).collect();
    manifold_foundation::text::printable(&short).into_owned()
}
