//! What every connect page is made of: the HTML frame (no script, no style)
//! and the answer for a link that cannot be used; the callback's path.
//!
//! Not here: the security headers (`mod.rs` adds them to every answer).

use bytes::Bytes;
use http::{Response, StatusCode};
use maud::{html, Markup, DOCTYPE};

use crate::front::sse::{self, Body};

/// The callback path on the MCP listener (the redirect URI is
/// `<public_url>/oauth/callback`).
pub const CALLBACK_PATH: &str = "/oauth/callback";

pub(super) fn page(status: StatusCode, title: &str, body: Markup) -> Response<Body> {
    let m = html! {
        (DOCTYPE)
        html lang="en" {
            head { meta charset="utf-8"; title { (title) " — Manifold" } }
            body { h1 { (title) } (body) }
        }
    };
    Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, "text/html; charset=utf-8")
        .body(sse::full(Bytes::from(m.into_string())))
        .unwrap_or_else(|_| Response::new(sse::empty()))
}

pub(super) fn gone() -> Response<Body> {
    page(
        StatusCode::NOT_FOUND,
        "This link cannot be used",
        html! { p { "It was used already, it expired, or it was never issued. Call the tool again from your client: it shows a new link and code." } },
    )
}

/// A form field's value (`""` when absent).
pub(super) fn field<'a>(fields: &'a [(String, String)], name: &str) -> &'a str {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or("")
}
