//! The operator's per-upstream `allow` / `deny` glob lists for tools and prompts.
//!
//! Rule: an item is shown when it matches some `allow` glob (or `allow` is empty) and
//! matches no `deny` glob; deny wins. Globs match the upstream's own (original) name,
//! so a filter does not change meaning when naming settings change. Globs are
//! manifold-foundation's ([`Glob`]): `*` any run, `?` one character.
//!
//! Not here: routing. A hidden item is not in the naming table, so it cannot be
//! called: routing goes through the table only.

use crate::entry::Kind;
pub use manifold_foundation::glob::Glob;

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
