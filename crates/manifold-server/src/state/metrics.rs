//! The Prometheus registry: every metric family Manifold exports (documented in
//! docs/metrics.md), and how `/metrics` renders it.
//!
//! Invariants:
//! - every label set is bounded: methods are the MCP methods Manifold routes (else
//!   `other`), upstreams are configured names, tools are limited to
//!   `[metrics] max_tool_series` (the rest count under `tool="other"`); no session
//!   id, request id or principal is ever a label;
//! - gauges that mirror state (upstream states, sessions, left-out items, audit
//!   queue) are refreshed when `/metrics` is scraped, not on every event.
//!
//! Not here: when a request is counted (`observe`), serving `/metrics`
//! (`admin/mod.rs`).

use manifold_protocol::methods as m;
use manifold_upstream::State;
use parking_lot::{Mutex, RwLock};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use manifold_catalog::Catalog;
use manifold_upstream::Upstream;

/// What the state gauges say at a scrape: read from the gateway by its
/// caller, so the registry needs no gateway.
pub(crate) struct Now<'a> {
    pub upstreams: &'a [Upstream],
    pub sessions: usize,
    pub catalog: &'a Catalog,
    /// Messages the cluster's bus refused, by reason (none without one).
    pub bus_rejected: Vec<(&'static str, u64)>,
    pub audit: Option<manifold_audit::AuditStats>,
    /// Searches ranked lexically because semantic search failed (`None`
    /// without `[discovery.semantic]`).
    pub semantic_fallbacks: Option<u64>,
}

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
    m::SUBSCRIPTIONS_LISTEN,
    manifold_protocol::tasks::TASKS_GET,
    manifold_protocol::tasks::TASKS_UPDATE,
    manifold_protocol::tasks::TASKS_CANCEL,
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
struct PrincipalOutcome {
    principal: String,
    outcome: &'static str,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EndpointOutcome {
    endpoint: String,
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
struct OutcomeOnly {
    outcome: &'static str,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamStatus {
    upstream: String,
    status: &'static str,
}
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindReason {
    kind: &'static str,
    reason: &'static str,
}

/// Every metric family Manifold exports.
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
    reloads: Family<OutcomeOnly, Counter>,
    list_changed_received: Family<UpstreamLabel, Counter>,
    list_changed_sent: Family<MethodLabel, Counter>,
    sessions: Gauge,
    left_out: Family<KindReason, Gauge>,
    headers_mirrored: Counter,
    header_rejections: Counter,
    audit_written: Gauge,
    audit_lost: Gauge,
    audit_queue: Gauge,
    /// Only with `[discovery.semantic]` (registered then, so a gateway without
    /// it exports exactly what it did before).
    semantic_fallbacks: Option<Gauge>,
    request_bytes: Family<MethodLabel, Counter>,
    response_bytes: Family<MethodLabel, Counter>,
    /// Mirrors the bus's own counts (manifold-cluster `Rejection`).
    cluster_rejected: Family<ReasonLabel, Counter>,
    /// Tasks (the Tasks extension) this replica created and has not seen end.
    tasks_in_flight: Family<UpstreamLabel, Gauge>,
    tasks_created: Family<UpstreamLabel, Counter>,
    tasks_ended: Family<UpstreamStatus, Counter>,
    /// Tools that have their own latency series.
    tool_series: Mutex<foldhash::HashSet<String>>,
    /// The series the calls use, by the labels they name them with (see
    /// [`Handles`]).
    handles: Handles,
    max_tool_series: usize,
    /// With `[metrics] principal_label`: requests by principal.
    by_principal: Option<Family<PrincipalOutcome, Counter>>,
    principal_series: Mutex<foldhash::HashSet<String>>,
    max_principal_series: usize,
    /// `[integrity]`'s families (`state::integrity::metrics`).
    pub(crate) integrity: super::integrity::metrics::IntegrityMetrics,
    /// Requests through an `[[endpoint]]`, by its path (at most
    /// [`MAX_ENDPOINT_SERIES`] paths; later ones count as `other`).
    by_endpoint: Family<EndpointOutcome, Counter>,
    endpoint_series: Mutex<foldhash::HashSet<String>>,
    /// Retries and circuit breakers.
    resilience: super::resilience_metrics::ResilienceMetrics,
}

/// Metric handles by the labels a call names them with, so the call path
/// finds its series with one fast hash: a [`Family`] hashes its whole label
/// set with SipHash, and copies label strings, on every lookup. A handle
/// shares its series with the family (what `/metrics` renders). Holds at
/// most [`MAX_CACHED_HANDLES`] latency handles, each for a tool that has its
/// own series (whose name the family holds already); past it, and for a tool
/// counted under `other`, lookups go to the family as before.
#[derive(Default)]
struct Handles {
    requests: RwLock<foldhash::HashMap<(&'static str, &'static str), Counter>>,
    request_bytes: RwLock<foldhash::HashMap<&'static str, Counter>>,
    response_bytes: RwLock<foldhash::HashMap<&'static str, Counter>>,
    /// By upstream, then tool name as called ("" for none).
    latency: RwLock<foldhash::HashMap<String, foldhash::HashMap<String, Histogram>>>,
    latency_len: std::sync::atomic::AtomicUsize,
}

/// Latency handles kept by [`Handles`] (its other maps are bounded by the
/// fixed method and outcome labels).
pub const MAX_CACHED_HANDLES: usize = 4096;

impl Handles {
    fn counter<K: std::hash::Hash + Eq + Copy>(
        &self,
        map: &RwLock<foldhash::HashMap<K, Counter>>,
        key: K,
        make: impl FnOnce() -> Counter,
    ) -> Counter {
        if let Some(c) = map.read().get(&key) {
            return c.clone();
        }
        map.write().entry(key).or_insert_with(make).clone()
    }

    fn keep_latency(&self, upstream: &str, tool: &str, h: &Histogram) {
        use std::sync::atomic::Ordering;
        if self.latency_len.load(Ordering::Relaxed) >= MAX_CACHED_HANDLES {
            return;
        }
        let mut map = self.latency.write();
        let tools = map.entry(upstream.to_string()).or_default();
        if !tools.contains_key(tool) {
            tools.insert(tool.to_string(), h.clone());
            self.latency_len.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Distinct `endpoint` labels of `manifold_endpoint_requests_total`: the
/// paths come from the configuration, but reloads may add new ones for ever.
pub const MAX_ENDPOINT_SERIES: usize = 64;

impl Metrics {
    pub(crate) fn new(config: &manifold_config::GatewayConfig) -> Metrics {
        let max_tool_series = config.max_tool_series;
        let mut r = Registry::with_prefix("manifold");
        let by_principal =
            (config.principal_label != manifold_config::PrincipalLabel::None).then(|| {
                let f = Family::<PrincipalOutcome, Counter>::default();
                r.register(
                    "requests_by_principal",
                    "Requests answered, by principal (or its group) and outcome",
                    f.clone(),
                );
                f
            });
        let by_endpoint = Family::<EndpointOutcome, Counter>::default();
        r.register(
            "endpoint_requests",
            "Requests answered through an [[endpoint]], by its path and outcome",
            by_endpoint.clone(),
        );
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
        let reloads = Family::<OutcomeOnly, Counter>::default();
        r.register(
            "config_reloads",
            "Configuration reloads (SIGHUP, POST /reload, a watched file), by outcome: ok or error",
            reloads.clone(),
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
        let semantic_fallbacks = config.semantic.as_ref().map(|_| {
            let g = Gauge::default();
            r.register(
                "search_semantic_fallbacks",
                "Searches ranked lexically because semantic search could not run",
                g.clone(),
            );
            g
        });
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
        let cluster_rejected = Family::<ReasonLabel, Counter>::default();
        r.register(
            "cluster_rejected",
            "Messages from the cluster's Redis bus refused, by reason: unsigned, bad_mac, expired, future, replayed, too_many_senders, too_large, unreadable",
            cluster_rejected.clone(),
        );
        let tasks_in_flight = Family::<UpstreamLabel, Gauge>::default();
        r.register(
            "tasks_in_flight",
            "Tasks this replica relayed the creation of and has not seen end, by upstream",
            tasks_in_flight.clone(),
        );
        let tasks_created = Family::<UpstreamLabel, Counter>::default();
        r.register(
            "tasks_created",
            "Tasks created by upstreams for calls relayed by this replica, by upstream",
            tasks_created.clone(),
        );
        let tasks_ended = Family::<UpstreamStatus, Counter>::default();
        r.register(
            "tasks_ended",
            "Task ends this replica recorded, by upstream and status: completed, failed, cancelled, expired",
            tasks_ended.clone(),
        );
        let resilience = super::resilience_metrics::ResilienceMetrics::register(&mut r);
        let integrity = super::integrity::metrics::IntegrityMetrics::register(&mut r);
        Metrics {
            integrity,
            resilience,
            registry: r,
            tasks_in_flight,
            tasks_created,
            tasks_ended,
            requests,
            call_latency,
            in_flight,
            upstream_up,
            upstream_state,
            upstream_restarts,
            upstream_exit_code,
            rebuilds,
            reloads,
            list_changed_received,
            list_changed_sent,
            sessions,
            left_out,
            headers_mirrored,
            header_rejections,
            audit_written,
            audit_lost,
            audit_queue,
            semantic_fallbacks,
            request_bytes,
            response_bytes,
            cluster_rejected,
            tool_series: Mutex::new(foldhash::HashSet::default()),
            handles: Handles::default(),
            max_tool_series,
            by_principal,
            principal_series: Mutex::new(foldhash::HashSet::default()),
            max_principal_series: config.max_principal_series,
            by_endpoint,
            endpoint_series: Mutex::new(foldhash::HashSet::default()),
        }
    }

    /// One request answered for `principal` (the label value `[metrics]
    /// principal_label` chose), within `max_principal_series`.
    pub(crate) fn answered_for(&self, principal: &str, outcome: &'static str) {
        let Some(family) = &self.by_principal else {
            return;
        };
        let principal = {
            let mut seen = self.principal_series.lock();
            if seen.contains(principal) || seen.len() < self.max_principal_series {
                seen.insert(principal.to_string());
                principal.to_string()
            } else {
                "other".to_string()
            }
        };
        family
            .get_or_create(&PrincipalOutcome { principal, outcome })
            .inc();
    }

    /// One request through the `[[endpoint]]` at `path` answered.
    pub(crate) fn answered_at(&self, path: &str, outcome: &'static str) {
        let endpoint = {
            let mut seen = self.endpoint_series.lock();
            if seen.contains(path) || seen.len() < MAX_ENDPOINT_SERIES {
                seen.insert(path.to_string());
                path.to_string()
            } else {
                "other".to_string()
            }
        };
        self.by_endpoint
            .get_or_create(&EndpointOutcome { endpoint, outcome })
            .inc();
    }

    /// One request answered: its outcome and request bytes, and for the methods
    /// that reach an upstream (the audited ones) the response bytes.
    pub(crate) fn answered(
        &self,
        method: &str,
        outcome: &'static str,
        request_bytes: usize,
        response_bytes: Option<usize>,
    ) {
        let method = method_label(method);
        let h = &self.handles;
        h.counter(&h.requests, (method, outcome), || {
            self.requests
                .get_or_create(&MethodOutcome { method, outcome })
                .clone()
        })
        .inc();
        h.counter(&h.request_bytes, method, || {
            self.request_bytes
                .get_or_create(&MethodLabel { method })
                .clone()
        })
        .inc_by(request_bytes as u64);
        if let Some(n) = response_bytes {
            h.counter(&h.response_bytes, method, || {
                self.response_bytes
                    .get_or_create(&MethodLabel { method })
                    .clone()
            })
            .inc_by(n as u64);
        }
    }

    /// A forwarded call's duration; `tool` names a series while under the bound.
    pub(crate) fn call_duration(&self, upstream: &str, tool: Option<&str>, seconds: f64) {
        let name = tool.unwrap_or("");
        let known = self
            .handles
            .latency
            .read()
            .get(upstream)
            .and_then(|tools| tools.get(name).cloned());
        let histogram = match known {
            Some(h) => h,
            None => {
                let (h, own) = self.latency_series(upstream, tool);
                // Only a name that has its own series (or none) is kept: the
                // family holds those names already; a tool past the bound
                // (`other`) would add names without one.
                if own {
                    self.handles.keep_latency(upstream, name, &h);
                }
                h
            }
        };
        histogram.observe(seconds);
    }

    /// The latency series of `upstream`'s `tool` (its own while under the
    /// bound, `other` past it, `none` without a tool), and whether it is not
    /// `other`.
    fn latency_series(&self, upstream: &str, tool: Option<&str>) -> (Histogram, bool) {
        let label = match tool {
            Some(t) => self.tool_label(t),
            None => "none".to_string(),
        };
        let own = tool.is_none_or(|t| t == label);
        let series = self
            .call_latency
            .get_or_create(&UpstreamTool {
                upstream: upstream.to_string(),
                tool: label,
            })
            .clone();
        (series, own)
    }
    pub(crate) fn reloaded(&self, ok: bool) {
        self.reloads
            .get_or_create(&OutcomeOnly {
                outcome: if ok { "ok" } else { "error" },
            })
            .inc();
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
    /// A task was created by `upstream` for a call this replica relayed;
    /// `tracked`: it counts in the in-flight gauge until its end is seen here.
    pub(crate) fn task_created(&self, upstream: &str, tracked: bool) {
        let label = UpstreamLabel {
            upstream: upstream.to_string(),
        };
        self.tasks_created.get_or_create(&label).inc();
        if tracked {
            self.tasks_in_flight.get_or_create(&label).inc();
        }
    }

    /// A task's end was recorded here (`status`: completed, failed, cancelled,
    /// expired); `tracked`: this replica counted it in flight.
    pub(crate) fn task_ended(&self, upstream: &str, status: &'static str, tracked: bool) {
        self.tasks_ended
            .get_or_create(&UpstreamStatus {
                upstream: upstream.to_string(),
                status,
            })
            .inc();
        if tracked {
            self.tasks_in_flight
                .get_or_create(&UpstreamLabel {
                    upstream: upstream.to_string(),
                })
                .dec();
        }
    }

    /// The in-flight gauge of `upstream`.
    pub(crate) fn in_flight(&self, upstream: &str) -> Gauge {
        self.in_flight
            .get_or_create(&UpstreamLabel {
                upstream: upstream.to_string(),
            })
            .clone()
    }

    /// A tool call of `upstream` was coalesced (`call::relay::coalesce`).
    pub(crate) fn coalesced(&self, upstream: &str) {
        self.resilience.coalesced(upstream);
    }

    /// The tool label: its name while under the series bound, else `other`.
    fn tool_label(&self, tool: &str) -> String {
        let mut seen = self.tool_series.lock();
        if seen.contains(tool) || seen.len() < self.max_tool_series {
            seen.insert(tool.to_string());
            tool.to_string()
        } else {
            "other".to_string()
        }
    }

    /// Refreshes the state gauges from `now` and renders the text format.
    pub(crate) fn render(&self, now: Now<'_>) -> String {
        for u in now.upstreams {
            let st = u.status();
            let label = UpstreamLabel {
                upstream: u.name().to_string(),
            };
            let ready = st.state == State::Ready;
            self.upstream_up.get_or_create(&label).set(i64::from(ready));
            for s in [
                State::Starting,
                State::Ready,
                State::Down,
                State::NeedsLogin,
                State::Stopped,
            ] {
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
            self.resilience.refresh(u);
        }
        self.sessions.set(now.sessions as i64);
        let catalog = now.catalog;
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
                        reason: manifold_catalog::LeftOutReason::kind(&lo.reason),
                    })
                    .inc();
            }
        }
        // The bus counts; the counters mirror it (a store, so two scrapes at
        // once cannot count twice).
        for (reason, n) in now.bus_rejected {
            self.cluster_rejected
                .get_or_create(&ReasonLabel { reason })
                .inner()
                .store(n, std::sync::atomic::Ordering::Relaxed);
        }
        if let (Some(g), Some(n)) = (&self.semantic_fallbacks, now.semantic_fallbacks) {
            g.set(n as i64);
        }
        if let Some(s) = now.audit {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(toml: &str) -> Metrics {
        let config = manifold_config::load_str(
            std::path::Path::new("gateway.toml"),
            toml,
            |_| None,
            figment::providers::Env::raw().only(&[] as &[&str]),
        )
        .expect("config");
        Metrics::new(&config)
    }

    fn text(m: &Metrics) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &m.registry).expect("encode");
        out
    }

    /// The handles the call path keeps count in the series `/metrics`
    /// renders: a tool's own latency series while under `max_tool_series`,
    /// `other` past it (also for a tool seen again), `none` without a tool;
    /// request counts by method and outcome; response bytes only when given.
    #[test]
    fn cached_handles_count_in_the_rendered_series() {
        let m = metrics("[metrics]\nmax_tool_series = 2\n");
        for tool in ["a", "b", "c", "a", "c", "d"] {
            m.call_duration("up", Some(tool), 0.001);
        }
        m.call_duration("up", None, 0.001);
        m.call_duration("other-up", Some("a"), 0.001);
        for _ in 0..3 {
            m.answered("tools/call", "ok", 10, Some(5));
        }
        m.answered("tools/call", "error", 10, None);
        m.answered("ping", "ok", 7, None);
        let t = text(&m);
        let count = |series: &str| {
            t.lines()
                .find(|l| l.starts_with(series))
                .and_then(|l| l.rsplit(' ').next())
                .unwrap_or_else(|| panic!("no {series} in\n{t}"))
                .to_string()
        };
        let latency = |up: &str, tool: &str| {
            count(&format!(
                "manifold_call_duration_seconds_count{{upstream=\"{up}\",tool=\"{tool}\"}}"
            ))
        };
        assert_eq!(latency("up", "a"), "2");
        assert_eq!(latency("up", "b"), "1");
        assert_eq!(latency("up", "other"), "3", "c twice and d");
        assert_eq!(latency("up", "none"), "1");
        assert_eq!(latency("other-up", "a"), "1", "a has its own series");
        assert!(!t.contains("tool=\"c\""), "{t}");
        let requests = |method: &str, outcome: &str| {
            count(&format!(
                "manifold_requests_total{{method=\"{method}\",outcome=\"{outcome}\"}}"
            ))
        };
        assert_eq!(requests("tools/call", "ok"), "3");
        assert_eq!(requests("tools/call", "error"), "1");
        assert_eq!(requests("ping", "ok"), "1");
        assert_eq!(
            count("manifold_request_bytes_total{method=\"tools/call\"}"),
            "40"
        );
        assert_eq!(
            count("manifold_response_bytes_total{method=\"tools/call\"}"),
            "15"
        );
        assert!(
            !t.contains("manifold_response_bytes_total{method=\"ping\"}"),
            "{t}"
        );
    }
}
