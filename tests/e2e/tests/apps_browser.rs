//! MCP Apps rendered through Manifold in a real browser: `manifold serve` in front of the
//! official example servers `@modelcontextprotocol/server-basic-vanillajs@2.0.3` and
//! `server-basic-react@2.0.3` (both publish `ui://get-time/mcp-app.html` and a `get-time`
//! tool), each on its own `[[endpoint]]` with `naming = "original"`; then
//! `tests/console/apps.mjs` drives Debian's chromium headless through playwright-core: a
//! host page built on the official host bridge (`AppBridge` of
//! `@modelcontextprotocol/ext-apps@2.0.4`) renders each app's UI read through its endpoint,
//! and clicking the app's own "Get Server Time" button sends its tool call, by the
//! server's own name, through the bridge and Manifold. Manifold's audit log shows each
//! call reached its own app's server; each host rendered its own server's UI.

use anyhow::{bail, Context, Result};
use manifold_e2e::{env_path, repo_root, Proc, TempDir};
use manifold_testkit::wait::eventually_blocking;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

const STARTUP: Duration = Duration::from_secs(60);
/// The browser steps' own bound: the script's steps time out well before it.
const BROWSER_DEADLINE: Duration = Duration::from_secs(180);
const APPS: [&str; 2] = ["vanilla", "react"];

#[test]
fn the_official_apps_render_through_manifold_and_their_buttons_reach_their_own_servers(
) -> Result<()> {
    let node = env_path("MANIFOLD_NODE")?;
    let js = env_path("MANIFOLD_NODE_MODULES")?;
    let browser_modules = env_path("MANIFOLD_CONSOLE_NODE_MODULES")?;
    let chromium = env_path("MANIFOLD_CHROMIUM")?;
    let dir = TempDir::new("apps-browser")?;
    let audit = dir.0.join("audit.jsonl");
    let mut config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n[audit]\npath = {audit:?}\n\n",
        audit = audit.to_string_lossy()
    );
    for (name, package) in [
        ("vanilla", "server-basic-vanillajs"),
        ("react", "server-basic-react"),
    ] {
        let entry = js
            .join("@modelcontextprotocol")
            .join(package)
            .join("dist/index.js");
        config.push_str(&format!(
            "[upstreams.{name}]\ncommand = {node:?}\nargs = [{entry:?}, \"--stdio\"]\n\n\
             [[endpoint]]\npath = \"/mcp/{name}\"\nupstreams = [\"{name}\"]\nnaming = \"original\"\n\n",
            node = node.to_string_lossy(),
            entry = entry.to_string_lossy(),
        ));
    }
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config)?;
    let (_gateway, line, mcp) = manifold_e2e::serve("manifold-apps", &cfg, "warn", STARTUP)?;
    if !line.contains("(2/2 upstreams ready") {
        bail!("both app servers should be ready: {line}");
    }
    let origin = mcp.trim_end_matches("/mcp").to_string();
    let apps: Vec<String> = APPS
        .iter()
        .map(|a| format!("{a}=/mcp/{a}:get-time"))
        .collect();

    let mut run = Command::new(&node);
    run.arg(repo_root().join("tests/console/apps.mjs"))
        .env("MCP_ORIGIN", &origin)
        .env("APPS", apps.join(","))
        .env("CHROMIUM", &chromium)
        .env("CONSOLE_NODE_MODULES", &browser_modules)
        .env("JS_NODE_MODULES", &js);
    let mut browser = Proc::spawn("apps.mjs", run)?;
    let mut lines: Vec<String> = Vec::new();
    let status = eventually_blocking("the browser test", BROWSER_DEADLINE, || {
        lines.extend(browser.stdout.try_iter());
        Ok(browser.child.try_wait()?)
    })?;
    eventually_blocking("the browser's output closed", STARTUP, || {
        lines.extend(browser.stdout.try_iter());
        Ok(lines.iter().any(|l| l.starts_with("result ")).then_some(()))
    })
    .ok();
    let errors: Vec<String> = browser.stderr.try_iter().collect();
    if !status.success() {
        bail!(
            "the browser test failed ({status}):\n{}\n{}",
            lines.join("\n"),
            errors.join("\n")
        );
    }
    let result: Value = serde_json::from_str(
        lines
            .iter()
            .find_map(|l| l.strip_prefix("result "))
            .context("no result line")?,
    )?;
    // Each host rendered its own server's UI, under its exposed URI.
    for app in APPS {
        assert_eq!(
            result["rendered"][app],
            format!("ui://{app}.get-time/mcp-app.html"),
            "{result}"
        );
    }
    // Every app-originated call (by the server's own name) reached its own server.
    let records: Vec<Value> = std::fs::read_to_string(&audit)?
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|r: &Value| r["method"] == "tools/call")
        .collect();
    for app in APPS {
        let mine: Vec<&Value> = records
            .iter()
            .filter(|r| r["endpoint"] == format!("/mcp/{app}"))
            .collect();
        assert!(mine.len() >= 2, "{app}: {records:?}");
        for r in mine {
            assert_eq!(r["upstream"], app, "{r}");
            assert_eq!(r["name"], "get-time", "{r}");
            assert_eq!(r["outcome"], "ok", "{r}");
        }
    }
    Ok(())
}
