//! OAuth 2.1 access tokens as JWTs, for one `[[auth.jwt]]` issuer: its key set
//! (JWKS) fetched over HTTPS, kept fresh in the background and fetched again —
//! at most once per [`MIN_REFETCH`] — when a token names a key it does not have
//! (the issuer rotated its keys); then the signature, `iss`, `aud`, `exp` and
//! `nbf` (within `clock_skew`), with only the configured algorithms.
//!
//! Invariants: the algorithm comes from the allowlist and must match the key's
//! type (a public key is never used as an HMAC secret; `none` never verifies);
//! every fetch is bounded in time ([`FETCH_TIMEOUT`]) and size
//! ([`MAX_JWKS_BYTES`]); a failed fetch keeps the last good key set; `exp` and
//! `nbf` are read as numbers, fractions floored (a NumericDate may have them),
//! and a verified token is cached no later than its floored `exp`; the
//! identity names the issuer's source name.
//!
//! Not here: which scopes a request needs (`identity`), introspection
//! (`introspect`).

use base64::Engine;
use bytes::Bytes;
use http_body_util::Full;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use manifold_foundation::http::{self as bounded, FetchError};
use parking_lot::{Mutex, RwLock};
use serde_json::{Map, Value};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

use super::caller::{AuthError, AuthMethod, Identity};
use manifold_config::JwtProvider;

/// The shortest time between two key fetches caused by unknown `kid`s: a flood
/// of tokens with made-up key ids cannot turn into a flood of fetches.
pub const MIN_REFETCH: Duration = Duration::from_secs(5);
/// How long one key fetch may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest key set accepted.
pub const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// After a failed fetch, how soon the background refresh tries again.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(30);

/// Why a key fetch got no key set.
enum Fetch {
    TimedOut,
    Failed(String),
}

/// One issuer.
pub(super) struct Provider {
    config: JwtProvider,
    algorithms: Vec<Algorithm>,
    keys: RwLock<Arc<JwkSet>>,
    last_fetch: Mutex<Option<Instant>>,
    /// One fetch at a time.
    fetching: tokio::sync::Mutex<()>,
    client: HttpsClient,
}

/// Whether `token` has the shape of a JWS (three base64url parts).
pub(super) fn looks_like_jwt(token: &str) -> bool {
    let parts: Vec<&str> = token.split('.').collect();
    parts.len() == 3 && parts[..2].iter().all(|p| !p.is_empty())
}

/// The `iss` claim, read before verification only to pick the issuer whose
/// keys verify it.
pub(super) fn unverified_issuer(token: &str) -> Result<String, &'static str> {
    let claims = unverified_part(token, 1).ok_or("its claims cannot be read (not a JWT)")?;
    claims
        .get("iss")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or("it has no `iss` claim")
}

/// A string claim of a token (read after its signature was verified).
pub(super) fn unverified_claim(token: &str, name: &str) -> Option<String> {
    unverified_part(token, 1)?
        .get(name)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// Part `n` (0: header, 1: claims) decoded, not verified.
fn unverified_part(token: &str, n: usize) -> Option<Map<String, Value>> {
    let part = token.split('.').nth(n)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()?;
    serde_json::from_slice(&bytes).ok()
}

impl Provider {
    pub(super) fn new(config: JwtProvider) -> Provider {
        let algorithms = config
            .algorithms
            .iter()
            .filter_map(|a| Algorithm::from_str(a).ok())
            .collect();
        Provider {
            config,
            algorithms,
            keys: RwLock::new(Arc::new(JwkSet { keys: Vec::new() })),
            last_fetch: Mutex::new(None),
            fetching: tokio::sync::Mutex::new(()),
            client: https_client(),
        }
    }

    pub(super) fn issuer(&self) -> &str {
        &self.config.issuer
    }

    fn key_set(&self) -> Arc<JwkSet> {
        self.keys.read().clone()
    }

    /// Fetches the key set; keeps the old one (and logs why) on failure.
    pub(super) async fn refresh(&self) -> bool {
        let _one = self.fetching.lock().await;
        *self.last_fetch.lock() = Some(Instant::now());
        match self.fetch().await {
            Ok(set) => {
                tracing::debug!(issuer = %self.config.issuer, keys = set.keys.len(), "fetched the issuer's keys");
                *self.keys.write() = Arc::new(set);
                true
            }
            Err(Fetch::TimedOut) => {
                tracing::warn!(issuer = %self.config.issuer, url = %self.config.jwks_url,
                    "fetching the issuer's keys timed out; keeping the last ones");
                false
            }
            Err(Fetch::Failed(e)) => {
                tracing::warn!(issuer = %self.config.issuer, url = %self.config.jwks_url, error = %e,
                    "could not fetch the issuer's keys; keeping the last ones");
                false
            }
        }
    }

    /// The key set, within [`FETCH_TIMEOUT`] and [`MAX_JWKS_BYTES`].
    async fn fetch(&self) -> Result<JwkSet, Fetch> {
        let req = http::Request::get(&self.config.jwks_url)
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|e| Fetch::Failed(e.to_string()))?;
        let got = bounded::fetch(&self.client, req, MAX_JWKS_BYTES, FETCH_TIMEOUT)
            .await
            .map_err(|e| match e {
                FetchError::Timeout(_) => Fetch::TimedOut,
                e => Fetch::Failed(e.to_string()),
            })?;
        if !got.status.is_success() {
            return Err(Fetch::Failed(format!("HTTP {}", got.status)));
        }
        serde_json::from_slice(&got.body).map_err(|e| Fetch::Failed(format!("not a JWK Set: {e}")))
    }

    /// Refreshes every `jwks_refresh` (sooner after a failure) until `stop`.
    pub(super) async fn keep_fresh(self: Arc<Self>, stop: CancellationToken) {
        let mut wait = self.config.jwks_refresh;
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tokio::time::sleep(wait) => {}
            }
            wait = if self.refresh().await {
                self.config.jwks_refresh
            } else {
                RETRY_AFTER_FAILURE.min(self.config.jwks_refresh)
            };
        }
    }

    /// The audience this issuer's tokens must name unless a request asks for
    /// another (`[auth.jwt] audience`, by default the gateway's resource).
    pub(super) fn audience(&self) -> &str {
        &self.config.audience
    }

    /// Verifies `token`, which must name `audience`: its identity and until
    /// when it may be cached (its `exp`).
    pub(super) async fn verify(
        &self,
        token: &str,
        audience: &str,
    ) -> Result<(Identity, SystemTime), AuthError> {
        let invalid = |m: String| AuthError::Invalid(m);
        let header = jsonwebtoken::decode_header(token).map_err(|e| {
            invalid(
                match unverified_part(token, 0).and_then(|h| h.get("alg").cloned()) {
                    // An algorithm the library does not even know (`none`).
                    Some(Value::String(alg)) => format!(
                        "the algorithm `{alg}` is not accepted (accepted: {})",
                        self.config.algorithms.join(", ")
                    ),
                    _ => format!("its header cannot be read: {e}"),
                },
            )
        })?;
        if !self.algorithms.contains(&header.alg) {
            return Err(invalid(format!(
                "the algorithm {:?} is not accepted (accepted: {})",
                header.alg,
                self.config.algorithms.join(", ")
            )));
        }
        let mut key = self.find_key(header.kid.as_deref(), header.alg);
        if key.is_none() && self.may_refetch() {
            // The issuer may have rotated its keys.
            self.refresh().await;
            key = self.find_key(header.kid.as_deref(), header.alg);
        }
        let key = key.ok_or_else(|| {
            invalid(match &header.kid {
                Some(kid) => format!("no key `{kid}` is known for this issuer"),
                None => "it names no key (`kid`) and the issuer has several".into(),
            })
        })?;
        let mut v = Validation::new(header.alg);
        v.algorithms = vec![header.alg];
        v.set_issuer(&[&self.config.issuer]);
        v.set_audience(&[audience]);
        v.leeway = self.config.clock_skew.as_secs();
        // `nbf` is checked below, floored like `exp` (the library rounds).
        v.validate_nbf = false;
        v.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
        let data =
            jsonwebtoken::decode::<Map<String, Value>>(token, &key, &v).map_err(|e| {
                match e.kind() {
                    jsonwebtoken::errors::ErrorKind::InvalidAudience => {
                        invalid(format!("its audience is not `{audience}`"))
                    }
                    _ => invalid(describe(&e, &self.config)),
                }
            })?;
        let claims = data.claims;
        let subject = claims
            .get("sub")
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .ok_or_else(|| invalid("its `sub` claim is missing or empty".into()))?
            .to_string();
        // The library rounds fractional times; a fraction must not buy time.
        let skew = self.config.clock_skew.as_secs_f64();
        let now = unix_now();
        let exp = numeric_date(claims.get("exp"))
            .ok_or_else(|| invalid("its `exp` claim is not a number".into()))?;
        if now >= exp + skew {
            return Err(invalid("it has expired".into()));
        }
        if let Some(nbf) = claims.get("nbf") {
            let nbf = numeric_date(Some(nbf))
                .ok_or_else(|| invalid("its `nbf` claim is not a number".into()))?;
            if nbf > now + skew {
                return Err(invalid(
                    "it is not valid yet (`nbf` is in the future)".into(),
                ));
            }
        }
        Ok((
            Identity {
                subject,
                source: self.config.name.clone(),
                groups: strings(claims.get(&self.config.groups_claim)),
                scopes: scopes(&claims),
                method: AuthMethod::Jwt,
            },
            system_time(exp),
        ))
    }

    fn may_refetch(&self) -> bool {
        self.last_fetch
            .lock()
            .is_none_or(|t| t.elapsed() >= MIN_REFETCH)
    }

    /// The key for `kid` (or the only key, when the token names none) whose
    /// type fits `alg`.
    fn find_key(&self, kid: Option<&str>, alg: Algorithm) -> Option<DecodingKey> {
        let set = self.key_set();
        let jwk = match kid {
            Some(kid) => set.find(kid)?,
            None if set.keys.len() == 1 => &set.keys[0],
            None => return None,
        };
        // A key that says which algorithm it is for is used for that one only.
        if let Some(key_alg) = jwk.common.key_algorithm {
            if key_alg.to_string() != format!("{alg:?}") {
                return None;
            }
        }
        DecodingKey::from_jwk(jwk).ok()
    }
}

/// A NumericDate (RFC 7519 §2): seconds since the epoch, an integer or not;
/// fractions are floored. `None` when absent or not a number.
pub(super) fn numeric_date(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64)
        .filter(|n| n.is_finite())
        .map(f64::floor)
}

/// Seconds since the epoch, now.
pub(super) fn unix_now() -> f64 {
    manifold_foundation::time::unix_now_ms() as f64 / 1000.0
}

/// The instant `secs` after the epoch (the epoch itself for a negative time;
/// the far future, a century from now, for one the clock cannot hold).
pub(super) fn system_time(secs: f64) -> SystemTime {
    let far = SystemTime::now() + Duration::from_secs(100 * 365 * 24 * 3600);
    if secs <= 0.0 {
        return UNIX_EPOCH;
    }
    Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| UNIX_EPOCH.checked_add(d))
        .map_or(far, |t| t.min(far))
}

/// A reason a person can act on.
fn describe(e: &jsonwebtoken::errors::Error, c: &JwtProvider) -> String {
    use jsonwebtoken::errors::ErrorKind as K;
    match e.kind() {
        K::ExpiredSignature => "it has expired".into(),
        K::ImmatureSignature => "it is not valid yet (`nbf` is in the future)".into(),
        K::InvalidAudience => format!("its audience is not `{}`", c.audience),
        K::InvalidIssuer => format!("its issuer is not `{}`", c.issuer),
        K::InvalidSignature => "its signature does not verify".into(),
        K::InvalidAlgorithm => "its algorithm does not fit the key".into(),
        K::MissingRequiredClaim(claim) => format!("it has no `{claim}` claim"),
        _ => format!("it is malformed ({e})"),
    }
}

/// A claim that is a string or an array of strings.
pub(super) fn strings(v: Option<&Value>) -> Vec<String> {
    match v {
        Some(Value::String(s)) => vec![s.clone()],
        Some(Value::Array(a)) => a
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    }
}

/// Scopes: `scope` (space-separated, RFC 8693/9068) or `scp` (an array, as some
/// providers send).
pub(super) fn scopes(claims: &Map<String, Value>) -> Vec<String> {
    match claims.get("scope") {
        Some(Value::String(s)) => s.split_whitespace().map(str::to_owned).collect(),
        _ => strings(claims.get("scp")),
    }
}

/// The client for the identity provider's endpoints (keys, introspection):
/// HTTPS with the web roots (plain HTTP only where the configuration allowed a
/// loopback URL), connects bounded by [`FETCH_TIMEOUT`].
pub(super) type HttpsClient = manifold_foundation::http::Client;

pub(super) fn https_client() -> HttpsClient {
    manifold_foundation::http::client(&manifold_foundation::http::Options::new(FETCH_TIMEOUT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_issuer_and_scopes_are_read_leniently() {
        assert!(looks_like_jwt("a.b.c"));
        assert!(looks_like_jwt("a.b."));
        assert!(!looks_like_jwt("a.b"));
        assert!(!looks_like_jwt("an-api-key"));
        let payload =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"iss":"https://i"}"#);
        assert_eq!(
            unverified_issuer(&format!("h.{payload}.s")).as_deref(),
            Ok("https://i")
        );
        assert!(unverified_issuer("h.!!.s").is_err());
        let claims: Map<String, Value> =
            serde_json::from_str(r#"{"scope":"a b  c","scp":["x"]}"#).unwrap_or_default();
        assert_eq!(scopes(&claims), ["a", "b", "c"]);
        let claims: Map<String, Value> =
            serde_json::from_str(r#"{"scp":["x","y"]}"#).unwrap_or_default();
        assert_eq!(scopes(&claims), ["x", "y"]);
    }

    #[test]
    fn numeric_dates_are_floored_and_never_overflow() {
        let n = |v: Value| numeric_date(Some(&v));
        assert_eq!(n(serde_json::json!(1700000000)), Some(1_700_000_000.0));
        assert_eq!(n(serde_json::json!(1700000000.9)), Some(1_700_000_000.0));
        assert_eq!(n(serde_json::json!("1700000000")), None);
        assert_eq!(numeric_date(None), None);
        assert_eq!(
            system_time(1_700_000_000.0),
            UNIX_EPOCH + Duration::from_secs(1_700_000_000)
        );
        assert_eq!(system_time(-5.0), UNIX_EPOCH);
        assert!(
            system_time(1e300) > SystemTime::now(),
            "far future, no panic"
        );
        assert!(system_time(u64::MAX as f64) > SystemTime::now());
    }
}
