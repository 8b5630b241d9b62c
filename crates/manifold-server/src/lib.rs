//! The downstream side of Manifold: one Streamable-HTTP endpoint (POST, GET,
//! DELETE) for protocol revisions 2024-11-05 … 2025-11-25, downstream sessions, and
//! the request pipeline that routes each request to the upstream that owns it.
//!
//! Invariants: the merged catalog is an immutable snapshot swapped atomically, so a
//! `tools/list` never touches an upstream; every spawned task is tracked and ends
//! with the gateway's shutdown token; no lock or DashMap guard is held across
//! `.await`.
//!
//! Not here: upstream connections (manifold-upstream), naming and ordering
//! (manifold-catalog), configuration parsing (manifold-config).

// Pipeline phases refuse a request by returning the finished HTTP response as their
// `Err`; it is built once per refusal and returned as-is, so its size is irrelevant.
#![allow(clippy::result_large_err)]

mod admin;
mod body;
mod forward;
mod http;
mod listen;
mod logging;
mod modern;
mod mrtr;
mod observe;
mod pipeline;
mod resources;
mod session;

pub use logging::LEVELS as LOG_LEVELS;
pub use modern::{LIST_TTL_MS, MODERN_SUPPORTED};
pub use mrtr::{GATHER_WINDOW, HELD_CALL_TTL, MAX_HELD_CALLS};
pub use resources::LEARNED_URI_CAPACITY;
pub use session::SESSION_ID_BYTES;

use arc_swap::ArcSwap;
use manifold_catalog::{Catalog, Glob, ItemFilter, NamingPolicy, UpstreamInput};
use manifold_config::GatewayConfig;
use manifold_upstream::{Upstream, UpstreamEvent};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

/// Capacity of the channel upstreams report changes on.
pub const UPSTREAM_EVENT_QUEUE: usize = 1024;
/// How often idle sessions are swept.
pub const SESSION_SWEEP_INTERVAL: Duration = Duration::from_secs(30);
/// Keep-alive comment interval on open SSE streams.
pub const SSE_KEEPALIVE: Duration = Duration::from_secs(25);

/// The running gateway.
pub struct Gateway {
    pub(crate) config: Arc<GatewayConfig>,
    pub(crate) upstreams: Vec<Upstream>,
    pub(crate) by_name: HashMap<Arc<str>, Upstream>,
    /// Each upstream's `tools` / `prompts` allow and deny lists.
    pub(crate) filters: HashMap<Arc<str>, Arc<ItemFilter>>,
    pub(crate) catalog: ArcSwap<Catalog>,
    pub(crate) sessions: session::Sessions,
    /// URIs seen in results, for routing reads (see `resources`).
    pub(crate) learned: std::sync::Mutex<resources::Learned>,
    /// Resource subscriptions, shared across sessions.
    pub(crate) subscriptions: std::sync::Mutex<resources::Subscriptions>,
    /// The log level last sent to the upstreams (`logging`), or `LEVEL_UNSET`.
    pub(crate) upstream_log_level: std::sync::atomic::AtomicU8,
    /// Open 2026-07-28 `subscriptions/listen` streams.
    pub(crate) listeners: listen::Listeners,
    /// Calls held for a modern client's input (`InputRequiredResult`).
    pub(crate) held: mrtr::Held,
    pub(crate) shutdown: CancellationToken,
    pub(crate) tasks: TaskTracker,
    pub(crate) metrics: observe::Metrics,
    /// The audit writer, when `[audit]` is configured and the gateway was
    /// started with [`Gateway::launch`].
    pub(crate) auditor: Option<manifold_audit::Auditor>,
    audit_task: std::sync::Mutex<Option<tokio::task::JoinHandle<()>>>,
    next_request: std::sync::atomic::AtomicU64,
    /// The admin listener, bound early by [`Gateway::bind_admin`] or by `serve`.
    admin: std::sync::Mutex<Option<TcpListener>>,
    admin_addr: std::sync::OnceLock<std::net::SocketAddr>,
    /// Low bits of the start time, so request ids differ across restarts.
    started_at: u32,
}

/// What the pipeline knows about a request before decoding it.
pub(crate) struct RequestMeta {
    /// Manifold's id for the request: in every log line of it and in its audit record.
    pub id: String,
    /// Size of the request body.
    pub bytes: usize,
}

/// Why the gateway could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("the audit log cannot start: {0}")]
    Audit(#[from] manifold_audit::AuditError),
}

impl Gateway {
    /// Starts the gateway as `manifold serve` runs it: the audit writer (when
    /// configured), every upstream, and the catalog maintainer. Invalid audit
    /// settings are an error; a sink that cannot open yet is not (calls then fail
    /// or count lost records, per `on_failure`, until it recovers).
    pub async fn launch(
        config: GatewayConfig,
        shutdown: CancellationToken,
    ) -> Result<Arc<Gateway>, StartError> {
        let audit = observe::start_auditor(config.audit.as_ref(), shutdown.clone()).await?;
        let (auditor, task) = match audit {
            Some((a, t)) => (Some(a), Some(t)),
            None => (None, None),
        };
        Ok(Gateway::build(config, shutdown, auditor, task))
    }

    /// Starts every upstream (in parallel) and the catalog maintainer, without the
    /// audit writer: for commands that inspect the catalog (`manifold check`).
    /// Returns at once; use [`Gateway::wait_ready`] to give upstreams a bounded
    /// head start.
    pub fn start(config: GatewayConfig, shutdown: CancellationToken) -> Arc<Gateway> {
        Gateway::build(config, shutdown, None, None)
    }

    fn build(
        config: GatewayConfig,
        shutdown: CancellationToken,
        auditor: Option<manifold_audit::Auditor>,
        audit_task: Option<tokio::task::JoinHandle<()>>,
    ) -> Arc<Gateway> {
        let config = Arc::new(config);
        let config_max_tool_series = config.max_tool_series;
        let tasks = TaskTracker::new();
        let (tx, rx) = mpsc::channel(UPSTREAM_EVENT_QUEUE);
        let upstreams: Vec<Upstream> = config
            .upstreams
            .iter()
            .map(|u| {
                Upstream::spawn(
                    u.clone(),
                    config.limits.clone(),
                    tx.clone(),
                    shutdown.clone(),
                    &tasks,
                )
            })
            .collect();
        let by_name = upstreams
            .iter()
            .map(|u| (u.name().clone(), u.clone()))
            .collect();
        let filters = upstreams
            .iter()
            .map(|u| (u.name().clone(), Arc::new(item_filter(u.config()))))
            .collect();
        let gw = Arc::new(Gateway {
            catalog: ArcSwap::from_pointee(Catalog::empty(config.server.page_size)),
            sessions: session::Sessions::new(config.limits.max_sessions),
            learned: Default::default(),
            subscriptions: Default::default(),
            listeners: Default::default(),
            upstream_log_level: std::sync::atomic::AtomicU8::new(logging::LEVEL_UNSET),
            held: mrtr::Held::new(config.server.request_state_key.as_deref()),
            config,
            upstreams,
            by_name,
            filters,
            shutdown,
            tasks,
            metrics: observe::Metrics::new(config_max_tool_series),
            auditor,
            audit_task: std::sync::Mutex::new(audit_task),
            next_request: std::sync::atomic::AtomicU64::new(1),
            admin: std::sync::Mutex::new(None),
            admin_addr: std::sync::OnceLock::new(),
            started_at: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs() as u32)
                .unwrap_or(0),
        });
        let g = gw.clone();
        gw.tasks.spawn(async move { g.maintain_catalog(rx).await });
        let g = gw.clone();
        gw.tasks.spawn(async move { g.sweep_sessions().await });
        gw
    }

    pub fn config(&self) -> &GatewayConfig {
        &self.config
    }
    pub fn upstreams(&self) -> &[Upstream] {
        &self.upstreams
    }
    pub fn catalog(&self) -> Arc<Catalog> {
        self.catalog.load_full()
    }

    /// Waits until every upstream has either become ready or failed once, or
    /// `limit` passed: the endpoint then serves what is ready.
    pub async fn wait_ready(&self, limit: Duration) {
        let wait_all = async {
            for u in &self.upstreams {
                let mut rx = u.watch_status();
                let _ = rx
                    .wait_for(|s| s.state != manifold_upstream::State::Starting || s.restarts > 0)
                    .await;
            }
        };
        let _ = tokio::time::timeout(limit, wait_all).await;
        self.rebuild_catalog();
    }

    /// Serves the endpoint (and the admin listener, if configured) until shutdown,
    /// then waits for tracked tasks and the audit writer's last flush.
    pub async fn serve(self: Arc<Self>, listener: TcpListener) {
        if let Err(e) = self.bind_admin().await {
            tracing::error!(error = %e, "cannot listen for [admin]; serving without it");
        }
        let admin = self.admin.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(l) = admin {
            self.tasks.spawn(admin::serve(self.clone(), l));
        }
        http::serve(self.clone(), listener).await;
        self.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(10), self.tasks.wait()).await;
        let task = self
            .audit_task
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(t) = task {
            let _ = tokio::time::timeout(Duration::from_secs(10), t).await;
        }
    }

    /// Binds the `[admin]` listener now (idempotent), so its address can be
    /// printed before serving; `serve` binds it otherwise. `None` when not configured.
    pub async fn bind_admin(&self) -> std::io::Result<Option<std::net::SocketAddr>> {
        let Some(addr) = self.config.admin else {
            return Ok(None);
        };
        if let Some(a) = self.admin_addr.get() {
            return Ok(Some(*a));
        }
        let l = TcpListener::bind(addr).await.map_err(|e| {
            std::io::Error::new(
                e.kind(),
                format!("cannot listen on {addr} ([admin] listen): {e}"),
            )
        })?;
        let bound = l.local_addr()?;
        let _ = self.admin_addr.set(bound);
        *self.admin.lock().unwrap_or_else(|p| p.into_inner()) = Some(l);
        Ok(Some(bound))
    }

    /// The admin listener's address once bound.
    pub fn admin_addr(&self) -> Option<std::net::SocketAddr> {
        self.admin_addr.get().copied()
    }

    /// A fresh request id (16 hex digits): in logs and audit records.
    pub(crate) fn request_id(&self) -> String {
        let n = self
            .next_request
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        format!("{:08x}{n:08x}", self.started_at)
    }

    fn naming_policy(&self) -> NamingPolicy {
        let n = &self.config.naming;
        NamingPolicy {
            separator: n.separator.clone(),
            prefix_mode: match n.prefix_mode {
                manifold_config::PrefixMode::Always => manifold_catalog::PrefixMode::Always,
                manifold_config::PrefixMode::Multiple => manifold_catalog::PrefixMode::Multiple,
                manifold_config::PrefixMode::Never => manifold_catalog::PrefixMode::Never,
            },
            max_length: n.max_length,
            configured_upstreams: self.config.upstreams.len(),
        }
    }

    /// Rebuilds the merged view from every ready upstream; returns the
    /// `list_changed` notifications it calls for (lists whose items changed).
    pub(crate) fn rebuild_catalog(&self) -> Vec<&'static str> {
        use manifold_protocol::methods as m;
        let inputs: Vec<UpstreamInput> = self
            .upstreams
            .iter()
            .filter_map(|u| {
                u.lists().map(|lists| UpstreamInput {
                    name: u.name().clone(),
                    prefix: u.config().prefix.clone(),
                    lists,
                    filter: self.filters.get(u.name()).cloned().unwrap_or_default(),
                })
            })
            .collect();
        let new = Catalog::build(&inputs, &self.naming_policy(), self.config.server.page_size);
        self.metrics.rebuilt();
        for lo in new.tools.left_out().iter().chain(new.prompts.left_out()) {
            if matches!(lo.reason, manifold_catalog::LeftOutReason::InvalidHeader(_)) {
                tracing::warn!(upstream = %lo.upstream, name = %lo.original, reason = %lo.reason, "item left out of the merged list");
            }
        }
        let old = self.catalog.swap(Arc::new(new));
        let new = self.catalog.load();
        let mut changed = Vec::new();
        for (kind, method) in [
            (manifold_catalog::Kind::Tools, m::NOTIF_TOOLS_LIST_CHANGED),
            (
                manifold_catalog::Kind::Prompts,
                m::NOTIF_PROMPTS_LIST_CHANGED,
            ),
        ] {
            let a = old.list(kind);
            let b = new.list(kind);
            let differ = a.len() != b.len()
                || a.entries()
                    .iter()
                    .zip(b.entries())
                    .any(|(x, y)| x.json() != y.json());
            if differ {
                changed.push(method);
            }
        }
        let (a, b) = (&old.resources, &new.resources);
        if !a.resources.same_as(&b.resources) || !a.templates.same_as(&b.templates) {
            changed.push(m::NOTIF_RESOURCES_LIST_CHANGED);
        }
        changed
    }

    async fn maintain_catalog(self: Arc<Self>, mut rx: mpsc::Receiver<UpstreamEvent>) {
        use manifold_protocol::methods as m;
        // Upstreams known ready, to notice a (re)connection.
        let mut ready: std::collections::HashSet<Arc<str>> = Default::default();
        loop {
            let ev = tokio::select! {
                _ = self.shutdown.cancelled() => return,
                ev = rx.recv() => ev,
            };
            let Some(ev) = ev else { return };
            let mut rebuild = false;
            let mut handle = |ev: UpstreamEvent| match ev {
                UpstreamEvent::Changed { .. } => rebuild = true,
                UpstreamEvent::ListChanged { upstream, method } => {
                    self.metrics.list_changed_received(&upstream);
                    tracing::info!(upstream = %upstream, %method, "upstream list changed; refetching");
                }
                UpstreamEvent::Notification {
                    upstream,
                    method,
                    msg,
                } => match method.as_str() {
                    m::NOTIF_MESSAGE => {
                        logging::broadcast(&self, &upstream, &msg);
                    }
                    m::NOTIF_RESOURCES_UPDATED => {
                        let sent = resources::updated(&self, &upstream, &msg);
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
                for method in self.rebuild_catalog() {
                    let sent = self.sessions.broadcast_notification(method)
                        + listen::notify_listeners(&self, method);
                    self.metrics.list_changed_sent(method, sent);
                    tracing::info!(%method, sessions = sent, "merged list changed");
                }
            }
        }
    }

    /// An upstream that just became ready gets the state sessions built up on
    /// the old connection: resource subscriptions and the log level.
    fn on_upstreams_changed(self: &Arc<Self>, ready: &mut std::collections::HashSet<Arc<str>>) {
        for u in &self.upstreams {
            let is_ready = u.status().state == manifold_upstream::State::Ready;
            if is_ready && ready.insert(u.name().clone()) {
                resources::renew(self, u);
                if self.sessions.most_verbose_log_level().is_some() {
                    let gw = self.clone();
                    self.tasks.spawn(async move {
                        tokio::select! {
                            _ = gw.shutdown.cancelled() => {}
                            _ = logging::apply_to_upstreams(&gw) => {}
                        }
                    });
                }
            } else if !is_ready {
                ready.remove(u.name());
            }
        }
    }

    async fn sweep_sessions(self: Arc<Self>) {
        let idle = self.config.limits.session_idle_timeout;
        loop {
            tokio::select! {
                _ = self.shutdown.cancelled() => return,
                _ = tokio::time::sleep(SESSION_SWEEP_INTERVAL) => {}
            }
            let expired = self.sessions.expire_idle(idle);
            for id in &expired {
                resources::session_ended(&self, id);
            }
            if !expired.is_empty() {
                logging::sessions_ended(&self);
            }
            if !expired.is_empty() {
                tracing::info!(expired = expired.len(), "ended idle sessions");
            }
        }
    }
}

fn item_filter(u: &manifold_config::UpstreamConfig) -> ItemFilter {
    let rules = |f: &manifold_config::Filter| manifold_catalog::filter::Rules {
        allow: f.allow.iter().map(|g| Glob::new(g)).collect(),
        deny: f.deny.iter().map(|g| Glob::new(g)).collect(),
    };
    ItemFilter {
        tools: rules(&u.tools),
        prompts: rules(&u.prompts),
    }
}
