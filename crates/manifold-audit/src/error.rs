//! Why the audit log could not be written or read ([`AuditError`]), with
//! `is_*()` predicates for how the server answers.

use manifold_config::audit::InvalidAuditSettings;
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
