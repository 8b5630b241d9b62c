//! Who may use the admin listener, and how: the trust boundary of the
//! operators' plane.
//!
//! - Every request: `Host` and `Origin` checked with `[admin]`'s rules (see
//!   `origin`; IP literals and `localhost` are accepted as hosts, because the
//!   kubelet and Prometheus address pods by IP and a DNS-rebinding page never
//!   can).
//! - The control endpoints (everything but the probes and `/metrics`):
//!   `Authorization: Bearer` with one of `[[admin.tokens]]` (digests compared
//!   in constant time, as API keys are), or a caller `[auth]` authenticates
//!   whom `[admin] who` names. With neither configured, the local admin
//!   token (`state::local_admin`, kept in a file only the gateway's user can
//!   read): loopback is not a credential, since the agent on the same host
//!   is the process a prompt injection steers.
//! - A refused credential gets one answer (401 `invalid_token`) whether it
//!   is malformed, unknown, or a valid caller `[admin] who` does not name:
//!   the admin plane is no oracle for which client credentials are valid
//!   (the log says which). Past an address's budget of refused credentials
//!   (`[admin] failed_logins_per_minute`) the answer is 429, the credential
//!   unread; the local admin token is checked before the budget.
//! - Requests that change state must not be cross-site forms: they carry
//!   `Content-Type: application/json`, which a form cannot send and a
//!   cross-origin script cannot send without a CORS preflight this listener
//!   never grants.
//!
//! Invariants: a refusal never echoes a credential; refused credentials are
//! logged within the authentication log budget; every control request has an
//! [`AdminPrincipal`] (logged with each reload; audit records will carry it).
//!
//! Not here: serving or routing (`admin`), verifying tokens (manifold-policy).

use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode};
use http_body_util::Full;
use manifold_policy::Identity;
use serde_json::json;

use crate::front::origin;
use crate::state::Gateway;

/// The `realm` of the admin listener's challenges.
pub(crate) const REALM: &str = "manifold-admin";

/// Who is using a control endpoint.
#[derive(Debug, Clone)]
pub(crate) enum AdminPrincipal {
    /// One of `[[admin.tokens]]`, by name.
    Token(String),
    /// A caller `[auth]` authenticated and `[admin] who` names.
    Caller(Arc<Identity>),
    /// No admin credentials are configured: the holder of the local admin
    /// token.
    Local,
}

impl AdminPrincipal {
    /// How logs (and audit records) name the principal: `admin_token:ops`,
    /// `jwt:alice`, `admin_token:local`.
    pub(crate) fn display_name(&self) -> String {
        match self {
            AdminPrincipal::Token(name) => format!("admin_token:{name}"),
            AdminPrincipal::Caller(id) => id.display_name(),
            AdminPrincipal::Local => "admin_token:local".into(),
        }
    }
}

/// A refused admin request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused {
    status: StatusCode,
    /// An RFC 6750 code where one fits, else a short name.
    error: &'static str,
    description: String,
    /// A 401: says how to authenticate (`WWW-Authenticate`).
    challenge: bool,
    /// A 429: when to try again (`Retry-After`, seconds).
    retry_after: Option<u64>,
}

impl Refused {
    pub(crate) fn new(
        status: StatusCode,
        error: &'static str,
        description: impl Into<String>,
    ) -> Refused {
        Refused {
            challenge: status == StatusCode::UNAUTHORIZED,
            status,
            error,
            description: description.into(),
            retry_after: None,
        }
    }

    /// Too many refused credentials from one address: 429, and when to
    /// come back.
    pub(crate) fn throttled(wait: std::time::Duration) -> Refused {
        let mut r = Refused::new(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_attempts",
            "too many refused credentials from this address: wait a minute",
        );
        r.retry_after = Some(wait.as_secs().max(1));
        r
    }

    pub(crate) fn status(&self) -> StatusCode {
        self.status
    }
    /// Why, as said to the client (never a credential).
    pub(crate) fn description(&self) -> &str {
        &self.description
    }

    /// The response: the status, a JSON body saying why, and on a 401 the
    /// `WWW-Authenticate` challenge.
    pub(crate) fn response(&self) -> Response<Full<Bytes>> {
        let body = json!({"error": self.error, "error_description": self.description});
        let mut r = Response::new(Full::new(Bytes::from(format!("{body}\n"))));
        *r.status_mut() = self.status;
        r.headers_mut().insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if let Some(v) = self
            .retry_after
            .and_then(|s| HeaderValue::from_str(&s.to_string()).ok())
        {
            r.headers_mut().insert(http::header::RETRY_AFTER, v);
        }
        if self.challenge {
            let mut challenge = format!("Bearer realm=\"{REALM}\"");
            if self.error != "unauthorized" {
                challenge.push_str(&format!(", error=\"{}\"", self.error));
            }
            if let Ok(v) = HeaderValue::from_str(&challenge) {
                r.headers_mut().insert(http::header::WWW_AUTHENTICATE, v);
            }
        }
        r
    }
}

/// DNS-rebinding and cross-site protection with `[admin]`'s rules.
pub(crate) fn check_origin_and_host(
    gw: &Gateway,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), Refused> {
    let cfg = gw.cfg();
    let (hosts, origins) = cfg
        .admin
        .as_ref()
        .map(|a| (&a.allowed_hosts[..], &a.allowed_origins[..]))
        .unwrap_or_default();
    let rules = origin::Rules {
        loopback_listener: on_loopback(gw),
        allowed_hosts: hosts,
        allowed_origins: origins,
        literal_hosts: true,
    };
    origin::check(&rules, headers, authority).map_err(|r| {
        let why = match r {
            origin::Rejected::HostNotAllowed(host) | origin::Rejected::HostNotListed(host) => {
                format!(
                    "Host `{host}` is not allowed on the admin listener (DNS-rebinding protection): \
                     use its IP address or localhost, or add the name to admin.allowed_hosts"
                )
            }
            origin::Rejected::OriginNotAllowed(origin) => format!(
                "Origin `{origin}` is not allowed on the admin listener; add it to admin.allowed_origins"
            ),
        };
        Refused::new(StatusCode::FORBIDDEN, "forbidden", why)
    })
}

/// Whether the admin listener is on a loopback address (as configured at
/// start: a reload cannot move it).
fn on_loopback(gw: &Gateway) -> bool {
    gw.started
        .admin
        .as_ref()
        .is_some_and(|a| a.listen.ip().is_loopback())
}

/// Who is asking, if they may use the control endpoints. `peer`: the
/// address whose refused credentials are counted (`LOGIN_FAILURES_PER_WINDOW`
/// per window, shared with the console's login form); `None` when the
/// caller counts them itself.
pub(crate) async fn authorize(
    gw: &Gateway,
    headers: &HeaderMap,
    peer: Option<std::net::IpAddr>,
) -> Result<AdminPrincipal, Refused> {
    let cfg = gw.cfg();
    let admin = cfg.admin.as_ref().filter(|a| a.has_credentials());
    let local = match admin {
        Some(_) => None,
        None => Some(gw.local_admin.get().ok_or_else(|| {
            // Started with credentials a reload then removed: no local token
            // was made, and none is made while serving.
            Refused::new(
                StatusCode::FORBIDDEN,
                "control_endpoints_off",
                "the admin control endpoints need credentials and none are configured: add                  [[admin.tokens]] (a name, and the hash `manifold auth hash-key` prints) or                  [admin] who, or restart to use the local admin token. /healthz, /readyz and                  /metrics stay open",
            )
        })?),
    };
    let Some(value) = headers.get(http::header::AUTHORIZATION) else {
        let how = if local.is_some() {
            "the admin control endpoints need credentials: send `Authorization: Bearer <token>` \
             with the local admin token (`manifold admin token` prints it), or open the console \
             link `manifold serve` printed"
        } else {
            "the admin control endpoints need credentials: send `Authorization: Bearer <token>` \
             with an [[admin.tokens]] token (or a credential of a caller [admin] who names)"
        };
        return Err(Refused::new(StatusCode::UNAUTHORIZED, "unauthorized", how));
    };
    // One answer for every refused credential (no oracle); the log says why.
    let refused = |why: String| {
        if let Some(suppressed) = gw.auth_refusals.allow() {
            tracing::info!(error = %why, suppressed, "admin request refused at authentication");
        }
        Refused::new(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            "the bearer token is not an admin credential of this gateway",
        )
    };
    let Some((value, token)) = value
        .to_str()
        .ok()
        .and_then(|v| Some((v, manifold_policy::bearer_token(v)?)))
    else {
        return Err(refused(
            "the Authorization header is not `Bearer <token>`".into(),
        ));
    };
    // One attempt of the peer's budget, taken before the credential is
    // looked at and given back when it is accepted.
    let attempt = || match peer.map(|p| gw.admin_attempt(p)) {
        Some(Err(wait)) => Err(Refused::throttled(wait)),
        _ => Ok(()),
    };
    let accepted = |p: AdminPrincipal| {
        if let Some(peer) = peer {
            gw.console.login_succeeded(peer);
        }
        Ok(p)
    };
    let Some(admin) = admin else {
        // 256 random bits: checked before any budget (guessing it is
        // hopeless, and a local process failing on purpose cannot lock its
        // holder out).
        if local.is_some_and(|l| l.accepts(token)) {
            return Ok(AdminPrincipal::Local);
        }
        attempt()?;
        return Err(refused("not the local admin token".into()));
    };
    attempt()?;
    if let Some(key) = manifold_policy::find_key(&admin.tokens, token) {
        return accepted(AdminPrincipal::Token(key.name.clone()));
    }
    let auth = gw.live().auth.clone().filter(|_| !admin.who.is_empty());
    let Some(auth) = auth else {
        return Err(refused("not one of [[admin.tokens]]".into()));
    };
    match auth.authenticate(Some(value)).await {
        Ok(id) if manifold_policy::who::matches(&admin.who, &id) => {
            accepted(AdminPrincipal::Caller(id))
        }
        Ok(id) => Err(refused(format!(
            "`{}` is neither an [[admin.tokens]] token nor a caller [admin] who names",
            id.display_name()
        ))),
        Err(e) => Err(refused(e.to_string())),
    }
}

/// A request that changes state (`POST /reload`, and those to come) must
/// carry `Content-Type: application/json`: a cross-site form cannot.
pub(crate) fn not_a_form(headers: &HeaderMap) -> Result<(), Refused> {
    let ctype = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let json = ctype
        .strip_prefix(manifold_protocol::methods::CONTENT_TYPE_JSON)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(';'));
    if json {
        return Ok(());
    }
    Err(Refused::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "a request that changes state needs `Content-Type: application/json` (a cross-site \
         form cannot send it); the body may be empty",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_json_passes_for_a_state_change() {
        let with = |ctype: Option<&str>| {
            let mut h = HeaderMap::new();
            if let Some(c) = ctype {
                h.insert(http::header::CONTENT_TYPE, c.parse().unwrap());
            }
            not_a_form(&h).is_ok()
        };
        assert!(with(Some("application/json")));
        assert!(with(Some("Application/JSON; charset=utf-8")));
        for simple in [
            None,
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("text/plain"),
            Some("application/jsonp"),
        ] {
            assert!(!with(simple), "{simple:?}");
        }
    }

    #[test]
    fn a_401_challenges_and_never_echoes_the_credential() {
        let r = Refused::new(StatusCode::UNAUTHORIZED, "invalid_token", "not a token");
        let resp = r.response();
        assert_eq!(resp.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            resp.headers()[http::header::WWW_AUTHENTICATE],
            "Bearer realm=\"manifold-admin\", error=\"invalid_token\""
        );
        let off = Refused::new(StatusCode::FORBIDDEN, "control_endpoints_off", "x").response();
        assert!(off.headers().get(http::header::WWW_AUTHENTICATE).is_none());
    }
}
