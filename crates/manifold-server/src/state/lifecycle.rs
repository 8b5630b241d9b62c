//! The gateway's lifecycle: its shutdown in three steps (stop accepting,
//! stop the work, close the audit log) and the background work it waits for.
//!
//! Invariants: every tokio task the gateway spawns is tracked by
//! [`Lifecycle::background`] and ends with [`Lifecycle::stop`] (or, for the
//! audit writer, [`Lifecycle::audit_stop`]), so shutdown waits for all of
//! them; the three tokens are cancelled in order, never the other way round.
//!
//! Not here: what runs (`runtime`), the shutdown's grace (`runtime::shutdown`).

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// The tokens and the tracker of the gateway's life.
pub(crate) struct Lifecycle {
    /// Cancelled when shutdown begins: the front door stops accepting, readiness
    /// goes false, calls in flight get `server.shutdown_grace` to finish.
    pub shutdown: CancellationToken,
    /// Cancelled when the grace is over (or nothing is left in flight): upstreams
    /// stop, relays and held calls are cancelled (and audited as such).
    pub stop: CancellationToken,
    /// Cancelled last, once every other task has ended: the audit writer drains its
    /// queue and closes.
    pub audit_stop: CancellationToken,
    /// The gateway's own background work (relays, pumps, audit writes,
    /// watchers). ("Task" alone means an MCP task: `Gateway::mcp_tasks`.)
    pub background: TaskTracker,
    /// The audit writer's task, awaited last.
    pub audit_task: Mutex<Option<tokio::task::JoinHandle<()>>>,
}
