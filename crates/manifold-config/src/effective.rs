//! The effective configuration as an operator may see it (`/config` on the
//! admin listener): the file after defaults and environment overrides, before
//! `${VAR}` expansion, with every secret-bearing value replaced.
//!
//! Invariants: a value under `headers` or `env`, any value of a key whose name
//! says it holds a secret (`client_secret`, `request_state_key`, `session_key`,
//! `token`, `password`, `secret`, `hash`, …), a command-line value after a
//! secret flag (`--token X`, `--api-key=X`) and a URL's password are
//! `[REDACTED]`, unless the value is only a `${VAR}` reference, which names
//! where the secret comes from and is kept; nothing is ever expanded here.
//!
//! Not here: validation (`validate`).

use serde_json::Value;

/// What a redacted value becomes.
pub const REDACTED: &str = "[REDACTED]";

/// Keys whose values are secrets wherever they appear.
const SECRET_KEYS: &[&str] = &[
    "client_secret",
    "request_state_key",
    "session_key",
    "previous_session_keys",
    "redis",
    "token",
    "password",
    "secret",
    "hash",
    "key",
    "api_key",
];

/// Maps whose every value may be a secret (`Authorization` headers, tokens in
/// a child's environment).
const SECRET_MAPS: &[&str] = &["headers", "env"];

/// The file model as JSON, redacted.
pub(crate) fn render(file: &crate::model::FileConfig) -> Value {
    let mut v = serde_json::to_value(file).unwrap_or(Value::Null);
    redact(&mut v, false);
    v
}

fn is_reference(s: &str) -> bool {
    s.starts_with("${")
        && s.ends_with('}')
        && s[2..s.len() - 1]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether a command-line flag names a secret (`--token`, `--api-key`…).
fn is_secret_flag(s: &str) -> bool {
    let flag = s.trim_start_matches('-').to_ascii_lowercase();
    s.starts_with('-')
        && SECRET_KEYS
            .iter()
            .any(|k| flag == *k || flag.replace('-', "_") == *k || flag.ends_with(&format!("-{k}")))
}

/// A URL's password (`scheme://user:password@host`), hidden.
fn without_password(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let (userinfo, host) = rest.split_once('@')?;
    if userinfo.contains('/') {
        return None;
    }
    let (user, _) = userinfo.split_once(':')?;
    Some(format!("{scheme}://{user}:{REDACTED}@{host}"))
}

/// Redacts in place; `all` redacts every string below.
fn redact(v: &mut Value, all: bool) {
    match v {
        Value::String(s) if all && !is_reference(s) => *s = REDACTED.to_string(),
        Value::String(s) => {
            if let Some(clean) = without_password(s) {
                *s = clean;
            }
        }
        // A command line: the value after a secret flag, or in `--flag=value`.
        Value::Array(items) if !all => {
            let mut after_flag = false;
            for item in items.iter_mut() {
                if let Value::String(s) = item {
                    if after_flag && !is_reference(s) {
                        *s = REDACTED.to_string();
                        after_flag = false;
                        continue;
                    }
                    after_flag = false;
                    if let Some((flag, value)) = s.split_once('=') {
                        if is_secret_flag(flag) && !is_reference(value) {
                            *s = format!("{flag}={REDACTED}");
                            continue;
                        }
                    } else if is_secret_flag(s) {
                        after_flag = true;
                        continue;
                    }
                }
                redact(item, false);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact(i, all)),
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                let secret =
                    all || SECRET_KEYS.contains(&k.as_str()) || SECRET_MAPS.contains(&k.as_str());
                redact(child, secret);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn secrets_are_redacted_and_references_kept() {
        let mut v = json!({
            "server": {"listen": "127.0.0.1:8080", "request_state_key": "0123456789abcdef0123456789abcdef"},
            "upstreams": {"gh": {"url": "https://x", "headers": {"Authorization": "Bearer abc", "X-Ref": "${GH_TOKEN}"},
                                  "env": {"TOKEN": "t"}, "timeout": "30s"}},
            "auth": {"introspection": [{"client_id": "m", "client_secret": "s"}],
                     "api_keys": [{"name": "ci", "hash": "sha256:00"}]},
        });
        redact(&mut v, false);
        assert_eq!(v["server"]["listen"], "127.0.0.1:8080");
        assert_eq!(v["server"]["request_state_key"], REDACTED);
        let gh = &v["upstreams"]["gh"];
        assert_eq!(gh["headers"]["Authorization"], REDACTED);
        assert_eq!(gh["headers"]["X-Ref"], "${GH_TOKEN}");
        assert_eq!(gh["env"]["TOKEN"], REDACTED);
        assert_eq!(gh["timeout"], "30s");
        assert_eq!(v["auth"]["introspection"][0]["client_id"], "m");
        assert_eq!(v["auth"]["introspection"][0]["client_secret"], REDACTED);
        assert_eq!(v["auth"]["api_keys"][0]["name"], "ci");
        assert_eq!(v["auth"]["api_keys"][0]["hash"], REDACTED);
        assert!(!v.to_string().contains("Bearer abc"));
    }

    #[test]
    fn secrets_on_command_lines_and_in_urls_are_redacted() {
        let mut v = json!({"upstreams": {"x": {
            "args": ["serve", "--token", "t0p", "--api-key=k3y", "--verbose", "--password", "${PW}"],
            "url": "https://user:s3cret@example.com/mcp",
            "plain": "https://example.com/a@b"
        }}});
        redact(&mut v, false);
        let x = &v["upstreams"]["x"];
        assert_eq!(
            x["args"],
            json!([
                "serve",
                "--token",
                REDACTED,
                format!("--api-key={REDACTED}"),
                "--verbose",
                "--password",
                "${PW}"
            ])
        );
        assert_eq!(x["url"], format!("https://user:{REDACTED}@example.com/mcp"));
        assert_eq!(x["plain"], "https://example.com/a@b");
    }
}
