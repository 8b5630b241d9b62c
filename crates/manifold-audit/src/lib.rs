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
mod error;
pub mod reader;
pub mod record;
pub mod redact;
mod sink;
pub mod verify;
mod writer;

#[cfg(test)]
mod testutil;

pub use chain::ZERO_HASH;
pub use error::AuditError;
/// The settings are configuration (crate manifold-config), re-exported here for
/// users of the writer.
pub use manifold_config::audit::{
    AuditSettings, Fsync, InvalidAuditSettings, OnFailure, DEFAULT_FSYNC,
    DEFAULT_INCLUDE_ARGUMENTS, DEFAULT_KEEP, DEFAULT_MAX_ARGUMENTS_BYTES, DEFAULT_MAX_BYTES,
    DEFAULT_MAX_VALUE_BYTES, DEFAULT_ON_FAILURE, DEFAULT_QUEUE, DEFAULT_REDACT, FSYNC_INTERVAL,
    RETRY_INTERVAL,
};
pub use record::{
    AuditRecord, ClientInfo, Confirmation, Outcome, ScriptEvent, SizeCap, TaskEvent, TaskStage,
    ANONYMOUS, TRUNCATED, TRUNCATED_KEY,
};
pub use redact::{Redactor, REDACTED};
pub use sink::rotated_path;
pub use verify::{log_files, verify, EventNote, Location, Problem, ProblemKind, VerifyReport};
pub use writer::{AuditStats, Auditor, Export, MAX_BATCH};
