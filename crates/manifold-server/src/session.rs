//! Downstream sessions (stateful era): what `initialize` negotiated, the GET stream,
//! the server→client requests awaiting the client's answer, and the calls in flight
//! (for `notifications/cancelled`).
//!
//! Session ids are 32 bytes from the OS CSPRNG, hex-encoded: unguessable, and
//! visible ASCII as the spec requires.

use bytes::Bytes;
use dashmap::DashMap;
use manifold_protocol::RequestId;
use manifold_upstream::Responder;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Random bytes in a session id (hex-encoded: twice as many characters).
pub const SESSION_ID_BYTES: usize = 32;
/// Server→client requests awaiting answers per session; more are refused.
pub const MAX_PENDING_CLIENT_REQUESTS: usize = 64;

pub(crate) struct DownSession {
    pub id: String,
    pub protocol_version: String,
    pub client_info: Value,
    pub capabilities: Map<String, Value>,
    created: Instant,
    last_seen_ms: AtomicU64,
    next_request: AtomicU64,
    get_stream: Mutex<Option<mpsc::Sender<Bytes>>>,
    pending: Mutex<HashMap<String, Responder>>,
    in_flight: Mutex<HashMap<RequestId, CancellationToken>>,
    /// The level of `logging/setLevel` (index into `logging::LEVELS`), or
    /// `logging::LEVEL_UNSET`.
    log_level: AtomicU8,
    /// A 2026-07-28 request's stand-in session: not registered, lives as long as
    /// the request. Server→client requests cannot be relayed to it, and closing its
    /// response stream cancels the call.
    pub modern: bool,
    /// Modern requests: the digest `requestState` is bound to (see `mrtr`).
    pub request_digest: String,
    pub ended: CancellationToken,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl DownSession {
    /// The stand-in session of one stateless (2026-07-28) request: what its
    /// `_meta` declared, nothing kept afterwards. `log_level` is the requested
    /// `logLevel`; without one the request gets no log messages.
    pub fn ephemeral(
        protocol_version: &str,
        client_info: Value,
        capabilities: Map<String, Value>,
        log_level: u8,
        request_digest: String,
    ) -> Arc<DownSession> {
        Arc::new(DownSession::new(
            String::new(),
            protocol_version.to_string(),
            client_info,
            capabilities,
            log_level,
            request_digest,
        ))
    }

    fn new(
        id: String,
        protocol_version: String,
        client_info: Value,
        capabilities: Map<String, Value>,
        log_level: u8,
        request_digest: String,
    ) -> DownSession {
        DownSession {
            // Only stand-in (stateless) sessions have no id.
            modern: id.is_empty(),
            id,
            protocol_version,
            client_info,
            capabilities,
            created: Instant::now(),
            last_seen_ms: AtomicU64::new(0),
            next_request: AtomicU64::new(1),
            get_stream: Mutex::new(None),
            pending: Mutex::new(HashMap::new()),
            in_flight: Mutex::new(HashMap::new()),
            log_level: AtomicU8::new(log_level),
            request_digest,
            ended: CancellationToken::new(),
        }
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
        *lock(&self.get_stream) = Some(tx);
        rx
    }

    /// Queues a message on the GET stream; false if none is open or it is full.
    pub fn push(&self, bytes: Bytes) -> bool {
        let tx = lock(&self.get_stream).clone();
        match tx {
            Some(tx) => tx.try_send(bytes).is_ok(),
            None => false,
        }
    }

    pub fn log_level(&self) -> u8 {
        self.log_level.load(Ordering::Relaxed)
    }
    pub fn set_log_level(&self, level: u8) {
        self.log_level.store(level, Ordering::Relaxed);
    }

    pub fn has_capability(&self, name: &str) -> bool {
        self.capabilities.contains_key(name)
    }

    /// Mints an id for a server→client request and keeps its responder.
    pub fn add_pending(&self, responder: Responder) -> Result<String, Responder> {
        let mut p = lock(&self.pending);
        if p.len() >= MAX_PENDING_CLIENT_REQUESTS {
            return Err(responder);
        }
        let id = format!("mf-{}", self.next_request.fetch_add(1, Ordering::Relaxed));
        p.insert(id.clone(), responder);
        Ok(id)
    }

    pub fn take_pending(&self, id: &RequestId) -> Option<Responder> {
        id.as_str().and_then(|s| lock(&self.pending).remove(s))
    }

    pub fn forget_pending(&self, id: &str) -> Option<Responder> {
        lock(&self.pending).remove(id)
    }

    pub fn begin_call(&self, id: RequestId) -> CancellationToken {
        let token = self.ended.child_token();
        lock(&self.in_flight).insert(id, token.clone());
        token
    }
    pub fn end_call(&self, id: &RequestId) {
        lock(&self.in_flight).remove(id);
    }
    pub fn cancel_call(&self, id: &RequestId) -> bool {
        match lock(&self.in_flight).remove(id) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }
}

pub(crate) struct Sessions {
    map: DashMap<String, Arc<DownSession>>,
    max: usize,
}

impl Sessions {
    pub fn new(max: usize) -> Sessions {
        Sessions {
            map: DashMap::new(),
            max,
        }
    }

    pub fn create(
        &self,
        protocol_version: String,
        client_info: Value,
        capabilities: Map<String, Value>,
    ) -> Option<Arc<DownSession>> {
        if self.map.len() >= self.max {
            return None;
        }
        let mut raw = [0u8; SESSION_ID_BYTES];
        getrandom::fill(&mut raw).ok()?;
        let s = Arc::new(DownSession::new(
            hex::encode(raw),
            protocol_version,
            client_info,
            capabilities,
            crate::logging::LEVEL_UNSET,
            String::new(),
        ));
        self.map.insert(s.id.clone(), s.clone());
        Some(s)
    }

    pub fn get(&self, id: &str) -> Option<Arc<DownSession>> {
        self.map.get(id).map(|s| s.value().clone())
    }

    pub fn remove(&self, id: &str) -> bool {
        match self.map.remove(id) {
            Some((_, s)) => {
                s.ended.cancel();
                *lock(&s.get_stream) = None;
                true
            }
            None => false,
        }
    }

    /// Sends a notification to every session with a GET stream open; returns how
    /// many took it.
    pub fn broadcast_notification(&self, method: &str) -> usize {
        let bytes = crate::body::sse_message(&manifold_protocol::jsonrpc::notification_bytes(
            method, None,
        ));
        let sessions: Vec<Arc<DownSession>> = self.map.iter().map(|e| e.value().clone()).collect();
        sessions.iter().filter(|s| s.push(bytes.clone())).count()
    }

    /// Ends sessions idle for longer than `idle`; their ids.
    pub fn expire_idle(&self, idle: Duration) -> Vec<String> {
        let stale: Vec<String> = self
            .map
            .iter()
            .filter(|e| e.value().idle_for() > idle)
            .map(|e| e.key().clone())
            .collect();
        stale.into_iter().filter(|id| self.remove(id)).collect()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Every live session (a snapshot: no guard is kept).
    pub fn all(&self) -> Vec<Arc<DownSession>> {
        self.map.iter().map(|e| e.value().clone()).collect()
    }

    /// The most verbose `logging/setLevel` of any live session, if any set one.
    pub fn most_verbose_log_level(&self) -> Option<u8> {
        self.map
            .iter()
            .map(|e| e.value().log_level())
            .filter(|&l| l != crate::logging::LEVEL_UNSET)
            .min()
    }
}
