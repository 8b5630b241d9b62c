//! `manifold-load --callgrind`: instructions per `tools/call` — a regression guard
//! that does not move with the machine's load, unlike calls/s. The gateway runs
//! under `valgrind --tool=callgrind`; for each upstream and concurrency its
//! sessions are opened and warmed up, the counters zeroed (`callgrind_control
//! -z`), exactly `--calls` calls made, and a profile dumped (`callgrind_control
//! -d`); its total divided by the calls is the figure. `--top N` adds the
//! functions with the most inclusive instructions per call (`callgrind_annotate
//! --inclusive=yes`), the profile of where a call's cost goes.
//!
//! What it counts: user-space instructions of the gateway process (every thread),
//! not the kernel's work in its system calls and not its stdio upstream (valgrind
//! does not follow children). The calls at c=16 include whatever batching the
//! event loop does under that load, so c=1 and c=16 differ. The same binary gives
//! the same counts within about 1 % from run to run.
//!
//! Not here: wall-clock comparisons (`peers`).

use anyhow::{bail, Context, Result};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::peers::{drive, open_callers, PeersArgs};
use crate::targets::{echo, new_client, start_gateway, start_http_demo, Endpoint, Launch, Product};

/// Untimed calls per caller before the counters are zeroed.
const WARM_UP_CALLS: usize = 50;
/// How long `callgrind_control` may take to reach the gateway.
const CONTROL_WITHIN: Duration = Duration::from_secs(120);
/// How long the counted calls of one measurement may take under callgrind.
const CALLS_WITHIN: Duration = Duration::from_secs(1800);
/// Longest function name printed by `--top`.
const NAME_CHARS: usize = 150;

/// Runs the instruction counts and prints their table (and `--top` profiles).
pub(crate) async fn run(
    exe: &Path,
    dir: &Path,
    args: &PeersArgs,
    concurrency: &[usize],
) -> Result<()> {
    args.check()?;
    if args.targets.iter().any(|t| t == "direct" || t == "relay") {
        bail!("--callgrind measures gateways: --targets manifold and/or mcp-proxy");
    }
    let bins = args.binaries(exe)?;
    let out = match &args.callgrind_out {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            std::fs::canonicalize(d)?
        }
        None => dir.to_path_buf(),
    };
    let (_demo, http_url) = start_http_demo(exe)?;
    let client = new_client();
    let mut profiles = Vec::new();
    println!("| gateway | upstream | c | calls | instructions per call |");
    println!("|---|---|---|---|---|");
    for product in [Product::Manifold, Product::McpProxy] {
        if !args.wants(product, false) {
            continue;
        }
        let name = match product {
            Product::Manifold => "manifold",
            Product::McpProxy => "mcp-proxy",
        };
        let launch = Launch::Callgrind {
            out_prefix: out.join(format!("callgrind.{name}")),
        };
        let gw = start_gateway(product, &bins, dir, &http_url, &launch).await?;
        let pid = gw.pid();
        let mut dumps = 0;
        for upstream in &args.upstreams {
            for &c in concurrency {
                let body = echo(&gw.product.tool(upstream, "echo"));
                let callers = open_callers(&client, &Endpoint::Http(gw.url.clone()), c).await?;
                let far = Instant::now() + CALLS_WITHIN;
                drive(&callers, &body, WARM_UP_CALLS, far).await?;
                control(pid, "--zero").await?;
                // Split the calls evenly; the first callers take the remainder.
                let per = args.calls / c.max(1);
                let mut lat = drive(&callers, &body, per, far).await?;
                let rest = args.calls - per * c.max(1);
                if rest > 0 {
                    lat.extend(drive(&callers[..rest], &body, 1, far).await?);
                }
                control(pid, "--dump").await?;
                dumps += 1;
                for caller in &callers {
                    caller.close().await;
                }
                if lat.len() != args.calls {
                    bail!(
                        "only {} of {} calls within {CALLS_WITHIN:?}",
                        lat.len(),
                        args.calls
                    );
                }
                let file = out.join(format!("callgrind.{name}.{pid}.{dumps}"));
                let total = summary(&file)?;
                println!(
                    "| {} | {upstream} | {c} | {} | {:.0} |",
                    product.label(),
                    args.calls,
                    total as f64 / args.calls as f64
                );
                profiles.push((format!("{} {upstream} c={c}", product.label()), file));
            }
        }
    }
    if args.top > 0 {
        for (what, file) in &profiles {
            for (inclusive, kind) in [(true, "inclusive"), (false, "self")] {
                println!("\n{what}: {kind} instructions per call, top {}\n", args.top);
                println!("| instructions per call | share | function |");
                println!("|---|---|---|");
                for (ir, share, function) in top(file, args.top, inclusive)? {
                    println!(
                        "| {:.0} | {share} | `{function}` |",
                        ir as f64 / args.calls as f64
                    );
                }
            }
        }
    }
    if args.callgrind_out.is_some() {
        eprintln!("profiles kept in {}", out.display());
    }
    Ok(())
}

/// `callgrind_control ACTION PID`, bounded.
async fn control(pid: u32, action: &str) -> Result<()> {
    let run = tokio::process::Command::new("callgrind_control")
        .arg(action)
        .arg(pid.to_string())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .status();
    let status = tokio::time::timeout(CONTROL_WITHIN, run)
        .await
        .with_context(|| format!("callgrind_control {action} took over {CONTROL_WITHIN:?}"))?
        .context("callgrind_control (valgrind) is needed for --callgrind")?;
    if !status.success() {
        bail!("callgrind_control {action} {pid} failed: {status}");
    }
    Ok(())
}

/// The `summary:` (total instructions) of a callgrind profile.
fn summary(file: &PathBuf) -> Result<u64> {
    let text = std::fs::read_to_string(file)
        .with_context(|| format!("the callgrind profile {}", file.display()))?;
    let line = text
        .lines()
        .find(|l| l.starts_with("summary:"))
        .context("no summary: line in the profile")?;
    Ok(line
        .split_whitespace()
        .nth(1)
        .context("summary value")?
        .parse()?)
}

/// The `n` functions with the most instructions, inclusive of their callees or
/// their own: (Ir, share, name).
fn top(file: &Path, n: usize, inclusive: bool) -> Result<Vec<(u64, String, String)>> {
    let out = std::process::Command::new("callgrind_annotate")
        .arg(format!(
            "--inclusive={}",
            if inclusive { "yes" } else { "no" }
        ))
        .arg("--threshold=100")
        .arg(file)
        .output()
        .context("callgrind_annotate")?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut rows = Vec::new();
    // Rows look like `1,234,567 (12.34%)  file:function [object]`.
    for line in text.lines() {
        let mut parts = line.trim_start().splitn(2, ' ');
        let (Some(count), Some(rest)) = (parts.next(), parts.next()) else {
            continue;
        };
        let Ok(ir) = count.replace(',', "").parse::<u64>() else {
            continue;
        };
        let rest = rest.trim_start();
        let (share, function) = match rest.strip_prefix('(') {
            Some(r) => match r.split_once(')') {
                Some((share, f)) => (share.to_string(), f.trim().to_string()),
                None => continue,
            },
            None => (String::new(), rest.to_string()),
        };
        // The thread entry frames (`clone`, `start_thread`, …) hold every
        // instruction and say nothing about where they went.
        if function.is_empty() || function.starts_with("PROGRAM TOTALS") || share == "100.0%" {
            continue;
        }
        // Drop the object file and the source file (`file:function [object]`);
        // keep the name short enough for a table.
        let function = function
            .rsplit_once(" [")
            .map_or(function.as_str(), |(f, _)| f);
        let function = function
            .split_once(':')
            .filter(|(file, _)| file.contains('/') || file.starts_with("???"))
            .map_or(function, |(_, f)| f)
            .replace('|', "\\|");
        let function: String = function.chars().take(NAME_CHARS).collect();
        rows.push((ir, share, function));
        if rows.len() == n {
            break;
        }
    }
    Ok(rows)
}
