//! [`Authenticator`]: turns the credentials a request carries into an
//! [`Identity`] — a bearer JWT checked against its issuer's keys, or an API key
//! checked against the configured digests — or an [`AuthError`] that says which
//! refusal to send.
//!
//! Invariants: a token is verified once and then served from a bounded cache
//! keyed by its SHA-256 until it expires; the required scopes are checked on
//! every request, cached or not; the order is fixed (JWT-shaped tokens go to
//! `[[auth.jwt]]`, anything else to `[[auth.api_keys]]`).
//!
//! Not here: sessions (the server binds them to the identity), TLS client
//! certificates (coming).

mod api_key;
mod cache;
mod introspect;
mod jwt;

use std::sync::Arc;

use manifold_config::AuthSettings;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use api_key::{find_key, hash_key};
pub use cache::{KEY_TTL, MAX_CACHED_TOKENS};
pub use jwt::{FETCH_TIMEOUT, MAX_JWKS_BYTES, MIN_REFETCH, RETRY_AFTER_FAILURE};

/// How a caller was authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthMethod {
    Jwt,
    ApiKey,
    /// A client certificate verified against `[server.tls] client_ca`.
    Mtls,
    /// An opaque token an `[[auth.introspection]]` endpoint said is active.
    Introspection,
    /// No credentials, and `[auth] allow_anonymous = true` (or no `[auth]`).
    Anonymous,
    /// The local user of `manifold stdio` (`[stdio] principal`): whoever can
    /// write to the process's stdin already runs as that user.
    Local,
}

impl AuthMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMethod::Jwt => "jwt",
            AuthMethod::ApiKey => "api_key",
            AuthMethod::Mtls => "mtls",
            AuthMethod::Introspection => "introspection",
            AuthMethod::Anonymous => "anonymous",
            AuthMethod::Local => "local",
        }
    }
}

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Identity {
    /// The token's `sub`, or the API key's `name`; `anonymous` without credentials.
    pub subject: String,
    pub groups: Vec<String>,
    pub scopes: Vec<String>,
    pub method: AuthMethod,
}

impl Identity {
    pub fn anonymous() -> Identity {
        Identity {
            subject: "anonymous".into(),
            groups: Vec::new(),
            scopes: Vec::new(),
            method: AuthMethod::Anonymous,
        }
    }

    /// The local user of `manifold stdio`.
    pub fn local(user: &str) -> Identity {
        Identity {
            subject: user.to_string(),
            groups: Vec::new(),
            scopes: Vec::new(),
            method: AuthMethod::Local,
        }
    }

    /// How audit records and logs name the caller: `jwt:alice`,
    /// `api_key:ci-bot`, or `anonymous`. Never a token.
    pub fn display_name(&self) -> String {
        match self.method {
            AuthMethod::Anonymous => "anonymous".into(),
            m => format!("{}:{}", m.as_str(), self.subject),
        }
    }
}

/// Why a request's credentials were not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header, and anonymous callers are not allowed.
    #[error("this endpoint needs credentials: send `Authorization: Bearer <token>`")]
    Missing,
    /// The header is not `Bearer <token>`.
    #[error("the Authorization header must be `Bearer <token>`")]
    Malformed,
    /// The token or key was checked and refused; the reason is safe to show.
    #[error("the access token was refused: {0}")]
    Invalid(String),
    /// Valid, but without the scopes every request needs.
    #[error("the access token lacks the scope(s) {}", .0.join(" "))]
    InsufficientScope(Vec<String>),
}

impl AuthError {
    /// The HTTP status: 403 for missing scopes, 401 otherwise.
    pub fn http_status(&self) -> http::StatusCode {
        match self {
            AuthError::InsufficientScope(_) => http::StatusCode::FORBIDDEN,
            _ => http::StatusCode::UNAUTHORIZED,
        }
    }

    /// The RFC 6750 `error` code (none when credentials were simply absent).
    pub fn bearer_error(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing => None,
            AuthError::Malformed => Some("invalid_request"),
            AuthError::Invalid(_) => Some("invalid_token"),
            AuthError::InsufficientScope(_) => Some("insufficient_scope"),
        }
    }

    pub fn is_insufficient_scope(&self) -> bool {
        matches!(self, AuthError::InsufficientScope(_))
    }
}

/// Checks credentials against `[auth]`.
pub struct Authenticator {
    settings: AuthSettings,
    jwt: Vec<Arc<jwt::Provider>>,
    introspection: Vec<introspect::Introspector>,
    keys: api_key::Keys,
    cache: cache::TokenCache,
}

impl Authenticator {
    pub fn new(settings: AuthSettings) -> Authenticator {
        let jwt = settings
            .jwt
            .iter()
            .map(|p| Arc::new(jwt::Provider::new(p.clone())))
            .collect();
        let keys = api_key::Keys::new(&settings.api_keys);
        let introspection = settings
            .introspection
            .iter()
            .map(|c| introspect::Introspector::new(c.clone()))
            .collect();
        Authenticator {
            settings,
            jwt,
            introspection,
            keys,
            cache: cache::TokenCache::default(),
        }
    }

    pub fn settings(&self) -> &AuthSettings {
        &self.settings
    }

    /// Fetches every issuer's keys now and keeps them fresh in the background
    /// until `stop`. A fetch that fails is logged and retried; tokens signed by
    /// keys not yet fetched are refused meanwhile.
    pub async fn start(&self, tasks: &TaskTracker, stop: &CancellationToken) {
        for p in &self.jwt {
            p.refresh().await;
        }
        for p in &self.jwt {
            tasks.spawn(p.clone().keep_fresh(stop.clone()));
        }
    }

    /// The caller behind `authorization` (the header's value, if any).
    pub async fn authenticate(
        &self,
        authorization: Option<&str>,
    ) -> Result<Arc<Identity>, AuthError> {
        let Some(value) = authorization else {
            if self.settings.allow_anonymous {
                return Ok(Arc::new(Identity::anonymous()));
            }
            return Err(AuthError::Missing);
        };
        let token = bearer_token(value).ok_or(AuthError::Malformed)?;
        let identity = match self.cache.get(token) {
            Some(id) => id,
            None => {
                let (identity, expires) = if jwt::looks_like_jwt(token) {
                    self.verify_jwt(token).await?
                } else if let Some(id) = self.keys.check(token) {
                    (id, None)
                } else {
                    self.introspect(token).await?
                };
                let identity = Arc::new(identity);
                self.cache.put(token, identity.clone(), expires);
                identity
            }
        };
        let missing: Vec<String> = self
            .settings
            .required_scopes
            .iter()
            .filter(|s| !identity.scopes.contains(s))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(AuthError::InsufficientScope(missing));
        }
        Ok(identity)
    }

    /// An opaque token: the first introspection endpoint that knows it.
    async fn introspect(
        &self,
        token: &str,
    ) -> Result<(Identity, Option<std::time::SystemTime>), AuthError> {
        let mut refusal = AuthError::Invalid("unknown API key".into());
        for i in &self.introspection {
            match i.check(token).await {
                Ok((id, until)) => return Ok((id, Some(until))),
                Err(e) => refusal = e,
            }
        }
        Err(refusal)
    }

    async fn verify_jwt(
        &self,
        token: &str,
    ) -> Result<(Identity, Option<std::time::SystemTime>), AuthError> {
        if self.jwt.is_empty() {
            return Err(AuthError::Invalid(
                "a JWT was presented but no [[auth.jwt]] issuer is configured".into(),
            ));
        }
        let issuer = jwt::unverified_issuer(token).map_err(|why| AuthError::Invalid(why.into()))?;
        let provider = self
            .jwt
            .iter()
            .find(|p| p.issuer() == issuer)
            .ok_or_else(|| {
                AuthError::Invalid(format!("the issuer `{issuer}` is not trusted here"))
            })?;
        provider.verify(token).await
    }
}

/// The client for the identity provider's endpoints (keys, introspection):
/// HTTPS with the web roots (plain HTTP only where the configuration allowed a
/// loopback URL), connects bounded by [`FETCH_TIMEOUT`].
type HttpsClient = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    http_body_util::Full<bytes::Bytes>,
>;

fn https_client() -> HttpsClient {
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_connect_timeout(Some(FETCH_TIMEOUT));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(https)
}

/// The token of `Bearer <token>` (the scheme is case-insensitive).
pub fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty() && !token.contains(' '))
        .then_some(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_parsed_strictly() {
        let rows = [
            ("Bearer abc", Some("abc")),
            ("bearer abc", Some("abc")),
            ("BEARER  abc ", Some("abc")),
            ("Basic abc", None),
            ("Bearer", None),
            ("Bearer ", None),
            ("Bearer a b", None),
            ("abc", None),
        ];
        for (value, want) in rows {
            assert_eq!(bearer_token(value), want, "{value:?}");
        }
    }

    #[test]
    fn errors_know_their_status_and_bearer_code() {
        let rows = [
            (AuthError::Missing, 401, None),
            (AuthError::Malformed, 401, Some("invalid_request")),
            (AuthError::Invalid("x".into()), 401, Some("invalid_token")),
            (
                AuthError::InsufficientScope(vec!["a".into()]),
                403,
                Some("insufficient_scope"),
            ),
        ];
        for (e, status, code) in rows {
            assert_eq!(e.http_status().as_u16(), status, "{e}");
            assert_eq!(e.bearer_error(), code, "{e}");
        }
    }
}
