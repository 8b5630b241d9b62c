//! Verified tokens, so a token's signature is checked once and not on every
//! request: keyed by the token's SHA-256 (the token itself is not kept), each
//! entry lives until the token expires (API keys: [`KEY_TTL`]), and the table is
//! bounded by [`MAX_CACHED_TOKENS`].

use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::Identity;

/// Entries kept at most; when full, expired ones go, then everything.
pub const MAX_CACHED_TOKENS: usize = 10_000;
/// How long an API key's check is kept (keys do not expire).
pub const KEY_TTL: Duration = Duration::from_secs(300);

/// A token's digest → who it is and until when.
type Entries = HashMap<[u8; 32], (Arc<Identity>, SystemTime)>;

#[derive(Default)]
pub(super) struct TokenCache {
    map: Mutex<Entries>,
}

impl TokenCache {
    pub(super) fn get(&self, token: &str) -> Option<Arc<Identity>> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        match map.get(&key) {
            Some((id, until)) if *until > SystemTime::now() => Some(id.clone()),
            Some(_) => {
                map.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Keeps `identity` for `token` until `expires` (or [`KEY_TTL`] from now).
    pub(super) fn put(&self, token: &str, identity: Arc<Identity>, expires: Option<SystemTime>) {
        let now = SystemTime::now();
        let until = expires.unwrap_or(now + KEY_TTL);
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= MAX_CACHED_TOKENS {
            map.retain(|_, (_, u)| *u > now);
            if map.len() >= MAX_CACHED_TOKENS {
                map.clear();
            }
        }
        map.insert(key, (identity, until));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_table_is_bounded() {
        let c = TokenCache::default();
        let id = Arc::new(Identity::anonymous());
        c.put(
            "a",
            id.clone(),
            Some(SystemTime::now() - Duration::from_secs(1)),
        );
        assert!(c.get("a").is_none(), "expired");
        c.put("b", id.clone(), None);
        assert!(c.get("b").is_some());
        for n in 0..MAX_CACHED_TOKENS + 10 {
            c.put(&format!("t{n}"), id.clone(), None);
        }
        let len = c.map.lock().map(|m| m.len()).unwrap_or(0);
        assert!(len <= MAX_CACHED_TOKENS, "{len}");
    }
}
