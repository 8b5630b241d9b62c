//! `[cluster]`: what replicas share so that a session opened on one is
//! accepted by every other — the key sealing session ids — and, optionally,
//! the Redis server that carries what must reach the replica holding a call.
//! The file model and its validated form; sealing lives in manifold-server,
//! the Redis bus in manifold-cluster.
//!
//! Invariants: a validated key (current or previous) is at least
//! [`MIN_SESSION_KEY_LEN`] bytes after `${VAR}` expansion; a validated `redis`
//! is a `redis://` URL (`${VAR}` expands, so a password can come from a
//! Secret) with a host.
//!
//! Not here: sealing and opening ids (manifold-server `state::sealed`),
//! connecting (manifold-cluster).

use serde::{Deserialize, Serialize};

/// The shortest `session_key` accepted.
pub const MIN_SESSION_KEY_LEN: usize = 32;

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
    /// (`redis://[:password@]host[:port][/db]`); without it, the relays listed
    /// in docs/deploy.md need session affinity.
    #[serde(default)]
    pub redis: Option<String>,
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
    pub redis_channel: String,
}

pub(crate) fn validate(
    c: &ClusterSection,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<ClusterSettings, String> {
    let key = |field: &str, v: &str| -> Result<String, String> {
        let v = expand(field, v)?;
        if v.len() < MIN_SESSION_KEY_LEN {
            return Err(format!(
                "key `{field}`: {} bytes; at least {MIN_SESSION_KEY_LEN} are needed (e.g. `openssl rand -hex 32`)",
                v.len()
            ));
        }
        Ok(v)
    };
    Ok(ClusterSettings {
        session_key: key("cluster.session_key", &c.session_key)?,
        previous_session_keys: c
            .previous_session_keys
            .iter()
            .enumerate()
            .map(|(i, k)| key(&format!("cluster.previous_session_keys[{i}]"), k))
            .collect::<Result<_, _>>()?,
        redis: c
            .redis
            .as_deref()
            .map(|r| redis_url(&expand("cluster.redis", r)?))
            .transpose()?,
        redis_channel: channel(&c.redis_channel)?,
    })
}

/// A `redis://` URL with a host; `rediss://` (TLS) and unix sockets are named
/// as unsupported rather than failing at the first connection.
fn redis_url(v: &str) -> Result<String, String> {
    let bad = |why: &str| Err(format!("key `cluster.redis`: {why}"));
    if v.starts_with("rediss://") {
        return bad("TLS to Redis (`rediss://`) is not supported in this version; use `redis://` on a private network or a TLS sidecar");
    }
    let Some(rest) = v.strip_prefix("redis://") else {
        return bad("expected a `redis://host:port` URL");
    };
    let host = rest.rsplit_once('@').map_or(rest, |(_, h)| h);
    if host.is_empty() || host.starts_with(['/', ':']) {
        return bad("the URL names no host");
    }
    Ok(v.to_string())
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
