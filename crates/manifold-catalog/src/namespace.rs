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
//! - a URI without `//` after its scheme (`urn:…`, `mailto:…`) has no
//!   authority to carry a prefix: it is exposed as it is, and merged (or
//!   left out as a collision) as before.
//!
//! Reading back: the exposed authority's first label (up to the first `.`,
//! `/`, `?`, `#` or the end) names the upstream; upstream prefixes hold no
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

use std::borrow::Cow;

/// The schemes namespaced by default (`[naming] resources =
/// "host-schemes"`): MCP Apps' UI resources and Skills' files.
pub const HOST_SCHEMES: [&str; 2] = ["ui", "skill"];

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

/// A URI split where a namespace goes: the scheme (as written) and what
/// follows `scheme://`.
fn split(uri: &str) -> Option<(&str, &str)> {
    let colon = uri.find(':')?;
    let scheme = &uri[..colon];
    let valid = scheme
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_alphabetic())
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    if !valid {
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
        match self.mode {
            ResourceNaming::Never => false,
            ResourceNaming::Always => text.contains("://"),
            ResourceNaming::HostSchemes => self.schemes.iter().any(|s| {
                text.match_indices("://")
                    .any(|(i, _)| i >= s.len() && text[i - s.len()..i].eq_ignore_ascii_case(s))
            }),
        }
    }

    /// `uri` as exposed for the upstream whose prefix is `prefix`.
    pub fn expose<'a>(&self, prefix: &str, uri: &'a str) -> Cow<'a, str> {
        let Some((scheme, rest)) = split(uri) else {
            return Cow::Borrowed(uri);
        };
        if !self.covers(scheme) {
            return Cow::Borrowed(uri);
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

    /// The prefix of `upstream`, when it has one here.
    pub fn prefix_of(&self, upstream: &str) -> Option<&str> {
        self.prefixes
            .iter()
            .find(|(_, u)| u == upstream)
            .map(|(p, _)| p.as_str())
    }
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
                "skill://gh.code-review/SKILL.md",
            ),
            ("gh", "UI://A/b?c#d", "UI://gh.A/b?c#d"),
            ("gh", "x-docs:///guide", "x-docs://gh/guide"),
            (
                "gh",
                "skill://{name}/SKILL.md",
                "skill://gh.{name}/SKILL.md",
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
        assert!(n.may_hold(r#"{"uri":"Ui://a/b"}"#));
        assert!(!n.may_hold(r#"{"uri":"file:///a","x":"ui:opaque"}"#));
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
