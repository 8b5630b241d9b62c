//! `manifold-load`: measures `tools/call` and `tools/list` through Manifold against
//! the same upstream called directly, and prints a Markdown table for
//! docs/benchmarks.md; with `--soak MINUTES`, a long mixed run reporting RSS and
//! file-descriptor slopes instead (see `soak`); with `--search-index TOOLS`, the
//! tool search index alone, in-process (see `search_index`); the `search`
//! scenario measures a search endpoint through the gateway (`search_endpoint`);
//! with `--peers`, direct / Manifold / mcp-proxy side by side (see `peers`);
//! with `--callgrind`, the gateway's instructions per call (see `callgrind`).
//!
//! The upstream is the demo upstream over Streamable HTTP (`manifold demo-upstream
//! --http`), started once; the gateway fronts it, so the only difference between the
//! two columns is the gateway hop. Every loop is bounded by `--duration`, all traffic
//! stays on 127.0.0.1, and the children are killed at the end.

use anyhow::{bail, Context, Result};
use clap::Parser;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use std::process::{Command, Stdio};

mod args;
mod callgrind;
mod code_endpoint;
mod measure;
mod peers;
mod pool;
mod relay;
mod search_endpoint;
mod search_index;
mod semantic_index;
mod session;
mod soak;
mod targets;

use args::Args;
use measure::compare;
use session::{hash_key, spawn_and_read_url, spawn_gateway, HttpClient};

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(to) = args.peers.relay_to {
        return relay::serve(to).await;
    }
    if let Some(tools) = args.search_index {
        return search_index::run(&args.catalog, tools, args.model.as_deref());
    }
    let exe = std::fs::canonicalize(&args.manifold).context("the manifold binary")?;
    let dir = std::env::temp_dir().join(format!("manifold-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    if args.pin {
        // Threads started later inherit the mask; so do the upstreams spawned below.
        let pinned = Command::new("taskset")
            .args(["-a", "-c", "-p", "0", &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()
            .context("taskset (util-linux) is needed for --pin")?;
        if !pinned.success() {
            bail!("taskset could not pin the load generator to CPU 0");
        }
    }
    if args.peers.peers || args.peers.callgrind {
        let result = if args.peers.callgrind {
            callgrind::run(&exe, &dir, &args.peers, &args.concurrency).await
        } else {
            let shared = (&args.concurrency[..], args.seconds, args.rounds, args.pin);
            peers::run(&exe, &dir, &args.peers, shared).await
        };
        let _ = std::fs::remove_dir_all(&dir);
        return result;
    }
    if let Some(minutes) = args.soak {
        let result = soak::run(&exe, &dir, minutes, args.pin).await;
        let _ = std::fs::remove_dir_all(&dir);
        return result;
    }
    let mut demo = Command::new(&exe);
    demo.args([
        "demo-upstream",
        "--http",
        "127.0.0.1:0",
        "--instructions",
        "",
    ]);
    let (_demo, direct_url) = spawn_and_read_url(demo, "listening on")?;
    let mut big = Command::new(&exe);
    big.args([
        "demo-upstream",
        "--http",
        "127.0.0.1:0",
        "--tools",
        "986",
        "--instructions",
        "",
    ]);
    let (_big, big_url) = spawn_and_read_url(big, "listening on")?;

    let upstreams = format!(
        "[upstreams.bench]\nurl = \"{direct_url}\"\n[upstreams.big]\nurl = \"{big_url}\"\n"
    );
    let cfg = dir.join("gateway.toml");
    std::fs::write(
        &cfg,
        format!("[server]\nlisten = \"127.0.0.1:0\"\n{upstreams}"),
    )?;
    let (_gw, gw_url) = spawn_gateway(&exe, &cfg, args.pin)?;
    // The same gateway with [auth] (one API key), started only for `auth`.
    let authed = if args.scenarios.iter().any(|s| s == "auth") {
        let hash = hash_key(&exe, BENCH_KEY)?;
        let cfg = dir.join("gateway-auth.toml");
        std::fs::write(
            &cfg,
            format!(
                "[server]\nlisten = \"127.0.0.1:0\"\n[[auth.api_keys]]\nname = \"bench\"\nhash = \"{hash}\"\n{upstreams}"
            ),
        )?;
        Some(spawn_gateway(&exe, &cfg, args.pin)?)
    } else {
        None
    };

    let client: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(256)
        .build_http();
    let call = |name: &str| json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":{"text":"hello"}}});
    println!("| measurement | concurrency | direct calls/s | via Manifold calls/s | ratio | direct p50 / p99 (µs) | via Manifold p50 / p99 (µs) | added p50 (µs) |");
    println!("|---|---|---|---|---|---|---|---|");
    for scenario in &args.scenarios {
        if !["call", "list", "auth", "policy", "search", "code", "pool"]
            .contains(&scenario.as_str())
        {
            bail!(
                "unknown scenario {scenario:?}: expected call, list, auth, policy, search, code or pool"
            );
        }
    }
    let run = |s: &str| args.scenarios.iter().any(|x| x == s);
    for &c in args.concurrency.iter().filter(|_| run("call")) {
        let (d, g) = compare(
            &client,
            (&direct_url, &call("echo")),
            (&gw_url, &call("bench__echo")),
            c,
            &args,
        )
        .await?;
        let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
        println!(
            "| tools/call echo | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
            100.0 * gr / dr,
            d.p50_us,
            d.p99_us,
            g.p50_us,
            g.p99_us,
            g.p50_us as i128 - d.p50_us as i128
        );
    }
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    for &c in args.concurrency.iter().filter(|_| run("list")) {
        // Direct: the 1,000-tool upstream alone; via Manifold: the merged catalog of
        // both upstreams (986 + 14 = 1,000 tools) served from the snapshot.
        let (d, g) = compare(&client, (&big_url, &list), (&gw_url, &list), c, &args).await?;
        let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
        println!(
            "| tools/list, 1,000 tools | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
            100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
        );
    }
    if let Some((_authed, auth_url)) = &authed {
        // "direct" here is Manifold without [auth]; the other column adds a
        // bearer API key checked on every request (the cached path a JWT takes
        // after its first verification).
        for &c in &args.concurrency {
            let with_key = format!("{auth_url}#{BENCH_KEY}");
            let body = call("bench__echo");
            let (d, g) = compare(&client, (&gw_url, &body), (&with_key, &body), c, &args).await?;
            let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
            println!(
                "| tools/call echo: no [auth] → bearer API key | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
                100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
            );
        }
    }
    if run("policy") {
        // "direct" here is Manifold with nothing on (no [auth], no [[policy]],
        // no validation); the other column has all of it: 100 API keys in 100
        // groups, 100 [[policy]] rules giving each group its own 990-tool view,
        // argument validation, and the workers' requests spread over the keys.
        let bare_cfg = dir.join("gateway-bare.toml");
        std::fs::write(
            &bare_cfg,
            format!("[server]\nlisten = \"127.0.0.1:0\"\n[validation]\narguments = \"off\"\noutput = \"off\"\n{upstreams}"),
        )?;
        let (_bare, bare_url) = spawn_gateway(&exe, &bare_cfg, args.pin)?;
        let mut full = String::from("[server]\nlisten = \"127.0.0.1:0\"\n");
        let mut keys = Vec::new();
        for i in 0..VIEWS {
            let key = format!("{BENCH_KEY}-{i:02}");
            let hash = hash_key(&exe, &key)?;
            full.push_str(&format!(
                "[[auth.api_keys]]\nname = \"k{i}\"\nhash = \"{hash}\"\ngroups = [\"g{i}\"]\n\
                 [[policy]]\nwho = [\"group:g{i}\"]\ntools = {{ allow = [\"*\"], deny = [\"big__synthetic_0{i:02}*\"] }}\n"
            ));
            keys.push(key);
        }
        full.push_str(&upstreams);
        let full_cfg = dir.join("gateway-full.toml");
        std::fs::write(&full_cfg, full)?;
        let (_full, full_url) = spawn_gateway(&exe, &full_cfg, args.pin)?;
        let with_keys = format!("{full_url}#{}", keys.join(","));
        for &c in &args.concurrency {
            for (what, body) in [
                ("tools/list, 1,000 tools", &list),
                ("tools/call echo", &call("bench__echo")),
            ] {
                let (d, g) =
                    compare(&client, (&bare_url, body), (&with_keys, body), c, &args).await?;
                let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
                println!(
                    "| {what}: bare → [auth] + 100 views + validation | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
                    100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
                );
            }
        }
    }
    if run("search") {
        search_endpoint::run(&client, &exe, &dir, &upstreams, &args).await?;
    }
    if run("code") {
        code_endpoint::run(&client, &exe, &dir, &upstreams, &args).await?;
    }
    if run("pool") {
        pool::run(&client, &exe, &dir, &args).await?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Distinct `[[policy]]` views in the `policy` scenario.
const VIEWS: usize = 100;

/// The API key of the `auth` scenario.
const BENCH_KEY: &str = "manifold-load-bench-key-0123456789";
