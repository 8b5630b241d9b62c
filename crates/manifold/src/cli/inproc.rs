//! The gateway core run in-process for the one-shot commands (`check`, `tools`,
//! `call`): every upstream connected and the catalog built, but no listener.
//!
//! Invariants: [`InProcess::stop`] cancels the shutdown token and waits, bounded by
//! [`STOP_LIMIT`], until every upstream actor has stopped (stdio children closed and
//! reaped), so a command never leaves a child behind on a clean exit.

use manifold_server::Gateway;
use manifold_upstream::{State, Upstream};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long [`InProcess::stop`] waits for the upstreams to stop.
pub const STOP_LIMIT: Duration = Duration::from_secs(5);

pub struct InProcess {
    pub gw: Arc<Gateway>,
    shutdown: CancellationToken,
}

impl InProcess {
    /// Starts every upstream and waits up to `limits.connect_timeout` for each to
    /// become ready or fail once (what `serve` does before it listens).
    pub async fn start(cfg: manifold_config::GatewayConfig) -> InProcess {
        let connect_timeout = cfg.limits.connect_timeout;
        let shutdown = CancellationToken::new();
        let gw = Gateway::start(cfg, shutdown.clone());
        gw.wait_ready(connect_timeout).await;
        InProcess { gw, shutdown }
    }

    pub fn upstreams(&self) -> Vec<Upstream> {
        self.gw.upstreams()
    }

    /// The upstreams that are not ready right now.
    pub fn not_ready(&self) -> Vec<Upstream> {
        self.upstreams()
            .into_iter()
            .filter(|u| u.status().state != State::Ready)
            .collect()
    }

    /// Stops the gateway core: cancels the token and waits (bounded) for every
    /// upstream actor to reach `stopped`.
    pub async fn stop(self) {
        self.shutdown.cancel();
        let all_stopped = async {
            for u in self.gw.upstreams() {
                let mut rx = u.watch_status();
                // Err: the actor is gone, which is stopped too.
                let _ = rx.wait_for(|s| s.state == State::Stopped).await;
            }
        };
        if tokio::time::timeout(STOP_LIMIT, all_stopped).await.is_err() {
            let running: Vec<String> = self
                .gw
                .upstreams()
                .iter()
                .filter(|u| u.status().state != State::Stopped)
                .map(|u| u.name().to_string())
                .collect();
            tracing::warn!(upstreams = ?running, limit = ?STOP_LIMIT,
                "upstreams did not stop in time; leaving them to the exit");
        }
    }
}
