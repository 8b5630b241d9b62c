//! [`Observed`]: one request's metrics and audit record, started when its method is
//! known and finished exactly once, whatever the exit — an answer, a refusal, an
//! upstream failure, a cancellation, a client that left, an input round that
//! expired.
//!
//! Invariants:
//! - [`Observed::finish`] consumes the observation; one dropped unfinished (its
//!   request's future was dropped: the client left mid-phase) is finished from
//!   `Drop` as `cancelled`, on a task of the gateway;
//! - the record's facts ([`Facts`]) are noted by the route (what the request
//!   names) and by the call chain where a call ends (what its steps decided);
//!   a call dropped before dispatch is recorded with what the request named;
//! - an audited method's record is written before its response is sent (the
//!   writer's bounded queue back-pressures callers; it never drops records
//!   silently: the write runs on a gateway task, so a caller that leaves while
//!   it waits does not take its record with it); a record that cannot be
//!   written is logged, and the response still goes out (the upstream may
//!   already have acted on the call).
//!
//! Not here: the metric families (`state::metrics`), the audit writer
//! (manifold-audit), which methods are audited (the method table,
//! `pipeline/route.rs`).

use manifold_audit::{AuditRecord, ClientInfo, Outcome};
use manifold_protocol::methods as m;
use manifold_upstream::CallOutcome;
use prometheus_client::metrics::gauge::Gauge;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use crate::refusal::upstream_outcome;
use crate::state::Gateway;

/// One request from arrival to answer.
pub(crate) struct Observed {
    gw: Arc<Gateway>,
    started: Instant,
    time: SystemTime,
    request_id: String,
    method: String,
    request_bytes: usize,
    /// Whether the method writes audit records (set by the route phase).
    audited: bool,
    session: Option<String>,
    client: Option<ClientInfo>,
    principal: String,
    /// The `principal` label of `manifold_requests_by_principal_total`.
    principal_label: Option<String>,
    pub upstream: Option<Arc<str>>,
    /// `oauth`, `client_credentials` or `token_exchange` for an upstream
    /// Manifold authenticates to with OAuth.
    upstream_auth: Option<&'static str>,
    /// The `[[endpoint]]` the request came through (`None`: the default one).
    pub endpoint: Option<Arc<str>>,
    arguments: Option<Value>,
    /// What the request named and what the call chain decided
    /// ([`Observed::note`]).
    facts: Facts,
    in_flight: Option<Gauge>,
    finished: bool,
}

/// The facts of an audit record that the request names or the call chain
/// decides: the name asked, the upstream's own name, what an override pinned,
/// a human's answer, how the call came, its task, its attempts. The route
/// notes what the request names ([`Observed::audit`]); the chain's steps
/// record their decisions in the call (`call::context::Call::facts`), and
/// its step finish hands them to the observation once, whatever the exit.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// The exposed tool or prompt name, or the URI.
    pub name: Option<String>,
    /// The upstream's own name for the tool or prompt, or the URI.
    pub original: Option<String>,
    /// Arguments an override pinned into the call.
    pub injected: Option<Value>,
    /// The human's answer, for a call under `[confirm]`.
    pub confirmation: Option<manifold_audit::Confirmation>,
    /// `call_tool`, for a tool called through the search meta-tool.
    pub via: Option<&'static str>,
    /// A task's creation, or the task a `tasks/*` request acted on.
    pub task: Option<manifold_audit::TaskEvent>,
    /// Times the request was sent upstream (an upstream with retries or a
    /// breaker).
    pub attempts: Option<u32>,
    /// Served from an identical concurrent call's upstream call
    /// (`call::relay::coalesce`).
    pub coalesced: bool,
    /// Code mode: the script a `run_script` ran, or a tool call came from.
    pub script: Option<manifold_audit::ScriptEvent>,
}

impl Facts {
    /// A request naming `name` (one of Manifold's own tools).
    pub(crate) fn named(name: &str) -> Facts {
        Facts {
            name: Some(name.to_string()),
            ..Facts::default()
        }
    }

    /// A call to `original` (the upstream's own name or URI).
    pub(crate) fn original(original: String) -> Facts {
        Facts {
            original: Some(original),
            ..Facts::default()
        }
    }

    /// These facts with `later`'s over them (a fact decided later wins; one
    /// `later` does not know is kept).
    pub(crate) fn merge(&mut self, later: Facts) {
        let Facts {
            name,
            original,
            injected,
            confirmation,
            via,
            task,
            attempts,
            coalesced,
            script,
        } = later;
        self.name = name.or(self.name.take());
        self.original = original.or(self.original.take());
        self.injected = injected.or(self.injected.take());
        self.confirmation = confirmation.or(self.confirmation.take());
        self.via = via.or(self.via);
        self.task = task.or(self.task.take());
        self.attempts = attempts.or(self.attempts);
        self.coalesced |= coalesced;
        self.script = script.or(self.script.take());
    }
}

impl Observed {
    /// Starts observing request `request_id` (`request_bytes` long) for `method`.
    pub(crate) fn start(
        gw: &Arc<Gateway>,
        request_id: &str,
        request_bytes: usize,
        method: &str,
    ) -> Observed {
        Observed {
            gw: gw.clone(),
            started: Instant::now(),
            time: SystemTime::now(),
            request_id: request_id.to_string(),
            method: method.to_string(),
            request_bytes,
            audited: false,
            session: None,
            client: None,
            principal: manifold_audit::ANONYMOUS.to_string(),
            principal_label: None,
            upstream: None,
            upstream_auth: None,
            endpoint: None,
            arguments: None,
            facts: Facts::default(),
            in_flight: None,
            finished: false,
        }
    }

    /// The request was admitted: its session (by its
    /// [`session_ref`](crate::state::sessions::session_ref), which
    /// the session computed once when it opened: a SHA-256 per request cost
    /// 5 % of a relayed call), its client as it named itself, its principal
    /// as audit records name it, and the principal's metrics label
    /// (`[metrics] principal_label`).
    pub(crate) fn admitted(
        &mut self,
        session_digest: Option<&str>,
        client: Option<ClientInfo>,
        principal: String,
        label: Option<String>,
    ) {
        self.session = session_digest.filter(|d| !d.is_empty()).map(str::to_owned);
        self.client = client;
        self.principal = principal;
        self.principal_label = label;
    }

    /// The route phase found an audited method: every exit from here writes a
    /// record, naming what the request names (`params.name`, or `params.uri`,
    /// which is also the URI's original until the chain resolves it).
    pub(crate) fn audit(&mut self, params: &serde_json::Map<String, Value>) {
        self.audited = true;
        if self.gw.auditor.is_none() {
            return;
        }
        // A tasks/update's input is what it sends upstream: digested (and
        // redacted) as arguments are.
        self.arguments = params
            .get("arguments")
            .or_else(|| params.get("inputResponses"))
            .cloned();
        let uri = params.get("uri").and_then(Value::as_str);
        let name = params.get("name").and_then(Value::as_str).or(uri);
        self.facts.name = name.map(str::to_owned);
        self.facts.original = uri.map(str::to_owned);
    }

    /// Adds `facts` to the record (see [`Facts`]): what the route names
    /// (Manifold's own meta-tools) or what the chain decided (step finish).
    pub(crate) fn note(&mut self, facts: Facts) {
        self.facts.merge(facts);
    }

    /// This request is not the call's record after all: a 2026-07-28
    /// confirmation question, whose retry (carrying the human's answer) is.
    pub(crate) fn not_audited(&mut self) {
        self.audited = false;
    }

    /// The request is now waiting on `upstream`.
    pub(crate) fn dispatched(&mut self, upstream: &manifold_upstream::Upstream) {
        let g = self.gw.metrics.in_flight(upstream.name());
        g.inc();
        self.in_flight = Some(g);
        self.upstream = Some(upstream.name().clone());
        self.upstream_auth = match &upstream.config().transport {
            manifold_config::Transport::Http { auth, .. }
                if *auth != manifold_config::credentials::UpstreamAuth::Static =>
            {
                Some(auth.kind())
            }
            _ => None,
        };
    }

    /// Counts the answer and writes its audit record; returns once the record is
    /// written (or failed to be, which is logged).
    pub(crate) async fn finish(mut self, outcome: Outcome, response_bytes: usize) {
        self.finished = true;
        if let Some(g) = self.in_flight.take() {
            g.dec();
        }
        let elapsed = self.started.elapsed();
        let metrics = &self.gw.metrics;
        metrics.answered(
            &self.method,
            outcome.as_str(),
            self.request_bytes,
            self.audited.then_some(response_bytes),
        );
        if let Some(p) = &self.principal_label {
            metrics.answered_for(p, outcome.as_str());
        }
        if let Some(e) = &self.endpoint {
            metrics.answered_at(e, outcome.as_str());
        }
        if let Some(up) = &self.upstream {
            // Only tools and prompts name a series; URIs would use up the bound.
            let tool = match (&self.facts.original, self.method.as_str()) {
                (Some(t), m::TOOLS_CALL | m::PROMPTS_GET) => Some(t.as_str()),
                _ => None,
            };
            metrics.call_duration(up, tool, elapsed.as_secs_f64());
            self.gw
                .console
                .recent
                .record(up, recent_end(outcome), elapsed);
        }
        if let Some(rec) = self.record(outcome, elapsed, response_bytes) {
            if let Some(auditor) = self.gw.auditor.clone() {
                let _ = write(&self.gw, auditor, rec).await;
            }
        }
    }

    /// The audit record, for an audited method with a writer.
    fn record(
        &mut self,
        outcome: Outcome,
        elapsed: std::time::Duration,
        response_bytes: usize,
    ) -> Option<AuditRecord> {
        if !self.audited || self.gw.auditor.is_none() {
            return None;
        }
        let mut rec = AuditRecord::new(self.request_id.clone(), self.method.clone());
        rec.time = self.time;
        rec.session = self.session.take();
        rec.principal = std::mem::take(&mut self.principal);
        rec.client = self.client.take();
        let Facts {
            name,
            original,
            injected,
            confirmation,
            via,
            task,
            attempts,
            coalesced,
            script,
        } = std::mem::take(&mut self.facts);
        rec.name = name;
        rec.upstream = self.upstream.as_ref().map(|u| u.to_string());
        rec.upstream_auth = self.upstream_auth.map(str::to_string);
        rec.original = original;
        rec.injected = injected;
        rec.confirmation = confirmation;
        rec.endpoint = self.endpoint.as_ref().map(|e| e.to_string());
        rec.via = via.map(str::to_string);
        rec.task = task;
        rec.arguments = self.arguments.take();
        rec.attempts = attempts;
        rec.coalesced = coalesced;
        rec.script = script;
        rec.outcome = outcome;
        rec.latency_us = elapsed.as_micros() as u64;
        rec.request_bytes = self.request_bytes as u64;
        rec.response_bytes = response_bytes as u64;
        Some(rec)
    }
}

impl Drop for Observed {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Some(g) = self.in_flight.take() {
            g.dec();
        }
        self.gw.metrics.answered(
            &self.method,
            Outcome::Cancelled.as_str(),
            self.request_bytes,
            self.audited.then_some(0),
        );
        if let Some(p) = &self.principal_label {
            self.gw.metrics.answered_for(p, Outcome::Cancelled.as_str());
        }
        if let Some(e) = &self.endpoint {
            self.gw.metrics.answered_at(e, Outcome::Cancelled.as_str());
        }
        let elapsed = self.started.elapsed();
        let Some(rec) = self.record(Outcome::Cancelled, elapsed, 0) else {
            return;
        };
        tracing::debug!(request_id = %self.request_id, "the request ended without an answer (the client left); recorded as cancelled");
        if let (Ok(_), Some(auditor)) = (
            tokio::runtime::Handle::try_current(),
            self.gw.auditor.clone(),
        ) {
            drop(write(&self.gw, auditor, rec));
        }
    }
}

/// A request answered on its own task (`pipeline::finish`; an inner call of
/// a script): the reply — a refusal rendered by the refusal table — with the
/// request's metrics and audit record if nobody else took them (the call
/// chain's relay does once it dispatches). The record is written before the
/// reply goes out.
pub(crate) async fn answered(
    obs: Option<Observed>,
    result: Result<crate::reply::Reply, crate::refusal::Refusal>,
    id: &manifold_protocol::RequestId,
    era: crate::era::Era,
) -> crate::reply::Reply {
    let (reply, outcome) = match result {
        Ok(reply) => (reply, Outcome::Ok),
        Err(r) => (r.reply(Some(id), era), r.outcome()),
    };
    if let Some(obs) = obs {
        obs.finish(outcome, reply.len()).await;
    }
    reply
}

/// How the console's recent-call counts see an outcome.
fn recent_end(outcome: Outcome) -> crate::state::recent::Ended {
    use crate::state::recent::Ended;
    match outcome {
        Outcome::Ok => Ended::Ok,
        Outcome::ToolError => Ended::ToolError,
        _ => Ended::Failed,
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

/// Whether a result says `isError: true`. A result whose text holds neither
/// `isError` nor an escape (a key can be spelled with `\u` escapes) has no
/// such member at any depth: that is read with a byte search, not a parse
/// (most results, on every call).
fn is_tool_error(raw: &serde_json::value::RawValue) -> bool {
    use memchr::memmem::Finder;
    use std::sync::LazyLock;
    // Built once: a finder's set-up costs more than searching a small result.
    static IS_ERROR: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("isError"));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new("\\u"));
    let text = raw.get().as_bytes();
    if IS_ERROR.find(text).is_none() && ESCAPE.find(text).is_none() {
        return false;
    }
    probe(raw).and_then(|p| p.is_error) == Some(true)
}

/// The audit outcome of an upstream's answer.
pub(crate) fn outcome_of(o: &CallOutcome) -> Outcome {
    match o {
        CallOutcome::Result(raw) => match is_tool_error(raw) {
            true => Outcome::ToolError,
            false => Outcome::Ok,
        },
        CallOutcome::Error(raw) => Outcome::ProtocolError {
            code: probe(raw)
                .and_then(|p| p.code)
                .unwrap_or(manifold_protocol::ErrorCode::INTERNAL_ERROR.0),
        },
        CallOutcome::Failed(e) => upstream_outcome(e),
    }
}

/// A task's end, as Manifold first saw it: a terminal status, the upstream
/// forgetting the task, or its id's expiry.
pub(crate) struct TaskEnd<'a> {
    pub client_record_id: String,
    pub facts: &'a crate::state::tasks::TaskFacts,
    /// `Completed`, `Failed`, `Cancelled` or `Expired`.
    pub outcome: Outcome,
    /// A completed task's tool result had `isError: true`.
    pub is_error: bool,
    /// The owner's audit name.
    pub owner: String,
}

/// Records a task's end once per replica (see `state::tasks`): the end
/// counter, the in-flight gauge if this replica followed the task, and one
/// audit record — `tools/call`, named from the sealed facts, chained like
/// every record — for the request that saw it (`by`; `None`: the expiry
/// sweep). Returns once the record is written.
pub(crate) async fn task_end(gw: &Arc<Gateway>, end: TaskEnd<'_>, by: Option<&Observed>) {
    let Some(tracked) = gw.tables.mcp_tasks.ended(&end.client_record_id) else {
        return;
    };
    gw.metrics
        .task_ended(&end.facts.upstream, end.outcome.as_str(), tracked);
    let Some(auditor) = gw.auditor.clone() else {
        return;
    };
    let request_id = by.map_or_else(|| gw.request_id(), |o| o.request_id.clone());
    let mut rec = AuditRecord::new(request_id, m::TOOLS_CALL);
    rec.principal = end.owner;
    if let Some(o) = by {
        rec.session = o.session.clone();
        rec.client = o.client.clone();
        rec.latency_us = o.started.elapsed().as_micros() as u64;
    }
    rec.name = Some(end.facts.tool.clone());
    rec.upstream = Some(end.facts.upstream.clone());
    rec.original = Some(end.facts.original.clone());
    let now = manifold_foundation::time::unix_now_ms();
    rec.task = Some(manifold_audit::TaskEvent {
        id: end.client_record_id,
        stage: manifold_audit::TaskStage::Ended,
        duration_us: Some(
            now.saturating_sub(end.facts.created_ms)
                .saturating_mul(1000),
        ),
        is_error: end.is_error,
    });
    rec.outcome = end.outcome;
    let _ = write(gw, auditor, rec).await;
}

/// The record of a code-mode script paused for a 2026-07-28 client's input
/// that no retry ended before its deadline: `run_script`, `expired`, with
/// the calls it had made (each has its own record).
pub(crate) async fn script_abandoned(
    gw: &Arc<Gateway>,
    principal: String,
    client: Option<ClientInfo>,
    script: manifold_audit::ScriptEvent,
) {
    let Some(auditor) = gw.auditor.clone() else {
        return;
    };
    let mut rec = AuditRecord::new(gw.request_id(), m::TOOLS_CALL);
    rec.principal = principal;
    rec.client = client;
    rec.name = Some("run_script".into());
    rec.script = Some(script);
    rec.outcome = Outcome::Expired;
    let _ = write(gw, auditor, rec).await;
}

/// The method of an account's audit record (`user_oauth` / `user_secret`
/// upstreams): `name` is what happened — `connected`, `refreshed`, `lapsed`
/// (a refresh refused; the caller connects again), `failed` (a connect that
/// did not finish), `revoked` — never a token or key.
pub(crate) const ACCOUNT_METHOD: &str = "manifold/account";

/// Records an event of `principal`'s account at `upstream` (`kind`:
/// `user_oauth` or `user_secret`); `why` for a failure.
pub(crate) fn account_event(
    gw: &Gateway,
    upstream: &str,
    kind: &str,
    principal: &str,
    event: &str,
    failed: bool,
) {
    tracing::info!(upstream, principal, event, "upstream account");
    let Some(auditor) = gw.auditor.clone() else {
        return;
    };
    let mut rec = AuditRecord::new(gw.request_id(), ACCOUNT_METHOD);
    rec.principal = principal.to_string();
    rec.name = Some(event.to_string());
    rec.upstream = Some(upstream.to_string());
    rec.upstream_auth = Some(kind.to_string());
    rec.outcome = if failed {
        Outcome::Refused { code: 0 }
    } else {
        Outcome::Ok
    };
    // Written by the gateway's own task; nothing waits for it here.
    drop(write(gw, auditor, rec));
}

/// Writes `rec` on a task of the gateway: if the caller's future is dropped
/// while the writer's queue is full (the client left), the record is still
/// written, with its real outcome. The one place an audit record is handed to
/// the writer.
fn write(
    gw: &Gateway,
    auditor: manifold_audit::Auditor,
    rec: manifold_audit::AuditRecord,
) -> tokio::task::JoinHandle<()> {
    let span = crate::tracectx::phase(crate::tracectx::Phase::AuditWrite);
    gw.life.background.spawn(tracing::Instrument::instrument(
        async move {
            if let Err(e) = auditor.record(rec).await {
                tracing::error!(error = %e, "audit record not written");
            }
        },
        span,
    ))
}

/// Every `TASK_SWEEP_INTERVAL`, records the end of each task this replica
/// follows whose id expired with no end seen here (`expired`), until the
/// gateway stops.
pub(crate) async fn sweep_tasks(gw: Arc<Gateway>) {
    loop {
        tokio::select! {
            _ = gw.life.stop.cancelled() => return,
            _ = tokio::time::sleep(crate::state::tasks::TASK_SWEEP_INTERVAL) => {}
        }
        let now = manifold_foundation::time::unix_now();
        for swept in gw.tables.mcp_tasks.sweep(now) {
            let end = TaskEnd {
                client_record_id: swept.record_id,
                facts: &swept.facts,
                outcome: Outcome::Expired,
                is_error: false,
                owner: swept.owner,
            };
            task_end(&gw, end, None).await;
        }
    }
}

impl Observed {
    /// The principal the request was admitted as (its audit name).
    pub(crate) fn principal(&self) -> &str {
        &self.principal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result's audit outcome: `isError: true` at the top only, however
    /// its key is spelled, and never from text that merely mentions it.
    #[test]
    fn a_result_is_a_tool_error_only_when_its_top_level_says_so() {
        let cases = [
            (r#"{"content":[],"isError":true}"#, true),
            (r#"{"content":[],"isError":false}"#, false),
            (r#"{"content":[]}"#, false),
            (
                r#"{"content":[{"type":"text","text":"isError: true"}]}"#,
                false,
            ),
            (
                r#"{"structuredContent":{"isError":true},"content":[]}"#,
                false,
            ),
            (r#"{"is\u0045rror":true,"content":[]}"#, true),
            (r#"{"content":[{"type":"text","text":"\u00e9"}]}"#, false),
        ];
        for (raw, tool_error) in cases {
            let raw = serde_json::value::RawValue::from_string(raw.to_string()).unwrap();
            let outcome = outcome_of(&CallOutcome::Result(raw));
            assert_eq!(outcome == Outcome::ToolError, tool_error, "{outcome:?}");
        }
    }
}
