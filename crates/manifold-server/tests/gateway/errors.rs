//! Bad input gets the right JSON-RPC code and HTTP status.

use anyhow::Result;
use http::StatusCode;
use serde_json::{json, Value};

use crate::{bounded, fixture};

#[tokio::test]
async fn an_unknown_tool_is_invalid_params() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client
            .request_with_id(
                json!(41),
                "tools/call",
                json!({"name": "x", "arguments": {}}),
            )
            .await?;
        assert_eq!(reply.status, StatusCode::OK, "{reply}");
        let response = reply.response()?;
        assert_eq!(response["id"], 41);
        assert_eq!(response["error"]["code"], -32602);
        assert_eq!(response["error"]["message"], "Unknown tool: x");
        // An original (unprefixed) name is not an exposed name either.
        let reply = client.call_tool("echo", json!({"text": "hi"})).await?;
        assert_eq!(reply.error()?["code"], -32602, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn malformed_json_is_400_parse_error() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client
            .post_raw(&b"{\"jsonrpc\": \"2.0\", \"id\": 1,"[..], &[])
            .await?;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply}");
        let body = reply.json()?;
        assert_eq!(body["error"]["code"], -32700, "{body}");
        assert_eq!(body["id"], Value::Null, "{body}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_message_without_method_or_result_is_400_invalid_request() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client
            .post_raw(&br#"{"jsonrpc":"2.0","id":1}"#[..], &[])
            .await?;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{reply}");
        assert_eq!(reply.json()?["error"]["code"], -32600, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_unknown_method_is_method_not_found() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client
            .request_with_id(json!("u-1"), "no/such/method", json!({}))
            .await?;
        let response = reply.response()?;
        assert_eq!(response["id"], "u-1");
        assert_eq!(response["error"]["code"], -32601, "{reply}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_body_over_4_mib_is_413() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let prefix = br#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#;
        let suffix = br#""}}"#;
        let mut body = Vec::with_capacity(4 * 1024 * 1024 + 64);
        body.extend_from_slice(prefix);
        body.resize(4 * 1024 * 1024 + 1 - suffix.len(), b'a');
        body.extend_from_slice(suffix);
        assert_eq!(body.len(), 4 * 1024 * 1024 + 1);
        let reply = client.post_raw(body, &[]).await?;
        assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE, "{reply}");
        // Exactly the limit is fine (the padding makes it a valid ping).
        let mut body = Vec::with_capacity(4 * 1024 * 1024);
        body.extend_from_slice(prefix);
        body.resize(4 * 1024 * 1024 - suffix.len(), b'a');
        body.extend_from_slice(suffix);
        let reply = client.post_raw(body, &[]).await?;
        assert_eq!(reply.status, StatusCode::OK, "{reply}");
        Ok(())
    })
    .await
}
