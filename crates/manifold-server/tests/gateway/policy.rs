//! `[[policy]]` through the running gateway: who sees and may use which tools,
//! prompts and resources, in both eras. What a caller may not use is absent from
//! its lists and answers exactly as an unknown item does (no existence oracle);
//! completion and subscriptions obey the same view; a session hears
//! `list_changed` only when its own view changed; 2026-07-28 lists are
//! `cacheScope: private` when views differ by caller.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};
use std::time::Duration;

use crate::{bounded, names_of, Fixture, Setup};
use manifold_policy::hash_key;
use manifold_testkit::harness::{stateless_request, McpClient, STATELESS};

pub(crate) const OPS: &str = "ops-key-0123456789";
pub(crate) const CI: &str = "ci-key-0123456789";

/// `[auth]` with two keys (`alice` in group `ops`, `ci`) and three rules.
pub(crate) fn config() -> String {
    format!(
        "[auth]\nallow_anonymous = true\n\n\
         [[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\ngroups = [\"ops\"]\n\n\
         [[auth.api_keys]]\nname = \"ci\"\nhash = \"{}\"\n\n\
         [[policy]]\nwho = [\"group:ops\"]\n\
         tools = {{ allow = [\"local__*\"], deny = [\"local__crash\"] }}\n\
         prompts = {{ allow = [\"*\"] }}\n\
         resources = {{ allow = [\"demo://readme\"] }}\n\n\
         [[policy]]\nwho = [\"key:ci\"]\n\
         tools = {{ allow = [\"*__echo\", \"local__add_tool\", \"local__fresh_*\"] }}\n\n\
         [[policy]]\nwho = [\"*\"]\ntools = {{ allow = [\"remote__add\"] }}\n",
        hash_key(OPS),
        hash_key(CI)
    )
}

async fn start() -> Result<Fixture> {
    Setup {
        extra: config(),
        ..Setup::default()
    }
    .start()
    .await
}

/// A session-era client with the key (`None`: anonymous).
pub(crate) async fn session(f: &Fixture, key: Option<&str>) -> Result<McpClient> {
    let c = f.gw.client();
    c.set_bearer(key);
    c.initialize("2025-11-25", json!({})).await?;
    Ok(c)
}

/// The error with the item's name made generic, to compare a hidden item's
/// answer with an unknown one's.
fn generic(error: &Value, name: &str) -> String {
    error.to_string().replace(name, "NAME")
}

#[tokio::test]
async fn each_caller_sees_and_uses_only_its_view_in_both_eras() -> Result<()> {
    bounded(async {
        let f = start().await?;
        // (key, tools/list, usable, hidden)
        let table: [(Option<&str>, &[&str], &str, &str); 3] = [
            (
                Some(OPS),
                &[
                    "local__add",
                    "local__add_tool",
                    "local__sleep",
                    "local__echo",
                ],
                "local__echo",
                "local__crash",
            ),
            (
                Some(CI),
                &[
                    "local__add_tool",
                    "local__echo",
                    "remote__add",
                    "remote__echo",
                ],
                "remote__echo",
                "local__add",
            ),
            (None, &["remote__add"], "remote__add", "remote__echo"),
        ];
        for (key, listed, usable, hidden) in table {
            let c = session(&f, key).await?;
            let names = names_of(&c.list_all_tools().await?);
            for want in listed {
                assert!(
                    names.contains(&want.to_string()),
                    "{key:?}: {want} not in {names:?}"
                );
            }
            assert!(
                !names.contains(&hidden.to_string()),
                "{key:?}: {hidden} listed"
            );
            if key == Some(OPS) {
                assert!(
                    names
                        .iter()
                        .all(|n| n.starts_with("local__") || n == "remote__add"),
                    "{names:?}"
                );
            }
            if key.is_none() {
                assert_eq!(names, ["remote__add"]);
            }
            // Callable, and the hidden one answers exactly as a made-up name.
            let args = json!({"text": "hi", "a": 1, "b": 2});
            c.call_tool(usable, args.clone()).await?.result()?;
            let hidden_err = c.call_tool(hidden, args.clone()).await?;
            let unknown_err = c.call_tool("local__no_such_tool", args.clone()).await?;
            assert_eq!(
                generic(hidden_err.error()?, hidden),
                generic(unknown_err.error()?, "local__no_such_tool"),
                "{key:?}: a hidden tool must answer as an unknown one"
            );

            // 2026-07-28: the same view, private cache scope, same unknown answer.
            let s = f.gw.client();
            s.set_bearer(key);
            let (status, list) = s
                .send_stateless(&stateless_request(1, "tools/list", json!({})), &[])
                .await?;
            assert_eq!(status, StatusCode::OK, "{list}");
            let page = names_of(list["result"]["tools"].as_array().context("tools")?);
            assert!(
                page.contains(&usable.to_string()) && !page.contains(&hidden.to_string()),
                "{page:?}"
            );
            assert_eq!(list["result"]["cacheScope"], "private", "{list}");
            let call = |name: &str| {
                stateless_request(2, "tools/call", json!({"name": name, "arguments": args}))
            };
            let (hs, hidden_msg) = s.send_stateless(&call(hidden), &[]).await?;
            let (us, unknown_msg) = s.send_stateless(&call("local__no_such_tool"), &[]).await?;
            assert_eq!(hs, us);
            assert_eq!(
                generic(&hidden_msg["error"], hidden),
                generic(&unknown_msg["error"], "local__no_such_tool"),
                "{key:?}: 2026-07-28 hidden vs unknown"
            );
            let (status, ok) = s.send_stateless(&call(usable), &[]).await?;
            assert_eq!(status, StatusCode::OK, "{ok}");
            assert!(ok.get("result").is_some(), "{ok}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn prompts_resources_completion_and_subscriptions_obey_the_view() -> Result<()> {
    bounded(async {
        let f = start().await?;
        let ops = session(&f, Some(OPS)).await?;
        let ci = session(&f, Some(CI)).await?;

        // Prompts: ops may, ci's rule names no prompts.
        let prompts = |r: &manifold_testkit::harness::Reply| -> Result<Vec<String>> {
            Ok(names_of(r.result()?["prompts"].as_array().context("prompts")?))
        };
        assert_eq!(prompts(&ops.request("prompts/list", json!({})).await?)?, ["local__greet", "remote__greet"]);
        assert!(prompts(&ci.request("prompts/list", json!({})).await?)?.is_empty());
        let get = json!({"name": "local__greet", "arguments": {"name": "Ada"}});
        ops.request("prompts/get", get.clone()).await?.result()?;
        let hidden = ci.request("prompts/get", get).await?;
        let unknown = ci.request("prompts/get", json!({"name": "local__nope", "arguments": {}})).await?;
        assert_eq!(generic(hidden.error()?, "local__greet"), generic(unknown.error()?, "local__nope"));

        // Completion of a hidden prompt's argument: unknown, as for a made-up one.
        let complete = |name: &str| json!({"ref": {"type": "ref/prompt", "name": name}, "argument": {"name": "name", "value": "A"}});
        ops.request("completion/complete", complete("local__greet")).await?.result()?;
        let hidden = ci.request("completion/complete", complete("local__greet")).await?;
        let unknown = ci.request("completion/complete", complete("local__nope")).await?;
        assert_eq!(generic(hidden.error()?, "local__greet"), generic(unknown.error()?, "local__nope"));

        // Resources by URI: ops sees and reads demo://readme, not the template;
        // ci sees nothing, and reading or subscribing is "not found".
        let listed = |r: &manifold_testkit::harness::Reply, member: &str| -> Result<usize> {
            Ok(r.result()?[member].as_array().context("list")?.len())
        };
        assert_eq!(listed(&ops.request("resources/list", json!({})).await?, "resources")?, 1);
        assert_eq!(listed(&ops.request("resources/templates/list", json!({})).await?, "resourceTemplates")?, 0);
        assert_eq!(listed(&ci.request("resources/list", json!({})).await?, "resources")?, 0);
        ops.request("resources/read", json!({"uri": "demo://readme"})).await?.result()?;
        let hidden = ci.request("resources/read", json!({"uri": "demo://readme"})).await?;
        assert_eq!(hidden.error()?["code"], -32002, "{hidden}");
        let hidden = ci.request("resources/read", json!({"uri": "demo://item/7"})).await?;
        assert_eq!(hidden.error()?["code"], -32002, "{hidden}");
        ops.request("resources/subscribe", json!({"uri": "demo://readme"})).await?.result()?;
        let refused = ci.request("resources/subscribe", json!({"uri": "demo://readme"})).await?;
        assert_eq!(refused.error()?["code"], -32002, "{refused}");

        // 2026-07-28 listen streams: a URI outside the view is not honoured.
        for (key, honoured) in [(OPS, json!(["demo://readme"])), (CI, json!([]))] {
            let c = f.gw.client();
            c.set_bearer(Some(key));
            let listen = stateless_request(
                9,
                "subscriptions/listen",
                json!({"notifications": {"resourceSubscriptions": ["demo://readme"]}}),
            );
            let mut stream = c
                .send_streaming_with(
                    &listen,
                    &[
                        ("mcp-protocol-version", STATELESS),
                        ("mcp-method", "subscriptions/listen"),
                    ],
                )
                .await?;
            let ack = stream.expect_next().await?;
            assert_eq!(
                ack["params"]["notifications"]["resourceSubscriptions"], honoured,
                "{ack}"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn list_changed_reaches_only_the_sessions_whose_view_changed() -> Result<()> {
    bounded(async {
        let f = start().await?;
        let ci = session(&f, Some(CI)).await?;
        let ops = session(&f, Some(OPS)).await?;
        let anon = session(&f, None).await?;
        let mut ci_stream = ci.open_get_stream().await?;
        let mut ops_stream = ops.open_get_stream().await?;
        let mut anon_stream = anon.open_get_stream().await?;
        // ci adds local__fresh_one: in ci's view (local__fresh_*) and ops's
        // (local__*), not in the anonymous view (remote__add only).
        ci.call_tool("local__add_tool", json!({"name": "fresh_one"}))
            .await?
            .result()?;
        let changed = |m: &Value| m["method"] == "notifications/tools/list_changed";
        ci_stream.wait_for(changed).await?;
        ops_stream.wait_for(changed).await?;
        // Sent in the same pass as the two above: had it been sent, it is here.
        // The anonymous view did not change.
        anon_stream
            .nothing_within(Duration::from_millis(300), changed)
            .await?;
        assert!(names_of(&ci.list_all_tools().await?).contains(&"local__fresh_one".to_string()));
        assert_eq!(names_of(&anon.list_all_tools().await?), ["remote__add"]);
        Ok(())
    })
    .await
}

/// The admin listener's operator views, for an operator `[admin] who` names
/// (alice, in group `ops`): `/catalog?as=WHO` (what `manifold check --as`
/// prints), `/upstreams`, and `/config` with every secret redacted.
#[tokio::test]
async fn admin_endpoints_show_a_callers_catalog_the_upstreams_and_a_redacted_config() -> Result<()>
{
    bounded(async {
        let f = Setup {
            remote:
                "timeout = \"20s\"\nheaders = { Authorization = \"Bearer s3cret-upstream-token\" }"
                    .into(),
            extra: format!(
                "[admin]\nlisten = \"127.0.0.1:0\"\nwho = [\"group:ops\"]\n\n{}",
                config()
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        let admin = f.gw.gateway().admin_addr().context("admin address")?;
        let bearer = format!("Bearer {OPS}");
        let get = |path: &'static str| {
            let bearer = bearer.clone();
            async move {
                let r = crate::admin::admin_call(
                    admin,
                    "GET",
                    path,
                    &[("Authorization", bearer.as_str())],
                    "",
                )
                .await?;
                anyhow::Ok((r.status, r.body))
            }
        };

        let (status, body) = get("/catalog?as=key%3Aci").await?;
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body)?;
        let exposed: Vec<&str> = v["tools"]
            .as_array()
            .context("tools")?
            .iter()
            .filter_map(|t| t["exposed"].as_str())
            .collect();
        assert_eq!(
            exposed,
            [
                "local__add_tool",
                "local__echo",
                "remote__add",
                "remote__echo"
            ]
        );
        let hidden = v["hidden"].as_array().context("hidden")?;
        let add = hidden
            .iter()
            .find(|h| h["name"] == "local__add")
            .context("local__add hidden")?;
        assert!(
            add["reason"]
                .as_str()
                .unwrap_or_default()
                .contains("no rule"),
            "{add}"
        );
        let (status, body) = get("/catalog?as=team%3Ax").await?;
        assert_eq!(status, 400, "{body}");
        let (_, everything) = get("/catalog").await?;
        let all: Value = serde_json::from_str(&everything)?;
        assert!(all["tools"].as_array().context("tools")?.len() > exposed.len());
        assert!(all["hidden"].is_null());

        let (status, body) = get("/upstreams").await?;
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body)?;
        let local = v["upstreams"]
            .as_array()
            .context("upstreams")?
            .iter()
            .find(|u| u["name"] == "local")
            .context("local")?;
        assert_eq!(local["state"], "ready", "{local}");
        assert_eq!(local["transport"], "stdio");
        assert!(local["items"]["tools"].as_u64().unwrap_or(0) > 5, "{local}");

        let (status, body) = get("/config").await?;
        assert_eq!(status, 200, "{body}");
        assert!(
            !body.contains("s3cret-upstream-token"),
            "a secret in /config: {body}"
        );
        let v: Value = serde_json::from_str(&body)?;
        assert_eq!(
            v["upstreams"]["remote"]["headers"]["Authorization"],
            "[REDACTED]"
        );
        assert_eq!(v["policy"][0]["who"], json!(["group:ops"]));
        Ok(())
    })
    .await
}

/// An upstream a caller's view holds nothing of is not named to it: its
/// instructions are left out of `initialize`.
#[tokio::test]
async fn an_upstream_outside_the_view_is_not_named_in_the_instructions() -> Result<()> {
    bounded(async {
        let f = start().await?;
        let instructions = |key: Option<&'static str>| {
            let c = f.gw.client();
            c.set_bearer(key);
            async move {
                let r = c
                    .request(
                        "initialize",
                        json!({"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "0"}}),
                    )
                    .await?;
                Ok::<_, anyhow::Error>(
                    r.result()?["instructions"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            }
        };
        // ops sees local__* tools; the anonymous view holds only remote__add.
        assert!(instructions(Some(OPS)).await?.contains("## local"));
        let anon = instructions(None).await?;
        assert!(!anon.contains("## local"), "{anon}");
        Ok(())
    })
    .await
}

/// A hidden template does not route reads for the caller: a URI it would
/// route is refused like an unknown one, while a listed URI the rules allow is
/// read.
#[tokio::test]
async fn a_hidden_template_routes_no_reads() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[[policy]]\nwho = [\"*\"]\ntools = { allow = [\"*\"] }\n\
                    resources = { allow = [\"demo://*\"], deny = [\"demo://item/{id}\"] }\n"
                .into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let c = f.session().await?;
        c.request("resources/read", json!({"uri": "demo://readme"}))
            .await?
            .result()?;
        let r = c
            .request("resources/read", json!({"uri": "demo://item/7"}))
            .await?;
        assert_eq!(r.error()?["code"], -32002, "{r}");
        let t = c.request("resources/templates/list", json!({})).await?;
        assert_eq!(t.result()?["resourceTemplates"], json!([]), "{t}");
        Ok(())
    })
    .await
}

/// An upstream's log messages outside any call reach only the sessions whose
/// view holds something of that upstream.
#[tokio::test]
async fn an_upstreams_broadcast_logs_reach_only_sessions_that_see_it() -> Result<()> {
    bounded(async {
        let f = start().await?;
        let ops = session(&f, Some(OPS)).await?;
        let anon = session(&f, None).await?;
        let mut ops_stream = ops.open_get_stream().await?;
        let mut anon_stream = anon.open_get_stream().await?;
        ops.call_tool(
            "local__log",
            json!({"level": "warning", "text": "server-wide", "broadcast": true}),
        )
        .await?
        .result()?;
        let is_log = |m: &Value| m["method"] == "notifications/message";
        let note = ops_stream.wait_for(is_log).await?;
        assert_eq!(note["params"]["data"], "server-wide", "{note}");
        // Delivered in the same pass: had the anonymous session been sent it,
        // it would be here.
        // The anonymous view holds nothing of local.
        anon_stream
            .nothing_within(Duration::from_millis(300), is_log)
            .await?;
        Ok(())
    })
    .await
}
