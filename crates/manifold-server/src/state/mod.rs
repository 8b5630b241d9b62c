//! Shared state: the [`Gateway`], in named parts — `live` (the configuration
//! and what is built from it), `generation` (the catalogue, its views and
//! validators, one swap), `tables` (what requests share), `lifecycle`
//! (shutdown and the background work) — and the tables every request may read — the
//! configuration, the upstreams, the merged catalog snapshot, client sessions
//! (`sessions`), URIs learned from results (`learned`), resource subscriptions
//! (`subscriptions`, kept in step upstream by `subscribing`), open listen streams (`listeners`), calls held for a client's
//! input (`held_calls`), upstream calls shared by identical calls
//! (`coalescing`), the upstreams' log level (`log_levels`), the metrics
//! registry (`metrics`), and the console's share (`console`, with recent calls
//! per upstream in `recent`).
//!
//! Invariants: the merged catalog is an immutable snapshot swapped atomically, so
//! a `tools/list` never touches an upstream; a session ends only through
//! [`Gateway::end_session`], which also ends its subscriptions and lets the
//! upstreams' log level follow; no lock or DashMap guard is held across `.await`.
//!
//! Not here: anything that reads a request (the pipeline and the handlers above),
//! starting and serving (`runtime`).

pub(crate) mod cluster;
pub(crate) mod coalescing;
pub(crate) mod code;
pub(crate) mod connects;
pub(crate) mod console;
pub(crate) mod endpoints;
pub(crate) mod generation;
pub(crate) mod held_calls;
pub(crate) mod integrity;
pub(crate) mod learned;
pub(crate) mod lifecycle;
pub(crate) mod listeners;
pub(crate) mod live;
pub(crate) mod local_admin;
pub(crate) mod log_levels;
pub(crate) mod logging;
pub(crate) mod metrics;
mod naming;
pub(crate) mod recent;
pub(crate) mod resilience_metrics;
pub(crate) mod sealed;
pub(crate) mod semantic;
pub(crate) mod sessions;
pub(crate) mod subscribing;
pub(crate) mod subscriptions;
pub(crate) mod tables;
pub(crate) mod tasks;
pub(crate) mod uris;
pub(crate) mod views;

use arc_swap::ArcSwap;
use bytes::Bytes;
use manifold_catalog::{Catalog, ItemFilter, NamingPolicy, UpstreamInput};
use manifold_config::GatewayConfig;
use manifold_policy::{Identity, ViewKey};
use manifold_upstream::Upstream;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use views::Access;

/// What a reload swaps, whole: the configuration and everything built from
/// it. A request reads one `Live` (`Gateway::live`) and keeps it for its
/// decisions, so it never mixes two configurations.
pub(crate) struct Live {
    pub config: Arc<GatewayConfig>,
    /// In name order.
    pub upstreams: Vec<Upstream>,
    pub by_name: foldhash::HashMap<Arc<str>, Upstream>,
    /// Each upstream's own stop token (a reload stops one upstream).
    pub stops: HashMap<Arc<str>, CancellationToken>,
    /// Each upstream's `tools` / `prompts` allow and deny lists.
    pub filters: HashMap<Arc<str>, Arc<ItemFilter>>,
    /// Each upstream's tool overrides (`overrides.<tool>`).
    pub overrides: HashMap<Arc<str>, Arc<manifold_catalog::Overrides>>,
    /// Client authentication, when `[auth]` is configured.
    pub auth: Option<Arc<manifold_policy::Authenticator>>,
    /// `[[policy]]`, compiled.
    pub policy: Arc<manifold_policy::Policy>,
    /// `[[rate_limit]]` buckets.
    pub rate_limits: Arc<manifold_policy::RateLimits>,
    /// `[confirm]`, compiled.
    pub confirm: Arc<manifold_policy::ConfirmRules>,
    /// The default endpoint and `[[endpoint]]`, compiled.
    pub endpoints: Arc<endpoints::Endpoints>,
    /// Stops the authenticator's key refreshers when a reload replaces it.
    pub auth_stop: CancellationToken,
    /// `[naming] resources`: which URIs are exposed under their upstream.
    pub uris: Arc<manifold_catalog::namespace::UriNamespaces>,
}

/// The running gateway.
pub struct Gateway {
    /// The configuration and what is built from it; swapped by a reload.
    pub(crate) live: ArcSwap<Live>,
    /// The configuration the gateway started with: the settings fixed at
    /// start (the listeners' addresses, `[server.tls]`, table sizes) in force,
    /// whatever a reloaded file says of them.
    pub(crate) started: Arc<GatewayConfig>,
    /// The configuration file, for reloads (`set_config_path`).
    pub(crate) config_path: OnceLock<std::path::PathBuf>,
    /// The configuration file as last read, for `[server] watch_config`.
    pub(crate) config_stamp: Mutex<Option<manifold_foundation::watch::FileStamp>>,
    /// Seals session ids when `[cluster]` is configured.
    pub(crate) sealer: Option<sealed::Sealer>,
    /// The bus between replicas, when `[cluster] redis` is set.
    pub(crate) cluster: Option<cluster::Cluster>,
    /// One catalogue build at a time (`rebuild_catalog`).
    pub(crate) rebuilding: Mutex<()>,
    /// One reload at a time.
    pub(crate) reloading: tokio::sync::Mutex<()>,
    /// Where upstreams report (every upstream, including one a reload adds).
    pub(crate) events: tokio::sync::mpsc::Sender<manifold_upstream::UpstreamEvent>,
    /// The merged catalogue, its per-caller views and its validators, swapped
    /// as one value on every rebuild (see `generation`).
    pub(crate) generation: ArcSwap<generation::Generation>,
    /// The tables requests share (sessions, subscriptions, held calls, …).
    pub(crate) tables: tables::Tables,
    /// Shutdown's tokens and the background work it waits for.
    pub(crate) life: lifecycle::Lifecycle,
    pub(crate) metrics: metrics::Metrics,
    /// The audit writer, when `[audit]` is configured and the gateway was
    /// started with `Gateway::launch`.
    pub(crate) auditor: Option<manifold_audit::Auditor>,
    /// Log budget for results that break their tool's `outputSchema`.
    pub(crate) output_warnings: manifold_foundation::log_budget::LogBudget,
    /// Log budget for requests refused at authentication: a scan or a
    /// misconfigured client cannot flood the log (and rotate real history away).
    pub(crate) auth_refusals: manifold_foundation::log_budget::LogBudget,
    pub(crate) next_request: AtomicU64,
    /// The admin listener, bound early by `Gateway::bind_admin` or by `serve`.
    pub(crate) admin: Mutex<Option<TcpListener>>,
    pub(crate) admin_addr: OnceLock<SocketAddr>,
    /// The MCP listener's address once `serve` has it (the configured one
    /// may say port 0).
    pub(crate) mcp_addr: OnceLock<SocketAddr>,
    /// Low bits of the start time, so request ids differ across restarts.
    pub(crate) started_at: u32,
    /// `[integrity]`: the pins and what is held now.
    pub(crate) integrity: integrity::Integrity,
    /// The operator's console: logins, recent calls, the last reload.
    pub(crate) console: console::ConsoleState,
    /// The local admin token, when `[admin]` names no credential (set when
    /// the admin listener is bound).
    pub(crate) local_admin: OnceLock<local_admin::LocalAdmin>,
    /// Turns for `search_tools` (`MAX_CONCURRENT_SEARCHES`).
    pub(crate) search_turns: Arc<tokio::sync::Semaphore>,
    /// Code mode: turns for scripts and the worker program (`[code]`).
    pub(crate) code: code::CodePool,
    /// `[discovery.semantic]`: set by [`Gateway::launch`] once the model is
    /// loaded (unset: lexical search, as without the section).
    pub(crate) semantic: OnceLock<Arc<semantic::Semantic>>,
}

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SessionEnd {
    /// The client sent DELETE.
    Deleted,
    /// Idle for longer than `limits.session_idle_timeout`.
    Idle,
    /// The stdio client closed its input (or initialized again).
    Closed,
}

impl Gateway {
    /// The configuration in force (a reload replaces it).
    pub fn config(&self) -> Arc<GatewayConfig> {
        self.live.load().config.clone()
    }
    pub(crate) fn cfg(&self) -> Arc<GatewayConfig> {
        self.live.load().config.clone()
    }
    /// What a reload swaps, as one consistent snapshot.
    pub(crate) fn live(&self) -> Arc<Live> {
        self.live.load_full()
    }
    /// The upstreams in force, in name order.
    pub fn upstreams(&self) -> Vec<Upstream> {
        self.live.load().upstreams.clone()
    }
    /// The upstream named `name`, if it is configured now.
    pub(crate) fn upstream(&self, name: &str) -> Option<Upstream> {
        self.live.load().by_name.get(name).cloned()
    }
    /// Every `[[endpoint]] naming = "original"` own-name collision in the
    /// catalogue now, as `<path>: <collision>` (`manifold serve` refuses to
    /// start with any).
    pub fn own_name_collisions(&self) -> Vec<String> {
        let base = self.catalog();
        self.live()
            .endpoints
            .all()
            .iter()
            .flat_map(|e| {
                e.own_name_collisions(&base)
                    .into_iter()
                    .map(move |c| format!("{}: {c}", e.path))
            })
            .collect()
    }
    pub fn catalog(&self) -> Arc<Catalog> {
        self.generation.load().catalog.clone()
    }
    /// The catalogue the endpoint at `path` holds (the default endpoint's is
    /// the whole catalog; before any caller's `[[policy]]`); `None` when no
    /// endpoint is served there.
    pub fn endpoint_catalog(&self, path: &str) -> Option<Arc<Catalog>> {
        let views = self.generation.load().views.clone();
        views.endpoints().at(path)?;
        Some(views.endpoint_catalog(path))
    }
    /// `[[policy]]`, compiled.
    pub fn policy(&self) -> Arc<manifold_policy::Policy> {
        self.live.load().policy.clone()
    }
    /// Tools whose arguments are not validated (`[validation] arguments`),
    /// sorted by name, and why: their `inputSchema` does not compile.
    pub fn unvalidated_tools(&self) -> Vec<(String, String)> {
        let v = self.generation.load().validators.clone();
        let mut out: Vec<(String, String)> = v
            .skipped()
            .map(|(n, why)| (n.to_string(), why.to_string()))
            .collect();
        out.sort();
        out
    }
    /// The MCP listener's address in force (`server.listen` at start).
    pub(crate) fn listening_on(&self) -> SocketAddr {
        self.started.server.listen
    }

    /// Forgets `principal`'s account at per-caller `upstream` — through its
    /// accounts (so the shared store forgets it too) when the upstream runs,
    /// else in this replica's store; whether there was one here.
    pub(crate) async fn forget_account(
        &self,
        upstream: &str,
        principal: &str,
    ) -> Result<bool, String> {
        if let Some(a) = self
            .upstream(upstream)
            .and_then(|u| self.tables.connects.accounts(&u))
        {
            return a.revoke(principal).await.map_err(|e| e.to_string());
        }
        let Some(store) = self
            .cfg()
            .credentials
            .as_ref()
            .map(manifold_credentials::AccountStore::new)
        else {
            return Ok(false);
        };
        let (u, p) = (upstream.to_string(), principal.to_string());
        tokio::task::spawn_blocking(move || store.remove(&u, &p))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())
    }

    /// Where browsers reach the MCP listener (links Manifold hands out):
    /// `[server] public_url`, else the listener's own address as started
    /// (`None` for a wildcard address; validation requires `public_url` then
    /// whenever a link can be made).
    pub(crate) fn public_base(&self) -> Option<String> {
        // `public_url` as reloaded; the address and TLS as started.
        if let Some(u) = &self.cfg().server.public_url {
            return Some(u.clone());
        }
        let listen = self
            .mcp_addr
            .get()
            .copied()
            .unwrap_or(self.started.server.listen);
        self.started.server.listener_base(listen)
    }
    /// The admin listener's address once bound.
    pub fn admin_addr(&self) -> Option<SocketAddr> {
        self.admin_addr.get().copied()
    }

    /// `ConsoleState::login_attempt` under `[admin] failed_logins_per_minute`.
    pub(crate) fn admin_attempt(&self, peer: std::net::IpAddr) -> Result<(), std::time::Duration> {
        let limit = self
            .cfg()
            .admin
            .as_ref()
            .map_or(console::LOGIN_FAILURES_PER_WINDOW, |a| {
                a.failed_logins_per_minute
            });
        self.console.login_attempt(peer, limit)
    }

    /// A fresh request id (16 hex digits): in logs and audit records.
    /// The program code mode starts for each script, and its first
    /// arguments (default: this executable's `code-worker`). Tests, whose
    /// executable is not `manifold`, name the built binary.
    pub fn set_code_worker(&self, program: std::path::PathBuf, args: Vec<std::ffi::OsString>) {
        self.code.set_program(code::WorkerProgram { program, args });
    }

    pub(crate) fn request_id(&self) -> String {
        let n = self.next_request.fetch_add(1, Ordering::Relaxed);
        request_id(self.started_at, n)
    }

    /// Ends a session: it leaves the table, its calls stop waiting on it, its
    /// resource subscriptions end (upstream too where it was the last), and the
    /// upstreams' log level follows the sessions left. False if it was not there.
    pub(crate) fn end_session(self: &Arc<Self>, id: &str, why: SessionEnd) -> bool {
        let Some(session) = self.tables.sessions.remove(id) else {
            return false;
        };
        if let Some(expires) = session.expires {
            self.tables
                .sessions
                .remember_ended(id, expires, manifold_foundation::time::unix_now());
        }
        self.unsubscribe_all(&session.id);
        self.log_levels_after_sessions_ended();
        tracing::info!(session = %session.short_id(), client = %session.client_info,
            version = %session.protocol_version, reason = ?why, "session ended");
        true
    }

    fn naming_policy(&self) -> NamingPolicy {
        let n = &self.cfg().naming;
        NamingPolicy {
            separator: n.separator.clone(),
            prefix_mode: naming::prefix_mode(n.prefix_mode),
            max_length: n.max_length,
            configured_upstreams: self.cfg().upstreams.len(),
            uris: self.live().uris.as_ref().clone(),
        }
    }

    /// Rebuilds the merged view from every ready upstream; returns the
    /// `list_changed` notifications it calls for (lists whose items changed),
    /// with the views before and after (each caller hears only of a change to
    /// its own view).
    pub(crate) fn rebuild_catalog(&self) -> Rebuilt {
        use manifold_protocol::methods as m;
        // One build at a time, each from the `Live` in force when it starts: a
        // build from an older configuration cannot land after a newer one.
        let _one_at_a_time = self.rebuilding.lock();
        let live = self.live();
        let inputs: Vec<UpstreamInput> = live
            .upstreams
            .iter()
            .filter_map(|u| {
                u.lists().map(|lists| UpstreamInput {
                    name: u.name().clone(),
                    prefix: u.config().prefix.clone(),
                    lists,
                    filter: live.filters.get(u.name()).cloned().unwrap_or_default(),
                    overrides: live.overrides.get(u.name()).cloned().unwrap_or_default(),
                })
            })
            .collect();
        let (naming, page_size) = (self.naming_policy(), live.config.server.page_size);
        let inputs = self.judge_inputs(inputs, &live.config.integrity, &naming, page_size);
        let new = Catalog::build(&inputs, &naming, page_size);
        self.metrics.rebuilt();
        for lo in new.tools.left_out().iter().chain(new.prompts.left_out()) {
            if matches!(lo.reason, manifold_catalog::LeftOutReason::InvalidHeader(_)) {
                tracing::warn!(upstream = %lo.upstream, name = %manifold_foundation::text::printable(&lo.original), reason = %lo.reason, "item left out of the merged list");
            }
        }
        let checks = manifold_policy::Checks {
            arguments: live.config.validate_arguments,
            output: live.config.validate_output != manifold_config::OutputMode::Off,
        };
        let v = manifold_policy::ArgumentValidators::build(
            new.tools
                .entries()
                .iter()
                .map(|e| (e.exposed.as_str(), &e.json()[..])),
            checks,
            &self.generation.load().validators,
        );
        for (tool, why) in v.skipped() {
            tracing::debug!(%tool, %why, "arguments of this tool are not validated");
        }
        let new = Arc::new(new);
        let views = Arc::new(views::Views::new(
            new.clone(),
            live.policy.clone(),
            live.endpoints.clone(),
        ));
        let old = self.generation.swap(Arc::new(generation::Generation {
            catalog: new.clone(),
            views: views.clone(),
            validators: Arc::new(v),
        }));
        let (old, old_views) = (old.catalog.clone(), old.views.clone());
        let changed = [
            m::NOTIF_TOOLS_LIST_CHANGED,
            m::NOTIF_PROMPTS_LIST_CHANGED,
            m::NOTIF_RESOURCES_LIST_CHANGED,
        ]
        .into_iter()
        // New rules may change a view without changing the catalogue: then
        // every list is compared view by view (`announce`).
        .filter(|method| {
            !Arc::ptr_eq(old_views.policy(), views.policy())
                || !Arc::ptr_eq(old_views.endpoints(), views.endpoints())
                || views::lists_differ(&old, &new, method)
        })
        .collect();
        Rebuilt {
            changed,
            old: old_views,
            new: views,
        }
    }
}

impl Gateway {
    /// The metrics in the text format, the state gauges read now.
    pub(crate) fn metrics_text(&self) -> String {
        let upstreams = self.upstreams();
        let catalog = self.catalog();
        self.metrics.render(metrics::Now {
            upstreams: &upstreams,
            sessions: self.tables.sessions.len(),
            catalog: &catalog,
            bus_rejected: self
                .cluster
                .as_ref()
                .map(|c| c.bus.rejected())
                .unwrap_or_default(),
            audit: self.auditor.as_ref().map(|a| a.stats()),
            semantic_fallbacks: self.semantic.get().map(|s| s.fallbacks()),
        })
    }

    /// The upstream that owns `uri`: the one whose list holds it, else the one
    /// a result linked it from (`learned`), else the only upstream serving
    /// resources.
    pub(crate) fn owner_of(&self, uri: &str) -> Option<Upstream> {
        // A namespaced URI names its upstream, listed or not; one of a
        // namespaced scheme that names none is no one's (an upstream's own
        // spelling must not reach it by a guess).
        let live = self.live();
        if let Some((upstream, _)) = live.uris.resolve(uri) {
            return self.upstream(upstream);
        }
        if live.uris.claims(uri) {
            return None;
        }
        let by_catalog = self.generation.load().catalog.resources.owner(uri).cloned();
        let name = by_catalog.or_else(|| self.tables.learned.owner(uri));
        if let Some(name) = name {
            return self.upstream(&name);
        }
        let mut serving = self.upstreams().into_iter().filter(|u| {
            u.status()
                .facts
                .is_some_and(|f| f.capabilities.contains_key("resources"))
        });
        match (serving.next(), serving.next()) {
            (Some(only), None) => Some(only.clone()),
            _ => None,
        }
    }
}

impl Gateway {
    /// Sends each changed list's `list_changed` to the sessions and listen
    /// streams whose own view of it changed: on their own endpoint, under
    /// their own rules. Views are compared once per distinct (endpoint, key),
    /// not per client.
    pub(crate) fn announce(&self, rebuilt: &Rebuilt) {
        for &method in &rebuilt.changed {
            let note = Bytes::from(manifold_protocol::jsonrpc::notification_bytes(method, None));
            // Keyed by the endpoint and the viewer's key under the old and the
            // new policy (a reload may change the rules and the endpoints).
            type Keys = (Arc<str>, Option<ViewKey>, Option<ViewKey>);
            let mut memo: HashMap<Keys, bool> = HashMap::new();
            let mut sees = |endpoint: &Arc<str>, viewer: Option<&Identity>| {
                let old = views::key_of(rebuilt.old.policy(), viewer);
                let new = views::key_of(rebuilt.new.policy(), viewer);
                *memo
                    .entry((endpoint.clone(), old.clone(), new.clone()))
                    .or_insert_with(|| {
                        let a = rebuilt.old.get(endpoint, old.as_ref());
                        let b = rebuilt.new.get(endpoint, new.as_ref());
                        views::lists_differ(&a, &b, method)
                    })
            };
            let sent = self
                .tables
                .sessions
                .broadcast(&note, &mut |s| sees(&s.endpoint, s.viewer().as_deref()))
                + self.tables.listeners.list_changed(method, &mut sees);
            self.metrics.list_changed_sent(method, sent);
            tracing::info!(%method, sessions = sent, "merged list changed");
        }
    }

    /// What `viewer` may see and use on the endpoint at `endpoint` right now
    /// (`None`: the local operator).
    pub(crate) fn access(&self, endpoint: &str, viewer: Option<&Identity>) -> Access {
        let generation = self.generation.load();
        Access::of(&generation.views, &generation.validators, endpoint, viewer)
    }

    /// The default endpoint's path (`[server] path` in force).
    pub(crate) fn default_endpoint(&self) -> Arc<str> {
        self.live.load().endpoints.default_endpoint().path.clone()
    }
}

/// What a catalogue rebuild changed.
pub(crate) struct Rebuilt {
    /// The `list_changed` methods of the lists that changed for someone.
    pub changed: Vec<&'static str>,
    pub old: Arc<views::Views>,
    pub new: Arc<views::Views>,
}

/// `format!("{started_at:08x}{n:08x}")`, without the formatting machinery
/// (a tenth of the front door's own work on a relayed call).
fn request_id(started_at: u32, n: u64) -> String {
    let mut s = String::with_capacity(24);
    push_hex(&mut s, u64::from(started_at));
    push_hex(&mut s, n);
    s
}

/// Lower-case hex of `v`, at least 8 digits (as `{:08x}`).
fn push_hex(s: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let digits = (64 - v.leading_zeros()).div_ceil(4).max(8);
    for i in (0..digits).rev() {
        s.push(char::from(DIGITS[((v >> (4 * i)) & 0xf) as usize]));
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn request_ids_are_the_two_counters_in_hex() {
        for (t, n) in [
            (0, 0),
            (0x6745_2301, 1),
            (u32::MAX, 0xffff_ffff),
            (17, 0x1_0000_0000),
            (1, u64::MAX),
        ] {
            assert_eq!(super::request_id(t, n), format!("{t:08x}{n:08x}"));
        }
    }
}
