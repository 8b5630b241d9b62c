//! An authorization server stand-in for the upstream-credentials tests
//! (`upstream_auth`, `upstream_auth_attacks`): one HTTP server with
//! protected resource and authorization server metadata, `/authorize`
//! (approves at once, with `iss`), `/token` (authorization code, refresh,
//! client credentials, token exchange), `/introspect`, and a small MCP server
//! at `/mcp` whose `whoami` tool answers with the subject of the token it got.
//!
//! [`Knobs`] turn it into an attacker: resource metadata naming other
//! authorization servers, metadata naming a token endpoint or authorization
//! URL of its choice, a token endpoint that redirects. Every request it
//! receives is kept ([`Standin::seen`]), so a test can show what never
//! reached it.

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use manifold_testkit::harness::{toml_string, TestGateway};

pub(crate) const STORE_KEY: &str = "upstream-auth-test-store-key-0123456789";

#[derive(Default)]
pub(crate) struct Auth {
    /// access token → (subject, expiry)
    pub(crate) access: HashMap<String, (String, Instant)>,
    /// refresh token → subject
    refresh: HashMap<String, String>,
    revoked: HashSet<String>,
    /// Codes `/authorize` issued and not yet redeemed.
    pub(crate) codes: HashMap<String, Issued>,
}

/// What the stand-in says about itself; `None`: the truth.
#[derive(Default, Clone)]
pub(crate) struct Knobs {
    /// The resource metadata's `authorization_servers`.
    pub(crate) servers: Option<Vec<String>>,
    /// The metadata's `token_endpoint`.
    pub(crate) token_endpoint: Option<String>,
    /// The metadata's `authorization_endpoint`.
    pub(crate) authorization_endpoint: Option<String>,
    /// `/token` answers 307 to this URL.
    pub(crate) redirect_token_to: Option<String>,
    /// The authorization-code grant gives no refresh token.
    pub(crate) no_refresh: bool,
    /// `/mcp` serves the handshake and lists without a token (an upstream
    /// whose callers each bring their own account: the gateway's own
    /// requests carry none).
    pub(crate) open_lists: bool,
}

/// A code `/authorize` issued: for whom, its PKCE challenge, its redirect.
#[derive(Clone)]
pub(crate) struct Issued {
    subject: String,
    challenge: String,
    redirect: String,
}

/// What the stand-in received: method, path, `Authorization`, body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Seen {
    pub(crate) method: String,
    pub(crate) path: String,
    pub(crate) authorization: Option<String>,
    pub(crate) body: String,
}

struct Shared {
    state: Arc<Mutex<Auth>>,
    refreshes: Arc<AtomicUsize>,
    knobs: Arc<Mutex<Knobs>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    life: Duration,
}

/// The stand-in: an authorization server and the MCP server it protects.
pub(crate) struct Standin {
    pub(crate) addr: SocketAddr,
    pub(crate) state: Arc<Mutex<Auth>>,
    pub(crate) refreshes: Arc<AtomicUsize>,
    /// Protected resource metadata documents served.
    pub(crate) discoveries: Arc<AtomicUsize>,
    /// Lifetime of the access tokens it issues.
    pub(crate) life: Duration,
    knobs: Arc<Mutex<Knobs>>,
    seen: Arc<Mutex<Vec<Seen>>>,
    _stop: tokio::sync::oneshot::Sender<()>,
}

fn json_reply(status: StatusCode, v: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(v.to_string())))
        .unwrap_or_default()
}

fn issue(a: &mut Auth, subject: &str, life: Duration, refresh: bool) -> Value {
    let n = a.access.len() + a.refresh.len() + a.revoked.len();
    let token = format!("at-{n}-{subject}");
    a.access
        .insert(token.clone(), (subject.to_string(), Instant::now() + life));
    let mut v =
        json!({"access_token": token, "token_type": "Bearer", "expires_in": life.as_secs()});
    if refresh {
        let rt = format!("rt-{n}-{subject}");
        a.refresh.insert(rt.clone(), subject.to_string());
        v["refresh_token"] = json!(rt);
    }
    v
}

impl Standin {
    pub(crate) async fn start(life: Duration) -> Result<Standin> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            state: Arc::new(Mutex::new(Auth::default())),
            refreshes: Arc::new(AtomicUsize::new(0)),
            knobs: Arc::new(Mutex::new(Knobs::default())),
            seen: Arc::new(Mutex::new(Vec::new())),
            life,
        });
        let discoveries = Arc::new(AtomicUsize::new(0));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let (sh, dc) = (shared.clone(), discoveries.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = &mut stopped => return,
                    a = listener.accept() => a,
                };
                let Ok((io, _)) = accepted else { continue };
                let (sh, dc) = (sh.clone(), dc.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let (sh, dc) = (sh.clone(), dc.clone());
                        async move {
                            if req
                                .uri()
                                .path()
                                .starts_with("/.well-known/oauth-protected-resource")
                            {
                                dc.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok::<_, Infallible>(handle(req, addr, &sh).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(io), svc)
                        .await;
                });
            }
        });
        Ok(Standin {
            addr,
            state: shared.state.clone(),
            refreshes: shared.refreshes.clone(),
            discoveries,
            life,
            knobs: shared.knobs.clone(),
            seen: shared.seen.clone(),
            _stop: stop,
        })
    }

    /// Its origin, the issuer it names.
    pub(crate) fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Changes what it says about itself.
    pub(crate) fn set(&self, f: impl FnOnce(&mut Knobs)) {
        f(&mut self.knobs.lock());
    }

    /// Every request it received so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().clone()
    }

    pub(crate) fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Revokes every refresh token and expires every access token.
    pub(crate) fn revoke_all(&self) {
        let mut a = self.state.lock();
        let rts: Vec<String> = a.refresh.keys().cloned().collect();
        a.revoked.extend(rts);
        a.refresh.clear();
        a.access.clear();
    }
}

async fn handle(req: Request<Incoming>, addr: SocketAddr, sh: &Shared) -> Response<Full<Bytes>> {
    let (st, refreshes, life) = (&*sh.state, &*sh.refreshes, sh.life);
    let knobs = sh.knobs.lock().clone();
    let method = req.method().to_string();
    let base = format!("http://{addr}");
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or("").to_string();
    let auth = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    sh.seen.lock().push(Seen {
        method,
        path: path.clone(),
        authorization: auth.clone(),
        body: String::from_utf8_lossy(&body).into_owned(),
    });
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let lock = || st.lock();
    match path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => json_reply(
            StatusCode::OK,
            json!({"resource": format!("{base}/mcp"),
                   "authorization_servers": knobs.servers.clone().unwrap_or_else(|| vec![base.clone()])}),
        ),
        "/.well-known/oauth-authorization-server" => json_reply(
            StatusCode::OK,
            json!({
                "issuer": base,
                "authorization_endpoint": knobs.authorization_endpoint.clone()
                    .unwrap_or_else(|| format!("{base}/authorize")),
                "token_endpoint": knobs.token_endpoint.clone()
                    .unwrap_or_else(|| format!("{base}/token")),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none", "client_secret_basic"],
                "authorization_response_iss_parameter_supported": true,
            }),
        ),
        "/authorize" => {
            let q: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
                .into_owned()
                .collect();
            let redirect = q.get("redirect_uri").cloned().unwrap_or_default();
            let mut to = url::Url::parse(&redirect)
                .unwrap_or_else(|_| url::Url::parse("http://127.0.0.1:1/").expect("url"));
            // The person signing in here: `as=` (the test's browser picks), else alice.
            let subject = q.get("as").cloned().unwrap_or_else(|| "alice".into());
            let code = {
                let mut a = lock();
                let code = format!("code-{subject}-{}", a.codes.len() + a.access.len());
                a.codes.insert(
                    code.clone(),
                    Issued {
                        subject,
                        challenge: q.get("code_challenge").cloned().unwrap_or_default(),
                        redirect,
                    },
                );
                code
            };
            to.query_pairs_mut()
                .append_pair("code", &code)
                .append_pair("state", q.get("state").map_or("", |s| s.as_str()))
                .append_pair("iss", &base);
            Response::builder()
                .status(StatusCode::FOUND)
                .header("location", to.as_str())
                .body(Full::new(Bytes::new()))
                .unwrap_or_default()
        }
        // RFC 7662 for the gateway's front door: `user-<name>` is active as <name>.
        "/introspect" => match form.get("token").and_then(|t| t.strip_prefix("user-")) {
            Some(name) => json_reply(StatusCode::OK, json!({"active": true, "sub": name})),
            None => json_reply(StatusCode::OK, json!({"active": false})),
        },
        "/token" if knobs.redirect_token_to.is_some() => Response::builder()
            .status(StatusCode::TEMPORARY_REDIRECT)
            .header("location", knobs.redirect_token_to.unwrap_or_default())
            .body(Full::new(Bytes::new()))
            .unwrap_or_default(),
        "/token" => {
            // An authorization server that takes its time for one caller.
            if form.get("subject_token").map(String::as_str) == Some("user-slow") {
                tokio::time::sleep(Duration::from_secs(5)).await;
            }
            let mut a = lock();
            match form.get("grant_type").map(String::as_str) {
                // RFC 8693: a caller's token for one addressed to the MCP server.
                Some("urn:ietf:params:oauth:grant-type:token-exchange")
                    if auth.as_deref().is_some_and(|h| h.starts_with("Basic "))
                        && form.get("resource").map(String::as_str)
                            == Some(&*format!("{base}/mcp"))
                        && form.get("subject_token_type").map(String::as_str)
                            == Some("urn:ietf:params:oauth:token-type:access_token") =>
                {
                    match form
                        .get("subject_token")
                        .and_then(|t| t.strip_prefix("user-"))
                    {
                        // A token the MCP server will not take (revoked at once).
                        Some("mallory") => json_reply(
                            StatusCode::OK,
                            json!({"access_token": "at-revoked-mallory", "token_type": "Bearer", "expires_in": 60}),
                        ),
                        Some(name) => json_reply(StatusCode::OK, issue(&mut a, name, life, false)),
                        None => {
                            json_reply(StatusCode::BAD_REQUEST, json!({"error": "invalid_grant"}))
                        }
                    }
                }
                // A code it issued, once, with the verifier of its challenge
                // and the same redirect URI.
                Some("authorization_code") => {
                    let issued = form.get("code").and_then(|c| a.codes.remove(c));
                    let verifier = form.get("code_verifier").cloned().unwrap_or_default();
                    match issued {
                        Some(i)
                            if s256(&verifier) == i.challenge
                                && form.get("redirect_uri") == Some(&i.redirect) =>
                        {
                            json_reply(
                                StatusCode::OK,
                                issue(&mut a, &i.subject, life, !knobs.no_refresh),
                            )
                        }
                        _ => json_reply(StatusCode::BAD_REQUEST, json!({"error": "invalid_grant"})),
                    }
                }
                Some("refresh_token") => {
                    let rt = form.get("refresh_token").cloned().unwrap_or_default();
                    match a.refresh.remove(&rt) {
                        Some(subject) => {
                            refreshes.fetch_add(1, Ordering::Relaxed);
                            json_reply(StatusCode::OK, issue(&mut a, &subject, life, true))
                        }
                        None => {
                            json_reply(StatusCode::BAD_REQUEST, json!({"error": "invalid_grant"}))
                        }
                    }
                }
                Some("client_credentials")
                    if auth.as_deref().is_some_and(|h| h.starts_with("Basic ")) =>
                {
                    json_reply(
                        StatusCode::OK,
                        issue(&mut a, "service:manifold", life, false),
                    )
                }
                _ => json_reply(
                    StatusCode::BAD_REQUEST,
                    json!({"error": "unsupported_grant_type"}),
                ),
            }
        }
        "/mcp" => {
            let subject = auth
                .as_deref()
                .and_then(|h| h.strip_prefix("Bearer "))
                .and_then(|t| lock().access.get(t).cloned())
                .filter(|(_, exp)| *exp > Instant::now())
                .map(|(s, _)| s);
            let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let own = matches!(
                msg["method"].as_str().unwrap_or_default(),
                "initialize" | "server/discover" | "tools/list" | "ping"
            ) || msg["method"]
                .as_str()
                .is_some_and(|m| m.starts_with("notifications/"));
            let subject = match subject {
                // Open to requests without a token; a token it does not know is refused.
                None if knobs.open_lists && own && auth.is_none() => Some(String::new()),
                s => s,
            };
            let Some(subject) = subject else {
                return Response::builder()
                    .status(StatusCode::UNAUTHORIZED)
                    .header(
                        "www-authenticate",
                        format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""),
                    )
                    .body(Full::new(Bytes::new()))
                    .unwrap_or_default();
            };
            let id = msg["id"].clone();
            let result = match msg["method"].as_str().unwrap_or_default() {
                "initialize" => {
                    json!({"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                                       "serverInfo": {"name": "standin", "version": "1"}})
                }
                "tools/list" => {
                    json!({"tools": [{"name": "whoami", "inputSchema": {"type": "object"}}]})
                }
                "tools/call" => json!({"content": [{"type": "text", "text": subject}]}),
                "ping" => json!({}),
                m if m.starts_with("notifications/") || id.is_null() => {
                    return Response::builder()
                        .status(StatusCode::ACCEPTED)
                        .body(Full::new(Bytes::new()))
                        .unwrap_or_default()
                }
                _ => {
                    return json_reply(
                        StatusCode::OK,
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}),
                    )
                }
            };
            json_reply(
                StatusCode::OK,
                json!({"jsonrpc": "2.0", "id": id, "result": result}),
            )
        }
        _ => json_reply(StatusCode::NOT_FOUND, json!({"error": "not_found"})),
    }
}

/// The S256 PKCE challenge of `verifier`.
fn s256(verifier: &str) -> String {
    use base64::Engine;
    use sha2::Digest;
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()))
}

/// GETs `url` and follows one redirect to the loopback callback, as a browser.
pub(crate) async fn browse(url: String) {
    let get = |url: String| async move {
        let u = url::Url::parse(&url).ok()?;
        let mut s = TcpStream::connect((u.host_str()?, u.port()?)).await.ok()?;
        let target = match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        };
        s.write_all(
            format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await
        .ok()?;
        let mut text = String::new();
        s.read_to_string(&mut text).await.ok()?;
        Some(text)
    };
    let Some(first) = get(url).await else { return };
    let location = first
        .lines()
        .find_map(|l| {
            l.strip_prefix("location: ")
                .or_else(|| l.strip_prefix("Location: "))
        })
        .map(|l| l.trim().to_string());
    if let Some(l) = location {
        let _ = get(l).await;
    }
}

pub(crate) fn config(s: &Standin, store: &std::path::Path, auth: &str) -> String {
    format!(
        "[upstreams.secured]\nurl = {}\ntimeout = \"10s\"\n\n[upstreams.secured.auth]\n{auth}\n\n\
         [credentials]\nstore = {}\nkey = {}\n\n[admin]\nlisten = \"127.0.0.1:0\"\n",
        toml_string(&s.url()),
        toml_string(&store.display().to_string()),
        toml_string(STORE_KEY),
    )
}

/// `manifold login secured`, in process, with [`browse`] as the browser.
pub(crate) async fn login(
    s: &Standin,
    store: &std::path::Path,
) -> Result<manifold_credentials::Record> {
    login_with(
        s,
        store,
        "type = \"oauth\"\nclient_id = \"manifold-test\"",
        &|_, _| true,
    )
    .await
}

/// `manifold login secured` with `auth` as its `[upstreams.secured.auth]`;
/// `show(issuer, url)` is told what the command would print, and the
/// browser follows the URL when it answers true.
pub(crate) async fn login_with(
    s: &Standin,
    store: &std::path::Path,
    auth: &str,
    show: &(dyn Fn(&str, &str) -> bool + Send + Sync),
) -> Result<manifold_credentials::Record> {
    let cfg = TestGateway::config(&config(s, store, auth))?;
    let u = cfg
        .upstreams
        .iter()
        .find(|u| u.name == "secured")
        .context("upstream")?;
    let manifold_config::Transport::Http {
        url,
        auth: manifold_config::credentials::UpstreamAuth::OAuth(client),
        ..
    } = &u.transport
    else {
        anyhow::bail!("not oauth");
    };
    let store = manifold_credentials::Store::new(client.store.as_ref().context("store")?);
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let flow = manifold_credentials::login(manifold_credentials::LoginOptions {
        upstream: "secured".into(),
        url: url.clone(),
        client: client.clone(),
        store,
        show: Box::new(move |issuer: &str, u: &str| {
            let _ = tx.send(format!("{issuer} {u}"));
        }),
    });
    tokio::pin!(flow);
    loop {
        tokio::select! {
            r = &mut flow => return Ok(r?),
            Some(line) = rx.recv() => {
                let (issuer, u) = line.split_once(' ').unwrap_or_default();
                if show(issuer, u) {
                    tokio::spawn(browse(u.to_string()));
                }
            }
        }
    }
}

/// The `secured` upstream's entry in `/readyz`, once it is `state`.
pub(crate) async fn wait_state(gw: &TestGateway, state: &str) -> Result<Value> {
    wait_upstream(gw, "secured", state).await
}

/// Upstream `name`'s entry in `/readyz`, once it is `state`: woken by the
/// upstream's status changes, read where an operator reads it.
pub(crate) async fn wait_upstream(gw: &TestGateway, name: &str, state: &str) -> Result<Value> {
    let up = gw
        .gateway()
        .upstreams()
        .into_iter()
        .find(|u| &**u.name() == name)
        .with_context(|| format!("no upstream `{name}`"))?;
    let mut status = up.watch_status();
    let entry = async {
        loop {
            status.wait_for(|s| s.state.as_str() == state).await?;
            let (_, body) = crate::cluster_redis::readyz(gw).await?;
            let entry = body["upstreams"]
                .as_array()
                .and_then(|a| a.iter().find(|u| u["name"] == name).cloned())
                .unwrap_or(Value::Null);
            if entry["state"] == state {
                return Ok::<Value, anyhow::Error>(entry);
            }
            // It moved on between the change and the read: wait for the next.
            status.changed().await?;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), entry)
        .await
        .map_err(|_| anyhow::anyhow!("{name} never became {state}: {:?}", up.status()))?
}

/// The audit log at `path`, and its `tools/call` records that `keep` keeps.
pub(crate) fn audited_calls(
    path: &std::path::Path,
    keep: impl Fn(&Value) -> bool,
) -> Result<(String, Vec<Value>)> {
    let log = std::fs::read_to_string(path)?;
    let calls = log
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|r| r["method"] == "tools/call" && keep(r))
        .collect();
    Ok((log, calls))
}

pub(crate) fn temp_store(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mf-upauth-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}
