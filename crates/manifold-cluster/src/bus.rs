//! [`Bus`]: one connection to Redis for commands and one subscribed to the
//! deployment's channel, kept up in the background.
//!
//! Invariants: `run` owns both connections and is the only task touching the
//! subscription; it ends when its stop token fires. Between connections
//! `publish` and `rate` fail at once with [`ClusterError::Unavailable`]; a
//! command that fails on a broken connection makes `run` reconnect. A replica
//! ignores its own messages as they come back. Every message is sealed when
//! published and taken only when `auth` accepts it; a refused one is counted
//! by reason and logged at most once per power of two of its count (an
//! attacker publishing garbage cannot flood the log).
//!
//! Not here: the messages' meaning (`message`, and the server), the MAC and
//! the replay window (`auth`).

pub(crate) mod records;
pub(crate) mod shared;

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

use crate::auth::{now_ms, Keys, Rejection, Replay};
use crate::rate;
use crate::{
    error::unavailable, error::ClusterError, limits::random_id, limits::LIVENESS_INTERVAL,
    limits::MAX_BACKOFF, limits::MAX_MESSAGE_BYTES, limits::OP_TIMEOUT, limits::QUEUE,
    message::Envelope, message::Message,
};
use manifold_foundation::rate::{Bucket, SharedBuckets, Taken};

/// The first pause after a failed connection; it doubles up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

/// What `/readyz` and `manifold check` report about the bus.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Health {
    pub connected: bool,
    /// Why the last connection failed or ended.
    pub last_error: Option<String>,
    /// Received messages dropped because the server did not keep up.
    pub dropped: u64,
    /// Received messages refused (unsigned, forged, expired, replayed…):
    /// `manifold_cluster_rejected_total` has them by reason.
    pub rejected: u64,
}

/// The bus of one replica.
pub struct Bus {
    replica: String,
    channel: String,
    client: redis::Client,
    /// The command connection while connected (cloned out; never held across
    /// an await).
    conn: Mutex<Option<MultiplexedConnection>>,
    last_error: Mutex<Option<String>>,
    /// A command failed on a broken connection: `run` reconnects.
    broken: Notify,
    dropped: AtomicU64,
    gcra: redis::Script,
    keys: Keys,
    /// The number of the next message sent.
    seq: AtomicU64,
    replay: Mutex<Replay>,
    /// Refused messages, by [`Rejection::index`].
    rejected: [AtomicU64; Rejection::ALL.len()],
}

impl Bus {
    /// A bus for `url` on `channel`, sealing with `keys`; connects when
    /// [`Bus::run`] runs. `ca` (PEM) is what a `rediss://` server's
    /// certificate must chain to (else the web's root certificates). Fails
    /// ([`ClusterError::Config`]) on a URL the client cannot parse or a CA it
    /// cannot read, never because Redis is down; the error never contains the
    /// URL (it may hold a password).
    pub fn new(
        url: &str,
        channel: &str,
        keys: Keys,
        ca: Option<&[u8]>,
    ) -> Result<Arc<Bus>, ClusterError> {
        if let Some(pem) = ca {
            use rustls_pki_types::pem::PemObject;
            let certs = rustls_pki_types::CertificateDer::pem_slice_iter(pem)
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ClusterError::Config(format!("key `cluster.redis_ca`: {e}")))?;
            if certs.is_empty() {
                return Err(ClusterError::Config(
                    "key `cluster.redis_ca`: no PEM certificate in the file".into(),
                ));
            }
        }
        let client = match ca {
            None => redis::Client::open(url),
            Some(pem) => redis::Client::build_with_tls(
                url,
                redis::TlsCertificates {
                    client_tls: None,
                    root_cert: Some(pem.to_vec()),
                },
            ),
        }
        .map_err(|e| ClusterError::Config(format!("key `cluster.redis`: {e}")))?;
        let replica = random_id()
            .ok_or_else(|| ClusterError::Config("no randomness for the replica's id".into()))?;
        Ok(Arc::new(Bus {
            replica,
            channel: channel.to_string(),
            client,
            conn: Mutex::new(None),
            last_error: Mutex::new(Some("not connected yet".into())),
            broken: Notify::new(),
            dropped: AtomicU64::new(0),
            gcra: redis::Script::new(rate::GCRA),
            keys,
            seq: AtomicU64::new(1),
            replay: Mutex::new(Replay::new(now_ms())),
            rejected: Default::default(),
        }))
    }

    /// This replica's id on the bus (random per process).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    pub fn health(&self) -> Health {
        Health {
            connected: self.conn.lock().is_some(),
            last_error: self.last_error.lock().clone(),
            dropped: self.dropped.load(Ordering::Relaxed),
            rejected: self
                .rejected
                .iter()
                .map(|n| n.load(Ordering::Relaxed))
                .sum(),
        }
    }

    /// Refused messages so far, by reason (every reason, zeros included).
    pub fn rejected(&self) -> Vec<(&'static str, u64)> {
        Rejection::ALL
            .iter()
            .map(|r| (r.as_str(), self.rejected[r.index()].load(Ordering::Relaxed)))
            .collect()
    }

    fn reject(&self, why: Rejection) {
        let n = self.rejected[why.index()].fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_power_of_two() {
            tracing::warn!(reason = why.as_str(), so_far = n,
                "refused a message on the cluster's bus (not sealed with this deployment's key, expired or replayed)");
        }
    }

    /// The queue `run` delivers the other replicas' messages to.
    pub fn queue() -> (mpsc::Sender<Envelope>, mpsc::Receiver<Envelope>) {
        mpsc::channel(QUEUE)
    }

    /// Keeps the connections up and delivers messages to `tx` until `stop`.
    pub async fn run(self: Arc<Self>, tx: mpsc::Sender<Envelope>, stop: CancellationToken) {
        let mut backoff = manifold_foundation::backoff::Backoff::new(FIRST_BACKOFF, MAX_BACKOFF);
        loop {
            let connected = tokio::select! {
                _ = stop.cancelled() => return,
                r = tokio::time::timeout(OP_TIMEOUT * 4, self.connect()) => r,
            };
            match connected {
                Ok(Ok(pubsub)) => {
                    backoff.reset();
                    tracing::info!(channel = %self.channel, replica = %self.replica, "connected to the cluster's Redis");
                    // A failure noticed while disconnected left a permit: not
                    // this connection's.
                    let _ = tokio::time::timeout(Duration::ZERO, self.broken.notified()).await;
                    let (mut sink, mut messages) = pubsub.split();
                    // A half-open subscription delivers nothing and says
                    // nothing: a PING that goes unanswered tells.
                    let mut liveness = tokio::time::interval(LIVENESS_INTERVAL);
                    liveness.tick().await;
                    let why = loop {
                        tokio::select! {
                            _ = stop.cancelled() => {
                                self.lost("stopped".into());
                                return;
                            }
                            _ = self.broken.notified() => break "a command failed on the connection".to_string(),
                            _ = liveness.tick() => {
                                let pong = tokio::time::timeout(OP_TIMEOUT, sink.ping::<redis::Value>()).await;
                                if !matches!(pong, Ok(Ok(_))) {
                                    break format!("the subscription did not answer a PING within {}ms", OP_TIMEOUT.as_millis());
                                }
                            }
                            m = messages.next() => match m {
                                Some(m) => self.take(m.get_payload_bytes(), &tx),
                                None => break "the subscription ended (Redis closed the connection)".to_string(),
                            },
                        }
                    };
                    tracing::warn!(error = %why, "lost the cluster's Redis; relays through it fail until it is back");
                    self.lost(why);
                }
                Ok(Err(e)) => self.lost(e.to_string()),
                Err(_) => self.lost(format!("no connection within {:?}", OP_TIMEOUT * 4)),
            }
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(backoff.next_pause()) => {}
            }
        }
    }

    async fn connect(&self) -> redis::RedisResult<redis::aio::PubSub> {
        let cfg = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(OP_TIMEOUT))
            .set_response_timeout(Some(OP_TIMEOUT));
        let conn = self
            .client
            .get_multiplexed_async_connection_with_config(&cfg)
            .await?;
        let mut pubsub = self.client.get_async_pubsub().await?;
        pubsub.subscribe(&self.channel).await?;
        *self.conn.lock() = Some(conn);
        *self.last_error.lock() = None;
        Ok(pubsub)
    }

    fn lost(&self, why: String) {
        *self.conn.lock() = None;
        *self.last_error.lock() = Some(why);
    }

    fn take(&self, payload: &[u8], tx: &mpsc::Sender<Envelope>) {
        match self.accept(payload, now_ms()) {
            Ok(Some(env)) => self.deliver(env, tx),
            Ok(None) => {}
            Err(why) => self.reject(why),
        }
    }

    /// The envelope in `payload` received at `now`, when it is authentic,
    /// fresh and new (`None`: one of ours coming back).
    fn accept(&self, payload: &[u8], now: u64) -> Result<Option<Envelope>, Rejection> {
        if payload.len() > MAX_MESSAGE_BYTES {
            return Err(Rejection::TooLarge);
        }
        let body = self.keys.open(&self.channel, payload)?;
        let env: Envelope = serde_json::from_slice(&body).map_err(|e| {
            tracing::debug!(error = %e, "an authentic cluster message this version cannot read");
            Rejection::Unreadable
        })?;
        if env.from == self.replica {
            return Ok(None);
        }
        self.replay.lock().check(&env, now)?;
        Ok(Some(env))
    }

    fn deliver(&self, env: Envelope, tx: &mpsc::Sender<Envelope>) {
        if tx.try_send(env).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("cluster message dropped: the relay queue is full");
        }
    }

    fn conn(&self) -> Result<MultiplexedConnection, ClusterError> {
        self.conn.lock().clone().ok_or_else(|| {
            ClusterError::Unavailable(
                self.last_error
                    .lock()
                    .clone()
                    .unwrap_or_else(|| "not connected".into()),
            )
        })
    }

    /// Runs one command on the command connection, bounded by [`OP_TIMEOUT`].
    async fn bounded<T>(
        &self,
        f: impl std::future::Future<Output = redis::RedisResult<T>>,
    ) -> Result<T, ClusterError> {
        match tokio::time::timeout(OP_TIMEOUT, f).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => {
                if e.is_io_error() || e.is_connection_dropped() {
                    self.broken.notify_one();
                }
                Err(unavailable(e))
            }
            // A half-open connection answers nothing: reconnect rather than
            // pay the timeout on every command.
            Err(_) => {
                self.broken.notify_one();
                Err(ClusterError::Timeout)
            }
        }
    }

    /// `message` sealed, as it goes on the channel.
    fn seal(&self, message: Message) -> Result<Vec<u8>, ClusterError> {
        let body = serde_json::to_string(&Envelope {
            from: self.replica.clone(),
            ts: now_ms(),
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            message,
        })
        .map_err(|e| ClusterError::Unavailable(e.to_string()))?;
        self.keys.seal(&self.channel, &body).map_err(|_| {
            ClusterError::Unavailable("the message could not be sealed (no randomness)".into())
        })
    }

    /// Publishes `message` to every other replica: how many received it.
    pub async fn publish(&self, message: Message) -> Result<usize, ClusterError> {
        let text = self.seal(message)?;
        if text.len() > MAX_MESSAGE_BYTES {
            return Err(ClusterError::TooLarge(text.len()));
        }
        let mut conn = self.conn()?;
        // Redis counts this replica's own subscription too.
        self.bounded(
            redis::cmd("PUBLISH")
                .arg(&self.channel)
                .arg(text)
                .query_async::<i64>(&mut conn),
        )
        .await
        .map(|n| usize::try_from(n - 1).unwrap_or(0))
    }

    /// Takes a place in every bucket of `checks`, or in none: `None` when all
    /// had one, else the refusing check's rule and how long until it has one.
    pub async fn rate(&self, checks: &[Bucket]) -> Result<Option<(usize, Duration)>, ClusterError> {
        if checks.is_empty() {
            return Ok(None);
        }
        let mut inv = self.gcra.prepare_invoke();
        for c in checks {
            let period = u64::try_from(c.period.as_micros()).unwrap_or(u64::MAX);
            inv.key(rate::key(&self.channel, c))
                .arg(period)
                .arg(c.burst);
        }
        let mut conn = self.conn()?;
        let r: Vec<i64> = self.bounded(inv.invoke_async(&mut conn)).await?;
        match r.as_slice() {
            [0, _] => Ok(None),
            [i, wait] => {
                let i = usize::try_from(*i - 1).unwrap_or(0).min(checks.len() - 1);
                let wait = Duration::from_micros(u64::try_from(*wait).unwrap_or(0));
                Ok(Some((checks[i].rule, wait)))
            }
            _ => Err(ClusterError::Unavailable(format!(
                "unexpected rate script answer {r:?}"
            ))),
        }
    }
}

/// The rate buckets every replica shares: manifold-policy asks the bus, and
/// falls back to this replica's own buckets when Redis cannot decide.
impl SharedBuckets for Bus {
    fn take<'a>(
        &'a self,
        buckets: &'a [Bucket],
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Taken> + Send + 'a>> {
        Box::pin(async move { self.rate(buckets).await.map_err(|e| e.to_string()) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "bus-test-key-0123456789abcdef0123456789";

    fn bus(key: &str) -> Arc<Bus> {
        Bus::new("redis://127.0.0.1:1", "manifold", Keys::new(key, &[]), None).expect("bus")
    }

    fn cancel() -> Message {
        Message::Cancel {
            session: "ab".into(),
            request: serde_json::json!(1),
        }
    }

    #[test]
    fn a_peer_takes_each_sealed_message_once_and_a_stranger_none() {
        let (a, b) = (bus(KEY), bus(KEY));
        let wire = a.seal(cancel()).expect("sealed");
        let now = now_ms();
        let env = b.accept(&wire[..], now).expect("taken").expect("not ours");
        assert_eq!(env.from, a.replica());
        assert_eq!(env.message, cancel());
        assert_eq!(b.accept(&wire[..], now).err(), Some(Rejection::Replayed));
        // Our own message coming back is no refusal.
        assert!(matches!(a.accept(&wire[..], now), Ok(None)));
        // Another deployment's key, or none.
        let stranger = bus("another-key-0123456789abcdef0123456789");
        assert_eq!(
            stranger.accept(&wire[..], now).err(),
            Some(Rejection::BadMac)
        );
        // What a replica of the version before sent (signed, in clear) is
        // still taken; the same JSON without its MAC is not.
        let body = serde_json::to_string(&crate::message::Envelope {
            from: "old-replica".into(),
            ts: now,
            seq: 1,
            message: cancel(),
        })
        .expect("json");
        let signed = Keys::new(KEY, &[]).sign(&b.channel, &body);
        assert!(matches!(b.accept(signed.as_bytes(), now), Ok(Some(_))));
        assert_eq!(
            b.accept(body.as_bytes(), now).err(),
            Some(Rejection::Unsigned)
        );
        // Kept and replayed later than the age window.
        let wire = a.seal(cancel()).expect("sealed");
        let late = now + crate::auth::MAX_ENVELOPE_AGE.as_millis() as u64 + 1_000;
        assert_eq!(b.accept(&wire[..], late).err(), Some(Rejection::Expired));
    }

    #[test]
    fn refusals_are_counted_by_reason() {
        let b = bus(KEY);
        let (tx, _rx) = Bus::queue();
        b.take(
            br#"{"from":"x","ts":1,"seq":1,"kind":"cancel","session":"s","request":1}"#,
            &tx,
        );
        b.take(&vec![b'x'; MAX_MESSAGE_BYTES + 1], &tx);
        let counts: std::collections::HashMap<_, _> = b.rejected().into_iter().collect();
        assert_eq!(counts["unsigned"], 1);
        assert_eq!(counts["too_large"], 1);
        assert_eq!(counts["bad_mac"], 0);
        assert_eq!(b.health().rejected, 2);
    }

    #[test]
    fn a_ca_needs_a_tls_url_and_errors_never_show_the_url() {
        let keys = || Keys::new(KEY, &[]);
        let err = Bus::new("redis://:hunter2@127.0.0.1:1", "c", keys(), Some(b"x"))
            .err()
            .expect("refused");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = Bus::new("redis://:hunter2@[::1", "c", keys(), None)
            .err()
            .expect("refused");
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(Bus::new("rediss://:hunter2@127.0.0.1:1", "c", keys(), None).is_ok());
        let err = Bus::new(
            "rediss://127.0.0.1:1",
            "c",
            keys(),
            Some(b"not a certificate"),
        )
        .err()
        .expect("refused");
        assert!(err.to_string().contains("redis_ca"), "{err}");
    }
}
