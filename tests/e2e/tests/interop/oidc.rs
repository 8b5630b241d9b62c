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

/// From the connect link to "Connected", signing in at the provider as `who`.
async fn connect(link: &str, code: &str, who: &str) -> Result<()> {
    let mut b = Browser::default();
    let page = b.go("GET", link, None).await?;
    let csrf = field(&page.body, "csrf").context("csrf")?;
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("csrf", &csrf)
        .append_pair("code", code)
        .finish();
    let mut next = b.go("POST", link, Some(&form)).await?;
    let mut at = link.to_string();
    for _ in 0..12 {
        if let Some(to) = next.location.clone() {
            next = b.go("GET", &to, None).await?;
            at = to;
            continue;
        }
        if next.body.contains("Connected") && next.status == 200 {
            return Ok(());
        }
        // The provider's own interaction pages: sign in, then confirm.
        let action = next
            .body
            .split("action=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .map(str::to_string);
        let (Some(action), 200) = (action, next.status) else {
            bail!("stuck at HTTP {}: {}", next.status, next.body);
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
    }
    bail!("no end to the sign-in")
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
        connect(&link, &code, who)
            .await
            .with_context(|| format!("{who} connecting"))?;
        let r = c.call_tool("rs__whoami", json!({})).await?;
        let text = r.result()?["content"][0]["text"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        anyhow::ensure!(text == who, "{who}: the upstream saw {text:?}");
    }
    Ok(())
}
