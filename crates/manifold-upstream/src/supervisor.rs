//! The per-upstream actor: connect, handshake, fetch lists, serve until the
//! connection dies, restart with capped exponential backoff. Also the live
//! [`Session`] that calls go through.

use manifold_config::{LimitsConfig, Transport, UpstreamConfig};
use manifold_protocol::lists::ListSnapshot;
use serde_json::{Map, Value};
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::call::Call;
use crate::router::Router;
use crate::{handshake, http, stdio};
use crate::{ExtraHeaders, ServerFacts, UpstreamError, UpstreamEvent};

/// The state an upstream is in, as `/readyz` and `manifold check` report it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Starting,
    Ready,
    Down,
    Stopped,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Starting => "starting",
            State::Ready => "ready",
            State::Down => "down",
            State::Stopped => "stopped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct UpstreamStatus {
    pub state: State,
    pub last_error: Option<String>,
    pub restarts: u64,
    pub last_exit_code: Option<i32>,
    pub facts: Option<ServerFacts>,
    /// How long the current lists are kept before a refetch: a modern upstream's
    /// shortest list `ttlMs` (at least `MIN_LIST_TTL`). `None`: until a
    /// `list_changed` (legacy upstreams, and modern ones that gave no `ttlMs`).
    pub list_ttl: Option<Duration>,
}

pub(crate) enum Link {
    Stdio(stdio::StdioLink),
    Http(Box<http::HttpLink>),
}

/// One request sent upstream: its id and where its answer arrives.
pub(crate) struct Exchange {
    pub id: u64,
    pub events: mpsc::Receiver<crate::CallEvent>,
    pub done: tokio::sync::oneshot::Receiver<crate::CallOutcome>,
    pub driver: Option<crate::call::Driver>,
}

/// A live connection to an upstream.
pub(crate) struct Session {
    pub(crate) router: Router,
    pub(crate) link: Link,
    /// Fires when the connection is gone (child exited, transport failed) or the
    /// gateway shuts down; every task of the session ends with it.
    pub(crate) closed: CancellationToken,
    pub(crate) tasks: TaskTracker,
    pub(crate) timeout: Duration,
    pub(crate) protocol_version: std::sync::OnceLock<String>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("upstream", &self.router.upstream)
            .finish()
    }
}

impl Session {
    pub(crate) fn spawn_owned<F>(self: Arc<Self>, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let closed = self.closed.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = closed.cancelled() => {}
                _ = fut => {}
            }
        });
    }

    /// Sends a notification or response upstream. Failures end the session.
    pub(crate) async fn send_message(&self, bytes: Vec<u8>) {
        let res = match &self.link {
            Link::Stdio(l) => l.send(bytes).await,
            Link::Http(l) => l.send_message(self, bytes).await,
        };
        if let Err(e) = res {
            tracing::warn!(upstream = %self.router.upstream, error = %e, "sending to the upstream failed");
        }
    }

    pub(crate) async fn send_cancelled(&self, id: u64, reason: &str) {
        if self.is_modern() && matches!(self.link, Link::Http(_)) {
            // 2026-07-28 HTTP has no client notifications: the caller closes the
            // response stream instead (dropping the exchange does).
            return;
        }
        let msg = serde_json::json!({
            "jsonrpc": "2.0",
            "method": manifold_protocol::methods::NOTIF_CANCELLED,
            "params": {"requestId": id, "reason": reason},
        });
        self.send_message(msg.to_string().into_bytes()).await;
    }

    /// Whether this session speaks the stateless era (decided by the probe).
    pub(crate) fn is_modern(&self) -> bool {
        self.protocol_version
            .get()
            .is_some_and(|v| manifold_protocol::version::is_supported_modern(v))
    }

    /// Starts a request. `params` is forwarded as given, except the progress token
    /// and, for a modern upstream, the `_meta` that describes `caller`.
    pub(crate) async fn start_call(
        self: &Arc<Self>,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
        timeout: Duration,
        caller: Option<&crate::Caller>,
    ) -> Result<Call, UpstreamError> {
        let bridge = match caller {
            Some(c) if c.bridge_input && self.is_modern() && crate::bridge::applies(method) => {
                Some(Box::new(crate::bridge::Bridge::new(
                    method,
                    params.clone().unwrap_or_default(),
                    headers.clone(),
                    c.clone(),
                )))
            }
            _ => None,
        };
        let ex = self
            .launch(method, params, headers, timeout, caller)
            .await?;
        Ok(Call {
            bridge,
            driver: ex.driver,
            id: ex.id,
            session: self.clone(),
            events: ex.events,
            done: ex.done,
            deadline: Instant::now() + timeout,
            timeout,
            finished: false,
        })
    }

    /// Sends one request upstream (one exchange of a call).
    pub(crate) async fn launch(
        self: &Arc<Self>,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
        timeout: Duration,
        caller: Option<&crate::Caller>,
    ) -> Result<Exchange, UpstreamError> {
        if self.closed.is_cancelled() {
            return Err(UpstreamError::unavailable(
                &self.router.upstream,
                "the connection is closed",
            ));
        }
        let mut msg = Map::new();
        msg.insert("jsonrpc".into(), Value::from("2.0"));
        msg.insert("id".into(), Value::Null);
        msg.insert("method".into(), Value::from(method));
        let mut params = params;
        if let Some(version) = self.protocol_version.get().filter(|_| self.is_modern()) {
            // The upstream keeps no state: every request says who asks and how.
            let p = params.get_or_insert_with(Map::new);
            let meta = p
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            if let Value::Object(meta) = meta {
                for (k, v) in handshake::request_meta(version, caller) {
                    meta.insert(k, v);
                }
            }
        }
        if let Some(p) = params {
            msg.insert("params".into(), Value::Object(p));
        }
        let reg = self.router.register(&mut msg)?;
        let bytes = serde_json::to_vec(&msg).unwrap_or_default();
        let mut driver = None;
        match &self.link {
            Link::Stdio(l) => {
                if l.send(bytes).await.is_err() {
                    self.router.forget(reg.id);
                    return Err(UpstreamError::unavailable(
                        &self.router.upstream,
                        "the child process is not running",
                    ));
                }
            }
            Link::Http(_) => {
                driver = Some(Box::pin(http::drive_call(
                    self.clone(),
                    reg.id,
                    method.to_string(),
                    bytes,
                    headers,
                    timeout,
                )) as crate::call::Driver)
            }
        }
        Ok(Exchange {
            id: reg.id,
            events: reg.events,
            done: reg.done,
            driver,
        })
    }

    /// Sends a request and waits for its result (handshake and list fetching).
    pub(crate) async fn request(
        self: &Arc<Self>,
        method: &str,
        params: Option<Map<String, Value>>,
    ) -> Result<Value, UpstreamError> {
        let mut call = self
            .start_call(
                method,
                params,
                vec![(
                    manifold_protocol::methods::HEADER_METHOD.into(),
                    method.into(),
                )],
                self.timeout,
                None,
            )
            .await?;
        loop {
            match call.next().await {
                crate::CallEvent::Done(crate::CallOutcome::Result(raw)) => {
                    return serde_json::from_str(raw.get()).map_err(|e| {
                        UpstreamError::protocol(
                            &self.router.upstream,
                            format!("{method} result is not JSON: {e}"),
                        )
                    })
                }
                crate::CallEvent::Done(crate::CallOutcome::Error(raw)) => {
                    return Err(UpstreamError::protocol(
                        &self.router.upstream,
                        format!("{method} failed: {}", raw.get()),
                    ))
                }
                crate::CallEvent::Done(crate::CallOutcome::Failed(e)) => return Err(e),
                crate::CallEvent::Request {
                    responder, method, ..
                } => {
                    responder
                        .refuse(-32601, &format!("{method} is not available during setup"))
                        .await;
                }
                crate::CallEvent::Notification(_) => {}
            }
        }
    }

    async fn shutdown(&self) {
        match &self.link {
            Link::Stdio(l) => l.shutdown().await,
            Link::Http(l) => l.shutdown(self).await,
        }
        self.closed.cancel();
        self.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.tasks.wait()).await;
    }
}

/// A connected session, what it said about itself, its lists and their lifetime.
type Connected = (Arc<Session>, ServerFacts, ListSnapshot, Option<Duration>);

struct Inner {
    config: UpstreamConfig,
    limits: LimitsConfig,
    name: Arc<str>,
    session: RwLock<Option<Arc<Session>>>,
    lists: RwLock<Option<Arc<ListSnapshot>>>,
    status: watch::Sender<UpstreamStatus>,
    /// Resource URIs whose updates clients want (modern upstreams: the listen's
    /// `resourceSubscriptions`).
    watched: watch::Sender<std::collections::BTreeSet<String>>,
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
        let (status, _) = watch::channel(UpstreamStatus {
            state: State::Starting,
            last_error: None,
            restarts: 0,
            last_exit_code: None,
            facts: None,
            list_ttl: None,
        });
        let inner = Arc::new(Inner {
            name: Arc::from(config.name.as_str()),
            config,
            limits,
            session: RwLock::new(None),
            lists: RwLock::new(None),
            status,
            watched: watch::channel(Default::default()).0,
        });
        let up = Upstream { inner };
        let actor = up.clone();
        tracker.spawn(async move { actor.run(gateway, shutdown).await });
        up
    }

    pub fn name(&self) -> &Arc<str> {
        &self.inner.name
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
        self.inner
            .lists
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
    fn session(&self) -> Option<Arc<Session>> {
        self.inner
            .session
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
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

    /// Forwards a client's request, made on behalf of `caller`.
    pub async fn call_as(
        &self,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
        caller: Option<&crate::Caller>,
    ) -> Result<Call, UpstreamError> {
        let Some(session) = self.session() else {
            let st = self.status();
            let reason = st
                .last_error
                .unwrap_or_else(|| format!("it is {}", st.state.as_str()));
            return Err(UpstreamError::unavailable(&self.inner.name, reason));
        };
        session
            .start_call(method, params, headers, self.inner.config.timeout, caller)
            .await
    }

    /// Whether the live connection speaks the stateless era.
    pub fn is_modern(&self) -> bool {
        self.session().is_some_and(|s| s.is_modern())
    }

    /// Asks for (`on`) or drops a resource's update notifications from a modern
    /// upstream: they arrive on its `subscriptions/listen` stream, which is
    /// reopened with the new set. Legacy upstreams use `resources/subscribe`.
    pub fn watch_resource(&self, uri: &str, on: bool) {
        self.inner.watched.send_if_modified(|set| {
            if on {
                set.insert(uri.to_string())
            } else {
                set.remove(uri)
            }
        });
    }

    /// Requests in flight to this upstream.
    pub fn in_flight(&self) -> usize {
        self.session().map(|s| s.router.in_flight()).unwrap_or(0)
    }

    /// Sends a notification (e.g. `notifications/cancelled`) if connected.
    pub async fn notify(&self, bytes: Vec<u8>) {
        if let Some(s) = self.session() {
            s.send_message(bytes).await;
        }
    }

    fn set_status(&self, f: impl FnOnce(&mut UpstreamStatus)) {
        self.inner.status.send_modify(f);
    }

    async fn run(self, gateway: mpsc::Sender<UpstreamEvent>, shutdown: CancellationToken) {
        let name = self.inner.name.clone();
        let mut backoff = crate::BACKOFF_INITIAL;
        loop {
            if shutdown.is_cancelled() {
                break;
            }
            self.set_status(|s| s.state = State::Starting);
            let (refresh_tx, mut refresh_rx) = mpsc::channel::<()>(1);
            let started = Instant::now();
            match self.connect(&gateway, refresh_tx, &shutdown).await {
                Ok((session, facts, lists, ttl)) => {
                    tracing::info!(upstream = %name, protocol = %facts.protocol_version,
                        tools = lists.tools.len(), prompts = lists.prompts.len(), "upstream ready");
                    *self
                        .inner
                        .session
                        .write()
                        .unwrap_or_else(|p| p.into_inner()) = Some(session.clone());
                    *self.inner.lists.write().unwrap_or_else(|p| p.into_inner()) =
                        Some(Arc::new(lists));
                    self.set_status(|s| {
                        s.state = State::Ready;
                        s.last_error = None;
                        s.facts = Some(facts.clone());
                        s.list_ttl = ttl;
                    });
                    let _ = gateway
                        .send(UpstreamEvent::Changed {
                            upstream: name.clone(),
                        })
                        .await;
                    if facts.is_modern() {
                        crate::listen::start(&session, &facts, self.inner.watched.subscribe());
                    }
                    // A modern upstream's lists expire after their `ttlMs`.
                    let mut expiry = ttl.map(|t| Instant::now() + t);
                    let stopping = loop {
                        let expired = async {
                            match expiry {
                                Some(at) => tokio::time::sleep_until(at).await,
                                None => std::future::pending().await,
                            }
                        };
                        tokio::select! {
                            biased;
                            _ = shutdown.cancelled() => break true,
                            _ = session.closed.cancelled() => break false,
                            Some(()) = refresh_rx.recv() => {}
                            _ = expired => {}
                        }
                        match handshake::fetch_lists(&session, &facts).await {
                            Ok((lists, ttl)) => {
                                expiry = ttl.map(|t| Instant::now() + t);
                                self.inner.status.send_if_modified(|s| {
                                    let changed = s.list_ttl != ttl;
                                    s.list_ttl = ttl;
                                    changed
                                });
                                let same = self.lists().is_some_and(|cur| *cur == lists);
                                if !same {
                                    *self.inner.lists.write().unwrap_or_else(|p| p.into_inner()) =
                                        Some(Arc::new(lists));
                                    let _ = gateway
                                        .send(UpstreamEvent::Changed {
                                            upstream: name.clone(),
                                        })
                                        .await;
                                }
                            }
                            Err(e) => {
                                // Retried when the next change or expiry comes.
                                expiry = expiry.map(|_| {
                                    Instant::now() + crate::MIN_LIST_TTL.max(Duration::from_secs(5))
                                });
                                tracing::warn!(upstream = %name, error = %e, "refetching lists failed; keeping the previous ones");
                            }
                        }
                    };
                    *self
                        .inner
                        .session
                        .write()
                        .unwrap_or_else(|p| p.into_inner()) = None;
                    *self.inner.lists.write().unwrap_or_else(|p| p.into_inner()) = None;
                    if stopping {
                        session.shutdown().await;
                        session.router.fail_all(&UpstreamError::unavailable(
                            &name,
                            "the gateway is shutting down",
                        ));
                        break;
                    }
                    let reason = match &session.link {
                        Link::Stdio(l) => l.exit_description(),
                        Link::Http(_) => "the connection failed".to_string(),
                    };
                    let exit = match &session.link {
                        Link::Stdio(l) => l.exit_code(),
                        Link::Http(_) => None,
                    };
                    session.shutdown().await;
                    session
                        .router
                        .fail_all(&UpstreamError::unavailable(&name, reason.clone()));
                    tracing::warn!(upstream = %name, reason = %reason, "upstream went down; restarting");
                    self.set_status(|s| {
                        s.state = State::Down;
                        s.last_error = Some(reason);
                        s.last_exit_code = exit.or(s.last_exit_code);
                    });
                    let _ = gateway
                        .send(UpstreamEvent::Changed {
                            upstream: name.clone(),
                        })
                        .await;
                    if started.elapsed() >= crate::BACKOFF_RESET_AFTER {
                        backoff = crate::BACKOFF_INITIAL;
                    }
                }
                Err((e, exit)) => {
                    tracing::warn!(upstream = %name, error = %e, retry_in = ?backoff, "upstream failed to start");
                    self.set_status(|s| {
                        s.state = State::Down;
                        s.last_error = Some(e.to_string());
                        s.last_exit_code = exit.or(s.last_exit_code);
                    });
                    let _ = gateway
                        .send(UpstreamEvent::Changed {
                            upstream: name.clone(),
                        })
                        .await;
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => break,
                _ = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(crate::BACKOFF_MAX);
            self.set_status(|s| s.restarts += 1);
        }
        self.set_status(|s| s.state = State::Stopped);
    }

    async fn connect(
        &self,
        gateway: &mpsc::Sender<UpstreamEvent>,
        refresh: mpsc::Sender<()>,
        shutdown: &CancellationToken,
    ) -> Result<Connected, (UpstreamError, Option<i32>)> {
        let cfg = &self.inner.config;
        let router = Router::new(
            self.inner.name.clone(),
            self.inner.limits.max_pending_per_upstream,
            gateway.clone(),
            refresh,
        );
        // Not a child of `shutdown`: on shutdown the supervisor stops the session in
        // order (stdin closed while stdout is still read, then signals), and only
        // then cancels this token.
        let closed = CancellationToken::new();
        let session = match &cfg.transport {
            Transport::Stdio { .. } => {
                stdio::connect(cfg, &self.inner.limits, router, closed).await
            }
            Transport::Http { .. } => http::connect(cfg, &self.inner.limits, router, closed),
        }
        .map_err(|e| (e, None))?;
        let setup = async {
            let facts = handshake::establish(&session, cfg.protocol).await?;
            let (lists, ttl) = handshake::fetch_lists(&session, &facts).await?;
            Ok::<_, UpstreamError>((facts, lists, ttl))
        };
        let setup = async {
            tokio::select! {
                r = setup => r,
                _ = shutdown.cancelled() => Err(UpstreamError::unavailable(&self.inner.name, "the gateway is shutting down")),
                // A child that exits (or a link that fails) during the handshake
                // fails it now, not when the handshake's timeout runs out.
                _ = session.closed.cancelled() => Err(UpstreamError::unavailable(
                    &self.inner.name,
                    "the connection closed during the handshake",
                )),
            }
        };
        match setup.await {
            Ok((facts, lists, ttl)) => Ok((session, facts, lists, ttl)),
            Err(e) => {
                let exit = match &session.link {
                    Link::Stdio(l) => {
                        // Give a crashing child a moment to be reaped so its exit
                        // code and stderr explain the failure.
                        let _ = tokio::time::timeout(
                            Duration::from_millis(200),
                            session.closed.cancelled(),
                        )
                        .await;
                        l.exit_code()
                    }
                    Link::Http(_) => None,
                };
                let e = match (&e, &session.link) {
                    (UpstreamError::Unavailable { .. }, Link::Stdio(l)) if exit.is_some() => {
                        UpstreamError::unavailable(&self.inner.name, l.exit_description())
                    }
                    _ => e,
                };
                session.shutdown().await;
                Err((e, exit))
            }
        }
    }
}
