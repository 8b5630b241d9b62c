//! `[upstreams.<name>.overrides.<tool>]`: an operator's fixes to what an
//! upstream publishes for one tool — its exposed name, its description,
//! arguments pinned to a value (removed from the exposed `inputSchema` and
//! injected on every call) and optional arguments hidden (removed from the
//! exposed `inputSchema` and from calls), whether its calls may be
//! retried (`retry`), and whether identical concurrent calls of one principal
//! may share one upstream call (`coalesce`).
//!
//! Invariants: a validated override changes something; its `name` fits the
//! exposed-name alphabet; an argument is not both pinned and hidden.
//!
//! Not here: applying it to the catalogue (manifold-catalog) or to calls
//! (manifold-server).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// One `[upstreams.<name>.overrides.<tool>]` (keyed by the upstream's own tool
/// name).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ToolOverride {
    /// Exposed as `<prefix><separator><name>` instead of the upstream's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Replaces the tool's description.
    #[serde(default)]
    pub description: Option<String>,
    /// Arguments set to these values on every call, and removed from the
    /// exposed `inputSchema` (a client cannot see or change them).
    #[serde(default)]
    pub pin: Map<String, Value>,
    /// Optional arguments removed from the exposed `inputSchema`, and from
    /// calls that send them anyway.
    #[serde(default)]
    pub hide: Vec<String>,
    /// Whether calls of this tool may be retried (`[upstreams.<name>]
    /// retries`): `true` for a tool that is safe to repeat whatever its
    /// annotations say, `false` for one whose `readOnlyHint` or
    /// `idempotentHint` cannot be trusted. Unset: its annotations decide.
    #[serde(default)]
    pub retry: Option<bool>,
    /// Whether identical concurrent calls of this tool by the same principal
    /// may share one upstream call (docs/reliability.md, "Coalescing").
    /// Honoured only while the tool's annotations say `readOnlyHint: true`
    /// (a tool that is not read-only is called once per call, and the
    /// gateway warns). Unset or `false`: every call is its own.
    #[serde(default)]
    pub coalesce: Option<bool>,
}

pub(crate) fn validate(
    key: &str,
    overrides: &BTreeMap<String, ToolOverride>,
) -> Result<BTreeMap<String, ToolOverride>, String> {
    for (tool, o) in overrides {
        let at = format!("{key}.overrides.{tool}");
        if o.name.is_none()
            && o.description.is_none()
            && o.pin.is_empty()
            && o.hide.is_empty()
            && o.retry.is_none()
            && o.coalesce.is_none()
        {
            return Err(format!(
                "key `{at}`: set at least one of `name`, `description`, `pin`, `hide`, `retry` or `coalesce`"
            ));
        }
        if let Some(n) = &o.name {
            let ok = !n.is_empty()
                && n.len() <= 64
                && n.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok {
                return Err(format!(
                    "key `{at}.name`: `{n}` must match ^[A-Za-z0-9_-]{{1,64}}$ (it becomes part of a tool name)"
                ));
            }
        }
        if let Some(arg) = o.hide.iter().find(|h| o.pin.contains_key(*h)) {
            return Err(format!(
                "key `{at}.hide`: `{arg}` is also pinned; pin it or hide it"
            ));
        }
        if let Some(i) = o.hide.iter().position(|h| h.is_empty()) {
            return Err(format!("key `{at}.hide[{i}]`: an empty argument name"));
        }
    }
    Ok(overrides.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn errors_name_the_override_and_field() {
        let one = |o: ToolOverride| BTreeMap::from([("create_issue".to_string(), o)]);
        let pin = json!({"owner": "acme"}).as_object().cloned().unwrap();
        for (o, wanted) in [
            (
                ToolOverride::default(),
                "key `upstreams.gh.overrides.create_issue`: set at least one",
            ),
            (
                ToolOverride {
                    name: Some("open issue".into()),
                    ..Default::default()
                },
                "key `upstreams.gh.overrides.create_issue.name`",
            ),
            (
                ToolOverride {
                    pin: pin.clone(),
                    hide: vec!["owner".into()],
                    ..Default::default()
                },
                "key `upstreams.gh.overrides.create_issue.hide`: `owner` is also pinned",
            ),
        ] {
            let e = validate("upstreams.gh", &one(o)).unwrap_err();
            assert!(e.starts_with(wanted), "{e}");
        }
        let fine = ToolOverride {
            name: Some("open_issue".into()),
            pin,
            ..Default::default()
        };
        assert!(validate("upstreams.gh", &one(fine)).is_ok());
        let only_retry = ToolOverride {
            retry: Some(false),
            ..Default::default()
        };
        assert!(validate("upstreams.gh", &one(only_retry)).is_ok());
        let only_coalesce = ToolOverride {
            coalesce: Some(true),
            ..Default::default()
        };
        assert!(validate("upstreams.gh", &one(only_coalesce)).is_ok());
    }
}
