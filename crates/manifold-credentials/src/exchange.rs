//! `token_exchange` (RFC 8693): a caller's validated access token exchanged,
//! at the upstream's authorization server, for a token whose audience is the
//! upstream — each user reaches the upstream as themselves, and the caller's
//! own token never leaves Manifold for the upstream (no passthrough).
//!
//! Invariants: a caller's token is sent only to the pinned issuer's token
//! endpoint, and only when the front-door source that validated it may be
//! trusted with it there (`auth.exchange_from`, by default the issuer's own:
//! the `[[auth.jwt]]` with that issuer, the `[[auth.introspection]]`
//! endpoints on its origin); any other caller is refused before anything is
//! sent; exchanged tokens are cached per caller token (by its SHA-256,
//! never the token itself as a key) until [`EXCHANGE_MARGIN`] before they
//! expire; the cache holds at most [`MAX_EXCHANGED`] entries (expired ones go
//! first, then all); the exchange authenticates as the configured client at
//! the token endpoint the gateway's own client-credentials grant found.
//!
//! Not here: finding the caller's token (the server's relay), the gateway's
//! own token (`source`).

use sha2::{Digest, Sha256};

use crate::error::CredentialError;
use crate::source::TokenSource;
use manifold_foundation::time::unix_now;

/// How the front door validated a caller's bearer token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validated {
    /// A JWT of an `[[auth.jwt]]` issuer (its `iss` was matched exactly).
    Jwt,
    /// An opaque token an `[[auth.introspection]]` endpoint answered for.
    Introspection,
}

/// The `iss` of a JWT, read without verifying it: used only on a token the
/// front door has verified, whose `iss` chose the issuer it was checked with.
fn jwt_issuer(token: &str) -> Option<String> {
    use base64::Engine;
    let claims = token.split('.').nth(1)?;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(claims.trim_end_matches('='))
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&raw).ok()?;
    v["iss"].as_str().map(str::to_string)
}

/// The grant type of RFC 8693.
pub const TOKEN_EXCHANGE_GRANT: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an OAuth access token (RFC 8693 §3).
pub const ACCESS_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:access_token";
/// Exchanged tokens cached at once, per upstream.
pub const MAX_EXCHANGED: usize = 10_000;
/// An exchanged token is exchanged again this long before it expires.
pub const EXCHANGE_MARGIN: u64 = 30;
/// The lifetime assumed when the server gives none.
const DEFAULT_LIFETIME: u64 = 300;

impl TokenSource {
    /// Whether calls reach this upstream on behalf of their caller.
    pub fn exchanges(&self) -> bool {
        self.mode() == "token_exchange"
    }

    /// Whether a caller's token validated `via` may be sent to this
    /// upstream's authorization server: the refusal says why not.
    fn may_send(&self, subject_token: &str, via: Validated) -> Result<(), CredentialError> {
        let from = &self.client().exchange_from;
        let issuer = self.client().issuer.as_deref().unwrap_or_default();
        let refused = |whose: String| {
            CredentialError::Refused(format!(
                "the caller's token comes from {whose}; `{}` exchanges tokens at {issuer} only for callers of {} (`auth.exchange_from`); nothing was sent",
                self.upstream,
                describe(from)
            ))
        };
        match via {
            Validated::Jwt => {
                let iss = jwt_issuer(subject_token)
                    .ok_or_else(|| refused("a JWT without a readable `iss`".into()))?;
                if from.jwt_issuers.contains(&iss) {
                    Ok(())
                } else {
                    Err(refused(format!("the issuer {iss}")))
                }
            }
            Validated::Introspection if from.introspection => Ok(()),
            Validated::Introspection => Err(refused("an introspection endpoint".into())),
        }
    }

    /// A token for the upstream on behalf of the caller who presented
    /// `subject_token`, which the front door validated `via`.
    pub async fn exchange(
        &self,
        subject_token: &str,
        via: Validated,
    ) -> Result<String, CredentialError> {
        let key = hex::encode(Sha256::digest(subject_token.as_bytes()));
        let now = unix_now();
        if let Some((t, exp)) = self.lock_exchanged().get(&key) {
            if *exp > now + EXCHANGE_MARGIN {
                return Ok(t.clone());
            }
        }
        // Checked before anything is sent (a cached token was checked when
        // it was exchanged: the same token has the same source).
        self.may_send(subject_token, via)?;
        // The endpoint, resource and client authentication the gateway's own
        // grant found.
        let r = match self.current_record() {
            Some(r) => r,
            None => {
                self.token().await?;
                self.current_record().ok_or_else(|| {
                    CredentialError::Server("no token endpoint known for the exchange".into())
                })?
            }
        };
        let v = self
            .grant(
                &r,
                vec![
                    ("grant_type", TOKEN_EXCHANGE_GRANT.into()),
                    ("subject_token", subject_token.to_string()),
                    ("subject_token_type", ACCESS_TOKEN_TYPE.into()),
                    ("requested_token_type", ACCESS_TOKEN_TYPE.into()),
                    ("resource", r.resource.clone()),
                    ("audience", r.resource.clone()),
                ],
            )
            .await
            .map_err(|e| {
                CredentialError::Refused(format!(
                    "the authorization server would not exchange the caller's token for `{}`: {e}",
                    self.upstream
                ))
            })?;
        let token = v["access_token"].as_str().unwrap_or_default().to_string();
        let exp = now + v["expires_in"].as_u64().unwrap_or(DEFAULT_LIFETIME);
        let mut cache = self.lock_exchanged();
        if cache.len() >= MAX_EXCHANGED {
            cache.retain(|_, (_, e)| *e > now + EXCHANGE_MARGIN);
            if cache.len() >= MAX_EXCHANGED {
                cache.clear();
            }
        }
        cache.insert(key, (token.clone(), exp));
        Ok(token)
    }
}

/// The sources `from` permits, for a refusal.
fn describe(from: &manifold_config::credentials::ExchangeFrom) -> String {
    let mut parts: Vec<String> = from.jwt_issuers.clone();
    if from.introspection {
        parts.push("its introspection endpoints".into());
    }
    if parts.is_empty() {
        "no source".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_jwt_issuer_is_read_from_its_claims() {
        use base64::Engine;
        let enc = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
        let t = format!(
            "{}.{}.sig",
            enc(r#"{"alg":"RS256"}"#),
            enc(r#"{"iss":"https://idp.example.com","sub":"a"}"#)
        );
        assert_eq!(
            super::jwt_issuer(&t).as_deref(),
            Some("https://idp.example.com")
        );
        assert_eq!(super::jwt_issuer("opaque-token"), None);
        assert_eq!(super::jwt_issuer("a.!!.c"), None);
    }
}
