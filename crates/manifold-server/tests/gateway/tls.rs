//! HTTPS on the listener (`[server.tls]`) with certificates made here: a client
//! that trusts the CA is served; with `client_ca`, a client certificate is
//! required and its typed name is the principal on audit records
//! (`cert:cn:alice`); without one the handshake fails; with
//! `require_client_cert = false` a client without one authenticates by
//! `[auth]`; a certificate's CN is neither a token subject nor a SAN; a
//! replaced certificate is served to new connections without a restart, and a
//! certificate `client_crl` revokes is refused at the handshake once the list
//! is renewed.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use rcgen::{
    BasicConstraints, CertificateParams, CertificateRevocationListParams, DistinguishedName,
    DnType, IsCa, KeyIdMethod, KeyPair, RevocationReason, RevokedCertParams, SerialNumber,
};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::observe::{audit_lines, Scratch};
use crate::{bin, bounded};
use manifold_testkit::harness::{toml_string, TestGateway};

/// A CA and what it signs.
struct Pki {
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

impl Pki {
    fn new() -> Result<Pki> {
        let mut p = CertificateParams::new(Vec::<String>::new())?;
        p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        p.distinguished_name
            .push(DnType::CommonName, "manifold test CA");
        let ca_key = KeyPair::generate()?;
        let ca = p.self_signed(&ca_key)?;
        Ok(Pki { ca, ca_key })
    }

    /// A leaf for `names` (SANs) with common name `cn`: (cert PEM, key PEM).
    fn leaf(&self, cn: &str, names: &[&str]) -> Result<(String, String)> {
        self.leaf_with(Some(cn), names, None)
    }

    /// A leaf with common name `cn` (none: a subject without one) and
    /// serial number `serial` (none: random).
    fn leaf_with(
        &self,
        cn: Option<&str>,
        names: &[&str],
        serial: Option<u64>,
    ) -> Result<(String, String)> {
        let mut p =
            CertificateParams::new(names.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
        p.distinguished_name = DistinguishedName::new();
        if let Some(cn) = cn {
            p.distinguished_name.push(DnType::CommonName, cn);
        }
        p.serial_number = serial.map(SerialNumber::from);
        let key = KeyPair::generate()?;
        let cert = p.signed_by(&key, &self.ca, &self.ca_key)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// A revocation list (PEM), number `number`, revoking `serials`.
    fn crl(&self, number: u64, serials: &[u64]) -> Result<String> {
        self.crl_until(number, serials, 2100)
    }

    /// [`Pki::crl`] with its `nextUpdate` on `year`-01-01.
    fn crl_until(&self, number: u64, serials: &[u64], year: i32) -> Result<String> {
        let params = CertificateRevocationListParams {
            this_update: rcgen::date_time_ymd(2024, 1, 1),
            next_update: rcgen::date_time_ymd(year, 1, 1),
            crl_number: SerialNumber::from(number),
            issuing_distribution_point: None,
            revoked_certs: serials
                .iter()
                .map(|s| RevokedCertParams {
                    serial_number: SerialNumber::from(*s),
                    revocation_time: rcgen::date_time_ymd(2024, 1, 1),
                    reason_code: Some(RevocationReason::KeyCompromise),
                    invalidity_date: None,
                })
                .collect(),
            key_identifier_method: KeyIdMethod::Sha256,
        };
        Ok(params.signed_by(&self.ca, &self.ca_key)?.pem()?)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

/// A client trusting `ca_pem`, presenting `client` (cert, key PEM) if given.
fn client_config(ca_pem: &str, client: Option<&(String, String)>) -> Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(ca_pem.as_bytes())?)?;
    let b = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    Ok(match client {
        None => b.with_no_client_auth(),
        Some((cert, key)) => b.with_client_auth_cert(
            vec![CertificateDer::from_pem_slice(cert.as_bytes())?],
            PrivateKeyDer::from_pem_slice(key.as_bytes())?,
        )?,
    })
}

/// One HTTP/1.1 POST of `body` over TLS: the status, the body, and the
/// server certificate's DER.
async fn post(
    addr: std::net::SocketAddr,
    config: rustls::ClientConfig,
    body: &Value,
    headers: &[(&str, &str)],
) -> Result<(u16, Value, Vec<u8>)> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let mut tls = connector
        .connect(ServerName::try_from("localhost")?, tcp)
        .await?;
    let server_cert = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.as_ref().to_vec())
        .unwrap_or_default();
    let body = body.to_string();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: localhost:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        addr.port(),
        body.len()
    );
    tls.write_all(req.as_bytes()).await?;
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .context("status line")?;
    let json = text
        .split_once("\r\n\r\n")
        .and_then(|(_, b)| serde_json::from_str(b).ok())
        .unwrap_or(Value::Null);
    Ok((status, json, server_cert))
}

/// The headers a 2026-07-28 `tools/call` of `demo__echo` carries.
const STATELESS_CALL: &[(&str, &str)] = &[
    ("MCP-Protocol-Version", "2026-07-28"),
    ("Mcp-Method", "tools/call"),
    ("Mcp-Name", "demo__echo"),
];

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "tls", "version": "0"}}})
}

fn write(dir: &Path, name: &str, text: &str) -> Result<String> {
    let p = dir.join(name);
    std::fs::write(&p, text)?;
    Ok(toml_string(&p.to_string_lossy()))
}

#[tokio::test]
async fn client_certificates_name_the_principal_and_certificates_reload() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("tls")?;
        let pki = Pki::new()?;
        let ca_pem = pki.ca.pem();
        let (cert, key) = pki.leaf("gateway", &["localhost", "127.0.0.1"])?;
        let alice = pki.leaf("alice", &[])?;
        let audit = dir.0.join("audit.jsonl");
        let gw = TestGateway::start(&format!(
            "[server.tls]\ncert = {}\nkey = {}\nclient_ca = {}\n\n\
             [audit]\npath = {}\nfsync = \"always\"\n\n\
             [upstreams.demo]\ncommand = {}\n",
            write(&dir.0, "cert.pem", &cert)?,
            write(&dir.0, "key.pem", &key)?,
            write(&dir.0, "ca.pem", &ca_pem)?,
            toml_string(&audit.to_string_lossy()),
            toml_string(bin()),
        ))
        .await?;

        // With Alice's certificate: served, and her calls are audited as hers.
        let (status, reply, first_cert) = post(
            gw.addr(),
            client_config(&ca_pem, Some(&alice))?,
            &initialize(),
            &[],
        )
        .await?;
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["result"]["serverInfo"]["name"], "manifold", "{reply}");
        // A 2026-07-28 call (one connection, no session): audited as Alice's.
        let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "demo__echo", "arguments": {"text": "over tls"},
            "_meta": manifold_testkit::harness::stateless_meta(json!({}))}});
        let (status, reply, _) = post(
            gw.addr(),
            client_config(&ca_pem, Some(&alice))?,
            &call,
            STATELESS_CALL,
        )
        .await?;
        assert_eq!(status, 200, "{reply}");
        assert_eq!(reply["result"]["content"][0]["text"], "over tls", "{reply}");
        // Without a certificate: no TLS session at all.
        let refused = post(gw.addr(), client_config(&ca_pem, None)?, &initialize(), &[]).await;
        assert!(
            refused.is_err(),
            "served without a client certificate: {refused:?}"
        );
        // A certificate from another CA: refused too.
        let other = Pki::new()?.leaf("mallory", &[])?;
        let refused = post(
            gw.addr(),
            client_config(&ca_pem, Some(&other))?,
            &initialize(),
            &[],
        )
        .await;
        assert!(refused.is_err(), "served with a foreign certificate");

        // Replace the server certificate: new connections get the new one.
        let (cert2, key2) = pki.leaf("gateway-renewed", &["localhost", "127.0.0.1"])?;
        write(&dir.0, "key.pem", &key2)?;
        write(&dir.0, "cert.pem", &cert2)?;
        crate::eventually(
            "the renewed certificate served",
            Duration::from_secs(20),
            || async {
                let (status, _, served) = post(
                    gw.addr(),
                    client_config(&ca_pem, Some(&alice))?,
                    &initialize(),
                    &[],
                )
                .await?;
                assert_eq!(status, 200);
                Ok((served != first_cert).then_some(()))
            },
        )
        .await?;
        let lines = audit_lines(&audit)?;
        let rec = lines
            .iter()
            .find(|l| l["arguments"]["text"] == "over tls")
            .context("the call's record")?;
        assert_eq!(rec["principal"], "cert:cn:alice", "{rec}");
        Ok(())
    })
    .await
}

/// With `require_client_cert = false`, a client without a certificate is not
/// refused by TLS but must authenticate by `[auth]`.
#[tokio::test]
async fn an_optional_client_certificate_leaves_the_rest_to_auth() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("tls-optional")?;
        let pki = Pki::new()?;
        let ca_pem = pki.ca.pem();
        let (cert, key) = pki.leaf("gateway", &["localhost", "127.0.0.1"])?;
        let key_text = "tls-optional-key-0123456789";
        let gw = TestGateway::start(&format!(
            "[server.tls]\ncert = {}\nkey = {}\nclient_ca = {}\nrequire_client_cert = false\n\n\
             [[auth.api_keys]]\nname = \"ci\"\nhash = \"{}\"\n\n[upstreams.demo]\ncommand = {}\n",
            write(&dir.0, "cert.pem", &cert)?,
            write(&dir.0, "key.pem", &key)?,
            write(&dir.0, "ca.pem", &ca_pem)?,
            manifold_policy::hash_key(key_text),
            toml_string(bin()),
        ))
        .await?;
        let anonymous = client_config(&ca_pem, None)?;
        let (status, reply, _) = post(gw.addr(), anonymous.clone(), &initialize(), &[]).await?;
        assert_eq!(status, 401, "{reply}");
        let bearer = format!("Bearer {key_text}");
        let (status, reply, _) = post(
            gw.addr(),
            anonymous,
            &initialize(),
            &[("Authorization", &bearer)],
        )
        .await?;
        assert_eq!(status, 200, "{reply}");
        let bob = pki.leaf("bob", &[])?;
        let (status, reply, _) = post(
            gw.addr(),
            client_config(&ca_pem, Some(&bob))?,
            &initialize(),
            &[],
        )
        .await?;
        assert_eq!(status, 200, "a certificate is credentials enough: {reply}");
        Ok(())
    })
    .await
}

/// A 2026-07-28 `tools/call` of `tool` over TLS (one connection): the status
/// and the reply.
async fn call(
    addr: std::net::SocketAddr,
    config: rustls::ClientConfig,
    tool: &str,
    arguments: Value,
    auth: Option<&str>,
) -> Result<(u16, Value)> {
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": tool, "arguments": arguments,
        "_meta": manifold_testkit::harness::stateless_meta(json!({}))}});
    let bearer = auth.map(|t| format!("Bearer {t}"));
    let mut headers = vec![
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", tool),
    ];
    if let Some(b) = &bearer {
        headers.push(("Authorization", b.as_str()));
    }
    let (status, reply, _) = post(addr, config, &call, &headers).await?;
    Ok((status, reply))
}

/// Once principals carry their source, a client certificate with the CN
/// `alice` is not the token subject `alice` of `subject:okta:alice`, and a
/// certificate whose only name is the DNS name `bob` is not `cert:cn:bob`.
#[tokio::test]
async fn a_certificate_is_neither_a_token_subject_nor_its_san_a_cn() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("tls-principals")?;
        let pki = Pki::new()?;
        let ca_pem = pki.ca.pem();
        let (cert, key) = pki.leaf("gateway", &["localhost", "127.0.0.1"])?;
        let idp = crate::issuers::Idp::start(&[]).await?;
        let gw = TestGateway::start(&format!(
            "[server.tls]\ncert = {}\nkey = {}\nclient_ca = {}\nrequire_client_cert = false\n\n\
             [auth]\nresource = \"{}\"\n\n{}\
             [[policy]]\nwho = [\"subject:okta:alice\"]\ntools = {{ allow = [\"demo__echo\"] }}\n\n\
             [[policy]]\nwho = [\"cert:cn:bob\"]\ntools = {{ allow = [\"demo__add\"] }}\n\n\
             [upstreams.demo]\ncommand = {}\n",
            write(&dir.0, "cert.pem", &cert)?,
            write(&dir.0, "key.pem", &key)?,
            write(&dir.0, "ca.pem", &ca_pem)?,
            crate::issuers::AUDIENCE,
            idp.introspection_section("okta"),
            toml_string(bin()),
        ))
        .await?;
        let plain = client_config(&ca_pem, None)?;
        let echo = json!({"text": "hi"});
        // The token user `alice` (an introspection `username`): her rule applies.
        let (status, reply) = call(
            gw.addr(),
            plain.clone(),
            "demo__echo",
            echo.clone(),
            Some("user-alice"),
        )
        .await?;
        assert_eq!(
            (status, &reply["result"]["content"][0]["text"]),
            (200, &json!("hi")),
            "{reply}"
        );
        // A certificate with the CN `alice`: not her.
        let cn_alice = client_config(&ca_pem, Some(&pki.leaf("alice", &[])?))?;
        let (_, reply) = call(
            gw.addr(),
            cn_alice.clone(),
            "demo__echo",
            echo.clone(),
            None,
        )
        .await?;
        // Hidden: answered exactly as a tool that does not exist.
        let (_, unknown) = call(gw.addr(), cn_alice, "demo__nope", echo.clone(), None).await?;
        assert_eq!(unknown["error"]["code"], -32602, "{unknown}");
        assert_eq!(
            reply["error"]["code"], unknown["error"]["code"],
            "a CN passed for a token subject: {reply}"
        );
        // The CN `bob` is `cert:cn:bob`; a certificate naming `bob` only as a DNS name is not.
        let add = json!({"a": 1, "b": 2});
        let cn_bob = client_config(&ca_pem, Some(&pki.leaf("bob", &[])?))?;
        let (_, reply) = call(gw.addr(), cn_bob, "demo__add", add.clone(), None).await?;
        assert!(reply.get("result").is_some(), "{reply}");
        let san_bob = client_config(&ca_pem, Some(&pki.leaf_with(None, &["bob"], None)?))?;
        let (_, reply) = call(gw.addr(), san_bob, "demo__add", add, None).await?;
        assert_eq!(
            reply["error"]["code"], -32602,
            "a SAN passed for a CN: {reply}"
        );
        Ok(())
    })
    .await
}

/// `client_crl`: a certificate the list revokes is refused at the handshake;
/// a renewed list is read without a restart, like the certificates.
#[tokio::test]
async fn a_revoked_client_certificate_is_refused_at_the_handshake() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("tls-crl")?;
        let pki = Pki::new()?;
        let ca_pem = pki.ca.pem();
        let (cert, key) = pki.leaf("gateway", &["localhost", "127.0.0.1"])?;
        let alice = pki.leaf_with(Some("alice"), &[], Some(1001))?;
        let mallory = pki.leaf_with(Some("mallory"), &[], Some(6666))?;
        let stolen = pki.leaf_with(Some("carol"), &[], Some(7777))?;
        let gw = TestGateway::start(&format!(
            "[server.tls]\ncert = {}\nkey = {}\nclient_ca = {}\nclient_crl = [{}]\n\n\
             [upstreams.demo]\ncommand = {}\n",
            write(&dir.0, "cert.pem", &cert)?,
            write(&dir.0, "key.pem", &key)?,
            write(&dir.0, "ca.pem", &ca_pem)?,
            write(&dir.0, "crl.pem", &pki.crl(1, &[6666])?)?,
            toml_string(bin()),
        ))
        .await?;
        let hello = |who: &(String, String)| -> Result<rustls::ClientConfig> {
            client_config(&ca_pem, Some(who))
        };
        let (status, reply, _) = post(gw.addr(), hello(&alice)?, &initialize(), &[]).await?;
        assert_eq!(status, 200, "{reply}");
        let refused = post(gw.addr(), hello(&mallory)?, &initialize(), &[]).await;
        assert!(
            refused.is_err(),
            "a revoked certificate was served: {refused:?}"
        );
        // Carol's key leaks; the CA revokes her certificate and the list is renewed.
        post(gw.addr(), hello(&stolen)?, &initialize(), &[]).await?;
        write(&dir.0, "crl.pem", &pki.crl(2, &[6666, 7777])?)?;
        let applied = "the renewed revocation list applied";
        crate::eventually(applied, Duration::from_secs(20), || async {
            let refused = post(gw.addr(), hello(&stolen)?, &initialize(), &[]).await.is_err();
            Ok(refused.then_some(()))
        })
        .await?;
        let (status, _, _) = post(gw.addr(), hello(&alice)?, &initialize(), &[]).await?;
        assert_eq!(
            status, 200,
            "a certificate the list does not name is still served"
        );
        // A list past its nextUpdate is stale: what it does not name may have
        // been revoked since, so nothing of its issuer is served until it is
        // renewed.
        write(&dir.0, "crl.pem", &pki.crl_until(3, &[6666, 7777], 2025)?)?;
        crate::eventually("the stale list refuses", Duration::from_secs(20), || async {
            let refused = post(gw.addr(), hello(&alice)?, &initialize(), &[]).await.is_err();
            Ok(refused.then_some(()))
        })
        .await?;
        write(&dir.0, "crl.pem", &pki.crl(4, &[6666, 7777])?)?;
        crate::eventually("the renewed list serves", Duration::from_secs(20), || async {
            let served = post(gw.addr(), hello(&alice)?, &initialize(), &[]).await.is_ok();
            Ok(served.then_some(()))
        })
        .await?;
        // A list means nothing without the CA whose certificates it revokes.
        let e = TestGateway::config(&format!(
            "[server.tls]\ncert = {}\nkey = {}\nclient_crl = {}\n\n[upstreams.demo]\ncommand = {}\n",
            write(&dir.0, "cert.pem", &cert)?,
            write(&dir.0, "key.pem", &key)?,
            write(&dir.0, "crl-alone.pem", &pki.crl(3, &[])?)?,
            toml_string(bin()),
        ))
        .err()
        .context("client_crl without client_ca was accepted")?;
        assert!(e.to_string().contains("client_crl"), "{e}");
        Ok(())
    })
    .await
}

/// A TLS front for `backend` (plain TCP) on 127.0.0.1, requiring a client
/// certificate from `client_ca`: an HTTPS upstream with mTLS. Its port.
async fn tls_proxy(
    cert: &(String, String),
    client_ca: &str,
    backend: std::net::SocketAddr,
) -> Result<u16> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(CertificateDer::from_pem_slice(client_ca.as_bytes())?)?;
    let verifier =
        rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
            .build()?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![CertificateDer::from_pem_slice(cert.0.as_bytes())?],
            PrivateKeyDer::from_pem_slice(cert.1.as_bytes())?,
        )?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let Ok(mut plain) = tokio::net::TcpStream::connect(backend).await else {
                    return;
                };
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
            });
        }
    });
    Ok(port)
}

/// An HTTPS upstream behind a private CA that requires a client certificate:
/// reachable with `ca`, `client_cert` and `client_key`; without the client
/// certificate (or the CA) it is down with the TLS reason.
#[tokio::test]
async fn an_https_upstream_with_a_private_ca_and_client_certificates() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("tls-upstream")?;
        let pki = Pki::new()?;
        let ca_pem = pki.ca.pem();
        let server = pki.leaf("upstream", &["localhost", "127.0.0.1"])?;
        let client = pki.leaf("manifold", &[])?;
        let demo = manifold_testkit::harness::DemoHttp::spawn_bin(bin(), &[]).await?;
        let backend: std::net::SocketAddr = demo
            .url
            .trim_start_matches("http://")
            .split('/')
            .next()
            .context("demo address")?
            .parse()?;
        let port = tls_proxy(&server, &ca_pem, backend).await?;
        let ca = write(&dir.0, "ca.pem", &ca_pem)?;
        let cert = write(&dir.0, "client.pem", &client.0)?;
        let key = write(&dir.0, "client-key.pem", &client.1)?;
        let url = toml_string(&format!("https://localhost:{port}/mcp"));
        let gw = TestGateway::start(&format!(
            "[upstreams.secure]\nurl = {url}\nca = {ca}\nclient_cert = {cert}\nclient_key = {key}\n\n\
             [upstreams.nocert]\nurl = {url}\nca = {ca}\n\n\
             [upstreams.noca]\nurl = {url}\nclient_cert = {cert}\nclient_key = {key}\n"
        ))
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("secure__echo", json!({"text": "over mtls"})).await?;
        assert_eq!(r.result()?["content"][0]["text"], "over mtls", "{r}");
        let status = |name: &str| {
            gw.gateway()
                .upstreams()
                .into_iter()
                .find(|u| &**u.name() == name)
                .map(|u| u.status())
        };
        // The reason names the TLS problem, not just "request failed".
        for (name, why) in [("nocert", "certificaterequired"), ("noca", "unknownissuer")] {
            let s = status(name).context("upstream")?;
            assert_ne!(s.state.as_str(), "ready", "{name}: {s:?}");
            let err = s.last_error.unwrap_or_default().to_lowercase();
            assert!(err.contains(why), "{name}: {err}");
        }
        Ok(())
    })
    .await
}
