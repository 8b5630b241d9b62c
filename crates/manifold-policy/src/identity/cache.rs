//! Checked tokens, so a token's signature is verified (or its introspection
//! endpoint asked) once and not on every request: keyed by the token's SHA-256
//! (the token itself is not kept). An accepted token's entry lives until the
//! time its checker gave — never past the token's expiry; API keys
//! [`KEY_TTL`] — and a refused introspected token's refusal is kept briefly
//! ([`REFUSAL_TTL`]; [`FAILURE_TTL`] when the provider could not be asked), so
//! a client retrying a bad token does not cost the identity provider a request
//! each time. Both tables are bounded ([`MAX_CACHED_TOKENS`],
//! [`MAX_CACHED_REFUSALS`]).
//!
//! Invariants: every entry has an explicit end (no default lifetime a caller
//! could fall into by omission); nothing is returned past its end.

use parking_lot::Mutex;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::caller::{AuthError, Identity};

/// Accepted tokens kept at most; when full, expired ones go, then everything.
pub const MAX_CACHED_TOKENS: usize = 10_000;
/// Refusals kept at most; when full, expired ones go, then everything.
pub const MAX_CACHED_REFUSALS: usize = 10_000;
/// How long an API key's check is kept (keys do not expire; a reload that
/// changes `[auth]` starts a new cache).
pub const KEY_TTL: Duration = Duration::from_secs(300);
/// How long an introspection endpoint's "not active" (or an answer refused
/// here: wrong audience, a refresh token) is kept for the token.
pub const REFUSAL_TTL: Duration = Duration::from_secs(30);
/// How long a failure to ask the introspection endpoint (unreachable, an HTTP
/// error, a timeout) is kept for the token: short, the provider may be back.
pub const FAILURE_TTL: Duration = Duration::from_secs(5);

/// A token's digest → what was decided and until when.
type Entries<T> = HashMap<[u8; 32], (T, SystemTime)>;

#[derive(Default)]
pub(super) struct TokenCache {
    accepted: Mutex<Entries<Arc<Identity>>>,
    refused: Mutex<Entries<AuthError>>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

fn lookup<T: Clone>(map: &Mutex<Entries<T>>, key: &[u8; 32]) -> Option<T> {
    let mut map = map.lock();
    match map.get(key) {
        Some((v, until)) if *until > SystemTime::now() => Some(v.clone()),
        Some(_) => {
            map.remove(key);
            None
        }
        None => None,
    }
}

fn insert<T>(map: &Mutex<Entries<T>>, bound: usize, key: [u8; 32], v: T, until: SystemTime) {
    let now = SystemTime::now();
    if until <= now {
        return;
    }
    let mut map = map.lock();
    if map.len() >= bound {
        map.retain(|_, (_, u)| *u > now);
        if map.len() >= bound {
            map.clear();
        }
    }
    map.insert(key, (v, until));
}

impl TokenCache {
    /// What was decided for `token`, if it is still fresh: who it is, or why
    /// it was refused.
    pub(super) fn get(&self, token: &str) -> Option<Result<Arc<Identity>, AuthError>> {
        let key = digest(token);
        if let Some(id) = lookup(&self.accepted, &key) {
            return Some(Ok(id));
        }
        lookup(&self.refused, &key).map(Err)
    }

    /// Keeps `identity` for `token` until `until` (nothing when it is past).
    pub(super) fn put(&self, token: &str, identity: Arc<Identity>, until: SystemTime) {
        insert(
            &self.accepted,
            MAX_CACHED_TOKENS,
            digest(token),
            identity,
            until,
        );
    }

    /// Keeps `refusal` for `token` for `ttl`.
    pub(super) fn refuse(&self, token: &str, refusal: AuthError, ttl: Duration) {
        let until = SystemTime::now() + ttl;
        insert(
            &self.refused,
            MAX_CACHED_REFUSALS,
            digest(token),
            refusal,
            until,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_expire_and_the_tables_are_bounded() {
        let c = TokenCache::default();
        let id = Arc::new(Identity::anonymous());
        let now = SystemTime::now();
        c.put("a", id.clone(), now - Duration::from_secs(1));
        assert!(c.get("a").is_none(), "expired");
        c.put("b", id.clone(), now + KEY_TTL);
        assert!(matches!(c.get("b"), Some(Ok(_))));
        c.refuse("r", AuthError::Invalid("no".into()), REFUSAL_TTL);
        assert_eq!(c.get("r"), Some(Err(AuthError::Invalid("no".into()))));
        c.refuse("gone", AuthError::Invalid("no".into()), Duration::ZERO);
        assert!(c.get("gone").is_none());
        for n in 0..MAX_CACHED_TOKENS + 10 {
            c.put(&format!("t{n}"), id.clone(), now + KEY_TTL);
            c.refuse(&format!("r{n}"), AuthError::Missing, REFUSAL_TTL);
        }
        let len = |m: &Mutex<Entries<_>>| m.lock().len();
        assert!(len(&c.accepted) <= MAX_CACHED_TOKENS);
        let refused = c.refused.lock().len();
        assert!(refused <= MAX_CACHED_REFUSALS, "{refused}");
    }
}
