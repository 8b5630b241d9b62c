//! What the console's handlers read and answer with: a request's query or
//! form body ([`Query`], a form read up to [`MAX_FORM_BYTES`]), a page
//! ([`html`]) and a redirect ([`redirect`]).
//!
//! Invariants: a form body is never read past [`MAX_FORM_BYTES`]; a value
//! that does not percent-decode is left out, never passed on half-decoded;
//! a redirect goes only where its caller says (callers pass console paths).
//!
//! Not here: the security headers every answer gets (`mod.rs`), what pages
//! look like (`layout`).

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use maud::Markup;

/// The largest form body read (login, approve, revoke, reload).
pub const MAX_FORM_BYTES: usize = 16 * 1024;

/// A request's query (or a form body): its decoded pairs.
pub(crate) struct Query {
    pairs: Vec<(String, String)>,
}

impl Query {
    pub(crate) fn parse(raw: Option<&str>) -> Query {
        let pairs = raw
            .unwrap_or("")
            .split('&')
            .filter(|p| !p.is_empty())
            .filter_map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                Some((
                    crate::admin::inspect::percent_decode(k).ok()?,
                    crate::admin::inspect::percent_decode(v).ok()?,
                ))
            })
            .collect();
        Query { pairs }
    }

    /// Every pair, in order.
    pub(crate) fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The value of `key`, trimmed; `None` when absent or empty.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }
}

/// Reads a form body (`application/x-www-form-urlencoded`), bounded.
pub(crate) async fn read_form(req: Request<Incoming>) -> Result<Query, String> {
    let body = Limited::new(req.into_body(), MAX_FORM_BYTES)
        .collect()
        .await
        .map_err(|_| format!("a console form is at most {MAX_FORM_BYTES} bytes"))?
        .to_bytes();
    let text = std::str::from_utf8(&body).map_err(|_| "the form is not UTF-8".to_string())?;
    Ok(Query::parse(Some(text)))
}

/// A page. Every character a browser shows as nothing or that reorders
/// text (an upstream's bidi override, a client's tag characters in an audited
/// argument) is written as a visible `\u{…}` escape, whatever part of the
/// page it came from: what an operator approves is what a model reads.
pub(crate) fn html(status: StatusCode, markup: Markup) -> Response<Full<Bytes>> {
    let text = markup.into_string();
    let text = match manifold_foundation::text::printable_lines(&text) {
        std::borrow::Cow::Borrowed(_) => text,
        std::borrow::Cow::Owned(shown) => shown,
    };
    let mut r = Response::new(Full::new(Bytes::from(text)));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    r
}

/// `303 See Other` to a console path.
pub(crate) fn redirect(to: &str) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::new()));
    *r.status_mut() = StatusCode::SEE_OTHER;
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(http::header::LOCATION, v);
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_decode() {
        let q = Query::parse(Some("as=group%3Aops&q=&x=a+b"));
        assert_eq!(q.get("as"), Some("group:ops"));
        assert_eq!(q.get("q"), None);
        assert_eq!(q.get("x"), Some("a b"));
    }
}
