//! `[validation]`: what the gateway checks about a tool call — its arguments
//! against the tool's `inputSchema` (before forwarding) and its result's
//! `structuredContent` against its `outputSchema`.
//!
//! A reload may change both (the validators are rebuilt with the catalogue).
//!
//! Not here: the validators (manifold-policy `validation`), where a call is
//! checked (manifold-server's call chain: `validate`, `check_output`).

use serde::{Deserialize, Serialize};

/// `[validation]`: what the gateway checks before forwarding.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct ValidationSection {
    /// `tools/call` arguments against the tool's `inputSchema`: `"enforce"`
    /// (default) or `"off"`.
    #[serde(default)]
    pub arguments: ArgumentsMode,
    /// A tool's `structuredContent` against its `outputSchema`: `"warn"`
    /// (default: logged), `"enforce"` (the client gets a tool error) or `"off"`.
    #[serde(default)]
    pub output: OutputMode,
}

/// `[validation] output`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum OutputMode {
    Off,
    #[default]
    Warn,
    Enforce,
}

/// `[validation] arguments`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum ArgumentsMode {
    #[default]
    Enforce,
    Off,
}
