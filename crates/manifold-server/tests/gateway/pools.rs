//! Pools of upstream instances (`[upstreams.x] instances = N` for a stdio
//! command, `urls = [...]` for HTTP): calls spread by least in flight, a
//! killed child costs only its own calls, a member that publishes other
//! lists gets no calls, an outlier is ejected, and a task stays on the
//! member that made it. The demo upstream's `--serial-calls MS` makes each
//! child handle one call at a time (a single-threaded server), so how calls
//! spread shows in each member's calls in flight.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use manifold_testkit::harness::{stateless_meta, toml_string, DemoHttp, TestGateway};
use manifold_upstream::{MemberReport, State, Upstream};
use serde_json::{json, Value};

use crate::observe::{admin_get, sample};
use crate::{bin, bounded, eventually, text_of};

/// A gateway in front of stdio upstream `kids`: `instances` children of the
/// demo started with `args`.
async fn stdio_pool(instances: usize, args: &[&str]) -> Result<(TestGateway, Upstream)> {
    let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
    let gw = TestGateway::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n[admin]\nlisten = \"127.0.0.1:0\"\n\n\
         [upstreams.kids]\ncommand = {}\nargs = [{}]\ninstances = {instances}\ntimeout = \"30s\"\n",
        toml_string(bin()),
        args.join(", ")
    ))
    .await?;
    let up = gw.gateway().upstreams()[0].clone();
    all_ready(&up).await?;
    Ok((gw, up))
}

/// Waits until every member of `up` is ready.
async fn all_ready(up: &Upstream) -> Result<Vec<MemberReport>> {
    eventually(
        "every pool member is ready",
        Duration::from_secs(15),
        || async {
            let m = up.members();
            Ok(m.iter()
                .all(|m| m.status.state == State::Ready)
                .then_some(m))
        },
    )
    .await
}

/// `/upstreams` on the admin listener.
async fn upstreams_json(gw: &TestGateway) -> Result<Value> {
    let admin = gw.gateway().admin_addr().context("admin address")?;
    let (status, body) = admin_get(admin, "/upstreams").await?;
    assert_eq!(status, 200, "{body}");
    Ok(serde_json::from_str(&body)?)
}

/// Calls in flight on each member.
fn in_flight(up: &Upstream) -> Vec<usize> {
    up.members().iter().map(|m| m.in_flight).collect()
}

#[tokio::test]
async fn calls_spread_over_the_children_and_a_killed_one_costs_only_its_own_calls() -> Result<()> {
    bounded(async {
        let (gw, up) = stdio_pool(4, &["--faults", "--serial-calls", "100"]).await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let n = 20;
        let calls: Vec<_> = (0..n)
            .map(|i| {
                let c = c.clone();
                tokio::spawn(async move { c.call_tool("kids__echo", json!({"text": format!("m{i}")})).await })
            })
            .collect();
        // All 20 out: least in flight gives each child its share (5, give or
        // take the race between two picks).
        let spread = eventually("every call is in flight", Duration::from_secs(5), || async {
            let f = in_flight(&up);
            Ok((f.iter().sum::<usize>() == n).then_some(f))
        })
        .await?;
        assert!(spread.iter().all(|&k| (3..=7).contains(&k)), "spread: {spread:?}");
        // `crash` skips the child's queue: the child it reaches dies with the
        // calls queued on it.
        let before = up.members();
        let crash = c.call_tool("kids__crash", json!({"code": 9})).await?;
        let crashed = crash.result().map(|r| r["isError"] == true).unwrap_or(true);
        assert!(crashed, "the crash call fails with its child");
        let killed = eventually("a child is noticed dead", Duration::from_secs(5), || async {
            Ok(up.members().iter().find(|m| m.status.restarts > 0 || m.status.state != State::Ready).map(|m| m.index))
        })
        .await?;
        let queued = before[killed].in_flight;
        let mut failed = Vec::new();
        for (i, t) in calls.into_iter().enumerate() {
            let r = t.await.context("join")??;
            let v = r.result()?.clone();
            if v["isError"] == true {
                failed.push(v);
            } else {
                assert_eq!(text_of(&v)?, format!("m{i}"), "each call gets its own answer");
            }
        }
        assert!(
            !failed.is_empty() && failed.len() <= queued,
            "only the killed child's calls fail: {} failed, {queued} were queued on it ({before:?})",
            failed.len()
        );
        for f in &failed {
            let text = text_of(f)?;
            assert!(text.contains("kids"), "the failure names the upstream: {text}");
        }
        // The pool goes on serving while the child restarts, then has four again.
        for i in 0..8 {
            let r = c.call_tool("kids__echo", json!({"text": format!("after{i}")})).await?;
            assert_eq!(text_of(r.result()?)?, format!("after{i}"));
        }
        let members = all_ready(&up).await?;
        assert_eq!(members[killed].status.restarts, 1, "{members:?}");
        assert_eq!(up.status().state, State::Ready);
        // The operator sees the members.
        let body = upstreams_json(&gw).await?;
        let pool = &body["upstreams"][0]["pool"]["members"];
        assert_eq!(pool.as_array().map(Vec::len), Some(4), "{body}");
        assert_eq!(pool[killed]["restarts"], 1, "{body}");
        // One member holds Manifold's own stateful requests; it moved only if
        // it was the one killed.
        let admin = gw.gateway().admin_addr().context("admin address")?;
        let (_, metrics) = admin_get(admin, "/metrics").await?;
        for (series, value) in [
            (r#"manifold_upstream_pool_members{upstream="kids",state="serving"}"#, 4.0),
            (r#"manifold_upstream_pool_members{upstream="kids",state="down"}"#, 0.0),
            (r#"manifold_upstream_pool_ejections{upstream="kids"}"#, 0.0),
        ] {
            assert_eq!(sample(&metrics, series), Some(value), "{series} in\n{metrics}");
        }
        let holders: Vec<usize> = (0..4).filter(|&i| pool[i]["holder"] == true).collect();
        let held = before.iter().position(|m| m.holder).context("a holder")?;
        assert_eq!(holders.len(), 1, "{body}");
        if held == killed {
            assert_ne!(holders[0], killed, "{body}");
        } else {
            assert_eq!(holders[0], held, "the holder stays while it serves: {body}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_member_that_publishes_other_tools_gets_no_calls_until_it_agrees() -> Result<()> {
    bounded(async {
        let (gw, up) = stdio_pool(2, &["--faults"]).await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        // `add_tool` adds a tool to the one child it reaches, which says
        // `list_changed`: the two children now disagree.
        let r = c
            .call_tool("kids__add_tool", json!({"name": "extra"}))
            .await?;
        assert_ne!(r.result()?["isError"], true, "{r:?}");
        let odd = eventually("a member disagrees", Duration::from_secs(10), || async {
            Ok(up.members().iter().find(|m| m.disagrees).map(|m| m.index))
        })
        .await?;
        let holder = up
            .members()
            .iter()
            .position(|m| m.holder)
            .context("a holder")?;
        assert_ne!(odd, holder, "the pool's lists are the holder's");
        // Calls now all go to the members that agree.
        let sleeps: Vec<_> = (0..6)
            .map(|_| {
                let c = c.clone();
                tokio::spawn(async move { c.call_tool("kids__sleep", json!({"ms": 400})).await })
            })
            .collect();
        let f = eventually("the sleeps are out", Duration::from_secs(5), || async {
            let f = in_flight(&up);
            Ok((f.iter().sum::<usize>() == 6).then_some(f))
        })
        .await?;
        assert_eq!(f[odd], 0, "the disagreeing member got calls: {f:?}");
        for t in sleeps {
            let r = t.await.context("join")??;
            assert_ne!(r.result()?["isError"], true);
        }
        let body = upstreams_json(&gw).await?;
        assert_eq!(
            body["upstreams"][0]["pool"]["members"][odd]["disagrees"], true,
            "{body}"
        );
        Ok(())
    })
    .await
}

/// A gateway in front of HTTP upstream `web`, a pool over `urls`.
async fn http_pool(urls: &[&str], extra: &str) -> Result<(TestGateway, Upstream)> {
    let urls: Vec<String> = urls.iter().map(|u| toml_string(u)).collect();
    let gw = TestGateway::start(&format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n\
         [upstreams.web]\nurls = [{}]\ntimeout = \"30s\"\n{extra}\n",
        urls.join(", ")
    ))
    .await?;
    let up = gw.gateway().upstreams()[0].clone();
    all_ready(&up).await?;
    Ok((gw, up))
}

#[tokio::test]
async fn an_http_member_whose_calls_fail_is_ejected_and_the_pool_goes_on() -> Result<()> {
    bounded(async {
        // Both in the demo's flaky mode, which lists its `calls` tool too (the
        // members must agree): the good one fails its first call only, the bad
        // one answers every tools/call with 503.
        let good = DemoHttp::spawn_bin(bin(), &["--flaky-outage", "1"]).await?;
        let bad = DemoHttp::spawn_bin(bin(), &["--flaky-unavailable", "1.0"]).await?;
        let (gw, up) = http_pool(&[&good.url, &bad.url], "").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let mut outcomes = Vec::new();
        for i in 0..60 {
            let r = c
                .call_tool("web__echo", json!({"text": format!("e{i}")}))
                .await?;
            outcomes.push(r.result()?["isError"] != true);
        }
        let members = up.members();
        assert_eq!(members[1].ejections, 1, "{members:?}");
        assert!(members[1].ejected_for.is_some(), "{members:?}");
        assert_eq!(
            members[0].ejections, 0,
            "the healthy member stays: {members:?}"
        );
        // Once ejected (after OUTLIER_MIN_CALLS of its calls, or one more if
        // the good member had not yet been called as often: the baseline),
        // every call succeeds; the good member failed its first call.
        let failures = outcomes.iter().filter(|ok| !**ok).count();
        assert!(
            failures <= manifold_upstream::OUTLIER_MIN_CALLS as usize + 2,
            "{failures} failures: {outcomes:?}"
        );
        assert!(
            outcomes[outcomes.len() - 20..].iter().all(|ok| *ok),
            "{outcomes:?}"
        );
        // One instance gone: the other serves.
        drop(bad);
        for i in 0..5 {
            let r = c
                .call_tool("web__echo", json!({"text": format!("g{i}")}))
                .await?;
            assert_eq!(text_of(r.result()?)?, format!("g{i}"));
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_task_stays_on_the_member_that_made_it() -> Result<()> {
    bounded(async {
        // Each instance keeps its own tasks: a tasks/get that reached the
        // other would be answered as an unknown task.
        let a = DemoHttp::spawn_bin(bin(), &["--modern", "--tasks"]).await?;
        let b = DemoHttp::spawn_bin(bin(), &["--modern", "--tasks"]).await?;
        let (gw, up) = http_pool(&[&a.url, &b.url], "").await?;
        let c = gw.client();
        let req = |id: u64, method: &str, mut params: Value| {
            params["_meta"] =
                stateless_meta(json!({"extensions": {"io.modelcontextprotocol/tasks": {}}}));
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        };
        let mut ids = Vec::new();
        for i in 0..4 {
            let (_, r) = c
                .send_stateless(
                    &req(
                        i,
                        "tools/call",
                        json!({"name": "web__task_slow", "arguments": {"ms": 200}}),
                    ),
                    &[],
                )
                .await?;
            assert_eq!(r["result"]["resultType"], "task", "{r}");
            ids.push(
                r["result"]["taskId"]
                    .as_str()
                    .context("taskId")?
                    .to_string(),
            );
        }
        // Both members made some (least in flight, taken in turn).
        let _ = up;
        for id in &ids {
            for round in 0..4 {
                let (_, r) = c
                    .send_stateless(&req(10 + round, "tasks/get", json!({"taskId": id})), &[])
                    .await?;
                if r.get("error").is_some() {
                    bail!("tasks/get of {id} was not answered by its member: {r}");
                }
                assert_eq!(r["result"]["taskId"], id.as_str(), "{r}");
            }
        }
        Ok(())
    })
    .await
}

/// `tools/call` of `tool` sent straight to pool member `member` (as a task's
/// `tasks/*` are): what the test uses to reach one child in particular.
async fn on_member(up: &Upstream, member: usize, tool: &str, args: Value) -> Result<Value> {
    let pin = manifold_upstream::ClientFacts {
        member: Some(member),
        ..Default::default()
    };
    let params = json!({"name": tool, "arguments": args});
    let mut call = up
        .call_as(
            "tools/call",
            params.as_object().cloned(),
            Vec::new(),
            Some(&pin),
        )
        .await?;
    match call.outcome().await {
        manifold_upstream::CallOutcome::Result(raw) => Ok(serde_json::from_str(raw.get())?),
        other => bail!("{tool} on member {member}: {other:?}"),
    }
}

#[tokio::test]
async fn a_subscription_is_held_by_one_member_and_moves_when_it_dies() -> Result<()> {
    bounded(async {
        let (gw, up) = stdio_pool(2, &["--faults"]).await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let mut stream = c.open_get_stream().await?;
        c.request("resources/subscribe", json!({"uri": "demo://readme"}))
            .await?
            .result()?;
        let holder = up
            .members()
            .iter()
            .position(|m| m.holder)
            .context("a holder")?;
        let other = 1 - holder;
        // The demo's `touch` fails where nobody subscribed: the holder alone
        // has the subscription (an update is never relayed twice).
        let touch = json!({"uri": "demo://readme"});
        let r = on_member(&up, holder, "touch", touch.clone()).await?;
        assert_ne!(r["isError"], true, "the holder is subscribed: {r}");
        stream
            .wait_for(|m| m["method"] == "notifications/resources/updated")
            .await?;
        let r = on_member(&up, other, "touch", touch.clone()).await?;
        assert_eq!(r["isError"], true, "only the holder is subscribed: {r}");
        // The holder dies: the other member takes over and is subscribed.
        let _ = on_member(&up, holder, "crash", json!({})).await;
        eventually(
            "the other member holds",
            Duration::from_secs(10),
            || async { Ok(up.members()[other].holder.then_some(())) },
        )
        .await?;
        let r = eventually(
            "the subscription moved",
            Duration::from_secs(10),
            || async {
                let r = on_member(&up, other, "touch", touch.clone()).await?;
                Ok((r["isError"] != true).then_some(r))
            },
        )
        .await?;
        assert_ne!(r["isError"], true);
        let update = stream
            .wait_for(|m| m["method"] == "notifications/resources/updated")
            .await?;
        assert_eq!(update["params"]["uri"], "demo://readme", "{update}");
        // The restarted child does not hold it again.
        all_ready(&up).await?;
        let r = on_member(&up, holder, "touch", touch).await?;
        assert_eq!(r["isError"], true, "held once, by the new holder: {r}");
        Ok(())
    })
    .await
}
