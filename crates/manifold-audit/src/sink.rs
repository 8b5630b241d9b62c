//! Where sealed lines go: an append-only file with size-based rotation, or a stream
//! (standard output). Blocking I/O; the writer calls these from a blocking thread.
//!
//! File invariants:
//! - the file only ever grows by whole lines: when a write fails half-way the partial
//!   bytes are truncated away (or, if even that fails, the file is closed and the next
//!   [`Sink::open`] cuts them off, as after a crash);
//! - opening continues the chain from what is on disk: the `hash` of the last complete
//!   line of the file, or of `<path>.1` when the file is empty, or [`ZERO_HASH`] for
//!   a brand-new log. A partial last line (a crash mid-write) is truncated, with a
//!   warning and a `torn_tail_truncated` event; a last line that is not a chain line
//!   at all cannot be continued from, so a `chain_reset` event (prev = zeros) starts
//!   a new segment. A last line whose hash does not match its content is continued
//!   from (its stored hash), with a warning, so `verify` points at exactly that line;
//! - rotation (before a line would take the file past `max_bytes`) renames
//!   `<path>.N` → `<path>.N+1` for N = keep-1 … 1, then `<path>` → `<path>.1`, and
//!   starts an empty `<path>`; the chain simply continues in the new file.
//!
//! The file belongs to one writer: two processes appending to the same file, or an
//! external rotator (logrotate `copytruncate` or a move), break the chain or the size
//! accounting. Use `max_bytes`/`keep` instead.
//!
//! Not here: sealing lines, deciding what a failure means for callers (the writer).

use crate::chain::{self, Sealed, EVENT_CHAIN_RESET, EVENT_TORN_TAIL, ZERO_HASH};
use manifold_config::audit::Fsync;
use serde_json::{json, Map, Value};
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Permissions of a log file Manifold creates: readable and writable by its owner
/// only (arguments and client names are in it).
pub const LOG_MODE: u32 = 0o600;

/// A sink operation that failed, with what and where.
#[derive(Debug, thiserror::Error)]
#[error("cannot {op} {target}: {source}")]
pub(crate) struct SinkError {
    op: &'static str,
    target: String,
    #[source]
    source: io::Error,
}

fn file_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> SinkError + 'a {
    move |source| SinkError {
        op,
        target: path.display().to_string(),
        source,
    }
}

/// What opening a sink found.
#[derive(Debug, Default)]
pub(crate) struct Opened {
    /// The chain link to continue from; `None`: keep the one in memory.
    pub prev: Option<String>,
    /// Events to write before anything else (unsealed).
    pub events: Vec<Map<String, Value>>,
}

/// A destination for sealed lines.
pub(crate) trait Sink: Send + 'static {
    /// Whether [`Sink::append`] can be tried without opening first.
    fn is_open(&self) -> bool;
    /// Opens (or reopens) the sink.
    fn open(&mut self) -> Result<Opened, SinkError>;
    /// Appends `lines` in order. `Err((n, e))`: the first `n` lines are in the sink,
    /// the others are not, and the sink may have closed itself.
    fn append(&mut self, lines: &[Sealed]) -> Result<(), (usize, SinkError)>;
    /// Makes appended lines durable (file) or flushes them (stream).
    fn sync(&mut self) -> Result<(), SinkError>;
    /// Closes the sink; the next use reopens it.
    fn close(&mut self);
}

/// `<path>.<n>`: the n-th most recent rotated file.
pub fn rotated_path(path: &Path, n: usize) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{n}"));
    PathBuf::from(s)
}

/// The audit file.
pub(crate) struct FileSink {
    path: PathBuf,
    max_bytes: u64,
    keep: usize,
    fsync: Fsync,
    file: Option<File>,
    /// Current size of `file`.
    len: u64,
    /// Written since the last sync.
    dirty: bool,
}

impl FileSink {
    pub fn new(path: PathBuf, max_bytes: u64, keep: usize, fsync: Fsync) -> Self {
        FileSink {
            path,
            max_bytes,
            keep,
            fsync,
            file: None,
            len: 0,
            dirty: false,
        }
    }

    fn rotate(&mut self) -> Result<(), SinkError> {
        let path = self.path.clone();
        if let Some(file) = self.file.take() {
            if self.fsync != Fsync::Never {
                file.sync_all().map_err(file_err("sync", &path))?;
            }
        }
        if self.keep == 0 {
            fs::remove_file(&path).map_err(file_err("remove", &path))?;
        } else {
            for n in (1..self.keep).rev() {
                let from = rotated_path(&path, n);
                match fs::rename(&from, rotated_path(&path, n + 1)) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(file_err("rename", &from)(e)),
                }
            }
            fs::rename(&path, rotated_path(&path, 1)).map_err(file_err("rename", &path))?;
        }
        if self.fsync != Fsync::Never {
            sync_parent(&path);
        }
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(LOG_MODE)
            .open(&path)
            .map_err(file_err("create", &path))?;
        self.file = Some(file);
        self.len = 0;
        self.dirty = false;
        tracing::info!(path = %path.display(), keep = self.keep, "rotated the audit log");
        Ok(())
    }
}

/// Syncs the directory holding `path`, so renames survive a crash. Best effort.
fn sync_parent(path: &Path) {
    let Some(dir) = path.parent() else { return };
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if let Err(e) = File::open(dir).and_then(|d| d.sync_all()) {
        tracing::debug!(dir = %dir.display(), error = %e, "could not sync the audit log directory");
    }
}

impl Sink for FileSink {
    fn is_open(&self) -> bool {
        self.file.is_some()
    }

    fn open(&mut self) -> Result<Opened, SinkError> {
        self.file = None;
        let path = self.path.clone();
        let mut file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .mode(LOG_MODE)
            .open(&path)
            .map_err(file_err("open", &path))?;
        let tail = scan_tail(&mut file).map_err(file_err("read", &path))?;
        let mut events = Vec::new();
        if tail.torn > 0 {
            file.set_len(tail.len)
                .map_err(file_err("truncate the partial last line of", &path))?;
            tracing::warn!(
                path = %path.display(),
                discarded_bytes = tail.torn,
                "the audit log ended in a partial line (a crash during a write?); \
                 cut it off and continuing the chain from the last complete line"
            );
            events.push(chain::event(
                EVENT_TORN_TAIL,
                [("discarded_bytes", json!(tail.torn))],
            ));
        }
        let last = match tail.last_line {
            Some(line) => Some((line, path.clone())),
            None => last_line_of(&rotated_path(&path, 1))?,
        };
        let prev = match last {
            None => ZERO_HASH.to_string(),
            Some((line, from)) => match chain::parse_line(&line) {
                Ok(link) => {
                    if !link.hash_ok {
                        tracing::warn!(
                            path = %from.display(),
                            "the last audit record does not match its hash (edited?); \
                             continuing the chain from its stored hash: run verify"
                        );
                    }
                    link.hash
                }
                Err(why) => {
                    let reason = format!(
                        "the last line of {} is not a valid audit record ({why})",
                        from.display()
                    );
                    tracing::warn!("{reason}; starting a new chain segment");
                    events.insert(
                        0,
                        chain::event(EVENT_CHAIN_RESET, [("reason", json!(reason))]),
                    );
                    ZERO_HASH.to_string()
                }
            },
        };
        self.file = Some(file);
        self.len = tail.len;
        self.dirty = false;
        Ok(Opened {
            prev: Some(prev),
            events,
        })
    }

    fn append(&mut self, lines: &[Sealed]) -> Result<(), (usize, SinkError)> {
        let mut done = 0;
        let mut buf = Vec::new();
        while done < lines.len() {
            let first = lines[done].line.len() as u64;
            if self.len > 0 && self.len.saturating_add(first) > self.max_bytes {
                if let Err(e) = self.rotate() {
                    self.close();
                    return Err((done, e));
                }
            }
            // As many lines as fit before the next rotation (at least one).
            buf.clear();
            let mut end = done;
            let mut size = 0u64;
            while let Some(sealed) = lines.get(end) {
                let l = sealed.line.len() as u64;
                if end > done && self.len + size + l > self.max_bytes {
                    break;
                }
                buf.extend_from_slice(&sealed.line);
                size += l;
                end += 1;
            }
            let Some(file) = self.file.as_mut() else {
                let e = io::Error::other("the file is not open");
                return Err((done, file_err("write to", &self.path)(e)));
            };
            if let Err(e) = file.write_all(&buf) {
                // Leave only whole lines; if this fails too, reopening cuts the tail.
                let _ = file.set_len(self.len);
                let err = file_err("write to", &self.path)(e);
                self.close();
                return Err((done, err));
            }
            self.len += size;
            self.dirty = true;
            done = end;
        }
        Ok(())
    }

    fn sync(&mut self) -> Result<(), SinkError> {
        match self.file.as_mut() {
            Some(file) if self.dirty => {
                file.sync_data().map_err(file_err("sync", &self.path))?;
                self.dirty = false;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn close(&mut self) {
        self.file = None;
        self.dirty = false;
    }
}

/// A stream sink: standard output, or anything else that takes bytes.
pub(crate) struct StreamSink {
    name: &'static str,
    out: Box<dyn Write + Send>,
}

impl StreamSink {
    pub fn new(name: &'static str, out: Box<dyn Write + Send>) -> Self {
        StreamSink { name, out }
    }

    pub fn stdout() -> Self {
        StreamSink::new("standard output", Box::new(io::stdout()))
    }

    fn err(&self, op: &'static str, source: io::Error) -> SinkError {
        SinkError {
            op,
            target: self.name.to_string(),
            source,
        }
    }
}

impl Sink for StreamSink {
    fn is_open(&self) -> bool {
        true
    }

    fn open(&mut self) -> Result<Opened, SinkError> {
        Ok(Opened::default())
    }

    fn append(&mut self, lines: &[Sealed]) -> Result<(), (usize, SinkError)> {
        let buf: Vec<u8> = lines.iter().flat_map(|s| s.line.iter().copied()).collect();
        self.out
            .write_all(&buf)
            .and_then(|()| self.out.flush())
            .map_err(|e| (0, self.err("write to", e)))
    }

    fn sync(&mut self) -> Result<(), SinkError> {
        self.out.flush().map_err(|e| self.err("flush", e))
    }

    fn close(&mut self) {}
}

/// The end of a file: its length without a partial last line, the partial line's
/// length, and the last complete line (without its newline).
#[derive(Debug, PartialEq)]
struct Tail {
    len: u64,
    torn: u64,
    last_line: Option<Vec<u8>>,
}

const SCAN_CHUNK: u64 = 64 * 1024;

/// Position of the last `\n` in `file[..before]`.
fn rfind_newline(file: &mut File, before: u64) -> io::Result<Option<u64>> {
    let mut end = before;
    let mut buf = vec![0u8; SCAN_CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(SCAN_CHUNK);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(chunk)?;
        if let Some(i) = chunk.iter().rposition(|&b| b == b'\n') {
            return Ok(Some(start + i as u64));
        }
        end = start;
    }
    Ok(None)
}

fn scan_tail(file: &mut File) -> io::Result<Tail> {
    let size = file.metadata()?.len();
    let len = match rfind_newline(file, size)? {
        Some(nl) => nl + 1,
        None => 0,
    };
    let last_line = if len == 0 {
        None
    } else {
        let start = rfind_newline(file, len - 1)?.map_or(0, |nl| nl + 1);
        let mut line = vec![0u8; (len - 1 - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut line)?;
        Some(line)
    };
    Ok(Tail {
        len,
        torn: size - len,
        last_line,
    })
}

/// The last complete line of `path`, read-only; `None` if the file does not exist
/// (a brand-new log) or has no complete line.
fn last_line_of(path: &Path) -> Result<Option<(Vec<u8>, PathBuf)>, SinkError> {
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(file_err("open", path)(e)),
    };
    let tail = scan_tail(&mut file).map_err(file_err("read", path))?;
    Ok(tail.last_line.map(|l| (l, path.to_path_buf())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::TempDir;

    fn scan(bytes: &[u8]) -> Tail {
        let dir = TempDir::new();
        let p = dir.path().join("f");
        fs::write(&p, bytes).expect("write");
        let mut f = File::open(&p).expect("open");
        scan_tail(&mut f).expect("scan")
    }

    #[test]
    fn tail_scan_table() {
        let long = "x".repeat(200_000);
        let cases: Vec<(String, u64, u64, Option<&str>)> = vec![
            (String::new(), 0, 0, None),
            ("a\n".into(), 2, 0, Some("a")),
            ("a\nbc\n".into(), 5, 0, Some("bc")),
            ("a\nbc\nde".into(), 5, 2, Some("bc")),
            ("partial".into(), 0, 7, None),
            ("\n".into(), 1, 0, Some("")),
            (format!("a\n{long}\n"), 200_003, 0, Some(long.as_str())),
            (format!("a\nb\n{long}"), 4, 200_000, Some("b")),
        ];
        for (content, len, torn, last) in cases {
            let t = scan(content.as_bytes());
            let what = &content[..content.len().min(20)];
            assert_eq!(t.len, len, "{what}");
            assert_eq!(t.torn, torn, "{what}");
            assert_eq!(t.last_line.as_deref(), last.map(str::as_bytes), "{what}");
        }
    }

    #[test]
    fn rotated_paths() {
        assert_eq!(
            rotated_path(Path::new("/var/log/audit.jsonl"), 3),
            PathBuf::from("/var/log/audit.jsonl.3")
        );
    }

    #[test]
    fn a_new_log_is_private_to_its_owner() {
        use std::os::unix::fs::PermissionsExt;
        let dir = TempDir::new();
        let p = dir.path().join("audit.jsonl");
        let mut sink = FileSink::new(p.clone(), 1 << 20, 1, Fsync::Never);
        sink.open().expect("open");
        let mode = fs::metadata(&p).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, LOG_MODE, "{mode:o}");
    }
}
