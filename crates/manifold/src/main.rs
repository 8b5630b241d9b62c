//! `manifold`: the gateway binary. Thin: parses the command line, loads the
//! configuration, sets up logging, and hands over to the library crates.
//!
//! Exit codes: 0 clean stop, 1 runtime failure (e.g. the port is taken), 2 bad
//! configuration or command line.

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Default configuration path.
const DEFAULT_CONFIG: &str = "gateway.toml";

#[derive(Parser)]
#[command(
    name = "manifold",
    version,
    about = "An MCP gateway: one endpoint in front of many MCP servers"
)]
struct Cli {
    /// Log format (default: text on a terminal, json otherwise). Filter with RUST_LOG.
    #[arg(long, global = true, value_enum)]
    log_format: Option<LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Json,
    Text,
}

#[derive(Subcommand)]
enum Command {
    /// Run the demo upstream MCP server (what the shipped gateway.toml fronts).
    /// All following arguments go to it; see `manifold demo-upstream --help`.
    #[command(hide = true, disable_help_flag = true)]
    DemoUpstream {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
    /// Run the gateway in the foreground until SIGINT or SIGTERM.
    Serve {
        /// Configuration file.
        #[arg(long, short, default_value = DEFAULT_CONFIG, env = "MANIFOLD_CONFIG")]
        config: PathBuf,
    },
}

fn init_logging(format: Option<LogFormat>) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let json = match format {
        Some(LogFormat::Json) => true,
        Some(LogFormat::Text) => false,
        None => !std::io::stderr().is_terminal(),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder
            .json()
            .flatten_event(true)
            .with_current_span(true)
            .init();
    } else {
        builder.init();
    }
}

/// Set to the running executable before the configuration is loaded, so
/// `command = "${MANIFOLD_SELF}"` works whatever the build profile or install path.
const SELF_VAR: &str = "MANIFOLD_SELF";

fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Command::DemoUpstream { args } = cli.command {
        let argv = std::iter::once(std::ffi::OsString::from("manifold demo-upstream")).chain(args);
        return manifold_testkit::demo::cli::main_from(argv);
    }
    if let Ok(exe) = std::env::current_exe() {
        // Single-threaded here: no other thread reads the environment yet.
        std::env::set_var(SELF_VAR, exe);
    }
    init_logging(cli.log_format);
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("manifold: cannot start the runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match cli.command {
        Command::DemoUpstream { .. } => ExitCode::SUCCESS,
        Command::Serve { config } => {
            let cfg = match manifold_config::load(&config) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("manifold: configuration error: {e}");
                    return ExitCode::from(2);
                }
            };
            match rt.block_on(serve(cfg)) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("manifold: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

async fn serve(cfg: manifold_config::GatewayConfig) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(cfg.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.server.listen))?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}{}", cfg.server.path);
    let connect_timeout = cfg.limits.connect_timeout;
    let upstreams = cfg.upstreams.len();
    let shutdown = CancellationToken::new();
    let gw = manifold_server::Gateway::start(cfg, shutdown.clone());
    spawn_signal_handler(shutdown.clone());
    gw.wait_ready(connect_timeout).await;
    let ready = gw
        .upstreams()
        .iter()
        .filter(|u| u.status().state == manifold_upstream::State::Ready)
        .count();
    let tools = gw.catalog().tools.len();
    tracing::info!(%url, upstreams, ready, tools, "Manifold is serving");
    // One plain line on stdout, for people and for scripts that bind port 0.
    println!("Manifold listening on {url} ({ready}/{upstreams} upstreams ready, {tools} tools)");
    Arc::clone(&gw).serve(listener).await;
    tracing::info!("stopped");
    Ok(())
}

fn spawn_signal_handler(shutdown: CancellationToken) {
    tokio::spawn(async move {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(e) => {
                    tracing::error!(error = %e, "cannot install the SIGTERM handler");
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => tracing::info!("SIGINT received; stopping"),
            _ = term.recv() => tracing::info!("SIGTERM received; stopping"),
        }
        shutdown.cancel();
    });
}
