//! `manifold import PATH… [--out FILE] [--merge] [--format F] [--force]`:
//! MCP client configurations (Claude Desktop, Claude Code, VS Code, Cursor,
//! Windsurf) become `[upstreams.<name>]` tables of a `gateway.toml`, then what
//! `manifold check` runs is run on it.
//!
//! Without `--merge`, `--out` (default `gateway.toml`) must not exist; with
//! it, the tables join the file's (its comments and order kept) and an
//! upstream of the same name is an error unless `--force` replaces it.
//! Nothing is written when anything is wrong. Secrets are written as `${VAR}`
//! (`render`); the variables to export are printed with where each value is,
//! never the value. When every variable is set, the new configuration is
//! checked at once (each upstream's state); otherwise the command says what
//! to export and run.
//!
//! Exit codes: 0 written (and every upstream ready, when checked), 1 written
//! but some upstream is not ready, 2 bad input (an unreadable or unknown
//! file, a name already configured, an existing `--out` without `--merge`).

mod formats;
mod render;

pub use formats::Format;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use super::{FAILED, USAGE};

/// The first lines of a new configuration.
const HEADER: &str = "# Manifold gateway configuration, written by `manifold import`.\n\
# Every option: docs/configuration.md. Secrets are ${VAR} references: export them first.\n\n\
[server]\nlisten = \"127.0.0.1:8080\"\n";

/// `manifold import`'s arguments.
pub struct Import<'a> {
    pub paths: &'a [PathBuf],
    pub out: &'a Path,
    pub merge: bool,
    pub format: Option<Format>,
    pub force: bool,
}

/// Runs `manifold import`.
pub fn run(rt: &tokio::runtime::Runtime, a: Import<'_>) -> ExitCode {
    let written = match write(&a) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("manifold: {e}");
            return ExitCode::from(USAGE);
        }
    };
    let missing: Vec<&String> = written
        .vars
        .from
        .keys()
        .filter(|v| std::env::var_os(v.as_str()).is_none())
        .collect();
    if !missing.is_empty() {
        let names: Vec<&str> = missing.iter().map(|s| s.as_str()).collect();
        println!(
            "\nexport {} (each `=` its value), then run `manifold check --config {}`",
            names.join(" "),
            a.out.display()
        );
        return ExitCode::SUCCESS;
    }
    println!("\nchecking {} (as `manifold check` does):", a.out.display());
    let code = super::check::run(rt, a.out, false, None, None);
    if code == ExitCode::SUCCESS {
        code
    } else {
        ExitCode::from(FAILED)
    }
}

struct Written {
    vars: render::Vars,
}

fn write(a: &Import<'_>) -> Result<Written, String> {
    let exists = a.out.exists();
    if exists && !a.merge {
        return Err(format!(
            "{} exists; add --merge to add the servers to it, or --out to write another file",
            a.out.display()
        ));
    }
    let text = if exists {
        std::fs::read_to_string(a.out)
            .map_err(|e| format!("cannot read {}: {e}", a.out.display()))?
    } else {
        HEADER.to_string()
    };
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| format!("{} is not TOML: {e}", a.out.display()))?;
    let mut vars = render::Vars::default();
    let mut reports = Vec::new();
    for path in a.paths {
        let raw = std::fs::read_to_string(path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let v: serde_json::Value = serde_json::from_str(&raw)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let format = match a.format.or_else(|| formats::detect(path, &v)) {
            Some(f) => f,
            None => {
                return Err(format!(
                    "{}: not an MCP client configuration Manifold knows (no `mcpServers` or `servers`); name it with --format",
                    path.display()
                ))
            }
        };
        let servers =
            formats::servers(format, &v).map_err(|e| format!("{}: {e}", path.display()))?;
        let shown = path.display().to_string();
        let report = render::add(&mut doc, &servers, &shown, a.force, &mut vars)?;
        reports.push((shown, format, report));
    }
    let text = doc.to_string();
    // What is written must load (variables aside): checked before the file changes.
    let lookup = |_: &str| Some("x".repeat(manifold_config::credentials::MIN_STORE_KEY_LEN));
    if let Err(e) = manifold_config::load_str(a.out, &text, lookup, figment_none()) {
        return Err(format!(
            "the imported configuration would not load, so nothing was written: {e}"
        ));
    }
    std::fs::write(a.out, text).map_err(|e| format!("cannot write {}: {e}", a.out.display()))?;
    for (file, format, r) in &reports {
        println!(
            "imported {} server(s) from {file} ({}) into {}",
            r.added.len(),
            format.as_str(),
            a.out.display()
        );
        for name in &r.added {
            println!("  [upstreams.{name}]");
        }
        for (from, to) in &r.renamed {
            println!(
                "  renamed `{}` to `{to}` (upstream names are letters, digits, - and _, at most 32)",
                manifold_foundation::text::printable(from)
            );
        }
        for (name, note) in &r.notes {
            println!("  {name}: {note}");
        }
    }
    if !vars.from.is_empty() {
        println!(
            "\nsecrets are not written to {}; export these before `manifold serve`:",
            a.out.display()
        );
        for (name, from) in &vars.from {
            println!(
                "  {name}  (its value: {})",
                manifold_foundation::text::printable(from)
            );
        }
    }
    Ok(Written { vars })
}

/// No environment overrides while checking what would be written.
fn figment_none() -> figment::providers::Env {
    figment::providers::Env::raw().only(&[] as &[&str])
}
