//! Resource rules and canonical URIs through the running gateway, from the
//! attacker's side: with an allow of `file:///srv/docs/*` and a deny of
//! `file:///srv/docs/private/*`, every spelling that climbs out of the allowed
//! prefix (`..`, `%2e%2e`) or around the deny (`./private`, `%70rivate`, host
//! case, default port) is refused as the URI it means, an ambiguous one
//! (`//`, `%2F`, `\`, userinfo) with -32602, in both eras; the upstream
//! receives the canonical URI the rules matched; without rules a URI passes
//! through as sent.
//!
//! The upstream is the demo with `--docs`: it serves any `file:` or `https:`
//! URI, answering with the URI exactly as it arrived, as a file server that
//! resolves `..` itself would.

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::{bin, bounded};
use manifold_testkit::harness::{
    stateless_request, toml_string, McpClient, TestGateway, STATELESS,
};

/// The resource rules of these tests.
const RULES: &str = "[[policy]]\nwho = [\"*\"]\ntools = { allow = [\"*\"] }\n\
    resources = { allow = [\"file:///srv/docs/*\", \"https://*\"], \
    deny = [\"file:///srv/docs/private/*\", \"https://intranet.example.com/private/*\"] }\n";

async fn gateway(rules: &str) -> Result<TestGateway> {
    TestGateway::start(&format!(
        "[upstreams.docs]\ncommand = {}\nargs = [\"--docs\"]\ntimeout = \"20s\"\n\n{rules}",
        toml_string(bin())
    ))
    .await
}

/// Reads `uri` in both eras: (session-era answer, 2026-07-28 status and answer).
async fn read_both(gw: &TestGateway, session: &McpClient, uri: &str) -> Result<[Value; 2]> {
    let legacy = session
        .request("resources/read", json!({"uri": uri}))
        .await?
        .response()?
        .clone();
    let (status, modern) = gw
        .client()
        .send_stateless(
            &stateless_request(7, "resources/read", json!({"uri": uri})),
            &[],
        )
        .await?;
    // Every answer here is a result or an error to a well-formed request:
    // 200 in this era too (the refusal table's row for -32002 and -32602).
    anyhow::ensure!(status == StatusCode::OK, "{uri}: {status} {modern}");
    Ok([legacy, modern])
}

/// What the upstream was asked to read, from its echo.
fn echoed(answer: &Value) -> Result<&str> {
    answer["result"]["contents"][0]["text"]
        .as_str()
        .and_then(|t| t.strip_prefix("read "))
        .with_context(|| format!("not a read result: {answer}"))
}

#[tokio::test]
async fn resource_rules_match_what_the_upstream_will_read_in_both_eras() -> Result<()> {
    bounded(async {
        let gw = gateway(RULES).await?;
        let s = gw.session("2025-11-25", json!({})).await?;

        // Allowed, and the upstream reads the canonical URI the rules matched.
        // `*` crosses `/`: the allow covers the subtree.
        for (asked, forwarded) in [
            ("file:///srv/docs/a.txt", "file:///srv/docs/a.txt"),
            ("file:///srv/docs/a/b.txt", "file:///srv/docs/a/b.txt"),
            (
                "file:///srv/docs/a/./b/../c.txt",
                "file:///srv/docs/a/c.txt",
            ),
            (
                "FILE:///srv/docs/%7Euser/%41.txt",
                "file:///srv/docs/~user/A.txt",
            ),
            ("file:/srv/docs/%c3%a9.txt", "file:///srv/docs/%C3%A9.txt"),
            ("https://Example.COM:443/x", "https://example.com/x"),
        ] {
            for answer in read_both(&gw, &s, asked).await? {
                assert_eq!(echoed(&answer)?, forwarded, "{asked}: {answer}");
            }
        }

        // Climbing out of the allowed prefix, and around the deny: refused as
        // the URI each one means, exactly as a URI the rules hide.
        let hidden = read_both(&gw, &s, "file:///srv/secret/payroll.txt").await?;
        for asked in [
            "file:///srv/docs/../secret/payroll.txt",
            "file:///srv/docs/%2e%2e/secret/payroll.txt",
            "file:///srv/docs/%2E%2E/secret/payroll.txt",
            "file:///srv/docs/.%2e/secret/payroll.txt",
            "file:///srv/docs/a/../../secret/payroll.txt",
            "file:///srv/docs/private/salaries.txt",
            "file:///srv/docs/./private/salaries.txt",
            "file:///srv/docs/%70rivate/salaries.txt",
            "file:///srv/docs/x/../private/salaries.txt",
            "file:///srv/docs/private/deeper/salaries.txt",
            "FILE:///srv/docs/private/salaries.txt",
            "file://localhost/srv/docs/private/salaries.txt",
            "https://Intranet.Example.COM/private/x",
            "https://intranet.example.com:443/private/x",
            // The `/` in the pattern is a boundary.
            "file:///srv/docs-old/a.txt",
        ] {
            let answers = read_both(&gw, &s, asked).await?;
            for (answer, like) in answers.iter().zip(&hidden) {
                assert_eq!(answer["error"]["code"], -32002, "{asked}: {answer}");
                assert_eq!(
                    answer["error"]["message"]
                        .as_str()
                        .map(|m| m.replace(asked, "URI")),
                    like["error"]["message"]
                        .as_str()
                        .map(|m| m.replace("file:///srv/secret/payroll.txt", "URI")),
                    "{asked}: answered unlike a hidden URI"
                );
            }
        }

        // Ambiguous after normalization: -32602, saying why.
        for (asked, why) in [
            ("file:///srv/docs//private/salaries.txt", "empty segment"),
            ("file:///srv/docs/private%2Fsalaries.txt", "encoded `/`"),
            ("file:///srv/docs/private%5csalaries.txt", "encoded `/`"),
            ("file:///srv/docs\\private\\salaries.txt", "backslash"),
            ("file:///srv/docs/a.txt%00.pdf", "NUL"),
            ("https://user@intranet.example.com/private/x", "userinfo"),
            ("/srv/docs/private/salaries.txt", "absolute URI"),
        ] {
            for answer in read_both(&gw, &s, asked).await? {
                assert_eq!(answer["error"]["code"], -32602, "{asked}: {answer}");
                let message = answer["error"]["message"].as_str().unwrap_or_default();
                assert!(message.contains(why), "{asked}: {message}");
            }
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn subscriptions_completions_and_listens_follow_the_canonical_uri() -> Result<()> {
    bounded(async {
        let gw = gateway(RULES).await?;
        let s = gw.session("2025-11-25", json!({})).await?;
        let subscribe = |uri: &'static str| {
            let s = s.clone();
            async move {
                let r = s
                    .request("resources/subscribe", json!({"uri": uri}))
                    .await?;
                Ok::<Value, anyhow::Error>(r.response()?.clone())
            }
        };
        let r = subscribe("file:///srv/docs/./private/salaries.txt").await?;
        assert_eq!(r["error"]["code"], -32002, "{r}");
        let r = subscribe("file:///srv/docs//private/salaries.txt").await?;
        assert_eq!(r["error"]["code"], -32602, "{r}");
        let r = subscribe("file:///srv/docs/a/../b.txt").await?;
        assert!(r["result"].is_object(), "{r}");

        // Completion of a concrete URI: what the rules hide never reaches the
        // upstream (which would answer "Unknown reference" for any of these).
        let complete = |uri: &'static str| {
            let s = s.clone();
            async move {
                let params = json!({"ref": {"type": "ref/resource", "uri": uri},
                                    "argument": {"name": "path", "value": ""}});
                let r = s.request("completion/complete", params).await?;
                Ok::<Value, anyhow::Error>(r.response()?.clone())
            }
        };
        let reached = complete("file:///srv/docs/a.txt").await?;
        assert!(
            reached["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("Unknown reference"),
            "{reached}"
        );
        let hidden = complete("file:///srv/docs/../secret/payroll.txt").await?;
        let message = hidden["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("No upstream owns"), "{hidden}");
        let ambiguous = complete("file:///srv/docs//x").await?;
        assert_eq!(ambiguous["error"]["code"], -32602, "{ambiguous}");
        let message = ambiguous["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("Invalid resource URI"), "{ambiguous}");

        // 2026-07-28: a listen honours the canonical form of what it may read.
        let c = gw.client();
        let listen = stateless_request(
            9,
            "subscriptions/listen",
            json!({"notifications": {"resourceSubscriptions": [
                "file:///srv/docs/./private/salaries.txt",
                "file:///srv/docs/a/../b.txt",
                "file:///srv/docs/%62.txt",
                "file:///srv/docs//c.txt",
            ]}}),
        );
        let mut stream = c
            .send_streaming_with(
                &listen,
                &[
                    ("mcp-protocol-version", STATELESS),
                    ("mcp-method", "subscriptions/listen"),
                ],
            )
            .await?;
        let ack = stream.expect_next().await?;
        assert_eq!(
            ack["params"]["notifications"]["resourceSubscriptions"],
            json!(["file:///srv/docs/b.txt"]),
            "{ack}"
        );
        Ok(())
    })
    .await
}

/// With no rule to match, nothing is normalized or refused: the upstream
/// receives the URI byte for byte (tenet 1).
#[tokio::test]
async fn without_resource_rules_a_uri_passes_through_as_sent() -> Result<()> {
    bounded(async {
        let gw = gateway("").await?;
        let s = gw.session("2025-11-25", json!({})).await?;
        for uri in [
            "file:///srv/docs//x/../%7e.txt",
            "FILE:///srv/docs/%2e%2e/secret",
            "file:///srv/docs/private%2Fx",
        ] {
            for answer in read_both(&gw, &s, uri).await? {
                assert_eq!(echoed(&answer)?, uri, "{answer}");
            }
        }
        Ok(())
    })
    .await
}
