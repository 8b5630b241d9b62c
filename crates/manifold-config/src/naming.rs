//! `[naming]`: how upstream names become exposed names — the separator, when
//! to prefix ([`PrefixMode`]), the longest name —
//! and which resource URIs are exposed under their upstream
//! ([`ResourceNaming`], see manifold-catalog `namespace`).
//!
//! A reload may change all of it (the catalogue is rebuilt).
//!
//! Invariants: a validated separator keeps exposed names valid for every LLM
//! provider (`^[A-Za-z0-9_-]`), and the longest name is within 16..=128.
//!
//! Not here: naming itself (manifold-catalog, whose own types the server
//! converts these into: config does not depend on the catalogue).

use serde::{Deserialize, Serialize};

/// `[naming] prefix_mode` validated: when exposed names carry their
/// upstream's prefix. (manifold-catalog has the type that gives it meaning;
/// the server converts, as it does for overrides and filters.)
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefixMode {
    /// `always`: every name is prefixed.
    Always,
    /// `multiple`: prefixed only when more than one upstream is configured.
    Multiple,
    /// `never`: names as the upstreams give them (collisions are left out).
    Never,
}

/// `[naming] resources` validated: which resource URIs are exposed under
/// their upstream (see manifold-catalog `namespace`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResourceNaming {
    /// `host-schemes`: `ui://`, `skill://` and `namespaced_schemes`.
    #[default]
    HostSchemes,
    /// `always`: every URI that has an authority part.
    Always,
    /// `never`: URIs are merged as listed, and collide.
    Never,
}

/// Default `[naming] separator`.
pub const DEFAULT_SEPARATOR: &str = "__";
/// Default `[naming] max_length`: the limit OpenAI and Anthropic enforce on tool names.
pub const DEFAULT_MAX_NAME_LENGTH: usize = 64;

/// `[naming]`: how upstream names become exposed names.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct NamingSection {
    /// Between the upstream name and the tool name (`DEFAULT_SEPARATOR`).
    #[serde(default = "default_separator")]
    pub separator: String,
    /// `always` (default), `multiple` (prefix only with several upstreams), `never`.
    #[serde(default = "default_prefix_mode")]
    pub prefix_mode: String,
    /// Longest exposed name (`DEFAULT_MAX_NAME_LENGTH`); longer ones are shortened.
    #[serde(default = "default_max_length")]
    pub max_length: usize,
    /// Which resource URIs are exposed under their upstream:
    /// `host-schemes` (default: `ui://`, `skill://` and `namespaced_schemes`),
    /// `always` (every URI with an authority part), `never`.
    #[serde(default = "default_resources")]
    pub resources: String,
    /// More schemes namespaced under `resources = "host-schemes"`, e.g.
    /// `["demo"]` (without `:`).
    #[serde(default)]
    pub namespaced_schemes: Vec<String>,
    /// A `tools/call` of a name that is no exposed name goes to the one tool
    /// of the caller's view whose upstream calls it so (an MCP App calls its
    /// server's tools by their own names); several such tools: refused,
    /// naming them. Default `DEFAULT_RESOLVE_ORIGINAL`.
    #[serde(default = "default_resolve_original")]
    pub resolve_original: bool,
}

/// Default `[naming] resolve_original`.
pub const DEFAULT_RESOLVE_ORIGINAL: bool = true;

fn default_resolve_original() -> bool {
    DEFAULT_RESOLVE_ORIGINAL
}

impl Default for NamingSection {
    fn default() -> Self {
        NamingSection {
            separator: default_separator(),
            prefix_mode: default_prefix_mode(),
            max_length: DEFAULT_MAX_NAME_LENGTH,
            resources: default_resources(),
            namespaced_schemes: Vec::new(),
            resolve_original: DEFAULT_RESOLVE_ORIGINAL,
        }
    }
}

#[derive(Debug, Clone)]
pub struct NamingConfig {
    pub separator: String,
    pub prefix_mode: PrefixMode,
    pub max_length: usize,
    pub resources: ResourceNaming,
    /// Lower case, without `:`.
    pub namespaced_schemes: Vec<String>,
    pub resolve_original: bool,
}

/// `[naming]` validated.
pub(crate) fn validate(n: NamingSection) -> Result<NamingConfig, String> {
    let sep = n.separator;
    if sep.is_empty()
        || sep.len() > 8
        || !sep
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(format!(
            "key `naming.separator`: `{sep}` must be 1 to 8 characters from [A-Za-z0-9_-] so exposed names stay valid for every LLM provider"
        ));
    }
    let prefix_mode = match n.prefix_mode.as_str() {
        "always" => PrefixMode::Always,
        "multiple" => PrefixMode::Multiple,
        "never" => PrefixMode::Never,
        other => {
            return Err(format!(
            "key `naming.prefix_mode`: `{other}` is not one of \"always\", \"multiple\", \"never\""
        ))
        }
    };
    let max_length = n.max_length;
    if !(16..=128).contains(&max_length) {
        return Err(format!(
            "key `naming.max_length`: {max_length} is outside 16..=128"
        ));
    }
    let resources = match n.resources.as_str() {
        "host-schemes" => ResourceNaming::HostSchemes,
        "always" => ResourceNaming::Always,
        "never" => ResourceNaming::Never,
        other => {
            return Err(format!(
                "key `naming.resources`: `{other}` is not one of \"host-schemes\", \"always\", \"never\""
            ))
        }
    };
    let mut namespaced_schemes = Vec::new();
    for s in &n.namespaced_schemes {
        let scheme = s.trim_end_matches(':').to_ascii_lowercase();
        if !manifold_foundation::uri::is_scheme(&scheme) {
            return Err(format!(
                "key `naming.namespaced_schemes`: `{s}` is not a URI scheme (a letter, then letters, digits, `+`, `-` or `.`)"
            ));
        }
        namespaced_schemes.push(scheme);
    }
    Ok(NamingConfig {
        separator: sep,
        prefix_mode,
        max_length,
        resources,
        namespaced_schemes,
        resolve_original: n.resolve_original,
    })
}

fn default_separator() -> String {
    DEFAULT_SEPARATOR.into()
}
fn default_prefix_mode() -> String {
    "always".into()
}
fn default_resources() -> String {
    "host-schemes".into()
}
fn default_max_length() -> usize {
    DEFAULT_MAX_NAME_LENGTH
}
