//! The demo server's behaviour knobs ([`DemoConfig`], one field per CLI
//! flag) and their defaults: the instructions, the readme's description and
//! the modern mode's list TTL unless a flag says otherwise.
//!
//! Invariants: [`DemoConfig::default`] is the shipped demo: no fault tools,
//! no diagnostics, no fault modes; each of those is off unless its flag is set.
//!
//! Not here: parsing the flags (`cli`), acting on them (the server, the
//! transports and the tools read the fields).

use std::sync::Arc;

use crate::jsonrpc::Incoming;
use crate::{catalog, flaky, rogue};

/// `instructions` in the initialize result unless `--instructions` says
/// another (an empty one omits the member).
pub const DEFAULT_INSTRUCTIONS: &str =
    "Manifold demo upstream: a mock MCP server for demos, tests and benchmarks.";

/// The listed `demo://readme` resource's description, unless `--readme-description` says another.
pub const README_DESCRIPTION: &str = "What this demo server is.";

/// `ttlMs` of the modern mode's lists unless `--list-ttl-ms` says otherwise.
pub const DEFAULT_LIST_TTL_MS: u64 = 60_000;

/// Behaviour knobs, mirrored one-to-one by the CLI flags.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// `tools/list` page size; 0 disables pagination.
    pub page_size: usize,
    /// Number of extra `synthetic_NNNN` tools (large-catalog benchmarks).
    pub synthetic_tools: usize,
    /// `instructions` in the initialize result; `None` omits the member.
    pub instructions: Option<String>,
    /// The listed `demo://readme` resource's description.
    pub readme_description: String,
    /// `--app NAME`: also the MCP Apps tool and UI resource ([`app`](crate::app)).
    pub app: Option<String>,
    /// `--skill TEXT`: also the Skills extension and one skill ([`skill`](crate::skill)).
    pub skill: Option<String>,
    /// `--skill-digest-lies`: the skill's entry announces a wrong digest.
    pub skill_digest_lies: bool,
    /// Answer `initialize` with -32603 to exercise startup failures.
    pub fail_initialize: bool,
    /// Speak 2026-07-28 only (stateless; see [`modern`](crate::modern)).
    pub modern: bool,
    /// Modern mode: offer the Tasks extension (see [`modern_tasks`](crate::modern_tasks)).
    pub tasks: bool,
    /// `ttlMs` on lists and `server/discover` in modern mode.
    pub list_ttl_ms: u64,
    /// Modern mode: declare no `tools.listChanged` and send none.
    pub no_list_changed: bool,
    /// HTTP: POST bodies over this many bytes get 400 with a null-id error.
    pub bad_request_over: Option<usize>,
    /// List and serve the fault tools (`fail`, `sleep`, `crash`; see
    /// the registry's fault tools, `tools`). Tests pass `--faults`; the shipped catalogue has none.
    pub faults: bool,
    /// Fault mode: a hung server. `tools/call` (and `notifications/cancelled`) is
    /// taken and never answered: over HTTP the POST stays open unanswered; over
    /// stdio the process stops reading stdin at the first `tools/call`.
    pub hang_calls: bool,
    /// Diagnostics: a tool `env` that reports one environment variable.
    pub env_tool: bool,
    /// Diagnostics: start a `sleep` process at launch (a grandchild of whoever
    /// started this server) and report its pid with the tool `grandchild`.
    pub spawn_grandchild: bool,
    /// The diagnostic tool `trace` (`--trace-tool`).
    pub trace_tool: bool,
    /// The diagnostic tools `slow_read` (a slow read-only tool) and `calls`
    /// (`--slow-read-tool`).
    pub slow_read_tool: bool,
    /// The `file:///srv/docs/{+path}` template, reads echoing their URI
    /// (`--docs`, see `resources`).
    pub docs: bool,
    /// `add_tool` announces `list_changed` in the calling request's stream
    /// only, as SDK servers with one server object per session do, instead of
    /// to every session (`--notify-caller-only`).
    pub notify_caller_only: bool,
    /// stdio: handle one `tools/call` at a time, each taking this long first
    /// (`--serial-calls MS`): a single-threaded server, for pool tests and
    /// benchmarks. `crash` is not queued (it kills the child with its queue).
    pub serial_calls: Option<std::time::Duration>,
    /// Fault modes (`--misbehave`), see [`rogue`].
    pub misbehave: rogue::Rogue,
    /// A flaky upstream (`--flaky-*`), see [`flaky`].
    pub flaky: flaky::Flaky,
    /// Catalogue mode (`--catalog`, `--catalog-server`): these tools instead of
    /// the demo's own, see [`catalog`].
    pub catalog: Option<Arc<catalog::ServedCatalog>>,
}

impl DemoConfig {
    /// Whether this message is one a hung server (`--hang-calls`) never answers.
    pub fn hangs_on(&self, incoming: &Incoming) -> bool {
        self.hang_calls
            && match incoming {
                Incoming::Request { method, .. } => method == "tools/call",
                Incoming::Notification { method, .. } => method == "notifications/cancelled",
                _ => false,
            }
    }
}

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            page_size: 0,
            synthetic_tools: 0,
            instructions: Some(DEFAULT_INSTRUCTIONS.to_owned()),
            readme_description: README_DESCRIPTION.to_owned(),
            app: None,
            skill: None,
            skill_digest_lies: false,
            fail_initialize: false,
            modern: false,
            tasks: false,
            list_ttl_ms: DEFAULT_LIST_TTL_MS,
            no_list_changed: false,
            bad_request_over: None,
            faults: false,
            hang_calls: false,
            env_tool: false,
            spawn_grandchild: false,
            trace_tool: false,
            slow_read_tool: false,
            docs: false,
            notify_caller_only: false,
            serial_calls: None,
            misbehave: rogue::Rogue::default(),
            flaky: flaky::Flaky::default(),
            catalog: None,
        }
    }
}
