//! `[[policy]]`: which tools, prompts and resources a caller sees and may use.
//!
//! Without any rule everything is visible to every admitted caller. With at
//! least one, an item is visible to a caller only if some rule whose `who`
//! names the caller allows it and no such rule denies it (deny wins). Tools and
//! prompts are matched by exposed name; resources by URI (and a resource
//! template by its template string).
//!
//! Resource URIs are matched in their canonical form
//! ([`manifold_catalog::uri::canonical`]: scheme and host case, escapes, dot
//! segments), and so are the `resources` globs, so `file:///srv/docs/../x` is
//! `file:///srv/x` to every rule; a URI with no canonical form (an encoded
//! `/`, an empty segment, …) is hidden ([`Decision::Ambiguous`]). In every
//! glob `*` matches any run of characters, `/` included (so `…/private/*`
//! denies the whole subtree), and `?` one character; `**` is two `*`.
//!
//! A caller's view depends only on *which rules name it*, so that set is the
//! [`ViewKey`]: every caller with the same key sees the same items, and the
//! server builds one snapshot per key, not per caller or per request.
//!
//! Invariants: a decision depends on the key and the item only; `decide` and
//! `allows` agree; deciding never allocates per rule beyond glob matching.
//!
//! Not here: building the per-view lists (manifold-catalog) or answering a
//! hidden item as unknown (manifold-server).

use std::sync::Arc;

use manifold_catalog::uri::{canonical, canonical_pattern, UriError};
use manifold_config::{AllowDeny, PolicyRule};
use manifold_foundation::glob::Glob;

use crate::identity::Identity;

/// What a rule's lists are about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ItemKind {
    Tool,
    Prompt,
    /// A resource URI or a resource template string.
    Resource,
    /// A skill (SEP-2640) by its exposed name.
    Skill,
}

impl ItemKind {
    /// The rule's key for this kind, as written in the file.
    pub fn key(self) -> &'static str {
        match self {
            ItemKind::Tool => "tools",
            ItemKind::Prompt => "prompts",
            ItemKind::Resource => "resources",
            ItemKind::Skill => "skills",
        }
    }
}

#[derive(Debug)]
struct Lists {
    allow: Vec<(Glob, String)>,
    deny: Vec<(Glob, String)>,
}

impl Lists {
    /// The globs as matched (a resource glob in canonical form) and as written
    /// (for explanations).
    fn new(l: &AllowDeny, kind: ItemKind) -> Lists {
        let glob = |g: &String| match kind {
            ItemKind::Resource => Glob::new(&canonical_pattern(g)),
            ItemKind::Tool | ItemKind::Prompt | ItemKind::Skill => Glob::new(g),
        };
        let globs = |v: &[String]| v.iter().map(|g| (glob(g), g.clone())).collect();
        Lists {
            allow: globs(&l.allow),
            deny: globs(&l.deny),
        }
    }
}

#[derive(Debug)]
struct Rule {
    who: Vec<String>,
    tools: Option<Lists>,
    prompts: Option<Lists>,
    resources: Option<Lists>,
    skills: Option<Lists>,
}

impl Rule {
    fn lists(&self, kind: ItemKind) -> Option<&Lists> {
        match kind {
            ItemKind::Tool => self.tools.as_ref(),
            ItemKind::Prompt => self.prompts.as_ref(),
            ItemKind::Resource => self.resources.as_ref(),
            ItemKind::Skill => self.skills.as_ref(),
        }
    }
}

/// The rules that name a caller (their indices, ascending): callers with equal
/// keys see exactly the same items.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ViewKey(Arc<[u32]>);

impl ViewKey {
    /// The indices of the `[[policy]]` rules that apply.
    pub fn rules(&self) -> &[u32] {
        &self.0
    }
}

/// Why an item is or is not visible to a view.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No `[[policy]]` is configured: everything is visible.
    Unrestricted,
    /// Visible: the first rule (index) that allows it, and the pattern.
    Allowed { rule: usize, pattern: String },
    /// Hidden: a rule that applies denies it.
    Denied { rule: usize, pattern: String },
    /// Hidden: no rule that applies allows it.
    NotAllowed,
    /// Hidden: a resource URI with no canonical form, which no rule can be
    /// trusted to match.
    Ambiguous(UriError),
}

impl Decision {
    pub fn is_visible(&self) -> bool {
        matches!(self, Decision::Unrestricted | Decision::Allowed { .. })
    }

    /// The rule and field behind the decision, for `manifold check --as`.
    pub fn explain(&self, kind: ItemKind) -> String {
        let k = kind.key();
        match self {
            Decision::Unrestricted => "no [[policy]] is configured".into(),
            Decision::Allowed { rule, pattern } => {
                format!("allowed by policy[{rule}].{k}.allow `{pattern}`")
            }
            Decision::Denied { rule, pattern } => {
                format!("denied by policy[{rule}].{k}.deny `{pattern}`")
            }
            Decision::NotAllowed => {
                format!("no rule that applies to this caller allows it in `{k}.allow`")
            }
            Decision::Ambiguous(why) => format!("refused before any rule: {why}"),
        }
    }
}

/// Every `[[policy]]` rule, compiled.
#[derive(Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
}

impl Policy {
    pub fn new(rules: &[PolicyRule]) -> Policy {
        Policy {
            rules: rules
                .iter()
                .map(|r| Rule {
                    who: r.who.clone(),
                    tools: r.tools.as_ref().map(|l| Lists::new(l, ItemKind::Tool)),
                    prompts: r.prompts.as_ref().map(|l| Lists::new(l, ItemKind::Prompt)),
                    resources: r
                        .resources
                        .as_ref()
                        .map(|l| Lists::new(l, ItemKind::Resource)),
                    skills: r.skills.as_ref().map(|l| Lists::new(l, ItemKind::Skill)),
                })
                .collect(),
        }
    }

    /// No rule: every caller sees everything.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether two callers may see different items (some rule names someone in
    /// particular). When false, lists are the same for everyone and may be
    /// cached publicly.
    pub fn varies_by_caller(&self) -> bool {
        self.rules.iter().any(|r| r.who.iter().any(|w| w != "*"))
    }

    /// The rules that name `caller`.
    pub fn view_key(&self, caller: &Identity) -> ViewKey {
        ViewKey(
            self.rules
                .iter()
                .enumerate()
                .filter(|(_, r)| crate::who::matches(&r.who, caller))
                .filter_map(|(i, _)| u32::try_from(i).ok())
                .collect(),
        )
    }

    /// Whether the view `key` may see and use `name`.
    pub fn allows(&self, key: &ViewKey, kind: ItemKind, name: &str) -> bool {
        self.decide(key, kind, name).is_visible()
    }

    /// `None` when the view `key` sees `name`; else the rule and field that
    /// hide it (for `manifold check --as` and `/catalog?as=`).
    pub fn hidden(&self, key: &ViewKey, kind: ItemKind, name: &str) -> Option<String> {
        let d = self.decide(key, kind, name);
        (!d.is_visible()).then(|| d.explain(kind))
    }

    /// Whether the view `key` may see `name`, and which rule says so. A
    /// resource URI is decided in its canonical form.
    pub fn decide(&self, key: &ViewKey, kind: ItemKind, name: &str) -> Decision {
        if self.rules.is_empty() {
            return Decision::Unrestricted;
        }
        let canonical_name;
        let name = match kind {
            ItemKind::Resource => match canonical(name) {
                Ok(c) => {
                    canonical_name = c;
                    canonical_name.as_str()
                }
                Err(why) => return Decision::Ambiguous(why),
            },
            ItemKind::Tool | ItemKind::Prompt | ItemKind::Skill => name,
        };
        let mut allowed = None;
        for &i in key.rules() {
            let Some(lists) = self.rules.get(i as usize).and_then(|r| r.lists(kind)) else {
                continue;
            };
            if let Some((_, p)) = lists.deny.iter().find(|(g, _)| g.matches(name)) {
                return Decision::Denied {
                    rule: i as usize,
                    pattern: p.clone(),
                };
            }
            if allowed.is_none() {
                if let Some((_, p)) = lists.allow.iter().find(|(g, _)| g.matches(name)) {
                    allowed = Some(Decision::Allowed {
                        rule: i as usize,
                        pattern: p.clone(),
                    });
                }
            }
        }
        allowed.unwrap_or(Decision::NotAllowed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::AuthMethod;

    fn rule(who: &[&str], allow: &[&str], deny: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        PolicyRule {
            who: v(who),
            tools: Some(AllowDeny {
                allow: v(allow),
                deny: v(deny),
            }),
            prompts: None,
            resources: None,
            skills: None,
        }
    }

    fn jwt(subject: &str, groups: &[&str]) -> Identity {
        Identity {
            subject: subject.into(),
            source: "corp".into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            scopes: vec![],
            method: AuthMethod::Jwt,
        }
    }

    #[test]
    fn visibility_table() {
        let p = Policy::new(&[
            rule(&["group:ops"], &["github__*"], &["github__delete_*"]),
            rule(
                &["subject:corp:alice"],
                &["github__delete_repo", "db__*"],
                &[],
            ),
            rule(&["*"], &["time__*"], &[]),
        ]);
        let ops = jwt("bob", &["ops"]);
        let alice = jwt("alice", &[]);
        let alice_ops = jwt("alice", &["ops"]);
        let partner_alice = Identity {
            source: "partner".into(),
            ..jwt("alice", &[])
        };
        let nobody = Identity::anonymous();
        use Decision as D;
        let allowed = |rule: usize, pattern: &str| D::Allowed {
            rule,
            pattern: pattern.into(),
        };
        for (who, tool, wanted) in [
            (&ops, "github__create_issue", allowed(0, "github__*")),
            (
                &ops,
                "github__delete_repo",
                D::Denied {
                    rule: 0,
                    pattern: "github__delete_*".into(),
                },
            ),
            (&ops, "db__query", D::NotAllowed),
            (&ops, "time__now", allowed(2, "time__*")),
            (
                &alice,
                "github__delete_repo",
                allowed(1, "github__delete_repo"),
            ),
            (&alice, "github__create_issue", D::NotAllowed),
            (&alice, "db__query", allowed(1, "db__*")),
            // Another issuer's alice is not corp's.
            (&partner_alice, "db__query", D::NotAllowed),
            // Deny in one rule wins over an allow in another.
            (
                &alice_ops,
                "github__delete_repo",
                D::Denied {
                    rule: 0,
                    pattern: "github__delete_*".into(),
                },
            ),
            (&nobody, "time__now", allowed(2, "time__*")),
            (&nobody, "github__create_issue", D::NotAllowed),
        ] {
            let key = p.view_key(who);
            assert_eq!(
                p.decide(&key, ItemKind::Tool, tool),
                wanted,
                "{who:?} {tool}"
            );
            assert_eq!(p.allows(&key, ItemKind::Tool, tool), wanted.is_visible());
        }
        // A kind the rules do not name is hidden once any rule exists.
        let key = p.view_key(&ops);
        assert_eq!(p.decide(&key, ItemKind::Prompt, "x"), D::NotAllowed);
        assert!(p.varies_by_caller());
    }

    fn resource_rule(allow: &[&str], deny: &[&str]) -> PolicyRule {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        PolicyRule {
            who: vec!["*".into()],
            tools: None,
            prompts: None,
            resources: Some(AllowDeny {
                allow: v(allow),
                deny: v(deny),
            }),
            skills: None,
        }
    }

    #[test]
    fn skills_are_decided_by_their_own_globs() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
        let p = Policy::new(&[PolicyRule {
            who: vec!["*".into()],
            tools: None,
            prompts: None,
            resources: None,
            skills: Some(AllowDeny {
                allow: v(&["docs__*"]),
                deny: v(&["docs__deploy"]),
            }),
        }]);
        let key = p.view_key(&Identity::anonymous());
        assert!(p.allows(&key, ItemKind::Skill, "docs__review"));
        assert!(!p.allows(&key, ItemKind::Skill, "docs__deploy"));
        assert!(!p.allows(&key, ItemKind::Skill, "other__review"));
        // A rule naming only skills allows no tool.
        assert!(!p.allows(&key, ItemKind::Tool, "docs__review"));
        assert_eq!(
            p.decide(&key, ItemKind::Skill, "docs__deploy")
                .explain(ItemKind::Skill),
            "denied by policy[0].skills.deny `docs__deploy`"
        );
    }

    #[test]
    fn resource_rules_match_the_canonical_uri() {
        let p = Policy::new(&[resource_rule(
            &["file:///srv/docs/*", "https://*", "FILE:///srv/%7Eshared/*"],
            &[
                "file:///srv/docs/private/*",
                "https://intranet.example.com/private/*",
            ],
        )]);
        let key = p.view_key(&Identity::anonymous());
        let visible = |uri: &str| p.allows(&key, ItemKind::Resource, uri);
        // `*` crosses `/`: an allow covers the subtree, and so does a deny.
        for uri in [
            "file:///srv/docs/a.txt",
            "file:///srv/docs/a/b.txt",
            "file:///srv/docs/a/./b/../c.txt",
            "FILE:///srv/docs/a.txt",
            "file:///srv/docs/%61.txt",
            "file:///srv/~shared/x",
            "file:///srv/%7eshared/x",
            "https://example.com/x",
            "https://intranet.example.com/public/x",
        ] {
            assert!(visible(uri), "{uri} should be visible");
        }
        for uri in [
            // Climbing out of an allowed prefix.
            "file:///srv/docs/../secret/payroll.txt",
            "file:///srv/docs/%2e%2e/secret/payroll.txt",
            "file:///srv/docs/%2E%2E/secret/payroll.txt",
            "file:///srv/docs/.%2e/secret/payroll.txt",
            // Around a deny.
            "file:///srv/docs/private/a.txt",
            "file:///srv/docs/private/deep/er/a.txt",
            "file:///srv/docs/./private/a.txt",
            "file:///srv/docs/%70rivate/a.txt",
            "file:///srv/docs/x/../private/a.txt",
            "FILE:///srv/docs/private/a.txt",
            "https://Intranet.Example.COM/private/x",
            "https://intranet.example.com:443/private/x",
            "https://intranet.example.com/%70rivate/x",
            // Ambiguous: hidden whatever the rules say.
            "file:///srv/docs//private/a.txt",
            "file:///srv/docs/private%2Fa.txt",
            "https://user@intranet.example.com/private/x",
            // The `/` in the pattern is a boundary, and paths keep their case.
            "file:///srv/docs-old/a.txt",
            "file:///srv/docs",
            "file:///srv/DOCS/a.txt",
        ] {
            assert!(!visible(uri), "{uri} should be hidden");
        }
        assert!(matches!(
            p.decide(&key, ItemKind::Resource, "file:///srv/docs//x"),
            Decision::Ambiguous(UriError::EmptySegment)
        ));
        assert_eq!(
            p.decide(&key, ItemKind::Resource, "file:///srv/docs/./private/a"),
            Decision::Denied {
                rule: 0,
                pattern: "file:///srv/docs/private/*".into()
            }
        );
        // A query-based template (`docs://read{?file}`): the upstream reads the
        // decoded value, so an escaped `/` or a leading `./` cannot slip past.
        let p = Policy::new(&[resource_rule(
            &["docs://*"],
            &["docs://read?file=private/*"],
        )]);
        let key = p.view_key(&Identity::anonymous());
        assert!(p.allows(&key, ItemKind::Resource, "docs://read?file=public/a"));
        for uri in [
            "docs://read?file=private/secret",
            "docs://read?file=private%2Fsecret",
            "docs://read?file=private%2fsecret",
            "docs://read?file=./private/secret",
            "docs://read?file=%2E/private/secret",
            "docs://read?file=public/../private/secret",
            "docs://read?file=private%5Csecret",
        ] {
            assert!(
                !p.allows(&key, ItemKind::Resource, uri),
                "{uri} should be hidden"
            );
        }
        // `**` is not a separate operator: two `*` match what one does.
        let p = Policy::new(&[resource_rule(&["file:///srv/**"], &[])]);
        let key = p.view_key(&Identity::anonymous());
        assert!(p.allows(&key, ItemKind::Resource, "file:///srv/a/b/c"));
        // Tool names are matched as written, case and all.
        let p = Policy::new(&[rule(&["*"], &["Github__*"], &[])]);
        let key = p.view_key(&Identity::anonymous());
        assert!(!p.allows(&key, ItemKind::Tool, "github__x"));
        assert!(p.allows(&key, ItemKind::Tool, "Github__a/b"));
    }

    #[test]
    fn equal_rule_sets_share_a_key_and_no_policy_shows_everything() {
        let p = Policy::new(&[rule(&["group:ops"], &["*"], &[])]);
        assert_eq!(
            p.view_key(&jwt("a", &["ops"])),
            p.view_key(&jwt("b", &["ops", "x"]))
        );
        assert_ne!(p.view_key(&jwt("a", &["ops"])), p.view_key(&jwt("a", &[])));
        let none = Policy::new(&[]);
        let key = none.view_key(&Identity::anonymous());
        assert_eq!(
            none.decide(&key, ItemKind::Resource, "file:///x"),
            Decision::Unrestricted
        );
        assert!(!none.varies_by_caller());
        assert!(!Policy::new(&[rule(&["*"], &["a*"], &[])]).varies_by_caller());
    }
}
