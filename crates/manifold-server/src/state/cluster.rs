//! This replica's handle on `[cluster] redis` (the bus is manifold-cluster's):
//! the bus, and the retries this replica forwarded to the replica holding
//! their call, by correlation id.
//!
//! Invariants: publishing is bounded by manifold-cluster's `OP_TIMEOUT`; a
//! forwarded retry is forgotten when its answer is over or abandoned; without
//! `[cluster] redis` there is no `Cluster`.
//!
//! Not here: what is relayed and what is done with what the others send
//! (`crate::replicas`), the bus itself (manifold-cluster).

use std::collections::HashMap;
use std::sync::Arc;

use manifold_cluster::{Bus, Message, ResumeEvent};
use parking_lot::Mutex;
use tokio::sync::mpsc;
use tokio_util::task::TaskTracker;

/// The bus and the retries this replica forwarded.
pub(crate) struct Cluster {
    pub(crate) bus: Arc<Bus>,
    /// Forwarded retries by correlation id: where their answer's parts go.
    pub(crate) resumes: Mutex<HashMap<String, mpsc::Sender<ResumeEvent>>>,
}

impl Cluster {
    /// The cluster of `[cluster]` (`None` when it names no Redis server): its
    /// messages signed with keys derived from the session keys. `Err` when the
    /// URL or the CA file cannot be used.
    pub(crate) fn new(
        settings: &manifold_config::cluster::ClusterSettings,
    ) -> Result<Option<Cluster>, String> {
        let Some(url) = settings.redis.as_deref() else {
            return Ok(None);
        };
        let ca = match &settings.redis_ca {
            Some(p) => Some(
                std::fs::read(p)
                    .map_err(|e| format!("key `cluster.redis_ca`: `{}`: {e}", p.display()))?,
            ),
            None => None,
        };
        let keys =
            manifold_cluster::Keys::new(&settings.session_key, &settings.previous_session_keys);
        let bus = Bus::new(url, &settings.redis_channel, keys, ca.as_deref())
            .map_err(|e| e.to_string())?;
        Ok(Some(Cluster {
            bus,
            resumes: Mutex::new(HashMap::new()),
        }))
    }

    /// Publishes `message` on a task of `tasks`, logging a failure (for relays
    /// nobody waits on).
    pub(crate) fn publish_later(&self, tasks: &TaskTracker, message: Message) {
        let bus = self.bus.clone();
        tasks.spawn(async move {
            if let Err(e) = bus.publish(message).await {
                tracing::warn!(error = %e, "cluster relay not sent");
            }
        });
    }
}
