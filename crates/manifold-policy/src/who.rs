//! Whom a rule names: the `who` lists of `[[policy]]` and `[[rate_limit]]`.
//!
//! `*` is everyone (anonymous callers included); `subject:<sub>` a token's
//! subject (never an API key's name, so a key cannot pose as a person);
//! `key:<name>` an API key; `group:<g>` and `scope:<s>` what the identity
//! carries. An entry of another shape names nobody (config validation refuses
//! it before it gets here).

use crate::identity::{AuthMethod, Identity};

/// The identity a `manifold check --as WHO` (or `/catalog?as=WHO`) stands
/// for: comma-separated `subject:…`, `key:…`, `group:…`, `scope:…`, or
/// `anonymous`. `key:` makes an API-key caller, anything else a token caller.
pub fn identity_for(spec: &str) -> Result<Identity, String> {
    let spec = spec.trim();
    if spec == "anonymous" || spec == "*" {
        return Ok(Identity::anonymous());
    }
    let mut id = Identity {
        subject: String::new(),
        groups: Vec::new(),
        scopes: Vec::new(),
        method: AuthMethod::Jwt,
    };
    let mut named = None;
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (kind, value) = part
            .split_once(':')
            .filter(|(_, v)| !v.is_empty())
            .ok_or_else(|| bad(part))?;
        match kind {
            "subject" | "key" => {
                if let Some(prev) = named.replace(kind) {
                    return Err(format!(
                        "`{spec}` names the caller twice ({prev}: and {kind}:); give one subject: or key:"
                    ));
                }
                id.subject = value.to_string();
                if kind == "key" {
                    id.method = AuthMethod::ApiKey;
                }
            }
            "group" => id.groups.push(value.to_string()),
            "scope" => id.scopes.push(value.to_string()),
            _ => return Err(bad(part)),
        }
    }
    if id.subject.is_empty() && id.groups.is_empty() && id.scopes.is_empty() {
        return Err(bad(spec));
    }
    if id.subject.is_empty() {
        id.subject = "(any)".into();
    }
    Ok(id)
}

fn bad(part: &str) -> String {
    format!(
        "`{part}` is not a caller: use subject:<sub>, key:<api key name>, group:<g>, scope:<s> (comma-separated), or anonymous"
    )
}

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
    fn check_as_specs_make_identities() {
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let ops = identity_for("group:ops").unwrap();
        assert!(matches(&w(&["group:ops"]), &ops));
        assert!(!matches(&w(&["subject:(any)"]), &Identity::anonymous()));
        let bot = identity_for("key:ci-bot").unwrap();
        assert!(matches(&w(&["key:ci-bot"]), &bot));
        assert!(!matches(&w(&["subject:ci-bot"]), &bot));
        let alice = identity_for("subject:alice, group:ops, scope:read").unwrap();
        assert!(matches(&w(&["subject:alice"]), &alice));
        assert!(matches(&w(&["scope:read"]), &alice));
        assert_eq!(identity_for("anonymous").unwrap(), Identity::anonymous());
        for bad in ["", "ops", "team:x", "group:", "subject:a,key:b"] {
            assert!(identity_for(bad).is_err(), "{bad}");
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
