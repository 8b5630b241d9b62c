//! The operator's console at `/ui` on the admin listener: server-rendered
//! pages (maud, compiled into the binary) with a small script that refreshes
//! live values while the tab is visible.
//!
//! | path | page |
//! |---|---|
//! | `/ui` | overview: upstreams, recent calls, sessions, held calls, cluster |
//! | `/ui/catalogue` | every tool, prompt, resource and template; `q=` search, `as=` view as a caller |
//! | `/ui/catalogue/tool/NAME` | one tool: description, schemas, annotations, overrides, pins |
//! | `/ui/audit` | the audit log newest first, filtered, paged; the chain's status |
//! | `/ui/pins` | `[integrity]`: held items with their diff, approve and revoke |
//! | `/ui/connections` | callers' own accounts at `user_oauth`/`user_secret` upstreams, revoke |
//! | `/ui/config` | the effective configuration, the last reload, a reload button |
//! | `/ui/login`, `/ui/logout` | the session cookie (see `session`) |
//! | `/ui/static/…` | the stylesheet and the script |
//!
//! Invariants: every response carries a strict Content-Security-Policy (no
//! inline script or style; nothing from another origin), `X-Frame-Options:
//! DENY`, `X-Content-Type-Options: nosniff`, `Referrer-Policy: same-origin`
//! and `Cache-Control: no-store`; every page but the login form and the two
//! static files is authenticated (`session`) before it is built; every POST
//! carries the viewer's CSRF token and comes from the console's own origin;
//! a form body is read up to [`answer::MAX_FORM_BYTES`]; pages read state, and change
//! it only through a POST (reload, approve, revoke, revoke an account, login,
//! logout).
//!
//! Not here: the admin listener's Host/Origin rules (`admin::auth`, applied
//! before this), what `/config` and `/catalog` show (`inspect`, reused here).

mod answer;
mod audit;
mod catalogue;
mod connections;
mod layout;
mod overview;
mod pins;
pub(crate) mod session;
mod settings;

use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use std::sync::Arc;

use crate::state::Gateway;
use answer::{html, read_form, redirect, Query};
use session::{Denied, Viewer};

/// Where the console lives on the admin listener.
pub(crate) const PREFIX: &str = "/ui";

/// The policy every console response carries.
const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
                   base-uri 'none'; object-src 'none'";

const STYLESHEET: &str = include_str!("assets/console.css");
const SCRIPT: &str = include_str!("assets/console.js");

/// Whether `path` is the console's.
pub(crate) fn owns(path: &str) -> bool {
    path == PREFIX || path.starts_with("/ui/")
}

/// Serves a console path (the admin listener routes here first).
pub(crate) async fn handle(
    gw: &Arc<Gateway>,
    req: Request<Incoming>,
    peer: std::net::IpAddr,
) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_string();
    let query = Query::parse(req.uri().query());
    let mut resp = route(gw, req, &path, &query, peer).await;
    secure(&mut resp);
    resp
}

async fn route(
    gw: &Arc<Gateway>,
    req: Request<Incoming>,
    path: &str,
    query: &Query,
    peer: std::net::IpAddr,
) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    match path {
        "/ui/static/console.css" => return asset(&method, "text/css; charset=utf-8", STYLESHEET),
        "/ui/static/console.js" => return asset(&method, "text/javascript; charset=utf-8", SCRIPT),
        "/ui/login" => return login(gw, req, query, peer).await,
        _ => {}
    }
    let viewer = match session::authenticate(gw, req.headers(), peer).await {
        Ok(v) => v,
        Err(Denied::Login(why)) => {
            if method == Method::GET && !path.starts_with("/ui/static/") {
                return redirect(&login_link(path, query, why.is_some()));
            }
            return layout::refused(
                StatusCode::UNAUTHORIZED,
                why.unwrap_or("log in first"),
                None,
            );
        }
        Err(Denied::Refused(r)) => {
            return layout::refused(r.status(), r.description(), Some(r.response()))
        }
    };
    if method == Method::POST {
        return post(gw, req, path, &viewer).await;
    }
    if method != Method::GET && method != Method::HEAD {
        return layout::refused(
            StatusCode::METHOD_NOT_ALLOWED,
            "the console's pages are read with GET; forms POST",
            None,
        );
    }
    let page = match path {
        "/ui" | "/ui/" => overview::page(gw, &viewer),
        "/ui/catalogue" => catalogue::page(gw, &viewer, query),
        "/ui/audit" => audit::page(gw, &viewer, query).await,
        "/ui/pins" => pins::page(gw, &viewer, query, None).await,
        "/ui/connections" => connections::page(gw, &viewer, query, None).await,
        "/ui/config" => settings::page(gw, &viewer, query),
        p => match p.strip_prefix("/ui/catalogue/tool/") {
            Some(name) => match super::inspect::percent_decode(name) {
                Ok(name) => catalogue::tool(gw, &viewer, &name, query),
                Err(e) => Err((StatusCode::BAD_REQUEST, e)),
            },
            None => Err((
                StatusCode::NOT_FOUND,
                format!("no console page at {p}: try the links above"),
            )),
        },
    };
    match page {
        Ok(markup) => html(StatusCode::OK, markup),
        Err((status, why)) => html(status, layout::error_page(&viewer, status, &why)),
    }
}

/// A state-changing request from an authenticated viewer.
async fn post(
    gw: &Arc<Gateway>,
    req: Request<Incoming>,
    path: &str,
    viewer: &Viewer,
) -> Response<Full<Bytes>> {
    let headers = req.headers().clone();
    let form = match read_form(req).await {
        Ok(f) => f,
        Err(why) => return layout::refused(StatusCode::PAYLOAD_TOO_LARGE, &why, None),
    };
    let bearer = matches!(viewer.via, session::Via::Bearer);
    if let Err(why) = session::check_form(
        gw,
        &headers,
        &Method::POST,
        &viewer.csrf,
        form.get("csrf"),
        bearer,
    ) {
        tracing::info!(principal = %viewer.principal.display_name(), %path, why, "console form refused");
        return layout::refused(StatusCode::FORBIDDEN, why, None);
    }
    match path {
        "/ui/logout" => {
            if let Some(id) = session::login_id(viewer) {
                gw.console.log_out(id);
            }
            tracing::info!(principal = %viewer.principal.display_name(), "console logout");
            let mut r = redirect("/ui/login?out=1");
            r.headers_mut().append(
                http::header::SET_COOKIE,
                session::clear_cookie(session::ADMIN_LISTENER_TLS),
            );
            r
        }
        "/ui/reload" => settings::reload(gw, viewer).await,
        "/ui/pins/approve" | "/ui/pins/revoke" => {
            let approve = path.ends_with("approve");
            match pins::change(gw, viewer, &form, approve).await {
                Ok(done) => redirect(&format!("/ui/pins?done={done}")),
                Err((status, why)) => {
                    let page = pins::page(gw, viewer, &form, Some(why.clone())).await;
                    match page {
                        Ok(markup) => html(status, markup),
                        Err((s, w)) => html(s, layout::error_page(viewer, s, &w)),
                    }
                }
            }
        }
        "/ui/connections/revoke" => match connections::revoke(gw, viewer, &form).await {
            Ok(who) => redirect(&format!(
                "/ui/connections?revoked={}",
                url::form_urlencoded::byte_serialize(who.as_bytes()).collect::<String>()
            )),
            Err((status, why)) => match connections::page(gw, viewer, &form, Some(why)).await {
                Ok(markup) => html(status, markup),
                Err((s, w)) => html(s, layout::error_page(viewer, s, &w)),
            },
        },
        _ => layout::refused(StatusCode::NOT_FOUND, "nothing to POST to here", None),
    }
}

/// `GET /ui/login`: the form (or, with `code`, the one-time link `serve`
/// printed); `POST /ui/login`: a login. Failures are counted per address
/// (`LOGIN_FAILURES_PER_WINDOW`) and audited.
async fn login(
    gw: &Arc<Gateway>,
    req: Request<Incoming>,
    query: &Query,
    peer: std::net::IpAddr,
) -> Response<Full<Bytes>> {
    let next = safe_next(query.get("next"));
    let code = query.get("code").filter(|_| req.method() == Method::GET);
    if req.method() == Method::GET && code.is_none() {
        let note = if query.get("out").is_some() {
            Some("you are logged out")
        } else if query.get("ended").is_some() {
            Some("your session ended: log in again")
        } else {
            None
        };
        let status = StatusCode::OK;
        return html(status, layout::login_page(gw, &next, note, None));
    }
    if req.method() != Method::POST && code.is_none() {
        return layout::refused(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET the form, POST it",
            None,
        );
    }
    // An attempt of the address's budget is taken before a credential is
    // looked at (concurrent guesses cannot all pass), except for the link's
    // code and the local admin token: random enough that guessing them is
    // hopeless, they are checked first, so a local process failing on
    // purpose cannot lock their holder out.
    let throttled = |wait: std::time::Duration| {
        let refused = crate::admin::auth::Refused::throttled(wait);
        layout::refused(
            refused.status(),
            refused.description(),
            Some(refused.response()),
        )
    };
    let (attempt, via) = match code {
        Some(code) => {
            let attempt = session::redeem_link(gw, code);
            if attempt.is_err() {
                if let Err(wait) = gw.admin_attempt(peer) {
                    return throttled(wait);
                }
            }
            (attempt, "link")
        }
        None => {
            let headers = req.headers().clone();
            let form = match read_form(req).await {
                Ok(f) => f,
                Err(why) => return layout::refused(StatusCode::PAYLOAD_TOO_LARGE, &why, None),
            };
            let next = safe_next(form.get("next"));
            let csrf = session::login_csrf(gw);
            if let Err(why) =
                session::check_form(gw, &headers, &Method::POST, &csrf, form.get("csrf"), false)
            {
                return layout::refused(StatusCode::FORBIDDEN, why, None);
            }
            let Some(token) = form.get("token") else {
                return html(
                    StatusCode::BAD_REQUEST,
                    layout::login_page(gw, &next, None, Some("enter an admin token")),
                );
            };
            let local = session::is_local_token(gw, token);
            if !local {
                if let Err(wait) = gw.admin_attempt(peer) {
                    return throttled(wait);
                }
            }
            let attempt = session::log_in(gw, token).await;
            if attempt.is_ok() && !local {
                gw.console.login_succeeded(peer);
            }
            return finish_login(gw, attempt, peer, "form", &next).await;
        }
    };
    finish_login(gw, attempt, peer, via, &next).await
}

/// The answer to a login attempt, counted and audited.
async fn finish_login(
    gw: &Arc<Gateway>,
    attempt: Result<session::Login, crate::admin::auth::Refused>,
    peer: std::net::IpAddr,
    via: &str,
    next: &str,
) -> Response<Full<Bytes>> {
    let mut rec = manifold_audit::AuditRecord::new(gw.request_id(), "console/login");
    rec.arguments = Some(serde_json::json!({"peer": peer.to_string(), "via": via}));
    let resp = match attempt {
        Ok(login) => {
            rec.principal = login.principal;
            let mut r = redirect(next);
            if let Some(c) = session::set_cookie(gw, &login.id, session::ADMIN_LISTENER_TLS) {
                r.headers_mut().append(http::header::SET_COOKIE, c);
            }
            r
        }
        Err(refused) => {
            rec.outcome = manifold_audit::Outcome::Refused {
                code: i64::from(refused.status().as_u16()),
            };
            html(
                refused.status(),
                layout::login_page(gw, next, None, Some(refused.description())),
            )
        }
    };
    if let Some(a) = &gw.auditor {
        if let Err(e) = a.record(rec).await {
            tracing::error!(error = %e, "a console login could not be audited");
        }
    }
    resp
}

/// Where to go after logging in: a console path, never another site.
fn safe_next(next: Option<&str>) -> String {
    match next {
        Some(n)
            if owns(n.split('?').next().unwrap_or(""))
                && !n.contains("//")
                && !n.contains('\\')
                && !n.chars().any(char::is_control) =>
        {
            n.to_string()
        }
        _ => PREFIX.to_string(),
    }
}

/// The login form, to come back to `path`.
fn login_link(path: &str, query: &Query, ended: bool) -> String {
    let mut back = path.to_string();
    if !query.pairs().is_empty() {
        back.push('?');
        back.push_str(&layout::query_string(
            query.pairs().iter().map(|(k, v)| (k.as_str(), v.as_str())),
        ));
    }
    let ended = if ended { "&ended=1" } else { "" };
    format!("/ui/login?next={}{ended}", layout::encode(&back))
}

fn asset(method: &Method, ctype: &'static str, body: &'static str) -> Response<Full<Bytes>> {
    if method != Method::GET && method != Method::HEAD {
        return layout::refused(StatusCode::METHOD_NOT_ALLOWED, "GET only", None);
    }
    let mut r = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    r.headers_mut()
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static(ctype));
    r
}

/// The security headers every console response carries.
fn secure(r: &mut Response<Full<Bytes>>) {
    let h = r.headers_mut();
    for (k, v) in [
        ("content-security-policy", CSP),
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        // Not `no-referrer`: with it a browser sends `Origin: null` on a form
        // POST, and the same-origin check needs the real one.
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
        ("cross-origin-opener-policy", "same-origin"),
        ("cross-origin-resource-policy", "same-origin"),
        (
            "permissions-policy",
            "camera=(), microphone=(), geolocation=()",
        ),
    ] {
        h.insert(k, HeaderValue::from_static(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_stays_on_the_console() {
        assert_eq!(
            safe_next(Some("/ui/audit?outcome=ok")),
            "/ui/audit?outcome=ok"
        );
        for bad in [
            "https://evil.example/ui",
            "//evil.example/ui",
            "/ui//evil",
            "/ui/\\evil.example",
            "/ui\r\nSet-Cookie: x=1",
            "/metrics",
            "/uix",
        ] {
            assert_eq!(safe_next(Some(bad)), "/ui", "{bad}");
        }
        assert_eq!(safe_next(None), "/ui");
    }
}
