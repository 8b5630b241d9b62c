//! One HTTP request to the upstream, built and sent: the configured headers,
//! the protocol version and session id, the SEP-2243 headers of the call, and
//! the credentials — a bearer token from the upstream's token source (asked
//! again once after a 401/403 that says it is stale), or the caller's own
//! exchanged token as it comes (`token_exchange`). TLS towards the upstream:
//! the web's roots plus its `ca`, and its `client_cert`.
//!
//! Invariants: getting a token is bounded by the upstream's `timeout`; a
//! refusal of a caller's exchanged token is that call's, never the
//! connection's; credentials that no request can use close the connection
//! (the supervisor then reports `needs_login`).
//!
//! Not here: what the answer means (`reply`, `session`).

use bytes::Bytes;
use http::{HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::Full;
use manifold_foundation::http::with_causes;
use manifold_protocol::methods as m;
use std::sync::Arc;

use super::link::HttpLink;
use crate::error::UpstreamError;

/// TLS towards the upstream: the built-in web roots plus its `ca`, and its
/// `client_cert` when one is configured. Files are read at each connect, so a
/// renewed certificate is used from the next (re)connection.
pub(super) fn client_tls(t: &manifold_config::UpstreamTls) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(ca) = &t.ca {
        let certs =
            CertificateDer::pem_file_iter(ca).map_err(|e| format!("ca `{}`: {e}", ca.display()))?;
        for cert in certs {
            let cert = cert.map_err(|e| format!("ca `{}`: {e}", ca.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("ca `{}`: {e}", ca.display()))?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots);
    match &t.client_cert {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("client_cert `{}`: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("client_key `{}`: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client_cert and client_key: {e}"))
        }
    }
}

impl HttpLink {
    fn request(
        &self,
        method: Method,
        body: Option<Bytes>,
        extra: &[(String, String)],
        last_event_id: Option<&str>,
        token: Option<&str>,
    ) -> Result<Request<Full<Bytes>>, String> {
        let uri = with_query(&self.url, extra)?;
        let mut b = Request::builder().method(method).uri(uri);
        let h = b.headers_mut().ok_or("bad request")?;
        h.extend(self.headers.clone());
        if let Some(v) = token.and_then(|t| HeaderValue::try_from(format!("Bearer {t}")).ok()) {
            h.insert(http::header::AUTHORIZATION, v);
        }
        h.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if body.is_some() {
            h.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(m::CONTENT_TYPE_JSON),
            );
        }
        if let Some(v) = self.wire.protocol_version.get() {
            if let Ok(v) = HeaderValue::try_from(v.as_str()) {
                h.insert(m::HEADER_PROTOCOL_VERSION, v);
            }
        }
        if let Some(id) = self.session_id.lock().clone() {
            if let Ok(v) = HeaderValue::try_from(id) {
                h.insert(m::HEADER_SESSION_ID, v);
            }
        }
        if let Some(id) = last_event_id.and_then(|i| HeaderValue::try_from(i).ok()) {
            h.insert(m::HEADER_LAST_EVENT_ID, id);
        }
        for (k, v) in extra {
            if k.starts_with(crate::facts::QUERY_PARAM_PREFIX) || k == crate::facts::ON_BEHALF {
                continue;
            }
            if let (Ok(k), Ok(v)) = (
                HeaderName::try_from(k.as_str()),
                HeaderValue::try_from(v.as_str()),
            ) {
                h.insert(k, v);
            }
        }
        b.body(Full::new(body.unwrap_or_default()))
            .map_err(|e| e.to_string())
    }

    pub(super) async fn send(
        &self,
        method: Method,
        body: Option<Bytes>,
        extra: &[(String, String)],
        last_event_id: Option<&str>,
    ) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
        let name = self.wire.upstream();
        // A call on behalf of its caller carries its own (exchanged) token: a
        // refusal of it is that call's, never the connection's.
        let Some(tokens) = self.tokens.as_ref().filter(|_| !on_behalf(extra)) else {
            return self
                .send_once(method, body, extra, last_event_id, None)
                .await;
        };
        // Without a token yet the request goes bare: some servers let
        // `initialize` through, and a refusal says what to do.
        // Getting a token (a refresh, a client-credentials grant with its
        // discovery) is bounded by the upstream's own timeout.
        let token = tokio::time::timeout(self.wire.timeout, tokens.token())
            .await
            .ok()
            .and_then(Result::ok);
        let resp = self
            .send_once(
                method.clone(),
                body.clone(),
                extra,
                last_event_id,
                token.as_deref(),
            )
            .await?;
        let status = resp.status();
        if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
            return Ok(resp);
        }
        let challenge = resp
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        use manifold_credentials::Refusal;
        match tokens
            .refused(token.as_deref(), status.as_u16(), challenge.as_deref())
            .await
        {
            Refusal::Retry => {
                // Bounded like the first; its failure (a refused refresh, a
                // credential request the gateway would not send) is the reason.
                let token = match tokio::time::timeout(self.wire.timeout, tokens.token()).await {
                    Ok(Ok(t)) => t,
                    Ok(Err(e)) => return Err(self.needs_login(e.to_string())),
                    Err(_) => {
                        return Err(UpstreamError::unavailable(
                            name,
                            format!("getting a token took longer than {:?}", self.wire.timeout),
                        ))
                    }
                };
                let resp = self
                    .send_once(method, body, extra, last_event_id, Some(&token))
                    .await?;
                let status = resp.status();
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    return Err(self.needs_login(format!(
                        "the upstream refused a fresh token too (HTTP {status}); run `manifold login {name}`"
                    )));
                }
                Ok(resp)
            }
            Refusal::NeedsLogin(why) => Err(self.needs_login(why)),
            Refusal::StepUp(why) => Err(UpstreamError::needs_login(name, why, true)),
            Refusal::Final(why) => Err(UpstreamError::unavailable(name, why)),
        }
    }

    /// The credentials are no good for any request: the connection is
    /// closed, so the supervisor reconnects and reports `needs_login` until a
    /// login gives it a token the upstream takes.
    fn needs_login(&self, why: String) -> UpstreamError {
        self.wire.closed.cancel();
        UpstreamError::needs_login(self.wire.upstream(), why, false)
    }

    async fn send_once(
        &self,
        method: Method,
        body: Option<Bytes>,
        extra: &[(String, String)],
        last_event_id: Option<&str>,
        token: Option<&str>,
    ) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
        let name = self.wire.upstream();
        let req = self
            .request(method, body, extra, last_event_id, token)
            .map_err(|e| UpstreamError::protocol(name, e))?;
        // A connection that could not be made carried nothing; any other
        // failure before the response (a reset, a close) may have carried the
        // request: both are worth another attempt for a call that may be
        // repeated.
        let resp = self.client.request(req).await.map_err(|e| {
            UpstreamError::transient(
                name,
                // `transient` scrubs the URL's userinfo and query.
                format!("HTTP request to {} failed: {}", self.url, with_causes(&e)),
                !e.is_connect(),
            )
        })?;
        // A stateless (2026-07-28) exchange has no session, whatever is sent.
        let stateful = !self.wire.is_stateless();
        if let Some(id) = resp
            .headers()
            .get(m::HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|_| stateful)
        {
            let mut cur = self.session_id.lock();
            if cur.as_deref() != Some(id) {
                *cur = Some(id.to_string());
            }
        }
        Ok(resp)
    }
}

/// Whether a request carries its caller's own (exchanged) token.
pub(super) fn on_behalf(extra: &[(String, String)]) -> bool {
    extra.iter().any(|(k, _)| {
        k == crate::facts::ON_BEHALF || k.eq_ignore_ascii_case(http::header::AUTHORIZATION.as_str())
    })
}

/// The upstream's URL with this request's query parameters added (the
/// [`crate::facts::QUERY_PARAM_PREFIX`] entries of `extra`), percent-encoded.
fn with_query(url: &http::Uri, extra: &[(String, String)]) -> Result<http::Uri, String> {
    let mut pairs = extra
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(crate::facts::QUERY_PARAM_PREFIX)?, v)))
        .peekable();
    if pairs.peek().is_none() {
        return Ok(url.clone());
    }
    let mut u = url::Url::parse(&url.to_string()).map_err(|e| e.to_string())?;
    u.query_pairs_mut().extend_pairs(pairs);
    http::Uri::try_from(u.as_str()).map_err(|e| e.to_string())
}
