//! Client sessions of the session era (2024-11-05 … 2025-11-25): what
//! `initialize` negotiated, the GET stream, the server→client requests awaiting
//! the client's answer, and the calls in flight (for `notifications/cancelled`).
//!
//! Session ids are 32 bytes from the OS CSPRNG, hex-encoded, or, with
//! `[cluster]`, sealed (`sealed`): unguessable either way, and visible ASCII as
//! the spec requires.
//!
//! Invariants: a session's GET stream carries whole JSON-RPC messages (framing is
//! the front door's); no lock or DashMap guard is held across `.await`; a session
//! leaves the table only through [`Sessions::remove`], which ends its calls' wait
//! and closes its stream (see `Gateway::end_session` for the rest of the cleanup).
//!
//! Not here: 2026-07-28 requests, which have no session (`request::Caller`).

use bytes::Bytes;
use dashmap::DashMap;
use manifold_protocol::logging::LogLevel;
use manifold_protocol::RequestId;
use manifold_upstream::Responder;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Random bytes in a session id (hex-encoded: twice as many characters).
pub const SESSION_ID_BYTES: usize = 32;
/// Server→client requests awaiting answers per session; more are refused.
pub const MAX_PENDING_CLIENT_REQUESTS: usize = 64;
/// Random bytes in a server→client request id after its prefix (base64url):
/// 128 bits, so an answer cannot be aimed at a question nobody showed you.
pub const PENDING_ID_BYTES: usize = 16;

/// How a session appears in audit records, spans and on the cluster's bus: the
/// first 16 hex digits of the SHA-256 of its id. Records of one session
/// correlate, but a reader cannot use the value to join the live session (the
/// id is a bearer credential).
pub(crate) fn session_ref(id: &str) -> Option<String> {
    if id.is_empty() {
        return None;
    }
    use sha2::{Digest, Sha256};
    Some(hex::encode(&Sha256::digest(id.as_bytes())[..8]))
}

/// What every server→client request id a gateway mints starts with: `mf-`
/// and 8 random hex digits chosen when it starts, so an answer to an id that
/// is not ours is known to be another replica's. The rest of the id is
/// [`PENDING_ID_BYTES`] random bytes (`mf-<prefix>-<22 base64url>`): ids are
/// unguessable, not counted.
fn pending_prefix() -> Arc<str> {
    let mut raw = [0u8; 4];
    let _ = getrandom::fill(&mut raw);
    Arc::from(format!("mf-{}-", hex::encode(raw)))
}

/// `discovery_expand`: the most tools a session's searches add to its
/// `tools/list` (the earliest found leave first).
pub const MAX_FOUND_TOOLS: usize = 64;

/// `log_level`'s value while the client never sent `logging/setLevel`.
const LEVEL_UNSET: u8 = u8::MAX;

/// One client session.
pub(crate) struct ClientSession {
    pub id: String,
    /// [`session_ref`] of the id: how audit records, spans and the cluster's
    /// bus name the session.
    pub digest: String,
    pub protocol_version: String,
    pub client_info: Value,
    pub capabilities: Map<String, Value>,
    /// The address the session was created from (`None`: not over TCP).
    peer: Option<IpAddr>,
    /// The principal it is bound to (`None`: anonymous).
    pub owner: Option<String>,
    /// Whose `[[policy]]` view the session's `list_changed` follow: the
    /// identity of its latest request (groups and scopes may change with a new
    /// token; the owner may not).
    viewer: Mutex<Option<Arc<manifold_policy::Identity>>>,
    /// The endpoint (path) that opened it: presented on another it is unknown.
    pub endpoint: Arc<str>,
    /// `discovery_expand`: tools its searches found, which join its
    /// `tools/list` (in the order found; at most [`MAX_FOUND_TOOLS`]).
    found: Mutex<Vec<String>>,
    /// Exempt from the idle sweep (`Opening::keep_alive`).
    keep_alive: bool,
    /// When a sealed id stops being accepted (`Opening::expires`).
    pub expires: Option<u64>,
    /// `limits.max_calls_per_session`.
    max_calls: usize,
    created: Instant,
    last_seen_ms: AtomicU64,
    /// The gateway's [`pending_prefix`].
    pending_prefix: Arc<str>,
    get_stream: Mutex<Option<mpsc::Sender<Bytes>>>,
    pending: Mutex<HashMap<String, Responder>>,
    in_flight: Mutex<foldhash::HashMap<RequestId, CancellationToken>>,
    /// `logging/setLevel` (a `LogLevel` index), or `LEVEL_UNSET`.
    log_level: AtomicU8,
    /// Cancelled when the session ends: its calls' waits end with it.
    pub ended: CancellationToken,
}

impl ClientSession {
    fn new(
        id: String,
        opening: Opening,
        max_calls: usize,
        pending_prefix: Arc<str>,
    ) -> ClientSession {
        ClientSession {
            digest: session_ref(&id).unwrap_or_default(),
            id,
            protocol_version: opening.protocol_version,
            client_info: opening.client_info,
            capabilities: opening.capabilities,
            peer: opening.peer,
            owner: opening.owner,
            viewer: Mutex::new(opening.viewer),
            endpoint: opening.endpoint,
            found: Mutex::new(Vec::new()),
            keep_alive: opening.keep_alive,
            expires: opening.expires,
            max_calls,
            created: Instant::now(),
            last_seen_ms: AtomicU64::new(0),
            pending_prefix,
            get_stream: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(foldhash::HashMap::default()),
            log_level: AtomicU8::new(LEVEL_UNSET),
            ended: CancellationToken::new(),
        }
    }

    /// The first 8 characters of the id: enough to follow a session in the logs,
    /// useless as a credential.
    /// The identity the session's latest request came with.
    pub fn seen_as(&self, viewer: Option<Arc<manifold_policy::Identity>>) {
        *self.viewer.lock() = viewer;
    }

    /// `discovery_expand`: adds tools a search found; whether any was new
    /// (the session's `tools/list` then changed). Past [`MAX_FOUND_TOOLS`]
    /// the earliest found leave.
    pub fn found(&self, names: &[&str]) -> bool {
        let mut found = self.found.lock();
        let mut added = false;
        for n in names {
            if !found.iter().any(|f| f == n) {
                found.push((*n).to_string());
                added = true;
            }
        }
        let over = found.len().saturating_sub(MAX_FOUND_TOOLS);
        found.drain(..over);
        added
    }

    /// The tools its searches found (`discovery_expand`).
    pub fn found_tools(&self) -> Vec<String> {
        self.found.lock().clone()
    }

    /// Whose policy view the session sees (`None`: unrestricted).
    pub fn viewer(&self) -> Option<Arc<manifold_policy::Identity>> {
        self.viewer.lock().clone()
    }

    pub fn short_id(&self) -> &str {
        self.id.get(..8).unwrap_or(&self.id)
    }

    pub fn touch(&self) {
        let ms = self.created.elapsed().as_millis() as u64;
        self.last_seen_ms.store(ms, Ordering::Relaxed);
    }
    fn idle_for(&self) -> Duration {
        let last = Duration::from_millis(self.last_seen_ms.load(Ordering::Relaxed));
        self.created.elapsed().saturating_sub(last)
    }

    /// Opens (or replaces) the GET stream.
    pub fn open_stream(&self, queue: usize) -> mpsc::Receiver<Bytes> {
        let (tx, rx) = mpsc::channel(queue);
        *self.get_stream.lock() = Some(tx);
        rx
    }

    /// Queues a message on the GET stream; false if none is open or it is full.
    pub fn push(&self, message: Bytes) -> bool {
        let tx = self.get_stream.lock().clone();
        match tx {
            Some(tx) => tx.try_send(message).is_ok(),
            None => false,
        }
    }

    /// The level the client asked for with `logging/setLevel`, if it did.
    pub fn log_level(&self) -> Option<LogLevel> {
        LogLevel::ALL
            .get(usize::from(self.log_level.load(Ordering::Relaxed)))
            .copied()
    }
    pub fn set_log_level(&self, level: LogLevel) {
        self.log_level.store(level as u8, Ordering::Relaxed);
    }

    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.contains_key(name)
    }

    /// Mints an id for a server→client request and keeps its responder;
    /// gives it back at [`MAX_PENDING_CLIENT_REQUESTS`] (or, never seen in
    /// practice, when the OS has no randomness for the id).
    pub fn add_pending(&self, responder: Responder) -> Result<String, Responder> {
        use base64::Engine;
        let mut raw = [0u8; PENDING_ID_BYTES];
        if getrandom::fill(&mut raw).is_err() {
            tracing::error!("no randomness for a server→client request id");
            return Err(responder);
        }
        let id = format!(
            "{}{}",
            self.pending_prefix,
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(raw)
        );
        let mut p = self.pending.lock();
        if p.len() >= MAX_PENDING_CLIENT_REQUESTS {
            return Err(responder);
        }
        p.insert(id.clone(), responder);
        Ok(id)
    }

    /// Whether this gateway minted the server→client request id `id`.
    pub fn minted_here(&self, id: &str) -> bool {
        id.starts_with(&*self.pending_prefix)
    }

    pub fn take_pending(&self, id: &RequestId) -> Option<Responder> {
        id.as_str().and_then(|s| self.pending.lock().remove(s))
    }

    pub fn forget_pending(&self, id: &str) -> Option<Responder> {
        self.pending.lock().remove(id)
    }

    /// Every server→client request still waiting for this client, taken (the
    /// client can no longer answer: its input closed).
    pub fn take_all_pending(&self) -> Vec<Responder> {
        self.pending.lock().drain().map(|(_, r)| r).collect()
    }

    /// Registers a call in flight; its token fires on `notifications/cancelled`
    /// or when the session ends. `None` at the `max_calls` bound: one session
    /// cannot take every upstream slot.
    pub fn begin_call(&self, id: RequestId) -> Option<CancellationToken> {
        let mut calls = self.in_flight.lock();
        if calls.len() >= self.max_calls {
            return None;
        }
        let token = self.ended.child_token();
        calls.insert(id, token.clone());
        Some(token)
    }
    pub fn end_call(&self, id: &RequestId) {
        self.in_flight.lock().remove(id);
    }
    pub fn cancel_call(&self, id: &RequestId) -> bool {
        match self.in_flight.lock().remove(id) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }
}

/// What `initialize` asked for: the new session's facts.
pub(crate) struct Opening {
    pub protocol_version: String,
    pub client_info: Value,
    pub capabilities: Map<String, Value>,
    pub peer: Option<IpAddr>,
    /// The principal that opened it.
    pub owner: Option<String>,
    /// Its identity, for its `[[policy]]` view.
    pub viewer: Option<Arc<manifold_policy::Identity>>,
    /// The endpoint (path) it is opened on.
    pub endpoint: Arc<str>,
    /// Never ended for idleness: the stdio client's one session lives as long
    /// as its process.
    pub keep_alive: bool,
    /// A sealed id's expiry (seconds since the epoch): past it the session is
    /// unknown here too.
    pub expires: Option<u64>,
}

/// Why no session was minted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Full {
    /// `limits.max_sessions` sessions are open.
    Total,
    /// `limits.max_sessions_per_peer` sessions are open from this address.
    Peer,
    /// The OS gave no randomness for the id.
    NoRandomness,
}

/// The session bounds, from `[limits]`.
pub(crate) struct SessionLimits {
    pub max: usize,
    pub per_peer: usize,
    pub calls: usize,
}

/// Every live session.
/// Ended sealed ids remembered (until they expire) so that they stay ended;
/// past this many, the oldest-expiring are forgotten first.
pub const MAX_ENDED_SEALED_IDS: usize = 65_536;

pub(crate) struct Sessions {
    map: DashMap<String, Arc<ClientSession>, foldhash::fast::RandomState>,
    /// Sealed ids that ended here, with their expiry: never taken up again.
    ended: Mutex<HashMap<String, u64>>,
    /// Open sessions by the address they were created from.
    per_peer: Mutex<HashMap<IpAddr, usize>>,
    limits: SessionLimits,
    pending_prefix: Arc<str>,
}

impl Sessions {
    pub fn new(limits: SessionLimits) -> Sessions {
        Sessions {
            map: DashMap::default(),
            ended: Mutex::new(HashMap::new()),
            per_peer: Mutex::new(HashMap::new()),
            limits,
            pending_prefix: pending_prefix(),
        }
    }

    /// Remembers that a sealed session ended (DELETE, idleness, expiry), so the
    /// same id is not taken up again on this replica before it expires.
    pub fn remember_ended(&self, id: &str, expires: u64, now: u64) {
        let mut ended = self.ended.lock();
        if ended.len() >= MAX_ENDED_SEALED_IDS {
            ended.retain(|_, e| *e > now);
        }
        if ended.len() >= MAX_ENDED_SEALED_IDS {
            // Still full: forget the one that expires first.
            if let Some(k) = ended
                .iter()
                .min_by_key(|(_, e)| **e)
                .map(|(k, _)| k.clone())
            {
                ended.remove(&k);
            }
        }
        ended.insert(id.to_string(), expires);
    }

    /// Whether a sealed id ended on this replica.
    pub fn has_ended(&self, id: &str) -> bool {
        self.ended.lock().contains_key(id)
    }

    /// Mints a session, within `limits.max_sessions` in all and
    /// `limits.max_sessions_per_peer` from one address, under `id` (a sealed
    /// one: minted here, or opened from another replica's) or a random one.
    /// A session already under `id` (two first requests of a session taken up
    /// from another replica, racing) is returned as it is.
    pub fn create_with_id(
        &self,
        opening: Opening,
        id: Option<String>,
    ) -> Result<Arc<ClientSession>, Full> {
        if self.map.len() >= self.limits.max {
            return Err(Full::Total);
        }
        let id = match id {
            Some(id) => id,
            None => {
                let mut raw = [0u8; SESSION_ID_BYTES];
                getrandom::fill(&mut raw).map_err(|_| Full::NoRandomness)?;
                hex::encode(raw)
            }
        };
        let slot = match self.map.entry(id) {
            dashmap::Entry::Occupied(e) => return Ok(e.get().clone()),
            dashmap::Entry::Vacant(v) => v,
        };
        if let Some(ip) = opening.peer {
            let mut peers = self.per_peer.lock();
            let n = peers.entry(ip).or_insert(0);
            if *n >= self.limits.per_peer {
                return Err(Full::Peer);
            }
            *n += 1;
        }
        let s = Arc::new(ClientSession::new(
            slot.key().clone(),
            opening,
            self.limits.calls,
            self.pending_prefix.clone(),
        ));
        slot.insert(s.clone());
        Ok(s)
    }

    pub fn get(&self, id: &str) -> Option<Arc<ClientSession>> {
        self.map.get(id).map(|s| s.value().clone())
    }

    /// The session whose [`ClientSession::digest`] is `digest` (a scan: only
    /// the cluster's relays, which are rare next to requests, look sessions
    /// up this way).
    pub fn by_digest(&self, digest: &str) -> Option<Arc<ClientSession>> {
        self.all().into_iter().find(|s| s.digest == digest)
    }

    /// Takes a session out of the table: its calls stop waiting on it and its
    /// stream closes. `None` if it was not there.
    pub fn remove(&self, id: &str) -> Option<Arc<ClientSession>> {
        let (_, s) = self.map.remove(id)?;
        if let Some(ip) = s.peer {
            let mut peers = self.per_peer.lock();
            if let Some(n) = peers.get_mut(&ip) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    peers.remove(&ip);
                }
            }
        }
        s.ended.cancel();
        *s.get_stream.lock() = None;
        Some(s)
    }

    /// Sends a message to every session with a GET stream open for which `to`
    /// holds; returns how many took it.
    pub fn broadcast(&self, message: &Bytes, to: &mut dyn FnMut(&ClientSession) -> bool) -> usize {
        self.all()
            .iter()
            .filter(|s| to(s) && s.push(message.clone()))
            .count()
    }

    /// The ids of sessions idle for longer than `idle`.
    pub fn idle(&self, idle: Duration) -> Vec<String> {
        self.map
            .iter()
            .filter(|e| !e.value().keep_alive && e.value().idle_for() > idle)
            .map(|e| e.key().clone())
            .collect()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Every live session (a snapshot: no guard is kept).
    pub fn all(&self) -> Vec<Arc<ClientSession>> {
        self.map.iter().map(|e| e.value().clone()).collect()
    }

    /// The most verbose `logging/setLevel` of any live session, if any set one.
    pub fn most_verbose_log_level(&self) -> Option<LogLevel> {
        self.map.iter().filter_map(|e| e.value().log_level()).min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;

    fn session(prefix: Arc<str>) -> ClientSession {
        let opening = Opening {
            protocol_version: "2025-11-25".into(),
            client_info: Value::Null,
            capabilities: Map::new(),
            peer: None,
            owner: None,
            viewer: None,
            endpoint: Arc::from("/mcp"),
            keep_alive: false,
            expires: None,
        };
        ClientSession::new("s".into(), opening, 8, prefix)
    }

    #[test]
    fn server_to_client_ids_carry_128_random_bits_after_the_replica_prefix() {
        let prefix = pending_prefix();
        let s = session(prefix.clone());
        let mut seen = std::collections::HashSet::new();
        for _ in 0..MAX_PENDING_CLIENT_REQUESTS {
            let (r, _rx) = Responder::local();
            let id = s.add_pending(r).map_err(|_| "refused").unwrap();
            assert!(s.minted_here(&id), "{id}");
            let tail = id.strip_prefix(&*prefix).unwrap();
            let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(tail)
                .unwrap();
            assert_eq!(raw.len(), PENDING_ID_BYTES, "{id}");
            assert!(seen.insert(tail.to_string()), "{id} twice");
        }
        // Not a counter: the ids share no common tail pattern, and each of the
        // 128 bit positions takes both values across 64 ids (a counter's high
        // bits never would).
        let mut ones = [0u32; PENDING_ID_BYTES * 8];
        for t in &seen {
            let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(t)
                .unwrap();
            for (i, b) in raw.iter().enumerate() {
                for bit in 0..8 {
                    ones[i * 8 + bit] += u32::from(b >> bit & 1);
                }
            }
        }
        let n = seen.len() as u32;
        let stuck = ones.iter().filter(|&&c| c == 0 || c == n).count();
        assert!(stuck == 0, "{stuck} bit positions never changed");
        // Another replica's prefix is not ours.
        let other = session(pending_prefix());
        let (r, _rx) = Responder::local();
        let id = other.add_pending(r).map_err(|_| "refused").unwrap();
        assert!(!s.minted_here(&id), "{id}");
    }
}
