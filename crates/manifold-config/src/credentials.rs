//! Upstream credentials: `[upstreams.<name>.auth]` (how Manifold authenticates
//! to one HTTP upstream) and `[credentials]` (where tokens are kept at rest).
//! The file model and its validated form; the OAuth client is
//! manifold-credentials.
//!
//! Invariants: `oauth` needs `[credentials]` (its tokens survive restarts) and
//! an HTTP upstream; `client_credentials` and `token_exchange` need a
//! `client_id`, a `client_secret` and a pinned `issuer` (the upstream never
//! chooses where the gateway's secret or a caller's token goes); `issuer` and
//! `token_endpoint` are `https://` (or `http://` to a loopback host) without
//! query or fragment; a `token_exchange` upstream names at least one
//! front-door source whose callers' tokens its issuer may receive
//! ([`ExchangeFrom`], resolved against `[auth]` by [`resolve_exchange`]); a
//! validated store key is at least [`MIN_STORE_KEY_LEN`] bytes after `${VAR}`
//! expansion; there is deliberately no passthrough of the client's own token.
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
    /// own identity), `token_exchange` (RFC 8693, per caller), `user_oauth`
    /// (each caller's own account, connected once through a link) or
    /// `user_secret` (each caller's own key, pasted once on a connect page).
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
    /// The authorization server the upstream's tokens come from, as its
    /// issuer identifier (RFC 8414 `issuer`): `https://`, or `http://` to a
    /// loopback host. Its metadata is read from it (RFC 8414, then OpenID
    /// Connect discovery), never from a URL the upstream names. Required for
    /// `client_credentials` and `token_exchange`; for `oauth`, pins what
    /// `manifold login` would otherwise discover from the upstream.
    #[serde(default)]
    pub issuer: Option<String>,
    /// The token endpoint; default: the one the issuer's metadata names,
    /// which must then be on the issuer's origin (scheme, host and port).
    /// Set it for a provider whose token endpoint lives elsewhere.
    #[serde(default)]
    pub token_endpoint: Option<String>,
    /// `token_exchange` only: the front-door sources whose callers' tokens
    /// may be sent to `issuer` for exchange, each an `[[auth.jwt]] issuer` or
    /// an `[[auth.introspection]] url`. Default: the issuer's own tokens (the
    /// `[[auth.jwt]]` with the same issuer, the `[[auth.introspection]]`
    /// endpoints on its origin): an authorization server that already holds
    /// the caller's token.
    #[serde(default)]
    pub exchange_from: Vec<String>,
    /// `user_oauth` only: the `resource` (RFC 8707) each caller's tokens are
    /// asked for; default the upstream's `url`.
    #[serde(default)]
    pub resource: Option<String>,
    /// `user_secret` only: where each caller's secret goes (default the
    /// `Authorization` header as `Bearer {secret}`).
    #[serde(default)]
    pub inject: Option<crate::accounts::InjectSection>,
    /// `user_secret` only: `"tools/list"` tries a pasted secret on the
    /// upstream before storing it.
    #[serde(default)]
    pub check: Option<String>,
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
    /// How long a connect link for a `user_oauth` or `user_secret` upstream
    /// is good for (single use, for the caller it was made for); default
    /// [`crate::accounts::DEFAULT_CONNECT_TTL`].
    #[serde(default)]
    pub connect_ttl: Option<String>,
    /// The client id Manifold has at the `[[auth.jwt]]` issuer (an OpenID
    /// provider, redirect URI `<server.public_url>/oauth/callback`): set, a
    /// connect page first signs the browser in there and links an account
    /// only to the principal who signed in, instead of asking for the code
    /// the client was shown. Also opens `<path>/connect/manage`.
    #[serde(default)]
    pub sign_in_client_id: Option<String>,
    /// Its secret, for a confidential client (`${VAR}` expands); none: a
    /// public client (PKCE alone).
    #[serde(default)]
    pub sign_in_client_secret: Option<String>,
    /// Which `[[auth.jwt]] issuer` signs browsers in; default the only one.
    #[serde(default)]
    pub sign_in_issuer: Option<String>,
}

/// Signing browsers in at the front door's OpenID provider, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignIn {
    /// An `[[auth.jwt]] issuer`, as configured there.
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
}

/// Where tokens are kept, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    pub dir: PathBuf,
    pub key: String,
    /// `connect_ttl`.
    pub connect_ttl: std::time::Duration,
    /// `sign_in_*`, once resolved against `[auth]` ([`resolve_sign_in`]).
    pub sign_in: Option<SignIn>,
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
    /// Each caller's own account, authorized once through a connect link
    /// (authorization code with PKCE at the pinned issuer); tokens per
    /// caller, sealed in the store, refreshed.
    UserOAuth(UserOAuth),
    /// Each caller's own key, pasted once on a connect page; sealed in the
    /// store.
    UserSecret(UserSecret),
}

/// The OAuth client Manifold is for one upstream.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct OAuthClient {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Vec<String>,
    /// The store (`oauth` always has one).
    pub store: Option<StoreSettings>,
    /// The pinned authorization server (`auth.issuer`, as written);
    /// always set for `client_credentials` and `token_exchange`.
    pub issuer: Option<String>,
    /// An explicit token endpoint (`auth.token_endpoint`).
    pub token_endpoint: Option<String>,
    /// `token_exchange`: whose callers' tokens may be sent to the issuer.
    pub exchange_from: ExchangeFrom,
}

/// `user_oauth`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserOAuth {
    /// The client the gateway is at the pinned issuer (with the store).
    pub client: OAuthClient,
    /// The `resource` (RFC 8707) tokens are asked for: `auth.resource`, or the
    /// upstream's `url`.
    pub resource: String,
}

/// `user_secret`, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserSecret {
    pub inject: crate::accounts::Inject,
    /// `check = "tools/list"`: a pasted secret is tried before it is stored.
    pub check: bool,
    /// The store (always set).
    pub store: StoreSettings,
}

/// `token_exchange`: the front-door sources whose callers' tokens the
/// upstream's authorization server may receive, resolved against `[auth]`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ExchangeFrom {
    /// What `auth.exchange_from` names (empty: the issuer's own sources).
    pub named: Vec<String>,
    /// `[[auth.jwt]]` issuers, as configured there (a caller's token is
    /// matched by its validated `iss`, exactly).
    pub jwt_issuers: Vec<String>,
    /// Whether introspected (opaque) tokens may be sent: true when every
    /// `[[auth.introspection]]` endpoint is permitted, since an identity does
    /// not record which endpoint validated it.
    pub introspection: bool,
}

impl UpstreamAuthSection {
    /// Whether it names anything of an OAuth client (which `static` and
    /// `user_secret` have no use for).
    fn names_a_client(&self) -> bool {
        self.client_id.is_some()
            || self.client_secret.is_some()
            || !self.scopes.is_empty()
            || self.issuer.is_some()
            || self.token_endpoint.is_some()
            || !self.exchange_from.is_empty()
    }
}

impl UpstreamAuth {
    pub fn kind(&self) -> &'static str {
        match self {
            UpstreamAuth::Static => "static",
            UpstreamAuth::OAuth(_) => "oauth",
            UpstreamAuth::ClientCredentials(_) => "client_credentials",
            UpstreamAuth::TokenExchange(_) => "token_exchange",
            UpstreamAuth::UserOAuth(_) => "user_oauth",
            UpstreamAuth::UserSecret(_) => "user_secret",
        }
    }

    /// Whether each caller connects an account of their own.
    pub fn per_user(&self) -> bool {
        matches!(
            self,
            UpstreamAuth::UserOAuth(_) | UpstreamAuth::UserSecret(_)
        )
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
        connect_ttl: crate::accounts::connect_ttl(c.connect_ttl.as_deref())?,
        sign_in: None,
    })
}

/// `[credentials] sign_in_*` against the validated `[auth]`: the issuer it
/// names (or the only `[[auth.jwt]]` one), the client; `None` when unset.
pub(crate) fn resolve_sign_in(
    c: &CredentialsSection,
    auth: Option<&crate::auth::AuthSettings>,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<Option<SignIn>, String> {
    let Some(id) = &c.sign_in_client_id else {
        if c.sign_in_client_secret.is_some() || c.sign_in_issuer.is_some() {
            return Err("key `credentials.sign_in_client_id`: `sign_in_client_secret` and `sign_in_issuer` need it".into());
        }
        return Ok(None);
    };
    let issuers: Vec<&str> = auth
        .map(|a| a.jwt.iter().map(|j| j.issuer.as_str()).collect())
        .unwrap_or_default();
    let trim = |s: &str| s.trim_end_matches('/').to_string();
    let issuer = match (&c.sign_in_issuer, issuers.as_slice()) {
        (Some(i), _) => issuers
            .iter()
            .find(|j| trim(j) == trim(i))
            .map(|j| j.to_string())
            .ok_or_else(|| format!("key `credentials.sign_in_issuer`: `{i}` is not an [[auth.jwt]] issuer of this gateway"))?,
        (None, [one]) => one.to_string(),
        (None, []) => {
            return Err("key `credentials.sign_in_client_id`: signing browsers in needs an [[auth.jwt]] issuer (an OpenID provider) in [auth]".into())
        }
        (None, _) => {
            return Err("key `credentials.sign_in_issuer`: [auth] has several [[auth.jwt]] issuers; name the one that signs browsers in".into())
        }
    };
    Ok(Some(SignIn {
        issuer,
        client_id: expand("credentials.sign_in_client_id", id)?,
        client_secret: c
            .sign_in_client_secret
            .as_deref()
            .map(|v| expand("credentials.sign_in_client_secret", v))
            .transpose()?,
    }))
}

/// The origin (`scheme://host:port`) of an `http(s)` URL.
pub fn origin(u: &str) -> Option<String> {
    url::Url::parse(u)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .map(|u| u.origin().ascii_serialization())
}

/// An authorization server URL (`issuer`, `token_endpoint`): absolute,
/// `https://` or `http://` to a loopback host, no query or fragment.
fn check_as_url(key: &str, v: &str) -> Result<(), String> {
    crate::auth::check_fetch_url(key, v)?;
    match url::Url::parse(v) {
        Ok(u) if u.query().is_none() && u.fragment().is_none() => Ok(()),
        Ok(_) => Err(format!(
            "key `{key}`: `{v}` must have no query or fragment (RFC 8414)"
        )),
        Err(e) => Err(format!("key `{key}`: `{v}` is not a URL: {e}")),
    }
}

pub(crate) fn validate_auth(
    key: &str,
    url: &str,
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
        let issuer = a
            .issuer
            .as_deref()
            .map(|v| expand("auth.issuer", v))
            .transpose()?;
        if let Some(i) = &issuer {
            check_as_url(&format!("{key}.auth.issuer"), i)?;
        }
        let token_endpoint = a
            .token_endpoint
            .as_deref()
            .map(|v| expand("auth.token_endpoint", v))
            .transpose()?;
        if let Some(t) = &token_endpoint {
            check_as_url(&format!("{key}.auth.token_endpoint"), t)?;
            if issuer.is_none() {
                return Err(format!(
                    "key `{key}.auth.token_endpoint`: needs the `issuer` it belongs to"
                ));
            }
        }
        if !a.exchange_from.is_empty() && a.kind != "token_exchange" {
            return Err(format!(
                "key `{key}.auth.exchange_from`: only `token_exchange` sends callers' tokens to an authorization server"
            ));
        }
        Ok(OAuthClient {
            client_id,
            client_secret,
            scopes: a.scopes.clone(),
            store: store.cloned(),
            issuer,
            token_endpoint,
            exchange_from: ExchangeFrom {
                named: a.exchange_from.clone(),
                ..ExchangeFrom::default()
            },
        })
    };
    let pinned = |c: OAuthClient, kind: &str| -> Result<OAuthClient, String> {
        if c.issuer.is_none() {
            return Err(format!(
                "key `{key}.auth.issuer`: `{kind}` needs the authorization server its tokens come from, written here (e.g. issuer = \"https://login.example.com\"); Manifold does not take it from the upstream, which could name its own and collect the secret"
            ));
        }
        Ok(c)
    };
    if a.kind != "user_oauth" && a.resource.is_some() {
        return Err(format!(
            "key `{key}.auth.resource`: only `user_oauth` takes a resource"
        ));
    }
    if a.kind != "user_secret" && (a.inject.is_some() || a.check.is_some()) {
        return Err(format!(
            "key `{key}.auth`: `inject` and `check` belong to `user_secret`"
        ));
    }
    let per_user_store = |kind: &str| {
        store.cloned().ok_or_else(|| {
            format!(
                "key `{key}.auth`: `{kind}` keeps each caller's account sealed in `[credentials]` (store and key); add that section"
            )
        })
    };
    match a.kind.as_str() {
        "user_oauth" => {
            per_user_store("user_oauth")?;
            let c = pinned(client()?, "user_oauth")?;
            if c.client_id.is_none() {
                return Err(format!(
                    "key `{key}.auth.client_id`: `user_oauth` needs the client id the gateway is registered as at the issuer (its redirect URI is `<server.public_url>/oauth/callback`)"
                ));
            }
            let resource = crate::accounts::resource(key, a.resource.as_deref(), url)?;
            Ok(UpstreamAuth::UserOAuth(UserOAuth {
                client: c,
                resource,
            }))
        }
        "user_secret" => {
            let store = per_user_store("user_secret")?;
            if a.names_a_client() {
                return Err(format!(
                    "key `{key}.auth`: `user_secret` takes only `inject` and `check` (each caller pastes their own key)"
                ));
            }
            let check = match a.check.as_deref() {
                None => false,
                Some(crate::accounts::CHECK_TOOLS_LIST) => true,
                Some(other) => {
                    return Err(format!(
                        "key `{key}.auth.check`: {other:?}; the one check is \"{}\"",
                        crate::accounts::CHECK_TOOLS_LIST
                    ))
                }
            };
            Ok(UpstreamAuth::UserSecret(UserSecret {
                inject: crate::accounts::inject(key, a.inject.as_ref())?,
                check,
                store,
            }))
        }
        "static" => {
            if a.names_a_client() {
                return Err(format!(
                    "key `{key}.auth`: `static` takes no client_id, client_secret, scopes, issuer, token_endpoint or exchange_from (its credentials are the `headers`)"
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
            Ok(UpstreamAuth::ClientCredentials(pinned(
                c,
                "client_credentials",
            )?))
        }
        "token_exchange" => {
            let c = client()?;
            if c.client_id.is_none() || c.client_secret.is_none() {
                return Err(format!(
                    "key `{key}.auth`: `token_exchange` needs `client_id` and `client_secret` (Manifold authenticates its exchanges, and its own requests use the client-credentials grant)"
                ));
            }
            Ok(UpstreamAuth::TokenExchange(pinned(c, "token_exchange")?))
        }
        other => Err(format!(
            "key `{key}.auth.type`: {other:?}; expected `static`, `oauth`, `client_credentials`, `token_exchange`, `user_oauth` or `user_secret`"
        )),
    }
}

/// Resolves each `token_exchange` upstream's [`ExchangeFrom`] against the
/// validated `[auth]`: an error when it would exchange no caller's token, or
/// names a source `[auth]` does not have.
pub(crate) fn resolve_exchange<'a>(
    upstreams: impl Iterator<Item = (&'a str, &'a mut UpstreamAuth)>,
    auth: Option<&crate::auth::AuthSettings>,
) -> Result<(), String> {
    for (name, upstream_auth) in upstreams {
        let UpstreamAuth::TokenExchange(c) = upstream_auth else {
            continue;
        };
        let key = format!("upstreams.{name}.auth");
        let issuer = c.issuer.clone().unwrap_or_default();
        let trim = |s: &str| s.trim_end_matches('/').to_string();
        let jwt: Vec<&str> = auth
            .map(|a| a.jwt.iter().map(|j| j.issuer.as_str()).collect())
            .unwrap_or_default();
        let introspection: Vec<&str> = auth
            .map(|a| a.introspection.iter().map(|i| i.url.as_str()).collect())
            .unwrap_or_default();
        let named = std::mem::take(&mut c.exchange_from.named);
        let mut from = ExchangeFrom {
            named: named.clone(),
            ..ExchangeFrom::default()
        };
        let mut permitted: Vec<&str> = Vec::new();
        if named.is_empty() {
            from.jwt_issuers = jwt
                .iter()
                .filter(|j| trim(j) == trim(&issuer))
                .map(|j| j.to_string())
                .collect();
            let home = origin(&issuer);
            permitted = introspection
                .iter()
                .copied()
                .filter(|i| origin(i).is_some() && origin(i) == home)
                .collect();
        } else {
            for n in &named {
                if let Some(j) = jwt.iter().find(|j| trim(j) == trim(n)) {
                    from.jwt_issuers.push(j.to_string());
                } else if let Some(i) = introspection.iter().find(|i| **i == n.as_str()) {
                    permitted.push(i);
                } else {
                    return Err(format!(
                        "key `{key}.exchange_from`: `{n}` is neither an [[auth.jwt]] issuer nor an [[auth.introspection]] url of this gateway"
                    ));
                }
            }
            if !permitted.is_empty() && permitted.len() < introspection.len() {
                return Err(format!(
                    "key `{key}.exchange_from`: name every [[auth.introspection]] url or none: Manifold does not record which endpoint validated an opaque token, so it exchanges introspected callers' tokens only when every endpoint may be trusted with them"
                ));
            }
        }
        from.introspection = !introspection.is_empty() && permitted.len() == introspection.len();
        if from.jwt_issuers.is_empty() && !from.introspection {
            return Err(format!(
                "key `{key}`: `token_exchange` would exchange no caller's token: its issuer `{issuer}` is not an [[auth.jwt]] issuer of this gateway{} and a caller's token is sent only to the authorization server that already holds it; name the sources it may receive in `exchange_from`",
                if introspection.is_empty() {
                    String::new()
                } else {
                    " and not every [[auth.introspection]] endpoint is on its origin".to_string()
                }
            ));
        }
        c.exchange_from = from;
    }
    Ok(())
}
