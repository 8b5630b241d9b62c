//! A scripted Streamable-HTTP upstream on 127.0.0.1: every request (POST,
//! GET, DELETE) is logged, then answered by the test's handler
//! ([`HttpFake::start`]), which may hold an answer as long as it likes.
//! [`session_basics`] plays the parts of a session-era server a test does
//! not care about (the handshake, notifications, no GET stream).

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use manifold_config::Transport;
use manifold_protocol::ErrorCode;
use parking_lot::Mutex;
use serde_json::Value;
use std::future::Future;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// One request the fake received.
#[derive(Debug, Clone)]
pub struct Req {
    pub method: Method,
    pub headers: HeaderMap,
    /// The JSON body, if any.
    pub body: Option<Value>,
}

impl Req {
    /// The JSON-RPC method of the body.
    pub fn rpc(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }
    /// The JSON-RPC id of the body (`Null` for a notification or no body).
    pub fn id(&self) -> Value {
        self.body
            .as_ref()
            .and_then(|b| b.get("id"))
            .cloned()
            .unwrap_or(Value::Null)
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// A member of the body's `params`.
    pub fn param(&self, pointer: &str) -> Option<&Value> {
        self.body.as_ref()?.pointer(&format!("/params{pointer}"))
    }
}

/// The fake's answer to one request.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    /// 200 with a JSON body.
    pub fn json(body: &Value) -> Resp {
        Resp {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
    }
    /// 200 answering `req` with `result`.
    pub fn result(req: &Req, result: Value) -> Resp {
        Resp::json(&super::answer(&req.id(), result))
    }
    /// 200 answering `req` with a JSON-RPC error.
    pub fn error(req: &Req, code: ErrorCode, message: &str) -> Resp {
        Resp::json(&super::error(&req.id(), code.0, message))
    }
    /// `status` with a plain-text body.
    pub fn status(status: u16, body: &str) -> Resp {
        Resp {
            status,
            headers: vec![("content-type".into(), "text/plain".into())],
            body: body.into(),
        }
    }
    pub fn with_header(mut self, name: &str, value: &str) -> Resp {
        self.headers.push((name.into(), value.into()));
        self
    }
}

/// The answers of a session-era server speaking `version` with
/// `capabilities`, to whatever is not a call: `server/discover` is not a
/// method it knows, `initialize` opens session `s-1`, notifications are
/// accepted, there is no GET stream, DELETE ends the session. `None`: the
/// test's to answer.
pub fn session_basics(req: &Req, version: &str, capabilities: &Value) -> Option<Resp> {
    if req.method == Method::GET {
        return Some(Resp::status(405, "no GET stream"));
    }
    if req.method == Method::DELETE {
        return Some(Resp::status(200, ""));
    }
    if req.body.as_ref().is_some_and(|b| b.get("id").is_none()) {
        return Some(Resp::status(202, ""));
    }
    match req.rpc()? {
        "server/discover" => Some(Resp::error(
            req,
            ErrorCode::METHOD_NOT_FOUND,
            "Method not found",
        )),
        "initialize" => Some(
            Resp::result(req, super::initialize_result(version, capabilities.clone()))
                .with_header("mcp-session-id", "s-1"),
        ),
        _ => None,
    }
}

type Handler = Arc<dyn Fn(Req) -> futures_util::future::BoxFuture<'static, Resp> + Send + Sync>;

/// The server; it stops (and its connections with it) when dropped.
pub struct HttpFake {
    pub url: String,
    log: Arc<Mutex<Vec<Req>>>,
    stop: CancellationToken,
}

impl HttpFake {
    /// Serves on an ephemeral port of 127.0.0.1, answering with `handler`.
    pub async fn start<F, Fut>(handler: F) -> HttpFake
    where
        F: Fn(Req) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Resp> + Send + 'static,
    {
        let handler: Handler = Arc::new(move |req| Box::pin(handler(req)));
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let stop = CancellationToken::new();
        let (log2, stop2) = (log.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = stop2.cancelled() => return,
                    a = listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else { continue };
                let (handler, log, stop) = (handler.clone(), log2.clone(), stop2.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        serve(req, handler.clone(), log.clone())
                    });
                    let builder =
                        hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                    let conn = builder.serve_connection(TokioIo::new(stream), svc);
                    tokio::select! {
                        _ = stop.cancelled() => {}
                        _ = conn => {}
                    }
                });
            }
        });
        HttpFake {
            url: format!("http://{addr}/mcp"),
            log,
            stop,
        }
    }

    /// The HTTP transport of an upstream at this server.
    pub fn transport(&self) -> Transport {
        Transport::Http {
            url: self.url.clone(),
            headers: Default::default(),
            auth: Default::default(),
            tls: Default::default(),
        }
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Req> {
        self.log.lock().clone()
    }

    /// The requests received so far whose JSON-RPC method is `rpc`.
    pub fn calls(&self, rpc: &str) -> Vec<Req> {
        let log = self.log.lock();
        log.iter()
            .filter(|r| r.rpc() == Some(rpc))
            .cloned()
            .collect()
    }
}

impl Drop for HttpFake {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

async fn serve(
    req: http::Request<Incoming>,
    handler: Handler,
    log: Arc<Mutex<Vec<Req>>>,
) -> Result<http::Response<Full<Bytes>>, std::convert::Infallible> {
    let (parts, body) = req.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = (!bytes.is_empty())
        .then(|| serde_json::from_slice(&bytes).ok())
        .flatten();
    let req = Req {
        method: parts.method,
        headers: parts.headers,
        body,
    };
    log.lock().push(req.clone());
    let resp = handler(req).await;
    let mut out = http::Response::new(Full::new(Bytes::from(resp.body)));
    *out.status_mut() = StatusCode::from_u16(resp.status).unwrap_or(StatusCode::OK);
    for (k, v) in resp.headers {
        if let (Ok(k), Ok(v)) = (
            http::HeaderName::try_from(k),
            http::HeaderValue::try_from(v),
        ) {
            out.headers_mut().insert(k, v);
        }
    }
    Ok(out)
}
