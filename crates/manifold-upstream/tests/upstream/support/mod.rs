//! What the tests share: an [`Upstream`] spawned the way the gateway spawns
//! one ([`Running`]), its configuration ([`config`]), bounded waits, and the
//! two fake upstreams (`stdio`: a relayed child the test scripts line by
//! line; `http`: a Streamable-HTTP server on 127.0.0.1 answering through a
//! handler the test writes).

pub mod http;
pub mod stdio;

use manifold_config::{LimitsConfig, Transport, UpstreamConfig, UpstreamProtocol};
use manifold_upstream::{
    Call, CallEvent, CallOutcome, State, Upstream, UpstreamEvent, UpstreamStatus,
};
use serde_json::{json, Map, Value};
use std::future::Future;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The longest any one step of a test waits (a message, a state, an outcome).
pub const WAIT: Duration = Duration::from_secs(10);
/// The longest a whole test may take.
pub const TEST_LIMIT: Duration = Duration::from_secs(60);

/// Runs a whole test within [`TEST_LIMIT`].
pub async fn bounded<F: Future>(test: F) -> F::Output {
    match tokio::time::timeout(TEST_LIMIT, test).await {
        Ok(out) => out,
        Err(_) => panic!("the test did not finish within {TEST_LIMIT:?}"),
    }
}

/// `fut`'s output within [`WAIT`], or a panic naming `what`.
pub async fn within<F: Future>(what: &str, fut: F) -> F::Output {
    match tokio::time::timeout(WAIT, fut).await {
        Ok(out) => out,
        Err(_) => panic!("{what}: nothing within {WAIT:?}"),
    }
}

/// Polls `check` every 10 ms until it holds, at most [`WAIT`].
pub async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    within(what, async {
        while !check() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
}

/// An upstream's configuration as `gateway.toml` would give it: a 10 s
/// timeout, no liveness pings, the session era (tests of the probe set
/// `protocol` themselves), no retries and no breaker.
pub fn config(name: &str, transport: Transport) -> UpstreamConfig {
    UpstreamConfig {
        name: name.into(),
        transport,
        timeout: WAIT,
        ping_interval: None,
        required: false,
        prefix: name.into(),
        tools: Default::default(),
        prompts: Default::default(),
        protocol: UpstreamProtocol::Session,
        overrides: Default::default(),
        retries: None,
        breaker: None,
        instances: 1,
        pool_urls: Vec::new(),
    }
}

/// An upstream running as in the gateway: its actor spawned, its events
/// read (and dropped: no test here is about them), stopped (its child
/// reaped) when dropped or [`Running::stop`]ped.
pub struct Running {
    pub up: Upstream,
    shutdown: CancellationToken,
    tracker: TaskTracker,
}

impl Running {
    pub fn spawn(config: UpstreamConfig) -> Running {
        Running::spawn_with(config, LimitsConfig::default())
    }

    pub fn spawn_with(config: UpstreamConfig, limits: LimitsConfig) -> Running {
        let (tx, mut events) = mpsc::channel::<UpstreamEvent>(64);
        // As the gateway does: the actor never waits on a full channel.
        tokio::spawn(async move { while events.recv().await.is_some() {} });
        let shutdown = CancellationToken::new();
        let tracker = TaskTracker::new();
        let up = Upstream::spawn(config, limits, tx, shutdown.clone(), &tracker);
        Running {
            up,
            shutdown,
            tracker,
        }
    }

    /// Waits for a status that satisfies `ok`, and returns it.
    pub async fn status_where(
        &self,
        what: &str,
        ok: impl Fn(&UpstreamStatus) -> bool,
    ) -> UpstreamStatus {
        let mut rx = self.up.watch_status();
        let waited = tokio::time::timeout(WAIT, rx.wait_for(|s| ok(s))).await;
        match waited {
            Ok(Ok(s)) => s.clone(),
            _ => panic!("{what}: not within {WAIT:?}; status {:?}", self.up.status()),
        }
    }

    /// Waits until the upstream is ready (its handshake and lists done).
    pub async fn ready(&self) -> UpstreamStatus {
        self.status_where("ready", |s| s.state == State::Ready)
            .await
    }

    /// Waits until the upstream failed to start, and returns why.
    pub async fn failed(&self) -> String {
        let s = self
            .status_where("a failed start", |s| {
                s.state != State::Ready && s.last_error.is_some()
            })
            .await;
        s.last_error.unwrap_or_default()
    }

    /// Stops the actor and waits (bounded) for its tasks.
    pub async fn stop(&self) {
        self.shutdown.cancel();
        self.tracker.close();
        let _ = tokio::time::timeout(WAIT, self.tracker.wait()).await;
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

/// `tools/call` params for tool `name` with `arguments`.
pub fn tool(name: &str, arguments: Value) -> Option<Map<String, Value>> {
    json!({"name": name, "arguments": arguments})
        .as_object()
        .cloned()
}

/// The call's outcome, within [`WAIT`].
pub async fn outcome(call: &mut Call) -> CallOutcome {
    within("the call's outcome", call.outcome()).await
}

/// The call's next event, within [`WAIT`].
pub async fn next(call: &mut Call) -> CallEvent {
    within("the call's next event", call.next()).await
}

/// The result of an outcome, parsed; panics on anything else.
pub fn result(outcome: CallOutcome) -> Value {
    match outcome {
        CallOutcome::Result(raw) => serde_json::from_str(raw.get()).expect("a JSON result"),
        other => panic!("expected a result, got {other:?}"),
    }
}

/// The failure of an outcome; panics on anything else.
pub fn failure(outcome: CallOutcome) -> manifold_upstream::UpstreamError {
    match outcome {
        CallOutcome::Failed(e) => e,
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// A JSON-RPC result message answering `id`.
pub fn answer(id: &Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// A JSON-RPC error message answering `id`.
pub fn error(id: &Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// A text tool result.
pub fn text(s: &str) -> Value {
    json!({"content": [{"type": "text", "text": s}]})
}

/// The `initialize` result of a session-era server speaking `version`.
pub fn initialize_result(version: &str, capabilities: Value) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": "fake", "version": "1.0.0"},
    })
}
