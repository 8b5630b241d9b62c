//! Vectors kept: tool vectors by the SHA-256 of the text embedded (so a
//! definition is embedded once, whichever endpoint or view holds it, and a
//! catalogue rebuild embeds only tools whose text changed), persisted in one
//! file per model; and query vectors in a bounded least-recently-used cache.
//!
//! The file (`<dir>/<model id's first 16 hex digits>.vectors`): the magic
//! `MFVEC1\n`, the vector length as u32 LE, then records of a 32-byte key and
//! `dim` f32 LE. New vectors are appended; a torn last record (a crash while
//! writing) is ignored at load. At most [`MAX_STORED_VECTORS`] are kept in
//! memory and on disk; past it the file is rewritten with the vectors the
//! caller names live (those of the endpoint being embedded). A file larger
//! than that many records is refused at open, naming it.
//!
//! Not here: locking (the owner wraps a store in a mutex and never holds it
//! across an await) and deciding when to embed.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::SemanticError;

/// Tool vectors held at most (about 1.5 KiB each at 384 dimensions).
pub const MAX_STORED_VECTORS: usize = 100_000;
/// Query vectors cached at most.
pub const QUERY_CACHE_ENTRIES: usize = 1_024;

const MAGIC: &[u8] = b"MFVEC1\n";

/// Tool vectors by key, and the file they persist to (if any).
#[derive(Debug)]
pub struct VectorStore {
    dim: usize,
    vectors: HashMap<[u8; 32], Arc<[f32]>>,
    path: Option<PathBuf>,
}

fn cache_error(path: &Path, why: impl std::fmt::Display) -> SemanticError {
    SemanticError::Cache {
        path: path.display().to_string(),
        why: why.to_string(),
    }
}

impl VectorStore {
    /// A store of vectors of length `dim` for model `model_id`, loaded from
    /// (and persisting to) `dir` when given. A file of another vector length or
    /// magic is an error naming it; a missing one is an empty store.
    pub fn open(
        dir: Option<&Path>,
        model_id: &str,
        dim: usize,
    ) -> Result<VectorStore, SemanticError> {
        let mut store = VectorStore {
            dim,
            vectors: HashMap::new(),
            path: None,
        };
        let Some(dir) = dir else {
            return Ok(store);
        };
        std::fs::create_dir_all(dir).map_err(|e| cache_error(dir, e))?;
        let short: String = model_id.chars().take(16).collect();
        let path = dir.join(format!("{short}.vectors"));
        let most = (MAGIC.len() + 4 + MAX_STORED_VECTORS * (32 + dim * 4)) as u64;
        match std::fs::metadata(&path).map(|m| m.len()) {
            Ok(len) if len > most => {
                return Err(cache_error(
                    &path,
                    format!("{len} bytes, more than {MAX_STORED_VECTORS} vectors take; remove it"),
                ))
            }
            _ => {}
        }
        match std::fs::read(&path) {
            Ok(bytes) => store.load(&path, &bytes)?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut head = MAGIC.to_vec();
                head.extend_from_slice(&(dim as u32).to_le_bytes());
                std::fs::write(&path, head).map_err(|e| cache_error(&path, e))?;
            }
            Err(e) => return Err(cache_error(&path, e)),
        }
        store.path = Some(path);
        Ok(store)
    }

    fn load(&mut self, path: &Path, bytes: &[u8]) -> Result<(), SemanticError> {
        let head = MAGIC.len() + 4;
        if bytes.len() < head || &bytes[..MAGIC.len()] != MAGIC {
            return Err(cache_error(
                path,
                "not a vector cache (bad magic); remove it",
            ));
        }
        let mut len = [0u8; 4];
        len.copy_from_slice(&bytes[MAGIC.len()..head]);
        if u32::from_le_bytes(len) as usize != self.dim {
            return Err(cache_error(path, "vectors of another length; remove it"));
        }
        let record = 32 + self.dim * 4;
        for rec in bytes[head..].chunks_exact(record).take(MAX_STORED_VECTORS) {
            let mut key = [0u8; 32];
            key.copy_from_slice(&rec[..32]);
            let v: Vec<f32> = rec[32..]
                .chunks_exact(4)
                .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            self.vectors.insert(key, v.into());
        }
        Ok(())
    }

    pub fn get(&self, key: &[u8; 32]) -> Option<Arc<[f32]>> {
        self.vectors.get(key).cloned()
    }

    pub fn len(&self) -> usize {
        self.vectors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vectors.is_empty()
    }

    /// Adds `new` vectors (appended to the file). When the store would pass
    /// [`MAX_STORED_VECTORS`], only the keys in `live` are kept, in memory and
    /// on disk.
    pub fn insert(
        &mut self,
        new: Vec<([u8; 32], Vec<f32>)>,
        live: &dyn Fn(&[u8; 32]) -> bool,
    ) -> Result<(), SemanticError> {
        let new: Vec<([u8; 32], Vec<f32>)> = new
            .into_iter()
            .filter(|(_, v)| v.len() == self.dim)
            .collect();
        if self.vectors.len() + new.len() > MAX_STORED_VECTORS {
            self.vectors.retain(|k, _| live(k));
            for (k, v) in new {
                self.vectors.insert(k, v.into());
            }
            return self.rewrite();
        }
        let mut bytes = Vec::with_capacity(new.len() * (32 + self.dim * 4));
        for (k, v) in new {
            bytes.extend_from_slice(&k);
            v.iter()
                .for_each(|f| bytes.extend_from_slice(&f.to_le_bytes()));
            self.vectors.insert(k, v.into());
        }
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(|e| cache_error(path, e))?;
        f.write_all(&bytes).map_err(|e| cache_error(path, e))
    }

    fn rewrite(&self) -> Result<(), SemanticError> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&(self.dim as u32).to_le_bytes());
        for (k, v) in &self.vectors {
            bytes.extend_from_slice(k);
            v.iter()
                .for_each(|f| bytes.extend_from_slice(&f.to_le_bytes()));
        }
        let tmp = path.with_extension("vectors.tmp");
        std::fs::write(&tmp, &bytes).map_err(|e| cache_error(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| cache_error(path, e))
    }
}

/// Query vectors, least recently used evicted past [`QUERY_CACHE_ENTRIES`].
#[derive(Debug, Default)]
pub struct QueryCache {
    entries: HashMap<String, (Arc<[f32]>, u64)>,
    tick: u64,
}

impl QueryCache {
    pub fn get(&mut self, query: &str) -> Option<Arc<[f32]>> {
        self.tick += 1;
        let tick = self.tick;
        self.entries.get_mut(query).map(|(v, t)| {
            *t = tick;
            v.clone()
        })
    }

    pub fn put(&mut self, query: &str, vector: Arc<[f32]>) {
        self.tick += 1;
        if self.entries.len() >= QUERY_CACHE_ENTRIES && !self.entries.contains_key(query) {
            // O(n) over 1,024 entries, only on a miss that fills the cache.
            if let Some(old) = self
                .entries
                .iter()
                .min_by_key(|(_, (_, t))| *t)
                .map(|(k, _)| k.clone())
            {
                self.entries.remove(&old);
            }
        }
        self.entries.insert(query.to_string(), (vector, self.tick));
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let p =
            std::env::temp_dir().join(format!("manifold-semantic-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        p
    }

    #[test]
    fn vectors_persist_and_a_torn_record_is_ignored() {
        let dir = scratch("persist");
        let mut s = VectorStore::open(Some(&dir), "abcdef0123456789ffff", 2).unwrap();
        s.insert(
            vec![([1; 32], vec![0.5, 0.25]), ([2; 32], vec![1.0])],
            &|_| true,
        )
        .unwrap();
        assert_eq!(s.len(), 1, "a vector of another length is not kept");
        let path = dir.join("abcdef0123456789.vectors");
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(&[3; 20]).unwrap(); // a torn record
        let again = VectorStore::open(Some(&dir), "abcdef0123456789ffff", 2).unwrap();
        assert_eq!(again.get(&[1; 32]).as_deref(), Some(&[0.5f32, 0.25][..]));
        assert_eq!(again.len(), 1);
        let other = VectorStore::open(Some(&dir), "abcdef0123456789ffff", 3).unwrap_err();
        assert!(other.to_string().contains("another length"), "{other}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_cache_file_larger_than_the_bound_is_refused_unread() {
        let dir = scratch("too-big");
        std::fs::create_dir_all(&dir).unwrap();
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&1u32.to_le_bytes());
        bytes.resize(bytes.len() + (MAX_STORED_VECTORS + 1) * 36, 0);
        std::fs::write(dir.join("abcdef0123456789.vectors"), bytes).unwrap();
        let e = VectorStore::open(Some(&dir), "abcdef0123456789", 1).unwrap_err();
        assert!(e.to_string().contains("remove it"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_query_cache_is_bounded_and_keeps_the_recently_used() {
        let mut c = QueryCache::default();
        let v: Arc<[f32]> = vec![1.0].into();
        for i in 0..QUERY_CACHE_ENTRIES {
            c.put(&format!("q{i}"), v.clone());
        }
        assert!(c.get("q0").is_some());
        c.put("new", v.clone());
        assert_eq!(c.len(), QUERY_CACHE_ENTRIES);
        assert!(c.get("q0").is_some(), "recently used: kept");
        assert!(c.get("q1").is_none(), "least recently used: evicted");
    }
}
