//! Tool fingerprints: the SHA-256 of an item's definition (a tool, a prompt, a
//! resource template) in canonical JSON (RFC 8785, see [`canonical`]), as the
//! upstream sent it, and a readable [`diff`] between two definitions. What
//! `[integrity]` pins, compares and shows.
//!
//! What is hashed: every member of the definition — `name`, `title`,
//! `description`, `inputSchema`, `outputSchema`, `annotations`, `icons`,
//! `arguments`, `uriTemplate`, `mimeType`, and any member a newer revision
//! adds — except the item's own top-level `_meta` ([`EXCLUDED_MEMBERS`]).
//! Why `_meta` is left out: the specification reserves it for metadata that
//! implementations exchange, not for what a host shows a model (hosts give the
//! model the name, title, description and schemas), and servers put volatile
//! values there (build ids, timestamps, vendor keys) that would quarantine an
//! unchanged tool at every restart; a `_meta` nested inside a schema is part
//! of the schema and is hashed.
//!
//! Invariants: the fingerprint does not depend on member order, white space,
//! escapes or number spelling; any changed string, key, number or structure
//! outside the top-level `_meta` changes it (property tests in `proptests`);
//! pure — no I/O, no clock.
//!
//! Not here: the store of approved fingerprints and the quarantine decisions
//! (manifold-integrity), overrides (the fingerprint is always of what the
//! upstream sent, never of what an override made of it).

mod canonical;
mod diff;
#[cfg(test)]
mod proptests;

pub use canonical::{canonical_json, EXCLUDED_MEMBERS};
pub use diff::{diff, printable, Change, ChangeKind, DefinitionDiff, TextChange, MAX_DIFF_CHANGES};

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// How a fingerprint is written: `sha256:` and 64 lower-case hex digits.
pub const FINGERPRINT_PREFIX: &str = "sha256:";

/// The SHA-256 of a definition's canonical form.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fingerprint(pub [u8; 32]);

impl Fingerprint {
    /// The fingerprint of a definition as the upstream sent it.
    pub fn of(definition: &Map<String, Value>) -> Fingerprint {
        Fingerprint(Sha256::digest(canonical_definition(definition).as_bytes()).into())
    }

    /// The first `n` hex digits (for tables), without the prefix.
    pub fn short(&self, n: usize) -> String {
        let mut h = hex::encode(self.0);
        h.truncate(n);
        h
    }
}

/// The canonical text that [`Fingerprint::of`] hashes: the definition without
/// [`EXCLUDED_MEMBERS`].
pub fn canonical_definition(definition: &Map<String, Value>) -> String {
    canonical::canonical_object_without(definition, EXCLUDED_MEMBERS)
}

impl std::fmt::Display for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{FINGERPRINT_PREFIX}{}", hex::encode(self.0))
    }
}

impl std::fmt::Debug for Fingerprint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Fingerprint({self})")
    }
}

/// A fingerprint that is not `sha256:` and 64 hex digits.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a fingerprint (sha256: and 64 hex digits)")]
pub struct BadFingerprint(pub String);

impl std::str::FromStr for Fingerprint {
    type Err = BadFingerprint;
    fn from_str(s: &str) -> Result<Fingerprint, BadFingerprint> {
        let bad = || BadFingerprint(s.chars().take(80).collect());
        let hex_part = s.strip_prefix(FINGERPRINT_PREFIX).ok_or_else(bad)?;
        if hex_part.len() != 64 || hex_part.bytes().any(|b| b.is_ascii_uppercase()) {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut out).map_err(|_| bad())?;
        Ok(Fingerprint(out))
    }
}

impl serde::Serialize for Fingerprint {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Fingerprint {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Fingerprint, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    #[test]
    fn the_digest_is_sha256_of_the_canonical_text_without_meta() {
        let def = obj(json!({"name": "echo", "_meta": {"build": 7}, "description": "Echo"}));
        assert_eq!(
            canonical_definition(&def),
            r#"{"description":"Echo","name":"echo"}"#
        );
        let fp = Fingerprint::of(&def);
        assert_eq!(
            fp.to_string(),
            format!(
                "sha256:{}",
                hex::encode(Sha256::digest(br#"{"description":"Echo","name":"echo"}"#))
            )
        );
        // `_meta` changes leave it alone; a nested `_meta` is part of the schema.
        let mut other = def.clone();
        other.insert("_meta".into(), json!({"build": 8}));
        assert_eq!(Fingerprint::of(&other), fp);
        other.insert("inputSchema".into(), json!({"_meta": {"x": 1}}));
        let with_schema = Fingerprint::of(&other);
        other.insert("inputSchema".into(), json!({"_meta": {"x": 2}}));
        assert_ne!(Fingerprint::of(&other), with_schema);
    }

    #[test]
    fn fingerprints_round_trip_as_text_and_bad_ones_are_named() {
        let fp = Fingerprint::of(&obj(json!({"name": "a"})));
        let text = fp.to_string();
        assert_eq!(text.parse::<Fingerprint>(), Ok(fp));
        assert_eq!(fp.short(12).len(), 12);
        assert!(text[7..].starts_with(&fp.short(12)));
        let json = serde_json::to_string(&fp).expect("serialize");
        assert_eq!(
            serde_json::from_str::<Fingerprint>(&json).expect("parse"),
            fp
        );
        for bad in [
            "",
            "sha256:",
            "md5:00",
            &text[..text.len() - 1],
            &text.to_uppercase(),
            &format!("{text}0"),
            &text.replace(&text[7..8], "g"),
        ] {
            assert!(bad.parse::<Fingerprint>().is_err(), "{bad}");
        }
    }
}
