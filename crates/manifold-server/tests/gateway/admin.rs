//! The admin plane from the attacker's side: a DNS-rebinding page or a
//! foreign origin never reaches the control endpoints; no credential, a wrong
//! one, or an MCP API key that is not an admin credential gets 401/403 on
//! each of them (one answer, whichever); a cross-site form cannot reload;
//! without admin credentials every control endpoint takes the local admin
//! token (made 0600, reused across restarts) and nothing else, on loopback
//! too; the probes and `/metrics` stay open; `/config` shows `${VAR}` references,
//! never a secret written in `args` or a URL's query; a reload is judged by
//! the listener and TLS in force.

use anyhow::{anyhow, Context, Result};
use manifold_policy::hash_key;
use manifold_testkit::harness::{toml_string, TestGateway};
use std::net::SocketAddr;
use std::time::Duration;

use crate::observe::{sample, Scratch};

use crate::{bin, bounded};

/// An `[[admin.tokens]]` token.
const OPS_TOKEN: &str = "ops-admin-token-0123456789abcdef";
/// An MCP client's API key: valid at the MCP endpoint, not an admin credential.
const CLIENT_KEY: &str = "client-api-key-0123456789abcdef";
/// An API key in group `platform`, which `[admin] who` names.
const PLATFORM_KEY: &str = "platform-api-key-0123456789abcdef";

/// One admin request's answer.
pub(crate) struct AdminReply {
    pub status: u16,
    /// The status line and headers, as sent.
    pub head: String,
    pub body: String,
}

impl std::fmt::Display for AdminReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n\n{}",
            self.head,
            self.body.chars().take(2000).collect::<String>()
        )
    }
}

impl AdminReply {
    /// The first header named `name` (any case), trimmed.
    pub(crate) fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }

    /// The CSRF token a console page's forms carry.
    pub(crate) fn csrf(&self) -> Option<String> {
        let at = self.body.find("name=\"csrf\" value=\"")? + 19;
        Some(self.body[at..].split('"').next()?.to_string())
    }
}

/// One request on the admin listener with `headers` (a `Host` naming the
/// listener unless `headers` gives one) and `body`; with the gateway's local
/// admin token (it has one when `[admin]` names no credentials) unless
/// `headers` carry `Authorization` or `Cookie`.
pub(crate) async fn admin_call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<AdminReply> {
    let credential = headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("authorization") || k.eq_ignore_ascii_case("cookie"));
    match manifold_testkit::harness::admin_token_for(addr).filter(|_| !credential) {
        Some(token) => {
            let bearer = format!("Bearer {token}");
            let mut with: Vec<(&str, &str)> = headers.to_vec();
            with.push(("Authorization", &bearer));
            admin_call_as_is(addr, method, path, &with, body).await
        }
        None => admin_call_as_is(addr, method, path, headers, body).await,
    }
}

/// [`admin_call`] without adding any credential: what anyone else sends.
pub(crate) async fn admin_call_as_is(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<AdminReply> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    let mut s = tokio::net::TcpStream::connect(addr).await?;
    s.write_all(req.as_bytes()).await?;
    let mut buf = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut buf)).await??;
    let text = String::from_utf8_lossy(&buf).to_string();
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| anyhow!("no header end in {text}"))?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| anyhow!("no status in {text}"))?;
    Ok(AdminReply {
        status,
        head: head.to_string(),
        body: body.to_string(),
    })
}

/// A gateway with the demo upstream over stdio, one `[[policy]]` hiding a
/// tool, and `admin` as the `[admin]` section's body; `auth`: also `[auth]`
/// with the client and platform keys.
fn config(admin: &str, auth: bool) -> String {
    let auth = if auth {
        format!(
            "[auth]\n\n[[auth.api_keys]]\nname = \"client\"\nhash = \"{}\"\n\n\
             [[auth.api_keys]]\nname = \"platform-bot\"\nhash = \"{}\"\ngroups = [\"platform\"]\n",
            hash_key(CLIENT_KEY),
            hash_key(PLATFORM_KEY)
        )
    } else {
        String::new()
    };
    format!(
        "[upstreams.local]\ncommand = {}\nargs = [\"--faults\"]\n\n{auth}\n\
         [[policy]]\nwho = [\"*\"]\ntools = {{ deny = [\"local__crash\"] }}\n\n\
         [admin]\n{admin}\n",
        toml_string(bin())
    )
}

/// `[admin]` with the ops token and `who = ["group:platform"]`.
fn guarded_admin(listen: &str) -> String {
    format!(
        "listen = \"{listen}\"\nwho = [\"group:platform\"]\n\
         failed_logins_per_minute = 1000\n\n\
         [[admin.tokens]]\nname = \"ops\"\nhash = \"{}\"\n",
        hash_key(OPS_TOKEN)
    )
}

/// A gateway from `text`, also written to a file it reloads from.
async fn start(dir: &Scratch, text: &str) -> Result<(TestGateway, SocketAddr)> {
    let file = dir.0.join("gateway.toml");
    std::fs::write(&file, text)?;
    let gw = TestGateway::start(text).await?;
    gw.gateway().set_config_path(file);
    let admin = gw.gateway().admin_addr().context("admin address")?;
    Ok((gw, admin))
}

/// The control endpoints, as (method, path).
const CONTROL: [(&str, &str); 4] = [
    ("GET", "/config"),
    ("GET", "/upstreams"),
    ("GET", "/catalog?as=key%3Aclient"),
    ("POST", "/reload"),
];

/// The headers of a request to `method` (`POST` sends JSON, as an operator's
/// tool would) with `auth` as its `Authorization`.
fn with_auth<'a>(method: &str, auth: Option<&'a str>) -> Vec<(&'static str, &'a str)> {
    let mut h = Vec::new();
    if method == "POST" {
        h.push(("Content-Type", "application/json"));
    }
    if let Some(a) = auth {
        h.push(("Authorization", a));
    }
    h
}

#[tokio::test]
async fn control_endpoints_refuse_missing_wrong_and_mcp_credentials() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("admin-creds")?;
        let (_gw, admin) = start(&dir, &config(&guarded_admin("127.0.0.1:0"), true)).await?;
        let ops = format!("Bearer {OPS_TOKEN}");
        let platform = format!("Bearer {PLATFORM_KEY}");
        let client = format!("Bearer {CLIENT_KEY}");
        for (method, path) in CONTROL {
            for (auth, want) in [
                (None, 401),
                (Some("Bearer wrong-token-0123456789abcdef"), 401),
                (Some("Basic b3BzOm9wcw=="), 401),
                // A valid client key that is no admin credential gets the
                // answer a wrong token gets: no oracle for client keys.
                (Some(client.as_str()), 401),
                (Some(ops.as_str()), 200),
                (Some(platform.as_str()), 200),
            ] {
                let r = admin_call(admin, method, path, &with_auth(method, auth), "").await?;
                assert_eq!(r.status, want, "{method} {path} with {auth:?}: {r}");
                if auth == Some(client.as_str()) {
                    let wrong = with_auth(method, Some("Bearer wrong-token-0123456789abcdef"));
                    let w = admin_call(admin, method, path, &wrong, "").await?;
                    assert_eq!(r.body, w.body, "{method} {path}: a client key tells");
                }
                if want == 401 {
                    assert!(
                        r.head
                            .to_ascii_lowercase()
                            .contains("www-authenticate: bearer realm=\"manifold-admin\""),
                        "{r}"
                    );
                }
                for secret in [OPS_TOKEN, CLIENT_KEY, PLATFORM_KEY, "wrong-token"] {
                    assert!(
                        !r.body.contains(secret) || want == 200,
                        "{secret} echoed: {r}"
                    );
                }
            }
        }
        // A path nobody routed is authorized first (so is any endpoint added
        // later), and only then not found.
        let r = admin_call(admin, "GET", "/console", &[], "").await?;
        assert_eq!(r.status, 401, "{r}");
        let r = admin_call(admin, "GET", "/console", &with_auth("GET", Some(&ops)), "").await?;
        assert_eq!(r.status, 404, "{r}");
        // The probes and the metrics need nothing.
        for path in ["/healthz", "/readyz", "/metrics"] {
            let r = admin_call(admin, "GET", path, &[], "").await?;
            assert_eq!(r.status, 200, "{path}: {r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_rebinding_page_or_a_foreign_origin_never_reaches_the_admin_listener() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("admin-rebind")?;
        // No admin credentials, on loopback: even with the local admin
        // token, a rebinding Host or a foreign Origin is refused first.
        let (_gw, admin) = start(&dir, &config("listen = \"127.0.0.1:0\"", false)).await?;
        let port = admin.port();
        let evil_host = format!("attacker.example:{port}");
        let evil_origin = format!("http://attacker.example:{port}");
        let json = ("Content-Type", "application/json");
        for (method, path) in [
            ("GET", "/config"),
            ("GET", "/catalog"),
            ("POST", "/reload"),
            ("GET", "/metrics"),
        ] {
            for headers in [
                vec![
                    ("Host", evil_host.as_str()),
                    ("Origin", evil_origin.as_str()),
                ],
                vec![("Host", evil_host.as_str())],
                vec![("Origin", "http://attacker.example")],
            ] {
                let mut headers = headers;
                headers.push(json);
                let r = admin_call(admin, method, path, &headers, "").await?;
                assert_eq!(r.status, 403, "{method} {path} {headers:?}: {r}");
            }
        }
        // What an operator sends: an address or localhost.
        for host in [admin.to_string(), format!("localhost:{port}")] {
            let r = admin_call(admin, "GET", "/config", &[("Host", host.as_str())], "").await?;
            assert_eq!(r.status, 200, "{host}: {r}");
        }
        let r = admin_call(
            admin,
            "GET",
            "/catalog",
            &[("Origin", &format!("http://127.0.0.1:{port}"))],
            "",
        )
        .await?;
        assert_eq!(
            r.status, 200,
            "a loopback origin on a loopback listener: {r}"
        );
        drop(_gw);

        // A name the operator lists, and an origin.
        let (_gw, admin) = start(
            &dir,
            &config(
                "listen = \"127.0.0.1:0\"\nallowed_hosts = [\"admin.internal\"]\n\
                 allowed_origins = [\"https://console.internal\"]",
                false,
            ),
        )
        .await?;
        let listed = format!("admin.internal:{}", admin.port());
        for origin in [None, Some("https://console.internal")] {
            let mut headers = vec![("Host", listed.as_str())];
            headers.extend(origin.map(|o| ("Origin", o)));
            let r = admin_call(admin, "GET", "/config", &headers, "").await?;
            assert_eq!(r.status, 200, "{headers:?}: {r}");
        }
        let r = admin_call(
            admin,
            "GET",
            "/config",
            &[
                ("Host", "other.internal"),
                ("Origin", "https://console.internal"),
            ],
            "",
        )
        .await?;
        assert_eq!(r.status, 403, "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_cross_site_form_cannot_reload() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("admin-form")?;
        let (_gw, admin) = start(&dir, &config("listen = \"127.0.0.1:0\"", false)).await?;
        let reloads = |metrics: &str| {
            sample(metrics, "manifold_config_reloads_total{outcome=\"ok\"}").unwrap_or(0.0)
        };
        // What an HTML form can send without a CORS preflight.
        for ctype in [
            None,
            Some("application/x-www-form-urlencoded"),
            Some("multipart/form-data; boundary=x"),
            Some("text/plain"),
        ] {
            let headers: Vec<(&str, &str)> = ctype.iter().map(|c| ("Content-Type", *c)).collect();
            let r = admin_call(admin, "POST", "/reload", &headers, "a=b").await?;
            assert_eq!(r.status, 415, "{ctype:?}: {r}");
            assert!(r.body.contains("application/json"), "{r}");
        }
        let r = admin_call(admin, "GET", "/metrics", &[], "").await?;
        assert_eq!(reloads(&r.body), 0.0, "a form reloaded: {}", r.body);
        let r = admin_call(admin, "GET", "/reload", &[], "").await?;
        assert_eq!(r.status, 405, "{r}");
        let r = admin_call(
            admin,
            "POST",
            "/reload",
            &[("Content-Type", "application/json")],
            "",
        )
        .await?;
        assert_eq!(r.status, 200, "{r}");
        let r = admin_call(admin, "GET", "/metrics", &[], "").await?;
        assert_eq!(reloads(&r.body), 1.0, "{}", r.body);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn without_admin_credentials_every_control_endpoint_takes_the_local_admin_token() -> Result<()>
{
    bounded(async {
        // On loopback (the agent on the same host is the caller to fear) and
        // on every interface (a pod's admin listener) alike.
        for listen in ["127.0.0.1:0", "0.0.0.0:0"] {
            let dir = Scratch::new("admin-local")?;
            let file = dir.0.join("state/admin-token");
            let admin_section = format!(
                "listen = \"{listen}\"\ntoken_file = {}",
                toml_string(&file.to_string_lossy())
            );
            let (gw, admin) = start(&dir, &config(&admin_section, false)).await?;
            let token = manifold_server::local_admin_token(&file)?;
            {
                use std::os::unix::fs::PermissionsExt;
                let mode = std::fs::metadata(&file)?.permissions().mode() & 0o777;
                assert_eq!(mode, 0o600, "{listen}: the token file is the user's only");
            }
            let local = format!("Bearer {token}");
            let wrong = format!("Bearer {}", "0".repeat(64));
            for (method, path) in CONTROL {
                let r = admin_call_as_is(admin, method, path, &with_auth(method, None), "").await?;
                assert_eq!(r.status, 401, "{listen} {method} {path}: {r}");
                assert!(r.body.contains("manifold admin token"), "says how: {r}");
                assert!(r.header("www-authenticate").is_some(), "{r}");
                let r = admin_call_as_is(admin, method, path, &with_auth(method, Some(&wrong)), "")
                    .await?;
                assert_eq!(r.status, 401, "{listen} {method} {path}: {r}");
                let r = admin_call_as_is(admin, method, path, &with_auth(method, Some(&local)), "")
                    .await?;
                assert_eq!(r.status, 200, "{listen} {method} {path}: {r}");
            }
            // The console too: no page, no form post without it.
            for (method, path) in [("GET", "/ui"), ("GET", "/ui/pins"), ("POST", "/ui/reload")] {
                let r = admin_call_as_is(admin, method, path, &[], "").await?;
                assert!(
                    r.status == 401
                        || (r.status == 303
                            && r.header("location")
                                .is_some_and(|l| l.starts_with("/ui/login"))),
                    "{listen} {method} {path}: {r}"
                );
            }
            // The kubelet and Prometheus need nothing.
            for host in [admin.to_string(), "10.1.2.3:9090".into()] {
                for path in ["/healthz", "/readyz", "/metrics"] {
                    let r = admin_call_as_is(admin, "GET", path, &[("Host", host.as_str())], "")
                        .await?;
                    assert_eq!(r.status, 200, "{host} {path}: {r}");
                }
            }
            // A restart keeps the token.
            drop(gw);
            let (_gw, admin) = start(&dir, &config(&admin_section, false)).await?;
            assert_eq!(manifold_server::local_admin_token(&file)?, token);
            let r = admin_call_as_is(admin, "GET", "/config", &with_auth("GET", Some(&local)), "")
                .await?;
            assert_eq!(r.status, 200, "{listen} after a restart: {r}");
        }

        // With a token configured, the local admin token is no credential.
        let dir = Scratch::new("admin-on")?;
        let (_gw, admin) = start(&dir, &config(&guarded_admin("0.0.0.0:0"), true)).await?;
        assert!(_gw.gateway().local_admin_token_file().is_none());
        let ops = format!("Bearer {OPS_TOKEN}");
        for (method, path) in CONTROL {
            let r = admin_call(admin, method, path, &with_auth(method, Some(&ops)), "").await?;
            assert_eq!(r.status, 200, "{method} {path}: {r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn config_shows_references_never_secrets_in_args_or_query_strings_nor_do_errors() -> Result<()>
{
    bounded(async {
        let text = format!(
            "{}\n\
             [upstreams.gh]\ncommand = \"/nonexistent/npx\"\n\
             args = [\"-y\", \"mcp-remote\", \"https://mcp.example.com/sse\", \
                     \"--header\", \"Authorization: Bearer bearer-literal-secret\", \
                     \"-e\", \"GITHUB_TOKEN=ghp_literal0123456789\", \
                     \"-e\", \"GITHUB_TOKEN=${{GITHUB_TOKEN}}\", \"${{GITHUB_TOKEN}}\"]\n\n\
             [upstreams.q]\nurl = \"http://127.0.0.1:9/mcp?api_key=query-literal-secret&key2=${{API_KEY}}\"\n\n\
             [upstreams.u]\nurl = \"http://ghp_userinfo_secret@127.0.0.1:9/mcp\"\n",
            config("listen = \"127.0.0.1:0\"", false)
        );
        // `${VAR}`s expand from this environment: the effective view must
        // still show the reference, never the value.
        let cfg = manifold_config::load_str(
            std::path::Path::new("gateway.toml"),
            &text,
            |name| match name {
                "GITHUB_TOKEN" => Some("ghp_expanded0123456789".into()),
                "API_KEY" => Some("expanded-api-key".into()),
                _ => None,
            },
            figment::providers::Env::raw().only(&[] as &[&str]),
        )?;
        let gw = TestGateway::start_config(cfg).await?;
        let admin = gw.gateway().admin_addr().context("admin address")?;
        let r = admin_call(admin, "GET", "/config", &[], "").await?;
        assert_eq!(r.status, 200, "{r}");
        for secret in [
            "bearer-literal-secret",
            "ghp_literal",
            "query-literal-secret",
            "ghp_expanded",
            "expanded-api-key",
            "mcp.example.com",
        ] {
            assert!(!r.body.contains(secret), "`{secret}` in /config: {}", r.body);
        }
        let v: serde_json::Value = serde_json::from_str(&r.body)?;
        let args = &v["upstreams"]["gh"]["args"];
        assert_eq!(args[9], "${GITHUB_TOKEN}", "{args}");
        assert_eq!(args[8], "[REDACTED]${GITHUB_TOKEN}", "{args}");
        assert_eq!(args[4], "[REDACTED]", "{args}");
        assert_eq!(
            v["upstreams"]["q"]["url"],
            "http://127.0.0.1:9/mcp?api_key=[REDACTED]&key2=${API_KEY}"
        );
        assert_eq!(v["upstreams"]["gh"]["command"], "/nonexistent/npx");
        assert_eq!(v["upstreams"]["u"]["url"], "http://[REDACTED]@127.0.0.1:9/mcp");
        // Nothing listens on port 9: the upstreams' errors (which name where
        // the gateway went) reach the open /readyz and /upstreams without a
        // byte of what the URLs carried.
        let last = std::sync::Arc::new(parking_lot::Mutex::new(String::new()));
        let readyz = manifold_testkit::wait::eventually(
            "both remote upstreams to report an error",
            Duration::from_secs(10),
            || async {
                let r = admin_call(admin, "GET", "/readyz", &[], "").await?;
                *last.lock() = r.body.clone();
                let v: serde_json::Value = serde_json::from_str(&r.body)?;
                let failed = v["upstreams"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|u| (u["name"] == "q" || u["name"] == "u") && u["last_error"].is_string())
                    .count();
                Ok((failed == 2).then_some(r.body))
            },
        )
        .await
        .with_context(|| format!("/readyz: {}", last.lock()))?;
        assert!(readyz.contains("127.0.0.1:9/mcp"), "{readyz}");
        let upstreams = admin_call(admin, "GET", "/upstreams", &[], "").await?;
        for secret in ["query-literal-secret", "expanded-api-key", "ghp_userinfo_secret"] {
            assert!(!readyz.contains(secret), "`{secret}` in /readyz: {readyz}");
            assert!(
                !upstreams.body.contains(secret),
                "`{secret}` in /upstreams: {}",
                upstreams.body
            );
        }
        Ok(())
    })
    .await
}

/// `POST /pins/approve` releases quarantined tools to every caller, so it is a
/// control endpoint like `/reload`: no credentials, a wrong token, an MCP
/// client's key, a foreign `Origin` or a form approve nothing, and the held
/// tools stay out of the catalogue; the admin token approves.
#[tokio::test]
async fn pins_approve_takes_the_admin_credentials_and_nothing_less() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("admin-pins")?;
        let text = format!(
            "{}\n[integrity]\nmode = \"quarantine\"\nstore = {}\ntrust_on_first_use = false\n",
            config(&guarded_admin("127.0.0.1:0"), true),
            toml_string(&dir.0.join("pins.json").to_string_lossy())
        );
        let (_gw, admin) = start(&dir, &text).await?;
        let ops = format!("Bearer {OPS_TOKEN}");
        // What the gateway serves, as the admin plane's catalogue shows it.
        let served = || async {
            let r = admin_call(
                admin,
                "GET",
                "/catalog",
                &[("Authorization", ops.as_str())],
                "",
            )
            .await?;
            let v: serde_json::Value = serde_json::from_str(&r.body)?;
            anyhow::Ok(v["tools"].as_array().map_or(0, Vec::len))
        };
        assert_eq!(served().await?, 0, "nothing approved yet");
        let all = r#"{"all": true}"#;
        let json = ("Content-Type", "application/json");
        let client_key = format!("Bearer {CLIENT_KEY}");
        for (headers, want) in [
            (vec![json], 401),
            (
                vec![
                    json,
                    ("Authorization", "Bearer wrong-token-0123456789abcdef"),
                ],
                401,
            ),
            (vec![json, ("Authorization", client_key.as_str())], 401),
            (
                vec![
                    json,
                    ("Authorization", ops.as_str()),
                    ("Origin", "http://attacker.example"),
                ],
                403,
            ),
            (
                vec![
                    ("Content-Type", "application/x-www-form-urlencoded"),
                    ("Authorization", ops.as_str()),
                ],
                415,
            ),
        ] {
            let r = admin_call(admin, "POST", "/pins/approve", &headers, all).await?;
            assert_eq!(r.status, want, "{headers:?}: {r}");
        }
        assert_eq!(served().await?, 0, "a refused approval approved something");
        let r = admin_call(
            admin,
            "POST",
            "/pins/approve",
            &[json, ("Authorization", ops.as_str())],
            all,
        )
        .await?;
        assert_eq!(r.status, 200, "{r}");
        manifold_testkit::wait::eventually(
            "the approved tools served",
            Duration::from_secs(15),
            || async { Ok((served().await? > 0).then_some(())) },
        )
        .await?;
        Ok(())
    })
    .await
}
