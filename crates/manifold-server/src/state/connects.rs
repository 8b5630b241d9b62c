//! Connect links: the "connect your account" requests a call to a
//! `user_oauth` or `user_secret` upstream opens for a caller without one, and
//! each such upstream's [`Accounts`] (built once per configuration).
//!
//! A link (`<public_url><server.path>/connect/<id>`) is a capability whose id
//! is its own state, sealed (AES-256-GCM under a key derived from
//! `[credentials] key`): the upstream, the principal that asked, the binding
//! code only that caller's client was shown, the `elicitationId`, the asking
//! session's digest and the expiry (`[credentials] connect_ttl`). So any
//! replica that shares the credentials key serves its pages and its callback
//! (with a shared store directory, the account then serves every replica). The
//! page asks for the code before anything else: a link forwarded to someone
//! else (or found in a log) links nothing, they do not know the code. The
//! form's anti-forgery token and the PKCE verifier are derived from the link
//! (HMAC under the same key), and the OAuth `state` is sealed like the link.
//!
//! What a replica keeps locally, bounded: the links it handed out (so a caller
//! asking again gets the same one), wrong-code counts (after [`MAX_CODE_TRIES`]
//! a link is void here) and used links and states (single use here; on another
//! replica a used link is refused by the authorization server's single-use
//! code, or relinks the same principal with the code it needs).
//!
//! Invariants: at most [`MAX_PENDING_CONNECTS`] entries in each local table and
//! [`MAX_PENDING_PER_PRINCIPAL`] links per principal (expired ones dropped
//! first); codes, tokens and states are compared in constant time or by
//! authenticated decryption; no lock is held across `.await`.
//!
//! Not here: the pages (`crate::connect`), the accounts' storage and flows
//! (manifold-credentials), the question a client gets (`call::credentials`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use manifold_credentials::Accounts;
use manifold_foundation::aead::Keys;
use manifold_foundation::time::unix_now;
use manifold_upstream::Upstream;
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// The most entries in each local table (links handed out, counts, used).
pub const MAX_PENDING_CONNECTS: usize = 4096;
/// The most connect links one principal may have open here at once.
pub const MAX_PENDING_PER_PRINCIPAL: usize = 8;
/// Wrong codes a link survives; the next voids it.
pub const MAX_CODE_TRIES: u32 = 5;
/// Characters of a binding code (no 0/O, 1/I/L: read aloud or retyped).
const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";
/// Letters in a binding code (shown as two groups of four).
const CODE_LEN: usize = 8;
/// The sealing key's domain.
const KEY_DOMAIN: &str = "manifold connect link v1";
/// Associated data of a sealed link, and of a sealed OAuth state.
const LINK_AAD: &[u8] = b"link";
const STATE_AAD: &[u8] = b"state";

/// What a link holds.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sealed {
    u: String,
    p: String,
    c: String,
    e: String,
    #[serde(default)]
    s: Option<String>,
    x: u64,
}

/// One open link, opened.
#[derive(Debug, Clone)]
pub(crate) struct Pending {
    pub id: String,
    pub upstream: Arc<str>,
    /// The principal it links an account to (its audit name).
    pub principal: String,
    /// What the caller's client was shown, and the page asks for.
    pub code: String,
    /// The 2025-11-25 `elicitationId` (its completion is notified).
    pub elicitation_id: String,
    /// The digest of the session that asked, to notify (session era).
    pub session: Option<String>,
    /// The form's anti-forgery token.
    pub csrf: String,
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
    /// Unknown, forged, used, or expired.
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

/// What a replica keeps of links.
#[derive(Default)]
struct Local {
    /// (upstream, principal) → the link handed out, and its expiry.
    issued: HashMap<(Arc<str>, String), (Opened, u64)>,
    /// Link digest → wrong codes, and the link's expiry.
    tries: HashMap<String, (u32, u64)>,
    /// Digests of links and states used here, with their expiry.
    used: HashMap<String, u64>,
}

impl Local {
    fn sweep(&mut self, now: u64) {
        self.issued.retain(|_, (_, x)| *x > now);
        self.tries.retain(|_, (_, x)| *x > now);
        self.used.retain(|_, x| *x > now);
    }
}

/// The upstreams of `cfg` with per-caller accounts: name and `auth.type`.
pub(crate) fn per_user_upstreams(
    cfg: &manifold_config::GatewayConfig,
) -> Vec<(String, &'static str)> {
    cfg.upstreams
        .iter()
        .filter_map(|u| match &u.transport {
            manifold_config::Transport::Http { auth, .. } if auth.per_user() => {
                Some((u.name.clone(), auth.kind()))
            }
            _ => None,
        })
        .collect()
}

/// The accounts every replica shares, in Redis (`[cluster] redis`): the
/// bus's records map `accounts`, sealed texts by field.
pub(crate) struct BusAccounts(pub Arc<manifold_cluster::Bus>);

/// The records map callers' accounts are kept in.
const ACCOUNTS_MAP: &str = "accounts";

impl manifold_credentials::SharedAccounts for BusAccounts {
    fn get<'a>(&'a self, field: &'a str) -> manifold_credentials::SharedFuture<'a, Option<String>> {
        Box::pin(async move {
            self.0
                .record(ACCOUNTS_MAP, field)
                .await
                .map_err(|e| e.to_string())
        })
    }
    fn set<'a>(
        &'a self,
        field: &'a str,
        text: Option<&'a str>,
    ) -> manifold_credentials::SharedFuture<'a, ()> {
        Box::pin(async move {
            self.0
                .set_record(ACCOUNTS_MAP, field, text)
                .await
                .map_err(|e| e.to_string())
        })
    }
}

/// Connect links and per-upstream accounts.
pub(crate) struct Connects {
    ttl: Duration,
    shared: Option<Arc<dyn manifold_credentials::SharedAccounts>>,
    keys: Option<Keys>,
    mac_key: [u8; 32],
    local: Mutex<Local>,
    accounts: Mutex<AccountsByUpstream>,
}

fn random(n: usize) -> String {
    let mut raw = vec![0u8; n];
    let _ = getrandom::fill(&mut raw);
    URL_SAFE_NO_PAD.encode(raw)
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

fn digest(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

impl Connects {
    /// `key`: `[credentials] key` (no key: no per-caller upstream can exist,
    /// and no link is ever made).
    pub(crate) fn new(
        ttl: Duration,
        key: Option<&str>,
        shared: Option<Arc<dyn manifold_credentials::SharedAccounts>>,
    ) -> Connects {
        let mac_key = key.map_or([0u8; 32], |k| {
            manifold_foundation::mac::hmac_sha256(KEY_DOMAIN.as_bytes(), &[k.as_bytes()])
        });
        Connects {
            ttl,
            shared,
            keys: key.map(|k| Keys::new::<&str>(KEY_DOMAIN, k, &[])),
            mac_key,
            local: Mutex::new(Local::default()),
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
        if let Some(s) = &self.shared {
            a.share_with(s.clone());
        }
        map.insert(upstream.name().clone(), (auth.clone(), a.clone()));
        Some(a)
    }

    /// `value` sealed under the link key for `aad` (base64url).
    pub(crate) fn seal<T: Serialize>(&self, aad: &[u8], value: &T) -> Option<String> {
        let raw = self
            .keys
            .as_ref()?
            .seal(aad, serde_json::to_vec(value).ok()?)
            .ok()?;
        Some(URL_SAFE_NO_PAD.encode(raw))
    }

    /// What [`Self::seal`] sealed for `aad`, if authentic.
    pub(crate) fn open_sealed<T: serde::de::DeserializeOwned>(
        &self,
        aad: &[u8],
        text: &str,
    ) -> Option<T> {
        let raw = URL_SAFE_NO_PAD.decode(text).ok()?;
        serde_json::from_slice(&self.keys.as_ref()?.open(aad, &raw).ok()?).ok()
    }

    /// Marks `id` used here (single use); false when it already was.
    pub(crate) fn spend_once(&self, id: &str) -> bool {
        self.spend(&[id])
    }

    /// Checks the form's `csrf` for link `id` when the browser proved who it
    /// is by signing in (no code asked).
    pub(crate) fn bind_signed_in(&self, id: &str, csrf: &str) -> Result<Pending, Void> {
        let p = self.get(id)?;
        if !manifold_foundation::ct::eq(p.csrf.as_bytes(), csrf.as_bytes()) {
            return Err(Void::Gone);
        }
        Ok(p)
    }

    /// An HMAC of `parts` under the link key, base64url.
    pub(crate) fn mac(&self, parts: &[&[u8]]) -> String {
        URL_SAFE_NO_PAD.encode(manifold_foundation::mac::hmac_sha256(&self.mac_key, parts))
    }

    /// A link for `principal` to connect at `upstream`: the one still open
    /// for them there, or a new one; `None` when the table (or the
    /// principal's share) is full, or there is no key.
    pub(crate) fn open(
        &self,
        upstream: &Arc<str>,
        principal: &str,
        session: Option<&str>,
    ) -> Option<Opened> {
        let keys = self.keys.as_ref()?;
        let now = unix_now();
        let mut local = self.local.lock();
        local.sweep(now);
        let key = (upstream.clone(), principal.to_string());
        // Asking again while the link is unused: the same link (the session
        // that asked first is the one told of its completion).
        if let Some((o, _)) = local.issued.get(&key) {
            if !local.used.contains_key(&digest(&o.id)) {
                return Some(o.clone());
            }
        }
        let mine = local.issued.keys().filter(|(_, p)| p == principal).count();
        if local.issued.len() >= MAX_PENDING_CONNECTS
            || (mine >= MAX_PENDING_PER_PRINCIPAL && !local.issued.contains_key(&key))
        {
            return None;
        }
        let (code, elicitation_id) = (code(), random(16));
        let expiry = now + self.ttl.as_secs();
        let sealed = Sealed {
            u: upstream.to_string(),
            p: principal.to_string(),
            c: code.clone(),
            e: elicitation_id.clone(),
            s: session.map(str::to_string),
            x: expiry,
        };
        let raw = keys
            .seal(LINK_AAD, serde_json::to_vec(&sealed).ok()?)
            .ok()?;
        let opened = Opened {
            id: URL_SAFE_NO_PAD.encode(raw),
            code,
            elicitation_id,
        };
        local.issued.insert(key, (opened.clone(), expiry));
        Some(opened)
    }

    /// The link `id`, opened: authentic, unexpired, not used or voided here.
    pub(crate) fn get(&self, id: &str) -> Result<Pending, Void> {
        let keys = self.keys.as_ref().ok_or(Void::Gone)?;
        let raw = URL_SAFE_NO_PAD.decode(id).map_err(|_| Void::Gone)?;
        let plain = keys.open(LINK_AAD, &raw).map_err(|_| Void::Gone)?;
        let s: Sealed = serde_json::from_slice(&plain).map_err(|_| Void::Gone)?;
        let now = unix_now();
        if s.x <= now {
            return Err(Void::Gone);
        }
        let d = digest(id);
        let local = self.local.lock();
        if local.used.contains_key(&d)
            || local
                .tries
                .get(&d)
                .is_some_and(|(n, _)| *n >= MAX_CODE_TRIES)
        {
            return Err(Void::Gone);
        }
        Ok(Pending {
            id: id.to_string(),
            upstream: Arc::from(s.u),
            principal: s.p,
            code: s.c,
            elicitation_id: s.e,
            session: s.s,
            csrf: self.mac(&[b"csrf", id.as_bytes()]),
        })
    }

    /// Checks the form's `csrf` and the typed `code` for link `id`: a wrong
    /// code counts, and the last allowed one voids the link.
    pub(crate) fn bind(&self, id: &str, csrf: &str, typed: &str) -> Result<Pending, Void> {
        let p = self.get(id)?;
        if !manifold_foundation::ct::eq(p.csrf.as_bytes(), csrf.as_bytes()) {
            return Err(Void::Gone);
        }
        if manifold_foundation::ct::eq(normal(&p.code).as_bytes(), normal(typed).as_bytes()) {
            return Ok(p);
        }
        let mut local = self.local.lock();
        local.sweep(unix_now());
        if local.tries.len() >= MAX_PENDING_CONNECTS {
            return Err(Void::TooManyTries);
        }
        let expiry = unix_now() + self.ttl.as_secs();
        let n = &mut local.tries.entry(digest(id)).or_insert((0, expiry)).0;
        *n += 1;
        if *n >= MAX_CODE_TRIES {
            return Err(Void::TooManyTries);
        }
        Err(Void::WrongCode(MAX_CODE_TRIES - *n))
    }

    /// The PKCE verifier of link `id`'s flow (derived: any replica finds it).
    pub(crate) fn verifier(&self, id: &str) -> String {
        self.mac(&[b"pkce", id.as_bytes()])
    }

    /// The OAuth `state` for link `id`'s flow (sealed: any replica opens it).
    pub(crate) fn state_for(&self, id: &str) -> Option<String> {
        let keys = self.keys.as_ref()?;
        let body = serde_json::to_vec(&(id, random(8))).ok()?;
        keys.seal(STATE_AAD, body)
            .ok()
            .map(|raw| URL_SAFE_NO_PAD.encode(raw))
    }

    /// Takes (single use here) the link whose flow `state` names.
    pub(crate) fn take_by_state(&self, state: &str) -> Option<Pending> {
        let keys = self.keys.as_ref()?;
        let raw = URL_SAFE_NO_PAD.decode(state).ok()?;
        let (id, _): (String, String) =
            serde_json::from_slice(&keys.open(STATE_AAD, &raw).ok()?).ok()?;
        let p = self.get(&id).ok()?;
        self.spend(&[state, &id]).then_some(p)
    }

    /// Takes (single use here) link `id`, once its code was given.
    pub(crate) fn take_bound(&self, id: &str) -> Option<Pending> {
        let p = self.get(id).ok()?;
        self.spend(&[id]).then_some(p)
    }

    /// Marks `ids` used here; false when one was already (or the table is
    /// full).
    fn spend(&self, ids: &[&str]) -> bool {
        let now = unix_now();
        let mut local = self.local.lock();
        local.sweep(now);
        if local.used.len() + ids.len() > MAX_PENDING_CONNECTS {
            return false;
        }
        let digests: Vec<String> = ids.iter().map(|i| digest(i)).collect();
        if digests.iter().any(|d| local.used.contains_key(d)) {
            return false;
        }
        for d in digests {
            local.used.insert(d, now + self.ttl.as_secs());
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "connect-links-test-key-0123456789abcdef";

    #[test]
    fn a_link_binds_only_with_its_code_and_dies_after_too_many_tries() {
        let c = Connects::new(Duration::from_secs(60), Some(KEY), None);
        let up: Arc<str> = Arc::from("gh");
        let o = c.open(&up, "key:alice", None).expect("opened");
        // Asking again while unused: the same link.
        assert_eq!(c.open(&up, "key:alice", None).expect("again").id, o.id);
        let p = c.get(&o.id).expect("open");
        assert_eq!(p.principal, "key:alice");
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
        // Another replica with the same key opens a fresh link; a tampered
        // one, or one under another key, is unknown.
        let other = Connects::new(Duration::from_secs(60), Some(KEY), None);
        let o = c
            .open(&Arc::from("gh2"), "key:alice", None)
            .expect("opened");
        let p = other.get(&o.id).expect("any replica opens it");
        let typed = o.code.to_lowercase().replace('-', " ");
        assert!(other.bind(&o.id, &p.csrf, &typed).is_ok());
        assert!(other.take_bound(&o.id).is_some());
        assert!(other.take_bound(&o.id).is_none(), "single use");
        let mut tampered = o.id.clone().into_bytes();
        tampered[10] ^= 1;
        assert!(c.get(&String::from_utf8_lossy(&tampered)).is_err());
        let stranger = Connects::new(
            Duration::from_secs(60),
            Some("another-key-0123456789abcdef0123456789"),
            None,
        );
        assert!(stranger.get(&o.id).is_err());
        // States are sealed, single use, and name their link.
        let o = c.open(&Arc::from("gh3"), "key:bob", None).expect("opened");
        let state = c.state_for(&o.id).expect("state");
        assert_eq!(
            other.take_by_state(&state).expect("taken").principal,
            "key:bob"
        );
        assert!(other.take_by_state(&state).is_none());
        assert_eq!(c.verifier(&o.id), other.verifier(&o.id));
    }

    #[test]
    fn links_are_bounded_per_principal_and_expire() {
        let c = Connects::new(Duration::from_secs(60), Some(KEY), None);
        let ups: Vec<Arc<str>> = (0..=MAX_PENDING_PER_PRINCIPAL)
            .map(|i| Arc::from(format!("u{i}")))
            .collect();
        for u in &ups[..MAX_PENDING_PER_PRINCIPAL] {
            assert!(c.open(u, "key:bob", None).is_some());
        }
        assert!(c
            .open(&ups[MAX_PENDING_PER_PRINCIPAL], "key:bob", None)
            .is_none());
        assert!(c.open(&ups[0], "key:carol", None).is_some());
        let short = Connects::new(Duration::from_secs(0), Some(KEY), None);
        let o = short.open(&ups[0], "key:bob", None).expect("opened");
        assert_eq!(short.get(&o.id).err(), Some(Void::Gone), "expired");
        assert!(Connects::new(Duration::from_secs(60), None, None)
            .open(&ups[0], "key:bob", None)
            .is_none());
    }
}
