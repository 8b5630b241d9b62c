//! Exposed names: `<prefix><separator><original>`, guaranteed to match
//! `^[A-Za-z0-9_-]{1,max_length}$` (what OpenAI and Anthropic accept for tool names).
//!
//! A name that would break the rule is mapped deterministically: every disallowed
//! character becomes `_`; a name still too long is cut to a readable stem followed by
//! `_` and 8 hex digits of SHA-256 over the upstream and the original name. The same
//! inputs give the same exposed name whatever order upstreams start in. Routing never
//! parses exposed names back; the catalog keeps a table.

use sha2::{Digest, Sha256};

/// Length of the hash suffix in hex digits.
pub const HASH_HEX_LEN: usize = 8;

/// Why an exposed name differs from `<prefix><sep><original>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NameChange {
    /// Characters outside `[A-Za-z0-9_-]` were replaced with `_`.
    CharactersReplaced,
    /// The name was longer than the limit and was shortened with a hash suffix.
    Shortened,
    /// Both of the above.
    ReplacedAndShortened,
    /// It collided with another exposed name and got a hash suffix to stay distinct.
    Disambiguated,
}

impl NameChange {
    pub fn describe(&self) -> &'static str {
        match self {
            NameChange::CharactersReplaced => "characters outside [A-Za-z0-9_-] replaced",
            NameChange::Shortened => "shortened to the length limit with a hash suffix",
            NameChange::ReplacedAndShortened => {
                "characters replaced and shortened with a hash suffix"
            }
            NameChange::Disambiguated => "hash suffix added to resolve a collision",
        }
    }
}

pub fn is_valid_exposed(name: &str, max_length: usize) -> bool {
    !name.is_empty()
        && name.len() <= max_length
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// 8 hex digits of SHA-256 over (upstream, original): stable across runs and builds.
pub fn short_hash(upstream: &str, original: &str) -> String {
    let mut h = Sha256::new();
    h.update(upstream.as_bytes());
    h.update([0u8]);
    h.update(original.as_bytes());
    let digest = h.finalize();
    hex::encode(&digest[..HASH_HEX_LEN / 2])
}

fn sanitize(raw: &str) -> String {
    let s: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "_".to_string()
    } else {
        s
    }
}

/// `stem` cut so that `stem + "_" + hash` fits in `max_length` (all ASCII here).
fn with_hash(stem: &str, hash: &str, max_length: usize) -> String {
    let keep = max_length.saturating_sub(HASH_HEX_LEN + 1);
    let cut = &stem[..stem.len().min(keep)];
    format!("{cut}_{hash}")
}

/// The exposed name for `original` from `upstream`, with `prefix` (`None` in
/// pass-through mode), and why it differs from the plain form, if it does.
pub fn expose(
    upstream: &str,
    prefix: Option<&str>,
    separator: &str,
    original: &str,
    max_length: usize,
) -> (String, Option<NameChange>) {
    let raw = match prefix {
        Some(p) => format!("{p}{separator}{original}"),
        None => original.to_string(),
    };
    if is_valid_exposed(&raw, max_length) {
        return (raw, None);
    }
    let clean = sanitize(&raw);
    let replaced = clean != raw;
    if clean.len() <= max_length {
        return (clean, Some(NameChange::CharactersReplaced));
    }
    let change = if replaced {
        NameChange::ReplacedAndShortened
    } else {
        NameChange::Shortened
    };
    (
        with_hash(&clean, &short_hash(upstream, original), max_length),
        Some(change),
    )
}

/// The second-choice name for an entry that lost a collision: the plain mapping
/// with a hash suffix, which differs for every (upstream, original) pair.
pub fn disambiguate(exposed: &str, upstream: &str, original: &str, max_length: usize) -> String {
    // A different hash input than `expose` uses, so a name that already ends in the
    // plain hash still gets a different suffix.
    let hash = short_hash(upstream, &format!("{original}\0collision"));
    if exposed.len() + 1 + HASH_HEX_LEN <= max_length {
        format!("{exposed}_{hash}")
    } else {
        with_hash(exposed, &hash, max_length)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mapping_table() {
        let long = "a".repeat(70);
        type Case<'a> = (Option<&'a str>, &'a str, usize, &'a str, Option<NameChange>);
        let cases: Vec<Case> = vec![
            (Some("time"), "get_time", 64, "time__get_time", None),
            (None, "get_time", 64, "get_time", None),
            (
                Some("gh"),
                "repo.list",
                64,
                "gh__repo_list",
                Some(NameChange::CharactersReplaced),
            ),
            (
                Some("gh"),
                "a/b c",
                64,
                "gh__a_b_c",
                Some(NameChange::CharactersReplaced),
            ),
            (None, "ünï", 64, "_n_", Some(NameChange::CharactersReplaced)),
        ];
        for (prefix, orig, max, want, change) in cases {
            let (got, why) = expose("up", prefix, "__", orig, max);
            assert_eq!(got, want, "{orig}");
            assert_eq!(why, change, "{orig}");
        }
        let (got, why) = expose("up", Some("srv"), "__", &long, 64);
        assert_eq!(got.len(), 64);
        assert!(got.starts_with("srv__aaaa"));
        assert_eq!(why, Some(NameChange::Shortened));
        assert!(is_valid_exposed(&got, 64));
        let (got2, _) = expose("up", Some("srv"), "__", &long, 64);
        assert_eq!(got, got2, "deterministic");
        let (other, _) = expose("up2", Some("srv"), "__", &long, 64);
        assert_ne!(got, other, "hash covers the upstream");
    }

    #[test]
    fn the_rule_always_holds() {
        // A cheap exhaustive-ish property check over awkward inputs and limits.
        let pieces = [
            "",
            "a",
            ".",
            "/",
            " ",
            "é",
            "日本",
            "-",
            "_",
            "x".repeat(40).leak(),
        ];
        for max in [16usize, 20, 64, 128] {
            for a in pieces {
                for b in pieces {
                    for c in pieces {
                        let orig = format!("{a}{b}{c}{a}");
                        for prefix in [None, Some("p"), Some("long-prefix-name")] {
                            let (name, _) = expose("u", prefix, "__", &orig, max);
                            assert!(is_valid_exposed(&name, max), "{name:?} from {orig:?}");
                            let d = disambiguate(&name, "u", &orig, max);
                            assert!(is_valid_exposed(&d, max), "{d:?}");
                            assert_ne!(d, name);
                        }
                    }
                }
            }
        }
    }
}
