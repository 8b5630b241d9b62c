//! `manifold call NAME 'JSON-ARGS'`: one `tools/call` through the gateway's name
//! table, without a listener. The exposed name resolves to its upstream and original
//! name exactly as in `serve`; HTTP upstreams get the same `Mcp-Method`, `Mcp-Name`
//! and `Mcp-Param-*` headers. The upstream's result is printed as pretty JSON.
//!
//! Exit codes: 0 a result without `isError`; 1 `isError: true`, a JSON-RPC error or
//! an upstream failure (explained on stderr); 2 an unknown tool (with the closest
//! names as a hint), arguments that are not a JSON object, or a configuration error.
//!
//! SIGINT during the call cancels it upstream (`notifications/cancelled`) and exits
//! 130.

use manifold_catalog::Entry;
use manifold_protocol::headers::{encode_header_value, param_headers};
use manifold_protocol::methods as m;
use manifold_upstream::CallOutcome;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use super::inproc::InProcess;
use super::{load_config, one_line, FAILED, USAGE};

/// How many exposed names an "Unknown tool" hint lists at most.
pub const HINT_NAMES: usize = 5;
/// Exit code after SIGINT (128 + 2, the shell's convention).
const INTERRUPTED: u8 = 130;

pub fn run(
    rt: &tokio::runtime::Runtime,
    config: &Path,
    name: &str,
    args: Option<&str>,
) -> ExitCode {
    let arguments = match parse_arguments(args) {
        Ok(a) => a,
        Err(msg) => {
            eprintln!("manifold: {msg}");
            return ExitCode::from(USAGE);
        }
    };
    let cfg = match load_config(config) {
        Ok(c) => c,
        Err(code) => return code,
    };
    rt.block_on(async {
        let core = InProcess::start(cfg).await;
        let code = call(&core, name, arguments).await;
        core.stop().await;
        code
    })
}

/// The arguments: absent means `{}`; anything but a JSON object is refused.
fn parse_arguments(args: Option<&str>) -> Result<Map<String, Value>, String> {
    let Some(text) = args else {
        return Ok(Map::new());
    };
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(format!(
            "the arguments must be a JSON object like '{{\"text\":\"hi\"}}', not {}",
            json_type(&other)
        )),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

async fn call(core: &InProcess, name: &str, arguments: Map<String, Value>) -> ExitCode {
    let catalog = core.gw.catalog();
    let Some(entry) = catalog.tools.get(name) else {
        eprintln!("{}", unknown_tool(core, catalog.tools.entries(), name));
        return ExitCode::from(USAGE);
    };
    let Some(upstream) = core
        .upstreams()
        .iter()
        .find(|u| **u.name() == *entry.upstream)
    else {
        eprintln!(
            "manifold: tool {name} belongs to upstream `{}`, which is not configured",
            entry.upstream
        );
        return ExitCode::from(FAILED);
    };
    let arguments = Value::Object(arguments);
    let headers = match headers(entry, &arguments) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("manifold: invalid arguments for {name}: {e}");
            return ExitCode::from(USAGE);
        }
    };
    let mut params = Map::new();
    params.insert("name".into(), Value::String(entry.original.clone()));
    params.insert("arguments".into(), arguments);
    let mut call = match upstream.call(m::TOOLS_CALL, Some(params), headers).await {
        Ok(c) => c,
        Err(e) => {
            eprintln!("manifold: {e}");
            return ExitCode::from(FAILED);
        }
    };
    let outcome = tokio::select! {
        outcome = call.outcome() => outcome,
        _ = tokio::signal::ctrl_c() => {
            call.cancel("interrupted").await;
            eprintln!("manifold: interrupted; the call was cancelled");
            return ExitCode::from(INTERRUPTED);
        }
    };
    match outcome {
        CallOutcome::Result(raw) => {
            let result: Value = match serde_json::from_str(raw.get()) {
                Ok(v) => v,
                Err(e) => {
                    eprintln!("manifold: the upstream's result is not JSON: {e}");
                    return ExitCode::from(FAILED);
                }
            };
            let mut out = serde_json::to_string_pretty(&result).unwrap_or_default();
            out.push('\n');
            let _ = std::io::stdout().lock().write_all(out.as_bytes());
            if result.get("isError").and_then(Value::as_bool) == Some(true) {
                eprintln!(
                    "manifold: tool {name} reported an error{}",
                    error_text(&result)
                );
                return ExitCode::from(FAILED);
            }
            ExitCode::SUCCESS
        }
        CallOutcome::Error(raw) => {
            let err: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            let code = err.get("code").map(Value::to_string).unwrap_or_default();
            let message = err
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or(raw.get());
            eprintln!(
                "manifold: upstream `{}` answered with JSON-RPC error {code}: {}",
                entry.upstream,
                one_line(message)
            );
            if let Some(data) = err.get("data") {
                eprintln!("  data: {data}");
            }
            ExitCode::from(FAILED)
        }
        CallOutcome::Failed(e) => {
            eprintln!("manifold: {e}");
            ExitCode::from(FAILED)
        }
    }
}

/// `Mcp-Method`, `Mcp-Name` (the upstream's own name) and one `Mcp-Param-*` per
/// `x-mcp-header` argument, as `serve` sends them (stdio upstreams ignore them).
fn headers(entry: &Entry, arguments: &Value) -> Result<Vec<(String, String)>, String> {
    let mut h = vec![
        (m::HEADER_METHOD.to_string(), m::TOOLS_CALL.to_string()),
        (
            m::HEADER_NAME.to_string(),
            encode_header_value(&entry.original),
        ),
    ];
    if !entry.header_params.is_empty() {
        h.extend(param_headers(&entry.header_params, Some(arguments)).map_err(|e| e.to_string())?);
    }
    Ok(h)
}

/// `: <text>` from the first text content of an error result, if any.
fn error_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find_map(|c| c.get("text").and_then(Value::as_str))
        .map(|t| format!(": {}", one_line(t)))
        .unwrap_or_default()
}

/// "Unknown tool: NAME", the closest exposed names, and the upstreams whose tools
/// are missing because they are not ready.
fn unknown_tool(core: &InProcess, entries: &[Entry], name: &str) -> String {
    let mut msg = format!("Unknown tool: {name}");
    let close = closest(entries.iter().map(|e| e.exposed.as_str()), name, HINT_NAMES);
    if close.is_empty() {
        msg.push_str("\nNo tools are exposed.");
    } else {
        msg.push_str(&format!("\nDid you mean: {}?", close.join(", ")));
    }
    for u in core.not_ready() {
        let st = u.status();
        let why = st
            .last_error
            .map(|e| format!(": {}", one_line(&e)))
            .unwrap_or_default();
        msg.push_str(&format!(
            "\nNote: upstream `{}` is {}{why}; its tools are missing.",
            u.name(),
            st.state.as_str()
        ));
    }
    msg.push_str("\nList them all with `manifold tools`.");
    msg
}

/// Up to `n` of `names` closest to `query`: names containing it (ignoring case)
/// first, then by edit distance, then by name.
pub fn closest<'a>(names: impl Iterator<Item = &'a str>, query: &str, n: usize) -> Vec<&'a str> {
    let q = query.to_lowercase();
    let mut scored: Vec<(bool, usize, &str)> = names
        .map(|name| {
            let lower = name.to_lowercase();
            (!lower.contains(&q), levenshtein(&lower, &q), name)
        })
        .collect();
    scored.sort();
    scored
        .into_iter()
        .take(n)
        .map(|(_, _, name)| name)
        .collect()
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            let next = (row[j + 1] + 1).min(row[j] + 1).min(diag + cost);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(parse_arguments(None).unwrap(), Map::new());
        assert_eq!(parse_arguments(Some(r#"{"a":1}"#)).unwrap()["a"], 1);
        let e = parse_arguments(Some("[1]")).unwrap_err();
        assert!(
            e.contains("must be a JSON object") && e.contains("an array"),
            "{e}"
        );
        let e = parse_arguments(Some("{oops")).unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
    }

    #[test]
    fn closest_names() {
        assert_eq!(levenshtein("kitten", "sitting"), 3);
        assert_eq!(levenshtein("", "abc"), 3);
        let names = [
            "demo__echo",
            "demo__add",
            "demo2__echo",
            "demo__weather",
            "other__x",
        ];
        assert_eq!(
            closest(names.iter().copied(), "demo__ecoh", 2),
            vec!["demo__echo", "demo2__echo"]
        );
        // Containment beats distance: `echo` is in both echo tools.
        assert_eq!(
            closest(names.iter().copied(), "ECHO", 3),
            vec!["demo__echo", "demo2__echo", "other__x"]
        );
        assert_eq!(closest(names.iter().copied(), "x", 10).len(), 5);
    }
}
