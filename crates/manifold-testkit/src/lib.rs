//! Test harness only: [`harness::TestGateway`] (a gateway in-process on an
//! ephemeral loopback port), [`harness::McpClient`] (a minimal Streamable-HTTP MCP
//! client) and [`harness::DemoHttp`] (the demo upstream of crate `manifold-demo` as
//! an HTTP child process). No product code lives here: the `manifold` binary
//! does not link this crate.

pub mod harness;
