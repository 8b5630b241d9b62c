//! Resource namespaces (`[naming] resources`) with two MCP Apps servers that
//! publish the same UI resource, `ui://get-time/mcp-app.html` (the demo's
//! `--app NAME`, shaped as the official `server-basic-*` examples are):
//! under the default `host-schemes` each is exposed under its upstream
//! (`ui://vanilla.get-time/…`), nothing is left out, each tool's
//! `_meta.ui.resourceUri` (and the flat `ui/resourceUri`) names its own
//! server's resource, each read returns its own server's HTML byte for byte,
//! and results' resource links and UI references come back exposed; the
//! upstreams' `io.modelcontextprotocol/ui` extension is advertised. From the
//! attacker's side: the URI as an upstream wrote it, or under a prefix no
//! upstream has, reads nothing. Under `resources = "never"` the second copy
//! collides, as before.

use anyhow::{Context, Result};
use serde_json::{json, Value};

use crate::{bin, bounded};
use manifold_testkit::harness::{toml_string, McpClient, TestGateway};

/// `extra`: more `[naming]` lines.
fn config(resources: &str, extra: &str) -> String {
    format!(
        "[naming]\nresources = \"{resources}\"\n{extra}\n\n\
         [upstreams.vanilla]\ncommand = {bin}\nargs = [\"--app\", \"vanilla\"]\n\n\
         [upstreams.react]\ncommand = {bin}\nargs = [\"--app\", \"react\"]\n",
        bin = toml_string(bin())
    )
}

async fn resource_uris(c: &McpClient) -> Result<Vec<String>> {
    let r = c.request("resources/list", json!({})).await?;
    Ok(r.result()?["resources"]
        .as_array()
        .context("resources")?
        .iter()
        .filter_map(|x| x["uri"].as_str().map(str::to_string))
        .collect())
}

/// The resources left out of the merged list whose URI starts with `prefix`.
fn left_out_of(gw: &TestGateway, prefix: &str) -> Vec<manifold_catalog::LeftOut> {
    gw.gateway()
        .catalog()
        .resources
        .resources
        .left_out()
        .iter()
        .filter(|l| l.original.starts_with(prefix))
        .cloned()
        .collect()
}

async fn read(c: &McpClient, uri: &str) -> Result<Value> {
    let r = c.request("resources/read", json!({"uri": uri})).await?;
    Ok(r.response()?.clone())
}

#[tokio::test]
async fn two_app_servers_each_serve_their_own_ui_under_their_own_name() -> Result<()> {
    bounded(async {
        let gw =
            TestGateway::start(&config("host-schemes", "namespaced_schemes = [\"demo\"]")).await?;
        // The upstreams' MCP Apps extension is advertised as the gateway's.
        let c = gw.client();
        let init = c.initialize("2025-11-25", json!({})).await?;
        assert_eq!(
            init["capabilities"]["extensions"][manifold_protocol::extensions::UI]["mimeTypes"],
            json!([manifold_demo::app::APP_MIME]),
            "{init}"
        );
        let uris = resource_uris(&c).await?;
        for upstream in ["vanilla", "react"] {
            let exposed = format!("ui://{upstream}.get-time/mcp-app.html");
            assert!(uris.contains(&exposed), "{exposed} in {uris:?}");
            // The tool names its own server's UI.
            let tools = c.list_all_tools().await?;
            let tool = tools
                .iter()
                .find(|t| t["name"] == format!("{upstream}__get-time"))
                .context("the app tool")?;
            assert_eq!(tool["_meta"]["ui"]["resourceUri"], exposed, "{tool}");
            assert_eq!(tool["_meta"]["ui/resourceUri"], exposed, "{tool}");
            // Its read is that server's HTML, byte for byte.
            let r = read(&c, &exposed).await?;
            let content = &r["result"]["contents"][0];
            assert_eq!(
                content["text"],
                manifold_demo::app::html(upstream),
                "{exposed}: {r}"
            );
            assert_eq!(content["mimeType"], manifold_demo::app::APP_MIME);
            assert_eq!(content["uri"], exposed, "the contents say the exposed URI");
            // A call's links and UI reference come back exposed.
            let r = c
                .call_tool(&format!("{upstream}__get-time"), json!({}))
                .await?;
            let result = r.result()?;
            assert_eq!(result["content"][1]["uri"], exposed, "{result}");
            assert_eq!(result["_meta"]["ui"]["resourceUri"], exposed, "{result}");
            assert_eq!(result["structuredContent"]["server"], upstream);
        }
        let left_out = left_out_of(&gw, "");
        // `demo://readme` too, a scheme the operator listed.
        assert!(left_out.is_empty(), "{left_out:?}");
        assert!(
            uris.contains(&"demo://vanilla.readme".to_string()),
            "{uris:?}"
        );
        let r = read(&c, "demo://vanilla.readme").await?;
        assert!(r["result"]["contents"][0]["text"].is_string(), "{r}");
        // The attacker's side: the upstream's own spelling, a prefix no
        // upstream has, or a crafted authority read nothing.
        for uri in [
            "ui://get-time/mcp-app.html",
            "ui://nobody.get-time/mcp-app.html",
            "ui://vanilla./mcp-app.html",
        ] {
            let r = read(&c, uri).await?;
            assert!(r.get("error").is_some(), "{uri}: {r}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn without_namespaces_the_second_ui_resource_collides_as_before() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&config("never", "")).await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let uris = resource_uris(&c).await?;
        assert_eq!(
            uris.iter().filter(|u| u.starts_with("ui://")).count(),
            1,
            "{uris:?}"
        );
        let left_out = left_out_of(&gw, "ui://");
        assert_eq!(left_out.len(), 1, "{left_out:?}");
        assert_eq!(
            &*left_out[0].upstream, "vanilla",
            "the first by name keeps it"
        );
        Ok(())
    })
    .await
}

/// An app inside a host calls its server's tools by their own names:
/// `get-time` reaches the one tool of the caller's view that its upstream
/// calls so; with two such tools the refusal names both and the fix; with
/// `[naming] resolve_original = false` it is an unknown tool.
#[tokio::test]
async fn an_apps_call_by_its_servers_own_tool_name_reaches_that_server_when_unambiguous(
) -> Result<()> {
    bounded(async {
        // Two app servers: ambiguous.
        let gw = TestGateway::start(&config("host-schemes", "")).await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("get-time", json!({})).await?;
        let e = r.error()?;
        assert_eq!(e["code"], -32602, "{r}");
        let msg = e["message"].as_str().unwrap_or_default();
        assert!(
            msg.contains("vanilla__get-time")
                && msg.contains("react__get-time")
                && msg.contains("[[endpoint]]"),
            "{msg}"
        );
        drop(gw);

        // One app server and a plain one: the app's own name works.
        for (resolve, works) in [(true, true), (false, false)] {
            let gw = TestGateway::start(&format!(
                "[naming]\nresolve_original = {resolve}\n\n\
                 [upstreams.vanilla]\ncommand = {bin}\nargs = [\"--app\", \"vanilla\"]\n\n\
                 [upstreams.plain]\ncommand = {bin}\n",
                bin = toml_string(bin())
            ))
            .await?;
            let c = gw.session("2025-11-25", json!({})).await?;
            let r = c.call_tool("get-time", json!({})).await?;
            if works {
                let result = r.result()?;
                assert_eq!(result["structuredContent"]["server"], "vanilla", "{result}");
                assert_eq!(
                    result["content"][1]["uri"], "ui://vanilla.get-time/mcp-app.html",
                    "{result}"
                );
            } else {
                assert_eq!(r.error()?["code"], -32602, "{r}");
            }
        }
        Ok(())
    })
    .await
}

/// A tool only its app may see (`_meta.ui.visibility: ["app"]`, as
/// `server-pdf`'s page loader) is not in the model's `tools/list` nor found
/// by search, and stays callable by its exposed and its own name.
#[tokio::test]
async fn an_app_only_tool_is_not_listed_to_the_model_and_stays_callable() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&format!(
            "[upstreams.vanilla]\ncommand = {bin}\nargs = [\"--app\", \"vanilla\"]\n\n\
             [[endpoint]]\npath = \"/mcp/find\"\ndiscovery = \"search\"\n",
            bin = toml_string(bin())
        ))
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let names = crate::names_of(&c.list_all_tools().await?);
        assert!(
            names.contains(&"vanilla__get-time".to_string()),
            "{names:?}"
        );
        assert!(
            !names.iter().any(|n| n.contains("refresh-time")),
            "{names:?}"
        );
        for name in ["vanilla__refresh-time", "refresh-time"] {
            let r = c.call_tool(name, json!({})).await?;
            assert_eq!(
                r.result()?["structuredContent"]["server"],
                "vanilla",
                "{name}: {r:?}"
            );
        }
        let find = McpClient::new(format!("{}/find", gw.url()));
        find.initialize("2025-11-25", json!({})).await?;
        let r = find
            .call_tool(
                "search_tools",
                json!({"query": "refresh time app button", "limit": 20}),
            )
            .await?;
        let found = r.result()?["structuredContent"]["tools"].clone();
        let found = crate::names_of(found.as_array().map(Vec::as_slice).unwrap_or(&[]));
        assert!(
            !found.iter().any(|n| n.contains("refresh-time")),
            "{found:?}"
        );
        Ok(())
    })
    .await
}

/// `[[policy]] resources` rules match the exposed spelling: a deny of
/// `ui://react.*` hides react's UI (listed nowhere, read as unknown, and its
/// tool's UI reference left out) and leaves vanilla's; a rule written with the upstreams' own spelling
/// (`ui://get-time/*`) matches no exposed URI.
#[tokio::test]
async fn resource_rules_match_the_exposed_spelling() -> Result<()> {
    bounded(async {
        for (deny, hidden) in [("ui://react.*", true), ("ui://get-time/*", false)] {
            let text = format!(
                "{}\n[[policy]]\nwho = [\"*\"]\ntools = {{ allow = [\"*\"] }}\n\
                 resources = {{ allow = [\"*\"], deny = [\"{deny}\"] }}\n",
                config("host-schemes", "")
            );
            let gw = TestGateway::start(&text).await?;
            let c = gw.session("2025-11-25", json!({})).await?;
            let uris = resource_uris(&c).await?;
            let react = "ui://react.get-time/mcp-app.html";
            assert!(
                uris.contains(&"ui://vanilla.get-time/mcp-app.html".to_string()),
                "{deny}: {uris:?}"
            );
            assert_eq!(
                !uris.contains(&react.to_string()),
                hidden,
                "{deny}: {uris:?}"
            );
            let r = read(&c, react).await?;
            assert_eq!(r.get("error").is_some(), hidden, "{deny}: {r}");
            // A tool whose UI the caller may not read keeps no reference to
            // it (a host would fetch it); the tool itself stays.
            let tools = c.list_all_tools().await?;
            let ui_of = |name: &str| {
                let t = tools
                    .iter()
                    .find(|t| t["name"] == name)
                    .cloned()
                    .unwrap_or_default();
                (
                    t["_meta"]["ui"]["resourceUri"].clone(),
                    t["_meta"]["ui/resourceUri"].clone(),
                )
            };
            let (react_ui, react_legacy) = ui_of("react__get-time");
            assert_eq!(
                react_ui.is_null() && react_legacy.is_null(),
                hidden,
                "{deny}: {react_ui} {react_legacy}"
            );
            assert_eq!(
                ui_of("vanilla__get-time").0,
                "ui://vanilla.get-time/mcp-app.html"
            );
            assert!(
                tools.iter().any(|t| t["name"] == "react__get-time"),
                "the tool stays"
            );
        }
        Ok(())
    })
    .await
}

/// `[[endpoint]] naming = "original"`: a host gives each app server its own
/// endpoint, whose tools are served and called by their own names; rules
/// still match exposed names there (a deny by exposed name hides the tool
/// under its own name too), and exposed names still resolve. An endpoint
/// whose own names collide is reported (what `manifold serve` refuses).
#[tokio::test]
async fn an_endpoint_named_original_serves_and_calls_its_tools_by_their_own_names() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&format!(
            "{}\n\
             [[endpoint]]\npath = \"/mcp/vanilla\"\nupstreams = [\"vanilla\"]\nnaming = \"original\"\n\n\
             [[endpoint]]\npath = \"/mcp/react\"\nupstreams = [\"react\"]\nnaming = \"original\"\n\n\
             [[policy]]\nwho = [\"*\"]\ntools = {{ allow = [\"*\"], deny = [\"react__refresh-time\"] }}\n\
             resources = {{ allow = [\"*\"] }}\n",
            config("host-schemes", "")
        ))
        .await?;
        assert!(gw.gateway().own_name_collisions().is_empty());
        for upstream in ["vanilla", "react"] {
            let c = McpClient::new(gw.url().replace("/mcp", &format!("/mcp/{upstream}")));
            c.initialize("2025-11-25", json!({})).await?;
            let tools = c.list_all_tools().await?;
            let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
            assert!(names.contains(&"get-time"), "{upstream}: {names:?}");
            assert!(names.iter().all(|n| !n.contains("__")), "{upstream}: {names:?}");
            for name in ["get-time".to_string(), format!("{upstream}__get-time")] {
                let r = c.call_tool(&name, json!({})).await?;
                let result = r.result()?;
                assert_eq!(result["structuredContent"]["server"], upstream, "{name}: {result}");
            }
            // The app-only tool, by its own name: denied by its exposed name
            // on react's endpoint.
            let r = c.call_tool("refresh-time", json!({})).await?;
            if upstream == "react" {
                assert_eq!(r.error()?["code"], -32602, "{r}");
            } else {
                assert!(r.result().is_ok(), "{r}");
            }
        }
        drop(gw);
        // One endpoint over both servers: their `get-time` collide.
        let gw = TestGateway::start(&format!(
            "{}\n[[endpoint]]\npath = \"/mcp/apps\"\nnaming = \"original\"\n",
            config("host-schemes", "")
        ))
        .await?;
        let collisions = gw.gateway().own_name_collisions();
        assert!(
            collisions.iter().any(|c| c.starts_with("/mcp/apps: tool `get-time`")
                && c.contains("react__get-time")
                && c.contains("vanilla__get-time")),
            "{collisions:?}"
        );
        Ok(())
    })
    .await
}
