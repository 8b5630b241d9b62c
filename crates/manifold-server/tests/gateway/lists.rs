//! `tools/list`: merged, sorted, byte-stable, lossless, paginated; and
//! `notifications/tools/list_changed` on the GET stream.

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use crate::{bounded, expected_names, fixture, names_of, ok_text, Setup, DEMO_TOOLS};

#[tokio::test]
async fn tools_list_is_merged_and_sorted_by_exposed_name() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client.request("tools/list", json!({})).await?;
        let result = reply.result()?;
        assert!(result.get("nextCursor").is_none(), "{result}");
        let tools = result["tools"]
            .as_array()
            .ok_or_else(|| anyhow!("{result}"))?;
        let names = names_of(tools);
        assert_eq!(names, expected_names());
        for prefix in ["local__", "remote__"] {
            assert_eq!(
                names.iter().filter(|n| n.starts_with(prefix)).count(),
                DEMO_TOOLS.len(),
                "{prefix} tools"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn tools_list_is_byte_identical_across_calls_and_sessions() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let a = f.session().await?;
        let b = f.session().await?;
        let first = a.request_with_id(json!(5), "tools/list", json!({})).await?;
        let second = a.request_with_id(json!(5), "tools/list", json!({})).await?;
        let other = b.request_with_id(json!(5), "tools/list", json!({})).await?;
        assert!(!first.body.is_empty());
        assert_eq!(first.body, second.body, "two calls in one session differ");
        assert_eq!(first.body, other.body, "two sessions differ");
        Ok(())
    })
    .await
}

/// The upstream's own definitions, straight from the HTTP demo upstream.
async fn direct_tools(f: &crate::Fixture) -> Result<Vec<Value>> {
    let direct = f.remote.client();
    direct.initialize("2025-11-25", json!({})).await?;
    direct.list_all_tools().await
}

#[tokio::test]
async fn tool_definitions_pass_through_losslessly() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client.request("tools/list", json!({})).await?;
        let body = String::from_utf8(reply.body.to_vec())?;
        let tools = reply.result()?["tools"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let direct = direct_tools(&f).await?;
        assert_eq!(names_of(&direct), DEMO_TOOLS);
        for upstream in ["local", "remote"] {
            for original in &direct {
                let name = original["name"].as_str().unwrap_or_default();
                let exposed = format!("{upstream}__{name}");
                let mut expected = original.clone();
                expected["name"] = json!(exposed);
                let got = tools
                    .iter()
                    .find(|t| t["name"] == exposed.as_str())
                    .ok_or_else(|| anyhow!("{exposed} missing"))?;
                // Same members, same values, same order …
                assert_eq!(
                    serde_json::to_string(got)?,
                    serde_json::to_string(&expected)?,
                    "{exposed} differs from the upstream's definition"
                );
                // … and the very bytes the upstream wrote, only the name replaced.
                let text = serde_json::to_string(&expected)?;
                assert!(body.contains(&text), "{exposed}: {text} not in {body}");
            }
        }
        let echo = tools
            .iter()
            .find(|t| t["name"] == "local__echo")
            .ok_or_else(|| anyhow!("local__echo missing"))?;
        let keys: Vec<&str> = echo
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            [
                "name",
                "title",
                "description",
                "inputSchema",
                "annotations",
                "icons",
                "_meta",
                "x-demo-extension"
            ]
        );
        assert_eq!(
            echo["x-demo-extension"],
            json!({"kept": true, "order": [3, 1, 2]})
        );
        assert_eq!(
            echo["_meta"],
            json!({"io.manifold.demo/origin": "demo-upstream"})
        );
        assert!(body.contains(r#""x-demo-extension":{"kept":true,"order":[3,1,2]}"#));
        for upstream in ["local", "remote"] {
            let name = format!("{upstream}__regional_lookup");
            let tool = tools
                .iter()
                .find(|t| t["name"] == name.as_str())
                .ok_or_else(|| anyhow!("{name} missing"))?;
            let props = &tool["inputSchema"]["properties"];
            assert_eq!(props["region"]["x-mcp-header"], "Region", "{tool}");
            assert_eq!(props["verbose"]["x-mcp-header"], "Verbose", "{tool}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn downstream_pagination_yields_every_tool_once_in_order() -> Result<()> {
    bounded(async {
        let f = Setup {
            server: "page_size = 3".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let client = f.session().await?;
        let mut names = Vec::new();
        let mut cursor: Option<String> = None;
        let mut pages = 0;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let reply = client.request("tools/list", params).await?;
            let result = reply.result()?;
            let page = result["tools"]
                .as_array()
                .ok_or_else(|| anyhow!("{result}"))?;
            pages += 1;
            assert!(pages <= 20, "too many pages");
            names.extend(names_of(page));
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => {
                    assert_eq!(
                        page.len(),
                        3,
                        "a page before the last is not full: {result}"
                    );
                    cursor = Some(next.to_owned());
                }
                None => {
                    assert!((1..=3).contains(&page.len()), "{result}");
                    break;
                }
            }
        }
        assert_eq!(names, expected_names());
        assert_eq!(pages, expected_names().len().div_ceil(3));
        // The harness's own walk agrees.
        assert_eq!(names_of(&client.list_all_tools().await?), names);
        for bad in [json!("not-a-cursor"), json!(17)] {
            let reply = client.request("tools/list", json!({"cursor": bad})).await?;
            assert_eq!(reply.error()?["code"], -32602, "cursor {bad}: {reply}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn list_changed_reaches_the_get_stream_and_the_new_tool_works() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let mut stream = client.open_get_stream().await?;
        for (upstream, other) in [("local", "remote"), ("remote", "local")] {
            let tool = format!("fresh_{upstream}");
            let added = client
                .call_tool(&format!("{upstream}__add_tool"), json!({"name": tool}))
                .await?;
            assert_eq!(ok_text(&added)?, format!("added {tool}"));
            let note = stream
                .wait_for(|m| m["method"] == "notifications/tools/list_changed")
                .await?;
            assert!(note.get("id").is_none(), "{note}");
            let names = names_of(&client.list_all_tools().await?);
            assert!(names.contains(&format!("{upstream}__{tool}")), "{names:?}");
            assert!(!names.contains(&format!("{other}__{tool}")), "{names:?}");
            let mut sorted = names.clone();
            sorted.sort();
            assert_eq!(names, sorted, "the list is no longer sorted");
            let reply = client
                .call_tool(&format!("{upstream}__{tool}"), json!({}))
                .await?;
            assert_eq!(ok_text(&reply)?, format!("dynamic tool {tool}"));
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn prompts_are_merged_and_routed_too() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client.request("prompts/list", json!({})).await?;
        let prompts = reply.result()?["prompts"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(names_of(&prompts), ["local__greet", "remote__greet"]);
        for name in ["local__greet", "remote__greet"] {
            let reply = client
                .request(
                    "prompts/get",
                    json!({"name": name, "arguments": {"name": "Ada"}}),
                )
                .await?;
            let result = reply.result()?;
            assert_eq!(
                result["messages"][0]["content"]["text"], "Please greet Ada.",
                "{name}: {result}"
            );
        }
        let reply = client.request("prompts/get", json!({"name": "x"})).await?;
        assert_eq!(reply.error()?["code"], -32602, "{reply}");
        assert_eq!(reply.error()?["message"], "Unknown prompt: x", "{reply}");
        Ok(())
    })
    .await
}
