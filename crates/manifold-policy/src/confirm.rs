//! `[confirm]`: which tool calls a human confirms before they are forwarded —
//! tools whose exposed name matches a glob, and (with `destructive = true`)
//! every tool annotated `destructiveHint: true` and not `readOnlyHint: true`.
//!
//! Invariants: an absent hint is not a destructive one (only an explicit
//! `destructiveHint: true` counts, so a tool that says nothing is not asked
//! about unless a glob names it); a decision depends on the name and the tool's
//! listed JSON only.
//!
//! Not here: asking the client (manifold-server).

use manifold_config::{ConfirmSection, WithoutElicitation};
use manifold_foundation::glob::Glob;
use serde_json::Value;

/// `[confirm]`, compiled.
#[derive(Debug, Default)]
pub struct ConfirmRules {
    tools: Vec<Glob>,
    destructive: bool,
    /// What happens when the calling client cannot be asked.
    pub without_elicitation: WithoutElicitation,
}

impl ConfirmRules {
    pub fn new(c: &ConfirmSection) -> ConfirmRules {
        ConfirmRules {
            tools: c.tools.iter().map(|g| Glob::new(g)).collect(),
            destructive: c.destructive,
            without_elicitation: c.without_elicitation,
        }
    }

    /// Whether nothing is ever confirmed.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && !self.destructive
    }

    /// Whether a call of the tool `exposed` (listed as `tool_json`) needs a
    /// human's confirmation.
    pub fn needs(&self, exposed: &str, tool_json: &[u8]) -> bool {
        if self.tools.iter().any(|g| g.matches(exposed)) {
            return true;
        }
        if !self.destructive {
            return false;
        }
        let Ok(tool) = serde_json::from_slice::<Value>(tool_json) else {
            return false;
        };
        let hint = |k: &str| tool["annotations"][k].as_bool();
        hint("destructiveHint") == Some(true) && hint("readOnlyHint") != Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_destructive_hints() {
        let rules = ConfirmRules::new(&ConfirmSection {
            tools: vec!["github__delete_*".into(), "*__drop_*".into()],
            destructive: true,
            without_elicitation: WithoutElicitation::Refuse,
        });
        let tool = |annotations: &str| format!(r#"{{"name":"t","annotations":{annotations}}}"#);
        for (name, json, wanted) in [
            ("github__delete_repo", tool("{}"), true),
            ("db__drop_table", tool("{}"), true),
            ("fs__write", tool(r#"{"destructiveHint":true}"#), true),
            (
                "fs__write",
                tool(r#"{"destructiveHint":true,"readOnlyHint":true}"#),
                false,
            ),
            ("fs__read", tool(r#"{"readOnlyHint":true}"#), false),
            ("fs__stat", r#"{"name":"t"}"#.to_string(), false),
            ("fs__write", tool(r#"{"destructiveHint":false}"#), false),
        ] {
            assert_eq!(rules.needs(name, json.as_bytes()), wanted, "{name} {json}");
        }
        let globs_only = ConfirmRules::new(&ConfirmSection {
            tools: vec!["x__*".into()],
            ..Default::default()
        });
        assert!(!globs_only.needs("fs__write", tool(r#"{"destructiveHint":true}"#).as_bytes()));
        assert!(ConfirmRules::new(&ConfirmSection::default()).is_empty());
    }
}
