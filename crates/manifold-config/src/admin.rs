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
//! the rest is reloadable.
//!
//! Not here: checking a request (manifold-server `front::admin_auth`).

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
}

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
    })
}

/// What a reload cannot change in `[admin]`: the admin listener's address.
pub(crate) const FIXED_AT_START: &[crate::snapshot::Fixed] = &[crate::snapshot::Fixed {
    key: "admin.listen",
    changed: |a, b| a.admin.as_ref().map(|a| a.listen) != b.admin.as_ref().map(|a| a.listen),
}];

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
