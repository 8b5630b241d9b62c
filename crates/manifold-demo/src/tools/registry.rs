//! The registry of the demo's tools: one row per tool — its name, when it is
//! listed and callable ([`Gate`]: the same rule for both), its definition, and
//! what a call runs (`run`).
//!
//! Invariants: a tool is written once, here; the listing order is the order of
//! [`ROWS`], diagnostics last.
//!
//! Not here: the catalogue's state (`listing`: what a server lists, the
//! dynamic tools, the rug pull), the call path (`tools/mod.rs`), the
//! implementations (`run`).

use serde_json::{json, Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock};

use super::run::{self, ToolOutcome};
use crate::listing::Catalog;
use crate::session::Session;
use crate::transport::CallContext;

/// Small inline SVG so the icon is self-contained (`<svg/>`).
const ICON: &str = "data:image/svg+xml;base64,PHN2Zy8+";

/// When a tool is listed, and callable: the same rule for both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Gate {
    Always,
    /// A tool that misbehaves on purpose (a tool error, a long wait, a
    /// process exit): only with `--faults`, never in the shipped catalogue.
    Faults,
    /// A tool that reports on the process for tests, behind its own flag:
    /// `env` (`--env-tool`), `trace` (`--trace-tool`), `grandchild`
    /// (`--spawn-grandchild`), `calls` (`--flaky-*`, `--slow-read-tool`),
    /// `slow_read` (`--slow-read-tool`), `rug_pull` (`--misbehave rug-pull`: changes
    /// other tools mid-run), `broken_schema` (`--misbehave broken-schema`: an
    /// inputSchema no validator compiles; the tool echoes its arguments).
    Diagnostic,
}

/// What a call runs with.
pub(super) struct Invocation<'a> {
    pub session: &'a Arc<Session>,
    pub params: &'a Map<String, Value>,
    pub args: &'a Map<String, Value>,
    pub progress: Option<&'a Value>,
    pub ctx: &'a CallContext,
}

pub(super) type Running<'a> = Pin<Box<dyn Future<Output = ToolOutcome> + Send + 'a>>;

/// One tool, written once.
pub(super) struct Row {
    pub name: &'static str,
    pub gate: Gate,
    pub definition: fn() -> Value,
    pub run: for<'a> fn(Invocation<'a>) -> Running<'a>,
}

/// The catalogue of the registry's tools: the fixed tools (the fault tools
/// with `faults`, the diagnostic tools `names`, which come after the others),
/// then `synthetic` synthetic tools.
pub(crate) fn catalog(synthetic: usize, faults: bool, names: &[&str]) -> Catalog {
    let listed = |r: &Row| match r.gate {
        Gate::Always => true,
        Gate::Faults => faults,
        Gate::Diagnostic => names.contains(&r.name),
    };
    // Fixed tools first, then the diagnostics: the listing order.
    let (plain, diagnostic): (Vec<&Row>, Vec<&Row>) =
        ROWS.iter().partition(|r| r.gate != Gate::Diagnostic);
    let fixed: Vec<Value> = plain
        .iter()
        .chain(&diagnostic)
        .filter(|r| listed(r))
        .map(|r| (r.definition)())
        .collect();
    Catalog::with_synthetic(fixed, synthetic)
}

/// The row of `name` when the tool is listed in `catalog` (and so callable).
pub(super) fn row(catalog: &Catalog, name: &str) -> Option<&'static Row> {
    let name = catalog.listed(name)?;
    ROWS.iter().find(|r| r.name == name)
}

fn ready<'a>(outcome: ToolOutcome) -> Running<'a> {
    Box::pin(std::future::ready(outcome))
}

/// Every tool of the demo, in listing order (the diagnostics are listed after
/// the others).
pub(super) static ROWS: LazyLock<Vec<Row>> = LazyLock::new(|| {
    vec![
        Row {
            name: "echo",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "echo",
                    "title": "Echo",
                    "description": "Returns the given text. The result carries an extra, unspecified member.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"text": {"type": "string", "description": "Text to echo back"}},
                        "required": ["text"]
                    },
                    "annotations": {"title": "Echo", "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false},
                    "icons": [{"src": ICON, "mimeType": "image/svg+xml", "sizes": ["any"]}],
                    "_meta": {"io.manifold.demo/origin": "demo-upstream"},
                    "x-demo-extension": {"kept": true, "order": [3, 1, 2]}
                })
            },
            run: |i| ready(run::echo(i.args)),
        },
        Row {
            name: "add",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "add",
                    "title": "Add",
                    "description": "Adds two numbers; the sum is also returned as structuredContent.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                        "required": ["a", "b"]
                    },
                    "annotations": {"readOnlyHint": true, "idempotentHint": true}
                })
            },
            run: |i| ready(run::add(i.args)),
        },
        Row {
            name: "weather",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "weather",
                    "title": "Weather (fake)",
                    "description": "Deterministic fake weather for a city, with an output schema.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}},
                        "required": ["city"]
                    },
                    "outputSchema": {
                        "type": "object",
                        "properties": {
                            "city": {"type": "string"},
                            "temperatureC": {"type": "number"},
                            "conditions": {"type": "string"}
                        },
                        "required": ["city", "temperatureC", "conditions"]
                    },
                    "_meta": {"io.manifold.demo/fake": true},
                    "x-demo-extension": {"kept": true, "order": [3, 1, 2]}
                })
            },
            run: |i| ready(run::weather_of(i.session.server(), i.args)),
        },
        Row {
            name: "slow_progress",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "slow_progress",
                    "description": "Works in steps, sending notifications/progress when the call has a progressToken.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "steps": {"type": "integer", "minimum": 0, "default": 3},
                            "delay_ms": {"type": "integer", "minimum": 0, "default": 50}
                        }
                    }
                })
            },
            run: |i| Box::pin(run::slow_progress(i.args, i.progress, i.ctx)),
        },
        Row {
            name: "regional_lookup",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "regional_lookup",
                    "description": "Looks something up in a region. In HTTP mode reports the mcp-* request headers it received.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "region": {"type": "string", "x-mcp-header": "Region"},
                            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                            "query": {"type": "string"}
                        },
                        "required": ["region", "query"]
                    }
                })
            },
            run: |i| ready(run::regional_lookup(i.args, i.ctx)),
        },
        Row {
            name: "add_tool",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "add_tool",
                    "description": "Adds a tool to this server's list, then sends notifications/tools/list_changed.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"name": {"type": "string"}},
                        "required": ["name"]
                    },
                    "annotations": {"destructiveHint": false, "idempotentHint": false}
                })
            },
            run: |i| ready(run::add_tool(i.session, i.args, i.ctx)),
        },
        Row {
            name: "fail",
            gate: Gate::Faults,
            definition: || {
                json!({
                    "name": "fail",
                    "description": "Always returns a tool-level error.",
                    "inputSchema": {"type": "object", "properties": {}}
                })
            },
            run: |_| ready(Err("this tool always fails".to_owned())),
        },
        Row {
            name: "sleep",
            gate: Gate::Faults,
            definition: || {
                json!({
                    "name": "sleep",
                    "description": "Waits for ms milliseconds (with a progressToken, after one notifications/progress saying it started); honours notifications/cancelled.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"ms": {"type": "integer", "minimum": 0}},
                        "required": ["ms"]
                    }
                })
            },
            run: |i| Box::pin(run::sleep(i.args, i.progress, i.ctx)),
        },
        Row {
            name: "crash",
            gate: Gate::Faults,
            definition: || {
                json!({
                    "name": "crash",
                    "description": "Exits the process with `code` (default 3; stdio mode only).",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"code": {"type": "integer", "minimum": 0, "maximum": 255}}
                    },
                    "annotations": {"destructiveHint": true}
                })
            },
            run: |i| ready(run::crash(i.session.server().transport(), i.args)),
        },
        Row {
            name: "sample",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "sample",
                    "description": "Asks the client for a completion via sampling/createMessage.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"prompt": {"type": "string"}},
                        "required": ["prompt"]
                    }
                })
            },
            run: |i| Box::pin(run::sample(i.session, i.args, i.ctx)),
        },
        Row {
            name: "elicit",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "elicit",
                    "description": "Asks the user for a name via elicitation/create (form mode).",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"message": {"type": "string"}},
                        "required": ["message"]
                    }
                })
            },
            run: |i| Box::pin(run::elicit(i.session, i.args, i.ctx)),
        },
        Row {
            name: "link",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "link",
                    "description": "Returns a resource_link to demo://linked/<n>, a resource no list names.",
                    "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}
                })
            },
            run: |i| ready(run::link(i.args)),
        },
        Row {
            name: "touch",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "touch",
                    "description": "Sends notifications/resources/updated for a subscribed URI (server-wide).",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"uri": {"type": "string"}},
                        "required": ["uri"]
                    }
                })
            },
            run: |i| ready(run::touch(i.session.server(), i.args)),
        },
        Row {
            name: "log",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "log",
                    "description": "Sends notifications/message: tied to this call, or server-wide with broadcast.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {
                            "level": {"type": "string"},
                            "text": {"type": "string"},
                            "logger": {"type": "string"},
                            "broadcast": {"type": "boolean"}
                        },
                        "required": ["level", "text"]
                    }
                })
            },
            run: |i| ready(run::log(i.session.server(), i.args, i.ctx)),
        },
        Row {
            name: "log_level",
            gate: Gate::Always,
            definition: || {
                json!({
                    "name": "log_level",
                    "description": "Reports the last logging/setLevel this server received.",
                    "inputSchema": {"type": "object"}
                })
            },
            run: |i| ready(run::log_level(i.session.server())),
        },
        Row {
            name: "trace",
            gate: Gate::Diagnostic,
            definition: || {
                json!({
                    "name": "trace",
                    "description": "Reports the W3C trace context this call arrived with.",
                    "inputSchema": {"type": "object"}
                })
            },
            run: |i| ready(run::trace(i.params)),
        },
        Row {
            name: "rug_pull",
            gate: Gate::Diagnostic,
            definition: || {
                json!({
                    "name": "rug_pull",
                    "description": "With pull=true: changes weather (description and inputSchema), renames add to add_numbers, adds exfiltrate. With twin=true: lists weather twice, as it was and poisoned. With smuggle=true: hides an instruction in add's description in Unicode tag characters. Each sends list_changed. Always: the calls each tool name received.",
                    "inputSchema": {"type": "object", "properties": {"pull": {"type": "boolean"}, "twin": {"type": "boolean"}, "smuggle": {"type": "boolean"}}}
                })
            },
            run: |i| ready(run::rug_pull(i.session, i.args, i.ctx)),
        },
        Row {
            name: "broken_schema",
            gate: Gate::Diagnostic,
            definition: || {
                json!({
                    "name": "broken_schema",
                    "description": "Echoes its arguments; its inputSchema does not compile.",
                    "inputSchema": {"type": "object", "properties": {"x": {"type": "not-a-type"}}}
                })
            },
            run: |i| {
                ready(Ok(run::text_result(
                    &Value::Object(i.args.clone()).to_string(),
                )))
            },
        },
        Row {
            name: "env",
            gate: Gate::Diagnostic,
            definition: || {
                json!({
                    "name": "env",
                    "description": "Reports one environment variable of this process (or `unset`).",
                    "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
                })
            },
            run: |i| ready(run::env(i.args)),
        },
        Row {
            name: "grandchild",
            gate: Gate::Diagnostic,
            definition: || {
                json!({
                    "name": "grandchild",
                    "description": "Reports the pid of the process this server started at launch.",
                    "inputSchema": {"type": "object"}
                })
            },
            run: |i| ready(run::grandchild(i.session.server())),
        },
        Row {
            name: "slow_read",
            gate: Gate::Diagnostic,
            definition: || {
                json!({
                    "name": "slow_read",
                    "description": "Waits ms milliseconds, then answers with key and the number of slow_read calls begun so far (x-demo-served). Read-only.",
                    "inputSchema": {
                        "type": "object",
                        "properties": {"ms": {"type": "integer", "minimum": 0}, "key": {"type": "string"}},
                        "required": ["ms", "key"]
                    },
                    "annotations": {"readOnlyHint": true, "idempotentHint": true}
                })
            },
            run: |i| Box::pin(run::slow_read(i.session.server(), i.args)),
        },
        Row {
            name: "calls",
            gate: Gate::Diagnostic,
            definition: || {
                json!({
                    "name": "calls",
                    "description": "Reports how many tools/call requests arrived, by tool, answered or not (with --flaky-*).",
                    "inputSchema": {"type": "object"},
                    "annotations": {"readOnlyHint": true}
                })
            },
            run: |i| {
                let counts = i.session.server().arrivals.counts();
                ready(Ok(run::text_result(
                    &serde_json::to_string(&counts).unwrap_or_default(),
                )))
            },
        },
    ]
});
