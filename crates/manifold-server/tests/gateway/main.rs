//! End-to-end tests of the gateway (in-process, through `manifold_testkit::harness`)
//! in front of the demo upstream: `local` over stdio and `remote` over Streamable
//! HTTP, unless a test needs another setup.
//!
//! Every test runs its own gateway on an ephemeral port and its own upstream
//! processes, so tests run in parallel; every wait is bounded (the harness's
//! 10-second waits, and [`bounded`] around each whole test).

mod admin;
mod apps;
mod auth;
mod authserver;
mod calls;
mod caps;
mod card;
mod cluster;
mod cluster_bus;
mod cluster_redis;
mod coalesce;
mod code;
mod confirm;
mod console;
mod disconnect;
mod endpoints;
mod errors;
mod exits;
mod failures;
mod finish;
mod held_states;
mod hostile;
mod integrity;
mod integrity_twins;
mod issuers;
mod lists;
mod observe;
mod overrides;
mod policy;
mod pools;
mod reload;
mod resilience;
mod rogue;
mod sampling;
mod semantic;
mod session;
mod shared_log;
mod skills;
mod stateless;
mod stateless_upstream;
mod surface;
mod tasks;
mod tls;
mod upstream_auth;
mod upstream_auth_attacks;
mod uris;
mod user_accounts;

use std::future::Future;
use std::time::Duration;

use anyhow::{anyhow, Result};
use manifold_testkit::harness::{toml_string, DemoHttp, McpClient, Reply, TestGateway};
pub(crate) use manifold_testkit::wait::{eventually, until};
use serde_json::{json, Value};

/// The demo upstream binary built for this test run (crate `manifold-demo`).
pub(crate) fn bin() -> &'static str {
    static BIN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    BIN.get_or_init(|| {
        manifold_testkit::harness::demo_upstream_bin()
            .to_string_lossy()
            .into_owned()
    })
}
/// Instructions the `local` upstream is started with.
pub(crate) const LOCAL_INSTRUCTIONS: &str = "Local demo tools for the gateway tests.";
/// Upper bound on one whole test.
pub(crate) const TEST_LIMIT: Duration = Duration::from_secs(90);
/// The demo upstream's fixed tools, in its own listing order.
pub(crate) const DEMO_TOOLS: &[&str] = &[
    "echo",
    "add",
    "weather",
    "slow_progress",
    "regional_lookup",
    "add_tool",
    "fail",
    "sleep",
    "crash",
    "sample",
    "elicit",
    "link",
    "touch",
    "log",
    "log_level",
];

/// Runs a test body with an overall time limit.
pub(crate) async fn bounded(body: impl Future<Output = Result<()>>) -> Result<()> {
    tokio::time::timeout(TEST_LIMIT, body)
        .await
        .map_err(|_| anyhow!("the test did not finish within {TEST_LIMIT:?}"))?
}

/// A gateway with `local` (stdio) and `remote` (HTTP) demo upstreams. Fields drop
/// in order: the gateway first, then the HTTP upstream.
pub(crate) struct Fixture {
    pub gw: TestGateway,
    pub remote: DemoHttp,
}

/// Builder for the usual two-upstream configuration.
pub(crate) struct Setup {
    /// Extra lines in `[server]`.
    pub server: String,
    /// Extra lines in `[upstreams.local]` / `[upstreams.remote]`.
    pub local: String,
    pub remote: String,
    /// Extra sections appended verbatim.
    pub extra: String,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            server: String::new(),
            local: "timeout = \"20s\"".into(),
            remote: "timeout = \"20s\"".into(),
            extra: String::new(),
        }
    }
}

impl Setup {
    pub async fn start(self) -> Result<Fixture> {
        let remote = DemoHttp::spawn_bin(bin(), &[]).await?;
        let toml = self.render(&remote.url);
        let gw = TestGateway::start(&toml).await?;
        Ok(Fixture { gw, remote })
    }

    /// The configuration text, with the HTTP upstream at `remote_url` (a test
    /// that reloads renders a changed `Setup` for the same upstream).
    pub fn render(&self, remote_url: &str) -> String {
        format!(
            "[server]\n{server}\n\n\
             [upstreams.local]\ncommand = {bin}\nargs = [\"--faults\", \"--instructions\", {instr}]\n{local}\n\n\
             [upstreams.remote]\nurl = {url}\n{remote_extra}\n\n{extra}\n",
            server = self.server,
            bin = toml_string(bin()),
            instr = toml_string(LOCAL_INSTRUCTIONS),
            local = self.local,
            url = toml_string(remote_url),
            remote_extra = self.remote,
            extra = self.extra,
        )
    }
}

/// The usual fixture.
pub(crate) async fn fixture() -> Result<Fixture> {
    Setup::default().start().await
}

impl Fixture {
    /// A client initialized at 2025-11-25 without capabilities.
    pub async fn session(&self) -> Result<McpClient> {
        self.gw.session("2025-11-25", json!({})).await
    }
}

/// Every exposed name both upstreams contribute, sorted.
pub(crate) fn expected_names() -> Vec<String> {
    let mut names: Vec<String> = ["local", "remote"]
        .iter()
        .flat_map(|u| DEMO_TOOLS.iter().map(move |t| format!("{u}__{t}")))
        .collect();
    names.sort();
    names
}

pub(crate) fn names_of(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap_or("<no name>").to_owned())
        .collect()
}

/// The first text content block of a tool result.
pub(crate) fn text_of(result: &Value) -> Result<&str> {
    result["content"][0]["text"]
        .as_str()
        .ok_or_else(|| anyhow!("no text content in {result}"))
}

/// A tool result's text, requiring it not to be an error.
pub(crate) fn ok_text(reply: &Reply) -> Result<String> {
    let result = reply.result()?;
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err(anyhow!("unexpected tool error: {result}"));
    }
    Ok(text_of(result)?.to_owned())
}

/// Requests in flight from the gateway to upstream `name`.
pub(crate) fn in_flight(gw: &TestGateway, name: &str) -> Result<usize> {
    gw.gateway()
        .upstreams()
        .iter()
        .find(|u| &**u.name() == name)
        .map(|u| u.in_flight())
        .ok_or_else(|| anyhow!("no upstream {name}"))
}

/// Waits (at most `limit`) until upstream `name` has exactly `n` requests in flight.
pub(crate) async fn until_in_flight(
    gw: &TestGateway,
    name: &str,
    n: usize,
    limit: Duration,
) -> Result<()> {
    let what = format!("{name}: {n} in flight");
    eventually(&what, limit, || async {
        Ok((in_flight(gw, name)? == n).then_some(()))
    })
    .await
}

/// Calls `tool` (a demo upstream's `touch`, which sends a resource update) until
/// it reports `want_ok`: the demo refuses to touch a URI nobody subscribed to,
/// and subscriptions upstream may change in the background.
pub(crate) async fn touch_until(
    client: &McpClient,
    tool: &str,
    uri: &str,
    want_ok: bool,
) -> Result<()> {
    let what = format!("touch {uri} answering ok={want_ok}");
    eventually(&what, Duration::from_secs(5), || async {
        let reply = client.call_tool(tool, json!({"uri": uri})).await?;
        Ok((ok_text(&reply).is_ok() == want_ok).then_some(()))
    })
    .await
}
