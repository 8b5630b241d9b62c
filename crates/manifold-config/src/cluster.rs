//! `[cluster]`: what replicas share so that a session opened on one is
//! accepted by every other — the key sealing session ids — and, optionally,
//! the Redis server that carries what must reach the replica holding a call.
//! The file model and its validated form; sealing lives in manifold-server,
//! the Redis bus in manifold-cluster.
//!
//! Invariants: a validated key (current or previous) is at least
//! [`MIN_SESSION_KEY_LEN`] bytes after `${VAR}` expansion; a validated `redis`
//! is a `redis://` or `rediss://` URL (`${VAR}` expands, so a user and
//! password can come from a Secret) with a host and without `#insecure`; a
//! `redis_ca` comes only with `rediss://` and is a readable file holding a
//! PEM certificate. Neither a key nor the Redis password is a placeholder
//! shipped in `deploy/` ([`PLACEHOLDER_MARK`]). There is no bus without a `session_key`: the section
//! requires one, and the bus's messages are sealed with a key derived from it.
//!
//! Not here: sealing and opening ids (manifold-server `state::sealed`),
//! connecting (manifold-cluster).

use serde::{Deserialize, Serialize};

/// The shortest `session_key` accepted.
pub const MIN_SESSION_KEY_LEN: usize = 32;

/// What the placeholders shipped in `deploy/` (the replicas overlay, the
/// chart's `values-replicas.yaml`) hold: a key or password containing it is
/// public, so a gateway refuses to start with one rather than sign the bus
/// with a key everybody has.
pub const PLACEHOLDER_MARK: &str = "replace-me";

fn placeholder(v: &str) -> bool {
    v.to_ascii_lowercase().contains(PLACEHOLDER_MARK)
}

/// `[cluster]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ClusterSection {
    /// Seals session ids; shared by every replica (`${VAR}` expands).
    pub session_key: String,
    /// Keys still accepted when opening an id (key rotation).
    #[serde(default)]
    pub previous_session_keys: Vec<String>,
    /// Cross-replica relays and shared rate limits through this Redis server
    /// (`redis://[user:password@]host[:port][/db]`, or `rediss://` for TLS);
    /// without it, the relays listed in docs/deploy.md need session affinity.
    #[serde(default)]
    pub redis: Option<String>,
    /// With `rediss://`: the PEM file of the CA the server's certificate must
    /// chain to (`${VAR}` expands); without it, the web's root certificates.
    #[serde(default)]
    pub redis_ca: Option<String>,
    /// The pub/sub channel (and key prefix) replicas of one deployment share
    /// on that server; deployments sharing one Redis need distinct names.
    #[serde(default = "default_channel")]
    pub redis_channel: String,
}

/// The default `redis_channel`.
pub const DEFAULT_REDIS_CHANNEL: &str = "manifold";

fn default_channel() -> String {
    DEFAULT_REDIS_CHANNEL.to_string()
}

/// The validated `[cluster]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    pub session_key: String,
    pub previous_session_keys: Vec<String>,
    /// The Redis URL, expanded and checked.
    pub redis: Option<String>,
    /// The CA file for a `rediss://` server's certificate.
    pub redis_ca: Option<std::path::PathBuf>,
    pub redis_channel: String,
}

pub(crate) fn validate(
    c: &ClusterSection,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<ClusterSettings, String> {
    let key = |field: &str, v: &str| -> Result<String, String> {
        let v = expand(field, v)?;
        if placeholder(&v) {
            return Err(format!(
                "key `{field}`: still the placeholder shipped in deploy/ (it holds `{PLACEHOLDER_MARK}`), \
                 which anyone can read; put the output of `openssl rand -hex 32` in the Secret"
            ));
        }
        if v.len() < MIN_SESSION_KEY_LEN {
            return Err(format!(
                "key `{field}`: {} bytes; at least {MIN_SESSION_KEY_LEN} are needed (e.g. `openssl rand -hex 32`)",
                v.len()
            ));
        }
        Ok(v)
    };
    let redis = c
        .redis
        .as_deref()
        .map(|r| redis_url(&expand("cluster.redis", r)?))
        .transpose()?;
    let redis_ca = match (&c.redis_ca, &redis) {
        (None, _) => None,
        (Some(ca), Some(url)) if url.starts_with("rediss://") => {
            Some(ca_file(&expand("cluster.redis_ca", ca)?)?)
        }
        (Some(_), _) => {
            return Err(
                "key `cluster.redis_ca`: only means something with a `rediss://` URL in `cluster.redis`"
                    .into(),
            )
        }
    };
    Ok(ClusterSettings {
        session_key: key("cluster.session_key", &c.session_key)?,
        previous_session_keys: c
            .previous_session_keys
            .iter()
            .enumerate()
            .map(|(i, k)| key(&format!("cluster.previous_session_keys[{i}]"), k))
            .collect::<Result<_, _>>()?,
        redis,
        redis_ca,
        redis_channel: channel(&c.redis_channel)?,
    })
}

/// A `redis://` or `rediss://` URL with a host; unix sockets are named as
/// unsupported rather than failing at the first connection. Messages never
/// quote the URL: it may hold a password.
fn redis_url(v: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("key `cluster.redis`: {why}"));
    let Some(rest) = v
        .strip_prefix("redis://")
        .or_else(|| v.strip_prefix("rediss://"))
    else {
        return bad("expected a `redis://host:port` or `rediss://host:port` URL");
    };
    if v.contains('#') {
        return bad("a `#` fragment (such as `#insecure`, which turns off the certificate check) is not accepted; give the server's CA with `redis_ca`, and percent-encode a `#` in a password as %23");
    }
    if rest
        .rsplit_once('@')
        .is_some_and(|(userinfo, _)| placeholder(userinfo))
    {
        return bad(&format!(
            "its password is still the placeholder shipped in deploy/ (it holds `{PLACEHOLDER_MARK}`), \
             which anyone can read; put the output of `openssl rand -hex 32` in the Secret"
        ));
    }
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    if host.is_empty() || host.starts_with(['/', ':']) {
        return bad("the URL names no host");
    }
    Ok(v.to_string())
}

/// A readable file holding at least one PEM certificate.
fn ca_file(v: &str) -> Result<std::path::PathBuf, String> {
    let p = std::path::PathBuf::from(v.trim());
    let text = std::fs::read_to_string(&p)
        .map_err(|e| format!("key `cluster.redis_ca`: `{}`: {e}", p.display()))?;
    if !text.contains("-----BEGIN CERTIFICATE-----") {
        return Err(format!(
            "key `cluster.redis_ca`: `{}` holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
            p.display()
        ));
    }
    Ok(p)
}

fn channel(v: &str) -> Result<String, String> {
    if v.is_empty()
        || v.len() > 64
        || !v
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
    {
        return Err(format!(
            "key `cluster.redis_channel`: {v:?}: 1 to 64 characters from letters, digits and `-_.:`"
        ));
    }
    Ok(v.to_string())
}

#[cfg(test)]
mod tests {
    use figment::providers::Env;
    use std::path::Path;

    const KEY: &str = "0123456789abcdef0123456789abcdef";

    fn load(cluster: &str, vars: &[(&str, &str)]) -> Result<crate::GatewayConfig, String> {
        let text = format!("[cluster]\n{cluster}\n");
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        crate::load_str(
            Path::new("gateway.toml"),
            &text,
            move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()),
            Env::raw().only(&[] as &[&str]),
        )
        .map_err(|e| e.to_string())
    }

    fn settings(cfg: &crate::GatewayConfig) -> &super::ClusterSettings {
        cfg.cluster.as_ref().expect("[cluster]")
    }

    #[test]
    fn redis_credentials_come_from_the_environment_and_stay_out_of_config() {
        let cfg = load(
            "session_key = \"${K}\"\nredis = \"redis://manifold:${REDIS_PASSWORD}@redis:6379/0\"",
            &[("K", KEY), ("REDIS_PASSWORD", "s3cr3t-pa55")],
        )
        .expect("loads");
        assert_eq!(
            settings(&cfg).redis.as_deref(),
            Some("redis://manifold:s3cr3t-pa55@redis:6379/0")
        );
        let shown = cfg.effective.to_string();
        assert!(!shown.contains("s3cr3t"), "{shown}");
        // A literal password is redacted too.
        let cfg = load(
            &format!("session_key = \"{KEY}\"\nredis = \"redis://:literal-pw@redis\""),
            &[],
        )
        .expect("loads");
        assert!(!cfg.effective.to_string().contains("literal-pw"));
    }

    #[test]
    fn the_placeholders_shipped_in_deploy_are_refused() {
        let shipped = "replace-me-with-openssl-rand-hex-32-output-0123456789";
        let e = load("session_key = \"${K}\"", &[("K", shipped)]).expect_err("public key");
        assert!(e.contains("placeholder") && !e.contains(shipped), "{e}");
        let e = load(
            &format!("session_key = \"{KEY}\"\nprevious_session_keys = [\"${{K}}\"]"),
            &[("K", &shipped.to_uppercase())],
        )
        .expect_err("public previous key");
        assert!(e.contains("previous_session_keys[0]"), "{e}");
        let e = load(
            &format!("session_key = \"{KEY}\"\nredis = \"redis://:${{P}}@redis:6379\""),
            &[("P", "replace-me-with-openssl-rand-hex-32-output-abcdef")],
        )
        .expect_err("public Redis password");
        assert!(e.contains("placeholder") && !e.contains("abcdef"), "{e}");
    }

    #[test]
    fn the_bus_needs_the_session_key() {
        let e = load("redis = \"redis://redis:6379\"", &[]).expect_err("refused");
        assert!(e.contains("session_key"), "{e}");
    }

    #[test]
    fn tls_urls_load_with_or_without_a_ca_and_insecure_is_refused() {
        let dir = std::env::temp_dir().join(format!("mf-redis-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let ca = dir.join("ca.pem");
        std::fs::write(
            &ca,
            "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n",
        )
        .expect("write");
        let not_pem = dir.join("not.pem");
        std::fs::write(&not_pem, "hello").expect("write");
        let base = format!("session_key = \"{KEY}\"\n");
        let cfg = load(&format!("{base}redis = \"rediss://redis:6380\""), &[]).expect("loads");
        assert_eq!(settings(&cfg).redis_ca, None);
        let cfg = load(
            &format!("{base}redis = \"rediss://redis:6380\"\nredis_ca = \"${{CA}}\""),
            &[("CA", ca.to_str().expect("utf-8"))],
        )
        .expect("loads");
        assert_eq!(settings(&cfg).redis_ca.as_deref(), Some(ca.as_path()));
        let refused = [
            (
                format!("{base}redis = \"redis://redis\"\nredis_ca = {:?}", ca),
                "only means something with a `rediss://`",
            ),
            (
                format!("{base}redis_ca = {:?}", ca),
                "only means something with a `rediss://`",
            ),
            (
                format!("{base}redis = \"rediss://redis\"\nredis_ca = {:?}", not_pem),
                "holds no PEM certificate",
            ),
            (
                format!("{base}redis = \"rediss://redis\"\nredis_ca = \"/nonexistent/ca.pem\""),
                "cluster.redis_ca",
            ),
            (
                format!("{base}redis = \"rediss://:pw@redis/#insecure\""),
                "certificate check",
            ),
            (
                format!("{base}redis = \"http://redis\""),
                "expected a `redis://host:port`",
            ),
        ];
        for (text, want) in refused {
            let e = load(&text, &[]).expect_err(&text);
            assert!(e.contains(want), "{text}: {e}");
            assert!(!e.contains(":pw@"), "the URL was quoted: {e}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
