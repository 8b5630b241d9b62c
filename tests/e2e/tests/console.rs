//! The operator's console in a real browser: `manifold serve` with both demo
//! upstreams, `[auth]` API keys, a `[[policy]]` that hides `demo2`'s tools from
//! `group:ops`, an `[audit]` file, an `[integrity]` store in which `demo`'s `echo`
//! is held (its approved definition had another description) and an admin token;
//! then `tests/console/console.mjs` drives Debian's chromium headless through
//! playwright-core (both installed by `scripts/peers`): log in, the overview, live
//! refresh, the catalogue, a tool, "view as", a call found in the audit view, an
//! approval, a reload, refused cross-site POSTs, log out; a wrong token refused.
//!
//! `MANIFOLD_CONSOLE_SCREENSHOTS=docs/console` also writes one screenshot per page
//! (the ones the README shows).

use anyhow::{bail, Context, Result};
use manifold_e2e::{repo_root, url_in, Proc, TempDir};
use manifold_integrity::{decide, PinStore, Rules, StoreFile};
use manifold_testkit::harness::McpClient;
use manifold_testkit::wait::eventually_blocking;
use serde_json::{json, Map, Value};
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, SystemTime};

const STARTUP: Duration = Duration::from_secs(60);
const ADMIN_TOKEN: &str = "console-admin-token-0123456789abcdef";
const CLIENT_KEY: &str = "console-client-key-0123456789abcdef";
const OPS_KEY: &str = "console-ops-key-0123456789abcdef";
/// The browser steps' own bound: the script's steps time out well before it.
const BROWSER_DEADLINE: Duration = Duration::from_secs(180);

fn env_path(name: &str) -> Result<PathBuf> {
    let v = std::env::var(name).with_context(|| {
        format!("{name} is not set: the console's browser test needs the peers; run scripts/test (scripts/peers installs chromium and playwright-core)")
    })?;
    let p = PathBuf::from(v);
    if !p.exists() {
        bail!("{name}={} does not exist; rerun scripts/peers", p.display());
    }
    Ok(p)
}

fn config(dir: &std::path::Path) -> String {
    use manifold_policy::hash_key;
    format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n\
         [upstreams.demo]\ncommand = \"${{MANIFOLD_SELF}}\"\nargs = [\"demo-upstream\"]\n\n\
         [upstreams.demo2]\ncommand = \"${{MANIFOLD_SELF}}\"\nargs = [\"demo-upstream\", \"--instructions\", \"\"]\n\n\
         [auth]\n\n\
         [[auth.api_keys]]\nname = \"ci\"\nhash = \"{ci}\"\ngroups = [\"ci\"]\n\n\
         [[auth.api_keys]]\nname = \"ops-bot\"\nhash = \"{ops}\"\ngroups = [\"ops\"]\n\n\
         [[policy]]\nwho = [\"group:ops\"]\ntools = {{ allow = [\"demo__*\"] }}\n\n\
         [[policy]]\nwho = [\"group:ci\"]\ntools = {{ allow = [\"*\"] }}\n\n\
         [audit]\npath = \"{audit}\"\n\n\
         [integrity]\nstore = \"{store}\"\n\n\
         [admin]\nlisten = \"127.0.0.1:0\"\n\n\
         [[admin.tokens]]\nname = \"ops\"\nhash = \"{admin}\"\n",
        ci = hash_key(CLIENT_KEY),
        ops = hash_key(OPS_KEY),
        admin = hash_key(ADMIN_TOKEN),
        audit = dir.join("audit.jsonl").display(),
        store = dir.join("pins.json").display(),
    )
}

/// `demo`'s own definition of `echo`, as the gateway lists it (prefix removed),
/// after a few calls (the overview's recent calls).
async fn echo_definition(mcp: &str) -> Result<Map<String, Value>> {
    let client = McpClient::new(mcp);
    client.set_bearer(Some(CLIENT_KEY));
    client.initialize("2025-11-25", json!({})).await?;
    let tools = client.list_all_tools().await?;
    // Some traffic for the overview's recent calls: fast echoes, and sums.
    for i in 0..40 {
        client
            .call_tool("demo__echo", json!({"text": format!("warm-up {i}")}))
            .await?;
    }
    for i in 0..10 {
        client
            .call_tool("demo2__add", json!({"a": i, "b": 1}))
            .await?;
    }
    let mut echo = tools
        .into_iter()
        .find(|t| t["name"] == "demo__echo")
        .and_then(|t| t.as_object().cloned())
        .context("no demo__echo in tools/list")?;
    echo.insert("name".into(), json!("echo"));
    Ok(echo)
}

/// A store in which `echo` was approved with another description and is now
/// held as changed: what a rug pull looks like to the console.
fn held_store(path: &std::path::Path, echo: &Map<String, Value>) -> Result<()> {
    let rules = Rules {
        new_tools: manifold_config::integrity::NewTools::Allow,
        trust_on_first_use: true,
    };
    let mut old = echo.clone();
    old.insert(
        "description".into(),
        json!("Echo the text back (the definition approved last week)."),
    );
    let lists = |def: Map<String, Value>| manifold_catalog::UpstreamLists {
        tools: vec![def],
        prompts: Vec::new(),
        resources: Vec::new(),
        resource_templates: Vec::new(),
        skills: Vec::new(),
    };
    let mut store = PinStore::new();
    let now = SystemTime::now();
    store.apply(&decide(&store, "demo", &lists(old), &rules, now).update);
    store.apply(&decide(&store, "demo", &lists(echo.clone()), &rules, now).update);
    if store.pending_items().count() != 1 {
        bail!("the store should hold one changed item");
    }
    StoreFile::new(path).modify(|s| *s = store)?;
    Ok(())
}

/// Moves the browser script's output lines into `lines` (echoed); whether its
/// output has closed.
fn drain(browser: &Proc, lines: &mut Vec<String>) -> bool {
    loop {
        match browser.stdout.try_recv() {
            Ok(l) => {
                eprintln!("{l}");
                lines.push(l);
            }
            Err(std::sync::mpsc::TryRecvError::Empty) => return false,
            Err(std::sync::mpsc::TryRecvError::Disconnected) => return true,
        }
    }
}

#[test]
fn the_console_end_to_end_in_chromium() -> Result<()> {
    let node = env_path("MANIFOLD_NODE")?;
    let modules = env_path("MANIFOLD_CONSOLE_NODE_MODULES")?;
    let chromium = env_path("MANIFOLD_CHROMIUM")?;
    let dir = TempDir::new("console")?;
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config(&dir.0))?;
    let (gateway, line, mcp) = manifold_e2e::serve("manifold-console", &cfg, "warn", STARTUP)?;
    let admin = url_in(&Proc::wait_line(
        &gateway.stdout,
        "Manifold admin on",
        STARTUP,
        "manifold",
    )?)?;
    if !line.contains("(2/2 upstreams ready") {
        bail!("both demo upstreams should be ready: {line}");
    }
    let rt = tokio::runtime::Runtime::new()?;
    let echo = rt.block_on(echo_definition(&mcp))?;
    held_store(&dir.0.join("pins.json"), &echo)?;

    let mut run = Command::new(node);
    run.arg(repo_root().join("tests/console/console.mjs"))
        .env("CONSOLE_URL", &admin)
        .env("MCP_URL", &mcp)
        .env("ADMIN_TOKEN", ADMIN_TOKEN)
        .env("CLIENT_KEY", CLIENT_KEY)
        .env("RESTRICTED", "group:ops")
        .env("CHROMIUM", &chromium)
        .env("CONSOLE_NODE_MODULES", &modules);
    match std::env::var("MANIFOLD_CONSOLE_SCREENSHOTS") {
        Ok(d) if !d.is_empty() => {
            run.env("SCREENSHOTS", repo_root().join(d));
        }
        _ => {}
    }
    let mut browser = Proc::spawn("console.mjs", run)?;
    let mut lines = Vec::new();
    let status = eventually_blocking("the browser test", BROWSER_DEADLINE, || {
        drain(&browser, &mut lines);
        Ok(browser.child.try_wait()?)
    })?;
    // What it printed last: its output closes soon after it exits.
    eventually_blocking("the browser's output closed", STARTUP, || {
        Ok(drain(&browser, &mut lines).then_some(()))
    })?;
    let errors: Vec<String> = browser.stderr.try_iter().collect();
    if !status.success() {
        bail!(
            "the browser test failed ({status}):\n{}\n{}",
            lines.join("\n"),
            errors.join("\n")
        );
    }
    let passed = lines.iter().filter(|l| l.starts_with("ok ")).count();
    if passed < 13 {
        bail!("only {passed} browser steps ran:\n{}", lines.join("\n"));
    }
    Ok(())
}
