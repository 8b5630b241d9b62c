//! `manifold login`: the authorization-code flow with PKCE (S256) for one
//! upstream, ending with its tokens in the store.
//!
//! Steps: an unauthenticated probe for the upstream's challenge; discovery;
//! the client's identity (a Client ID Metadata Document URL when the server
//! supports them, a pre-registered id, else dynamic registration); the
//! authorization URL (printed, and opened when asked); the code, received on
//! a loopback redirect (`http://127.0.0.1:<port>/callback`); the token request.
//!
//! Invariants: the authorization server is the pinned `auth.issuer` when the
//! configuration names one, else the one the upstream names, printed for the
//! person running the command and recorded with the tokens; the
//! authorization URL is handed out only when it is `https://` (or `http://`
//! to a loopback host): never `javascript:`, `file:` or plain http to another
//! host; `state` and `iss` (RFC 9207) are checked before the code is
//! used; `resource` (RFC 8707) rides on the authorization and token requests;
//! the loopback listener takes one callback, reads at most
//! [`MAX_CALLBACK_BYTES`], and gives up after [`LOGIN_TIMEOUT`]; scopes are
//! the configured ones, else the challenge's, else the resource's
//! `scopes_supported`, plus any step-up the gateway recorded.
//!
//! Not here: using the tokens (`source`).

use std::collections::BTreeSet;

use base64::Engine;
use http::Method;
use manifold_config::credentials::OAuthClient;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::discovery::{discover, parse_challenge, Discovered, Pins};
use crate::http::{allowed, form, send, Client};
use crate::store::{Record, Store};
use crate::{error::CredentialError, limits::LOGIN_TIMEOUT, pkce::random_token, pkce::s256};
use manifold_foundation::time::unix_now;

/// The most of a redirect request the loopback listener reads.
const MAX_CALLBACK_BYTES: usize = 16 * 1024;

/// Shows a person the issuer and the authorization URL to visit.
pub type Show = Box<dyn Fn(&str, &str) + Send + Sync>;

/// What `manifold login` needs.
pub struct LoginOptions {
    pub upstream: String,
    pub url: String,
    pub client: OAuthClient,
    pub store: Store,
    /// Called with the issuer and the authorization URL for a person (or a
    /// test) to visit.
    pub show: Show,
}

/// Unauthenticated requests to the upstream: its challenge, if it sends one.
/// `server/discover` first (a 2026-07-28 server challenges it), then
/// `initialize` (a session-era server may let only that through unasked).
pub(crate) async fn probe(
    c: &Client,
    url: &str,
) -> Result<Option<crate::discovery::Challenge>, CredentialError> {
    let discover = json!({"jsonrpc": "2.0", "id": 0, "method": "server/discover", "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}});
    let initialize = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "manifold-login", "version": env!("CARGO_PKG_VERSION")}}});
    let probes = [
        (
            discover,
            vec![
                ("mcp-protocol-version", "2026-07-28".to_string()),
                ("mcp-method", "server/discover".to_string()),
            ],
        ),
        (initialize, vec![]),
    ];
    for (body, headers) in probes {
        let a = send(
            c,
            Method::POST,
            url,
            &headers,
            Some(("application/json", body.to_string().into_bytes())),
        )
        .await?;
        if let Some(ch) = a.challenge.as_deref().and_then(parse_challenge) {
            return Ok(Some(ch));
        }
    }
    Ok(None)
}

fn join(scopes: &BTreeSet<String>) -> Option<String> {
    (!scopes.is_empty()).then(|| scopes.iter().cloned().collect::<Vec<_>>().join(" "))
}

/// The scopes to ask for.
pub(crate) fn scopes(
    configured: &[String],
    challenge: Option<&str>,
    d: &Discovered,
    previous: Option<&Record>,
) -> Option<String> {
    let mut s: BTreeSet<String> = if !configured.is_empty() {
        configured.iter().cloned().collect()
    } else if let Some(c) = challenge.filter(|c| !c.trim().is_empty()) {
        c.split_whitespace().map(str::to_string).collect()
    } else {
        d.resource_scopes
            .clone()
            .unwrap_or_default()
            .into_iter()
            .collect()
    };
    if let Some(p) = previous.filter(|p| p.step_up.is_some()) {
        for part in [&p.scope, &p.step_up].into_iter().flatten() {
            s.extend(part.split_whitespace().map(str::to_string));
        }
    }
    join(&s)
}

/// The client Manifold is at this server: id, secret, token endpoint method.
async fn identify(
    c: &Client,
    cfg: &OAuthClient,
    d: &Discovered,
    redirect: &str,
) -> Result<(String, Option<String>, String), CredentialError> {
    let supports = |m: &str| d.server.auth_methods.iter().any(|a| a == m);
    match &cfg.client_id {
        Some(id) if id.starts_with("https://") && d.server.cimd_supported => {
            return Ok((id.clone(), None, "none".into()));
        }
        Some(id) if !id.starts_with("https://") => {
            let method = match &cfg.client_secret {
                Some(_) if supports("client_secret_basic") || !supports("client_secret_post") => {
                    "client_secret_basic"
                }
                Some(_) => "client_secret_post",
                None => "none",
            };
            return Ok((id.clone(), cfg.client_secret.clone(), method.into()));
        }
        _ => {}
    }
    let Some(endpoint) = &d.server.registration_endpoint else {
        return Err(CredentialError::NeedsLogin(
            "the authorization server supports neither Client ID Metadata Documents for this client nor dynamic registration: set `auth.client_id` (and `client_secret`) to a pre-registered client".into(),
        ));
    };
    let method = ["none", "client_secret_basic", "client_secret_post"]
        .into_iter()
        .find(|m| supports(m))
        .unwrap_or("client_secret_basic");
    // A loopback redirect makes Manifold a native client (SEP-837).
    let body = json!({
        "client_name": "Manifold",
        "application_type": "native",
        "redirect_uris": [redirect],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
    });
    let a = send(
        c,
        Method::POST,
        endpoint,
        &[],
        Some(("application/json", body.to_string().into_bytes())),
    )
    .await?;
    let v = a.json("dynamic client registration")?;
    if !a.status.is_success() {
        return Err(CredentialError::Server(format!(
            "dynamic client registration refused (HTTP {}): {}",
            a.status,
            v["error_description"]
                .as_str()
                .or(v["error"].as_str())
                .unwrap_or("")
        )));
    }
    let id = v["client_id"]
        .as_str()
        .ok_or_else(|| CredentialError::Server("the registration gave no client_id".into()))?;
    let secret = v["client_secret"].as_str().map(str::to_string);
    let method = v["token_endpoint_auth_method"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| {
            if secret.is_some() {
                "client_secret_basic".into()
            } else {
                "none".into()
            }
        });
    Ok((id.to_string(), secret, method))
}

/// A token request (`pairs` plus the client's authentication): the record
/// fields it answers with.
pub(crate) async fn token_request(
    c: &Client,
    endpoint: &str,
    client_id: &str,
    secret: Option<&str>,
    method: &str,
    mut pairs: Vec<(&str, String)>,
) -> Result<Value, CredentialError> {
    let mut headers = Vec::new();
    match (method, secret) {
        ("client_secret_basic", Some(s)) => {
            let enc =
                |v: &str| url::form_urlencoded::byte_serialize(v.as_bytes()).collect::<String>();
            let raw = format!("{}:{}", enc(client_id), enc(s));
            headers.push((
                "authorization",
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD.encode(raw)
                ),
            ));
        }
        ("client_secret_post", Some(s)) => {
            pairs.push(("client_id", client_id.to_string()));
            pairs.push(("client_secret", s.to_string()));
        }
        _ => pairs.push(("client_id", client_id.to_string())),
    }
    let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let a = send(c, Method::POST, endpoint, &headers, Some(form(&borrowed))).await?;
    let v = a.json("the token endpoint")?;
    if !a.status.is_success() || v["access_token"].as_str().is_none() {
        let why = format!(
            "the token endpoint refused (HTTP {}): {}",
            a.status,
            v["error_description"]
                .as_str()
                .or(v["error"].as_str())
                .unwrap_or("no access_token")
        );
        // A grant the server refuses needs a person; its outage does not.
        return Err(if a.status.is_client_error() {
            CredentialError::NeedsLogin(why)
        } else {
            CredentialError::Server(why)
        });
    }
    Ok(v)
}

/// Whether a browser may be sent to `d`'s authorization server: it names an
/// authorization endpoint, and supports PKCE S256 (when it says what it
/// supports).
pub(crate) fn can_authorize(d: &crate::discovery::Discovered) -> Result<(), CredentialError> {
    if d.server.authorization_endpoint.is_empty() {
        return Err(CredentialError::Server(format!(
            "the metadata of {} has no `authorization_endpoint`",
            d.authorization_server
        )));
    }
    if let Some(methods) = &d.server.pkce_methods {
        if !methods.iter().any(|m| m == "S256") {
            return Err(CredentialError::Refused(
                "the authorization server does not list PKCE S256 in code_challenge_methods_supported; MCP clients must not authorize without it".into(),
            ));
        }
    }
    Ok(())
}

/// How a client with (or without) `secret` authenticates at a token endpoint
/// that supports `methods`: `none` without a secret, else Basic unless only
/// `client_secret_post` is offered.
pub(crate) fn auth_method(secret: Option<&str>, methods: &[String]) -> &'static str {
    let supports = |m: &str| methods.iter().any(|a| a == m);
    match secret {
        None => "none",
        Some(_) if supports("client_secret_basic") || !supports("client_secret_post") => {
            "client_secret_basic"
        }
        Some(_) => "client_secret_post",
    }
}

/// The redirect's `iss` against the authorization server's issuer, compared
/// exactly, with no normalization (RFC 9207, SEP-2468); a server that
/// promises the parameter (`required`) must send it.
pub(crate) fn check_iss(
    iss: Option<String>,
    issuer: Option<&str>,
    required: bool,
) -> Result<(), CredentialError> {
    match (iss, issuer) {
        (Some(iss), Some(issuer)) if iss != issuer => Err(CredentialError::Refused(format!(
            "the redirect's iss ({iss}) is not the authorization server ({issuer}) (RFC 9207)"
        ))),
        (None, Some(_)) if required => Err(CredentialError::Refused(
            "the authorization server promises an iss parameter and the redirect has none (RFC 9207)".into(),
        )),
        _ => Ok(()),
    }
}

/// Fills a record's token fields from a token response.
pub(crate) fn take_tokens(r: &mut Record, v: &Value, asked_scope: Option<&str>) {
    r.access_token = v["access_token"].as_str().unwrap_or_default().to_string();
    if let Some(rt) = v["refresh_token"].as_str() {
        r.refresh_token = Some(rt.to_string());
    }
    let now = unix_now();
    r.obtained_at = Some(now);
    r.expires_at = v["expires_in"].as_u64().map(|s| now + s);
    r.scope = v["scope"]
        .as_str()
        .map(str::to_string)
        .or_else(|| asked_scope.map(str::to_string))
        .or(r.scope.take());
}

/// How long one connection to the loopback listener may take to send its
/// request (a browser's idle preconnect must not hold up the real redirect).
const CALLBACK_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// Waits for the browser's redirect carrying `state`: its query parameters.
/// A request for another path, or with another `state` (a forged or stale
/// redirect), is answered and ignored.
async fn callback(
    listener: TcpListener,
    state: &str,
) -> Result<Vec<(String, String)>, CredentialError> {
    loop {
        let (mut s, _) = listener
            .accept()
            .await
            .map_err(|e| CredentialError::Server(format!("the loopback redirect: {e}")))?;
        let mut buf = Vec::new();
        let mut chunk = [0u8; 2048];
        let read = async {
            while !buf.windows(4).any(|w| w == b"\r\n\r\n") && buf.len() < MAX_CALLBACK_BYTES {
                match s.read(&mut chunk).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                }
            }
        };
        if tokio::time::timeout(CALLBACK_READ_TIMEOUT, read)
            .await
            .is_err()
        {
            continue;
        }
        let head = String::from_utf8_lossy(&buf);
        let target = head.split_whitespace().nth(1).unwrap_or("").to_string();
        let params: Option<Vec<(String, String)>> = target.strip_prefix("/callback?").map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect()
        });
        let ours = params
            .as_ref()
            .is_some_and(|p| p.iter().any(|(k, v)| k == "state" && v == state));
        let (status, page) = if ours {
            (
                "200 OK",
                "Manifold received the authorization. You can close this window.",
            )
        } else {
            (
                "404 Not Found",
                "Not the authorization Manifold is waiting for.",
            )
        };
        let page = format!("<!doctype html><title>Manifold</title><p>{page}</p>");
        let _ = s
            .write_all(
                format!(
                    "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            )
            .await;
        if let (true, Some(p)) = (ours, params) {
            return Ok(p);
        }
    }
}

/// Whether an authorization URL may be handed to a browser: `https://`, or
/// `http://` to a loopback host.
pub fn browsable(url: &str) -> bool {
    allowed(url)
}

/// Runs the flow and stores the tokens; the record saved.
pub async fn login(o: LoginOptions) -> Result<Record, CredentialError> {
    let c = Client::attended();
    let previous = o.store.load(&o.upstream).ok().flatten();
    let challenge = probe(&c, &o.url).await?;
    let pins = Pins {
        issuer: o.client.issuer.as_deref(),
        token_endpoint: o.client.token_endpoint.as_deref(),
    };
    let d = discover(&c, &o.url, challenge.as_ref(), pins).await?;
    can_authorize(&d)?;
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| CredentialError::Server(format!("cannot listen for the redirect: {e}")))?;
    let port = listener
        .local_addr()
        .map_err(|e| CredentialError::Server(e.to_string()))?
        .port();
    let redirect = format!("http://127.0.0.1:{port}/callback");
    let (client_id, secret, method) = identify(&c, &o.client, &d, &redirect).await?;
    let scope = scopes(
        &o.client.scopes,
        challenge.as_ref().and_then(|c| c.scope.as_deref()),
        &d,
        previous.as_ref(),
    );
    let verifier = random_token()?;
    let state = random_token()?;
    let mut auth = url::Url::parse(&d.server.authorization_endpoint)
        .map_err(|e| CredentialError::Server(format!("authorization_endpoint: {e}")))?;
    {
        let mut q = auth.query_pairs_mut();
        q.append_pair("response_type", "code")
            .append_pair("client_id", &client_id)
            .append_pair("redirect_uri", &redirect)
            .append_pair("state", &state)
            .append_pair("code_challenge", &s256(&verifier))
            .append_pair("code_challenge_method", "S256")
            .append_pair("resource", &d.resource);
        if let Some(s) = &scope {
            q.append_pair("scope", s);
        }
    }
    // Handed to a browser: https, or http to this machine, and nothing else
    // (`javascript:`, `file:`, a custom scheme's handler, a plain-http page).
    if !browsable(auth.as_str()) {
        return Err(CredentialError::Refused(format!(
            "the authorization endpoint of {} is {:?}: not opening it; an authorization URL must be https:// (or http:// to a loopback host)",
            d.authorization_server, d.server.authorization_endpoint
        )));
    }
    (o.show)(&d.authorization_server, auth.as_str());
    let params = tokio::time::timeout(LOGIN_TIMEOUT, callback(listener, &state))
        .await
        .map_err(|_| {
            CredentialError::NeedsLogin(format!("no authorization within {LOGIN_TIMEOUT:?}"))
        })??;
    let get = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    if let Some(e) = get("error") {
        return Err(CredentialError::NeedsLogin(format!(
            "the authorization was refused: {e} {}",
            get("error_description").unwrap_or_default()
        )));
    }

    check_iss(
        get("iss"),
        d.server.issuer.as_deref(),
        d.server.iss_parameter,
    )?;
    let code =
        get("code").ok_or_else(|| CredentialError::Server("the redirect has no code".into()))?;
    let v = token_request(
        &c,
        &d.server.token_endpoint,
        &client_id,
        secret.as_deref(),
        &method,
        vec![
            ("grant_type", "authorization_code".into()),
            ("code", code),
            ("redirect_uri", redirect),
            ("code_verifier", verifier),
            ("resource", d.resource.clone()),
        ],
    )
    .await?;
    let mut record = Record {
        client_id,
        client_secret: secret,
        auth_method: method,
        token_endpoint: d.server.token_endpoint.clone(),
        resource: d.resource.clone(),
        authorization_server: Some(d.authorization_server.clone()),
        ..Record::default()
    };
    take_tokens(&mut record, &v, scope.as_deref());
    o.store.save(&o.upstream, &record)?;
    Ok(record)
}
