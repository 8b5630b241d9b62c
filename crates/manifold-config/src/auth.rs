//! `[auth]`: who may call the gateway. The file model (`AuthSection` and its
//! `[[auth.jwt]]` and `[[auth.api_keys]]` tables) and the validated settings the
//! identity layer reads ([`AuthSettings`]).
//!
//! Invariants: a validated [`AuthSettings`] names at least one method; no
//! algorithm it allows is `none` or an HMAC (a public key can never be used as
//! a shared secret); a JWKS URL is `https://`, or `http://` to a loopback host
//! only; API keys are stored as SHA-256 digests, never as keys; every
//! `[[auth.jwt]]` and `[[auth.introspection]]` has a source name of its own
//! (set, or derived from its issuer's or endpoint's host: see
//! [`derived_source_name`]), which qualifies the principals it vouches for.
//!
//! Not here: fetching keys, verifying tokens (manifold-policy), answering 401
//! (manifold-server).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Default `[[auth.jwt]] algorithms`: asymmetric only.
pub const DEFAULT_JWT_ALGORITHMS: &[&str] = &["RS256", "ES256", "EdDSA"];
/// Algorithms `[[auth.jwt]] algorithms` may name (no `none`, no HMAC).
pub const ALLOWED_JWT_ALGORITHMS: &[&str] = &[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];
/// Default `[[auth.jwt]] groups_claim`.
pub const DEFAULT_GROUPS_CLAIM: &str = "groups";
/// Default `[[auth.jwt]] clock_skew`: how far `exp` and `nbf` may be off.
pub const DEFAULT_CLOCK_SKEW: &str = "60s";
/// Default `[[auth.jwt]] jwks_refresh`: how often keys are fetched again.
pub const DEFAULT_JWKS_REFRESH: &str = "15m";
/// Default `[[auth.introspection]] cache_ttl`: the longest an introspection
/// answer is trusted (never past the token's `exp`).
pub const DEFAULT_INTROSPECTION_CACHE_TTL: &str = "60s";
/// Default `[[auth.introspection]] require_audience`: an active answer must
/// carry an `aud` that names this gateway.
pub const DEFAULT_INTROSPECTION_REQUIRE_AUDIENCE: bool = true;
/// Prefix of an `[[auth.api_keys]] hash`.
pub const API_KEY_HASH_PREFIX: &str = "sha256:";
/// The source name of `manifold stdio`'s local user (`subject:local:<user>`);
/// no `[[auth.jwt]]` or `[[auth.introspection]]` may take it.
pub const LOCAL_SOURCE: &str = "local";
/// The longest source name.
pub const MAX_SOURCE_NAME_LEN: usize = 64;

/// `[auth]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields)]
pub struct AuthSection {
    /// The canonical resource URI of this gateway (RFC 8707 audience); default
    /// `http://<listen><path>`.
    #[serde(default)]
    pub resource: Option<String>,
    /// Scopes advertised in the protected resource metadata.
    #[serde(default)]
    pub scopes_supported: Vec<String>,
    /// Scopes every request needs; missing ones get 403 `insufficient_scope`.
    #[serde(default)]
    pub required_scopes: Vec<String>,
    /// Serve requests without credentials as `anonymous` (default false).
    #[serde(default)]
    pub allow_anonymous: bool,
    /// OAuth 2.1 access tokens as JWTs, tried in order.
    #[serde(default)]
    pub jwt: Vec<JwtSection>,
    /// Static keys for scripts and CI.
    #[serde(default)]
    pub api_keys: Vec<ApiKeySection>,
    /// Opaque access tokens, checked by the issuer's introspection endpoint
    /// (RFC 7662), tried in order.
    #[serde(default)]
    pub introspection: Vec<IntrospectionSection>,
}

/// `[[auth.introspection]]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IntrospectionSection {
    /// The source's name in principals (`introspection:<name>:<sub>`) and in
    /// `who` (`subject:<name>:<sub>`); default derived from `url` (its host).
    #[serde(default)]
    pub name: Option<String>,
    /// The introspection endpoint: `https://`, or `http://` to a loopback host.
    pub url: String,
    /// Manifold's client id at the authorization server (HTTP Basic).
    pub client_id: String,
    /// Its secret (`${VAR}` expands; keep it out of the file).
    pub client_secret: String,
    /// The `aud` an active token must carry; default `auth.resource`.
    #[serde(default)]
    pub audience: Option<String>,
    /// Refuse an active answer without `aud` (default
    /// [`DEFAULT_INTROSPECTION_REQUIRE_AUDIENCE`]). False only for a provider
    /// that never says whom its tokens are for: then any of its active tokens
    /// is accepted here, including one issued for another service. An `aud`
    /// that is present must name the gateway either way.
    #[serde(default)]
    pub require_audience: Option<bool>,
    /// Where groups are read from in the answer; default [`DEFAULT_GROUPS_CLAIM`].
    #[serde(default)]
    pub groups_claim: Option<String>,
    /// The longest an answer is cached; default [`DEFAULT_INTROSPECTION_CACHE_TTL`].
    #[serde(default)]
    pub cache_ttl: Option<String>,
}

/// `[[auth.jwt]]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JwtSection {
    /// The source's name in principals (`jwt:<name>:<sub>`) and in `who`
    /// (`subject:<name>:<sub>`); default derived from `issuer` (its host).
    #[serde(default)]
    pub name: Option<String>,
    /// The `iss` tokens must carry; also advertised as an authorization server.
    pub issuer: String,
    /// Where the issuer's signing keys are (a JWK Set).
    pub jwks_url: String,
    /// The `aud` tokens must carry; default `auth.resource`.
    #[serde(default)]
    pub audience: Option<String>,
    /// Signature algorithms accepted; default [`DEFAULT_JWT_ALGORITHMS`].
    #[serde(default)]
    pub algorithms: Option<Vec<String>>,
    /// The claim groups (or roles) are read from; default [`DEFAULT_GROUPS_CLAIM`].
    #[serde(default)]
    pub groups_claim: Option<String>,
    /// Bound on clock differences for `exp` and `nbf`; default [`DEFAULT_CLOCK_SKEW`].
    #[serde(default)]
    pub clock_skew: Option<String>,
    /// How often keys are fetched again; default [`DEFAULT_JWKS_REFRESH`] (and at
    /// once, rate limited, on an unknown `kid`).
    #[serde(default)]
    pub jwks_refresh: Option<String>,
}

/// `[[auth.api_keys]]` in the file.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ApiKeySection {
    /// The principal the key authenticates.
    pub name: String,
    /// `sha256:<64 hex digits>`, as `manifold auth hash-key` prints it
    /// (`${VAR}` expands).
    pub hash: String,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub scopes: Vec<String>,
}

/// The validated `[auth]`.
#[derive(Debug, Clone, PartialEq)]
pub struct AuthSettings {
    /// The canonical resource URI (the default audience).
    pub resource: String,
    /// Whether `resource` was set in the file. If not, the metadata and the
    /// challenge name the URL the client used (its `Host`), and the default
    /// audience is `http://<listen><path>`.
    pub resource_explicit: bool,
    pub scopes_supported: Vec<String>,
    pub required_scopes: Vec<String>,
    pub allow_anonymous: bool,
    pub jwt: Vec<JwtProvider>,
    pub api_keys: Vec<ApiKey>,
    pub introspection: Vec<Introspection>,
}

impl AuthSettings {
    /// The names of the sources whose principals carry a subject (`[[auth.jwt]]`
    /// then `[[auth.introspection]]`, in file order), with whether each is an
    /// introspection endpoint.
    pub fn subject_sources(&self) -> Vec<(&str, bool)> {
        let jwt = self.jwt.iter().map(|j| (j.name.as_str(), false));
        let intro = self.introspection.iter().map(|i| (i.name.as_str(), true));
        jwt.chain(intro).collect()
    }
}

/// One validated `[[auth.introspection]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Introspection {
    /// The source name (set or derived), unique among the sources.
    pub name: String,
    pub url: String,
    pub client_id: String,
    pub client_secret: String,
    pub audience: String,
    /// Whether an active answer must carry `aud`.
    pub require_audience: bool,
    pub groups_claim: String,
    pub cache_ttl: Duration,
}

/// One validated `[[auth.jwt]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct JwtProvider {
    /// The source name (set or derived), unique among the sources.
    pub name: String,
    pub issuer: String,
    pub jwks_url: String,
    pub audience: String,
    pub algorithms: Vec<String>,
    pub groups_claim: String,
    pub clock_skew: Duration,
    pub jwks_refresh: Duration,
}

/// One validated `[[auth.api_keys]]`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiKey {
    pub name: String,
    /// The SHA-256 of the key.
    pub sha256: [u8; 32],
    pub groups: Vec<String>,
    pub scopes: Vec<String>,
}

/// Validates `[auth]`; `default_resource` is `http://<listen><path>`. No
/// `${VAR}` expansion (see [`validate_expanding`]).
pub fn validate(a: &AuthSection, default_resource: &str) -> Result<AuthSettings, String> {
    validate_expanding(a, default_resource, &|_, v| Ok(v.to_string()))
}

/// Like [`validate`], expanding secrets with `expand(key, value)`.
pub fn validate_expanding(
    a: &AuthSection,
    default_resource: &str,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<AuthSettings, String> {
    if a.jwt.is_empty() && a.api_keys.is_empty() && a.introspection.is_empty() {
        return Err(
            "key `auth`: name at least one method: [[auth.jwt]], [[auth.introspection]] or [[auth.api_keys]]"
                .into(),
        );
    }
    let resource = a
        .resource
        .clone()
        .unwrap_or_else(|| default_resource.to_string());
    if url_host(&resource).is_none() {
        return Err(format!(
            "key `auth.resource`: `{resource}` must be an http:// or https:// URL"
        ));
    }
    let mut jwt = Vec::new();
    for (i, j) in a.jwt.iter().enumerate() {
        jwt.push(jwt_provider(j, i, &resource)?);
    }
    let mut api_keys: Vec<ApiKey> = Vec::new();
    for (i, k) in a.api_keys.iter().enumerate() {
        let key = format!("auth.api_keys[{i}]");
        if k.name.trim().is_empty() {
            return Err(format!("key `{key}.name`: must not be empty"));
        }
        if api_keys.iter().any(|o| o.name == k.name) {
            return Err(format!("key `{key}.name`: `{}` is named twice", k.name));
        }
        api_keys.push(ApiKey {
            name: k.name.clone(),
            sha256: key_digest(&key, &k.hash, expand)?,
            groups: k.groups.clone(),
            scopes: k.scopes.clone(),
        });
    }
    let mut introspection = Vec::new();
    for (i, s) in a.introspection.iter().enumerate() {
        let key = format!("auth.introspection[{i}]");
        check_fetch_url(&format!("{key}.url"), &s.url)?;
        let name = source_name(&key, s.name.as_deref(), &s.url)?;
        if s.client_id.trim().is_empty() {
            return Err(format!("key `{key}.client_id`: must not be empty"));
        }
        let client_secret = expand(&format!("{key}.client_secret"), &s.client_secret)?;
        let ttl = s
            .cache_ttl
            .as_deref()
            .unwrap_or(DEFAULT_INTROSPECTION_CACHE_TTL);
        introspection.push(Introspection {
            name,
            url: s.url.clone(),
            client_id: s.client_id.clone(),
            client_secret,
            audience: s.audience.clone().unwrap_or_else(|| resource.clone()),
            require_audience: s
                .require_audience
                .unwrap_or(DEFAULT_INTROSPECTION_REQUIRE_AUDIENCE),
            groups_claim: s
                .groups_claim
                .clone()
                .unwrap_or_else(|| DEFAULT_GROUPS_CLAIM.into()),
            cache_ttl: humantime::parse_duration(ttl)
                .map_err(|e| format!("key `{key}.cache_ttl`: `{ttl}` is not a duration: {e}"))?,
        });
    }
    unique_source_names(&jwt, &introspection)?;
    Ok(AuthSettings {
        introspection,
        resource_explicit: a.resource.is_some(),
        resource,
        scopes_supported: a.scopes_supported.clone(),
        required_scopes: a.required_scopes.clone(),
        allow_anonymous: a.allow_anonymous,
        jwt,
        api_keys,
    })
}

fn jwt_provider(j: &JwtSection, i: usize, resource: &str) -> Result<JwtProvider, String> {
    let key = format!("auth.jwt[{i}]");
    if j.issuer.trim().is_empty() {
        return Err(format!("key `{key}.issuer`: must not be empty"));
    }
    check_fetch_url(&format!("{key}.jwks_url"), &j.jwks_url)?;
    let name = source_name(&key, j.name.as_deref(), &j.issuer)?;
    let algorithms = match &j.algorithms {
        None => DEFAULT_JWT_ALGORITHMS
            .iter()
            .map(|s| s.to_string())
            .collect(),
        Some(list) if list.is_empty() => {
            return Err(format!("key `{key}.algorithms`: name at least one"))
        }
        Some(list) => {
            for a in list {
                if !ALLOWED_JWT_ALGORITHMS.contains(&a.as_str()) {
                    return Err(format!(
                        "key `{key}.algorithms`: `{a}` is not accepted; use one of {} \
                         (never `none`, never an HMAC: a public key must not be usable as a secret)",
                        ALLOWED_JWT_ALGORITHMS.join(", ")
                    ));
                }
            }
            list.clone()
        }
    };
    let duration = |field: &str, v: &Option<String>, default: &str| {
        let text = v.as_deref().unwrap_or(default);
        humantime::parse_duration(text)
            .map_err(|e| format!("key `{key}.{field}`: `{text}` is not a duration: {e}"))
    };
    Ok(JwtProvider {
        name,
        issuer: j.issuer.clone(),
        jwks_url: j.jwks_url.clone(),
        audience: j.audience.clone().unwrap_or_else(|| resource.to_string()),
        algorithms,
        groups_claim: j
            .groups_claim
            .clone()
            .unwrap_or_else(|| DEFAULT_GROUPS_CLAIM.into()),
        clock_skew: duration("clock_skew", &j.clock_skew, DEFAULT_CLOCK_SKEW)?,
        jwks_refresh: duration("jwks_refresh", &j.jwks_refresh, DEFAULT_JWKS_REFRESH)?,
    })
}

/// The name a source gets when its table sets none: the host of `url` (the
/// issuer or the introspection endpoint), lowercased, without port —
/// `https://login.corp.example/realms/x` → `login.corp.example`. `None` when
/// it has no host that makes a valid name (not a URL, an IPv6 literal).
pub fn derived_source_name(url: &str) -> Option<String> {
    url_host(url).filter(|h| valid_source_name(h))
}

/// A source name: 1 to [`MAX_SOURCE_NAME_LEN`] ASCII letters, digits, `.`, `-`
/// or `_` (never a `:`, which separates it from the subject in
/// `subject:<source>:<sub>`).
pub fn valid_source_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_SOURCE_NAME_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_'))
}

/// The validated name of the source at `key`: `name`, or derived from `url`.
fn source_name(key: &str, name: Option<&str>, url: &str) -> Result<String, String> {
    let name = match name {
        Some(n) => {
            if !valid_source_name(n) {
                return Err(format!(
                    "key `{key}.name`: `{n}` must be 1 to {MAX_SOURCE_NAME_LEN} letters, digits, \
                     `.`, `-` or `_` (it qualifies principals: `subject:<name>:<sub>`)"
                ));
            }
            n.to_string()
        }
        None => derived_source_name(url).ok_or_else(|| {
            format!(
                "key `{key}.name`: `{url}` has no host to name this source after; \
                 set `name = \"…\"` (it qualifies principals: `subject:<name>:<sub>`)"
            )
        })?,
    };
    if name == LOCAL_SOURCE {
        return Err(format!(
            "key `{key}.name`: `{LOCAL_SOURCE}` names `manifold stdio`'s local user; \
             set another `name`"
        ));
    }
    Ok(name)
}

/// Two sources with one name would make one principal of two callers.
fn unique_source_names(jwt: &[JwtProvider], intro: &[Introspection]) -> Result<(), String> {
    let keyed = jwt
        .iter()
        .enumerate()
        .map(|(i, j)| (format!("auth.jwt[{i}]"), &j.name))
        .chain(
            intro
                .iter()
                .enumerate()
                .map(|(i, s)| (format!("auth.introspection[{i}]"), &s.name)),
        )
        .collect::<Vec<_>>();
    for (n, (key, name)) in keyed.iter().enumerate() {
        if let Some((first, _)) = keyed[..n].iter().find(|(_, other)| other == name) {
            return Err(format!(
                "key `{key}.name`: `{name}` also names `{first}` (set explicitly or derived \
                 from the host); give each source its own `name`, so a subject of one cannot \
                 pass for the same subject of the other"
            ));
        }
    }
    Ok(())
}

/// A URL Manifold fetches credentials-related data from: `https://`, or
/// `http://` to a loopback host (a sidecar identity provider, tests).
pub(crate) fn check_fetch_url(key: &str, url: &str) -> Result<(), String> {
    match (url_host(url), url.to_ascii_lowercase()) {
        (Some(_), u) if u.starts_with("https://") => Ok(()),
        (Some(host), u) if u.starts_with("http://") && is_loopback(&host) => Ok(()),
        _ => Err(format!(
            "key `{key}`: `{url}` must be an https:// URL (http:// only to a loopback \
             address, for a sidecar identity provider)"
        )),
    }
}

/// The digest a key's `hash` (at `key`) names, `${VAR}` expanded: what
/// `[[auth.api_keys]]` and `[[admin.tokens]]` both hold.
pub(crate) fn key_digest(
    key: &str,
    hash: &str,
    expand: &dyn Fn(&str, &str) -> Result<String, String>,
) -> Result<[u8; 32], String> {
    // `${VAR}` expands: a Kubernetes Secret can hold the hash.
    let hash = expand(&format!("{key}.hash"), hash)?;
    parse_hash(&hash).ok_or_else(|| {
        format!(
            "key `{key}.hash`: expected `{API_KEY_HASH_PREFIX}` and 64 hex digits, as \
             `manifold auth hash-key` prints (the key itself never goes in the file)"
        )
    })
}

/// `sha256:<hex>` → the digest.
fn parse_hash(text: &str) -> Option<[u8; 32]> {
    let hex = text.trim().strip_prefix(API_KEY_HASH_PREFIX)?;
    if hex.len() != 64 {
        return None;
    }
    let mut out = [0u8; 32];
    for (i, pair) in hex.as_bytes().chunks(2).enumerate() {
        let s = std::str::from_utf8(pair).ok()?;
        out[i] = u8::from_str_radix(s, 16).ok()?;
    }
    Some(out)
}

/// The host of an `http(s)://host[:port]/…` URL.
pub(crate) fn url_host(url: &str) -> Option<String> {
    let lower = url.to_ascii_lowercase();
    let rest = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_string())
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(url: &str) -> JwtSection {
        JwtSection {
            name: None,
            issuer: "https://idp.example.com".into(),
            jwks_url: url.into(),
            audience: None,
            algorithms: None,
            groups_claim: None,
            clock_skew: None,
            jwks_refresh: None,
        }
    }

    #[test]
    fn jwks_urls_are_https_or_loopback_http() {
        let rows = [
            ("https://idp.example.com/certs", true),
            ("http://127.0.0.1:8080/certs", true),
            ("http://[::1]:8080/certs", true),
            ("http://localhost/certs", true),
            ("http://idp.example.com/certs", false),
            ("ftp://idp.example.com/certs", false),
            ("idp.example.com", false),
        ];
        for (url, ok) in rows {
            let a = AuthSection {
                jwt: vec![jwt(url)],
                ..AuthSection::default()
            };
            assert_eq!(validate(&a, "http://127.0.0.1/mcp").is_ok(), ok, "{url}");
        }
    }

    #[test]
    fn hmac_and_none_are_never_accepted() {
        for alg in ["none", "HS256", "HS512", "rs256"] {
            let mut j = jwt("https://idp.example.com/certs");
            j.algorithms = Some(vec![alg.into()]);
            let a = AuthSection {
                jwt: vec![j],
                ..AuthSection::default()
            };
            let e = validate(&a, "http://127.0.0.1/mcp").expect_err(alg);
            assert!(e.contains("algorithms"), "{e}");
        }
    }

    #[test]
    fn defaults_and_api_key_hashes() {
        let a = AuthSection {
            jwt: vec![jwt("https://idp.example.com/certs")],
            api_keys: vec![ApiKeySection {
                name: "ci".into(),
                hash: format!("sha256:{}", "ab".repeat(32)),
                groups: vec!["ci".into()],
                scopes: vec![],
            }],
            ..AuthSection::default()
        };
        let s = validate(&a, "http://127.0.0.1:8080/mcp").expect("valid");
        assert_eq!(s.resource, "http://127.0.0.1:8080/mcp");
        assert_eq!(s.jwt[0].audience, s.resource);
        assert_eq!(s.jwt[0].algorithms, DEFAULT_JWT_ALGORITHMS);
        assert_eq!(s.jwt[0].clock_skew, Duration::from_secs(60));
        assert_eq!(s.api_keys[0].sha256, [0xab; 32]);
        assert!(!s.allow_anonymous);

        for bad in [
            "ab".repeat(32),
            format!("sha256:{}", "zz".repeat(32)),
            "sha256:ab".into(),
        ] {
            let mut b = a.clone();
            b.api_keys[0].hash = bad.clone();
            assert!(validate(&b, "http://x/mcp").is_err(), "{bad}");
        }
        let none = AuthSection::default();
        assert!(validate(&none, "http://x/mcp").is_err());
    }

    #[test]
    fn every_source_has_a_name_of_its_own() {
        let intro = |url: &str, name: Option<&str>| IntrospectionSection {
            name: name.map(str::to_owned),
            url: url.into(),
            client_id: "m".into(),
            client_secret: "s".into(),
            audience: None,
            require_audience: None,
            groups_claim: None,
            cache_ttl: None,
        };
        let a = AuthSection {
            jwt: vec![jwt("https://idp.example.com/certs")],
            introspection: vec![intro("http://127.0.0.1:9/introspect", None)],
            ..AuthSection::default()
        };
        let s = validate(&a, "http://x/mcp").expect("valid");
        assert_eq!(
            s.jwt[0].name, "idp.example.com",
            "derived from the issuer's host"
        );
        assert_eq!(
            s.introspection[0].name, "127.0.0.1",
            "derived from the url's host"
        );
        assert!(s.introspection[0].require_audience, "required by default");
        assert_eq!(
            s.subject_sources(),
            [("idp.example.com", false), ("127.0.0.1", true)]
        );

        // Two realms of one host: the derived names collide, and the error says what to do.
        let mut two = a.clone();
        let mut partner = jwt("https://idp.example.com/certs");
        partner.issuer = "https://idp.example.com/realms/partner".into();
        two.jwt.push(partner);
        let e = validate(&two, "http://x/mcp").expect_err("same name");
        assert!(
            e.contains("auth.jwt[1].name") && e.contains("own `name`"),
            "{e}"
        );
        two.jwt[1].name = Some("partner".into());
        assert!(validate(&two, "http://x/mcp").is_ok());

        for (bad, why) in [
            ("a:b", "letters"),
            ("", "letters"),
            ("local", "stdio"),
            ("idp.example.com", "also names"),
        ] {
            let mut b = a.clone();
            b.introspection[0].name = Some(bad.into());
            let e = validate(&b, "http://x/mcp").expect_err(bad);
            assert!(e.contains(why), "{bad}: {e}");
        }
        // An issuer that is not a URL has no host to be named after.
        let mut b = a.clone();
        b.jwt[0].issuer = "corp-idp".into();
        let e = validate(&b, "http://x/mcp").expect_err("no host");
        assert!(e.contains("set `name"), "{e}");
        b.jwt[0].name = Some("corp".into());
        assert_eq!(
            validate(&b, "http://x/mcp").expect("named").jwt[0].name,
            "corp"
        );
    }
}
