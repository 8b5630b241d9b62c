//! Tool arguments checked against the tool's `inputSchema` at the edge, before
//! anything reaches the upstream (`[validation] arguments = "enforce"`), and a
//! tool's `structuredContent` against its `outputSchema` on the way back
//! (`[validation] output`). Validators are compiled per catalogue build
//! ([`ArgumentValidators::build`]), off the request path and never per call,
//! with the `jsonschema` crate: the dialect from `$schema` (default 2020-12),
//! `$ref` within the document, no remote fetching. A build reuses the
//! validators of the previous one whose schema did not change (keyed by the
//! schema's SHA-256), so one upstream's `list_changed` compiles only what it
//! changed; only the checks that are on are compiled.
//!
//! Cost, measured over the 742 real tools of the shared catalogue
//! (docs/benchmarks.md): about 16 KiB of heap per compiled `inputSchema` and
//! 60 µs to compile one. (jsonschema 0.30 kept about 490 KiB per tool: its
//! static meta-schema validator compiled a new copy of the meta-schema for each
//! distinct nesting path it met, and never freed it.)
//!
//! Invariants: a top-level `null` argument counts as omitted; a schema that
//! does not compile never blocks its tool (it stays
//! listed and callable, unchecked, and the reason is kept for `manifold check`);
//! an error message names each failing JSON pointer and rule, so a model can
//! correct its call; at most [`MAX_REPORTED_ERRORS`] are reported.
//!
//! Not here: what a failure does (the server: a tool error, or a warning for
//! output in `warn` mode).

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Errors named in one refusal; the rest are counted.
pub const MAX_REPORTED_ERRORS: usize = 10;

/// Which checks a catalogue build compiles validators for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Checks {
    /// `inputSchema` (`[validation] arguments`).
    pub arguments: bool,
    /// `outputSchema` (`[validation] output` other than `off`).
    pub output: bool,
}

/// The validators of one catalogue build, by exposed tool name.
#[derive(Default)]
pub struct ArgumentValidators {
    by_tool: foldhash::HashMap<String, Keyed>,
    /// Tools with an `outputSchema` (only when built with output checks).
    output: foldhash::HashMap<String, Keyed>,
    /// Tools without an `inputSchema` (only when built with argument checks).
    no_schema: Vec<String>,
}

/// A compiled schema and the digest of its source, so the next build can
/// reuse it.
#[derive(Clone)]
struct Keyed {
    digest: [u8; 32],
    compiled: Arc<Compiled>,
}

enum Compiled {
    Ready(Box<jsonschema::Validator>),
    /// The schema does not compile: the tool is not checked. Why.
    Skipped(String),
}

impl ArgumentValidators {
    /// Compiles, for the checks that are on, each tool's `inputSchema` and
    /// `outputSchema` (`tools`: exposed name, the tool's JSON as listed),
    /// reusing `previous`'s validator of any schema that did not change.
    pub fn build<'a>(
        tools: impl Iterator<Item = (&'a str, &'a [u8])>,
        checks: Checks,
        previous: &ArgumentValidators,
    ) -> ArgumentValidators {
        let mut known: HashMap<[u8; 32], Arc<Compiled>> = HashMap::new();
        for k in previous.by_tool.values().chain(previous.output.values()) {
            known.insert(k.digest, k.compiled.clone());
        }
        let mut compile = |member: &str, s: &Value| {
            let digest: [u8; 32] = Sha256::digest(s.to_string().as_bytes()).into();
            let compiled = known
                .entry(digest)
                .or_insert_with(|| {
                    Arc::new(match jsonschema::validator_for(s) {
                        Ok(v) => Compiled::Ready(Box::new(v)),
                        Err(e) => Compiled::Skipped(format!("its {member} does not compile: {e}")),
                    })
                })
                .clone();
            Keyed { digest, compiled }
        };
        let mut out = ArgumentValidators::default();
        if !checks.arguments && !checks.output {
            return out;
        }
        for (name, json) in tools {
            let tool = serde_json::from_slice::<Value>(json).unwrap_or(Value::Null);
            if checks.arguments {
                match tool.get("inputSchema") {
                    None => out.no_schema.push(name.to_string()),
                    Some(s) => {
                        out.by_tool
                            .insert(name.to_string(), compile("inputSchema", s));
                    }
                }
            }
            if let Some(s) = tool.get("outputSchema").filter(|_| checks.output) {
                out.output
                    .insert(name.to_string(), compile("outputSchema", s));
            }
        }
        out
    }

    /// Whether results of `tool` are checked: it has a compiled `outputSchema`
    /// and output checks are on. Without one, [`check_output`](Self::check_output)
    /// passes whatever the result is, so a caller need not parse it.
    pub fn checks_output(&self, tool: &str) -> bool {
        matches!(
            self.output.get(tool).map(|k| &*k.compiled),
            Some(Compiled::Ready(_))
        )
    }

    /// `Err`: why a `tools/call` result of `tool` breaks its `outputSchema`:
    /// `structuredContent` must be there and fit it. Results with `isError`,
    /// tools without an (compilable) `outputSchema`, pass.
    pub fn check_output(&self, tool: &str, result: &Value) -> Result<(), Vec<String>> {
        let Some(Compiled::Ready(v)) = self.output.get(tool).map(|k| &*k.compiled) else {
            return Ok(());
        };
        if result.get("isError") == Some(&Value::Bool(true)) {
            return Ok(());
        }
        let Some(structured) = result.get("structuredContent") else {
            return Err(vec![
                "/: the result has no structuredContent, and the tool declares an outputSchema"
                    .into(),
            ]);
        };
        errors_of(v, structured)
    }

    /// `Err`: why `arguments` do not fit `tool`'s schema, one line per failure
    /// (`/pointer: rule`). Unknown tools and skipped schemas pass.
    pub fn check(&self, tool: &str, arguments: &Value) -> Result<(), Vec<String>> {
        let Some(Compiled::Ready(v)) = self.by_tool.get(tool).map(|k| &*k.compiled) else {
            return Ok(());
        };
        // A `null` argument counts as omitted (as for header mirroring, SEP-2243):
        // clients send it for optional parameters they leave unset.
        let without_nulls;
        let arguments = match arguments.as_object() {
            Some(m) if m.values().any(Value::is_null) => {
                without_nulls = Value::Object(
                    m.iter()
                        .filter(|(_, v)| !v.is_null())
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect(),
                );
                &without_nulls
            }
            _ => arguments,
        };
        errors_of(v, arguments)
    }

    /// The tools whose arguments are left unchecked, and why.
    pub fn skipped(&self) -> impl Iterator<Item = (&str, &str)> {
        let broken = self.by_tool.iter().filter_map(|(n, k)| match &*k.compiled {
            Compiled::Skipped(why) => Some((n.as_str(), why.as_str())),
            Compiled::Ready(_) => None,
        });
        let missing = self
            .no_schema
            .iter()
            .map(|n| (n.as_str(), "it has no inputSchema"));
        broken.chain(missing)
    }

    /// Distinct compiled validators held (reused ones counted once).
    pub fn compiled(&self) -> usize {
        let mut seen: Vec<[u8; 32]> = self
            .by_tool
            .values()
            .chain(self.output.values())
            .map(|k| k.digest)
            .collect();
        seen.sort_unstable();
        seen.dedup();
        seen.len()
    }

    /// Whether `other` holds the very validator this build compiled for
    /// `tool`'s arguments (reused, not compiled again).
    pub fn shares_with(&self, other: &ArgumentValidators, tool: &str) -> bool {
        match (self.by_tool.get(tool), other.by_tool.get(tool)) {
            (Some(a), Some(b)) => Arc::ptr_eq(&a.compiled, &b.compiled),
            _ => false,
        }
    }
}

/// Each failure of `instance` against `v` (`/pointer: rule`), at most
/// [`MAX_REPORTED_ERRORS`].
fn errors_of(v: &jsonschema::Validator, instance: &Value) -> Result<(), Vec<String>> {
    // The common case, valid input, takes the allocation-free check.
    if v.is_valid(instance) {
        return Ok(());
    }
    let mut errors: Vec<String> = Vec::new();
    let mut more = 0usize;
    for e in v.iter_errors(instance) {
        if errors.len() < MAX_REPORTED_ERRORS {
            let at = e.instance_path().to_string();
            let at = if at.is_empty() { "/".to_string() } else { at };
            errors.push(format!("{at}: {e}"));
        } else {
            more += 1;
        }
    }
    if errors.is_empty() {
        return Ok(());
    }
    if more > 0 {
        errors.push(format!("… and {more} more"));
    }
    Err(errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BOTH: Checks = Checks {
        arguments: true,
        output: true,
    };

    fn validators(tools: &[(&str, Value)]) -> ArgumentValidators {
        let json: Vec<(String, Vec<u8>)> = tools
            .iter()
            .map(|(n, t)| (n.to_string(), serde_json::to_vec(t).unwrap_or_default()))
            .collect();
        ArgumentValidators::build(
            json.iter().map(|(n, j)| (n.as_str(), j.as_slice())),
            BOTH,
            &ArgumentValidators::default(),
        )
    }

    #[test]
    fn arguments_are_checked_with_pointers_and_rules() {
        let v = validators(&[
            (
                "echo",
                json!({"name": "echo", "inputSchema": {"type": "object",
                "properties": {"text": {"type": "string"}}, "required": ["text"]}}),
            ),
            (
                "nested",
                json!({"name": "nested", "inputSchema": {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"point": {"type": "object", "properties": {"x": {"type": "integer"}},
                                    "required": ["x"]}},
                "properties": {"at": {"$ref": "#/$defs/point"},
                               "tags": {"type": "array", "items": {"enum": ["a", "b"]}}}}}),
            ),
            (
                "draft7",
                json!({"name": "draft7", "inputSchema": {
                "$schema": "http://json-schema.org/draft-07/schema#",
                "type": "object", "properties": {"n": {"type": "number", "maximum": 3}}}}),
            ),
            (
                "broken",
                json!({"name": "broken", "inputSchema": {"type": "object",
                "properties": {"x": {"type": "not-a-type"}}}}),
            ),
            (
                "remote",
                json!({"name": "remote", "inputSchema": {
                "$ref": "https://example.com/schema.json"}}),
            ),
        ]);
        assert!(v.check("echo", &json!({"text": "hi"})).is_ok());
        // null is omitted: fine for an optional parameter, missing for a required one.
        assert!(v.check("nested", &json!({"at": null})).is_ok());
        let e = v
            .check("echo", &json!({"text": null}))
            .expect_err("required");
        assert!(e[0].contains("required"), "{e:?}");
        let e = v.check("echo", &json!({"text": 5})).expect_err("a number");
        assert!(e[0].starts_with("/text: "), "{e:?}");
        let e = v.check("echo", &json!({})).expect_err("missing");
        assert!(e[0].starts_with("/: ") && e[0].contains("text"), "{e:?}");
        let e = v
            .check("nested", &json!({"at": {"x": "1"}, "tags": ["a", "z"]}))
            .expect_err("nested");
        assert_eq!(e.len(), 2, "{e:?}");
        assert!(e.iter().any(|l| l.starts_with("/at/x: ")), "{e:?}");
        assert!(e.iter().any(|l| l.starts_with("/tags/1: ")), "{e:?}");
        assert!(v.check("draft7", &json!({"n": 4})).is_err());
        // Not compiled: callable, unchecked, and the reason is kept.
        assert!(v.check("broken", &json!({"x": 1})).is_ok());
        assert!(v.check("remote", &json!({"x": 1})).is_ok());
        let skipped: Vec<&str> = v.skipped().map(|(n, _)| n).collect();
        assert!(
            skipped.contains(&"broken") && skipped.contains(&"remote"),
            "{skipped:?}"
        );
        assert!(v.check("unknown", &json!(1)).is_ok());
    }

    /// The official conformance suite's `json-schema-2020-12` fixture (tool
    /// `json_schema_2020_12_tool`, SEP-1613), verbatim.
    #[test]
    fn the_conformance_2020_12_fixture_compiles_and_checks() {
        let v = validators(&[(
            "json_schema_2020_12_tool",
            json!({"name": "json_schema_2020_12_tool",
                "description": "Tool with JSON Schema 2020-12 features",
                "inputSchema": {
                    "$schema": "https://json-schema.org/draft/2020-12/schema",
                    "type": "object",
                    "$defs": {"address": {"type": "object", "properties": {
                        "street": {"type": "string"}, "city": {"type": "string"}}}},
                    "properties": {"name": {"type": "string"},
                                   "address": {"$ref": "#/$defs/address"}},
                    "additionalProperties": false}}),
        )]);
        assert_eq!(v.skipped().count(), 0);
        let tool = "json_schema_2020_12_tool";
        assert!(v
            .check(
                tool,
                &json!({"name": "Ada", "address": {"street": "1 Main", "city": "X"}})
            )
            .is_ok());
        let e = v
            .check(tool, &json!({"address": {"city": 7}}))
            .expect_err("city");
        assert!(e[0].starts_with("/address/city: "), "{e:?}");
        let e = v
            .check(tool, &json!({"name": "Ada", "extra": 1}))
            .expect_err("additionalProperties");
        assert!(e[0].contains("extra"), "{e:?}");
    }

    /// A rebuild compiles only the schemas that changed: one upstream's
    /// `list_changed` must not recompile every tool of every upstream.
    #[test]
    fn a_rebuild_reuses_the_validators_of_unchanged_schemas() {
        let tools = |n: u32| {
            vec![
                (
                    "same",
                    json!({"inputSchema": {"type": "object", "properties": {"a": {"type": "string"}}}}),
                ),
                (
                    "changed",
                    json!({"inputSchema": {"type": "object", "properties": {"n": {"maximum": n}}}}),
                ),
            ]
        };
        let first = validators(&tools(1));
        let json: Vec<(String, Vec<u8>)> = tools(2)
            .iter()
            .map(|(n, t)| (n.to_string(), serde_json::to_vec(t).unwrap_or_default()))
            .collect();
        let second = ArgumentValidators::build(
            json.iter().map(|(n, j)| (n.as_str(), j.as_slice())),
            BOTH,
            &first,
        );
        assert!(second.shares_with(&first, "same"));
        assert!(!second.shares_with(&first, "changed"));
        assert!(first.check("changed", &json!({"n": 2})).is_err());
        assert!(second.check("changed", &json!({"n": 2})).is_ok());
        // Two tools with one schema share one validator.
        let twins = validators(&[
            ("a", json!({"inputSchema": {"type": "object"}})),
            ("b", json!({"inputSchema": {"type": "object"}})),
        ]);
        assert_eq!(twins.compiled(), 1);
    }

    #[test]
    fn many_errors_are_capped() {
        let props: serde_json::Map<String, Value> = (0..30)
            .map(|i| (format!("p{i}"), json!({"type": "string"})))
            .collect();
        let v = validators(&[(
            "wide",
            json!({"inputSchema": {"type": "object", "properties": props}}),
        )]);
        let args: serde_json::Map<String, Value> =
            (0..30).map(|i| (format!("p{i}"), json!(i))).collect();
        let e = v
            .check("wide", &Value::Object(args))
            .expect_err("all wrong");
        assert_eq!(e.len(), MAX_REPORTED_ERRORS + 1);
        assert!(e[MAX_REPORTED_ERRORS].contains("20 more"), "{e:?}");
    }
}

#[cfg(test)]
mod output_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_content_is_checked_against_the_output_schema() {
        let tool = json!({"name": "w", "inputSchema": {"type": "object"},
            "outputSchema": {"type": "object", "properties": {"t": {"type": "number"}}, "required": ["t"]}});
        let json = serde_json::to_vec(&tool).unwrap_or_default();
        let both = Checks {
            arguments: true,
            output: true,
        };
        let none = ArgumentValidators::default();
        let v = ArgumentValidators::build([("w", json.as_slice())].into_iter(), both, &none);
        assert!(v
            .check_output("w", &json!({"content": [], "structuredContent": {"t": 1}}))
            .is_ok());
        let e = v
            .check_output(
                "w",
                &json!({"content": [], "structuredContent": {"t": "x"}}),
            )
            .expect_err("a string");
        assert!(e[0].starts_with("/t: "), "{e:?}");
        assert!(
            v.check_output("w", &json!({"content": []})).is_err(),
            "missing"
        );
        assert!(v
            .check_output("w", &json!({"isError": true, "content": []}))
            .is_ok());
        // Built without output checks: nothing is checked.
        let arguments_only = Checks {
            arguments: true,
            output: false,
        };
        let off =
            ArgumentValidators::build([("w", json.as_slice())].into_iter(), arguments_only, &none);
        assert!(off.check_output("w", &json!({"content": []})).is_ok());
        // Built without argument checks: no inputSchema is compiled at all.
        let output_only = Checks {
            arguments: false,
            output: true,
        };
        let o = ArgumentValidators::build([("w", json.as_slice())].into_iter(), output_only, &none);
        assert_eq!(o.compiled(), 1);
        assert!(o.check("w", &json!({"anything": 1})).is_ok());
        assert!(o.check_output("w", &json!({"content": []})).is_err());
    }
}
