//! The bounded HTTPS client and fetch every outbound HTTP request of Manifold
//! goes through: upstreams, identity providers (JWKS, introspection),
//! authorization servers (metadata, tokens), the OTLP collector.
//!
//! [`Options`] says how a client connects (its connect timeout, the TLS roots:
//! the web's or a configuration of the caller's, HTTP/2, `TCP_NODELAY`, how
//! long idle connections are pooled); [`client`] builds it over the system
//! resolver and [`client_with_resolver`] over another one (the guarded
//! resolver of credential requests). [`fetch`] sends one request and reads its
//! whole answer, the body within a byte bound and the whole within a time
//! bound.
//!
//! Invariants: every connection attempt is bounded by its connect timeout;
//! `fetch` never reads more than `max_body` bytes and never waits longer than
//! `within`; redirects are never followed (hyper's client does not); plain
//! `http://` is allowed here: which URLs may be asked is the caller's rule.
//!
//! Not here: which origins a request may reach (manifold-credentials `guard`),
//! streaming answers (the upstream transport reads SSE itself).

use bytes::Bytes;
use http::{HeaderMap, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::dns::GaiResolver;
use hyper_util::client::legacy::connect::{Connect, HttpConnector};
use std::time::Duration;

/// A pooled HTTP(S) client over resolver `R`, sending whole bodies.
pub type Client<R = GaiResolver> =
    hyper_util::client::legacy::Client<HttpsConnector<HttpConnector<R>>, Full<Bytes>>;

/// How a client connects.
#[derive(Debug, Clone)]
pub struct Options {
    /// Longest wait for a TCP connection (a host that never answers a SYN
    /// must not hold a request).
    pub connect_timeout: Duration,
    /// The TLS configuration; `None`: the web's roots (webpki), no client
    /// certificate.
    pub tls: Option<rustls::ClientConfig>,
    /// Offer HTTP/2 (ALPN) besides HTTP/1.1.
    pub http2: bool,
    /// Send each segment at once (no Nagle): for small, latency-bound requests.
    pub nodelay: bool,
    /// How long an idle pooled connection is kept; `None`: hyper's default.
    pub pool_idle: Option<Duration>,
}

impl Options {
    /// HTTP/1.1 with the web's roots, connecting within `connect_timeout`.
    pub fn new(connect_timeout: Duration) -> Options {
        Options {
            connect_timeout,
            tls: None,
            http2: false,
            nodelay: false,
            pool_idle: None,
        }
    }
}

/// The HTTPS (or plain HTTP) connector of `options` over `resolver`.
pub fn connector<R: Clone>(resolver: R, options: &Options) -> HttpsConnector<HttpConnector<R>> {
    let mut tcp = HttpConnector::new_with_resolver(resolver);
    tcp.enforce_http(false);
    tcp.set_nodelay(options.nodelay);
    tcp.set_connect_timeout(Some(options.connect_timeout));
    let tls = match &options.tls {
        Some(config) => hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config.clone()),
        None => hyper_rustls::HttpsConnectorBuilder::new().with_webpki_roots(),
    };
    let http1 = tls.https_or_http().enable_http1();
    if options.http2 {
        http1.enable_http2().wrap_connector(tcp)
    } else {
        http1.wrap_connector(tcp)
    }
}

/// A client of `options` over the system resolver.
pub fn client(options: &Options) -> Client {
    client_with_resolver(GaiResolver::new(), options)
}

/// A client of `options` over `resolver`.
pub fn client_with_resolver<R>(resolver: R, options: &Options) -> Client<R>
where
    R: Clone + Send + Sync + 'static,
    HttpsConnector<HttpConnector<R>>: Connect + Clone + Send + Sync + 'static,
{
    let mut b = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new());
    if let Some(idle) = options.pool_idle {
        b.pool_idle_timeout(idle);
    }
    b.build(connector(resolver, options))
}

/// A whole answer.
#[derive(Debug)]
pub struct Fetched {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

/// Why a fetch got no whole answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The request could not be sent or got no answer: the error and its
    /// causes, one line.
    Send(String),
    /// The answer's body could not be read, or is over the byte bound.
    Body(String),
    /// No whole answer within the time bound.
    Timeout(Duration),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Send(why) => f.write_str(why),
            FetchError::Body(why) => write!(f, "reading the answer: {why}"),
            FetchError::Timeout(within) => write!(f, "no answer within {within:?}"),
        }
    }
}

impl std::error::Error for FetchError {}

/// Sends `request` and reads the whole answer: at most `max_body` bytes of
/// body, all within `within`.
pub async fn fetch<C>(
    client: &hyper_util::client::legacy::Client<C, Full<Bytes>>,
    request: Request<Full<Bytes>>,
    max_body: usize,
    within: Duration,
) -> Result<Fetched, FetchError>
where
    C: Connect + Clone + Send + Sync + 'static,
{
    let whole = async {
        let resp = client
            .request(request)
            .await
            .map_err(|e| FetchError::Send(with_causes(&e)))?;
        let (parts, body) = resp.into_parts();
        let body = Limited::new(body, max_body)
            .collect()
            .await
            .map_err(|e| FetchError::Body(e.to_string()))?
            .to_bytes();
        Ok(Fetched {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    };
    tokio::time::timeout(within, whole)
        .await
        .map_err(|_| FetchError::Timeout(within))?
}

/// An error and its causes, outermost first, on one line: the cause (a refused
/// TLS certificate, a reset connection, an address a guard refused) is what an
/// operator needs. A cause already spelled out by its parent is not repeated.
pub fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A loopback server answering every connection with `answer`, after
    /// `delay`.
    async fn server(answer: &'static [u8], delay: Duration) -> String {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 4096];
                    let _ = s.read(&mut buf).await;
                    tokio::time::sleep(delay).await;
                    let _ = s.write_all(answer).await;
                });
            }
        });
        format!("http://{addr}/")
    }

    fn get(url: &str) -> Request<Full<Bytes>> {
        Request::get(url).body(Full::new(Bytes::new())).unwrap()
    }

    #[tokio::test]
    async fn a_fetch_is_bounded_in_bytes_and_time() {
        let c = client(&Options::new(Duration::from_secs(2)));
        let ok = server(
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}",
            Duration::ZERO,
        )
        .await;
        let got = fetch(&c, get(&ok), 2, Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!((got.status, &got.body[..]), (StatusCode::OK, &b"{}"[..]));

        let big = server(
            b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n0123456789",
            Duration::ZERO,
        )
        .await;
        let e = fetch(&c, get(&big), 9, Duration::from_secs(5))
            .await
            .unwrap_err();
        assert!(matches!(e, FetchError::Body(_)), "{e}");

        let slow = server(
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            Duration::from_secs(30),
        )
        .await;
        let within = Duration::from_millis(200);
        let e = fetch(&c, get(&slow), 9, within).await.unwrap_err();
        assert_eq!(e, FetchError::Timeout(within));
    }
}
