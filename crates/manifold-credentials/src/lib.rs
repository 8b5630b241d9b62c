//! Manifold as an OAuth client of its upstreams, following the MCP
//! authorization specification:
//!
//! - `discovery`: the upstream's `WWW-Authenticate` challenge, its protected
//!   resource metadata (RFC 9728, from the challenge or the well-known URIs
//!   with their fallbacks), then its authorization server's metadata (RFC
//!   8414, then OpenID Connect discovery; the 2025-03-26 root fallbacks);
//! - `login`: the authorization-code flow with PKCE (S256) behind `manifold
//!   login`, with the client identified by a Client ID Metadata Document, a
//!   pre-registered id, or dynamic registration as the last resort; `resource`
//!   (RFC 8707) on every request, `iss` checked (RFC 9207);
//! - `source`: the token a running gateway sends, refreshed before it
//!   expires, reloaded when `manifold login` wrote a new one, and the step-up
//!   a 403 `insufficient_scope` asks for; the client-credentials grant;
//! - `exchange`: RFC 8693 token exchange, a caller's token for one per caller
//!   whose audience is the upstream;
//! - `store`: tokens at rest, encrypted, one file per upstream.
//!
//! Invariants: every request to an authorization server is bounded by
//! [`HTTP_TIMEOUT`] and its answer by [`MAX_BODY`]; a token never reaches a
//! log line or an error message; the client's own token is never sent
//! upstream (there is no passthrough).
//!
//! Not here: sending requests to the upstream (manifold-upstream asks a
//! [`TokenSource`] for the token), the command line (the binary).

mod discovery;
mod exchange;
mod guard;
mod http;
mod login;
mod source;
mod store;

pub use discovery::{parse_challenge, Challenge};
pub use exchange::{Validated, ACCESS_TOKEN_TYPE, MAX_EXCHANGED, TOKEN_EXCHANGE_GRANT};
pub use login::{browsable, login, LoginOptions};
pub use source::{Refusal, TokenSource};
pub use store::{Record, Store};

use std::time::Duration;

/// The bound on one request to an authorization server or metadata URL.
pub const HTTP_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest metadata or token answer read.
pub const MAX_BODY: usize = 256 * 1024;
/// A token is refreshed when it expires within this margin.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(60);
/// How long `manifold login` waits for the browser to come back.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(300);
/// Step-ups (a new authorization after a 403 `insufficient_scope`) one
/// upstream may ask for before Manifold stops asking: the upstream would
/// refuse every scope.
pub const MAX_STEP_UPS: u32 = 3;

/// Why getting or using a credential failed.
#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// No usable token: someone has to run `manifold login`.
    #[error("{0}")]
    NeedsLogin(String),
    /// The token store cannot be read or written.
    #[error("token store: {0}")]
    Store(String),
    /// An authorization server or metadata URL answered wrongly or not at all.
    #[error("{0}")]
    Server(String),
    /// The flow was refused for the client's safety (a mismatched resource or
    /// issuer, a forged state).
    #[error("{0}")]
    Refused(String),
}

impl CredentialError {
    /// Whether a person has to log in again for this upstream.
    pub fn needs_login(&self) -> bool {
        matches!(
            self,
            CredentialError::NeedsLogin(_) | CredentialError::Store(_)
        )
    }
}

/// 32 random bytes, base64url: PKCE verifiers and `state`.
pub(crate) fn random_token() -> Result<String, CredentialError> {
    use base64::Engine;
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|_| CredentialError::Server("no OS randomness".into()))?;
    Ok(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw))
}

/// The S256 challenge of a PKCE verifier.
pub(crate) fn s256(verifier: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn s256_is_the_unpadded_base64url_sha256_of_the_verifier() {
        // Computed independently: base64.urlsafe_b64encode(sha256(v)).rstrip("=") in Python.
        assert_eq!(
            super::s256("dBjftJeZ4CVP-mJ92K1riD4QrRyDJ5Tg8cbxqUHvpzM"),
            "iF0TAnaj1z4hWWtXaHxfoOZfvulOoSv6DGC_MrY0uGE"
        );
    }
}
