//! `initialize`, sessions (missing, unknown, ended), DNS-rebinding protection,
//! `ping`, notifications and the `server/discover` probe.

use anyhow::{ensure, Result};
use http::StatusCode;
use manifold_demo::DEFAULT_INSTRUCTIONS;
use serde_json::json;

use crate::{bounded, fixture, Setup, LOCAL_INSTRUCTIONS};

fn is_session_id(id: &str) -> bool {
    id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())
}

#[tokio::test]
async fn initialize_negotiates_the_requested_revision() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        let result = client.initialize("2025-06-18", json!({})).await?;
        assert_eq!(result["protocolVersion"], "2025-06-18");
        assert_eq!(result["serverInfo"]["name"], "manifold");
        assert!(result["serverInfo"]["version"].is_string(), "{result}");
        assert_eq!(result["capabilities"]["tools"]["listChanged"], true);
        let id = client.session_id().expect("a session id");
        assert!(is_session_id(&id), "session id {id:?} is not 64 hex chars");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn initialize_with_an_unknown_revision_answers_the_latest() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let a = f.gw.client();
        let result = a.initialize("2099-01-01", json!({})).await?;
        assert_eq!(result["protocolVersion"], "2025-11-25");
        let b = f.gw.client();
        b.initialize("2025-11-25", json!({})).await?;
        let (ida, idb) = (a.session_id().expect("id"), b.session_id().expect("id"));
        assert!(is_session_id(&ida) && is_session_id(&idb));
        assert_ne!(ida, idb, "two sessions share an id");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn initialize_merges_upstream_instructions_under_headings() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let result = f.gw.client().initialize("2025-11-25", json!({})).await?;
        let expected =
            format!("## local\n{LOCAL_INSTRUCTIONS}\n\n## remote\n{DEFAULT_INSTRUCTIONS}");
        assert_eq!(result["instructions"], expected.as_str());
        Ok(())
    })
    .await
}

#[tokio::test]
async fn ping_answers_exactly_an_empty_object() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client
            .request_with_id(json!("p-1"), "ping", json!({}))
            .await?;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.raw_result()?, "{}");
        assert_eq!(reply.response()?["id"], "p-1");
        // Without params as well.
        let reply = client.request("ping", serde_json::Value::Null).await?;
        assert_eq!(reply.raw_result()?, "{}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_notification_is_accepted_with_202() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for method in [
            "notifications/initialized",
            "notifications/roots/list_changed",
        ] {
            let reply = client.notify(method, serde_json::Value::Null).await?;
            assert_eq!(reply.status, StatusCode::ACCEPTED, "{method}: {reply}");
            assert!(reply.body.is_empty(), "{method}: {reply}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_request_without_session_id_is_400() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let reply = f.gw.client().request("tools/list", json!({})).await?;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply}");
        assert_eq!(reply.error()?["code"], -32600);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_unknown_session_id_is_404() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.client();
        client.set_session_id(Some(&"ab".repeat(32)));
        let reply = client.request("tools/list", json!({})).await?;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn delete_ends_the_session() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let other = f.session().await?;
        let reply = client.delete().await?;
        assert!(reply.status.is_success(), "{reply}");
        let reply = client.request("tools/list", json!({})).await?;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply}");
        let stream = client.get(&[]).await?;
        assert_eq!(stream.status, StatusCode::NOT_FOUND);
        let reply = client.delete().await?;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply}");
        // Other sessions are unaffected.
        let reply = other.request("ping", json!({})).await?;
        assert_eq!(reply.raw_result()?, "{}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_foreign_origin_is_403() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let reply = client
            .post_raw(&ping[..], &[("origin", "http://evil.example.com")])
            .await?;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{reply}");
        // initialize is refused too: the check comes before any MCP handling.
        let init = f.gw.client();
        let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}}))?;
        let reply = init
            .post_raw(body, &[("origin", "http://evil.example.com")])
            .await?;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{reply}");
        ensure!(reply.headers.get("mcp-session-id").is_none());
        // The gateway's own loopback origin is fine.
        let own = format!("http://localhost:{}", f.gw.addr().port());
        let reply = client.post_raw(&ping[..], &[("origin", &own)]).await?;
        assert_eq!(reply.status, StatusCode::OK, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_foreign_host_is_403() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let reply = client
            .post_raw(&ping[..], &[("host", "evil.example.com")])
            .await?;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{reply}");
        let port = f.gw.addr().port();
        let reply = client
            .post_raw(&ping[..], &[("host", &format!("evil.example.com:{port}"))])
            .await?;
        assert_eq!(reply.status, StatusCode::FORBIDDEN, "{reply}");
        let reply = client
            .post_raw(&ping[..], &[("host", &format!("localhost:{port}"))])
            .await?;
        assert_eq!(reply.status, StatusCode::OK, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn server_discover_without_session_is_404_method_not_found() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let reply =
            f.gw.client()
                .request_with_id(json!("disc-1"), "server/discover", json!({}))
                .await?;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply}");
        let response = reply.response()?;
        assert_eq!(response["id"], "disc-1");
        assert_eq!(response["error"]["code"], -32601);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_unsupported_protocol_version_header_is_400() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let reply = client
            .post_raw(&ping[..], &[("mcp-protocol-version", "1999-01-01")])
            .await?;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply}");
        let reply = client
            .post_raw(&ping[..], &[("mcp-protocol-version", "2025-03-26")])
            .await?;
        assert_eq!(reply.status, StatusCode::OK, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_batch_is_400_invalid_request() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let batch = br#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#;
        let reply = client.post_raw(&batch[..], &[]).await?;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply}");
        assert_eq!(reply.json()?["error"]["code"], -32600, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_get_stream_needs_a_live_session_and_ends_with_it() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let stream = f.gw.client().get(&[]).await?;
        assert_eq!(stream.status, StatusCode::BAD_REQUEST);
        let stranger = f.gw.client();
        stranger.set_session_id(Some(&"cd".repeat(32)));
        assert_eq!(stranger.get(&[]).await?.status, StatusCode::NOT_FOUND);

        let client = f.session().await?;
        let mut stream = client.open_get_stream().await?;
        assert!(client.delete().await?.status.is_success());
        assert!(
            stream.next().await?.is_none(),
            "the GET stream stayed open after DELETE"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_response_nobody_waits_for_is_accepted_and_ignored() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client.respond(json!("mf-999"), json!({})).await?;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{reply}");
        let reply = client
            .notify("notifications/cancelled", json!({"requestId": 12345}))
            .await?;
        assert_eq!(reply.status, StatusCode::ACCEPTED, "{reply}");
        let reply = client.request("ping", json!({})).await?;
        assert_eq!(reply.raw_result()?, "{}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn configured_origins_and_hosts_are_accepted() -> Result<()> {
    bounded(async {
        let f = Setup {
            server: "allowed_origins = [\"https://app.example.com\"]\n\
                     allowed_hosts = [\"mcp.example.com\"]"
                .into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let client = f.session().await?;
        let ping = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        for (header, value, status) in [
            ("origin", "https://app.example.com", StatusCode::OK),
            ("origin", "https://other.example.com", StatusCode::FORBIDDEN),
            ("host", "mcp.example.com", StatusCode::OK),
            ("host", "other.example.com", StatusCode::FORBIDDEN),
        ] {
            let reply = client.post_raw(&ping[..], &[(header, value)]).await?;
            assert_eq!(reply.status, status, "{header}: {value}: {reply}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn sessions_beyond_max_sessions_are_refused() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[limits]\nmax_sessions = 2\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let first = f.session().await?;
        let _second = f.session().await?;
        let third = f.gw.client();
        let reply = third
            .request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}}),
            )
            .await?;
        assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE, "{reply}");
        assert!(reply.headers.get("mcp-session-id").is_none(), "{reply}");
        assert!(first.delete().await?.status.is_success());
        third.initialize("2025-11-25", json!({})).await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn only_the_configured_path_is_served() -> Result<()> {
    bounded(async {
        let f = Setup {
            server: "path = \"/gateway\"".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        assert!(f.gw.url().ends_with("/gateway"), "{}", f.gw.url());
        let client = f.session().await?;
        assert_eq!(client.request("ping", json!({})).await?.raw_result()?, "{}");
        let elsewhere =
            manifold_testkit::harness::McpClient::new(format!("http://{}/mcp", f.gw.addr()));
        elsewhere.set_session_id(client.session_id().as_deref());
        let reply = elsewhere.request("ping", json!({})).await?;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{reply}");
        Ok(())
    })
    .await
}
