//! A small HTTP client for metadata and token endpoints: HTTPS with the web
//! roots (or plain HTTP), every request bounded by [`HTTP_TIMEOUT`] and every
//! body by [`MAX_BODY`].
//!
//! Invariants: never follows redirects (an authorization server's answers
//! are read where they were asked); a body that is not JSON is an error that
//! quotes at most 200 characters of it.
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
    pub(crate) fn json(&self, what: &str) -> Result<Value, CredentialError> {
        serde_json::from_slice(&self.body).map_err(|_| {
            CredentialError::Server(format!(
                "{what}: not JSON (HTTP {}): {}",
                self.status,
                String::from_utf8_lossy(&self.body)
                    .chars()
                    .take(200)
                    .collect::<String>()
            ))
        })
    }
}

pub(crate) async fn send(
    c: &Client,
    method: Method,
    url: &str,
    headers: &[(&str, String)],
    body: Option<(&str, Vec<u8>)>,
) -> Result<Answer, CredentialError> {
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
