//! From an upstream's URL (and its 401/403 challenge) to its authorization
//! server: protected resource metadata (RFC 9728), then authorization server
//! metadata (RFC 8414, then OpenID Connect discovery), with the 2025-03-26
//! fallbacks when the upstream publishes no resource metadata.
//!
//! Invariants: well-known URIs are tried in the order the specification
//! gives, path-based first, and the root only after a miss; a resource
//! metadata document naming another resource than the upstream is refused
//! (a server may not send Manifold's token elsewhere); an issuer is used only
//! with metadata that names the same issuer; a pinned issuer ([`Pins`]) is
//! the only one used, its metadata read from it, and an upstream naming
//! others is refused; a running gateway reads resource metadata only on the
//! upstream's own origin; the token endpoint is on the issuer's origin
//! unless the configuration names it.
//!
//! Not here: registration and the flows (`login`, `source`).

use serde_json::Value;

use crate::error::CredentialError;
use crate::http::{send, Answer};
use http::Method;

/// The parameters of a `Bearer` challenge (`WWW-Authenticate`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Challenge {
    pub resource_metadata: Option<String>,
    pub scope: Option<String>,
    pub error: Option<String>,
}

/// The `Bearer` challenge in a `WWW-Authenticate` value, if there is one.
pub fn parse_challenge(value: &str) -> Option<Challenge> {
    let rest = value.trim();
    let (scheme, params) = rest.split_once(' ').unwrap_or((rest, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut c = Challenge::default();
    let mut s = params;
    loop {
        s = s.trim_start_matches([' ', ',']);
        let Some((k, after)) = s.split_once('=') else {
            break;
        };
        let k = k.trim().to_ascii_lowercase();
        let after = after.trim_start();
        let (v, next) = if let Some(q) = after.strip_prefix('"') {
            let mut out = String::new();
            let mut chars = q.char_indices();
            let mut end = q.len();
            while let Some((i, ch)) = chars.next() {
                match ch {
                    '\\' => {
                        if let Some((_, e)) = chars.next() {
                            out.push(e);
                        }
                    }
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    _ => out.push(ch),
                }
            }
            (out, &q[end.min(q.len())..])
        } else {
            let end = after.find(',').unwrap_or(after.len());
            (after[..end].trim().to_string(), &after[end..])
        };
        match k.as_str() {
            "resource_metadata" => c.resource_metadata = Some(v),
            "scope" => c.scope = Some(v),
            "error" => c.error = Some(v),
            _ => {}
        }
        s = next;
    }
    Some(c)
}

/// What a client needs of an authorization server.
#[derive(Debug, Clone, Default)]
pub(crate) struct ServerMetadata {
    pub issuer: Option<String>,
    pub authorization_endpoint: String,
    pub token_endpoint: String,
    pub registration_endpoint: Option<String>,
    pub auth_methods: Vec<String>,
    /// `None`: the server published no metadata (2025-03-26 fallback).
    pub pkce_methods: Option<Vec<String>>,
    pub cimd_supported: bool,
    pub iss_parameter: bool,
}

/// Where an upstream's tokens come from.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The `resource` to ask tokens for.
    pub resource: String,
    pub server: ServerMetadata,
    pub resource_scopes: Option<Vec<String>>,
    /// The authorization server the resource metadata names (the upstream's
    /// origin without it).
    pub authorization_server: String,
}

fn strings(v: &Value) -> Option<Vec<String>> {
    v.as_array().map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect()
    })
}

/// `scheme://authority` and the path (without a trailing `/`) of `url`.
fn split(url: &str) -> Result<(String, String), CredentialError> {
    let u = url::Url::parse(url).map_err(|e| {
        CredentialError::Server(format!(
            "{}: not a URL: {e}",
            manifold_foundation::redact::url(url)
        ))
    })?;
    let origin = u.origin().ascii_serialization();
    let path = u.path().trim_end_matches('/').to_string();
    Ok((origin, path))
}

/// The authorization servers a resource metadata document names (without
/// a trailing `/`); `None` when it cannot be read.
pub(crate) async fn authorization_servers(
    c: &crate::http::Client,
    metadata_url: &str,
) -> Result<Option<Vec<String>>, CredentialError> {
    Ok(get(c, metadata_url).await?.map(|p| servers(&p)))
}

fn servers(prm: &Value) -> Vec<String> {
    prm["authorization_servers"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(|s| s.trim_end_matches('/').to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// The resource metadata URL a challenge names, if the client may read it:
/// any for `manifold login` (a person sees the issuer it leads to), only on
/// the upstream's own origin for a running gateway.
pub(crate) fn metadata_url<'a>(
    c: &crate::http::Client,
    upstream: &str,
    challenge: Option<&'a Challenge>,
) -> Option<&'a str> {
    let u = challenge?.resource_metadata.as_deref()?;
    if c.is_attended() || crate::http::origin(u) == crate::http::origin(upstream) {
        return Some(u);
    }
    tracing::warn!(
        upstream,
        resource_metadata = u,
        "ignoring a challenge's resource metadata on another origin than the upstream's"
    );
    None
}

/// What the configuration pins of an upstream's authorization server.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Pins<'a> {
    /// `auth.issuer`.
    pub issuer: Option<&'a str>,
    /// `auth.token_endpoint`.
    pub token_endpoint: Option<&'a str>,
}

async fn get(c: &crate::http::Client, url: &str) -> Result<Option<Value>, CredentialError> {
    let a: Answer = send(c, Method::GET, url, &[], None).await?;
    if !a.status.is_success() {
        return Ok(None);
    }
    a.json(url).map(Some)
}

/// Whether the resource metadata's `resource` is the upstream (or a prefix
/// of its path on the same origin).
fn same_resource(resource: &str, upstream: &str) -> bool {
    let (Ok((ro, rp)), Ok((uo, up))) = (split(resource), split(upstream)) else {
        return false;
    };
    ro == uo && (up == rp || up.starts_with(&format!("{rp}/")) || rp.is_empty())
}

pub(crate) async fn discover(
    c: &crate::http::Client,
    upstream: &str,
    challenge: Option<&Challenge>,
    pins: Pins<'_>,
) -> Result<Discovered, CredentialError> {
    let (origin, path) = split(upstream)?;
    // Protected resource metadata: from the challenge, else path-based, else root.
    let mut candidates = Vec::new();
    if let Some(u) = metadata_url(c, upstream, challenge) {
        candidates.push(u.to_string());
    } else {
        if !path.is_empty() {
            candidates.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    }
    let mut prm = None;
    for u in &candidates {
        if let Some(v) = get(c, u).await? {
            prm = Some(v);
            break;
        }
    }
    let pinned = pins.issuer.map(|i| i.trim_end_matches('/').to_string());
    let (resource, issuer, resource_scopes) = match &prm {
        Some(p) => {
            let resource = p["resource"].as_str().unwrap_or(upstream).to_string();
            if !same_resource(&resource, upstream) {
                return Err(CredentialError::Refused(format!(
                    "the upstream's resource metadata names another resource ({resource}, not {upstream}); refusing to ask for a token for it"
                )));
            }
            let named = servers(p);
            let issuer = match &pinned {
                Some(i) if named.is_empty() || named.contains(i) => i.clone(),
                Some(i) => {
                    return Err(CredentialError::Refused(format!(
                        "the upstream names the authorization server {}, but `auth.issuer` pins {i}; nothing is sent to the one it names (change `auth.issuer` if the upstream really moved)",
                        named.join(", ")
                    )))
                }
                None => named.first().cloned().ok_or_else(|| {
                    CredentialError::Server(
                        "the resource metadata names no authorization server".into(),
                    )
                })?,
            };
            (resource, issuer, strings(&p["scopes_supported"]))
        }
        // 2025-03-26: the MCP server's origin is the authorization server.
        None => (
            upstream.to_string(),
            pinned.clone().unwrap_or(origin.clone()),
            None,
        ),
    };
    let checked = prm.is_some() || pinned.is_some();
    let (io, ip) = split(&issuer)?;
    let urls: Vec<String> = if ip.is_empty() {
        vec![
            format!("{io}/.well-known/oauth-authorization-server"),
            format!("{io}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{io}/.well-known/oauth-authorization-server{ip}"),
            format!("{io}/.well-known/openid-configuration{ip}"),
            format!("{io}{ip}/.well-known/openid-configuration"),
        ]
    };
    let mut meta = None;
    for u in &urls {
        if let Some(v) = get(c, u).await? {
            meta = Some(v);
            break;
        }
    }
    let server = match meta {
        Some(m) => {
            // RFC 8414: metadata names its issuer, kept as written (the
            // redirect's `iss` is compared with it byte for byte); without
            // one, RFC 9207's mix-up check could not be made, so it is refused.
            let raw = m["issuer"].as_str().map(str::to_string).ok_or_else(|| {
                CredentialError::Refused(
                    "the authorization server metadata names no issuer (RFC 8414)".into(),
                )
            })?;
            if checked && raw.trim_end_matches('/') != issuer {
                return Err(CredentialError::Refused(format!(
                    "the authorization server metadata names issuer {raw:?}, not {issuer}"
                )));
            }
            let named = Some(raw);
            let endpoint = |k: &str| {
                m[k].as_str().map(str::to_string).ok_or_else(|| {
                    CredentialError::Server(format!(
                        "the authorization server metadata has no `{k}`"
                    ))
                })
            };
            let token_endpoint = match pins.token_endpoint {
                Some(t) => t.to_string(),
                None => endpoint("token_endpoint")?,
            };
            ServerMetadata {
                issuer: named,
                // Only `manifold login` uses it, and says when it is missing.
                authorization_endpoint: m["authorization_endpoint"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                token_endpoint,
                registration_endpoint: m["registration_endpoint"].as_str().map(str::to_string),
                auth_methods: strings(&m["token_endpoint_auth_methods_supported"])
                    .unwrap_or_else(|| vec!["client_secret_basic".into()]),
                pkce_methods: Some(
                    strings(&m["code_challenge_methods_supported"]).unwrap_or_default(),
                ),
                cimd_supported: m["client_id_metadata_document_supported"] == true,
                iss_parameter: m["authorization_response_iss_parameter_supported"] == true,
            }
        }
        // A pinned issuer without metadata: usable with an explicit token endpoint.
        None if pinned.is_some() => match pins.token_endpoint {
            Some(t) => ServerMetadata {
                issuer: pins.issuer.map(str::to_string),
                token_endpoint: t.to_string(),
                auth_methods: vec!["client_secret_basic".into(), "client_secret_post".into()],
                ..ServerMetadata::default()
            },
            None => {
                return Err(CredentialError::Server(format!(
                    "no authorization server metadata for the pinned issuer {issuer} (tried {}); set `auth.token_endpoint` if it publishes none",
                    urls.join(", ")
                )))
            }
        },
        None if prm.is_none() => ServerMetadata {
            issuer: None,
            authorization_endpoint: format!("{origin}/authorize"),
            token_endpoint: format!("{origin}/token"),
            registration_endpoint: Some(format!("{origin}/register")),
            auth_methods: vec![
                "client_secret_basic".into(),
                "client_secret_post".into(),
                "none".into(),
            ],
            ..ServerMetadata::default()
        },
        None => {
            return Err(CredentialError::Server(format!(
                "no authorization server metadata for {issuer} (tried {})",
                urls.join(", ")
            )))
        }
    };
    // The secret and callers' tokens go to the token endpoint: the issuer's
    // own origin, unless the configuration names another.
    if pins.token_endpoint.is_none()
        && crate::http::origin(&server.token_endpoint) != crate::http::origin(&issuer)
    {
        return Err(CredentialError::Refused(format!(
            "the metadata of {issuer} names a token endpoint on another origin ({}); not sending credentials there unless `auth.token_endpoint` names it",
            server.token_endpoint
        )));
    }
    Ok(Discovered {
        resource,
        server,
        resource_scopes,
        authorization_server: issuer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_parsed_with_quotes_and_escapes() {
        let c = parse_challenge(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp", error_description="say \"hi\", twice""#,
        )
        .expect("bearer");
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(
            parse_challenge("Bearer").expect("bare"),
            Challenge::default()
        );
        assert_eq!(parse_challenge("Basic realm=\"x\""), None);
        let t = parse_challenge("bearer error=invalid_token,scope=x").expect("tokens");
        assert_eq!(t.error.as_deref(), Some("invalid_token"));
        assert_eq!(t.scope.as_deref(), Some("x"));
    }

    #[test]
    fn a_resource_must_be_the_upstream_or_contain_it() {
        assert!(same_resource("http://a:1/mcp", "http://a:1/mcp"));
        assert!(same_resource("http://a:1/mcp/", "http://a:1/mcp"));
        assert!(same_resource("http://a:1", "http://a:1/mcp"));
        assert!(!same_resource(
            "https://evil.example.com/mcp",
            "http://a:1/mcp"
        ));
        assert!(!same_resource("http://a:1/other", "http://a:1/mcp"));
        assert!(!same_resource("http://a:1/mc", "http://a:1/mcp"));
    }
}
