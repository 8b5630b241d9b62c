//! [`TestGateway`] (an in-process gateway on `127.0.0.1:0`) and [`DemoHttp`] (the
//! demo upstream in HTTP mode as a child process).
//!
//! Invariants: a `TestGateway` cancels its shutdown token when dropped, which ends
//! the accept loop, every upstream supervisor and (through `kill_on_drop`) every
//! stdio child; a `DemoHttp` child is killed when dropped.

use std::ffi::OsStr;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use manifold_config::GatewayConfig;
use manifold_server::Gateway;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::net::TcpListener;
use tokio::process::{Child, ChildStdout, Command};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::client::McpClient;
use super::reply::WAIT;

/// How long [`TestGateway::shutdown`] waits for the server task.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(15);

/// A string as a TOML basic string literal (quoted and escaped), for splicing
/// paths and URLs into configuration text.
pub fn toml_string(s: &str) -> String {
    // A JSON string literal is a valid TOML basic string: serde_json escapes `"`,
    // `\` and control characters only, with escapes TOML shares.
    serde_json::Value::from(s).to_string()
}

/// Where `manifold-demo-upstream` (crate `manifold-demo`) is:
/// `$MANIFOLD_DEMO_UPSTREAM` if set, else next to the running test executable's
/// target directory (`target/<profile>/`), where `cargo build --workspace` and
/// `cargo nextest run --workspace` put it.
pub fn demo_upstream_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MANIFOLD_DEMO_UPSTREAM") {
        return PathBuf::from(p);
    }
    let name = format!("manifold-demo-upstream{}", std::env::consts::EXE_SUFFIX);
    let exe = std::env::current_exe().unwrap_or_default();
    let mut dir = exe.parent().map(Path::to_path_buf).unwrap_or_default();
    if dir.ends_with("deps") {
        dir.pop();
    }
    dir.join(name)
}

/// Where code mode's worker (`manifold-code-worker`, built on its own by
/// `scripts/build-code-worker`) is: `$MANIFOLD_CODE_WORKER` if set, else next
/// to the demo upstream in the target directory.
pub fn code_worker_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("MANIFOLD_CODE_WORKER") {
        return PathBuf::from(p);
    }
    let name = format!("manifold-code-worker{}", std::env::consts::EXE_SUFFIX);
    demo_upstream_bin().with_file_name(name)
}

/// The local admin tokens of the test gateways running in this process, by
/// admin listener address (see [`admin_token_for`]).
static LOCAL_ADMIN_TOKENS: std::sync::Mutex<Vec<(SocketAddr, String)>> =
    std::sync::Mutex::new(Vec::new());

/// The local admin token of the test gateway whose admin listener is
/// `addr`, when it has one (its `[admin]` names no credentials): what a
/// test's admin client sends unless it says otherwise.
pub fn admin_token_for(addr: SocketAddr) -> Option<String> {
    let tokens = LOCAL_ADMIN_TOKENS.lock().ok()?;
    tokens
        .iter()
        .rev()
        .find(|(a, _)| *a == addr)
        .map(|(_, t)| t.clone())
}

/// A gateway started in-process, serving on an ephemeral loopback port.
pub struct TestGateway {
    gateway: Arc<Gateway>,
    shutdown: CancellationToken,
    addr: SocketAddr,
    url: String,
    server: Option<JoinHandle<()>>,
    /// The directory of the local admin token this test made (removed on
    /// drop).
    token_dir: Option<PathBuf>,
}

impl TestGateway {
    /// Validates `toml` (the process environment is ignored), binds
    /// `127.0.0.1:0` in place of `server.listen`, starts the gateway, gives its
    /// upstreams at most [`WAIT`] to become ready, and serves on a spawned task.
    pub async fn start(toml: &str) -> Result<TestGateway> {
        TestGateway::start_config(TestGateway::config(toml)?).await
    }

    /// Parses and validates configuration text as `manifold serve` would, without
    /// environment overrides (`${VAR}` expansion still sees the environment).
    pub fn config(toml: &str) -> Result<GatewayConfig> {
        manifold_config::load_str(
            Path::new("test-gateway.toml"),
            toml,
            |name| std::env::var(name).ok(),
            figment::providers::Env::raw().only(&[] as &[&str]),
        )
        .map_err(|e| anyhow!("invalid gateway configuration: {e}"))
    }

    /// Starts a gateway from a validated configuration. It always listens on
    /// `127.0.0.1:0`; `server.listen` gets the bound port, and keeps its IP when that
    /// is not loopback (e.g. `0.0.0.0`), so the gateway applies the rules of a
    /// non-loopback listener while tests reach it on loopback. A non-loopback
    /// `[admin] listen` is likewise served on `127.0.0.1:0`. An `[admin]`
    /// without credentials or `token_file` keeps its local admin token in a
    /// temporary directory (see [`admin_token_for`]), never in `$HOME`.
    pub async fn start_config(mut config: GatewayConfig) -> Result<TestGateway> {
        let token_dir = match config.admin.as_mut() {
            Some(a) if !a.has_credentials() && a.token_file.is_none() => {
                static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let dir = std::env::temp_dir()
                    .join(format!("manifold-testkit-admin-{}-{n}", std::process::id()));
                a.token_file = Some(dir.join("admin-token"));
                Some(dir)
            }
            _ => None,
        };
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding 127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        config.server.listen = if config.server.listen.ip().is_loopback() {
            addr
        } else {
            SocketAddr::new(config.server.listen.ip(), addr.port())
        };
        let url = format!("http://{addr}{}", config.server.path);
        let shutdown = CancellationToken::new();
        let admin_ip = config.admin.as_ref().map(|a| a.listen.ip());
        let gateway = Gateway::launch(config, shutdown.clone()).await?;
        // The test executable is not next to the worker: name it.
        gateway.set_code_worker(code_worker_bin(), Vec::new());
        match admin_ip {
            // Reached on loopback, judged by the configured address.
            Some(ip) if !ip.is_loopback() => {
                let l = TcpListener::bind("127.0.0.1:0")
                    .await
                    .context("binding 127.0.0.1:0 for [admin]")?;
                gateway.adopt_admin_listener(l)?;
            }
            _ => {
                gateway.bind_admin().await?;
            }
        }
        // wait_ready is bounded itself; the outer timeout is a safety net.
        if tokio::time::timeout(WAIT + Duration::from_secs(1), gateway.wait_ready(WAIT))
            .await
            .is_err()
        {
            shutdown.cancel();
            bail!("the gateway did not finish its readiness wait within {WAIT:?}");
        }
        if let (Some(file), Some(admin)) = (gateway.local_admin_token_file(), gateway.admin_addr())
        {
            let token = manifold_server::local_admin_token(file)?;
            if let Ok(mut t) = LOCAL_ADMIN_TOKENS.lock() {
                t.push((admin, token));
            }
        }
        let server = tokio::spawn(gateway.clone().serve(listener));
        Ok(TestGateway {
            gateway,
            shutdown,
            addr,
            url,
            server: Some(server),
            token_dir,
        })
    }

    /// The MCP endpoint, e.g. `http://127.0.0.1:40123/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The running gateway (catalog, upstream status, configuration).
    pub fn gateway(&self) -> &Arc<Gateway> {
        &self.gateway
    }

    /// A new client (no session yet) for this gateway.
    pub fn client(&self) -> McpClient {
        McpClient::new(&self.url)
    }

    /// A new client that has already initialized with `protocol_version` and
    /// `capabilities`.
    pub async fn session(
        &self,
        protocol_version: &str,
        capabilities: serde_json::Value,
    ) -> Result<McpClient> {
        let client = self.client();
        client.initialize(protocol_version, capabilities).await?;
        Ok(client)
    }

    /// Stops the gateway and waits (bounded) for its server task to end.
    pub async fn shutdown(mut self) -> Result<()> {
        self.shutdown.cancel();
        if let Some(server) = self.server.take() {
            tokio::time::timeout(SHUTDOWN_WAIT, server)
                .await
                .map_err(|_| anyhow!("the gateway did not stop within {SHUTDOWN_WAIT:?}"))?
                .context("the gateway's server task panicked")?;
        }
        Ok(())
    }
}

impl Drop for TestGateway {
    fn drop(&mut self) {
        self.shutdown.cancel();
        if let Some(dir) = &self.token_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The demo upstream serving Streamable HTTP on an ephemeral loopback port, with
/// its fault tools on (`--faults`), as a child process killed on drop.
pub struct DemoHttp {
    /// Its MCP endpoint, e.g. `http://127.0.0.1:40125/mcp`.
    pub url: String,
    pub child: Child,
    /// Kept open so the child never writes to a closed pipe.
    _stdout: Lines<BufReader<ChildStdout>>,
}

impl DemoHttp {
    /// Spawns [`demo_upstream_bin`] with `--http 127.0.0.1:0` and `args`.
    pub async fn spawn(args: &[&str]) -> Result<DemoHttp> {
        DemoHttp::spawn_bin(demo_upstream_bin(), args).await
    }

    /// Spawns `bin` with `--http 127.0.0.1:0` and `args`, and waits (at most
    /// [`WAIT`]) for its `listening on …` line.
    pub async fn spawn_bin(bin: impl AsRef<OsStr>, args: &[&str]) -> Result<DemoHttp> {
        DemoHttp::spawn_at(bin, "127.0.0.1:0", args).await
    }

    /// Like [`DemoHttp::spawn_bin`], listening on `addr` (e.g. the address of an
    /// upstream that was killed, to bring it back).
    pub async fn spawn_at(bin: impl AsRef<OsStr>, addr: &str, args: &[&str]) -> Result<DemoHttp> {
        let bin = bin.as_ref();
        let mut child = Command::new(bin)
            .arg("--faults")
            .arg("--http")
            .arg(addr)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("spawning {}", Path::new(bin).display()))?;
        let stdout = child.stdout.take().context("the child's stdout")?;
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(WAIT, lines.next_line())
            .await
            .map_err(|_| anyhow!("the demo upstream printed no address within {WAIT:?}"))?
            .context("reading the demo upstream's stdout")?
            .ok_or_else(|| anyhow!("the demo upstream exited before printing its address"))?;
        let url = line
            .strip_prefix("listening on ")
            .ok_or_else(|| anyhow!("unexpected first line from the demo upstream: {line:?}"))?
            .trim()
            .to_owned();
        Ok(DemoHttp {
            url,
            child,
            _stdout: lines,
        })
    }

    /// A client talking to this upstream directly (no gateway in between).
    pub fn client(&self) -> McpClient {
        McpClient::new(&self.url)
    }
}

impl Drop for DemoHttp {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}
