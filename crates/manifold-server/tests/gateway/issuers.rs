//! Principals that carry their source, end to end, from an attacker's side:
//! with two `[[auth.jwt]]` issuers, a partner identity provider's `alice` can
//! neither take corp `alice`'s session, nor pass corp's `subject:` rule, nor
//! spend corp `alice`'s rate limit, and the audit names each by its issuer; a
//! `subject:alice` that could name either is refused when the configuration
//! loads, with the qualified forms to write; an introspection endpoint that
//! fails costs one request per token and answers 503 (come back), not 401.
//!
//! The stand-in identity provider ([`Idp`]) is one HTTP server: a key set per
//! issuer at `/<issuer>/certs` (each issuer its own ES256 key) and an RFC 7662
//! endpoint at `/introspect` that counts what it is asked.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use http::StatusCode;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::observe::{audit_lines, Scratch};
use crate::{bounded, names_of, Setup};
use manifold_testkit::harness::{toml_string, TestGateway};

/// The audience every token here is for (`[auth] resource`).
pub(crate) const AUDIENCE: &str = "http://mcp.test/mcp";

/// One issuer's signing key.
struct Key {
    encoding: EncodingKey,
    jwk: Jwk,
}

/// The stand-in identity provider.
pub(crate) struct Idp {
    addr: std::net::SocketAddr,
    keys: HashMap<String, Key>,
    /// Requests to `/introspect`.
    pub introspections: Arc<AtomicUsize>,
}

impl Idp {
    /// Serves a key set for each of `issuers` (names, e.g. `corp`), and
    /// `/introspect`: `user-<name>` is active for the user `<name>` (given as
    /// `username`, as some providers do), `client-<id>` is a client's own
    /// token (`client_id`, no subject), `fail-…` gets HTTP 500, anything else
    /// is inactive.
    pub(crate) async fn start(issuers: &[&str]) -> Result<Idp> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let mut keys = HashMap::new();
        let mut sets = HashMap::new();
        for name in issuers {
            let pair = rcgen::KeyPair::generate()?;
            let encoding = EncodingKey::from_ec_der(&pair.serialize_der());
            let mut jwk = Jwk::from_encoding_key(&encoding, Algorithm::ES256)?;
            jwk.common.key_id = Some(format!("{name}-1"));
            let set = serde_json::to_string(&JwkSet {
                keys: vec![jwk.clone()],
            })?;
            sets.insert(format!("/{name}/certs"), set);
            keys.insert(name.to_string(), Key { encoding, jwk });
        }
        let introspections = Arc::new(AtomicUsize::new(0));
        let (count, sets) = (introspections.clone(), Arc::new(sets));
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let (count, sets) = (count.clone(), sets.clone());
                tokio::spawn(async move {
                    let mut buf = vec![0u8; 16 * 1024];
                    let n = s.read(&mut buf).await.unwrap_or(0);
                    let req = String::from_utf8_lossy(&buf[..n]).to_string();
                    let path = req.split_whitespace().nth(1).unwrap_or("").to_string();
                    let (status, body) = if let Some(set) = sets.get(&path) {
                        ("200 OK", set.clone())
                    } else if path == "/introspect" {
                        count.fetch_add(1, Ordering::SeqCst);
                        let token = req
                            .split("token=")
                            .nth(1)
                            .and_then(|t| t.split('&').next())
                            .unwrap_or_default();
                        introspection(token)
                    } else {
                        ("404 Not Found", "{}".to_string())
                    };
                    let resp = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = s.write_all(resp.as_bytes()).await;
                });
            }
        });
        Ok(Idp {
            addr,
            keys,
            introspections,
        })
    }

    /// `[[auth.jwt]]` for issuer `name` (named `name`).
    pub(crate) fn jwt_section(&self, name: &str) -> String {
        format!(
            "[[auth.jwt]]\nname = \"{name}\"\nissuer = \"https://{name}.test\"\njwks_url = {}\n\n",
            toml_string(&format!("http://{}/{name}/certs", self.addr))
        )
    }

    /// `[[auth.introspection]]` named `name`.
    pub(crate) fn introspection_section(&self, name: &str) -> String {
        format!(
            "[[auth.introspection]]\nname = \"{name}\"\nurl = {}\nclient_id = \"manifold\"\nclient_secret = \"s\"\n\n",
            toml_string(&format!("http://{}/introspect", self.addr))
        )
    }

    /// A token issuer `name` signs for `sub`.
    pub(crate) fn token(&self, name: &str, sub: &str) -> Result<String> {
        self.token_in(name, sub, &[])
    }

    /// A token issuer `name` signs for `sub`, carrying `groups`.
    pub(crate) fn token_in(&self, name: &str, sub: &str, groups: &[&str]) -> Result<String> {
        self.token_for(name, sub, groups, AUDIENCE)
    }

    /// A token issuer `name` signs for `sub` with the audience `aud`.
    pub(crate) fn token_for(
        &self,
        name: &str,
        sub: &str,
        groups: &[&str],
        aud: &str,
    ) -> Result<String> {
        self.token_expiring(name, sub, groups, aud, 600)
    }

    /// A token issuer `name` signs for `sub`, expiring in `secs` seconds.
    pub(crate) fn token_expiring(
        &self,
        name: &str,
        sub: &str,
        groups: &[&str],
        aud: &str,
        secs: u64,
    ) -> Result<String> {
        let key = self.keys.get(name).context("no such issuer")?;
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let mut h = Header::new(Algorithm::ES256);
        h.kid = key.jwk.common.key_id.clone();
        let claims = json!({"iss": format!("https://{name}.test"), "aud": aud,
            "sub": sub, "exp": now + secs, "scope": "mcp:tools", "groups": groups});
        Ok(jsonwebtoken::encode(&h, &claims, &key.encoding)?)
    }
}

/// The stand-in's RFC 7662 answer for `token`.
fn introspection(token: &str) -> (&'static str, String) {
    let active = |extra: Value| {
        let mut v = json!({"active": true, "aud": AUDIENCE, "token_type": "access_token"});
        if let (Some(m), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            m.extend(e.clone());
        }
        v.to_string()
    };
    if let Some(user) = token.strip_prefix("user-") {
        ("200 OK", active(json!({"username": user})))
    } else if let Some(id) = token.strip_prefix("client-") {
        ("200 OK", active(json!({"client_id": id})))
    } else if token.starts_with("fail-") {
        (
            "500 Internal Server Error",
            json!({"error": "server_error"}).to_string(),
        )
    } else {
        ("200 OK", json!({"active": false}).to_string())
    }
}

#[tokio::test]
async fn a_partner_idps_alice_is_not_corps_alice() -> Result<()> {
    bounded(async {
        let idp = Idp::start(&["corp", "partner"]).await?;
        let dir = Scratch::new("issuers")?;
        let audit = dir.0.join("audit.jsonl");
        let f = Setup {
            extra: format!(
                "[auth]\nresource = \"{AUDIENCE}\"\n\n{}{}\
                 [audit]\npath = {}\nfsync = \"always\"\n\n\
                 [[policy]]\nwho = [\"subject:corp:alice\"]\ntools = {{ allow = [\"local__*\"] }}\n\n\
                 [[policy]]\nwho = [\"*\"]\ntools = {{ allow = [\"remote__add\"] }}\n\n\
                 [[rate_limit]]\nwho = [\"*\"]\ntools = [\"remote__add\"]\nrate = \"2/m\"\n",
                idp.jwt_section("corp"),
                idp.jwt_section("partner"),
                toml_string(&audit.to_string_lossy()),
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        let corp = f.gw.client();
        corp.set_bearer(Some(&idp.token("corp", "alice")?));
        corp.initialize("2025-11-25", json!({})).await?;
        let r = corp.call_tool("local__echo", json!({"text": "mine"})).await?;
        assert_eq!(r.result()?["content"][0]["text"], "mine", "{r}");
        let session = corp.session_id().context("session id")?;

        // The partner's alice presents corp alice's session: unknown to her.
        let partner = f.gw.client();
        partner.set_bearer(Some(&idp.token("partner", "alice")?));
        partner.set_session_id(Some(&session));
        partner.set_protocol_version(Some("2025-11-25"));
        let r = partner
            .call_tool("local__echo", json!({"text": "stolen"}))
            .await?;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");

        // In a session of her own, corp's `subject:corp:alice` rule is not hers.
        partner.set_session_id(None);
        partner.initialize("2025-11-25", json!({})).await?;
        let names = names_of(&partner.list_all_tools().await?);
        assert_eq!(names, ["remote__add"], "{names:?}");
        let hidden = partner
            .call_tool("local__echo", json!({"text": "x"}))
            .await?;
        let unknown = partner
            .call_tool("local__no_such_tool", json!({"text": "x"}))
            .await?;
        assert_eq!(
            hidden.error()?["code"],
            unknown.error()?["code"],
            "{hidden}"
        );

        // Corp alice spends her rate limit; the partner's alice has her own.
        for n in 0..2 {
            corp.call_tool("remote__add", json!({"a": n, "b": 1}))
                .await?
                .result()?;
        }
        let limited = corp.call_tool("remote__add", json!({"a": 9, "b": 1})).await?;
        assert_eq!(limited.error()?["code"], -32060, "{limited}");
        let r = partner.call_tool("remote__add", json!({"a": 1, "b": 1})).await?;
        r.result()?;

        // The audit names each by her issuer.
        let lines = audit_lines(&audit)?;
        let principal = |text: &str| {
            lines
                .iter()
                .find(|l| l["arguments"]["text"] == text)
                .map(|l| l["principal"].clone())
        };
        assert_eq!(principal("mine"), Some(json!("jwt:corp:alice")));
        assert_eq!(principal("x"), Some(json!("jwt:partner:alice")));
        Ok(())
    })
    .await
}

/// A group is its issuer's: with two issuers a rule names whose group it
/// trusts, the partner's token carrying the same group name gets nothing from
/// it, and a bare `group:` (which either issuer could mint) is refused.
#[tokio::test]
async fn a_partner_idp_cannot_mint_corps_group() -> Result<()> {
    bounded(async {
        let idp = Idp::start(&["corp", "partner"]).await?;
        let sources = format!("{}{}", idp.jwt_section("corp"), idp.jwt_section("partner"));
        let extra = |who: &str| {
            format!(
                "[auth]\nresource = \"{AUDIENCE}\"\n\n{sources}\
                 [[policy]]\nwho = [\"{who}\"]\ntools = {{ allow = [\"local__*\"] }}\n\n\
                 [[policy]]\nwho = [\"*\"]\ntools = {{ allow = [\"remote__add\"] }}\n"
            )
        };
        let e = TestGateway::config(&format!(
            "{}[upstreams.demo]\ncommand = {}\n",
            extra("group:ops"),
            toml_string(crate::bin())
        ))
        .err()
        .context("a bare group with two issuers was accepted")?
        .to_string();
        for hint in ["policy[0].who", "`group:corp:ops`", "`group:partner:ops`"] {
            assert!(e.contains(hint), "{hint}: {e}");
        }
        let f = Setup {
            extra: extra("group:corp:ops"),
            ..Setup::default()
        }
        .start()
        .await?;
        let names = |issuer: &'static str| {
            let client = f.gw.client();
            let token = idp.token_in(issuer, "mallory", &["ops"]);
            async move {
                client.set_bearer(Some(&token?));
                client.initialize("2025-11-25", json!({})).await?;
                anyhow::Ok(names_of(&client.list_all_tools().await?))
            }
        };
        assert!(names("corp").await?.iter().any(|n| n == "local__echo"));
        assert_eq!(names("partner").await?, ["remote__add"]);
        Ok(())
    })
    .await
}

/// A virtual endpoint with its own `resource` is its own audience (RFC 8707):
/// a token got for it works there and nowhere else, and a token for the
/// gateway's resource is refused there — whichever was accepted first.
#[tokio::test]
async fn an_endpoints_own_resource_is_the_audience_its_tokens_must_name() -> Result<()> {
    bounded(async {
        const OPS: &str = "http://mcp.test/mcp/ops";
        let idp = Idp::start(&["corp"]).await?;
        let f = Setup {
            extra: format!(
                "[auth]\nresource = \"{AUDIENCE}\"\n\n{}\
                 [[endpoint]]\npath = \"/mcp/ops\"\nresource = \"{OPS}\"\n\n\
                 [[endpoint]]\npath = \"/mcp/ci\"\n",
                idp.jwt_section("corp")
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        let for_ops = idp.token_for("corp", "alice", &[], OPS)?;
        let for_gateway = idp.token("corp", "alice")?;
        let status = |path: &'static str, token: &str| {
            let c =
                manifold_testkit::harness::McpClient::new(format!("http://{}{path}", f.gw.addr()));
            c.set_bearer(Some(token));
            async move {
                let r = c
                    .request(
                        "initialize",
                        json!({"protocolVersion": "2025-11-25", "capabilities": {},
                               "clientInfo": {"name": "t", "version": "1"}}),
                    )
                    .await?;
                if r.status == StatusCode::UNAUTHORIZED {
                    let challenge = r
                        .headers
                        .get("www-authenticate")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    assert!(challenge.contains("invalid_token"), "{challenge}");
                }
                anyhow::Ok(r.status)
            }
        };
        // Each order, so a cached acceptance for one cannot answer the other.
        assert_eq!(status("/mcp/ops", &for_ops).await?, StatusCode::OK);
        assert_eq!(status("/mcp", &for_ops).await?, StatusCode::UNAUTHORIZED);
        assert_eq!(status("/mcp/ci", &for_ops).await?, StatusCode::UNAUTHORIZED);
        assert_eq!(status("/mcp", &for_gateway).await?, StatusCode::OK);
        assert_eq!(status("/mcp/ci", &for_gateway).await?, StatusCode::OK);
        assert_eq!(
            status("/mcp/ops", &for_gateway).await?,
            StatusCode::UNAUTHORIZED
        );
        Ok(())
    })
    .await
}

/// `subject:alice` with two identity sources could be either's `alice`: the
/// configuration is refused, saying how to qualify it; with one source it
/// keeps working, qualified by that source.
#[tokio::test]
async fn an_unqualified_subject_with_two_sources_is_refused() -> Result<()> {
    bounded(async {
        let idp = Idp::start(&["corp", "partner"]).await?;
        let config = |sources: &str, who: &str| {
            format!(
                "[auth]\nresource = \"{AUDIENCE}\"\n\n{sources}\
                 [[policy]]\nwho = [\"{who}\"]\ntools = {{ allow = [\"*\"] }}\n\n\
                 [upstreams.demo]\ncommand = {}\n",
                toml_string(crate::bin())
            )
        };
        let both = format!("{}{}", idp.jwt_section("corp"), idp.jwt_section("partner"));
        let e = TestGateway::config(&config(&both, "subject:alice"))
            .err()
            .context("an ambiguous subject was accepted")?
            .to_string();
        for hint in [
            "policy[0].who",
            "`subject:corp:alice`",
            "`subject:partner:alice`",
        ] {
            assert!(e.contains(hint), "{hint}: {e}");
        }
        // Also with a token source and an introspection source.
        let mixed = format!(
            "{}{}",
            idp.jwt_section("corp"),
            idp.introspection_section("okta")
        );
        let e = TestGateway::config(&config(&mixed, "subject:alice"))
            .err()
            .context("accepted")?
            .to_string();
        assert!(e.contains("`subject:okta:alice`"), "{e}");
        let ok = TestGateway::config(&config(&both, "subject:partner:alice"))?;
        assert_eq!(ok.policy[0].who, ["subject:partner:alice"]);
        // The admin plane's `who` is held to the same rule.
        let admin = |who: &str| {
            format!(
                "{}[admin]\nlisten = \"127.0.0.1:0\"\nwho = [\"{who}\"]\n",
                config(&both, "group:corp:ops")
            )
        };
        let e = TestGateway::config(&admin("subject:alice"))
            .err()
            .context("an ambiguous admin subject was accepted")?
            .to_string();
        assert!(
            e.contains("admin.who") && e.contains("`subject:corp:alice`"),
            "{e}"
        );
        let ok = TestGateway::config(&admin("subject:corp:alice"))?;
        assert_eq!(
            ok.admin.as_ref().map(|a| a.who.clone()),
            Some(vec!["subject:corp:alice".to_string()])
        );
        let one = TestGateway::config(&config(&idp.jwt_section("corp"), "subject:alice"))?;
        assert!(
            one.policy[0]
                .who
                .contains(&"subject:corp:alice".to_string()),
            "{:?}",
            one.policy[0].who
        );
        Ok(())
    })
    .await
}

/// An introspection endpoint that fails: the caller hears 503 with
/// `Retry-After` (the token was not found wanting), and retrying at once does
/// not reach the provider again. A client's own token (no `sub`) is served as
/// `client:<id>` of its source.
#[tokio::test]
async fn a_failing_introspection_endpoint_is_asked_once_and_answers_503() -> Result<()> {
    bounded(async {
        let idp = Idp::start(&[]).await?;
        let dir = Scratch::new("introspection")?;
        let audit = dir.0.join("audit.jsonl");
        let f = Setup {
            extra: format!(
                "[auth]\nresource = \"{AUDIENCE}\"\n\n{}\
                 [audit]\npath = {}\nfsync = \"always\"\n",
                idp.introspection_section("okta"),
                toml_string(&audit.to_string_lossy()),
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}))?;
        for _ in 0..3 {
            let r =
                f.gw.client()
                    .post_raw(body.clone(), &[("authorization", "Bearer fail-1")])
                    .await?;
            assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text());
            assert!(
                r.headers.contains_key(http::header::RETRY_AFTER),
                "{:?}",
                r.headers
            );
            assert!(r.text().contains("could not be checked"), "{}", r.text());
        }
        assert_eq!(idp.introspections.load(Ordering::SeqCst), 1, "asked once");

        let c = f.gw.client();
        c.set_bearer(Some("client-ci-app"));
        c.initialize("2025-11-25", json!({})).await?;
        c.call_tool("local__echo", json!({"text": "from a client"}))
            .await?
            .result()?;
        let lines = audit_lines(&audit)?;
        let rec = lines
            .iter()
            .find(|l| l["arguments"]["text"] == "from a client")
            .context("the client's record")?;
        assert_eq!(
            rec["principal"], "introspection:okta:client:ci-app",
            "{rec}"
        );
        Ok(())
    })
    .await
}
