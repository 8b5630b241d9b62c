//! `manifold connect claude|claude-code|vscode|cursor [--stdio|--http]
//! [--write] [--file PATH] [--replace]`: the entry that points an MCP client
//! at this gateway, printed, or added to the client's own file.
//!
//! - `--stdio` (the default for Claude Desktop): the client launches
//!   `manifold stdio --config <absolute path>` (this binary, by its absolute
//!   path), with an `env` naming every `${VAR}` the configuration refers to:
//!   a client starts its servers without the user's shell environment. With
//!   `--write` their values come from this environment (the client's file is
//!   where they were before `manifold import`); printed, they are
//!   placeholders.
//! - `--http` (the default for the others): the endpoint URL (`[server]
//!   public_url`, else the listener's address, plus `path`), with an
//!   `Authorization: Bearer ${MANIFOLD_TOKEN}` placeholder when `[auth]` is
//!   configured (the client expands it from its environment; VS Code asks
//!   for it as an input).
//! - `--write` adds the entry (`manifold`) to the client's file — `--file`, or
//!   the client's usual place — after copying the file to `<file>.bak`;
//!   `--replace` also removes the entries `manifold import` took from that
//!   file (the upstreams whose comment names it).
//!
//! Invariants: the client's file is changed only with `--write`, kept whole
//! otherwise (every other key and entry as it was), and backed up first; a
//! file that is not a JSON object is never overwritten. Exit codes: 0
//! printed or written, 1 the file could not be written, 2 bad arguments or
//! configuration (Claude Desktop over HTTP; an unreadable client file).

use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::import::Format;
use super::{FAILED, USAGE};

/// The entry's name in the client's file.
pub const ENTRY: &str = "manifold";
/// The variable an HTTP entry's `Authorization` header refers to.
pub const TOKEN_VAR: &str = "MANIFOLD_TOKEN";

/// `manifold connect`'s arguments.
pub struct Connect<'a> {
    pub client: Format,
    pub config: &'a Path,
    pub http: Option<bool>,
    pub write: bool,
    pub file: Option<PathBuf>,
    pub replace: bool,
}

/// The client's usual configuration file.
fn usual_file(client: Format) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match client {
        Format::Claude => {
            let home = home?;
            Some(if cfg!(target_os = "macos") {
                home.join("Library/Application Support/Claude/claude_desktop_config.json")
            } else {
                home.join(".config/Claude/claude_desktop_config.json")
            })
        }
        Format::ClaudeCode => Some(PathBuf::from(".mcp.json")),
        Format::Vscode => Some(PathBuf::from(".vscode/mcp.json")),
        Format::Cursor => Some(home?.join(".cursor/mcp.json")),
        Format::Windsurf => Some(home?.join(".codeium/windsurf/mcp_config.json")),
    }
}

/// Every `${VAR}` the configuration's values refer to (`$${` is a literal;
/// comments are not values).
fn referenced_vars(text: &str) -> Vec<String> {
    fn value(v: &toml_edit::Value, out: &mut Vec<String>) {
        match v {
            toml_edit::Value::String(s) => out.push(s.value().clone()),
            toml_edit::Value::Array(a) => a.iter().for_each(|x| value(x, out)),
            toml_edit::Value::InlineTable(t) => t.iter().for_each(|(_, x)| value(x, out)),
            _ => {}
        }
    }
    fn item(i: &toml_edit::Item, out: &mut Vec<String>) {
        match i {
            toml_edit::Item::Value(v) => value(v, out),
            toml_edit::Item::Table(t) => t.iter().for_each(|(_, x)| item(x, out)),
            toml_edit::Item::ArrayOfTables(a) => a
                .iter()
                .for_each(|t| t.iter().for_each(|(_, x)| item(x, out))),
            toml_edit::Item::None => {}
        }
    }
    let mut values = Vec::new();
    if let Ok(doc) = text.parse::<toml_edit::DocumentMut>() {
        item(doc.as_item(), &mut values);
    }
    let mut out: Vec<String> = Vec::new();
    for value in &values {
        refs_in(value, &mut out);
    }
    out
}

/// The `${VAR}` names in one value, added to `out` once each.
fn refs_in(text: &str, out: &mut Vec<String>) {
    let mut rest = text;
    while let Some(pos) = rest.find('$') {
        let after = &rest[pos + 1..];
        if let Some(stripped) = after.strip_prefix('$') {
            rest = stripped;
            continue;
        }
        if let Some(body) = after.strip_prefix('{') {
            if let Some(end) = body.find('}') {
                let name = &body[..end];
                let valid =
                    !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if valid && !out.iter().any(|n| n == name) {
                    out.push(name.to_string());
                }
            }
        }
        rest = after;
    }
}

/// The client entry for this gateway; `values`: the variables' values taken
/// from this environment (else placeholders).
fn entry(
    client: Format,
    cfg: &manifold_config::GatewayConfig,
    config: &Path,
    http: bool,
    values: bool,
) -> Result<Value, String> {
    if !http {
        let me = std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?;
        let config =
            std::fs::canonicalize(config).map_err(|e| format!("{}: {e}", config.display()))?;
        let mut e = json!({
            "command": me.display().to_string(),
            "args": ["stdio", "--config", config.display().to_string()],
        });
        if matches!(client, Format::Vscode | Format::ClaudeCode) {
            e["type"] = json!("stdio");
        }
        let text = std::fs::read_to_string(&config).unwrap_or_default();
        let mut env = Map::new();
        for name in referenced_vars(&text) {
            let v = match std::env::var(&name) {
                Ok(v) if values => v,
                Ok(_) | Err(_) if values => return Err(format!("{name} is not set here; export it (the client's entry carries it), then run again")),
                _ => format!("<the value of {name}>"),
            };
            env.insert(name, Value::String(v));
        }
        if !env.is_empty() {
            e["env"] = Value::Object(env);
        }
        return Ok(e);
    }
    if client == Format::Claude {
        return Err("Claude Desktop launches its servers as commands: use --stdio (remote servers are added in its Connectors settings, not in this file)".into());
    }
    let base = cfg.server.public_base().ok_or_else(|| {
        format!(
            "the listener {} is a wildcard address no client can open: set [server] public_url",
            cfg.server.listen
        )
    })?;
    let url = format!("{base}{}", cfg.server.path);
    let mut e = json!({ "url": url });
    match client {
        Format::Vscode | Format::ClaudeCode => e["type"] = json!("http"),
        Format::Windsurf => {
            e = json!({ "serverUrl": url });
        }
        _ => {}
    }
    if cfg.auth.is_some() {
        let token = match client {
            Format::Vscode => format!("Bearer ${{input:{}}}", TOKEN_VAR.to_ascii_lowercase()),
            _ => format!("Bearer ${{{TOKEN_VAR}}}"),
        };
        e["headers"] = json!({ "Authorization": token });
    }
    Ok(e)
}

/// Runs `manifold connect`.
pub fn run(a: Connect<'_>) -> ExitCode {
    // The secrets need not be set to say where the gateway is.
    let text = match std::fs::read_to_string(a.config) {
        Ok(t) => t,
        Err(e) => {
            eprintln!(
                "manifold: configuration error: cannot read {}: {e}",
                a.config.display()
            );
            return ExitCode::from(USAGE);
        }
    };
    let lookup = |k: &str| std::env::var(k).ok().or_else(|| Some("x".repeat(64)));
    let cfg =
        match manifold_config::load_str(a.config, &text, lookup, figment::providers::Env::raw()) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("manifold: configuration error: {e}");
                return ExitCode::from(USAGE);
            }
        };
    let http = a.http.unwrap_or(a.client != Format::Claude);
    let e = match entry(a.client, &cfg, a.config, http, a.write) {
        Ok(e) => e,
        Err(why) => {
            eprintln!("manifold: {why}");
            return ExitCode::from(USAGE);
        }
    };
    let key = a.client.servers_key();
    if !a.write {
        let shown = json!({ key: { ENTRY: e } });
        println!(
            "{}",
            serde_json::to_string_pretty(&shown).unwrap_or_default()
        );
        if let Some(f) = a.file.clone().or_else(|| usual_file(a.client)) {
            eprintln!(
                "manifold: add this to {} (or run again with --write)",
                f.display()
            );
        }
        return ExitCode::SUCCESS;
    }
    let Some(file) = a.file.clone().or_else(|| usual_file(a.client)) else {
        eprintln!("manifold: no HOME to find the client's file in; name it with --file");
        return ExitCode::from(USAGE);
    };
    let remove = if a.replace {
        imported_from(a.config, &file)
    } else {
        Vec::new()
    };
    match write(&file, key, e, remove) {
        Ok(removed) => {
            println!(
                "added `{ENTRY}` to {} (backup: {})",
                file.display(),
                backup_of(&file).display()
            );
            for r in removed {
                println!("removed `{r}` (now served through Manifold)");
            }
            if http && cfg.auth.is_some() {
                println!("the client sends `Authorization: Bearer ${TOKEN_VAR}`: set {TOKEN_VAR} where it runs");
            }
            ExitCode::SUCCESS
        }
        Err((code, why)) => {
            eprintln!("manifold: {why}");
            ExitCode::from(code)
        }
    }
}

fn backup_of(file: &Path) -> PathBuf {
    let mut s = file.as_os_str().to_owned();
    s.push(".bak");
    PathBuf::from(s)
}

/// The names `manifold import` took from `client_file` (its comments in the
/// gateway configuration: `# <upstream>: imported from <file> (<key>.<name>)`).
fn imported_from(config: &Path, client_file: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(config).unwrap_or_default();
    let wanted = [
        client_file.to_path_buf(),
        std::fs::canonicalize(client_file).unwrap_or_default(),
    ];
    text.lines()
        .filter_map(|l| {
            let rest = l.strip_prefix("# ")?.split_once(": imported from ")?.1;
            let (file, key) = rest.rsplit_once(" (")?;
            let same = wanted.iter().any(|w| {
                Path::new(file) == w || std::fs::canonicalize(file).ok().as_ref() == Some(w)
            });
            let name = key.strip_suffix(')')?.split_once('.')?.1;
            same.then(|| name.to_string())
        })
        .collect()
}

/// Adds the entry under `key` (removing `remove`), after a backup.
fn write(
    file: &Path,
    key: &str,
    e: Value,
    remove: Vec<String>,
) -> Result<Vec<String>, (u8, String)> {
    let mut doc = match std::fs::read_to_string(file) {
        Ok(t) if t.trim().is_empty() => Value::Object(Map::new()),
        Ok(t) => serde_json::from_str::<Value>(&t)
            .ok()
            .filter(Value::is_object)
            .ok_or((
                USAGE,
                format!("{} is not a JSON object; not changing it", file.display()),
            ))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(e) => return Err((USAGE, format!("cannot read {}: {e}", file.display()))),
    };
    if file.exists() {
        std::fs::copy(file, backup_of(file))
            .map_err(|e| (FAILED, format!("cannot back {} up: {e}", file.display())))?;
    }
    let servers = doc
        .as_object_mut()
        .map(|o| o.entry(key).or_insert_with(|| Value::Object(Map::new())))
        .and_then(Value::as_object_mut)
        .ok_or((
            USAGE,
            format!("`{key}` in {} is not an object", file.display()),
        ))?;
    let mut removed = Vec::new();
    for name in remove {
        if name != ENTRY && servers.shift_remove(&name).is_some() {
            removed.push(name);
        }
    }
    servers.insert(ENTRY.to_string(), e);
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| (FAILED, format!("cannot create {}: {e}", dir.display())))?;
    }
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    std::fs::write(file, text)
        .map_err(|e| (FAILED, format!("cannot write {}: {e}", file.display())))?;
    Ok(removed)
}
