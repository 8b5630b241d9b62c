//! [`Refusal`]: every answer the gateway gives instead of a result, in one table —
//! each variant's JSON-RPC code ([`Refusal::code`]), its HTTP status in each era
//! ([`Refusal::status`]), its `data` and its audit outcome. Tool execution
//! errors are a family of the table ([`Refusal::Tool`], `tool`): they are
//! answered as results with `isError: true`.
//!
//! Invariants: a refusal is built where the problem is found and turned into bytes
//! only here ([`Refusal::reply`], which renders a tool error through its twin
//! [`ToolError::reply`]); the message says what was wrong and what would be
//! right. A JSON-RPC error to a well-formed request travels with 200 unless the
//! spec asks for a status (the 2026-07-28 header, `_meta` and capability errors;
//! sessions; an unknown method in that era), as the table below shows; so does
//! an upstream's own error ([`status_of_relayed`]).
//!
//! Not here: errors an upstream sent (they pass through untouched), answers
//! to an upstream's own requests (manifold-upstream `NotRelayed`).

mod connect;
#[cfg(test)]
mod tests;
mod tool;

pub(crate) use connect::{AccountAsk, AskForm, CONNECT_INPUT_KEY};
pub(crate) use tool::{upstream_outcome, NotConfirmed, ToolError};

use http::StatusCode;
use manifold_audit::{AuditError, Outcome};
use manifold_protocol::{jsonrpc, version, ErrorCode, MessageError, RequestId, RpcError};
use manifold_upstream::{CallOutcome, UpstreamError};
use serde_json::{json, Map, Value};

use crate::era::Era;
use crate::reply::Reply;

/// Why the gateway answers with an error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    // The HTTP request itself, before the body is read.
    #[error("the MCP endpoint accepts POST, GET and DELETE")]
    HttpMethodNotAllowed,
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("Accept must include application/json and text/event-stream")]
    NotAcceptable,
    #[error("GET opens an SSE stream: Accept must include text/event-stream")]
    StreamNotAcceptable,
    #[error("the request body exceeds limits.max_body_bytes ({limit} bytes)")]
    BodyTooLarge { limit: usize },
    /// A stdio line over `limits.max_body_bytes` (it is skipped, and reading
    /// goes on).
    #[error("message over {limit} bytes (limits.max_body_bytes); skipped")]
    LineTooLong { limit: usize },
    #[error("the request body could not be read")]
    BodyUnreadable,
    #[error("the request body did not arrive within limits.body_read_timeout ({0:?})")]
    BodyTimeout(std::time::Duration),
    #[error(
        "Host `{host}` is not allowed (DNS-rebinding protection); add it to server.allowed_hosts"
    )]
    HostNotAllowed { host: String },
    #[error("Host `{host}` is not in server.allowed_hosts (DNS-rebinding protection)")]
    HostNotListed { host: String },
    #[error("Origin `{origin}` is not allowed; add it to server.allowed_origins")]
    OriginNotAllowed { origin: String },

    // Decode: the body is not one JSON-RPC message.
    #[error("{0}")]
    BadMessage(MessageError),

    // Admission, session era.
    #[error("Bad Request: the Mcp-Session-Id header is required; send initialize first")]
    SessionRequired,
    #[error("Session not found: it ended or never existed; send initialize to start a new one")]
    UnknownSession,
    #[error("Bad Request: unsupported MCP-Protocol-Version `{0}`; supported: {supported}", supported = version::SESSION_SUPPORTED.join(", "))]
    UnsupportedProtocolHeader(String),
    #[error("Method not found: server/discover is a 2026-07-28 request; send it with params._meta[\"io.modelcontextprotocol/protocolVersion\"], or use initialize")]
    DiscoverWithoutMeta,
    #[error("too many sessions (limits.max_sessions = {limit}); try again later")]
    TooManySessions { limit: usize },
    #[error("too many sessions from this address (limits.max_sessions_per_peer = {limit}); end some (DELETE) or try again later")]
    TooManySessionsFromPeer { limit: usize },
    #[error("too many resource subscriptions in this session (limits.max_subscriptions_per_session = {limit}); unsubscribe some first")]
    TooManySubscriptions { limit: usize },
    #[error("too many calls in flight in this session (limits.max_calls_per_session = {limit}); wait for some to finish")]
    TooManyCalls { limit: usize },
    #[error("too many subscriptions/listen streams open (limits.max_listens = {limit}); try again later")]
    TooManyListens { limit: usize },

    // Admission, 2026-07-28.
    #[error("{0}")]
    MetaRequired(String),
    #[error("Header mismatch: {0}")]
    HeaderMismatch(String),
    #[error("Unsupported protocol version `{requested}`")]
    UnsupportedVersion { requested: String },
    #[error("Method not found: {method} does not exist in protocol {version}")]
    NotInThisRevision { method: String, version: String },
    #[error("Invalid logLevel `{0}` in params._meta")]
    InvalidLogLevel(String),

    // Routing and handlers.
    #[error("Method not found: {0}")]
    MethodNotFound(String),
    #[error("{0}")]
    InvalidParams(String),
    #[error("subscriptions/listen: {0}")]
    BadListenFilter(String),
    #[error("Unknown {kind}: {name}")]
    UnknownName { kind: &'static str, name: String },
    #[error("Resource not found: {uri}")]
    ResourceNotFound { uri: String },
    #[error("{0}")]
    AuditUnavailable(AuditError),

    // Relay.
    #[error("{0}")]
    Upstream(UpstreamError),
    /// An upstream refused a request Manifold made for the client (a
    /// subscription): its code, and its message with the upstream named.
    #[error("{message}")]
    UpstreamRefused { code: i64, message: String },
    #[error("Request cancelled by the client")]
    Cancelled,
    #[error("This request needs the client capabilities {names}; declare them in _meta clientCapabilities", names = .0.join(", "))]
    MissingCapabilities(Vec<String>),
    /// `[confirm]` needs a human's answer and this client cannot be asked
    /// (`without_elicitation = "refuse"`).
    #[error("`{tool}` needs a human's confirmation before it runs ([confirm]), but {why}")]
    ConfirmationUnavailable { tool: String, why: String },
    #[error("Rate limit reached for `{tool}` ([[rate_limit]] #{rule}: {limit}); retry in {} ms", retry_after.as_millis())]
    RateLimited {
        tool: String,
        rule: usize,
        limit: String,
        retry_after: std::time::Duration,
    },
    #[error("too many calls are waiting for client input ({limit}); retry later")]
    HeldCallsFull { limit: usize },
    #[error("this principal already has {limit} calls waiting for client input (limits.max_held_calls_per_principal); answer or drop some, then retry")]
    HeldCallsFullForPrincipal { limit: usize },
    #[error("Invalid requestState: {0}; send the request again without it")]
    InvalidRequestState(&'static str),
    #[error("the held call ended without an answer")]
    HeldCallLost,
    /// A `token_exchange` upstream acts for the caller, who presented no
    /// bearer token Manifold validated.
    #[error("upstream `{upstream}` is called on behalf of each caller (token_exchange), and this request carries no validated bearer token to exchange; authenticate with an access token (not an API key or a client certificate)")]
    NoTokenToExchange { upstream: String },
    /// The authorization server would not exchange the caller's token.
    #[error("{why}")]
    ExchangeRefused { upstream: String, why: String },
    /// A `user_oauth` / `user_secret` upstream, and the caller has connected
    /// no account there (`connect`: how the client is asked).
    #[error("{}", .0.message())]
    AccountRequired(Box<AccountAsk>),
    /// The caller's account could not be read or used (a damaged store, the
    /// authorization server down while the token expired).
    #[error("upstream `{upstream}`: the caller's account cannot be used now ({why}); retry later")]
    AccountUnavailable { upstream: String, why: String },
    /// What the client sent belongs to a call or stream on another replica,
    /// and the cluster's Redis cannot carry it there.
    #[error("{what} could not be relayed to the replica holding it: {error}; retry once the cluster's Redis is back (readiness shows its state)")]
    ClusterUnavailable {
        what: &'static str,
        error: manifold_cluster::ClusterError,
    },

    // Tasks (the 2026-07-28 Tasks extension).
    /// A `tasks/*` request (or a task-augmented call) from a client that did
    /// not declare the extension on that request.
    #[error("{method} needs the client capability extensions[\"io.modelcontextprotocol/tasks\"]; declare it in this request's _meta clientCapabilities")]
    TasksExtensionRequired { method: String },
    /// A task id that does not open for this caller (never Manifold's,
    /// tampered, another principal's, its upstream gone or re-pointed): the
    /// same answer in every case.
    #[error("Failed to retrieve task: Task not found")]
    UnknownTask,
    /// The caller's task id, past its expiry.
    #[error("Failed to retrieve task: Task has expired")]
    TaskExpired,
    /// Task forms Manifold does not relay (2025-11-25 experimental tasks,
    /// `tasks/list`, `tasks/result`): what to do instead.
    #[error("Method not found: {0}")]
    TasksNotOffered(String),
    /// The upstream answered with a task Manifold cannot relay: the request
    /// did not declare the extension, or its task id is unusable.
    #[error("upstream `{upstream}` {why}")]
    UnusableTask { upstream: String, why: String },

    /// A skill file whose bytes are not what its skill announced (SEP-2640
    /// digest or size): never passed on.
    #[error(
        "The skill file {uri} is not what its skill announced ({why}): refused. The skill may \
         have changed since it was listed; refresh it with skills/get"
    )]
    SkillFileMismatch { uri: String, why: String },

    // The tool-error family: answered as a result with `isError: true`.
    #[error("{0}")]
    Tool(ToolError),

    /// A call to an item `[integrity]` holds (a changed or unapproved tool,
    /// prompt or resource template): answered exactly as the unknown-item
    /// refusal it wraps (code, status, message, data), audited as
    /// `quarantined`.
    #[error("{0}")]
    Quarantined(Box<Refusal>),
}

impl From<ToolError> for Refusal {
    fn from(e: ToolError) -> Self {
        Refusal::Tool(e)
    }
}

impl Refusal {
    /// The JSON-RPC error code; `None` for a tool error, which is a result.
    pub(crate) fn code(&self) -> Option<ErrorCode> {
        use Refusal::*;
        Some(match self {
            HttpMethodNotAllowed
            | UnsupportedMediaType
            | NotAcceptable
            | StreamNotAcceptable
            | BodyTooLarge { .. }
            | LineTooLong { .. }
            | BodyUnreadable
            | BodyTimeout(_)
            | HostNotAllowed { .. }
            | HostNotListed { .. }
            | OriginNotAllowed { .. }
            | SessionRequired
            | UnknownSession
            | UnsupportedProtocolHeader(_) => ErrorCode::INVALID_REQUEST,
            BadMessage(e) => e.to_rpc_error().code,
            DiscoverWithoutMeta | NotInThisRevision { .. } | MethodNotFound(_) => {
                ErrorCode::METHOD_NOT_FOUND
            }
            MetaRequired(_)
            | InvalidLogLevel(_)
            | InvalidParams(_)
            | BadListenFilter(_)
            | UnknownName { .. }
            | InvalidRequestState(_)
            | UnknownTask
            | TaskExpired => ErrorCode::INVALID_PARAMS,
            TasksExtensionRequired { .. } => ErrorCode::MISSING_CLIENT_CAPABILITY,
            TasksNotOffered(_) => ErrorCode::METHOD_NOT_FOUND,
            HeaderMismatch(_) => ErrorCode::HEADER_MISMATCH,
            UnsupportedVersion { .. } => ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            ResourceNotFound { .. } => ErrorCode::RESOURCE_NOT_FOUND_LEGACY,
            MissingCapabilities(_) | ConfirmationUnavailable { .. } => {
                ErrorCode::MISSING_CLIENT_CAPABILITY
            }
            RateLimited { .. } => ErrorCode::RATE_LIMITED,
            Upstream(e) => e.code(),
            UpstreamRefused { code, .. } => ErrorCode(*code),
            TooManySessions { .. }
            | TooManySessionsFromPeer { .. }
            | TooManySubscriptions { .. }
            | TooManyCalls { .. }
            | TooManyListens { .. }
            | AuditUnavailable(_)
            | Cancelled
            | HeldCallsFull { .. }
            | HeldCallsFullForPrincipal { .. }
            | ClusterUnavailable { .. }
            | UnusableTask { .. }
            | SkillFileMismatch { .. }
            | HeldCallLost => ErrorCode::INTERNAL_ERROR,
            NoTokenToExchange { .. } | ExchangeRefused { .. } => ErrorCode::INVALID_REQUEST,
            AccountRequired(a) => match a.form {
                AskForm::UrlElicitation => ErrorCode::URL_ELICITATION_REQUIRED,
                AskForm::InputRequired { .. } => return None,
                AskForm::Link => ErrorCode::INVALID_REQUEST,
            },
            AccountUnavailable { .. } => ErrorCode::UPSTREAM_UNAVAILABLE,
            Tool(_) => return None,
            Quarantined(unknown) => return unknown.code(),
        })
    }

    /// The HTTP status the refusal travels with in `era`.
    pub(crate) fn status(&self, era: Era) -> StatusCode {
        use Refusal::*;
        match self {
            HttpMethodNotAllowed => StatusCode::METHOD_NOT_ALLOWED,
            UnsupportedMediaType => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            NotAcceptable | StreamNotAcceptable => StatusCode::NOT_ACCEPTABLE,
            BodyTooLarge { .. } | LineTooLong { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            HostNotAllowed { .. } | HostNotListed { .. } | OriginNotAllowed { .. } => {
                StatusCode::FORBIDDEN
            }
            BodyUnreadable
            | BadMessage(_)
            | SessionRequired
            | UnsupportedProtocolHeader(_)
            | MetaRequired(_)
            | HeaderMismatch(_)
            | UnsupportedVersion { .. }
            | InvalidLogLevel(_)
            | BadListenFilter(_)
            | MissingCapabilities(_)
            | TasksExtensionRequired { .. }
            | InvalidRequestState(_) => StatusCode::BAD_REQUEST,
            UnknownSession | DiscoverWithoutMeta | NotInThisRevision { .. } => {
                StatusCode::NOT_FOUND
            }
            Quarantined(unknown) => unknown.status(era),
            TooManySessions { .. }
            | TooManySessionsFromPeer { .. }
            | TooManyListens { .. }
            | HeldCallsFull { .. }
            | HeldCallsFullForPrincipal { .. }
            | ClusterUnavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
            // A 2026-07-28 request is answered with an HTTP status; a session's
            // call with a JSON-RPC error in a 200 (its stream may be open).
            RateLimited { .. } => match era {
                Era::Session => StatusCode::OK,
                Era::Stateless => StatusCode::TOO_MANY_REQUESTS,
            },
            ConfirmationUnavailable { .. } => match era {
                Era::Session => StatusCode::OK,
                Era::Stateless => StatusCode::BAD_REQUEST,
            },
            NoTokenToExchange { .. } | ExchangeRefused { .. } => match era {
                Era::Session => StatusCode::OK,
                Era::Stateless => StatusCode::FORBIDDEN,
            },
            AccountRequired(a) => match (&a.form, era) {
                (AskForm::Link, Era::Stateless) => StatusCode::FORBIDDEN,
                _ => StatusCode::OK,
            },
            AccountUnavailable { .. } => StatusCode::OK,
            // The 2026-07-28 transport answers an unknown method with 404; the
            // session era with a JSON-RPC error in a 200.
            MethodNotFound(_) | TasksNotOffered(_) => match era {
                Era::Session => StatusCode::OK,
                Era::Stateless => StatusCode::NOT_FOUND,
            },
            InvalidParams(_)
            | UnknownName { .. }
            | ResourceNotFound { .. }
            | AuditUnavailable(_)
            | Upstream(_)
            | UpstreamRefused { .. }
            | TooManySubscriptions { .. }
            | TooManyCalls { .. }
            | Cancelled
            | HeldCallLost
            | UnknownTask
            | TaskExpired
            | UnusableTask { .. }
            | SkillFileMismatch { .. }
            | Tool(_) => StatusCode::OK,
        }
    }

    /// The error's `data` member, if it has one.
    pub(crate) fn data(&self) -> Option<Value> {
        match self {
            Refusal::UnsupportedVersion { requested } => {
                let supported: Vec<&str> = version::STATELESS_SUPPORTED
                    .iter()
                    .chain(version::SESSION_SUPPORTED)
                    .copied()
                    .collect();
                Some(json!({"supported": supported, "requested": requested}))
            }
            Refusal::ResourceNotFound { uri } => Some(json!({ "uri": uri })),
            Refusal::RateLimited {
                rule, retry_after, ..
            } => Some(json!({"retryAfterMs": retry_after.as_millis() as u64, "rule": rule})),
            Refusal::MissingCapabilities(names) => {
                let caps: Map<String, Value> =
                    names.iter().map(|n| (n.clone(), json!({}))).collect();
                Some(json!({ "requiredCapabilities": caps }))
            }
            Refusal::TasksExtensionRequired { .. } => Some(json!({
                "requiredCapabilities": {"extensions": {manifold_protocol::tasks::EXTENSION: {}}}
            })),
            Refusal::ConfirmationUnavailable { .. } => {
                Some(json!({ "requiredCapabilities": {"elicitation": {"form": {}}} }))
            }
            Refusal::Quarantined(unknown) => unknown.data(),
            Refusal::AccountRequired(a) if matches!(a.form, AskForm::UrlElicitation) => {
                Some(a.elicitation_data())
            }
            _ => None,
        }
    }

    /// The JSON-RPC error object (a tool error has none: it is a result).
    fn to_rpc_error(&self) -> RpcError {
        let code = self.code().unwrap_or(ErrorCode::INTERNAL_ERROR);
        let e = RpcError::new(code, self.to_string());
        match self.data() {
            Some(d) => e.with_data(d),
            None => e,
        }
    }

    /// How the refusal is recorded: an upstream failure by its kind, a cancellation
    /// as such, an upstream's own refusal as its error, a tool error by its own
    /// rule, anything else as refused with the code.
    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            Refusal::Upstream(e) => upstream_outcome(e),
            Refusal::Cancelled => Outcome::Cancelled,
            Refusal::UpstreamRefused { code, .. } => Outcome::ProtocolError { code: *code },
            Refusal::Tool(t) => t.outcome(),
            Refusal::Quarantined(unknown) => Outcome::Quarantined {
                code: unknown.code().map_or(0, |c| c.0),
            },
            other => Outcome::Refused {
                code: other.code().map_or(0, |c| c.0),
            },
        }
    }

    /// The error message answering request `id` (the id of a body that could not
    /// be decoded when it had a usable one, else null).
    pub(crate) fn reply(&self, id: Option<&RequestId>, era: Era) -> Reply {
        let id = match self {
            Refusal::BadMessage(e) => e.id(),
            // A tool error answers a request, whose id is known.
            Refusal::Tool(t) => match id {
                Some(id) => return t.reply(id, era),
                None => None,
            },
            // A question, answered as a result (the retry is the call).
            Refusal::AccountRequired(a) => match (&a.form, id) {
                (AskForm::InputRequired { state }, Some(id)) => {
                    return Reply::ok(jsonrpc::response_bytes_from_json(
                        id,
                        a.input_required(state).to_string().as_bytes(),
                    ))
                }
                _ => id,
            },
            _ => id,
        };
        Reply::Message {
            status: self.status(era),
            bytes: jsonrpc::error_bytes(id, &self.to_rpc_error()).into(),
            session: None,
            refused: true,
            retry_after: match self {
                Refusal::RateLimited { retry_after, .. } => Some(*retry_after),
                _ => None,
            },
        }
    }
}

/// The HTTP status of an upstream's one-message answer relayed to a client in
/// `era`. A 2026-07-28 upstream's -32021 (a capability the client did not declare)
/// is the client's to fix and gets 400, as it would have directly; its -32020
/// or -32022 are about Manifold's own request, so they stay errors of the
/// call (200), like every answer of the session era.
pub(crate) fn status_of_relayed(era: Era, outcome: &CallOutcome) -> StatusCode {
    let CallOutcome::Error(raw) = outcome else {
        return StatusCode::OK;
    };
    if era != Era::Stateless {
        return StatusCode::OK;
    }
    match ErrorCode::of_error(raw.get()) {
        Some(ErrorCode::MISSING_CLIENT_CAPABILITY) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}
