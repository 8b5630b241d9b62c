//! `token_exchange` (RFC 8693): a caller's validated access token exchanged,
//! at the upstream's authorization server, for a token whose audience is the
//! upstream — each user reaches the upstream as themselves, and the caller's
//! own token never leaves Manifold for the upstream (no passthrough).
//!
//! Invariants: exchanged tokens are cached per caller token (by its SHA-256,
//! never the token itself as a key) until [`EXCHANGE_MARGIN`] before they
//! expire; the cache holds at most [`MAX_EXCHANGED`] entries (expired ones go
//! first, then all); the exchange authenticates as the configured client at
//! the token endpoint the gateway's own client-credentials grant found.
//!
//! Not here: finding the caller's token (the server's relay), the gateway's
//! own token (`source`).

use sha2::{Digest, Sha256};

use crate::source::TokenSource;
use crate::{now_secs, CredentialError};

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

    /// A token for the upstream on behalf of the caller who presented
    /// `subject_token`.
    pub async fn exchange(&self, subject_token: &str) -> Result<String, CredentialError> {
        let key = hex::encode(Sha256::digest(subject_token.as_bytes()));
        let now = now_secs();
        if let Some((t, exp)) = self.lock_exchanged().get(&key) {
            if *exp > now + EXCHANGE_MARGIN {
                return Ok(t.clone());
            }
        }
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
