//! Connect links: the pending "connect your account" requests a call to a
//! `user_oauth` or `user_secret` upstream opens for a caller without one, and
//! each such upstream's [`Accounts`] (built once per configuration).
//!
//! A link (`<public_url><server.path>/connect/<id>`) is a capability: 32
//! random bytes, single use, expiring after `[credentials] connect_ttl`, bound
//! to the principal that asked and to a short code only that caller's client
//! was shown. The page asks for the code before anything else, so a link
//! forwarded to someone else (or found in a log) cannot link their account to
//! the asker: they do not know the code. Wrong codes are counted; after
//! [`MAX_CODE_TRIES`] the link is void.
//!
//! Invariants: at most [`MAX_PENDING_CONNECTS`] links in all and
//! [`MAX_PENDING_PER_PRINCIPAL`] per principal (expired ones are dropped
//! first); a caller asking again while their link for that upstream is
//! unused gets the same link (no flood of links); an OAuth `state` maps to
//! one link and is taken once; codes and ids are compared in constant time;
//! no lock is held across `.await`.
//!
//! Not here: the pages (`front::connect`), the accounts' storage and flows
//! (manifold-credentials), the question a client gets (`call::credentials`).

use manifold_credentials::{Accounts, Begun};
use manifold_upstream::Upstream;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The most connect links open at once (every caller, every upstream).
pub const MAX_PENDING_CONNECTS: usize = 4096;
/// The most connect links one principal may have open at once.
pub const MAX_PENDING_PER_PRINCIPAL: usize = 8;
/// Wrong codes a link survives; the next voids it.
pub const MAX_CODE_TRIES: u32 = 5;
/// Characters of a binding code (no 0/O, 1/I/L: read aloud or retyped).
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// Letters in a binding code (shown as two groups of four).
const CODE_LEN: usize = 8;

/// One open link.
#[derive(Clone)]
pub(crate) struct Pending {
    pub id: String,
    pub upstream: Arc<str>,
    /// The principal it links an account to (its audit name).
    pub principal: String,
    /// What the caller's client was shown, and the page asks for.
    pub code: String,
    /// The 2025-11-25 `elicitationId` (its completion is notified).
    pub elicitation_id: String,
    /// The session that asked, to notify (session era).
    pub session: Option<String>,
    /// The form's anti-forgery token.
    pub csrf: String,
    pub expires: Instant,
    pub tries: u32,
    /// The code was given: the flow may start.
    pub bound: bool,
    /// `user_oauth`: the OAuth `state` and the flow started with it.
    pub flow: Option<(String, Begun)>,
}

/// What a caller's question shows.
#[derive(Debug, Clone)]
pub(crate) struct Opened {
    pub id: String,
    pub code: String,
    pub elicitation_id: String,
}

/// Why a link cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Void {
    /// Unknown, used, or expired.
    Gone,
    /// Too many wrong codes: it was voided.
    TooManyTries,
    /// The code was wrong (tries left).
    WrongCode(u32),
}

/// Each per-caller upstream's accounts, with the configuration they were
/// built from.
type AccountsByUpstream =
    HashMap<Arc<str>, (manifold_config::credentials::UpstreamAuth, Arc<Accounts>)>;

/// Connect links and per-upstream accounts.
pub(crate) struct Connects {
    ttl: Duration,
    pending: Mutex<HashMap<String, Pending>>,
    accounts: Mutex<AccountsByUpstream>,
}

fn random(n: usize) -> String {
    use base64::Engine;
    let mut raw = vec![0u8; n];
    let _ = getrandom::fill(&mut raw);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
}

fn code() -> String {
    let mut raw = [0u8; CODE_LEN];
    let _ = getrandom::fill(&mut raw);
    let letters: String = raw
        .iter()
        .map(|b| CODE_ALPHABET[*b as usize % CODE_ALPHABET.len()] as char)
        .collect();
    format!("{}-{}", &letters[..4], &letters[4..])
}

/// A typed code as the page compares it: upper case, no spaces or dashes.
fn normal(code: &str) -> String {
    code.chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

impl Connects {
    pub(crate) fn new(ttl: Duration) -> Connects {
        Connects {
            ttl,
            pending: Mutex::new(HashMap::new()),
            accounts: Mutex::new(HashMap::new()),
        }
    }

    /// The accounts of `upstream`, when it is a `user_oauth` or `user_secret`
    /// one (built again when its configuration changed).
    pub(crate) fn accounts(&self, upstream: &Upstream) -> Option<Arc<Accounts>> {
        let manifold_config::Transport::Http { url, auth, .. } = &upstream.config().transport
        else {
            return None;
        };
        if !auth.per_user() {
            return None;
        }
        let mut map = self.accounts.lock();
        if let Some((was, a)) = map.get(upstream.name()) {
            if was == auth {
                return Some(a.clone());
            }
        }
        let a = Arc::new(Accounts::new(upstream.name(), url, auth)?);
        map.insert(upstream.name().clone(), (auth.clone(), a.clone()));
        Some(a)
    }

    /// A link for `principal` to connect at `upstream`: the one still open
    /// for them there, or a new one; `None` when the table (or the
    /// principal's share) is full.
    pub(crate) fn open(
        &self,
        upstream: &Arc<str>,
        principal: &str,
        session: Option<&str>,
    ) -> Option<Opened> {
        let now = Instant::now();
        let mut map = self.pending.lock();
        map.retain(|_, p| p.expires > now);
        if let Some(p) = map.values_mut().find(|p| {
            &p.upstream == upstream && p.principal == principal && p.flow.is_none() && !p.bound
        }) {
            // Notified on the session that asked last.
            if let Some(s) = session {
                p.session = Some(s.to_string());
            }
            return Some(Opened {
                id: p.id.clone(),
                code: p.code.clone(),
                elicitation_id: p.elicitation_id.clone(),
            });
        }
        let mine = map.values().filter(|p| p.principal == principal).count();
        if map.len() >= MAX_PENDING_CONNECTS || mine >= MAX_PENDING_PER_PRINCIPAL {
            return None;
        }
        let p = Pending {
            id: random(32),
            upstream: upstream.clone(),
            principal: principal.to_string(),
            code: code(),
            elicitation_id: random(16),
            session: session.map(str::to_string),
            csrf: random(32),
            expires: now + self.ttl,
            tries: 0,
            bound: false,
            flow: None,
        };
        let opened = Opened {
            id: p.id.clone(),
            code: p.code.clone(),
            elicitation_id: p.elicitation_id.clone(),
        };
        map.insert(p.id.clone(), p);
        Some(opened)
    }

    /// The open link `id`.
    pub(crate) fn get(&self, id: &str) -> Result<Pending, Void> {
        let now = Instant::now();
        let map = self.pending.lock();
        map.get(id)
            .filter(|p| p.expires > now)
            .cloned()
            .ok_or(Void::Gone)
    }

    /// Checks the form's `csrf` and the typed `code` for link `id`: a wrong
    /// code counts, and the last allowed one voids the link.
    pub(crate) fn bind(&self, id: &str, csrf: &str, typed: &str) -> Result<Pending, Void> {
        let now = Instant::now();
        let mut map = self.pending.lock();
        let Some(p) = map.get_mut(id).filter(|p| p.expires > now) else {
            return Err(Void::Gone);
        };
        let same = |a: &str, b: &str| manifold_foundation::ct::eq(a.as_bytes(), b.as_bytes());
        if !same(&p.csrf, csrf) {
            return Err(Void::Gone);
        }
        if !same(&normal(&p.code), &normal(typed)) {
            p.tries += 1;
            if p.tries >= MAX_CODE_TRIES {
                map.remove(id);
                return Err(Void::TooManyTries);
            }
            return Err(Void::WrongCode(MAX_CODE_TRIES - p.tries));
        }
        p.bound = true;
        Ok(p.clone())
    }

    /// Records the OAuth flow link `id` started (after [`Self::bind`]).
    pub(crate) fn started(&self, id: &str, state: String, begun: Begun) {
        if let Some(p) = self.pending.lock().get_mut(id) {
            p.flow = Some((state, begun));
        }
    }

    /// Takes (single use) the link whose flow carries OAuth `state`.
    pub(crate) fn take_by_state(&self, state: &str) -> Option<Pending> {
        let now = Instant::now();
        let mut map = self.pending.lock();
        let id = map
            .values()
            .find(|p| {
                p.flow.as_ref().is_some_and(|(s, _)| {
                    manifold_foundation::ct::eq(s.as_bytes(), state.as_bytes())
                })
            })
            .map(|p| p.id.clone())?;
        map.remove(&id).filter(|p| p.expires > now)
    }

    /// Takes (single use) link `id`, once it is bound.
    pub(crate) fn take_bound(&self, id: &str) -> Option<Pending> {
        let mut map = self.pending.lock();
        if !map.get(id).is_some_and(|p| p.bound) {
            return None;
        }
        map.remove(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_binds_only_with_its_code_and_dies_after_too_many_tries() {
        let c = Connects::new(Duration::from_secs(60));
        let up: Arc<str> = Arc::from("gh");
        let o = c.open(&up, "key:alice", None).expect("opened");
        // Asking again while unused: the same link.
        assert_eq!(c.open(&up, "key:alice", None).expect("again").id, o.id);
        let p = c.get(&o.id).expect("open");
        assert_eq!(c.bind(&o.id, "forged", &o.code).err(), Some(Void::Gone));
        for left in (1..MAX_CODE_TRIES).rev() {
            assert_eq!(
                c.bind(&o.id, &p.csrf, "AAAA-AAAA").err(),
                Some(Void::WrongCode(left))
            );
        }
        assert_eq!(
            c.bind(&o.id, &p.csrf, "AAAA-AAAA").err(),
            Some(Void::TooManyTries)
        );
        assert_eq!(c.get(&o.id).err(), Some(Void::Gone));
        // A new link; its code typed loosely binds it, once.
        let o = c.open(&up, "key:alice", None).expect("opened");
        let p = c.get(&o.id).expect("open");
        let typed = o.code.to_lowercase().replace('-', " ");
        assert!(c.bind(&o.id, &p.csrf, &typed).is_ok());
        assert!(c.take_bound(&o.id).is_some());
        assert!(c.take_bound(&o.id).is_none());
    }

    #[test]
    fn links_are_bounded_per_principal_and_expire() {
        let c = Connects::new(Duration::from_millis(1));
        let ups: Vec<Arc<str>> = (0..=MAX_PENDING_PER_PRINCIPAL)
            .map(|i| Arc::from(format!("u{i}")))
            .collect();
        let c2 = Connects::new(Duration::from_secs(60));
        for u in &ups[..MAX_PENDING_PER_PRINCIPAL] {
            assert!(c2.open(u, "key:bob", None).is_some());
        }
        assert!(c2
            .open(&ups[MAX_PENDING_PER_PRINCIPAL], "key:bob", None)
            .is_none());
        assert!(c2.open(&ups[0], "key:carol", None).is_some());
        let o = c.open(&ups[0], "key:bob", None).expect("opened");
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!(c.get(&o.id).err(), Some(Void::Gone));
    }
}
