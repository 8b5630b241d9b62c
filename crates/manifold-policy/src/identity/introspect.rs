//! Opaque access tokens, checked by an authorization server's introspection
//! endpoint (RFC 7662): Manifold posts the token with its own client
//! credentials (HTTP Basic) and reads `active`, `token_type`, `aud`, `sub`
//! (or `username`, or `client_id` for a token issued to a client on its own
//! behalf), `scope`, `exp`, `nbf` and the groups claim.
//!
//! Invariants: an inactive token, a refresh token, or one whose `aud` does not
//! name this gateway (or that has none, with `require_audience`) is refused;
//! the identity names this endpoint's source; an answer is cached (by the
//! caller) no longer than the token's `exp` nor `cache_ttl`; at most
//! [`MAX_INTROSPECTIONS_PER_SECOND`] requests per second go to one endpoint,
//! and at most [`MAX_INTROSPECTIONS_PER_PEER_PER_SECOND`] of them for one
//! client address (an IPv6 /64), so one client's made-up tokens cannot spend
//! everyone's budget (past either, a token is refused as "could not be
//! checked", 503, not asked);
//! every request is bounded in time ([`super::jwt::FETCH_TIMEOUT`]) and size
//! ([`MAX_ANSWER_BYTES`]); the token never appears in a log line or an error.
//!
//! Not here: JWTs (`jwt`), the cache and which refusals it keeps (`cache`).

use base64::Engine;
use bytes::Bytes;
use governor::{DefaultDirectRateLimiter, DefaultKeyedRateLimiter, Quota, RateLimiter};
use http_body_util::Full;
use manifold_foundation::http as bounded;
use serde_json::{Map, Value};
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::{Duration, SystemTime};

use super::cache::{FAILURE_TTL, REFUSAL_TTL};
use super::caller::{AuthError, AuthMethod, Identity};
use super::jwt::{numeric_date, scopes, strings, system_time, unix_now, FETCH_TIMEOUT};
use manifold_config::Introspection;

/// How a client's own token (client credentials, no `sub`) names its
/// principal: `client:<client_id>`. No user's `sub` or `username` takes it.
const CLIENT_PREFIX: &str = "client:";

/// The largest introspection answer read.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// Introspection requests one `[[auth.introspection]]` endpoint gets at most
/// per second (and in one burst): a flood of made-up tokens costs the identity
/// provider this much, not one request each. Past it, new tokens are refused
/// with 503 until the next second; cached answers are still served.
pub const MAX_INTROSPECTIONS_PER_SECOND: u32 = 50;
/// Introspection requests the tokens of one client address (an IPv6 /64)
/// may cause per second (and in one burst), before the endpoint's own bound.
pub const MAX_INTROSPECTIONS_PER_PEER_PER_SECOND: u32 = 5;
/// Client addresses whose budget is kept at once: past it, those idle long
/// enough to have a full budget again are forgotten.
pub const MAX_TRACKED_PEERS: usize = 10_000;

pub(super) struct Introspector {
    config: Introspection,
    client: super::jwt::HttpsClient,
    bound: DefaultDirectRateLimiter,
    per_peer: DefaultKeyedRateLimiter<IpAddr>,
}

/// The address a client's budget is kept under: an IPv4 address, or the /64
/// of an IPv6 one (a single host commonly holds a whole /64).
fn peer_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// Why an endpoint did not vouch for a token, and so how long the refusal may
/// be kept for that token.
#[derive(Debug)]
pub(super) enum Refusal {
    /// The answer said no (inactive), or was refused here (audience, a refresh
    /// token, no subject): kept [`REFUSAL_TTL`].
    Refused(AuthError),
    /// The endpoint could not be asked (unreachable, an HTTP error, not JSON,
    /// a timeout): kept [`FAILURE_TTL`].
    Failed(AuthError),
    /// This gateway's own bound stopped the request: not kept.
    Busy(AuthError),
}

impl Refusal {
    /// Which of several endpoints' refusals the caller hears: one that could
    /// not be asked over one that said no.
    pub(super) fn rank(&self) -> u8 {
        match self {
            Refusal::Refused(_) => 0,
            Refusal::Failed(_) => 1,
            Refusal::Busy(_) => 2,
        }
    }

    pub(super) fn keep_for(&self) -> Option<Duration> {
        match self {
            Refusal::Refused(_) => Some(REFUSAL_TTL),
            Refusal::Failed(_) => Some(FAILURE_TTL),
            Refusal::Busy(_) => None,
        }
    }

    pub(super) fn error(&self) -> &AuthError {
        match self {
            Refusal::Refused(e) | Refusal::Failed(e) | Refusal::Busy(e) => e,
        }
    }

    pub(super) fn into_error(self) -> AuthError {
        match self {
            Refusal::Refused(e) | Refusal::Failed(e) | Refusal::Busy(e) => e,
        }
    }
}

impl Introspector {
    pub(super) fn new(config: Introspection) -> Introspector {
        let per_second = NonZeroU32::new(MAX_INTROSPECTIONS_PER_SECOND).unwrap_or(NonZeroU32::MIN);
        let per_peer =
            NonZeroU32::new(MAX_INTROSPECTIONS_PER_PEER_PER_SECOND).unwrap_or(NonZeroU32::MIN);
        Introspector {
            config,
            client: super::jwt::https_client(),
            bound: RateLimiter::direct(Quota::per_second(per_second)),
            per_peer: RateLimiter::keyed(Quota::per_second(per_peer)),
        }
    }

    /// The audience this source's tokens must name unless a request asks for
    /// another (`[auth.introspection] audience`, by default the resource).
    pub(super) fn audience(&self) -> &str {
        &self.config.audience
    }

    /// The token's identity (its answer naming `audience`) and until when it
    /// may be cached.
    pub(super) async fn check(
        &self,
        token: &str,
        audience: &str,
        peer: Option<IpAddr>,
    ) -> Result<(Identity, SystemTime), Refusal> {
        let source = &self.config.name;
        if let Some(ip) = peer.map(peer_key) {
            if self.per_peer.len() >= MAX_TRACKED_PEERS {
                self.per_peer.retain_recent();
            }
            if self.per_peer.check_key(&ip).is_err() {
                return Err(Refusal::Busy(AuthError::Unavailable(format!(
                    "the identity provider `{source}` is asked for at most \
                     {MAX_INTROSPECTIONS_PER_PEER_PER_SECOND} new tokens a second from one \
                     client address; try again"
                ))));
            }
        }
        if self.bound.check().is_err() {
            tracing::warn!(source = %source, limit = MAX_INTROSPECTIONS_PER_SECOND,
                "introspection requests over their bound; refusing new tokens this second");
            return Err(Refusal::Busy(AuthError::Unavailable(format!(
                "the identity provider `{source}` is asked at most \
                 {MAX_INTROSPECTIONS_PER_SECOND} times a second; try again"
            ))));
        }
        let failed = |why: &str| {
            Refusal::Failed(AuthError::Unavailable(format!(
                "introspection at `{source}` {why}; try again"
            )))
        };
        let answer = match self.ask(token).await {
            Ok(a) => a,
            Err(None) => {
                tracing::warn!(source = %source, url = %self.config.url, "token introspection timed out");
                return Err(failed("timed out"));
            }
            Err(Some(e)) => {
                tracing::warn!(source = %source, url = %self.config.url, error = %e, "token introspection failed");
                return Err(failed("failed"));
            }
        };
        identity_of(&answer, &self.config, audience).map_err(Refusal::Refused)
    }

    /// The endpoint's answer, within [`FETCH_TIMEOUT`] and [`MAX_ANSWER_BYTES`];
    /// `Err(None)`: no answer in time, `Err(Some(why))`: a failure.
    async fn ask(&self, token: &str) -> Result<Map<String, Value>, Option<String>> {
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form(&self.config.client_id),
            form(&self.config.client_secret)
        ));
        let body = format!("token={}&token_type_hint=access_token", form(token));
        let req = http::Request::post(&self.config.url)
            .header(
                http::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::AUTHORIZATION, format!("Basic {basic}"))
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| Some(e.to_string()))?;
        let got = bounded::fetch(&self.client, req, MAX_ANSWER_BYTES, FETCH_TIMEOUT)
            .await
            .map_err(|e| match e {
                bounded::FetchError::Timeout(_) => None,
                e => Some(e.to_string()),
            })?;
        if !got.status.is_success() {
            return Err(Some(format!("HTTP {}", got.status)));
        }
        serde_json::from_slice(&got.body).map_err(|e| Some(format!("not a JSON object: {e}")))
    }
}

/// Whether a `token_type` names a refresh token (`refresh_token`, RFC 8693's
/// `urn:ietf:params:oauth:token-type:refresh_token`, any casing).
fn is_refresh_token(token_type: &str) -> bool {
    let t = token_type.to_ascii_lowercase();
    t == "refresh_token" || t.ends_with(":refresh_token") || t == "refresh"
}

/// What an answer says of the token.
fn identity_of(
    a: &Map<String, Value>,
    c: &Introspection,
    audience: &str,
) -> Result<(Identity, SystemTime), AuthError> {
    let invalid = |m: &str| AuthError::Invalid(m.to_string());
    if a.get("active") != Some(&Value::Bool(true)) {
        return Err(invalid(
            "the token is not active (expired, revoked or unknown)",
        ));
    }
    if let Some(t) = a.get("token_type").and_then(Value::as_str) {
        if is_refresh_token(t) {
            return Err(invalid(
                "it is a refresh token; send an access token (`Authorization: Bearer <access token>`)",
            ));
        }
    }
    match a.get("aud") {
        Some(aud) if strings(Some(aud)).iter().any(|a| a == audience) => {}
        Some(_) => {
            return Err(AuthError::Invalid(format!(
                "its audience is not `{audience}`"
            )))
        }
        None if c.require_audience => {
            return Err(AuthError::Invalid(format!(
                "the introspection answer names no audience (`aud`); it must name `{audience}`"
            )))
        }
        None => {}
    }
    let text = |k: &str| {
        a.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    // A token a client got for itself (client credentials) has no resource
    // owner: its principal is the client, marked so it is not taken for a user.
    // A `username` (which users may pick) in that form would pass for the
    // client: refused, where `sub` (the provider's) is not there to name them.
    // The same holds for `sub`: a user and a client never share a name
    // within one source.
    let username = text("username");
    if text("sub")
        .as_deref()
        .is_some_and(|u| u.starts_with(CLIENT_PREFIX))
    {
        return Err(invalid(
            "the introspection answer's `sub` is in the `client:` form, which names a client's \
             own tokens (`client_id` without `sub`); a user's `sub` may not take it",
        ));
    }
    if text("sub").is_none()
        && username
            .as_deref()
            .is_some_and(|u| u.starts_with(CLIENT_PREFIX))
    {
        return Err(invalid(
            "the introspection answer has no `sub` and a `username` in the `client:` form, \
             which names a client's own tokens; the provider must send `sub`",
        ));
    }
    let subject = text("sub")
        .or(username)
        .or_else(|| text("client_id").map(|id| format!("{CLIENT_PREFIX}{id}")))
        .ok_or_else(|| invalid("the introspection answer names no `sub` or `client_id`"))?;
    let now = unix_now();
    let mut until = SystemTime::now() + c.cache_ttl;
    if let Some(exp) = a.get("exp") {
        let exp = numeric_date(Some(exp))
            .ok_or_else(|| invalid("the introspection answer's `exp` is not a number"))?;
        if exp <= now {
            return Err(invalid("it has expired"));
        }
        until = until.min(system_time(exp));
    }
    if let Some(nbf) = a.get("nbf") {
        if numeric_date(Some(nbf)).is_none_or(|nbf| nbf > now) {
            return Err(invalid("it is not valid yet (`nbf` is in the future)"));
        }
    }
    Ok((
        Identity {
            subject,
            source: c.name.clone(),
            groups: strings(a.get(&c.groups_claim)),
            scopes: scopes(a),
            method: AuthMethod::Introspection,
        },
        until,
    ))
}

/// `application/x-www-form-urlencoded` for one value (RFC 6749 appendix B, as
/// client credentials in HTTP Basic are encoded too).
fn form(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config() -> Introspection {
        Introspection {
            name: "okta".into(),
            url: "https://idp/introspect".into(),
            client_id: "manifold".into(),
            client_secret: "s".into(),
            audience: "https://mcp/mcp".into(),
            require_audience: true,
            groups_claim: "groups".into(),
            cache_ttl: Duration::from_secs(60),
        }
    }

    #[test]
    fn answers_are_read_strictly() {
        let now = unix_now() as u64;
        let ok =
            |v: Value| identity_of(v.as_object().expect("object"), &config(), "https://mcp/mcp");
        let (id, until) = ok(json!({"active": true, "sub": "bob", "scope": "a b",
            "aud": ["x", "https://mcp/mcp"], "groups": ["ops"], "exp": now + 10,
            "token_type": "Bearer"}))
        .expect("active");
        assert_eq!(
            (id.display_name().as_str(), id.method),
            ("introspection:okta:bob", AuthMethod::Introspection)
        );
        assert_eq!((id.scopes.len(), id.groups.len()), (2, 1));
        assert!(
            until <= SystemTime::now() + Duration::from_secs(11),
            "capped by exp"
        );
        // A client's own token (client credentials): the client is the principal.
        let (id, _) = ok(json!({"active": true, "client_id": "ci", "aud": "https://mcp/mcp"}))
            .expect("client");
        assert_eq!(id.display_name(), "introspection:okta:client:ci");
        // A fractional `exp` is floored: it caps the cache as well.
        let (_, until) = ok(
            json!({"active": true, "sub": "bob", "aud": "https://mcp/mcp",
            "exp": now as f64 + 3.9}),
        )
        .expect("fractional exp");
        assert!(until <= SystemTime::now() + Duration::from_secs(3));
        let refused = [
            json!({"active": false, "sub": "bob"}),
            json!({"sub": "bob"}),
            json!({"active": "true", "sub": "bob"}),
            json!({"active": true, "sub": "bob", "aud": "https://other"}),
            json!({"active": true, "sub": "bob"}),
            json!({"active": true, "aud": "https://mcp/mcp"}),
            // A user who picked the username `client:ci` is not the client `ci`,
            // nor is a user whose provider's `sub` says so.
            json!({"active": true, "username": "client:ci", "aud": "https://mcp/mcp"}),
            json!({"active": true, "sub": "client:ci", "client_id": "x", "aud": "https://mcp/mcp"}),
            json!({"active": true, "sub": "bob", "aud": "https://mcp/mcp", "exp": now - 5}),
            json!({"active": true, "sub": "bob", "aud": "https://mcp/mcp", "exp": "soon"}),
            json!({"active": true, "sub": "bob", "aud": "https://mcp/mcp", "nbf": now + 60}),
            json!({"active": true, "sub": "bob", "aud": "https://mcp/mcp",
                   "token_type": "refresh_token"}),
            json!({"active": true, "sub": "bob", "aud": "https://mcp/mcp",
                   "token_type": "urn:ietf:params:oauth:token-type:refresh_token"}),
        ];
        for v in refused {
            assert!(ok(v.clone()).is_err(), "{v}");
        }
        // `username` stands in for a missing `sub`; with `sub`, it is not read.
        let (id, _) = ok(json!({"active": true, "username": "alice", "aud": "https://mcp/mcp"}))
            .expect("username");
        assert_eq!(id.display_name(), "introspection:okta:alice");
        let (id, _) = ok(
            json!({"active": true, "sub": "u-42", "username": "client:ci",
            "aud": "https://mcp/mcp"}),
        )
        .expect("sub wins");
        assert_eq!(id.display_name(), "introspection:okta:u-42");
        // Without `require_audience`, an answer without `aud` passes; a wrong one never.
        let lax = Introspection {
            require_audience: false,
            ..config()
        };
        let read = |v: Value| identity_of(v.as_object().expect("object"), &lax, &lax.audience);
        assert!(read(json!({"active": true, "sub": "bob"})).is_ok());
        assert!(read(json!({"active": true, "sub": "bob", "aud": "https://other"})).is_err());
        assert_eq!(form("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
