//! Measuring: warm-up, rounds that alternate the direct connection and the
//! gateway, and each round's throughput and latency percentiles ([`Stats`]).
//!
//! Invariants: a ratio is of two measurements of one round, taken back to
//! back on the same machine.

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::time::{Duration, Instant};

use crate::args::Args;
use crate::session::{HttpClient, Session};

pub(crate) struct Stats {
    pub(crate) calls: usize,
    pub(crate) secs: f64,
    pub(crate) p50_us: u128,
    pub(crate) p99_us: u128,
}

/// Warm-up calls of each worker before a measurement, not recorded.
pub(crate) const WARMUP_CALLS: usize = 20;

/// Runs direct and gateway measurements in alternating rounds; returns the rounds
/// with the median throughput of each.
pub(crate) async fn compare(
    client: &HttpClient,
    direct: (&str, &Value),
    gateway: (&str, &Value),
    concurrency: usize,
    args: &Args,
) -> Result<(Stats, Stats)> {
    compare_warm(client, direct, gateway, concurrency, args, WARMUP_CALLS).await
}

/// [`compare`] with `warmup` calls per worker first (fewer for a slow
/// upstream, whose warm-up would otherwise eat the measurement).
pub(crate) async fn compare_warm(
    client: &HttpClient,
    (direct_url, direct_body): (&str, &Value),
    (gw_url, gw_body): (&str, &Value),
    concurrency: usize,
    args: &Args,
    warmup: usize,
) -> Result<(Stats, Stats)> {
    let (mut d, mut g) = (Vec::new(), Vec::new());
    let secs = args.seconds;
    for _ in 0..args.rounds.max(1) {
        let body = direct_body.clone();
        d.push(measure_warm(client, direct_url, body, concurrency, secs, warmup).await?);
        let body = gw_body.clone();
        g.push(measure_warm(client, gw_url, body, concurrency, secs, warmup).await?);
    }
    let median = |mut v: Vec<Stats>| {
        v.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
        v.swap_remove(v.len() / 2)
    };
    Ok((median(d), median(g)))
}

impl Stats {
    pub(crate) fn rate(&self) -> f64 {
        self.calls as f64 / self.secs
    }
}

pub(crate) async fn measure(
    client: &HttpClient,
    url: &str,
    body: Value,
    concurrency: usize,
    secs: u64,
) -> Result<Stats> {
    measure_warm(client, url, body, concurrency, secs, WARMUP_CALLS).await
}

pub(crate) async fn measure_warm(
    client: &HttpClient,
    url: &str,
    body: Value,
    concurrency: usize,
    secs: u64,
    warmup: usize,
) -> Result<Stats> {
    // `URL#K1,K2,…`: callers with different keys; worker w holds a session for
    // each key w, w + concurrency, … and takes them in turn, so every key (and,
    // under `[[policy]]`, every view) is in use.
    let (base, keys): (&str, Vec<Option<&str>>) = match url.split_once('#') {
        Some((u, k)) => (u, k.split(',').map(Some).collect()),
        None => (url, vec![None]),
    };
    let mut tasks = Vec::new();
    let mut workers = Vec::new();
    for w in 0..concurrency {
        let mut sessions = Vec::new();
        for key in keys.iter().skip(w % keys.len()).step_by(concurrency.max(1)) {
            let target = match key {
                Some(k) => format!("{base}#{k}"),
                None => base.to_string(),
            };
            sessions.push(Session::open(client, &target).await?);
        }
        workers.push(sessions);
    }
    let deadline = Instant::now() + Duration::from_secs(secs);
    for sessions in workers {
        let body = body.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            // Warm-up, not recorded.
            for s in sessions.iter().cycle().take(warmup) {
                s.post(&body).await?;
            }
            let mut turn = sessions.iter().cycle();
            while Instant::now() < deadline {
                let session = turn.next().context("a session")?;
                let t = Instant::now();
                let (_, bytes) = session.post(&body).await?;
                lat.push(t.elapsed().as_micros());
                if bytes.windows(8).any(|w| w == b"\"error\":") {
                    bail!("error reply: {}", String::from_utf8_lossy(&bytes));
                }
            }
            for s in &sessions {
                s.close().await;
            }
            Ok::<_, anyhow::Error>(lat)
        }));
    }
    let started = Instant::now();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    let secs = started.elapsed().as_secs_f64();
    all.sort_unstable();
    let pct = |p: f64| {
        all.get(((all.len() as f64 * p) as usize).min(all.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Ok(Stats {
        calls: all.len(),
        secs,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
    })
}
