//! The file model: exactly the top-level sections `gateway.toml` accepts.
//! Each section's keys, defaults, validation and what a reload cannot change
//! are in its own file (`server`, `naming`, `limits`, `upstreams`, `audit`,
//! `auth`, `admin`, `metrics`, `validation`, `rate_limit`, `policy`, `stdio`,
//! `telemetry`, `cluster`, `credentials`, `endpoint`, `code`).
//!
//! Invariants: every section denies unknown keys; a missing section is its
//! default (or off, for an `Option`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::audit::AuditSection;
use crate::limits::LimitsSection;
use crate::metrics::MetricsSection;
use crate::naming::NamingSection;
use crate::server::ServerSection;
use crate::stdio::StdioSection;
use crate::upstreams::UpstreamSection;
use crate::validation::ValidationSection;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct FileConfig {
    #[serde(default)]
    pub server: ServerSection,
    #[serde(default)]
    pub naming: NamingSection,
    #[serde(default)]
    pub limits: LimitsSection,
    /// Upstream MCP servers, keyed by name (`^[A-Za-z0-9_-]{1,32}$`).
    #[serde(default)]
    pub upstreams: BTreeMap<String, UpstreamSection>,
    /// The audit log; off without this section. The section must name a sink
    /// (`path`, `stdout`, or both).
    #[serde(default)]
    pub audit: Option<AuditSection>,
    /// Client authentication; off (every client is `anonymous`) without it.
    #[serde(default)]
    pub auth: Option<crate::auth::AuthSection>,
    /// The admin listener (probes and metrics; control endpoints with
    /// credentials); off unless set.
    #[serde(default)]
    pub admin: Option<crate::admin::AdminSection>,
    #[serde(default)]
    pub metrics: MetricsSection,
    #[serde(default)]
    pub validation: ValidationSection,
    /// Rate limits and concurrency caps on `tools/call`, per caller.
    #[serde(default)]
    pub rate_limit: Vec<crate::rate_limit::RateLimitSection>,
    /// Who sees and may use which tools, prompts and resources; without any
    /// rule every admitted caller sees everything.
    #[serde(default)]
    pub policy: Vec<crate::policy::PolicySection>,
    /// Calls a human confirms (through the client) before they are forwarded.
    #[serde(default)]
    pub confirm: crate::policy::ConfirmSection,
    /// `manifold stdio`, the gateway as a stdio MCP server.
    #[serde(default)]
    pub stdio: StdioSection,
    /// OpenTelemetry traces over OTLP; off unless the section is present.
    #[serde(default)]
    pub tracing: Option<crate::telemetry::TracingSection>,
    /// What replicas share (sealed session ids); off unless present.
    #[serde(default)]
    pub cluster: Option<crate::cluster::ClusterSection>,
    /// Where upstream tokens are kept at rest (`oauth` upstreams need it).
    #[serde(default)]
    pub credentials: Option<crate::credentials::CredentialsSection>,
    /// Tool integrity: approved fingerprints and what a change does (its
    /// defaults apply without the section: `mode = "warn"`).
    #[serde(default)]
    pub integrity: crate::integrity::IntegritySection,
    /// Virtual endpoints: more MCP endpoints on the listener, each a part of
    /// the catalogue (the `[server] path` endpoint holds everything).
    #[serde(default)]
    pub endpoint: Vec<crate::endpoint::EndpointSection>,
    /// Code mode's limits (`discovery = "code"`); its defaults apply without
    /// the section.
    #[serde(default)]
    pub code: crate::code::CodeSection,
    /// Discovery's settings shared by every search and code endpoint
    /// (`[discovery.semantic]`).
    #[serde(default)]
    pub discovery: crate::semantic::DiscoverySection,
}
