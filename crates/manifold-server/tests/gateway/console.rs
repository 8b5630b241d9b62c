//! The operator's console (`/ui` on the admin listener) from the server's side
//! and the attacker's: every page refuses no credential, a wrong token and an MCP
//! API key, and serves a login cookie, an admin bearer token and a caller
//! `[admin] who` names; a login ends with logout and with its token; forms need the
//! session's CSRF token and the console's own origin; every response carries the
//! security headers and no inline script or style; without admin credentials the
//! console takes the local admin token or the one-time link `serve` prints,
//! counts and audits failed logins and throttles a guesser; a login made with
//! a caller's JWT ends when the JWT expires; the audit view filters a 100,000-record log
//! (first page within 200 ms); approvals and revocations are audited with the admin
//! principal; the overview counts recent calls; "view as" says why items are hidden.
//!
//! Browser flows (chromium) are in `tests/e2e/tests/console.rs`. The pages'
//! contents (audit, pins, overview, catalogue) are tested in `console/pages.rs`.

mod pages;

use crate::admin::{admin_call as call, admin_call_as_is as call_as_is, AdminReply as Reply};
use crate::bounded;
use crate::observe::Scratch;
use anyhow::{Context, Result};
use manifold_policy::hash_key;
use manifold_testkit::harness::{demo_upstream_bin, toml_string, TestGateway};
use serde_json::json;
use std::net::SocketAddr;
use std::time::Duration;

const OPS_TOKEN: &str = "console-ops-token-0123456789abcdef";
const CLIENT_KEY: &str = "console-client-key-0123456789abcdef";
const PLATFORM_KEY: &str = "console-platform-key-0123456789abcdef";

/// Every page, and a word each one shows.
const PAGES: [(&str, &str); 8] = [
    ("/ui", "Upstreams"),
    ("/ui/", "Upstreams"),
    ("/ui/catalogue", "Left out of the merged lists"),
    ("/ui/catalogue/tool/local__echo", "Input schema"),
    ("/ui/audit", "No audit log file"),
    ("/ui/pins", "No pin store is configured"),
    ("/ui/connections", "No upstream has per-caller accounts"),
    ("/ui/config", "Effective configuration"),
];

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
        "listen = \"127.0.0.1:0\"\nwho = [\"group:platform\"]\n\
         failed_logins_per_minute = 1000\n\n\
         [[admin.tokens]]\nname = \"ops\"\nhash = \"{}\"\n",
        hash_key(OPS_TOKEN)
    )
}

/// Logs in with `token`: the cookie (`manifold_console=…`) and its login form
/// reply.
async fn log_in(admin: SocketAddr, token: &str) -> Result<(String, Reply)> {
    let form = call(admin, "GET", "/ui/login", &[], "").await?;
    let csrf = form
        .csrf()
        .with_context(|| format!("no csrf in the login form: {form}"))?;
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
                // An MCP client's key is not an admin credential, and is
                // told apart from a wrong token by nothing.
                (client.as_str(), 401),
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
        let (_, wrong) = log_in(admin, "wrong-token-0123456789abcdef").await?;
        assert_eq!((r.status, &r.body), (401, &wrong.body), "an oracle: {r}");
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

/// The path and query of `link` (`http://host:port/ui/login?code=…`).
fn path_of(link: &str) -> String {
    let rest = link.strip_prefix("http://").unwrap_or(link);
    rest.find('/')
        .map_or_else(String::new, |i| rest[i..].to_string())
}

#[tokio::test]
async fn without_admin_credentials_the_console_takes_the_local_token_or_its_one_time_link(
) -> Result<()> {
    bounded(async {
        let dir = Scratch::new("local-console")?;
        let audit = dir.0.join("audit.jsonl");
        let extra = format!(
            "[audit]\npath = {}\nfsync = \"always\"\n",
            toml_string(&audit.to_string_lossy())
        );
        let (gw, admin) = start(&dir, "listen = \"127.0.0.1:0\"", &extra).await?;
        // Nothing without a credential, on loopback too.
        let r = call_as_is(admin, "GET", "/ui", &[], "").await?;
        assert_eq!(r.status, 303, "{r}");
        assert!(
            r.header("location")
                .is_some_and(|l| l.starts_with("/ui/login")),
            "{r}"
        );
        let r = call_as_is(admin, "GET", "/ui/config", &[], "").await?;
        assert_eq!(r.status, 303, "{r}");

        // The link serve prints logs in once.
        let link = gw.gateway().console_login_link().context("a login link")?;
        let r = call_as_is(admin, "GET", &path_of(&link), &[], "").await?;
        assert_eq!(r.status, 303, "{r}");
        let cookie = r
            .header("set-cookie")
            .and_then(|c| c.split(';').next().map(str::to_string))
            .context("a cookie")?;
        let page = call_as_is(admin, "GET", "/ui", &[("Cookie", &cookie)], "").await?;
        assert_eq!(page.status, 200, "{page}");
        assert!(page.body.contains("admin_token:local"), "{page}");
        let again = call_as_is(admin, "GET", &path_of(&link), &[], "").await?;
        assert_eq!(again.status, 401, "a used link: {again}");
        assert!(again.header("set-cookie").is_none(), "{again}");
        assert!(
            gw.gateway().console_login_link().is_none(),
            "the link is void"
        );

        // The token in the form logs in too.
        let file = gw
            .gateway()
            .local_admin_token_file()
            .context("token file")?;
        let token = manifold_server::local_admin_token(file)?;
        let (cookie, r) = log_in(admin, &token).await?;
        assert_eq!(r.status, 303, "{r}");
        let r = call_as_is(admin, "GET", "/ui/pins", &[("Cookie", &cookie)], "").await?;
        assert_eq!(r.status, 200, "{r}");

        // A guesser gets LOGIN_FAILURES_PER_WINDOW tries (the used link
        // was one), at the form and as a bearer token alike, then 429 with
        // Retry-After; every try is audited, no token in it. The local
        // token itself is never locked out by someone else's failures.
        let limit = manifold_server::LOGIN_FAILURES_PER_WINDOW;
        for i in 1..limit - 1 {
            let (_, r) = log_in(admin, &format!("guess-{i}")).await?;
            assert_eq!(r.status, 401, "try {i}: {r}");
        }
        let guess = format!("Bearer {}", "9".repeat(64));
        let r = call_as_is(admin, "GET", "/config", &[("Authorization", &guess)], "").await?;
        assert_eq!(r.status, 401, "the last try: {r}");
        let (_, r) = log_in(admin, "one-more-guess").await?;
        assert_eq!(r.status, 429, "{r}");
        assert!(r.header("retry-after").is_some(), "{r}");
        let r = call_as_is(admin, "GET", "/config", &[("Authorization", &guess)], "").await?;
        assert_eq!(r.status, 429, "{r}");
        assert!(r.header("retry-after").is_some(), "{r}");
        let (_, r) = log_in(admin, &token).await?;
        assert_eq!(r.status, 303, "the holder of the local token: {r}");
        let bearer = format!("Bearer {token}");
        let r = call_as_is(admin, "GET", "/config", &[("Authorization", &bearer)], "").await?;
        assert_eq!(r.status, 200, "{r}");
        let lines = crate::observe::audit_lines(&audit)?;
        let logins: Vec<_> = lines
            .iter()
            .filter(|l| l["method"] == "console/login")
            .collect();
        let refused = logins.iter().filter(|l| l["outcome"] == "refused").count();
        assert_eq!(
            refused,
            limit as usize - 1,
            "the form's and the link's: {logins:?}"
        );
        assert!(logins
            .iter()
            .any(|l| l["outcome"] == "ok" && l["principal"] == "admin_token:local"));
        let text = std::fs::read_to_string(&audit)?;
        assert!(
            !text.contains(&token) && !text.contains(&path_of(&link)["/ui/login?code=".len()..]),
            "a secret in the audit log"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_console_login_with_a_callers_jwt_ends_when_the_jwt_expires() -> Result<()> {
    bounded(async {
        let idp = crate::issuers::Idp::start(&["corp"]).await?;
        let text = format!(
            "[upstreams.local]\ncommand = {}\n\n\
             [auth]\nresource = \"{aud}\"\n\n{jwt}clock_skew = \"0s\"\n\n\
             [admin]\nlisten = \"127.0.0.1:0\"\nwho = [\"group:platform\"]\n",
            toml_string(&demo_upstream_bin().to_string_lossy()),
            aud = crate::issuers::AUDIENCE,
            jwt = idp.jwt_section("corp"),
        );
        let gw = TestGateway::start(&text).await?;
        let admin = gw.gateway().admin_addr().context("admin")?;
        let jwt =
            idp.token_expiring("corp", "carol", &["platform"], crate::issuers::AUDIENCE, 3)?;
        let (cookie, r) = log_in(admin, &jwt).await?;
        assert_eq!(r.status, 303, "{r}");
        let r = call(admin, "GET", "/ui/config", &[("Cookie", &cookie)], "").await?;
        assert_eq!(r.status, 200, "{r}");
        // Past its exp (3 s), the login ends with it.
        let r = crate::eventually(
            "the login ends with its JWT",
            Duration::from_secs(10),
            || async {
                let r = call(admin, "GET", "/ui/config", &[("Cookie", &cookie)], "").await?;
                Ok((r.status != 200).then_some(r))
            },
        )
        .await?;
        assert_eq!(r.status, 303, "{r}");
        assert!(
            r.header("location").unwrap_or_default().contains("ended=1"),
            "{r}"
        );
        // A JWT without the group logs nobody in, and says no more than a
        // wrong token does.
        let outsider = idp.token_in("corp", "dave", &["dev"])?;
        let (_, r) = log_in(admin, &outsider).await?;
        let (_, w) = log_in(admin, "wrong").await?;
        assert_eq!((r.status, r.body.len()), (w.status, w.body.len()), "{r}");
        Ok(())
    })
    .await
}
