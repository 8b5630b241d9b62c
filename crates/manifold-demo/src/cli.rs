//! Command line of `manifold-demo-upstream`.
//!
//! What: parses flags into a [`DemoConfig`] and runs the chosen transport.
//! The binary's `main` only calls [`main`], so the flags are documented and
//! tested in one place.
//!
//! Catalogue mode, `--catalog PATH --catalog-server NAME`: the server plays one
//! server of a catalogue of real tool definitions (the shape of
//! `../shared/data/tool-catalog/catalog.json`), listing its tools exactly as given
//! and answering any call of one with `{"tool": NAME, "arguments": {...}}` as text;
//! see the `catalog` module. For example, twenty of them behind one gateway:
//! `manifold demo-upstream --http 127.0.0.1:0 --catalog catalog.json
//! --catalog-server github`.
//!
//! Invariants: stdout belongs to the protocol (stdio) or to the single
//! `listening on …` line (HTTP); diagnostics go to stderr. Exit codes: 0 on
//! stdin EOF, 1 on startup/IO errors, 2 on bad flags (clap), `crash`'s `code`
//! (default 3) from `crash`.

use std::process::ExitCode;

use clap::Parser;

use crate::config::{DemoConfig, DEFAULT_INSTRUCTIONS};
use crate::identity::SERVER_NAME;

/// Demo/mock upstream MCP server for Manifold demos, tests and benchmarks.
#[derive(Debug, Parser)]
#[command(name = "manifold-demo-upstream", version)]
pub struct Args {
    /// Serve newline-delimited JSON-RPC on stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    pub stdio: bool,

    /// Serve Streamable HTTP at http://ADDR/mcp instead (e.g. 127.0.0.1:0).
    #[arg(long, value_name = "ADDR")]
    pub http: Option<String>,

    /// tools/list page size; 0 disables pagination.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub page_size: usize,

    /// Additionally expose N synthetic tools synthetic_0000, synthetic_0001, ...
    #[arg(long = "tools", value_name = "N", default_value_t = 0)]
    pub synthetic_tools: usize,

    /// `instructions` returned by initialize; an empty string omits it.
    #[arg(long, value_name = "TEXT", default_value = DEFAULT_INSTRUCTIONS)]
    pub instructions: String,

    /// Also an MCP Apps tool `get-time` and its UI resource
    /// `ui://get-time/mcp-app.html`, NAME written into both.
    #[arg(long, value_name = "NAME")]
    pub app: Option<String>,

    /// Also the Skills extension (SEP-2640) and one skill,
    /// `skill://review/SKILL.md`, whose body is TEXT (for `[integrity]`
    /// tests: a restart with another one is a changed skill).
    #[arg(long, value_name = "TEXT")]
    pub skill: Option<String>,

    /// With --skill: announce a digest for `skill://review/notes.md` that its
    /// bytes do not have.
    #[arg(long)]
    pub skill_digest_lies: bool,

    /// The listed `demo://readme` resource's description (for `[integrity]`
    /// tests: a restart with another one is a changed resource).
    #[arg(long, value_name = "TEXT", default_value = super::config::README_DESCRIPTION)]
    pub readme_description: String,

    /// Answer initialize with a -32603 error (tests startup failures).
    #[arg(long)]
    pub fail_initialize: bool,

    /// Speak MCP 2026-07-28 only: stateless requests with `_meta`,
    /// `server/discover`, `subscriptions/listen`, InputRequiredResult (`ask`).
    #[arg(long)]
    pub modern: bool,

    /// In --modern mode, offer the Tasks extension (`io.modelcontextprotocol/tasks`):
    /// advertise it, list the task tools (`task_slow`, `task_required`,
    /// `task_ask`, `task_fail`, `task_unasked`, `task_stats`) and serve `tasks/*`.
    #[arg(long)]
    pub tasks: bool,

    /// In --modern mode, declare `tools.listChanged: false` and honour no
    /// `toolsListChanged` on a listen (clients must rely on `ttlMs`).
    #[arg(long)]
    pub no_list_changed: bool,

    /// `ttlMs` on lists in --modern mode.
    #[arg(long, value_name = "MS", default_value_t = super::config::DEFAULT_LIST_TTL_MS)]
    pub list_ttl_ms: u64,

    /// Over HTTP, answer a POST body over this many bytes with 400 and a
    /// JSON-RPC error with a null id, as servers with a message size limit do
    /// (tests that one refused request does not reset a gateway's session).
    #[arg(long, value_name = "BYTES")]
    pub bad_request_over: Option<usize>,

    /// Also list and serve the fault tools: `fail` (a tool error), `sleep`
    /// (waits `ms`, honours cancellation) and `crash` (exits the process). For
    /// tests; the shipped gateway.toml does not pass it.
    #[arg(long)]
    pub faults: bool,

    /// Fault mode, for tests: behave as a hung server. `tools/call` (and
    /// `notifications/cancelled`) is never answered: over HTTP the POST stays
    /// open, over stdio the process stops reading stdin at the first call.
    #[arg(long)]
    pub hang_calls: bool,

    /// Diagnostics, for tests: a tool `env` that reports one environment variable.
    #[arg(long)]
    pub env_tool: bool,

    /// Diagnostics, for tests: start a `sleep` process at launch and report its pid
    /// with the tool `grandchild` (to check it is stopped with this server).
    #[arg(long)]
    pub spawn_grandchild: bool,

    /// Diagnostics, for tests: a tool `trace` that reports the W3C trace context
    /// it received (`_meta.traceparent`, and over HTTP the `traceparent` header).
    #[arg(long)]
    pub trace_tool: bool,

    /// Diagnostics, for tests: a read-only tool `slow_read {ms, key}` that
    /// waits `ms` and answers with `key`, the number of `slow_read` calls
    /// that began so far (`x-demo-served`) and an unknown member; and the
    /// tool `calls`, which counts the `tools/call`s that arrived (HTTP).
    #[arg(long)]
    pub slow_read_tool: bool,

    /// Diagnostics, for tests: also list the template `file:///srv/docs/{+path}`
    /// and answer a read of any `file:` or `https:` URI with the URI exactly
    /// as it arrived (`read <uri>`), as a file server that resolves `..`
    /// itself would serve it: a test sees what the gateway forwarded.
    #[arg(long)]
    pub docs: bool,

    /// `add_tool` announces `list_changed` in the calling request's stream
    /// only (as SDK servers with one server object per session do), not to
    /// every session: for tests of gateway replicas, where only the replica
    /// that made the call hears of the change.
    #[arg(long)]
    pub notify_caller_only: bool,

    /// stdio: handle one `tools/call` at a time, each taking MS milliseconds
    /// before it runs (a single-threaded server doing its work on the request
    /// thread): for tests and benchmarks of upstream pools. `crash` skips the
    /// queue.
    #[arg(long, value_name = "MS")]
    pub serial_calls: Option<u64>,

    /// Fault mode, for tests (HTTP): reset the connection of this share (0..1)
    /// of `tools/call` requests before answering. See the `flaky` module.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    pub flaky_reset: f64,

    /// Fault mode, for tests (HTTP): answer this share (0..1) of `tools/call`
    /// requests with 503.
    #[arg(long, value_name = "SHARE", default_value_t = 0.0)]
    pub flaky_unavailable: f64,

    /// Fault mode, for tests (HTTP): answer the first N `tools/call` requests
    /// with 503 (an outage it recovers from).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub flaky_outage: u64,

    /// Seeds which requests the `--flaky-*` modes fail.
    #[arg(long, value_name = "SEED", default_value_t = 1)]
    pub flaky_seed: u64,

    /// Fault mode, for tests: break the protocol in this way (repeatable). See
    /// the `rogue` module for what each mode does.
    #[arg(long, value_enum, value_name = "MODE")]
    pub misbehave: Vec<super::rogue::Misbehaviour>,

    /// Catalogue mode: play the server `--catalog-server` of this catalogue of
    /// real tool definitions (`{"servers": [{"name", "tools": [...]}]}`, the shape
    /// of ../shared/data/tool-catalog/catalog.json). Its tools are listed exactly
    /// as the file gives them, instead of the demo's own, and a call of any of
    /// them answers with the text `{"tool": NAME, "arguments": {...}}`. For memory,
    /// list-size and search tests of a gateway in front of many servers: run one
    /// demo per server.
    #[arg(
        long,
        value_name = "PATH",
        requires = "catalog_server",
        conflicts_with = "synthetic_tools"
    )]
    pub catalog: Option<std::path::PathBuf>,

    /// The server of `--catalog` to play (its `name`).
    #[arg(long, value_name = "NAME", requires = "catalog")]
    pub catalog_server: Option<String>,
}

impl Args {
    pub fn config(&self) -> DemoConfig {
        DemoConfig {
            page_size: self.page_size,
            synthetic_tools: self.synthetic_tools,
            instructions: Some(self.instructions.clone()).filter(|text| !text.is_empty()),
            readme_description: self.readme_description.clone(),
            app: self.app.clone(),
            skill: self.skill.clone(),
            skill_digest_lies: self.skill_digest_lies,
            fail_initialize: self.fail_initialize,
            modern: self.modern,
            tasks: self.tasks,
            list_ttl_ms: self.list_ttl_ms,
            no_list_changed: self.no_list_changed,
            bad_request_over: self.bad_request_over,
            faults: self.faults,
            hang_calls: self.hang_calls,
            env_tool: self.env_tool,
            spawn_grandchild: self.spawn_grandchild,
            trace_tool: self.trace_tool,
            slow_read_tool: self.slow_read_tool,
            docs: self.docs,
            notify_caller_only: self.notify_caller_only,
            serial_calls: self.serial_calls.map(std::time::Duration::from_millis),
            misbehave: super::rogue::Rogue(self.misbehave.clone()),
            flaky: super::flaky::Flaky {
                reset: self.flaky_reset,
                unavailable: self.flaky_unavailable,
                outage: self.flaky_outage,
                seed: self.flaky_seed,
            },
            catalog: None,
        }
    }

    /// [`Args::config`] with the catalogue of `--catalog` read, or why it could not be.
    pub fn load(&self) -> Result<DemoConfig, String> {
        let mut config = self.config();
        if let (Some(path), Some(server)) = (&self.catalog, &self.catalog_server) {
            let served = super::catalog::ServedCatalog::load(path, server)?;
            config.catalog = Some(std::sync::Arc::new(served));
        }
        Ok(config)
    }
}

/// Entry point of the binary.
pub fn main() -> ExitCode {
    run(Args::parse())
}

/// Entry point with explicit arguments (the first is the program name), for
/// `manifold demo-upstream …`.
pub fn main_from<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    run(Args::parse_from(args))
}

fn run(args: Args) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{SERVER_NAME}: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let config = match args.load() {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{SERVER_NAME}: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async {
        match &args.http {
            Some(addr) => super::http::run(config, addr).await,
            None => super::stdio::run(config).await,
        }
    });
    match outcome {
        // Exit right away: a runtime shutdown could wait on the blocking
        // thread tokio uses for stdin.
        Ok(()) => std::process::exit(0),
        Err(error) => {
            eprintln!("{SERVER_NAME}: {error:#}");
            ExitCode::FAILURE
        }
    }
}
