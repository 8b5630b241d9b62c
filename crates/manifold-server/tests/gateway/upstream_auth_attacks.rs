//! Upstream credentials from the attacker's side, each against the
//! `authserver` stand-in playing the attacker (an upstream that names its own
//! authorization server, metadata naming a loopback token endpoint, a token
//! endpoint that redirects, a stored record pointing at loopback, a
//! challenge naming another issuer, an authorization URL with a dangerous
//! scheme) and a victim stand-in that records whatever reaches it: the
//! gateway's `client_secret` and callers' tokens go only to the pinned
//! issuer, and nothing the configuration does not name is reached at a
//! loopback address.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use serde_json::json;

use crate::authserver::{
    config, login, login_with, temp_store, wait_state, wait_upstream, Seen, Standin,
};
use crate::{bounded, text_of};
use manifold_credentials::{Record, Store};
use manifold_testkit::harness::{toml_string, TestGateway};

const LIFE: Duration = Duration::from_secs(60);

/// `[upstreams.<name>]` at `url` with `auth` (no store needed).
fn upstream(name: &str, url: &str, auth: &str) -> String {
    format!(
        "[upstreams.{name}]\nurl = {}\ntimeout = \"5s\"\n\n[upstreams.{name}.auth]\n{auth}\n\n",
        toml_string(url)
    )
}

fn client(kind: &str, issuer: &str, extra: &str) -> String {
    format!(
        "type = \"{kind}\"\nclient_id = \"gateway\"\nclient_secret = \"gateway-secret\"\nissuer = {}\n{extra}",
        toml_string(issuer)
    )
}

const ADMIN: &str = "[admin]\nlisten = \"127.0.0.1:0\"\n";

/// Requests that carried a credential: a token request, HTTP Basic, the
/// secret or a caller's token anywhere.
fn credentials(seen: &[Seen]) -> Vec<Seen> {
    seen.iter()
        .filter(|s| {
            let auth = s.authorization.as_deref().unwrap_or_default();
            s.path.ends_with("/token")
                || s.path == "/reload"
                || auth.starts_with("Basic ")
                || auth.contains("user-")
                || s.body.contains("gateway-secret")
                || s.body.contains("user-")
        })
        .cloned()
        .collect()
}

fn last_error(up: &serde_json::Value) -> String {
    up["last_error"].as_str().unwrap_or_default().to_string()
}

#[tokio::test]
async fn an_upstream_naming_its_own_authorization_server_gets_no_secret_and_no_callers_token(
) -> Result<()> {
    bounded(async {
        // The operator's authorization server, pinned; the upstream names its
        // own, whose metadata points the token endpoint at a loopback service
        // (the admin plane's `/reload` in the report).
        let honest = Standin::start(LIFE).await?;
        let victim = Standin::start(LIFE).await?;
        let evil = Standin::start(LIFE).await?;
        let reload = format!("{}/reload", victim.base());
        evil.set(|k| k.token_endpoint = Some(reload.clone()));
        let cfg = format!(
            "{}{}[auth]\nallow_anonymous = true\n\n[[auth.introspection]]\nurl = {}\nclient_id = \"manifold\"\nclient_secret = \"s\"\nrequire_audience = false\n\n{ADMIN}",
            upstream("cc", &evil.url(), &client("client_credentials", &honest.base(), "")),
            upstream("te", &evil.url(), &client("token_exchange", &honest.base(), "")),
            toml_string(&format!("{}/introspect", honest.base())),
        );
        let gw = TestGateway::start(&cfg).await?;
        for name in ["cc", "te"] {
            let up = wait_upstream(&gw, name, "needs_login").await?;
            assert!(last_error(&up).contains("`auth.issuer` pins"), "{up}");
        }
        // A caller with a token the gateway accepts: nothing to exchange it for.
        let c = gw.client();
        c.set_bearer(Some("user-alice"));
        c.initialize("2025-11-25", json!({})).await?;
        let r = c.call_tool("te__whoami", json!({})).await?;
        assert!(r.error().is_ok(), "{r}");
        gw.shutdown().await?;
        assert_eq!(credentials(&evil.seen()), vec![], "the upstream got a credential");
        assert!(victim.seen().is_empty(), "the loopback service was reached: {:?}", victim.seen());
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_token_endpoint_the_configuration_does_not_name_is_not_reached() -> Result<()> {
    bounded(async {
        let victim = Standin::start(LIFE).await?;
        // Each is its own upstream and the issuer pinned for it.
        let to_victim = Standin::start(LIFE).await?;
        to_victim.set(|k| k.token_endpoint = Some(format!("{}/reload", victim.base())));
        // The same server under another origin (`localhost`, not `127.0.0.1`).
        let renamed = Standin::start(LIFE).await?;
        let by_name = format!("http://localhost:{}/token", renamed.addr.port());
        renamed.set(|k| k.token_endpoint = Some(by_name.clone()));
        let redirecting = Standin::start(LIFE).await?;
        redirecting.set(|k| k.redirect_token_to = Some(format!("{}/token", victim.base())));
        // Written in the configuration: reached, under any name.
        let configured = Standin::start(LIFE).await?;
        let configured_endpoint = format!("http://localhost:{}/token", configured.addr.port());
        let cc = |s: &Standin, extra: &str| client("client_credentials", &s.base(), extra);
        let cfg = format!(
            "{}{}{}{}{ADMIN}",
            upstream("to_victim", &to_victim.url(), &cc(&to_victim, "")),
            upstream("renamed", &renamed.url(), &cc(&renamed, "")),
            upstream("redirecting", &redirecting.url(), &cc(&redirecting, "")),
            upstream(
                "configured",
                &configured.url(),
                &cc(
                    &configured,
                    &format!("token_endpoint = {}", toml_string(&configured_endpoint))
                ),
            ),
        );
        let gw = TestGateway::start(&cfg).await?;
        for name in ["to_victim", "renamed"] {
            let up = wait_upstream(&gw, name, "needs_login").await?;
            assert!(
                last_error(&up).contains("auth.token_endpoint"),
                "{name}: {up}"
            );
        }
        let up = wait_upstream(&gw, "redirecting", "needs_login").await?;
        assert!(last_error(&up).contains("307"), "{up}");
        wait_upstream(&gw, "configured", "ready").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("configured__whoami", json!({})).await?;
        assert_eq!(text_of(r.result()?)?, "service:manifold", "{r}");
        gw.shutdown().await?;
        assert!(
            victim.seen().is_empty(),
            "the loopback service was reached: {:?}",
            victim.seen()
        );
        assert_eq!(credentials(&to_victim.seen()), vec![]);
        assert_eq!(
            credentials(&renamed.seen()),
            vec![],
            "reached under a name not configured"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_stored_token_endpoint_that_resolves_to_loopback_is_not_reached() -> Result<()> {
    bounded(async {
        let s = Standin::start(LIFE).await?;
        let victim = Standin::start(LIFE).await?;
        let store = temp_store("guard");
        // A record whose refresh goes to a name resolving to 127.0.0.1, on an
        // origin the configuration does not name.
        let cfg = config(
            &s,
            &store,
            "type = \"oauth\"\nclient_id = \"manifold-test\"",
        );
        let settings = TestGateway::config(&cfg)?
            .credentials
            .ok_or_else(|| anyhow::anyhow!("no store"))?;
        Store::new(&settings).save(
            "secured",
            &Record {
                access_token: "expired".into(),
                refresh_token: Some("rt-planted".into()),
                expires_at: Some(1),
                obtained_at: Some(0),
                client_id: "manifold-test".into(),
                auth_method: "none".into(),
                token_endpoint: format!("http://localhost:{}/token", victim.addr.port()),
                resource: s.url(),
                authorization_server: Some(s.base()),
                ..Record::default()
            },
        )?;
        let gw = TestGateway::start(&cfg).await?;
        let up = wait_state(&gw, "needs_login").await?;
        assert!(
            last_error(&up).contains("loopback") && last_error(&up).contains("auth.issuer"),
            "{up}"
        );
        gw.shutdown().await?;
        assert!(victim.seen().is_empty(), "reached: {:?}", victim.seen());
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_oauth_upstream_whose_challenge_names_another_issuer_needs_login() -> Result<()> {
    bounded(async {
        let s = Standin::start(LIFE).await?;
        let elsewhere = Standin::start(LIFE).await?;
        let store = temp_store("moved");
        login(&s, &store).await?;
        let oauth = |issuer: &str| {
            format!(
                "type = \"oauth\"\nclient_id = \"manifold-test\"\nissuer = {}",
                toml_string(issuer)
            )
        };
        // A token recorded for another issuer than the pinned one is not used.
        let gw = TestGateway::start(&config(&s, &store, &oauth(&elsewhere.base()))).await?;
        let up = wait_state(&gw, "needs_login").await?;
        assert!(last_error(&up).contains("`auth.issuer` pins"), "{up}");
        gw.shutdown().await?;
        // Pinned to the one it logged in at: used.
        let gw = TestGateway::start(&config(&s, &store, &oauth(&s.base()))).await?;
        wait_state(&gw, "ready").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("secured__whoami", json!({})).await?;
        assert_eq!(text_of(r.result()?)?, "alice", "{r}");
        // The upstream now names another authorization server and refuses the
        // token: needs_login, and nothing goes to the one it names.
        s.set(|k| k.servers = Some(vec![elsewhere.base()]));
        s.revoke_all();
        let r = c.call_tool("secured__whoami", json!({})).await?;
        assert!(format!("{r}").contains("manifold login secured"), "{r}");
        let up = wait_state(&gw, "needs_login").await?;
        assert!(
            last_error(&up).contains("another authorization server"),
            "{up}"
        );
        gw.shutdown().await?;
        assert!(elsewhere.seen().is_empty(), "{:?}", elsewhere.seen());
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn login_hands_a_browser_only_https_or_loopback_urls_and_records_its_issuer() -> Result<()> {
    bounded(async {
        let s = Standin::start(LIFE).await?;
        let store = temp_store("scheme");
        let auth = "type = \"oauth\"\nclient_id = \"manifold-test\"";
        for bad in [
            "javascript:alert(document.domain)",
            "file:///etc/passwd",
            "http://as.example.com/authorize",
            "ms-settings:privacy",
        ] {
            s.set(|k| k.authorization_endpoint = Some(bad.into()));
            let shown = AtomicBool::new(false);
            let e = login_with(&s, &store, auth, &|_, _| {
                shown.store(true, Ordering::SeqCst);
                false
            })
            .await
            .expect_err(bad);
            assert!(e.to_string().contains("not opening it"), "{bad}: {e}");
            assert!(!shown.load(Ordering::SeqCst), "{bad} was handed out");
        }
        // The default: the issuer it used is shown, then recorded.
        s.set(|k| k.authorization_endpoint = None);
        let base = s.base();
        let r = login_with(&s, &store, auth, &|issuer, url| {
            issuer == base && url.starts_with(&format!("{base}/authorize?"))
        })
        .await?;
        assert_eq!(r.authorization_server.as_deref(), Some(s.base().as_str()));
        let _ = std::fs::remove_dir_all(&store);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_callers_token_is_exchanged_only_where_it_already_is_or_where_configured() -> Result<()> {
    bounded(async {
        // The upstream and its authorization server; callers come from a
        // partner's introspection endpoint on another origin.
        let s = Standin::start(LIFE).await?;
        let partner = Standin::start(LIFE).await?;
        let introspect = format!("{}/introspect", partner.base());
        let cfg = |extra: &str| {
            format!(
                "{}[auth]\n\n[[auth.jwt]]\nname = \"corp\"\nissuer = {}\njwks_url = {}\n\n\
                 [[auth.introspection]]\nname = \"partner\"\nurl = {}\nclient_id = \"manifold\"\nclient_secret = \"s\"\nrequire_audience = false\n\n{ADMIN}",
                upstream("secured", &s.url(), &client("token_exchange", &s.base(), extra)),
                toml_string(&s.base()),
                toml_string(&format!("{}/jwks", s.base())),
                toml_string(&introspect),
            )
        };
        let gw = TestGateway::start(&cfg("")).await?;
        wait_state(&gw, "ready").await?;
        let c = gw.client();
        c.set_bearer(Some("user-alice"));
        c.initialize("2025-11-25", json!({})).await?;
        let r = c.call_tool("secured__whoami", json!({})).await?;
        let e = r.error()?;
        assert_eq!(e["code"], -32600, "{r}");
        assert!(
            e["message"].as_str().unwrap_or_default().contains("nothing was sent"),
            "{r}"
        );
        gw.shutdown().await?;
        assert_eq!(credentials(&s.seen()).iter().filter(|x| x.body.contains("user-")).count(), 0);
        // Named by the operator: exchanged.
        let gw = TestGateway::start(&cfg(&format!("exchange_from = [{}]", toml_string(&introspect))))
            .await?;
        wait_state(&gw, "ready").await?;
        let c = gw.client();
        c.set_bearer(Some("user-alice"));
        c.initialize("2025-11-25", json!({})).await?;
        let r = c.call_tool("secured__whoami", json!({})).await?;
        assert_eq!(text_of(r.result()?)?, "alice", "{r}");
        gw.shutdown().await?;
        Ok(())
    })
    .await
}
