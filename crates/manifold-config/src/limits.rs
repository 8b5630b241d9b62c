//! `[limits]`: every bound Manifold enforces, in one place — bodies,
//! messages, queues, sessions, calls, held calls, connections and the
//! deadlines of a connection.
//!
//! A reload cannot change the limits the gateway's tables were sized with, nor
//! those an upstream connection takes when it starts ([`FIXED_AT_START`]:
//! kept upstreams keep theirs; those a reload starts or restarts take the new
//! values).
//!
//! Invariants: every count is greater than 0; every duration parses.
//!
//! Not here: `[[rate_limit]]` (`rate_limit`).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Default `[limits] max_body_bytes`: the largest POST body accepted (413 above).
pub const DEFAULT_MAX_BODY_BYTES: usize = 4 * 1024 * 1024;
/// Default `[limits] max_message_bytes`: the largest message read from an upstream
/// (one stdio line, one SSE event, one JSON reply).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Default `[limits] max_pending_per_upstream`: requests in flight to one upstream;
/// more are refused with an "upstream busy" error instead of queueing without bound.
pub const DEFAULT_MAX_PENDING: usize = 1024;
/// Default `[limits] max_sessions`: downstream sessions; `initialize` beyond is refused.
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;
/// Default `[limits] session_idle_timeout`: a session unused this long is ended.
pub const DEFAULT_SESSION_IDLE: &str = "1h";
/// Default `[limits] connect_timeout`: how long startup waits for an upstream's
/// handshake before serving without it (it keeps trying in the background).
pub const DEFAULT_CONNECT_TIMEOUT: &str = "10s";
/// Default `[limits] stream_queue`: messages buffered per downstream SSE stream.
pub const DEFAULT_STREAM_QUEUE: usize = 256;
/// Default `[limits] held_call_ttl`: how long a call that asked a 2026-07-28 client
/// for input (an `InputRequiredResult`) waits for the client's retry.
pub const DEFAULT_HELD_CALL_TTL: &str = "120s";
/// Default `[limits] max_held_calls_per_principal`: of those, how many one
/// principal may have at once (held calls and open `[confirm]` questions).
pub const DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL: usize = 64;
/// Default `[limits] max_held_calls`: calls waiting for a 2026-07-28 client's input
/// at once; beyond, such calls are refused (503) rather than held without bound.
pub const DEFAULT_MAX_HELD_CALLS: usize = 1024;
/// Default `[limits] max_client_info_bytes`: the largest `clientInfo` and `capabilities` (each, as JSON) a session may keep; a larger `initialize` is refused (-32602).
pub const DEFAULT_MAX_CLIENT_INFO_BYTES: usize = 4096;
/// Default `[limits] max_sessions_per_peer`: sessions one client address may hold; beyond, `initialize` is refused (503).
pub const DEFAULT_MAX_SESSIONS_PER_PEER: usize = 1000;
/// Default `[limits] max_subscriptions_per_session`: resource subscriptions one session may hold; beyond, `resources/subscribe` is refused.
pub const DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION: usize = 256;
/// Default `[limits] max_listens`: 2026-07-28 `subscriptions/listen` streams open at once; beyond, a listen is refused (503).
pub const DEFAULT_MAX_LISTENS: usize = 1024;
/// Default `[limits] max_list_items`: items one upstream may publish in one list
/// (tools, prompts, resources, templates); a longer list fails its fetch.
pub const DEFAULT_MAX_LIST_ITEMS: usize = 10_000;
/// Default `[limits] max_list_bytes`: the JSON text one upstream's list (all
/// its pages together) may hold; a larger list fails its fetch, so a hostile
/// upstream cannot fill the gateway's memory with a few huge items (10,000
/// tools of 1.6 KiB each fit).
pub const DEFAULT_MAX_LIST_BYTES: usize = 16 * 1024 * 1024;
/// Default `[limits] max_item_bytes`: the largest single tool, prompt,
/// resource or template definition an upstream may list; a larger one fails
/// the list's fetch, naming the item.
pub const DEFAULT_MAX_ITEM_BYTES: usize = 1024 * 1024;
/// Default `[limits] max_calls_per_session`: calls one session may have in flight; beyond, a call is refused, so one client cannot take every upstream slot.
pub const DEFAULT_MAX_CALLS_PER_SESSION: usize = 256;
/// Default `[limits] max_connections`: client connections open at once; beyond,
/// new ones wait in the listen backlog until one closes.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;
/// Default `[limits] header_read_timeout`: how long a client may take to send a
/// request's headers, and how long an idle keep-alive connection stays open.
pub const DEFAULT_HEADER_READ_TIMEOUT: &str = "30s";
/// Default `[limits] body_read_timeout`: how long a client may take to send a
/// request's body.
pub const DEFAULT_BODY_READ_TIMEOUT: &str = "30s";
/// Default `[limits] stream_write_timeout`: a client that has not read its response
/// stream for this long is treated as gone (its call runs on, or is cancelled for a
/// 2026-07-28 client) instead of holding the call's relay.
pub const DEFAULT_STREAM_WRITE_TIMEOUT: &str = "10s";

/// `[limits]`: every bound Manifold enforces, in one place.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    #[serde(default = "default_body")]
    pub max_body_bytes: usize,
    #[serde(default = "default_message")]
    pub max_message_bytes: usize,
    #[serde(default = "default_pending")]
    pub max_pending_per_upstream: usize,
    #[serde(default = "default_sessions")]
    pub max_sessions: usize,
    #[serde(default = "default_session_idle")]
    pub session_idle_timeout: String,
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout: String,
    #[serde(default = "default_stream_queue")]
    pub stream_queue: usize,
    #[serde(default = "default_held_call_ttl")]
    pub held_call_ttl: String,
    #[serde(default = "default_max_held_calls")]
    pub max_held_calls: usize,
    /// Of those (and of open `[confirm]` questions), how many one principal
    /// may have at once (`DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL`).
    #[serde(default = "default_max_held_calls_per_principal")]
    pub max_held_calls_per_principal: usize,
    #[serde(default = "default_max_connections")]
    pub max_connections: usize,
    #[serde(default = "default_header_read_timeout")]
    pub header_read_timeout: String,
    #[serde(default = "default_body_read_timeout")]
    pub body_read_timeout: String,
    #[serde(default = "default_stream_write_timeout")]
    pub stream_write_timeout: String,
    #[serde(default = "default_max_client_info_bytes")]
    pub max_client_info_bytes: usize,
    #[serde(default = "default_max_sessions_per_peer")]
    pub max_sessions_per_peer: usize,
    #[serde(default = "default_max_subscriptions_per_session")]
    pub max_subscriptions_per_session: usize,
    #[serde(default = "default_max_listens")]
    pub max_listens: usize,
    #[serde(default = "default_max_calls_per_session")]
    pub max_calls_per_session: usize,
    #[serde(default = "default_max_list_items")]
    pub max_list_items: usize,
    /// `DEFAULT_MAX_LIST_BYTES`.
    #[serde(default = "default_max_list_bytes")]
    pub max_list_bytes: usize,
    /// `DEFAULT_MAX_ITEM_BYTES`.
    #[serde(default = "default_max_item_bytes")]
    pub max_item_bytes: usize,
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_pending_per_upstream: DEFAULT_MAX_PENDING,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: default_session_idle(),
            connect_timeout: default_connect_timeout(),
            stream_queue: DEFAULT_STREAM_QUEUE,
            held_call_ttl: default_held_call_ttl(),
            max_held_calls: DEFAULT_MAX_HELD_CALLS,
            max_held_calls_per_principal: DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: default_header_read_timeout(),
            body_read_timeout: default_body_read_timeout(),
            stream_write_timeout: default_stream_write_timeout(),
            max_client_info_bytes: DEFAULT_MAX_CLIENT_INFO_BYTES,
            max_sessions_per_peer: DEFAULT_MAX_SESSIONS_PER_PEER,
            max_subscriptions_per_session: DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION,
            max_listens: DEFAULT_MAX_LISTENS,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            max_item_bytes: DEFAULT_MAX_ITEM_BYTES,
        }
    }
}

#[derive(Debug, Clone)]
pub struct LimitsConfig {
    pub max_body_bytes: usize,
    pub max_message_bytes: usize,
    pub max_pending_per_upstream: usize,
    pub max_sessions: usize,
    pub session_idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub stream_queue: usize,
    pub held_call_ttl: Duration,
    pub max_held_calls: usize,
    /// Held calls and open `[confirm]` questions one principal may have.
    pub max_held_calls_per_principal: usize,
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub stream_write_timeout: Duration,
    pub max_client_info_bytes: usize,
    pub max_sessions_per_peer: usize,
    pub max_subscriptions_per_session: usize,
    pub max_listens: usize,
    pub max_calls_per_session: usize,
    pub max_list_items: usize,
    pub max_list_bytes: usize,
    pub max_item_bytes: usize,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        // Only fails if the named defaults themselves are malformed, which the
        // `defaults_are_valid` test rules out.
        validate(LimitsSection::default()).unwrap_or(LimitsConfig {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_pending_per_upstream: DEFAULT_MAX_PENDING,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: Duration::from_secs(3600),
            connect_timeout: Duration::from_secs(10),
            stream_queue: DEFAULT_STREAM_QUEUE,
            held_call_ttl: Duration::from_secs(120),
            max_held_calls: DEFAULT_MAX_HELD_CALLS,
            max_held_calls_per_principal: DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: Duration::from_secs(30),
            body_read_timeout: Duration::from_secs(30),
            stream_write_timeout: Duration::from_secs(10),
            max_client_info_bytes: DEFAULT_MAX_CLIENT_INFO_BYTES,
            max_sessions_per_peer: DEFAULT_MAX_SESSIONS_PER_PEER,
            max_subscriptions_per_session: DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION,
            max_listens: DEFAULT_MAX_LISTENS,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
            max_list_bytes: DEFAULT_MAX_LIST_BYTES,
            max_item_bytes: DEFAULT_MAX_ITEM_BYTES,
        })
    }
}

pub(crate) fn duration(key: &str, value: &str) -> Result<Duration, String> {
    humantime::parse_duration(value.trim()).map_err(|e| {
        format!(
            "key `{key}`: `{value}` is not a duration ({e}); write e.g. \"30s\", \"2m\", \"1h\""
        )
    })
}

pub(crate) fn validate(l: LimitsSection) -> Result<LimitsConfig, String> {
    let positive = |key: &str, v: usize| {
        if v == 0 {
            Err(format!("key `limits.{key}`: must be greater than 0"))
        } else {
            Ok(v)
        }
    };
    Ok(LimitsConfig {
        max_body_bytes: positive("max_body_bytes", l.max_body_bytes)?,
        max_message_bytes: positive("max_message_bytes", l.max_message_bytes)?,
        max_pending_per_upstream: positive("max_pending_per_upstream", l.max_pending_per_upstream)?,
        max_sessions: positive("max_sessions", l.max_sessions)?,
        session_idle_timeout: duration("limits.session_idle_timeout", &l.session_idle_timeout)?,
        connect_timeout: duration("limits.connect_timeout", &l.connect_timeout)?,
        stream_queue: positive("stream_queue", l.stream_queue)?,
        held_call_ttl: duration("limits.held_call_ttl", &l.held_call_ttl)?,
        max_held_calls: positive("max_held_calls", l.max_held_calls)?,
        max_held_calls_per_principal: positive(
            "max_held_calls_per_principal",
            l.max_held_calls_per_principal,
        )?,
        max_connections: positive("max_connections", l.max_connections)?,
        header_read_timeout: duration("limits.header_read_timeout", &l.header_read_timeout)?,
        body_read_timeout: duration("limits.body_read_timeout", &l.body_read_timeout)?,
        stream_write_timeout: duration("limits.stream_write_timeout", &l.stream_write_timeout)?,
        max_client_info_bytes: positive("max_client_info_bytes", l.max_client_info_bytes)?,
        max_sessions_per_peer: positive("max_sessions_per_peer", l.max_sessions_per_peer)?,
        max_subscriptions_per_session: positive(
            "max_subscriptions_per_session",
            l.max_subscriptions_per_session,
        )?,
        max_listens: positive("max_listens", l.max_listens)?,
        max_calls_per_session: positive("max_calls_per_session", l.max_calls_per_session)?,
        max_list_items: positive("max_list_items", l.max_list_items)?,
        max_list_bytes: positive("max_list_bytes", l.max_list_bytes)?,
        max_item_bytes: positive("max_item_bytes", l.max_item_bytes)?,
    })
}

fn default_body() -> usize {
    DEFAULT_MAX_BODY_BYTES
}
fn default_message() -> usize {
    DEFAULT_MAX_MESSAGE_BYTES
}
fn default_pending() -> usize {
    DEFAULT_MAX_PENDING
}
fn default_sessions() -> usize {
    DEFAULT_MAX_SESSIONS
}
fn default_session_idle() -> String {
    DEFAULT_SESSION_IDLE.into()
}
fn default_connect_timeout() -> String {
    DEFAULT_CONNECT_TIMEOUT.into()
}
fn default_stream_queue() -> usize {
    DEFAULT_STREAM_QUEUE
}
fn default_held_call_ttl() -> String {
    DEFAULT_HELD_CALL_TTL.into()
}
fn default_max_held_calls_per_principal() -> usize {
    DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL
}
fn default_max_held_calls() -> usize {
    DEFAULT_MAX_HELD_CALLS
}
fn default_max_client_info_bytes() -> usize {
    DEFAULT_MAX_CLIENT_INFO_BYTES
}
fn default_max_sessions_per_peer() -> usize {
    DEFAULT_MAX_SESSIONS_PER_PEER
}
fn default_max_subscriptions_per_session() -> usize {
    DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION
}
fn default_max_listens() -> usize {
    DEFAULT_MAX_LISTENS
}
fn default_max_list_items() -> usize {
    DEFAULT_MAX_LIST_ITEMS
}
fn default_max_list_bytes() -> usize {
    DEFAULT_MAX_LIST_BYTES
}
fn default_max_item_bytes() -> usize {
    DEFAULT_MAX_ITEM_BYTES
}
fn default_max_calls_per_session() -> usize {
    DEFAULT_MAX_CALLS_PER_SESSION
}
fn default_max_connections() -> usize {
    DEFAULT_MAX_CONNECTIONS
}
fn default_header_read_timeout() -> String {
    DEFAULT_HEADER_READ_TIMEOUT.into()
}
fn default_body_read_timeout() -> String {
    DEFAULT_BODY_READ_TIMEOUT.into()
}
fn default_stream_write_timeout() -> String {
    DEFAULT_STREAM_WRITE_TIMEOUT.into()
}
