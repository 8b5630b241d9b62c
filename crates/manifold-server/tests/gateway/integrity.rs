//! `[integrity]` from the attacker's side: an upstream that changes a tool's
//! description and schema mid-run (with `list_changed`), renames one and adds
//! one (the demo's `--misbehave rug-pull`). Under `mode = "quarantine"` the
//! changed and new tools leave every session's lists in both eras, calls to
//! them answer exactly as calls to unknown tools, are audited `quarantined`
//! and never reach the upstream (the demo counts its calls), the other tools
//! work throughout; an override cannot hide the change; an approval (admin
//! plane, or the store file as `manifold pins approve` writes it) brings a
//! tool back with its new definition, audited with the approver; a restart
//! keeps it all. Under `"warn"` nothing is withheld.

use std::path::Path;
use std::time::{Duration, SystemTime};

use anyhow::{anyhow, Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::admin::admin_call;
use crate::observe::{admin_get, audit_lines, sample, Scratch};
use crate::{bin, bounded, names_of, ok_text};
use manifold_integrity::{ItemKind, ItemRef, Selection, StoreFile, Wanted};
use manifold_testkit::harness::{
    stateless_meta, stateless_request, toml_string, DemoHttp, McpClient, TestGateway,
};

/// How long a change may take to reach the lists (a refetch, or the store
/// watched every 2 s).
pub(crate) const WITHIN: Duration = Duration::from_secs(15);

/// `POST /pins/approve` of everything `upstream` holds, on the admin listener
/// at `admin`; fails unless it answers 200.
pub(crate) async fn approve_upstream(admin: std::net::SocketAddr, upstream: &str) -> Result<()> {
    let r = admin_call(
        admin,
        "POST",
        "/pins/approve",
        &[("Content-Type", "application/json")],
        &format!(r#"{{"upstream": "{upstream}"}}"#),
    )
    .await?;
    anyhow::ensure!(r.status == 200, "{r}");
    Ok(())
}

fn config(dir: &Path, url: &str, mode: &str) -> String {
    format!(
        "[admin]\nlisten = \"127.0.0.1:0\"\n\n\
         [audit]\npath = {audit}\nfsync = \"always\"\n\n\
         [integrity]\nmode = \"{mode}\"\nstore = {store}\nnew_tools = \"quarantine\"\n\n\
         [upstreams.demo]\nurl = {url}\ntimeout = \"20s\"\n\n\
         [upstreams.demo.overrides.weather]\ndescription = \"Weather, as the operator describes it.\"\n",
        audit = toml_string(&dir.join("audit.jsonl").to_string_lossy()),
        store = toml_string(&dir.join("pins.json").to_string_lossy()),
        url = toml_string(url),
    )
}

async fn tool_names(c: &McpClient) -> Result<Vec<String>> {
    Ok(names_of(&c.list_all_tools().await?))
}

/// `tools/list` in the 2026-07-28 era.
async fn stateless_names(c: &McpClient) -> Result<Vec<String>> {
    let mut req = stateless_request(1, "tools/list", json!({}));
    req["params"]["_meta"] = stateless_meta(json!({}));
    let (status, v) = c.send_stateless(&req, &[]).await?;
    anyhow::ensure!(status == StatusCode::OK, "tools/list: {status} {v}");
    Ok(names_of(
        v["result"]["tools"]
            .as_array()
            .ok_or_else(|| anyhow!("no tools in {v}"))?,
    ))
}

/// A 2026-07-28 `tools/call`: (status, body).
async fn stateless_call(c: &McpClient, name: &str) -> Result<(StatusCode, Value)> {
    let mut req = stateless_request(
        7,
        "tools/call",
        json!({"name": name, "arguments": {"city": "Paris"}}),
    );
    req["params"]["_meta"] = stateless_meta(json!({}));
    c.send_stateless(&req, &[]).await
}

/// The calls the demo received, by name (asked through the gateway).
async fn demo_calls(c: &McpClient) -> Result<Value> {
    let r = c.call_tool("demo__rug_pull", json!({})).await?;
    Ok(r.result()?["structuredContent"]["calls"].clone())
}

/// A session's answer to `name`, without its id.
async fn error_of(c: &McpClient, name: &str) -> Result<Value> {
    let r = c.call_tool(name, json!({"city": "Paris"})).await?;
    let mut e = r.error().cloned().context("an error")?;
    if let Some(m) = e.get_mut("message") {
        *m = json!(m.as_str().unwrap_or_default().replace(name, "NAME"));
    }
    Ok(e)
}

async fn until_names(
    what: &str,
    c: &McpClient,
    check: impl Fn(&[String]) -> bool,
) -> Result<Vec<String>> {
    crate::eventually(what, WITHIN, || async {
        let names = tool_names(c).await?;
        Ok(check(&names).then_some(names))
    })
    .await
}

#[tokio::test]
async fn a_rug_pull_is_quarantined_until_approved_and_stays_so_across_a_restart() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("integrity")?;
        let demo = DemoHttp::spawn_bin(bin(), &["--misbehave", "rug-pull"]).await?;
        let toml = config(&dir.0, &demo.url, "quarantine");
        let gw = TestGateway::start(&toml).await?;
        let admin = gw.gateway().admin_addr().context("admin")?;
        let a = gw.session("2025-11-25", json!({})).await?;
        let modern = gw.client();
        let before = tool_names(&a).await?;
        for t in ["demo__weather", "demo__add", "demo__echo", "demo__rug_pull"] {
            anyhow::ensure!(before.contains(&t.to_string()), "{t} in {before:?}");
        }
        // First sight pinned everything (trust on first use) in the file.
        let store = dir.0.join("pins.json");
        crate::until("the first pins written", WITHIN, || {
            std::fs::read_to_string(&store).is_ok_and(|s| s.contains("\"weather\""))
        })
        .await?;
        ok_text(
            &a.call_tool("demo__weather", json!({"city": "Paris"}))
                .await?,
        )?;
        let unknown_before = error_of(&a, "demo__nope").await?;
        let mut stream = a.open_get_stream().await?;

        // The rug is pulled: weather changes, add becomes add_numbers,
        // exfiltrate appears.
        let pulled = a.call_tool("demo__rug_pull", json!({"pull": true})).await?;
        anyhow::ensure!(pulled.result()?["structuredContent"]["pulled"] == true);
        stream
            .wait_for(|m| m["method"] == "notifications/tools/list_changed")
            .await?;
        let after = until_names("add gone from the list", &a, |n| {
            !n.contains(&"demo__add".to_string())
        })
        .await?;
        for held in ["demo__weather", "demo__add_numbers", "demo__exfiltrate"] {
            anyhow::ensure!(!after.contains(&held.to_string()), "{held} held: {after:?}");
        }
        for kept in ["demo__echo", "demo__rug_pull", "demo__touch"] {
            anyhow::ensure!(after.contains(&kept.to_string()), "{kept} kept: {after:?}");
        }
        let modern_names = stateless_names(&modern).await?;
        anyhow::ensure!(
            !modern_names.contains(&"demo__weather".to_string())
                && modern_names.contains(&"demo__echo".to_string()),
            "2026-07-28 list: {modern_names:?}"
        );

        // A call to a held tool answers exactly as one to an unknown tool,
        // in both eras, and never reaches the upstream.
        anyhow::ensure!(error_of(&a, "demo__weather").await? == unknown_before);
        anyhow::ensure!(error_of(&a, "demo__exfiltrate").await? == unknown_before);
        let (s1, v1) = stateless_call(&modern, "demo__weather").await?;
        let (s2, v2) = stateless_call(&modern, "demo__nope").await?;
        anyhow::ensure!(s1 == s2, "{s1} vs {s2}");
        anyhow::ensure!(v1["error"]["code"] == v2["error"]["code"], "{v1} vs {v2}");
        ok_text(
            &a.call_tool("demo__echo", json!({"text": "still here"}))
                .await?,
        )?;
        let calls = demo_calls(&a).await?;
        anyhow::ensure!(
            calls["weather"] == 1,
            "weather reached the upstream: {calls}"
        );
        anyhow::ensure!(calls.get("exfiltrate").is_none(), "{calls}");

        // Audited as quarantined, counted, reported; still ready.
        let audit = dir.0.join("audit.jsonl");
        let lines = audit_lines(&audit)?;
        let held: Vec<&Value> = lines
            .iter()
            .filter(|l| l["outcome"] == "quarantined")
            .collect();
        anyhow::ensure!(
            held.len() == 3
                && held.iter().all(|l| l["error_code"] == -32602)
                && held.iter().any(|l| l["name"] == "demo__weather"),
            "quarantined records: {held:?}"
        );
        anyhow::ensure!(
            lines
                .iter()
                .filter(|l| l["name"] == "demo__nope")
                .all(|l| l["outcome"] == "refused"),
            "an unknown name stays refused"
        );
        let (_, metrics) = admin_get(admin, "/metrics").await?;
        let series = r#"manifold_quarantined_items{upstream="demo",kind="tool"}"#;
        anyhow::ensure!(
            sample(&metrics, series) == Some(3.0),
            "{series} in {metrics}"
        );
        let events =
            r#"manifold_quarantine_events_total{upstream="demo",kind="tool",reason="changed"}"#;
        anyhow::ensure!(sample(&metrics, events) == Some(1.0), "{events}");
        let (status, _) = admin_get(admin, "/readyz").await?;
        anyhow::ensure!(status == 200, "a quarantine is not an outage");
        let (_, ups) = admin_get(admin, "/upstreams").await?;
        let ups: Value = serde_json::from_str(&ups)?;
        let integrity = &ups["upstreams"][0]["integrity"];
        anyhow::ensure!(
            integrity["counts"]["tool"]["held"] == 3 && integrity["withheld"] == true,
            "/upstreams: {integrity}"
        );

        // The admin plane approves weather: back, with the new definition.
        let r = admin_call(
            admin,
            "POST",
            "/pins/approve",
            &[("Content-Type", "application/json")],
            r#"{"items": ["demo__weather"]}"#,
        )
        .await?;
        anyhow::ensure!(r.status == 200, "approve: {} {}", r.status, r.body);
        let approved: Value = serde_json::from_str(&r.body)?;
        anyhow::ensure!(approved["approved"][0]["name"] == "weather", "{approved}");
        until_names("weather back", &a, |n| {
            n.contains(&"demo__weather".to_string())
        })
        .await?;
        let weather = a
            .list_all_tools()
            .await?
            .into_iter()
            .find(|t| t["name"] == "demo__weather")
            .context("weather")?;
        anyhow::ensure!(
            weather["inputSchema"]["properties"]["note"].is_object(),
            "the new schema: {weather}"
        );
        anyhow::ensure!(
            weather["description"] == "Weather, as the operator describes it.",
            "the override still applies: {weather}"
        );
        ok_text(
            &a.call_tool("demo__weather", json!({"city": "Paris"}))
                .await?,
        )?;
        anyhow::ensure!(demo_calls(&a).await?["weather"] == 2);

        // `manifold pins approve` writes the file; the gateway picks it up.
        let file = StoreFile::new(&store);
        let exfiltrate = ItemRef::new("demo", ItemKind::Tool, "exfiltrate");
        file.modify(|s| {
            s.approve(
                &Selection::Items(vec![Wanted {
                    item: exfiltrate,
                    fingerprint: None,
                }]),
                "local:tester",
                SystemTime::now(),
            )
        })?
        .1?;
        until_names("exfiltrate approved from the file", &a, |n| {
            n.contains(&"demo__exfiltrate".to_string())
        })
        .await?;
        crate::until("both approvals audited", WITHIN, || {
            let lines = audit_lines(&audit).unwrap_or_default();
            let by = |p: &str, n: &str| {
                lines
                    .iter()
                    .any(|l| l["method"] == "pins/approve" && l["principal"] == p && l["name"] == n)
            };
            by("admin_token:local", "weather") && by("local:tester", "exfiltrate")
        })
        .await?;
        drop(stream);
        gw.shutdown().await?;

        // A restart keeps it: approved tools served, add_numbers still held.
        let gw = TestGateway::start(&toml).await?;
        let b = gw.session("2025-11-25", json!({})).await?;
        let names = until_names("served after the restart", &b, |n| {
            n.contains(&"demo__weather".to_string())
        })
        .await?;
        anyhow::ensure!(
            names.contains(&"demo__exfiltrate".to_string())
                && !names.contains(&"demo__add_numbers".to_string()),
            "after the restart: {names:?}"
        );
        anyhow::ensure!(
            b.call_tool("demo__add_numbers", json!({"a": 1, "b": 2}))
                .await?
                .error()
                .is_ok(),
            "add_numbers still held"
        );
        gw.shutdown().await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn warn_mode_serves_a_changed_tool_and_counts_it() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("integrity-warn")?;
        let demo = DemoHttp::spawn_bin(bin(), &["--misbehave", "rug-pull"]).await?;
        let gw = TestGateway::start(&config(&dir.0, &demo.url, "warn")).await?;
        let admin = gw.gateway().admin_addr().context("admin")?;
        let a = gw.session("2025-11-25", json!({})).await?;
        a.call_tool("demo__rug_pull", json!({"pull": true}))
            .await?
            .result()?;
        let names = until_names("add_numbers listed", &a, |n| {
            n.contains(&"demo__add_numbers".to_string())
        })
        .await?;
        anyhow::ensure!(names.contains(&"demo__weather".to_string()), "{names:?}");
        ok_text(
            &a.call_tool("demo__weather", json!({"city": "Paris"}))
                .await?,
        )?;
        let series = r#"manifold_quarantined_items{upstream="demo",kind="tool"}"#;
        crate::eventually("counted", WITHIN, || async {
            let (_, m) = admin_get(admin, "/metrics").await?;
            Ok((sample(&m, series) == Some(3.0)).then_some(()))
        })
        .await?;
        gw.shutdown().await?;
        Ok(())
    })
    .await
}

/// Without trust on first use, everything an upstream publishes waits for an
/// approval: its prompts and resource templates too. `prompts/get`,
/// `resources/read` through a held template and a completion of one answer
/// as for unknown items and are audited `quarantined`; approving the
/// upstream brings them all back.
#[tokio::test]
async fn without_trust_on_first_use_prompts_and_templates_wait_too() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("integrity-tofu")?;
        let demo = DemoHttp::spawn_bin(bin(), &[]).await?;
        let toml = config(&dir.0, &demo.url, "quarantine")
            .replace("new_tools = \"quarantine\"", "trust_on_first_use = false");
        let gw = TestGateway::start(&toml).await?;
        let admin = gw.gateway().admin_addr().context("admin")?;
        let a = gw.session("2025-11-25", json!({})).await?;
        anyhow::ensure!(tool_names(&a).await?.is_empty(), "every tool held");
        let prompts = a.request("prompts/list", json!({})).await?;
        anyhow::ensure!(prompts.result()?["prompts"] == json!([]), "{prompts:?}");
        let templates = a.request("resources/templates/list", json!({})).await?;
        anyhow::ensure!(
            templates.result()?["resourceTemplates"] == json!([]),
            "{templates:?}"
        );
        let held = a
            .request(
                "prompts/get",
                json!({"name": "demo__greet", "arguments": {"name": "A"}}),
            )
            .await?;
        let unknown = a
            .request(
                "prompts/get",
                json!({"name": "demo__nope", "arguments": {"name": "A"}}),
            )
            .await?;
        anyhow::ensure!(
            held.error()?["code"] == unknown.error()?["code"],
            "{held:?} vs {unknown:?}"
        );
        let read = a
            .request("resources/read", json!({"uri": "demo://item/1"}))
            .await?;
        anyhow::ensure!(
            read.error()?["data"]["uri"] == "demo://item/1",
            "answered as a resource not found: {read:?}"
        );
        let completion = a
            .request(
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": "demo://item/{id}"},
                       "argument": {"name": "id", "value": ""}}),
            )
            .await?;
        completion.error()?;
        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        let quarantined: Vec<&str> = lines
            .iter()
            .filter(|l| l["outcome"] == "quarantined")
            .filter_map(|l| l["method"].as_str())
            .collect();
        anyhow::ensure!(
            quarantined == ["prompts/get", "resources/read", "completion/complete"],
            "{quarantined:?}"
        );

        let r = admin_call(
            admin,
            "POST",
            "/pins/approve",
            &[("Content-Type", "application/json")],
            r#"{"upstream": "demo"}"#,
        )
        .await?;
        anyhow::ensure!(r.status == 200, "approve: {} {}", r.status, r.body);
        until_names("tools approved", &a, |n| {
            n.contains(&"demo__echo".to_string())
        })
        .await?;
        a.request("resources/read", json!({"uri": "demo://item/1"}))
            .await?
            .result()?;
        a.request(
            "prompts/get",
            json!({"name": "demo__greet", "arguments": {"name": "A"}}),
        )
        .await?
        .result()?;
        // A form cannot approve: the body must be JSON.
        let form = admin_call(
            admin,
            "POST",
            "/pins/approve",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            "all=true",
        )
        .await?;
        anyhow::ensure!(form.status == 415, "a form: {}", form.status);
        let nothing = admin_call(
            admin,
            "POST",
            "/pins/approve",
            &[("Content-Type", "application/json")],
            r#"{"items": ["demo__nope"]}"#,
        )
        .await?;
        anyhow::ensure!(nothing.status == 400, "{} {}", nothing.status, nothing.body);
        gw.shutdown().await?;
        Ok(())
    })
    .await
}

/// Two replicas with `[cluster] redis` and a store file each (no shared
/// filesystem): an approval through one's admin plane serves the tool on
/// both.
#[tokio::test]
async fn one_approval_serves_every_replica_through_redis() -> Result<()> {
    bounded(async {
        let redis = crate::cluster_redis::Redis::start().await?;
        let demo = DemoHttp::spawn_bin(bin(), &["--misbehave", "rug-pull"]).await?;
        let (dir_a, dir_b) = (Scratch::new("integrity-a")?, Scratch::new("integrity-b")?);
        let cluster = format!(
            "\n[cluster]\nsession_key = {}\nredis = {}\n",
            toml_string(crate::cluster_redis::KEY),
            toml_string(&redis.url())
        );
        let a = TestGateway::start(&(config(&dir_a.0, &demo.url, "quarantine") + &cluster)).await?;
        let b = TestGateway::start(&(config(&dir_b.0, &demo.url, "quarantine") + &cluster)).await?;
        let (ca, cb) = (
            a.session("2025-11-25", json!({})).await?,
            b.session("2025-11-25", json!({})).await?,
        );
        for (c, dir) in [(&ca, &dir_a), (&cb, &dir_b)] {
            let store = dir.0.join("pins.json");
            crate::until("the first pins written", WITHIN, || {
                std::fs::read_to_string(&store).is_ok_and(|s| s.contains("\"weather\""))
            })
            .await?;
            anyhow::ensure!(tool_names(c).await?.contains(&"demo__weather".to_string()));
        }
        ca.call_tool("demo__rug_pull", json!({"pull": true}))
            .await?
            .result()?;
        for c in [&ca, &cb] {
            until_names("weather held", c, |n| {
                !n.contains(&"demo__weather".to_string())
            })
            .await?;
        }
        let admin = a.gateway().admin_addr().context("admin")?;
        let r = admin_call(
            admin,
            "POST",
            "/pins/approve",
            &[("Content-Type", "application/json")],
            r#"{"items": ["demo__weather"]}"#,
        )
        .await?;
        anyhow::ensure!(r.status == 200, "approve: {} {}", r.status, r.body);
        until_names("weather back on the other replica", &cb, |n| {
            n.contains(&"demo__weather".to_string())
        })
        .await?;
        ok_text(
            &cb.call_tool("demo__weather", json!({"city": "Oslo"}))
                .await?,
        )?;
        let pins: Value =
            serde_json::from_str(&std::fs::read_to_string(dir_b.0.join("pins.json"))?)?;
        anyhow::ensure!(
            pins["upstreams"]["demo"]["approved"]["tool"]["weather"]["approved_by"]
                == "admin_token:local",
            "the approver recorded on the other replica: {pins}"
        );
        anyhow::ensure!(
            tool_names(&cb)
                .await?
                .iter()
                .all(|n| n != "demo__exfiltrate"),
            "only what was approved"
        );
        a.shutdown().await?;
        b.shutdown().await?;
        Ok(())
    })
    .await
}

/// Approves (`true`) or revokes `name` of `demo` in the store file at `store`,
/// as `manifold pins` next to a running replica does.
fn change_pin(store: &Path, name: &str, approve: bool) -> Result<()> {
    let item = ItemRef::new("demo", ItemKind::Tool, name);
    let file = StoreFile::new(store);
    if approve {
        let wanted = Selection::Items(vec![Wanted {
            item,
            fingerprint: None,
        }]);
        file.modify(|s| s.approve(&wanted, "local:tester", SystemTime::now()))?
            .1?;
    } else {
        file.modify(|s| s.revoke(&[item], "local:tester", SystemTime::now()))?
            .1?;
    }
    Ok(())
}

/// Whoever can read Redis, without the cluster's key, cannot read the
/// shared approvals; whoever can write it cannot undo a revocation by putting
/// a copy of the approval it revoked back into the shared log: neither under
/// a new ID (it was sealed for its own) nor under its own (it then follows a
/// higher one). Nor can it make a replica skip what follows by raising the
/// log's counter for a while. The replica that applied the revocation and one
/// that starts afterwards and reads the whole log both keep the tool held,
/// count the copies as `replayed`, and still apply the genuine approval that
/// follows them.
#[tokio::test]
async fn a_copy_of_a_revoked_approval_put_back_in_redis_approves_nothing() -> Result<()> {
    bounded(async {
        let redis = crate::cluster_redis::Redis::start().await?;
        let demo = DemoHttp::spawn_bin(bin(), &[]).await?;
        let cluster = format!(
            "\n[cluster]\nsession_key = {}\nredis = {}\n",
            toml_string(crate::cluster_redis::KEY),
            toml_string(&redis.url())
        );
        let replica = |dir: &Path| {
            config(dir, &demo.url, "quarantine").replace(
                "new_tools = \"quarantine\"",
                "new_tools = \"quarantine\"\ntrust_on_first_use = false",
            ) + &cluster
        };
        let dirs = [
            Scratch::new("integrity-log-a")?,
            Scratch::new("integrity-log-b")?,
            Scratch::new("integrity-log-c")?,
        ];
        let store_a = dirs[0].0.join("pins.json");
        let a = TestGateway::start(&replica(&dirs[0].0)).await?;
        let b = TestGateway::start(&replica(&dirs[1].0)).await?;
        let cb = b.session("2025-11-25", json!({})).await?;
        let echo = "demo__echo".to_string();
        crate::until("echo and add held in a's store", WITHIN, || {
            std::fs::read_to_string(&store_a)
                .is_ok_and(|s| s.contains("\"echo\"") && s.contains("\"add\""))
        })
        .await?;

        // An approval on a, shared with b; then its revocation.
        change_pin(&store_a, "echo", true)?;
        until_names("echo approved on b", &cb, |n| n.contains(&echo)).await?;
        change_pin(&store_a, "echo", false)?;
        until_names("echo revoked on b", &cb, |n| !n.contains(&echo)).await?;

        // The attacker copies the approval to the end of the log, under the
        // next ID and under its own.
        let client = redis::Client::open(redis.url())?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let log: Vec<Vec<u8>> = redis::cmd("LRANGE")
            .arg("manifold:log:pins")
            .arg(0)
            .arg(-1)
            .query_async(&mut conn)
            .await?;
        // The entries are sealed: a Redis reader sees no definition, no
        // approver. The approval is the first entry, the revocation the second.
        anyhow::ensure!(log.len() == 2, "{} entries", log.len());
        for entry in &log {
            let text = String::from_utf8_lossy(entry);
            anyhow::ensure!(
                !text.contains("echo") && !text.contains("local:tester"),
                "an entry in clear: {text}"
            );
        }
        let approval = log[0].clone();
        let space = approval
            .iter()
            .position(|b| *b == b' ')
            .context("an entry is `ID SEALED`")?;
        for copy in [None, Some(approval.clone())] {
            let next: u64 = redis::cmd("INCR")
                .arg("manifold:log:pins:seq")
                .query_async(&mut conn)
                .await?;
            let copy = copy.unwrap_or_else(|| {
                let mut c = next.to_string().into_bytes();
                c.extend_from_slice(&approval[space..]);
                c
            });
            let _: i64 = redis::cmd("RPUSH")
                .arg("manifold:log:pins")
                .arg(copy)
                .query_async(&mut conn)
                .await?;
        }

        // It raises the counter far ahead long enough for b to look (the log
        // is read every 2 s), then puts it back: b must not skip what follows.
        let seq: u64 = redis::cmd("GET")
            .arg("manifold:log:pins:seq")
            .query_async(&mut conn)
            .await?;
        for value in [1_000_000_000_000, seq] {
            let _: () = redis::cmd("SET")
                .arg("manifold:log:pins:seq")
                .arg(value)
                .query_async(&mut conn)
                .await?;
            if value != seq {
                tokio::time::sleep(Duration::from_millis(2500)).await;
            }
        }

        // A genuine approval after all that: once a replica serves it, it has
        // read past the copies.
        change_pin(&store_a, "add", true)?;
        let add = "demo__add".to_string();
        let names = until_names("add approved on b", &cb, |n| n.contains(&add)).await?;
        anyhow::ensure!(!names.contains(&echo), "b approved echo again: {names:?}");
        anyhow::ensure!(crate::cluster_bus::rejected(&b, "replayed").await? >= 1);

        let c = TestGateway::start(&replica(&dirs[2].0)).await?;
        let cc = c.session("2025-11-25", json!({})).await?;
        let names = until_names("add approved on c", &cc, |n| n.contains(&add)).await?;
        anyhow::ensure!(!names.contains(&echo), "c approved echo again: {names:?}");
        anyhow::ensure!(crate::cluster_bus::rejected(&c, "replayed").await? >= 2);
        for gw in [a, b, c] {
            gw.shutdown().await?;
        }
        Ok(())
    })
    .await
}
