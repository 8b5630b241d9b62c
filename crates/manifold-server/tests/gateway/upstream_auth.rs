//! Upstream credentials against an authorization server stand-in
//! (`authserver`; the flows the conformance suite does not drive): `manifold
//! login`'s flow, then refresh under load with no failed call, the token
//! store across a restart, a revoked refresh token leading to `needs_login`
//! with the command that fixes it, the client-credentials grant at the pinned
//! issuer, token exchange, and a store that cannot be opened costing only its
//! own upstream. The attacker's side is `upstream_auth_attacks`.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Result;
use serde_json::json;

use crate::authserver::{audited_calls, config, login, temp_store, wait_state, Standin};
use crate::{bounded, text_of};
use manifold_testkit::harness::{toml_string, TestGateway};

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
                &format!(
                    "type = \"client_credentials\"\nclient_id = \"gateway\"\nclient_secret = \"gateway-secret\"\nissuer = {}",
                    toml_string(&s.base())
                ),
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
                &format!(
                    "type = \"token_exchange\"\nclient_id = \"gateway\"\nclient_secret = \"gateway-secret\"\nissuer = {}",
                    toml_string(&base)
                ),
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
        assert!(text.contains("refused the credential sent for this caller"), "{text}");
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
