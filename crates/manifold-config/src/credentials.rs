//! Upstream credentials: `[upstreams.<name>.auth]` (how Manifold authenticates
//! to one HTTP upstream) and `[credentials]` (where tokens are kept at rest).
//! The file model and its validated form; the OAuth client is
//! manifold-credentials.
//!
//! Invariants: `oauth` needs `[credentials]` (its tokens survive restarts) and
//! an HTTP upstream; `client_credentials` needs a `client_id` and a
//! `client_secret`; a validated store key is at least [`MIN_STORE_KEY_LEN`]
//! bytes after `${VAR}` expansion; there is deliberately no passthrough of the
//! client's own token.
//!
//! Not here: discovery, flows, the store's format (manifold-credentials).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The shortest `[credentials] key` accepted.
pub const MIN_STORE_KEY_LEN: usize = 32;

/// `[upstreams.<name>.auth]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamAuthSection {
    /// `static` (the `headers`, today's behaviour), `oauth` (authorization
    /// code with PKCE, `manifold login`), `client_credentials` (the gateway's
    /// own identity) or `token_exchange` (RFC 8693, per caller).
    #[serde(rename = "type")]
    pub kind: String,
    /// A Client ID Metadata Document URL (`https://…`) or a pre-registered
    /// client id; none: dynamic client registration.
    pub client_id: Option<String>,
    /// For a confidential pre-registered client (`${VAR}` expands).
    pub client_secret: Option<String>,
    /// Scopes to ask for; empty: the `scope` of the upstream's
    /// `WWW-Authenticate`, else its `scopes_supported`, else none.
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// `[credentials]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CredentialsSection {
    /// A directory for tokens at rest: one file per upstream, mode 0600,
    /// encrypted with `key`.
    pub store: String,
    /// Encrypts the store (`${VAR}` expands; at least 32 bytes).
    pub key: String,
}

/// Where tokens are kept, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub dir: PathBuf,
    pub key: String,
}

/// How Manifold authenticates to one upstream, validated.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum UpstreamAuth {
    /// The configured `headers` only.
    #[default]
    Static,
    /// Authorization code with PKCE; tokens from `manifold login`, kept in
    /// the store and refreshed.
    OAuth(OAuthClient),
    /// The gateway's own token from the client-credentials grant, in memory.
    ClientCredentials(OAuthClient),
    /// RFC 8693: each caller's validated access token exchanged for one whose
    /// audience is the upstream, cached per caller; the gateway's own
    /// requests (lists, pings) use the client-credentials grant.
    TokenExchange(OAuthClient),
}

/// The OAuth client Manifold is for one upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClient {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Vec<String>,
    /// The store (`oauth` always has one).
    pub store: Option<StoreSettings>,
}

impl UpstreamAuth {
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamAuth::Static => "static",
            UpstreamAuth::OAuth(_) => "oauth",
            UpstreamAuth::ClientCredentials(_) => "client_credentials",
            UpstreamAuth::TokenExchange(_) => "token_exchange",
        }
    }
}

pub(crate) fn validate_store(
    c: &CredentialsSection,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<StoreSettings, String> {
    let dir = expand("credentials.store", &c.store)?;
    if dir.trim().is_empty() {
        return Err("key `credentials.store`: must not be empty".into());
    }
    let key = expand("credentials.key", &c.key)?;
    if key.len() < MIN_STORE_KEY_LEN {
        return Err(format!(
            "key `credentials.key`: {} bytes; at least {MIN_STORE_KEY_LEN} are needed (e.g. `openssl rand -hex 32`)",
            key.len()
        ));
    }
    Ok(StoreSettings {
        dir: PathBuf::from(dir),
        key,
    })
}

pub(crate) fn validate_auth(
    key: &str,
    a: &UpstreamAuthSection,
    store: Option<&StoreSettings>,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<UpstreamAuth, String> {
    let client = || -> Result<OAuthClient, String> {
        let client_id = a
            .client_id
            .as_deref()
            .map(|v| expand("auth.client_id", v))
            .transpose()?;
        let client_secret = a
            .client_secret
            .as_deref()
            .map(|v| expand("auth.client_secret", v))
            .transpose()?;
        if client_secret.is_some() && client_id.is_none() {
            return Err(format!(
                "key `{key}.auth.client_secret`: needs the `client_id` it belongs to"
            ));
        }
        for s in &a.scopes {
            if s.is_empty() || s.contains(' ') {
                return Err(format!(
                    "key `{key}.auth.scopes`: {s:?} is not a scope (no spaces)"
                ));
            }
        }
        Ok(OAuthClient {
            client_id,
            client_secret,
            scopes: a.scopes.clone(),
            store: store.cloned(),
        })
    };
    match a.kind.as_str() {
        "static" => {
            if a.client_id.is_some() || a.client_secret.is_some() || !a.scopes.is_empty() {
                return Err(format!(
                    "key `{key}.auth`: `static` takes no client_id, client_secret or scopes (its credentials are the `headers`)"
                ));
            }
            Ok(UpstreamAuth::Static)
        }
        "oauth" => {
            if store.is_none() {
                return Err(format!(
                    "key `{key}.auth`: `oauth` keeps its tokens in `[credentials]` (store and key); add that section"
                ));
            }
            Ok(UpstreamAuth::OAuth(client()?))
        }
        "client_credentials" => {
            let c = client()?;
            if c.client_id.is_none() || c.client_secret.is_none() {
                return Err(format!(
                    "key `{key}.auth`: `client_credentials` needs `client_id` and `client_secret`"
                ));
            }
            Ok(UpstreamAuth::ClientCredentials(c))
        }
        "token_exchange" => {
            let c = client()?;
            if c.client_id.is_none() || c.client_secret.is_none() {
                return Err(format!(
                    "key `{key}.auth`: `token_exchange` needs `client_id` and `client_secret` (Manifold authenticates its exchanges, and its own requests use the client-credentials grant)"
                ));
            }
            Ok(UpstreamAuth::TokenExchange(c))
        }
        other => Err(format!(
            "key `{key}.auth.type`: {other:?}; expected `static`, `oauth`, `client_credentials` or `token_exchange`"
        )),
    }
}
