//! The operator's console (`/ui` on the admin listener) from the server's side
//! and the attacker's: every page refuses no credential, a wrong token and an MCP
//! API key, and serves a login cookie, an admin bearer token and a caller
//! `[admin] who` names; a login ends with logout and with its token; forms need the
//! session's CSRF token and the console's own origin; every response carries the
//! security headers and no inline script or style; without admin credentials the
//! console is open on loopback only; the audit view filters a 100,000-record log
//! (first page within 200 ms); approvals and revocations are audited with the admin
//! principal; the overview counts recent calls; "view as" says why items are hidden.
//!
//! Browser flows (chromium) are in `tests/tests/console.rs`.

use anyhow::{anyhow, Context, Result};
use manifold_integrity::{decide, PinStore, Rules, StoreFile};
use manifold_policy::hash_key;
use manifold_testkit::harness::{demo_upstream_bin, toml_string, TestGateway};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha256};
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

const OPS_TOKEN: &str = "console-ops-token-0123456789abcdef";
const CLIENT_KEY: &str = "console-client-key-0123456789abcdef";
const PLATFORM_KEY: &str = "console-platform-key-0123456789abcdef";
const TEST_LIMIT: Duration = Duration::from_secs(120);

/// Every page, and a word each one shows.
const PAGES: [(&str, &str); 7] = [
    ("/ui", "Upstreams"),
    ("/ui/", "Upstreams"),
    ("/ui/catalogue", "Left out of the merged lists"),
    ("/ui/catalogue/tool/local__echo", "Input schema"),
    ("/ui/audit", "No audit log file"),
    ("/ui/pins", "No pin store is configured"),
    ("/ui/config", "Effective configuration"),
];

async fn bounded(body: impl Future<Output = Result<()>>) -> Result<()> {
    tokio::time::timeout(TEST_LIMIT, body)
        .await
        .map_err(|_| anyhow!("the test did not finish within {TEST_LIMIT:?}"))?
}

/// A scratch directory removed on drop.
struct Scratch(PathBuf);
impl Scratch {
    fn new(tag: &str) -> Result<Scratch> {
        let p = std::env::temp_dir().join(format!("manifold-console-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p)?;
        Ok(Scratch(p))
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One answer.
struct Reply {
    status: u16,
    head: String,
    body: String,
}
impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}\n\n{}",
            self.head,
            self.body.chars().take(2000).collect::<String>()
        )
    }
}
impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
    /// The CSRF token the page's forms carry.
    fn csrf(&self) -> Option<String> {
        let at = self.body.find("name=\"csrf\" value=\"")? + 19;
        Some(self.body[at..].split('"').next()?.to_string())
    }
}

/// One HTTP/1.1 request to the admin listener (a `Host` naming it unless given).
async fn call(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Result<Reply> {
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
    Ok(Reply {
        status,
        head: head.to_string(),
        body: body.to_string(),
    })
}

/// A gateway with the demo upstream as `local`, `[auth]` keys, a policy hiding
/// `local__crash` from everyone, and `extra` sections; the admin listener's
/// address. `admin`: the `[admin]` section's body.
async fn start(dir: &Scratch, admin: &str, extra: &str) -> Result<(TestGateway, SocketAddr)> {
    let text = format!(
        "[naming]\nprefix_mode = \"always\"\n\n[upstreams.local]\ncommand = {}\nargs = [\"--faults\"]\n\n\
         [auth]\n\n[[auth.api_keys]]\nname = \"client\"\nhash = \"{}\"\n\n\
         [[auth.api_keys]]\nname = \"platform-bot\"\nhash = \"{}\"\ngroups = [\"platform\"]\n\n\
         [[policy]]\nwho = [\"*\"]\ntools = {{ allow = [\"*\"], deny = [\"local__crash\"] }}\n\n{extra}\n\
         [admin]\n{admin}\n",
        toml_string(&demo_upstream_bin().to_string_lossy()),
        hash_key(CLIENT_KEY),
        hash_key(PLATFORM_KEY),
    );
    let file = dir.0.join("gateway.toml");
    std::fs::write(&file, &text)?;
    let gw = TestGateway::start(&text).await?;
    gw.gateway().set_config_path(file);
    let admin = gw.gateway().admin_addr().context("admin address")?;
    Ok((gw, admin))
}

/// `[admin]` with the ops token and `who = ["group:platform"]`.
fn guarded() -> String {
    format!(
        "listen = \"127.0.0.1:0\"\nwho = [\"group:platform\"]\n\n\
         [[admin.tokens]]\nname = \"ops\"\nhash = \"{}\"\n",
        hash_key(OPS_TOKEN)
    )
}

/// Logs in with `token`: the cookie (`manifold_console=…`) and its login form
/// reply.
async fn log_in(admin: SocketAddr, token: &str) -> Result<(String, Reply)> {
    let form = call(admin, "GET", "/ui/login", &[], "").await?;
    let csrf = form.csrf().context("no csrf in the login form")?;
    let origin = format!("http://{admin}");
    let r = call(
        admin,
        "POST",
        "/ui/login",
        &[
            ("Origin", &origin),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        &format!("token={token}&csrf={csrf}&next=%2Fui"),
    )
    .await?;
    let cookie = r
        .header("set-cookie")
        .and_then(|c| c.split(';').next().map(str::to_string))
        .unwrap_or_default();
    Ok((cookie, r))
}

#[tokio::test]
async fn every_page_refuses_missing_wrong_and_mcp_credentials() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("creds")?;
        let (_gw, admin) = start(&dir, &guarded(), "").await?;
        let (cookie, login) = log_in(admin, OPS_TOKEN).await?;
        assert_eq!(login.status, 303, "{login}");
        assert_eq!(login.header("location").as_deref(), Some("/ui"));
        let ops = format!("Bearer {OPS_TOKEN}");
        let platform = format!("Bearer {PLATFORM_KEY}");
        let client = format!("Bearer {CLIENT_KEY}");
        let forged =
            "manifold_console=00112233445566778899aabbccddeeff.00112233445566778899aabbccddeeff";
        for (path, word) in PAGES {
            // No credential: the login form, coming back here.
            let r = call(admin, "GET", path, &[], "").await?;
            assert_eq!(r.status, 303, "{path}: {r}");
            let to = r.header("location").unwrap_or_default();
            assert!(to.starts_with("/ui/login?next=%2Fui"), "{path}: {to}");
            assert!(!r.body.contains(word), "{path}: {r}");
            // A forged cookie is no login.
            let r = call(admin, "GET", path, &[("Cookie", forged)], "").await?;
            assert_eq!(r.status, 303, "{path}: {r}");
            for (auth, want) in [
                ("Bearer wrong-token-0123456789abcdef", 401),
                ("Basic b3BzOm9wcw==", 401),
                // An MCP client's key is not an admin credential.
                (client.as_str(), 403),
            ] {
                let r = call(admin, "GET", path, &[("Authorization", auth)], "").await?;
                assert_eq!(r.status, want, "{path} with {auth}: {r}");
                assert!(!r.body.contains(word), "{path} with {auth}: {r}");
                if want == 401 {
                    let c = r.header("www-authenticate").unwrap_or_default();
                    assert!(c.starts_with("Bearer realm=\"manifold-admin\""), "{r}");
                }
                for secret in [OPS_TOKEN, CLIENT_KEY, "wrong-token"] {
                    assert!(!r.body.contains(secret), "{secret} echoed: {r}");
                }
            }
            for headers in [
                vec![("Cookie", cookie.as_str())],
                vec![("Authorization", ops.as_str())],
                vec![("Authorization", platform.as_str())],
            ] {
                let r = call(admin, "GET", path, &headers, "").await?;
                assert_eq!(r.status, 200, "{path} with {headers:?}: {r}");
                assert!(r.body.contains(word), "{path}: {r}");
            }
        }
        // A wrong token at the login form: no cookie, the form again.
        let (cookie, r) = log_in(admin, "wrong-token-0123456789abcdef").await?;
        assert_eq!(r.status, 401, "{r}");
        assert!(
            cookie.is_empty() && r.body.contains("class=\"error\""),
            "{r}"
        );
        assert!(!r.body.contains("wrong-token"), "the token echoed: {r}");
        let (cookie, r) = log_in(admin, CLIENT_KEY).await?;
        assert_eq!(r.status, 403, "{r}");
        assert!(cookie.is_empty(), "{r}");
        // A caller [admin] who names logs in too.
        let (cookie, r) = log_in(admin, PLATFORM_KEY).await?;
        assert_eq!(r.status, 303, "{r}");
        let r = call(admin, "GET", "/ui", &[("Cookie", &cookie)], "").await?;
        assert!(r.body.contains("key:platform-bot"), "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_login_ends_with_logout_and_with_its_token() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("logout")?;
        let (gw, admin) = start(&dir, &guarded(), "").await?;
        let (cookie, _) = log_in(admin, OPS_TOKEN).await?;
        let page = call(admin, "GET", "/ui", &[("Cookie", &cookie)], "").await?;
        assert_eq!(page.status, 200, "{page}");
        let csrf = page.csrf().context("no logout form")?;
        let origin = format!("http://{admin}");
        let form = [
            ("Cookie", cookie.as_str()),
            ("Origin", origin.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        let out = call(admin, "POST", "/ui/logout", &form, &format!("csrf={csrf}")).await?;
        assert_eq!(out.status, 303, "{out}");
        let clear = out.header("set-cookie").unwrap_or_default();
        assert!(
            clear.starts_with("manifold_console=;") && clear.contains("Max-Age=0"),
            "{clear}"
        );
        // The old cookie, replayed, is no login.
        let r = call(admin, "GET", "/ui", &[("Cookie", &cookie)], "").await?;
        assert_eq!(r.status, 303, "{r}");

        // A login whose token leaves [[admin.tokens]] ends at once.
        let (cookie, _) = log_in(admin, OPS_TOKEN).await?;
        let mut cfg = (*gw.gateway().config()).clone();
        if let Some(a) = cfg.admin.as_mut() {
            a.tokens.clear();
        }
        gw.gateway().reload(cfg).await?;
        let r = call(admin, "GET", "/ui", &[("Cookie", &cookie)], "").await?;
        assert_eq!(r.status, 303, "{r}");
        assert!(
            r.header("location").unwrap_or_default().contains("ended=1"),
            "{r}"
        );
        Ok(())
    })
    .await
}

/// A form post: its headers, its body, and what is wrong with it.
type Attempt<'a> = (Vec<(&'a str, &'a str)>, String, &'a str);

/// Configuration reloads so far, as `/metrics` counts them.
async fn reloads(admin: SocketAddr) -> Result<u64> {
    let m = call(admin, "GET", "/metrics", &[], "").await?;
    Ok(m.body
        .lines()
        .filter(|l| l.starts_with("manifold_config_reloads_total"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
        .sum())
}

#[tokio::test]
async fn forms_need_the_sessions_csrf_token_and_the_consoles_origin() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("csrf")?;
        let (_gw, admin) = start(&dir, &guarded(), "").await?;
        let (cookie, _) = log_in(admin, OPS_TOKEN).await?;
        let (other, _) = log_in(admin, OPS_TOKEN).await?;
        let csrf = call(admin, "GET", "/ui/config", &[("Cookie", &cookie)], "")
            .await?
            .csrf()
            .context("no csrf")?;
        let other_csrf = call(admin, "GET", "/ui/config", &[("Cookie", &other)], "")
            .await?
            .csrf()
            .context("no csrf")?;
        assert_ne!(csrf, other_csrf, "CSRF tokens are per session");
        let own = format!("http://{admin}");
        let form_type = ("Content-Type", "application/x-www-form-urlencoded");
        let before = reloads(admin).await?;
        let attempts: Vec<Attempt> = vec![
            (
                vec![("Cookie", &cookie), ("Origin", &own), form_type],
                String::new(),
                "no token",
            ),
            (
                vec![("Cookie", &cookie), ("Origin", &own), form_type],
                "csrf=0123abcd".into(),
                "wrong token",
            ),
            (
                vec![("Cookie", &cookie), ("Origin", &own), form_type],
                format!("csrf={other_csrf}"),
                "another session's token",
            ),
            (
                vec![
                    ("Cookie", &cookie),
                    ("Origin", "http://evil.example"),
                    form_type,
                ],
                format!("csrf={csrf}"),
                "a foreign origin",
            ),
            (
                vec![
                    ("Cookie", &cookie),
                    ("Origin", "http://127.0.0.1:1"),
                    form_type,
                ],
                format!("csrf={csrf}"),
                "another loopback origin",
            ),
            (
                vec![
                    ("Cookie", &cookie),
                    ("Origin", &own),
                    ("Sec-Fetch-Site", "same-site"),
                    form_type,
                ],
                format!("csrf={csrf}"),
                "a same-site page",
            ),
            (
                vec![("Cookie", &cookie), form_type],
                format!("csrf={csrf}"),
                "no Origin",
            ),
        ];
        for (headers, body, what) in &attempts {
            let r = call(admin, "POST", "/ui/reload", headers, body).await?;
            assert_eq!(r.status, 403, "{what}: {r}");
        }
        assert_eq!(reloads(admin).await?, before, "a refused form reloaded");
        // The session's own form, from the console's origin.
        let r = call(
            admin,
            "POST",
            "/ui/reload",
            &[
                ("Cookie", &cookie),
                ("Origin", &own),
                ("Sec-Fetch-Site", "same-origin"),
                form_type,
            ],
            &format!("csrf={csrf}"),
        )
        .await?;
        assert_eq!(r.status, 303, "{r}");
        assert_eq!(
            r.header("location").as_deref(),
            Some("/ui/config?reloaded=ok")
        );
        let page = call(admin, "GET", "/ui/config", &[("Cookie", &cookie)], "").await?;
        assert!(page.body.contains("Last reload at"), "{page}");
        // The login form itself is not posted from elsewhere.
        let login_csrf = call(admin, "GET", "/ui/login", &[], "")
            .await?
            .csrf()
            .context("csrf")?;
        let r = call(
            admin,
            "POST",
            "/ui/login",
            &[("Origin", "http://127.0.0.1:1"), form_type],
            &format!("token={OPS_TOKEN}&csrf={login_csrf}"),
        )
        .await?;
        assert_eq!(r.status, 403, "{r}");
        assert!(r.header("set-cookie").is_none(), "{r}");
        // A form body is bounded.
        let big = format!("csrf={csrf}&x={}", "a".repeat(64 * 1024));
        let r = call(
            admin,
            "POST",
            "/ui/reload",
            &[("Cookie", &cookie), ("Origin", &own), form_type],
            &big,
        )
        .await?;
        assert_eq!(r.status, 413, "{r}");
        Ok(())
    })
    .await
}

/// The security headers of a console answer, and no inline script or style.
fn assert_secure(r: &Reply, what: &str) {
    let csp = r.header("content-security-policy").unwrap_or_default();
    for part in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "frame-ancestors 'none'",
        "form-action 'self'",
        "object-src 'none'",
    ] {
        assert!(csp.contains(part), "{what}: CSP {csp:?} lacks {part}");
    }
    assert!(!csp.contains("unsafe"), "{what}: {csp}");
    for (h, v) in [
        ("x-frame-options", "DENY"),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "same-origin"),
        ("cache-control", "no-store"),
    ] {
        assert_eq!(r.header(h).as_deref(), Some(v), "{what}: {h}");
    }
    let lower = r.body.to_ascii_lowercase();
    assert!(!lower.contains(" style="), "{what}: an inline style");
    for (i, _) in lower.match_indices("<script") {
        let tag = &lower[i..lower[i..].find('>').map_or(lower.len(), |e| i + e)];
        assert!(
            tag.contains("src=\"/ui/static/"),
            "{what}: an inline script {tag}"
        );
    }
    assert!(
        !lower.contains("http://") || !lower.contains("src=\"http"),
        "{what}: a remote asset"
    );
}

#[tokio::test]
async fn every_answer_carries_the_security_headers() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("headers")?;
        let (_gw, admin) = start(&dir, &guarded(), "").await?;
        let ops = format!("Bearer {OPS_TOKEN}");
        let mut answers = Vec::new();
        for (path, _) in PAGES {
            answers.push((
                path.to_string(),
                call(admin, "GET", path, &[("Authorization", &ops)], "").await?,
            ));
            answers.push((
                format!("{path} (no credential)"),
                call(admin, "GET", path, &[], "").await?,
            ));
        }
        for path in [
            "/ui/login",
            "/ui/static/console.css",
            "/ui/static/console.js",
            "/ui/nothing",
        ] {
            answers.push((
                path.into(),
                call(admin, "GET", path, &[("Authorization", &ops)], "").await?,
            ));
        }
        answers.push((
            "a wrong token".into(),
            call(
                admin,
                "GET",
                "/ui",
                &[("Authorization", "Bearer nope-0123456789abcdef")],
                "",
            )
            .await?,
        ));
        for (what, r) in &answers {
            assert_secure(r, what);
        }
        let css = &answers
            .iter()
            .find(|(w, _)| w.ends_with(".css"))
            .context("css")?
            .1;
        assert_eq!(
            css.header("content-type").as_deref(),
            Some("text/css; charset=utf-8")
        );
        // The login cookie: HttpOnly, SameSite=Strict, the console's path, a
        // bounded life; not Secure on this plain-HTTP listener.
        let (_, login) = log_in(admin, OPS_TOKEN).await?;
        assert_secure(&login, "login");
        let c = login.header("set-cookie").context("no cookie")?;
        for part in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=28800"] {
            assert!(c.contains(part), "{c}");
        }
        assert!(!c.contains("Secure"), "{c}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn without_admin_credentials_the_console_is_open_on_loopback_only() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("loopback")?;
        let (_gw, admin) = start(&dir, "listen = \"127.0.0.1:0\"", "").await?;
        let r = call(admin, "GET", "/ui", &[], "").await?;
        assert_eq!(r.status, 200, "{r}");
        assert!(r.body.contains("loopback"), "{r}");
        // Its forms still need the token and the console's origin.
        let csrf = r.csrf();
        assert!(csrf.is_none(), "no logout form without a login");
        let page = call(admin, "GET", "/ui/config", &[], "").await?;
        let csrf = page.csrf().context("no reload form")?;
        let own = format!("http://{admin}");
        let form_type = ("Content-Type", "application/x-www-form-urlencoded");
        let r = call(
            admin,
            "POST",
            "/ui/reload",
            &[("Origin", "http://127.0.0.1:1"), form_type],
            &format!("csrf={csrf}"),
        )
        .await?;
        assert_eq!(r.status, 403, "{r}");
        let r = call(
            admin,
            "POST",
            "/ui/reload",
            &[("Origin", &own), form_type],
            &format!("csrf={csrf}"),
        )
        .await?;
        assert_eq!(r.status, 303, "{r}");
        drop(dir);

        let dir = Scratch::new("exposed")?;
        let (_gw, admin) = start(&dir, "listen = \"0.0.0.0:0\"", "").await?;
        let r = call(admin, "GET", "/ui", &[], "").await?;
        assert_eq!(r.status, 403, "{r}");
        assert!(r.body.contains("admin.tokens"), "{r}");
        Ok(())
    })
    .await
}

/// Writes a chained log of `n` records across three files at `path`.
fn write_log(path: &Path, n: usize) -> Result<()> {
    let redactor = manifold_audit::Redactor::default();
    let cap = manifold_audit::SizeCap::default();
    let mut prev = manifold_audit::ZERO_HASH.to_string();
    let files = [
        manifold_audit::rotated_path(path, 2),
        manifold_audit::rotated_path(path, 1),
        path.to_path_buf(),
    ];
    let per = n.div_ceil(files.len());
    for (f, file) in files.iter().enumerate() {
        let mut out = std::io::BufWriter::new(std::fs::File::create(file)?);
        for i in f * per..((f + 1) * per).min(n) {
            let mut r = manifold_audit::AuditRecord::new(format!("{i:016x}"), "tools/call");
            r.time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_651_200 + i as u64);
            r.principal = ["key:alice", "key:bob", "jwt:corp:carol", "key:dave"][i % 4].into();
            r.upstream = Some(["local", "github"][i % 2].into());
            r.name = Some(["local__echo", "github__search", "local__add"][i % 3].into());
            r.original = r
                .name
                .as_ref()
                .and_then(|n| n.split("__").nth(1).map(str::to_string));
            r.arguments = Some(json!({"text": format!("record {i}")}));
            r.outcome = if i % 25 == 0 {
                manifold_audit::Outcome::Timeout
            } else {
                manifold_audit::Outcome::Ok
            };
            let mut entry = r.to_entry(&redactor, true, &cap);
            entry.insert("prev".into(), json!(prev));
            let mut h = Sha256::new();
            h.update(prev.as_bytes());
            h.update(manifold_audit::canonical::canonical_json(&Value::Object(
                entry.clone(),
            )));
            let hash = hex_of(&h.finalize());
            entry.insert("hash".into(), json!(hash));
            writeln!(out, "{}", Value::Object(entry))?;
            prev = hash;
        }
        out.flush()?;
    }
    Ok(())
}

fn hex_of(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[tokio::test]
async fn the_audit_view_filters_a_100000_record_log_quickly() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("audit100k")?;
        let log = dir.0.join("audit.jsonl");
        write_log(&log, 100_000)?;
        let audit = format!("[audit]\npath = {}\n", toml_string(&log.to_string_lossy()));
        let (_gw, admin) = start(&dir, &guarded(), &audit).await?;
        let ops = format!("Bearer {OPS_TOKEN}");
        let auth = [("Authorization", ops.as_str())];
        for (query, must) in [
            ("", "record 99999"),
            ("?principal=carol", "jwt:corp:carol"),
            ("?tool=search&upstream=github", "github__search"),
            ("?outcome=timeout", "timeout"),
            (
                "?principal=key%3A&from=2026-11-26T10&to=2026-11-26T12",
                "2026-11-26T12:59",
            ),
        ] {
            let path = format!("/ui/audit{query}");
            let mut best = Duration::MAX;
            let mut page = None;
            for _ in 0..3 {
                let t = Instant::now();
                let r = call(admin, "GET", &path, &auth, "").await?;
                best = best.min(t.elapsed());
                page = Some(r);
            }
            let r = page.context("no page")?;
            assert_eq!(r.status, 200, "{path}: {r}");
            assert_eq!(r.body.matches("<details id=\"rec-").count(), 50, "{path}");
            assert!(r.body.contains(must), "{path}: {must} missing");
            assert!(r.body.contains("rel=\"next\""), "{path}: no next page link");
            assert!(
                best <= Duration::from_millis(200),
                "{path}: first page took {best:?}"
            );
        }
        // Every record a filter keeps, and only those: the second page of
        // outcome=timeout goes on from the first.
        let first = call(admin, "GET", "/ui/audit?outcome=timeout", &auth, "").await?;
        let next = first
            .body
            .split("href=\"")
            .find_map(|s| s.split('"').next().filter(|h| h.contains("before=")))
            .context("no older link")?
            .replace("&amp;", "&");
        let second = call(admin, "GET", &next, &auth, "").await?;
        let ids = |r: &Reply| -> Vec<u64> {
            r.body
                .split("&quot;request_id&quot;: &quot;")
                .skip(1)
                .filter_map(|s| u64::from_str_radix(&s[..16], 16).ok())
                .collect()
        };
        let all: Vec<u64> = ids(&first).into_iter().chain(ids(&second)).collect();
        let want: Vec<u64> = (0..100_000u64)
            .rev()
            .filter(|i| i % 25 == 0)
            .take(100)
            .collect();
        assert_eq!(all, want);
        // The chain, checked in the background, is intact in every file.
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let r = call(admin, "GET", "/ui/audit", &auth, "").await?;
            let chain = r
                .body
                .split("id=\"chain\"")
                .nth(1)
                .unwrap_or("")
                .split("</section>")
                .next()
                .unwrap_or("");
            if chain.matches("intact</span>").count() == 3 {
                assert!(
                    chain.contains("33334 records") && chain.contains("33332 records"),
                    "{chain}"
                );
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the chain was not checked in time: {chain}"
            );
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        Ok(())
    })
    .await
}

/// A store at `path` in which `local`'s `echo` (as `gw` has it) was approved
/// with another description and is held as changed.
fn held_store(gw: &TestGateway, path: &Path) -> Result<Map<String, Value>> {
    let up = gw
        .gateway()
        .upstreams()
        .into_iter()
        .find(|u| &**u.name() == "local")
        .context("local")?;
    let echo = up
        .lists()
        .context("lists")?
        .tools
        .iter()
        .find(|t| t.get("name") == Some(&json!("echo")))
        .cloned()
        .context("echo")?;
    let mut old = echo.clone();
    old.insert(
        "description".into(),
        json!("Echo (the approved definition)."),
    );
    let rules = Rules {
        new_tools: manifold_config::integrity::NewTools::Allow,
        trust_on_first_use: true,
    };
    let lists = |d: Map<String, Value>| manifold_catalog::UpstreamLists {
        tools: vec![d],
        prompts: Vec::new(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
    };
    let mut store = PinStore::new();
    store.apply(&decide(&store, "local", &lists(old), &rules, SystemTime::now()).update);
    store.apply(
        &decide(
            &store,
            "local",
            &lists(echo.clone()),
            &rules,
            SystemTime::now(),
        )
        .update,
    );
    StoreFile::new(path).modify(|s| *s = store)?;
    Ok(echo)
}

#[tokio::test]
async fn approvals_and_revocations_are_audited_with_the_admin_principal() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("pins")?;
        let store = dir.0.join("pins.json");
        let log = dir.0.join("audit.jsonl");
        let extra = format!(
            "[audit]\npath = {}\n\n[integrity]\nstore = {}\n",
            toml_string(&log.to_string_lossy()),
            toml_string(&store.to_string_lossy())
        );
        let (gw, admin) = start(&dir, &guarded(), &extra).await?;
        let echo = held_store(&gw, &store)?;
        let fp = manifold_integrity::Fingerprint::of(&echo).to_string();
        let (cookie, _) = log_in(admin, OPS_TOKEN).await?;
        let page = call(admin, "GET", "/ui/pins", &[("Cookie", &cookie)], "").await?;
        assert!(
            page.body.contains("Waiting for approval")
                && page.body.contains("Echo (the approved definition)."),
            "{page}"
        );
        let csrf = page.csrf().context("csrf")?;
        let own = format!("http://{admin}");
        let headers = [
            ("Cookie", cookie.as_str()),
            ("Origin", own.as_str()),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ];
        // A fingerprint the operator was not shown is not approved.
        let stale = format!("sha256:{}", "ab".repeat(32));
        let body = |fp: &str| {
            format!(
                "csrf={csrf}&upstream=local&kind=tool&name=echo&fingerprint={}",
                fp.replace(':', "%3A")
            )
        };
        let r = call(admin, "POST", "/ui/pins/approve", &headers, &body(&stale)).await?;
        assert_eq!(r.status, 409, "{r}");
        assert!(r.body.contains("look at it again"), "{r}");
        let r = call(admin, "POST", "/ui/pins/approve", &headers, &body(&fp)).await?;
        assert_eq!(r.status, 303, "{r}");
        let now = StoreFile::new(&store).load()?;
        let pin = now
            .pins()
            .find(|(i, _)| i.name == "echo")
            .context("no pin")?
            .1
            .clone();
        assert_eq!(pin.approved_by, "admin_token:ops");
        assert_eq!(now.pending_items().count(), 0);
        let r = call(
            admin,
            "POST",
            "/ui/pins/revoke",
            &headers,
            &format!("csrf={csrf}&upstream=local&kind=tool&name=echo"),
        )
        .await?;
        assert_eq!(r.status, 303, "{r}");
        assert!(StoreFile::new(&store).load()?.pins().next().is_none());
        // Both are in the audit log, with the admin principal.
        let text = std::fs::read_to_string(&log)?;
        let records: Vec<Value> = text
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        for method in ["pins/approve", "pins/revoke"] {
            let r = records
                .iter()
                .find(|r| r["method"] == method)
                .with_context(|| format!("no {method} record in {text}"))?;
            assert_eq!(r["principal"], "admin_token:ops", "{r}");
            assert_eq!(r["upstream"], "local");
            assert_eq!(r["original"], "echo");
            assert_eq!(r["arguments"]["fingerprint"], json!(fp), "{r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_overview_counts_recent_calls_and_view_as_says_why() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("overview")?;
        let (gw, admin) = start(&dir, &guarded(), "").await?;
        let client = gw.client();
        client.set_bearer(Some(CLIENT_KEY));
        client.initialize("2025-11-25", json!({})).await?;
        for i in 0..5 {
            let r = client
                .call_tool("local__echo", json!({"text": format!("{i}")}))
                .await?;
            let text = String::from_utf8_lossy(&r.body).to_string();
            assert!(text.contains(&format!("\"{i}\"")), "{text}");
        }
        let ops = format!("Bearer {OPS_TOKEN}");
        let auth = [("Authorization", ops.as_str())];
        let r = call(admin, "GET", "/ui", &auth, "").await?;
        let row = r
            .body
            .split("id=\"upstream-local\"")
            .nth(1)
            .unwrap_or("")
            .split("</tr>")
            .next()
            .unwrap_or("");
        assert!(row.contains("badge ok"), "{row}");
        assert!(
            row.contains(" µs<") || row.contains(" ms<"),
            "no latency: {row}"
        );
        assert!(row.contains("0.0 %"), "no error rate: {row}");
        assert!(
            r.body.contains("2025-11-25: 1"),
            "sessions by version: {}",
            r.body
        );

        let r = call(admin, "GET", "/ui/catalogue?as=key%3Aclient", &auth, "").await?;
        let hidden = r.body.split("id=\"hidden-h\"").nth(1).unwrap_or("");
        assert!(hidden.contains("local__crash"), "{r}");
        assert!(hidden.contains("policy"), "no reason: {hidden}");
        let tools = r
            .body
            .split("id=\"k-tool\"")
            .nth(1)
            .unwrap_or("")
            .split("</section>")
            .next()
            .unwrap_or("");
        assert!(
            tools.contains("local__echo") && !tools.contains("local__crash"),
            "{tools}"
        );
        let r = call(admin, "GET", "/ui/catalogue?as=team%3Ax", &auth, "").await?;
        assert!(r.body.contains("Cannot view as"), "{r}");
        let r = call(
            admin,
            "GET",
            "/ui/catalogue/tool/local__crash?as=key%3Aclient",
            &auth,
            "",
        )
        .await?;
        assert!(r.body.contains("does not see this tool"), "{r}");
        let r = call(admin, "GET", "/ui/catalogue?q=ECHO", &auth, "").await?;
        let tools = r
            .body
            .split("id=\"k-tool\"")
            .nth(1)
            .unwrap_or("")
            .split("</section>")
            .next()
            .unwrap_or("");
        assert!(
            tools.contains("local__echo") && !tools.contains("local__add"),
            "{tools}"
        );
        Ok(())
    })
    .await
}
