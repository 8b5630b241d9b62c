//! The processes `--peers` and `--callgrind` measure, started the same way for
//! both: the demo upstream over Streamable HTTP, Manifold and the peer gateway
//! `mcp-proxy` in front of it and of a stdio demo upstream each spawns, and the
//! stdio demo driven directly by this process. Also what is read of a process
//! from `/proc` (CPU ticks, RSS) and one call through any target ([`Caller`]).
//!
//! Invariants: every wait on a process (start-up, a reply) is bounded by a named
//! constant; each child is owned by a guard that stops it on drop; everything
//! listens on 127.0.0.1. The gateways get the same two upstreams under the names
//! `http` and `stdio`, so the tool names differ only by each product's separator.
//!
//! Not here: what is measured and how it is reported (`peers`, `callgrind`).

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::oneshot;

use super::{session::spawn_and_read_url, session::HttpClient, session::Kill, session::Session};

/// How long a gateway may take to answer a call through both upstreams after
/// it was started (under callgrind start-up is tens of times slower).
const READY_WITHIN: Duration = Duration::from_secs(180);
/// How long one reply from the directly driven stdio upstream may take.
const STDIO_REPLY_WITHIN: Duration = Duration::from_secs(30);

/// How a gateway process is started.
#[derive(Clone)]
pub(crate) enum Launch {
    /// As it is.
    Plain,
    /// On CPU 1 (`taskset -c 1`), the load generator and upstreams on CPU 0.
    Pinned,
    /// Under `valgrind --tool=callgrind`, its profiles written as `PREFIX.<pid>[.N]`.
    Callgrind { out_prefix: PathBuf },
}

impl Launch {
    fn command(&self, program: &Path) -> Command {
        match self {
            Launch::Plain => Command::new(program),
            Launch::Pinned => {
                let mut c = Command::new("taskset");
                c.args(["-c", "1"]).arg(program);
                c
            }
            Launch::Callgrind { out_prefix } => {
                let mut c = Command::new("valgrind");
                c.arg("--tool=callgrind")
                    .arg("-q")
                    .arg(format!(
                        "--callgrind-out-file={}.%p",
                        out_prefix.to_string_lossy()
                    ))
                    .arg(program);
                c
            }
        }
    }
}

/// A gateway product under measurement.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Product {
    Manifold,
    McpProxy,
}

impl Product {
    pub(crate) fn label(self) -> &'static str {
        match self {
            Product::Manifold => "Manifold",
            Product::McpProxy => "mcp-proxy 0.6.0",
        }
    }

    /// The name a client calls `tool` of upstream `upstream` by.
    pub(crate) fn tool(self, upstream: &str, tool: &str) -> String {
        match self {
            Product::Manifold => format!("{upstream}__{tool}"),
            Product::McpProxy => format!("{upstream}/{tool}"),
        }
    }
}

/// A running gateway with the two bench upstreams behind it.
pub(crate) struct Gateway {
    pub(crate) product: Product,
    pub(crate) child: Kill,
    pub(crate) url: String,
}

impl Gateway {
    pub(crate) fn pid(&self) -> u32 {
        self.child.0.id()
    }
}

/// The binaries: `manifold` (also every demo upstream) and `mcp-proxy`.
pub(crate) struct Binaries {
    pub(crate) manifold: PathBuf,
    pub(crate) mcp_proxy: PathBuf,
}

/// The load generator's HTTP client (one pool, up to 256 idle connections).
pub(crate) fn new_client() -> HttpClient {
    hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .pool_max_idle_per_host(256)
        .build_http()
}

/// The demo upstream over Streamable HTTP on 127.0.0.1: its guard and URL.
pub(crate) fn start_http_demo(exe: &Path) -> Result<(Kill, String)> {
    let mut demo = Command::new(exe);
    demo.args([
        "demo-upstream",
        "--http",
        "127.0.0.1:0",
        "--instructions",
        "",
    ]);
    spawn_and_read_url(demo, "listening on")
}

/// A loopback port nobody listens on right now (the gateway binds it next).
fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// TOML string literal.
fn toml_str(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// Starts `product` in front of `http_url` and a stdio demo upstream, waits until
/// a call through each upstream succeeds, and returns it.
pub(crate) async fn start_gateway(
    product: Product,
    bins: &Binaries,
    dir: &Path,
    http_url: &str,
    launch: &Launch,
) -> Result<Gateway> {
    let port = free_port()?;
    let demo = toml_str(&bins.manifold.to_string_lossy());
    let (mut cmd, url) = match product {
        Product::Manifold => {
            // Defaults everywhere except the per-address session cap: the
            // 1,000-session measurement opens all of them from one address.
            let cfg = dir.join("manifold.toml");
            std::fs::write(
                &cfg,
                format!(
                    "[server]\nlisten = \"127.0.0.1:{port}\"\npath = \"/mcp\"\n\
                     [limits]\nmax_sessions_per_peer = 10000\n\
                     [upstreams.http]\nurl = {}\n\
                     [upstreams.stdio]\ncommand = {demo}\nargs = [\"demo-upstream\", \"--instructions\", \"\"]\n",
                    toml_str(http_url)
                ),
            )?;
            let mut c = launch.command(&bins.manifold);
            c.arg("serve").arg("--config").arg(&cfg);
            // `MANIFOLD_LOAD_GATEWAY_LOG` as for the other scenarios (default `warn`).
            let log = std::env::var("MANIFOLD_LOAD_GATEWAY_LOG").unwrap_or_else(|_| "warn".into());
            c.env("RUST_LOG", log);
            (c, format!("http://127.0.0.1:{port}/mcp"))
        }
        Product::McpProxy => {
            // Its defaults (no audit, no metrics, no caching), logging at `warn`
            // like the Manifold gateway.
            let cfg = dir.join("mcp-proxy.toml");
            std::fs::write(
                &cfg,
                format!(
                    "[proxy]\nname = \"bench\"\n[proxy.listen]\nhost = \"127.0.0.1\"\nport = {port}\n\
                     [[backends]]\nname = \"http\"\ntransport = \"http\"\nurl = {}\n\
                     [[backends]]\nname = \"stdio\"\ntransport = \"stdio\"\ncommand = {demo}\nargs = [\"demo-upstream\", \"--instructions\", \"\"]\n\
                     [observability]\nlog_level = \"warn\"\n",
                    toml_str(http_url)
                ),
            )?;
            let mut c = launch.command(&bins.mcp_proxy);
            c.arg("--config").arg(&cfg).env("RUST_LOG", "warn");
            (c, format!("http://127.0.0.1:{port}/"))
        }
    };
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("starting {}", product.label()))?;
    let gw = Gateway {
        product,
        child: Kill(child),
        url,
    };
    wait_ready(&gw).await?;
    Ok(gw)
}

/// Polls until one session can call `echo` through both upstreams.
async fn wait_ready(gw: &Gateway) -> Result<()> {
    let client = new_client();
    let deadline = Instant::now() + READY_WITHIN;
    let mut last = String::new();
    while Instant::now() < deadline {
        let attempt = async {
            let s = Session::open(&client, &gw.url).await?;
            for upstream in ["http", "stdio"] {
                check_reply(&s.post(&echo(&gw.product.tool(upstream, "echo"))).await?.1)?;
            }
            s.close().await;
            Ok::<_, anyhow::Error>(())
        };
        match attempt.await {
            Ok(()) => return Ok(()),
            Err(e) => last = e.to_string(),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    bail!(
        "{} did not answer through both upstreams within {READY_WITHIN:?}: {last}",
        gw.product.label()
    )
}

/// The `tools/call` every target is measured with.
pub(crate) fn echo(tool: &str) -> Value {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":{"text":"hello"}}})
}

/// Fails on a JSON-RPC error or a tool error (`isError: true`).
pub(crate) fn check_reply(bytes: &[u8]) -> Result<()> {
    let has = |needle: &[u8]| bytes.windows(needle.len()).any(|w| w == needle);
    if has(b"\"error\":") || has(b"\"isError\":true") || !has(b"\"result\"") {
        bail!(
            "not a successful result: {}",
            String::from_utf8_lossy(bytes)
        );
    }
    Ok(())
}

/// The stdio demo upstream driven by this process: requests written as lines
/// to its stdin, replies matched to their callers by id.
pub(crate) struct StdioConn {
    stdin: tokio::sync::Mutex<tokio::process::ChildStdin>,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Bytes>>>>,
    next_id: AtomicU64,
    pid: u32,
    _child: tokio::process::Child,
}

impl StdioConn {
    /// Spawns `exe demo-upstream` over stdio and completes the handshake.
    pub(crate) async fn start(exe: &Path) -> Result<Arc<StdioConn>> {
        let mut child = tokio::process::Command::new(exe)
            .args(["demo-upstream", "--instructions", ""])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("starting the stdio demo upstream")?;
        let stdin = child.stdin.take().context("stdin")?;
        let stdout = child.stdout.take().context("stdout")?;
        let pid = child.id().context("the stdio upstream's pid")?;
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Bytes>>>> = Arc::default();
        let routes = pending.clone();
        // Ends when the child's stdout closes (the child is killed on drop).
        tokio::spawn(async move {
            let mut lines = BufReader::new(stdout).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let id = serde_json::from_str::<Value>(&line)
                    .ok()
                    .and_then(|v| v.get("id").and_then(Value::as_u64));
                let waiter =
                    id.and_then(|id| routes.lock().unwrap_or_else(|p| p.into_inner()).remove(&id));
                if let Some(w) = waiter {
                    let _ = w.send(Bytes::from(line));
                }
            }
        });
        let conn = Arc::new(StdioConn {
            stdin: tokio::sync::Mutex::new(stdin),
            pending,
            next_id: AtomicU64::new(1),
            pid,
            _child: child,
        });
        conn.request(&json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"manifold-load","version":"0"}}}))
            .await?;
        conn.write(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
            .await?;
        Ok(conn)
    }

    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    async fn write(&self, message: &Value) -> Result<()> {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        let mut stdin = self.stdin.lock().await;
        stdin.write_all(&line).await?;
        stdin.flush().await?;
        Ok(())
    }

    /// Sends `message` under a fresh id and waits for its reply.
    pub(crate) async fn request(&self, message: &Value) -> Result<Bytes> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut message = message.clone();
        message["id"] = json!(id);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        self.write(&message).await?;
        match tokio::time::timeout(STDIO_REPLY_WITHIN, rx).await {
            Ok(Ok(reply)) => Ok(reply),
            Ok(Err(_)) => bail!("the stdio upstream exited"),
            Err(_) => {
                self.pending
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                bail!("no reply from the stdio upstream within {STDIO_REPLY_WITHIN:?}")
            }
        }
    }
}

/// One client of a target: an MCP session over HTTP, or the shared stdio pipe.
pub(crate) enum Caller {
    Http(Box<Session>),
    Stdio(Arc<StdioConn>),
}

impl Caller {
    pub(crate) async fn call(&self, body: &Value) -> Result<Bytes> {
        match self {
            Caller::Http(s) => Ok(s.post(body).await?.1),
            Caller::Stdio(c) => c.request(body).await,
        }
    }

    pub(crate) async fn close(&self) {
        if let Caller::Http(s) = self {
            s.close().await;
        }
    }
}

/// Where a target takes its calls.
#[derive(Clone)]
pub(crate) enum Endpoint {
    Http(String),
    Stdio(Arc<StdioConn>),
}

impl Endpoint {
    pub(crate) async fn caller(&self, client: &HttpClient) -> Result<Caller> {
        Ok(match self {
            Endpoint::Http(url) => Caller::Http(Box::new(Session::open(client, url).await?)),
            Endpoint::Stdio(c) => Caller::Stdio(c.clone()),
        })
    }
}

/// A process's CPU time so far (user + system, all threads, not its
/// children), in seconds, from `/proc/<pid>/stat`.
pub(crate) fn cpu_seconds(pid: u32) -> Result<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))?;
    // Fields after the command name (which may hold spaces) start at field 3.
    let rest = stat.rsplit_once(')').context("/proc stat format")?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> Result<f64> {
        Ok(fields.get(i).context("/proc stat field")?.parse::<f64>()?)
    };
    // utime is field 14, stime field 15; `rest` starts at field 3.
    Ok((ticks(11)? + ticks(12)?) / clock_ticks())
}

/// `sysconf(_SC_CLK_TCK)`, read once with `getconf` (100 on Linux).
fn clock_ticks() -> f64 {
    static TICKS: std::sync::OnceLock<f64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|o| String::from_utf8(o.stdout).ok())
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(100.0)
    })
}

/// Resident memory of a process, KiB: (VmRSS, RssAnon).
pub(crate) fn rss_kib(pid: u32) -> Result<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |key: &str| -> Result<u64> {
        let line = status
            .lines()
            .find(|l| l.starts_with(key))
            .with_context(|| format!("no {key} in /proc/{pid}/status"))?;
        Ok(line.split_whitespace().nth(1).context("value")?.parse()?)
    };
    Ok((field("VmRSS:")?, field("RssAnon:")?))
}
