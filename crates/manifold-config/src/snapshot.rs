//! The validated configuration: what the rest of Manifold reads. Every value here
//! has passed validation (`validate`); the file model it comes from is `model`.
//!
//! Invariants: immutable once built (shared behind an `Arc`); durations parsed,
//! `${VAR}` expanded, names checked.
//!
//! Not here: parsing or checking (`validate`), defaults (`model`).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

/// The validated configuration. Immutable; shared behind an `Arc`.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub server: ServerConfig,
    pub naming: NamingConfig,
    pub limits: LimitsConfig,
    /// The audit log, when `[audit]` names a sink.
    pub audit: Option<crate::audit::AuditSettings>,
    /// Client authentication (`[auth]`); `None`: every client is anonymous.
    pub auth: Option<crate::auth::AuthSettings>,
    /// The admin listener (`[admin]`).
    pub admin: Option<crate::admin::AdminSettings>,
    /// Tools with their own latency series (`[metrics] max_tool_series`).
    pub max_tool_series: usize,
    /// `[validation] arguments`.
    pub validate_arguments: bool,
    /// `[[rate_limit]]`, in file order.
    pub rate_limits: Vec<crate::limits::RateLimitRule>,
    /// `[[policy]]`, in file order (empty: everyone sees everything).
    pub policy: Vec<crate::policy::PolicyRule>,
    /// `[confirm]`.
    pub confirm: crate::policy::ConfirmSection,
    /// `[tracing]`: OTLP export of traces (and, with `[audit] otlp`, audit
    /// records); `None`: off.
    pub tracing: Option<crate::telemetry::TracingSettings>,
    /// `[cluster]`: session ids sealed with a shared key; `None`: random ids,
    /// valid on this process only.
    pub cluster: Option<crate::cluster::ClusterSettings>,
    /// `[credentials]`: where upstream tokens are kept.
    pub credentials: Option<crate::credentials::StoreSettings>,
    /// `[integrity]` (its defaults without the section).
    pub integrity: crate::integrity::IntegritySettings,
    /// `[stdio] principal`, when set.
    pub stdio_principal: Option<String>,
    /// The file after defaults and environment overrides, unexpanded, every
    /// secret redacted (`/config`); `null` when not loaded from a file.
    pub effective: serde_json::Value,
    /// `[validation] output`.
    pub validate_output: crate::model::OutputMode,
    /// `[metrics] principal_label` and `max_principal_series`.
    pub principal_label: crate::model::PrincipalLabel,
    pub max_principal_series: usize,
    /// Sorted by name: the order in which collisions are resolved.
    pub upstreams: Vec<UpstreamConfig>,
}

#[derive(Debug, Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub path: String,
    pub page_size: usize,
    pub allowed_origins: Vec<String>,
    pub allowed_hosts: Vec<String>,
    /// `server.allow_unauthenticated`.
    pub allow_unauthenticated: bool,
    /// `server.watch_config`: reload when the file changes.
    pub watch_config: bool,
    /// `server.shutdown_grace`.
    pub shutdown_grace: Duration,
    /// `server.request_state_key`, expanded (`None`: generate one at start).
    pub request_state_key: Option<String>,
    /// `[server.tls]`: HTTPS on the listener.
    pub tls: Option<TlsConfig>,
}

/// `[server.tls]`, validated: the files exist when the configuration is loaded
/// (their contents are parsed when the listener starts, and again when they
/// change).
#[derive(Debug, Clone, PartialEq)]
pub struct TlsConfig {
    pub cert: std::path::PathBuf,
    pub key: std::path::PathBuf,
    pub client_ca: Option<std::path::PathBuf>,
    /// Whether a client certificate is required (only with `client_ca`).
    pub require_client_cert: bool,
    /// Certificate revocation lists (PEM) client certificates are checked
    /// against (only with `client_ca`).
    pub client_crl: Vec<std::path::PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixMode {
    Always,
    Multiple,
    Never,
}

#[derive(Debug, Clone)]
pub struct NamingConfig {
    pub separator: String,
    pub prefix_mode: PrefixMode,
    pub max_length: usize,
}

#[derive(Debug, Clone)]
pub struct LimitsConfig {
    pub max_body_bytes: usize,
    pub max_message_bytes: usize,
    pub max_pending_per_upstream: usize,
    pub max_sessions: usize,
    pub session_idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub stream_queue: usize,
    pub held_call_ttl: Duration,
    pub max_held_calls: usize,
    /// Held calls and open `[confirm]` questions one principal may have.
    pub max_held_calls_per_principal: usize,
    pub max_connections: usize,
    pub header_read_timeout: Duration,
    pub body_read_timeout: Duration,
    pub stream_write_timeout: Duration,
    pub max_client_info_bytes: usize,
    pub max_sessions_per_peer: usize,
    pub max_subscriptions_per_session: usize,
    pub max_listens: usize,
    pub max_calls_per_session: usize,
    pub max_list_items: usize,
}

#[derive(Debug, Clone)]
pub struct UpstreamConfig {
    pub name: String,
    pub transport: Transport,
    pub timeout: Duration,
    /// Liveness pings (`ping_interval`); `None` when turned off.
    pub ping_interval: Option<Duration>,
    pub required: bool,
    /// The prefix used in exposed names (the name unless `prefix` is set).
    pub prefix: String,
    /// `tools.allow` / `tools.deny` globs.
    pub tools: Filter,
    /// `prompts.allow` / `prompts.deny` globs.
    pub prompts: Filter,
    /// The protocol era spoken to this upstream.
    pub protocol: UpstreamProtocol,
    /// `overrides.<tool>`, by the upstream's own tool name.
    pub overrides: std::collections::BTreeMap<String, crate::overrides::ToolOverride>,
}

/// `upstreams.<name>.protocol`: which era Manifold speaks to an upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum UpstreamProtocol {
    /// Probe with `server/discover`; any answer that is not a 2026-07-28 discover
    /// result falls back to `initialize`.
    #[default]
    Auto,
    /// `initialize` only (2025-11-25 and older).
    Legacy,
    /// 2026-07-28 only: a failed probe is a failed start.
    Modern,
}

/// Validated `allow` / `deny` globs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    pub allow: Vec<String>,
    pub deny: Vec<String>,
}

// One per upstream, built once per configuration and never moved on a hot
// path: boxing the HTTP side's OAuth client would only complicate every match.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
        /// Pass the gateway's whole environment, not only `PATH`, `HOME`, `LANG`.
        inherit_env: bool,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// `auth`: static headers, or an OAuth client.
        auth: crate::credentials::UpstreamAuth,
        /// `ca`, `client_cert`, `client_key`.
        tls: UpstreamTls,
    },
}

/// TLS towards one HTTP upstream, beyond the built-in web roots.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UpstreamTls {
    /// More CA certificates to trust (PEM).
    pub ca: Option<std::path::PathBuf>,
    /// A client certificate chain and its key (PEM), presented to the upstream.
    pub client_cert: Option<(std::path::PathBuf, std::path::PathBuf)>,
}

impl Transport {
    pub fn kind(&self) -> &'static str {
        match self {
            Transport::Stdio { .. } => "stdio",
            Transport::Http { .. } => "http",
        }
    }
}

impl GatewayConfig {
    /// Whether `server.listen` may be served as configured: a listener that is
    /// not on a loopback address needs authentication (`[auth]` without
    /// `allow_anonymous`), or the explicit `server.allow_unauthenticated = true`,
    /// and a list of the hosts it
    /// answers to (`server.allowed_hosts`; DNS-rebinding protection). The message
    /// says what to set.
    pub fn exposure_problem(&self) -> Option<String> {
        self.exposure_problem_in_force(self.server.listen, self.server.tls.as_ref())
    }

    /// [`GatewayConfig::exposure_problem`] for a configuration a running
    /// gateway reloads: its listener keeps the address (`listen`) and the
    /// `[server.tls]` (`tls`) it started with — a reload cannot change them —
    /// so those are what decide, never this file's. (A reload that drops
    /// `[auth]` while adding `client_ca` would otherwise pass and leave the
    /// listener open until a restart.)
    pub fn exposure_problem_in_force(
        &self,
        listen: SocketAddr,
        tls: Option<&TlsConfig>,
    ) -> Option<String> {
        let s = &self.server;
        if listen.ip().is_loopback() {
            return None;
        }
        let in_force = if listen != s.listen || tls != s.tls.as_ref() {
            " (the listener's address and [server.tls] in force: a reload cannot change them)"
        } else {
            ""
        };
        let authenticated = self.auth.as_ref().is_some_and(|a| !a.allow_anonymous)
            || tls.is_some_and(|t| t.require_client_cert);
        if !s.allow_unauthenticated && !authenticated {
            return Some(format!(
                "server.listen `{listen}`{in_force} is not a loopback address and no authentication is configured: \
                 anyone who could reach the port would act with the upstreams' credentials. \
                 Listen on 127.0.0.1, configure [auth] (or [server.tls] client_ca), or set `allow_unauthenticated = true` in [server] to serve it anyway",
            ));
        }
        if s.allowed_hosts.is_empty() {
            return Some(format!(
                "server.listen `{listen}`{in_force} is not a loopback address, so server.allowed_hosts must list the \
                 host names clients use (DNS-rebinding protection), e.g. allowed_hosts = [\"mcp.example.com\"] \
                 (\"*\" accepts any host)",
            ));
        }
        None
    }
}
