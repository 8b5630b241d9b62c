//! Interop: the official TypeScript and Python SDK clients list and call tools, and
//! use prompts, resources, subscriptions, completion and logging, and search and
//! call through a search endpoint (see
//! tests/interop/README.md, "The Rust suites"), through Manifold in front of `@modelcontextprotocol/server-everything` (stdio and
//! Streamable HTTP) and `mcp-server-time` (stdio), all pinned and installed by
//! `scripts/peers`. Every message Manifold sends the clients is validated against
//! the official schema of the negotiated revision.

use anyhow::{bail, Context, Result};
use manifold_e2e::{manifold_bin, repo_root, serve, Peers, Proc, Schema, TempDir};
use serde_json::{json, Value};
use std::process::Command;
use std::time::Duration;

pub(crate) const STARTUP: Duration = Duration::from_secs(60);

/// `manifold serve` in front of its own demo upstream (`demo`), with `extra`
/// configuration sections: for features the demo upstream is enough to show.
pub(crate) struct DemoGateway {
    _proc: Proc,
    pub url: String,
    _dir: TempDir,
}

impl DemoGateway {
    pub(crate) fn start(tag: &str, extra: &str) -> Result<DemoGateway> {
        let dir = TempDir::new(tag)?;
        let config = format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n\
             [upstreams.demo]\ncommand = \"${{MANIFOLD_SELF}}\"\nargs = [\"demo-upstream\"]\n\n{extra}"
        );
        let cfg = dir.0.join("gateway.toml");
        std::fs::write(&cfg, config)?;
        let (proc, _, url) = serve(&format!("manifold-{tag}"), &cfg, "warn", STARTUP)?;
        Ok(DemoGateway {
            _proc: proc,
            url,
            _dir: dir,
        })
    }
}

/// Runs driver `client` ("ts" or "py") on `plan` against `url`, with
/// `MANIFOLD_BEARER` set to `bearer` (or unset): its exit code, its output
/// object (null if none) and its stderr.
pub(crate) fn run_plan(
    peers: &Peers,
    client: &str,
    url: &str,
    plan: &Value,
    bearer: Option<&str>,
) -> Result<(Option<i32>, Value, String)> {
    let mut cmd = match client {
        "ts" => {
            let mut c = Command::new(&peers.node);
            c.arg(repo_root().join("tests/interop/ts/client.mjs"));
            c
        }
        _ => {
            let mut c = Command::new(&peers.python);
            c.arg(repo_root().join("tests/interop/py/client.py"));
            c
        }
    };
    cmd.arg(url).arg(plan.to_string());
    cmd.env_remove("MANIFOLD_BEARER");
    if let Some(b) = bearer {
        cmd.env("MANIFOLD_BEARER", b);
    }
    let out = cmd.output()?;
    let v = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    Ok((
        out.status.code(),
        v,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

struct Setup {
    _everything_http: Proc,
    gateway: Proc,
    url: String,
    dir: TempDir,
    peers: Peers,
}

fn start(tag: &str) -> Result<Setup> {
    let peers = Peers::from_env()?;
    let dir = TempDir::new(tag)?;
    // server-everything over Streamable HTTP, forced onto 127.0.0.1 and a free port.
    let mut cmd = Command::new(&peers.node);
    cmd.env("PORT", "0")
        .arg("--import")
        .arg(repo_root().join("tests/interop/ts/bind-localhost.mjs"))
        .arg(peers.everything_js())
        .arg("streamableHttp");
    let everything_http = Proc::spawn("everything-http", cmd)?;
    let line = Proc::wait_line(
        &everything_http.stderr,
        "manifold-interop: listening on",
        STARTUP,
        "server-everything (HTTP)",
    )?;
    let addr = line
        .rsplit(' ')
        .next()
        .context("no address")?
        .trim()
        .to_string();
    // Connect as `localhost`: server-everything refuses other Host headers (DNS-rebinding protection).
    let port = addr.rsplit(':').next().context("no port")?;
    let config = format!(
        r#"
[server]
listen = "127.0.0.1:0"

[limits]
connect_timeout = "45s"

[upstreams.everything]
command = {node:?}
args = [{js:?}, "stdio"]

[upstreams.everything_http]
url = "http://localhost:{port}/mcp"

[upstreams.time]
command = {time:?}
args = ["--local-timezone", "UTC"]
"#,
        node = peers.node.display().to_string(),
        js = peers.everything_js().display().to_string(),
        time = peers.time_server.display().to_string(),
    );
    let cfg_path = dir.0.join("gateway.toml");
    std::fs::write(&cfg_path, config)?;
    let (gateway, line, url) = serve("manifold", &cfg_path, "info", STARTUP)?;
    if !line.contains("(3/3 upstreams ready") {
        bail!("not every upstream came up: {line}");
    }
    Ok(Setup {
        _everything_http: everything_http,
        gateway,
        url,
        dir,
        peers,
    })
}

fn plan() -> Value {
    json!({"steps": [
        {"op": "list_tools"},
        {"op": "call_tool", "name": "everything__echo", "arguments": {"message": "hello through manifold"}},
        {"op": "call_tool", "name": "everything_http__get-sum", "arguments": {"a": 2, "b": 3}},
        {"op": "call_tool", "name": "time__get_current_time", "arguments": {"timezone": "UTC"}},
        {"op": "call_tool_with_progress", "name": "everything__trigger-long-running-operation", "arguments": {"duration": 0.3, "steps": 3}},
        {"op": "call_tool_with_progress", "name": "everything_http__trigger-long-running-operation", "arguments": {"duration": 0.3, "steps": 3}},
        {"op": "ping"},
        {"op": "call_tool", "name": "no_such_tool", "arguments": {}},
        {"op": "call_tool", "name": "everything__get-structured-content", "arguments": {"location": "New York"}}
    ]})
}

fn text_of(result: &Value) -> String {
    result["content"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["text"].as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

fn check_output(client: &str, out: &Value) -> Result<()> {
    let results = out["results"].as_array().context("no results")?;
    let tools: Vec<&str> = results[0]
        .as_array()
        .context("list_tools")?
        .iter()
        .filter_map(|t| t["name"].as_str())
        .collect();
    for must in [
        "everything__echo",
        "everything_http__get-sum",
        "time__get_current_time",
        "time__convert_time",
    ] {
        anyhow::ensure!(
            tools.contains(&must),
            "{client}: {must} missing from {tools:?}"
        );
    }
    let mut sorted = tools.clone();
    sorted.sort();
    anyhow::ensure!(
        sorted == tools,
        "{client}: tools/list is not sorted by exposed name"
    );
    anyhow::ensure!(
        tools.iter().all(|n| n.len() <= 64
            && n.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')),
        "{client}: a name breaks ^[A-Za-z0-9_-]{{1,64}}$"
    );
    anyhow::ensure!(
        text_of(&results[1]) == "Echo: hello through manifold",
        "{client}: echo gave {}",
        results[1]
    );
    anyhow::ensure!(
        text_of(&results[2]).contains("is 5"),
        "{client}: get-sum gave {}",
        results[2]
    );
    let time: Value = serde_json::from_str(&text_of(&results[3]))
        .with_context(|| format!("{client}: time result {}", results[3]))?;
    anyhow::ensure!(time["timezone"] == "UTC", "{client}: time gave {time}");
    for i in [4, 5] {
        let progress = results[i]["progress"]
            .as_array()
            .with_context(|| format!("{client}: step {i} {}", results[i]))?;
        anyhow::ensure!(
            progress.len() == 3,
            "{client}: step {i}: expected 3 progress notifications, got {progress:?}"
        );
        let values: Vec<f64> = progress
            .iter()
            .filter_map(|p| p["progress"].as_f64())
            .collect();
        anyhow::ensure!(
            values.windows(2).all(|w| w[0] < w[1]),
            "{client}: progress not increasing: {values:?}"
        );
        anyhow::ensure!(
            text_of(&results[i]["result"]).contains("Long running operation completed"),
            "{client}: step {i} {}",
            results[i]
        );
    }
    // `ping` is gone in 2026-07-28: a stateless client gets 404 + -32601.
    let ping_ok = if out["protocolVersion"] == "2026-07-28" {
        results[6]["error"]["code"] == -32601
    } else {
        results[6] == json!({})
    };
    anyhow::ensure!(ping_ok, "{client}: ping gave {}", results[6]);
    anyhow::ensure!(
        results[7]["error"]["code"] == -32602,
        "{client}: unknown tool gave {}",
        results[7]
    );
    anyhow::ensure!(
        results[8]["structuredContent"].is_object(),
        "{client}: structuredContent lost: {}",
        results[8]
    );
    Ok(())
}

/// The command running driver `client` ("ts" or "py") on `plan`, logging to `wire`.
fn driver(setup: &Setup, client: &str, plan: &Value, wire: &std::path::Path) -> Command {
    let mut cmd = match client {
        "ts" => {
            let mut c = Command::new(&setup.peers.node);
            c.arg(repo_root().join("tests/interop/ts/client.mjs"));
            c
        }
        _ => {
            let mut c = Command::new(&setup.peers.python);
            c.arg(repo_root().join("tests/interop/py/client.py"));
            c
        }
    };
    cmd.arg(&setup.url)
        .arg(plan.to_string())
        .env("MANIFOLD_WIRE_LOG", wire);
    cmd
}

fn run_driver(setup: &Setup, client: &str, plan: &Value) -> Result<(Value, std::path::PathBuf)> {
    let wire = setup.dir.0.join(format!("{client}-wire.jsonl"));
    let mut cmd = driver(setup, client, plan, &wire);
    let out = cmd
        .output()
        .with_context(|| format!("running the {client} driver"))?;
    if !out.status.success() {
        bail!(
            "{client} driver failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let v: Value = serde_json::from_slice(&out.stdout).with_context(|| {
        format!(
            "{client} driver output: {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })?;
    Ok((v, wire))
}

#[test]
fn sdk_clients_list_and_call_tools_through_manifold() -> Result<()> {
    let setup = start("sdk")?;
    for client in ["ts", "py"] {
        let (out, wire) = run_driver(&setup, client, &plan())?;
        let version = out["protocolVersion"]
            .as_str()
            .context("no protocolVersion")?
            .to_string();
        // The TypeScript SDK 1.x speaks the session era; the Python SDK 2.x in auto
        // mode probes `server/discover` and goes stateless (2026-07-28).
        let want = if client == "py" {
            "2026-07-28"
        } else {
            "2025-11-25"
        };
        anyhow::ensure!(version == want, "{client}: negotiated {version}");
        anyhow::ensure!(
            out["serverInfo"]["name"] == "manifold",
            "{client}: serverInfo {}",
            out["serverInfo"]
        );
        check_output(client, &out)?;
        // mcp-server-time answers `server/discover`, so Manifold speaks 2026-07-28 to
        // it: its result reaches the client with the upstream's own stateless `_meta`,
        // whichever era the client speaks (server-everything stays session-era).
        let log = std::fs::read_to_string(&wire)?;
        let from_modern_time = log.lines().any(|l| {
            serde_json::from_str::<Value>(l).is_ok_and(|m| {
                m.pointer("/result/_meta/io.modelcontextprotocol~1serverInfo/name")
                    == Some(&json!("mcp-time"))
            })
        });
        anyhow::ensure!(
            from_modern_time,
            "{client}: no result of the 2026-07-28 time upstream in the wire log"
        );
        let schema = Schema::load(&version)?;
        let n = schema.check_wire_log(&wire)?;
        anyhow::ensure!(n >= 12, "{client}: only {n} messages in the wire log");
        eprintln!("{client}: {n} messages from Manifold validated against the {version} schema");
    }
    // The gateway is still healthy and logged no panic.
    drop(setup.gateway);
    Ok(())
}

/// `[validation] arguments` (on by default) against real schemas: every tool of
/// server-everything and mcp-server-time compiles (none is left unchecked), and
/// arguments that do not fit reach the SDK client as a tool error naming the
/// pointer, never the upstream.
#[test]
fn real_tool_schemas_all_compile_and_bad_arguments_are_tool_errors() -> Result<()> {
    let setup = start("validation")?;
    let out = Command::new(manifold_bin()?)
        .args(["check", "--json", "--config"])
        .arg(setup.dir.0.join("gateway.toml"))
        .env("RUST_LOG", "error")
        .output()?;
    let facts: Value = serde_json::from_slice(&out.stdout)
        .with_context(|| String::from_utf8_lossy(&out.stderr).into_owned())?;
    let tools = facts["tools"].as_array().context("tools")?;
    anyhow::ensure!(tools.len() > 20, "only {} tools", tools.len());
    anyhow::ensure!(
        facts["unvalidated"] == json!([]),
        "tools left unvalidated: {}",
        facts["unvalidated"]
    );
    let plan = json!({"steps": [
        {"op": "call_tool", "name": "everything__echo", "arguments": {"message": 5}},
        {"op": "call_tool", "name": "everything_http__get-sum", "arguments": {"a": "two", "b": 3}},
        {"op": "call_tool", "name": "everything_http__get-sum", "arguments": {"a": 2, "b": 3}}
    ]});
    for client in ["ts", "py"] {
        let (out, _) = run_driver(&setup, client, &plan)?;
        for (step, pointer) in [(0, "/message"), (1, "/a")] {
            let r = &out["results"][step];
            anyhow::ensure!(r["isError"] == true, "{client} step {step}: {r}");
            let text = text_of(r);
            anyhow::ensure!(
                text.contains("Invalid arguments") && text.contains(pointer),
                "{client} step {step}: {text}"
            );
        }
        anyhow::ensure!(text_of(&out["results"][2]).contains('5'), "{client}: {out}");
    }
    Ok(())
}

/// The validator itself must be able to fail, or the checks above prove nothing.
#[test]
fn schema_validation_rejects_malformed_messages() -> Result<()> {
    let schema = Schema::load("2025-11-25")?;
    if !schema.available() {
        eprintln!("skipped: no schema to validate against (see above)");
        return Ok(());
    }
    let good = json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}});
    schema.check_server_message(&good)?;
    for bad in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": 1, "inputSchema": {"type": "object"}}]}}),
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": "not an array"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}),
        json!({"jsonrpc": "1.0", "id": 1, "result": {}}),
    ] {
        anyhow::ensure!(schema.check_server_message(&bad).is_err(), "accepted {bad}");
    }
    Ok(())
}

mod accounts;
mod apps;
mod auth;
mod cluster;
mod code;
mod confirm;
mod import;
mod oidc;
mod search;
mod skills;
mod stdio;
mod surface;
mod tasks;
