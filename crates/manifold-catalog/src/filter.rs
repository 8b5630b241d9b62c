//! The operator's per-upstream `allow` / `deny` glob lists for tools and prompts.
//!
//! Rule: an item is shown when it matches some `allow` glob (or `allow` is empty) and
//! matches no `deny` glob; deny wins. Globs match the upstream's own (original) name,
//! so a filter does not change meaning when naming settings change. `*` matches any
//! run of characters (including none), `?` exactly one; everything else is literal.
//!
//! Not here: routing. A hidden item is not in the naming table, so it cannot be
//! called: routing goes through the table only.

use crate::Kind;

/// One glob pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Glob(Vec<char>);

impl Glob {
    pub fn new(pattern: &str) -> Glob {
        Glob(pattern.chars().collect())
    }

    pub fn matches(&self, name: &str) -> bool {
        let name: Vec<char> = name.chars().collect();
        // Iterative wildcard matching with one backtrack point: linear in practice,
        // O(n·m) at worst, no recursion.
        let (p, n) = (&self.0, &name);
        let (mut pi, mut ni) = (0, 0);
        let mut star: Option<(usize, usize)> = None;
        while ni < n.len() {
            if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
                pi += 1;
                ni += 1;
            } else if pi < p.len() && p[pi] == '*' {
                star = Some((pi, ni));
                pi += 1;
            } else if let Some((sp, sn)) = star {
                pi = sp + 1;
                ni = sn + 1;
                star = Some((sp, sn + 1));
            } else {
                return false;
            }
        }
        p[pi..].iter().all(|&c| c == '*')
    }
}

/// Allow and deny lists for one kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Rules {
    pub allow: Vec<Glob>,
    pub deny: Vec<Glob>,
}

impl Rules {
    pub fn shows(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|g| g.matches(name)))
            && !self.deny.iter().any(|g| g.matches(name))
    }
}

/// One upstream's filters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ItemFilter {
    pub tools: Rules,
    pub prompts: Rules,
}

impl ItemFilter {
    pub fn shows(&self, kind: Kind, name: &str) -> bool {
        match kind {
            Kind::Tools => self.tools.shows(name),
            Kind::Prompts => self.prompts.shows(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "anything", true),
            ("*", "", true),
            ("get_*", "get_issue", true),
            ("get_*", "list_issues", false),
            ("*_issue", "get_issue", true),
            ("*issue*", "list_issues_fast", true),
            ("get_?", "get_x", true),
            ("get_?", "get_xy", false),
            ("a*b*c", "axxbyyc", true),
            ("a*b*c", "axxbyy", false),
            ("exact", "exact", true),
            ("exact", "exactly", false),
            ("", "", true),
            ("", "x", false),
            ("ä*", "äbc", true),
        ];
        for (pattern, name, want) in cases {
            assert_eq!(
                Glob::new(pattern).matches(name),
                *want,
                "{pattern} vs {name}"
            );
        }
    }

    #[test]
    fn deny_wins_and_empty_allow_allows_all() {
        let rules = Rules {
            allow: vec![],
            deny: vec![Glob::new("delete_*")],
        };
        assert!(rules.shows("get_issue"));
        assert!(!rules.shows("delete_repo"));
        let rules = Rules {
            allow: vec![Glob::new("get_*"), Glob::new("list_*")],
            deny: vec![Glob::new("get_secret*")],
        };
        assert!(rules.shows("get_issue"));
        assert!(rules.shows("list_prs"));
        assert!(!rules.shows("create_issue"));
        assert!(!rules.shows("get_secret_value"));
    }
}
