//! Every way an audited request can end writes exactly one audit record with the
//! right outcome, and is counted once in `manifold_requests`: an answer, a tool
//! error, a refusal, an upstream that does not answer in time, a cancellation, a
//! client that leaves (session era: the call runs on; 2026-07-28: it is
//! cancelled), an input round the client never answers, an input the client
//! declines, a missing capability. A request refused at admission (before
//! routing) is counted but not audited.

use std::time::Duration;

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::observe::{admin_get, audit_lines, sample, Scratch};
use crate::{bounded, Setup};
use manifold_testkit::harness::{stateless_meta, stateless_request, McpClient};

/// How long a held call waits for its retry here: the expired round waits it out,
/// and the declined round's retry must come within it — 700 ms was too short for
/// that retry on a loaded 2-core CI machine (its `requestState` expired).
const HELD_CALL_TTL: &str = "3s";

/// One exit: the request's marker (a tool name and argument text unique to it),
/// and the record it must leave.
struct Exit {
    what: &'static str,
    name: &'static str,
    /// The value of the argument that marks this request.
    marker: Value,
    outcome: &'static str,
    error_code: Option<i64>,
}

fn records_for<'a>(lines: &'a [Value], exit: &Exit) -> Vec<&'a Value> {
    lines
        .iter()
        .filter(|l| l["name"] == exit.name)
        .filter(|l| {
            let args = &l["arguments"];
            args.as_object()
                .is_some_and(|a| a.values().any(|v| *v == exit.marker))
        })
        .collect()
}

/// Waits (bounded) until `exit` has at least one record.
async fn until_recorded(path: &std::path::Path, exit: &Exit) -> Result<()> {
    let what = format!("{}: an audit record", exit.what);
    crate::until(&what, Duration::from_secs(10), || {
        let lines = audit_lines(path).unwrap_or_default();
        !records_for(&lines, exit).is_empty()
    })
    .await
}

/// A stateless `tools/call` declaring `caps`.
fn stateless_call(id: u64, name: &str, arguments: Value, caps: Value) -> Value {
    let mut r = stateless_request(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    );
    r["params"]["_meta"] = stateless_meta(caps);
    r
}

#[tokio::test]
async fn every_exit_writes_one_audit_record_and_counts_once() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("finish")?;
        let audit = dir.0.join("audit.jsonl");
        let f = Setup {
            extra: format!(
                "[admin]\nlisten = \"127.0.0.1:0\"\n\n\
                 [audit]\npath = {}\nfsync = \"always\"\n\n\
                 [limits]\nheld_call_ttl = \"{HELD_CALL_TTL}\"\n\n\
                 [upstreams.slow]\ncommand = {}\nargs = [\"--faults\"]\ntimeout = \"300ms\"\n",
                manifold_testkit::harness::toml_string(&audit.to_string_lossy()),
                manifold_testkit::harness::toml_string(crate::bin()),
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        let admin = f.gw.gateway().admin_addr().context("admin address")?;
        let session = f.gw.session("2025-11-25", json!({"sampling": {}})).await?;
        let stateless = f.gw.client();
        let mut exits = Vec::new();

        // An answer.
        let r = session
            .call_tool("remote__echo", json!({"text": "exit-ok"}))
            .await?;
        r.result()?;
        exits.push(Exit {
            what: "answered",
            name: "remote__echo",
            marker: json!("exit-ok"),
            outcome: "ok",
            error_code: None,
        });

        // A tool error.
        let r = session
            .call_tool("remote__echo", json!({"text": 5}))
            .await?;
        assert_eq!(r.result()?["isError"], true, "{r}");
        exits.push(Exit {
            what: "tool error",
            name: "remote__echo",
            marker: json!(5),
            outcome: "tool_error",
            error_code: None,
        });

        // Refused: an unknown tool.
        let r = session
            .call_tool("nope__x", json!({"text": "exit-unknown"}))
            .await?;
        assert_eq!(r.error()?["code"], -32602, "{r}");
        exits.push(Exit {
            what: "refused (unknown tool)",
            name: "nope__x",
            marker: json!("exit-unknown"),
            outcome: "refused",
            error_code: Some(-32602),
        });

        // The upstream does not answer in time.
        let r = session
            .call_tool("slow__sleep", json!({"ms": 1501}))
            .await?;
        assert_eq!(r.result()?["isError"], true, "{r}");
        exits.push(Exit {
            what: "upstream timeout",
            name: "slow__sleep",
            marker: json!(1501),
            outcome: "timeout",
            error_code: None,
        });

        // Cancelled by the client (notifications/cancelled), session era.
        let id = json!("exit-cancel");
        let params = json!({"name": "local__sleep", "arguments": {"ms": 5001}});
        let call = {
            let (client, id) = (session.clone(), id.clone());
            tokio::spawn(async move { client.request_with_id(id, "tools/call", params).await })
        };
        // Sent until it lands: the request may not have reached the gateway yet.
        crate::eventually("the call cancelled", Duration::from_secs(10), || async {
            if call.is_finished() {
                return Ok(Some(()));
            }
            session
                .notify(
                    "notifications/cancelled",
                    json!({"requestId": id, "reason": "test"}),
                )
                .await?;
            Ok(None)
        })
        .await?;
        let _ = call.await?;
        exits.push(Exit {
            what: "cancelled",
            name: "local__sleep",
            marker: json!(5001),
            outcome: "cancelled",
            error_code: None,
        });

        // The session-era client leaves mid-call: the call runs on to its answer.
        let gone = McpClient::with_timeout(f.gw.url(), Duration::from_millis(150));
        gone.set_session_id(session.session_id().as_deref());
        gone.set_protocol_version(Some("2025-11-25"));
        let left = gone.call_tool("local__sleep", json!({"ms": 401})).await;
        assert!(
            left.is_err(),
            "the client was meant to give up first: {left:?}"
        );
        exits.push(Exit {
            what: "session client gone",
            name: "local__sleep",
            marker: json!(401),
            outcome: "ok",
            error_code: None,
        });

        // A 2026-07-28 client closes its stream mid-call: the call is cancelled.
        let gone = McpClient::with_timeout(f.gw.url(), Duration::from_millis(200));
        let left = gone
            .send_stateless(
                &stateless_call(1, "local__sleep", json!({"ms": 5002}), json!({})),
                &[],
            )
            .await;
        assert!(
            left.is_err(),
            "the client was meant to give up first: {left:?}"
        );
        exits.push(Exit {
            what: "stateless client gone",
            name: "local__sleep",
            marker: json!(5002),
            outcome: "cancelled",
            error_code: None,
        });

        // The same while its answer streams (a progressToken): closing the
        // stream cancels the call even while the upstream says nothing.
        let mut streamed = stateless_call(2, "local__sleep", json!({"ms": 5003}), json!({}));
        streamed["params"]["_meta"]["progressToken"] = json!("gone");
        let left = gone.send_stateless(&streamed, &[]).await;
        assert!(
            left.is_err(),
            "the client was meant to give up first: {left:?}"
        );
        exits.push(Exit {
            what: "stateless client gone mid-stream",
            name: "local__sleep",
            marker: json!(5003),
            outcome: "cancelled",
            error_code: None,
        });

        // A stdio upstream's request to its client is placed only while one call is
        // in flight: let the calls above end first.
        crate::until_in_flight(&f.gw, "local", 0, Duration::from_secs(10)).await?;

        // A capability the client did not declare (-32021).
        let (s, r) = stateless
            .send_stateless(
                &stateless_call(
                    2,
                    "local__sample",
                    json!({"prompt": "exit-missing-cap"}),
                    json!({}),
                ),
                &[],
            )
            .await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32021)),
            "{r}"
        );
        exits.push(Exit {
            what: "missing capability",
            name: "local__sample",
            marker: json!("exit-missing-cap"),
            outcome: "refused",
            error_code: Some(-32021),
        });

        // An input round the client never answers: cancelled when the wait ends.
        let first = stateless_call(
            3,
            "local__sample",
            json!({"prompt": "exit-expired"}),
            json!({"sampling": {}}),
        );
        let (s, r) = stateless.send_stateless(&first, &[]).await?;
        assert_eq!(
            (s, &r["result"]["resultType"]),
            (StatusCode::OK, &json!("input_required")),
            "{r}"
        );
        exits.push(Exit {
            what: "input round expired",
            name: "local__sample",
            marker: json!("exit-expired"),
            outcome: "cancelled",
            error_code: None,
        });

        // The client declines the input: the upstream's answer is the record.
        let first = stateless_call(
            4,
            "remote__elicit",
            json!({"message": "exit-declined"}),
            json!({"elicitation": {"form": {}}}),
        );
        let (_, r) = stateless.send_stateless(&first, &[]).await?;
        let state = r["result"]["requestState"]
            .as_str()
            .context("requestState")?
            .to_string();
        let key = r["result"]["inputRequests"]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .context("key")?;
        let mut retry = first.clone();
        retry["id"] = json!(5);
        retry["params"]["requestState"] = json!(state);
        retry["params"]["inputResponses"] = json!({key: {"action": "decline"}});
        let (s, r) = stateless.send_stateless(&retry, &[]).await?;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(
            r["result"]["content"][0]["text"], "elicited: decline",
            "{r}"
        );
        exits.push(Exit {
            what: "input declined",
            name: "remote__elicit",
            marker: json!("exit-declined"),
            outcome: "ok",
            error_code: None,
        });

        // A retry with a forged state resumes nothing: refused, and recorded.
        let mut forged = stateless_call(
            7,
            "remote__elicit",
            json!({"message": "exit-forged"}),
            json!({"elicitation": {"form": {}}}),
        );
        forged["params"]["requestState"] = json!("forged-state");
        forged["params"]["inputResponses"] = json!({});
        let (s, r) = stateless.send_stateless(&forged, &[]).await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32602)),
            "{r}"
        );
        exits.push(Exit {
            what: "forged requestState",
            name: "remote__elicit",
            marker: json!("exit-forged"),
            outcome: "refused",
            error_code: Some(-32602),
        });

        // A 2026-07-28 request refused at admission is counted, not audited.
        let bad = stateless_call(
            6,
            "remote__echo",
            json!({"text": "exit-admission"}),
            json!({}),
        );
        let (s, r) = stateless
            .send_stateless(&bad, &[("mcp-name", "other")])
            .await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32020)),
            "{r}"
        );

        for exit in &exits {
            until_recorded(&audit, exit).await?;
        }
        let lines = audit_lines(&audit)?;
        for exit in &exits {
            let records = records_for(&lines, exit);
            assert_eq!(records.len(), 1, "{}: {records:#?}", exit.what);
            let rec = records[0];
            assert_eq!(rec["method"], "tools/call", "{}: {rec}", exit.what);
            assert_eq!(rec["outcome"], exit.outcome, "{}: {rec}", exit.what);
            assert_eq!(
                rec.get("error_code").and_then(Value::as_i64),
                exit.error_code,
                "{}: {rec}",
                exit.what
            );
        }
        assert!(
            !lines
                .iter()
                .any(|l| l["arguments"]["text"] == "exit-admission"),
            "a request refused at admission is not audited"
        );
        assert_eq!(
            lines.iter().filter(|l| l["method"] == "tools/call").count(),
            exits.len(),
            "one tools/call record per exit, no more"
        );

        // Counted once each: the exits, the admission refusal, and the declined
        // call's retry (a request of its own, answered with the held call's result).
        let (_, metrics) = admin_get(admin, "/metrics").await?;
        let count = |outcome: &str| {
            sample(
                &metrics,
                &format!(r#"manifold_requests_total{{method="tools/call",outcome="{outcome}"}}"#),
            )
            .unwrap_or(0.0)
        };
        let want = [
            ("ok", 4.0),
            ("tool_error", 1.0),
            ("refused", 4.0),
            ("timeout", 1.0),
            ("cancelled", 4.0),
        ];
        for (outcome, n) in want {
            assert_eq!(count(outcome), n, "tools/call {outcome}\n{metrics}");
        }
        Ok(())
    })
    .await
}
