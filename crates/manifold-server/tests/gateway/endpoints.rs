//! Virtual endpoints (`[[endpoint]]`) and tool search (`discovery =
//! "search"`) through the running gateway, in both eras, from the caller's
//! and the attacker's side: an endpoint holds only its part; a session id of
//! one endpoint is unknown (404) on another; a search never returns a tool
//! outside the caller's view of its endpoint; `call_tool` of a hidden tool
//! answers exactly as of one that does not exist; `call_tool` goes through the
//! same chain as a direct call (one audit record naming the real tool, `via`).

use anyhow::{anyhow, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::observe::{audit_lines, Scratch};
use crate::{bounded, names_of, text_of, Fixture, Setup};
use manifold_policy::hash_key;
use manifold_testkit::harness::{stateless_request, McpClient};

const OPS_KEY: &str = "ops-key-0123456789";

/// `/mcp/ops`: `local` only, without `crash`; `/mcp/find`: search over
/// everything but `remote__fail`, `local__echo` always listed; `/mcp/grow`:
/// search with `discovery_expand`.
fn endpoints() -> String {
    "[[endpoint]]\npath = \"/mcp/ops\"\nupstreams = [\"local\"]\n\
     tools = { deny = [\"local__crash\"] }\ninstructions = \"Ops tools only.\"\n\n\
     [[endpoint]]\npath = \"/mcp/find\"\ndiscovery = \"search\"\n\
     always_visible = [\"local__echo\"]\ntools = { deny = [\"remote__fail\"] }\n\n\
     [[endpoint]]\npath = \"/mcp/grow\"\nupstreams = [\"remote\"]\ndiscovery = \"search\"\n\
     discovery_expand = true\n"
        .into()
}

async fn start(extra: &str) -> Result<Fixture> {
    Setup {
        extra: format!("{}\n{extra}", endpoints()),
        ..Setup::default()
    }
    .start()
    .await
}

fn at(f: &Fixture, path: &str) -> McpClient {
    McpClient::new(format!("http://{}{path}", f.gw.addr()))
}

async fn session_at(f: &Fixture, path: &str) -> Result<McpClient> {
    let c = at(f, path);
    c.initialize("2025-11-25", json!({})).await?;
    Ok(c)
}

/// A stateless request's result (or error) on `c`.
async fn stateless(c: &McpClient, method: &str, params: Value) -> Result<Value> {
    let (status, body) = c
        .send_stateless(&stateless_request(1, method, params), &[])
        .await?;
    if status != StatusCode::OK {
        return Err(anyhow!("{method}: {status} {body}"));
    }
    Ok(body)
}

/// The tool result of `search_tools` / `call_tool` (or a direct call) in
/// either era.
async fn call(c: &McpClient, era_stateless: bool, name: &str, args: Value) -> Result<Value> {
    if era_stateless {
        let body = stateless(c, "tools/call", json!({"name": name, "arguments": args})).await?;
        return Ok(body);
    }
    Ok(c.call_tool(name, args).await?.response()?.clone())
}

fn found_names(result: &Value) -> Vec<String> {
    names_of(
        result["structuredContent"]["tools"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]),
    )
}

#[tokio::test]
async fn an_endpoint_holds_its_part_and_its_sessions_stay_on_it() -> Result<()> {
    bounded(async {
        let f = start("").await?;
        let ops = session_at(&f, "/mcp/ops").await?;
        let mut want: Vec<String> = crate::DEMO_TOOLS
            .iter()
            .filter(|t| **t != "crash")
            .map(|t| format!("local__{t}"))
            .collect();
        want.sort();
        let mut listed = names_of(&ops.list_all_tools().await?);
        listed.sort();
        assert_eq!(listed, want);
        // Stateless, the same part.
        let body = stateless(&at(&f, "/mcp/ops"), "tools/list", json!({})).await?;
        let mut listed = names_of(body["result"]["tools"].as_array().unwrap());
        listed.sort();
        assert_eq!(listed, want);
        // Its own instructions.
        let init = at(&f, "/mcp/ops")
            .initialize("2025-11-25", json!({}))
            .await?;
        assert_eq!(init["instructions"], "Ops tools only.");
        // Outside the part answers exactly as what does not exist.
        let outside = ops.call_tool("remote__echo", json!({"text": "x"})).await?;
        let nothing = ops.call_tool("remote__nothing", json!({})).await?;
        let generic = |r: &Value, n: &str| r.to_string().replace(n, "NAME");
        assert_eq!(
            generic(outside.error()?, "remote__echo"),
            generic(nothing.error()?, "remote__nothing")
        );
        let denied = ops.call_tool("local__crash", json!({})).await?;
        assert!(denied.error().is_ok(), "a denied tool is unknown");
        // Works inside.
        let r = ops.call_tool("local__add", json!({"a": 2, "b": 3})).await?;
        assert!(r.result()?["isError"] != true, "{r:?}");
        // The attacker's side: a session of /mcp/ops on /mcp, and back.
        let stolen = f.gw.client();
        stolen.set_session_id(ops.session_id().as_deref());
        let raw = list_status(&stolen).await?;
        assert_eq!(raw, StatusCode::NOT_FOUND, "an /mcp/ops session on /mcp");
        let main = f.session().await?;
        let other = at(&f, "/mcp/ops");
        other.set_session_id(main.session_id().as_deref());
        let raw = list_status(&other).await?;
        assert_eq!(raw, StatusCode::NOT_FOUND, "an /mcp session on /mcp/ops");
        // An unknown path is no endpoint.
        let nowhere = at(&f, "/mcp/none");
        assert!(nowhere.initialize("2025-11-25", json!({})).await.is_err());
        Ok(())
    })
    .await
}

/// `tools/list` POSTed with the client's session id: the HTTP status.
async fn list_status(c: &McpClient) -> Result<StatusCode> {
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"});
    Ok(c.post_raw(body.to_string(), &[]).await?.status)
}

#[tokio::test]
async fn search_finds_full_definitions_and_call_tool_calls_in_both_eras() -> Result<()> {
    bounded(async {
        let f = start("").await?;
        // The definitions as the default endpoint lists them.
        let all = f.session().await?.list_all_tools().await?;
        let def = |n: &str| all.iter().find(|t| t["name"] == n).cloned();
        for stateless_era in [false, true] {
            let c = if stateless_era {
                at(&f, "/mcp/find")
            } else {
                session_at(&f, "/mcp/find").await?
            };
            let tools = if stateless_era {
                let body = stateless(&c, "tools/list", json!({})).await?;
                body["result"]["tools"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            } else {
                c.list_all_tools().await?
            };
            assert_eq!(
                names_of(&tools),
                ["search_tools", "call_tool", "local__echo"],
                "stateless: {stateless_era}"
            );
            assert!(tools[0]["outputSchema"].is_object());
            let r = call(
                &c,
                stateless_era,
                "search_tools",
                json!({"query": "add two numbers", "limit": 3}),
            )
            .await?;
            let result = &r["result"];
            assert_ne!(result["isError"], true, "{r}");
            let found = found_names(result);
            assert_eq!(found.len(), 3, "{found:?}");
            assert!(
                found[..2].contains(&"local__add".to_string())
                    && found[..2].contains(&"remote__add".to_string()),
                "{found:?}"
            );
            // Lossless: each definition is the one tools/list gives.
            for t in result["structuredContent"]["tools"].as_array().unwrap() {
                assert_eq!(Some(t.clone()), def(t["name"].as_str().unwrap()));
            }
            let text: Value = serde_json::from_str(text_of(result)?)?;
            assert_eq!(text, result["structuredContent"]);
            if stateless_era {
                assert_eq!(result["resultType"], "complete");
            }
            // call_tool: the tool's own result.
            let r = call(
                &c,
                stateless_era,
                "call_tool",
                json!({"name": "local__add", "arguments": {"a": 2, "b": 40}}),
            )
            .await?;
            let direct = call(&c, stateless_era, "local__add", json!({"a": 2, "b": 40})).await?;
            assert_eq!(
                r["result"], direct["result"],
                "call_tool answers as the direct call"
            );
            assert_eq!(r["result"]["structuredContent"]["sum"], 42.0, "{r}");
            // Argument validation runs on the real tool.
            let r = call(
                &c,
                stateless_era,
                "call_tool",
                json!({"name": "local__add", "arguments": {"a": "x"}}),
            )
            .await?;
            let direct = call(&c, stateless_era, "local__add", json!({"a": "x"})).await?;
            assert_eq!(r["result"], direct["result"], "{r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn bad_search_and_call_input_gets_tool_errors_a_model_can_act_on() -> Result<()> {
    bounded(async {
        let f = start("").await?;
        for stateless_era in [false, true] {
            let c = if stateless_era {
                at(&f, "/mcp/find")
            } else {
                session_at(&f, "/mcp/find").await?
            };
            let long = "x".repeat(1001);
            for (name, args, says) in [
                ("search_tools", json!({"query": ""}), "empty"),
                ("search_tools", json!({"query": long}), "the limit is 1000"),
                (
                    "search_tools",
                    json!({"query": "add", "limit": 0}),
                    "from 1 to 50",
                ),
                (
                    "search_tools",
                    json!({"query": "add", "limit": 51}),
                    "from 1 to 50",
                ),
                ("search_tools", json!({}), "`query` must be a string"),
                (
                    "call_tool",
                    json!({"name": "local__add", "arguments": [1, 2]}),
                    "must be an object",
                ),
                (
                    "call_tool",
                    json!({"arguments": {}}),
                    "`name` must be a string",
                ),
                (
                    "call_tool",
                    json!({"name": "remote__fail"}),
                    "Unknown tool: `remote__fail`",
                ),
                (
                    "call_tool",
                    json!({"name": "nope__nothing"}),
                    "Unknown tool: `nope__nothing`",
                ),
            ] {
                let r = call(&c, stateless_era, name, args.clone()).await?;
                let result = &r["result"];
                assert_eq!(result["isError"], true, "{name} {args}: {r}");
                let text = text_of(result)?;
                assert!(text.contains(says), "{name} {args}: {text}");
            }
            // A hidden tool and a missing one: the same answer but the name.
            let hidden = call(
                &c,
                stateless_era,
                "call_tool",
                json!({"name": "remote__fail"}),
            )
            .await?;
            let missing = call(
                &c,
                stateless_era,
                "call_tool",
                json!({"name": "remote__nofail"}),
            )
            .await?;
            assert_eq!(
                hidden["result"].to_string().replace("remote__fail", "N"),
                missing["result"].to_string().replace("remote__nofail", "N")
            );
            // A search never returns the endpoint's hidden tool.
            let r = call(
                &c,
                stateless_era,
                "search_tools",
                json!({"query": "fail always error", "limit": 50}),
            )
            .await?;
            let found = found_names(&r["result"]);
            assert!(!found.is_empty());
            assert!(!found.contains(&"remote__fail".to_string()), "{found:?}");
            // A direct call of a listed-elsewhere tool still works.
            let r = call(&c, stateless_era, "remote__echo", json!({"text": "hi"})).await?;
            assert_ne!(r["result"]["isError"], true, "{r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn search_stays_inside_the_endpoint_and_the_callers_policy() -> Result<()> {
    bounded(async {
        let policy = format!(
            "[auth]\nallow_anonymous = true\n\n\
             [[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\ngroups = [\"ops\"]\n\n\
             [[policy]]\nwho = [\"group:ops\"]\ntools = {{ allow = [\"*\"], deny = [\"*__add\"] }}\n\n\
             [[policy]]\nwho = [\"*\"]\ntools = {{ allow = [\"remote__*\"] }}\n",
            hash_key(OPS_KEY)
        );
        let f = start(&policy).await?;
        for stateless_era in [false, true] {
            // /mcp/grow holds `remote` only: no local tool, whatever the query.
            let grow = at(&f, "/mcp/grow");
            grow.set_bearer(Some(OPS_KEY));
            if !stateless_era {
                grow.initialize("2025-11-25", json!({})).await?;
            }
            let r = call(&grow, stateless_era, "search_tools", json!({"query": "echo text", "limit": 50})).await?;
            let found = found_names(&r["result"]);
            assert!(found.contains(&"remote__echo".to_string()), "{found:?}");
            assert!(found.iter().all(|n| n.starts_with("remote__")), "{found:?}");
            // Alice's rules deny `*__add`: never found, unknown to call_tool.
            let r = call(&grow, stateless_era, "search_tools", json!({"query": "add two numbers sum", "limit": 50})).await?;
            let found = found_names(&r["result"]);
            assert!(!found.iter().any(|n| n.ends_with("__add")), "{found:?}");
            let r = call(&grow, stateless_era, "call_tool", json!({"name": "remote__add", "arguments": {"a": 1, "b": 1}})).await?;
            assert!(text_of(&r["result"])?.contains("Unknown tool: `remote__add`"), "{r}");
            // Anonymous callers see only `remote__*`: on /mcp/find too.
            let anon = at(&f, "/mcp/find");
            if !stateless_era {
                anon.initialize("2025-11-25", json!({})).await?;
            }
            let r = call(&anon, stateless_era, "search_tools", json!({"query": "add two numbers", "limit": 50})).await?;
            let found = found_names(&r["result"]);
            assert!(found.contains(&"remote__add".to_string()), "{found:?}");
            assert!(found.iter().all(|n| n.starts_with("remote__")), "{found:?}");
            let r = call(&anon, stateless_era, "call_tool", json!({"name": "local__add", "arguments": {"a": 1, "b": 1}})).await?;
            assert!(text_of(&r["result"])?.contains("Unknown tool: `local__add`"), "{r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn call_tool_is_audited_once_naming_the_real_tool() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("endpoints")?;
        let audit = dir.0.join("audit.jsonl");
        let f = start(&format!(
            "[admin]\nlisten = \"127.0.0.1:0\"\n\n[audit]\npath = {}\nfsync = \"always\"\n",
            manifold_testkit::harness::toml_string(&audit.to_string_lossy())
        ))
        .await?;
        let c = session_at(&f, "/mcp/find").await?;
        let r = c
            .call_tool(
                "call_tool",
                json!({"name": "local__echo", "arguments": {"text": "hi"}}),
            )
            .await?;
        assert_ne!(r.result()?["isError"], true);
        f.session()
            .await?
            .call_tool("local__echo", json!({"text": "direct"}))
            .await?;
        let lines = audit_lines(&audit)?;
        let calls: Vec<&Value> = lines
            .iter()
            .filter(|l| l["method"] == "tools/call")
            .collect();
        assert_eq!(calls.len(), 2, "{lines:?}");
        let via = calls[0];
        assert_eq!(via["name"], "local__echo");
        assert_eq!(via["original"], "echo");
        assert_eq!(via["upstream"], "local");
        assert_eq!(via["via"], "call_tool");
        assert_eq!(via["endpoint"], "/mcp/find");
        assert_eq!(via["outcome"], "ok");
        let direct = calls[1];
        assert!(
            direct.get("via").is_none() && direct.get("endpoint").is_none(),
            "{direct}"
        );
        // Counted by endpoint: the initialize and the call on /mcp/find.
        let admin =
            f.gw.gateway()
                .admin_addr()
                .ok_or_else(|| anyhow!("admin"))?;
        let (_, metrics) = crate::observe::admin_get(admin, "/metrics").await?;
        let series = "manifold_endpoint_requests_total{endpoint=\"/mcp/find\",outcome=\"ok\"}";
        assert_eq!(
            crate::observe::sample(&metrics, series),
            Some(2.0),
            "{metrics}"
        );
        // What the endpoint holds, as the admin listener shows it.
        let (status, body) =
            crate::observe::admin_get(admin, "/catalog?endpoint=%2Fmcp%2Fops").await?;
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body)?;
        assert_eq!(v["endpoint"], "/mcp/ops");
        let exposed: Vec<&str> = v["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["exposed"].as_str()).collect())
            .unwrap_or_default();
        assert!(
            exposed.contains(&"local__echo") && !exposed.contains(&"local__crash"),
            "{exposed:?}"
        );
        assert!(
            exposed.iter().all(|n| n.starts_with("local__")),
            "{exposed:?}"
        );
        let (status, _) = crate::observe::admin_get(admin, "/catalog?endpoint=%2Fnope").await?;
        assert_eq!(status, 400);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn discovery_expand_adds_found_tools_to_the_sessions_list() -> Result<()> {
    bounded(async {
        let f = start("").await?;
        let c = session_at(&f, "/mcp/grow").await?;
        let mut stream = c.open_get_stream().await?;
        assert_eq!(
            names_of(&c.list_all_tools().await?),
            ["search_tools", "call_tool"]
        );
        let r = c
            .call_tool(
                "search_tools",
                json!({"query": "weather for a city", "limit": 1}),
            )
            .await?;
        assert_eq!(found_names(r.result()?), ["remote__weather"]);
        let note = stream
            .wait_for(|m| m["method"] == "notifications/tools/list_changed")
            .await?;
        assert!(note.get("id").is_none());
        assert_eq!(
            names_of(&c.list_all_tools().await?),
            ["search_tools", "call_tool", "remote__weather"]
        );
        // Another session of the same endpoint is not expanded.
        let other = session_at(&f, "/mcp/grow").await?;
        assert_eq!(
            names_of(&other.list_all_tools().await?),
            ["search_tools", "call_tool"]
        );
        // Stateless: no session, no expansion.
        let body = stateless(&at(&f, "/mcp/grow"), "tools/list", json!({})).await?;
        assert_eq!(
            names_of(body["result"]["tools"].as_array().unwrap()),
            ["search_tools", "call_tool"]
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn each_endpoint_has_its_protected_resource_metadata() -> Result<()> {
    bounded(async {
        let auth = format!(
            "[auth]\n\n[[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\n\n\
             [[endpoint]]\npath = \"/mcp/own\"\nresource = \"https://mcp.example.com/own\"\n",
            hash_key(OPS_KEY)
        );
        let f = start(&auth).await?;
        let base = format!("http://{}", f.gw.addr());
        for (path, metadata, resource) in [
            (
                "/mcp/ops",
                format!("{base}/.well-known/oauth-protected-resource/mcp/ops"),
                format!("{base}/mcp"),
            ),
            (
                "/mcp/own",
                "https://mcp.example.com/.well-known/oauth-protected-resource/own".to_string(),
                "https://mcp.example.com/own".to_string(),
            ),
        ] {
            // The 401 of the endpoint points at its own metadata.
            let c = at(&f, path);
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
            let r = c.post_raw(body.to_string(), &[]).await?;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED);
            let www = r
                .headers
                .get(http::header::WWW_AUTHENTICATE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default();
            assert!(www.contains(&format!("resource_metadata=\"{metadata}\"")), "{www}");
            // Served at the path-suffixed URL of this listener.
            let suffix = metadata.split(".well-known/oauth-protected-resource").nth(1).unwrap_or("");
            let (status, doc) = crate::observe::admin_get(
                f.gw.addr(),
                &format!("/.well-known/oauth-protected-resource{suffix}"),
            )
            .await?;
            assert_eq!(status, 200, "{path}");
            let doc: Value = serde_json::from_str(&doc)?;
            assert_eq!(doc["resource"], resource, "{doc}");
            // With the key, the endpoint serves.
            c.set_bearer(Some(OPS_KEY));
            c.initialize("2025-11-25", json!({})).await?;
        }
        // The default endpoint's stays where it was.
        let (status, doc) =
            crate::observe::admin_get(f.gw.addr(), "/.well-known/oauth-protected-resource/mcp")
                .await?;
        assert_eq!(status, 200);
        assert_eq!(serde_json::from_str::<Value>(&doc)?["resource"], format!("{base}/mcp"));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_reload_adds_changes_and_removes_endpoints() -> Result<()> {
    bounded(async {
        let f = start("").await?;
        let url = f.remote.url.clone();
        let ops = session_at(&f, "/mcp/ops").await?;
        let mut stream = ops.open_get_stream().await?;
        // Changed: /mcp/ops now also hides `local__echo`; its session hears it.
        let changed = Setup {
            extra: endpoints().replace(
                "deny = [\"local__crash\"]",
                "deny = [\"local__crash\", \"local__echo\"]",
            ) + "\n[[endpoint]]\npath = \"/mcp/new\"\nupstreams = [\"remote\"]\n",
            ..Setup::default()
        };
        f.gw.gateway()
            .reload(manifold_testkit::harness::TestGateway::config(
                &changed.render(&url),
            )?)
            .await?;
        stream
            .wait_for(|m| m["method"] == "notifications/tools/list_changed")
            .await?;
        let listed = names_of(&ops.list_all_tools().await?);
        assert!(!listed.contains(&"local__echo".to_string()), "{listed:?}");
        // Added.
        let new = session_at(&f, "/mcp/new").await?;
        let listed = names_of(&new.list_all_tools().await?);
        assert!(listed.iter().all(|n| n.starts_with("remote__")) && !listed.is_empty());
        // Removed: the path is gone, and its session with it.
        let removed = Setup::default();
        f.gw.gateway()
            .reload(manifold_testkit::harness::TestGateway::config(
                &removed.render(&url),
            )?)
            .await?;
        assert_eq!(list_status(&new).await?, StatusCode::NOT_FOUND);
        assert_eq!(list_status(&ops).await?, StatusCode::NOT_FOUND);
        Ok(())
    })
    .await
}

/// Security review 3, finding 7: `search_tools` is under `[[rate_limit]]`
/// as a tool call is (a rule for `*` covers it; a rule naming it, alone),
/// refused past its burst with the retry time and audited; other tools keep
/// their own buckets.
#[tokio::test]
async fn search_tools_takes_its_place_under_rate_limits() -> Result<()> {
    bounded(async {
        let f =
            start("[[rate_limit]]\nwho = [\"*\"]\ntools = [\"search_tools\"]\nrate = \"3/m\"\n")
                .await?;
        let c = session_at(&f, "/mcp/find").await?;
        for n in 0..3 {
            let r = call(
                &c,
                false,
                "search_tools",
                json!({"query": format!("add {n}")}),
            )
            .await?;
            assert_ne!(r["result"]["isError"], true, "{r}");
            assert!(r.get("error").is_none(), "search {n}: {r}");
        }
        let r = call(&c, false, "search_tools", json!({"query": "add"})).await?;
        assert_eq!(r["error"]["code"], -32060, "{r}");
        assert!(r["error"]["data"]["retryAfterMs"].as_u64().is_some(), "{r}");
        // call_tool and direct calls are another bucket.
        let r = call(
            &c,
            false,
            "call_tool",
            json!({"name": "local__add", "arguments": {"a": 1, "b": 2}}),
        )
        .await?;
        assert_eq!(r["result"]["structuredContent"]["sum"], 3.0, "{r}");
        Ok(())
    })
    .await
}
