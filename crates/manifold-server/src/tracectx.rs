//! Traces: the `request` span of each message, named and attributed after the
//! OpenTelemetry semantic conventions for MCP (`{mcp.method.name} {target}`,
//! `mcp.method.name`, `mcp.session.id`, `mcp.protocol.version`,
//! `jsonrpc.request.id`, `gen_ai.tool.name`, `gen_ai.prompt.name`,
//! `gen_ai.operation.name`, `mcp.resource.uri`, `network.transport`), W3C trace
//! context taken from the client (the `traceparent`/`tracestate` headers, else
//! `params._meta`), and the current context given to upstreams (headers for HTTP
//! upstreams, `params._meta` for both transports).
//!
//! Spans are `tracing` spans; the binary exports them over OTLP when
//! `[tracing]` is configured (its `tracing-opentelemetry` layer and the W3C
//! propagator). Without it every function here is a cheap no-op: no context is
//! extracted, none is injected, no trace id is recorded.
//!
//! Invariants: the session id appears only as its digest; a client's
//! `traceparent` is at most `MAX_TRACEPARENT` bytes or ignored.
//!
//! Not here: the exporter and sampling (the binary).

use http::HeaderMap;
use opentelemetry::propagation::Extractor;
use opentelemetry::trace::TraceContextExt;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use tracing::field::Empty;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The longest `traceparent`/`tracestate` taken from a client.
pub const MAX_TRACEPARENT: usize = 512;
/// The longest span attribute taken from client input (a name, a URI, an id);
/// longer ones are cut and marked.
pub const MAX_ATTRIBUTE_BYTES: usize = 256;

fn clip(s: &str) -> String {
    if s.len() <= MAX_ATTRIBUTE_BYTES {
        return s.to_string();
    }
    let mut end = MAX_ATTRIBUTE_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

/// Whether spans are exported (the binary's `[tracing]`): only then are the
/// detailed request span, the phase spans and the context work worth their
/// cost. Without it a request gets the lean span its log lines need.
static EXPORTING: AtomicBool = AtomicBool::new(false);

/// Turns the detailed spans on (the binary calls this when it exports them).
pub fn enable_span_export() {
    EXPORTING.store(true, Ordering::Relaxed);
}

fn exporting() -> bool {
    EXPORTING.load(Ordering::Relaxed)
}

/// The span of a call to an upstream (kind client), or none when spans are
/// not exported.
pub(crate) fn upstream_call(method: &str, upstream: &str) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    tracing::info_span!("upstream.call",
        otel.name = format!("{method} {upstream}"),
        otel.kind = "client",
        "mcp.method.name" = %method,
        upstream = %upstream)
}

/// The phases of a request that get a span of their own.
pub(crate) enum Phase {
    Admission,
    AuditWrite,
}

/// A span for one phase of a request (`admission`, `audit.write`), or none
/// when spans are not exported.
pub(crate) fn phase(phase: Phase) -> tracing::Span {
    if !exporting() {
        return tracing::Span::none();
    }
    match phase {
        Phase::Admission => tracing::info_span!("admission"),
        Phase::AuditWrite => tracing::info_span!("audit.write"),
    }
}

/// A new `request` span for one message arriving over `transport` (`tcp`,
/// `pipe`); the pipeline fills it in once the message is read.
pub(crate) fn request_span(request_id: &str, transport: &'static str) -> tracing::Span {
    if !exporting() {
        return tracing::info_span!("request", request_id = %request_id, principal = Empty);
    }
    tracing::info_span!("request",
        otel.name = Empty,
        otel.kind = "server",
        request_id = %request_id,
        principal = Empty,
        trace_id = Empty,
        "mcp.method.name" = Empty,
        "mcp.session.id" = Empty,
        "mcp.protocol.version" = Empty,
        "jsonrpc.request.id" = Empty,
        "gen_ai.operation.name" = Empty,
        "gen_ai.tool.name" = Empty,
        "gen_ai.prompt.name" = Empty,
        "mcp.resource.uri" = Empty,
        "network.transport" = transport,
    )
}

/// What the pipeline knows once a request is decoded.
pub(crate) struct Described<'a> {
    pub method: &'a str,
    pub id: &'a Value,
    pub params: Option<&'a Map<String, Value>>,
    pub headers: Option<&'a HeaderMap>,
    pub session: Option<&'a str>,
    pub protocol_version: Option<&'a str>,
}

struct Headers<'a>(&'a HeaderMap);
impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .and_then(|v| v.to_str().ok())
            .filter(|v| v.len() <= MAX_TRACEPARENT)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

struct Meta<'a>(&'a Map<String, Value>);
impl Extractor for Meta<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .get(key)
            .and_then(Value::as_str)
            .filter(|v| v.len() <= MAX_TRACEPARENT)
    }
    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}

/// Names and attributes the current `request` span, continues the client's
/// trace, and records the trace id (so log lines carry it).
pub(crate) fn describe(span: &tracing::Span, d: Described<'_>) {
    if span.is_disabled() || !exporting() {
        return;
    }
    let meta = d
        .params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let from_headers = d.headers.filter(|h| h.contains_key("traceparent"));
    let parent = opentelemetry::global::get_text_map_propagator(|p| match (from_headers, meta) {
        (Some(h), _) => Some(p.extract(&Headers(h))),
        (None, Some(m)) if m.contains_key("traceparent") => Some(p.extract(&Meta(m))),
        _ => None,
    });
    if let Some(cx) = parent {
        let _ = span.set_parent(cx);
    }
    // Client input, bounded: one oversized attribute must not bloat the
    // export queue or fail a whole batch.
    let name = |k: &str| {
        d.params
            .and_then(|p| p.get(k))
            .and_then(Value::as_str)
            .map(clip)
    };
    let method = clip(d.method);
    let target = match d.method {
        "tools/call" => {
            span.record("gen_ai.operation.name", "execute_tool");
            name("name").inspect(|n| {
                span.record("gen_ai.tool.name", n.as_str());
            })
        }
        "prompts/get" => name("name").inspect(|n| {
            span.record("gen_ai.prompt.name", n.as_str());
        }),
        _ => None,
    };
    if let Some(uri) = name("uri") {
        span.record("mcp.resource.uri", uri.as_str());
    }
    span.record(
        "otel.name",
        match target {
            Some(t) => format!("{method} {t}"),
            None => method.clone(),
        },
    );
    span.record("mcp.method.name", method.as_str());
    span.record("jsonrpc.request.id", clip(&d.id.to_string()));
    if let Some(s) = d.session.and_then(session_ref) {
        span.record("mcp.session.id", s);
    }
    if let Some(v) = d.protocol_version {
        span.record("mcp.protocol.version", clip(v));
    }
    let trace = span.context().span().span_context().clone();
    if trace.is_valid() {
        span.record("trace_id", trace.trace_id().to_string());
    }
}

/// The current trace context, as `traceparent`/`tracestate` pairs (empty
/// when nothing is traced).
fn current() -> HashMap<String, String> {
    if !exporting() {
        return HashMap::new();
    }
    let cx = tracing::Span::current().context();
    let mut carrier = HashMap::new();
    if cx.span().span_context().is_valid() {
        opentelemetry::global::get_text_map_propagator(|p| p.inject_context(&cx, &mut carrier));
    }
    carrier
}

/// Gives the current context to the upstream: in `params._meta` (both
/// transports) and as headers (HTTP upstreams).
pub(crate) fn propagate(params: &mut Map<String, Value>, headers: &mut Vec<(String, String)>) {
    let pairs = current();
    if pairs.is_empty() {
        return;
    }
    let meta = params
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        for (k, v) in &pairs {
            meta.insert(k.clone(), Value::String(v.clone()));
        }
    }
    headers.retain(|(k, _)| !pairs.contains_key(&k.to_ascii_lowercase()));
    headers.extend(pairs);
}

pub(crate) use crate::state::sessions::session_ref;
