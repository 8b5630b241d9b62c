//! The binary's commands, one module each: `serve` (the gateway), `stdio` (the
//! gateway for one client on stdin/stdout), `check` and
//! `tools` (what the gateway would expose), `call` (one tool call through the name
//! table), `audit verify` (the audit log's hash chain), `auth hash-key` (the digest
//! of an API key for `[[auth.api_keys]]`), `pins` (approved tool definitions,
//! `[integrity] store`), `credentials` (callers' own upstream accounts),
//! `import` (MCP client configurations into a gateway.toml) and `connect`
//! (a client's entry for this gateway).
//!
//! Invariants: stdout carries only a command's answer (tables, names, JSON); errors
//! and logs go to stderr. Exit codes are a contract: [`FAILED`] for a runtime
//! failure or a problem found, [`USAGE`] for bad configuration or input.
//!
//! Not here: argument parsing and logging setup (`main.rs`).

pub mod admin;
pub mod audit;
pub mod auth;
pub mod call;
pub mod check;
pub mod connect;
pub mod credentials;
pub mod import;
mod inproc;
pub mod login;
pub mod pins;
mod quarantine;
pub mod search;
pub mod serve;
pub mod stdio;
mod table;
pub mod tools;

use clap::Args;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit code for a runtime failure or a problem found.
pub const FAILED: u8 = 1;
/// Exit code for bad configuration, command line or input.
pub const USAGE: u8 = 2;

/// Default configuration path.
pub const DEFAULT_CONFIG: &str = "gateway.toml";

/// `--config PATH`, shared by every command that runs the gateway core.
#[derive(Args)]
pub struct ConfigArg {
    /// Configuration file.
    #[arg(long, short, default_value = DEFAULT_CONFIG, env = "MANIFOLD_CONFIG")]
    pub config: PathBuf,
}

/// Loads and validates the configuration; on error prints it and returns the
/// exit code.
pub fn load_config(path: &Path) -> Result<manifold_config::GatewayConfig, ExitCode> {
    manifold_config::load(path).map_err(|e| {
        eprintln!("manifold: configuration error: {e}");
        ExitCode::from(USAGE)
    })
}

/// One line for a table cell or an error message: control characters (newlines in
/// an upstream's stderr, say) become spaces, so every row stays on one line.
pub fn one_line(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

/// Starts the OTLP exporters when `[tracing]` is configured.
pub(crate) fn start_telemetry(
    cfg: &manifold_config::GatewayConfig,
) -> anyhow::Result<Option<crate::telemetry::Telemetry>> {
    let Some(t) = &cfg.tracing else {
        crate::telemetry::init_deferred(None);
        return Ok(None);
    };
    let audit = cfg.audit.as_ref().is_some_and(|a| a.otlp);
    let (telemetry, layer) = match crate::telemetry::start(t, audit) {
        Ok(started) => started,
        Err(e) => {
            crate::telemetry::init_deferred(None);
            return Err(e);
        }
    };
    crate::telemetry::init_deferred(Some(layer));
    manifold_server::enable_span_export();
    tracing::info!(endpoint = %t.endpoint, sample_ratio = t.sample_ratio, audit, "exporting traces over OTLP");
    Ok(Some(telemetry))
}

/// Flushes the OTLP exporters (off the async threads: the SDK blocks).
pub(crate) async fn stop_telemetry(telemetry: Option<crate::telemetry::Telemetry>) {
    if let Some(t) = telemetry {
        let _ = tokio::task::spawn_blocking(move || t.shutdown()).await;
    }
}

/// The long-running commands' frame (`serve`, `stdio`): load the configuration,
/// run `serve` on the runtime, and turn its end into an exit code.
pub(crate) fn run_to_end<F, Fut>(
    rt: &tokio::runtime::Runtime,
    config: &Path,
    check_exposure: bool,
    serve: F,
) -> ExitCode
where
    F: FnOnce(manifold_config::GatewayConfig) -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let cfg = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let Some(problem) = cfg.exposure_problem().filter(|_| check_exposure) {
        eprintln!(
            "manifold: configuration error: {}: {problem}",
            config.display()
        );
        return ExitCode::from(USAGE);
    }
    match rt.block_on(serve(cfg)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("manifold: {e:#}");
            ExitCode::from(FAILED)
        }
    }
}
