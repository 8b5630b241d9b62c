//! The processes and MCP sessions a measurement drives: a child that is
//! killed when dropped ([`Kill`]), the URL a child prints, a gateway spawned
//! on a configuration, and one client session over plain HTTP ([`Session`]).
//!
//! Invariants: every child is killed and reaped on drop; every read of a
//! child's output is bounded.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(crate) type HttpClient = Client<HttpConnector, Full<Bytes>>;

pub(crate) struct Kill(pub(crate) Child);
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

pub(crate) fn spawn_and_read_url(mut cmd: Command, needle: &str) -> Result<(Kill, String)> {
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

pub(crate) struct Session {
    pub(crate) client: HttpClient,
    pub(crate) url: String,
    pub(crate) id: Option<String>,
    /// `Authorization: Bearer` for an endpoint with `[auth]`.
    pub(crate) bearer: Option<String>,
}

impl Session {
    pub(crate) async fn post(&self, body: &Value) -> Result<(http::HeaderMap, Bytes)> {
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
    pub(crate) async fn close(&self) {
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
    pub(crate) async fn open(client: &HttpClient, url: &str) -> Result<Session> {
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

/// `manifold serve --config cfg` (on CPU 1 with `pin`); its URL.
pub(crate) fn spawn_gateway(
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
pub(crate) fn hash_key(exe: &std::path::Path, key: &str) -> Result<String> {
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
