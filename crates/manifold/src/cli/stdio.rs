//! `manifold stdio`: the gateway as a stdio MCP server for one desktop client
//! (Claude Desktop, Claude Code, Cursor, VS Code launch it as a command). The
//! same pipeline as `serve` — admission, policy, validation, confirmation,
//! audit — with the local user as the principal (`[stdio] principal`).
//!
//! Invariants: stdout carries only MCP messages (the front door owns it; logs go
//! to stderr); when stdin closes, calls in flight finish, the audit log is
//! flushed and every upstream child is stopped before the process exits. No HTTP
//! listener is opened (`[admin]` is served if configured).
//!
//! Exit codes: 0 after stdin closed, 1 runtime failure, 2 configuration error.

use std::path::Path;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

pub fn run(rt: &tokio::runtime::Runtime, config: &Path) -> ExitCode {
    // No listener: the exposure rules of `serve` do not apply.
    super::run_to_end(rt, config, false, |cfg| serve(cfg, config))
}

async fn serve(cfg: manifold_config::GatewayConfig, path: &Path) -> anyhow::Result<()> {
    // First: logging is set up here, with `[tracing]`'s layer.
    let telemetry = crate::cli::start_telemetry(&cfg)?;
    let connect_timeout = cfg.limits.connect_timeout;
    let shutdown = CancellationToken::new();
    let export = telemetry.as_ref().and_then(|t| t.audit_export());
    let gw = manifold_server::Gateway::launch_exporting(cfg, export, shutdown.clone()).await?;
    gw.set_config_path(path.to_path_buf());
    super::serve::spawn_signal_handler(shutdown);
    super::serve::spawn_reload_on_sighup(gw.clone());
    gw.wait_ready(connect_timeout).await;
    let tools = gw.catalog().tools.len();
    tracing::info!(tools, "Manifold is serving on stdio");
    let input = tokio::io::BufReader::new(tokio::io::stdin());
    gw.serve_stdio_until_done(input, tokio::io::stdout()).await;
    crate::cli::stop_telemetry(telemetry).await;
    tracing::info!("stdin closed; stopped");
    Ok(())
}
