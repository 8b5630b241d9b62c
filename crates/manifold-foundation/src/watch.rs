//! "Did this file change?": one stamp for every file Manifold watches (the
//! configuration with `[server] watch_config`, the TLS certificates, keys,
//! CAs and CRLs, the `[integrity]` store).
//!
//! Invariants: a stamp is the file's length, modification time, inode and
//! device, so a write is seen even within one mtime tick (a rename always
//! gives a new inode) and a file replaced by another of the same size and
//! time is still a change; a missing file has its own stamp (`None`), so a
//! file that appears or goes away is a change too.
//!
//! Not here: what a change triggers, or how often to look (the callers
//! poll).

use std::path::Path;
use std::time::SystemTime;

/// What identifies one version of a file on disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStamp {
    len: u64,
    modified: Option<SystemTime>,
    ino: u64,
    dev: u64,
}

impl FileStamp {
    /// The stamp of `path` now: `Ok(None)` when there is no file there.
    pub fn of(path: &Path) -> std::io::Result<Option<FileStamp>> {
        use std::os::unix::fs::MetadataExt;
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(FileStamp {
                len: m.len(),
                modified: m.modified().ok(),
                ino: m.ino(),
                dev: m.dev(),
            })),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The stamp of `path`, an unreadable file as a missing one (for a
    /// watcher, which only asks whether it differs from the last look).
    pub fn seen(path: &Path) -> Option<FileStamp> {
        FileStamp::of(path).ok().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rewrite_a_replacement_and_a_removal_are_changes() {
        let dir = std::env::temp_dir().join(format!("manifold-watch-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        assert_eq!(FileStamp::of(&path).unwrap(), None);
        std::fs::write(&path, "one").unwrap();
        let first = FileStamp::seen(&path);
        assert!(first.is_some());
        assert_eq!(FileStamp::seen(&path), first, "unchanged");
        // Same length, written by rename within the same mtime tick: a new inode.
        let tmp = dir.join("f.new");
        std::fs::write(&tmp, "two").unwrap();
        std::fs::rename(&tmp, &path).unwrap();
        assert_ne!(FileStamp::seen(&path), first);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(FileStamp::seen(&path), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
