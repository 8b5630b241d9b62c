//! What the operator's console keeps in the gateway: its key (a random one
//! per process, for session cookies and CSRF tokens), the operators logged in
//! (a bounded table), the last reload's result, the audit chain's status per
//! file, and recent calls per upstream (`recent`).
//!
//! Invariants: a login lives at most [`CONSOLE_SESSION_LIFETIME`], and ends
//! after [`CONSOLE_SESSION_IDLE`] unused; at most [`MAX_CONSOLE_SESSIONS`] are
//! kept (the least recently used goes first); without OS randomness there is
//! no key, and nobody can log in (bearer tokens still work); no lock is held
//! across `.await`.
//!
//! Not here: cookies, CSRF and the pages (`admin::console`).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use super::recent::RecentCalls;

/// The longest a console login lasts, however busy.
pub const CONSOLE_SESSION_LIFETIME: Duration = Duration::from_secs(8 * 3600);
/// A console login unused this long ends.
pub const CONSOLE_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);
/// Console logins kept at once; a new one past it ends the least recently
/// used.
pub const MAX_CONSOLE_SESSIONS: usize = 64;

/// Refused admin credentials one address may send per
/// [`LOGIN_FAILURE_WINDOW`] by default (`[admin] failed_logins_per_minute`);
/// past it, attempts are refused (429) unread until the window ends.
pub const LOGIN_FAILURES_PER_WINDOW: u32 = manifold_config::admin::DEFAULT_FAILED_LOGINS_PER_MINUTE;
/// The window [`LOGIN_FAILURES_PER_WINDOW`] counts in.
pub const LOGIN_FAILURE_WINDOW: Duration = Duration::from_secs(60);
/// Addresses whose failures are counted at once (a flood of addresses
/// forgets the oldest windows, never grows the table).
pub const MAX_LOGIN_FAILURE_PEERS: usize = 4096;

/// A login's id, as its cookie carries it (with a MAC).
pub(crate) type LoginId = [u8; 16];

/// What a console login was made with, checked again on every request: a
/// token removed from `[[admin.tokens]]`, a caller's credential `[auth]` no
/// longer accepts (expired, revoked) or `[admin] who` no longer names, or
/// admin credentials configured after a local-token login, ends it.
#[derive(Clone)]
pub(crate) enum Credential {
    /// One of `[[admin.tokens]]`: its name and digest.
    Token { name: String, digest: [u8; 32] },
    /// A caller `[auth]` authenticated and `[admin] who` named, with the
    /// `Authorization` value it logged in with (kept in memory only, to
    /// authenticate it again).
    Caller {
        id: Arc<manifold_policy::Identity>,
        bearer: String,
    },
    /// The local admin token (no admin credentials configured).
    Local,
}

impl Credential {
    /// How logs name the login's principal.
    pub(crate) fn display_name(&self) -> String {
        match self {
            Credential::Token { name, .. } => format!("admin_token:{name}"),
            Credential::Caller { id, .. } => id.display_name(),
            Credential::Local => "admin_token:local".into(),
        }
    }
}

impl std::fmt::Debug for Credential {
    // Never the caller's credential.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.display_name())
    }
}

struct Login {
    credential: Credential,
    created: Instant,
    used: Instant,
}

/// The last reload, whatever triggered it.
#[derive(Debug, Clone)]
pub(crate) struct LastReload {
    pub at: SystemTime,
    /// What changed (the `POST /reload` answer), or why nothing did.
    pub result: Result<serde_json::Value, String>,
}

/// The audit chain as last checked, by file (keyed by inode: a rotation
/// renames a file, and its status goes with it).
#[derive(Debug, Default)]
pub(crate) struct ChainCache {
    pub files: HashMap<u64, manifold_audit::chain_status::FileStatus>,
    /// A check is running (at most one at a time).
    pub running: bool,
    pub checked_at: Option<SystemTime>,
    /// The last check could not read the log.
    pub error: Option<String>,
}

/// The console's share of the gateway.
pub(crate) struct ConsoleState {
    pub recent: RecentCalls,
    /// When the gateway started.
    pub started: SystemTime,
    pub started_instant: Instant,
    key: Option<[u8; 32]>,
    logins: Mutex<HashMap<LoginId, Login>>,
    last_reload: Mutex<Option<LastReload>>,
    pub chain: Mutex<ChainCache>,
    /// Failed logins by address: (failures, the window's start).
    failures: Mutex<HashMap<std::net::IpAddr, (u32, Instant)>>,
}

impl Default for ConsoleState {
    fn default() -> Self {
        ConsoleState::new()
    }
}

impl ConsoleState {
    pub(crate) fn new() -> ConsoleState {
        let mut key = [0u8; 32];
        let key = match getrandom::fill(&mut key) {
            Ok(()) => Some(key),
            Err(e) => {
                tracing::error!(error = %e, "no OS randomness: console logins are off (bearer tokens still work)");
                None
            }
        };
        let now = Instant::now();
        ConsoleState {
            recent: RecentCalls::new(now),
            started: SystemTime::now(),
            started_instant: now,
            key,
            logins: Mutex::new(HashMap::new()),
            last_reload: Mutex::new(None),
            chain: Mutex::new(ChainCache::default()),
            failures: Mutex::new(HashMap::new()),
        }
    }

    /// HMAC-SHA256 of `parts` (each length-prefixed) under the console's key;
    /// `None` without a key.
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> Option<[u8; 32]> {
        let key = self.key.as_ref()?;
        let lengths: Vec<[u8; 8]> = parts
            .iter()
            .map(|p| (p.len() as u64).to_be_bytes())
            .collect();
        let framed: Vec<&[u8]> = parts
            .iter()
            .zip(&lengths)
            .flat_map(|(p, len)| [&len[..], p])
            .collect();
        Some(manifold_foundation::mac::hmac_sha256(key, &framed))
    }

    /// Starts a login; `None` without a key (or OS randomness).
    pub(crate) fn log_in(&self, credential: Credential) -> Option<LoginId> {
        self.key.as_ref()?;
        let mut id = [0u8; 16];
        getrandom::fill(&mut id).ok()?;
        let now = Instant::now();
        let mut logins = self.logins.lock();
        logins.retain(|_, l| live(l, now));
        if logins.len() >= MAX_CONSOLE_SESSIONS {
            if let Some(oldest) = logins.iter().min_by_key(|(_, l)| l.used).map(|(k, _)| *k) {
                logins.remove(&oldest);
            }
        }
        logins.insert(
            id,
            Login {
                credential,
                created: now,
                used: now,
            },
        );
        Some(id)
    }

    /// The credential of a live login, which counts as used now.
    pub(crate) fn login(&self, id: &LoginId) -> Option<Credential> {
        let now = Instant::now();
        let mut logins = self.logins.lock();
        let l = logins.get_mut(id)?;
        if !live(l, now) {
            logins.remove(id);
            return None;
        }
        l.used = now;
        Some(l.credential.clone())
    }

    /// Ends a login (logout, or a credential no longer accepted).
    pub(crate) fn log_out(&self, id: &LoginId) {
        self.logins.lock().remove(id);
    }

    /// Logins held now (expired ones included until the next login sweeps).
    pub(crate) fn logins(&self) -> usize {
        self.logins.lock().len()
    }

    /// Takes one of `peer`'s login attempts for this window, before the
    /// credential is looked at (so concurrent attempts cannot all pass the
    /// check); `Err(wait)` when [`LOGIN_FAILURES_PER_WINDOW`] are taken.
    /// An attempt that succeeds is given back ([`ConsoleState::login_succeeded`]).
    pub(crate) fn login_attempt(&self, peer: std::net::IpAddr, limit: u32) -> Result<(), Duration> {
        let now = Instant::now();
        let mut failures = self.failures.lock();
        if failures.len() >= MAX_LOGIN_FAILURE_PEERS && !failures.contains_key(&peer) {
            failures.retain(|_, (_, start)| {
                now.saturating_duration_since(*start) < LOGIN_FAILURE_WINDOW
            });
            if failures.len() >= MAX_LOGIN_FAILURE_PEERS {
                if let Some(oldest) = failures
                    .iter()
                    .min_by_key(|(_, (_, s))| *s)
                    .map(|(k, _)| *k)
                {
                    failures.remove(&oldest);
                }
            }
        }
        let entry = failures.entry(peer).or_insert((0, now));
        let age = now.saturating_duration_since(entry.1);
        if age >= LOGIN_FAILURE_WINDOW {
            *entry = (0, now);
        }
        if entry.0 >= limit {
            return Err(LOGIN_FAILURE_WINDOW.saturating_sub(now.saturating_duration_since(entry.1)));
        }
        entry.0 += 1;
        Ok(())
    }

    /// Gives back the attempt a successful login took.
    pub(crate) fn login_succeeded(&self, peer: std::net::IpAddr) {
        if let Some(entry) = self.failures.lock().get_mut(&peer) {
            entry.0 = entry.0.saturating_sub(1);
        }
    }

    pub(crate) fn reloaded(&self, result: Result<serde_json::Value, String>) {
        *self.last_reload.lock() = Some(LastReload {
            at: SystemTime::now(),
            result,
        });
    }

    pub(crate) fn last_reload(&self) -> Option<LastReload> {
        self.last_reload.lock().clone()
    }
}

fn live(l: &Login, now: Instant) -> bool {
    now.saturating_duration_since(l.created) < CONSOLE_SESSION_LIFETIME
        && now.saturating_duration_since(l.used) < CONSOLE_SESSION_IDLE
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_address_that_keeps_failing_is_refused_for_the_window_and_others_are_not() {
        let c = ConsoleState::new();
        let a: std::net::IpAddr = [127, 0, 0, 1].into();
        let b: std::net::IpAddr = [127, 0, 0, 2].into();
        // Successes give their attempt back.
        for _ in 0..3 * LOGIN_FAILURES_PER_WINDOW {
            c.login_attempt(a, LOGIN_FAILURES_PER_WINDOW)
                .expect("not throttled");
            c.login_succeeded(a);
        }
        for _ in 0..LOGIN_FAILURES_PER_WINDOW {
            c.login_attempt(a, LOGIN_FAILURES_PER_WINDOW)
                .expect("an attempt");
        }
        let wait = c
            .login_attempt(a, LOGIN_FAILURES_PER_WINDOW)
            .expect_err("throttled");
        assert!(wait <= LOGIN_FAILURE_WINDOW && wait > Duration::ZERO);
        assert!(c.login_attempt(b, LOGIN_FAILURES_PER_WINDOW).is_ok());
        for i in 0..(MAX_LOGIN_FAILURE_PEERS as u32 + 10) {
            let _ = c.login_attempt(std::net::IpAddr::from(i.to_be_bytes()), 1);
        }
        assert!(c.failures.lock().len() <= MAX_LOGIN_FAILURE_PEERS);
    }

    use super::*;

    fn token(name: &str) -> Credential {
        Credential::Token {
            name: name.into(),
            digest: [1; 32],
        }
    }

    #[test]
    fn logins_are_bounded_and_end_on_logout() {
        let c = ConsoleState::new();
        let first = c.log_in(token("a")).expect("a key");
        assert!(matches!(c.login(&first), Some(Credential::Token { name, .. }) if name == "a"));
        let mut ids = vec![first];
        for i in 0..MAX_CONSOLE_SESSIONS {
            ids.push(c.log_in(token(&format!("t{i}"))).expect("a key"));
        }
        assert_eq!(c.logins(), MAX_CONSOLE_SESSIONS);
        // One went (the least recently used); the newest stays.
        assert_eq!(ids.iter().filter(|id| c.login(id).is_none()).count(), 1);
        let last = *ids.last().expect("ids");
        assert!(c.login(&last).is_some());
        c.log_out(&last);
        assert!(c.login(&last).is_none());
        assert!(c.login(&[0; 16]).is_none());
    }

    #[test]
    fn macs_depend_on_every_part_and_its_boundaries() {
        let c = ConsoleState::new();
        let a = c.mac(&[b"ab", b"c"]).expect("key");
        assert_eq!(a, c.mac(&[b"ab", b"c"]).expect("key"));
        assert_ne!(a, c.mac(&[b"a", b"bc"]).expect("key"));
        assert_ne!(a, ConsoleState::new().mac(&[b"ab", b"c"]).expect("key"));
    }
}
