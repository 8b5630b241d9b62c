//! `[[endpoint]]` (virtual endpoints: more MCP endpoints on the same listener,
//! each a curated part of the merged catalogue) and discovery (`discovery =
//! "search"`: `tools/list` offers `search_tools` and `call_tool` instead of
//! every tool), which the default endpoint takes from `[server]`.
//!
//! Invariants: a validated endpoint's path is absolute, unique, not `[server]
//! path` and not under `/.well-known/`; every upstream it names exists; its
//! glob lists hold non-empty patterns; `resource` is an http(s) URL;
//! `always_visible` and `discovery_expand` only with `discovery = "search"`.
//! Everything here is reloadable: a reload adds, changes and removes
//! endpoints (sessions of a removed endpoint are unknown from then on).
//!
//! Not here: routing, filtering and search (manifold-server).

use serde::{Deserialize, Serialize};
use std::collections::HashSet;

use crate::policy::{check_globs, AllowDeny};

/// Where `[[endpoint]] path`s may not go: the well-known URIs (RFC 8615),
/// where the protected resource metadata of every endpoint is served.
pub const WELL_KNOWN_PREFIX: &str = "/.well-known/";

/// Which names an endpoint serves its tools and prompts under.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EndpointNaming {
    /// The gateway's exposed names (`[naming]`: `vanilla__get-time`), as
    /// everywhere else (default).
    #[default]
    Prefixed,
    /// The upstreams' own names (`get-time`), so that an MCP App a host
    /// renders from this endpoint calls its server's tools as it would
    /// directly. Two items of one kind with the same own name are refused
    /// at start (and, appearing later, the first by exposed name is kept and
    /// the collision logged). Rules (`[[policy]]`, `[[rate_limit]]`,
    /// `[confirm]`, this endpoint's globs) still match exposed names, and an
    /// exposed name still resolves here.
    Original,
}

/// How a client finds an endpoint's tools.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DiscoveryMode {
    /// `tools/list` holds every tool of the caller's view (default).
    #[default]
    List,
    /// `tools/list` holds `search_tools`, `call_tool` and the `always_visible`
    /// tools; the others are found by searching.
    Search,
    /// `tools/list` holds `search_tools`, `run_script` and the
    /// `always_visible` tools: a model searches, then runs one Starlark script
    /// that calls several tools (`[code]` bounds it).
    Code,
}

impl DiscoveryMode {
    pub fn as_str(self) -> &'static str {
        match self {
            DiscoveryMode::List => "list",
            DiscoveryMode::Search => "search",
            DiscoveryMode::Code => "code",
        }
    }
}

/// Discovery settings of one endpoint (the default one's are `[server]`'s).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DiscoverySettings {
    pub mode: DiscoveryMode,
    /// Exposed-name globs of tools listed besides the meta-tools (search only).
    pub always_visible: Vec<String>,
    /// Session era: tools a search found join that session's `tools/list`
    /// (search only).
    pub expand: bool,
}

impl DiscoverySettings {
    /// Whether `tools/list` holds `search_tools` instead of every tool
    /// (`"search"` or `"code"`).
    pub fn is_search(&self) -> bool {
        matches!(self.mode, DiscoveryMode::Search | DiscoveryMode::Code)
    }

    /// `discovery = "code"`: `run_script` instead of `call_tool`.
    pub fn is_code(&self) -> bool {
        self.mode == DiscoveryMode::Code
    }
}

/// `[[endpoint]]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct EndpointSection {
    /// The endpoint's path on the MCP listener, e.g. `/mcp/ops`.
    pub path: String,
    /// Upstreams whose items it holds (default: every upstream).
    #[serde(default)]
    pub upstreams: Option<Vec<String>>,
    /// Exposed tool-name globs: `allow` (empty or missing: every tool), then
    /// `deny`.
    #[serde(default)]
    pub tools: Option<AllowDeny>,
    /// Exposed prompt-name globs, as `tools`.
    #[serde(default)]
    pub prompts: Option<AllowDeny>,
    /// Resource URI (and template) globs, matched in canonical form, as `tools`.
    #[serde(default)]
    pub resources: Option<AllowDeny>,
    /// Exposed skill-name globs (SEP-2640), as `tools`; a hidden skill's
    /// files are hidden with it.
    #[serde(default)]
    pub skills: Option<AllowDeny>,
    /// What `initialize` / `server/discover` say (default: the instructions of
    /// the upstreams it holds something of, merged).
    #[serde(default)]
    pub instructions: Option<String>,
    /// With `[auth]`: the resource URI its protected resource metadata names
    /// (default: the URL a client used, `http(s)://<Host><path>`).
    #[serde(default)]
    pub resource: Option<String>,
    /// `"list"` (default), `"search"` or `"code"`.
    #[serde(default)]
    pub discovery: DiscoveryMode,
    /// With `discovery = "search"` or `"code"`: tool-name globs listed
    /// besides the meta-tools.
    #[serde(default)]
    pub always_visible: Vec<String>,
    /// With `discovery = "search"`: a session's found tools join its
    /// `tools/list` (default false).
    #[serde(default)]
    pub discovery_expand: bool,
    /// `"prefixed"` (default) or `"original"`: the names its tools and
    /// prompts are served under.
    #[serde(default)]
    pub naming: EndpointNaming,
}

/// One validated `[[endpoint]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndpointConfig {
    pub path: String,
    /// `None`: every upstream.
    pub upstreams: Option<Vec<String>>,
    pub tools: Option<AllowDeny>,
    pub prompts: Option<AllowDeny>,
    pub resources: Option<AllowDeny>,
    pub skills: Option<AllowDeny>,
    pub instructions: Option<String>,
    pub resource: Option<String>,
    pub discovery: DiscoverySettings,
    pub naming: EndpointNaming,
}

/// Checks a path the way `[server] path` is checked.
pub(crate) fn check_path(at: &str, path: &str) -> Result<(), String> {
    if !path.starts_with('/') || path.contains(['?', '#', ' ']) || path.len() < 2 {
        return Err(format!(
            "key `{at}`: `{path}` must be an absolute path such as \"/mcp/ops\""
        ));
    }
    Ok(())
}

/// Discovery keys of an endpoint (or of `[server]`, `at` = `server`).
pub(crate) fn discovery(
    at: &str,
    mode: DiscoveryMode,
    always_visible: &[String],
    expand: bool,
) -> Result<DiscoverySettings, String> {
    if mode == DiscoveryMode::List && !always_visible.is_empty() {
        return Err(format!(
            "key `{at}.always_visible`: only means something with `discovery = \"search\"` or `\"code\"`"
        ));
    }
    if mode != DiscoveryMode::Search && expand {
        return Err(format!(
            "key `{at}.discovery_expand`: only means something with `discovery = \"search\"`"
        ));
    }
    check_globs(&format!("{at}.always_visible"), always_visible)?;
    Ok(DiscoverySettings {
        mode,
        always_visible: always_visible.to_vec(),
        expand,
    })
}

/// `[[endpoint]]` validated against `[server] path` and the upstreams.
pub(crate) fn validate(
    endpoints: &[EndpointSection],
    server_path: &str,
    upstreams: &HashSet<&str>,
) -> Result<Vec<EndpointConfig>, String> {
    let mut paths: HashSet<&str> = HashSet::new();
    let mut out = Vec::with_capacity(endpoints.len());
    for (i, e) in endpoints.iter().enumerate() {
        let at = format!("endpoint[{i}]");
        check_path(&format!("{at}.path"), &e.path)?;
        if e.path == server_path {
            return Err(format!(
                "key `{at}.path`: `{}` is `[server] path`, the default endpoint (everything); \
                 its discovery is set in [server] (`discovery`, `always_visible`, `discovery_expand`)",
                e.path
            ));
        }
        if e.path.starts_with(WELL_KNOWN_PREFIX) || e.path == "/.well-known" {
            return Err(format!(
                "key `{at}.path`: `{}` is under {WELL_KNOWN_PREFIX}, where the protected resource metadata is served",
                e.path
            ));
        }
        if !paths.insert(&e.path) {
            return Err(format!(
                "key `{at}.path`: `{}` is the path of an earlier [[endpoint]]",
                e.path
            ));
        }
        if let Some(names) = &e.upstreams {
            for (j, n) in names.iter().enumerate() {
                if !upstreams.contains(n.as_str()) {
                    let mut known: Vec<&str> = upstreams.iter().copied().collect();
                    known.sort_unstable();
                    return Err(format!(
                        "key `{at}.upstreams[{j}]`: no upstream is named `{n}` (configured: {})",
                        known.join(", ")
                    ));
                }
            }
        }
        for (kind, lists) in [
            ("tools", &e.tools),
            ("prompts", &e.prompts),
            ("resources", &e.resources),
            ("skills", &e.skills),
        ] {
            if let Some(l) = lists {
                check_globs(&format!("{at}.{kind}.allow"), &l.allow)?;
                check_globs(&format!("{at}.{kind}.deny"), &l.deny)?;
            }
        }
        if let Some(r) = &e.resource {
            let ok = (r.starts_with("http://") || r.starts_with("https://"))
                && r.split("://").nth(1).is_some_and(|rest| !rest.is_empty());
            if !ok {
                return Err(format!(
                    "key `{at}.resource`: `{r}` must be an http:// or https:// URL"
                ));
            }
        }
        out.push(EndpointConfig {
            path: e.path.clone(),
            upstreams: e.upstreams.clone(),
            tools: e.tools.clone(),
            prompts: e.prompts.clone(),
            resources: e.resources.clone(),
            skills: e.skills.clone(),
            instructions: e.instructions.clone(),
            resource: e.resource.clone(),
            discovery: discovery(&at, e.discovery, &e.always_visible, e.discovery_expand)?,
            naming: e.naming,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ep(path: &str) -> EndpointSection {
        EndpointSection {
            path: path.into(),
            upstreams: None,
            tools: None,
            prompts: None,
            resources: None,
            skills: None,
            instructions: None,
            resource: None,
            discovery: DiscoveryMode::List,
            always_visible: vec![],
            discovery_expand: false,
            naming: EndpointNaming::Prefixed,
        }
    }

    #[test]
    fn errors_name_the_endpoint_and_key() {
        let ups: HashSet<&str> = ["a", "b"].into_iter().collect();
        let with = |f: &dyn Fn(&mut EndpointSection)| {
            let mut e = ep("/mcp/ops");
            f(&mut e);
            e
        };
        for (eps, wanted) in [
            (vec![ep("ops")], "key `endpoint[0].path`: `ops` must be"),
            (
                vec![ep("/mcp")],
                "key `endpoint[0].path`: `/mcp` is `[server] path`",
            ),
            (
                vec![ep("/.well-known/x")],
                "key `endpoint[0].path`: `/.well-known/x` is under",
            ),
            (
                vec![ep("/x"), ep("/x")],
                "key `endpoint[1].path`: `/x` is the path of an earlier",
            ),
            (
                vec![with(&|e| e.upstreams = Some(vec!["a".into(), "c".into()]))],
                "key `endpoint[0].upstreams[1]`: no upstream is named `c` (configured: a, b)",
            ),
            (
                vec![with(&|e| {
                    e.tools = Some(AllowDeny {
                        allow: vec!["".into()],
                        deny: vec![],
                    })
                })],
                "key `endpoint[0].tools.allow[0]`",
            ),
            (
                vec![with(&|e| e.resource = Some("ops".into()))],
                "key `endpoint[0].resource`",
            ),
            (
                vec![with(&|e| e.always_visible = vec!["t".into()])],
                "key `endpoint[0].always_visible`: only means something",
            ),
            (
                vec![with(&|e| e.discovery_expand = true)],
                "key `endpoint[0].discovery_expand`: only means something",
            ),
        ] {
            let e = validate(&eps, "/mcp", &ups).unwrap_err();
            assert!(e.starts_with(wanted), "{e}");
        }
        let ok = with(&|e| {
            e.discovery = DiscoveryMode::Search;
            e.always_visible = vec!["a__*".into()];
            e.discovery_expand = true;
            e.upstreams = Some(vec!["b".into()]);
        });
        let v = validate(&[ok], "/mcp", &ups).unwrap();
        assert!(v[0].discovery.is_search() && v[0].discovery.expand);
    }
}
