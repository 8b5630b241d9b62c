//! Equality of secrets in constant time (`subtle`): tokens, MACs, key
//! digests. The one comparison every crate uses where a timing difference
//! could tell an attacker how much of a guess was right.
//!
//! Invariants: the time taken depends on the lengths only, never on where
//! the bytes differ; different lengths are unequal.
//!
//! Not here: what is compared (each caller's own secret).

use subtle::ConstantTimeEq;

/// Whether `a` and `b` are the same bytes.
pub fn eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && bool::from(a.ct_eq(b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn equal_only_when_every_byte_and_the_length_are() {
        assert!(super::eq(b"token", b"token"));
        assert!(super::eq(b"", b""));
        assert!(!super::eq(b"token", b"tokex"));
        assert!(!super::eq(b"token", b"token!"));
        assert!(!super::eq(b"token", b""));
    }
}
