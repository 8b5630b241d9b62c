//! The MCP client configurations `manifold import` reads, each into one
//! neutral list of [`Server`]s:
//!
//! | format | file | servers under | remote servers |
//! |---|---|---|---|
//! | `claude` (Claude Desktop) | `claude_desktop_config.json` | `mcpServers` | `url` (with `type`) |
//! | `claude-code` | `.mcp.json`, `~/.claude.json` | `mcpServers` | `type = "http"`/`"sse"`, `url`, `headers` |
//! | `vscode` | `.vscode/mcp.json`, `settings.json` (`mcp.servers`) | `servers` | `type = "http"`/`"sse"`, `url`, `headers` |
//! | `cursor` | `~/.cursor/mcp.json`, `.cursor/mcp.json` | `mcpServers` | `url`, `headers` |
//! | `windsurf` | `~/.codeium/windsurf/mcp_config.json` | `mcpServers` | `serverUrl` (or `url`), `headers` |
//!
//! Detected from the file's name and shape; `--format` forces one. Stdio
//! servers keep `command`, `args`, `env` and `cwd` as written (`npx -y`, `uvx`
//! included); a server marked `disabled` is kept, and reported.
//!
//! Invariants: a file that is not a JSON object with servers is an error
//! naming the file; no value is ever printed from here (secrets are the
//! renderer's to replace).
//!
//! Not here: names, secrets and TOML (`render`).

use serde_json::{Map, Value};
use std::path::Path;

/// A client configuration format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    Claude,
    ClaudeCode,
    Vscode,
    Cursor,
    Windsurf,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Claude => "claude",
            Format::ClaudeCode => "claude-code",
            Format::Vscode => "vscode",
            Format::Cursor => "cursor",
            Format::Windsurf => "windsurf",
        }
    }

    /// The key servers are under.
    pub fn servers_key(self) -> &'static str {
        match self {
            Format::Vscode => "servers",
            _ => "mcpServers",
        }
    }
}

/// How one server is reached.
#[derive(Debug, Clone, PartialEq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
        cwd: Option<String>,
    },
    Remote {
        url: String,
        /// The client's word for it: `http`, `streamable-http`, `sse`, or none.
        kind: Option<String>,
        headers: Vec<(String, String)>,
    },
}

/// One server of a client configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Server {
    /// Its name in the file.
    pub name: String,
    pub transport: Transport,
    pub disabled: bool,
    /// Where it is in the file (`mcpServers.github`).
    pub at: String,
}

/// The format of `path` whose JSON is `v`.
pub fn detect(path: &Path, v: &Value) -> Option<Format> {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let dir = path
        .parent()
        .and_then(|p| p.file_name())
        .and_then(|n| n.to_str())
        .unwrap_or("");
    if v.get("servers").is_some_and(Value::is_object)
        || v.get("mcp").is_some_and(|m| m.get("servers").is_some())
    {
        return Some(Format::Vscode);
    }
    let servers = v.get("mcpServers").and_then(Value::as_object)?;
    Some(match (name, dir) {
        ("claude_desktop_config.json", _) => Format::Claude,
        (".mcp.json" | ".claude.json", _) => Format::ClaudeCode,
        ("mcp_config.json", _) | (_, "windsurf") => Format::Windsurf,
        (_, ".cursor") => Format::Cursor,
        _ if servers.values().any(|s| s.get("serverUrl").is_some()) => Format::Windsurf,
        _ if servers.values().any(|s| s.get("type").is_some()) => Format::ClaudeCode,
        _ => Format::Claude,
    })
}

/// The servers of `v` read as `format`.
pub fn servers(format: Format, v: &Value) -> Result<Vec<Server>, String> {
    let key = format.servers_key();
    let table = match format {
        Format::Vscode => v
            .get("servers")
            .or_else(|| v.get("mcp").and_then(|m| m.get("servers"))),
        _ => v.get(key),
    }
    .and_then(Value::as_object)
    .ok_or_else(|| format!("no `{key}` object: not a {} configuration", format.as_str()))?;
    let mut out = Vec::new();
    for (name, s) in table {
        let at = format!("{key}.{name}");
        let s = s
            .as_object()
            .ok_or_else(|| format!("`{at}` is not an object"))?;
        out.push(Server {
            name: name.clone(),
            transport: transport(format, &at, s)?,
            disabled: s.get("disabled").and_then(Value::as_bool).unwrap_or(false),
            at,
        });
    }
    Ok(out)
}

fn strings(at: &str, v: Option<&Value>) -> Result<Vec<String>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(a)) => a
            .iter()
            .map(|x| match x {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                Value::Bool(b) => Ok(b.to_string()),
                _ => Err(format!("`{at}` holds a value that is not a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{at}` is not a list")),
    }
}

fn pairs(at: &str, v: Option<&Value>) -> Result<Vec<(String, String)>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, x)| match x {
                Value::String(s) => Ok((k.clone(), s.clone())),
                Value::Number(n) => Ok((k.clone(), n.to_string())),
                Value::Bool(b) => Ok((k.clone(), b.to_string())),
                _ => Err(format!("`{at}.{k}` is not a string")),
            })
            .collect(),
        Some(_) => Err(format!("`{at}` is not an object")),
    }
}

fn transport(format: Format, at: &str, s: &Map<String, Value>) -> Result<Transport, String> {
    let url = s
        .get("url")
        .or_else(|| {
            (format == Format::Windsurf)
                .then(|| s.get("serverUrl"))
                .flatten()
        })
        .and_then(Value::as_str);
    let kind = s.get("type").and_then(Value::as_str).map(str::to_string);
    if let Some(command) = s.get("command").and_then(Value::as_str) {
        if kind.as_deref().is_some_and(|k| k != "stdio") {
            return Err(format!("`{at}` has a `command` and `type = {kind:?}`"));
        }
        return Ok(Transport::Stdio {
            command: command.to_string(),
            args: strings(&format!("{at}.args"), s.get("args"))?,
            env: pairs(&format!("{at}.env"), s.get("env"))?,
            cwd: s.get("cwd").and_then(Value::as_str).map(str::to_string),
        });
    }
    match url {
        Some(url) => Ok(Transport::Remote {
            url: url.to_string(),
            kind,
            headers: pairs(&format!("{at}.headers"), s.get("headers"))?,
        }),
        None => Err(format!("`{at}` has neither a `command` nor a `url`")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_format_is_detected_and_read() {
        let desktop = json!({"mcpServers": {"fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]}}});
        let code = json!({"mcpServers": {"api": {"type": "http", "url": "https://api.example.com/mcp", "headers": {"Authorization": "Bearer x"}}}});
        let vscode = json!({"inputs": [], "servers": {"gh": {"type": "stdio", "command": "docker", "args": ["run"], "env": {"T": "${input:t}"}}}});
        let wind = json!({"mcpServers": {"r": {"serverUrl": "https://r.example.com/sse"}}});
        let cursor = json!({"mcpServers": {"c": {"url": "https://c.example.com/mcp"}}});
        let table = [
            ("claude_desktop_config.json", &desktop, Format::Claude),
            (".mcp.json", &code, Format::ClaudeCode),
            ("x/.vscode/mcp.json", &vscode, Format::Vscode),
            (
                "x/.codeium/windsurf/mcp_config.json",
                &wind,
                Format::Windsurf,
            ),
            ("home/.cursor/mcp.json", &cursor, Format::Cursor),
            ("other.json", &wind, Format::Windsurf),
            ("other.json", &code, Format::ClaudeCode),
        ];
        for (path, v, want) in table {
            let f = detect(Path::new(path), v).expect("detected");
            assert_eq!(f, want, "{path}");
            let s = servers(f, v).expect("read");
            assert_eq!(s.len(), 1, "{path}");
        }
        let s = &servers(Format::Windsurf, &wind).expect("read")[0];
        assert!(
            matches!(&s.transport, Transport::Remote { url, .. } if url == "https://r.example.com/sse")
        );
        assert!(detect(Path::new("a.json"), &json!({"x": 1})).is_none());
        assert!(servers(Format::Claude, &json!({"mcpServers": {"a": {"args": []}}})).is_err());
    }
}
