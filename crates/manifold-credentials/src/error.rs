//! Why getting a token failed ([`CredentialError`]), and whether a login would
//! mend it.

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
