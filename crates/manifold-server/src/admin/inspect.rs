//! What the admin listener tells an operator about the running gateway, as
//! JSON: `/config` (the effective configuration, secrets redacted),
//! `/upstreams` (state, era, restarts, last error, item counts) and
//! `/catalog?as=WHO` (the catalogue a caller would see under `[[policy]]`, and
//! the rule hiding each other item — what `manifold check --as` prints).
//!
//! Invariants: read-only; one catalogue snapshot and one status reading per
//! upstream per answer; never a secret (see `manifold_config::effective`).
//!
//! Not here: serving HTTP (`admin`).

use manifold_catalog::NamedList;
use manifold_policy::{who, ItemKind};
use serde_json::{json, Value};

use crate::state::Gateway;

/// `/config`.
pub(crate) fn config(gw: &Gateway) -> Value {
    gw.cfg().effective.clone()
}

/// `/upstreams`.
pub(crate) fn upstreams(gw: &Gateway) -> Value {
    let list: Vec<Value> = gw
        .upstreams()
        .iter()
        .map(|u| {
            let st = u.status();
            let facts = st.facts.as_ref();
            let lists = u.lists();
            let count = |n: Option<usize>| n.map_or(Value::Null, Value::from);
            json!({
                "name": &**u.name(),
                "transport": u.config().transport.kind(),
                "required": u.config().required,
                "state": st.state.as_str(),
                "era": facts.map(|f| if f.is_stateless() { "2026-07-28" } else { "session" }),
                "protocol_version": facts.map(|f| f.protocol_version.clone()),
                "server_info": facts.map(|f| f.server_info.clone()),
                "restarts": st.restarts,
                "last_error": st.last_error,
                "last_exit_code": st.last_exit_code,
                "in_flight": u.in_flight(),
                "breaker": breaker(u),
                "retries": u.retry_counts().map(|c| json!({"sent": c.retries, "budget_refusals": c.refused})),
                "items": {
                    "tools": count(lists.as_ref().map(|l| l.tools.len())),
                    "prompts": count(lists.as_ref().map(|l| l.prompts.len())),
                    "resources": count(lists.as_ref().map(|l| l.resources.len())),
                    "resource_templates": count(lists.as_ref().map(|l| l.resource_templates.len())),
                },
                "integrity": gw.integrity.report(u.name()),
                "pool": pool(u),
            })
        })
        .collect();
    json!({ "upstreams": list })
}

/// A pool's members as `/upstreams` shows them (`null` unless it is a pool).
fn pool(u: &manifold_upstream::Upstream) -> Value {
    if !u.is_pool() {
        return Value::Null;
    }
    let members: Vec<Value> = u
        .members()
        .into_iter()
        .map(|m| {
            json!({
                "member": m.index,
                "url": m.url,
                "state": m.status.state.as_str(),
                "restarts": m.status.restarts,
                "last_error": m.status.last_error,
                "last_exit_code": m.status.last_exit_code,
                "in_flight": m.in_flight,
                "holder": m.holder,
                "disagrees": m.disagrees,
                "ejected_for_ms": m.ejected_for.map(|d| d.as_millis() as u64),
                "ejections": m.ejections,
                "breaker": m.breaker.as_ref().map_or(Value::Null, breaker_json),
            })
        })
        .collect();
    json!({ "members": members })
}

/// An upstream's circuit breaker as `/upstreams` and `/readyz` show it
/// (`null` without one).
pub(crate) fn breaker(u: &manifold_upstream::Upstream) -> Value {
    u.breaker().as_ref().map_or(Value::Null, breaker_json)
}

/// One breaker (an upstream's, or a pool member's) as the admin plane shows it.
fn breaker_json(b: &manifold_upstream::BreakerReport) -> Value {
    json!({
        "state": b.state.as_str(),
        "retry_in_ms": b.retry_in.map(|d| d.as_millis() as u64),
        "consecutive_failures": b.consecutive_failures,
        "opened": b.opened,
        "reason": b.reason,
    })
}

/// `/catalog` (everything) or `/catalog?as=WHO`, on the default endpoint or
/// `endpoint=PATH`; `Err` names what is wrong with `WHO` or `PATH`.
pub(crate) fn catalog(gw: &Gateway, query: Option<&str>) -> Result<Value, String> {
    let param = |name: &str| {
        query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .find_map(|p| p.strip_prefix(name))
            .map(percent_decode)
            .transpose()
    };
    let spec = param("as=")?;
    let endpoint = param("endpoint=")?;
    let sources = manifold_config::IdentitySources::of(&gw.cfg());
    let viewer = spec
        .as_deref()
        .map(|s| who::identity_for(s, &sources))
        .transpose()?;
    let catalog = match &endpoint {
        None => gw.catalog(),
        Some(path) => gw.endpoint_catalog(path).ok_or_else(|| {
            format!("no endpoint is served at `{path}` ([server] path or an [[endpoint]] path)")
        })?,
    };
    let policy = gw.policy();
    let key = viewer.as_ref().map(|id| policy.view_key(id));
    let mut hidden = Vec::new();
    let mut shown = |kind: &'static str, item: ItemKind, name: &str| -> bool {
        let why = key.as_ref().and_then(|k| policy.hidden(k, item, name));
        match why {
            Some(reason) => {
                hidden.push(json!({"kind": kind, "name": name, "reason": reason}));
                false
            }
            None => true,
        }
    };
    let mut named = |list: &NamedList, kind: &'static str, item: ItemKind| -> Vec<Value> {
        list.entries()
            .iter()
            .filter(|e| shown(kind, item, &e.exposed))
            .map(
                |e| json!({"exposed": e.exposed, "upstream": &*e.upstream, "original": e.original}),
            )
            .collect()
    };
    let tools = named(&catalog.tools, "tool", ItemKind::Tool);
    let prompts = named(&catalog.prompts, "prompt", ItemKind::Prompt);
    let mut by_uri =
        |list: &manifold_catalog::UriList, kind: &'static str, key: &str| -> Vec<Value> {
            list.items()
                .filter(|(uri, _)| shown(kind, ItemKind::Resource, uri))
                .map(|(uri, up)| json!({key: uri, "upstream": &**up}))
                .collect()
        };
    let resources = by_uri(&catalog.resources.resources, "resource", "uri");
    let templates = by_uri(
        &catalog.resources.templates,
        "resource_template",
        "uri_template",
    );
    Ok(json!({
        "endpoint": endpoint,
        "as": spec,
        "tools": tools,
        "prompts": prompts,
        "resources": resources,
        "resource_templates": templates,
        "hidden": spec.as_ref().map(|_| hidden),
    }))
}

/// `%XX` escapes and `+` in a query value.
pub(crate) fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s
                    .get(i + 1..i + 3)
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                    .ok_or_else(|| format!("`{s}` has a bad %-escape"))?;
                out.push(hex);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| format!("`{s}` is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_are_percent_decoded() {
        assert_eq!(
            percent_decode("group%3Aops%2Ckey%3Aci").unwrap(),
            "group:ops,key:ci"
        );
        assert_eq!(percent_decode("a+b").unwrap(), "a b");
        assert!(percent_decode("%zz").is_err());
    }
}
