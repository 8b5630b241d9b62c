//! Each caller's own upstream account (`user_secret`, `user_oauth`) against
//! the authorization server stand-in (`authserver`), whose MCP server answers
//! `whoami` with the subject of the token it got: two callers of one tool
//! reach the upstream as themselves once each connected through the link
//! their client showed — a 2025-11-25 session by URL elicitation (-32042,
//! then `notifications/elicitation/complete`), a 2026-07-28 client by an
//! input request, any other client by a tool error holding the link; the
//! account sealed at rest, never in the audit log; refreshed, forgotten when
//! revoked. The attacker's side: a link opened by someone without the code,
//! guessed codes, a replayed callback `state`, a forged authorization code, a
//! POST from another origin.

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::authserver::{temp_store, Standin, STORE_KEY};
use crate::{bounded, text_of};
use manifold_policy::hash_key;
use manifold_testkit::harness::{toml_string, McpClient, TestGateway};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

/// A gateway in front of the stand-in's MCP server with `auth` as its
/// `[upstreams.secured.auth]`, two API-key callers, and an audit log.
async fn gateway(s: &Standin, store: &std::path::Path, auth: &str) -> Result<TestGateway> {
    gateway_with(s, store, auth, "").await
}

/// [`gateway`] with `extra` sections (a replica's `[cluster]`).
async fn gateway_with(
    s: &Standin,
    store: &std::path::Path,
    auth: &str,
    extra: &str,
) -> Result<TestGateway> {
    std::fs::create_dir_all(store)?;
    TestGateway::start(&format!(
        "[upstreams.secured]\nurl = {}\ntimeout = \"10s\"\n\n[upstreams.secured.auth]\n{auth}\n\n\
         [credentials]\nstore = {}\nkey = {}\n\n\
         [auth]\n[[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\n\n\
         [[auth.api_keys]]\nname = \"bob\"\nhash = \"{}\"\n\n\
         [audit]\npath = {}\n\n[admin]\nlisten = \"127.0.0.1:0\"\n\n{extra}",
        toml_string(&s.url()),
        toml_string(&store.display().to_string()),
        toml_string(STORE_KEY),
        hash_key(ALICE),
        hash_key(BOB),
        toml_string(&store.join("audit.jsonl").display().to_string()),
    ))
    .await
}

async fn session(gw: &TestGateway, key: &str, caps: Value) -> Result<McpClient> {
    let c = gw.client();
    c.set_bearer(Some(key));
    c.initialize("2025-11-25", caps).await?;
    Ok(c)
}

/// What a browser got: status, `Location`, body.
struct Page {
    status: u16,
    location: Option<String>,
    body: String,
}

/// One request as a browser sends it (`form`: a POST body; `origin`: its
/// `Origin` header).
async fn browse(method: &str, url: &str, form: Option<&str>, origin: Option<&str>) -> Result<Page> {
    let u = url::Url::parse(url)?;
    let mut s =
        TcpStream::connect((u.host_str().context("host")?, u.port().context("port")?)).await?;
    let target = match u.query() {
        Some(q) => format!("{}?{q}", u.path()),
        None => u.path().to_string(),
    };
    let body = form.unwrap_or("");
    let mut head = format!(
        "{method} {target} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        u.authority(),
        body.len()
    );
    if form.is_some() {
        head.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
    }
    if let Some(o) = origin {
        head.push_str(&format!("Origin: {o}\r\n"));
    }
    s.write_all(format!("{head}\r\n{body}").as_bytes()).await?;
    let mut text = String::new();
    s.read_to_string(&mut text).await?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("no status")?;
    let location = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.eq_ignore_ascii_case("location")
            .then(|| v.trim().to_string())
    });
    Ok(Page {
        status,
        location,
        body: body.to_string(),
    })
}

/// The form's anti-forgery token.
fn csrf_of(page: &str) -> Result<String> {
    let at = page
        .find("name=\"csrf\" value=\"")
        .context("no csrf field")?;
    let rest = &page[at + "name=\"csrf\" value=\"".len()..];
    Ok(rest[..rest.find('"').context("csrf")?].to_string())
}

/// The code in a question's message (`… enter the code ABCD-EFGH when …`).
fn code_of(message: &str) -> Result<String> {
    let at = message
        .find("the code ")
        .context("no code in the message")?;
    Ok(message[at + 9..at + 18].to_string())
}

/// The link in a question's message.
fn link_of(message: &str) -> Result<String> {
    let at = message.find("http://").context("no link in the message")?;
    Ok(message[at..]
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string())
}

fn form(csrf: &str, code: &str, secret: Option<&str>) -> String {
    let mut s = url::form_urlencoded::Serializer::new(String::new());
    s.append_pair("csrf", csrf).append_pair("code", code);
    if let Some(k) = secret {
        s.append_pair("secret", k);
    }
    s.finish()
}

/// The upstream's `whoami` as `c`.
async fn whoami(c: &McpClient) -> Result<Value> {
    Ok(c.call_tool("secured__whoami", json!({}))
        .await?
        .response()?
        .clone())
}

#[tokio::test]
async fn two_callers_paste_their_own_keys_and_reach_the_upstream_as_themselves() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(3600)).await?;
        s.set(|k| k.open_lists = true);
        {
            let mut a = s.state.lock();
            let far = Instant::now() + Duration::from_secs(3600);
            a.access.insert("pat-alice".into(), ("alice".into(), far));
            a.access.insert("pat-bob".into(), ("bob".into(), far));
        }
        let store = temp_store("user-secret");
        let gw = gateway(&s, &store, "type = \"user_secret\"\ncheck = \"tools/list\"").await?;

        // Listed for everyone, connected or not.
        let alice = session(&gw, ALICE, json!({"elicitation": {"url": {}}})).await?;
        let tools = alice.list_all_tools().await?;
        assert!(
            tools.iter().any(|t| t["name"] == "secured__whoami"),
            "{tools:?}"
        );

        // A 2025-11-25 client that declared URL elicitation: -32042.
        let r = whoami(&alice).await?;
        assert_eq!(r["error"]["code"], -32042, "{r}");
        let e = &r["error"]["data"]["elicitations"][0];
        assert_eq!(e["mode"], "url", "{r}");
        let (url, id) = (
            e["url"].as_str().context("url")?.to_string(),
            e["elicitationId"].clone(),
        );
        assert!(
            url.starts_with(&format!("http://{}/mcp/connect/", gw.addr())),
            "{url}"
        );
        let message = e["message"].as_str().unwrap_or_default();
        assert!(message.contains("`secured`"), "{message}");
        let code = code_of(message)?;
        // Asking again while the link is unused: the same link.
        let again = whoami(&alice).await?;
        assert_eq!(
            again["error"]["data"]["elicitations"][0]["url"],
            url.as_str(),
            "{again}"
        );
        let mut stream = alice.open_get_stream().await?;

        // Someone without the code (a forwarded link) links nothing.
        let page = browse("GET", &url, None, None).await?;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(
            page.body.contains("key:alice"),
            "the page names whose account it links"
        );
        let csrf = csrf_of(&page.body)?;
        let wrong = browse(
            "POST",
            &url,
            Some(&form(&csrf, "AAAA-AAAA", Some("pat-bob"))),
            None,
        )
        .await?;
        assert_eq!(wrong.status, 400, "{}", wrong.body);
        assert!(wrong.body.contains("tries left"), "{}", wrong.body);
        // Another origin's POST, even with the code, is refused.
        let cross = browse(
            "POST",
            &url,
            Some(&form(&csrf, &code, Some("pat-bob"))),
            Some("https://evil.example"),
        )
        .await?;
        assert_eq!(cross.status, 403, "{}", cross.body);
        // A key the upstream refuses is not stored (`check`).
        let refused = browse(
            "POST",
            &url,
            Some(&form(&csrf, &code, Some("pat-nobody"))),
            None,
        )
        .await?;
        assert_eq!(refused.status, 400, "{}", refused.body);
        assert!(refused.body.contains("not accepted"), "{}", refused.body);
        let done = browse(
            "POST",
            &url,
            Some(&form(&csrf, &code, Some("pat-alice"))),
            None,
        )
        .await?;
        assert_eq!(done.status, 200, "{}", done.body);
        assert!(!done.body.contains("pat-alice"), "nothing typed is echoed");
        // The session hears that the elicitation is complete.
        let note = completed(&mut stream, Duration::from_secs(5)).await?;
        assert_eq!(note["params"]["elicitationId"], id, "{note}");
        drop(stream);
        // Used: the link is gone.
        let replay = browse(
            "POST",
            &url,
            Some(&form(&csrf, &code, Some("pat-bob"))),
            None,
        )
        .await?;
        assert_eq!(replay.status, 404, "{}", replay.body);
        let r = whoami(&alice).await?;
        assert_eq!(text_of(&r["result"])?, "alice", "{r}");

        // A client without URL elicitation: a tool error a human can act on.
        let bob = session(&gw, BOB, json!({})).await?;
        let r = whoami(&bob).await?;
        assert_eq!(r["result"]["isError"], true, "{r}");
        let text = text_of(&r["result"])?.to_string();
        let (url, code) = (link_of(&text)?, code_of(&text)?);
        let page = browse("GET", &url, None, None).await?;
        let csrf = csrf_of(&page.body)?;
        let done = browse(
            "POST",
            &url,
            Some(&form(&csrf, &code, Some("pat-bob"))),
            None,
        )
        .await?;
        assert_eq!(done.status, 200, "{}", done.body);
        let r = whoami(&bob).await?;
        assert_eq!(text_of(&r["result"])?, "bob", "{r}");
        let r = whoami(&alice).await?;
        assert_eq!(text_of(&r["result"])?, "alice", "{r}");
        // The upstream saw each key only on that caller's calls.
        let seen = s.seen();
        assert!(seen
            .iter()
            .filter(|x| x.body.contains("tools/call"))
            .all(|x| {
                matches!(
                    x.authorization.as_deref(),
                    Some("Bearer pat-alice" | "Bearer pat-bob")
                )
            }));

        // The operator's console lists both (no key) and revokes bob's.
        let admin = gw.gateway().admin_addr().context("admin listener")?;
        let page = crate::admin::admin_call(admin, "GET", "/ui/connections", &[], "").await?;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(
            page.body.contains("key:alice") && page.body.contains("key:bob"),
            "{}",
            page.body
        );
        assert!(!page.body.contains("pat-"), "a key on the console");
        revoke_on_console(admin, &page, "key:bob").await?;
        let r = whoami(&bob).await?;
        assert!(
            text_of(&r["result"])?.contains("/connect/"),
            "bob is asked again: {r}"
        );

        // At rest: sealed; in the audit log: the events, never a key.
        let accounts = manifold_credentials::AccountStore::new(
            gw.gateway()
                .config()
                .credentials
                .as_ref()
                .context("store")?,
        );
        let (listed, problems) = accounts.list(Some("secured"));
        assert!(problems.is_empty(), "{problems:?}");
        let who: Vec<&str> = listed.iter().map(|a| a.principal.as_str()).collect();
        assert_eq!(who, ["key:alice"]);
        for f in walk(&store.join("accounts"))? {
            let text = std::fs::read_to_string(&f)?;
            assert!(
                !text.contains("pat-"),
                "{} holds a key in clear",
                f.display()
            );
        }
        gw.shutdown().await?;
        let log = std::fs::read_to_string(store.join("audit.jsonl"))?;
        assert!(
            !log.contains("pat-alice") && !log.contains("pat-bob"),
            "a key in the audit log"
        );
        let events: Vec<String> = log
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|r| r["method"] == "manifold/account")
            .map(|r| {
                format!(
                    "{} {}",
                    r["principal"].as_str().unwrap_or(""),
                    r["name"].as_str().unwrap_or("")
                )
            })
            .collect();
        assert!(
            events.contains(&"key:alice connected".to_string()),
            "{events:?}"
        );
        assert!(
            events.contains(&"key:alice failed".to_string()),
            "{events:?}"
        );
        assert!(
            events.contains(&"key:bob connected".to_string()),
            "{events:?}"
        );
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

/// Revokes `principal`'s account at `secured` through the console whose
/// Connections `page` was just read (its form's token).
async fn revoke_on_console(
    admin: std::net::SocketAddr,
    page: &crate::admin::AdminReply,
    principal: &str,
) -> Result<()> {
    let csrf = page.csrf().context("csrf")?;
    let body = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", &csrf)
        .append_pair("upstream", "secured")
        .append_pair("principal", principal)
        .finish();
    let r = crate::admin::admin_call(
        admin,
        "POST",
        "/ui/connections/revoke",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        &body,
    )
    .await?;
    assert_eq!(r.status, 303, "{}", r.body);
    Ok(())
}

/// The next `notifications/elicitation/complete` on `stream`, within `within`.
async fn completed(
    stream: &mut manifold_testkit::harness::MessageStream,
    within: Duration,
) -> Result<Value> {
    tokio::time::timeout(within, async {
        loop {
            match stream.next().await? {
                Some(m) if m["method"] == "notifications/elicitation/complete" => return Ok(m),
                Some(_) => continue,
                None => return Err(anyhow!("the stream ended")),
            }
        }
    })
    .await?
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Result<Vec<std::path::PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            out.extend(walk(&p)?);
        } else {
            out.push(p);
        }
    }
    Ok(out)
}

/// Follows a connect page through the stand-in's authorization endpoint (as
/// `who` signs in there) to the callback; the callback's URL and page.
async fn sign_in(url: &str, code: &str, who: &str) -> Result<(String, Page)> {
    let page = browse("GET", url, None, None).await?;
    let csrf = csrf_of(&page.body)?;
    let to = browse("POST", url, Some(&form(&csrf, code, None)), None).await?;
    assert_eq!(to.status, 303, "{}", to.body);
    let authorize = to.location.context("no redirect to the issuer")?;
    assert!(
        authorize.contains("code_challenge_method=S256"),
        "{authorize}"
    );
    let back = browse("GET", &format!("{authorize}&as={who}"), None, None).await?;
    let callback = back.location.context("no redirect back")?;
    let done = browse("GET", &callback, None, None).await?;
    Ok((callback, done))
}

#[tokio::test]
async fn each_caller_authorizes_their_own_account_and_it_is_refreshed_and_revoked() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(4)).await?;
        s.set(|k| k.open_lists = true);
        let store = temp_store("user-oauth");
        let gw = gateway(
            &s,
            &store,
            &format!(
                "type = \"user_oauth\"\nissuer = {}\nclient_id = \"manifold-test\"",
                toml_string(&s.base())
            ),
        )
        .await?;
        let client = gw.client();
        client.set_bearer(Some(ALICE));
        let caps = json!({"elicitation": {"url": {}}});
        let call = |params: Value| json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
        let params = json!({"name": "secured__whoami", "arguments": {}, "_meta": manifold_testkit::harness::stateless_meta(caps.clone())});

        // 2026-07-28: an input request with the link.
        let (status, r) = client.send_stateless(&call(params.clone()), &[]).await?;
        assert_eq!(status, 200, "{r}");
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        let q = &r["result"]["inputRequests"]["connect"];
        assert_eq!(q["params"]["mode"], "url", "{r}");
        let message = q["params"]["message"].as_str().unwrap_or_default();
        let (url, code) = (q["params"]["url"].as_str().context("url")?.to_string(), code_of(message)?);
        let state = r["result"]["requestState"].clone();

        let (callback, done) = sign_in(&url, &code, "alice").await?;
        assert_eq!(done.status, 200, "{}", done.body);
        // A replayed callback finishes nothing.
        let replay = browse("GET", &callback, None, None).await?;
        assert_eq!(replay.status, 400, "{}", replay.body);

        // The retry answers the question and goes on as alice.
        let mut retry = params.clone();
        retry["inputResponses"] = json!({"connect": {"action": "accept"}});
        retry["requestState"] = state.clone();
        let (_, r) = client.send_stateless(&call(retry.clone()), &[]).await?;
        assert_eq!(text_of(&r["result"])?, "alice", "{r}");
        // Its state is single use.
        let (_, r) = client.send_stateless(&call(retry), &[]).await?;
        assert!(r["error"]["message"].as_str().unwrap_or_default().contains("requestState"), "{r}");

        // Bob, in a session without URL elicitation: his own link; a forged
        // authorization code at the callback links nothing.
        let bob = session(&gw, BOB, json!({})).await?;
        let r = whoami(&bob).await?;
        let text = text_of(&r["result"])?.to_string();
        let (url, code) = (link_of(&text)?, code_of(&text)?);
        let page = browse("GET", &url, None, None).await?;
        let csrf = csrf_of(&page.body)?;
        let to = browse("POST", &url, Some(&form(&csrf, &code, None)), None).await?;
        let authorize = url::Url::parse(&to.location.context("redirect")?)?;
        let state = authorize
            .query_pairs()
            .find(|(k, _)| k == "state")
            .map(|(_, v)| v.to_string())
            .context("state")?;
        let forged = format!("http://{}/oauth/callback?code=code-mallory-0&state={state}&iss={}", gw.addr(), s.base());
        let page = browse("GET", &forged, None, None).await?;
        assert_eq!(page.status, 400, "{}", page.body);
        let r = whoami(&bob).await?;
        assert_eq!(r["result"]["isError"], true, "bob is still not connected: {r}");
        let text = text_of(&r["result"])?.to_string();
        let (url, code) = (link_of(&text)?, code_of(&text)?);
        let (_, done) = sign_in(&url, &code, "bob").await?;
        assert_eq!(done.status, 200, "{}", done.body);
        let r = whoami(&bob).await?;
        assert_eq!(text_of(&r["result"])?, "bob", "{r}");

        // Past half its life, alice's token is refreshed (rotated) before use.
        let before = s.refreshes.load(Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(2500)).await;
        let (_, r) = client.send_stateless(&call(params.clone()), &[]).await?;
        assert_eq!(text_of(&r["result"])?, "alice", "{r}");
        assert!(s.refreshes.load(Ordering::Relaxed) > before, "no refresh");

        // Revoked at the authorization server: the upstream refuses the
        // token, the account is forgotten, and the next call asks again.
        s.revoke_all();
        let r = whoami(&bob).await?;
        assert_eq!(r["result"]["isError"], true, "{r}");
        let r = whoami(&bob).await?;
        let text = text_of(&r["result"])?;
        assert!(text.contains("/connect/"), "asked to connect again: {text}");
        gw.shutdown().await?;
        let log = std::fs::read_to_string(store.join("audit.jsonl"))?;
        for secret in s.state.lock().access.keys() {
            assert!(!log.contains(secret.as_str()), "a token in the audit log");
        }
        assert!(!log.contains("rt-"), "a refresh token in the audit log");
        for event in ["connected", "refreshed", "lapsed", "failed"] {
            assert!(log.contains(&format!("\"name\":\"{event}\"")), "no {event} record");
        }
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn anonymous_callers_get_no_shared_account() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(3600)).await?;
        s.set(|k| k.open_lists = true);
        let store = temp_store("user-anon");
        std::fs::create_dir_all(&store)?;
        let gw = TestGateway::start(&format!(
            "[upstreams.secured]\nurl = {}\n\n[upstreams.secured.auth]\ntype = \"user_secret\"\n\n\
             [credentials]\nstore = {}\nkey = {}\n",
            toml_string(&s.url()),
            toml_string(&store.display().to_string()),
            toml_string(STORE_KEY),
        ))
        .await?;
        let c = gw
            .session("2025-11-25", json!({"elicitation": {"url": {}}}))
            .await?;
        let r = c.call_tool("secured__whoami", json!({})).await?;
        let text = format!("{}", r.response()?);
        assert!(text.contains("not authenticated"), "{text}");
        assert!(
            !text.contains("/connect/"),
            "no link for an anonymous caller: {text}"
        );
        gw.shutdown().await?;
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

/// Three replicas with `[cluster]` (Redis) and a store directory each: the
/// link one replica showed is opened on a second and finished on a third (a
/// load balancer in front), the asking session on the first hears the
/// completion over the bus, the account reaches every replica through Redis
/// (sealed), so the caller's next call through any of them goes out as them;
/// a revocation on one is seen by the others.
#[tokio::test]
async fn a_link_shown_by_one_replica_is_finished_on_another_and_serves_all() -> Result<()> {
    bounded(async {
        let redis = crate::cluster_redis::Redis::start().await?;
        let s = Standin::start(Duration::from_secs(3600)).await?;
        s.set(|k| k.open_lists = true);
        s.state.lock().access.insert(
            "pat-alice".into(),
            ("alice".into(), Instant::now() + Duration::from_secs(3600)),
        );
        let store = temp_store("user-replicas");
        let cluster = format!(
            "[cluster]\nsession_key = {}\nredis = {}\n",
            toml_string(crate::cluster_redis::KEY),
            toml_string(&redis.url())
        );
        let mut replicas = Vec::new();
        for i in 0..3 {
            let own = store.join(format!("replica-{i}"));
            let gw = gateway_with(&s, &own, "type = \"user_secret\"", &cluster).await?;
            crate::cluster_redis::until_connected(&gw, true, Duration::from_secs(10)).await?;
            replicas.push(gw);
        }
        let (a, b, c) = (&replicas[0], &replicas[1], &replicas[2]);
        let alice = session(a, ALICE, json!({"elicitation": {"url": {}}})).await?;
        let mut stream = alice.open_get_stream().await?;
        let r = whoami(&alice).await?;
        let e = &r["error"]["data"]["elicitations"][0];
        let url = e["url"].as_str().context("url")?.to_string();
        let code = code_of(e["message"].as_str().unwrap_or_default())?;
        let on = |gw: &TestGateway| url.replace(&a.addr().to_string(), &gw.addr().to_string());
        let page = browse("GET", &on(b), None, None).await?;
        assert_eq!(page.status, 200, "{}", page.body);
        let csrf = csrf_of(&page.body)?;
        let done = browse(
            "POST",
            &on(c),
            Some(&form(&csrf, &code, Some("pat-alice"))),
            None,
        )
        .await?;
        assert_eq!(done.status, 200, "{}", done.body);
        let note = completed(&mut stream, Duration::from_secs(10)).await?;
        assert_eq!(
            note["params"]["elicitationId"], e["elicitationId"],
            "{note}"
        );
        drop(stream);
        for gw in [a, b, c] {
            let c = session(gw, ALICE, json!({})).await?;
            let r = whoami(&c).await?;
            assert_eq!(text_of(&r["result"])?, "alice", "{r}");
        }
        // Nothing in clear in Redis either.
        let mut redis_cli = tokio::process::Command::new("redis-cli");
        redis_cli.args(["-u", &redis.url(), "--no-raw", "KEYS", "*"]);
        if let Ok(out) = redis_cli.output().await {
            let keys = String::from_utf8_lossy(&out.stdout);
            assert!(
                !keys.contains("alice"),
                "a principal in clear in a Redis key: {keys}"
            );
        }
        // Revoked through A's console: B asks again.
        let admin = a.gateway().admin_addr().context("admin")?;
        let page = crate::admin::admin_call(admin, "GET", "/ui/connections", &[], "").await?;
        revoke_on_console(admin, &page, "key:alice").await?;
        let c2 = session(b, ALICE, json!({})).await?;
        let r = whoami(&c2).await?;
        assert!(
            text_of(&r["result"])?.contains("/connect/"),
            "B asks again: {r}"
        );
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

/// A token that expires with no refresh token: the caller is asked to connect
/// again, and told why.
#[tokio::test]
async fn an_expired_token_without_a_refresh_token_asks_to_connect_again() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(1)).await?;
        s.set(|k| {
            k.open_lists = true;
            k.no_refresh = true;
        });
        let store = temp_store("user-expiry");
        let gw = gateway(
            &s,
            &store,
            &format!(
                "type = \"user_oauth\"\nissuer = {}\nclient_id = \"manifold-test\"",
                toml_string(&s.base())
            ),
        )
        .await?;
        let bob = session(&gw, BOB, json!({})).await?;
        let r = whoami(&bob).await?;
        let text = text_of(&r["result"])?.to_string();
        let (url, code) = (link_of(&text)?, code_of(&text)?);
        let (_, done) = sign_in(&url, &code, "bob").await?;
        assert_eq!(done.status, 200, "{}", done.body);
        let r = whoami(&bob).await?;
        assert_eq!(text_of(&r["result"])?, "bob", "{r}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let r = whoami(&bob).await?;
        let text = text_of(&r["result"])?;
        assert!(
            text.contains("/connect/") && text.contains("no refresh token"),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

/// A principal's name is shown on the connect page with its invisible
/// characters escaped: a name cannot pass for another's there.
#[tokio::test]
async fn the_connect_page_escapes_invisible_characters_in_the_principal() -> Result<()> {
    bounded(async {
        let s = Standin::start(Duration::from_secs(3600)).await?;
        s.set(|k| k.open_lists = true);
        let store = temp_store("user-hidden");
        std::fs::create_dir_all(&store)?;
        let key = "hidden-key-0123456789";
        let gw = TestGateway::start(&format!(
            "[upstreams.secured]\nurl = {}\n\n[upstreams.secured.auth]\ntype = \"user_secret\"\n\n\
             [credentials]\nstore = {}\nkey = {}\n\n\
             [auth]\n[[auth.api_keys]]\nname = \"ali\u{200B}ce\"\nhash = \"{}\"\n",
            toml_string(&s.url()),
            toml_string(&store.display().to_string()),
            toml_string(STORE_KEY),
            hash_key(key),
        ))
        .await?;
        let c = session(&gw, key, json!({})).await?;
        let r = whoami(&c).await?;
        let link = link_of(text_of(&r["result"])?)?;
        let page = browse("GET", &link, None, None).await?;
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(
            !page.body.contains('\u{200B}'),
            "a raw invisible character on the page"
        );
        assert!(page.body.contains("ali\\u{200b}ce"), "{}", page.body);
        gw.shutdown().await?;
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}
