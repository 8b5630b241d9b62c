//! `gateway.toml`: the file model, its defaults, loading (TOML, then `MANIFOLD_`
//! environment overrides through figment) and validation into an immutable
//! [`GatewayConfig`] snapshot that the rest of Manifold reads. One file per
//! section: its keys and defaults, its validated form, its validation, and
//! what a reload cannot change (`FIXED_AT_START`, read by
//! [`GatewayConfig::fixed_at_start`]).
//!
//! Invariants: every struct denies unknown keys; every default is a named constant
//! documented in `docs/configuration.md` and the README; a [`GatewayConfig`] that
//! exists has been fully validated (names, URLs, durations, `${VAR}` expansion).
//!
//! Not here: watching the file for reloads, and anything that opens a socket or
//! spawns a process.

pub mod accounts;
pub mod admin;
pub mod audit;
pub mod auth;
pub mod cluster;
pub mod code;
pub mod credentials;
pub mod effective;
pub mod endpoint;
mod expand;
mod file;
mod fixed;
pub mod integrity;
pub mod limits;
mod load;
pub mod metrics;
pub mod naming;
pub mod overrides;
pub mod policy;
pub mod principals;
pub mod rate_limit;
pub mod resilience;
pub mod semantic;
pub mod server;
mod snapshot;
pub mod stdio;
pub mod telemetry;
pub mod upstreams;
mod validate;
pub mod validation;

pub use admin::{AdminSection, AdminSettings, AdminTokenSection};
pub use audit::AuditSection;
pub use audit::{AuditSettings, Fsync, InvalidAuditSettings, OnFailure};
pub use auth::{ApiKey, AuthSettings, Introspection, JwtProvider};
pub use endpoint::{DiscoveryMode, DiscoverySettings, EndpointConfig, EndpointNaming};
pub use expand::expand;
pub use file::FileConfig;
pub use integrity::{IntegrityMode, IntegritySettings, NewTools};
pub use limits::*;
pub use load::{load, load_str, ConfigError, ENV_PREFIX, ENV_SECTIONS, ENV_SPLIT};
pub use metrics::*;
pub use naming::*;
pub use overrides::ToolOverride;
pub use policy::{AllowDeny, ConfirmSection, PolicyRule, WithoutElicitation};
pub use principals::IdentitySources;
pub use rate_limit::{BucketKey, RateLimitRule};
pub use resilience::{BreakerPolicy, RetryPolicy};
pub use server::*;
pub use snapshot::GatewayConfig;
pub use stdio::StdioSection;
pub use upstreams::*;
pub use validation::*;

#[cfg(test)]
mod tests;
