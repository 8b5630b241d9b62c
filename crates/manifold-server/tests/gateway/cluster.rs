//! `[cluster] session_key`: a session opened on one replica is accepted by any
//! replica holding the key (no sticky sessions): `initialize` on A,
//! `tools/list` on B, `tools/call` on C. A tampered id, or one sealed with a
//! key a replica does not hold, is unknown (404); a previous key still opens
//! ids (rotation); a session is still bound to its principal.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::json;

use crate::{bounded, names_of, Fixture, Setup};
use manifold_testkit::harness::McpClient;

const KEY_A: &str = "cluster-key-a-0123456789abcdef0123456789";
const KEY_B: &str = "cluster-key-b-0123456789abcdef0123456789";

async fn replica(current: &str, previous: &[&str]) -> Result<Fixture> {
    let previous: Vec<String> = previous.iter().map(|k| format!("{k:?}")).collect();
    Setup {
        extra: format!(
            "[cluster]\nsession_key = {current:?}\nprevious_session_keys = [{}]\n",
            previous.join(", ")
        ),
        ..Setup::default()
    }
    .start()
    .await
}

/// A client of `f` presenting an existing session id.
fn joining(f: &Fixture, id: &str) -> McpClient {
    let c = f.gw.client();
    c.set_session_id(Some(id));
    c.set_protocol_version(Some("2025-11-25"));
    c
}

#[tokio::test]
async fn a_session_opened_on_one_replica_is_served_by_the_others() -> Result<()> {
    bounded(async {
        let (a, b, c) = (
            replica(KEY_A, &[]).await?,
            replica(KEY_A, &[]).await?,
            replica(KEY_A, &[]).await?,
        );
        let on_a = a.gw.session("2025-11-25", json!({"sampling": {}})).await?;
        let id = on_a.session_id().context("session id")?;
        assert!(id.starts_with("s1."), "{id}");

        let on_b = joining(&b, &id);
        let tools = names_of(&on_b.list_all_tools().await?);
        assert!(tools.contains(&"local__echo".to_string()), "{tools:?}");
        let on_c = joining(&c, &id);
        let r = on_c
            .call_tool("local__echo", json!({"text": "on C"}))
            .await?;
        assert_eq!(r.result()?["content"][0]["text"], "on C", "{r}");

        // Tampered: 404, like an id that never existed.
        let mut bad = id.clone().into_bytes();
        let i = bad.len() - 3;
        bad[i] = if bad[i] == b'x' { b'y' } else { b'x' };
        let r = joining(&b, std::str::from_utf8(&bad)?)
            .call_tool("local__echo", json!({"text": "x"}))
            .await?;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");

        // A replica with another key does not know it; one that keeps this
        // key as a previous one (rotation) does.
        let foreign = replica(KEY_B, &[]).await?;
        let r = joining(&foreign, &id)
            .call_tool("local__echo", json!({"text": "x"}))
            .await?;
        assert_eq!(r.status, StatusCode::NOT_FOUND, "{r}");
        let rotated = replica(KEY_B, &[KEY_A]).await?;
        let r = joining(&rotated, &id)
            .call_tool("local__echo", json!({"text": "rotated"}))
            .await?;
        assert_eq!(r.result()?["content"][0]["text"], "rotated", "{r}");

        // DELETE on B ends it there for good: B does not take the id up again.
        assert_eq!(on_b.delete().await?.status, StatusCode::OK);
        let r = joining(&b, &id)
            .call_tool("local__echo", json!({"text": "x"}))
            .await?;
        assert_eq!(
            r.status,
            StatusCode::NOT_FOUND,
            "an ended session came back: {r}"
        );
        Ok(())
    })
    .await
}
