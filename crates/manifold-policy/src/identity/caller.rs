//! Who a caller is ([`Identity`], authenticated by an [`AuthMethod`]) and why
//! credentials were not accepted ([`AuthError`], with its HTTP status and
//! RFC 6750 error code).
//!
//! Invariants: a principal is qualified by its source, so one source's
//! `alice` is never another's.

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
    /// The token's `sub` (`client:<client_id>` for an introspected token that
    /// names no subject), the API key's `name`, the certificate's typed name
    /// (`cn:alice`, `dns:…`, `email:…`, `uri:…`), the local user;
    /// `anonymous` without credentials.
    pub subject: String,
    /// Which source vouched for `subject`: the `[[auth.jwt]]` or
    /// `[[auth.introspection]]` name, `local` for the local user; empty for
    /// API keys, certificates and anonymous callers (their kind is the source).
    pub source: String,
    pub groups: Vec<String>,
    pub scopes: Vec<String>,
    pub method: AuthMethod,
}

impl Identity {
    pub fn anonymous() -> Identity {
        Identity {
            subject: "anonymous".into(),
            source: String::new(),
            groups: Vec::new(),
            scopes: Vec::new(),
            method: AuthMethod::Anonymous,
        }
    }

    /// The local user of `manifold stdio`.
    pub fn local(user: &str) -> Identity {
        Identity {
            subject: user.to_string(),
            source: manifold_config::auth::LOCAL_SOURCE.to_string(),
            groups: Vec::new(),
            scopes: Vec::new(),
            method: AuthMethod::Local,
        }
    }

    /// A verified client certificate's principal: `kind` is one of
    /// [`manifold_config::principals::CERT_NAME_TYPES`] (`cn`, `dns`, `email`,
    /// `uri`), so a certificate for the host `alice` is not the person `alice`.
    pub fn certificate(kind: &str, name: &str) -> Identity {
        Identity {
            subject: format!("{kind}:{name}"),
            source: String::new(),
            groups: Vec::new(),
            scopes: Vec::new(),
            method: AuthMethod::Mtls,
        }
    }

    /// The principal, qualified by its source, as audit records, logs, metrics,
    /// rate-limit buckets and session ownership name it:
    /// `jwt:<source>:<sub>`, `introspection:<source>:<sub>`, `key:<name>`,
    /// `cert:<type>:<name>`, `local:<user>`, or `anonymous`. Never a token.
    pub fn display_name(&self) -> String {
        match self.method {
            AuthMethod::Anonymous => "anonymous".into(),
            AuthMethod::Jwt | AuthMethod::Introspection => {
                format!("{}:{}:{}", self.method.as_str(), self.source, self.subject)
            }
            AuthMethod::ApiKey => format!("key:{}", self.subject),
            AuthMethod::Mtls => format!("cert:{}", self.subject),
            AuthMethod::Local => format!("local:{}", self.subject),
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
    /// The identity provider that would vouch for the token could not be asked
    /// (unreachable, failing, or over this gateway's bound on requests to it):
    /// the token may be good; the caller should retry later.
    #[error("the access token could not be checked: {0}")]
    Unavailable(String),
}

impl AuthError {
    /// The HTTP status: 403 for missing scopes, 503 when the identity
    /// provider could not be asked, 401 otherwise.
    pub fn http_status(&self) -> http::StatusCode {
        match self {
            AuthError::InsufficientScope(_) => http::StatusCode::FORBIDDEN,
            AuthError::Unavailable(_) => http::StatusCode::SERVICE_UNAVAILABLE,
            _ => http::StatusCode::UNAUTHORIZED,
        }
    }

    /// The RFC 6750 `error` code (none when credentials were simply absent, or
    /// could not be checked: the token was not found wanting).
    pub fn bearer_error(&self) -> Option<&'static str> {
        match self {
            AuthError::Missing | AuthError::Unavailable(_) => None,
            AuthError::Malformed => Some("invalid_request"),
            AuthError::Invalid(_) => Some("invalid_token"),
            AuthError::InsufficientScope(_) => Some("insufficient_scope"),
        }
    }

    pub fn is_insufficient_scope(&self) -> bool {
        matches!(self, AuthError::InsufficientScope(_))
    }
}
