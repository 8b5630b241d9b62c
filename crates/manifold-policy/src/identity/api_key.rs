//! API keys: a key is accepted when its SHA-256 equals a configured digest. The
//! comparison runs in constant time over every configured key, so timing tells
//! nothing about which key (or how much of one) matched.
//!
//! Invariants: keys are never stored, only digests; `hash_key` is the one way
//! a digest is written (`manifold auth hash-key` prints it).

use sha2::{Digest, Sha256};

use super::caller::{AuthMethod, Identity};
use manifold_config::ApiKey;

/// `sha256:<hex>` of `key`, as `[[auth.api_keys]] hash` takes it. Surrounding
/// white space (a newline from `echo`) is not part of the key.
pub fn hash_key(key: &str) -> String {
    let digest = Sha256::digest(key.trim().as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    format!("{}{hex}", manifold_config::auth::API_KEY_HASH_PREFIX)
}

/// The configured key whose digest `key` has, compared in constant time
/// against every one of `keys`: how `[[auth.api_keys]]` and `[[admin.tokens]]`
/// (the admin listener's control endpoints) are both checked.
pub fn find_key<'a>(keys: &'a [ApiKey], key: &str) -> Option<&'a ApiKey> {
    let digest: [u8; 32] = Sha256::digest(key.as_bytes()).into();
    let mut found = None;
    for k in keys {
        // No early exit: every key is compared.
        if manifold_foundation::ct::eq(&k.sha256, &digest) {
            found = Some(k);
        }
    }
    found
}

pub(super) struct Keys(Vec<ApiKey>);

impl Keys {
    pub(super) fn new(keys: &[ApiKey]) -> Keys {
        Keys(keys.to_vec())
    }

    /// The identity of `key`, if it is one of the configured keys.
    pub(super) fn check(&self, key: &str) -> Option<Identity> {
        find_key(&self.0, key).map(|k| Identity {
            subject: k.name.clone(),
            source: String::new(),
            groups: k.groups.clone(),
            scopes: k.scopes.clone(),
            method: AuthMethod::ApiKey,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_matches_its_own_digest_only() {
        let hash = hash_key("s3cret\n");
        assert!(
            hash.starts_with("sha256:") && hash.len() == 7 + 64,
            "{hash}"
        );
        let digest: [u8; 32] = Sha256::digest(b"s3cret").into();
        let keys = Keys::new(&[ApiKey {
            name: "ci-bot".into(),
            sha256: digest,
            groups: vec!["ci".into()],
            scopes: vec![],
        }]);
        let id = keys.check("s3cret").expect("accepted");
        assert_eq!(
            (id.display_name().as_str(), id.method),
            ("key:ci-bot", AuthMethod::ApiKey)
        );
        assert_eq!(id.groups, ["ci"]);
        assert!(keys.check("s3cre").is_none());
        assert!(keys.check("s3cret ").is_none());
        assert!(keys.check("").is_none());
    }
}
