//! Black-box tests of the `manifold-demo-upstream` binary over stdio
//! (`demo_upstream/stdio.rs`) and Streamable HTTP (`demo_upstream/http.rs`), and
//! of its catalogue mode (`demo_upstream/catalog.rs`).
//! Every wait is bounded by a timeout and every child is killed (or waited
//! for) before the test ends.

// A test crate root looks up submodules beside itself, hence the paths.
#[path = "demo_upstream/catalog.rs"]
mod catalog;
#[path = "demo_upstream/http.rs"]
mod http;
#[path = "demo_upstream/stdio.rs"]
mod stdio;

use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::process::{Child, Command};

pub(crate) const BIN: &str = env!("CARGO_BIN_EXE_manifold-demo-upstream");
/// Upper bound for any single wait; generous for slow CI machines.
pub(crate) const WAIT: Duration = Duration::from_secs(15);

/// The demo upstream with `args`, its fault tools on (`--faults`).
pub(crate) fn spawn(args: &[&str]) -> Child {
    Command::new(BIN)
        .arg("--faults")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn manifold-demo-upstream")
}

pub(crate) fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
           "params": {"name": name, "arguments": arguments}})
}

pub(crate) fn req(id: u64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub(crate) fn init(id: u64, version: &str, capabilities: Value) -> Value {
    req(
        id,
        "initialize",
        json!({"protocolVersion": version, "capabilities": capabilities,
               "clientInfo": {"name": "demo-upstream-test", "version": "0"}}),
    )
}

pub(crate) fn text_of(response: &Value) -> &str {
    response["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("no text content in {response}"))
}
