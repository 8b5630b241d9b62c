//! Both official SDK clients through a round-robin TCP proxy in front of three
//! replicas (`[cluster]` with a shared session key and a real `redis-server`):
//! every new connection goes to the next replica, so a client's initialize, its
//! GET stream and its later POSTs land on different replicas, with no sticky
//! sessions anywhere.

use anyhow::{Context, Result};
use serde_json::json;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::{run_plan, DemoGateway};
use manifold_e2e::Peers;

/// A `redis-server` on a free loopback port, killed when dropped.
struct Redis(Child, u16);

impl Redis {
    fn start() -> Result<Redis> {
        let port = TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("redis-server (scripts/peers installs Debian's redis-server)")?;
        let r = Redis(child, port);
        manifold_testkit::wait::eventually_blocking(
            "redis-server answering PING",
            Duration::from_secs(10),
            || {
                let pong = TcpStream::connect(("127.0.0.1", port))
                    .ok()
                    .and_then(|mut s| {
                        s.write_all(b"PING\r\n").ok()?;
                        let mut line = String::new();
                        BufReader::new(s).read_line(&mut line).ok()?;
                        Some(line)
                    });
                Ok(pong.is_some_and(|l| l.starts_with("+PONG")).then_some(()))
            },
        )?;
        Ok(r)
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Accepts on a loopback port and sends each connection to the next backend;
/// stops accepting when dropped (it sets a flag and wakes the accept with a
/// connection of its own).
struct RoundRobin {
    url: String,
    addr: std::net::SocketAddr,
    stop: Arc<AtomicBool>,
    /// Connections per backend.
    counts: Arc<Vec<AtomicUsize>>,
}

impl RoundRobin {
    fn start(backends: Vec<String>) -> Result<RoundRobin> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let url = format!("http://{addr}/mcp");
        let stop = Arc::new(AtomicBool::new(false));
        let counts: Arc<Vec<AtomicUsize>> =
            Arc::new(backends.iter().map(|_| AtomicUsize::new(0)).collect());
        let (s, c) = (stop.clone(), counts.clone());
        std::thread::spawn(move || {
            let mut next = 0usize;
            for client in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(client) = client else { continue };
                let i = next % backends.len();
                next += 1;
                c[i].fetch_add(1, Ordering::Relaxed);
                let Ok(upstream) = TcpStream::connect(&backends[i]) else {
                    continue;
                };
                pipe(client, upstream);
            }
        });
        Ok(RoundRobin {
            url,
            addr,
            stop,
            counts,
        })
    }

    /// Connections so far, per backend.
    fn snapshot(&self) -> Vec<usize> {
        self.counts
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect()
    }
}

impl Drop for RoundRobin {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = TcpStream::connect(self.addr);
    }
}

/// Copies both ways until either side closes.
fn pipe(a: TcpStream, b: TcpStream) {
    let (Ok(a2), Ok(b2)) = (a.try_clone(), b.try_clone()) else {
        return;
    };
    for (mut from, mut to) in [(a, b2), (b, a2)] {
        std::thread::spawn(move || {
            let _ = std::io::copy(&mut from, &mut to);
            let _ = to.shutdown(std::net::Shutdown::Both);
        });
    }
}

#[test]
fn sdk_clients_work_through_a_round_robin_proxy_in_front_of_three_replicas() -> Result<()> {
    let peers = Peers::from_env()?;
    let redis = Redis::start()?;
    let extra = format!(
        "[cluster]\nsession_key = \"round-robin-key-0123456789abcdef0123\"\n\
         redis = \"redis://127.0.0.1:{}\"\n",
        redis.1
    );
    let replicas = (0..3)
        .map(|i| DemoGateway::start(&format!("rr{i}"), &extra))
        .collect::<Result<Vec<_>>>()?;
    let backends = replicas
        .iter()
        .map(|g| {
            g.url
                .trim_start_matches("http://")
                .split('/')
                .next()
                .map(str::to_string)
                .context("no address")
        })
        .collect::<Result<Vec<_>>>()?;
    let proxy = RoundRobin::start(backends)?;
    let plan = json!({"steps": [
        {"op": "list_tools"},
        {"op": "call_tool", "name": "demo__echo", "arguments": {"text": "one"}},
        {"op": "call_tool_with_progress", "name": "demo__slow_progress", "arguments": {"steps": 2, "delay_ms": 10}},
        {"op": "ping"},
        {"op": "call_tool", "name": "demo__echo", "arguments": {"text": "two"}}
    ]});
    for client in ["ts", "py"] {
        let before = proxy.snapshot();
        let (code, out, stderr) = run_plan(&peers, client, &proxy.url, &plan, None)?;
        let after = proxy.snapshot();
        let used = before.iter().zip(&after).filter(|(b, a)| a > b).count();
        eprintln!("{client}: connections per replica {before:?} -> {after:?}");
        anyhow::ensure!(code == Some(0), "{client}: exit {code:?}: {stderr}");
        let results = out["results"].as_array().context("no results")?;
        let echoed: Vec<String> = [1, 4]
            .iter()
            .map(|&i| super::text_of(&results[i]))
            .collect();
        anyhow::ensure!(echoed == ["one", "two"], "{client}: {out}");
        anyhow::ensure!(used >= 2, "{client}: every connection reached one replica");
    }
    Ok(())
}
