//! Code mode with the official SDK clients: through a `discovery = "code"`
//! endpoint (`/mcp/code`), the TypeScript client (session era) and the
//! Python client (session era, 2026-07-28, and its auto mode) list the
//! meta-tools, search, and run one script that searches and composes two
//! tools; a tool under `[confirm]` inside the script is asked through the
//! SDK's own elicitation handler — on the script's stream in the session era
//! (the script waits), as an `InputRequiredResult` the SDK answers and
//! retries in 2026-07-28 (the script is paused, then runs on); a script
//! reaching a tool that does not exist fails naming it.

use anyhow::Result;
use manifold_e2e::Peers;
use serde_json::{json, Value};

const SCRIPT: &str = "def main(inputs):\n    found = search('echo a text', limit = 2)\n    s = call('demo__add', {'a': inputs['a'], 'b': 2})\n    e = call('demo__echo', {'text': 'hi'})\n    return {'found': [t['name'] for t in found], 'sum': s['content'][0]['text'], 'echo': e['content'][0]['text']}\n";

fn plan(mode: &str) -> Value {
    json!({
        "mode": mode,
        "elicitation": "accept",
        "steps": [
            {"op": "list_tools"},
            {"op": "call_tool", "name": "search_tools", "arguments": {"query": "add two numbers", "limit": 3}},
            {"op": "call_tool", "name": "run_script", "arguments": {"script": SCRIPT, "inputs": {"a": 40}}},
            {"op": "call_tool", "name": "run_script", "arguments": {"script": "def main():\n    return call('demo__nothing')\n"}}
        ]
    })
}

#[test]
fn sdk_clients_search_and_run_scripts_through_a_code_endpoint_in_both_eras() -> Result<()> {
    let peers = Peers::from_env()?;
    let gw = super::DemoGateway::start(
        "code",
        "[confirm]\ntools = [\"demo__add\"]\n\n[[endpoint]]\npath = \"/mcp/code\"\ndiscovery = \"code\"\n",
    )?;
    let url = gw.url.replace("/mcp", "/mcp/code");
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
        anyhow::ensure!(names == ["search_tools", "run_script"], "{who}: {names:?}");
        let found: Vec<&str> = out["results"][1]["structuredContent"]["tools"]
            .as_array()
            .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
            .unwrap_or_default();
        anyhow::ensure!(found.first() == Some(&"demo__add"), "{who}: {out}");
        let ran = &out["results"][2];
        let asked = out["elicited"].as_array().cloned().unwrap_or_default();
        let value = &ran["structuredContent"]["value"];
        anyhow::ensure!(
            ran["isError"] != true
                && value["sum"] == "42"
                && value["echo"] == "hi"
                && value["found"][0] == "demo__echo",
            "{who}: {out}"
        );
        anyhow::ensure!(ran["structuredContent"]["calls"] == 2, "{who}: {out}");
        anyhow::ensure!(asked.len() == 1, "{who}: confirmation asked {asked:?}");
        let unknown = &out["results"][3];
        anyhow::ensure!(
            unknown["isError"] == true
                && unknown["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("demo__nothing"),
            "{who}: {out}"
        );
    }
    Ok(())
}
