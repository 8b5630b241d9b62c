//! `[[policy]]` (who sees and may use which tools, prompts and resources) and
//! `[confirm]` (which calls a human confirms first): the file model and its
//! validated form. The decisions themselves live in manifold-policy.
//!
//! Invariants: every `who` entry is `*`, `subject:…`, `cert:…`, `group:…`,
//! `scope:…` or `key:…` (the same grammar as `[[rate_limit]]`; `subject:`
//! entries are qualified by their source afterwards, see `principals`); a rule
//! names at least one kind; glob lists hold non-empty patterns.
//!
//! Not here: matching callers or items (manifold-policy).

use serde::{Deserialize, Serialize};

/// `allow` / `deny` glob lists for one kind of item.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AllowDeny {
    /// Globs (`*`, `?`) of what the rule lets its callers see and use.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Globs of what the rule hides from its callers; a deny in any rule that
    /// matches the caller wins over every allow.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// `[[policy]]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicySection {
    /// Whom the rule applies to: `*`, `subject:<source>:<sub>` (or
    /// `subject:<sub>` with one identity source), `cert:<type>:<name>`,
    /// `group:<g>`, `scope:<s>`, `key:<api key name>`.
    pub who: Vec<String>,
    /// Exposed tool names.
    #[serde(default)]
    pub tools: Option<AllowDeny>,
    /// Exposed prompt names.
    #[serde(default)]
    pub prompts: Option<AllowDeny>,
    /// Resource URIs (and resource template strings).
    #[serde(default)]
    pub resources: Option<AllowDeny>,
    /// Exposed skill names (SEP-2640: `<upstream prefix><separator><frontmatter
    /// name>`); a hidden skill's files are hidden with it.
    #[serde(default)]
    pub skills: Option<AllowDeny>,
}

/// One validated `[[policy]]` rule (a kind the rule does not name allows and
/// denies nothing of that kind).
pub type PolicyRule = PolicySection;

/// Default `[confirm] destructive`.
pub const DEFAULT_CONFIRM_DESTRUCTIVE: bool = false;

/// `[confirm] without_elicitation`: what happens when the calling client
/// cannot be asked.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum WithoutElicitation {
    /// The call is refused, naming the missing client capability (default).
    #[default]
    Refuse,
    /// The call goes ahead unconfirmed (audited as such).
    Allow,
}

/// `[confirm]`: calls a human confirms through the client before they are
/// forwarded.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ConfirmSection {
    /// Exposed tool-name globs that always need confirmation.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Also every tool annotated `destructiveHint: true` and not
    /// `readOnlyHint: true` (default false).
    #[serde(default)]
    pub destructive: bool,
    #[serde(default)]
    pub without_elicitation: WithoutElicitation,
}

/// Checks one `who` list (`at` names the key in messages).
pub(crate) fn check_who(at: &str, who: &[String]) -> Result<(), String> {
    if who.is_empty() {
        return Err(format!(
            "key `{at}.who`: name whom it applies to (\"*\" for everyone)"
        ));
    }
    for w in who {
        let ok = w == "*"
            || ["subject:", "cert:", "group:", "scope:", "key:"]
                .iter()
                .any(|p| w.strip_prefix(p).is_some_and(|rest| !rest.is_empty()));
        if !ok {
            return Err(format!(
                "key `{at}.who`: `{w}` is not `*`, `subject:…`, `cert:…`, `group:…`, `scope:…` or `key:…`"
            ));
        }
    }
    Ok(())
}

/// An allow/deny list's globs: none empty (shared with `[[endpoint]]`).
pub(crate) fn check_globs(at: &str, globs: &[String]) -> Result<(), String> {
    match globs.iter().position(|g| g.trim().is_empty()) {
        Some(i) => Err(format!(
            "key `{at}[{i}]`: an empty pattern matches nothing; use \"*\" for everything"
        )),
        None => Ok(()),
    }
}

pub(crate) fn validate(rules: &[PolicySection]) -> Result<Vec<PolicyRule>, String> {
    for (i, r) in rules.iter().enumerate() {
        let at = format!("policy[{i}]");
        check_who(&at, &r.who)?;
        if r.tools.is_none() && r.prompts.is_none() && r.resources.is_none() && r.skills.is_none() {
            return Err(format!(
                "key `{at}`: name at least one of `tools`, `prompts`, `resources` or `skills`"
            ));
        }
        for (kind, lists) in [
            ("tools", &r.tools),
            ("prompts", &r.prompts),
            ("resources", &r.resources),
            ("skills", &r.skills),
        ] {
            if let Some(l) = lists {
                check_globs(&format!("{at}.{kind}.allow"), &l.allow)?;
                check_globs(&format!("{at}.{kind}.deny"), &l.deny)?;
            }
        }
    }
    Ok(rules.to_vec())
}

pub(crate) fn validate_confirm(c: &ConfirmSection) -> Result<ConfirmSection, String> {
    check_globs("confirm.tools", &c.tools)?;
    Ok(c.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(who: &[&str], tools: Option<AllowDeny>) -> PolicySection {
        PolicySection {
            who: who.iter().map(|s| s.to_string()).collect(),
            tools,
            prompts: None,
            resources: None,
            skills: None,
        }
    }

    #[test]
    fn errors_name_the_rule_and_field() {
        let allow = |a: &[&str]| AllowDeny {
            allow: a.iter().map(|s| s.to_string()).collect(),
            deny: vec![],
        };
        for (rules, wanted) in [
            (vec![rule(&[], Some(allow(&["*"])))], "key `policy[0].who`"),
            (
                vec![rule(&["*"], Some(allow(&["*"]))), rule(&["team:x"], None)],
                "key `policy[1].who`: `team:x`",
            ),
            (
                vec![rule(&["*"], None)],
                "key `policy[0]`: name at least one",
            ),
            (
                vec![rule(&["*"], Some(allow(&["a", " "])))],
                "key `policy[0].tools.allow[1]`",
            ),
        ] {
            let e = validate(&rules).unwrap_err();
            assert!(e.starts_with(wanted), "{e}");
        }
        assert!(validate(&[rule(&["group:ops"], Some(allow(&["*"])))]).is_ok());
    }
}
