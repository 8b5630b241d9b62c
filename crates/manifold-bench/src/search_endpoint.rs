//! The `search` scenario of `manifold-load`: a search endpoint (`[[endpoint]]
//! discovery = "search"`) through a running gateway.
//!
//! - `tools/list` bytes of the 1,000-tool default endpoint against the search
//!   endpoint of the same gateway;
//! - `call_tool` against the direct `tools/call` of the same tool (echo), on the
//!   same gateway, in alternating rounds (`compare`);
//! - `search_tools` over a 10,000-tool catalogue (two demo upstreams of 4,993
//!   synthetic tools and the demo's 14 fixed tools each), calls/s and p50/p99,
//!   for a selective query and for a worst-case one that matches every
//!   synthetic tool.
//!
//! Not here: the index alone, in-process (`search_index`).

use anyhow::{Context, Result};
use serde_json::{json, Value};
use std::process::Command;

use super::{
    args::Args, measure::compare, measure::measure, session::spawn_and_read_url,
    session::spawn_gateway, session::HttpClient, session::Session,
};

/// Synthetic tools per upstream of the 10,000-tool gateway (two upstreams, plus
/// the demo's fixed tools: 2 × (4,986 + 14) = 10,000).
const SYNTHETIC_PER_UPSTREAM: usize = 4_986;

/// `[server] page_size` of the scenario's gateways: every tool on one page,
/// so the bytes compared are the whole list.
const PAGE: usize = 20_000;

/// `url` with its path replaced by `path` (`http://h:p/mcp` → `http://h:p/mcp/find`).
fn at(url: &str, path: &str) -> String {
    let origin_end = url
        .find("://")
        .and_then(|i| url[i + 3..].find('/').map(|j| i + 3 + j))
        .unwrap_or(url.len());
    format!("{}{path}", &url[..origin_end])
}

/// Bytes of a `tools/list` result at `url` (one session).
async fn list_bytes(client: &HttpClient, url: &str) -> Result<usize> {
    let s = Session::open(client, url).await?;
    let (_, bytes) = s
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await?;
    s.close().await;
    Ok(bytes.len())
}

fn tools_call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

/// Runs the scenario, printing rows of `manifold-load`'s table (and the
/// `tools/list` sizes as lines below it).
pub(crate) async fn run(
    client: &HttpClient,
    exe: &std::path::Path,
    dir: &std::path::Path,
    upstreams: &str,
    args: &Args,
) -> Result<()> {
    let endpoint = "[[endpoint]]\npath = \"/mcp/find\"\ndiscovery = \"search\"\n";
    let cfg = dir.join("gateway-search.toml");
    std::fs::write(
        &cfg,
        format!("[server]\nlisten = \"127.0.0.1:0\"\npage_size = {PAGE}\n{upstreams}{endpoint}"),
    )?;
    let (_gw, url) = spawn_gateway(exe, &cfg, args.pin)?;
    let find = at(&url, "/mcp/find");
    let (full, search) = (
        list_bytes(client, &url).await?,
        list_bytes(client, &find).await?,
    );
    let listed = list_tool_count(client, &url).await?;
    let echo = json!({"text": "hello"});
    for &c in &args.concurrency {
        let direct = tools_call("bench__echo", echo.clone());
        let via = tools_call(
            "call_tool",
            json!({"name": "bench__echo", "arguments": echo}),
        );
        let (d, g) = compare(client, (&url, &direct), (&find, &via), c, args).await?;
        let (dr, gr) = (d.rate(), g.rate());
        println!(
            "| tools/call echo: direct → call_tool on a search endpoint | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
            100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
        );
    }

    // 10,000 tools behind one search endpoint.
    let mut kills = Vec::new();
    let mut ups = String::new();
    for name in ["s1", "s2"] {
        let mut demo = Command::new(exe);
        demo.args([
            "demo-upstream",
            "--http",
            "127.0.0.1:0",
            "--tools",
            &SYNTHETIC_PER_UPSTREAM.to_string(),
            "--instructions",
            "",
        ]);
        let (kill, up) = spawn_and_read_url(demo, "listening on")?;
        kills.push(kill);
        ups.push_str(&format!("[upstreams.{name}]\nurl = \"{up}\"\n"));
    }
    let cfg = dir.join("gateway-search-10k.toml");
    std::fs::write(
        &cfg,
        format!("[server]\nlisten = \"127.0.0.1:0\"\npage_size = {PAGE}\n{ups}{endpoint}"),
    )?;
    let (_big, big_url) = spawn_gateway(exe, &cfg, args.pin)?;
    let big_find = at(&big_url, "/mcp/find");
    let tools = list_tool_count(client, &big_url).await?;
    for (what, query) in [
        ("selective query", "weather for a city"),
        ("worst case: matches every tool", "synthetic echo tool"),
    ] {
        let body = tools_call("search_tools", json!({"query": query, "limit": 8}));
        for &c in &args.concurrency {
            let s = measure(client, &big_find, body.clone(), c, args.seconds).await?;
            println!(
                "| search_tools, {tools} tools, {what} | {c} | – | {:.0} | – | – | {} / {} | – |",
                s.rate(),
                s.p50_us,
                s.p99_us
            );
        }
    }
    println!();
    println!(
        "tools/list bytes: default endpoint ({listed} tools, one page) {full} B; search endpoint {search} B"
    );
    drop(kills);
    Ok(())
}

/// How many tools the default endpoint at `url` lists.
async fn list_tool_count(client: &HttpClient, url: &str) -> Result<usize> {
    let s = Session::open(client, url).await?;
    let (_, bytes) = s
        .post(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .await?;
    s.close().await;
    let v: Value = serde_json::from_slice(&bytes).context("tools/list")?;
    Ok(v["result"]["tools"].as_array().map_or(0, Vec::len))
}
