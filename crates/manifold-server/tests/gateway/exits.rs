//! A stdio upstream whose process goes away is noticed at once, whatever the
//! gateway was doing with it: killed while the upstream's own actor waits on it
//! (a list refetch, a liveness ping), exiting 0 on its own, killed with a
//! client's call in flight, exiting while the gateway reloads. Each time calls
//! in flight fail as unavailable, the state leaves `ready` within a second,
//! and the upstream restarts. Each is run against a session-era and a
//! 2026-07-28 upstream.
//!
//! The demo upstream kills itself (`--misbehave die-on-refetch|die-on-ping`)
//! at the request the actor sends, so the order of the two events (a request
//! waiting, the process gone) is forced, not hoped for.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use manifold_testkit::harness::{toml_string, TestGateway};
use manifold_upstream::{State, Upstream, UpstreamStatus};
use serde_json::json;
use tokio::time::Instant;

use crate::{bin, bounded, ok_text, text_of};

/// What a killed upstream must be reported within: not ready, its calls failed.
const NOTICED_WITHIN: Duration = Duration::from_secs(1);
/// The actor refetches at most once per this window (`LIST_CHANGED_DEBOUNCE`).
const DEBOUNCE: Duration = manifold_upstream::LIST_CHANGED_DEBOUNCE;
/// The upstream's call timeout: far longer than any bound below, so a call or
/// a refetch that waited for it instead of noticing the exit fails the test.
const CALL_TIMEOUT: &str = "30s";

/// The demo's flags for each era of upstream: the 2026-07-28 one keeps its
/// lists long (`ttlMs`), so only the test's `add_tool` makes the gateway
/// refetch them.
const ERAS: &[(&str, &[&str])] = &[
    ("session", &[]),
    ("2026-07-28", &["--modern", "--list-ttl-ms", "600000"]),
];

/// A gateway in front of one required stdio upstream `local` started with
/// `args`, plus `extra` configuration lines for it.
async fn gateway(args: &[&str], extra: &str) -> Result<(TestGateway, Upstream)> {
    let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
    let toml = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\n\n\
         [upstreams.local]\ncommand = {}\nargs = [{}]\nrequired = true\ntimeout = \"{CALL_TIMEOUT}\"\n{extra}\n",
        toml_string(bin()),
        args.join(", ")
    );
    let gw = TestGateway::start(&toml).await?;
    let up = gw
        .gateway()
        .upstreams()
        .into_iter()
        .find(|u| &**u.name() == "local")
        .context("no upstream local")?;
    if up.status().state != State::Ready {
        bail!("local is not ready: {:?}", up.status());
    }
    Ok((gw, up))
}

/// Waits until `up`'s status satisfies `want`, at the latest at `deadline`;
/// the status and when it was seen.
async fn status_until(
    up: &Upstream,
    deadline: Instant,
    what: &str,
    want: impl Fn(&UpstreamStatus) -> bool,
) -> Result<(UpstreamStatus, Instant)> {
    let mut rx = up.watch_status();
    loop {
        let st = rx.borrow_and_update().clone();
        if want(&st) {
            return Ok((st, Instant::now()));
        }
        if tokio::time::timeout_at(deadline, rx.changed())
            .await
            .is_err()
        {
            bail!("{what}: not by the deadline; the status is {st:?}");
        }
    }
}

/// Waits (bounded) until the restarted upstream is ready and answers again.
async fn comes_back(gw: &TestGateway, up: &Upstream) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(15);
    let (st, _) = status_until(up, deadline, "ready again", |s| s.state == State::Ready).await?;
    assert!(st.restarts >= 1, "{st:?}");
    let client = gw.session("2025-11-25", json!({})).await?;
    let reply = client
        .call_tool("local__echo", json!({"text": "back"}))
        .await?;
    assert_eq!(ok_text(&reply)?, "back");
    Ok(())
}

#[tokio::test]
async fn a_child_killed_while_its_lists_are_refetched_is_noticed_at_once() -> Result<()> {
    bounded(async {
        for (era, era_args) in ERAS {
            let mut args = vec!["--faults", "--misbehave", "die-on-refetch"];
            args.extend_from_slice(era_args);
            let (gw, up) = gateway(&args, "").await?;
            // The last fetch was before this point: a refetch asked for from
            // here on starts within the debounce window.
            let fetched_by = Instant::now();
            let client = gw.session("2025-11-25", json!({})).await?;
            // A client's call in flight when the process dies.
            let sleeper = {
                let c = gw.session("2025-11-25", json!({})).await?;
                tokio::spawn(
                    async move { c.call_tool("local__sleep", json!({"ms": 20_000})).await },
                )
            };
            crate::until_in_flight(&gw, "local", 1, Duration::from_secs(5)).await?;
            // `list_changed` makes the gateway refetch; the child dies at it.
            let reply = client
                .call_tool("local__add_tool", json!({"name": "extra"}))
                .await?;
            ok_text(&reply).with_context(|| format!("{era}: add_tool"))?;
            let refetch_by = fetched_by.max(Instant::now()) + DEBOUNCE;
            let (st, _) = status_until(&up, refetch_by + NOTICED_WITHIN, era, |s| {
                s.state != State::Ready
            })
            .await?;
            assert_eq!(st.state, State::Down, "{era}: {st:?}");
            assert_eq!(st.last_exit_code, Some(-9), "{era}: {st:?}");
            let why = st.last_error.clone().unwrap_or_default();
            assert!(why.contains("signal 9"), "{era}: {why}");
            // The call in flight failed as unavailable, naming the exit, without
            // waiting for its timeout.
            let reply = tokio::time::timeout_at(refetch_by + NOTICED_WITHIN, sleeper)
                .await
                .with_context(|| format!("{era}: the call in flight was not failed"))???;
            let result = reply.result()?;
            assert_eq!(result["isError"], true, "{era}: {result}");
            let text = text_of(result)?;
            assert!(
                text.contains("`local`") && text.contains("signal 9"),
                "{era}: {text}"
            );
            comes_back(&gw, &up)
                .await
                .with_context(|| era.to_string())?;
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_child_killed_at_a_liveness_ping_is_noticed_at_once() -> Result<()> {
    bounded(async {
        let ping = Duration::from_millis(300);
        for (era, era_args) in ERAS {
            let mut args = vec!["--misbehave", "die-on-ping"];
            args.extend_from_slice(era_args);
            let extra = format!("ping_interval = \"{}ms\"", ping.as_millis());
            let (_gw, up) = gateway(&args, &extra).await?;
            // The first ping goes out `ping` after the upstream became ready,
            // which was before this point.
            let pinged_by = Instant::now() + ping;
            let (st, _) = status_until(&up, pinged_by + NOTICED_WITHIN, era, |s| {
                s.state != State::Ready
            })
            .await?;
            assert_eq!(st.state, State::Down, "{era}: {st:?}");
            assert_eq!(st.last_exit_code, Some(-9), "{era}: {st:?}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_child_that_exits_0_on_its_own_is_noticed_and_restarted() -> Result<()> {
    bounded(async {
        for (era, era_args) in ERAS {
            let mut args = vec!["--faults"];
            args.extend_from_slice(era_args);
            let (gw, up) = gateway(&args, "").await?;
            let client = gw.session("2025-11-25", json!({})).await?;
            let asked = Instant::now();
            let reply = client.call_tool("local__crash", json!({"code": 0})).await?;
            let result = reply.result()?;
            assert_eq!(result["isError"], true, "{era}: {result}");
            let (st, _) = status_until(&up, asked + NOTICED_WITHIN, era, |s| {
                s.state != State::Ready
            })
            .await?;
            assert_eq!(st.state, State::Down, "{era}: {st:?}");
            assert_eq!(st.last_exit_code, Some(0), "{era}: {st:?}");
            comes_back(&gw, &up)
                .await
                .with_context(|| era.to_string())?;
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_child_killed_while_the_gateway_reloads_is_noticed_and_restarted() -> Result<()> {
    bounded(async {
        for (era, era_args) in ERAS {
            let mut args = vec!["--faults", "--misbehave", "die-on-refetch"];
            args.extend_from_slice(era_args);
            let (gw, up) = gateway(&args, "").await?;
            let fetched_by = Instant::now();
            let client = gw.session("2025-11-25", json!({})).await?;
            // A reload that adds an upstream, under way while `local` dies.
            let mut cfg = (*gw.gateway().config()).clone();
            let mut other = cfg
                .upstreams
                .first()
                .cloned()
                .context("no upstream in the configuration")?;
            other.name = "other".into();
            if let manifold_config::Transport::Stdio { args, .. } = &mut other.transport {
                args.clear();
            }
            cfg.upstreams.push(other);
            let reload = {
                let gw = gw.gateway().clone();
                tokio::spawn(async move { gw.reload(cfg).await })
            };
            let reply = client
                .call_tool("local__add_tool", json!({"name": "extra"}))
                .await?;
            ok_text(&reply)?;
            let refetch_by = fetched_by.max(Instant::now()) + DEBOUNCE;
            let (st, _) = status_until(&up, refetch_by + NOTICED_WITHIN, era, |s| {
                s.state != State::Ready
            })
            .await?;
            assert_eq!(st.last_exit_code, Some(-9), "{era}: {st:?}");
            let report = reload.await??;
            assert_eq!(report.added, ["other"], "{era}");
            comes_back(&gw, &up)
                .await
                .with_context(|| era.to_string())?;
        }
        Ok(())
    })
    .await
}
