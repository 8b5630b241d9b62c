//! Signing the browser in at the front door's OpenID provider
//! (`[credentials] sign_in_client_id`) before a connect page links anything,
//! and the self-service page `<path>/connect/manage` where a signed-in person
//! sees and disconnects their own accounts.
//!
//! The flow: the page redirects to the `[[auth.jwt]]` issuer's authorization
//! endpoint (`scope=openid`, PKCE, a `nonce`, and a `state` sealed under the
//! link key naming where to come back); `/oauth/callback` redeems the code
//! for an ID token, verifies it with the issuer's keys (audience: the client
//! id; the nonce; unexpired), and sets a cookie proving "this browser is
//! principal P" for [`PROOF_LIFETIME`]. A link is then bound only when P is
//! its principal: a link sent to someone else shows them whose it is and
//! links nothing.
//!
//! Invariants: the cookie is `HttpOnly`, `SameSite=Lax` (it must come back on
//! the issuer's redirect), `Secure` when the public URL is `https`, scoped to
//! the connect pages, and authenticated (HMAC under the link key) with its
//! expiry; a sign-in state is single use on the replica that takes it; the
//! nonce and the PKCE verifier are derived from the state's own random id.
//!
//! Not here: the links (`state::connects`), the ID token's checks
//! (manifold-policy `verify_id_token`), the OIDC requests
//! (manifold-credentials `SignInClient`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use http::{HeaderMap, Response, StatusCode};
use manifold_credentials::{AccountStore, SignInClient};
use maud::html;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::page::{field, gone, page, CALLBACK_PATH};
use crate::front::sse::{self, Body};
use crate::state::Gateway;

/// The cookie proving who signed in.
pub const COOKIE: &str = "manifold_connect";
/// How long a sign-in proves who holds the browser.
pub const PROOF_LIFETIME: std::time::Duration = std::time::Duration::from_secs(600);
/// The associated data of a sealed sign-in state.
const STATE_AAD: &[u8] = b"sign-in";

/// What a sign-in state holds: its own id (nonce and verifier derive from
/// it) and where the browser goes back to.
#[derive(Serialize, Deserialize)]
pub(crate) struct SignInState {
    pub id: String,
    pub back: String,
}

/// The relying party, when sign-in is configured.
pub(crate) fn client(gw: &Gateway) -> Option<SignInClient> {
    gw.cfg()
        .credentials
        .as_ref()
        .and_then(|c| c.sign_in.as_ref())
        .map(SignInClient::new)
}

fn base(gw: &Gateway) -> String {
    gw.public_base().unwrap_or_default()
}

/// The principal this browser proved to be, if its cookie is authentic and
/// fresh.
pub(crate) fn signed_in(gw: &Gateway, headers: &HeaderMap) -> Option<String> {
    let cookie = headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .find_map(|c| {
            c.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_string)
        })?;
    let mut parts = cookie.split('.');
    let (who, until, mac) = (parts.next()?, parts.next()?, parts.next()?);
    let want = gw
        .tables
        .connects
        .mac(&[b"signed-in", who.as_bytes(), until.as_bytes()]);
    if !manifold_foundation::ct::eq(want.as_bytes(), mac.as_bytes()) {
        return None;
    }
    if until.parse::<u64>().ok()? <= manifold_foundation::time::unix_now() {
        return None;
    }
    String::from_utf8(URL_SAFE_NO_PAD.decode(who).ok()?).ok()
}

/// Sends the browser to sign in, coming back to `back` (a connect path).
pub(crate) async fn start(gw: &Gateway, rp: &SignInClient, back: &str) -> Response<Body> {
    let mut raw = [0u8; 24];
    let _ = getrandom::fill(&mut raw);
    let st = SignInState {
        id: URL_SAFE_NO_PAD.encode(raw),
        back: back.to_string(),
    };
    let Some(state) = gw.tables.connects.seal(STATE_AAD, &st) else {
        return page(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Not now",
            html! { p { "Signing in is not possible now." } },
        );
    };
    let connects = &gw.tables.connects;
    let nonce = connects.mac(&[b"nonce", st.id.as_bytes()]);
    let verifier = connects.mac(&[b"sign-in-pkce", st.id.as_bytes()]);
    let redirect = format!("{}{CALLBACK_PATH}", base(gw));
    match rp.authorize_url(&redirect, &state, &nonce, &verifier).await {
        Ok(to) => Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(http::header::LOCATION, to)
            .body(sse::empty())
            .unwrap_or_else(|_| Response::new(sse::empty())),
        Err(e) => {
            tracing::warn!(error = %e, "a connect page could not start the sign-in");
            page(
                StatusCode::BAD_GATEWAY,
                "The sign-in could not start",
                html! { p { (e.to_string()) } },
            )
        }
    }
}

/// The callback of a sign-in (`state` opened as one): the ID token
/// verified, the proof cookie set, back to where it started.
pub(crate) async fn finish(
    gw: &Arc<Gateway>,
    state: &str,
    params: &[(String, String)],
) -> Option<Response<Body>> {
    let st: SignInState = gw.tables.connects.open_sealed(STATE_AAD, state)?;
    let refused = |why: String| {
        page(
            StatusCode::FORBIDDEN,
            "The sign-in did not succeed",
            html! { p { (why) } p { "Nothing was linked. Open the link from your client again." } },
        )
    };
    if !gw.tables.connects.spend_once(state) {
        return Some(refused("This sign-in was finished already.".into()));
    }
    let (Some(rp), Some(auth)) = (client(gw), gw.live().auth.clone()) else {
        return Some(refused("Signing in is not configured.".into()));
    };
    let connects = &gw.tables.connects;
    let nonce = connects.mac(&[b"nonce", st.id.as_bytes()]);
    let verifier = connects.mac(&[b"sign-in-pkce", st.id.as_bytes()]);
    let redirect = format!("{}{CALLBACK_PATH}", base(gw));
    let token = match rp.id_token(params, &redirect, &verifier).await {
        Ok(t) => t,
        Err(e) => return Some(refused(e.to_string())),
    };
    let who = match auth
        .verify_id_token(rp.issuer(), &token, rp.client_id(), &nonce)
        .await
    {
        Ok(id) => id.display_name(),
        Err(e) => return Some(refused(format!("The ID token was not accepted: {e}"))),
    };
    let until = (manifold_foundation::time::unix_now() + PROOF_LIFETIME.as_secs()).to_string();
    let enc = URL_SAFE_NO_PAD.encode(who.as_bytes());
    let mac = connects.mac(&[b"signed-in", enc.as_bytes(), until.as_bytes()]);
    let secure = if base(gw).starts_with("https://") {
        "; Secure"
    } else {
        ""
    };
    let path = format!("{}/connect/", gw.cfg().server.path.trim_end_matches('/'));
    let cookie = format!(
        "{COOKIE}={enc}.{until}.{mac}; Path={path}; HttpOnly; SameSite=Lax; Max-Age={}{secure}",
        PROOF_LIFETIME.as_secs()
    );
    tracing::info!(principal = %who, "a browser signed in for the connect pages");
    let back = if st.back.starts_with('/') {
        st.back
    } else {
        "/".into()
    };
    Some(
        Response::builder()
            .status(StatusCode::SEE_OTHER)
            .header(http::header::LOCATION, back)
            .header(http::header::SET_COOKIE, cookie)
            .body(sse::empty())
            .unwrap_or_else(|_| Response::new(sse::empty())),
    )
}

fn per_user(gw: &Gateway) -> Vec<(String, &'static str)> {
    crate::state::connects::per_user_upstreams(&gw.cfg())
}

/// `GET <path>/connect/manage`: the signed-in person's own accounts, each
/// with a Disconnect button.
pub(crate) async fn manage(
    gw: &Gateway,
    headers: &HeaderMap,
    note: Option<&str>,
) -> Response<Body> {
    let Some(rp) = client(gw) else {
        return gone();
    };
    let Some(who) = signed_in(gw, headers) else {
        let here = format!(
            "{}/connect/manage",
            gw.cfg().server.path.trim_end_matches('/')
        );
        return start(gw, &rp, &here).await;
    };
    let Some(store) = gw.cfg().credentials.as_ref().map(AccountStore::new) else {
        return gone();
    };
    let ups = per_user(gw);
    let p = who.clone();
    let mine = tokio::task::spawn_blocking(move || {
        ups.iter()
            .filter_map(|(u, _)| store.load(u, &p).ok().flatten().map(|a| a.summary()))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap_or_default();
    let csrf = gw.tables.connects.mac(&[b"manage", who.as_bytes()]);
    page(
        StatusCode::OK,
        "Your connected accounts",
        html! {
            p { "Signed in as " strong { (manifold_foundation::text::printable(&who)) } "." }
            @if let Some(n) = note { p role="status" { (n) } }
            @if mine.is_empty() { p { "You have connected no account." } }
            @for a in &mine {
                form method="post" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="upstream" value=(a.upstream);
                    p { code { (a.upstream) } " (" (a.kind) ", connected " (manifold_foundation::time::rfc3339_seconds(std::time::UNIX_EPOCH + std::time::Duration::from_secs(a.connected_at))) ") "
                        button type="submit" { "Disconnect" } }
                }
            }
        },
    )
}

/// `POST <path>/connect/manage`: disconnects one of the signed-in person's
/// accounts.
pub(crate) async fn disconnect(
    gw: &Gateway,
    headers: &HeaderMap,
    fields: &[(String, String)],
) -> Response<Body> {
    let get = |k: &str| field(fields, k);
    let Some(who) = signed_in(gw, headers) else {
        return page(
            StatusCode::FORBIDDEN,
            "Sign in first",
            html! { p { "Open this page again to sign in." } },
        );
    };
    let csrf = gw.tables.connects.mac(&[b"manage", who.as_bytes()]);
    if !manifold_foundation::ct::eq(csrf.as_bytes(), get("csrf").as_bytes()) {
        return page(
            StatusCode::FORBIDDEN,
            "Refused",
            html! { p { "This form is accepted only from its own page." } },
        );
    }
    let upstream = get("upstream").to_string();
    let Some((_, kind)) = per_user(gw).into_iter().find(|(u, _)| *u == upstream) else {
        return manage(gw, headers, Some("There is no such upstream.")).await;
    };
    let removed = gw.forget_account(&upstream, &who).await;
    if matches!(removed, Ok(true)) {
        crate::observe::account_event(gw, &upstream, kind, &who, "revoked", false);
        return manage(
            gw,
            headers,
            Some(&format!("Disconnected your account at {upstream}.")),
        )
        .await;
    }
    manage(gw, headers, Some("Nothing was disconnected.")).await
}
