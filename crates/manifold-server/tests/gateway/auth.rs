//! Identity at the front door (`[auth]`), end to end: the 401 challenge and the
//! protected resource metadata a client discovers from it, 403 for missing
//! scopes, a session bound to the principal that opened it (another principal
//! presenting its id gets 404, like an unknown id), the principal on audit
//! records, and a client's `Authorization` never reaching an upstream, in
//! either era.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::observe::{audit_lines, Scratch};
use crate::{bounded, Setup};
use manifold_policy::hash_key;
use manifold_testkit::harness::{stateless_request, toml_string};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

fn auth_section(extra: &str) -> String {
    format!(
        "[auth]\nscopes_supported = [\"mcp:tools\"]\n{extra}\n\n\
         [[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\nscopes = [\"mcp:tools\"]\n\n\
         [[auth.api_keys]]\nname = \"bob\"\nhash = \"{}\"\n",
        hash_key(ALICE),
        hash_key(BOB)
    )
}

fn init() -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {},
           "clientInfo": {"name": "t", "version": "0"}})
}

fn challenge(r: &manifold_testkit::harness::RawReply) -> String {
    r.headers
        .get(http::header::WWW_AUTHENTICATE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

#[tokio::test]
async fn a_request_without_credentials_learns_where_to_get_them() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: auth_section(""),
            ..Setup::default()
        }
        .start()
        .await?;
        let c = f.gw.client();
        let body = serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init()}),
        )?;
        let r = c.post_raw(body.clone(), &[]).await?;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{}", r.text());
        let www = challenge(&r);
        let url = www
            .split("resource_metadata=\"")
            .nth(1)
            .and_then(|s| s.split('"').next())
            .context("resource_metadata")?
            .to_string();
        assert!(www.starts_with("Bearer "), "{www}");
        assert!(
            !www.contains("error="),
            "no error code without credentials: {www}"
        );
        let base = format!("http://{}", f.gw.addr());
        assert_eq!(
            url,
            format!("{base}/.well-known/oauth-protected-resource/mcp")
        );

        // The metadata is served at the URL the challenge names, and at the bare form.
        for path in [
            "/.well-known/oauth-protected-resource/mcp",
            "/.well-known/oauth-protected-resource",
        ] {
            let raw = crate::observe::admin_get(f.gw.addr(), path).await?;
            assert_eq!(raw.0, 200, "{path}");
            let doc: Value = serde_json::from_str(&raw.1)?;
            assert_eq!(doc["resource"], format!("{base}/mcp"), "{doc}");
            assert_eq!(doc["bearer_methods_supported"], json!(["header"]), "{doc}");
            assert_eq!(doc["scopes_supported"], json!(["mcp:tools"]), "{doc}");
        }

        // A wrong key: invalid_token, and nothing in the reply echoes it.
        let r = c
            .post_raw(body.clone(), &[("authorization", "Bearer not-a-key")])
            .await?;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED);
        let www = challenge(&r);
        assert!(www.contains("error=\"invalid_token\""), "{www}");
        assert!(!www.contains("not-a-key") && !r.text().contains("not-a-key"));
        // A scheme other than Bearer: invalid_request.
        let r = c.post_raw(body, &[("authorization", "Basic YTpi")]).await?;
        assert!(
            challenge(&r).contains("error=\"invalid_request\""),
            "{}",
            challenge(&r)
        );

        c.set_bearer(Some(ALICE));
        c.initialize("2025-11-25", json!({})).await?;
        let r = c.call_tool("local__echo", json!({"text": "hi"})).await?;
        assert_eq!(r.result()?["content"][0]["text"], "hi", "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn missing_scopes_get_403_with_the_scope_needed() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: auth_section("required_scopes = [\"mcp:tools\"]"),
            ..Setup::default()
        }
        .start()
        .await?;
        let bob = f.gw.client();
        bob.set_bearer(Some(BOB));
        let r = bob.request("initialize", init()).await?;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{r}");
        let www = r
            .headers
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        assert!(www.contains("error=\"insufficient_scope\""), "{www}");
        assert!(www.contains("scope=\"mcp:tools\""), "{www}");
        let alice = f.gw.client();
        alice.set_bearer(Some(ALICE));
        alice.initialize("2025-11-25", json!({})).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_session_belongs_to_the_principal_that_opened_it() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("auth-audit")?;
        let audit = dir.0.join("audit.jsonl");
        let f = Setup {
            extra: format!(
                "{}\n[audit]\npath = {}\nfsync = \"always\"\n",
                auth_section(""),
                toml_string(&audit.to_string_lossy())
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        let alice = f.gw.client();
        alice.set_bearer(Some(ALICE));
        alice.initialize("2025-11-25", json!({})).await?;
        let id = alice.session_id().context("session id")?;

        // Bob presents Alice's session id: unknown, as if it never existed.
        let bob = f.gw.client();
        bob.set_bearer(Some(BOB));
        bob.set_session_id(Some(&id));
        bob.set_protocol_version(Some("2025-11-25"));
        let r = bob
            .call_tool("local__echo", json!({"text": "stolen"}))
            .await?;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");
        let unknown = f.gw.client();
        unknown.set_bearer(Some(BOB));
        unknown.set_session_id(Some("0".repeat(64).as_str()));
        unknown.set_protocol_version(Some("2025-11-25"));
        let r2 = unknown
            .call_tool("local__echo", json!({"text": "x"}))
            .await?;
        assert_eq!(
            (r2.status, r2.error()?["code"].clone()),
            (r.status, r.error()?["code"].clone())
        );
        assert_eq!(bob.delete().await?.status, StatusCode::NOT_FOUND);
        assert_eq!(bob.get(&[]).await?.status, StatusCode::NOT_FOUND);

        // Alice's session is untouched, and her calls are audited under her name.
        let r = alice
            .call_tool("local__echo", json!({"text": "mine"}))
            .await?;
        assert_eq!(r.result()?["content"][0]["text"], "mine", "{r}");
        let lines = audit_lines(&audit)?;
        let rec = lines
            .iter()
            .find(|l| l["arguments"]["text"] == "mine")
            .context("alice's record")?;
        assert_eq!(rec["principal"], "key:alice", "{rec}");
        assert!(
            !lines.iter().any(|l| l.to_string().contains(ALICE)),
            "a key in the audit log"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_clients_authorization_never_reaches_an_upstream() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: auth_section(""),
            ..Setup::default()
        }
        .start()
        .await?;
        let args = json!({"region": "eu", "query": "q"});
        // The control: called directly, the upstream does report the header.
        let direct = f.remote.client();
        direct.set_bearer(Some("direct-token"));
        direct.initialize("2025-11-25", json!({})).await?;
        let r = direct.call_tool("regional_lookup", args.clone()).await?;
        let seen = &r.result()?["structuredContent"]["receivedHeaders"];
        assert_eq!(seen["authorization"], "Bearer direct-token", "{r}");
        // Session era.
        let c = f.gw.client();
        c.set_bearer(Some(ALICE));
        c.initialize("2025-11-25", json!({})).await?;
        let r = c.call_tool("remote__regional_lookup", args.clone()).await?;
        let seen = &r.result()?["structuredContent"]["receivedHeaders"];
        assert_eq!(seen["mcp-name"], "regional_lookup", "{r}");
        assert!(seen.get("authorization").is_none(), "forwarded: {seen}");
        // 2026-07-28.
        let s = f.gw.client();
        s.set_bearer(Some(ALICE));
        let req = stateless_request(
            1,
            "tools/call",
            json!({"name": "remote__regional_lookup", "arguments": args}),
        );
        let (status, r) = s
            .send_stateless(&req, &[("mcp-param-region", "eu")])
            .await?;
        assert_eq!(status, StatusCode::OK, "{r}");
        let seen = &r["result"]["structuredContent"]["receivedHeaders"];
        assert_eq!(seen["mcp-name"], "regional_lookup", "{r}");
        assert!(seen.get("authorization").is_none(), "forwarded: {seen}");
        Ok(())
    })
    .await
}

/// `[metrics] principal_label`: requests counted by principal, or by the
/// principal's first group, within `max_principal_series`.
#[tokio::test]
async fn requests_are_counted_by_principal_when_asked() -> Result<()> {
    bounded(async {
        for (mode, want) in [("subject", "key:alice"), ("group", "none")] {
            let f = Setup {
                extra: format!(
                    "{}\n[admin]\nlisten = \"127.0.0.1:0\"\n\n[metrics]\nprincipal_label = \"{mode}\"\n",
                    auth_section("")
                ),
                ..Setup::default()
            }
            .start()
            .await?;
            let alice = f.gw.client();
            alice.set_bearer(Some(ALICE));
            alice.initialize("2025-11-25", json!({})).await?;
            alice.call_tool("local__echo", json!({"text": "counted"})).await?;
            let admin = f.gw.gateway().admin_addr().context("admin")?;
            let (_, metrics) = crate::observe::admin_get(admin, "/metrics").await?;
            let series = format!(
                r#"manifold_requests_by_principal_total{{principal="{want}",outcome="ok"}}"#
            );
            let n = crate::observe::sample(&metrics, &series).unwrap_or(0.0);
            assert!(n >= 2.0, "{mode}: {series} = {n}\n{metrics}");
            assert!(!metrics.contains(ALICE), "a key in the metrics");
        }
        Ok(())
    })
    .await
}
