//! `manifold call NAME 'JSON-ARGS'`: one `tools/call` through the gateway's own
//! pipeline (`Gateway::call_tool`), without a listener: the exposed name resolves
//! to its upstream and original name exactly as in `serve`, HTTP upstreams get the
//! same `Mcp-Method`, `Mcp-Name` and `Mcp-Param-*` headers, and whatever the
//! gateway would refuse a client is refused here too. The result is printed as
//! pretty JSON.
//!
//! Exit codes: 0 a result without `isError`; 1 `isError: true` (an upstream that
//! could not be asked answers that way too) or a JSON-RPC error (explained on
//! stderr); 2 an unknown tool (with the closest names as a hint), arguments that
//! are not a JSON object or that the tool's `x-mcp-header` parameters cannot
//! carry, or a configuration error.
//!
//! SIGINT during the call cancels it upstream (`notifications/cancelled`) and exits
//! 130.

use manifold_catalog::Entries;
use manifold_protocol::ErrorCode;
use manifold_server::ToolReply;
use serde_json::{Map, Value};
use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

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
            manifold_foundation::json::type_name(&other)
        )),
        Err(e) => Err(format!("the arguments are not valid JSON: {e}")),
    }
}

async fn call(core: &InProcess, name: &str, arguments: Map<String, Value>) -> ExitCode {
    // SIGINT cancels the call upstream; the gateway then answers it as cancelled.
    let cancel = CancellationToken::new();
    let interrupted = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (cancel, interrupted) = (cancel.clone(), interrupted.clone());
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                interrupted.store(true, Ordering::SeqCst);
                cancel.cancel();
            }
        })
    };
    let reply = core.gw.call_tool(name, arguments, cancel).await;
    watcher.abort();
    if interrupted.load(Ordering::SeqCst) {
        eprintln!("manifold: interrupted; the call was cancelled");
        return ExitCode::from(INTERRUPTED);
    }
    match reply {
        ToolReply::Result(result) => {
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
        ToolReply::Refused { code, message, .. } if code == ErrorCode::INVALID_PARAMS.0 => {
            // Manifold refused the operator's input: an unknown tool (say which
            // names are close) or arguments the tool cannot take.
            let catalog = core.gw.catalog();
            if catalog.tools.get(name).is_none() {
                eprintln!(
                    "{}",
                    unknown_tool(core, catalog.tools.entries(), name, &message)
                );
            } else {
                eprintln!("manifold: {}", one_line(&message));
            }
            ExitCode::from(USAGE)
        }
        ToolReply::Refused { message, .. } => {
            eprintln!("manifold: {}", one_line(&message));
            ExitCode::from(FAILED)
        }
        ToolReply::Error {
            code,
            message,
            data,
        } => {
            let upstream = core
                .gw
                .catalog()
                .tools
                .get(name)
                .map(|e| e.upstream.to_string())
                .unwrap_or_default();
            eprintln!(
                "manifold: upstream `{upstream}` answered with JSON-RPC error {code}: {}",
                one_line(&message)
            );
            if let Some(data) = data {
                eprintln!("  data: {data}");
            }
            ExitCode::from(FAILED)
        }
    }
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
fn unknown_tool(core: &InProcess, entries: Entries<'_>, name: &str, refusal: &str) -> String {
    let mut msg = one_line(refusal);
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
