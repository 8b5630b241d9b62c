//! The pin store's keeper: opens `[integrity] store` at start, writes the
//! first-sight pins and pending items the judgements record, looks at the
//! file every [`WATCH_INTERVAL`] (and at a reload) for another process's
//! change (`manifold pins approve`, a restore), approves for the admin plane,
//! and audits every approval and revocation it picks up from the store's
//! journal, with the approving principal.
//!
//! Invariants: every file operation runs on a blocking thread (they take the
//! store's lock, waited for at most `manifold_integrity::file::LOCK_WAIT`);
//! the keeper task is the only writer of the gateway's own updates, so they
//! land in the order they were made; a store that changed is swapped in
//! whole, then every upstream is judged again and clients hear of the lists
//! that changed; a journal entry is audited once per process (those already
//! in the store at start are not audited again).
//!
//! Not here: the judgement (`integrity`), the store's format and the approval
//! rules (manifold-integrity).

use manifold_audit::AuditRecord;
use manifold_config::integrity::IntegritySettings;
use manifold_integrity::{
    Approval, ApproveError, ItemRef, PinStore, Revocation, Selection, StoreError, StoreFile,
    Update, Watch,
};
use parking_lot::Mutex;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;
use tokio::sync::mpsc;

pub(crate) use manifold_integrity::file::WATCH_INTERVAL;

use super::STORE_WRITE_QUEUE;
use crate::state::Gateway;

/// The store a gateway starts with, and its file when there is one.
pub struct Pins {
    pub(crate) store: PinStore,
    pub(crate) watch: Option<Watch>,
}

impl Pins {
    /// Pins in memory only (no `[integrity] store`).
    pub fn in_memory() -> Pins {
        Pins {
            store: PinStore::new(),
            watch: None,
        }
    }

    /// The store of `settings`, loaded (a blocking read: call it from a
    /// blocking thread, or before serving). A missing file is an empty store;
    /// a damaged one is an error.
    pub fn open(settings: &IntegritySettings) -> Result<Pins, StoreError> {
        match &settings.store {
            None => Ok(Pins::in_memory()),
            Some(path) => {
                let (watch, store) = Watch::open(StoreFile::new(path))?;
                Ok(Pins {
                    store,
                    watch: Some(watch),
                })
            }
        }
    }
}

/// Why `POST /pins/approve` approved nothing.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PinsError {
    #[error("{0}")]
    Approve(#[from] ApproveError),
    #[error("{0}")]
    Store(#[from] StoreError),
    #[error("the pin store could not be reached: {0}")]
    Task(String),
}

impl Gateway {
    /// Starts the keeper task (with a store file; without one the gateway's
    /// updates and approvals change the store in memory).
    pub(crate) fn start_keeper(self: &Arc<Self>, watch: Watch) {
        let (tx, rx) = mpsc::channel(STORE_WRITE_QUEUE);
        let watch = Arc::new(Mutex::new(watch));
        let _ = self.integrity.file.set(watch.clone());
        self.integrity.set_writer(tx);
        let gw = self.clone();
        self.life
            .background
            .spawn(async move { gw.keep(watch, rx).await });
    }

    async fn keep(self: Arc<Self>, watch: Arc<Mutex<Watch>>, mut rx: mpsc::Receiver<Update>) {
        let mut tick = tokio::time::interval(WATCH_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        // The last problem logged, so a broken file is logged once per kind
        // of problem, not every interval.
        let mut last_problem: Option<String> = None;
        loop {
            let outcome = tokio::select! {
                _ = self.life.stop.cancelled() => return,
                update = rx.recv() => {
                    let Some(first) = update else { return };
                    let mut batch = vec![first];
                    while let Ok(u) = rx.try_recv() {
                        batch.push(u);
                    }
                    let w = watch.clone();
                    blocking(move || {
                        w.lock()
                            .modify(|s| {
                                for u in &batch {
                                    s.apply(u);
                                }
                            })
                            .map(|(s, ())| Some(s))
                    })
                    .await
                }
                _ = tick.tick() => match self.poll_store(&watch).await {
                    Ok(None) => self.apply_shared_pins(&watch).await,
                    other => other,
                },
                _ = self.integrity.nudge.notified() => self.poll_store(&watch).await,
            };
            match outcome {
                Ok(Some(store)) => {
                    last_problem = None;
                    self.picked_up(store).await;
                }
                Ok(None) => last_problem = None,
                Err(e) => {
                    let text = e.to_string();
                    if last_problem.as_deref() != Some(text.as_str()) {
                        tracing::error!(error = %text, "[integrity] store: cannot use the pin store; the pins in memory stay in force");
                        last_problem = Some(text);
                    }
                }
            }
        }
    }

    async fn poll_store(&self, watch: &Arc<Mutex<Watch>>) -> Result<Option<PinStore>, String> {
        let w = watch.clone();
        blocking(move || w.lock().poll()).await
    }

    /// What the other replicas approved (`[cluster] redis`), applied to the
    /// store file.
    async fn apply_shared_pins(
        &self,
        watch: &Arc<Mutex<Watch>>,
    ) -> Result<Option<PinStore>, String> {
        let Some(mut look) = self.shared_pins().await else {
            return Ok(None);
        };
        let (w, entries) = (watch.clone(), std::mem::take(&mut look.entries));
        let store = blocking(move || {
            w.lock()
                .modify(|s| super::shared::apply_all(s, &entries))
                .map(|(s, ())| s)
        })
        .await?;
        look.done(self);
        Ok(Some(store))
    }

    /// A store read or written: swapped in; what its journal adds is
    /// audited; when pins or pending items changed, every upstream is judged
    /// again and clients hear of the lists that changed.
    pub(crate) async fn picked_up(&self, store: PinStore) {
        let journal: Vec<_> = store
            .journal_after(self.integrity.audited.load(Ordering::Relaxed))
            .to_vec();
        if let Some(last) = journal.last() {
            self.integrity.audited.store(last.seq, Ordering::Relaxed);
        }
        self.share_pins(&journal, &store).await;
        let changed = self.integrity.adopt(store);
        for entry in journal {
            tracing::info!(action = %entry.action, upstream = %entry.upstream, kind = %entry.kind,
                name = %entry.name, fingerprint = %entry.fingerprint, by = %entry.by, "pin store change picked up");
            let mut rec = AuditRecord::new(self.request_id(), format!("pins/{}", entry.action));
            rec.principal = entry.by.clone();
            rec.name = Some(entry.name.clone());
            rec.upstream = Some(entry.upstream.clone());
            rec.original = Some(entry.name.clone());
            rec.arguments = Some(serde_json::json!({
                "kind": entry.kind,
                "fingerprint": entry.fingerprint,
                "previous": entry.previous,
                "seq": entry.seq,
                "at": entry.at,
            }));
            if let Some(a) = &self.auditor {
                if let Err(e) = a.record(rec).await {
                    tracing::error!(error = %e, "an approval could not be audited");
                }
            }
        }
        if changed {
            let rebuilt = self.rebuild_catalog();
            self.announce(&rebuilt);
        }
    }

    /// Approves `selection` as `by` (the admin plane): in the store file under
    /// its lock when there is one, else in memory; then picked up like any
    /// other change of the store.
    pub(crate) async fn approve_pins(
        &self,
        selection: Selection,
        by: String,
    ) -> Result<Vec<Approval>, PinsError> {
        let now = SystemTime::now();
        let (store, approved) = match self.integrity.file.get() {
            Some(w) => {
                let w = w.clone();
                let (store, approved) = tokio::task::spawn_blocking(move || {
                    w.lock().modify(|s| s.approve(&selection, &by, now))
                })
                .await
                .map_err(|e| PinsError::Task(e.to_string()))??;
                (store, approved?)
            }
            None => {
                let mut store = self.integrity.store.lock().clone();
                let approved = store.approve(&selection, &by, now)?;
                (store, approved)
            }
        };
        self.picked_up(store).await;
        Ok(approved)
    }
}

impl Gateway {
    /// Revokes the pins of `items` as `by` (the console), as
    /// [`Gateway::approve_pins`] approves.
    pub(crate) async fn revoke_pins(
        &self,
        items: Vec<ItemRef>,
        by: String,
    ) -> Result<Vec<Revocation>, PinsError> {
        let now = SystemTime::now();
        let (store, revoked) = match self.integrity.file.get() {
            Some(w) => {
                let w = w.clone();
                let (store, revoked) = tokio::task::spawn_blocking(move || {
                    w.lock().modify(|s| s.revoke(&items, &by, now))
                })
                .await
                .map_err(|e| PinsError::Task(e.to_string()))??;
                (store, revoked?)
            }
            None => {
                let mut store = self.integrity.store.lock().clone();
                let revoked = store.revoke(&items, &by, now)?;
                (store, revoked)
            }
        };
        self.picked_up(store).await;
        Ok(revoked)
    }
}

/// Runs `f` on a blocking thread; its error (or the thread's) as text.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, String> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(|e| e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}
