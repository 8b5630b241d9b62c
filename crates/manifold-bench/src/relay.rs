//! The floor of any HTTP gateway: a process that only copies bytes between each
//! client connection and a connection of its own to the upstream
//! (`tokio::io::copy_bidirectional`, `TCP_NODELAY` both ways), started as
//! `manifold-load --relay-to ADDR` on the gateways' CPU. It parses nothing,
//! routes nothing, checks nothing: what it adds to a call is what the extra
//! process costs — two more socket hops and the wake-ups of a process on another
//! CPU — which no gateway, however little it does per call, can go below.
//!
//! Invariants: listens on 127.0.0.1 only, on a port the system picks, printed as
//! `relay listening on http://127.0.0.1:PORT`; each connection ends when either
//! side closes; the process ends when its parent's guard kills it.
//!
//! Not here: what is measured (`peers`).

use anyhow::{Context, Result};
use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use tokio::net::{TcpListener, TcpStream};

use crate::session::{spawn_and_read_url, Kill};

/// Serves as the relay to `to` until killed.
pub(crate) async fn serve(to: SocketAddr) -> Result<()> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let at = listener.local_addr()?;
    println!("relay listening on http://{at}");
    std::io::stdout().flush()?;
    loop {
        let (mut inbound, _) = listener.accept().await?;
        tokio::spawn(async move {
            let mut outbound = TcpStream::connect(to).await?;
            inbound.set_nodelay(true)?;
            outbound.set_nodelay(true)?;
            tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await?;
            Ok::<_, std::io::Error>(())
        });
    }
}

/// Starts this program as a relay in front of the upstream at `upstream_url`
/// (pinned like the gateways when `pin`); returns its guard and the URL a client
/// calls the upstream through it by (the upstream's path kept).
pub(crate) fn start(upstream_url: &str, pin: bool) -> Result<(Kill, String)> {
    let url: http::Uri = upstream_url.parse().context("the upstream URL")?;
    let authority = url.authority().context("the upstream URL has no host")?;
    let to: SocketAddr = authority.as_str().parse().context("the upstream address")?;
    let me = std::env::current_exe()?;
    let mut cmd = if pin {
        let mut c = Command::new("taskset");
        c.args(["-c", "1"]).arg(Path::new(&me));
        c
    } else {
        Command::new(&me)
    };
    cmd.arg("--relay-to").arg(to.to_string());
    let (guard, base) = spawn_and_read_url(cmd, "relay listening on")?;
    Ok((guard, format!("{base}{}", url.path())))
}
