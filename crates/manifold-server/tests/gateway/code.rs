//! Code mode (`discovery = "code"`) through the running gateway, in both
//! eras, from the caller's and the attacker's side: `tools/list` holds
//! `search_tools` and `run_script`; a script searches and composes tools, and
//! each of its calls is a direct `tools/call` through the chain — the
//! caller's view, validation, `[confirm]` on the script's stream — with its
//! own audit record (`via`, the script's SHA-256) beside the script's; a
//! hostile script ends at its named limit while a direct call still works;
//! cancelling the script cancels the call in flight; the audit chain
//! verifies after all of it.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::observe::{audit_lines, Scratch};
use crate::{bounded, names_of, text_of, Fixture, Setup};
use manifold_testkit::harness::{stateless_meta, stateless_request, toml_string, McpClient};

/// `/mcp/code`: code mode over everything but `*__fail`, `local__echo`
/// always listed; `[confirm]` on `local__add`; the audit log in `dir`.
async fn start(dir: &Scratch, code: &str) -> Result<Fixture> {
    let audit = dir.0.join("audit.jsonl");
    Setup {
        extra: format!(
            "[[endpoint]]\npath = \"/mcp/code\"\ndiscovery = \"code\"\n\
             always_visible = [\"local__echo\"]\ntools = {{ deny = [\"*__fail\"] }}\n\n\
             [confirm]\ntools = [\"local__add\"]\nwithout_elicitation = \"allow\"\n\n\
             [code]\n{code}\n\n\
             [audit]\npath = {}\nfsync = \"always\"\n",
            toml_string(&audit.to_string_lossy())
        ),
        ..Setup::default()
    }
    .start()
    .await
}

fn at(f: &Fixture) -> McpClient {
    McpClient::new(format!("http://{}/mcp/code", f.gw.addr()))
}

/// `run_script` with `script` (and `inputs`): the JSON-RPC response, in the
/// session era on `c` (a session) or stateless.
async fn run(c: &McpClient, stateless: bool, script: &str, inputs: Value) -> Result<Value> {
    let args = json!({"script": script, "inputs": inputs});
    if stateless {
        let (status, body) = c
            .send_stateless(
                &stateless_request(
                    7,
                    "tools/call",
                    json!({"name": "run_script", "arguments": args}),
                ),
                &[],
            )
            .await?;
        anyhow::ensure!(status == StatusCode::OK, "{status} {body}");
        return Ok(body);
    }
    Ok(c.call_tool("run_script", args).await?.response()?.clone())
}

/// A 2026-07-28 `run_script` of `script` from a client that can be asked
/// (elicitation), with `extra` params (a retry's `requestState` and answers).
fn with_elicitation(script: &str, extra: Value) -> Value {
    let mut params = json!({"name": "run_script", "arguments": {"script": script},
                            "_meta": stateless_meta(json!({"elicitation": {}}))});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})
}

/// The tool error text of a script's response (it must be one).
fn failure(r: &Value) -> Result<String> {
    anyhow::ensure!(r["result"]["isError"] == true, "not a tool error: {r}");
    Ok(text_of(&r["result"])?.to_string())
}

const COMPOSE: &str = r#"def main(inputs):
    found = search('add two numbers', limit = 3)
    names = [t['name'] for t in found]
    print('found', len(names))
    s = call('local__add', {'a': inputs['a'], 'b': 2})
    e = call('remote__echo', {'text': 'hi'})
    return {'names': names, 'sum': s['structuredContent']['sum'], 'echo': e['content'][0]['text']}
"#;

#[tokio::test]
async fn a_script_searches_and_composes_tools_in_both_eras_each_call_audited() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-compose")?;
        let f = start(&dir, "").await?;
        for stateless in [false, true] {
            let c = if stateless {
                at(&f)
            } else {
                let c = at(&f);
                c.initialize("2025-11-25", json!({})).await?;
                c
            };
            let tools = if stateless {
                let (_, body) = c
                    .send_stateless(&stateless_request(1, "tools/list", json!({})), &[])
                    .await?;
                body["result"]["tools"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            } else {
                c.list_all_tools().await?
            };
            assert_eq!(
                names_of(&tools),
                ["search_tools", "run_script", "local__echo"]
            );
            let def = &tools[1];
            assert!(
                def["description"]
                    .as_str()
                    .unwrap_or("")
                    .contains("def main"),
                "the description teaches the dialect with an example: {def}"
            );
            assert!(def["outputSchema"]["required"].is_array());
            let r = run(&c, stateless, COMPOSE, json!({"a": 40})).await?;
            let result = &r["result"];
            assert_ne!(result["isError"], true, "{r}");
            let value = &result["structuredContent"]["value"];
            assert_eq!(value["sum"], 42.0, "{r}");
            assert!(
                value["names"]
                    .as_array()
                    .is_some_and(|n| n.contains(&json!("local__add"))),
                "{r}"
            );
            assert_eq!(result["structuredContent"]["calls"], 2);
            assert_eq!(result["structuredContent"]["log"], json!(["found 3"]));
            // The text is the value as JSON, for clients that read text only.
            let text: Value = serde_json::from_str(text_of(result)?)?;
            assert_eq!(&text, value);
            if stateless {
                assert_eq!(result["resultType"], "complete");
            }
        }
        // One record per inner call (via run_script, the script's digest),
        // and one for each script with its calls and steps.
        let digest = manifold_code::digest(COMPOSE);
        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        let inner: Vec<&Value> = lines.iter().filter(|l| l["via"] == "run_script").collect();
        assert_eq!(inner.len(), 4, "{lines:?}");
        for l in &inner {
            assert_eq!(l["script"], json!({"sha256": digest}), "{l}");
            assert_eq!(l["endpoint"], "/mcp/code");
            assert!(l["upstream"].is_string(), "{l}");
        }
        let scripts: Vec<&Value> = lines.iter().filter(|l| l["name"] == "run_script").collect();
        assert_eq!(scripts.len(), 2);
        for s in scripts {
            assert_eq!(s["script"]["sha256"], digest.as_str());
            assert_eq!(s["script"]["calls"], 2);
            assert!(s["script"]["steps"].as_u64().is_some_and(|n| n > 0), "{s}");
            assert_eq!(s["outcome"], "ok");
        }
        let report = manifold_audit::verify(&[dir.0.join("audit.jsonl")])?;
        assert!(report.is_ok(), "{report}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn every_inner_call_is_authorized_and_validated_as_a_direct_call() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-authz")?;
        let f = start(&dir, "").await?;
        let c = at(&f);
        c.initialize("2025-11-25", json!({})).await?;
        // Outside the view, under any spelling: the script fails naming it,
        // and nothing reaches an upstream.
        for name in ["remote__fail", "fail", "nothing__here"] {
            let script = format!("def main():\n  return call('{name}', {{}})\n");
            let text = failure(&run(&c, false, &script, Value::Null).await?)?;
            assert!(text.contains(name) && text.contains("line 2"), "{text}");
        }
        // A meta-tool, run_script itself among them, is never called.
        for name in ["run_script", "search_tools", "call_tool"] {
            let script = format!("def main():\n  return call('{name}', {{'script': 'x'}})\n");
            let text = failure(&run(&c, false, &script, Value::Null).await?)?;
            assert!(text.contains("meta-tools"), "{text}");
        }
        // Invalid arguments: the tool error the direct call gets, as a value.
        let script = "def main():\n  return call('remote__add', {'a': 'x'})\n";
        let r = run(&c, false, script, Value::Null).await?;
        let direct = c.call_tool("remote__add", json!({"a": "x"})).await?;
        assert_eq!(
            r["result"]["structuredContent"]["value"],
            direct.response()?["result"]
        );
        assert_eq!(r["result"]["structuredContent"]["value"]["isError"], true);
        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        let reached: Vec<&Value> = lines
            .iter()
            .filter(|l| l["via"] == "run_script" && !l["upstream"].is_null())
            .collect();
        assert!(
            reached.is_empty(),
            "a refused call reached an upstream: {reached:?}"
        );
        // Bad arguments to run_script itself: a tool error saying the shape.
        let r = c.call_tool("run_script", json!({"code": "x"})).await?;
        assert!(failure(r.response()?)?.contains("\"script\""));
        let r = run(&c, false, "def main(:\n", Value::Null).await?;
        let text = failure(&r)?;
        assert!(
            text.contains("does not parse") && text.contains("line 1"),
            "{text}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn hostile_scripts_end_at_their_named_limits_while_direct_calls_go_on() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-limits")?;
        let f = start(
            &dir,
            "timeout = \"3s\"\nmax_steps = 200000\nmax_calls = 3\nmax_result_bytes = 10000\n\
             max_script_bytes = 4000\nmax_memory = 16000000\nworkers = 8\n",
        )
        .await?;
        let c = at(&f);
        c.initialize("2025-11-25", json!({})).await?;
        let cases: Vec<(String, &str)> = vec![
            (
                "def main():\n  n = 0\n  for i in range(1000000000):\n    n += i\n  return n\n"
                    .into(),
                "max_steps",
            ),
            (
                "def f(n):\n  return f(n + 1)\ndef main():\n  return f(0)\n".into(),
                "recursion",
            ),
            (
                "def main():\n  s = 'x' * 2000000000\n  return len(s)\n".into(),
                "max_memory",
            ),
            (
                "def main():\n  s = 'x'\n  for i in range(40):\n    s = s + s\n  return len(s)\n"
                    .into(),
                "max_memory",
            ),
            (
                "def main():\n  for i in range(100):\n    call('local__echo', {'text': 'x'})\n"
                    .into(),
                "max_calls",
            ),
            (
                "def main():\n  for i in range(100000):\n    print('y' * 1000)\n".into(),
                "max_log_bytes",
            ),
            (
                "def main():\n  for i in range(100):\n    search('echo')\n".into(),
                "max_calls bounds searches",
            ),
            (
                "def main():\n  return 'z' * 20000\n".into(),
                "max_result_bytes",
            ),
            (
                format!("def main():\n  return 1\n#{}\n", "p".repeat(5000)),
                "max_script_bytes",
            ),
            (
                "def main():\n  return call('remote__sleep', {'ms': 20000})\n".into(),
                "timeout",
            ),
        ];
        let runs = cases
            .iter()
            .map(|(script, _)| run(&c, false, script, Value::Null));
        let direct = async {
            // Other callers keep working while the scripts run.
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            c.call_tool("remote__echo", json!({"text": "still here"}))
                .await
        };
        let (answers, direct) = tokio::join!(futures_util::future::join_all(runs), direct);
        assert_eq!(text_of(direct?.result()?)?, "still here");
        for ((script, limit), r) in cases.iter().zip(answers) {
            let text = failure(&r?)?;
            assert!(text.contains(limit), "{limit}: {text}\n{script}");
        }
        let report = manifold_audit::verify(&[dir.0.join("audit.jsonl")])?;
        assert!(report.is_ok(), "{report}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_confirmation_in_a_script_reaches_the_client_and_the_script_waits() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-confirm")?;
        let f = start(&dir, "timeout = \"4s\"").await?;
        let c = at(&f);
        c.initialize("2025-11-25", json!({"elicitation": {}}))
            .await?;
        let script = "def main():\n  r = call('local__add', {'a': 1, 'b': 2})\n  return r\n";
        for (action, n) in [("accept", 1), ("decline", 2)] {
            let mut stream = c
                .send_streaming(&json!({
                    "jsonrpc": "2.0", "id": n, "method": "tools/call",
                    "params": {"name": "run_script", "arguments": {"script": script}}
                }))
                .await?;
            let question = stream.expect_next().await?;
            assert_eq!(question["method"], "elicitation/create", "{question}");
            assert!(question["params"]["message"]
                .as_str()
                .unwrap_or("")
                .contains("local__add"));
            c.respond(question["id"].clone(), json!({"action": action}))
                .await?;
            let response = stream.expect_next().await?;
            assert_eq!(response["id"], n);
            let value = &response["result"]["structuredContent"]["value"];
            match action {
                "accept" => assert_eq!(value["structuredContent"]["sum"], 3.0, "{response}"),
                _ => assert_eq!(
                    value["isError"], true,
                    "declined is the tool's error: {response}"
                ),
            }
        }
        // A question never answered: the script ends at its timeout.
        let mut stream = c
            .send_streaming(&json!({
                "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": "run_script", "arguments": {"script": script}}
            }))
            .await?;
        let question = stream.expect_next().await?;
        assert_eq!(question["method"], "elicitation/create");
        let response = stream.expect_next().await?;
        assert!(failure(&response)?.contains("timeout"), "{response}");
        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        let confirmations: Vec<&Value> = lines
            .iter()
            .filter(|l| l["via"] == "run_script")
            .map(|l| &l["confirmation"])
            .collect();
        assert_eq!(
            confirmations[..2],
            [&json!("accepted"), &json!("declined")],
            "{lines:?}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn cancelling_a_script_cancels_the_call_in_flight_and_answers_nothing() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-cancel")?;
        let f = start(&dir, "").await?;
        let c = at(&f);
        c.initialize("2025-11-25", json!({})).await?;
        let script = "def main():\n  return call('remote__sleep', {'ms': 30000})\n";
        let mut stream = c
            .send_streaming(&json!({
                "jsonrpc": "2.0", "id": 5, "method": "tools/call",
                "params": {"name": "run_script", "arguments": {"script": script},
                           "_meta": {"progressToken": "p5"}}
            }))
            .await?;
        // The inner call's progress is the script's: once it says it
        // started, the call is in flight; then the script is cancelled.
        let progress = stream.expect_next().await?;
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        assert_eq!(progress["params"]["progressToken"], "p5", "{progress}");
        c.notify("notifications/cancelled", json!({"requestId": 5}))
            .await?;
        assert!(
            stream.next().await?.is_none(),
            "a cancelled script was answered"
        );
        let audit = dir.0.join("audit.jsonl");
        let both = crate::eventually(
            "both records",
            std::time::Duration::from_secs(10),
            || async {
                let lines = audit_lines(&audit).unwrap_or_default();
                let inner = lines
                    .iter()
                    .any(|l| l["via"] == "run_script" && l["outcome"] == "cancelled");
                let outer = lines
                    .iter()
                    .any(|l| l["name"] == "run_script" && l["outcome"] == "cancelled");
                Ok((inner && outer).then_some(()))
            },
        )
        .await;
        both.context("the script and its call are not both recorded as cancelled")?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_2026_client_confirms_a_call_of_a_paused_script_and_the_script_runs_on() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-confirm-2026")?;
        let f = start(&dir, "timeout = \"20s\"").await?;
        let c = at(&f);
        let script = "def main():\n  r = call('local__add', {'a': 1, 'b': 2})\n  e = call('local__echo', {'text': 'after'})\n  return [r.get('isError', False), e['content'][0]['text']]\n";
        let request = |extra: Value| with_elicitation(script, extra);
        for (action, declined) in [("accept", false), ("decline", true)] {
            let (status, first) = c.send_stateless(&request(json!({})), &[]).await?;
            assert_eq!(status, StatusCode::OK, "{first}");
            let r = &first["result"];
            assert_eq!(r["resultType"], "input_required", "{first}");
            assert_eq!(r["inputRequests"]["confirm"]["method"], "elicitation/create", "{first}");
            let state = r["requestState"].as_str().context("requestState")?.to_string();
            // Another script's retry, or a made-up state: refused, and the
            // paused script is not touched by a forged one.
            let forged = request(json!({"requestState": "mcs1.00", "inputResponses": {}}));
            let (status, _) = c.send_stateless(&forged, &[]).await?;
            assert_eq!(status, StatusCode::BAD_REQUEST);
            let retry = request(json!({"requestState": state,
                                       "inputResponses": {"confirm": {"action": action}}}));
            let (status, done) = c.send_stateless(&retry, &[]).await?;
            assert_eq!(status, StatusCode::OK, "{done}");
            assert_eq!(done["result"]["resultType"], "complete", "{done}");
            assert_eq!(
                done["result"]["structuredContent"]["value"],
                json!([declined, "after"]),
                "the script ran on after the answer: {done}"
            );
            assert_eq!(done["result"]["structuredContent"]["calls"], 2);
            // Once only.
            let (status, again) = c.send_stateless(&retry, &[]).await?;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{again}");
        }
        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        let decided: Vec<&Value> = lines
            .iter()
            .filter(|l| l["via"] == "run_script" && l["confirmation"].is_string())
            .map(|l| &l["confirmation"])
            .collect();
        assert_eq!(decided, [&json!("accepted"), &json!("declined")], "{lines:?}");
        // One record per script (the retry that ended it), and one per
        // refused retry (a forged or replayed state), as for a direct call.
        let outcomes: Vec<&Value> = lines
            .iter()
            .filter(|l| l["name"] == "run_script")
            .map(|l| &l["outcome"])
            .collect();
        let ok = outcomes.iter().filter(|o| **o == "ok").count();
        assert_eq!((ok, outcomes.len()), (2, 6), "{outcomes:?}");
        let report = manifold_audit::verify(&[dir.0.join("audit.jsonl")])?;
        assert!(report.is_ok(), "{report}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_full_pool_refuses_at_once_and_frees_its_turn_when_a_script_ends() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-busy")?;
        let f = start(&dir, "workers = 1\nmax_queued = 0").await?;
        let c = at(&f);
        c.initialize("2025-11-25", json!({})).await?;
        let slow = "def main():\n  return call('remote__sleep', {'ms': 1500})\n";
        let mut stream = c
            .send_streaming(&json!({
                "jsonrpc": "2.0", "id": 11, "method": "tools/call",
                "params": {"name": "run_script", "arguments": {"script": slow},
                           "_meta": {"progressToken": "busy"}}
            }))
            .await?;
        // Its call is in flight: the one worker is taken.
        let progress = stream.expect_next().await?;
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        let quick = "def main():\n  return 1\n";
        let text = failure(&run(&c, false, quick, Value::Null).await?)?;
        assert!(text.contains("busy") && text.contains("workers"), "{text}");
        let done = stream.expect_next().await?;
        assert_eq!(done["id"], 11, "{done}");
        assert_ne!(done["result"]["isError"], true, "{done}");
        // The turn is back.
        let r = run(&c, false, quick, Value::Null).await?;
        assert_eq!(r["result"]["structuredContent"]["value"], 1, "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_paused_script_no_retry_ends_expires_at_its_timeout_with_a_record() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("code-pause-expired")?;
        let f = start(&dir, "timeout = \"1s\"").await?;
        let c = at(&f);
        let script = "def main():\n  return call('local__add', {'a': 1, 'b': 2})\n";
        let request = |extra: Value| with_elicitation(script, extra);
        let (status, first) = c.send_stateless(&request(json!({})), &[]).await?;
        assert_eq!(status, StatusCode::OK, "{first}");
        assert_eq!(first["result"]["resultType"], "input_required", "{first}");
        let state = first["result"]["requestState"]
            .as_str()
            .context("requestState")?
            .to_string();
        // The client never retries; the script's record is written when its
        // deadline passes (bounded poll: the audit log is fsynced per line).
        let log = dir.0.join("audit.jsonl");
        let mut expired = None;
        for _ in 0..60 {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let lines = audit_lines(&log)?;
            expired = lines
                .into_iter()
                .find(|l| l["name"] == "run_script" && l["outcome"] == "expired");
            if expired.is_some() {
                break;
            }
        }
        let rec = expired.context("no expired record for the abandoned script")?;
        assert!(
            rec["script"]["sha256"]
                .as_str()
                .is_some_and(|s| s.len() == 64),
            "{rec}"
        );
        assert!(rec["principal"].is_string(), "{rec}");
        // A retry after the deadline finds nothing to resume.
        let retry = request(json!({"requestState": state,
                                   "inputResponses": {"confirm": {"action": "accept"}}}));
        let (status, late) = c.send_stateless(&retry, &[]).await?;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{late}");
        let report = manifold_audit::verify(&[log])?;
        assert!(report.is_ok(), "{report}");
        Ok(())
    })
    .await
}
