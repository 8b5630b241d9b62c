//! Beside tools: resources (lists, templates, reads routed by URI, links learned
//! from results, shared subscriptions), completion, logging (levels applied
//! upstream, messages filtered per session and named by upstream), and the
//! capability union in `initialize`.
//!
//! Both demo upstreams serve the same resources, so the duplicate rule shows:
//! `local` sorts first and owns `demo://readme` and `demo://item/{id}`.

use std::time::Duration;

use anyhow::Result;
use serde_json::{json, Value};

use crate::{bounded, fixture, ok_text, touch_until};

#[tokio::test]
async fn resources_and_templates_are_merged_by_uri() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let list = client.request("resources/list", json!({})).await?;
        let resources = list.result()?["resources"].clone();
        assert_eq!(resources.as_array().map(Vec::len), Some(1), "{resources}");
        assert_eq!(resources[0]["uri"], "demo://readme");
        // Unknown members pass through.
        assert_eq!(resources[0]["x-demo-resource-extra"]["kept"], true);
        let templates = client
            .request("resources/templates/list", json!({}))
            .await?;
        let t = &templates.result()?["resourceTemplates"];
        assert_eq!(t.as_array().map(Vec::len), Some(1), "{t}");
        assert_eq!(t[0]["uriTemplate"], "demo://item/{id}");
        let bad = client
            .request("resources/list", json!({"cursor": "garbage"}))
            .await?;
        assert_eq!(bad.error()?["code"], -32602, "{bad}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn reads_route_by_list_template_and_learned_link() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let read = |uri: &str| {
            let client = client.clone();
            let uri = uri.to_string();
            async move { client.request("resources/read", json!({"uri": uri})).await }
        };
        let r = read("demo://readme").await?;
        assert_eq!(r.result()?["contents"][0]["uri"], "demo://readme", "{r}");
        assert_eq!(r.result()?["x-demo-read-extra"], 1, "{r}");
        let r = read("demo://item/7").await?;
        assert_eq!(r.result()?["contents"][0]["text"], "item 7", "{r}");

        // A URI no list or template names is unknown until a result hands it out.
        let before = read("demo://linked/5").await?;
        assert_eq!(before.error()?["code"], -32002, "{before}");
        assert!(
            before.error()?["message"]
                .as_str()
                .unwrap_or_default()
                .contains("demo://linked/5"),
            "{before}"
        );
        let link = client.call_tool("remote__link", json!({"n": 5})).await?;
        assert_eq!(
            link.result()?["content"][1]["type"],
            "resource_link",
            "{link}"
        );
        let after = read("demo://linked/5").await?;
        assert_eq!(
            after.result()?["contents"][0]["text"],
            "linked resource 5",
            "{after}"
        );
        let missing = client.request("resources/read", json!({})).await?;
        assert_eq!(missing.error()?["code"], -32602, "{missing}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn subscriptions_are_shared_and_updates_reach_only_subscribers() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let a = f.session().await?;
        let b = f.session().await?;
        let mut a_stream = a.open_get_stream().await?;
        let mut b_stream = b.open_get_stream().await?;
        let uri = "demo://item/1";
        for c in [&a, &b] {
            let r = c
                .request("resources/subscribe", json!({"uri": uri}))
                .await?;
            assert_eq!(r.result()?, &json!({}), "{r}");
        }
        // Only `a` stays subscribed; the upstream subscription stays while one does.
        let r = b
            .request("resources/unsubscribe", json!({"uri": uri}))
            .await?;
        assert_eq!(r.result()?, &json!({}), "{r}");
        touch_until(&a, "local__touch", uri, true).await?;
        let note = a_stream
            .wait_for(|m| m["method"] == "notifications/resources/updated")
            .await?;
        assert_eq!(note["params"]["uri"], uri, "{note}");
        // An unsubscribed session gets nothing.
        b_stream
            .nothing_within(Duration::from_millis(500), |_| true)
            .await?;
        // The last subscriber leaves: Manifold unsubscribes upstream.
        a.request("resources/unsubscribe", json!({"uri": uri}))
            .await?;
        touch_until(&a, "local__touch", uri, false).await?;
        // Ending a session also ends its subscriptions upstream.
        a.request("resources/subscribe", json!({"uri": uri}))
            .await?;
        touch_until(&b, "local__touch", uri, true).await?;
        a.delete().await?;
        touch_until(&b, "local__touch", uri, false).await?;
        let unknown = b
            .request("resources/subscribe", json!({"uri": "nope://x"}))
            .await?;
        assert_eq!(unknown.error()?["code"], -32002, "{unknown}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn completion_routes_prompt_and_resource_references() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let r = client
                .request(
                    "completion/complete",
                    json!({"ref": {"type": "ref/prompt", "name": format!("{upstream}__greet")},
                           "argument": {"name": "name", "value": "Al"}}),
                )
                .await?;
            assert_eq!(
                r.result()?["completion"]["values"],
                json!(["Alice", "Albert"]),
                "{upstream}: {r}"
            );
        }
        let r = client
            .request(
                "completion/complete",
                json!({"ref": {"type": "ref/resource", "uri": "demo://item/{id}"},
                       "argument": {"name": "id", "value": ""}}),
            )
            .await?;
        assert_eq!(r.result()?["completion"]["values"], json!(["1", "2", "3"]), "{r}");
        for bad in [
            json!({"ref": {"type": "ref/prompt", "name": "nope__greet"}, "argument": {"name": "n", "value": ""}}),
            json!({"ref": {"type": "ref/other"}, "argument": {"name": "n", "value": ""}}),
            json!({"argument": {"name": "n", "value": ""}}),
        ] {
            let r = client.request("completion/complete", bad.clone()).await?;
            assert_eq!(r.error()?["code"], -32602, "{bad}: {r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn log_levels_reach_upstreams_and_filter_messages_per_session() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let bad = client
            .request("logging/setLevel", json!({"level": "loud"}))
            .await?;
        assert_eq!(bad.error()?["code"], -32602, "{bad}");
        let r = client
            .request("logging/setLevel", json!({"level": "warning"}))
            .await?;
        assert_eq!(r.result()?, &json!({}), "{r}");
        for upstream in ["local", "remote"] {
            let level = client
                .call_tool(&format!("{upstream}__log_level"), json!({}))
                .await?;
            assert_eq!(ok_text(&level)?, "warning", "{upstream}");
            // Below the session's level: filtered out of the call's stream.
            let quiet = client
                .call_tool(
                    &format!("{upstream}__log"),
                    json!({"level": "info", "text": "x"}),
                )
                .await?;
            assert!(quiet.notifications().is_empty(), "{upstream}: {quiet}");
            // At or above: relayed, with the upstream named in `logger`.
            let loud = client
                .call_tool(
                    &format!("{upstream}__log"),
                    json!({"level": "error", "text": "boom", "logger": "db"}),
                )
                .await?;
            let notes = loud.notifications();
            assert_eq!(notes.len(), 1, "{upstream}: {loud}");
            assert_eq!(notes[0]["params"]["logger"], format!("{upstream}/db"));
            assert_eq!(notes[0]["params"]["data"], "boom");
        }
        // A message outside any call goes to GET streams, filtered per session.
        let verbose = f.session().await?;
        verbose
            .request("logging/setLevel", json!({"level": "debug"}))
            .await?;
        let mut quiet_stream = client.open_get_stream().await?;
        let mut verbose_stream = verbose.open_get_stream().await?;
        client
            .call_tool(
                "remote__log",
                json!({"level": "info", "text": "fyi", "broadcast": true}),
            )
            .await?;
        let m = verbose_stream
            .wait_for(|m| m["method"] == "notifications/message")
            .await?;
        assert_eq!(m["params"]["logger"], "remote", "{m}");
        // A session at `warning` gets nothing of it.
        quiet_stream
            .nothing_within(Duration::from_millis(500), |_| true)
            .await?;
        // Upstreams follow the most verbose level a live session asked for.
        let level = client.call_tool("local__log_level", json!({})).await?;
        assert_eq!(ok_text(&level)?, "debug");
        // The debugging session ends: the upstreams go back to `warning`.
        verbose.delete().await?;
        let back = "the upstream back at `warning` after the debug session ended";
        crate::eventually(back, Duration::from_secs(5), || async {
            let level = client.call_tool("local__log_level", json!({})).await?;
            Ok((ok_text(&level)? == "warning").then_some(()))
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn initialize_offers_the_union_of_upstream_capabilities() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let result: Value = f.gw.client().initialize("2025-11-25", json!({})).await?;
        let caps = &result["capabilities"];
        assert_eq!(caps["tools"]["listChanged"], true, "{caps}");
        assert_eq!(caps["prompts"]["listChanged"], true, "{caps}");
        assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
        assert_eq!(caps["resources"]["listChanged"], true, "{caps}");
        assert!(caps["completions"].is_object(), "{caps}");
        assert!(caps["logging"].is_object(), "{caps}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_alias_prefix_and_deny_globs_shape_the_catalog() -> Result<()> {
    bounded(async {
        let f = crate::Setup {
            local: "prefix = \"loc\"\ntools = { deny = [\"s*\", \"crash\"] }\nprompts = { allow = [\"nothing\"] }"
                .into(),
            ..crate::Setup::default()
        }
        .start()
        .await?;
        let client = f.session().await?;
        let names: Vec<String> = client
            .list_all_tools()
            .await?
            .iter()
            .filter_map(|t| t["name"].as_str().map(str::to_string))
            .collect();
        assert!(names.contains(&"loc__echo".to_string()), "{names:?}");
        for hidden in ["loc__sleep", "loc__slow_progress", "loc__sample", "loc__crash"] {
            assert!(!names.contains(&hidden.to_string()), "{hidden} in {names:?}");
        }
        assert!(!names.iter().any(|n| n.starts_with("local__")), "{names:?}");
        assert!(names.contains(&"remote__sleep".to_string()), "{names:?}");
        // Hidden is not callable, under any spelling.
        for name in ["loc__crash", "local__crash"] {
            let r = client.call_tool(name, json!({})).await?;
            assert_eq!(r.error()?["code"], -32602, "{name}: {r}");
        }
        let echo = client.call_tool("loc__echo", json!({"text": "hi"})).await?;
        assert_eq!(ok_text(&echo)?, "hi");
        let prompts = client.request("prompts/list", json!({})).await?;
        let prompts: Vec<&str> = prompts.result()?["prompts"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["name"].as_str())
            .collect();
        assert_eq!(prompts, ["remote__greet"]);
        Ok(())
    })
    .await
}
