//! Phase admit: may this request be served, and for whom? Today it runs the checks
//! each era's transport requires; identity, policy, rate limits, argument
//! validation and confirmation come here next, in that order, after these.
//!
//! Session era, in order:
//! 1. `initialize` needs no session (it makes one); a `server/discover` without a
//!    session is not a session-era request (404 + -32601);
//! 2. everything else belongs to a session: 400 without an id, 404 for an
//!    unknown or ended one, so clients know to re-initialize;
//! 3. `MCP-Protocol-Version`, when present, must name a revision Manifold speaks
//!    (400). A missing header is accepted (the spec: assume the negotiated one).
//!
//! 2026-07-28, in order, each with the spec's code and status:
//! 1. `_meta` protocolVersion present → else 400 + -32602;
//! 2. `MCP-Protocol-Version` header equal to it → else 400 + -32020 (compared
//!    first: a body that disagrees with its header is a mismatch whatever the
//!    version says);
//! 3. the version supported → else 400 + -32022 with `supported` and `requested`;
//! 4. `_meta` clientCapabilities present (an object) → else 400 + -32602;
//! 5. `Mcp-Method` equal to the method → else 400 + -32020;
//! 6. a method of the session era only → 404 + -32601;
//! 7. `Mcp-Name` equal to `params.name`/`uri` for `tools/call`, `prompts/get`,
//!    `resources/read`, to `params.taskId` (the id the client holds) for
//!    `tasks/get`, `tasks/update`, `tasks/cancel` — required, as for the others; every `Mcp-Param-*` of the exposed tool equal to its
//!    argument (after base64-sentinel decoding; integers compared numerically),
//!    present exactly when the argument is → else 400 + -32020;
//! 8. `_meta` logLevel, if any, a level → else 400 + -32602.
//!
//! The header checks (2, 5, 7) apply to the HTTP front door; a front door without
//! headers has nothing to mismatch.
//!
//! Not here: decoding (`decode`), which methods exist (`route`).

use http::HeaderMap;
use manifold_catalog::Kind;
use manifold_protocol::headers::{decode_header_value, header_matches_value};
use manifold_protocol::logging::LogLevel;
use manifold_protocol::methods::{self as m, meta};
use manifold_protocol::{jsonrpc, version};
use serde_json::{Map, Value};
use std::sync::Arc;

use super::decode::meta_of;
use super::route;
use crate::era::Era;
use crate::refusal::Refusal;
use crate::request::{Arrival, Caller, Front, Principal, StatelessCaller};
use crate::state::held_calls::params_digest;
use crate::state::log_levels::LogFilter;
use crate::state::sessions::ClientSession;
use crate::state::Gateway;

/// A request admitted: for whom, acting as whom.
pub(crate) struct Admitted {
    pub caller: Caller,
    pub principal: Principal,
}

/// Admits a request of `era`.
pub(crate) fn request(
    gw: &Gateway,
    arrival: &Arrival,
    era: Era,
    method: &str,
    msg: &Map<String, Value>,
) -> Result<Admitted, Refusal> {
    if let Front::Operator(cancel) = &arrival.front {
        return Ok(Admitted {
            caller: Caller::Operator(cancel.clone()),
            principal: Principal::Operator,
        });
    }
    let principal = Principal::from_identity(arrival.identity.as_ref());
    let caller = match era {
        Era::Session => session_era(gw, arrival, method)?,
        Era::Stateless => stateless(gw, arrival, &principal, method, msg)?,
    };
    Ok(Admitted { caller, principal })
}

fn session_era(gw: &Gateway, arrival: &Arrival, method: &str) -> Result<Caller, Refusal> {
    if method == m::INITIALIZE {
        return Ok(Caller::Initializing);
    }
    if method == m::SERVER_DISCOVER && arrival.front.header(m::HEADER_SESSION_ID).is_none() {
        return Err(Refusal::DiscoverWithoutMeta);
    }
    Ok(Caller::Session(session(gw, arrival)?))
}

/// Finds the session a session-era message belongs to (requests, notifications,
/// responses) and checks its protocol version header.
pub(crate) fn session(gw: &Gateway, arrival: &Arrival) -> Result<Arc<ClientSession>, Refusal> {
    let session = session_of(gw, arrival)?;
    let front = &arrival.front;
    match front.header(m::HEADER_PROTOCOL_VERSION) {
        Some(v) if !version::is_supported_session(v) => {
            Err(Refusal::UnsupportedProtocolHeader(v.to_string()))
        }
        _ => Ok(session),
    }
}

/// The session named by `Mcp-Session-Id`, without the version check: a GET
/// or DELETE carries no message whose revision matters. A session is bound to
/// the principal that opened it: presented by anyone else it is unknown (404,
/// the same answer as for an id that never existed).
pub(crate) fn session_of(gw: &Gateway, arrival: &Arrival) -> Result<Arc<ClientSession>, Refusal> {
    let Some(id) = arrival.front.header(m::HEADER_SESSION_ID) else {
        return Err(Refusal::SessionRequired);
    };
    let principal = Principal::from_identity(arrival.identity.as_ref());
    let session = match gw.tables.sessions.get(id) {
        Some(s) => s,
        None => adopt(gw, arrival, &principal, id)?,
    };
    // An expired sealed session is unknown here too (the idle sweep removes
    // it, and remembers it ended).
    if session
        .expires
        .is_some_and(|e| manifold_foundation::time::unix_now() > e)
    {
        return Err(Refusal::UnknownSession);
    }
    // Bound to its principal and to the endpoint that opened it: presented by
    // anyone else, or on another endpoint, it is unknown.
    if session.owner != principal.session_owner() || session.endpoint != arrival.endpoint {
        return Err(Refusal::UnknownSession);
    }
    session.seen_as(principal.identity());
    session.touch();
    Ok(session)
}

/// A sealed id this replica has not seen (`[cluster]`): the session another
/// replica opened, taken up here. Anything that does not open is unknown.
fn adopt(
    gw: &Gateway,
    arrival: &Arrival,
    principal: &Principal,
    id: &str,
) -> Result<Arc<ClientSession>, Refusal> {
    let sealer = gw.sealer.as_ref().ok_or(Refusal::UnknownSession)?;
    if gw.tables.sessions.has_ended(id) {
        return Err(Refusal::UnknownSession);
    }
    let facts = sealer.open(id).map_err(|why| {
        tracing::debug!(%why, "a session id that does not open");
        Refusal::UnknownSession
    })?;
    // Another principal's id is unknown before anything is created for it.
    let endpoint = facts
        .endpoint
        .as_deref()
        .map_or_else(|| gw.default_endpoint(), std::sync::Arc::from);
    if facts.owner != principal.session_owner() || endpoint != arrival.endpoint {
        return Err(Refusal::UnknownSession);
    }
    let opening = crate::state::sessions::Opening {
        protocol_version: facts.protocol_version,
        client_info: facts.client_info,
        capabilities: facts.capabilities,
        peer: arrival.peer,
        owner: facts.owner,
        viewer: principal.identity(),
        endpoint,
        keep_alive: false,
        expires: Some(facts.expires),
    };
    match gw
        .tables
        .sessions
        .create_with_id(opening, Some(id.to_string()))
    {
        Ok(s) => {
            tracing::info!(session = %s.short_id(), "session opened on another replica taken up");
            Ok(s)
        }
        Err(crate::state::sessions::Full::Peer) => Err(Refusal::TooManySessionsFromPeer {
            limit: gw.cfg().limits.max_sessions_per_peer,
        }),
        Err(_) => Err(Refusal::TooManySessions {
            limit: gw.cfg().limits.max_sessions,
        }),
    }
}

fn stateless(
    gw: &Gateway,
    arrival: &Arrival,
    principal: &Principal,
    method: &str,
    msg: &Map<String, Value>,
) -> Result<Caller, Refusal> {
    let front = &arrival.front;
    let empty = Map::new();
    let meta = meta_of(msg).unwrap_or(&empty);
    let Some(requested) = meta.get(meta::PROTOCOL_VERSION).and_then(Value::as_str) else {
        return Err(Refusal::MetaRequired(format!(
            "params._meta[\"{}\"] is required (a string)",
            meta::PROTOCOL_VERSION
        )));
    };
    let headers = front.headers();
    if headers.is_some() {
        match front.header(m::HEADER_PROTOCOL_VERSION) {
            Some(h) if h == requested => {}
            Some(h) => {
                return Err(Refusal::HeaderMismatch(format!(
                    "MCP-Protocol-Version `{h}` does not match _meta `{requested}`"
                )))
            }
            None => {
                return Err(Refusal::HeaderMismatch(
                    "the MCP-Protocol-Version header is required".into(),
                ))
            }
        }
    }
    if !version::STATELESS_SUPPORTED.contains(&requested) {
        return Err(Refusal::UnsupportedVersion {
            requested: requested.to_string(),
        });
    }
    let Some(caps) = meta
        .get(meta::CLIENT_CAPABILITIES)
        .and_then(Value::as_object)
        .cloned()
    else {
        return Err(Refusal::MetaRequired(format!(
            "params._meta[\"{}\"] is required (an object; {{}} for none)",
            meta::CLIENT_CAPABILITIES
        )));
    };
    if headers.is_some() {
        match front.header(m::HEADER_METHOD) {
            Some(h) if h == method => {}
            Some(h) => {
                return Err(Refusal::HeaderMismatch(format!(
                    "Mcp-Method `{h}` does not match the body's method `{method}`"
                )))
            }
            None => {
                return Err(Refusal::HeaderMismatch(
                    "the Mcp-Method header is required".into(),
                ))
            }
        }
    }
    if route::session_era_only(method) {
        return Err(Refusal::NotInThisRevision {
            method: method.to_string(),
            version: requested.to_string(),
        });
    }
    if let Some(headers) = headers {
        check_name_headers(gw, &arrival.endpoint, principal, headers, method, msg)?;
    }
    let log = match meta.get(meta::LOG_LEVEL).and_then(Value::as_str) {
        Some(l) => LogFilter::AtLeast(
            LogLevel::parse(l).ok_or_else(|| Refusal::InvalidLogLevel(l.to_string()))?,
        ),
        None => LogFilter::Off,
    };
    let client_info = meta.get(meta::CLIENT_INFO).cloned().unwrap_or(Value::Null);
    let digest = params_digest(
        method,
        jsonrpc::params(msg).unwrap_or(&empty),
        &principal.audit_name(),
    );
    Ok(Caller::Stateless(Arc::new(StatelessCaller {
        client_info,
        capabilities: caps,
        log,
        digest,
    })))
}

/// `Mcp-Name` and `Mcp-Param-*` against the body.
fn check_name_headers(
    gw: &Gateway,
    endpoint: &str,
    principal: &Principal,
    headers: &HeaderMap,
    method: &str,
    msg: &Map<String, Value>,
) -> Result<(), Refusal> {
    let mismatch = |m: String| Err(Refusal::HeaderMismatch(m));
    let key = match method {
        m::TOOLS_CALL | m::PROMPTS_GET => "name",
        m::RESOURCES_READ => "uri",
        manifold_protocol::tasks::TASKS_GET
        | manifold_protocol::tasks::TASKS_UPDATE
        | manifold_protocol::tasks::TASKS_CANCEL => "taskId",
        _ => return Ok(()),
    };
    let params = jsonrpc::params(msg);
    let body_name = params.and_then(|p| p.get(key)).and_then(Value::as_str);
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    let Some(raw) = header(m::HEADER_NAME) else {
        return mismatch(format!("the Mcp-Name header is required for {method}"));
    };
    let decoded = match decode_header_value(raw) {
        Ok(d) => d,
        Err(e) => return mismatch(format!("Mcp-Name is not a valid value: {e}")),
    };
    if Some(decoded.as_str()) != body_name {
        return mismatch(format!(
            "Mcp-Name `{decoded}` does not match the body's {key} `{}`",
            body_name.unwrap_or("")
        ));
    }
    if method != m::TOOLS_CALL {
        return Ok(());
    }
    // The caller's view: a tool it may not see is unknown here too, so a
    // header mismatch cannot tell it exists.
    let catalog = gw.access(endpoint, principal.identity().as_deref()).catalog;
    let Some(entry) = catalog.list(Kind::Tools).get(&decoded) else {
        // Unknown tools are refused later, with the usual -32602.
        return Ok(());
    };
    let args = params.and_then(|p| p.get("arguments"));
    for p in &entry.header_params {
        let name = format!("mcp-param-{}", p.name.to_ascii_lowercase());
        let value = p
            .path
            .iter()
            .try_fold(args, |v, k| Some(v?.get(k)))
            .flatten()
            .filter(|v| !v.is_null());
        match (headers.get(&name).map(|h| h.to_str()), value) {
            (None, None) => {}
            (None, Some(_)) => {
                return mismatch(format!(
                    "Mcp-Param-{} is required: the argument is in the body",
                    p.name
                ))
            }
            (Some(_), None) => {
                return mismatch(format!(
                    "Mcp-Param-{} is sent but the argument is absent",
                    p.name
                ))
            }
            (Some(Err(_)), _) => {
                return mismatch(format!("Mcp-Param-{} has invalid characters", p.name))
            }
            (Some(Ok(h)), Some(v)) => {
                let decoded = match decode_header_value(h.trim()) {
                    Ok(d) => d,
                    Err(e) => {
                        return mismatch(format!("Mcp-Param-{} is not a valid value: {e}", p.name))
                    }
                };
                if !header_matches_value(&decoded, &p.kind, v) {
                    return mismatch(format!(
                        "Mcp-Param-{} `{decoded}` does not match the argument {v}",
                        p.name
                    ));
                }
            }
        }
    }
    Ok(())
}
