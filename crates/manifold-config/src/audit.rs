//! [`AuditSettings`]: where the audit log goes and how hard the writer tries. A plain
//! struct with documented defaults (the `DEFAULT_*` constants); `[audit]` is
//! validated into it, and the audit writer (manifold-audit) runs with it. It lives
//! here so that configuration depends on no runtime crate.
//!
//! Invariants: [`AuditSettings::validate`] accepts exactly what the writer can run
//! with (a sink, a queue of at least one, a positive rotation size).
//!
//! Not here: parsing TOML or environment variables (`validate`), writing the log.
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

pub const DEFAULT_INCLUDE_ARGUMENTS: bool = true;
/// Why audit settings are invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid audit settings: {0}")]
pub struct InvalidAuditSettings(pub String);

/// Rotate the file when the next line would take it past 100 MiB.
pub const DEFAULT_MAX_BYTES: u64 = 100 * 1024 * 1024;
/// Rotated files kept (`audit.jsonl.1` … `audit.jsonl.10`).
pub const DEFAULT_KEEP: usize = 10;
pub const DEFAULT_FSYNC: Fsync = Fsync::Interval;
pub const DEFAULT_ON_FAILURE: OnFailure = OnFailure::Reject;
/// The largest argument value or text member written as is (see
/// [`AuditSettings::max_value_bytes`]).
pub const DEFAULT_MAX_VALUE_BYTES: usize = 4096;
/// The most a value may be configured to (`max_value_bytes`): with
/// [`MAX_MAX_ARGUMENTS_BYTES`], it keeps every record well under the audit
/// reader's line limit (4 MiB), so no record is invisible in the console.
pub const MAX_MAX_VALUE_BYTES: usize = 256 * 1024;
/// The largest `arguments` (and `injected`) written as is, as a whole — keys,
/// members and values counted together (see
/// [`AuditSettings::max_arguments_bytes`]).
pub const DEFAULT_MAX_ARGUMENTS_BYTES: usize = 64 * 1024;
/// The most `max_arguments_bytes` may be configured to.
pub const MAX_MAX_ARGUMENTS_BYTES: usize = 1024 * 1024;
/// Records waiting for the writer before `record` waits for room.
pub const DEFAULT_QUEUE: usize = 1024;
/// Keys redacted by default: the usual names of secrets in tool arguments. Matched
/// case-insensitively against whole keys (see [`crate::Redactor`]).
pub const DEFAULT_REDACT: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "client_secret",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "api_key",
    "apikey",
    "authorization",
    "cookie",
    "private_key",
];
/// With [`Fsync::Interval`], how often written data is synced to disk (at most this
/// much acknowledged audit data is lost in a power failure).
pub const FSYNC_INTERVAL: Duration = Duration::from_secs(1);
/// How often a failing sink is retried when no record arrives to retry it.
pub const RETRY_INTERVAL: Duration = Duration::from_secs(1);

/// When the file is synced to disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fsync {
    /// After every batch of records, before their `record` calls resolve. Records
    /// that arrive together share one sync.
    Always,
    /// Every [`FSYNC_INTERVAL`], on rotation and on shutdown.
    Interval,
    /// Never explicitly: the operating system writes the data back when it likes.
    Never,
}

/// What happens to requests while the audit log cannot be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnFailure {
    /// Refuse them: [`crate::Auditor::check`] and [`crate::Auditor::record`] fail.
    Reject,
    /// Serve them; each record that could not be written is counted as lost and
    /// logged.
    Continue,
}

macro_rules! str_enum {
    ($ty:ident, $what:literal, $expected:literal, $($s:literal => $v:ident),+) => {
        impl $ty {
            pub fn as_str(self) -> &'static str {
                match self { $($ty::$v => $s),+ }
            }
        }
        impl FromStr for $ty {
            type Err = InvalidAuditSettings;
            fn from_str(s: &str) -> Result<Self, InvalidAuditSettings> {
                match s {
                    $($s => Ok($ty::$v),)+
                    other => Err(InvalidAuditSettings(format!(
                        concat!("unknown ", $what, " `{}` (expected ", $expected, ")"),
                        other
                    ))),
                }
            }
        }
        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}
str_enum!(Fsync, "fsync mode", "`always`, `interval` or `never`",
    "always" => Always, "interval" => Interval, "never" => Never);
str_enum!(OnFailure, "on_failure mode", "`reject` or `continue`",
    "reject" => Reject, "continue" => Continue);

/// Audit log settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditSettings {
    /// The log file, opened in append mode; rotated siblings are `<path>.1` (newest)
    /// … `<path>.<keep>`. `None`: no file.
    pub path: Option<PathBuf>,
    /// Also write every line to standard output (for container log collectors).
    pub stdout: bool,
    /// Argument keys whose values are replaced by `"[REDACTED]"`, at any depth,
    /// ignoring case. Default: [`DEFAULT_REDACT`].
    pub redact: Vec<String>,
    /// Write the (redacted) arguments; when false only their digest is written.
    pub include_arguments: bool,
    /// Rotate before a line would take the file past this size. A single line
    /// larger than this still goes into a file of its own.
    pub max_bytes: u64,
    /// Rotated files kept; 0 keeps none (rotation deletes the full file).
    pub keep: usize,
    pub fsync: Fsync,
    pub on_failure: OnFailure,
    /// Capacity of the queue in front of the writer. When it is full, `record`
    /// waits: records are never dropped to make room.
    pub queue: usize,
    /// The largest argument value (its JSON) and text member (`name`, `client`…)
    /// written as is; a larger one is replaced by its size and SHA-256 and marked
    /// truncated, so no request can flush history away with one huge record.
    pub max_value_bytes: usize,
    /// The largest `arguments` (and `injected`) written as is, as a whole:
    /// keys, the number of members and values all count. Past it (after each
    /// value was capped) the whole object is replaced by its size, member
    /// count and SHA-256, so many small members or huge keys cannot make a
    /// record large either.
    pub max_arguments_bytes: usize,
    /// Also export each record as an OTLP log record (`[audit] otlp`).
    pub otlp: bool,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            path: None,
            stdout: false,
            redact: DEFAULT_REDACT.iter().map(|s| s.to_string()).collect(),
            include_arguments: DEFAULT_INCLUDE_ARGUMENTS,
            max_bytes: DEFAULT_MAX_BYTES,
            keep: DEFAULT_KEEP,
            fsync: DEFAULT_FSYNC,
            on_failure: DEFAULT_ON_FAILURE,
            queue: DEFAULT_QUEUE,
            max_value_bytes: DEFAULT_MAX_VALUE_BYTES,
            max_arguments_bytes: DEFAULT_MAX_ARGUMENTS_BYTES,
            otlp: false,
        }
    }
}

impl AuditSettings {
    /// Defaults, writing to `path`.
    pub fn file(path: impl Into<PathBuf>) -> Self {
        AuditSettings {
            path: Some(path.into()),
            ..AuditSettings::default()
        }
    }

    pub fn validate(&self) -> Result<(), InvalidAuditSettings> {
        let bad = |m: &str| Err(InvalidAuditSettings(m.to_string()));
        if self.path.is_none() && !self.stdout {
            return bad("no audit sink: set `path`, `stdout`, or both");
        }
        if self.path.as_ref().is_some_and(|p| p.file_name().is_none()) {
            return bad("`path` must name a file");
        }
        if self.queue == 0 {
            return bad("`queue` must be at least 1");
        }
        if self.max_bytes == 0 {
            return bad("`max_bytes` must be at least 1");
        }
        if !(64..=MAX_MAX_VALUE_BYTES).contains(&self.max_value_bytes) {
            return Err(InvalidAuditSettings(format!(
                "`max_value_bytes` must be between 64 and {MAX_MAX_VALUE_BYTES}"
            )));
        }
        if !(self.max_value_bytes..=MAX_MAX_ARGUMENTS_BYTES).contains(&self.max_arguments_bytes) {
            return Err(InvalidAuditSettings(format!(
                "`max_arguments_bytes` must be between `max_value_bytes` ({}) and {MAX_MAX_ARGUMENTS_BYTES}",
                self.max_value_bytes
            )));
        }
        Ok(())
    }
}

/// `[audit]`: one JSON line per call, hash-chained. See docs/audit.md.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct AuditSection {
    /// Append records to this file (rotated at `max_bytes`).
    pub path: Option<String>,
    /// Also write records to stdout.
    #[serde(default)]
    pub stdout: bool,
    /// Argument keys whose values are replaced by "[REDACTED]", at any depth,
    /// ignoring case. Default: common secret names (password, token, api_key, …).
    pub redact: Option<Vec<String>>,
    /// Keep the (redacted) arguments in records; false keeps only their digest.
    /// Default true.
    pub include_arguments: Option<bool>,
    /// Rotate the file when it reaches this size. Default 100 MiB.
    pub max_bytes: Option<u64>,
    /// Rotated files kept (`audit.jsonl.1` … `.keep`). Default 10.
    pub keep: Option<usize>,
    /// `always` (a call's response waits for its record on disk), `interval`
    /// (fsync every second: a crash may lose the last second), `never` (the OS
    /// decides). Default `interval`.
    pub fsync: Option<String>,
    /// When the sink fails: `reject` new calls until it recovers, or `continue`
    /// serving and count lost records. Default `reject`.
    pub on_failure: Option<String>,
    /// Records queued for the writer; when full, calls wait. Default 1024.
    pub queue: Option<usize>,
    /// The largest argument value or text member written as is
    /// (`DEFAULT_MAX_VALUE_BYTES`); larger ones become their size and digest.
    pub max_value_bytes: Option<usize>,
    /// The largest `arguments` written as is, keys and members counted
    /// (`DEFAULT_MAX_ARGUMENTS_BYTES`); a larger object becomes its size,
    /// member count and digest.
    pub max_arguments_bytes: Option<usize>,
    /// Also export every record as an OTLP log record to `[tracing] endpoint`
    /// (default false); the file stays the record of truth.
    #[serde(default)]
    pub otlp: bool,
}

pub(crate) fn validate_section(
    a: &AuditSection,
    ex: impl Fn(&str, &str) -> Result<String, String>,
) -> Result<crate::audit::AuditSettings, String> {
    let d = AuditSettings::default();
    let path = match &a.path {
        Some(p) => Some(std::path::PathBuf::from(ex("audit.path", p)?)),
        None => None,
    };
    let parse = |v: &Option<String>| v.as_ref().map(|s| s.trim().to_string());
    let settings = AuditSettings {
        path,
        stdout: a.stdout,
        redact: a.redact.clone().unwrap_or(d.redact),
        include_arguments: a.include_arguments.unwrap_or(d.include_arguments),
        max_bytes: a.max_bytes.unwrap_or(d.max_bytes),
        keep: a.keep.unwrap_or(d.keep),
        fsync: match parse(&a.fsync) {
            Some(s) => s.parse().map_err(|e| format!("key `audit.fsync`: {e}"))?,
            None => d.fsync,
        },
        on_failure: match parse(&a.on_failure) {
            Some(s) => s
                .parse()
                .map_err(|e| format!("key `audit.on_failure`: {e}"))?,
            None => d.on_failure,
        },
        queue: a.queue.unwrap_or(d.queue),
        max_value_bytes: a.max_value_bytes.unwrap_or(d.max_value_bytes),
        max_arguments_bytes: a.max_arguments_bytes.unwrap_or(d.max_arguments_bytes),
        otlp: a.otlp,
    };
    settings
        .validate()
        .map_err(|e| format!("section `[audit]`: {e}"))?;
    Ok(settings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let s = AuditSettings::default();
        assert_eq!(s.path, None);
        assert!(!s.stdout);
        assert!(s.include_arguments);
        assert_eq!(s.max_bytes, 104_857_600);
        assert_eq!(s.keep, 10);
        assert_eq!(s.fsync, Fsync::Interval);
        assert_eq!(s.on_failure, OnFailure::Reject);
        assert_eq!(s.queue, 1024);
        assert!(s.redact.iter().any(|k| k == "password"));
        assert!(s.redact.iter().any(|k| k == "token"));
    }

    #[test]
    fn validation() {
        assert!(AuditSettings::file("/tmp/a.jsonl").validate().is_ok());
        let stdout_only = AuditSettings {
            stdout: true,
            ..AuditSettings::default()
        };
        assert!(stdout_only.validate().is_ok());
        let cases = [
            (AuditSettings::default(), "no audit sink"),
            (AuditSettings::file("/"), "must name a file"),
            (
                AuditSettings {
                    queue: 0,
                    ..AuditSettings::file("a")
                },
                "`queue`",
            ),
            (
                AuditSettings {
                    max_bytes: 0,
                    ..AuditSettings::file("a")
                },
                "`max_bytes`",
            ),
        ];
        for (s, want) in cases {
            let err = s.validate().expect_err(want);
            assert!(
                err.to_string().starts_with("invalid audit settings: "),
                "{err}"
            );
            assert!(err.to_string().contains(want), "{err}");
        }
    }

    #[test]
    fn modes_parse_and_print() {
        for m in [Fsync::Always, Fsync::Interval, Fsync::Never] {
            assert_eq!(m.as_str().parse::<Fsync>().ok(), Some(m));
        }
        for m in [OnFailure::Reject, OnFailure::Continue] {
            assert_eq!(m.to_string().parse::<OnFailure>().ok(), Some(m));
        }
        let err = "sometimes".parse::<Fsync>().expect_err("unknown mode");
        assert_eq!(
            err.to_string(),
            "invalid audit settings: unknown fsync mode `sometimes` (expected `always`, `interval` or `never`)"
        );
    }
}
