//! The `code` scenario of `manifold-load`: a code endpoint (`[[endpoint]]
//! discovery = "code"`) through a running gateway.
//!
//! - `run_script` of a script making one call (echo) against the direct
//!   `tools/call` of the same tool on the same gateway, in alternating rounds:
//!   what a script's worker process and its round trips add;
//! - scripts/s of a script making ten calls;
//! - the context a model reads for one realistic task over the real
//!   catalogue (`--catalog`, 20 servers, 742 tools): a list endpoint's
//!   `tools/list` and four call results, a search endpoint's list, two
//!   searches and four `call_tool` round trips, and a code endpoint's list,
//!   two searches and one script — in bytes, and in tokens as bytes / 4.
//!
//! Needs `manifold-code-worker` next to `--manifold` (`scripts/build-code-worker
//! --release`).
//!
//! Not here: search alone (`search_endpoint`).

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::process::Command;

use super::{
    args::Args, measure::compare, measure::measure, session::spawn_and_read_url,
    session::spawn_gateway, session::HttpClient, session::Session,
};

/// `[code]` of the scenario's gateways: a worker for every concurrent script.
const CODE: &str = "[code]\nworkers = 32\nmax_queued = 64\n";

/// `url` with its path replaced by `path`.
fn at(url: &str, path: &str) -> String {
    let origin_end = url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| i + 3 + j))
        .unwrap_or(url.len());
    format!("{}{path}", &url[..origin_end])
}

fn tools_call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

fn run_script(script: &str) -> Value {
    tools_call("run_script", json!({"script": script}))
}

/// Runs the scenario, printing rows of `manifold-load`'s table and the
/// context comparison below it.
pub(crate) async fn run(
    client: &HttpClient,
    exe: &std::path::Path,
    dir: &std::path::Path,
    upstreams: &str,
    args: &Args,
) -> Result<()> {
    let endpoint = "[[endpoint]]\npath = \"/mcp/code\"\ndiscovery = \"code\"\n";
    let cfg = dir.join("gateway-code.toml");
    std::fs::write(
        &cfg,
        format!("[server]\nlisten = \"127.0.0.1:0\"\n{upstreams}{endpoint}{CODE}"),
    )?;
    let (_gw, url) = spawn_gateway(exe, &cfg, args.pin)?;
    let code = at(&url, "/mcp/code");
    let one = "def main():\n    return call('bench__echo', {'text': 'hello'})\n";
    let ten = "def main():\n    n = 0\n    for i in range(10):\n        r = call('bench__echo', {'text': 'hello'})\n        n += len(r['content'])\n    return n\n";
    // A script that does not run is no measurement.
    let s = Session::open(client, &code).await?;
    let (_, answer) = s.post(&run_script(ten)).await?;
    s.close().await;
    let answer: Value = serde_json::from_slice(&answer).context("run_script's answer")?;
    anyhow::ensure!(
        answer["result"]["structuredContent"]["value"] == 10,
        "the 10-call script did not run: {answer}"
    );
    for &c in &args.concurrency {
        let direct = tools_call("bench__echo", json!({"text": "hello"}));
        let (d, g) = compare(client, (&url, &direct), (&code, &run_script(one)), c, args).await?;
        let (dr, gr) = (d.rate(), g.rate());
        println!(
            "| tools/call echo: direct → run_script of one call | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
            100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
        );
    }
    for &c in &args.concurrency {
        let s = measure(client, &code, run_script(ten), c, args.seconds).await?;
        println!(
            "| run_script of ten calls (scripts/s) | {c} | – | {:.0} | – | – | {} / {} | – |",
            s.rate(),
            s.p50_us,
            s.p99_us
        );
    }
    context(client, exe, dir, args).await
}

/// One task's context in each discovery mode, over the real catalogue.
async fn context(
    client: &HttpClient,
    exe: &std::path::Path,
    dir: &std::path::Path,
    args: &Args,
) -> Result<()> {
    let catalog: Value = serde_json::from_slice(
        &std::fs::read(&args.catalog)
            .with_context(|| format!("the catalogue {} (--catalog)", args.catalog.display()))?,
    )?;
    let servers: Vec<String> = catalog["servers"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|s| s["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut kills = Vec::new();
    let mut ups = String::new();
    for name in &servers {
        let mut demo = Command::new(exe);
        demo.arg("demo-upstream")
            .args(["--http", "127.0.0.1:0", "--instructions", ""])
            .arg("--catalog")
            .arg(&args.catalog)
            .args(["--catalog-server", name]);
        let (kill, up) = spawn_and_read_url(demo, "listening on")?;
        kills.push(kill);
        ups.push_str(&format!("[upstreams.{name}]\nurl = \"{up}\"\n"));
    }
    let endpoints = "[[endpoint]]\npath = \"/mcp/find\"\ndiscovery = \"search\"\n\
                     [[endpoint]]\npath = \"/mcp/code\"\ndiscovery = \"code\"\n";
    let cfg = dir.join("gateway-code-catalog.toml");
    std::fs::write(
        &cfg,
        format!("[server]\nlisten = \"127.0.0.1:0\"\npage_size = 20000\n{ups}{endpoints}{CODE}"),
    )?;
    let (_gw, url) = spawn_gateway(exe, &cfg, args.pin)?;
    // The task: find Linear issues about a checkout timeout and post each of
    // the three found to Slack's #oncall.
    let searches = [
        json!({"query": "search linear issues", "limit": 5}),
        json!({"query": "post a message to a slack channel", "limit": 5}),
    ];
    let calls: Vec<(&str, Value)> = std::iter::once((
        "linear__linear_search_issues",
        json!({"query": "checkout timeout", "limit": 3}),
    ))
    .chain((0..3).map(|i| {
        (
            "slack__conversations_add_message",
            json!({"channel_id": "#oncall", "payload": format!("issue {i}: checkout timeout")}),
        )
    }))
    .collect();
    let script = "def main():\n    found = call('linear__linear_search_issues', {'query': 'checkout timeout', 'limit': 3})\n    posted = 0\n    for i in range(3):\n        call('slack__conversations_add_message', {'channel_id': '#oncall', 'payload': 'issue %d: checkout timeout' % i})\n        posted += 1\n    return {'posted': posted}\n";
    let mut rows = Vec::new();
    for (mode, path) in [
        ("list", "/mcp"),
        ("search", "/mcp/find"),
        ("code", "/mcp/code"),
    ] {
        let s = Session::open(client, &at(&url, path)).await?;
        let (_, list) = s
            .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
            .await?;
        let mut read = list.len();
        let mut turns = 0;
        if mode != "list" {
            for q in &searches {
                let (_, found) = s.post(&tools_call("search_tools", q.clone())).await?;
                read += found.len();
                turns += 1;
            }
        }
        match mode {
            "code" => {
                let body = run_script(script);
                let (_, answer) = s.post(&body).await?;
                anyhow::ensure!(
                    serde_json::from_slice::<Value>(&answer)?["result"]["structuredContent"]
                        ["value"]["posted"]
                        == 3,
                    "the task's script did not run: {}",
                    String::from_utf8_lossy(&answer)
                );
                // The model writes the script and reads its value.
                read += body.to_string().len() + answer.len();
                turns += 1;
            }
            _ => {
                for (name, arguments) in &calls {
                    let body = match mode {
                        "search" => {
                            tools_call("call_tool", json!({"name": name, "arguments": arguments}))
                        }
                        _ => tools_call(name, arguments.clone()),
                    };
                    let (_, answer) = s.post(&body).await?;
                    read += body.to_string().len() + answer.len();
                    turns += 1;
                }
            }
        }
        s.close().await;
        rows.push((mode, list.len(), read, turns));
    }
    println!();
    println!(
        "One task over the real catalogue ({} servers): find 3 Linear issues, post each to Slack",
        servers.len()
    );
    println!();
    println!("| discovery | tools/list bytes | bytes the model reads and writes | ≈ tokens (bytes / 4) | tool round trips |");
    println!("|---|---|---|---|---|");
    for (mode, list, read, turns) in rows {
        println!("| {mode} | {list} | {read} | {} | {turns} |", read / 4);
    }
    drop(kills);
    Ok(())
}
