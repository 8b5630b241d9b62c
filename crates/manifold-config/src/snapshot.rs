//! The validated configuration: what the rest of Manifold reads. Every value here
//! has passed validation (each section's own file; `validate` puts them
//! together); the file model it comes from is `file`.
//!
//! What a reload cannot change is one table in `fixed`
//! ([`GatewayConfig::fixed_at_start`]).
//!
//! Invariants: immutable once built (shared behind an `Arc`); durations parsed,
//! `${VAR}` expanded, names checked; settings are compared by value, never by
//! their debug text.
//!
//! Not here: parsing or checking (the sections, `validate`).

use std::net::SocketAddr;

use crate::server::TlsConfig;

/// The validated configuration. Immutable; shared behind an `Arc`.
#[derive(Debug, Clone)]
pub struct GatewayConfig {
    pub server: crate::server::ServerConfig,
    pub naming: crate::naming::NamingConfig,
    pub limits: crate::limits::LimitsConfig,
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
    pub rate_limits: Vec<crate::rate_limit::RateLimitRule>,
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
    pub validate_output: crate::validation::OutputMode,
    /// `[metrics] principal_label` and `max_principal_series`.
    pub principal_label: crate::metrics::PrincipalLabel,
    pub max_principal_series: usize,
    /// Sorted by name: the order in which collisions are resolved.
    pub upstreams: Vec<crate::upstreams::UpstreamConfig>,
    /// `[[endpoint]]`, in file order (the default endpoint is `[server]`'s).
    pub endpoints: Vec<crate::endpoint::EndpointConfig>,
    /// `[code]` (its defaults without the section).
    pub code: crate::code::CodeConfig,
    /// `[discovery.semantic]` (`None`: lexical search only).
    pub semantic: Option<crate::semantic::SemanticConfig>,
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
