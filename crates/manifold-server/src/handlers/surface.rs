//! What Manifold answers itself about the merged surface: `initialize` (the
//! session era), `server/discover` (2026-07-28), `ping`, and the merged lists
//! (`tools/list`, `prompts/list`, `resources/list`, `resources/templates/list`,
//! and the Skills extension's `skills/list`) served from the pre-serialized
//! catalog snapshot.
//!
//! Invariants: no upstream is asked anything here; the same upstream state gives
//! byte-identical list pages; 2026-07-28 results carry `resultType` and, for lists
//! and discovery, `ttlMs` and `cacheScope`.
//!
//! Lists are the caller's `[[policy]]` view (`state::views`): one shared
//! snapshot per distinct view, so per-caller lists stay pre-serialized.

use manifold_protocol::{jsonrpc, results, version};
use manifold_upstream::Upstream;
use serde_json::{json, Map, Value};

use crate::era::Era;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::Request;
use crate::state::sessions::{Full, Opening};
use crate::state::Gateway;
use manifold_protocol::methods::{self as m, meta};

/// Manifold's `serverInfo`.
pub const SERVER_NAME: &str = "manifold";
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The longest clients may cache Manifold's lists and discovery result. The lists
/// change only on `list_changed`, which listeners hear at once; the bound keeps a
/// client that does not listen from holding a stale list for long. A ready stateless
/// upstream whose lists Manifold refetches sooner (its `ttlMs`) shortens it: see
/// [`list_ttl_ms`].
pub const LIST_TTL_MS: u64 = 60_000;

/// The `ttlMs` of Manifold's lists: [`LIST_TTL_MS`], or the shortest time a ready
/// upstream's lists are kept before Manifold refetches them, if shorter. A
/// client's cached list then lives no longer than Manifold's own copy.
pub(crate) fn list_ttl_ms(gw: &Gateway) -> u64 {
    gw.upstreams()
        .iter()
        .filter_map(Upstream::list_ttl)
        .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
        .fold(LIST_TTL_MS, u64::min)
}

/// A result answering the request.
fn result(x: &Request, result: &[u8]) -> Reply {
    Reply::ok(jsonrpc::response_bytes_from_json(&x.rpc_id, result))
}

/// `ping`: an empty result.
pub(crate) fn ping(x: &Request) -> Result<Reply, Refusal> {
    Ok(result(x, b"{}"))
}

/// One page of a merged list, pre-serialized; 2026-07-28 pages carry cache hints.
pub(crate) fn list(x: &Request, params: &Map<String, Value>) -> Result<Reply, Refusal> {
    let cursor = match params.get("cursor") {
        None | Some(Value::Null) => None,
        Some(Value::String(c)) => Some(c.as_str()),
        Some(_) => {
            return Err(Refusal::InvalidParams(
                "Invalid cursor: it must be a string".into(),
            ))
        }
    };
    if x.method == m::TOOLS_LIST && x.access_endpoint().is_some_and(|e| e.searches()) {
        let page = super::discovery::list(x, cursor)?;
        return Ok(list_reply(x, &page));
    }
    let access = x.access();
    if x.method == m::SKILLS_LIST && !skills_offered(&x.gw, &access) {
        return Err(Refusal::MethodNotFound(format!(
            "{}: no upstream behind this endpoint declares io.modelcontextprotocol/skills",
            x.method
        )));
    }
    let catalog = access.catalog;
    let page = match x.method.as_str() {
        m::TOOLS_LIST => catalog.tools.page(cursor),
        m::SKILLS_LIST => catalog.skills.page(cursor),
        m::PROMPTS_LIST => catalog.prompts.page(cursor),
        m::RESOURCES_LIST => catalog.resources.resources.page(cursor),
        _ => catalog.resources.templates.page(cursor),
    }
    .map_err(|e| Refusal::InvalidParams(e.to_string()))?;
    Ok(list_reply(x, &page))
}

/// Whether an upstream the caller's view reaches declares Skills (what
/// makes `skills/list` a method here, as the capabilities say).
fn skills_offered(gw: &Gateway, access: &crate::state::views::Access) -> bool {
    gw.upstreams().iter().any(|u| {
        access.shows_upstream(u.name())
            && u.status()
                .facts
                .is_some_and(|f| manifold_protocol::extensions::declares_skills(&f.capabilities))
    })
}

/// A list page as the era wants it.
fn list_reply(x: &Request, page: &[u8]) -> Reply {
    match x.era {
        Era::Session => result(x, page),
        // Private when `[[policy]]` gives callers different views: a shared
        // cache must not hand one caller's list to another.
        Era::Stateless => {
            let scope = if x.gw.policy().varies_by_caller() {
                "private"
            } else {
                "public"
            };
            // A session's expanded list is its own; on a search endpoint the
            // list is the same for every caller of a view, like any other.
            result(
                x,
                &results::with_cache_hints(page, list_ttl_ms(&x.gw), scope),
            )
        }
    }
}

/// `initialize`: negotiate, mint a session, answer with the merged capabilities.
pub(crate) fn initialize(x: &Request, params: &Map<String, Value>) -> Result<Reply, Refusal> {
    let gw = &x.gw;
    let Some(requested) = params.get("protocolVersion").and_then(Value::as_str) else {
        return Err(Refusal::InvalidParams(
            "initialize needs params.protocolVersion (a string)".into(),
        ));
    };
    let negotiated = version::negotiate(requested);
    let capabilities = params
        .get("capabilities")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let client_info = params.get("clientInfo").cloned().unwrap_or(Value::Null);
    // Both are kept for the session's life: a client cannot park megabytes here.
    let limit = gw.cfg().limits.max_client_info_bytes;
    for (what, v) in [
        ("clientInfo", &client_info),
        ("capabilities", &Value::Object(capabilities.clone())),
    ] {
        let size = serde_json::to_vec(v).map_or(0, |b| b.len());
        if size > limit {
            return Err(Refusal::InvalidParams(format!(
                "initialize params.{what} is {size} bytes; at most {limit} are accepted (limits.max_client_info_bytes)"
            )));
        }
    }
    let opening = Opening {
        protocol_version: negotiated.to_string(),
        client_info: client_info.clone(),
        capabilities,
        peer: x.arrival.peer,
        owner: x.principal.session_owner(),
        viewer: x.principal.identity(),
        endpoint: x.arrival.endpoint.clone(),
        keep_alive: matches!(x.arrival.front, crate::request::Front::Stdio { .. }),
        expires: None,
    };
    // With `[cluster]`, the id carries the session's state to every replica.
    let mut opening = opening;
    let sealed = gw.sealer.as_ref().and_then(|s| {
        let facts = crate::state::sealed::SessionFacts {
            protocol_version: opening.protocol_version.clone(),
            client_info: opening.client_info.clone(),
            capabilities: opening.capabilities.clone(),
            owner: opening.owner.clone(),
            expires: manifold_foundation::time::unix_now()
                + crate::state::sealed::SEALED_SESSION_MAX_AGE.as_secs(),
            endpoint: (*x.arrival.endpoint != *gw.default_endpoint())
                .then(|| x.arrival.endpoint.to_string()),
        };
        let id = s.seal(&facts);
        if id.is_some() {
            opening.expires = Some(facts.expires);
        }
        if id.is_none() {
            tracing::warn!(
                "session state over {} bytes: its id is not sealed, so it is valid on this replica only",
                crate::state::sealed::MAX_SEALED_BYTES
            );
        }
        id
    });
    let session =
        gw.tables
            .sessions
            .create_with_id(opening, sealed)
            .map_err(|full| match full {
                Full::Peer => Refusal::TooManySessionsFromPeer {
                    limit: gw.cfg().limits.max_sessions_per_peer,
                },
                Full::Total | Full::NoRandomness => Refusal::TooManySessions {
                    limit: gw.cfg().limits.max_sessions,
                },
            })?;
    tracing::info!(session = %session.short_id(), client = %client_info, version = negotiated, "session started");
    let mut out = Map::new();
    out.insert("protocolVersion".into(), Value::from(negotiated));
    out.insert(
        "capabilities".into(),
        capabilities_for(gw, &x.access(), false),
    );
    out.insert(
        "serverInfo".into(),
        json!({"name": SERVER_NAME, "version": SERVER_VERSION}),
    );
    if let Some(text) = merged_instructions(gw, &x.access()) {
        out.insert("instructions".into(), Value::from(text));
    }
    let bytes =
        jsonrpc::response_bytes_from_json(&x.rpc_id, Value::Object(out).to_string().as_bytes());
    Ok(Reply::Message {
        status: http::StatusCode::OK,
        bytes: bytes.into(),
        session: Some(session.id.clone()),
        refused: false,
        retry_after: None,
    })
}

/// `server/discover`: the revisions Manifold speaks, the merged capabilities and
/// instructions, and how long they may be cached.
pub(crate) fn discover(x: &Request) -> Result<Reply, Refusal> {
    let gw = &x.gw;
    let mut out = Map::new();
    out.insert("resultType".into(), json!("complete"));
    let supported: Vec<&str> = version::STATELESS_SUPPORTED
        .iter()
        .chain(version::SESSION_SUPPORTED)
        .copied()
        .collect();
    out.insert("supportedVersions".into(), json!(supported));
    // In this era `resources.subscribe` promises `resourceSubscriptions` on a
    // listen, which Manifold honours for every URI an upstream can subscribe to.
    out.insert(
        "capabilities".into(),
        capabilities_for(gw, &x.access(), true),
    );
    if let Some(text) = merged_instructions(gw, &x.access()) {
        out.insert("instructions".into(), Value::from(text));
    }
    out.insert(
        "_meta".into(),
        json!({meta::SERVER_INFO: {"name": SERVER_NAME, "version": SERVER_VERSION}}),
    );
    out.insert("ttlMs".into(), json!(list_ttl_ms(gw)));
    out.insert("cacheScope".into(), json!("public"));
    Ok(result(x, Value::Object(out).to_string().as_bytes()))
}

/// The union of what the ready upstreams offer. Tools and prompts are always
/// offered (an empty list is a valid answer, and an upstream may join later);
/// Manifold itself emits every `list_changed`, so `listChanged` is true.
/// The extensions the caller's upstreams declare are relayed
/// (`manifold_protocol::extensions::relayed`): MCP Apps' in both eras, Tasks
/// only in 2026-07-28 (`stateless`; SEP-2663: undefined before).
pub(crate) fn capabilities_for(
    gw: &Gateway,
    access: &crate::state::views::Access,
    stateless: bool,
) -> Value {
    // Only upstreams the caller's view holds something of shape what it is
    // told the gateway can do.
    let upstream_caps: Vec<Map<String, Value>> = gw
        .upstreams()
        .iter()
        .filter(|u| access.shows_upstream(u.name()))
        .filter_map(|u| u.status().facts.map(|f| f.capabilities.clone()))
        .collect();
    let any = |name: &str| upstream_caps.iter().any(|c| c.contains_key(name));
    let mut caps = Map::new();
    caps.insert("tools".into(), json!({"listChanged": true}));
    caps.insert("prompts".into(), json!({"listChanged": true}));
    if any("resources") {
        let subscribe = upstream_caps.iter().any(|c| {
            c.get("resources")
                .and_then(|r| r.get("subscribe"))
                .and_then(Value::as_bool)
                == Some(true)
        });
        caps.insert(
            "resources".into(),
            json!({"subscribe": subscribe, "listChanged": true}),
        );
    }
    if any("completions") {
        caps.insert("completions".into(), json!({}));
    }
    if any("logging") {
        caps.insert("logging".into(), json!({}));
    }
    // The extensions an upstream the caller's view holds something of
    // declares and Manifold relays (MCP Apps in both eras; Tasks in the
    // 2026-07-28 era only, never as the 2025-11-25 `tasks` capability).
    let extensions = manifold_protocol::extensions::relayed(upstream_caps.iter(), stateless);
    if !extensions.is_empty() {
        caps.insert("extensions".into(), Value::Object(extensions));
    }
    Value::Object(caps)
}

/// An `[[endpoint]]`'s own `instructions`, else one heading per upstream
/// that gave instructions, in upstream order.
fn merged_instructions(gw: &Gateway, access: &crate::state::views::Access) -> Option<String> {
    if let Some(own) = access
        .endpoint
        .as_ref()
        .and_then(|e| e.instructions.clone())
    {
        return Some(own);
    }
    let judging = gw.cfg().integrity.enabled();
    let parts: Vec<String> = gw
        .upstreams()
        .iter()
        // An upstream the caller's view holds nothing of is not named to it.
        .filter(|u| access.shows_upstream(u.name()))
        .filter_map(|u| {
            // Under [integrity], only text judged and not held.
            let text = if judging {
                gw.integrity.instructions_to_serve(u.name())?
            } else {
                u.status().facts?.instructions?
            };
            let text = text.trim().to_string();
            (!text.is_empty()).then(|| format!("## {}\n{}", u.name(), text))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}
