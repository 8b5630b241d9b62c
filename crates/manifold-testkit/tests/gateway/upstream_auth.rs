//! Upstream credentials against an authorization server stand-in (the flows
//! the conformance suite does not drive): `manifold login`'s flow, then
//! refresh under load with no failed call, the token store across a restart,
//! a revoked refresh token leading to `needs_login` with the command that
//! fixes it, the client-credentials grant, and a store that cannot be opened
//! costing only its own upstream.
//!
//! The stand-in is one HTTP server: protected resource and authorization
//! server metadata, `/authorize` (approves at once, with `iss`), `/token`
//! (authorization code, refresh, client credentials) and a small MCP server
//! at `/mcp` whose `whoami` tool answers with the subject of the token it got.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::{bounded, text_of};
use manifold_testkit::harness::{toml_string, TestGateway};

const STORE_KEY: &str = "upstream-auth-test-store-key-0123456789";

#[derive(Default)]
struct Auth {
    /// access token → (subject, expiry)
    access: HashMap<String, (String, Instant)>,
    /// refresh token → subject
    refresh: HashMap<String, String>,
    revoked: HashSet<String>,
}

/// The stand-in: an authorization server and the MCP server it protects.
struct Standin {
    addr: SocketAddr,
    state: Arc<Mutex<Auth>>,
    refreshes: Arc<AtomicUsize>,
    /// Protected resource metadata documents served.
    discoveries: Arc<AtomicUsize>,
    /// Lifetime of the access tokens it issues.
    life: Duration,
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
    async fn start(life: Duration) -> Result<Standin> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(Auth::default()));
        let refreshes = Arc::new(AtomicUsize::new(0));
        let discoveries = Arc::new(AtomicUsize::new(0));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let (st, rf, dc) = (state.clone(), refreshes.clone(), discoveries.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = &mut stopped => return,
                    a = listener.accept() => a,
                };
                let Ok((io, _)) = accepted else { continue };
                let (st, rf, dc) = (st.clone(), rf.clone(), dc.clone());
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let (st, rf, dc) = (st.clone(), rf.clone(), dc.clone());
                        async move {
                            if req
                                .uri()
                                .path()
                                .starts_with("/.well-known/oauth-protected-resource")
                            {
                                dc.fetch_add(1, Ordering::Relaxed);
                            }
                            Ok::<_, Infallible>(handle(req, addr, &st, &rf, life).await)
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
            state,
            refreshes,
            discoveries,
            life,
            _stop: stop,
        })
    }

    fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Revokes every refresh token and expires every access token.
    fn revoke_all(&self) {
        let mut a = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let rts: Vec<String> = a.refresh.keys().cloned().collect();
        a.revoked.extend(rts);
        a.refresh.clear();
        a.access.clear();
    }
}

async fn handle(
    req: Request<Incoming>,
    addr: SocketAddr,
    st: &Mutex<Auth>,
    refreshes: &AtomicUsize,
    life: Duration,
) -> Response<Full<Bytes>> {
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
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let lock = || st.lock().unwrap_or_else(|p| p.into_inner());
    match path.as_str() {
        "/.well-known/oauth-protected-resource/mcp" => json_reply(
            StatusCode::OK,
            json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        "/.well-known/oauth-authorization-server" => json_reply(
            StatusCode::OK,
            json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
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
            let mut to = url::Url::parse(q.get("redirect_uri").map_or("", |s| s.as_str()))
                .unwrap_or_else(|_| url::Url::parse("http://127.0.0.1:1/").expect("url"));
            to.query_pairs_mut()
                .append_pair("code", "code-alice")
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
                Some("authorization_code") if form.contains_key("code_verifier") => {
                    json_reply(StatusCode::OK, issue(&mut a, "alice", life, true))
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
            let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
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

/// GETs `url` and follows one redirect to the loopback callback, as a browser.
async fn browse(url: String) {
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

fn config(s: &Standin, store: &std::path::Path, auth: &str) -> String {
    format!(
        "[upstreams.secured]\nurl = {}\ntimeout = \"10s\"\n\n[upstreams.secured.auth]\n{auth}\n\n\
         [credentials]\nstore = {}\nkey = {}\n\n[admin]\nlisten = \"127.0.0.1:0\"\n",
        toml_string(&s.url()),
        toml_string(&store.display().to_string()),
        toml_string(STORE_KEY),
    )
}

/// `manifold login secured`, in process, with [`browse`] as the browser.
async fn login(s: &Standin, store: &std::path::Path) -> Result<manifold_credentials::Record> {
    let cfg = TestGateway::config(&config(
        s,
        store,
        "type = \"oauth\"\nclient_id = \"manifold-test\"",
    ))?;
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
    Ok(
        manifold_credentials::login(manifold_credentials::LoginOptions {
            upstream: "secured".into(),
            url: url.clone(),
            client: client.clone(),
            store,
            show: Box::new(|u: &str| {
                tokio::spawn(browse(u.to_string()));
            }),
        })
        .await?,
    )
}

/// The `secured` upstream's entry in `/readyz`, once it is `state`: woken by
/// the upstream's status changes, read where an operator reads it.
async fn wait_state(gw: &TestGateway, state: &str) -> Result<Value> {
    let up = gw
        .gateway()
        .upstreams()
        .into_iter()
        .find(|u| &**u.name() == "secured")
        .context("no upstream `secured`")?;
    let mut status = up.watch_status();
    let entry = async {
        loop {
            status.wait_for(|s| s.state.as_str() == state).await?;
            let (_, body) = crate::cluster_redis::readyz(gw).await?;
            let entry = body["upstreams"]
                .as_array()
                .and_then(|a| a.iter().find(|u| u["name"] == "secured").cloned())
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
        .map_err(|_| anyhow::anyhow!("secured never became {state}: {:?}", up.status()))?
}

/// The audit log at `path`, and its `tools/call` records that `keep` keeps.
fn audited_calls(
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

fn temp_store(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("mf-upauth-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[tokio::test]
async fn login_then_refresh_under_load_a_restart_and_a_revocation() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(2)).await?;
        let store = temp_store("oauth");
        let record = login(&s, &store).await?;
        assert!(record.refresh_token.is_some(), "no refresh token stored");
        let cfg = config(
            &s,
            &store,
            "type = \"oauth\"\nclient_id = \"manifold-test\"",
        );
        let gw = TestGateway::start(&cfg).await?;
        wait_state(&gw, "ready").await?;
        // 8 callers for 3 token lifetimes: every call answered, tokens refreshed.
        let until = Instant::now() + s.life * 3;
        let mut callers = Vec::new();
        for _ in 0..8 {
            let c = gw.session("2025-11-25", json!({})).await?;
            callers.push(tokio::spawn(async move {
                let mut n = 0;
                while Instant::now() < until {
                    let r = c.call_tool("secured__whoami", json!({})).await?;
                    anyhow::ensure!(text_of(r.result()?)? == "alice", "call {n}: {r}");
                    n += 1;
                }
                Ok::<usize, anyhow::Error>(n)
            }));
        }
        let mut calls = 0;
        for c in callers {
            calls += c.await??;
        }
        let refreshed = s.refreshes.load(Ordering::Relaxed);
        assert!(refreshed >= 2, "{calls} calls, {refreshed} refreshes");
        eprintln!(
            "{calls} calls over {:?}, {refreshed} refreshes, none failed",
            s.life * 3
        );
        gw.shutdown().await?;

        // The store survives a restart: no new login needed.
        let gw = TestGateway::start(&cfg).await?;
        wait_state(&gw, "ready").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("secured__whoami", json!({})).await?;
        assert_eq!(text_of(r.result()?)?, "alice", "{r}");

        // Revoked: the call says what to run, and the upstream is needs_login.
        s.revoke_all();
        let r = c.call_tool("secured__whoami", json!({})).await?;
        let text = format!("{r}");
        assert!(text.contains("manifold login secured"), "{text}");
        let up = wait_state(&gw, "needs_login").await?;
        assert!(
            up["last_error"]
                .as_str()
                .unwrap_or_default()
                .contains("manifold login secured"),
            "{up}"
        );
        // A new login brings it back without a restart.
        login(&s, &store).await?;
        wait_state(&gw, "ready").await?;
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn client_credentials_give_the_gateway_its_own_identity() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(2)).await?;
        let store = temp_store("cc");
        std::fs::create_dir_all(&store)?;
        let audit = store.join("audit.jsonl");
        let gw = TestGateway::start(&format!(
            "{}\n[audit]\npath = {}\n",
            config(
                &s,
                &store,
                "type = \"client_credentials\"\nclient_id = \"gateway\"\nclient_secret = \"gateway-secret\"",
            ),
            toml_string(&audit.display().to_string())
        ))
        .await?;
        wait_state(&gw, "ready").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        // Across two renewals: in memory, never failing, discovered once.
        // Calls until the gateway has renewed its token twice (three issued).
        let issued = || {
            s.state
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .access
                .values()
                .filter(|(sub, _)| sub == "service:manifold")
                .count()
        };
        while issued() < 3 {
            let r = c.call_tool("secured__whoami", json!({})).await?;
            assert_eq!(text_of(r.result()?)?, "service:manifold", "{r}");
        }
        assert_eq!(s.discoveries.load(Ordering::Relaxed), 1, "renewals discovered again");
        gw.shutdown().await?;
        // Each call's record names the credential mode, never a token.
        let (log, calls) = audited_calls(&audit, |_| true)?;
        assert!(!calls.is_empty(), "{log}");
        assert!(calls.iter().all(|r| r["upstream_auth"] == "client_credentials"), "{log}");
        assert!(!log.contains("at-"), "a token reached the audit log: {log}");
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_store_that_cannot_be_opened_costs_only_its_upstream() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(60)).await?;
        let store = temp_store("corrupt");
        std::fs::create_dir_all(&store)?;
        std::fs::write(
            store.join("secured.tokens"),
            "manifold-tokens-v1\nbm90IGEgcmVjb3Jk\n",
        )?;
        let cfg = format!(
            "{}\n[upstreams.local]\ncommand = {}\n",
            config(&s, &store, "type = \"oauth\""),
            toml_string(crate::bin())
        );
        let gw = TestGateway::start(&cfg).await?;
        let up = wait_state(&gw, "needs_login").await?;
        let why = up["last_error"].as_str().unwrap_or_default();
        assert!(
            why.contains("cannot be opened") && why.contains("manifold login secured"),
            "{up}"
        );
        let c = gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("local__echo", json!({"text": "fine"})).await?;
        assert_eq!(text_of(r.result()?)?, "fine", "{r}");
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn token_exchange_gives_each_caller_their_own_upstream_identity() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(60)).await?;
        let store = temp_store("exchange");
        std::fs::create_dir_all(&store)?;
        let audit = store.join("audit.jsonl");
        let base = format!("http://{}", s.addr);
        let cfg = format!(
            "{}\n[audit]\npath = {}\n\n[auth]\nallow_anonymous = true\n\n\
             [[auth.introspection]]\nurl = {}\nclient_id = \"manifold\"\nclient_secret = \"s\"\n\
             require_audience = false\n",
            config(
                &s,
                &store,
                "type = \"token_exchange\"\nclient_id = \"gateway\"\nclient_secret = \"gateway-secret\"",
            )
            .replace("timeout = \"10s\"", "timeout = \"2s\""),
            toml_string(&audit.display().to_string()),
            toml_string(&format!("{base}/introspect")),
        );
        let gw = TestGateway::start(&cfg).await?;
        // The gateway's own requests (the lists) use its client credentials.
        wait_state(&gw, "ready").await?;
        for who in ["alice", "bob"] {
            let c = gw.client();
            c.set_bearer(Some(&format!("user-{who}")));
            c.initialize("2025-11-25", json!({})).await?;
            for _ in 0..3 {
                let r = c.call_tool("secured__whoami", json!({})).await?;
                assert_eq!(text_of(r.result()?)?, who, "{r}");
            }
        }
        // Exchanged once per caller, then cached.
        let exchanged = s
            .state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .access
            .values()
            .filter(|(sub, _)| sub == "alice" || sub == "bob")
            .count();
        assert_eq!(exchanged, 2, "one exchange per caller");
        // The upstream refuses one caller's exchanged token: that call fails, saying
        // so, and the connection every caller shares stays up.
        let restarts = wait_state(&gw, "ready").await?["restarts"].clone();
        let m = gw.client();
        m.set_bearer(Some("user-mallory"));
        m.initialize("2025-11-25", json!({})).await?;
        let r = m.call_tool("secured__whoami", json!({})).await?;
        let text = format!("{r}");
        assert!(text.contains("refused the token exchanged for this caller"), "{text}");
        let up = wait_state(&gw, "ready").await?;
        assert_eq!(up["restarts"], restarts, "the shared connection was reset: {up}");
        let a = gw.client();
        a.set_bearer(Some("user-alice"));
        a.initialize("2025-11-25", json!({})).await?;
        let r = a.call_tool("secured__whoami", json!({})).await?;
        assert_eq!(text_of(r.result()?)?, "alice", "{r}");
        // An exchange that takes longer than the upstream's timeout is refused then.
        let slow = gw.client();
        slow.set_bearer(Some("user-slow"));
        slow.initialize("2025-11-25", json!({})).await?;
        let started = Instant::now();
        let r = slow.call_tool("secured__whoami", json!({})).await?;
        assert!(format!("{r}").contains("took longer than its timeout"), "{r}");
        assert!(started.elapsed() < Duration::from_secs(4), "{:?}", started.elapsed());
        // A caller without a token to exchange is refused, and nothing is sent.
        let anon = gw.session("2025-11-25", json!({})).await?;
        let r = anon.call_tool("secured__whoami", json!({})).await?;
        let e = r.error()?;
        assert_eq!(e["code"], -32600, "{r}");
        assert!(e["message"].as_str().unwrap_or_default().contains("token_exchange"), "{r}");
        gw.shutdown().await?;
        let (log, calls) = audited_calls(&audit, |r| r["outcome"] == "ok")?;
        assert_eq!(calls.len(), 7, "{log}");
        assert!(calls.iter().all(|r| r["upstream_auth"] == "token_exchange"), "{log}");
        assert!(calls.iter().any(|r| r["principal"] == "introspection:127.0.0.1:alice"), "{log}");
        assert!(calls.iter().any(|r| r["principal"] == "introspection:127.0.0.1:bob"), "{log}");
        assert!(!log.contains("user-alice") && !log.contains("at-"), "a token reached the audit log");
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}
