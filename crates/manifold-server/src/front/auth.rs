//! Authentication at the HTTP front door (`[auth]`): the caller's credentials
//! become an `Identity` before anything else about the request is read, and the
//! refusals follow the MCP authorization specification — 401 with
//! `WWW-Authenticate: Bearer resource_metadata="…"` (and `error`,
//! `error_description` when credentials were presented), 403 with
//! `error="insufficient_scope"` and the `scope` needed, 503 with `Retry-After`
//! when the identity provider could not be asked — with the protected
//! resource metadata (RFC 9728) served at its well-known URIs so clients can
//! find the authorization server.
//!
//! Invariants: the `Authorization` header is read here and nowhere else (it
//! never reaches an upstream: upstream requests are built from configuration);
//! a refusal never echoes the credential.
//!
//! Not here: verifying tokens (manifold-policy), binding sessions to their
//! principal (`pipeline/admit.rs`).

use std::sync::Arc;

use http::{HeaderMap, HeaderValue, Response, StatusCode};
use manifold_policy::{AuthError, Identity};
use serde_json::json;

use super::sse::{self, Body};
use crate::state::endpoints::Endpoint;
use crate::state::Gateway;

/// The well-known path of the protected resource metadata (RFC 9728 §3).
pub(crate) const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The endpoint whose metadata `path` is: the bare well-known URI is the
/// default endpoint's; the well-known URI with an endpoint's path appended
/// (what RFC 9728 clients try first) is that endpoint's. `None` without
/// `[auth]` or for any other path.
pub(crate) fn metadata_of(gw: &Gateway, headers: &HeaderMap, path: &str) -> Option<Arc<Endpoint>> {
    let live = gw.live();
    live.auth.as_ref()?;
    if path == METADATA_PATH {
        return Some(live.endpoints.default_endpoint().clone());
    }
    let suffix = path.strip_prefix(METADATA_PATH)?;
    let endpoints = live.endpoints.all();
    // An endpoint's own resource path first, then the endpoint's path (a
    // virtual endpoint's resource may be the gateway's).
    endpoints
        .iter()
        .find(|e| split(&resource(gw, headers, e)).1 == suffix)
        .or_else(|| endpoints.iter().find(|e| &*e.path == suffix))
        .cloned()
}

/// The resource URI of `endpoint`: an `[[endpoint]]`'s own `resource` if
/// set; else `auth.resource` if set, else the URL the client used
/// (`http://<Host><server.path>`) — the gateway's resource, whose tokens
/// every endpoint accepts, and a path prefix of every endpoint's URL (which
/// is what clients check, RFC 9728 §3.3 as the MCP SDKs apply it).
fn resource(gw: &Gateway, headers: &HeaderMap, endpoint: &Endpoint) -> String {
    let Some(auth) = gw.live().auth.clone() else {
        return String::new();
    };
    if let Some(own) = &endpoint.resource {
        return own.clone();
    }
    let s = auth.settings();
    if s.resource_explicit {
        return s.resource.clone();
    }
    // The TLS in force (a reload cannot turn it on or off).
    let scheme = if gw.started.server.tls.is_some() {
        "https"
    } else {
        "http"
    };
    match headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
    {
        Some(host) => format!("{scheme}://{host}{}", gw.cfg().server.path),
        None => s.resource.clone(),
    }
}

/// `scheme://authority` and the path of a URL.
fn split(url: &str) -> (&str, &str) {
    let origin_end = url
        .split_once("://")
        .map(|(scheme, rest)| scheme.len() + 3 + rest.find('/').unwrap_or(rest.len()))
        .unwrap_or(url.len());
    url.split_at(origin_end)
}

/// The absolute URL of the metadata: the resource's origin, the well-known
/// path, then the resource's path.
pub(crate) fn metadata_url(gw: &Gateway, headers: &HeaderMap, endpoint: &Endpoint) -> String {
    let resource = resource(gw, headers, endpoint);
    let (origin, path) = split(&resource);
    if endpoint.is_default() || endpoint.resource.is_some() {
        return format!("{origin}{METADATA_PATH}{path}");
    }
    // A virtual endpoint without its own resource: its metadata is at its own
    // path-suffixed URL (and names the gateway's resource).
    format!("{origin}{METADATA_PATH}{}", endpoint.path)
}

/// The protected resource metadata document.
pub(crate) fn metadata(gw: &Gateway, headers: &HeaderMap, endpoint: &Endpoint) -> Response<Body> {
    let Some(auth) = gw.live().auth.clone() else {
        return empty(StatusCode::NOT_FOUND);
    };
    let s = auth.settings();
    let servers: Vec<&str> = s.jwt.iter().map(|j| j.issuer.as_str()).collect();
    let mut doc = json!({
        "resource": resource(gw, headers, endpoint),
        "authorization_servers": servers,
        "bearer_methods_supported": ["header"],
        "resource_name": "Manifold",
    });
    if !s.scopes_supported.is_empty() {
        doc["scopes_supported"] = json!(s.scopes_supported);
    }
    Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, "application/json")
        .header(http::header::CACHE_CONTROL, "max-age=300")
        .body(sse::full(doc.to_string().into_bytes()))
        .unwrap_or_else(|_| empty(StatusCode::INTERNAL_SERVER_ERROR))
}

/// The caller, or the refusal to send: a bearer token (with `[auth]`) when
/// the request carries one, else the connection's verified client certificate
/// (`certified`), else what `[auth]` says of a request without credentials.
/// `Ok(None)`: anonymous, with neither `[auth]` nor a certificate.
pub(crate) async fn authenticate(
    gw: &Gateway,
    headers: &HeaderMap,
    certified: Option<Arc<Identity>>,
    endpoint: &Endpoint,
    peer: std::net::IpAddr,
) -> Result<Option<Arc<Identity>>, Response<Body>> {
    let presented = headers.contains_key(http::header::AUTHORIZATION);
    let Some(auth) = gw
        .live()
        .auth
        .clone()
        .filter(|_| presented || certified.is_none())
    else {
        return Ok(certified);
    };
    let header = match headers.get(http::header::AUTHORIZATION) {
        None => None,
        Some(v) => match v.to_str() {
            Ok(s) => Some(s),
            Err(_) => return Err(challenge(gw, headers, &AuthError::Malformed, endpoint)),
        },
    };
    match auth
        .authenticate_from(header, endpoint.resource.as_deref(), Some(peer))
        .await
    {
        Ok(id) => Ok(Some(id)),
        Err(e) => {
            // Credentials that were presented and refused are worth an operator's
            // eye (within a budget); a client that simply sent none is routine.
            if !matches!(e, AuthError::Missing) {
                if let Some(suppressed) = gw.auth_refusals.allow() {
                    tracing::info!(error = %e, suppressed, "request refused at authentication");
                }
            }
            Err(challenge(gw, headers, &e, endpoint))
        }
    }
}

/// How long a caller refused because its identity provider could not be asked
/// is told to wait (`Retry-After`): the introspection bound refills within a
/// second, a failed answer is kept a few (`manifold_policy::identity::FAILURE_TTL`).
pub(crate) const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 1;

/// 401 or 403 with the `WWW-Authenticate` challenge and an OAuth-style body;
/// 503 with `Retry-After` when the identity provider could not be asked (the
/// token was not found wanting, so no challenge tells the client to drop it).
fn challenge(
    gw: &Gateway,
    headers: &HeaderMap,
    e: &AuthError,
    endpoint: &Endpoint,
) -> Response<Body> {
    if let AuthError::Unavailable(_) = e {
        let body = json!({
            "error": "temporarily_unavailable",
            "error_description": e.to_string(),
        });
        return Response::builder()
            .status(e.http_status())
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::RETRY_AFTER, UNAVAILABLE_RETRY_AFTER_SECS)
            .body(sse::full(body.to_string().into_bytes()))
            .unwrap_or_else(|_| empty(StatusCode::INTERNAL_SERVER_ERROR));
    }
    let mut params = vec![format!(
        "resource_metadata=\"{}\"",
        metadata_url(gw, headers, endpoint)
    )];
    if let Some(code) = e.bearer_error() {
        params.push(format!("error=\"{code}\""));
        params.push(format!("error_description=\"{}\"", quoted(&e.to_string())));
    }
    let needed = match e {
        AuthError::InsufficientScope(missing) => missing.clone(),
        _ => gw
            .live()
            .auth
            .as_ref()
            .map(|a| a.settings().required_scopes.clone())
            .unwrap_or_default(),
    };
    if !needed.is_empty() {
        params.push(format!("scope=\"{}\"", quoted(&needed.join(" "))));
    }
    let challenge = format!("Bearer {}", params.join(", "));
    let body = json!({
        "error": e.bearer_error().unwrap_or("unauthorized"),
        "error_description": e.to_string(),
    });
    let mut r = Response::builder()
        .status(e.http_status())
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(sse::full(body.to_string().into_bytes()))
        .unwrap_or_else(|_| empty(StatusCode::INTERNAL_SERVER_ERROR));
    if let Ok(v) = HeaderValue::from_str(&challenge) {
        r.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
    }
    r
}

/// A value fit for a quoted-string: no quotes or backslashes, printable ASCII.
fn quoted(s: &str) -> String {
    s.chars()
        .map(|c| match c {
            '"' | '\\' => '\'',
            c if c.is_ascii_graphic() || c == ' ' => c,
            _ => '?',
        })
        .collect()
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(sse::empty());
    *r.status_mut() = status;
    r
}

#[cfg(test)]
mod tests {
    use super::quoted;

    #[test]
    fn challenge_values_cannot_break_out_of_their_quotes() {
        assert_eq!(quoted(r#"a "b" \c"#), "a 'b' 'c");
        assert_eq!(quoted("line\nbreak é"), "line?break ?");
    }
}
