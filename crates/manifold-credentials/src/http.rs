//! A small HTTP client for metadata and token endpoints: HTTPS with the web
//! roots (or plain HTTP), every request bounded by [`HTTP_TIMEOUT`] and every
//! body by [`MAX_BODY`].
//!
//! Invariants: never follows redirects (an authorization server's answers
//! are read where they were asked); a body that is not JSON is an error that
//! never quotes it (it may hold a token); only `https://` URLs, or `http://`
//! to a loopback host, are requested ([`allowed`]). A running gateway's
//! client ([`Client::unattended`]) reaches an origin that is not written in
//! the configuration only at public addresses: an IP literal is checked
//! before the request, a name at connect time by the resolver ([`guard`]),
//! so a name that resolves to `127.0.0.1` is loopback too. `manifold login`
//! ([`Client::attended`]) is run by a person who sees the issuer it prints,
//! and is not narrowed.
//!
//! Not here: what the answers mean.

use bytes::Bytes;
use http::{Method, Request, StatusCode};
use http_body_util::Full;
use hyper_util::client::legacy::connect::dns::GaiResolver;
use manifold_foundation::http::{self as bounded, FetchError, Options};
use manifold_foundation::redact;
use serde_json::Value;

use crate::guard::{self, Guarded};
use crate::{error::CredentialError, limits::HTTP_TIMEOUT, limits::MAX_BODY};

/// The client of one flow: where it may go, and how it gets there.
#[derive(Clone)]
pub(crate) struct Client {
    /// For origins written in the configuration, and for `manifold login`.
    open: bounded::Client<GaiResolver>,
    /// For any other origin: its names resolve to public addresses only.
    guarded: bounded::Client<Guarded>,
    /// Origins (`scheme://host:port`) written in the configuration.
    written: Vec<String>,
    /// A person runs the flow (`manifold login`): every origin is open.
    attended: bool,
}

impl Client {
    /// `manifold login`'s client.
    pub(crate) fn attended() -> Client {
        Client::new(Vec::new(), true)
    }

    /// A running gateway's client: `written` are the URLs in the
    /// configuration (the upstream, the pinned issuer, an explicit token
    /// endpoint) whose origins it may reach at any address.
    pub(crate) fn unattended(written: &[&str]) -> Client {
        let origins = written.iter().filter_map(|u| origin(u)).collect();
        Client::new(origins, false)
    }

    fn new(written: Vec<String>, attended: bool) -> Client {
        let options = Options::new(HTTP_TIMEOUT);
        Client {
            open: bounded::client(&options),
            guarded: bounded::client_with_resolver(Guarded, &options),
            written,
            attended,
        }
    }

    /// Whether a person runs the flow (`manifold login`).
    pub(crate) fn is_attended(&self) -> bool {
        self.attended
    }

    /// Whether `url`'s origin may be reached at any address.
    fn is_written(&self, url: &url::Url) -> bool {
        self.attended || self.written.contains(&url.origin().ascii_serialization())
    }
}

/// The origin (`scheme://host:port`) of `url`.
pub(crate) fn origin(url: &str) -> Option<String> {
    url::Url::parse(url)
        .ok()
        .map(|u| u.origin().ascii_serialization())
        .filter(|o| o != "null")
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
                "{}: the answer is not JSON (HTTP {}, {} bytes)",
                redact::url(what),
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
        "https" => u.host().is_some(),
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
    // Errors name the endpoint, never a secret in its query or userinfo.
    let shown = redact::url(url);
    if !allowed(url) {
        return Err(CredentialError::Refused(format!(
            "{shown}: an authorization server is reached over https (or http to a loopback host) only"
        )));
    }
    let parsed = url::Url::parse(url)
        .map_err(|e| CredentialError::Refused(format!("{shown}: not a URL: {e}")))?;
    let written = c.is_written(&parsed);
    if !written {
        let literal = match parsed.host() {
            Some(url::Host::Ipv4(ip)) => Some(std::net::IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(std::net::IpAddr::V6(ip)),
            _ => None,
        };
        if let Some(why) = literal.and_then(guard::refused) {
            return Err(CredentialError::Refused(format!(
                "{shown}: not sending a credential request to {why}; only an origin written in the configuration (auth.issuer, auth.token_endpoint) is reached there"
            )));
        }
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
        .map_err(|e| CredentialError::Server(format!("{shown}: {e}")))?;
    let fetched = if written {
        bounded::fetch(&c.open, req, MAX_BODY, HTTP_TIMEOUT).await
    } else {
        bounded::fetch(&c.guarded, req, MAX_BODY, HTTP_TIMEOUT).await
    };
    let answer = fetched.map_err(|e| match e {
        // The guard's refusal is the client's safety, not an outage.
        FetchError::Send(why) if why.contains(guard::REFUSAL_MARK) => {
            CredentialError::Refused(format!("{shown}: {why}"))
        }
        e => CredentialError::Server(format!("{shown}: {e}")),
    })?;
    Ok(Answer {
        status: answer.status,
        challenge: answer
            .headers
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string),
        body: answer.body,
    })
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
    use super::*;

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
            assert_eq!(allowed(url), ok, "{url}");
        }
    }

    /// A loopback listener that counts the connections it accepts.
    async fn victim() -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::Ordering;
        let l = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = l.local_addr().expect("addr").port();
        let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                h.fetch_add(1, Ordering::SeqCst);
                use tokio::io::{AsyncReadExt, AsyncWriteExt};
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 16 * 1024 {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let _ = s
                    .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}")
                    .await;
            }
        });
        (format!("{port}"), hits)
    }

    #[tokio::test]
    async fn a_running_gateway_reaches_loopback_only_at_written_origins() {
        use std::sync::atomic::Ordering;
        let (port, hits) = victim().await;
        let c = Client::unattended(&["http://127.0.0.1:1/mcp"]);
        // An IP literal, and a name that resolves to it: refused, nothing sent.
        for url in [
            format!("http://127.0.0.1:{port}/reload"),
            format!("http://localhost:{port}/reload"),
            format!("http://[::1]:{port}/reload"),
        ] {
            let e = send(&c, Method::POST, &url, &[], None)
                .await
                .err()
                .unwrap_or_else(|| panic!("{url} was reached"));
            assert!(matches!(e, CredentialError::Refused(_)), "{url}: {e}");
            assert!(e.to_string().contains("loopback"), "{e}");
        }
        assert_eq!(hits.load(Ordering::SeqCst), 0, "the victim was reached");
        // Private, link-local (cloud metadata), CGNAT, unspecified: refused
        // before any connection is tried.
        for url in [
            "https://10.1.2.3/token",
            "https://172.16.0.1/token",
            "https://192.168.1.1/token",
            "https://169.254.169.254/latest/meta-data",
            "https://100.64.0.1/token",
            "https://0.0.0.0/token",
            "https://[fd00::1]/token",
            "https://[fe80::1]/token",
            "https://[::ffff:127.0.0.1]/token",
        ] {
            let e = send(&c, Method::POST, url, &[], None)
                .await
                .err()
                .unwrap_or_else(|| panic!("{url} was reached"));
            assert!(matches!(e, CredentialError::Refused(_)), "{url}: {e}");
        }
        // Written in the configuration: reached.
        let c = Client::unattended(&[&format!("http://127.0.0.1:{port}/issuer")]);
        let a = send(
            &c,
            Method::GET,
            &format!("http://127.0.0.1:{port}/x"),
            &[],
            None,
        )
        .await
        .expect("a written origin is reached");
        assert_eq!(a.status, StatusCode::OK);
        // `manifold login`: a person sees where it goes.
        let a = send(
            &Client::attended(),
            Method::GET,
            &format!("http://localhost:{port}/x"),
            &[],
            None,
        )
        .await
        .expect("login reaches loopback");
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(hits.load(Ordering::SeqCst), 2);
    }
}
