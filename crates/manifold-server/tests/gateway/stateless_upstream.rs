//! 2026-07-28 upstreams behind the gateway: the era probe, per-request `_meta` and
//! headers, `InputRequiredResult` bridged for session-era clients and passed through
//! for stateless ones, list changes heard on the upstream's `subscriptions/listen`,
//! and lists refetched when their `ttlMs` runs out.
//!
//! The upstreams are the demo in `--stateless` mode: `mlocal` over stdio, `mremote`
//! over HTTP, next to the session-era `local` (stdio).

use anyhow::Result;
use http::StatusCode;
use manifold_testkit::harness::{toml_string, DemoHttp, TestGateway};
use serde_json::{json, Value};

use crate::{bin, bounded, names_of, text_of, touch_until};

const V: &str = "2026-07-28";

struct Modern {
    gw: TestGateway,
    _remote: DemoHttp,
}

async fn start(modern_args: &[&str]) -> Result<Modern> {
    start_with(modern_args, "").await
}

/// [`start`] with more configuration appended.
async fn start_with(modern_args: &[&str], extra: &str) -> Result<Modern> {
    let mut args = vec!["--modern"];
    args.extend_from_slice(modern_args);
    let remote = DemoHttp::spawn_bin(bin(), &args).await?;
    let stdio_args: Vec<String> = std::iter::once(&"--faults")
        .chain(&args)
        .map(|a| toml_string(a))
        .collect();
    let toml = format!(
        "[upstreams.local]\ncommand = {bin}\nargs = [\"--faults\"]\n\n\
         [upstreams.mlocal]\ncommand = {bin}\nargs = [{args}]\ntimeout = \"20s\"\n\n\
         [upstreams.mremote]\nurl = {url}\ntimeout = \"20s\"\n\n{extra}",
        bin = toml_string(bin()),
        args = stdio_args.join(", "),
        url = toml_string(&remote.url),
    );
    let gw = TestGateway::start(&toml).await?;
    Ok(Modern {
        gw,
        _remote: remote,
    })
}

fn protocol_of(gw: &TestGateway, name: &str) -> Option<String> {
    let up = gw
        .gateway()
        .upstreams()
        .into_iter()
        .find(|u| &**u.name() == name)?;
    up.status().facts.map(|f| f.protocol_version)
}

#[tokio::test]
async fn the_era_is_probed_per_upstream_and_both_eras_serve_session_era_clients() -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        assert_eq!(protocol_of(&m.gw, "local").as_deref(), Some("2025-11-25"));
        assert_eq!(protocol_of(&m.gw, "mlocal").as_deref(), Some(V));
        assert_eq!(protocol_of(&m.gw, "mremote").as_deref(), Some(V));
        let client = m.gw.session("2025-11-25", json!({})).await?;
        let names = names_of(&client.list_all_tools().await?);
        for n in [
            "local__echo",
            "mlocal__ask",
            "mlocal__echo",
            "mremote__whoami",
        ] {
            assert!(names.contains(&n.to_string()), "{n} missing from {names:?}");
        }
        assert!(!names.contains(&"local__ask".to_string()), "{names:?}");
        for up in ["mlocal", "mremote"] {
            let reply = client
                .call_tool(&format!("{up}__echo"), json!({"text": "hi", "x-extra": 1}))
                .await?;
            let result = reply.result()?;
            assert_eq!(text_of(result)?, "hi", "{up}: {result}");
            // Lossless: the 2026-07-28 upstream's own members reach the client.
            assert_eq!(result["resultType"], "complete", "{up}: {result}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn stateless_upstreams_get_the_clients_capabilities_in_meta_and_the_standard_headers(
) -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        let caps = json!({"sampling": {}, "elicitation": {"form": {}}});
        let client = m.gw.session("2025-11-25", caps.clone()).await?;
        for up in ["mlocal", "mremote"] {
            let reply = client
                .call_tool(&format!("{up}__whoami"), json!({}))
                .await?;
            let seen = &reply.result()?["structuredContent"];
            let meta = &seen["meta"];
            assert_eq!(
                meta["io.modelcontextprotocol/protocolVersion"], V,
                "{up}: {seen}"
            );
            assert_eq!(
                meta["io.modelcontextprotocol/clientCapabilities"], caps,
                "{up}: {seen}"
            );
            assert_eq!(
                meta["io.modelcontextprotocol/clientInfo"]["name"], "manifold",
                "{up}: {seen}"
            );
            if up == "mremote" {
                let h = &seen["headers"];
                assert_eq!(h["mcp-protocol-version"], V, "{seen}");
                assert_eq!(h["mcp-method"], "tools/call", "{seen}");
                assert_eq!(h["mcp-name"], "whoami", "{seen}");
                assert!(
                    h.get("mcp-session-id").is_none(),
                    "a stateless request carried a session: {seen}"
                );
            }
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn input_required_becomes_an_elicitation_for_a_session_era_client_and_the_call_is_retried(
) -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        let client =
            m.gw.session("2025-11-25", json!({"elicitation": {"form": {}}}))
                .await?;
        for up in ["mlocal", "mremote"] {
            let call_id = json!(format!("ask-{up}"));
            let mut stream = client
                .send_streaming(&json!({
                    "jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                    "params": {"name": format!("{up}__ask"), "arguments": {"question": "Name?"}}
                }))
                .await?;
            assert_eq!(stream.status, StatusCode::OK);
            assert!(stream.is_sse(), "{up}: {}", stream.content_type);
            let asked = stream.expect_next().await?;
            assert_eq!(asked["method"], "elicitation/create", "{up}: {asked}");
            assert_eq!(asked["params"]["message"], "Name?", "{up}: {asked}");
            let ack = client
                .respond(
                    asked["id"].clone(),
                    json!({"action": "accept", "content": {"name": "Ada"}}),
                )
                .await?;
            assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
            let response = stream.expect_next().await?;
            assert_eq!(response["id"], call_id, "{response}");
            assert_eq!(
                text_of(&response["result"])?,
                r#"you answered {"name":"Ada"}"#,
                "{up}: {response}"
            );
            assert_eq!(response["result"]["resultType"], "complete", "{response}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_stateless_upstream_asking_several_rounds_gets_sampling_elicitation_and_roots_answers(
) -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        let caps = json!({"sampling": {}, "elicitation": {"form": {}}, "roots": {}});
        let client = m.gw.session("2025-11-25", caps).await?;
        let answers = [
            (
                "sampling/createMessage",
                json!({"role": "assistant", "content": {"type": "text", "text": "Grace"},
                       "model": "test-model", "stopReason": "endTurn"}),
            ),
            (
                "elicitation/create",
                json!({"action": "accept", "content": {"name": "Ada"}}),
            ),
            ("roots/list", json!({"roots": [{"uri": "file:///srv", "name": "srv"}]})),
        ];
        for up in ["mlocal", "mremote"] {
            let mut stream = client
                .send_streaming(&json!({
                    "jsonrpc": "2.0", "id": 11, "method": "tools/call",
                    "params": {"name": format!("{up}__ask"),
                               "arguments": {"question": "Who?", "via": ["sampling", "elicitation", "roots"]}}
                }))
                .await?;
            assert!(stream.is_sse(), "{up}: {}", stream.content_type);
            // One round per question: each is asked only after the previous
            // answer went back to the upstream with its requestState.
            for (method, answer) in &answers {
                let asked = stream.expect_next().await?;
                assert_eq!(asked["method"], *method, "{up}: {asked}");
                if *method == "sampling/createMessage" {
                    assert_eq!(
                        asked["params"]["messages"][0]["content"]["text"], "Who?",
                        "{up}: {asked}"
                    );
                }
                let ack = client.respond(asked["id"].clone(), answer.clone()).await?;
                assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
            }
            let response = stream.expect_next().await?;
            assert_eq!(response["id"], 11, "{response}");
            let text = text_of(&response["result"])?;
            let want = format!(
                "you answered {} then {} then {}",
                answers[0].1["content"], answers[1].1["content"], answers[2].1
            );
            assert_eq!(text, want, "{up}: {response}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_session_era_client_that_declines_to_answer_gets_the_error_not_a_hang() -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        let client =
            m.gw.session("2025-11-25", json!({"elicitation": {"form": {}}}))
                .await?;
        let mut stream = client
            .send_streaming(&json!({
                "jsonrpc": "2.0", "id": 7, "method": "tools/call",
                "params": {"name": "mremote__ask", "arguments": {}}
            }))
            .await?;
        let asked = stream.expect_next().await?;
        client
            .respond_error(asked["id"].clone(), -32000, "the user closed the dialog")
            .await?;
        let response = stream.expect_next().await?;
        assert_eq!(response["id"], 7, "{response}");
        let message = response["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("closed the dialog"), "{response}");
        Ok(())
    })
    .await
}

fn stateless_call(id: u64, name: &str, extra: Value) -> Value {
    let mut params = json!({
        "name": name, "arguments": {},
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": V,
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}
        }
    });
    if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
        p.extend(e);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

#[tokio::test]
async fn input_required_passes_through_to_a_stateless_client_and_its_retry_reaches_the_upstream(
) -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        let client = m.gw.client();
        for up in ["mlocal", "mremote"] {
            let name = format!("{up}__ask");
            let headers = [
                ("mcp-protocol-version", V),
                ("mcp-method", "tools/call"),
                ("mcp-name", name.as_str()),
            ];
            let first = client
                .post_raw(stateless_call(1, &name, json!({})).to_string(), &headers)
                .await?;
            let first: Value = serde_json::from_slice(&first.body)?;
            let result = &first["result"];
            assert_eq!(result["resultType"], "input_required", "{up}: {first}");
            assert_eq!(
                result["inputRequests"]["answer"]["method"],
                "elicitation/create"
            );
            // The upstream's state, byte for byte: not one Manifold minted.
            assert_eq!(result["requestState"], "demo-ask-state-1", "{up}: {first}");
            let retry = stateless_call(
                2,
                &name,
                json!({
                    "inputResponses": {"answer": {"action": "accept", "content": {"name": "Lin"}}},
                    "requestState": "demo-ask-state-1"
                }),
            );
            let done = client.post_raw(retry.to_string(), &headers).await?;
            let done: Value = serde_json::from_slice(&done.body)?;
            assert_eq!(
                text_of(&done["result"])?,
                r#"you answered {"name":"Lin"}"#,
                "{up}: {done}"
            );
        }
        Ok(())
    })
    .await
}

/// The merged list lists `name`.
async fn listed(client: &manifold_testkit::harness::McpClient, name: &str) -> Result<bool> {
    Ok(names_of(&client.list_all_tools().await?).contains(&name.to_string()))
}

#[tokio::test]
async fn a_stateless_upstreams_list_change_arrives_through_its_listen_stream() -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        let client = m.gw.session("2025-11-25", json!({})).await?;
        let mut events = client.open_get_stream().await?;
        for up in ["mlocal", "mremote"] {
            let reply = client
                .call_tool(&format!("{up}__add_tool"), json!({"name": "fresh"}))
                .await?;
            reply.result()?;
            let note = events
                .wait_for(|m| m["method"] == "notifications/tools/list_changed")
                .await?;
            assert!(
                note["params"].get("_meta").is_none(),
                "the upstream's subscriptionId leaked: {note}"
            );
            // The merged list is rebuilt before clients are told.
            assert!(
                listed(&client, &format!("{up}__fresh")).await?,
                "{up}__fresh not listed"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_stateless_upstreams_lists_are_refetched_when_their_ttl_runs_out() -> Result<()> {
    bounded(async {
        // No list_changed at all: only the 1 s ttlMs brings the new tool in.
        let m = start(&["--no-list-changed", "--list-ttl-ms", "1000"]).await?;
        // A 2026-07-28 client may cache Manifold's lists no longer than Manifold
        // keeps its own copy of the upstreams' lists.
        let raw = m.gw.client();
        for method in ["tools/list", "server/discover"] {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": {"_meta": {
                "io.modelcontextprotocol/protocolVersion": V,
                "io.modelcontextprotocol/clientCapabilities": {}
            }}});
            let headers = [("mcp-protocol-version", V), ("mcp-method", method)];
            let reply = raw.post_raw(body.to_string(), &headers).await?;
            let reply: Value = serde_json::from_slice(&reply.body)?;
            assert_eq!(reply["result"]["ttlMs"], 1000, "{method}: {reply}");
        }
        let client = m.gw.session("2025-11-25", json!({})).await?;
        let mut events = client.open_get_stream().await?;
        for up in ["mlocal", "mremote"] {
            client
                .call_tool(&format!("{up}__add_tool"), json!({"name": "late"}))
                .await?
                .result()?;
            // The refetch after ttlMs rebuilds the merged list and tells clients.
            events
                .wait_for(|m| m["method"] == "notifications/tools/list_changed")
                .await?;
            assert!(
                listed(&client, &format!("{up}__late")).await?,
                "{up}__late not listed"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_session_era_clients_resource_subscription_rides_a_stateless_upstreams_listen(
) -> Result<()> {
    bounded(async {
        let m = start(&[]).await?;
        let client = m.gw.session("2025-11-25", json!({})).await?;
        let mut events = client.open_get_stream().await?;
        for (n, up) in [(7, "mlocal"), (8, "mremote")] {
            // The link teaches Manifold that this URI belongs to `up`.
            let uri = format!("demo://linked/{n}");
            client
                .call_tool(&format!("{up}__link"), json!({"n": n}))
                .await?
                .result()?;
            let touch = format!("{up}__touch");
            let r = client
                .request("resources/subscribe", json!({"uri": uri}))
                .await?;
            assert_eq!(r.result()?, &json!({}), "{r}");
            // The URI joins Manifold's listen to `up`: the demo accepts the touch
            // once that listen is open, and the update reaches the session.
            touch_until(&client, &touch, &uri, true).await?;
            let note = events
                .wait_for(|m| m["method"] == "notifications/resources/updated")
                .await?;
            assert_eq!(note["params"]["uri"], uri.as_str(), "{note}");
            assert!(
                note["params"].get("_meta").is_none(),
                "the upstream's subscriptionId leaked: {note}"
            );
            // Unsubscribing reopens the listen without the URI.
            client
                .request("resources/unsubscribe", json!({"uri": uri}))
                .await?
                .result()?;
            touch_until(&client, &touch, &uri, false).await?;
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_upstream_redeployed_in_the_other_era_is_probed_again() -> Result<()> {
    bounded(async {
        let mut up = DemoHttp::spawn_bin(bin(), &[]).await?;
        let addr = up
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        let gw = TestGateway::start(&format!(
            "[upstreams.swap]\nurl = {}\ntimeout = \"5s\"\n",
            toml_string(&up.url)
        ))
        .await?;
        assert_eq!(protocol_of(&gw, "swap").as_deref(), Some("2025-11-25"));
        let client = gw.session("2025-11-25", json!({})).await?;
        // Legacy → stateless → session-era, on the same address.
        for (args, era) in [(&["--modern"][..], V), (&[][..], "2025-11-25")] {
            up.child.kill().await?;
            up = DemoHttp::spawn_at(bin(), &addr, args).await?;
            let what = format!("swap answering as {era} after the redeploy");
            crate::eventually(&what, std::time::Duration::from_secs(30), || async {
                let reply = client
                    .call_tool("swap__echo", json!({"text": "again"}))
                    .await?;
                let answered = reply
                    .result()
                    .ok()
                    .filter(|r| r.get("isError") != Some(&json!(true)))
                    .is_some();
                let spoken = protocol_of(&gw, "swap");
                Ok((answered && spoken.as_deref() == Some(era)).then_some(()))
            })
            .await?;
            // The merged list follows the era: `ask` exists only in the stateless demo.
            let names = names_of(&client.list_all_tools().await?);
            assert_eq!(
                names.contains(&"swap__ask".to_string()),
                era == V,
                "{era}: {names:?}"
            );
        }
        Ok(())
    })
    .await
}

/// A confirmed call whose 2026-07-28 upstream then asks for input: the
/// upstream's state comes back wrapped, and the retry carrying it reaches the
/// upstream without a new question; a forged wrapper is refused.
#[tokio::test]
async fn a_confirmed_call_to_a_stateless_upstream_can_ask_for_input_too() -> Result<()> {
    bounded(async {
        let m = start_with(&[], "[confirm]\ntools = [\"mlocal__ask\"]\n").await?;
        let client = m.gw.client();
        let name = "mlocal__ask";
        let headers = [
            ("mcp-protocol-version", V),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ];
        let post = |body: Value| {
            let client = client.clone();
            async move {
                let r = client.post_raw(body.to_string(), &headers).await?;
                Ok::<_, anyhow::Error>((r.status, serde_json::from_slice::<Value>(&r.body)?))
            }
        };
        let (_, first) = post(stateless_call(1, name, json!({}))).await?;
        let state = first["result"]["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(state.starts_with("confirm."), "{first}");
        let (_, second) = post(stateless_call(
            2,
            name,
            json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept"}}}),
        ))
        .await?;
        assert_eq!(second["result"]["resultType"], "input_required", "{second}");
        assert_eq!(
            second["result"]["inputRequests"]["answer"]["method"],
            "elicitation/create"
        );
        let wrapped = second["result"]["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(
            wrapped.starts_with("confirmed.") && wrapped.ends_with("demo-ask-state-1"),
            "{second}"
        );
        let (_, done) = post(stateless_call(
            3,
            name,
            json!({"requestState": wrapped,
                   "inputResponses": {"answer": {"action": "accept", "content": {"name": "Lin"}}}}),
        ))
        .await?;
        assert_eq!(
            text_of(&done["result"])?,
            r#"you answered {"name":"Lin"}"#,
            "{done}"
        );
        // Single use: replaying the wrapper does not reach the upstream again.
        let (status, replayed) = post(stateless_call(
            5,
            name,
            json!({"requestState": wrapped,
                   "inputResponses": {"answer": {"action": "accept", "content": {"name": "Eve"}}}}),
        ))
        .await?;
        assert_eq!(status, http::StatusCode::BAD_REQUEST, "{replayed}");
        assert_eq!(replayed["error"]["code"], -32602, "{replayed}");
        let (status, forged) = post(stateless_call(
            4,
            name,
            json!({"requestState": "confirmed.00.demo-ask-state-1",
                   "inputResponses": {"answer": {"action": "accept", "content": {"name": "X"}}}}),
        ))
        .await?;
        assert_eq!(status, http::StatusCode::BAD_REQUEST, "{forged}");
        Ok(())
    })
    .await
}

/// A `confirmed.` wrapper is bound to the principal it was issued to and
/// expires with `limits.held_call_ttl`: another caller presenting it, or its
/// owner after the expiry, is refused, and the upstream is not reached.
#[tokio::test]
async fn a_confirmed_wrapper_is_for_its_principal_and_expires() -> Result<()> {
    bounded(async {
        let (alice_key, bob_key) = ("alice-key-0123456789", "bob-key-0123456789");
        let extra = format!(
            "[auth]\n[[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\n\n\
             [[auth.api_keys]]\nname = \"bob\"\nhash = \"{}\"\n\n\
             [limits]\nheld_call_ttl = \"2s\"\n\n[confirm]\ntools = [\"mlocal__ask\"]\n",
            manifold_policy::hash_key(alice_key),
            manifold_policy::hash_key(bob_key),
        );
        let m = start_with(&[], &extra).await?;
        let name = "mlocal__ask";
        let headers = [
            ("mcp-protocol-version", V),
            ("mcp-method", "tools/call"),
            ("mcp-name", name),
        ];
        let post = |key: &'static str, body: Value| {
            let client = m.gw.client();
            client.set_bearer(Some(key));
            async move {
                let r = client.post_raw(body.to_string(), &headers).await?;
                Ok::<_, anyhow::Error>((r.status, serde_json::from_slice::<Value>(&r.body)?))
            }
        };
        let (_, first) = post(alice_key, stateless_call(1, name, json!({}))).await?;
        let state = first["result"]["requestState"].clone();
        let (_, second) = post(
            alice_key,
            stateless_call(
                2,
                name,
                json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept"}}}),
            ),
        )
        .await?;
        let wrapped = second["result"]["requestState"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(wrapped.starts_with("confirmed."), "{second}");
        let retry = |id: u64| {
            stateless_call(
                id,
                name,
                json!({"requestState": wrapped,
                       "inputResponses": {"answer": {"action": "accept", "content": {"name": "Lin"}}}}),
            )
        };
        let (status, stolen) = post(bob_key, retry(3)).await?;
        assert_eq!(status, http::StatusCode::BAD_REQUEST, "bob used alice's wrapper: {stolen}");
        assert_eq!(stolen["error"]["code"], -32602, "{stolen}");

        // `confirmed.<id>.<expiry>.…`: wait for the clock to pass the expiry.
        let expiry: u64 = wrapped
            .split('.')
            .nth(2)
            .and_then(|e| e.parse().ok())
            .unwrap_or(u64::MAX);
        let now = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0)
        };
        let what = format!("{wrapped} expired");
        crate::until(&what, std::time::Duration::from_secs(10), || now() > expiry).await?;
        let (status, late) = post(alice_key, retry(4)).await?;
        assert_eq!(status, http::StatusCode::BAD_REQUEST, "an expired wrapper was used: {late}");
        assert!(
            late["error"]["message"].as_str().unwrap_or_default().contains("expired"),
            "{late}"
        );
        Ok(())
    })
    .await
}

/// A 2026-07-28 upstream whose tools change while Manifold connects — right
/// after it answered Manifold's first `tools/list` — is heard: the listen is
/// acknowledged before the lists are fetched, so the change reaches it. (Opened
/// after the fetch, the listen would miss it, and with a long `ttlMs` the
/// gateway would list the old tools for ten minutes.)
#[tokio::test]
async fn a_change_made_while_the_gateway_connects_is_not_missed() -> Result<()> {
    bounded(async {
        let args = [
            "--modern",
            "--list-ttl-ms",
            "600000",
            "--misbehave",
            "change-after-first-list",
        ];
        let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
        let toml = format!(
            "[upstreams.m]\ncommand = {}\nargs = [{}]\nrequired = true\n",
            toml_string(bin()),
            args.join(", ")
        );
        let gw = TestGateway::start(&toml).await?;
        let client = gw.session("2025-11-25", json!({})).await?;
        // The refetch waits out the list-change debounce (1 s).
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(10);
        while !listed(&client, "m__late").await? {
            anyhow::ensure!(
                tokio::time::Instant::now() < deadline,
                "the change made while the gateway connected was missed"
            );
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Ok(())
    })
    .await
}
