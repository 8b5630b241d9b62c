//! A small HTTP client for metadata and token endpoints: HTTPS with the web
//! roots (or plain HTTP), every request bounded by [`HTTP_TIMEOUT`] and every
//! body by [`MAX_BODY`].
//!
//! Invariants: never follows redirects (an authorization server's answers
//! are read where they were asked); a body that is not JSON is an error that
//! never quotes it (it may hold a token); only `https://` URLs, or `http://`
//! to a loopback host, are requested ([`allowed`]).
//!
//! Not here: what the answers mean.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;

use crate::{CredentialError, HTTP_TIMEOUT, MAX_BODY};

pub(crate) type Client = hyper_util::client::legacy::Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

pub(crate) fn client() -> Client {
    let mut tcp = hyper_util::client::legacy::connect::HttpConnector::new();
    tcp.enforce_http(false);
    tcp.set_connect_timeout(Some(HTTP_TIMEOUT));
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .wrap_connector(tcp);
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(https)
}

/// An answer: status, `WWW-Authenticate`, body.
pub(crate) struct Answer {
    pub status: StatusCode,
    pub challenge: Option<String>,
    pub body: Bytes,
}

impl Answer {
    /// The body as JSON. A body that is not JSON is never quoted: a token
    /// endpoint may put a token in any format.
    pub(crate) fn json(&self, what: &str) -> Result<Value, CredentialError> {
        serde_json::from_slice(&self.body).map_err(|_| {
            CredentialError::Server(format!(
                "{what}: the answer is not JSON (HTTP {}, {} bytes)",
                self.status,
                self.body.len()
            ))
        })
    }
}

/// Whether `url` may carry client secrets and tokens: `https://`, or
/// `http://` to a loopback host.
pub(crate) fn allowed(url: &str) -> bool {
    let Ok(u) = url::Url::parse(url) else {
        return false;
    };
    match u.scheme() {
        "https" => true,
        "http" => matches!(
            u.host(),
            Some(url::Host::Domain("localhost"))
                | Some(url::Host::Ipv4(std::net::Ipv4Addr::LOCALHOST))
                | Some(url::Host::Ipv6(std::net::Ipv6Addr::LOCALHOST))
        ),
        _ => false,
    }
}

pub(crate) async fn send(
    c: &Client,
    method: Method,
    url: &str,
    headers: &[(&str, String)],
    body: Option<(&str, Vec<u8>)>,
) -> Result<Answer, CredentialError> {
    if !allowed(url) {
        return Err(CredentialError::Refused(format!(
            "{url}: an authorization server is reached over https (or http to a loopback host) only"
        )));
    }
    let mut b = Request::builder().method(method).uri(url);
    b = b.header(http::header::ACCEPT, "application/json, text/event-stream");
    for (k, v) in headers {
        b = b.header(*k, v);
    }
    let body = match body {
        Some((ctype, bytes)) => {
            b = b.header(http::header::CONTENT_TYPE, ctype);
            Full::new(Bytes::from(bytes))
        }
        None => Full::new(Bytes::new()),
    };
    let req = b
        .body(body)
        .map_err(|e| CredentialError::Server(format!("{url}: {e}")))?;
    let fetch = async {
        let resp = c
            .request(req)
            .await
            .map_err(|e| CredentialError::Server(format!("{url}: {e}")))?;
        let status = resp.status();
        let challenge = resp
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let body = Limited::new(resp.into_body(), MAX_BODY)
            .collect()
            .await
            .map_err(|e| CredentialError::Server(format!("{url}: reading the answer: {e}")))?
            .to_bytes();
        Ok(Answer {
            status,
            challenge,
            body,
        })
    };
    tokio::time::timeout(HTTP_TIMEOUT, fetch)
        .await
        .map_err(|_| CredentialError::Server(format!("{url}: no answer within {HTTP_TIMEOUT:?}")))?
}

/// A form body (`application/x-www-form-urlencoded`).
pub(crate) fn form(pairs: &[(&str, &str)]) -> (&'static str, Vec<u8>) {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        s.append_pair(k, v);
    }
    ("application/x-www-form-urlencoded", s.finish().into_bytes())
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_go_over_https_or_to_a_loopback_host_only() {
        for (url, ok) in [
            ("https://as.example.com/token", true),
            ("http://127.0.0.1:8080/token", true),
            ("http://localhost/token", true),
            ("http://[::1]:9/token", true),
            ("http://as.example.com/token", false),
            ("http://127.0.0.2/token", false),
            ("file:///etc/passwd", false),
            ("javascript:alert(1)", false),
            ("not a url", false),
        ] {
            assert_eq!(super::allowed(url), ok, "{url}");
        }
    }
}
