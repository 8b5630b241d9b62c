//! Resolve and rewrite, once for every forwarded method: from what the client
//! names (an exposed tool or prompt name, a URI, a completion reference) to the
//! upstream that owns it, with the request rewritten for that upstream — its own
//! name, and the SEP-2243 headers computed from its own schema.
//!
//! Invariants: names resolve through the catalog's table, never by splitting the
//! string; what cannot be resolved is refused with the same error whoever asks
//! (an unknown name answers as unknown).
//!
//! Not here: sending the request (`relay`), URI ownership rules
//! (`state::ownership`).

use manifold_catalog::Kind;
use manifold_protocol::headers::{param_headers, standard_headers};
use manifold_protocol::methods as m;
use manifold_upstream::{ExtraHeaders, Upstream};
use serde_json::{Map, Value};

use crate::refusal::Refusal;
use crate::state::views::Access;
use crate::state::Gateway;

/// How an upstream's failure to answer reaches the client, and how a result is
/// decorated for a 2026-07-28 client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResultShape {
    /// `tools/call`: failures are tool results with `isError: true`, which a model
    /// reads.
    Tool,
    /// Failures are JSON-RPC errors.
    Rpc,
    /// `resources/read`: failures are JSON-RPC errors; 2026-07-28 results carry
    /// cache hints.
    Read,
}

/// Where a request goes.
pub(crate) struct Target {
    pub upstream: Upstream,
    /// SEP-2243 headers for HTTP upstreams (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`).
    pub headers: ExtraHeaders,
    pub shape: ResultShape,
    /// The upstream's own name for the tool or prompt, or the URI.
    pub original: Option<String>,
    /// `tools/call` under `[validation] output`: the exposed tool name whose
    /// `outputSchema` the result is checked against.
    pub output_check: Option<String>,
    /// The rate-limit places the call holds until it ends.
    pub permit: Option<manifold_policy::Permit>,
    /// The arguments an operator's override pinned into the call (for the audit
    /// record).
    pub injected: Option<Value>,
}

fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Tools => "tool",
        Kind::Prompts => "prompt",
    }
}

/// A string member of `params`, or the refusal that names it.
pub(crate) fn required_str(
    params: &Map<String, Value>,
    key: &str,
    method: &str,
) -> Result<String, Refusal> {
    params
        .get(key)
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| Refusal::InvalidParams(format!("{method} needs params.{key} (a string)")))
}

/// `tools/call` and `prompts/get`: the exposed `name` to its upstream. `params`
/// is rewritten in place: `name` becomes the upstream's own.
pub(crate) fn named(
    gw: &Gateway,
    access: &Access,
    kind: Kind,
    method: &str,
    name: &str,
    params: &mut Map<String, Value>,
) -> Result<Target, Refusal> {
    // The caller's view (an `Arc`, not a guard): what it may not see is
    // unknown. The entry is borrowed from it; nothing of it is copied but the
    // names the upstream needs.
    let resolved = access
        .catalog
        .list(kind)
        .get(name)
        .and_then(|entry| Some((gw.upstream(&entry.upstream)?, entry)));
    let Some((upstream, entry)) = resolved else {
        return Err(Refusal::UnknownName {
            kind: kind_name(kind),
            name: name.to_string(),
        });
    };
    // An override's pins and hidden arguments, before the headers are taken
    // from the arguments: a pinned `x-mcp-header` argument is mirrored too.
    let injected = entry.adjust.as_ref().and_then(|adjust| {
        adjust.apply(params);
        (!adjust.pin.is_empty()).then(|| Value::Object(adjust.pin.clone()))
    });
    let mut headers = standard_headers(method, Some(&entry.original));
    if !entry.header_params.is_empty() {
        match param_headers(&entry.header_params, params.get("arguments")) {
            Ok(h) => {
                gw.metrics.headers_mirrored(h.len());
                headers.extend(h)
            }
            Err(e) => {
                gw.metrics.header_rejected();
                return Err(Refusal::InvalidParams(format!(
                    "Invalid arguments for {name}: {e}"
                )));
            }
        }
    }
    let original = entry.original.clone();
    params.insert("name".into(), Value::String(original.clone()));
    Ok(Target {
        upstream,
        headers,
        shape: match kind {
            Kind::Tools => ResultShape::Tool,
            Kind::Prompts => ResultShape::Rpc,
        },
        original: Some(original),
        output_check: None,
        permit: None,
        injected,
    })
}

/// `resources/read`: the URI to its owner (URIs are never renamed). Under
/// resource rules `params.uri` becomes the form the rules matched
/// ([`Access::resource_uri`]): what is checked is what the upstream reads.
pub(crate) fn resource(
    gw: &Gateway,
    access: &Access,
    method: &str,
    params: &mut Map<String, Value>,
) -> Result<Target, Refusal> {
    let asked = required_str(params, "uri", method)?;
    let base = gw.catalog();
    let uri = access.resource_uri(&base, &asked)?;
    let owner = access
        .may_read(&base, &uri)
        .then(|| gw.owner_of(&uri))
        .flatten();
    let Some(upstream) = owner else {
        // The URI as asked: a hidden URI answers exactly as an unknown one.
        return Err(Refusal::ResourceNotFound { uri: asked });
    };
    if uri != asked {
        params.insert("uri".into(), Value::String(uri.clone()));
    }
    Ok(Target {
        upstream,
        headers: standard_headers(method, Some(&uri)),
        shape: ResultShape::Read,
        original: Some(uri),
        output_check: None,
        permit: None,
        injected: None,
    })
}

/// `completion/complete`: a `ref/prompt` goes to the prompt's upstream with its
/// original name (rewritten in `params`); a `ref/resource` to the owner of the URI
/// or template.
pub(crate) fn completion(
    gw: &Gateway,
    access: &Access,
    params: &mut Map<String, Value>,
) -> Result<Target, Refusal> {
    let bad = |m: &str| Refusal::InvalidParams(m.to_string());
    let Some(reference) = params.get_mut("ref").and_then(Value::as_object_mut) else {
        return Err(bad("completion/complete needs params.ref (an object)"));
    };
    let kind = reference.get("type").and_then(Value::as_str).unwrap_or("");
    let upstream = match kind {
        "ref/prompt" => {
            let Some(name) = reference.get("name").and_then(Value::as_str) else {
                return Err(bad("ref/prompt needs a `name` (a string)"));
            };
            let Some(entry) = access.catalog.prompts.get(name) else {
                return Err(Refusal::InvalidParams(format!("Unknown prompt: {name}")));
            };
            reference.insert("name".into(), Value::String(entry.original.clone()));
            gw.upstream(&entry.upstream)
        }
        "ref/resource" => {
            let Some(uri) = reference.get("uri").and_then(Value::as_str) else {
                return Err(bad("ref/resource needs a `uri` (a string)"));
            };
            // URI rules go by pattern: refusing here tells nothing of what
            // exists.
            let base = gw.catalog();
            match base.resources.template_owner(uri).cloned() {
                // A template the upstream listed goes back as it listed it.
                Some(name) => access
                    .may_use_uri(uri)
                    .then(|| gw.upstream(&name))
                    .flatten(),
                None => {
                    let uri = access.resource_uri(&base, uri)?;
                    let owner = access
                        .may_use_uri(&uri)
                        .then(|| gw.owner_of(&uri))
                        .flatten();
                    reference.insert("uri".into(), Value::String(uri));
                    owner
                }
            }
        }
        other => {
            return Err(Refusal::InvalidParams(format!(
                "Unknown ref type `{other}`: expected ref/prompt or ref/resource"
            )))
        }
    };
    let Some(upstream) = upstream else {
        return Err(bad("No upstream owns what this completion refers to"));
    };
    Ok(Target {
        upstream,
        headers: standard_headers(m::COMPLETION_COMPLETE, None),
        shape: ResultShape::Rpc,
        original: None,
        output_check: None,
        permit: None,
        injected: None,
    })
}

/// The upstream a `tools/call`, `prompts/get`, `resources/read` or
/// `completion/complete` would go to in the caller's view, without rewriting
/// anything (a 2026-07-28 retry asks whose `requestState` it carries, and
/// whether the caller may still reach it); `None` when it names nothing the
/// caller may use.
pub(crate) fn upstream_of(
    gw: &Gateway,
    access: &Access,
    method: &str,
    params: &Map<String, Value>,
) -> Option<Upstream> {
    let name = |k: &str| params.get(k).and_then(Value::as_str);
    let kind = match method {
        m::TOOLS_CALL => Kind::Tools,
        m::PROMPTS_GET => Kind::Prompts,
        m::RESOURCES_READ => {
            let base = gw.catalog();
            let uri = access.resource_uri(&base, name("uri")?).ok()?;
            return access
                .may_read(&base, &uri)
                .then(|| gw.owner_of(&uri))
                .flatten();
        }
        m::COMPLETION_COMPLETE => {
            // Resolved on a copy: the real resolution rewrites the reference.
            return completion(gw, access, &mut params.clone())
                .ok()
                .map(|t| t.upstream);
        }
        _ => return None,
    };
    let entry = access.catalog.list(kind).get(name("name")?)?;
    gw.upstream(&entry.upstream)
}
