//! Reading an audit log newest first, a page at a time, with filters: what the
//! console's audit view shows. The current file and its rotated siblings
//! (`<path>`, `<path>.1`, … — see [`log_files`]) are read backwards in blocks
//! of [`READ_BLOCK`] bytes, so the first page of a large log costs a few
//! blocks, not the file.
//!
//! - A [`Filter`] narrows by principal, tool (its exposed or original name),
//!   upstream, outcome, method and a time range (`time` is compared as text:
//!   the log writes RFC 3339 UTC, so a prefix such as `2026-11-26T13` works).
//!   Before a line is parsed, each filter's text must appear in it as the
//!   writer escapes it, and its `time` must be in range: most lines that do
//!   not match are skipped without parsing.
//! - A [`Cursor`] names where a page stopped by the file's inode and a byte
//!   offset, so it stays valid when the file is rotated (a rename keeps the
//!   inode); a cursor whose file is gone is refused ([`AuditError::StaleCursor`]).
//! - A page reads at most `scan_budget` bytes: a filter that matches nothing
//!   in a large log ends with a cursor to go on from ([`Page::budget_spent`]),
//!   never with a scan of everything in one request.
//!
//! Invariants: memory is bounded by one block plus the longest line kept
//! ([`MAX_LINE_BYTES`]; longer lines are skipped and counted); only lines that
//! end with a newline are read (a line being written is not yet there); the
//! chain is not checked here.
//!
//! Not here: checking the chain (`chain_status`, `verify`).

use serde_json::{Map, Value};
use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::{error::AuditError, verify::log_files};

/// Bytes read from a file at a time, from its end towards its start.
pub const READ_BLOCK: usize = 64 * 1024;

/// Lines longer than this are skipped (and counted in
/// [`Page::skipped_long_lines`]): they would make a page's memory unbounded.
/// The writer's `max_value_bytes` keeps real records far below it.
pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The most records one page holds.
pub const MAX_PAGE: usize = 500;

/// The bytes a page may read before it stops with a cursor to go on from.
pub const DEFAULT_SCAN_BUDGET: u64 = 64 * 1024 * 1024;

/// Which records a page keeps. Empty members match everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Text the `principal` contains.
    pub principal: Option<String>,
    /// Text the exposed `name` or the `original` name contains.
    pub tool: Option<String>,
    /// The `upstream`, exactly.
    pub upstream: Option<String>,
    /// The `outcome`, exactly (`ok`, `tool_error`, `refused`, …).
    pub outcome: Option<String>,
    /// The `method`, exactly (`tools/call`, …).
    pub method: Option<String>,
    /// Records at or after this time (RFC 3339 text, any prefix of it).
    pub from: Option<String>,
    /// Records at or before this time (a prefix covers all of it: `…T13`
    /// includes 13:59).
    pub to: Option<String>,
}

impl Filter {
    /// Whether nothing is filtered (the writer's events are shown then).
    pub fn is_empty(&self) -> bool {
        self.texts().next().is_none() && self.from.is_none() && self.to.is_none()
    }

    fn texts(&self) -> impl Iterator<Item = &str> {
        [
            &self.principal,
            &self.tool,
            &self.upstream,
            &self.outcome,
            &self.method,
        ]
        .into_iter()
        .filter_map(|t| t.as_deref())
    }

    /// Each text as the writer escapes it: every one must occur in a line
    /// that matches.
    fn needles(&self) -> Vec<Vec<u8>> {
        self.texts()
            .map(|t| {
                let mut out = Vec::with_capacity(t.len() + 2);
                crate::canonical::write_str(&mut out, t);
                out[1..out.len() - 1].to_vec()
            })
            .collect()
    }

    /// Whether `time` (a record's `time`) is in range.
    fn time_in_range(&self, time: &str) -> bool {
        if self.from.as_deref().is_some_and(|from| time < from) {
            return false;
        }
        match self.to.as_deref() {
            Some(to) => time.get(..to.len()).unwrap_or(time) <= to,
            None => true,
        }
    }

    /// Whether a parsed record matches.
    pub fn matches(&self, rec: &Map<String, Value>) -> bool {
        let text = |k: &str| rec.get(k).and_then(Value::as_str);
        let contains = |k: &str, want: &Option<String>| match want {
            Some(w) => text(k).is_some_and(|v| v.contains(w.as_str())),
            None => true,
        };
        let equals = |k: &str, want: &Option<String>| match want {
            Some(w) => text(k) == Some(w.as_str()),
            None => true,
        };
        let tool = match &self.tool {
            Some(_) => contains("name", &self.tool) || contains("original", &self.tool),
            None => true,
        };
        contains("principal", &self.principal)
            && tool
            && equals("upstream", &self.upstream)
            && equals("outcome", &self.outcome)
            && equals("method", &self.method)
            && text("time").is_none_or(|t| self.time_in_range(t))
    }
}

/// Where a page stopped: before byte `offset` of the file with inode `ino`
/// (`offset` is always the start of a line).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cursor {
    pub ino: u64,
    pub offset: u64,
}

/// `<ino hex>-<offset hex>`, as pages link to each other.
impl std::fmt::Display for Cursor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:x}-{:x}", self.ino, self.offset)
    }
}

impl std::str::FromStr for Cursor {
    type Err = String;
    fn from_str(s: &str) -> Result<Cursor, String> {
        let bad = || format!("`{s}` is not a cursor (<inode hex>-<offset hex>)");
        let (ino, offset) = s.split_once('-').ok_or_else(bad)?;
        Ok(Cursor {
            ino: u64::from_str_radix(ino, 16).map_err(|_| bad())?,
            offset: u64::from_str_radix(offset, 16).map_err(|_| bad())?,
        })
    }
}

/// One line found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub file: PathBuf,
    /// Where the line starts in `file`.
    pub offset: u64,
    /// Every member, `prev` and `hash` included.
    pub record: Map<String, Value>,
}

impl Found {
    /// The writer's event (`torn_tail_truncated`, …), for an event line.
    pub fn event(&self) -> Option<&str> {
        self.record.get("event").and_then(Value::as_str)
    }
}

/// One page, newest first.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Page {
    pub records: Vec<Found>,
    /// Where the next (older) page starts; `None`: the oldest file was read
    /// to its start.
    pub next: Option<Cursor>,
    /// Bytes read for this page.
    pub scanned_bytes: u64,
    /// The page stopped because it read `scan_budget` bytes: older records
    /// may still match (go on from `next`).
    pub budget_spent: bool,
    /// Lines longer than [`MAX_LINE_BYTES`], skipped.
    pub skipped_long_lines: u64,
    /// Lines that are not JSON objects, skipped (`verify` says more).
    pub unreadable_lines: u64,
}

/// The newest records of the log at `path` (and its rotated files) that
/// `filter` keeps, before `before` when given: at most `limit` (capped at
/// [`MAX_PAGE`]), reading at most about `scan_budget` bytes. A log that does
/// not exist yet is an empty page.
pub fn read_page(
    path: &Path,
    filter: &Filter,
    before: Option<Cursor>,
    limit: usize,
    scan_budget: u64,
) -> Result<Page, AuditError> {
    let limit = limit.clamp(1, MAX_PAGE);
    let files = match log_files(path) {
        Ok(f) => f,
        Err(AuditError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            return Ok(Page::default())
        }
        Err(e) => return Err(e),
    };
    let mut opened = Vec::with_capacity(files.len());
    // Newest first.
    for p in files.into_iter().rev() {
        match File::open(&p) {
            Ok(f) => {
                let meta = f.metadata().map_err(|e| AuditError::io(&p, e))?;
                opened.push((p, f, meta.ino(), meta.len()));
            }
            // Rotated away between the listing and now: nothing to read.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(AuditError::io(&p, e)),
        }
    }
    let start = match before {
        None => 0,
        Some(c) => opened
            .iter()
            .position(|(_, _, ino, len)| *ino == c.ino && c.offset <= *len)
            .ok_or(AuditError::StaleCursor)?,
    };
    let mut scan = Scan {
        filter,
        needles: filter.needles(),
        show_events: filter.is_empty(),
        limit,
        budget: scan_budget,
        page: Page::default(),
    };
    for (i, (p, f, ino, len)) in opened.iter().enumerate().skip(start) {
        let end = match before {
            Some(c) if i == start => c.offset,
            _ => *len,
        };
        if let Some(next) = scan.file(p, f, *ino, end)? {
            scan.page.next = Some(next);
            return Ok(scan.page);
        }
    }
    Ok(scan.page)
}

/// One page being gathered.
struct Scan<'a> {
    filter: &'a Filter,
    needles: Vec<Vec<u8>>,
    show_events: bool,
    limit: usize,
    budget: u64,
    page: Page,
}

/// What to do after a line.
enum Step {
    Go,
    /// The page is full (this line was its last): it stops here.
    Full,
}

impl Scan<'_> {
    /// Reads `file` backwards from `end`; `Some(cursor)` when the page ended
    /// inside it (full, or the budget spent).
    fn file(
        &mut self,
        path: &Path,
        file: &File,
        ino: u64,
        end: u64,
    ) -> Result<Option<Cursor>, AuditError> {
        // The start of the unread part of a line whose end was read (its
        // start is in an earlier block).
        let mut tail: Vec<u8> = Vec::new();
        // The bytes after the last newline before `end` are a line being
        // written: ignored, never a line of their own.
        let mut partial = true;
        // Ignoring the rest of a line longer than MAX_LINE_BYTES.
        let mut skipping = false;
        // Where the oldest line handled so far starts: lines before it are
        // unread (the cursor to go on from).
        let mut handled = end;
        let mut pos = end;
        let mut block = vec![0u8; READ_BLOCK];
        while pos > 0 {
            let n = READ_BLOCK.min(pos as usize);
            let from = pos - n as u64;
            file.read_exact_at(&mut block[..n], from)
                .map_err(|e| AuditError::io(path, e))?;
            self.page.scanned_bytes += n as u64;
            let mut buf = Vec::with_capacity(n + tail.len());
            buf.extend_from_slice(&block[..n]);
            buf.extend_from_slice(&tail);
            tail.clear();
            // `buf` starts at `from`; lines are handled from the last one
            // back; the piece before the first newline is the next tail
            // (or, at the file's start, its first line).
            let mut stop = buf.len();
            while let Some(nl) = buf[..stop].iter().rposition(|&b| b == b'\n') {
                let line_at = from + nl as u64 + 1;
                if partial {
                    partial = false;
                } else if skipping {
                    skipping = false;
                    self.page.skipped_long_lines += 1;
                } else if let Step::Full = self.line(path, &buf[nl + 1..stop], line_at) {
                    return Ok(Some(Cursor {
                        ino,
                        offset: line_at,
                    }));
                }
                handled = line_at;
                stop = nl;
            }
            if from == 0 {
                if skipping {
                    self.page.skipped_long_lines += 1;
                } else if !partial && stop > 0 {
                    if let Step::Full = self.line(path, &buf[..stop], 0) {
                        return Ok(Some(Cursor { ino, offset: 0 }));
                    }
                }
                break;
            }
            if partial || skipping {
                // Nothing of this piece is kept.
            } else if stop > MAX_LINE_BYTES {
                skipping = true;
            } else {
                tail.extend_from_slice(&buf[..stop]);
            }
            pos = from;
            if self.page.scanned_bytes >= self.budget {
                self.page.budget_spent = true;
                return Ok(Some(Cursor {
                    ino,
                    offset: handled,
                }));
            }
        }
        Ok(None)
    }

    /// Considers one whole line (without its newline) starting at `at`.
    fn line(&mut self, path: &Path, line: &[u8], at: u64) -> Step {
        if line.len() > MAX_LINE_BYTES {
            self.page.skipped_long_lines += 1;
            return Step::Go;
        }
        // `time` comes first in every line the writer writes.
        if let Some(time) = line
            .strip_prefix(b"{\"time\":\"")
            .and_then(|rest| rest.get(..27))
            .and_then(|t| std::str::from_utf8(t).ok())
        {
            if !self.filter.time_in_range(time) {
                return Step::Go;
            }
        }
        if !self.needles.iter().all(|n| contains(line, n)) {
            return Step::Go;
        }
        let Ok(record) = serde_json::from_slice::<Map<String, Value>>(line) else {
            self.page.unreadable_lines += 1;
            return Step::Go;
        };
        let is_event = record.contains_key("event");
        if (is_event && !self.show_events) || (!is_event && !self.filter.matches(&record)) {
            return Step::Go;
        }
        self.page.records.push(Found {
            file: path.to_path_buf(),
            offset: at,
            record,
        });
        if self.page.records.len() >= self.limit {
            return Step::Full;
        }
        Step::Go
    }
}

/// Whether `needle` occurs in `hay`.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    let Some((&first, rest)) = needle.split_first() else {
        return true;
    };
    let mut i = 0;
    while let Some(p) = hay[i..].iter().position(|&b| b == first) {
        let at = i + p + 1;
        if hay[at..].starts_with(rest) {
            return true;
        }
        i = at;
    }
    false
}

#[cfg(test)]
mod tests;
