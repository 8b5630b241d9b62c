//! Imported servers as `[upstreams.<name>]` tables of a `gateway.toml`
//! (toml_edit: a merge keeps the file's own comments and order), with:
//!
//! - names made valid upstream names (`^[A-Za-z0-9_-]{1,32}$`, no `__`, the
//!   default separator), unique, each change reported;
//! - every `env` value and header that looks secret written as a `${VAR}`
//!   reference, never as the literal: [`Vars`] says which variables to export
//!   and where their values are; references the client already used
//!   (`${VAR}`, `${env:VAR}`, VS Code's `${input:id}`) become `${VAR}` too;
//! - a comment above each table naming the file and key it came from.
//!
//! Invariants: a literal secret never reaches the document or a message;
//! an upstream already in the document is replaced only with `force`.
//!
//! Not here: reading the client files (`formats`), writing files and checking
//! (`mod.rs`).

use std::collections::BTreeMap;
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value};

use super::formats::{Server, Transport};

/// The longest upstream name.
const MAX_NAME: usize = 32;

/// Variables the document refers to: name → where its value is (or "you
/// choose it", for a client's input prompt).
#[derive(Debug, Default)]
pub struct Vars {
    pub from: BTreeMap<String, String>,
    /// name → the literal, to tell two servers' different values apart (never shown).
    values: BTreeMap<String, String>,
}

/// What rendering did, for the report.
#[derive(Debug, Default)]
pub struct Report {
    /// (original name, upstream name) where they differ.
    pub renamed: Vec<(String, String)>,
    /// (upstream, note): disabled servers, transports to check.
    pub notes: Vec<(String, String)>,
    /// Upstream names added.
    pub added: Vec<String>,
}

/// A valid upstream name for `name`, not in `taken`.
pub fn upstream_name(name: &str, taken: &dyn Fn(&str) -> bool) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .collect();
    while s.contains("__") {
        s = s.replace("__", "_");
    }
    let trimmed = s.trim_matches(['-', '_']);
    let mut base: String = if trimmed.is_empty() {
        "server".into()
    } else {
        trimmed.into()
    };
    base.truncate(MAX_NAME);
    let mut candidate = base.clone();
    let mut n = 2;
    while taken(&candidate) {
        let suffix = format!("-{n}");
        let mut b = base.clone();
        b.truncate(MAX_NAME - suffix.len());
        candidate = format!("{b}{suffix}");
        n += 1;
    }
    candidate
}

/// Whether an `env` key or header name says its value is a credential.
fn secret_name(name: &str) -> bool {
    let n = name.to_ascii_uppercase();
    const WORDS: [&str; 12] = [
        "TOKEN",
        "SECRET",
        "PASSWORD",
        "PASSWD",
        "APIKEY",
        "API_KEY",
        "API-KEY",
        "AUTH",
        "CREDENTIAL",
        "PRIVATE",
        "COOKIE",
        "SESSION",
    ];
    WORDS.iter().any(|w| n.contains(w))
        || n.split(['_', '-'])
            .any(|p| matches!(p, "KEY" | "PAT" | "PASS" | "PWD"))
}

/// Whether a value looks like a credential whatever its name says: a known
/// token prefix, a JWT, or a long run of letters and digits.
fn secret_value(v: &str) -> bool {
    const PREFIXES: [&str; 12] = [
        "ghp_",
        "gho_",
        "ghu_",
        "ghs_",
        "github_pat_",
        "glpat-",
        "sk-",
        "sk_live_",
        "xoxb-",
        "xoxp-",
        "AKIA",
        "eyJ",
    ];
    let v = v.trim();
    let token = v.strip_prefix("Bearer ").unwrap_or(v);
    PREFIXES.iter().any(|p| token.starts_with(p))
        || (token.len() >= 24
            && token
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.=+/".contains(c))
            && token.chars().any(|c| c.is_ascii_digit())
            && token.chars().any(|c| c.is_ascii_alphabetic())
            && !token.contains("://"))
}

/// A reference the client already wrote (`${VAR}`, `${env:VAR}`,
/// `${input:id}`): the variable's name.
fn reference(v: &str) -> Option<String> {
    let inner = v.trim().strip_prefix("${")?.strip_suffix('}')?;
    let name = inner
        .strip_prefix("env:")
        .or_else(|| inner.strip_prefix("input:"))
        .unwrap_or(inner);
    Some(env_name(name))
}

/// `name` as an environment variable name.
fn env_name(name: &str) -> String {
    let s: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    if s.starts_with(|c: char| c.is_ascii_digit()) || s.is_empty() {
        format!("V_{s}")
    } else {
        s
    }
}

impl Vars {
    /// The variable for `literal` found at `at`, preferring `wanted`; a
    /// different value already under that name gets `fallback`.
    fn take(&mut self, wanted: String, fallback: String, literal: &str, at: &str) -> String {
        let name = match self.values.get(&wanted) {
            Some(v) if v != literal => fallback,
            _ => wanted,
        };
        self.values.insert(name.clone(), literal.to_string());
        self.from
            .entry(name.clone())
            .or_insert_with(|| at.to_string());
        name
    }

    fn referenced(&mut self, name: String, at: &str) -> String {
        self.from
            .entry(name.clone())
            .or_insert_with(|| format!("{at} (a reference in the client's file: set it yourself)"));
        name
    }
}

/// A value to write: the literal, or a `${VAR}` for a secret.
fn value(
    vars: &mut Vars,
    upstream: &str,
    key: &str,
    literal: &str,
    at: &str,
    header: bool,
) -> String {
    if let Some(name) = reference(literal) {
        return format!("${{{}}}", vars.referenced(name, at));
    }
    let authorization = header && key.eq_ignore_ascii_case("authorization");
    let secret = secret_name(key) || secret_value(literal) || authorization;
    if !secret {
        return literal.replace('$', "$$");
    }
    let up = env_name(upstream);
    if authorization {
        // Keep the scheme: `Bearer ${GITHUB_TOKEN}`.
        let (scheme, rest) = literal.split_once(' ').unwrap_or(("", literal));
        if let Some(name) = reference(rest) {
            return format!("{scheme} ${{{}}}", vars.referenced(name, at));
        }
        let name = vars.take(format!("{up}_TOKEN"), format!("{up}_TOKEN_2"), rest, at);
        return if scheme.is_empty() {
            format!("${{{name}}}")
        } else {
            format!("{scheme} ${{{name}}}")
        };
    }
    let wanted = if header {
        format!("{up}_{}", env_name(key))
    } else {
        env_name(key)
    };
    let name = vars.take(wanted, format!("{up}_{}", env_name(key)), literal, at);
    format!("${{{name}}}")
}

fn inline(
    vars: &mut Vars,
    upstream: &str,
    pairs: &[(String, String)],
    at: &str,
    header: bool,
) -> InlineTable {
    let mut t = InlineTable::new();
    for (k, v) in pairs {
        let written = value(vars, upstream, k, v, &format!("{at}.{k}"), header);
        t.insert(k, Value::from(written));
    }
    t
}

/// Adds `servers` (read from `file`) to `doc` as upstream tables.
pub fn add(
    doc: &mut DocumentMut,
    servers: &[Server],
    file: &str,
    force: bool,
    vars: &mut Vars,
) -> Result<Report, String> {
    let mut report = Report::default();
    if !doc.contains_key("upstreams") {
        let mut t = Table::new();
        t.set_implicit(true);
        doc.insert("upstreams", Item::Table(t));
    }
    let existing: Vec<String> = doc["upstreams"]
        .as_table()
        .map(|t| t.iter().map(|(k, _)| k.to_string()).collect())
        .unwrap_or_default();
    let mut planned: Vec<(String, &Server)> = Vec::new();
    for s in servers {
        let already = |n: &str| {
            planned.iter().any(|(p, _)| p == n)
                || (!force && existing.iter().any(|e| e == n) && n != s.name)
        };
        let name = upstream_name(&s.name, &already);
        if existing.contains(&name) && !force {
            return Err(format!(
                "upstream `{name}` is already in the configuration; nothing was written (use --force to replace it)"
            ));
        }
        if name != s.name {
            report.renamed.push((s.name.clone(), name.clone()));
        }
        planned.push((name, s));
    }
    for (name, s) in planned {
        let at = format!("{file}: {}", s.at);
        let mut t = Table::new();
        let mut note = format!("\n# {name}: imported from {file} ({})\n", s.at);
        if s.disabled {
            note.push_str(
                "# It is disabled in the client; remove this table if you do not want it.\n",
            );
            report
                .notes
                .push((name.clone(), "disabled in the client".into()));
        }
        match &s.transport {
            Transport::Stdio {
                command,
                args,
                env,
                cwd,
            } => {
                t.insert("command", toml_edit::value(command.as_str()));
                if !args.is_empty() {
                    let mut a = Array::new();
                    for x in args {
                        a.push(x.as_str());
                    }
                    t.insert("args", toml_edit::value(a));
                }
                if !env.is_empty() {
                    t.insert(
                        "env",
                        toml_edit::value(inline(vars, &name, env, &format!("{at}.env"), false)),
                    );
                }
                if let Some(c) = cwd {
                    t.insert("cwd", toml_edit::value(c.as_str()));
                }
            }
            Transport::Remote { url, kind, headers } => {
                t.insert("url", toml_edit::value(url.as_str()));
                if !headers.is_empty() {
                    t.insert(
                        "headers",
                        toml_edit::value(inline(
                            vars,
                            &name,
                            headers,
                            &format!("{at}.headers"),
                            true,
                        )),
                    );
                }
                if kind.as_deref() == Some("sse") || url.ends_with("/sse") {
                    note.push_str("# The client spoke the older HTTP+SSE transport to it; Manifold speaks Streamable HTTP:\n# check that the server serves it (often at /mcp instead of /sse).\n");
                    report.notes.push((
                        name.clone(),
                        "HTTP+SSE in the client: check its Streamable HTTP URL".into(),
                    ));
                }
            }
        }
        t.decor_mut().set_prefix(note);
        if let Some(ups) = doc["upstreams"].as_table_mut() {
            ups.insert(&name, Item::Table(t));
        }
        report.added.push(name);
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_valid_and_unique() {
        let none = |_: &str| false;
        assert_eq!(upstream_name("github", &none), "github");
        assert_eq!(upstream_name("My Server (prod)", &none), "My-Server--prod");
        assert_eq!(upstream_name("a__b", &none), "a_b");
        assert_eq!(upstream_name("@scope/pkg", &none), "scope-pkg");
        assert_eq!(upstream_name("!!!", &none), "server");
        assert_eq!(upstream_name(&"x".repeat(40), &none).len(), MAX_NAME);
        assert_eq!(upstream_name("a", &|n| n == "a"), "a-2");
    }

    #[test]
    fn secrets_become_references_and_the_rest_stays() {
        let mut vars = Vars::default();
        let table: &[(&str, &str, bool, &str)] = &[
            (
                "GITHUB_PERSONAL_ACCESS_TOKEN",
                "ghp_abcdefabcdefabcdef",
                false,
                "${GITHUB_PERSONAL_ACCESS_TOKEN}",
            ),
            ("LOG_LEVEL", "debug", false, "debug"),
            ("ALLOWED", "/home/me/projects", false, "/home/me/projects"),
            ("OPENAI", "sk-proj-0123456789", false, "${OPENAI}"),
            (
                "Authorization",
                "Bearer 0123456789abcdef0123456789",
                true,
                "Bearer ${GH_TOKEN}",
            ),
            ("X-Api-Key", "k", true, "${GH_X_API_KEY}"),
            ("TOKEN", "${env:MY_TOKEN}", false, "${MY_TOKEN}"),
            ("PAT", "${input:pat}", false, "${PAT}"),
            ("PRICE", "$5", false, "$$5"),
        ];
        for (key, literal, header, want) in table {
            assert_eq!(
                value(&mut vars, "gh", key, literal, "f", *header),
                *want,
                "{key}"
            );
        }
        // Two servers, two values under one name: the second is qualified.
        assert_eq!(
            value(
                &mut vars,
                "other",
                "GITHUB_PERSONAL_ACCESS_TOKEN",
                "ghp_zzzzzzzzzzzzzzzz0",
                "g",
                false
            ),
            "${OTHER_GITHUB_PERSONAL_ACCESS_TOKEN}"
        );
        assert_eq!(
            value(
                &mut vars,
                "third",
                "GITHUB_PERSONAL_ACCESS_TOKEN",
                "ghp_abcdefabcdefabcdef",
                "h",
                false
            ),
            "${GITHUB_PERSONAL_ACCESS_TOKEN}"
        );
        assert!(vars.from.contains_key("MY_TOKEN") && vars.from.contains_key("PAT"));
    }
}
