//! Tests for `reader`: logs written with the real record and chain code, read
//! back page by page, across rotated files, with every filter; and the first
//! page of a 100,000-record log within the console's budget.

use super::*;
use crate::chain::{seal, ZERO_HASH};
use crate::record::{AuditRecord, Outcome};
use crate::redact::Redactor;
use crate::testutil::TempDir;
use serde_json::json;
use std::io::Write;
use std::time::{Duration, Instant, UNIX_EPOCH};

const PRINCIPALS: [&str; 10] = [
    "api_key:alice",
    "api_key:bob",
    "jwt:corp:carol",
    "jwt:corp:dave",
    "api_key:erin",
    "api_key:frank",
    "jwt:corp:grace",
    "api_key:heidi",
    "api_key:ivan",
    "api_key:judy",
];
const TOOLS: [(&str, &str); 7] = [
    ("demo", "echo"),
    ("demo", "add"),
    ("demo", "weather"),
    ("demo2", "echo"),
    ("demo2", "slow_progress"),
    ("github", "create_issue"),
    ("github", "search"),
];

/// Record `i` of a synthetic log: principals, tools and outcomes cycle with
/// different periods, one second apart from 2026-11-26T00:00:00Z.
fn record(i: usize) -> AuditRecord {
    let (upstream, tool) = TOOLS[i % TOOLS.len()];
    let mut r = AuditRecord::new(format!("{i:016x}"), "tools/call");
    r.time = UNIX_EPOCH + Duration::from_secs(1_795_651_200 + i as u64);
    r.principal = PRINCIPALS[i % PRINCIPALS.len()].into();
    r.upstream = Some(upstream.into());
    r.original = Some(tool.into());
    r.name = Some(format!("{upstream}__{tool}"));
    r.arguments = Some(json!({"text": format!("call number {i}"), "n": i}));
    r.outcome = match i % 20 {
        0 => Outcome::Timeout,
        1 | 2 => Outcome::ToolError,
        3 => Outcome::Refused { code: -32060 },
        _ => Outcome::Ok,
    };
    r.latency_us = 100 + (i as u64 * 37) % 5000;
    r
}

/// Writes records `range` chained after `prev` to `path`; returns the last hash.
fn write_log(path: &Path, range: std::ops::Range<usize>, prev: &str) -> String {
    let mut prev = prev.to_string();
    let mut f = std::io::BufWriter::new(File::create(path).expect("create"));
    for i in range {
        let s = seal(
            &record(i).to_entry(
                &Redactor::default(),
                true,
                &crate::record::SizeCap::default(),
            ),
            &prev,
        );
        f.write_all(&s.line).expect("write");
        prev = s.hash;
    }
    f.flush().expect("flush");
    prev
}

/// A log of `n` records in three files: `.2` (oldest), `.1`, current.
fn rotated_log(dir: &TempDir, n: usize) -> PathBuf {
    let path = dir.path().join("audit.jsonl");
    let third = n / 3;
    let h = write_log(&crate::sink::rotated_path(&path, 2), 0..third, ZERO_HASH);
    let h = write_log(&crate::sink::rotated_path(&path, 1), third..2 * third, &h);
    write_log(&path, 2 * third..n, &h);
    path
}

fn ids(page: &Page) -> Vec<usize> {
    page.records
        .iter()
        .map(|f| {
            let id = f.record["request_id"].as_str().expect("id");
            usize::from_str_radix(id, 16).expect("hex id")
        })
        .collect()
}

/// Every page of `filter`, following cursors; the ids in order.
fn all_pages(path: &Path, filter: &Filter, limit: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut before = None;
    for _ in 0..10_000 {
        let page = read_page(path, filter, before, limit, DEFAULT_SCAN_BUDGET).expect("page");
        out.extend(ids(&page));
        match page.next {
            Some(c) => before = Some(c),
            None => return out,
        }
    }
    panic!("too many pages");
}

#[test]
fn pages_go_newest_to_oldest_across_rotated_files_without_gaps() {
    let dir = TempDir::new();
    let path = rotated_log(&dir, 300);
    for limit in [1, 7, 50, 100, 500] {
        let got = all_pages(&path, &Filter::default(), limit);
        let want: Vec<usize> = (0..300).rev().collect();
        assert_eq!(got, want, "limit {limit}");
    }
}

/// Which record indexes a filter should keep.
type Keep = Box<dyn Fn(usize) -> bool>;

#[test]
fn filters_keep_exactly_the_matching_records() {
    let dir = TempDir::new();
    let n = 600;
    let path = rotated_log(&dir, n);
    let time = |i: usize| manifold_foundation::time::rfc3339_micros(record(i).time);
    let cases: Vec<(Filter, Keep)> = vec![
        (
            Filter {
                principal: Some("carol".into()),
                ..Filter::default()
            },
            Box::new(|i| i % 10 == 2),
        ),
        (
            Filter {
                tool: Some("echo".into()),
                ..Filter::default()
            },
            Box::new(|i| i % 7 == 0 || i % 7 == 3),
        ),
        (
            Filter {
                upstream: Some("demo2".into()),
                outcome: Some("ok".into()),
                ..Filter::default()
            },
            Box::new(|i| matches!(i % 7, 3 | 4) && i % 20 >= 4),
        ),
        (
            Filter {
                outcome: Some("timeout".into()),
                ..Filter::default()
            },
            Box::new(|i| i % 20 == 0),
        ),
        (
            Filter {
                from: Some(time(150)),
                to: Some(time(420)),
                ..Filter::default()
            },
            Box::new(|i| (150..=420).contains(&i)),
        ),
        (
            Filter {
                // A prefix: every record of that minute.
                to: Some(time(125)[..16].to_string()),
                principal: Some("api_key:".into()),
                ..Filter::default()
            },
            Box::new(|i| i < 180 && !PRINCIPALS[i % 10].starts_with("jwt")),
        ),
        (
            Filter {
                principal: Some("nobody".into()),
                ..Filter::default()
            },
            Box::new(|_| false),
        ),
    ];
    for (filter, keep) in cases {
        let want: Vec<usize> = (0..n).rev().filter(|&i| keep(i)).collect();
        assert_eq!(all_pages(&path, &filter, 25), want, "{filter:?}");
    }
}

#[test]
fn a_partial_last_line_and_a_rotation_between_pages() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let h = write_log(&path, 0..10, ZERO_HASH);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    f.write_all(b"{\"time\":\"2026-").expect("partial line");
    let first = read_page(&path, &Filter::default(), None, 4, DEFAULT_SCAN_BUDGET).expect("page");
    assert_eq!(ids(&first), vec![9, 8, 7, 6]);
    // The file rotates (a rename keeps the inode) and a new one starts: the
    // cursor still leads to the rest.
    std::fs::rename(&path, crate::sink::rotated_path(&path, 1)).expect("rotate");
    write_log(&path, 10..12, &h);
    let rest = read_page(
        &path,
        &Filter::default(),
        first.next,
        100,
        DEFAULT_SCAN_BUDGET,
    )
    .expect("page");
    assert_eq!(ids(&rest), vec![5, 4, 3, 2, 1, 0]);
    assert_eq!(rest.next, None);
    // Its file gone, the cursor is refused.
    std::fs::remove_file(crate::sink::rotated_path(&path, 1)).expect("remove");
    let gone = read_page(
        &path,
        &Filter::default(),
        first.next,
        4,
        DEFAULT_SCAN_BUDGET,
    );
    assert!(matches!(gone, Err(AuditError::StaleCursor)), "{gone:?}");
}

#[test]
fn the_budget_stops_a_page_and_the_cursor_goes_on() {
    let dir = TempDir::new();
    let path = rotated_log(&dir, 3000);
    let filter = Filter {
        principal: Some("nobody-at-all".into()),
        ..Filter::default()
    };
    let page = read_page(&path, &filter, None, 50, 200_000).expect("page");
    assert!(page.records.is_empty());
    assert!(page.budget_spent);
    assert!(page.scanned_bytes < 200_000 + READ_BLOCK as u64);
    // A matching filter, resumed from budget cursors, still finds everything.
    let filter = Filter {
        principal: Some("judy".into()),
        ..Filter::default()
    };
    let mut before = None;
    let mut got = Vec::new();
    for _ in 0..1000 {
        let page = read_page(&path, &filter, before, 50, 100_000).expect("page");
        got.extend(ids(&page));
        match page.next {
            Some(c) => before = Some(c),
            None => break,
        }
    }
    let want: Vec<usize> = (0..3000).rev().filter(|i| i % 10 == 9).collect();
    assert_eq!(got, want);
}

#[test]
fn long_lines_are_skipped_and_counted() {
    let dir = TempDir::new();
    let path = dir.path().join("audit.jsonl");
    let h = write_log(&path, 0..3, ZERO_HASH);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    let long = format!("{{\"x\":\"{}\"}}\n", "a".repeat(MAX_LINE_BYTES + 10));
    f.write_all(long.as_bytes()).expect("long line");
    drop(f);
    let tail = dir.path().join("tail");
    write_log(&tail, 3..5, &h);
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("open");
    f.write_all(&std::fs::read(&tail).expect("read"))
        .expect("append");
    drop(f);
    let page = read_page(&path, &Filter::default(), None, 100, u64::MAX).expect("page");
    assert_eq!(ids(&page), vec![4, 3, 2, 1, 0]);
    assert_eq!(page.skipped_long_lines, 1);
}

/// The console's promise: the first page of a filtered view of a
/// 100,000-record log in at most 200 ms (the bound), for each filter
/// the audit view offers.
#[test]
fn first_page_of_a_100000_record_log_within_200_ms() {
    let dir = TempDir::new();
    let n = 100_000;
    let path = rotated_log(&dir, n);
    let time = |i: usize| manifold_foundation::time::rfc3339_micros(record(i).time);
    let filters = [
        Filter::default(),
        Filter {
            principal: Some("alice".into()),
            ..Filter::default()
        },
        Filter {
            tool: Some("create_issue".into()),
            ..Filter::default()
        },
        Filter {
            upstream: Some("github".into()),
            outcome: Some("tool_error".into()),
            ..Filter::default()
        },
        Filter {
            outcome: Some("timeout".into()),
            ..Filter::default()
        },
        Filter {
            from: Some(time(90_000)),
            to: Some(time(95_000)),
            principal: Some("jwt:corp:".into()),
            ..Filter::default()
        },
    ];
    for filter in filters {
        // Best of three: the bound is about the reader, not a busy machine's
        // scheduling of one run.
        let mut best = Duration::MAX;
        let mut page = Page::default();
        for _ in 0..3 {
            let t = Instant::now();
            page = read_page(&path, &filter, None, 50, DEFAULT_SCAN_BUDGET).expect("page");
            best = best.min(t.elapsed());
        }
        assert_eq!(page.records.len(), 50, "{filter:?}");
        assert!(
            page.records.iter().all(|f| filter.matches(&f.record)),
            "{filter:?}"
        );
        assert!(
            best <= Duration::from_millis(200),
            "{filter:?}: first page took {best:?}"
        );
        eprintln!("{filter:?}: {best:?}, {} bytes read", page.scanned_bytes);
    }
}
