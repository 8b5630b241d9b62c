//! Test harness only: [`harness::TestGateway`] (a gateway in-process on an
//! ephemeral loopback port), [`harness::McpClient`] (a minimal Streamable-HTTP MCP
//! client) and [`harness::DemoHttp`] (the demo upstream of crate `manifold-demo` as
//! an HTTP child process), [`process::Proc`] (any child process, reaped on
//! drop: the one process harness of the black-box suites), and
//! [`wait::eventually`] / [`wait::nothing_within`] (waiting on conditions, never
//! on the clock). No product code lives here: the `manifold` binary does not
//! link this crate.

pub mod harness;
pub mod process;
pub mod wait;
