//! `[admin]`: the operators' listener — probes and metrics for anyone who can
//! reach it, control and inspection endpoints (`/config`, `/upstreams`,
//! `/catalog`, `/reload`, …) for the credentials named here. The file model
//! ([`AdminSection`], [`AdminTokenSection`]) and the validated
//! [`AdminSettings`] the admin listener reads.
//!
//! Invariants: an admin token is stored as the SHA-256 digest
//! `manifold auth hash-key` prints, exactly like `[[auth.api_keys]]`; token
//! names are unique; `who` uses the `[[policy]]` grammar but never `*` (it
//! would name anonymous callers) and needs an `[auth]` section to
//! authenticate anyone; a loopback listener without credentials keeps its
//! `Host` check (`allowed_hosts` is not `*`); `listen` is fixed at start,
//! the rest is reloadable. Without `tokens` or `who` the control endpoints
//! are not open: they take the local admin token kept in `token_file`.
//!
//! Not here: checking a request (manifold-server `admin::auth`).

use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

use crate::auth::ApiKey;

/// `[admin]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AdminSection {
    /// Socket address, e.g. `"127.0.0.1:9090"`.
    pub listen: String,
    /// `Host` values accepted besides IP literals and `localhost` (a
    /// DNS-rebinding page always arrives with its own domain name), e.g. the
    /// name a scraper or an operator uses; `"*"` accepts any host.
    #[serde(default)]
    pub allowed_hosts: Vec<String>,
    /// `Origin` values accepted besides a loopback listener's own loopback
    /// origins. Requests without `Origin` are accepted.
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    /// Bearer tokens for the control endpoints, by digest.
    #[serde(default)]
    pub tokens: Vec<AdminTokenSection>,
    /// Callers authenticated by `[auth]` who may use the control endpoints,
    /// matched as `[[policy]] who` is: `subject:…`, `group:…`, `scope:…`,
    /// `key:…` (never `*`).
    #[serde(default)]
    pub who: Vec<String>,
    /// Where the local admin token is kept when neither `tokens` nor `who`
    /// is configured: `serve` makes a random token at its first start,
    /// writes it here readable by its own user only, and reuses it on every
    /// restart (`manifold admin token` prints it). Default:
    /// `$XDG_STATE_HOME/manifold/admin-token`
    /// (`~/.local/state/manifold/admin-token`), else `admin-token` beside
    /// `[audit] path`.
    #[serde(default)]
    pub token_file: Option<String>,
    /// Refused admin credentials (console logins and bearer tokens) one
    /// client address may send per minute before it gets 429 until the
    /// minute ends (`DEFAULT_FAILED_LOGINS_PER_MINUTE`). The local admin
    /// token and the console's one-time link are never refused by it.
    #[serde(default = "default_failed_logins")]
    pub failed_logins_per_minute: u32,
}

/// Default `[admin] failed_logins_per_minute`.
pub const DEFAULT_FAILED_LOGINS_PER_MINUTE: u32 = 10;

fn default_failed_logins() -> u32 {
    DEFAULT_FAILED_LOGINS_PER_MINUTE
}

/// The local admin token's file name (`[admin] token_file`'s default name).
pub const ADMIN_TOKEN_FILE_NAME: &str = "admin-token";

/// `[[admin.tokens]]` in the file: like `[[auth.api_keys]]`, a name and a
/// digest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AdminTokenSection {
    /// Who holds the token (how logs and, later, audit records name them).
    pub name: String,
    /// `sha256:<64 hex digits>`, as `manifold auth hash-key` prints it
    /// (`${VAR}` expands).
    pub hash: String,
}

/// The validated `[admin]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AdminSettings {
    /// Fixed at start (a reload reports a change as needing a restart).
    pub listen: SocketAddr,
    pub allowed_hosts: Vec<String>,
    pub allowed_origins: Vec<String>,
    /// `[[admin.tokens]]`, as digests (no groups, no scopes).
    pub tokens: Vec<ApiKey>,
    /// `[admin] who`.
    pub who: Vec<String>,
    /// `[admin] token_file`, as written (see [`AdminSettings::token_file`]
    /// for the default). Fixed at start.
    pub token_file: Option<std::path::PathBuf>,
    /// `[admin] failed_logins_per_minute` (at least 1).
    pub failed_logins_per_minute: u32,
}

impl AdminSettings {
    /// Whether any credential can reach the control endpoints.
    pub fn has_credentials(&self) -> bool {
        !self.tokens.is_empty() || !self.who.is_empty()
    }
}

/// Validates `[admin]`; `has_auth`: whether `[auth]` is configured (for
/// `who`); `expand(key, value)` expands `${VAR}`.
pub(crate) fn validate(
    a: &AdminSection,
    has_auth: bool,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<AdminSettings, String> {
    let listen = a.listen.trim().parse::<SocketAddr>().map_err(|e| {
        format!(
            "key `admin.listen`: `{}` is not a socket address: {e}",
            a.listen
        )
    })?;
    let mut tokens: Vec<ApiKey> = Vec::with_capacity(a.tokens.len());
    for (i, t) in a.tokens.iter().enumerate() {
        let key = format!("admin.tokens[{i}]");
        if t.name.trim().is_empty() {
            return Err(format!("key `{key}.name`: must not be empty"));
        }
        if tokens.iter().any(|o| o.name == t.name) {
            return Err(format!("key `{key}.name`: `{}` is named twice", t.name));
        }
        tokens.push(ApiKey {
            name: t.name.clone(),
            sha256: crate::auth::key_digest(&key, &t.hash, expand)?,
            groups: Vec::new(),
            scopes: Vec::new(),
        });
    }
    if !a.who.is_empty() {
        crate::policy::check_who("admin", &a.who)?;
        if a.who.iter().any(|w| w == "*") {
            return Err(
                "key `admin.who`: `*` names every caller, anonymous ones included; name the \
                 operators (`group:platform`, `subject:…`, `key:…`) or use [[admin.tokens]]"
                    .into(),
            );
        }
        if !has_auth {
            return Err(
                "key `admin.who`: needs an [auth] section to authenticate callers (or use \
                 [[admin.tokens]], which need none)"
                    .into(),
            );
        }
    }
    if listen.ip().is_loopback()
        && tokens.is_empty()
        && a.who.is_empty()
        && a.allowed_hosts.iter().any(|h| h == "*")
    {
        // Without credentials a loopback listener's control endpoints are open
        // to whatever reaches loopback: the Host check is what keeps a
        // DNS-rebinding web page out.
        return Err(
            "key `admin.allowed_hosts`: `*` on a loopback listener without [[admin.tokens]]              or `who` would let any web page the operator opens reach /config and /reload              (DNS rebinding); name the hosts, or give the admin plane credentials"
                .into(),
        );
    }
    Ok(AdminSettings {
        listen,
        allowed_hosts: a.allowed_hosts.clone(),
        allowed_origins: a.allowed_origins.clone(),
        tokens,
        who: a.who.clone(),
        failed_logins_per_minute: match a.failed_logins_per_minute {
            0 => {
                return Err(
                    "key `admin.failed_logins_per_minute`: must be at least 1 (a 0 would refuse every admin credential)"
                        .into(),
                )
            }
            n => n,
        },
        token_file: match a.token_file.as_deref().map(str::trim) {
            None => None,
            Some("") => return Err("key `admin.token_file`: must not be empty".into()),
            Some(f) => Some(std::path::PathBuf::from(expand("admin.token_file", f)?)),
        },
    })
}

impl AdminSettings {
    /// Where the local admin token is kept: `token_file`, else in the user's
    /// state directory (`$XDG_STATE_HOME/manifold/admin-token`,
    /// `$HOME/.local/state/manifold/admin-token`), else `admin-token` beside
    /// the audit log (`audit_path`); `None` when none of these is known.
    /// Not the working directory first: it is often an agent's workspace.
    /// `env` reads an environment variable.
    pub fn token_file(
        &self,
        audit_path: Option<&std::path::Path>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Option<std::path::PathBuf> {
        use std::path::PathBuf;
        if let Some(f) = &self.token_file {
            return Some(f.clone());
        }
        let non_empty = |k: &str| env(k).filter(|v| !v.is_empty());
        let state = non_empty("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| non_empty("HOME").map(|h| PathBuf::from(h).join(".local/state")));
        if let Some(state) = state {
            return Some(state.join("manifold").join(ADMIN_TOKEN_FILE_NAME));
        }
        let dir = audit_path.and_then(std::path::Path::parent)?;
        let dir = if dir.as_os_str().is_empty() {
            std::path::Path::new(".")
        } else {
            dir
        };
        Some(dir.join(ADMIN_TOKEN_FILE_NAME))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(toml: &str) -> AdminSection {
        toml::from_str(toml).expect(toml)
    }

    fn check(toml: &str, has_auth: bool) -> Result<AdminSettings, String> {
        validate(&section(toml), has_auth, &|_, v| Ok(v.to_string()))
    }

    #[test]
    fn tokens_are_digests_named_once_and_who_needs_auth_and_never_everyone() {
        let hash = format!("sha256:{}", "ab".repeat(32));
        let ok = check(
            &format!(
                "listen = \"127.0.0.1:9090\"\nwho = [\"group:platform\"]\n\
                 [[tokens]]\nname = \"ops\"\nhash = \"{hash}\"\n"
            ),
            true,
        )
        .expect("valid");
        assert_eq!(ok.tokens[0].name, "ops");
        assert_eq!(ok.tokens[0].sha256, [0xab; 32]);
        assert!(ok.has_credentials());
        assert!(!check("listen = \"127.0.0.1:9090\"", false)
            .unwrap()
            .has_credentials());

        let rows = [
            (
                format!("listen = \"x\"\n[[tokens]]\nname = \"a\"\nhash = \"{hash}\"\n"),
                true,
                "admin.listen",
            ),
            (
                "listen = \"127.0.0.1:9090\"\n[[tokens]]\nname = \"a\"\nhash = \"s3cret\"\n".into(),
                true,
                "manifold auth hash-key",
            ),
            (
                format!(
                    "listen = \"127.0.0.1:9090\"\n[[tokens]]\nname = \"a\"\nhash = \"{hash}\"\n\
                     [[tokens]]\nname = \"a\"\nhash = \"{hash}\"\n"
                ),
                true,
                "named twice",
            ),
            (
                "listen = \"127.0.0.1:9090\"\nallowed_hosts = [\"*\"]".into(),
                false,
                "DNS rebinding",
            ),
            (
                "listen = \"127.0.0.1:9090\"\nfailed_logins_per_minute = 0".into(),
                false,
                "failed_logins_per_minute",
            ),
            (
                "listen = \"127.0.0.1:9090\"\nwho = [\"*\"]".into(),
                true,
                "anonymous",
            ),
            (
                "listen = \"127.0.0.1:9090\"\nwho = [\"team:x\"]".into(),
                true,
                "admin.who",
            ),
            (
                "listen = \"127.0.0.1:9090\"\nwho = [\"group:platform\"]".into(),
                false,
                "[auth]",
            ),
        ];
        for (toml, has_auth, want) in rows {
            let e = check(&toml, has_auth).expect_err(&toml);
            assert!(e.contains(want), "{toml}: {e}");
        }
    }
}

#[cfg(test)]
mod token_file_tests {
    use super::*;
    use std::path::{Path, PathBuf};

    #[test]
    fn the_token_file_is_configured_or_beside_the_audit_log_or_in_the_state_directory() {
        let a = validate(
            &toml::from_str("listen = \"127.0.0.1:9090\"").expect("toml"),
            false,
            &|_, v| Ok(v.to_string()),
        )
        .expect("valid");
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        type Row<'a> = (Option<&'a Path>, &'a [(&'a str, &'a str)], Option<PathBuf>);
        let rows: [Row; 6] = [
            (
                Some(Path::new("/var/log/manifold/audit.jsonl")),
                &[("HOME", "/home/u")],
                Some("/home/u/.local/state/manifold/admin-token".into()),
            ),
            (
                Some(Path::new("/var/log/manifold/audit.jsonl")),
                &[],
                Some("/var/log/manifold/admin-token".into()),
            ),
            (
                Some(Path::new("audit.jsonl")),
                &[],
                Some("./admin-token".into()),
            ),
            (
                None,
                &[("XDG_STATE_HOME", "/s"), ("HOME", "/home/u")],
                Some("/s/manifold/admin-token".into()),
            ),
            (
                None,
                &[("XDG_STATE_HOME", ""), ("HOME", "/home/u")],
                Some("/home/u/.local/state/manifold/admin-token".into()),
            ),
            (None, &[], None),
        ];
        for (audit, vars, want) in rows {
            assert_eq!(a.token_file(audit, env(vars)), want, "{audit:?} {vars:?}");
        }
        let set = validate(
            &toml::from_str("listen = \"127.0.0.1:9090\"\ntoken_file = \"/etc/m/t\"")
                .expect("toml"),
            false,
            &|_, v| Ok(v.to_string()),
        )
        .expect("valid");
        assert_eq!(
            set.token_file(Some(Path::new("/a/b")), env(&[])),
            Some("/etc/m/t".into())
        );
        let empty = validate(
            &toml::from_str("listen = \"127.0.0.1:9090\"\ntoken_file = \" \"").expect("toml"),
            false,
            &|_, v| Ok(v.to_string()),
        );
        assert!(empty.expect_err("empty").contains("admin.token_file"));
    }
}
