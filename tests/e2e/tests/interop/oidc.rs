//! `user_oauth` against a real OpenID provider: node-oidc-provider (pinned,
//! installed by scripts/peers; `tests/interop/idp/oidc.mjs`) as the upstream's
//! authorization server — authorization code with PKCE, RFC 8707 resource
//! indicators (JWT access tokens for the upstream), RFC 9207 `iss`, refresh
//! tokens — and an MCP server that accepts only its tokens and answers
//! `whoami` with their `sub`. Two callers of one gateway each follow the link
//! their call returned, sign in at the provider as themselves (its own login
//! pages, its cookies), and the upstream then sees each of them as themselves.

use anyhow::{bail, Context, Result};
use manifold_e2e::{repo_root, serve, Peers, TempDir};
use manifold_testkit::harness::McpClient;
use manifold_testkit::process::Proc;
use serde_json::json;
use std::collections::BTreeMap;
use std::process::Command;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const STORE_KEY: &str = "interop-oidc-store-key-0123456789abcdef0123";

/// A browser: cookies per host, no redirect followed on its own.
#[derive(Default)]
struct Browser {
    cookies: BTreeMap<String, BTreeMap<String, String>>,
}

struct Page {
    status: u16,
    location: Option<String>,
    body: String,
}

impl Browser {
    async fn go(&mut self, method: &str, url: &str, form: Option<&str>) -> Result<Page> {
        let u = url::Url::parse(url)?;
        let host = u.authority().to_string();
        let mut s = tokio::net::TcpStream::connect(&host).await?;
        let target = match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        };
        let body = form.unwrap_or("");
        let mut head = format!(
            "{method} {target} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        if form.is_some() {
            head.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
        }
        if let Some(jar) = self.cookies.get(&host).filter(|j| !j.is_empty()) {
            let c: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
            head.push_str(&format!("Cookie: {}\r\n", c.join("; ")));
        }
        s.write_all(format!("{head}\r\n{body}").as_bytes()).await?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await?;
        let text = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .context("status")?;
        let mut location = None;
        for l in head.lines() {
            let Some((k, v)) = l.split_once(':') else {
                continue;
            };
            let v = v.trim();
            if k.eq_ignore_ascii_case("location") {
                location = Some(u.join(v)?.to_string());
            } else if k.eq_ignore_ascii_case("set-cookie") {
                if let Some((name, value)) = v.split(';').next().and_then(|c| c.split_once('=')) {
                    self.cookies
                        .entry(host.clone())
                        .or_default()
                        .insert(name.trim().into(), value.trim().into());
                }
            }
        }
        // Chunked bodies (the provider's pages): the chunks' data is all a test reads.
        Ok(Page {
            status,
            location,
            body: body.to_string(),
        })
    }
}

fn field(page: &str, name: &str) -> Option<String> {
    let at = page.find(&format!("name=\"{name}\" value=\""))? + name.len() + 15;
    Some(page[at..].split('"').next()?.to_string())
}

fn code_and_link(text: &str) -> Result<(String, String)> {
    let code_at = text.find("the code ").context("no code")? + 9;
    let link_at = text.find("http://").context("no link")?;
    Ok((
        text[code_at..code_at + 9].to_string(),
        text[link_at..]
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string(),
    ))
}

/// Follows a browser from `first` (already fetched) through redirects and the
/// provider's login and consent pages (signing in as `who`), until a page
/// that is not the provider's, or a redirect to `stop` (not fetched: its URL
/// is returned as the page's `location`).
async fn follow(
    b: &mut Browser,
    mut next: Page,
    mut at: String,
    who: &str,
    stop: &str,
) -> Result<Page> {
    for _ in 0..16 {
        if let Some(to) = next.location.clone() {
            if to.starts_with(stop) {
                return Ok(next);
            }
            next = b.go("GET", &to, None).await?;
            at = to;
            continue;
        }
        let interaction = at.contains("/interaction/");
        let action = next
            .body
            .split("action=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .map(str::to_string);
        let (true, Some(action), 200) = (interaction, action, next.status) else {
            return Ok(next);
        };
        let to = url::Url::parse(&at)?
            .join(&action.replace("&amp;", "&"))?
            .to_string();
        let form = if next.body.contains("name=\"login\"") {
            format!("prompt=login&login={who}&password=secret")
        } else {
            "prompt=consent".to_string()
        };
        next = b.go("POST", &to, Some(&form)).await?;
        at = to;
    }
    bail!("no end to the redirects")
}

/// From the connect link to "Connected": with `code`, typed on the page;
/// without, the page signs the browser in first. `who` signs in at the
/// provider.
async fn connect(b: &mut Browser, link: &str, code: Option<&str>, who: &str) -> Result<Page> {
    let first = b.go("GET", link, None).await?;
    let page = follow(b, first, link.to_string(), who, "\u{0}").await?;
    let Some(csrf) = field(&page.body, "csrf") else {
        return Ok(page);
    };
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    form.append_pair("csrf", &csrf);
    if let Some(c) = code {
        form.append_pair("code", c);
    }
    let next = b.go("POST", link, Some(&form.finish())).await?;
    follow(b, next, link.to_string(), who, "\u{0}").await
}

/// A caller's access token for the gateway (`resource`), from the provider:
/// the `cli` client's authorization code flow, as `who`.
async fn access_token(issuer: &str, resource: &str, who: &str) -> Result<String> {
    let verifier = "a-verifier-of-at-least-forty-three-characters-0123";
    let challenge = {
        use sha2::Digest;
        base64_url(&sha2::Sha256::digest(verifier.as_bytes()))
    };
    let mut auth = url::Url::parse(&format!("{issuer}/auth"))?;
    auth.query_pairs_mut()
        .append_pair("client_id", "cli")
        .append_pair("response_type", "code")
        .append_pair("redirect_uri", "http://127.0.0.1:1/cb")
        .append_pair("scope", "openid")
        .append_pair("resource", resource)
        .append_pair("state", "s")
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    let mut b = Browser::default();
    let first = b.go("GET", auth.as_str(), None).await?;
    let end = follow(
        &mut b,
        first,
        auth.to_string(),
        who,
        "http://127.0.0.1:1/cb",
    )
    .await?;
    let cb = url::Url::parse(&end.location.context("no redirect with a code")?)?;
    let code = cb
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.to_string())
        .context("code")?;
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("code", &code)
        .append_pair("redirect_uri", "http://127.0.0.1:1/cb")
        .append_pair("code_verifier", verifier)
        .append_pair("client_id", "cli")
        .append_pair("resource", resource)
        .finish();
    let t = b
        .go("POST", &format!("{issuer}/token"), Some(&form))
        .await?;
    let v: serde_json::Value =
        serde_json::from_str(t.body.trim()).with_context(|| t.body.clone())?;
    v["access_token"]
        .as_str()
        .map(str::to_string)
        .with_context(|| format!("{v}"))
}

fn base64_url(bytes: &[u8]) -> String {
    const T: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |a, (i, b)| a | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..=chunk.len() {
            out.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

/// The provider, started for a gateway on `port`; its issuer URL.
fn provider(peers: &Peers, port: u16) -> Result<(Proc, String)> {
    let mut cmd = Command::new(&peers.node);
    cmd.arg(repo_root().join("tests/interop/idp/oidc.mjs"))
        .arg(format!("http://127.0.0.1:{port}/oauth/callback"))
        .env("MANIFOLD_NODE_MODULES", &peers.node_modules);
    let p = Proc::spawn("oidc-provider", cmd)?;
    let line = Proc::wait_line(
        &p.stdout,
        "oidc-interop: listening on",
        super::STARTUP,
        "oidc-provider",
    )?;
    let issuer = manifold_e2e::url_in(&line)?;
    Ok((p, issuer))
}

#[tokio::test]
async fn two_callers_sign_in_at_a_real_openid_provider_and_reach_the_upstream_as_themselves(
) -> Result<()> {
    let peers = Peers::from_env()?;
    let dir = TempDir::new("oidc")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let mut cmd = Command::new(&peers.node);
    cmd.arg(repo_root().join("tests/interop/idp/oidc.mjs"))
        .arg(format!("http://127.0.0.1:{port}/oauth/callback"))
        .env("MANIFOLD_NODE_MODULES", &peers.node_modules);
    let provider = Proc::spawn("oidc-provider", cmd)?;
    let line = Proc::wait_line(
        &provider.stdout,
        "oidc-interop: listening on",
        super::STARTUP,
        "oidc-provider",
    )?;
    let issuer = manifold_e2e::url_in(&line)?;
    let keys = [
        ("alice", "alice-key-0123456789"),
        ("bob", "bob-key-0123456789"),
    ];
    let auth: String = keys
        .iter()
        .map(|(n, k)| {
            format!(
                "[[auth.api_keys]]\nname = \"{n}\"\nhash = \"{}\"\n\n",
                manifold_policy::hash_key(k)
            )
        })
        .collect();
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n\n[upstreams.rs]\nurl = \"{issuer}/mcp\"\n\n\
         [upstreams.rs.auth]\ntype = \"user_oauth\"\nissuer = \"{issuer}\"\nclient_id = \"manifold\"\n\
         client_secret = \"manifold-secret\"\nscopes = [\"openid\", \"offline_access\", \"mcp\"]\n\n\
         [credentials]\nstore = {:?}\nkey = {STORE_KEY:?}\n\n[auth]\n{auth}",
        dir.0.join("store").display().to_string()
    );
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config)?;
    let (_gw, _, url) = serve("manifold-oidc", &cfg, "warn", super::STARTUP)?;
    for (who, key) in keys {
        let c = McpClient::new(&url);
        c.set_bearer(Some(key));
        c.initialize("2025-11-25", json!({})).await?;
        let r = c.call_tool("rs__whoami", json!({})).await?;
        let result = r.result()?.clone();
        anyhow::ensure!(result["isError"] == true, "{who}: {result}");
        let text = result["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (code, link) = code_and_link(&text)?;
        let done = connect(&mut Browser::default(), &link, Some(&code), who)
            .await
            .with_context(|| format!("{who} connecting"))?;
        anyhow::ensure!(
            done.status == 200 && done.body.contains("Connected"),
            "{who}: {}",
            done.body
        );
        let r = c.call_tool("rs__whoami", json!({})).await?;
        let text = r.result()?["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        anyhow::ensure!(text == who, "{who}: the upstream saw {text:?}");
    }
    Ok(())
}

/// `[credentials] sign_in_client_id`: the front door's OpenID provider signs
/// the browser in before a link binds. Callers hold the provider's access
/// tokens for the gateway; Mallory, who opens Alice's link (sent to her, or
/// read somewhere), signs in as herself and is refused — nothing linked, and
/// the audit says so; Alice, signed in as Alice, connects without a code and
/// later disconnects herself on `<path>/connect/manage`.
#[tokio::test]
async fn a_signed_in_browser_binds_only_its_own_principal_and_manages_its_accounts() -> Result<()> {
    let peers = Peers::from_env()?;
    let dir = TempDir::new("oidc-sign-in")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let (_provider, issuer) = provider(&peers, port)?;
    let resource = format!("http://127.0.0.1:{port}/mcp");
    let audit = dir.0.join("audit.jsonl");
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:{port}\"\n\n[upstreams.rs]\nurl = \"{issuer}/mcp\"\n\n\
         [upstreams.rs.auth]\ntype = \"user_oauth\"\nissuer = \"{issuer}\"\nclient_id = \"manifold\"\n\
         client_secret = \"manifold-secret\"\nscopes = [\"openid\", \"offline_access\", \"mcp\"]\n\n\
         [credentials]\nstore = {:?}\nkey = {STORE_KEY:?}\n\
         sign_in_client_id = \"manifold\"\nsign_in_client_secret = \"manifold-secret\"\n\n\
         [auth]\n[[auth.jwt]]\nname = \"idp\"\nissuer = \"{issuer}\"\njwks_url = \"{issuer}/jwks\"\n\
         algorithms = [\"ES256\"]\n\n[audit]\npath = {:?}\n",
        dir.0.join("store").display().to_string(),
        audit.display().to_string(),
    );
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config)?;
    let (_gw, _, url) = serve("manifold-oidc-sign-in", &cfg, "warn", super::STARTUP)?;
    let alice = McpClient::new(&url);
    alice.set_bearer(Some(&access_token(&issuer, &resource, "alice").await?));
    alice.initialize("2025-11-25", json!({})).await?;
    let r = alice.call_tool("rs__whoami", json!({})).await?;
    let text = r.result()?["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let (_, link) = code_and_link(&text)?;

    // Mallory opens Alice's link: signed in as herself, refused.
    let page = connect(&mut Browser::default(), &link, None, "mallory").await?;
    anyhow::ensure!(
        page.status == 403 && page.body.contains("not yours"),
        "{}: {}",
        page.status,
        page.body
    );
    anyhow::ensure!(
        page.body.contains("jwt:idp:mallory") && page.body.contains("jwt:idp:alice"),
        "{}",
        page.body
    );
    let r = alice.call_tool("rs__whoami", json!({})).await?;
    anyhow::ensure!(r.result()?["isError"] == true, "still not connected: {r}");

    // Alice: signed in, no code asked, connected.
    let mut browser = Browser::default();
    let page = connect(&mut browser, &link, None, "alice").await?;
    anyhow::ensure!(
        page.status == 200 && page.body.contains("Connected"),
        "{}: {}",
        page.status,
        page.body
    );
    let r = alice.call_tool("rs__whoami", json!({})).await?;
    let text = r.result()?["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    anyhow::ensure!(text == "alice", "the upstream saw {text:?}");

    // Her own accounts, and a disconnect, on the manage page (same browser).
    let manage = format!("http://127.0.0.1:{port}/mcp/connect/manage");
    let page = browser.go("GET", &manage, None).await?;
    anyhow::ensure!(
        page.status == 200 && page.body.contains("rs") && page.body.contains("jwt:idp:alice"),
        "{}",
        page.body
    );
    let csrf = field(&page.body, "csrf").context("csrf")?;
    let form = format!("csrf={csrf}&upstream=rs");
    let page = browser.go("POST", &manage, Some(&form)).await?;
    anyhow::ensure!(page.body.contains("Disconnected"), "{}", page.body);
    let r = alice.call_tool("rs__whoami", json!({})).await?;
    anyhow::ensure!(r.result()?["isError"] == true, "disconnected: {r}");

    let log = std::fs::read_to_string(&audit)?;
    for (who, event) in [
        ("jwt:idp:alice", "failed"),
        ("jwt:idp:alice", "connected"),
        ("jwt:idp:alice", "revoked"),
    ] {
        anyhow::ensure!(
            log.lines().any(|l| l.contains("manifold/account")
                && l.contains(who)
                && l.contains(&format!("\"name\":\"{event}\""))),
            "no {event} record for {who}:\n{log}"
        );
    }
    Ok(())
}
