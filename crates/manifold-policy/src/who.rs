//! Whom a rule names: the `who` lists of `[[policy]]` and `[[rate_limit]]`.
//!
//! Entries arrive qualified (see manifold-config `principals`): `*` is
//! everyone (anonymous callers included); `subject:<source>:<sub>` a token's
//! subject from that `[[auth.jwt]]` or `[[auth.introspection]]` source, or
//! `subject:local:<user>` the local user of `manifold stdio` — never an API
//! key's name or a certificate, so neither can pose as a person, and never
//! another source's subject; `cert:<type>:<name>` a client certificate's
//! principal; `key:<name>` an API key; `group:<source>:<g>` and
//! `scope:<source>:<s>` what that source's tokens carry (`group::<g>`: what
//! an API key carries), or bare `group:<g>`/`scope:<s>` — kept bare only
//! while one token source exists — what any identity carries.
//!
//! Invariants: an entry of another shape, an unqualified `subject:` included,
//! names nobody (config validation qualifies or refuses it before it gets
//! here).

use crate::identity::{AuthMethod, Identity};
use manifold_config::auth::LOCAL_SOURCE;
use manifold_config::IdentitySources;

/// The identity a `manifold check --as WHO` (or `/catalog?as=WHO`) stands
/// for: comma-separated `subject:…`, `cert:…`, `key:…`, `group:…`, `scope:…`,
/// or `anonymous`. `subject:`, `group:` and `scope:` are qualified as in
/// `who` (bare only with one identity source in `sources`).
pub fn identity_for(spec: &str, sources: &IdentitySources) -> Result<Identity, String> {
    let spec = spec.trim();
    if spec == "anonymous" || spec == "*" {
        return Ok(Identity::anonymous());
    }
    let mut id = Identity {
        subject: String::new(),
        source: String::new(),
        groups: Vec::new(),
        scopes: Vec::new(),
        method: AuthMethod::Jwt,
    };
    let mut named = None;
    let mut claim_source: Option<String> = None;
    for part in spec.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (kind, value) = part
            .split_once(':')
            .filter(|(_, v)| !v.is_empty())
            .ok_or_else(|| bad(part))?;
        match kind {
            "subject" | "key" | "cert" => {
                if let Some(prev) = named.replace(kind) {
                    return Err(format!(
                        "`{spec}` names the caller twice ({prev}: and {kind}:); give one subject:, cert: or key:"
                    ));
                }
                if kind == "key" {
                    id.subject = value.to_string();
                    id.method = AuthMethod::ApiKey;
                    continue;
                }
                // The first qualified form stands for the caller: the source's
                // subject, or the certificate's common name.
                let qualified = sources.qualify(part)?;
                let first = qualified.first().ok_or_else(|| bad(part))?;
                if let Some(cert) = first.strip_prefix("cert:") {
                    let (t, name) = cert.split_once(':').ok_or_else(|| bad(part))?;
                    let c = Identity::certificate(t, name);
                    (id.subject, id.source, id.method) = (c.subject, c.source, c.method);
                } else {
                    let rest = first.strip_prefix("subject:").ok_or_else(|| bad(part))?;
                    let (source, sub) = rest.split_once(':').ok_or_else(|| bad(part))?;
                    id.subject = sub.to_string();
                    id.source = source.to_string();
                    id.method = if source == LOCAL_SOURCE {
                        AuthMethod::Local
                    } else if sources.subjects.iter().any(|(n, i)| n == source && *i) {
                        AuthMethod::Introspection
                    } else {
                        AuthMethod::Jwt
                    };
                }
            }
            "group" | "scope" => {
                // Qualified as in `who`; a qualified claim says which source's
                // token the caller stands for.
                let qualified = sources.qualify(part)?;
                let first = qualified.first().ok_or_else(|| bad(part))?;
                let claim = &first[kind.len() + 1..];
                let v = match claim.split_once(':') {
                    Some((source, v)) => {
                        match claim_source.replace(source.to_string()) {
                            Some(prev) if prev != source => {
                                return Err(format!(
                                    "`{spec}` names groups or scopes of two sources (`{prev}` and `{source}`); a caller's token comes from one"
                                ))
                            }
                            _ => {}
                        }
                        v
                    }
                    None => claim,
                };
                if kind == "group" {
                    id.groups.push(v.to_string());
                } else {
                    id.scopes.push(v.to_string());
                }
            }
            _ => return Err(bad(part)),
        }
    }
    if let Some(source) = claim_source {
        if named.is_none() {
            id.source = source.clone();
            id.method = if source.is_empty() {
                AuthMethod::ApiKey
            } else if sources.subjects.iter().any(|(n, i)| *n == source && *i) {
                AuthMethod::Introspection
            } else {
                AuthMethod::Jwt
            };
        } else if id.source != source && !(source.is_empty() && id.method == AuthMethod::ApiKey) {
            return Err(format!(
                "`{spec}`: the caller's groups and scopes come from its own source, not `{source}`"
            ));
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
        "`{part}` is not a caller: use subject:<source>:<sub>, cert:<type>:<name>, key:<api key name>, \
         group:<g>, scope:<s> (comma-separated), or anonymous"
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
                let Some((source, sub)) = value.split_once(':') else {
                    return false;
                };
                matches!(
                    caller.method,
                    AuthMethod::Jwt | AuthMethod::Introspection | AuthMethod::Local
                ) && caller.source == source
                    && caller.subject == sub
            }
            "cert" => caller.method == AuthMethod::Mtls && caller.subject == value,
            "key" => caller.method == AuthMethod::ApiKey && caller.subject == value,
            "group" => carries(caller, value, &caller.groups),
            "scope" => carries(caller, value, &caller.scopes),
            _ => false,
        }
    })
}

/// Whether `caller` carries the claim an entry names: `<source>:<v>` only
/// from that source (the empty source: API keys), a bare `<v>` (written only
/// while one token source exists) from any.
fn carries(caller: &Identity, entry: &str, held: &[String]) -> bool {
    match entry.split_once(':') {
        Some((source, v)) => {
            let from = match caller.method {
                AuthMethod::Jwt | AuthMethod::Introspection => caller.source.as_str(),
                AuthMethod::ApiKey => "",
                // Certificates, the local user and anonymous carry none.
                _ => return false,
            };
            from == source && held.iter().any(|h| h == v)
        }
        None => held.iter().any(|h| h == entry),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(method: AuthMethod, source: &str, subject: &str, groups: &[&str]) -> Identity {
        Identity {
            subject: subject.into(),
            source: source.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            scopes: vec!["read".into()],
            method,
        }
    }

    fn w(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    fn sources(names: &[(&str, bool)], certificates: bool) -> IdentitySources {
        IdentitySources {
            subjects: names.iter().map(|(n, i)| (n.to_string(), *i)).collect(),
            certificates,
        }
    }

    #[test]
    fn check_as_specs_make_identities() {
        let one = sources(&[("corp", false)], false);
        let ops = identity_for("group:ops", &one).unwrap();
        assert!(matches(&w(&["group:ops"]), &ops));
        assert!(!matches(
            &w(&["subject:corp:(any)"]),
            &Identity::anonymous()
        ));
        let bot = identity_for("key:ci-bot", &one).unwrap();
        assert!(matches(&w(&["key:ci-bot"]), &bot));
        assert!(!matches(&w(&["subject:corp:ci-bot"]), &bot));
        // With one source, `subject:alice` is that source's alice.
        let alice = identity_for("subject:alice, group:ops, scope:read", &one).unwrap();
        assert_eq!(alice.display_name(), "jwt:corp:alice");
        assert!(matches(&w(&["subject:corp:alice"]), &alice));
        assert!(matches(&w(&["scope:read"]), &alice));
        assert_eq!(
            identity_for("anonymous", &one).unwrap(),
            Identity::anonymous()
        );
        for bad in [
            "",
            "ops",
            "team:x",
            "group:",
            "subject:a,key:b",
            "cert:alice",
        ] {
            assert!(identity_for(bad, &one).is_err(), "{bad}");
        }
        // With several, it must say which.
        let two = sources(&[("corp", false), ("okta", true)], true);
        let e = identity_for("subject:alice", &two).expect_err("ambiguous");
        assert!(e.contains("subject:corp:alice"), "{e}");
        let okta = identity_for("subject:okta:client:ci", &two).unwrap();
        assert_eq!(okta.display_name(), "introspection:okta:client:ci");
        let cert = identity_for("cert:cn:alice", &two).unwrap();
        assert_eq!(cert.display_name(), "cert:cn:alice");
        assert!(matches(&w(&["cert:cn:alice"]), &cert));
        // Groups name their source once there are several.
        assert!(identity_for("group:ops", &two).is_err());
        let ops = identity_for("group:corp:ops", &two).unwrap();
        assert!(matches(&w(&["group:corp:ops"]), &ops));
        assert!(!matches(&w(&["group:okta:ops"]), &ops));
        let alice_ops = identity_for("subject:corp:alice,group:corp:ops", &two).unwrap();
        assert!(matches(&w(&["group:corp:ops"]), &alice_ops));
        assert!(identity_for("subject:corp:alice,group:okta:ops", &two).is_err());
        assert!(identity_for("group:corp:ops,scope:okta:read", &two).is_err());
        let local = identity_for("subject:local:me", &two).unwrap();
        assert_eq!(local, Identity::local("me"));
    }

    #[test]
    fn who_matches_by_kind_and_source() {
        let corp = caller(AuthMethod::Jwt, "corp", "alice", &["ops"]);
        let partner = caller(AuthMethod::Jwt, "partner", "alice", &[]);
        let okta = caller(AuthMethod::Introspection, "okta", "alice", &[]);
        let key = caller(AuthMethod::ApiKey, "", "alice", &[]);
        let cn = Identity::certificate("cn", "alice");
        let dns = Identity::certificate("dns", "alice");
        assert!(matches(&w(&["subject:corp:alice"]), &corp));
        for other in [&partner, &okta, &key, &cn, &dns] {
            assert!(
                !matches(&w(&["subject:corp:alice"]), other),
                "{}",
                other.display_name()
            );
        }
        assert!(matches(&w(&["subject:okta:alice"]), &okta));
        assert!(
            !matches(&w(&["subject:alice"]), &corp),
            "an unqualified entry names nobody"
        );
        assert!(matches(&w(&["cert:cn:alice"]), &cn));
        assert!(!matches(&w(&["cert:cn:alice"]), &dns), "CN is not a SAN");
        assert!(!matches(&w(&["cert:cn:alice"]), &corp));
        assert!(matches(&w(&["key:alice"]), &key));
        assert!(!matches(&w(&["key:alice"]), &corp));
        assert!(matches(&w(&["group:ops"]), &corp));
        assert!(matches(&w(&["scope:read"]), &corp));
        assert!(!matches(&w(&["scope:x"]), &corp));
        // A qualified group: only that source's tokens (or, `group::`, keys).
        let partner_ops = caller(AuthMethod::Jwt, "partner", "mallory", &["ops"]);
        assert!(matches(&w(&["group:corp:ops"]), &corp));
        assert!(!matches(&w(&["group:corp:ops"]), &partner_ops));
        assert!(!matches(&w(&["group::ops"]), &corp));
        let ci = caller(AuthMethod::ApiKey, "", "ci", &["ops"]);
        assert!(matches(&w(&["group::ops"]), &ci));
        assert!(!matches(&w(&["group:corp:ops"]), &ci));
        let forged = caller(AuthMethod::Jwt, "partner", "m", &["corp:ops"]);
        assert!(!matches(&w(&["group:corp:ops"]), &forged));
        assert!(matches(&w(&["scope:corp:read"]), &corp));
        assert!(!matches(&w(&["scope:partner:read"]), &corp));
        assert!(matches(&w(&["subject:local:me"]), &Identity::local("me")));
        assert!(!matches(
            &w(&["subject:local:anonymous"]),
            &Identity::anonymous()
        ));
        assert!(matches(&w(&["*"]), &Identity::anonymous()));
    }
}
