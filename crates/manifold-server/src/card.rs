//! The MCP server card of each endpoint (SEP-2127, "MCP Server Cards", the
//! draft of 2026-01-21 as it stands: `$schema` v1), fetched before a client
//! connects: what the endpoint is, where, over which transport and protocol
//! revisions, how it authenticates (with the protected resource metadata URL),
//! and the capabilities and extensions the caller-independent catalogue offers.
//!
//! | request | card |
//! |---|---|
//! | `GET /.well-known/mcp/server-card` | the default endpoint's |
//! | `GET /.well-known/mcp/server-card/<endpoint path without its first />` | that endpoint's |
//! | `GET <endpoint path>/server-card` | that endpoint's (the later drafts' place) |
//!
//! Who may reach it: anyone who reaches the listener, like the protected
//! resource metadata (a card is public by design; `[server] server_card =
//! false` turns it off, 404). What it must never hold: upstream URLs,
//! commands, headers or names, and tools, prompts or resources (they depend
//! on the caller's `[[policy]]` view; `listChanged: true` says so).
//!
//! Invariants: `Content-Type: application/json`, `Access-Control-Allow-Origin:
//! *`, `Cache-Control: public, max-age=300` and a strong `ETag` of the body
//! (`If-None-Match` gets 304); the body depends only on the configuration, the
//! upstreams' declared capabilities and the address the card is fetched at.
//!
//! Not here: the protected resource metadata (`front::auth`).

use bytes::Bytes;
use http::{HeaderMap, Response, StatusCode};
use serde_json::{json, Value};
use sha2::Digest;

use crate::front::sse::{self, Body};
use crate::state::endpoints::Endpoint;
use crate::state::Gateway;

/// The well-known place of the default endpoint's card.
pub const WELL_KNOWN: &str = "/.well-known/mcp/server-card";
/// What an endpoint's own card path ends with.
pub const SUFFIX: &str = "/server-card";
/// The schema the card follows.
pub const SCHEMA: &str =
    "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json";
/// How long a card may be cached.
const MAX_AGE: &str = "public, max-age=300";
/// The longest `description`.
const MAX_DESCRIPTION: usize = 100;

/// The endpoint whose card `path` asks for, when the card is on.
pub(crate) fn card_of(gw: &Gateway, path: &str) -> Option<std::sync::Arc<Endpoint>> {
    // Every GET passes here: the path first, the configuration after.
    if !path.starts_with(WELL_KNOWN) && !path.ends_with(SUFFIX) {
        return None;
    }
    if !gw.cfg().server.server_card {
        return None;
    }
    let live = gw.live();
    let endpoints = live.endpoints.all();
    if path == WELL_KNOWN {
        return Some(live.endpoints.default_endpoint().clone());
    }
    if let Some(rest) = path
        .strip_prefix(WELL_KNOWN)
        .and_then(|r| r.strip_prefix('/'))
    {
        return endpoints
            .iter()
            .find(|e| e.path.trim_start_matches('/') == rest)
            .cloned();
    }
    let own = path.strip_suffix(SUFFIX)?;
    endpoints.iter().find(|e| &*e.path == own).cloned()
}

/// The card of `endpoint`, as fetched with `headers`.
pub(crate) fn serve(gw: &Gateway, headers: &HeaderMap, endpoint: &Endpoint) -> Response<Body> {
    let body = card(gw, headers, endpoint).to_string();
    let etag = format!(
        "\"{}\"",
        hex::encode(&sha2::Sha256::digest(body.as_bytes())[..16])
    );
    let matched = headers
        .get(http::header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "*" || v.split(',').any(|t| t.trim() == etag));
    let b = Response::builder()
        .header(http::header::ETAG, &etag)
        .header(http::header::CACHE_CONTROL, MAX_AGE)
        .header(http::header::ACCESS_CONTROL_ALLOW_ORIGIN, "*")
        .header(http::header::ACCESS_CONTROL_ALLOW_METHODS, "GET")
        .header(http::header::ACCESS_CONTROL_ALLOW_HEADERS, "Content-Type");
    let r = if matched {
        b.status(StatusCode::NOT_MODIFIED).body(sse::empty())
    } else {
        b.status(StatusCode::OK)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(sse::full(Bytes::from(body)))
    };
    r.unwrap_or_else(|_| Response::new(sse::empty()))
}

/// The reverse-DNS namespace of `host` (`mcp.example.com` → `com.example.mcp`);
/// an address or a single label is `local.manifold`.
fn namespace(host: &str) -> String {
    let host = host
        .trim_start_matches('[')
        .split(']')
        .next()
        .unwrap_or(host);
    let host = host
        .rsplit_once(':')
        .filter(|(h, p)| !h.contains(':') && p.parse::<u16>().is_ok())
        .map_or(host, |(h, _)| h);
    let labels: Vec<&str> = host.split('.').filter(|l| !l.is_empty()).collect();
    let ok = |l: &&str| l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    if labels.len() < 2 || host.parse::<std::net::IpAddr>().is_ok() || !labels.iter().all(ok) {
        return "local.manifold".into();
    }
    labels
        .iter()
        .rev()
        .copied()
        .collect::<Vec<_>>()
        .join(".")
        .to_ascii_lowercase()
}

/// The card's JSON.
fn card(gw: &Gateway, headers: &HeaderMap, endpoint: &Endpoint) -> Value {
    let cfg = gw.cfg();
    let host = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_string);
    let base = match (&cfg.server.public_url, &host) {
        (Some(u), _) => u.clone(),
        (None, Some(h)) => format!(
            "{}://{h}",
            if gw.started.server.tls.is_some() {
                "https"
            } else {
                "http"
            }
        ),
        (None, None) => gw.public_base().unwrap_or_default(),
    };
    let host_part = base
        .split_once("://")
        .map_or(base.as_str(), |(_, r)| r)
        .split('/')
        .next()
        .unwrap_or("");
    let leaf = endpoint.path.trim_matches('/').replace('/', "-");
    let leaf = if leaf.is_empty() {
        "mcp".to_string()
    } else {
        leaf
    };
    let name = format!("{}/manifold-{leaf}", namespace(host_part));
    let mut description = if endpoint.is_default() {
        "MCP gateway: one endpoint in front of many MCP servers".to_string()
    } else {
        format!("MCP gateway endpoint {}", endpoint.path)
    };
    description.truncate(MAX_DESCRIPTION);
    let versions: Vec<&str> = manifold_protocol::version::STATELESS_SUPPORTED
        .iter()
        .chain(manifold_protocol::version::SESSION_SUPPORTED)
        .copied()
        .collect();
    let access = gw.access(&endpoint.path, None);
    let capabilities = crate::handlers::surface::capabilities_for(gw, &access, true);
    let mut remote = json!({
        "type": "streamable-http",
        "url": format!("{base}{}", endpoint.path),
        "supportedProtocolVersions": versions,
    });
    let mut meta = serde_json::Map::new();
    let live = gw.live();
    if let Some(auth) = &live.auth {
        let anonymous = auth.settings().allow_anonymous;
        let mut schemes = vec!["bearer"];
        if !auth.settings().jwt.is_empty() || !auth.settings().introspection.is_empty() {
            schemes.push("oauth2");
        }
        remote["authentication"] = json!({"required": !anonymous, "schemes": schemes});
        remote["headers"] = json!([{
            "name": "Authorization",
            "description": "Bearer token: an access token of this gateway's authorization server, or an API key",
            "isRequired": !anonymous,
            "isSecret": true,
        }]);
        meta.insert(
            "io.modelcontextprotocol/protectedResourceMetadata".into(),
            json!(crate::front::auth::metadata_url(gw, headers, endpoint)),
        );
    }
    let mut card = json!({
        "$schema": SCHEMA,
        "name": name,
        "version": env!("CARGO_PKG_VERSION"),
        "title": "Manifold",
        "description": description,
        "websiteUrl": base,
        "remotes": [remote],
        "capabilities": capabilities,
    });
    if let Some(i) = endpoint.instructions.as_deref() {
        meta.insert("dev.manifold/instructions".into(), json!(i));
    }
    if !meta.is_empty() {
        card["_meta"] = Value::Object(meta);
    }
    card
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_are_reverse_dns_of_the_host() {
        for (host, want) in [
            ("mcp.example.com", "com.example.mcp"),
            ("mcp.example.com:8443", "com.example.mcp"),
            ("127.0.0.1:8080", "local.manifold"),
            ("[::1]:8080", "local.manifold"),
            ("localhost:8080", "local.manifold"),
            ("Gateway.Corp.Example", "example.corp.gateway"),
        ] {
            assert_eq!(super::namespace(host), want, "{host}");
        }
    }
}
