//! Random state and PKCE (RFC 7636): the `state` and verifier values of a
//! login, and the S256 challenge of a verifier.
//!
//! Invariants: 32 bytes of OS randomness per value, or an error (never a
//! weaker fallback).

use crate::error::CredentialError;

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
