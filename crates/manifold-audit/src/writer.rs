//! The [`Auditor`]: a cloneable handle that queues records for one writer task, which
//! seals them into the chain and appends them to every sink.
//!
//! Threading: the writer is an async task that owns the queue's receiving end and a
//! timer; file I/O never runs on the async workers. Each batch (every record waiting
//! in the queue, up to [`MAX_BATCH`]) is handed to `spawn_blocking` as one job, which
//! seals and appends the whole batch with one `write` (and, with `fsync = "always"`,
//! one sync: records that arrive together share it, a group commit). A dedicated
//! thread would do too, but the blocking-pool hop per *batch* is cheap, keeps the
//! writer a plain tokio task with a [`JoinHandle`], and lets the timer (interval
//! fsync, retries) and shutdown live in one `select!`.
//!
//! Invariants:
//! - the queue is bounded (`queue`); when it is full [`Auditor::record`] waits, it
//!   never drops a record;
//! - `record` resolves `Ok` only once the record is in every sink (synced with
//!   `fsync = "always"`); it resolves `Err` (reject) or `Ok` + `lost` (continue)
//!   otherwise. A record reported as failed may still be in a sink, never the
//!   reverse. Dropping the `record` future after it was queued does not unqueue it;
//! - one batch at a time: the state moves into the blocking job and back, so
//!   sealing order is queue order and no lock is ever held across `.await`;
//! - a failing sink is retried with every new batch and every [`RETRY_INTERVAL`];
//!   while it fails, [`Auditor::check`] errs (reject). When it recovers it first
//!   writes a `records_lost` event counting what it missed, so gaps are in the chain;
//! - shutdown (the token) stops accepting records, writes everything already queued,
//!   syncs (unless `fsync = "never"`) and closes; the task then ends.
//!
//! Each sink keeps its own chain link (a sink that missed records cannot continue
//! another's chain); standard output starts from the file's link, so while both are
//! healthy they carry identical lines.
//!
//! Not here: what a record contains (`record`), file layout (`sink`).

use crate::chain::{self, EVENT_RECORDS_LOST, ZERO_HASH};
use crate::error::AuditError;
use crate::record::AuditRecord;
use crate::redact::Redactor;
use crate::sink::{FileSink, Sink, StreamSink};
use manifold_config::audit::{AuditSettings, Fsync, OnFailure, RETRY_INTERVAL};
use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Most records sealed and written in one blocking job.
pub const MAX_BATCH: usize = 512;

/// Counters for metrics and health.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AuditStats {
    /// Records written to every sink.
    pub written: u64,
    /// Records that did not reach every sink (in either `on_failure` mode; with
    /// `reject` their callers were told).
    pub lost: u64,
    /// Records waiting in the queue.
    pub queue_depth: usize,
}

/// What the handles and the writer share.
struct Shared {
    on_failure: OnFailure,
    failing: AtomicBool,
    failure: Mutex<Option<String>>,
    written: AtomicU64,
    lost: AtomicU64,
}

impl Shared {
    fn reason(&self) -> String {
        self.failure
            .lock()
            .clone()
            .unwrap_or_else(|| "the audit sink is failing".into())
    }
}

struct Job {
    entry: Map<String, Value>,
    ack: oneshot::Sender<Result<(), AuditError>>,
}

/// Where a copy of every written line goes besides the sinks (an OTLP log
/// exporter). Called on the writer's thread after the line is in the first
/// sink, so it must not block: queue and return. The file stays the record of
/// truth; an export that fails loses nothing there.
pub trait Export: Send + Sync + 'static {
    /// One line as written (JSON, with `prev` and `hash`) and its hash.
    fn export(&self, line: &[u8], hash: &str);
}

/// The handle the gateway audits through. Cheap to clone.
#[derive(Clone)]
pub struct Auditor {
    tx: mpsc::Sender<Job>,
    shared: Arc<Shared>,
    redactor: Arc<Redactor>,
    cap: crate::record::SizeCap,
    include_arguments: bool,
}

impl std::fmt::Debug for Auditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Auditor")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl Auditor {
    /// Validates `settings`, opens the sinks (continuing the chain of an existing
    /// file) and starts the writer task, which runs until `shutdown` is cancelled (or
    /// every handle is dropped) and has drained the queue. Needs a tokio runtime.
    ///
    /// A sink that cannot be opened does not make this fail: the writer keeps
    /// retrying it, and [`Auditor::check`] reports it meanwhile. Only invalid
    /// settings do.
    pub async fn start(
        settings: AuditSettings,
        shutdown: CancellationToken,
    ) -> Result<(Auditor, JoinHandle<()>), AuditError> {
        Self::start_exporting(settings, None, shutdown).await
    }

    /// [`Auditor::start`], also handing each line of the first sink's chain
    /// (with its hash) to `export` once it is written (`[audit] otlp`).
    pub async fn start_exporting(
        settings: AuditSettings,
        export: Option<Arc<dyn Export>>,
        shutdown: CancellationToken,
    ) -> Result<(Auditor, JoinHandle<()>), AuditError> {
        settings.validate()?;
        let mut sinks: Vec<Box<dyn Sink>> = Vec::new();
        if let Some(path) = &settings.path {
            sinks.push(Box::new(FileSink::new(
                path.clone(),
                settings.max_bytes,
                settings.keep,
                settings.fsync,
            )));
        }
        if settings.stdout {
            sinks.push(Box::new(StreamSink::stdout()));
        }
        Self::start_with_sinks(&settings, sinks, export, shutdown).await
    }

    pub(crate) async fn start_with_sinks(
        settings: &AuditSettings,
        sinks: Vec<Box<dyn Sink>>,
        export: Option<Arc<dyn Export>>,
        shutdown: CancellationToken,
    ) -> Result<(Auditor, JoinHandle<()>), AuditError> {
        settings.validate()?;
        let shared = Arc::new(Shared {
            on_failure: settings.on_failure,
            failing: AtomicBool::new(false),
            failure: Mutex::new(None),
            written: AtomicU64::new(0),
            lost: AtomicU64::new(0),
        });
        let state = Arc::new(Mutex::new(WriterState {
            export,
            slots: sinks.into_iter().map(Slot::new).collect(),
            fsync: settings.fsync,
            shared: shared.clone(),
        }));
        // Open before returning, so `check` tells the truth from the start.
        blocking(&state, WriterState::open_all).await;
        let (tx, rx) = mpsc::channel(settings.queue);
        let handle = tokio::spawn(run(state, rx, shutdown));
        let auditor = Auditor {
            tx,
            shared,
            redactor: Arc::new(Redactor::new(&settings.redact)),
            cap: crate::record::SizeCap {
                max_value_bytes: settings.max_value_bytes,
                max_arguments_bytes: settings.max_arguments_bytes,
            },
            include_arguments: settings.include_arguments,
        };
        Ok((auditor, handle))
    }

    /// `Err` when new requests should be refused: the writer has shut down, or
    /// (with `on_failure = "reject"`) a sink is failing right now.
    pub fn check(&self) -> Result<(), AuditError> {
        if self.tx.is_closed() {
            return Err(AuditError::Closed);
        }
        if self.shared.on_failure == OnFailure::Reject
            && self.shared.failing.load(Ordering::Acquire)
        {
            return Err(AuditError::Unavailable {
                reason: self.shared.reason(),
            });
        }
        Ok(())
    }

    /// Queues `record` (digest and redaction happen here, on the caller's task) and
    /// resolves once it is written, and synced with `fsync = "always"`. Waits while
    /// the queue is full. With `on_failure = "continue"` a record that could not be
    /// written still resolves `Ok` (and counts as lost).
    pub async fn record(&self, record: AuditRecord) -> Result<(), AuditError> {
        let entry = record.to_entry(&self.redactor, self.include_arguments, &self.cap);
        let (ack, done) = oneshot::channel();
        self.tx
            .send(Job { entry, ack })
            .await
            .map_err(|_| AuditError::Closed)?;
        done.await.unwrap_or(Err(AuditError::Closed))
    }

    pub fn stats(&self) -> AuditStats {
        AuditStats {
            written: self.shared.written.load(Ordering::Relaxed),
            lost: self.shared.lost.load(Ordering::Relaxed),
            queue_depth: self.tx.max_capacity() - self.tx.capacity(),
        }
    }
}

/// Runs `f` on the writer state in the blocking pool.
async fn blocking<T: Send + 'static>(
    state: &Arc<Mutex<WriterState>>,
    f: impl FnOnce(&mut WriterState) -> T + Send + 'static,
) -> Option<T> {
    let state = state.clone();
    let job = tokio::task::spawn_blocking(move || {
        let mut st = state.lock();
        f(&mut st)
    });
    match job.await {
        Ok(t) => Some(t),
        Err(e) => {
            tracing::error!(error = %e, "the audit writer job failed");
            None
        }
    }
}

async fn run(
    state: Arc<Mutex<WriterState>>,
    mut rx: mpsc::Receiver<Job>,
    shutdown: CancellationToken,
) {
    let mut tick =
        tokio::time::interval_at(tokio::time::Instant::now() + RETRY_INTERVAL, RETRY_INTERVAL);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut batch = Vec::new();
    loop {
        tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            n = rx.recv_many(&mut batch, MAX_BATCH) => {
                if n == 0 {
                    break; // every handle is gone
                }
                let jobs = std::mem::take(&mut batch);
                blocking(&state, move |st| st.write_batch(jobs)).await;
            }
            _ = tick.tick() => {
                let needed = state.lock().needs_tick();
                if needed {
                    blocking(&state, WriterState::tick).await;
                }
            }
        }
    }
    // Drain: refuse new records, write the queued ones, sync and close.
    rx.close();
    while rx.recv_many(&mut batch, MAX_BATCH).await > 0 {
        let jobs = std::mem::take(&mut batch);
        blocking(&state, move |st| st.write_batch(jobs)).await;
    }
    blocking(&state, WriterState::shutdown).await;
}

/// One sink and its place in the chain.
struct Slot {
    sink: Box<dyn Sink>,
    /// Hash of the last line in this sink.
    prev: String,
    /// Events to write before the next records.
    pending: Vec<Map<String, Value>>,
    /// Records this sink missed that no `records_lost` event counts yet.
    missed: u64,
    /// Written since the last sync.
    unsynced: bool,
    failure: Option<String>,
}

impl Slot {
    fn new(sink: Box<dyn Sink>) -> Self {
        Slot {
            sink,
            prev: ZERO_HASH.to_string(),
            pending: Vec::new(),
            missed: 0,
            unsynced: false,
            failure: None,
        }
    }

    /// Opens the sink; returns whether it said where its chain stands.
    fn open(&mut self) -> Result<bool, String> {
        let opened = self.sink.open().map_err(|e| e.to_string())?;
        let has_prev = opened.prev.is_some();
        if let Some(prev) = opened.prev {
            self.prev = prev;
        }
        let older = std::mem::replace(&mut self.pending, opened.events);
        self.pending.extend(older);
        Ok(has_prev)
    }

    /// Writes pending events, then `entries`; syncs with `fsync = "always"`.
    fn write(
        &mut self,
        entries: &[&Map<String, Value>],
        fsync: Fsync,
    ) -> Result<Vec<crate::chain::Sealed>, String> {
        if !self.sink.is_open() {
            if let Err(e) = self.open() {
                self.missed += entries.len() as u64;
                return Err(e);
            }
        }
        if self.missed > 0 {
            let count = std::mem::take(&mut self.missed);
            self.pending
                .push(chain::event(EVENT_RECORDS_LOST, [("count", json!(count))]));
        }
        let n_events = self.pending.len();
        let mut sealed = Vec::with_capacity(n_events + entries.len());
        let mut prev = self.prev.clone();
        for entry in self.pending.iter().chain(entries.iter().copied()) {
            let s = chain::seal(entry, &prev);
            prev.clone_from(&s.hash);
            sealed.push(s);
        }
        let result = self.sink.append(&sealed);
        let appended = match &result {
            Ok(()) => sealed.len(),
            Err((n, _)) => *n,
        };
        if let Some(last) = appended.checked_sub(1).and_then(|i| sealed.get(i)) {
            self.prev.clone_from(&last.hash);
            self.unsynced = true;
        }
        self.pending.drain(..appended.min(n_events));
        if let Err((_, e)) = result {
            let records_in = appended.saturating_sub(n_events);
            self.missed += (entries.len() - records_in) as u64;
            return Err(e.to_string());
        }
        if fsync == Fsync::Always {
            self.sync()?;
        }
        Ok(sealed)
    }

    fn sync(&mut self) -> Result<(), String> {
        if !self.unsynced {
            return Ok(());
        }
        match self.sink.sync() {
            Ok(()) => {
                self.unsynced = false;
                Ok(())
            }
            Err(e) => {
                // After a failed sync the file's state is unknown: reopen and rescan.
                self.sink.close();
                self.unsynced = false;
                Err(e.to_string())
            }
        }
    }

    fn set_result(&mut self, result: Result<(), String>) {
        match (result, &self.failure) {
            (Ok(()), None) => {}
            (Ok(()), Some(_)) => {
                tracing::info!("the audit log is writable again");
                self.failure = None;
            }
            (Err(e), was) => {
                if was.is_none() {
                    tracing::error!(error = %e, "the audit log cannot be written");
                }
                self.failure = Some(e);
            }
        }
    }
}

struct WriterState {
    /// `[audit] otlp`: where the first sink's lines are copied.
    export: Option<Arc<dyn Export>>,
    slots: Vec<Slot>,
    fsync: Fsync,
    shared: Arc<Shared>,
}

impl WriterState {
    /// First open: the file decides the chain; streams start where it stands.
    fn open_all(&mut self) {
        let mut file_link: Option<(String, Vec<Map<String, Value>>)> = None;
        for slot in &mut self.slots {
            match slot.open() {
                Ok(true) => file_link = Some((slot.prev.clone(), slot.pending.clone())),
                Ok(false) => {
                    if let Some((prev, pending)) = &file_link {
                        slot.prev.clone_from(prev);
                        slot.pending.clone_from(pending);
                    }
                }
                Err(e) => slot.set_result(Err(e)),
            }
        }
        // Write recovery events now, so a restart is visible even without traffic.
        for slot in &mut self.slots {
            if slot.failure.is_none() && !slot.pending.is_empty() {
                let r = slot.write(&[], self.fsync);
                slot.set_result(r.map(|_| ()));
            }
        }
        self.publish();
    }

    fn write_batch(&mut self, jobs: Vec<Job>) {
        let entries: Vec<&Map<String, Value>> = jobs.iter().map(|j| &j.entry).collect();
        let mut failure = None;
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let r = slot.write(&entries, self.fsync);
            match &r {
                Err(e) => {
                    failure.get_or_insert_with(|| e.clone());
                }
                // The first sink's chain is the one exported.
                Ok(sealed) if i == 0 => {
                    if let Some(export) = &self.export {
                        for s in sealed {
                            export.export(&s.line, &s.hash);
                        }
                    }
                }
                Ok(_) => {}
            }
            slot.set_result(r.map(|_| ()));
        }
        self.publish();
        let n = jobs.len() as u64;
        let Some(reason) = failure else {
            self.shared.written.fetch_add(n, Ordering::Relaxed);
            for job in jobs {
                let _ = job.ack.send(Ok(()));
            }
            return;
        };
        let lost = self.shared.lost.fetch_add(n, Ordering::Relaxed) + n;
        let reject = self.shared.on_failure == OnFailure::Reject;
        tracing::error!(
            records = n,
            lost_total = lost,
            on_failure = %self.shared.on_failure,
            "audit records not written: {reason}"
        );
        for job in jobs {
            let r = if reject {
                Err(AuditError::Unavailable {
                    reason: reason.clone(),
                })
            } else {
                Ok(())
            };
            let _ = job.ack.send(r);
        }
    }

    fn needs_tick(&self) -> bool {
        self.slots.iter().any(|s| {
            s.failure.is_some()
                || !s.sink.is_open()
                || (self.fsync == Fsync::Interval && s.unsynced)
        })
    }

    /// Interval sync, and a retry of failing sinks (writing what they owe).
    fn tick(&mut self) {
        for slot in &mut self.slots {
            if slot.failure.is_some() || !slot.sink.is_open() {
                let r = slot.write(&[], self.fsync);
                slot.set_result(r.map(|_| ()));
            }
            if self.fsync == Fsync::Interval && slot.failure.is_none() {
                let r = slot.sync();
                slot.set_result(r);
            }
        }
        self.publish();
    }

    fn shutdown(&mut self) {
        for slot in &mut self.slots {
            if self.fsync != Fsync::Never {
                if let Err(e) = slot.sync() {
                    tracing::error!(error = %e, "could not sync the audit log on shutdown");
                }
            }
            slot.sink.close();
        }
    }

    fn publish(&self) {
        let reason = self.slots.iter().find_map(|s| s.failure.clone());
        self.shared
            .failing
            .store(reason.is_some(), Ordering::Release);
        *self.shared.failure.lock() = reason;
    }
}

#[cfg(test)]
mod tests;
