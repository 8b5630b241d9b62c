//! The store file (`[integrity] store`): loaded with errors that name the
//! file and what is wrong with it, changed read-modify-write under a lock so
//! that the gateway and `manifold pins` never lose each other's writes,
//! written atomically, and watched for changes another process made.
//!
//! Invariants:
//! - a write goes to `<store>.tmp`, is fsynced, renamed over the store, and
//!   the directory is fsynced: a crash leaves the old store or the new one,
//!   never a mix; the file is created with mode 0600 (definitions of internal
//!   tools may describe internal systems; run `manifold pins` as the
//!   gateway's user);
//! - every change happens under an exclusive `flock` of `<store>.lock`,
//!   waited for at most [`LOCK_WAIT`], on the store as it is on disk at that
//!   moment (not on a copy read earlier); `revision` goes up by one with each
//!   write, and a change that changes nothing writes nothing;
//! - reads need no lock (the rename is atomic) and read at most
//!   [`MAX_STORE_BYTES`]; a missing file is an empty store; a damaged one is
//!   an error, never an empty store.
//!
//! Everything here blocks (file I/O, the lock wait): call it from a blocking
//! task (`spawn_blocking`), never on an async worker.
//!
//! Not here: what the store means (`store`, `decide`, `approve`), and
//! sharing it between replicas through Redis (the gateway's cluster layer,
//! which can carry [`PinStore::to_vec`] and use `revision` as its
//! compare-and-swap).

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::fcntl::{Flock, FlockArg};

use crate::store::{InvalidStore, PinStore, MAX_STORE_BYTES};

/// The longest a change waits for another process's lock on the store.
pub const LOCK_WAIT: Duration = Duration::from_secs(5);
/// How often the lock is tried again while another process holds it.
const LOCK_RETRY: Duration = Duration::from_millis(20);
/// How often a gateway should look at the store for another process's
/// changes ([`Watch::poll`]): as often as `watch_config` looks at its file.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(2);

/// A store file that cannot be read or written.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: cannot read the pin store: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{}: {reason}", path.display())]
    Invalid { path: PathBuf, reason: InvalidStore },
    #[error("{}: cannot write the pin store: {source}", path.display())]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{}: another process has held its lock ({}) for {waited:?}; try again",
        path.display(),
        lock.display()
    )]
    Busy {
        path: PathBuf,
        lock: PathBuf,
        waited: Duration,
    },
}

impl StoreError {
    /// Whether the file itself is the problem (unreadable or invalid: bad
    /// input, exit code 2), rather than a failure to write or to get the lock.
    pub fn is_bad_file(&self) -> bool {
        matches!(self, StoreError::Read { .. } | StoreError::Invalid { .. })
    }
}

/// What identifies one version of the file on disk (`manifold_foundation::watch`).
pub use manifold_foundation::watch::FileStamp as Stamp;

/// The store at a path.
#[derive(Debug, Clone)]
pub struct StoreFile {
    path: PathBuf,
    lock_wait: Duration,
}

impl StoreFile {
    pub fn new(path: impl Into<PathBuf>) -> StoreFile {
        StoreFile {
            path: path.into(),
            lock_wait: LOCK_WAIT,
        }
    }

    /// Waits at most `wait` for the lock (default [`LOCK_WAIT`]).
    pub fn with_lock_wait(mut self, wait: Duration) -> StoreFile {
        self.lock_wait = wait;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn sibling(&self, suffix: &str) -> PathBuf {
        let mut name = self.path.file_name().unwrap_or_default().to_os_string();
        name.push(suffix);
        self.path.with_file_name(name)
    }

    /// The store as it is on disk (an empty store when there is no file).
    pub fn load(&self) -> Result<PinStore, StoreError> {
        let read = |source| StoreError::Read {
            path: self.path.clone(),
            source,
        };
        let mut f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(PinStore::new()),
            Err(e) => return Err(read(e)),
        };
        let mut bytes = Vec::new();
        Read::by_ref(&mut f)
            .take(MAX_STORE_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(read)?;
        PinStore::from_slice(&bytes).map_err(|reason| StoreError::Invalid {
            path: self.path.clone(),
            reason,
        })
    }

    /// The file's stamp (`None`: no file).
    pub fn stamp(&self) -> Result<Option<Stamp>, StoreError> {
        Stamp::of(&self.path).map_err(|source| StoreError::Read {
            path: self.path.clone(),
            source,
        })
    }

    /// Runs `change` on the store as it is on disk, under the lock, and
    /// writes the result when it differs. Returns the store after the
    /// change (with whatever other processes wrote before) and `change`'s
    /// result.
    pub fn modify<R>(
        &self,
        change: impl FnOnce(&mut PinStore) -> R,
    ) -> Result<(PinStore, R), StoreError> {
        self.modify_stamped(change).map(|(s, r, _)| (s, r))
    }

    /// [`StoreFile::modify`], with the file's stamp taken under the lock.
    fn modify_stamped<R>(
        &self,
        change: impl FnOnce(&mut PinStore) -> R,
    ) -> Result<(PinStore, R, Option<Stamp>), StoreError> {
        let _lock = self.lock()?;
        let mut store = self.load()?;
        let before = store.clone();
        let result = change(&mut store);
        if store != before {
            store.revision = before.revision + 1;
            self.write(&store)?;
        }
        let stamp = self.stamp()?;
        Ok((store, result, stamp))
    }

    fn lock(&self) -> Result<Flock<File>, StoreError> {
        let path = self.sibling(".lock");
        let write = |source| StoreError::Write {
            path: self.path.clone(),
            source,
        };
        let started = Instant::now();
        loop {
            let f = open_private(&path, false).map_err(write)?;
            match Flock::lock(f, FlockArg::LockExclusiveNonblock) {
                Ok(locked) => return Ok(locked),
                Err((_, Errno::EWOULDBLOCK)) if started.elapsed() < self.lock_wait => {
                    std::thread::sleep(LOCK_RETRY);
                }
                Err((_, Errno::EWOULDBLOCK)) => {
                    return Err(StoreError::Busy {
                        path: self.path.clone(),
                        lock: path,
                        waited: started.elapsed(),
                    })
                }
                Err((_, e)) => return Err(write(std::io::Error::from(e))),
            }
        }
    }

    /// Writes aside, fsyncs, renames over the store, fsyncs the directory.
    /// Only under the lock.
    fn write(&self, store: &PinStore) -> Result<(), StoreError> {
        let bytes = store.to_vec().map_err(|reason| StoreError::Invalid {
            path: self.path.clone(),
            reason,
        })?;
        let write = |source| StoreError::Write {
            path: self.path.clone(),
            source,
        };
        let aside = self.sibling(".tmp");
        let mut f = open_private(&aside, true).map_err(write)?;
        f.write_all(&bytes).map_err(write)?;
        f.sync_all().map_err(write)?;
        drop(f);
        std::fs::rename(&aside, &self.path).map_err(write)?;
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        File::open(dir).and_then(|d| d.sync_all()).map_err(write)
    }
}

/// Opens (creating with mode 0600) for writing; `truncate` empties it.
fn open_private(path: &Path, truncate: bool) -> std::io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(truncate)
        .mode(0o600)
        .open(path)
}

/// A gateway's view of the store file: its own changes go through
/// [`Watch::modify`]; [`Watch::poll`] reports the store when another process
/// (`manifold pins`, another replica on a shared volume, a restore) changed
/// the file.
#[derive(Debug)]
pub struct Watch {
    file: StoreFile,
    seen: Option<Stamp>,
}

impl Watch {
    /// Loads the store and starts watching its file.
    pub fn open(file: StoreFile) -> Result<(Watch, PinStore), StoreError> {
        let seen = file.stamp()?;
        let store = file.load()?;
        Ok((Watch { file, seen }, store))
    }

    pub fn file(&self) -> &StoreFile {
        &self.file
    }

    /// The store, when the file changed since this watch last read or wrote
    /// it; `None` when it did not. Call every [`WATCH_INTERVAL`], and on a
    /// reload.
    pub fn poll(&mut self) -> Result<Option<PinStore>, StoreError> {
        let now = self.file.stamp()?;
        if now == self.seen {
            return Ok(None);
        }
        let store = self.file.load()?;
        self.seen = now;
        Ok(Some(store))
    }

    /// [`StoreFile::modify`]; the store returned is the latest (other
    /// processes' changes included): swap it in. The next [`Watch::poll`]
    /// reports only changes made after this one.
    pub fn modify<R>(
        &mut self,
        change: impl FnOnce(&mut PinStore) -> R,
    ) -> Result<(PinStore, R), StoreError> {
        let (store, result, stamp) = self.file.modify_stamped(change)?;
        self.seen = stamp;
        Ok((store, result))
    }
}

#[cfg(test)]
mod tests;
