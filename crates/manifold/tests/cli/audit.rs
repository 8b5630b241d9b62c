//! `manifold audit verify` over logs written by the real audit writer, then damaged.

use manifold_audit::{AuditRecord, AuditSettings, Auditor, Fsync};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use tokio_util::sync::CancellationToken;

use super::bin;
use super::commands::TempDir;

/// Writes `n` records to `path` with the real writer, rotating at `max_bytes`.
fn write_log(path: &Path, n: usize, max_bytes: u64) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    rt.block_on(async {
        let settings = AuditSettings {
            max_bytes,
            fsync: Fsync::Never,
            ..AuditSettings::file(path)
        };
        let shutdown = CancellationToken::new();
        let (auditor, task) = Auditor::start(settings, shutdown.clone())
            .await
            .expect("start the auditor");
        for i in 0..n {
            let mut rec = AuditRecord::new(format!("r{i}"), "tools/call");
            rec.name = Some("demo__echo".into());
            rec.arguments = Some(serde_json::json!({"text": format!("hello {i}")}));
            auditor.record(rec).await.expect("record");
        }
        shutdown.cancel();
        task.await.expect("writer task");
    });
}

fn verify(paths: &[&Path]) -> Output {
    Command::new(bin())
        .args(["audit", "verify"])
        .args(paths)
        .output()
        .expect("run manifold")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Replaces the first `from` on 1-based line `line` of `path` with `to`.
fn edit_line(path: &Path, line: usize, from: &str, to: &str) {
    let content = std::fs::read_to_string(path).expect("read log");
    let mut lines: Vec<String> = content.lines().map(str::to_string).collect();
    assert!(lines[line - 1].contains(from), "{}", lines[line - 1]);
    lines[line - 1] = lines[line - 1].replacen(from, to, 1);
    std::fs::write(path, lines.join("\n") + "\n").expect("write log");
}

#[test]
fn an_intact_log_verifies_and_an_edited_line_is_named() {
    let dir = TempDir::new("audit");
    let log = dir.path().join("audit.jsonl");
    write_log(&log, 3, u64::MAX);
    let out = verify(&[&log]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(stdout.starts_with("OK: 3 records in 1 file"), "{stdout}");

    edit_line(&log, 2, "hello 1", "hello X");
    let out = verify(&[&log]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("{}:2: hash mismatch", log.display())),
        "{stdout}"
    );
}

#[test]
fn one_path_covers_its_rotated_files_oldest_first() {
    let dir = TempDir::new("audit-rotated");
    let log = dir.path().join("audit.jsonl");
    // Small enough that every record starts a new file.
    write_log(&log, 4, 300);
    let rotated: PathBuf = PathBuf::from(format!("{}.1", log.display()));
    assert!(rotated.exists(), "the writer rotated");
    let out = verify(&[&log]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.contains("with its rotated files, oldest first"),
        "{stdout}"
    );
    assert!(stdout.contains("OK: 4 records in 4 files"), "{stdout}");

    // Given explicitly, files are checked in the order given: newest first breaks
    // the chain at the second file's first line.
    let out = verify(&[&log, &rotated]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("{}:1: chain broken", rotated.display())),
        "{stdout}"
    );
}

#[test]
fn an_unreadable_file_exits_2() {
    let dir = TempDir::new("audit-missing");
    let missing = dir.path().join("nothing.jsonl");
    let out = verify(&[&missing]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(
        text(&out.stderr).contains("nothing.jsonl"),
        "{}",
        text(&out.stderr)
    );
    let other = dir.write("other.jsonl", "");
    let out = verify(&[&other, &missing]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stdout));
}
