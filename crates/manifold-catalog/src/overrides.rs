//! An operator's per-tool overrides (`[upstreams.<name>.overrides.<tool>]`),
//! applied when the catalog is built: the exposed name comes from `name`, the
//! description is replaced, pinned and hidden arguments leave the exposed
//! `inputSchema`; and the [`Adjust`] each call of the tool needs (inject the
//! pins, drop hidden arguments a client sent anyway).
//!
//! Invariants: every other member of the tool and of its schema passes through
//! unchanged and in order (tenet 1); a required argument is never hidden (the
//! upstream would refuse every call) — it stays exposed and the catalog reports
//! it; pins always win over what a client sends.
//!
//! Not here: validating the override (manifold-config) or naming (`naming`).

use serde_json::{Map, Value};
use std::collections::HashMap;

/// One tool's override, by the upstream's own tool name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Override {
    pub name: Option<String>,
    pub description: Option<String>,
    pub pin: Map<String, Value>,
    pub hide: Vec<String>,
}

/// An upstream's overrides, by its own tool names.
pub type Overrides = HashMap<String, Override>;

/// What a call of an overridden tool needs done to its arguments.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Adjust {
    /// Set on every call (and reported to the audit log).
    pub pin: Map<String, Value>,
    /// Removed from every call.
    pub hide: Vec<String>,
}

impl Adjust {
    /// Injects the pins into a call's `params.arguments` and drops hidden
    /// arguments. Absent or `null` arguments become an object holding the pins.
    pub fn apply(&self, params: &mut Map<String, Value>) {
        let target = params
            .entry("arguments")
            .or_insert_with(|| Value::Object(Map::new()));
        if !target.is_object() {
            *target = Value::Object(Map::new());
        }
        if let Value::Object(args) = target {
            for h in &self.hide {
                args.remove(h);
            }
            for (k, v) in &self.pin {
                args.insert(k.clone(), v.clone());
            }
        }
    }
}

/// Applies `o` to a tool item; returns what calls must do (if anything) and
/// what could not be done.
pub fn apply(item: &mut Map<String, Value>, o: &Override) -> (Option<Adjust>, Vec<String>) {
    if let Some(d) = &o.description {
        item.insert("description".into(), Value::String(d.clone()));
    }
    let mut problems = Vec::new();
    let required: Vec<String> = item
        .get("inputSchema")
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut hide = Vec::new();
    for h in &o.hide {
        if required.contains(h) {
            problems.push(format!(
                "`{h}` is required by the tool's inputSchema, so it cannot be hidden (pin it instead)"
            ));
        } else {
            hide.push(h.clone());
        }
    }
    if let Some(Value::Object(schema)) = item.get_mut("inputSchema") {
        // Only the top level is edited: say so where the schema says more
        // elsewhere (a pinned argument may still be required there).
        let touches = !o.pin.is_empty() || !hide.is_empty();
        if let Some(k) = ["$ref", "allOf", "anyOf", "oneOf", "if", "dependentRequired"]
            .iter()
            .find(|k| schema.contains_key(**k))
            .filter(|_| touches)
        {
            problems.push(format!(
                "the inputSchema uses `{k}`: only its top-level `properties` and `required` were edited"
            ));
        }
        let gone = |k: &str| o.pin.contains_key(k) || hide.iter().any(|h| h == k);
        if let Some(Value::Object(props)) = schema.get_mut("properties") {
            props.retain(|k, _| !gone(k));
        }
        if let Some(Value::Array(req)) = schema.get_mut("required") {
            req.retain(|r| !r.as_str().is_some_and(gone));
        }
    }
    let adjust = (!o.pin.is_empty() || !hide.is_empty()).then(|| Adjust {
        pin: o.pin.clone(),
        hide,
    });
    (adjust, problems)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pins_and_hidden_arguments_leave_the_schema_and_the_rest_stays() {
        let mut item = json!({
            "name": "create_issue", "description": "old", "x-extra": {"keep": 1},
            "inputSchema": {"type": "object", "additionalProperties": false,
                "properties": {"owner": {"type": "string"}, "title": {"type": "string"},
                               "debug": {"type": "boolean"}, "repo": {"type": "string"}},
                "required": ["owner", "title", "repo"]}
        })
        .as_object()
        .cloned()
        .unwrap();
        let o = Override {
            description: Some("new".into()),
            pin: json!({"owner": "acme"}).as_object().cloned().unwrap(),
            hide: vec!["debug".into(), "repo".into()],
            ..Default::default()
        };
        let (adjust, problems) = apply(&mut item, &o);
        assert_eq!(
            Value::Object(item),
            json!({
                "name": "create_issue", "description": "new", "x-extra": {"keep": 1},
                "inputSchema": {"type": "object", "additionalProperties": false,
                    "properties": {"title": {"type": "string"}, "repo": {"type": "string"}},
                    "required": ["title", "repo"]}
            })
        );
        assert_eq!(problems.len(), 1, "repo is required: {problems:?}");
        let mut combined = json!({"name": "t", "inputSchema": {"type": "object",
            "properties": {"owner": {}}, "allOf": [{"required": ["owner"]}]}})
        .as_object()
        .cloned()
        .unwrap();
        let (_, problems) = apply(&mut combined, &o);
        assert!(
            problems.iter().any(|p| p.contains("`allOf`")),
            "{problems:?}"
        );
        let adjust = adjust.unwrap();
        assert_eq!(adjust.hide, ["debug"]);
        let mut params =
            json!({"name": "x", "arguments": {"title": "t", "owner": "evil", "debug": true}})
                .as_object()
                .cloned()
                .unwrap();
        adjust.apply(&mut params);
        assert_eq!(params["arguments"], json!({"title": "t", "owner": "acme"}));
        for mut params in [
            Map::new(),
            json!({"arguments": null}).as_object().cloned().unwrap(),
        ] {
            adjust.apply(&mut params);
            assert_eq!(params["arguments"], json!({"owner": "acme"}));
        }
    }
}
