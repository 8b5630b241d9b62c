//! What one audited request looks like: [`AuditRecord`] (filled in by the gateway)
//! and its JSON form, the record line minus the chain fields.
//!
//! Members, in this order: `time` (RFC 3339, UTC, microseconds), `request_id`,
//! `session` (or null), `principal`, `client` (`{name, version}` or null), `method`,
//! `name` (or null), `upstream` (or null), `original` (or null), `upstream_auth`
//! (only when Manifold authenticated to the upstream with OAuth: `oauth`,
//! `client_credentials` or `token_exchange`), `arguments_sha256`
//! (hex SHA-256 of the canonical JSON of the unredacted arguments, or null when the
//! request had none), `arguments` (redacted; absent when arguments are not included),
//! `injected` (only when an operator's override pinned arguments: those it added,
//! redacted like `arguments`), `confirmation` (only for a call that needed a
//! human's confirmation: `accepted`, `declined`, `cancelled` or `unconfirmed`),
//! `outcome`, `error_code` (only for `protocol_error` and `refused`), `latency_us`,
//! `request_bytes`, `response_bytes`. The chain adds `prev` and `hash` (see `chain`).
//!
//! Invariants: the digest is always over the arguments as received, redaction only
//! changes what is written; `error_code` exists exactly when the outcome carries one
//! (the type makes any other combination unrepresentable).
//!
//! Not here: hashing the record into the chain, writing it.

use crate::canonical::digest_hex;
use crate::redact::Redactor;
use serde_json::{Map, Value};
use std::time::SystemTime;

/// The principal recorded for a caller without credentials (no `[auth]`, or
/// `allow_anonymous`).
pub const ANONYMOUS: &str = "anonymous";

/// The member an over-sized argument value is replaced by:
/// `{"$truncated": {"bytes": N, "sha256": "…"}}`.
pub const TRUNCATED: &str = "$truncated";

/// How large a record's parts may be (`[audit] max_value_bytes`,
/// `max_arguments_bytes`): each argument value (each member of an object, or
/// the whole value otherwise), each key and each text member; then the
/// arguments as a whole, keys and members counted. Larger ones are replaced,
/// keeping their size and digest, so one request cannot flush the retained
/// history with a huge record — not with one huge value, one huge key, nor
/// many small members — and every record stays far under the reader's line
/// limit ([`crate::reader::MAX_LINE_BYTES`]).
#[derive(Debug, Clone, Copy)]
pub struct SizeCap {
    pub max_value_bytes: usize,
    pub max_arguments_bytes: usize,
}

impl Default for SizeCap {
    fn default() -> Self {
        SizeCap {
            max_value_bytes: manifold_config::audit::DEFAULT_MAX_VALUE_BYTES,
            max_arguments_bytes: manifold_config::audit::DEFAULT_MAX_ARGUMENTS_BYTES,
        }
    }
}

/// The prefix of a key too long to write: `$truncated-key:<sha256 of it>`.
pub const TRUNCATED_KEY: &str = "$truncated-key:";

impl SizeCap {
    /// Replaces each over-sized member of `args` (or `args` itself when it is not
    /// an object) with its [`TRUNCATED`] marker, each over-long key with
    /// [`TRUNCATED_KEY`] and its digest, then the whole object with its marker
    /// (`bytes`, `members`, `sha256`) when it is still over
    /// `max_arguments_bytes`.
    pub fn cap_arguments(&self, args: &mut Value) {
        match args {
            Value::Object(map) => {
                if map.keys().any(|k| k.len() > self.max_value_bytes) {
                    *map = std::mem::take(map)
                        .into_iter()
                        .map(|(k, v)| {
                            if k.len() > self.max_value_bytes {
                                let digest = crate::canonical::digest_hex(&Value::String(k));
                                (format!("{TRUNCATED_KEY}{digest}"), v)
                            } else {
                                (k, v)
                            }
                        })
                        .collect();
                }
                map.values_mut().for_each(|v| self.cap_value(v));
                let bytes = manifold_foundation::json::encoded_len(args);
                if bytes > self.max_arguments_bytes {
                    let members = args.as_object().map_or(0, Map::len);
                    *args = serde_json::json!({TRUNCATED: {
                        "bytes": bytes,
                        "members": members,
                        "sha256": crate::canonical::digest_hex(args),
                    }});
                }
            }
            other => self.cap_value(other),
        }
    }

    fn cap_value(&self, v: &mut Value) {
        let bytes = manifold_foundation::json::encoded_len(v);
        if bytes > self.max_value_bytes {
            *v = serde_json::json!({TRUNCATED: {
                "bytes": bytes,
                "sha256": crate::canonical::digest_hex(v),
            }});
        }
    }

    /// `s`, or its first characters and a note of its size: measured as the
    /// record writes it (a control character takes six bytes escaped), so a
    /// text of control characters cannot make a record six times its cap.
    pub fn cap_text(&self, s: String) -> String {
        // The bytes serde_json writes for `c` inside a string.
        let escaped = |c: char| match c {
            '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        };
        let total: usize = s.chars().map(escaped).sum();
        if total <= self.max_value_bytes {
            return s;
        }
        let budget = self.max_value_bytes.saturating_sub(48);
        let (mut used, mut end) = (0, 0);
        for (i, c) in s.char_indices() {
            let n = escaped(c);
            if used + n > budget {
                break;
            }
            used += n;
            end = i + c.len_utf8();
        }
        format!("{}… [truncated from {} bytes]", &s[..end], s.len())
    }
}

/// The client as it named itself in `initialize` (`clientInfo`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientInfo {
    pub name: String,
    pub version: String,
}

/// What the human said when a call needed confirmation (`[confirm]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmation {
    /// Accepted: the call was forwarded.
    Accepted,
    /// Declined: the call was not forwarded.
    Declined,
    /// Dismissed without a choice: the call was not forwarded.
    Cancelled,
    /// The client could not be asked and `without_elicitation = "allow"` let the
    /// call through.
    Unconfirmed,
}

impl Confirmation {
    pub fn as_str(self) -> &'static str {
        match self {
            Confirmation::Accepted => "accepted",
            Confirmation::Declined => "declined",
            Confirmation::Cancelled => "cancelled",
            Confirmation::Unconfirmed => "unconfirmed",
        }
    }
}

/// The `task` member: which task (never its id, a bearer handle: the first
/// 16 hex digits of the SHA-256 of the id the client holds) and what happened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskEvent {
    pub id: String,
    pub stage: TaskStage,
    /// For `ended`: from the creating call to the end Manifold saw.
    pub duration_us: Option<u64>,
    /// For a completed task: its tool result had `isError: true`.
    pub is_error: bool,
}

/// The `script` member: a `run_script` call of code mode, or a tool call a
/// script made (`via = "run_script"`): the script by its SHA-256, and, on the
/// script's own record, what it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScriptEvent {
    /// The SHA-256 of the script's text, hex.
    pub sha256: String,
    /// On the script's own record: the tool calls it made.
    pub calls: Option<u32>,
    /// On the script's own record: its evaluation steps (none when its worker
    /// was ended before it reported them).
    pub steps: Option<u64>,
}

impl ScriptEvent {
    fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("sha256".into(), Value::String(self.sha256.clone()));
        if let Some(c) = self.calls {
            m.insert("calls".into(), Value::from(c));
        }
        if let Some(s) = self.steps {
            m.insert("steps".into(), Value::from(s));
        }
        Value::Object(m)
    }
}

/// Where in a task's life a record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskStage {
    /// The `tools/call` the upstream answered with the task.
    Created,
    /// A `tasks/update` or `tasks/cancel` relayed to the task's upstream.
    Relayed,
    /// The task's end, as Manifold first saw it.
    Ended,
}

impl TaskStage {
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStage::Created => "created",
            TaskStage::Relayed => "relayed",
            TaskStage::Ended => "ended",
        }
    }
}

impl TaskEvent {
    fn to_value(&self) -> Value {
        let mut o = Map::new();
        o.insert("id".into(), Value::String(self.id.clone()));
        o.insert("event".into(), Value::String(self.stage.as_str().into()));
        if let Some(d) = self.duration_us {
            o.insert("duration_us".into(), Value::from(d));
        }
        if self.is_error {
            o.insert("is_error".into(), Value::Bool(true));
        }
        Value::Object(o)
    }
}

/// How an audited request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result reached the client.
    Ok,
    /// A `tools/call` result with `isError: true`.
    ToolError,
    /// A JSON-RPC error reached the client; the code is recorded.
    ProtocolError { code: i64 },
    /// The upstream did not answer in time.
    Timeout,
    /// The upstream that owns the request was down or busy.
    UpstreamUnavailable,
    /// The client (or a shutdown) cancelled the request.
    Cancelled,
    /// Manifold refused the request itself (authz, rate limit, validation, audit
    /// unavailable); the code is recorded.
    Refused { code: i64 },
    /// Manifold refused a call to an item held by `[integrity]` (a changed or
    /// unapproved tool, prompt, resource template or resource, or a name
    /// published twice): answered exactly as an
    /// unknown item, whose code is recorded.
    Quarantined { code: i64 },
    /// The upstream answered a `tools/call` with a task (the Tasks extension):
    /// the call's work goes on upstream, and its end is a record of its own.
    Task,
    /// A task's end: it completed (its tool result may be an error: see the
    /// record's `task.is_error`).
    Completed,
    /// A task's end: it failed with a JSON-RPC error; the code is recorded.
    Failed { code: i64 },
    /// A task's end: Manifold saw no end before the task's id expired, or the
    /// upstream no longer knew the task (its TTL passed, or it restarted).
    /// Not necessarily a failure of the work.
    Expired,
}

impl Outcome {
    /// The `outcome` string.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::ToolError => "tool_error",
            Outcome::ProtocolError { .. } => "protocol_error",
            Outcome::Timeout => "timeout",
            Outcome::UpstreamUnavailable => "upstream_unavailable",
            Outcome::Cancelled => "cancelled",
            Outcome::Refused { .. } => "refused",
            Outcome::Quarantined { .. } => "quarantined",
            Outcome::Task => "task",
            Outcome::Completed => "completed",
            Outcome::Failed { .. } => "failed",
            Outcome::Expired => "expired",
        }
    }

    /// The `error_code` member, when the outcome has one.
    pub fn error_code(self) -> Option<i64> {
        match self {
            Outcome::ProtocolError { code }
            | Outcome::Refused { code }
            | Outcome::Quarantined { code }
            | Outcome::Failed { code } => Some(code),
            _ => None,
        }
    }
}

impl std::fmt::Display for Outcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One audited request, as the gateway knows it when the response is ready.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// When the request arrived.
    pub time: SystemTime,
    pub request_id: String,
    /// The downstream session id (session eras), if any.
    pub session: Option<String>,
    pub principal: String,
    pub client: Option<ClientInfo>,
    /// The JSON-RPC method (`tools/call`, `resources/read`, …).
    pub method: String,
    /// The exposed tool or prompt name, or the resource URI.
    pub name: Option<String>,
    /// The upstream that served it.
    pub upstream: Option<String>,
    /// The upstream's own name for the tool or prompt.
    pub original: Option<String>,
    /// How Manifold authenticated to the upstream, when not with static
    /// headers: `oauth`, `client_credentials` or `token_exchange` (on behalf
    /// of `principal`); never a token.
    pub upstream_auth: Option<String>,
    /// The arguments as received, unredacted: the auditor digests them, then redacts.
    pub arguments: Option<Value>,
    /// Arguments an override pinned (`[upstreams.x.overrides.<tool>] pin`),
    /// added to what the client sent.
    pub injected: Option<Value>,
    /// The human's answer, for a call under `[confirm]`.
    pub confirmation: Option<Confirmation>,
    /// The `[[endpoint]]` path the request came through (`None`: the default
    /// endpoint).
    pub endpoint: Option<String>,
    /// How the tool was called when not directly: `call_tool` (the search
    /// endpoints' meta-tool).
    pub via: Option<String>,
    /// A task's creation or end (the Tasks extension).
    pub task: Option<TaskEvent>,
    /// Code mode: the script a `run_script` call ran, or the script a tool
    /// call came from.
    pub script: Option<ScriptEvent>,
    pub outcome: Outcome,
    /// Times the request was sent upstream, recorded for an upstream with
    /// retries or a circuit breaker (`0`: its open breaker refused it; more
    /// than `1`: it was retried).
    pub attempts: Option<u32>,
    /// The call was served from an identical concurrent call's upstream call
    /// (`coalesce = true`): this caller did not reach the upstream itself.
    pub coalesced: bool,
    pub latency_us: u64,
    pub request_bytes: u64,
    pub response_bytes: u64,
}

impl AuditRecord {
    /// A record stamped now, principal [`ANONYMOUS`], outcome `ok`, everything else
    /// empty or zero.
    pub fn new(request_id: impl Into<String>, method: impl Into<String>) -> Self {
        AuditRecord {
            time: SystemTime::now(),
            request_id: request_id.into(),
            session: None,
            principal: ANONYMOUS.to_string(),
            client: None,
            method: method.into(),
            name: None,
            upstream: None,
            original: None,
            upstream_auth: None,
            arguments: None,
            injected: None,
            confirmation: None,
            endpoint: None,
            via: None,
            task: None,
            script: None,
            outcome: Outcome::Ok,
            attempts: None,
            coalesced: false,
            latency_us: 0,
            request_bytes: 0,
            response_bytes: 0,
        }
    }

    /// The record's members in order, without `prev` and `hash`. The digest is taken
    /// before `redactor` runs; `arguments` is left out when `include_arguments` is
    /// false.
    pub fn to_entry(
        self,
        redactor: &Redactor,
        include_arguments: bool,
        cap: &SizeCap,
    ) -> Map<String, Value> {
        let opt = |s: Option<String>| {
            s.map(|s| cap.cap_text(s))
                .map_or(Value::Null, Value::String)
        };
        let mut m = Map::new();
        m.insert(
            "time".into(),
            Value::String(manifold_foundation::time::rfc3339_micros(self.time)),
        );
        m.insert("request_id".into(), Value::String(self.request_id));
        m.insert("session".into(), opt(self.session));
        m.insert(
            "principal".into(),
            Value::String(cap.cap_text(self.principal)),
        );
        let client = self.client.map_or(Value::Null, |c| {
            let mut o = Map::new();
            o.insert("name".into(), Value::String(cap.cap_text(c.name)));
            o.insert("version".into(), Value::String(cap.cap_text(c.version)));
            Value::Object(o)
        });
        m.insert("client".into(), client);
        m.insert("method".into(), Value::String(cap.cap_text(self.method)));
        m.insert("name".into(), opt(self.name));
        m.insert("upstream".into(), opt(self.upstream));
        m.insert("original".into(), opt(self.original));
        if let Some(a) = self.upstream_auth {
            m.insert("upstream_auth".into(), Value::String(a));
        }
        let digest = self.arguments.as_ref().map(digest_hex);
        m.insert("arguments_sha256".into(), opt(digest));
        if include_arguments {
            let mut args = self.arguments.unwrap_or(Value::Null);
            redactor.redact(&mut args);
            cap.cap_arguments(&mut args);
            m.insert("arguments".into(), args);
        }
        if let Some(mut injected) = self.injected {
            redactor.redact(&mut injected);
            cap.cap_arguments(&mut injected);
            m.insert("injected".into(), injected);
        }
        if let Some(c) = self.confirmation {
            m.insert("confirmation".into(), Value::String(c.as_str().into()));
        }
        if let Some(e) = self.endpoint {
            m.insert("endpoint".into(), Value::String(cap.cap_text(e)));
        }
        if let Some(v) = self.via {
            m.insert("via".into(), Value::String(v));
        }
        if let Some(t) = self.task {
            m.insert("task".into(), t.to_value());
        }
        if let Some(s) = self.script {
            m.insert("script".into(), s.to_value());
        }
        m.insert(
            "outcome".into(),
            Value::String(self.outcome.as_str().into()),
        );
        if let Some(code) = self.outcome.error_code() {
            m.insert("error_code".into(), Value::from(code));
        }
        if let Some(n) = self.attempts {
            m.insert("attempts".into(), Value::from(n));
        }
        if self.coalesced {
            m.insert("coalesced".into(), Value::Bool(true));
        }
        m.insert("latency_us".into(), Value::from(self.latency_us));
        m.insert("request_bytes".into(), Value::from(self.request_bytes));
        m.insert("response_bytes".into(), Value::from(self.response_bytes));
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::{Duration, UNIX_EPOCH};

    fn full_record() -> AuditRecord {
        AuditRecord {
            time: UNIX_EPOCH + Duration::new(1_750_237_503, 123_456_789),
            request_id: "r-1".into(),
            session: Some("s-9".into()),
            principal: ANONYMOUS.into(),
            client: Some(ClientInfo {
                name: "claude-code".into(),
                version: "1.2.3".into(),
            }),
            method: "tools/call".into(),
            name: Some("github__create_issue".into()),
            upstream: Some("github".into()),
            original: Some("create_issue".into()),
            upstream_auth: None,
            arguments: Some(json!({"title": "t", "Token": "secret"})),
            injected: None,
            confirmation: None,
            endpoint: None,
            via: None,
            task: None,
            script: None,
            outcome: Outcome::ProtocolError { code: -32602 },
            attempts: None,
            coalesced: false,
            latency_us: 1500,
            request_bytes: 200,
            response_bytes: 90,
        }
    }

    #[test]
    fn entry_members_in_order() {
        let m = full_record().to_entry(&Redactor::new(&["token"]), true, &SizeCap::default());
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "time",
                "request_id",
                "session",
                "principal",
                "client",
                "method",
                "name",
                "upstream",
                "original",
                "arguments_sha256",
                "arguments",
                "outcome",
                "error_code",
                "latency_us",
                "request_bytes",
                "response_bytes"
            ]
        );
        let digest = digest_hex(&json!({"Token": "secret", "title": "t"}));
        let want = format!(
            "{}{}{}{}{}{digest}{}{}",
            r#"{"time":"2025-06-18T09:05:03.123456Z","request_id":"r-1","session":"s-9","#,
            r#""principal":"anonymous","client":{"name":"claude-code","version":"1.2.3"},"#,
            r#""method":"tools/call","name":"github__create_issue","upstream":"github","#,
            r#""original":"create_issue","#,
            r#""arguments_sha256":""#,
            r#"","arguments":{"title":"t","Token":"[REDACTED]"},"outcome":"protocol_error","#,
            r#""error_code":-32602,"latency_us":1500,"request_bytes":200,"response_bytes":90}"#
        );
        assert_eq!(Value::Object(m).to_string(), want);
    }

    #[test]
    fn injected_arguments_and_confirmation_come_after_the_arguments() {
        let mut rec = full_record();
        rec.injected = Some(json!({"owner": "acme", "token": "t"}));
        rec.confirmation = Some(Confirmation::Declined);
        let m = rec.to_entry(&Redactor::new(&["token"]), true, &SizeCap::default());
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let at = keys.iter().position(|k| *k == "arguments").unwrap();
        assert_eq!(
            keys[at + 1..at + 4],
            ["injected", "confirmation", "outcome"]
        );
        assert_eq!(
            m["injected"],
            json!({"owner": "acme", "token": "[REDACTED]"})
        );
        assert_eq!(m["confirmation"], "declined");
    }

    #[test]
    fn a_task_member_comes_after_the_confirmation_and_ends_carry_their_code() {
        let mut rec = full_record();
        rec.confirmation = Some(Confirmation::Accepted);
        rec.task = Some(TaskEvent {
            id: "0123456789abcdef".into(),
            stage: TaskStage::Ended,
            duration_us: Some(42),
            is_error: true,
        });
        rec.outcome = Outcome::Completed;
        let m = rec.to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let at = keys.iter().position(|k| *k == "confirmation").unwrap();
        assert_eq!(keys[at + 1..at + 4], ["task", "outcome", "latency_us"]);
        assert_eq!(
            m["task"],
            json!({"id": "0123456789abcdef", "event": "ended", "duration_us": 42, "is_error": true})
        );
        assert_eq!(m["outcome"], "completed");
        let mut created = full_record();
        created.task = Some(TaskEvent {
            id: "a".into(),
            stage: TaskStage::Created,
            duration_us: None,
            is_error: false,
        });
        created.outcome = Outcome::Task;
        let m = created.to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        assert_eq!(m["task"], json!({"id": "a", "event": "created"}));
        assert_eq!(m["outcome"], "task");
        assert!(!m.contains_key("error_code"));
        for (o, s, code) in [
            (Outcome::Failed { code: -32603 }, "failed", Some(-32603)),
            (Outcome::Expired, "expired", None),
            (Outcome::Completed, "completed", None),
        ] {
            assert_eq!((o.as_str(), o.error_code()), (s, code));
        }
    }

    #[test]
    fn attempts_follow_the_outcome_only_when_counted() {
        let m = full_record().to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        assert!(!m.contains_key("attempts"));
        let mut rec = full_record();
        rec.attempts = Some(3);
        let m = rec.to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let at = keys.iter().position(|k| *k == "error_code").unwrap();
        assert_eq!(keys[at + 1..at + 3], ["attempts", "latency_us"]);
        assert_eq!(m["attempts"], 3);
    }

    #[test]
    fn a_script_member_names_the_script_by_digest_after_the_task() {
        let mut rec = full_record();
        rec.script = Some(ScriptEvent {
            sha256: "ab".repeat(32),
            calls: Some(3),
            steps: Some(120),
        });
        let m = rec.to_entry(&Redactor::default(), false, &SizeCap::default());
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let at = keys.iter().position(|k| *k == "script").unwrap();
        assert_eq!(keys[at + 1], "outcome");
        assert_eq!(
            m["script"],
            json!({"sha256": "ab".repeat(32), "calls": 3, "steps": 120})
        );
        let inner = AuditRecord {
            script: Some(ScriptEvent {
                sha256: "cd".into(),
                calls: None,
                steps: None,
            }),
            ..full_record()
        };
        let m = inner.to_entry(&Redactor::default(), false, &SizeCap::default());
        assert_eq!(m["script"], json!({"sha256": "cd"}));
        assert!(!full_record()
            .to_entry(&Redactor::default(), false, &SizeCap::default())
            .contains_key("script"));
    }

    #[test]
    fn coalesced_is_written_only_for_a_served_follower() {
        let m = full_record().to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        assert!(!m.contains_key("coalesced"));
        let mut rec = full_record();
        rec.attempts = Some(1);
        rec.coalesced = true;
        let m = rec.to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let at = keys.iter().position(|k| *k == "attempts").unwrap();
        assert_eq!(keys[at + 1..at + 3], ["coalesced", "latency_us"]);
        assert_eq!(m["coalesced"], true);
    }

    #[test]
    fn the_upstream_credential_mode_follows_original_only_when_not_static() {
        let mut rec = full_record();
        rec.upstream_auth = Some("oauth".into());
        let m = rec.to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        let keys: Vec<&str> = m.keys().map(String::as_str).collect();
        let at = keys.iter().position(|k| *k == "original").unwrap();
        assert_eq!(keys[at + 1..at + 3], ["upstream_auth", "arguments_sha256"]);
        assert_eq!(m["upstream_auth"], "oauth");
        let plain =
            full_record().to_entry(&Redactor::new(&[] as &[&str]), false, &SizeCap::default());
        assert!(!plain.contains_key("upstream_auth"));
    }

    #[test]
    fn digest_is_over_unredacted_arguments() {
        let args = json!({"user": "ann", "password": "hunter2", "nested": [{"token": 1}]});
        let mut rec = AuditRecord::new("r", "tools/call");
        rec.arguments = Some(args.clone());
        let m = rec.to_entry(
            &Redactor::new(&["password", "token"]),
            true,
            &SizeCap::default(),
        );
        assert_eq!(m["arguments_sha256"], json!(digest_hex(&args)));
        assert_eq!(
            m["arguments"],
            json!({"user": "ann", "password": "[REDACTED]", "nested": [{"token": "[REDACTED]"}]})
        );
        let redacted_digest = digest_hex(&m["arguments"]);
        assert_ne!(m["arguments_sha256"], json!(redacted_digest));
    }

    #[test]
    fn arguments_omitted_when_not_included() {
        let mut rec = AuditRecord::new("r", "tools/call");
        rec.arguments = Some(json!({"a": 1}));
        let m = rec.to_entry(&Redactor::default(), false, &SizeCap::default());
        assert!(!m.contains_key("arguments"));
        assert_eq!(m["arguments_sha256"], json!(digest_hex(&json!({"a": 1}))));
    }

    #[test]
    fn no_arguments_gives_nulls() {
        let m = AuditRecord::new("r", "tools/list").to_entry(
            &Redactor::default(),
            true,
            &SizeCap::default(),
        );
        assert_eq!(m["arguments_sha256"], Value::Null);
        assert_eq!(m["arguments"], Value::Null);
        assert_eq!(m["session"], Value::Null);
        assert_eq!(m["client"], Value::Null);
        assert_eq!(m["principal"], json!("anonymous"));
    }

    #[test]
    fn error_code_only_for_protocol_error_and_refused() {
        let cases = [
            (Outcome::Ok, "ok", None),
            (Outcome::ToolError, "tool_error", None),
            (
                Outcome::ProtocolError { code: -32601 },
                "protocol_error",
                Some(-32601),
            ),
            (Outcome::Timeout, "timeout", None),
            (Outcome::UpstreamUnavailable, "upstream_unavailable", None),
            (Outcome::Cancelled, "cancelled", None),
            (Outcome::Refused { code: -32603 }, "refused", Some(-32603)),
            (
                Outcome::Quarantined { code: -32602 },
                "quarantined",
                Some(-32602),
            ),
        ];
        for (outcome, name, code) in cases {
            let mut rec = AuditRecord::new("r", "tools/call");
            rec.outcome = outcome;
            let m = rec.to_entry(&Redactor::default(), true, &SizeCap::default());
            assert_eq!(m["outcome"], json!(name));
            assert_eq!(m.get("error_code").and_then(Value::as_i64), code, "{name}");
        }
    }

    #[test]
    fn over_sized_values_become_their_size_and_digest() {
        let cap = SizeCap {
            max_value_bytes: 64,
            max_arguments_bytes: 4096,
        };
        let big = "x".repeat(1000);
        let mut rec = AuditRecord::new("r", "tools/call");
        rec.name = Some("n".repeat(500));
        rec.arguments = Some(json!({"small": "ok", "big": big, "list": [big]}));
        let digest = crate::canonical::digest_hex(&json!(big));
        let m = rec.to_entry(&Redactor::default(), true, &cap);
        assert_eq!(m["arguments"]["small"], "ok");
        assert_eq!(m["arguments"]["big"][TRUNCATED]["bytes"], 1002);
        assert_eq!(m["arguments"]["big"][TRUNCATED]["sha256"], digest);
        assert!(m["arguments"]["list"][TRUNCATED].is_object());
        let name = m["name"].as_str().unwrap();
        assert!(
            name.len() < 100 && name.ends_with("[truncated from 500 bytes]"),
            "{name}"
        );
        // The digest of the whole arguments is still over what was received.
        assert_ne!(m["arguments_sha256"], Value::Null);
    }

    /// Security review 3, finding 5: keys and the number of members count.
    /// A text of control characters is capped as it is written (escaped),
    /// not by its raw length.
    #[test]
    fn a_text_is_capped_as_it_is_written() {
        let cap = SizeCap::default();
        let raw: String = "\u{1}".repeat(cap.max_value_bytes);
        let capped = cap.cap_text(raw);
        let written = serde_json::to_string(&capped).unwrap();
        assert!(
            written.len() <= cap.max_value_bytes + 64,
            "{}",
            written.len()
        );
        let plain = "a".repeat(cap.max_value_bytes);
        assert_eq!(cap.cap_text(plain.clone()), plain);
    }

    /// One request with 170,000 tiny members, or one with a 3.9 MB key,
    /// writes a small record; the digest still covers what was received.
    #[test]
    fn many_members_or_a_huge_key_cannot_make_a_record_large() {
        let cap = SizeCap::default();
        let many: Map<String, Value> = (0..170_000).map(|i| (format!("k{i}"), json!(1))).collect();
        let huge_key: Map<String, Value> =
            [("k".repeat(3_900_000), json!(1))].into_iter().collect();
        let mut key_and_text = huge_key.clone();
        key_and_text.insert("text".into(), json!("HIDDEN-CALL"));
        for (what, args) in [
            ("members", Value::Object(many)),
            ("key", Value::Object(huge_key)),
            ("key beside a value", Value::Object(key_and_text)),
        ] {
            let mut rec = AuditRecord::new("r", "m".repeat(100_000));
            rec.principal = "p".repeat(100_000);
            rec.injected = Some(args.clone());
            rec.arguments = Some(args.clone());
            let m = rec.to_entry(&Redactor::default(), true, &cap);
            let line = serde_json::to_string(&m).unwrap();
            assert!(
                line.len() < 2 * cap.max_arguments_bytes + 4 * cap.max_value_bytes + 1024,
                "{what}: {} bytes",
                line.len()
            );
            assert!(line.len() < crate::reader::MAX_LINE_BYTES, "{what}");
            assert_eq!(m["arguments_sha256"], json!(digest_hex(&args)), "{what}");
        }
        // A long key alone (under the whole-object cap) is replaced by its digest.
        let small = SizeCap {
            max_value_bytes: 64,
            max_arguments_bytes: 64 * 1024,
        };
        let mut args = json!({"x".repeat(100): 1, "ok": 2});
        small.cap_arguments(&mut args);
        let keys: Vec<&String> = args.as_object().unwrap().keys().collect();
        assert!(
            keys[0].starts_with(TRUNCATED_KEY) && keys[1] == "ok",
            "{keys:?}"
        );
        // Past the whole cap: size, members and digest.
        let mut args = Value::Object((0..10_000).map(|i| (format!("k{i}"), json!(i))).collect());
        let digest = digest_hex(&args);
        small.cap_arguments(&mut args);
        assert_eq!(args[TRUNCATED]["members"], 10_000);
        assert_eq!(args[TRUNCATED]["sha256"], digest);
    }
}
