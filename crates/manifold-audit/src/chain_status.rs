//! The chain checked file by file, for a running gateway's console: how far
//! each file (the current one and the rotated ones) is intact, resumed where
//! the last check stopped, so a growing log is checked once, not on every look.
//!
//! A [`FileStatus`] says of one file: the lines and records checked, the
//! `prev` of its first line and the `hash` of its last good one, and the first
//! problem, if any ("intact up to record N"). [`check_file`] continues a status
//! of the same file (same inode, not shorter) from where it stopped; anything
//! else starts over. Whether consecutive files link up (the first `prev` of a
//! file is the last `hash` of the one before) is [`links`]' answer.
//!
//! Invariants: the rules are `verify`'s (the same line check, a `chain_reset`
//! event starts a new segment); a file being written (`live`) may end in a
//! partial line, which is left for the next check, while a rotated file that
//! does is truncated; memory is one line at a time.
//!
//! Not here: the offline report (`verify`), reading records (`reader`).

use std::fs::File;
use std::io::{BufRead, BufReader, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::chain::{self, EVENT_CHAIN_RESET, ZERO_HASH};
use crate::error::AuditError;
use crate::verify::{Location, Problem, ProblemKind};

/// How far one file's chain holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStatus {
    pub path: PathBuf,
    pub ino: u64,
    /// Bytes checked (whole lines).
    pub checked_bytes: u64,
    /// Lines checked and good.
    pub lines: u64,
    /// Of those, request records (the rest are the writer's events).
    pub records: u64,
    /// `prev` of the first line.
    pub first_prev: Option<String>,
    /// `hash` of the last good line.
    pub last_hash: Option<String>,
    /// The first problem; the file is intact up to the line before it.
    pub problem: Option<Problem>,
}

impl FileStatus {
    pub fn is_intact(&self) -> bool {
        self.problem.is_none()
    }
}

/// Checks `path` (the current file when `live`), continuing `resume` when it
/// is a status of the same file that it can continue.
pub fn check_file(
    path: &Path,
    live: bool,
    resume: Option<FileStatus>,
) -> Result<FileStatus, AuditError> {
    let io = |e| AuditError::io(path, e);
    let file = File::open(path).map_err(io)?;
    let meta = file.metadata().map_err(io)?;
    let fresh = FileStatus {
        path: path.to_path_buf(),
        ino: meta.ino(),
        checked_bytes: 0,
        lines: 0,
        records: 0,
        first_prev: None,
        last_hash: None,
        problem: None,
    };
    let mut status = match resume {
        Some(s) if s.ino == fresh.ino && s.checked_bytes <= meta.len() => FileStatus {
            path: fresh.path.clone(),
            ..s
        },
        _ => fresh,
    };
    if status.problem.is_some() || status.checked_bytes == meta.len() {
        return Ok(status);
    }
    let mut reader = BufReader::new(file);
    reader
        .seek(SeekFrom::Start(status.checked_bytes))
        .map_err(io)?;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let n = reader.read_until(b'\n', &mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        let at = Location {
            path: path.to_path_buf(),
            line: status.lines + 1,
        };
        if buf.pop() != Some(b'\n') {
            if !live {
                status.problem = Some(Problem {
                    at,
                    kind: ProblemKind::Truncated,
                    detail: "the last line has no newline: the file was cut off".into(),
                });
            }
            break;
        }
        if let Err((kind, detail)) = check(&mut status, &buf) {
            status.problem = Some(Problem { at, kind, detail });
            break;
        }
        status.checked_bytes += n as u64;
    }
    Ok(status)
}

/// Checks one line (without its newline) after the good ones of `status`.
fn check(status: &mut FileStatus, line: &[u8]) -> Result<(), (ProblemKind, String)> {
    let link = chain::parse_line(line).map_err(|why| (ProblemKind::Malformed, why))?;
    if !link.hash_ok {
        return Err((
            ProblemKind::HashMismatch,
            "the line does not match its hash (it was edited)".into(),
        ));
    }
    match &status.last_hash {
        None => status.first_prev = Some(link.prev.clone()),
        Some(prev) if *prev != link.prev => {
            let reset = link.event.as_deref() == Some(EVENT_CHAIN_RESET) && link.prev == ZERO_HASH;
            if !reset {
                return Err((
                    ProblemKind::ChainBroken,
                    format!(
                        "prev does not match line {}'s hash (a record was deleted or reordered)",
                        status.lines
                    ),
                ));
            }
        }
        Some(_) => {}
    }
    status.lines += 1;
    if link.event.is_none() {
        status.records += 1;
    }
    status.last_hash = Some(link.hash);
    Ok(())
}

/// For files oldest first, whether each one's first `prev` is the last
/// `hash` of the one before (`None` for the oldest, or when either is not
/// known).
pub fn links(files: &[FileStatus]) -> Vec<Option<bool>> {
    let mut out = Vec::with_capacity(files.len());
    for (i, f) in files.iter().enumerate() {
        let before = i.checked_sub(1).and_then(|j| files[j].last_hash.as_ref());
        out.push(match (before, &f.first_prev) {
            (Some(b), Some(p)) => Some(b == p || p == ZERO_HASH),
            _ => None,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::seal;
    use crate::record::AuditRecord;
    use crate::redact::Redactor;
    use crate::testutil::TempDir;
    use std::io::Write;

    /// `n` sealed lines after `prev`, and the last hash.
    fn lines(n: usize, prev: &str) -> (String, String) {
        let mut prev = prev.to_string();
        let mut out = String::new();
        for i in 0..n {
            let rec = AuditRecord::new(format!("r{i}"), "tools/call");
            let s = seal(
                &rec.to_entry(
                    &Redactor::default(),
                    true,
                    &crate::record::SizeCap::default(),
                ),
                &prev,
            );
            out.push_str(std::str::from_utf8(&s.line).expect("UTF-8"));
            prev = s.hash;
        }
        (out, prev)
    }

    #[test]
    fn a_growing_file_is_checked_from_where_it_stopped() {
        let dir = TempDir::new();
        let p = dir.path().join("audit.jsonl");
        let (first, last) = lines(3, ZERO_HASH);
        std::fs::write(&p, &first).expect("write");
        let s = check_file(&p, true, None).expect("readable");
        assert!(s.is_intact());
        assert_eq!((s.lines, s.records), (3, 3));
        assert_eq!(s.checked_bytes, first.len() as u64);

        // More lines, and a partial one being written.
        let (more, _) = lines(2, &last);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .expect("open");
        f.write_all(more.as_bytes()).expect("append");
        f.write_all(b"{\"time\":").expect("partial");
        let s = check_file(&p, true, Some(s)).expect("readable");
        assert!(s.is_intact(), "{:?}", s.problem);
        assert_eq!(s.lines, 5);
        assert_eq!(s.checked_bytes, (first.len() + more.len()) as u64);
        // The same file rotated (not live): the partial line is a problem.
        let r = check_file(&p, false, Some(s)).expect("readable");
        assert_eq!(r.problem.expect("truncated").kind, ProblemKind::Truncated);
    }

    #[test]
    fn an_edit_is_found_and_named_by_line() {
        let dir = TempDir::new();
        let p = dir.path().join("audit.jsonl");
        let (text, _) = lines(4, ZERO_HASH);
        let edited = text.replacen("\"r2\"", "\"rX\"", 1);
        std::fs::write(&p, edited).expect("write");
        let s = check_file(&p, true, None).expect("readable");
        let problem = s.problem.expect("a problem");
        assert_eq!(
            (problem.at.line, problem.kind),
            (3, ProblemKind::HashMismatch)
        );
        assert_eq!(s.lines, 2, "intact up to record 2");
    }

    #[test]
    fn files_link_when_each_continues_the_one_before() {
        let dir = TempDir::new();
        let (a, last) = lines(2, ZERO_HASH);
        let (b, _) = lines(2, &last);
        let (c, _) = lines(1, &"1".repeat(64));
        let paths: Vec<PathBuf> = ["a", "b", "c"].iter().map(|n| dir.path().join(n)).collect();
        for (p, t) in paths.iter().zip([&a, &b, &c]) {
            std::fs::write(p, t).expect("write");
        }
        let statuses: Vec<FileStatus> = paths
            .iter()
            .map(|p| check_file(p, false, None).expect("readable"))
            .collect();
        assert_eq!(links(&statuses), vec![None, Some(true), Some(false)]);
    }
}
