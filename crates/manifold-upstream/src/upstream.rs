//! [`Upstream`]: the handle to one upstream MCP server, and the actor of each of
//! its pool's members (one, unless it is a pool) — connect, find the era and
//! handshake, fetch the lists, serve until the connection dies, restart with
//! capped exponential backoff — which publishes the member's status and lists;
//! the upstream's are made of its members' (`pool`).
//!
//! Invariants: a connection is published (calls may use it) only once its lists
//! are in; a dead connection fails every call in flight at once and leaves
//! `ready` at once, whatever the actor was doing (a ping, a refetch) when it
//! died; every task of the actor ends with the gateway's shutdown token.
//!
//! Not here: the live connection (`connection`), its requests (`call`), the
//! handshake itself (`handshake`), picking a member (`pool`).

use manifold_config::{LimitsConfig, UpstreamConfig};
use manifold_foundation::backoff::Backoff;
use manifold_protocol::lists::ListSnapshot;
use parking_lot::RwLock;
use serde_json::{Map, Value};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::breaker::BreakerReport;
use crate::call::{self, Call, Guard, NotStarted};
use crate::connection::Connection;
use crate::pool::{Member, MemberReport, Pool};
use crate::retry::{Retries, RetryCounts};
use crate::router::Router;
use crate::status::{starting, Holder, State, UpstreamStatus};
use crate::{
    error::UpstreamError, facts::ClientFacts, facts::ExtraHeaders, facts::ServerFacts,
    facts::UpstreamEvent,
};
use crate::{handshake, listen};

/// A connected session, what it said about itself, its lists and their lifetime.
type Connected = (Arc<Connection>, ServerFacts, ListSnapshot, Option<Duration>);

struct Inner {
    config: UpstreamConfig,
    limits: LimitsConfig,
    name: Arc<str>,
    /// Its members (one unless it is a pool).
    pool: Arc<Pool>,
    /// The pool's lists: its holder's.
    lists: RwLock<Option<Arc<ListSnapshot>>>,
    /// Made of the members' (see [`Upstream::recompute`]).
    status: watch::Sender<UpstreamStatus>,
    /// Resource URIs whose updates clients want (2026-07-28 upstreams: the
    /// holder's listen's `resourceSubscriptions`).
    watched: watch::Sender<std::collections::BTreeSet<String>>,
    /// `auth` other than `static`: the upstream's tokens, kept across
    /// reconnections (refreshes, step-ups, exchanged tokens). A pool's members
    /// share them: they are one service.
    tokens: Option<Arc<manifold_credentials::TokenSource>>,
    /// `retries`, when configured (or an override asks for them); one budget
    /// for the whole pool.
    retries: Option<Arc<Retries>>,
    /// `[upstreams.<name>.breaker]` is configured (each member has one).
    breakers: bool,
    /// Held while the status and lists are made of the members' (members'
    /// actors run at once; one's older view must not overwrite another's).
    recomputing: parking_lot::Mutex<()>,
}

/// A handle to one upstream. Cheap to clone.
#[derive(Clone)]
pub struct Upstream {
    inner: Arc<Inner>,
}

impl Upstream {
    /// Starts the upstream's actor. It runs until `shutdown` fires, then stops the
    /// child (stdin closed, SIGTERM, SIGKILL) or ends the HTTP session.
    pub fn spawn(
        config: UpstreamConfig,
        limits: LimitsConfig,
        gateway: mpsc::Sender<UpstreamEvent>,
        shutdown: CancellationToken,
        tracker: &TaskTracker,
    ) -> Upstream {
        let (status, _) = watch::channel(starting());
        let tokens = match &config.transport {
            manifold_config::Transport::Http { url, auth, .. } => {
                manifold_credentials::TokenSource::new(&config.name, url, auth).map(Arc::new)
            }
            manifold_config::Transport::Stdio { .. } => None,
        };
        let name: Arc<str> = Arc::from(config.name.as_str());
        let pool = Arc::new(Pool::new(&name, &config, config.breaker));
        let retries = config.retries.map(|p| Arc::new(Retries::new(p)));
        let inner = Arc::new(Inner {
            breakers: config.breaker.is_some(),
            pool,
            retries,
            name,
            config,
            limits,
            lists: RwLock::new(None),
            status,
            watched: watch::channel(Default::default()).0,
            tokens,
            recomputing: parking_lot::Mutex::new(()),
        });
        let up = Upstream { inner };
        for member in up.inner.pool.members.iter() {
            let (actor, member) = (up.clone(), member.clone());
            let (gateway, shutdown) = (gateway.clone(), shutdown.clone());
            tracker.spawn(async move { actor.run(member, gateway, shutdown).await });
        }
        up
    }

    pub fn name(&self) -> &Arc<str> {
        &self.inner.name
    }
    /// Where this upstream's OAuth tokens come from (`None`: static headers).
    pub fn tokens(&self) -> Option<&Arc<manifold_credentials::TokenSource>> {
        self.inner.tokens.as_ref()
    }
    /// Refetches the lists as if the upstream had said `list_changed` (another
    /// replica heard it on its own connection); coalesced with a refetch
    /// already asked for, a no-op while not connected.
    pub fn refetch_lists(&self) {
        for m in self.inner.pool.members.iter() {
            let tx = m.refresh.lock().clone();
            if let Some(tx) = tx {
                let _ = tx.try_send(());
            }
        }
    }
    pub fn config(&self) -> &UpstreamConfig {
        &self.inner.config
    }
    pub fn status(&self) -> UpstreamStatus {
        self.inner.status.borrow().clone()
    }
    /// [`UpstreamStatus::list_ttl`] while ready (without cloning the status).
    pub fn list_ttl(&self) -> Option<Duration> {
        let s = self.inner.status.borrow();
        (s.state == State::Ready).then_some(s.list_ttl).flatten()
    }
    pub fn watch_status(&self) -> watch::Receiver<UpstreamStatus> {
        self.inner.status.subscribe()
    }
    /// The current lists, `None` while the upstream is not ready.
    pub fn lists(&self) -> Option<Arc<ListSnapshot>> {
        self.inner.lists.read().clone()
    }
    /// The connection Manifold's own requests go to: the holder's (the one
    /// member's, unless it is a pool).
    fn connection(&self) -> Option<Arc<Connection>> {
        match &self.inner.pool.members[..] {
            [only] => only.slot.get(),
            _ => self.inner.pool.holder_connection(),
        }
    }

    /// Waits until every member has become ready or failed once, and the
    /// upstream's own status says so (it is made of theirs just after).
    pub async fn settled(&self) {
        let settled = |s: &UpstreamStatus| s.state != State::Starting || s.restarts > 0;
        for m in self.inner.pool.members.iter() {
            let _ = m.status.subscribe().wait_for(settled).await;
        }
        let _ = self.inner.status.subscribe().wait_for(settled).await;
    }

    /// The members of its pool as reported (one, unless it is a pool).
    pub fn members(&self) -> Vec<MemberReport> {
        self.inner.pool.reports()
    }

    /// Whether it is a pool of several members.
    pub fn is_pool(&self) -> bool {
        self.inner.pool.is_pool()
    }

    /// Sends a request Manifold makes on its own behalf. Fails fast when the
    /// upstream is not connected.
    pub async fn call(
        &self,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
    ) -> Result<Call, UpstreamError> {
        self.call_as(method, params, headers, None).await
    }

    /// Forwards a client's request, made on behalf of `caller`, past the
    /// upstream's circuit breaker (when it has one); `repeatable`: the call
    /// may be sent again after a failure another attempt may get past, when
    /// the upstream has `retries` (the caller decides from the tool's hints
    /// and the operator's overrides; see `call`).
    pub async fn forward(
        &self,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
        caller: Option<&ClientFacts>,
        repeatable: bool,
    ) -> Result<Call, NotStarted> {
        let retries = self.inner.retries.clone().filter(|_| repeatable);
        let pool = &self.inner.pool;
        // Guarded whenever the upstream has retries, even when this call may
        // not be repeated: its attempts are reported (`Call::attempts`).
        if !self.guarded() && !pool.is_pool() {
            return self
                .call_as(method, params, headers, caller)
                .await
                .map_err(|error| NotStarted { error, attempts: 1 });
        }
        let pin = caller.and_then(|c| c.member);
        let Some(picked) = pool.pick(pin, None) else {
            // Down: failed fast as ever, and not the breaker's business (the
            // actor is restarting it).
            return Err(NotStarted {
                error: self.down(pin),
                attempts: 0,
            });
        };
        let guard = Guard {
            pool: pool.clone(),
            retries,
            pin,
            counted: self.guarded(),
        };
        call::start_guarded(
            picked,
            &self.inner.name,
            method,
            params,
            headers,
            self.inner.config.timeout,
            caller,
            guard,
        )
        .await
    }

    /// Whether its client calls are guarded: a breaker, or retries.
    pub fn guarded(&self) -> bool {
        self.inner.breakers || self.inner.retries.is_some()
    }

    /// Whether the upstream retries calls that may be repeated (`retries`).
    pub fn retries_calls(&self) -> bool {
        self.inner.retries.is_some()
    }

    /// Its circuit breaker's state, when it has one.
    pub fn breaker(&self) -> Option<BreakerReport> {
        self.inner.pool.breaker()
    }

    /// Its retries and the retries its budget refused, when it retries.
    pub fn retry_counts(&self) -> Option<RetryCounts> {
        self.inner.retries.as_ref().map(|r| r.counts())
    }

    /// Sends a request on behalf of `caller`, unguarded (no breaker, no
    /// retries: Manifold's own requests, and calls through [`Upstream::call`]).
    /// In a pool it goes to the member `caller` pins (a task's), else to the
    /// holder.
    pub async fn call_as(
        &self,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
        caller: Option<&ClientFacts>,
    ) -> Result<Call, UpstreamError> {
        let pin = caller.and_then(|c| c.member).filter(|_| self.is_pool());
        let (conn, member) = match pin {
            Some(i) => match self.inner.pool.pick(Some(i), None) {
                Some(p) => (p.conn, i),
                None => return Err(self.down(Some(i))),
            },
            None => match self.connection() {
                Some(c) => (c, 0),
                None => return Err(self.down(None)),
            },
        };
        let mut call = Call::start(
            &conn,
            method,
            params,
            headers,
            self.inner.config.timeout,
            caller,
        )
        .await?;
        call.member = member;
        Ok(call)
    }

    /// Sends one of Manifold's own requests to every connected member (the
    /// log level: each child logs on its own).
    pub async fn call_each(
        &self,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
    ) -> Vec<Result<Call, UpstreamError>> {
        let mut calls = Vec::new();
        for m in self.inner.pool.members.iter() {
            let Some(conn) = m.slot.get() else { continue };
            let timeout = self.inner.config.timeout;
            let call = Call::start(
                &conn,
                method,
                params.clone(),
                headers.clone(),
                timeout,
                None,
            );
            calls.push(call.await);
        }
        if calls.is_empty() {
            calls.push(Err(self.down(None)));
        }
        calls
    }

    /// Why a call finds no connection (`pin`: the member it had to go to).
    fn down(&self, pin: Option<usize>) -> UpstreamError {
        if let Some(m) = pin.and_then(|i| self.inner.pool.members.get(i)) {
            if self.is_pool() {
                let st = m.status.borrow().clone();
                let why = st
                    .last_error
                    .unwrap_or_else(|| format!("it is {}", st.state.as_str()));
                return UpstreamError::unavailable(
                    &self.inner.name,
                    format!(
                        "its pool member {} that holds this is not connected: {why}",
                        m.index
                    ),
                );
            }
        }
        let st = self.status();
        let reason = st
            .last_error
            .unwrap_or_else(|| format!("it is {}", st.state.as_str()));
        UpstreamError::unavailable(&self.inner.name, reason)
    }

    /// Whether the live connection speaks the stateless era.
    pub fn is_stateless(&self) -> bool {
        self.connection().is_some_and(|c| c.is_stateless())
    }

    /// Asks for (`on`) or drops a resource's update notifications from a stateless
    /// upstream: they arrive on its `subscriptions/listen` stream, which is
    /// reopened with the new set. Session-era upstreams use `resources/subscribe`.
    pub fn watch_resource(&self, uri: &str, on: bool) {
        let changed = self.inner.watched.send_if_modified(|set| {
            if on {
                set.insert(uri.to_string())
            } else {
                set.remove(uri)
            }
        });
        if changed {
            // The holder's listen asks for the new set.
            self.recompute(None);
        }
    }

    /// Requests in flight to this upstream.
    /// Responses of the current connection that came after their call had
    /// ended (cancelled, or past its timeout) and were dropped.
    pub fn late_responses(&self) -> u64 {
        let members = self.inner.pool.members.iter();
        members
            .filter_map(|m| m.slot.get())
            .map(|c| c.wire.router.late_responses())
            .sum()
    }

    pub fn in_flight(&self) -> usize {
        self.inner.pool.members.iter().map(|m| m.in_flight()).sum()
    }

    /// Sends a notification (e.g. `notifications/cancelled`) if connected.
    pub async fn notify(&self, bytes: Vec<u8>) {
        if let Some(c) = self.connection() {
            c.send_message(bytes).await;
        }
    }

    /// Makes the upstream's status and lists of its members': a pool of one
    /// is its member; a pool is ready while any member is, its lists and
    /// facts are its holder's, and members that publish other lists are
    /// marked (see `pool`). `changed`: the member that just changed.
    fn recompute(&self, changed: Option<&Member>) {
        let _one_at_a_time = self.inner.recomputing.lock();
        let pool = &self.inner.pool;
        let holder = pool.elect(&self.inner.watched.borrow());
        let members = &pool.members;
        let lists = holder.and_then(|i| members[i].lists.read().clone());
        pool.check_agreement(lists.as_deref(), &self.inner.name);
        *self.inner.lists.write() = lists;
        let connections: u64 = members.iter().map(|m| m.connections.load(Relaxed)).sum();
        let holder = holder.map(|i| Holder {
            member: i,
            connection: members[i].connections.load(Relaxed),
        });
        let next = if let [only] = &members[..] {
            UpstreamStatus {
                holder,
                connections,
                ..only.status.borrow().clone()
            }
        } else {
            let all: Vec<UpstreamStatus> =
                members.iter().map(|m| m.status.borrow().clone()).collect();
            let any = |s: State| all.iter().any(|m| m.state == s);
            let state = if any(State::Ready) {
                State::Ready
            } else if all.iter().all(|m| m.state == State::Stopped) {
                State::Stopped
            } else if any(State::Starting) {
                State::Starting
            } else if any(State::NeedsLogin) {
                State::NeedsLogin
            } else {
                State::Down
            };
            let lead = holder.map(|h| &all[h.member]);
            let last_error = (state != State::Ready)
                .then(|| {
                    all.iter().enumerate().find_map(|(i, m)| {
                        m.last_error.as_ref().map(|e| format!("member {i}: {e}"))
                    })
                })
                .flatten();
            let prev = self.inner.status.borrow().last_exit_code;
            UpstreamStatus {
                state,
                last_error,
                restarts: all.iter().map(|m| m.restarts).sum(),
                last_exit_code: changed
                    .and_then(|m| m.status.borrow().last_exit_code)
                    .or(prev),
                facts: lead
                    .and_then(|m| m.facts.clone())
                    .or_else(|| all.iter().find_map(|m| m.facts.clone())),
                list_ttl: lead.and_then(|m| m.list_ttl),
                holder,
                connections,
            }
        };
        self.inner.status.send_replace(next);
    }

    /// [`recompute`](Self::recompute), then tells the gateway.
    async fn publish(&self, changed: &Member, gateway: &mpsc::Sender<UpstreamEvent>) {
        self.recompute(Some(changed));
        let _ = gateway
            .send(UpstreamEvent::Changed {
                upstream: self.inner.name.clone(),
            })
            .await;
    }

    /// The actor: connect, serve, restart with backoff, until shutdown.
    async fn run(
        self,
        m: Arc<Member>,
        gateway: mpsc::Sender<UpstreamEvent>,
        shutdown: CancellationToken,
    ) {
        let name = self.inner.name.clone();
        let mut backoff = Backoff::new(crate::limits::BACKOFF_INITIAL, crate::limits::BACKOFF_MAX);
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            m.status.send_modify(|s| s.state = State::Starting);
            self.recompute(Some(&m));
            let (refresh_tx, refresh_rx) = mpsc::channel::<()>(1);
            *m.refresh.lock() = Some(refresh_tx.clone());
            let started = Instant::now();
            match self.connect(&m, &gateway, refresh_tx, &shutdown).await {
                Ok(connected) => {
                    let stopping = self
                        .serve(&m, connected, refresh_rx, &gateway, &shutdown)
                        .await;
                    if stopping {
                        break;
                    }
                    if started.elapsed() >= crate::limits::BACKOFF_RESET_AFTER {
                        backoff.reset();
                    }
                }
                Err((e, exit)) => {
                    tracing::warn!(upstream = %name, member = m.index, error = %e, retry_in = ?backoff.current(), "upstream failed to start");
                    m.status.send_modify(|s| {
                        s.state = if e.is_needs_login() {
                            State::NeedsLogin
                        } else {
                            State::Down
                        };
                        s.last_error = Some(e.to_string());
                        s.last_exit_code = exit.or(s.last_exit_code);
                    });
                    self.publish(&m, &gateway).await;
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(backoff.next_pause()) => {}
            }
            m.status.send_modify(|s| s.restarts += 1);
        }
        m.status.send_modify(|s| s.state = State::Stopped);
        self.recompute(Some(&m));
    }

    /// Publishes a ready connection and keeps its lists fresh (on `list_changed`,
    /// or when a 2026-07-28 upstream's `ttlMs` runs out) until it dies or the gateway
    /// stops; then fails its calls and reports it. True when stopping.
    async fn serve(
        &self,
        m: &Member,
        (conn, facts, lists, ttl): Connected,
        mut refresh: mpsc::Receiver<()>,
        gateway: &mpsc::Sender<UpstreamEvent>,
        shutdown: &CancellationToken,
    ) -> bool {
        let name = self.inner.name.clone();
        tracing::info!(upstream = %name, member = m.index, protocol = %facts.protocol_version,
            tools = lists.tools.len(), prompts = lists.prompts.len(), "upstream ready");
        m.connections.fetch_add(1, Relaxed);
        m.slot.set(Some(conn.clone()));
        self.inner.pool.published();
        *m.lists.write() = Some(Arc::new(lists));
        m.status.send_modify(|s| {
            s.state = State::Ready;
            s.last_error = None;
            s.facts = Some(facts.clone());
            s.list_ttl = ttl;
        });
        self.publish(m, gateway).await;
        // A 2026-07-28 upstream's lists expire after their `ttlMs`.
        let mut expiry = ttl.map(|t| Instant::now() + t);
        let ping_every = self.inner.config.ping_interval;
        let mut next_ping = ping_every.map(|d| Instant::now() + d);
        let mut unanswered = 0;
        let mut last_fetch = Instant::now();
        let stopping = loop {
            let expired = until(expiry);
            let ping_due = until(next_ping);
            tokio::select! {
                biased;
                _ = shutdown.cancelled() => break true,
                _ = conn.wire.closed.cancelled() => break false,
                _ = ping_due => {
                    next_ping = ping_every.map(|d| Instant::now() + d);
                    let Some(alive) = or_closed(&conn, alive(&conn, &facts)).await else {
                        break false;
                    };
                    if alive {
                        unanswered = 0;
                    } else {
                        unanswered += 1;
                        if unanswered >= crate::limits::LIVENESS_FAILURES {
                            tracing::warn!(upstream = %name, member = m.index, pings = unanswered,
                                "the upstream answers no pings; restarting it");
                            conn.wire.closed.cancel();
                        }
                    }
                    continue;
                }
                Some(()) = refresh.recv() => {}
                _ = expired => {}
            }
            // At most one refetch per window; the changes that come meanwhile are
            // in the one that follows.
            let wait = (last_fetch + crate::limits::LIST_CHANGED_DEBOUNCE)
                .saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                tokio::select! {
                    _ = shutdown.cancelled() => break true,
                    _ = conn.wire.closed.cancelled() => break false,
                    _ = tokio::time::sleep(wait) => {}
                }
                while refresh.try_recv().is_ok() {}
            }
            last_fetch = Instant::now();
            let Some(fetched) = or_closed(&conn, handshake::fetch_lists(&conn, &facts)).await
            else {
                break false;
            };
            match fetched {
                Ok((lists, ttl)) => {
                    expiry = ttl.map(|t| Instant::now() + t);
                    let ttl_changed = m.status.send_if_modified(|s| {
                        let changed = s.list_ttl != ttl;
                        s.list_ttl = ttl;
                        changed
                    });
                    let same = m.lists.read().as_deref().is_some_and(|cur| *cur == lists);
                    if !same {
                        *m.lists.write() = Some(Arc::new(lists));
                        if or_closed(&conn, self.publish(m, gateway)).await.is_none() {
                            break false;
                        }
                    } else if ttl_changed {
                        self.recompute(Some(m));
                    }
                }
                Err(e) => {
                    // Retried when the next change or expiry comes.
                    expiry = expiry.map(|_| {
                        Instant::now() + crate::limits::MIN_LIST_TTL.max(Duration::from_secs(5))
                    });
                    tracing::warn!(upstream = %name, member = m.index, error = %e, "refetching lists failed; keeping the previous ones");
                }
            }
        };
        m.slot.set(None);
        *m.lists.write() = None;
        // Another member holds what this one held, at once.
        self.recompute(Some(m));
        if stopping {
            conn.shutdown().await;
            conn.wire.router.fail_all(&UpstreamError::unavailable(
                &name,
                "the gateway is shutting down",
            ));
            return true;
        }
        // Said at once — calls fail, the state leaves ready, the restart is
        // scheduled — and only then is what is left of the connection stopped
        // (a child that closed its stdout but lives on takes its grace periods).
        let ended = conn.ended(false).await;
        // Sent, and the upstream went away before answering: a call that may
        // be repeated is sent again to the restarted one.
        conn.wire
            .router
            .fail_all(&UpstreamError::transient(&name, ended.reason.clone(), true));
        tracing::warn!(upstream = %name, member = m.index, reason = %ended.reason, "upstream went down; restarting");
        m.status.send_modify(|s| {
            s.state = State::Down;
            s.last_error = Some(ended.reason);
            s.last_exit_code = ended.exit_code.or(s.last_exit_code);
        });
        self.publish(m, gateway).await;
        conn.shutdown().await;
        false
    }

    /// Opens a connection and sets it up: era, handshake, lists.
    async fn connect(
        &self,
        m: &Member,
        gateway: &mpsc::Sender<UpstreamEvent>,
        refresh: mpsc::Sender<()>,
        shutdown: &CancellationToken,
    ) -> Result<Connected, (UpstreamError, Option<i32>)> {
        let cfg = &m.config;
        let router = Router::new(
            self.inner.name.clone(),
            self.inner.limits.max_pending_per_upstream,
            gateway.clone(),
            refresh,
        );
        let conn = Connection::open(
            cfg,
            &self.inner.limits,
            router,
            CancellationToken::new(),
            self.inner.tokens.clone(),
        )
        .await
        .map_err(|e| (e, None))?;
        // A 404 for the upstream session (HTTP) starts a new one with `initialize`.
        let (weak, name) = (Arc::downgrade(&conn), self.inner.name.clone());
        conn.wire.set_reinit(Box::new(move || {
            let (weak, name) = (weak.clone(), name.clone());
            Box::pin(async move {
                match weak.upgrade() {
                    Some(conn) => handshake::initialize(&conn).await.map(|_| ()),
                    None => Err(UpstreamError::unavailable(
                        &name,
                        "the connection is closed",
                    )),
                }
            })
        }));
        let setup = async {
            let facts = handshake::establish(&conn, cfg.protocol).await?;
            if facts.is_stateless() {
                // Listen, then fetch: a change between the two is heard. Only
                // the holder's listen asks for resource updates (see `pool`).
                self.inner.pool.claim(m.index, &self.inner.watched.borrow());
                let acked = listen::start(&conn, &facts, m.watched.subscribe());
                let wait = crate::limits::LISTEN_ACK_WAIT.min(conn.wire.timeout);
                if tokio::time::timeout(wait, acked).await.is_err() {
                    tracing::debug!(upstream = %self.inner.name, member = m.index, ?wait,
                        "subscriptions/listen not acknowledged in time; fetching the lists now (again once it is)");
                }
            }
            let (lists, ttl) = handshake::fetch_lists(&conn, &facts).await?;
            Ok::<_, UpstreamError>((facts, lists, ttl))
        };
        let setup = async {
            tokio::select! {
                r = setup => r,
                _ = shutdown.cancelled() => Err(UpstreamError::unavailable(&self.inner.name, "the gateway is shutting down")),
                // A child that exits (or a link that fails) during the handshake
                // fails it now, not when the handshake's timeout runs out.
                _ = conn.wire.closed.cancelled() => Err(UpstreamError::unavailable(
                    &self.inner.name,
                    "the connection closed during the handshake",
                )),
            }
        };
        match setup.await {
            Ok((facts, lists, ttl)) => Ok((conn, facts, lists, ttl)),
            Err(e) => {
                let ended = conn.ended(true).await;
                let e = match &e {
                    UpstreamError::Unavailable { .. } | UpstreamError::Transient { .. }
                        if ended.exit_code.is_some() =>
                    {
                        UpstreamError::unavailable(&self.inner.name, ended.reason)
                    }
                    _ => e,
                };
                conn.shutdown().await;
                Err((e, ended.exit_code))
            }
        }
    }
}

/// `fut`'s output, or `None` once `conn` has ended: the actor never waits on
/// a connection that is gone.
async fn or_closed<T>(conn: &Connection, fut: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        biased;
        _ = conn.wire.closed.cancelled() => None,
        out = fut => Some(out),
    }
}

/// Sleeps until `at`, or for ever without one.
async fn until(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Whether the upstream answers a liveness ping within its `timeout`: `ping` in
/// the session era, `server/discover` in 2026-07-28 (which has no ping). Any
/// answer counts, an error too: it is alive.
async fn alive(conn: &Arc<Connection>, facts: &ServerFacts) -> bool {
    use manifold_protocol::methods as m;
    let (method, params) = if facts.is_stateless() {
        let meta = crate::wire::request_meta(&facts.protocol_version, None);
        let mut p = Map::new();
        p.insert("_meta".into(), Value::Object(meta));
        (m::SERVER_DISCOVER, Some(p))
    } else {
        (m::PING, None)
    };
    let headers = vec![(m::HEADER_METHOD.to_string(), method.to_string())];
    match Call::start(conn, method, params, headers, conn.wire.timeout, None).await {
        Ok(mut call) => !matches!(call.outcome().await, crate::message::CallOutcome::Failed(_)),
        Err(_) => false,
    }
}
