//! Server→client requests made during a call (sampling) reach the calling client
//! on the call's SSE stream with a gateway-minted id, and its answer goes back to
//! the upstream; a client without the capability gets an error, never a hang.

use anyhow::Result;
use http::StatusCode;
use serde_json::json;

use crate::{bounded, fixture, text_of};

#[tokio::test]
async fn sampling_is_relayed_to_the_calling_client_and_back() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.session("2025-11-25", json!({"sampling": {}})).await?;
        for upstream in ["local", "remote"] {
            let call_id = json!(format!("sample-{upstream}"));
            let mut stream = client
                .send_streaming(&json!({
                    "jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                    "params": {"name": format!("{upstream}__sample"), "arguments": {"prompt": "hi"}}
                }))
                .await?;
            assert_eq!(stream.status, StatusCode::OK);
            assert!(stream.is_sse(), "{upstream}: {}", stream.content_type);
            let request = stream.expect_next().await?;
            assert_eq!(request["method"], "sampling/createMessage", "{request}");
            assert_eq!(request["params"]["messages"][0]["content"]["text"], "hi");
            let id = request["id"].clone();
            assert!(id.is_string() || id.is_number(), "{request}");
            assert!(
                !id.as_str().unwrap_or_default().starts_with("demo-srv-"),
                "{upstream}: the upstream's own id leaked: {request}"
            );
            let ack = client
                .respond(
                    id,
                    json!({"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"}),
                )
                .await?;
            assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
            let response = stream.expect_next().await?;
            assert_eq!(response["id"], call_id, "{response}");
            assert_eq!(text_of(&response["result"])?, "sampled: hello", "{response}");
            assert!(stream.next().await?.is_none(), "the stream did not end");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn sampling_for_a_client_without_the_capability_is_refused() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let reply = client
                .call_tool(&format!("{upstream}__sample"), json!({"prompt": "hi"}))
                .await?;
            assert!(reply.requests().is_empty(), "{upstream}: {reply}");
            let result = reply.result()?;
            assert_eq!(result["isError"], true, "{upstream}: {result}");
            assert!(
                text_of(result)?.contains("sampling"),
                "{upstream}: {result}"
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn only_the_calling_session_can_answer_its_sampling_request() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let a = f.gw.session("2025-11-25", json!({"sampling": {}})).await?;
        let b = f.gw.session("2025-11-25", json!({"sampling": {}})).await?;
        let mut stream = a
            .request_streaming(
                "tools/call",
                json!({"name": "local__sample", "arguments": {"prompt": "hi"}}),
            )
            .await?;
        let request = stream.expect_next().await?;
        assert_eq!(request["method"], "sampling/createMessage", "{request}");
        let id = request["id"].clone();
        let forged = json!({"role": "assistant", "content": {"type": "text", "text": "from b"}, "model": "m"});
        let ack = b.respond(id.clone(), forged).await?;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
        let real = json!({"role": "assistant", "content": {"type": "text", "text": "hello"}, "model": "m"});
        let ack = a.respond(id, real).await?;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
        let response = stream.expect_next().await?;
        assert_eq!(text_of(&response["result"])?, "sampled: hello", "{response}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_sampling_error_from_the_client_reaches_the_upstream() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.session("2025-11-25", json!({"sampling": {}})).await?;
        for upstream in ["local", "remote"] {
            let mut stream = client
                .request_streaming(
                    "tools/call",
                    json!({"name": format!("{upstream}__sample"), "arguments": {"prompt": "hi"}}),
                )
                .await?;
            let request = stream.expect_next().await?;
            let ack = client
                .respond_error(request["id"].clone(), -1, "user declined")
                .await?;
            assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
            let response = stream.expect_next().await?;
            assert_eq!(response["result"]["isError"], true, "{response}");
            assert_eq!(text_of(&response["result"])?, "user declined", "{response}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn sampling_for_a_client_that_accepts_only_json_is_refused() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.gw.session("2025-11-25", json!({"sampling": {}})).await?;
        for upstream in ["local", "remote"] {
            let body = serde_json::to_vec(&json!({
                "jsonrpc": "2.0", "id": 8, "method": "tools/call",
                "params": {"name": format!("{upstream}__sample"), "arguments": {"prompt": "hi"}}
            }))?;
            let raw = client
                .post_raw(body, &[("accept", "application/json")])
                .await?;
            let reply = manifold_testkit::harness::Reply::from_raw(raw)?;
            assert!(
                reply.content_type.starts_with("application/json"),
                "{upstream}: {reply}"
            );
            let result = reply.result()?;
            assert_eq!(result["isError"], true, "{upstream}: {result}");
        }
        Ok(())
    })
    .await
}
