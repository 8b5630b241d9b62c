//! `manifold stdio` with the official SDK clients over stdio, as desktop
//! clients launch it: the TypeScript client (session era) and the Python client
//! in the session era and in 2026-07-28 (`server/discover`, then stateless
//! requests) list and call tools, get prompts, read resources, and answer a
//! sampling request relayed from the upstream mid-call.

use anyhow::Result;
use manifold_e2e::{manifold_bin, Peers, TempDir};
use serde_json::{json, Value};

#[test]
fn sdk_clients_use_manifold_over_stdio() -> Result<()> {
    let peers = Peers::from_env()?;
    let dir = TempDir::new("stdio")?;
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(
        &cfg,
        "[upstreams.demo]\ncommand = \"${MANIFOLD_SELF}\"\nargs = [\"demo-upstream\"]\n",
    )?;
    let url = format!(
        "stdio:{}",
        json!([
            manifold_bin()?.display().to_string(),
            "stdio",
            "--config",
            cfg.display().to_string()
        ])
    );
    let plan = |mode: &str| {
        json!({"mode": mode, "steps": [
            {"op": "list_tools"},
            {"op": "call_tool", "name": "demo__echo", "arguments": {"text": "over stdio"}},
            {"op": "list_prompts"},
            {"op": "get_prompt", "name": "demo__greet", "arguments": {"name": "Ada"}},
            {"op": "list_resources"},
            {"op": "read_resource", "uri": "demo://readme"},
            {"op": "call_tool", "name": "demo__sample", "arguments": {"prompt": "hi"}}
        ]})
    };
    for (client, mode, version) in [
        ("ts", "legacy", "2025-11-25"),
        ("py", "legacy", "2025-11-25"),
        ("py", "auto", "2026-07-28"),
    ] {
        let who = format!("{client} ({mode})");
        let (code, out, err) = super::run_plan(&peers, client, &url, &plan(mode), None)?;
        anyhow::ensure!(code == Some(0), "{who}: exit {code:?}: {err}");
        anyhow::ensure!(out["errors"] == json!([]), "{who}: {}", out["errors"]);
        anyhow::ensure!(
            out["protocolVersion"] == version,
            "{who}: {}",
            out["protocolVersion"]
        );
        let r = &out["results"];
        let names = |v: &Value, key: &str| -> Vec<String> {
            v.as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i[key].as_str().map(str::to_string))
                .collect()
        };
        anyhow::ensure!(
            names(&r[0], "name").contains(&"demo__echo".to_string()),
            "{who}: {}",
            r[0]
        );
        anyhow::ensure!(
            r[1]["content"][0]["text"] == "over stdio",
            "{who}: {}",
            r[1]
        );
        anyhow::ensure!(
            names(&r[2], "name").contains(&"demo__greet".to_string()),
            "{who}: {}",
            r[2]
        );
        anyhow::ensure!(
            r[3]["messages"][0]["content"]["text"]
                .as_str()
                .unwrap_or_default()
                .contains("Ada"),
            "{who}: {}",
            r[3]
        );
        anyhow::ensure!(
            names(&r[4], "uri").contains(&"demo://readme".to_string()),
            "{who}: {}",
            r[4]
        );
        anyhow::ensure!(
            r[5]["contents"][0]["uri"] == "demo://readme",
            "{who}: {}",
            r[5]
        );
        let sampled = r[6]["content"][0]["text"].as_str().unwrap_or_default();
        anyhow::ensure!(sampled.contains("canned sampling reply"), "{who}: {}", r[6]);
    }
    Ok(())
}
