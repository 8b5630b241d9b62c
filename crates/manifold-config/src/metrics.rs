//! `[metrics]`: bounds on Prometheus series — tools with their own latency
//! series, whether (and how) requests are counted by principal.
//!
//! A reload cannot change them ([`FIXED_AT_START`]: the registry's label sets
//! were built with them).
//!
//! Not here: the metrics (manifold-server `state/metrics.rs`).

use serde::{Deserialize, Serialize};

/// Default `[metrics] max_tool_series`: tools with their own latency series; calls
/// to further tools are counted under `tool="other"`, so a catalog of thousands of
/// tools cannot blow up the metrics.
pub const DEFAULT_MAX_TOOL_SERIES: usize = 500;

/// Default `[metrics] max_principal_series`.
pub const DEFAULT_MAX_PRINCIPAL_SERIES: usize = 100;

/// `[metrics]`: bounds on Prometheus series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MetricsSection {
    /// Tools with their own latency series (`DEFAULT_MAX_TOOL_SERIES`).
    #[serde(default = "default_max_tool_series")]
    pub max_tool_series: usize,
    /// Count requests by principal too (`manifold_requests_by_principal_total`):
    /// `"none"` (default), `"group"` (the caller's first group), `"subject"`.
    #[serde(default)]
    pub principal_label: PrincipalLabel,
    /// Principals with their own series (`DEFAULT_MAX_PRINCIPAL_SERIES`); the rest
    /// count under `principal="other"`.
    #[serde(default = "default_max_principal_series")]
    pub max_principal_series: usize,
}

/// `[metrics] principal_label`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum PrincipalLabel {
    #[default]
    None,
    Group,
    Subject,
}

impl Default for MetricsSection {
    fn default() -> Self {
        MetricsSection {
            max_tool_series: DEFAULT_MAX_TOOL_SERIES,
            principal_label: PrincipalLabel::None,
            max_principal_series: DEFAULT_MAX_PRINCIPAL_SERIES,
        }
    }
}

fn default_max_tool_series() -> usize {
    DEFAULT_MAX_TOOL_SERIES
}
fn default_max_principal_series() -> usize {
    DEFAULT_MAX_PRINCIPAL_SERIES
}
