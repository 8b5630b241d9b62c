//! Loading a configuration: the file through `toml` first (for errors with
//! line and column), then defaults, the file and `MANIFOLD_*` environment
//! overrides through figment, then validation into a [`GatewayConfig`].
//!
//! Invariants: no secret is read here but through `lookup` (references are
//! resolved by validation); an error names the file.
//!
//! Not here: what each section means (its own module), validation (`validate`).

use crate::{effective, file::FileConfig, snapshot::GatewayConfig};
use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use std::path::{Path, PathBuf};

/// Environment variables with this prefix override file values:
/// `MANIFOLD_SERVER__LISTEN=0.0.0.0:8080`, `MANIFOLD_UPSTREAMS__TIME__TIMEOUT=10s`.
pub const ENV_PREFIX: &str = "MANIFOLD_";
/// Separates nesting levels in override variable names.
pub const ENV_SPLIT: &str = "__";
/// Top-level sections that environment overrides may address. Other `MANIFOLD_*`
/// variables (e.g. `MANIFOLD_CONFIG`) are not configuration keys and are ignored.
pub const ENV_SECTIONS: &[&str] = &[
    "server",
    "naming",
    "limits",
    "upstreams",
    "audit",
    "auth",
    "admin",
    "metrics",
    "validation",
    "rate_limit",
    "policy",
    "confirm",
    "stdio",
    "tracing",
    "cluster",
    "credentials",
    "integrity",
    "endpoint",
];

/// A configuration problem, reported before anything starts (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{file}: {message}")]
pub struct ConfigError {
    pub file: PathBuf,
    pub message: String,
}

impl ConfigError {
    fn new(file: &Path, message: impl Into<String>) -> Self {
        ConfigError {
            file: file.to_path_buf(),
            message: message.into(),
        }
    }
}

/// Loads and validates a configuration file with environment overrides from the
/// process environment.
pub fn load(path: &Path) -> Result<GatewayConfig, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(path, format!("cannot read the file: {e}")))?;
    load_str(path, &text, |name| std::env::var(name).ok(), Env::raw())
}

/// Loads from text; `lookup` resolves `${VAR}` and `env` supplies overrides.
/// Split out so tests control the environment.
pub fn load_str(
    path: &Path,
    text: &str,
    lookup: impl Fn(&str) -> Option<String>,
    env: Env,
) -> Result<GatewayConfig, ConfigError> {
    // Pass 1: the file alone through `toml`, whose errors carry line and column
    // ("unknown field `lisen`, expected one of …" at line 3). figment loses spans.
    toml::from_str::<FileConfig>(text)
        .map_err(|e| ConfigError::new(path, e.to_string().trim_end().to_string()))?;
    // Pass 2: defaults, the file, then environment overrides.
    let env = env
        .filter(|k| k.as_str().to_ascii_uppercase().starts_with(ENV_PREFIX))
        .map(|k| k.as_str()[ENV_PREFIX.len()..].to_string().into())
        .filter(|k| {
            let first = k.as_str().split(ENV_SPLIT).next().unwrap_or("");
            ENV_SECTIONS.iter().any(|s| s.eq_ignore_ascii_case(first))
        })
        .split(ENV_SPLIT)
        .lowercase(true);
    let file: FileConfig = Figment::from(Serialized::defaults(FileConfig::default()))
        .merge(Toml::string(text))
        .merge(env)
        .extract()
        .map_err(|e| ConfigError::new(path, figment_message(&e)))?;
    let effective = effective::render(&file);
    let mut cfg =
        crate::validate::validate(file, &lookup).map_err(|m| ConfigError::new(path, m))?;
    cfg.effective = effective;
    Ok(cfg)
}

fn figment_message(e: &figment::Error) -> String {
    let mut parts = Vec::new();
    for err in e.clone() {
        let key = if err.path.is_empty() {
            String::new()
        } else {
            format!("key `{}`: ", err.path.join("."))
        };
        let from = err
            .metadata
            .as_ref()
            .map(|m| format!(" (from {})", m.name))
            .unwrap_or_default();
        parts.push(format!("{key}{}{from}", err.kind));
    }
    parts.join("; ")
}
