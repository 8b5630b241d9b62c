//! Coalescing (`[upstreams.x.overrides.<tool>] coalesce = true`): identical
//! concurrent calls of a read-only tool by one principal share one upstream
//! call; never across principals (or, for anonymous callers, sessions), never
//! for a tool without the key or that is not read-only. The demo upstream's
//! `slow_read` numbers the calls it began (`x-demo-served`) and its `calls`
//! tool counts every `tools/call` that reached it, so each test checks what
//! the upstream saw, not only what the clients got.
//!
//! Every test starts one call, waits until the upstream holds it (its in-flight
//! count), and only then sends the identical calls: they are concurrent with
//! it by construction, not by timing.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{Context, Result};
use manifold_policy::hash_key;
use manifold_testkit::harness::{
    stateless_request, toml_string, DemoHttp, McpClient, Reply, TestGateway,
};
use serde_json::{json, Value};
use tokio::task::JoinHandle;

use crate::observe::{admin_get, audit_lines, sample, Scratch};
use crate::{bin, bounded, text_of, until_in_flight};

const ALICE: &str = "alice-key-0123456789";
const BOB: &str = "bob-key-0123456789";

/// How long the shared call takes upstream: far longer than sending the
/// identical calls after it takes.
const SLOW: u64 = 4000;

struct Shared {
    gw: TestGateway,
    remote: DemoHttp,
    dir: Scratch,
}

/// A gateway in front of a demo upstream `f` (HTTP, with `slow_read`), with
/// `overrides` (`[upstreams.f.overrides.*]` sections), `extra` sections, an
/// admin listener and an audit log.
async fn start(tag: &str, overrides: &str, extra: &str) -> Result<Shared> {
    start_with(&[], tag, overrides, extra).await
}

/// [`start`], the demo upstream started with `flags` too.
async fn start_with(flags: &[&str], tag: &str, overrides: &str, extra: &str) -> Result<Shared> {
    let dir = Scratch::new(tag)?;
    let flags: Vec<&str> = ["--slow-read-tool"].iter().chain(flags).copied().collect();
    let remote = DemoHttp::spawn_bin(bin(), &flags).await?;
    let audit = dir.0.join("audit.jsonl");
    let gw = TestGateway::start(&format!(
        "[admin]\nlisten = \"127.0.0.1:0\"\n\n\
         [audit]\npath = {}\nfsync = \"always\"\n\n\
         [upstreams.f]\nurl = {}\ntimeout = \"30s\"\n\n{overrides}\n\n{extra}\n",
        toml_string(&audit.to_string_lossy()),
        toml_string(&remote.url)
    ))
    .await?;
    Ok(Shared { gw, remote, dir })
}

impl Shared {
    /// Once `n` requests of the gateway to `f` are in flight.
    async fn until_upstream_holds(&self, n: usize) -> Result<()> {
        until_in_flight(&self.gw, "f", n, Duration::from_secs(10)).await
    }

    /// Every `tools/call` record of `tool`.
    fn records(&self, tool: &str) -> Result<Vec<Value>> {
        Ok(audit_lines(&self.dir.0.join("audit.jsonl"))?
            .into_iter()
            .filter(|r| r["method"] == "tools/call" && r["name"] == tool)
            .collect())
    }

    async fn metric(&self, series: &str) -> Result<Option<f64>> {
        let admin = self.gw.gateway().admin_addr().context("admin address")?;
        let (_, metrics) = admin_get(admin, "/metrics").await?;
        Ok(sample(&metrics, series))
    }
}

/// How many `tools/call`s of each tool reached the upstream.
async fn arrivals(c: &McpClient) -> Result<BTreeMap<String, u64>> {
    let r = c.call_tool("f__calls", json!({})).await?;
    let text = text_of(r.result()?)?;
    serde_json::from_str(text).with_context(|| format!("counts: {text}"))
}

fn spawn_call(c: &McpClient, tool: &str, args: Value) -> JoinHandle<Result<Reply>> {
    let (c, tool) = (c.clone(), tool.to_string());
    tokio::spawn(async move { c.call_tool(&tool, args).await })
}

/// The raw result text of each call, in order.
async fn raw_results(calls: Vec<JoinHandle<Result<Reply>>>) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for c in calls {
        out.push(c.await.context("join")??.raw_result()?);
    }
    Ok(out)
}

fn served(raw: &str) -> Result<u64> {
    let v: Value = serde_json::from_str(raw)?;
    v["x-demo-served"]
        .as_u64()
        .with_context(|| format!("no x-demo-served in {raw}"))
}

const COALESCED: &str = "[upstreams.f.overrides.slow_read]\ncoalesce = true\n";

#[tokio::test]
async fn identical_concurrent_calls_share_one_upstream_call_and_each_gets_its_answer() -> Result<()>
{
    bounded(async {
        let s = start("coalesce-share", COALESCED, "").await?;
        let c = s.gw.session("2025-11-25", json!({})).await?;
        let args = json!({"ms": SLOW, "key": "k"});
        let mut calls = vec![spawn_call(&c, "f__slow_read", args.clone())];
        s.until_upstream_holds(1).await?;
        // The same call, its members in another order: identical.
        calls.extend(
            (0..4).map(|_| spawn_call(&c, "f__slow_read", json!({"key": "k", "ms": SLOW}))),
        );
        // Other arguments: a call of its own.
        let other = spawn_call(&c, "f__slow_read", json!({"ms": SLOW, "key": "other"}));
        let results = raw_results(calls).await?;
        let other = raw_results(vec![other]).await?;
        // Every caller got the first call's result, byte for byte, with the
        // members the specification does not know.
        for r in &results {
            assert_eq!(r, &results[0]);
        }
        let first: Value = serde_json::from_str(&results[0])?;
        assert_eq!(first["content"][0]["text"], "k", "{first}");
        assert_eq!(first["x-demo-result-extra"], json!({"z": 1, "a": 2}));
        assert!(
            results[0].contains(r#""x-demo-result-extra":{"z":1,"a":2}"#),
            "member order kept: {}",
            results[0]
        );
        assert_ne!(served(&results[0])?, served(&other[0])?);
        let seen = arrivals(&c).await?;
        assert_eq!(
            seen.get("slow_read"),
            Some(&2),
            "one call each for two argument sets: {seen:?}"
        );
        // One record per caller; the four served from another's call say so.
        let records = s.records("f__slow_read")?;
        assert_eq!(records.len(), 6, "{records:#?}");
        let marked = records.iter().filter(|r| r["coalesced"] == true).count();
        assert_eq!(marked, 4, "{records:#?}");
        assert!(records.iter().all(|r| r["outcome"] == "ok"), "{records:#?}");
        assert_eq!(
            s.metric("manifold_coalesced_calls_total{upstream=\"f\"}")
                .await?,
            Some(4.0)
        );
        // Nothing is shared after the call ended: the next one is its own.
        let again = c
            .call_tool("f__slow_read", json!({"ms": 0, "key": "k"}))
            .await?;
        assert_eq!(served(&again.raw_result()?)?, 3);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn identical_calls_of_two_principals_never_share() -> Result<()> {
    bounded(async {
        let auth = format!(
            "[auth]\n[[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\n\n\
             [[auth.api_keys]]\nname = \"bob\"\nhash = \"{}\"\n",
            hash_key(ALICE),
            hash_key(BOB)
        );
        let s = start("coalesce-principals", COALESCED, &auth).await?;
        let alice = s.gw.client();
        alice.set_bearer(Some(ALICE));
        alice.initialize("2025-11-25", json!({})).await?;
        let bob = s.gw.client();
        bob.set_bearer(Some(BOB));
        bob.initialize("2025-11-25", json!({})).await?;
        let args = json!({"ms": SLOW, "key": "secret-report"});
        let a = spawn_call(&alice, "f__slow_read", args.clone());
        s.until_upstream_holds(1).await?;
        // Bob asks exactly what Alice asked, while her call is in flight: he
        // must not be served from it.
        let b = spawn_call(&bob, "f__slow_read", args.clone());
        s.until_upstream_holds(2).await?;
        // Alice's second session is still Alice: it shares her call.
        let alice2 = s.gw.client();
        alice2.set_bearer(Some(ALICE));
        alice2.initialize("2025-11-25", json!({})).await?;
        let a2 = spawn_call(&alice2, "f__slow_read", args);
        let r = raw_results(vec![a, b, a2]).await?;
        assert_ne!(
            served(&r[0])?,
            served(&r[1])?,
            "bob got alice's call: {r:?}"
        );
        assert_eq!(r[0], r[2], "alice's two sessions share");
        assert_eq!(arrivals(&alice).await?.get("slow_read"), Some(&2));
        let records = s.records("f__slow_read")?;
        let marked: Vec<&str> = records
            .iter()
            .filter(|r| r["coalesced"] == true)
            .filter_map(|r| r["principal"].as_str())
            .collect();
        assert_eq!(marked, ["key:alice"], "{records:#?}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn anonymous_callers_share_only_within_their_session() -> Result<()> {
    bounded(async {
        let s = start("coalesce-anonymous", COALESCED, "").await?;
        let one = s.gw.session("2025-11-25", json!({})).await?;
        let two = s.gw.session("2025-11-25", json!({})).await?;
        let args = json!({"ms": SLOW, "key": "k"});
        let a = spawn_call(&one, "f__slow_read", args.clone());
        s.until_upstream_holds(1).await?;
        let b = spawn_call(&two, "f__slow_read", args.clone());
        s.until_upstream_holds(2).await?;
        let a2 = spawn_call(&one, "f__slow_read", args);
        let r = raw_results(vec![a, b, a2]).await?;
        assert_ne!(served(&r[0])?, served(&r[1])?, "{r:?}");
        assert_eq!(r[0], r[2]);
        assert_eq!(arrivals(&one).await?.get("slow_read"), Some(&2));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn calls_to_a_2026_07_28_upstream_share_when_the_client_facts_agree() -> Result<()> {
    bounded(async {
        let auth = format!(
            "[auth]\n[[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\n",
            hash_key(ALICE)
        );
        let s = start_with(&["--modern"], "coalesce-modern", COALESCED, &auth).await?;
        // Alice's sessions: a 2026-07-28 upstream is told each client's
        // capabilities with each call, so only those that declare the same
        // share.
        let session = |capabilities: Value| {
            let c = s.gw.client();
            c.set_bearer(Some(ALICE));
            async move { c.initialize("2025-11-25", capabilities).await.map(|_| c) }
        };
        let (one, two) = (session(json!({})).await?, session(json!({})).await?);
        let roots = session(json!({"roots": {}})).await?;
        let args = json!({"ms": SLOW, "key": "k"});
        let mut calls = vec![spawn_call(&one, "f__slow_read", args.clone())];
        s.until_upstream_holds(1).await?;
        calls.push(spawn_call(&two, "f__slow_read", args.clone()));
        let apart = spawn_call(&roots, "f__slow_read", args);
        s.until_upstream_holds(2).await?;
        let r = raw_results(calls).await?;
        assert_eq!(r[0], r[1]);
        let apart = raw_results(vec![apart]).await?;
        assert_ne!(served(&r[0])?, served(&apart[0])?);
        assert_eq!(arrivals(&one).await?.get("slow_read"), Some(&2));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn calls_that_may_not_share_are_each_their_own() -> Result<()> {
    bounded(async {
        // `sleep` is not read-only: its `coalesce = true` is not honoured.
        // `slow_read` has no `coalesce`.
        let s = start(
            "coalesce-not",
            "[upstreams.f.overrides.sleep]\ncoalesce = true\n",
            "",
        )
        .await?;
        let c = s.gw.session("2025-11-25", json!({})).await?;
        for (tool, args) in [
            ("f__sleep", json!({"ms": SLOW})),
            ("f__slow_read", json!({"ms": SLOW, "key": "k"})),
        ] {
            let mut calls = vec![spawn_call(&c, tool, args.clone())];
            s.until_upstream_holds(1).await?;
            calls.extend((0..3).map(|_| spawn_call(&c, tool, args.clone())));
            s.until_upstream_holds(4).await?;
            for call in calls {
                let r = call.await??;
                assert_ne!(r.result()?["isError"], true, "{tool}: {r}");
            }
        }
        let seen = arrivals(&c).await?;
        assert_eq!(
            (seen.get("sleep"), seen.get("slow_read")),
            (Some(&4), Some(&4)),
            "{seen:?}"
        );
        assert!(s
            .records("f__sleep")?
            .iter()
            .chain(&s.records("f__slow_read")?)
            .all(|r| r.get("coalesced").is_none()));
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_call_with_a_progress_token_is_its_own() -> Result<()> {
    bounded(async {
        let s = start("coalesce-progress", COALESCED, "").await?;
        let c = s.gw.session("2025-11-25", json!({})).await?;
        let args = json!({"ms": SLOW, "key": "k"});
        let first = spawn_call(&c, "f__slow_read", args.clone());
        s.until_upstream_holds(1).await?;
        let with_token = {
            let c = c.clone();
            let params = json!({"name": "f__slow_read", "arguments": args,
                                "_meta": {"progressToken": "p"}});
            tokio::spawn(async move { c.request("tools/call", params).await })
        };
        s.until_upstream_holds(2).await?;
        let r = raw_results(vec![first, with_token]).await?;
        assert_ne!(served(&r[0])?, served(&r[1])?);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn callers_leaving_do_not_end_the_shared_call() -> Result<()> {
    bounded(async {
        let s = start("coalesce-cancel", COALESCED, "").await?;
        let c = s.gw.session("2025-11-25", json!({})).await?;
        let params = json!({"name": "f__slow_read", "arguments": {"ms": SLOW, "key": "k"}});
        let with_id = |id: &'static str| {
            let (c, params) = (c.clone(), params.clone());
            tokio::spawn(async move { c.request_with_id(json!(id), "tools/call", params).await })
        };
        // The first caller (whose request made the upstream call) cancels, a
        // follower cancels, another's HTTP request is dropped: the one left
        // still gets the result, from the one upstream call.
        let first = with_id("first");
        s.until_upstream_holds(1).await?;
        let leaves = with_id("leaves");
        let dropped = with_id("dropped");
        let stays = with_id("stays");
        crate::eventually("three followers wait", Duration::from_secs(10), || async {
            Ok(s.metric("manifold_coalesced_calls_total{upstream=\"f\"}")
                .await?
                .filter(|n| *n >= 3.0))
        })
        .await?;
        dropped.abort();
        for id in ["first", "leaves"] {
            let ack = c
                .notify("notifications/cancelled", json!({"requestId": id}))
                .await?;
            assert_eq!(ack.status, http::StatusCode::ACCEPTED);
        }
        // A cancelled request gets no response.
        for cancelled in [first, leaves] {
            let r = cancelled.await.context("join")?;
            assert!(
                r.is_err() || r.as_ref().is_ok_and(|r| r.response().is_err()),
                "{r:?}"
            );
        }
        let r = stays.await??;
        assert_eq!(text_of(r.result()?)?, "k", "{r}");
        assert_eq!(served(&r.raw_result()?)?, 1);
        assert_eq!(arrivals(&c).await?.get("slow_read"), Some(&1));
        // A session-era client that disconnects has not cancelled: its call
        // ran on and is recorded with the outcome, like any relayed call.
        let records = crate::eventually("four records", Duration::from_secs(10), || async {
            let r = s.records("f__slow_read")?;
            Ok((r.len() == 4).then_some(r))
        })
        .await?;
        let count = |outcome: &str| records.iter().filter(|r| r["outcome"] == outcome).count();
        assert_eq!((count("cancelled"), count("ok")), (2, 2), "{records:#?}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_2026_07_28_principal_shares_and_anonymous_requests_never_do() -> Result<()> {
    bounded(async {
        let auth = format!(
            "[auth]\nallow_anonymous = true\n\n\
             [[auth.api_keys]]\nname = \"alice\"\nhash = \"{}\"\n",
            hash_key(ALICE)
        );
        let s = start("coalesce-stateless", COALESCED, &auth).await?;
        let call = |id: u64| {
            stateless_request(
                id,
                "tools/call",
                json!({"name": "f__slow_read", "arguments": {"ms": SLOW, "key": "k"}}),
            )
        };
        let send = |bearer: Option<&'static str>, id: u64| {
            let (c, body) = (s.gw.client(), call(id));
            c.set_bearer(bearer);
            tokio::spawn(async move { c.send_stateless(&body, &[]).await })
        };
        let served_by = |r: &Value| r["result"]["x-demo-served"].as_u64();
        let a = send(Some(ALICE), 1);
        s.until_upstream_holds(1).await?;
        let a2 = send(Some(ALICE), 2);
        // A 2026-07-28 client cancels by closing its stream: this one leaves,
        // the others wait on.
        let leaves = send(Some(ALICE), 5);
        crate::eventually("two followers wait", Duration::from_secs(10), || async {
            Ok(s.metric("manifold_coalesced_calls_total{upstream=\"f\"}")
                .await?
                .filter(|n| *n >= 2.0))
        })
        .await?;
        leaves.abort();
        // Anonymous 2026-07-28 requests have no session to share within.
        let n = send(None, 3);
        s.until_upstream_holds(2).await?;
        let n2 = send(None, 4);
        s.until_upstream_holds(3).await?;
        let mut r = Vec::new();
        for call in [a, a2, n, n2] {
            let (status, v) = call.await??;
            assert_eq!(status, http::StatusCode::OK, "{v}");
            r.push(v);
        }
        assert_eq!(r[0]["result"], r[1]["result"], "alice's requests share");
        assert_eq!(
            (r[0]["id"].as_u64(), r[1]["id"].as_u64()),
            (Some(1), Some(2))
        );
        assert_eq!(r[1]["result"]["resultType"], "complete", "{}", r[1]);
        let anon = [served_by(&r[2]), served_by(&r[3])];
        assert!(
            anon[0].is_some() && anon[0] != anon[1] && anon[0] != served_by(&r[0]),
            "{r:?}"
        );
        let c = s.gw.session("2025-11-25", json!({})).await?;
        assert_eq!(arrivals(&c).await?.get("slow_read"), Some(&3));
        let records = crate::eventually("five records", Duration::from_secs(10), || async {
            let r = s.records("f__slow_read")?;
            Ok((r.len() == 5).then_some(r))
        })
        .await?;
        let alice: Vec<(&Value, &Value)> = records
            .iter()
            .filter(|r| r["principal"] == "key:alice")
            .map(|r| (&r["outcome"], &r["coalesced"]))
            .collect();
        let cancelled = alice.iter().filter(|(o, _)| *o == "cancelled").count();
        assert_eq!((alice.len(), cancelled), (3, 1), "{records:#?}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn every_caller_gets_the_shared_call_s_failure() -> Result<()> {
    bounded(async {
        let mut s = start("coalesce-fail", COALESCED, "").await?;
        let c = s.gw.session("2025-11-25", json!({})).await?;
        let args = json!({"ms": SLOW, "key": "k"});
        let mut calls = vec![spawn_call(&c, "f__slow_read", args.clone())];
        s.until_upstream_holds(1).await?;
        calls.extend((0..2).map(|_| spawn_call(&c, "f__slow_read", args.clone())));
        crate::eventually("two followers wait", Duration::from_secs(10), || async {
            Ok(s.metric("manifold_coalesced_calls_total{upstream=\"f\"}")
                .await?
                .filter(|n| *n >= 2.0))
        })
        .await?;
        // The upstream dies mid-call: every waiter gets the same tool error.
        s.remote.child.kill().await?;
        let results = raw_results(calls).await?;
        for r in &results {
            assert_eq!(r, &results[0]);
        }
        let first: Value = serde_json::from_str(&results[0])?;
        assert_eq!(first["isError"], true, "{first}");
        let records = s.records("f__slow_read")?;
        assert_eq!(records.len(), 3, "{records:#?}");
        assert!(records
            .iter()
            .all(|r| r["outcome"] == records[0]["outcome"]));
        assert_ne!(records[0]["outcome"], "ok");
        Ok(())
    })
    .await
}
