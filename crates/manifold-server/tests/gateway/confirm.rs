//! `[confirm]` through the running gateway: a session-era client is asked with
//! `elicitation/create` on the call's stream (accept forwards, decline and
//! cancel answer that the call was not made), a 2026-07-28 client through an
//! `InputRequiredResult` round, a client that cannot be asked is refused naming
//! the capability (or let through with `without_elicitation = "allow"`), and
//! every decision is on the audit record.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};
use std::path::PathBuf;

use crate::observe::{audit_lines, Scratch};
use crate::{bounded, text_of, Fixture, Setup};
use manifold_testkit::harness::{stateless_meta, toml_string, McpClient};

async fn start(dir: &Scratch, without: &str) -> Result<(Fixture, PathBuf)> {
    let audit = dir.0.join("audit.jsonl");
    let f = Setup {
        extra: format!(
            "[confirm]\ntools = [\"*__add\"]\ndestructive = true\nwithout_elicitation = \"{without}\"\n\n\
             [audit]\npath = {}\nfsync = \"always\"\n",
            toml_string(&audit.to_string_lossy())
        ),
        ..Setup::default()
    }
    .start()
    .await?;
    Ok((f, audit))
}

/// The record of the call whose arguments were `args`.
fn record(audit: &std::path::Path, args: &Value) -> Result<Value> {
    audit_lines(audit)?
        .into_iter()
        .find(|l| &l["arguments"] == args)
        .with_context(|| format!("no record with arguments {args}"))
}

/// Calls `local__add` on a stream, answers the question with `action`, and
/// returns the question and the call's response.
async fn ask_and_answer(c: &McpClient, n: i64, action: &str) -> Result<(Value, Value)> {
    let mut stream = c
        .send_streaming(&json!({
            "jsonrpc": "2.0", "id": n, "method": "tools/call",
            "params": {"name": "local__add", "arguments": {"a": n, "b": 1}}
        }))
        .await?;
    assert_eq!(stream.status, StatusCode::OK);
    assert!(stream.is_sse(), "{}", stream.content_type);
    let question = stream.expect_next().await?;
    assert_eq!(question["method"], "elicitation/create", "{question}");
    let ack = c
        .respond(question["id"].clone(), json!({"action": action}))
        .await?;
    assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
    let response = stream.expect_next().await?;
    assert_eq!(response["id"], n, "{response}");
    assert!(stream.next().await?.is_none(), "the stream did not end");
    Ok((question, response))
}

#[tokio::test]
async fn a_session_client_confirms_declines_or_dismisses_on_the_calls_stream() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("confirm-session")?;
        let (f, audit) = start(&dir, "refuse").await?;
        let c =
            f.gw.session("2025-11-25", json!({"elicitation": {}}))
                .await?;

        let (question, response) = ask_and_answer(&c, 2, "accept").await?;
        let p = &question["params"];
        assert_eq!(p["mode"], "form", "{question}");
        let message = p["message"].as_str().unwrap_or_default();
        for part in ["local__add", "upstream `local`", "\n  a: 2", "\n  b: 1"] {
            assert!(message.contains(part), "{part} not in {message}");
        }
        assert_eq!(p["requestedSchema"]["type"], "object");
        assert_eq!(text_of(&response["result"])?, "3", "{response}");
        let rec = record(&audit, &json!({"a": 2, "b": 1}))?;
        assert_eq!(
            (rec["confirmation"].as_str(), rec["outcome"].as_str()),
            (Some("accepted"), Some("ok")),
            "{rec}"
        );

        for (n, action, says, audited) in [
            (3, "decline", "declined", "declined"),
            (4, "cancel", "dismissed", "cancelled"),
        ] {
            let (_, response) = ask_and_answer(&c, n, action).await?;
            let result = &response["result"];
            assert_eq!(result["isError"], true, "{response}");
            assert!(text_of(result)?.contains(says), "{response}");
            assert!(text_of(result)?.contains("not called"), "{response}");
            let rec = record(&audit, &json!({"a": n, "b": 1}))?;
            assert_eq!(rec["confirmation"], audited, "{rec}");
            assert_eq!(rec["outcome"], "tool_error", "{rec}");
            assert!(rec["upstream"].is_null(), "the upstream was reached: {rec}");
        }
        // A tool that needs no confirmation is not asked about.
        let r = c.call_tool("local__echo", json!({"text": "plain"})).await?;
        assert!(r.requests().is_empty(), "{r}");
        assert_eq!(text_of(r.result()?)?, "plain");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_client_that_cannot_be_asked_is_refused_or_let_through_as_configured() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("confirm-refuse")?;
        let (f, audit) = start(&dir, "refuse").await?;
        let c = f.gw.session("2025-11-25", json!({})).await?;
        // `local__crash` is annotated destructiveHint: it must not run (the
        // upstream would exit) — and does not: the refusal comes first.
        for (tool, args) in [
            ("local__add", json!({"a": 7, "b": 1})),
            ("local__crash", json!({})),
        ] {
            let r = c.call_tool(tool, args).await?;
            let e = r.error()?;
            assert_eq!(e["code"], -32021, "{r}");
            assert!(
                e["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("elicitation"),
                "{r}"
            );
            assert_eq!(
                e["data"]["requiredCapabilities"]["elicitation"],
                json!({"form": {}}),
                "{r}"
            );
        }
        let rec = record(&audit, &json!({"a": 7, "b": 1}))?;
        assert_eq!(
            (rec["outcome"].as_str(), rec["error_code"].as_i64()),
            (Some("refused"), Some(-32021))
        );
        let r = c
            .call_tool("local__echo", json!({"text": "still up"}))
            .await?;
        assert_eq!(text_of(r.result()?)?, "still up", "the upstream crashed");

        let dir = Scratch::new("confirm-allow")?;
        let (f, audit) = start(&dir, "allow").await?;
        let c = f.gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("local__add", json!({"a": 8, "b": 1})).await?;
        assert_eq!(text_of(r.result()?)?, "9", "{r}");
        let rec = record(&audit, &json!({"a": 8, "b": 1}))?;
        assert_eq!(rec["confirmation"], "unconfirmed", "{rec}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_2026_client_confirms_through_an_input_required_round() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("confirm-modern")?;
        let (f, audit) = start(&dir, "refuse").await?;
        let s = f.gw.client();
        let call = |n: i64, extra: Value| {
            let mut params = json!({"name": "local__add", "arguments": {"a": n, "b": 1},
                                    "_meta": stateless_meta(json!({"elicitation": {}}))});
            if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
                p.extend(e.clone());
            }
            json!({"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": params})
        };
        for (n, action, accepted) in [(20, "accept", true), (21, "decline", false)] {
            let (status, first) = s.send_stateless(&call(n, json!({})), &[]).await?;
            assert_eq!(status, StatusCode::OK, "{first}");
            let r = &first["result"];
            assert_eq!(r["resultType"], "input_required", "{first}");
            assert_eq!(
                r["inputRequests"]["confirm"]["method"], "elicitation/create",
                "{first}"
            );
            let state = r["requestState"]
                .as_str()
                .context("requestState")?
                .to_string();
            let retry = call(
                n,
                json!({"requestState": state, "inputResponses": {"confirm": {"action": action}}}),
            );
            let (status, done) = s.send_stateless(&retry, &[]).await?;
            assert_eq!(status, StatusCode::OK, "{done}");
            assert_eq!(done["result"]["resultType"], "complete", "{done}");
            if accepted {
                assert_eq!(text_of(&done["result"])?, (n + 1).to_string(), "{done}");
            } else {
                assert_eq!(done["result"]["isError"], true, "{done}");
            }
            // The state is single-use.
            let (status, again) = s.send_stateless(&retry, &[]).await?;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{again}");
            // One record per call: the retry's, with the decision.
            let recs: Vec<Value> = audit_lines(&audit)?
                .into_iter()
                .filter(|l| l["arguments"] == json!({"a": n, "b": 1}))
                .collect();
            let decided: Vec<&Value> = recs
                .iter()
                .filter(|r| r["confirmation"].is_string())
                .collect();
            assert_eq!(decided.len(), 1, "{recs:?}");
            assert_eq!(
                decided[0]["confirmation"],
                if accepted { "accepted" } else { "declined" }
            );
        }
        // Without the capability: 400 + -32021.
        let mut bare = call(22, json!({}));
        bare["params"]["_meta"] = stateless_meta(json!({}));
        let (status, refused) = s.send_stateless(&bare, &[]).await?;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{refused}");
        assert_eq!(refused["error"]["code"], -32021, "{refused}");
        Ok(())
    })
    .await
}

/// A call cancelled while its question is open is never made: the stream ends
/// without a response, and the record says cancelled.
#[tokio::test]
async fn cancelling_while_the_human_decides_ends_the_call_unmade() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("confirm-cancel")?;
        let (f, audit) = start(&dir, "refuse").await?;
        let c =
            f.gw.session("2025-11-25", json!({"elicitation": {}}))
                .await?;
        let mut stream = c
            .send_streaming(&json!({
                "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "local__add", "arguments": {"a": 9, "b": 1}}
            }))
            .await?;
        let question = stream.expect_next().await?;
        assert_eq!(question["method"], "elicitation/create", "{question}");
        c.notify("notifications/cancelled", json!({"requestId": 9}))
            .await?;
        assert!(
            stream.next().await?.is_none(),
            "a cancelled call was answered"
        );
        let rec = record(&audit, &json!({"a": 9, "b": 1}))?;
        assert_eq!(rec["outcome"], "cancelled", "{rec}");
        assert!(rec["upstream"].is_null(), "the upstream was reached: {rec}");
        Ok(())
    })
    .await
}
