//! A newcomer's first hour with real servers (the pinned test peers): a
//! Claude Desktop configuration running `@modelcontextprotocol/server-everything`
//! and `mcp-server-time` is imported (its secret-looking `env` value written as
//! `${VAR}`, never literally), checked, and Claude Desktop's file is rewritten by
//! `manifold connect claude --write --replace` to launch `manifold stdio`; the
//! official TypeScript client then launches that very entry and sees both
//! servers' tools through Manifold.

use anyhow::{Context, Result};
use manifold_e2e::{manifold_bin, repo_root, Peers, TempDir};
use serde_json::{json, Value};
use std::process::Command;

const TOKEN_VAR: &str = "EVERYTHING_API_TOKEN";
const TOKEN: &str = "evr-0123456789abcdef0123456789";

fn manifold(dir: &std::path::Path, args: &[&str], token: bool) -> Result<(i32, String, String)> {
    let mut cmd = Command::new(manifold_bin()?);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("MANIFOLD_CONFIG");
    if token {
        cmd.env(TOKEN_VAR, TOKEN);
    } else {
        cmd.env_remove(TOKEN_VAR);
    }
    let out = cmd.output()?;
    Ok((
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

#[test]
fn a_claude_desktop_user_moves_behind_manifold_without_a_secret_in_the_file() -> Result<()> {
    let peers = Peers::from_env()?;
    let dir = TempDir::new("import")?;
    let client = dir.0.join("claude_desktop_config.json");
    std::fs::write(
        &client,
        serde_json::to_string_pretty(&json!({
            "mcpServers": {
                "everything": {
                    "command": peers.node.display().to_string(),
                    "args": [peers.everything_js().display().to_string(), "stdio"],
                    "env": {TOKEN_VAR: TOKEN},
                },
                "time": {
                    "command": peers.time_server.display().to_string(),
                    "args": ["--local-timezone", "UTC"],
                },
            }
        }))?,
    )?;
    let (code, out, err) = manifold(&dir.0, &["import", client.to_str().context("path")?], false)?;
    anyhow::ensure!(code == 0, "import: {out}\n{err}");
    anyhow::ensure!(
        out.contains(TOKEN_VAR) && !out.contains(TOKEN),
        "import output: {out}"
    );
    let gw = dir.0.join("gateway.toml");
    let text = std::fs::read_to_string(&gw)?;
    anyhow::ensure!(
        !text.contains(TOKEN),
        "the secret is in gateway.toml:\n{text}"
    );
    anyhow::ensure!(text.contains(&format!("${{{TOKEN_VAR}}}")), "{text}");

    // The variable exported: every upstream ready.
    let (code, out, err) = manifold(&dir.0, &["check", "--config", "gateway.toml"], true)?;
    anyhow::ensure!(code == 0, "check: {out}\n{err}");

    // Claude Desktop's file now launches Manifold instead of the two servers.
    let (code, out, err) = manifold(
        &dir.0,
        &[
            "connect",
            "claude",
            "--config",
            "gateway.toml",
            "--write",
            "--file",
            client.to_str().context("path")?,
            "--replace",
        ],
        true,
    )?;
    anyhow::ensure!(code == 0, "connect: {out}\n{err}");
    let written: Value = serde_json::from_str(&std::fs::read_to_string(&client)?)?;
    let servers = written["mcpServers"].as_object().context("mcpServers")?;
    anyhow::ensure!(
        servers.keys().collect::<Vec<_>>() == ["manifold"],
        "{written}"
    );
    let entry = &servers["manifold"];
    // Claude Desktop starts it without the user's shell: the entry carries the variable.
    anyhow::ensure!(entry["env"][TOKEN_VAR] == TOKEN, "{entry}");
    let mut argv = vec![entry["command"].as_str().context("command")?.to_string()];
    for a in entry["args"].as_array().context("args")? {
        argv.push(a.as_str().context("arg")?.to_string());
    }

    // The official client launches exactly that entry, as Claude Desktop would.
    let url = format!("stdio:{}", serde_json::to_string(&argv)?);
    let plan = json!({"steps": [{"op": "list_tools"}]});
    // Its `env` as the client gives it to the child, nothing from this shell.
    let mut client = Command::new(&peers.node);
    client
        .arg(repo_root().join("tests/interop/ts/client.mjs"))
        .arg(&url)
        .arg(plan.to_string())
        .env_remove(TOKEN_VAR)
        .env_remove("MANIFOLD_BEARER");
    for (k, v) in entry["env"].as_object().into_iter().flatten() {
        client.env(k, v.as_str().unwrap_or_default());
    }
    let out = client.output()?;
    let result: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| format!("client output: {}", String::from_utf8_lossy(&out.stderr)))?;
    let names: Vec<&str> = result["results"][0]
        .as_array()
        .context("no tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for want in ["everything__echo", "time__get_current_time"] {
        anyhow::ensure!(
            names.contains(&want),
            "{want} missing: {names:?}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}
