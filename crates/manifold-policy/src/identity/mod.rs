//! [`Authenticator`]: turns the credentials a request carries into an
//! [`Identity`] — a bearer JWT checked against its issuer's keys, an opaque
//! token its introspection endpoint vouches for, or an API key checked against
//! the configured digests — or an [`AuthError`] that says which refusal to
//! send.
//!
//! Invariants: every identity names its source (the `[[auth.jwt]]` or
//! `[[auth.introspection]]` name, the API key, the certificate's name type),
//! and its principal ([`Identity::display_name`]) is qualified by it, so one
//! source's `alice` is never another's; a token is verified once and then
//! served from a bounded cache keyed by its SHA-256, never past its expiry (a
//! refusal of an introspected token is cached too, briefly); the required
//! scopes are checked on every request, cached or not; the order is fixed
//! (JWT-shaped tokens go to `[[auth.jwt]]`, anything else to
//! `[[auth.api_keys]]`, then `[[auth.introspection]]`).
//!
//! Not here: sessions (the server binds them to the principal), reading TLS
//! client certificates (the server's TLS front builds their identity with
//! [`Identity::certificate`]).

mod api_key;
mod cache;
mod caller;
mod introspect;
mod jwt;

use std::sync::Arc;

use manifold_config::AuthSettings;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

pub use api_key::{find_key, hash_key};
pub use cache::{FAILURE_TTL, KEY_TTL, MAX_CACHED_REFUSALS, MAX_CACHED_TOKENS, REFUSAL_TTL};
pub use caller::{AuthError, AuthMethod, Identity};
pub use introspect::{
    MAX_ANSWER_BYTES, MAX_INTROSPECTIONS_PER_PEER_PER_SECOND, MAX_INTROSPECTIONS_PER_SECOND,
    MAX_TRACKED_PEERS,
};
pub use jwt::{FETCH_TIMEOUT, MAX_JWKS_BYTES, MIN_REFETCH, RETRY_AFTER_FAILURE};

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
        self.authenticate_for(authorization, None).await
    }

    /// [`authenticate`](Self::authenticate) for a request to a virtual
    /// endpoint with its own `resource` (RFC 8707): a token of a source whose
    /// audience is the gateway's resource (the default) must name `resource`
    /// instead, so a token got for one endpoint is refused on another and on
    /// the default endpoint. A source with its own `audience` keeps it; API
    /// keys are not tokens of an audience. The decision is cached per
    /// resource.
    pub async fn authenticate_for(
        &self,
        authorization: Option<&str>,
        resource: Option<&str>,
    ) -> Result<Arc<Identity>, AuthError> {
        self.authenticate_from(authorization, resource, None).await
    }

    /// [`authenticate_for`](Self::authenticate_for) for a request from the
    /// client address `peer`: an opaque token that must be introspected
    /// spends that address's budget first
    /// ([`MAX_INTROSPECTIONS_PER_PEER_PER_SECOND`]).
    pub async fn authenticate_from(
        &self,
        authorization: Option<&str>,
        resource: Option<&str>,
        peer: Option<std::net::IpAddr>,
    ) -> Result<Arc<Identity>, AuthError> {
        let resource = resource.filter(|r| *r != self.settings.resource);
        let Some(value) = authorization else {
            if self.settings.allow_anonymous {
                return Ok(Arc::new(Identity::anonymous()));
            }
            return Err(AuthError::Missing);
        };
        let token = bearer_token(value).ok_or(AuthError::Malformed)?;
        // The cache's key names the resource asked for: an answer for one
        // endpoint is never served for another.
        let keyed;
        let key = match resource {
            Some(r) => {
                keyed = format!("{r}\u{0}{token}");
                keyed.as_str()
            }
            None => token,
        };
        let identity = match self.cache.get(key) {
            Some(Ok(id)) => id,
            Some(Err(refusal)) => return Err(refusal),
            None => {
                let (identity, until) = if jwt::looks_like_jwt(token) {
                    self.verify_jwt(token, resource).await?
                } else if let Some(id) = self.keys.check(token) {
                    (id, std::time::SystemTime::now() + KEY_TTL)
                } else {
                    self.introspect(token, key, resource, peer).await?
                };
                let identity = Arc::new(identity);
                self.cache.put(key, identity.clone(), until);
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

    /// An opaque token: the first introspection endpoint that vouches for it.
    /// Without one, the refusal is kept for the token a little while (see
    /// `cache`), unless only this gateway's own bound stopped it.
    async fn introspect(
        &self,
        token: &str,
        key: &str,
        resource: Option<&str>,
        peer: Option<std::net::IpAddr>,
    ) -> Result<(Identity, std::time::SystemTime), AuthError> {
        if self.introspection.is_empty() {
            return Err(AuthError::Invalid("unknown API key".into()));
        }
        let mut worst: Option<introspect::Refusal> = None;
        for i in &self.introspection {
            match i
                .check(token, self.audience_of(i.audience(), resource), peer)
                .await
            {
                Ok(found) => return Ok(found),
                // A provider that could not be asked outranks one that said no:
                // the token may be good there.
                Err(r) => {
                    if worst.as_ref().is_none_or(|w| r.rank() > w.rank()) {
                        worst = Some(r);
                    }
                }
            }
        }
        let refusal = worst.unwrap_or(introspect::Refusal::Busy(AuthError::Unavailable(
            "no introspection endpoint answered".into(),
        )));
        if let Some(ttl) = refusal.keep_for() {
            self.cache.refuse(key, refusal.error().clone(), ttl);
        }
        Err(refusal.into_error())
    }

    /// The audience a source's token must name: an endpoint's own resource
    /// where the source's audience is the gateway's resource, else its own.
    fn audience_of<'a>(&self, configured: &'a str, resource: Option<&'a str>) -> &'a str {
        match resource {
            Some(r) if configured == self.settings.resource => r,
            _ => configured,
        }
    }

    /// Verifies an OpenID Connect ID token from `issuer` (one of the
    /// `[[auth.jwt]]` issuers, with its keys): addressed to `client_id`,
    /// carrying `nonce`, unexpired. The identity it names, qualified by that
    /// source as a bearer token's would be (so it compares with a caller's).
    pub async fn verify_id_token(
        &self,
        issuer: &str,
        token: &str,
        client_id: &str,
        nonce: &str,
    ) -> Result<Identity, AuthError> {
        let provider = self.provider(issuer)?;
        let (identity, _) = provider.verify(token, client_id).await?;
        let carried = jwt::unverified_claim(token, "nonce");
        let same = carried
            .as_deref()
            .is_some_and(|n| manifold_foundation::ct::eq(n.as_bytes(), nonce.as_bytes()));
        if !same {
            return Err(AuthError::Invalid(
                "the ID token's nonce is not the one this sign-in sent".into(),
            ));
        }
        Ok(identity)
    }

    /// The `[[auth.jwt]]` source of `issuer`.
    fn provider(&self, issuer: &str) -> Result<&Arc<jwt::Provider>, AuthError> {
        self.jwt
            .iter()
            .find(|p| p.issuer() == issuer)
            .ok_or_else(|| AuthError::Invalid(format!("the issuer `{issuer}` is not trusted here")))
    }

    async fn verify_jwt(
        &self,
        token: &str,
        resource: Option<&str>,
    ) -> Result<(Identity, std::time::SystemTime), AuthError> {
        if self.jwt.is_empty() {
            return Err(AuthError::Invalid(
                "a JWT was presented but no [[auth.jwt]] issuer is configured".into(),
            ));
        }
        let issuer = jwt::unverified_issuer(token).map_err(|why| AuthError::Invalid(why.into()))?;
        let provider = self.provider(&issuer)?;
        provider
            .verify(token, self.audience_of(provider.audience(), resource))
            .await
    }
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
            (AuthError::Unavailable("x".into()), 503, None),
        ];
        for (e, status, code) in rows {
            assert_eq!(e.http_status().as_u16(), status, "{e}");
            assert_eq!(e.bearer_error(), code, "{e}");
        }
    }
}
