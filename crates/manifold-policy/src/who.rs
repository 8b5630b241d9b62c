//! Whom a rule names: the `who` lists of `[[policy]]` and `[[rate_limit]]`.
//!
//! Entries arrive qualified (see manifold-config `principals`): `*` is
//! everyone (anonymous callers included); `subject:<source>:<sub>` a token's
//! subject from that `[[auth.jwt]]` or `[[auth.introspection]]` source, or
//! `subject:local:<user>` the local user of `manifold stdio` — never an API
//! key's name or a certificate, so neither can pose as a person, and never
//! another source's subject; `cert:<type>:<name>` a client certificate's
//! principal; `key:<name>` an API key; `group:<g>` and `scope:<s>` what the
//! identity carries.
//!
//! Invariants: an entry of another shape, an unqualified `subject:` included,
//! names nobody (config validation qualifies or refuses it before it gets
//! here).

use crate::identity::{AuthMethod, Identity};
use manifold_config::auth::LOCAL_SOURCE;
use manifold_config::IdentitySources;

/// The identity a `manifold check --as WHO` (or `/catalog?as=WHO`) stands
/// for: comma-separated `subject:…`, `cert:…`, `key:…`, `group:…`, `scope:…`,
/// or `anonymous`. `subject:` is qualified as in `who` (`subject:<sub>` alone
/// only with one identity source in `sources`).
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
            "group" => caller.groups.iter().any(|g| g == value),
            "scope" => caller.scopes.iter().any(|s| s == value),
            _ => false,
        }
    })
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
        assert!(matches(&w(&["subject:local:me"]), &Identity::local("me")));
        assert!(!matches(
            &w(&["subject:local:anonymous"]),
            &Identity::anonymous()
        ));
        assert!(matches(&w(&["*"]), &Identity::anonymous()));
    }
}
