//! Starting and running the gateway: the audit writer, every upstream's actor, the
//! catalog maintainer (rebuilds the merged view when an upstream changes and
//! tells clients), the idle-session sweep, and serving the front doors until
//! shutdown — which runs in order:
//!
//! 1. the caller's token fires (SIGTERM, SIGINT): readiness goes false, the
//!    listener stops accepting, open connections finish their requests;
//! 2. when nothing is in flight any more, or `server.shutdown_grace` has passed,
//!    `stop` fires: upstreams stop, relays and held calls are cancelled (and
//!    audited as cancelled);
//! 3. once every other task has ended (bounded by [`SHUTDOWN_WAIT`]), the audit
//!    writer drains its queue and closes: every answered call has its record.
//!
//! Invariants: every task spawned here is tracked and ends by `stop`; every wait
//! of the shutdown is bounded, so a stuck task cannot keep the process alive; a
//! burst of upstream changes is coalesced into one rebuild.
//!
//! Not here: requests (the front doors and the pipeline).

mod reload;
mod upstreams;
pub use reload::{ReloadError, ReloadReport, WATCH_INTERVAL};

use manifold_config::GatewayConfig;
use manifold_upstream::{Holder, Upstream, UpstreamEvent};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::front;
use crate::state::generation::Generation;
use crate::state::integrity::keeper::Pins;
use crate::state::local_admin::{self, LocalAdmin, LocalAdminError};
use crate::state::Live;
use crate::state::{
    cluster, held_calls, integrity, learned, listeners, log_levels, metrics, sealed, sessions,
};
use crate::state::{Gateway, SessionEnd};

/// Capacity of the channel upstreams report changes on.
pub const UPSTREAM_EVENT_QUEUE: usize = 1024;
/// How often idle sessions are swept.
pub const SESSION_SWEEP_INTERVAL: Duration = Duration::from_secs(30);
/// How long `serve` waits, after `stop`, for tracked tasks and then for the audit
/// writer's last flush.
pub const SHUTDOWN_WAIT: Duration = Duration::from_secs(10);
/// How often the drain checks whether calls are still in flight.
const DRAIN_POLL: Duration = Duration::from_millis(50);
/// Requests refused at authentication (with credentials) logged per 10 s
/// window; the rest are counted in the next line logged.
pub const AUTH_REFUSALS_LOGGED_PER_WINDOW: u32 = 20;
/// Results that break their tool's `outputSchema` (`[validation] output =
/// "warn"`) logged per 10 s window; the rest are counted in the next line.
pub const OUTPUT_MISMATCHES_LOGGED_PER_WINDOW: u32 = 20;

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the audit log cannot start: {0}")]
    Audit(#[from] manifold_audit::AuditError),
    #[error("{0}")]
    Tls(String),
    /// `[cluster]`'s bus cannot be set up (a Redis URL or CA file the client
    /// refuses); the message never quotes the URL.
    #[error("[cluster]: {0}")]
    Cluster(String),
    /// `[integrity] store` cannot be read (a damaged file is never taken
    /// for an empty store).
    #[error("[integrity] {0}")]
    Pins(String),
    /// `[discovery.semantic]`: the model cannot be loaded, or its vector
    /// cache cannot be opened.
    #[error("[discovery.semantic] {0}")]
    Semantic(String),
}

/// `[discovery.semantic]`'s model loaded (off the async workers: it reads and
/// hashes the weights), or `None` without the section.
async fn load_semantic(
    config: &GatewayConfig,
) -> Result<Option<Arc<crate::state::semantic::Semantic>>, StartError> {
    let Some(s) = config.semantic.clone() else {
        return Ok(None);
    };
    let loaded = tokio::task::spawn_blocking(move || crate::state::semantic::Semantic::load(&s))
        .await
        .map_err(|e| StartError::Semantic(e.to_string()))?
        .map_err(StartError::Semantic)?;
    Ok(Some(Arc::new(loaded)))
}

impl Gateway {
    /// For a gateway made by [`Gateway::start`] (the one-shot commands):
    /// loads `[discovery.semantic]`'s model so searches are hybrid as in
    /// `serve` (`manifold search`). Nothing without the section or once loaded.
    pub async fn enable_semantic(&self) -> Result<(), StartError> {
        if self.semantic.get().is_some() {
            return Ok(());
        }
        if let Some(s) = load_semantic(&self.config()).await? {
            let _ = self.semantic.set(s);
        }
        Ok(())
    }

    /// Searches ranked lexically because `[discovery.semantic]` could not run
    /// (`manifold_search_semantic_fallbacks`); `None` without the section.
    pub fn semantic_fallbacks(&self) -> Option<u64> {
        self.semantic.get().map(|s| s.fallbacks())
    }

    /// Starts the gateway as `manifold serve` runs it: the audit writer (when
    /// configured), every upstream, and the catalog maintainer. Invalid audit
    /// settings are an error; a sink that cannot open yet is not (calls then fail
    /// or count lost records, per `on_failure`, until it recovers).
    pub async fn launch(
        config: GatewayConfig,
        shutdown: CancellationToken,
    ) -> Result<Arc<Gateway>, StartError> {
        Gateway::launch_exporting(config, None, shutdown).await
    }

    /// [`Gateway::launch`], with a copy of every audit line going to `export`
    /// (`[audit] otlp`: the binary's OTLP log exporter).
    pub async fn launch_exporting(
        config: GatewayConfig,
        export: Option<Arc<dyn manifold_audit::Export>>,
        shutdown: CancellationToken,
    ) -> Result<Arc<Gateway>, StartError> {
        // The audit writer outlives everything that can write a record.
        let audit_stop = CancellationToken::new();
        let audit = match config.audit.as_ref() {
            Some(s) => {
                let export = export.filter(|_| s.otlp);
                Some(
                    manifold_audit::Auditor::start_exporting(s.clone(), export, audit_stop.clone())
                        .await?,
                )
            }
            None => None,
        };
        let (auditor, task) = match audit {
            Some((a, t)) => (Some(a), Some(t)),
            None => (None, None),
        };
        // The certificate is checked before anything starts: a bad one stops here.
        if let Some(t) = &config.server.tls {
            front::tls::Tls::new(t).map_err(StartError::Tls)?;
        }
        // So is the bus's URL and CA: relays silently off would be found only
        // by a client whose answer got lost.
        let cluster = match &config.cluster {
            Some(c) => cluster::Cluster::new(c).map_err(StartError::Cluster)?,
            None => None,
        };
        let settings = config.integrity.clone();
        let pins = tokio::task::spawn_blocking(move || Pins::open(&settings))
            .await
            .map_err(|e| StartError::Pins(format!("the pin store could not be opened: {e}")))?
            .map_err(|e| StartError::Pins(e.to_string()))?;
        let (store, watch) = (pins.store, pins.watch);
        // The model is loaded (and its weights hashed) before anything serves.
        let semantic = load_semantic(&config).await?;
        let gw = Gateway::build(
            config,
            shutdown,
            audit_stop,
            auditor,
            task,
            cluster,
            Pins { store, watch: None },
        );
        if let Some(watch) = watch {
            gw.start_keeper(watch);
        }
        if let Some(s) = semantic {
            let _ = gw.semantic.set(s);
        }
        // The issuers' keys are fetched before the first request is served.
        let live = gw.live();
        if let Some(auth) = live.auth.clone() {
            auth.start(&gw.life.background, &live.auth_stop).await;
        }
        Ok(gw)
    }

    /// Starts every upstream (in parallel) and the catalog maintainer, without the
    /// audit writer: for the commands that inspect the catalog or call one tool
    /// (`manifold check`, `tools`, `call`). Returns at once; use
    /// [`Gateway::wait_ready`] to give upstreams a bounded head start.
    pub fn start(config: GatewayConfig, shutdown: CancellationToken) -> Arc<Gateway> {
        let cluster = config
            .cluster
            .as_ref()
            .and_then(|c| match cluster::Cluster::new(c) {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(error = %e, "cannot use [cluster] redis; relays between replicas are off");
                    None
                }
            });
        // The commands that only look (`check`, `tools`, `call`) read the
        // store and never write it.
        let pins = match Pins::open(&config.integrity) {
            Ok(p) => Pins {
                store: p.store,
                watch: None,
            },
            Err(e) => {
                tracing::error!(error = %e, "[integrity] store cannot be read; judging against no pins");
                Pins::in_memory()
            }
        };
        Gateway::build(
            config,
            shutdown,
            CancellationToken::new(),
            None,
            None,
            cluster,
            pins,
        )
    }

    fn build(
        config: GatewayConfig,
        shutdown: CancellationToken,
        audit_stop: CancellationToken,
        auditor: Option<manifold_audit::Auditor>,
        audit_task: Option<tokio::task::JoinHandle<()>>,
        cluster: Option<cluster::Cluster>,
        pins: Pins,
    ) -> Arc<Gateway> {
        let config = Arc::new(config);
        // Callers' accounts, shared by every replica through Redis.
        let shared_accounts = cluster.as_ref().map(|c| {
            Arc::new(crate::state::connects::BusAccounts(c.bus.clone()))
                as Arc<dyn manifold_credentials::SharedAccounts>
        });
        let metrics = metrics::Metrics::new(&config);
        let tasks = TaskTracker::new();
        let stop = CancellationToken::new();
        let (tx, rx) = mpsc::channel(UPSTREAM_EVENT_QUEUE);
        let upstreams = config
            .upstreams
            .iter()
            .map(|u| upstreams::spawn_upstream(u, &config, &tx, &stop, &tasks))
            .collect();
        let live = Live::new(config.clone(), upstreams, None, &stop);
        let limits = &config.limits;
        let gw = Arc::new(Gateway {
            generation: arc_swap::ArcSwap::from_pointee(Generation::empty(
                config.server.page_size,
                live.policy.clone(),
                live.endpoints.clone(),
            )),
            live: arc_swap::ArcSwap::from_pointee(live),
            started: config.clone(),
            events: tx,
            config_path: OnceLock::new(),
            config_stamp: Mutex::new(None),
            rebuilding: Mutex::new(()),
            sealer: config.cluster.as_ref().and_then(sealed::Sealer::new),
            cluster,
            reloading: tokio::sync::Mutex::new(()),
            tables: crate::state::tables::Tables {
                sessions: sessions::Sessions::new(sessions::SessionLimits {
                    max: limits.max_sessions,
                    per_peer: limits.max_sessions_per_peer,
                    calls: limits.max_calls_per_session,
                }),
                learned: learned::Learned::default(),
                subscriptions: Default::default(),
                upstream_log_level: log_levels::UpstreamLogLevel::default(),
                listeners: listeners::Listeners::new(limits.max_listens),
                coalescing: Default::default(),
                held: held_calls::HeldCalls::new(
                    config.server.request_state_key.as_deref(),
                    limits.held_call_ttl,
                    limits.max_held_calls,
                )
                .with_per_principal(limits.max_held_calls_per_principal),
                mcp_tasks: crate::state::tasks::Tasks::new(&config),
                connects: crate::state::connects::Connects::new(
                    config
                        .credentials
                        .as_ref()
                        .map_or(manifold_config::accounts::DEFAULT_CONNECT_TTL, |c| {
                            c.connect_ttl
                        }),
                    config.credentials.as_ref().map(|c| c.key.as_str()),
                    shared_accounts,
                ),
            },
            integrity: integrity::Integrity::new(pins.store, metrics.integrity.clone()),
            metrics,
            life: crate::state::lifecycle::Lifecycle {
                shutdown,
                stop,
                audit_stop,
                background: tasks,
                audit_task: Mutex::new(audit_task),
            },
            auditor,
            auth_refusals: manifold_foundation::log_budget::LogBudget::new(
                AUTH_REFUSALS_LOGGED_PER_WINDOW,
            ),
            output_warnings: manifold_foundation::log_budget::LogBudget::new(
                OUTPUT_MISMATCHES_LOGGED_PER_WINDOW,
            ),
            next_request: AtomicU64::new(1),
            admin: Mutex::new(None),
            admin_addr: OnceLock::new(),
            mcp_addr: OnceLock::new(),
            started_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as u32)
                .unwrap_or(0),
            console: crate::state::console::ConsoleState::new(),
            local_admin: OnceLock::new(),
            search_turns: Arc::new(tokio::sync::Semaphore::new(
                crate::handlers::discovery::MAX_CONCURRENT_SEARCHES,
            )),
            code: crate::state::code::CodePool::new(&config.code),
            semantic: OnceLock::new(),
        });
        let g = gw.clone();
        gw.life
            .background
            .spawn(async move { g.maintain_catalog(rx).await });
        let g = gw.clone();
        gw.life
            .background
            .spawn(async move { g.sweep_sessions().await });
        let g = gw.clone();
        gw.life.background.spawn(crate::observe::sweep_tasks(g));
        let g = gw.clone();
        gw.life.background.spawn(async move { g.drain().await });
        gw.start_cluster();
        gw
    }

    /// Once shutdown begins, waits until no call is in flight to any upstream, or
    /// `server.shutdown_grace` has passed, then fires `stop`.
    async fn drain(self: Arc<Self>) {
        tokio::select! {
            _ = self.life.shutdown.cancelled() => {}
            _ = self.life.stop.cancelled() => return,
        }
        let deadline = tokio::time::Instant::now() + self.cfg().server.shutdown_grace;
        loop {
            let in_flight: usize = self.upstreams().iter().map(Upstream::in_flight).sum();
            if in_flight == 0 {
                break;
            }
            if tokio::time::Instant::now() >= deadline {
                tracing::warn!(in_flight, grace = ?self.cfg().server.shutdown_grace,
                    "shutdown grace over; cancelling the calls still in flight");
                break;
            }
            tokio::time::sleep(DRAIN_POLL).await;
        }
        self.life.stop.cancel();
    }

    /// Whether shutdown has begun (readiness is then false).
    pub(crate) fn draining(&self) -> bool {
        self.life.shutdown.is_cancelled()
    }

    /// Waits until every upstream has either become ready or failed once, or
    /// `limit` passed: the endpoint then serves what is ready.
    pub async fn wait_ready(&self, limit: Duration) {
        let wait_all = async {
            for u in &self.upstreams() {
                u.settled().await;
            }
        };
        let _ = tokio::time::timeout(limit, wait_all).await;
        self.rebuild_catalog();
    }

    /// Serves the endpoint (and the admin listener, if configured) until shutdown,
    /// then waits for tracked tasks and the audit writer's last flush.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        if let Ok(a) = listener.local_addr() {
            let _ = self.mcp_addr.set(a);
        }
        self.serve_admin().await;
        self.watch_config_if_asked();
        let tls = match &self.cfg().server.tls {
            None => None,
            Some(t) => match front::tls::Tls::new(t) {
                Ok(t) => {
                    let t = Arc::new(t);
                    self.life
                        .background
                        .spawn(t.clone().watch(self.life.stop.clone()));
                    Some(t)
                }
                Err(e) => {
                    // Loaded at launch; changed since. Serving plain HTTP instead
                    // would be worse than not serving.
                    tracing::error!(error = %e, "server.tls no longer loads; not serving");
                    self.life.shutdown.cancel();
                    None
                }
            },
        };
        if !self.life.shutdown.is_cancelled() {
            front::http::serve(self.clone(), listener, tls).await;
        }
        self.wind_down().await;
    }

    /// Serves one client on stdin/stdout (`manifold stdio`; and the admin
    /// listener, if configured) until its input ends or shutdown begins, then
    /// stops as [`Gateway::serve`] does: calls finish, children are reaped, the
    /// audit log is flushed.
    pub async fn serve_stdio_until_done<R, W>(self: Arc<Self>, input: R, output: W)
    where
        R: tokio::io::AsyncBufRead + Unpin + Send + 'static,
        W: tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        self.serve_admin().await;
        self.watch_config_if_asked();
        self.serve_stdio(input, output).await;
        self.life.shutdown.cancel();
        self.wind_down().await;
    }

    /// Starts watching the configuration file, if `[server] watch_config`.
    fn watch_config_if_asked(self: &Arc<Self>) {
        if self.cfg().server.watch_config {
            self.life.background.spawn(self.clone().watch_config());
        }
    }

    /// Starts the admin listener's task, if `[admin]` is configured.
    async fn serve_admin(self: &Arc<Self>) {
        if let Err(e) = self.bind_admin().await {
            tracing::error!(error = %e, "cannot listen for [admin]; serving without it");
        }
        let admin = self.admin.lock().take();
        if let Some(l) = admin {
            self.life
                .background
                .spawn(crate::admin::serve(self.clone(), l));
        }
    }

    /// After the front door closed: waits for the drain (calls in flight get
    /// `server.shutdown_grace`), stops every task, then lets the audit writer
    /// flush and close.
    async fn wind_down(&self) {
        // The drain fires `stop` within the grace; the bound is a safety net.
        let grace = self.cfg().server.shutdown_grace;
        let _ = tokio::time::timeout(grace + SHUTDOWN_WAIT, self.life.stop.cancelled()).await;
        self.life.stop.cancel();
        self.life.background.close();
        let _ = tokio::time::timeout(SHUTDOWN_WAIT, self.life.background.wait()).await;
        self.life.audit_stop.cancel();
        let task = self.life.audit_task.lock().take();
        if let Some(t) = task {
            let _ = tokio::time::timeout(SHUTDOWN_WAIT, t).await;
        }
    }

    /// Binds the `[admin]` listener now (idempotent), so its address can be
    /// printed before serving; `serve` binds it otherwise. `None` when not configured.
    pub async fn bind_admin(&self) -> std::io::Result<Option<std::net::SocketAddr>> {
        let Some(addr) = self.started.admin.as_ref().map(|a| a.listen) else {
            return Ok(None);
        };
        if let Some(a) = self.admin_addr.get() {
            return Ok(Some(*a));
        }
        self.prepare_local_admin()?;
        let l = TcpListener::bind(addr).await.map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot listen on {addr} ([admin] listen): {e}"),
            )
        })?;
        let bound = l.local_addr()?;
        let _ = self.admin_addr.set(bound);
        *self.admin.lock() = Some(l);
        Ok(Some(bound))
    }

    /// Serves the admin listener on `listener`, already bound, instead of
    /// binding `[admin] listen` — whose address still decides the listener's
    /// rules (loopback or not): how tests exercise a non-loopback admin
    /// listener while reaching it on 127.0.0.1. An error if one is bound.
    pub fn adopt_admin_listener(&self, listener: TcpListener) -> std::io::Result<SocketAddr> {
        let bound = listener.local_addr()?;
        self.prepare_local_admin()?;
        self.admin_addr.set(bound).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the admin listener is already bound",
            )
        })?;
        *self.admin.lock() = Some(listener);
        Ok(bound)
    }

    /// Without `[admin]` credentials, loads (or makes) the local admin
    /// token: the control endpoints never answer a request without a
    /// credential.
    fn prepare_local_admin(&self) -> std::io::Result<()> {
        let Some(admin) = self.started.admin.as_ref() else {
            return Ok(());
        };
        if admin.has_credentials() || self.local_admin.get().is_some() {
            return Ok(());
        }
        let audit = self.started.audit.as_ref().and_then(|a| a.path.as_deref());
        let made = admin
            .token_file(audit, |k| std::env::var(k).ok())
            .ok_or(LocalAdminError::NoPlace)
            .and_then(|path| {
                let token = local_admin::load_or_create(&path)?;
                LocalAdmin::new(&token, path)
            })
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        tracing::info!(file = %made.path.display(),
            "no [admin] credentials configured: the control endpoints and the console take the local admin token (manifold admin token prints it)");
        let _ = self.local_admin.set(made);
        Ok(())
    }

    /// The console's one-time login link, while it is unused (`serve`
    /// prints it): `None` with `[admin]` credentials configured.
    pub fn console_login_link(&self) -> Option<String> {
        let addr = self.admin_addr.get()?;
        let code = self.local_admin.get()?.login_code()?;
        Some(format!("http://{addr}/ui/login?code={code}"))
    }

    /// The local admin token's file, when the gateway uses one.
    pub fn local_admin_token_file(&self) -> Option<&std::path::Path> {
        self.local_admin.get().map(|l| l.path.as_path())
    }

    async fn maintain_catalog(self: Arc<Self>, mut rx: mpsc::Receiver<UpstreamEvent>) {
        use manifold_protocol::methods as m;
        // Upstreams known ready, to notice a (re)connection.
        let mut ready: HashMap<Arc<str>, (Holder, u64)> = Default::default();
        loop {
            let ev = tokio::select! {
                _ = self.life.stop.cancelled() => return,
                ev = rx.recv() => ev,
            };
            let Some(ev) = ev else { return };
            let mut rebuild = false;
            let mut handle = |ev: UpstreamEvent| match ev {
                UpstreamEvent::Changed { .. } => rebuild = true,
                UpstreamEvent::ListChanged { upstream, method } => {
                    self.metrics.list_changed_received(&upstream);
                    tracing::info!(upstream = %upstream, %method, "upstream list changed; refetching");
                    // The other replicas' connections may not hear it (an
                    // upstream that tells only the session that changed it).
                    self.publish_later(manifold_cluster::Message::ListChanged {
                        upstream: upstream.to_string(),
                        method,
                    });
                }
                UpstreamEvent::Notification {
                    upstream,
                    method,
                    msg,
                } => match method.as_str() {
                    m::NOTIF_MESSAGE => {
                        self.broadcast_log(&upstream, &msg);
                    }
                    m::NOTIF_RESOURCES_UPDATED => {
                        let sent = self.resource_updated(&upstream, &msg);
                        tracing::debug!(upstream = %upstream, sessions = sent, "resource updated");
                    }
                    _ => {
                        tracing::debug!(upstream = %upstream, %method, "unrouted upstream notification");
                    }
                },
            };
            handle(ev);
            // Coalesce a burst of changes into one rebuild.
            while let Ok(ev) = rx.try_recv() {
                handle(ev);
            }
            if rebuild {
                self.on_upstreams_changed(&mut ready);
                let rebuilt = self.rebuild_catalog();
                self.announce(&rebuilt);
            }
        }
    }

    /// An upstream that just became ready gets the state sessions built up on
    /// the old connection: resource subscriptions (on the member that holds
    /// them: when the holder changes, they are made again there) and the log
    /// level (on every member: when any reconnects).
    fn on_upstreams_changed(self: &Arc<Self>, seen: &mut HashMap<Arc<str>, (Holder, u64)>) {
        for u in &self.upstreams() {
            let st = u.status();
            let holder = st
                .holder
                .filter(|_| st.state == manifold_upstream::State::Ready);
            let Some(holder) = holder else {
                seen.remove(u.name());
                continue;
            };
            let before = seen.insert(u.name().clone(), (holder, st.connections));
            if before.map(|b| b.0) != Some(holder) {
                self.renew_subscriptions(u);
            }
            if before.map(|b| b.1) != Some(st.connections)
                && self.tables.sessions.most_verbose_log_level().is_some()
            {
                self.apply_log_level_later();
            }
        }
    }

    async fn sweep_sessions(self: Arc<Self>) {
        loop {
            tokio::select! {
                _ = self.life.stop.cancelled() => return,
                _ = tokio::time::sleep(SESSION_SWEEP_INTERVAL) => {}
            }
            // Read each time: a reload may change it.
            let idle = self.cfg().limits.session_idle_timeout;
            let expired = self.tables.sessions.idle(idle);
            let ended = expired
                .iter()
                .filter(|id| self.end_session(id, SessionEnd::Idle))
                .count();
            if ended > 0 {
                tracing::info!(expired = ended, "ended idle sessions");
            }
        }
    }
}
