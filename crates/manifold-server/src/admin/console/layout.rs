//! The console's frame and small pieces every page uses: the header with its
//! navigation and logout button, the login form, error pages, state badges,
//! durations, JSON blocks, and query strings.
//!
//! Invariants: every text from outside (upstream names and descriptions,
//! principals, audit records, errors) goes through maud's escaping, never
//! `PreEscaped`; no element carries a `style` attribute or an inline script
//! (the CSP forbids both); every interactive element is a link, a button or
//! a form control, reachable by keyboard.
//!
//! Not here: what a page shows.

use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::Full;
use maud::{html, Markup, DOCTYPE};
use std::time::Duration;

use super::session::{self, Viewer};
use crate::state::Gateway;

/// The pages in the navigation: path, label.
const NAV: [(&str, &str); 6] = [
    ("/ui", "Overview"),
    ("/ui/catalogue", "Catalogue"),
    ("/ui/audit", "Audit"),
    ("/ui/pins", "Pins"),
    ("/ui/connections", "Connections"),
    ("/ui/config", "Configuration"),
];

fn head(title: &str) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) " · Manifold" }
            link rel="stylesheet" href="/ui/static/console.css";
            script src="/ui/static/console.js" defer {}
        }
    }
}

/// A whole page: `active` is the navigation entry's path; `live`: the page
/// has values the script refreshes.
pub(crate) fn page(viewer: &Viewer, title: &str, active: &str, live: bool, body: Markup) -> Markup {
    let version = crate::handlers::surface::SERVER_VERSION;
    html! {
        (DOCTYPE)
        html lang="en" {
            (head(title))
            body data-refresh=[live.then_some("on")] {
                a.skip href="#main" { "Skip to content" }
                header.top {
                    span.brand { "Manifold" }
                    nav aria-label="Console" {
                        ul {
                            @for (path, label) in NAV {
                                li {
                                    a href=(path) aria-current=[(path == active).then_some("page")] { (label) }
                                }
                            }
                        }
                    }
                    div.who {
                        span.principal title="Who you are to the admin plane" { (viewer.principal.display_name()) }
                        @if session::login_id(viewer).is_some() {
                            form method="post" action="/ui/logout" {
                                input type="hidden" name="csrf" value=(viewer.csrf);
                                button type="submit" { "Log out" }
                            }
                        }
                    }
                }
                main #main {
                    div.titlebar {
                        h1 { (title) }
                        @if live {
                            span #live-status.live role="status" aria-live="polite" { "live" }
                        }
                    }
                    (body)
                }
                footer { "Manifold " (version) " · the operator's console" }
            }
        }
    }
}

/// The login form; `note`: a neutral message, `error`: why the last try
/// failed.
pub(crate) fn login_page(
    gw: &Gateway,
    next: &str,
    note: Option<&str>,
    error: Option<&str>,
) -> Markup {
    let configured = gw.cfg().admin.as_ref().is_some_and(|a| a.has_credentials());
    html! {
        (DOCTYPE)
        html lang="en" {
            (head("Log in"))
            body.login {
                main #main {
                    h1 { "Manifold console" }
                    @if let Some(n) = note { p.note role="status" { (n) } }
                    @if let Some(e) = error { p.error role="alert" { (e) } }
                    form method="post" action="/ui/login" {
                        input type="hidden" name="csrf" value=(session::login_csrf(gw));
                        input type="hidden" name="next" value=(next);
                        label for="token" { "Admin token" }
                        input #token type="password" name="token" autocomplete="current-password" required autofocus;
                        @if configured {
                            p.hint { "An " code { "[[admin.tokens]]" } " token, or a credential of a caller " code { "[admin] who" } " names." }
                        } @else {
                            p.hint { "The local admin token: " code { "manifold admin token" } " prints it (or open the one-time link " code { "manifold serve" } " printed)." }
                        }
                        button type="submit" { "Log in" }
                    }
                }
            }
        }
    }
}

/// A page saying why the viewer cannot have what they asked for.
pub(crate) fn error_page(viewer: &Viewer, status: StatusCode, why: &str) -> Markup {
    page(
        viewer,
        status.canonical_reason().unwrap_or("Error"),
        "",
        false,
        html! { p.error role="alert" { (why) } },
    )
}

/// A refusal before any page: a small HTML page with the status; `json`:
/// the admin plane's own answer, whose headers (a 401's challenge) are kept.
pub(crate) fn refused(
    status: StatusCode,
    why: &str,
    json: Option<Response<Full<Bytes>>>,
) -> Response<Full<Bytes>> {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head("Refused"))
            body.login {
                main #main {
                    h1 { (status.as_u16()) " " (status.canonical_reason().unwrap_or("")) }
                    p.error role="alert" { (why) }
                    p { a href="/ui/login" { "Log in" } }
                }
            }
        }
    };
    let mut r = super::answer::html(status, markup);
    if let Some(j) = json {
        // How to authenticate, and when to come back.
        for h in [http::header::WWW_AUTHENTICATE, http::header::RETRY_AFTER] {
            if let Some(c) = j.headers().get(&h) {
                r.headers_mut().insert(h, c.clone());
            }
        }
    }
    r
}

/// An upstream's state as a badge.
pub(crate) fn state_badge(state: &str) -> Markup {
    let class = match state {
        "ready" => "ok",
        "starting" => "warn",
        "needs_login" => "login",
        "stopped" => "muted",
        _ => "bad",
    };
    html! { span class={ "badge " (class) } { (state.replace('_', " ")) } }
}

/// An empty state: what is missing and what to do about it.
pub(crate) fn empty(what: &str, hint: Markup) -> Markup {
    html! {
        div.empty role="note" {
            p.what { (what) }
            p { (hint) }
        }
    }
}

/// `1.2 ms`, `340 µs`, `2.1 s`.
pub(crate) fn duration(d: Duration) -> String {
    let us = d.as_micros();
    if us < 1_000 {
        format!("{us} µs")
    } else if us < 1_000_000 {
        format!("{:.1} ms", us as f64 / 1_000.0)
    } else {
        format!("{:.2} s", us as f64 / 1_000_000.0)
    }
}

/// `3d 4h`, `5h 12m`, `42s`.
pub(crate) fn uptime(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m {}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h {}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d {}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// A JSON value, pretty, in a `<pre>`.
pub(crate) fn json_block(v: &serde_json::Value) -> Markup {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    html! { pre.json { code { (text) } } }
}

/// `s` with everything but unreserved characters percent-encoded (RFC 3986).
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `k=v&…`, encoded; empty values left out.
pub(crate) fn query_string<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    pairs
        .into_iter()
        .filter(|(_, v)| !v.is_empty())
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formatting() {
        assert_eq!(duration(Duration::from_micros(340)), "340 µs");
        assert_eq!(duration(Duration::from_micros(1_234)), "1.2 ms");
        assert_eq!(duration(Duration::from_millis(2_100)), "2.10 s");
        assert_eq!(uptime(Duration::from_secs(42)), "42s");
        assert_eq!(uptime(Duration::from_secs(3 * 86_400 + 4 * 3600)), "3d 4h");
        assert_eq!(encode("group:ops a/b"), "group%3Aops%20a%2Fb");
        assert_eq!(
            query_string([("as", "group:ops"), ("q", ""), ("kind", "tool")]),
            "as=group%3Aops&kind=tool"
        );
    }

    #[test]
    fn text_from_outside_is_escaped() {
        let m = state_badge("<script>alert(1)</script>");
        assert!(!m.into_string().contains("<script>"));
        let j = json_block(&serde_json::json!({"d": "</pre><script>x</script>"}));
        assert!(!j.into_string().contains("<script>"));
    }
}
