//! What a build takes: each upstream's contribution ([`UpstreamInput`]: its
//! lists, prefix, filter and overrides) and the naming policy in force
//! ([`NamingPolicy`], [`PrefixMode`]).
//!
//! Invariants: plain values, shared behind `Arc`s; nothing here merges.
//!
//! Not here: the merge (`list`, `resources`, `skills`, `catalog`).

use std::sync::Arc;

use crate::filter::ItemFilter;
use crate::namespace;
use crate::overrides::Overrides;

/// How prefixes are applied: `[naming] prefix_mode` (manifold-config parses
/// the key into this type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixMode {
    Always,
    /// Prefix only when more than one upstream is configured.
    Multiple,
    Never,
}

#[derive(Debug, Clone)]
pub struct NamingPolicy {
    pub separator: String,
    pub prefix_mode: PrefixMode,
    pub max_length: usize,
    /// Configured upstreams (not connected ones): `Multiple` keys off this so names do
    /// not flip when one upstream is down.
    pub configured_upstreams: usize,
    /// Which resource URIs are exposed under their upstream (default: none).
    pub uris: namespace::UriNamespaces,
}

impl NamingPolicy {
    /// Whether exposed names carry their upstream's prefix.
    pub fn use_prefix(&self) -> bool {
        match self.prefix_mode {
            PrefixMode::Always => true,
            PrefixMode::Never => false,
            PrefixMode::Multiple => self.configured_upstreams > 1,
        }
    }
}

/// One upstream's current lists, as fetched (all pages).
pub use manifold_protocol::lists::ListSnapshot as UpstreamLists;

/// An upstream's contribution to a build.
#[derive(Debug, Clone)]
pub struct UpstreamInput {
    pub name: Arc<str>,
    /// The prefix used in exposed names (the upstream name unless aliased).
    pub prefix: String,
    pub lists: Arc<UpstreamLists>,
    /// Which tools and prompts the operator hides (`tools.allow` / `tools.deny`).
    pub filter: Arc<ItemFilter>,
    /// The operator's per-tool overrides (by the upstream's own tool name).
    pub overrides: Arc<Overrides>,
}
