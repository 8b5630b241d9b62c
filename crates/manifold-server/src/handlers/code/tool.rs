//! `run_script`'s name and definition (what `tools/list` of a code endpoint
//! shows), written with the limits in force.
//!
//! Not here: running a script (`mod.rs`).

use manifold_config::code::CodeConfig;
use serde_json::{json, Value};

/// The script meta-tool's name.
pub const RUN_SCRIPT: &str = "run_script";
/// `via` in the audit record of a tool a script called.
pub const VIA_RUN_SCRIPT: &str = "run_script";

/// `run_script`'s definition, with the limits in force.
pub(crate) fn definition(cfg: &CodeConfig) -> Value {
    let description = format!(
        "Run a short Starlark script (Python syntax; no while loops, no recursion, no imports, no I/O) that \
         calls this server's tools and returns only what the task needs, instead of calling them one by one. \
         Define `def main():` (or `def main(inputs):` to receive `inputs`) and return a JSON value \
         (dict, list, str, int, float, bool, None).\n\
         Built-ins: `call(name, arguments)` calls a tool by the exact name search_tools gave and returns its \
         result as a dict (`structuredContent`, `content`; a tool error is a result with `isError` true, so check \
         it); `search(query, limit = 5)` returns tool definitions; `print(...)` adds a line to the log. \
         At most {calls} calls and {secs} s per script.\n\
         Example:\n\
         def main():\n    \
             found = call(\"github__list_issues\", {{\"repo\": \"acme/api\", \"state\": \"open\"}})\n    \
             if found.get(\"isError\"):\n        \
                 return found[\"content\"]\n    \
             titles = [i[\"title\"] for i in found[\"structuredContent\"][\"issues\"]]\n    \
             return {{\"open\": len(titles), \"first\": titles[:5]}}",
        calls = cfg.max_calls,
        secs = cfg.timeout.as_secs(),
    );
    json!({
        "name": RUN_SCRIPT,
        "title": "Run a script over several tools",
        "description": description,
        "inputSchema": {
            "type": "object",
            "properties": {
                "script": {
                    "type": "string",
                    "description": "The Starlark script; it defines main().",
                    "minLength": 1,
                    "maxLength": cfg.max_script_bytes,
                },
                "inputs": {"description": "Given to main(inputs), when main takes them."},
            },
            "required": ["script"],
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "value": {"description": "What main returned."},
                "calls": {"type": "integer", "description": "Tool calls the script made."},
                "log": {"type": "array", "items": {"type": "string"}, "description": "What it printed."},
            },
            "required": ["value", "calls", "log"],
        },
        "annotations": {"openWorldHint": true},
    })
}
