//! MCP Apps (`io.modelcontextprotocol/ui`) between real peers: the official example servers
//! `@modelcontextprotocol/server-basic-vanillajs@2.0.3`, `server-basic-react@2.0.3` (both
//! publish `ui://get-time/mcp-app.html` and a `get-time` tool) and `server-pdf@2.0.4` (whose
//! viewer calls app-only tools), pinned in tests/interop/package.json, over stdio behind one
//! Manifold, driven by the official TypeScript SDK client (`tests/interop/ts/client.mjs`).
//! Each server is also asked directly, over stdio: through Manifold each tool's UI reference
//! names its own server's resource, whose HTML is that server's byte for byte; the
//! extensions the servers declare are advertised (these declare none); an app's call by its server's own tool name works where it is
//! unambiguous (an app-only tool of `server-pdf`; `get-time` on an endpoint with `naming =
//! "original"`) and is refused naming both candidates where it is not.

use anyhow::{bail, Context, Result};
use manifold_e2e::{serve, Peers, TempDir};
use serde_json::{json, Value};

use crate::{run_plan, STARTUP};

/// (upstream name, package, the UI its tool names).
const SERVERS: [(&str, &str, &str); 3] = [
    (
        "vanilla",
        "server-basic-vanillajs",
        "ui://get-time/mcp-app.html",
    ),
    ("react", "server-basic-react", "ui://get-time/mcp-app.html"),
    ("pdf", "server-pdf", "ui://pdf-viewer/mcp-app.html"),
];

/// The server's entry point.
fn entry(peers: &Peers, package: &str) -> String {
    peers
        .node_modules
        .join("@modelcontextprotocol")
        .join(package)
        .join("dist/index.js")
        .to_string_lossy()
        .into_owned()
}

/// The plan's results, failing on a driver error.
fn results(peers: &Peers, url: &str, plan: Value) -> Result<Value> {
    let (code, out, stderr) = run_plan(peers, "ts", url, &plan, None)?;
    if code != Some(0) {
        bail!("client.mjs against {url} exited {code:?}: {stderr}");
    }
    Ok(out)
}

/// The tool of `tools` named `name`.
fn tool<'a>(tools: &'a Value, name: &str) -> Result<&'a Value> {
    tools
        .as_array()
        .into_iter()
        .flatten()
        .find(|t| t["name"] == name)
        .with_context(|| format!("no tool {name} in {tools}"))
}

#[test]
fn the_official_app_servers_behind_manifold_each_serve_their_own_ui_and_calls() -> Result<()> {
    let peers = Peers::from_env()?;
    let dir = TempDir::new("apps")?;
    let mut config = String::from("[server]\nlisten = \"127.0.0.1:0\"\n\n");
    for (name, package, _) in SERVERS {
        config.push_str(&format!(
            "[upstreams.{name}]\ncommand = {node:?}\nargs = [{entry:?}, \"--stdio\"]\n\n",
            node = peers.node.to_string_lossy(),
            entry = entry(&peers, package),
        ));
    }
    config.push_str(
        "[[endpoint]]\npath = \"/mcp/vanilla\"\nupstreams = [\"vanilla\"]\nnaming = \"original\"\n\n\
         [[endpoint]]\npath = \"/mcp/react\"\nupstreams = [\"react\"]\nnaming = \"original\"\n",
    );
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config)?;
    let (_gateway, line, url) = serve("manifold", &cfg, "warn", STARTUP)?;
    if !line.contains("(3/3 upstreams ready") {
        bail!("the app servers did not come up: {line}");
    }

    // Through Manifold: the tools, each UI, an ambiguous and an app-only call by own name.
    let mut steps = vec![json!({"op": "list_tools"})];
    for (name, _, ui) in SERVERS {
        let exposed = ui.replacen("ui://", &format!("ui://{name}."), 1);
        steps.push(json!({"op": "read_resource", "uri": exposed}));
    }
    steps.push(json!({"op": "call_tool", "name": "get-time", "arguments": {}}));
    steps.push(json!({"op": "call_tool", "name": "submit_viewer_state",
                      "arguments": {"requestId": "no-such-request"}}));
    let via = results(&peers, &url, json!({"steps": steps}))?;
    let r = &via["results"];
    let listed: Vec<&str> = r[0]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str())
        .collect();
    assert!(
        !listed.iter().any(|n| n.ends_with("submit_viewer_state")),
        "an app-only tool is listed to the model: {listed:?}"
    );

    let mut declared = serde_json::Map::new();
    for (i, (name, package, ui)) in SERVERS.iter().enumerate() {
        // The same server directly, over stdio.
        let stdio = format!(
            "stdio:{}",
            json!([
                peers.node.to_string_lossy(),
                entry(&peers, package),
                "--stdio"
            ])
        );
        let mut steps = vec![
            json!({"op": "list_tools"}),
            json!({"op": "read_resource", "uri": ui}),
        ];
        if *name == "pdf" {
            steps.push(json!({"op": "call_tool", "name": "submit_viewer_state",
                              "arguments": {"requestId": "no-such-request"}}));
        }
        let direct = results(&peers, &stdio, json!({"steps": steps}))?;
        if let Some(ext) = direct["capabilities"]["extensions"].as_object() {
            for (k, v) in ext {
                declared.entry(k.clone()).or_insert(v.clone());
            }
        }
        let exposed = ui.replacen("ui://", &format!("ui://{name}."), 1);
        let own_tool = direct["results"][0]
            .as_array()
            .into_iter()
            .flatten()
            .find(|t| t["_meta"]["ui"]["resourceUri"] == *ui)
            .context("a tool with the UI")?;
        let own_name = own_tool["name"].as_str().context("name")?;
        let through = tool(&r[0], &format!("{name}__{own_name}"))?;
        assert_eq!(through["_meta"]["ui"]["resourceUri"], exposed, "{through}");
        // Its own server's HTML, byte for byte, under the exposed URI.
        let html = &direct["results"][1]["contents"][0];
        let read = &r[1 + i]["contents"][0];
        assert!(
            html["text"].as_str().is_some_and(|t| t.len() > 100),
            "{html}"
        );
        assert_eq!(read["text"], html["text"], "{name}: the UI is not its own");
        assert_eq!(read["mimeType"], "text/html;profile=mcp-app");
        assert_eq!(read["uri"], exposed);
        if *name == "pdf" {
            // The viewer's app-only call by its own name: as directly.
            assert_eq!(r[5]["content"], direct["results"][2]["content"], "{}", r[5]);
        }
    }
    // The extensions advertised are the ones the servers declare (these
    // examples declare none: hosts find their apps by the tools' `_meta.ui`).
    let advertised = via["capabilities"]["extensions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    assert_eq!(advertised, declared, "{}", via["capabilities"]);
    // `get-time` is the own name of two servers' tools: refused, naming both.
    let refused = r[4].to_string();
    assert!(
        refused.contains("vanilla__get-time") && refused.contains("react__get-time"),
        "{refused}"
    );

    // Each app server's own endpoint serves and calls `get-time` by its own name.
    for name in ["vanilla", "react"] {
        let ep = url.replace("/mcp", &format!("/mcp/{name}"));
        let out = results(
            &peers,
            &ep,
            json!({"steps": [{"op": "list_tools"},
                             {"op": "call_tool", "name": "get-time", "arguments": {}}]}),
        )?;
        let t = tool(&out["results"][0], "get-time")?;
        assert_eq!(
            t["_meta"]["ui"]["resourceUri"],
            format!("ui://{name}.get-time/mcp-app.html")
        );
        // The server's time (vanilla also as structuredContent, react as text).
        let answer = &out["results"][1];
        let time = answer["structuredContent"]["time"]
            .as_str()
            .or(answer["content"][0]["text"].as_str());
        assert!(time.is_some_and(|t| t.contains('T')), "{name}: {answer}");
    }
    Ok(())
}
