//! `manifold-load --peers`: the same `tools/call echo` sent directly to an upstream,
//! through Manifold and through the peer gateway `mcp-proxy`, against the same two
//! upstreams (the demo over Streamable HTTP, and the demo over stdio, which each
//! gateway spawns and this process drives itself for the direct column), and, over
//! HTTP, through a byte relay on the gateways' CPU (`relay`: the floor — what the
//! extra process alone adds, with no work per call). Rounds
//! alternate between the targets; each target's round with the median calls/s is
//! reported, with its p50/p99, the target process's CPU per call and RSS, then
//! each process's memory idle, after the load and with `--sessions` sessions open.
//!
//! CPU per call is the target process's own utime + stime (all its threads, from
//! `/proc/<pid>/stat`) over the timed part of the round, divided by the round's
//! calls: for a gateway, the gateway process alone (not the stdio upstream it
//! spawned); for "direct", the upstream process. It is 10 ms ticks over seconds of
//! load, so about 1 % resolution.
//!
//! Not here: starting the processes (`targets`), instruction counts (`callgrind`).

use anyhow::{bail, Context, Result};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::session::HttpClient;
use crate::targets::{
    check_reply, cpu_seconds, echo, new_client, rss_kib, start_gateway, start_http_demo, Binaries,
    Caller, Endpoint, Gateway, Launch, Product, StdioConn,
};

/// Untimed calls per worker before a round's clock and CPU reading start.
const WARM_UP_CALLS: usize = 20;
/// Quiet time before an idle or held-sessions RSS reading (mimalloc returns freed
/// pages after 10 ms; this leaves every process time to settle).
const SETTLE: Duration = Duration::from_secs(1);
/// Sessions opened in parallel for the held-sessions reading.
const OPEN_PARALLEL: usize = 16;

/// Options of `--peers` and `--callgrind` (the others, `--seconds`, `--rounds`,
/// `--concurrency`, `--pin`, are shared with the other scenarios).
#[derive(clap::Args)]
pub(crate) struct PeersArgs {
    /// Instead of the comparison with a direct connection: direct, Manifold and
    /// mcp-proxy side by side against the same upstreams (`scripts/bench-peers`).
    #[arg(long)]
    pub(crate) peers: bool,
    /// Instead of the comparison: the gateway under `valgrind --tool=callgrind`,
    /// user-space instructions per `tools/call` over `--calls` calls at each
    /// concurrency (a count that does not depend on the machine's load).
    #[arg(long)]
    pub(crate) callgrind: bool,
    /// The mcp-proxy binary (`scripts/bench-peers` installs 0.6.0 there).
    #[arg(long, default_value = ".peers/mcp-proxy/bin/mcp-proxy")]
    pub(crate) mcp_proxy: PathBuf,
    /// Which targets: `direct`, `relay` (a byte relay on the gateways' CPU, the
    /// floor of any gateway; HTTP only), `manifold`, `mcp-proxy` (`--callgrind`
    /// takes the gateways only and defaults to `manifold`).
    #[arg(long, value_delimiter = ',')]
    pub(crate) targets: Vec<String>,
    /// Which upstreams the calls go to: `http`, `stdio`.
    #[arg(long, value_delimiter = ',', default_value = "http,stdio")]
    pub(crate) upstreams: Vec<String>,
    /// Sessions held open for the memory table's last reading (`--peers`).
    #[arg(long, default_value_t = 1000)]
    pub(crate) sessions: usize,
    /// Calls per concurrency level counted under callgrind.
    #[arg(long, default_value_t = 2000)]
    pub(crate) calls: usize,
    /// Keep the callgrind profiles in this directory (for `callgrind_annotate`).
    #[arg(long)]
    pub(crate) callgrind_out: Option<PathBuf>,
    /// With `--callgrind`: also print this many functions by inclusive
    /// instructions per call (`callgrind_annotate --inclusive=yes`).
    #[arg(long, default_value_t = 0)]
    pub(crate) top: usize,
    /// Internal: run as the byte relay to this address (`relay`), which
    /// `--peers` starts for its `relay` target.
    #[arg(long, hide = true, value_name = "ADDR")]
    pub(crate) relay_to: Option<std::net::SocketAddr>,
}

impl PeersArgs {
    pub(crate) fn binaries(&self, manifold: &Path) -> Result<Binaries> {
        let mcp_proxy = if self.wants(Product::McpProxy, !self.callgrind) {
            std::fs::canonicalize(&self.mcp_proxy).with_context(|| {
                format!(
                    "the mcp-proxy binary {} (scripts/bench-peers installs it)",
                    self.mcp_proxy.display()
                )
            })?
        } else {
            self.mcp_proxy.clone()
        };
        Ok(Binaries {
            manifold: manifold.to_path_buf(),
            mcp_proxy,
        })
    }

    /// Whether `product` is among the targets (`default` when none are named).
    pub(crate) fn wants(&self, product: Product, default: bool) -> bool {
        let name = match product {
            Product::Manifold => "manifold",
            Product::McpProxy => "mcp-proxy",
        };
        if self.targets.is_empty() {
            return default || product == Product::Manifold;
        }
        self.targets.iter().any(|t| t == name)
    }

    pub(crate) fn check(&self) -> Result<()> {
        for t in &self.targets {
            if !["direct", "relay", "manifold", "mcp-proxy"].contains(&t.as_str()) {
                bail!("unknown target {t:?}: expected direct, relay, manifold or mcp-proxy");
            }
        }
        for u in &self.upstreams {
            if !["http", "stdio"].contains(&u.as_str()) {
                bail!("unknown upstream {u:?}: expected http or stdio");
            }
        }
        Ok(())
    }
}

/// One timed round against one target.
pub(crate) struct Round {
    pub(crate) calls: usize,
    pub(crate) secs: f64,
    pub(crate) p50_us: u128,
    pub(crate) p99_us: u128,
    /// The target process's CPU seconds over the timed part.
    pub(crate) cpu_secs: f64,
    /// Its RSS (KiB) when the round ended.
    pub(crate) rss_kib: u64,
}

impl Round {
    fn rate(&self) -> f64 {
        self.calls as f64 / self.secs
    }
    fn cpu_us_per_call(&self) -> f64 {
        1e6 * self.cpu_secs / self.calls.max(1) as f64
    }
}

/// `concurrency` callers of `endpoint` (each an MCP session over HTTP).
pub(crate) async fn open_callers(
    client: &HttpClient,
    endpoint: &Endpoint,
    concurrency: usize,
) -> Result<Vec<Arc<Caller>>> {
    let mut callers = Vec::with_capacity(concurrency);
    for _ in 0..concurrency {
        callers.push(Arc::new(endpoint.caller(client).await?));
    }
    Ok(callers)
}

/// Each caller, in parallel, sends `body` until `per_caller` calls are made or
/// `deadline` passes (whichever is first); returns every latency (µs).
pub(crate) async fn drive(
    callers: &[Arc<Caller>],
    body: &Value,
    per_caller: usize,
    deadline: Instant,
) -> Result<Vec<u128>> {
    let mut tasks = Vec::with_capacity(callers.len());
    for caller in callers {
        let (caller, body) = (caller.clone(), body.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while lat.len() < per_caller && Instant::now() < deadline {
                let t = Instant::now();
                let reply = caller.call(&body).await?;
                lat.push(t.elapsed().as_micros());
                check_reply(&reply)?;
            }
            Ok::<_, anyhow::Error>(lat)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    Ok(all)
}

/// A timed round: callers opened and warmed up, then `secs` of calls with the
/// target's CPU time read around them.
async fn round(
    client: &HttpClient,
    endpoint: &Endpoint,
    pid: u32,
    body: &Value,
    concurrency: usize,
    secs: u64,
) -> Result<Round> {
    let callers = open_callers(client, endpoint, concurrency).await?;
    let far = Instant::now() + Duration::from_secs(60);
    drive(&callers, body, WARM_UP_CALLS, far).await?;
    let cpu0 = cpu_seconds(pid)?;
    let started = Instant::now();
    let mut lat = drive(
        &callers,
        body,
        usize::MAX,
        started + Duration::from_secs(secs),
    )
    .await?;
    let secs = started.elapsed().as_secs_f64();
    let cpu_secs = cpu_seconds(pid)? - cpu0;
    for c in &callers {
        c.close().await;
    }
    lat.sort_unstable();
    let pct = |p: f64| {
        lat.get(((lat.len() as f64 * p) as usize).min(lat.len().saturating_sub(1)))
            .copied()
            .unwrap_or(0)
    };
    Ok(Round {
        calls: lat.len(),
        secs,
        p50_us: pct(0.50),
        p99_us: pct(0.99),
        cpu_secs,
        rss_kib: rss_kib(pid)?.0,
    })
}

/// One target reached through one upstream: a row of the comparison.
struct Leg {
    label: String,
    endpoint: Endpoint,
    tool: String,
    /// The process whose CPU and RSS are read.
    pid: u32,
}

impl Leg {
    /// A leg that calls the upstream's own `echo` (no gateway prefix).
    fn upstream_echo(label: &str, endpoint: Endpoint, pid: u32) -> Leg {
        Leg {
            label: label.into(),
            endpoint,
            tool: "echo".into(),
            pid,
        }
    }
}

/// One target: its rows for the HTTP and the stdio upstream (the relay has no
/// stdio row: bridging a socket to a child's pipes is a gateway's work).
struct Target {
    http: Leg,
    stdio: Option<Leg>,
}

impl Target {
    fn leg(&self, upstream: &str) -> Option<&Leg> {
        if upstream == "http" {
            Some(&self.http)
        } else {
            self.stdio.as_ref()
        }
    }
}

/// Memory of one process through the run (KiB).
#[derive(Default)]
struct Memory {
    idle: (u64, u64),
    after_load: (u64, u64),
    sessions: Option<(u64, u64)>,
}

fn mib(kib: u64) -> String {
    format!("{:.1}", kib as f64 / 1024.0)
}

/// Runs the side-by-side comparison and prints its two tables.
pub(crate) async fn run(
    exe: &Path,
    dir: &Path,
    args: &PeersArgs,
    (concurrency, seconds, rounds, pin): (&[usize], u64, usize, bool),
) -> Result<()> {
    args.check()?;
    let bins = args.binaries(exe)?;
    let launch = if pin { Launch::Pinned } else { Launch::Plain };
    let (demo, http_url) = start_http_demo(exe)?;
    let stdio = StdioConn::start(exe).await?;
    let mut gateways: Vec<Gateway> = Vec::new();
    for product in [Product::Manifold, Product::McpProxy] {
        if args.wants(product, true) {
            gateways.push(start_gateway(product, &bins, dir, &http_url, &launch).await?);
        }
    }
    let client = new_client();

    // Targets: "direct" is one row per upstream (a different process each).
    let named = |t: &str| args.targets.is_empty() || args.targets.iter().any(|n| n == t);
    let direct = named("direct");
    let relay = if named("relay") && args.upstreams.iter().any(|u| u == "http") {
        Some(crate::relay::start(&http_url, pin)?)
    } else {
        None
    };
    let mut targets = Vec::new();
    if direct {
        targets.push(Target {
            http: Leg::upstream_echo(
                "direct (HTTP demo upstream)",
                Endpoint::Http(http_url.clone()),
                demo.0.id(),
            ),
            stdio: Some(Leg::upstream_echo(
                "direct (stdio demo upstream)",
                Endpoint::Stdio(stdio.clone()),
                stdio.pid(),
            )),
        });
    }
    if let Some((guard, url)) = &relay {
        targets.push(Target {
            http: Leg::upstream_echo(
                "TCP relay (floor)",
                Endpoint::Http(url.clone()),
                guard.0.id(),
            ),
            stdio: None,
        });
    }
    for gw in &gateways {
        let leg = |upstream: &str| Leg {
            label: gw.product.label().into(),
            endpoint: Endpoint::Http(gw.url.clone()),
            tool: gw.product.tool(upstream, "echo"),
            pid: gw.pid(),
        };
        targets.push(Target {
            http: leg("http"),
            stdio: Some(leg("stdio")),
        });
    }

    tokio::time::sleep(SETTLE).await;
    let mut memory: Vec<(String, u32, Memory)> = Vec::new();
    if direct {
        memory.push((
            "direct: HTTP demo upstream".into(),
            demo.0.id(),
            Memory::default(),
        ));
        memory.push((
            "direct: stdio demo upstream".into(),
            stdio.pid(),
            Memory::default(),
        ));
    }
    if let Some((guard, _)) = &relay {
        memory.push(("TCP relay (floor)".into(), guard.0.id(), Memory::default()));
    }
    for gw in &gateways {
        memory.push((gw.product.label().into(), gw.pid(), Memory::default()));
    }
    for (_, pid, m) in &mut memory {
        m.idle = rss_kib(*pid)?;
    }

    // The table says how it was made: the command, and the load before it.
    let command: Vec<String> = std::env::args().collect();
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("`{}`", command.join(" "));
    println!(
        "(load average before: {})",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!();
    println!("| upstream | target | c | calls/s | vs direct | p50 / p99 (ms) | added p50 (ms) | CPU µs per call | RSS after (MiB) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for upstream in &args.upstreams {
        for &c in concurrency {
            let legs: Vec<&Leg> = targets.iter().filter_map(|t| t.leg(upstream)).collect();
            let mut results: Vec<Vec<Round>> = legs.iter().map(|_| Vec::new()).collect();
            for _ in 0..rounds.max(1) {
                for (leg, out) in legs.iter().zip(results.iter_mut()) {
                    let body = echo(&leg.tool);
                    out.push(round(&client, &leg.endpoint, leg.pid, &body, c, seconds).await?);
                }
            }
            let medians: Vec<Round> = results
                .into_iter()
                .map(|mut v| {
                    v.sort_by(|a, b| a.rate().total_cmp(&b.rate()));
                    v.swap_remove(v.len() / 2)
                })
                .collect();
            let base = direct.then(|| (medians[0].rate(), medians[0].p50_us));
            for (leg, r) in legs.iter().zip(&medians) {
                let label = &leg.label;
                let (vs, added) = match base {
                    Some((rate, p50)) => (
                        format!("{:.2}", r.rate() / rate),
                        format!("{:.2}", (r.p50_us as f64 - p50 as f64) / 1000.0),
                    ),
                    None => ("—".into(), "—".into()),
                };
                println!(
                    "| {upstream} | {label} | {c} | {:.0} | {vs} | {:.2} / {:.2} | {added} | {:.0} | {} |",
                    r.rate(),
                    r.p50_us as f64 / 1000.0,
                    r.p99_us as f64 / 1000.0,
                    r.cpu_us_per_call(),
                    mib(r.rss_kib),
                );
            }
        }
    }

    for (_, pid, m) in &mut memory {
        m.after_load = rss_kib(*pid)?;
    }
    // Held sessions: the HTTP processes only (the stdio upstream has one).
    for (label, pid, m) in &mut memory {
        let url = if label.starts_with("direct: HTTP") {
            Some(http_url.clone())
        } else {
            gateways
                .iter()
                .find(|g| g.pid() == *pid)
                .map(|g| g.url.clone())
        };
        let Some(url) = url else { continue };
        let held = hold_sessions(&client, &url, args.sessions).await?;
        tokio::time::sleep(SETTLE).await;
        m.sessions = Some(rss_kib(*pid)?);
        for s in held.iter() {
            s.close().await;
        }
    }
    let n = args.sessions;
    println!();
    println!("| process | idle RSS (MiB) | idle anonymous (MiB) | RSS after load (MiB) | RSS with {n} sessions (MiB) | per session (KiB) |");
    println!("|---|---|---|---|---|---|");
    for (label, _, m) in &memory {
        let (with, per) = match m.sessions {
            Some((rss, _)) => (
                mib(rss),
                format!(
                    "{:.1}",
                    (rss as f64 - m.after_load.0 as f64) / n.max(1) as f64
                ),
            ),
            None => ("—".into(), "—".into()),
        };
        println!(
            "| {label} | {} | {} | {} | {with} | {per} |",
            mib(m.idle.0),
            mib(m.idle.1),
            mib(m.after_load.0),
        );
    }
    drop(gateways);
    drop(relay);
    drop(demo);
    Ok(())
}

/// Opens `n` sessions at `url` (initialize + initialized), `OPEN_PARALLEL` at a time.
async fn hold_sessions(client: &HttpClient, url: &str, n: usize) -> Result<Vec<Caller>> {
    let mut held = Vec::with_capacity(n);
    let endpoint = Endpoint::Http(url.to_string());
    while held.len() < n {
        let batch = OPEN_PARALLEL.min(n - held.len());
        let mut tasks = Vec::with_capacity(batch);
        for _ in 0..batch {
            let (client, endpoint) = (client.clone(), endpoint.clone());
            tasks.push(tokio::spawn(async move { endpoint.caller(&client).await }));
        }
        for t in tasks {
            held.push(t.await??);
        }
    }
    Ok(held)
}
