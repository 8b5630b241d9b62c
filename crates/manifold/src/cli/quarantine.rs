//! What `manifold check` says of `[integrity]`: every item held now (changed
//! since it was approved, or new and waiting), with what changed — the
//! fields, and the old and new description text — in text and JSON.
//!
//! Not here: deciding what is held (manifold-server, manifold-integrity),
//! approving (`manifold pins approve`, `POST /pins/approve`).

use manifold_catalog::fingerprint::printable;
use manifold_server::Quarantined;
use serde_json::{json, Value};

/// The QUARANTINED section of the text report.
pub fn text(items: &[Quarantined]) -> String {
    let mut out = format!("\nQUARANTINED ({})\n", items.len());
    if items.is_empty() {
        out.push_str("(none)\n");
        return out;
    }
    for q in items {
        let state = if q.withheld {
            "withheld"
        } else {
            "served (mode = \"warn\")"
        };
        out.push_str(&format!(
            "{}/{} ({}): {}, {state}\n",
            q.upstream,
            printable(&q.name),
            q.kind,
            q.reason
        ));
        match (&q.diff, &q.description) {
            (Some(d), _) => {
                for line in d.to_string().lines() {
                    out.push_str(&format!("  {line}\n"));
                }
            }
            (None, Some(desc)) => {
                out.push_str("  description:\n");
                for line in desc.lines() {
                    out.push_str(&format!("    + {}\n", printable(line)));
                }
            }
            (None, None) => out.push_str("  description: (none)\n"),
        }
    }
    out.push_str("Approve with `manifold pins approve NAME...` (or POST /pins/approve).\n");
    out
}

/// The `quarantined` member of the JSON report.
pub fn json(items: &[Quarantined]) -> Value {
    json!(items)
}
