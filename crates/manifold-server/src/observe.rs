//! What Manifold records about the requests it serves: Prometheus metrics and the
//! audit log, fed from one place per request ([`Observed::finish`]).
//!
//! Invariants:
//! - every label set is bounded: methods are the MCP methods Manifold routes (else
//!   `other`), upstreams are configured names, tools are limited to
//!   `[metrics] max_tool_series` (the rest count under `tool="other"`); no session
//!   id, request id or principal is ever a label;
//! - gauges that mirror state (upstream states, sessions, left-out items, audit
//!   queue) are refreshed when `/metrics` is scraped, not on every event;
//! - a call's audit record is written before its response is sent (the writer's
//!   bounded queue back-pressures callers; it never drops records silently).
//!
//! Not here: serving `/metrics` (see `admin`), the audit writer (manifold-audit).

use manifold_audit::{AuditError, AuditRecord, Auditor, ClientInfo, Outcome};
use manifold_protocol::methods as m;
use manifold_upstream::{CallOutcome, State, UpstreamError};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use serde_json::Value;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use crate::session::DownSession;
use crate::Gateway;

/// Latency buckets in seconds: 1 ms … 60 s (the default call timeout).
const LATENCY_BUCKETS: [f64; 14] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0, 30.0, 60.0,
];

/// The methods that get their own label value.
const METHODS: &[&str] = &[
    m::INITIALIZE,
    m::PING,
    m::TOOLS_LIST,
    m::TOOLS_CALL,
    m::PROMPTS_LIST,
    m::PROMPTS_GET,
    m::RESOURCES_LIST,
    m::RESOURCES_TEMPLATES_LIST,
    m::RESOURCES_READ,
    m::RESOURCES_SUBSCRIBE,
    m::RESOURCES_UNSUBSCRIBE,
    m::COMPLETION_COMPLETE,
    m::LOGGING_SET_LEVEL,
    m::SERVER_DISCOVER,
];

/// A method as a label: known ones as-is, anything else `other`.
pub(crate) fn method_label(method: &str) -> &'static str {
    METHODS
        .iter()
        .find(|&&k| k == method)
        .copied()
        .unwrap_or("other")
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodOutcome {
    method: &'static str,
    outcome: &'static str,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamTool {
    upstream: String,
    tool: String,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabel {
    upstream: String,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamState {
    upstream: String,
    state: &'static str,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabel {
    method: &'static str,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindReason {
    kind: &'static str,
    reason: &'static str,
}

/// Every metric family Manifold exports (documented in docs/metrics.md).
pub(crate) struct Metrics {
    registry: Registry,
    requests: Family<MethodOutcome, Counter>,
    call_latency: Family<UpstreamTool, Histogram>,
    in_flight: Family<UpstreamLabel, Gauge>,
    upstream_up: Family<UpstreamLabel, Gauge>,
    upstream_state: Family<UpstreamState, Gauge>,
    upstream_restarts: Family<UpstreamLabel, Gauge>,
    upstream_exit_code: Family<UpstreamLabel, Gauge>,
    rebuilds: Counter,
    list_changed_received: Family<UpstreamLabel, Counter>,
    list_changed_sent: Family<MethodLabel, Counter>,
    sessions: Gauge,
    left_out: Family<KindReason, Gauge>,
    headers_mirrored: Counter,
    header_rejections: Counter,
    audit_written: Gauge,
    audit_lost: Gauge,
    audit_queue: Gauge,
    request_bytes: Family<MethodLabel, Counter>,
    response_bytes: Family<MethodLabel, Counter>,
    /// Tools that have their own latency series.
    tool_series: Mutex<HashSet<String>>,
    max_tool_series: usize,
}

impl Metrics {
    pub(crate) fn new(max_tool_series: usize) -> Metrics {
        let mut r = Registry::with_prefix("manifold");
        let requests = Family::<MethodOutcome, Counter>::default();
        r.register(
            "requests",
            "Requests answered, by method and outcome",
            requests.clone(),
        );
        let call_latency = Family::<UpstreamTool, Histogram>::new_with_constructor(|| {
            Histogram::new(LATENCY_BUCKETS)
        });
        r.register(
            "call_duration_seconds",
            "Forwarded calls from request to response, by upstream and tool",
            call_latency.clone(),
        );
        let in_flight = Family::<UpstreamLabel, Gauge>::default();
        r.register(
            "calls_in_flight",
            "Requests waiting for an upstream's answer",
            in_flight.clone(),
        );
        let upstream_up = Family::<UpstreamLabel, Gauge>::default();
        r.register(
            "upstream_up",
            "1 when the upstream is connected and ready, else 0",
            upstream_up.clone(),
        );
        let upstream_state = Family::<UpstreamState, Gauge>::default();
        r.register(
            "upstream_state",
            "1 for the upstream's current connection state",
            upstream_state.clone(),
        );
        let upstream_restarts = Family::<UpstreamLabel, Gauge>::default();
        r.register(
            "upstream_restarts",
            "Times the upstream was restarted or reconnected",
            upstream_restarts.clone(),
        );
        let upstream_exit_code = Family::<UpstreamLabel, Gauge>::default();
        r.register(
            "upstream_last_exit_code",
            "Exit code of the stdio upstream's last child process (-1: killed by a signal)",
            upstream_exit_code.clone(),
        );
        let rebuilds = Counter::default();
        r.register(
            "catalog_rebuilds",
            "Merged list snapshots built",
            rebuilds.clone(),
        );
        let list_changed_received = Family::<UpstreamLabel, Counter>::default();
        r.register(
            "list_changed_received",
            "list_changed notifications received from upstreams",
            list_changed_received.clone(),
        );
        let list_changed_sent = Family::<MethodLabel, Counter>::default();
        r.register(
            "list_changed_sent",
            "list_changed notifications sent to client sessions",
            list_changed_sent.clone(),
        );
        let sessions = Gauge::default();
        r.register("sessions", "Active client sessions", sessions.clone());
        let left_out = Family::<KindReason, Gauge>::default();
        r.register(
            "items_left_out",
            "Upstream tools, prompts and resources not exposed, by reason",
            left_out.clone(),
        );
        let headers_mirrored = Counter::default();
        r.register(
            "header_params_mirrored",
            "Mcp-Param-* headers computed for forwarded tool calls (HTTP upstreams receive them)",
            headers_mirrored.clone(),
        );
        let header_rejections = Counter::default();
        r.register(
            "header_params_rejected",
            "Calls refused because an x-mcp-header argument could not be encoded",
            header_rejections.clone(),
        );
        let audit_written = Gauge::default();
        r.register(
            "audit_records_written",
            "Audit records written",
            audit_written.clone(),
        );
        let audit_lost = Gauge::default();
        r.register(
            "audit_records_lost",
            "Audit records that could not be written",
            audit_lost.clone(),
        );
        let audit_queue = Gauge::default();
        r.register(
            "audit_queue_depth",
            "Audit records waiting for the writer",
            audit_queue.clone(),
        );
        let request_bytes = Family::<MethodLabel, Counter>::default();
        r.register(
            "request_bytes",
            "Bytes of request bodies received",
            request_bytes.clone(),
        );
        let response_bytes = Family::<MethodLabel, Counter>::default();
        r.register(
            "response_bytes",
            "Bytes of responses to forwarded calls",
            response_bytes.clone(),
        );
        Metrics {
            registry: r,
            requests,
            call_latency,
            in_flight,
            upstream_up,
            upstream_state,
            upstream_restarts,
            upstream_exit_code,
            rebuilds,
            list_changed_received,
            list_changed_sent,
            sessions,
            left_out,
            headers_mirrored,
            header_rejections,
            audit_written,
            audit_lost,
            audit_queue,
            request_bytes,
            response_bytes,
            tool_series: Mutex::new(HashSet::new()),
            max_tool_series,
        }
    }

    pub(crate) fn request(&self, method: &str, outcome: &'static str, bytes: usize) {
        let method = method_label(method);
        self.requests
            .get_or_create(&MethodOutcome { method, outcome })
            .inc();
        self.request_bytes
            .get_or_create(&MethodLabel { method })
            .inc_by(bytes as u64);
    }
    pub(crate) fn rebuilt(&self) {
        self.rebuilds.inc();
    }
    pub(crate) fn list_changed_received(&self, upstream: &str) {
        self.list_changed_received
            .get_or_create(&UpstreamLabel {
                upstream: upstream.to_string(),
            })
            .inc();
    }
    pub(crate) fn list_changed_sent(&self, method: &'static str, sessions: usize) {
        self.list_changed_sent
            .get_or_create(&MethodLabel { method })
            .inc_by(sessions as u64);
    }
    pub(crate) fn headers_mirrored(&self, n: usize) {
        self.headers_mirrored.inc_by(n as u64);
    }
    pub(crate) fn header_rejected(&self) {
        self.header_rejections.inc();
    }
    fn in_flight(&self, upstream: &str) -> Gauge {
        self.in_flight
            .get_or_create(&UpstreamLabel {
                upstream: upstream.to_string(),
            })
            .clone()
    }

    /// The tool label: its name while under the series bound, else `other`.
    fn tool_label(&self, tool: &str) -> String {
        let mut seen = self.tool_series.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(tool) || seen.len() < self.max_tool_series {
            seen.insert(tool.to_string());
            tool.to_string()
        } else {
            "other".to_string()
        }
    }

    /// Refreshes the state gauges and renders the text format.
    pub(crate) fn render(&self, gw: &Gateway) -> String {
        for u in gw.upstreams() {
            let st = u.status();
            let label = UpstreamLabel {
                upstream: u.name().to_string(),
            };
            let ready = st.state == State::Ready;
            self.upstream_up.get_or_create(&label).set(i64::from(ready));
            for s in [State::Starting, State::Ready, State::Down, State::Stopped] {
                self.upstream_state
                    .get_or_create(&UpstreamState {
                        upstream: u.name().to_string(),
                        state: s.as_str(),
                    })
                    .set(i64::from(st.state == s));
            }
            self.upstream_restarts
                .get_or_create(&label)
                .set(st.restarts as i64);
            if let Some(code) = st.last_exit_code {
                self.upstream_exit_code
                    .get_or_create(&label)
                    .set(i64::from(code));
            }
        }
        self.sessions.set(gw.sessions.len() as i64);
        let catalog = gw.catalog.load();
        self.left_out.clear();
        let lists = [
            ("tool", catalog.tools.left_out()),
            ("prompt", catalog.prompts.left_out()),
            ("resource", catalog.resources.resources.left_out()),
            ("resource_template", catalog.resources.templates.left_out()),
        ];
        for (kind, items) in lists {
            for lo in items {
                self.left_out
                    .get_or_create(&KindReason {
                        kind,
                        reason: reason_label(&lo.reason),
                    })
                    .inc();
            }
        }
        if let Some(a) = &gw.auditor {
            let s = a.stats();
            self.audit_written.set(s.written as i64);
            self.audit_lost.set(s.lost as i64);
            self.audit_queue.set(s.queue_depth as i64);
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            tracing::error!("encoding the metrics failed");
        }
        out
    }
}

fn reason_label(r: &manifold_catalog::LeftOutReason) -> &'static str {
    use manifold_catalog::LeftOutReason as R;
    match r {
        R::NoName => "no_name",
        R::Filtered => "filtered",
        R::InvalidHeader(_) => "invalid_header",
        R::Collision { .. } => "collision",
    }
}

/// The members of an answer the audit outcome depends on; serde skips the rest
/// without building it (results can be large).
#[derive(serde::Deserialize)]
struct OutcomeProbe {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
    #[serde(default)]
    code: Option<i64>,
}

fn probe(raw: &serde_json::value::RawValue) -> Option<OutcomeProbe> {
    serde_json::from_str(raw.get()).ok()
}

/// The audit outcome of an upstream's answer.
pub(crate) fn outcome_of(o: &CallOutcome) -> Outcome {
    match o {
        CallOutcome::Result(raw) => match probe(raw).and_then(|p| p.is_error) {
            Some(true) => Outcome::ToolError,
            _ => Outcome::Ok,
        },
        CallOutcome::Error(raw) => Outcome::ProtocolError {
            code: probe(raw).and_then(|p| p.code).unwrap_or(-32603),
        },
        CallOutcome::Failed(e) => failure_outcome(e),
    }
}

pub(crate) fn failure_outcome(e: &UpstreamError) -> Outcome {
    match e {
        UpstreamError::Timeout { .. } => Outcome::Timeout,
        UpstreamError::Cancelled { .. } => Outcome::Cancelled,
        UpstreamError::Unavailable { .. } | UpstreamError::Busy { .. } => {
            Outcome::UpstreamUnavailable
        }
        UpstreamError::Protocol { .. } => Outcome::ProtocolError { code: e.code().0 },
    }
}

/// One audited request from arrival to answer.
pub(crate) struct Observed {
    started: Instant,
    time: SystemTime,
    request_id: String,
    method: String,
    session: Option<Arc<DownSession>>,
    request_bytes: usize,
    pub name: Option<String>,
    pub upstream: Option<Arc<str>>,
    pub original: Option<String>,
    pub arguments: Option<Value>,
    in_flight: Option<Gauge>,
}

impl Observed {
    pub(crate) fn new(
        meta: &crate::RequestMeta,
        method: &str,
        session: Option<&Arc<DownSession>>,
    ) -> Observed {
        Observed {
            started: Instant::now(),
            time: SystemTime::now(),
            request_id: meta.id.clone(),
            method: method.to_string(),
            session: session.cloned(),
            request_bytes: meta.bytes,
            name: None,
            upstream: None,
            original: None,
            arguments: None,
            in_flight: None,
        }
    }

    /// The request is now waiting on `upstream`.
    pub(crate) fn dispatched(&mut self, gw: &Gateway, upstream: &Arc<str>) {
        let g = gw.metrics.in_flight(upstream);
        g.inc();
        self.in_flight = Some(g);
        self.upstream = Some(upstream.clone());
    }

    /// Counts the answer and writes its audit record; returns once the record is
    /// written (or failed to be).
    pub(crate) async fn finish(
        mut self,
        gw: &Gateway,
        outcome: Outcome,
        response_bytes: usize,
    ) -> Result<(), AuditError> {
        if let Some(g) = self.in_flight.take() {
            g.dec();
        }
        let elapsed = self.started.elapsed();
        gw.metrics
            .request(&self.method, outcome.as_str(), self.request_bytes);
        gw.metrics
            .response_bytes
            .get_or_create(&MethodLabel {
                method: method_label(&self.method),
            })
            .inc_by(response_bytes as u64);
        if let Some(up) = &self.upstream {
            // Only tools and prompts name a series; URIs would use up the bound.
            let tool = match (&self.original, self.method.as_str()) {
                (Some(t), m::TOOLS_CALL | m::PROMPTS_GET) => gw.metrics.tool_label(t),
                _ => "none".to_string(),
            };
            gw.metrics
                .call_latency
                .get_or_create(&UpstreamTool {
                    upstream: up.to_string(),
                    tool,
                })
                .observe(elapsed.as_secs_f64());
        }
        let Some(auditor) = &gw.auditor else {
            return Ok(());
        };
        let mut rec = AuditRecord::new(self.request_id.clone(), self.method.clone());
        rec.time = self.time;
        rec.session = self.session.as_ref().and_then(|s| session_ref(&s.id));
        rec.client = self
            .session
            .as_ref()
            .and_then(|s| client_info(&s.client_info));
        rec.name = self.name.take();
        rec.upstream = self.upstream.as_ref().map(|u| u.to_string());
        rec.original = self.original.take();
        rec.arguments = self.arguments.take();
        rec.outcome = outcome;
        rec.latency_us = elapsed.as_micros() as u64;
        rec.request_bytes = self.request_bytes as u64;
        rec.response_bytes = response_bytes as u64;
        auditor.record(rec).await
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        if let Some(g) = self.in_flight.take() {
            g.dec();
        }
    }
}

/// How a session appears in audit records: the first 16 hex digits of the SHA-256
/// of its id. Records of one session correlate, but a reader of the log cannot
/// use the value to join the live session (the id is a bearer credential).
pub(crate) fn session_ref(id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    use sha2::{Digest, Sha256};
    Some(hex::encode(&Sha256::digest(id.as_bytes())[..8]))
}

fn client_info(v: &Value) -> Option<ClientInfo> {
    let name = v.get("name")?.as_str()?.to_string();
    let version = v
        .get("version")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    Some(ClientInfo { name, version })
}

/// Starts the audit writer when configured.
pub(crate) async fn start_auditor(
    settings: Option<&manifold_audit::AuditSettings>,
    shutdown: tokio_util::sync::CancellationToken,
) -> Result<Option<(Auditor, tokio::task::JoinHandle<()>)>, AuditError> {
    match settings {
        Some(s) => Ok(Some(Auditor::start(s.clone(), shutdown).await?)),
        None => Ok(None),
    }
}
