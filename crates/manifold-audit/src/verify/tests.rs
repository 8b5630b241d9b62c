//! Tests for `verify`: logs built with the real sealing code, then damaged on purpose.

use super::*;
use crate::chain::{event, seal};
use crate::record::AuditRecord;
use crate::redact::Redactor;
use crate::testutil::{lines, write_lines, TempDir};
use serde_json::json;

/// `n` chained record lines after `prev`, and the last hash.
fn chained(n: usize, first: usize, prev: &str) -> (Vec<String>, String) {
    let mut prev = prev.to_string();
    let mut out = Vec::new();
    for i in first..first + n {
        let mut rec = AuditRecord::new(format!("r{i}"), "tools/call");
        rec.latency_us = 100 + i as u64;
        rec.arguments = Some(json!({"i": i}));
        let s = seal(
            &rec.to_entry(
                &Redactor::default(),
                true,
                &crate::record::SizeCap::default(),
            ),
            &prev,
        );
        out.push(
            String::from_utf8(s.line)
                .expect("UTF-8")
                .trim_end()
                .to_string(),
        );
        prev = s.hash;
    }
    (out, prev)
}

fn log_of(dir: &TempDir, name: &str, lines: &[String]) -> PathBuf {
    let p = dir.path().join(name);
    write_lines(&p, lines);
    p
}

fn problem(report: &VerifyReport) -> (u64, ProblemKind) {
    let p = report.problem.as_ref().expect("a problem");
    (p.at.line, p.kind)
}

#[test]
fn intact_log_is_ok() {
    let dir = TempDir::new();
    let (l, last) = chained(6, 0, ZERO_HASH);
    let p = log_of(&dir, "audit.jsonl", &l);
    let r = verify(std::slice::from_ref(&p)).expect("readable");
    assert!(r.is_ok(), "{r}");
    assert_eq!(r.records, 6);
    assert_eq!(r.first_prev.as_deref(), Some(ZERO_HASH));
    assert_eq!(r.last_hash.as_deref(), Some(last.as_str()));
    assert_eq!(
        r.to_string(),
        format!("OK: 6 records in 1 file; last hash {last}")
    );
}

#[test]
fn empty_file_is_ok_with_no_records() {
    let dir = TempDir::new();
    let p = log_of(&dir, "audit.jsonl", &[]);
    let r = verify(&[p]).expect("readable");
    assert!(r.is_ok());
    assert_eq!(r.records, 0);
    assert_eq!(r.to_string(), "OK: 0 records in 1 file");
}

#[test]
fn damage_is_found_at_the_exact_line() {
    let (good, _) = chained(6, 0, ZERO_HASH);
    let edit = |i: usize, f: &dyn Fn(&str) -> String| {
        let mut l = good.clone();
        l[i] = f(&l[i]);
        l
    };
    let cases: Vec<(&str, Vec<String>, u64, ProblemKind)> = vec![
        (
            "edited field on line 3",
            edit(2, &|s| s.replace("\"latency_us\":102", "\"latency_us\":7")),
            3,
            ProblemKind::HashMismatch,
        ),
        (
            "edited argument on line 5",
            edit(4, &|s| s.replace("{\"i\":4}", "{\"i\":40}")),
            5,
            ProblemKind::HashMismatch,
        ),
        (
            "edited prev on line 2",
            edit(1, &|s| {
                let at = s.find("\"prev\":\"").map_or(0, |i| i + 8);
                format!("{}{}{}", &s[..at], "f".repeat(64), &s[at + 64..])
            }),
            2,
            ProblemKind::HashMismatch,
        ),
        (
            "prev no longer a hash on line 2",
            edit(1, &|s| s.replacen("\"prev\":\"", "\"prev\":\"0", 1)),
            2,
            ProblemKind::Malformed,
        ),
        (
            "deleted line 3: found on the line that follows it, now line 3",
            [&good[..2], &good[3..]].concat(),
            3,
            ProblemKind::ChainBroken,
        ),
        (
            "swapped lines 2 and 3",
            {
                let mut l = good.clone();
                l.swap(1, 2);
                l
            },
            2,
            ProblemKind::ChainBroken,
        ),
        (
            "duplicated line 4",
            [&good[..4], &good[3..]].concat(),
            5,
            ProblemKind::ChainBroken,
        ),
        (
            "non-JSON line 4",
            edit(3, &|_| "this is not json".into()),
            4,
            ProblemKind::Malformed,
        ),
        (
            "empty line 2",
            edit(1, &|_| String::new()),
            2,
            ProblemKind::Malformed,
        ),
        (
            "JSON without chain members on line 1",
            edit(0, &|_| r#"{"method":"tools/call"}"#.into()),
            1,
            ProblemKind::Malformed,
        ),
    ];
    for (what, content, line, kind) in cases {
        let dir = TempDir::new();
        let p = log_of(&dir, "audit.jsonl", &content);
        let r = verify(&[p]).expect("readable");
        assert!(r.problem.is_some(), "{what}: {r}");
        assert_eq!(problem(&r), (line, kind), "{what}: {r}");
    }
}

#[test]
fn deleting_the_first_line_of_the_whole_log_is_only_visible_in_first_prev() {
    // Nothing precedes line 1 in the files, so the report shows where it starts.
    let dir = TempDir::new();
    let (good, _) = chained(3, 0, ZERO_HASH);
    let p = log_of(&dir, "audit.jsonl", &good[1..]);
    let r = verify(&[p]).expect("readable");
    assert!(r.is_ok());
    assert_ne!(r.first_prev.as_deref(), Some(ZERO_HASH));
    assert!(r.to_string().contains("which is not in these files"), "{r}");
}

#[test]
fn truncated_last_line() {
    let dir = TempDir::new();
    let (good, _) = chained(6, 0, ZERO_HASH);
    let p = dir.path().join("audit.jsonl");
    let mut text = good.join("\n");
    text.truncate(text.len() - 40);
    std::fs::write(&p, &text).expect("write");
    let r = verify(std::slice::from_ref(&p)).expect("readable");
    assert_eq!(problem(&r), (6, ProblemKind::Truncated));
    // A complete record without its newline is still reported as truncated.
    std::fs::write(&p, good.join("\n")).expect("write");
    let r = verify(&[p]).expect("readable");
    assert_eq!(problem(&r), (6, ProblemKind::Truncated));
}

#[test]
fn problem_display() {
    let dir = TempDir::new();
    let (good, _) = chained(20, 0, ZERO_HASH);
    let content = [&good[..16], &good[17..]].concat(); // line 17 deleted
    let p = log_of(&dir, "audit.jsonl", &content);
    let r = verify(std::slice::from_ref(&p)).expect("readable");
    assert_eq!(
        r.to_string(),
        format!(
            "{}:17: chain broken: prev does not match line 16's hash (a record was deleted or reordered)",
            p.display()
        )
    );
    assert_eq!(r.records, 16, "records before the problem");

    let content = [&good[..4], &["{oops".to_string()]].concat();
    let p = log_of(&dir, "b.jsonl", &content);
    let r = verify(std::slice::from_ref(&p)).expect("readable");
    let text = r.to_string();
    assert!(
        text.starts_with(&format!("{}:5: malformed: not JSON: ", p.display())),
        "{text}"
    );
}

#[test]
fn chain_across_files() {
    let dir = TempDir::new();
    let (a, h_a) = chained(3, 0, ZERO_HASH);
    let (b, h_b) = chained(2, 3, &h_a);
    let (c, _) = chained(4, 5, &h_b);
    let p2 = log_of(&dir, "audit.jsonl.2", &a);
    let p1 = log_of(&dir, "audit.jsonl.1", &b);
    let p0 = log_of(&dir, "audit.jsonl", &c);
    let files = log_files(&p0).expect("listed");
    assert_eq!(files, vec![p2.clone(), p1.clone(), p0.clone()]);
    let r = verify(&files).expect("readable");
    assert!(r.is_ok(), "{r}");
    assert_eq!(r.records, 9);
    assert_eq!(r.files.len(), 3);
    assert!(r
        .to_string()
        .starts_with("OK: 9 records in 3 files; last hash "));

    // Wrong order of files.
    let r = verify(&[p1.clone(), p2.clone(), p0.clone()]).expect("readable");
    assert_eq!(problem(&r), (1, ProblemKind::ChainBroken));
    assert_eq!(
        r.problem.as_ref().map(|p| p.at.path.clone()),
        Some(p2.clone())
    );

    // A missing middle file.
    let r = verify(&[p2.clone(), p0.clone()]).expect("readable");
    let p = r.problem.clone().expect("a problem");
    assert_eq!(
        (p.at.path.clone(), p.at.line, p.kind),
        (p0.clone(), 1, ProblemKind::ChainBroken)
    );
    assert!(p.detail.contains("audit.jsonl.2"), "{p}");

    // The last line of a rotated file deleted.
    write_lines(&p1, &b[..1]);
    let r = verify(&files).expect("readable");
    let p = r.problem.clone().expect("a problem");
    assert_eq!(
        (p.at.path, p.at.line, p.kind),
        (p0, 1, ProblemKind::ChainBroken)
    );
}

#[test]
fn chain_reset_starts_a_segment_and_other_zero_prevs_do_not() {
    let dir = TempDir::new();
    let (a, _) = chained(3, 0, ZERO_HASH);
    let reset = seal(
        &event(
            EVENT_CHAIN_RESET,
            [("reason", json!("the last line was garbage"))],
        ),
        ZERO_HASH,
    );
    let (b, _) = chained(2, 3, &reset.hash);
    let reset_line = String::from_utf8(reset.line)
        .expect("UTF-8")
        .trim_end()
        .to_string();
    let content = [&a[..], &[reset_line][..], &b[..]].concat();
    let p = log_of(&dir, "audit.jsonl", &content);
    let r = verify(std::slice::from_ref(&p)).expect("readable");
    assert!(r.is_ok(), "{r}");
    assert_eq!(r.records, 5);
    assert_eq!(r.events.len(), 1);
    assert_eq!(r.events[0].at.line, 4);
    assert_eq!(r.events[0].event, EVENT_CHAIN_RESET);
    assert!(
        r.to_string()
            .contains(":4: chain_reset: the chain starts again: the last line was garbage"),
        "{r}"
    );

    // A record (not a reset) that starts from zeros mid-log is a broken chain.
    let (fresh, _) = chained(1, 9, ZERO_HASH);
    let content = [&a[..], &fresh[..]].concat();
    let p = log_of(&dir, "b.jsonl", &content);
    let r = verify(&[p]).expect("readable");
    assert_eq!(problem(&r), (4, ProblemKind::ChainBroken));
}

#[test]
fn events_are_listed() {
    let dir = TempDir::new();
    let (a, h) = chained(2, 0, ZERO_HASH);
    let lost = seal(&event(EVENT_RECORDS_LOST, [("count", json!(3))]), &h);
    let torn = seal(
        &event(EVENT_TORN_TAIL, [("discarded_bytes", json!(17))]),
        &lost.hash,
    );
    let (b, _) = chained(1, 2, &torn.hash);
    let text = |s: crate::chain::Sealed| {
        String::from_utf8(s.line)
            .expect("UTF-8")
            .trim_end()
            .to_string()
    };
    let content = [&a[..], &[text(lost), text(torn)][..], &b[..]].concat();
    let p = log_of(&dir, "audit.jsonl", &content);
    let r = verify(&[p]).expect("readable");
    assert!(r.is_ok(), "{r}");
    assert_eq!(r.records, 3);
    let notes: Vec<(u64, &str)> = r
        .events
        .iter()
        .map(|e| (e.at.line, e.detail.as_str()))
        .collect();
    assert_eq!(
        notes,
        [
            (
                3,
                "3 records were not written here while the log was failing"
            ),
            (
                4,
                "17 bytes of a partial line were cut off on start (a crash during a write)"
            )
        ]
    );
}

#[test]
fn log_files_orders_oldest_first_and_ignores_strangers() {
    let dir = TempDir::new();
    for name in [
        "audit.jsonl",
        "audit.jsonl.1",
        "audit.jsonl.2",
        "audit.jsonl.10",
        "audit.jsonl.x",
        "audit.jsonl.01",
        "audit.jsonl.+3",
        "audit.jsonl.1.bak",
        "other.jsonl.1",
    ] {
        std::fs::write(dir.path().join(name), "").expect("write");
    }
    let got = log_files(&dir.path().join("audit.jsonl")).expect("listed");
    let names: Vec<String> = got
        .iter()
        .map(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "audit.jsonl.10",
            "audit.jsonl.2",
            "audit.jsonl.1",
            "audit.jsonl"
        ]
    );

    // Only rotated files left (the current one not created yet).
    std::fs::remove_file(dir.path().join("audit.jsonl")).expect("remove");
    assert_eq!(
        log_files(&dir.path().join("audit.jsonl"))
            .expect("listed")
            .len(),
        3
    );

    let err = log_files(&dir.path().join("nothing.jsonl")).expect_err("no log");
    assert!(err.is_io(), "{err}");
}

#[test]
fn unreadable_file_is_an_error_not_a_problem() {
    let dir = TempDir::new();
    let err = verify(&[dir.path().join("missing.jsonl")]).expect_err("missing file");
    assert!(err.is_io());
    assert!(err.to_string().contains("missing.jsonl"), "{err}");
    // The lines helper is shared with the writer tests; keep it honest here too.
    let p = log_of(&dir, "x", &["a".into(), "b".into()]);
    assert_eq!(lines(&p), ["a", "b"]);
}
