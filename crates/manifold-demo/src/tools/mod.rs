//! The demo server's tools: the registry (one row per tool: its name, when it
//! is listed and callable, its definition, what a call runs; the catalogue a
//! server lists is built from it, `catalog`) and the call path (`call`).
//! The implementations are in `run`.
//!
//! What: the fixed tools that show a gateway off (`echo`, `add`, `weather`,
//! `slow_progress`, `regional_lookup`, `add_tool`, `sample`, `elicit`, `link`,
//! `touch`, `log`, `log_level`), the fault tools for tests (`fail`, `sleep`,
//! `crash`; listed and callable only with `--faults`), the rug pull
//! (`rug_pull`, `--misbehave rug-pull`: see `listing::rug`), the optional
//! `synthetic_NNNN` tools, and tools added at runtime by `add_tool`.
//!
//! Invariants:
//! - Listing order is stable: fixed tools, then synthetic, then dynamic tools
//!   in the order they were added; the pagination cursor (an offset into that
//!   order) therefore stays meaningful while tools are only appended.
//! - Several definitions and the `echo` result carry members no spec defines
//!   (`x-demo-extension`, `x-demo-result-extra`) or that older revisions lack
//!   (`title`, `icons`, `annotations`, `_meta`, `outputSchema`) so tests can
//!   check a gateway passes them through untouched, key order included.
//! - Bad arguments give a tool-level error (`isError: true`), as MCP asks for
//!   input validation failures; only an unknown tool name is a -32602.
//! - A tool is callable exactly when it is listed: its row's gate decides both
//!   (the fault tools with `--faults`, a diagnostic tool with its own flag).
//! - The files here import one another one way only (`registry` and `run`
//!   import nothing of this file), so this file may re-export theirs.
//!
//! What not: no JSON Schema validation of arguments beyond what each tool
//! reads; the catalogue's state (the listed, synthetic and dynamic tools, the
//! rug pull, the calls counted) is `listing`'s, which names no session so the
//! server's state can hold it.

use std::sync::Arc;

use serde_json::{json, Map, Value};

use crate::jsonrpc::RpcError;
use crate::listing::rug;
use crate::session::Session;
use crate::transport::CallContext;
use registry::Invocation;

mod registry;
mod run;

pub(crate) use registry::catalog;
pub use run::HTTP_TRACEPARENT;

/// Handle `tools/call`. Unknown tool → -32602; tool failures → `isError`.
pub(crate) async fn call(
    session: &Arc<Session>,
    params: &Map<String, Value>,
    ctx: &CallContext,
) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("tools/call needs a string `name`"))?;
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(args)) => args,
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
    };
    let progress = params
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"))
        .filter(|token| token.is_string() || token.is_number());
    let server = session.server();
    server.tools.count_call(name);
    if let Some(served) = &server.config().catalog {
        return served
            .call(name, args)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")));
    }
    if let Some(out) = &ctx.outbound {
        server.config().misbehave.flood_progress(params, out);
    }
    let outcome = match registry::row(&server.tools, name) {
        Some(row) => {
            let invocation = Invocation {
                session,
                params,
                args,
                progress,
                ctx,
            };
            (row.run)(invocation).await
        }
        None if server.tools.is_synthetic(name) => {
            Ok(run::text_result(run::str_arg(args, "text").unwrap_or(name)))
        }
        None if server.tools.is_dynamic(name) => {
            Ok(run::text_result(&format!("dynamic tool {name}")))
        }
        None if server.tools.rug_pulled() && name == rug::ADDED => {
            Ok(run::text_result("exfiltrated nothing (a demo)"))
        }
        None => return Err(RpcError::invalid_params(format!("Unknown tool: {name}"))),
    };
    Ok(outcome.unwrap_or_else(
        |message| json!({"content": [{"type": "text", "text": message}], "isError": true}),
    ))
}

#[cfg(test)]
mod tests {
    use super::registry::{catalog, Gate, ROWS};
    use crate::listing::Catalog;
    use serde_json::Value;

    /// The registry's catalogue without diagnostics.
    fn new_catalog(synthetic: usize, faults: bool) -> Catalog {
        catalog(synthetic, faults, &[])
    }

    fn names(tools: &[Value]) -> Vec<&str> {
        tools.iter().filter_map(|t| t["name"].as_str()).collect()
    }

    #[test]
    fn pages_cover_fixed_synthetic_and_dynamic_tools_in_order() {
        let catalog = new_catalog(2, true);
        assert!(catalog.add_dynamic("late"));
        assert!(!catalog.add_dynamic("late"), "duplicate dynamic name");
        assert!(!catalog.add_dynamic("echo"), "clash with a fixed tool");
        let (all, next) = catalog.page(0, 0).expect("page");
        assert_eq!(next, None);
        assert_eq!(all.len(), 18);
        let mut offset = 0;
        let mut paged = Vec::new();
        loop {
            let (page, next) = catalog.page(offset, 5).expect("page");
            assert!(page.len() <= 5);
            paged.extend(page);
            match next {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(names(&paged), names(&all));
        assert_eq!(
            names(&all)[15..],
            ["synthetic_0000", "synthetic_0001", "late"]
        );
        assert!(catalog.page(19, 5).is_none(), "offset past the end");
        assert_eq!(
            catalog.page(18, 5).map(|(p, n)| (p.len(), n)),
            Some((0, None))
        );
    }

    #[test]
    fn fault_tools_are_listed_only_with_faults() {
        let (shipped, _) = new_catalog(0, false).page(0, 0).expect("page");
        let (with_faults, _) = new_catalog(0, true).page(0, 0).expect("page");
        let faults: Vec<&str> = (ROWS.iter())
            .filter(|r| r.gate == Gate::Faults)
            .map(|r| r.name)
            .collect();
        assert_eq!(faults, ["fail", "sleep", "crash"]);
        assert_eq!(with_faults.len(), shipped.len() + faults.len());
        for fault in &faults {
            assert!(!names(&shipped).contains(fault), "{fault} shipped");
            assert!(names(&with_faults).contains(fault), "{fault} missing");
        }
    }

    #[test]
    fn synthetic_names_must_match_exactly() {
        let catalog = new_catalog(3, true);
        assert!(catalog.is_synthetic("synthetic_0002"));
        assert!(!catalog.is_synthetic("synthetic_0003"));
        assert!(!catalog.is_synthetic("synthetic_2"));
        assert!(!catalog.is_synthetic("synthetic_+002"));
    }
}
