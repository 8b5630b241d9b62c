//! Hot reload through the running gateway: a load loop on an unchanged
//! upstream sees no failure while upstreams are added, changed and removed and
//! a policy changes; a call to a removed upstream gets the documented error; an
//! invalid file changes nothing and `POST /reload` says why; a watched file is
//! reloaded when it changes; `list_changed` reaches exactly the sessions whose
//! view changed; a reload that would leave the listener in force open is
//! refused.

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::observe::{admin_request, sample, Scratch};
use crate::{bin, bounded, names_of, Setup};
use manifold_testkit::harness::{toml_string, McpClient, MessageStream, TestGateway};

/// Waits until `tool` answers through `c`, checking again on each
/// `tools/list_changed` its session's `stream` hears (each wait bounded by the
/// client's timeout); an earlier change's notification only costs a check.
async fn until_callable(c: &McpClient, stream: &mut MessageStream, tool: &str) -> Result<()> {
    loop {
        let r = c.call_tool(tool, json!({"text": "x"})).await;
        if r.is_ok_and(|r| r.result().is_ok()) {
            return Ok(());
        }
        stream
            .wait_for(|m| m["method"] == "notifications/tools/list_changed")
            .await
            .with_context(|| format!("{tool} never became callable"))?;
    }
}

fn extra_upstream() -> String {
    format!(
        "[upstreams.extra]\ncommand = {}\nargs = [\"--faults\"]\n",
        toml_string(bin())
    )
}

#[tokio::test]
async fn reloads_under_load_keep_unchanged_upstreams_serving() -> Result<()> {
    bounded(async {
        let base = Setup::default();
        let f = Setup::default().start().await?;
        let url = f.remote.url.clone();
        let gw = f.gw.gateway().clone();
        // The load: local__echo in a loop on its own session until told to stop.
        let stop = Arc::new(AtomicBool::new(false));
        let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let load = {
            let c = f.session().await?;
            let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
            tokio::spawn(async move {
                let mut n = 0u64;
                while !stop.load(Ordering::Relaxed) && n < 1_000_000 {
                    n += 1;
                    let r = c
                        .call_tool("local__echo", json!({"text": format!("{n}")}))
                        .await;
                    match r.as_ref().ok().and_then(|r| r.result().ok()) {
                        Some(v) if v["content"][0]["text"] == format!("{n}") => {
                            ok.fetch_add(1, Ordering::Relaxed)
                        }
                        _ => failed.fetch_add(1, Ordering::Relaxed),
                    };
                }
            })
        };
        let c = f.session().await?;
        let mut stream = c.open_get_stream().await?;
        let reload = |s: &Setup| TestGateway::config(&s.render(&url));

        // 1. Add an upstream.
        let added = Setup {
            extra: extra_upstream(),
            ..Setup::default()
        };
        let report = gw.reload(reload(&added)?).await?;
        assert_eq!(report.added, ["extra"]);
        assert!(
            report.removed.is_empty() && report.restarted.is_empty(),
            "{report:?}"
        );
        until_callable(&c, &mut stream, "extra__echo").await?;

        // 2. Change one (a new timeout): restarted beside the old, swapped in.
        let changed = Setup {
            remote: "timeout = \"21s\"".into(),
            extra: extra_upstream(),
            ..Setup::default()
        };
        let report = gw.reload(reload(&changed)?).await?;
        assert_eq!(report.restarted, ["remote"], "{report:?}");
        let r = c
            .call_tool("remote__echo", json!({"text": "after"}))
            .await?;
        assert_eq!(r.result()?["content"][0]["text"], "after", "{r}");

        // 3. Remove one: its tools answer as unknown, at once.
        let report = gw
            .reload(reload(&Setup {
                remote: "timeout = \"21s\"".into(),
                ..Setup::default()
            })?)
            .await?;
        assert_eq!(report.removed, ["extra"], "{report:?}");
        let r = c.call_tool("extra__echo", json!({"text": "x"})).await?;
        assert_eq!(r.error()?["code"], -32602, "{r}");
        assert!(!names_of(&c.list_all_tools().await?)
            .iter()
            .any(|n| n.starts_with("extra__")));

        // 4. A policy: what is allowed is still served.
        let policy = Setup {
            remote: "timeout = \"21s\"".into(),
            extra: "[[policy]]\nwho = [\"*\"]\ntools = { allow = [\"local__*\"] }\n".into(),
            ..Setup::default()
        };
        gw.reload(reload(&policy)?).await?;
        let r = c.call_tool("remote__echo", json!({"text": "x"})).await?;
        assert_eq!(r.error()?["code"], -32602, "hidden by the new policy: {r}");

        // And back to the start.
        gw.reload(reload(&base)?).await?;
        stop.store(true, Ordering::Relaxed);
        load.await?;
        let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
        assert_eq!(
            failed, 0,
            "{failed} calls to the unchanged upstream failed ({ok} ok)"
        );
        assert!(ok > 10, "the load loop made only {ok} calls");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_invalid_file_changes_nothing_and_a_watched_file_is_reloaded() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("reload")?;
        let file = dir.0.join("gateway.toml");
        let base = Setup {
            server: "watch_config = true".into(),
            extra: "[admin]\nlisten = \"127.0.0.1:0\"\n".into(),
            ..Setup::default()
        };
        let f = Setup {
            server: base.server.clone(),
            extra: base.extra.clone(),
            ..Setup::default()
        }
        .start()
        .await?;
        let url = f.remote.url.clone();
        let gw = f.gw.gateway().clone();
        gw.set_config_path(file.clone());
        let admin = gw.admin_addr().context("admin address")?;
        let c = f.session().await?;
        let mut stream = c.open_get_stream().await?;

        std::fs::write(
            &file,
            format!("{}\n[server]\nlisen = 1\n", base.render(&url)),
        )?;
        let (status, body) = admin_request(admin, "POST", "/reload").await?;
        assert_eq!(status, 400, "{body}");
        let v: Value = serde_json::from_str(&body)?;
        assert!(
            v["error"].as_str().unwrap_or_default().contains("server"),
            "{body}"
        );
        let r = c.call_tool("local__echo", json!({"text": "still"})).await?;
        assert_eq!(r.result()?["content"][0]["text"], "still");
        let (_, metrics) = admin_request(admin, "GET", "/metrics").await?;
        assert_eq!(
            sample(&metrics, "manifold_config_reloads_total{outcome=\"error\"}"),
            Some(1.0),
            "{metrics}"
        );

        // A valid file with an override: POST /reload applies it; the
        // listener's address cannot change live and is reported.
        let renamed = Setup {
            extra: format!(
                "{}\n[upstreams.local.overrides.echo]\nname = \"say\"\n",
                base.extra
            ),
            server: base.server.clone(),
            ..Setup::default()
        };
        std::fs::write(&file, renamed.render(&url))?;
        let (status, body) = admin_request(admin, "POST", "/reload").await?;
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body)?;
        assert!(
            v["needs_restart"]
                .as_array()
                .context("needs_restart")?
                .contains(&json!("server.listen")),
            "{body}"
        );
        let r = c
            .call_tool("local__say", json!({"text": "renamed"}))
            .await?;
        assert_eq!(r.result()?["content"][0]["text"], "renamed", "{r}");

        // The watched file: changed on disk, reloaded without being asked.
        let watched = Setup {
            extra: format!(
                "{}\n[upstreams.local.overrides.echo]\nname = \"speak\"\n",
                base.extra
            ),
            server: base.server.clone(),
            ..Setup::default()
        };
        std::fs::write(&file, watched.render(&url))?;
        until_callable(&c, &mut stream, "local__speak").await?;
        Ok(())
    })
    .await
}

/// A reload that changes the rules: only the sessions whose view changed hear
/// `list_changed`.
#[tokio::test]
async fn a_policy_reload_notifies_exactly_the_sessions_whose_view_changed() -> Result<()> {
    bounded(async {
        let setup = Setup {
            extra: crate::policy::config(),
            ..Setup::default()
        };
        let f = Setup {
            extra: setup.extra.clone(),
            ..Setup::default()
        }
        .start()
        .await?;
        let url = f.remote.url.clone();
        let ops = crate::policy::session(&f, Some(crate::policy::OPS)).await?;
        let ci = crate::policy::session(&f, Some(crate::policy::CI)).await?;
        let mut ops_stream = ops.open_get_stream().await?;
        let mut ci_stream = ci.open_get_stream().await?;
        // The ops rule now also denies local__sleep; ci's rules are untouched.
        let stricter = Setup {
            extra: setup.extra.replace(
                "deny = [\"local__crash\"]",
                "deny = [\"local__crash\", \"local__sleep\"]",
            ),
            ..Setup::default()
        };
        assert_ne!(stricter.extra, setup.extra);
        f.gw.gateway()
            .reload(TestGateway::config(&stricter.render(&url))?)
            .await?;
        let changed = |m: &Value| m["method"] == "notifications/tools/list_changed";
        ops_stream.wait_for(changed).await?;
        // ci's view did not change.
        ci_stream
            .nothing_within(Duration::from_millis(300), changed)
            .await?;
        assert!(!names_of(&ops.list_all_tools().await?).contains(&"local__sleep".to_string()));
        Ok(())
    })
    .await
}

/// A reload that restarts an upstream takes the resource subscriptions made
/// on the old connection to the new one.
#[tokio::test]
async fn a_restarted_upstream_keeps_its_resource_subscriptions() -> Result<()> {
    bounded(async {
        let f = Setup::default().start().await?;
        let url = f.remote.url.clone();
        let c = f.session().await?;
        let mut stream = c.open_get_stream().await?;
        c.request("resources/subscribe", json!({"uri": "demo://readme"}))
            .await?
            .result()?;
        let changed = Setup {
            local: "timeout = \"21s\"".into(),
            ..Setup::default()
        };
        let report =
            f.gw.gateway()
                .reload(TestGateway::config(&changed.render(&url))?)
                .await?;
        assert_eq!(report.restarted, ["local"], "{report:?}");
        let r = c
            .call_tool("local__touch", json!({"uri": "demo://readme"}))
            .await?;
        assert_ne!(
            r.result()?["isError"],
            true,
            "the new local has no subscription: {r}"
        );
        let update = stream
            .wait_for(|m| m["method"] == "notifications/resources/updated")
            .await?;
        assert_eq!(update["params"]["uri"], "demo://readme", "{update}");
        Ok(())
    })
    .await
}

/// New rules that hide a URI end the subscriptions to it (upstream too).
#[tokio::test]
async fn a_reload_that_hides_a_uri_ends_its_subscriptions() -> Result<()> {
    bounded(async {
        let f = Setup::default().start().await?;
        let url = f.remote.url.clone();
        let c = f.session().await?;
        c.request("resources/subscribe", json!({"uri": "demo://readme"}))
            .await?
            .result()?;
        let r = c
            .call_tool("local__touch", json!({"uri": "demo://readme"}))
            .await?;
        assert_ne!(r.result()?["isError"], true, "{r}");
        let hiding = Setup {
            extra: "[[policy]]\nwho = [\"*\"]\ntools = { allow = [\"*\"] }\n\
                    resources = { allow = [\"demo://item/*\"] }\n"
                .into(),
            ..Setup::default()
        };
        f.gw.gateway()
            .reload(TestGateway::config(&hiding.render(&url))?)
            .await?;
        let r = c
            .call_tool("local__touch", json!({"uri": "demo://readme"}))
            .await?;
        assert_eq!(
            r.result()?["isError"],
            true,
            "still subscribed upstream: {r}"
        );
        Ok(())
    })
    .await
}

/// A reload's exposure check reads the listener's address and `[server.tls]`
/// in force, never the file's (neither changes before a restart): a file that
/// drops `[auth]` while adding `client_ca`, or while moving the listener to
/// loopback, is refused, and the endpoint keeps asking for credentials.
#[tokio::test]
async fn a_reload_is_judged_by_the_listener_and_tls_in_force() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("reload-exposure")?;
        let key = "reload-client-key-0123456789abcdef";
        let server = "listen = \"0.0.0.0:0\"\nallowed_hosts = [\"*\"]";
        let upstream = format!(
            "[upstreams.local]\ncommand = {}\nargs = [\"--faults\"]\n",
            toml_string(bin())
        );
        let guarded = format!(
            "[server]\n{server}\n\n[auth]\n\n[[auth.api_keys]]\nname = \"c\"\nhash = \"{}\"\n\n{upstream}",
            manifold_policy::hash_key(key)
        );
        let gw = TestGateway::start(&guarded).await?;
        let file = dir.0.join("gateway.toml");
        gw.gateway().set_config_path(file.clone());
        // Readable files pass validation; a reload never loads them.
        let pem = |name: &str| -> Result<String> {
            let p = dir.0.join(name);
            std::fs::write(&p, "placeholder")?;
            Ok(toml_string(&p.to_string_lossy()))
        };
        let tls = format!(
            "[server.tls]\ncert = {}\nkey = {}\nclient_ca = {}\n",
            pem("cert.pem")?,
            pem("key.pem")?,
            pem("ca.pem")?
        );
        for (what, text) in [
            (
                "[auth] dropped, client_ca added",
                format!("[server]\n{server}\n\n{tls}\n{upstream}"),
            ),
            (
                "[auth] dropped, the listener moved to loopback",
                format!("[server]\nlisten = \"127.0.0.1:0\"\n\n{upstream}"),
            ),
        ] {
            std::fs::write(&file, &text)?;
            let err = gw.gateway().reload_from_file().await.expect_err(what);
            let err = err.to_string();
            assert!(
                err.contains("no authentication is configured") && err.contains("in force"),
                "{what}: {err}"
            );
        }
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}})
        .to_string();
        let r = gw.client().post_raw(init.clone(), &[]).await?;
        assert_eq!(r.status, 401, "still guarded");
        let bearer = format!("Bearer {key}");
        let r = gw
            .client()
            .post_raw(init, &[("authorization", bearer.as_str())])
            .await?;
        assert_eq!(r.status, 200);
        // A file that keeps [auth] reloads.
        std::fs::write(&file, &guarded)?;
        gw.gateway().reload_from_file().await?;
        Ok(())
    })
    .await
}
