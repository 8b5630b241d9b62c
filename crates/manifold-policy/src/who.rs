//! Whom a rule names: the `who` lists of `[[policy]]` and `[[rate_limit]]`.
//!
//! `*` is everyone (anonymous callers included); `subject:<sub>` a token's
//! subject (never an API key's name, so a key cannot pose as a person);
//! `key:<name>` an API key; `group:<g>` and `scope:<s>` what the identity
//! carries. An entry of another shape names nobody (config validation refuses
//! it before it gets here).

use crate::identity::{AuthMethod, Identity};

/// Whether some entry of `who` names the caller.
pub fn matches(who: &[String], caller: &Identity) -> bool {
    who.iter().any(|w| {
        if w == "*" {
            return true;
        }
        let Some((kind, value)) = w.split_once(':') else {
            return false;
        };
        match kind {
            "subject" => {
                caller.method != AuthMethod::ApiKey
                    && caller.method != AuthMethod::Anonymous
                    && caller.subject == value
            }
            "key" => caller.method == AuthMethod::ApiKey && caller.subject == value,
            "group" => caller.groups.iter().any(|g| g == value),
            "scope" => caller.scopes.iter().any(|s| s == value),
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(method: AuthMethod, subject: &str, groups: &[&str]) -> Identity {
        Identity {
            subject: subject.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            scopes: vec!["read".into()],
            method,
        }
    }

    #[test]
    fn who_matches_by_kind() {
        let jwt = caller(AuthMethod::Jwt, "alice", &["ops"]);
        let key = caller(AuthMethod::ApiKey, "alice", &[]);
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(matches(&w(&["subject:alice"]), &jwt));
        assert!(
            !matches(&w(&["subject:alice"]), &key),
            "a key is not a subject"
        );
        assert!(matches(&w(&["key:alice"]), &key));
        assert!(!matches(&w(&["key:alice"]), &jwt));
        assert!(matches(&w(&["group:ops"]), &jwt));
        assert!(matches(&w(&["scope:read"]), &jwt));
        assert!(!matches(&w(&["scope:x"]), &jwt));
        assert!(!matches(&w(&["subject:anonymous"]), &Identity::anonymous()));
        assert!(matches(&w(&["*"]), &Identity::anonymous()));
    }
}
