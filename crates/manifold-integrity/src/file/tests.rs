//! The store file: created 0600 and written whole, revision per write, no
//! write for no change, no update lost between concurrent writers, a held
//! lock waited for within a bound, damaged files named, and the watch
//! reporting only other processes' changes.

use super::*;
use crate::store::{Op, Update};
use crate::{item::ItemKind, item::ItemRef};
use manifold_catalog::fingerprint::Fingerprint;
use serde_json::{json, Map, Value};

struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let p =
            std::env::temp_dir().join(format!("manifold-pins-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("temp dir");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn pin(upstream: &str, name: &str) -> Update {
    let mut d = Map::new();
    d.insert("name".into(), Value::from(name));
    Update {
        upstream: upstream.into(),
        ops: vec![Op::Pin {
            kind: ItemKind::Tool,
            name: name.into(),
            fingerprint: Fingerprint::of(&d),
            definition: d,
            at: "t".into(),
        }],
    }
}

#[test]
fn a_missing_file_is_empty_and_writes_are_whole_private_and_counted() {
    use std::os::unix::fs::PermissionsExt;
    let dir = TempDir::new("write");
    let file = StoreFile::new(dir.0.join("pins.json"));
    assert_eq!(file.load().expect("empty"), PinStore::new());
    assert_eq!(file.stamp().expect("stat"), None);

    let (store, changed) = file.modify(|s| s.apply(&pin("gh", "a"))).expect("write");
    assert!(changed);
    assert_eq!(store.revision, 1);
    let mode = std::fs::metadata(file.path())
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    assert!(!dir.0.join("pins.json.tmp").exists(), "renamed away");
    assert_eq!(file.load().expect("load"), store);

    // A change that changes nothing writes nothing.
    let stamp = file.stamp().expect("stat");
    let (same, changed) = file.modify(|s| s.apply(&pin("gh", "a"))).expect("no-op");
    assert!(!changed);
    assert_eq!(same.revision, 1);
    assert_eq!(file.stamp().expect("stat"), stamp);

    // A leftover from a crash mid-write is overwritten, never read.
    std::fs::write(dir.0.join("pins.json.tmp"), "garbage").expect("write");
    let (store, _) = file.modify(|s| s.apply(&pin("gh", "b"))).expect("write");
    assert_eq!(store.revision, 2);
    assert_eq!(file.load().expect("load").pins().count(), 2);
}

#[test]
fn damaged_or_unreadable_files_are_errors_that_name_the_file() {
    let dir = TempDir::new("damaged");
    let path = dir.0.join("pins.json");
    std::fs::write(&path, "{\"format\": \"manifold-pins-v1\", \"revision\": 1").expect("write");
    let e = StoreFile::new(&path).load().expect_err("damaged");
    assert!(e.is_bad_file());
    let text = e.to_string();
    assert!(text.starts_with(&path.display().to_string()), "{text}");
    assert!(text.contains("not a pin store"), "{text}");
    // A damaged store is never replaced by a change.
    let e = StoreFile::new(&path)
        .modify(|s| s.apply(&pin("gh", "a")))
        .expect_err("damaged");
    assert!(e.is_bad_file(), "{e}");
    assert!(std::fs::read_to_string(&path)
        .expect("read")
        .ends_with("\"revision\": 1"));
    // A directory where the file should be.
    let e = StoreFile::new(&dir.0).load().expect_err("a directory");
    assert!(e.is_bad_file(), "{e}");
}

#[test]
fn concurrent_writers_lose_nothing() {
    let dir = TempDir::new("concurrent");
    let path = dir.0.join("pins.json");
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let path = path.clone();
            std::thread::spawn(move || {
                let file = StoreFile::new(path);
                for i in 0..10 {
                    file.modify(|s| s.apply(&pin("gh", &format!("t{t}-{i}"))))
                        .expect("write");
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("thread");
    }
    let store = StoreFile::new(&path).load().expect("load");
    assert_eq!(store.pins().count(), 80);
    assert_eq!(store.revision, 80);
}

#[test]
fn a_held_lock_is_waited_for_within_the_bound() {
    let dir = TempDir::new("busy");
    let path = dir.0.join("pins.json");
    let lock = open_private(&dir.0.join("pins.json.lock"), false).expect("lock file");
    let held = Flock::lock(lock, FlockArg::LockExclusive).expect("lock");
    let file = StoreFile::new(&path).with_lock_wait(Duration::from_millis(200));
    let started = Instant::now();
    let e = file.modify(|s| s.apply(&pin("gh", "a"))).expect_err("busy");
    assert!(matches!(e, StoreError::Busy { .. }), "{e}");
    assert!(!e.is_bad_file());
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(e.to_string().contains("pins.json.lock"), "{e}");
    // Released: the same change goes through.
    drop(held);
    file.modify(|s| s.apply(&pin("gh", "a"))).expect("write");
    // Reads never wait for the lock.
    let _again = Flock::lock(
        open_private(&dir.0.join("pins.json.lock"), false).expect("lock file"),
        FlockArg::LockExclusive,
    )
    .expect("lock");
    assert_eq!(file.load().expect("load").pins().count(), 1);
}

#[test]
fn the_watch_reports_other_processes_changes_only() {
    let dir = TempDir::new("watch");
    let path = dir.0.join("pins.json");
    let (mut watch, store) = Watch::open(StoreFile::new(&path)).expect("open");
    assert_eq!(store, PinStore::new());
    assert!(watch.poll().expect("poll").is_none());

    // Its own write is not news.
    watch.modify(|s| s.apply(&pin("gh", "a"))).expect("write");
    assert!(watch.poll().expect("poll").is_none());

    // `manifold pins approve` in another process is.
    let other = StoreFile::new(&path);
    let by = |s: &mut PinStore| {
        s.apply(&Update {
            upstream: "gh".into(),
            ops: vec![Op::Pend {
                kind: ItemKind::Tool,
                name: "b".into(),
                fingerprint: Fingerprint::of(&obj(json!({"name": "b"}))),
                reason: crate::store::PendingReason::New,
                definition: obj(json!({"name": "b"})),
                at: "t".into(),
            }],
        });
        s.approve(
            &crate::approve::Selection::All,
            "local:alice",
            std::time::SystemTime::UNIX_EPOCH,
        )
    };
    other.modify(by).expect("approve").1.expect("approved");
    let seen = watch.poll().expect("poll").expect("a change");
    let b = ItemRef::new("gh", ItemKind::Tool, "b");
    assert_eq!(seen.pin(&b).expect("pinned").approved_by, "local:alice");
    assert_eq!(seen.journal_after(0).len(), 1);
    assert!(watch.poll().expect("poll").is_none());

    // Another process's write just before ours comes back in what ours returns.
    other.modify(|s| s.apply(&pin("gh", "c"))).expect("write");
    let (latest, _) = watch.modify(|s| s.apply(&pin("gh", "d"))).expect("write");
    assert_eq!(latest.pins().count(), 4);
    assert!(watch.poll().expect("poll").is_none());
}

fn obj(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object"),
    }
}
