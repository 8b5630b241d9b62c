//! Per-caller upstream accounts (`user_secret`) with the official SDK clients:
//! each caller's client meets the connect link the way its revision defines —
//! the TypeScript and Python clients in a 2025-11-25 session catch -32042
//! (`URLElicitationRequiredError`), open the link as a person would, hear
//! `notifications/elicitation/complete` and call again; the Python client in
//! 2026-07-28 gets an `InputRequiredResult` whose URL-mode request its own
//! elicitation handler opens before the SDK retries. The upstream (the demo's
//! 2026-07-28 server, whose `whoami` shows the `Authorization` it received)
//! then sees each caller's own key, and never another's.

use anyhow::{Context, Result};
use manifold_e2e::{manifold_bin, serve, Peers, TempDir};
use manifold_testkit::process::Proc;
use serde_json::{json, Value};
use std::process::Command;

const STORE_KEY: &str = "interop-accounts-store-key-0123456789abcdef";

#[test]
fn sdk_clients_connect_their_own_accounts_through_url_elicitation() -> Result<()> {
    let peers = Peers::from_env()?;
    let dir = TempDir::new("accounts")?;
    let mut up = Command::new(manifold_bin()?);
    up.args(["demo-upstream", "--http", "127.0.0.1:0", "--modern"]);
    let upstream = Proc::spawn("demo-modern", up)?;
    let line = Proc::wait_line(
        &upstream.stdout,
        "listening on",
        super::STARTUP,
        "demo upstream",
    )?;
    let url = manifold_e2e::url_in(&line)?;
    // Three callers, one API key each.
    let callers = [
        ("ts", "legacy", "ts-key-0123456789"),
        ("py", "legacy", "py-key-0123456789"),
        ("py", "2026-07-28", "modern-key-0123456789"),
    ];
    let keys: String = callers
        .iter()
        .enumerate()
        .map(|(i, (_, _, key))| {
            format!(
                "[[auth.api_keys]]\nname = \"user{i}\"\nhash = \"{}\"\n\n",
                manifold_policy::hash_key(key)
            )
        })
        .collect();
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[upstreams.vault]\nurl = {url:?}\n\n\
         [upstreams.vault.auth]\ntype = \"user_secret\"\n\n\
         [credentials]\nstore = {:?}\nkey = {STORE_KEY:?}\n\n[auth]\n{keys}",
        dir.0.join("store").display().to_string(),
    );
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config)?;
    // At debug, so every log line the connect flow writes is there to read.
    let (mut gw, _, gw_url) = serve("manifold-accounts", &cfg, "debug", super::STARTUP)?;
    for (i, (client, mode, key)) in callers.iter().enumerate() {
        let who = format!("{client} ({mode})");
        let secret = format!("pat-of-user{i}");
        let op = if *mode == "legacy" {
            "call_tool_connecting"
        } else {
            "call_tool"
        };
        let plan = json!({
            "mode": mode,
            "connect": {"secret": secret},
            "steps": [{"op": op, "name": "vault__whoami", "arguments": {}}, {"op": "call_tool", "name": "vault__whoami", "arguments": {}}],
        });
        let (code, out, err) = super::run_plan(&peers, client, &gw_url, &plan, Some(key))?;
        anyhow::ensure!(code == Some(0), "{who}: exit {code:?}: {err}");
        anyhow::ensure!(
            out["errors"].as_array().is_some_and(Vec::is_empty),
            "{who}: {out}\n{err}"
        );
        let first = if *mode == "legacy" {
            let r = &out["results"][0];
            let asked = r["elicitations"].as_array().context("no -32042")?;
            anyhow::ensure!(asked.len() == 1 && asked[0]["mode"] == "url", "{who}: {r}");
            let id = asked[0]["elicitationId"].clone();
            anyhow::ensure!(
                r["completed"] == json!([id]),
                "{who}: no elicitation/complete: {r}\n{err}"
            );
            r["result"].clone()
        } else {
            let asked = out["elicited"].as_array().cloned().unwrap_or_default();
            anyhow::ensure!(
                asked.len() == 1 && asked[0]["mode"] == "url",
                "{who}: {out}"
            );
            out["results"][0].clone()
        };
        for result in [&first, &out["results"][1]] {
            let seen = &result["structuredContent"]["headers"]["authorization"];
            anyhow::ensure!(
                *seen == Value::String(format!("Bearer {secret}")),
                "{who}: the upstream saw {seen}: {result}"
            );
        }
    }
    // No key in any log line, even at debug.
    gw.signal("-TERM");
    let _ = gw.terminate(std::time::Duration::from_secs(10));
    let logs = gw.stderr_to_end(std::time::Duration::from_secs(2));
    anyhow::ensure!(
        logs.iter().any(|l| l.contains("upstream account")),
        "no account log lines at all"
    );
    for l in &logs {
        anyhow::ensure!(!l.contains("pat-of-user"), "a key in a log line: {l}");
    }
    Ok(())
}
