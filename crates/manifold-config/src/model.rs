//! The file model: exactly the keys `gateway.toml` accepts, with their defaults.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Default `[server] listen`.
pub const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
/// Default `[server] path`.
pub const DEFAULT_PATH: &str = "/mcp";
/// Default `[server] page_size`: large enough that typical catalogs arrive in one page
/// for clients that never follow `nextCursor`.
pub const DEFAULT_PAGE_SIZE: usize = 500;
/// Default `[naming] separator`.
pub const DEFAULT_SEPARATOR: &str = "__";
/// Default `[naming] max_length`: the limit OpenAI and Anthropic enforce on tool names.
pub const DEFAULT_MAX_NAME_LENGTH: usize = 64;
/// Default per-call timeout of an upstream.
pub const DEFAULT_TIMEOUT: &str = "60s";
/// Default `[upstreams.<name>] ping_interval`: how often a ready upstream is
/// pinged to prove it still answers.
pub const DEFAULT_PING_INTERVAL: &str = "30s";
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
/// Default `[server] shutdown_grace`: how long calls in flight get to finish once
/// shutdown begins.
pub const DEFAULT_SHUTDOWN_GRACE: &str = "10s";
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub naming: NamingSection,
    #[serde(default)]
    pub limits: LimitsSection,
    /// Upstream MCP servers, keyed by name (`^[A-Za-z0-9_-]{1,32}$`).
    #[serde(default)]
    pub upstreams: BTreeMap<String, UpstreamSection>,
    /// The audit log; off without this section. The section must name a sink
    /// (`path`, `stdout`, or both).
    #[serde(default)]
    pub audit: Option<AuditSection>,
    /// Client authentication; off (every client is `anonymous`) without it.
    #[serde(default)]
    pub auth: Option<crate::auth::AuthSection>,
    /// The admin listener (probes and metrics; control endpoints with
    /// credentials); off unless set.
    #[serde(default)]
    pub admin: Option<crate::admin::AdminSection>,
    #[serde(default)]
    pub metrics: MetricsSection,
    #[serde(default)]
    pub validation: ValidationSection,
    /// Rate limits and concurrency caps on `tools/call`, per caller.
    #[serde(default)]
    pub rate_limit: Vec<crate::limits::RateLimitSection>,
    /// Who sees and may use which tools, prompts and resources; without any
    /// rule every admitted caller sees everything.
    #[serde(default)]
    pub policy: Vec<crate::policy::PolicySection>,
    /// Calls a human confirms (through the client) before they are forwarded.
    #[serde(default)]
    pub confirm: crate::policy::ConfirmSection,
    /// `manifold stdio`, the gateway as a stdio MCP server.
    #[serde(default)]
    pub stdio: StdioSection,
    /// OpenTelemetry traces over OTLP; off unless the section is present.
    #[serde(default)]
    pub tracing: Option<crate::telemetry::TracingSection>,
    /// What replicas share (sealed session ids); off unless present.
    #[serde(default)]
    pub cluster: Option<crate::cluster::ClusterSection>,
    /// Where upstream tokens are kept at rest (`oauth` upstreams need it).
    #[serde(default)]
    pub credentials: Option<crate::credentials::CredentialsSection>,
    /// Tool integrity: approved fingerprints and what a change does (its
    /// defaults apply without the section: `mode = "warn"`).
    #[serde(default)]
    pub integrity: crate::integrity::IntegritySection,
}

/// `[stdio]`: the stdio front door (`manifold stdio`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StdioSection {
    /// The principal its requests run as (`local:<principal>` in audit
    /// records; `subject:<principal>` in `who` rules). Default: the OS user
    /// (`$USER`, then `$LOGNAME`, then `local`).
    #[serde(default)]
    pub principal: Option<String>,
}

/// `[validation]`: what the gateway checks before forwarding.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ValidationSection {
    /// `tools/call` arguments against the tool's `inputSchema`: `"enforce"`
    /// (default) or `"off"`.
    #[serde(default)]
    pub arguments: ArgumentsMode,
    /// A tool's `structuredContent` against its `outputSchema`: `"warn"`
    /// (default: logged), `"enforce"` (the client gets a tool error) or `"off"`.
    #[serde(default)]
    pub output: OutputMode,
}

/// `[validation] output`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    Off,
    #[default]
    Warn,
    Enforce,
}

/// `[validation] arguments`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ArgumentsMode {
    #[default]
    Enforce,
    Off,
}

/// Default `[metrics] max_tool_series`: tools with their own latency series; calls
/// to further tools are counted under `tool="other"`, so a catalog of thousands of
/// tools cannot blow up the metrics.
pub const DEFAULT_MAX_TOOL_SERIES: usize = 500;

/// `[audit]`: one JSON line per call, hash-chained. See docs/audit.md.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    /// Append records to this file (rotated at `max_bytes`).
    pub path: Option<String>,
    /// Also write records to stdout.
    #[serde(default)]
    pub stdout: bool,
    /// Argument keys whose values are replaced by "[REDACTED]", at any depth,
    /// ignoring case. Default: common secret names (password, token, api_key, …).
    pub redact: Option<Vec<String>>,
    /// Keep the (redacted) arguments in records; false keeps only their digest.
    /// Default true.
    pub include_arguments: Option<bool>,
    /// Rotate the file when it reaches this size. Default 100 MiB.
    pub max_bytes: Option<u64>,
    /// Rotated files kept (`audit.jsonl.1` … `.keep`). Default 10.
    pub keep: Option<usize>,
    /// `always` (a call's response waits for its record on disk), `interval`
    /// (fsync every second: a crash may lose the last second), `never` (the OS
    /// decides). Default `interval`.
    pub fsync: Option<String>,
    /// When the sink fails: `reject` new calls until it recovers, or `continue`
    /// serving and count lost records. Default `reject`.
    pub on_failure: Option<String>,
    /// Records queued for the writer; when full, calls wait. Default 1024.
    pub queue: Option<usize>,
    /// The largest argument value or text member written as is
    /// (`DEFAULT_MAX_VALUE_BYTES`); larger ones become their size and digest.
    pub max_value_bytes: Option<usize>,
    /// Also export every record as an OTLP log record to `[tracing] endpoint`
    /// (default false); the file stays the record of truth.
    #[serde(default)]
    pub otlp: bool,
}

/// `[metrics]`: bounds on Prometheus series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// Tools with their own latency series (`DEFAULT_MAX_TOOL_SERIES`).
    #[serde(default = "d_max_tool_series")]
    pub max_tool_series: usize,
    /// Count requests by principal too (`manifold_requests_by_principal_total`):
    /// `"none"` (default), `"group"` (the caller's first group), `"subject"`.
    #[serde(default)]
    pub principal_label: PrincipalLabel,
    /// Principals with their own series (`DEFAULT_MAX_PRINCIPAL_SERIES`); the rest
    /// count under `principal="other"`.
    #[serde(default = "d_max_principal_series")]
    pub max_principal_series: usize,
}

/// `[metrics] principal_label`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PrincipalLabel {
    #[default]
    None,
    Group,
    Subject,
}

/// Default `[metrics] max_principal_series`.
pub const DEFAULT_MAX_PRINCIPAL_SERIES: usize = 100;

fn d_max_principal_series() -> usize {
    DEFAULT_MAX_PRINCIPAL_SERIES
}

impl Default for MetricsSection {
    fn default() -> Self {
        MetricsSection {
            max_tool_series: DEFAULT_MAX_TOOL_SERIES,
            principal_label: PrincipalLabel::None,
            max_principal_series: DEFAULT_MAX_PRINCIPAL_SERIES,
        }
    }
}

fn d_max_tool_series() -> usize {
    DEFAULT_MAX_TOOL_SERIES
}

/// `[server]`: the downstream endpoint.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerSection {
    /// Socket address to listen on (`DEFAULT_LISTEN`).
    #[serde(default = "d_listen")]
    pub listen: String,
    /// The MCP endpoint path (`DEFAULT_PATH`).
    #[serde(default = "d_path")]
    pub path: String,
    /// Items per page of merged lists (`DEFAULT_PAGE_SIZE`).
    #[serde(default = "d_page_size")]
    pub page_size: usize,
    /// `Origin` values accepted besides a loopback listener's own loopback origins,
    /// e.g. `["https://app.example.com"]`. Requests without `Origin` are accepted.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// `Host` values accepted (e.g. the DNS name clients or a proxy use). A loopback
    /// listener also accepts loopback hosts; any other listener accepts only these,
    /// and needs at least one (`"*"` accepts any host: no DNS-rebinding protection).
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// Serve a listener that is not on a loopback address without authentication
    /// (default false: `manifold serve` refuses to). Anyone who can reach the port
    /// then acts with the upstreams' credentials.
    #[serde(default)]
    pub allow_unauthenticated: bool,
    /// Reload the configuration when this file changes (checked every 2 s),
    /// as on SIGHUP (default false).
    #[serde(default)]
    pub watch_config: bool,
    /// Secret that keys the HMAC of the `requestState` Manifold mints when it
    /// bridges a legacy upstream's mid-call request for a 2026-07-28 client (at
    /// least `MIN_REQUEST_STATE_KEY_LEN` characters; `${VAR}` expands). Unset: a
    /// random key per process, so states die with it.
    pub request_state_key: Option<String>,
    /// How long calls in flight get to finish once shutdown begins (SIGTERM,
    /// SIGINT), `DEFAULT_SHUTDOWN_GRACE`. Past it they are cancelled, audited as
    /// such, and the process exits anyway.
    #[serde(default = "d_shutdown_grace")]
    pub shutdown_grace: String,
    /// `[server.tls]`: serve HTTPS (and verify client certificates).
    #[serde(default)]
    pub tls: Option<TlsSection>,
}

/// `[server.tls]`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TlsSection {
    /// PEM certificate chain (leaf first).
    pub cert: String,
    /// PEM private key (PKCS#8, PKCS#1 or SEC1).
    pub key: String,
    /// PEM CA certificates client certificates must chain to; set, clients
    /// present certificates and the certificate's subject becomes the principal.
    #[serde(default)]
    pub client_ca: Option<String>,
    /// With `client_ca`: refuse a connection without a client certificate
    /// (default true). False: such clients authenticate by `[auth]` instead.
    #[serde(default)]
    pub require_client_cert: Option<bool>,
    /// With `client_ca`: certificate revocation lists (PEM), one file or a
    /// list; a client certificate they revoke is refused at the handshake.
    /// Read again, with the certificates, when a file changes.
    #[serde(default)]
    pub client_crl: Option<PathList>,
}

/// One path, or a list of them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum PathList {
    One(String),
    Many(Vec<String>),
}

impl PathList {
    /// The paths, in order.
    pub fn paths(&self) -> Vec<&str> {
        match self {
            PathList::One(p) => vec![p.as_str()],
            PathList::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

/// Shortest `server.request_state_key` accepted.
pub const MIN_REQUEST_STATE_KEY_LEN: usize = 32;

impl Default for ServerSection {
    fn default() -> Self {
        ServerSection {
            listen: d_listen(),
            path: d_path(),
            page_size: DEFAULT_PAGE_SIZE,
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            allow_unauthenticated: false,
            watch_config: false,
            request_state_key: None,
            shutdown_grace: d_shutdown_grace(),
            tls: None,
        }
    }
}

/// `[naming]`: how upstream names become exposed names.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NamingSection {
    /// Between the upstream name and the tool name (`DEFAULT_SEPARATOR`).
    #[serde(default = "d_separator")]
    pub separator: String,
    /// `always` (default), `multiple` (prefix only with several upstreams), `never`.
    #[serde(default = "d_prefix_mode")]
    pub prefix_mode: String,
    /// Longest exposed name (`DEFAULT_MAX_NAME_LENGTH`); longer ones are shortened.
    #[serde(default = "d_max_length")]
    pub max_length: usize,
}

impl Default for NamingSection {
    fn default() -> Self {
        NamingSection {
            separator: d_separator(),
            prefix_mode: d_prefix_mode(),
            max_length: DEFAULT_MAX_NAME_LENGTH,
        }
    }
}

/// `[limits]`: every bound Manifold enforces, in one place.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LimitsSection {
    #[serde(default = "d_body")]
    pub max_body_bytes: usize,
    #[serde(default = "d_message")]
    pub max_message_bytes: usize,
    #[serde(default = "d_pending")]
    pub max_pending_per_upstream: usize,
    #[serde(default = "d_sessions")]
    pub max_sessions: usize,
    #[serde(default = "d_session_idle")]
    pub session_idle_timeout: String,
    #[serde(default = "d_connect_timeout")]
    pub connect_timeout: String,
    #[serde(default = "d_stream_queue")]
    pub stream_queue: usize,
    #[serde(default = "d_held_call_ttl")]
    pub held_call_ttl: String,
    #[serde(default = "d_max_held_calls")]
    pub max_held_calls: usize,
    /// Of those (and of open `[confirm]` questions), how many one principal
    /// may have at once (`DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL`).
    #[serde(default = "d_max_held_calls_per_principal")]
    pub max_held_calls_per_principal: usize,
    #[serde(default = "d_max_connections")]
    pub max_connections: usize,
    #[serde(default = "d_header_read_timeout")]
    pub header_read_timeout: String,
    #[serde(default = "d_body_read_timeout")]
    pub body_read_timeout: String,
    #[serde(default = "d_stream_write_timeout")]
    pub stream_write_timeout: String,
    #[serde(default = "d_max_client_info_bytes")]
    pub max_client_info_bytes: usize,
    #[serde(default = "d_max_sessions_per_peer")]
    pub max_sessions_per_peer: usize,
    #[serde(default = "d_max_subscriptions_per_session")]
    pub max_subscriptions_per_session: usize,
    #[serde(default = "d_max_listens")]
    pub max_listens: usize,
    #[serde(default = "d_max_calls_per_session")]
    pub max_calls_per_session: usize,
    #[serde(default = "d_max_list_items")]
    pub max_list_items: usize,
}

impl Default for LimitsSection {
    fn default() -> Self {
        LimitsSection {
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            max_pending_per_upstream: DEFAULT_MAX_PENDING,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: d_session_idle(),
            connect_timeout: d_connect_timeout(),
            stream_queue: DEFAULT_STREAM_QUEUE,
            held_call_ttl: d_held_call_ttl(),
            max_held_calls: DEFAULT_MAX_HELD_CALLS,
            max_held_calls_per_principal: DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            header_read_timeout: d_header_read_timeout(),
            body_read_timeout: d_body_read_timeout(),
            stream_write_timeout: d_stream_write_timeout(),
            max_client_info_bytes: DEFAULT_MAX_CLIENT_INFO_BYTES,
            max_sessions_per_peer: DEFAULT_MAX_SESSIONS_PER_PEER,
            max_subscriptions_per_session: DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION,
            max_listens: DEFAULT_MAX_LISTENS,
            max_calls_per_session: DEFAULT_MAX_CALLS_PER_SESSION,
            max_list_items: DEFAULT_MAX_LIST_ITEMS,
        }
    }
}

/// `[upstreams.<name>]`: either a stdio command or a Streamable-HTTP `url`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct UpstreamSection {
    /// stdio: the program to spawn (looked up on `PATH`).
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: the child's environment variables. The child gets these, plus
    /// `PATH`, `HOME` and `LANG` from the gateway's environment, and nothing else
    /// (one upstream's secrets never reach another) unless `inherit_env` is true.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: give the child the gateway's whole environment (default false).
    #[serde(default)]
    pub inherit_env: bool,
    /// stdio: working directory.
    pub cwd: Option<String>,
    /// HTTP: the upstream's MCP endpoint URL (`http://` or `https://`).
    pub url: Option<String>,
    /// HTTP: headers sent on every request (credentials go here, never the client's).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// HTTP: how Manifold authenticates (`static` headers by default).
    pub auth: Option<crate::credentials::UpstreamAuthSection>,
    /// HTTPS: PEM CA certificates trusted for this upstream, besides the
    /// built-in web roots (a private CA).
    pub ca: Option<String>,
    /// HTTPS: PEM client certificate chain presented to this upstream (mTLS);
    /// with `client_key`.
    pub client_cert: Option<String>,
    /// HTTPS: the PEM private key of `client_cert`.
    pub client_key: Option<String>,
    /// Per-call timeout (`DEFAULT_TIMEOUT`), e.g. `"30s"`, `"2m"`.
    pub timeout: Option<String>,
    /// How often a ready upstream is pinged to prove it still answers
    /// (`DEFAULT_PING_INTERVAL`); `"0s"` turns the pings off. Two pings in a row
    /// unanswered within `timeout` restart it (a hung but live child, a server that
    /// stopped answering).
    pub ping_interval: Option<String>,
    /// `/readyz` fails while a required upstream is not ready (default false).
    #[serde(default)]
    pub required: bool,
    /// Used instead of the upstream's name in exposed names (`<prefix><separator>
    /// <tool>`), e.g. a short alias for a long upstream name. Same rules as
    /// upstream names. Default: the upstream's name.
    pub prefix: Option<String>,
    /// Which of the upstream's tools are exposed (globs over its own tool names).
    #[serde(default)]
    pub tools: FilterSection,
    /// Which of the upstream's prompts are exposed (globs over its own prompt names).
    #[serde(default)]
    pub prompts: FilterSection,
    /// Which protocol era to speak to it: `auto` (default: probe with
    /// `server/discover`, fall back to `initialize`), `legacy` (`initialize` only,
    /// 2025-11-25 and older) or `2026-07-28` (stateless only; no fallback).
    pub protocol: Option<String>,
    /// Per-tool fixes by the upstream's own tool name: exposed name,
    /// description, pinned and hidden arguments.
    #[serde(default)]
    pub overrides: BTreeMap<String, crate::overrides::ToolOverride>,
}

/// `allow` / `deny` glob lists (`*` any run, `?` one character). An item is exposed
/// when it matches an `allow` glob (or `allow` is empty) and no `deny` glob. Hidden
/// items are not callable.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct FilterSection {
    /// Globs of names to expose; empty = all.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs of names to hide; deny wins over allow.
    #[serde(default)]
    pub deny: Vec<String>,
}

fn d_listen() -> String {
    DEFAULT_LISTEN.into()
}
fn d_path() -> String {
    DEFAULT_PATH.into()
}
fn d_page_size() -> usize {
    DEFAULT_PAGE_SIZE
}
fn d_separator() -> String {
    DEFAULT_SEPARATOR.into()
}
fn d_prefix_mode() -> String {
    "always".into()
}
fn d_max_length() -> usize {
    DEFAULT_MAX_NAME_LENGTH
}
fn d_body() -> usize {
    DEFAULT_MAX_BODY_BYTES
}
fn d_message() -> usize {
    DEFAULT_MAX_MESSAGE_BYTES
}
fn d_pending() -> usize {
    DEFAULT_MAX_PENDING
}
fn d_sessions() -> usize {
    DEFAULT_MAX_SESSIONS
}
fn d_session_idle() -> String {
    DEFAULT_SESSION_IDLE.into()
}
fn d_connect_timeout() -> String {
    DEFAULT_CONNECT_TIMEOUT.into()
}
fn d_stream_queue() -> usize {
    DEFAULT_STREAM_QUEUE
}
fn d_held_call_ttl() -> String {
    DEFAULT_HELD_CALL_TTL.into()
}
fn d_max_held_calls_per_principal() -> usize {
    DEFAULT_MAX_HELD_CALLS_PER_PRINCIPAL
}

fn d_max_held_calls() -> usize {
    DEFAULT_MAX_HELD_CALLS
}
fn d_max_client_info_bytes() -> usize {
    DEFAULT_MAX_CLIENT_INFO_BYTES
}
fn d_max_sessions_per_peer() -> usize {
    DEFAULT_MAX_SESSIONS_PER_PEER
}
fn d_max_subscriptions_per_session() -> usize {
    DEFAULT_MAX_SUBSCRIPTIONS_PER_SESSION
}
fn d_max_listens() -> usize {
    DEFAULT_MAX_LISTENS
}
fn d_max_list_items() -> usize {
    DEFAULT_MAX_LIST_ITEMS
}
fn d_max_calls_per_session() -> usize {
    DEFAULT_MAX_CALLS_PER_SESSION
}
fn d_shutdown_grace() -> String {
    DEFAULT_SHUTDOWN_GRACE.into()
}
fn d_max_connections() -> usize {
    DEFAULT_MAX_CONNECTIONS
}
fn d_header_read_timeout() -> String {
    DEFAULT_HEADER_READ_TIMEOUT.into()
}
fn d_body_read_timeout() -> String {
    DEFAULT_BODY_READ_TIMEOUT.into()
}
fn d_stream_write_timeout() -> String {
    DEFAULT_STREAM_WRITE_TIMEOUT.into()
}
