//! Tests for the `Auditor`: real files in temporary directories, plus capture sinks
//! that can be slowed down or made to fail.

use super::*;
use crate::chain::{parse_line, EVENT_CHAIN_RESET, EVENT_TORN_TAIL};
use crate::testutil::{lines, write_lines, TempDir};
use crate::verify::{log_files, verify, ProblemKind};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A stream that keeps what it gets: optionally slowly, optionally failing,
/// optionally holding every write until `gate` opens.
#[derive(Clone)]
struct Capture {
    buf: Arc<Mutex<Vec<u8>>>,
    delay: Duration,
    fail: Arc<AtomicBool>,
    gate: Arc<AtomicBool>,
    entered: Arc<std::sync::atomic::AtomicUsize>,
}

impl Default for Capture {
    fn default() -> Self {
        Capture {
            buf: Arc::default(),
            delay: Duration::ZERO,
            fail: Arc::default(),
            gate: Arc::new(AtomicBool::new(true)),
            entered: Arc::default(),
        }
    }
}

impl Capture {
    fn slow(delay: Duration) -> Self {
        Capture {
            delay,
            ..Capture::default()
        }
    }
    fn gated() -> Self {
        Capture {
            gate: Arc::new(AtomicBool::new(false)),
            ..Capture::default()
        }
    }
    fn sink(&self) -> Box<dyn Sink> {
        Box::new(StreamSink::new("capture", Box::new(self.clone())))
    }
    fn lines(&self) -> Vec<String> {
        let buf = self.buf.lock();
        String::from_utf8_lossy(&buf)
            .lines()
            .map(str::to_string)
            .collect()
    }
}

impl Write for Capture {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        if self.fail.load(Ordering::SeqCst) {
            return Err(io::Error::other("injected failure"));
        }
        self.entered.fetch_add(1, Ordering::SeqCst);
        while !self.gate.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(1));
        }
        std::thread::sleep(self.delay);
        self.buf.lock().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn settings(path: &Path) -> AuditSettings {
    AuditSettings {
        fsync: Fsync::Never,
        ..AuditSettings::file(path)
    }
}

fn file_sink(s: &AuditSettings) -> Box<dyn Sink> {
    let path = s.path.clone().expect("a path");
    Box::new(FileSink::new(path, s.max_bytes, s.keep, s.fsync))
}

struct Running {
    auditor: Auditor,
    handle: JoinHandle<()>,
    token: CancellationToken,
}

impl Running {
    async fn start(s: AuditSettings) -> Self {
        let token = CancellationToken::new();
        let (auditor, handle) = Auditor::start(s, token.clone()).await.expect("start");
        Running {
            auditor,
            handle,
            token,
        }
    }
    async fn with_sinks(s: &AuditSettings, sinks: Vec<Box<dyn Sink>>) -> Self {
        let token = CancellationToken::new();
        let (auditor, handle) = Auditor::start_with_sinks(s, sinks, None, token.clone())
            .await
            .expect("start");
        Running {
            auditor,
            handle,
            token,
        }
    }
    async fn stop(self) {
        self.token.cancel();
        tokio::time::timeout(Duration::from_secs(10), self.handle)
            .await
            .expect("the writer stops")
            .expect("the writer does not panic");
    }
}

fn rec(i: usize) -> AuditRecord {
    let mut r = AuditRecord::new(format!("r{i}"), "tools/call");
    r.name = Some("demo__echo".into());
    r.upstream = Some("demo".into());
    r.original = Some("echo".into());
    r.arguments = Some(json!({"i": i, "text": "hello"}));
    r.latency_us = 10 + i as u64;
    r
}

async fn write_n(a: &Auditor, from: usize, n: usize) {
    for i in from..from + n {
        a.record(rec(i)).await.expect("recorded");
    }
}

fn verify_all(path: &Path) -> crate::verify::VerifyReport {
    verify(&log_files(path).expect("log files")).expect("readable")
}

fn field(line: &str, key: &str) -> Value {
    let v: Value = serde_json::from_str(line).expect("JSON line");
    v.get(key).cloned().unwrap_or(Value::Null)
}

/// Waits (up to 5 s) for `cond`.
async fn eventually(what: &str, cond: impl Fn() -> bool) {
    for _ in 0..100 {
        if cond() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for: {what}");
}

/// A path that cannot be created even by root: its parent is a regular file.
fn blocked_path(dir: &TempDir) -> (PathBuf, PathBuf) {
    let blocker = dir.path().join("not-a-dir");
    std::fs::write(&blocker, "x").expect("write");
    (blocker.clone(), blocker.join("audit.jsonl"))
}

#[tokio::test]
async fn records_are_chained_and_verify() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 0, 3).await;
    assert_eq!(r.auditor.stats().written, 3);
    r.stop().await;

    let l = lines(&path);
    assert_eq!(l.len(), 3);
    assert_eq!(field(&l[0], "prev"), json!(ZERO_HASH));
    for i in 1..3 {
        assert_eq!(
            field(&l[i], "prev"),
            field(&l[i - 1], "hash"),
            "line {}",
            i + 1
        );
        assert_eq!(field(&l[i], "request_id"), json!(format!("r{i}")));
    }
    let report = verify_all(&path);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 3);
}

#[tokio::test]
async fn fsync_always_resolves_after_the_line_is_in_the_file() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let s = AuditSettings {
        fsync: Fsync::Always,
        ..AuditSettings::file(&path)
    };
    let r = Running::start(s).await;
    for i in 0..5 {
        r.auditor.record(rec(i)).await.expect("recorded");
        let l = lines(&path);
        assert_eq!(l.len(), i + 1);
        assert_eq!(field(&l[i], "request_id"), json!(format!("r{i}")));
    }
    r.stop().await;
}

#[tokio::test]
async fn redaction_and_digest_end_to_end() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let r = Running::start(settings(&path)).await;
    let args = json!({"user": "ann", "Password": "hunter2", "nested": [{"token": "t0k"}]});
    let mut record = AuditRecord::new("r", "tools/call");
    record.arguments = Some(args.clone());
    r.auditor.record(record).await.expect("recorded");
    r.stop().await;
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(!text.contains("hunter2") && !text.contains("t0k"), "{text}");
    let line = &lines(&path)[0];
    assert_eq!(
        field(line, "arguments"),
        json!({"user": "ann", "Password": "[REDACTED]", "nested": [{"token": "[REDACTED]"}]})
    );
    assert_eq!(
        field(line, "arguments_sha256"),
        json!(crate::canonical::digest_hex(&args))
    );

    // include_arguments = false: the member is absent, the digest stays.
    let path2 = dir.path().join("b.jsonl");
    let s = AuditSettings {
        include_arguments: false,
        ..settings(&path2)
    };
    let r = Running::start(s).await;
    let mut record = AuditRecord::new("r", "tools/call");
    record.arguments = Some(args.clone());
    r.auditor.record(record).await.expect("recorded");
    r.stop().await;
    let line = &lines(&path2)[0];
    let v: Value = serde_json::from_str(line).expect("JSON");
    assert!(v.get("arguments").is_none(), "{line}");
    assert_eq!(
        v["arguments_sha256"],
        json!(crate::canonical::digest_hex(&args))
    );
}

#[tokio::test]
async fn rotation_carries_the_chain_across_files() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let s = AuditSettings {
        max_bytes: 1200,
        ..settings(&path)
    };
    let r = Running::start(s).await;
    write_n(&r.auditor, 0, 12).await;
    r.stop().await;

    let files = log_files(&path).expect("files");
    assert!(files.len() >= 3, "{files:?}");
    assert_eq!(files.last(), Some(&path));
    let mut all: Vec<String> = Vec::new();
    for (i, f) in files.iter().enumerate() {
        let size = std::fs::metadata(f).expect("stat").len();
        assert!(size <= 1200, "{} is {size} bytes", f.display());
        let l = lines(f);
        assert!(!l.is_empty());
        if i > 0 {
            // The first record of a newer file continues from the older file's last.
            assert_eq!(
                field(&l[0], "prev"),
                field(all.last().expect("a line"), "hash")
            );
        }
        all.extend(l);
    }
    let ids: Vec<Value> = all.iter().map(|l| field(l, "request_id")).collect();
    let want: Vec<Value> = (0..12).map(|i| json!(format!("r{i}"))).collect();
    assert_eq!(ids, want, "oldest first, nothing lost");
    let report = verify(&files).expect("readable");
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 12);
    assert_eq!(report.first_prev.as_deref(), Some(ZERO_HASH));
}

#[tokio::test]
async fn rotation_keeps_only_keep_files() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let s = AuditSettings {
        max_bytes: 500, // about one record per file
        keep: 2,
        ..settings(&path)
    };
    let r = Running::start(s).await;
    write_n(&r.auditor, 0, 8).await;
    r.stop().await;
    let files = log_files(&path).expect("files");
    assert_eq!(
        files,
        vec![
            crate::sink::rotated_path(&path, 2),
            crate::sink::rotated_path(&path, 1),
            path.clone()
        ]
    );
    let report = verify(&files).expect("readable");
    assert!(report.is_ok(), "{report}");
    assert!(report.records < 8);
    assert_ne!(
        report.first_prev.as_deref(),
        Some(ZERO_HASH),
        "older files are gone"
    );
}

#[tokio::test]
async fn restart_continues_the_chain() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 0, 3).await;
    r.stop().await;
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 3, 2).await;
    r.stop().await;
    let report = verify_all(&path);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 5);
    assert!(report.events.is_empty(), "{report}");
    assert_eq!(lines(&path).len(), 5);
}

#[tokio::test]
async fn restart_after_rotation_continues_from_the_rotated_file() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 0, 3).await;
    r.stop().await;
    // As if the process died right after rotating: only `.1` holds the chain.
    std::fs::rename(&path, crate::sink::rotated_path(&path, 1)).expect("rename");
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 3, 1).await;
    r.stop().await;
    let report = verify_all(&path);
    assert!(report.is_ok(), "{report}");
    assert_eq!((report.records, report.files.len()), (4, 2));
}

#[tokio::test]
async fn torn_tail_is_cut_off_and_noted() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 0, 3).await;
    r.stop().await;
    let partial = r#"{"time":"2025-"#;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    f.write_all(partial.as_bytes()).expect("write");
    drop(f);
    let report = verify_all(&path);
    assert_eq!(
        report.problem.as_ref().map(|p| (p.at.line, p.kind)),
        Some((4, ProblemKind::Truncated))
    );

    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 3, 1).await;
    r.stop().await;
    let l = lines(&path);
    assert_eq!(l.len(), 5);
    assert!(!std::fs::read_to_string(&path)
        .expect("read")
        .contains(partial));
    assert_eq!(field(&l[3], "event"), json!(EVENT_TORN_TAIL));
    assert_eq!(field(&l[3], "discarded_bytes"), json!(partial.len()));
    let report = verify_all(&path);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 4);
    assert_eq!(report.events.len(), 1);
    assert_eq!(report.events[0].at.line, 4);
}

#[tokio::test]
async fn unreadable_last_line_starts_a_new_segment() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 0, 2).await;
    r.stop().await;
    let mut l = lines(&path);
    l.push("garbage".into());
    write_lines(&path, &l);

    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 2, 1).await;
    r.stop().await;
    let mut l = lines(&path);
    assert_eq!(l.len(), 5);
    assert_eq!(field(&l[3], "event"), json!(EVENT_CHAIN_RESET));
    assert_eq!(field(&l[3], "prev"), json!(ZERO_HASH));
    // The damage itself is still reported…
    let report = verify_all(&path);
    assert_eq!(
        report.problem.as_ref().map(|p| (p.at.line, p.kind)),
        Some((3, ProblemKind::Malformed))
    );
    // …and without it the reset explains the new segment.
    l.remove(2);
    write_lines(&path, &l);
    let report = verify_all(&path);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 3);
    assert_eq!(report.events[0].event, EVENT_CHAIN_RESET);
}

#[tokio::test]
async fn edited_last_line_is_pinpointed_after_restart() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 0, 3).await;
    r.stop().await;
    let mut l = lines(&path);
    l[2] = l[2].replace("\"latency_us\":12", "\"latency_us\":1");
    write_lines(&path, &l);
    let r = Running::start(settings(&path)).await;
    write_n(&r.auditor, 3, 2).await;
    r.stop().await;
    let report = verify_all(&path);
    assert_eq!(
        report.problem.as_ref().map(|p| (p.at.line, p.kind)),
        Some((3, ProblemKind::HashMismatch)),
        "{report}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn back_pressure_never_drops() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let s = AuditSettings {
        queue: 1,
        ..settings(&path)
    };
    let slow = Capture::slow(Duration::from_millis(2));
    let r = Running::with_sinks(&s, vec![file_sink(&s), slow.sink()]).await;
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..100 {
        let a = r.auditor.clone();
        tasks.spawn(async move {
            let depth = a.stats().queue_depth;
            a.record(rec(i)).await.map(|()| depth)
        });
    }
    while let Some(done) = tasks.join_next().await {
        let depth = done.expect("task").expect("recorded");
        assert!(depth <= 1, "queue depth {depth} beyond capacity");
    }
    let stats = r.auditor.stats();
    assert_eq!((stats.written, stats.lost, stats.queue_depth), (100, 0, 0));
    r.stop().await;
    assert_eq!(lines(&path).len(), 100);
    assert_eq!(slow.lines(), lines(&path), "both sinks got identical lines");
    let report = verify_all(&path);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 100);
    let mut ids: Vec<String> = lines(&path)
        .iter()
        .map(|l| {
            field(l, "request_id")
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 100);
}

#[tokio::test]
async fn reject_refuses_while_unwritable_and_recovers() {
    let dir = TempDir::new();
    let (blocker, path) = blocked_path(&dir);
    let r = Running::start(settings(&path)).await;

    let err = r.auditor.check().expect_err("the sink is failing");
    assert!(err.is_unavailable(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("audit log unavailable: cannot open ") && msg.contains("audit.jsonl"),
        "{msg}"
    );
    let err = r.auditor.record(rec(0)).await.expect_err("rejected");
    assert!(err.is_unavailable());
    assert!(
        err.to_string()
            .starts_with("audit log unavailable: cannot open "),
        "{err}"
    );
    let stats = r.auditor.stats();
    assert_eq!((stats.written, stats.lost), (0, 1));

    // Fix the location: the writer retries on its own and recovers.
    std::fs::remove_file(&blocker).expect("remove");
    std::fs::create_dir(&blocker).expect("mkdir");
    eventually("check() passes again", || r.auditor.check().is_ok()).await;
    r.auditor.record(rec(1)).await.expect("recorded");
    r.stop().await;

    let l = lines(&path);
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!(field(&l[0], "event"), json!(EVENT_RECORDS_LOST));
    assert_eq!(field(&l[0], "count"), json!(1));
    assert_eq!(field(&l[1], "request_id"), json!("r1"));
    let report = verify_all(&path);
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 1);
}

#[tokio::test]
async fn continue_counts_lost_records() {
    let dir = TempDir::new();
    let (blocker, path) = blocked_path(&dir);
    let s = AuditSettings {
        on_failure: OnFailure::Continue,
        ..settings(&path)
    };
    let r = Running::start(s).await;
    r.auditor.check().expect("continue never refuses");
    for i in 0..3 {
        r.auditor.record(rec(i)).await.expect("not refused");
    }
    let stats = r.auditor.stats();
    assert_eq!((stats.written, stats.lost), (0, 3));

    std::fs::remove_file(&blocker).expect("remove");
    std::fs::create_dir(&blocker).expect("mkdir");
    r.auditor.record(rec(3)).await.expect("recorded");
    eventually("the record is written", || r.auditor.stats().written == 1).await;
    r.stop().await;
    let l = lines(&path);
    assert_eq!(l.len(), 2, "{l:?}");
    assert_eq!(field(&l[0], "count"), json!(3));
    assert_eq!(field(&l[1], "request_id"), json!("r3"));
    assert!(verify_all(&path).is_ok());
}

#[tokio::test]
async fn failing_stream_is_retried_and_the_gap_is_chained() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let s = settings(&path);
    let cap = Capture::default();
    let r = Running::with_sinks(&s, vec![file_sink(&s), cap.sink()]).await;
    write_n(&r.auditor, 0, 1).await;
    cap.fail.store(true, Ordering::SeqCst);
    let err = r.auditor.record(rec(1)).await.expect_err("stream failing");
    assert!(
        err.to_string()
            .contains("cannot write to capture: injected failure"),
        "{err}"
    );
    assert!(r.auditor.check().is_err());
    cap.fail.store(false, Ordering::SeqCst);
    eventually("the stream recovers", || r.auditor.check().is_ok()).await;
    write_n(&r.auditor, 2, 1).await;
    r.stop().await;

    // The file got all three records; the stream got two and a note of the gap.
    assert_eq!(lines(&path).len(), 3);
    let captured = cap.lines();
    assert_eq!(captured.len(), 3);
    assert_eq!(field(&captured[1], "event"), json!(EVENT_RECORDS_LOST));
    assert_eq!(field(&captured[1], "count"), json!(1));
    let cap_path = dir.path().join("captured.jsonl");
    write_lines(&cap_path, &captured);
    let report = verify(&[cap_path]).expect("readable");
    assert!(report.is_ok(), "{report}");
    assert_eq!(report.records, 2);
    for l in &captured {
        assert!(parse_line(l.as_bytes()).expect("chain line").hash_ok);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_drains_the_queue() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let s = AuditSettings {
        queue: 64,
        ..settings(&path)
    };
    // The stream holds the writer in its first batch until the gate opens.
    let gated = Capture::gated();
    let r = Running::with_sinks(&s, vec![file_sink(&s), gated.sink()]).await;
    let mut tasks = tokio::task::JoinSet::new();
    let a = r.auditor.clone();
    tasks.spawn(async move { a.record(rec(0)).await });
    eventually("the writer is busy with the first record", || {
        gated.entered.load(Ordering::SeqCst) > 0
    })
    .await;
    for i in 1..20 {
        let a = r.auditor.clone();
        tasks.spawn(async move { a.record(rec(i)).await });
    }
    let a = r.auditor.clone();
    eventually("19 records queued", || a.stats().queue_depth == 19).await;
    r.token.cancel();
    gated.gate.store(true, Ordering::SeqCst);
    r.stop().await;
    while let Some(done) = tasks.join_next().await {
        done.expect("task")
            .expect("queued records are written on shutdown");
    }
    assert_eq!(lines(&path).len(), 20);
    assert_eq!(gated.lines().len(), 20);
    let err = a.record(rec(99)).await.expect_err("closed");
    assert!(err.is_closed(), "{err}");
    assert!(a.check().expect_err("closed").is_closed());
}

#[tokio::test]
async fn stream_starts_from_the_file_chain() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let s = settings(&path);
    let r = Running::start(s.clone()).await;
    write_n(&r.auditor, 0, 2).await;
    r.stop().await;
    let cap = Capture::default();
    let r = Running::with_sinks(&s, vec![file_sink(&s), cap.sink()]).await;
    write_n(&r.auditor, 2, 2).await;
    r.stop().await;
    let l = lines(&path);
    assert_eq!(cap.lines(), l[2..].to_vec());
}

#[tokio::test]
async fn invalid_settings_do_not_start() {
    let err = Auditor::start(AuditSettings::default(), CancellationToken::new())
        .await
        .expect_err("no sink");
    assert!(err.is_invalid_settings(), "{err}");
}
