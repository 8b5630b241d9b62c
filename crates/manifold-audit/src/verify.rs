//! Offline verification of an audit log: every line parses, every `hash` matches its
//! line, every `prev` is the previous line's `hash`, across rotated files in order.
//!
//! Invariants: verification stops at the first problem and names it with the file,
//! the 1-based line number and a [`ProblemKind`]; a line is judged only by the chain
//! rules in [`crate::chain`] (any member set is fine), so records and the writer's
//! events are checked alike. Two things are accepted and reported, not flagged:
//! - the very first line may continue from a hash that is not in the given files
//!   (older files were rotated away); [`VerifyReport::first_prev`] shows it, so it
//!   can be compared with a hash kept elsewhere;
//! - a `chain_reset` event with `prev` = zeros starts a new segment (the writer
//!   found a last line it could not continue from; that line itself is reported).
//!
//! The chain is not keyed: it proves that lines were not edited, deleted or
//! reordered relative to a trusted later hash (e.g. one shipped to a log collector),
//! not that nobody rewrote the whole file.
//!
//! Not here: repairing anything. Run it on a quiet log: a line being written right
//! now looks truncated.

use crate::chain::{self, EVENT_CHAIN_RESET, EVENT_RECORDS_LOST, EVENT_TORN_TAIL, ZERO_HASH};
use crate::error::AuditError;
use serde_json::Value;
use std::fs::File;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

/// What is wrong with a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProblemKind {
    /// Not a JSON object with a hex `prev` and `hash`.
    Malformed,
    /// The line's content does not match its `hash`: it was edited.
    HashMismatch,
    /// `prev` is not the previous line's `hash`: a line was deleted, inserted or
    /// moved, or a file is missing.
    ChainBroken,
    /// The line has no newline: the file was cut off, or a write was interrupted.
    Truncated,
}

impl std::fmt::Display for ProblemKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ProblemKind::Malformed => "malformed",
            ProblemKind::HashMismatch => "hash mismatch",
            ProblemKind::ChainBroken => "chain broken",
            ProblemKind::Truncated => "truncated",
        })
    }
}

/// A line in a file (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub path: PathBuf,
    pub line: u64,
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.path.display(), self.line)
    }
}

/// The first problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub at: Location,
    pub kind: ProblemKind,
    pub detail: String,
}

impl std::fmt::Display for Problem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.at, self.kind, self.detail)
    }
}

/// An event the writer recorded in the chain (a crash recovery, lost records, a
/// chain reset): not a problem, but worth a look.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventNote {
    pub at: Location,
    pub event: String,
    pub detail: String,
}

/// The outcome of [`verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    pub files: Vec<PathBuf>,
    /// Request records that passed (events are not counted).
    pub records: u64,
    pub events: Vec<EventNote>,
    /// `prev` of the first line: [`ZERO_HASH`] when the log starts in these files.
    pub first_prev: Option<String>,
    /// `hash` of the last good line: the value to keep elsewhere as an anchor.
    pub last_hash: Option<String>,
    pub problem: Option<Problem>,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problem.is_none()
    }
}

impl std::fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(p) = &self.problem {
            return write!(f, "{p}");
        }
        let plural =
            |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        write!(
            f,
            "OK: {} in {}",
            plural(self.records, "record", "records"),
            plural(self.files.len() as u64, "file", "files")
        )?;
        match self.first_prev.as_deref() {
            None | Some(ZERO_HASH) => {}
            Some(prev) => write!(
                f,
                "; the first line continues from hash {prev}, which is not in these files \
                 (older files rotated away?)"
            )?,
        }
        if let Some(last) = &self.last_hash {
            write!(f, "; last hash {last}")?;
        }
        for e in &self.events {
            write!(f, "\n  {}: {}: {}", e.at, e.event, e.detail)?;
        }
        Ok(())
    }
}

/// The log at `path` and its rotated siblings, oldest first: `<path>.N` … `<path>.1`,
/// then `<path>` (each only if it exists). Errs when there is none.
pub fn log_files(path: &Path) -> Result<Vec<PathBuf>, AuditError> {
    let io_err = |e| AuditError::io(path, e);
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut rotated: Vec<(u64, PathBuf)> = Vec::new();
    if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
        for entry in std::fs::read_dir(dir).map_err(io_err)? {
            let entry = entry.map_err(io_err)?;
            let file_name = entry.file_name();
            let Some(n) = file_name
                .to_str()
                .and_then(|f| f.strip_prefix(name))
                .and_then(|rest| rest.strip_prefix('.'))
                .filter(|n| n.bytes().all(|b| b.is_ascii_digit()) && !n.starts_with('0'))
                .and_then(|n| n.parse::<u64>().ok())
            else {
                continue;
            };
            rotated.push((n, path.with_file_name(&file_name)));
        }
    }
    rotated.sort_by_key(|r| std::cmp::Reverse(r.0));
    let mut files: Vec<PathBuf> = rotated.into_iter().map(|(_, p)| p).collect();
    if path.exists() {
        files.push(path.to_path_buf());
    }
    if files.is_empty() {
        return Err(io_err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no audit log there (nor rotated files)",
        )));
    }
    Ok(files)
}

fn event_detail(event: &str, members: &serde_json::Map<String, Value>) -> String {
    match event {
        EVENT_TORN_TAIL => format!(
            "{} bytes of a partial line were cut off on start (a crash during a write)",
            members.get("discarded_bytes").unwrap_or(&Value::Null)
        ),
        EVENT_RECORDS_LOST => format!(
            "{} records were not written here while the log was failing",
            members.get("count").unwrap_or(&Value::Null)
        ),
        EVENT_CHAIN_RESET => format!(
            "the chain starts again: {}",
            members
                .get("reason")
                .and_then(Value::as_str)
                .unwrap_or("no reason given")
        ),
        _ => "an event this version does not know".to_string(),
    }
}

/// Verifies the chain across `paths`, oldest first (see [`log_files`]). `Err` only
/// when a file cannot be read; problems with the content are in the report.
pub fn verify(paths: &[PathBuf]) -> Result<VerifyReport, AuditError> {
    let mut report = VerifyReport {
        files: paths.to_vec(),
        records: 0,
        events: Vec::new(),
        first_prev: None,
        last_hash: None,
        problem: None,
    };
    // Where the last good line is (its hash is `report.last_hash`).
    let mut last: Option<Location> = None;
    for path in paths {
        let file = File::open(path).map_err(|e| AuditError::io(path, e))?;
        let mut reader = BufReader::new(file);
        let mut buf = Vec::new();
        let mut line = 0u64;
        loop {
            buf.clear();
            let n = reader
                .read_until(b'\n', &mut buf)
                .map_err(|e| AuditError::io(path, e))?;
            if n == 0 {
                break;
            }
            line += 1;
            let at = Location {
                path: path.clone(),
                line,
            };
            if let Err((kind, detail)) = check_line(&mut report, last.as_ref(), &at, &mut buf) {
                report.problem = Some(Problem { at, kind, detail });
                return Ok(report);
            }
            last = Some(at);
        }
    }
    Ok(report)
}

/// Checks one line (with its newline, if any) after the good line `last`, and
/// records it in `report`.
fn check_line(
    report: &mut VerifyReport,
    last: Option<&Location>,
    at: &Location,
    buf: &mut Vec<u8>,
) -> Result<(), (ProblemKind, String)> {
    if buf.pop() != Some(b'\n') {
        return Err((
            ProblemKind::Truncated,
            "the line has no newline: the file was cut off, or a write was interrupted \
             by a crash"
                .into(),
        ));
    }
    let link = chain::parse_line(buf).map_err(|why| (ProblemKind::Malformed, why))?;
    if !link.hash_ok {
        return Err((
            ProblemKind::HashMismatch,
            "the line does not match its hash (it was edited)".into(),
        ));
    }
    match (last, &report.last_hash) {
        (Some(prev_at), Some(prev_hash)) if link.prev != *prev_hash => {
            let reset = link.event.as_deref() == Some(EVENT_CHAIN_RESET) && link.prev == ZERO_HASH;
            if !reset {
                let detail = if prev_at.path == at.path {
                    format!(
                        "prev does not match line {}'s hash (a record was deleted or \
                         reordered)",
                        prev_at.line
                    )
                } else {
                    format!(
                        "prev does not match the hash of the last line of {} (a file is \
                         missing or out of order, or records were deleted)",
                        prev_at.path.display()
                    )
                };
                return Err((ProblemKind::ChainBroken, detail));
            }
        }
        (None, _) => report.first_prev = Some(link.prev.clone()),
        _ => {}
    }
    match &link.event {
        Some(event) => report.events.push(EventNote {
            at: at.clone(),
            event: event.clone(),
            detail: event_detail(event, &link.members),
        }),
        None => report.records += 1,
    }
    report.last_hash = Some(link.hash);
    Ok(())
}

#[cfg(test)]
mod tests;
