//! [`Bus`]: one connection to Redis for commands and one subscribed to the
//! deployment's channel, kept up in the background.
//!
//! Invariants: `run` owns both connections and is the only task touching the
//! subscription; it ends when its stop token fires. Between connections
//! `publish` and `rate` fail at once with [`ClusterError::Unavailable`]; a
//! command that fails on a broken connection makes `run` reconnect. A replica
//! ignores its own messages as they come back.
//!
//! Not here: the messages' meaning (`message`, and the server).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use redis::AsyncConnectionConfig;
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

use crate::rate::{self, RateCheck};
use crate::{
    random_id, unavailable, ClusterError, Envelope, Message, LIVENESS_INTERVAL, MAX_BACKOFF,
    MAX_MESSAGE_BYTES, OP_TIMEOUT, QUEUE,
};

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
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Bus {
    /// A bus for `url` on `channel`; connects when [`Bus::run`] runs. Fails only
    /// on a URL the client cannot parse.
    pub fn new(url: &str, channel: &str) -> Result<Arc<Bus>, ClusterError> {
        let client = redis::Client::open(url)
            .map_err(|e| ClusterError::Unavailable(format!("`cluster.redis`: {e}")))?;
        Ok(Arc::new(Bus {
            replica: random_id(),
            channel: channel.to_string(),
            client,
            conn: Mutex::new(None),
            last_error: Mutex::new(Some("not connected yet".into())),
            broken: Notify::new(),
            dropped: AtomicU64::new(0),
            gcra: redis::Script::new(rate::GCRA),
        }))
    }

    /// This replica's id on the bus (random per process).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    pub fn health(&self) -> Health {
        Health {
            connected: lock(&self.conn).is_some(),
            last_error: lock(&self.last_error).clone(),
            dropped: self.dropped.load(Ordering::Relaxed),
        }
    }

    /// The queue `run` delivers the other replicas' messages to.
    pub fn queue() -> (mpsc::Sender<Envelope>, mpsc::Receiver<Envelope>) {
        mpsc::channel(QUEUE)
    }

    /// Keeps the connections up and delivers messages to `tx` until `stop`.
    pub async fn run(self: Arc<Self>, tx: mpsc::Sender<Envelope>, stop: CancellationToken) {
        let mut backoff = FIRST_BACKOFF;
        loop {
            let connected = tokio::select! {
                _ = stop.cancelled() => return,
                r = tokio::time::timeout(OP_TIMEOUT * 4, self.connect()) => r,
            };
            match connected {
                Ok(Ok(pubsub)) => {
                    backoff = FIRST_BACKOFF;
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
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
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
        *lock(&self.conn) = Some(conn);
        *lock(&self.last_error) = None;
        Ok(pubsub)
    }

    fn lost(&self, why: String) {
        *lock(&self.conn) = None;
        *lock(&self.last_error) = Some(why);
    }

    fn take(&self, payload: &[u8], tx: &mpsc::Sender<Envelope>) {
        if payload.len() > MAX_MESSAGE_BYTES {
            tracing::warn!(
                bytes = payload.len(),
                "cluster message over the limit; dropped"
            );
            return;
        }
        let env: Envelope = match serde_json::from_slice(payload) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(error = %e, "unreadable cluster message (another version?); dropped");
                return;
            }
        };
        if env.from == self.replica {
            return;
        }
        if tx.try_send(env).is_err() {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!("cluster message dropped: the relay queue is full");
        }
    }

    fn conn(&self) -> Result<MultiplexedConnection, ClusterError> {
        lock(&self.conn).clone().ok_or_else(|| {
            ClusterError::Unavailable(
                lock(&self.last_error)
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

    /// Publishes `message` to every other replica: how many received it.
    pub async fn publish(&self, message: Message) -> Result<usize, ClusterError> {
        let text = serde_json::to_string(&Envelope {
            from: self.replica.clone(),
            message,
        })
        .map_err(|e| ClusterError::Unavailable(e.to_string()))?;
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
    pub async fn rate(
        &self,
        checks: &[RateCheck],
    ) -> Result<Option<(usize, Duration)>, ClusterError> {
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
