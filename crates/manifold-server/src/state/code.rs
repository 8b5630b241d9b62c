//! Code mode's pool: turns for scripts (`[code] workers` at once, each in its
//! own worker process), a bounded queue of scripts waiting for one
//! (`[code] max_queued`; one more is refused at once), and the program a
//! worker is.
//!
//! Invariants: a turn is held for the whole life of one worker process and
//! given back when the script ends, whatever the exit (its permit drops);
//! waiting scripts are counted, never unbounded.
//!
//! Not here: running a script (`handlers/code/`).

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// The program of a worker and its first arguments (before the limits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerProgram {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

/// Scripts' turns and the worker program.
pub(crate) struct CodePool {
    turns: Arc<Semaphore>,
    waiting: AtomicUsize,
    max_queued: usize,
    program: OnceLock<WorkerProgram>,
    /// One worker started ahead of its script (its program, its limits),
    /// waiting for it: a script's turn takes it instead of starting one.
    spare: parking_lot::Mutex<Option<(Spare, Box<dyn std::any::Any + Send>)>>,
    /// Scripts paused for a 2026-07-28 client's input, by the `requestState`
    /// the client was given: each holds its worker and its turn, so there are
    /// at most `workers`, and each leaves at its script's deadline.
    pub(crate) paused: Paused,
}

/// What a paused script is held as (the code handler's own value) and whose
/// it is (the owner the retry must be).
type Held = (String, Box<dyn std::any::Any + Send>);

/// Paused scripts (see [`CodePool::paused`]).
#[derive(Default)]
pub(crate) struct Paused(parking_lot::Mutex<std::collections::HashMap<String, Held>>);

impl Paused {
    /// Holds `script` for `owner` under `token`.
    pub(crate) fn hold(&self, token: String, owner: String, script: Box<dyn std::any::Any + Send>) {
        self.0.lock().insert(token, (owner, script));
    }

    /// The script held under `token` for `owner`; `None` when there is none
    /// (never held, taken, expired) or it is another owner's (then it stays).
    pub(crate) fn take(&self, token: &str, owner: &str) -> Option<Box<dyn std::any::Any + Send>> {
        let mut map = self.0.lock();
        if map.get(token).is_none_or(|(o, _)| o != owner) {
            return None;
        }
        map.remove(token).map(|(_, s)| s)
    }

    /// Takes the script held under `token` whoever's it is (its deadline
    /// passed): dropping it kills its worker and gives its turn back.
    pub(crate) fn expire(&self, token: &str) -> Option<Box<dyn std::any::Any + Send>> {
        self.0.lock().remove(token).map(|(_, s)| s)
    }
}

/// Every worker is busy and `max_queued` scripts already wait.
#[derive(Debug)]
pub(crate) struct Busy {
    pub workers: usize,
    pub max_queued: usize,
}

/// Takes one waiting script off the count when it stops waiting.
struct Waiting<'a>(&'a AtomicUsize);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl CodePool {
    pub(crate) fn new(cfg: &manifold_config::code::CodeConfig) -> CodePool {
        CodePool {
            turns: Arc::new(Semaphore::new(cfg.workers)),
            waiting: AtomicUsize::new(0),
            max_queued: cfg.max_queued,
            program: OnceLock::new(),
            paused: Paused::default(),
            spare: parking_lot::Mutex::new(None),
        }
    }

    /// A turn to run one script: at once, after those waiting, or refused
    /// when the queue is full (`workers` for the message).
    pub(crate) async fn turn(&self, workers: usize) -> Result<OwnedSemaphorePermit, Busy> {
        if let Ok(p) = self.turns.clone().try_acquire_owned() {
            return Ok(p);
        }
        let busy = Busy {
            workers,
            max_queued: self.max_queued,
        };
        if self.waiting.fetch_add(1, Ordering::Relaxed) >= self.max_queued {
            self.waiting.fetch_sub(1, Ordering::Relaxed);
            return Err(busy);
        }
        let _waiting = Waiting(&self.waiting);
        // The semaphore is never closed.
        self.turns.clone().acquire_owned().await.map_err(|_| busy)
    }

    /// Sets the worker program (tests: the one in the target directory).
    /// The first setting stays.
    pub(crate) fn set_program(&self, program: WorkerProgram) {
        let _ = self.program.set(program);
    }

    /// The worker program: `[code] worker`, else as set, else
    /// [`WORKER_NAME`] next to this executable.
    pub(crate) fn program(&self, configured: Option<&std::path::Path>) -> WorkerProgram {
        if let Some(p) = configured {
            return WorkerProgram {
                program: p.to_path_buf(),
                args: Vec::new(),
            };
        }
        self.program
            .get()
            .cloned()
            .unwrap_or_else(|| WorkerProgram {
                program: default_worker(),
                args: Vec::new(),
            })
    }
}

/// What a worker is started with: a spare serves only a script that would
/// start the same.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Spare {
    pub program: WorkerProgram,
    pub address_space: u64,
    pub cpu_seconds: u64,
}

impl CodePool {
    /// The spare worker, if it was started as `spare` says (one started
    /// otherwise — a reload changed the limits — is dropped: killed).
    pub(crate) fn take_spare(&self, spare: &Spare) -> Option<Box<dyn std::any::Any + Send>> {
        let held = self.spare.lock().take();
        match held {
            Some((s, w)) if s == *spare => Some(w),
            _ => None,
        }
    }

    /// Whether a spare worker waits.
    pub(crate) fn has_spare(&self) -> bool {
        self.spare.lock().is_some()
    }

    /// Keeps `worker`, started as `spare` says, for the next script; when
    /// another was kept meanwhile, the newer one is dropped (killed) instead,
    /// after the lock is released. A spare of other limits is replaced.
    pub(crate) fn keep_spare(&self, spare: Spare, worker: Box<dyn std::any::Any + Send>) {
        let extra = {
            let mut slot = self.spare.lock();
            match slot.as_ref() {
                Some((held, _)) if *held == spare => Some(worker),
                _ => slot.replace((spare, worker)).map(|(_, w)| w),
            }
        };
        drop(extra);
    }
}

/// The worker's file name.
pub const WORKER_NAME: &str = "manifold-code-worker";

/// [`WORKER_NAME`] next to this executable (where `scripts/build-code-worker`
/// and an install put it).
pub fn default_worker() -> PathBuf {
    let name = format!("{WORKER_NAME}{}", std::env::consts::EXE_SUFFIX);
    match std::env::current_exe() {
        Ok(exe) => exe.with_file_name(name),
        Err(_) => PathBuf::from(name),
    }
}
