//! AES-256-GCM seal/open under keys derived from an operator's secret in a
//! domain of their own: [`Keys`]. Sealed bytes are `nonce ‖ ciphertext ‖ tag`,
//! the nonce fresh from the OS for every seal.
//!
//! Invariants: a key is the SHA-256 of a domain label and the secret, so one
//! secret reused for two purposes gives two unrelated keys; [`Keys::open`]
//! tries the current key, then the previous ones (rotation), and says only
//! that nothing opened, never which part was wrong; nothing here logs.
//!
//! Not here: what is sealed and how it is framed (sealed session ids in
//! manifold-server, the token store in manifold-credentials).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};
use sha2::{Digest, Sha256};

/// Why sealed bytes did not open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenError {
    /// Shorter than a nonce and a tag.
    TooShort,
    /// No key this process holds authenticates them (tampered, foreign key,
    /// other associated data).
    NotAuthentic,
}

/// Why bytes could not be sealed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealError {
    /// The OS gave no randomness for the nonce.
    NoRandomness,
    /// The cipher refused the input (over its size limit).
    Refused,
}

/// The current key and the previous ones that still open.
pub struct Keys {
    current: LessSafeKey,
    previous: Vec<LessSafeKey>,
}

impl std::fmt::Debug for Keys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keys")
            .field("previous", &self.previous.len())
            .finish_non_exhaustive()
    }
}

/// The AES-256 key of `secret` in `domain`.
fn derive(domain: &str, secret: &str) -> LessSafeKey {
    let mut h = Sha256::new();
    h.update(domain.as_bytes());
    h.update(b"\0");
    h.update(secret.as_bytes());
    let k: [u8; 32] = h.finalize().into();
    // A 32-byte key is always an AES-256 key.
    match UnboundKey::new(&AES_256_GCM, &k) {
        Ok(k) => LessSafeKey::new(k),
        Err(_) => unreachable!("a 32-byte AES-256 key is refused"),
    }
}

impl Keys {
    /// Keys for `domain` (a label naming the purpose and its version, e.g.
    /// `manifold token store v1`): `current` seals and opens, each of
    /// `previous` only opens.
    pub fn new<S: AsRef<str>>(domain: &str, current: &str, previous: &[S]) -> Keys {
        Keys {
            current: derive(domain, current),
            previous: previous
                .iter()
                .map(|s| derive(domain, s.as_ref()))
                .collect(),
        }
    }

    /// `plaintext` sealed under the current key, bound to `aad`.
    pub fn seal(&self, aad: &[u8], mut plaintext: Vec<u8>) -> Result<Vec<u8>, SealError> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(|_| SealError::NoRandomness)?;
        self.current
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut plaintext,
            )
            .map_err(|_| SealError::Refused)?;
        let mut out = Vec::with_capacity(NONCE_LEN + plaintext.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&plaintext);
        Ok(out)
    }

    /// The plaintext of `sealed`, if a key this process holds authenticates it
    /// with `aad`.
    pub fn open(&self, aad: &[u8], sealed: &[u8]) -> Result<Vec<u8>, OpenError> {
        if sealed.len() < NONCE_LEN + AES_256_GCM.tag_len() {
            return Err(OpenError::TooShort);
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| OpenError::TooShort)?;
        for k in std::iter::once(&self.current).chain(&self.previous) {
            let mut buf = body.to_vec();
            if let Ok(plain) = k.open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut buf,
            ) {
                let n = plain.len();
                buf.truncate(n);
                return Ok(buf);
            }
        }
        Err(OpenError::NotAuthentic)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_bytes_open_under_current_and_previous_keys_only() {
        let keys = Keys::new::<&str>("test v1", "a", &[]);
        let sealed = keys.seal(b"aad", b"hello".to_vec()).unwrap();
        assert_eq!(keys.open(b"aad", &sealed).unwrap(), b"hello");
        assert_eq!(
            Keys::new("test v1", "b", &["a"])
                .open(b"aad", &sealed)
                .unwrap(),
            b"hello",
            "rotation"
        );
        let no = |k: &Keys, aad: &[u8], s: &[u8]| k.open(aad, s).err();
        assert_eq!(
            no(&Keys::new::<&str>("test v1", "b", &[]), b"aad", &sealed),
            Some(OpenError::NotAuthentic)
        );
        assert_eq!(
            no(&keys, b"other", &sealed),
            Some(OpenError::NotAuthentic),
            "aad bound"
        );
        assert_eq!(
            no(&Keys::new::<&str>("other v1", "a", &[]), b"aad", &sealed),
            Some(OpenError::NotAuthentic),
            "one secret, two domains, two keys"
        );
        let mut tampered = sealed.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(no(&keys, b"aad", &tampered), Some(OpenError::NotAuthentic));
        assert_eq!(no(&keys, b"aad", &sealed[..10]), Some(OpenError::TooShort));
        assert_ne!(
            keys.seal(b"aad", b"x".to_vec()),
            keys.seal(b"aad", b"x".to_vec()),
            "fresh nonces"
        );
    }
}
