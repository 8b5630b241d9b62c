//! Sealed session ids (`[cluster] session_key`): the session's negotiated
//! state — protocol version, client info, capabilities, owner, expiry — sealed
//! into its id with AES-256-GCM (manifold-foundation `aead`) under a key every
//! replica shares, so a session opened on one replica is accepted by any other
//! without sticky sessions or shared storage.
//!
//! Id: `s1.` + base64url(nonce ‖ ciphertext ‖ tag); the key is the SHA-256 of
//! a domain label and the configured secret; `previous_session_keys` still
//! open ids (rotation).
//!
//! Invariants: an id opens only if it is authentic under one of the keys and
//! unexpired (a tampered, foreign-key or expired id is simply unknown); the
//! plaintext is at most [`MAX_SEALED_BYTES`] — a session whose state is larger
//! gets a random local id (it then needs affinity) and a warning.
//!
//! Not here: the session table (`sessions`). What does not travel with the id
//! (server→client requests in flight, GET streams, subscriptions) stays on the
//! replica that holds it: see docs/deploy.md.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use manifold_foundation::aead::{Keys, OpenError};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::time::Duration;

use manifold_foundation::time::unix_now;

/// How a sealed id starts (random ids are hex, so never start like this).
pub const SEALED_PREFIX: &str = "s1.";
/// The largest sealed state, in bytes of JSON (its id is about 4/3 of it).
pub const MAX_SEALED_BYTES: usize = 2048;
/// How long a sealed id is accepted after it was minted.
pub const SEALED_SESSION_MAX_AGE: Duration = Duration::from_secs(24 * 3600);
/// The keys' own domain: the same secret reused elsewhere (as a
/// `request_state_key`, whose HMAC key is its plain SHA-256) gives a
/// different key here.
const KEY_DOMAIN: &str = "manifold sealed session id v1";

/// What travels in the id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct SessionFacts {
    #[serde(rename = "v")]
    pub protocol_version: String,
    #[serde(rename = "c")]
    pub client_info: Value,
    #[serde(rename = "k")]
    pub capabilities: Map<String, Value>,
    #[serde(rename = "o")]
    pub owner: Option<String>,
    /// Seconds since the epoch after which the id is refused.
    #[serde(rename = "e")]
    pub expires: u64,
    /// The endpoint (path) that opened it (absent: the default endpoint).
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
}

/// The keys.
pub(crate) struct Sealer {
    keys: Keys,
}

impl Sealer {
    pub(crate) fn new(settings: &manifold_config::cluster::ClusterSettings) -> Option<Sealer> {
        Some(Sealer {
            keys: Keys::new(
                KEY_DOMAIN,
                &settings.session_key,
                &settings.previous_session_keys,
            ),
        })
    }

    /// The id for a new session; `None` when its state is too large to seal
    /// (or no randomness for the nonce).
    pub(crate) fn seal(&self, facts: &SessionFacts) -> Option<String> {
        let data = serde_json::to_vec(facts).ok()?;
        if data.len() > MAX_SEALED_BYTES {
            return None;
        }
        let sealed = self.keys.seal(SEALED_PREFIX.as_bytes(), data).ok()?;
        Some(format!("{SEALED_PREFIX}{}", URL_SAFE_NO_PAD.encode(sealed)))
    }

    /// The state sealed in `id`, when it is authentic under a key we hold and
    /// unexpired.
    pub(crate) fn open(&self, id: &str) -> Result<SessionFacts, &'static str> {
        let body = id.strip_prefix(SEALED_PREFIX).ok_or("not a sealed id")?;
        let raw = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| "not a sealed id")?;
        let plain = self
            .keys
            .open(SEALED_PREFIX.as_bytes(), &raw)
            .map_err(|e| match e {
                OpenError::TooShort => "not a sealed id",
                OpenError::NotAuthentic => "not sealed with a key this gateway holds",
            })?;
        let facts: SessionFacts =
            serde_json::from_slice(&plain).map_err(|_| "not a session state")?;
        if unix_now() > facts.expires {
            return Err("expired");
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use manifold_config::cluster::ClusterSettings;
    use serde_json::json;

    fn sealer(current: &str, previous: &[&str]) -> Sealer {
        Sealer::new(&ClusterSettings {
            session_key: current.into(),
            previous_session_keys: previous.iter().map(|s| s.to_string()).collect(),
            redis: None,
            redis_ca: None,
            redis_channel: manifold_config::cluster::DEFAULT_REDIS_CHANNEL.into(),
        })
        .unwrap()
    }

    fn facts(expires: u64) -> SessionFacts {
        SessionFacts {
            protocol_version: "2025-11-25".into(),
            client_info: json!({"name": "c", "version": "1"}),
            capabilities: json!({"sampling": {}}).as_object().cloned().unwrap(),
            owner: Some("key:alice".into()),
            expires,
            endpoint: None,
        }
    }

    const A: &str = "key-a-0123456789abcdef0123456789abcdef";
    const B: &str = "key-b-0123456789abcdef0123456789abcdef";

    #[test]
    fn ids_open_under_current_and_previous_keys_only() {
        let f = facts(unix_now() + 60);
        let id = sealer(A, &[]).seal(&f).unwrap();
        assert!(id.starts_with(SEALED_PREFIX));
        assert!(
            id.bytes().all(|b| (0x21..=0x7e).contains(&b)),
            "visible ASCII"
        );
        assert_eq!(sealer(A, &[]).open(&id), Ok(f.clone()));
        assert_eq!(sealer(B, &[A]).open(&id), Ok(f.clone()), "rotation");
        assert!(sealer(B, &[]).open(&id).is_err(), "a foreign key");
        // Any flipped character: refused.
        let mut tampered = id.clone().into_bytes();
        let i = tampered.len() - 5;
        tampered[i] = if tampered[i] == b'A' { b'B' } else { b'A' };
        assert!(sealer(A, &[])
            .open(&String::from_utf8(tampered).unwrap())
            .is_err());
        assert_eq!(
            sealer(A, &[]).open(&sealer(A, &[]).seal(&facts(1)).unwrap()),
            Err("expired")
        );
        assert!(sealer(A, &[]).open("deadbeef").is_err());
        // Two ids for the same state differ (fresh nonces).
        assert_ne!(sealer(A, &[]).seal(&f), sealer(A, &[]).seal(&f));
    }

    #[test]
    fn oversized_state_is_not_sealed() {
        let mut f = facts(unix_now() + 60);
        f.client_info = json!({"name": "x".repeat(MAX_SEALED_BYTES)});
        assert!(sealer(A, &[]).seal(&f).is_none());
    }
}
