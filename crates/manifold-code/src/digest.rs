//! A script's name in the audit log: the SHA-256 of its text.

use sha2::Digest;

/// The SHA-256 of a script's text, hex.
pub fn digest(script: &str) -> String {
    let d = sha2::Sha256::digest(script.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_digest_is_the_sha256_of_the_text() {
        assert_eq!(
            super::digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
