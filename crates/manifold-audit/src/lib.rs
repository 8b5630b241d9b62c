//! The tamper-evident audit log: one JSON line per audited request, each chained to
//! the one before by a SHA-256 hash, written to a rotated file and/or standard output,
//! and checked offline by [`verify()`].
//!
//! ```text
//! {"time":"2025-06-18T09:05:03.123456Z","request_id":"7","session":null,
//!  "principal":"anonymous","client":{"name":"claude-code","version":"1.0"},
//!  "method":"tools/call","name":"github__create_issue","upstream":"github",
//!  "original":"create_issue","arguments_sha256":"…","arguments":{…},"outcome":"ok",
//!  "latency_us":1520,"request_bytes":210,"response_bytes":96,"prev":"…","hash":"…"}
//! ```
//!
//! Use: [`Auditor::start`] with [`AuditSettings`] and a cancellation token; before
//! serving a call, [`Auditor::check`] (refuse with the error if it fails); after it,
//! [`Auditor::record`] and hold the response until that resolves.
//!
//! Modules: [`canonical`] (canonical JSON, digests), [`redact`] (secret keys),
//! [`record`] (the record and its members), [`chain`] (hashing, events), `sink`
//! (file and stream, rotation, crash recovery), `writer` (the queue and the task),
//! [`verify`](mod@verify) (checking a log), [`reader`] (pages of records, newest
//! first, with filters: the console's audit view), [`chain_status`] (the chain
//! checked file by file, resumable as a file grows).
//!
//! Invariants: nothing is dropped to keep up (a bounded queue applies back-pressure);
//! every line of a file is whole and chained; a gap (lost records, a crash, a reset)
//! is itself written into the chain as an event.
//!
//! Not here: deciding what to audit and how a refusal for an unavailable log is
//! answered (the server's pipeline and its refusal table), the settings and their
//! parsing (manifold-config, re-exported here), metrics export.

pub mod canonical;
pub mod chain;
pub mod chain_status;
pub mod reader;
pub mod record;
pub mod redact;
mod sink;
pub mod verify;
mod writer;

#[cfg(test)]
mod testutil;

pub use chain::ZERO_HASH;
/// The settings are configuration (crate manifold-config), re-exported here for
/// users of the writer.
pub use manifold_config::audit::{
    AuditSettings, Fsync, InvalidAuditSettings, OnFailure, DEFAULT_FSYNC,
    DEFAULT_INCLUDE_ARGUMENTS, DEFAULT_KEEP, DEFAULT_MAX_ARGUMENTS_BYTES, DEFAULT_MAX_BYTES,
    DEFAULT_MAX_VALUE_BYTES, DEFAULT_ON_FAILURE, DEFAULT_QUEUE, DEFAULT_REDACT, FSYNC_INTERVAL,
    RETRY_INTERVAL,
};
pub use record::{
    AuditRecord, ClientInfo, Confirmation, Outcome, SizeCap, TaskEvent, TaskStage, ANONYMOUS,
    TRUNCATED, TRUNCATED_KEY,
};
pub use redact::{Redactor, REDACTED};
pub use sink::rotated_path;
pub use verify::{log_files, verify, EventNote, Location, Problem, ProblemKind, VerifyReport};
pub use writer::{AuditStats, Auditor, Export, MAX_BATCH};

use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why auditing (or verifying) failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum AuditError {
    /// A sink cannot be written right now (with `on_failure = "reject"`).
    #[error("audit log unavailable: {reason}")]
    Unavailable { reason: String },
    /// The writer has shut down (or stopped); no more records are taken.
    #[error("audit log unavailable: the audit writer has shut down")]
    Closed,
    #[error("{0}")]
    InvalidSettings(#[from] InvalidAuditSettings),
    /// A reader's cursor names a file that is no longer there (rotated
    /// away), or a position past its end.
    #[error("the audit log has moved on since this page: its file was rotated away; start again from the newest records")]
    StaleCursor,
    /// Reading a log file failed (verification).
    #[error("cannot read audit log {}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: Arc<std::io::Error>,
    },
}

impl AuditError {
    pub(crate) fn io(path: &Path, e: std::io::Error) -> Self {
        AuditError::Io {
            path: path.to_path_buf(),
            source: Arc::new(e),
        }
    }

    /// The log cannot take records now (failing sink or shut down).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, AuditError::Unavailable { .. } | AuditError::Closed)
    }
    pub fn is_closed(&self) -> bool {
        matches!(self, AuditError::Closed)
    }
    pub fn is_invalid_settings(&self) -> bool {
        matches!(self, AuditError::InvalidSettings(_))
    }
    pub fn is_io(&self) -> bool {
        matches!(self, AuditError::Io { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_statuses_and_messages() {
        let unavailable = AuditError::Unavailable {
            reason: "cannot open /x/audit.jsonl: Not a directory (os error 20)".into(),
        };
        assert_eq!(
            unavailable.to_string(),
            "audit log unavailable: cannot open /x/audit.jsonl: Not a directory (os error 20)"
        );
        assert!(unavailable.is_unavailable() && !unavailable.is_closed());
        assert!(AuditError::Closed.is_unavailable() && AuditError::Closed.is_closed());

        let invalid = AuditError::from(InvalidAuditSettings("x".into()));
        assert!(invalid.is_invalid_settings() && !invalid.is_unavailable());
        assert_eq!(invalid.to_string(), "invalid audit settings: x");

        let io = AuditError::io(
            Path::new("/var/log/a.jsonl"),
            std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        );
        assert!(io.is_io());
        assert_eq!(
            io.to_string(),
            "cannot read audit log /var/log/a.jsonl: gone"
        );
        assert!(std::error::Error::source(&io).is_some());
    }
}
