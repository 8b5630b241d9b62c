//! Hot reload: a new configuration applied to the running gateway, on SIGHUP,
//! `POST /reload` (admin listener) or a change of the watched file.
//!
//! - The file is loaded and validated completely first; an invalid one changes
//!   nothing (the error is logged, counted and returned).
//! - Upstreams: a new one starts; an unchanged one keeps running untouched; a
//!   changed one is started anew beside the old one and swapped in once ready
//!   (if it does not become ready within `limits.connect_timeout`, the reload
//!   fails and nothing changes); a removed or replaced one takes no new calls,
//!   lets its calls in flight finish (up to its `timeout`), then stops.
//! - Everything else built from the configuration (naming, auth, policy, rate
//!   limits, validation, confirmation, limits read per request) swaps in one
//!   atomic store of [`Live`]; clients get `list_changed` only when what they
//!   see changed.
//! - Settings fixed at start are reported as needing a restart, and the rest is
//!   applied: each section of manifold-config says which
//!   (`GatewayConfig::fixed_at_start`).
//!
//! Invariants: one reload at a time; a request reads one `Live` and never mixes
//! two configurations; nothing waits on an upstream without a bound.
//!
//! Not here: parsing (manifold-config), the triggers' plumbing (`admin`,
//! the binary's signal handler).

use manifold_config::GatewayConfig;
use manifold_upstream::{State, Upstream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

use crate::state::{Gateway, Live};

/// How often `[server] watch_config` looks at the file (a change is applied
/// after two looks agree, so within about twice this).
pub const WATCH_INTERVAL: Duration = Duration::from_secs(2);

/// What a reload did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReloadReport {
    /// Upstreams started.
    pub added: Vec<String>,
    /// Upstreams stopping (after their calls in flight).
    pub removed: Vec<String>,
    /// Upstreams whose settings changed: restarted and swapped in.
    pub restarted: Vec<String>,
    /// Changed settings that take effect only after a restart.
    pub needs_restart: Vec<String>,
}

/// Why a reload changed nothing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReloadError {
    /// The file does not load or validate.
    #[error("{0}")]
    Invalid(String),
    /// The gateway was not started from a file (embedded use).
    #[error("no configuration file to reload: the gateway was not started from one")]
    NoFile,
    /// A changed upstream did not come up with its new settings.
    #[error("upstream `{upstream}` did not become ready with its new settings within {within:?} ({why}); nothing was changed")]
    NotReady {
        upstream: String,
        within: Duration,
        why: String,
    },
}

impl Gateway {
    /// Where the configuration came from, for reloads (set once, by the binary).
    pub fn set_config_path(&self, path: PathBuf) {
        *self.config_stamp.lock() = stamp(&path);
        let _ = self.config_path.set(path);
    }

    /// Loads the configuration file again and applies it (see the module doc).
    pub async fn reload_from_file(self: &Arc<Self>) -> Result<ReloadReport, ReloadError> {
        let Some(path) = self.config_path.get().cloned() else {
            return Err(ReloadError::NoFile);
        };
        // What was read, good or bad: the watcher reloads only on a new change.
        *self.config_stamp.lock() = stamp(&path);
        // Judged with the listener and TLS in force: a reload cannot change
        // them, so the file's own `[server.tls]` proves nothing yet.
        let in_force = &self.started.server;
        let loaded = manifold_config::load(&path)
            .map_err(|e| e.to_string())
            .and_then(|c| {
                match c.exposure_problem_in_force(in_force.listen, in_force.tls.as_ref()) {
                    Some(p) => Err(format!("{}: {p}", path.display())),
                    None => Ok(c),
                }
            });
        let result = match loaded {
            Ok(cfg) => self.reload(cfg).await,
            Err(e) => Err(ReloadError::Invalid(e)),
        };
        match &result {
            Ok(report) => tracing::info!(
                added = ?report.added, removed = ?report.removed, restarted = ?report.restarted,
                needs_restart = ?report.needs_restart, "configuration reloaded"),
            Err(e) => {
                tracing::error!(error = %e, "configuration NOT reloaded; the old one keeps serving")
            }
        }
        self.metrics.reloaded(result.is_ok());
        self.console.reloaded(match &result {
            Ok(report) => Ok(serde_json::to_value(report).unwrap_or_default()),
            Err(e) => Err(e.to_string()),
        });
        result
    }

    /// Applies a validated configuration.
    pub async fn reload(self: &Arc<Self>, new: GatewayConfig) -> Result<ReloadReport, ReloadError> {
        let _one_at_a_time = self.reloading.lock().await;
        let old = self.live();
        // Against what is in force: a setting an earlier reload changed
        // still waits for the restart.
        let mut report = ReloadReport {
            needs_restart: self.started.fixed_at_start(&new),
            ..ReloadReport::default()
        };
        let new = Arc::new(new);
        let mut kept = Vec::new();
        let mut fresh: Vec<(Upstream, CancellationToken)> = Vec::new();
        let mut restarted = Vec::new();
        for u in &new.upstreams {
            match old.by_name.get(u.name.as_str()) {
                Some(running) if running.config() == u => {
                    let token = old.stops.get(running.name()).cloned().unwrap_or_default();
                    kept.push((running.clone(), token));
                }
                previous => {
                    let started = super::upstreams::spawn_upstream(
                        u,
                        &new,
                        &self.events,
                        &self.life.stop,
                        &self.life.background,
                    );
                    if previous.is_some() {
                        restarted.push(started.clone());
                        report.restarted.push(u.name.clone());
                    } else {
                        report.added.push(u.name.clone());
                    }
                    fresh.push(started);
                }
            }
        }
        // A changed upstream must be up before it replaces the one serving.
        let within = new.limits.connect_timeout;
        for (u, _) in &restarted {
            if let Err(why) = ready_within(u, within).await {
                for (_, t) in &fresh {
                    t.cancel();
                }
                return Err(ReloadError::NotReady {
                    upstream: u.name().to_string(),
                    within,
                    why,
                });
            }
        }
        let staying: Vec<&str> = new.upstreams.iter().map(|u| u.name.as_str()).collect();
        let leaving: Vec<(Upstream, CancellationToken)> = old
            .upstreams
            .iter()
            .filter(|u| {
                let gone = !staying.contains(&&**u.name());
                let replaced = report.restarted.iter().any(|r| r == &**u.name());
                gone || replaced
            })
            .map(|u| {
                (
                    u.clone(),
                    old.stops.get(u.name()).cloned().unwrap_or_default(),
                )
            })
            .collect();
        report.removed = leaving
            .iter()
            .filter(|(u, _)| !staying.contains(&&**u.name()))
            .map(|(u, _)| u.name().to_string())
            .collect();
        self.console.recent.keep_only(&staying);
        kept.extend(fresh);
        let live = Arc::new(Live::new(new, kept, Some(&old), &self.life.stop));
        // A new `[auth]`: its keys are fetched (and kept fresh) before it
        // serves; the old one's refreshers stop.
        let auth_changed = live.config.auth != old.config.auth;
        if auth_changed {
            if let Some(auth) = live.auth.clone() {
                auth.start(&self.life.background, &live.auth_stop).await;
            }
        }
        self.live.store(live.clone());
        if auth_changed {
            old.auth_stop.cancel();
        }
        let rebuilt = self.rebuild_catalog();
        self.announce(&rebuilt);
        // An approval made with the file while nobody watched it (or just
        // now) is picked up at a reload too.
        self.integrity.nudge.notify_one();
        if !Arc::ptr_eq(&live.policy, &old.policy) {
            self.revoke_hidden_subscriptions().await;
        }
        // A restarted upstream is a new connection with the same name: the
        // subscriptions and log level sessions built up are taken to it. The
        // reload completes once its subscriptions are renewed: an upstream may
        // handle requests concurrently, and a call made after the reload must
        // not overtake a subscribe still in flight.
        for (u, _) in &restarted {
            if let Some(renewal) = self.renewal(u) {
                renewal.await;
            }
        }
        if !restarted.is_empty() && self.tables.sessions.most_verbose_log_level().is_some() {
            self.apply_log_level_later();
        }
        for (u, token) in leaving {
            self.life.background.spawn(drain_then_stop(u, token));
        }
        Ok(report)
    }

    /// New rules: resource subscriptions whose URI a subscriber may no longer
    /// read are ended (upstream too, where it was the last).
    async fn revoke_hidden_subscriptions(self: &Arc<Self>) {
        let base = self.catalog();
        for (uri, who) in self.tables.subscriptions.pairs() {
            let seen = if crate::state::listeners::is_listen_key(&who) {
                self.tables.listeners.viewer(&who)
            } else {
                self.tables
                    .sessions
                    .get(&who)
                    .map(|s| (s.endpoint.clone(), s.viewer()))
            };
            let Some((endpoint, viewer)) = seen else {
                continue;
            };
            if !self
                .access(&endpoint, viewer.as_deref())
                .may_read(&base, &uri)
            {
                tracing::info!(%uri, "a reload's rules hide this URI; its subscription ends");
                self.unsubscribe(&who, &uri).await;
            }
        }
    }

    /// Reloads whenever the configuration file changes (`[server]
    /// watch_config`), until shutdown.
    pub(crate) async fn watch_config(self: Arc<Self>) {
        // A change is applied once the file has stayed the same for one more
        // look: an editor writing in place is not read half-way.
        let mut pending: Option<Stamp> = None;
        loop {
            tokio::select! {
                _ = self.life.shutdown.cancelled() => return,
                _ = tokio::time::sleep(WATCH_INTERVAL) => {}
            }
            // The path may be set just after serving starts.
            let Some(path) = self.config_path.get() else {
                continue;
            };
            let now = stamp(path);
            if now == *self.config_stamp.lock() {
                pending = None;
                continue;
            }
            if pending.as_ref() != Some(&now) {
                pending = Some(now);
                continue;
            }
            pending = None;
            tracing::info!(path = %path.display(), "configuration file changed; reloading");
            let _ = self.reload_from_file().await;
        }
    }
}

/// What the watcher compares (`manifold_foundation::watch`).
pub(crate) type Stamp = Option<manifold_foundation::watch::FileStamp>;

fn stamp(path: &std::path::Path) -> Stamp {
    manifold_foundation::watch::FileStamp::seen(path)
}

/// Waits until `u` is ready; `Err` with its last error once it failed or
/// `within` passed.
async fn ready_within(u: &Upstream, within: Duration) -> Result<(), String> {
    let mut rx = u.watch_status();
    let _ = tokio::time::timeout(within, async {
        let _ = rx
            .wait_for(|s| {
                s.state == State::Ready
                    || s.restarts > 0
                    || s.state == State::Down
                    || s.state == State::NeedsLogin
            })
            .await;
    })
    .await;
    let st = u.status();
    match st.state {
        State::Ready => Ok(()),
        other => Err(st
            .last_error
            .unwrap_or_else(|| format!("still {}", other.as_str()))),
    }
}

/// A removed or replaced upstream: no new calls reach it (it is out of the
/// name table); its calls in flight get up to its `timeout`; then it stops.
async fn drain_then_stop(u: Upstream, token: CancellationToken) {
    let deadline = tokio::time::Instant::now() + u.config().timeout;
    while u.in_flight() > 0 && tokio::time::Instant::now() < deadline {
        tokio::select! {
            _ = token.cancelled() => return,
            _ = tokio::time::sleep(Duration::from_millis(50)) => {}
        }
    }
    tracing::info!(upstream = %u.name(), "stopping the upstream a reload removed or replaced");
    token.cancel();
}
