//! Sealed session ids (`[cluster] session_key`): the session's negotiated
//! state — protocol version, client info, capabilities, owner, expiry — sealed
//! into its id with AES-256-GCM under a key every replica shares, so a session
//! opened on one replica is accepted by any other without sticky sessions or
//! shared storage.
//!
//! Id: `s1.` + base64url(nonce ‖ ciphertext ‖ tag); the key is the SHA-256 of
//! a domain label and the configured secret; `previous_session_keys` still open ids (rotation).
//!
//! Invariants: an id opens only if it is authentic under one of the keys and
//! unexpired (a tampered, foreign-key or expired id is simply unknown); the
//! plaintext is at most [`MAX_SEALED_BYTES`] — a session whose state is larger
//! gets a random local id (it then needs affinity) and a warning.
//!
//! Not here: the session table (`sessions`). What does not travel with the id
//! (server→client requests in flight, GET streams, subscriptions) stays on the
//! replica that holds it: see docs/deploy.md.

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::time::Duration;

use super::held_calls::now_secs;

/// How a sealed id starts (random ids are hex, so never start like this).
pub const SEALED_PREFIX: &str = "s1.";
/// The largest sealed state, in bytes of JSON (its id is about 4/3 of it).
pub const MAX_SEALED_BYTES: usize = 2048;
/// How long a sealed id is accepted after it was minted.
pub const SEALED_SESSION_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

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
}

/// The keys.
pub(crate) struct Sealer {
    current: LessSafeKey,
    previous: Vec<LessSafeKey>,
}

fn key(secret: &str) -> Option<LessSafeKey> {
    // Its own domain: the same secret reused elsewhere (as a
    // `request_state_key`, whose HMAC key is its plain SHA-256) gives a
    // different key here.
    let mut h = Sha256::new();
    h.update(b"manifold sealed session id v1\0");
    h.update(secret.as_bytes());
    let k: [u8; 32] = h.finalize().into();
    UnboundKey::new(&AES_256_GCM, &k).ok().map(LessSafeKey::new)
}

impl Sealer {
    pub(crate) fn new(settings: &manifold_config::cluster::ClusterSettings) -> Option<Sealer> {
        Some(Sealer {
            current: key(&settings.session_key)?,
            previous: settings
                .previous_session_keys
                .iter()
                .filter_map(|s| key(s))
                .collect(),
        })
    }

    /// The id for a new session; `None` when its state is too large to seal
    /// (or no randomness for the nonce).
    pub(crate) fn seal(&self, facts: &SessionFacts) -> Option<String> {
        let mut data = serde_json::to_vec(facts).ok()?;
        if data.len() > MAX_SEALED_BYTES {
            return None;
        }
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).ok()?;
        self.current
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(SEALED_PREFIX),
                &mut data,
            )
            .ok()?;
        let mut out = nonce.to_vec();
        out.extend_from_slice(&data);
        Some(format!("{SEALED_PREFIX}{}", URL_SAFE_NO_PAD.encode(out)))
    }

    /// The state sealed in `id`, when it is authentic under a key we hold and
    /// unexpired.
    pub(crate) fn open(&self, id: &str) -> Result<SessionFacts, &'static str> {
        let body = id.strip_prefix(SEALED_PREFIX).ok_or("not a sealed id")?;
        let raw = URL_SAFE_NO_PAD
            .decode(body)
            .map_err(|_| "not a sealed id")?;
        if raw.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err("not a sealed id");
        }
        let (nonce, sealed) = raw.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| "not a sealed id")?;
        for k in std::iter::once(&self.current).chain(&self.previous) {
            let mut buf = sealed.to_vec();
            let Ok(plain) = k.open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(SEALED_PREFIX),
                &mut buf,
            ) else {
                continue;
            };
            let facts: SessionFacts =
                serde_json::from_slice(plain).map_err(|_| "not a session state")?;
            if now_secs() > facts.expires {
                return Err("expired");
            }
            return Ok(facts);
        }
        Err("not sealed with a key this gateway holds")
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
        }
    }

    const A: &str = "key-a-0123456789abcdef0123456789abcdef";
    const B: &str = "key-b-0123456789abcdef0123456789abcdef";

    #[test]
    fn ids_open_under_current_and_previous_keys_only() {
        let f = facts(now_secs() + 60);
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
        let mut f = facts(now_secs() + 60);
        f.client_info = json!({"name": "x".repeat(MAX_SEALED_BYTES)});
        assert!(sealer(A, &[]).seal(&f).is_none());
    }
}
