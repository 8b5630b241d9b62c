//! What travels on the bus: an [`Envelope`] naming the replica that sent it,
//! when, its number in that replica's sequence, and one [`Message`], as JSON.
//!
//! Invariants: a session is named by its digest (what the audit log calls it),
//! never by its id, which is a bearer credential; messages addressed to one
//! replica name it (`to`), the others are for whoever holds what they name;
//! `from`, `ts` and `seq` are covered by the envelope's MAC (`auth`).
//!
//! Not here: signing (`auth`), sending and receiving (`bus`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One message on the bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Envelope {
    /// The replica that sent it (a random id per process).
    pub from: String,
    /// When it was sent, in milliseconds since the epoch.
    pub ts: u64,
    /// Its number among the sender's messages (from 1): each is taken once.
    pub seq: u64,
    #[serde(flatten)]
    pub message: Message,
}

/// What a replica tells the others.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Message {
    /// A session-era client answered a server→client request (sampling,
    /// elicitation, roots, a `[confirm]` question) on a replica that did not
    /// ask it: for the replica whose pending request `id` is.
    Answer {
        session: String,
        id: String,
        /// `{"result": …}` or `{"error": …}`, as the client sent it.
        outcome: Map<String, Value>,
    },
    /// `notifications/cancelled` for a call in flight elsewhere.
    Cancel { session: String, request: Value },
    /// A message for a session's GET stream (a resource update), sent by the
    /// replica that holds the subscription but not the stream.
    Push { session: String, message: String },
    /// An upstream said `list_changed`: every replica refetches that
    /// upstream's lists over its own connection.
    ListChanged { upstream: String, method: String },
    /// A 2026-07-28 retry resuming a call held elsewhere: for the replica that
    /// holds `state`. Its answer comes back as [`Message::Resumed`] with `corr`.
    Resume {
        corr: String,
        state: String,
        digest: String,
        /// The retry's JSON-RPC id.
        id: Value,
        responses: Map<String, Value>,
    },
    /// The holder's answer to a [`Message::Resume`], for replica `to`.
    Resumed {
        to: String,
        corr: String,
        event: ResumeEvent,
    },
}

/// One step of a held call's answer, relayed back to the replica the retry
/// reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum ResumeEvent {
    /// The holder took the call: its answer follows.
    Taken,
    /// The whole answer, one JSON-RPC message with its HTTP status.
    Reply {
        status: u16,
        bytes: String,
        refused: bool,
    },
    /// One message of a streamed answer.
    Streamed { bytes: String },
    /// The streamed answer ended.
    End,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_read_back_as_written() {
        let all = [
            Message::Answer {
                session: "ab".into(),
                id: "mf-x-1".into(),
                outcome: json!({"result": {"x": 1}})
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            },
            Message::Cancel {
                session: "ab".into(),
                request: json!(7),
            },
            Message::Push {
                session: "ab".into(),
                message: "{}".into(),
            },
            Message::ListChanged {
                upstream: "u".into(),
                method: "notifications/tools/list_changed".into(),
            },
            Message::Resume {
                corr: "c".into(),
                state: "s".into(),
                digest: "d".into(),
                id: json!("r1"),
                responses: Map::new(),
            },
            Message::Resumed {
                to: "r".into(),
                corr: "c".into(),
                event: ResumeEvent::Streamed { bytes: "{}".into() },
            },
        ];
        for message in all {
            let e = Envelope {
                from: "me".into(),
                ts: 1_800_000_000_000,
                seq: 7,
                message,
            };
            let text = serde_json::to_string(&e).expect("serializes");
            let back: Envelope = serde_json::from_str(&text).expect("parses");
            assert_eq!(back, e, "{text}");
        }
    }

    #[test]
    fn an_unknown_kind_is_an_error_not_a_panic() {
        let r = serde_json::from_str::<Envelope>(
            r#"{"from":"x","ts":1,"seq":1,"kind":"launch_missiles"}"#,
        );
        assert!(r.is_err());
    }
}
