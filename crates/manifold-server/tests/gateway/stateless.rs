//! The 2026-07-28 stateless era next to the session-era sessions on one endpoint:
//! `server/discover`, per-request `_meta` validation with the spec's codes and
//! statuses, SEP-2243 header checks, `resultType` and cache hints, forwarded calls
//! without a session, and `subscriptions/listen`.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::{bounded, fixture, touch_until};

use manifold_testkit::harness::{stateless_request as request, McpClient, STATELESS as V};

/// POSTs a stateless request with the standard headers (overridable).
async fn send(
    client: &McpClient,
    body: &Value,
    extra: &[(&str, &str)],
) -> Result<(StatusCode, Value)> {
    client.send_stateless(body, extra).await
}

#[tokio::test]
async fn discover_lists_and_calls_work_without_a_session() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        let (status, d) = send(&client, &request(1, "server/discover", json!({})), &[]).await?;
        assert_eq!(status, StatusCode::OK, "{d}");
        let r = &d["result"];
        assert_eq!(r["resultType"], "complete", "{d}");
        assert!(
            r["supportedVersions"]
                .as_array()
                .is_some_and(|v| v.contains(&json!(V))),
            "{d}"
        );
        assert_eq!(
            r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "manifold"
        );
        assert!(r["ttlMs"].is_u64() && r["cacheScope"] == "public", "{d}");
        assert!(r["capabilities"]["tools"].is_object(), "{d}");

        let (_, list) = send(&client, &request(2, "tools/list", json!({})), &[]).await?;
        let l = &list["result"];
        assert_eq!(l["resultType"], "complete", "{list}");
        assert_eq!(l["cacheScope"], "public");
        assert!(
            l["tools"].as_array().is_some_and(|t| t.len() > 10),
            "{list}"
        );

        let call = request(
            3,
            "tools/call",
            json!({"name": "local__echo", "arguments": {"text": "stateless"}}),
        );
        let (status, r) = send(&client, &call, &[]).await?;
        assert_eq!(status, StatusCode::OK, "{r}");
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        assert_eq!(r["result"]["content"][0]["text"], "stateless", "{r}");
        // Unknown members still pass through, after resultType.
        assert_eq!(
            r["result"]["x-demo-result-extra"],
            json!({"z": 1, "a": 2}),
            "{r}"
        );
        assert!(
            client.session_id().is_none(),
            "a stateless request minted a session"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn bad_stateless_requests_get_the_spec_codes_and_statuses() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        let list = request(1, "tools/list", json!({}));
        // Unsupported version: 400 + -32022 with `supported` and `requested`.
        let mut old = list.clone();
        old["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1900-01-01");
        let (s, r) = send(&client, &old, &[("mcp-protocol-version", "1900-01-01")]).await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32022)),
            "{r}"
        );
        assert_eq!(r["error"]["data"]["requested"], "1900-01-01");
        assert!(r["error"]["data"]["supported"]
            .as_array()
            .is_some_and(|v| v.contains(&json!(V))));
        assert_eq!(r["id"], 1, "the id is echoed");
        // Header disagrees with _meta, or is missing: -32020.
        for extra in [
            ("mcp-protocol-version", "2025-11-25"),
            ("mcp-protocol-version", ""),
        ] {
            let (s, r) = send(&client, &list, &[extra]).await?;
            assert_eq!(
                (s, &r["error"]["code"]),
                (StatusCode::BAD_REQUEST, &json!(-32020)),
                "{extra:?}: {r}"
            );
        }
        // The header names the stateless era but `_meta` lacks the version: that
        // era's 400 + -32602, not the session-era fallback.
        let bare = json!({"jsonrpc": "2.0", "id": 9, "method": "server/discover", "params": {}});
        let (s, r) = send(&client, &bare, &[]).await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32602)),
            "{r}"
        );
        // A body version that disagrees with the header is a mismatch first.
        let mut v999 = list.clone();
        v999["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("v999.0.0");
        let (s, r) = send(&client, &v999, &[]).await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32020)),
            "{r}"
        );
        // Missing clientCapabilities: 400 + -32602.
        let mut no_caps = list.clone();
        no_caps["params"]["_meta"]
            .as_object_mut()
            .map(|m| m.remove("io.modelcontextprotocol/clientCapabilities"));
        let (s, r) = send(&client, &no_caps, &[]).await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32602)),
            "{r}"
        );
        // Mcp-Method and Mcp-Name must match the body (values are case-sensitive).
        let (s, r) = send(&client, &list, &[("mcp-method", "TOOLS/LIST")]).await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::BAD_REQUEST, &json!(-32020)),
            "{r}"
        );
        let call = request(
            2,
            "tools/call",
            json!({"name": "local__echo", "arguments": {"text": "x"}}),
        );
        for extra in [("mcp-name", "local__add"), ("mcp-name", "")] {
            let (s, r) = send(&client, &call, &[extra]).await?;
            assert_eq!(
                (s, &r["error"]["code"]),
                (StatusCode::BAD_REQUEST, &json!(-32020)),
                "{extra:?}: {r}"
            );
        }
        // The base64 sentinel form of the right name is accepted.
        let (s, r) = send(
            &client,
            &call,
            &[("mcp-name", "=?base64?bG9jYWxfX2VjaG8=?=")],
        )
        .await?;
        assert_eq!(s, StatusCode::OK, "{r}");
        // Legacy-only methods and unknown methods: 404 + -32601.
        for method in [
            "initialize",
            "ping",
            "logging/setLevel",
            "resources/subscribe",
            "resources/unsubscribe",
            "unknown/method",
        ] {
            let (s, r) = send(&client, &request(3, method, json!({})), &[]).await?;
            assert_eq!(
                (s, &r["error"]["code"]),
                (StatusCode::NOT_FOUND, &json!(-32601)),
                "{method}: {r}"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn mirrored_params_must_match_the_arguments() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        // regional_lookup mirrors `region` into Mcp-Param-Region.
        let call = request(1, "tools/call", json!({"name": "local__regional_lookup", "arguments": {"region": "eu-west-1", "query": "q"}}));
        let (s, r) = send(&client, &call, &[("mcp-param-region", "eu-west-1")]).await?;
        assert_eq!(s, StatusCode::OK, "{r}");
        for extra in [("mcp-param-region", "us-east-1"), ("mcp-param-region", "")] {
            let (s, r) = send(&client, &call, &[extra]).await?;
            assert_eq!((s, &r["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32020)), "{extra:?}: {r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn listen_acknowledges_first_and_tags_list_changes() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        let listen = request(
            7,
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
        );
        let mut stream = client
            .send_streaming_with(
                &listen,
                &[
                    ("mcp-protocol-version", V),
                    ("mcp-method", "subscriptions/listen"),
                ],
            )
            .await?;
        let ack = stream.expect_next().await?;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        assert_eq!(
            ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
            7
        );
        assert_eq!(
            ack["params"]["notifications"],
            json!({"toolsListChanged": true})
        );
        // A session-era session adds a tool upstream: the listener hears it, tagged.
        let legacy = f.session().await?;
        legacy
            .call_tool("local__add_tool", json!({"name": "fresh"}))
            .await?;
        let note = stream
            .wait_for(|m| m["method"] == "notifications/tools/list_changed")
            .await?;
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
            "{note}"
        );
        // Manifold stops: the stream ends with the listen's final result.
        let stopping = tokio::spawn(f.gw.shutdown());
        let last = stream.wait_for(|m| m.get("id").is_some()).await?;
        assert_eq!(last["id"], 7, "{last}");
        assert_eq!(last["result"]["resultType"], "complete", "{last}");
        assert_eq!(
            last["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
            "{last}"
        );
        stopping.await??;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn listen_subscribes_resources_for_as_long_as_the_stream_is_open() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        let (_, discovered) = send(&client, &request(1, "server/discover", json!({})), &[]).await?;
        assert_eq!(
            discovered["result"]["capabilities"]["resources"]["subscribe"], true,
            "{discovered}"
        );
        let uri = "demo://item/1";
        let listen = request(
            9,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": [uri, "nope://x", uri]}}),
        );
        let headers = [
            ("mcp-protocol-version", V),
            ("mcp-method", "subscriptions/listen"),
        ];
        let mut stream = client.send_streaming_with(&listen, &headers).await?;
        let ack = stream.expect_next().await?;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        // Only what is honoured: the URI nobody owns is left out, duplicates folded.
        assert_eq!(
            ack["params"]["notifications"],
            json!({"resourceSubscriptions": [uri]}),
            "{ack}"
        );
        // The listen subscribed upstream: the demo accepts the touch, and the
        // update reaches the stream tagged with the listen id.
        let legacy = f.session().await?;
        touch_until(&legacy, "local__touch", uri, true).await?;
        let note = stream
            .wait_for(|m| m["method"] == "notifications/resources/updated")
            .await?;
        assert_eq!(note["params"]["uri"], uri, "{note}");
        assert_eq!(
            note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 9,
            "{note}"
        );
        // Closing the stream ends the subscription upstream.
        drop(stream);
        touch_until(&legacy, "local__touch", uri, false).await?;

        let bad = request(
            10,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": uri}}),
        );
        let (status, reply) = send(&client, &bad, &[]).await?;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{reply}");
        assert_eq!(reply["error"]["code"], -32602, "{reply}");
        Ok(())
    })
    .await
}

/// Sends `first` and expects an `InputRequiredResult` with one question: its key,
/// the question, and the `requestState`.
async fn input_required(client: &McpClient, first: &Value) -> Result<(String, Value, String)> {
    let (s, r) = send(client, first, &[]).await?;
    anyhow::ensure!(s == StatusCode::OK, "{s}: {r}");
    let ir = &r["result"];
    anyhow::ensure!(ir["resultType"] == "input_required", "{r}");
    let (key, asked) = ir["inputRequests"]
        .as_object()
        .and_then(|m| m.iter().next())
        .map(|(k, v)| (k.clone(), v.clone()))
        .context("no inputRequests")?;
    let state = ir["requestState"].as_str().context("no requestState")?;
    Ok((key, asked, state.to_string()))
}

#[tokio::test]
async fn a_session_era_upstreams_elicitation_becomes_an_input_required_result() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        for upstream in ["local", "remote"] {
            let params =
                json!({"name": format!("{upstream}__elicit"), "arguments": {"message": "Name?"}});
            let mut first = request(1, "tools/call", params);
            first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
                json!({"elicitation": {"form": {}}});
            let (key, asked, state) = input_required(&client, &first).await?;
            assert_eq!(asked["method"], "elicitation/create", "{asked}");
            assert_eq!(asked["params"]["message"], "Name?", "{asked}");
            assert_eq!(
                asked["params"]["requestedSchema"]["required"],
                json!(["name"]),
                "{asked}"
            );
            let mut retry = first.clone();
            retry["id"] = json!(2);
            retry["params"]["requestState"] = json!(state);
            retry["params"]["inputResponses"] =
                json!({key: {"action": "accept", "content": {"name": "Ada"}}});
            let (s, r) = send(&client, &retry, &[]).await?;
            assert_eq!(s, StatusCode::OK, "{r}");
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
            assert_eq!(
                r["result"]["content"][0]["text"], r#"elicited: accept {"name":"Ada"}"#,
                "{r}"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_session_era_upstreams_sampling_becomes_an_input_required_result() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        for upstream in ["local", "remote"] {
            let name = format!("{upstream}__sample");
            let params = json!({"name": name, "arguments": {"prompt": "hi"}});
            // Without the capability: 400 + -32021 naming it.
            let (s, r) = send(&client, &request(1, "tools/call", params.clone()), &[]).await?;
            assert_eq!((s, &r["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32021)), "{r}");
            assert!(r["error"]["data"]["requiredCapabilities"]["sampling"].is_object(), "{r}");

            // With it: an InputRequiredResult carrying the upstream's request.
            let mut first = request(2, "tools/call", params.clone());
            first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({"sampling": {}});
            let (key, asked, state) = input_required(&client, &first).await?;
            assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
            assert_eq!(asked["params"]["messages"][0]["content"]["text"], "hi");
            assert!(asked.get("id").is_none() && asked.get("jsonrpc").is_none(), "{asked}");

            // The retry (new id, same params) resumes the held call.
            let mut retry = first.clone();
            retry["id"] = json!(3);
            retry["params"]["requestState"] = json!(state);
            retry["params"]["inputResponses"] = json!({key.clone(): {
                "role": "assistant", "content": {"type": "text", "text": "hello back"}, "model": "m"}});
            let (s, r) = send(&client, &retry, &[]).await?;
            assert_eq!(s, StatusCode::OK, "{r}");
            assert_eq!(r["id"], 3, "{r}");
            assert_eq!(r["result"]["resultType"], "complete", "{r}");
            assert_eq!(r["result"]["content"][0]["text"], "sampled: hello back", "{r}");

            // A state is single-use; a tampered one or one for other params is refused.
            let (s, r) = send(&client, &retry, &[]).await?;
            assert_eq!((s, &r["error"]["code"]), (StatusCode::BAD_REQUEST, &json!(-32602)), "{r}");
            let mut tampered = retry.clone();
            tampered["params"]["requestState"] = json!(format!("0{}", &state[1..]));
            let (s, r) = send(&client, &tampered, &[]).await?;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
            let mut other = retry.clone();
            other["params"]["arguments"]["prompt"] = json!("changed");
            let (s, r) = send(&client, &other, &[]).await?;
            assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
            assert!(r["error"]["message"].as_str().unwrap_or("").contains("requestState"), "{r}");
        }
        Ok(())
    })
    .await
}
