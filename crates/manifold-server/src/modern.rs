//! The 2026-07-28 (stateless) era on the downstream side: a request that carries
//! `params._meta["io.modelcontextprotocol/protocolVersion"]` is served on its own,
//! with no session, next to the legacy sessions on the same endpoint.
//!
//! Phases, in order, each answering bad input with the spec's code and status:
//! 1. version: unsupported → 400 + -32022 with `supported` and `requested`;
//! 2. `MCP-Protocol-Version` header equal to the `_meta` version → else 400 + -32020;
//! 3. `_meta` `clientCapabilities` present (an object) → else 400 + -32602;
//! 4. `Mcp-Method` equal to the method; `Mcp-Name` equal to `params.name`/`uri`
//!    for `tools/call`, `prompts/get`, `resources/read`; every `Mcp-Param-*` of the
//!    exposed tool equal to its argument (after base64-sentinel decoding; integers
//!    compared numerically), present exactly when the argument is → else 400 + -32020;
//! 5. legacy-only methods (`initialize`, `ping`, `logging/setLevel`,
//!    `resources/subscribe`, `resources/unsubscribe`) → 404 + -32601;
//! 6. route: `server/discover`, lists (with `ttlMs`/`cacheScope`), forwarded calls
//!    through a stand-in session (see `DownSession::ephemeral`), and
//!    `subscriptions/listen`.
//!
//! Every result carries `resultType`. Closing a response stream cancels the call.
//!
//! Server→client requests a legacy upstream makes before answering become an
//! `InputRequiredResult` (see `mrtr`).
//!
//! `subscriptions/listen` streams live in `listen`.

use http::{HeaderMap, Response, StatusCode};
use manifold_catalog::Kind;
use manifold_protocol::headers::{decode_header_value, header_matches_value};
use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, version, ErrorCode, RequestId, RpcError};
use serde_json::{json, Map, Value};
use std::borrow::Cow;
use std::sync::Arc;

use crate::body::Body;
use crate::http::{json_response, rpc_error};
use crate::pipeline::header;
use crate::session::DownSession;
use crate::Gateway;
use manifold_upstream::Upstream;

/// Revisions served statelessly.
pub const MODERN_SUPPORTED: &[&str] = version::MODERN_SUPPORTED;
/// The longest clients may cache Manifold's lists and discovery result. The lists
/// change only on `list_changed`, which listeners hear at once; the bound keeps a
/// client that does not listen from holding a stale list for long. A ready modern
/// upstream whose lists Manifold refetches sooner (its `ttlMs`) shortens it: see
/// [`list_ttl_ms`].
pub const LIST_TTL_MS: u64 = 60_000;

/// The `ttlMs` of Manifold's lists: [`LIST_TTL_MS`], or the shortest time a ready
/// upstream's lists are kept before Manifold refetches them, if shorter. A
/// client's cached list then lives no longer than Manifold's own copy.
pub(crate) fn list_ttl_ms(gw: &Gateway) -> u64 {
    gw.upstreams
        .iter()
        .filter_map(Upstream::list_ttl)
        .map(|t| u64::try_from(t.as_millis()).unwrap_or(u64::MAX))
        .fold(LIST_TTL_MS, u64::min)
}

use m::meta::{
    CLIENT_CAPABILITIES as META_CAPS, CLIENT_INFO as META_CLIENT, LOG_LEVEL as META_LOG_LEVEL,
    PROTOCOL_VERSION as META_VERSION, SERVER_INFO as META_SERVER,
};

const LEGACY_ONLY: &[&str] = &[
    m::INITIALIZE,
    m::PING,
    m::LOGGING_SET_LEVEL,
    m::RESOURCES_SUBSCRIBE,
    m::RESOURCES_UNSUBSCRIBE,
];

fn meta(msg: &Map<String, Value>) -> Option<&Map<String, Value>> {
    jsonrpc::params(msg)?.get("_meta")?.as_object()
}

/// Whether a request speaks the stateless era: it carries the `_meta` version, or
/// its `MCP-Protocol-Version` header names a stateless revision (then a missing
/// `_meta` is that era's -32602, not a legacy request).
pub(crate) fn is_modern(headers: &HeaderMap, msg: &Map<String, Value>) -> bool {
    meta(msg).is_some_and(|m| m.contains_key(META_VERSION))
        || header(headers, m::HEADER_PROTOCOL_VERSION)
            .is_some_and(|v| MODERN_SUPPORTED.contains(&v))
}

/// A `resources/read` result: `resultType` plus cache hints. A read may differ by
/// caller and Manifold cannot know how long it stays valid: not cached, private.
pub(crate) fn with_read_hints(raw: &str) -> String {
    let typed = with_result_type(raw);
    let Some(rest) = typed.strip_prefix("{\"resultType\":\"complete\"") else {
        return typed.into_owned();
    };
    if raw.contains("\"ttlMs\"") {
        return typed.into_owned();
    }
    format!("{{\"resultType\":\"complete\",\"ttlMs\":0,\"cacheScope\":\"private\"{rest}")
}

/// `raw` (a result object) with `"resultType":"complete"` first, unless it has one.
pub(crate) fn with_result_type(raw: &str) -> Cow<'_, str> {
    let trimmed = raw.trim_start();
    let Some(rest) = trimmed.strip_prefix('{') else {
        return Cow::Borrowed(raw);
    };
    if raw.contains("\"resultType\"")
        && serde_json::from_str::<Map<String, Value>>(raw)
            .map(|m| m.contains_key("resultType"))
            .unwrap_or(false)
    {
        return Cow::Borrowed(raw);
    }
    let sep = if rest.trim_start().starts_with('}') {
        ""
    } else {
        ","
    };
    Cow::Owned(format!("{{\"resultType\":\"complete\"{sep}{rest}"))
}

fn bad(id: &RequestId, code: ErrorCode, message: String) -> Response<Body> {
    rpc_error(
        StatusCode::BAD_REQUEST,
        Some(id),
        &RpcError::new(code, message),
    )
}

fn mismatch(id: &RequestId, message: String) -> Response<Body> {
    bad(
        id,
        ErrorCode::HEADER_MISMATCH,
        format!("Header mismatch: {message}"),
    )
}

/// Phases 1–5; the validated request's stand-in session.
fn validate(
    gw: &Gateway,
    headers: &HeaderMap,
    id: &RequestId,
    method: &str,
    msg: &Map<String, Value>,
) -> Result<Arc<DownSession>, Response<Body>> {
    let meta = meta(msg).cloned().unwrap_or_default();
    let Some(requested) = meta.get(META_VERSION).and_then(Value::as_str) else {
        return Err(bad(
            id,
            ErrorCode::INVALID_PARAMS,
            format!("params._meta[\"{META_VERSION}\"] is required (a string)"),
        ));
    };
    // The header is compared first: a body that disagrees with its header is a
    // mismatch whatever the version says.
    match header(headers, m::HEADER_PROTOCOL_VERSION) {
        Some(h) if h == requested => {}
        Some(h) => {
            return Err(mismatch(
                id,
                format!("MCP-Protocol-Version `{h}` does not match _meta `{requested}`"),
            ))
        }
        None => {
            return Err(mismatch(
                id,
                "the MCP-Protocol-Version header is required".into(),
            ))
        }
    }
    if !MODERN_SUPPORTED.contains(&requested) {
        let supported: Vec<&str> = MODERN_SUPPORTED
            .iter()
            .chain(version::LEGACY_SUPPORTED)
            .copied()
            .collect();
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            Some(id),
            &RpcError::new(
                ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
                format!("Unsupported protocol version `{requested}`"),
            )
            .with_data(json!({"supported": supported, "requested": requested})),
        ));
    }
    let Some(caps) = meta.get(META_CAPS).and_then(Value::as_object).cloned() else {
        return Err(bad(
            id,
            ErrorCode::INVALID_PARAMS,
            format!("params._meta[\"{META_CAPS}\"] is required (an object; {{}} for none)"),
        ));
    };
    match header(headers, m::HEADER_METHOD) {
        Some(h) if h == method => {}
        Some(h) => {
            return Err(mismatch(
                id,
                format!("Mcp-Method `{h}` does not match the body's method `{method}`"),
            ))
        }
        None => return Err(mismatch(id, "the Mcp-Method header is required".into())),
    }
    if LEGACY_ONLY.contains(&method) {
        return Err(rpc_error(
            StatusCode::NOT_FOUND,
            Some(id),
            &RpcError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {method} does not exist in protocol {requested}"),
            ),
        ));
    }
    check_name_headers(gw, headers, id, method, msg)?;
    let level = match meta.get(META_LOG_LEVEL).and_then(Value::as_str) {
        Some(l) => crate::logging::level_index(l).ok_or_else(|| {
            bad(
                id,
                ErrorCode::INVALID_PARAMS,
                format!("Invalid logLevel `{l}` in params._meta"),
            )
        })?,
        None => crate::logging::LEVEL_OFF,
    };
    let client = meta.get(META_CLIENT).cloned().unwrap_or(Value::Null);
    let digest = crate::mrtr::params_digest(method, jsonrpc::params(msg).unwrap_or(&Map::new()));
    Ok(DownSession::ephemeral(
        requested, client, caps, level, digest,
    ))
}

/// `Mcp-Name` and `Mcp-Param-*` against the body.
fn check_name_headers(
    gw: &Gateway,
    headers: &HeaderMap,
    id: &RequestId,
    method: &str,
    msg: &Map<String, Value>,
) -> Result<(), Response<Body>> {
    let key = match method {
        m::TOOLS_CALL | m::PROMPTS_GET => "name",
        m::RESOURCES_READ => "uri",
        _ => return Ok(()),
    };
    let params = jsonrpc::params(msg);
    let body_name = params.and_then(|p| p.get(key)).and_then(Value::as_str);
    let Some(raw) = header(headers, m::HEADER_NAME) else {
        return Err(mismatch(
            id,
            format!("the Mcp-Name header is required for {method}"),
        ));
    };
    let decoded = decode_header_value(raw)
        .map_err(|e| mismatch(id, format!("Mcp-Name is not a valid value: {e}")))?;
    if Some(decoded.as_str()) != body_name {
        return Err(mismatch(
            id,
            format!(
                "Mcp-Name `{decoded}` does not match the body's {key} `{}`",
                body_name.unwrap_or("")
            ),
        ));
    }
    if method != m::TOOLS_CALL {
        return Ok(());
    }
    let catalog = gw.catalog.load();
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
                return Err(mismatch(
                    id,
                    format!(
                        "Mcp-Param-{} is required: the argument is in the body",
                        p.name
                    ),
                ))
            }
            (Some(_), None) => {
                return Err(mismatch(
                    id,
                    format!("Mcp-Param-{} is sent but the argument is absent", p.name),
                ))
            }
            (Some(Err(_)), _) => {
                return Err(mismatch(
                    id,
                    format!("Mcp-Param-{} has invalid characters", p.name),
                ))
            }
            (Some(Ok(h)), Some(v)) => {
                let decoded = decode_header_value(h.trim()).map_err(|e| {
                    mismatch(
                        id,
                        format!("Mcp-Param-{} is not a valid value: {e}", p.name),
                    )
                })?;
                if !header_matches_value(&decoded, &p.kind, v) {
                    return Err(mismatch(
                        id,
                        format!(
                            "Mcp-Param-{} `{decoded}` does not match the argument {v}",
                            p.name
                        ),
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Adds `resultType` (and cache hints) to a pre-serialized result object.
fn complete_with_cache(page: &[u8], ttl_ms: u64, scope: &str) -> Vec<u8> {
    let text = String::from_utf8_lossy(page);
    let rest = text.trim_start().strip_prefix('{').unwrap_or("}");
    let sep = if rest.trim_start().starts_with('}') {
        ""
    } else {
        ","
    };
    format!(
        "{{\"resultType\":\"complete\",\"ttlMs\":{ttl_ms},\"cacheScope\":\"{scope}\"{sep}{rest}"
    )
    .into_bytes()
}

/// Serves one stateless request.
pub(crate) async fn handle(
    gw: Arc<Gateway>,
    headers: &HeaderMap,
    id: RequestId,
    method: &str,
    mut msg: Map<String, Value>,
    accepts_sse: bool,
    meta_info: &crate::RequestMeta,
) -> Response<Body> {
    let session = match validate(&gw, headers, &id, method, &msg) {
        Ok(s) => s,
        Err(r) => {
            gw.metrics.request(method, "refused", meta_info.bytes);
            return r;
        }
    };
    let ok = |result: Vec<u8>| {
        gw.metrics.request(method, "ok", meta_info.bytes);
        json_response(
            StatusCode::OK,
            jsonrpc::response_bytes_from_json(&id, &result),
            None,
        )
    };
    match method {
        m::SERVER_DISCOVER => ok(discover(&gw)),
        m::TOOLS_LIST | m::PROMPTS_LIST | m::RESOURCES_LIST | m::RESOURCES_TEMPLATES_LIST => {
            let params = jsonrpc::params(&msg);
            let cursor = params.and_then(|p| p.get("cursor")).and_then(Value::as_str);
            match crate::pipeline::list_page(&gw, method, cursor) {
                // The same for every caller: Manifold has no per-caller views yet.
                Ok(page) => ok(complete_with_cache(&page, list_ttl_ms(&gw), "public")),
                Err(e) => rpc_error(
                    StatusCode::OK,
                    Some(&id),
                    &RpcError::invalid_params(e.to_string()),
                ),
            }
        }
        m::SUBSCRIPTIONS_LISTEN => crate::listen::listen(&gw, &id, &msg).await,
        m::TOOLS_CALL | m::PROMPTS_GET | m::RESOURCES_READ | m::COMPLETION_COMPLETE => {
            // A retry with `requestState` resumes a call held for client input,
            // unless the target upstream is modern: then the state is its own and
            // goes to it byte-exact.
            let empty = Map::new();
            let params = jsonrpc::params(&msg).unwrap_or(&empty);
            let retry = params.contains_key("requestState");
            if retry && !target(&gw, method, params).is_some_and(|u| u.is_modern()) {
                if let Some(r) = crate::mrtr::resume(&gw, &id, method, params).await {
                    return r;
                }
            }
            // Forwarded calls: the legacy pipeline, with the stand-in session. The
            // `_meta` keys of this era are for Manifold, not the legacy upstream.
            if let Some(Value::Object(p)) = msg.get_mut("params") {
                if let Some(Value::Object(meta)) = p.get_mut("_meta") {
                    meta.retain(|k, _| !k.starts_with("io.modelcontextprotocol/"));
                    if meta.is_empty() {
                        p.remove("_meta");
                    }
                }
            }
            crate::pipeline::route(&gw, &session, id, method, msg, accepts_sse, meta_info).await
        }
        _ => {
            gw.metrics.request(method, "refused", meta_info.bytes);
            rpc_error(
                StatusCode::NOT_FOUND,
                Some(&id),
                &RpcError::method_not_found(method),
            )
        }
    }
}

/// The upstream a `tools/call`, `prompts/get` or `resources/read` goes to.
fn target(gw: &Gateway, method: &str, params: &Map<String, Value>) -> Option<Upstream> {
    let name = |k: &str| params.get(k).and_then(Value::as_str);
    let kind = match method {
        m::TOOLS_CALL => manifold_catalog::Kind::Tools,
        m::PROMPTS_GET => manifold_catalog::Kind::Prompts,
        m::RESOURCES_READ => return crate::resources::owner(gw, name("uri")?),
        _ => return None,
    };
    let catalog = gw.catalog.load();
    let entry = catalog.list(kind).get(name("name")?)?;
    gw.by_name.get(&entry.upstream).cloned()
}

/// The `server/discover` result.
fn discover(gw: &Gateway) -> Vec<u8> {
    let mut result = Map::new();
    result.insert("resultType".into(), json!("complete"));
    let supported: Vec<&str> = MODERN_SUPPORTED
        .iter()
        .chain(version::LEGACY_SUPPORTED)
        .copied()
        .collect();
    result.insert("supportedVersions".into(), json!(supported));
    // In this era `resources.subscribe` promises `resourceSubscriptions` on a
    // listen, which `listen` honours for every URI an upstream can subscribe to.
    let caps = crate::pipeline::capabilities_for(gw);
    result.insert("capabilities".into(), caps);
    if let Some(text) = crate::pipeline::merged_instructions(gw) {
        result.insert("instructions".into(), Value::from(text));
    }
    result.insert(
        "_meta".into(),
        json!({META_SERVER: {"name": crate::pipeline::SERVER_NAME, "version": crate::pipeline::SERVER_VERSION}}),
    );
    result.insert("ttlMs".into(), json!(list_ttl_ms(gw)));
    result.insert("cacheScope".into(), json!("public"));
    Value::Object(result).to_string().into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn result_type_is_added_once_and_keeps_every_byte() {
        let cases = [
            ("{}", r#"{"resultType":"complete"}"#),
            (r#"{"a":1}"#, r#"{"resultType":"complete","a":1}"#),
            (
                r#"{"x-unknown":{"z":1,"a":2},"content":[]}"#,
                r#"{"resultType":"complete","x-unknown":{"z":1,"a":2},"content":[]}"#,
            ),
            (
                r#"{"resultType":"input_required","a":1}"#,
                r#"{"resultType":"input_required","a":1}"#,
            ),
            (
                r#"{"text":"has \"resultType\" inside"}"#,
                r#"{"resultType":"complete","text":"has \"resultType\" inside"}"#,
            ),
        ];
        for (raw, want) in cases {
            assert_eq!(with_result_type(raw), want, "{raw}");
        }
    }

    #[test]
    fn reads_get_private_uncached_hints() {
        let out = with_read_hints(r#"{"contents":[]}"#);
        assert_eq!(
            out,
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private","contents":[]}"#
        );
        assert_eq!(
            with_read_hints("{}"),
            r#"{"resultType":"complete","ttlMs":0,"cacheScope":"private"}"#
        );
    }

    #[test]
    fn lists_get_cache_hints() {
        let out = complete_with_cache(br#"{"tools":[]}"#, LIST_TTL_MS, "public");
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["resultType"], "complete");
        assert_eq!(v["ttlMs"], LIST_TTL_MS);
        assert_eq!(v["cacheScope"], "public");
        assert_eq!(v["tools"], json!([]));
    }
}
