//! URI syntax several crates check: the scheme of RFC 3986 §3.1.
//!
//! Invariants: pure, ASCII only.
//!
//! Not here: parsing URLs (`url`), what a scheme means to the catalogue
//! (manifold-catalog `namespace`).

/// Whether `s` is a URI scheme: a letter, then letters, digits, `+`, `-` or `.`.
pub fn is_scheme(s: &str) -> bool {
    s.bytes().next().is_some_and(|b| b.is_ascii_alphabetic())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'))
}

#[cfg(test)]
mod tests {
    #[test]
    fn schemes_start_with_a_letter_and_hold_rfc_3986_characters() {
        for (s, ok) in [
            ("ui", true),
            ("skill", true),
            ("a+b-c.d1", true),
            ("", false),
            ("1ui", false),
            ("u_i", false),
            ("ui:", false),
            ("é", false),
        ] {
            assert_eq!(super::is_scheme(s), ok, "{s:?}");
        }
    }
}
