//! `manifold serve`: run the gateway in the foreground until SIGINT or SIGTERM.

use anyhow::Context;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

pub fn run(rt: &tokio::runtime::Runtime, config: &Path) -> ExitCode {
    super::run_to_end(rt, config, true, |cfg| serve(cfg, config))
}

async fn serve(cfg: manifold_config::GatewayConfig, path: &Path) -> anyhow::Result<()> {
    // First: logging is set up here, with `[tracing]`'s layer.
    let telemetry = crate::cli::start_telemetry(&cfg)?;
    let authenticated = cfg.auth.as_ref().is_some_and(|a| !a.allow_anonymous);
    if authenticated {
        tracing::info!(listen = %cfg.server.listen, "clients authenticate ([auth])");
    } else if cfg.server.listen.ip().is_loopback() {
        tracing::warn!(listen = %cfg.server.listen,
            "serving without authentication: every local user and process that can reach the port acts with the upstreams' credentials");
    } else {
        tracing::warn!(listen = %cfg.server.listen,
            "serving a non-loopback listener WITHOUT AUTHENTICATION (server.allow_unauthenticated = true): anyone who can reach the port acts with the upstreams' credentials");
    }
    let listener = tokio::net::TcpListener::bind(cfg.server.listen)
        .await
        .with_context(|| format!("cannot listen on {}", cfg.server.listen))?;
    let addr = listener.local_addr()?;
    let scheme = if cfg.server.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let url = format!("{scheme}://{addr}{}", cfg.server.path);
    let control = match &cfg.admin {
        Some(a) if a.has_credentials() => {
            "/config, /upstreams, /catalog, /reload and the console at /ui with credentials"
        }
        _ => "/config, /upstreams, /catalog, /reload and the console at /ui with the local admin token (manifold admin token)",
    };
    let connect_timeout = cfg.limits.connect_timeout;
    let upstreams = cfg.upstreams.len();
    let shutdown = CancellationToken::new();
    let export = telemetry.as_ref().and_then(|t| t.audit_export());
    let gw = manifold_server::Gateway::launch_exporting(cfg, export, shutdown.clone()).await?;
    gw.set_config_path(path.to_path_buf());
    let admin = gw.bind_admin().await.context("the [admin] listener")?;
    spawn_signal_handler(shutdown.clone());
    spawn_reload_on_sighup(gw.clone());
    gw.wait_ready(connect_timeout).await;
    let collisions = gw.own_name_collisions();
    if !collisions.is_empty() {
        shutdown.cancel();
        anyhow::bail!(
            "[[endpoint]] naming = \"original\" serves items under their upstreams' own names, \
             and some collide: {}. Give each of those upstreams its own [[endpoint]], or \
             filter the endpoint's `tools`/`prompts`",
            collisions.join("; ")
        );
    }
    let ready = gw
        .upstreams()
        .iter()
        .filter(|u| u.status().state == manifold_upstream::State::Ready)
        .count();
    let tools = gw.catalog().tools.len();
    tracing::info!(%url, upstreams, ready, tools, "Manifold is serving");
    // One plain line on stdout, for people and for scripts that bind port 0.
    println!("Manifold listening on {url} ({ready}/{upstreams} upstreams ready, {tools} tools)");
    if let Some(a) = admin {
        println!("Manifold admin on http://{a} (/metrics, /healthz, /readyz; {control})");
    }
    if let Some(link) = gw.console_login_link() {
        // Printed once, to this terminal only (never logged): the link logs
        // in once, within LOGIN_LINK_LIFETIME.
        println!(
            "Manifold console: open {link} (one-time login link, valid {} min)",
            manifold_server::LOGIN_LINK_LIFETIME.as_secs() / 60
        );
    }
    Arc::clone(&gw).serve(listener).await;
    crate::cli::stop_telemetry(telemetry).await;
    tracing::info!("stopped");
    Ok(())
}

/// SIGHUP reloads the configuration file (errors are logged; the old
/// configuration keeps serving).
pub(crate) fn spawn_reload_on_sighup(gw: Arc<manifold_server::Gateway>) {
    tokio::spawn(async move {
        let mut hup = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()) {
            Ok(s) => s,
            Err(e) => {
                tracing::error!(error = %e, "cannot install the SIGHUP handler; reload with POST /reload");
                return;
            }
        };
        while hup.recv().await.is_some() {
            tracing::info!("SIGHUP received; reloading the configuration");
            let _ = gw.reload_from_file().await;
        }
    });
}

pub(crate) fn spawn_signal_handler(shutdown: CancellationToken) {
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
