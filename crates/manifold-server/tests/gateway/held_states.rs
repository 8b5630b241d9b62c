//! 2026-07-28 held calls and `[confirm]` states from the attacker's side: a
//! `requestState` is bound to the principal it was issued to (another caller
//! presenting it is refused as an invalid state, and does not use it up), and
//! a retry resumes its held call only while the caller's current view holds
//! the tool (after a reload that hid it, the retry answers exactly as an
//! unknown tool does, and the held call ends). The `confirmed.` wrappers of a
//! 2026-07-28 upstream's rounds are in `modern_upstream.rs`.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::observe::{audit_lines, Scratch};
use crate::{bounded, Fixture, Setup};
use manifold_policy::hash_key;
use manifold_testkit::harness::{stateless_meta, toml_string, McpClient, TestGateway};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

/// `[auth]` with two keys; `policy` appended (rules may hide tools).
fn setup(policy: &str, audit: &std::path::Path) -> Setup {
    Setup {
        extra: format!(
            "[auth]\n\
             [[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\n\n\
             [[auth.api_keys]]\nname = \"bob\"\nhash = \"{}\"\n\n\
             [confirm]\ntools = [\"*__add\"]\n\n\
             [audit]\npath = {}\nfsync = \"always\"\n\n{policy}",
            hash_key(ALICE),
            hash_key(BOB),
            toml_string(&audit.to_string_lossy()),
        ),
        ..Setup::default()
    }
}

fn client(f: &Fixture, key: &str) -> McpClient {
    let c = f.gw.client();
    c.set_bearer(Some(key));
    c
}

/// A 2026-07-28 call declaring form elicitation, with `extra` params.
fn call(id: u64, name: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({"name": name, "arguments": arguments,
                            "_meta": stateless_meta(json!({"elicitation": {"form": {}}}))});
    if let (Some(p), Some(e)) = (params.as_object_mut(), extra.as_object()) {
        p.extend(e.clone());
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

/// Sends `first` and returns the `requestState` of its `InputRequiredResult`.
async fn state_of(c: &McpClient, first: &Value) -> Result<String> {
    let (status, r) = c.send_stateless(first, &[]).await?;
    anyhow::ensure!(status == StatusCode::OK, "{status}: {r}");
    anyhow::ensure!(r["result"]["resultType"] == "input_required", "{r}");
    Ok(r["result"]["requestState"]
        .as_str()
        .context("requestState")?
        .to_string())
}

#[tokio::test]
async fn another_principal_cannot_resume_a_held_call_or_answer_a_confirmation() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("held-principal")?;
        let f = setup("", &dir.0.join("audit.jsonl")).start().await?;
        let (alice, bob) = (client(&f, ALICE), client(&f, BOB));

        // A held call (the upstream asked alice something).
        let args = json!({"message": "Name?"});
        let state = state_of(&alice, &call(1, "local__elicit", args.clone(), json!({}))).await?;
        let answer = json!({"input_1": {"action": "accept", "content": {"name": "Mallory"}}});
        let retry = call(
            2,
            "local__elicit",
            args.clone(),
            json!({"requestState": state, "inputResponses": answer}),
        );
        let (status, stolen) = bob.send_stateless(&retry, &[]).await?;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "bob resumed alice's call: {stolen}"
        );
        assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
        let message = stolen["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("requestState"), "{stolen}");
        // Bob's attempt did not use it up: alice's own retry resumes it.
        let answer = json!({"input_1": {"action": "accept", "content": {"name": "Ada"}}});
        let retry = call(
            3,
            "local__elicit",
            args,
            json!({"requestState": state, "inputResponses": answer}),
        );
        let (status, done) = alice.send_stateless(&retry, &[]).await?;
        assert_eq!(status, StatusCode::OK, "{done}");
        assert_eq!(
            done["result"]["content"][0]["text"], r#"elicited: accept {"name":"Ada"}"#,
            "{done}"
        );

        // A `[confirm]` question asked of alice: bob cannot answer it.
        let args = json!({"a": 40, "b": 2});
        let state = state_of(&alice, &call(4, "local__add", args.clone(), json!({}))).await?;
        let accept =
            json!({"requestState": state, "inputResponses": {"confirm": {"action": "accept"}}});
        let retry = call(5, "local__add", args, accept);
        let (status, stolen) = bob.send_stateless(&retry, &[]).await?;
        assert_eq!(
            status,
            StatusCode::BAD_REQUEST,
            "bob confirmed alice's call: {stolen}"
        );
        assert_eq!(stolen["error"]["code"], -32602, "{stolen}");
        let (status, done) = alice.send_stateless(&retry, &[]).await?;
        assert_eq!(status, StatusCode::OK, "{done}");
        assert_eq!(done["result"]["content"][0]["text"], "42", "{done}");
        Ok(())
    })
    .await
}

/// A reload that hides the tool while its call is held: the retry answers
/// exactly as a tool the caller never could see, and the held call is
/// cancelled (its record says so), not resumed.
#[tokio::test]
async fn a_retry_after_a_reload_that_hid_the_tool_answers_as_unknown() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("held-reload")?;
        let audit = dir.0.join("audit.jsonl");
        let everything = "[[policy]]\nwho = [\"*\"]\ntools = { allow = [\"*\"] }\n";
        let f = setup(everything, &audit).start().await?;
        let alice = client(&f, ALICE);

        let args = json!({"message": "Hidden soon?"});
        let state = state_of(&alice, &call(1, "local__elicit", args.clone(), json!({}))).await?;
        let hiding = setup(
            "[[policy]]\nwho = [\"*\"]\ntools = { allow = [\"*\"], deny = [\"local__elicit\"] }\n",
            &audit,
        );
        f.gw.gateway()
            .reload(TestGateway::config(&hiding.render(&f.remote.url))?)
            .await?;

        let answer = json!({"input_1": {"action": "accept", "content": {"name": "Ada"}}});
        let retry_of = |name: &str| {
            call(
                2,
                name,
                args.clone(),
                json!({"requestState": state, "inputResponses": answer}),
            )
        };
        let (status, hidden) = alice
            .send_stateless(&retry_of("local__elicit"), &[])
            .await?;
        let (unknown_status, unknown) = alice
            .send_stateless(&retry_of("local__no_such_tool"), &[])
            .await?;
        assert!(
            hidden.get("result").is_none(),
            "the held call was resumed: {hidden}"
        );
        assert_eq!(status, unknown_status, "{hidden} vs {unknown}");
        assert_eq!(
            hidden["error"].to_string().replace("local__elicit", "NAME"),
            unknown["error"]
                .to_string()
                .replace("local__no_such_tool", "NAME"),
            "a hidden tool's retry must answer as an unknown tool's"
        );
        // The held call ended: cancelled upstream, recorded as cancelled (the
        // holder writes the record when it wakes, right after the retry).
        let cancelled = || -> Result<bool> {
            Ok(audit_lines(&audit)?
                .iter()
                .any(|l| l["arguments"] == args && l["outcome"] == "cancelled"))
        };
        crate::eventually(
            "a cancelled record",
            std::time::Duration::from_secs(10),
            || async { Ok(cancelled()?.then_some(())) },
        )
        .await?;
        Ok(())
    })
    .await
}
