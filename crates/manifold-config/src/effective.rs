//! The effective configuration as an operator may see it (`/config` on the
//! admin listener): the file after defaults and environment overrides, before
//! `${VAR}` expansion, with every secret-bearing value replaced.
//!
//! Invariants: every value under `headers` and `env`, every upstream `args`
//! element (flags cannot tell which values are secrets: `-e TOKEN=…`,
//! `--header "Authorization: Bearer …"`), every value of a key whose name
//! says it holds a secret (`client_secret`, `request_state_key`,
//! `session_key`, `token`, `password`, `secret`, `hash`, …), and in every URL
//! the password and each query (and fragment) value are redacted: what is
//! written literally becomes `[REDACTED]`, while `${VAR}` references stay as
//! written (`Bearer ${TOKEN}` shows as `[REDACTED]${TOKEN}`), naming where the
//! secret comes from; nothing is ever expanded here (this renders the file
//! model, before expansion).
//!
//! Not here: validation (`validate`). A literal secret in a URL's path is not
//! recognised: write it as a `${VAR}` reference.

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

/// Maps and lists whose every value may be a secret (`Authorization`
/// headers, tokens in a child's environment or on its command line).
const SECRET_CONTAINERS: &[&str] = &["headers", "env", "args"];

/// The file model as JSON, redacted.
pub(crate) fn render(file: &crate::file::FileConfig) -> Value {
    let mut v = serde_json::to_value(file).unwrap_or(Value::Null);
    redact(&mut v, false);
    v
}

/// `s` with every literal run replaced by [`REDACTED`] and every `${VAR}`
/// reference kept as written (the grammar of `expand`: `$$` is a literal
/// `$`). An empty value stays empty: it hides nothing.
fn keep_references(s: &str) -> String {
    fn flush(out: &mut String, literal: &mut bool) {
        if std::mem::take(literal) {
            out.push_str(REDACTED);
        }
    }
    let mut out = String::new();
    let mut literal = false;
    let mut rest = s;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("$$") {
            literal = true;
            rest = after;
            continue;
        }
        if let Some(body) = rest.strip_prefix("${") {
            if let Some(end) = body.find('}') {
                let name = &body[..end];
                if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    flush(&mut out, &mut literal);
                    out.push_str(&rest[..end + 3]);
                    rest = &body[end + 1..];
                    continue;
                }
            }
        }
        literal = true;
        let step = rest.chars().next().map_or(1, char::len_utf8);
        rest = &rest[step..];
    }
    flush(&mut out, &mut literal);
    out
}

/// A URL with its password and every query and fragment value redacted;
/// `None` when `s` is not a URL or has nothing to hide.
fn redact_url(s: &str) -> Option<String> {
    let (scheme, rest) = s.split_once("://")?;
    let scheme_ok = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !scheme_ok {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let mut out = format!("{scheme}://");
    // Both halves of the userinfo: a token is often written as the user
    // (`https://ghp_…@host`, `https://TOKEN:x-oauth-basic@host`).
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, password)) => out.push_str(&format!(
                "{}:{}@{host}",
                keep_references(user),
                keep_references(password)
            )),
            None => out.push_str(&format!("{}@{host}", keep_references(userinfo))),
        },
        None => out.push_str(authority),
    }
    let (before_fragment, fragment) = match tail.split_once('#') {
        Some((a, f)) => (a, Some(f)),
        None => (tail, None),
    };
    let (path, query) = match before_fragment.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (before_fragment, None),
    };
    out.push_str(path);
    if let Some(q) = query {
        out.push('?');
        out.push_str(&redact_pairs(q));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(&redact_pairs(f));
    }
    (out != s).then_some(out)
}

/// `k=v&…` with every value (or bare item) redacted but its references.
fn redact_pairs(q: &str) -> String {
    q.split('&')
        .map(|pair| match pair.split_once('=') {
            Some((k, v)) => format!("{k}={}", keep_references(v)),
            None => keep_references(pair),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// Redacts in place; `all` redacts every string below.
fn redact(v: &mut Value, all: bool) {
    match v {
        Value::String(s) if all => *s = keep_references(s),
        Value::String(s) => {
            if let Some(clean) = redact_url(s) {
                *s = clean;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| redact(i, all)),
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                let secret = all
                    || SECRET_KEYS.contains(&k.as_str())
                    || SECRET_CONTAINERS.contains(&k.as_str());
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
    fn every_argument_and_url_query_value_is_redacted_but_references() {
        let mut v = json!({"upstreams": {
            "gh": {
                "command": "docker",
                "args": ["run", "-e", "GITHUB_TOKEN=ghp_s3cret", "-e", "GITHUB_TOKEN",
                         "--header", "Authorization: Bearer s3cret-bearer", "${GITHUB_TOKEN}",
                         "--token=${T}", "$${X}", ""],
            },
            "remote": {"url": "https://user:pw@example.com/mcp?api_key=k3y&mode=${MODE}&flag#frag=f"},
            "ref": {"url": "https://${U}:${P}@example.com/mcp?api_key=${API_KEY}"},
            "plain": {"url": "https://example.com/a@b", "timeout": "30s"},
            "as_user": {"url": "https://ghp_TOKENasUSER@api.example.com/mcp"},
        }});
        redact(&mut v, false);
        let u = &v["upstreams"];
        assert_eq!(u["gh"]["command"], "docker");
        assert_eq!(
            u["gh"]["args"],
            json!([
                REDACTED,
                REDACTED,
                REDACTED,
                REDACTED,
                REDACTED,
                REDACTED,
                REDACTED,
                "${GITHUB_TOKEN}",
                format!("{REDACTED}${{T}}"),
                REDACTED,
                ""
            ])
        );
        assert_eq!(
            u["remote"]["url"],
            format!(
                "https://{REDACTED}:{REDACTED}@example.com/mcp?api_key={REDACTED}&mode=${{MODE}}&{REDACTED}#frag={REDACTED}"
            )
        );
        assert_eq!(
            u["ref"]["url"],
            "https://${U}:${P}@example.com/mcp?api_key=${API_KEY}"
        );
        assert_eq!(u["plain"]["url"], "https://example.com/a@b");
        assert_eq!(u["plain"]["timeout"], "30s");
        assert_eq!(
            u["as_user"]["url"],
            format!("https://{REDACTED}@api.example.com/mcp")
        );
        for secret in [
            "ghp_s3cret",
            "s3cret-bearer",
            "k3y",
            ":pw@",
            "user:",
            "TOKENasUSER",
        ] {
            assert!(!v.to_string().contains(secret), "{secret} in {v}");
        }
    }

    #[test]
    fn literal_runs_are_redacted_and_references_kept() {
        for (input, want) in [
            ("s3cret", REDACTED.to_string()),
            ("${TOKEN}", "${TOKEN}".into()),
            ("Bearer ${TOKEN}", format!("{REDACTED}${{TOKEN}}")),
            ("${A}:${B}", format!("${{A}}{REDACTED}${{B}}")),
            ("$${NOT}", REDACTED.into()),
            ("${bad-name}", REDACTED.into()),
            ("é${X}é", format!("{REDACTED}${{X}}{REDACTED}")),
            ("", String::new()),
        ] {
            assert_eq!(keep_references(input), want, "{input}");
        }
    }
}
