//! Each endpoint's MCP server card (SEP-2127): its fields and their rules, the
//! default and a virtual endpoint at each of their places, the authorization
//! facts with `[auth]`, `ETag` and 304, CORS, `server_card = false`; and the
//! attacker's side — a card fetched without credentials holds no upstream's
//! URL, command, header or name, and no tool.

use anyhow::{Context, Result};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{bounded, Setup};

/// `GET path` with `extra` headers: status, headers (lower-case), body.
async fn get(addr: std::net::SocketAddr, path: &str, extra: &str) -> Result<(u16, String, String)> {
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}\r\n")
            .as_bytes(),
    )
    .await?;
    let mut text = String::new();
    s.read_to_string(&mut text).await?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("status")?;
    Ok((status, head.to_ascii_lowercase(), body.to_string()))
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
}

#[tokio::test]
async fn every_endpoint_has_a_card_with_public_facts_only() -> Result<()> {
    bounded(async {
        let f = Setup {
            remote:
                "timeout = \"20s\"\nheaders = { Authorization = \"Bearer upstream-secret-0123\" }"
                    .into(),
            extra: "[[endpoint]]\npath = \"/mcp/ops\"\nupstreams = [\"local\"]\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let addr = f.gw.addr();
        for (path, url) in [
            ("/.well-known/mcp/server-card", "/mcp"),
            ("/mcp/server-card", "/mcp"),
            ("/.well-known/mcp/server-card/mcp/ops", "/mcp/ops"),
            ("/mcp/ops/server-card", "/mcp/ops"),
        ] {
            let (status, head, body) = get(addr, path, "").await?;
            assert_eq!(status, 200, "{path}: {body}");
            assert_eq!(
                header(&head, "content-type"),
                Some("application/json"),
                "{head}"
            );
            assert_eq!(
                header(&head, "access-control-allow-origin"),
                Some("*"),
                "{head}"
            );
            let card: Value = serde_json::from_str(&body)?;
            assert_eq!(
                card["$schema"],
                "https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json"
            );
            let name = card["name"].as_str().unwrap_or_default();
            let (ns, leaf) = name.split_once('/').context("one slash")?;
            assert!(
                !ns.is_empty()
                    && ns
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-'),
                "{name}"
            );
            assert!(!leaf.is_empty() && !leaf.contains('/'), "{name}");
            assert!(card["version"].as_str().is_some_and(|v| !v.is_empty()));
            let d = card["description"].as_str().unwrap_or_default();
            assert!((1..=100).contains(&d.len()), "{d}");
            let remote = &card["remotes"][0];
            assert_eq!(remote["type"], "streamable-http");
            assert_eq!(remote["url"], format!("http://{addr}{url}"), "{card}");
            let versions = remote["supportedProtocolVersions"]
                .as_array()
                .context("versions")?;
            for v in ["2024-11-05", "2025-11-25", "2026-07-28"] {
                assert!(versions.iter().any(|x| x == v), "{v} missing: {card}");
            }
            assert_eq!(card["capabilities"]["tools"]["listChanged"], true, "{card}");
            // Public facts only.
            for secret in [
                "upstream-secret",
                "127.0.0.1:",
                "\"remote\"",
                "remote__",
                "local__",
                "demo-upstream",
            ] {
                let hay = body.replace(&format!("{addr}"), "");
                assert!(!hay.contains(secret), "{path} shows {secret:?}: {body}");
            }
            assert!(card.get("tools").is_none() && card.get("remotes").is_some());
        }
        // Cached: the same ETag gets 304 with no body.
        let (_, head, _) = get(addr, "/mcp/server-card", "").await?;
        let etag = header(&head, "etag").context("etag")?.to_string();
        assert!(etag.starts_with('"'), "a strong ETag: {etag}");
        let (status, _, body) = get(
            addr,
            "/mcp/server-card",
            &format!("If-None-Match: {etag}\r\n"),
        )
        .await?;
        assert_eq!((status, body.as_str()), (304, ""));
        let (status, _, _) = get(addr, "/mcp/server-card", "If-None-Match: \"other\"\r\n").await?;
        assert_eq!(status, 200);
        // An unknown endpoint has none.
        let (status, _, _) = get(addr, "/.well-known/mcp/server-card/nope", "").await?;
        assert_eq!(status, 404);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_card_names_the_authorization_and_can_be_turned_off() -> Result<()> {
    bounded(async {
        let key = "card-key-0123456789";
        let f = Setup {
            extra: format!(
                "[auth]\n[[auth.api_keys]]\nname = \"ci\"\nhash = \"{}\"\n",
                manifold_policy::hash_key(key)
            ),
            ..Setup::default()
        }
        .start()
        .await?;
        // Open without credentials, like the protected resource metadata.
        let (status, _, body) = get(f.gw.addr(), "/.well-known/mcp/server-card", "").await?;
        assert_eq!(status, 200, "{body}");
        let card: Value = serde_json::from_str(&body)?;
        let remote = &card["remotes"][0];
        assert_eq!(remote["authentication"]["required"], true, "{card}");
        assert_eq!(remote["headers"][0]["name"], "Authorization");
        assert_eq!(remote["headers"][0]["isSecret"], true);
        assert!(!body.contains(key), "the key");
        drop(f);

        let f = Setup {
            server: "server_card = false".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        for path in ["/.well-known/mcp/server-card", "/mcp/server-card"] {
            let (status, _, _) = get(f.gw.addr(), path, "").await?;
            assert_eq!(status, 404, "{path}");
        }
        Ok(())
    })
    .await
}
