//! HMAC-SHA256 (aws-lc-rs, the one crypto library Manifold links) over a
//! message given in parts, and its constant-time check: the MACs of held
//! calls' states and of the console's cookies and CSRF tokens.
//!
//! Invariants: the parts are MACed as their concatenation (a caller that
//! needs boundaries writes them, as the console does with length prefixes);
//! a check never exits early on the first differing byte.
//!
//! Not here: keys (each caller derives and keeps its own), the cluster bus's
//! HKDF (it writes its own, over the same library).

use aws_lc_rs::hmac;

/// HMAC-SHA256 of the concatenation of `parts` under `key`.
pub fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut ctx = hmac::Context::with_key(&hmac::Key::new(hmac::HMAC_SHA256, key));
    for p in parts {
        ctx.update(p);
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(ctx.sign().as_ref());
    out
}

/// Whether `tag` is the HMAC-SHA256 of `parts` under `key`, in time that
/// does not depend on where they differ.
pub fn verify_hmac_sha256(key: &[u8], parts: &[&[u8]], tag: &[u8]) -> bool {
    crate::ct::eq(&hmac_sha256(key, parts), tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_4231_test_case_2_in_parts() {
        let tag = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        assert_eq!(
            tag,
            *b"\x5b\xdc\xc1\x46\xbf\x60\x75\x4e\x6a\x04\x24\x26\x08\x95\x75\xc7\x5a\x00\x3f\x08\x9d\x27\x39\x83\x9d\xec\x58\xb9\x64\xec\x38\x43"
        );
        assert!(verify_hmac_sha256(
            b"Jefe",
            &[b"what do ya want for nothing?"],
            &tag
        ));
        let mut other = tag;
        other[31] ^= 1;
        assert!(!verify_hmac_sha256(
            b"Jefe",
            &[b"what do ya want for nothing?"],
            &other
        ));
        assert!(!verify_hmac_sha256(
            b"Jefe",
            &[b"what do ya want for nothing?"],
            &tag[..31]
        ));
    }
}
