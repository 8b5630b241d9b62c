//! Resource namespaces (`[naming] resources`): URIs of the schemes a host
//! reads rather than a model (`ui://` for MCP Apps, `skill://` for Skills,
//! and any the operator lists), or every URI, exposed under their
//! upstream's prefix so two servers' `ui://get-time/mcp-app.html` are two
//! resources, each reaching its own server.
//!
//! The form, a pure function of (prefix, URI) and back:
//! - `scheme://authority/rest` (a non-empty authority) is exposed as
//!   `scheme://<prefix>.authority/rest`;
//! - `scheme:///rest` (an empty authority, as in `file:///p`) as
//!   `scheme://<prefix>/rest`;
//! - `skill://rest` (every `skill://` URI) as `skill://<prefix>/rest`: the
//!   prefix is one more organizational segment in front of the skill path,
//!   so the path's last segment stays the skill's name and its root stays
//!   `SKILL.md`'s directory, as SEP-2640 requires of every skill URI (a
//!   dotted authority would make `a.code-review` the name, which hosts such
//!   as FastMCP's client refuse);
//! - a URI without `//` after its scheme (`urn:…`, `mailto:…`) has no
//!   authority to carry a prefix: it is exposed as it is, and merged (or
//!   left out as a collision) as before.
//!
//! Reading back: the exposed authority's first label (up to the first `.`,
//! `/`, `?`, `#` or the end) names the upstream; for `skill://` the label
//! must be followed by `/`, and what follows it is the original
//! `skill://…`; upstream prefixes hold no
//! `.` (`^[A-Za-z0-9_-]+$`), so the split is unambiguous, and compared
//! without regard to ASCII case (a URI's host is case-insensitive). A
//! URI maps back only to the upstream its first label names, and only when
//! that upstream's URIs of the scheme are namespaced: whatever an upstream
//! writes in a result is exposed under its own prefix, so it can never
//! name another upstream's resource.
//!
//! Invariants: pure, total and linear; `resolve(expose(p, u)) == (p, u)` for
//! every URI with `//` (a property test); an exposed URI keeps its scheme
//! and is a URI whenever the original was one; it depends on the upstream's
//! prefix only, so adding an upstream changes no other upstream's URIs.
//! Templates (`scheme://{x}/…`) take the same insertion.
//!
//! Not here: where URIs travel (lists here in the catalogue; reads,
//! subscriptions, results and notifications in the server).

use serde_json::{Map, Value};
use std::borrow::Cow;

use manifold_protocol::lists::ListSnapshot as UpstreamLists;

/// The schemes namespaced by default (`[naming] resources =
/// "host-schemes"`): MCP Apps' UI resources and Skills' files.
pub const HOST_SCHEMES: [&str; 2] = ["ui", "skill"];

/// The scheme whose URIs take the prefix as a path segment (see the
/// module's notes): Skills' (SEP-2640).
pub const PATH_FORM_SCHEME: &str = "skill";

fn path_form(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case(PATH_FORM_SCHEME)
}

/// Which URIs are namespaced.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ResourceNaming {
    /// The schemes in the list (lower case): [`HOST_SCHEMES`] and those the
    /// operator adds.
    #[default]
    HostSchemes,
    /// Every URI that has an authority part.
    Always,
    /// None: URIs are merged as listed, and collide.
    Never,
}

/// The namespaces in force: the mode, the schemes (for `HostSchemes`) and
/// the upstreams by prefix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UriNamespaces {
    mode: ResourceNaming,
    /// Lower case, without `:`.
    schemes: Vec<String>,
    /// (prefix, upstream name), in configuration order.
    prefixes: Vec<(String, String)>,
}

pub use manifold_foundation::uri::is_scheme;

/// A URI split where a namespace goes: the scheme (as written) and what
/// follows `scheme://`.
fn split(uri: &str) -> Option<(&str, &str)> {
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    if !is_scheme(scheme) {
        return None;
    }
    let rest = uri[colon + 1..].strip_prefix("//")?;
    Some((scheme, rest))
}

impl UriNamespaces {
    /// The namespaces of `mode` with the extra `schemes` (for
    /// `HostSchemes`) and the upstreams as (prefix, name).
    pub fn new(
        mode: ResourceNaming,
        schemes: &[String],
        upstreams: impl IntoIterator<Item = (String, String)>,
    ) -> UriNamespaces {
        let mut all: Vec<String> = HOST_SCHEMES.iter().map(|s| s.to_string()).collect();
        for s in schemes {
            let s = s.trim_end_matches(':').to_ascii_lowercase();
            if !all.contains(&s) {
                all.push(s);
            }
        }
        UriNamespaces {
            mode,
            schemes: all,
            prefixes: upstreams.into_iter().collect(),
        }
    }

    /// No URI is namespaced.
    pub fn is_off(&self) -> bool {
        self.mode == ResourceNaming::Never
    }

    /// Whether URIs of `scheme` are namespaced.
    pub fn covers(&self, scheme: &str) -> bool {
        match self.mode {
            ResourceNaming::Never => false,
            ResourceNaming::Always => true,
            ResourceNaming::HostSchemes => {
                self.schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme))
            }
        }
    }

    /// Whether `text` may hold a namespaced URI (a cheap test before a
    /// result is searched: `scheme://` of a covered scheme appears in it).
    pub fn may_hold(&self, text: &str) -> bool {
        if self.mode == ResourceNaming::Never {
            return false;
        }
        // A SIMD search for `://` (cheap on the call path): a result without
        // a covered `scheme://` is never parsed.
        let bytes = text.as_bytes();
        static SEPARATOR: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
            std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"://"));
        SEPARATOR.find_iter(bytes).any(|i| match self.mode {
            ResourceNaming::Always => true,
            _ => self
                .schemes
                .iter()
                .any(|s| i >= s.len() && bytes[i - s.len()..i].eq_ignore_ascii_case(s.as_bytes())),
        })
    }

    /// `uri` as exposed for the upstream whose prefix is `prefix`.
    pub fn expose<'a>(&self, prefix: &str, uri: &'a str) -> Cow<'a, str> {
        let Some((scheme, rest)) = split(uri) else {
            return Cow::Borrowed(uri);
        };
        if !self.covers(scheme) {
            return Cow::Borrowed(uri);
        }
        if path_form(scheme) {
            return Cow::Owned(format!("{scheme}://{prefix}/{rest}"));
        }
        if rest.is_empty() {
            return Cow::Owned(format!("{scheme}://{prefix}"));
        }
        match rest.strip_prefix('/') {
            // An empty authority: the prefix is the authority.
            Some(path) => Cow::Owned(format!("{scheme}://{prefix}/{path}")),
            None => Cow::Owned(format!("{scheme}://{prefix}.{rest}")),
        }
    }

    /// The upstream an exposed URI belongs to and the URI as that upstream
    /// wrote it; `None` when it names no namespaced upstream (then it is an
    /// ordinary URI, routed as before).
    pub fn resolve<'a>(&'a self, uri: &str) -> Option<(&'a str, String)> {
        let (scheme, rest) = split(uri)?;
        if !self.covers(scheme) {
            return None;
        }
        let end = rest.find(['.', '/', '?', '#']).unwrap_or(rest.len());
        let label = &rest[..end];
        let (_, upstream) = self
            .prefixes
            .iter()
            .find(|(p, _)| p.eq_ignore_ascii_case(label))?;
        let after = &rest[end..];
        if path_form(scheme) {
            let original = after.strip_prefix('/')?;
            return Some((upstream.as_str(), format!("{scheme}://{original}")));
        }
        let original = match after.strip_prefix('.') {
            Some(authority_on) if !authority_on.is_empty() && !authority_on.starts_with('/') => {
                format!("{scheme}://{authority_on}")
            }
            // `prefix.` with no authority after it is no exposed form (an
            // empty authority is exposed as `scheme://prefix/…`).
            Some(_) => return None,
            None => format!("{scheme}://{after}"),
        };
        Some((upstream.as_str(), original))
    }

    /// Whether `uri` has the form of a namespaced URI (a covered scheme with
    /// `//`): then only [`UriNamespaces::resolve`] may route it — a URI of a
    /// namespaced scheme that names no upstream (an upstream's own spelling)
    /// is no one's, never guessed.
    pub fn claims(&self, uri: &str) -> bool {
        split(uri).is_some_and(|(scheme, _)| self.covers(scheme))
    }

    /// The prefix of `upstream`, when it has one here.
    pub fn prefix_of(&self, upstream: &str) -> Option<&str> {
        self.prefixes
            .iter()
            .find(|(_, u)| u == upstream)
            .map(|(p, _)| p.as_str())
    }
}

/// The members of a tool's `_meta` that name its UI resource (MCP Apps):
/// `ui.resourceUri`, and the earlier flat `ui/resourceUri`.
pub const UI_RESOURCE_URI: &str = "resourceUri";
/// The earlier, flat spelling of [`UI_RESOURCE_URI`].
pub const LEGACY_UI_RESOURCE_URI: &str = "ui/resourceUri";

impl UriNamespaces {
    /// `lists` as exposed for the upstream whose prefix is `prefix`:
    /// resources' `uri`, templates' `uriTemplate` and tools' UI resource
    /// references namespaced; `None` when nothing changes (the common
    /// case costs one scan, no copy).
    pub fn expose_lists(&self, prefix: &str, lists: &UpstreamLists) -> Option<UpstreamLists> {
        if self.is_off() {
            return None;
        }
        let resources = self.expose_member(prefix, &lists.resources, "uri");
        let templates = self.expose_member(prefix, &lists.resource_templates, "uriTemplate");
        let tools = self.expose_tools(prefix, &lists.tools);
        let skills = self.expose_skills(prefix, &lists.skills);
        if resources.is_none() && templates.is_none() && tools.is_none() && skills.is_none() {
            return None;
        }
        Some(UpstreamLists {
            tools: tools.unwrap_or_else(|| lists.tools.clone()),
            prompts: lists.prompts.clone(),
            resources: resources.unwrap_or_else(|| lists.resources.clone()),
            resource_templates: templates.unwrap_or_else(|| lists.resource_templates.clone()),
            skills: skills.unwrap_or_else(|| lists.skills.clone()),
        })
    }

    /// Skill entries with their `uri` and their files' `uri` namespaced
    /// (frontmatter and digests untouched), when any changes.
    fn expose_skills(
        &self,
        prefix: &str,
        skills: &[Map<String, Value>],
    ) -> Option<Vec<Map<String, Value>>> {
        let changes = |s: &Map<String, Value>| {
            let files = s.get("resources").and_then(Value::as_array);
            s.get("uri")
                .into_iter()
                .chain(files.into_iter().flatten().filter_map(|f| f.get("uri")))
                .filter_map(Value::as_str)
                .any(|u| matches!(self.expose(prefix, u), Cow::Owned(_)))
        };
        if !skills.iter().any(changes) {
            return None;
        }
        Some(
            skills
                .iter()
                .map(|s| {
                    let mut v = Value::Object(s.clone());
                    self.expose_result(prefix, &mut v);
                    match v {
                        Value::Object(m) => m,
                        _ => s.clone(),
                    }
                })
                .collect(),
        )
    }

    /// `items` with `member` namespaced, when any changes.
    fn expose_member(
        &self,
        prefix: &str,
        items: &[Map<String, Value>],
        member: &str,
    ) -> Option<Vec<Map<String, Value>>> {
        let changes = |i: &Map<String, Value>| {
            i.get(member)
                .and_then(Value::as_str)
                .is_some_and(|u| matches!(self.expose(prefix, u), Cow::Owned(_)))
        };
        if !items.iter().any(changes) {
            return None;
        }
        Some(
            items
                .iter()
                .map(|i| {
                    let mut i = i.clone();
                    if let Some(Value::String(u)) = i.get_mut(member) {
                        if let Cow::Owned(exposed) = self.expose(prefix, u) {
                            *u = exposed;
                        }
                    }
                    i
                })
                .collect(),
        )
    }

    /// `tools` with their UI resource references namespaced, when any changes.
    fn expose_tools(
        &self,
        prefix: &str,
        tools: &[Map<String, Value>],
    ) -> Option<Vec<Map<String, Value>>> {
        // Looked at in place: only a list with a reference to expose is copied.
        let changes = |t: &Map<String, Value>| {
            ui_refs(t).any(|u| matches!(self.expose(prefix, u), Cow::Owned(_)))
        };
        if !tools.iter().any(changes) {
            return None;
        }
        Some(
            tools
                .iter()
                .map(|t| {
                    let mut t = t.clone();
                    self.expose_ui_meta(prefix, &mut t);
                    t
                })
                .collect(),
        )
    }

    /// Namespaces the UI resource references in `item`'s `_meta` (a tool,
    /// or a tool result); whether any changed.
    pub fn expose_ui_meta(&self, prefix: &str, item: &mut Map<String, Value>) -> bool {
        let Some(Value::Object(meta)) = item.get_mut("_meta") else {
            return false;
        };
        let mut changed = false;
        let mut fix = |v: Option<&mut Value>| {
            if let Some(Value::String(u)) = v {
                if let Cow::Owned(exposed) = self.expose(prefix, u) {
                    *u = exposed;
                    changed = true;
                }
            }
        };
        fix(meta.get_mut(LEGACY_UI_RESOURCE_URI));
        if let Some(Value::Object(ui)) = meta.get_mut("ui") {
            fix(ui.get_mut(UI_RESOURCE_URI));
        }
        changed
    }

    /// Namespaces, in a result `value` from the upstream whose prefix is
    /// `prefix`, every string member named `uri` (content blocks:
    /// `resource_link`, embedded `resource`, `resources/read` contents, skill
    /// entries and their files, directory children) and every UI resource
    /// reference in a `_meta`; whether any changed. A skill's `frontmatter`
    /// is the author's text, passed untouched.
    pub fn expose_result(&self, prefix: &str, value: &mut Value) -> bool {
        let mut changed = false;
        match value {
            Value::Object(m) => {
                if let Some(Value::String(u)) = m.get_mut("uri") {
                    if let Cow::Owned(exposed) = self.expose(prefix, u) {
                        *u = exposed;
                        changed = true;
                    }
                }
                changed |= self.expose_ui_meta(prefix, m);
                for (k, v) in m.iter_mut() {
                    if k != "uri" && k != "_meta" && k != "frontmatter" {
                        changed |= self.expose_result(prefix, v);
                    }
                }
            }
            Value::Array(a) => {
                for v in a {
                    changed |= self.expose_result(prefix, v);
                }
            }
            _ => {}
        }
        changed
    }
}

/// The UI resource references in `item`'s `_meta` (the flat one first).
fn ui_refs(item: &Map<String, Value>) -> impl Iterator<Item = &str> {
    let meta = item.get("_meta").and_then(Value::as_object);
    let flat = meta
        .and_then(|m| m.get(LEGACY_UI_RESOURCE_URI))
        .and_then(Value::as_str);
    let nested = meta
        .and_then(|m| m.get("ui"))
        .and_then(|ui| ui.get(UI_RESOURCE_URI))
        .and_then(Value::as_str);
    flat.into_iter().chain(nested)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ns(mode: ResourceNaming) -> UriNamespaces {
        UriNamespaces::new(
            mode,
            &["x-docs".into()],
            [
                ("vanilla".to_string(), "vanilla".to_string()),
                ("react".to_string(), "react".to_string()),
                ("gh".to_string(), "github".to_string()),
            ],
        )
    }

    #[test]
    fn host_schemes_get_their_upstream_and_map_back_to_it_only() {
        let n = ns(ResourceNaming::HostSchemes);
        let rows = [
            (
                "vanilla",
                "ui://get-time/mcp-app.html",
                "ui://vanilla.get-time/mcp-app.html",
            ),
            (
                "react",
                "ui://get-time/mcp-app.html",
                "ui://react.get-time/mcp-app.html",
            ),
            (
                "gh",
                "skill://code-review/SKILL.md",
                "skill://gh/code-review/SKILL.md",
            ),
            (
                "gh",
                "skill://acme/billing/refunds/SKILL.md",
                "skill://gh/acme/billing/refunds/SKILL.md",
            ),
            ("gh", "skill://code-review", "skill://gh/code-review"),
            ("gh", "UI://A/b?c#d", "UI://gh.A/b?c#d"),
            ("gh", "x-docs:///guide", "x-docs://gh/guide"),
            (
                "gh",
                "skill://{name}/SKILL.md",
                "skill://gh/{name}/SKILL.md",
            ),
            // Not a host scheme, or no authority: as it is.
            ("gh", "file:///etc/hosts", "file:///etc/hosts"),
            ("gh", "https://example.com/a", "https://example.com/a"),
            ("gh", "ui:opaque", "ui:opaque"),
            ("gh", "not a uri", "not a uri"),
        ];
        for (prefix, uri, exposed) in rows {
            assert_eq!(n.expose(prefix, uri), exposed, "{prefix} {uri}");
            if exposed != uri {
                let upstream = n
                    .prefixes
                    .iter()
                    .find(|(p, _)| p == prefix)
                    .unwrap()
                    .1
                    .clone();
                assert_eq!(
                    n.resolve(exposed),
                    Some((upstream.as_str(), uri.to_string())),
                    "{exposed}"
                );
            }
        }
        // An original URI is no exposed one: it names no upstream, or
        // another upstream's resource under that upstream's own prefix.
        assert_eq!(n.resolve("ui://get-time/mcp-app.html"), None);
        assert_eq!(
            n.resolve("ui://VANILLA.get-time/x"),
            Some(("vanilla", "ui://get-time/x".into()))
        );
        assert_eq!(n.resolve("ui://vanilla./x"), None);
        assert_eq!(n.resolve("ui://unknown.get-time/x"), None);
        assert_eq!(n.resolve("file://gh/etc/hosts"), None, "not a host scheme");
        // A skill URI's prefix is a whole segment: `gh.x` names no upstream.
        assert_eq!(n.resolve("skill://gh.code-review/SKILL.md"), None);
        assert_eq!(n.resolve("skill://gh"), None);
        assert!(n.may_hold(r#"{"uri":"Ui://a/b"}"#));
        assert!(!n.may_hold(r#"{"uri":"file:///a","x":"ui:opaque"}"#));
        assert!(n.may_hold(r#"{"a":"x","b":"skill://r/SKILL.md"}"#));
        assert!(!n.may_hold("ui:/x ski:// ://"));
        let always = ns(ResourceNaming::Always);
        assert!(always.may_hold(r#"{"uri":"file:///a"}"#));
        assert!(!always.may_hold(r#"{"text":"a:b"}"#));
        assert!(!ns(ResourceNaming::Never).may_hold("ui://x"));
    }

    #[test]
    fn always_covers_every_uri_with_an_authority_and_never_none() {
        let n = ns(ResourceNaming::Always);
        assert_eq!(n.expose("gh", "file:///etc/hosts"), "file://gh/etc/hosts");
        assert_eq!(
            n.resolve("file://gh/etc/hosts"),
            Some(("github", "file:///etc/hosts".into()))
        );
        // `file://gh/x` written by `react` is not `gh`'s.
        assert_eq!(n.expose("react", "file://gh/x"), "file://react.gh/x");
        assert_eq!(
            n.resolve("file://react.gh/x"),
            Some(("react", "file://gh/x".into()))
        );
        assert_eq!(n.expose("gh", "urn:isbn:1"), "urn:isbn:1");
        let off = ns(ResourceNaming::Never);
        assert_eq!(off.expose("gh", "ui://a/b"), "ui://a/b");
        assert_eq!(off.resolve("ui://gh.a/b"), None);
        assert!(off.is_off() && !off.may_hold("ui://a/b"));
    }

    #[test]
    fn lists_and_results_carry_the_exposed_uris_and_nothing_else_changes() {
        let n = ns(ResourceNaming::HostSchemes);
        let obj = |v: serde_json::Value| match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        };
        let lists = UpstreamLists {
            tools: vec![
                obj(serde_json::json!({"name": "get-time", "x-extra": 1,
                    "_meta": {"ui": {"resourceUri": "ui://get-time/mcp-app.html", "visibility": ["model"]},
                              "ui/resourceUri": "ui://get-time/mcp-app.html", "other": "ui://kept"}})),
                obj(serde_json::json!({"name": "plain"})),
            ],
            prompts: vec![],
            resources: vec![
                obj(
                    serde_json::json!({"uri": "ui://get-time/mcp-app.html", "mimeType": "text/html;profile=mcp-app", "x-extra": true}),
                ),
                obj(serde_json::json!({"uri": "file:///a"})),
            ],
            resource_templates: vec![obj(
                serde_json::json!({"uriTemplate": "skill://{name}/SKILL.md"}),
            )],
            skills: vec![obj(serde_json::json!({
                "uri": "skill://code-review/SKILL.md",
                "frontmatter": {"name": "code-review", "description": "d", "uri": "skill://not-mine"},
                "resources": [{"uri": "skill://code-review/SKILL.md", "digest": "sha256:00", "size": 1}]
            }))],
        };
        let out = n.expose_lists("vanilla", &lists).expect("changed");
        // A skill's URIs are exposed, its frontmatter (the author's) is not.
        let skill = &out.skills[0];
        assert_eq!(skill["uri"], "skill://vanilla/code-review/SKILL.md");
        assert_eq!(
            skill["resources"][0]["uri"],
            "skill://vanilla/code-review/SKILL.md"
        );
        assert_eq!(skill["frontmatter"]["uri"], "skill://not-mine");
        assert_eq!(
            out.tools[0]["_meta"]["ui"]["resourceUri"],
            "ui://vanilla.get-time/mcp-app.html"
        );
        assert_eq!(
            out.tools[0]["_meta"]["ui/resourceUri"],
            "ui://vanilla.get-time/mcp-app.html"
        );
        assert_eq!(
            out.tools[0]["_meta"]["other"], "ui://kept",
            "only the UI references"
        );
        assert_eq!(
            out.tools[0]["_meta"]["ui"]["visibility"],
            serde_json::json!(["model"])
        );
        assert_eq!(out.tools[0]["x-extra"], 1);
        assert_eq!(out.tools[1], lists.tools[1]);
        assert_eq!(
            out.resources[0]["uri"],
            "ui://vanilla.get-time/mcp-app.html"
        );
        assert_eq!(out.resources[0]["x-extra"], true);
        assert_eq!(out.resources[1], lists.resources[1]);
        assert_eq!(
            out.resource_templates[0]["uriTemplate"],
            "skill://vanilla/{name}/SKILL.md"
        );
        let plain = UpstreamLists {
            resources: vec![obj(serde_json::json!({"uri": "file:///a"}))],
            ..Default::default()
        };
        assert!(n.expose_lists("vanilla", &plain).is_none());

        let mut result = serde_json::json!({"content": [
            {"type": "resource_link", "uri": "ui://get-time/a.html", "name": "a"},
            {"type": "resource", "resource": {"uri": "skill://x/SKILL.md", "text": "ui://get-time/in-text"}},
            {"type": "text", "text": "see ui://get-time/b"}],
            "_meta": {"ui": {"resourceUri": "ui://get-time/mcp-app.html"}},
            "structuredContent": {"uri": "https://example.com"}});
        assert!(n.expose_result("react", &mut result));
        assert_eq!(result["content"][0]["uri"], "ui://react.get-time/a.html");
        assert_eq!(
            result["content"][1]["resource"]["uri"],
            "skill://react/x/SKILL.md"
        );
        assert_eq!(
            result["content"][1]["resource"]["text"], "ui://get-time/in-text",
            "text is text"
        );
        assert_eq!(result["content"][2]["text"], "see ui://get-time/b");
        assert_eq!(
            result["_meta"]["ui"]["resourceUri"],
            "ui://react.get-time/mcp-app.html"
        );
        assert_eq!(result["structuredContent"]["uri"], "https://example.com");
    }

    proptest! {
        #[test]
        fn what_is_exposed_maps_back_to_its_upstream_and_uri(
            scheme in "(ui|skill|file|https|x-docs)",
            authority in "[a-zA-Z0-9.{}@:-]{0,12}",
            path in "[a-zA-Z0-9/._?#=&%-]{0,20}",
            which in 0usize..3,
            always in any::<bool>(),
        ) {
            let n = ns(if always { ResourceNaming::Always } else { ResourceNaming::HostSchemes });
            let (prefix, upstream) = n.prefixes[which].clone();
            let path = if path.starts_with('/') || path.is_empty() { path } else { format!("/{path}") };
            let uri = format!("{scheme}://{authority}{path}");
            let exposed = n.expose(&prefix, &uri);
            if exposed != uri {
                let head = format!("{scheme}://");
                prop_assert!(exposed.starts_with(&head));
                prop_assert_eq!(n.resolve(&exposed), Some((upstream.as_str(), uri.clone())));
            }
        }
    }
}
