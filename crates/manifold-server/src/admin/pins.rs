//! `POST /pins/approve` on the admin listener: approves held items as the
//! admin principal (what `manifold pins approve` does from the command line).
//!
//! The body (`Content-Type: application/json`, at most [`MAX_PINS_BODY`]
//! bytes), one of:
//! - `{"items": ["NAME", …]}` — each `UPSTREAM/NAME`, the upstream's own name
//!   (a template's `uriTemplate`) or the exposed `PREFIX__NAME`; optionally
//!   `"kind": "tool" | "prompt" | "resource_template"` to narrow every name,
//!   and `"fingerprints": {"NAME": "sha256:…"}` to approve only what the
//!   approver looked at;
//! - `{"upstream": "U"}` — every held item of that upstream;
//! - `{"all": true}` — every held item.
//!
//! Answers 200 with what was approved (`{"approved": [{"upstream", "kind",
//! "name", "fingerprint", "previous", "reason"}]}`), 400 for a body that names
//! nothing usable (an unknown or ambiguous name, nothing pending, a stale
//! fingerprint: nothing is approved then), 503 when the store cannot be
//! written.
//!
//! Invariants: all or nothing; the approver recorded (in the store's journal,
//! then the audit log) is the admin principal; a request that is not JSON is
//! refused before its body is read (`admin_auth::not_a_form`).
//!
//! Not here: who may call it (`admin::auth`), the approval itself
//! (manifold-integrity `approve`, the keeper).

use http::{Request, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use manifold_integrity::{Fingerprint, ItemKind, Names, Selection, Wanted};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;

use super::auth::AdminPrincipal;
use crate::state::integrity::keeper::PinsError;
use crate::state::Gateway;

/// The largest body `POST /pins/approve` reads.
pub const MAX_PINS_BODY: usize = 64 * 1024;
/// How long the body may take to arrive.
const BODY_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Body {
    #[serde(default)]
    items: Vec<String>,
    #[serde(default)]
    kind: Option<ItemKind>,
    #[serde(default)]
    fingerprints: BTreeMap<String, Fingerprint>,
    #[serde(default)]
    upstream: Option<String>,
    #[serde(default)]
    all: bool,
}

/// Answers a `POST` with a JSON body (checked by the caller): the status and
/// the JSON to send.
pub(crate) async fn approve(
    gw: &Arc<Gateway>,
    req: Request<Incoming>,
    principal: &AdminPrincipal,
) -> (StatusCode, Value) {
    let read = tokio::time::timeout(
        BODY_WAIT,
        Limited::new(req.into_body(), MAX_PINS_BODY).collect(),
    )
    .await;
    let bytes = match read {
        Ok(Ok(b)) => b.to_bytes(),
        Ok(Err(_)) => {
            return bad(format!(
                "the body could not be read, or is over {MAX_PINS_BODY} bytes"
            ))
        }
        Err(_) => return bad(format!("the body did not arrive within {BODY_WAIT:?}")),
    };
    let body: Body = match serde_json::from_slice(&bytes) {
        Ok(b) => b,
        Err(e) => return bad(format!(
            "the body must be {{\"items\": [NAME, …]}}, {{\"upstream\": U}} or {{\"all\": true}}: {e}"
        )),
    };
    let selection = match selection(gw, body) {
        Ok(s) => s,
        Err(e) => return bad(e),
    };
    let by = principal.display_name();
    tracing::info!(principal = %by, "POST /pins/approve");
    match gw.approve_pins(selection, by).await {
        Ok(approved) => {
            let list: Vec<Value> = approved
                .iter()
                .map(|a| {
                    json!({
                        "upstream": a.item.upstream,
                        "kind": a.item.kind,
                        "name": a.item.name,
                        "fingerprint": a.fingerprint,
                        "previous": a.previous,
                        "reason": a.reason.as_str(),
                    })
                })
                .collect();
            (StatusCode::OK, json!({ "approved": list }))
        }
        Err(PinsError::Approve(e)) => bad(e.to_string()),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({ "error": e.to_string() }),
        ),
    }
}

fn bad(why: String) -> (StatusCode, Value) {
    (StatusCode::BAD_REQUEST, json!({ "error": why }))
}

/// What the body selects, names resolved against the store in force.
fn selection(gw: &Gateway, body: Body) -> Result<Selection, String> {
    let chosen = [!body.items.is_empty(), body.upstream.is_some(), body.all]
        .iter()
        .filter(|b| **b)
        .count();
    if chosen != 1 {
        return Err(
            "name exactly one of `items` (a non-empty list), `upstream` or `all: true`".into(),
        );
    }
    if let Some(u) = body.upstream {
        return Ok(Selection::Upstream(u));
    }
    if body.all {
        return Ok(Selection::All);
    }
    let cfg = gw.cfg();
    let names = Names::from(&*cfg);
    let store = gw.integrity.store.lock();
    let mut wanted = Vec::with_capacity(body.items.len());
    for name in &body.items {
        let found: Vec<_> = store
            .lookup(name, body.kind, &names)
            .into_iter()
            .filter(|i| store.pending(i).is_some())
            .collect();
        let item = match found.as_slice() {
            [one] => one.clone(),
            [] => return Err(format!("`{name}`: nothing held by that name")),
            many => {
                let all: Vec<String> = many.iter().map(ToString::to_string).collect();
                return Err(format!(
                    "`{name}` is ambiguous: {}; name it as UPSTREAM/NAME, or give `kind`",
                    all.join(", ")
                ));
            }
        };
        wanted.push(Wanted {
            item,
            fingerprint: body.fingerprints.get(name).copied(),
        });
    }
    Ok(Selection::Items(wanted))
}
