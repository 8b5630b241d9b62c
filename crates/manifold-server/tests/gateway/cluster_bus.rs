//! The replicas' bus seen from the attacker's side: someone who can PUBLISH on
//! the deployment's Redis channel (with a plain Redis client) but does not hold
//! `[cluster] session_key`. A forged `answer` — unsigned, with a wrong MAC,
//! with a MAC under another key, or signed but too old or from the future — does
//! not answer another user's `[confirm]` question, and a captured genuine
//! message published again is not taken twice; each is counted in
//! `manifold_cluster_rejected_total`. Question ids are unguessable. Redis with
//! a password and a restricted ACL user works through the URL, a wrong password
//! is reported without the password, and `rediss://` is checked against
//! `redis_ca` (Debian's redis-server is built with TLS).

use std::time::Duration;

use anyhow::{Context, Result};
use futures_util::StreamExt;
use http::StatusCode;
use manifold_cluster::Keys;
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cluster_redis::{
    free_port, on, readyz, replica, replica_with, until_connected, Redis, KEY,
};
use crate::observe::Scratch;
use crate::{bin, bounded, text_of};
use manifold_testkit::harness::{toml_string, DemoHttp, TestGateway};

const CHANNEL: &str = "manifold";

/// What the audit log and the bus call a session: the first 8 bytes of the
/// SHA-256 of its id, in hex.
fn digest(session_id: &str) -> String {
    Sha256::digest(session_id.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn now_ms() -> u64 {
    manifold_cluster::now_ms()
}

/// `manifold_cluster_rejected_total{reason}` of `gw`.
pub(crate) async fn rejected(gw: &TestGateway, reason: &str) -> Result<u64> {
    let addr = gw
        .gateway()
        .bind_admin()
        .await?
        .context("no admin listener")?;
    let (status, text) = crate::observe::admin_request(addr, "GET", "/metrics").await?;
    anyhow::ensure!(status == 200, "/metrics answered {status}: {text}");
    let series = format!("manifold_cluster_rejected_total{{reason=\"{reason}\"}}");
    let value = crate::observe::sample(&text, &series)
        .with_context(|| format!("no {series} in /metrics"))?;
    Ok(value as u64)
}

/// Waits until `gw` has refused `n` messages for `reason`.
async fn until_rejected(gw: &TestGateway, reason: &str, n: u64) -> Result<()> {
    let what = format!("{n} messages rejected as {reason}");
    crate::eventually(&what, Duration::from_secs(10), || async {
        Ok((rejected(gw, reason).await? >= n).then_some(()))
    })
    .await
}

/// The attacker's plain Redis client: PUBLISH on the deployment's channel.
async fn publish(redis_url: &str, payload: &[u8]) -> Result<i64> {
    let client = redis::Client::open(redis_url)?;
    let mut conn = client.get_multiplexed_async_connection().await?;
    Ok(redis::cmd("PUBLISH")
        .arg(CHANNEL)
        .arg(payload)
        .query_async(&mut conn)
        .await?)
}

/// Checks a server→client request id: `mf-`, the replica's 8 hex digits,
/// then 128 random bits in base64url.
fn assert_unguessable(id: &str) {
    let parts: Vec<&str> = id.splitn(3, '-').collect();
    assert_eq!(parts.len(), 3, "{id}");
    assert_eq!(parts[0], "mf", "{id}");
    assert!(
        parts[1].len() == 8 && parts[1].bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    assert_eq!(parts[2].len(), 22, "not 16 bytes of base64url: {id}");
    assert!(
        parts[2]
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'),
        "{id}"
    );
}

#[tokio::test]
async fn forged_answers_on_the_bus_do_not_answer_another_users_question() -> Result<()> {
    bounded(async {
        let redis = Redis::start().await?;
        let remote = DemoHttp::spawn_bin(bin(), &[]).await?;
        let gw = replica(
            &redis.url(),
            &remote.url,
            "[confirm]\ntools = [\"*__add\"]\n",
        )
        .await?;
        let victim = gw.session("2025-11-25", json!({"elicitation": {}})).await?;
        let session = victim.session_id().context("session id")?;
        let mut stream = victim
            .send_streaming(&json!({
                "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                "params": {"name": "local__add", "arguments": {"a": 40, "b": 2}}
            }))
            .await?;
        let question = stream.expect_next().await?;
        assert_eq!(question["method"], "elicitation/create", "{question}");
        let qid = question["id"].as_str().context("a string id")?.to_string();
        assert_unguessable(&qid);

        // The attacker knows the session's digest (it is in the audit log) and,
        // for this test, even the question's id.
        let forged = |ts: u64| {
            json!({
                "from": "attacker", "ts": ts, "seq": 1, "kind": "answer",
                "session": digest(&session), "id": qid,
                "outcome": {"result": {"action": "accept", "content": {}}}
            })
            .to_string()
        };
        let body = forged(now_ms());
        let sealed = |keys: Keys, body: &str| keys.seal(CHANNEL, body).expect("sealed");
        let attackers = || Keys::new("the-attackers-own-key-0123456789abcdef", &[]);
        let attempts: Vec<(&str, Vec<u8>)> = vec![
            // What worked before the bus was signed.
            ("unsigned", body.clone().into_bytes()),
            (
                "bad_mac",
                format!("mb1.{}.{body}", "0".repeat(64)).into_bytes(),
            ),
            ("bad_mac", [&b"mb2."[..], &[0u8; 64][..]].concat()),
            // A MAC, or a seal, under a key of the attacker's choosing.
            ("bad_mac", attackers().sign(CHANNEL, &body).into_bytes()),
            ("bad_mac", sealed(attackers(), &body)),
            // Sealed with the deployment's key (a captured message), but sent
            // longer ago than the window, or claiming a time ahead.
            (
                "expired",
                sealed(Keys::new(KEY, &[]), &forged(now_ms() - 60_000)),
            ),
            (
                "future",
                sealed(Keys::new(KEY, &[]), &forged(now_ms() + 60_000)),
            ),
        ];
        let mut want = std::collections::HashMap::<&str, u64>::new();
        for (reason, payload) in &attempts {
            let receivers = publish(&redis.url(), payload).await?;
            assert_eq!(receivers, 1, "the replica listens on the channel");
            *want.entry(reason).or_default() += 1;
            until_rejected(&gw, reason, want[reason]).await?;
        }
        // The question is still open: the victim declines it, and the tool
        // was never called.
        let ack = victim
            .respond(json!(qid), json!({"action": "decline"}))
            .await?;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
        let response = stream.expect_next().await?;
        let text = text_of(&response["result"])?;
        assert!(
            text.contains("declined") && text.contains("not called"),
            "a forged answer was taken: {response}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_captured_message_published_again_is_not_taken_twice() -> Result<()> {
    bounded(async {
        let redis = Redis::start().await?;
        let remote = DemoHttp::spawn_bin(bin(), &[]).await?;
        let a = replica(&redis.url(), &remote.url, "").await?;
        let b = replica(&redis.url(), &remote.url, "").await?;
        let first = a.session("2025-11-25", json!({})).await?;
        let id = first.session_id().context("session id")?;
        let (on_a, on_b) = (on(&a, &id), on(&b, &id));

        // The attacker listens on the channel.
        let client = redis::Client::open(redis.url())?;
        let mut sub = client.get_async_pubsub().await?;
        sub.subscribe(CHANNEL).await?;
        let mut heard = sub.into_on_message();

        let sleep = |ms: u64| {
            json!({
                "jsonrpc": "2.0", "id": "long", "method": "tools/call",
                "params": {"name": "remote__sleep", "arguments": {"ms": ms},
                           "_meta": {"progressToken": "p"}}
            })
        };
        // A call on A, cancelled through B: B publishes the cancellation.
        let mut stream = on_a.send_streaming(&sleep(20_000)).await?;
        stream.expect_next().await?;
        let ack = on_b
            .notify("notifications/cancelled", json!({"requestId": "long"}))
            .await?;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
        assert!(stream.next().await?.is_none(), "the call was not cancelled");
        // The attacker cannot read what passes; the test, holding the
        // deployment's key, finds the cancellation among it.
        let keys = Keys::new(KEY, &[]);
        let captured = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(m) = heard.next().await {
                let payload = m.get_payload_bytes().to_vec();
                let opened = keys.open(CHANNEL, &payload).map(|b| b.into_owned());
                if opened.is_ok_and(|b| String::from_utf8_lossy(&b).contains(r#""kind":"cancel""#))
                {
                    return Some(payload);
                }
            }
            None
        })
        .await?
        .context("no cancellation heard on the channel")?;
        let text = String::from_utf8_lossy(&captured);
        assert!(captured.starts_with(b"mb2."), "not sealed: {text}");
        assert!(
            !text.contains("cancel"),
            "the message is readable on the bus: {text}"
        );
        let opened = keys.open(CHANNEL, &captured).expect("opens").into_owned();
        let opened = String::from_utf8_lossy(&opened);
        assert!(
            !opened.contains(&id),
            "the session id is on the bus: {opened}"
        );

        // The client uses the same request id again; the attacker publishes
        // the captured cancellation while that call runs.
        let before = rejected(&a, "replayed").await?;
        let mut stream = on_a.send_streaming(&sleep(1_500)).await?;
        let progress = stream.expect_next().await?;
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        assert!(publish(&redis.url(), &captured).await? >= 2);
        until_rejected(&a, "replayed", before + 1).await?;
        let answer = stream.expect_next().await?;
        assert_eq!(
            text_of(&answer["result"])?,
            "slept",
            "the replayed cancellation was taken: {answer}"
        );
        Ok(())
    })
    .await
}

/// Relays work between `a` and `b`: a sampling request made during a call on
/// `a` is answered through `b`.
async fn a_relay_works(a: &TestGateway, b: &TestGateway) -> Result<()> {
    let first = a.session("2025-11-25", json!({"sampling": {}})).await?;
    let id = first.session_id().context("session id")?;
    let mut stream = on(a, &id)
        .request_streaming(
            "tools/call",
            json!({"name": "remote__sample", "arguments": {"prompt": "hi"}}),
        )
        .await?;
    let asked = stream.expect_next().await?;
    assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
    assert_unguessable(asked["id"].as_str().context("a string id")?);
    let ack = on(b, &id)
        .respond(
            asked["id"].clone(),
            json!({"role": "assistant", "content": {"type": "text", "text": "via B"}, "model": "m"}),
        )
        .await?;
    assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
    let answer = stream.expect_next().await?;
    assert_eq!(text_of(&answer["result"])?, "sampled: via B", "{answer}");
    Ok(())
}

/// Waits until the replica's bus, disconnected, reports an error containing
/// one of `want`: `/readyz`'s whole body.
async fn until_error(gw: &TestGateway, want: &[&str]) -> Result<String> {
    let what = format!("the bus reporting one of {want:?}");
    crate::eventually(&what, Duration::from_secs(10), || async {
        let (_, body) = readyz(gw).await?;
        let redis = &body["cluster"]["redis"];
        assert_eq!(redis["connected"], false, "{body}");
        let error = redis["last_error"].as_str().unwrap_or_default();
        Ok(want
            .iter()
            .any(|w| error.contains(w))
            .then(|| body.to_string()))
    })
    .await
}

/// The ACL docs/deploy.md recommends for the gateway's user: its channel, its
/// keys, the commands the bus sends, those the rate script runs and those of
/// the shared logs (`shared_log`).
const GATEWAY_ACL: &str = "resetchannels &manifold resetkeys ~manifold:* -@all +publish +subscribe +unsubscribe +ping +evalsha +eval +script|load +time +get +set +lrange +lindex +rpush +ltrim";

/// A Redis whose default user's password is `default-password-0123` and
/// whose user `manifold` (password `acl-password-4567`) has [`GATEWAY_ACL`];
/// its port.
pub(crate) async fn redis_with_acl() -> Result<(Redis, String)> {
    let mut args: Vec<String> = ["--requirepass", "default-password-0123", "--user"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    // One argument per word: redis-server joins them into the `user` line.
    args.extend(
        format!("manifold on >acl-password-4567 {GATEWAY_ACL}")
            .split_whitespace()
            .map(String::from),
    );
    let redis = Redis::start_with(&args).await?;
    let port = redis
        .url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .to_string();
    Ok((redis, port))
}

#[tokio::test]
async fn redis_with_a_password_or_an_acl_user_and_a_wrong_password_reported_without_it(
) -> Result<()> {
    bounded(async {
        // What is tested is what the operator is told to configure.
        let deploy = include_str!("../../../../docs/deploy.md");
        assert!(deploy.contains(GATEWAY_ACL), "docs/deploy.md's ACL is not GATEWAY_ACL");
        let (_redis, port) = redis_with_acl().await?;
        let remote = DemoHttp::spawn_bin(bin(), &[]).await?;
        let limit =
            "[[rate_limit]]\nwho = [\"*\"]\ntools = [\"local__echo\"]\nrate = \"100/m\"\nkey = \"global\"\n";
        let a = replica(
            &format!("redis://:default-password-0123@127.0.0.1:{port}"),
            &remote.url,
            limit,
        )
        .await?;
        let b = replica(
            &format!("redis://manifold:acl-password-4567@127.0.0.1:{port}"),
            &remote.url,
            limit,
        )
        .await?;
        a_relay_works(&a, &b).await?;
        a_relay_works(&b, &a).await?;
        // The restricted user runs the shared rate script too (a refusal by
        // Redis would be a warning and a local decision, so look at Redis).
        let session = b.session("2025-11-25", json!({})).await?;
        let r = session.call_tool("local__echo", json!({"text": "x"})).await?;
        assert_eq!(text_of(r.result()?)?, "x", "{r}");
        let client = redis::Client::open(format!(
            "redis://:default-password-0123@127.0.0.1:{port}"
        ))?;
        let mut conn = client.get_multiplexed_async_connection().await?;
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg("manifold:rl:*")
            .query_async(&mut conn)
            .await?;
        assert!(!keys.is_empty(), "no shared bucket in Redis");

        // A wrong password: the bus is down, says why, never says the password.
        for url in [
            format!("redis://:wrong-password-89ab@127.0.0.1:{port}"),
            format!("redis://manifold:wrong-password-89ab@127.0.0.1:{port}"),
            format!("redis://127.0.0.1:{port}"),
        ] {
            let c = replica_with(
                &format!("redis = {}", toml_string(&url)),
                &remote.url,
                "",
            )
            .await?;
            let body = until_error(&c, &["WRONGPASS", "NOAUTH", "uthentication"]).await?;
            assert!(!body.contains("wrong-password"), "{body}");
        }
        Ok(())
    })
    .await
}

/// A CA and a server certificate for 127.0.0.1 it signed, as PEM files in
/// `dir`: (ca, cert, key).
fn pki(dir: &std::path::Path, name: &str) -> Result<[std::path::PathBuf; 3]> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.distinguished_name
        .push(DnType::CommonName, format!("{name} CA"));
    let ca_key = KeyPair::generate()?;
    let ca = p.self_signed(&ca_key)?;
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_string()])?;
    let key = KeyPair::generate()?;
    let cert = leaf.signed_by(&key, &ca, &ca_key)?;
    let files = [
        dir.join(format!("{name}-ca.pem")),
        dir.join(format!("{name}-cert.pem")),
        dir.join(format!("{name}-key.pem")),
    ];
    std::fs::write(&files[0], ca.pem())?;
    std::fs::write(&files[1], cert.pem())?;
    std::fs::write(&files[2], key.serialize_pem())?;
    Ok(files)
}

#[tokio::test]
async fn rediss_is_checked_against_the_configured_ca() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("redis-tls")?;
        let [ca, cert, key] = pki(&dir.0, "deployment")?;
        let [other_ca, _, _] = pki(&dir.0, "other")?;
        let tls_port = free_port()?;
        let path = |p: &std::path::Path| p.to_string_lossy().into_owned();
        let _redis = Redis::start_with(&[
            "--tls-port".into(),
            tls_port.to_string(),
            "--tls-cert-file".into(),
            path(&cert),
            "--tls-key-file".into(),
            path(&key),
            "--tls-auth-clients".into(),
            "no".into(),
            "--requirepass".into(),
            "tls-password-0123".into(),
        ])
        .await?;
        let remote = DemoHttp::spawn_bin(bin(), &[]).await?;
        let url = format!("rediss://:tls-password-0123@127.0.0.1:{tls_port}");
        let cluster = |ca: &std::path::Path| {
            format!(
                "redis = {}\nredis_ca = {}",
                toml_string(&url),
                toml_string(&path(ca))
            )
        };
        let mut replicas = Vec::new();
        for _ in 0..2 {
            let gw = replica_with(&cluster(&ca), &remote.url, "").await?;
            until_connected(&gw, true, Duration::from_secs(10)).await?;
            replicas.push(gw);
        }
        a_relay_works(&replicas[0], &replicas[1]).await?;

        // A certificate from another CA, or the web's roots: refused.
        let wrong = replica_with(&cluster(&other_ca), &remote.url, "").await?;
        until_error(&wrong, &["certificate"]).await?;
        let web = replica_with(&format!("redis = {}", toml_string(&url)), &remote.url, "").await?;
        until_error(&web, &["certificate"]).await?;
        Ok(())
    })
    .await
}
