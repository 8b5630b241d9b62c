//! The connect pages on the MCP listener, where a person links their own
//! account at a `user_oauth` or `user_secret` upstream to the principal their
//! client called as:
//!
//! | request | what |
//! |---|---|
//! | `GET <server.path>/connect/<id>` | the form: the code the client showed (and, for `user_secret`, the key) |
//! | `POST <server.path>/connect/<id>` | the code checked; a key stored (tried first with `check`), or a redirect to the issuer's authorization endpoint (PKCE, `state`) |
//! | `GET /oauth/callback` | the code exchanged, the tokens stored for the link's principal; or a sign-in finished (`sign_in`) |
//! | `GET`/`POST <server.path>/connect/manage` | with sign-in: the signed-in person's own accounts, and disconnecting one (`sign_in`) |
//!
//! Who may reach them: anyone who can reach the listener — a browser carries
//! no MCP credential. What makes them safe is the link: sealed, single use,
//! expiring, bound to the principal that asked; and either the code only
//! that principal's client was shown, which the page asks for before it
//! links anything (a link forwarded to a victim, or read from a log, links
//! nothing: the victim does not know the code), or, with `[credentials]
//! sign_in_client_id`, the browser's sign-in at the front door's OpenID
//! provider as that very principal (`sign_in`). Wrong codes void the link
//! after a few tries. Where a secret may go: a pasted key only into the
//! sealed store and to the upstream (`check`); the authorization code only
//! to the pinned issuer's token endpoint.
//!
//! Invariants: every page carries the console's Content-Security-Policy (no
//! script at all, styles from nowhere), `X-Frame-Options: DENY`,
//! `Cache-Control: no-store` and `Referrer-Policy: no-referrer` (the link's
//! id never leaks to the issuer through `Referer`); a POST carries the link's
//! anti-forgery token and, when the browser sends `Origin`, comes from the
//! public origin; a form body is read up to [`MAX_CONNECT_FORM_BYTES`]; a key
//! is at most [`MAX_SECRET_BYTES`]; nothing a user typed is echoed back.
//!
//! Not here: the links themselves (`state::connects`), the flow and the
//! store (manifold-credentials), the page frame (`page`).

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use maud::html;
use std::sync::Arc;

mod page;
mod sign_in;

use manifold_foundation::text::printable;
pub use page::CALLBACK_PATH;
use page::{field, gone, page};

use crate::front::sse::{self, Body};
use crate::state::connects::{Pending, Void};
use crate::state::Gateway;

/// The largest connect form body read.
pub const MAX_CONNECT_FORM_BYTES: usize = 16 * 1024;
/// The longest key a `user_secret` form accepts.
pub const MAX_SECRET_BYTES: usize = 4096;

/// What every page carries: no script, no style, nothing from elsewhere.
const CSP: &str =
    "default-src 'none'; form-action 'self' https: http://127.0.0.1:* http://localhost:*; \
                   frame-ancestors 'none'; base-uri 'none'";

/// Whether `path` is one of these pages (`Some(id)` for a link, `Some("")`
/// for the callback).
pub(crate) fn owns(gw: &Gateway, path: &str) -> Option<String> {
    // Every request passes here: the path first, the configuration only for
    // a connect path.
    let id = if path == CALLBACK_PATH {
        String::new()
    } else {
        let (base, id) = path.rsplit_once("/connect/")?;
        if id.is_empty() || id.contains('/') || base != gw.cfg().server.path.trim_end_matches('/') {
            return None;
        }
        id.to_string()
    };
    let any = gw.live().upstreams.iter().any(|u| {
        matches!(&u.config().transport, manifold_config::Transport::Http { auth, .. } if auth.per_user())
    });
    any.then_some(id)
}

/// Serves a connect page (`id` from [`owns`]).
pub(crate) async fn handle(
    gw: &Arc<Gateway>,
    req: Request<Incoming>,
    id: String,
) -> Response<Body> {
    let mut resp = if id.is_empty() {
        if req.method() == Method::GET {
            callback(gw, req.uri().query()).await
        } else {
            page(
                StatusCode::METHOD_NOT_ALLOWED,
                "Not here",
                html! { p { "The callback takes GET only." } },
            )
        }
    } else {
        match *req.method() {
            Method::GET if id == MANAGE => sign_in::manage(gw, req.headers(), None).await,
            Method::POST if id == MANAGE => manage_post(gw, req).await,
            Method::GET => form(gw, req.headers(), &id).await,
            Method::POST => submit(gw, req, &id).await,
            _ => page(
                StatusCode::METHOD_NOT_ALLOWED,
                "Not here",
                html! { p { "A connect page takes GET and POST only." } },
            ),
        }
    };
    let h = resp.headers_mut();
    for (k, v) in [
        ("content-security-policy", CSP),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("cache-control", "no-store"),
    ] {
        h.insert(k, http::HeaderValue::from_static(v));
    }
    resp
}

/// The path of the self-service page (`<path>/connect/manage`).
pub const MANAGE: &str = "manage";

async fn form(gw: &Gateway, headers: &HeaderMap, id: &str) -> Response<Body> {
    let Ok(p) = gw.tables.connects.get(id) else {
        return gone();
    };
    // With sign-in: who holds this browser decides, not a code.
    if let Some(rp) = sign_in::client(gw) {
        match sign_in::signed_in(gw, headers) {
            None => {
                let here = format!(
                    "{}/connect/{id}",
                    gw.cfg().server.path.trim_end_matches('/')
                );
                return sign_in::start(gw, &rp, &here).await;
            }
            Some(who) if who != p.principal => return someone_else(gw, &p, &who),
            Some(_) => {}
        }
    }
    form_page(gw, &p, StatusCode::OK, None)
}

/// The browser signed in as `who`, and the link is another principal's.
fn someone_else(gw: &Gateway, p: &Pending, who: &str) -> Response<Body> {
    let kind = gw
        .upstream(&p.upstream)
        .and_then(|u| gw.tables.connects.accounts(&u))
        .map_or("user_secret", |a| {
            if a.is_oauth() {
                "user_oauth"
            } else {
                "user_secret"
            }
        });
    crate::observe::account_event(gw, &p.upstream, kind, &p.principal, "failed", true);
    tracing::warn!(upstream = %p.upstream, link_for = %p.principal, signed_in = %who,
        "a connect link was opened by someone else; nothing was linked");
    page(
        StatusCode::FORBIDDEN,
        "This link is not yours",
        html! {
            p { "It was made for " strong { (printable(&p.principal)) } ", and you signed in as " strong { (printable(who)) } ". Nothing was linked." }
            p { "If someone sent you this link, do not use it. To connect your own account, call the tool from your own client." }
        },
    )
}

fn form_page(gw: &Gateway, p: &Pending, status: StatusCode, error: Option<&str>) -> Response<Body> {
    let signed_in = sign_in::client(gw).is_some();
    let secret = gw
        .upstream(&p.upstream)
        .and_then(|u| gw.tables.connects.accounts(&u))
        .is_some_and(|a| !a.is_oauth());
    let title = format!("Connect your account at {}", p.upstream);
    page(
        status,
        &title,
        html! {
            p { "Your MCP client asked to use upstream " code { (p.upstream) } " as " strong { (printable(&p.principal)) } "." }
            p { "If you did not just ask for this in your own client, close this page: whoever sent you the link would get to act with your account." }
            @if let Some(e) = error { p role="alert" { strong { (e) } } }
            form method="post" {
                input type="hidden" name="csrf" value=(p.csrf);
                @if !signed_in {
                    p { label { "The code your client shows: " input name="code" autocomplete="off" required; } }
                }
                @if secret {
                    p { label { "Your key for " (p.upstream) ": " input type="password" name="secret" autocomplete="off" required; } }
                    p { "It is stored encrypted for you alone, and sent only to " (p.upstream) "." }
                } @else {
                    p { "You will sign in at the service's own page next." }
                }
                p { button type="submit" { "Connect" } }
            }
        },
    )
}

/// A POST's headers and form fields, when it comes from the page's own
/// origin and its body fits [`MAX_CONNECT_FORM_BYTES`]; else the answer.
async fn posted(
    gw: &Gateway,
    req: Request<Incoming>,
) -> Result<(HeaderMap, Vec<(String, String)>), Response<Body>> {
    let headers = req.headers().clone();
    if !same_origin(gw, &headers) {
        return Err(page(
            StatusCode::FORBIDDEN,
            "Refused",
            html! { p { "This form is accepted only from its own page." } },
        ));
    }
    let Ok(body) = Limited::new(req.into_body(), MAX_CONNECT_FORM_BYTES)
        .collect()
        .await
    else {
        return Err(page(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Too large",
            html! { p { "The form is larger than this page accepts." } },
        ));
    };
    let fields = url::form_urlencoded::parse(&body.to_bytes())
        .into_owned()
        .collect();
    Ok((headers, fields))
}

/// `POST <path>/connect/manage`: a disconnect, from the page's own origin.
async fn manage_post(gw: &Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    match posted(gw, req).await {
        Ok((headers, fields)) => sign_in::disconnect(gw, &headers, &fields).await,
        Err(r) => r,
    }
}

/// Whether a POST comes from the public origin (when the browser says).
fn same_origin(gw: &Gateway, headers: &HeaderMap) -> bool {
    let Some(origin) = headers
        .get(http::header::ORIGIN)
        .and_then(|v| v.to_str().ok())
    else {
        return true;
    };
    let base = gw.public_base().unwrap_or_default();
    manifold_config::credentials::origin(&base).is_some_and(|o| o == origin)
}

async fn submit(gw: &Arc<Gateway>, req: Request<Incoming>, id: &str) -> Response<Body> {
    let (headers, fields) = match posted(gw, req).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let get = |k: &str| field(&fields, k);
    let bound = match sign_in::client(gw) {
        Some(_) => match sign_in::signed_in(gw, &headers) {
            Some(who) => match gw.tables.connects.bind_signed_in(id, get("csrf")) {
                Ok(p) if p.principal == who => Ok(p),
                Ok(p) => return someone_else(gw, &p, &who),
                Err(v) => Err(v),
            },
            None => {
                return page(
                    StatusCode::FORBIDDEN,
                    "Sign in first",
                    html! { p { "Open the link again: it signs you in first." } },
                )
            }
        },
        None => gw.tables.connects.bind(id, get("csrf"), get("code")),
    };
    let p = match bound {
        Ok(p) => p,
        Err(Void::Gone) => return gone(),
        Err(Void::TooManyTries) => {
            return page(
                StatusCode::FORBIDDEN,
                "This link is void",
                html! { p { "The code was wrong too many times. Call the tool again from your client for a new link and code." } },
            )
        }
        Err(Void::WrongCode(left)) => {
            let Ok(p) = gw.tables.connects.get(id) else {
                return gone();
            };
            let e = format!("That is not the code your client was shown ({left} tries left).");
            return form_page(gw, &p, StatusCode::BAD_REQUEST, Some(&e));
        }
    };
    let Some(upstream) = gw.upstream(&p.upstream) else {
        return gone();
    };
    let Some(accounts) = gw.tables.connects.accounts(&upstream) else {
        return gone();
    };
    if accounts.is_oauth() {
        let base = gw.public_base().unwrap_or_default();
        let redirect = format!("{base}{CALLBACK_PATH}");
        let Some(state) = gw.tables.connects.state_for(id) else {
            return gone();
        };
        let verifier = gw.tables.connects.verifier(id);
        return match accounts.begin(&redirect, &state, &verifier).await {
            Ok(begun) => {
                let to = begun.url.clone();
                Response::builder()
                    .status(StatusCode::SEE_OTHER)
                    .header(http::header::LOCATION, to)
                    .body(sse::empty())
                    .unwrap_or_else(|_| Response::new(sse::empty()))
            }
            Err(e) => {
                tracing::warn!(upstream = %p.upstream, error = %e, "a connect flow could not start");
                page(
                    StatusCode::BAD_GATEWAY,
                    "The sign-in could not start",
                    html! { p { (e.to_string()) } },
                )
            }
        };
    }
    let secret = get("secret").trim();
    if secret.is_empty() || secret.len() > MAX_SECRET_BYTES || secret.chars().any(char::is_control)
    {
        return page(
            StatusCode::BAD_REQUEST,
            "Not a key",
            html! { p { "A key is one line of at most " (MAX_SECRET_BYTES) " bytes. Go back and paste it again." } },
        );
    }
    if accounts.checks() {
        if let Err(why) = check(&upstream, &accounts, secret).await {
            let kind = "user_secret";
            crate::observe::account_event(gw, &p.upstream, kind, &p.principal, "failed", true);
            return page(
                StatusCode::BAD_REQUEST,
                "The key was not accepted",
                html! { p { (why) " Go back and try another." } },
            );
        }
    }
    let Some(p) = gw.tables.connects.take_bound(id) else {
        return gone();
    };
    match accounts.save_secret(&p.principal, secret).await {
        Ok(_) => connected(gw, &p, "user_secret"),
        Err(e) => {
            tracing::error!(upstream = %p.upstream, error = %e, "a caller's key could not be stored");
            page(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Not stored",
                html! { p { "The key could not be stored; the operator's log says why." } },
            )
        }
    }
}

/// `check = "tools/list"`: the key, tried on the upstream.
async fn check(
    upstream: &manifold_upstream::Upstream,
    accounts: &manifold_credentials::Accounts,
    secret: &str,
) -> Result<(), String> {
    let mut headers = vec![(manifold_upstream::ON_BEHALF.to_string(), String::new())];
    headers.push(match accounts.inject(secret) {
        manifold_credentials::Injected::Header(n, v) => (n.to_ascii_lowercase(), v),
        manifold_credentials::Injected::Query(n, v) => {
            (format!("{}{n}", manifold_upstream::QUERY_PARAM_PREFIX), v)
        }
    });
    let mut call = upstream
        .call(manifold_protocol::methods::TOOLS_LIST, None, headers)
        .await
        .map_err(|e| format!("The upstream could not be asked ({e})."))?;
    match call.outcome().await {
        manifold_upstream::CallOutcome::Result(_) => Ok(()),
        manifold_upstream::CallOutcome::Error(_) => {
            Err("The upstream refused to list its tools with it.".into())
        }
        manifold_upstream::CallOutcome::Failed(e) if e.is_caller_refused() => {
            Err("The upstream refused it.".into())
        }
        manifold_upstream::CallOutcome::Failed(e) => {
            Err(format!("The upstream could not be asked ({e})."))
        }
    }
}

/// `GET /oauth/callback`: the flow its `state` names, finished once.
async fn callback(gw: &Arc<Gateway>, query: Option<&str>) -> Response<Body> {
    let params: Vec<(String, String)> = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let state = params
        .iter()
        .find(|(k, _)| k == "state")
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    let taken = gw
        .tables
        .connects
        .take_by_state(state)
        .filter(|_| !state.is_empty());
    if taken.is_none() {
        if let Some(done) = sign_in::finish(gw, state, &params).await {
            return done;
        }
    }
    let Some(p) = taken else {
        return page(
            StatusCode::BAD_REQUEST,
            "This sign-in cannot be finished",
            html! { p { "Its state is unknown, used or expired. Call the tool again from your client for a new link." } },
        );
    };
    let accounts = gw
        .upstream(&p.upstream)
        .and_then(|u| gw.tables.connects.accounts(&u));
    let Some(accounts) = accounts else {
        return gone();
    };
    // The flow as it was started (any replica derives the same verifier).
    let redirect = format!("{}{CALLBACK_PATH}", gw.public_base().unwrap_or_default());
    let verifier = gw.tables.connects.verifier(&p.id);
    let redeemed = match accounts.begin(&redirect, state, &verifier).await {
        Ok(begun) => accounts.redeem(&p.principal, &params, &begun).await,
        Err(e) => Err(e),
    };
    match redeemed {
        Ok(_) => connected(gw, &p, "user_oauth"),
        Err(e) => {
            crate::observe::account_event(
                gw,
                &p.upstream,
                "user_oauth",
                &p.principal,
                "failed",
                true,
            );
            tracing::warn!(upstream = %p.upstream, principal = %p.principal, error = %e, "a connect flow failed");
            page(
                StatusCode::BAD_REQUEST,
                "The account was not connected",
                html! { p { (e.to_string()) } p { "Call the tool again from your client for a new link." } },
            )
        }
    }
}

/// The account is stored: audited, the asking session told, the page says so.
fn connected(gw: &Gateway, p: &Pending, kind: &str) -> Response<Body> {
    crate::observe::account_event(gw, &p.upstream, kind, &p.principal, "connected", false);
    if let Some(digest) = p.session.as_deref() {
        let note = serde_json::json!({
            "jsonrpc": "2.0",
            "method": "notifications/elicitation/complete",
            "params": {"elicitationId": p.elicitation_id},
        })
        .to_string();
        let here = gw.tables.sessions.by_digest(digest);
        let pushed = here.is_some_and(|s| s.push(Bytes::from(note.clone())));
        // Its GET stream may be open on another replica.
        if let (false, Some(c)) = (pushed, &gw.cluster) {
            let push = manifold_cluster::Message::Push {
                session: digest.to_string(),
                message: note,
            };
            c.publish_later(&gw.life.background, push);
        }
    }
    page(
        StatusCode::OK,
        "Connected",
        html! { p { "Your account at " code { (p.upstream) } " is connected. Go back to your client; calls now reach " (p.upstream) " as you." } },
    )
}
