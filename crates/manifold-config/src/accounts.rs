//! Each caller's own upstream account: `[upstreams.<name>.auth] type =
//! "user_oauth"` (every caller authorizes the gateway at the upstream's
//! authorization server, once) and `type = "user_secret"` (every caller pastes
//! a personal key, once), plus `[credentials] connect_ttl` (how long a connect
//! link lives). The file model of `inject` and the validated forms.
//!
//! Invariants: both kinds need `[credentials]` (accounts are sealed at rest
//! there) and an HTTP upstream; `user_oauth` pins its `issuer` (an upstream
//! never chooses where a caller's authorization goes) and names a `client_id`;
//! a `resource` is an absolute `http(s)` URL; a `user_secret` header is a
//! valid header name, its `format` holds `{secret}` exactly once and no line
//! break; a query parameter name is URL-safe.
//!
//! Not here: the flows and the store (manifold-credentials), the connect pages
//! and the elicitation (manifold-server).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Default `[credentials] connect_ttl` (10 minutes): how long a connect link
/// is good for.
pub const DEFAULT_CONNECT_TTL: Duration = Duration::from_secs(600);
/// The longest `[credentials] connect_ttl` accepted: a link is a capability
/// and should not outlive the conversation it was shown in.
pub const MAX_CONNECT_TTL: Duration = Duration::from_secs(24 * 3600);
/// Default `inject.header` of a `user_secret` upstream.
pub const DEFAULT_INJECT_HEADER: &str = "Authorization";
/// Default `inject.format` of a `user_secret` upstream.
pub const DEFAULT_INJECT_FORMAT: &str = "Bearer {secret}";
/// What `inject.format` replaces with the caller's secret.
pub const SECRET_PLACEHOLDER: &str = "{secret}";
/// The one `check` a `user_secret` upstream may name.
pub const CHECK_TOOLS_LIST: &str = "tools/list";

/// `inject = { … }` of a `user_secret` upstream, in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct InjectSection {
    /// The header the secret goes in (default [`DEFAULT_INJECT_HEADER`]).
    #[serde(default)]
    pub header: Option<String>,
    /// The header's value, `{secret}` replaced (default
    /// [`DEFAULT_INJECT_FORMAT`]).
    #[serde(default)]
    pub format: Option<String>,
    /// Instead of a header: this query parameter carries the secret (weaker:
    /// URLs end up in access logs along the way; only for servers that need it).
    #[serde(default)]
    pub query: Option<String>,
}

/// Where a caller's secret goes on a request to the upstream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inject {
    Header { name: String, format: String },
    Query { name: String },
}

impl Inject {
    /// The header or query pair carrying `secret`.
    pub fn render(&self, secret: &str) -> (String, String) {
        match self {
            Inject::Header { name, format } => {
                (name.clone(), format.replace(SECRET_PLACEHOLDER, secret))
            }
            Inject::Query { name } => (name.clone(), secret.to_string()),
        }
    }
}

/// The connect link's lifetime, validated (`[credentials] connect_ttl`).
pub(crate) fn connect_ttl(v: Option<&str>) -> Result<Duration, String> {
    let Some(v) = v else {
        return Ok(DEFAULT_CONNECT_TTL);
    };
    let d = crate::limits::duration("credentials.connect_ttl", v)?;
    if d.is_zero() || d > MAX_CONNECT_TTL {
        return Err(format!(
            "key `credentials.connect_ttl`: must be more than 0 and at most {}h",
            MAX_CONNECT_TTL.as_secs() / 3600
        ));
    }
    Ok(d)
}

/// `inject` of a `user_secret` upstream, validated.
pub(crate) fn inject(key: &str, i: Option<&InjectSection>) -> Result<Inject, String> {
    let i = i.cloned().unwrap_or_default();
    if let Some(q) = i.query {
        if i.header.is_some() || i.format.is_some() {
            return Err(format!(
                "key `{key}.auth.inject`: `query` or `header` (with `format`), not both"
            ));
        }
        if q.is_empty()
            || !q
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
        {
            return Err(format!(
                "key `{key}.auth.inject.query`: {q:?} is not a plain query parameter name (letters, digits, `-_.~`)"
            ));
        }
        return Ok(Inject::Query { name: q });
    }
    let name = i
        .header
        .unwrap_or_else(|| DEFAULT_INJECT_HEADER.to_string());
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
    {
        return Err(format!(
            "key `{key}.auth.inject.header`: {name:?} is not an HTTP header name"
        ));
    }
    let format = i
        .format
        .unwrap_or_else(|| DEFAULT_INJECT_FORMAT.to_string());
    if format.matches(SECRET_PLACEHOLDER).count() != 1 || format.contains(['\r', '\n']) {
        return Err(format!(
            "key `{key}.auth.inject.format`: {format:?} must hold `{SECRET_PLACEHOLDER}` exactly once, on one line"
        ));
    }
    Ok(Inject::Header { name, format })
}

/// `resource` of a `user_oauth` upstream: written, or the upstream's URL.
pub(crate) fn resource(key: &str, written: Option<&str>, url: &str) -> Result<String, String> {
    let Some(r) = written else {
        return Ok(url.to_string());
    };
    match url::Url::parse(r) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() && u.fragment().is_none() => {
            Ok(r.to_string())
        }
        _ => Err(format!(
            "key `{key}.auth.resource`: {r:?} must be an absolute http(s) URL without a fragment (RFC 8707)"
        )),
    }
}
