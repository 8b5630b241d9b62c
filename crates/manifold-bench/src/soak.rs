//! `manifold-load --soak MINUTES`: mixed traffic through one gateway for a long
//! run, to show that nothing grows without bound. Workers open session-era
//! sessions, call, list and close them, and send 2026-07-28 stateless calls; a
//! stdio upstream is crashed every minute (and restarted by the gateway). The
//! gateway's RSS and open file descriptors are sampled from `/proc` every few
//! seconds; the report gives their start, end and least-squares slope over the
//! run after a warm-up, with the request counts by outcome.
//!
//! Every loop ends at the deadline; all traffic stays on 127.0.0.1.

use anyhow::{Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{session::spawn_and_read_url, session::HttpClient, session::Kill, session::Session};

/// How often RSS and descriptors are sampled.
const SAMPLE_EVERY: Duration = Duration::from_secs(5);
/// How often the stdio upstream is crashed.
const CRASH_EVERY: Duration = Duration::from_secs(60);
/// Concurrent workers (each a client).
const WORKERS: usize = 8;
/// Calls per session before it is closed.
const CALLS_PER_SESSION: usize = 50;
/// The first part of the run left out of the slopes (allocators and caches
/// warm up).
const WARM_UP_SHARE: f64 = 0.2;

#[derive(Default)]
struct Counts {
    ok: AtomicU64,
    tool_errors: AtomicU64,
    failed: AtomicU64,
    sessions: AtomicU64,
    crashes: AtomicU64,
    /// Why requests failed, by reason (at most `MAX_REASONS` kept).
    reasons: parking_lot::Mutex<std::collections::BTreeMap<String, u64>>,
}

/// Distinct failure reasons kept for the report.
const MAX_REASONS: usize = 20;

impl Counts {
    fn failed(&self, why: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut r = self.reasons.lock();
        let why: String = why.chars().take(160).collect();
        if r.len() < MAX_REASONS || r.contains_key(&why) {
            *r.entry(why).or_insert(0) += 1;
        }
    }
}

struct Sample {
    at: f64,
    rss_kib: f64,
    fds: f64,
}

/// Reads `/proc/<pid>`: resident set (KiB) and open descriptors.
fn sample(pid: u32, at: f64) -> Option<Sample> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let rss_kib = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as f64;
    Some(Sample { at, rss_kib, fds })
}

/// Least-squares slope of `y` over `x`, per unit of `x`.
fn slope(points: &[(f64, f64)]) -> f64 {
    let n = points.len() as f64;
    if n < 2.0 {
        return 0.0;
    }
    let (sx, sy) = points
        .iter()
        .fold((0.0, 0.0), |(a, b), (x, y)| (a + x, b + y));
    let (mx, my) = (sx / n, sy / n);
    let (num, den) = points.iter().fold((0.0, 0.0), |(a, b), (x, y)| {
        (a + (x - mx) * (y - my), b + (x - mx) * (x - mx))
    });
    if den == 0.0 {
        0.0
    } else {
        num / den
    }
}

async fn post(
    client: &HttpClient,
    url: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Result<Bytes> {
    let mut b = http::Request::post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    let resp = client
        .request(b.body(Full::new(Bytes::from(body.to_string())))?)
        .await?;
    Ok(resp.into_body().collect().await?.to_bytes())
}

fn count(counts: &Counts, reply: Result<Bytes>) {
    match reply {
        Ok(b) if b.windows(14).any(|w| w == b"\"isError\":true") => {
            counts.tool_errors.fetch_add(1, Ordering::Relaxed);
        }
        Ok(b) if b.windows(8).any(|w| w == b"\"error\":") => {
            // By code and message: the ids differ from request to request.
            let v: Value = serde_json::from_slice(&b).unwrap_or(Value::Null);
            let why = match (v["error"]["code"].as_i64(), v["error"]["message"].as_str()) {
                (Some(code), Some(m)) => format!("{code} {m}"),
                _ => String::from_utf8_lossy(&b).into_owned(),
            };
            counts.failed(why)
        }
        Ok(_) => {
            counts.ok.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => counts.failed(format!("{e:#}")),
    }
}

/// One client: sessions of calls and lists, then stateless calls, until `end`.
async fn worker(client: HttpClient, url: String, end: Instant, counts: Arc<Counts>, n: usize) {
    let call = |name: &str, id: usize| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
               "params":{"name":name,"arguments":{"text":"soak"}}})
    };
    while Instant::now() < end {
        let session = Session::open(&client, &url).await;
        let Ok(session) = session.map_err(|e| counts.failed(format!("initialize: {e:#}"))) else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        counts.sessions.fetch_add(1, Ordering::Relaxed);
        for i in 0..CALLS_PER_SESSION {
            if Instant::now() >= end {
                break;
            }
            // Mostly the HTTP upstream; every tenth call the crashing stdio one;
            // every twentieth a list.
            let body = match i % 20 {
                0 => json!({"jsonrpc":"2.0","id":i,"method":"tools/list"}),
                5 | 15 => call("crashy__echo", i),
                _ => call("bench__echo", i),
            };
            count(&counts, session.post(&body).await.map(|(_, b)| b));
        }
        if let Some(id) = &session.id {
            let req = http::Request::delete(&url)
                .header("mcp-session-id", id)
                .body(Full::new(Bytes::new()));
            if let Ok(req) = req {
                let _ = client.request(req).await;
            }
        }
        // Stateless calls (2026-07-28), a handful per round.
        for i in 0..5 {
            let mut body = call(
                if i == 2 {
                    "crashy__echo"
                } else {
                    "bench__echo"
                },
                n * 1000 + i,
            );
            body["params"]["_meta"] = json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "manifold-soak", "version": "0"}
            });
            let name = body["params"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let headers = [
                ("mcp-protocol-version", "2026-07-28"),
                ("mcp-method", "tools/call"),
                ("mcp-name", name.as_str()),
            ];
            count(&counts, post(&client, &url, &body, &headers).await);
        }
    }
}

/// Runs the soak for `minutes` and prints the report.
pub(crate) async fn run(exe: &Path, dir: &Path, minutes: u64, pin: bool) -> Result<()> {
    let mut demo = std::process::Command::new(exe);
    demo.args(["demo-upstream", "--http", "127.0.0.1:0"]);
    let (_demo, demo_url) = spawn_and_read_url(demo, "listening on")?;
    let cfg = dir.join("soak.toml");
    std::fs::write(
        &cfg,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n\
             [upstreams.bench]\nurl = \"{demo_url}\"\n\n\
             [upstreams.crashy]\ncommand = {exe:?}\nargs = [\"demo-upstream\", \"--faults\"]\ntimeout = \"5s\"\n"
        ),
    )?;
    let mut gw = if pin {
        let mut c = std::process::Command::new("taskset");
        c.args(["-c", "1"]).arg(exe);
        c
    } else {
        std::process::Command::new(exe)
    };
    gw.arg("serve")
        .arg("--config")
        .arg(&cfg)
        .env("RUST_LOG", "error");
    let (gw, url): (Kill, String) = spawn_and_read_url(gw, "Manifold listening on")?;
    let pid = gw.0.id();

    let client: HttpClient =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .pool_max_idle_per_host(64)
            .build_http();
    let started = Instant::now();
    let end = started + Duration::from_secs(minutes * 60);
    let counts = Arc::new(Counts::default());
    let workers: Vec<_> = (0..WORKERS)
        .map(|n| tokio::spawn(worker(client.clone(), url.clone(), end, counts.clone(), n)))
        .collect();

    let mut samples = Vec::new();
    let mut next_crash = started + CRASH_EVERY;
    let crash = json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"crashy__crash","arguments":{}}});
    while Instant::now() < end {
        let at = started.elapsed().as_secs_f64();
        samples.push(sample(pid, at).context("reading the gateway's /proc entry")?);
        if Instant::now() >= next_crash {
            if let Ok(s) = Session::open(&client, &url).await {
                let _ = s.post(&crash).await;
                counts.crashes.fetch_add(1, Ordering::Relaxed);
            }
            next_crash += CRASH_EVERY;
        }
        tokio::time::sleep(SAMPLE_EVERY.min(end.saturating_duration_since(Instant::now()))).await;
    }
    for w in workers {
        let _ = w.await;
    }
    if let Some(s) = sample(pid, started.elapsed().as_secs_f64()) {
        samples.push(s);
    }
    report(&samples, &counts, started.elapsed());
    Ok(())
}

fn report(samples: &[Sample], counts: &Counts, took: Duration) {
    let warm = samples.len() as f64 * WARM_UP_SHARE;
    let steady: Vec<&Sample> = samples.iter().skip(warm as usize).collect();
    let per_min = |f: fn(&Sample) -> f64| {
        let points: Vec<(f64, f64)> = steady.iter().map(|s| (s.at / 60.0, f(s))).collect();
        slope(&points)
    };
    let (first, last) = match (steady.first(), samples.last()) {
        (Some(f), Some(l)) => (f, l),
        _ => {
            println!("no samples");
            return;
        }
    };
    let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
    let total = load(&counts.ok) + load(&counts.tool_errors) + load(&counts.failed);
    println!("| soak | value |");
    println!("|---|---|");
    println!("| duration | {:.1} min |", took.as_secs_f64() / 60.0);
    println!(
        "| requests | {total} ({:.0}/s) |",
        total as f64 / took.as_secs_f64()
    );
    println!(
        "| ok / tool errors / failed | {} / {} / {} |",
        load(&counts.ok),
        load(&counts.tool_errors),
        load(&counts.failed)
    );
    println!(
        "| sessions opened and closed | {} |",
        load(&counts.sessions)
    );
    println!("| upstream crashes caused | {} |", load(&counts.crashes));
    println!(
        "| RSS after warm-up → end | {:.1} → {:.1} MiB |",
        first.rss_kib / 1024.0,
        last.rss_kib / 1024.0
    );
    println!(
        "| RSS slope after warm-up | {:+.1} KiB/min |",
        per_min(|s| s.rss_kib)
    );
    println!(
        "| open fds after warm-up → end | {} → {} |",
        first.fds, last.fds
    );
    println!(
        "| fd slope after warm-up | {:+.2} /min |",
        per_min(|s| s.fds)
    );
    let reasons = counts.reasons.lock();
    for (why, n) in reasons.iter() {
        println!("| failed: {} | {n} |", why.replace('|', "/"));
    }
}

#[cfg(test)]
mod tests {
    use super::slope;

    #[test]
    fn slope_is_least_squares() {
        assert_eq!(slope(&[]), 0.0);
        assert_eq!(slope(&[(0.0, 5.0), (1.0, 5.0), (2.0, 5.0)]), 0.0);
        assert!((slope(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)]) - 2.0).abs() < 1e-9);
        // Noise around a flat line stays near zero.
        assert!(slope(&[(0.0, 1.0), (1.0, -1.0), (2.0, 1.0), (3.0, -1.0)]).abs() < 0.5);
    }
}
