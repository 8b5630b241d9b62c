//! Tool search with the official SDK clients: through a `discovery = "search"`
//! endpoint (`/mcp/find`), the TypeScript client (session era) and the Python
//! client (session era, 2026-07-28, and its auto mode) list the meta-tools,
//! search, and call the found tool through `call_tool` — which goes through
//! `[confirm]` like a direct call, answered by the SDK's own elicitation handler
//! (in 2026-07-28 as an `InputRequiredResult` the SDK answers and retries).

use anyhow::Result;
use manifold_e2e::Peers;
use serde_json::{json, Value};

fn plan(mode: &str) -> Value {
    json!({
        "mode": mode,
        "elicitation": "accept",
        "steps": [
            {"op": "list_tools"},
            {"op": "call_tool", "name": "search_tools", "arguments": {"query": "add two numbers", "limit": 3}},
            {"op": "call_tool", "name": "call_tool", "arguments": {"name": "demo__add", "arguments": {"a": 40, "b": 2}}},
            {"op": "call_tool", "name": "call_tool", "arguments": {"name": "demo__nothing"}}
        ]
    })
}

#[test]
fn sdk_clients_search_and_call_through_a_search_endpoint_in_both_eras() -> Result<()> {
    let peers = Peers::from_env()?;
    let gw = super::DemoGateway::start(
        "search",
        "[confirm]\ntools = [\"demo__add\"]\n\n[[endpoint]]\npath = \"/mcp/find\"\ndiscovery = \"search\"\n",
    )?;
    let url = gw.url.replace("/mcp", "/mcp/find");
    for (client, mode) in [
        ("ts", "legacy"),
        ("py", "legacy"),
        ("py", "2026-07-28"),
        ("py", "auto"),
    ] {
        let who = format!("{client} ({mode})");
        let (code, out, err) = super::run_plan(&peers, client, &url, &plan(mode), None)?;
        anyhow::ensure!(code == Some(0), "{who}: exit {code:?}: {err}");
        let names: Vec<&str> = out["results"][0]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        anyhow::ensure!(names == ["search_tools", "call_tool"], "{who}: {names:?}");
        let found: Vec<&str> = out["results"][1]["structuredContent"]["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        anyhow::ensure!(found.first() == Some(&"demo__add"), "{who}: {out}");
        let called = &out["results"][2];
        anyhow::ensure!(
            called["content"][0]["text"] == "42" && called["isError"] != true,
            "{who}: {out}"
        );
        let asked = out["elicited"].as_array().cloned().unwrap_or_default();
        anyhow::ensure!(asked.len() == 1, "{who}: confirmation asked {asked:?}");
        let unknown = &out["results"][3];
        anyhow::ensure!(
            unknown["isError"] == true
                && unknown["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("Unknown tool: `demo__nothing`"),
            "{who}: {out}"
        );
    }
    Ok(())
}

/// The MCP Inspector's CLI mode (pinned in tests/interop/inspector, installed by
/// scripts/peers) against the same kind of search endpoint: it lists the
/// meta-tools, searches, and calls the found tool through `call_tool`, one
/// process per step as an operator would from a shell.
#[test]
fn the_mcp_inspector_cli_searches_and_calls_through_a_search_endpoint() -> Result<()> {
    let peers = Peers::from_env()?;
    let cli = std::env::var("MANIFOLD_INSPECTOR_CLI").map_err(|_| {
        anyhow::anyhow!(
            "MANIFOLD_INSPECTOR_CLI is not set: run scripts/test (scripts/peers installs the Inspector)"
        )
    })?;
    let gw = super::DemoGateway::start(
        "search-inspector",
        "[[endpoint]]\npath = \"/mcp/find\"\ndiscovery = \"search\"\n",
    )?;
    let url = gw.url.replace("/mcp", "/mcp/find");
    let home = std::env::temp_dir().join(format!("manifold-inspector-{}", std::process::id()));
    std::fs::create_dir_all(&home)?;
    let run = |args: &[&str]| -> Result<Value> {
        // `timeout` bounds a CLI that would hang on a broken answer.
        let out = std::process::Command::new("timeout")
            .arg("60")
            .arg(&peers.node)
            .arg(&cli)
            .args(["--cli", &url, "--transport", "http"])
            .args(args)
            .env("HOME", &home)
            .output()?;
        anyhow::ensure!(
            out.status.success(),
            "inspector {args:?}: exit {:?}: {}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        Ok(serde_json::from_slice(&out.stdout)?)
    };
    let listed = run(&["--method", "tools/list"])?;
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    anyhow::ensure!(names == ["search_tools", "call_tool"], "{listed}");
    let found = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "search_tools",
        "--tool-arg",
        "query=echo text back",
        "limit=3",
    ])?;
    let first = &found["structuredContent"]["tools"][0];
    anyhow::ensure!(first["name"] == "demo__echo", "{found}");
    // Lossless: the definition as tools/list would give it, unknown members kept.
    anyhow::ensure!(first["x-demo-extension"]["kept"] == true, "{found}");
    let called = run(&[
        "--method",
        "tools/call",
        "--tool-name",
        "call_tool",
        "--tool-arg",
        "name=demo__echo",
        r#"arguments={"text":"via the inspector"}"#,
    ])?;
    anyhow::ensure!(
        called["content"][0]["text"] == "via the inspector" && called["isError"] != true,
        "{called}"
    );
    let _ = std::fs::remove_dir_all(&home);
    Ok(())
}

/// Semantic search (`[discovery.semantic]` with the pinned all-MiniLM-L6-v2,
/// `MANIFOLD_TEST_MODEL`) with the SDK clients: a task in the user's own words
/// ("will it rain in Paris tomorrow", no word of `weather`'s name or
/// description) finds the tool, and the found tool is called through
/// `call_tool`. The endpoint's tools are embedded in the background after its
/// first search, so the first client retries (bounded) until they are.
#[test]
fn sdk_clients_find_a_tool_by_meaning_through_a_semantic_search_endpoint() -> Result<()> {
    let peers = Peers::from_env()?;
    let model = std::env::var("MANIFOLD_TEST_MODEL")
        .map_err(|_| anyhow::anyhow!("MANIFOLD_TEST_MODEL is not set: run scripts/peers"))?;
    let gw = super::DemoGateway::start(
        "semantic",
        &format!(
            "[[endpoint]]\npath = \"/mcp/find\"\ndiscovery = \"search\"\n\n\
             [discovery.semantic]\nmodel = {}\n",
            Value::String(model)
        ),
    )?;
    let url = gw.url.replace("/mcp", "/mcp/find");
    let plan = |mode: &str| {
        json!({
            "mode": mode,
            "steps": [
                {"op": "call_tool", "name": "search_tools",
                 "arguments": {"query": "will it rain in Paris tomorrow", "limit": 3}},
                {"op": "call_tool", "name": "call_tool",
                 "arguments": {"name": "demo__weather", "arguments": {"city": "Paris"}}}
            ]
        })
    };
    for (i, (client, mode)) in [("ts", "legacy"), ("py", "2026-07-28"), ("py", "auto")]
        .into_iter()
        .enumerate()
    {
        let who = format!("{client} ({mode})");
        // Only the first may meet the tools still being embedded.
        let tries = if i == 0 { 30 } else { 1 };
        let mut last = Value::Null;
        for _ in 0..tries {
            let (code, out, err) = super::run_plan(&peers, client, &url, &plan(mode), None)?;
            anyhow::ensure!(code == Some(0), "{who}: exit {code:?}: {err}");
            let first = out["results"][0]["structuredContent"]["tools"][0]["name"].clone();
            last = out;
            if first == "demo__weather" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
        let found = &last["results"][0]["structuredContent"]["tools"][0]["name"];
        anyhow::ensure!(found == "demo__weather", "{who}: {last}");
        let called = &last["results"][1];
        anyhow::ensure!(called["isError"] != true, "{who}: {last}");
    }
    Ok(())
}
