//! Replays the checked-in fuzz seeds (`fuzz/corpus/<target>/`) through the same
//! checks the fuzz targets run (`manifold_protocol::fuzzing`), so the targets'
//! invariants are tested on every `scripts/test` run, fuzzer or not.

use std::path::PathBuf;

fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/corpus")
        .join(target);
    let mut files: Vec<(PathBuf, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|entry| {
            let path = entry.expect("directory entry").path();
            let bytes = std::fs::read(&path).expect("readable seed");
            (path, bytes)
        })
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", dir.display());
    files
}

fn replay(target: &str, check: fn(&[u8])) {
    for (path, bytes) in corpus(target) {
        let ok = std::panic::catch_unwind(|| check(&bytes));
        assert!(ok.is_ok(), "{target}: seed {} fails", path.display());
    }
}

#[test]
fn jsonrpc_seeds() {
    replay("jsonrpc", manifold_protocol::fuzzing::jsonrpc);
}

#[test]
fn sse_seeds() {
    replay("sse", manifold_protocol::fuzzing::sse);
}

#[test]
fn headers_seeds() {
    replay("headers", manifold_protocol::fuzzing::headers);
}
