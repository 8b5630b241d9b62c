//! A scripted stdio upstream. The upstream's command is this very test
//! binary, run as [`relay_child`]: it connects to a loopback socket the test
//! listens on ([`StdioFake`]) and copies its stdin to the socket and the
//! socket to its stdout. The test then plays the upstream over that socket
//! ([`Peer`]), one JSON-RPC line at a time, and decides exactly what the
//! upstream answers, in which order, and when it dies (dropping the peer
//! makes the child exit).
//!
//! The child is the libtest harness running one ignored test, so its stdout
//! also carries the harness's own lines ("running 1 test"): the stdio
//! transport skips lines that are not JSON-RPC, which is what a real
//! upstream's stray output gets too.

use manifold_config::Transport;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::TcpListener;

use super::{within, WAIT};

/// The environment variable that makes [`relay_child`] a relay: the socket's
/// address.
const RELAY_ENV: &str = "MANIFOLD_UPSTREAM_TEST_RELAY";
/// [`relay_child`]'s full name in this test binary.
const RELAY_TEST: &str = "support::stdio::relay_child";

/// The child side: relays stdin → socket and socket → stdout, and exits as
/// soon as either ends (Manifold closing stdin, or the test dropping its
/// peer). Does nothing when run as a test of its own.
#[test]
#[ignore = "the stdio relay the fake upstreams run as their child; started by the tests"]
fn relay_child() {
    use std::io::{Read, Write};
    let Ok(addr) = std::env::var(RELAY_ENV) else {
        return;
    };
    let Ok(socket) = std::net::TcpStream::connect(addr) else {
        std::process::exit(2);
    };
    let Ok(mut to_socket) = socket.try_clone() else {
        std::process::exit(2);
    };
    std::thread::spawn(move || {
        let _ = std::io::copy(&mut std::io::stdin().lock(), &mut to_socket);
        std::process::exit(0);
    });
    let mut from_socket = socket;
    let mut stdout = std::io::stdout();
    let mut buf = [0u8; 16 * 1024];
    loop {
        match from_socket.read(&mut buf) {
            Ok(0) | Err(_) => std::process::exit(0),
            Ok(n) => {
                if stdout.write_all(&buf[..n]).is_err() || stdout.flush().is_err() {
                    std::process::exit(0);
                }
            }
        }
    }
}

/// The test side: where the upstream's children connect.
pub struct StdioFake {
    listener: TcpListener,
    addr: SocketAddr,
}

impl StdioFake {
    pub async fn bind() -> StdioFake {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1");
        let addr = listener.local_addr().expect("local addr");
        StdioFake { listener, addr }
    }

    /// The stdio transport that starts a relay child connecting here.
    pub fn transport(&self) -> Transport {
        let exe = std::env::current_exe().expect("the test binary's path");
        Transport::Stdio {
            command: exe.to_string_lossy().into_owned(),
            args: [
                RELAY_TEST,
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
                "-q",
            ]
            .map(String::from)
            .to_vec(),
            env: BTreeMap::from([(RELAY_ENV.to_string(), self.addr.to_string())]),
            cwd: None,
            inherit_env: false,
        }
    }

    /// The next child to connect (a restart connects again).
    pub async fn accept(&self) -> Peer {
        let (stream, _) = within("a child connecting", self.listener.accept())
            .await
            .expect("accept");
        let (read, write) = stream.into_split();
        Peer {
            lines: BufReader::new(read).lines(),
            write,
        }
    }
}

/// One child's conversation, as the upstream sees it.
pub struct Peer {
    lines: Lines<BufReader<OwnedReadHalf>>,
    write: OwnedWriteHalf,
}

impl Peer {
    /// The next message Manifold sent, within [`WAIT`].
    pub async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.lines.next_line()).await;
        match line {
            Ok(Ok(Some(line))) => serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("Manifold sent a line that is not JSON ({e}): {line}")),
            Ok(Ok(None)) => panic!("the child's stdin closed"),
            Ok(Err(e)) => panic!("reading from the child failed: {e}"),
            Err(_) => panic!("nothing from Manifold within {WAIT:?}"),
        }
    }

    /// The next message, which must be `method`.
    pub async fn expect(&mut self, method: &str) -> Value {
        let msg = self.recv().await;
        assert_eq!(msg["method"], method, "expected {method}, got {msg}");
        msg
    }

    /// Writes `line` and a newline to Manifold, as the upstream's stdout.
    pub async fn send_raw(&mut self, line: &str) {
        let mut bytes = line.as_bytes().to_vec();
        bytes.push(b'\n');
        self.write
            .write_all(&bytes)
            .await
            .expect("writing to the child");
    }

    pub async fn send(&mut self, msg: &Value) {
        self.send_raw(&msg.to_string()).await;
    }

    /// Answers request `req` with `result`.
    pub async fn answer(&mut self, req: &Value, result: Value) {
        self.send(&super::answer(&req["id"], result)).await;
    }

    /// Plays a session-era server's side of `initialize` (answering
    /// `version`, declaring `capabilities`), through `notifications/initialized`.
    pub async fn handshake(&mut self, version: &str, capabilities: Value) -> Value {
        let init = self.expect("initialize").await;
        self.answer(&init, super::initialize_result(version, capabilities))
            .await;
        self.expect("notifications/initialized").await;
        init
    }

    /// [`Peer::handshake`] of a 2025-11-25 server with no lists.
    pub async fn ready(&mut self) {
        self.handshake("2025-11-25", json!({})).await;
    }
}
