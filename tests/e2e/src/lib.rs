//! Support for the black-box suites: where the pinned peers are (installed by
//! `scripts/peers`), child processes that are always reaped, and validation of
//! every message Manifold emits against the official JSON schema of its revision.
//!
//! These suites need the peers; `scripts/test` installs them and runs this crate.
//! Run alone without peers they fail with a message saying so, never silently pass.

use anyhow::{anyhow, bail, Context, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The installed peers, from `.peers/env.sh` (exported by `scripts/test`).
pub struct Peers {
    pub node: PathBuf,
    pub node_modules: PathBuf,
    pub python: PathBuf,
    pub time_server: PathBuf,
}

/// The path an environment variable the peers set names; an error saying to
/// run the peers when it is unset or does not exist.
pub fn env_path(name: &str) -> Result<PathBuf> {
    let v = std::env::var(name).map_err(|_| {
        anyhow!("{name} is not set: these suites need the pinned peers; run `scripts/test` (it installs them with scripts/peers)")
    })?;
    let p = PathBuf::from(v);
    if !p.exists() {
        bail!("{name}={} does not exist; rerun scripts/peers", p.display());
    }
    Ok(p)
}

impl Peers {
    pub fn from_env() -> Result<Peers> {
        Ok(Peers {
            node: env_path("MANIFOLD_NODE")?,
            node_modules: env_path("MANIFOLD_NODE_MODULES")?,
            python: env_path("MANIFOLD_PYTHON")?,
            time_server: env_path("MANIFOLD_TIME_SERVER")?,
        })
    }
    /// The Python of the FastMCP venv (`.peers/py-fastmcp`: fastmcp and
    /// fastmcp-tasks 4.1.4), for the Tasks extension's interop test.
    pub fn fastmcp_python(&self) -> Result<PathBuf> {
        env_path("MANIFOLD_FASTMCP_PYTHON")
    }
    pub fn everything_js(&self) -> PathBuf {
        self.node_modules
            .join("@modelcontextprotocol/server-everything/dist/index.js")
    }
}

/// The repository's root (this crate lives in `tests/e2e/`).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `manifold` binary under test: `$MANIFOLD_BIN`, else target/debug.
pub fn manifold_bin() -> Result<PathBuf> {
    let p = match std::env::var("MANIFOLD_BIN") {
        Ok(p) => PathBuf::from(p),
        Err(_) => repo_root().join("target/debug/manifold"),
    };
    if !p.exists() {
        bail!(
            "{} does not exist; build it with `cargo build --bins` (scripts/test does)",
            p.display()
        );
    }
    Ok(p)
}

pub use manifold_testkit::process::Proc;

/// `manifold serve --config cfg` (its log at `log`), started as `name`: the
/// process, its `Manifold listening on …` line (which says how many
/// upstreams are ready) and the URL in it, within `startup`.
pub fn serve(
    name: &str,
    cfg: &Path,
    log: &str,
    startup: std::time::Duration,
) -> Result<(Proc, String, String)> {
    let mut cmd = std::process::Command::new(manifold_bin()?);
    cmd.arg("serve")
        .arg("--config")
        .arg(cfg)
        .env("RUST_LOG", log);
    let proc = Proc::spawn(name, cmd)?;
    let line = Proc::wait_line(&proc.stdout, "Manifold listening on", startup, name)?;
    let url = url_in(&line)?;
    Ok((proc, line, url))
}

/// The `http://…` URL in a `Manifold listening on …` line.
pub fn url_in(line: &str) -> Result<String> {
    Ok(line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .context("no URL in the listening line")?
        .to_string())
}

/// The MCP schemas, beside the repository (not in it): a clone alone has none,
/// and its schema checks say they are skipped; CI has them.
pub const SCHEMA_DIR: &str = "../shared/mcp-schema";

/// Validators for one protocol revision's schema; without the schemas beside the
/// repository ([`SCHEMA_DIR`]), a validator that says so and checks nothing
/// (messages are still parsed and counted).
pub struct Schema {
    revision: String,
    /// `None`: the schemas are not there.
    root: Option<Value>,
    key: &'static str,
    cache: std::cell::RefCell<HashMap<String, jsonschema::Validator>>,
}

impl Schema {
    pub fn load(revision: &str) -> Result<Schema> {
        let dir = repo_root().join(SCHEMA_DIR);
        if !dir.is_dir() {
            eprintln!(
                "schema checks of {revision} skipped: {} is not beside this repository (a clone \
                 alone has none); they run whenever it is there (CI)",
                dir.display()
            );
            return Ok(Schema {
                revision: revision.into(),
                root: None,
                key: "$defs",
                cache: Default::default(),
            });
        }
        let path = dir.join(revision).join("schema.json");
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let root: Value = serde_json::from_str(&text)?;
        let key = if root.get("$defs").is_some() {
            "$defs"
        } else {
            "definitions"
        };
        Ok(Schema {
            revision: revision.into(),
            root: Some(root),
            key,
            cache: Default::default(),
        })
    }

    /// Whether the schema is there to check against.
    pub fn available(&self) -> bool {
        self.root.is_some()
    }

    fn has(&self, def: &str) -> bool {
        self.root
            .as_ref()
            .is_some_and(|r| r[self.key].get(def).is_some())
    }

    /// Validates `v` against definition `def` (nothing without the schema).
    pub fn check(&self, def: &str, v: &Value) -> Result<()> {
        let Some(root) = &self.root else {
            return Ok(());
        };
        let mut cache = self.cache.borrow_mut();
        if !cache.contains_key(def) {
            let mut s = serde_json::Map::new();
            if let Some(d) = root.get("$schema") {
                s.insert("$schema".into(), d.clone());
            }
            s.insert(self.key.into(), root[self.key].clone());
            s.insert("$ref".into(), json!(format!("#/{}/{def}", self.key)));
            let validator = jsonschema::validator_for(&Value::Object(s))
                .map_err(|e| anyhow!("compiling {def} of {}: {e}", self.revision))?;
            cache.insert(def.to_string(), validator);
        }
        let validator = &cache[def];
        let errors: Vec<String> = validator
            .iter_errors(v)
            .take(3)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            bail!(
                "{} schema, {def}: {}\nmessage: {}",
                self.revision,
                errors.join("; "),
                v
            )
        }
    }

    /// Validates one message a server emitted: the JSON-RPC envelope, then the
    /// specific type its shape or method names.
    pub fn check_server_message(&self, msg: &Value) -> Result<()> {
        self.check("JSONRPCMessage", msg)?;
        if msg.get("method").is_some() {
            let def = if msg.get("id").is_some() {
                "ServerRequest"
            } else {
                "ServerNotification"
            };
            // 2025-11-25 types carry the whole envelope; older ones only method+params.
            let mut inner = serde_json::Map::new();
            inner.insert("method".into(), msg["method"].clone());
            if let Some(p) = msg.get("params") {
                inner.insert("params".into(), p.clone());
            }
            return self
                .check(def, msg)
                .or_else(|_| self.check(def, &Value::Object(inner)));
        }
        if let Some(err) = msg.get("error") {
            let def = if self.has("JSONRPCErrorResponse") {
                "JSONRPCErrorResponse"
            } else {
                "JSONRPCError"
            };
            let _ = err;
            return self.check(def, msg);
        }
        let result = &msg["result"];
        let def = if result.get("protocolVersion").is_some() {
            "InitializeResult"
        } else if result.get("tools").is_some() {
            "ListToolsResult"
        } else if result.get("prompts").is_some() {
            "ListPromptsResult"
        } else if result.get("resources").is_some() {
            "ListResourcesResult"
        } else if result.get("content").is_some() {
            "CallToolResult"
        } else if result.get("messages").is_some() {
            "GetPromptResult"
        } else {
            "Result"
        };
        self.check(def, result)
    }

    /// Validates every line of a wire log; returns how many messages were checked.
    pub fn check_wire_log(&self, path: &Path) -> Result<usize> {
        let text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let mut n = 0;
        for (i, line) in text
            .lines()
            .enumerate()
            .filter(|(_, l)| !l.trim().is_empty())
        {
            let v: Value = serde_json::from_str(line)
                .with_context(|| format!("{}:{} is not JSON", path.display(), i + 1))?;
            self.check_server_message(&v)
                .with_context(|| format!("{}:{}", path.display(), i + 1))?;
            n += 1;
        }
        Ok(n)
    }
}

/// A scratch directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Result<TempDir> {
        let p = std::env::temp_dir().join(format!("manifold-e2e-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p)?;
        Ok(TempDir(p))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
