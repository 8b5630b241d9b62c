//! The load generator's command line ([`Args`]).

use clap::Parser;

use crate::peers;
use std::path::PathBuf;

#[derive(Parser)]
#[command(about = "Load generator: Manifold vs a direct connection to the same upstream")]
pub(crate) struct Args {
    /// The manifold binary (also used as the demo upstream).
    #[arg(long, default_value = "target/release/manifold")]
    pub(crate) manifold: PathBuf,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5)]
    pub(crate) seconds: u64,
    /// Concurrency levels.
    #[arg(long, value_delimiter = ',', default_value = "1,16")]
    pub(crate) concurrency: Vec<usize>,
    /// Which measurements to run: `call` (tools/call echo), `list` (tools/list of
    /// 1,000 tools), `auth` (tools/call through Manifold without `[auth]` vs with a
    /// bearer API key), `policy` (tools/list and tools/call through a bare Manifold vs
    /// one with `[auth]`, 100 `[[policy]]` views and validation). Running one alone is
    /// handy under a profiler. `search`: a `discovery = "search"` endpoint
    /// (`search_endpoint`): tools/list bytes, call_tool vs a direct call,
    /// search_tools over 10,000 tools. `code`: a `discovery = "code"` endpoint
    /// (`code_endpoint`): run_script of one call vs the direct call, scripts/s
    /// of a ten-call script, and one task's context in list, search and code
    /// mode over `--catalog` (needs manifold-code-worker next to `--manifold`).
    /// `pool`: a slow single-threaded stdio
    /// upstream as one child vs a pool of four (`instances = 4`, see `pool`).
    #[arg(long, value_delimiter = ',', default_value = "call,list")]
    pub(crate) scenarios: Vec<String>,
    /// Give the gateway a CPU of its own, as a sidecar with its own CPU budget has:
    /// the load generator and the upstreams run on CPU 0, the gateway on CPU 1
    /// (with `taskset`, util-linux). Without it all processes share every CPU, and
    /// on a small machine the gateway's extra hop competes with the upstream for it.
    #[arg(long)]
    pub(crate) pin: bool,
    /// Rounds per measurement, direct and via Manifold alternating; the round with
    /// the median throughput is reported, so one noisy round does not decide.
    #[arg(long, default_value_t = 3)]
    pub(crate) rounds: usize,
    /// Instead of the comparison: a soak run of this many minutes (mixed traffic,
    /// sessions opening and closing, a stdio upstream crashed every minute),
    /// reporting the gateway's RSS and file-descriptor slopes.
    #[arg(long, value_name = "MINUTES")]
    pub(crate) soak: Option<u64>,
    /// Instead of the comparison: the tool search index alone, in this process,
    /// over a catalogue of this many tools (the real catalogue copied under new
    /// names): build time, bytes per tool, query p50/p99 (see `search_index`).
    #[arg(long, value_name = "TOOLS")]
    pub(crate) search_index: Option<usize>,
    /// With `--search-index`: semantic search's costs too, with this model
    /// directory (see `semantic_index`).
    #[arg(long, value_name = "DIR")]
    pub(crate) model: Option<PathBuf>,
    /// The real tool catalogue `--search-index` copies (catalog.json shape).
    #[arg(long, default_value = "../shared/data/tool-catalog/catalog.json")]
    pub(crate) catalog: PathBuf,
    #[command(flatten)]
    pub(crate) peers: peers::PeersArgs,
}
