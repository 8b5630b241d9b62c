//! The Tasks extension of MCP 2026-07-28 (`io.modelcontextprotocol/tasks`,
//! SEP-2663) as a gateway needs it: its names, whether a request declared it,
//! what a task answer says (its id, status and how it ended), and the one
//! rewrite a gateway makes to such an answer — its top-level `taskId` — without
//! touching any other byte.
//!
//! Invariants: [`replace_top_level_string`] changes only the value of the one
//! top-level member it names and keeps every other byte of the text (members,
//! order, number spellings, escapes, whitespace); a text with that member twice,
//! or not a JSON object, is refused rather than guessed at. The probes never
//! build the members they skip (results can be large).
//!
//! Not here: sealing task ids, routing, auditing (the server).

use serde::de::{Deserializer, MapAccess, Visitor};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// The extension's identifier.
pub const EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// Poll a task.
pub const TASKS_GET: &str = "tasks/get";
/// Deliver input a task asked for.
pub const TASKS_UPDATE: &str = "tasks/update";
/// Ask a task to stop.
pub const TASKS_CANCEL: &str = "tasks/cancel";
/// 2025-11-25 only: wait for a task's result (removed by the extension).
pub const TASKS_RESULT: &str = "tasks/result";
/// 2025-11-25 only: list tasks (removed by the extension).
pub const TASKS_LIST: &str = "tasks/list";
/// The `resultType` of a `CreateTaskResult`.
pub const RESULT_TYPE_TASK: &str = "task";

/// Whether a method is one of the extension's three requests.
pub fn is_task_method(method: &str) -> bool {
    matches!(method, TASKS_GET | TASKS_UPDATE | TASKS_CANCEL)
}

/// Whether client capabilities (a 2026-07-28 request's `_meta`
/// `clientCapabilities`) declare the extension: `extensions` an object holding
/// [`EXTENSION`] as an object. The 2025-11-25 `tasks` capability alone does not.
pub fn declares_extension(capabilities: &Map<String, Value>) -> bool {
    capabilities
        .get("extensions")
        .and_then(Value::as_object)
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object)
}

/// Whether server capabilities advertise the extension (the same shape).
pub fn advertises_extension(capabilities: &Map<String, Value>) -> bool {
    declares_extension(capabilities)
}

/// A task's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "working" => Status::Working,
            "input_required" => Status::InputRequired,
            "completed" => Status::Completed,
            "failed" => Status::Failed,
            "cancelled" => Status::Cancelled,
            _ => return None,
        })
    }

    /// No way out of it.
    pub fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

#[derive(Deserialize)]
struct ResultProbe {
    #[serde(rename = "isError", default)]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
struct ErrorProbe {
    #[serde(default)]
    code: Option<i64>,
}

#[derive(Deserialize)]
struct Probe {
    #[serde(rename = "resultType", default)]
    result_type: Option<String>,
    #[serde(rename = "taskId", default)]
    task_id: Option<Value>,
    #[serde(default)]
    status: Option<String>,
    #[serde(rename = "ttlMs", default, deserialize_with = "lenient_u64")]
    ttl_ms: Option<u64>,
    #[serde(default)]
    result: Option<ResultProbe>,
    #[serde(default)]
    error: Option<ErrorProbe>,
}

/// A non-negative integer, else `None` (a float, a string, `null`): a
/// malformed `ttlMs` must not make the whole answer unreadable.
fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(Value::deserialize(d)?.as_u64())
}

/// What a task answer (a `CreateTaskResult`, a `tasks/get` result, a
/// `notifications/tasks` params) says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskFacts {
    /// `resultType` is `"task"`.
    pub is_task: bool,
    /// The top-level `taskId`, when a string.
    pub task_id: Option<String>,
    pub status: Option<Status>,
    /// `ttlMs`, when a non-negative integer (`null`: unlimited).
    pub ttl_ms: Option<u64>,
    /// A completed task's tool result had `isError: true`.
    pub is_error: bool,
    /// A failed task's JSON-RPC error code.
    pub error_code: Option<i64>,
}

/// Reads a result's task members; `None` when it is not a JSON object.
pub fn facts(raw: &str) -> Option<TaskFacts> {
    // A struct also deserializes from an array: only objects are answers here.
    if !raw.trim_start().starts_with('{') {
        return None;
    }
    let p: Probe = serde_json::from_str(raw).ok()?;
    Some(TaskFacts {
        is_task: p.result_type.as_deref() == Some(RESULT_TYPE_TASK),
        task_id: match p.task_id {
            Some(Value::String(s)) => Some(s),
            _ => None,
        },
        status: p.status.as_deref().and_then(Status::parse),
        ttl_ms: p.ttl_ms,
        is_error: p.result.and_then(|r| r.is_error).unwrap_or(false),
        error_code: p.error.and_then(|e| e.code),
    })
}

/// Cheap test before [`facts`]: whether `raw` may be a `CreateTaskResult`.
pub fn may_be_task(raw: &str) -> bool {
    raw.contains("\"task\"")
}

/// Why a member could not be replaced.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SpliceError {
    #[error("not a JSON object")]
    NotAnObject,
    #[error("the member `{0}` is missing")]
    Missing(String),
    #[error("the member `{0}` appears more than once")]
    Duplicate(String),
}

/// The top-level members of an object, each value as the slice of the input it
/// was read from.
struct TopLevel<'a>(Vec<(String, &'a RawValue)>);

impl<'de: 'a, 'a> Deserialize<'de> for TopLevel<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = TopLevel<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(k) = map.next_key::<String>()? {
                    let v: &'de RawValue = map.next_value()?;
                    out.push((k, v));
                }
                Ok(TopLevel(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// `raw` (a JSON object) with its top-level member `key` set to the string
/// `value`; every other byte of `raw` is kept.
pub fn replace_top_level_string(raw: &str, key: &str, value: &str) -> Result<String, SpliceError> {
    let top: TopLevel<'_> = serde_json::from_str(raw).map_err(|_| SpliceError::NotAnObject)?;
    let mut found = None;
    for (k, v) in &top.0 {
        if k == key {
            if found.is_some() {
                return Err(SpliceError::Duplicate(key.to_string()));
            }
            found = Some(*v);
        }
    }
    let v = found.ok_or_else(|| SpliceError::Missing(key.to_string()))?;
    // The value is a slice of `raw` (borrowed while deserializing from it).
    let start = v.get().as_ptr() as usize - raw.as_ptr() as usize;
    let end = start + v.get().len();
    let encoded = Value::String(value.to_string()).to_string();
    let mut out = String::with_capacity(raw.len() + encoded.len());
    out.push_str(&raw[..start]);
    out.push_str(&encoded);
    out.push_str(&raw[end..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_the_top_level_member_changes_and_every_other_byte_stays() {
        let raw = r#"{ "resultType":"task", "n": 1e400, "x":1.0, "big": 123456789012345678901234567890,
            "s":"a\u0041\n", "taskId" : "up-1", "result":{"taskId":"up-1","content":[{"text":"taskId up-1"}]},
            "_meta":{"taskId":"up-1"} }"#;
        let out = replace_top_level_string(raw, "taskId", "t1.client").unwrap();
        assert_eq!(
            out,
            raw.replacen(r#""taskId" : "up-1""#, r#""taskId" : "t1.client""#, 1)
        );
    }

    #[test]
    fn duplicates_missing_members_and_non_objects_are_refused() {
        assert_eq!(
            replace_top_level_string(r#"{"taskId":"a","taskId":"b"}"#, "taskId", "c"),
            Err(SpliceError::Duplicate("taskId".into()))
        );
        assert_eq!(
            replace_top_level_string(r#"{"result":{"taskId":"a"}}"#, "taskId", "c"),
            Err(SpliceError::Missing("taskId".into()))
        );
        assert_eq!(
            replace_top_level_string("[1]", "taskId", "c"),
            Err(SpliceError::NotAnObject)
        );
        // A value needing escapes is written as JSON.
        assert_eq!(
            replace_top_level_string(r#"{"taskId":1}"#, "taskId", "a\"b").unwrap(),
            r#"{"taskId":"a\"b"}"#
        );
    }

    #[test]
    fn declared_only_as_an_object_under_extensions() {
        let caps = |v: Value| v.as_object().cloned().unwrap();
        assert!(declares_extension(&caps(
            json!({"extensions": {EXTENSION: {}}})
        )));
        assert!(!declares_extension(&caps(
            json!({"extensions": {EXTENSION: true}})
        )));
        assert!(!declares_extension(&caps(
            json!({"extensions": [EXTENSION]})
        )));
        assert!(!declares_extension(&caps(
            json!({"tasks": {"requests": {}}})
        )));
        assert!(!declares_extension(&caps(json!({}))));
    }

    #[test]
    fn facts_of_task_answers() {
        let f = facts(r#"{"resultType":"task","taskId":"a","status":"working","ttlMs":60000}"#)
            .unwrap();
        assert!(f.is_task);
        assert_eq!(f.ttl_ms, Some(60000));
        assert_eq!(facts(r#"{"ttlMs":null}"#).unwrap().ttl_ms, None);
        assert_eq!(facts(r#"{"ttlMs":"x"}"#).unwrap().ttl_ms, None);
        assert_eq!(f.task_id.as_deref(), Some("a"));
        assert_eq!(f.status, Some(Status::Working));
        let f = facts(r#"{"resultType":"complete","taskId":"a","status":"completed","result":{"isError":true,"content":[]}}"#).unwrap();
        assert!(!f.is_task && f.is_error);
        assert!(f.status.unwrap().is_terminal());
        let f = facts(r#"{"taskId":"a","status":"failed","error":{"code":-32603,"message":"x"}}"#)
            .unwrap();
        assert_eq!(f.error_code, Some(-32603));
        assert_eq!(facts("[]"), None);
        assert!(!Status::InputRequired.is_terminal());
    }
}
