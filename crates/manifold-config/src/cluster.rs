//! `[cluster]`: what replicas share so that a session opened on one is
//! accepted by every other — the key sealing session ids. The file model and
//! its validated form; sealing lives in manifold-server.
//!
//! Invariants: a validated key (current or previous) is at least
//! [`MIN_SESSION_KEY_LEN`] bytes after `${VAR}` expansion; `redis` is refused
//! with a clear message until cross-replica relays exist.
//!
//! Not here: sealing and opening ids (manifold-server `state::sealed`).

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
    /// Cross-replica relays through Redis: not supported yet (see
    /// docs/deploy.md for what needs session affinity without it).
    #[serde(default)]
    pub redis: Option<String>,
}

/// The validated `[cluster]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSettings {
    pub session_key: String,
    pub previous_session_keys: Vec<String>,
}

pub(crate) fn validate(
    c: &ClusterSection,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<ClusterSettings, String> {
    if c.redis.is_some() {
        return Err("key `cluster.redis`: cross-replica relays through Redis are not supported in this version; \
                    remove the key and give the relays listed in docs/deploy.md session affinity"
            .into());
    }
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
    })
}
