//! Opaque access tokens, checked by an authorization server's introspection
//! endpoint (RFC 7662): Manifold posts the token with its own client
//! credentials (HTTP Basic) and reads `active`, `sub` (or `username`),
//! `scope`, `exp`, `aud` and the groups claim.
//!
//! Invariants: an inactive token, or one whose `aud` does not name this
//! gateway, is refused; an answer is cached (by the caller) no longer than the
//! token's `exp` nor `cache_ttl`; every request is bounded in time
//! ([`super::jwt::FETCH_TIMEOUT`]) and size ([`MAX_ANSWER_BYTES`]); the token
//! never appears in a log line or an error.
//!
//! Not here: JWTs (`jwt`), the cache (`cache`).

use base64::Engine;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Map, Value};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::jwt::{scopes, strings, FETCH_TIMEOUT};
use super::{AuthError, AuthMethod, Identity};
use manifold_config::Introspection;

/// The largest introspection answer read.
pub const MAX_ANSWER_BYTES: usize = 64 * 1024;

pub(super) struct Introspector {
    config: Introspection,
    client: super::HttpsClient,
}

impl Introspector {
    pub(super) fn new(config: Introspection) -> Introspector {
        Introspector {
            config,
            client: super::https_client(),
        }
    }

    /// The token's identity and until when it may be cached.
    pub(super) async fn check(&self, token: &str) -> Result<(Identity, SystemTime), AuthError> {
        let answer = match tokio::time::timeout(FETCH_TIMEOUT, self.ask(token)).await {
            Ok(Ok(a)) => a,
            Ok(Err(e)) => {
                tracing::warn!(url = %self.config.url, error = %e, "token introspection failed");
                return Err(AuthError::Invalid(
                    "the token could not be checked (introspection failed); try again".into(),
                ));
            }
            Err(_) => {
                tracing::warn!(url = %self.config.url, "token introspection timed out");
                return Err(AuthError::Invalid(
                    "the token could not be checked (introspection timed out); try again".into(),
                ));
            }
        };
        identity_of(&answer, &self.config)
    }

    async fn ask(&self, token: &str) -> Result<Map<String, Value>, String> {
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
            .map_err(|e| e.to_string())?;
        let resp = self.client.request(req).await.map_err(|e| e.to_string())?;
        if !resp.status().is_success() {
            return Err(format!("HTTP {}", resp.status()));
        }
        let bytes = Limited::new(resp.into_body(), MAX_ANSWER_BYTES)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        serde_json::from_slice(&bytes).map_err(|e| format!("not a JSON object: {e}"))
    }
}

/// What an answer says of the token.
fn identity_of(
    a: &Map<String, Value>,
    c: &Introspection,
) -> Result<(Identity, SystemTime), AuthError> {
    let invalid = |m: &str| AuthError::Invalid(m.to_string());
    if a.get("active") != Some(&Value::Bool(true)) {
        return Err(invalid(
            "the token is not active (expired, revoked or unknown)",
        ));
    }
    if let Some(aud) = a.get("aud") {
        if !strings(Some(aud)).contains(&c.audience) {
            return Err(AuthError::Invalid(format!(
                "its audience is not `{}`",
                c.audience
            )));
        }
    }
    let subject = ["sub", "username"]
        .iter()
        .find_map(|k| a.get(*k).and_then(Value::as_str))
        .filter(|s| !s.is_empty())
        .ok_or_else(|| invalid("the introspection answer names no `sub`"))?
        .to_string();
    let now = SystemTime::now();
    let mut until = now + c.cache_ttl;
    if let Some(exp) = a.get("exp").and_then(Value::as_u64) {
        let exp = UNIX_EPOCH + Duration::from_secs(exp);
        if exp <= now {
            return Err(invalid("it has expired"));
        }
        until = until.min(exp);
    }
    Ok((
        Identity {
            subject,
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
            url: "https://idp/introspect".into(),
            client_id: "manifold".into(),
            client_secret: "s".into(),
            audience: "https://mcp/mcp".into(),
            groups_claim: "groups".into(),
            cache_ttl: Duration::from_secs(60),
        }
    }

    #[test]
    fn answers_are_read_strictly() {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let ok = |v: Value| identity_of(v.as_object().expect("object"), &config());
        let (id, until) = ok(json!({"active": true, "sub": "bob", "scope": "a b",
            "aud": ["x", "https://mcp/mcp"], "groups": ["ops"], "exp": now + 10}))
        .expect("active");
        assert_eq!(
            (id.subject.as_str(), id.method),
            ("bob", AuthMethod::Introspection)
        );
        assert_eq!((id.scopes.len(), id.groups.len()), (2, 1));
        assert!(
            until <= SystemTime::now() + Duration::from_secs(11),
            "capped by exp"
        );
        let refused = [
            json!({"active": false, "sub": "bob"}),
            json!({"sub": "bob"}),
            json!({"active": "true", "sub": "bob"}),
            json!({"active": true, "sub": "bob", "aud": "https://other"}),
            json!({"active": true}),
            json!({"active": true, "sub": "bob", "exp": now - 5}),
        ];
        for v in refused {
            assert!(ok(v.clone()).is_err(), "{v}");
        }
        assert_eq!(form("a b&c=d/é"), "a+b%26c%3Dd%2F%C3%A9");
    }
}
