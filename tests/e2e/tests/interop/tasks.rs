//! The Tasks extension (`io.modelcontextprotocol/tasks`) between real peers: a FastMCP 4.x
//! server with task-enabled tools (fastmcp-tasks 4.1.4, `.peers/py-fastmcp`,
//! `tests/interop/py/fastmcp_tasks_server.py`) behind Manifold, driven by the official
//! Python SDK client (mcp 2.3.0, `tests/interop/py/tasks_client.py`: a `ClientExtension`
//! whose claim polls `tasks/get`, and `tasks/*` requests that send `Mcp-Name`). The same
//! driver runs against the server directly and through Manifold; the answers must agree
//! except for the task ids, which Manifold seals.

use anyhow::{bail, Context, Result};
use manifold_e2e::{repo_root, serve, Peers, Proc, TempDir};
use serde_json::Value;
use std::process::Command;

use crate::STARTUP;

/// Runs the tasks driver against `url`: its output object.
fn drive(python: &std::path::Path, url: &str) -> Result<Value> {
    let out = Command::new(python)
        .arg(repo_root().join("tests/interop/py/tasks_client.py"))
        .arg(url)
        .env_remove("MANIFOLD_BEARER")
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        bail!(
            "tasks_client.py against {url} failed ({:?}): {stderr}",
            out.status
        );
    }
    serde_json::from_slice(&out.stdout).with_context(|| format!("driver output; stderr: {stderr}"))
}

/// What must agree between the direct run and the run through Manifold: the members
/// that do not depend on when or under which id the task ran.
fn comparable(run: &Value) -> Value {
    let result_of = |v: &Value| {
        let mut r = v["result"].clone();
        if let Some(o) = r.as_object_mut() {
            o.remove("_meta");
        }
        r
    };
    serde_json::json!({
        "crunch_status": run["crunch"]["final"]["status"],
        "crunch_result": result_of(&run["crunch"]["final"]),
        "resolved": run["resolved"]["content"],
        "migrate": run["migrate_undeclared"]["code"],
        "approve_methods": run["approve"]["asked"].as_object().map(|m| {
            m.values().map(|r| r["method"].clone()).collect::<Vec<_>>()
        }),
        "approve_ack": run["approve"]["ack"]["resultType"],
        "approve_result": result_of(&run["approve"]["final"]),
        "cancel_ack": run["cancel"]["ack"]["resultType"],
        "cancel_status": run["cancel"]["final"]["status"],
        "plain": run["plain"]["content"],
    })
}

#[test]
fn a_fastmcp_task_server_behind_manifold_serves_the_python_sdk_client_as_directly() -> Result<()> {
    let peers = Peers::from_env()?;
    let python = peers.fastmcp_python()?;
    let dir = TempDir::new("tasks-fastmcp")?;
    let mut cmd = Command::new(&python);
    cmd.arg(repo_root().join("tests/interop/py/fastmcp_tasks_server.py"));
    let server = Proc::spawn("fastmcp-tasks", cmd)?;
    let line = Proc::wait_line(
        &server.stdout,
        "fastmcp-tasks: listening on",
        STARTUP,
        "fastmcp",
    )?;
    let upstream = line
        .rsplit(' ')
        .next()
        .context("no URL")?
        .trim()
        .to_string();
    let config = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\
         request_state_key = \"interop-tasks-key-0123456789abcdef0123\"\n\n\
         [naming]\nprefix_mode = \"never\"\n\n\
         [upstreams.fastmcp]\nurl = {upstream:?}\n"
    );
    let cfg = dir.0.join("gateway.toml");
    std::fs::write(&cfg, config)?;
    let (gateway, line, url) = serve("manifold", &cfg, "warn", STARTUP)?;
    if !line.contains("(1/1 upstreams ready") {
        bail!("the FastMCP upstream did not come up: {line}");
    }

    let direct = drive(&python, &upstream)?;
    let via = drive(&python, &url)?;
    assert_eq!(
        comparable(&via),
        comparable(&direct),
        "through Manifold: {via:#}\ndirectly: {direct:#}"
    );
    // The answers themselves, so that agreeing on nothing cannot pass.
    assert_eq!(via["crunch"]["final"]["status"], "completed", "{via:#}");
    assert_eq!(
        via["crunch"]["final"]["result"]["content"][0]["text"],
        "crunched d1"
    );
    assert_eq!(via["resolved"]["content"][0]["text"], "crunched d2");
    assert_eq!(via["migrate_undeclared"]["code"], -32021, "{via:#}");
    assert_eq!(
        via["approve"]["final"]["result"]["content"][0]["text"],
        "x: accept {\"ok\": true}"
    );
    assert_eq!(via["cancel"]["final"]["status"], "cancelled", "{via:#}");
    // Manifold's ids are its own sealed ones; the server's pass directly.
    for run_ in [&via["crunch"], &via["cancel"]] {
        let id = run_["final"]["taskId"].as_str().context("taskId")?;
        assert!(id.starts_with("t1."), "{id}");
    }
    assert_eq!(
        via["crunch"]["created"]["taskId"],
        via["crunch"]["final"]["taskId"]
    );
    let direct_id = direct["crunch"]["created"]["taskId"]
        .as_str()
        .context("direct id")?;
    assert!(!direct_id.starts_with("t1."), "{direct_id}");
    drop(gateway);
    drop(server);
    Ok(())
}
