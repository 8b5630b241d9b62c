//! Who is looking at the console, and whether a form they send is theirs.
//!
//! - **Bearer**: `Authorization: Bearer` is checked exactly as on the other
//!   control endpoints (`admin_auth::authorize`), on every request.
//! - **Login**: the form takes the same credential once and sets a cookie
//!   ([`COOKIE`]: `HttpOnly`, `SameSite=Strict`, `Path=/ui`, `Secure` when
//!   the listener serves TLS) holding a random login id and its MAC under the
//!   console's key; the login lives in the gateway (`state::console`), so
//!   logging out ends it there, and every request checks its credential
//!   again: a token removed from `[[admin.tokens]]` is logged out at once,
//!   and a caller's credential is authenticated again (`[auth]` caches it),
//!   so an expired or revoked JWT, or a group `[admin] who` no longer
//!   names, ends the login.
//! - **Local admin token**: with no admin credentials configured, the
//!   credential is the local admin token (`state::local_admin`), typed in
//!   the form or carried by the one-time link `serve` prints
//!   (`/ui/login?code=…`, void once used). Nothing is open without one.
//! - **CSRF**: every form carries a token, the MAC of what authenticated the
//!   request (the login id or the bearer principal), compared in
//!   constant time; and a POST must come from the console's own origin
//!   (`Origin` equal to `http://<Host>` or listed in `admin.allowed_origins`,
//!   and `Sec-Fetch-Site`, when sent, `same-origin`). A request without
//!   `Origin` is accepted only with a bearer token (not a browser's ambient
//!   credential).
//!
//! Invariants: a cookie is never trusted before its MAC checks out; a
//! refusal never echoes a credential; failed logins go through the same log
//! budget as other refused admin credentials.
//!
//! Not here: the pages, the session table (`state::console`).

use http::{HeaderMap, HeaderValue, Method, StatusCode};

use crate::admin::auth::{self as admin_auth, AdminPrincipal};
use crate::state::console::{Credential, LoginId, CONSOLE_SESSION_LIFETIME};
use crate::state::Gateway;

/// The console's session cookie.
pub(crate) const COOKIE: &str = "manifold_console";

/// The admin listener serves plain HTTP (docs/security.md): the cookie gets
/// `Secure` only where this says TLS.
pub(crate) const ADMIN_LISTENER_TLS: bool = false;

/// How a request was authenticated.
#[derive(Debug, Clone)]
pub(crate) enum Via {
    Cookie(LoginId),
    Bearer,
}

/// The operator looking at a page.
#[derive(Debug, Clone)]
pub(crate) struct Viewer {
    pub principal: AdminPrincipal,
    pub via: Via,
    /// The CSRF token forms carry.
    pub csrf: String,
}

/// Why a request gets no page.
#[derive(Debug)]
pub(crate) enum Denied {
    /// No credential (or a login that ended): the login form, with why.
    Login(Option<&'static str>),
    /// A credential that is wrong, or the control endpoints are off here.
    Refused(admin_auth::Refused),
}

fn hex_mac(gw: &Gateway, parts: &[&[u8]]) -> Option<String> {
    gw.console.mac(parts).map(hex::encode)
}

/// The CSRF token of requests authenticated `via` as `principal`.
fn csrf_for(gw: &Gateway, via: &Via, principal: &AdminPrincipal) -> String {
    let binding = match via {
        Via::Cookie(id) => [b"login:".as_slice(), id].concat(),
        Via::Bearer => format!("bearer:{}", principal.display_name()).into_bytes(),
    };
    hex_mac(gw, &[b"csrf", &binding]).unwrap_or_default()
}

/// The token the login form carries (no login yet to bind it to).
pub(crate) fn login_csrf(gw: &Gateway) -> String {
    hex_mac(gw, &[b"csrf", b"login-form"]).unwrap_or_default()
}

/// Whether two tokens are equal, in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    !a.is_empty() && manifold_foundation::ct::eq(a.as_bytes(), b.as_bytes())
}

/// The cookie value of login `id`: its hex and a MAC of it.
fn cookie_value(gw: &Gateway, id: &LoginId) -> Option<String> {
    let mac = gw.console.mac(&[b"login", id])?;
    Some(format!("{}.{}", hex::encode(id), hex::encode(&mac[..16])))
}

/// The login a cookie value names, if its MAC checks out.
fn login_of(gw: &Gateway, value: &str) -> Option<LoginId> {
    let (id_hex, mac_hex) = value.split_once('.')?;
    let id: LoginId = hex::decode(id_hex).ok()?.try_into().ok()?;
    let want = gw.console.mac(&[b"login", &id])?;
    same(&hex::encode(&want[..16]), mac_hex).then_some(id)
}

/// The console cookie's value in `headers`.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
}

/// `Set-Cookie` for a new login.
pub(crate) fn set_cookie(gw: &Gateway, id: &LoginId, tls: bool) -> Option<HeaderValue> {
    let value = cookie_value(gw, id)?;
    let secure = if tls { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE}={value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={}{secure}",
        CONSOLE_SESSION_LIFETIME.as_secs()
    ))
    .ok()
}

/// `Set-Cookie` ending the login in the browser.
pub(crate) fn clear_cookie(tls: bool) -> HeaderValue {
    let v = if tls {
        "manifold_console=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0; Secure"
    } else {
        "manifold_console=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0"
    };
    HeaderValue::from_static(v)
}

/// The principal a login's credential still stands for, under the
/// configuration in force (a caller's credential is authenticated again).
async fn still_valid(gw: &Gateway, credential: &Credential) -> Option<AdminPrincipal> {
    let cfg = gw.cfg();
    let admin = cfg.admin.as_ref()?;
    match credential {
        Credential::Token { name, digest } => admin
            .tokens
            .iter()
            .any(|k| k.name == *name && k.sha256 == *digest)
            .then(|| AdminPrincipal::Token(name.clone())),
        Credential::Caller { bearer, .. } => {
            let auth = gw.live().auth.clone().filter(|_| !admin.who.is_empty())?;
            let id = auth.authenticate(Some(bearer)).await.ok()?;
            manifold_policy::who::matches(&admin.who, &id).then_some(AdminPrincipal::Caller(id))
        }
        Credential::Local => (!admin.has_credentials() && gw.local_admin.get().is_some())
            .then_some(AdminPrincipal::Local),
    }
}

/// Who is asking: a bearer token or a console login.
pub(crate) async fn authenticate(
    gw: &Gateway,
    headers: &HeaderMap,
    peer: std::net::IpAddr,
) -> Result<Viewer, Denied> {
    let viewer = |principal: AdminPrincipal, via: Via| Viewer {
        csrf: csrf_for(gw, &via, &principal),
        principal,
        via,
    };
    if headers.contains_key(http::header::AUTHORIZATION) {
        return match admin_auth::authorize(gw, headers, Some(peer)).await {
            Ok(p) => Ok(viewer(p, Via::Bearer)),
            Err(r) => Err(Denied::Refused(r)),
        };
    }
    let Some(value) = cookie(headers) else {
        return Err(Denied::Login(None));
    };
    let Some(id) = login_of(gw, value) else {
        return Err(Denied::Login(Some(
            "that session is not one this gateway issued (it restarted?): log in again",
        )));
    };
    let Some(credential) = gw.console.login(&id) else {
        return Err(Denied::Login(Some("your session ended: log in again")));
    };
    let Some(principal) = still_valid(gw, &credential).await else {
        gw.console.log_out(&id);
        return Err(Denied::Login(Some(
            "the credential you logged in with is no longer accepted: log in again",
        )));
    };
    Ok(viewer(principal, Via::Cookie(id)))
}

/// The answer to every failed login: one text, whatever failed (no oracle).
fn login_refused() -> admin_auth::Refused {
    admin_auth::Refused::new(
        StatusCode::UNAUTHORIZED,
        "invalid_token",
        "that is not an admin credential of this gateway",
    )
}

/// A login with `token` (an admin token, the local admin token, or a
/// credential of a caller `[admin] who` names): the new login's id, or why
/// not.
pub(crate) async fn log_in(gw: &Gateway, token: &str) -> Result<Login, admin_auth::Refused> {
    let token = token.trim();
    let mut headers = HeaderMap::new();
    let bearer = format!("Bearer {token}");
    let value = HeaderValue::from_str(&bearer).map_err(|_| login_refused())?;
    headers.insert(http::header::AUTHORIZATION, value);
    // The form counts its own attempts (`admin::console::login`).
    let credential = match admin_auth::authorize(gw, &headers, None).await {
        Ok(AdminPrincipal::Token(name)) => {
            let cfg = gw.cfg();
            let digest = cfg
                .admin
                .as_ref()
                .and_then(|a| manifold_policy::find_key(&a.tokens, token))
                .map(|k| k.sha256)
                .ok_or_else(login_refused)?;
            Credential::Token { name, digest }
        }
        Ok(AdminPrincipal::Caller(id)) => Credential::Caller { id, bearer },
        Ok(AdminPrincipal::Local) => Credential::Local,
        Err(r) if r.status() == StatusCode::UNAUTHORIZED => return Err(login_refused()),
        Err(r) => return Err(r),
    };
    start_login(gw, credential)
}

/// Whether `token` is the local admin token in force (no admin credentials
/// configured).
pub(crate) fn is_local_token(gw: &Gateway, token: &str) -> bool {
    !gw.cfg().admin.as_ref().is_some_and(|a| a.has_credentials())
        && gw.local_admin.get().is_some_and(|l| l.accepts(token))
}

/// A login through the one-time link `serve` printed (`/ui/login?code=…`).
pub(crate) fn redeem_link(gw: &Gateway, code: &str) -> Result<Login, admin_auth::Refused> {
    let local = gw
        .local_admin
        .get()
        .filter(|_| !gw.cfg().admin.as_ref().is_some_and(|a| a.has_credentials()));
    match local {
        Some(l) if l.redeem(code) => start_login(gw, Credential::Local),
        _ => Err(admin_auth::Refused::new(
            StatusCode::UNAUTHORIZED,
            "invalid_token",
            "that login link is used, expired or not this gateway's: log in with the local admin \
             token (`manifold admin token` prints it)",
        )),
    }
}

/// A login just made: its id and who it is.
pub(crate) struct Login {
    pub id: LoginId,
    pub principal: String,
}

fn start_login(gw: &Gateway, credential: Credential) -> Result<Login, admin_auth::Refused> {
    let name = credential.display_name();
    let id = gw.console.log_in(credential).ok_or_else(|| {
        admin_auth::Refused::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "logins_off",
            "console logins are off: no OS randomness for session ids; use Authorization: Bearer",
        )
    })?;
    tracing::info!(principal = %name, "console login");
    Ok(Login {
        id,
        principal: name,
    })
}

/// Why a state-changing request is not accepted as the viewer's own.
pub(crate) fn check_form(
    gw: &Gateway,
    headers: &HeaderMap,
    method: &Method,
    expected_csrf: &str,
    sent_csrf: Option<&str>,
    bearer: bool,
) -> Result<(), &'static str> {
    if method != Method::POST {
        return Err("only POST changes anything");
    }
    same_origin(gw, headers, bearer)?;
    match sent_csrf {
        Some(t) if same(t, expected_csrf) => Ok(()),
        Some(_) => Err("the form's CSRF token is not this session's (an old page, or another site's form): reload the page and try again"),
        None => Err("the form carries no CSRF token"),
    }
}

/// Whether a POST comes from the console's own origin.
fn same_origin(gw: &Gateway, headers: &HeaderMap, bearer: bool) -> Result<(), &'static str> {
    let text = |h| headers.get(h).and_then(|v: &HeaderValue| v.to_str().ok());
    if let Some(site) = text("sec-fetch-site") {
        if site != "same-origin" && !(bearer && site == "none") {
            return Err("the browser says this request came from another site (Sec-Fetch-Site)");
        }
    }
    let Some(origin) = text(http::header::ORIGIN.as_str()) else {
        return if bearer {
            Ok(())
        } else {
            Err("a browser's form must carry Origin; this one did not")
        };
    };
    let host = text(http::header::HOST.as_str()).unwrap_or("");
    let own = ["http://", "https://"]
        .iter()
        .any(|scheme| !host.is_empty() && origin.eq_ignore_ascii_case(&format!("{scheme}{host}")));
    let listed = gw.cfg().admin.as_ref().is_some_and(|a| {
        a.allowed_origins
            .iter()
            .any(|o| o.trim_end_matches('/').eq_ignore_ascii_case(origin))
    });
    if own || listed {
        Ok(())
    } else {
        Err("this form was posted from another origin")
    }
}

/// The login a viewer's cookie holds (to end it).
pub(crate) fn login_id(viewer: &Viewer) -> Option<&LoginId> {
    match &viewer.via {
        Via::Cookie(id) => Some(id),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abcd", "abcd"));
        assert!(!same("abcd", "abce"));
        assert!(!same("abcd", "abc"));
        assert!(!same("", ""));
    }

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::COOKIE,
            HeaderValue::from_static("a=1; manifold_console=xyz.123; b=2"),
        );
        assert_eq!(cookie(&h), Some("xyz.123"));
        let mut h = HeaderMap::new();
        h.insert(
            http::header::COOKIE,
            HeaderValue::from_static("manifold_console_x=1"),
        );
        assert_eq!(cookie(&h), None);
    }
}
