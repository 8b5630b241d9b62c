//! The identity layer against a JWKS endpoint started here, with keys generated
//! here: each kind of bad token gets its documented refusal and a reason a
//! person can act on; a rotated key is found by one rate-limited refetch; API
//! keys and anonymous callers; the required scopes; two issuers' `alice` are
//! two principals; a fractional `exp` expires on time; and introspection
//! against a stand-in provider that counts what it is asked (audience, refresh
//! tokens, client tokens, refusals kept, the per-second bound).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::Result;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING,
};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use manifold_config::auth::{ApiKeySection, AuthSection, JwtSection};
use manifold_policy::{hash_key, AuthError, AuthMethod, Authenticator};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const ISSUER: &str = "https://idp.test/realms/ops";
const AUDIENCE: &str = "http://127.0.0.1:8080/mcp";

/// A signing key and its public JWK.
struct Signer {
    key: EncodingKey,
    alg: Algorithm,
    kid: String,
    jwk: Jwk,
}

fn es256(kid: &str) -> Signer {
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .expect("generate");
    signer(
        EncodingKey::from_ec_der(pkcs8.as_ref()),
        Algorithm::ES256,
        kid,
    )
}

fn eddsa(kid: &str) -> Signer {
    use base64::Engine;
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).expect("generate");
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).expect("parse");
    let x = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(pair.public_key().as_ref());
    let jwk: Jwk = serde_json::from_value(
        json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "alg": "EdDSA"}),
    )
    .expect("jwk");
    Signer {
        key: EncodingKey::from_ed_der(pkcs8.as_ref()),
        alg: Algorithm::EdDSA,
        kid: kid.into(),
        jwk,
    }
}

fn signer(key: EncodingKey, alg: Algorithm, kid: &str) -> Signer {
    let mut jwk = Jwk::from_encoding_key(&key, alg).expect("jwk");
    jwk.common.key_id = Some(kid.into());
    Signer {
        key,
        alg,
        kid: kid.into(),
        jwk,
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn claims() -> Value {
    json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now() + 600,
           "groups": ["ops"], "scope": "mcp:tools"})
}

fn sign(s: &Signer, claims: &Value) -> String {
    let mut h = Header::new(s.alg);
    h.kid = Some(s.kid.clone());
    jsonwebtoken::encode(&h, claims, &s.key).expect("sign")
}

/// A JWKS endpoint on 127.0.0.1 serving whatever `keys` holds; counts fetches.
struct Jwks {
    url: String,
    keys: Arc<Mutex<Vec<Jwk>>>,
    fetches: Arc<AtomicUsize>,
}

async fn jwks(keys: Vec<Jwk>) -> Result<Jwks> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/certs", listener.local_addr()?);
    let keys = Arc::new(Mutex::new(keys));
    let fetches = Arc::new(AtomicUsize::new(0));
    let (k, f) = (keys.clone(), fetches.clone());
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (k, f) = (k.clone(), f.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let _ = s.read(&mut buf).await;
                f.fetch_add(1, Ordering::SeqCst);
                let set = JwkSet {
                    keys: k.lock().clone(),
                };
                let body = serde_json::to_string(&set).unwrap_or_default();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    Ok(Jwks { url, keys, fetches })
}

fn settings(jwks_url: &str, f: impl FnOnce(&mut AuthSection)) -> manifold_config::AuthSettings {
    let mut a = AuthSection {
        jwt: vec![JwtSection {
            name: None,
            issuer: ISSUER.into(),
            jwks_url: jwks_url.into(),
            audience: Some(AUDIENCE.into()),
            algorithms: None,
            groups_claim: None,
            clock_skew: Some("5s".into()),
            jwks_refresh: None,
        }],
        ..AuthSection::default()
    };
    f(&mut a);
    manifold_config::auth::validate(&a, AUDIENCE).expect("valid [auth]")
}

async fn started(s: manifold_config::AuthSettings) -> Authenticator {
    let a = Authenticator::new(s);
    let (tasks, stop) = (
        tokio_util::task::TaskTracker::new(),
        tokio_util::sync::CancellationToken::new(),
    );
    a.start(&tasks, &stop).await;
    a
}

fn bearer(t: &str) -> String {
    format!("Bearer {t}")
}

#[tokio::test]
async fn good_tokens_give_their_identity() -> Result<()> {
    let (ec, ed) = (es256("ec-1"), eddsa("ed-1"));
    let j = jwks(vec![ec.jwk.clone(), ed.jwk.clone()]).await?;
    let auth = started(settings(&j.url, |_| {})).await;
    for s in [&ec, &ed] {
        let id = auth
            .authenticate(Some(&bearer(&sign(s, &claims()))))
            .await?;
        assert_eq!(id.subject, "alice");
        assert_eq!(id.method, AuthMethod::Jwt);
        assert_eq!(id.groups, ["ops"]);
        assert_eq!(id.scopes, ["mcp:tools"]);
        // The source is named after the issuer's host.
        assert_eq!(id.display_name(), "jwt:idp.test:alice");
    }
    Ok(())
}

#[tokio::test]
async fn each_bad_token_is_refused_with_its_reason() -> Result<()> {
    let ec = es256("ec-1");
    let j = jwks(vec![ec.jwk.clone()]).await?;
    let auth = started(settings(&j.url, |_| {})).await;
    let with = |f: &dyn Fn(&mut Value)| {
        let mut c = claims();
        f(&mut c);
        sign(&ec, &c)
    };
    let good = sign(&ec, &claims());
    // A character well inside the signature (the last one carries unused bits).
    let mut tampered: Vec<char> = good.chars().collect();
    let at = tampered.len() - 10;
    tampered[at] = if tampered[at] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    let parts: Vec<&str> = good.split('.').collect();
    let b64 = |v: &Value| {
        use base64::Engine;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    let alg_none = format!(
        "{}.{}.",
        b64(&json!({"alg": "none", "kid": "ec-1"})),
        parts[1]
    );
    // HS256 "signed" with the public key as the secret: the classic confusion.
    let public = serde_json::to_vec(&ec.jwk)?;
    let mut h = Header::new(Algorithm::HS256);
    h.kid = Some("ec-1".into());
    let hs256 = jsonwebtoken::encode(&h, &claims(), &EncodingKey::from_secret(&public))?;
    let other_issuer = {
        let mut c = claims();
        c["iss"] = json!("https://evil.test");
        sign(&ec, &c)
    };
    let rows: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            with(&|c| c["exp"] = json!(now() - 600)),
            "expired",
        ),
        (
            "not yet valid",
            with(&|c| c["nbf"] = json!(now() + 600)),
            "not valid yet",
        ),
        (
            "wrong audience",
            with(&|c| c["aud"] = json!("https://other/mcp")),
            "audience",
        ),
        ("untrusted issuer", other_issuer, "not trusted"),
        (
            "no sub",
            with(&|c| {
                c.as_object_mut().map(|m| m.remove("sub"));
            }),
            "sub",
        ),
        (
            "no exp",
            with(&|c| {
                c.as_object_mut().map(|m| m.remove("exp"));
            }),
            "exp",
        ),
        ("tampered signature", tampered, "signature"),
        ("alg none", alg_none, "not accepted"),
        ("HS256 with the public key", hs256, "not accepted"),
        ("garbage", "a.b.c".into(), "cannot be read"),
    ];
    for (what, token, reason) in rows {
        let e = auth
            .authenticate(Some(&bearer(&token)))
            .await
            .expect_err(what);
        assert!(matches!(e, AuthError::Invalid(_)), "{what}: {e:?}");
        assert_eq!(e.http_status(), 401, "{what}");
        assert_eq!(e.bearer_error(), Some("invalid_token"), "{what}");
        assert!(e.to_string().contains(reason), "{what}: {e}");
    }
    for (header, want) in [
        (None, AuthError::Missing),
        (Some("Basic x"), AuthError::Malformed),
    ] {
        assert_eq!(auth.authenticate(header).await.expect_err("refused"), want);
    }
    Ok(())
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_unknown_kids_cannot_flood_the_issuer() -> Result<()> {
    let (old, new) = (es256("old"), es256("new"));
    let j = jwks(vec![old.jwk.clone()]).await?;
    let auth = started(settings(&j.url, |_| {})).await;
    assert_eq!(j.fetches.load(Ordering::SeqCst), 1, "fetched at start");
    auth.authenticate(Some(&bearer(&sign(&old, &claims()))))
        .await?;
    // The issuer rotates; a token signed with the new key arrives after the
    // rate-limit window of the start-up fetch.
    j.keys.lock().push(new.jwk.clone());
    tokio::time::sleep(manifold_policy::identity::MIN_REFETCH).await;
    let id = auth
        .authenticate(Some(&bearer(&sign(&new, &claims()))))
        .await?;
    assert_eq!(id.subject, "alice");
    assert_eq!(
        j.fetches.load(Ordering::SeqCst),
        2,
        "one refetch for the new kid"
    );
    // Tokens naming made-up keys right after: no further fetch.
    for n in 0..20 {
        let bogus = es256(&format!("bogus-{n}"));
        let e = auth
            .authenticate(Some(&bearer(&sign(&bogus, &claims()))))
            .await
            .expect_err("unknown kid");
        assert!(e.to_string().contains("no key"), "{e}");
    }
    assert_eq!(j.fetches.load(Ordering::SeqCst), 2, "rate limited");
    Ok(())
}

#[tokio::test]
async fn api_keys_anonymous_callers_and_required_scopes() -> Result<()> {
    let ec = es256("ec-1");
    let j = jwks(vec![ec.jwk.clone()]).await?;
    let auth = started(settings(&j.url, |a| {
        a.api_keys = vec![ApiKeySection {
            name: "ci-bot".into(),
            hash: hash_key("k3y"),
            groups: vec!["ci".into()],
            scopes: vec!["mcp:tools".into()],
        }];
        a.required_scopes = vec!["mcp:tools".into()];
    }))
    .await;
    let id = auth.authenticate(Some("Bearer k3y")).await?;
    assert_eq!(
        (id.display_name().as_str(), id.method),
        ("key:ci-bot", AuthMethod::ApiKey)
    );
    let e = auth
        .authenticate(Some("Bearer k3y-not"))
        .await
        .expect_err("wrong key");
    assert!(e.to_string().contains("unknown API key"), "{e}");
    // A valid token without the required scope: 403.
    let mut c = claims();
    c["scope"] = json!("other");
    let e = auth
        .authenticate(Some(&bearer(&sign(&ec, &c))))
        .await
        .expect_err("scope");
    assert_eq!(e, AuthError::InsufficientScope(vec!["mcp:tools".into()]));
    assert_eq!(e.http_status(), 403);
    // Cached or not, the scope check runs each time.
    let e2 = auth
        .authenticate(Some(&bearer(&sign(&ec, &c))))
        .await
        .expect_err("again");
    assert!(e2.is_insufficient_scope());

    let open = started(settings(&j.url, |a| a.allow_anonymous = true)).await;
    let id = open.authenticate(None).await?;
    assert_eq!(id.method, AuthMethod::Anonymous);
    // Credentials that are presented are still checked.
    assert!(open.authenticate(Some("Bearer nope")).await.is_err());
    Ok(())
}

/// Two `[[auth.jwt]]` issuers: a partner whose user is also called `alice`
/// is a principal of its own, never corp's `alice` — not in the principal, not
/// for a `subject:` rule.
#[tokio::test]
async fn two_issuers_alice_are_two_principals() -> Result<()> {
    let (corp_key, partner_key) = (es256("corp-1"), es256("partner-1"));
    let corp = jwks(vec![corp_key.jwk.clone()]).await?;
    let partner = jwks(vec![partner_key.jwk.clone()]).await?;
    const PARTNER: &str = "https://partner.test";
    let auth = started(settings(&corp.url, |a| {
        a.jwt[0].name = Some("corp".into());
        let mut p = a.jwt[0].clone();
        p.name = Some("partner".into());
        p.issuer = PARTNER.into();
        p.jwks_url = partner.url.clone();
        a.jwt.push(p);
    }))
    .await;
    let ours = auth
        .authenticate(Some(&bearer(&sign(&corp_key, &claims()))))
        .await?;
    let mut c = claims();
    c["iss"] = json!(PARTNER);
    let theirs = auth
        .authenticate(Some(&bearer(&sign(&partner_key, &c))))
        .await?;
    assert_eq!(ours.display_name(), "jwt:corp:alice");
    assert_eq!(theirs.display_name(), "jwt:partner:alice");
    let rule = vec!["subject:corp:alice".to_string()];
    assert!(manifold_policy::who::matches(&rule, &ours));
    assert!(!manifold_policy::who::matches(&rule, &theirs));
    // The partner's key cannot sign for corp's issuer.
    let forged = sign(&partner_key, &claims());
    assert!(auth.authenticate(Some(&bearer(&forged))).await.is_err());
    Ok(())
}

/// A JWT whose `exp` has a fraction (a valid NumericDate) is refused once it
/// is past, not served from the cache for minutes.
#[tokio::test]
async fn a_fractional_exp_expires_on_time() -> Result<()> {
    let ec = es256("ec-1");
    let j = jwks(vec![ec.jwk.clone()]).await?;
    let auth = started(settings(&j.url, |a| {
        a.jwt[0].clock_skew = Some("0s".into());
    }))
    .await;
    let now_f = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64())
    };
    // Two seconds ahead, and a fraction: the whole second is the expiry.
    let exp = (now_f() + 2.0).floor() + 0.75;
    let mut c = claims();
    c["exp"] = json!(exp);
    let token = bearer(&sign(&ec, &c));
    auth.authenticate(Some(&token)).await?;
    // Past the floored `exp` (and still before the fraction's end): refused.
    let past = exp.floor() + 0.2;
    tokio::time::sleep(std::time::Duration::from_secs_f64(
        (past - now_f()).max(0.0),
    ))
    .await;
    let e = auth
        .authenticate(Some(&token))
        .await
        .expect_err("served after its exp");
    assert!(e.to_string().contains("expired"), "{e}");
    Ok(())
}

/// What the stand-in introspection endpoint answers for each token.
fn introspection_answer(token: &str) -> Option<Value> {
    let base = json!({"active": true, "sub": "alice", "scope": "mcp:tools", "aud": AUDIENCE,
                      "exp": now() + 600, "groups": ["ops"], "token_type": "access_token"});
    let with = |f: &dyn Fn(&mut serde_json::Map<String, Value>)| {
        let mut v = base.clone();
        if let Some(m) = v.as_object_mut() {
            f(m);
        }
        Some(v)
    };
    match token {
        "opaque-good" => Some(base.clone()),
        // Active, but for whom? (a provider that omits `aud`)
        "opaque-noaud" => with(&|m| {
            m.remove("aud");
        }),
        // A refresh token presented as an access token.
        "opaque-refresh" => with(&|m| {
            m.insert("token_type".into(), json!("refresh_token"));
        }),
        // A client-credentials token, as oidc-provider answers for one: no `sub`.
        "opaque-client" => with(&|m| {
            m.remove("sub");
            m.remove("groups");
            m.insert("client_id".into(), json!("ci-app"));
        }),
        // The provider fails on this one.
        "opaque-fail" => None,
        _ => Some(json!({"active": false})),
    }
}

/// An introspection endpoint on 127.0.0.1 answering [`introspection_answer`]
/// (when Manifold's client credentials are right); counts requests.
async fn introspection_endpoint() -> Result<(String, Arc<AtomicUsize>)> {
    use base64::Engine;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/introspect", listener.local_addr()?);
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let basic = base64::engine::general_purpose::STANDARD.encode("manifold:s3cret");
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let (c, basic) = (c.clone(), basic.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                c.fetch_add(1, Ordering::SeqCst);
                let authorized = req.to_ascii_lowercase().contains(&format!(
                    "authorization: basic {}",
                    basic.to_ascii_lowercase()
                ));
                let token = req
                    .split("token=")
                    .nth(1)
                    .and_then(|t| t.split('&').next())
                    .unwrap_or_default()
                    .to_string();
                let (status, body) = match introspection_answer(&token) {
                    _ if !authorized => ("401 Unauthorized", json!({"error": "invalid_client"})),
                    Some(v) => ("200 OK", v),
                    None => (
                        "500 Internal Server Error",
                        json!({"error": "server_error"}),
                    ),
                };
                let body = body.to_string();
                let resp = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(resp.as_bytes()).await;
            });
        }
    });
    Ok((url, calls))
}

fn introspection_settings(url: &str, secret: &str) -> manifold_config::AuthSettings {
    let section = AuthSection {
        introspection: vec![manifold_config::auth::IntrospectionSection {
            name: Some("okta".into()),
            url: url.into(),
            client_id: "manifold".into(),
            client_secret: secret.into(),
            audience: Some(AUDIENCE.into()),
            require_audience: None,
            groups_claim: None,
            cache_ttl: None,
        }],
        ..AuthSection::default()
    };
    manifold_config::auth::validate(&section, AUDIENCE).expect("valid")
}

#[tokio::test]
async fn opaque_tokens_are_introspected_once_and_inactive_ones_refused() -> Result<()> {
    let (url, calls) = introspection_endpoint().await?;
    let auth = Authenticator::new(introspection_settings(&url, "s3cret"));
    let id = auth.authenticate(Some("Bearer opaque-good")).await?;
    assert_eq!(
        (id.display_name().as_str(), id.method),
        ("introspection:okta:alice", AuthMethod::Introspection)
    );
    assert_eq!(id.groups, ["ops"]);
    auth.authenticate(Some("Bearer opaque-good")).await?;
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the answer is cached");
    let e = auth
        .authenticate(Some("Bearer opaque-revoked"))
        .await
        .expect_err("inactive");
    assert!(e.to_string().contains("not active"), "{e}");
    // Wrong client credentials: the endpoint refuses Manifold, and the caller is
    // told to try again (503), not that its token is bad for ever.
    let e = Authenticator::new(introspection_settings(&url, "wrong"))
        .authenticate(Some("Bearer opaque-good"))
        .await
        .expect_err("endpoint refused us");
    assert!(e.to_string().contains("could not be checked"), "{e}");
    assert_eq!(e.http_status(), 503, "{e}");
    Ok(())
}

/// The edge cases of RFC 7662 answers, from the caller's side: each refusal,
/// kept for the token so repeating it costs the provider nothing; a client's
/// own token accepted as `client:<id>`.
#[tokio::test]
async fn introspection_answers_are_checked_and_refusals_kept() -> Result<()> {
    let (url, calls) = introspection_endpoint().await?;
    let auth = Authenticator::new(introspection_settings(&url, "s3cret"));
    let asked = || calls.load(Ordering::SeqCst);
    for (token, status, why) in [
        ("opaque-noaud", 401, "names no audience"),
        ("opaque-refresh", 401, "refresh token"),
        ("garbage-token", 401, "not active"),
        ("opaque-fail", 503, "could not be checked"),
    ] {
        let before = asked();
        for _ in 0..5 {
            let e = auth
                .authenticate(Some(&bearer(token)))
                .await
                .expect_err(token);
            assert_eq!(e.http_status(), status, "{token}: {e}");
            assert!(e.to_string().contains(why), "{token}: {e}");
        }
        assert_eq!(
            asked() - before,
            1,
            "{token}: one request, then the refusal is kept"
        );
    }
    let id = auth.authenticate(Some("Bearer opaque-client")).await?;
    assert_eq!(id.display_name(), "introspection:okta:client:ci-app");
    // A rule for the user `ci-app` does not name the client.
    assert!(!manifold_policy::who::matches(
        &["subject:okta:ci-app".into()],
        &id
    ));
    assert!(manifold_policy::who::matches(
        &["subject:okta:client:ci-app".into()],
        &id
    ));
    // With `require_audience = false`, the answer without `aud` is accepted.
    let mut lax = introspection_settings(&url, "s3cret");
    lax.introspection[0].require_audience = false;
    let id = Authenticator::new(lax)
        .authenticate(Some("Bearer opaque-noaud"))
        .await?;
    assert_eq!(id.subject, "alice");
    Ok(())
}

/// One client address flooding made-up tokens spends its own budget, not
/// everyone's: another address's token is still checked (security review 3,
/// F6). An IPv6 client's budget is its /64's.
#[tokio::test]
async fn one_addresss_made_up_tokens_do_not_spend_the_others_budget() -> Result<()> {
    let (url, calls) = introspection_endpoint().await?;
    let auth = Arc::new(Authenticator::new(introspection_settings(&url, "s3cret")));
    let shared = manifold_policy::identity::MAX_INTROSPECTIONS_PER_SECOND as usize;
    let per_peer = manifold_policy::identity::MAX_INTROSPECTIONS_PER_PEER_PER_SECOND as usize;
    let attacker: std::net::IpAddr = "203.0.113.7".parse()?;
    let started = std::time::Instant::now();
    let mut busy = 0;
    for n in 0..shared * 2 {
        let e = auth
            .authenticate_from(Some(&format!("Bearer made-up-{n}")), None, Some(attacker))
            .await
            .expect_err("made up");
        if e.http_status() == 503 {
            assert!(e.to_string().contains("one client address"), "{e}");
            busy += 1;
        }
    }
    let refill = (started.elapsed().as_secs_f64() * per_peer as f64).ceil() as usize;
    let posts = calls.load(Ordering::SeqCst);
    assert!(
        posts <= per_peer + refill,
        "{posts} requests from one address"
    );
    assert!(busy >= shared * 2 - per_peer - refill, "{busy} refused");
    // Another client's good token is checked at once.
    let other: std::net::IpAddr = "198.51.100.9".parse()?;
    let id = auth
        .authenticate_from(Some("Bearer opaque-client"), None, Some(other))
        .await?;
    assert_eq!(id.display_name(), "introspection:okta:client:ci-app");
    // Two addresses of one IPv6 /64 share a budget; another /64 has its own.
    let v6 = |s: &str| -> std::net::IpAddr { s.parse().expect("v6") };
    let mut refused = 0;
    for n in 0..per_peer * 3 {
        let from = if n % 2 == 0 {
            v6("2001:db8:1:2::1")
        } else {
            v6("2001:db8:1:2::ffff")
        };
        let r = auth
            .authenticate_from(Some(&format!("Bearer v6-made-up-{n}")), None, Some(from))
            .await;
        if r.is_err_and(|e| e.http_status() == 503) {
            refused += 1;
        }
    }
    assert!(refused > 0, "one /64, one budget");
    let r = auth
        .authenticate_from(Some("Bearer v6-other-net"), None, Some(v6("2001:db8:9::1")))
        .await;
    assert!(
        r.is_err_and(|e| e.http_status() != 503),
        "another /64 is asked"
    );
    Ok(())
}

/// A flood of made-up tokens costs the provider at most the per-second bound;
/// past it, callers are told to come back (503), not that their token is bad.
#[tokio::test]
async fn introspection_requests_are_bounded_per_second() -> Result<()> {
    let (url, calls) = introspection_endpoint().await?;
    let auth = Arc::new(Authenticator::new(introspection_settings(&url, "s3cret")));
    let bound = manifold_policy::identity::MAX_INTROSPECTIONS_PER_SECOND as usize;
    let started = std::time::Instant::now();
    let mut flood = tokio::task::JoinSet::new();
    for n in 0..bound * 2 {
        let auth = auth.clone();
        flood.spawn(async move {
            auth.authenticate(Some(&format!("Bearer made-up-{n}")))
                .await
        });
    }
    let mut busy = 0;
    while let Some(r) = flood.join_next().await {
        let e = r?.expect_err("made up");
        if e.http_status() == 503 {
            assert!(e.to_string().contains("at most"), "{e}");
            busy += 1;
        }
    }
    // The bound refills one request per 1/bound s: allow for the time the flood took.
    let refill = (started.elapsed().as_secs_f64() * bound as f64).ceil() as usize;
    let posts = calls.load(Ordering::SeqCst);
    assert!(
        posts <= bound + refill,
        "{posts} requests for {} tokens",
        bound * 2
    );
    assert!(busy > 0, "never over the bound ({posts} requests)");
    Ok(())
}
