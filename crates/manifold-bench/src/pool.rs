//! The `pool` scenario: a slow single-threaded stdio upstream (the demo with
//! `--serial-calls 50`: one `tools/call` at a time, 50 ms each) behind a
//! gateway as one child, then as a pool of four (`instances = 4`): the
//! throughput a pool buys, at each concurrency. Both columns go through
//! Manifold; the "direct" column of the table is the single child.
//!
//! Not here: the hop's own cost (the `call` scenario).

use anyhow::Result;
use serde_json::json;

use crate::{args::Args, measure::compare_warm, session::spawn_gateway, session::HttpClient};

/// What one call costs the serial child.
pub const SERIAL_MS: u64 = 50;
/// Children in the pool.
pub const INSTANCES: usize = 4;

pub async fn run(
    client: &HttpClient,
    exe: &std::path::Path,
    dir: &std::path::Path,
    args: &Args,
) -> Result<()> {
    let section = |instances: usize| {
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[upstreams.slow]\ncommand = {exe:?}\n\
             args = [\"demo-upstream\", \"--serial-calls\", \"{SERIAL_MS}\", \"--instructions\", \"\"]\n\
             instances = {instances}\n",
            exe = exe.display().to_string(),
        )
    };
    let one_cfg = dir.join("gateway-pool-1.toml");
    std::fs::write(&one_cfg, section(1))?;
    let pool_cfg = dir.join("gateway-pool-4.toml");
    std::fs::write(&pool_cfg, section(INSTANCES))?;
    let (_one, one_url) = spawn_gateway(exe, &one_cfg, args.pin)?;
    let (_pool, pool_url) = spawn_gateway(exe, &pool_cfg, args.pin)?;
    let body = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow__echo","arguments":{"text":"hello"}}});
    for &c in &args.concurrency {
        // One warm-up call per worker: at 50 ms a call the usual warm-up would
        // eat the measurement.
        let (d, g) =
            compare_warm(client, (&one_url, &body), (&pool_url, &body), c, args, 1).await?;
        let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
        println!(
            "| tools/call, serial stdio child ({SERIAL_MS} ms): one child → pool of {INSTANCES} | {c} | {dr:.1} | {gr:.1} | {:.0} % | {} / {} | {} / {} | {} |",
            100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
        );
    }
    Ok(())
}
