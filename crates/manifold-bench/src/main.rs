//! `manifold-load`: measures `tools/call` and `tools/list` through Manifold against
//! the same upstream called directly, and prints a Markdown table for
//! docs/benchmarks.md; with `--soak MINUTES`, a long mixed run reporting RSS and
//! file-descriptor slopes instead (see `soak`); with `--search-index TOOLS`, the
//! tool search index alone, in-process (see `search_index`); the `search`
//! scenario measures a search endpoint through the gateway (`search_endpoint`);
//! with `--peers`, direct / Manifold / mcp-proxy side by side (see `peers`);
//! with `--callgrind`, the gateway's instructions per call (see `callgrind`).
//!
//! The upstream is the demo upstream over Streamable HTTP (`manifold demo-upstream
//! --http`), started once; the gateway fronts it, so the only difference between the
//! two columns is the gateway hop. Every loop is bounded by `--duration`, all traffic
//! stays on 127.0.0.1, and the children are killed at the end.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use clap::Parser;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod callgrind;
mod peers;
mod pool;
mod search_endpoint;
mod search_index;
mod soak;
mod targets;

#[derive(Parser)]
#[command(about = "Load generator: Manifold vs a direct connection to the same upstream")]
struct Args {
    /// The manifold binary (also used as the demo upstream).
    #[arg(long, default_value = "target/release/manifold")]
    manifold: PathBuf,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Concurrency levels.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    concurrency: Vec<usize>,
    /// Which measurements to run: `call` (tools/call echo), `list` (tools/list of
    /// 1,000 tools), `auth` (tools/call through Manifold without `[auth]` vs with a
    /// bearer API key), `policy` (tools/list and tools/call through a bare Manifold vs
    /// one with `[auth]`, 100 `[[policy]]` views and validation). Running one alone is
    /// handy under a profiler. `search`: a `discovery = "search"` endpoint
    /// (`search_endpoint`): tools/list bytes, call_tool vs a direct call,
    /// search_tools over 10,000 tools. `pool`: a slow single-threaded stdio
    /// upstream as one child vs a pool of four (`instances = 4`, see `pool`).
    #[arg(long, value_delimiter = ',', default_value = "call,list")]
    scenarios: Vec<String>,
    /// Give the gateway a CPU of its own, as a sidecar with its own CPU budget has:
    /// the load generator and the upstreams run on CPU 0, the gateway on CPU 1
    /// (with `taskset`, util-linux). Without it all processes share every CPU, and
    /// on a small machine the gateway's extra hop competes with the upstream for it.
    #[arg(long)]
    pin: bool,
    /// Rounds per measurement, direct and via Manifold alternating; the round with
    /// the median throughput is reported, so one noisy round does not decide.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Instead of the comparison: a soak run of this many minutes (mixed traffic,
    /// sessions opening and closing, a stdio upstream crashed every minute),
    /// reporting the gateway's RSS and file-descriptor slopes.
    #[arg(long, value_name = "MINUTES")]
    soak: Option<u64>,
    /// Instead of the comparison: the tool search index alone, in this process,
    /// over a catalogue of this many tools (the real catalogue copied under new
    /// names): build time, bytes per tool, query p50/p99 (see `search_index`).
    #[arg(long, value_name = "TOOLS")]
    search_index: Option<usize>,
    /// The real tool catalogue `--search-index` copies (catalog.json shape).
    #[arg(long, default_value = "../shared/data/tool-catalog/catalog.json")]
    catalog: PathBuf,
    #[command(flatten)]
    peers: peers::PeersArgs,
}

type HttpClient = Client<HttpConnector, Full<Bytes>>;

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status();
        // A graceful stop first (bounded), then SIGKILL.
        let deadline = Instant::now() + Duration::from_secs(3);
        while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn_and_read_url(mut cmd: Command, needle: &str) -> Result<(Kill, String)> {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::null()).spawn()?;
    let out = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(out).lines();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(30) {
        let Some(Ok(line)) = lines.next() else { break };
        if line.contains(needle) {
            let url = line
                .split_whitespace()
                .find(|w| w.starts_with("http://"))
                .context("no url")?
                .to_string();
            std::thread::spawn(move || for _ in lines {});
            return Ok((Kill(child), url));
        }
    }
    bail!("no line containing {needle:?}")
}

struct Session {
    client: HttpClient,
    url: String,
    id: Option<String>,
    /// `Authorization: Bearer` for an endpoint with `[auth]`.
    bearer: Option<String>,
}

impl Session {
    async fn post(&self, body: &Value) -> Result<(http::HeaderMap, Bytes)> {
        let mut b = http::Request::post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(id) = &self.id {
            b = b.header("mcp-session-id", id);
        }
        if let Some(t) = &self.bearer {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        let resp = self
            .client
            .request(b.body(Full::new(Bytes::from(body.to_string())))?)
            .await?;
        let headers = resp.headers().clone();
        let status = resp.status();
        let bytes = resp.into_body().collect().await?.to_bytes();
        if !status.is_success() {
            bail!("HTTP {status}: {}", String::from_utf8_lossy(&bytes));
        }
        Ok((headers, bytes))
    }

    /// Ends the session (DELETE), so rounds do not pile sessions up against
    /// `limits.max_sessions_per_peer`. Best effort.
    async fn close(&self) {
        let Some(id) = &self.id else { return };
        let mut b = http::Request::delete(&self.url).header("mcp-session-id", id);
        if let Some(t) = &self.bearer {
            b = b.header("authorization", format!("Bearer {t}"));
        }
        if let Ok(req) = b.body(Full::new(Bytes::new())) {
            let _ = self.client.request(req).await;
        }
    }

    /// Opens a session at `url`; `URL#TOKEN` sends `TOKEN` as a bearer token
    /// (the fragment never goes on the wire).
    async fn open(client: &HttpClient, url: &str) -> Result<Session> {
        let (url, bearer) = match url.split_once('#') {
            Some((u, t)) => (u, Some(t.to_string())),
            None => (url, None),
        };
        let mut s = Session {
            client: client.clone(),
            url: url.to_string(),
            id: None,
            bearer,
        };
        let init = json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"manifold-load","version":"0"}}});
        let (h, _) = s.post(&init).await?;
        s.id = h
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        s.post(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await?;
        Ok(s)
    }
}

struct Stats {
    calls: usize,
    secs: f64,
    p50_us: u128,
    p99_us: u128,
}

/// Warm-up calls of each worker before a measurement, not recorded.
const WARMUP_CALLS: usize = 20;

/// Runs direct and gateway measurements in alternating rounds; returns the rounds
/// with the median throughput of each.
async fn compare(
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
async fn compare_warm(
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
    fn rate(&self) -> f64 {
        self.calls as f64 / self.secs
    }
}

async fn measure(
    client: &HttpClient,
    url: &str,
    body: Value,
    concurrency: usize,
    secs: u64,
) -> Result<Stats> {
    measure_warm(client, url, body, concurrency, secs, WARMUP_CALLS).await
}

async fn measure_warm(
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

#[tokio::main]
async fn main() -> Result<()> {
    let args = Args::parse();
    if let Some(tools) = args.search_index {
        return search_index::run(&args.catalog, tools);
    }
    let exe = std::fs::canonicalize(&args.manifold).context("the manifold binary")?;
    let dir = std::env::temp_dir().join(format!("manifold-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;

    if args.pin {
        // Threads started later inherit the mask; so do the upstreams spawned below.
        let pinned = Command::new("taskset")
            .args(["-a", "-c", "-p", "0", &std::process::id().to_string()])
            .stdout(Stdio::null())
            .status()
            .context("taskset (util-linux) is needed for --pin")?;
        if !pinned.success() {
            bail!("taskset could not pin the load generator to CPU 0");
        }
    }
    if args.peers.peers || args.peers.callgrind {
        let result = if args.peers.callgrind {
            callgrind::run(&exe, &dir, &args.peers, &args.concurrency).await
        } else {
            let shared = (&args.concurrency[..], args.seconds, args.rounds, args.pin);
            peers::run(&exe, &dir, &args.peers, shared).await
        };
        let _ = std::fs::remove_dir_all(&dir);
        return result;
    }
    if let Some(minutes) = args.soak {
        let result = soak::run(&exe, &dir, minutes, args.pin).await;
        let _ = std::fs::remove_dir_all(&dir);
        return result;
    }
    let mut demo = Command::new(&exe);
    demo.args([
        "demo-upstream",
        "--http",
        "127.0.0.1:0",
        "--instructions",
        "",
    ]);
    let (_demo, direct_url) = spawn_and_read_url(demo, "listening on")?;
    let mut big = Command::new(&exe);
    big.args([
        "demo-upstream",
        "--http",
        "127.0.0.1:0",
        "--tools",
        "986",
        "--instructions",
        "",
    ]);
    let (_big, big_url) = spawn_and_read_url(big, "listening on")?;

    let upstreams = format!(
        "[upstreams.bench]\nurl = \"{direct_url}\"\n[upstreams.big]\nurl = \"{big_url}\"\n"
    );
    let cfg = dir.join("gateway.toml");
    std::fs::write(
        &cfg,
        format!("[server]\nlisten = \"127.0.0.1:0\"\n{upstreams}"),
    )?;
    let (_gw, gw_url) = spawn_gateway(&exe, &cfg, args.pin)?;
    // The same gateway with [auth] (one API key), started only for `auth`.
    let authed = if args.scenarios.iter().any(|s| s == "auth") {
        let hash = hash_key(&exe, BENCH_KEY)?;
        let cfg = dir.join("gateway-auth.toml");
        std::fs::write(
            &cfg,
            format!(
                "[server]\nlisten = \"127.0.0.1:0\"\n[[auth.api_keys]]\nname = \"bench\"\nhash = \"{hash}\"\n{upstreams}"
            ),
        )?;
        Some(spawn_gateway(&exe, &cfg, args.pin)?)
    } else {
        None
    };

    let client: HttpClient = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(256)
        .build_http();
    let call = |name: &str| json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":name,"arguments":{"text":"hello"}}});
    println!("| measurement | concurrency | direct calls/s | via Manifold calls/s | ratio | direct p50 / p99 (µs) | via Manifold p50 / p99 (µs) | added p50 (µs) |");
    println!("|---|---|---|---|---|---|---|---|");
    for scenario in &args.scenarios {
        if !["call", "list", "auth", "policy", "search", "pool"].contains(&scenario.as_str()) {
            bail!(
                "unknown scenario {scenario:?}: expected call, list, auth, policy, search or pool"
            );
        }
    }
    let run = |s: &str| args.scenarios.iter().any(|x| x == s);
    for &c in args.concurrency.iter().filter(|_| run("call")) {
        let (d, g) = compare(
            &client,
            (&direct_url, &call("echo")),
            (&gw_url, &call("bench__echo")),
            c,
            &args,
        )
        .await?;
        let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
        println!(
            "| tools/call echo | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
            100.0 * gr / dr,
            d.p50_us,
            d.p99_us,
            g.p50_us,
            g.p99_us,
            g.p50_us as i128 - d.p50_us as i128
        );
    }
    let list = json!({"jsonrpc":"2.0","id":1,"method":"tools/list"});
    for &c in args.concurrency.iter().filter(|_| run("list")) {
        // Direct: the 1,000-tool upstream alone; via Manifold: the merged catalog of
        // both upstreams (986 + 14 = 1,000 tools) served from the snapshot.
        let (d, g) = compare(&client, (&big_url, &list), (&gw_url, &list), c, &args).await?;
        let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
        println!(
            "| tools/list, 1,000 tools | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
            100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
        );
    }
    if let Some((_authed, auth_url)) = &authed {
        // "direct" here is Manifold without [auth]; the other column adds a
        // bearer API key checked on every request (the cached path a JWT takes
        // after its first verification).
        for &c in &args.concurrency {
            let with_key = format!("{auth_url}#{BENCH_KEY}");
            let body = call("bench__echo");
            let (d, g) = compare(&client, (&gw_url, &body), (&with_key, &body), c, &args).await?;
            let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
            println!(
                "| tools/call echo: no [auth] → bearer API key | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
                100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
            );
        }
    }
    if run("policy") {
        // "direct" here is Manifold with nothing on (no [auth], no [[policy]],
        // no validation); the other column has all of it: 100 API keys in 100
        // groups, 100 [[policy]] rules giving each group its own 990-tool view,
        // argument validation, and the workers' requests spread over the keys.
        let bare_cfg = dir.join("gateway-bare.toml");
        std::fs::write(
            &bare_cfg,
            format!("[server]\nlisten = \"127.0.0.1:0\"\n[validation]\narguments = \"off\"\noutput = \"off\"\n{upstreams}"),
        )?;
        let (_bare, bare_url) = spawn_gateway(&exe, &bare_cfg, args.pin)?;
        let mut full = String::from("[server]\nlisten = \"127.0.0.1:0\"\n");
        let mut keys = Vec::new();
        for i in 0..VIEWS {
            let key = format!("{BENCH_KEY}-{i:02}");
            let hash = hash_key(&exe, &key)?;
            full.push_str(&format!(
                "[[auth.api_keys]]\nname = \"k{i}\"\nhash = \"{hash}\"\ngroups = [\"g{i}\"]\n\
                 [[policy]]\nwho = [\"group:g{i}\"]\ntools = {{ allow = [\"*\"], deny = [\"big__synthetic_0{i:02}*\"] }}\n"
            ));
            keys.push(key);
        }
        full.push_str(&upstreams);
        let full_cfg = dir.join("gateway-full.toml");
        std::fs::write(&full_cfg, full)?;
        let (_full, full_url) = spawn_gateway(&exe, &full_cfg, args.pin)?;
        let with_keys = format!("{full_url}#{}", keys.join(","));
        for &c in &args.concurrency {
            for (what, body) in [
                ("tools/list, 1,000 tools", &list),
                ("tools/call echo", &call("bench__echo")),
            ] {
                let (d, g) =
                    compare(&client, (&bare_url, body), (&with_keys, body), c, &args).await?;
                let (dr, gr) = (d.calls as f64 / d.secs, g.calls as f64 / g.secs);
                println!(
                    "| {what}: bare → [auth] + 100 views + validation | {c} | {dr:.0} | {gr:.0} | {:.0} % | {} / {} | {} / {} | {} |",
                    100.0 * gr / dr, d.p50_us, d.p99_us, g.p50_us, g.p99_us, g.p50_us as i128 - d.p50_us as i128
                );
            }
        }
    }
    if run("search") {
        search_endpoint::run(&client, &exe, &dir, &upstreams, &args).await?;
    }
    if run("pool") {
        pool::run(&client, &exe, &dir, &args).await?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Distinct `[[policy]]` views in the `policy` scenario.
const VIEWS: usize = 100;

/// The API key of the `auth` scenario.
const BENCH_KEY: &str = "manifold-load-bench-key-0123456789";

/// `manifold serve --config cfg` (on CPU 1 with `pin`); its URL.
fn spawn_gateway(
    exe: &std::path::Path,
    cfg: &std::path::Path,
    pin: bool,
) -> Result<(Kill, String)> {
    let mut gw = if pin {
        let mut c = Command::new("taskset");
        c.args(["-c", "1"]).arg(exe);
        c
    } else {
        Command::new(exe)
    };
    // `MANIFOLD_LOAD_GATEWAY_LOG` (default `warn`) sets the gateway's RUST_LOG:
    // `info` measures it with its request spans enabled, as `serve` runs by default.
    let log = std::env::var("MANIFOLD_LOAD_GATEWAY_LOG").unwrap_or_else(|_| "warn".into());
    gw.arg("serve")
        .arg("--config")
        .arg(cfg)
        .env("RUST_LOG", log);
    spawn_and_read_url(gw, "Manifold listening on")
}

/// What `manifold auth hash-key` prints for `key`.
fn hash_key(exe: &std::path::Path, key: &str) -> Result<String> {
    use std::io::Write;
    let mut child = Command::new(exe)
        .args(["auth", "hash-key"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()?;
    child
        .stdin
        .take()
        .context("stdin")?
        .write_all(key.as_bytes())?;
    let out = child.wait_with_output()?;
    Ok(String::from_utf8(out.stdout)?.trim().to_string())
}
