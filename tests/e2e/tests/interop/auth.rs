//! Authentication as the official SDKs do it: the TypeScript and Python clients
//! reach a Manifold that requires credentials with a bearer token (an API key
//! here), are refused without one, and the TypeScript SDK's own OAuth discovery
//! follows the 401 to the protected resource metadata.

use anyhow::Result;
use manifold_e2e::{manifold_bin, repo_root, Peers};
use serde_json::{json, Value};
use std::process::Command;

const KEY: &str = "interop-key-0123456789abcdef";

/// `manifold serve` with `[auth]` (one API key, `mcp:tools` advertised) in front
/// of its own demo upstream.
fn gateway() -> Result<super::DemoGateway> {
    gateway_with("")
}

/// [`gateway`] with `extra` sections.
fn gateway_with(extra: &str) -> Result<super::DemoGateway> {
    let hash = Command::new(manifold_bin()?)
        .args(["auth", "hash-key"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            if let Some(mut i) = c.stdin.take() {
                i.write_all(KEY.as_bytes())?;
            }
            c.wait_with_output()
        })?;
    let hash = String::from_utf8(hash.stdout)?.trim().to_string();
    super::DemoGateway::start(
        "auth",
        &format!(
            "[auth]\nscopes_supported = [\"mcp:tools\"]\n\n\
             [[auth.api_keys]]\nname = \"interop\"\nhash = \"{hash}\"\n\n{extra}"
        ),
    )
}

fn run_client(
    peers: &Peers,
    client: &str,
    url: &str,
    bearer: Option<&str>,
) -> Result<(Option<i32>, Value, String)> {
    let plan = json!({"steps": [{"op": "call_tool", "name": "demo__echo", "arguments": {"text": "authenticated"}}]});
    super::run_plan(peers, client, url, &plan, bearer)
}

#[test]
fn sdk_clients_call_with_a_bearer_token_and_are_refused_without() -> Result<()> {
    let peers = Peers::from_env()?;
    let gw = gateway()?;
    for client in ["ts", "py"] {
        let (code, out, err) = run_client(&peers, client, &gw.url, Some(KEY))?;
        anyhow::ensure!(
            code == Some(0),
            "{client} with the key: exit {code:?}: {err}"
        );
        let text = &out["results"][0]["content"][0]["text"];
        anyhow::ensure!(text == "authenticated", "{client}: {out}");
        let (code, out, err) = run_client(&peers, client, &gw.url, None)?;
        anyhow::ensure!(
            code == Some(1),
            "{client} without a key connected: {out} {err}"
        );
        // The TypeScript SDK shows the refusal's body (the Python SDK only that
        // the server refused): it says what to send.
        if client == "ts" {
            anyhow::ensure!(err.contains("Authorization: Bearer"), "{client}: {err}");
        }
    }
    Ok(())
}

#[test]
fn the_typescript_sdk_discovers_the_protected_resource_metadata() -> Result<()> {
    let peers = Peers::from_env()?;
    let gw = gateway()?;
    let out = Command::new(&peers.node)
        .arg(repo_root().join("tests/interop/ts/discover.mjs"))
        .arg(&gw.url)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)?;
    anyhow::ensure!(v["status"] == 401, "{v}");
    let base = gw.url.trim_end_matches("/mcp");
    anyhow::ensure!(
        v["params"]["resourceMetadataUrl"]
            == format!("{base}/.well-known/oauth-protected-resource/mcp"),
        "{v}"
    );
    anyhow::ensure!(v["metadata"]["resource"] == gw.url, "{v}");
    anyhow::ensure!(
        v["metadata"]["scopes_supported"] == json!(["mcp:tools"]),
        "{v}"
    );
    anyhow::ensure!(
        v["metadata"]["bearer_methods_supported"] == json!(["header"]),
        "{v}"
    );
    Ok(())
}

/// A virtual endpoint (`[[endpoint]]`) is discovered by the TypeScript SDK's
/// own OAuth discovery from its path-suffixed metadata, which names the
/// gateway's resource (a path prefix of the endpoint's URL); with the key, the
/// SDK client then works on the endpoint.
#[test]
fn the_typescript_sdk_discovers_a_virtual_endpoints_metadata() -> Result<()> {
    let peers = Peers::from_env()?;
    let gw = gateway_with("[[endpoint]]\npath = \"/mcp/ops\"\ndiscovery = \"search\"\n")?;
    let ops = gw.url.replace("/mcp", "/mcp/ops");
    let out = Command::new(&peers.node)
        .arg(repo_root().join("tests/interop/ts/discover.mjs"))
        .arg(&ops)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout)?;
    anyhow::ensure!(v["status"] == 401, "{v}");
    let base = gw.url.trim_end_matches("/mcp");
    anyhow::ensure!(
        v["params"]["resourceMetadataUrl"]
            == format!("{base}/.well-known/oauth-protected-resource/mcp/ops"),
        "{v}"
    );
    anyhow::ensure!(v["metadata"]["resource"] == gw.url, "{v}");
    anyhow::ensure!(
        ops.starts_with(&gw.url),
        "the resource is a path prefix of {ops}"
    );
    let plan = json!({"steps": [{"op": "list_tools"}]});
    let (code, out, err) = super::run_plan(&peers, "ts", &ops, &plan, Some(KEY))?;
    anyhow::ensure!(code == Some(0), "ts with the key on /mcp/ops: {err}");
    let names: Vec<&str> = out["results"][0]
        .as_array()
        .map(|a| a.iter().filter_map(|t| t["name"].as_str()).collect())
        .unwrap_or_default();
    anyhow::ensure!(names == ["search_tools", "call_tool"], "{out}");
    Ok(())
}
