//! The Tasks extension (`io.modelcontextprotocol/tasks`) through the running
//! gateway, with the demo's task store (`--modern --tasks`) behind it: the
//! extension advertised per caller's view, a task created, polled, updated and
//! cancelled under the client's own sealed id, another principal's attempts
//! answered as an unknown task (nothing reaches the upstream), the gates, the
//! audit records and metrics of a task's life, a task the request did not ask
//! for (refused, cancelled upstream), a reload that hides the tool,
//! a gateway restart, and three replicas (Redis, as `cluster_redis`) each
//! serving a step of one task.

use anyhow::{Context, Result};
use http::StatusCode;
use manifold_policy::hash_key;
use manifold_testkit::harness::{stateless_meta, toml_string, DemoHttp, McpClient, TestGateway};
use serde_json::{json, Value};
use std::time::Duration;

use crate::observe::{admin_get, audit_lines, sample, Scratch};
use crate::{bin, bounded, eventually};

const EXT: &str = "io.modelcontextprotocol/tasks";
const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

/// A 2026-07-28 request; `declare`: its capabilities declare the extension.
fn req(id: u64, method: &str, mut params: Value, declare: bool) -> Value {
    let caps = if declare {
        json!({"extensions": {EXT: {}}})
    } else {
        json!({})
    };
    params["_meta"] = stateless_meta(caps);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

struct Tasks {
    gw: TestGateway,
    demo: DemoHttp,
    dir: Scratch,
}

/// The configuration: `[auth]` keys alice and bob; alice sees everything, bob
/// only the upstream without tasks (`plain`); `extra_policy` goes first.
fn config(demo_url: &str, dir: &Scratch, extra: &str) -> String {
    format!(
        "[server]\nrequest_state_key = \"tasks-test-key-0123456789abcdef-0123456789\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n\n\
         [audit]\npath = {audit}\nfsync = \"always\"\n\n\
         [auth]\nallow_anonymous = false\n\n\
         [[auth.api_keys]]\nname = \"alice\"\nhash = \"{alice}\"\n\n\
         [[auth.api_keys]]\nname = \"bob\"\nhash = \"{bob}\"\n\n\
         {extra}\
         [[policy]]\nwho = [\"key:alice\"]\ntools = {{ allow = [\"*\"] }}\n\n\
         [[policy]]\nwho = [\"key:bob\"]\ntools = {{ allow = [\"plain__*\"] }}\n\n\
         [upstreams.tasks]\nurl = {url}\ntimeout = \"20s\"\n\n\
         [upstreams.plain]\ncommand = {bin}\nargs = [\"--modern\"]\n",
        audit = toml_string(&dir.0.join("audit.jsonl").to_string_lossy()),
        alice = hash_key(ALICE),
        bob = hash_key(BOB),
        url = toml_string(demo_url),
        bin = toml_string(bin()),
    )
}

async fn start(name: &str) -> Result<Tasks> {
    let dir = Scratch::new(name)?;
    let demo = DemoHttp::spawn_bin(bin(), &["--modern", "--tasks"]).await?;
    let gw = TestGateway::start(&config(&demo.url, &dir, "")).await?;
    Ok(Tasks { gw, demo, dir })
}

impl Tasks {
    fn client(&self, key: &str) -> McpClient {
        let c = self.gw.client();
        c.set_bearer(Some(key));
        c
    }
}

async fn send(c: &McpClient, body: &Value) -> Result<(StatusCode, Value)> {
    c.send_stateless(body, &[]).await
}

/// Calls `tool` declaring the extension: the task's client id.
async fn create(c: &McpClient, tool: &str, args: Value) -> Result<(String, Value)> {
    let (status, r) = send(
        c,
        &req(
            1,
            "tools/call",
            json!({"name": tool, "arguments": args}),
            true,
        ),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{r}");
    let result = r["result"].clone();
    assert_eq!(result["resultType"], "task", "{r}");
    let id = result["taskId"].as_str().context("taskId")?.to_string();
    Ok((id, result))
}

async fn get(c: &McpClient, id: &str) -> Result<Value> {
    let (status, r) = send(c, &req(2, "tasks/get", json!({"taskId": id}), true)).await?;
    assert_eq!(status, StatusCode::OK, "{r}");
    Ok(r)
}

/// Polls until the task leaves `working`.
async fn settled(c: &McpClient, id: &str) -> Result<Value> {
    eventually("the task settles", Duration::from_secs(10), || async {
        let r = get(c, id).await?;
        Ok((r["result"]["status"] != "working").then_some(r))
    })
    .await
}

/// What reached the demo's task store.
async fn stats(c: &McpClient) -> Result<Value> {
    let (_, r) = send(
        c,
        &req(9, "tools/call", json!({"name": "tasks__task_stats"}), false),
    )
    .await?;
    Ok(r["result"]["structuredContent"].clone())
}

#[tokio::test]
async fn a_task_is_created_polled_and_completed_under_the_clients_own_id() -> Result<()> {
    bounded(async {
        let t = start("tasks-life").await?;
        let alice = t.client(ALICE);
        let bob = t.client(BOB);
        // Advertised to the caller whose view holds the tasks upstream only.
        let (_, d) = send(&alice, &req(1, "server/discover", json!({}), false)).await?;
        assert_eq!(
            d["result"]["capabilities"]["extensions"][EXT],
            json!({}),
            "{d}"
        );
        assert!(d["result"]["capabilities"].get("tasks").is_none(), "{d}");
        let (_, d) = send(&bob, &req(1, "server/discover", json!({}), false)).await?;
        assert!(
            d["result"]["capabilities"].get("extensions").is_none(),
            "{d}"
        );

        let (id, created) = create(&alice, "tasks__task_slow", json!({"ms": 300})).await?;
        assert!(id.starts_with("t1."), "{created}");
        assert!(!created.to_string().contains("demo-task-"), "{created}");
        // Every other member is the upstream's.
        for k in [
            "status",
            "createdAt",
            "lastUpdatedAt",
            "ttlMs",
            "pollIntervalMs",
        ] {
            assert!(created.get(k).is_some(), "{k}: {created}");
        }
        let done = settled(&alice, &id).await?;
        let r = &done["result"];
        assert_eq!(r["status"], "completed", "{done}");
        assert_eq!(r["taskId"], id.as_str(), "{done}");
        assert_eq!(r["resultType"], "complete", "{done}");
        assert_eq!(r["result"]["content"][0]["text"], "slept 300 ms", "{done}");
        assert!(!done.to_string().contains("demo-task-"), "{done}");
        // The upstream was asked with its own id, as Mcp-Name too.
        let seen = stats(&alice).await?;
        assert!(
            seen["last_mcp_name"]
                .as_str()
                .is_some_and(|n| n.starts_with("demo-task-")),
            "{seen}"
        );
        // A non-declaring request: the optional tool runs synchronously.
        let (_, sync) = send(
            &alice,
            &req(
                3,
                "tools/call",
                json!({"name": "tasks__task_slow", "arguments": {"ms": 1}}),
                false,
            ),
        )
        .await?;
        assert_eq!(sync["result"]["content"][0]["text"], "slept 1 ms", "{sync}");
        assert!(sync["result"].get("taskId").is_none(), "{sync}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_task_is_answered_only_on_the_endpoint_that_made_it() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("tasks-endpoint")?;
        let demo = DemoHttp::spawn_bin(bin(), &["--modern", "--tasks"]).await?;
        let gw = TestGateway::start(&config(
            &demo.url,
            &dir,
            "[[endpoint]]\npath = \"/mcp/tasks\"\nupstreams = [\"tasks\"]\n\n",
        ))
        .await?;
        let on = |path: &str| {
            let c = McpClient::new(format!("http://{}{path}", gw.addr()));
            c.set_bearer(Some(ALICE));
            c
        };
        let (default, other) = (on("/mcp"), on("/mcp/tasks"));
        let (id, _) = create(&default, "tasks__task_ask", json!({})).await?;
        // The same principal, through the other endpoint: an unknown task, as
        // another principal's id would be.
        for method in ["tasks/get", "tasks/cancel"] {
            let (status, r) = send(&other, &req(3, method, json!({"taskId": id}), true)).await?;
            assert_eq!(status, StatusCode::OK, "{r}");
            assert_eq!(
                r["error"]["code"], -32602,
                "{method} through /mcp/tasks: {r}"
            );
        }
        let r = get(&default, &id).await?;
        assert_eq!(r["result"]["status"], "input_required", "untouched: {r}");
        // Made through /mcp/tasks, it is answered there.
        let (id, _) = create(&other, "tasks__task_slow", json!({"ms": 50})).await?;
        let r = get(&other, &id).await?;
        assert_eq!(r["result"]["taskId"], id.as_str(), "{r}");
        let (_, r) = send(&default, &req(4, "tasks/get", json!({"taskId": id}), true)).await?;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn another_principals_id_answers_as_an_unknown_task_and_reaches_nothing() -> Result<()> {
    bounded(async {
        let t = start("tasks-owner").await?;
        let alice = t.client(ALICE);
        let bob = t.client(BOB);
        let (id, _) = create(&alice, "tasks__task_ask", json!({})).await?;
        let before = stats(&alice).await?;
        let answer = |r: &Value| r["error"].to_string();
        let mut answers = Vec::new();
        for (method, extra) in [
            ("tasks/get", json!({})),
            ("tasks/cancel", json!({})),
            (
                "tasks/update",
                json!({"inputResponses": {"confirm-1": {"action": "accept"}}}),
            ),
        ] {
            let mut p = extra.clone();
            p["taskId"] = json!(id);
            let (status, stolen) = send(&bob, &req(4, method, p, true)).await?;
            assert_eq!(status, StatusCode::OK, "{stolen}");
            assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
            answers.push(answer(&stolen));
        }
        // The same answer as for a forged id and for garbage.
        let forged = format!("t1.{}", "A".repeat(id.len() - 3));
        for other in [forged.as_str(), "garbage", "demo-task-0-00000000"] {
            let (_, r) = send(&bob, &req(4, "tasks/get", json!({"taskId": other}), true)).await?;
            assert_eq!(answer(&r), answers[0], "{other}: {r}");
        }
        assert!(answers.iter().all(|a| a == &answers[0]), "{answers:?}");
        assert_eq!(stats(&alice).await?, before, "nothing reached the upstream");
        // The owner's task is untouched.
        let r = get(&alice, &id).await?;
        assert_eq!(r["result"]["status"], "input_required", "{r}");
        // Mcp-Name must name the id the body names (and is required).
        let body = req(5, "tasks/get", json!({"taskId": id}), true);
        for header in ["t1.other", ""] {
            let (status, r) = alice.send_stateless(&body, &[("mcp-name", header)]).await?;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{r}");
            assert_eq!(r["error"]["code"], -32020, "{r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_gates_refuse_before_an_id_is_read_and_removed_methods_are_named() -> Result<()> {
    bounded(async {
        let t = start("tasks-gates").await?;
        let alice = t.client(ALICE);
        for method in ["tasks/get", "tasks/update", "tasks/cancel"] {
            let p = json!({"taskId": "gate-test", "inputResponses": {}});
            let (status, r) = send(&alice, &req(1, method, p, false)).await?;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{method}: {r}");
            assert_eq!(r["error"]["code"], -32021, "{r}");
            assert_eq!(
                r["error"]["data"]["requiredCapabilities"]["extensions"][EXT],
                json!({}),
                "{r}"
            );
        }
        // A required-task tool for a non-declaring client: the upstream's -32021, 400.
        let (status, r) = send(
            &alice,
            &req(
                2,
                "tools/call",
                json!({"name": "tasks__task_required"}),
                false,
            ),
        )
        .await?;
        assert_eq!(
            (status, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32021)),
            "{r}"
        );
        for method in ["tasks/result", "tasks/list"] {
            let (status, r) = send(&alice, &req(3, method, json!({"taskId": "x"}), true)).await?;
            assert_eq!(status, StatusCode::NOT_FOUND, "{r}");
            assert_eq!(r["error"]["code"], -32601, "{r}");
        }
        // A listen asking for task notifications needs the extension too.
        let listen = json!({"notifications": {"taskIds": ["t1.x"]}});
        let (status, r) = send(&alice, &req(4, "subscriptions/listen", listen, false)).await?;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{r}");
        assert_eq!(r["error"]["code"], -32021, "{r}");
        // Session-era clients are told Manifold offers them no tasks.
        let s = t.client(ALICE);
        s.initialize("2025-11-25", json!({"extensions": {EXT: {}}}))
            .await?;
        let r = s.request("tasks/get", json!({"taskId": "x"})).await?;
        assert_eq!(r.error()?["code"], -32601, "{r}");
        let r = s
            .request(
                "tools/call",
                json!({"name": "tasks__task_slow", "arguments": {"ms": 1}, "task": {"ttl": 1000}}),
            )
            .await?;
        assert_eq!(r.error()?["code"], -32601, "{r}");
        // ... and their `initialize` cannot enable tasks upstream.
        let r = s.call_tool("tasks__task_required", json!({})).await?;
        assert_eq!(r.error()?["code"], -32021, "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn input_cancel_and_failure_reach_the_client_and_are_audited_once() -> Result<()> {
    bounded(async {
        let t = start("tasks-audit").await?;
        let alice = t.client(ALICE);
        // Input: update reaches the upstream byte for byte.
        let (ask, _) = create(&alice, "tasks__task_ask", json!({})).await?;
        let r = get(&alice, &ask).await?;
        assert_eq!(r["result"]["status"], "input_required", "{r}");
        assert_eq!(
            r["result"]["inputRequests"]["confirm-1"]["method"], "elicitation/create",
            "{r}"
        );
        let responses =
            json!({"confirm-1": {"action": "accept", "content": {"ok": true}, "x": 1e3}});
        let (status, ack) = send(
            &alice,
            &req(
                3,
                "tasks/update",
                json!({"taskId": ask, "inputResponses": responses}),
                true,
            ),
        )
        .await?;
        assert_eq!(status, StatusCode::OK, "{ack}");
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        assert_eq!(stats(&alice).await?["last_input_responses"], responses);
        let done = get(&alice, &ask).await?;
        assert_eq!(done["result"]["status"], "completed", "{done}");
        get(&alice, &ask).await?; // a second poll of the ended task
                                  // Cancel.
        let (slow, _) = create(&alice, "tasks__task_slow", json!({"ms": 60000})).await?;
        let (_, ack) = send(
            &alice,
            &req(4, "tasks/cancel", json!({"taskId": slow}), true),
        )
        .await?;
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        assert_eq!(get(&alice, &slow).await?["result"]["status"], "cancelled");
        // Failure.
        let (fail, _) = create(&alice, "tasks__task_fail", json!({})).await?;
        let r = get(&alice, &fail).await?;
        assert_eq!(r["result"]["status"], "failed", "{r}");
        assert_eq!(r["result"]["error"]["code"], -32603, "{r}");

        let admin = t.gw.gateway().admin_addr().context("admin")?;
        let (_, metrics) = admin_get(admin, "/metrics").await?;
        for (series, want) in [
            (r#"manifold_tasks_created_total{upstream="tasks"}"#, 3.0),
            (r#"manifold_tasks_in_flight{upstream="tasks"}"#, 0.0),
            (
                r#"manifold_tasks_ended_total{upstream="tasks",status="completed"}"#,
                1.0,
            ),
            (
                r#"manifold_tasks_ended_total{upstream="tasks",status="cancelled"}"#,
                1.0,
            ),
            (
                r#"manifold_tasks_ended_total{upstream="tasks",status="failed"}"#,
                1.0,
            ),
            (
                r#"manifold_requests_total{method="tasks/get",outcome="ok"}"#,
                5.0,
            ),
        ] {
            assert_eq!(
                sample(&metrics, series),
                Some(want),
                "{series} in\n{metrics}"
            );
        }
        let lines = audit_lines(&t.dir.0.join("audit.jsonl"))?;
        let about: Vec<&Value> = lines.iter().filter(|l| l.get("task").is_some()).collect();
        let summary: Vec<(String, String, String)> = about
            .iter()
            .map(|l| {
                (
                    l["method"].as_str().unwrap_or("").to_string(),
                    l["task"]["event"].as_str().unwrap_or("").to_string(),
                    l["outcome"].as_str().unwrap_or("").to_string(),
                )
            })
            .collect();
        let s = |m: &str, e: &str, o: &str| (m.to_string(), e.to_string(), o.to_string());
        assert_eq!(
            summary,
            vec![
                s("tools/call", "created", "task"),
                s("tasks/update", "relayed", "ok"),
                s("tools/call", "ended", "completed"),
                s("tools/call", "created", "task"),
                s("tasks/cancel", "relayed", "ok"),
                s("tools/call", "ended", "cancelled"),
                s("tools/call", "created", "task"),
                s("tools/call", "ended", "failed"),
            ],
            "{about:#?}"
        );
        // No poll is a record of its own; ends name the tool and carry a duration.
        assert!(lines.iter().all(|l| l["method"] != "tasks/get"));
        let ended = about
            .iter()
            .find(|l| l["outcome"] == "failed")
            .context("failed")?;
        assert_eq!(ended["error_code"], -32603, "{ended}");
        assert_eq!(ended["name"], "tasks__task_fail", "{ended}");
        assert_eq!(ended["principal"], "key:alice", "{ended}");
        assert!(ended["task"]["duration_us"].as_u64().is_some(), "{ended}");
        assert_eq!(about[0]["task"]["id"], about[2]["task"]["id"]);
        assert!(
            !lines.iter().any(|l| l.to_string().contains(&ask)),
            "ids are never logged"
        );
        let report = manifold_audit::verify(&[t.dir.0.join("audit.jsonl")])?;
        assert!(report.is_ok(), "{report}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_reload_that_hides_the_tool_refuses_input_but_the_owner_still_sees_and_stops_it(
) -> Result<()> {
    bounded(async {
        let t = start("tasks-reload").await?;
        let alice = t.client(ALICE);
        let (id, _) = create(&alice, "tasks__task_ask", json!({})).await?;
        let hide =
            "[[policy]]\nwho = [\"key:alice\"]\ntools = { deny = [\"tasks__task_ask\"] }\n\n";
        t.gw.gateway()
            .reload(TestGateway::config(&config(&t.demo.url, &t.dir, hide))?)
            .await?;
        let before = stats(&alice).await?;
        let update = json!({"taskId": id, "inputResponses": {"confirm-1": {"action": "accept"}}});
        let (_, r) = send(&alice, &req(1, "tasks/update", update.clone(), true)).await?;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        assert_eq!(
            r["error"]["message"],
            "Failed to retrieve task: Task not found"
        );
        assert_eq!(
            stats(&alice).await?,
            before,
            "the update did not reach the upstream"
        );
        // Manifold does not cancel the running task: it still waits for input.
        let r = get(&alice, &id).await?;
        assert_eq!(r["result"]["status"], "input_required", "{r}");
        // The owner can stop it.
        let (_, ack) = send(&alice, &req(2, "tasks/cancel", json!({"taskId": id}), true)).await?;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        assert_eq!(get(&alice, &id).await?["result"]["status"], "cancelled");
        // Shown again: input is relayed again (to a new task).
        t.gw.gateway()
            .reload(TestGateway::config(&config(&t.demo.url, &t.dir, ""))?)
            .await?;
        let (id, _) = create(&alice, "tasks__task_ask", json!({})).await?;
        let update = json!({"taskId": id, "inputResponses": {"confirm-1": {"action": "accept"}}});
        let (_, r) = send(&alice, &req(3, "tasks/update", update, true)).await?;
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn ids_survive_a_gateway_restart_and_a_forgotten_task_ends_expired() -> Result<()> {
    bounded(async {
        let t = start("tasks-restart").await?;
        let alice = t.client(ALICE);
        let (id, _) = create(&alice, "tasks__task_slow", json!({"ms": 60000})).await?;
        let (short, _) = create(
            &alice,
            "tasks__task_slow",
            json!({"ms": 60000, "ttl_ms": 300}),
        )
        .await?;
        let Tasks { gw, demo, dir } = t;
        gw.shutdown().await?;
        // Another process with the same key routes the old id.
        let gw = TestGateway::start(&config(&demo.url, &dir, "")).await?;
        let alice = gw.client();
        alice.set_bearer(Some(ALICE));
        let r = get(&alice, &id).await?;
        assert_eq!(r["result"]["status"], "working", "{r}");
        assert_eq!(r["result"]["taskId"], id.as_str(), "{r}");
        // The upstream forgot the short one after its ttl: relayed, recorded `expired`.
        let r = eventually(
            "the upstream forgets the task",
            Duration::from_secs(5),
            || async {
                let r = get(&alice, &short).await?;
                Ok(r.get("error").is_some().then_some(r))
            },
        )
        .await?;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        let expired: Vec<&Value> = lines.iter().filter(|l| l["outcome"] == "expired").collect();
        assert_eq!(expired.len(), 1, "{lines:#?}");
        assert_eq!(expired[0]["task"]["event"], "ended");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_task_created_through_one_replica_is_polled_updated_and_cancelled_through_others(
) -> Result<()> {
    bounded(async {
        let redis = crate::cluster_redis::Redis::start().await?;
        let demo = DemoHttp::spawn_bin(bin(), &["--modern", "--tasks"]).await?;
        let mut replicas = Vec::new();
        for _ in 0..3 {
            replicas.push(crate::cluster_redis::replica(&redis.url(), &demo.url, "").await?);
        }
        let [a, b, c] = [0, 1, 2].map(|i| replicas[i].client());
        // Input: created on A, seen on B, answered on C, finished as seen on B.
        let (id, _) = create(&a, "remote__task_ask", json!({})).await?;
        let r = get(&b, &id).await?;
        assert_eq!(r["result"]["status"], "input_required", "{r}");
        let update = json!({"taskId": id, "inputResponses": {"confirm-1": {"action": "accept"}}});
        let (_, ack) = send(&c, &req(3, "tasks/update", update, true)).await?;
        assert_eq!(ack["result"], json!({"resultType": "complete"}), "{ack}");
        let r = get(&b, &id).await?;
        assert_eq!(r["result"]["status"], "completed", "{r}");
        assert_eq!(r["result"]["taskId"], id.as_str(), "{r}");
        // Cancel: created on A, cancelled on B, seen cancelled on C.
        let (slow, _) = create(&a, "remote__task_slow", json!({"ms": 60000})).await?;
        let (_, ack) = send(&b, &req(4, "tasks/cancel", json!({"taskId": slow}), true)).await?;
        assert_eq!(ack["result"]["resultType"], "complete", "{ack}");
        assert_eq!(get(&c, &slow).await?["result"]["status"], "cancelled");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn rate_limits_apply_at_creation_only_and_a_running_task_holds_no_place() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("tasks-limits")?;
        let demo = DemoHttp::spawn_bin(bin(), &["--modern", "--tasks"]).await?;
        let limits = "[[rate_limit]]\nwho = [\"*\"]\ntools = [\"tasks__task_ask\"]\nrate = \"1/m\"\n\n\
                      [[rate_limit]]\nwho = [\"*\"]\ntools = [\"tasks__task_slow\"]\nconcurrency = 1\n\n";
        let gw = TestGateway::start(&config(&demo.url, &dir, limits)).await?;
        let alice = gw.client();
        alice.set_bearer(Some(ALICE));
        let (id, _) = create(&alice, "tasks__task_ask", json!({})).await?;
        let (status, r) = send(
            &alice,
            &req(2, "tools/call", json!({"name": "tasks__task_ask"}), true),
        )
        .await?;
        assert_eq!(status, StatusCode::TOO_MANY_REQUESTS, "{r}");
        assert_eq!(r["error"]["code"], -32060, "{r}");
        // Polls and input are not limited.
        for _ in 0..3 {
            assert_eq!(get(&alice, &id).await?["result"]["status"], "input_required");
        }
        // A concurrency cap counts the creating call: two long tasks run at once.
        create(&alice, "tasks__task_slow", json!({"ms": 60000})).await?;
        create(&alice, "tasks__task_slow", json!({"ms": 60000})).await?;
        Ok(())
    })
    .await
}

/// An upstream that answers with a task although the request did not declare
/// the extension (a broken server): the client gets an internal error naming
/// the upstream, never the upstream's task id, and Manifold cancels the task
/// upstream — for a 2026-07-28 request and a session-era one alike.
#[tokio::test]
async fn a_task_the_request_did_not_ask_for_is_refused_and_cancelled_upstream() -> Result<()> {
    bounded(async {
        let t = start("tasks-unasked").await?;
        let alice = t.client(ALICE);
        let call = json!({"name": "tasks__task_unasked"});
        let (status, r) = send(&alice, &req(1, "tools/call", call, false)).await?;
        assert_eq!(status, StatusCode::OK, "{r}");
        let session = t.client(ALICE);
        session.initialize("2025-11-25", json!({})).await?;
        let old = session.call_tool("tasks__task_unasked", json!({})).await?;
        for r in [r, old.response()?.clone()] {
            assert_eq!(r["error"]["code"], -32603, "{r}");
            let message = r["error"]["message"].as_str().unwrap_or_default();
            assert!(
                message.contains("upstream `tasks` answered with a task")
                    && message.contains("cancelled"),
                "{r}"
            );
            assert!(
                !r.to_string().contains("demo-task-"),
                "the upstream's task id reached the client: {r}"
            );
        }
        // Both tasks were made upstream, and both are cancelled there.
        let stats = eventually(
            "both tasks cancelled upstream",
            Duration::from_secs(10),
            || async {
                let s = stats(&alice).await?;
                Ok((s["tasks/cancel"] == 2).then_some(s))
            },
        )
        .await?;
        assert_eq!(stats["task_unasked"], 2, "{stats}");
        Ok(())
    })
    .await
}
