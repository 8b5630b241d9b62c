//! Principals that carry their source: which identity sources a configuration
//! has ([`IdentitySources`]) and the `who` entries of `[[policy]]` and
//! `[[rate_limit]]` rewritten so that each names one source's callers.
//!
//! A principal is written `jwt:<source>:<sub>`, `introspection:<source>:<sub>`
//! (`…:client:<client_id>` for a token with no subject), `key:<name>`,
//! `cert:<type>:<name>` (`cn`, `dns`, `email`, `uri`), `local:<user>`,
//! `anonymous` or `operator`. In `who`, `subject:<source>:<sub>` names a token
//! subject of one `[[auth.jwt]]` or `[[auth.introspection]]` source (or
//! `subject:local:<user>`, `manifold stdio`'s user), `cert:<type>:<name>` a
//! client certificate, `key:<name>` an API key, `group:<source>:<g>` and
//! `scope:<source>:<s>` what one token source's tokens carry
//! (`group::<g>`: what API keys carry).
//!
//! Invariants: after [`qualify_rules`], every `subject:` entry is qualified
//! (`subject:<source>:<sub>`, the source configured or `local`); an unqualified
//! `subject:<sub>` is accepted only when at most one source could name a
//! subject (a configuration with one issuer keeps working), and is then
//! rewritten to that source (plus the local user); with several, it is an error
//! that says how to qualify it. The same holds for `group:` and `scope:`
//! with several token sources (certificates and the local user carry none).
//!
//! Not here: matching a caller against an entry (manifold-policy `who`).

use crate::auth::LOCAL_SOURCE;
use crate::snapshot::GatewayConfig;

/// The name types of a client certificate's principal: its subject's common
/// name, or (without one) the first DNS name, e-mail address or URI of its
/// subject alternative names.
pub const CERT_NAME_TYPES: &[&str] = &["cn", "dns", "email", "uri"];

/// The sources a `subject:` entry may name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdentitySources {
    /// `[[auth.jwt]]` then `[[auth.introspection]]` names, in file order; the
    /// flag says introspection.
    pub subjects: Vec<(String, bool)>,
    /// `[server.tls] client_ca` is set: client certificates name principals.
    pub certificates: bool,
}

impl IdentitySources {
    /// The sources of `cfg`.
    pub fn of(cfg: &GatewayConfig) -> IdentitySources {
        IdentitySources {
            subjects: cfg
                .auth
                .as_ref()
                .map(|a| {
                    a.subject_sources()
                        .into_iter()
                        .map(|(n, i)| (n.to_string(), i))
                        .collect()
                })
                .unwrap_or_default(),
            certificates: cfg
                .server
                .tls
                .as_ref()
                .is_some_and(|t| t.client_ca.is_some()),
        }
    }

    /// Whether `name` is a configured subject source (or `local`).
    pub fn is_source(&self, name: &str) -> bool {
        name == LOCAL_SOURCE || self.subjects.iter().any(|(n, _)| n == name)
    }

    /// `entry` in its qualified form(s), or why it cannot be (a message
    /// without a key, for the caller to prefix). An unqualified `subject:<sub>`
    /// becomes `subject:<the one source>:<sub>`, `cert:cn:<sub>` when client
    /// certificates are the one source (a certificate's common name: a host
    /// certificate whose DNS name is `alice` is not the person `alice`; write
    /// `cert:dns:alice` for it), and `subject:local:<sub>`.
    pub fn qualify(&self, entry: &str) -> Result<Vec<String>, String> {
        if let Some(rest) = entry.strip_prefix("cert:") {
            return match rest.split_once(':') {
                Some((t, v)) if CERT_NAME_TYPES.contains(&t) && !v.is_empty() => {
                    Ok(vec![entry.to_string()])
                }
                _ => Err(format!(
                    "`{entry}` is not `cert:<type>:<name>` with a type among {}",
                    CERT_NAME_TYPES.join(", ")
                )),
            };
        }
        for kind in ["group", "scope"] {
            if let Some(claim) = entry.strip_prefix(kind).and_then(|r| r.strip_prefix(':')) {
                return self.qualify_claim(kind, claim);
            }
        }
        let Some(sub) = entry.strip_prefix("subject:") else {
            return Ok(vec![entry.to_string()]);
        };
        if let Some((source, rest)) = sub.split_once(':') {
            if !rest.is_empty() && self.is_source(source) {
                return Ok(vec![entry.to_string()]);
            }
        }
        let sources = self.subjects.len() + usize::from(self.certificates);
        if sources > 1 {
            return Err(self.ambiguous(sub));
        }
        let mut out = Vec::new();
        if let Some((name, _)) = self.subjects.first() {
            out.push(format!("subject:{name}:{sub}"));
        }
        if self.certificates {
            out.push(format!("cert:cn:{sub}"));
        }
        out.push(format!("subject:{LOCAL_SOURCE}:{sub}"));
        Ok(out)
    }

    /// A `group:` or `scope:` entry: `<kind>:<source>:<g>` names what one
    /// token source's tokens carry (`<kind>::<g>`, the empty source, what API
    /// keys carry). A bare `<kind>:<g>` is accepted while at most one token
    /// source exists (its tokens and the API keys are then all that carry
    /// groups, and both are the operator's); with several it is an error, as
    /// a partner's issuer could otherwise mint the group that grants the
    /// admin plane. A bare value holding `:` is written in its qualified forms
    /// so matching never has to guess.
    fn qualify_claim(&self, kind: &str, claim: &str) -> Result<Vec<String>, String> {
        if let Some((source, rest)) = claim.split_once(':') {
            if !rest.is_empty() && (source.is_empty() || self.is_token_source(source)) {
                return Ok(vec![format!("{kind}:{claim}")]);
            }
        }
        match self.subjects.as_slice() {
            [_, _, ..] => {
                let forms: Vec<String> = self
                    .subjects
                    .iter()
                    .map(|(n, _)| format!("`{kind}:{n}:{claim}`"))
                    .collect();
                Err(format!(
                    "`{kind}:{claim}` could be carried by tokens of any of {} identity sources \
                     ({}): one issuer's {kind} is not another's. Qualify it with the source \
                     that may grant it: {} (or `{kind}::{claim}` for API keys' {kind}s)",
                    self.subjects.len(),
                    self.subjects
                        .iter()
                        .map(|(n, _)| format!("`{n}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    forms.join(", or ")
                ))
            }
            _ if !claim.contains(':') => Ok(vec![format!("{kind}:{claim}")]),
            one => {
                let mut out: Vec<String> = one
                    .iter()
                    .map(|(n, _)| format!("{kind}:{n}:{claim}"))
                    .collect();
                out.push(format!("{kind}::{claim}"));
                Ok(out)
            }
        }
    }

    /// Whether `name` is a configured `[[auth.jwt]]` or `[[auth.introspection]]`.
    fn is_token_source(&self, name: &str) -> bool {
        self.subjects.iter().any(|(n, _)| n == name)
    }

    fn ambiguous(&self, sub: &str) -> String {
        let mut named: Vec<String> = self
            .subjects
            .iter()
            .map(|(n, i)| format!("{} `{n}`", if *i { "introspection" } else { "jwt issuer" }))
            .collect();
        let mut forms: Vec<String> = self
            .subjects
            .iter()
            .map(|(n, _)| format!("`subject:{n}:{sub}`"))
            .collect();
        if self.certificates {
            named.push("client certificates".into());
            forms.push(format!(
                "`cert:cn:{sub}` (a client certificate's common name)"
            ));
        }
        let typo = sub
            .split_once(':')
            .map(|(s, _)| format!(" (`{s}` is not a source's name)"))
            .unwrap_or_default();
        format!(
            "`subject:{sub}` could name a caller of any of {} identity sources ({}){typo}: \
             one source's `{sub}` is not another's. Qualify it with its source: {}",
            named.len(),
            named.join(", "),
            forms.join(", or ")
        )
    }

    /// Every entry of `who` qualified; `at` names the key in messages.
    pub fn qualify_all(&self, at: &str, who: &[String]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for w in who {
            for q in self
                .qualify(w)
                .map_err(|e| format!("key `{at}.who`: {e}"))?
            {
                if !out.contains(&q) {
                    out.push(q);
                }
            }
        }
        Ok(out)
    }
}

/// Qualifies the `who` of every `[[policy]]`, `[[rate_limit]]` and `[admin]` of `cfg`.
pub(crate) fn qualify_rules(cfg: &mut GatewayConfig) -> Result<(), String> {
    let sources = IdentitySources::of(cfg);
    if let Some(admin) = cfg.admin.as_mut() {
        admin.who = sources.qualify_all("admin", &admin.who)?;
    }
    for (i, r) in cfg.policy.iter_mut().enumerate() {
        r.who = sources.qualify_all(&format!("policy[{i}]"), &r.who)?;
    }
    for (i, r) in cfg.rate_limits.iter_mut().enumerate() {
        r.who = sources.qualify_all(&format!("rate_limit[{i}]"), &r.who)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sources(names: &[&str], certificates: bool) -> IdentitySources {
        IdentitySources {
            subjects: names.iter().map(|n| (n.to_string(), false)).collect(),
            certificates,
        }
    }

    #[test]
    fn one_source_keeps_unqualified_subjects_working() {
        let one = sources(&["corp"], false);
        assert_eq!(
            one.qualify("subject:alice").unwrap(),
            ["subject:corp:alice", "subject:local:alice"]
        );
        assert_eq!(
            one.qualify("subject:corp:alice").unwrap(),
            ["subject:corp:alice"]
        );
        // A subject with a colon that does not name a source stays a subject.
        assert_eq!(
            one.qualify("subject:urn:x").unwrap(),
            ["subject:corp:urn:x", "subject:local:urn:x"]
        );
        assert_eq!(
            sources(&[], false).qualify("subject:alice").unwrap(),
            ["subject:local:alice"]
        );
        // Certificates alone: the common name only (a host certificate whose
        // DNS name is `alice` is not the person `alice`).
        let certs = sources(&[], true).qualify("subject:alice").unwrap();
        assert_eq!(certs, ["cert:cn:alice", "subject:local:alice"]);
        for other in ["group:ops", "key:ci", "scope:s", "*", "cert:dns:a.example"] {
            assert_eq!(one.qualify(other).unwrap(), [other]);
        }
    }

    #[test]
    fn several_sources_need_a_qualified_subject() {
        let two = sources(&["corp", "partner"], false);
        let e = two.qualify("subject:alice").expect_err("ambiguous");
        assert!(
            e.contains("`subject:corp:alice`") && e.contains("`subject:partner:alice`"),
            "{e}"
        );
        assert!(two.qualify("subject:partner:alice").is_ok());
        assert!(two.qualify("subject:local:alice").is_ok());
        let e = two.qualify("subject:crop:alice").expect_err("typo");
        assert!(e.contains("`crop` is not a source"), "{e}");
        let e = sources(&["corp"], true)
            .qualify("subject:alice")
            .expect_err("a token subject or a certificate?");
        assert!(
            e.contains("client certificates") && e.contains("cert:cn:alice"),
            "{e}"
        );
        for bad in ["cert:alice", "cert:cn:", "cert:ou:x"] {
            assert!(two.qualify(bad).is_err(), "{bad}");
        }
        let e = two
            .qualify_all("policy[2]", &["key:x".into(), "subject:bob".into()])
            .expect_err("ambiguous");
        assert!(e.starts_with("key `policy[2].who`"), "{e}");
    }

    #[test]
    fn groups_and_scopes_carry_their_source_once_there_are_several() {
        // One token source: a bare group stays bare (that source's tokens and
        // the API keys carry it, both the operator's to trust).
        let one = sources(&["corp"], true);
        assert_eq!(one.qualify("group:ops").unwrap(), ["group:ops"]);
        assert_eq!(one.qualify("group:corp:ops").unwrap(), ["group:corp:ops"]);
        // A bare group with a colon is written in its qualified forms, so
        // matching never reads `team:ops` as source `team`.
        assert_eq!(
            one.qualify("group:team:ops").unwrap(),
            ["group:corp:team:ops", "group::team:ops"]
        );
        // Several: a partner's issuer must not mint the group that grants.
        let two = sources(&["corp", "partner"], false);
        for (entry, forms) in [
            (
                "group:platform",
                ["`group:corp:platform`", "`group:partner:platform`"],
            ),
            (
                "scope:admin",
                ["`scope:corp:admin`", "`scope:partner:admin`"],
            ),
        ] {
            let e = two.qualify(entry).expect_err("ambiguous");
            assert!(forms.iter().all(|f| e.contains(f)), "{e}");
        }
        for ok in ["group:corp:platform", "scope:partner:read", "group::ci"] {
            assert_eq!(two.qualify(ok).unwrap(), [ok]);
        }
        let e = two.qualify("group:crop:platform").expect_err("typo");
        assert!(e.contains("`group:corp:crop:platform`"), "{e}");
    }
}
