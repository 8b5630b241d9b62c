//! Starting an upstream's actor: at start for every configured upstream, and
//! when a reload adds or changes one.
//!
//! Invariants: each upstream runs under its own stop token, a child of the
//! gateway's `stop`, so a reload can stop one alone and shutdown stops them
//! all; its task is tracked.
//!
//! Not here: the actor itself (manifold-upstream), deciding which upstreams a
//! reload starts (`reload`).

use manifold_config::GatewayConfig;
use manifold_upstream::Upstream;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Starts one upstream under its own stop token (a child of `stop`, so a
/// reload can stop it alone and shutdown stops them all).
pub(crate) fn spawn_upstream(
    u: &manifold_config::UpstreamConfig,
    config: &GatewayConfig,
    events: &mpsc::Sender<manifold_upstream::UpstreamEvent>,
    stop: &CancellationToken,
    tasks: &TaskTracker,
) -> (Upstream, CancellationToken) {
    let token = stop.child_token();
    let up = Upstream::spawn(
        u.clone(),
        config.limits.clone(),
        events.clone(),
        token.clone(),
        tasks,
    );
    (up, token)
}
